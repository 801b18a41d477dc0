/* What every test program shares, whatever loop it runs on: the
 * environment, the observer (a raw ZooKeeper client with its own session,
 * so the library never grades itself) and the forking runner. See
 * common.h. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zookeeper/zookeeper.h>
#ifdef HAVE_CYRUS_SASL_H
#include <sasl/sasl.h>
#endif

#include "common.h"

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

void t_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
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

/* The observer's handle: over TLS or with SASL when the suite runs
 * against secured servers (ZKL_TEST_TLS_CERTS, ZKL_TEST_SASL_USER and
 * ZKL_TEST_SASL_PASSWORD_FILE: see t_secure), else plain. */
static zhandle_t *obs_init(struct obs *o)
{
#ifdef HAVE_OPENSSL_H
    const char *certs = getenv("ZKL_TEST_TLS_CERTS");

    if (certs != NULL && certs[0] != '\0') {
        char cert[1600];

        snprintf(cert, sizeof cert, "%s/ca.pem,%s/client.cert.pem,"
                 "%s/client.key.pem", certs, certs, certs);
        return zookeeper_init_ssl(t_hosts(), cert, obs_watcher, 10000, NULL,
                                  o, 0);
    }
#endif
#ifdef HAVE_CYRUS_SASL_H
    const char *user = getenv("ZKL_TEST_SASL_USER");

    if (user != NULL && user[0] != '\0') {
        static zoo_sasl_params_t p;

        sasl_client_init(NULL);
        p.service = "zookeeper";
        p.host = "zk-sasl-md5";
        p.mechlist = "DIGEST-MD5";
        /* Kept for the process's life, as the handle refers to it. */
        if (p.callbacks == NULL)
            p.callbacks = zoo_sasl_make_basic_callbacks(
                user, NULL, getenv("ZKL_TEST_SASL_PASSWORD_FILE"));
        return zookeeper_init_sasl(t_hosts(), obs_watcher, 10000, NULL, o,
                                   0, NULL, &p);
    }
#endif
    return zookeeper_init(t_hosts(), obs_watcher, 10000, NULL, o, 0);
}

static zhandle_t *obs_open(struct obs *o)
{
    zhandle_t *zh;

    memset(o, 0, sizeof *o);
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    zh = obs_init(o);
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

/* Listings, the look the tests take most (t_zk_wait_count polls them),
 * share one observer session per process while it is fresh: a session
 * per look costs a handshake (over TLS a TLS one, slow under valgrind),
 * and the test's loop, and so its clients' pings, stand still meanwhile.
 * It is not pumped between looks, so one idle for a while is replaced;
 * a forked child opens its own (the parent's socket is the parent's). */
static zhandle_t *lister;
static struct obs lister_conn;
static pid_t lister_pid;
static uint64_t lister_used;

static zhandle_t *obs_lister(void)
{
    if (lister != NULL && lister_pid == getpid() &&
        t_now_ms() - lister_used < 2000 &&
        zoo_state(lister) == ZOO_CONNECTED_STATE)
        return lister;
    if (lister != NULL && lister_pid == getpid())
        zookeeper_close(lister);
    lister = obs_open(&lister_conn);
    lister_pid = getpid();
    return lister;
}

int t_zk_children(const char *path, char ***names)
{
    struct obs o;
    zhandle_t *zh;
    int tries = 0;

    /* A session that was fine a moment ago may sit on a server a test
     * has just killed: its connection loss is the lister's, not the
     * test's, and a new session asks again. */
    do {
        zh = obs_lister();
        memset(&o, 0, sizeof o);
        if (zoo_aget_children2(zh, path, 0, obs_children_done, &o) != ZOK)
            FAILF("observer: aget_children failed");
        obs_pump(zh, &o.done, 10000);
        lister_used = t_now_ms();
        if (o.done && (o.rc == ZCONNECTIONLOSS || o.rc == ZSESSIONEXPIRED ||
                       o.rc == ZOPERATIONTIMEOUT))
            lister_used = 0; /* replaced at the next look */
    } while (lister_used == 0 && ++tries < 3);
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

int t_zk_set_acl(const char *path, int perms)
{
    struct Id anyone = {"world", "anyone"};
    struct ACL acl = {perms, anyone};
    struct ACL_vector v = {1, &acl};
    struct obs o;
    zhandle_t *zh = obs_open(&o);

    zoo_aset_acl(zh, path, -1, &v, obs_void_done, &o);
    obs_pump(zh, &o.done, 10000);
    zookeeper_close(zh);
    return o.done ? o.rc : ZOPERATIONTIMEOUT;
}

/* Every lock node (a protected name, "_c_...") below roots[0..n-1], over
 * one session; prints each when print, and returns how many. */
static int lock_nodes_below(const char *const *roots, size_t n, int print)
{
    size_t cap = 1024, head = 0, tail = 0, i;
    char **queue = malloc(cap * sizeof *queue);
    struct obs o;
    zhandle_t *zh = obs_open(&o);
    int found = 0, j;

    for (i = 0; i < n; i++)
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
                if (print)
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

int t_leftover_nodes(void)
{
    static const char *const roots[] = {"/zkl-test", "/zklock-http",
                                        "/zklock-demo", "/zkl-acl"};

    return lock_nodes_below(roots, sizeof roots / sizeof roots[0], 1);
}

int t_lock_nodes_under(const char *root)
{
    return lock_nodes_below(&root, 1, 0);
}


/* ---------------- flight recorder ---------------- */

/* The library's and the ZooKeeper client's log of the last moments of a
 * test, kept in memory and printed only when the test fails: a failure
 * seen once on a loaded CI machine then says what the clients saw (a
 * connection that moved, a session the server expired) instead of only
 * the assertion. ZKL_TEST_FLIGHT=info|warn|off picks the level; warn by
 * default, so that tests of thousands of sessions do not format a line
 * per connection. A test that sets its own log function replaces this. */
#define T_FLIGHT_LINES 256
#define T_FLIGHT_WIDTH 240

static char flight[T_FLIGHT_LINES][T_FLIGHT_WIDTH];
static unsigned flight_next;
static uint64_t flight_t0;

static void flight_log(zkl_log_level_t level, const char *msg, void *arg)
{
    static const char lv[] = "?EWID";

    (void)arg;
    snprintf(flight[flight_next % T_FLIGHT_LINES], T_FLIGHT_WIDTH,
             "%7llu %c %s", (unsigned long long)(t_now_ms() - flight_t0),
             lv[(unsigned)level < 5 ? (unsigned)level : 0], msg);
    flight_next++;
}

/* On abort() (an ASSERT) or the test's alarm. Not async-signal-safe in
 * general, but the test is over: all that matters is the text. */
static void flight_dump(int sig)
{
    unsigned i = flight_next > T_FLIGHT_LINES ? flight_next - T_FLIGHT_LINES
                                              : 0;

    if (flight_next > 0) {
        fprintf(stderr, "# %s: the last %u log lines (ms since start):\n",
                cur_test, flight_next - i);
        for (; i < flight_next; i++)
            fprintf(stderr, "#   %s\n", flight[i % T_FLIGHT_LINES]);
        fflush(stderr);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void flight_start(void)
{
    const char *v = getenv("ZKL_TEST_FLIGHT");
    zkl_log_level_t level = ZKL_LOG_WARN;

    if (v != NULL && strcmp(v, "off") == 0)
        return;
    if (v != NULL && strcmp(v, "info") == 0)
        level = ZKL_LOG_INFO;
    flight_t0 = t_now_ms();
    zkl_set_log(flight_log, NULL, level);
    signal(SIGABRT, flight_dump);
    signal(SIGALRM, flight_dump);
}

/* ---------------- runner ---------------- */

static int passed, failed;

void t_run_case(const t_case_t *tc, void (*setup)(void),
                void (*teardown)(void))
{
    const char *prefix = getenv("ZKL_TEST_PREFIX");
    uint64_t t0 = t_now_ms();
    int status = 0;
    pid_t pid;

    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        cur_test = tc->name;
        flight_start();
        alarm((unsigned)tc->secs);
        if (setup != NULL)
            setup();
        tc->fn();
        if (teardown != NULL)
            teardown();
        exit(0); /* not _exit: LeakSanitizer checks at exit */
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        passed++;
        printf("PASS: %s%s (%llu ms)\n", prefix ? prefix : "", tc->name,
               (unsigned long long)(t_now_ms() - t0));
    } else {
        failed++;
        printf("FAIL: %s%s (%s %d, %llu ms)\n", prefix ? prefix : "",
               tc->name, WIFSIGNALED(status) ? "signal" : "exit status",
               WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
               (unsigned long long)(t_now_ms() - t0));
    }
}

int t_selected(const char *name, int argc, char **argv)
{
    int i;

    if (argc < 1)
        return 1;
    /* "=NAME" selects that test only; anything else is a substring. */
    for (i = 0; i < argc; i++)
        if (argv[i][0] == '=' ? strcmp(name, argv[i] + 1) == 0
                              : strstr(name, argv[i]) != NULL)
            return 1;
    return 0;
}

int t_finish(void)
{
    /* A run that selected nothing proved nothing: a misspelt name, or a
     * list that lost its tests, must not read as a pass. */
    if (passed + failed == 0) {
        printf("FAIL: no test selected\n");
        failed = 1;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

/* ---------------- zklock's allocations, counted ---------------- */

static long live_allocs;

static void *count_malloc(size_t n)
{
    void *p = malloc(n);

    live_allocs += p != NULL;
    return p;
}

static void *count_calloc(size_t n, size_t size)
{
    void *p = calloc(n, size);

    live_allocs += p != NULL;
    return p;
}

static void *count_realloc(void *p, size_t n)
{
    void *q = realloc(p, n);

    live_allocs += p == NULL && q != NULL;
    return q;
}

static void count_free(void *p)
{
    live_allocs -= p != NULL;
    free(p);
}

const zkl_allocator_t t_counting_allocator = {count_malloc, count_calloc,
                                              count_realloc, count_free};

long t_live_allocs(void)
{
    return live_allocs;
}

/* A raw ZooKeeper handle of a test's own: its watcher sets *ctx once
 * connected, and the pump drives it by itself until *flag is set. */
void t_zk_connected_watcher(zhandle_t *zh, int type, int state,
                          const char *path, void *ctx)
{
    (void)zh;
    (void)path;
    if (type == ZOO_SESSION_EVENT && state == ZOO_CONNECTED_STATE)
        *(int *)ctx = 1;
}

/* Drives a raw handle by itself until it connects. */
void t_zk_pump_until(zhandle_t *zh, int *flag, long ms)
{
    uint64_t end = t_now_ms() + (uint64_t)ms;

    while (!*flag && t_now_ms() < end) {
        struct timeval tv;
        struct pollfd pfd = {-1, 0, 0};
        int fd = -1, interest = 0, ev = 0;

        if (zookeeper_interest(zh, &fd, &interest, &tv) != ZOK)
            break;
        pfd.fd = fd;
        pfd.events = (short)((interest & ZOOKEEPER_READ ? POLLIN : 0) |
                             (interest & ZOOKEEPER_WRITE ? POLLOUT : 0));
        poll(&pfd, 1, 20);
        if (pfd.revents & (POLLIN | POLLHUP | POLLERR))
            ev |= ZOOKEEPER_READ;
        if (pfd.revents & POLLOUT)
            ev |= ZOOKEEPER_WRITE;
        zookeeper_process(zh, ev);
    }
}
