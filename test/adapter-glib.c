/* The adapter suite's GLib driver: a context of the test's own. */
#include <glib.h>

#include "adapter-driver.h"
#include "common.h"
#include "zklock_glib.h"

static GMainContext *ctx;

static gboolean stop(gpointer data)
{
    (void)data;
    return G_SOURCE_REMOVE;
}

static void d_open(void)
{
    ctx = g_main_context_new();
}

static int d_attach(zkl_client_t *c)
{
    return zkl_glib_attach(c, ctx);
}

/* NULL is GLib's default context: accepted. */
static int d_attach_null_loop(zkl_client_t *c)
{
    zkl_options_t *o;
    zkl_client_t *other;

    ASSERT_RC(zkl_options_new(&o), ZKL_OK);
    ASSERT_RC(zkl_options_set_servers(o, t_hosts()), ZKL_OK);
    ASSERT_RC(zkl_client_new(&other, o), ZKL_OK);
    zkl_options_free(o);
    ASSERT_RC(zkl_glib_attach(other, NULL), ZKL_OK);
    zkl_client_free(other);
    (void)c;
    return ZKL_OK;
}

static void d_run(long ms)
{
    GSource *t = g_timeout_source_new((guint)ms);

    g_source_set_callback(t, stop, NULL, NULL);
    g_source_attach(t, ctx);
    g_main_context_iteration(ctx, TRUE);
    g_source_destroy(t);
    g_source_unref(t);
}

/* Source ids grow from 1 across the process: every id below a fresh
 * one is looked up, and none may be an adapter's source still attached. */
static int d_close(void)
{
    GSource *probe = g_idle_source_new(), *s;
    guint last, id;

    last = g_source_attach(probe, ctx);
    g_source_destroy(probe);
    g_source_unref(probe);
    for (id = 1; id < last; id++) {
        s = g_main_context_find_source_by_id(ctx, id);
        if (s != NULL && g_strcmp0(g_source_get_name(s), "zklock") == 0)
            FAILF("glib: a zklock source left on the context");
    }
    while (g_main_context_iteration(ctx, FALSE))
        ;
    g_main_context_unref(ctx);
    return 0;
}

const t_driver_t t_driver = {"glib", d_open, d_attach, d_attach_null_loop,
                             d_run, NULL, d_close};
