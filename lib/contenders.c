/* Listing a lock's queue, in the order the recipe grants it. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct zkl__contenders_req {
    zkl_client_t *c;
    zkl_contenders_cb cb;
    void *arg;
};

static int cmp_names(const void *x, const void *y)
{
    return zkl__name_cmp(*(const char *const *)x, *(const char *const *)y);
}

static void contenders_done(int rc, const struct String_vector *sv,
                            const struct Stat *st, const void *data)
{
    zkl__contenders_req_t *r = (zkl__contenders_req_t *)(uintptr_t)data;
    zkl_client_t *c = r->c;
    const char **names = NULL;
    size_t n = 0;
    int status = ZKL_OK;

    (void)st;
    c->nreqs--;
    if (rc == ZOK && sv != NULL && sv->count > 0) {
        names = zkl__malloc((size_t)sv->count * sizeof *names);
        if (names == NULL) {
            status = ZKL_ENOMEM;
        } else {
            for (n = 0; n < (size_t)sv->count; n++)
                names[n] = sv->data[n];
            qsort(names, n, sizeof *names, cmp_names);
        }
    } else if (rc == ZCLOSING && !c->closing) {
        status = ZKL_ESESSION; /* the old handle of a renewed session */
    } else if (rc != ZOK && rc != ZNONODE) {
        status = zkl__from_zk(rc);
    }
    r->cb(c, status, status == ZKL_OK ? names : NULL,
          status == ZKL_OK ? n : 0, r->arg);
    zkl__free(names);
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
    r = zkl__malloc(sizeof *r);
    if (r == NULL)
        return ZKL_ENOMEM;
    r->c = c;
    r->cb = cb;
    r->arg = arg;
    /* Queued by the ZooKeeper client even while disconnected; it fails
     * with ZCONNECTIONLOSS if the connection does not come up. */
    rc = zoo_aget_children2(c->zh, path, 0, contenders_done, r);
    if (rc != ZOK) {
        zkl__free(r);
        return zkl__from_zk(rc) == ZKL_ECLOSED ? ZKL_ECLOSED : ZKL_ESESSION;
    }
    c->nreqs++;
    zkl__kick(c);
    return ZKL_OK;
}
