/* zklock on a libevent (2.1 or later) loop (libzklock-libevent,
 * pkg-config zklock-libevent).
 *
 *   struct event_base *base = event_base_new();
 *   zkl_client_new(&c, opts);
 *   zkl_libevent_attach(c, base);   // starts connecting
 *   event_base_dispatch(base);
 *
 * Ownership: the adapter's state (one fd event, one timer) is allocated
 * with zkl_malloc() and freed by zkl_client_free(), which deletes both
 * events. The base is the caller's and must outlive the client: free
 * the client before event_base_free(). Dispatch the base on one thread
 * only, the one that calls zklock. This header declares struct
 * event_base only: include <event2/event.h> to use libevent. */
#ifndef ZKLOCK_LIBEVENT_H
#define ZKLOCK_LIBEVENT_H

#include <zklock.h>

#ifdef __cplusplus
extern "C" {
#endif

struct event_base;

/* Attaches c to base and starts connecting. Errors: ZKL_EINVAL (NULL),
 * ZKL_EBUSY (already attached), ZKL_ENOMEM, ZKL_ECLOSED. */
ZKL_EXTERN int zkl_libevent_attach(zkl_client_t *c, struct event_base *base);

#ifdef __cplusplus
}
#endif
#endif
