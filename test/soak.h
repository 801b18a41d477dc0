/* What the parts of zkl-soak share: the messages between the workers and
 * the checker, the run's settings, and the checker's state, which the
 * fault injector reads (who holds, who is frozen) and moves (the
 * server's state, the fault counts). Kept in one place so that a worker
 * and the checker cannot disagree on a message's layout. */
#ifndef ZKL_SOAK_H
#define ZKL_SOAK_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include <event2/event.h>

#include "zklock.h"

#define MAX_WORKERS 16
#define MAX_NODES 7
#define CLIENTS 2          /* sessions per worker */
#define HANDLES 3          /* lock handles per session */
#define LOCKS 5
#define RW_LOCK 3          /* the read/write lock */
#define SEM_LOCK 4         /* the semaphore; the others are mutexes */
#define SEM_LEASES 2       /* its limit */
#define PER_WORKER (CLIENTS * HANDLES)
#define MAX_HANDLES (MAX_WORKERS * PER_WORKER)

/* worker -> checker; the checker's own faults that explain overlaps go
 * into the same stream (M_FROZE, M_STALLED) */
enum { M_WAIT = 1, M_ENTER, M_REENTER, M_EXIT, M_WRITE, M_FAILED,
       M_EXPIRED, M_DRAINED, M_COUNT, M_FROZE, M_STALLED };
/* checker -> worker */
enum { C_CUT = 1, C_LOSE, C_DELAY, C_STALL, C_DRAIN, C_COUNT, C_QUIT };
enum { EXIT_RELEASE = 1, EXIT_SUSPENDED, EXIT_LOST };

/* arg: M_EXIT's reason, M_FAILED's status, M_ENTER's and M_REENTER's
 * lock kind (readers may be inside together). */
struct msg {
    int32_t type, worker, handle, lock, arg, client;
    uint64_t token;
    uint64_t seq; /* place in the one order of all events */
};

/* Every event, from any worker or the checker, takes the next number
 * from this counter (shared memory) just before it is sent. Each worker
 * has its own socket, so the checker may read an ENTER before the EXIT
 * that came first on another socket (when it was busy, say); it handles
 * events in number order instead, waiting for a missing one. */
extern _Atomic uint64_t *next_seq;

extern struct soak_cfg {
    const char *hosts, *server_dir, *zkserver;
    double minutes;
    int workers, session_ms, fault_ms, sabotage, lag_ms;
    unsigned seed;
    char root[128];
    int nodes; /* more than one: an ensemble */
    uint16_t port[MAX_NODES];
} cfg;

/* rnd()'s state; each process seeds it from --seed, a worker with its
 * number mixed in. */
extern uint64_t rng_state;

uint64_t now_ms(void);
unsigned rnd(unsigned n);
struct timeval tv_ms(long ms);

enum { F_CUT, F_LOSE, F_DELAY, F_SHORT_STALL, F_EXPIRING_STALL, F_FREEZE,
       F_SERVER_RESTART, F_NODE_RESTART, F_KINDS };
extern const char *const fault_key[F_KINDS];

enum { SRV_UP, SRV_KILLING, SRV_DOWN, SRV_STARTING };

extern struct checker {
    struct event_base *base;
    struct wk {
        pid_t pid;
        int fd, alive, drained, stuck;
        struct event *ev;
        uint64_t frozen_until, thawed_at;
        /* injected losses of its sessions, for explaining overlaps:
         * freezes of the whole process, stalls past the timeout of one
         * session's connection */
        unsigned freezes, stalls[CLIENTS];
    } w[MAX_WORKERS];
    struct hs {
        int lock, inside, waiting;
        int kind;          /* zkl_lock_kind_t, from ENTER's arg */
        uint64_t token, wait_since;
        unsigned freeze_mark, stall_mark; /* the counts when it entered */
    } h[MAX_HANDLES];
    struct ls {
        int latest; /* handle of the latest grant, -1 none */
        uint64_t latest_token, max_accepted, last_grant_ms;
    } l[LOCKS];
    uint64_t start, end, server_ok_since, last_restart;
    int server, phase, drained, counted; /* server: SRV_* */
    int node;                  /* the ensemble node being restarted */
    pid_t server_cmd;
    struct event *fault_timer, *check_timer, *thaw_timer, *start_timer;
    long grants, faults, by_kind[F_KINDS], overlaps, explained,
        unexplained, accepted, stale_refused, stale_accepted, regressions,
        hangs, orphans, expiries, lost, crashes, writes, stalled_overlaps,
        lost_late, leader_restarts, missing,
        read_grants, shared_reads, /* the read/write lock's readers */
        lease_grants, leases_beside; /* the semaphore's leases */
} K;

/* soak-worker.c */
int worker_main(int id, int fd);

/* soak-checker.c */
void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void post(int type, int wi, int client);
void command(int wi, int type, int client, int arg);
int checker_main(void);

/* soak-inject.c */
void on_fault_timer(evutil_socket_t fd, short what, void *arg);
void thaw(evutil_socket_t fd, short what, void *arg);
void server_start(evutil_socket_t fd, short what, void *arg);
void server_reap(uint64_t now);

#endif
