/* Multi-locks: all or nothing, one deadline, folding, the held prefix,
 * and no deadlock between callers that name crossed sets, with and
 * without faults. */
#include <unistd.h>

#include "faultproxy.h"
#include "harness.h"

/* n fresh lock paths, kept for the test's life. */
static const char **paths_of(int n, const char *tag)
{
    static char buf[16][256];
    static const char *v[16];
    int i;

    ASSERT(n <= 16);
    for (i = 0; i < n; i++) {
        char sfx[32];

        snprintf(sfx, sizeof sfx, "%s%02d", tag, i);
        snprintf(buf[i], sizeof buf[i], "%s", t_path(sfx));
        v[i] = buf[i];
    }
    return v;
}

TEST(multi_bad_args)
{
    t_conn_t conn;
    zkl_client_t *c = t_client(t_hosts(), 4000, &conn);
    const char **p = paths_of(3, "b");
    const char *dup[4] = {p[2], p[0], p[2], p[0]};
    const char *bad[2] = {p[0], "nope"};
    const char *null[2] = {p[0], NULL};
    zkl_lock_kind_t mixed[2] = {ZKL_KIND_MUTEX, ZKL_KIND_READ};
    zkl_lock_kind_t rw[2] = {ZKL_KIND_READ, ZKL_KIND_WRITE};
    zkl_lock_kind_t lease[1] = {ZKL_KIND_LEASE};
    const char *same[2] = {p[1], p[1]};
    zkl_multi_t *x = (zkl_multi_t *)1;
    static t_multi_t t;

    ASSERT_RC(zkl_multi_new(NULL, c, p, NULL, 1, t_multi_cb, &t),
              ZKL_EINVAL);
    ASSERT_RC(zkl_multi_new(&x, NULL, p, NULL, 1, t_multi_cb, &t),
              ZKL_EINVAL);
    ASSERT(x == NULL);
    ASSERT_RC(zkl_multi_new(&x, c, NULL, NULL, 1, t_multi_cb, &t),
              ZKL_EINVAL);
    ASSERT_RC(zkl_multi_new(&x, c, p, NULL, 0, t_multi_cb, &t), ZKL_EINVAL);
    ASSERT_RC(zkl_multi_new(&x, c, p, NULL, ZKL_MULTI_MAX + 1, t_multi_cb,
                            &t),
              ZKL_EINVAL);
    ASSERT_RC(zkl_multi_new(&x, c, p, NULL, 1, NULL, &t), ZKL_EINVAL);
    ASSERT_RC(zkl_multi_new(&x, c, bad, NULL, 2, t_multi_cb, &t),
              ZKL_EBADPATH);
    ASSERT_RC(zkl_multi_new(&x, c, null, NULL, 2, t_multi_cb, &t),
              ZKL_EINVAL);
    ASSERT_RC(zkl_multi_new(&x, c, same, mixed, 2, t_multi_cb, &t),
              ZKL_EINVAL);
    ASSERT_RC(zkl_multi_new(&x, c, p, lease, 1, t_multi_cb, &t),
              ZKL_EINVAL);
    ASSERT(x == NULL);
    /* Folding: a read and a write of one path are its write. */
    ASSERT_RC(zkl_multi_new(&x, c, same, rw, 2, t_multi_cb, &t), ZKL_OK);
    ASSERT_EQ(zkl_multi_size(x), 1);
    ASSERT_EQ(zkl_lock_kind(zkl_multi_lock(x, 0)), ZKL_KIND_WRITE);
    zkl_multi_free(x);
    /* Duplicates fold; members come in path order. */
    memset(&t, 0, sizeof t);
    ASSERT_RC(zkl_multi_new(&t.m, c, dup, NULL, 4, t_multi_cb, &t), ZKL_OK);
    ASSERT_EQ(zkl_multi_size(t.m), 2);
    ASSERT_EQ(zkl_multi_size(NULL), 0);
    ASSERT_STR(zkl_lock_path(zkl_multi_lock(t.m, 0)), p[0]);
    ASSERT_STR(zkl_lock_path(zkl_multi_lock(t.m, 1)), p[2]);
    ASSERT(zkl_multi_lock(t.m, 2) == NULL);
    ASSERT(zkl_multi_lock(NULL, 0) == NULL);
    ASSERT_RC(zkl_multi_release(t.m), ZKL_ENOTHELD);
    ASSERT_RC(zkl_multi_cancel(t.m), ZKL_ENOTPENDING);
    ASSERT_RC(zkl_multi_acquire(NULL, -1), ZKL_EINVAL);
    ASSERT_RC(zkl_multi_release(NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_multi_cancel(NULL), ZKL_EINVAL);
    ASSERT(!zkl_multi_is_held(NULL));
    ASSERT_RC(zkl_multi_acquire(t.m, -1), ZKL_OK);
    ASSERT_RC(zkl_multi_acquire(t.m, -1), ZKL_EBUSY);
    ASSERT_RC(zkl_multi_release(t.m), ZKL_ENOTHELD);
    ASSERT_EQ(t.n, 0); /* never inside a call */
    ASSERT(t_run_until(&t.acquired, 5000));
    ASSERT_RC(zkl_multi_acquire(t.m, -1), ZKL_EHELD);
    ASSERT_RC(zkl_multi_cancel(t.m), ZKL_ENOTPENDING);
    ASSERT_RC(zkl_multi_release(t.m), ZKL_OK);
    ASSERT_RC(zkl_multi_release(t.m), ZKL_ENOTHELD); /* double release */
    ASSERT(t_run_until(&t.released, 5000));
    ASSERT_RC(t.last_status, ZKL_OK);
    ASSERT_EQ(t_zk_count(p[0]) + t_zk_count(p[2]), 0);
    zkl_multi_free(t.m);
    zkl_multi_free(NULL);
    zkl_client_free(c);
}

/* A free set: every member's node, one ACQUIRED; tokens per member;
 * three requests per member once the paths exist. */
TEST(multi_free_set)
{
    t_conn_t conn;
    zkl_client_t *c = t_client(t_hosts(), 4000, &conn);
    const char **p = paths_of(10, "f");
    static t_multi_t t;
    zkl_stats_t s0, s1;
    size_t i;
    int round;

    t_multi_init(&t, c, p, 10);
    for (round = 1; round <= 2; round++) {
        ASSERT_RC(zkl_client_stats(c, &s0, sizeof s0), ZKL_OK);
        ASSERT_RC(zkl_multi_acquire(t.m, 5000), ZKL_OK);
        ASSERT(WAIT_FOR(t.acquired == round, 5000));
        t_run_for(100); /* the own-node watches, sent after callbacks */
        ASSERT_RC(zkl_client_stats(c, &s1, sizeof s1), ZKL_OK);
        /* Per member: the create, the listing behind it, and the read
         * that watches the node once held. */
        if (round == 2)
            ASSERT_EQ(s1.requests - s0.requests, 30);
        for (i = 0; i < 10; i++) {
            uint64_t tok;

            ASSERT_EQ(t_zk_count(p[i]), 1);
            ASSERT(zkl_lock_is_held(zkl_multi_lock(t.m, i)));
            ASSERT_RC(zkl_lock_token(zkl_multi_lock(t.m, i), &tok), ZKL_OK);
        }
        ASSERT_RC(zkl_multi_release(t.m), ZKL_OK);
        ASSERT(!zkl_multi_is_held(t.m));
        ASSERT(WAIT_FOR(t.released == round, 5000));
        for (i = 0; i < 10; i++)
            ASSERT_EQ(t_zk_count(p[i]), 0);
    }
    ASSERT_EQ(t.n, 4);
    ASSERT_EQ(zkl_client_pending(c), 0);
    zkl_multi_free(t.m);
    zkl_client_free(c);
}

/* One member held elsewhere: the set keeps the members before it, gives
 * back those after it, waits there, and takes the rest once it is
 * free. */
TEST(multi_waits_holding_only_a_prefix)
{
    t_conn_t c1, c2;
    zkl_client_t *c = t_client(t_hosts(), 4000, &c1);
    zkl_client_t *o = t_client(t_hosts(), 4000, &c2);
    const char **p = paths_of(4, "w");
    const char *rev[4] = {p[3], p[1], p[2], p[0]};
    static t_multi_t t;
    static t_lock_t other;

    t_lock_init(&other, o, p[2]);
    ASSERT_RC(zkl_lock_acquire(other.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&other.acquired, 5000));
    t_multi_init(&t, c, rev, 4);
    ASSERT_RC(zkl_multi_acquire(t.m, -1), ZKL_OK);
    ASSERT(WAIT_FOR(zkl_lock_is_held(zkl_multi_lock(t.m, 1)) &&
                        t_zk_count(p[2]) == 2 && t_zk_count(p[3]) == 0,
                    5000));
    t_run_for(300);
    ASSERT(zkl_lock_is_held(zkl_multi_lock(t.m, 0)));
    ASSERT(zkl_lock_is_held(zkl_multi_lock(t.m, 1)));
    ASSERT_EQ(zkl_lock_state(zkl_multi_lock(t.m, 2)), ZKL_STATE_QUEUED);
    ASSERT_EQ(zkl_lock_state(zkl_multi_lock(t.m, 3)), ZKL_STATE_IDLE);
    ASSERT_EQ(t_zk_count(p[3]), 0);
    ASSERT_EQ(t.n, 0);
    ASSERT_RC(zkl_lock_release(other.lk), ZKL_OK);
    ASSERT(t_run_until(&t.acquired, 5000));
    ASSERT_EQ(t_zk_count(p[0]) + t_zk_count(p[1]) + t_zk_count(p[2]) +
                  t_zk_count(p[3]),
              4);
    /* A try-lock on a taken set: ELOCKED, nothing kept. */
    ASSERT_RC(zkl_lock_acquire(other.lk, -1), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(p[2], 2, 5000), 2);
    ASSERT_RC(zkl_multi_release(t.m), ZKL_OK);
    ASSERT(t_run_until(&t.released, 5000));
    ASSERT(WAIT_FOR(other.acquired == 2, 5000));
    ASSERT_RC(zkl_multi_acquire(t.m, 0), ZKL_OK);
    ASSERT(t_run_until(&t.failed, 5000));
    ASSERT_RC(t.last_status, ZKL_ELOCKED);
    ASSERT_EQ(t_zk_wait_count(p[0], 0, 5000), 0);
    ASSERT_EQ(t_zk_wait_count(p[1], 0, 5000), 0);
    ASSERT_EQ(t_zk_wait_count(p[2], 1, 5000), 1);
    ASSERT_EQ(t_zk_wait_count(p[3], 0, 5000), 0);
    /* A deadline: ETIMEDOUT, nothing kept. */
    ASSERT_RC(zkl_multi_acquire(t.m, 500), ZKL_OK);
    ASSERT(WAIT_FOR(t.failed == 2, 5000));
    ASSERT_RC(t.last_status, ZKL_ETIMEDOUT);
    ASSERT_EQ(t_zk_wait_count(p[1], 0, 5000), 0);
    ASSERT_EQ(t_zk_wait_count(p[2], 1, 5000), 1);
    /* Cancel while waiting: ECANCELED, nothing kept. */
    ASSERT_RC(zkl_multi_acquire(t.m, -1), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(p[2], 2, 5000), 2);
    ASSERT_RC(zkl_multi_cancel(t.m), ZKL_OK);
    ASSERT_RC(zkl_multi_cancel(t.m), ZKL_ENOTPENDING);
    ASSERT(WAIT_FOR(t.failed == 3, 5000));
    ASSERT_RC(t.last_status, ZKL_ECANCELED);
    ASSERT_EQ(t_zk_wait_count(p[0], 0, 5000), 0);
    ASSERT_EQ(t_zk_wait_count(p[2], 1, 5000), 1);
    ASSERT_RC(zkl_lock_release(other.lk), ZKL_OK);
    ASSERT(WAIT_FOR(other.released == 2, 5000));
    ASSERT(WAIT_FOR(zkl_client_pending(c) == 0, 5000));
    ASSERT_EQ(t_zk_count(p[2]), 0);
    zkl_multi_free(t.m);
    zkl_lock_free(other.lk);
    zkl_client_free(c);
    zkl_client_free(o);
}

/* A member's node deleted by someone else: the set is LOST, and the
 * other members are kept (the caller may still be at work under them)
 * until it releases or acquires anew. */
TEST(multi_lost_member_keeps_the_rest)
{
    t_conn_t conn;
    zkl_client_t *c = t_client(t_hosts(), 4000, &conn);
    const char **p = paths_of(3, "l");
    static t_multi_t t;

    t_multi_init(&t, c, p, 3);
    ASSERT_RC(zkl_multi_acquire(t.m, -1), ZKL_OK);
    ASSERT(t_run_until(&t.acquired, 5000));
    t_run_for(100); /* own-node watches */
    ASSERT_EQ(t_zk_delete_node(zkl_multi_lock(t.m, 1)), 0);
    ASSERT(t_run_until(&t.lost, 5000));
    ASSERT_RC(t.last_status, ZKL_ENODEGONE);
    ASSERT(!zkl_multi_is_held(t.m));
    t_run_for(300);
    ASSERT_EQ(t_zk_count(p[0]), 1);
    ASSERT_EQ(t_zk_count(p[1]), 0);
    ASSERT_EQ(t_zk_count(p[2]), 1);
    ASSERT_RC(zkl_multi_cancel(t.m), ZKL_ENOTPENDING);
    /* Release gives the rest back. */
    ASSERT_RC(zkl_multi_release(t.m), ZKL_OK);
    ASSERT_RC(zkl_multi_release(t.m), ZKL_ENOTHELD);
    ASSERT(t_run_until(&t.released, 5000));
    ASSERT_EQ(t_zk_count(p[0]) + t_zk_count(p[2]), 0);
    /* Lost again, then taken anew without a release in between: the
     * members kept count, the lost one is taken again. */
    ASSERT_RC(zkl_multi_acquire(t.m, -1), ZKL_OK);
    ASSERT(WAIT_FOR(t.acquired == 2, 5000));
    t_run_for(100);
    ASSERT_EQ(t_zk_delete_node(zkl_multi_lock(t.m, 0)), 0);
    ASSERT(WAIT_FOR(t.lost == 2, 5000));
    ASSERT_RC(zkl_multi_acquire(t.m, -1), ZKL_OK);
    ASSERT(WAIT_FOR(t.acquired == 3, 5000));
    ASSERT_EQ(t_zk_count(p[0]) + t_zk_count(p[1]) + t_zk_count(p[2]), 3);
    ASSERT_RC(zkl_multi_release(t.m), ZKL_OK);
    ASSERT(WAIT_FOR(t.released == 2, 5000));
    ASSERT_EQ(t.n, 7); /* no RELEASED for a lost hold, nothing else */
    ASSERT_EQ(t_zk_wait_count(p[1], 0, 5000), 0);
    ASSERT_EQ(t_zk_count(p[0]) + t_zk_count(p[2]), 0);
    zkl_multi_free(t.m);
    zkl_client_free(c);
}

/* A set learns of its members through their callbacks, but what it
 * says now follows the members: once a member's hold is known over, the
 * set reads not held, refuses a guarded write and a release (its LOST
 * is on the way; release after it) and answers an acquire EBUSY, even
 * from a callback that runs before the set's LOST. The process starves
 * past most of the session, so every hold is found lost in one pass:
 * the plain lock's LOST runs before the set's, which its member's LOST
 * queues behind it. */
static t_multi_t starved_set;
static int starved_seen, starved_held = -1, starved_members = -1,
           starved_write = 1, starved_release = 1, starved_acquire = 1;

static void starved_wcb(zkl_client_t *c, int status,
                        const zkl_op_result_t *r, size_t n, void *arg)
{
    (void)c, (void)status, (void)r, (void)n, (void)arg;
    FAILF("a guarded write refused at the call was answered");
}

static void starved_lock_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                            void *arg)
{
    zkl_op_t op = {ZKL_OP_CHECK, NULL, NULL, 0, 0, -1};
    zkl_multi_t *m = starved_set.m;

    (void)status;
    t_lock_cb(lk, ev, status, arg);
    if (ev != ZKL_LOCK_LOST)
        return;
    starved_seen = starved_set.lost == 0;
    op.path = zkl_lock_path(zkl_multi_lock(m, 0));
    starved_members = zkl_lock_is_held(zkl_multi_lock(m, 0)) +
                      zkl_lock_is_held(zkl_multi_lock(m, 1));
    starved_held = zkl_multi_is_held(m);
    starved_write = zkl_multi_write(m, &op, 1, starved_wcb, NULL);
    starved_release = zkl_multi_release(m);
    starved_acquire = zkl_multi_acquire(m, -1);
}

static void starved_round(int lock_first)
{
    zkl_client_t *c = t_client(t_hosts(), 4000, NULL);
    const char **p = paths_of(3, lock_first ? "t" : "s");
    static t_lock_t l;
    int k;

    memset(&l, 0, sizeof l);
    starved_seen = 0;
    starved_held = starved_members = -1;
    starved_write = starved_release = starved_acquire = 1;
    ASSERT_RC(zkl_lock_new(&l.lk, c, p[2], starved_lock_cb, &l), ZKL_OK);
    t_multi_init(&starved_set, c, p, 2);
    if (lock_first) {
        ASSERT_RC(zkl_lock_acquire(l.lk, -1), ZKL_OK);
        ASSERT(t_run_until(&l.acquired, 5000));
    }
    ASSERT_RC(zkl_multi_acquire(starved_set.m, -1), ZKL_OK);
    ASSERT(t_run_until(&starved_set.acquired, 5000));
    if (!lock_first) {
        ASSERT_RC(zkl_lock_acquire(l.lk, -1), ZKL_OK);
        ASSERT(t_run_until(&l.acquired, 5000));
    }
    t_run_for(300);
    t_sleep_ms(3750); /* starved: every hold is presumed lost next pass */
    ASSERT(t_run_until(&starved_set.lost, 5000));
    ASSERT(l.lost == 1);
    ASSERT(starved_seen); /* the lock's LOST came first */
    ASSERT_EQ(starved_members, 0);
    ASSERT_EQ(starved_held, 0);
    ASSERT_RC(starved_write, ZKL_ENOTHELD);
    ASSERT_RC(starved_release, ZKL_ENOTHELD);
    ASSERT_RC(starved_acquire, ZKL_EBUSY);
    /* ACQUIRED, a SUSPENDED when the starved connection was found
     * lost first (under valgrind), then LOST: presumed expired, or the
     * server expired the session first and a member's node was seen
     * gone. */
    k = starved_set.n - 1;
    ASSERT(k == 1 || k == 2);
    ASSERT_EQ(starved_set.ev[0], ZKL_LOCK_ACQUIRED);
    ASSERT(k == 1 || starved_set.ev[1] == ZKL_LOCK_SUSPENDED);
    ASSERT_EQ(starved_set.ev[k], ZKL_LOCK_LOST);
    ASSERT(starved_set.st[k] == ZKL_ESESSION ||
           starved_set.st[k] == ZKL_ENODEGONE);
    /* After the LOST, the release lets go of whatever was kept. */
    ASSERT_RC(zkl_multi_release(starved_set.m), ZKL_OK);
    ASSERT(t_run_until(&starved_set.released, 10000));
    ASSERT_EQ(starved_set.n, k + 2);
    ASSERT_EQ(t_zk_wait_count(p[0], 0, 10000), 0);
    ASSERT_EQ(t_zk_wait_count(p[1], 0, 10000), 0);
    ASSERT_EQ(t_zk_wait_count(p[2], 0, 10000), 0);
    zkl_multi_free(starved_set.m);
    zkl_lock_free(l.lk);
    zkl_client_free(c);
}

/* Both orders: the set's members found lost after the lock (the lock's
 * LOST runs while a member's is queued: the set still MG_HOLD), and
 * before it (the members' LOSTs have run, the set's own LOST is queued
 * behind the lock's). */
TEST(multi_lost_reads_not_held_before_its_lost)
{
    starved_round(0);
    starved_round(1);
}

/* Freeing the client under a waiting set and a held one: each is
 * answered once, ECLOSED; freeing a set in its own callback is safe. */
static void free_on_acquired(zkl_multi_t *m, zkl_lock_event_t ev,
                             int status, void *arg)
{
    int *done = arg;

    (void)status;
    if (ev == ZKL_LOCK_ACQUIRED) {
        zkl_multi_free(m);
        *done = 1;
    }
}

TEST(multi_free_in_callback_and_client_free)
{
    t_conn_t conn;
    zkl_client_t *c = t_client(t_hosts(), 4000, &conn);
    const char **p = paths_of(3, "x");
    static t_multi_t held, waiting;
    static int freed;
    zkl_multi_t *m;

    ASSERT_RC(zkl_multi_new(&m, c, p, NULL, 3, free_on_acquired, &freed),
              ZKL_OK);
    ASSERT_RC(zkl_multi_acquire(m, -1), ZKL_OK);
    ASSERT(t_run_until(&freed, 5000));
    ASSERT_EQ(t_zk_wait_count(p[0], 0, 5000), 0);
    ASSERT_EQ(t_zk_wait_count(p[2], 0, 5000), 0);
    t_multi_init(&held, c, p, 2);
    t_multi_init(&waiting, c, p + 1, 2);
    ASSERT_RC(zkl_multi_acquire(held.m, -1), ZKL_OK);
    ASSERT(t_run_until(&held.acquired, 5000));
    ASSERT_RC(zkl_multi_acquire(waiting.m, -1), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(p[1], 2, 5000), 2);
    zkl_client_free(c);
    ASSERT_EQ(held.lost, 1);
    ASSERT_RC(held.last_status, ZKL_ECLOSED);
    ASSERT_EQ(waiting.failed, 1);
    ASSERT_RC(waiting.last_status, ZKL_ECLOSED);
    ASSERT_EQ(held.n + waiting.n, 3);
    ASSERT_RC(zkl_multi_acquire(held.m, -1), ZKL_ECLOSED);
    ASSERT(!zkl_multi_is_held(held.m));
    zkl_multi_free(held.m);
    zkl_multi_free(waiting.m);
    ASSERT_EQ(t_zk_wait_count(p[1], 0, 5000), 0);
}

/* ---- Crossed sets: the interleavings that deadlock lock-by-lock ---- */

#define CROSS_MAX 3
#define CROSS_DEADLINE_MS 10000

/* One caller: a set taken and given back round after round, through its
 * own proxy with its own latency, so that the callers' creates reach the
 * server interleaved in ever other ways. */
struct crosser {
    zkl_multi_t *m;
    int rounds, target, holding, waiting, lost;
    int members[2]; /* indexes into occupancy[] */
    uint64_t until; /* holding: release then; idle: acquire then */
};

static int occupancy[CROSS_MAX];
static int overlaps;

static uint64_t soon(void)
{
    return t_now_ms() + (uint64_t)(rand() % 5);
}

static void cross_cb(zkl_multi_t *m, zkl_lock_event_t ev, int status,
                     void *arg)
{
    struct crosser *x = arg;
    int i;

    (void)m;
    switch (ev) {
    case ZKL_LOCK_ACQUIRED:
        for (i = 0; i < 2; i++)
            if (++occupancy[x->members[i]] > 1)
                overlaps++;
        x->holding = 1;
        x->waiting = 0;
        x->until = soon();
        break;
    case ZKL_LOCK_RELEASED:
        x->rounds++;
        x->until = soon();
        break;
    case ZKL_LOCK_LOST:
        /* Under faults a hold may end; count it and go on. */
        for (i = 0; i < 2; i++)
            occupancy[x->members[i]]--;
        x->holding = 0;
        x->lost++;
        x->rounds++;
        x->until = soon();
        break;
    case ZKL_LOCK_FAILED:
        FAILF("round %d failed: %s (a deadlock times out)", x->rounds,
              zkl_err_name(status));
        break;
    default:
        break;
    }
}

/* Gives back the sets held long enough, starts the next rounds. */
static int cross_poll(struct crosser *xs, int n)
{
    uint64_t now = t_now_ms();
    int i, j, done = 1;

    for (i = 0; i < n; i++) {
        struct crosser *x = &xs[i];

        if (x->holding && now >= x->until) {
            for (j = 0; j < 2; j++)
                occupancy[x->members[j]]--;
            x->holding = 0;
            x->until = UINT64_MAX; /* until RELEASED */
            ASSERT_RC(zkl_multi_release(x->m), ZKL_OK);
        } else if (!x->holding && !x->waiting && now >= x->until &&
                   x->rounds < x->target) {
            x->waiting = 1;
            ASSERT_RC(zkl_multi_acquire(x->m, CROSS_DEADLINE_MS), ZKL_OK);
        }
        if (x->rounds < x->target)
            done = 0;
    }
    return done;
}

/* n callers, caller i on locks sets[i] (indexes of paths, named in that
 * order), rounds rounds each; with faults, caller 0's connection breaks
 * now and then. */
static void run_crossed(int n, const int sets[][2], int rounds, int faults)
{
    static const int latency[CROSS_MAX] = {0, 3, 7};
    const char **p = paths_of(CROSS_MAX, "c");
    static struct crosser xs[CROSS_MAX];
    zkl_client_t *cl[CROSS_MAX];
    t_conn_t conn[CROSS_MAX];
    fp_t *fp[CROSS_MAX];
    uint64_t next_fault = t_now_ms() + 200, end;
    int i, nfaults = 0;

    srand((unsigned)getpid());
    memset(occupancy, 0, sizeof occupancy);
    overlaps = 0;
    for (i = 0; i < n; i++) {
        const char *mine[2] = {p[sets[i][0]], p[sets[i][1]]};

        ASSERT((fp[i] = fp_new(t_base, t_port())) != NULL);
        fp_latency(fp[i], latency[i]);
        memset(&xs[i], 0, sizeof xs[i]);
        cl[i] = t_client(fp_hosts(fp[i]), 8000, &conn[i]);
        xs[i].members[0] = sets[i][0];
        xs[i].members[1] = sets[i][1];
        xs[i].target = rounds;
        ASSERT_RC(zkl_multi_new(&xs[i].m, cl[i], mine, NULL, 2, cross_cb,
                                &xs[i]),
                  ZKL_OK);
    }
    end = t_now_ms() + 300000;
    while (!cross_poll(xs, n) && t_now_ms() < end) {
        t_tick();
        ASSERT_EQ(overlaps, 0);
        if (faults && t_now_ms() >= next_fault) {
            if (nfaults % 2 == 0)
                fp_cut(fp[0]);
            else
                fp_lose_next_reply(fp[0], 50);
            nfaults++;
            next_fault = t_now_ms() + 300 + (uint64_t)(rand() % 400);
        }
    }
    for (i = 0; i < n; i++)
        ASSERT_EQ(xs[i].rounds, rounds);
    ASSERT_EQ(overlaps, 0);
    fprintf(stderr, "crossed: %d callers, %d rounds each, %d faults, "
                    "%d holds lost\n",
            n, rounds, nfaults, xs[0].lost);
    if (faults)
        ASSERT(nfaults >= 3);
    for (i = 0; i < n; i++) {
        ASSERT(WAIT_FOR(zkl_client_pending(cl[i]) == 0, 10000));
        zkl_multi_free(xs[i].m);
        zkl_client_free(cl[i]);
        fp_free(fp[i]);
    }
    for (i = 0; i < CROSS_MAX; i++)
        ASSERT_EQ(t_zk_wait_count(p[i], 0, 10000), 0);
}

TEST(multi_two_crossed_callers)
{
    static const int sets[2][2] = {{0, 1}, {1, 0}};

    run_crossed(2, sets, 150, 0);
}

TEST(multi_three_callers_in_a_cycle)
{
    static const int sets[3][2] = {{0, 1}, {1, 2}, {2, 0}};

    run_crossed(3, sets, 100, 0);
}

TEST(multi_crossed_callers_under_faults)
{
    static const int sets[3][2] = {{0, 1}, {1, 2}, {2, 0}};

    run_crossed(3, sets, 100, 1);
}

/* Freeing the client while a set's release is under way answers it, once,
 * RELEASED / ECLOSED; likewise a set waiting for a member it gave back. */
TEST(multi_release_then_client_free)
{
    t_conn_t conn;
    zkl_client_t *c = t_client(t_hosts(), 4000, &conn);
    const char **p = paths_of(3, "r");
    static t_multi_t t;

    t_multi_init(&t, c, p, 3);
    ASSERT_RC(zkl_multi_acquire(t.m, -1), ZKL_OK);
    ASSERT(t_run_until(&t.acquired, 5000));
    ASSERT_RC(zkl_multi_release(t.m), ZKL_OK);
    zkl_client_free(c);
    ASSERT_EQ(t.released, 1);
    ASSERT_RC(t.last_status, ZKL_ECLOSED);
    ASSERT_EQ(t.n, 2);
    t_run_for(100);
    ASSERT_EQ(t.n, 2);
    zkl_multi_free(t.m);
    ASSERT_EQ(t_zk_wait_count(p[0], 0, 5000), 0);
}

/* A set cancelled and started again from a callback while one of its
 * members' ending (here its own timeout) is still queued: that old
 * ending must not end the new acquire. */
static t_multi_t again;
static int again_phase;

static void cancel_and_again(zkl_lock_t *lk, zkl_lock_event_t ev,
                             int status, void *arg)
{
    t_lock_cb(lk, ev, status, arg);
    if (ev == ZKL_LOCK_FAILED && again_phase == 1) {
        again_phase = 2;
        zkl_multi_cancel(again.m); /* it may have failed already */
        ASSERT_RC(zkl_multi_acquire(again.m, 60000), ZKL_OK);
    }
}

TEST(multi_stale_member_ending_after_cancel)
{
    t_conn_t c1, c2;
    zkl_client_t *c = t_client(t_hosts(), 4000, &c1);
    zkl_client_t *o = t_client(t_hosts(), 4000, &c2);
    const char **p = paths_of(3, "s");
    static t_lock_t hold_b, hold_y, x;

    t_lock_init(&hold_b, o, p[1]);
    t_lock_init(&hold_y, o, p[2]);
    ASSERT_RC(zkl_lock_acquire(hold_b.lk, -1), ZKL_OK);
    ASSERT_RC(zkl_lock_acquire(hold_y.lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(hold_b.acquired && hold_y.acquired, 5000));
    memset(&x, 0, sizeof x);
    ASSERT_RC(zkl_lock_new(&x.lk, c, p[2], cancel_and_again, &x), ZKL_OK);
    t_multi_init(&again, c, p, 2);
    again_phase = 1;
    ASSERT_RC(zkl_lock_acquire(x.lk, 1500), ZKL_OK);
    ASSERT_RC(zkl_multi_acquire(again.m, 1500), ZKL_OK);
    ASSERT(WAIT_FOR(again_phase == 2, 5000));
    /* The first acquire's one answer (ETIMEDOUT, or ECANCELED)... */
    ASSERT(WAIT_FOR(again.failed == 1, 5000));
    ASSERT(again.last_status == ZKL_ETIMEDOUT ||
           again.last_status == ZKL_ECANCELED);
    /* ...and nothing for the new one, which waits for p[1]. */
    t_run_for(2000);
    ASSERT_EQ(again.failed, 1);
    ASSERT_EQ(again.acquired, 0);
    ASSERT_RC(zkl_lock_release(hold_b.lk), ZKL_OK);
    ASSERT(t_run_until(&again.acquired, 5000));
    ASSERT_EQ(again.failed, 1);
    ASSERT_RC(zkl_multi_release(again.m), ZKL_OK);
    ASSERT(t_run_until(&again.released, 5000));
    ASSERT_RC(zkl_lock_release(hold_y.lk), ZKL_OK);
    ASSERT(t_run_until(&hold_y.released, 5000));
    zkl_multi_free(again.m);
    zkl_lock_free(x.lk);
    zkl_lock_free(hold_b.lk);
    zkl_lock_free(hold_y.lk);
    zkl_client_free(c);
    zkl_client_free(o);
    ASSERT_EQ(t_zk_wait_count(p[0], 0, 5000), 0);
    ASSERT_EQ(t_zk_wait_count(p[1], 0, 5000), 0);
}
