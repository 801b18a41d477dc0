/* zklock in an nginx worker process (libzklock-nginx, a static library,
 * pkg-config zklock-nginx; the module ngx_http_zklock_module uses it).
 *
 *   static ngx_int_t my_init_process(ngx_cycle_t *cycle)
 *   {
 *       zkl_client_new(&c, opts);
 *       return zkl_nginx_attach(c, cycle->log) == ZKL_OK ? NGX_OK
 *                                                       : NGX_ERROR;
 *   }
 *   static void my_exit_process(ngx_cycle_t *cycle)
 *   {
 *       zkl_client_free(c);     // closes the session, its nodes go
 *   }
 *
 * The client's socket becomes one of the worker's connections (it counts
 * against worker_connections), watched level-triggered through the
 * worker's event module (epoll, kqueue, poll...); the client's timer is
 * an nginx timer that does not hold up a graceful shutdown (cancelable).
 * Nothing blocks and no thread is started, except zkl_client_free(),
 * which may block up to ~5.5 s when the server does not answer: call it
 * from the module's exit_process, where the worker is leaving anyway.
 * A worker must free its client before it exits: nginx reports a socket
 * still open in its connections then.
 *
 * Ownership: the adapter's state (the connection's record, one timer
 * event) is allocated with zkl_malloc() and freed by zkl_client_free().
 * The log is the caller's and must outlive the client (a cycle's log
 * does). Include <ngx_config.h>, <ngx_core.h> and <ngx_event.h> before
 * this header.
 *
 * The adapter is compiled by nginx's own module build, against the nginx
 * that loads it (nginx's struct layouts are its ABI), so it comes as a
 * static library, libzklock-nginx.a, to link into a module.
 * ngx_http_zklock_module (nginx/ in zklock's sources) is a complete
 * module built on it: one client per worker, requests suspended in the
 * precontent phase until their lock is granted, and the lock's callbacks
 * turned into posted nginx events. */
#ifndef ZKLOCK_NGINX_H
#define ZKLOCK_NGINX_H

#include <zklock.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Attaches c to the worker's event loop and starts connecting; log gets
 * the adapter's own errors (an event module that refused the socket).
 * Errors: ZKL_EINVAL (NULL), ZKL_EBUSY (already attached), ZKL_ENOMEM,
 * ZKL_ECLOSED. */
ZKL_EXTERN int zkl_nginx_attach(zkl_client_t *c, ngx_log_t *log);

#ifdef __cplusplus
}
#endif
#endif
