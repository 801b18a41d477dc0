/* burst: a program that holds locks calls zkl_lock_acquire() N times in
 * one loop turn, on L locks that another process holds. What it shows:
 * the library paces its own requests (no hold of the program is told
 * LOST or SUSPENDED while the burst goes out, outstanding requests stay
 * within the window: sampled at the end of each loop pass while the burst
 * goes out), the loop stays responsive, what a waiting attempt
 * costs in live heap, and that every waiter acquires exactly once after
 * the other process lets go.
 *
 *   zklock-bench burst [--count N] [--over L] [--held H] [--sessions S]
 *
 * The holders live in another process (holders.c: its own loop and
 * session), so the heap measured here is the waiters' alone: the
 * library's and the ZooKeeper client's live allocations (mallinfo2),
 * from before the first acquire to when all of them wait. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include "bench.h"
#include "metrics.h"
#include "zklock.h"
#include "zklock_libevent.h"

static long b_held, b_acquired, b_twice, b_suspended, b_lost, b_other;
static char *b_got;           /* per waiter: acquired already */
static int b_let_go;          /* the holder process was told to release */
static lat_t b_busy;
static uint64_t b_last_cpu, b_own_cpu;

/* The program's own holds: nothing may happen to them. */
static void hold_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                    void *arg)
{
    (void)lk;
    (void)status;
    (void)arg;
    if (ev == ZKL_LOCK_ACQUIRED)
        b_held++;
    else if (ev == ZKL_LOCK_SUSPENDED)
        b_suspended++;
    else if (ev == ZKL_LOCK_LOST)
        b_lost++;
    else if (ev != ZKL_LOCK_RESTORED)
        b_other++;
}

static void waiter_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                      void *arg)
{
    long i = (long)(intptr_t)arg;

    if (ev == ZKL_LOCK_ACQUIRED) {
        if (!b_let_go)
            bench_fail("waiter %ld on %s acquired while the other process "
                       "held it", i, zkl_lock_path(lk));
        if (b_got[i])
            b_twice++;
        b_got[i] = 1;
        b_acquired++;
        zkl_lock_release(lk);
    } else if (ev == ZKL_LOCK_FAILED || ev == ZKL_LOCK_LOST) {
        bench_fail("waiter %ld on %s: %s: %s", i, zkl_lock_path(lk),
                   zkl_lock_event_name(ev), zkl_strerror(status));
    }
}

/* 1 ms heartbeat: the thread CPU between two runs is the loop's busy
 * stretch (the benchmark's own scans excluded). */
static void heartbeat(evutil_socket_t fd, short what, void *arg)
{
    uint64_t cpu = thread_cpu_us();

    (void)fd;
    (void)what;
    (void)arg;
    if (b_last_cpu != 0)
        lat_add(&b_busy, cpu - b_last_cpu - b_own_cpu);
    b_own_cpu = 0;
    b_last_cpu = cpu;
}

static long count_waiting(zkl_lock_t **w, long n)
{
    long i, k = 0;

    for (i = 0; i < n; i++)
        k += zkl_lock_state(w[i]) == ZKL_STATE_QUEUED;
    return k;
}

int bench_burst(const struct opts *o)
{
    long n = o->n > 0 ? o->n : 100000, nlocks = o->over > 0 ? o->over : 10000,
         nheld = o->held_set ? o->held : 1000,
         ns = o->sessions > 0 ? o->sessions : 1, i, waiting = 0;
    int st;
    struct bench_holders hp;
    zkl_lock_t **w, **h;
    zkl_client_t **c;
    zkl_stats_t s;
    struct event *hb;
    struct timeval one_ms = {0, 1000};
    uint64_t t0, t1, t2, call_us, window = 0, omax = 0, pmax = 0;
    long heap0, heap1, lib0, lib1;

    heap_count_library();
    bench_holders_fork(&hp, o->hosts, "burst", nlocks, 1);
    bench_base = event_base_new();
    c = calloc((size_t)ns, sizeof *c);
    for (i = 0; i < ns; i++)
        c[i] = bench_client(o->hosts, 10000);
    note("burst: this program holds %ld locks of its own", nheld);
    h = calloc((size_t)(nheld > 0 ? nheld : 1), sizeof *h);
    for (i = 0; i < nheld; i++) {
        zkl_lock_new(&h[i], c[i % ns], bench_path("burst-own", i), hold_cb,
                     NULL);
        zkl_lock_acquire(h[i], -1);
    }
    if (!bench_run_until(&b_held, nheld, 120))
        bench_fail("own holds: %ld of %ld held", b_held, nheld);
    note("burst: another process takes %ld locks", nlocks);
    bench_holders_ready(&hp);
    w = calloc((size_t)n, sizeof *w);
    b_got = calloc((size_t)n, 1);
    hb = event_new(bench_base, -1, EV_PERSIST, heartbeat, NULL);
    event_add(hb, &one_ms);
    /* The heartbeat's samples must not count as the waiters' heap. */
    b_busy.cap = 1u << 21;
    b_busy.v = malloc(b_busy.cap * sizeof *b_busy.v);
    heap0 = heap_in_use();
    lib0 = heap_of_library();
    note("burst: %ld acquires in one loop turn over %ld sessions", n, ns);
    t0 = now_us();
    for (i = 0; i < n; i++) {
        char path[96];

        snprintf(path, sizeof path, "%s", bench_path("burst", i % nlocks));
        if (zkl_lock_new(&w[i], c[i % ns], path, waiter_cb,
                         (void *)(intptr_t)i) != ZKL_OK ||
            zkl_lock_acquire(w[i], -1) != ZKL_OK)
            bench_fail("acquire %ld refused", i);
    }
    call_us = now_us() - t0;
    b_last_cpu = thread_cpu_us(); /* the burst's own turn is call_us */
    while (waiting < n) {
        uint64_t c0;

        event_base_loop(bench_base, EVLOOP_ONCE);
        c0 = thread_cpu_us();
        /* The clients' own high-water marks include the holds' start;
         * the burst's is sampled at the end of each pass, when a pass's
         * requests have gone out. */
        for (i = 0; i < ns; i++) {
            zkl_client_stats(c[i], &s, sizeof s);
            if (s.outstanding > omax)
                omax = s.outstanding;
        }
        waiting = count_waiting(w, n);
        b_own_cpu += thread_cpu_us() - c0;
        if (waitpid(hp.pid, &st, WNOHANG) == hp.pid)
            bench_fail("the holder process ended while the burst went out");
        if (now_us() - t0 > 60000000u && waiting < n) {
            long st_n[8] = {0};

            for (i = 0; i < n; i++)
                st_n[(int)zkl_lock_state(w[i]) & 7]++;
            zkl_client_stats(c[0], &s, sizeof s);
            bench_fail("burst: %ld of %ld waiting after 60 s: outstanding "
                       "%llu, paced %llu, requests %llu, session events "
                       "%llu, sessions %llu, acquired %ld; states 0-5: %ld %ld %ld %ld "
                       "%ld %ld", waiting, n,
                       (unsigned long long)s.outstanding,
                       (unsigned long long)s.paced,
                       (unsigned long long)s.requests,
                       (unsigned long long)s.session_events,
                       (unsigned long long)s.sessions, b_acquired, st_n[0], st_n[1],
                       st_n[2], st_n[3], st_n[4], st_n[5]);
        }
        if (b_lost || b_suspended || b_other)
            bench_fail("own holds told LOST %ld, SUSPENDED %ld, other %ld "
                       "while the burst went out",
                       b_lost, b_suspended, b_other);
    }
    t1 = now_us();
    heap1 = heap_in_use();
    lib1 = heap_of_library();
    for (i = 0; i < ns; i++) {
        zkl_client_stats(c[i], &s, sizeof s);
        window = s.window;
        pmax = s.paced_max > pmax ? s.paced_max : pmax;
    }
    note("burst: all %ld waiting after %.2f s; heap +%ld B per waiter "
         "(zklock %ld); outstanding max %llu during the burst (window %llu), "
         "paced max %llu",
         n, (t1 - t0) / 1e6, (heap1 - heap0) / n, (lib1 - lib0) / n,
         (unsigned long long)omax,
         (unsigned long long)window, (unsigned long long)pmax);
    b_let_go = 1;
    bench_holders_release(&hp);
    if (!bench_run_until(&b_acquired, n, 600))
        bench_fail("drain: %ld of %ld acquired", b_acquired, n);
    t2 = now_us();
    event_del(hb);
    bench_holders_wait(&hp);
    json_begin("burst");
    json_int("count", n);
    json_int("locks", nlocks);
    json_int("held", nheld);
    json_int("sessions", ns);
    json_num("burst_call_s", call_us / 1e6);
    json_num("enqueue_s", (t1 - t0) / 1e6);
    json_num("drain_s", (t2 - t1) / 1e6);
    json_num("heap_bytes_per_waiter", (double)(heap1 - heap0) / (double)n);
    json_num("heap_lib_bytes_per_waiter", (double)(lib1 - lib0) / (double)n);
    json_num("loop_busy_p99_ms", lat_pct(&b_busy, 99) / 1000.0);
    json_num("loop_busy_max_ms", lat_pct(&b_busy, 100) / 1000.0);
    json_int("window", (long long)window);
    json_int("outstanding_max", (long long)omax);
    json_int("paced_max", (long long)pmax);
    json_int("held_lost", b_lost);
    json_int("held_suspended", b_suspended);
    json_int("acquired", b_acquired);
    json_int("acquired_twice", b_twice);
    json_end();
    for (i = 0; i < n; i++)
        zkl_lock_free(w[i]);
    for (i = 0; i < nheld; i++)
        zkl_lock_free(h[i]);
    bench_free_clients(c, ns);
    event_free(hb);
    event_base_free(bench_base);
    free(w);
    free(h);
    free(c);
    free(b_got);
    lat_free(&b_busy);
    return b_twice != 0 || b_acquired != n || b_lost || b_suspended;
}
