/* Lock behaviour against a real server: grants, ordering, exclusion,
 * try-lock, timeout, cancel, freeing from callbacks, many attempts. */
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

TEST(acquire_release_basic)
{
    t_conn_t conn;
    zkl_client_t *c = t_client(t_hosts(), 4000, &conn);
    const char *p = t_path(NULL);
    char name[64], **names;
    t_lock_t a;
    int n;

    ASSERT_EQ(conn.events[0], ZKL_CONN_CONNECTED);
    ASSERT_EQ(zkl_client_state(c), ZKL_CONN_CONNECTED);
    ASSERT(zkl_client_session_id(c) != 0);
    ASSERT(zkl_client_session_timeout(c) >= 1000);
    t_lock_init(&a, c, p);
    ASSERT_EQ(zkl_lock_state(a.lk), ZKL_STATE_IDLE);
    ASSERT_EQ(zkl_lock_state(NULL), ZKL_STATE_IDLE);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT_EQ(zkl_lock_state(a.lk), ZKL_STATE_ACQUIRING);
    ASSERT_EQ(a.n, 0); /* never inside the call */
    ASSERT(t_run_until(&a.acquired, 5000));
    t_run_for(100); /* the own-node watch is armed after the callback */
    ASSERT_EQ(a.ev[0], ZKL_LOCK_ACQUIRED);
    ASSERT_RC(zkl_lock_node_name(a.lk, name, sizeof name), ZKL_OK);
    /* Curator's protected name: _c_<36-char uuid>-lock-<10 digits>. */
    ASSERT_EQ(strlen(name), 3 + 36 + 6 + 10);
    ASSERT(strncmp(name, "_c_", 3) == 0);
    ASSERT(strncmp(name + 39, "-lock-", 6) == 0);
    n = t_zk_children(p, &names);
    ASSERT_EQ(n, 1);
    ASSERT_STR(names[0], name);
    t_zk_free_names(names, n);
    ASSERT_EQ(zkl_client_pending(c), 1);
    ASSERT_EQ(zkl_lock_state(a.lk), ZKL_STATE_HELD);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(!zkl_lock_is_held(a.lk));
    ASSERT_EQ(zkl_lock_state(a.lk), ZKL_STATE_RELEASING);
    ASSERT(t_run_until(&a.released, 5000));
    ASSERT_EQ(zkl_lock_state(a.lk), ZKL_STATE_IDLE);
    ASSERT_RC(a.last_status, ZKL_OK);
    ASSERT_EQ(t_zk_count(p), 0);
    ASSERT_EQ(zkl_client_pending(c), 0);
    {
        zkl_stats_t st;

        ASSERT_RC(zkl_client_stats(NULL, &st, sizeof st), ZKL_EINVAL);
        ASSERT_RC(zkl_client_stats(c, NULL, sizeof st), ZKL_EINVAL);
        ASSERT_RC(zkl_client_stats(c, &st, sizeof st), ZKL_OK);
        ASSERT_EQ(st.grants, 1);
        ASSERT_EQ(st.sessions, 1);
        ASSERT(st.session_events >= 1);
        /* parents, create, list, create, list, own watch, delete */
        ASSERT(st.requests >= 5 && st.requests <= 12);
        /* Nobody waited; the one notification is the holder's watch on
         * its own node, fired by its own delete. */
        ASSERT_EQ(st.watch_events, 1);
    }
    /* The handle is reusable. Released inside its ACQUIRED callback, a
     * hold costs no watch on its own node: create, list, delete, and no
     * notification at all. */
    {
        zkl_stats_t s0, s1;

        ASSERT_RC(zkl_client_stats(c, &s0, sizeof s0), ZKL_OK);
        a.release_on_acquire = 1;
        ASSERT_RC(zkl_lock_acquire(a.lk, 1000), ZKL_OK);
        ASSERT(WAIT_FOR(a.released == 2, 5000));
        ASSERT_RC(zkl_client_stats(c, &s1, sizeof s1), ZKL_OK);
        ASSERT_EQ(s1.requests - s0.requests, 3);
        ASSERT_EQ(s1.watch_events - s0.watch_events, 0);
        a.release_on_acquire = 0;
    }
    ASSERT_RC(zkl_lock_acquire(a.lk, 1000), ZKL_OK);
    ASSERT(WAIT_FOR(a.acquired == 3, 5000));
    zkl_lock_free(a.lk); /* releases in the background */
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    /* The server has deleted the node; its answer may still be on the
     * way to this client (seen under valgrind on a loaded machine). */
    ASSERT(WAIT_FOR(zkl_client_pending(c) == 0, 5000));
    zkl_client_free(c);
}

TEST(fencing_token_grows)
{
    zkl_client_t *c1 = t_client(t_hosts(), 4000, NULL);
    zkl_client_t *c2 = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    uint64_t last = 0, tok;
    char name[64], full[512];
    t_lock_t a, b;
    int i;

    t_lock_init(&a, c1, p);
    t_lock_init(&b, c2, p);
    for (i = 0; i < 6; i++) {
        t_lock_t *t = i % 2 ? &b : &a;
        int before = t->acquired;

        ASSERT_RC(zkl_lock_acquire(t->lk, -1), ZKL_OK);
        ASSERT(WAIT_FOR(t->acquired == before + 1, 5000));
        ASSERT_RC(zkl_lock_token(t->lk, &tok), ZKL_OK);
        ASSERT(tok > last);
        /* It is the node's czxid, as the server reports it. */
        ASSERT_RC(zkl_lock_node_name(t->lk, name, sizeof name), ZKL_OK);
        snprintf(full, sizeof full, "%s/%s", p, name);
        ASSERT_EQ((int64_t)tok, t_zk_czxid(full));
        last = tok;
        before = t->released;
        ASSERT_RC(zkl_lock_release(t->lk), ZKL_OK);
        ASSERT_RC(zkl_lock_token(t->lk, &tok), ZKL_ENOTHELD);
        ASSERT(WAIT_FOR(t->released == before + 1, 5000));
    }
    zkl_lock_free(a.lk);
    zkl_lock_free(b.lk);
    zkl_client_free(c1);
    zkl_client_free(c2);
    ASSERT_EQ(t_zk_count(p), 0);
}

TEST(contenders_order)
{
    zkl_client_t *c = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    t_lock_t l[4];
    t_listing_t ls = {0};
    char name[64];
    int i;

    ASSERT_RC(zkl_contenders(c, p, t_listing_cb, &ls), ZKL_OK);
    ASSERT_EQ(ls.done, 0);
    ASSERT(t_run_until(&ls.done, 5000));
    ASSERT_RC(ls.status, ZKL_OK); /* no such path: empty */
    ASSERT_EQ(ls.n, 0);
    for (i = 0; i < 4; i++) {
        t_lock_init(&l[i], c, p);
        ASSERT_RC(zkl_lock_acquire(l[i].lk, -1), ZKL_OK);
        ASSERT(t_zk_wait_count(p, i + 1, 5000) == i + 1);
    }
    ASSERT(t_run_until(&l[0].acquired, 5000));
    memset(&ls, 0, sizeof ls);
    ASSERT_RC(zkl_contenders(c, p, t_listing_cb, &ls), ZKL_OK);
    ASSERT(t_run_until(&ls.done, 5000));
    ASSERT_EQ(ls.n, 4);
    for (i = 0; i < 4; i++) {
        ASSERT_RC(zkl_lock_node_name(l[i].lk, name, sizeof name), ZKL_OK);
        ASSERT_STR(ls.names[i], name); /* holder first, queue order */
    }
    for (i = 0; i < 4; i++)
        zkl_lock_free(l[i].lk);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    zkl_client_free(c);
}

TEST(trylock)
{
    zkl_client_t *c1 = t_client(t_hosts(), 4000, NULL);
    zkl_client_t *c2 = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    t_lock_t a, b;

    t_lock_init(&a, c1, p);
    t_lock_init(&b, c2, p);
    ASSERT_RC(zkl_lock_acquire(b.lk, 0), ZKL_OK); /* free: granted */
    ASSERT(t_run_until(&b.acquired, 5000));
    ASSERT_RC(zkl_lock_acquire(a.lk, 0), ZKL_OK); /* held: refused */
    ASSERT(t_run_until(&a.failed, 5000));
    ASSERT_RC(a.last_status, ZKL_ELOCKED);
    ASSERT_EQ(t_zk_wait_count(p, 1, 5000), 1); /* no node queued behind */
    ASSERT_RC(zkl_lock_release(b.lk), ZKL_OK);
    ASSERT(t_run_until(&b.released, 5000));
    ASSERT_RC(zkl_lock_acquire(a.lk, 0), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    ASSERT_EQ(a.n, 2);
    ASSERT_EQ(b.n, 2);
    zkl_lock_free(a.lk);
    zkl_lock_free(b.lk);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    zkl_client_free(c1);
    zkl_client_free(c2);
}

TEST(timeout)
{
    zkl_client_t *c1 = t_client(t_hosts(), 4000, NULL);
    zkl_client_t *c2 = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    t_lock_t a, b;
    uint64_t t0;

    t_lock_init(&a, c1, p);
    t_lock_init(&b, c2, p);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    t0 = t_now_ms();
    ASSERT_RC(zkl_lock_acquire(b.lk, 300), ZKL_OK);
    ASSERT(t_run_until(&b.failed, 5000));
    ASSERT_RC(b.last_status, ZKL_ETIMEDOUT);
    ASSERT(b.at_ms - t0 >= 300); /* never early */
    ASSERT_EQ(t_zk_wait_count(p, 1, 5000), 1);
    /* A timeout longer than the wait is not hit. */
    ASSERT_RC(zkl_lock_acquire(b.lk, 10000), ZKL_OK);
    t_run_for(100);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(t_run_until(&b.acquired, 5000));
    t_run_for(200);
    ASSERT_EQ(b.n, 2);
    zkl_lock_free(a.lk);
    zkl_lock_free(b.lk);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    zkl_client_free(c1);
    zkl_client_free(c2);
}

TEST(cancel_each_state)
{
    zkl_client_t *c1 = t_client(t_hosts(), 4000, NULL);
    zkl_client_t *c2 = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    t_lock_t a, b;

    t_lock_init(&a, c1, p);
    t_lock_init(&b, c2, p);
    /* Create and list in flight, lock free. */
    ASSERT_RC(zkl_lock_acquire(b.lk, -1), ZKL_OK);
    ASSERT_RC(zkl_lock_cancel(b.lk), ZKL_OK);
    ASSERT(t_run_until(&b.failed, 5000));
    ASSERT_RC(b.last_status, ZKL_ECANCELED);
    ASSERT(WAIT_FOR(zkl_client_pending(c2) == 0, 5000));
    ASSERT_EQ(t_zk_count(p), 0);

    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    /* Create in flight, lock held by another. */
    ASSERT_RC(zkl_lock_acquire(b.lk, -1), ZKL_OK);
    ASSERT_RC(zkl_lock_cancel(b.lk), ZKL_OK);
    ASSERT(WAIT_FOR(b.failed == 2, 5000));
    ASSERT_EQ(t_zk_wait_count(p, 1, 5000), 1);
    /* Waiting on the watch. */
    ASSERT_RC(zkl_lock_acquire(b.lk, -1), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(p, 2, 5000), 2);
    t_run_for(50);
    ASSERT_RC(zkl_lock_cancel(b.lk), ZKL_OK);
    ASSERT(WAIT_FOR(b.failed == 3, 5000));
    ASSERT_RC(b.last_status, ZKL_ECANCELED);
    ASSERT_EQ(t_zk_wait_count(p, 1, 5000), 1);
    /* Re-acquiring at once after a cancel, while its delete may still be
     * in flight, works and does not see its own old node. */
    ASSERT_RC(zkl_lock_acquire(b.lk, -1), ZKL_OK);
    ASSERT_RC(zkl_lock_cancel(b.lk), ZKL_OK);
    ASSERT_RC(zkl_lock_acquire(b.lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(b.failed == 4, 5000));
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(t_run_until(&b.acquired, 5000));
    t_run_for(100);
    ASSERT_EQ(b.n, 5);
    ASSERT_EQ(b.acquired, 1);
    zkl_lock_free(b.lk);
    ASSERT(WAIT_FOR(zkl_client_pending(c2) == 0, 5000));
    ASSERT_EQ(zkl_client_pending(c1), 0);
    ASSERT_EQ(t_zk_count(p), 0);
    zkl_lock_free(a.lk);
    zkl_client_free(c1);
    zkl_client_free(c2);
}

TEST(fifo_order)
{
    enum { N = 6 };
    zkl_client_t *c[N];
    const char *p = t_path(NULL);
    t_lock_t l[N];
    int i;

    for (i = 0; i < N; i++) {
        c[i] = t_client(t_hosts(), 4000, NULL);
        t_lock_init(&l[i], c[i], p);
        l[i].release_on_acquire = i > 0;
    }
    ASSERT_RC(zkl_lock_acquire(l[0].lk, -1), ZKL_OK);
    ASSERT(t_run_until(&l[0].acquired, 5000));
    for (i = 1; i < N; i++) {
        /* Each queues after the previous one's node exists. */
        ASSERT_RC(zkl_lock_acquire(l[i].lk, -1), ZKL_OK);
        ASSERT_EQ(t_zk_wait_count(p, i + 1, 5000), i + 1);
    }
    t_run_for(100);
    for (i = 1; i < N; i++)
        ASSERT_EQ(l[i].acquired, 0);
    ASSERT_RC(zkl_lock_release(l[0].lk), ZKL_OK);
    ASSERT(t_run_until(&l[N - 1].released, 10000));
    for (i = 1; i < N; i++) {
        ASSERT_EQ(l[i].acquired, 1);
        ASSERT_EQ(l[i].order, i + 1); /* granted in queue order */
    }
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    for (i = 0; i < N; i++) {
        zkl_lock_free(l[i].lk);
        zkl_client_free(c[i]);
    }
}

/* ---- mutual exclusion with a shared record ---- */

struct shared {
    atomic_int inside;    /* holders inside the critical section */
    atomic_int grants;
    atomic_int overlaps;
    atomic_long counter;  /* read-modify-write under the lock */
};

struct worker {
    zkl_lock_t *lk;
    struct shared *sh;
    struct event *hold;
    int rounds_left;
    int done;
};

static void worker_hold_done(evutil_socket_t fd, short what, void *arg)
{
    struct worker *w = arg;
    long v;

    (void)fd;
    (void)what;
    /* A non-atomic read-modify-write that only the lock protects. */
    v = atomic_load(&w->sh->counter);
    atomic_store(&w->sh->counter, v + 1);
    atomic_fetch_sub(&w->sh->inside, 1);
    ASSERT_RC(zkl_lock_release(w->lk), ZKL_OK);
}

static void worker_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                      void *arg)
{
    struct worker *w = arg;
    struct timeval tv = {0, 1000};

    if (ev == ZKL_LOCK_ACQUIRED) {
        if (atomic_fetch_add(&w->sh->inside, 1) != 0)
            atomic_fetch_add(&w->sh->overlaps, 1);
        atomic_fetch_add(&w->sh->grants, 1);
        evtimer_add(w->hold, &tv); /* hold across loop iterations */
    } else if (ev == ZKL_LOCK_RELEASED) {
        ASSERT_RC(status, ZKL_OK);
        if (--w->rounds_left > 0)
            ASSERT_RC(zkl_lock_acquire(lk, -1), ZKL_OK);
        else
            w->done = 1;
    } else {
        FAILF("unexpected event %d status %s", ev, zkl_err_name(status));
    }
}

static int workers_done(void *arg)
{
    struct worker *w = arg;
    int i;

    for (i = 0; w[i].lk != NULL; i++)
        if (!w[i].done)
            return 0;
    return 1;
}

static void run_workers(struct shared *sh, const char *p, int nclients,
                        int per_client, int rounds)
{
    zkl_client_t *c[16];
    struct worker *w = calloc((size_t)(nclients * per_client + 1), sizeof *w);
    int i, j, k = 0;

    for (i = 0; i < nclients; i++) {
        c[i] = t_client(t_hosts(), 4000, NULL);
        for (j = 0; j < per_client; j++, k++) {
            w[k].sh = sh;
            w[k].rounds_left = rounds;
            w[k].hold = evtimer_new(t_base, worker_hold_done, &w[k]);
            ASSERT_RC(zkl_lock_new(&w[k].lk, c[i], p, worker_cb, &w[k]),
                      ZKL_OK);
        }
    }
    for (k = 0; k < nclients * per_client; k++)
        ASSERT_RC(zkl_lock_acquire(w[k].lk, -1), ZKL_OK);
    if (!t_run_cond(workers_done, w, 60000))
        FAILF("workers did not finish: %d grants",
              atomic_load(&sh->grants));
    for (k = 0; k < nclients * per_client; k++) {
        zkl_lock_free(w[k].lk);
        event_free(w[k].hold);
    }
    for (i = 0; i < nclients; i++)
        zkl_client_free(c[i]);
    free(w);
}

TEST(mutual_exclusion_sessions)
{
    struct shared sh = {0};
    const char *p = t_path(NULL);

    run_workers(&sh, p, 5, 4, 10);
    ASSERT_EQ(atomic_load(&sh.overlaps), 0);
    ASSERT_EQ(atomic_load(&sh.grants), 5 * 4 * 10);
    ASSERT_EQ(atomic_load(&sh.counter), 5 * 4 * 10);
    ASSERT_EQ(t_zk_count(p), 0);
}

TEST(mutual_exclusion_processes)
{
    enum { PROCS = 3 };
    struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
                             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    const char *p = t_path(NULL);
    pid_t pids[PROCS];
    int i, st;

    ASSERT(sh != MAP_FAILED);
    memset(sh, 0, sizeof *sh);
    for (i = 0; i < PROCS; i++) {
        if ((pids[i] = fork()) == 0) {
            event_base_free(t_base);
            t_base = event_base_new();
            run_workers(sh, p, 2, 2, 12);
            _exit(0);
        }
    }
    for (i = 0; i < PROCS; i++) {
        ASSERT(waitpid(pids[i], &st, 0) == pids[i]);
        ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    ASSERT_EQ(atomic_load(&sh->overlaps), 0);
    ASSERT_EQ(atomic_load(&sh->grants), PROCS * 2 * 2 * 12);
    ASSERT_EQ(atomic_load(&sh->counter), PROCS * 2 * 2 * 12);
    ASSERT_EQ(t_zk_count(p), 0);
    munmap(sh, sizeof *sh);
}

/* ---- many attempts in one thread ---- */

struct many {
    int acquired, released, bad;
};

static void many_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                    void *arg)
{
    struct many *m = arg;

    if (ev == ZKL_LOCK_ACQUIRED) {
        m->acquired++;
        if (zkl_lock_release(lk) != ZKL_OK)
            m->bad++;
    } else if (ev == ZKL_LOCK_RELEASED && status == ZKL_OK) {
        m->released++;
    } else {
        m->bad++;
    }
}

TEST(many_distinct_paths)
{
    enum { N = 5000 };
    zkl_client_t *c = t_client(t_hosts(), 10000, NULL);
    zkl_lock_t **lk = calloc(N, sizeof *lk);
    struct many m = {0};
    char path[256];
    int i;

    for (i = 0; i < N; i++) {
        snprintf(path, sizeof path, "%s/%d", t_path(NULL), i);
        ASSERT_RC(zkl_lock_new(&lk[i], c, path, many_cb, &m), ZKL_OK);
        ASSERT_RC(zkl_lock_acquire(lk[i], -1), ZKL_OK);
    }
    ASSERT_EQ(zkl_client_pending(c), N);
    if (!WAIT_FOR(m.released == N || m.bad, 90000))
        FAILF("only %d of %d released", m.released, N);
    ASSERT_EQ(m.bad, 0);
    ASSERT_EQ(m.acquired, N);
    ASSERT_EQ(zkl_client_pending(c), 0);
    for (i = 0; i < N; i += 499) {
        snprintf(path, sizeof path, "%s/%d", t_path(NULL), i);
        ASSERT_EQ(t_zk_count(path), 0);
    }
    for (i = 0; i < N; i++)
        zkl_lock_free(lk[i]);
    free(lk);
    zkl_client_free(c);
}

TEST(same_process_same_predecessor)
{
    /* A holds; B waits on A; C waits on B, all of one client, so B and
     * C wait on A's and B's attempts, not on server watches. B cancels:
     * its delete wakes C, which now waits on A. A's release must still
     * wake C. */
    zkl_client_t *c = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    t_lock_t a, b, cc;

    t_lock_init(&a, c, p);
    t_lock_init(&b, c, p);
    t_lock_init(&cc, c, p);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    ASSERT_RC(zkl_lock_acquire(b.lk, -1), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(p, 2, 5000), 2);
    ASSERT_RC(zkl_lock_acquire(cc.lk, -1), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(p, 3, 5000), 3);
    ASSERT(WAIT_FOR(zkl_lock_state(cc.lk) == ZKL_STATE_QUEUED, 5000));
    ASSERT_EQ(zkl_lock_state(b.lk), ZKL_STATE_QUEUED);
    ASSERT_RC(zkl_lock_cancel(b.lk), ZKL_OK);
    ASSERT(t_run_until(&b.failed, 5000));
    ASSERT_EQ(t_zk_wait_count(p, 2, 5000), 2);
    t_run_for(100);
    ASSERT_EQ(cc.acquired, 0);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(t_run_until(&cc.acquired, 5000));
    {
        zkl_stats_t st;

        ASSERT_RC(zkl_client_stats(c, &st, sizeof st), ZKL_OK);
        /* One notification: A's own-node watch at its release. */
        ASSERT_EQ(st.watch_events, 1);
        ASSERT_EQ(st.grants, 2);
    }
    zkl_lock_free(a.lk);
    zkl_lock_free(b.lk);
    zkl_lock_free(cc.lk);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    zkl_client_free(c);
}

/* ---- freeing from callbacks ---- */

static int freed_in_cb;

static void free_self_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                         void *arg)
{
    (void)ev;
    (void)status;
    (void)arg;
    zkl_lock_free(lk);
    freed_in_cb++;
}

TEST(free_lock_in_callback)
{
    zkl_client_t *c = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    zkl_lock_t *x, *y;
    t_lock_t h;

    ASSERT_RC(zkl_lock_new(&x, c, p, free_self_cb, NULL), ZKL_OK);
    ASSERT_RC(zkl_lock_acquire(x, -1), ZKL_OK);
    ASSERT(WAIT_FOR(freed_in_cb == 1, 5000)); /* freed while held */
    ASSERT(WAIT_FOR(zkl_client_pending(c) == 0, 5000));
    ASSERT_EQ(t_zk_count(p), 0);
    t_lock_init(&h, c, p);
    ASSERT_RC(zkl_lock_acquire(h.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&h.acquired, 5000));
    ASSERT_RC(zkl_lock_new(&y, c, p, free_self_cb, NULL), ZKL_OK);
    ASSERT_RC(zkl_lock_acquire(y, 0), ZKL_OK);
    ASSERT(WAIT_FOR(freed_in_cb == 2, 5000)); /* freed in FAILED */
    ASSERT(WAIT_FOR(zkl_client_pending(c) == 1, 5000));
    ASSERT_EQ(t_zk_count(p), 1);
    zkl_lock_free(h.lk);
    ASSERT(WAIT_FOR(zkl_client_pending(c) == 0, 5000));
    ASSERT_EQ(t_zk_count(p), 0);
    zkl_client_free(c);
}

struct freer {
    zkl_client_t *c;
    t_lock_t *others;
    int n_others;
    int calls;
};

static void free_client_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                           void *arg)
{
    struct freer *f = arg;
    int i;

    (void)status;
    f->calls++;
    if (ev != ZKL_LOCK_ACQUIRED)
        return;
    zkl_client_free(f->c);
    /* Still inside the callback: nothing else has been answered yet,
     * and the API refuses new work. */
    for (i = 0; i < f->n_others; i++)
        ASSERT_EQ(f->others[i].n, 0);
    ASSERT_RC(zkl_lock_acquire(f->others[0].lk, -1), ZKL_ECLOSED);
    (void)lk;
}

TEST(free_client_in_callback)
{
    zkl_client_t *c = t_client(t_hosts(), 4000, NULL);
    zkl_client_t *c2 = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL), *q = t_path("other");
    struct freer f = {0};
    t_lock_t others[2], blocker;
    zkl_lock_t *x;

    t_lock_init(&blocker, c2, q);
    ASSERT_RC(zkl_lock_acquire(blocker.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&blocker.acquired, 5000));
    f.c = c;
    f.others = others;
    f.n_others = 2;
    t_lock_init(&others[0], c, q); /* will be waiting */
    t_lock_init(&others[1], c, q); /* will be waiting */
    ASSERT_RC(zkl_lock_acquire(others[0].lk, -1), ZKL_OK);
    ASSERT_RC(zkl_lock_acquire(others[1].lk, -1), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(q, 3, 5000), 3);
    ASSERT_RC(zkl_lock_new(&x, c, p, free_client_cb, &f), ZKL_OK);
    ASSERT_RC(zkl_lock_acquire(x, -1), ZKL_OK);
    ASSERT(WAIT_FOR(others[1].n == 1, 5000));
    /* Each pending acquire answered exactly once, with ECLOSED; the
     * holder learnt its hold ended. */
    ASSERT_EQ(others[0].n, 1);
    ASSERT_EQ(others[0].ev[0], ZKL_LOCK_FAILED);
    ASSERT_RC(others[0].st[0], ZKL_ECLOSED);
    ASSERT_EQ(others[1].ev[0], ZKL_LOCK_FAILED);
    ASSERT_EQ(f.calls, 2);
    ASSERT_RC(zkl_lock_acquire(others[0].lk, -1), ZKL_ECLOSED);
    ASSERT_RC(zkl_lock_release(x), ZKL_ECLOSED);
    t_run_for(100);
    ASSERT_EQ(others[0].n, 1);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    ASSERT_EQ(t_zk_wait_count(q, 1, 5000), 1); /* only the blocker */
    zkl_lock_free(x);
    zkl_lock_free(others[0].lk);
    zkl_lock_free(others[1].lk);
    zkl_lock_free(blocker.lk);
    zkl_client_free(c2);
    ASSERT_EQ(t_zk_wait_count(q, 0, 5000), 0);
}

TEST(free_client_with_pending)
{
    zkl_client_t *c = t_client(t_hosts(), 4000, NULL);
    zkl_client_t *c2 = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL), *q = t_path("q");
    t_lock_t held, waiting, releasing, fresh, blocker;
    t_listing_t ls = {0};

    t_lock_init(&blocker, c2, q);
    ASSERT_RC(zkl_lock_acquire(blocker.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&blocker.acquired, 5000));
    t_lock_init(&held, c, p);
    t_lock_init(&releasing, c, t_path("r"));
    t_lock_init(&waiting, c, q);
    t_lock_init(&fresh, c, t_path("f"));
    ASSERT_RC(zkl_lock_acquire(held.lk, -1), ZKL_OK);
    ASSERT_RC(zkl_lock_acquire(releasing.lk, -1), ZKL_OK);
    ASSERT_RC(zkl_lock_acquire(waiting.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&held.acquired, 5000));
    ASSERT(t_run_until(&releasing.acquired, 5000));
    ASSERT_EQ(t_zk_wait_count(q, 2, 5000), 2);
    ASSERT_RC(zkl_lock_release(releasing.lk), ZKL_OK);
    ASSERT_RC(zkl_lock_acquire(fresh.lk, -1), ZKL_OK);
    ASSERT_RC(zkl_contenders(c, q, t_listing_cb, &ls), ZKL_OK);
    zkl_client_free(c); /* answers everything before returning */
    ASSERT_EQ(held.n, 2);
    ASSERT_EQ(held.ev[1], ZKL_LOCK_LOST);
    ASSERT_RC(held.st[1], ZKL_ECLOSED);
    ASSERT_EQ(waiting.n, 1);
    ASSERT_EQ(waiting.ev[0], ZKL_LOCK_FAILED);
    ASSERT_RC(waiting.st[0], ZKL_ECLOSED);
    ASSERT_EQ(releasing.n, 2);
    ASSERT_EQ(releasing.ev[1], ZKL_LOCK_RELEASED);
    ASSERT_EQ(fresh.n, 1);
    ASSERT_EQ(fresh.ev[0], ZKL_LOCK_FAILED);
    ASSERT_EQ(ls.done, 1);
    ASSERT_RC(ls.status, ZKL_ECLOSED);
    ASSERT(!zkl_lock_is_held(held.lk));
    zkl_lock_free(held.lk);
    zkl_lock_free(waiting.lk);
    zkl_lock_free(releasing.lk);
    zkl_lock_free(fresh.lk);
    /* Closing the session removes its nodes (the server finishes the
     * close after zookeeper_close() has returned). */
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    ASSERT_EQ(t_zk_wait_count(q, 1, 5000), 1);
    zkl_lock_free(blocker.lk);
    zkl_client_free(c2);
}

TEST(node_deleted_by_other)
{
    zkl_client_t *c1 = t_client(t_hosts(), 4000, NULL);
    zkl_client_t *c2 = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    t_lock_t a, b;

    t_hold_and_queue(&a, c1, &b, c2, p);
    ASSERT_EQ(t_zk_delete_node(a.lk), 0);
    ASSERT(t_run_until(&a.lost, 5000));
    ASSERT_RC(a.last_status, ZKL_ENODEGONE);
    ASSERT(!zkl_lock_is_held(a.lk));
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_ENOTHELD);
    ASSERT(t_run_until(&b.acquired, 5000));
    zkl_lock_free(a.lk);
    zkl_lock_free(b.lk);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    zkl_client_free(c1);
    zkl_client_free(c2);
}

/* The server refuses the lock node itself: the lock path is an
 * ephemeral node (another holder's lock node), which may have no
 * children. A definite refusal that no other code names: the acquire,
 * and a try-lock, fail with ZKL_EZK and leave nothing behind. */
TEST(acquire_refused_by_server_fails_ezk)
{
    zkl_client_t *c1 = t_client(t_hosts(), 4000, NULL);
    zkl_client_t *c2 = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    char name[ZKL_NODE_NAME_SIZE], under[512];
    t_lock_t a, b;

    t_lock_init(&a, c1, p);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    ASSERT_RC(zkl_lock_node_name(a.lk, name, sizeof name), ZKL_OK);
    snprintf(under, sizeof under, "%s/%s", p, name);
    t_lock_init(&b, c2, under);
    ASSERT_RC(zkl_lock_acquire(b.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&b.failed, 5000));
    ASSERT_RC(b.last_status, ZKL_EZK);
    ASSERT(!zkl_lock_is_held(b.lk));
    ASSERT_RC(zkl_lock_acquire(b.lk, 0), ZKL_OK);
    ASSERT(WAIT_FOR(b.failed == 2, 5000));
    ASSERT_RC(b.last_status, ZKL_EZK);
    ASSERT_EQ(b.n, 2);
    ASSERT(WAIT_FOR(zkl_client_pending(c2) == 0, 5000));
    ASSERT_EQ(t_zk_count(under), 0);
    /* The holder whose node it was never noticed. */
    ASSERT(zkl_lock_is_held(a.lk));
    ASSERT_EQ(a.n, 1);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(t_run_until(&a.released, 5000));
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    zkl_lock_free(a.lk);
    zkl_lock_free(b.lk);
    zkl_client_free(c1);
    zkl_client_free(c2);
}

TEST(chroot)
{
    zkl_client_t *plain = t_client(t_hosts(), 4000, NULL), *c;
    const char *root = t_path(NULL);
    char sub[300], hosts[300];
    zkl_options_t *o;
    t_conn_t conn;
    t_lock_t a, keep;

    /* The chroot must exist: hold a lock below it to create it. */
    snprintf(sub, sizeof sub, "%s/keep", root);
    t_lock_init(&keep, plain, sub);
    ASSERT_RC(zkl_lock_acquire(keep.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&keep.acquired, 5000));
    memset(&conn, 0, sizeof conn);
    ASSERT_RC(zkl_options_new(&o), ZKL_OK);
    snprintf(hosts, sizeof hosts, "%s", t_hosts());
    ASSERT_RC(zkl_options_set_servers(o, hosts), ZKL_OK);
    ASSERT_RC(zkl_options_set_chroot(o, root), ZKL_OK);
    ASSERT_RC(zkl_client_new(&c, o), ZKL_OK);
    zkl_options_free(o);
    ASSERT_RC(zkl_libevent_attach(c, t_base), ZKL_OK);
    t_lock_init(&a, c, "/inner");
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    snprintf(sub, sizeof sub, "%s/inner", root);
    ASSERT_EQ(t_zk_count(sub), 1);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(t_run_until(&a.released, 5000));
    ASSERT_EQ(t_zk_count(sub), 0);
    zkl_lock_free(a.lk);
    zkl_client_free(c);
    zkl_lock_free(keep.lk);
    zkl_client_free(plain);
}

TEST(local_handoff_without_relisting)
{
    /* A holds, B waits right behind it, both in one client. A's release
     * tells the client A's node (the lowest) is gone, so B holds the
     * lock without listing the children again. */
    zkl_client_t *c = t_client(t_hosts(), 4000, NULL);
    zkl_client_t *other = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    t_lock_t a, b, x;
    zkl_stats_t s0, s1;

    t_lock_init(&a, c, p);
    t_lock_init(&b, c, p);
    t_lock_init(&x, other, p);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    ASSERT_RC(zkl_lock_acquire(b.lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(zkl_lock_state(b.lk) == ZKL_STATE_QUEUED, 5000));
    /* Another session queues behind B: it must not jump ahead. */
    ASSERT_RC(zkl_lock_acquire(x.lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(zkl_lock_state(x.lk) == ZKL_STATE_QUEUED, 5000));
    t_run_for(100); /* A's own-node watch is armed by now */
    ASSERT_RC(zkl_client_stats(c, &s0, sizeof s0), ZKL_OK);
    b.release_on_acquire = 0;
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(t_run_until(&b.acquired, 5000));
    ASSERT(t_run_until(&a.released, 5000));
    t_run_for(100);
    ASSERT_RC(zkl_client_stats(c, &s1, sizeof s1), ZKL_OK);
    /* A's delete, B's own-node read that grants it, and B's own-node
     * watch once its callback has run and it still holds: no listing. */
    ASSERT_EQ(s1.requests - s0.requests, 3);
    ASSERT_EQ(s1.listings - s0.listings, 0);
    ASSERT_EQ(x.acquired, 0);
    ASSERT_EQ(t_zk_count(p), 2);
    ASSERT_RC(zkl_lock_release(b.lk), ZKL_OK);
    ASSERT(t_run_until(&x.acquired, 5000));
    zkl_lock_free(a.lk);
    zkl_lock_free(b.lk);
    zkl_lock_free(x.lk);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    zkl_client_free(c);
    zkl_client_free(other);
}

/* s sessions queue 36 waiters, interleaved, behind one holder, and 4 of
 * them leave the queue (two adjacent, across sessions when s > 1); then
 * the queue drains, in order and one at a time. Returns the listings the
 * drain cost, and how many of the waiters acquired. */
static long drain_long_queue(int s, long *acquired)
{
    enum { N = 36, SMAX = 3 };
    static const int gone[] = {5, 9, 10, 11};
    zkl_client_t *c[SMAX];
    const char *p = t_path(NULL);
    t_lock_t h, w[N];
    zkl_stats_t s0, s1;
    long listings = 0;
    int i, k, last = 0, want = N + 1 - 4;

    for (i = 0; i < s; i++)
        c[i] = t_client(t_hosts(), 4000, NULL);
    t_lock_init(&h, c[0], p);
    ASSERT_RC(zkl_lock_acquire(h.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&h.acquired, 5000));
    for (i = 0; i < N; i++) {
        t_lock_init(&w[i], c[i % s], p);
        w[i].release_on_acquire = 1;
        ASSERT_RC(zkl_lock_acquire(w[i].lk, -1), ZKL_OK);
        ASSERT_EQ(t_zk_wait_count(p, i + 2, 5000), i + 2);
    }
    ASSERT(WAIT_FOR(zkl_lock_state(w[N - 1].lk) == ZKL_STATE_QUEUED, 5000));
    for (k = 0; k < 4; k++)
        ASSERT_RC(zkl_lock_cancel(w[gone[k]].lk), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(p, want, 5000), want);
    t_run_for(200); /* the successors of the cancelled re-watch */
    for (i = 0; i < s; i++) {
        ASSERT_RC(zkl_client_stats(c[i], &s0, sizeof s0), ZKL_OK);
        listings -= (long)s0.listings;
    }
    ASSERT_RC(zkl_lock_release(h.lk), ZKL_OK);
    ASSERT(t_run_until(&w[N - 1].released, 10000));
    *acquired = 0;
    for (i = 0; i < N; i++) {
        int cancelled = 0;

        for (k = 0; k < 4; k++)
            cancelled |= gone[k] == i;
        ASSERT_EQ(w[i].acquired, !cancelled);
        *acquired += w[i].acquired;
        if (!cancelled) {
            ASSERT(w[i].order > last); /* queue order */
            last = w[i].order;
        }
    }
    for (i = 0; i < s; i++) {
        ASSERT_RC(zkl_client_stats(c[i], &s1, sizeof s1), ZKL_OK);
        listings += (long)s1.listings;
    }
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    zkl_lock_free(h.lk);
    for (i = 0; i < N; i++)
        zkl_lock_free(w[i].lk);
    for (i = 0; i < s; i++)
        zkl_client_free(c[i]);
    return listings;
}

TEST(long_queue_drains_without_listing)
{
    /* One session knows its whole queue (its view): each wake-up sets
     * one watch, or reads its own node at the head, and never lists the
     * children again, cancelled waiters or not. */
    long acquired;

    ASSERT_EQ(drain_long_queue(1, &acquired), 0);
    ASSERT_EQ(acquired, 32);
}

TEST(long_queue_across_sessions_drains_without_listing)
{
    /* Interleaved over three sessions of this thread, cancelled waiters
     * among them: the sessions share one view of the queue, so a waiter
     * woken by another session's node knows what went below it and
     * never lists. */
    long acquired, listings = drain_long_queue(3, &acquired);

    ASSERT_EQ(acquired, 32);
    ASSERT_EQ(listings, 0);
}

/* ZKL_LOCK_QUEUED: only when asked for, once per node, with the number
 * of contenders ahead, before the ACQUIRED; never for a free lock. */
TEST(queued_event_reports_place)
{
    t_conn_t conn;
    zkl_client_t *c = t_client(t_hosts(), 4000, &conn);
    const char *p = t_path(NULL);
    static t_lock_t h, w1, w2, quiet;

    t_lock_init(&h, c, p);
    t_lock_init(&w1, c, p);
    t_lock_init(&w2, c, p);
    t_lock_init(&quiet, c, p);
    ASSERT_RC(zkl_lock_notify_queued(NULL, 1), ZKL_EINVAL);
    ASSERT_RC(zkl_lock_notify_queued(h.lk, 1), ZKL_OK);
    ASSERT_RC(zkl_lock_notify_queued(w1.lk, 1), ZKL_OK);
    ASSERT_RC(zkl_lock_notify_queued(w2.lk, 1), ZKL_OK);
    ASSERT_RC(zkl_lock_acquire(h.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&h.acquired, 5000));
    ASSERT_EQ(h.queued, 0); /* free: granted, never queued */
    ASSERT_RC(zkl_lock_acquire(w1.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&w1.queued, 5000));
    ASSERT_EQ(w1.ahead, 1);
    ASSERT_RC(zkl_lock_acquire(w2.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&w2.queued, 5000));
    ASSERT_EQ(w2.ahead, 2);
    ASSERT_RC(zkl_lock_acquire(quiet.lk, -1), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(p, 4, 5000), 4);
    t_run_for(200);
    ASSERT_EQ(quiet.n, 0); /* did not ask: no event */
    ASSERT_RC(zkl_lock_release(h.lk), ZKL_OK);
    ASSERT(t_run_until(&w1.acquired, 5000));
    ASSERT_EQ(w1.ev[0], ZKL_LOCK_QUEUED);
    ASSERT_EQ(w1.ev[1], ZKL_LOCK_ACQUIRED);
    ASSERT_EQ(w1.queued, 1); /* once, not again when woken */
    ASSERT_RC(zkl_lock_release(w1.lk), ZKL_OK);
    ASSERT(t_run_until(&w2.acquired, 5000));
    ASSERT_EQ(w2.queued, 1);
    ASSERT_RC(zkl_lock_release(w2.lk), ZKL_OK);
    ASSERT(t_run_until(&quiet.acquired, 5000));
    ASSERT_RC(zkl_lock_release(quiet.lk), ZKL_OK);
    ASSERT(t_run_until(&quiet.released, 5000));
    ASSERT_EQ(quiet.n, 2);
    /* A try-lock on a held lock is answered ELOCKED, never QUEUED. */
    ASSERT_RC(zkl_lock_acquire(h.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&h.acquired, 5000));
    w1.n = 0;
    ASSERT_RC(zkl_lock_acquire(w1.lk, 0), ZKL_OK);
    ASSERT(t_run_until(&w1.failed, 5000));
    ASSERT_RC(w1.last_status, ZKL_ELOCKED);
    ASSERT_EQ(w1.queued, 1);
    ASSERT_RC(zkl_lock_release(h.lk), ZKL_OK);
    ASSERT(WAIT_FOR(h.released == 2, 5000));
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    zkl_lock_free(h.lk);
    zkl_lock_free(w1.lk);
    zkl_lock_free(w2.lk);
    zkl_lock_free(quiet.lk);
    zkl_client_free(c);
}

/* A reentrant handle counts acquires on top of its hold; one node,
 * deleted only by the last release; every call answered from the loop. */
TEST(reentrant_counts_holds)
{
    t_conn_t conn;
    zkl_client_t *c = t_client(t_hosts(), 4000, &conn);
    const char *p = t_path(NULL);
    static t_lock_t a, other;
    zkl_stats_t s0, s1;

    t_lock_init(&a, c, p);
    t_lock_init(&other, c, p);
    ASSERT_RC(zkl_lock_set_reentrant(NULL, 1), ZKL_EINVAL);
    ASSERT_EQ(zkl_lock_hold_count(a.lk), 0);
    ASSERT_EQ(zkl_lock_hold_count(NULL), 0);
    /* Not reentrant: a second acquire is refused. */
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_EHELD);
    ASSERT_RC(zkl_lock_set_reentrant(a.lk, 1), ZKL_OK);
    t_run_for(100); /* the own-node watch, armed after the callback */
    ASSERT_RC(zkl_client_stats(c, &s0, sizeof s0), ZKL_OK);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT_RC(zkl_lock_acquire(a.lk, 100), ZKL_OK);
    ASSERT_EQ(a.acquired, 1); /* never inside the call */
    ASSERT_EQ(zkl_lock_hold_count(a.lk), 3);
    ASSERT(WAIT_FOR(a.acquired == 3, 5000));
    ASSERT_RC(zkl_lock_set_reentrant(a.lk, 0), ZKL_EINVAL);
    ASSERT_EQ(t_zk_count(p), 1);
    /* Another handle of the same client is another contender. */
    ASSERT_RC(zkl_lock_acquire(other.lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(zkl_lock_state(other.lk) == ZKL_STATE_QUEUED, 5000));
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(WAIT_FOR(a.released == 2, 5000));
    ASSERT_RC(zkl_client_stats(c, &s1, sizeof s1), ZKL_OK);
    /* Only the other handle sent: create and listing; it waits on our
     * attempt, with no watch. */
    ASSERT_EQ(s1.requests - s0.requests, 2);
    ASSERT(zkl_lock_is_held(a.lk));
    ASSERT_EQ(zkl_lock_hold_count(a.lk), 1);
    t_run_for(200);
    ASSERT_EQ(other.acquired, 0);
    ASSERT_EQ(t_zk_count(p), 2);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK); /* the last: deletes */
    ASSERT(t_run_until(&other.acquired, 5000));
    ASSERT(WAIT_FOR(a.released == 3, 5000));
    ASSERT_RC(a.last_status, ZKL_OK);
    ASSERT_EQ(zkl_lock_hold_count(a.lk), 0);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_ENOTHELD);
    /* A reentrant hold that is lost ends at every depth at once. */
    ASSERT_RC(zkl_lock_release(other.lk), ZKL_OK);
    ASSERT(t_run_until(&other.released, 5000));
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(a.acquired == 4, 5000));
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(a.acquired == 5, 5000));
    t_run_for(100); /* the own-node watch */
    ASSERT_EQ(t_zk_delete_node(a.lk), 0);
    ASSERT(t_run_until(&a.lost, 5000));
    ASSERT_RC(a.last_status, ZKL_ENODEGONE);
    ASSERT_EQ(zkl_lock_hold_count(a.lk), 0);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_ENOTHELD);
    /* A fresh hold starts at one. */
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(a.acquired == 6, 5000));
    ASSERT_EQ(zkl_lock_hold_count(a.lk), 1);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(WAIT_FOR(a.released == 4, 5000));
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    ASSERT_EQ(zkl_client_pending(c), 0);
    zkl_lock_free(a.lk);
    zkl_lock_free(other.lk);
    zkl_client_free(c);
}

/* Freeing a client while its requests are on their way (creates of a
 * lock path's parents and of the lock node, the listing behind them):
 * the session's close must still reach the server, so its nodes go at
 * once, not a session timeout later. The ZooKeeper client alone closes
 * the socket on the first reply it reads and the close can be lost. */
TEST(free_client_with_requests_in_flight)
{
    int i, left = 0;

    for (i = 0; i < 30; i++) {
        zkl_client_t *c = t_client(t_hosts(), 10000, NULL);
        char sfx[32];
        const char *p;
        static t_lock_t a;

        snprintf(sfx, sizeof sfx, "deep%d/er/lock", i);
        p = t_path(sfx);
        t_lock_init(&a, c, p);
        ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
        t_run_for(i % 3); /* sent; answers on their way or some in */
        zkl_client_free(c);
        ASSERT(a.n <= 2);
        zkl_lock_free(a.lk);
        if (t_zk_wait_count(p, 0, 3000) != 0)
            left++;
    }
    ASSERT_EQ(left, 0);
}

/* The state calls answer for now, the callbacks follow (the header's
 * Callbacks): a lock granted in the pass that delivers another
 * callback reads HELD, has a token and can be released while its own
 * ACQUIRED is still queued; that ACQUIRED still comes, first, then its
 * RELEASED. Two holders on two paths of one client release together,
 * their deletes sent in one write, the two waiters behind them on the
 * same client. The first callback after the releases works past the
 * loop turn's budget, so what is queued behind it waits for the next
 * pass, which reads the other delete's answer first: a callback then
 * finds the other waiter granted and not told (in the first round, as
 * a rule; a round that misses is tried again). */
#define EARLY_N 4 /* holders 0 and 1, their waiters 2 and 3 */
static struct early {
    zkl_lock_t *lk;
    int ev[8], n;
    int held_in_acquired; /* zkl_lock_is_held() inside its ACQUIRED */
    int seen_held;        /* read HELD, told nothing yet */
} early[EARLY_N];
static int early_seen, early_slow;

static void early_scan(void)
{
    int i;
    uint64_t tok;

    for (i = 2; i < EARLY_N; i++) {
        struct early *o = &early[i];

        if (o->n > 0 || o->seen_held || !zkl_lock_is_held(o->lk))
            continue;
        o->seen_held = 1;
        early_seen++;
        ASSERT_EQ(zkl_lock_state(o->lk), ZKL_STATE_HELD);
        ASSERT_EQ(zkl_lock_hold_count(o->lk), 1);
        ASSERT_RC(zkl_lock_token(o->lk, &tok), ZKL_OK);
        ASSERT(tok > 0);
        ASSERT_RC(zkl_lock_cancel(o->lk), ZKL_ENOTPENDING);
        ASSERT_RC(zkl_lock_acquire(o->lk, -1), ZKL_EHELD);
        ASSERT_RC(zkl_lock_release(o->lk), ZKL_OK);
        ASSERT_EQ(zkl_lock_is_held(o->lk), 0);
        ASSERT_RC(zkl_lock_token(o->lk, &tok), ZKL_ENOTHELD);
        ASSERT_RC(zkl_lock_release(o->lk), ZKL_ENOTHELD);
    }
}

static void early_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                     void *arg)
{
    struct early *e = arg;

    ASSERT(e->lk == lk);
    ASSERT_RC(status, ZKL_OK);
    ASSERT(e->n < 8);
    e->ev[e->n++] = ev;
    if (ev == ZKL_LOCK_ACQUIRED)
        e->held_in_acquired = zkl_lock_is_held(lk);
    early_scan();
    if (early_slow) {
        /* Work past the loop turn's budget: the rest of the queue waits
         * for the next pass, which reads the other answers first. */
        early_slow = 0;
        t_sleep_ms(60);
    }
}

static int early_done(void *arg)
{
    int i;

    (void)arg;
    for (i = 0; i < EARLY_N; i++)
        if (early[i].n < 2)
            return 0;
    return 1;
}

TEST(state_answers_before_the_callback)
{
    zkl_client_t *c = t_client(t_hosts(), 8000, NULL);
    const char *p[2];
    int round, i;

    p[0] = strdup(t_path("a"));
    p[1] = strdup(t_path("b"));
    for (round = 0; round < 50 && early_seen == 0; round++) {
        memset(early, 0, sizeof early);
        for (i = 0; i < EARLY_N; i++)
            ASSERT_RC(zkl_lock_new(&early[i].lk, c, p[i % 2], early_cb,
                                   &early[i]),
                      ZKL_OK);
        for (i = 0; i < EARLY_N; i++) {
            ASSERT_RC(zkl_lock_acquire(early[i].lk, -1), ZKL_OK);
            if (i < 2)
                ASSERT(WAIT_FOR(early[i].n == 1, 5000));
            else
                ASSERT(WAIT_FOR(zkl_lock_state(early[i].lk) ==
                                    ZKL_STATE_QUEUED,
                                5000));
        }
        early_slow = 1;
        ASSERT_RC(zkl_lock_release(early[0].lk), ZKL_OK);
        ASSERT_RC(zkl_lock_release(early[1].lk), ZKL_OK);
        for (i = 2; i < EARLY_N; i++) {
            ASSERT(WAIT_FOR(early[i].n > 0, 5000));
            if (!early[i].seen_held)
                ASSERT_RC(zkl_lock_release(early[i].lk), ZKL_OK);
        }
        ASSERT(t_run_cond(early_done, NULL, 5000));
        for (i = 0; i < EARLY_N; i++) {
            ASSERT_EQ(early[i].ev[0], ZKL_LOCK_ACQUIRED);
            ASSERT_EQ(early[i].ev[1], ZKL_LOCK_RELEASED);
            /* Released before told: not held in its own ACQUIRED. */
            ASSERT_EQ(early[i].held_in_acquired, !early[i].seen_held);
        }
        ASSERT_EQ(t_zk_wait_count(p[0], 0, 5000), 0);
        ASSERT_EQ(t_zk_wait_count(p[1], 0, 5000), 0);
        ASSERT(WAIT_FOR(zkl_client_pending(c) == 0, 5000));
        t_run_for(20);
        for (i = 0; i < EARLY_N; i++) {
            ASSERT_EQ(early[i].n, 2); /* nothing more */
            zkl_lock_free(early[i].lk);
        }
    }
    ASSERT(early_seen > 0);
    free((void *)p[0]);
    free((void *)p[1]);
    zkl_client_free(c);
}
