/* The run's own part of the server, and its end. Every node a scenario
 * creates is under one parent, /zklock-bench/<run id> (bench_path()), and
 * that tree is deleted when the run ends however it ends: when the
 * scenario returns, on any exit() of the main process (bench_fail(), a
 * client that cannot connect), at the --limit deadline and on SIGINT,
 * SIGTERM and SIGHUP. A user's server must not keep a benchmark's nodes.
 *
 * Forked children (holder processes, fleet workers) are registered, so
 * that a run ending early kills them before the delete: none then adds a
 * node behind it. A signal cannot delete a tree from its handler (that
 * would allocate, and the signal may have come inside malloc), so the
 * handler kills the children and execs this program again as
 * "zklock-bench clean --run ID": execve is safe there, and the new image
 * starts with a clean heap. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "metrics.h"

static char run_id[40];
static char run_root[64] = BENCH_TOP;
static pid_t main_pid;
static int touched;     /* a session connected or a child was forked */
static int ended;       /* the tree was dealt with */

#define MAX_CHILDREN 4096
static pid_t children[MAX_CHILDREN];
static volatile sig_atomic_t nchildren;

/* For the signal path: everything built before, nothing allocated. */
static char *clean_argv[16];
static char msg_signal[256];
static size_t msg_signal_len;

const char *bench_run_root(void)
{
    return run_root;
}

void bench_run_touched(void)
{
    touched = 1;
}

void bench_child(pid_t pid)
{
    touched = 1;
    if (nchildren < MAX_CHILDREN)
        children[nchildren++] = pid;
}

/* test/zkserver.sh restart ZKDIR in a child process (a child of the
 * run: killed if the run ends first), so the loop keeps running. With
 * bash: the script needs it (set -o pipefail), and /bin/sh is dash on
 * Debian. */
pid_t bench_restart_server(const char *zkdir)
{
    pid_t pid = fork();

    if (pid == 0) {
        const char *src = getenv("top_srcdir");
        char script[512];

        snprintf(script, sizeof script, "%s/test/zkserver.sh",
                 src ? src : ".");
        execl("/bin/bash", "bash", script, "restart", zkdir, (char *)NULL);
        _exit(127);
    }
    if (pid > 0)
        bench_child(pid);
    return pid;
}

/* Kills the children still running (waitpid only ever reaps one's own
 * children, so a pid some other process took since is never touched).
 * Async-signal-safe. */
static void kill_children(void)
{
    sig_atomic_t i;
    int st;

    for (i = 0; i < nchildren; i++) {
        if (children[i] > 0 && waitpid(children[i], &st, WNOHANG) == 0) {
            kill(children[i], SIGKILL);
            waitpid(children[i], &st, 0);
        }
        children[i] = 0;
    }
}

/* Deletes the run's tree; 0 when it is gone. */
static int delete_tree(void)
{
    uint64_t t0 = now_us();
    long n;

    if (!touched)
        return 0;
    if ((n = bench_raw_delete_tree(bench_hosts, run_root, 1)) < 0) {
        fprintf(stderr,
                "zklock-bench: could not delete %s on %s; "
                "\"zklock-bench clean -s %s\" deletes it\n",
                run_root, bench_hosts, bench_hosts);
        return -1;
    }
    note("deleted the run's %ld nodes (%s) in %.2f s", n, run_root,
         (double)(now_us() - t0) / 1e6);
    return 0;
}

/* Any exit() of the main process that bench_run_end() did not see. */
static void at_exit(void)
{
    if (getpid() != main_pid || ended)
        return;
    ended = 1;
    fflush(NULL);
    kill_children();
    /* The run's own sessions may be why it ends: past the server's
     * limit of connections from one address (maxClientCnxns), the
     * delete's session would be refused while they stay open. Nothing
     * uses them once exit() has begun. */
    closefrom(3);
    /* Over TLS a new session cannot be opened here: OpenSSL's state
     * (the descriptors it keeps) went with closefrom(), and the ZooKeeper
     * C client then crashes in its TLS set-up (SSL_CTX_new's NULL is not
     * checked). A fresh image deletes the tree instead, as after a
     * signal; the exit status is then clean's, 1. */
    if (touched && bench_tls_ca != NULL)
        execv("/proc/self/exe", clean_argv);
    delete_tree();
}

static void bench_run_abort_signal(void)
{
    if (getpid() != main_pid)
        _exit(1);
    kill_children();
    if (touched)
        execv("/proc/self/exe", clean_argv);
    _exit(1);
}

static void on_signal(int sig)
{
    ssize_t w;

    (void)sig;
    w = write(1, msg_signal, msg_signal_len);
    w = write(2, msg_signal, msg_signal_len);
    (void)w;
    bench_run_abort_signal();
}

const char *bench_hosts;
const char *bench_tls_ca, *bench_tls_cert, *bench_tls_key;

void bench_run_start(const char *scenario, const char *hosts)
{
    unsigned r = (unsigned)time(NULL);
    FILE *f = fopen("/dev/urandom", "r");
    int n;

    bench_hosts = hosts;
    main_pid = getpid();
    if (f != NULL) {
        if (fread(&r, sizeof r, 1, f) != 1)
            r ^= (unsigned)clock();
        fclose(f);
    }
    /* The pid for a person reading the tree, a random part so that runs
     * on two machines against one server never share a tree. */
    snprintf(run_id, sizeof run_id, "%d-%08x", (int)main_pid, r);
    snprintf(run_root, sizeof run_root, BENCH_TOP "/%s", run_id);
    clean_argv[0] = "zklock-bench";
    clean_argv[1] = "clean";
    clean_argv[2] = "--run";
    clean_argv[3] = run_id;
    clean_argv[4] = "-s";
    clean_argv[5] = (char *)hosts;
    clean_argv[6] = "--after-failure";
    clean_argv[7] = NULL;
    if (bench_tls_ca != NULL) { /* the clean-up's session as the run's */
        clean_argv[7] = "--tls-ca";
        clean_argv[8] = (char *)bench_tls_ca;
        clean_argv[9] = "--tls-cert";
        clean_argv[10] = (char *)bench_tls_cert;
        clean_argv[11] = "--tls-key";
        clean_argv[12] = (char *)bench_tls_key;
        clean_argv[13] = NULL;
    }
    n = snprintf(msg_signal, sizeof msg_signal,
                 "{\"scenario\":\"%s\",\"error\":\"interrupted by a "
                 "signal\"}\n",
                 scenario);
    msg_signal_len = n > 0 && (size_t)n < sizeof msg_signal ? (size_t)n : 0;
    atexit(at_exit);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
    bench_deadline_hook = bench_run_abort_signal;
}

int bench_run_end(int status)
{
    if (getpid() != main_pid || ended)
        return status;
    ended = 1;
    fflush(stdout);
    kill_children();
    if (delete_tree() != 0 && status == 0)
        status = 1;
    return status;
}

/* clean [--run ID]: what runs killed by SIGKILL left (no clean-up can
 * run then), or one run's tree (run.c itself, after a signal). */
int bench_clean(const struct opts *o)
{
    char path[128];
    int bad = 0;

    if (o->after_failure) {
        /* The failed run's sockets came through the exec: closed, the
         * server sees those sessions go (their nodes are deleted below
         * all the same). */
        closefrom(3);
    }
    if (o->run != NULL) {
        if (o->run[0] == '\0' || strchr(o->run, '/') != NULL) {
            fprintf(stderr, "zklock-bench: clean: bad --run \"%s\"\n", o->run);
            return 2;
        }
        snprintf(path, sizeof path, BENCH_TOP "/%s", o->run);
        bad = bench_raw_delete_tree(o->hosts, path, 1) < 0;
    } else {
        snprintf(path, sizeof path, BENCH_TOP);
        bad = bench_raw_delete_tree(o->hosts, path, 0) < 0;
        /* What versions before the run's tree left. */
        bad |= bench_raw_delete_tree(o->hosts, "/zklock-bench-raw", 0) < 0;
    }
    if (bad)
        fprintf(stderr, "zklock-bench: clean: %s is not all gone on %s\n",
                path, o->hosts);
    if (o->after_failure)
        return 1;
    json_begin("clean");
    json_str("path", path);
    json_int("errors", bad);
    json_end();
    return bad;
}
