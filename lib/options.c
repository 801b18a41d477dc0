/* The options builder: every setter, and the defaults the library and
 * the CLI share (ZKL_DEFAULT_* in zklock.h). Owns nothing beyond the
 * zkl_options_t it hands out. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int zkl_options_new(zkl_options_t **out)
{
    zkl_options_t *o;

    if (out == NULL)
        return ZKL_EINVAL;
    *out = NULL;
    o = zkl__calloc(1, sizeof *o);
    if (o == NULL)
        return ZKL_ENOMEM;
    o->session_timeout = ZKL_DEFAULT_SESSION_TIMEOUT;
    o->window = ZKL_DEFAULT_WINDOW;
    *out = o;
    return ZKL_OK;
}

void zkl_options_free(zkl_options_t *o)
{
    if (o == NULL)
        return;
    zkl__free(o->hosts);
    zkl__free(o->chroot);
    zkl__creds_free(o->auth, o->nauth);
    zkl__creds_free(o->ids, o->nids);
    zkl__free(o);
}

static int set_string(char **slot, const char *s)
{
    char *d = NULL;

    if (s != NULL && (d = zkl__strdup(s)) == NULL)
        return ZKL_ENOMEM;
    zkl__free(*slot);
    *slot = d;
    return ZKL_OK;
}

int zkl_options_set_servers(zkl_options_t *o, const char *hosts)
{
    /* A '/' would be taken by the ZooKeeper client as a chroot. */
    if (o == NULL || hosts == NULL || hosts[0] == '\0' ||
        strchr(hosts, '/') != NULL)
        return ZKL_EINVAL;
    return set_string(&o->hosts, hosts);
}

int zkl_options_set_window(zkl_options_t *o, int n)
{
    if (o == NULL)
        return ZKL_EINVAL;
    o->window = n > 0 ? n : ZKL_DEFAULT_WINDOW;
    return ZKL_OK;
}

int zkl_options_set_session_timeout(zkl_options_t *o, int ms)
{
    if (o == NULL || ms < 1 || ms > 600000)
        return ZKL_EINVAL;
    o->session_timeout = ms;
    return ZKL_OK;
}

int zkl_options_set_chroot(zkl_options_t *o, const char *path)
{
    int rc;

    if (o == NULL)
        return ZKL_EINVAL;
    if (path == NULL || strcmp(path, "/") == 0)
        return set_string(&o->chroot, NULL);
    if ((rc = zkl__path_check(path, 0)) != ZKL_OK)
        return rc;
    return set_string(&o->chroot, path);
}

int zkl_options_set_conn_cb(zkl_options_t *o, zkl_conn_cb cb, void *arg)
{
    if (o == NULL)
        return ZKL_EINVAL;
    o->conn_cb = cb;
    o->conn_arg = arg;
    return ZKL_OK;
}

int zkl_options_add_auth(zkl_options_t *o, const char *scheme,
                         const char *credential)
{
    if (o == NULL || scheme == NULL || scheme[0] == '\0' ||
        credential == NULL)
        return ZKL_EINVAL;
    return zkl__creds_add(&o->auth, &o->nauth, scheme, credential);
}

int zkl_options_set_acl(zkl_options_t *o, zkl_acl_t mode)
{
    if (o == NULL || (mode != ZKL_ACL_OPEN && mode != ZKL_ACL_PRIVATE))
        return ZKL_EINVAL;
    o->acl_mode = mode;
    return ZKL_OK;
}

int zkl_options_add_acl_id(zkl_options_t *o, const char *scheme,
                           const char *id)
{
    int rc;

    if (o == NULL || scheme == NULL || scheme[0] == '\0' || id == NULL ||
        id[0] == '\0')
        return ZKL_EINVAL;
    if ((rc = zkl__creds_add(&o->ids, &o->nids, scheme, id)) == ZKL_OK)
        o->acl_mode = ZKL_ACL_PRIVATE;
    return rc;
}
