/* Guarded writes: applied only while the lock's node exists, in one
 * transaction; refused, with nothing written, once it is gone, even
 * before the holder has been told. */
#include "faultproxy.h"
#include "harness.h"

typedef struct t_write {
    int done, status;
    size_t n;
    int op_status[8];
    char made[8][256];
} t_write_t;

static void t_write_cb(zkl_client_t *c, int status,
                       const zkl_op_result_t *res, size_t n, void *arg)
{
    t_write_t *w = arg;
    size_t i;

    (void)c;
    ASSERT(!w->done);
    w->done = 1;
    w->status = status;
    w->n = n;
    ASSERT((res != NULL) == (status == ZKL_OK || status == ZKL_EWRITE));
    for (i = 0; res != NULL && i < n && i < 8; i++) {
        w->op_status[i] = res[i].status;
        snprintf(w->made[i], sizeof w->made[i], "%s",
                 res[i].path != NULL ? res[i].path : "");
    }
}

static zkl_op_t op(zkl_op_type_t type, const char *path, const char *data,
                   int flags, int version)
{
    zkl_op_t o;

    memset(&o, 0, sizeof o);
    o.type = type;
    o.path = path;
    o.data = data;
    o.len = data != NULL ? strlen(data) : 0;
    o.flags = flags;
    o.version = version;
    return o;
}

/* A path for the guarded data, beside (not under) the lock path. */
static const char *data_path(const char *sfx)
{
    static char buf[4][512];
    static int k;
    char *b = buf[k++ % 4];

    snprintf(b, 512, "%s", t_path(sfx));
    return b;
}

TEST(guarded_write_while_held)
{
    t_conn_t conn;
    zkl_client_t *c = t_client(t_hosts(), 4000, &conn);
    const char *p = t_path(NULL);
    const char *d = data_path("data");
    char seqdir[600], buf[64];
    static t_lock_t a;
    static t_write_t w1, w2, w3, w4;
    zkl_op_t ops[3];

    snprintf(seqdir, sizeof seqdir, "%s/item-", d);
    t_lock_init(&a, c, p);
    ops[0] = op(ZKL_OP_CREATE, d, "v1", 0, 0);
    /* Not held: refused at the call. */
    ASSERT_RC(zkl_lock_write(a.lk, ops, 1, t_write_cb, &w1), ZKL_ENOTHELD);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT_RC(zkl_lock_write(a.lk, ops, 1, t_write_cb, &w1), ZKL_ENOTHELD);
    ASSERT(t_run_until(&a.acquired, 5000));
    /* Bad arguments. */
    ASSERT_RC(zkl_lock_write(NULL, ops, 1, t_write_cb, &w1), ZKL_EINVAL);
    ASSERT_RC(zkl_lock_write(a.lk, NULL, 1, t_write_cb, &w1), ZKL_EINVAL);
    ASSERT_RC(zkl_lock_write(a.lk, ops, 0, t_write_cb, &w1), ZKL_EINVAL);
    ASSERT_RC(zkl_lock_write(a.lk, ops, ZKL_WRITE_OPS_MAX + 1, t_write_cb,
                             &w1),
              ZKL_EINVAL);
    ASSERT_RC(zkl_lock_write(a.lk, ops, 1, NULL, &w1), ZKL_EINVAL);
    ops[1] = op(ZKL_OP_SET, "relative", "x", 0, -1);
    ASSERT_RC(zkl_lock_write(a.lk, ops, 2, t_write_cb, &w1), ZKL_EBADPATH);
    ops[1] = op((zkl_op_type_t)9, d, "x", 0, -1);
    ASSERT_RC(zkl_lock_write(a.lk, ops, 2, t_write_cb, &w1), ZKL_EINVAL);
    ops[1] = op(ZKL_OP_CREATE, d, "x", 64, -1);
    ASSERT_RC(zkl_lock_write(a.lk, ops, 2, t_write_cb, &w1), ZKL_EINVAL);
    ops[1] = op(ZKL_OP_SET, d, NULL, 0, -1);
    ops[1].len = 3;
    ASSERT_RC(zkl_lock_write(a.lk, ops, 2, t_write_cb, &w1), ZKL_EINVAL);
    /* Create, then a sequential child and a set in one batch. */
    ASSERT_RC(zkl_lock_write(a.lk, ops, 1, t_write_cb, &w1), ZKL_OK);
    ASSERT_EQ(w1.done, 0); /* never inside the call */
    ASSERT(t_run_until(&w1.done, 5000));
    ASSERT_RC(w1.status, ZKL_OK);
    ASSERT_STR(w1.made[0], d);
    ASSERT_EQ(t_zk_data(d, buf, sizeof buf), 2);
    ops[0] = op(ZKL_OP_CREATE, seqdir, "i", ZKL_CREATE_SEQUENTIAL, 0);
    ops[1] = op(ZKL_OP_SET, d, "v2", 0, 0);
    ops[2] = op(ZKL_OP_CHECK, d, NULL, 0, 1);
    ASSERT_RC(zkl_lock_write(a.lk, ops, 3, t_write_cb, &w2), ZKL_OK);
    ASSERT(t_run_until(&w2.done, 5000));
    ASSERT_RC(w2.status, ZKL_OK);
    ASSERT_EQ(w2.n, 3);
    ASSERT_EQ(strlen(w2.made[0]), strlen(seqdir) + 10);
    ASSERT_STR(w2.made[1], "");
    ASSERT_EQ(t_zk_data(d, buf, sizeof buf), 2);
    ASSERT(memcmp(buf, "v2", 2) == 0);
    ASSERT_EQ(t_zk_count(d), 1);
    /* One op refused (a stale version): ZKL_EWRITE, nothing written. */
    ops[0] = op(ZKL_OP_CREATE, seqdir, "j", ZKL_CREATE_SEQUENTIAL, 0);
    ops[1] = op(ZKL_OP_SET, d, "v3", 0, 0); /* version is 1 now */
    ASSERT_RC(zkl_lock_write(a.lk, ops, 2, t_write_cb, &w3), ZKL_OK);
    ASSERT(t_run_until(&w3.done, 5000));
    ASSERT_RC(w3.status, ZKL_EWRITE);
    ASSERT_RC(w3.op_status[0], ZKL_OK);
    ASSERT_RC(w3.op_status[1], ZKL_EVERSION);
    ASSERT_EQ(t_zk_count(d), 1);
    ASSERT_EQ(t_zk_data(d, buf, sizeof buf), 2);
    ASSERT(memcmp(buf, "v2", 2) == 0);
    /* Deleting a node with children: ENOTEMPTY. */
    ops[0] = op(ZKL_OP_DELETE, d, NULL, 0, -1);
    ASSERT_RC(zkl_lock_write(a.lk, ops, 1, t_write_cb, &w4), ZKL_OK);
    ASSERT(t_run_until(&w4.done, 5000));
    ASSERT_RC(w4.status, ZKL_EWRITE);
    ASSERT_RC(w4.op_status[0], ZKL_ENOTEMPTY);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT_RC(zkl_lock_write(a.lk, ops, 1, t_write_cb, &w4), ZKL_ENOTHELD);
    ASSERT(t_run_until(&a.released, 5000));
    ASSERT_EQ(t_zk_count(p), 0);
    zkl_lock_free(a.lk);
    zkl_client_free(c);
}

/* A batch the server refuses for one op's sake names that op's reason:
 * a create of a node that exists (ZKL_EEXISTS), a write to or a delete
 * of one that does not (ZKL_ENONODE); nothing of the batch is written. */
TEST(guarded_write_refused_op_says_why)
{
    t_conn_t conn;
    zkl_client_t *c = t_client(t_hosts(), 4000, &conn);
    const char *p = t_path(NULL);
    const char *d = data_path("data");
    const char *missing = data_path("missing");
    char made[600], buf[16];
    static t_lock_t a;
    static t_write_t w1, w2, w3, w4;
    zkl_op_t ops[2];

    snprintf(made, sizeof made, "%s/new", d);
    t_lock_init(&a, c, p);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    ops[0] = op(ZKL_OP_CREATE, d, "v1", 0, 0);
    ASSERT_RC(zkl_lock_write(a.lk, ops, 1, t_write_cb, &w1), ZKL_OK);
    ASSERT(t_run_until(&w1.done, 5000));
    ASSERT_RC(w1.status, ZKL_OK);
    /* A set that would pass, then a create of what exists. */
    ops[0] = op(ZKL_OP_SET, d, "v2", 0, -1);
    ops[1] = op(ZKL_OP_CREATE, d, "again", 0, 0);
    ASSERT_RC(zkl_lock_write(a.lk, ops, 2, t_write_cb, &w2), ZKL_OK);
    ASSERT(t_run_until(&w2.done, 5000));
    ASSERT_RC(w2.status, ZKL_EWRITE);
    ASSERT_EQ(w2.n, 2);
    ASSERT_RC(w2.op_status[0], ZKL_OK);
    ASSERT_RC(w2.op_status[1], ZKL_EEXISTS);
    /* A create that would pass, then a set of a node that is not. */
    ops[0] = op(ZKL_OP_CREATE, made, "n", 0, 0);
    ops[1] = op(ZKL_OP_SET, missing, "x", 0, -1);
    ASSERT_RC(zkl_lock_write(a.lk, ops, 2, t_write_cb, &w3), ZKL_OK);
    ASSERT(t_run_until(&w3.done, 5000));
    ASSERT_RC(w3.status, ZKL_EWRITE);
    ASSERT_RC(w3.op_status[0], ZKL_OK);
    ASSERT_RC(w3.op_status[1], ZKL_ENONODE);
    /* A delete of a node that is not. */
    ops[0] = op(ZKL_OP_DELETE, missing, NULL, 0, -1);
    ASSERT_RC(zkl_lock_write(a.lk, ops, 1, t_write_cb, &w4), ZKL_OK);
    ASSERT(t_run_until(&w4.done, 5000));
    ASSERT_RC(w4.status, ZKL_EWRITE);
    ASSERT_RC(w4.op_status[0], ZKL_ENONODE);
    /* Nothing of the refused batches was written. */
    ASSERT_EQ(t_zk_data(d, buf, sizeof buf), 2);
    ASSERT(memcmp(buf, "v1", 2) == 0);
    ASSERT_EQ(t_zk_data(made, buf, sizeof buf), -1);
    ASSERT_EQ(t_zk_data(missing, buf, sizeof buf), -1);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(t_run_until(&a.released, 5000));
    ASSERT_EQ(t_zk_delete(d), 0);
    zkl_lock_free(a.lk);
    zkl_client_free(c);
}

/* The node deleted by someone else, the holder not yet told: the batch
 * still goes out, and the server refuses all of it. */
TEST(guarded_write_refused_when_node_gone)
{
    t_conn_t conn;
    zkl_client_t *c = t_client(t_hosts(), 4000, &conn);
    const char *p = t_path(NULL);
    const char *d = data_path("data");
    char name[ZKL_NODE_NAME_SIZE];
    static t_lock_t a;
    static t_write_t w;
    zkl_op_t ops[2];

    t_lock_init(&a, c, p);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    t_run_for(100);
    ASSERT_EQ(t_zk_delete_node(a.lk), 0);
    /* The loop has not run: the holder cannot know. */
    ASSERT(zkl_lock_is_held(a.lk));
    ops[0] = op(ZKL_OP_CREATE, d, "stale", 0, 0);
    ops[1] = op(ZKL_OP_CREATE, data_path("data2"), "stale", 0, 0);
    ASSERT_RC(zkl_lock_write(a.lk, ops, 2, t_write_cb, &w), ZKL_OK);
    ASSERT(t_run_until(&w.done, 5000));
    ASSERT_RC(w.status, ZKL_EFENCED);
    ASSERT_EQ(t_zk_data(d, name, sizeof name), -1);
    ASSERT_EQ(t_zk_data(ops[1].path, name, sizeof name), -1);
    ASSERT(t_run_until(&a.lost, 5000));
    ASSERT_RC(a.last_status, ZKL_ENODEGONE);
    zkl_lock_free(a.lk);
    zkl_client_free(c);
}

/* A batch sent while held into a connection that then goes silent past
 * the session timeout. The ZooKeeper client gives up on the connection
 * (two thirds of the timeout without a byte) with the batch unanswered:
 * the one true answer is ZKL_ECONNLOSS, outcome unknown (never EFENCED,
 * which says nothing was written, nor a session error, which the
 * callback does not give). The holder is told LOST on its own clock,
 * the server expires the session, and the batch, stalled until after
 * that, finds no session to apply it in: nothing is written. */
TEST(guarded_write_unanswered_across_expiry)
{
    fp_t *fp = fp_new(t_base, t_port());
    t_conn_t xc;
    zkl_client_t *x;
    const char *p = t_path(NULL);
    const char *d = data_path("data");
    char buf[16];
    static t_lock_t a;
    static t_write_t w;
    zkl_op_t ops[1];

    ASSERT(fp != NULL);
    x = t_client(fp_hosts(fp), 2000, &xc);
    t_lock_init(&a, x, p);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    t_run_for(100);
    fp_stall(fp, 1);
    ops[0] = op(ZKL_OP_CREATE, d, "late", 0, 0);
    ASSERT(zkl_lock_is_held(a.lk));
    ASSERT_RC(zkl_lock_write(a.lk, ops, 1, t_write_cb, &w), ZKL_OK);
    /* Answered while still cut off: by the client, not the server. */
    ASSERT(t_run_until(&w.done, 5000));
    ASSERT_RC(w.status, ZKL_ECONNLOSS);
    ASSERT_EQ(w.n, 1);
    ASSERT(t_run_until(&a.lost, 8000));
    ASSERT_RC(a.last_status, ZKL_ESESSION);
    ASSERT_EQ(t_zk_wait_count(p, 0, 10000), 0); /* the server expired it */
    fp_stall(fp, 0);
    /* The stalled bytes go on now, to a server that expired their
     * session: the client hears so and starts a new one. */
    ASSERT(WAIT_FOR(t_has_event(&xc, ZKL_CONN_EXPIRED), 15000));
    ASSERT(WAIT_FOR(xc.connected, 15000));
    ASSERT_EQ(t_zk_data(d, buf, sizeof buf), -1);
    zkl_lock_free(a.lk);
    zkl_client_free(x);
    fp_free(fp);
}

/* A multi-lock's batch is guarded by every member's node. */
TEST(guarded_write_multi)
{
    t_conn_t conn;
    zkl_client_t *c = t_client(t_hosts(), 4000, &conn);
    const char *paths[2] = {t_path("m1"), NULL};
    char p1[512], name[ZKL_NODE_NAME_SIZE];
    const char *d = data_path("data");
    static t_multi_t t;
    static t_write_t w1, w2;
    zkl_multi_t *m;
    zkl_op_t ops[1];

    snprintf(p1, sizeof p1, "%s", paths[0]);
    paths[0] = p1;
    paths[1] = t_path("m2");
    t_multi_init(&t, c, paths, 2);
    m = t.m;
    ops[0] = op(ZKL_OP_CREATE, d, "x", 0, 0);
    ASSERT_RC(zkl_multi_write(m, ops, 1, t_write_cb, &w1), ZKL_ENOTHELD);
    ASSERT_RC(zkl_multi_write(NULL, ops, 1, t_write_cb, &w1), ZKL_EINVAL);
    ASSERT_RC(zkl_multi_acquire(m, -1), ZKL_OK);
    ASSERT(t_run_until(&t.acquired, 5000));
    t_run_for(100);
    ASSERT_RC(zkl_multi_write(m, ops, 1, t_write_cb, &w1), ZKL_OK);
    ASSERT(t_run_until(&w1.done, 5000));
    ASSERT_RC(w1.status, ZKL_OK);
    /* One member's node gone: the whole batch is refused. */
    ASSERT_EQ(t_zk_delete_node(zkl_multi_lock(m, 1)), 0);
    ops[0] = op(ZKL_OP_DELETE, d, NULL, 0, -1);
    ASSERT_RC(zkl_multi_write(m, ops, 1, t_write_cb, &w2), ZKL_OK);
    ASSERT(t_run_until(&w2.done, 5000));
    ASSERT_RC(w2.status, ZKL_EFENCED);
    ASSERT_EQ(t_zk_data(d, name, sizeof name), 1);
    zkl_multi_free(m);
    ASSERT_EQ(t_zk_wait_count(p1, 0, 5000), 0);
    zkl_client_free(c);
}

/* A batch bigger than a ZooKeeper request may be (the server's
 * jute.maxbuffer, 1 MiB less one byte by default, closes the connection
 * of whoever sends one) is refused at the call, not sent to cost the
 * session a reconnect and the caller an unknown outcome; one just within
 * ZKL_WRITE_BYTES_MAX is applied. */
TEST(guarded_write_too_big_refused_at_call)
{
    zkl_client_t *c = t_client(t_hosts(), 10000, NULL);
    const char *p = t_path(NULL);
    const char *d = data_path("big1"), *e = data_path("big2");
    static t_lock_t a;
    static t_write_t w;
    static char big[600000];
    char buf[16];
    zkl_op_t ops[2];
    zkl_stats_t s0;

    memset(big, 'x', sizeof big);
    t_lock_init(&a, c, p);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    s0 = t_stats(c);
    ops[0] = op(ZKL_OP_CREATE, d, NULL, 0, 0);
    ops[0].data = big;
    ops[0].len = sizeof big;
    ops[1] = ops[0];
    ops[1].path = e;
    ASSERT_RC(zkl_lock_write(a.lk, ops, 2, t_write_cb, &w), ZKL_EINVAL);
    /* Within the bound: sent and applied, on the same connection. */
    ops[1].len = ZKL_WRITE_BYTES_MAX - sizeof big - 2 * strlen(d) - 1000;
    ASSERT_RC(zkl_lock_write(a.lk, ops, 2, t_write_cb, &w), ZKL_OK);
    ASSERT(t_run_until(&w.done, 10000));
    ASSERT_RC(w.status, ZKL_OK);
    ASSERT_EQ(t_zk_data(d, buf, sizeof buf), (int)sizeof big);
    ASSERT_EQ(t_stats(c).session_events, s0.session_events);
    ASSERT_EQ(a.lost + a.suspended, 0);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(t_run_until(&a.released, 5000));
    zkl_lock_free(a.lk);
    zkl_client_free(c);
}
