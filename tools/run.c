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
        SECURE_OPTS,                                                       \
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

/* What the command line asks for; the parts that the run itself keeps
 * (-t, -E, -q, --kill-after) go straight into struct run. */
struct args {
    struct conn_opts co;
    zkl_lock_kind_t kind;
    long leases;              /* -L */
    const char *owner, *id, *script;
    int have_t, have_n, revocable;
    char **paths;
    int npaths;
    char *sh_argv[4];         /* /bin/sh -c STRING */
    char idbuf[HOST_NAME_MAX + 32];
};

/* Returned by the steps below to go on: anything else is the exit
 * status. */
#define GO (-1)

/* One option (not a connection option) into a or r. */
static int one_option(int opt, struct args *a, struct run *r, char **argv)
{
    char *end;

    switch (opt) {
    case 'r':
    case 'w':
    case 'L':
        if (a->kind != ZKL_KIND_MUTEX)
            return usage_error("-r, -w and -L exclude each other");
        a->kind = opt == 'r'   ? ZKL_KIND_READ
                  : opt == 'w' ? ZKL_KIND_WRITE
                               : ZKL_KIND_LEASE;
        if (opt != 'L')
            return GO;
        errno = 0;
        a->leases = strtol(optarg, &end, 10);
        if (errno != 0 || end == optarg || *end != '\0' || a->leases < 1 ||
            a->leases > ZKL_LEASES_MAX)
            return usage_error("bad -L value \"%s\" (leases: 1 to %d)",
                               optarg, ZKL_LEASES_MAX);
        return GO;
    case OPT_OWNER:
        a->owner = optarg;
        return GO;
    case OPT_ID:
        a->id = optarg;
        return GO;
    case OPT_REVOCABLE:
        a->revocable = 1;
        return GO;
    case OPT_KILL_AFTER:
        if (parse_seconds(optarg, &r->kill_after) != 0)
            return usage_error("bad --kill-after value \"%s\" (seconds)",
                               optarg);
        return GO;
    case 't':
        if (parse_seconds(optarg, &r->wait_s) != 0)
            return usage_error("bad -t value \"%s\" (seconds)", optarg);
        a->have_t = 1;
        return GO;
    case 'n':
        a->have_n = 1;
        return GO;
    case 'c':
        a->script = optarg;
        return GO;
    case 'E':
        if (exit_code(optarg, &r->busy_code) != 0)
            return EXIT_USAGE;
        r->timeout_code = r->busy_code;
        return GO;
    case 'q':
        r->quiet = 1;
        return GO;
    case 'h':
        usage(stdout);
        return 0;
    default:
        return getopt_error(opt, argv);
    }
}

/* The lock paths and the command: after the options, or flock's
 * "LOCKPATH -c STRING". */
static int operands(int argc, char **argv, int elect, struct args *a,
                    struct run *r)
{
    int i, cmd;

    /* flock's -w is a timeout; here it is the write side. */
    if (a->kind == ZKL_KIND_WRITE && optind < argc && is_number(argv[optind]))
        return usage_error("-w is the write side of a read/write lock; for "
                           "a timeout use -t %s (flock's -w)", argv[optind]);
    /* flock's order too: LOCKPATH -c STRING. */
    if (a->script == NULL && argc - optind == 3 &&
        (strcmp(argv[optind + 1], "-c") == 0 ||
         strcmp(argv[optind + 1], "--command") == 0))
        a->script = argv[optind + 2], argc = optind + 1;
    if (optind >= argc)
        return usage_error("no %s given", elect ? "PATH" : "LOCKPATH");
    if (a->script != NULL) {
        for (i = optind; i < argc; i++)
            if (strcmp(argv[i], "--") == 0)
                return usage_error("-c STRING is the command: no COMMAND "
                                   "after --");
        a->npaths = argc - optind;
        a->sh_argv[0] = "/bin/sh";
        a->sh_argv[1] = "-c";
        a->sh_argv[2] = (char *)a->script;
        r->argv = a->sh_argv;
    } else if ((cmd = split_paths(argc, argv, optind, &a->npaths)) < 0) {
        return usage_error("no COMMAND after %s (LOCKPATH -- COMMAND, or "
                           "-c STRING)", a->npaths > 1 ? "the lock paths"
                                                       : argv[optind]);
    } else {
        r->argv = argv + cmd;
    }
    a->paths = argv + optind;
    return GO;
}

/* What the paths allow: one lock named more than once is one lock; a
 * set takes neither elect, -L, --revocable nor --owner. */
static int check_paths(struct args *a, int elect)
{
    int i;

    for (i = 0; i < a->npaths; i++)
        if (!path_ok(a->paths[i]))
            return EXIT_USAGE;
    if (a->npaths > ZKL_MULTI_MAX)
        return usage_error("at most %d lock paths", ZKL_MULTI_MAX);
    if (distinct(a->paths, a->npaths) == 1)
        a->npaths = 1;
    else if (elect)
        return usage_error("elect takes one PATH");
    else if (a->kind == ZKL_KIND_LEASE)
        return usage_error("-L takes one lock path (a semaphore cannot be "
                           "part of a set)");
    else if (a->revocable)
        return usage_error("--revocable takes one lock path (a set cannot "
                           "be revoked)");
    else if (a->owner != NULL)
        return usage_error("--owner takes one lock path (a set's locks "
                           "carry the default data)");
    return GO;
}

/* The command line, whole: options, operands, their checks. */
static int parse(int argc, char **argv, int elect, struct args *a,
                 struct run *r)
{
    int opt, rc;

    memset(a, 0, sizeof *a);
    conn_opts_init(&a->co);
    a->kind = ZKL_KIND_MUTEX;
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv,
                              elect ? "+:s:t:nc:E:qh" : "+:s:t:nc:E:qrwL:h",
                              elect ? elect_opts : run_opts, NULL)) != -1) {
        if ((rc = conn_option(&a->co, opt, optarg)) != 0) {
            if (rc < 0)
                return EXIT_USAGE;
            continue;
        }
        if ((rc = one_option(opt, a, r, argv)) != GO)
            return rc;
    }
    if (a->have_t && a->have_n)
        return usage_error("-t and -n exclude each other");
    if ((rc = operands(argc, argv, elect, a, r)) != GO)
        return rc;
    if ((rc = check_paths(a, elect)) != GO)
        return rc;
    r->path = a->paths[0];
    if (elect && a->id == NULL) {
        char host[HOST_NAME_MAX + 1];

        if (gethostname(host, sizeof host) != 0)
            snprintf(host, sizeof host, "localhost");
        host[sizeof host - 1] = '\0';
        snprintf(a->idbuf, sizeof a->idbuf, "%s:%ld", host, (long)getpid());
        a->id = a->idbuf;
    }
    return GO;
}

/* A session, within --connect-timeout or -t, whichever is shorter: -t
 * bounds the whole wait, connecting included. */
static int connect_session(struct run *r, struct args *a)
{
    double limit = a->co.connect_s;
    const char *limit_name = "--connect-timeout";
    int rc;

    if ((r->c = open_client(r->base, &a->co, &rc)) == NULL)
        return rc;
    if (a->have_t && r->wait_s > 0 && (limit <= 0 || r->wait_s < limit)) {
        limit = r->wait_s;
        limit_name = "-t";
    }
    if ((rc = await_session(limit, limit_name)) != 0) {
        close_client();
        return rc;
    }
    return GO;
}

/* What is left of -t for the acquire (-1: wait, 0: try once). */
static long acquire_timeout(const struct run *r, const struct args *a,
                            double start)
{
    long ms;

    if (a->have_n || (a->have_t && r->wait_s == 0))
        return 0;
    if (!a->have_t)
        return -1;
    ms = (long)((r->wait_s - (now_s() - start)) * 1000.0 + 0.5);
    return ms < 1 ? 1 : ms;
}

/* The lock, made and asked for: a set, a leadership, a lease, or one
 * lock of a kind. */
static int start_acquire(struct run *r, struct args *a, long timeout_ms)
{
    zkl_lock_kind_t kinds[ZKL_MULTI_MAX];
    int rc, i;

    if (a->npaths > 1) {
        for (i = 0; i < a->npaths; i++)
            kinds[i] = a->kind;
        if ((rc = zkl_multi_new(&r->m, r->c, (const char *const *)a->paths,
                                kinds, (size_t)a->npaths, multi_cb, r)) !=
            ZKL_OK)
            return rc;
        if ((r->what = set_text(r->m)) == NULL)
            return ZKL_ENOMEM;
        return zkl_multi_acquire(r->m, timeout_ms);
    }
    if ((r->what = strdup(r->path)) == NULL)
        return ZKL_ENOMEM;
    rc = r->elect ? zkl_latch_new(&r->lk, r->c, r->path, a->id, lock_cb, r)
         : a->kind == ZKL_KIND_LEASE
             ? zkl_lease_new(&r->lk, r->c, r->path, (int)a->leases, lock_cb,
                             r)
             : zkl_lock_new_kind(&r->lk, r->c, r->path, a->kind, lock_cb, r);
    if (rc == ZKL_OK && a->owner != NULL)
        rc = zkl_lock_set_data(r->lk, a->owner, strlen(a->owner));
    if (rc == ZKL_OK && !r->elect)
        rc = zkl_lock_set_revocable(r->lk, a->revocable);
    if (rc == ZKL_OK)
        rc = zkl_lock_acquire(r->lk, timeout_ms);
    return rc;
}

/* Everything the run made, in the order that lets the session close
 * last (closing it removes any node left). ran: the lock was asked for
 * and the loop ran, so the command's parts exist and the releases get
 * their moment to finish. */
static void clean_up(struct run *r, int ran)
{
    if (ran)
        command_free(r);
    zkl_multi_free(r->m);
    zkl_lock_free(r->lk);
    if (ran) {
        watch_connection(NULL, NULL);
        settle(r->base, r->c);
    }
    if (r->c != NULL)
        close_client();
    event_base_free(r->base);
    free(r->what);
}

/* run (elect 0) and elect (elect 1): parse, connect, acquire, then the
 * loop runs the command while the lock is held. */
int cmd_run(int argc, char **argv, int elect)
{
    struct run r;
    struct args a;
    double start;
    int rc;

    memset(&r, 0, sizeof r);
    r.wait_s = -1;
    r.kill_after = 10;
    r.elect = elect;
    r.busy_code = EXIT_BUSY;
    r.timeout_code = EXIT_TIMEDOUT;
    if ((rc = parse(argc, argv, elect, &a, &r)) != GO)
        return rc;

    signal(SIGPIPE, SIG_IGN);
    start = now_s();
    r.base = event_base_new();
    if ((rc = connect_session(&r, &a)) != GO) {
        r.c = NULL; /* closed, or never opened */
        clean_up(&r, 0);
        return rc;
    }
    if (a.kind == ZKL_KIND_LEASE && (rc = check_not_a_lock(&r)) != 0) {
        clean_up(&r, 0);
        return rc;
    }
    if ((rc = start_acquire(&r, &a, acquire_timeout(&r, &a, start))) !=
        ZKL_OK) {
        if (r.what == NULL)
            r.what = strdup(r.path);
        rc = rc == ZKL_ENOMEM ? (fprintf(stderr, "%s: out of memory\n",
                                         prog),
                                 EXIT_INTERNAL)
                              : not_acquired(&r, rc);
        clean_up(&r, 0);
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
    rc = r.status;
    clean_up(&r, 1);
    return rc;
}
