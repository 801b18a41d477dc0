/* Revocation (Curator's Revoker): asking a lock's holders to let go by
 * writing "__REVOKE__" into their nodes, which their own watches see
 * (ZKL_LOCK_REVOKE_REQUESTED). A request of contenders.c's kind: it lists
 * the lock path and writes to each holder, or writes to one named node. */
#include <string.h>

#include "internal.h"

int zkl_revoke(zkl_client_t *c, const char *path, const char *node,
               zkl_revoke_cb cb, void *arg)
{
    zkl__contenders_req_t *r;
    int rc;

    if (c == NULL || cb == NULL || path == NULL ||
        (node != NULL && (node[0] == '\0' || strchr(node, '/') != NULL ||
                          strcmp(node, ".") == 0 || strcmp(node, "..") == 0 ||
                          strlen(node) > ZKL_PATH_MAX)))
        return ZKL_EINVAL;
    if ((rc = zkl__req_new(&r, c, path, ZKL__REQ_REVOKE, arg)) != ZKL_OK)
        return rc;
    r->cb.revoke = cb;
    if (node == NULL) /* the holders, once the listing tells them */
        return zkl__req_list(r);
    return zkl__req_one(r, node);
}
