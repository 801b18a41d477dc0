/* zklock without an event loop: poll(2) on the client's socket, driven
 * by the program (part of libzklock itself; pkg-config zklock-poll).
 *
 *   zkl_client_new(&c, opts);
 *   zkl_poll_attach(c);             // starts connecting
 *   zkl_lock_acquire(lk, 5000);
 *   while (!done && zkl_poll_run(c, 100) >= 0)
 *       ;                           // or other work between the calls
 *
 * For programs with no loop of their own (tools, tests, batch jobs) and
 * one client. Nothing happens between calls of zkl_poll_run(): call it
 * often enough that ZooKeeper's pings (every third of the session
 * timeout) and the lock's callbacks are not held up.
 * Ownership: the adapter's state is allocated with zkl_malloc() and freed
 * by zkl_client_free(). Do not call zkl_poll_run() from a zklock callback
 * (nor from one that zkl_client_free() runs). */
#ifndef ZKLOCK_POLL_H
#define ZKLOCK_POLL_H

#include <zklock.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Attaches c to the poll adapter and starts connecting (the TCP connect
 * starts; nothing is read or written until the first zkl_poll_run()).
 * Errors: ZKL_EINVAL (NULL), ZKL_EBUSY
 * (already attached), ZKL_ENOMEM, ZKL_ECLOSED. */
ZKL_EXTERN int zkl_poll_attach(zkl_client_t *c);

/* Waits up to timeout_ms (0: not at all; -1: until something is due)
 * for the client's socket or its next deadline, and runs what is due:
 * reads, writes, timers and callbacks. With -1 and nothing that can ever
 * become due (a client that failed authentication) it returns 0 at once.
 * Returns 0 when it ran or the time passed (an interrupting signal counts as time passed); ZKL_ECLOSED
 * when a callback freed the client during the call (c is gone: stop
 * calling); ZKL_EINVAL when c is NULL or not attached with
 * zkl_poll_attach(); ZKL_EBUSY when called from a callback (which
 * runs inside zkl_poll_run() already); ZKL_ELOOP when poll() failed
 * otherwise (errno says why). */
ZKL_EXTERN int zkl_poll_run(zkl_client_t *c, int timeout_ms);

#ifdef __cplusplus
}
#endif
#endif
