/* zklock run and zklock elect: options, the lock (one path, a set of
 * paths, a lease, a leadership), what its events mean for the command,
 * and the exit status. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

void finish(struct run *r, int status)
{
    r->status = status;
    r->done = 1;
    event_base_loopbreak(r->base);
}

int run_release(struct run *r)
{
    return r->m != NULL ? zkl_multi_release(r->m) : zkl_lock_release(r->lk);
}

void run_cancel(struct run *r)
{
    if (r->m != NULL)
        zkl_multi_cancel(r->m);
    else
        zkl_lock_cancel(r->lk);
}


/* Why the acquire ended without the lock, in words (busy and timed
 * out not with -q), and the exit status. */
static int not_acquired(struct run *r, int status)
{
    switch (status) {
    case ZKL_ELOCKED:
        if (r->quiet)
            ;
        else if (r->elect)
            fprintf(stderr, "%s: %s has another leader\n", prog, r->what);
        else if (r->m != NULL)
            fprintf(stderr, "%s: %s: one of them is locked by another "
                    "holder\n", prog, r->what);
        else
            fprintf(stderr, "%s: %s is locked by another holder\n", prog,
                    r->what);
        return r->busy_code;
    case ZKL_ETIMEDOUT:
        /* Out of time while the connection was down is no contention. */
        if (!conn_is_up())
            return unreachable("%s not %s within %g s (-t): the connection "
                               "has been down for %.1f s", r->what,
                               r->elect ? "elected" : "acquired", r->wait_s,
                               conn_down_for());
        if (!r->quiet)
            fprintf(stderr, "%s: %s: timed out: not %s within %g s; %s\n",
                    prog, r->what, r->elect ? "elected" : "acquired",
                    r->wait_s, r->elect ? "another leader held on"
                                        : "others held it");
        return r->timeout_code;
    case ZKL_ECONNLOSS:
    case ZKL_ESESSION:
        return unreachable("%s: the connection was lost before the lock "
                           "was known (%s)", r->what, cli_strerror(status));
    case ZKL_EAUTH:
        return not_authorized(r->what);
    case ZKL_ELIMIT:
        fprintf(stderr, "%s: %s: the semaphore's holders use -L %d, not "
                "-L %d\n", prog, r->what, zkl_lease_recorded_limit(r->lk),
                zkl_lease_limit(r->lk));
        return EXIT_REFUSED;
    default:
        fprintf(stderr, "%s: %s not acquired: %s", prog, r->what,
                cli_strerror(status));
        /* The lock path's parents are made on demand, the chroot not. */
        if (status == ZKL_EZK && servers_chroot() != NULL)
            fprintf(stderr, "; is there a node %s (the chroot)? ZooKeeper "
                    "does not create it", servers_chroot());
        fputc('\n', stderr);
        return exit_for(status);
    }
}

/* The connection has been down --connect-timeout seconds (and every
 * as many after): waiting on for the lock, or for the confirmation of
 * its release once COMMAND is over, would be waiting without a word.
 * While COMMAND runs, the hold's own events (SUSPENDED, LOST) speak. */
static void down_too_long(void *arg)
{
    struct run *r = arg;

    if (r->done || r->guard > 0) /* the command runs: LOST will say */
        return;
    if (r->child_done) {
        fprintf(stderr, "%s: warning: the release of %s is not confirmed: "
                "the connection to ZooKeeper has been down for %.1f s; its "
                "node goes when the session expires\n", prog, r->what,
                conn_down_for());
        finish(r, r->status);
        return;
    }
    run_cancel(r);
    finish(r, unreachable("waiting for %s: the connection has been down "
                          "for %.1f s (--connect-timeout)", r->what,
                          conn_down_for()));
}

/* What a lock, a set and a leadership go through alike. */
static void on_event(struct run *r, zkl_lock_event_t ev, int status)
{
    switch (ev) {
    case ZKL_LOCK_ACQUIRED:
        start_child(r);
        break;
    case ZKL_LOCK_FAILED:
        if (!r->done)
            finish(r, not_acquired(r, status));
        break;
    case ZKL_LOCK_SUSPENDED:
        fprintf(stderr,
                "%s: warning: connection to ZooKeeper lost; the %s %s "
                "is uncertain (command keeps running)\n",
                prog, r->elect ? "leadership of" : "hold on", r->what);
        break;
    case ZKL_LOCK_RESTORED:
        if (r->elect)
            fprintf(stderr, "%s: connection to ZooKeeper restored; still "
                    "leader of %s\n", prog, r->what);
        else
            fprintf(stderr, "%s: connection to ZooKeeper restored; %s %s "
                    "still held\n", prog, r->what,
                    r->m != NULL ? "are" : "is");
        break;
    case ZKL_LOCK_LOST:
        r->lost = 1;
        fprintf(stderr, "%s: %s %s LOST: %s; sending SIGTERM to %s\n", prog,
                r->elect ? "leadership of" : r->m != NULL ? "a lock of"
                                                          : "lock",
                r->what, zkl_strerror(status), r->argv[0]);
        /* to its whole tree, SIGKILL after --kill-after (guard.c) */
        if (!command_terminate(r, 1))
            finish(r, EXIT_LOST);
        break;
    case ZKL_LOCK_REVOKE_REQUESTED:
        fprintf(stderr,
                "%s: revocation of %s requested; sending SIGTERM to %s\n",
                prog, r->what, r->argv[0]);
        command_terminate(r, 0); /* released when its tree is gone */
        break;
    case ZKL_LOCK_QUEUED: /* not asked for */
        break;
    case ZKL_LOCK_RELEASED:
        if (status != ZKL_OK && status != ZKL_ESESSION)
            fprintf(stderr, "%s: release of %s: %s\n", prog, r->what,
                    zkl_strerror(status));
        finish(r, r->status);
        break;
    }
}

static void lock_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                    void *arg)
{
    (void)lk;
    on_event(arg, ev, status);
}

static void multi_cb(zkl_multi_t *m, zkl_lock_event_t ev, int status,
                     void *arg)
{
    (void)m;
    on_event(arg, ev, status);
}


/* A semaphore's mutex and leases are children of its path, so a mutex
 * or read/write lock there would take them for foreign contenders and
 * refuse to run: a semaphore is refused on such a path, before it adds
 * anything. */
struct kind_check {
    struct event_base *base;
    int status, done, locks;
};

static void kind_check_cb(zkl_client_t *c, int status,
                          const zkl_contender_t *v, size_t n, void *arg)
{
    struct kind_check *k = arg;
    size_t i;

    (void)c;
    for (i = 0; i < n; i++)
        if (v[i].kind != ZKL_KIND_OTHER && v[i].kind != ZKL_KIND_LEASE)
            k->locks++;
    k->status = status;
    k->done = 1;
    event_base_loopbreak(k->base);
}

static int check_not_a_lock(struct run *r)
{
    struct kind_check k = {r->base, 0, 0, 0};
    int rc = zkl_contenders_ex(r->c, r->path, kind_check_cb, &k);

    if (rc == ZKL_OK) {
        while (!k.done)
            event_base_dispatch(r->base);
        rc = k.status;
    }
    if (rc == ZKL_EAUTH)
        return not_authorized(r->path);
    if (rc != ZKL_OK) {
        fprintf(stderr, "%s: %s: %s\n", prog, r->path, cli_strerror(rc));
        return exit_for(rc);
    }
    if (k.locks > 0) {
        fprintf(stderr, "%s: %s: %s\n", prog, r->path,
                cli_strerror(ZKL_EKIND));
        return EXIT_REFUSED;
    }
    return 0;
}

/* The lock paths and the command after the options: "PATH -- COMMAND"
 * or "PATH COMMAND" (one path, as always), or "PATH PATH... --
 * COMMAND": several paths, each absolute (a "--" after anything else is
 * COMMAND's own). Sets *npaths and returns the index of COMMAND, or -1
 * when there is none. */
static int split_paths(int argc, char **argv, int first, int *npaths)
{
    int k, i;

    *npaths = 1;
    if (first >= argc)
        return -1;
    for (k = first + 1; k < argc && strcmp(argv[k], "--") != 0; k++)
        ;
    for (i = first; k < argc && i < k && argv[i][0] == '/'; i++)
        ;
    if (k < argc && i == k)
        *npaths = k - first;
    else
        k = first; /* PATH COMMAND [ARGS...] */
    return k + 1 < argc ? k + 1 : -1;
}

/* Number of distinct paths (a path named twice is one lock). */
static int distinct(char **paths, int n)
{
    int i, j, d = 0;

    for (i = 0; i < n; i++) {
        for (j = 0; j < i && strcmp(paths[i], paths[j]) != 0; j++)
            ;
        d += j == i;
    }
    return d;
}

/* The set's paths, in the order it takes them, for messages. */
static char *set_text(const zkl_multi_t *m)
{
    size_t i;
    char *s = NULL;

    for (i = 0; i < zkl_multi_size(m); i++)
        if ((s = append(s, ", ", zkl_lock_path(zkl_multi_lock(m, i)))) ==
            NULL)
            break;
    return s;
}

/* A word that reads as a number of seconds: what flock's -w takes. */
static int is_number(const char *s)
{
    double v;

    return s[0] != '/' && parse_seconds(s, &v) == 0;
}

/* -E CODE: an exit status. */
static int exit_code(const char *arg, int *out)
{
    char *end;
    long v = strtol(arg, &end, 10);

    if (end == arg || *end != '\0' || v < 0 || v > 255)
        return usage_error("-E \"%s\" is not an exit status (0..255)", arg);
    *out = (int)v;
    return 0;
}

/* run (elect 0) and elect (elect 1). */
int cmd_run(int argc, char **argv, int elect)
{
#define COMMON_OPTS                                                        \
    {"servers", required_argument, NULL, 's'},                             \
        {"timeout", required_argument, NULL, 't'},                         \
        {"wait", required_argument, NULL, 't'},                            \
        {"nonblock", no_argument, NULL, 'n'},                              \
        {"nb", no_argument, NULL, 'n'},                                    \
        {"command", required_argument, NULL, 'c'},                         \
        {"conflict-exit-code", required_argument, NULL, 'E'},              \
        {"quiet", no_argument, NULL, 'q'},                                 \
        {"session-timeout", required_argument, NULL, OPT_SESSION_TIMEOUT}, \
        {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT}, \
        {"auth-file", required_argument, NULL, OPT_AUTH_FILE},             \
        {"auth", required_argument, NULL, OPT_AUTH_REFUSED},               \
        {"password", required_argument, NULL, OPT_AUTH_REFUSED},           \
        {"acl", required_argument, NULL, OPT_ACL},                         \
        {"verbose", no_argument, NULL, OPT_VERBOSE},                       \
        {"kill-after", required_argument, NULL, OPT_KILL_AFTER},           \
        {"help", no_argument, NULL, 'h'}
    static const struct option run_opts[] = {
        COMMON_OPTS,
        {"read", no_argument, NULL, 'r'},
        {"shared", no_argument, NULL, 'r'}, /* flock's --shared */
        {"write", no_argument, NULL, 'w'},
        {"owner", required_argument, NULL, OPT_OWNER},
        {"revocable", no_argument, NULL, OPT_REVOCABLE},
        {"leases", required_argument, NULL, 'L'},
        {NULL, 0, NULL, 0}};
    static const struct option elect_opts[] = {
        COMMON_OPTS,
        {"id", required_argument, NULL, OPT_ID},
        {NULL, 0, NULL, 0}};
#undef COMMON_OPTS
    struct run r;
    struct conn_opts co;
    long leases = 0;
    char *end, **paths, *sh_argv[4] = {"/bin/sh", "-c", NULL, NULL};
    char idbuf[HOST_NAME_MAX + 32];
    const char *owner = NULL, *id = NULL, *script = NULL;
    long timeout_ms = -1;
    int opt, rc, have_t = 0, have_n = 0, revocable = 0, npaths, cmd, i;
    double start, limit;
    const char *limit_name = "--connect-timeout";
    zkl_lock_kind_t kind = ZKL_KIND_MUTEX;
    zkl_lock_kind_t kinds[ZKL_MULTI_MAX];

    memset(&r, 0, sizeof r);
    conn_opts_init(&co);
    r.wait_s = -1;
    r.kill_after = 10;
    r.elect = elect;
    r.busy_code = EXIT_BUSY;
    r.timeout_code = EXIT_TIMEDOUT;
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv,
                              elect ? "+:s:t:nc:E:qh" : "+:s:t:nc:E:qrwL:h",
                              elect ? elect_opts : run_opts, NULL)) != -1) {
        if ((rc = conn_option(&co, opt, optarg)) != 0) {
            if (rc < 0)
                return EXIT_USAGE;
            continue;
        }
        switch (opt) {
        case 'r':
        case 'w':
        case 'L':
            if (kind != ZKL_KIND_MUTEX)
                return usage_error("-r, -w and -L exclude each other");
            kind = opt == 'r'   ? ZKL_KIND_READ
                   : opt == 'w' ? ZKL_KIND_WRITE
                                : ZKL_KIND_LEASE;
            if (opt != 'L')
                break;
            errno = 0;
            leases = strtol(optarg, &end, 10);
            if (errno != 0 || end == optarg || *end != '\0' || leases < 1 ||
                leases > ZKL_LEASES_MAX)
                return usage_error("bad -L value \"%s\" (leases: 1 to %d)",
                                   optarg, ZKL_LEASES_MAX);
            break;
        case OPT_OWNER:
            owner = optarg;
            break;
        case OPT_ID:
            id = optarg;
            break;
        case OPT_REVOCABLE:
            revocable = 1;
            break;
        case OPT_KILL_AFTER:
            if (parse_seconds(optarg, &r.kill_after) != 0)
                return usage_error("bad --kill-after value \"%s\" (seconds)",
                                   optarg);
            break;
        case 't':
            if (parse_seconds(optarg, &r.wait_s) != 0)
                return usage_error("bad -t value \"%s\" (seconds)", optarg);
            have_t = 1;
            break;
        case 'n':
            have_n = 1;
            break;
        case 'c':
            script = optarg;
            break;
        case 'E':
            if (exit_code(optarg, &r.busy_code) != 0)
                return EXIT_USAGE;
            r.timeout_code = r.busy_code;
            break;
        case 'q':
            r.quiet = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            return getopt_error(opt, argv);
        }
    }
    if (have_t && have_n)
        return usage_error("-t and -n exclude each other");
    /* flock's -w is a timeout; here it is the write side. */
    if (kind == ZKL_KIND_WRITE && optind < argc && is_number(argv[optind]))
        return usage_error("-w is the write side of a read/write lock; for "
                           "a timeout use -t %s (flock's -w)", argv[optind]);
    /* flock's order too: LOCKPATH -c STRING. */
    if (script == NULL && argc - optind == 3 &&
        (strcmp(argv[optind + 1], "-c") == 0 ||
         strcmp(argv[optind + 1], "--command") == 0))
        script = argv[optind + 2], argc = optind + 1;
    if (optind >= argc)
        return usage_error("no %s given", elect ? "PATH" : "LOCKPATH");
    if (script != NULL) {
        for (i = optind; i < argc; i++)
            if (strcmp(argv[i], "--") == 0)
                return usage_error("-c STRING is the command: no COMMAND "
                                   "after --");
        npaths = argc - optind;
        sh_argv[2] = (char *)script;
        r.argv = sh_argv;
    } else if ((cmd = split_paths(argc, argv, optind, &npaths)) < 0) {
        return usage_error("no COMMAND after %s (LOCKPATH -- COMMAND, or "
                           "-c STRING)", npaths > 1 ? "the lock paths"
                                                    : argv[optind]);
    } else {
        r.argv = argv + cmd;
    }
    paths = argv + optind;
    for (i = 0; i < npaths; i++)
        if (!path_ok(paths[i]))
            return EXIT_USAGE;
    if (npaths > ZKL_MULTI_MAX)
        return usage_error("at most %d lock paths", ZKL_MULTI_MAX);
    if (distinct(paths, npaths) == 1)
        npaths = 1; /* one lock, named more than once */
    else if (elect)
        return usage_error("elect takes one PATH");
    else if (kind == ZKL_KIND_LEASE)
        return usage_error("-L takes one lock path (a semaphore cannot be "
                           "part of a set)");
    else if (revocable)
        return usage_error("--revocable takes one lock path (a set cannot "
                           "be revoked)");
    else if (owner != NULL)
        return usage_error("--owner takes one lock path (a set's locks "
                           "carry the default data)");
    r.path = paths[0];
    if (elect && id == NULL) {
        char host[HOST_NAME_MAX + 1];

        if (gethostname(host, sizeof host) != 0)
            snprintf(host, sizeof host, "localhost");
        host[sizeof host - 1] = '\0';
        snprintf(idbuf, sizeof idbuf, "%s:%ld", host, (long)getpid());
        id = idbuf;
    }

    signal(SIGPIPE, SIG_IGN);
    start = now_s();
    r.base = event_base_new();
    if ((r.c = open_client(r.base, &co, &rc)) == NULL) {
        event_base_free(r.base);
        return rc;
    }
    /* -t bounds the whole wait, connecting included. */
    limit = co.connect_s;
    if (have_t && r.wait_s > 0 && (limit <= 0 || r.wait_s < limit)) {
        limit = r.wait_s;
        limit_name = "-t";
    }
    if ((rc = await_session(limit, limit_name)) != 0) {
        close_client();
        event_base_free(r.base);
        return rc;
    }
    if (have_n || (have_t && r.wait_s == 0)) {
        timeout_ms = 0;
    } else if (have_t) {
        timeout_ms = (long)((r.wait_s - (now_s() - start)) * 1000.0 + 0.5);
        if (timeout_ms < 1)
            timeout_ms = 1;
    }
    if (kind == ZKL_KIND_LEASE && (rc = check_not_a_lock(&r)) != 0) {
        close_client();
        event_base_free(r.base);
        return rc;
    }
    if (npaths > 1) {
        for (i = 0; i < npaths; i++)
            kinds[i] = kind;
        if ((rc = zkl_multi_new(&r.m, r.c, (const char *const *)paths,
                                kinds, (size_t)npaths, multi_cb, &r)) ==
            ZKL_OK) {
            if ((r.what = set_text(r.m)) == NULL)
                rc = ZKL_ENOMEM;
            else
                rc = zkl_multi_acquire(r.m, timeout_ms);
        }
    } else {
        r.what = strdup(r.path);
        rc = r.what == NULL ? ZKL_ENOMEM
             : elect        ? zkl_latch_new(&r.lk, r.c, r.path, id, lock_cb,
                                            &r)
             : kind == ZKL_KIND_LEASE
                 ? zkl_lease_new(&r.lk, r.c, r.path, (int)leases, lock_cb,
                                 &r)
                 : zkl_lock_new_kind(&r.lk, r.c, r.path, kind, lock_cb, &r);
        if (rc == ZKL_OK && owner != NULL)
            rc = zkl_lock_set_data(r.lk, owner, strlen(owner));
        if (rc == ZKL_OK && !elect)
            rc = zkl_lock_set_revocable(r.lk, revocable);
        if (rc == ZKL_OK)
            rc = zkl_lock_acquire(r.lk, timeout_ms);
    }
    if (rc != ZKL_OK) {
        if (r.what == NULL)
            r.what = strdup(r.path);
        rc = rc == ZKL_ENOMEM ? (fprintf(stderr, "%s: out of memory\n",
                                         prog),
                                 EXIT_INTERNAL)
                              : not_acquired(&r, rc);
        zkl_multi_free(r.m);
        zkl_lock_free(r.lk);
        close_client();
        event_base_free(r.base);
        free(r.what);
        return rc;
    }
    watch_connection(down_too_long, &r);
    if (command_signals(&r) != 0) {
        run_cancel(&r);
        r.status = EXIT_INTERNAL;
        r.done = 1;
    }
    while (!r.done)
        event_base_dispatch(r.base);
    command_free(&r);
    zkl_multi_free(r.m);
    zkl_lock_free(r.lk);
    watch_connection(NULL, NULL);
    settle(r.base, r.c);
    close_client(); /* closing the session removes any node left */
    event_base_free(r.base);
    free(r.what);
    return r.status;
}
