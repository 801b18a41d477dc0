/* zklock's libevent adapter: runs a zklock client on a libevent loop.
 *
 *   struct event_base *base = event_base_new();
 *   zkl_client_new(&c, opts);
 *   zkl_libevent_attach(c, base);   // starts connecting
 *   event_base_dispatch(base);
 *
 * The adapter owns one fd event and one timer, freed when the client is
 * freed. The base must outlive the client. */
#ifndef ZKLOCK_LIBEVENT_H
#define ZKLOCK_LIBEVENT_H

#include <zklock.h>

#ifdef __cplusplus
extern "C" {
#endif

struct event_base;

/* Errors: ZKL_EINVAL (NULL), ZKL_EBUSY (already attached), ZKL_ENOMEM,
 * ZKL_ECLOSED. */
ZKL_EXTERN int zkl_libevent_attach(zkl_client_t *c, struct event_base *base);

#ifdef __cplusplus
}
#endif
#endif
