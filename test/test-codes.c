/* Result codes of a 3.8 server that Debian's 3.8.0 header does not all
 * name: a hard quota (-125, a definite refusal), a throttled request
 * (-127: not done, retried after a pause) and a code nobody knows yet
 * (retried after a pause too, never at once in a loop). The quota is a
 * real one (test/zkserver.sh enforces quotas); throttling is the fault
 * proxy rewriting a reply, as an overloaded server would answer. */
#include <zookeeper/zookeeper.h>

#include "common.h"
#include "faultproxy.h"
#include "harness.h"

#define SESSION_MS 10000
#define ZQUOTA (-125)

/* A hard limit of one node under path: the path itself. */
static void hard_quota(const char *path, char *qpath, size_t size)
{
    char p[700], *s;
    const char *lim = "count=-1,bytes=-1,countHardLimit=1,byteHardLimit=-1";
    const char *stat = "count=1,bytes=0";

    snprintf(qpath, size, "/zookeeper/quota%s", path);
    /* Each ancestor of the quota node, then the limits and the stats. */
    for (s = qpath + strlen("/zookeeper/quota") + 1; (s = strchr(s, '/'));
         s++) {
        snprintf(p, sizeof p, "%.*s", (int)(s - qpath), qpath);
        (void)t_zk_create_as(NULL, p, 0);
    }
    (void)t_zk_create_as(NULL, qpath, 0);
    snprintf(p, sizeof p, "%s/zookeeper_limits", qpath);
    ASSERT_EQ(t_zk_create_as(NULL, p, 0), ZOK);
    ASSERT_EQ(t_zk_set(p, lim, (int)strlen(lim)), ZOK);
    snprintf(p, sizeof p, "%s/zookeeper_stats", qpath);
    ASSERT_EQ(t_zk_create_as(NULL, p, 0), ZOK);
    ASSERT_EQ(t_zk_set(p, stat, (int)strlen(stat)), ZOK);
}

static void drop_quota(const char *qpath)
{
    char p[700];

    snprintf(p, sizeof p, "%s/zookeeper_limits", qpath);
    (void)t_zk_delete(p);
    snprintf(p, sizeof p, "%s/zookeeper_stats", qpath);
    (void)t_zk_delete(p);
}

static void write_cb(zkl_client_t *c, int status,
                     const zkl_op_result_t *results, size_t n, void *arg)
{
    int *out = arg;

    (void)c;
    out[0] = status;
    out[1] = n > 0 && results != NULL ? results[0].status : 1;
    out[2]++;
}

/* The acquire fails with ZKL_EQUOTA at once (no create-list loop till
 * its deadline), a try-lock too, and a guarded create under the quota
 * is refused (ZKL_EWRITE, the op ZKL_EQUOTA), not "outcome unknown". */
TEST(quota_refuses_acquire_and_write)
{
    zkl_client_t *c = t_client(t_hosts(), SESSION_MS, NULL);
    const char *p = t_path(NULL), *q = t_path("guard");
    char qpath[600], child[600];
    zkl_op_t op;
    int wr[3] = {0, 0, 0};
    uint64_t before;
    t_lock_t a, g;

    (void)t_zk_create_as(NULL, "/zkl-test", 0); /* may exist */
    ASSERT_EQ(t_zk_create_as(NULL, p, 0), ZOK);
    hard_quota(p, qpath, sizeof qpath);
    t_lock_init(&a, c, p);
    before = t_stats(c).requests;
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.failed, 5000));
    ASSERT_RC(a.last_status, ZKL_EQUOTA);
    ASSERT(t_stats(c).requests - before < 10);
    ASSERT_RC(zkl_lock_acquire(a.lk, 0), ZKL_OK);
    ASSERT(WAIT_FOR(a.failed == 2, 5000));
    ASSERT_RC(a.last_status, ZKL_EQUOTA);
    ASSERT_EQ(a.acquired, 0);
    ASSERT(WAIT_FOR(zkl_client_pending(c) == 0, 5000));
    ASSERT_EQ(t_zk_count(p), 0);
    /* A guarded write: the lock is elsewhere, the create under p. */
    t_lock_init(&g, c, q);
    ASSERT_RC(zkl_lock_acquire(g.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&g.acquired, 5000));
    snprintf(child, sizeof child, "%s/data", p);
    memset(&op, 0, sizeof op);
    op.type = ZKL_OP_CREATE;
    op.path = child;
    ASSERT_RC(zkl_lock_write(g.lk, &op, 1, write_cb, wr), ZKL_OK);
    ASSERT(WAIT_FOR(wr[2] == 1, 5000));
    ASSERT_RC(wr[0], ZKL_EWRITE);
    ASSERT_RC(wr[1], ZKL_EQUOTA);
    ASSERT_EQ(t_zk_count(p), 0);
    ASSERT_RC(zkl_lock_release(g.lk), ZKL_OK);
    ASSERT(t_run_until(&g.released, 5000));
    drop_quota(qpath);
    zkl_lock_free(a.lk);
    zkl_lock_free(g.lk);
    zkl_client_free(c);
}

/* A listing answered code: the client pauses new requests (the first
 * pause is 50 ms), then lists again and holds. A throttled try-lock
 * reports ZKL_ETHROTTLED. */
static void paused_then_retried(int code)
{
    fp_t *fp = fp_new(t_base, t_port());
    zkl_client_t *c;
    const char *p = t_path(NULL);
    uint64_t t0;
    t_lock_t a;

    ASSERT(fp != NULL);
    c = t_client(fp_hosts(fp), SESSION_MS, NULL);
    t_lock_init(&a, c, p);
    t_lock_cycle(&a);
    fp_arm_recode(fp, FP_OP_LIST, code);
    t0 = t_now_ms();
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(a.acquired == 2, 5000));
    ASSERT(t_now_ms() - t0 >= 50); /* not at once */
    ASSERT_EQ(fp_fired(fp), 1);
    ASSERT_EQ(t_stats(c).throttled, 1);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(WAIT_FOR(a.released == 2, 5000));
    if (code == ZTHROTTLEDOP) {
        fp_arm_recode(fp, FP_OP_LIST, ZTHROTTLEDOP);
        ASSERT_RC(zkl_lock_acquire(a.lk, 0), ZKL_OK);
        ASSERT(t_run_until(&a.failed, 5000));
        ASSERT_RC(a.last_status, ZKL_ETHROTTLED);
        ASSERT(WAIT_FOR(zkl_client_pending(c) == 0, 5000));
    }
    ASSERT_EQ(t_zk_count(p), 0);
    zkl_lock_free(a.lk);
    zkl_client_free(c);
    fp_free(fp);
}

TEST(throttled_request_pauses_then_retries)
{
    paused_then_retried(ZTHROTTLEDOP);
}

/* A code no table names: retried too, but after a pause, not in a loop. */
TEST(unknown_code_retried_after_a_pause)
{
    paused_then_retried(-199);
}

/* Every request answered ZTHROTTLEDOP for ms (pings pass, as a 3.8
 * server never throttles them). */
static void throttle_for(fp_t *fp, long ms, const int *stop)
{
    uint64_t end = t_now_ms() + (uint64_t)ms;
    int fired;

    fp_arm_recode(fp, FP_OP_ANY, ZTHROTTLEDOP);
    fired = fp_fired(fp);
    while (t_now_ms() < end && *stop == 0) {
        t_tick();
        if (fp_fired(fp) != fired) { /* each arming fires once */
            fired = fp_fired(fp);
            fp_arm_recode(fp, FP_OP_ANY, ZTHROTTLEDOP);
        }
    }
    fp_arm(fp, FP_OP_ANY, (fp_fault_t)0, 0); /* disarmed */
}

/* A server that throttles every request of a holder's session for
 * longer than the session timeout does not end the hold: each
 * throttled answer shows the server touched the session when it
 * received the request (3.8's submitRequestNow()), and the keepalive
 * still goes out while new requests are paused. Both used to be
 * missed, and the hold was told LOST at 9/10 of the timeout while its
 * session and node lived on. A release throttled as long ends with
 * its delete (status 0): the pause is at most a quarter of the
 * timeout, so the delete is tried, and refused, often enough to keep
 * the session's bound fresh (a 2 s pause answered it ZKL_ESESSION at
 * the presumed expiry, with the node still there). */
TEST(throttled_hold_is_not_lost)
{
    fp_t *fp = fp_new(t_base, t_port());
    zkl_client_t *c;
    const char *p = t_path(NULL);
    int fired;
    t_lock_t a;

    ASSERT(fp != NULL);
    c = t_client(fp_hosts(fp), 2000, NULL);
    t_lock_init(&a, c, p);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    throttle_for(fp, 3000, &a.lost); /* 1.5 session timeouts */
    ASSERT_EQ(a.lost, 0);
    ASSERT(fp_fired(fp) >= 3); /* keepalives went out and were refused */
    ASSERT_EQ(t_stats(c).sessions, 1);
    ASSERT(zkl_lock_is_held(a.lk));
    ASSERT_EQ(t_zk_count(p), 1);
    fired = fp_fired(fp);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    throttle_for(fp, 3000, &a.released);
    ASSERT_EQ(a.released, 0); /* its deletes were all refused */
    ASSERT(fp_fired(fp) > fired);
    ASSERT(t_run_until(&a.released, 5000));
    ASSERT_RC(a.last_status, ZKL_OK);
    ASSERT_EQ(a.lost, 0);
    ASSERT_EQ(t_stats(c).sessions, 1);
    ASSERT_EQ(t_zk_count(p), 0);
    zkl_lock_free(a.lk);
    zkl_client_free(c);
    fp_free(fp);
}
