/* The adapter suite's sd-event driver. */
#include <systemd/sd-event.h>
#include <time.h>

#include "adapter-driver.h"
#include "common.h"
#include "zklock_sdevent.h"

static sd_event *ev;

static void d_open(void)
{
    ASSERT(sd_event_new(&ev) >= 0);
}

static int d_attach(zkl_client_t *c)
{
    return zkl_sdevent_attach(c, ev);
}

static int d_attach_null_loop(zkl_client_t *c)
{
    ASSERT_RC(zkl_sdevent_attach(c, NULL), ZKL_EINVAL);
    return ZKL_OK;
}

static void d_run(long ms)
{
    sd_event_run(ev, (uint64_t)ms * 1000);
}

/* Every source holds a reference on the loop: one an adapter left would
 * keep it alive, and the leak check of ASan and valgrind finds it. */
static int d_close(void)
{
    ev = sd_event_unref(ev);
    return 0;
}

const t_driver_t t_driver = {"sdevent", d_open, d_attach,
                             d_attach_null_loop, d_run, NULL, d_close};
