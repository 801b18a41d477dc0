/* zklock ls and zklock revoke: the contenders of a path, in queue
 * order; asking its holders to let go, and watching whether they do. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
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

static void ls_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    ls_stop(arg, ZKL_ECONNLOSS);
}

/* Runs the loop until l is answered, for at most 15 s (ZKL_ECONNLOSS
 * then). */
static int ls_wait(struct ls *l)
{
    struct timeval tv = {15, 0};
    struct event *tmo = evtimer_new(l->base, ls_timeout, l);

    evtimer_add(tmo, &tv);
    while (!l->done)
        event_base_dispatch(l->base);
    event_free(tmo);
    return l->status;
}

/* ls's or revoke's failure, in words, and its exit status. */
static int query_failed(const char *doing, const char *path, int status)
{
    if (status == ZKL_EAUTH)
        return not_authorized(path);
    if (status == ZKL_ECONNLOSS || status == ZKL_ESESSION)
        return unreachable("%s %s: no answer within 15 s (%s)", doing, path,
                           cli_strerror(status));
    fprintf(stderr, "%s: %s %s: %s\n", prog, doing, path,
            cli_strerror(status));
    return exit_for(status);
}

/* ---- revoke ---- */

struct revoke;

/* One node asked to let go: what it was, what became of it. */
struct target {
    struct revoke *rv;
    char *name, *data;
    size_t len;
    int status;       /* of the request: 0, or why it was not written */
    int answered;
    int written;      /* the request is in its node (not gone first) */
    int gone;         /* its node is gone: let go */
    double gone_at;
};

struct revoke {
    struct ls l;
    const char *node;
    struct target *t;
    size_t n, answered;
    size_t contenders, holders;
};

static void print_data(const char *d, size_t len)
{
    size_t j;

    if (d == NULL || len == 0) {
        fputs("no data", stdout);
        return;
    }
    putchar('"');
    for (j = 0; j < len && j < 100; j++) {
        unsigned char ch = (unsigned char)d[j];

        if (ch >= 0x20 && ch < 0x7f && ch != '\\' && ch != '"')
            putchar(ch);
        else
            printf("\\x%02x", ch);
    }
    fputs(j < len ? "...\"" : "\"", stdout);
}

/* Whom to ask: NODE, or the holders zkl_revoke() would ask (mutex,
 * read and write nodes that hold), with their data as it was. */
static void targets_cb(zkl_client_t *c, int status, const zkl_contender_t *v,
                       size_t n, void *arg)
{
    struct revoke *rv = arg;
    size_t i;

    (void)c;
    if (status == ZKL_OK && (rv->t = calloc(n + 1, sizeof *rv->t)) == NULL)
        status = ZKL_ENOMEM;
    rv->contenders = n;
    for (i = 0; status == ZKL_OK && i < n; i++) {
        struct target *t = &rv->t[rv->n];

        rv->holders += v[i].holds != 0;
        if (rv->node != NULL ? strcmp(v[i].name, rv->node) != 0
                             : !v[i].holds || v[i].kind > ZKL_KIND_WRITE)
            continue;
        t->rv = rv;
        t->name = strdup(v[i].name);
        t->data = v[i].data != NULL ? malloc(v[i].len + 1) : NULL;
        t->len = v[i].len;
        rv->n++;
        if (t->name == NULL || (v[i].data != NULL && t->data == NULL))
            status = ZKL_ENOMEM;
        else if (t->data != NULL)
            memcpy(t->data, v[i].data, v[i].len + 1);
    }
    ls_stop(&rv->l, status);
}

static void asked_cb(zkl_client_t *c, int status, size_t n, void *arg)
{
    struct target *t = arg;
    struct revoke *rv = t->rv;

    (void)c;
    t->answered = 1;
    t->status = status;
    t->written = status == ZKL_OK && n > 0;
    t->gone = status == ZKL_OK && n == 0; /* went before it was asked */
    if (++rv->answered == rv->n)
        ls_stop(&rv->l, ZKL_OK);
}

/* A listing of the path while waiting: the asked nodes not in it have
 * let go. */
static void relist_cb(zkl_client_t *c, int status, const char *const *names,
                      size_t n, void *arg)
{
    struct revoke *rv = arg;
    size_t i, j;

    (void)c;
    for (i = 0; status == ZKL_OK && i < rv->n; i++) {
        for (j = 0; j < n && strcmp(names[j], rv->t[i].name) != 0; j++)
            ;
        if (j == n && !rv->t[i].gone) {
            rv->t[i].gone = 1;
            rv->t[i].gone_at = now_s();
        }
    }
    ls_stop(&rv->l, status);
}

static size_t still_held(const struct revoke *rv)
{
    size_t i, k = 0;

    for (i = 0; i < rv->n; i++)
        k += rv->t[i].written && !rv->t[i].gone;
    return k;
}

static void tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    event_base_loopbreak(arg);
}

/* Lists the path every 200 ms until every asked node is gone or wait_s
 * has passed. 0, or a listing's error. */
static int watch_asked(struct revoke *rv, double wait_s)
{
    double until = now_s() + wait_s;
    struct timeval tv = {0, 200000};
    struct event *t = evtimer_new(rv->l.base, tick, rv->l.base);
    int rc = ZKL_OK;

    while (rc == ZKL_OK && still_held(rv) > 0 && now_s() < until) {
        evtimer_add(t, &tv);
        event_base_dispatch(rv->l.base);
        rv->l.done = 0;
        if ((rc = zkl_contenders(rv->l.c, rv->l.path, relist_cb, rv)) ==
            ZKL_OK)
            rc = ls_wait(&rv->l);
    }
    event_free(t);
    return rc;
}

/* The report, on standard output; the exit status: 0 when every asked
 * holder let go (with --wait 0: was asked), EXIT_TIMEDOUT when one
 * still holds. */
static int revoke_report(const struct revoke *rv, double wait_s,
                         double asked_at)
{
    size_t i;
    int rc = 0;

    for (i = 0; i < rv->n; i++) {
        const struct target *t = &rv->t[i];

        printf("%s (", t->name);
        print_data(t->data, t->len);
        if (!t->written && t->gone) {
            printf("): gone before it was asked\n");
        } else if (t->gone) {
            printf("): asked; let go after %.1f s\n", t->gone_at - asked_at);
        } else if (wait_s == 0) {
            printf("): asked (not waiting: --wait 0)\n");
        } else {
            printf("): asked; still holds after %g s: not revocable (a "
                   "revocable holder, zklock run --revocable or a Curator "
                   "lock made revocable, lets go when asked%s), or slow to "
                   "stop\n", wait_s,
                   t->len > 0 ? ", and by default carries no data" : "");
            rc = EXIT_TIMEDOUT;
        }
    }
    return rc;
}

static int cmd_revoke(struct ls *l, const char *node, double wait_s)
{
    struct revoke rv;
    double asked_at;
    size_t i;
    int rc;

    memset(&rv, 0, sizeof rv);
    rv.l = *l;
    rv.node = node;
    if ((rc = zkl_contenders_ex(rv.l.c, rv.l.path, targets_cb, &rv)) ==
        ZKL_OK)
        rc = ls_wait(&rv.l);
    if (rc != ZKL_OK) {
        rc = query_failed("revoking", rv.l.path, rc);
        goto out;
    }
    if (rv.n == 0) {
        if (node != NULL)
            fprintf(stderr, "%s: %s has no contender named \"%s\" (zklock "
                    "ls lists them); nothing asked\n", prog, rv.l.path, node);
        else if (rv.holders > 0)
            fprintf(stderr, "%s: %s: its holders are not mutex, read or "
                    "write nodes (a semaphore's leases, a leader), which "
                    "revocation does not reach; nothing asked\n", prog,
                    rv.l.path);
        else
            fprintf(stderr, "%s: %s has no holder; nothing asked\n", prog,
                    rv.l.path);
        rc = EXIT_BUSY;
        goto out;
    }
    rv.l.done = 0;
    for (i = 0; i < rv.n; i++) {
        rc = zkl_revoke(rv.l.c, rv.l.path, rv.t[i].name, asked_cb, &rv.t[i]);
        if (rc != ZKL_OK) {
            rv.t[i].answered = 1;
            rv.t[i].status = rc;
            if (++rv.answered == rv.n)
                ls_stop(&rv.l, ZKL_OK);
        }
    }
    if ((rc = ls_wait(&rv.l)) != ZKL_OK) {
        rc = query_failed("revoking", rv.l.path, rc);
        goto out;
    }
    asked_at = now_s();
    for (i = 0; i < rv.n; i++)
        if (rv.t[i].status != ZKL_OK) {
            rc = query_failed("revoking", rv.l.path, rv.t[i].status);
            goto out;
        }
    if (wait_s > 0 && (rc = watch_asked(&rv, wait_s)) != ZKL_OK) {
        rc = query_failed("revoking", rv.l.path, rc);
        goto out;
    }
    rc = revoke_report(&rv, wait_s, asked_at);
out:
    for (i = 0; rv.t != NULL && i < rv.n; i++) {
        free(rv.t[i].name);
        free(rv.t[i].data);
    }
    free(rv.t);
    return rc;
}

/* ls and revoke: one request (revoke: a listing, the requests, and
 * listings while it waits), each answered within 15 s. */
int cmd_query(int argc, char **argv, int revoke)
{
    static const struct option longopts[] = {
        {"servers", required_argument, NULL, 's'},
        {"long", no_argument, NULL, 'l'},
        {"wait", required_argument, NULL, OPT_WAIT},
        {"session-timeout", required_argument, NULL, OPT_SESSION_TIMEOUT},
        {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
        {"auth-file", required_argument, NULL, OPT_AUTH_FILE},
        {"auth", required_argument, NULL, OPT_AUTH_REFUSED},
        {"password", required_argument, NULL, OPT_AUTH_REFUSED},
        SECURE_OPTS,
        {"verbose", no_argument, NULL, OPT_VERBOSE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *path, *node = NULL;
    struct conn_opts co;
    struct ls l = {0};
    double wait_s = 5;
    int opt, rc, longfmt = 0;

    conn_opts_init(&co);
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, revoke ? "+:s:h" : "+:s:lh",
                              longopts, NULL)) != -1) {
        if (opt != OPT_ACL && (rc = conn_option(&co, opt, optarg)) != 0) {
            if (rc < 0)
                return EXIT_USAGE;
            continue;
        }
        switch (opt) {
        case 'l':
            longfmt = 1;
            break;
        case OPT_WAIT:
            if (!revoke)
                return usage_error("--wait is revoke's");
            if (parse_seconds(optarg, &wait_s) != 0)
                return usage_error("bad --wait value \"%s\" (seconds)",
                                   optarg);
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            return getopt_error(opt, argv);
        }
    }
    if (optind >= argc)
        return usage_error("no LOCKPATH given");
    if (optind < argc - (revoke ? 2 : 1))
        return usage_error("%s takes one LOCKPATH%s: \"%s\" is one too many",
                           revoke ? "revoke" : "ls", revoke ? " and a NODE" : "",
                           argv[argc - 1]);
    path = argv[optind];
    if (optind == argc - 2)
        node = argv[optind + 1];
    if (!path_ok(path))
        return EXIT_USAGE;
    if (node != NULL && (node[0] == '\0' || strchr(node, '/') != NULL ||
                         strcmp(node, ".") == 0 || strcmp(node, "..") == 0))
        return usage_error("bad NODE \"%s\": a child name as zklock ls "
                           "prints it, without '/'", node);
    l.base = event_base_new();
    if ((l.c = open_client(l.base, &co, &rc)) == NULL) {
        event_base_free(l.base);
        return rc;
    }
    if ((rc = await_session(co.connect_s, "--connect-timeout")) != 0)
        goto out;
    l.path = path;
    l.longfmt = longfmt;
    if (revoke) {
        rc = cmd_revoke(&l, node, wait_s);
        goto out;
    }
    rc = longfmt ? zkl_contenders_ex(l.c, path, ls_long_cb, &l)
                 : zkl_contenders(l.c, path, ls_cb, &l);
    if (rc == ZKL_OK)
        rc = ls_wait(&l);
    fflush(stdout);
    rc = rc != ZKL_OK ? query_failed("listing", path, rc) : 0;
out:
    fflush(stdout);
    close_client();
    event_base_free(l.base);
    return rc;
}
