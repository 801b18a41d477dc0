/* Guarded writes: the caller's writes and a check of each guarding lock
 * node in one ZooKeeper transaction, so the server applies them only
 * while those nodes exist. A node exists only while the session that
 * made it lives and nobody deleted it; while it exists, whoever held by
 * it still holds (nothing can come before a node that is first, readers
 * included). So this is the one way a holder can write that stays
 * correct when its session expired before it could know.
 *
 * Owns each zkl__write_req_t from the call until its callback has run:
 * the ZooKeeper client writes the results (and the created paths) into
 * it when the reply comes, and the callback queue hands it to the user. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct zkl__write_req zkl__write_req_t;
struct zkl__write_req {
    zkl__op_t op;             /* listed from the send to its answer */
    zkl_client_t *c;
    zkl_write_cb cb;
    void *arg;
    uint64_t sent_at;
    size_t nguards, n;        /* the checks come first, then the ops */
    zoo_op_result_t *res;     /* nguards + n, written by the client */
    zkl_op_result_t *out;     /* n, what the callback sees */
    struct Stat *stats;       /* n: a set op's result lands here */
    char *made;               /* n buffers of made_len: created paths */
    size_t made_len;
};

/* The class of a batch whose call failed late (see zkl__write). */
static const zkl__opclass_t orphan_class;

static void write_free(zkl__write_req_t *w)
{
    zkl__free(w->res);
    zkl__free(w->out);
    zkl__free(w->stats);
    zkl__free(w->made);
    zkl__free(w);
}

/* A ZooKeeper code of a refused op, as a zklock code. */
static int op_status(int rc)
{
    switch (rc) {
    case ZOK:
        return ZKL_OK;
    case ZNONODE:
        return ZKL_ENONODE;
    case ZNODEEXISTS:
        return ZKL_EEXISTS;
    case ZBADVERSION:
        return ZKL_EVERSION;
    case ZNOTEMPTY:
        return ZKL_ENOTEMPTY;
    case ZNOAUTH:
    case ZINVALIDACL:
        return ZKL_EAUTH;
    case ZBADARGUMENTS:
    case ZNOCHILDRENFOREPHEMERALS:
        return ZKL_EINVAL;
    case ZKL__ZQUOTAEXCEEDED:
        return ZKL_EQUOTA;
    default:
        return ZKL_EZK;
    }
}

/* The answer of the whole batch. In a refused one, the op that was
 * refused carries its code; those before it (rolled back) carry ZOK and
 * those after it ZRUNTIMEINCONSISTENCY, which says nothing about them. */
static void write_done(int rc, const void *data)
{
    zkl__write_req_t *w = (zkl__write_req_t *)(uintptr_t)data;
    zkl_client_t *c = w->c;
    size_t i;
    int status;

    if (w->op.cls == &orphan_class) {
        /* Its call failed after all (see zkl__write): no callback. */
        zkl__op_remove(c, &w->op);
        write_free(w);
        return;
    }

    c->ops_out--;
    if (!c->closing)
        zkl__on_answer(c, rc, w->sent_at);
    if (rc == ZOK) {
        for (i = 0; i < w->n; i++) {
            w->out[i].status = ZKL_OK;
            w->out[i].path = w->res[w->nguards + i].value != NULL
                                 ? w->made + i * w->made_len
                                 : NULL;
        }
        status = ZKL_OK;
    } else if (rc == ZTHROTTLEDOP) {
        status = ZKL_ETHROTTLED; /* not looked at: nothing written */
    } else if (zkl__rc_class(rc) == ZKL__RC_CONNLOSS ||
               zkl__rc_class(rc) == ZKL__RC_GONE) {
        /* Sent, and no answer: the server may have applied it before
         * the connection, the session or the client went (only while
         * the lock nodes existed). ZRUNTIMEINCONSISTENCY as the batch's
         * own code is the silent reset's (see error.c). */
        status = ZKL_ECONNLOSS;
    } else {
        size_t bad = w->nguards + w->n;

        for (i = 0; i < w->nguards + w->n && bad == w->nguards + w->n; i++)
            if (w->res[i].err != ZOK &&
                w->res[i].err != ZRUNTIMEINCONSISTENCY)
                bad = i;
        if (bad < w->nguards) {
            /* A lock node gone; any other refusal of a check (no read
             * permission, say) says nothing of the hold. */
            status = w->res[bad].err == ZNONODE
                            ? ZKL_EFENCED
                            : op_status(w->res[bad].err);
        } else if (bad < w->nguards + w->n) {
            status = ZKL_EWRITE;
            w->out[bad - w->nguards].status = op_status(w->res[bad].err);
        } else {
            status = zkl__from_zk(rc);
        }
    }
    if (zkl__evq_push(c, &w->op, 0, status) != ZKL_OK) {
        zkl__op_remove(c, &w->op); /* past the room set aside: logged */
        write_free(w);
    }
}

static void write_deliver(zkl__op_t *op, int ev, int status)
{
    zkl__write_req_t *w = (zkl__write_req_t *)(void *)op;
    int with = status == ZKL_OK || status == ZKL_EWRITE;

    (void)ev;
    w->cb(w->c, status, with ? w->out : NULL, w->n, w->arg);
    write_free(w);
}

/* The answer of a batch the user was told failed (an orphan) is
 * nobody's: the completion, or the teardown, frees it. */
static void orphan_teardown(zkl__op_t *op)
{
    write_free((zkl__write_req_t *)(void *)op);
}

static const zkl__opclass_t write_class = {
    .name = "guarded write", .deliver = write_deliver, .once = 1,
    .room = 1, /* answered before the teardown: every completion ran */
};

/* It queues no event: its answer is dropped. */
static const zkl__opclass_t orphan_class = {
    .name = "orphaned write", .teardown = orphan_teardown,
};

/* What one op adds to the request, counted high: its path, its data,
 * a header, and for a create the client's ACL. */
static size_t op_bytes(const zkl_client_t *c, const zkl_op_t *o)
{
    size_t b = 32 + strlen(o->path) + o->len;
    int32_t i;

    if (o->type == ZKL_OP_CREATE)
        for (i = 0; i < c->acl.count; i++)
            b += 16 + strlen(c->acl.data[i].id.scheme) +
                 strlen(c->acl.data[i].id.id);
    return b;
}

/* A request above the server's jute.maxbuffer (1 MiB less one byte by
 * default) is not refused by an answer: the server closes the
 * connection, so the batch would end in ZKL_ECONNLOSS (outcome unknown)
 * and cost every attempt of the session a reconnect. */
static int check_ops(const zkl_client_t *c, const zkl_op_t *ops, size_t n)
{
    size_t i, bytes = 0;
    int rc;

    for (i = 0; i < n; i++) {
        const zkl_op_t *o = &ops[i];

        if (o->path == NULL || (o->data == NULL && o->len > 0) ||
            o->len > 1000000 ||
            (o->type == ZKL_OP_CREATE &&
             (o->flags & ~(ZKL_CREATE_EPHEMERAL | ZKL_CREATE_SEQUENTIAL))))
            return ZKL_EINVAL;
        if (o->type < ZKL_OP_CREATE || o->type > ZKL_OP_CHECK)
            return ZKL_EINVAL;
        if ((rc = zkl__path_check(o->path, o->type != ZKL_OP_CREATE)) !=
            ZKL_OK)
            return rc;
        if ((bytes += op_bytes(c, o)) > ZKL_WRITE_BYTES_MAX)
            return ZKL_EINVAL;
    }
    return ZKL_OK;
}

/* The request's record, with room for every result and created path. */
static zkl__write_req_t *write_new(zkl_client_t *c, size_t nlocks,
                                   const zkl_op_t *ops, size_t n,
                                   zkl_write_cb cb, void *arg)
{
    zkl__write_req_t *w;
    size_t i, longest = 0;

    for (i = 0; i < n; i++)
        if (strlen(ops[i].path) > longest)
            longest = strlen(ops[i].path);
    if ((w = zkl__calloc(1, sizeof *w)) == NULL)
        return NULL;
    w->c = c;
    w->cb = cb;
    w->arg = arg;
    w->nguards = nlocks;
    w->n = n;
    w->made_len = longest + ZKL__SEQ_MAX_LEN + 1;
    w->res = zkl__calloc(nlocks + n, sizeof *w->res);
    w->out = zkl__calloc(n, sizeof *w->out);
    w->stats = zkl__calloc(n, sizeof *w->stats);
    w->made = zkl__calloc(n, w->made_len);
    if (w->res == NULL || w->out == NULL || w->stats == NULL ||
        w->made == NULL) {
        write_free(w);
        return NULL;
    }
    return w;
}

/* The transaction: a check of each lock node, then the user's ops,
 * whose results land in w. */
static void build_ops(zoo_op_t *zops, const zkl__write_req_t *w,
                      const zkl_lock_t *const *locks, const zkl_op_t *ops)
{
    const zkl_client_t *c = w->c;
    size_t i;

    /* Version -1: the check passes while the node exists, whatever its
     * data (a revocation request changes it). */
    for (i = 0; i < w->nguards; i++)
        zoo_check_op_init(&zops[i], locks[i]->att->path, -1);
    for (i = 0; i < w->n; i++) {
        const zkl_op_t *o = &ops[i];
        zoo_op_t *z = &zops[w->nguards + i];
        int len = o->data != NULL ? (int)o->len : -1;

        switch (o->type) {
        case ZKL_OP_CREATE:
            zoo_create_op_init(
                z, o->path, o->data, len, &c->acl,
                ((o->flags & ZKL_CREATE_EPHEMERAL) ? ZOO_EPHEMERAL : 0) |
                    ((o->flags & ZKL_CREATE_SEQUENTIAL) ? ZOO_SEQUENCE : 0),
                w->made + i * w->made_len, (int)w->made_len);
            break;
        case ZKL_OP_SET:
            zoo_set_op_init(z, o->path, o->data, len, o->version,
                            &w->stats[i]);
            break;
        case ZKL_OP_DELETE:
            zoo_delete_op_init(z, o->path, o->version);
            break;
        case ZKL_OP_CHECK:
            zoo_check_op_init(z, o->path, o->version);
            break;
        }
    }
}

int zkl__write(zkl_client_t *c, const zkl_lock_t *const *locks,
               size_t nlocks, const zkl_op_t *ops, size_t n,
               zkl_write_cb cb, void *arg)
{
    zkl__write_req_t *w;
    zoo_op_t *zops;
    size_t i;
    int rc;

    if (ops == NULL || cb == NULL || n == 0 || n > ZKL_WRITE_OPS_MAX)
        return ZKL_EINVAL;
    if ((rc = check_ops(c, ops, n)) != ZKL_OK)
        return rc;
    if (c->zh == NULL || c->expired)
        return ZKL_ESESSION;
    /* Another request's fate is unknown (fence.c): the ZooKeeper client
     * is short of memory, and a batch queued now would most likely meet
     * the reset that settles it and end as "outcome unknown". */
    if (zkl__fence_up(c))
        return ZKL_ENOMEM;
    for (i = 0; i < nlocks; i++) {
        const zkl__att_t *a = locks[i]->att;

        if (a == NULL || a->goal != ZKL__GOAL_HOLD ||
            a->node != ZKL__NODE_KNOWN)
            return ZKL_ENOTHELD;
    }
    if (zkl__evq_promise(c, 0) != ZKL_OK ||
        (w = write_new(c, nlocks, ops, n, cb, arg)) == NULL)
        return ZKL_ENOMEM;
    if ((zops = zkl__calloc(nlocks + n, sizeof *zops)) == NULL) {
        write_free(w);
        return ZKL_ENOMEM;
    }
    build_ops(zops, w, locks, ops);
    /* The client serializes the ops (paths and data) at once; only the
     * results and created paths are written later, into w. */
    w->sent_at = zkl__now_ms();
    /* Listed and counted before the call: the ZooKeeper client may run
     * a completion inside any call, and the answer must find its op. */
    zkl__op_add(c, &w->op, &write_class);
    c->ops_out++;
    rc = zoo_amulti(c->zh, (int)(nlocks + n), zops, w->res, write_done, w);
    zkl__free(zops);
    if (rc != ZOK) {
        zkl__op_remove(c, &w->op);
        c->ops_out--;
    }
    if (rc == ZMARSHALLINGERROR) {
        /* The ZooKeeper client says this for a request it could not
         * build (no memory, or a session that just became unusable),
         * but also when it failed to queue one whose completion it had
         * registered already: that completion will still run and write
         * into w, so w stays, as an orphan, until it does or the client
         * is freed. */
        zkl__op_add(c, &w->op, &orphan_class);
        zkl__kick(c); /* a failed send may have closed the socket */
        return is_unrecoverable(c->zh) == ZINVALIDSTATE ? ZKL_ESESSION
                                                         : ZKL_ENOMEM;
    }
    if (rc != ZOK) {
        write_free(w);
        zkl__kick(c); /* a failed send may have closed the socket */
        return zkl__from_zk(rc);
    }
    c->stats.requests++;
    zkl__kick(c);
    return ZKL_OK;
}

int zkl_lock_write(zkl_lock_t *lk, const zkl_op_t *ops, size_t n,
                   zkl_write_cb cb, void *arg)
{
    int rc = lk != NULL ? zkl__client_usable(lk->c) : ZKL_EINVAL;

    if (rc != ZKL_OK)
        return rc;
    return zkl__write(lk->c, (const zkl_lock_t *const *)&lk, 1, ops, n, cb,
                      arg);
}
