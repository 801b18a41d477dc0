/* The harness of run-tests: its tests run on libevent, through the
 * libevent adapter; loop helpers, clients, recorded lock events and the
 * ensemble. What is not tied to a loop is in common.h. */
#ifndef ZKL_TEST_HARNESS_H
#define ZKL_TEST_HARNESS_H

#include <event2/event.h>

#include "common.h"
#include "zklock.h"
#include "zklock_libevent.h"

/* ---- ensemble (tests run by `run-tests --ensemble`) ---- */
#define T_ENS_NODES 3
/* Runs test/zkserver.sh CMD (start, stop, kill) on node k (1..3) of the
 * suite's ensemble (ZKL_TEST_ENSEMBLE); fails the test if it fails. */
void t_ens(const char *cmd, int k);
/* "127.0.0.1:PORT" of node k. */
const char *t_ens_host(int k);
/* The node serving at hostport ("ip:port"). */
int t_ens_node_of(const char *hostport);
/* The node that is leader, waiting up to ms for one. */
int t_ens_leader(long ms);

/* ---- loop ---- */
extern struct event_base *t_base;
/* Runs the loop until *flag != 0 or ms pass; returns *flag. */
int t_run_until(volatile int *flag, long ms);
/* Runs the loop until cond(arg) or ms pass; returns cond(arg). */
int t_run_cond(int (*cond)(void *), void *arg, long ms);

/* ---- clients ---- */
typedef struct t_conn {
    int events[64];
    int n;
    int connected;
} t_conn_t;
/* The connection callback that records into a t_conn_t (arg). */
void t_conn_cb(zkl_client_t *c, zkl_conn_event_t ev, void *arg);
/* Whether conn recorded connection event ev. */
int t_has_event(const t_conn_t *conn, int ev);
/* How long a client may take to connect (ms; see harness.c). */
long t_connect_ms(void);
/* A connected client on t_base (fails the test if it cannot connect). */
zkl_client_t *t_client(const char *hosts, int session_ms, t_conn_t *conn);
/* c's counters (zkl_client_stats), failing the test if it cannot. */
zkl_stats_t t_stats(zkl_client_t *c);
/* Applies the secured servers' settings from the environment (see
 * harness.c). */
void t_secure(zkl_options_t *o);
/* The same, without waiting: conn->connected says when. */
zkl_client_t *t_client_start(const char *hosts, int session_ms,
                             t_conn_t *conn);

/* Records every callback of one lock handle, or of one multi-lock. */
typedef struct t_lock {
    zkl_lock_t *lk;
    zkl_multi_t *m;       /* a multi-lock's record: the set */
    int ev[32], st[32];
    int n;
    int acquired, failed, released, lost, suspended, restored, revoked;
    int queued, ahead;    /* ZKL_LOCK_QUEUED: how many, the last status */
    int last_status;
    uint64_t at_ms;       /* when the last event arrived */
    int order;            /* global grant order (t_grant_seq) */
    int release_on_acquire;
    int grant_ev, susp_ev, lost_ev; /* t_event_seq at the last such event */
} t_lock_t;
extern int t_grant_seq;
extern int t_event_seq; /* counts every lock event of the process */
void t_lock_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status, void *arg);
typedef t_lock_t t_multi_t;
void t_multi_cb(zkl_multi_t *m, zkl_lock_event_t ev, int status, void *arg);
/* A multi-lock of paths[0..n-1] (mutexes) recorded in t. */
void t_multi_init(t_multi_t *t, zkl_client_t *c, const char *const *paths,
                  size_t n);
void t_lock_init(t_lock_t *t, zkl_client_t *c, const char *path);
void t_lock_init_kind(t_lock_t *t, zkl_client_t *c, const char *path,
                      zkl_lock_kind_t kind);
/* A lease of the semaphore with max leases on path. */
void t_lock_init_lease(t_lock_t *t, zkl_client_t *c, const char *path,
                       int max);
/* Acquires t's lock and releases it (counted in t): its lock path
 * exists afterwards, so that a fault aimed at the next create or
 * listing meets the acquire itself, not the making of the path. */
void t_lock_cycle(t_lock_t *t);
/* The shape most tests start from: hold takes path on hc and is
 * granted; then wait (on wc) queues behind it, its node on the server
 * and its watch set. */
void t_hold_and_queue(t_lock_t *hold, zkl_client_t *hc, t_lock_t *wait,
                      zkl_client_t *wc, const char *path);

/* Records one zkl_contenders() answer (the first 8 names). */
typedef struct t_listing {
    int done, status;
    size_t n;
    char names[8][64];
} t_listing_t;
void t_listing_cb(zkl_client_t *c, int status, const char *const *names,
                  size_t n, void *arg);

#endif
