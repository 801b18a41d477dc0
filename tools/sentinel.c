/* The sentinel (guard.h): the process between zklock and the guard.
 *
 * The guard must be in zklock's process group: COMMAND, its child,
 * stays there (in the terminal's foreground group), and the guard tells
 * a signal sent to the whole group, which COMMAND has had, from one
 * sent to zklock alone by getting it too. So a SIGKILL sent to that
 * group (kill -9 %job, timeout -k) kills zklock, the guard and COMMAND
 * at once, and would leave running the processes of COMMAND that left
 * the group (setsid(), setpgid()), re-parented to init, without the
 * lock. The sentinel is in a group of its own and a child subreaper
 * above the guard: those orphans come to it, and it kills them when
 * zklock or the guard dies. It does nothing else: a plain signalfd
 * loop, none of zklock's descriptors. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "guard.h"
#include "tree.h"

/* Every descriptor zklock made for itself is close-on-exec (the event
 * loop's, the ZooKeeper connection, its end of the guard's socket):
 * closed, for the sentinel and the guard it forks, so that zklock's
 * end of the socket is zklock's alone (its death must end the guard's
 * socket) and nothing of zklock's is held. keep is the guard's end.
 * The others are the caller's, for COMMAND, as they were. */
static void close_cloexec_fds(int keep)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;

    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        int fd = atoi(e->d_name), fl;

        if (e->d_name[0] == '.' || fd == dirfd(d) || fd == keep)
            continue;
        fl = fcntl(fd, F_GETFD);
        if (fl >= 0 && (fl & FD_CLOEXEC))
            close(fd);
    }
    closedir(d);
}

/* Ends as the guard did, so that zklock reads the guard's end in ours:
 * by its signal, or with its status. */
static _Noreturn void end_as(int st)
{
    if (WIFSIGNALED(st)) {
        sigset_t one;

        signal(WTERMSIG(st), SIG_DFL);
        sigemptyset(&one);
        sigaddset(&one, WTERMSIG(st));
        sigprocmask(SIG_UNBLOCK, &one, NULL);
        raise(WTERMSIG(st));
    }
    _exit(WIFEXITED(st) ? WEXITSTATUS(st) : EXIT_INTERNAL);
}

_Noreturn void sentinel_main(struct guard_args *a)
{
    sigset_t block, fdset;
    pid_t guard;
    int sfd, n;

    setpgid(0, 0);
    close_cloexec_fds(a->fd);
    /* Every signal that can be is blocked, here and in the guard,
     * which inherits the mask (a fault's are left, to end a broken
     * process): the guard is in zklock's process group, and a signal
     * sent to the group (USR2, ALRM, ...) must not kill it. COMMAND
     * starts with zklock's own mask (guard.c, start_command). Here only
     * zklock's death (the parent-death signal) and the guard's
     * (SIGCHLD) matter. */
    sigfillset(&block);
    sigdelset(&block, SIGSEGV);
    sigdelset(&block, SIGBUS);
    sigdelset(&block, SIGFPE);
    sigdelset(&block, SIGILL);
    sigdelset(&block, SIGABRT);
    sigprocmask(SIG_BLOCK, &block, NULL);
    sigemptyset(&fdset);
    sigaddset(&fdset, SIGCHLD);
    sigaddset(&fdset, SIGUSR2);
    if ((sfd = signalfd(-1, &fdset, SFD_CLOEXEC)) < 0 ||
        prctl(PR_SET_CHILD_SUBREAPER, 1) != 0 ||
        prctl(PR_SET_PDEATHSIG, SIGUSR2) != 0) {
        fprintf(stderr, "%s: sentinel: %s\n", a->prog, strerror(errno));
        _exit(EXIT_INTERNAL); /* nothing started: zklock lets go */
    }
    if (getppid() != a->zklock)
        _exit(EXIT_INTERNAL); /* zklock is gone already */
    a->parent = getpid();
    guard = fork();
    if (guard == 0) {
        close(sfd);
        /* Back in zklock's group, for COMMAND (see above). */
        if (setpgid(0, a->zpgid) != 0)
            fprintf(stderr, "%s: guard: setpgid: %s\n", a->prog,
                    strerror(errno));
        guard_main(a);
    }
    close(a->fd);
    if (guard < 0) {
        fprintf(stderr, "%s: sentinel: fork: %s\n", a->prog,
                strerror(errno));
        _exit(EXIT_INTERNAL);
    }
    (void)setpgid(guard, a->zpgid); /* whichever of the two comes first */
    for (;;) {
        struct signalfd_siginfo si;
        int st;
        pid_t pid;

        if (read(sfd, &si, sizeof si) != (ssize_t)sizeof si) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (si.ssi_signo == SIGUSR2 && getppid() != a->zklock)
            break; /* zklock died */
        while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
            if (pid == guard) {
                /* The tree is empty when the guard ended well; what is
                 * left when it did not goes now. */
                n = tree_kill_all(NULL);
                if (n > 0)
                    fprintf(stderr, "%s: the guard (pid %ld) is gone; "
                            "killed the %d process%s of %s\n", a->prog,
                            (long)guard, n, n == 1 ? "" : "es",
                            a->argv[0]);
                end_as(st);
            }
    }
    /* zklock is gone. The guard, if it lives, kills the tree at once
     * (it has read the end of its socket); what it cannot reach (it was
     * killed with zklock's group) is ours. A guard that does not end
     * within 100 ms (stopped?) is not waited for. */
    for (n = 0; n < 10 && guard > 0; n++) {
        struct pollfd p = {sfd, POLLIN, 0};
        int st;

        if (waitpid(guard, &st, WNOHANG) == guard)
            guard = 0;
        else if (poll(&p, 1, 10) > 0) {
            struct signalfd_siginfo si;

            (void)read(sfd, &si, sizeof si);
        }
    }
    n = tree_kill_all(NULL);
    if (n > 0)
        fprintf(stderr, "%s: zklock (pid %ld) is gone; killed the %d "
                "process%s of %s\n", a->prog, (long)a->zklock, n,
                n == 1 ? "" : "es", a->argv[0]);
    _exit(0);
}
