/* Another process that holds locks while this one queues on them: the
 * setting users live in (a waiter behind a node of its own process can
 * wait on that node's attempt instead of a server watch, which is the
 * cheaper case). Owns the pipes and the child; the child owns its own
 * loop, clients and handles, and exits when it is done. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include "bench.h"
#include "metrics.h"
#include "zklock.h"
#include "zklock_libevent.h"

#define RELEASE_BATCH 100

static long held;
static int told;

static void on_told(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    told = 1;
}

static void hold_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                    void *arg)
{
    (void)arg;
    if (ev == ZKL_LOCK_ACQUIRED)
        held++;
    else if (ev == ZKL_LOCK_FAILED || ev == ZKL_LOCK_LOST)
        bench_fail("holder process: %s: %s: %s", zkl_lock_path(lk),
                   zkl_lock_event_name(ev), zkl_strerror(status));
}

/* The child: takes the locks (a thousand in flight at most), says so,
 * keeps its loop (and so its sessions) running until told, releases
 * RELEASE_BATCH per loop turn as a server would see them, and exits
 * once every node is gone. */
static void child(const char *hosts, const char *what, long n, long ns,
                  int up, int down)
{
    zkl_lock_t **h = calloc((size_t)n, sizeof *h);
    zkl_client_t **c = calloc((size_t)ns, sizeof *c);
    struct event *ev;
    char b = 1;
    long i;

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    bench_base = event_base_new();
    for (i = 0; i < ns; i++)
        c[i] = bench_client(hosts, 10000);
    for (i = 0; i < n; i++) {
        zkl_lock_new(&h[i], c[i % ns], bench_path(what, i),
                     hold_cb, NULL);
        zkl_lock_acquire(h[i], -1);
        if (i % 1000 == 999)
            bench_run_until(&held, i + 1, 120);
    }
    if (!bench_run_until(&held, n, 300))
        bench_fail("holder process: %ld of %ld held", held, n);
    if (write(up, &b, 1) != 1)
        _exit(1);
    /* A blocking read here would let these sessions expire while the
     * other process queues, and free every lock. */
    ev = event_new(bench_base, down, EV_READ, on_told, NULL);
    event_add(ev, NULL);
    while (!told)
        event_base_loop(bench_base, EVLOOP_ONCE);
    event_free(ev);
    if (read(down, &b, 1) != 1)
        _exit(1);
    for (i = 0; i < n; i++) {
        zkl_lock_release(h[i]);
        if (i % RELEASE_BATCH == RELEASE_BATCH - 1)
            event_base_loop(bench_base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    }
    for (i = 0; i < n; i++)
        zkl_lock_free(h[i]);
    bench_free_clients(c, ns);
    event_base_free(bench_base);
    free(h);
    free(c);
    _exit(0);
}

void bench_holders_fork(struct bench_holders *hp, const char *hosts,
                        const char *what, long n, long ns)
{
    int up[2], down[2];

    if (pipe(up) != 0 || pipe(down) != 0)
        bench_fail("pipe");
    fflush(NULL);
    if ((hp->pid = fork()) == 0) {
        close(up[0]);
        close(down[1]);
        child(hosts, what, n, ns, up[1], down[0]);
    }
    if (hp->pid < 0)
        bench_fail("fork");
    bench_child(hp->pid);
    close(up[1]);
    close(down[0]);
    hp->up = up[0];
    hp->down = down[1];
}

void bench_holders_ready(struct bench_holders *hp)
{
    char b;

    if (read(hp->up, &b, 1) != 1)
        bench_fail("the holder process died");
}

void bench_holders_release(struct bench_holders *hp)
{
    char b = 1;

    if (write(hp->down, &b, 1) != 1)
        bench_fail("the holder process died");
}

void bench_holders_wait(struct bench_holders *hp)
{
    int st;

    if (waitpid(hp->pid, &st, 0) != hp->pid || !WIFEXITED(st) ||
        WEXITSTATUS(st) != 0)
        bench_fail("the holder process failed");
    close(hp->up);
    close(hp->down);
}
