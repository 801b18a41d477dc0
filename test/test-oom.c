/* Allocation failure: every allocation zklock makes, failed in turn.
 *
 * A scenario that touches every allocating path (options with auth and
 * ACLs, a client, the libevent adapter, a crowd on one lock long enough
 * for the queue view, timeouts for the timer heap, a listing, a
 * multi-lock and a guarded write) runs once
 * with allocation number N failing, for N = 1, 2, ... until a run makes
 * fewer than N allocations. In each run, every call answers ZKL_OK or
 * ZKL_ENOMEM; every accepted acquire gets exactly one ending, also when
 * the client is freed under a crowd of them, so all are answered at once;
 * nothing zklock allocated is left once everything is freed; and no node
 * is left on the server. */
#include "harness.h"

static struct {
    long count;   /* allocations since the run began */
    long fail_at; /* the one to fail; 0: none */
    long failed;  /* failures handed out */
    long live;    /* blocks handed out and not yet freed */
} M;

static int fail_now(void)
{
    if (++M.count == M.fail_at) {
        M.failed++;
        return 1;
    }
    return 0;
}

static void *m_malloc(size_t n)
{
    void *p = fail_now() ? NULL : malloc(n);

    M.live += p != NULL;
    return p;
}

static void *m_calloc(size_t n, size_t size)
{
    void *p = fail_now() ? NULL : calloc(n, size);

    M.live += p != NULL;
    return p;
}

static void *m_realloc(void *p, size_t n)
{
    void *q;

    if (fail_now())
        return NULL;
    q = realloc(p, n);
    M.live += p == NULL && q != NULL;
    return q;
}

static void m_free(void *p)
{
    M.live -= p != NULL;
    free(p);
}

/* An assertion that says which allocation was failed. */
#define CHECK(cond)                                                         \
    do {                                                                    \
        if (!(cond))                                                        \
            FAILF("with allocation %ld failed: %s", M.fail_at, #cond);      \
    } while (0)

static const zkl_allocator_t counting = {m_malloc, m_calloc, m_realloc,
                                         m_free};

TEST(allocator_bad_args)
{
    zkl_allocator_t half = counting;
    zkl_options_t *o;

    half.free_fn = NULL;
    ASSERT_RC(zkl_set_allocator(&half), ZKL_EINVAL);
    ASSERT_RC(zkl_set_allocator(&counting), ZKL_OK);
    M.live = 0;
    ASSERT_RC(zkl_options_new(&o), ZKL_OK);
    ASSERT_EQ(M.live, 1); /* it went through the allocator set */
    zkl_options_free(o);
    ASSERT_EQ(M.live, 0);
    ASSERT_RC(zkl_set_allocator(NULL), ZKL_OK);
    ASSERT_RC(zkl_options_new(&o), ZKL_OK);
    ASSERT_EQ(M.live, 0); /* and back to the C library's */
    zkl_options_free(o);
}

#define CROWD 20 /* past the queue view's threshold of 16 */

static int ok_or_nomem(int rc)
{
    if (rc != ZKL_OK && rc != ZKL_ENOMEM)
        FAILF("allocation %ld failed: got %s", M.fail_at, zkl_err_name(rc));
    return rc == ZKL_OK;
}

struct listing {
    int calls, status;
};

static void listed(zkl_client_t *c, int status, const char *const *names,
                   size_t n, void *arg)
{
    struct listing *l = arg;

    (void)c;
    (void)names;
    (void)n;
    l->calls++;
    l->status = status;
}

static int settled(void *arg)
{
    t_lock_t *t = arg;
    int i;

    for (i = 0; i < CROWD; i++)
        if (t[i].lk != NULL && zkl_lock_state(t[i].lk) != ZKL_STATE_IDLE)
            return 0;
    return 1;
}

struct oom_multi {
    int n, acquired, released, status;
    int writes, write_status;
};

static void oom_multi_cb(zkl_multi_t *m, zkl_lock_event_t ev, int status,
                         void *arg)
{
    struct oom_multi *s = arg;

    (void)m;
    s->n++;
    s->status = status;
    s->acquired += ev == ZKL_LOCK_ACQUIRED;
    s->released += ev == ZKL_LOCK_RELEASED;
}

static void oom_write_cb(zkl_client_t *c, int status,
                         const zkl_op_result_t *res, size_t n, void *arg)
{
    struct oom_multi *s = arg;

    (void)c;
    (void)res;
    (void)n;
    s->writes++;
    s->write_status = status;
}

/* A multi-lock of three paths and a guarded write while it holds: every
 * accepted call answered exactly once, with success or ZKL_ENOMEM. */
static void multi_round(zkl_client_t *c, const char *const *mp,
                        const char *wpath)
{
    static struct oom_multi s;
    zkl_multi_t *m = NULL;
    zkl_op_t op = {ZKL_OP_CREATE, wpath, "x", 1, ZKL_CREATE_EPHEMERAL, 0};

    memset(&s, 0, sizeof s);
    if (!ok_or_nomem(zkl_multi_new(&m, c, mp, NULL, 3, oom_multi_cb, &s)))
        return;
    if (ok_or_nomem(zkl_multi_acquire(m, 10000))) {
        CHECK(WAIT_FOR(s.n >= 1, 10000));
        t_run_for(20); /* a second answer would come now */
        CHECK(s.n == 1);
        if (s.acquired) {
            if (ok_or_nomem(zkl_multi_write(m, &op, 1, oom_write_cb, &s))) {
                CHECK(WAIT_FOR(s.writes == 1, 10000));
                CHECK(s.write_status == ZKL_OK);
            }
            CHECK(zkl_multi_release(m) == ZKL_OK);
            CHECK(WAIT_FOR(s.released == 1, 10000));
            t_run_for(20);
            CHECK(s.n == 2);
            CHECK(s.writes <= 1);
        } else {
            CHECK(s.status == ZKL_ENOMEM);
        }
    }
    zkl_multi_free(m);
}

/* One run of the scenario; returns whether allocation fail_at was
 * reached. */
static int run_scenario(const char *path, const char *const *mp,
                        const char *wpath, long fail_at)
{
    static t_lock_t t[CROWD];
    zkl_options_t *o = NULL;
    zkl_client_t *c = NULL;
    struct listing ls = {0, 0};
    int accepted[CROWD] = {0}, before[CROWD], i, rc, queued;

    M.count = 0;
    M.failed = 0;
    M.live = 0;
    M.fail_at = fail_at;
    memset(t, 0, sizeof t);

    if (!ok_or_nomem(zkl_options_new(&o)))
        goto out;
    if (!ok_or_nomem(zkl_options_set_servers(o, t_hosts())) ||
        !ok_or_nomem(zkl_options_add_auth(o, "digest", "oom:secret")) ||
        !ok_or_nomem(zkl_options_set_acl(o, ZKL_ACL_PRIVATE)) ||
        !ok_or_nomem(zkl_options_add_acl_id(o, "ip", "127.0.0.1")) ||
        !ok_or_nomem(zkl_options_set_chroot(o, "/")))
        goto out;
    zkl_options_set_session_timeout(o, 4000);
    if (!ok_or_nomem(zkl_client_new(&c, o)))
        goto out;
    if (!ok_or_nomem(zkl_libevent_attach(c, t_base)))
        goto out;
    CHECK(WAIT_FOR(zkl_client_state(c) == ZKL_CONN_CONNECTED, 10000));

    for (i = 0; i < CROWD; i++) {
        rc = zkl_lock_new(&t[i].lk, c, path, t_lock_cb, &t[i]);
        if (!ok_or_nomem(rc)) {
            t[i].lk = NULL;
            continue;
        }
        t[i].release_on_acquire = 1;
    }
    /* All queue up before any is granted, so the crowd is a queue. */
    for (i = 0; i < CROWD; i++)
        if (t[i].lk != NULL)
            accepted[i] = ok_or_nomem(
                zkl_lock_acquire(t[i].lk, i % 2 ? 20000 : -1));
    if (ok_or_nomem(zkl_contenders(c, path, listed, &ls)))
        CHECK(WAIT_FOR(ls.calls == 1, 10000));
    else
        ls.calls = 1;
    CHECK(t_run_cond(settled, t, 20000));
    t_run_for(20); /* a second callback would come now */
    CHECK(ls.calls == 1);
    CHECK(ls.status == ZKL_OK || ls.status == ZKL_ENOMEM);
    for (i = 0; i < CROWD; i++) {
        if (!accepted[i]) {
            CHECK(t[i].n == 0);
            continue;
        }
        /* Granted then released: exactly those two events. */
        CHECK(t[i].acquired == 1);
        CHECK(t[i].released == 1);
        CHECK(t[i].n == 2);
        CHECK(t[i].st[1] == ZKL_OK);
    }

    multi_round(c, mp, wpath);

    /* Round two: one holds, the rest queue behind it, and the client is
     * freed under them, so every one of them is answered at once. */
    for (i = 0; i < CROWD; i++) {
        before[i] = t[i].n;
        t[i].release_on_acquire = 0;
        accepted[i] = 0;
    }
    if (t[0].lk != NULL &&
        (accepted[0] = ok_or_nomem(zkl_lock_acquire(t[0].lk, -1)))) {
        int acquired = t[0].acquired;

        CHECK(WAIT_FOR(t[0].acquired == acquired + 1, 10000));
    }
    for (i = 1, queued = accepted[0]; i < CROWD; i++)
        if (t[i].lk != NULL)
            queued += accepted[i] =
                ok_or_nomem(zkl_lock_acquire(t[i].lk, -1));
    if (accepted[0])
        CHECK(t_zk_wait_count(path, queued, 10000) == queued);
    zkl_client_free(c); /* answers everything before returning */
    c = NULL;
    for (i = 0; i < CROWD; i++) {
        int n = t[i].n - before[i];

        if (!accepted[i]) {
            CHECK(n == 0);
        } else if (i == 0) {
            CHECK(n == 2); /* ACQUIRED, then LOST as the client goes */
            CHECK(t[0].ev[t[0].n - 1] == ZKL_LOCK_LOST);
        } else {
            CHECK(n == 1);
            CHECK(t[i].ev[t[i].n - 1] == ZKL_LOCK_FAILED);
            CHECK(t[i].last_status == ZKL_ECLOSED);
        }
    }

out:
    for (i = 0; i < CROWD; i++)
        if (t[i].lk != NULL)
            zkl_lock_free(t[i].lk);
    if (c != NULL)
        zkl_client_free(c);
    zkl_options_free(o);
    if (M.live != 0)
        FAILF("allocation %ld failed: %ld block(s) leaked", fail_at,
              M.live);
    CHECK(t_zk_wait_count(path, 0, 5000) == 0);
    for (i = 0; i < 3; i++)
        CHECK(t_zk_wait_count(mp[i], 0, 5000) == 0);
    return M.failed > 0;
}

TEST(out_of_memory_each_allocation)
{
    const char *path = t_path(NULL);
    static char mbuf[3][256], wpath[256];
    const char *mp[3];
    long n, total;
    int i;

    for (i = 0; i < 3; i++) {
        char sfx[8];

        snprintf(sfx, sizeof sfx, "m%d", i);
        snprintf(mbuf[i], sizeof mbuf[i], "%s", t_path(sfx));
        mp[i] = mbuf[i];
    }
    snprintf(wpath, sizeof wpath, "%s", t_path("written"));
    ASSERT_RC(zkl_set_allocator(&counting), ZKL_OK);
    for (n = 1; run_scenario(path, mp, wpath, n); n++)
        ;
    total = M.count;
    /* Nothing failed in the last run: it made fewer than n allocations,
     * and each of the first n - 1 was failed in one run before. */
    ASSERT(total >= CROWD);
    ASSERT(total < n);
    printf("# %ld allocations, each failed in turn\n", total);
    zkl_set_allocator(NULL);
}
