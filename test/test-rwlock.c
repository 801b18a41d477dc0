/* Read/write locks (Curator's InterProcessReadWriteLock layout), lock
 * node data and revocation, each contender in its own session unless a
 * test says otherwise. Curator interop is in test-curator.sh. */
#include <zookeeper/zookeeper.h>

#include "faultproxy.h"
#include "harness.h"

static void acquire(t_lock_t *t)
{
    ASSERT_RC(zkl_lock_acquire(t->lk, -1), ZKL_OK);
}

static void release(t_lock_t *t)
{
    int before = t->released;

    ASSERT_RC(zkl_lock_release(t->lk), ZKL_OK);
    ASSERT(WAIT_FOR(t->released > before, 5000));
    ASSERT_RC(t->last_status, ZKL_OK);
}

/* The ten digits after a node name's tag. */
static const char *seq_of(const char *name)
{
    return name + strlen(name) - 10;
}

TEST(rw_readers_share_writer_waits)
{
    zkl_client_t *c[4];
    const char *p = t_path(NULL);
    t_lock_t r1, r2, w, r3;
    int i;

    for (i = 0; i < 4; i++)
        c[i] = t_client(t_hosts(), 10000, NULL);
    t_lock_init_kind(&r1, c[0], p, ZKL_KIND_READ);
    t_lock_init_kind(&r2, c[1], p, ZKL_KIND_READ);
    t_lock_init_kind(&w, c[2], p, ZKL_KIND_WRITE);
    t_lock_init_kind(&r3, c[3], p, ZKL_KIND_READ);
    ASSERT_EQ(zkl_lock_kind(r1.lk), ZKL_KIND_READ);
    ASSERT_EQ(zkl_lock_kind(w.lk), ZKL_KIND_WRITE);
    acquire(&r1);
    acquire(&r2);
    ASSERT(WAIT_FOR(r1.acquired && r2.acquired, 5000));
    /* A writer waits for the readers; a reader behind it waits too. */
    acquire(&w);
    ASSERT_EQ(t_zk_wait_count(p, 3, 5000), 3);
    acquire(&r3);
    ASSERT_EQ(t_zk_wait_count(p, 4, 5000), 4);
    ASSERT(WAIT_FOR(zkl_lock_state(r3.lk) == ZKL_STATE_QUEUED, 5000));
    t_run_for(300);
    ASSERT_EQ(w.n, 0);
    ASSERT_EQ(r3.n, 0);
    release(&r1);
    t_run_for(300);
    ASSERT_EQ(w.n, 0);
    release(&r2);
    ASSERT(t_run_until(&w.acquired, 5000));
    t_run_for(300);
    ASSERT_EQ(r3.n, 0);
    release(&w);
    ASSERT(t_run_until(&r3.acquired, 5000));
    release(&r3);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    zkl_lock_free(r1.lk);
    zkl_lock_free(r2.lk);
    zkl_lock_free(w.lk);
    zkl_lock_free(r3.lk);
    for (i = 0; i < 4; i++)
        zkl_client_free(c[i]);
}

TEST(rw_writer_release_wakes_only_readers_that_hold)
{
    /* W1 holds; R2 R3 wait; W4 waits; R5 R6 wait. W1's release wakes R2
     * and R3 (they hold together) and nobody else. */
    static const zkl_lock_kind_t kind[6] = {
        ZKL_KIND_WRITE, ZKL_KIND_READ, ZKL_KIND_READ,
        ZKL_KIND_WRITE, ZKL_KIND_READ, ZKL_KIND_READ};
    zkl_client_t *c[6];
    t_lock_t l[6];
    const char *p = t_path(NULL);
    long ev[6];
    int i;

    for (i = 0; i < 6; i++) {
        c[i] = t_client(t_hosts(), 10000, NULL);
        t_lock_init_kind(&l[i], c[i], p, kind[i]);
        acquire(&l[i]);
        ASSERT_EQ(t_zk_wait_count(p, i + 1, 5000), i + 1);
        if (i == 0)
            ASSERT(t_run_until(&l[0].acquired, 5000));
    }
    for (i = 1; i < 6; i++)
        ASSERT(WAIT_FOR(zkl_lock_state(l[i].lk) == ZKL_STATE_QUEUED, 5000));
    t_run_for(200);
    for (i = 0; i < 6; i++)
        ev[i] = (long)t_stats(c[i]).watch_events;
    release(&l[0]);
    ASSERT(WAIT_FOR(l[1].acquired && l[2].acquired, 5000));
    t_run_for(300);
    for (i = 3; i < 6; i++) {
        ASSERT_EQ(l[i].n, 0);
        ASSERT_EQ((long)t_stats(c[i]).watch_events, ev[i]);
    }
    release(&l[1]);
    t_run_for(300);
    ASSERT_EQ(l[3].n, 0);
    release(&l[2]);
    ASSERT(t_run_until(&l[3].acquired, 5000));
    ASSERT_EQ((long)t_stats(c[4]).watch_events, ev[4]);
    ASSERT_EQ((long)t_stats(c[5]).watch_events, ev[5]);
    release(&l[3]);
    ASSERT(WAIT_FOR(l[4].acquired && l[5].acquired, 5000));
    release(&l[4]);
    release(&l[5]);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    for (i = 0; i < 6; i++) {
        ASSERT_EQ(l[i].n, 2);
        zkl_lock_free(l[i].lk);
        zkl_client_free(c[i]);
    }
}

/* Both sides of a zkl_rwlock_new() pair report into one array. */
static void pair_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                    void *arg)
{
    t_lock_t *two = arg;

    t_lock_cb(lk, ev, status, &two[zkl_lock_kind(lk) == ZKL_KIND_WRITE]);
}

static void pair_init(t_lock_t two[2], zkl_client_t *c, const char *p)
{
    memset(two, 0, 2 * sizeof *two);
    ASSERT_RC(zkl_rwlock_new(&two[0].lk, &two[1].lk, c, p, pair_cb, two),
              ZKL_OK);
    ASSERT_EQ(zkl_lock_kind(two[0].lk), ZKL_KIND_READ);
    ASSERT_EQ(zkl_lock_kind(two[1].lk), ZKL_KIND_WRITE);
}

TEST(rw_downgrade_keeps_place_upgrade_refused)
{
    zkl_client_t *a = t_client(t_hosts(), 10000, NULL),
                 *b = t_client(t_hosts(), 10000, NULL),
                 *cc = t_client(t_hosts(), 10000, NULL);
    const char *p = t_path(NULL);
    static t_lock_t two[2];
    t_lock_t w2, r3;
    char wname[ZKL_NODE_NAME_SIZE], rname[ZKL_NODE_NAME_SIZE];

    pair_init(two, a, p);
    acquire(&two[1]);
    ASSERT(t_run_until(&two[1].acquired, 5000));
    ASSERT_RC(zkl_lock_node_name(two[1].lk, wname, sizeof wname), ZKL_OK);
    /* A writer and then a reader queue behind the write hold. */
    t_lock_init_kind(&w2, b, p, ZKL_KIND_WRITE);
    acquire(&w2);
    ASSERT_EQ(t_zk_wait_count(p, 2, 5000), 2);
    t_lock_init_kind(&r3, cc, p, ZKL_KIND_READ);
    acquire(&r3);
    ASSERT_EQ(t_zk_wait_count(p, 3, 5000), 3);
    /* Downgrade: the read side holds at once, in the writer's place. */
    acquire(&two[0]);
    ASSERT(t_run_until(&two[0].acquired, 5000));
    ASSERT_RC(zkl_lock_node_name(two[0].lk, rname, sizeof rname), ZKL_OK);
    ASSERT_RC(zkl_lock_node_name(two[0].lk, rname, 57), ZKL_EINVAL);
    ASSERT(strstr(rname, "-__READ__") != NULL);
    ASSERT_STR(seq_of(rname), seq_of(wname));
    release(&two[1]);
    t_run_for(300);
    ASSERT_EQ(w2.n, 0); /* the read node keeps the writer's place */
    ASSERT_EQ(r3.n, 0); /* and the reader behind W2 still waits */
    /* Upgrade is refused, with the read side held or pending. */
    ASSERT_RC(zkl_lock_acquire(two[1].lk, -1), ZKL_EUPGRADE);
    release(&two[0]);
    ASSERT(t_run_until(&w2.acquired, 5000));
    ASSERT_EQ(r3.n, 0);
    acquire(&two[0]); /* a plain reader now, behind R3 */
    ASSERT_RC(zkl_lock_acquire(two[1].lk, 0), ZKL_EUPGRADE);
    release(&w2);
    ASSERT(WAIT_FOR(r3.acquired && two[0].acquired == 2, 5000));
    release(&r3);
    release(&two[0]);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    ASSERT_EQ(two[1].n, 2);
    zkl_lock_free(two[1].lk); /* either side first */
    zkl_lock_free(two[0].lk);
    zkl_lock_free(w2.lk);
    zkl_lock_free(r3.lk);
    zkl_client_free(a);
    zkl_client_free(b);
    zkl_client_free(cc);
}

TEST(rw_downgrade_dies_with_write_release)
{
    /* The write side lets go before the downgrade's node is confirmed:
     * the downgrade fails and its node (created or not) goes. */
    zkl_client_t *a = t_client(t_hosts(), 10000, NULL);
    const char *p = t_path(NULL);
    static t_lock_t two[2];

    pair_init(two, a, p);
    acquire(&two[1]);
    ASSERT(t_run_until(&two[1].acquired, 5000));
    acquire(&two[0]);
    ASSERT_RC(zkl_lock_release(two[1].lk), ZKL_OK);
    ASSERT(WAIT_FOR(two[0].failed == 1 && two[1].released == 1, 5000));
    ASSERT_RC(two[0].last_status, ZKL_ECANCELED);
    ASSERT_EQ(two[0].acquired, 0);
    ASSERT(WAIT_FOR(zkl_client_pending(a) == 0, 5000));
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    /* Freeing the write side while a downgrade is pending: the same. */
    acquire(&two[1]);
    ASSERT(WAIT_FOR(two[1].acquired == 2, 5000));
    acquire(&two[0]);
    zkl_lock_free(two[1].lk);
    ASSERT(WAIT_FOR(two[0].failed == 2, 5000));
    ASSERT(WAIT_FOR(zkl_client_pending(a) == 0, 5000));
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    zkl_lock_free(two[0].lk);
    zkl_client_free(a);
}

static void delete_path(void *arg)
{
    (void)t_zk_delete(arg);
}

/* The downgrade's transaction is applied but its answer is lost, and the
 * write node is deleted before the retry: the retry's check fails, and
 * the read node the first try made must not stay (it would block every
 * writer until the session ends). */
static void downgrade_lost_reply(int watch_first)
{
    fp_t *fp = fp_new(t_base, t_port());
    zkl_client_t *a, *b = t_client(t_hosts(), 10000, NULL);
    const char *p = t_path(NULL);
    static t_lock_t two[2];
    static char full[512];
    char wname[ZKL_NODE_NAME_SIZE];
    t_lock_t w2;

    ASSERT(fp != NULL);
    a = t_client(fp_hosts(fp), 10000, NULL);
    pair_init(two, a, p);
    acquire(&two[1]);
    ASSERT(t_run_until(&two[1].acquired, 5000));
    ASSERT_RC(zkl_lock_node_name(two[1].lk, wname, sizeof wname), ZKL_OK);
    snprintf(full, sizeof full, "%s/%s", p, wname);
    /* The hold's own-node watch armed at the server: its deletion
     * notice then comes before the retry's answer, and the hold ends
     * (and lets the downgrade go) first. */
    if (watch_first)
        t_run_for(300);
    fp_on_reset(fp, delete_path, full);
    fp_arm(fp, 14 /* multi */, FP_LOSE, 50);
    acquire(&two[0]);
    ASSERT(WAIT_FOR(two[0].n > 0 && two[1].lost > 0, 10000));
    ASSERT_EQ(fp_fired(fp), 1);
    ASSERT_EQ(two[0].acquired, 0);
    ASSERT_EQ(two[0].failed, 1);
    ASSERT(WAIT_FOR(zkl_client_pending(a) == 0, 10000));
    ASSERT_EQ(t_zk_count(p), 0);
    /* A writer of another session takes the lock. */
    t_lock_init_kind(&w2, b, p, ZKL_KIND_WRITE);
    acquire(&w2);
    ASSERT(t_run_until(&w2.acquired, 5000));
    release(&w2);
    zkl_lock_free(two[0].lk);
    zkl_lock_free(two[1].lk);
    zkl_lock_free(w2.lk);
    zkl_client_free(a);
    zkl_client_free(b);
    fp_free(fp);
}

TEST(rw_downgrade_lost_reply_leaves_no_read_node)
{
    downgrade_lost_reply(0);
}

TEST(rw_downgrade_lost_reply_hold_ends_first_leaves_no_read_node)
{
    downgrade_lost_reply(1);
}

TEST(rw_downgrade_refused_once_the_write_node_is_gone)
{
    /* The write node is deleted by someone else and another writer
     * takes the lock, while the news is still on its way to the holder
     * (its replies come 1 s late): a downgrade started now must not
     * hold beside that writer. */
    fp_t *fp = fp_new(t_base, t_port());
    zkl_client_t *a, *b = t_client(t_hosts(), 10000, NULL);
    const char *p = t_path(NULL);
    static t_lock_t two[2];
    char wname[ZKL_NODE_NAME_SIZE], full[512];
    t_lock_t w2;

    ASSERT(fp != NULL);
    a = t_client(fp_hosts(fp), 10000, NULL);
    pair_init(two, a, p);
    acquire(&two[1]);
    ASSERT(t_run_until(&two[1].acquired, 5000));
    t_lock_init_kind(&w2, b, p, ZKL_KIND_WRITE);
    acquire(&w2);
    ASSERT_EQ(t_zk_wait_count(p, 2, 5000), 2);
    t_run_for(300);
    fp_latency_down(fp, 1000);
    ASSERT_RC(zkl_lock_node_name(two[1].lk, wname, sizeof wname), ZKL_OK);
    snprintf(full, sizeof full, "%s/%s", p, wname);
    ASSERT_EQ(t_zk_delete(full), ZOK);
    ASSERT(t_run_until(&w2.acquired, 5000));
    ASSERT(zkl_lock_is_held(two[1].lk)); /* not told yet */
    acquire(&two[0]);
    ASSERT(WAIT_FOR(two[0].n > 0 && two[1].lost > 0, 10000));
    ASSERT_EQ(two[0].acquired, 0);
    ASSERT_EQ(two[0].failed, 1);
    ASSERT(two[0].last_status == ZKL_ENODEGONE ||
           two[0].last_status == ZKL_ECANCELED);
    ASSERT_RC(two[1].last_status, ZKL_ENODEGONE);
    fp_latency_down(fp, 0);
    ASSERT(WAIT_FOR(zkl_client_pending(a) == 0, 10000));
    ASSERT_EQ(t_zk_count(p), 1); /* W2's node only */
    release(&w2);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    zkl_lock_free(two[0].lk);
    zkl_lock_free(two[1].lk);
    zkl_lock_free(w2.lk);
    zkl_client_free(a);
    zkl_client_free(b);
    fp_free(fp);
}

TEST(rw_other_kind_on_path_refused)
{
    zkl_client_t *a = t_client(t_hosts(), 10000, NULL),
                 *b = t_client(t_hosts(), 10000, NULL);
    const char *p = t_path("m"), *q = t_path("w"), *s = t_path("s");
    char child[512];
    t_lock_t m, r, w, m2;

    /* A mutex holds: neither side of a read/write lock may join. */
    t_lock_init(&m, a, p);
    acquire(&m);
    ASSERT(t_run_until(&m.acquired, 5000));
    t_lock_init_kind(&r, b, p, ZKL_KIND_READ);
    acquire(&r);
    ASSERT(t_run_until(&r.failed, 5000));
    ASSERT_RC(r.last_status, ZKL_EKIND);
    t_lock_init_kind(&w, b, p, ZKL_KIND_WRITE);
    acquire(&w);
    ASSERT(t_run_until(&w.failed, 5000));
    ASSERT_RC(w.last_status, ZKL_EKIND);
    ASSERT(WAIT_FOR(zkl_client_pending(b) == 0, 5000));
    ASSERT_EQ(t_zk_count(p), 1);
    /* A writer holds: a mutex may not join. */
    zkl_lock_free(w.lk);
    t_lock_init_kind(&w, a, q, ZKL_KIND_WRITE);
    acquire(&w);
    ASSERT(t_run_until(&w.acquired, 5000));
    t_lock_init(&m2, b, q);
    acquire(&m2);
    ASSERT(t_run_until(&m2.failed, 5000));
    ASSERT_RC(m2.last_status, ZKL_EKIND);
    ASSERT(WAIT_FOR(zkl_client_pending(b) == 0, 5000));
    ASSERT_EQ(t_zk_count(q), 1);
    /* A semaphore's path (its locks/ and leases/ children). */
    ASSERT_EQ(t_zk_create_as(NULL, s, 0), ZOK);
    snprintf(child, sizeof child, "%s/leases", s);
    ASSERT_EQ(t_zk_create_as(NULL, child, 0), ZOK);
    zkl_lock_free(m2.lk);
    t_lock_init(&m2, b, s);
    acquire(&m2);
    ASSERT(t_run_until(&m2.failed, 5000));
    ASSERT_RC(m2.last_status, ZKL_EKIND);
    ASSERT(WAIT_FOR(zkl_client_pending(b) == 0, 5000));
    ASSERT_EQ(t_zk_count(s), 1);
    ASSERT_EQ(t_zk_delete(child), ZOK);
    ASSERT_EQ(t_zk_delete(s), ZOK);
    release(&m);
    release(&w);
    zkl_lock_free(m.lk);
    zkl_lock_free(m2.lk);
    zkl_lock_free(r.lk);
    zkl_lock_free(w.lk);
    zkl_client_free(a);
    zkl_client_free(b);
}

static struct {
    int done, status;
    size_t n;
} rv;

static void revoke_cb(zkl_client_t *c, int status, size_t n, void *arg)
{
    (void)c;
    (void)arg;
    rv.status = status;
    rv.n = n;
    rv.done = 1;
}

/* zkl_revoke() and its answer: how many nodes were asked. */
static size_t revoke(zkl_client_t *c, const char *p, const char *node)
{
    memset(&rv, 0, sizeof rv);
    ASSERT_RC(zkl_revoke(c, p, node, revoke_cb, NULL), ZKL_OK);
    ASSERT(t_run_until(&rv.done, 5000));
    ASSERT_RC(rv.status, ZKL_OK);
    return rv.n;
}

TEST(revoke_reaches_revocable_holders_only)
{
    zkl_client_t *a = t_client(t_hosts(), 10000, NULL),
                 *b = t_client(t_hosts(), 10000, NULL);
    const char *p = t_path("m"), *q = t_path("rw");
    char name[ZKL_NODE_NAME_SIZE], full[512], data[64];
    t_lock_t h, w, r1, r2, wq;

    t_lock_init(&h, a, p);
    ASSERT_RC(zkl_lock_set_revocable(h.lk, 1), ZKL_OK);
    acquire(&h);
    ASSERT(t_run_until(&h.acquired, 5000));
    t_lock_init(&w, b, p);
    acquire(&w);
    ASSERT_EQ(t_zk_wait_count(p, 2, 5000), 2);
    t_run_for(200);
    /* The holder is asked, not the waiter; asked once per hold. */
    ASSERT_EQ(revoke(b, p, NULL), 1);
    ASSERT(t_run_until(&h.revoked, 5000));
    ASSERT(zkl_lock_is_held(h.lk));
    ASSERT_RC(zkl_lock_node_name(h.lk, name, sizeof name), ZKL_OK);
    snprintf(full, sizeof full, "%s/%s", p, name);
    ASSERT_EQ(t_zk_data(full, data, sizeof data), 10);
    ASSERT(memcmp(data, "__REVOKE__", 10) == 0);
    ASSERT_EQ(revoke(b, p, NULL), 1);
    t_run_for(300);
    ASSERT_EQ(h.revoked, 1);
    ASSERT_EQ(w.n, 0);
    /* A holder that is not revocable never hears of it. */
    release(&h);
    ASSERT(t_run_until(&w.acquired, 5000));
    ASSERT_EQ(revoke(a, p, NULL), 1);
    t_run_for(300);
    ASSERT_EQ(w.revoked, 0);
    ASSERT(zkl_lock_is_held(w.lk));
    /* One node by name; a node that is gone is skipped. */
    ASSERT_RC(zkl_lock_node_name(w.lk, name, sizeof name), ZKL_OK);
    ASSERT_EQ(revoke(a, p, name), 1);
    ASSERT_EQ(revoke(a, p, "_c_00000000-0000-4000-8000-000000000000-lock-"
                           "0000000001"),
              0);
    release(&w);
    ASSERT_EQ(revoke(a, p, NULL), 0);
    /* A read/write lock: every reader that holds; not a queued writer. */
    t_lock_init_kind(&r1, a, q, ZKL_KIND_READ);
    t_lock_init_kind(&r2, b, q, ZKL_KIND_READ);
    t_lock_init_kind(&wq, b, q, ZKL_KIND_WRITE);
    ASSERT_RC(zkl_lock_set_revocable(r1.lk, 1), ZKL_OK);
    ASSERT_RC(zkl_lock_set_revocable(r2.lk, 1), ZKL_OK);
    ASSERT_RC(zkl_lock_set_revocable(wq.lk, 1), ZKL_OK);
    acquire(&r1);
    acquire(&r2);
    ASSERT(WAIT_FOR(r1.acquired && r2.acquired, 5000));
    acquire(&wq);
    ASSERT_EQ(t_zk_wait_count(q, 3, 5000), 3);
    ASSERT_EQ(revoke(a, q, NULL), 2);
    ASSERT(WAIT_FOR(r1.revoked && r2.revoked, 5000));
    ASSERT_EQ(wq.n, 0);
    release(&r1);
    release(&r2);
    ASSERT(t_run_until(&wq.acquired, 5000));
    release(&wq);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    ASSERT_EQ(t_zk_wait_count(q, 0, 5000), 0);
    zkl_lock_free(h.lk);
    zkl_lock_free(w.lk);
    zkl_lock_free(r1.lk);
    zkl_lock_free(r2.lk);
    zkl_lock_free(wq.lk);
    zkl_client_free(a);
    zkl_client_free(b);
}

static struct {
    int done, status;
    size_t n;
    zkl_lock_kind_t kind[4];
    int holds[4];
    char data[4][64];
    long len[4];
} cx;

static void ex_cb(zkl_client_t *c, int status, const zkl_contender_t *v,
                  size_t n, void *arg)
{
    size_t i;

    (void)c;
    (void)arg;
    cx.status = status;
    cx.n = n;
    for (i = 0; i < n && i < 4; i++) {
        cx.kind[i] = v[i].kind;
        cx.holds[i] = v[i].holds;
        cx.len[i] = v[i].data != NULL ? (long)v[i].len : -1;
        if (v[i].data != NULL)
            snprintf(cx.data[i], sizeof cx.data[i], "%s", v[i].data);
    }
    cx.done = 1;
}

TEST(node_data_owner_default_and_listing)
{
    zkl_client_t *a = t_client(t_hosts(), 10000, NULL);
    const char *p = t_path(NULL);
    char name[ZKL_NODE_NAME_SIZE], full[512], data[64];
    t_lock_t r1, r2, w;
    int len;

    t_lock_init_kind(&r1, a, p, ZKL_KIND_READ);
    t_lock_init_kind(&r2, a, p, ZKL_KIND_READ);
    t_lock_init_kind(&w, a, p, ZKL_KIND_WRITE);
    ASSERT_RC(zkl_lock_set_data(r1.lk, "host-a:42", 9), ZKL_OK);
    ASSERT_RC(zkl_lock_set_revocable(w.lk, 1), ZKL_OK);
    acquire(&r1);
    acquire(&r2);
    ASSERT(WAIT_FOR(r1.acquired && r2.acquired, 5000));
    acquire(&w);
    ASSERT_EQ(t_zk_wait_count(p, 3, 5000), 3);
    ASSERT(WAIT_FOR(zkl_lock_state(w.lk) == ZKL_STATE_QUEUED, 5000));
    /* What the server holds, read by the observer. */
    ASSERT_RC(zkl_lock_node_name(r1.lk, name, sizeof name), ZKL_OK);
    snprintf(full, sizeof full, "%s/%s", p, name);
    ASSERT_EQ(t_zk_data(full, data, sizeof data), 9);
    ASSERT(memcmp(data, "host-a:42", 9) == 0);
    ASSERT_RC(zkl_lock_node_name(r2.lk, name, sizeof name), ZKL_OK);
    snprintf(full, sizeof full, "%s/%s", p, name);
    len = t_zk_data(full, data, sizeof data - 1);
    ASSERT_EQ(len, 9); /* Curator's default: the local address */
    data[len] = '\0';
    ASSERT_STR(data, "127.0.0.1");
    ASSERT_RC(zkl_lock_node_name(w.lk, name, sizeof name), ZKL_OK);
    snprintf(full, sizeof full, "%s/%s", p, name);
    ASSERT_EQ(t_zk_data(full, data, sizeof data), 0); /* revocable */
    /* The extended listing agrees, in queue order. */
    memset(&cx, 0, sizeof cx);
    ASSERT_RC(zkl_contenders_ex(a, p, ex_cb, NULL), ZKL_OK);
    ASSERT(t_run_until(&cx.done, 5000));
    ASSERT_RC(cx.status, ZKL_OK);
    ASSERT_EQ(cx.n, 3);
    ASSERT_EQ(cx.kind[0], ZKL_KIND_READ);
    ASSERT_EQ(cx.kind[1], ZKL_KIND_READ);
    ASSERT_EQ(cx.kind[2], ZKL_KIND_WRITE);
    ASSERT(cx.holds[0] && cx.holds[1] && !cx.holds[2]);
    ASSERT_STR(cx.data[0], "host-a:42");
    ASSERT_STR(cx.data[1], "127.0.0.1");
    ASSERT_EQ(cx.len[2], 0);
    /* Data changes with the next acquire. */
    release(&r1);
    ASSERT_RC(zkl_lock_set_data(r1.lk, NULL, 0), ZKL_OK);
    release(&r2);
    ASSERT(t_run_until(&w.acquired, 5000));
    release(&w);
    acquire(&r1);
    ASSERT(WAIT_FOR(r1.acquired == 2, 5000));
    ASSERT_RC(zkl_lock_node_name(r1.lk, name, sizeof name), ZKL_OK);
    snprintf(full, sizeof full, "%s/%s", p, name);
    ASSERT_EQ(t_zk_data(full, data, sizeof data), 9);
    ASSERT(memcmp(data, "127.0.0.1", 9) == 0);
    release(&r1);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    zkl_lock_free(r1.lk);
    zkl_lock_free(r2.lk);
    zkl_lock_free(w.lk);
    zkl_client_free(a);
}

static void never_ex(zkl_client_t *c, int status, const zkl_contender_t *v,
                     size_t n, void *arg)
{
    (void)c, (void)status, (void)v, (void)n, (void)arg;
    FAILF("callback of a refused call");
}

static void never_revoke(zkl_client_t *c, int status, size_t n, void *arg)
{
    (void)c, (void)status, (void)n, (void)arg;
    FAILF("callback of a refused call");
}

TEST(bad_args_rwlock_data_revoke)
{
    zkl_client_t *c = t_client(t_hosts(), 10000, NULL);
    const char *p = t_path(NULL);
    zkl_lock_t *r = (zkl_lock_t *)1, *w = (zkl_lock_t *)1, *lk;
    static char big[1000001];
    char small[8];

    ASSERT_RC(zkl_lock_new_kind(&lk, c, p, ZKL_KIND_LEASE, t_lock_cb, NULL),
              ZKL_EINVAL);
    ASSERT(lk == NULL);
    ASSERT_RC(zkl_lock_new_kind(&lk, c, p, (zkl_lock_kind_t)99, t_lock_cb,
                                NULL),
              ZKL_EINVAL);
    ASSERT_RC(zkl_lock_new_kind(&lk, c, "no/slash", ZKL_KIND_READ,
                                t_lock_cb, NULL),
              ZKL_EBADPATH);
    /* A failed constructor leaves NULL in each out pointer it was given,
     * also when the other one is NULL. */
    w = r = (zkl_lock_t *)1;
    ASSERT_RC(zkl_rwlock_new(NULL, &w, c, p, t_lock_cb, NULL), ZKL_EINVAL);
    ASSERT(w == NULL);
    ASSERT_RC(zkl_rwlock_new(&r, NULL, c, p, t_lock_cb, NULL), ZKL_EINVAL);
    ASSERT(r == NULL);
    ASSERT_RC(zkl_rwlock_new(&r, &w, NULL, p, t_lock_cb, NULL), ZKL_EINVAL);
    ASSERT(r == NULL && w == NULL);
    ASSERT_RC(zkl_rwlock_new(&r, &w, c, "/a//b", t_lock_cb, NULL),
              ZKL_EBADPATH);
    ASSERT_RC(zkl_rwlock_new(&r, &w, c, p, NULL, NULL), ZKL_EINVAL);
    ASSERT(r == NULL && w == NULL);
    /* One pointer for both sides: refused, not the read side leaked. */
    r = (zkl_lock_t *)1;
    ASSERT_RC(zkl_rwlock_new(&r, &r, c, p, t_lock_cb, NULL), ZKL_EINVAL);
    ASSERT(r == NULL);
    ASSERT_EQ(zkl_lock_kind(NULL), ZKL_KIND_MUTEX);

    ASSERT_RC(zkl_lock_new_kind(&lk, c, p, ZKL_KIND_WRITE, t_lock_cb, NULL),
              ZKL_OK);
    ASSERT_RC(zkl_lock_set_data(NULL, "x", 1), ZKL_EINVAL);
    ASSERT_RC(zkl_lock_set_data(lk, NULL, 3), ZKL_EINVAL);
    ASSERT_RC(zkl_lock_set_data(lk, big, sizeof big), ZKL_EINVAL);
    ASSERT_RC(zkl_lock_set_data(lk, "", 0), ZKL_OK);
    ASSERT_RC(zkl_lock_set_data(lk, NULL, 0), ZKL_OK);
    ASSERT_RC(zkl_lock_set_revocable(NULL, 1), ZKL_EINVAL);
    ASSERT_RC(zkl_lock_node_name(lk, small, sizeof small), ZKL_EINVAL);

    ASSERT_RC(zkl_revoke(NULL, p, NULL, never_revoke, NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_revoke(c, NULL, NULL, never_revoke, NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_revoke(c, p, NULL, NULL, NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_revoke(c, p, "a/b", never_revoke, NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_revoke(c, p, "", never_revoke, NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_revoke(c, p, "..", never_revoke, NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_revoke(c, "relative", NULL, never_revoke, NULL),
              ZKL_EBADPATH);
    ASSERT_RC(zkl_revoke(c, "/", NULL, never_revoke, NULL), ZKL_EBADPATH);
    ASSERT_RC(zkl_contenders_ex(NULL, p, never_ex, NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_contenders_ex(c, p, NULL, NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_contenders_ex(c, "/x/", never_ex, NULL), ZKL_EBADPATH);
    t_run_for(100);
    ASSERT_EQ(zkl_client_pending(c), 0);
    ASSERT_EQ(t_zk_count(p), 0);
    zkl_lock_free(lk);
    zkl_client_free(c);
}
