/* zklock ls and zklock revoke: one request each, answered within 15 s. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

struct ls {
    struct event_base *base;
    zkl_client_t *c;
    const char *path;
    int status, done, longfmt;
    int phase;        /* a semaphore: 1 listing its leases, 2 its mutex */
    size_t n;
};

static void ls_stop(struct ls *l, int status)
{
    l->status = status;
    l->done = 1;
    event_base_loopbreak(l->base);
}

static void ls_cb(zkl_client_t *c, int status, const char *const *names,
                  size_t n, void *arg);
static void ls_long_cb(zkl_client_t *c, int status, const zkl_contender_t *v,
                       size_t n, void *arg);

/* A semaphore's path has its "leases" and "locks" children and nothing
 * else: its contenders are the leases (holders), then the acquires
 * queued on its mutex. Returns 1 when the next listing is under way. */
static int ls_next(struct ls *l, int status, int semaphore)
{
    char sub[ZKL_PATH_MAX + 8];
    int rc;

    if (status != ZKL_OK || (l->phase == 0 && !semaphore) || l->phase == 2)
        return 0;
    l->phase++;
    snprintf(sub, sizeof sub, "%s/%s", l->path,
             l->phase == 1 ? "leases" : "locks");
    rc = l->longfmt ? zkl_contenders_ex(l->c, sub, ls_long_cb, l)
                    : zkl_contenders(l->c, sub, ls_cb, l);
    if (rc != ZKL_OK) {
        ls_stop(l, rc);
        return 1;
    }
    return 1;
}

static int semaphore_children(const char *const *names, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (strcmp(names[i], "leases") != 0 && strcmp(names[i], "locks") != 0)
            return 0;
    return n > 0;
}

static void ls_cb(zkl_client_t *c, int status, const char *const *names,
                  size_t n, void *arg)
{
    struct ls *l = arg;
    size_t i;

    (void)c;
    if (l->phase == 0 && ls_next(l, status, semaphore_children(names, n)))
        return;
    for (i = 0; i < n; i++)
        printf("%s\n", names[i]);
    if (!ls_next(l, status, 0))
        ls_stop(l, status);
}

static const char *kind_name(zkl_lock_kind_t k)
{
    switch (k) {
    case ZKL_KIND_MUTEX:
        return "mutex";
    case ZKL_KIND_READ:
        return "read";
    case ZKL_KIND_WRITE:
        return "write";
    case ZKL_KIND_LEASE:
        return "lease";
    case ZKL_KIND_LATCH:
        return "latch";
    case ZKL_KIND_OTHER:
        break;
    }
    return "other";
}

/* One line per contender: kind, "*" for a holder, name, data (unprintable
 * bytes escaped, so a line stays a line). */
static void ls_long_cb(zkl_client_t *c, int status, const zkl_contender_t *v,
                       size_t n, void *arg)
{
    struct ls *l = arg;
    const char *names[2] = {NULL, NULL};
    size_t i, j;

    (void)c;
    for (i = 0; i < n && i < 2; i++)
        names[i] = v[i].name;
    if (l->phase == 0 && n <= 2 &&
        ls_next(l, status, semaphore_children(names, n)))
        return;
    for (i = 0; i < n; i++) {
        printf("%-5s %s %s ", kind_name(v[i].kind), v[i].holds ? "*" : "-",
               v[i].name);
        if (v[i].data == NULL)
            fputs("(gone)", stdout);
        for (j = 0; v[i].data != NULL && j < v[i].len; j++) {
            unsigned char ch = (unsigned char)v[i].data[j];

            if (ch >= 0x20 && ch < 0x7f && ch != '\\')
                putchar(ch);
            else
                printf("\\x%02x", ch);
        }
        putchar('\n');
    }
    if (!ls_next(l, status, 0))
        ls_stop(l, status);
}

static void revoke_cb(zkl_client_t *c, int status, size_t n, void *arg)
{
    struct ls *l = arg;

    (void)c;
    l->n = n;
    ls_stop(l, status);
}

static void ls_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    ls_stop(arg, ZKL_ECONNLOSS);
}

/* ls and revoke: one request, answered within 15 s. */
int cmd_query(int argc, char **argv, int revoke)
{
    static const struct option longopts[] = {
        {"servers", required_argument, NULL, 's'},
        {"long", no_argument, NULL, 'l'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *hosts = NULL, *path, *node = NULL;
    struct timeval tv = {15, 0};
    struct event *tmo;
    struct ls l = {0};
    zkl_client_t *c;
    int opt, rc, longfmt = 0;

    optind = 1;
    while ((opt = getopt_long(argc, argv, revoke ? "+s:h" : "+s:lh",
                              longopts, NULL)) != -1) {
        switch (opt) {
        case 's':
            hosts = optarg;
            break;
        case 'l':
            longfmt = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (optind != argc - 1 && !(revoke && optind == argc - 2)) {
        usage(stderr);
        return EXIT_USAGE;
    }
    path = argv[optind];
    if (optind == argc - 2)
        node = argv[optind + 1];
    if (!path_ok(path))
        return EXIT_USAGE;
    l.base = event_base_new();
    if ((c = make_client(l.base, default_hosts(hosts), ZKL_DEFAULT_SESSION_TIMEOUT)) == NULL)
        return 1;
    l.c = c;
    l.path = path;
    l.longfmt = longfmt;
    if (revoke)
        rc = zkl_revoke(c, path, node, revoke_cb, &l);
    else if (longfmt)
        rc = zkl_contenders_ex(c, path, ls_long_cb, &l);
    else
        rc = zkl_contenders(c, path, ls_cb, &l);
    if (rc != ZKL_OK) {
        fprintf(stderr, "%s: %s: %s\n", prog, path, zkl_strerror(rc));
        zkl_client_free(c);
        event_base_free(l.base);
        return rc == ZKL_EINVAL || rc == ZKL_EBADPATH ? EXIT_USAGE : 1;
    }
    tmo = evtimer_new(l.base, ls_timeout, &l);
    evtimer_add(tmo, &tv);
    while (!l.done)
        event_base_dispatch(l.base);
    event_free(tmo);
    fflush(stdout);
    zkl_client_free(c);
    event_base_free(l.base);
    if (l.status != ZKL_OK) {
        fprintf(stderr, "%s: %s %s: %s\n", prog,
                revoke ? "revoking" : "listing", path,
                zkl_strerror(l.status));
        return 1;
    }
    if (revoke)
        printf("revocation requested from %zu holder%s\n", l.n,
               l.n == 1 ? "" : "s");
    return 0;
}
