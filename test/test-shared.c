/* The thread's shared queue view and the client's pacing, against the
 * real server: sessions of one process share what they learn of a
 * queue, and must still list behind nodes that are not theirs (another
 * library's, another process's); a burst of acquires on a client that
 * holds locks goes out within the window and tells no hold LOST. */
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zookeeper/zookeeper.h>

#include "harness.h"
#include "zklock_libevent.h"

static long listings_of(zkl_client_t *const *c, int n)
{
    zkl_stats_t s;
    long k = 0;
    int i;

    for (i = 0; i < n; i++) {
        ASSERT_RC(zkl_client_stats(c[i], &s, sizeof s), ZKL_OK);
        k += (long)s.listings;
    }
    return k;
}

/* The name of the child of p whose name starts with prefix. */
static int child_named(const char *p, const char *prefix, char *out,
                       size_t size)
{
    char **names;
    int n = t_zk_children(p, &names), i, found = 0;

    for (i = 0; i < n; i++)
        if (!found && strncmp(names[i], prefix, strlen(prefix)) == 0) {
            snprintf(out, size, "%s/%s", p, names[i]);
            found = 1;
        }
    t_zk_free_names(names, n);
    return found;
}

TEST(shared_view_foreign_waiter)
{
    /* Two sessions of this thread queue 20 waiters, interleaved, behind
     * a holder; a Curator-layout node of another client stands among
     * them and gives up while they wait. The view must not take that
     * node for one of ours: the waiter behind it lists (the others hand
     * on without listing), and the queue drains in order, once each. */
    enum { N = 20, FOREIGN_AT = 10 };
    zkl_client_t *c[2], *hc = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    char prefix[64], full[512], node[600];
    t_lock_t h, w[N];
    long l0;
    int i, last = 0;

    c[0] = t_client(t_hosts(), 4000, NULL);
    c[1] = t_client(t_hosts(), 4000, NULL);
    t_lock_init(&h, hc, p);
    ASSERT_RC(zkl_lock_acquire(h.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&h.acquired, 5000));
    snprintf(prefix, sizeof prefix,
             "_c_0b5e2a9c-8f1d-4c3e-9a7b-c0ffee000001-lock-");
    for (i = 0; i < N; i++) {
        if (i == FOREIGN_AT) {
            snprintf(full, sizeof full, "%s/%s", p, prefix);
            ASSERT_RC(t_zk_create_as(NULL, full, ZOO_SEQUENCE), ZOK);
            ASSERT_EQ(t_zk_wait_count(p, i + 2, 5000), i + 2);
        }
        t_lock_init(&w[i], c[i % 2], p);
        w[i].release_on_acquire = 1;
        ASSERT_RC(zkl_lock_acquire(w[i].lk, -1), ZKL_OK);
        ASSERT_EQ(t_zk_wait_count(p, i + 2 + (i >= FOREIGN_AT),
                                  5000), i + 2 + (i >= FOREIGN_AT));
    }
    ASSERT(WAIT_FOR(zkl_lock_state(w[N - 1].lk) == ZKL_STATE_QUEUED, 5000));
    t_run_for(100);
    /* The other client gives up: its node goes while everyone waits. */
    ASSERT(child_named(p, prefix, node, sizeof node));
    ASSERT_RC(t_zk_delete(node), ZOK);
    t_run_for(300);
    for (i = 0; i < N; i++)
        ASSERT_EQ(w[i].acquired, 0);
    l0 = listings_of(c, 2);
    ASSERT_RC(zkl_lock_release(h.lk), ZKL_OK);
    ASSERT(t_run_until(&w[N - 1].released, 10000));
    for (i = 0; i < N; i++) {
        ASSERT_EQ(w[i].acquired, 1);
        ASSERT(w[i].order > last);
        last = w[i].order;
    }
    /* The waiter behind the foreign node listed when it went (before
     * the drain, so not counted here) or when it was woken; none of the
     * others listed during the drain. */
    ASSERT(listings_of(c, 2) - l0 <= 1);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    zkl_lock_free(h.lk);
    for (i = 0; i < N; i++)
        zkl_lock_free(w[i].lk);
    zkl_client_free(c[0]);
    zkl_client_free(c[1]);
    zkl_client_free(hc);
}

/* ---- another process on the same lock ---- */

struct xproc {
    volatile int inside, overlaps, grants, child_listings;
};

static struct xproc *xp;

static void xproc_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                     void *arg)
{
    int *done = arg;

    (void)status;
    if (ev == ZKL_LOCK_ACQUIRED) {
        if (__atomic_fetch_add(&xp->inside, 1, __ATOMIC_SEQ_CST) != 0)
            __atomic_fetch_add(&xp->overlaps, 1, __ATOMIC_SEQ_CST);
        __atomic_fetch_add(&xp->grants, 1, __ATOMIC_SEQ_CST);
        usleep(2000);
        __atomic_fetch_sub(&xp->inside, 1, __ATOMIC_SEQ_CST);
        zkl_lock_release(lk);
    } else if (ev == ZKL_LOCK_RELEASED) {
        (*done)++;
    } else {
        /* Never expected: said, so that a failure shows what came. */
        fprintf(stderr, "xproc %ld: %s %s\n", (long)getpid(),
                zkl_lock_event_name(ev), zkl_err_name(status));
        __atomic_fetch_add(&xp->overlaps, 1000, __ATOMIC_SEQ_CST);
    }
}

enum { XK = 24 };

/* XK waiters over two sessions of this thread, one every 15 ms so that
 * the two processes interleave in the queue; returns once all of them
 * held and released, with the listings their sessions sent. */
static long xproc_waiters(const char *p, int before_ms,
                          void (*queued)(void))
{
    zkl_client_t *c[2];
    zkl_lock_t *lk[XK];
    int i, done = 0;
    long listings;

    c[0] = t_client(t_hosts(), 4000, NULL);
    c[1] = t_client(t_hosts(), 4000, NULL);
    t_run_for(before_ms);
    for (i = 0; i < XK; i++) {
        ASSERT_RC(zkl_lock_new(&lk[i], c[i % 2], p, xproc_cb, &done),
                  ZKL_OK);
        ASSERT_RC(zkl_lock_acquire(lk[i], -1), ZKL_OK);
        t_run_for(15);
    }
    if (queued != NULL)
        queued();
    if (!WAIT_FOR(done == XK, 30000)) {
        /* What each waiter was doing when time ran out (a CI run under
         * valgrind once stalled here in both processes). */
        for (i = 0; i < XK; i++)
            fprintf(stderr, "xproc %ld: waiter %d %s\n", (long)getpid(), i,
                    zkl_lock_state_name(zkl_lock_state(lk[i])));
        fprintf(stderr, "xproc %ld: done %d, grants %d, sessions %s %s\n",
                (long)getpid(), done, xp->grants,
                zkl_conn_event_name(zkl_client_state(c[0])),
                zkl_conn_event_name(zkl_client_state(c[1])));
    }
    ASSERT(WAIT_FOR(done == XK, 1));
    listings = listings_of(c, 2);
    for (i = 0; i < XK; i++)
        zkl_lock_free(lk[i]);
    zkl_client_free(c[0]);
    zkl_client_free(c[1]);
    return listings;
}

static t_lock_t xholder;
static const char *xpath;

/* The parent's holder lets go once both processes' waiters queued. */
static void xrelease(void)
{
    ASSERT_EQ(t_zk_wait_count(xpath, 2 * XK + 1, 10000), 2 * XK + 1);
    ASSERT_RC(zkl_lock_release(xholder.lk), ZKL_OK);
}

TEST(shared_view_other_process)
{
    /* Two processes, each with two sessions and a shared view of its
     * own, queue 24 waiters each on one lock, interleaved, behind a
     * holder. A waiter whose predecessor is the other process's node
     * knows nothing of it and must list; the lock is never held by two
     * at once and every waiter holds it once. */
    zkl_client_t *hc = t_client(t_hosts(), 4000, NULL);
    long listings;
    pid_t pid;
    int st;

    xpath = t_path(NULL);
    xp = mmap(NULL, sizeof *xp, PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT(xp != MAP_FAILED);
    memset((void *)xp, 0, sizeof *xp);
    t_lock_init(&xholder, hc, xpath);
    ASSERT_RC(zkl_lock_acquire(xholder.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&xholder.acquired, 5000));
    fflush(NULL);
    if ((pid = fork()) == 0) {
        /* The loop's epoll set is shared with the parent until
         * event_reinit(): freed as it is, it would take the parent's
         * sockets out of the parent's set. */
        event_reinit(t_base);
        event_base_free(t_base);
        t_base = event_base_new();
        xp->child_listings = (int)xproc_waiters(xpath, 7, NULL);
        _exit(0);
    }
    ASSERT(pid > 0);
    listings = xproc_waiters(xpath, 0, xrelease);
    ASSERT(waitpid(pid, &st, 0) == pid);
    ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    ASSERT_EQ(xp->overlaps, 0);
    ASSERT_EQ(xp->grants, 2 * XK);
    /* Nodes of one process stood below the other's. */
    ASSERT(listings + xp->child_listings > 0);
    ASSERT_EQ(t_zk_wait_count(xpath, 0, 5000), 0);
    zkl_lock_free(xholder.lk);
    zkl_client_free(hc);
    munmap((void *)xp, sizeof *xp);
}

/* A child of fork() made after the parent's clients ran inherits a copy
 * of the thread's shared view, the parent's holder in its own-node
 * table. A child's waiter right behind that holder must wait on the
 * server, not on the copy (which never moves): it gets the lock when the
 * parent releases. (shared_view_other_process met this now and then, a
 * child waiter first in the queue, and hung.) */
static volatile int fork_child_got;

static void fork_child_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                          void *arg)
{
    (void)lk;
    (void)status;
    (void)arg;
    fork_child_got = ev == ZKL_LOCK_ACQUIRED ? 1 : -1;
}

TEST(forked_child_shares_no_view_with_its_parent)
{
    zkl_client_t *hc = t_client(t_hosts(), 8000, NULL);
    const char *p = t_path(NULL);
    t_lock_t h;
    pid_t pid;
    int st;

    t_lock_init(&h, hc, p);
    ASSERT_RC(zkl_lock_acquire(h.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&h.acquired, 5000));
    t_run_for(100);
    fflush(NULL);
    if ((pid = fork()) == 0) {
        zkl_client_t *c;
        zkl_lock_t *lk;

        /* The loop's epoll set is shared with the parent until
         * event_reinit(): freed as it is, it would take the parent's
         * sockets out of the parent's set. */
        event_reinit(t_base);
        event_base_free(t_base);
        t_base = event_base_new();
        c = t_client(t_hosts(), 8000, NULL);
        ASSERT_RC(zkl_lock_new(&lk, c, p, fork_child_cb, NULL), ZKL_OK);
        ASSERT_RC(zkl_lock_acquire(lk, 8000), ZKL_OK);
        ASSERT(WAIT_FOR(fork_child_got != 0, 10000));
        ASSERT_EQ(fork_child_got, 1);
        zkl_lock_free(lk);
        zkl_client_free(c);
        _exit(0);
    }
    ASSERT(pid > 0);
    ASSERT_EQ(t_zk_wait_count(p, 2, 10000), 2); /* the child waits */
    ASSERT_RC(zkl_lock_release(h.lk), ZKL_OK);
    ASSERT(t_run_until(&h.released, 5000));
    ASSERT_RC(h.last_status, ZKL_OK);
    while (waitpid(pid, &st, WNOHANG) == 0)
        t_run_for(20); /* the session stays alive meanwhile */
    ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    zkl_lock_free(h.lk);
    zkl_client_free(hc);
}

/* ---- pacing ---- */

static volatile int w_connected;

static void w_conn_cb(zkl_client_t *c, zkl_conn_event_t ev, void *arg)
{
    (void)c;
    (void)arg;
    w_connected = ev == ZKL_CONN_CONNECTED;
}

static zkl_client_t *window_client(int window)
{
    zkl_options_t *o;
    zkl_client_t *c;

    ASSERT_RC(zkl_options_new(&o), ZKL_OK);
    ASSERT_RC(zkl_options_set_servers(o, t_hosts()), ZKL_OK);
    ASSERT_RC(zkl_options_set_session_timeout(o, 4000), ZKL_OK);
    ASSERT_RC(zkl_options_set_window(o, window), ZKL_OK);
    ASSERT_RC(zkl_options_set_window(NULL, window), ZKL_EINVAL);
    ASSERT_RC(zkl_options_set_conn_cb(o, w_conn_cb, NULL), ZKL_OK);
    ASSERT_RC(zkl_client_new(&c, o), ZKL_OK);
    zkl_options_free(o);
    ASSERT_EQ(zkl_libevent_attach(c, t_base), 0);
    ASSERT(t_run_until(&w_connected, 10000));
    return c;
}

static int sum_acquired(const t_lock_t *t, int n)
{
    int i, k = 0;

    for (i = 0; i < n; i++)
        k += t[i].acquired;
    return k;
}

static int sum_released(const t_lock_t *t, int n)
{
    int i, k = 0;

    for (i = 0; i < n; i++)
        k += t[i].released;
    return k;
}

static int count_queued(const t_lock_t *t, int n)
{
    int i, k = 0;

    for (i = 0; i < n; i++)
        k += zkl_lock_state(t[i].lk) == ZKL_STATE_QUEUED;
    return k;
}

TEST(burst_paced_within_window)
{
    /* A client holding locks calls acquire 3,000 times in one loop turn
     * on 300 locks another client holds. Its requests go out within the
     * window (and some waited for room); its holds are never suspended
     * or lost; once the other lets go, every waiter holds once. */
    enum { HELD = 10, PATHS = 300, N = 3000, WINDOW = 64 };
    static t_lock_t own[HELD], other[PATHS], w[N];
    zkl_client_t *c = window_client(WINDOW);
    zkl_client_t *oc = t_client(t_hosts(), 4000, NULL);
    char paths[PATHS][128], sfx[16];
    zkl_stats_t s;
    int i;

    for (i = 0; i < HELD; i++) {
        snprintf(sfx, sizeof sfx, "own%d", i);
        t_lock_init(&own[i], c, t_path(sfx));
        ASSERT_RC(zkl_lock_acquire(own[i].lk, -1), ZKL_OK);
    }
    for (i = 0; i < PATHS; i++) {
        snprintf(sfx, sizeof sfx, "p%d", i);
        snprintf(paths[i], sizeof paths[i], "%s", t_path(sfx));
        t_lock_init(&other[i], oc, paths[i]);
        ASSERT_RC(zkl_lock_acquire(other[i].lk, -1), ZKL_OK);
    }
    ASSERT(WAIT_FOR(sum_acquired(other, PATHS) == PATHS, 20000));
    ASSERT(WAIT_FOR(own[HELD - 1].acquired && own[0].acquired, 5000));
    for (i = 0; i < N; i++) {
        t_lock_init(&w[i], c, paths[i % PATHS]);
        w[i].release_on_acquire = 1;
        ASSERT_RC(zkl_lock_acquire(w[i].lk, -1), ZKL_OK);
    }
    ASSERT_RC(zkl_client_stats(c, &s, sizeof s), ZKL_OK);
    ASSERT_EQ(s.window, WINDOW);
    ASSERT(WAIT_FOR(count_queued(w, N) == N, 60000));
    ASSERT_RC(zkl_client_stats(c, &s, sizeof s), ZKL_OK);
    ASSERT(s.outstanding_max <= WINDOW);
    ASSERT(s.paced_max > 0);
    ASSERT(s.paced_total > 0);
    ASSERT_EQ(s.paced, 0);
    for (i = 0; i < HELD; i++) {
        ASSERT_EQ(own[i].suspended, 0);
        ASSERT_EQ(own[i].lost, 0);
        ASSERT(zkl_lock_is_held(own[i].lk));
    }
    for (i = 0; i < PATHS; i++)
        ASSERT_RC(zkl_lock_release(other[i].lk), ZKL_OK);
    ASSERT(WAIT_FOR(sum_released(w, N) == N, 60000));
    for (i = 0; i < N; i++)
        ASSERT_EQ(w[i].acquired, 1);
    /* (During the drain, releases' deletes and grants' reads do not
     * wait for room, so the count may pass the window then.) */
    for (i = 0; i < HELD; i++)
        ASSERT_EQ(own[i].lost + own[i].suspended, 0);
    for (i = 0; i < N; i++)
        zkl_lock_free(w[i].lk);
    for (i = 0; i < HELD; i++)
        zkl_lock_free(own[i].lk);
    for (i = 0; i < PATHS; i++)
        zkl_lock_free(other[i].lk);
    ASSERT_EQ(t_zk_wait_count(paths[0], 0, 5000), 0);
    zkl_client_free(c);
    zkl_client_free(oc);
}

/* ---- a client made on one thread, run and freed on another ---- */

static volatile int mt_connected;

static void mt_conn_cb(zkl_client_t *c, zkl_conn_event_t ev, void *arg)
{
    (void)c;
    (void)arg;
    if (ev == ZKL_CONN_CONNECTED)
        mt_connected = 1;
}

static zkl_client_t *mt_new(void)
{
    zkl_options_t *o;
    zkl_client_t *c;

    ASSERT_RC(zkl_options_new(&o), ZKL_OK);
    ASSERT_RC(zkl_options_set_servers(o, t_hosts()), ZKL_OK);
    ASSERT_RC(zkl_options_set_conn_cb(o, mt_conn_cb, NULL), ZKL_OK);
    ASSERT_RC(zkl_client_new(&c, o), ZKL_OK);
    zkl_options_free(o);
    return c;
}

static void mt_lock_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                       void *arg)
{
    (void)lk;
    (void)ev;
    (void)status;
    (void)arg;
}

/* The worker: attaches the client to a loop of its own, takes and
 * gives back a lock, and frees the client, all on its thread. */
static void *mt_run(void *arg)
{
    zkl_client_t *c = arg;
    struct event_base *base = event_base_new();
    zkl_lock_t *lk;
    uint64_t end = t_now_ms() + 10000;

    if (base == NULL || zkl_libevent_attach(c, base) != 0)
        return (void *)1;
    while (!mt_connected && t_now_ms() < end)
        event_base_loop(base, EVLOOP_ONCE);
    if (!mt_connected || zkl_lock_new(&lk, c, t_path("mt"), mt_lock_cb, NULL) ||
        zkl_lock_acquire(lk, 5000) != ZKL_OK)
        return (void *)2;
    while (!zkl_lock_is_held(lk) && t_now_ms() < end)
        event_base_loop(base, EVLOOP_ONCE);
    if (!zkl_lock_is_held(lk))
        return (void *)3;
    zkl_lock_free(lk);
    zkl_client_free(c);
    event_base_free(base);
    return NULL;
}

TEST(client_made_on_one_thread_run_on_another)
{
    /* A program may make its clients on one thread and hand each to the
     * thread that runs its loop. The client shares the views of the
     * thread that runs it, so freeing it there leaves nothing of it in
     * the views of the thread that made it: this thread's next clients
     * still work (under AddressSanitizer, a view freed from the wrong
     * thread's list is a use after free here). */
    zkl_client_t *c = mt_new(), *d;
    pthread_t t;
    void *ret = (void *)-1;
    t_lock_t a;

    ASSERT_EQ(pthread_create(&t, NULL, mt_run, c), 0);
    ASSERT_EQ(pthread_join(t, &ret), 0);
    ASSERT(ret == NULL);
    d = t_client(t_hosts(), 4000, NULL);
    t_lock_init(&a, d, t_path(NULL));
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    zkl_lock_free(a.lk);
    zkl_client_free(d);
}
