/* zklock on a libev loop (libzklock-libev, pkg-config zklock-libev).
 *
 *   struct ev_loop *loop = EV_DEFAULT;
 *   zkl_client_new(&c, opts);
 *   zkl_libev_attach(c, loop);      // starts connecting
 *   ev_run(loop, 0);
 *
 * Ownership: the adapter's state (one ev_io, one ev_timer) is allocated
 * with zkl_malloc() and freed by zkl_client_free(), which stops both
 * watchers. The loop is the caller's and must outlive the client. Run
 * it on one thread only, the one that calls zklock. This header
 * declares struct ev_loop only: include <ev.h> to use libev. */
#ifndef ZKLOCK_LIBEV_H
#define ZKLOCK_LIBEV_H

#include <zklock.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ev_loop;

/* Attaches c to loop and starts connecting. Errors: ZKL_EINVAL (NULL),
 * ZKL_EBUSY (already attached), ZKL_ENOMEM, ZKL_ECLOSED. */
ZKL_EXTERN int zkl_libev_attach(zkl_client_t *c, struct ev_loop *loop);

#ifdef __cplusplus
}
#endif
#endif
