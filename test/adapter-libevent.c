/* The adapter suite's libevent driver. */
#include <event2/event.h>

#include "adapter-driver.h"
#include "common.h"
#include "zklock_libevent.h"

static struct event_base *base;
static struct event *wake;

static void nothing(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
}

static void d_open(void)
{
    base = event_base_new();
    wake = evtimer_new(base, nothing, NULL);
    ASSERT(base != NULL && wake != NULL);
}

static int d_attach(zkl_client_t *c)
{
    return zkl_libevent_attach(c, base);
}

static int d_attach_null_loop(zkl_client_t *c)
{
    ASSERT_RC(zkl_libevent_attach(c, NULL), ZKL_EINVAL);
    return ZKL_OK;
}

static void d_run(long ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    evtimer_add(wake, &tv);
    event_base_loop(base, EVLOOP_ONCE);
    event_del(wake);
}

static int d_close(void)
{
    int left;

    event_free(wake);
    /* Whatever is still added was left by an adapter. */
    left = event_base_get_num_events(base, EVENT_BASE_COUNT_ADDED);
    event_base_free(base);
    libevent_global_shutdown();
    if (left != 0)
        FAILF("libevent: %d events left added on the base", left);
    return 0;
}

const t_driver_t t_driver = {"libevent", d_open, d_attach,
                             d_attach_null_loop, d_run, NULL, d_close};
