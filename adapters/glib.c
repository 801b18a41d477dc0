/* The GLib adapter: the client is one GSource that polls its socket and
 * carries its timer as the source's ready time. On the public API only.
 * GLib holds a reference on a source while dispatching it, so the source
 * (and the adapter state in it) outlives a zkl_client_free() from a
 * callback until dispatch returns. */
#include "zklock_glib.h"

typedef struct {
    GSource src;
    zkl_client_t *c;
    GMainContext *ctx; /* a reference, dropped at detach */
    gpointer tag;      /* the watched fd; NULL when none */
    int fd;
} zg_source_t;

static gboolean zg_dispatch(GSource *src, GSourceFunc cb, gpointer data)
{
    zg_source_t *zg = (zg_source_t *)src;
    GIOCondition rev = zg->tag != NULL ? g_source_query_unix_fd(src, zg->tag)
                                       : 0;
    int ev = 0;

    (void)cb;
    (void)data;
    /* An error or hang-up is news for the reader: the ZooKeeper client
     * finds the failure when it reads. */
    if (rev & (G_IO_IN | G_IO_ERR | G_IO_HUP | G_IO_NVAL))
        ev |= ZKL_READ;
    if (rev & G_IO_OUT)
        ev |= ZKL_WRITE;
    if (ev != 0) {
        /* The pass also does what a due timer would, and re-arms it. */
        zkl_client_on_io(zg->c, ev);
    } else {
        g_source_set_ready_time(src, -1);
        zkl_client_on_timer(zg->c);
    }
    return G_SOURCE_CONTINUE; /* a freed client destroyed the source */
}

static GSourceFuncs zg_funcs = {NULL, NULL, zg_dispatch, NULL, NULL, NULL};

/* GLib polls afresh each iteration, but a reset may be a new socket
 * behind the number: the fd is dropped and added again all the same. */
static int zg_io(void *data, int fd, int events, int reset)
{
    zg_source_t *zg = data;
    GIOCondition want = ((events & ZKL_READ) ? G_IO_IN | G_IO_HUP | G_IO_ERR
                                             : 0) |
                        ((events & ZKL_WRITE) ? G_IO_OUT : 0);

    if (zg->tag != NULL && (reset || fd != zg->fd || fd < 0 || want == 0)) {
        g_source_remove_unix_fd(&zg->src, zg->tag);
        zg->tag = NULL;
    }
    zg->fd = fd;
    if (fd < 0 || want == 0)
        return 0;
    if (zg->tag != NULL)
        g_source_modify_unix_fd(&zg->src, zg->tag, want);
    else
        zg->tag = g_source_add_unix_fd(&zg->src, fd, want);
    return 0;
}

static int zg_timer(void *data, long ms)
{
    zg_source_t *zg = data;

    g_source_set_ready_time(&zg->src,
                            ms < 0 ? -1
                                   : g_get_monotonic_time() +
                                         (gint64)ms * 1000);
    return 0;
}

static void zg_detach(void *data)
{
    zg_source_t *zg = data;
    GMainContext *ctx = zg->ctx;

    g_source_destroy(&zg->src);
    g_source_unref(&zg->src);
    g_main_context_unref(ctx);
}

static const zkl_loop_ops_t zg_ops = {zg_io, zg_timer, zg_detach};

int zkl_glib_attach(zkl_client_t *c, GMainContext *ctx)
{
    zg_source_t *zg;
    int rc;

    if (c == NULL)
        return ZKL_EINVAL;
    if (ctx == NULL)
        ctx = g_main_context_default();
    zg = (zg_source_t *)g_source_new(&zg_funcs, sizeof *zg);
    g_source_set_name(&zg->src, "zklock");
    zg->c = c;
    zg->ctx = g_main_context_ref(ctx);
    zg->fd = -1;
    g_source_attach(&zg->src, ctx);
    rc = zkl_client_attach(c, &zg_ops, zg);
    if (rc != ZKL_OK)
        zg_detach(zg);
    return rc;
}
