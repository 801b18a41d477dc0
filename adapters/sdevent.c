/* The sd-event adapter: an io source on the client's socket and a time
 * source, on the public API only. sd-event keeps a source alive while
 * dispatching it, so a client freed from its own callback takes its
 * sources with it safely; each handler still ends with its call into
 * the core. */
#include <errno.h>
#include <sys/epoll.h>
#include <time.h>

#include "zklock_sdevent.h"

struct sd_adapter {
    zkl_client_t *c;
    sd_event *e;            /* a reference */
    sd_event_source *io;    /* NULL when no socket is watched */
    sd_event_source *tmr;
    int fd;
};

static int sd_io_cb(sd_event_source *s, int fd, uint32_t revents,
                    void *data)
{
    struct sd_adapter *sd = data;

    (void)s;
    (void)fd;
    /* An error or hang-up is news for the reader: the ZooKeeper client
     * finds the failure when it reads. */
    zkl_client_on_io(sd->c,
                     ((revents & (EPOLLIN | EPOLLERR | EPOLLHUP)) ? ZKL_READ
                                                                  : 0) |
                         ((revents & EPOLLOUT) ? ZKL_WRITE : 0));
    return 0;
}

static int sd_timer_cb(sd_event_source *s, uint64_t usec, void *data)
{
    struct sd_adapter *sd = data;

    (void)s;
    (void)usec;
    zkl_client_on_timer(sd->c);
    return 0;
}

/* Changed interest on the same socket is a change of the source's
 * events. A reset or another number gets a new source: sd-event takes a
 * new fd of the same number for no change at all and would keep the
 * closed socket's registration. */
static int sd_io(void *data, int fd, int events, int reset)
{
    struct sd_adapter *sd = data;
    uint32_t want = ((events & ZKL_READ) ? EPOLLIN : 0) |
                    ((events & ZKL_WRITE) ? EPOLLOUT : 0);

    if (sd->io != NULL && (reset || fd != sd->fd || fd < 0)) {
        sd->io = sd_event_source_disable_unref(sd->io);
        sd->fd = -1;
    }
    if (fd < 0)
        return 0;
    if (sd->io == NULL) {
        if (want == 0)
            return 0;
        if (sd_event_add_io(sd->e, &sd->io, fd, want, sd_io_cb, sd) < 0)
            return -1;
        sd->fd = fd;
        return 0;
    }
    if (want == 0)
        return sd_event_source_set_enabled(sd->io, SD_EVENT_OFF) < 0 ? -1
                                                                     : 0;
    if (sd_event_source_set_io_events(sd->io, want) < 0 ||
        sd_event_source_set_enabled(sd->io, SD_EVENT_ON) < 0)
        return -1;
    return 0;
}

static int sd_timer(void *data, long ms)
{
    struct sd_adapter *sd = data;

    if (ms < 0)
        return sd_event_source_set_enabled(sd->tmr, SD_EVENT_OFF) < 0 ? -1
                                                                      : 0;
    if (sd_event_source_set_time_relative(sd->tmr,
                                          (uint64_t)ms * 1000) < 0 ||
        sd_event_source_set_enabled(sd->tmr, SD_EVENT_ONESHOT) < 0)
        return -1;
    return 0;
}

static void sd_detach(void *data)
{
    struct sd_adapter *sd = data;

    sd_event_source_disable_unref(sd->io);
    sd_event_source_disable_unref(sd->tmr);
    sd_event_unref(sd->e);
    zkl_free(sd);
}

static const zkl_loop_ops_t sd_ops = {sd_io, sd_timer, sd_detach};

int zkl_sdevent_attach(zkl_client_t *c, sd_event *e)
{
    struct sd_adapter *sd;
    int rc;

    if (c == NULL || e == NULL)
        return ZKL_EINVAL;
    sd = zkl_calloc(1, sizeof *sd);
    if (sd == NULL)
        return ZKL_ENOMEM;
    /* sd-event's default accuracy is 250 ms; a lock's timeouts want
     * better. The source starts off and is armed by the core. */
    rc = sd_event_add_time_relative(e, &sd->tmr, CLOCK_MONOTONIC, 0, 1000,
                                    sd_timer_cb, sd);
    if (rc < 0) {
        zkl_free(sd);
        return rc == -ENOMEM ? ZKL_ENOMEM : ZKL_ELOOP;
    }
    sd_event_source_set_enabled(sd->tmr, SD_EVENT_OFF);
    sd->c = c;
    sd->e = sd_event_ref(e);
    sd->fd = -1;
    rc = zkl_client_attach(c, &sd_ops, sd);
    if (rc != ZKL_OK) {
        sd_event_source_disable_unref(sd->tmr);
        sd_event_unref(sd->e);
        zkl_free(sd);
    }
    return rc;
}
