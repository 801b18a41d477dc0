/* Credentials and ACLs: what a client proves on each connection, and
 * whom the nodes it creates let in (see zkl_acl_t in zklock.h). The
 * options' setters that fill them live in options.c. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int zkl__creds_add(zkl__cred_t **v, size_t *n, const char *scheme,
                   const char *text)
{
    zkl__cred_t *nv = zkl__realloc(*v, (*n + 1) * sizeof *nv);

    if (nv == NULL)
        return ZKL_ENOMEM;
    *v = nv;
    nv[*n].scheme = zkl__strdup(scheme);
    nv[*n].text = zkl__strdup(text);
    if (nv[*n].scheme == NULL || nv[*n].text == NULL) {
        zkl__free(nv[*n].scheme);
        zkl__free(nv[*n].text);
        return ZKL_ENOMEM;
    }
    (*n)++;
    return ZKL_OK;
}

void zkl__creds_free(zkl__cred_t *v, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        zkl__free(v[i].scheme);
        zkl__free(v[i].text);
    }
    zkl__free(v);
}

int zkl__creds_copy(zkl__cred_t **dst, size_t *ndst, const zkl__cred_t *src,
                    size_t n)
{
    size_t i;

    *dst = NULL;
    *ndst = 0;
    for (i = 0; i < n; i++) {
        if (zkl__creds_add(dst, ndst, src[i].scheme, src[i].text) != ZKL_OK) {
            zkl__creds_free(*dst, *ndst);
            *dst = NULL;
            *ndst = 0;
            return ZKL_ENOMEM;
        }
    }
    return ZKL_OK;
}

/* Open: ZooKeeper's own constant, nothing owned. Private: all
 * permissions for the client's own identities ("auth" stands for every
 * identity the session authenticated as) and the configured ones, read
 * for the world. */
int zkl__acl_build(struct ACL_vector *acl, const zkl_options_t *o)
{
    size_t i, k = 0, n;

    if (o == NULL || o->acl_mode == ZKL_ACL_OPEN) {
        *acl = ZOO_OPEN_ACL_UNSAFE;
        return ZKL_OK;
    }
    if (o->nauth == 0 && o->nids == 0)
        return ZKL_EINVAL; /* nobody could ever delete the nodes */
    n = 1 + (o->nauth > 0) + o->nids;
    acl->data = zkl__calloc(n, sizeof *acl->data);
    acl->count = 0;
    if (acl->data == NULL)
        return ZKL_ENOMEM;
    acl->count = (int32_t)n;
    acl->data[k].perms = ZOO_PERM_READ;
    acl->data[k].id.scheme = zkl__strdup("world");
    acl->data[k++].id.id = zkl__strdup("anyone");
    if (o->nauth > 0) {
        acl->data[k].perms = ZOO_PERM_ALL;
        acl->data[k].id.scheme = zkl__strdup("auth");
        acl->data[k++].id.id = zkl__strdup("");
    }
    for (i = 0; i < o->nids; i++) {
        acl->data[k].perms = ZOO_PERM_ALL;
        acl->data[k].id.scheme = zkl__strdup(o->ids[i].scheme);
        acl->data[k++].id.id = zkl__strdup(o->ids[i].text);
    }
    for (i = 0; i < n; i++) {
        if (acl->data[i].id.scheme == NULL || acl->data[i].id.id == NULL) {
            zkl__acl_free(acl);
            return ZKL_ENOMEM;
        }
    }
    return ZKL_OK;
}

void zkl__acl_free(struct ACL_vector *acl)
{
    int32_t i;

    if (acl->data == ZOO_OPEN_ACL_UNSAFE.data)
        return;
    for (i = 0; i < acl->count; i++) {
        zkl__free(acl->data[i].id.scheme);
        zkl__free(acl->data[i].id.id);
    }
    zkl__free(acl->data);
    acl->data = NULL;
    acl->count = 0;
}

static void auth_done(int rc, const void *data)
{
    (void)data;
    /* A refusal also arrives as ZOO_AUTH_FAILED_STATE on the session
     * watcher, which is where the client handles it. */
    if (rc != ZOK)
        ZKL_LOG(ZKL_LOG_ERROR, "zklock: authentication refused: %s",
                zerror(rc));
}

/* Queued on a new handle: the ZooKeeper client sends it on connecting
 * and again on every reconnect of the session. */
int zkl__send_auth(zkl_client_t *c)
{
    size_t i;

    for (i = 0; i < c->nauth; i++) {
        int rc = zoo_add_auth(c->zh, c->auth[i].scheme, c->auth[i].text,
                              (int)strlen(c->auth[i].text), auth_done, NULL);

        if (rc != ZOK)
            return zkl__from_zk(rc);
    }
    return ZKL_OK;
}
