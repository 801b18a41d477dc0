/* Waiters of one client queued behind each other's nodes: a waiter whose
 * predecessor is a node of its own client waits on that attempt, with no
 * request and no server watch, and must still move on whatever happens
 * to the node before it: a release, a cancel, a timeout, a deletion by
 * someone else. A holder in another session keeps the queue standing. */
#include "harness.h"

/* H holds on its own session; A then B queue on c, B right behind A. */
static void chain_of_two(t_lock_t *h, zkl_client_t *hc, t_lock_t *a,
                         long a_timeout, t_lock_t *b, zkl_client_t *c,
                         const char *p, uint64_t *b_requests)
{
    zkl_stats_t s0, s1;

    t_lock_init(h, hc, p);
    ASSERT_RC(zkl_lock_acquire(h->lk, -1), ZKL_OK);
    ASSERT(t_run_until(&h->acquired, 5000));
    t_lock_init(a, c, p);
    t_lock_init(b, c, p);
    a->release_on_acquire = 1;
    b->release_on_acquire = 1;
    ASSERT_RC(zkl_lock_acquire(a->lk, a_timeout), ZKL_OK);
    ASSERT(WAIT_FOR(zkl_lock_state(a->lk) == ZKL_STATE_QUEUED, 5000));
    t_run_for(100); /* A's watch on H's node is answered */
    ASSERT_RC(zkl_client_stats(c, &s0, sizeof s0), ZKL_OK);
    ASSERT_RC(zkl_lock_acquire(b->lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(zkl_lock_state(b->lk) == ZKL_STATE_QUEUED, 5000));
    t_run_for(100);
    ASSERT_RC(zkl_client_stats(c, &s1, sizeof s1), ZKL_OK);
    *b_requests = s1.requests - s0.requests;
    ASSERT_EQ(t_zk_count(p), 3);
}

static void chain_end(t_lock_t *h, t_lock_t *a, t_lock_t *b,
                      zkl_client_t *hc, zkl_client_t *c, const char *p)
{
    zkl_lock_free(h->lk);
    zkl_lock_free(a->lk);
    zkl_lock_free(b->lk);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    zkl_client_free(c);
    zkl_client_free(hc);
}

TEST(chained_waiter_sends_no_watch)
{
    zkl_client_t *hc = t_client(t_hosts(), 4000, NULL);
    zkl_client_t *c = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    t_lock_t h, a, b;
    uint64_t reqs;

    chain_of_two(&h, hc, &a, -1, &b, c, p, &reqs);
    /* Its create and the listing behind it; no watch on A's node. */
    ASSERT_EQ(reqs, 2);
    ASSERT_RC(zkl_lock_release(h.lk), ZKL_OK);
    ASSERT(t_run_until(&b.released, 5000));
    ASSERT_EQ(a.acquired, 1);
    ASSERT_EQ(b.acquired, 1);
    ASSERT(a.order < b.order);
    chain_end(&h, &a, &b, hc, c, p);
}

TEST(chained_waiter_predecessor_cancelled)
{
    zkl_client_t *hc = t_client(t_hosts(), 4000, NULL);
    zkl_client_t *c = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    t_lock_t h, a, b;
    uint64_t reqs;

    chain_of_two(&h, hc, &a, -1, &b, c, p, &reqs);
    ASSERT_RC(zkl_lock_cancel(a.lk), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(p, 2, 5000), 2);
    /* B now waits on H: the release reaches it. */
    t_run_for(200);
    ASSERT_EQ(zkl_lock_state(b.lk), ZKL_STATE_QUEUED);
    ASSERT_RC(zkl_lock_release(h.lk), ZKL_OK);
    ASSERT(t_run_until(&b.released, 5000));
    ASSERT_EQ(a.acquired, 0);
    ASSERT_EQ(b.acquired, 1);
    chain_end(&h, &a, &b, hc, c, p);
}

TEST(chained_waiter_predecessor_timed_out)
{
    zkl_client_t *hc = t_client(t_hosts(), 4000, NULL);
    zkl_client_t *c = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    t_lock_t h, a, b;
    uint64_t reqs;

    chain_of_two(&h, hc, &a, 1500, &b, c, p, &reqs);
    ASSERT(t_run_until(&a.failed, 5000));
    ASSERT_RC(a.last_status, ZKL_ETIMEDOUT);
    ASSERT_EQ(t_zk_wait_count(p, 2, 5000), 2);
    ASSERT_RC(zkl_lock_release(h.lk), ZKL_OK);
    ASSERT(t_run_until(&b.released, 5000));
    ASSERT_EQ(b.acquired, 1);
    chain_end(&h, &a, &b, hc, c, p);
}

TEST(chained_waiter_predecessor_deleted_by_other)
{
    /* Someone deletes A's waiting node. Nobody tells B at once (its wait
     * has no server watch); A learns it at its turn, queues again at the
     * back, and B takes the lock, then A. */
    zkl_client_t *hc = t_client(t_hosts(), 4000, NULL);
    zkl_client_t *c = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    t_lock_t h, a, b;
    uint64_t reqs;

    chain_of_two(&h, hc, &a, -1, &b, c, p, &reqs);
    ASSERT_EQ(t_zk_delete_node(a.lk), 0);
    ASSERT_EQ(t_zk_wait_count(p, 2, 5000), 2);
    ASSERT_RC(zkl_lock_release(h.lk), ZKL_OK);
    ASSERT(t_run_until(&b.released, 5000));
    ASSERT(t_run_until(&a.released, 5000));
    ASSERT_EQ(a.acquired, 1);
    ASSERT_EQ(b.acquired, 1);
    ASSERT(b.order < a.order);
    chain_end(&h, &a, &b, hc, c, p);
}
