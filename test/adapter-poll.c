/* The adapter suite's poll driver: the program's own loop over
 * zkl_poll_run(), one client at a time. */
#include "adapter-driver.h"
#include "common.h"
#include "zklock_poll.h"

#define MAXC 8
static zkl_client_t *clients[MAXC];

static void d_open(void)
{
}

static int d_attach(zkl_client_t *c)
{
    int rc = zkl_poll_attach(c), i;

    if (rc != ZKL_OK)
        return rc;
    for (i = 0; i < MAXC && clients[i] != NULL; i++)
        ;
    ASSERT(i < MAXC);
    clients[i] = c;
    return ZKL_OK;
}

static int d_attach_null_loop(zkl_client_t *c)
{
    ASSERT_RC(zkl_poll_run(NULL, 0), ZKL_EINVAL);
    ASSERT_RC(zkl_poll_run(c, 0), ZKL_EINVAL); /* not attached yet */
    return ZKL_OK;
}

static void d_forget(zkl_client_t *c)
{
    int i;

    for (i = 0; i < MAXC; i++)
        if (clients[i] == c)
            clients[i] = NULL;
}

/* One client waits the whole time; several take turns of 2 ms. */
static void d_run(long ms)
{
    int i, n = 0, rc;

    for (i = 0; i < MAXC; i++)
        n += clients[i] != NULL;
    if (n == 0) {
        t_sleep_ms(ms);
        return;
    }
    for (i = 0; i < MAXC; i++) {
        zkl_client_t *c = clients[i];

        if (c == NULL)
            continue;
        rc = zkl_poll_run(c, n == 1 ? (int)ms : 2);
        if (rc == ZKL_ECLOSED)
            d_forget(c);
        else if (rc != ZKL_OK)
            FAILF("zkl_poll_run: %s", zkl_err_name(rc));
    }
}

static int d_close(void)
{
    int i;

    for (i = 0; i < MAXC; i++)
        if (clients[i] != NULL)
            FAILF("poll: a client was never freed");
    return 0;
}

const t_driver_t t_driver = {"poll", d_open, d_attach, d_attach_null_loop,
                             d_run, d_forget, d_close};
