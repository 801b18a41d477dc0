/* The options builder: every setter, and the defaults the library and
 * the CLI share (ZKL_DEFAULT_* in zklock.h). Owns nothing beyond the
 * zkl_options_t it hands out. */
#include <stdarg.h>
#include <stdio.h>
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
    zkl__secure_free(o->secure);
    zkl__free(o);
}

/* Writes the fault into buf (when there is one); ZKL_EINVAL. */
static int fault(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fault(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;

    if (buf != NULL && size > 0) {
        va_start(ap, fmt);
        vsnprintf(buf, size, fmt, ap);
        va_end(ap);
    }
    return ZKL_EINVAL;
}

/* s[0..n) for a message: at most 40 bytes, bytes that are not printable
 * ASCII (and quotes, backslashes) as \xhh, "..." when cut. */
static const char *shown(char out[200], const char *s, size_t n)
{
    size_t i, o = 0;

    for (i = 0; i < n && i < 40; i++) {
        unsigned char ch = (unsigned char)s[i];

        if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\')
            out[o++] = (char)ch;
        else
            o += (size_t)snprintf(out + o, 5, "\\x%02x", ch);
    }
    if (i < n) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
    return out;
}

/* What the ZooKeeper client's resolve_hosts() (3.8) takes, stated as
 * rules: entries split on ',', leading blanks skipped, the port after
 * the last ':'. It skips empty entries and lets through ports that
 * getaddrinfo() then refuses (0x50, 99999), dropping that server in
 * silence; those are refused here. */
int zkl_servers_explain(const char *hosts, char *buf, size_t size)
{
    const char *e, *end, *colon, *h, *c;
    char q[200], qp[200];
    size_t k;

    if (buf != NULL && size > 0)
        buf[0] = '\0';
    if (hosts == NULL)
        return fault(buf, size, "no server list (NULL)");
    if (hosts[0] == '\0')
        return fault(buf, size, "the server list is empty");
    if ((c = strchr(hosts, '/')) != NULL)
        return fault(buf, size, "\"%s\" is a chroot, not a server "
                     "(zkl_options_set_chroot() takes it)",
                     shown(q, c, strlen(c)));
    for (e = hosts, k = 1;; e = end + 1, k++) {
        unsigned long port = 0;

        if ((end = strchr(e, ',')) == NULL)
            end = e + strlen(e);
        for (h = e; h < end && (*h == ' ' || *h == '\t'); h++)
            ;
        if (h == end)
            return fault(buf, size, "server %zu of the list is empty (a "
                         "comma too many?)", k);
        for (colon = NULL, c = h; c < end; c++)
            if (*c == ':')
                colon = c;
        shown(q, h, (size_t)(end - h));
        if (colon == NULL)
            return fault(buf, size, "server %zu, \"%s\", has no port "
                         "(host:port)", k, q);
        if (colon == h)
            return fault(buf, size, "server %zu, \"%s\", has no host "
                         "before the port", k, q);
        if (colon + 1 == end || colon[-1] == ':')
            return fault(buf, size, "server %zu, \"%s\", has no port "
                         "after the last ':' (host:port; an IPv6 "
                         "address without brackets, ::1:2181)", k, q);
        for (c = colon + 1; c < end; c++) {
            if (*c < '0' || *c > '9')
                return fault(buf, size, "server %zu, \"%s\": port \"%s\" "
                             "is not a number", k, q,
                             shown(qp, colon + 1, (size_t)(end - colon - 1)));
            if (port <= 65535)
                port = port * 10 + (unsigned long)(*c - '0');
        }
        if (port < 1 || port > 65535)
            return fault(buf, size, "server %zu, \"%s\": port %s is "
                         "outside 1..65535", k, q,
                         shown(qp, colon + 1, (size_t)(end - colon - 1)));
        if (h[0] == '[')
            return fault(buf, size, "server %zu, \"%s\": write an IPv6 "
                         "address without brackets (::1:2181; the port is "
                         "what follows the last ':')", k, q);
        for (c = h; c < colon; c++)
            if ((unsigned char)*c <= ' ' || *c == 0x7f)
                return fault(buf, size, "server %zu, \"%s\": the host has "
                             "a blank or a control character in it", k, q);
        if (*end == '\0')
            return ZKL_OK;
    }
}

int zkl_options_set_servers(zkl_options_t *o, const char *hosts)
{
    /* A '/' would be taken by the ZooKeeper client as a chroot. */
    if (o == NULL || zkl_servers_explain(hosts, NULL, 0) != ZKL_OK)
        return ZKL_EINVAL;
    return zkl__strset(&o->hosts, hosts);
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
        return zkl__strset(&o->chroot, NULL);
    if ((rc = zkl__path_check(path, 0)) != ZKL_OK)
        return rc;
    return zkl__strset(&o->chroot, path);
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
