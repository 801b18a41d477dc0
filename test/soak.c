/* zkl-soak: the safety checker.
 *
 * Several worker processes, each with two sessions (each through a
 * fault proxy of its own) and three lock handles per session, contend on
 * a few locks for a given time while the checker injects faults at
 * random: connection cuts, lost replies, delays, short stalls, stalls
 * past the session timeout, a worker frozen with SIGSTOP past its
 * session timeout, and (given the server's directory) server kills and
 * restarts.
 *
 * Given an ensemble (several hosts; --server-dir is then the directory
 * `zkserver.sh ensemble` made, with its nodes in DIR/n1..DIR/nN), each
 * session has one proxy per node, so it can move to another node, and
 * the server fault becomes a node kill and restart: the leader and a
 * follower in turn, one node at a time, so a quorum always stands and
 * locks must keep being granted through every failover.
 *
 * The checker is also the guarded record. A worker tells it when one of
 * its handles enters the critical section (ACQUIRED, or RESTORED after
 * SUSPENDED) and leaves it (release, SUSPENDED, LOST): the API's contract
 * is that a holder stops touching the resource at SUSPENDED unless the
 * resource checks fencing tokens. While zkl_lock_is_held() says so
 * (suspended included) a holder also writes to the record with its
 * token; entering is such a write too. The record refuses a token lower
 * than the highest it accepted.
 *
 * Counted: grants; faults; overlaps (a handle enters while another is
 * inside), split into those explained by an injected loss of the older
 * holder's session (a stall past the timeout on its connection, or its
 * process frozen, after it entered) and the rest, with the stall ones
 * also counted apart (a running holder should have left at SUSPENDED);
 * writes accepted from a holder that is not the latest grantee
 * (stale_writes_accepted) and stale writes refused; grants whose token
 * is not above the previous grant's (token_regressions); hangs (a lock
 * with a waiter for 4 session timeouts + 10 s and no grant, while the
 * server was up and nothing frozen); and, once every worker has let go
 * of everything with its sessions still open, lock nodes left on the
 * server (orphans).
 *
 *   zkl-soak --hosts 127.0.0.1:PORT[,127.0.0.1:PORT...]
 *            [--server-dir DIR --zkserver SCRIPT]
 *            [--minutes M] [--workers N] [--session-ms MS]
 *            [--fault-ms MEAN] [--seed S] [--sabotage 1]
 *            [--checker-lag MS]
 *
 * Prints one JSON line; exits 0 only when the safety figures are zero and
 * there were grants and faults. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "faultproxy.h"
#include "zklock.h"
#include "zklock_libevent.h"

#define MAX_WORKERS 16
#define MAX_NODES 7
#define CLIENTS 2          /* sessions per worker */
#define HANDLES 3          /* lock handles per session */
#define LOCKS 3
#define PER_WORKER (CLIENTS * HANDLES)
#define MAX_HANDLES (MAX_WORKERS * PER_WORKER)

/* worker -> checker; the checker's own faults that explain overlaps go
 * into the same stream (M_FROZE, M_STALLED) */
enum { M_WAIT = 1, M_ENTER, M_REENTER, M_EXIT, M_WRITE, M_FAILED,
       M_EXPIRED, M_DRAINED, M_COUNT, M_FROZE, M_STALLED };
/* checker -> worker */
enum { C_CUT = 1, C_LOSE, C_DELAY, C_STALL, C_DRAIN, C_COUNT, C_QUIT };
enum { EXIT_RELEASE = 1, EXIT_SUSPENDED, EXIT_LOST };

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
static _Atomic uint64_t *next_seq;

static struct {
    const char *hosts, *server_dir, *zkserver;
    double minutes;
    int workers, session_ms, fault_ms, sabotage, lag_ms;
    unsigned seed;
    char root[128];
    int nodes; /* more than one: an ensemble */
    uint16_t port[MAX_NODES];
} cfg = {NULL, NULL, NULL, 1.0, 4, 3000, 250, 0, 0, 0, "", 0, {0}};

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint64_t rng_state;

static unsigned rnd(unsigned n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return n ? (unsigned)(rng_state % n) : 0;
}

static struct timeval tv_ms(long ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    return tv;
}

static void lock_path(char *buf, size_t size, int k)
{
    snprintf(buf, size, "%s/lock-%d", cfg.root, k);
}

/* ================================================================ */
/* Worker                                                            */
/* ================================================================ */

struct handle;

static struct worker {
    int id, fd, draining, count_left, count_sum, count_err;
    struct event_base *base;
    fp_t *fp[CLIENTS][MAX_NODES]; /* a session's proxy to each node */
    zkl_client_t *c[CLIENTS];
    struct event *cmd_ev, *drain_timer, *undelay[CLIENTS];
    uint64_t drain_deadline;
} W;

static struct handle {
    int id, client, lock, inside, hold_ticks;
    uint64_t token;
    zkl_lock_t *lk;
    struct event *tick;
} H[PER_WORKER];

static void send_msg(int type, int handle, int lock, int arg, uint64_t tok)
{
    struct msg m = {type, W.id, handle, lock, arg,
                    handle >= 0 ? H[handle].client : 0, tok,
                    atomic_fetch_add(next_seq, 1)};

    while (send(W.fd, &m, sizeof m, 0) < 0 && errno == EINTR)
        ;
}

static void arm_tick(struct handle *h, long ms)
{
    struct timeval tv = tv_ms(ms);

    evtimer_add(h->tick, &tv);
}

static void leave(struct handle *h, int why)
{
    if (h->inside) {
        h->inside = 0;
        send_msg(M_EXIT, h->id, h->lock, why, h->token);
    }
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct handle *h = arg;

    (void)fd;
    (void)what;
    if (W.draining)
        return;
    switch (zkl_lock_state(h->lk)) {
    case ZKL_STATE_IDLE: {
        /* Mostly wait forever; sometimes with a timeout, sometimes a
         * try-lock, so those paths meet the faults too. */
        unsigned r = rnd(10);
        long t = r < 7 ? -1 : r < 9 ? 200 + (long)rnd(3000) : 0;

        if (zkl_lock_acquire(h->lk, t) == ZKL_OK)
            send_msg(M_WAIT, h->id, h->lock, 0, 0);
        else
            arm_tick(h, 50);
        break;
    }
    case ZKL_STATE_HELD:
        /* The hold is counted in ticks, not wall time: a process frozen
         * mid-hold goes on as if nothing happened when it thaws, as a
         * real one would after a long pause. */
        if (h->hold_ticks-- <= 0) {
            leave(h, EXIT_RELEASE);
            zkl_lock_release(h->lk);
            break;
        }
        send_msg(M_WRITE, h->id, h->lock, 0, h->token);
        arm_tick(h, 5);
        break;
    default:
        break;
    }
}

static void on_lock(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                    void *arg)
{
    struct handle *h = arg;

    (void)lk;
    switch (ev) {
    case ZKL_LOCK_ACQUIRED:
        zkl_lock_token(h->lk, &h->token);
        h->inside = 1;
        /* Mostly short holds; some long enough for faults to land on
         * holders. */
        h->hold_ticks = (int)(rnd(8) == 0 ? 60 + rnd(400) : rnd(6));
        send_msg(M_ENTER, h->id, h->lock, 0, h->token);
        arm_tick(h, 5);
        break;
    case ZKL_LOCK_FAILED:
        send_msg(M_FAILED, h->id, h->lock, status, 0);
        if (cfg.sabotage && status == ZKL_ETIMEDOUT) {
            /* Proves the checker can fail: act as if the timed-out
             * acquire had succeeded, with a made-up token. */
            send_msg(M_ENTER, h->id, h->lock, 0, 1);
            send_msg(M_EXIT, h->id, h->lock, EXIT_RELEASE, 1);
        }
        arm_tick(h, (long)rnd(20));
        break;
    case ZKL_LOCK_SUSPENDED:
        leave(h, EXIT_SUSPENDED);
        break;
    case ZKL_LOCK_RESTORED:
        if (!W.draining) {
            h->inside = 1;
            send_msg(M_REENTER, h->id, h->lock, 0, h->token);
        }
        break;
    case ZKL_LOCK_LOST:
        h->inside = 0;
        send_msg(M_EXIT, h->id, h->lock, EXIT_LOST, h->token);
        arm_tick(h, (long)rnd(20));
        break;
    case ZKL_LOCK_RELEASED:
        arm_tick(h, (long)rnd(20));
        break;
    }
}

static void on_conn(zkl_client_t *c, zkl_conn_event_t ev, void *arg)
{
    (void)c;
    if (ev == ZKL_CONN_EXPIRED)
        send_msg(M_EXPIRED, -1, 0, (int)(intptr_t)arg, 0);
}

static int all_idle(void)
{
    int i;

    for (i = 0; i < PER_WORKER; i++)
        if (zkl_lock_state(H[i].lk) != ZKL_STATE_IDLE)
            return 0;
    for (i = 0; i < CLIENTS; i++)
        if (zkl_client_pending(W.c[i]) != 0)
            return 0;
    return 1;
}

static void drain_check(evutil_socket_t fd, short what, void *arg)
{
    struct timeval tv = tv_ms(50);
    int i, stuck = 0;

    (void)fd;
    (void)what;
    (void)arg;
    if (!all_idle() && now_ms() < W.drain_deadline) {
        for (i = 0; i < PER_WORKER; i++) /* release what came since */
            if (zkl_lock_state(H[i].lk) == ZKL_STATE_HELD) {
                leave(&H[i], EXIT_RELEASE);
                zkl_lock_release(H[i].lk);
            }
        evtimer_add(W.drain_timer, &tv);
        return;
    }
    for (i = 0; i < PER_WORKER; i++)
        stuck += zkl_lock_state(H[i].lk) != ZKL_STATE_IDLE;
    for (i = 0; i < CLIENTS; i++)
        stuck += (int)zkl_client_pending(W.c[i]);
    send_msg(M_DRAINED, -1, 0, stuck, 0);
}

static void count_done(zkl_client_t *c, int status, const char *const *names,
                       size_t n, void *arg)
{
    (void)c;
    (void)names;
    (void)arg;
    W.count_err |= status != ZKL_OK;
    W.count_sum += (int)n;
    if (--W.count_left == 0)
        send_msg(M_COUNT, -1, 0, W.count_err ? -1 : W.count_sum, 0);
}

/* Faults on a session act on its proxies to every node, so that it
 * cannot escape a stall by moving to another node; a lost reply is aimed
 * at the node it is connected to (at all of them if it is between
 * connections, where the first reconnection takes it). */
static void session_fault(int k, int type, int ms)
{
    int j, open = 0;

    for (j = 0; j < cfg.nodes; j++)
        open += fp_open(W.fp[k][j]) > 0;
    for (j = 0; j < cfg.nodes; j++) {
        fp_t *fp = W.fp[k][j];

        switch (type) {
        case C_CUT:
            fp_cut(fp);
            break;
        case C_LOSE:
            if (open == 0 || fp_open(fp) > 0)
                fp_lose_next_reply(fp, ms);
            break;
        case C_DELAY:
            fp_latency(fp, ms);
            break;
        case C_STALL:
            fp_stall_for(fp, ms);
            break;
        }
    }
}

static void undelay(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    session_fault((int)(intptr_t)arg, C_DELAY, 0);
}

static void on_cmd(evutil_socket_t fd, short what, void *arg)
{
    struct msg m;
    struct timeval tv;
    char p[256];
    int i;
    ssize_t r;

    (void)what;
    (void)arg;
    while ((r = recv(fd, &m, sizeof m, MSG_DONTWAIT)) == sizeof m) {
        int k = m.client % CLIENTS;

        switch (m.type) {
        case C_CUT:
        case C_STALL:
            session_fault(k, m.type, m.arg);
            break;
        case C_LOSE:
            session_fault(k, C_LOSE, 100);
            break;
        case C_DELAY:
            session_fault(k, C_DELAY, m.arg);
            tv = tv_ms(1500);
            evtimer_add(W.undelay[k], &tv);
            break;
        case C_DRAIN:
            W.draining = 1;
            W.drain_deadline = now_ms() + 30000;
            for (i = 0; i < PER_WORKER; i++) {
                evtimer_del(H[i].tick);
                if (zkl_lock_state(H[i].lk) == ZKL_STATE_HELD) {
                    leave(&H[i], EXIT_RELEASE);
                    zkl_lock_release(H[i].lk);
                } else {
                    zkl_lock_cancel(H[i].lk);
                }
            }
            drain_check(-1, 0, NULL);
            break;
        case C_COUNT:
            W.count_left = LOCKS;
            W.count_sum = 0;
            W.count_err = 0;
            for (i = 0; i < LOCKS; i++) {
                lock_path(p, sizeof p, i);
                if (zkl_contenders(W.c[0], p, count_done, NULL) != ZKL_OK)
                    count_done(W.c[0], ZKL_EZK, NULL, 0, NULL);
            }
            break;
        case C_QUIT:
            event_base_loopbreak(W.base);
            return;
        }
    }
    if (r == 0)
        event_base_loopbreak(W.base); /* the checker is gone */
}

static int worker_main(int id, int fd)
{
    zkl_options_t *o;
    char p[256], hosts[MAX_NODES * 24];
    int i, j, k;

    W.id = id;
    W.fd = fd;
    rng_state = (cfg.seed + 1) * 0x9E3779B97F4A7C15ull + (uint64_t)id * 7919;
    W.base = event_base_new();
    for (k = 0; k < CLIENTS; k++) {
        hosts[0] = '\0';
        for (j = 0; j < cfg.nodes; j++) {
            if ((W.fp[k][j] = fp_new(W.base, cfg.port[j])) == NULL)
                return 1;
            if (j > 0)
                strcat(hosts, ",");
            strcat(hosts, fp_hosts(W.fp[k][j]));
        }
        W.undelay[k] = evtimer_new(W.base, undelay, (void *)(intptr_t)k);
        if (zkl_options_new(&o) != ZKL_OK)
            return 1;
        zkl_options_set_servers(o, hosts);
        zkl_options_set_session_timeout(o, cfg.session_ms);
        zkl_options_set_conn_cb(o, on_conn, (void *)(intptr_t)k);
        if (zkl_client_new(&W.c[k], o) != ZKL_OK ||
            zkl_libevent_attach(W.c[k], W.base) != ZKL_OK)
            return 1;
        zkl_options_free(o);
    }
    for (i = 0; i < PER_WORKER; i++) {
        struct handle *h = &H[i];

        h->id = i;
        h->client = i / HANDLES;
        h->lock = (id + i) % LOCKS;
        lock_path(p, sizeof p, h->lock);
        h->tick = evtimer_new(W.base, on_tick, h);
        if (zkl_lock_new(&h->lk, W.c[h->client], p, on_lock, h) != ZKL_OK)
            return 1;
        arm_tick(h, (long)rnd(100));
    }
    W.drain_timer = evtimer_new(W.base, drain_check, NULL);
    W.cmd_ev = event_new(W.base, fd, EV_READ | EV_PERSIST, on_cmd, NULL);
    event_add(W.cmd_ev, NULL);
    event_base_dispatch(W.base);

    for (i = 0; i < PER_WORKER; i++) {
        zkl_lock_free(H[i].lk);
        event_free(H[i].tick);
    }
    for (k = 0; k < CLIENTS; k++) {
        zkl_client_free(W.c[k]);
        for (j = 0; j < cfg.nodes; j++)
            fp_free(W.fp[k][j]);
        event_free(W.undelay[k]);
    }
    event_free(W.cmd_ev);
    event_free(W.drain_timer);
    event_base_free(W.base);
    close(fd);
    return 0;
}

/* ================================================================ */
/* Checker                                                           */
/* ================================================================ */

enum { F_CUT, F_LOSE, F_DELAY, F_SHORT_STALL, F_EXPIRING_STALL, F_FREEZE,
       F_SERVER_RESTART, F_NODE_RESTART, F_KINDS };
static const char *const fault_key[F_KINDS] = {
    "cut", "lost_reply", "delay", "short_stall", "stall_past_timeout",
    "sigstop_past_timeout", "server_restart", "node_restart"};

static struct {
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
        lost_late, leader_restarts, missing;
} K;

/* Events waiting for their turn (see next_seq), by number. A frozen
 * worker may hold a number for the length of its freeze; the ring is far
 * larger than what the others send meanwhile. */
#define RING (1u << 16)
#define GAP_MS 30000u /* a number missing this long was lost (a crash) */
static struct {
    struct msg m[RING];
    unsigned char have[RING];
    uint64_t next, end; /* next to handle; one past the highest here */
    uint64_t gap_since;
} R;

static void note(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "soak %.1fs: ", (double)(now_ms() - K.start) / 1000.0);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static int gh(const struct msg *m)
{
    return m->worker * PER_WORKER + m->handle;
}

static void record_write(int g, int lock, uint64_t tok)
{
    struct ls *l = &K.l[lock];

    K.writes++;
    if (tok < l->max_accepted) {
        K.stale_refused++;
        return;
    }
    l->max_accepted = tok;
    K.accepted++;
    if (g != l->latest || tok != l->latest_token) {
        K.stale_accepted++;
        note("stale write accepted: handle %d token %llu, latest grant "
             "handle %d token %llu", g, (unsigned long long)tok, l->latest,
             (unsigned long long)l->latest_token);
    }
}

static void enter(int g, const struct msg *m)
{
    struct hs *h = &K.h[g];
    int o, lock = m->lock;

    for (o = 0; o < cfg.workers * PER_WORKER; o++) {
        struct hs *x = &K.h[o];
        int xw = o / PER_WORKER, xc = (o % PER_WORKER) / HANDLES;

        if (o == g || !x->inside || x->lock != lock)
            continue;
        K.overlaps++;
        if (K.w[xw].freezes > x->freeze_mark) {
            K.explained++;
        } else if (K.w[xw].stalls[xc] > x->stall_mark) {
            /* The older holder ran through it, so it should have left at
             * SUSPENDED before the server could expire it: allowed by
             * the definition, but counted on its own. */
            K.explained++;
            K.stalled_overlaps++;
            note("overlap on lock %d after a stall of handle %d's "
                 "connection", lock, o);
        } else {
            K.unexplained++;
            note("UNEXPLAINED overlap on lock %d: handle %d (token %llu) "
                 "entered while handle %d (token %llu) was inside", lock, g,
                 (unsigned long long)m->token, o,
                 (unsigned long long)x->token);
        }
    }
    h->inside = 1;
    h->token = m->token;
    h->freeze_mark = K.w[m->worker].freezes;
    h->stall_mark = K.w[m->worker].stalls[m->client];
}

static void on_msg(const struct msg *m)
{
    int g = m->handle >= 0 ? gh(m) : -1;
    struct ls *l = &K.l[m->lock % LOCKS];

    if (g >= 0)
        K.h[g].lock = m->lock;
    if (getenv("ZKL_SOAK_TRACE") != NULL && m->type != M_WRITE)
        note("w%d h%d lock %d: msg %d arg %d token %llu", m->worker,
             m->handle, m->lock, m->type, m->arg,
             (unsigned long long)m->token);

    switch (m->type) {
    case M_WAIT:
        K.h[g].waiting = 1;
        K.h[g].wait_since = now_ms();
        break;
    case M_ENTER:
        K.grants++;
        K.h[g].waiting = 0;
        if (m->token <= l->latest_token) {
            K.regressions++;
            note("token regression on lock %d: %llu after %llu", m->lock,
                 (unsigned long long)m->token,
                 (unsigned long long)l->latest_token);
        }
        l->latest = g;
        l->latest_token = m->token;
        l->last_grant_ms = now_ms();
        enter(g, m);
        record_write(g, m->lock, m->token);
        break;
    case M_REENTER:
        enter(g, m);
        break;
    case M_EXIT:
        K.h[g].inside = 0;
        if (m->arg == EXIT_LOST) {
            K.lost++;
            /* Told after the next grant, though never frozen: the
             * margin of the LOST deadline was not enough. Timing, so
             * reported, not judged. */
            if (l->latest_token > m->token &&
                K.w[m->worker].freezes == K.h[g].freeze_mark)
                K.lost_late++;
        }
        break;
    case M_WRITE:
        record_write(g, m->lock, m->token);
        break;
    case M_FAILED:
        K.h[g].waiting = 0;
        break;
    case M_EXPIRED:
        K.expiries++;
        break;
    case M_DRAINED:
        K.w[m->worker].drained = 1;
        K.w[m->worker].stuck = m->arg;
        K.drained++;
        break;
    case M_COUNT:
        K.orphans = m->arg;
        K.counted = 1;
        break;
    case M_FROZE:
        K.w[m->worker].freezes++;
        break;
    case M_STALLED:
        K.w[m->worker].stalls[m->client]++;
        break;
    }
}

/* Handles the events that are next in order; with force, gives up on
 * missing ones at once (the run is over, or the ring is full). */
static void run_ring(int force)
{
    uint64_t now = now_ms();

    while (R.next < R.end) {
        uint32_t i = (uint32_t)(R.next % RING);

        if (R.have[i]) {
            R.have[i] = 0;
            R.gap_since = 0;
            R.next++;
            on_msg(&R.m[i]);
            continue;
        }
        if (!force) {
            if (R.gap_since == 0)
                R.gap_since = now;
            if (now - R.gap_since < GAP_MS)
                return;
        }
        K.missing++;
        note("event %llu never came", (unsigned long long)R.next);
        R.gap_since = 0;
        R.next++;
    }
}

static void deliver(const struct msg *m)
{
    if (m->seq < R.next) { /* given up on already */
        K.missing++;
        note("event %llu came too late", (unsigned long long)m->seq);
        return;
    }
    if (m->seq - R.next >= RING)
        run_ring(1);
    R.m[m->seq % RING] = *m;
    R.have[m->seq % RING] = 1;
    if (m->seq >= R.end)
        R.end = m->seq + 1;
    run_ring(0);
}

/* A fault of the checker's own that explains overlaps, in order with the
 * workers' events. */
static void post(int type, int wi, int client)
{
    struct msg m = {type, wi, -1, 0, 0, client, 0,
                    atomic_fetch_add(next_seq, 1)};

    deliver(&m);
}

static void on_worker(evutil_socket_t fd, short what, void *arg)
{
    struct wk *w = arg;
    struct msg m;
    ssize_t r;

    (void)what;
    while ((r = recv(fd, &m, sizeof m, MSG_DONTWAIT)) == sizeof m)
        deliver(&m);
    if (r == 0 && w->alive) {
        w->alive = 0;
        event_del(w->ev);
    }
}

static void command(int wi, int type, int client, int arg)
{
    struct msg m = {type, wi, -1, 0, arg, client, 0, 0};

    if (K.w[wi].alive)
        send(K.w[wi].fd, &m, sizeof m, MSG_DONTWAIT);
}

/* zkserver.sh on the server, or on ensemble node K.node. */
static pid_t run_zkserver(const char *what)
{
    char dir[4096];
    pid_t pid;

    if (cfg.nodes > 1)
        snprintf(dir, sizeof dir, "%s/n%d", cfg.server_dir, K.node + 1);
    else
        snprintf(dir, sizeof dir, "%s", cfg.server_dir);
    if ((pid = fork()) == 0) {
        int null = open("/dev/null", O_WRONLY);

        dup2(null, 1);
        execlp("bash", "bash", cfg.zkserver, what, dir, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Whether ensemble node j (0-based) leads, as `zkserver.sh mode` says. */
static int is_leader(int j)
{
    char line[4096], out[32] = "";
    FILE *f;

    snprintf(line, sizeof line, "bash '%s' mode '%s/n%d'", cfg.zkserver,
             cfg.server_dir, j + 1);
    if ((f = popen(line, "r")) == NULL)
        return 0;
    if (fgets(out, sizeof out, f) == NULL)
        out[0] = '\0';
    pclose(f);
    return strncmp(out, "leader", 6) == 0;
}

/* The node to restart: the leader and another node in turn, so that even
 * a short run kills a leader. */
static int pick_node(const char **role)
{
    int j, leader = -1;

    for (j = 0; j < cfg.nodes && leader < 0; j++)
        if (is_leader(j))
            leader = j;
    if (leader >= 0 && K.by_kind[F_NODE_RESTART] % 2 == 0) {
        K.leader_restarts++;
        *role = "the leader";
        return leader;
    }
    *role = leader >= 0 ? "a follower" : "a node (no leader seen)";
    j = (int)rnd((unsigned)cfg.nodes - 1);
    return leader >= 0 && j >= leader ? j + 1 : j;
}

enum { SRV_UP, SRV_KILLING, SRV_DOWN, SRV_STARTING };

static void server_start(evutil_socket_t fd, short what, void *arg)
{
    struct timeval tv = tv_ms(100);

    (void)fd;
    (void)what;
    (void)arg;
    if (K.server == SRV_KILLING) { /* the kill is not done yet */
        evtimer_add(K.start_timer, &tv);
        return;
    }
    K.server = SRV_STARTING;
    K.server_cmd = run_zkserver("start");
}

/* Reaps the zkserver.sh run under way, and moves the server's state on. */
static void server_reap(uint64_t now)
{
    int status;

    if (K.server_cmd <= 0 || waitpid(K.server_cmd, &status, WNOHANG) <= 0)
        return;
    K.server_cmd = 0;
    if (K.server == SRV_KILLING) {
        K.server = SRV_DOWN;
    } else if (K.server == SRV_STARTING) {
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
            K.server = SRV_UP;
            K.server_ok_since = now;
        } else {
            note("server did not restart; trying again");
            K.server_cmd = run_zkserver("start");
        }
    }
}

static void thaw(evutil_socket_t fd, short what, void *arg)
{
    uint64_t now = now_ms(), next = UINT64_MAX;
    struct timeval tv;
    int i;

    (void)fd;
    (void)what;
    (void)arg;
    for (i = 0; i < cfg.workers; i++) {
        struct wk *w = &K.w[i];

        if (w->frozen_until == 0)
            continue;
        if (now >= w->frozen_until) {
            kill(w->pid, SIGCONT);
            w->frozen_until = 0;
            w->thawed_at = now;
        } else if (w->frozen_until < next) {
            next = w->frozen_until;
        }
    }
    if (next != UINT64_MAX) {
        tv = tv_ms((long)(next - now));
        evtimer_add(K.thaw_timer, &tv);
    }
}

/* One server fault at a time, 20 s apart at least; in an ensemble, where
 * they are the point, one every 10 s or so (one node down at a time, so
 * a quorum stands, and it is back before the next goes). */
static int can_restart(uint64_t now)
{
    return cfg.server_dir != NULL && K.server == SRV_UP &&
           now - K.last_restart > (cfg.nodes > 1 ? 10000u : 20000u);
}

/* A session with a handle inside, if there is one: faults that cost a
 * session mostly aim at holders, where they test exclusion. */
static void pick_holder(int *wi, int *c)
{
    int g, n = cfg.workers * PER_WORKER, start = (int)rnd((unsigned)n);

    for (g = 0; g < n; g++) {
        int x = (start + g) % n, w = x / PER_WORKER;

        if (K.h[x].inside && K.w[w].alive && K.w[w].frozen_until == 0) {
            *wi = w;
            *c = (x % PER_WORKER) / HANDLES;
            return;
        }
    }
}

static void inject(void)
{
    uint64_t now = now_ms();
    int wi = (int)rnd((unsigned)cfg.workers), c = (int)rnd(CLIENTS), kind;
    unsigned r = rnd(100);
    struct timeval tv;
    const char *role;

    kind = r < 25   ? F_CUT
           : r < 40 ? F_LOSE
           : r < 55 ? F_DELAY
           : r < 65 ? F_SHORT_STALL
           : r < 80 ? F_EXPIRING_STALL
           : r < 92 ? F_FREEZE
                    : F_SERVER_RESTART;
    if (cfg.nodes > 1 && can_restart(now))
        kind = F_NODE_RESTART; /* in an ensemble, as soon as one may come */
    else if (kind == F_SERVER_RESTART && !can_restart(now))
        kind = F_CUT;
    if ((kind == F_EXPIRING_STALL || kind == F_FREEZE) && rnd(4) != 0)
        pick_holder(&wi, &c);
    if (!K.w[wi].alive || K.w[wi].frozen_until != 0)
        return; /* a frozen worker takes no further fault */
    switch (kind) {
    case F_CUT:
        command(wi, C_CUT, c, 0);
        break;
    case F_LOSE:
        command(wi, C_LOSE, c, 0);
        break;
    case F_DELAY:
        command(wi, C_DELAY, c, 100 + (int)rnd(300));
        break;
    case F_SHORT_STALL:
        command(wi, C_STALL, c, cfg.session_ms / 3);
        break;
    case F_EXPIRING_STALL:
        post(M_STALLED, wi, c);
        command(wi, C_STALL, c, cfg.session_ms + 1500);
        break;
    case F_FREEZE:
        post(M_FROZE, wi, c);
        kill(K.w[wi].pid, SIGSTOP);

        K.w[wi].frozen_until = now + (uint64_t)cfg.session_ms + 1500;
        thaw(-1, 0, NULL);
        break;
    case F_NODE_RESTART:
        K.node = pick_node(&role);
        note("killing node %d, %s", K.node + 1, role);
        /* fall through */
    case F_SERVER_RESTART:
        K.server = SRV_KILLING;
        K.last_restart = now;
        K.server_cmd = run_zkserver("kill");
        tv = tv_ms(500 + (long)rnd(2000));
        evtimer_add(K.start_timer, &tv);
        break;
    }
    K.faults++;
    K.by_kind[kind]++;
}

static void on_fault_timer(evutil_socket_t fd, short what, void *arg)
{
    struct timeval tv;

    (void)fd;
    (void)what;
    (void)arg;
    if (K.phase != 0)
        return;
    inject();
    tv = tv_ms(cfg.fault_ms / 2 + (long)rnd((unsigned)cfg.fault_ms));
    evtimer_add(K.fault_timer, &tv);
}

/* A lock is hung when a waiter has waited HANG ms, no grant came in that
 * time, and nothing in that time excuses it (server down, a frozen
 * process). */
static void check_hangs(uint64_t now)
{
    uint64_t hang = 4u * (uint64_t)cfg.session_ms + 10000u;
    int k, g;

    /* An ensemble keeps a quorum through its one node fault at a time,
     * so nothing there excuses a hang. */
    if (cfg.nodes == 1 &&
        (K.server != SRV_UP || now - K.server_ok_since < hang))
        return;
    for (k = 0; k < LOCKS; k++) {
        int stuck = -1, inside = 0;

        if (now - K.l[k].last_grant_ms < hang)
            continue;
        for (g = 0; g < cfg.workers * PER_WORKER; g++) {
            struct wk *w = &K.w[g / PER_WORKER];

            if (K.h[g].lock != k)
                continue;
            if (w->frozen_until != 0 || now - w->thawed_at < hang)
                goto excused;
            inside |= K.h[g].inside;
            if (K.h[g].waiting == 1 && now - K.h[g].wait_since > hang)
                stuck = g;
        }
        if (stuck >= 0 && !inside) {
            K.hangs++;
            K.l[k].last_grant_ms = now; /* once per window */
            note("HANG on lock %d: handle %d waiting %llu ms, no grant",
                 k, stuck,
                 (unsigned long long)(now - K.h[stuck].wait_since));
        }
    excused:;
    }
}

static void on_check(evutil_socket_t fd, short what, void *arg)
{
    struct timeval tv = tv_ms(200);
    uint64_t now = now_ms();
    int i, status;

    (void)fd;
    (void)what;
    (void)arg;
    run_ring(0); /* a missing event times out even when all is quiet */
    if (cfg.lag_ms > 0) /* --checker-lag: a busy checker */
        usleep((useconds_t)cfg.lag_ms * 1000u);
    server_reap(now);
    for (i = 0; i < cfg.workers; i++) {
        if (K.w[i].pid > 0 && waitpid(K.w[i].pid, &status, WNOHANG) > 0) {
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                K.crashes++;
                note("worker %d died (status %d)", i, status);
            }
            K.w[i].pid = 0;
            K.w[i].alive = 0;
        }
    }
    if (K.phase == 0) {
        check_hangs(now);
        if (now >= K.end) {
            K.phase = 1; /* faults over; let everything heal */
            note("faults stop; healing");
        }
    }
    if (K.phase == 1 && K.server == SRV_UP &&
        !evtimer_pending(K.thaw_timer, NULL) &&
        now >= K.end + 2u * (uint64_t)cfg.session_ms + 2000u) {
        K.phase = 2;
        note("draining");
        for (i = 0; i < cfg.workers; i++)
            command(i, C_DRAIN, 0, 0);
    }
    if (K.phase == 2 && K.drained == cfg.workers) {
        K.phase = 3;
        for (i = 0; i < cfg.workers; i++)
            K.hangs += K.w[i].stuck > 0;
        command(0, C_COUNT, 0, 0);
    }
    if (K.phase == 2 && now >= K.end + 120000u) {
        note("drain timed out");
        K.hangs += cfg.workers - K.drained;
        K.phase = 4;
    }
    if (K.phase == 3 && K.counted)
        K.phase = 4;
    if (K.phase == 4) {
        event_base_loopbreak(K.base);
        return;
    }
    evtimer_add(K.check_timer, &tv);
}

static int usage(void)
{
    fprintf(stderr,
            "usage: zkl-soak --hosts 127.0.0.1:PORT[,...] [--server-dir DIR "
            "--zkserver SCRIPT]\n"
            "                [--minutes M] [--workers N] [--session-ms MS] "
            "[--fault-ms MEAN] [--seed S]\n"
            "                [--sabotage 1: workers enter after a timed-out "
            "acquire, to show the checker catches it]\n"
            "                [--checker-lag MS: the checker sleeps MS every "
            "200 ms, to show its verdict does not hang on its own pace]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *h;
    struct timeval tv;
    int i, bad;

    for (i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];

        if (strcmp(k, "--hosts") == 0)
            cfg.hosts = v;
        else if (strcmp(k, "--server-dir") == 0)
            cfg.server_dir = v;
        else if (strcmp(k, "--zkserver") == 0)
            cfg.zkserver = v;
        else if (strcmp(k, "--minutes") == 0)
            cfg.minutes = atof(v);
        else if (strcmp(k, "--workers") == 0)
            cfg.workers = atoi(v);
        else if (strcmp(k, "--session-ms") == 0)
            cfg.session_ms = atoi(v);
        else if (strcmp(k, "--fault-ms") == 0)
            cfg.fault_ms = atoi(v);
        else if (strcmp(k, "--sabotage") == 0)
            cfg.sabotage = atoi(v);
        else if (strcmp(k, "--checker-lag") == 0)
            cfg.lag_ms = atoi(v);
        else if (strcmp(k, "--seed") == 0)
            cfg.seed = (unsigned)strtoul(v, NULL, 10);
        else
            return usage();
    }
    for (h = cfg.hosts; h != NULL && cfg.nodes < MAX_NODES;) {
        const char *colon = strchr(h, ':');

        if (colon == NULL || (cfg.port[cfg.nodes++] =
                                  (uint16_t)atoi(colon + 1)) == 0)
            return usage();
        h = strchr(colon, ',');
        h = h != NULL ? h + 1 : NULL;
    }
    if (i != argc || cfg.nodes == 0 || h != NULL || cfg.workers < 1 ||
        cfg.workers > MAX_WORKERS || cfg.session_ms < 1000 ||
        cfg.fault_ms < 10 || cfg.minutes <= 0 ||
        (cfg.server_dir != NULL) != (cfg.zkserver != NULL))
        return usage();
    if (cfg.seed == 0)
        cfg.seed = (unsigned)time(NULL);
    snprintf(cfg.root, sizeof cfg.root, "/zkl-soak/%ld-%u", (long)getpid(),
             cfg.seed);
    signal(SIGPIPE, SIG_IGN);
    next_seq = mmap(NULL, sizeof *next_seq, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (next_seq == MAP_FAILED)
        return 1;
    atomic_init(next_seq, 0);

    for (i = 0; i < cfg.workers; i++) {
        int sv[2];
        pid_t pid;

        if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) != 0)
            return 1;
        pid = fork();
        if (pid == 0) {
            int j;

            close(sv[0]);
            for (j = 0; j < i; j++)
                close(K.w[j].fd);
            _exit(worker_main(i, sv[1]));
        }
        close(sv[1]);
        K.w[i].pid = pid;
        K.w[i].fd = sv[0];
        K.w[i].alive = 1;
    }

    rng_state = cfg.seed * 0x2545F4914F6CDD1Dull + 1;
    K.base = event_base_new();
    K.start = now_ms();
    K.end = K.start + (uint64_t)(cfg.minutes * 60000.0);
    K.server_ok_since = K.start;
    for (i = 0; i < LOCKS; i++) {
        K.l[i].latest = -1;
        K.l[i].last_grant_ms = K.start;
    }
    for (i = 0; i < cfg.workers; i++) {
        K.w[i].ev = event_new(K.base, K.w[i].fd, EV_READ | EV_PERSIST,
                              on_worker, &K.w[i]);
        event_add(K.w[i].ev, NULL);
    }
    K.fault_timer = evtimer_new(K.base, on_fault_timer, NULL);
    K.check_timer = evtimer_new(K.base, on_check, NULL);
    K.thaw_timer = evtimer_new(K.base, thaw, NULL);
    K.start_timer = evtimer_new(K.base, server_start, NULL);
    tv = tv_ms(2000); /* first faults once the workers run */
    evtimer_add(K.fault_timer, &tv);
    tv = tv_ms(200);
    evtimer_add(K.check_timer, &tv);
    note("%d workers x %d sessions x %d handles on %d locks, %d server "
         "node(s), session %d ms, a fault every ~%d ms, seed %u, root %s",
         cfg.workers, CLIENTS, HANDLES, LOCKS, cfg.nodes, cfg.session_ms,
         cfg.fault_ms, cfg.seed, cfg.root);
    event_base_dispatch(K.base);

    for (i = 0; i < cfg.workers; i++) {
        int status;

        if (K.w[i].frozen_until != 0)
            kill(K.w[i].pid, SIGCONT);
        command(i, C_QUIT, 0, 0);
        if (K.w[i].pid > 0 && waitpid(K.w[i].pid, &status, 0) > 0 &&
            (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
            K.crashes++;
            note("worker %d ended badly (status %d)", i, status);
        }
        event_free(K.w[i].ev);
        close(K.w[i].fd);
    }
    if (K.server_cmd > 0)
        waitpid(K.server_cmd, NULL, 0);

    printf("{\"minutes\": %.2f, \"workers\": %d, \"sessions\": %d, "
           "\"locks\": %d, \"server_nodes\": %d, \"seed\": %u, "
           "\"grants\": %ld, \"faults\": %ld",
           cfg.minutes, cfg.workers, cfg.workers * CLIENTS, LOCKS, cfg.nodes,
           cfg.seed, K.grants, K.faults);
    for (i = 0; i < F_KINDS; i++)
        printf(", \"faults_%s\": %ld", fault_key[i], K.by_kind[i]);
    printf(", \"leader_restarts\": %ld", K.leader_restarts);
    printf(", \"session_expiries\": %ld, \"holds_lost\": %ld, "
           "\"lost_told_after_next_grant_unfrozen\": %ld, "
           "\"overlaps\": %ld, \"overlaps_explained\": %ld, "
           "\"overlaps_unexplained\": %ld, "
           "\"overlaps_after_stall\": %ld, \"writes\": %ld, "
           "\"writes_accepted\": %ld, \"stale_writes_refused\": %ld, "
           "\"stale_writes_accepted\": %ld, \"token_regressions\": %ld, "
           "\"hangs\": %ld, \"orphans\": %ld, \"worker_crashes\": %ld, "
           "\"events_missing\": %ld}\n",
           K.expiries, K.lost, K.lost_late, K.overlaps, K.explained,
           K.unexplained, K.stalled_overlaps, K.writes, K.accepted,
           K.stale_refused, K.stale_accepted, K.regressions, K.hangs,
           K.orphans, K.crashes, K.missing);
    fflush(stdout);
    event_free(K.fault_timer);
    event_free(K.check_timer);
    event_free(K.thaw_timer);
    event_free(K.start_timer);
    event_base_free(K.base);
    bad = K.unexplained || K.stale_accepted || K.regressions || K.hangs ||
          K.orphans || K.crashes || K.missing || K.grants == 0 ||
          K.faults == 0 || !K.counted;
    return bad ? 1 : 0;
}
