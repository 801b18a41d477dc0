/* The libuv adapter: a uv_poll_t on the client's socket and a uv_timer_t,
 * on the public API only. libuv closes handles asynchronously, so each
 * handle is its own allocation, freed by its close callback; the adapter
 * state itself goes at detach. Each handler ends with its call into the
 * core, which may free the adapter. */
#include <uv.h>

#include "zklock_libuv.h"

struct lu_adapter {
    zkl_client_t *c;
    uv_loop_t *loop;
    uv_poll_t *poll;  /* watching fd; NULL when no socket is watched */
    uv_timer_t *tmr;
    uv_idle_t *soon;  /* the timer at 0 ms (see lu_timer) */
    int fd;            /* the fd of poll, or -1 */
};

static void lu_free_handle(uv_handle_t *h)
{
    zkl_free(h);
}

static void lu_close(uv_handle_t *h)
{
    h->data = NULL;
    uv_close(h, lu_free_handle);
}

static void lu_poll_cb(uv_poll_t *h, int status, int events)
{
    struct lu_adapter *lu = h->data;
    int ev = 0;

    /* An error on the socket is news for the reader: the ZooKeeper
     * client finds the failure when it reads. */
    if (status < 0 || (events & (UV_READABLE | UV_DISCONNECT)))
        ev |= ZKL_READ;
    if (events & UV_WRITABLE)
        ev |= ZKL_WRITE;
    zkl_client_on_io(lu->c, ev);
}

static void lu_timer_cb(uv_timer_t *h)
{
    struct lu_adapter *lu = h->data;

    zkl_client_on_timer(lu->c);
}

static void lu_soon_cb(uv_idle_t *h)
{
    struct lu_adapter *lu = h->data;

    uv_idle_stop(h);
    zkl_client_on_timer(lu->c);
}

/* A changed interest on the same socket restarts the handle. A reset or
 * another fd number closes it and opens a new one: libuv keeps its own
 * record of each watched number, which would outlive a closed socket, and
 * refuses a second handle on a number still recorded. Closing takes the
 * record down at once, so the new handle can be made right away. */
static int lu_io(void *data, int fd, int events, int reset)
{
    struct lu_adapter *lu = data;
    int want = ((events & ZKL_READ) ? UV_READABLE : 0) |
               ((events & ZKL_WRITE) ? UV_WRITABLE : 0);

    if (lu->poll != NULL && (reset || fd != lu->fd || fd < 0)) {
        lu_close((uv_handle_t *)lu->poll);
        lu->poll = NULL;
    }
    lu->fd = fd;
    if (fd < 0)
        return 0;
    if (want == 0)
        return lu->poll != NULL ? uv_poll_stop(lu->poll) : 0;
    if (lu->poll == NULL) {
        uv_poll_t *p = zkl_malloc(sizeof *p);

        if (p == NULL)
            return -1;
        if (uv_poll_init(lu->loop, p, fd) != 0) {
            zkl_free(p);
            return -1;
        }
        p->data = lu;
        lu->poll = p;
    }
    return uv_poll_start(lu->poll, want, lu_poll_cb) != 0 ? -1 : 0;
}

/* "At once" (0 ms) is an idle handle, not a timer: the core asks for it
 * to hand the loop back when a pass ran out of budget, and libuv before
 * 1.48 runs a 0 ms timer re-armed from its own callback again in the same
 * turn, with no I/O polled in between. An active idle handle runs once
 * per turn and keeps the turn's poll from blocking. */
static int lu_timer(void *data, long ms)
{
    struct lu_adapter *lu = data;

    if (ms != 0)
        uv_idle_stop(lu->soon);
    if (ms <= 0 && uv_timer_stop(lu->tmr) != 0)
        return -1;
    if (ms == 0)
        return uv_idle_start(lu->soon, lu_soon_cb) != 0 ? -1 : 0;
    if (ms < 0)
        return 0;
    /* The loop's clock is read once per turn; the deadline counts from
     * now, not from when the turn began. */
    uv_update_time(lu->loop);
    return uv_timer_start(lu->tmr, lu_timer_cb, (uint64_t)ms, 0) != 0 ? -1
                                                                       : 0;
}

static void lu_detach(void *data)
{
    struct lu_adapter *lu = data;

    if (lu->poll != NULL)
        lu_close((uv_handle_t *)lu->poll);
    lu_close((uv_handle_t *)lu->tmr);
    lu_close((uv_handle_t *)lu->soon);
    zkl_free(lu);
}

static const zkl_loop_ops_t lu_ops = {lu_io, lu_timer, lu_detach};

int zkl_libuv_attach(zkl_client_t *c, uv_loop_t *loop)
{
    struct lu_adapter *lu;
    int rc;

    if (c == NULL || loop == NULL)
        return ZKL_EINVAL;
    lu = zkl_calloc(1, sizeof *lu);
    if (lu == NULL)
        return ZKL_ENOMEM;
    lu->tmr = zkl_malloc(sizeof *lu->tmr);
    lu->soon = zkl_malloc(sizeof *lu->soon);
    if (lu->tmr == NULL || lu->soon == NULL) {
        zkl_free(lu->tmr);
        zkl_free(lu->soon);
        zkl_free(lu);
        return ZKL_ENOMEM;
    }
    if (uv_timer_init(loop, lu->tmr) != 0) {
        zkl_free(lu->tmr);
        zkl_free(lu->soon);
        zkl_free(lu);
        return ZKL_ELOOP;
    }
    if (uv_idle_init(loop, lu->soon) != 0) {
        lu_close((uv_handle_t *)lu->tmr);
        zkl_free(lu->soon);
        zkl_free(lu);
        return ZKL_ELOOP;
    }
    lu->soon->data = lu;
    lu->tmr->data = lu;
    lu->c = c;
    lu->loop = loop;
    lu->fd = -1;
    rc = zkl_client_attach(c, &lu_ops, lu);
    if (rc != ZKL_OK) {
        /* initialised: they must be closed */
        lu_close((uv_handle_t *)lu->tmr);
        lu_close((uv_handle_t *)lu->soon);
        zkl_free(lu);
    }
    return rc;
}
