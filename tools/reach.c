/* The connection to ZooKeeper: the client made from the checked
 * options, the wait for its first session (bounded: --connect-timeout,
 * 15 s by default), a watch that gives up when the connection stays
 * down that long while a lock is awaited, and the words for the two
 * ways it fails: cannot reach (with probe.c's verdict on each server)
 * and not authorized. One client per process. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static struct {
    struct event_base *base;
    zkl_client_t *c;
    int up, ever, waiting, verbose;
    double down_at;  /* when the connection went down (or was opened) */
    double limit_s;  /* --connect-timeout; 0: none */
    struct event *dog;
    void (*on_dog)(void *);
    void *dog_arg;
    char last_error[512]; /* the ZooKeeper client's, for "see the log" */
} cn;

static void on_log(zkl_log_level_t level, const char *msg, void *arg)
{
    (void)arg;
    int n = (int)strcspn(msg, "\n"); /* the ZooKeeper client's end in one */

    if (cn.verbose)
        fprintf(stderr, "%s: [log] %.*s\n", prog, n, msg);
    if (level == ZKL_LOG_ERROR)
        snprintf(cn.last_error, sizeof cn.last_error, "%.*s", n, msg);
}

static void arm_dog(void)
{
    struct timeval tv;

    if (cn.dog == NULL || cn.on_dog == NULL || cn.limit_s <= 0 || cn.up)
        return;
    tv.tv_sec = (time_t)cn.limit_s;
    tv.tv_usec = (suseconds_t)((cn.limit_s - (double)tv.tv_sec) * 1e6);
    evtimer_add(cn.dog, &tv);
}

static void on_conn(zkl_client_t *c, zkl_conn_event_t ev, void *arg)
{
    (void)c;
    (void)arg;
    switch (ev) {
    case ZKL_CONN_CONNECTED:
    case ZKL_CONN_RECONNECTED:
        cn.up = cn.ever = 1;
        if (cn.dog != NULL)
            evtimer_del(cn.dog);
        break;
    case ZKL_CONN_SUSPENDED:
    case ZKL_CONN_EXPIRED:
        if (cn.up) {
            cn.down_at = now_s();
            cn.up = 0;
            arm_dog();
        }
        break;
    case ZKL_CONN_AUTH_FAILED: /* for good: conn_auth_failed() */
        cn.up = 0;
        break;
    }
    if (cn.waiting)
        event_base_loopbreak(cn.base);
}

static void on_dog(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    if (cn.up || cn.on_dog == NULL)
        return;
    cn.on_dog(cn.dog_arg);
    arm_dog(); /* again, should it have let this one pass */
}

/* zkl_strerror(), where "see the log" points at --verbose, and at the
 * ZooKeeper client's last error line when it wrote one. */
const char *cli_strerror(int status)
{
    static char buf[700];

    if (status != ZKL_EZK)
        return zkl_strerror(status);
    if (cn.last_error[0] != '\0')
        snprintf(buf, sizeof buf, "unexpected error from ZooKeeper; its "
                 "client's last error: %s", cn.last_error);
    else
        snprintf(buf, sizeof buf, "unexpected error from ZooKeeper "
                 "(--verbose shows its client's log)");
    return buf;
}

int conn_is_up(void)
{
    return cn.up;
}

int conn_auth_failed(void)
{
    return cn.c != NULL && zkl_client_state(cn.c) == ZKL_CONN_AUTH_FAILED;
}

double conn_down_for(void)
{
    return cn.up ? 0 : now_s() - cn.down_at;
}

/* fn(arg) once the connection has been down --connect-timeout seconds
 * on end, and every as many seconds after while it stays down (NULL:
 * no more). */
void watch_connection(void (*fn)(void *), void *arg)
{
    cn.on_dog = fn;
    cn.dog_arg = arg;
    if (fn == NULL) {
        if (cn.dog != NULL)
            evtimer_del(cn.dog);
        return;
    }
    arm_dog();
}

int unreachable(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s: cannot reach ZooKeeper: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    probe_servers();
    return EXIT_UNREACHABLE;
}

/* what: the path an operation was refused on; NULL for the session's
 * credentials. */
int not_authorized(const char *what)
{
    const char *who = auth_who();

    if (conn_auth_failed() && secure_what() != NULL &&
        strcmp(secure_what(), "TLS") == 0)
        fprintf(stderr, "%s: not authorized: the TLS handshake failed for "
                "good on every server (an untrusted or expired "
                "certificate on either side, or not a TLS port; "
                "--verbose shows why)\n", prog);
    else if (conn_auth_failed() && secure_what() != NULL)
        fprintf(stderr, "%s: not authorized: ZooKeeper refused the %s "
                "identity: authentication failed\n", prog, secure_what());
    else if (what == NULL || conn_auth_failed())
        fprintf(stderr, "%s: not authorized: ZooKeeper refused the "
                "credentials (%s): authentication failed\n", prog,
                who != NULL ? who : "none given");
    else if (who != NULL)
        fprintf(stderr, "%s: not authorized: ZooKeeper refused access to "
                "%s: its ACL (or a parent's) does not let %s in\n", prog,
                what, who);
    else
        fprintf(stderr, "%s: not authorized: ZooKeeper refused access to "
                "%s: its ACL (or a parent's) does not let a client without "
                "credentials in (--auth-file, $ZKLOCK_AUTH)\n", prog, what);
    return EXIT_AUTH;
}

static void wake(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    *(int *)arg = 1;
    event_base_loopbreak(cn.base);
}

/* Waits for the first session for at most limit_s (0: no limit), which
 * limit_name names in the message: 0, or EXIT_AUTH / EXIT_UNREACHABLE
 * after saying why. */
int await_session(double limit_s, const char *limit_name)
{
    struct event *t = NULL;
    int over = 0;

    if (limit_s > 0) {
        struct timeval tv;

        tv.tv_sec = (time_t)limit_s;
        tv.tv_usec = (suseconds_t)((limit_s - (double)tv.tv_sec) * 1e6);
        if ((t = evtimer_new(cn.base, wake, &over)) != NULL)
            evtimer_add(t, &tv);
    }
    cn.waiting = 1;
    while (!cn.up && !conn_auth_failed() && !over)
        event_base_loop(cn.base, EVLOOP_ONCE);
    cn.waiting = 0;
    if (t != NULL)
        event_free(t);
    if (conn_auth_failed())
        return not_authorized(NULL);
    if (!cn.up)
        return unreachable("no session within %g s (%s)", limit_s,
                           limit_name);
    return 0;
}

/* The client for co, attached to base and not yet connected; NULL
 * with *exit_code set after saying why. */
zkl_client_t *open_client(struct event_base *base, const struct conn_opts *co,
                          int *exit_code)
{
    const char *hosts = co->hosts, *from = "-s";
    char *list = NULL, *chroot = NULL;
    zkl_options_t *o = NULL;
    zkl_client_t *c = NULL;
    int rc;

    if (hosts == NULL) {
        hosts = getenv("ZKLOCK_SERVERS");
        from = "$ZKLOCK_SERVERS";
        if (hosts == NULL || hosts[0] == '\0') {
            hosts = ZKL_DEFAULT_SERVERS;
            from = "the default servers";
        }
    }
    if ((*exit_code = servers_load(hosts, from, &list, &chroot)) != 0)
        return NULL;
    cn.verbose = co->verbose;
    zkl_set_log(on_log, NULL, co->verbose ? ZKL_LOG_INFO : ZKL_LOG_ERROR);
    if ((rc = zkl_options_new(&o)) != ZKL_OK ||
        (rc = zkl_options_set_servers(o, list)) != ZKL_OK ||
        (rc = zkl_options_set_chroot(o, chroot)) != ZKL_OK ||
        (rc = zkl_options_set_session_timeout(o, co->session_ms)) !=
            ZKL_OK ||
        (rc = zkl_options_set_conn_cb(o, on_conn, NULL)) != ZKL_OK)
        goto failed;
    if ((*exit_code = auth_load(o, co->auth_file)) != 0 ||
        (*exit_code = secure_load(o, co)) != 0)
        goto out;
    if (co->acl_private) {
        if (auth_who() == NULL) {
            *exit_code = usage_error("--acl private needs credentials "
                                     "(--auth-file, $ZKLOCK_AUTH): without "
                                     "them nobody could remove the nodes");
            goto out;
        }
        if ((rc = zkl_options_set_acl(o, ZKL_ACL_PRIVATE)) != ZKL_OK)
            goto failed;
    }
    if ((rc = zkl_client_new(&c, o)) != ZKL_OK ||
        (rc = zkl_libevent_attach(c, base)) != ZKL_OK)
        goto failed;
    cn.base = base;
    cn.c = c;
    cn.limit_s = co->connect_s;
    cn.down_at = now_s();
    cn.dog = evtimer_new(base, on_dog, NULL);
    goto out;
failed:
    fprintf(stderr, "%s: cannot use servers \"%s\": %s\n", prog, hosts,
            cli_strerror(rc));
    *exit_code = rc == ZKL_ENOMEM ? EXIT_INTERNAL : EXIT_UNREACHABLE;
    zkl_client_free(c);
    c = NULL;
out:
    zkl_options_free(o);
    free(list);
    free(chroot);
    return c;
}

void close_client(void)
{
    if (cn.dog != NULL)
        event_free(cn.dog);
    cn.dog = NULL;
    zkl_client_free(cn.c);
    cn.c = NULL;
    servers_free();
}
