/* Listing a lock's queue, in the order the recipe grants it. Owns each
 * zkl__contenders_req_t from zkl_contenders() until its callback ran:
 * the completion only records the answer (it can fire inside any call
 * into the ZooKeeper client, API calls included); the client's drain
 * delivers it. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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

static void contenders_done(int rc, const struct String_vector *sv,
                            const struct Stat *st, const void *data)
{
    zkl__contenders_req_t *r = (zkl__contenders_req_t *)(uintptr_t)data;
    zkl_client_t *c = r->c;

    (void)st;
    if (!c->closing)
        zkl__on_result(c, rc, r->sent_at);
    switch (zkl__rc_class(rc)) {
    case ZKL__RC_OK:
        r->status = sv != NULL && sv->count > 0 ? copy_names(r, sv) : ZKL_OK;
        break;
    case ZKL__RC_NONODE:
        r->status = ZKL_OK; /* no lock path: nobody contends */
        break;
    case ZKL__RC_GONE:
        /* ZCLOSING outside a teardown: the old handle of a renewed
         * session. */
        r->status = rc == ZCLOSING && !c->closing ? ZKL_ESESSION
                                                  : zkl__from_zk(rc);
        break;
    default:
        r->status = zkl__from_zk(rc);
        break;
    }
    if (zkl__queue_event(c, ZKL__EV_CONTENDERS, r, 0, r->status) != ZKL_OK) {
        c->nreqs--;
        zkl__contenders_free(r);
    }
}

void zkl__contenders_deliver(zkl__contenders_req_t *r)
{
    int ok = r->status == ZKL_OK;

    r->cb(r->c, r->status, ok ? r->names : NULL, ok ? r->n : 0, r->arg);
    zkl__contenders_free(r);
}

void zkl__contenders_free(zkl__contenders_req_t *r)
{
    zkl__free(r->names);
    zkl__free(r);
}

int zkl_contenders(zkl_client_t *c, const char *path, zkl_contenders_cb cb,
                   void *arg)
{
    zkl__contenders_req_t *r;
    int rc;

    if (c == NULL || cb == NULL || path == NULL)
        return ZKL_EINVAL;
    if ((rc = zkl__path_check(path, 0)) != ZKL_OK)
        return rc;
    if (c->freeing || c->closing || c->zh == NULL)
        return ZKL_ECLOSED;
    if (c->dead)
        return c->dead;
    /* Its callback's room in the queue is set aside now (see
     * zkl__att_new). */
    if (zkl__evq_reserve(c, c->natts + c->nreqs + 1 + ZKL__EVQ_SLACK) !=
            ZKL_OK ||
        (r = zkl__calloc(1, sizeof *r)) == NULL)
        return ZKL_ENOMEM;
    r->c = c;
    r->cb = cb;
    r->arg = arg;
    r->sent_at = zkl__now_ms();
    /* Queued by the ZooKeeper client even while disconnected; it fails
     * with ZCONNECTIONLOSS if the connection does not come up. */
    rc = zoo_aget_children2(c->zh, path, 0, contenders_done, r);
    if (rc != ZOK) {
        zkl__free(r);
        /* ZINVALIDSTATE: the handle is dead, the session with it. */
        return rc == ZINVALIDSTATE ? ZKL_ESESSION : zkl__from_zk(rc);
    }
    c->nreqs++;
    zkl__kick(c);
    return ZKL_OK;
}
