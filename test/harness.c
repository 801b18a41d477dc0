/* Test runner and helpers; see harness.h. Each test runs in its own
 * forked process with a time limit, so a hang fails one test, not the
 * suite. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zookeeper/zookeeper.h>

#include "harness.h"

struct event_base *t_base;
int t_grant_seq;
int t_event_seq;
static const char *cur_test = "none";

/* ---------------- environment ---------------- */

const char *t_hosts(void)
{
    const char *h = getenv("ZKL_TEST_HOSTS");

    if (h == NULL || h[0] == '\0')
        FAILF("ZKL_TEST_HOSTS is not set: run the suite through "
              "test/suite.sh, which starts a ZooKeeper server");
    return h;
}

uint16_t t_port(void)
{
    const char *p = strrchr(t_hosts(), ':');

    return p ? (uint16_t)atoi(p + 1) : 0;
}

const char *t_path(const char *suffix)
{
    static char buf[8][256];
    static int i;
    char *b = buf[i++ % 8];

    snprintf(b, 256, "/zkl-test/%s-%d%s%s", cur_test, (int)getpid(),
             suffix ? "-" : "", suffix ? suffix : "");
    return b;
}

uint64_t t_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void t_server(const char *cmd)
{
    char line[1024];
    const char *dir = getenv("ZKL_TEST_ZKDIR"), *src = getenv("top_srcdir");
    int rc;

    if (dir == NULL)
        FAILF("ZKL_TEST_ZKDIR not set");
    snprintf(line, sizeof line, "%s/test/zkserver.sh %s %s >/dev/null",
             src ? src : ".", cmd, dir);
    rc = system(line);
    if (rc != 0)
        FAILF("zkserver.sh %s failed (%d)", cmd, rc);
}

/* ---------------- ensemble ---------------- */

static const char *ens_dir(void)
{
    const char *d = getenv("ZKL_TEST_ENSEMBLE");

    if (d == NULL || d[0] == '\0')
        FAILF("ZKL_TEST_ENSEMBLE is not set: run through test/suite.sh");
    return d;
}

void t_ens(const char *cmd, int k)
{
    char line[1024];
    const char *src = getenv("top_srcdir");
    int rc;

    snprintf(line, sizeof line, "%s/test/zkserver.sh %s %s/n%d >/dev/null",
             src ? src : ".", cmd, ens_dir(), k);
    rc = system(line);
    if (rc != 0)
        FAILF("zkserver.sh %s n%d failed (%d)", cmd, k, rc);
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

static void t_conn_cb(zkl_client_t *c, zkl_conn_event_t ev, void *arg)
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

zkl_client_t *t_client(const char *hosts, int session_ms, t_conn_t *conn)
{
    static t_conn_t spare[64];
    static int nspare;
    zkl_client_t *c;

    if (conn == NULL)
        conn = &spare[nspare++ % 64];
    c = t_client_start(hosts, session_ms, conn);
    if (!t_run_until(&conn->connected, 10000))
        FAILF("client for %s did not connect within 10 s", hosts);
    return c;
}

zkl_client_t *t_client_start(const char *hosts, int session_ms,
                             t_conn_t *conn)
{
    zkl_options_t *o;
    zkl_client_t *c;

    memset(conn, 0, sizeof *conn);
    ASSERT_RC(zkl_options_new(&o), ZKL_OK);
    ASSERT_RC(zkl_options_set_servers(o, hosts), ZKL_OK);
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

/* ---------------- observer ---------------- */

struct obs {
    int done, rc, connected;
    struct String_vector sv;
    int64_t czxid;
    char *buf;      /* t_zk_data: where the data goes */
    int size, len;
};

static void obs_watcher(zhandle_t *zh, int type, int state, const char *p,
                        void *ctx)
{
    struct obs *o = ctx;

    (void)zh;
    (void)p;
    if (type == ZOO_SESSION_EVENT && state == ZOO_CONNECTED_STATE)
        o->connected = 1;
}

static void obs_pump(zhandle_t *zh, volatile int *flag, long ms)
{
    uint64_t end = t_now_ms() + (uint64_t)ms;

    while (!*flag && t_now_ms() < end) {
        int fd = -1, interest = 0, ev = 0;
        struct timeval tv = {0, 0};
        struct pollfd pfd;

        zookeeper_interest(zh, &fd, &interest, &tv);
        pfd.fd = fd;
        pfd.events = (short)(((interest & ZOOKEEPER_READ) ? POLLIN : 0) |
                             ((interest & ZOOKEEPER_WRITE) ? POLLOUT : 0));
        pfd.revents = 0;
        poll(&pfd, fd >= 0 ? 1 : 0, 20);
        if (pfd.revents & (POLLIN | POLLHUP | POLLERR))
            ev |= ZOOKEEPER_READ;
        if (pfd.revents & POLLOUT)
            ev |= ZOOKEEPER_WRITE;
        zookeeper_process(zh, ev);
    }
}

static zhandle_t *obs_open(struct obs *o)
{
    zhandle_t *zh;

    memset(o, 0, sizeof *o);
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    zh = zookeeper_init(t_hosts(), obs_watcher, 10000, NULL, o, 0);
    if (zh == NULL)
        FAILF("observer: zookeeper_init failed");
    obs_pump(zh, &o->connected, 10000);
    if (!o->connected)
        FAILF("observer could not connect to %s", t_hosts());
    return zh;
}

static void obs_children_done(int rc, const struct String_vector *sv,
                              const struct Stat *st, const void *data)
{
    struct obs *o = (struct obs *)(uintptr_t)data;
    int i;

    (void)st;
    o->rc = rc;
    if (rc == ZOK) {
        o->sv.count = sv->count;
        o->sv.data = calloc((size_t)sv->count + 1, sizeof(char *));
        for (i = 0; i < sv->count; i++)
            o->sv.data[i] = strdup(sv->data[i]);
    }
    o->done = 1;
}

/* Curator's mutex key (after the last "lock-"), else its latch's. */
static const char *curator_key(const char *n)
{
    const char *p = n, *last = NULL;

    while ((p = strstr(p, "lock-")) != NULL)
        last = p++;
    if (last != NULL)
        return last + 5;
    for (p = n; (p = strstr(p, "latch-")) != NULL;)
        last = p++;
    return last ? last + 6 : n;
}

static int curator_cmp(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    int r = strcmp(curator_key(x), curator_key(y));

    return r ? r : strcmp(x, y);
}

int t_zk_children(const char *path, char ***names)
{
    struct obs o;
    zhandle_t *zh = obs_open(&o);

    if (zoo_aget_children2(zh, path, 0, obs_children_done, &o) != ZOK)
        FAILF("observer: aget_children failed");
    obs_pump(zh, &o.done, 10000);
    zookeeper_close(zh);
    if (!o.done)
        FAILF("observer: no reply listing %s", path);
    if (o.rc == ZNONODE) {
        *names = calloc(1, sizeof(char *));
        return 0;
    }
    if (o.rc != ZOK)
        FAILF("observer: listing %s: %s", path, zerror(o.rc));
    qsort(o.sv.data, (size_t)o.sv.count, sizeof(char *), curator_cmp);
    *names = o.sv.data;
    return o.sv.count;
}

void t_zk_free_names(char **names, int n)
{
    int i;

    for (i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

int t_zk_count(const char *path)
{
    char **names;
    int n = t_zk_children(path, &names);

    t_zk_free_names(names, n);
    return n;
}

int t_zk_wait_count(const char *path, int n, long ms)
{
    uint64_t end = t_now_ms() + (uint64_t)ms;
    int got;

    for (;;) {
        got = t_zk_count(path);
        if (got == n || t_now_ms() >= end)
            return got;
        /* Keep the test's own clients running while we wait. */
        t_run_for(50);
    }
}

static void obs_void_done(int rc, const void *data)
{
    struct obs *o = (struct obs *)(uintptr_t)data;

    o->rc = rc;
    o->done = 1;
}

/* An observer session authenticated as digest (NULL: no identity). */
static zhandle_t *obs_open_as(struct obs *o, const char *digest)
{
    zhandle_t *zh = obs_open(o);

    if (digest != NULL) {
        o->done = 0;
        if (zoo_add_auth(zh, "digest", digest, (int)strlen(digest),
                         obs_void_done, o) != ZOK)
            FAILF("observer: zoo_add_auth failed");
        obs_pump(zh, &o->done, 10000);
        if (!o->done || o->rc != ZOK)
            FAILF("observer: authentication as %s failed", digest);
    }
    o->done = 0;
    return zh;
}

int t_zk_delete_as(const char *digest, const char *path)
{
    struct obs o;
    zhandle_t *zh = obs_open_as(&o, digest);

    zoo_adelete(zh, path, -1, obs_void_done, &o);
    obs_pump(zh, &o.done, 10000);
    zookeeper_close(zh);
    return o.rc;
}

int t_zk_delete(const char *path)
{
    return t_zk_delete_as(NULL, path);
}

int t_zk_delete_node(const zkl_lock_t *lk)
{
    char name[ZKL_NODE_NAME_SIZE], full[ZKL_PATH_MAX + ZKL_NODE_NAME_SIZE];

    ASSERT(zkl_lock_kind(lk) != ZKL_KIND_LEASE);
    ASSERT_RC(zkl_lock_node_name(lk, name, sizeof name), ZKL_OK);
    snprintf(full, sizeof full, "%s/%s", zkl_lock_path(lk), name);
    return t_zk_delete(full);
}

static void obs_string_done(int rc, const char *value, const void *data)
{
    struct obs *o = (struct obs *)(uintptr_t)data;

    (void)value;
    o->rc = rc;
    o->done = 1;
}

int t_zk_create_as(const char *digest, const char *path, int flags)
{
    struct obs o;
    zhandle_t *zh = obs_open_as(&o, digest);

    zoo_acreate(zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, flags,
                obs_string_done, &o);
    obs_pump(zh, &o.done, 10000);
    zookeeper_close(zh);
    return o.rc;
}

static void obs_stat_done(int rc, const struct Stat *st, const void *data)
{
    struct obs *o = (struct obs *)(uintptr_t)data;

    o->rc = rc;
    o->czxid = rc == ZOK ? st->czxid : 0;
    o->done = 1;
}

int64_t t_zk_czxid(const char *path)
{
    struct obs o;
    zhandle_t *zh = obs_open(&o);

    zoo_aexists(zh, path, 0, obs_stat_done, &o);
    obs_pump(zh, &o.done, 10000);
    zookeeper_close(zh);
    return o.czxid;
}

static void obs_data_done(int rc, const char *value, int len,
                          const struct Stat *st, const void *data)
{
    struct obs *o = (struct obs *)(uintptr_t)data;

    (void)st;
    o->rc = rc;
    o->len = rc == ZOK ? (len < 0 ? 0 : len) : -1;
    if (o->len > 0)
        memcpy(o->buf, value, (size_t)(o->len < o->size ? o->len : o->size));
    o->done = 1;
}

int t_zk_data(const char *path, char *buf, int size)
{
    struct obs o;
    zhandle_t *zh = obs_open(&o);

    o.buf = buf;
    o.size = size;
    o.len = -1;
    zoo_aget(zh, path, 0, obs_data_done, &o);
    obs_pump(zh, &o.done, 10000);
    zookeeper_close(zh);
    return o.len;
}

int t_zk_set(const char *path, const char *data, int len)
{
    struct obs o;
    zhandle_t *zh = obs_open(&o);

    zoo_aset(zh, path, data, len, -1, obs_stat_done, &o);
    obs_pump(zh, &o.done, 10000);
    zookeeper_close(zh);
    return o.done ? o.rc : ZOPERATIONTIMEOUT;
}

/* Every lock node (a protected name, "_c_...") below the roots the tests and
 * examples use, over one session; prints each and returns how many. */
static int leftover_nodes(void)
{
    static const char *roots[] = {"/zkl-test", "/zklock-http",
                                  "/zklock-demo", "/zkl-acl"};
    size_t cap = 1024, head = 0, tail = 0, i;
    char **queue = malloc(cap * sizeof *queue);
    struct obs o;
    zhandle_t *zh = obs_open(&o);
    int found = 0, j;

    for (i = 0; i < sizeof roots / sizeof roots[0]; i++)
        queue[tail++] = strdup(roots[i]);
    while (head < tail) {
        char *p = queue[head++];

        o.done = 0;
        o.sv.count = 0;
        o.sv.data = NULL;
        if (zoo_aget_children2(zh, p, 0, obs_children_done, &o) != ZOK)
            FAILF("observer: aget_children failed");
        obs_pump(zh, &o.done, 10000);
        if (!o.done)
            FAILF("observer: no reply listing %s", p);
        for (j = 0; o.rc == ZOK && j < o.sv.count; j++) {
            char *child = malloc(strlen(p) + strlen(o.sv.data[j]) + 2);

            sprintf(child, "%s/%s", p, o.sv.data[j]);
            if (strncmp(o.sv.data[j], "_c_", 3) == 0) {
                fprintf(stderr, "left behind: %s\n", child);
                found++;
                free(child);
            } else {
                if (tail == cap)
                    queue = realloc(queue, (cap *= 2) * sizeof *queue);
                queue[tail++] = child;
            }
            free(o.sv.data[j]);
        }
        free(o.sv.data);
        free(p);
    }
    free(queue);
    zookeeper_close(zh);
    return found;
}

static void test_no_lock_nodes_left(void)
{
    ASSERT_EQ(leftover_nodes(), 0);
}

/* ---------------- runner ---------------- */

#define T(name, secs) void test_##name(void);
#include "test-list.h"
#include "test-ensemble-list.h"
#undef T

static const struct {
    const char *name;
    void (*fn)(void);
    int secs;
} tests[] = {
#define T(name, secs) {#name, test_##name, secs},
#include "test-list.h"
#undef T
};

static int selected(const char *name, int argc, char **argv)
{
    int i;

    if (argc < 2)
        return 1;
    /* "=NAME" selects that test only; anything else is a substring. */
    for (i = 1; i < argc; i++)
        if (argv[i][0] == '=' ? strcmp(name, argv[i] + 1) == 0
                              : strstr(name, argv[i]) != NULL)
            return 1;
    return 0;
}

static const struct {
    const char *name;
    void (*fn)(void);
    int secs;
} ens_tests[] = {
#define T(name, secs) {#name, test_##name, secs},
#include "test-ensemble-list.h"
#undef T
};

static int passed, failed;

static void run_one(const char *name, void (*fn)(void), int secs)
{
    const char *prefix = getenv("ZKL_TEST_PREFIX");
    uint64_t t0 = t_now_ms();
    int status = 0;
    pid_t pid;

    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        cur_test = name;
        alarm((unsigned)secs);
        t_base = event_base_new();
        fn();
        event_base_free(t_base);
        libevent_global_shutdown();
        exit(0); /* not _exit: LeakSanitizer checks at exit */
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        passed++;
        printf("PASS: %s%s (%llu ms)\n", prefix ? prefix : "", name,
               (unsigned long long)(t_now_ms() - t0));
    } else {
        failed++;
        printf("FAIL: %s%s (%s %d, %llu ms)\n", prefix ? prefix : "", name,
               WIFSIGNALED(status) ? "signal" : "exit status",
               WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
               (unsigned long long)(t_now_ms() - t0));
    }
}

/* run-tests [NAME-SUBSTRING...]: the tests whose names match.
 * run-tests --leftovers: checks that no lock node is left anywhere
 * (suite.sh runs it after every other test). */
int main(int argc, char **argv)
{
    size_t i;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 2 && strcmp(argv[1], "--leftovers") == 0) {
        run_one("no_lock_nodes_left", test_no_lock_nodes_left, 120);
    } else if (argc >= 2 && strcmp(argv[1], "--ensemble") == 0) {
        for (i = 0; i < sizeof ens_tests / sizeof ens_tests[0]; i++)
            if (selected(ens_tests[i].name, argc - 1, argv + 1))
                run_one(ens_tests[i].name, ens_tests[i].fn,
                        ens_tests[i].secs);
    } else {
        for (i = 0; i < sizeof tests / sizeof tests[0]; i++)
            if (selected(tests[i].name, argc, argv))
                run_one(tests[i].name, tests[i].fn, tests[i].secs);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
