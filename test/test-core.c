/* The core's promises, each against the real server: every ZooKeeper
 * result classified (a connection the ZooKeeper client drops silently,
 * then ZRUNTIMEINCONSISTENCY for everything outstanding), every
 * disconnection seen, LOST before anyone else can hold the lock, no user
 * callback inside an API call, and the review's smaller cases (an own
 * node deleted by someone else, a deep path, refused sends, duplicate
 * nodes, sequences past 2^31). */
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zookeeper/zookeeper.h>

#include "faultproxy.h"
#include "harness.h"
#include "internal.h"
#include "interpose.h"

#define SESSION_MS 4000

/* ---------------- a send into a reset socket ---------------- */

/* The proxy delivers the request aimed at, loses its reply and resets the
 * connection; before the client's loop can read the reset, the hook makes
 * it send (a contenders listing) into the dead socket. The ZooKeeper
 * client then closes it without a session event, reconnects, re-sends,
 * and every request still outstanding ends with ZRUNTIMEINCONSISTENCY. */
struct sr {
    zkl_client_t *c;
    const char *path;
    int fired;
    t_listing_t l;
};

static void sr_send(void *arg)
{
    struct sr *s = arg;

    usleep(30000); /* the reset lands on the client's socket */
    s->fired++;
    ASSERT_RC(zkl_contenders(s->c, s->path, t_listing_cb, &s->l), ZKL_OK);
    ASSERT(!s->l.done);
}

static void silent_reset_at(fp_t *fp, struct sr *s, zkl_client_t *x,
                            const char *path, int op)
{
    memset(s, 0, sizeof *s);
    s->c = x;
    s->path = path;
    fp_on_reset(fp, sr_send, s);
    fp_arm(fp, op, FP_LOSE, 50);
}

/* The silent close was taken for what it is: the listing sent into the
 * dead socket failed as connection trouble, and the connection callback
 * saw SUSPENDED before every RECONNECTED (the close itself raises no
 * event). */
static void check_silent_reset(const struct sr *s, const t_conn_t *xc)
{
    int i, down = 0;

    ASSERT(WAIT_FOR(s->fired == 1, 5000));
    ASSERT(WAIT_FOR(s->l.done, 10000));
    ASSERT_RC(s->l.status, ZKL_ECONNLOSS);
    ASSERT(WAIT_FOR(xc->connected, 10000));
    ASSERT(t_has_event(xc, ZKL_CONN_SUSPENDED));
    for (i = 0; i < xc->n; i++) {
        if (xc->events[i] == ZKL_CONN_SUSPENDED)
            down = 1;
        if (xc->events[i] == ZKL_CONN_RECONNECTED) {
            ASSERT(down);
            down = 0;
        }
    }
    ASSERT(!t_has_event(xc, ZKL_CONN_EXPIRED));
}

/* The other fault: the server applies the request, and its reply comes
 * back as ZSESSIONMOVED (the proxy rewrites the code; a 3.8 server,
 * finding a session moved, closes the connection instead, which
 * ensemble_session_moved covers). The session is alive: nothing may be
 * taken for gone, and the client reconnects to take its session back. */
enum fault { SILENT_RESET, MOVED };

static void inject(enum fault f, fp_t *fp, struct sr *s, zkl_client_t *x,
                   const char *path, int op)
{
    memset(s, 0, sizeof *s);
    if (f == SILENT_RESET)
        silent_reset_at(fp, s, x, path, op);
    else
        fp_arm_recode(fp, op, ZSESSIONMOVED);
}

static void check_fault(enum fault f, const struct sr *s, const t_conn_t *xc)
{
    if (f == SILENT_RESET) {
        check_silent_reset(s, xc);
        return;
    }
    ASSERT(WAIT_FOR(t_has_event(xc, ZKL_CONN_SUSPENDED), 10000));
    ASSERT(WAIT_FOR(xc->connected, 10000));
    ASSERT(!t_has_event(xc, ZKL_CONN_EXPIRED));
}

/* An acquire whose request op is outstanding when the fault hits: it
 * must not fail, and must end holding one node. */
static void fault_acquire(enum fault f, int op, int queued)
{
    fp_t *fp = fp_new(t_base, t_port());
    t_conn_t xc;
    zkl_client_t *x = t_client(fp_hosts(fp), SESSION_MS, &xc);
    zkl_client_t *h = t_client(t_hosts(), SESSION_MS, NULL);
    const char *p = t_path(NULL);
    t_lock_t a, b;
    struct sr s;

    t_lock_init(&a, x, p);
    t_lock_init(&b, h, p);
    if (queued) {
        ASSERT_RC(zkl_lock_acquire(b.lk, -1), ZKL_OK);
        ASSERT(t_run_until(&b.acquired, 5000));
    }
    inject(f, fp, &s, x, p, op);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(fp_fired(fp) == 1, 5000));
    check_fault(f, &s, &xc);
    if (queued) {
        ASSERT(WAIT_FOR(zkl_lock_state(a.lk) == ZKL_STATE_QUEUED, 10000));
        ASSERT_EQ(t_zk_wait_count(p, 2, 5000), 2);
        ASSERT_EQ(a.n, 0);
        ASSERT_RC(zkl_lock_release(b.lk), ZKL_OK);
    }
    ASSERT(t_run_until(&a.acquired, 10000));
    ASSERT_EQ(a.failed, 0);
    ASSERT_EQ(t_zk_wait_count(p, 1, 5000), 1);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(t_run_until(&a.released, 10000));
    ASSERT_RC(a.last_status, ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    ASSERT(WAIT_FOR(zkl_client_pending(x) == 0, 5000));
    zkl_lock_free(a.lk);
    zkl_lock_free(b.lk);
    zkl_client_free(x);
    zkl_client_free(h);
    fp_free(fp);
}

TEST(silent_reset_create)
{
    fault_acquire(SILENT_RESET, FP_OP_CREATE2, 0);
}

TEST(silent_reset_list)
{
    fault_acquire(SILENT_RESET, FP_OP_LIST, 1);
}

TEST(silent_reset_watch)
{
    fault_acquire(SILENT_RESET, FP_OP_GETDATA, 1);
}

TEST(session_moved_create)
{
    fault_acquire(MOVED, FP_OP_CREATE2, 0);
}

TEST(session_moved_list)
{
    fault_acquire(MOVED, FP_OP_LIST, 1);
}

TEST(session_moved_watch)
{
    fault_acquire(MOVED, FP_OP_GETDATA, 1);
}

/* A holder whose own-node watch is outstanding: SUSPENDED, then RESTORED,
 * still the sole holder, and the loop keeps serving. */
static void fault_held(enum fault f)
{
    fp_t *fp = fp_new(t_base, t_port());
    t_conn_t xc;
    zkl_client_t *x = t_client(fp_hosts(fp), SESSION_MS, &xc);
    const char *p = t_path(NULL), *p2 = t_path("after");
    t_lock_t a, c2;
    struct sr s;
    int i;

    t_lock_init(&a, x, p);
    inject(f, fp, &s, x, p, FP_OP_GETDATA);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    ASSERT(WAIT_FOR(fp_fired(fp) == 1, 5000));
    check_fault(f, &s, &xc);
    ASSERT(WAIT_FOR(a.restored >= 1 && a.restored == a.suspended, 10000));
    ASSERT(a.suspended >= 1);
    ASSERT_EQ(a.ev[0], ZKL_LOCK_ACQUIRED);
    for (i = 1; i < a.n; i++)
        ASSERT_EQ(a.ev[i], i % 2 ? ZKL_LOCK_SUSPENDED : ZKL_LOCK_RESTORED);
    ASSERT(zkl_lock_is_held(a.lk));
    ASSERT_EQ(t_zk_count(p), 1);
    t_lock_init(&c2, x, p2);
    ASSERT_RC(zkl_lock_acquire(c2.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&c2.acquired, 5000));
    ASSERT_RC(zkl_lock_release(c2.lk), ZKL_OK);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(t_run_until(&a.released, 10000));
    ASSERT(t_run_until(&c2.released, 10000));
    ASSERT_EQ(t_zk_count(p), 0);
    ASSERT_EQ(t_zk_count(p2), 0);
    zkl_lock_free(a.lk);
    zkl_lock_free(c2.lk);
    zkl_client_free(x);
    fp_free(fp);
}

TEST(silent_reset_held)
{
    fault_held(SILENT_RESET);
}

TEST(session_moved_held)
{
    fault_held(MOVED);
}

/* A release whose delete is outstanding: RELEASED with status 0, and the
 * node is gone while the session lives. */
static void fault_release(enum fault f)
{
    fp_t *fp = fp_new(t_base, t_port());
    t_conn_t xc;
    zkl_client_t *x = t_client(fp_hosts(fp), SESSION_MS, &xc);
    const char *p = t_path(NULL);
    t_lock_t a;
    struct sr s;

    t_lock_init(&a, x, p);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    t_run_for(200); /* the own-node watch is set */
    inject(f, fp, &s, x, p, FP_OP_DELETE);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(WAIT_FOR(fp_fired(fp) == 1, 5000));
    check_fault(f, &s, &xc);
    ASSERT(t_run_until(&a.released, 10000));
    ASSERT_RC(a.last_status, ZKL_OK);
    ASSERT_EQ(t_zk_count(p), 0);
    ASSERT(WAIT_FOR(zkl_client_pending(x) == 0, 5000));
    zkl_lock_free(a.lk);
    zkl_client_free(x);
    fp_free(fp);
}

TEST(silent_reset_release)
{
    fault_release(SILENT_RESET);
}

TEST(session_moved_release)
{
    fault_release(MOVED);
}

/* An answer of ZSESSIONEXPIRED (here the proxy's rewrite of the
 * keepalive's reply) tells holds LOST at once, not at the session event
 * or the timer. */
TEST(expired_answer_tells_lost_at_once)
{
    fp_t *fp = fp_new(t_base, t_port());
    zkl_client_t *x = t_client(fp_hosts(fp), SESSION_MS, NULL);
    const char *p = t_path(NULL);
    uint64_t fired_at;
    t_lock_t a;

    t_lock_init(&a, x, p);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    fp_arm_recode(fp, FP_OP_EXISTS, ZSESSIONEXPIRED);
    ASSERT(WAIT_FOR(fp_fired(fp) == 1, SESSION_MS));
    fired_at = t_now_ms();
    ASSERT(t_run_until(&a.lost, 2000));
    ASSERT(t_now_ms() - fired_at < 500);
    ASSERT_RC(a.last_status, ZKL_ESESSION);
    /* The session was in fact alive: the node is deleted like any
     * node the user let go. */
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    zkl_lock_free(a.lk);
    zkl_client_free(x);
    fp_free(fp);
}

/* ---------------- LOST before anyone else holds ---------------- */

/* Holders behind a slow return path (every server byte 1 s late), cut
 * off at different moments; a waiter of another session on each lock.
 * Each holder must be told LOST before its waiter is told ACQUIRED. */
#define LT_N 20
#define LT_SESSION 4000

TEST(lost_before_another_holds)
{
    fp_t *fp[LT_N];
    zkl_client_t *h[LT_N], *w = t_client(t_hosts(), LT_SESSION, NULL);
    t_conn_t hc[LT_N];
    t_lock_t hl[LT_N], wl[LT_N];
    uint64_t lost_at[LT_N], t0;
    char paths[LT_N][256], sfx[16];
    int i, n, stalled = 0;
    long worst = 1L << 30;

    for (i = 0; i < LT_N; i++) {
        fp[i] = fp_new(t_base, t_port());
        fp_latency_down(fp[i], 1000);
        h[i] = t_client_start(fp_hosts(fp[i]), LT_SESSION, &hc[i]);
    }
    for (i = 0; i < LT_N; i++)
        ASSERT(WAIT_FOR(hc[i].connected, 20000));
    for (i = 0; i < LT_N; i++) {
        snprintf(sfx, sizeof sfx, "%d", i);
        snprintf(paths[i], sizeof paths[i], "%s", t_path(sfx));
        t_lock_init(&hl[i], h[i], paths[i]);
        ASSERT_RC(zkl_lock_acquire(hl[i].lk, -1), ZKL_OK);
    }
    for (i = 0; i < LT_N; i++)
        ASSERT(WAIT_FOR(hl[i].acquired, 20000));
    for (i = 0; i < LT_N; i++) {
        t_lock_init(&wl[i], w, paths[i]);
        ASSERT_RC(zkl_lock_acquire(wl[i].lk, -1), ZKL_OK);
    }
    for (i = 0; i < LT_N; i++)
        ASSERT(WAIT_FOR(zkl_lock_state(wl[i].lk) == ZKL_STATE_QUEUED, 10000));
    t_run_for(1500); /* the holders' keepalives run on the slow path */
    /* Cut i goes at t0 + i * 137 ms: across more than two keepalive
     * rounds, so the cuts fall at every point of the cycle. */
    t0 = t_now_ms();
    memset(lost_at, 0, sizeof lost_at);
    while (stalled < LT_N) {
        uint64_t now = t_now_ms();

        for (i = stalled; i < LT_N && now >= t0 + (uint64_t)i * 137; i++)
            fp_stall(fp[i], 1);
        stalled = i;
        if (stalled < LT_N)
            t_tick();
        ASSERT(t_now_ms() < t0 + 20000);
    }
    for (n = 0; n < LT_N;) {
        t_tick();
        for (i = 0, n = 0; i < LT_N; i++) {
            if (hl[i].lost && lost_at[i] == 0)
                lost_at[i] = t_now_ms();
            n += wl[i].acquired;
        }
        ASSERT(t_now_ms() < t0 + 30000);
    }
    for (i = 0; i < LT_N; i++) {
        ASSERT_EQ(hl[i].lost, 1);
        ASSERT_RC(hl[i].st[hl[i].n - 1], ZKL_ESESSION);
        ASSERT(hl[i].lost_ev < wl[i].grant_ev);
        if ((long)(wl[i].at_ms - lost_at[i]) < worst)
            worst = (long)(wl[i].at_ms - lost_at[i]);
    }
    printf("LOST came at least %ld ms before the other session's grant\n",
           worst);
    for (i = 0; i < LT_N; i++) {
        ASSERT_RC(zkl_lock_release(wl[i].lk), ZKL_OK);
        fp_free(fp[i]);
    }
    for (i = 0; i < LT_N; i++)
        ASSERT(t_run_until(&wl[i].released, 10000));
    for (i = 0; i < LT_N; i++) {
        zkl_lock_free(hl[i].lk);
        zkl_lock_free(wl[i].lk);
        zkl_client_free(h[i]);
        ASSERT_EQ(t_zk_count(paths[i]), 0);
    }
    zkl_client_free(w);
}

/* ---------------- no callback inside an API call ---------------- */

/* A contenders request is outstanding on a connection that stalls; the
 * test thread then sleeps past the ZooKeeper client's receive timeout,
 * so the next call into that client (inside whichever API function is
 * called) fails the request at once. Its callback must wait for the
 * loop. */
static int in_call;

static void pend_cb(zkl_client_t *c, int status, const char *const *names,
                    size_t n, void *arg)
{
    ASSERT(!in_call);
    t_listing_cb(c, status, names, n, arg);
}

enum api_call { C_ACQUIRE, C_CANCEL, C_RELEASE, C_FREE, C_CONTENDERS };

static void api_call_while_failing(enum api_call call)
{
    fp_t *fp = fp_new(t_base, t_port());
    zkl_client_t *x = t_client(fp_hosts(fp), 2000, NULL);
    zkl_client_t *h = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL), *p2 = t_path("free");
    t_listing_t pd = {0}, pd2 = {0};
    t_lock_t hold, a;

    t_hold_and_queue(&hold, h, &a, x, p);
    if (call == C_RELEASE || call == C_ACQUIRE) {
        ASSERT_RC(zkl_lock_cancel(a.lk), ZKL_OK);
        ASSERT(t_run_until(&a.failed, 5000));
        zkl_lock_free(a.lk);
        t_lock_init(&a, x, p2);
    }
    if (call == C_RELEASE) {
        ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
        ASSERT(t_run_until(&a.acquired, 5000));
        t_run_for(100);
    }
    fp_stall(fp, 1);
    ASSERT_RC(zkl_contenders(x, p, pend_cb, &pd), ZKL_OK);
    usleep(1700 * 1000); /* past 2/3 of the 2 s receive timeout */
    in_call = 1;
    switch (call) {
    case C_ACQUIRE:
        ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
        break;
    case C_CANCEL:
        ASSERT_RC(zkl_lock_cancel(a.lk), ZKL_OK);
        break;
    case C_RELEASE:
        ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
        break;
    case C_FREE:
        zkl_lock_free(a.lk);
        a.lk = NULL;
        break;
    case C_CONTENDERS:
        ASSERT_RC(zkl_contenders(x, p, pend_cb, &pd2), ZKL_OK);
        break;
    }
    in_call = 0;
    ASSERT(!pd.done);
    ASSERT(t_run_until(&pd.done, 5000));
    ASSERT_RC(pd.status, ZKL_ECONNLOSS);
    fp_stall(fp, 0);
    if (call == C_CONTENDERS)
        ASSERT(t_run_until(&pd2.done, 10000));
    ASSERT_RC(zkl_lock_release(hold.lk), ZKL_OK);
    ASSERT(t_run_until(&hold.released, 5000));
    if (a.lk != NULL) {
        if (call == C_ACQUIRE || call == C_CONTENDERS)
            ASSERT(t_run_until(&a.acquired, 10000));
        if (zkl_lock_is_held(a.lk))
            ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
        zkl_lock_free(a.lk);
    }
    ASSERT(WAIT_FOR(zkl_client_pending(x) == 0, 10000));
    ASSERT_EQ(t_zk_count(p), 0);
    ASSERT_EQ(t_zk_count(p2), 0);
    zkl_lock_free(hold.lk);
    zkl_client_free(x);
    zkl_client_free(h);
    fp_free(fp);
}

TEST(no_callback_inside_api_calls)
{
    api_call_while_failing(C_ACQUIRE);
    api_call_while_failing(C_CANCEL);
    api_call_while_failing(C_RELEASE);
    api_call_while_failing(C_FREE);
    api_call_while_failing(C_CONTENDERS);
}

/* ---------------- an own node deleted by someone else ---------------- */

/* Holds the locks one at a time as they are granted (each for hold_ms,
 * never two at once) until each of n was granted once. */
static void drain_one_at_a_time(t_lock_t *l, int n, long hold_ms)
{
    int done = 0, i, k;

    while (done < n) {
        int held = 0;

        ASSERT(WAIT_FOR(({
                            held = 0;
                            for (i = 0; i < n; i++)
                                held += zkl_lock_is_held(l[i].lk);
                            held;
                        }) > 0,
                        10000));
        ASSERT_EQ(held, 1);
        for (k = 0; !zkl_lock_is_held(l[k].lk); k++)
            ;
        t_run_for(hold_ms);
        for (i = 0, held = 0; i < n; i++)
            held += zkl_lock_is_held(l[i].lk);
        ASSERT_EQ(held, 1);
        ASSERT(zkl_lock_is_held(l[k].lk));
        ASSERT_RC(zkl_lock_release(l[k].lk), ZKL_OK);
        ASSERT(t_run_until(&l[k].released, 5000));
        done++;
    }
    for (i = 0; i < n; i++)
        ASSERT_EQ(l[i].acquired, 1);
}

/* n waiters of one client queue behind a holder; someone deletes the
 * node of waiter victim. Every waiter is granted once, one at a time:
 * the victim queues again rather than taking the lock with no node. */
static void own_node_deleted(int n, int victim)
{
    zkl_client_t *c = t_client(t_hosts(), SESSION_MS, NULL);
    const char *p = t_path(NULL);
    t_lock_t l[24];
    char name[64], full[512];
    int i;

    for (i = 0; i <= n; i++) {
        t_lock_init(&l[i], c, p);
        ASSERT_RC(zkl_lock_acquire(l[i].lk, -1), ZKL_OK);
        ASSERT_EQ(t_zk_wait_count(p, i + 1, 5000), i + 1);
    }
    ASSERT(t_run_until(&l[0].acquired, 5000));
    for (i = 1; i <= n; i++)
        ASSERT(WAIT_FOR(zkl_lock_state(l[i].lk) == ZKL_STATE_QUEUED, 5000));
    ASSERT_RC(zkl_lock_node_name(l[victim].lk, name, sizeof name), ZKL_OK);
    snprintf(full, sizeof full, "%s/%s", p, name);
    ASSERT_EQ(t_zk_delete(full), ZOK);
    t_run_for(500); /* the waiter behind the victim moves down */
    drain_one_at_a_time(l, n + 1, 150);
    ASSERT_EQ(t_zk_count(p), 0);
    ASSERT(WAIT_FOR(zkl_client_pending(c) == 0, 5000));
    for (i = 0; i <= n; i++)
        zkl_lock_free(l[i].lk);
    zkl_client_free(c);
}

TEST(own_node_deleted_short_queue)
{
    own_node_deleted(2, 1);
}

TEST(own_node_deleted_long_queue)
{
    own_node_deleted(20, 1);
}

/* ---------------- a path of 300 components ---------------- */

/* Its ancestors go out pipelined: more than 255 requests of one attempt
 * in flight at once. */
static void deep_path_of(char *p, const char *suffix)
{
    size_t len = (size_t)snprintf(p, ZKL_PATH_MAX + 1, "%s", t_path(suffix));
    int i;

    for (i = 0; i < 480 && len + 2 <= ZKL_PATH_MAX; i++)
        len += (size_t)snprintf(p + len, ZKL_PATH_MAX + 1 - len, "/d");
    ASSERT(i > 300);
    ASSERT_RC(zkl_path_validate(p), ZKL_OK);
}

TEST(deep_path)
{
    zkl_client_t *c = t_client(t_hosts(), SESSION_MS, NULL);
    char p[ZKL_PATH_MAX + 1], q[ZKL_PATH_MAX + 1];
    t_lock_t a, b;

    deep_path_of(p, "a");
    t_lock_init(&a, c, p);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 10000));
    ASSERT_EQ(t_zk_count(p), 1);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(t_run_until(&a.released, 5000));
    ASSERT_RC(a.last_status, ZKL_OK);
    ASSERT_EQ(t_zk_count(p), 0);
    ASSERT(WAIT_FOR(zkl_client_pending(c) == 0, 5000));
    /* Cancelled while the ancestors' replies come in: the attempt must
     * outlive every one of them (a count that wrapped let it go early),
     * and its node, created after the cancel, must still go. */
    deep_path_of(q, "b");
    t_lock_init(&b, c, q);
    ASSERT_RC(zkl_lock_acquire(b.lk, -1), ZKL_OK);
    ASSERT_RC(zkl_lock_cancel(b.lk), ZKL_OK);
    ASSERT(t_run_until(&b.failed, 5000));
    ASSERT(WAIT_FOR(zkl_client_pending(c) == 0, 10000));
    ASSERT_EQ(t_zk_count(q), 0);
    zkl_lock_free(a.lk);
    zkl_lock_free(b.lk);
    zkl_client_free(c);
}

/* ---------------- sends the ZooKeeper client refuses ---------------- */

/* The create went out, the listing behind it was refused: the acquire
 * fails, and the node the create made is deleted, not left idle. */
TEST(list_refused_after_create)
{
    zkl_client_t *c = t_client(t_hosts(), SESSION_MS, NULL);
    const char *p = t_path(NULL);
    t_lock_t a;

    t_lock_init(&a, c, p);
    /* The lock path must exist, so that the create is accepted. */
    t_lock_cycle(&a);
    t_refuse_next_list(ZMARSHALLINGERROR);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT_EQ(t_refusals(), 1);
    ASSERT(t_run_until(&a.failed, 5000));
    ASSERT_RC(a.last_status, ZKL_ENOMEM);
    ASSERT(WAIT_FOR(zkl_client_pending(c) == 0, 5000));
    ASSERT_EQ(t_zk_count(p), 0);
    zkl_lock_free(a.lk);
    zkl_client_free(c);
}

/* A release whose delete was refused tries again: the node goes while
 * the session lives, and RELEASED says 0. */
TEST(delete_refused_is_retried)
{
    zkl_client_t *c = t_client(t_hosts(), SESSION_MS, NULL);
    const char *p = t_path(NULL);
    t_lock_t a;

    t_lock_init(&a, c, p);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    t_refuse_next_delete(ZMARSHALLINGERROR);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(WAIT_FOR(t_refusals() == 1, 5000));
    ASSERT(t_run_until(&a.released, 5000));
    ASSERT_RC(a.last_status, ZKL_OK);
    ASSERT_EQ(t_zk_count(p), 0);
    ASSERT_EQ(zkl_client_pending(c), 0);
    zkl_lock_free(a.lk);
    zkl_client_free(c);
}

/* ---------------- a duplicate of our node ---------------- */

/* A node carrying X's uuid that is not X's node (what a create retried
 * after a lost reply leaves): X deletes it, and when that delete is cut
 * off, deletes it again after reconnecting. */
TEST(duplicate_node_deleted_through_cut)
{
    fp_t *fp = fp_new(t_base, t_port());
    zkl_client_t *x = t_client(fp_hosts(fp), SESSION_MS, NULL);
    zkl_client_t *h = t_client(t_hosts(), SESSION_MS, NULL);
    const char *p = t_path(NULL);
    char name[64], dup[512];
    t_lock_t hold, mid, a;

    t_hold_and_queue(&hold, h, &mid, h, p);
    t_lock_init(&a, x, p);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(zkl_lock_state(a.lk) == ZKL_STATE_QUEUED, 5000));
    ASSERT_EQ(t_zk_wait_count(p, 3, 5000), 3);
    ASSERT_RC(zkl_lock_node_name(a.lk, name, sizeof name), ZKL_OK);
    /* "<p>/_c_<uuid>-lock-" + a sequence: X's uuid, another node. */
    snprintf(dup, sizeof dup, "%s/%.45s", p, name);
    ASSERT_EQ(t_zk_create_as(NULL, dup, ZOO_SEQUENCE), ZOK);
    ASSERT_EQ(t_zk_count(p), 4);
    fp_arm(fp, FP_OP_DELETE, FP_CUT, 1);
    /* X's predecessor goes: X lists, finds the duplicate, deletes it. */
    ASSERT_RC(zkl_lock_cancel(mid.lk), ZKL_OK);
    ASSERT(WAIT_FOR(fp_fired(fp) == 1, 5000));
    /* The duplicate's delete is X's pending work until it is done. */
    ASSERT_EQ(zkl_client_pending(x), 2);
    ASSERT_EQ(t_zk_wait_count(p, 2, 10000), 2);
    ASSERT(WAIT_FOR(zkl_client_pending(x) == 1, 5000));
    ASSERT_RC(zkl_lock_release(hold.lk), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 10000));
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(t_run_until(&a.released, 5000));
    ASSERT_EQ(t_zk_count(p), 0);
    zkl_lock_free(a.lk);
    zkl_lock_free(mid.lk);
    zkl_lock_free(hold.lk);
    zkl_client_free(x);
    zkl_client_free(h);
    fp_free(fp);
}

/* ---------------- sequences past 2^31 ---------------- */

/* ZooKeeper prints a parent's counter with %010d: past 2^31 it is
 * negative, eleven characters ("-2147483648") or ten ("-000000001").
 * Curator orders by that text, so "-..." comes before every digit; the
 * names are planted by the observer, since no test can make a real
 * parent count that far. */
TEST(wrapped_sequence_names)
{
    zkl_client_t *c = t_client(t_hosts(), SESSION_MS, NULL);
    const char *p = t_path(NULL);
    static const char *const planted[] = {
        "_c_00000000-0000-4000-8000-000000000001-lock--2147483648",
        "_c_00000000-0000-4000-8000-000000000002-lock--000000001",
        "_c_00000000-0000-4000-8000-000000000003-lock-2147483647",
    };
    char full[3][512], mine[64];
    t_listing_t l;
    t_lock_t a;
    int i;

    t_zk_create_as(NULL, "/zkl-test", 0);
    ASSERT_EQ(t_zk_create_as(NULL, p, 0), ZOK);
    for (i = 0; i < 3; i++) {
        snprintf(full[i], sizeof full[i], "%s/%s", p, planted[i]);
        ASSERT_EQ(t_zk_create_as(NULL, full[i], 0), ZOK);
    }
    t_lock_init(&a, c, p);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(zkl_lock_state(a.lk) == ZKL_STATE_QUEUED, 5000));
    ASSERT_RC(zkl_lock_node_name(a.lk, mine, sizeof mine), ZKL_OK);
    /* Curator's order: the text after "lock-", so both negatives first
     * ("-0..." before "-2..."), then ours, then 2147483647. */
    memset(&l, 0, sizeof l);
    ASSERT_RC(zkl_contenders(c, p, t_listing_cb, &l), ZKL_OK);
    ASSERT(t_run_until(&l.done, 5000));
    ASSERT_RC(l.status, ZKL_OK);
    ASSERT_EQ(l.n, 4);
    ASSERT_STR(l.names[0], planted[1]);
    ASSERT_STR(l.names[1], planted[0]);
    ASSERT_STR(l.names[2], mine);
    ASSERT_STR(l.names[3], planted[2]);
    /* Ours waits behind both wrapped names, not the higher one. */
    ASSERT_EQ(t_zk_delete(full[2]), ZOK);
    ASSERT_EQ(t_zk_delete(full[0]), ZOK);
    t_run_for(300);
    ASSERT_EQ(a.acquired, 0);
    ASSERT_EQ(t_zk_delete(full[1]), ZOK);
    ASSERT(t_run_until(&a.acquired, 5000));
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(t_run_until(&a.released, 5000));
    ASSERT_EQ(t_zk_count(p), 0);
    ASSERT_EQ(t_zk_delete(p), ZOK);
    zkl_lock_free(a.lk);
    zkl_client_free(c);
}

/* ---------------- the CLI inherits it ---------------- */

static uint64_t wall_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* `zklock run` holds a lock behind a slow return path (every server byte
 * 1 s late), then is cut off; a session of this process waits on the
 * lock. The command must have had its SIGTERM (it writes the time) before
 * that session is granted, and the CLI must exit 3. */
TEST(cli_stops_command_before_another_holds)
{
    const char *bld = getenv("top_builddir");
    fp_t *fp = fp_new(t_base, t_port());
    zkl_client_t *w = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    char cli[1024], mark[64], script[256];
    uint64_t granted_ns, termed_ns = 0;
    t_lock_t wl;
    FILE *f;
    pid_t pid;
    int st;

    ASSERT(bld != NULL);
    snprintf(cli, sizeof cli, "%s/zklock", bld);
    snprintf(mark, sizeof mark, "/tmp/zkl-cli-term-%d", (int)getpid());
    unlink(mark);
    snprintf(script, sizeof script,
             "trap 'date +%%s%%N > %s; exit 0' TERM; "
             "while :; do sleep 0.05; done", mark);
    fp_latency_down(fp, 1000);
    fflush(NULL);
    if ((pid = fork()) == 0) {
        execl(cli, cli, "run", "-s", fp_hosts(fp), "--session-timeout",
              "4000", p, "--", "sh", "-c", script, (char *)NULL);
        _exit(127);
    }
    ASSERT(pid > 0);
    /* The CLI holds once its node is the only one; its keepalives then
     * run on the slow path for a while. */
    ASSERT(WAIT_FOR(t_zk_count(p) == 1, 15000));
    t_run_for(2500);
    t_lock_init(&wl, w, p);
    ASSERT_RC(zkl_lock_acquire(wl.lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(zkl_lock_state(wl.lk) == ZKL_STATE_QUEUED, 5000));
    fp_stall(fp, 1);
    ASSERT(t_run_until(&wl.acquired, 20000));
    granted_ns = wall_ns();
    {
        pid_t got = 0;

        /* (WAIT_FOR evaluates its condition once more at the end.) */
        ASSERT(WAIT_FOR(got == pid || (got = waitpid(pid, &st, WNOHANG)) == pid,
                        15000));
    }
    ASSERT(WIFEXITED(st));
    ASSERT_EQ(WEXITSTATUS(st), 3);
    f = fopen(mark, "r");
    ASSERT(f != NULL);
    ASSERT(fscanf(f, "%llu", (unsigned long long *)&termed_ns) == 1);
    fclose(f);
    unlink(mark);
    printf("the command had SIGTERM %.0f ms before another session held\n",
           ((double)granted_ns - (double)termed_ns) / 1e6);
    ASSERT(termed_ns < granted_ns);
    ASSERT_RC(zkl_lock_release(wl.lk), ZKL_OK);
    ASSERT(t_run_until(&wl.released, 5000));
    ASSERT_EQ(t_zk_count(p), 0);
    zkl_lock_free(wl.lk);
    zkl_client_free(w);
    fp_free(fp);
}

/* ---------------- ZSESSIONEXPIRED tells LOST at once ---------------- */

/* An answer of ZSESSIONEXPIRED to any request tells the holds LOST at
 * once (zklock.h): before the answer's own callback, and before the
 * connection's EXPIRED. Both orders changed once, when the expiry was
 * acted on later in the pass (review of issue 23). */
static int xo_wrote_seq, xo_wrote_status, xo_held_in_cb;
static zkl_lock_t *xo_lk;

static void xo_write_cb(zkl_client_t *c, int status,
                        const zkl_op_result_t *r, size_t n, void *arg)
{
    (void)c;
    (void)r;
    (void)n;
    (void)arg;
    xo_wrote_seq = ++t_event_seq;
    xo_wrote_status = status;
    xo_held_in_cb = zkl_lock_is_held(xo_lk);
}

TEST(expired_answer_tells_lost_before_its_own_callback)
{
    fp_t *fp = fp_new(t_base, t_port());
    zkl_client_t *x = t_client(fp_hosts(fp), 8000, NULL);
    const char *p = t_path(NULL);
    zkl_op_t op;
    t_lock_t a;

    t_lock_init(&a, x, p);
    xo_lk = a.lk;
    xo_wrote_seq = 0;
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    /* A check that writes nothing: the server applies the batch, and
     * the proxy turns its answer into ZSESSIONEXPIRED. */
    memset(&op, 0, sizeof op);
    op.type = ZKL_OP_CHECK;
    op.path = "/";
    op.version = -1;
    fp_arm_recode(fp, FP_OP_MULTI, ZSESSIONEXPIRED);
    ASSERT_RC(zkl_lock_write(a.lk, &op, 1, xo_write_cb, NULL), ZKL_OK);
    ASSERT(WAIT_FOR(xo_wrote_seq != 0 && a.lost, 5000));
    printf("LOST is event %d, the write's answer (%s) event %d\n",
           a.lost_ev, zkl_strerror(xo_wrote_status), xo_wrote_seq);
    ASSERT_EQ(a.last_status, ZKL_ESESSION);
    ASSERT_EQ(xo_wrote_status, ZKL_ECONNLOSS); /* applied or not: unknown */
    ASSERT(a.lost_ev < xo_wrote_seq);
    ASSERT_EQ(xo_held_in_cb, 0);
    /* The session lives on (only its answer was rewritten): the let-go
     * node is deleted in the background. */
    ASSERT(WAIT_FOR(t_zk_count(p) == 0, 5000));
    zkl_lock_free(a.lk);
    zkl_client_free(x);
    fp_free(fp);
}

static int xe_connected, xe_expired_seq, xe_listed_seq, xe_listed_status;
static const char *xe_path;

static void xe_list_cb(zkl_client_t *c, int status, const char *const *names,
                       size_t n, void *arg)
{
    (void)c;
    (void)names;
    (void)n;
    (void)arg;
    xe_listed_seq = ++t_event_seq;
    xe_listed_status = status;
}

/* Suspended: a listing goes out, to be answered once the client is
 * connected again, with ZSESSIONEXPIRED. */
static void xe_conn_cb(zkl_client_t *c, zkl_conn_event_t ev, void *arg)
{
    (void)arg;
    if (ev == ZKL_CONN_CONNECTED)
        xe_connected = 1;
    else if (ev == ZKL_CONN_SUSPENDED && xe_listed_seq == 0)
        ASSERT_RC(zkl_contenders(c, xe_path, xe_list_cb, NULL), ZKL_OK);
    else if (ev == ZKL_CONN_EXPIRED && xe_expired_seq == 0)
        xe_expired_seq = ++t_event_seq;
}

TEST(expired_answer_tells_lost_before_the_session_event)
{
    zkl_options_t *o;
    zkl_client_t *x;
    const char *p = t_path(NULL);
    zhandle_t *thief;
    clientid_t id;
    int up = 0;
    t_lock_t a;

    xe_connected = xe_expired_seq = xe_listed_seq = 0;
    xe_path = p;
    ASSERT_RC(zkl_options_new(&o), ZKL_OK);
    ASSERT_RC(zkl_options_set_servers(o, t_hosts()), ZKL_OK);
    ASSERT_RC(zkl_options_set_session_timeout(o, 8000), ZKL_OK);
    ASSERT_RC(zkl_options_set_conn_cb(o, xe_conn_cb, NULL), ZKL_OK);
    ASSERT_RC(zkl_client_new(&x, o), ZKL_OK);
    zkl_options_free(o);
    ASSERT_RC(zkl_libevent_attach(x, t_base), ZKL_OK);
    ASSERT(t_run_until(&xe_connected, 10000));
    t_lock_init(&a, x, p);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    /* Another handle takes the session over and closes it: the server
     * ends it, and our client learns it on reconnecting. */
    id = *zoo_client_id(x->zh);
    thief = zookeeper_init(t_hosts(), t_zk_connected_watcher, 8000, &id,
                           &up, 0);
    ASSERT(thief != NULL);
    t_zk_pump_until(thief, &up, 10000);
    ASSERT(up);
    zookeeper_close(thief);
    ASSERT(WAIT_FOR(xe_expired_seq != 0 && a.lost && xe_listed_seq != 0,
                    15000));
    printf("LOST is event %d, the listing's answer (%s) event %d, "
           "ZKL_CONN_EXPIRED event %d\n", a.lost_ev,
           zkl_strerror(xe_listed_status), xe_listed_seq, xe_expired_seq);
    ASSERT(a.lost_ev < xe_listed_seq);
    ASSERT(a.lost_ev < xe_expired_seq);
    ASSERT_EQ(t_zk_count(p), 0);
    zkl_lock_free(a.lk);
    zkl_client_free(x);
}
