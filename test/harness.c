/* Test runner and helpers; see harness.h. Each test runs in its own
 * forked process with a time limit, so a hang fails one test, not the
 * suite. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zookeeper/zookeeper.h>

#include "harness.h"

struct event_base *t_base;
int t_grant_seq;
int t_event_seq;

/* ---------------- ensemble ---------------- */

static const char *ens_dir(void)
{
    const char *d = getenv("ZKL_TEST_ENSEMBLE");

    if (d == NULL || d[0] == '\0')
        FAILF("ZKL_TEST_ENSEMBLE is not set: run through test/suite.sh");
    return d;
}

/* The loop runs while a node stops or starts: on a loaded machine that
 * takes seconds, and a test that stopped its loop for them would see
 * its own sessions time out (a holder presumed lost) for a stall that
 * no program that keeps its loop turning has. */
void t_ens(const char *cmd, int k)
{
    char line[1024];
    const char *src = getenv("top_srcdir");
    uint64_t end = t_now_ms() + 180000;
    int status = 0;
    pid_t pid, got;

    snprintf(line, sizeof line, "%s/test/zkserver.sh %s %s/n%d >/dev/null",
             src ? src : ".", cmd, ens_dir(), k);
    fflush(NULL);
    if ((pid = fork()) < 0)
        FAILF("fork: %s", strerror(errno));
    if (pid == 0) {
        /* Not the test's sockets (the ZooKeeper client's are not
         * close-on-exec): a node started here would hold them open for
         * its life. A group of its own, to be killed whole. */
        closefrom(3);
        setpgid(0, 0);
        execl("/bin/sh", "sh", "-c", line, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid); /* (both sides: the kill below needs it done) */
    while ((got = waitpid(pid, &status, WNOHANG)) == 0) {
        if (t_now_ms() > end) {
            kill(-pid, SIGKILL);
            waitpid(pid, &status, 0);
            FAILF("zkserver.sh %s n%d: no end in 180 s", cmd, k);
        }
        t_run_for(20);
    }
    if (got < 0)
        FAILF("waitpid: %s", strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        FAILF("zkserver.sh %s n%d failed (%d)", cmd, k, status);
}

static int ens_port(int k)
{
    char p[512];
    FILE *f;
    int port = 0;

    snprintf(p, sizeof p, "%s/n%d/port", ens_dir(), k);
    if ((f = fopen(p, "r")) == NULL)
        FAILF("no %s", p);
    if (fscanf(f, "%d", &port) != 1)
        port = 0;
    fclose(f);
    return port;
}

const char *t_ens_host(int k)
{
    static char buf[4][64];
    static int i;
    char *b = buf[i++ % 4];

    snprintf(b, 64, "127.0.0.1:%d", ens_port(k));
    return b;
}

int t_ens_node_of(const char *hostport)
{
    const char *colon = hostport ? strrchr(hostport, ':') : NULL;
    int k;

    for (k = 1; colon != NULL && k <= T_ENS_NODES; k++)
        if (atoi(colon + 1) == ens_port(k))
            return k;
    FAILF("%s is no node of the ensemble", hostport ? hostport : "NULL");
}

int t_ens_leader(long ms)
{
    uint64_t end = t_now_ms() + (uint64_t)ms;
    char line[1024], out[64];
    const char *src = getenv("top_srcdir");
    int k;

    do {
        for (k = 1; k <= T_ENS_NODES; k++) {
            FILE *f;

            snprintf(line, sizeof line, "%s/test/zkserver.sh mode %s/n%d",
                     src ? src : ".", ens_dir(), k);
            if ((f = popen(line, "r")) == NULL)
                continue;
            out[0] = '\0';
            if (fgets(out, sizeof out, f) == NULL)
                out[0] = '\0';
            pclose(f);
            if (strncmp(out, "leader", 6) == 0)
                return k;
        }
        t_run_for(100);
    } while (t_now_ms() < end);
    FAILF("no leader within %ld ms", ms);
}

/* ---------------- loop ---------------- */

static void t_wake(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
}

int t_run_cond(int (*cond)(void *), void *arg, long ms)
{
    uint64_t end = t_now_ms() + (uint64_t)ms;
    struct event *tick = evtimer_new(t_base, t_wake, NULL);

    while (!cond(arg) && t_now_ms() < end) {
        struct timeval tv = {0, 20000};

        evtimer_add(tick, &tv);
        event_base_loop(t_base, EVLOOP_ONCE);
    }
    event_free(tick);
    return cond(arg);
}

static int flag_set(void *arg)
{
    return *(volatile int *)arg != 0;
}

int t_run_until(volatile int *flag, long ms)
{
    return t_run_cond(flag_set, (void *)flag, ms);
}

void t_tick(void)
{
    struct event *tick = evtimer_new(t_base, t_wake, NULL);
    struct timeval tv = {0, 20000};

    evtimer_add(tick, &tv);
    event_base_loop(t_base, EVLOOP_ONCE);
    event_free(tick);
}

static int never(void *arg)
{
    (void)arg;
    return 0;
}

void t_run_for(long ms)
{
    t_run_cond(never, NULL, ms);
}

/* ---------------- clients ---------------- */

void t_conn_cb(zkl_client_t *c, zkl_conn_event_t ev, void *arg)
{
    t_conn_t *t = arg;

    (void)c;
    if (t->n < 64)
        t->events[t->n++] = ev;
    if (ev == ZKL_CONN_CONNECTED || ev == ZKL_CONN_RECONNECTED)
        t->connected = 1;
    else
        t->connected = 0;
}

int t_has_event(const t_conn_t *conn, int ev)
{
    int i;

    for (i = 0; i < conn->n && i < 64; i++)
        if (conn->events[i] == ev)
            return 1;
    return 0;
}

zkl_stats_t t_stats(zkl_client_t *c)
{
    zkl_stats_t st;

    ASSERT_RC(zkl_client_stats(c, &st, sizeof st), ZKL_OK);
    return st;
}

/* The suite's clients over TLS or with SASL when test/test-tls.sh runs
 * it against secured servers: ZKL_TEST_TLS_CERTS names the directory of
 * test/tls-certs.sh, ZKL_TEST_SASL_USER and ZKL_TEST_SASL_PASSWORD the
 * identity. Unset: plain sessions. */
void t_secure(zkl_options_t *o)
{
    const char *certs = getenv("ZKL_TEST_TLS_CERTS");
    const char *user = getenv("ZKL_TEST_SASL_USER");
    char ca[512], cert[512], key[512];

    if (certs != NULL && certs[0] != '\0') {
        snprintf(ca, sizeof ca, "%s/ca.pem", certs);
        snprintf(cert, sizeof cert, "%s/client.cert.pem", certs);
        snprintf(key, sizeof key, "%s/client.key.pem", certs);
        ASSERT_RC(zkl_options_set_tls(o, ca, cert, key, NULL), ZKL_OK);
    }
    if (user != NULL && user[0] != '\0')
        ASSERT_RC(zkl_options_set_sasl(o, NULL, user,
                                       getenv("ZKL_TEST_SASL_PASSWORD"),
                                       NULL, NULL),
                  ZKL_OK);
}

/* How long a client may take to connect: 10 s, or ZKL_TEST_CONNECT_MS
 * (the TLS suite under valgrind, where a handshake's crypto runs some
 * fifty times slower). */
long t_connect_ms(void)
{
    const char *v = getenv("ZKL_TEST_CONNECT_MS");

    return v != NULL && atol(v) > 0 ? atol(v) : 10000;
}

zkl_client_t *t_client(const char *hosts, int session_ms, t_conn_t *conn)
{
    static t_conn_t spare[64];
    static int nspare;
    zkl_client_t *c;

    if (conn == NULL)
        conn = &spare[nspare++ % 64];
    c = t_client_start(hosts, session_ms, conn);
    if (!t_run_until(&conn->connected, t_connect_ms()))
        FAILF("client for %s did not connect within %ld ms", hosts,
              t_connect_ms());
    /* The look at the ensemble's configuration that every connection
     * starts is answered: a fault a test aims at "the next read" then
     * meets the test's own. */
    if (!WAIT_FOR(t_stats(c).outstanding == 0, 10000))
        FAILF("client for %s: its first read not answered within 10 s",
              hosts);
    return c;
}

/* Session timeouts times ZKL_TEST_SESSION_SCALE (default 1): the TLS
 * suite's run under valgrind, beside three other CI lanes, saw its
 * process starved for seconds ("Exceeded deadline by 2285ms") and a
 * connection time out, which is not what its tests are about. */
static int t_session_ms(int ms)
{
    const char *v = getenv("ZKL_TEST_SESSION_SCALE");
    long k = v != NULL ? atol(v) : 1;

    return k > 1 && k < 10 ? ms * (int)k : ms;
}

zkl_client_t *t_client_start(const char *hosts, int session_ms,
                             t_conn_t *conn)
{
    zkl_options_t *o;
    zkl_client_t *c;

    session_ms = t_session_ms(session_ms);
    memset(conn, 0, sizeof *conn);
    ASSERT_RC(zkl_options_new(&o), ZKL_OK);
    ASSERT_RC(zkl_options_set_servers(o, hosts), ZKL_OK);
    t_secure(o);
    ASSERT_RC(zkl_options_set_session_timeout(o, session_ms), ZKL_OK);
    ASSERT_RC(zkl_options_set_conn_cb(o, t_conn_cb, conn), ZKL_OK);
    ASSERT_RC(zkl_client_new(&c, o), ZKL_OK);
    zkl_options_free(o);
    ASSERT_RC(zkl_libevent_attach(c, t_base), ZKL_OK);
    return c;
}

/* Records one event of a lock or a multi-lock; held: what the handle
 * says now. */
static void t_tally(t_lock_t *t, zkl_lock_event_t ev, int status, int held)
{
    if (t->n < 32) {
        t->ev[t->n] = ev;
        t->st[t->n] = status;
    }
    t->n++;
    t->last_status = status;
    t->at_ms = t_now_ms();
    t_event_seq++;
    switch (ev) {
    case ZKL_LOCK_ACQUIRED:
        t->acquired++;
        t->grant_ev = t_event_seq;
        t->order = ++t_grant_seq;
        ASSERT(held);
        break;
    case ZKL_LOCK_FAILED:
        t->failed++;
        ASSERT(!held);
        break;
    case ZKL_LOCK_RELEASED:
        t->released++;
        break;
    case ZKL_LOCK_LOST:
        t->lost++;
        t->lost_ev = t_event_seq;
        ASSERT(!held);
        break;
    case ZKL_LOCK_SUSPENDED:
        t->suspended++;
        t->susp_ev = t_event_seq;
        break;
    case ZKL_LOCK_RESTORED:
        t->restored++;
        break;
    case ZKL_LOCK_REVOKE_REQUESTED:
        t->revoked++;
        ASSERT(held);
        break;
    case ZKL_LOCK_QUEUED:
        t->queued++;
        t->ahead = status;
        ASSERT(status >= 1);
        break;
    }
}

void t_lock_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status, void *arg)
{
    t_lock_t *t = arg;

    ASSERT(t->lk == lk);
    t_tally(t, ev, status, zkl_lock_is_held(lk));
    if (ev == ZKL_LOCK_ACQUIRED && t->release_on_acquire)
        ASSERT_RC(zkl_lock_release(lk), ZKL_OK);
}

void t_multi_cb(zkl_multi_t *m, zkl_lock_event_t ev, int status, void *arg)
{
    t_lock_t *t = arg;

    ASSERT(t->m == m);
    /* A set is told only these. */
    ASSERT(ev != ZKL_LOCK_QUEUED && ev != ZKL_LOCK_REVOKE_REQUESTED);
    t_tally(t, ev, status, zkl_multi_is_held(m));
}

void t_multi_init(t_multi_t *t, zkl_client_t *c, const char *const *paths,
                  size_t n)
{
    memset(t, 0, sizeof *t);
    ASSERT_RC(zkl_multi_new(&t->m, c, paths, NULL, n, t_multi_cb, t),
              ZKL_OK);
}

void t_lock_init(t_lock_t *t, zkl_client_t *c, const char *path)
{
    t_lock_init_kind(t, c, path, ZKL_KIND_MUTEX);
}

void t_lock_init_kind(t_lock_t *t, zkl_client_t *c, const char *path,
                      zkl_lock_kind_t kind)
{
    memset(t, 0, sizeof *t);
    ASSERT_RC(zkl_lock_new_kind(&t->lk, c, path, kind, t_lock_cb, t),
              ZKL_OK);
}

void t_lock_init_lease(t_lock_t *t, zkl_client_t *c, const char *path,
                       int max)
{
    memset(t, 0, sizeof *t);
    ASSERT_RC(zkl_lease_new(&t->lk, c, path, max, t_lock_cb, t), ZKL_OK);
}

void t_lock_cycle(t_lock_t *t)
{
    int acquired = t->acquired, released = t->released;

    ASSERT_RC(zkl_lock_acquire(t->lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(t->acquired > acquired, 5000));
    ASSERT_RC(zkl_lock_release(t->lk), ZKL_OK);
    ASSERT(WAIT_FOR(t->released > released, 5000));
}

void t_hold_and_queue(t_lock_t *hold, zkl_client_t *hc, t_lock_t *wait,
                      zkl_client_t *wc, const char *path)
{
    t_lock_init(hold, hc, path);
    t_lock_init(wait, wc, path);
    ASSERT_RC(zkl_lock_acquire(hold->lk, -1), ZKL_OK);
    ASSERT(t_run_until(&hold->acquired, 5000));
    ASSERT_RC(zkl_lock_acquire(wait->lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(zkl_lock_state(wait->lk) == ZKL_STATE_QUEUED, 5000));
    ASSERT_EQ(t_zk_wait_count(path, 2, 5000), 2);
}

void t_listing_cb(zkl_client_t *c, int status, const char *const *names,
                  size_t n, void *arg)
{
    t_listing_t *l = arg;
    size_t i;

    (void)c;
    l->status = status;
    l->n = n;
    for (i = 0; i < n && i < 8; i++)
        snprintf(l->names[i], sizeof l->names[i], "%s", names[i]);
    l->done = 1;
}

/* ---------------- runner ---------------- */

static void test_no_lock_nodes_left(void)
{
    ASSERT_EQ(t_leftover_nodes(), 0);
}

#define T(name, secs) void test_##name(void);
#include "test-list.h"
#include "test-ensemble-list.h"
#include "test-tls-list.h"
#undef T

static const t_case_t tests[] = {
#define T(name, secs) {#name, test_##name, secs},
#include "test-list.h"
#undef T
};

static const t_case_t ens_tests[] = {
#define T(name, secs) {#name, test_##name, secs},
#include "test-ensemble-list.h"
#undef T
};

static const t_case_t tls_tests[] = {
#define T(name, secs) {#name, test_##name, secs},
#include "test-tls-list.h"
#undef T
};

/* ZKL_TEST_SHARD=K/N: only the Kth of N shards of the tests selected,
 * so N runners (each against a server of its own) share a list. Each
 * test goes, in list order, to the shard with the least time limit so
 * far: the limits follow the durations closely enough to even the
 * shards, and every runner computes the same split. Unset: all. */
static int t_in_shard(const t_case_t *tc)
{
    static long load[64];
    const char *s = getenv("ZKL_TEST_SHARD");
    int k, n, j, least = 0;

    if (s == NULL || s[0] == '\0')
        return 1;
    if (sscanf(s, "%d/%d", &k, &n) != 2 || n < 1 || n > 64 || k < 1 ||
        k > n)
        FAILF("ZKL_TEST_SHARD=%s: want K/N, 1 <= K <= N <= 64", s);
    for (j = 1; j < n; j++)
        if (load[j] < load[least])
            least = j;
    load[least] += tc->secs;
    return least == k - 1;
}

/* Each test gets a loop of its own, in its own process. */
static void setup(void)
{
    t_base = event_base_new();
}

static void teardown(void)
{
    event_base_free(t_base);
    libevent_global_shutdown();
}

/* run-tests [NAME-SUBSTRING...]: the tests whose names match.
 * run-tests --leftovers: checks that no lock node is left anywhere
 * (suite.sh runs it after every other test).
 * run-tests --ensemble [...]: the tests of a 3-node ensemble.
 * run-tests --tls [...]: the secured servers' (test/test-tls.sh).
 * run-tests --list [--ensemble] [...]: the names those would run, one a
 * line, none run (suite.sh starts a runner only when it selects some:
 * a run of no test fails).
 * ZKL_TEST_SHARD=K/N (see t_in_shard) applies to each of these lists. */
int main(int argc, char **argv)
{
    static const t_case_t left = {"no_lock_nodes_left",
                                  test_no_lock_nodes_left, 120};
    const t_case_t *list = tests;
    size_t i, n = sizeof tests / sizeof tests[0];
    int listing = 0;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 2 && strcmp(argv[1], "--leftovers") == 0) {
        t_run_case(&left, NULL, NULL);
        return t_finish();
    }
    if (argc >= 2 && strcmp(argv[1], "--list") == 0) {
        listing = 1;
        argc--;
        argv++;
    }
    if (argc >= 2 && strcmp(argv[1], "--ensemble") == 0) {
        list = ens_tests;
        n = sizeof ens_tests / sizeof ens_tests[0];
        argc--;
        argv++;
    } else if (argc >= 2 && strcmp(argv[1], "--tls") == 0) {
        list = tls_tests;
        n = sizeof tls_tests / sizeof tls_tests[0];
        argc--;
        argv++;
    }
    for (i = 0; i < n; i++) {
        if (!t_selected(list[i].name, argc - 1, argv + 1) ||
            !t_in_shard(&list[i]))
            continue;
        if (listing)
            printf("%s\n", list[i].name);
        else
            t_run_case(&list[i], setup, teardown);
    }
    return listing ? 0 : t_finish();
}
