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
#define UNITS 8            /* users of the locks per worker */
#define MAX_MEMBERS 3      /* lock handles a unit may have */
#define PER_WORKER (UNITS * MAX_MEMBERS) /* slots: one per lock handle */
#define MAX_HANDLES (MAX_WORKERS * PER_WORKER)
#define SEM_LEASES 2       /* the semaphore's limit */

/* The lock paths, one recipe each, so that an overlap says whose
 * promise broke; the multi-lock sets reach across the first four. A set
 * takes its members in path order and waits holding those before: the
 * read/write lock, the busiest, comes first, so that no set waits there
 * holding the others (their queues would stand still behind it). */
enum { L_RW, L_MUTEX, L_REENT, L_GUARD, L_SEM, L_LATCH, LOCKS };

/* What a unit does: one handle of a kind (the reentrant one takes its
 * hold again and again; the guarded one writes the record on the server
 * through zkl_lock_write), the two sides of one read/write lock that
 * downgrade, one multi-lock set, ... */
enum { R_MUTEX, R_REENT, R_GUARD, R_READ, R_WRITE, R_DOWNGRADE, R_LEASE,
       R_LATCH, R_SET, RECIPES };
extern const char *const recipe_key[RECIPES];

/* worker -> checker; the checker's own faults that explain overlaps go
 * into the same stream (M_FROZE, M_STALLED) */
enum { M_WAIT = 1, M_ENTER, M_REENTER, M_EXIT, M_WRITE, M_FAILED,
       M_EXPIRED, M_DRAINED, M_COUNT, M_FROZE, M_STALLED, M_ROLE,
       M_ANSWERED, M_DEPTH, M_GSENT, M_GDONE, M_RECORD, M_ENDED };
/* checker -> worker */
enum { C_CUT = 1, C_LOSE, C_DELAY, C_STALL, C_DRAIN, C_COUNT, C_QUIT };
enum { EXIT_RELEASE = 1, EXIT_SUSPENDED, EXIT_LOST };

/* --sabotage: workers that break one promise each on purpose, to show
 * the checker catches it. */
enum {
    S_ENTER = 1,   /* enter after a failed acquire, with a made-up token */
    S_REENT = 2,   /* a reentrant inner release gives the node back */
    S_GUARD = 4,   /* guarded writes: unlocked, twice, reordered, lost */
    S_HANG = 8,    /* an acquire never answered, or answered late */
    S_ORPHAN = 16, /* a lock node kept past the drain, unsaid */
    S_CRASH = 32,  /* a worker ends badly */
    S_ALL = 63
};

/* How late past its timeout an acquire may be answered (a loaded
 * machine's loop turns); a try-lock's timeout is the session's. */
#define SLACK_MS 3000

/* handle: the slot (lock handle) of the worker, -1 for none; lock: its
 * path (L_*). By type:
 *   M_ROLE     arg recipe, aux the unit's first slot, token the kind
 *   M_WAIT     aux the acquire's time limit in ms, -1 none
 *   M_ENTER    arg the kind granted (readers, leases share), aux the
 *              handle's hold count, or -1 - its state when that is 0
 *              (-1: the hold has ended already, its LOST to come)
 *   M_REENTER  arg the kind (RESTORED after SUSPENDED)
 *   M_EXIT     arg EXIT_*
 *   M_FAILED   arg the status
 *   M_DEPTH    a reentrant hold's count moved by aux (0: the hold ended,
 *              count 0), arg the count the library reports (as M_ENTER's
 *              aux when aux is not 0)
 *   M_GSENT    a guarded write number aux (per worker) sent, with token
 *   M_GDONE    its answer: arg the status
 *   M_RECORD   one write found in the record, in the server's order:
 *              client the writer (worker), arg its slot, aux its number
 *   M_ENDED    the library says the hold is over (zkl_lock_is_held())
 *              while its LOST is still on its way
 *   M_EXPIRED  arg the session; M_DRAINED arg handles stuck; M_COUNT
 *              arg lock nodes left (-1: could not count) */
struct msg {
    int32_t type, worker, handle, lock, arg, client;
    uint64_t token;
    uint64_t seq; /* place in the one order of all events */
    /* when sent (CLOCK_MONOTONIC is one clock for all processes): how
     * long an acquire took must not depend on the checker's pace */
    uint64_t ms;
    int64_t aux;
};

/* Every event, from any worker or the checker, takes the next number
 * from this counter (shared memory) just before it is sent. Each worker
 * has its own socket, so the checker may read an ENTER before the EXIT
 * that came first on another socket (when it was busy, say); it handles
 * events in number order instead, waiting for a missing one. */
extern _Atomic uint64_t *next_seq;

extern struct soak_cfg {
    const char *hosts, *server_dir, *zkserver;
    const char *netns; /* --netns DIR: the namespaced cluster (soak-net.c) */
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

/* The proxies' faults, then (--netns) the links' (soak-net.c). */
enum { F_CUT, F_LOSE, F_DELAY, F_SHORT_STALL, F_EXPIRING_STALL, F_FREEZE,
       F_SERVER_RESTART, F_NODE_RESTART, F_NET_CUT, F_NET_ONE_WAY,
       F_NET_FROM_SERVER, F_NET_LOSSY, F_NET_FOLLOWER, F_NET_MINORITY,
       F_NET_LEADER, F_NET_PEER_LOSSY, F_KINDS };
extern const char *const fault_key[F_KINDS];

/* SRV_PARTED: a fault on the servers' links is under way. */
enum { SRV_UP, SRV_KILLING, SRV_DOWN, SRV_STARTING, SRV_PARTED };

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
        int used, recipe, unit, client;
        int lock, inside, waiting;
        int kind;          /* zkl_lock_kind_t: the role's, then ENTER's */
        int depth;         /* a reentrant hold's count */
        int owed;          /* ended by the library's word: LOST to come */
        int tokenless;     /* granted with no token: its LOST to come */
        uint64_t token, wait_since;
        int64_t wait_limit;
        unsigned wait_freezes;            /* the count when it waited */
        unsigned freeze_mark, stall_mark; /* the counts when it entered */
    } h[MAX_HANDLES];
    struct ls {
        int latest; /* handle of the latest grant, -1 none */
        uint64_t latest_token, max_accepted, last_grant_ms;
        uint64_t max_applied; /* highest token in the record so far */
    } l[LOCKS];
    uint64_t start, end, server_ok_since, last_restart;
    int server, phase, drained, counted; /* server: SRV_* */
    int node;                  /* the ensemble node being restarted */
    pid_t server_cmd;
    struct event *fault_timer, *check_timer, *thaw_timer, *start_timer;
    long grants, faults, by_kind[F_KINDS], overlaps, explained,
        unexplained, accepted, stale_refused, stale_accepted, regressions,
        late_news,
        hangs, orphans, expiries, lost, crashes, writes, stalled_overlaps,
        lost_late, leader_restarts, missing,
        read_grants, shared_reads, /* the read/write lock's readers */
        lease_grants, leases_beside; /* the semaphore's leases */
    /* units and grants per recipe, and what shows each one's own
     * behaviour ran */
    long roster[RECIPES], by_recipe[RECIPES], inner_grants, downgrades,
        g_sent, g_ok, g_records, late, ended_early, told_after_end,
        tokenless_not_lost;
    /* one figure per promise; the overlaps among them add up to
     * unexplained */
    long f_mutex, f_reent, f_rw, f_leases, f_leaders, f_sets,
        g_unlocked, g_reordered, g_refused, g_lost, g_dup;
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

/* soak-net.c */
int net_open(void);
int net_enter(int worker);
int net_leader(void);
int net_inject(int kind, int worker, uint64_t now);
int net_server_kind(void);
int net_busy(void);

#endif
