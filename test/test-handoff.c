/* Handoff between sessions: a waiter woken by the deletion of another
 * session's node settles its place in one listing, and never takes the
 * lock while a node below it lives, whoever deleted the node it waited
 * on (its owner giving up, or the server expiring the owner's session).
 * The Curator case is in test-curator.sh. */
#include "faultproxy.h"
#include "harness.h"

/* Nothing left on the server; then the three handles and clients go. */
static void three_done(const char *p, t_lock_t *h, t_lock_t *b, t_lock_t *c,
                       zkl_client_t *hc, zkl_client_t *bc, zkl_client_t *cc)
{
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    zkl_lock_free(h->lk);
    zkl_lock_free(b->lk);
    zkl_lock_free(c->lk);
    zkl_client_free(hc);
    zkl_client_free(bc);
    zkl_client_free(cc);
}

TEST(cross_session_predecessor_gives_up)
{
    /* H holds, B waits, C waits behind B, each in its own session. B
     * gives up: C is woken, lists once, and waits on for H. */
    zkl_client_t *hc = t_client(t_hosts(), 4000, NULL),
                 *bc = t_client(t_hosts(), 4000, NULL),
                 *cc = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    t_lock_t h, b, c;
    long l0;

    t_hold_and_queue(&h, hc, &b, bc, p);
    t_lock_init(&c, cc, p);
    ASSERT_RC(zkl_lock_acquire(c.lk, -1), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(p, 3, 5000), 3);
    ASSERT(WAIT_FOR(zkl_lock_state(c.lk) == ZKL_STATE_QUEUED, 5000));
    t_run_for(100);
    l0 = (long)t_stats(cc).listings;
    ASSERT_RC(zkl_lock_cancel(b.lk), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(p, 2, 5000), 2);
    ASSERT(WAIT_FOR((long)t_stats(cc).listings == l0 + 1, 5000));
    t_run_for(300);
    ASSERT_EQ(c.acquired, 0);
    ASSERT_EQ((long)t_stats(cc).listings, l0 + 1);
    ASSERT(zkl_lock_is_held(h.lk));
    ASSERT_RC(zkl_lock_release(h.lk), ZKL_OK);
    ASSERT(t_run_until(&c.acquired, 5000));
    ASSERT(t_run_until(&h.released, 5000));
    ASSERT_RC(zkl_lock_release(c.lk), ZKL_OK);
    ASSERT(t_run_until(&c.released, 5000));
    three_done(p, &h, &b, &c, hc, bc, cc);
}

TEST(cross_session_predecessor_expires)
{
    /* H holds, B waits (through the proxy), C waits behind B. B's
     * session expires: the server deletes B's node, C is woken and must
     * wait on for H; B comes back on a new session behind C. */
    fp_t *fp = fp_new(t_base, t_port());
    t_conn_t bconn;
    zkl_client_t *hc = t_client(t_hosts(), 4000, NULL),
                 *bc = t_client(fp_hosts(fp), 2000, &bconn),
                 *cc = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    t_lock_t h, b, c;

    ASSERT(fp != NULL);
    t_hold_and_queue(&h, hc, &b, bc, p);
    t_lock_init(&c, cc, p);
    ASSERT_RC(zkl_lock_acquire(c.lk, -1), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(p, 3, 5000), 3);
    ASSERT(WAIT_FOR(zkl_lock_state(c.lk) == ZKL_STATE_QUEUED, 5000));
    fp_stall(fp, 1);
    ASSERT_EQ(t_zk_wait_count(p, 2, 10000), 2); /* B's node expired */
    t_run_for(300);
    ASSERT_EQ(c.acquired, 0);
    ASSERT(zkl_lock_is_held(h.lk));
    fp_stall(fp, 0);
    ASSERT(WAIT_FOR(t_has_event(&bconn, ZKL_CONN_EXPIRED) && bconn.connected,
                    10000));
    ASSERT_EQ(t_zk_wait_count(p, 3, 5000), 3); /* B queued again */
    ASSERT_RC(zkl_lock_release(h.lk), ZKL_OK);
    ASSERT(t_run_until(&c.acquired, 5000));
    ASSERT_EQ(b.acquired, 0);
    ASSERT_RC(zkl_lock_release(c.lk), ZKL_OK);
    ASSERT(t_run_until(&b.acquired, 5000));
    ASSERT(b.order > c.order);
    ASSERT_RC(zkl_lock_release(b.lk), ZKL_OK);
    ASSERT(t_run_until(&b.released, 5000));
    three_done(p, &h, &b, &c, hc, bc, cc);
    fp_free(fp);
}

TEST(cross_session_view_never_skips_a_live_node)
{
    /* A long queue: H, then 18 waiters of another session, then C1 and
     * C2 of a third, whose client keeps a view of the queue. The view
     * cannot see the other session's nodes go: when C1's predecessor
     * goes and most of the nodes below it too, C1 lists and finds the
     * one still there, instead of taking the lock. */
    enum { N = 18, KEEP = 4 };
    zkl_client_t *hc = t_client(t_hosts(), 4000, NULL),
                 *wc = t_client(t_hosts(), 4000, NULL),
                 *cc = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    t_lock_t h, w[N], c1, c2;
    int i;

    t_lock_init(&h, hc, p);
    ASSERT_RC(zkl_lock_acquire(h.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&h.acquired, 5000));
    for (i = 0; i < N; i++) {
        t_lock_init(&w[i], wc, p);
        ASSERT_RC(zkl_lock_acquire(w[i].lk, -1), ZKL_OK);
        ASSERT_EQ(t_zk_wait_count(p, i + 2, 5000), i + 2);
    }
    t_lock_init(&c1, cc, p);
    t_lock_init(&c2, cc, p);
    c1.release_on_acquire = c2.release_on_acquire = 1;
    ASSERT_RC(zkl_lock_acquire(c1.lk, -1), ZKL_OK);
    ASSERT_RC(zkl_lock_acquire(c2.lk, -1), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(p, N + 3, 5000), N + 3);
    ASSERT(WAIT_FOR(zkl_lock_state(c2.lk) == ZKL_STATE_QUEUED, 5000));
    /* All of the other session's waiters give up but one, the top one
     * (C1's predecessor) last. */
    for (i = 0; i < N; i++)
        if (i != KEEP && i != N - 1)
            ASSERT_RC(zkl_lock_cancel(w[i].lk), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(p, 5, 5000), 5);
    ASSERT_RC(zkl_lock_cancel(w[N - 1].lk), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(p, 4, 5000), 4);
    t_run_for(300);
    ASSERT_EQ(c1.acquired, 0);
    ASSERT_EQ(c2.acquired, 0);
    /* The queue goes on in order: H, w[KEEP], C1, C2. */
    ASSERT_RC(zkl_lock_release(h.lk), ZKL_OK);
    ASSERT(t_run_until(&w[KEEP].acquired, 5000));
    t_run_for(200);
    ASSERT_EQ(c1.acquired, 0);
    ASSERT_RC(zkl_lock_release(w[KEEP].lk), ZKL_OK);
    ASSERT(t_run_until(&c2.released, 5000));
    ASSERT(c1.order > w[KEEP].order);
    ASSERT(c2.order > c1.order);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    zkl_lock_free(h.lk);
    for (i = 0; i < N; i++)
        zkl_lock_free(w[i].lk);
    zkl_lock_free(c1.lk);
    zkl_lock_free(c2.lk);
    zkl_client_free(hc);
    zkl_client_free(wc);
    zkl_client_free(cc);
}

TEST(one_waiter_per_session_settles_in_one_round_trip)
{
    /* 20 sessions of this thread, one waiter each, queue behind a
     * holder and drain. They share what they learn of the queue: each
     * release hands the lock to the next session's waiter, which reads
     * its own node and holds, so its session sends two requests in all
     * (that read, and its release's delete), no listing, however deep
     * it stood; and no sync before the read, the suite's server being
     * one server (on an ensemble: ensemble_lagging_follower_*).
     * (Sessions of other processes list instead: see
     * shared_view_other_process.) */
    enum { N = 20 };
    zkl_client_t *hc = t_client(t_hosts(), 4000, NULL), *wc[N];
    const char *p = t_path(NULL);
    zkl_stats_t s0[N], s1;
    t_lock_t h, w[N];
    int i, last = 0;

    t_lock_init(&h, hc, p);
    ASSERT_RC(zkl_lock_acquire(h.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&h.acquired, 5000));
    for (i = 0; i < N; i++) {
        wc[i] = t_client(t_hosts(), 4000, NULL);
        t_lock_init(&w[i], wc[i], p);
        w[i].release_on_acquire = 1;
        ASSERT_RC(zkl_lock_acquire(w[i].lk, -1), ZKL_OK);
        ASSERT_EQ(t_zk_wait_count(p, i + 2, 5000), i + 2);
    }
    ASSERT(WAIT_FOR(zkl_lock_state(w[N - 1].lk) == ZKL_STATE_QUEUED, 5000));
    t_run_for(100);
    for (i = 0; i < N; i++)
        ASSERT_RC(zkl_client_stats(wc[i], &s0[i], sizeof s0[i]), ZKL_OK);
    ASSERT_RC(zkl_lock_release(h.lk), ZKL_OK);
    ASSERT(t_run_until(&w[N - 1].released, 10000));
    for (i = 0; i < N; i++) {
        ASSERT_EQ(w[i].acquired, 1);
        ASSERT(w[i].order > last);
        last = w[i].order;
        ASSERT_RC(zkl_client_stats(wc[i], &s1, sizeof s1), ZKL_OK);
        ASSERT_EQ(s1.requests - s0[i].requests, 2);
        ASSERT_EQ(s1.listings - s0[i].listings, 0);
    }
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    zkl_lock_free(h.lk);
    zkl_client_free(hc);
    for (i = 0; i < N; i++) {
        zkl_lock_free(w[i].lk);
        zkl_client_free(wc[i]);
    }
}
