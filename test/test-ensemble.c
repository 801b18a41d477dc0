/* Failover against a real 3-node ensemble: the leader killed, the
 * follower a client is connected to killed, every node restarted in
 * turn, while locks are held and queued. What must hold: sessions that
 * survive keep their locks (never ZKL_LOCK_LOST), queued waiters still
 * get the lock in order, new acquires keep being granted, no two holders
 * at once, no node left behind. */
#include <stdatomic.h>

#include "harness.h"

#define SESSION_MS 8000
#define ROLL_SESSION_MS 20000

static void kept_through_failover(t_lock_t *h)
{
    /* Suspended and restored as often as the connection moved, never
     * lost, and the node still there. */
    ASSERT_EQ(h->lost, 0);
    ASSERT(WAIT_FOR(h->restored == h->suspended, 15000));
    ASSERT(zkl_lock_is_held(h->lk));
}

TEST(ensemble_basic)
{
    /* The ensemble serves: a lock taken through one node is seen as
     * taken through another. */
    zkl_client_t *a = t_client(t_ens_host(1), SESSION_MS, NULL);
    zkl_client_t *b = t_client(t_ens_host(2), SESSION_MS, NULL);
    const char *p = t_path(NULL);
    char srv[64];
    t_lock_t la, lb;

    ASSERT_RC(zkl_client_server(a, srv, sizeof srv), ZKL_OK);
    ASSERT_EQ(t_ens_node_of(srv), 1);
    ASSERT_RC(zkl_client_server(a, srv, 4), ZKL_EINVAL);
    ASSERT_RC(zkl_client_server(NULL, srv, sizeof srv), ZKL_EINVAL);
    t_lock_init(&la, a, p);
    t_lock_init(&lb, b, p);
    ASSERT_RC(zkl_lock_acquire(la.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&la.acquired, 5000));
    ASSERT_RC(zkl_lock_acquire(lb.lk, 0), ZKL_OK);
    ASSERT(t_run_until(&lb.failed, 5000));
    ASSERT_RC(lb.last_status, ZKL_ELOCKED);
    ASSERT_RC(zkl_lock_release(la.lk), ZKL_OK);
    ASSERT(t_run_until(&la.released, 5000));
    zkl_lock_free(la.lk);
    zkl_lock_free(lb.lk);
    zkl_client_free(a);
    zkl_client_free(b);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
}

/* A holder and a waiter on one lock, through the given servers; the
 * victim node is killed while both wait; afterwards the holder still
 * holds, the waiter still waits, a new client still gets a fresh lock,
 * and the release hands the lock on. */
static void failover_case(const char *holder_hosts, int victim_is_holders)
{
    zkl_client_t *hc = t_client(holder_hosts, SESSION_MS, NULL);
    zkl_client_t *wc = t_client(t_hosts(), SESSION_MS, NULL);
    const char *p = t_path("a"), *q = t_path("fresh");
    char srv[64];
    t_lock_t h, w, f;
    int victim;

    t_hold_and_queue(&h, hc, &w, wc, p);
    t_run_for(200);
    if (victim_is_holders) {
        ASSERT_RC(zkl_client_server(hc, srv, sizeof srv), ZKL_OK);
        victim = t_ens_node_of(srv);
    } else {
        victim = t_ens_leader(10000);
    }
    t_ens("kill", victim);
    if (victim_is_holders) /* the holder's connection had to move */
        ASSERT(t_run_until(&h.suspended, 10000));
    /* A fresh lock through the survivors: writes work again. */
    {
        zkl_client_t *fc = t_client(t_hosts(), SESSION_MS, NULL);

        t_lock_init(&f, fc, q);
        ASSERT_RC(zkl_lock_acquire(f.lk, 20000), ZKL_OK);
        ASSERT(t_run_until(&f.acquired, 25000));
        ASSERT_RC(zkl_lock_release(f.lk), ZKL_OK);
        ASSERT(t_run_until(&f.released, 10000));
        zkl_lock_free(f.lk);
        zkl_client_free(fc);
    }
    kept_through_failover(&h);
    ASSERT_EQ(w.acquired, 0);
    ASSERT_EQ(w.failed, 0);
    ASSERT_EQ(t_zk_count(p), 2);
    ASSERT_RC(zkl_lock_release(h.lk), ZKL_OK);
    ASSERT(t_run_until(&w.acquired, 15000));
    ASSERT(t_run_until(&h.released, 10000));
    ASSERT_RC(h.last_status, ZKL_OK);
    ASSERT_RC(zkl_lock_release(w.lk), ZKL_OK);
    ASSERT(t_run_until(&w.released, 10000));
    t_ens("start", victim);
    zkl_lock_free(h.lk);
    zkl_lock_free(w.lk);
    zkl_client_free(hc);
    zkl_client_free(wc);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
}

TEST(ensemble_kill_leader)
{
    failover_case(t_hosts(), 0);
}

TEST(ensemble_kill_connected_follower)
{
    /* The holder only knows the two followers, so it sits on one of
     * them; that one is killed and the session moves to the other. */
    int leader = t_ens_leader(10000), k;
    char hosts[256] = "";

    for (k = 1; k <= T_ENS_NODES; k++) {
        if (k == leader)
            continue;
        if (hosts[0] != '\0')
            strcat(hosts, ",");
        strcat(hosts, t_ens_host(k));
    }
    failover_case(hosts, 1);
}

/* A real partition of one holder: it knows only one follower, which is
 * killed, so nothing of its session reaches the ensemble; the leader
 * expires it and grants the lock to the waiter. The holder is told LOST
 * by its own clock first, and when the node is back its client opens a
 * new session. (No proxy: the TLS suite runs this too.) */
TEST(ensemble_cut_off_holder_told_lost_before_the_next_holds)
{
    int leader = t_ens_leader(10000), k = leader % T_ENS_NODES + 1;
    t_conn_t hconn;
    zkl_client_t *hc = t_client(t_ens_host(k), 2000, &hconn);
    zkl_client_t *wc = t_client(t_hosts(), SESSION_MS, NULL);
    const char *p = t_path(NULL);
    t_lock_t h, w;

    t_hold_and_queue(&h, hc, &w, wc, p);
    t_ens("kill", k);
    ASSERT(t_run_until(&h.suspended, 5000));
    ASSERT(t_run_until(&h.lost, 5000));
    ASSERT_RC(h.last_status, ZKL_ESESSION);
    ASSERT(t_run_until(&w.acquired, 20000));
    ASSERT(h.lost_ev < w.grant_ev);
    t_ens("start", k);
    ASSERT(WAIT_FOR(t_has_event(&hconn, ZKL_CONN_EXPIRED), 30000));
    /* The waiter's session lived through it all. */
    ASSERT_EQ(w.lost, 0);
    ASSERT_RC(zkl_lock_release(w.lk), ZKL_OK);
    ASSERT(t_run_until(&w.released, 10000));
    zkl_lock_free(h.lk);
    zkl_lock_free(w.lk);
    zkl_client_free(hc);
    zkl_client_free(wc);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
}

/* ---- rolling restart under load ---- */

struct roll {
    zkl_lock_t *lk;
    struct event *hold;
    int inside_me, stop, done, acquired;
};

static atomic_int roll_inside, roll_overlaps, roll_grants, roll_lost;

static void roll_release(evutil_socket_t fd, short what, void *arg)
{
    struct roll *r = arg;

    (void)fd;
    (void)what;
    atomic_fetch_sub(&roll_inside, 1);
    r->inside_me = 0;
    ASSERT_RC(zkl_lock_release(r->lk), ZKL_OK);
}

static void roll_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                    void *arg)
{
    struct roll *r = arg;
    struct timeval tv = {0, 2000};

    (void)status;
    switch (ev) {
    case ZKL_LOCK_ACQUIRED:
        if (atomic_fetch_add(&roll_inside, 1) != 0)
            atomic_fetch_add(&roll_overlaps, 1);
        atomic_fetch_add(&roll_grants, 1);
        r->inside_me = 1;
        evtimer_add(r->hold, &tv);
        break;
    case ZKL_LOCK_RELEASED:
    case ZKL_LOCK_FAILED:
        if (r->stop)
            r->done = 1;
        else
            ASSERT_RC(zkl_lock_acquire(lk, -1), ZKL_OK);
        break;
    case ZKL_LOCK_LOST:
        atomic_fetch_add(&roll_lost, 1);
        evtimer_del(r->hold); /* nothing to release: the end says LOST */
        if (r->inside_me) {
            atomic_fetch_sub(&roll_inside, 1);
            r->inside_me = 0;
        }
        break;
    default:
        break;
    }
}

static int rolls_done(void *arg)
{
    struct roll *r = arg;
    int i;

    for (i = 0; r[i].lk != NULL; i++)
        if (!r[i].done)
            return 0;
    return 1;
}

TEST(ensemble_rolling_restart)
{
    enum { C = 3, PER = 2 };
    zkl_client_t *c[C], *hc;
    struct roll r[C * PER + 1];
    const char *p = t_path("busy"), *q = t_path("held");
    t_lock_t h, w;
    int i, k, before;

    memset(r, 0, sizeof r);
    /* Sessions that outlast an election: three of them in a row, each
     * on a machine that CI loads (TLS, sanitizers), once took longer
     * than 0.9 of 8 s, and zklock told the holder LOST, as it must when
     * it cannot know that no quorum could expire its session. */
    for (i = 0; i < C; i++)
        c[i] = t_client(t_hosts(), ROLL_SESSION_MS, NULL);
    hc = t_client(t_hosts(), ROLL_SESSION_MS, NULL);
    t_lock_init(&h, hc, q);
    t_lock_init(&w, c[0], q);
    ASSERT_RC(zkl_lock_acquire(h.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&h.acquired, 5000));
    ASSERT_RC(zkl_lock_acquire(w.lk, -1), ZKL_OK);
    for (i = 0; i < C * PER; i++) {
        r[i].hold = evtimer_new(t_base, roll_release, &r[i]);
        ASSERT_RC(zkl_lock_new(&r[i].lk, c[i % C], p, roll_cb, &r[i]),
                  ZKL_OK);
        ASSERT_RC(zkl_lock_acquire(r[i].lk, -1), ZKL_OK);
    }
    ASSERT(WAIT_FOR(atomic_load(&roll_grants) > 20, 10000));
    for (k = 1; k <= T_ENS_NODES; k++) {
        /* Each node in turn: down, grants go on, back up, rejoined. */
        t_ens("stop", k);
        before = atomic_load(&roll_grants);
        ASSERT(WAIT_FOR(atomic_load(&roll_grants) > before + 10, 30000));
        t_ens("start", k);
        before = atomic_load(&roll_grants);
        ASSERT(WAIT_FOR(atomic_load(&roll_grants) > before + 10, 30000));
    }
    for (i = 0; i < C * PER; i++)
        r[i].stop = 1;
    ASSERT(t_run_cond(rolls_done, r, 30000));
    ASSERT_EQ(atomic_load(&roll_overlaps), 0);
    ASSERT_EQ(atomic_load(&roll_lost), 0);
    /* The long holder kept its lock through all three restarts, and its
     * waiter waited. */
    kept_through_failover(&h);
    ASSERT_EQ(w.acquired, 0);
    ASSERT_RC(zkl_lock_release(h.lk), ZKL_OK);
    ASSERT(t_run_until(&w.acquired, 15000));
    ASSERT_RC(zkl_lock_release(w.lk), ZKL_OK);
    ASSERT(t_run_until(&w.released, 10000));
    for (i = 0; i < C * PER; i++) {
        zkl_lock_free(r[i].lk);
        event_free(r[i].hold);
    }
    zkl_lock_free(h.lk);
    zkl_lock_free(w.lk);
    for (i = 0; i < C; i++)
        zkl_client_free(c[i]);
    zkl_client_free(hc);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    ASSERT_EQ(t_zk_wait_count(q, 0, 5000), 0);
}
