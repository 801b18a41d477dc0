/* The lock family's scenarios: a semaphore drained by many waiters, and
 * a read/write lock under a read-mostly load. One client, one session,
 * one thread, as bench/peers/CuratorBench.java runs them with threads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "bench.h"
#include "metrics.h"
#include "zklock.h"

static long f_failures, f_grants;

static void count_failure(zkl_lock_t *lk, zkl_lock_event_t ev, int status)
{
    if (ev == ZKL_LOCK_FAILED || ev == ZKL_LOCK_LOST) {
        f_failures++;
        note("%s: %s: %s", zkl_lock_path(lk), zkl_lock_event_name(ev),
             zkl_strerror(status));
    }
}

/* ---------------- semaphore ---------------- */

static long s_held;

static void sem_holder_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                          void *arg)
{
    (void)arg;
    count_failure(lk, ev, status);
    if (ev == ZKL_LOCK_ACQUIRED)
        s_held++;
}

/* A contender gives its lock back as soon as it has it (a semaphore's
 * drain measures how fast leases pass from hand to hand), and takes it
 * again while *again (arg, if not NULL) says so (a reader's loop). */
static void give_back_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                         void *arg)
{
    const int *again = arg;

    count_failure(lk, ev, status);
    if (ev == ZKL_LOCK_ACQUIRED) {
        f_grants++;
        zkl_lock_release(lk);
    } else if (ev == ZKL_LOCK_RELEASED && again != NULL && *again) {
        zkl_lock_acquire(lk, -1);
    }
}

/* semaphore --waiters N --leases L: L holders take every lease, N
 * waiters queue, the holders let go, and the time until every waiter has
 * had its lease gives lease grants per second. */
int bench_semaphore(const struct opts *o)
{
    long n = o->n > 0 ? o->n : 1000, leases = o->leases > 0 ? o->leases : 10;
    zkl_client_t *c;
    zkl_lock_t **h, **w;
    zkl_stats_t s0, s1;
    uint64_t t0, t1, end;
    char path[128];
    long i;

    bench_base = event_base_new();
    c = bench_client(o->hosts, 30000);
    snprintf(path, sizeof path, "%s", bench_path("semaphore", 0));
    h = calloc((size_t)leases, sizeof *h);
    w = calloc((size_t)n, sizeof *w);
    for (i = 0; i < leases; i++) {
        zkl_lease_new(&h[i], c, path, (int)leases, sem_holder_cb, NULL);
        zkl_lock_acquire(h[i], -1);
    }
    bench_run_until(&s_held, leases, 60);
    note("semaphore: %ld waiters queue on %ld leases", n, leases);
    for (i = 0; i < n; i++) {
        zkl_lease_new(&w[i], c, path, (int)leases, give_back_cb, NULL);
        zkl_lock_acquire(w[i], -1);
    }
    /* Queued: the requests stop (every waiter's mutex node is on the
     * server, one waiter waits for a lease). */
    end = now_us() + 120000000;
    zkl_client_stats(c, &s0, sizeof s0);
    for (;;) {
        long stop = 0;

        bench_run_until(&stop, 1, 0.5);
        zkl_client_stats(c, &s1, sizeof s1);
        if (s1.requests == s0.requests || now_us() > end)
            break;
        s0 = s1;
    }
    zkl_client_stats(c, &s0, sizeof s0);
    t0 = now_us();
    for (i = 0; i < leases; i++)
        zkl_lock_release(h[i]);
    bench_run_until(&f_grants, n, 600);
    t1 = now_us();
    zkl_client_stats(c, &s1, sizeof s1);
    json_begin("semaphore");
    json_int("waiters", n);
    json_int("leases", leases);
    json_num("grants_per_s", (double)f_grants / ((double)(t1 - t0) / 1e6));
    json_num("requests_per_grant",
             (double)(s1.requests - s0.requests) / (double)n);
    json_num("wakeups_per_grant",
             (double)(s1.watch_events - s0.watch_events) / (double)n);
    json_int("acquired", f_grants);
    json_int("failures", f_failures);
    json_end();
    for (i = 0; i < n; i++)
        zkl_lock_free(w[i]);
    for (i = 0; i < leases; i++)
        zkl_lock_free(h[i]);
    bench_free_clients(&c, 1);
    free(h);
    free(w);
    event_base_free(bench_base);
    return f_failures != 0 || f_grants != n;
}

/* ---------------- read-mostly ---------------- */

static int rm_running;
static long rm_writes;

static void writer_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                      void *arg)
{
    (void)arg;
    count_failure(lk, ev, status);
    if (ev == ZKL_LOCK_ACQUIRED) {
        rm_writes++;
        zkl_lock_release(lk);
    }
}

static void write_tick(evutil_socket_t fd, short what, void *arg)
{
    zkl_lock_t *wr = arg;

    (void)fd;
    (void)what;
    if (rm_running && zkl_lock_state(wr) == ZKL_STATE_IDLE)
        zkl_lock_acquire(wr, -1);
}

/* readmostly --readers N --seconds S --write-every MS: N readers take and
 * give back one read/write lock's read side in a loop while a writer
 * takes its write side every MS; read grants per second. */
int bench_readmostly(const struct opts *o)
{
    long n = o->n > 0 ? o->n : 1000, every = o->every > 0 ? o->every : 100;
    double secs = o->seconds > 0 ? o->seconds : 10;
    struct timeval tv = {every / 1000, (every % 1000) * 1000};
    zkl_client_t *c;
    zkl_lock_t **r, *wr;
    zkl_stats_t s0, s1;
    struct event *tk;
    uint64_t t0, t1;
    char path[128];
    long i, grants, big = 1L << 40;

    bench_base = event_base_new();
    c = bench_client(o->hosts, 30000);
    snprintf(path, sizeof path, "%s", bench_path("readmostly", 0));
    r = calloc((size_t)n, sizeof *r);
    zkl_lock_new_kind(&wr, c, path, ZKL_KIND_WRITE, writer_cb, NULL);
    for (i = 0; i < n; i++)
        zkl_lock_new_kind(&r[i], c, path, ZKL_KIND_READ, give_back_cb,
                          &rm_running);
    rm_running = 1;
    note("readmostly: %ld readers, a writer every %ld ms, %g s", n, every,
         secs);
    for (i = 0; i < n; i++)
        zkl_lock_acquire(r[i], -1);
    bench_run_until(&f_grants, n, 60); /* warm */
    tk = event_new(bench_base, -1, EV_PERSIST, write_tick, wr);
    evtimer_add(tk, &tv);
    zkl_client_stats(c, &s0, sizeof s0);
    grants = f_grants;
    t0 = now_us();
    {
        long stop = 0;
        uint64_t end = t0 + (uint64_t)(secs * 1e6);

        while (now_us() < end)
            bench_run_until(&stop, big, (double)(end - now_us()) / 1e6);
    }
    t1 = now_us();
    grants = f_grants - grants;
    zkl_client_stats(c, &s1, sizeof s1);
    rm_running = 0;
    event_free(tk);
    json_begin("readmostly");
    json_int("readers", n);
    json_int("write_every_ms", every);
    json_num("read_grants_per_s", (double)grants / ((double)(t1 - t0) / 1e6));
    json_num("writes_per_s", (double)rm_writes / ((double)(t1 - t0) / 1e6));
    json_num("requests_per_read",
             (double)(s1.requests - s0.requests) / (double)(grants ? grants : 1));
    json_num("listings_per_read",
             (double)(s1.listings - s0.listings) / (double)(grants ? grants : 1));
    json_int("failures", f_failures);
    json_end();
    for (i = 0; i < n; i++)
        zkl_lock_free(r[i]);
    zkl_lock_free(wr);
    bench_free_clients(&c, 1);
    free(r);
    event_base_free(bench_base);
    return f_failures != 0;
}
