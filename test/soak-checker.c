/* zkl-soak's checker: it receives every worker's events, puts them in
 * their one order, judges them, and ends the run with its verdict (one
 * JSON line). It also runs the event loop the fault injector
 * (soak-inject.c) works in, and sends the workers their commands.
 *
 * The checker is also a fenced resource. A worker tells it when one of
 * its lock handles (slots) enters the critical section (ACQUIRED, or
 * RESTORED after SUSPENDED) and leaves it (release, SUSPENDED, LOST):
 * the API's contract is that a holder stops touching the resource at
 * SUSPENDED unless the resource checks fencing tokens. While
 * zkl_lock_is_held() says so (suspended included) an exclusive holder
 * also writes to the checker's record with its token; entering is such
 * a write too. The record refuses a token lower than the highest it
 * accepted. The guarded record is another, on the server: children
 * that holders of L_GUARD (and sets that include it) create through
 * zkl_lock_write / zkl_multi_write, read back at the end.
 *
 * Each recipe's promise, one figure each (all must be 0):
 *   mutex_overlaps          two holders of a mutex path at once
 *   reentrant_errors        two holders of the reentrant path, or a
 *                           reentrant handle whose hold count is not
 *                           what its acquires and releases made it
 *   writers_beside_readers  a writer beside a reader or a writer on the
 *                           read/write lock (a pair's downgrade, its
 *                           read side entering while its write side
 *                           holds, is the one exception)
 *   leases_over_limit       more than SEM_LEASES lease holders
 *   leaders_at_once         two leaders of the latch
 *   sets_not_held_together  a multi-lock set beside another holder of
 *                           one of its paths, or one of its members not
 *                           held when it said ACQUIRED
 *   guarded_without_lock    a write in the record applied after a later
 *                           holder's (a lower token after a higher one),
 *                           or that no one sent
 *   guarded_reordered       one handle's writes applied out of order
 *   guarded_refused_applied a write answered "nothing written" and found
 *   guarded_lost            a write answered applied and not found
 *   guarded_duplicated      a write found twice
 *   stale_writes_accepted   the checker's record took a write from a
 *                           holder that was not the latest grantee
 *   token_regressions       an exclusive grant whose token is not above
 *                           the previous one on its path, unless it is
 *                           late news (late_news(): counted apart as
 *                           token_late_news; a grant told after its
 *                           hold ended carries no token and is counted
 *                           as grants_told_after_end)
 *   grants_told_after_end_not_lost
 *                           such a grant with no LOST told before the
 *                           handle's next grant or the end of the run
 *   orphans                 lock nodes left once every worker let go
 *   hangs                   a lock with a waiter and no grant for 4
 *                           session timeouts + 10 s while the server was
 *                           up and nothing frozen; an acquire or guarded
 *                           write never answered; a worker that could not
 *                           drain
 *   answers_late            an acquire with a timeout answered more than
 *                           SLACK_MS after it (a try-lock: after a
 *                           session timeout), unless its process was
 *                           frozen meanwhile
 * An overlap is explained, and not counted in those, when the older
 * holder's session met an injected loss after it entered (a stall past
 * the timeout on its connection, or its process frozen); the stall ones
 * are also counted apart (a running holder should have left at
 * SUSPENDED). overlaps_unexplained is the sum of the overlap figures. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* The last events of each slot (writes aside), to show how a broken
 * promise came about. */
#define HIST 16
static struct {
    struct msg m[HIST];
    unsigned n;
} hist[MAX_HANDLES];

static const char *const msg_name[] = {
    "?", "WAIT", "ENTER", "REENTER", "EXIT", "WRITE", "FAILED", "EXPIRED",
    "DRAINED", "COUNT", "FROZE", "STALLED", "ROLE", "ANSWERED", "DEPTH",
    "GSENT", "GDONE", "RECORD", "ENDED"};

static void history(int g)
{
    unsigned i, n = hist[g].n;

    for (i = n > HIST ? n - HIST : 0; i < n; i++) {
        const struct msg *m = &hist[g].m[i % HIST];

        note("  handle %d %.1fs: %s arg %d token %llu aux %lld", g,
             (double)(m->ms - K.start) / 1000.0,
             m->type < (int)(sizeof msg_name / sizeof *msg_name)
                 ? msg_name[m->type]
                 : "?",
             m->arg, (unsigned long long)m->token, (long long)m->aux);
    }
}

/* A grant the library decided before its process was frozen reaches
 * the checker after the thaw; by then the session it was decided in
 * may have expired and the next contender been granted (its LOST
 * follows at once): late news of an old grant, not a new one, and its
 * token is below the latest. Told apart by the process having been
 * frozen since the acquire began and the report coming right after the
 * thaw (the library tells what it decided in the first pass after it).
 * The record refuses that holder's writes (stale_writes_refused). */
#define THAW_NEWS_MS 1000

static int late_news(int g, const struct msg *m)
{
    const struct wk *w = &K.w[m->worker];

    return w->freezes > K.h[g].wait_freezes && w->thawed_at != 0 &&
           m->ms >= w->thawed_at && m->ms - w->thawed_at <= THAW_NEWS_MS;
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
    int xw = o / PER_WORKER;

    return K.w[xw].freezes > x->freeze_mark ||
           K.w[xw].stalls[x->client] > x->stall_mark;
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
    K.f_leases++;
    note("UNEXPLAINED overlap on lock %d: handle %d (token %llu) entered "
         "as lease %d of %d", m->lock, g, (unsigned long long)m->token,
         sure + 1, SEM_LEASES);
}

/* Whose promise an overlap on g's path with o broke: a set's, if either
 * is a set member, else the path's recipe's. */
static long *overlap_figure(int g, int o)
{
    if (K.h[g].recipe == R_SET || K.h[o].recipe == R_SET)
        return &K.f_sets;
    switch (K.h[g].lock) {
    case L_REENT:
        return &K.f_reent;
    case L_RW:
        return &K.f_rw;
    case L_LATCH:
        return &K.f_leaders;
    case L_SEM:
        return &K.f_leases;
    default:
        return &K.f_mutex;
    }
}

static void enter(int g, const struct msg *m)
{
    struct hs *h = &K.h[g];
    int o, lock = h->lock;

    for (o = 0; o < cfg.workers * PER_WORKER && m->arg != ZKL_KIND_LEASE;
         o++) {
        struct hs *x = &K.h[o];
        int xw = o / PER_WORKER;

        if (o == g || !x->inside || x->lock != lock)
            continue;
        if (x->kind == ZKL_KIND_READ && m->arg == ZKL_KIND_READ) {
            K.shared_reads++;
            continue;
        }
        /* a downgrade: the read side takes its own write side's place */
        if (x->unit == h->unit && x->kind == ZKL_KIND_WRITE &&
            m->arg == ZKL_KIND_READ)
            continue;
        K.overlaps++;
        if (K.w[xw].freezes > x->freeze_mark) {
            K.explained++;
        } else if (K.w[xw].stalls[x->client] > x->stall_mark) {
            /* The older holder ran through it, so it should have left at
             * SUSPENDED before the server could expire it: allowed by
             * the definition, but counted on its own. */
            K.explained++;
            K.stalled_overlaps++;
            note("overlap on lock %d after a stall of handle %d's "
                 "connection", lock, o);
        } else {
            K.unexplained++;
            (*overlap_figure(g, o))++;
            note("UNEXPLAINED overlap on lock %d: handle %d (%s, token "
                 "%llu) entered while handle %d (%s, token %llu) was "
                 "inside", lock, g, recipe_key[h->recipe],
                 (unsigned long long)m->token, o, recipe_key[x->recipe],
                 (unsigned long long)x->token);
            if (!cfg.sabotage) {
                history(o);
                history(g);
            }
        }
    }
    if (m->arg == ZKL_KIND_LEASE)
        enter_lease(g, m);
    h->inside = 1;
    h->kind = m->arg;
    h->token = m->token;
    h->freeze_mark = K.w[m->worker].freezes;
    h->stall_mark = K.w[m->worker].stalls[h->client];
}

/* An acquire's answer: in time, unless its process was frozen since it
 * asked (a set waits on its first slot). */
static void answer(int g, const struct msg *m)
{
    int wi = K.h[g].recipe == R_SET ? K.h[g].unit : g;
    struct hs *h = &K.h[wi];

    if (!h->waiting)
        return;
    h->waiting = 0;
    if (h->wait_limit >= 0 &&
        m->ms > h->wait_since + (uint64_t)h->wait_limit + SLACK_MS &&
        K.w[m->worker].freezes == h->wait_freezes) {
        K.late++;
        note("LATE answer: handle %d (%s) answered after %llu ms, its "
             "limit %lld ms", wi, recipe_key[h->recipe],
             (unsigned long long)(m->ms - h->wait_since),
             (long long)h->wait_limit);
    }
}

/* The guarded writes sent, by worker and number, and what became of
 * them. */
#define PENDING 1 /* not answered; every status is 0 or below */
static struct gwrite {
    int sent, slot, status, seen;
    uint64_t token;
} *gws[MAX_WORKERS];
static int64_t gw_len[MAX_WORKERS];
static int64_t last_n[MAX_HANDLES]; /* of the last write applied */

static struct gwrite *gw_at(int w, int64_t n, int grow)
{
    if (w < 0 || w >= cfg.workers || n < 0 || n > 100000000)
        return NULL;
    if (n >= gw_len[w]) {
        int64_t len = gw_len[w] ? gw_len[w] : 1024;
        struct gwrite *p;

        if (!grow)
            return NULL;
        while (len <= n)
            len *= 2;
        if ((p = realloc(gws[w], (size_t)len * sizeof *p)) == NULL)
            return NULL;
        memset(p + gw_len[w], 0, (size_t)(len - gw_len[w]) * sizeof *p);
        gws[w] = p;
        gw_len[w] = len;
    }
    return &gws[w][n];
}

/* Nothing written, by the answer's word. */
static int refused(int status)
{
    return status == ZKL_EFENCED || status == ZKL_EWRITE ||
           status == ZKL_EAUTH || status == ZKL_EZK;
}

/* One write found in the record, in the order the server applied them. */
static void record_seen(const struct msg *m)
{
    struct gwrite *x = gw_at(m->client, m->aux, 0);
    struct ls *l = &K.l[m->lock];
    int gs = m->client * PER_WORKER + m->arg;

    K.g_records++;
    if (x == NULL || !x->sent || m->arg < 0 || m->arg >= PER_WORKER) {
        K.g_unlocked++;
        note("guarded write w%d #%lld in the record was never sent",
             m->client, (long long)m->aux);
        return;
    }
    if (x->seen++) {
        K.g_dup++;
        note("guarded write w%d #%lld applied twice", m->client,
             (long long)m->aux);
        return;
    }
    if (refused(x->status)) {
        K.g_refused++;
        note("guarded write w%d #%lld applied, answered %s", m->client,
             (long long)m->aux, zkl_err_name(x->status));
    }
    /* Holds of one path do not overlap on the server and their tokens
     * grow, so a write applied while its hold stood comes before every
     * write of a later hold. */
    if (m->token < l->max_applied) {
        K.g_unlocked++;
        note("guarded write w%d #%lld (token %llu) applied after a write "
             "of token %llu: outside its hold", m->client,
             (long long)m->aux, (unsigned long long)m->token,
             (unsigned long long)l->max_applied);
    } else {
        l->max_applied = m->token;
    }
    if (m->aux < last_n[gs]) {
        K.g_reordered++;
        note("guarded write w%d #%lld applied after #%lld of the same "
             "handle", m->client, (long long)m->aux,
             (long long)last_n[gs]);
    } else {
        last_n[gs] = m->aux;
    }
}

/* Once the record is read: writes answered applied that it lacks, and
 * writes never answered. */
static void record_done(void)
{
    int w;
    int64_t n;

    for (w = 0; w < cfg.workers; w++)
        for (n = 0; n < gw_len[w]; n++) {
            struct gwrite *x = &gws[w][n];

            if (!x->sent)
                continue;
            if (x->status == PENDING) {
                K.hangs++;
                note("HANG: guarded write w%d #%lld never answered", w,
                     (long long)n);
            } else if (x->status == ZKL_OK && !x->seen) {
                K.g_lost++;
                note("guarded write w%d #%lld answered applied, not in "
                     "the record", w, (long long)n);
            }
        }
}

/* A set member's or a reentrant handle's grant, by the library's count
 * (M_ENTER's aux): held once (a reentrant hold starts at one); or ended
 * already, its LOST to come (-1); anything else is a grant of a hold that
 * never was. A hold that ended so must be told LOST before the next
 * grant. */
static void held_as_told(int g, const struct msg *m)
{
    struct hs *h = &K.h[g];
    long *fig = h->recipe == R_SET ? &K.f_sets : &K.f_reent;

    if (h->owed) {
        (*fig)++;
        note("%s handle %d granted again, its last hold ended without "
             "LOST", recipe_key[h->recipe], g);
    }
    h->owed = m->aux == -1;
    h->depth = 1;
    if (m->aux == 1 || h->owed)
        return;
    (*fig)++;
    if (h->recipe == R_SET)
        note("set member %d (lock %d) not held at its set's ACQUIRED "
             "(%lld)", g, m->lock, (long long)m->aux);
    else
        note("reentrant handle %d entered with %lld holds", g,
             (long long)m->aux);
    if (!cfg.sabotage)
        history(g);
}

static void on_msg(const struct msg *m)
{
    int g = m->handle >= 0 ? gh(m) : -1;
    struct ls *l = &K.l[m->lock % LOCKS];
    struct hs *h = g >= 0 ? &K.h[g] : NULL;
    struct gwrite *x;

    if (g >= 0 && m->type != M_WRITE && m->type != M_GSENT &&
        m->type != M_GDONE)
        hist[g].m[hist[g].n++ % HIST] = *m;
    if (getenv("ZKL_SOAK_TRACE") != NULL && m->type != M_WRITE)
        note("w%d h%d lock %d: msg %d arg %d token %llu aux %lld",
             m->worker, m->handle, m->lock, m->type, m->arg,
             (unsigned long long)m->token, (long long)m->aux);

    switch (m->type) {
    case M_ROLE:
        h->used = 1;
        h->recipe = m->arg;
        h->unit = m->worker * PER_WORKER + (int)m->aux;
        h->client = m->client % CLIENTS;
        h->lock = m->lock;
        h->kind = (int)m->token;
        if (g == h->unit)
            K.roster[h->recipe]++;
        break;
    case M_WAIT:
        if (h->waiting) {
            K.hangs++;
            note("HANG: handle %d (%s) asks again, its last acquire never "
                 "answered", g, recipe_key[h->recipe]);
        }
        h->waiting = 1;
        h->wait_since = m->ms;
        h->wait_limit = m->aux;
        h->wait_freezes = K.w[m->worker].freezes;
        break;
    case M_ENTER:
        answer(g, m);
        if (h->tokenless) {
            /* The library tells LOST before a handle's next grant. */
            K.tokenless_not_lost++;
            note("handle %d (%s) granted again with no LOST after a grant "
                 "told with no token", g, recipe_key[h->recipe]);
            if (!cfg.sabotage)
                history(g);
        }
        h->tokenless = 0;
        K.grants++;
        if (h->recipe != R_SET || g == h->unit)
            K.by_recipe[h->recipe]++;
        if (h->recipe == R_SET || h->recipe == R_REENT)
            held_as_told(g, m);
        if (h->recipe == R_DOWNGRADE && m->arg == ZKL_KIND_READ &&
            K.h[h->unit].inside && K.h[h->unit].kind == ZKL_KIND_WRITE)
            K.downgrades++;
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
        if (m->token == 0) {
            /* The hold ended before its ACQUIRED ran (the process was
             * stopped or starved in between): the library gives no
             * token for it, so it can fence nothing and orders
             * nothing. Its LOST follows. */
            K.told_after_end++;
            h->tokenless = 1;
            enter(g, m);
            break;
        }
        if (m->token <= l->latest_token && late_news(g, m)) {
            K.late_news++;
            note("token %llu after %llu on lock %d: handle %d's grant, "
                 "reported %llu ms after its process thawed",
                 (unsigned long long)m->token,
                 (unsigned long long)l->latest_token, m->lock, g,
                 (unsigned long long)(m->ms - K.w[m->worker].thawed_at));
        } else if (m->token <= l->latest_token) {
            K.regressions++;
            note("token regression on lock %d: %llu (handle %d, %s) after "
                 "%llu (handle %d, %s); handle %d's process frozen %ld "
                 "time(s) since it began to wait", m->lock,
                 (unsigned long long)m->token, g, recipe_key[h->recipe],
                 (unsigned long long)l->latest_token, l->latest,
                 l->latest >= 0 ? recipe_key[K.h[l->latest].recipe] : "-",
                 g, (long)(K.w[m->worker].freezes - h->wait_freezes));
            if (!cfg.sabotage) {
                history(g);
                if (l->latest >= 0)
                    history(l->latest);
            }
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
    case M_ANSWERED:
        answer(g, m);
        K.inner_grants++;
        break;
    case M_DEPTH:
        h->depth = m->aux != 0 ? h->depth + (int)m->aux : 0;
        if (h->depth == m->arg)
            break;
        if (m->aux != 0 && m->arg == -1) { /* ended in the call */
            h->owed = 1;
            h->depth = 0;
            break;
        }
        K.f_reent++;
        note("reentrant handle %d: %d holds by its acquires and releases, "
             "%d by the library", g, h->depth, m->arg);
        if (!cfg.sabotage)
            history(g);
        h->depth = m->arg > 0 ? m->arg : 0;
        break;
    case M_EXIT:
        h->inside = 0;
        if (m->arg == EXIT_RELEASE)
            h->depth = 0;
        if (m->arg == EXIT_LOST) {
            h->owed = 0;
            h->tokenless = 0;
            K.lost++;
            /* Told after the next grant, though never frozen: the
             * margin of the LOST deadline was not enough. Timing, so
             * reported, not judged. */
            if (l->latest_token > m->token &&
                K.w[m->worker].freezes == h->freeze_mark)
                K.lost_late++;
        }
        break;
    case M_WRITE:
        record_write(g, m->lock, m->token);
        break;
    case M_FAILED:
        answer(g, m);
        break;
    case M_GSENT:
        if ((x = gw_at(m->worker, m->aux, 1)) != NULL) {
            x->sent = 1;
            x->slot = m->handle;
            x->token = m->token;
            x->status = PENDING;
        }
        K.g_sent++;
        break;
    case M_GDONE:
        if ((x = gw_at(m->worker, m->aux, 0)) != NULL)
            x->status = m->arg;
        K.g_ok += m->arg == ZKL_OK;
        break;
    case M_RECORD:
        record_seen(m);
        break;
    case M_ENDED:
        K.ended_early++;
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
        if (m->arg >= 0)
            record_done();
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
                    atomic_fetch_add(next_seq, 1), now_ms(), 0};

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
    struct msg m = {type, wi, -1, 0, arg, client, 0, 0, 0, 0};

    if (K.w[wi].alive)
        send(K.w[wi].fd, &m, sizeof m, MSG_DONTWAIT);
}

/* now - t, or 0 for a t stamped after now was read */
static uint64_t ago(uint64_t now, uint64_t t)
{
    return now > t ? now - t : 0;
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
        (K.server != SRV_UP || ago(now, K.server_ok_since) < hang))
        return;
    for (k = 0; k < LOCKS; k++) {
        int stuck = -1, inside = 0;

        if (ago(now, K.l[k].last_grant_ms) < hang)
            continue;
        for (g = 0; g < cfg.workers * PER_WORKER; g++) {
            struct wk *w = &K.w[g / PER_WORKER];

            if (!K.h[g].used || K.h[g].lock != k)
                continue;
            if (w->frozen_until != 0 || ago(now, w->thawed_at) < hang)
                goto excused;
            inside |= K.h[g].inside;
            if (K.h[g].waiting == 1 && ago(now, K.h[g].wait_since) > hang)
                stuck = g;
        }
        if (stuck >= 0 && !inside) {
            K.hangs++;
            K.l[k].last_grant_ms = now; /* once per window */
            note("HANG on lock %d: handle %d waiting %llu ms, no grant",
                 k, stuck,
                 (unsigned long long)ago(now, K.h[stuck].wait_since));
        }
    excused:;
    }
}

/* Once all is drained and counted: every acquire was answered, every
 * hold that ended by the library's word was told LOST. */
static void check_answered(void)
{
    int g;

    for (g = 0; g < cfg.workers * PER_WORKER; g++) {
        if (K.h[g].used && K.h[g].waiting) {
            K.hangs++;
            note("HANG: handle %d (%s) was never answered", g,
                 recipe_key[K.h[g].recipe]);
        }
        if (K.h[g].owed) {
            (*(K.h[g].recipe == R_SET ? &K.f_sets : &K.f_reent))++;
            note("%s handle %d: its hold ended without LOST",
                 recipe_key[K.h[g].recipe], g);
        }
        if (K.h[g].tokenless) {
            K.tokenless_not_lost++;
            note("%s handle %d: granted with no token, and no LOST came",
                 recipe_key[K.h[g].recipe], g);
        }
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
        !evtimer_pending(K.thaw_timer, NULL) && !net_busy() &&
        now >= K.end + 2u * (uint64_t)cfg.session_ms + 2000u) {
        K.phase = 2;
        note("draining");
        for (i = 0; i < cfg.workers; i++)
            command(i, C_DRAIN, 0, 0);
    }
    if (K.phase == 2 && K.drained == cfg.workers) {
        K.phase = 3;
        for (i = 0; i < cfg.workers; i++)
            if (K.w[i].stuck > 0) {
                K.hangs++;
                note("HANG: worker %d could not drain (%d stuck)", i,
                     K.w[i].stuck);
            }
        command(0, C_COUNT, 0, 0);
    }
    if (K.phase == 2 && now >= K.end + 120000u) {
        note("drain timed out");
        K.hangs += cfg.workers - K.drained;
        K.phase = 4;
    }
    if (K.phase == 3 && K.counted) {
        check_answered();
        K.phase = 4;
    }
    if (K.phase == 4) {
        event_base_loopbreak(K.base);
        return;
    }
    evtimer_add(K.check_timer, &tv);
}

/* A recipe that ran without doing what it is there for proves nothing:
 * no grant, a reentrant handle never held twice, a pair never
 * downgraded, no guarded write applied. A run of a minute or more fails
 * on it; a shorter one (the checker's own tests) may be unlucky. */
static int unexercised(void)
{
    int r, n = 0;

    for (r = 0; r < RECIPES; r++)
        if (K.roster[r] > 0 && K.by_recipe[r] == 0) {
            n++;
            note("recipe %s never granted", recipe_key[r]);
        }
    if (K.roster[R_REENT] > 0 && K.inner_grants == 0) {
        n++;
        note("no reentrant handle held twice");
    }
    if (K.roster[R_DOWNGRADE] > 0 && K.downgrades == 0) {
        n++;
        note("no downgrade");
    }
    if ((K.roster[R_GUARD] > 0 || K.roster[R_SET] > 0) && K.g_records == 0) {
        n++;
        note("no guarded write applied");
    }
    return n;
}

/* The checker's part of the run, once the workers are forked: until the
 * workers have drained and the orphans are counted; then the verdict.
 * Returns the exit status. */
int checker_main(void)
{
    struct timeval tv;
    int i, bad, idle;

    rng_state = cfg.seed * 0x2545F4914F6CDD1Dull + 1;
    K.base = event_base_new();
    K.start = now_ms();
    K.end = K.start + (uint64_t)(cfg.minutes * 60000.0);
    K.server_ok_since = K.start;
    for (i = 0; i < LOCKS; i++) {
        K.l[i].latest = -1;
        K.l[i].last_grant_ms = K.start;
    }
    for (i = 0; i < MAX_HANDLES; i++) {
        K.h[i].lock = -1;
        last_n[i] = -1;
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
    note("%d workers x %d sessions x %d units (every recipe) on %d locks, "
         "%d server node(s), session %d ms, a fault every ~%d ms, seed %u, "
         "root %s%s",
         cfg.workers, CLIENTS, UNITS, LOCKS, cfg.nodes, cfg.session_ms,
         cfg.fault_ms, cfg.seed, cfg.root,
         cfg.sabotage ? ", SABOTAGED on purpose" : "");
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
    idle = unexercised();

    printf("{\"minutes\": %.2f, \"workers\": %d, \"sessions\": %d, "
           "\"locks\": %d, \"server_nodes\": %d, \"seed\": %u, "
           "\"grants\": %ld, \"faults\": %ld",
           cfg.minutes, cfg.workers, cfg.workers * CLIENTS, LOCKS, cfg.nodes,
           cfg.seed, K.grants, K.faults);
    for (i = 0; i < F_KINDS; i++)
        printf(", \"faults_%s\": %ld", fault_key[i], K.by_kind[i]);
    printf(", \"leader_restarts\": %ld", K.leader_restarts);
    /* what ran: units and grants per recipe (a set's grant is the whole
     * set), and each recipe's own moves */
    for (i = 0; i < RECIPES; i++)
        printf(", \"units_%s\": %ld, \"grants_%s\": %ld", recipe_key[i],
               K.roster[i], recipe_key[i], K.by_recipe[i]);
    printf(", \"reentrant_inner_grants\": %ld, \"downgrades\": %ld, "
           "\"guarded_writes_sent\": %ld, \"guarded_writes_ok\": %ld, "
           "\"guarded_writes_in_record\": %ld",
           K.inner_grants, K.downgrades, K.g_sent, K.g_ok, K.g_records);
    printf(", \"read_grants\": %ld, \"reads_beside_reads\": %ld",
           K.read_grants, K.shared_reads);
    printf(", \"lease_grants\": %ld, \"leases_beside_leases\": %ld",
           K.lease_grants, K.leases_beside);
    printf(", \"holds_ended_before_told\": %ld", K.ended_early);
    printf(", \"session_expiries\": %ld, \"holds_lost\": %ld, "
           "\"lost_told_after_next_grant_unfrozen\": %ld, "
           "\"overlaps\": %ld, \"overlaps_explained\": %ld, "
           "\"overlaps_unexplained\": %ld, "
           "\"overlaps_after_stall\": %ld, \"writes\": %ld, "
           "\"writes_accepted\": %ld, \"stale_writes_refused\": %ld",
           K.expiries, K.lost, K.lost_late, K.overlaps, K.explained,
           K.unexplained, K.stalled_overlaps, K.writes, K.accepted,
           K.stale_refused);
    /* the safety figures: one per promise */
    printf(", \"mutex_overlaps\": %ld, \"reentrant_errors\": %ld, "
           "\"writers_beside_readers\": %ld, \"leases_over_limit\": %ld, "
           "\"leaders_at_once\": %ld, \"sets_not_held_together\": %ld, "
           "\"guarded_without_lock\": %ld, \"guarded_reordered\": %ld, "
           "\"guarded_refused_applied\": %ld, \"guarded_lost\": %ld, "
           "\"guarded_duplicated\": %ld",
           K.f_mutex, K.f_reent, K.f_rw, K.f_leases, K.f_leaders, K.f_sets,
           K.g_unlocked, K.g_reordered, K.g_refused, K.g_lost, K.g_dup);
    printf(", \"token_late_news\": %ld", K.late_news);
    printf(", \"grants_told_after_end\": %ld, "
           "\"grants_told_after_end_not_lost\": %ld",
           K.told_after_end, K.tokenless_not_lost);
    printf(", \"stale_writes_accepted\": %ld, \"token_regressions\": %ld, "
           "\"hangs\": %ld, \"answers_late\": %ld, \"orphans\": %ld, "
           "\"worker_crashes\": %ld, \"events_missing\": %ld, "
           "\"recipes_unexercised\": %d}\n",
           K.stale_accepted, K.regressions, K.hangs, K.late, K.orphans,
           K.crashes, K.missing, idle);
    fflush(stdout);
    event_free(K.fault_timer);
    event_free(K.check_timer);
    event_free(K.thaw_timer);
    event_free(K.start_timer);
    event_base_free(K.base);
    for (i = 0; i < cfg.workers; i++)
        free(gws[i]);
    bad = K.unexplained || K.f_reent || K.f_sets || K.g_unlocked ||
          K.g_reordered || K.g_refused || K.g_lost || K.g_dup ||
          K.stale_accepted || K.regressions || K.hangs || K.late ||
          K.tokenless_not_lost ||
          K.orphans || K.crashes || K.missing ||
          (idle && cfg.minutes >= 1) || K.grants == 0 ||
          K.faults == 0 || !K.counted;
    return bad ? 1 : 0;
}
