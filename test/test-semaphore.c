/* Semaphores (Curator's InterProcessSemaphoreV2 layout): the limit,
 * several leases at once, the count node, bad input, each contender in
 * its own session unless a test says otherwise. The fault matrix is in
 * test-matrix.c, Curator interop in test-curator.sh. */
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include "faultproxy.h"
#include "harness.h"
#include "interpose.h"

/* jute's op code of setData: the record's write. */
#define OP_SETDATA 5

static const char *sub(const char *p, const char *child)
{
    static char buf[4][512];
    static int k;
    char *b = buf[k++ % 4];

    snprintf(b, sizeof buf[0], "%s/%s", p, child);
    return b;
}

/* The path of a lease node. */
static const char *lease_node(const char *p, const char *name)
{
    static char buf[600];

    snprintf(buf, sizeof buf, "%s/leases/%s", p, name);
    return buf;
}

static void release(t_lock_t *t)
{
    int before = t->released;

    ASSERT_RC(zkl_lock_release(t->lk), ZKL_OK);
    ASSERT(WAIT_FOR(t->released > before, 5000));
    ASSERT_RC(t->last_status, ZKL_OK);
}

/* A raw write of the count node: Curator's SharedCount form. */
static void set_count(const char *path, int v, int len)
{
    unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 8), (unsigned char)v};

    ASSERT_RC(t_zk_set(path, (const char *)b, len), ZOK);
}

TEST(sem_limit_and_layout)
{
    zkl_client_t *c[4];
    t_lock_t l[4];
    const char *p = t_path(NULL);
    char **names, name[ZKL_NODE_NAME_SIZE];
    uint64_t tok;
    int i, n;

    for (i = 0; i < 4; i++) {
        c[i] = t_client(t_hosts(), 10000, NULL);
        t_lock_init_lease(&l[i], c[i], p, 2);
        ASSERT_EQ(zkl_lock_kind(l[i].lk), ZKL_KIND_LEASE);
        ASSERT_RC(zkl_lock_acquire(l[i].lk, -1), ZKL_OK);
        if (i < 2)
            ASSERT(t_run_until(&l[i].acquired, 5000));
    }
    /* Curator's layout: the mutex and the leases under the path. */
    n = t_zk_children(p, &names);
    ASSERT_EQ(n, 2);
    ASSERT_STR(names[0], "leases");
    ASSERT_STR(names[1], "locks");
    t_zk_free_names(names, n);
    /* Two hold; the third holds the mutex with its surplus lease and
     * waits, the fourth waits for the mutex. */
    ASSERT_EQ(t_zk_wait_count(sub(p, "leases"), 3, 5000), 3);
    ASSERT_EQ(t_zk_wait_count(sub(p, "locks"), 2, 5000), 2);
    t_run_for(300);
    ASSERT_EQ(l[2].n + l[3].n, 0);
    ASSERT(WAIT_FOR(zkl_lock_state(l[2].lk) == ZKL_STATE_QUEUED, 5000));
    ASSERT_EQ(zkl_lock_state(l[3].lk), ZKL_STATE_ACQUIRING);
    n = t_zk_children(sub(p, "leases"), &names);
    for (i = 0; i < n; i++)
        ASSERT(strncmp(names[i], "_c_", 3) == 0 &&
               strstr(names[i], "-lease-") == names[i] + 39);
    t_zk_free_names(names, n);
    /* The token is the lease node's czxid. */
    ASSERT_RC(zkl_lock_node_name(l[0].lk, name, sizeof name), ZKL_OK);
    ASSERT_RC(zkl_lock_token(l[0].lk, &tok), ZKL_OK);
    ASSERT_EQ((int64_t)tok, t_zk_czxid(lease_node(p, name)));
    release(&l[0]);
    ASSERT(t_run_until(&l[2].acquired, 5000));
    ASSERT_EQ(t_zk_wait_count(sub(p, "leases"), 3, 5000), 3);
    t_run_for(200);
    ASSERT_EQ(l[3].n, 0);
    release(&l[1]);
    ASSERT(t_run_until(&l[3].acquired, 5000));
    release(&l[2]);
    release(&l[3]);
    ASSERT_EQ(t_zk_wait_count(sub(p, "leases"), 0, 5000), 0);
    ASSERT_EQ(t_zk_wait_count(sub(p, "locks"), 0, 5000), 0);
    for (i = 0; i < 4; i++) {
        ASSERT_EQ(l[i].n, 2);
        zkl_lock_free(l[i].lk);
        zkl_client_free(c[i]);
    }
}

TEST(sem_only_the_mutex_holder_watches_the_leases)
{
    enum { N = 6 };
    zkl_client_t *c[N];
    t_lock_t l[N];
    const char *p = t_path(NULL);
    long ev[N];
    int i;

    for (i = 0; i < N; i++) {
        c[i] = t_client(t_hosts(), 10000, NULL);
        t_lock_init_lease(&l[i], c[i], p, 1);
        ASSERT_RC(zkl_lock_acquire(l[i].lk, -1), ZKL_OK);
        if (i == 0)
            ASSERT(t_run_until(&l[0].acquired, 5000));
        ASSERT_EQ(t_zk_wait_count(sub(p, "locks"), i, 5000), i);
    }
    t_run_for(300);
    for (i = 0; i < N; i++)
        ev[i] = (long)t_stats(c[i]).watch_events;
    /* The release wakes the mutex holder (l[1]), whose grant hands the
     * mutex to l[2]; nobody else hears of it. */
    release(&l[0]);
    ASSERT(t_run_until(&l[1].acquired, 5000));
    ASSERT(WAIT_FOR(zkl_lock_state(l[2].lk) == ZKL_STATE_QUEUED, 5000));
    t_run_for(300);
    for (i = 3; i < N; i++) {
        ASSERT_EQ((long)t_stats(c[i]).watch_events, ev[i]);
        ASSERT_EQ(l[i].n, 0);
    }
    for (i = 1; i < N; i++) {
        ASSERT(t_run_until(&l[i].acquired, 5000));
        release(&l[i]);
    }
    ASSERT_EQ(t_zk_wait_count(sub(p, "leases"), 0, 5000), 0);
    for (i = 0; i < N; i++) {
        zkl_lock_free(l[i].lk);
        zkl_client_free(c[i]);
    }
}

TEST(sem_several_leases_all_or_nothing)
{
    zkl_client_t *a = t_client(t_hosts(), 10000, NULL);
    zkl_client_t *b = t_client(t_hosts(), 10000, NULL);
    const char *p = t_path(NULL);
    t_lock_t x[2], y[2];
    zkl_lock_t *xv[2], *yv[2];
    uint64_t t0;
    int i;

    for (i = 0; i < 2; i++) {
        t_lock_init_lease(&x[i], a, p, 3);
        t_lock_init_lease(&y[i], b, p, 3);
        xv[i] = x[i].lk;
        yv[i] = y[i].lk;
    }
    ASSERT_RC(zkl_lease_acquire_all(xv, 2, -1), ZKL_OK);
    ASSERT(WAIT_FOR(x[0].acquired && x[1].acquired, 5000));
    /* Two more do not fit beside two of three: neither is granted, and
     * both fail together at the deadline, their nodes gone. */
    t0 = t_now_ms();
    ASSERT_RC(zkl_lease_acquire_all(yv, 2, 700), ZKL_OK);
    ASSERT(WAIT_FOR(y[0].failed && y[1].failed, 5000));
    ASSERT(t_now_ms() - t0 >= 600);
    ASSERT_RC(y[0].last_status, ZKL_ETIMEDOUT);
    ASSERT_RC(y[1].last_status, ZKL_ETIMEDOUT);
    ASSERT_EQ(y[0].acquired + y[1].acquired, 0);
    ASSERT(WAIT_FOR(zkl_client_pending(b) == 0, 5000));
    ASSERT_EQ(t_zk_wait_count(sub(p, "leases"), 2, 5000), 2);
    ASSERT_EQ(t_zk_wait_count(sub(p, "locks"), 0, 5000), 0);
    /* Again, without a deadline: both come once one of x's goes. */
    ASSERT_RC(zkl_lease_acquire_all(yv, 2, -1), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(sub(p, "leases"), 4, 5000), 4);
    t_run_for(200);
    ASSERT_EQ(y[0].acquired + y[1].acquired, 0);
    release(&x[1]); /* in any order */
    ASSERT(WAIT_FOR(y[0].acquired && y[1].acquired, 5000));
    ASSERT_EQ(t_zk_count(sub(p, "leases")), 3);
    release(&y[0]);
    release(&x[0]);
    release(&y[1]);
    ASSERT_EQ(t_zk_wait_count(sub(p, "leases"), 0, 5000), 0);
    for (i = 0; i < 2; i++) {
        zkl_lock_free(x[i].lk);
        zkl_lock_free(y[i].lk);
    }
    zkl_client_free(a);
    zkl_client_free(b);
}

TEST(sem_try_cancel_and_free_end_the_whole_set)
{
    zkl_client_t *a = t_client(t_hosts(), 10000, NULL);
    zkl_client_t *b = t_client(t_hosts(), 10000, NULL);
    const char *p = t_path(NULL);
    t_lock_t h, y[2];
    zkl_lock_t *yv[2];

    t_lock_init_lease(&h, a, p, 2);
    t_lock_init_lease(&y[0], b, p, 2);
    t_lock_init_lease(&y[1], b, p, 2);
    yv[0] = y[0].lk;
    yv[1] = y[1].lk;
    ASSERT_RC(zkl_lock_acquire(h.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&h.acquired, 5000));
    /* Try: answered at once, nothing left. */
    ASSERT_RC(zkl_lease_acquire_all(yv, 2, 0), ZKL_OK);
    ASSERT(WAIT_FOR(y[0].failed && y[1].failed, 5000));
    ASSERT_RC(y[0].last_status, ZKL_ELOCKED);
    ASSERT_RC(y[1].last_status, ZKL_ELOCKED);
    ASSERT(WAIT_FOR(zkl_client_pending(b) == 0, 5000));
    ASSERT_EQ(t_zk_count(sub(p, "leases")), 1);
    /* Cancelling one cancels both. */
    ASSERT_RC(zkl_lease_acquire_all(yv, 2, -1), ZKL_OK);
    ASSERT(WAIT_FOR(zkl_lock_state(y[1].lk) == ZKL_STATE_QUEUED ||
                        zkl_lock_state(y[0].lk) == ZKL_STATE_QUEUED,
                    5000));
    ASSERT_RC(zkl_lock_cancel(y[1].lk), ZKL_OK);
    ASSERT_EQ(zkl_lock_state(y[0].lk), ZKL_STATE_IDLE);
    ASSERT(WAIT_FOR(y[0].failed == 2 && y[1].failed == 2, 5000));
    ASSERT_RC(y[0].last_status, ZKL_ECANCELED);
    ASSERT_RC(zkl_lock_cancel(y[1].lk), ZKL_ENOTPENDING);
    ASSERT(WAIT_FOR(zkl_client_pending(b) == 0, 5000));
    ASSERT_EQ(t_zk_wait_count(sub(p, "leases"), 1, 5000), 1);
    /* Freeing one ends the other's acquire too. */
    ASSERT_RC(zkl_lease_acquire_all(yv, 2, -1), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(sub(p, "leases"), 3, 5000), 3);
    zkl_lock_free(y[0].lk);
    ASSERT(WAIT_FOR(y[1].failed == 3, 5000));
    ASSERT_RC(y[1].last_status, ZKL_ECANCELED);
    ASSERT(WAIT_FOR(zkl_client_pending(b) == 0, 5000));
    ASSERT_EQ(t_zk_wait_count(sub(p, "leases"), 1, 5000), 1);
    ASSERT_EQ(t_zk_wait_count(sub(p, "locks"), 0, 5000), 0);
    release(&h);
    zkl_lock_free(h.lk);
    zkl_lock_free(y[1].lk);
    zkl_client_free(a);
    zkl_client_free(b);
}

TEST(sem_bad_input)
{
    zkl_client_t *c = t_client(t_hosts(), 10000, NULL);
    const char *p = t_path(NULL);
    char longp[ZKL_PATH_MAX + 1];
    zkl_lock_t *lk = (zkl_lock_t *)1, *v[3];
    t_lock_t a, b, o, m, mu;

    ASSERT_RC(zkl_lease_new(&lk, c, p, 0, t_lock_cb, &a), ZKL_EINVAL);
    ASSERT(lk == NULL);
    ASSERT_RC(zkl_lease_new(&lk, c, p, ZKL_LEASES_MAX + 1, t_lock_cb, &a),
              ZKL_EINVAL);
    ASSERT_RC(zkl_lease_new(&lk, c, p, -5, t_lock_cb, &a), ZKL_EINVAL);
    ASSERT_RC(zkl_lease_new(NULL, c, p, 1, t_lock_cb, &a), ZKL_EINVAL);
    ASSERT_RC(zkl_lease_new(&lk, NULL, p, 1, t_lock_cb, &a), ZKL_EINVAL);
    ASSERT_RC(zkl_lease_new(&lk, c, NULL, 1, t_lock_cb, &a), ZKL_EINVAL);
    ASSERT_RC(zkl_lease_new(&lk, c, p, 1, NULL, &a), ZKL_EINVAL);
    ASSERT_RC(zkl_lease_new(&lk, c, "no/slash", 1, t_lock_cb, &a),
              ZKL_EBADPATH);
    memset(longp, 'x', sizeof longp - 1);
    longp[0] = '/';
    longp[ZKL_PATH_MAX - 3] = '\0'; /* fits, but not with "/leases" */
    ASSERT_RC(zkl_lease_new(&lk, c, longp, 1, t_lock_cb, &a), ZKL_EBADPATH);
    ASSERT_RC(zkl_lock_new_kind(&lk, c, p, ZKL_KIND_LEASE, t_lock_cb, &a),
              ZKL_EINVAL);

    t_lock_init_lease(&a, c, p, 2);
    t_lock_init_lease(&b, c, p, 2);
    t_lock_init_lease(&o, c, sub(p, "other"), 2);
    t_lock_init_lease(&m, c, p, 3);
    t_lock_init(&mu, c, p);
    ASSERT_RC(zkl_lease_set_count(mu.lk, "/x"), ZKL_EINVAL);
    ASSERT_RC(zkl_lease_set_count(NULL, "/x"), ZKL_EINVAL);
    ASSERT_RC(zkl_lease_set_count(a.lk, "bad"), ZKL_EBADPATH);
    ASSERT_RC(zkl_lease_acquire_all(NULL, 1, -1), ZKL_EINVAL);
    v[0] = a.lk;
    ASSERT_RC(zkl_lease_acquire_all(v, 0, -1), ZKL_EINVAL);
    v[1] = a.lk;
    ASSERT_RC(zkl_lease_acquire_all(v, 2, -1), ZKL_EINVAL); /* twice */
    v[1] = NULL;
    ASSERT_RC(zkl_lease_acquire_all(v, 2, -1), ZKL_EINVAL);
    v[1] = mu.lk;
    ASSERT_RC(zkl_lease_acquire_all(v, 2, -1), ZKL_EINVAL); /* a mutex */
    v[1] = o.lk;
    ASSERT_RC(zkl_lease_acquire_all(v, 2, -1), ZKL_EINVAL); /* two paths */
    v[1] = m.lk;
    ASSERT_RC(zkl_lease_acquire_all(v, 2, -1), ZKL_EINVAL); /* two limits */
    v[1] = b.lk;
    v[2] = o.lk;
    ASSERT_RC(zkl_lease_acquire_all(v, 3, -1), ZKL_EINVAL);
    /* More than the limit could never be granted. */
    {
        t_lock_t e;
        zkl_lock_t *w[3];

        t_lock_init_lease(&e, c, p, 2);
        w[0] = a.lk;
        w[1] = b.lk;
        w[2] = e.lk;
        ASSERT_RC(zkl_lease_acquire_all(w, 3, -1), ZKL_EINVAL);
        zkl_lock_free(e.lk);
    }
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_ENOTHELD);
    ASSERT_RC(zkl_lock_cancel(a.lk), ZKL_ENOTPENDING);
    /* Busy and held. */
    ASSERT_RC(zkl_lease_acquire_all(v, 2, -1), ZKL_OK);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_EBUSY);
    ASSERT_RC(zkl_lease_acquire_all(v, 2, -1), ZKL_EBUSY);
    ASSERT(WAIT_FOR(a.acquired && b.acquired, 5000));
    ASSERT_RC(zkl_lock_acquire(b.lk, -1), ZKL_EHELD);
    /* A mutex on a semaphore's path: another kind. */
    ASSERT_RC(zkl_lock_acquire(mu.lk, 2000), ZKL_OK);
    ASSERT(t_run_until(&mu.failed, 5000));
    ASSERT_RC(mu.last_status, ZKL_EKIND);
    release(&a);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_ENOTHELD); /* double release */
    release(&b);
    ASSERT(WAIT_FOR(zkl_client_pending(c) == 0, 5000));
    ASSERT_EQ(t_zk_count(sub(p, "leases")), 0);
    ASSERT_EQ(t_zk_count(sub(p, "locks")), 0);
    zkl_lock_free(a.lk);
    zkl_lock_free(b.lk);
    zkl_lock_free(o.lk);
    zkl_lock_free(m.lk);
    zkl_lock_free(mu.lk);
    zkl_client_free(c);
}

TEST(sem_count_node_sets_the_limit)
{
    zkl_client_t *c[3];
    t_lock_t l[3];
    const char *p = t_path(NULL);
    const char *cnt = t_path("count");
    char buf[8];
    int i;

    for (i = 0; i < 3; i++) {
        c[i] = t_client(t_hosts(), 10000, NULL);
        t_lock_init_lease(&l[i], c[i], p, 1);
        ASSERT_RC(zkl_lease_set_count(l[i].lk, cnt), ZKL_OK);
    }
    /* No count node yet: created with the seed, 4 bytes big-endian. */
    ASSERT_RC(zkl_lock_acquire(l[0].lk, -1), ZKL_OK);
    ASSERT(t_run_until(&l[0].acquired, 5000));
    ASSERT_EQ(t_zk_data(cnt, buf, sizeof buf), 4);
    ASSERT(memcmp(buf, "\0\0\0\1", 4) == 0);
    ASSERT_RC(zkl_lock_acquire(l[1].lk, -1), ZKL_OK);
    ASSERT_RC(zkl_lock_acquire(l[2].lk, -1), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(sub(p, "leases"), 2, 5000), 2);
    t_run_for(300);
    ASSERT_EQ(l[1].n + l[2].n, 0);
    /* Raising the count lets the waiters in at once. */
    set_count(cnt, 3, 4);
    ASSERT(t_run_until(&l[1].acquired, 5000));
    ASSERT(t_run_until(&l[2].acquired, 5000));
    for (i = 0; i < 3; i++)
        release(&l[i]);
    /* A count that is not one fails the acquire with a clear code. */
    set_count(cnt, 3, 3);
    ASSERT_RC(zkl_lock_acquire(l[0].lk, 2000), ZKL_OK);
    ASSERT(t_run_until(&l[0].failed, 5000));
    ASSERT_RC(l[0].last_status, ZKL_ECOUNT);
    ASSERT(WAIT_FOR(zkl_client_pending(c[0]) == 0, 5000));
    ASSERT_EQ(t_zk_count(sub(p, "leases")), 0);
    ASSERT_EQ(t_zk_wait_count(sub(p, "locks"), 0, 5000), 0);
    for (i = 0; i < 3; i++) {
        zkl_lock_free(l[i].lk);
        zkl_client_free(c[i]);
    }
    ASSERT_EQ(t_zk_delete(cnt), ZOK);
}

static int all_released(const t_lock_t *l, int n)
{
    int i;

    for (i = 0; i < n; i++)
        if (l[i].released == 0)
            return 0;
    return 1;
}

TEST(sem_many_leases_one_client_never_over_the_limit)
{
    enum { N = 40, MAX = 4 };
    zkl_client_t *c = t_client(t_hosts(), 10000, NULL);
    static t_lock_t l[N];
    const char *p = t_path(NULL);
    int i, held, most = 0, done = 0;

    for (i = 0; i < N; i++) {
        t_lock_init_lease(&l[i], c, p, MAX);
        ASSERT_RC(zkl_lock_acquire(l[i].lk, -1), ZKL_OK);
    }
    while (done < N) {
        t_tick();
        for (i = 0, held = 0; i < N; i++)
            held += zkl_lock_is_held(l[i].lk);
        if (held > most)
            most = held;
        ASSERT(held <= MAX);
        /* Only once ACQUIRED has come: a busy pass may deliver it
         * after the grant, and a release before it would break its
         * promise (the handle holds when told so). And only once all
         * MAX leases were held at once: with nothing released before,
         * the limit must fill, however slowly the grants come (under
         * valgrind they trickled in slower than the holds ended). */
        for (i = 0; i < N && most == MAX; i++) {
            if (l[i].acquired == 1 && l[i].released == 0 &&
                zkl_lock_is_held(l[i].lk) && t_now_ms() - l[i].at_ms > 20) {
                ASSERT_RC(zkl_lock_release(l[i].lk), ZKL_OK);
                done++;
            }
        }
    }
    /* Every RELEASED told, not only every node gone: an attempt ends
     * (and leaves zkl_client_pending()) when its node is gone, and its
     * RELEASED may still wait in the callback queue for the next pass
     * (seen under valgrind). */
    ASSERT(WAIT_FOR(zkl_client_pending(c) == 0 && all_released(l, N),
                    10000));
    ASSERT_EQ(most, MAX);
    for (i = 0; i < N; i++) {
        ASSERT_EQ(l[i].acquired, 1);
        ASSERT_EQ(l[i].released, 1);
        zkl_lock_free(l[i].lk);
    }
    ASSERT_EQ(t_zk_count(sub(p, "leases")), 0);
    zkl_client_free(c);
}

TEST(sem_lease_deleted_by_someone_else_is_lost)
{
    zkl_client_t *c = t_client(t_hosts(), 10000, NULL);
    const char *p = t_path(NULL);
    char name[ZKL_NODE_NAME_SIZE];
    t_lock_t a;

    t_lock_init_lease(&a, c, p, 1);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    t_run_for(200);
    ASSERT_RC(zkl_lock_node_name(a.lk, name, sizeof name), ZKL_OK);
    ASSERT_EQ(t_zk_delete(lease_node(p, name)), ZOK);
    ASSERT(t_run_until(&a.lost, 5000));
    ASSERT_RC(a.last_status, ZKL_ENODEGONE);
    ASSERT(!zkl_lock_is_held(a.lk));
    zkl_lock_free(a.lk);
    zkl_client_free(c);
}

TEST(sem_cancel_while_the_count_read_is_in_flight)
{
    zkl_client_t *c = t_client(t_hosts(), 10000, NULL);
    const char *p = t_path(NULL);
    const char *cnt = t_path("count");
    t_lock_t l;

    t_lock_init_lease(&l, c, p, 1);
    ASSERT_RC(zkl_lease_set_count(l.lk, cnt), ZKL_OK);
    ASSERT_RC(zkl_lock_acquire(l.lk, -1), ZKL_OK);
    /* the count read is in flight now */
    ASSERT_RC(zkl_lock_cancel(l.lk), ZKL_OK);
    ASSERT(t_run_until(&l.failed, 5000));
    ASSERT_RC(l.last_status, ZKL_ECANCELED);
    t_run_for(300);
    ASSERT(WAIT_FOR(zkl_client_pending(c) == 0, 5000));
    zkl_lock_free(l.lk);
    zkl_client_free(c);
    t_zk_delete(cnt);
}

static void free_on_fail_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                            void *arg)
{
    (void)status;
    (void)arg;
    if (ev == ZKL_LOCK_FAILED)
        zkl_lock_free(lk);
}

TEST(sem_client_freed_while_a_callback_frees_its_lease)
{
    zkl_client_t *a = t_client(t_hosts(), 10000, NULL);
    zkl_client_t *b = t_client(t_hosts(), 10000, NULL);
    const char *p = t_path(NULL);
    t_lock_t h;
    zkl_lock_t *w;

    t_lock_init_lease(&h, a, p, 1);
    ASSERT_RC(zkl_lock_acquire(h.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&h.acquired, 5000));
    ASSERT_RC(zkl_lease_new(&w, b, p, 1, free_on_fail_cb, NULL), ZKL_OK);
    ASSERT_RC(zkl_lock_acquire(w, -1), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(sub(p, "leases"), 2, 5000), 2);
    zkl_client_free(b); /* the callback frees w during teardown */
    zkl_lock_free(h.lk);
    zkl_client_free(a);
}

TEST(sem_cancel_after_the_deadline_passed_unseen)
{
    zkl_client_t *a = t_client(t_hosts(), 10000, NULL);
    zkl_client_t *b = t_client(t_hosts(), 10000, NULL);
    zkl_client_t *c = t_client(t_hosts(), 10000, NULL);
    const char *p = t_path(NULL);
    t_lock_t h, w, x;

    t_lock_init_lease(&h, a, p, 1);
    t_lock_init_lease(&w, b, p, 1);
    t_lock_init_lease(&x, c, p, 1);
    ASSERT_RC(zkl_lock_acquire(h.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&h.acquired, 5000));
    ASSERT_RC(zkl_lock_acquire(w.lk, -1), ZKL_OK); /* holds the mutex, waits */
    ASSERT_EQ(t_zk_wait_count(sub(p, "leases"), 2, 5000), 2);
    ASSERT_RC(zkl_lock_acquire(x.lk, 300), ZKL_OK); /* waits for the mutex */
    t_run_for(100);
    usleep(400 * 1000); /* its deadline passes, the loop has not run */
    ASSERT_RC(zkl_lock_cancel(x.lk), ZKL_OK);
    ASSERT(t_run_until(&x.failed, 5000));
    t_run_for(200);
    ASSERT_EQ(x.n, 1); /* one ending, whichever came first */
    ASSERT(x.last_status == ZKL_ECANCELED || x.last_status == ZKL_ETIMEDOUT);
    zkl_lock_free(x.lk);
    zkl_lock_free(w.lk);
    zkl_lock_free(h.lk);
    zkl_client_free(c);
    zkl_client_free(b);
    zkl_client_free(a);
}

/* ---- the limit record (the path node's data) ---- */

/* Whether the path node's data is the record of limit max (0: empty). */
static int record_is(const char *p, int max)
{
    char buf[64], want[64];
    int n = t_zk_data(p, buf, sizeof buf - 1);

    if (max == 0)
        return n == 0;
    snprintf(want, sizeof want, "zklock:max_leases=%d", max);
    return n == (int)strlen(want) && memcmp(buf, want, (size_t)n) == 0;
}

/* One acquire of t (a lease), to its end; 1 when it holds. */
static int take(t_lock_t *t, long timeout_ms)
{
    int before = t->acquired + t->failed;

    ASSERT_RC(zkl_lock_acquire(t->lk, timeout_ms), ZKL_OK);
    ASSERT(WAIT_FOR(t->acquired + t->failed > before, 10000));
    return zkl_lock_is_held(t->lk);
}

/* An acquire whose limit differs from the holders' fails at once with
 * ZKL_ELIMIT, leaving nothing behind; one that agrees joins them; once
 * every holder has left, a new limit is taken and becomes the record. */
TEST(sem_limit_mismatch_refused_while_held)
{
    zkl_client_t *a = t_client(t_hosts(), 10000, NULL);
    zkl_client_t *b = t_client(t_hosts(), 10000, NULL);
    const char *p = t_path(NULL);
    t_lock_t h2, x3, y2;
    uint64_t t0;

    t_lock_init_lease(&h2, a, p, 2);
    t_lock_init_lease(&x3, b, p, 3);
    t_lock_init_lease(&y2, b, p, 2);
    ASSERT_EQ(zkl_lease_limit(x3.lk), 3);
    ASSERT_EQ(zkl_lease_recorded_limit(x3.lk), 0);
    ASSERT(take(&h2, -1));
    ASSERT(record_is(p, 2));
    ASSERT_EQ(zkl_lease_recorded_limit(h2.lk), 2);
    /* Refused at once, whatever the timeout: a try, a timed, an
     * untimed acquire. */
    t0 = t_now_ms();
    ASSERT(!take(&x3, -1));
    ASSERT_RC(x3.last_status, ZKL_ELIMIT);
    ASSERT(t_now_ms() - t0 < 3000);
    ASSERT_EQ(zkl_lease_recorded_limit(x3.lk), 2);
    /* The refused acquire's mutex node may still be on its way out: a
     * try-lock that met it would be told ZKL_ELOCKED first. */
    ASSERT_EQ(t_zk_wait_count(sub(p, "locks"), 0, 5000), 0);
    ASSERT(!take(&x3, 0));
    ASSERT_RC(x3.last_status, ZKL_ELIMIT);
    ASSERT(!take(&x3, 5000));
    ASSERT_RC(x3.last_status, ZKL_ELIMIT);
    ASSERT_EQ(x3.acquired, 0);
    /* Its lease and its hold of the mutex went with it. */
    ASSERT(WAIT_FOR(zkl_client_pending(b) == 0, 5000));
    ASSERT_EQ(t_zk_count(sub(p, "leases")), 1);
    ASSERT_EQ(t_zk_wait_count(sub(p, "locks"), 0, 5000), 0);
    ASSERT(record_is(p, 2));
    /* The same limit joins, and does not write. */
    ASSERT(take(&y2, -1));
    ASSERT_EQ(t_zk_count(sub(p, "leases")), 2);
    /* y2's mutex node may still be on its way out: a try-lock that met
     * it would be told ZKL_ELOCKED, before any record is read. */
    ASSERT_EQ(t_zk_wait_count(sub(p, "locks"), 0, 5000), 0);
    ASSERT(!take(&x3, 0));
    ASSERT_RC(x3.last_status, ZKL_ELIMIT);
    release(&h2);
    ASSERT(!take(&x3, -1)); /* y2 still holds */
    ASSERT_RC(x3.last_status, ZKL_ELIMIT);
    release(&y2);
    /* Nobody holds: the new limit is taken, and is the record now. */
    ASSERT(take(&x3, -1));
    ASSERT(record_is(p, 3));
    ASSERT_EQ(zkl_lease_recorded_limit(x3.lk), 3);
    ASSERT(!take(&h2, -1));
    ASSERT_RC(h2.last_status, ZKL_ELIMIT);
    ASSERT_EQ(zkl_lease_recorded_limit(h2.lk), 3);
    release(&x3);
    ASSERT(WAIT_FOR(zkl_client_pending(a) == 0 && zkl_client_pending(b) == 0,
                    5000));
    ASSERT_EQ(t_zk_count(sub(p, "leases")), 0);
    zkl_lock_free(h2.lk);
    zkl_lock_free(x3.lk);
    zkl_lock_free(y2.lk);
    zkl_client_free(a);
    zkl_client_free(b);
}

/* Two acquires of different limits, in two sessions, started in the
 * same loop turn: whichever takes the semaphore's mutex first holds,
 * the other is refused; never both. Without the record, the one with
 * the larger limit would join the other whenever it came second. */
TEST(sem_limits_racing_never_both_hold)
{
    enum { ROUNDS = 8 };
    zkl_client_t *a = t_client(t_hosts(), 10000, NULL);
    zkl_client_t *b = t_client(t_hosts(), 10000, NULL);
    const char *p = t_path(NULL);
    int r, firsts[2] = {0, 0};

    for (r = 0; r < ROUNDS; r++) {
        t_lock_t l[2];
        int k = r % 2, w;

        t_lock_init_lease(&l[0], a, p, 1);
        t_lock_init_lease(&l[1], b, p, 2);
        ASSERT_RC(zkl_lock_acquire(l[k].lk, -1), ZKL_OK);
        ASSERT_RC(zkl_lock_acquire(l[1 - k].lk, -1), ZKL_OK);
        ASSERT(WAIT_FOR(l[0].n > 0 && l[1].n > 0, 10000));
        t_run_for(100);
        ASSERT_EQ(l[0].n + l[1].n, 2);
        ASSERT_EQ(l[0].acquired + l[1].acquired, 1);
        w = l[0].acquired ? 0 : 1;
        firsts[w]++;
        ASSERT_RC(l[1 - w].last_status, ZKL_ELIMIT);
        ASSERT_EQ(zkl_lease_recorded_limit(l[1 - w].lk), w + 1);
        ASSERT(record_is(p, w + 1));
        release(&l[w]);
        ASSERT(WAIT_FOR(zkl_client_pending(a) == 0 &&
                            zkl_client_pending(b) == 0, 5000));
        ASSERT_EQ(t_zk_count(sub(p, "leases")), 0);
        zkl_lock_free(l[0].lk);
        zkl_lock_free(l[1].lk);
    }
    printf("sem race: limit 1 first %d times, limit 2 first %d times\n",
           firsts[0], firsts[1]);
    zkl_client_free(a);
    zkl_client_free(b);
}

/* Data in the path node that is not a record (someone else's: Curator
 * itself leaves the node empty) is left alone, and there is no check:
 * both limits hold side by side, as with Curator. */
TEST(sem_foreign_path_data_left_alone)
{
    zkl_client_t *a = t_client(t_hosts(), 10000, NULL);
    zkl_client_t *b = t_client(t_hosts(), 10000, NULL);
    const char *p = t_path(NULL);
    const char *foreign[] = {"curator-owned", "zklock:max_leases=",
                             "zklock:max_leases=07",
                             "zklock:max_leases=10001",
                             "zklock:max_leases=2x", "\0\0\0\2"};
    char buf[64];
    size_t i;

    (void)t_zk_create_as(NULL, "/zkl-test", 0); /* may exist */
    ASSERT_EQ(t_zk_create_as(NULL, p, 0), ZOK);
    for (i = 0; i < sizeof foreign / sizeof foreign[0]; i++) {
        int len = i == 5 ? 4 : (int)strlen(foreign[i]);
        t_lock_t h, x;

        ASSERT_EQ(t_zk_set(p, foreign[i], len), ZOK);
        t_lock_init_lease(&h, a, p, 2);
        t_lock_init_lease(&x, b, p, 3);
        ASSERT(take(&h, -1));
        ASSERT(take(&x, -1));
        ASSERT_EQ(zkl_lease_recorded_limit(x.lk), 0);
        ASSERT_EQ(t_zk_data(p, buf, sizeof buf), len);
        ASSERT(memcmp(buf, foreign[i], (size_t)len) == 0);
        release(&h);
        release(&x);
        zkl_lock_free(h.lk);
        zkl_lock_free(x.lk);
    }
    zkl_client_free(a);
    zkl_client_free(b);
}

/* Holders that leave no record (a count node's, as Curator's leave
 * none) have a limit nobody knows: any limit may join them, and the
 * record is written only once nobody else holds. */
TEST(sem_holders_without_record_take_any_limit)
{
    zkl_client_t *a = t_client(t_hosts(), 10000, NULL);
    zkl_client_t *b = t_client(t_hosts(), 10000, NULL);
    const char *p = t_path(NULL);
    const char *cnt = t_path("count");
    t_lock_t h, x;

    t_lock_init_lease(&h, a, p, 2);
    ASSERT_RC(zkl_lease_set_count(h.lk, cnt), ZKL_OK);
    t_lock_init_lease(&x, b, p, 3);
    ASSERT(take(&h, -1));
    ASSERT(record_is(p, 0));
    ASSERT_EQ(zkl_lease_recorded_limit(h.lk), 0);
    ASSERT(take(&x, -1));
    ASSERT(record_is(p, 0));
    release(&x);
    release(&h);
    ASSERT(take(&x, -1));
    ASSERT(record_is(p, 3));
    release(&x);
    /* A count node's acquire neither reads nor writes the record. */
    ASSERT(take(&h, -1));
    ASSERT_EQ(zkl_lease_recorded_limit(h.lk), 0);
    ASSERT(record_is(p, 3));
    release(&h);
    zkl_lock_free(h.lk);
    zkl_lock_free(x.lk);
    zkl_client_free(a);
    zkl_client_free(b);
    ASSERT_EQ(t_zk_delete(cnt), ZOK);
}

/* The record's write, done by the server and its reply lost (or cut
 * before the server saw it): the read after reconnecting tells which,
 * and the acquire goes on to its grant; the same with the read's reply
 * lost or cut. No lease, no mutex node left over, and the record there
 * for the next acquirer. */
TEST(sem_record_reply_lost)
{
    static const struct {
        int op;
        fp_fault_t fault;
        const char *name;
    } k[] = {{OP_SETDATA, FP_LOSE, "write-lose"},
             {OP_SETDATA, FP_CUT, "write-cut"},
             {FP_OP_GETDATA, FP_LOSE, "read-lose"},
             {FP_OP_GETDATA, FP_CUT, "read-cut"}};
    fp_t *fp = fp_new(t_base, t_port());
    zkl_client_t *x, *b = t_client(t_hosts(), 10000, NULL);
    size_t i;

    ASSERT(fp != NULL);
    x = t_client(fp_hosts(fp), 10000, NULL);
    for (i = 0; i < sizeof k / sizeof k[0]; i++) {
        const char *p = t_path(k[i].name);
        int fired = fp_fired(fp);
        t_lock_t h, y;

        t_lock_init_lease(&h, x, p, 2);
        t_lock_init_lease(&y, b, p, 3);
        /* The path's first read is the record's (see below). */
        fp_arm_path(fp, k[i].op, k[i].fault, 50, p);
        ASSERT(take(&h, -1));
        ASSERT_EQ(fp_fired(fp), fired + 1);
        ASSERT(record_is(p, 2));
        ASSERT_EQ(zkl_lease_recorded_limit(h.lk), 2);
        ASSERT_EQ(t_zk_count(sub(p, "leases")), 1);
        ASSERT_EQ(t_zk_wait_count(sub(p, "locks"), 0, 5000), 0);
        ASSERT(!take(&y, -1));
        ASSERT_RC(y.last_status, ZKL_ELIMIT);
        release(&h);
        ASSERT(WAIT_FOR(zkl_client_pending(x) == 0 &&
                            zkl_client_pending(b) == 0, 5000));
        ASSERT_EQ(t_zk_count(sub(p, "leases")), 0);
        zkl_lock_free(h.lk);
        zkl_lock_free(y.lk);
    }
    zkl_client_free(x);
    zkl_client_free(b);
    fp_free(fp);
}

/* Every answer the record's read or write can get: the server did the
 * request and its reply says otherwise (the fault proxy rewrites it).
 * Whatever the code, the acquire is granted and leaves nothing behind;
 * the record is there when the write was done (each write below was),
 * and a refused read turns the check off for that acquire (nothing
 * written). */
TEST(sem_record_answers_each_code)
{
    /* recorded: the record afterwards; seen: what the acquire knows of
     * it (nothing when the write was refused: the check went off). */
    static const struct {
        int op, err, recorded, seen;
    } k[] = {
        {OP_SETDATA, ZBADVERSION, 2, 2},
        {OP_SETDATA, ZNONODE, 2, 2},
        {OP_SETDATA, ZNOAUTH, 2, 0},
        {OP_SETDATA, ZCONNECTIONLOSS, 2, 2},
        {OP_SETDATA, ZSESSIONMOVED, 2, 2},
        {OP_SETDATA, ZTHROTTLEDOP, 2, 2},
        {OP_SETDATA, -125 /* quota */, 2, 0},
        {OP_SETDATA, -200 /* unknown */, 2, 2},
        {OP_SETDATA, ZBADARGUMENTS, 2, 0},
        {FP_OP_GETDATA, ZNOAUTH, 0, 0},
        {FP_OP_GETDATA, ZNONODE, 2, 2},
        {FP_OP_GETDATA, ZCONNECTIONLOSS, 2, 2},
        {FP_OP_GETDATA, ZSESSIONMOVED, 2, 2},
        {FP_OP_GETDATA, ZTHROTTLEDOP, 2, 2},
        {FP_OP_GETDATA, -200, 2, 2},
    };
    fp_t *fp = fp_new(t_base, t_port());
    zkl_client_t *x, *b = t_client(t_hosts(), 10000, NULL);
    size_t i;

    ASSERT(fp != NULL);
    x = t_client(fp_hosts(fp), 10000, NULL);
    for (i = 0; i < sizeof k / sizeof k[0]; i++) {
        char suffix[32];
        const char *p;
        int fired = fp_fired(fp);
        t_lock_t h, y;

        snprintf(suffix, sizeof suffix, "%d-%d", k[i].op, -k[i].err);
        p = t_path(suffix);
        t_lock_init_lease(&h, x, p, 2);
        t_lock_init_lease(&y, b, p, 3);
        /* The record's read is the first of the path's reads (the
         * mutex of a fresh path is granted on its create's answer). */
        fp_arm_recode(fp, k[i].op, k[i].err);
        fp_arm_path(fp, k[i].op, FP_RECODE, 1, p);
        if (!take(&h, 20000))
            FAILF("op %d code %d: %s", k[i].op, k[i].err,
                  zkl_err_name(h.last_status));
        ASSERT_EQ(fp_fired(fp), fired + 1);
        ASSERT(record_is(p, k[i].recorded));
        ASSERT_EQ(zkl_lease_recorded_limit(h.lk), k[i].seen);
        ASSERT_EQ(t_zk_count(sub(p, "leases")), 1);
        ASSERT_EQ(t_zk_wait_count(sub(p, "locks"), 0, 5000), 0);
        if (k[i].recorded != 0) {
            ASSERT(!take(&y, 0));
            ASSERT_RC(y.last_status, ZKL_ELIMIT);
        }
        release(&h);
        ASSERT(WAIT_FOR(zkl_client_pending(x) == 0 &&
                            zkl_client_pending(b) == 0, 10000));
        ASSERT_EQ(t_zk_count(sub(p, "leases")), 0);
        zkl_lock_free(h.lk);
        zkl_lock_free(y.lk);
    }
    zkl_client_free(x);
    zkl_client_free(b);
    fp_free(fp);
}

/* The ZooKeeper client says it could not queue the record's read or
 * write (ZMARSHALLINGERROR) after it had queued its completion (see
 * lib/fence.c): the completion still runs, into a record that must not
 * have been freed, and the acquire goes on once the fence settles. */
TEST(sem_record_request_of_unknown_fate)
{
    zkl_client_t *c = t_client(t_hosts(), 10000, NULL);
    const char *fns[] = {"zoo_aget", "zoo_aset"};
    size_t i;

    for (i = 0; i < 2; i++) {
        const char *p = t_path(fns[i]);
        int maybes = t_maybes();
        t_lock_t h;

        t_lock_init_lease(&h, c, p, 2);
        t_maybe_next(fns[i]);
        ASSERT(take(&h, -1));
        ASSERT_EQ(t_maybes(), maybes + 1);
        ASSERT_EQ(t_stats(c).fences, i + 1);
        ASSERT(record_is(p, 2));
        ASSERT_EQ(t_zk_count(sub(p, "leases")), 1);
        release(&h);
        ASSERT(WAIT_FOR(zkl_client_pending(c) == 0, 5000));
        ASSERT_EQ(t_zk_count(sub(p, "leases")), 0);
        ASSERT_EQ(t_zk_wait_count(sub(p, "locks"), 0, 5000), 0);
        zkl_lock_free(h.lk);
    }
    zkl_client_free(c);
}

/* An acquire cancelled, or its client freed, while the record's write
 * is in flight (its reply held back): answered once, nothing left; the
 * write's late answer finds nothing freed under it. (The proxy runs on
 * this loop, which zkl_client_free() does not run: the close never
 * reaches the server, whose session timeout then ends the nodes.) */
TEST(sem_cancel_and_free_while_the_record_write_is_in_flight)
{
    fp_t *fp = fp_new(t_base, t_port());
    zkl_client_t *x;
    int i;

    ASSERT(fp != NULL);
    for (i = 0; i < 2; i++) {
        const char *p = t_path(i == 0 ? "cancel" : "free");
        int fired = fp_fired(fp);
        t_lock_t h;

        x = t_client(fp_hosts(fp), 2000, NULL);
        t_lock_init_lease(&h, x, p, 2);
        fp_arm(fp, OP_SETDATA, FP_DELAY, 1000);
        ASSERT_RC(zkl_lock_acquire(h.lk, -1), ZKL_OK);
        ASSERT(WAIT_FOR(fp_fired(fp) > fired, 5000));
        t_run_for(50);
        ASSERT_EQ(h.n, 0); /* not granted before the write's answer */
        if (i == 0) {
            ASSERT_RC(zkl_lock_cancel(h.lk), ZKL_OK);
            ASSERT(t_run_until(&h.failed, 5000));
            ASSERT_RC(h.last_status, ZKL_ECANCELED);
            ASSERT(WAIT_FOR(zkl_client_pending(x) == 0, 5000));
            t_run_for(1200); /* the write's answer comes */
            ASSERT_EQ(h.n, 1);
        } else {
            zkl_client_free(x);
            x = NULL;
            ASSERT_EQ(h.n, 1);
            ASSERT_RC(h.last_status, ZKL_ECLOSED);
        }
        ASSERT_EQ(t_zk_wait_count(sub(p, "leases"), 0, 10000), 0);
        ASSERT_EQ(t_zk_wait_count(sub(p, "locks"), 0, 5000), 0);
        zkl_lock_free(h.lk);
        zkl_client_free(x);
    }
    fp_free(fp);
}
