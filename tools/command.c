/* The command that zklock run and elect run while they hold, seen from
 * zklock: the guard process (guard.c) that starts it, with ZKLOCK_PATH
 * and ZKLOCK_TOKEN, and ends its whole process tree; its exit status;
 * the signals zklock passes on to it. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "guard.h"
#include "tree.h"

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

/* The command was not started: let the lock go. */
static void not_started(struct run *r, const char *what)
{
    fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(errno));
    r->status = EXIT_INTERNAL;
    r->child_done = 1;
    if (run_release(r) != ZKL_OK)
        finish(r, r->status);
}

/* The guard has exited: after reporting the command's end, or not (it
 * was killed), and then the command's processes came back to us (we
 * are a child subreaper too) and are killed here. */
static void guard_gone(struct run *r)
{
    int st = 0, status;

    event_free(r->guard_ev);
    r->guard_ev = NULL;
    close(r->guard_fd);
    r->guard_fd = -1;
    while (waitpid(r->guard, &st, 0) < 0 && errno == EINTR)
        ;
    r->child_done = 1;
    if (r->guard_done && r->exec_errno != 0) {
        status = r->exec_errno == ENOENT ? EXIT_EXEC : EXIT_NOEXEC;
    } else if (r->guard_done) {
        status = WIFSIGNALED(r->guard_status)
                     ? 128 + WTERMSIG(r->guard_status)
                     : WEXITSTATUS(r->guard_status);
    } else {
        /* Its failure was reported; its death is ours to report. */
        int n = r->guard_failed ? 0 : tree_kill_all(NULL);

        /* The sentinel kills what the guard left and ends as it did;
         * what is left when the sentinel itself died is ours. */
        if (!r->guard_failed && WIFSIGNALED(st))
            fprintf(stderr, "%s: guard process killed by signal %d\n",
                    prog, WTERMSIG(st));
        else if (!r->guard_failed)
            fprintf(stderr, "%s: guard process exited %d unexpectedly\n",
                    prog, WEXITSTATUS(st));
        if (n > 0)
            fprintf(stderr, "%s: killed the %d process%s of %s\n", prog,
                    n, n == 1 ? "" : "es", r->argv[0]);
        status = EXIT_INTERNAL;
    }
    r->guard = 0;
    r->status = status;
    if (r->lost)
        finish(r, status == EXIT_INTERNAL ? status : EXIT_LOST);
    else if (run_release(r) != ZKL_OK)
        finish(r, r->status);
    /* else: RELEASED finishes */
}

static void on_guard(evutil_socket_t fd, short what, void *arg)
{
    struct run *r = arg;
    struct guard_msg m;
    ssize_t n = recv(fd, &m, sizeof m, MSG_DONTWAIT);

    (void)what;
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n != (ssize_t)sizeof m) {
        guard_gone(r); /* end of file */
        return;
    }
    switch (m.type) {
    case GUARD_EXEC_FAILED:
        r->exec_errno = m.value;
        fprintf(stderr, "%s: cannot run %s: %s\n", prog, r->argv[0],
                strerror(m.value));
        break;
    case GUARD_FAILED:
        r->guard_failed = 1;
        break;
    case GUARD_DONE:
        r->guard_done = 1;
        r->guard_status = m.value;
        break;
    default:
        break;
    }
}

void start_child(struct run *r)
{
    struct guard_args a;
    char *paths, *tokens;
    int sv[2];
    pid_t pid;

    if (command_env(r, &paths, &tokens) != 0) {
        errno = ENOMEM;
        not_started(r, "cannot start the command");
        return;
    }
    /* CLOEXEC: COMMAND is not to hold either end, or zklock's death
     * would not end the guard's socket. */
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        free(paths);
        free(tokens);
        not_started(r, "socketpair");
        return;
    }
    /* If the guard dies, its orphans (the command's tree) come to us. */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
        free(paths);
        free(tokens);
        close(sv[0]);
        close(sv[1]);
        not_started(r, "prctl(PR_SET_CHILD_SUBREAPER)");
        return;
    }
    signal(SIGCHLD, SIG_DFL); /* waited for, not ignored */
    a.argv = r->argv;
    a.prog = prog;
    a.what = r->what;
    a.elect = r->elect;
    a.kill_after = r->kill_after;
    a.mask = &r->mask;
    a.paths = paths;
    a.tokens = tokens;
    a.zklock = getpid();
    a.zpgid = getpgrp();
    a.parent = 0; /* the sentinel's pid, which it sets */
    a.fd = sv[1];
    fflush(NULL); /* nothing buffered twice */
    pid = fork();
    if (pid == 0)
        sentinel_main(&a);
    free(paths);
    free(tokens);
    close(sv[1]);
    if (pid < 0) {
        close(sv[0]);
        not_started(r, "fork");
        return;
    }
    r->guard = pid;
    r->guard_fd = sv[0];
    r->guard_ev = event_new(r->base, sv[0], EV_READ | EV_PERSIST, on_guard,
                            r);
    if (r->guard_ev == NULL || event_add(r->guard_ev, NULL) != 0) {
        /* Closing our end makes the guard kill the command at once. */
        if (r->guard_ev != NULL)
            event_free(r->guard_ev);
        r->guard_ev = NULL;
        close(r->guard_fd);
        r->guard_fd = -1;
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        r->guard = 0;
        errno = ENOMEM;
        not_started(r, "cannot watch the command");
    }
}

int command_terminate(struct run *r, int lost)
{
    struct guard_msg m = {GUARD_TERMINATE, 0, lost, 0, 0};

    if (r->guard <= 0 || r->guard_done)
        return 0;
    (void)send(r->guard_fd, &m, sizeof m, MSG_NOSIGNAL);
    return 1;
}

/* SIGINT, SIGTERM, SIGHUP and SIGQUIT: while waiting for the lock they
 * cancel; while the command runs they go to it (through the guard) and
 * zklock follows its lead. One sent to the whole process group (by the
 * terminal, kill -- -PGID, timeout(1)) has reached the command already:
 * the guard does not pass it on a second time. */
static void on_signal(evutil_socket_t fd, short what, void *arg)
{
    struct run *r = arg;
    struct signalfd_siginfo si;

    (void)what;
    while (read(fd, &si, sizeof si) == (ssize_t)sizeof si) {
        int sig = (int)si.ssi_signo;

        if (r->guard > 0 && !r->guard_done) {
            struct guard_msg m = {GUARD_SIGNAL, sig, 0, si.ssi_code,
                                  (pid_t)si.ssi_pid};

            (void)send(r->guard_fd, &m, sizeof m, MSG_NOSIGNAL);
            continue;
        }
        if (r->guard > 0 || r->done)
            continue; /* the command's end is being reported */
        fprintf(stderr, "%s: interrupted while waiting for %s\n", prog,
                r->what);
        run_cancel(r);
        finish(r, 128 + sig);
        return;
    }
}

int command_signals(struct run *r)
{
    sigset_t set;

    r->guard_fd = -1;
    r->sigfd = -1;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGQUIT);
    /* Read from a signalfd, for the sender (si_code) a handler lacks. */
    if (sigprocmask(SIG_BLOCK, &set, &r->mask) != 0 ||
        (r->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) < 0 ||
        (r->sig_ev = event_new(r->base, r->sigfd, EV_READ | EV_PERSIST,
                               on_signal, r)) == NULL ||
        event_add(r->sig_ev, NULL) != 0) {
        fprintf(stderr, "%s: cannot watch signals: %s\n", prog,
                strerror(errno));
        return -1;
    }
    return 0;
}

void command_free(struct run *r)
{
    if (r->sig_ev != NULL)
        event_free(r->sig_ev);
    if (r->sigfd >= 0)
        close(r->sigfd);
    if (r->guard_ev != NULL)
        event_free(r->guard_ev);
    /* Closing our end before zklock exits tells a guard still running
     * to kill the command now (zklock's exit would too). */
    if (r->guard_fd >= 0)
        close(r->guard_fd);
    if (r->guard > 0)
        while (waitpid(r->guard, NULL, 0) < 0 && errno == EINTR)
            ;
    r->sig_ev = r->guard_ev = NULL;
    r->sigfd = r->guard_fd = -1;
    r->guard = 0;
}
