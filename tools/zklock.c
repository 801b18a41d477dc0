/* zklock(1): hold a ZooKeeper lock while a command runs, like flock(1),
 * list a lock's contenders, or ask its holders to let go.
 *
 *   zklock run [-s HOSTS] [-t SECONDS | -n] [-r | -w | -L N] [--owner TEXT]
 *              [--revocable] [--kill-after SEC] [--session-timeout MS]
 *              LOCKPATH -- COMMAND [ARGS...]
 *   zklock ls [-s HOSTS] [-l] LOCKPATH
 *   zklock revoke [-s HOSTS] LOCKPATH [NODE]
 *
 * Exit status of run: COMMAND's own (128+N if it died of signal N);
 * 1 when the lock was not acquired (within -t, at once with -n, or the
 * server could not be reached); 3 when the lock was lost while COMMAND
 * ran (COMMAND got SIGTERM, and SIGKILL --kill-after seconds later if it
 * was still running); 2 for usage errors; 127 if COMMAND could not be
 * started. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include "zklock.h"
#include "zklock_libevent.h"

#define EXIT_NOT_ACQUIRED 1
#define EXIT_USAGE 2
#define EXIT_LOST 3
#define EXIT_EXEC 127

static const char *prog = "zklock";

struct run {
    struct event_base *base;
    zkl_client_t *c;
    zkl_lock_t *lk;
    const char *path;
    char **argv;
    double wait_s;
    pid_t child;
    int status;       /* exit status to return */
    int lost;
    int done;
    int child_done;
    double kill_after;  /* seconds from SIGTERM on loss to SIGKILL */
    struct event *sigchld, *sigint, *sigterm, *sighup, *killer;
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: %s run [-s HOSTS] [-t SECONDS | -n] [-r | -w | -L N] "
            "[--owner TEXT] [--revocable]\n"
            "              [--kill-after SEC] [--session-timeout MS] "
            "LOCKPATH -- COMMAND [ARGS...]\n"
            "       %s ls [-s HOSTS] [-l] LOCKPATH\n"
            "       %s revoke [-s HOSTS] LOCKPATH [NODE]\n"
            "\n"
            "HOSTS defaults to $ZKLOCK_SERVERS, else 127.0.0.1:2181.\n"
            "run holds LOCKPATH while COMMAND runs: a mutex, or with -r / "
            "-w the read / write\n"
            "side of a read/write lock, with -L N one lease of a semaphore "
            "with N leases\n"
            "(Curator's layouts). Exit status is COMMAND's,\n"
            "1 if the lock was not acquired, 3 if it was lost (COMMAND got "
            "SIGTERM, then\n"
            "SIGKILL after --kill-after seconds, default 10). --owner sets "
            "the lock node's\n"
            "data; --revocable sends COMMAND SIGTERM when a revocation is "
            "requested.\n"
            "ls prints the contenders in queue order, holder first; -l adds "
            "kind, holder\n"
            "mark and data. revoke asks the holders of LOCKPATH (or NODE) "
            "to let go.\n",
            prog, prog, prog);
}

static const char *default_hosts(const char *opt)
{
    const char *env = getenv("ZKLOCK_SERVERS");

    if (opt != NULL)
        return opt;
    if (env != NULL && env[0] != '\0')
        return env;
    return ZKL_DEFAULT_SERVERS;
}

static int path_ok(const char *path)
{
    int rc = zkl_path_validate(path);

    if (rc != ZKL_OK)
        fprintf(stderr, "%s: bad lock path \"%s\": %s\n", prog, path,
                zkl_strerror(rc));
    return rc == ZKL_OK;
}

static zkl_client_t *make_client(struct event_base *base, const char *hosts,
                                 int session_ms)
{
    zkl_options_t *o;
    zkl_client_t *c = NULL;
    int rc;

    if ((rc = zkl_options_new(&o)) != ZKL_OK ||
        (rc = zkl_options_set_servers(o, hosts)) != ZKL_OK ||
        (rc = zkl_options_set_session_timeout(o, session_ms)) != ZKL_OK ||
        (rc = zkl_client_new(&c, o)) != ZKL_OK ||
        (rc = zkl_libevent_attach(c, base)) != ZKL_OK) {
        fprintf(stderr, "%s: cannot use servers \"%s\": %s\n", prog, hosts,
                zkl_strerror(rc));
        zkl_options_free(o);
        zkl_client_free(c);
        return NULL;
    }
    zkl_options_free(o);
    return c;
}

/* ---------------- run ---------------- */

static void finish(struct run *r, int status)
{
    r->status = status;
    r->done = 1;
    event_base_loopbreak(r->base);
}

static void start_child(struct run *r)
{
    uint64_t token = 0;
    char tok[32];
    int pipefd[2];
    ssize_t n;
    int err = 0;

    zkl_lock_token(r->lk, &token);
    snprintf(tok, sizeof tok, "%llu", (unsigned long long)token);
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        perror("zklock: pipe");
        zkl_lock_release(r->lk);
        r->status = EXIT_EXEC;
        return;
    }
    r->child = fork();
    if (r->child == 0) {
        signal(SIGPIPE, SIG_DFL);
        setenv("ZKLOCK_TOKEN", tok, 1);
        setenv("ZKLOCK_PATH", r->path, 1);
        execvp(r->argv[0], r->argv);
        err = errno;
        if (write(pipefd[1], &err, sizeof err) < 0)
            _exit(EXIT_EXEC);
        _exit(EXIT_EXEC);
    }
    close(pipefd[1]);
    if (r->child < 0) {
        perror("zklock: fork");
        close(pipefd[0]);
        r->status = EXIT_EXEC;
        r->child_done = 1;
        zkl_lock_release(r->lk);
        return;
    }
    /* The pipe closes on a successful exec, else carries errno. */
    n = read(pipefd[0], &err, sizeof err);
    close(pipefd[0]);
    if (n == (ssize_t)sizeof err)
        fprintf(stderr, "%s: cannot run %s: %s\n", prog, r->argv[0],
                strerror(err));
}

static void lock_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                    void *arg)
{
    struct run *r = arg;

    (void)lk;
    switch (ev) {
    case ZKL_LOCK_ACQUIRED:
        start_child(r);
        break;
    case ZKL_LOCK_FAILED:
        if (status == ZKL_EKIND) {
            fprintf(stderr, "%s: %s: %s\n", prog, r->path,
                    zkl_strerror(status));
            finish(r, EXIT_USAGE);
            break;
        }
        if (status == ZKL_ELOCKED)
            fprintf(stderr, "%s: %s is locked by another holder\n", prog,
                    r->path);
        else if (status == ZKL_ETIMEDOUT)
            fprintf(stderr, "%s: %s not acquired within %g s\n", prog,
                    r->path, r->wait_s);
        else
            fprintf(stderr, "%s: %s not acquired: %s\n", prog, r->path,
                    zkl_strerror(status));
        finish(r, EXIT_NOT_ACQUIRED);
        break;
    case ZKL_LOCK_SUSPENDED:
        fprintf(stderr,
                "%s: warning: connection to ZooKeeper lost; the hold on %s "
                "is uncertain (command keeps running)\n",
                prog, r->path);
        break;
    case ZKL_LOCK_RESTORED:
        fprintf(stderr,
                "%s: connection to ZooKeeper restored; %s is still held\n",
                prog, r->path);
        break;
    case ZKL_LOCK_LOST:
        r->lost = 1;
        fprintf(stderr, "%s: lock %s LOST: %s; sending SIGTERM to %s\n",
                prog, r->path, zkl_strerror(status), r->argv[0]);
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
                prog, r->path, r->argv[0]);
        if (r->child > 0 && !r->child_done)
            kill(r->child, SIGTERM); /* released when it exits */
        break;
    case ZKL_LOCK_QUEUED: /* not asked for */
        break;
    case ZKL_LOCK_RELEASED:
        if (status != ZKL_OK && status != ZKL_ESESSION)
            fprintf(stderr, "%s: release of %s: %s\n", prog, r->path,
                    zkl_strerror(status));
        finish(r, r->status);
        break;
    }
}

static void on_sigchld(evutil_socket_t sig, short what, void *arg)
{
    struct run *r = arg;
    int st;

    (void)sig;
    (void)what;
    if (r->child <= 0 || waitpid(r->child, &st, WNOHANG) != r->child)
        return;
    r->child_done = 1;
    if (WIFEXITED(st))
        r->status = WEXITSTATUS(st);
    else if (WIFSIGNALED(st))
        r->status = 128 + WTERMSIG(st);
    if (r->lost) {
        finish(r, EXIT_LOST);
    } else if (zkl_lock_release(r->lk) != ZKL_OK) {
        finish(r, r->status);
    }
    /* else: RELEASED finishes */
}

/* A command that outlives a lost lock for --kill-after seconds. */
static void on_kill_after(evutil_socket_t fd, short what, void *arg)
{
    struct run *r = arg;

    (void)fd;
    (void)what;
    if (r->child > 0 && !r->child_done) {
        fprintf(stderr, "%s: %s still running %g s after the lock was "
                "lost; sending SIGKILL\n", prog, r->argv[0], r->kill_after);
        kill(r->child, SIGKILL);
    }
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct run *r = arg;

    (void)what;
    if (r->child > 0 && !r->child_done) {
        kill(r->child, (int)sig); /* the command decides; we follow it */
        return;
    }
    fprintf(stderr, "%s: interrupted while waiting for %s\n", prog, r->path);
    zkl_lock_cancel(r->lk);
    finish(r, 128 + (int)sig);
}

static int parse_seconds(const char *s, double *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || v < 0 || v > 1e9)
        return -1;
    *out = v;
    return 0;
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

static int cmd_run(int argc, char **argv)
{
    static const struct option longopts[] = {
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
    struct run r;
    long leases = 0;
    char *end;
    const char *hosts = NULL, *owner = NULL;
    long timeout_ms = -1;
    int session_ms = ZKL_DEFAULT_SESSION_TIMEOUT, opt, rc, have_t = 0, have_n = 0;
    int revocable = 0;
    zkl_lock_kind_t kind = ZKL_KIND_MUTEX;

    memset(&r, 0, sizeof r);
    r.wait_s = -1;
    r.kill_after = 10;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "+s:t:nrwL:h", longopts, NULL)) !=
           -1) {
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
    if (optind < argc)
        r.path = argv[optind++];
    if (optind < argc && strcmp(argv[optind], "--") == 0)
        optind++;
    if (r.path == NULL || optind >= argc) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (!path_ok(r.path))
        return EXIT_USAGE;
    r.argv = argv + optind;
    if (have_n)
        timeout_ms = 0;
    else if (have_t)
        timeout_ms = (long)(r.wait_s * 1000.0 + 0.5);

    signal(SIGPIPE, SIG_IGN);
    r.base = event_base_new();
    r.c = make_client(r.base, default_hosts(hosts), session_ms);
    if (r.c == NULL)
        return EXIT_NOT_ACQUIRED;
    if (kind == ZKL_KIND_LEASE && (rc = check_not_a_lock(&r)) != 0) {
        zkl_client_free(r.c);
        event_base_free(r.base);
        return rc;
    }
    if ((rc = kind == ZKL_KIND_LEASE
                  ? zkl_lease_new(&r.lk, r.c, r.path, (int)leases, lock_cb,
                                  &r)
                  : zkl_lock_new_kind(&r.lk, r.c, r.path, kind, lock_cb,
                                      &r)) != ZKL_OK ||
        (owner != NULL &&
         (rc = zkl_lock_set_data(r.lk, owner, strlen(owner))) != ZKL_OK) ||
        (rc = zkl_lock_set_revocable(r.lk, revocable)) != ZKL_OK ||
        (rc = zkl_lock_acquire(r.lk, timeout_ms)) != ZKL_OK) {
        fprintf(stderr, "%s: %s: %s\n", prog, r.path, zkl_strerror(rc));
        return EXIT_NOT_ACQUIRED;
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
    zkl_lock_free(r.lk);
    zkl_client_free(r.c); /* closing the session removes any node left */
    event_free(r.sigchld);
    event_free(r.sigint);
    event_free(r.sigterm);
    event_free(r.sighup);
    event_free(r.killer);
    event_base_free(r.base);
    return r.status;
}

/* ---------------- ls, revoke ---------------- */

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
static int cmd_query(int argc, char **argv, int revoke)
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

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "run") == 0)
        return cmd_run(argc - 1, argv + 1);
    if (strcmp(argv[1], "ls") == 0)
        return cmd_query(argc - 1, argv + 1, 0);
    if (strcmp(argv[1], "revoke") == 0)
        return cmd_query(argc - 1, argv + 1, 1);
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("zklock %s\n", zkl_version_string());
        return 0;
    }
    fprintf(stderr, "%s: unknown command \"%s\"\n", prog, argv[1]);
    usage(stderr);
    return EXIT_USAGE;
}
