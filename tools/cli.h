#ifndef ZKLOCK_CLI_H
#define ZKLOCK_CLI_H
/* zklock(1), shared between its files: hold ZooKeeper locks while a command runs, like flock(1),
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
 * reached); 3 when it was lost while COMMAND ran (every process of
 * COMMAND's tree got SIGTERM, and SIGKILL --kill-after seconds later if
 * still running); 2 for usage errors; 127 if COMMAND was not found, 126
 * if it could not be run; 70 if the guard process that runs it died. */

#include <signal.h>
#include <stdio.h>
#include <sys/types.h>

#include <event2/event.h>

#include "zklock.h"
#include "zklock_libevent.h"

#include "zklock_libevent.h"

/* Exit statuses of zklock (zklock(1) has the table, beside flock's).
 * COMMAND's own status passes through (128+N when signal N ended it),
 * so a command can always make one of these, as with flock; -E moves
 * the two that mean "someone else holds it" out of its way. */
#define EXIT_BUSY 1         /* -n: held by another contender */
#define EXIT_USAGE 2        /* bad options or arguments: one line why */
#define EXIT_LOST 3         /* the hold was lost while COMMAND ran */
#define EXIT_TIMEDOUT 4     /* -t ran out while others held it */
#define EXIT_UNREACHABLE 5  /* no session within the connect deadline */
#define EXIT_AUTH 6         /* credentials refused, or the ACL forbids */
#define EXIT_REFUSED 7      /* another definite refusal (kind, quota) */
#define EXIT_INTERNAL 70    /* zklock itself failed (EX_SOFTWARE) */
#define EXIT_NOEXEC 126     /* COMMAND found but could not be run */
#define EXIT_EXEC 127       /* COMMAND not found */
/* Until each failure has its own code. */
#define EXIT_NOT_ACQUIRED EXIT_BUSY

extern const char *prog;

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
    int status;       /* exit status to return */
    int lost;
    int done;
    int child_done;     /* the command and every process it started are gone */
    double kill_after;  /* seconds from SIGTERM to SIGKILL */
    /* command.c: the guard process that runs the command (guard.c) */
    pid_t guard;        /* 0: none (yet, or any more) */
    int guard_fd;       /* our end of its socket, -1 when none */
    int guard_done;     /* it reported the command's end */
    int guard_status;   /* the command's wait status, then */
    int guard_failed;   /* it could not start the command */
    int exec_errno;     /* the command could not be run: why */
    int sigfd;          /* signalfd of the signals zklock answers */
    sigset_t mask;      /* the signal mask zklock started with */
    struct event *guard_ev, *sig_ev;
};

/* common.c */
const char *default_hosts(const char *opt);
int path_ok(const char *path);
zkl_client_t *make_client(struct event_base *base, const char *hosts,
                          int session_ms);
int parse_seconds(const char *s, double *out);
char *append(char *s, const char *sep, const char *text);
void settle(struct event_base *base, zkl_client_t *c);

/* usage.c */
void usage(FILE *f);

/* run.c */
void finish(struct run *r, int status);
int run_release(struct run *r);
void run_cancel(struct run *r);
int cmd_run(int argc, char **argv, int elect);

/* command.c */
int command_signals(struct run *r);
void start_child(struct run *r);
int command_terminate(struct run *r, int lost);
void command_free(struct run *r);

/* query.c */
int cmd_query(int argc, char **argv, int revoke);

#endif
