/* The guard process (guard.h): forked by zklock once it holds, it
 * forks and execs COMMAND, and is the child subreaper of COMMAND's
 * tree, so every process COMMAND starts stays below it, daemons
 * included. It ends the tree when the hold is lost or revoked (SIGTERM,
 * then SIGKILL), when COMMAND exits (what COMMAND left running would
 * run without the lock once zklock releases it), and at once when
 * zklock dies, which it learns from the end of file on their socket.
 *
 * It is a plain poll loop: after the fork it must not touch zklock's
 * ZooKeeper client or event loop, whose descriptors it closes. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli.h"
#include "guard.h"
#include "tree.h"

struct guard {
    const struct guard_args *a;
    int sfd;            /* signalfd: SIGCHLD, SIGUSR1 (zklock's death),
                         * and the signals zklock passes on */
    int execfd;         /* COMMAND's exec: errno, or end of file once run */
    struct watch cmd;   /* COMMAND's process */
    struct pidset termed; /* each process gets SIGTERM once */
    int ending;         /* COMMAND is reaped: ending what it left */
    double cmd_since;   /* when COMMAND was forked: a group signal got
                         * before then never reached it */
    double deadline;    /* when SIGKILL goes out; 0: none set */
    /* The guard is in zklock's process group, so a signal sent to the
     * group comes here too: the last few, to match zklock's against. */
    struct {
        int signo, code;
        pid_t pid;
        double at;
    } got[8];
    unsigned ngot;
};

static void tell(const struct guard *g, int type, int value)
{
    struct guard_msg m = {type, value, 0, 0, 0};

    /* zklock may be gone: nothing to do then but what follows */
    (void)send(g->a->fd, &m, sizeof m, MSG_NOSIGNAL);
}

/* zklock is gone, so the hold is (or will be, when its session
 * expires): nothing of COMMAND may run on. No grace: whatever time is
 * left until another contender is granted the lock belongs to it. */
static _Noreturn void orphaned(struct guard *g)
{
    int n = tree_kill_all(&g->cmd);

    if (n > 0)
        fprintf(stderr, "%s: zklock (pid %ld) or its sentinel is gone; "
                "killed the %d process%s of %s\n", g->a->prog,
                (long)g->a->zklock, n, n == 1 ? "" : "es", g->a->argv[0]);
    _exit(0);
}

static _Noreturn void failed(struct guard *g, const char *what, int err)
{
    fprintf(stderr, "%s: %s: %s\n", g->a->prog, what, strerror(err));
    tell(g, GUARD_FAILED, err);
    tree_kill_all(&g->cmd);
    _exit(0);
}

static void on_sigfd(struct guard *g);

static void start_command(struct guard *g)
{
    const struct guard_args *a = g->a;
    int ep[2];
    pid_t pid;

    if (pipe2(ep, O_CLOEXEC) != 0)
        failed(g, "pipe", errno);
    /* Signals already here are recorded as older than COMMAND, which
     * never got them: zklock's copy is passed on (group_sent). */
    on_sigfd(g);
    g->cmd_since = now_s();
    pid = fork();
    if (pid == 0) {
        int err;

        /* As COMMAND always had them: the signals zklock answers and
         * SIGPIPE at their defaults, the rest as zklock got them. The
         * mask comes last, so that a signal sent before this point
         * (held pending by the guard's mask) is acted upon now. */
        /* SIGINT, SIGHUP, SIGTERM: as zklock got them (which reads
         * them from a signalfd, blocked, not ignored): one that nohup or
         * a shell's background job ignores stays ignored. SIGPIPE is
         * zklock's own SIG_IGN. */
        signal(SIGPIPE, SIG_DFL);
        close(ep[0]);
        /* Credentials are zklock's, not COMMAND's: a secret passed on
         * to every process it starts would be one more place to leak. */
        unsetenv("ZKLOCK_AUTH");
        unsetenv("ZKLOCK_SASL_PASSWORD");
        unsetenv("ZKLOCK_TLS_KEY_PASSWORD");
        if (setenv("ZKLOCK_TOKEN", a->tokens, 1) != 0 ||
            setenv("ZKLOCK_PATH", a->paths, 1) != 0) {
            err = errno;
        } else {
            sigprocmask(SIG_SETMASK, a->mask, NULL);
            execvp(a->argv[0], a->argv);
            err = errno;
        }
        if (write(ep[1], &err, sizeof err) < 0)
            _exit(EXIT_EXEC);
        _exit(EXIT_EXEC);
    }
    close(ep[1]);
    if (pid < 0) {
        close(ep[0]);
        failed(g, "fork", errno);
    }
    g->cmd.pid = pid;
    g->execfd = ep[0];
}

static void set_deadline(struct guard *g)
{
    double at = now_s() + g->a->kill_after;

    if (g->deadline == 0 || at < g->deadline)
        g->deadline = at;
}

/* SIGTERM to every process of the tree that has not had one. */
static int terminate(struct guard *g)
{
    return tree_signal(getpid(), SIGTERM, &g->termed);
}

static void on_sigfd(struct guard *g);

/* Was zklock's signal M sent to the whole process group, COMMAND's
 * too? Then the guard got it as well, from the same sender (the
 * terminal's are the kernel's), at the same moment. A match is used up:
 * the next one is a new signal. */
static int group_sent(struct guard *g, const struct guard_msg *m)
{
    unsigned i, n;

    on_sigfd(g); /* sent before zklock's, so pending by now */
    n = g->ngot < 8 ? g->ngot : 8;
    if (getpgid(g->cmd.pid) != getpgrp())
        return 0; /* COMMAND left the group: not its signal */
    for (i = 0; i < n; i++)
        if (g->got[i].signo == m->value && g->got[i].code == m->code &&
            g->got[i].pid == m->pid && now_s() - g->got[i].at < 1.0 &&
            g->got[i].at >= g->cmd_since) {
            g->got[i].signo = 0;
            return 1;
        }
    return 0;
}

static void on_message(struct guard *g)
{
    struct guard_msg m;
    ssize_t n = recv(g->a->fd, &m, sizeof m, MSG_DONTWAIT);

    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n != (ssize_t)sizeof m)
        orphaned(g); /* end of file: zklock has exited, or died */
    switch (m.type) {
    case GUARD_SIGNAL:
        if (!g->cmd.reaped) {
            if (!group_sent(g, &m))
                kill(g->cmd.pid, m.value);
        } else if (tree_reap(&g->cmd)) {
            /* COMMAND is gone, what it left had SIGTERM: whoever signals
             * zklock now does not want to wait for them. */
            fprintf(stderr, "%s: %s; killing what %s left running\n",
                    g->a->prog, strsignal(m.value), g->a->argv[0]);
            tree_kill_all(&g->cmd);
        }
        break;
    case GUARD_TERMINATE:
        terminate(g);
        if (m.extra)
            set_deadline(g); /* lost: SIGKILL is due */
        break;
    default:
        break;
    }
}

static void on_sigfd(struct guard *g)
{
    struct signalfd_siginfo si;

    while (read(g->sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        if (si.ssi_signo == SIGUSR1 && getppid() != g->a->parent)
            orphaned(g); /* the parent-death signal: a second way to know */
        if (si.ssi_signo != SIGCHLD && si.ssi_signo != SIGUSR1) {
            unsigned i = g->ngot++ % 8;

            g->got[i].signo = (int)si.ssi_signo;
            g->got[i].code = si.ssi_code;
            g->got[i].pid = (pid_t)si.ssi_pid;
            g->got[i].at = now_s();
        }
    }
    tree_reap(&g->cmd);
}

static void on_exec(struct guard *g)
{
    int err;
    ssize_t n = read(g->execfd, &err, sizeof err);

    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n == (ssize_t)sizeof err)
        tell(g, GUARD_EXEC_FAILED, err);
    close(g->execfd);
    g->execfd = -1;
}

static void on_deadline(struct guard *g)
{
    const struct guard_args *a = g->a;

    if (!g->cmd.reaped)
        fprintf(stderr, "%s: %s still running %g s after the %s was "
                "lost; sending SIGKILL\n", a->prog, a->argv[0],
                a->kill_after, a->elect ? "leadership" : "lock");
    else
        fprintf(stderr, "%s: processes %s left still running %g s after "
                "SIGTERM; sending SIGKILL\n", a->prog, a->argv[0],
                a->kill_after);
    tree_kill_all(&g->cmd);
    g->deadline = 0;
}

/* COMMAND has exited: what it left running ends too, before zklock
 * lets go of the lock, as systemd's KillMode=control-group does. */
static void begin_ending(struct guard *g)
{
    int n = terminate(g);

    g->ending = 1;
    if (n > 0)
        fprintf(stderr, "%s: %s exited; sending SIGTERM to the %d "
                "process%s it left running\n", g->a->prog, g->a->argv[0],
                n, n == 1 ? "" : "es");
    if (tree_reap(&g->cmd))
        set_deadline(g);
}

_Noreturn void guard_main(const struct guard_args *a)
{
    struct guard g;
    sigset_t fdset;

    memset(&g, 0, sizeof g);
    g.a = a;
    g.sfd = g.execfd = -1;
    /* The sentinel that forked the guard has closed zklock's
     * descriptors and blocked every signal it can (sentinel.c): the
     * ones zklock passes on are read from the signalfd. */
    signal(SIGCHLD, SIG_DFL); /* not SIG_IGN: we wait for our children */
    sigemptyset(&fdset);
    sigaddset(&fdset, SIGCHLD);
    sigaddset(&fdset, SIGUSR1);
    sigaddset(&fdset, SIGINT);
    sigaddset(&fdset, SIGQUIT);
    sigaddset(&fdset, SIGHUP);
    sigaddset(&fdset, SIGTERM);
    if ((g.sfd = signalfd(-1, &fdset, SFD_NONBLOCK | SFD_CLOEXEC)) < 0)
        failed(&g, "signalfd", errno);
    if (prctl(PR_SET_PDEATHSIG, SIGUSR1) != 0)
        failed(&g, "prctl(PR_SET_PDEATHSIG)", errno);
    if (getppid() != a->parent)
        orphaned(&g); /* gone before the parent-death signal was set */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
        failed(&g, "prctl(PR_SET_CHILD_SUBREAPER)", errno);
    /* Without /proc the tree cannot be found: better not run at all. */
    if (access("/proc/self/stat", R_OK) != 0)
        failed(&g, "/proc/self/stat", errno);
    start_command(&g);
    for (;;) {
        struct pollfd p[3];
        int np = 2, timeout = -1;

        if (g.cmd.reaped && g.execfd < 0) {
            if (!g.ending)
                begin_ending(&g);
            if (!tree_reap(&g.cmd)) {
                tell(&g, GUARD_DONE, g.cmd.status);
                _exit(0);
            }
        }
        if (g.deadline > 0) {
            double left = g.deadline - now_s();

            if (left <= 0) {
                on_deadline(&g);
                continue;
            }
            timeout = (int)(left * 1000) + 1;
        }
        p[0].fd = a->fd;
        p[0].events = POLLIN;
        p[1].fd = g.sfd;
        p[1].events = POLLIN;
        if (g.execfd >= 0) {
            p[2].fd = g.execfd;
            p[2].events = POLLIN;
            np = 3;
        }
        if (poll(p, (nfds_t)np, timeout) < 0)
            continue; /* EINTR; nothing else is expected */
        if (p[0].revents != 0)
            on_message(&g);
        if (p[1].revents != 0)
            on_sigfd(&g);
        if (np == 3 && p[2].revents != 0)
            on_exec(&g);
    }
}
