/* The adapter suite's libev driver. */
#include <ev.h>

#include "adapter-driver.h"
#include "common.h"
#include "zklock_libev.h"

static struct ev_loop *loop;
static ev_timer wake;

static void nothing(struct ev_loop *l, ev_timer *w, int revents)
{
    (void)l;
    (void)w;
    (void)revents;
}

static void d_open(void)
{
    loop = ev_loop_new(EVFLAG_AUTO);
    ASSERT(loop != NULL);
    ev_timer_init(&wake, nothing, 0., 0.);
}

static int d_attach(zkl_client_t *c)
{
    return zkl_libev_attach(c, loop);
}

static int d_attach_null_loop(zkl_client_t *c)
{
    ASSERT_RC(zkl_libev_attach(c, NULL), ZKL_EINVAL);
    return ZKL_OK;
}

static void d_run(long ms)
{
    ev_timer_set(&wake, (ev_tstamp)ms / 1000.0, 0.);
    ev_timer_start(loop, &wake);
    ev_run(loop, EVRUN_ONCE);
    ev_timer_stop(loop, &wake);
}

static int d_close(void)
{
    /* ev_run() says whether watchers are still active: any left were
     * left by an adapter. */
    int left = ev_run(loop, EVRUN_NOWAIT);

    ev_loop_destroy(loop);
    if (left != 0)
        FAILF("libev: watchers left active");
    return 0;
}

const t_driver_t t_driver = {"libev", d_open, d_attach, d_attach_null_loop,
                             d_run, NULL, d_close};
