/* A handoff across the sessions of one thread (hand_across in
 * lib/attempt.c) never grants on a read of the waiter's node that the
 * server may have answered before the holder's delete, nor a client that
 * is not connected; and chains of waiters spread over clients drain when
 * one client is freed. A review reproduced a double hold and a grant to
 * a suspended client with a read sent ahead of the release (since
 * withdrawn); these are its reproductions, kept as regression tests. */
#include <stdio.h>
#include <string.h>

#include <zookeeper/zookeeper.h>

#include "faultproxy.h"
#include "harness.h"

static void node_of(const t_lock_t *t, char *out, size_t size)
{
    char name[ZKL_NODE_NAME_SIZE];

    ASSERT_RC(zkl_lock_node_name(t->lk, name, sizeof name), ZKL_OK);
    snprintf(out, size, "%s/%s", zkl_lock_path(t->lk), name);
}

static void show(const char *who, const t_lock_t *t)
{
    int i;

    fprintf(stderr, "  %s: acquired=%d lost=%d released=%d grant_ev=%d "
                    "lost_ev=%d events:", who, t->acquired, t->lost,
            t->released, t->grant_ev, t->lost_ev);
    for (i = 0; i < t->n && i < 32; i++)
        fprintf(stderr, " %d/%d", t->ev[i], t->st[i]);
    fprintf(stderr, "\n");
}

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

struct rv_shared {
    volatile int x_queued, x_inside, x_acquired, go_x;
    volatile int w_saw_x_inside; /* W, inside its ACQUIRED, saw X hold */
    volatile uint64_t x_acq_ms, w_acq_ms;
};
static struct rv_shared *rs;

static void rv_x_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                    void *arg)
{
    (void)lk; (void)status; (void)arg;
    if (ev == ZKL_LOCK_ACQUIRED) {
        rs->x_acq_ms = t_now_ms();
        rs->x_inside = 1;
        rs->x_acquired++;
    } else if (ev == ZKL_LOCK_QUEUED) {
        rs->x_queued = 1;
    }
}

static void rv_w_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                    void *arg)
{
    t_lock_cb(lk, ev, status, arg);
    if (ev == ZKL_LOCK_ACQUIRED) {
        rs->w_acq_ms = t_now_ms();
        /* Work under the lock: 300 ms. */
        usleep(300000);
        if (rs->x_inside)
            rs->w_saw_x_inside = 1;
    }
}

/* X: another process's waiter, behind W. Holds 3 s once granted. */
static void rv_child(const char *p)
{
    zkl_client_t *cx;
    zkl_lock_t *xl;
    uint64_t end;

    /* Not event_base_free(): its epoll set is the parent's too. */
    t_base = event_base_new();
    while (!rs->go_x)
        usleep(1000);
    cx = t_client(t_hosts(), 4000, NULL);
    zkl_lock_new(&xl, cx, p, rv_x_cb, NULL);
    zkl_lock_notify_queued(xl, 1);
    zkl_lock_acquire(xl, -1);
    end = t_now_ms() + 20000;
    while (!rs->x_acquired && t_now_ms() < end)
        t_run_for(5);
    t_run_for(3000);
    rs->x_inside = 0;
    zkl_lock_release(xl);
    t_run_for(300);
    _exit(0);
}

TEST(read_ahead_of_a_refused_release_never_grants)
{
    /* H (c1) holds N0; W (c2) waits on N0 with a server watch; X (another
     * process) waits on W's node; 15 fillers behind. H's release reads
     * W's node ahead, and the delete is refused (ACL). Later W's node is
     * deleted by someone else, then N0 goes: X, now the lowest node,
     * holds; W, whose read came before its node went, must not. */
    enum { F = 15 };
    zkl_client_t *c1, *c2, *c3;
    const char *p = t_path(NULL);
    char hnode[600], wnode[600];
    t_lock_t h, w, f[F];
    pid_t pid;
    int i, st;

    rs = mmap(NULL, sizeof *rs, PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT(rs != MAP_FAILED);
    memset((void *)rs, 0, sizeof *rs);
    fflush(NULL);
    if ((pid = fork()) == 0)
        rv_child(p);
    ASSERT(pid > 0);
    c1 = t_client(t_hosts(), 4000, NULL);
    c2 = t_client(t_hosts(), 4000, NULL);
    c3 = t_client(t_hosts(), 4000, NULL);
    t_lock_init(&h, c1, p);
    ASSERT_RC(zkl_lock_acquire(h.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&h.acquired, 5000));
    node_of(&h, hnode, sizeof hnode);
    memset(&w, 0, sizeof w);
    ASSERT_RC(zkl_lock_new(&w.lk, c2, p, rv_w_cb, &w), ZKL_OK);
    ASSERT_RC(zkl_lock_acquire(w.lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(zkl_lock_state(w.lk) == ZKL_STATE_QUEUED, 5000));
    t_run_for(200);
    rs->go_x = 1;
    ASSERT(WAIT_FOR(rs->x_queued, 10000));
    ASSERT_EQ(t_zk_wait_count(p, 3, 5000), 3);
    t_run_for(300);
    for (i = 0; i < F; i++) {
        t_lock_init(&f[i], c3, p);
        ASSERT_RC(zkl_lock_acquire(f[i].lk, -1), ZKL_OK);
    }
    ASSERT_EQ(t_zk_wait_count(p, F + 3, 5000), F + 3);
    t_run_for(300);
    node_of(&w, wnode, sizeof wnode);
    /* A data change on N0 makes W list again: 18 children, so the
     * thread's view of the queue covers W. */
    ASSERT_RC(t_zk_set(hnode, "x", 1), ZOK);
    t_run_for(300);
    /* No DELETE on the lock path: H's release is refused. */
    ASSERT_RC(t_zk_set_acl(p, ZOO_PERM_READ | ZOO_PERM_WRITE |
                                ZOO_PERM_CREATE | ZOO_PERM_ADMIN), ZOK);
    ASSERT_RC(zkl_lock_release(h.lk), ZKL_OK);
    ASSERT(t_run_until(&h.released, 5000));
    fprintf(stderr, "  H released with status %d; %d children left\n",
            h.last_status, t_zk_count(p));
    t_run_for(300);
    ASSERT_RC(t_zk_set_acl(p, ZOO_PERM_ALL), ZOK);
    /* Someone deletes W's waiting node; X, behind it, lists again. */
    ASSERT_RC(t_zk_delete(wnode), ZOK);
    t_run_for(500);
    /* N0 goes (an operator, or H's session ending). */
    ASSERT_RC(t_zk_delete(hnode), ZOK);
    t_run_for(1500);
    show("W", &w);
    fprintf(stderr, "  X (other process): acquired=%d at +%lld ms vs W's "
                    "grant; W saw X holding while inside its grant: %d\n",
            rs->x_acquired, (long long)(rs->x_acq_ms - rs->w_acq_ms),
            rs->w_saw_x_inside);
    ASSERT(waitpid(pid, &st, 0) == pid);
    ASSERT_EQ(rs->w_saw_x_inside, 0);
    zkl_lock_free(h.lk);
    zkl_lock_free(w.lk);
    for (i = 0; i < F; i++)
        zkl_lock_free(f[i].lk);
    zkl_client_free(c1);
    zkl_client_free(c2);
    zkl_client_free(c3);
}

static int rv_inside, rv_overlap;

static void rv_mx_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                     void *arg)
{
    t_lock_t *t = arg;

    t_lock_cb(lk, ev, status, arg);
    if (ev == ZKL_LOCK_ACQUIRED) {
        if (rv_inside++ != 0)
            rv_overlap++;
        rv_inside--;
        (void)t;
        ASSERT_RC(zkl_lock_release(lk), ZKL_OK);
    }
}

TEST(mixed_chains_survive_a_client_freed)
{
    /* Waiters in pairs per client (c0 c0 c1 c1 ...): chained waiters of
     * one client behind each other, handoffs across the two sessions.
     * Some cancel, then c1 is freed with its waiters queued; then the
     * holder releases. Every c0 waiter holds once, never two at once;
     * each client's count of outstanding requests drains to 0. */
    enum { N = 32 };
    zkl_client_t *hc = t_client(t_hosts(), 4000, NULL);
    zkl_client_t *c[2];
    const char *p = t_path(NULL);
    t_lock_t h, w[N];
    zkl_stats_t s;
    int i, k = 0;

    c[0] = t_client(t_hosts(), 4000, NULL);
    c[1] = t_client(t_hosts(), 4000, NULL);
    t_lock_init(&h, hc, p);
    ASSERT_RC(zkl_lock_acquire(h.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&h.acquired, 5000));
    for (i = 0; i < N; i++) {
        memset(&w[i], 0, sizeof w[i]);
        ASSERT_RC(zkl_lock_new(&w[i].lk, c[(i / 2) % 2], p, rv_mx_cb,
                               &w[i]), ZKL_OK);
        ASSERT_RC(zkl_lock_acquire(w[i].lk, -1), ZKL_OK);
        t_run_for(3);
    }
    ASSERT_EQ(t_zk_wait_count(p, N + 1, 5000), N + 1);
    t_run_for(300);
    /* Cancel some of c0's, including the first of a pair. */
    for (i = 4; i < N; i += 7)
        if ((i / 2) % 2 == 0)
            ASSERT_RC(zkl_lock_cancel(w[i].lk), ZKL_OK);
    t_run_for(300);
    for (i = 0; i < N; i++)
        if ((i / 2) % 2 == 1)
            zkl_lock_free(w[i].lk);
    zkl_client_free(c[1]);
    t_run_for(300);
    ASSERT_RC(zkl_lock_release(h.lk), ZKL_OK);
    for (i = 0; i < N; i++)
        if ((i / 2) % 2 == 0 && !(i >= 4 && (i - 4) % 7 == 0))
            k++;
    ASSERT(WAIT_FOR(({ int j, d = 0; for (j = 0; j < N; j++)
                          if ((j / 2) % 2 == 0) d += w[j].released;
                      d; }) >= k, 15000));
    t_run_for(300);
    for (i = 0; i < N; i++)
        if ((i / 2) % 2 == 0)
            fprintf(stderr, "%d:%d%s ", i, w[i].acquired,
                    w[i].failed ? "c" : "");
    fprintf(stderr, "\n");
    ASSERT_EQ(rv_overlap, 0);
    ASSERT_RC(zkl_client_stats(c[0], &s, sizeof s), ZKL_OK);
    fprintf(stderr, "  c0 outstanding=%llu max=%llu paced=%llu\n",
            (unsigned long long)s.outstanding,
            (unsigned long long)s.outstanding_max,
            (unsigned long long)s.paced);
    ASSERT_EQ(s.outstanding, 0);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    for (i = 0; i < N; i++)
        if ((i / 2) % 2 == 0)
            zkl_lock_free(w[i].lk);
    zkl_lock_free(h.lk);
    zkl_client_free(c[0]);
    zkl_client_free(hc);
}

static zkl_client_t *rv_suspended_client;
static int rv_w_granted_while_suspended;

static void rv_w2_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                     void *arg)
{
    t_lock_cb(lk, ev, status, arg);
    if (ev == ZKL_LOCK_ACQUIRED &&
        zkl_client_state(rv_suspended_client) == ZKL_CONN_SUSPENDED)
        rv_w_granted_while_suspended = 1;
}

TEST(hand_across_never_grants_a_suspended_client)
{
    /* Two proxies, one server list: H's client (c1) on proxy A, W's (c2)
     * on proxy B. H's delete crawls (A's latency), W's read ahead is
     * answered at once; then c2's connection is cut and cannot come back.
     * When the delete's answer reaches c1, W must not be granted on c2,
     * which is not connected (its hold would never be told SUSPENDED). */
    enum { F = 15 };
    fp_t *A = fp_new(t_base, t_port()), *B = fp_new(t_base, t_port());
    char hosts[128], hnode[600];
    t_conn_t k1, k2;
    zkl_client_t *c1, *c2, *c3;
    const char *p = t_path(NULL);
    t_lock_t h, w, f[F];
    int i;

    ASSERT(A != NULL && B != NULL);
    snprintf(hosts, sizeof hosts, "%s,%s", fp_hosts(A), fp_hosts(B));
    memset(&k1, 0, sizeof k1);
    memset(&k2, 0, sizeof k2);
    fp_refuse(B, 1);
    c1 = t_client(hosts, 4000, &k1);
    fp_refuse(B, 0);
    fp_refuse(A, 1);
    c2 = t_client(hosts, 4000, &k2);
    fp_refuse(A, 0);
    c3 = t_client(hosts, 4000, NULL);
    fprintf(stderr, "  open on A=%d B=%d\n", fp_open(A), fp_open(B));
    rv_suspended_client = c2;
    t_lock_init(&h, c1, p);
    ASSERT_RC(zkl_lock_acquire(h.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&h.acquired, 5000));
    node_of(&h, hnode, sizeof hnode);
    memset(&w, 0, sizeof w);
    ASSERT_RC(zkl_lock_new(&w.lk, c2, p, rv_w2_cb, &w), ZKL_OK);
    ASSERT_RC(zkl_lock_acquire(w.lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(zkl_lock_state(w.lk) == ZKL_STATE_QUEUED, 5000));
    for (i = 0; i < F; i++) {
        t_lock_init(&f[i], c3, p);
        ASSERT_RC(zkl_lock_acquire(f[i].lk, -1), ZKL_OK);
    }
    ASSERT_EQ(t_zk_wait_count(p, F + 2, 5000), F + 2);
    t_run_for(300);
    ASSERT_RC(t_zk_set(hnode, "x", 1), ZOK); /* W lists: view covers W */
    t_run_for(300);
    fp_latency(A, 600);
    ASSERT_RC(zkl_lock_release(h.lk), ZKL_OK);
    t_run_for(150); /* W's read ahead answered on B */
    fp_refuse(A, 1);
    fp_refuse(B, 1);
    fp_cut(B);
    t_run_for(3000);
    fprintf(stderr, "  W acquired=%d while c2 %s; c2 conn events:",
            w.acquired, rv_w_granted_while_suspended ? "SUSPENDED"
                                                      : "connected");
    for (i = 0; i < k2.n; i++)
        fprintf(stderr, " %d", k2.events[i]);
    fprintf(stderr, "\n");
    show("W", &w);
    ASSERT_EQ(rv_w_granted_while_suspended, 0);
    fp_refuse(A, 0);
    fp_refuse(B, 0);
    zkl_lock_free(h.lk);
    zkl_lock_free(w.lk);
    for (i = 0; i < F; i++)
        zkl_lock_free(f[i].lk);
    zkl_client_free(c1);
    zkl_client_free(c2);
    zkl_client_free(c3);
    fp_free(A);
    fp_free(B);
}
