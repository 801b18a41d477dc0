/* Requests the ZooKeeper client calls refused (ZMARSHALLINGERROR) after
 * it had queued their completions (see lib/fence.c): the completion
 * still runs, into a record the caller must not have freed. Here the
 * interposed call (test/interpose.c) queues and sends the request for
 * real and says ZMARSHALLINGERROR all the same; on a build that frees
 * its record at that answer, each of these tests runs a completion on
 * freed memory (AddressSanitizer reports it; the plain build crashes or
 * answers twice). Each asserts one answer per call, the request's
 * effect, the client's fence count, and no node left. */
#include "common.h"
#include "harness.h"
#include "faultproxy.h"
#include "interpose.h"

#include <zookeeper/zookeeper.h>

#define SESSION_MS 10000

static void expect_fences(zkl_client_t *c, uint64_t n)
{
    ASSERT_EQ(t_stats(c).fences, n);
}

/* The create of an acquire: its completion still tells the node, and
 * the listing that was to follow it in the same step goes after. */
TEST(fence_create_completion_still_runs)
{
    zkl_client_t *c = t_client(t_hosts(), SESSION_MS, NULL);
    const char *p = t_path(NULL);
    t_lock_t a;

    t_lock_init(&a, c, p);
    t_lock_cycle(&a);
    t_maybe_next("zoo_acreate2");
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(a.acquired == 2, 5000));
    ASSERT_EQ(t_maybes(), 1);
    expect_fences(c, 1);
    ASSERT_EQ(a.failed, 0);
    ASSERT_EQ(t_zk_count(p), 1);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(WAIT_FOR(a.released == 2, 5000));
    ASSERT_EQ(a.n, 4);
    ASSERT_EQ(t_zk_count(p), 0);
    ASSERT(WAIT_FOR(zkl_client_pending(c) == 0, 5000));
    zkl_lock_free(a.lk);
    zkl_client_free(c);
}

/* A pass's shared listing (listing.c): its attempts learn their place
 * from the completion that still comes. */
TEST(fence_listing_completion_still_runs)
{
    zkl_client_t *c = t_client(t_hosts(), SESSION_MS, NULL);
    const char *p = t_path(NULL);
    t_lock_t a, b;

    t_lock_init(&a, c, p);
    t_lock_init(&b, c, p);
    t_lock_cycle(&a);
    t_maybe_next("zoo_aget_children2");
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT_RC(zkl_lock_acquire(b.lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(a.acquired == 2, 5000));
    ASSERT_EQ(t_maybes(), 1);
    expect_fences(c, 1);
    /* b's create waited for the barrier (requests are held meanwhile). */
    ASSERT_EQ(t_zk_wait_count(p, 2, 5000), 2);
    ASSERT_EQ(b.acquired, 0);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(t_run_until(&b.acquired, 5000));
    ASSERT_RC(zkl_lock_release(b.lk), ZKL_OK);
    ASSERT(t_run_until(&b.released, 5000));
    ASSERT_EQ(a.failed + b.failed, 0);
    ASSERT_EQ(t_zk_count(p), 0);
    ASSERT(WAIT_FOR(zkl_client_pending(c) == 0, 5000));
    zkl_lock_free(a.lk);
    zkl_lock_free(b.lk);
    zkl_client_free(c);
}

/* A release's delete: applied, and RELEASED once, with 0. */
TEST(fence_delete_completion_still_runs)
{
    zkl_client_t *c = t_client(t_hosts(), SESSION_MS, NULL);
    const char *p = t_path(NULL);
    t_lock_t a;

    t_lock_init(&a, c, p);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    t_maybe_next("zoo_adelete");
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(t_run_until(&a.released, 5000));
    ASSERT_EQ(t_maybes(), 1);
    ASSERT_RC(a.last_status, ZKL_OK);
    t_run_for(200);
    ASSERT_EQ(a.released, 1);
    ASSERT_EQ(a.n, 2);
    expect_fences(c, 1);
    ASSERT_EQ(t_zk_count(p), 0);
    ASSERT(WAIT_FOR(zkl_client_pending(c) == 0, 5000));
    zkl_lock_free(a.lk);
    zkl_client_free(c);
}

/* A waiter's watch on its predecessor, a node of another process's (so
 * no watchless wait on an attempt of ours): the watch was set, and the
 * waiter holds once that node goes. */
TEST(fence_pred_watch_completion_still_runs)
{
    zkl_client_t *c = t_client(t_hosts(), SESSION_MS, NULL);
    const char *p = t_path(NULL);
    char other[600];
    t_lock_t a;

    t_lock_init(&a, c, p);
    t_lock_cycle(&a);
    /* A contender of another client library: Curator's name for a
     * mutex node, made by the test's own session. */
    snprintf(other, sizeof other,
             "%s/_c_00000000-0000-0000-0000-000000000000-lock-0000000000",
             p);
    ASSERT_EQ(t_zk_create_as(NULL, other, 0), 0);
    t_maybe_next("zoo_awget");
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(t_maybes() == 1, 5000));
    t_run_for(300);
    expect_fences(c, 1);
    ASSERT_EQ(a.acquired, 1);
    ASSERT_EQ(t_zk_delete(other), 0);
    ASSERT(WAIT_FOR(a.acquired == 2, 5000));
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(WAIT_FOR(a.released == 2, 5000));
    ASSERT_EQ(a.failed, 0);
    ASSERT_EQ(t_zk_count(p), 0);
    ASSERT(WAIT_FOR(zkl_client_pending(c) == 0, 5000));
    zkl_lock_free(a.lk);
    zkl_client_free(c);
}

static void pair_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                    void *arg)
{
    t_lock_t *two = arg;

    t_lock_cb(lk, ev, status, &two[zkl_lock_kind(lk) == ZKL_KIND_WRITE]);
}

/* A downgrade's multi: the read node is made in the write node's place
 * and the read side holds. */
TEST(fence_downgrade_completion_still_runs)
{
    zkl_client_t *c = t_client(t_hosts(), SESSION_MS, NULL);
    const char *p = t_path(NULL);
    static t_lock_t two[2];
    t_lock_t *const r = &two[0], *const w = &two[1];
    zkl_lock_t *rl, *wl;

    memset(two, 0, sizeof two);
    ASSERT_RC(zkl_rwlock_new(&rl, &wl, c, p, pair_cb, two), ZKL_OK);
    r->lk = rl;
    w->lk = wl;
    ASSERT_RC(zkl_lock_acquire(wl, -1), ZKL_OK);
    ASSERT(t_run_until(&w->acquired, 5000));
    t_maybe_next("zoo_amulti");
    ASSERT_RC(zkl_lock_acquire(rl, -1), ZKL_OK);
    ASSERT(t_run_until(&r->acquired, 5000));
    ASSERT_EQ(t_maybes(), 1);
    expect_fences(c, 1);
    ASSERT_EQ(t_zk_count(p), 2);
    ASSERT_RC(zkl_lock_release(wl), ZKL_OK);
    ASSERT(t_run_until(&w->released, 5000));
    ASSERT_RC(zkl_lock_release(rl), ZKL_OK);
    ASSERT(t_run_until(&r->released, 5000));
    ASSERT_EQ(r->failed + w->failed, 0);
    ASSERT_EQ(t_zk_count(p), 0);
    ASSERT(WAIT_FOR(zkl_client_pending(c) == 0, 5000));
    zkl_lock_free(rl);
    zkl_lock_free(wl);
    zkl_client_free(c);
}

/* zkl_contenders(): the call is accepted and answered once, through its
 * callback, with ZKL_ENOMEM (the client could not tell it was sent). */
TEST(fence_contenders_answered_once)
{
    zkl_client_t *c = t_client(t_hosts(), SESSION_MS, NULL);
    const char *p = t_path(NULL);
    t_listing_t l;
    t_lock_t a;

    memset(&l, 0, sizeof l);
    t_lock_init(&a, c, p);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    t_maybe_next("zoo_aget_children2");
    ASSERT_RC(zkl_contenders(c, p, t_listing_cb, &l), ZKL_OK);
    ASSERT(t_run_until(&l.done, 5000));
    ASSERT_EQ(t_maybes(), 1);
    ASSERT_RC(l.status, ZKL_ENOMEM);
    t_run_for(200);
    ASSERT_EQ(l.done, 1);
    expect_fences(c, 1);
    /* Requests go again: the next one is answered in full. */
    memset(&l, 0, sizeof l);
    ASSERT_RC(zkl_contenders(c, p, t_listing_cb, &l), ZKL_OK);
    ASSERT(t_run_until(&l.done, 5000));
    ASSERT_RC(l.status, ZKL_OK);
    ASSERT_EQ(l.n, 1);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(t_run_until(&a.released, 5000));
    ASSERT_EQ(t_zk_count(p), 0);
    zkl_lock_free(a.lk);
    zkl_client_free(c);
}

/* A listing the client said it could not queue, and did not: the fence
 * is up when the client is freed. Closing the handle runs the barrier's
 * completion, the fence learns that the listing never went, and the
 * acquire that joined it has its one ending from the teardown, not a
 * second one from the unsent listing. */
TEST(fence_unsent_listing_at_client_free)
{
    zkl_client_t *c = t_client(t_hosts(), SESSION_MS, NULL);
    const char *p = t_path(NULL);
    t_lock_t a;

    t_lock_init(&a, c, p);
    t_lock_cycle(&a);
    t_refuse_next_list(ZMARSHALLINGERROR);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(t_stats(c).fences == 1, 5000));
    ASSERT_EQ(t_refusals(), 1);
    zkl_client_free(c); /* answers everything before returning */
    ASSERT_EQ(a.n, 3);
    ASSERT_EQ(a.failed, 1);
    ASSERT_EQ(a.acquired, 1);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    zkl_lock_free(a.lk);
}

static void t_write_done(zkl_client_t *c, int status,
                         const zkl_op_result_t *res, size_t n, void *arg)
{
    int *st = arg;

    (void)c;
    (void)res;
    (void)n;
    ASSERT_EQ(st[0], 0);
    st[0] = 1;
    st[1] = status;
}

/* A guarded write while another request's fate is unknown is refused at
 * the call (the batch would most likely meet the reset that settles
 * it, and end as "outcome unknown"), and goes through once the fence is
 * down. */
TEST(fence_holds_guarded_writes)
{
    zkl_client_t *c = t_client(t_hosts(), SESSION_MS, NULL);
    const char *p = t_path(NULL);
    char d[600];
    int w[2] = {0, 0}, taken = 0;
    t_lock_t a, b;
    zkl_op_t op;

    snprintf(d, sizeof d, "%s-data", p);
    memset(&op, 0, sizeof op);
    op.type = ZKL_OP_CREATE;
    op.path = d;
    t_lock_init(&a, c, p);
    t_lock_init(&b, c, p);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    t_maybe_next("zoo_acreate2");
    ASSERT_RC(zkl_lock_acquire(b.lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(t_stats(c).fences == 1, 5000));
    ASSERT_RC(zkl_lock_write(a.lk, &op, 1, t_write_done, w), ZKL_ENOMEM);
    /* Once the barrier is back, the same call is taken. */
    ASSERT(WAIT_FOR(taken || (taken = zkl_lock_write(a.lk, &op, 1,
                                                      t_write_done, w) ==
                                       ZKL_OK),
                    5000));
    ASSERT_EQ(t_stats(c).fences, 1);
    ASSERT(t_run_until(&w[0], 5000));
    ASSERT_RC(w[1], ZKL_OK);
    ASSERT_EQ(t_zk_data(d, NULL, 0), 0);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(t_run_until(&b.acquired, 5000));
    ASSERT_RC(zkl_lock_release(b.lk), ZKL_OK);
    ASSERT(t_run_until(&b.released, 5000));
    ASSERT_EQ(a.failed + b.failed, 0);
    ASSERT_EQ(t_zk_count(p), 0);
    zkl_lock_free(a.lk);
    zkl_lock_free(b.lk);
    zkl_client_free(c);
}

/* A fence whose barrier the client never manages to queue ends in a new
 * session (fence.c). The old handle is still connected then, and
 * zookeeper_close() of a connected handle polls for the server's answer
 * to the close: 1.5 s with a server that does not answer (here a proxy
 * that stalls), the loop stopped meanwhile. The socket is shut down
 * for reading first now, so that poll returns at once: no turn of the
 * loop comes near that; the hold is told LOST, the acquire goes on in
 * the new session, and the old session's nodes go at its timeout. The
 * session (10 s) is long enough that the client's own receive timeout
 * (2/3 of it) does not drop the stalled connection before the fence
 * gives up (its tokens last about 5 s). */
TEST(fence_given_up_without_blocking)
{
    fp_t *fp = fp_new(t_base, t_port());
    zkl_client_t *c;
    const char *p = t_path("a"), *q = t_path("b");
    uint64_t end, longest = 0;
    t_lock_t a, b;

    ASSERT(fp != NULL);
    c = t_client(fp_hosts(fp), 10000, NULL);
    t_lock_init(&a, c, p);
    t_lock_init(&b, c, q);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    t_maybe_next("zoo_acreate2"); /* b's create: of unknown fate */
    t_refuse_exists(ZMARSHALLINGERROR); /* ... and no barrier behind it */
    fp_stall(fp, 1);
    ASSERT_RC(zkl_lock_acquire(b.lk, -1), ZKL_OK);
    end = t_now_ms() + 8000;
    while (a.lost == 0 && t_now_ms() < end) {
        uint64_t t0 = t_now_ms();

        t_tick();
        if (t_now_ms() - t0 > longest)
            longest = t_now_ms() - t0;
    }
    ASSERT_EQ(t_maybes(), 1);
    ASSERT_EQ(a.lost, 1);
    ASSERT_RC(a.last_status, ZKL_ESESSION);
    ASSERT(longest < 1000); /* the blocking close took 1,500 */
    t_refuse_exists(0);
    fp_stall(fp, 0);
    ASSERT(WAIT_FOR(t_stats(c).sessions == 2 &&
                    zkl_client_state(c) == ZKL_CONN_CONNECTED, 5000));
    /* b's place: behind nothing of the new session; its node of the
     * old one (if the create got through) goes with that session. */
    ASSERT(t_run_until(&b.acquired, 20000));
    ASSERT_EQ(b.failed, 0);
    ASSERT_RC(zkl_lock_release(b.lk), ZKL_OK);
    ASSERT(t_run_until(&b.released, 5000));
    ASSERT_EQ(t_zk_wait_count(p, 0, 20000), 0);
    ASSERT_EQ(t_zk_wait_count(q, 0, 20000), 0);
    zkl_lock_free(a.lk);
    zkl_lock_free(b.lk);
    zkl_client_free(c);
    fp_free(fp);
}

/* The same with a server that answers: the close still reaches it, so
 * the old session and its nodes end at once, not at its timeout (10 s;
 * dropping the connection instead of closing it left the node 8.5 s),
 * and the acquire behind the fence holds in the new session. */
TEST(fence_given_up_closes_the_session)
{
    zkl_client_t *c = t_client(t_hosts(), 10000, NULL);
    const char *p = t_path("a"), *q = t_path("b");
    t_lock_t a, b;

    t_lock_init(&a, c, p);
    t_lock_init(&b, c, q);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    t_maybe_next("zoo_acreate2");
    t_refuse_exists(ZMARSHALLINGERROR);
    ASSERT_RC(zkl_lock_acquire(b.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.lost, 15000));
    ASSERT_RC(a.last_status, ZKL_ESESSION);
    t_refuse_exists(0);
    ASSERT_EQ(t_zk_wait_count(p, 0, 4000), 0);
    ASSERT(t_run_until(&b.acquired, 5000));
    ASSERT_EQ(t_stats(c).sessions, 2);
    ASSERT_EQ(t_zk_count(q), 1);
    ASSERT_RC(zkl_lock_release(b.lk), ZKL_OK);
    ASSERT(t_run_until(&b.released, 5000));
    ASSERT_EQ(t_zk_count(q), 0);
    zkl_lock_free(a.lk);
    zkl_lock_free(b.lk);
    zkl_client_free(c);
}
