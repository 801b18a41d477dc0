/* Leader election: the latch in Curator's LeaderLatch layout. */
#include "harness.h"

/* Three participants on one client each: the first to join leads, the
 * others follow in join order as leaders leave; nodes are Curator's
 * "_c_<uuid>-latch-<seq>" holding the participant id; tokens grow. */
TEST(latch_elects_in_order)
{
    t_conn_t c1, c2, c3;
    zkl_client_t *a = t_client(t_hosts(), 4000, &c1);
    zkl_client_t *b = t_client(t_hosts(), 4000, &c2);
    zkl_client_t *d = t_client(t_hosts(), 4000, &c3);
    const char *p = t_path(NULL);
    static t_lock_t la, lb, ld;
    char **names, data[64], full[1200];
    uint64_t ta, tb;
    int n;

    memset(&la, 0, sizeof la);
    memset(&lb, 0, sizeof lb);
    memset(&ld, 0, sizeof ld);
    ASSERT_RC(zkl_latch_new(&la.lk, a, p, "node-a", t_lock_cb, &la), ZKL_OK);
    ASSERT_RC(zkl_latch_new(&lb.lk, b, p, "node-b", t_lock_cb, &lb), ZKL_OK);
    ASSERT_RC(zkl_latch_new(&ld.lk, d, p, NULL, t_lock_cb, &ld), ZKL_OK);
    ASSERT_EQ(zkl_lock_kind(la.lk), ZKL_KIND_LATCH);
    {
        zkl_lock_t *x = (zkl_lock_t *)1;

        ASSERT_RC(zkl_latch_new(NULL, a, p, "x", t_lock_cb, &la),
                  ZKL_EINVAL);
        ASSERT_RC(zkl_latch_new(&x, a, "bad", "x", t_lock_cb, &la),
                  ZKL_EBADPATH);
        ASSERT(x == NULL);
        ASSERT_RC(zkl_latch_new(&x, NULL, p, "x", t_lock_cb, &la),
                  ZKL_EINVAL);
        ASSERT_RC(zkl_latch_new(&x, a, p, "x", NULL, &la), ZKL_EINVAL);
    }
    ASSERT_RC(zkl_lock_acquire(la.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&la.acquired, 5000));
    ASSERT_RC(zkl_lock_acquire(lb.lk, -1), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(p, 2, 5000), 2);
    ASSERT_RC(zkl_lock_acquire(ld.lk, -1), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(p, 3, 5000), 3);
    t_run_for(200);
    ASSERT_EQ(lb.acquired + ld.acquired, 0);
    n = t_zk_children(p, &names);
    ASSERT_EQ(n, 3);
    ASSERT(strncmp(names[0], "_c_", 3) == 0);
    ASSERT(strncmp(names[0] + 39, "-latch-", 7) == 0);
    ASSERT_EQ(strlen(names[0]), 3 + 36 + 7 + 10);
    snprintf(full, sizeof full, "%s/%s", p, names[0]);
    ASSERT_EQ(t_zk_data(full, data, sizeof data), 6);
    ASSERT(memcmp(data, "node-a", 6) == 0);
    snprintf(full, sizeof full, "%s/%s", p, names[2]);
    ASSERT_EQ(t_zk_data(full, data, sizeof data), 0); /* id NULL: "" */
    t_zk_free_names(names, n);
    ASSERT_RC(zkl_lock_token(la.lk, &ta), ZKL_OK);
    ASSERT_RC(zkl_lock_release(la.lk), ZKL_OK);
    ASSERT(t_run_until(&lb.acquired, 5000));
    ASSERT_EQ(ld.acquired, 0);
    ASSERT_RC(zkl_lock_token(lb.lk, &tb), ZKL_OK);
    ASSERT(tb > ta);
    /* A follower that leaves before leading is not elected. */
    ASSERT_RC(zkl_lock_cancel(ld.lk), ZKL_OK);
    ASSERT(t_run_until(&ld.failed, 5000));
    ASSERT_RC(zkl_lock_release(lb.lk), ZKL_OK);
    ASSERT(t_run_until(&lb.released, 5000));
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    ASSERT_EQ(ld.acquired, 0);
    zkl_lock_free(la.lk);
    zkl_lock_free(lb.lk);
    zkl_lock_free(ld.lk);
    zkl_client_free(a);
    zkl_client_free(b);
    zkl_client_free(d);
}

/* A latch beside a lock of another kind on one path is refused both
 * ways: their queues order differently. */
TEST(latch_and_mutex_refuse_each_other)
{
    t_conn_t conn;
    zkl_client_t *c = t_client(t_hosts(), 4000, &conn);
    const char *p = t_path(NULL);
    static t_lock_t latch, mutex;

    memset(&latch, 0, sizeof latch);
    ASSERT_RC(zkl_latch_new(&latch.lk, c, p, "me", t_lock_cb, &latch),
              ZKL_OK);
    t_lock_init(&mutex, c, p);
    ASSERT_RC(zkl_lock_acquire(latch.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&latch.acquired, 5000));
    ASSERT_RC(zkl_lock_acquire(mutex.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&mutex.failed, 5000));
    ASSERT_RC(mutex.last_status, ZKL_EKIND);
    ASSERT_RC(zkl_lock_release(latch.lk), ZKL_OK);
    ASSERT(t_run_until(&latch.released, 5000));
    ASSERT_RC(zkl_lock_acquire(mutex.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&mutex.acquired, 5000));
    ASSERT_RC(zkl_lock_acquire(latch.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&latch.failed, 5000));
    ASSERT_RC(latch.last_status, ZKL_EKIND);
    ASSERT_RC(zkl_lock_release(mutex.lk), ZKL_OK);
    ASSERT(t_run_until(&mutex.released, 5000));
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    zkl_lock_free(latch.lk);
    zkl_lock_free(mutex.lk);
    zkl_client_free(c);
}

/* A leader whose session expires is told LOST, and the follower leads. */
TEST(latch_leader_session_lost)
{
    t_conn_t c1, c2;
    zkl_client_t *a = t_client(t_hosts(), 2000, &c1);
    zkl_client_t *b = t_client(t_hosts(), 4000, &c2);
    const char *p = t_path(NULL);
    static t_lock_t la, lb;

    memset(&la, 0, sizeof la);
    memset(&lb, 0, sizeof lb);
    ASSERT_RC(zkl_latch_new(&la.lk, a, p, "a", t_lock_cb, &la), ZKL_OK);
    ASSERT_RC(zkl_latch_new(&lb.lk, b, p, "b", t_lock_cb, &lb), ZKL_OK);
    ASSERT_RC(zkl_lock_acquire(la.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&la.acquired, 5000));
    ASSERT_RC(zkl_lock_acquire(lb.lk, -1), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(p, 2, 5000), 2);
    t_run_for(100);
    /* Someone deletes the leader's node: it is told at once. */
    ASSERT_EQ(t_zk_delete_node(la.lk), 0);
    ASSERT(t_run_until(&la.lost, 5000));
    ASSERT_RC(la.last_status, ZKL_ENODEGONE);
    ASSERT(t_run_until(&lb.acquired, 5000));
    ASSERT_EQ(la.lost_ev < lb.grant_ev, 1);
    ASSERT_RC(zkl_lock_release(lb.lk), ZKL_OK);
    ASSERT(t_run_until(&lb.released, 5000));
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    zkl_lock_free(la.lk);
    zkl_lock_free(lb.lk);
    zkl_client_free(a);
    zkl_client_free(b);
}
