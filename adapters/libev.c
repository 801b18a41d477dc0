/* The libev adapter: one ev_io and one ev_timer for the client's life,
 * on the public API only. Each handler ends with its call into the core,
 * which may free the adapter. */
#include <ev.h>

#include "zklock_libev.h"

struct lv_adapter {
    zkl_client_t *c;
    struct ev_loop *loop;
    ev_io io;        /* active while fd >= 0 */
    ev_timer tmr;
    int fd;            /* the fd watched, -1 if none */
};

static void lv_io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    struct lv_adapter *lv = w->data;

    (void)loop;
    zkl_client_on_io(lv->c, ((revents & EV_READ) ? ZKL_READ : 0) |
                                ((revents & EV_WRITE) ? ZKL_WRITE : 0));
}

static void lv_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct lv_adapter *lv = w->data;

    (void)loop;
    (void)revents;
    zkl_client_on_timer(lv->c);
}

/* A changed interest on the same socket only modifies the watcher. A
 * reset, or another fd number, goes through ev_io_set(), which tells
 * libev the descriptor may be new: its epoll backend then registers the
 * socket again instead of trusting its record of the number, which
 * outlived the closed socket. */
static int lv_io(void *data, int fd, int events, int reset)
{
    struct lv_adapter *lv = data;
    int want = ((events & ZKL_READ) ? EV_READ : 0) |
               ((events & ZKL_WRITE) ? EV_WRITE : 0);

    if (lv->fd >= 0)
        ev_io_stop(lv->loop, &lv->io);
    if (fd < 0 || want == 0) {
        lv->fd = -1;
        return 0;
    }
    if (reset || fd != lv->fd)
        ev_io_set(&lv->io, fd, want);
    else
        ev_io_modify(&lv->io, want);
    ev_io_start(lv->loop, &lv->io);
    lv->fd = fd;
    return 0;
}

static int lv_timer(void *data, long ms)
{
    struct lv_adapter *lv = data;

    ev_timer_stop(lv->loop, &lv->tmr);
    if (ms < 0)
        return 0;
    /* ev_now() is the time the loop woke; the deadline counts from now. */
    ev_now_update(lv->loop);
    ev_timer_set(&lv->tmr, (ev_tstamp)ms / 1000.0, 0.0);
    ev_timer_start(lv->loop, &lv->tmr);
    return 0;
}

static void lv_detach(void *data)
{
    struct lv_adapter *lv = data;

    if (lv->fd >= 0)
        ev_io_stop(lv->loop, &lv->io);
    ev_timer_stop(lv->loop, &lv->tmr);
    zkl_free(lv);
}

static const zkl_loop_ops_t lv_ops = {lv_io, lv_timer, lv_detach};

int zkl_libev_attach(zkl_client_t *c, struct ev_loop *loop)
{
    struct lv_adapter *lv;
    int rc;

    if (c == NULL || loop == NULL)
        return ZKL_EINVAL;
    lv = zkl_calloc(1, sizeof *lv);
    if (lv == NULL)
        return ZKL_ENOMEM;
    lv->c = c;
    lv->loop = loop;
    lv->fd = -1;
    ev_init(&lv->io, lv_io_cb);
    lv->io.data = lv;
    ev_init(&lv->tmr, lv_timer_cb);
    lv->tmr.data = lv;
    rc = zkl_client_attach(c, &lv_ops, lv);
    if (rc != ZKL_OK)
        zkl_free(lv);
    return rc;
}
