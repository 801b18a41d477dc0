/* The libevent adapter: the zkl_loop_ops_t hooks on one fd event and one
 * timer. The core guarantees it never calls a hook re-entrantly and calls
 * detach from outside these handlers' use of the adapter state, so the
 * handlers end with the call into the core and touch nothing after it. */
#include <stdlib.h>

#include <event2/event.h>

#include "internal.h"
#include "zklock_libevent.h"

struct le_adapter {
    zkl_client_t *c;
    struct event_base *base;
    struct event *io;  /* NULL while nothing is watched */
    struct event *tmr;
    int fd, events;
};

static void le_io_cb(evutil_socket_t fd, short what, void *arg)
{
    struct le_adapter *le = arg;
    int ev = 0;

    (void)fd;
    if (what & EV_READ)
        ev |= ZKL_READ;
    if (what & EV_WRITE)
        ev |= ZKL_WRITE;
    zkl_client_on_io(le->c, ev);
}

static void le_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct le_adapter *le = arg;

    (void)fd;
    (void)what;
    zkl_client_on_timer(le->c);
}

static int le_io(void *data, int fd, int events, int reset)
{
    struct le_adapter *le = data;
    short want = EV_PERSIST;

    if (le->io != NULL) {
        /* A reconnect reuses fd numbers: always drop and re-add rather
         * than trusting an unchanged (fd, events) pair. */
        event_free(le->io);
        le->io = NULL;
    }
    (void)reset;
    le->fd = fd;
    le->events = events;
    if (fd < 0 || events == 0)
        return 0;
    if (events & ZKL_READ)
        want |= EV_READ;
    if (events & ZKL_WRITE)
        want |= EV_WRITE;
    le->io = event_new(le->base, fd, want, le_io_cb, le);
    if (le->io == NULL)
        return -1;
    return event_add(le->io, NULL);
}

static int le_timer(void *data, long ms)
{
    struct le_adapter *le = data;
    struct timeval tv;

    if (ms < 0)
        return event_del(le->tmr);
    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
    return evtimer_add(le->tmr, &tv);
}

static void le_detach(void *data)
{
    struct le_adapter *le = data;

    if (le->io != NULL)
        event_free(le->io);
    event_free(le->tmr);
    zkl__free(le);
}

static const zkl_loop_ops_t le_ops = {le_io, le_timer, le_detach};

int zkl_libevent_attach(zkl_client_t *c, struct event_base *base)
{
    struct le_adapter *le;
    int rc;

    if (c == NULL || base == NULL)
        return ZKL_EINVAL;
    le = zkl__calloc(1, sizeof *le);
    if (le == NULL)
        return ZKL_ENOMEM;
    le->c = c;
    le->base = base;
    le->fd = -1;
    le->tmr = evtimer_new(base, le_timer_cb, le);
    if (le->tmr == NULL) {
        zkl__free(le);
        return ZKL_ENOMEM;
    }
    rc = zkl_client_attach(c, &le_ops, le);
    if (rc != ZKL_OK) {
        event_free(le->tmr);
        zkl__free(le);
    }
    return rc;
}
