/* zklock on a libuv loop (libzklock-libuv, pkg-config zklock-libuv).
 *
 *   uv_loop_t *loop = uv_default_loop();
 *   zkl_client_new(&c, opts);
 *   zkl_libuv_attach(c, loop);      // starts connecting
 *   uv_run(loop, UV_RUN_DEFAULT);
 *
 * Ownership: the adapter's state (a uv_poll_t, a uv_timer_t) is
 * allocated with zkl_malloc(). libuv closes handles asynchronously, so
 * zkl_client_free() closes them and the memory is freed by their close
 * callbacks: run the loop once more (uv_run returns when they are done)
 * before uv_loop_close(), as with any libuv handle. The loop is the
 * caller's and must outlive the client and that last run. Run it on one
 * thread only, the one that calls zklock. <uv.h> needs POSIX
 * declarations that a strict -std=c11 hides: build with -std=gnu11, or
 * define _POSIX_C_SOURCE as 200809L before the first #include. */
#ifndef ZKLOCK_LIBUV_H
#define ZKLOCK_LIBUV_H

#include <uv.h>
#include <zklock.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Attaches c to loop and starts connecting. Errors: ZKL_EINVAL (NULL),
 * ZKL_EBUSY (already attached), ZKL_ENOMEM, ZKL_ELOOP (libuv refused
 * the timer), ZKL_ECLOSED. */
ZKL_EXTERN int zkl_libuv_attach(zkl_client_t *c, uv_loop_t *loop);

#ifdef __cplusplus
}
#endif
#endif
