/* What every zklock command shares: the connection options, checks of
 * lock paths and durations, the exit status of a library error, and
 * the last turns of the loop before the session closes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

void conn_opts_init(struct conn_opts *co)
{
    memset(co, 0, sizeof *co);
    co->session_ms = ZKL_DEFAULT_SESSION_TIMEOUT;
    co->connect_s = DEFAULT_CONNECT_TIMEOUT;
}

/* Digits only, then the library's range: atoi() took "10s" for 10 and
 * "999999999" went through to the library's "invalid argument". */
static int session_timeout(const char *arg, int *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(arg, &end, 10);
    if (end == arg || *end != '\0' || arg[0] == '-' || arg[0] == '+')
        return usage_error("--session-timeout \"%s\" is not a number of "
                           "milliseconds", arg);
    if (errno != 0 || v < 1 || v > 600000)
        return usage_error("--session-timeout %s is outside 1..600000 ms "
                           "(what the library takes; the server then "
                           "grants between its minSessionTimeout and "
                           "maxSessionTimeout)", arg);
    *out = (int)v;
    return 0;
}

/* One of the options every command takes: 1 when it was (and is set),
 * 0 when opt is not one of them, -1 after a usage error (printed). */
int conn_option(struct conn_opts *co, int opt, const char *arg)
{
    switch (opt) {
    case 's':
        if (arg[0] == '/') {
            usage_error("-s takes the ZooKeeper servers (host:port,...), "
                        "not a path (%s); flock's -s, a shared lock, is -r "
                        "here", shown_path(arg));
            return -1;
        }
        co->hosts = arg;
        return 1;
    case OPT_SESSION_TIMEOUT:
        return session_timeout(arg, &co->session_ms) == 0 ? 1 : -1;
    case OPT_CONNECT_TIMEOUT:
        if (parse_seconds(arg, &co->connect_s) != 0) {
            usage_error("--connect-timeout \"%s\" is not a number of "
                        "seconds (0 for no limit)", arg);
            return -1;
        }
        return 1;
    case OPT_AUTH_FILE:
        co->auth_file = arg;
        return 1;
    case OPT_AUTH_REFUSED:
        /* The value is a secret: not echoed. */
        usage_error("credentials are never taken on the command line "
                    "(every user can read it in ps): give a file, "
                    "--auth-file FILE, or set $ZKLOCK_AUTH");
        return -1;
    case OPT_TLS_CA:
        co->tls_ca = arg;
        return 1;
    case OPT_TLS_CERT:
        co->tls_cert = arg;
        return 1;
    case OPT_TLS_KEY:
        co->tls_key = arg;
        return 1;
    case OPT_SASL_USER:
        co->sasl_user = arg;
        return 1;
    case OPT_SASL_PASSWORD_FILE:
        co->sasl_password_file = arg;
        return 1;
    case OPT_SASL_MECH:
        co->sasl_mech = arg;
        return 1;
    case OPT_SECRET_REFUSED:
        usage_error("passwords are never taken on the command line "
                    "(every user can read it in ps): give "
                    "--sasl-password-file FILE, or set "
                    "$ZKLOCK_SASL_PASSWORD or $ZKLOCK_TLS_KEY_PASSWORD");
        return -1;
    case OPT_ACL:
        if (strcmp(arg, "private") == 0 || strcmp(arg, "open") == 0) {
            co->acl_private = arg[0] == 'p';
            return 1;
        }
        usage_error("--acl \"%s\": it is open or private", arg);
        return -1;
    case OPT_VERBOSE:
        co->verbose = 1;
        return 1;
    default:
        return 0;
    }
}

/* A path for a message, quoted: bytes that are not printable ASCII as
 * \xhh, a long one cut to its first 48 and last 16 bytes, with its
 * length, so a 2,000-byte mistake is one readable line. Static storage:
 * one at a time. */
const char *shown_path(const char *path)
{
    static char out[4 * 80 + 64];
    size_t len = strlen(path), i, o = 0;

    out[o++] = '"';
    for (i = 0; i < len; i++) {
        unsigned char ch;

        if (len > 80 && i == 48) {
            o += (size_t)snprintf(out + o, sizeof out - o, "...");
            i = len - 16;
        }
        ch = (unsigned char)path[i];
        if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\')
            out[o++] = (char)ch;
        else
            o += (size_t)snprintf(out + o, sizeof out - o, "\\x%02x", ch);
    }
    out[o++] = '"';
    out[o] = '\0';
    if (len > 80)
        snprintf(out + o, sizeof out - o, " (%zu bytes)", len);
    return out;
}

int path_ok(const char *path)
{
    char why[200];

    if (zkl_path_explain(path, why, sizeof why) == ZKL_OK)
        return 1;
    usage_error("bad lock path %s: %s", shown_path(path), why);
    return 0;
}

int parse_seconds(const char *s, double *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v >= 0) || v > 1e9)
        return -1;
    *out = v;
    return 0;
}

/* The exit status for a library error other than busy and timed out
 * (which the caller words, with -E and -q). */
int exit_for(int status)
{
    switch (status) {
    case ZKL_EAUTH:
        return EXIT_AUTH;
    case ZKL_ECONNLOSS:
    case ZKL_ESESSION:
    case ZKL_ESUSPENDED:
        return EXIT_UNREACHABLE;
    case ZKL_EKIND:
    case ZKL_EQUOTA:
    case ZKL_ETHROTTLED:
    case ZKL_ECOUNT:
    case ZKL_ELIMIT:
    case ZKL_EZK:
        return EXIT_REFUSED;
    case ZKL_EINVAL:
    case ZKL_EBADPATH:
        return EXIT_USAGE;
    default:
        return EXIT_INTERNAL;
    }
}

/* Appends text and a separator to a growing string; NULL when out of
 * memory (the old string is freed). */
char *append(char *s, const char *sep, const char *text)
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

double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
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
void settle(struct event_base *base, zkl_client_t *c)
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
