/* The poll adapter: no loop, the program calls zkl_poll_run(). Lives in
 * libzklock (it needs nothing but libc) but uses only the public API,
 * like every other adapter. */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <time.h>

#include "zklock_poll.h"

struct zp_adapter {
    int fd, events;      /* fd -1: no socket to watch */
    int timer_armed;
    uint64_t due_ms;     /* CLOCK_MONOTONIC ms, when timer_armed */
    int *gone;           /* set by detach while zkl_poll_run runs */
};

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* poll() asks the kernel afresh each call, so a reset needs nothing. */
static int zp_io(void *data, int fd, int events, int reset)
{
    struct zp_adapter *zp = data;

    (void)reset;
    zp->fd = events != 0 ? fd : -1;
    zp->events = events;
    return 0;
}

static int zp_timer(void *data, long ms)
{
    struct zp_adapter *zp = data;

    zp->timer_armed = ms >= 0;
    if (ms >= 0)
        zp->due_ms = now_ms() + (uint64_t)ms;
    return 0;
}

static void zp_detach(void *data)
{
    struct zp_adapter *zp = data;

    if (zp->gone != NULL)
        *zp->gone = 1;
    zkl_free(zp);
}

static const zkl_loop_ops_t zp_ops = {zp_io, zp_timer, zp_detach};

int zkl_poll_attach(zkl_client_t *c)
{
    struct zp_adapter *zp;
    int rc;

    if (c == NULL)
        return ZKL_EINVAL;
    zp = zkl_calloc(1, sizeof *zp);
    if (zp == NULL)
        return ZKL_ENOMEM;
    zp->fd = -1;
    rc = zkl_client_attach(c, &zp_ops, zp);
    if (rc != ZKL_OK)
        zkl_free(zp);
    return rc;
}

int zkl_poll_run(zkl_client_t *c, int timeout_ms)
{
    struct zp_adapter *zp = zkl_client_loop_data(c, &zp_ops);
    struct pollfd pfd;
    uint64_t now;
    int wait = timeout_ms, n, gone = 0, ev = 0;

    if (zp == NULL)
        return ZKL_EINVAL;
    if (zp->gone != NULL)
        return ZKL_EBUSY; /* called from a callback of this very run */
    if (zp->timer_armed) {
        now = now_ms();
        if (zp->due_ms <= now)
            wait = 0;
        else if (wait < 0 || zp->due_ms - now < (uint64_t)wait)
            wait = (int)(zp->due_ms - now);
    }
    if (zp->fd < 0 && wait < 0)
        return 0; /* nothing can ever become due */
    pfd.fd = zp->fd;
    pfd.events = (short)(((zp->events & ZKL_READ) ? POLLIN : 0) |
                         ((zp->events & ZKL_WRITE) ? POLLOUT : 0));
    pfd.revents = 0;
    n = poll(&pfd, zp->fd >= 0 ? 1 : 0, wait);
    if (n < 0)
        return errno == EINTR ? 0 : ZKL_ELOOP;
    /* An error or hang-up is news for the reader: the ZooKeeper client
     * finds the failure when it reads. */
    if (pfd.revents & (POLLIN | POLLHUP | POLLERR))
        ev |= ZKL_READ;
    if (pfd.revents & POLLOUT)
        ev |= ZKL_WRITE;
    zp->gone = &gone;
    if (n > 0 && ev != 0) {
        zkl_client_on_io(c, ev);
        if (gone)
            return ZKL_ECLOSED;
    }
    if (zp->timer_armed && zp->due_ms <= now_ms()) {
        zp->timer_armed = 0;
        zkl_client_on_timer(c);
        if (gone)
            return ZKL_ECLOSED;
    }
    zp->gone = NULL;
    return 0;
}
