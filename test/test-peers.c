/* Waiters queued right behind a node of another client of the same
 * thread (a process that spreads its waiters over several sessions):
 * such a waiter waits on that client's attempt, with no request and no
 * server watch, while that client is connected. It must still move on
 * whatever happens to the node before it: a release, a give-up, a
 * deletion by someone else, the other client's connection dropping, its
 * session expiring, the client being freed. */
#include "faultproxy.h"
#include "harness.h"

/* H holds on hc; then A queues on ac, then B on bc right behind A; the
 * requests B sent to queue. */
static uint64_t queue_three(t_lock_t *h, zkl_client_t *hc, t_lock_t *a,
                            zkl_client_t *ac, t_lock_t *b, zkl_client_t *bc,
                            const char *p)
{
    uint64_t r0;

    t_lock_init(h, hc, p);
    ASSERT_RC(zkl_lock_acquire(h->lk, -1), ZKL_OK);
    ASSERT(t_run_until(&h->acquired, 5000));
    t_lock_init(a, ac, p);
    t_lock_init(b, bc, p);
    ASSERT_RC(zkl_lock_acquire(a->lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(zkl_lock_state(a->lk) == ZKL_STATE_QUEUED, 5000));
    t_run_for(100); /* A's wait settled, its node known to its client */
    r0 = t_stats(bc).requests;
    ASSERT_RC(zkl_lock_acquire(b->lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(zkl_lock_state(b->lk) == ZKL_STATE_QUEUED, 5000));
    t_run_for(100);
    ASSERT_EQ(t_zk_count(p), 3);
    return t_stats(bc).requests - r0;
}

static void free_all(const char *p, t_lock_t *const *l, int nl,
                     zkl_client_t *const *c, int nc)
{
    int i;

    for (i = 0; i < nl; i++)
        zkl_lock_free(l[i]->lk);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    for (i = 0; i < nc; i++)
        zkl_client_free(c[i]);
}

TEST(peer_waiter_sends_no_watch)
{
    /* B's predecessor is A's node, of another client of this thread: B
     * sends its create and one listing, no watch; A's release hands the
     * lock to B. */
    zkl_client_t *hc = t_client(t_hosts(), 4000, NULL),
                 *ac = t_client(t_hosts(), 4000, NULL),
                 *bc = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    t_lock_t h, a, b;

    ASSERT_EQ(queue_three(&h, hc, &a, ac, &b, bc, p), 2);
    a.release_on_acquire = 1;
    b.release_on_acquire = 1;
    ASSERT_RC(zkl_lock_release(h.lk), ZKL_OK);
    ASSERT(t_run_until(&b.released, 5000));
    ASSERT_EQ(a.acquired, 1);
    ASSERT_EQ(b.acquired, 1);
    ASSERT(a.order < b.order);
    ASSERT_EQ(t_stats(bc).watch_events, 0);
    free_all(p, (t_lock_t *[]){&h, &a, &b}, 3,
             (zkl_client_t *[]){hc, ac, bc}, 3);
}

TEST(peer_waiter_predecessor_gives_up)
{
    /* A cancels: B, which waited on A's attempt, moves up behind H and
     * takes the lock only when H lets go. */
    zkl_client_t *hc = t_client(t_hosts(), 4000, NULL),
                 *ac = t_client(t_hosts(), 4000, NULL),
                 *bc = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    t_lock_t h, a, b;

    queue_three(&h, hc, &a, ac, &b, bc, p);
    b.release_on_acquire = 1;
    ASSERT_RC(zkl_lock_cancel(a.lk), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(p, 2, 5000), 2);
    t_run_for(300);
    ASSERT_EQ(zkl_lock_state(b.lk), ZKL_STATE_QUEUED);
    ASSERT(zkl_lock_is_held(h.lk));
    ASSERT_RC(zkl_lock_release(h.lk), ZKL_OK);
    ASSERT(t_run_until(&b.released, 5000));
    ASSERT_EQ(a.acquired, 0);
    ASSERT_EQ(b.acquired, 1);
    free_all(p, (t_lock_t *[]){&h, &a, &b}, 3,
             (zkl_client_t *[]){hc, ac, bc}, 3);
}

TEST(peer_waiter_holder_deleted_by_other)
{
    /* B waits on H, the node of a holder of another client of this
     * thread. Someone deletes H's node: H's own-node watch tells H's
     * client, H is told LOST, and B, which had no watch of its own, takes
     * the lock. */
    zkl_client_t *hc = t_client(t_hosts(), 4000, NULL),
                 *bc = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    t_lock_t h, b;
    uint64_t r0;

    t_lock_init(&h, hc, p);
    ASSERT_RC(zkl_lock_acquire(h.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&h.acquired, 5000));
    t_run_for(100); /* H's own-node watch is set */
    t_lock_init(&b, bc, p);
    r0 = t_stats(bc).requests;
    ASSERT_RC(zkl_lock_acquire(b.lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(zkl_lock_state(b.lk) == ZKL_STATE_QUEUED, 5000));
    t_run_for(100);
    ASSERT_EQ(t_stats(bc).requests - r0, 2); /* create, listing: no watch */
    ASSERT_EQ(t_zk_delete_node(h.lk), 0);
    ASSERT(t_run_until(&b.acquired, 5000));
    ASSERT(t_run_until(&h.lost, 5000));
    ASSERT_RC(zkl_lock_release(b.lk), ZKL_OK);
    ASSERT(t_run_until(&b.released, 5000));
    free_all(p, (t_lock_t *[]){&h, &b}, 2, (zkl_client_t *[]){hc, bc}, 2);
}

TEST(peer_waiter_predecessor_client_freed)
{
    /* A's client is freed while B waits on A's attempt: B lists again,
     * waits on for H, and takes the lock when H lets go. */
    zkl_client_t *hc = t_client(t_hosts(), 4000, NULL),
                 *ac = t_client(t_hosts(), 4000, NULL),
                 *bc = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    t_lock_t h, a, b;
    long l0;

    queue_three(&h, hc, &a, ac, &b, bc, p);
    l0 = (long)t_stats(bc).listings;
    zkl_client_free(ac);
    ASSERT_EQ(t_zk_wait_count(p, 2, 5000), 2);
    ASSERT(WAIT_FOR((long)t_stats(bc).listings > l0, 5000));
    t_run_for(300);
    ASSERT_EQ(b.acquired, 0);
    ASSERT_RC(zkl_lock_release(h.lk), ZKL_OK);
    ASSERT(t_run_until(&b.acquired, 5000));
    ASSERT_EQ(a.acquired, 0);
    ASSERT_RC(zkl_lock_release(b.lk), ZKL_OK);
    ASSERT(t_run_until(&b.released, 5000));
    free_all(p, (t_lock_t *[]){&h, &a, &b}, 3,
             (zkl_client_t *[]){hc, bc}, 2);
}

TEST(peer_waiter_predecessor_connection_drops)
{
    /* A and B reach the server through one proxy (one server list, so
     * their clients share what they know); H holds directly. A's
     * connection alone is reset: while it is down A's client could miss
     * the end of A's node, so B lists again at once (and watches A's
     * node if A's client is still away). Nothing is lost: A's session
     * survives, A takes the lock after H, then B. */
    fp_t *fp = fp_new(t_base, t_port());
    t_conn_t aconn;
    zkl_client_t *hc = t_client(t_hosts(), 4000, NULL), *ac, *bc;
    const char *p = t_path(NULL);
    t_lock_t h, a, b;
    t_listing_t cl = {0};
    long l0;

    ASSERT(fp != NULL);
    ac = t_client(fp_hosts(fp), 6000, &aconn);
    bc = t_client(fp_hosts(fp), 6000, NULL);
    ASSERT_EQ(queue_three(&h, hc, &a, ac, &b, bc, p), 2);
    a.release_on_acquire = 1;
    b.release_on_acquire = 1;
    l0 = (long)t_stats(bc).listings;
    /* The next listing is A's client's own (zkl_contenders), and the
     * proxy resets the connection that carries it. */
    fp_arm(fp, FP_OP_LIST, FP_CUT, 0);
    ASSERT_RC(zkl_contenders(ac, p, t_listing_cb, &cl), ZKL_OK);
    ASSERT(WAIT_FOR(t_has_event(&aconn, ZKL_CONN_SUSPENDED), 5000));
    ASSERT(WAIT_FOR((long)t_stats(bc).listings == l0 + 1, 5000));
    ASSERT(WAIT_FOR(t_has_event(&aconn, ZKL_CONN_RECONNECTED), 10000));
    ASSERT(t_run_until(&cl.done, 5000));
    t_run_for(200);
    ASSERT_EQ(a.acquired, 0);
    ASSERT_EQ(b.acquired, 0);
    ASSERT_RC(zkl_lock_release(h.lk), ZKL_OK);
    ASSERT(t_run_until(&b.released, 5000));
    ASSERT_EQ(a.acquired, 1);
    ASSERT_EQ(b.acquired, 1);
    ASSERT(a.order < b.order);
    free_all(p, (t_lock_t *[]){&h, &a, &b}, 3,
             (zkl_client_t *[]){hc, ac, bc}, 3);
    fp_free(fp);
}

TEST(peer_waiter_predecessor_session_expires)
{
    /* A (short session) and B (long one) share a proxy, which stops
     * every byte for longer than A's session: the server expires A's
     * session and deletes its node, B's survives. B, which waited on A's
     * attempt without a watch, must still hear of it (A's client drops
     * its connection, later learns of the expiry) and queue on behind
     * H; A comes back behind B on a new session. */
    fp_t *fp = fp_new(t_base, t_port());
    t_conn_t aconn;
    zkl_client_t *hc = t_client(t_hosts(), 4000, NULL), *ac, *bc;
    const char *p = t_path(NULL);
    t_lock_t h, a, b;

    ASSERT(fp != NULL);
    ac = t_client(fp_hosts(fp), 2000, &aconn);
    bc = t_client(fp_hosts(fp), 20000, NULL);
    ASSERT_EQ(queue_three(&h, hc, &a, ac, &b, bc, p), 2);
    fp_stall(fp, 1);
    ASSERT_EQ(t_zk_wait_count(p, 2, 10000), 2); /* A's node expired */
    fp_stall(fp, 0);
    ASSERT(WAIT_FOR(t_has_event(&aconn, ZKL_CONN_EXPIRED) && aconn.connected,
                    10000));
    ASSERT_EQ(t_zk_wait_count(p, 3, 5000), 3); /* A queued again */
    t_run_for(200);
    ASSERT_EQ(b.acquired, 0);
    ASSERT(zkl_lock_is_held(h.lk));
    ASSERT_RC(zkl_lock_release(h.lk), ZKL_OK);
    ASSERT(t_run_until(&b.acquired, 5000));
    ASSERT_EQ(a.acquired, 0);
    ASSERT_RC(zkl_lock_release(b.lk), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    ASSERT(b.order < a.order);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(t_run_until(&a.released, 5000));
    free_all(p, (t_lock_t *[]){&h, &a, &b}, 3,
             (zkl_client_t *[]){hc, ac, bc}, 3);
    fp_free(fp);
}

/* 40 waiters dealt over s clients of this thread, behind a holder of
 * another: each waits on the attempt of the waiter before it (its own
 * client's when s is 1, mostly another's otherwise), queued all at once
 * or each once the one before it is queued (one_by_one: every
 * predecessor's node is known to this thread when its successor comes).
 * Two in the middle leave; every other one acquires exactly once, in
 * queue order. */
static void drain_forty(int s, int one_by_one)
{
    enum { N = 40, S_MAX = 4 };
    zkl_client_t *hc = t_client(t_hosts(), 4000, NULL), *c[S_MAX];
    const char *p = t_path(NULL);
    t_lock_t h, w[N];
    t_lock_t *all[N + 1];
    int i;

    for (i = 0; i < s; i++)
        c[i] = t_client(t_hosts(), 4000, NULL);
    t_lock_init(&h, hc, p);
    ASSERT_RC(zkl_lock_acquire(h.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&h.acquired, 5000));
    for (i = 0; i < N; i++) {
        t_lock_init(&w[i], c[i % s], p);
        w[i].release_on_acquire = 1;
        ASSERT_RC(zkl_lock_acquire(w[i].lk, -1), ZKL_OK);
        if (one_by_one)
            ASSERT(WAIT_FOR(zkl_lock_state(w[i].lk) == ZKL_STATE_QUEUED,
                            5000));
    }
    ASSERT_EQ(t_zk_wait_count(p, N + 1, 5000), N + 1);
    ASSERT(WAIT_FOR(zkl_lock_state(w[N - 1].lk) == ZKL_STATE_QUEUED, 5000));
    ASSERT_RC(zkl_lock_cancel(w[10].lk), ZKL_OK);
    ASSERT_RC(zkl_lock_cancel(w[11].lk), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(p, N - 1, 5000), N - 1);
    ASSERT_RC(zkl_lock_release(h.lk), ZKL_OK);
    ASSERT(t_run_until(&w[N - 1].released, 10000));
    for (i = 0; i < N; i++) {
        ASSERT_EQ(w[i].acquired, i == 10 || i == 11 ? 0 : 1);
        if (i > 0 && i != 10 && i != 11 && i != 12)
            ASSERT(w[i - 1].order < w[i].order);
    }
    ASSERT(w[9].order < w[12].order);
    all[0] = &h;
    for (i = 0; i < N; i++)
        all[i + 1] = &w[i];
    free_all(p, all, N + 1, c, s);
    zkl_client_free(hc);
}

TEST(chained_waiters_drain_a_long_queue)
{
    drain_forty(1, 0);
}

TEST(peer_waiters_drain_a_long_queue_over_four_sessions)
{
    drain_forty(4, 1);
}
