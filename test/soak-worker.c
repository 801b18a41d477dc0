/* zkl-soak's worker: one process, two sessions (each through fault
 * proxies of its own, one per server node; on the namespaced cluster,
 * straight to the nodes from a network namespace of its own), and eight
 * units that use the run's locks, each by one recipe: a mutex, a
 * reentrant mutex, a mutex whose holder writes a record on the server
 * through guarded writes, a reader, a writer, both sides of a read/write
 * lock that downgrade, a semaphore's lease, a leader election's
 * participant, a multi-lock set. Each lock handle is a slot the checker knows (M_ROLE).
 * The worker tells the checker each time a slot enters the critical
 * section, writes to the guarded record, and leaves; what it asked for
 * and what it was answered; it takes the checker's commands: faults on a
 * session's proxies, draining everything at the end, counting what is
 * left on the server and reading the record. The checker, not the
 * worker, judges. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "faultproxy.h"
#include "soak.h"
#include "zklock.h"
#include "zklock_libevent.h"

/* The recipe of unit i of worker id is cycle[(id * UNITS + i) % 9]: the
 * list goes round across the workers, so each worker runs all recipes
 * but one, and each recipe has several units. */
static const int cycle[] = {R_MUTEX, R_SET,       R_REENT, R_GUARD, R_READ,
                            R_WRITE, R_DOWNGRADE, R_LEASE, R_LATCH};
#define CYCLE ((int)(sizeof cycle / sizeof *cycle))

/* The multi-lock sets, sets[id % 4] for worker id: each overlaps others
 * on a path (on the read/write lock, a write member against a read
 * member), and each path it names also has single holders of its own
 * recipe. Only two reach the read/write lock: a set holding its member
 * there while it waits for the next one stops that whole queue. */
static const struct set_def {
    int n, lock[MAX_MEMBERS];
    zkl_lock_kind_t kind[MAX_MEMBERS];
} sets[] = {
    {2, {L_MUTEX, L_GUARD, 0}, {ZKL_KIND_MUTEX, ZKL_KIND_MUTEX, 0}},
    {2, {L_RW, L_MUTEX, 0}, {ZKL_KIND_WRITE, ZKL_KIND_MUTEX, 0}},
    {3,
     {L_MUTEX, L_REENT, L_GUARD},
     {ZKL_KIND_MUTEX, ZKL_KIND_MUTEX, ZKL_KIND_MUTEX}},
    {2, {L_RW, L_GUARD, 0}, {ZKL_KIND_READ, ZKL_KIND_MUTEX, 0}},
};

static void lock_path(char *buf, size_t size, int k)
{
    snprintf(buf, size, "%s/lock-%d", cfg.root, k);
}

static int lock_of(const char *path)
{
    const char *p = strrchr(path, '-');

    return p != NULL ? atoi(p + 1) : 0;
}

enum { SET_IDLE, SET_WAIT, SET_HELD, SET_LOST, SET_RELEASING };

static struct unit {
    int id, recipe, client, slot, n; /* slots slot .. slot + n - 1 */
    int lock[MAX_MEMBERS], kind[MAX_MEMBERS], in[MAX_MEMBERS];
    uint64_t token[MAX_MEMBERS];
    const zkl_lock_t *mem[MAX_MEMBERS]; /* the handle behind each slot */
    /* What the callbacks said, per slot: an acquire unanswered, a hold
     * not yet ended. The unit acts on these, not on zkl_lock_state():
     * a hold the library has ended (or a new one it has granted) may
     * still wait for its callback, and acting on the state then would
     * misreport the hold the checker judges. */
    int pending[MAX_MEMBERS], held[MAX_MEMBERS], ended[MAX_MEMBERS];
    int hold_ticks, guard; /* guard: the slot on L_GUARD, -1 none */
    long limit;            /* of the acquire under way */
    zkl_lock_t *lk, *rd;   /* a pair's: write side (slot 0), read side */
    zkl_multi_t *m;
    int set;               /* SET_* */
    int depth, inner;      /* reentrant: the holds; 1 an inner acquire,
                              2 an inner release under way */
    int downgrading;
    /* sabotage: RELEASED callbacks to ignore, a hold gone on the server
     * that the unit acts out, kept past the drain, a held-back answer */
    int swallow, fake, keep, late_status;
    struct event *tick, *late;
} U[UNITS];

static struct worker {
    int id, fd, draining, count_left, count_sum, count_err, record_tries;
    struct event_base *base;
    fp_t *fp[CLIENTS][MAX_NODES]; /* a session's proxy to each node */
    zkl_client_t *c[CLIENTS];
    struct event *cmd_ev, *drain_timer, *undelay[CLIENTS], *record_timer;
    uint64_t drain_deadline;
    /* the guarded record: a node whose children are the writes */
    char record[200];
    int record_state; /* 0 not made, 1 being made, 2 there */
    int64_t wn;       /* the next write's number */
    int inflight;     /* batches not answered */
    /* sabotage */
    uint64_t stale_token, stale_at;
    int stale_slot, gsab, swallows, lates, reent_sabs;
} W;

static void send_raw(int type, int handle, int lock, int arg, int client,
                     uint64_t tok, int64_t aux)
{
    struct msg m;

    memset(&m, 0, sizeof m);
    m.type = type;
    m.worker = W.id;
    m.handle = handle;
    m.lock = lock;
    m.arg = arg;
    m.client = client;
    m.token = tok;
    m.aux = aux;
    m.ms = now_ms();
    m.seq = atomic_fetch_add(next_seq, 1);
    while (send(W.fd, &m, sizeof m, 0) < 0 && errno == EINTR)
        ;
}

static void say(struct unit *u, int s, int type, int arg, uint64_t tok,
                int64_t aux)
{
    send_raw(type, u->slot + s, u->lock[s], arg, u->client, tok, aux);
}

static void arm(struct unit *u, long ms)
{
    struct timeval tv = tv_ms(ms);

    evtimer_add(u->tick, &tv);
}

static int exclusive(int kind)
{
    return kind == ZKL_KIND_MUTEX || kind == ZKL_KIND_WRITE ||
           kind == ZKL_KIND_LATCH;
}

/* What the library says of a hold just told or just moved: its count,
 * or when that is 0, -1 - its state: -1 (idle) when the hold has ended
 * in the library already (a call runs the library's clock, and a hold
 * past its LOST deadline ends inside it; or LOST is queued behind the
 * callback being run), which its LOST will tell; anything else is a
 * hold that never was. */
static int holds_of(const zkl_lock_t *lk)
{
    unsigned n = zkl_lock_hold_count(lk);

    return n > 0 ? (int)n : -1 - (int)zkl_lock_state(lk);
}

static void enter(struct unit *u, int s, int holds)
{
    u->in[s] = 1;
    say(u, s, M_ENTER, u->kind[s], u->token[s], holds);
}

/* A guarded hold that ended leaves its token for S_GUARD to misuse. */
static void ended(struct unit *u, int s)
{
    if (u->lock[s] == L_GUARD && u->m == NULL && u->token[s] != 0) {
        W.stale_token = u->token[s];
        W.stale_slot = u->slot + s;
        W.stale_at = now_ms();
    }
}

static void leave(struct unit *u, int s, int why)
{
    if (u->in[s]) {
        u->in[s] = 0;
        say(u, s, M_EXIT, why, u->token[s], 0);
    }
    if (why != EXIT_SUSPENDED)
        ended(u, s);
}

static void lost(struct unit *u, int s)
{
    u->in[s] = 0;
    say(u, s, M_EXIT, EXIT_LOST, u->token[s], 0);
    ended(u, s);
}

/* Whether slot s's hold, as its callbacks told it, is over in the
 * library already: its LOST is queued behind other callbacks (they run
 * within a budget per loop turn). Until it comes the unit does nothing
 * with the hold: a reentrant acquire now would start a new acquire
 * instead of counting up, a downgrade a plain read. */
static int ended_untold(struct unit *u, int s, const zkl_lock_t *lk)
{
    if (zkl_lock_is_held(lk))
        return 0;
    if (!u->ended[s]) {
        u->ended[s] = 1;
        say(u, s, M_ENDED, 0, u->token[s], 0);
    }
    arm(u, 5);
    return 1;
}

/* Mostly wait forever; sometimes with a timeout, sometimes a try-lock,
 * so those paths meet the faults too. */
static long pick_timeout(void)
{
    unsigned r = rnd(10);

    /* S_ENTER acts on refusals: try-locks refused while another holds
     * make sure every recipe meets it */
    if ((cfg.sabotage & S_ENTER) && rnd(2) == 0)
        return 0;
    return r < 7 ? -1 : r < 9 ? 200 + (long)rnd(3000) : 0;
}

/* Mostly short holds; some long enough for faults to land on holders.
 * Counted in ticks, not wall time: a process frozen mid-hold goes on as
 * if nothing happened when it thaws, as a real one would after a long
 * pause. */
static int pick_hold(void)
{
    return (int)(rnd(8) == 0 ? 60 + rnd(400) : rnd(6));
}

/* Tells the checker an acquire is under way, with the time its answer
 * is due by: a try-lock's is one session timeout. */
static void waiting(struct unit *u, int s, long t)
{
    u->limit = t < 0 ? -1
               : t > 0
                   ? t
                   : (long)zkl_client_session_timeout(W.c[u->client]);
    u->pending[s] = 1;
    say(u, s, M_WAIT, 0, 0, u->limit);
}

/* S_ENTER: act as if a refused acquire had succeeded, with a made-up
 * token, and hold for a while (fake_hold); a set as if it held every
 * member, the library saying it holds none. */
static void sabotage_enter(struct unit *u, int s0, int n, int status)
{
    int s;

    if (!(cfg.sabotage & S_ENTER) || W.draining ||
        (status != ZKL_ETIMEDOUT && status != ZKL_ELOCKED))
        return;
    for (s = s0; s < s0 + n; s++) {
        u->token[s] = 1;
        enter(u, s, 0);
    }
    u->fake = 1;
    u->hold_ticks = 100;
}

/* A sabotaged hold (S_ENTER, S_REENT) that the server does not know,
 * acted out to its end. */
static void fake_hold(struct unit *u)
{
    int s;

    if (u->hold_ticks-- <= 0 || W.draining) {
        for (s = 0; s < u->n; s++)
            leave(u, s, EXIT_RELEASE);
        u->fake = 0;
        u->depth = 0;
        arm(u, 20);
        return;
    }
    for (s = 0; s < u->n; s++)
        if (u->in[s] && exclusive(u->kind[s]))
            say(u, s, M_WRITE, 0, u->token[s], 0);
    arm(u, 5);
}

/* ---- guarded writes ------------------------------------------------ */

struct gw {
    int handle, client, claim_refused;
    int64_t n;
};

static void record_made(zkl_client_t *c, int status,
                        const zkl_op_result_t *res, size_t n, void *arg)
{
    (void)c;
    (void)n;
    (void)arg;
    W.inflight--;
    W.record_state = status == ZKL_OK || (status == ZKL_EWRITE &&
                                          res[0].status == ZKL_EEXISTS)
                         ? 2
                         : 0;
}

static void gw_done(zkl_client_t *c, int status, const zkl_op_result_t *res,
                    size_t n, void *arg)
{
    struct gw *g = arg;

    (void)c;
    (void)res;
    (void)n;
    W.inflight--;
    if (g->claim_refused && status == ZKL_OK)
        status = ZKL_EFENCED;
    send_raw(M_GDONE, g->handle, L_GUARD, status, g->client, 0, g->n);
    free(g);
}

static int write_ops(struct unit *u, const zkl_op_t *op, zkl_write_cb cb,
                     void *arg)
{
    int rc = u->m != NULL ? zkl_multi_write(u->m, op, 1, cb, arg)
                          : zkl_lock_write(u->lk, op, 1, cb, arg);

    if (rc == ZKL_OK)
        W.inflight++;
    return rc;
}

/* One write to the record under unit u's lock(s): a new sequential
 * child that names the writer (the slot on L_GUARD whose hold it is, and
 * its token), so the server's order of the children is the order in
 * which it applied the writes. */
static int send_write(struct unit *u, int handle, uint64_t tok, int64_t n,
                      int claim_refused)
{
    char data[96], path[256];
    zkl_op_t op;
    struct gw *g = malloc(sizeof *g);

    if (g == NULL)
        return ZKL_ENOMEM;
    snprintf(data, sizeof data, "%llu %d %d %lld", (unsigned long long)tok,
             W.id, handle, (long long)n);
    snprintf(path, sizeof path, "%s/g-", W.record);
    memset(&op, 0, sizeof op);
    op.type = ZKL_OP_CREATE;
    op.path = path;
    op.data = data;
    op.len = strlen(data);
    op.flags = ZKL_CREATE_SEQUENTIAL;
    g->handle = handle;
    g->client = u->client;
    g->claim_refused = claim_refused;
    g->n = n;
    if (write_ops(u, &op, gw_done, g) != ZKL_OK) {
        free(g);
        return -1;
    }
    return 0;
}

static void sent(struct unit *u, int s, int64_t n)
{
    say(u, s, M_GSENT, 0, u->token[s], n);
}

/* S_GUARD, as a library that got guarded writes wrong would: a batch
 * sent twice, one told applied that never went, one applied but told
 * refused, two applied in the other order. */
static void guard_sabotage(struct unit *u, int s)
{
    int64_t n = W.wn++, n2;
    int h = u->slot + s;

    switch (W.gsab++ % 4) {
    case 0:
        if (send_write(u, h, u->token[s], n, 0) == 0) {
            sent(u, s, n);
            send_write(u, h, u->token[s], n, 0);
        }
        break;
    case 1:
        sent(u, s, n);
        say(u, s, M_GDONE, ZKL_OK, 0, n);
        break;
    case 2:
        if (send_write(u, h, u->token[s], n, 1) == 0)
            sent(u, s, n);
        break;
    case 3:
        n2 = W.wn++;
        if (send_write(u, h, u->token[s], n2, 0) == 0)
            sent(u, s, n2);
        if (send_write(u, h, u->token[s], n, 0) == 0)
            sent(u, s, n);
        break;
    }
}

/* Now and then, while slot s of u holds L_GUARD, a write to the record;
 * the first makes the record's node. */
static void guarded_write(struct unit *u, int s)
{
    int64_t n;

    if (rnd(16) != 0 || W.inflight >= 3)
        return;
    if (W.record_state != 2) {
        zkl_op_t op;

        memset(&op, 0, sizeof op);
        op.type = ZKL_OP_CREATE;
        op.path = W.record;
        if (W.record_state == 0 &&
            write_ops(u, &op, record_made, NULL) == ZKL_OK)
            W.record_state = 1;
        return;
    }
    if ((cfg.sabotage & S_GUARD) && rnd(4) == 0) {
        guard_sabotage(u, s);
        return;
    }
    n = W.wn++;
    if (send_write(u, u->slot + s, u->token[s], n, 0) == 0)
        sent(u, s, n);
    else
        W.wn--;
}

/* S_GUARD: the write of a guarded hold that has ended, applied under
 * another lock's guard (u holds some other path), as if the library had
 * checked the wrong node. */
static void stale_write(struct unit *u)
{
    int64_t n;

    if (!(cfg.sabotage & S_GUARD) || W.stale_token == 0 ||
        W.record_state != 2 || now_ms() < W.stale_at + 300 ||
        rnd(50) != 0)
        return;
    n = W.wn++;
    if (send_write(u, W.stale_slot, W.stale_token, n, 0) == 0)
        send_raw(M_GSENT, W.stale_slot, L_GUARD, 0, u->client,
                 W.stale_token, n);
    W.stale_token = 0;
}

/* ---- single handles: mutex, reentrant, guarded, reader, writer, lease,
 * latch ---------------------------------------------------------------- */

static void inner_acquire(struct unit *u)
{
    long t = pick_timeout();

    if (zkl_lock_acquire(u->lk, t) != ZKL_OK) {
        arm(u, 5);
        return;
    }
    u->inner = 1;
    u->depth++;
    waiting(u, 0, t);
    u->pending[0] = 0; /* an inner acquire: u->inner says it */
    say(u, 0, M_DEPTH, holds_of(u->lk), 0, 1);
}

static void inner_release(struct unit *u)
{
    if ((cfg.sabotage & S_REENT) && W.reent_sabs < 3 && rnd(3) == 0) {
        /* As if the inner release had deleted the node: every count
         * given back, and the unit goes on as a holder one level down. */
        unsigned n = zkl_lock_hold_count(u->lk), i;

        W.reent_sabs++;
        for (i = 0; i < n; i++)
            u->swallow += zkl_lock_release(u->lk) == ZKL_OK;
        u->depth--;
        u->held[0] = 0;
        u->fake = 1;
        if (u->hold_ticks < 100)
            u->hold_ticks = 100;
        say(u, 0, M_DEPTH, holds_of(u->lk), 0, -1);
        arm(u, 5);
        return;
    }
    if (zkl_lock_release(u->lk) != ZKL_OK) {
        arm(u, 5);
        return;
    }
    u->inner = 2;
    u->depth--;
    say(u, 0, M_DEPTH, holds_of(u->lk), 0, -1);
}

/* Gives back a single handle's hold, all its levels. */
static void release_single(struct unit *u)
{
    leave(u, 0, EXIT_RELEASE);
    u->held[0] = 0;
    u->depth = 0;
    zkl_lock_release(u->lk);
}

static void single_tick(struct unit *u)
{
    long t;

    if (u->pending[0] || u->inner)
        return; /* its callback ticks */
    if (!u->held[0]) {
        if (zkl_lock_state(u->lk) != ZKL_STATE_IDLE) {
            arm(u, 20); /* a release under way */
            return;
        }
        t = pick_timeout();
        if (zkl_lock_acquire(u->lk, t) == ZKL_OK)
            waiting(u, 0, t);
        else
            arm(u, 50);
        return;
    }
    if (ended_untold(u, 0, u->lk))
        return;
    if (u->hold_ticks-- <= 0) {
        if (u->depth > 1)
            inner_release(u);
        else
            release_single(u);
        return;
    }
    if (u->recipe == R_REENT) {
        unsigned r = rnd(12);

        if (r == 0 && u->depth < 4) {
            inner_acquire(u);
            return;
        }
        if (r == 1 && u->depth > 1) {
            inner_release(u);
            return;
        }
    }
    /* Readers and leases share the lock: only exclusive holders write
     * to the checker's record. */
    if (exclusive(u->kind[0]))
        say(u, 0, M_WRITE, 0, u->token[0], 0);
    if (u->recipe == R_GUARD)
        guarded_write(u, 0);
    else if (exclusive(u->kind[0]))
        stale_write(u);
    arm(u, 5);
}

static void late_answer(evutil_socket_t fd, short what, void *arg)
{
    struct unit *u = arg;

    (void)fd;
    (void)what;
    say(u, 0, M_FAILED, u->late_status, 0, 0);
    arm(u, (long)rnd(20));
}

static void single_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                      void *arg)
{
    struct unit *u = arg;
    struct timeval tv;

    (void)lk;
    switch (ev) {
    case ZKL_LOCK_ACQUIRED:
        if (u->inner == 1) { /* a reentrant handle's inner acquire */
            u->inner = 0;
            say(u, 0, M_ANSWERED, 0, 0, 0);
            arm(u, 5);
            break;
        }
        u->pending[0] = 0;
        if (u->keep) /* S_ORPHAN: taken silently, kept */
            break;
        if (W.draining) { /* answered; given back at once */
            say(u, 0, M_ANSWERED, 0, 0, 0);
            while (zkl_lock_release(u->lk) == ZKL_OK &&
                   zkl_lock_hold_count(u->lk) > 0)
                ;
            break;
        }
        /* No token when the hold ended before this callback (the
         * header's advice): the grant is reported with 0. */
        u->token[0] = 0;
        zkl_lock_token(u->lk, &u->token[0]);
        u->hold_ticks = pick_hold();
        if ((cfg.sabotage & S_HANG) && u->recipe == R_MUTEX &&
            W.swallows < 3 && rnd(2) == 0 && !W.draining) {
            /* As if the grant had never been told: gone at once. */
            W.swallows++;
            zkl_lock_release(u->lk);
            break;
        }
        u->held[0] = 1;
        u->ended[0] = 0;
        u->depth = 1;
        enter(u, 0, holds_of(u->lk));
        arm(u, 5);
        break;
    case ZKL_LOCK_FAILED:
        u->pending[0] = 0;
        if ((cfg.sabotage & S_HANG) && W.lates < 6 && u->limit >= 0 &&
            !W.draining && (W.lates == 0 || rnd(3) == 0)) {
            /* The answer held back past its time. The checker excuses
             * a late answer when its worker was frozen meanwhile (a
             * SIGSTOP fault), so one worker's first chance is always
             * taken and a few more follow: three, by chance, were all
             * excused once in CI (answers_late stayed 0). */
            W.lates++;
            u->late_status = status;
            tv = tv_ms(u->limit + SLACK_MS + 1000);
            evtimer_add(u->late, &tv);
            break;
        }
        say(u, 0, M_FAILED, status, 0, 0);
        sabotage_enter(u, 0, 1, status);
        arm(u, (long)rnd(20));
        break;
    case ZKL_LOCK_SUSPENDED:
        leave(u, 0, EXIT_SUSPENDED);
        break;
    case ZKL_LOCK_RESTORED:
        if (!W.draining && u->held[0] && !u->in[0]) {
            u->in[0] = 1;
            say(u, 0, M_REENTER, u->kind[0], u->token[0], 0);
        }
        break;
    case ZKL_LOCK_LOST:
        lost(u, 0);
        u->held[0] = 0;
        if (u->recipe == R_REENT) { /* every level at once */
            u->depth = 0;
            say(u, 0, M_DEPTH, (int)zkl_lock_hold_count(u->lk), 0, 0);
        }
        arm(u, (long)rnd(20));
        break;
    case ZKL_LOCK_RELEASED:
        if (u->swallow > 0) {
            if (--u->swallow == 0 && !u->fake)
                arm(u, 20);
            break;
        }
        if (u->inner == 2) {
            u->inner = 0;
            arm(u, 5);
            break;
        }
        arm(u, (long)rnd(20));
        break;
    case ZKL_LOCK_REVOKE_REQUESTED:
    case ZKL_LOCK_QUEUED:
        break;
    }
}

/* ---- both sides of a read/write lock, with downgrades --------------- */

static void release_side(struct unit *u, int s)
{
    leave(u, s, EXIT_RELEASE);
    u->held[s] = 0;
    zkl_lock_release(s ? u->rd : u->lk);
}

static void pair_tick(struct unit *u)
{
    if (u->pending[0] || u->pending[1])
        return; /* its callback ticks (a downgrade's too) */
    if (u->held[0]) {
        if (ended_untold(u, 0, u->lk))
            return;
        if (u->hold_ticks-- > 0) {
            say(u, 0, M_WRITE, 0, u->token[0], 0);
            arm(u, 5);
            return;
        }
        /* Mostly a downgrade: a loaded minute on an ensemble has
         * granted the pairs' write sides only a few times, and one
         * downgrade in three of them was too few to count on. */
        if (rnd(8) != 0 && zkl_lock_acquire(u->rd, -1) == ZKL_OK) {
            u->downgrading = 1;
            waiting(u, 1, -1);
            return;
        }
        release_side(u, 0);
        arm(u, 20);
        return;
    }
    if (u->held[1]) {
        if (u->hold_ticks-- > 0) {
            arm(u, 5);
            return;
        }
        release_side(u, 1);
        arm(u, 20);
        return;
    }
    if (zkl_lock_state(u->lk) != ZKL_STATE_IDLE ||
        zkl_lock_state(u->rd) != ZKL_STATE_IDLE) {
        arm(u, 20); /* a release under way */
        return;
    }
    {
        /* now and then a plain reader; mostly a writer that may
         * downgrade */
        int s = rnd(6) == 0;
        long t = pick_timeout();

        if (zkl_lock_acquire(s ? u->rd : u->lk, t) == ZKL_OK)
            waiting(u, s, t);
        else
            arm(u, 50);
    }
}

static void pair_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                    void *arg)
{
    struct unit *u = arg;
    int s = lk == u->rd;

    switch (ev) {
    case ZKL_LOCK_ACQUIRED:
        u->pending[s] = 0;
        if (W.draining) { /* answered; given back at once */
            say(u, s, M_ANSWERED, 0, 0, 0);
            zkl_lock_release(lk);
            break;
        }
        u->held[s] = 1;
        u->ended[s] = 0;
        u->token[s] = 0; /* 0: the hold ended before this callback */
        zkl_lock_token(lk, &u->token[s]);
        u->hold_ticks = pick_hold();
        enter(u, s, holds_of(lk));
        if (s == 1 && u->downgrading && u->held[0])
            /* The read side holds in the write side's place: the write
             * side goes, and no writer gets in between. */
            release_side(u, 0);
        u->downgrading = 0;
        arm(u, 5);
        break;
    case ZKL_LOCK_FAILED:
        u->pending[s] = 0;
        say(u, s, M_FAILED, status, 0, 0);
        if (s == 0)
            sabotage_enter(u, 0, 1, status);
        if (s == 1 && u->downgrading && u->held[0])
            release_side(u, 0);
        u->downgrading = 0;
        arm(u, (long)rnd(20));
        break;
    case ZKL_LOCK_SUSPENDED:
        leave(u, s, EXIT_SUSPENDED);
        break;
    case ZKL_LOCK_RESTORED:
        if (!W.draining && u->held[s] && !u->in[s]) {
            u->in[s] = 1;
            say(u, s, M_REENTER, u->kind[s], u->token[s], 0);
        }
        break;
    case ZKL_LOCK_LOST:
        lost(u, s);
        u->held[s] = 0;
        arm(u, (long)rnd(20));
        break;
    case ZKL_LOCK_RELEASED:
        arm(u, (long)rnd(20));
        break;
    case ZKL_LOCK_REVOKE_REQUESTED:
    case ZKL_LOCK_QUEUED:
        break;
    }
}

/* ---- multi-lock sets ------------------------------------------------ */

static void leave_all(struct unit *u, int why)
{
    int s;

    for (s = 0; s < u->n; s++)
        leave(u, s, why);
}

static void set_release(struct unit *u)
{
    leave_all(u, EXIT_RELEASE);
    if (zkl_multi_release(u->m) == ZKL_OK) {
        u->set = SET_RELEASING;
    } else {
        u->set = SET_IDLE;
        arm(u, (long)rnd(20));
    }
}

static void set_tick(struct unit *u)
{
    long t;
    int s;

    switch (u->set) {
    case SET_IDLE:
        /* A set waits holding the members before the one it waits for,
         * and their queues stand still meanwhile: mostly it gives up
         * after a while, so that the other recipes keep going. */
        t = pick_timeout();
        if (t < 0 && rnd(3) != 0)
            t = 1000 + (long)rnd(5000);
        if (zkl_multi_acquire(u->m, t) == ZKL_OK) {
            u->set = SET_WAIT;
            waiting(u, 0, t);
        } else {
            arm(u, 50);
        }
        break;
    case SET_HELD:
        for (s = 0; s < u->n; s++)
            if (ended_untold(u, s, u->mem[s]))
                return; /* the set's LOST is on its way */
        if (u->hold_ticks-- <= 0) {
            set_release(u);
            break;
        }
        for (s = 0; s < u->n; s++)
            if (exclusive(u->kind[s]))
                say(u, s, M_WRITE, 0, u->token[s], 0);
        if (u->guard >= 0)
            guarded_write(u, u->guard);
        arm(u, 5);
        break;
    case SET_LOST: /* give back the members it kept */
        set_release(u);
        break;
    default:
        break;
    }
}

static void set_cb(zkl_multi_t *m, zkl_lock_event_t ev, int status,
                   void *arg)
{
    struct unit *u = arg;
    int s;

    (void)m;
    switch (ev) {
    case ZKL_LOCK_ACQUIRED:
        u->pending[0] = 0;
        u->set = SET_HELD;
        memset(u->ended, 0, sizeof u->ended);
        u->hold_ticks = pick_hold();
        for (s = 0; s < u->n; s++) {
            u->token[s] = 0;
            zkl_lock_token(u->mem[s], &u->token[s]);
        }
        for (s = 0; s < u->n; s++)
            enter(u, s, holds_of(u->mem[s]));
        arm(u, 5);
        break;
    case ZKL_LOCK_FAILED:
        u->pending[0] = 0;
        u->set = SET_IDLE;
        say(u, 0, M_FAILED, status, 0, 0);
        sabotage_enter(u, 0, u->n, status);
        arm(u, (long)rnd(20));
        break;
    case ZKL_LOCK_SUSPENDED:
        leave_all(u, EXIT_SUSPENDED);
        break;
    case ZKL_LOCK_RESTORED:
        for (s = 0; s < u->n && !W.draining; s++)
            if (!u->in[s]) {
                u->in[s] = 1;
                say(u, s, M_REENTER, u->kind[s], u->token[s], 0);
            }
        break;
    case ZKL_LOCK_LOST:
        for (s = 0; s < u->n; s++)
            lost(u, s);
        u->set = SET_LOST;
        arm(u, (long)rnd(20));
        break;
    case ZKL_LOCK_RELEASED:
        u->set = SET_IDLE;
        arm(u, (long)rnd(20));
        break;
    case ZKL_LOCK_REVOKE_REQUESTED:
    case ZKL_LOCK_QUEUED:
        break;
    }
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct unit *u = arg;

    (void)fd;
    (void)what;
    if (W.draining)
        return;
    if (u->fake)
        fake_hold(u);
    else if (u->recipe == R_SET)
        set_tick(u);
    else if (u->recipe == R_DOWNGRADE)
        pair_tick(u);
    else
        single_tick(u);
}

static int make_unit(struct unit *u, const struct set_def *d)
{
    zkl_client_t *c = W.c[u->client];
    char p[256], id[32];
    int s, rc;

    u->guard = -1;
    if (u->recipe == R_SET) {
        char buf[MAX_MEMBERS][256];
        const char *paths[MAX_MEMBERS];

        for (s = 0; s < d->n; s++) {
            lock_path(buf[s], sizeof buf[s], d->lock[s]);
            paths[s] = buf[s];
        }
        if (zkl_multi_new(&u->m, c, paths, d->kind, (size_t)d->n, set_cb,
                          u) != ZKL_OK)
            return -1;
        /* slots in the order the set takes its members */
        u->n = (int)zkl_multi_size(u->m);
        for (s = 0; s < u->n; s++) {
            u->mem[s] = zkl_multi_lock(u->m, (size_t)s);
            u->kind[s] = zkl_lock_kind(u->mem[s]);
            u->lock[s] = lock_of(zkl_lock_path(u->mem[s]));
            if (u->lock[s] == L_GUARD)
                u->guard = s;
        }
        return 0;
    }
    if (u->recipe == R_DOWNGRADE) {
        lock_path(p, sizeof p, L_RW);
        if (zkl_rwlock_new(&u->rd, &u->lk, c, p, pair_cb, u) != ZKL_OK)
            return -1;
        snprintf(id, sizeof id, "w%d-h%d", W.id, u->slot);
        zkl_lock_set_data(u->lk, id, strlen(id));
        snprintf(id, sizeof id, "w%d-h%d", W.id, u->slot + 1);
        zkl_lock_set_data(u->rd, id, strlen(id));
        u->n = 2;
        u->lock[0] = u->lock[1] = L_RW;
        u->kind[0] = ZKL_KIND_WRITE;
        u->kind[1] = ZKL_KIND_READ;
        u->mem[0] = u->lk;
        u->mem[1] = u->rd;
        return 0;
    }
    u->n = 1;
    switch (u->recipe) {
    case R_REENT:
        u->lock[0] = L_REENT;
        u->kind[0] = ZKL_KIND_MUTEX;
        break;
    case R_GUARD:
        u->lock[0] = L_GUARD;
        u->kind[0] = ZKL_KIND_MUTEX;
        break;
    case R_READ:
    case R_WRITE:
        u->lock[0] = L_RW;
        u->kind[0] = u->recipe == R_READ ? ZKL_KIND_READ : ZKL_KIND_WRITE;
        break;
    case R_LEASE:
        u->lock[0] = L_SEM;
        u->kind[0] = ZKL_KIND_LEASE;
        break;
    case R_LATCH:
        u->lock[0] = L_LATCH;
        u->kind[0] = ZKL_KIND_LATCH;
        break;
    default:
        u->lock[0] = L_MUTEX;
        u->kind[0] = ZKL_KIND_MUTEX;
        break;
    }
    if (u->lock[0] == L_GUARD)
        u->guard = 0;
    lock_path(p, sizeof p, u->lock[0]);
    snprintf(id, sizeof id, "w%d-h%d", W.id, u->slot);
    rc = u->recipe == R_LEASE ? zkl_lease_new(&u->lk, c, p, SEM_LEASES,
                                              single_cb, u)
         : u->recipe == R_LATCH
             ? zkl_latch_new(&u->lk, c, p, id, single_cb, u)
             : zkl_lock_new_kind(&u->lk, c, p,
                                 (zkl_lock_kind_t)u->kind[0], single_cb, u);
    if (rc != ZKL_OK)
        return -1;
    u->mem[0] = u->lk;
    snprintf(id, sizeof id, "w%d-h%d", W.id, u->slot);
    if (u->recipe != R_LATCH)
        zkl_lock_set_data(u->lk, id, strlen(id));
    if (u->recipe == R_REENT && zkl_lock_set_reentrant(u->lk, 1) != ZKL_OK)
        return -1;
    return 0;
}

/* ---- the end: drain, count, read the record ------------------------- */

static void on_conn(zkl_client_t *c, zkl_conn_event_t ev, void *arg)
{
    (void)c;
    if (ev == ZKL_CONN_EXPIRED)
        send_raw(M_EXPIRED, -1, 0, (int)(intptr_t)arg, 0, 0, 0);
}

static int unit_idle(struct unit *u)
{
    int s;

    if (u->keep)
        return 1;
    if (u->fake || u->swallow || u->inner || evtimer_pending(u->late, NULL))
        return 0;
    for (s = 0; s < u->n; s++)
        if (u->pending[s])
            return 0;
    if (u->recipe == R_SET)
        return u->set == SET_IDLE;
    if (u->recipe == R_DOWNGRADE &&
        zkl_lock_state(u->rd) != ZKL_STATE_IDLE)
        return 0;
    return zkl_lock_state(u->lk) == ZKL_STATE_IDLE;
}

static void let_go_one(struct unit *u, int s, zkl_lock_t *lk, int cancel)
{
    u->held[s] = 0;
    if (zkl_lock_state(lk) == ZKL_STATE_HELD) {
        leave(u, s, EXIT_RELEASE);
        /* a reentrant hold: every level */
        while (zkl_lock_release(lk) == ZKL_OK && zkl_lock_hold_count(lk) > 0)
            ;
        u->depth = 0;
    } else if (cancel) {
        zkl_lock_cancel(lk);
    }
}

/* ZKL_SOAK_DUMP: where every handle stands when the drain begins, and
 * (worker 0) each path's queue with its nodes' data (the slot that made
 * it, for single handles), to take a hang apart. */
static void queue_dump(zkl_client_t *c, int status, const zkl_contender_t *v,
                       size_t n, void *arg)
{
    size_t i;

    (void)c;
    for (i = 0; i < n && status == ZKL_OK; i++)
        fprintf(stderr, "dump: lock %d queue %zu: %s holds=%d data=%s\n",
                (int)(intptr_t)arg, i, v[i].name, v[i].holds,
                v[i].data != NULL ? v[i].data : "-");
}

static void dump(void)
{
    static const char *const st[] = {"idle", "acquiring", "queued", "held",
                                     "releasing"};
    char name[ZKL_NODE_NAME_SIZE], p[256];
    int i, s;

    for (i = 0; i < UNITS; i++)
        for (s = 0; s < U[i].n; s++) {
            const zkl_lock_t *lk = U[i].mem[s];

            if (zkl_lock_node_name(lk, name, sizeof name) != ZKL_OK)
                strcpy(name, "-");
            fprintf(stderr, "dump: w%d h%d (%s, lock %d): %s %s set %d\n",
                    W.id, U[i].slot + s, recipe_key[U[i].recipe],
                    U[i].lock[s], st[zkl_lock_state(lk)], name, U[i].set);
        }
    for (i = 0; i < LOCKS && W.id == 0; i++) {
        lock_path(p, sizeof p, i);
        if (i == L_SEM)
            strcat(p, "/leases");
        zkl_contenders_ex(W.c[0], p, queue_dump, (void *)(intptr_t)i);
    }
}

/* Gives back what u holds, and with cancel what it waits for. */
static void let_go(struct unit *u, int cancel)
{
    int s;

    if (u->keep)
        return;
    if (u->fake) {
        for (s = 0; s < u->n; s++)
            leave(u, s, EXIT_RELEASE);
        u->fake = 0;
    }
    if (u->recipe == R_SET) {
        if (u->set == SET_HELD || u->set == SET_LOST)
            set_release(u);
        else if (u->set == SET_WAIT && cancel)
            zkl_multi_cancel(u->m);
        return;
    }
    if (u->recipe == R_DOWNGRADE) {
        u->downgrading = 0;
        let_go_one(u, 1, u->rd, cancel);
    }
    let_go_one(u, 0, u->lk, cancel);
}

/* S_ORPHAN: unit 0 (a mutex) keeps its node through the drain and says
 * it let go. */
static void keep_one(void)
{
    struct unit *u = &U[0];

    if (u->recipe != R_MUTEX)
        return;
    u->keep = 1;
    if (zkl_lock_state(u->lk) == ZKL_STATE_HELD) {
        leave(u, 0, EXIT_RELEASE);
        return;
    }
    zkl_lock_cancel(u->lk); /* its FAILED answers the acquire */
    zkl_lock_acquire(u->lk, -1);
}

static int all_idle(void)
{
    int i;

    for (i = 0; i < UNITS; i++)
        if (!unit_idle(&U[i]))
            return 0;
    for (i = 0; i < CLIENTS; i++)
        if (zkl_client_pending(W.c[i]) != 0 &&
            !(U[0].keep && U[0].client == i))
            return 0;
    return W.inflight == 0;
}

static void drain_check(evutil_socket_t fd, short what, void *arg)
{
    struct timeval tv = tv_ms(50);
    int i, stuck = 0;

    (void)fd;
    (void)what;
    (void)arg;
    if (!all_idle() && now_ms() < W.drain_deadline) {
        for (i = 0; i < UNITS; i++) /* release what came since */
            let_go(&U[i], 0);
        evtimer_add(W.drain_timer, &tv);
        return;
    }
    for (i = 0; i < UNITS; i++)
        stuck += !unit_idle(&U[i]);
    for (i = 0; i < CLIENTS; i++)
        if (!(U[0].keep && U[0].client == i))
            stuck += (int)zkl_client_pending(W.c[i]);
    stuck += W.inflight;
    send_raw(M_DRAINED, -1, 0, stuck, 0, 0, 0);
}

static void count_one(void)
{
    if (--W.count_left == 0)
        send_raw(M_COUNT, -1, 0, W.count_err ? -1 : W.count_sum, 0, 0, 0);
}

static void count_done(zkl_client_t *c, int status, const char *const *names,
                       size_t n, void *arg)
{
    (void)c;
    (void)names;
    (void)arg;
    W.count_err |= status != ZKL_OK;
    W.count_sum += (int)n;
    count_one();
}

static const zkl_contender_t *rec_v;

static int by_name(const void *a, const void *b)
{
    return strcmp(rec_v[*(const size_t *)a].name,
                  rec_v[*(const size_t *)b].name);
}

static void read_record(evutil_socket_t fd, short what, void *arg);

/* The record's children in the server's order (the sequence it gave
 * each), each as the checker needs it; before M_COUNT, which ends the
 * run. */
static void record_read(zkl_client_t *c, int status,
                        const zkl_contender_t *v, size_t n, void *arg)
{
    size_t i, *ix;

    (void)c;
    (void)arg;
    if (status != ZKL_OK || (ix = malloc((n + 1) * sizeof *ix)) == NULL) {
        struct timeval tv = tv_ms(1000);

        if (++W.record_tries < 10) {
            evtimer_add(W.record_timer, &tv);
            return;
        }
        W.count_err = 1;
        count_one();
        return;
    }
    for (i = 0; i < n; i++)
        ix[i] = i;
    rec_v = v;
    qsort(ix, n, sizeof *ix, by_name);
    for (i = 0; i < n; i++) {
        unsigned long long tok;
        long long num;
        int w, h;

        if (v[ix[i]].data == NULL ||
            sscanf(v[ix[i]].data, "%llu %d %d %lld", &tok, &w, &h, &num) != 4)
            send_raw(M_RECORD, -1, L_GUARD, -1, -1, 0, -1);
        else
            send_raw(M_RECORD, -1, L_GUARD, h, w, tok, num);
    }
    free(ix);
    count_one();
}

static void read_record(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    if (zkl_contenders_ex(W.c[0], W.record, record_read, NULL) != ZKL_OK)
        record_read(W.c[0], ZKL_EZK, NULL, 0, NULL);
}

/* Faults on a session act on its proxies to every node, so that it
 * cannot escape a stall by moving to another node; a lost reply is aimed
 * at the node it is connected to (at all of them if it is between
 * connections, where the first reconnection takes it). */
static void session_fault(int k, int type, int ms)
{
    int j, open = 0;

    if (cfg.netns != NULL)
        return; /* no proxies: the faults are on the links */

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
            if (getenv("ZKL_SOAK_DUMP") != NULL)
                dump();
            W.draining = 1;
            W.drain_deadline = now_ms() + 30000;
            if ((cfg.sabotage & S_ORPHAN) && W.id == 0)
                keep_one();
            for (i = 0; i < UNITS; i++) {
                evtimer_del(U[i].tick);
                let_go(&U[i], 1);
            }
            drain_check(-1, 0, NULL);
            break;
        case C_COUNT:
            /* Every lock path (the semaphore's nodes are under its two
             * children), then the record. */
            W.count_left = LOCKS + 2;
            W.count_sum = 0;
            W.count_err = 0;
            for (i = 0; i < LOCKS + 1; i++) {
                lock_path(p, sizeof p, i < LOCKS ? i : L_SEM);
                strcat(p, i == L_SEM ? "/leases" : i == LOCKS ? "/locks" : "");
                if (zkl_contenders(W.c[0], p, count_done, NULL) != ZKL_OK)
                    count_done(W.c[0], ZKL_EZK, NULL, 0, NULL);
            }
            read_record(-1, 0, NULL);
            break;
        case C_QUIT:
            event_base_loopbreak(W.base);
            return;
        }
    }
    if (r == 0)
        event_base_loopbreak(W.base); /* the checker is gone */
}

int worker_main(int id, int fd)
{
    zkl_options_t *o;
    char hosts[MAX_NODES * 24];
    int i, j, k, slot = 0;

    W.id = id;
    W.fd = fd;
    W.gsab = id; /* each worker's first guarded sabotage another kind */
    rng_state = (cfg.seed + 1) * 0x9E3779B97F4A7C15ull + (uint64_t)id * 7919;
    snprintf(W.record, sizeof W.record, "%s/record", cfg.root);
    W.base = event_base_new();
    /* On the namespaced cluster a worker is a client group of its own:
     * its sessions leave from its namespace, straight to the servers. */
    if (cfg.netns != NULL && net_enter(id) != 0)
        return 1;
    for (k = 0; k < CLIENTS; k++) {
        hosts[0] = '\0';
        for (j = 0; j < cfg.nodes && cfg.netns == NULL; j++) {
            if ((W.fp[k][j] = fp_new(W.base, cfg.port[j])) == NULL)
                return 1;
            if (j > 0)
                strcat(hosts, ",");
            strcat(hosts, fp_hosts(W.fp[k][j]));
        }
        W.undelay[k] = evtimer_new(W.base, undelay, (void *)(intptr_t)k);
        if (zkl_options_new(&o) != ZKL_OK)
            return 1;
        zkl_options_set_servers(o, cfg.netns != NULL ? cfg.hosts : hosts);
        zkl_options_set_session_timeout(o, cfg.session_ms);
        zkl_options_set_conn_cb(o, on_conn, (void *)(intptr_t)k);
        if (zkl_client_new(&W.c[k], o) != ZKL_OK ||
            zkl_libevent_attach(W.c[k], W.base) != ZKL_OK)
            return 1;
        zkl_options_free(o);
    }
    for (i = 0; i < UNITS; i++) {
        struct unit *u = &U[i];
        int s;

        u->id = i;
        u->recipe = cycle[(id * UNITS + i) % CYCLE];
        u->client = i % CLIENTS;
        u->slot = slot;
        u->tick = evtimer_new(W.base, on_tick, u);
        u->late = evtimer_new(W.base, late_answer, u);
        if (make_unit(u, &sets[id % 4]) != 0)
            return 1;
        slot += u->n;
        for (s = 0; s < u->n; s++)
            say(u, s, M_ROLE, u->recipe, (uint64_t)u->kind[s], u->slot);
        arm(u, (long)rnd(100));
    }
    W.drain_timer = evtimer_new(W.base, drain_check, NULL);
    W.record_timer = evtimer_new(W.base, read_record, NULL);
    W.cmd_ev = event_new(W.base, fd, EV_READ | EV_PERSIST, on_cmd, NULL);
    event_add(W.cmd_ev, NULL);
    event_base_dispatch(W.base);

    for (i = 0; i < UNITS; i++) {
        zkl_multi_free(U[i].m);
        zkl_lock_free(U[i].lk);
        zkl_lock_free(U[i].rd);
        event_free(U[i].tick);
        event_free(U[i].late);
    }
    for (k = 0; k < CLIENTS; k++) {
        zkl_client_free(W.c[k]);
        for (j = 0; j < cfg.nodes && cfg.netns == NULL; j++)
            fp_free(W.fp[k][j]);
        event_free(W.undelay[k]);
    }
    event_free(W.cmd_ev);
    event_free(W.drain_timer);
    event_free(W.record_timer);
    event_base_free(W.base);
    close(fd);
    /* S_CRASH: one worker ends badly */
    return (cfg.sabotage & S_CRASH) && id == 0 ? 3 : 0;
}
