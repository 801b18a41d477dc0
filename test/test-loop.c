/* Loop integration through a hand-written adapter (not the bundled
 * libevent one): what the core asks of a loop, and how often it wakes. */
#include <errno.h>
#include <sys/resource.h>

#include "harness.h"
#include "zklock_poll.h"

struct counting {
    zkl_client_t *c;
    struct event *io, *tmr;
    int fd, events;
    int io_calls, timer_calls, wakeups, detached;
};

static void ca_io_cb(evutil_socket_t fd, short what, void *arg)
{
    struct counting *a = arg;

    (void)fd;
    a->wakeups++;
    zkl_client_on_io(a->c, ((what & EV_READ) ? ZKL_READ : 0) |
                               ((what & EV_WRITE) ? ZKL_WRITE : 0));
}

static void ca_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct counting *a = arg;

    (void)fd;
    (void)what;
    a->wakeups++;
    zkl_client_on_timer(a->c);
}

static int ca_io(void *data, int fd, int events, int reset)
{
    struct counting *a = data;

    (void)reset;
    a->io_calls++;
    if (a->io != NULL)
        event_free(a->io);
    a->io = NULL;
    if (fd < 0 || events == 0)
        return 0;
    a->io = event_new(t_base, fd,
                      EV_PERSIST | ((events & ZKL_READ) ? EV_READ : 0) |
                          ((events & ZKL_WRITE) ? EV_WRITE : 0),
                      ca_io_cb, a);
    return event_add(a->io, NULL);
}

static int ca_timer(void *data, long ms)
{
    struct counting *a = data;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    a->timer_calls++;
    return ms < 0 ? event_del(a->tmr) : evtimer_add(a->tmr, &tv);
}

static void ca_detach(void *data)
{
    struct counting *a = data;

    if (a->io != NULL)
        event_free(a->io);
    event_free(a->tmr);
    a->detached++;
}

static const zkl_loop_ops_t ca_ops = {ca_io, ca_timer, ca_detach};

TEST(custom_adapter_and_idle_wakeups)
{
    struct counting a;
    t_conn_t conn;
    zkl_options_t *o;
    t_lock_t l;
    int w0;

    memset(&a, 0, sizeof a);
    memset(&conn, 0, sizeof conn);
    a.tmr = evtimer_new(t_base, ca_timer_cb, &a);
    ASSERT_RC(zkl_options_new(&o), ZKL_OK);
    ASSERT_RC(zkl_options_set_servers(o, t_hosts()), ZKL_OK);
    ASSERT_RC(zkl_options_set_session_timeout(o, 6000), ZKL_OK);
    ASSERT_RC(zkl_options_set_conn_cb(o, NULL, NULL), ZKL_OK);
    ASSERT_RC(zkl_client_new(&a.c, o), ZKL_OK);
    zkl_options_free(o);
    ASSERT_RC(zkl_client_attach(a.c, &ca_ops, &a), ZKL_OK);
    ASSERT_RC(zkl_client_attach(a.c, &ca_ops, &a), ZKL_EBUSY);
    ASSERT(a.io_calls >= 1 && a.timer_calls >= 1); /* connecting */
    ASSERT(WAIT_FOR(zkl_client_state(a.c) == ZKL_CONN_CONNECTED, 5000));
    t_lock_init(&l, a.c, t_path(NULL));
    ASSERT_RC(zkl_lock_acquire(l.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&l.acquired, 5000));
    /* Idle with a lock held: the only traffic is the session's pings
     * (one per third of the 6 s session), a few wake-ups each. A loop
     * that spins would show thousands. */
    t_run_for(200);
    w0 = a.wakeups;
    t_run_for(4500);
    fprintf(stderr, "idle: %d wake-ups in 4.5 s\n", a.wakeups - w0);
    if (a.wakeups - w0 < 1 || a.wakeups - w0 > 16)
        FAILF("%d wake-ups in 4.5 s idle", a.wakeups - w0);
    ASSERT(zkl_lock_is_held(l.lk));
    zkl_lock_free(l.lk);
    ASSERT(WAIT_FOR(zkl_client_pending(a.c) == 0, 5000));
    zkl_client_free(a.c);
    ASSERT_EQ(a.detached, 1);
}

static int log_lines;

static void count_log(zkl_log_level_t level, const char *msg, void *arg)
{
    (void)arg;
    ASSERT(msg != NULL && msg[0] != '\0');
    ASSERT(level >= ZKL_LOG_ERROR && level <= ZKL_LOG_DEBUG);
    log_lines++;
}

TEST(log_hook)
{
    zkl_client_t *c;
    int n;

    zkl_set_log(count_log, NULL, ZKL_LOG_DEBUG);
    c = t_client(t_hosts(), 4000, NULL);
    ASSERT(log_lines > 0); /* the ZooKeeper client's own lines, routed */
    zkl_client_free(c);
    zkl_set_log(NULL, NULL, ZKL_LOG_DEBUG);
    n = log_lines;
    c = t_client(t_hosts(), 4000, NULL);
    zkl_client_free(c);
    ASSERT_EQ(log_lines, n); /* off means off */
}

static int thread_count(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int n = -1;

    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "Threads: %d", &n) == 1)
            break;
    if (f != NULL)
        fclose(f);
    return n;
}

TEST(several_servers_no_threads)
{
    char hosts[128];
    zkl_client_t *c;
    t_lock_t l;

    /* The first server refuses connections; the client moves on. */
    snprintf(hosts, sizeof hosts, "127.0.0.1:1,%s", t_hosts());
    c = t_client(hosts, 4000, NULL);
    t_lock_init(&l, c, t_path(NULL));
    ASSERT_RC(zkl_lock_acquire(l.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&l.acquired, 5000));
    ASSERT_EQ(thread_count(), 1); /* the library started no thread */
    zkl_lock_free(l.lk);
    ASSERT(WAIT_FOR(zkl_client_pending(c) == 0, 5000));
    zkl_client_free(c);
}

/* The poll adapter's loop refused by the kernel: poll(2) with more
 * descriptors than RLIMIT_NOFILE allows fails with EINVAL, and
 * zkl_poll_run() says ZKL_ELOOP with errno as poll left it; the client
 * is none the worse once poll works again. */
TEST(poll_run_reports_a_refused_poll)
{
    zkl_client_t *c;
    zkl_options_t *o;
    struct rlimit old, none;
    uint64_t end;
    t_lock_t l;
    int rc, e;

    ASSERT_RC(zkl_options_new(&o), ZKL_OK);
    ASSERT_RC(zkl_options_set_servers(o, t_hosts()), ZKL_OK);
    ASSERT_RC(zkl_options_set_session_timeout(o, 4000), ZKL_OK);
    ASSERT_RC(zkl_client_new(&c, o), ZKL_OK);
    zkl_options_free(o);
    ASSERT_RC(zkl_poll_attach(c), ZKL_OK);
    end = t_now_ms() + 10000;
    while (zkl_client_state(c) != ZKL_CONN_CONNECTED && t_now_ms() < end)
        ASSERT_RC(zkl_poll_run(c, 20), ZKL_OK);
    ASSERT_EQ(zkl_client_state(c), ZKL_CONN_CONNECTED);
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
    none = old;
    none.rlim_cur = 0;
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &none), 0);
    errno = 0;
    rc = zkl_poll_run(c, 0);
    e = errno;
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
    ASSERT_RC(rc, ZKL_ELOOP);
    ASSERT_EQ(e, EINVAL);
    t_lock_init(&l, c, t_path(NULL));
    ASSERT_RC(zkl_lock_acquire(l.lk, -1), ZKL_OK);
    end = t_now_ms() + 5000;
    while (!l.acquired && t_now_ms() < end)
        ASSERT_RC(zkl_poll_run(c, 20), ZKL_OK);
    ASSERT(l.acquired);
    ASSERT_RC(zkl_lock_release(l.lk), ZKL_OK);
    end = t_now_ms() + 5000;
    while (!l.released && t_now_ms() < end)
        ASSERT_RC(zkl_poll_run(c, 20), ZKL_OK);
    ASSERT(l.released);
    zkl_lock_free(l.lk);
    end = t_now_ms() + 5000;
    while (zkl_client_pending(c) != 0 && t_now_ms() < end)
        ASSERT_RC(zkl_poll_run(c, 20), ZKL_OK);
    ASSERT_EQ(zkl_client_pending(c), 0);
    zkl_client_free(c);
}
