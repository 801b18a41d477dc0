/* The adapter suite: the same tests on every loop adapter, against the
 * real server. Linked once per loop with that loop's driver
 * (test/adapter-LOOP.c), as test/adapter-LOOP. Each test checks what an
 * adapter can get wrong: watching the socket and the timer (acquire,
 * wait, release, timeouts), a new socket behind the same fd number after
 * a reconnect, a server restart, and the client freed from inside a
 * callback, and that nothing is left registered on the loop nor
 * allocated afterwards. */
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <sys/socket.h>
#include <unistd.h>

#include "adapter-driver.h"
#include "common.h"

void t_tick(void)
{
    t_driver.run(20);
}

void t_run_for(long ms)
{
    uint64_t end = t_now_ms() + (uint64_t)ms;

    while (t_now_ms() < end)
        t_driver.run((long)(end - t_now_ms()));
}


/* ---- clients and locks ---- */

typedef struct cl {
    zkl_client_t *c;
    int connected, suspended, reconnected, expired;
    int free_on_connect; /* frees the client from its own callback */
} cl_t;

static void conn_cb(zkl_client_t *c, zkl_conn_event_t ev, void *arg)
{
    cl_t *cl = arg;

    if (ev == ZKL_CONN_CONNECTED || ev == ZKL_CONN_RECONNECTED)
        cl->connected = 1;
    if (ev == ZKL_CONN_RECONNECTED)
        cl->reconnected++;
    if (ev == ZKL_CONN_SUSPENDED)
        cl->suspended++;
    if (ev == ZKL_CONN_EXPIRED)
        cl->expired++;
    if (ev == ZKL_CONN_CONNECTED && cl->free_on_connect) {
        if (t_driver.forget != NULL)
            t_driver.forget(c);
        zkl_client_free(c);
        cl->c = NULL;
    }
}

static void cl_start(cl_t *cl, int session_ms)
{
    zkl_options_t *o;

    ASSERT_RC(zkl_options_new(&o), ZKL_OK);
    ASSERT_RC(zkl_options_set_servers(o, t_hosts()), ZKL_OK);
    ASSERT_RC(zkl_options_set_session_timeout(o, session_ms), ZKL_OK);
    ASSERT_RC(zkl_options_set_conn_cb(o, conn_cb, cl), ZKL_OK);
    ASSERT_RC(zkl_client_new(&cl->c, o), ZKL_OK);
    zkl_options_free(o);
    ASSERT_RC(t_driver.attach(cl->c), ZKL_OK);
}

static void cl_connect(cl_t *cl, int session_ms)
{
    cl_start(cl, session_ms);
    if (!WAIT_FOR(cl->connected, 10000))
        FAILF("%s: no connection to %s", t_driver.name, t_hosts());
}

static void cl_free(cl_t *cl)
{
    if (cl->c != NULL && t_driver.forget != NULL)
        t_driver.forget(cl->c);
    zkl_client_free(cl->c);
    cl->c = NULL;
}

typedef struct lk {
    zkl_lock_t *lk;
    int acquired, failed, released, lost, suspended, restored;
    int status;
    cl_t *free_client_on_acquire; /* frees lock and client from inside */
} lk_t;

static void lock_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                    void *arg)
{
    lk_t *t = arg;

    t->status = status;
    switch (ev) {
    case ZKL_LOCK_ACQUIRED:
        t->acquired++;
        if (t->free_client_on_acquire != NULL) {
            zkl_lock_free(lk);
            t->lk = NULL;
            cl_free(t->free_client_on_acquire);
        }
        break;
    case ZKL_LOCK_FAILED:
        t->failed++;
        break;
    case ZKL_LOCK_RELEASED:
        t->released++;
        break;
    case ZKL_LOCK_LOST:
        t->lost++;
        break;
    case ZKL_LOCK_SUSPENDED:
        t->suspended++;
        break;
    case ZKL_LOCK_RESTORED:
        t->restored++;
        break;
    default:
        break;
    }
}

static void lk_new(lk_t *t, cl_t *cl, const char *path)
{
    memset(t, 0, sizeof *t);
    ASSERT_RC(zkl_lock_new(&t->lk, cl->c, path, lock_cb, t), ZKL_OK);
}

static void lk_hold(lk_t *t)
{
    int got = t->acquired, failed = t->failed;

    ASSERT_RC(zkl_lock_acquire(t->lk, 10000), ZKL_OK);
    if (!WAIT_FOR(t->acquired > got || t->failed > failed, 15000) ||
        t->acquired == got)
        FAILF("%s: not acquired (%s)", t_driver.name,
              zkl_err_name(t->status));
}

static void lk_release(lk_t *t)
{
    int before = t->released;

    ASSERT_RC(zkl_lock_release(t->lk), ZKL_OK);
    if (!WAIT_FOR(t->released > before, 10000))
        FAILF("%s: release not answered", t_driver.name);
}

static long cpu_ms(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000L +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000L;
}

/* ---- sockets: the client's connection, found from outside ---- */

/* The local port of fd when it is a TCP socket connected to the suite's
 * server, else 0. */
static int server_conn_port(int fd)
{
    struct sockaddr_in peer, self;
    socklen_t len = sizeof peer;

    if (getpeername(fd, (struct sockaddr *)&peer, &len) != 0 ||
        peer.sin_family != AF_INET || ntohs(peer.sin_port) != t_port())
        return 0;
    len = sizeof self;
    if (getsockname(fd, (struct sockaddr *)&self, &len) != 0)
        return 0;
    return ntohs(self.sin_port);
}

/* The one connection to the server among fds not in the set before: the
 * ZooKeeper client's own descriptor, the lowest of the fds on that socket
 * (the loop watches a copy, made after it). */
static int new_server_fd(const int *before, int n)
{
    int fd, i, found = -1, port = 0;

    for (fd = 0; fd < 1024; fd++) {
        int p = server_conn_port(fd);

        if (p == 0)
            continue;
        for (i = 0; i < n && before[i] != fd; i++)
            ;
        if (i < n)
            continue;
        if (found >= 0 && p != port)
            FAILF("two new connections to the server (%d, %d)", found, fd);
        if (found < 0) {
            found = fd;
            port = p;
        }
    }
    if (found < 0)
        FAILF("no connection to the server found");
    return found;
}

static int server_fds(int *fds, int max)
{
    int fd, n = 0;

    for (fd = 0; fd < 1024 && n < max; fd++)
        if (server_conn_port(fd) != 0)
            fds[n++] = fd;
    return n;
}

/* A connected client and its socket's fd number. */
static int cl_connect_fd(cl_t *cl, int session_ms)
{
    int before[16], n = server_fds(before, 16);

    cl_connect(cl, session_ms);
    return new_server_fd(before, n);
}

/* ---- tests ---- */

static int answered(const lk_t *v, int n)
{
    int i, k = 0;

    for (i = 0; i < n; i++)
        k += v[i].acquired + v[i].failed;
    return k;
}

static int released(const lk_t *v, int n)
{
    int i, k = 0;

    for (i = 0; i < n; i++)
        k += v[i].released;
    return k;
}

/* Two sessions, one lock: the holder's release wakes the waiter (read
 * interest and a watch), a try-lock times out (the timer), and many
 * acquires at once go through one socket (write interest). */
static void test_acquire_wait_release(void)
{
    enum { MANY = 200 };
    const char *p = t_path(NULL);
    static cl_t a, b;
    static lk_t la, lb, lc, many[MANY];
    char path[256];
    int i;

    cl_connect(&a, 10000);
    cl_connect(&b, 10000);
    lk_new(&la, &a, p);
    lk_new(&lb, &b, p);
    lk_hold(&la);
    ASSERT_RC(zkl_lock_acquire(lb.lk, -1), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(p, 2, 10000), 2);
    t_run_for(200);
    ASSERT_EQ(lb.acquired, 0);

    lk_new(&lc, &a, p);
    ASSERT_RC(zkl_lock_acquire(lc.lk, 300), ZKL_OK);
    ASSERT(WAIT_FOR(lc.failed, 10000));
    ASSERT_RC(lc.status, ZKL_ETIMEDOUT);
    ASSERT_EQ(lc.acquired, 0);

    lk_release(&la);
    ASSERT(WAIT_FOR(lb.acquired, 10000));
    lk_release(&lb);
    ASSERT_EQ(t_zk_wait_count(p, 0, 10000), 0);

    for (i = 0; i < MANY; i++) {
        snprintf(path, sizeof path, "%s-%d", p, i);
        lk_new(&many[i], &b, path);
        ASSERT_RC(zkl_lock_acquire(many[i].lk, 20000), ZKL_OK);
    }
    if (!WAIT_FOR(answered(many, MANY) == MANY, 30000))
        FAILF("%s: %d of %d acquires answered", t_driver.name,
              answered(many, MANY), MANY);
    for (i = 0; i < MANY; i++) {
        ASSERT_EQ(many[i].acquired, 1);
        ASSERT_RC(zkl_lock_release(many[i].lk), ZKL_OK);
    }
    ASSERT(WAIT_FOR(released(many, MANY) == MANY, 30000));
    for (i = 0; i < MANY; i++)
        zkl_lock_free(many[i].lk);
    zkl_lock_free(la.lk);
    zkl_lock_free(lb.lk);
    zkl_lock_free(lc.lk);
    cl_free(&a);
    cl_free(&b);
}

/* The connection drops (the socket is shut down under the client); the
 * ZooKeeper client closes it and connects again, and the new socket
 * gets the same fd number. An adapter that kept its registration of the
 * number would never hear of the new socket: the session would expire.
 * The holder must be told RESTORED, the waiter must still be woken. */
static void test_reconnect_fd_reuse(void)
{
    const char *p = t_path(NULL);
    static cl_t a, b;
    static lk_t la, lb;
    int fa, fb, pa, pb;
    pid_t child;
    long cpu;

    fa = cl_connect_fd(&a, 20000);
    fb = cl_connect_fd(&b, 20000);
    pa = server_conn_port(fa);
    pb = server_conn_port(fb);
    lk_new(&la, &a, p);
    lk_new(&lb, &b, p);
    lk_hold(&la);
    ASSERT_RC(zkl_lock_acquire(lb.lk, -1), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(p, 2, 10000), 2);

    /* A child that holds every descriptor and never execs: the closed
     * sockets stay open in it, so the kernel keeps whatever the loop
     * registered for them. */
    child = fork();
    ASSERT(child >= 0);
    if (child == 0) {
        pause();
        _exit(0);
    }
    ASSERT(shutdown(fa, SHUT_RDWR) == 0);
    ASSERT(shutdown(fb, SHUT_RDWR) == 0);
    ASSERT(WAIT_FOR(la.suspended && a.suspended && b.suspended, 10000));
    /* A reconnect takes milliseconds. An adapter that misses the new
     * socket gets there only through the ZooKeeper client's connect
     * timeout, a third of the session timeout (6.7 s here), if at all. */
    if (!WAIT_FOR(la.restored && a.reconnected && b.reconnected, 5000))
        FAILF("%s: not reconnected within 5 s", t_driver.name);
    ASSERT_EQ(la.lost, 0);
    ASSERT_EQ(a.expired + b.expired, 0);
    /* The same numbers, new sockets: the case this test is about. */
    ASSERT(server_conn_port(fa) != 0 && server_conn_port(fa) != pa);
    ASSERT(server_conn_port(fb) != 0 && server_conn_port(fb) != pb);
    /* Each new socket is close-on-exec like the first: a child would
     * otherwise keep it open, and registered in the loop, after the
     * client closed it. */
    ASSERT(fcntl(fa, F_GETFD) & FD_CLOEXEC);
    ASSERT(fcntl(fb, F_GETFD) & FD_CLOEXEC);

    /* The old sockets, at end of stream and held open by the child,
     * must not be watched any more: a loop still told of them would spin
     * (or, on sd-event, read a freed source). A second of idle loop costs
     * a few milliseconds of CPU; spinning costs the whole second. */
    cpu = cpu_ms();
    t_run_for(1000);
    cpu = cpu_ms() - cpu;
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    if (cpu > 500)
        FAILF("%s: %ld ms of CPU in 1 s of idle loop", t_driver.name, cpu);

    ASSERT_EQ(lb.acquired, 0);
    lk_release(&la);
    ASSERT(WAIT_FOR(lb.acquired, 10000));
    lk_release(&lb);
    ASSERT_EQ(t_zk_wait_count(p, 0, 10000), 0);
    zkl_lock_free(la.lk);
    zkl_lock_free(lb.lk);
    cl_free(&a);
    cl_free(&b);
}

/* The server stops and starts again on its port, within the session
 * timeout: both sessions survive, the hold and the queue too. */
static void test_server_restart(void)
{
    const char *p = t_path(NULL);
    static cl_t a, b;
    static lk_t la, lb;

    cl_connect(&a, 30000);
    cl_connect(&b, 30000);
    lk_new(&la, &a, p);
    lk_new(&lb, &b, p);
    lk_hold(&la);
    ASSERT_RC(zkl_lock_acquire(lb.lk, -1), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(p, 2, 10000), 2);

    t_server("restart");
    ASSERT(WAIT_FOR(la.suspended && a.suspended && b.suspended, 10000));
    ASSERT(WAIT_FOR(la.restored && a.reconnected && b.reconnected, 25000));
    ASSERT_EQ(la.lost, 0);
    ASSERT_EQ(lb.acquired + lb.failed, 0);

    lk_release(&la);
    ASSERT(WAIT_FOR(lb.acquired, 10000));
    lk_release(&lb);
    ASSERT_EQ(t_zk_wait_count(p, 0, 10000), 0);
    zkl_lock_free(la.lk);
    zkl_lock_free(lb.lk);
    cl_free(&a);
    cl_free(&b);
}

/* Clients freed from inside their own callbacks (the adapter detached
 * while the loop is dispatching it) and with work in flight; the loop
 * and the other client go on. */
static void test_free_from_callback(void)
{
    const char *p = t_path(NULL), *p2 = t_path("2");
    static cl_t a, b, c, d;
    static lk_t la, lb, ld;

    cl_connect(&a, 10000);
    cl_connect(&b, 10000);
    lk_new(&la, &a, p);
    lk_new(&lb, &b, p);
    lk_hold(&lb);
    la.free_client_on_acquire = &a;
    ASSERT_RC(zkl_lock_acquire(la.lk, -1), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(p, 2, 10000), 2);
    lk_release(&lb);
    /* a is granted, frees its lock and itself in the callback; closing
     * its session deletes its node, so b can take the lock again. */
    ASSERT(WAIT_FOR(la.acquired && a.c == NULL, 10000));
    lk_hold(&lb);
    lk_release(&lb);

    c.free_on_connect = 1;
    cl_start(&c, 10000);
    ASSERT(WAIT_FOR(c.c == NULL, 10000));

    cl_connect(&d, 10000);
    lk_new(&ld, &d, p2);
    ASSERT_RC(zkl_lock_acquire(ld.lk, -1), ZKL_OK);
    cl_free(&d); /* the acquire is answered inside the free */
    ASSERT_EQ(ld.failed, 1);
    ASSERT_RC(ld.status, ZKL_ECLOSED);
    zkl_lock_free(ld.lk);

    t_run_for(300);
    ASSERT_EQ(t_zk_wait_count(p, 0, 10000), 0);
    ASSERT_EQ(t_zk_wait_count(p2, 0, 10000), 0);
    zkl_lock_free(lb.lk);
    cl_free(&b);
}

static void test_attach_errors(void)
{
    zkl_options_t *o;
    zkl_client_t *c;

    ASSERT_RC(t_driver.attach(NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_options_new(&o), ZKL_OK);
    ASSERT_RC(zkl_options_set_servers(o, t_hosts()), ZKL_OK);
    ASSERT_RC(zkl_client_new(&c, o), ZKL_OK);
    ASSERT_RC(t_driver.attach_null_loop(c), ZKL_OK);
    ASSERT_RC(t_driver.attach(c), ZKL_OK);
    ASSERT_RC(t_driver.attach(c), ZKL_EBUSY);
    t_run_for(100);
    if (t_driver.forget != NULL)
        t_driver.forget(c);
    zkl_client_free(c);
    zkl_options_free(o);
}

/* ---- runner ---- */

static const t_case_t cases[] = {
    {"acquire_wait_release", test_acquire_wait_release, 120},
    {"reconnect_fd_reuse", test_reconnect_fd_reuse, 90},
    {"server_restart", test_server_restart, 120},
    {"free_from_callback", test_free_from_callback, 90},
    {"attach_errors", test_attach_errors, 30},
};

static void setup(void)
{
    /* Adapters must take their memory from the public allocator and
     * give all of it back. */
    ASSERT_RC(zkl_set_allocator(&t_counting_allocator), ZKL_OK);
    t_driver.open();
}

static void teardown(void)
{
    ASSERT_EQ(t_driver.close(), 0);
    if (t_live_allocs() != 0)
        FAILF("%s: %ld of zklock's allocations not freed", t_driver.name,
              t_live_allocs());
}

/* adapter-LOOP [NAME-SUBSTRING...] */
int main(int argc, char **argv)
{
    char name[128];
    size_t i;

    setvbuf(stdout, NULL, _IOLBF, 0);
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        t_case_t tc = cases[i];

        snprintf(name, sizeof name, "adapter_%s_%s", t_driver.name,
                 cases[i].name);
        tc.name = name;
        if (t_selected(name, argc - 1, argv + 1))
            t_run_case(&tc, setup, teardown);
    }
    return t_finish();
}
