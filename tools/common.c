/* What every zklock command shares: the server list, the client and
 * its loop, checks of lock paths and durations, and the last turns of
 * the loop before the session closes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char *default_hosts(const char *opt)
{
    const char *env = getenv("ZKLOCK_SERVERS");

    if (opt != NULL)
        return opt;
    if (env != NULL && env[0] != '\0')
        return env;
    return ZKL_DEFAULT_SERVERS;
}

int path_ok(const char *path)
{
    int rc = zkl_path_validate(path);

    if (rc != ZKL_OK)
        fprintf(stderr, "%s: bad lock path \"%s\": %s\n", prog, path,
                zkl_strerror(rc));
    return rc == ZKL_OK;
}

zkl_client_t *make_client(struct event_base *base, const char *hosts,
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

int parse_seconds(const char *s, double *out)
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
