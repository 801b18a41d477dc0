/* Demo: one thread, one libevent loop, 10,000 waiting lock attempts.
 *
 * A "holder" process takes N locks (another process, as the holders of
 * a user's locks would be: a waiter behind a node of its own process
 * can wait on that node's attempt instead of a server watch, which is
 * cheaper). A "waiter" side (spread over a few sessions, all on the
 * same loop and thread) queues one attempt on each.
 * The demo reports the live heap (malloc's in-use bytes: the library's
 * and the ZooKeeper client's) per waiting attempt, not resident size,
 * which the holders' freed start-up buffers would hide,
 * then the holder releases the locks in batches and every waiter
 * acquires its lock exactly once, with progress as it goes.
 *
 *   demo-many-waiters [-s HOSTS] [-n COUNT] [-w WAITER_SESSIONS]
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include "metrics.h" /* bench/metrics.c: clocks, live heap */
#include "zklock.h"
#include "zklock_libevent.h"

struct side {
    int acquired, released, failed, other;
};

static struct event_base *base;
static struct side holder, waiter;
static int connected;

static double now_s(void)
{
    return (double)now_us() / 1e6;
}

static void conn_cb(zkl_client_t *c, zkl_conn_event_t ev, void *arg)
{
    (void)c;
    (void)arg;
    if (ev == ZKL_CONN_CONNECTED)
        connected++;
    else
        fprintf(stderr, "demo: %s\n", zkl_conn_event_name(ev));
}

static void lock_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                    void *arg)
{
    struct side *s = arg;

    switch (ev) {
    case ZKL_LOCK_ACQUIRED:
        s->acquired++;
        if (s == &waiter)
            zkl_lock_release(lk); /* done with it at once */
        break;
    case ZKL_LOCK_RELEASED:
        s->released++;
        break;
    case ZKL_LOCK_FAILED:
        s->failed++;
        fprintf(stderr, "demo: acquire failed: %s\n", zkl_strerror(status));
        break;
    default:
        s->other++;
        fprintf(stderr, "demo: %s: %s\n", zkl_lock_event_name(ev),
                zkl_strerror(status));
        break;
    }
}

static zkl_client_t *client(const char *hosts)
{
    zkl_options_t *o;
    zkl_client_t *c;

    if (zkl_options_new(&o) != ZKL_OK ||
        zkl_options_set_servers(o, hosts) != ZKL_OK ||
        zkl_options_set_session_timeout(o, 10000) != ZKL_OK ||
        zkl_options_set_conn_cb(o, conn_cb, NULL) != ZKL_OK ||
        zkl_client_new(&c, o) != ZKL_OK ||
        zkl_libevent_attach(c, base) != ZKL_OK) {
        fprintf(stderr, "demo: cannot create a client for %s\n", hosts);
        exit(1);
    }
    zkl_options_free(o);
    return c;
}

/* Runs the loop until *counter reaches target; prints progress. */
static void run_until(const char *what, int *counter, int target,
                      double limit_s)
{
    double t0 = now_s(), last = t0;
    int shown = -1;

    while (*counter < target) {
        event_base_loop(base, EVLOOP_ONCE);
        if (now_s() - last >= 0.5 && *counter != shown) {
            printf("  %-9s %6d / %d\n", what, *counter, target);
            fflush(stdout);
            shown = *counter;
            last = now_s();
        }
        if (now_s() - t0 > limit_s) {
            fprintf(stderr, "demo: %s stuck at %d of %d\n", what, *counter,
                    target);
            exit(1);
        }
    }
}

static int told;

static void on_told(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    told = 1;
}

static void lock_path(char *buf, size_t size, int pid, int i)
{
    snprintf(buf, (size_t)size, "/zklock-demo/%d/lock-%d", pid, i);
}

/* The holder process: takes the n locks, says so on up, keeps its loop
 * (and so its session) running until a byte arrives on down, then
 * releases them all and exits once they are gone. */
static void holder_process(const char *hosts, int n, int parent, int up,
                           int down)
{
    zkl_lock_t **hl = calloc((size_t)n, sizeof *hl);
    struct event *ev;
    zkl_client_t *hc;
    char path[128], b = 1;
    int i;

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    base = event_base_new();
    hc = client(hosts);
    run_until("session", &connected, 1, 30);
    for (i = 0; i < n; i++) {
        lock_path(path, sizeof path, parent, i);
        zkl_lock_new(&hl[i], hc, path, lock_cb, &holder);
        zkl_lock_acquire(hl[i], -1);
    }
    run_until("held", &holder.acquired, n, 120);
    if (write(up, &b, 1) != 1)
        _exit(1);
    ev = event_new(base, down, EV_READ, on_told, NULL);
    event_add(ev, NULL);
    while (!told)
        event_base_loop(base, EVLOOP_ONCE);
    event_free(ev);
    for (i = 0; i < n; i++)
        zkl_lock_release(hl[i]);
    run_until("let go", &holder.released, n, 120);
    for (i = 0; i < n; i++)
        zkl_lock_free(hl[i]);
    zkl_client_free(hc);
    event_base_free(base);
    free(hl);
    _exit(holder.failed || holder.other ? 1 : 0);
}

static int count_state(zkl_lock_t **lk, int n, zkl_lock_state_t st)
{
    int i, k = 0;

    for (i = 0; i < n; i++)
        k += zkl_lock_state(lk[i]) == st;
    return k;
}

int main(int argc, char **argv)
{
    const char *hosts = getenv("ZKLOCK_SERVERS");
    int n = 10000, nsessions = 2, opt, i, queued = 0, up[2], down[2], st;
    int parent = (int)getpid();
    zkl_client_t *wc[16];
    zkl_lock_t **wl;
    char path[128], b = 1;
    pid_t child;
    long rss0, rss1;
    double t0, t_enq, t_drain;

    while ((opt = getopt(argc, argv, "s:n:w:")) != -1) {
        switch (opt) {
        case 's':
            hosts = optarg;
            break;
        case 'n':
            n = atoi(optarg);
            break;
        case 'w':
            nsessions = atoi(optarg);
            break;
        default:
            fprintf(stderr, "usage: %s [-s HOSTS] [-n COUNT] [-w SESSIONS]\n",
                    argv[0]);
            return 2;
        }
    }
    if (hosts == NULL)
        hosts = "127.0.0.1:2181";
    if (n < 1 || nsessions < 1 || nsessions > 16)
        return 2;
    printf("zklock %s demo: %d locks, one thread, servers %s\n",
           zkl_version_string(), n, hosts);
    printf("1. another process (the holder) takes %d locks\n", n);
    fflush(stdout);
    if (pipe(up) != 0 || pipe(down) != 0 || (child = fork()) < 0) {
        perror("demo");
        return 1;
    }
    if (child == 0)
        holder_process(hosts, n, parent, up[1], down[0]);
    base = event_base_new();
    wl = calloc((size_t)n, sizeof *wl);
    for (i = 0; i < nsessions; i++)
        wc[i] = client(hosts);
    run_until("sessions", &connected, nsessions, 30);
    if (read(up[0], &b, 1) != 1) {
        fprintf(stderr, "demo: the holder process failed\n");
        return 1;
    }

    printf("2. %d waiters queue behind them (%d sessions, same thread)\n",
           n, nsessions);
    rss0 = heap_in_use();
    t0 = now_s();
    for (i = 0; i < n; i++) {
        lock_path(path, sizeof path, parent, i);
        zkl_lock_new(&wl[i], wc[i % nsessions], path, lock_cb, &waiter);
        zkl_lock_acquire(wl[i], -1);
    }
    while (queued < n) {
        event_base_loop(base, EVLOOP_ONCE);
        queued = count_state(wl, n, ZKL_STATE_QUEUED);
        if (now_s() - t0 > 120) {
            fprintf(stderr, "demo: only %d queued\n", queued);
            return 1;
        }
    }
    t_enq = now_s() - t0;
    rss1 = heap_in_use();
    printf("   %d waiting attempts queued in %.2f s\n", n, t_enq);
    printf("   live heap grew %ld KiB: %ld bytes per waiting attempt "
           "(library and ZooKeeper client together)\n",
           (rss1 - rss0) / 1024, (rss1 - rss0) / n);

    if (waiter.acquired > 0) {
        fprintf(stderr, "demo: a waiter was granted a held lock\n");
        return 1;
    }
    printf("3. the holder releases; each waiter acquires its lock\n");
    fflush(stdout);
    t0 = now_s();
    if (write(down[1], &b, 1) != 1)
        return 1;
    run_until("acquired", &waiter.acquired, n, 300);
    run_until("released", &waiter.released, n, 60);
    t_drain = now_s() - t0;
    printf("   all %d acquired in %.2f s (%.0f handoffs/s); failures %d, "
           "other events %d\n",
           waiter.acquired, t_drain, n / t_drain, waiter.failed,
           waiter.other);

    for (i = 0; i < n; i++)
        zkl_lock_free(wl[i]);
    for (i = 0; i < nsessions; i++)
        zkl_client_free(wc[i]);
    free(wl);
    event_base_free(base);
    if (waitpid(child, &st, 0) != child || !WIFEXITED(st) ||
        WEXITSTATUS(st) != 0) {
        printf("demo: the holder process failed\n");
        return 1;
    }
    if (waiter.acquired != n || waiter.failed) {
        printf("demo: FAILED\n");
        return 1;
    }
    printf("demo: OK, every attempt acquired exactly once\n");
    return 0;
}
