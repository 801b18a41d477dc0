/* zklock on a GLib main context (libzklock-glib, pkg-config zklock-glib).
 *
 *   GMainLoop *ml = g_main_loop_new(NULL, FALSE);
 *   zkl_client_new(&c, opts);
 *   zkl_glib_attach(c, NULL);       // the default context; connects
 *   g_main_loop_run(ml);
 *
 * The client is one GSource of priority G_PRIORITY_DEFAULT attached to
 * the context; it watches the socket and carries the timer itself.
 * Ownership: the source is GLib's (reference counted, allocated by
 * GLib); zkl_client_free() destroys it and drops the adapter's
 * reference. The context is the caller's: the adapter holds a reference
 * to it while attached. Run the context on one thread only, the one
 * that calls zklock. */
#ifndef ZKLOCK_GLIB_H
#define ZKLOCK_GLIB_H

#include <glib.h>
#include <zklock.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Attaches c to ctx (NULL: the global default context) and starts
 * connecting. Errors: ZKL_EINVAL (c NULL), ZKL_EBUSY (already
 * attached), ZKL_ECLOSED. */
ZKL_EXTERN int zkl_glib_attach(zkl_client_t *c, GMainContext *ctx);

#ifdef __cplusplus
}
#endif
#endif
