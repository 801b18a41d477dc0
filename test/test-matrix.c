/* The fault matrix: one test per (state of the attempt machine, fault).
 *
 * States: a request in flight (create, list, watch, release: the proxy
 * aims the fault at that very request), or a quiet state (waiting in the
 * queue, holding). Faults:
 *   cut     the request never reaches the server, the connection resets
 *           (quiet states: the connection resets);
 *   lose    the server does the request, its reply is lost, the
 *           connection resets (quiet states: the reply to the client's
 *           keepalive, the one request a quiet client sends, is lost);
 *   delay   the reply comes late, inside the session timeout (quiet
 *           states: every byte is 300 ms late for 1.5 s);
 *   expire  the request reaches the server, then nothing moves for longer
 *           than the session timeout, so the server expires the session.
 *
 * Every case checks the one right ending: the attempt still acquires in
 * its turn (the session survived, or it re-queued on a new one), a hold
 * survives a fault the session survives and is reported lost otherwise,
 * a release completes; never two holders told they hold at once; no
 * node left behind; every wait bounded. The client under test reaches
 * the server through the proxy; the other contender and the observer
 * connect directly.
 *
 * The matrix runs for the mutex (both contenders mutexes) and for the
 * read/write lock (X a reader, H a writer: X waits behind H's write in
 * the acquire cases, H's write waits behind X's read in the hold cases),
 * which takes both of its decisions through every fault, and for the
 * semaphore (both contenders leases of a one-lease semaphore: X waits
 * for the leases, holding the semaphore's mutex, in the acquire cases;
 * the faults aim at the requests on its leases, the mutex's being the
 * mutex matrix's). */
#include "faultproxy.h"
#include "harness.h"

enum state { S_CREATE, S_LIST, S_WATCH, S_WAITING, S_HELD, S_RELEASE };
enum fault { F_CUT, F_LOSE, F_DELAY, F_EXPIRE };

#define SESSION_MS 2000
#define EXPIRE_STALL_MS (SESSION_MS + 2000)
#define DELAY_MS 500

static const char *const state_name[] = {"create", "list",    "watch",
                                         "waiting", "held",   "release"};
static const char *const fault_name[] = {"cut", "lose", "delay", "expire"};

/* The kinds of X's and H's locks in the case under way. */
static zkl_lock_kind_t x_kind, h_kind;

/* The request a state's fault is aimed at. */
static int op_of(enum state s)
{
    switch (s) {
    case S_CREATE:
        return FP_OP_CREATE2;
    case S_LIST:
        return FP_OP_LIST;
    case S_WATCH:
        return FP_OP_GETDATA;
    case S_RELEASE:
        return FP_OP_DELETE;
    default:
        return FP_OP_ANY; /* the keepalive */
    }
}

static void arm(fp_t *fp, enum state s, enum fault f)
{
    static const fp_fault_t kind[] = {FP_CUT, FP_LOSE, FP_DELAY, FP_STALL};
    static const int ms[] = {1, 150, DELAY_MS, EXPIRE_STALL_MS};

    fp_arm_path(fp, op_of(s), kind[f], ms[f],
                x_kind == ZKL_KIND_LEASE && op_of(s) != FP_OP_ANY
                    ? "/leases"
                    : NULL);
}

/* Where the contenders' nodes are: the lock path, or a semaphore's
 * leases. */
static const char *node_dir(const char *p)
{
    static char d[512];

    if (x_kind != ZKL_KIND_LEASE)
        return p;
    snprintf(d, sizeof d, "%s/leases", p);
    return d;
}

static void init(t_lock_t *t, zkl_client_t *c, const char *p,
                 zkl_lock_kind_t k)
{
    if (k == ZKL_KIND_LEASE)
        t_lock_init_lease(t, c, p, 1);
    else
        t_lock_init_kind(t, c, p, k);
}

/* A fault on a quiet state: applied now, over once this returns. A
 * holder's next request is its keepalive; a waiter sends nothing while
 * it waits, so a request of the same client (a listing of the lock's
 * contenders) carries the lost reply, and the connection it breaks is
 * the waiter's too. */
static void quiet_fault(fp_t *fp, enum fault f, zkl_client_t *x,
                        const char *p)
{
    int fired = fp_fired(fp);
    static t_listing_t l; /* its answer may come after we return */

    switch (f) {
    case F_CUT:
        fp_cut(fp);
        break;
    case F_LOSE:
        arm(fp, S_HELD, F_LOSE);
        if (x != NULL) {
            memset(&l, 0, sizeof l);
            ASSERT_RC(zkl_contenders(x, p, t_listing_cb, &l), ZKL_OK);
        }
        ASSERT(WAIT_FOR(fp_fired(fp) > fired, SESSION_MS));
        break;
    case F_DELAY:
        fp_latency(fp, 300);
        t_run_for(1500);
        fp_latency(fp, 0);
        break;
    case F_EXPIRE:
        fp_stall_for(fp, EXPIRE_STALL_MS);
        break;
    }
}

/* The session of the client under test after the fault: expired and
 * replaced exactly when the fault outlasted it, reconnected after a
 * reset. */
static void check_session(const t_conn_t *xc, fp_t *fp, int conns,
                          enum fault f)
{
    if (f != F_DELAY)
        ASSERT(WAIT_FOR(fp_accepted(fp) > conns, 15000));
    ASSERT(WAIT_FOR(xc->connected, 15000));
    ASSERT_EQ(t_has_event(xc, ZKL_CONN_EXPIRED), f == F_EXPIRE);
}

/* X's lock node is the only child and its token is that node's czxid. */
static void check_sole_holder(const char *p, t_lock_t *x)
{
    char name[64], full[512], **names;
    uint64_t tok;
    int n = t_zk_children(p, &names);

    ASSERT_EQ(n, 1);
    ASSERT_RC(zkl_lock_node_name(x->lk, name, sizeof name), ZKL_OK);
    ASSERT_STR(names[0], name);
    t_zk_free_names(names, n);
    snprintf(full, sizeof full, "%s/%s", p, name);
    ASSERT_RC(zkl_lock_token(x->lk, &tok), ZKL_OK);
    ASSERT_EQ((int64_t)tok, t_zk_czxid(full));
}

/* X (through the proxy) queues behind H; the fault hits X while its
 * acquire is at state s. X must end up queued once, and acquire once
 * H lets go. */
static void acquire_case(enum state s, enum fault f, fp_t *fp,
                         zkl_client_t *x, t_conn_t *xc, zkl_client_t *h,
                         const char *p)
{
    t_lock_t a, b;
    int conns = fp_accepted(fp);

    init(&b, h, p, h_kind);
    init(&a, x, p, x_kind);
    ASSERT_RC(zkl_lock_acquire(b.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&b.acquired, 5000));
    if (s != S_WAITING)
        arm(fp, s, f);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    if (s == S_WAITING) {
        ASSERT_EQ(t_zk_wait_count(node_dir(p), 2, 5000), 2);
        t_run_for(200); /* the predecessor watch is set */
        quiet_fault(fp, f, x, p);
    } else {
        ASSERT(WAIT_FOR(fp_fired(fp) == 1, 5000));
    }
    if (f == F_EXPIRE)
        ASSERT(WAIT_FOR(t_has_event(xc, ZKL_CONN_EXPIRED), 15000));
    check_session(xc, fp, conns, f);
    /* Re-queued (or still queued) exactly once, behind the holder. */
    ASSERT_EQ(t_zk_wait_count(node_dir(p), 2, 10000), 2);
    t_run_for(300);
    ASSERT_EQ(t_zk_count(node_dir(p)), 2);
    ASSERT(WAIT_FOR(zkl_lock_state(a.lk) == ZKL_STATE_QUEUED, 5000));
    ASSERT_EQ(a.n, 0);
    ASSERT_RC(zkl_lock_release(b.lk), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 10000));
    /* H's RELEASED and X's ACQUIRED come over two connections: either
     * may be delivered first. */
    ASSERT(WAIT_FOR(b.released == 1, 5000));
    ASSERT_EQ(b.lost, 0);
    check_sole_holder(node_dir(p), &a);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(t_run_until(&a.released, 5000));
    ASSERT_RC(a.last_status, ZKL_OK);
    ASSERT_EQ(a.n, 2); /* ACQUIRED, RELEASED: nothing else */
    zkl_lock_free(a.lk);
    zkl_lock_free(b.lk);
}

/* X holds with H queued behind; the fault hits X while it holds (or
 * while its release is in flight). */
static void hold_case(enum state s, enum fault f, fp_t *fp,
                      zkl_client_t *x, t_conn_t *xc, zkl_client_t *h,
                      const char *p)
{
    t_lock_t a, b;
    uint64_t xtok, htok, tok;
    int conns;

    init(&a, x, p, x_kind);
    init(&b, h, p, h_kind);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    ASSERT_RC(zkl_lock_acquire(b.lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(zkl_lock_state(b.lk) == ZKL_STATE_QUEUED, 5000));
    ASSERT_EQ(t_zk_wait_count(node_dir(p), 2, 5000), 2);
    ASSERT_RC(zkl_lock_token(a.lk, &xtok), ZKL_OK);
    t_run_for(200);
    conns = fp_accepted(fp);

    if (s == S_RELEASE) {
        arm(fp, s, f);
        ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
        ASSERT(!zkl_lock_is_held(a.lk));
        ASSERT(WAIT_FOR(fp_fired(fp) == 1, 5000));
        ASSERT(t_run_until(&a.released, EXPIRE_STALL_MS + 10000));
        /* Done or made moot by the expiry; the node is gone either way
         * and the hold was never reported lost. */
        if (f == F_EXPIRE)
            ASSERT(a.last_status == ZKL_OK ||
                   a.last_status == ZKL_ESESSION);
        else
            ASSERT_RC(a.last_status, ZKL_OK);
        ASSERT_EQ(a.lost, 0);
        ASSERT(t_run_until(&b.acquired, 10000));
        check_session(xc, fp, conns, f);
    } else {
        quiet_fault(fp, f, NULL, NULL);
        if (f == F_EXPIRE) {
            /* X is told SUSPENDED, then LOST, and H gets the lock with
             * a higher token. zklock.h promises LOST before the server
             * can expire the session and grant the lock to another
             * contender (X's loop runs, one clock): H's grant reaches
             * this process only after that, so X's LOST comes first
             * here, and SUSPENDED before it. */
            ASSERT(t_run_until(&a.lost, EXPIRE_STALL_MS + 5000));
            ASSERT_RC(a.last_status, ZKL_ESESSION);
            ASSERT(!zkl_lock_is_held(a.lk));
            ASSERT(a.suspended == 1 && a.susp_ev < a.lost_ev);
            ASSERT(t_run_until(&b.acquired, 10000));
            ASSERT(a.lost_ev < b.grant_ev);
            ASSERT(a.susp_ev < b.grant_ev);
            ASSERT_RC(zkl_lock_token(b.lk, &htok), ZKL_OK);
            ASSERT(htok > xtok);
            check_session(xc, fp, conns, f);
        } else {
            check_session(xc, fp, conns, f);
            /* The hold survives: restored after every suspension, same
             * token, H still waiting. */
            ASSERT(WAIT_FOR(a.restored == a.suspended, 10000));
            if (f != F_DELAY)
                ASSERT(a.suspended >= 1);
            ASSERT(zkl_lock_is_held(a.lk));
            ASSERT_RC(zkl_lock_token(a.lk, &tok), ZKL_OK);
            ASSERT_EQ(tok, xtok);
            ASSERT_EQ(a.lost, 0);
            ASSERT_EQ(b.n, 0);
            ASSERT_EQ(t_zk_count(node_dir(p)), 2);
            ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
            ASSERT(t_run_until(&a.released, 5000));
            ASSERT_RC(a.last_status, ZKL_OK);
            ASSERT(t_run_until(&b.acquired, 10000));
        }
    }
    check_sole_holder(node_dir(p), &b);
    ASSERT_EQ(b.n, 1);
    zkl_lock_free(a.lk);
    zkl_lock_free(b.lk);
}

static void run_case(enum state s, enum fault f, zkl_lock_kind_t xk,
                     zkl_lock_kind_t hk)
{
    fp_t *fp = fp_new(t_base, t_port());
    t_conn_t xc;
    zkl_client_t *x, *h;
    const char *p = t_path(NULL);
    uint64_t t0 = t_now_ms();

    ASSERT(fp != NULL);
    x_kind = xk;
    h_kind = hk;
    x = t_client(fp_hosts(fp), SESSION_MS, &xc);
    h = t_client(t_hosts(), 10000, NULL);
    if (s == S_HELD || s == S_RELEASE)
        hold_case(s, f, fp, x, &xc, h, p);
    else
        acquire_case(s, f, fp, x, &xc, h, p);
    /* Nothing left to do for either client, and no node left over. */
    ASSERT(WAIT_FOR(zkl_client_pending(x) == 0 &&
                        zkl_client_pending(h) == 0,
                    10000));
    ASSERT_EQ(t_zk_wait_count(node_dir(p), 0, 5000), 0);
    if (xk == ZKL_KIND_LEASE) {
        char m[512];

        snprintf(m, sizeof m, "%s/locks", p);
        ASSERT_EQ(t_zk_wait_count(m, 0, 5000), 0);
    }
    fprintf(stderr, "matrix %-7s %-6s ok: %d connection(s), %s, %llu ms\n",
            state_name[s], fault_name[f], fp_accepted(fp),
            t_has_event(&xc, ZKL_CONN_EXPIRED) ? "session expired"
                                              : "session kept",
            (unsigned long long)(t_now_ms() - t0));
    zkl_client_free(x);
    zkl_client_free(h);
    fp_free(fp);
}

#define M_ (ZKL_KIND_MUTEX)
#define R_ (ZKL_KIND_READ)
#define W_ (ZKL_KIND_WRITE)
#define L_ (ZKL_KIND_LEASE)
#define MATRIX(st, S)                                                       \
    TEST(matrix_##st##_cut) { run_case(S, F_CUT, M_, M_); }                 \
    TEST(matrix_##st##_lose) { run_case(S, F_LOSE, M_, M_); }               \
    TEST(matrix_##st##_delay) { run_case(S, F_DELAY, M_, M_); }             \
    TEST(matrix_##st##_expire) { run_case(S, F_EXPIRE, M_, M_); }           \
    TEST(rw_matrix_##st##_cut) { run_case(S, F_CUT, R_, W_); }              \
    TEST(rw_matrix_##st##_lose) { run_case(S, F_LOSE, R_, W_); }            \
    TEST(rw_matrix_##st##_delay) { run_case(S, F_DELAY, R_, W_); }          \
    TEST(rw_matrix_##st##_expire) { run_case(S, F_EXPIRE, R_, W_); }

#define SEM_MATRIX(st, S)                                                   \
    TEST(sem_matrix_##st##_cut) { run_case(S, F_CUT, L_, L_); }             \
    TEST(sem_matrix_##st##_lose) { run_case(S, F_LOSE, L_, L_); }           \
    TEST(sem_matrix_##st##_delay) { run_case(S, F_DELAY, L_, L_); }         \
    TEST(sem_matrix_##st##_expire) { run_case(S, F_EXPIRE, L_, L_); }

MATRIX(create, S_CREATE)
MATRIX(list, S_LIST)
MATRIX(watch, S_WATCH)
MATRIX(waiting, S_WAITING)
MATRIX(held, S_HELD)
MATRIX(release, S_RELEASE)
/* A lease has no watch of its own while it waits: its listing is its
 * watch (the list cases). */
SEM_MATRIX(create, S_CREATE)
SEM_MATRIX(list, S_LIST)
SEM_MATRIX(waiting, S_WAITING)
SEM_MATRIX(held, S_HELD)
SEM_MATRIX(release, S_RELEASE)

/* Whether dir's child name is gone within ms. */
static int wait_gone(const char *dir, const char *name, long ms)
{
    uint64_t end = t_now_ms() + (uint64_t)ms;
    char **names;
    int n, i, found;

    do {
        n = t_zk_children(dir, &names);
        for (i = 0, found = 0; i < n; i++)
            found |= strcmp(names[i], name) == 0;
        t_zk_free_names(names, n);
        if (!found)
            return 1;
        t_run_for(100);
    } while (t_now_ms() < end);
    return 0;
}

/* A waiter holding the semaphore's mutex, with its lease beyond the
 * limit, loses the mutex without losing its session (a slow return path
 * makes it presume the session gone): its surplus lease must go too, or
 * whoever takes the mutex next waits for ever behind it. */
TEST(sem_mutex_lost_surplus_lease_goes)
{
    fp_t *fp = fp_new(t_base, t_port());
    t_conn_t pc;
    zkl_client_t *a = t_client(t_hosts(), 10000, NULL);
    zkl_client_t *q = t_client(t_hosts(), 10000, NULL);
    zkl_client_t *x;
    const char *p = t_path(NULL);
    char d[512], m[512], surplus[ZKL_NODE_NAME_SIZE], xmutex[256];
    char **names;
    int n;
    t_lock_t h, pl, ql;

    memset(&pc, 0, sizeof pc);
    x = t_client(fp_hosts(fp), 2000, &pc);
    snprintf(d, sizeof d, "%s/leases", p);
    snprintf(m, sizeof m, "%s/locks", p);
    t_lock_init_lease(&h, a, p, 1);
    t_lock_init_lease(&pl, x, p, 1);
    t_lock_init_lease(&ql, q, p, 1);
    ASSERT_RC(zkl_lock_acquire(h.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&h.acquired, 5000));
    /* X holds the mutex and has a lease beyond the limit: its own. */
    ASSERT_RC(zkl_lock_acquire(pl.lk, -1), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(d, 2, 5000), 2);
    /* The server can show the lease before X has read its create's
     * reply: its name is known once it has. */
    ASSERT(WAIT_FOR(zkl_lock_node_name(pl.lk, surplus, sizeof surplus) ==
                        ZKL_OK,
                    5000));
    t_run_for(300);
    /* Q waits for the mutex behind X. */
    ASSERT_RC(zkl_lock_acquire(ql.lk, -1), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(m, 2, 5000), 2);
    n = t_zk_children(m, &names);
    snprintf(xmutex, sizeof xmutex, "%s", names[0]);
    t_zk_free_names(names, n);
    t_run_for(300);
    /* Every byte to X a second late, for twice its session timeout: X
     * presumes its session gone, so its mutex is LOST to it. */
    fp_latency_down(fp, 1000);
    t_run_for(4000);
    fp_latency_down(fp, 0);
    /* The session survived (the server heard X all along), so nothing
     * but zklock itself can have deleted X's nodes: its mutex node and,
     * with it, the surplus lease; H still holds its lease. */
    ASSERT(WAIT_FOR(pc.connected, 10000));
    ASSERT(!t_has_event(&pc, ZKL_CONN_EXPIRED));
    ASSERT(wait_gone(m, xmutex, 10000)); /* lost, not only slow */
    ASSERT(wait_gone(d, surplus, 10000));
    ASSERT(zkl_lock_is_held(h.lk));
    ASSERT_EQ(pl.n, 0);
    ASSERT_EQ(ql.n, 0);
    /* And both waiters get their lease in turn. */
    ASSERT_RC(zkl_lock_release(h.lk), ZKL_OK);
    ASSERT(WAIT_FOR(pl.acquired || ql.acquired, 10000));
    if (pl.acquired)
        ASSERT_RC(zkl_lock_release(pl.lk), ZKL_OK);
    else
        ASSERT_RC(zkl_lock_release(ql.lk), ZKL_OK);
    ASSERT(WAIT_FOR(pl.acquired && ql.acquired, 10000));
    zkl_lock_free(pl.lk);
    zkl_lock_free(ql.lk);
    zkl_lock_free(h.lk);
    zkl_client_free(x);
    zkl_client_free(q);
    zkl_client_free(a);
    fp_free(fp);
}
