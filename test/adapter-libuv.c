/* The adapter suite's libuv driver. */
#include <uv.h>

#include "adapter-driver.h"
#include "common.h"
#include "zklock_libuv.h"

static uv_loop_t loop;
static uv_timer_t wake;

static void nothing(uv_timer_t *t)
{
    (void)t;
}

static void d_open(void)
{
    ASSERT(uv_loop_init(&loop) == 0);
    ASSERT(uv_timer_init(&loop, &wake) == 0);
}

static int d_attach(zkl_client_t *c)
{
    return zkl_libuv_attach(c, &loop);
}

static int d_attach_null_loop(zkl_client_t *c)
{
    ASSERT_RC(zkl_libuv_attach(c, NULL), ZKL_EINVAL);
    return ZKL_OK;
}

static void d_run(long ms)
{
    uv_timer_start(&wake, nothing, (uint64_t)ms, 0);
    uv_run(&loop, UV_RUN_ONCE);
    uv_timer_stop(&wake);
}

static int d_close(void)
{
    int i, rc;

    uv_close((uv_handle_t *)&wake, NULL);
    /* The adapters' handles close asynchronously: a few turns let their
     * close callbacks run. A handle still open makes the close fail. */
    for (i = 0; i < 10 && uv_run(&loop, UV_RUN_NOWAIT) != 0; i++)
        ;
    rc = uv_loop_close(&loop);
    if (rc != 0)
        FAILF("libuv: the loop still has handles (%s)", uv_strerror(rc));
    return 0;
}

const t_driver_t t_driver = {"libuv", d_open, d_attach, d_attach_null_loop,
                             d_run, NULL, d_close};
