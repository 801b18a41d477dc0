/* Takes a lock on GLib's main loop, holds it for a tenth of a second,
 * lets it go, and exits 0; 1 if the lock was not had.
 *
 *   glib-lock HOSTS PATH
 *   cc glib-lock.c $(pkg-config --cflags --libs zklock zklock-glib)
 */
#include <stdio.h>

#include <glib.h>
#include <zklock.h>
#include <zklock_glib.h>

struct job {
    GMainLoop *ml;
    zkl_client_t *c;
    int status;
};

static gboolean work_done(gpointer lk)
{
    zkl_lock_release(lk);
    return G_SOURCE_REMOVE;
}

static void on_lock(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                    void *arg)
{
    struct job *j = arg;
    uint64_t token = 0;

    switch (ev) {
    case ZKL_LOCK_ACQUIRED:
        zkl_lock_token(lk, &token);
        g_print("acquired %s, token %" G_GUINT64_FORMAT "\n",
                zkl_lock_path(lk), (guint64)token);
        g_timeout_add(100, work_done, lk);
        return;
    case ZKL_LOCK_RELEASED:
        g_print("released\n");
        j->status = 0;
        break;
    case ZKL_LOCK_FAILED:
    case ZKL_LOCK_LOST:
        g_printerr("glib-lock: %s\n", zkl_strerror(status));
        g_source_remove_by_user_data(lk); /* a pending work_done */
        break;
    default: /* SUSPENDED, RESTORED: keep waiting */
        return;
    }
    zkl_lock_free(lk);
    zkl_client_free(j->c);
    g_main_loop_quit(j->ml);
}

int main(int argc, char **argv)
{
    struct job j = {NULL, NULL, 1};
    zkl_options_t *o;
    zkl_lock_t *lk;
    int rc;

    if (argc != 3) {
        g_printerr("usage: %s HOSTS PATH\n", argv[0]);
        return 2;
    }
    if ((rc = zkl_options_new(&o)) != ZKL_OK ||
        (rc = zkl_options_set_servers(o, argv[1])) != ZKL_OK ||
        (rc = zkl_client_new(&j.c, o)) != ZKL_OK) {
        g_printerr("glib-lock: %s\n", zkl_strerror(rc));
        return 1;
    }
    zkl_options_free(o);
    if ((rc = zkl_glib_attach(j.c, NULL)) != ZKL_OK ||
        (rc = zkl_lock_new(&lk, j.c, argv[2], on_lock, &j)) != ZKL_OK ||
        (rc = zkl_lock_acquire(lk, 10000)) != ZKL_OK) {
        g_printerr("glib-lock: %s\n", zkl_strerror(rc));
        zkl_client_free(j.c);
        return 1;
    }
    j.ml = g_main_loop_new(NULL, FALSE);
    g_main_loop_run(j.ml);
    g_main_loop_unref(j.ml);
    return j.status;
}
