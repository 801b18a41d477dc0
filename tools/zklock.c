/* zklock(1): hold ZooKeeper locks while a command runs, like flock(1),
 * run a command only while elected leader, list a lock's contenders, or
 * ask its holders to let go.
 *
 *   zklock run [-s HOSTS] [-t SECONDS | -n] [-r | -w | -L N] [--owner TEXT]
 *              [--revocable] [--kill-after SEC] [--session-timeout MS]
 *              LOCKPATH -- COMMAND [ARGS...]
 *   zklock run [-s HOSTS] [-t SECONDS | -n] [-r | -w] [--kill-after SEC]
 *              [--session-timeout MS] LOCKPATH LOCKPATH... -- COMMAND [ARGS...]
 *   zklock elect [-s HOSTS] [-t SECONDS | -n] [--id ID] [--kill-after SEC]
 *              [--session-timeout MS] PATH -- COMMAND [ARGS...]
 *   zklock ls [-s HOSTS] [-l] LOCKPATH
 *   zklock revoke [-s HOSTS] LOCKPATH [NODE]
 *
 * Several lock paths are one multi-lock (zkl_multi_t): all held, or
 * none, with one deadline, whatever order other callers name them in.
 * elect joins the leader election on PATH (Curator's LeaderLatch layout)
 * and runs COMMAND once leader.
 *
 * Exit status of run and elect: COMMAND's own (128+N if it died of
 * signal N); 1 when the lock (every lock of the set, the leadership) was
 * not acquired (within -t, at once with -n, or the server could not be
 * reached); 3 when it was lost while COMMAND ran (COMMAND got SIGTERM,
 * and SIGKILL --kill-after seconds later if it was still running); 2 for
 * usage errors; 127 if COMMAND could not be started. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
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
    zkl_lock_t *lk;    /* one lock path, or the election's participant */
    zkl_multi_t *m;    /* several lock paths */
    const char *path;  /* the one path (the first given, for a set) */
    char *what;        /* what messages name: the path, or the set's */
    int elect;
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
            "       %s run [-s HOSTS] [-t SECONDS | -n] [-r | -w] "
            "[--kill-after SEC]\n"
            "              [--session-timeout MS] LOCKPATH LOCKPATH... -- "
            "COMMAND [ARGS...]\n"
            "       %s elect [-s HOSTS] [-t SECONDS | -n] [--id ID] "
            "[--kill-after SEC]\n"
            "              [--session-timeout MS] PATH -- COMMAND "
            "[ARGS...]\n"
            "       %s ls [-s HOSTS] [-l] LOCKPATH\n"
            "       %s revoke [-s HOSTS] LOCKPATH [NODE]\n"
            "\n"
            "HOSTS defaults to $ZKLOCK_SERVERS, else 127.0.0.1:2181.\n"
            "run holds LOCKPATH while COMMAND runs: a mutex, or with -r / "
            "-w the read / write\n"
            "side of a read/write lock, with -L N one lease of a semaphore "
            "with N leases\n"
            "(Curator's layouts). With several LOCKPATHs (then \"--\" is "
            "needed) it holds\n"
            "all of them at once (-r / -w apply to each), all or nothing, "
            "with one deadline\n"
            "and no deadlock whatever order others name them in; -L, "
            "--owner and --revocable\n"
            "take one path. Exit status is COMMAND's, 1 if the lock was not "
            "acquired, 3 if\n"
            "it (or any lock of the set) was lost (COMMAND got SIGTERM, then "
            "SIGKILL after\n"
            "--kill-after seconds, default 10). --owner sets the lock node's "
            "data;\n"
            "--revocable sends COMMAND SIGTERM when a revocation is "
            "requested. COMMAND sees\n"
            "ZKLOCK_PATH and ZKLOCK_TOKEN (the fencing token); for a set, "
            "one line each per\n"
            "lock, in the order the set takes them.\n"
            "elect joins the leader election on PATH (Curator's LeaderLatch "
            "layout) as ID\n"
            "(default HOSTNAME:PID) and runs COMMAND once leader, stopping "
            "it as run does\n"
            "when leadership is lost; it leaves the election when COMMAND "
            "exits. -t bounds\n"
            "the wait for leadership, -n only runs COMMAND if leader at "
            "once.\n"
            "ls prints the contenders in queue order, holder first; -l adds "
            "kind, holder\n"
            "mark and data. revoke asks the holders of LOCKPATH (or NODE) "
            "to let go.\n",
            prog, prog, prog, prog, prog);
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

/* ---------------- run, elect ---------------- */

static void finish(struct run *r, int status)
{
    r->status = status;
    r->done = 1;
    event_base_loopbreak(r->base);
}

static int run_release(struct run *r)
{
    return r->m != NULL ? zkl_multi_release(r->m) : zkl_lock_release(r->lk);
}

static void run_cancel(struct run *r)
{
    if (r->m != NULL)
        zkl_multi_cancel(r->m);
    else
        zkl_lock_cancel(r->lk);
}

/* Appends text and a separator to a growing string; NULL when out of
 * memory (the old string is freed). */
static char *append(char *s, const char *sep, const char *text)
{
    size_t old = s != NULL ? strlen(s) : 0;
    char *n = realloc(s, old + strlen(sep) + strlen(text) + 1);

    if (n == NULL) {
        free(s);
        return NULL;
    }
    snprintf(n + old, strlen(sep) + strlen(text) + 1, "%s%s",
             old > 0 ? sep : "", text);
    return n;
}

/* ZKLOCK_PATH and ZKLOCK_TOKEN for COMMAND: one line per lock of a set,
 * in the order it takes them (a lock path has no control characters, so
 * a line is a path). */
static int command_env(struct run *r, char **paths, char **tokens)
{
    size_t i, n = r->m != NULL ? zkl_multi_size(r->m) : 1;

    *paths = *tokens = NULL;
    for (i = 0; i < n; i++) {
        const zkl_lock_t *lk = r->m != NULL ? zkl_multi_lock(r->m, i) : r->lk;
        uint64_t token = 0;
        char tok[32];

        zkl_lock_token(lk, &token);
        snprintf(tok, sizeof tok, "%llu", (unsigned long long)token);
        if ((*paths = append(*paths, "\n", zkl_lock_path(lk))) == NULL ||
            (*tokens = append(*tokens, "\n", tok)) == NULL) {
            free(*paths);
            *paths = NULL;
            return -1;
        }
    }
    return 0;
}

static void start_child(struct run *r)
{
    char *paths, *tokens;
    int pipefd[2];
    ssize_t n;
    int err = 0;

    if (command_env(r, &paths, &tokens) != 0) {
        fprintf(stderr, "%s: out of memory\n", prog);
        r->status = EXIT_EXEC;
        r->child_done = 1;
        run_release(r);
        return;
    }
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        perror("zklock: pipe");
        free(paths);
        free(tokens);
        r->status = EXIT_EXEC;
        r->child_done = 1;
        run_release(r);
        return;
    }
    r->child = fork();
    if (r->child == 0) {
        signal(SIGPIPE, SIG_DFL);
        setenv("ZKLOCK_TOKEN", tokens, 1);
        setenv("ZKLOCK_PATH", paths, 1);
        execvp(r->argv[0], r->argv);
        err = errno;
        if (write(pipefd[1], &err, sizeof err) < 0)
            _exit(EXIT_EXEC);
        _exit(EXIT_EXEC);
    }
    free(paths);
    free(tokens);
    close(pipefd[1]);
    if (r->child < 0) {
        perror("zklock: fork");
        close(pipefd[0]);
        r->status = EXIT_EXEC;
        r->child_done = 1;
        run_release(r);
        return;
    }
    /* The pipe closes on a successful exec, else carries errno. */
    n = read(pipefd[0], &err, sizeof err);
    close(pipefd[0]);
    if (n == (ssize_t)sizeof err)
        fprintf(stderr, "%s: cannot run %s: %s\n", prog, r->argv[0],
                strerror(err));
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
    } else if (run_release(r) != ZKL_OK) {
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
        fprintf(stderr, "%s: %s still running %g s after the %s was "
                "lost; sending SIGKILL\n", prog, r->argv[0], r->kill_after,
                r->elect ? "leadership" : "lock");
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
    fprintf(stderr, "%s: interrupted while waiting for %s\n", prog, r->what);
    run_cancel(r);
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

static void settle_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    *(int *)arg = 1;
}

/* Lets the client finish what it does in the background (deleting the
 * nodes an ended acquire left, giving back a set's members) before the
 * session is closed, for at most 3 s: the nodes go by their own deletes,
 * which a close that fails to reach the server would leave to the
 * session's expiry. */
static void settle(struct event_base *base, zkl_client_t *c)
{
    struct timeval tv = {3, 0};
    struct event *t;
    int over = 0;

    if ((t = evtimer_new(base, settle_timeout, &over)) == NULL)
        return;
    evtimer_add(t, &tv);
    while (zkl_client_pending(c) > 0 && !over)
        event_base_loop(base, EVLOOP_ONCE);
    event_free(t);
}

/* run (elect 0) and elect (elect 1). */
static int cmd_run(int argc, char **argv, int elect)
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
        return cmd_run(argc - 1, argv + 1, 0);
    if (strcmp(argv[1], "elect") == 0)
        return cmd_run(argc - 1, argv + 1, 1);
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
