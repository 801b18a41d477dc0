/* zklock on systemd's sd-event loop (libzklock-sdevent, pkg-config
 * zklock-sdevent).
 *
 *   sd_event *e;
 *   sd_event_default(&e);
 *   zkl_client_new(&c, opts);
 *   zkl_sdevent_attach(c, e);       // starts connecting
 *   sd_event_loop(e);
 *
 * Ownership: the adapter's state is allocated with zkl_malloc() and
 * holds one io and one time event source (sd-event's, reference
 * counted) and a reference on the loop; zkl_client_free() drops all
 * three, so the program may drop its own reference to the loop before
 * or after zkl_client_free(): the adapter's keeps it alive until then. Run the loop on one thread only, the one that calls zklock. */
#ifndef ZKLOCK_SDEVENT_H
#define ZKLOCK_SDEVENT_H

#include <systemd/sd-event.h>
#include <zklock.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Attaches c to e and starts connecting. Errors: ZKL_EINVAL (NULL),
 * ZKL_EBUSY (already attached), ZKL_ENOMEM, ZKL_ELOOP (sd-event refused
 * the timer source), ZKL_ECLOSED. */
ZKL_EXTERN int zkl_sdevent_attach(zkl_client_t *c, sd_event *e);

#ifdef __cplusplus
}
#endif
#endif
