/* The libevent adapter: the zkl_loop_ops_t hooks on one fd event and one
 * timer, both kept for the client's life. Built on the public API only.
 * The core never calls a hook re-entrantly and calls detach outside these
 * handlers' use of the adapter state, so each handler ends with its call
 * into the core and touches nothing after it (the call may free us). */
#include <string.h>

#include <event2/event.h>

#include "zklock_libevent.h"

struct le_adapter {
    zkl_client_t *c;
    struct event_base *base;
    struct event *io;  /* made once, re-assigned to each socket */
    struct event *tmr;
    int fd, events;    /* what io is armed for; fd -1: nothing */
};

static void le_io_cb(evutil_socket_t fd, short what, void *arg)
{
    struct le_adapter *le = arg;

    (void)fd;
    zkl_client_on_io(le->c, ((what & EV_READ) ? ZKL_READ : 0) |
                                ((what & EV_WRITE) ? ZKL_WRITE : 0));
}

static void le_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct le_adapter *le = arg;

    (void)fd;
    (void)what;
    zkl_client_on_timer(le->c);
}

/* libevent has no "modify": a changed interest is a delete and an add of
 * the same event. A reset needs nothing more: the delete unregisters the
 * fd number (the kernel already forgot the closed socket, and libevent
 * ignores the error), so the add registers the new socket. Without
 * deleting first, libevent would believe the number still registered
 * and never tell the kernel about the new socket. */
static int le_io(void *data, int fd, int events, int reset)
{
    struct le_adapter *le = data;

    if (le->fd >= 0 && !reset && fd == le->fd && events == le->events)
        return 0;
    if (le->fd >= 0)
        event_del(le->io);
    le->fd = -1;
    if (fd < 0 || events == 0)
        return 0;
    if (event_assign(le->io, le->base, fd,
                     (short)(EV_PERSIST |
                             ((events & ZKL_READ) ? EV_READ : 0) |
                             ((events & ZKL_WRITE) ? EV_WRITE : 0)),
                     le_io_cb, le) != 0 ||
        event_add(le->io, NULL) != 0)
        return -1;
    le->fd = fd;
    le->events = events;
    return 0;
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

    event_free(le->io); /* deletes it first if pending */
    event_free(le->tmr);
    zkl_free(le);
}

static const zkl_loop_ops_t le_ops = {le_io, le_timer, le_detach};

int zkl_libevent_attach(zkl_client_t *c, struct event_base *base)
{
    struct le_adapter *le;
    int rc;

    if (c == NULL || base == NULL)
        return ZKL_EINVAL;
    le = zkl_calloc(1, sizeof *le);
    if (le == NULL)
        return ZKL_ENOMEM;
    le->c = c;
    le->base = base;
    le->fd = -1;
    /* The io event is made here, unassigned, so that arming it later
     * cannot fail for memory. */
    le->io = event_new(base, -1, 0, le_io_cb, le);
    le->tmr = evtimer_new(base, le_timer_cb, le);
    if (le->io == NULL || le->tmr == NULL) {
        rc = ZKL_ENOMEM;
    } else {
        rc = zkl_client_attach(c, &le_ops, le);
        if (rc == ZKL_OK)
            return ZKL_OK;
    }
    if (le->io != NULL)
        event_free(le->io);
    if (le->tmr != NULL)
        event_free(le->tmr);
    zkl_free(le);
    return rc;
}
