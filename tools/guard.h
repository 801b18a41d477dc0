#ifndef ZKLOCK_GUARD_H
#define ZKLOCK_GUARD_H
/* The guard (guard.c): the process between zklock and COMMAND that
 * keeps COMMAND's processes from outliving zklock's hold, and what it
 * and zklock tell each other over their socket pair (SOCK_SEQPACKET:
 * one struct guard_msg a packet; end of file when the other is gone). */

#include <signal.h>
#include <sys/types.h>

enum guard_msg_type {
    /* zklock to the guard */
    GUARD_SIGNAL,    /* value: a signal sent to zklock, for COMMAND;
                      * code, pid: its si_code and si_pid, to tell one
                      * sent to the whole process group (which COMMAND
                      * has had) from one sent to zklock alone */
    GUARD_TERMINATE, /* SIGTERM to every process of the tree; extra: 1
                      * when the hold was lost (SIGKILL after
                      * kill_after seconds) */
    /* the guard to zklock */
    GUARD_EXEC_FAILED, /* value: execvp's errno */
    GUARD_FAILED,      /* value: errno; COMMAND was not started (the
                        * guard said why on stderr) */
    GUARD_DONE         /* value: COMMAND's wait status, sent once every
                        * process of the tree is gone */
};

struct guard_msg {
    int type, value, extra;
    int code;
    pid_t pid;
};

struct guard_args {
    char **argv;          /* COMMAND */
    const char *prog;     /* for messages */
    const char *what;     /* the lock path(s), for messages */
    int elect;            /* a leadership, not a lock, for messages */
    double kill_after;    /* seconds from SIGTERM to SIGKILL */
    const sigset_t *mask; /* the signal mask COMMAND starts with */
    const char *paths, *tokens; /* ZKLOCK_PATH, ZKLOCK_TOKEN */
    pid_t zklock;         /* zklock's pid */
    pid_t zpgid;          /* zklock's process group, COMMAND's too */
    pid_t parent;         /* the guard's parent: the sentinel */
    int fd;               /* the guard's end of the socket pair */
};

/* Runs in the sentinel's child, in zklock's process group: starts
 * COMMAND and looks after its tree until it is empty, then tells zklock
 * and exits. When zklock is gone, however it went, it kills the tree at
 * once. */
_Noreturn void guard_main(const struct guard_args *a);

/* Runs in the child zklock forks once it holds (sentinel.c), in a
 * process group of its own, so that a SIGKILL sent to zklock's whole
 * group (kill -9 %job, timeout -k), which kills zklock, the guard and
 * COMMAND at once, leaves it alive: it forks the guard, and, a child
 * subreaper above it, kills what is left of the tree (processes of
 * COMMAND that left the group with setsid()) when zklock or the guard
 * dies. Exits when the guard has: with its status, or by its signal. */
_Noreturn void sentinel_main(struct guard_args *a);

#endif
