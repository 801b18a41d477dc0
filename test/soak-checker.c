/* zkl-soak's checker: it receives every worker's events, puts them in
 * their one order, judges them, and ends the run with its verdict (one
 * JSON line). It also runs the event loop the fault injector
 * (soak-inject.c) works in, and sends the workers their commands.
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
 * inside, unless both are readers of the read/write lock or it is one
 * of at most SEM_LEASES leases of the semaphore), split into those
 * explained by an injected loss of the older
 * holder's session (a stall past the timeout on its connection, or its
 * process frozen, after it entered) and the rest, with the stall ones
 * also counted apart (a running holder should have left at SUSPENDED);
 * writes accepted from a holder that is not the latest grantee
 * (stale_writes_accepted) and stale writes refused; grants whose token
 * is not above the previous grant's (token_regressions); hangs (a lock
 * with a waiter for 4 session timeouts + 10 s and no grant, while the
 * server was up and nothing frozen); and, once every worker has let go
 * of everything with its sessions still open, lock nodes left on the
 * server (orphans). */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "soak.h"

struct checker K;

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

void note(const char *fmt, ...)
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

/* x's hold may have ended on the server without x knowing: its process
 * was frozen, or its connection stalled, since it entered. */
static int hold_doubtful(int o)
{
    const struct hs *x = &K.h[o];
    int xw = o / PER_WORKER, xc = (o % PER_WORKER) / HANDLES;

    return K.w[xw].freezes > x->freeze_mark ||
           K.w[xw].stalls[xc] > x->stall_mark;
}

/* A lease overlaps only when it makes more than SEM_LEASES inside; it is
 * explained when counting only the holds that cannot have ended on the
 * server keeps it within the limit. */
static void enter_lease(int g, const struct msg *m)
{
    int o, sure = 0, doubtful = 0;

    for (o = 0; o < cfg.workers * PER_WORKER; o++) {
        if (o == g || !K.h[o].inside || K.h[o].lock != m->lock)
            continue;
        if (hold_doubtful(o))
            doubtful++;
        else
            sure++;
    }
    if (sure + doubtful > 0)
        K.leases_beside++;
    if (sure + doubtful + 1 <= SEM_LEASES)
        return;
    K.overlaps++;
    if (sure + 1 <= SEM_LEASES) {
        K.explained++;
        return;
    }
    K.unexplained++;
    note("UNEXPLAINED overlap on lock %d: handle %d (token %llu) entered "
         "as lease %d of %d", m->lock, g, (unsigned long long)m->token,
         sure + 1, SEM_LEASES);
}

static void enter(int g, const struct msg *m)
{
    struct hs *h = &K.h[g];
    int o, lock = m->lock;

    for (o = 0; o < cfg.workers * PER_WORKER && m->arg != ZKL_KIND_LEASE;
         o++) {
        struct hs *x = &K.h[o];
        int xw = o / PER_WORKER, xc = (o % PER_WORKER) / HANDLES;

        if (o == g || !x->inside || x->lock != lock)
            continue;
        if (x->kind == ZKL_KIND_READ && m->arg == ZKL_KIND_READ) {
            K.shared_reads++;
            continue;
        }
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
    if (m->arg == ZKL_KIND_LEASE)
        enter_lease(g, m);
    h->inside = 1;
    h->kind = m->arg;
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
        if (m->arg == ZKL_KIND_READ || m->arg == ZKL_KIND_LEASE) {
            /* Readers (and leases) granted together may report in any
             * order, and do not write: only the exclusion is judged. */
            l->last_grant_ms = now_ms();
            if (m->arg == ZKL_KIND_READ)
                K.read_grants++;
            else
                K.lease_grants++;
            enter(g, m);
            break;
        }
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
void post(int type, int wi, int client)
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

void command(int wi, int type, int client, int arg)
{
    struct msg m = {type, wi, -1, 0, arg, client, 0, 0};

    if (K.w[wi].alive)
        send(K.w[wi].fd, &m, sizeof m, MSG_DONTWAIT);
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

/* The checker's part of the run, once the workers are forked: until the
 * workers have drained and the orphans are counted; then the verdict.
 * Returns the exit status. */
int checker_main(void)
{
    struct timeval tv;
    int i, bad;

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
    printf(", \"read_grants\": %ld, \"reads_beside_reads\": %ld",
           K.read_grants, K.shared_reads);
    printf(", \"lease_grants\": %ld, \"leases_beside_leases\": %ld",
           K.lease_grants, K.leases_beside);
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
