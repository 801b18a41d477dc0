/* Requests about a lock path that are not lock attempts: a listing of
 * its queue, then one request per node that the mode asks for (a read
 * for names with kinds and data, a write of the revocation message for
 * the holders, see revoke.c). Owns each zkl__contenders_req_t from the call
 * until its callback ran: the completions only record the answers (they
 * can fire inside any call into the ZooKeeper client, API calls
 * included), and send what the listing's borrowed names make necessary;
 * the client's drain delivers. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define REQ(data) ((zkl__contenders_req_t *)(uintptr_t)(data))

/* What Curator's Revoker writes. */
static const char revoke_message[] = "__REVOKE__";

static int cmp_names(const void *x, const void *y)
{
    return zkl__name_cmp(*(const char *const *)x, *(const char *const *)y);
}

/* The reply's names are the ZooKeeper client's, freed when the
 * completion returns: one block holds the sorted pointers and the text. */
static int copy_names(zkl__contenders_req_t *r, const struct String_vector *sv)
{
    size_t n = (size_t)sv->count, bytes = n * sizeof(char *), i;
    char *text;

    for (i = 0; i < n; i++)
        bytes += strlen(sv->data[i]) + 1;
    if ((r->names = zkl__malloc(bytes)) == NULL)
        return ZKL_ENOMEM;
    text = (char *)(r->names + n);
    for (i = 0; i < n; i++) {
        size_t len = strlen(sv->data[i]) + 1;

        memcpy(text, sv->data[i], len);
        r->names[i] = text;
        text += len;
    }
    r->n = n;
    qsort(r->names, n, sizeof *r->names, cmp_names);
    return ZKL_OK;
}

/* Who holds, by each kind's rule, read off the queue in order: a mutex
 * or write node at the front; read nodes before the first write node.
 * The front is every node with the first one's sort key: a downgrade's
 * read node shares its write node's key, and both hold. */
static int fill_kinds(zkl__contenders_req_t *r)
{
    const char *head;
    int seen_write = 0, front;
    size_t i;

    if ((r->v = zkl__calloc(r->n, sizeof *r->v)) == NULL)
        return ZKL_ENOMEM;
    head = zkl__sort_key(r->names[0]);
    for (i = 0; i < r->n; i++) {
        zkl_contender_t *e = &r->v[i];

        e->name = r->names[i];
        e->kind = zkl__kind_of(e->name);
        front = i == 0 || strcmp(zkl__sort_key(e->name), head) == 0;
        if (e->kind == ZKL_KIND_OTHER)
            continue; /* a node of no kind holds nothing */
        e->holds = zkl__recipe(e->kind)->holds(front, seen_write);
        if (zkl__recipe(e->kind)->excludes_readers)
            seen_write = 1;
    }
    return ZKL_OK;
}

static void req_free(zkl__contenders_req_t *r)
{
    size_t i;

    if (r->v != NULL)
        for (i = 0; i < r->n; i++)
            zkl__free((void *)(uintptr_t)r->v[i].data);
    zkl__free(r->v);
    zkl__free(r->names);
    zkl__free(r);
}

static void req_deliver(zkl__op_t *op, int ev, int status)
{
    zkl__contenders_req_t *r = (zkl__contenders_req_t *)(void *)op;
    int ok = status == ZKL_OK;

    (void)ev;
    switch (r->mode) {
    case ZKL__REQ_NAMES:
        r->cb.names(r->c, status, ok ? r->names : NULL, ok ? r->n : 0,
                    r->arg);
        break;
    case ZKL__REQ_EX:
        r->cb.ex(r->c, status, ok ? r->v : NULL, ok ? r->n : 0, r->arg);
        break;
    case ZKL__REQ_REVOKE:
        r->cb.revoke(r->c, status, r->nrevoked, r->arg);
        break;
    }
    req_free(r);
}

static const zkl__opclass_t req_class = {
    .name = "contenders request", .deliver = req_deliver, .once = 1,
    .room = 1, /* answered before the teardown: every completion ran */
};

static void req_done(zkl__contenders_req_t *r)
{
    zkl_client_t *c = r->c;

    if (zkl__evq_push(c, &r->op, 0, r->status) != ZKL_OK) {
        zkl__op_remove(c, &r->op); /* past the room set aside: logged */
        req_free(r);
    }
}

/* A failed part fails the whole, first error first. */
static void note_status(zkl__contenders_req_t *r, int rc)
{
    if (r->status != ZKL_OK)
        return;
    if (zkl__rc_class(rc) == ZKL__RC_GONE)
        /* ZCLOSING outside a teardown: the old handle of a renewed
         * session. */
        r->status = rc == ZCLOSING && !r->c->closing ? ZKL_ESESSION
                                                      : zkl__from_zk(rc);
    else
        r->status = zkl__from_zk(rc);
}

/* One answer to a request sent after the listing. They come back in the
 * order they were sent (the ZooKeeper client completes in order), so
 * the next one is for entry `answered`. */
static zkl__contenders_req_t *part_answered(const void *data, int rc)
{
    zkl__contenders_req_t *r = REQ(data);

    if (!r->c->closing)
        zkl__on_answer(r->c, rc, r->sent_at);
    else if (r->status == ZKL_OK)
        r->status = ZKL_ECLOSED; /* see list_done */
    r->outstanding--;
    switch (zkl__rc_class(rc)) {
    case ZKL__RC_OK:
    case ZKL__RC_NONODE: /* went meanwhile: nothing to read or ask */
        break;
    default:
        note_status(r, rc);
        break;
    }
    return r;
}

static void data_done(int rc, const char *value, int len,
                      const struct Stat *st, const void *data)
{
    zkl__contenders_req_t *r = part_answered(data, rc);
    zkl_contender_t *e = &r->v[r->answered++];
    char *copy;

    (void)st;
    if (rc == ZOK && zkl__data_lost(value, len)) {
        if (r->status == ZKL_OK)
            r->status = ZKL_ENOMEM; /* the client could not copy it */
    } else if (rc == ZOK) {
        size_t n = value != NULL && len > 0 ? (size_t)len : 0;

        if ((copy = zkl__malloc(n + 1)) == NULL) {
            if (r->status == ZKL_OK)
                r->status = ZKL_ENOMEM;
        } else {
            if (n > 0)
                memcpy(copy, value, n);
            copy[n] = '\0';
            e->data = copy;
            e->len = n;
        }
    }
    if (r->outstanding == 0)
        req_done(r);
}

static void set_done(int rc, const struct Stat *st, const void *data)
{
    zkl__contenders_req_t *r = part_answered(data, rc);

    (void)st;
    if (rc == ZOK)
        r->nrevoked++;
    if (r->outstanding == 0)
        req_done(r);
}

/* A request of r's whose fate was unknown (fence.c), now settled: the
 * pin goes, and the request too if its completion never came; r is
 * answered (ZKL_ENOMEM, noted when it was sent) once nothing is left. */
static void req_resolve(zkl_client_t *c, void *rec, void *aux)
{
    zkl__contenders_req_t *r = rec;
    int came = r->outstanding == 1;

    (void)c;
    (void)aux;
    r->outstanding--;
    if (!came)
        r->outstanding--;
    if (r->outstanding == 0)
        req_done(r);
}

/* Counts a request that the ZooKeeper client took, or may have taken:
 * ZKL_OK, PART_MAYBE (r is answered through its callback, with
 * ZKL_ENOMEM), or why it did not. */
#define PART_MAYBE 1
static int req_sent(zkl__contenders_req_t *r, int rc)
{
    switch (zkl__fence_sent(r->c, rc, req_resolve, r, NULL)) {
    case ZKL__SENT:
        r->outstanding++;
        return ZKL_OK;
    case ZKL__MAYBE:
        r->outstanding += 2; /* the request and the fence's pin */
        if (r->status == ZKL_OK)
            r->status = ZKL_ENOMEM;
        return PART_MAYBE;
    default:
        /* ZINVALIDSTATE: the handle is dead, the session with it. */
        return rc == ZINVALIDSTATE ? ZKL_ESESSION : zkl__from_zk(rc);
    }
}

/* Sends one part (a read or a revocation) for child name. */
static int send_part(zkl__contenders_req_t *r, const char *name)
{
    size_t dl = strlen(r->path), nl = strlen(name);
    char *p;
    int rc;

    if (zkl__fence_up(r->c))
        return ZKL_ENOMEM; /* another request's fate is unknown */
    if ((p = zkl__malloc(dl + 1 + nl + 1)) == NULL)
        return ZKL_ENOMEM;
    memcpy(p, r->path, dl);
    p[dl] = '/';
    memcpy(p + dl + 1, name, nl + 1);
    if (r->mode == ZKL__REQ_EX)
        rc = zoo_aget(r->c->zh, p, 0, data_done, r);
    else
        rc = zoo_aset(r->c->zh, p, revoke_message,
                      (int)sizeof revoke_message - 1, -1, set_done, r);
    zkl__free(p);
    return req_sent(r, rc);
}

/* The listing is in: reads or revocations for the nodes that need them,
 * pipelined. An EX listing needs an entry for every node, so a failed
 * send ends it; a revocation goes on with the others. */
static void after_listing(zkl__contenders_req_t *r)
{
    size_t i;
    int rc;

    if (r->mode == ZKL__REQ_NAMES || r->status != ZKL_OK || r->n == 0)
        return;
    if (r->c->closing) {
        r->status = ZKL_ECLOSED;
        return;
    }
    if ((r->status = fill_kinds(r)) != ZKL_OK)
        return;
    for (i = 0; i < r->n; i++) {
        if (r->mode == ZKL__REQ_REVOKE &&
            (!r->v[i].holds || r->v[i].kind > ZKL_KIND_WRITE))
            continue;
        if ((rc = send_part(r, r->names[i])) != ZKL_OK) {
            if (rc != PART_MAYBE)
                r->status = rc;
            if (r->mode == ZKL__REQ_EX)
                return;
        }
    }
}

static void list_done(int rc, const struct String_vector *sv,
                      const struct Stat *st, const void *data)
{
    zkl__contenders_req_t *r = REQ(data);
    zkl_client_t *c = r->c;

    (void)st;
    if (!c->closing)
        zkl__on_answer(c, rc, r->sent_at);
    r->outstanding--;
    /* Answered while the client closes (it reads what is on its way
     * first): the caller was promised ZKL_ECLOSED. */
    if (c->closing && r->status == ZKL_OK)
        r->status = ZKL_ECLOSED;
    switch (zkl__rc_class(rc)) {
    case ZKL__RC_OK:
        if (r->status == ZKL_OK && zkl__names_lost(sv))
            r->status = ZKL_ENOMEM; /* the client could not copy them */
        else if (r->status == ZKL_OK)
            r->status = sv != NULL && sv->count > 0 ? copy_names(r, sv)
                                                    : ZKL_OK;
        break;
    case ZKL__RC_NONODE:
        if (!c->closing)
            r->status = ZKL_OK; /* no lock path: nobody contends */
        break;
    default:
        note_status(r, rc);
        break;
    }
    after_listing(r);
    if (r->outstanding == 0)
        req_done(r);
}


int zkl__req_new(zkl__contenders_req_t **out, zkl_client_t *c,
                 const char *path, int mode, void *arg)
{
    zkl__contenders_req_t *r;
    size_t len;
    int rc;

    *out = NULL;
    if ((rc = zkl__path_check(path, 0)) != ZKL_OK)
        return rc;
    if (c->freeing || c->closing || c->zh == NULL)
        return ZKL_ECLOSED;
    if (c->dead)
        return c->dead;
    len = strlen(path);
    /* Its callback's room in the queue is set aside now (see
     * zkl__att_new). */
    if (zkl__evq_promise(c, 0) != ZKL_OK ||
        (r = zkl__calloc(1, sizeof *r + len + 1)) == NULL)
        return ZKL_ENOMEM;
    r->c = c;
    r->mode = mode;
    r->arg = arg;
    r->sent_at = zkl__now_ms();
    memcpy(r->path, path, len + 1);
    /* Listed before its first request goes: the ZooKeeper client may run
     * a completion inside any call, and the answer must find its op. */
    zkl__op_add(c, &r->op, &req_class);
    *out = r;
    return ZKL_OK;
}

/* A request the ZooKeeper client took (queued even while disconnected;
 * it fails with ZCONNECTIONLOSS if the connection does not come up), or
 * may have taken (rc PART_MAYBE): counted, and answered through the
 * callback; one it did not take (rc < 0): freed, and rc returned. */
static int req_start(zkl__contenders_req_t *r, int rc)
{
    zkl_client_t *c = r->c;

    if (rc < 0) {
        zkl__op_remove(c, &r->op);
        zkl__free(r);
        zkl__kick(c); /* a failed send may have closed the socket */
        return rc;
    }
    zkl__kick(c);
    return ZKL_OK;
}

int zkl__req_list(zkl__contenders_req_t *r)
{
    if (zkl__fence_up(r->c))
        return req_start(r, ZKL_ENOMEM); /* another request's fate is
                                            unknown */
    return req_start(r, req_sent(r, zoo_aget_children2(r->c->zh, r->path, 0,
                                                       list_done, r)));
}

int zkl_contenders(zkl_client_t *c, const char *path, zkl_contenders_cb cb,
                   void *arg)
{
    zkl__contenders_req_t *r;
    int rc;

    if (c == NULL || cb == NULL || path == NULL)
        return ZKL_EINVAL;
    if ((rc = zkl__req_new(&r, c, path, ZKL__REQ_NAMES, arg)) != ZKL_OK)
        return rc;
    r->cb.names = cb;
    return zkl__req_list(r);
}

int zkl_contenders_ex(zkl_client_t *c, const char *path,
                      zkl_contenders_ex_cb cb, void *arg)
{
    zkl__contenders_req_t *r;
    int rc;

    if (c == NULL || cb == NULL || path == NULL)
        return ZKL_EINVAL;
    if ((rc = zkl__req_new(&r, c, path, ZKL__REQ_EX, arg)) != ZKL_OK)
        return rc;
    r->cb.ex = cb;
    return zkl__req_list(r);
}

int zkl__req_one(zkl__contenders_req_t *r, const char *node)
{
    return req_start(r, send_part(r, node));
}
