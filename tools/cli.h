#ifndef ZKLOCK_CLI_H
#define ZKLOCK_CLI_H
/* zklock(1), shared between its files: hold ZooKeeper locks while a
 * command runs, like flock(1), run a command only while elected leader,
 * list a lock's contenders, or ask its holders to let go. The synopsis
 * is usage.c's help text; zklock(1) says it all. */

#include <signal.h>
#include <stdio.h>
#include <sys/types.h>

#include <event2/event.h>

#include "zklock.h"
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

/* The long options without a short one (getopt_long's val). */
enum {
    OPT_SESSION_TIMEOUT = 256,
    OPT_CONNECT_TIMEOUT,
    OPT_AUTH_FILE,
    OPT_AUTH_REFUSED,  /* --auth, --password: never on the command line */
    OPT_ACL,
    OPT_VERBOSE,
    OPT_OWNER,
    OPT_REVOCABLE,
    OPT_KILL_AFTER,
    OPT_ID,
    OPT_WAIT,
    OPT_TLS_CA,
    OPT_TLS_CERT,
    OPT_TLS_KEY,
    OPT_SASL_USER,
    OPT_SASL_PASSWORD_FILE,
    OPT_SASL_MECH,
    OPT_SECRET_REFUSED /* --sasl-password, --tls-key-password */
};

/* The TLS and SASL options every command takes (getopt_long entries). */
#define SECURE_OPTS                                                        \
    {"tls-ca", required_argument, NULL, OPT_TLS_CA},                       \
    {"tls-cert", required_argument, NULL, OPT_TLS_CERT},                   \
    {"tls-key", required_argument, NULL, OPT_TLS_KEY},                     \
    {"tls-key-password", required_argument, NULL, OPT_SECRET_REFUSED},     \
    {"sasl-user", required_argument, NULL, OPT_SASL_USER},                 \
    {"sasl-password-file", required_argument, NULL,                        \
     OPT_SASL_PASSWORD_FILE},                                              \
    {"sasl-password", required_argument, NULL, OPT_SECRET_REFUSED},        \
    {"sasl-mech", required_argument, NULL, OPT_SASL_MECH}

/* How to reach ZooKeeper, from the options every command shares. */
struct conn_opts {
    const char *hosts;   /* -s; NULL: $ZKLOCK_SERVERS, else the default */
    int session_ms;      /* --session-timeout */
    double connect_s;    /* --connect-timeout; 0: no limit */
    const char *auth_file; /* --auth-file; NULL: $ZKLOCK_AUTH_FILE */
    int acl_private;     /* --acl private */
    /* secure.c; NULL: from the environment */
    const char *tls_ca, *tls_cert, *tls_key;
    const char *sasl_user, *sasl_password_file, *sasl_mech;
    int verbose;         /* --verbose: the ZooKeeper client's log */
};
#define DEFAULT_CONNECT_TIMEOUT 15.0

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
    int busy_code, timeout_code; /* -E CODE sets both */
    int quiet;                   /* -q: no word for busy, timed out */
};

/* common.c */
void conn_opts_init(struct conn_opts *co);
int conn_option(struct conn_opts *co, int opt, const char *arg);
const char *shown_path(const char *path);
int path_ok(const char *path);
int parse_seconds(const char *s, double *out);
int exit_for(int status);
char *append(char *s, const char *sep, const char *text);
void settle(struct event_base *base, zkl_client_t *c);
double now_s(void);

/* servers.c: the server list, checked and resolved before use */
int servers_load(const char *hosts, const char *from, char **list,
                 char **chroot);
size_t servers_count(void);
const char *servers_host(size_t i);
const char *servers_port(size_t i);
const char *servers_chroot(void);
void servers_free(void);

/* auth.c: credentials from a file or the environment, never argv */
int auth_load(zkl_options_t *o, const char *file_opt);
const char *auth_who(void);
int secret_file_read(const char *file, const char *from, char **text,
                     size_t *len_out, char *where, size_t wsize);

/* ---- secure.c: TLS and SASL ---- */
int secure_load(zkl_options_t *o, const struct conn_opts *co);
const char *secure_what(void);

/* reach.c: the connection, its deadline, and why there is none */
zkl_client_t *open_client(struct event_base *base,
                          const struct conn_opts *co, int *exit_code);
int await_session(double limit_s, const char *limit_name);
void watch_connection(void (*on_down_too_long)(void *), void *arg);
const char *cli_strerror(int status);
int conn_auth_failed(void);
int conn_is_up(void);
double conn_down_for(void);
int unreachable(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int not_authorized(const char *what);
void close_client(void);

/* probe.c */
void probe_servers(void);

/* usage.c */
void usage(FILE *f);
int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int getopt_error(int opt, char **argv);

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
