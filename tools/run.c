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


/* What a lock, a set and a leadership go through alike. */
static void on_event(struct run *r, zkl_lock_event_t ev, int status)
{
    switch (ev) {
    case ZKL_LOCK_ACQUIRED:
        start_child(r);
        break;
    case ZKL_LOCK_FAILED:
        if (status == ZKL_EKIND) {
            fprintf(stderr, "%s: %s: %s\n", prog, r->what,
                    zkl_strerror(status));
            finish(r, EXIT_USAGE);
            break;
        }
        if (status == ZKL_ELIMIT) {
            fprintf(stderr, "%s: %s: the semaphore's holders use -L %d, "
                    "not -L %d\n", prog, r->what,
                    zkl_lease_recorded_limit(r->lk), zkl_lease_limit(r->lk));
            finish(r, EXIT_REFUSED);
            break;
        }
        if (status == ZKL_ELOCKED && r->elect)
            fprintf(stderr, "%s: %s has another leader\n", prog, r->what);
        else if (status == ZKL_ELOCKED && r->m != NULL)
            fprintf(stderr, "%s: %s: one of them is locked by another "
                    "holder\n", prog, r->what);
        else if (status == ZKL_ELOCKED)
            fprintf(stderr, "%s: %s is locked by another holder\n", prog,
                    r->what);
        else if (status == ZKL_ETIMEDOUT && r->elect)
            fprintf(stderr, "%s: %s: not elected within %g s\n", prog,
                    r->what, r->wait_s);
        else if (status == ZKL_ETIMEDOUT)
            fprintf(stderr, "%s: %s not acquired within %g s\n", prog,
                    r->what, r->wait_s);
        else
            fprintf(stderr, "%s: %s not acquired: %s\n", prog, r->what,
                    zkl_strerror(status));
        finish(r, EXIT_NOT_ACQUIRED);
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
        if (r->child > 0 && !r->child_done) {
            struct timeval tv;

            kill(r->child, SIGTERM);
            tv.tv_sec = (time_t)r->kill_after;
            tv.tv_usec = (suseconds_t)((r->kill_after - (double)tv.tv_sec) *
                                       1e6);
            evtimer_add(r->killer, &tv);
        } else {
            finish(r, EXIT_LOST);
        }
        break;
    case ZKL_LOCK_REVOKE_REQUESTED:
        fprintf(stderr,
                "%s: revocation of %s requested; sending SIGTERM to %s\n",
                prog, r->what, r->argv[0]);
        if (r->child > 0 && !r->child_done)
            kill(r->child, SIGTERM); /* released when it exits */
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

    if (rc != ZKL_OK) {
        fprintf(stderr, "%s: %s: %s\n", prog, r->path, zkl_strerror(rc));
        return EXIT_NOT_ACQUIRED;
    }
    while (!k.done)
        event_base_dispatch(r->base);
    if (k.status != ZKL_OK) {
        fprintf(stderr, "%s: %s: %s\n", prog, r->path,
                zkl_strerror(k.status));
        return EXIT_NOT_ACQUIRED;
    }
    if (k.locks > 0) {
        fprintf(stderr, "%s: %s: %s\n", prog, r->path,
                zkl_strerror(ZKL_EKIND));
        return EXIT_USAGE;
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

/* run (elect 0) and elect (elect 1). */
int cmd_run(int argc, char **argv, int elect)
{
    static const struct option run_opts[] = {
        {"servers", required_argument, NULL, 's'},
        {"timeout", required_argument, NULL, 't'},
        {"nonblock", no_argument, NULL, 'n'},
        {"session-timeout", required_argument, NULL, 'S'},
        {"read", no_argument, NULL, 'r'},
        {"write", no_argument, NULL, 'w'},
        {"owner", required_argument, NULL, 'O'},
        {"revocable", no_argument, NULL, 'R'},
        {"kill-after", required_argument, NULL, 'K'},
        {"leases", required_argument, NULL, 'L'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    static const struct option elect_opts[] = {
        {"servers", required_argument, NULL, 's'},
        {"timeout", required_argument, NULL, 't'},
        {"nonblock", no_argument, NULL, 'n'},
        {"session-timeout", required_argument, NULL, 'S'},
        {"id", required_argument, NULL, 'I'},
        {"kill-after", required_argument, NULL, 'K'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    struct run r;
    long leases = 0;
    char *end, **paths;
    char idbuf[HOST_NAME_MAX + 32];
    const char *hosts = NULL, *owner = NULL, *id = NULL;
    long timeout_ms = -1;
    int session_ms = ZKL_DEFAULT_SESSION_TIMEOUT, opt, rc, have_t = 0, have_n = 0;
    int revocable = 0, npaths, cmd, i;
    zkl_lock_kind_t kind = ZKL_KIND_MUTEX;
    zkl_lock_kind_t kinds[ZKL_MULTI_MAX];

    memset(&r, 0, sizeof r);
    r.wait_s = -1;
    r.kill_after = 10;
    r.elect = elect;
    optind = 1;
    while ((opt = getopt_long(argc, argv, elect ? "+s:t:nh" : "+s:t:nrwL:h",
                              elect ? elect_opts : run_opts, NULL)) != -1) {
        switch (opt) {
        case 'r':
        case 'w':
        case 'L':
            if (kind != ZKL_KIND_MUTEX) {
                fprintf(stderr, "%s: -r, -w and -L exclude each other\n",
                        prog);
                return EXIT_USAGE;
            }
            kind = opt == 'r'   ? ZKL_KIND_READ
                   : opt == 'w' ? ZKL_KIND_WRITE
                                : ZKL_KIND_LEASE;
            if (opt != 'L')
                break;
            errno = 0;
            leases = strtol(optarg, &end, 10);
            if (errno != 0 || end == optarg || *end != '\0' || leases < 1 ||
                leases > ZKL_LEASES_MAX) {
                fprintf(stderr,
                        "%s: bad -L value \"%s\" (leases: 1 to %d)\n", prog,
                        optarg, ZKL_LEASES_MAX);
                return EXIT_USAGE;
            }
            break;
        case 'O':
            owner = optarg;
            break;
        case 'I':
            id = optarg;
            break;
        case 'R':
            revocable = 1;
            break;
        case 'K':
            if (parse_seconds(optarg, &r.kill_after) != 0) {
                fprintf(stderr, "%s: bad --kill-after value \"%s\"\n", prog,
                        optarg);
                return EXIT_USAGE;
            }
            break;
        case 's':
            hosts = optarg;
            break;
        case 't':
            if (parse_seconds(optarg, &r.wait_s) != 0) {
                fprintf(stderr, "%s: bad -t value \"%s\"\n", prog, optarg);
                return EXIT_USAGE;
            }
            have_t = 1;
            break;
        case 'n':
            have_n = 1;
            break;
        case 'S':
            session_ms = atoi(optarg);
            if (session_ms <= 0) {
                fprintf(stderr, "%s: bad --session-timeout \"%s\"\n", prog,
                        optarg);
                return EXIT_USAGE;
            }
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (have_t && have_n) {
        fprintf(stderr, "%s: -t and -n exclude each other\n", prog);
        return EXIT_USAGE;
    }
    if ((cmd = split_paths(argc, argv, optind, &npaths)) < 0) {
        usage(stderr);
        return EXIT_USAGE;
    }
    paths = argv + optind;
    for (i = 0; i < npaths; i++)
        if (!path_ok(paths[i]))
            return EXIT_USAGE;
    if (npaths > ZKL_MULTI_MAX) {
        fprintf(stderr, "%s: at most %d lock paths\n", prog, ZKL_MULTI_MAX);
        return EXIT_USAGE;
    }
    if (distinct(paths, npaths) == 1) {
        npaths = 1; /* one lock, named more than once */
    } else if (elect) {
        fprintf(stderr, "%s: elect takes one PATH\n", prog);
        return EXIT_USAGE;
    } else if (kind == ZKL_KIND_LEASE) {
        fprintf(stderr, "%s: -L takes one lock path (a semaphore cannot "
                "be part of a set)\n", prog);
        return EXIT_USAGE;
    } else if (revocable) {
        fprintf(stderr, "%s: --revocable takes one lock path (a set "
                "cannot be revoked)\n", prog);
        return EXIT_USAGE;
    } else if (owner != NULL) {
        fprintf(stderr, "%s: --owner takes one lock path (a set's locks "
                "carry the default data)\n", prog);
        return EXIT_USAGE;
    }
    r.path = paths[0];
    r.argv = argv + cmd;
    if (have_n)
        timeout_ms = 0;
    else if (have_t)
        timeout_ms = (long)(r.wait_s * 1000.0 + 0.5);
    if (elect && id == NULL) {
        char host[HOST_NAME_MAX + 1];

        if (gethostname(host, sizeof host) != 0)
            snprintf(host, sizeof host, "localhost");
        host[sizeof host - 1] = '\0';
        snprintf(idbuf, sizeof idbuf, "%s:%ld", host, (long)getpid());
        id = idbuf;
    }

    signal(SIGPIPE, SIG_IGN);
    r.base = event_base_new();
    r.c = make_client(r.base, default_hosts(hosts), session_ms);
    if (r.c == NULL) {
        event_base_free(r.base);
        return EXIT_NOT_ACQUIRED;
    }
    if (kind == ZKL_KIND_LEASE && (rc = check_not_a_lock(&r)) != 0) {
        zkl_client_free(r.c);
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
        fprintf(stderr, "%s: %s: %s\n", prog, r.what != NULL ? r.what : r.path,
                zkl_strerror(rc));
        zkl_multi_free(r.m);
        zkl_lock_free(r.lk);
        zkl_client_free(r.c);
        event_base_free(r.base);
        free(r.what);
        return rc == ZKL_EINVAL || rc == ZKL_EBADPATH ? EXIT_USAGE
                                                      : EXIT_NOT_ACQUIRED;
    }
    r.sigchld = evsignal_new(r.base, SIGCHLD, on_sigchld, &r);
    r.sigint = evsignal_new(r.base, SIGINT, on_signal, &r);
    r.sigterm = evsignal_new(r.base, SIGTERM, on_signal, &r);
    r.sighup = evsignal_new(r.base, SIGHUP, on_signal, &r);
    r.killer = evtimer_new(r.base, on_kill_after, &r);
    event_add(r.sigchld, NULL);
    event_add(r.sigint, NULL);
    event_add(r.sigterm, NULL);
    event_add(r.sighup, NULL);
    while (!r.done)
        event_base_dispatch(r.base);
    event_free(r.sigchld);
    event_free(r.sigint);
    event_free(r.sigterm);
    event_free(r.sighup);
    event_free(r.killer);
    zkl_multi_free(r.m);
    zkl_lock_free(r.lk);
    settle(r.base, r.c);
    zkl_client_free(r.c); /* closing the session removes any node left */
    event_base_free(r.base);
    free(r.what);
    return r.status;
}
