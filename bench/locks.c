/* zklock's scenarios, all on one libevent loop in one thread. */
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

struct event_base *bench_base;

/* ---------------- shared plumbing ---------------- */

struct cycle;
typedef void (*on_event_fn)(struct cycle *cy, zkl_lock_event_t ev,
                            int status);

/* One lock handle and what a scenario tracks about it. */
struct cycle {
    zkl_lock_t *lk;
    on_event_fn on_event;
    uint64_t t_acquire;
    long index;
};

static long failures;

static void cycle_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                     void *arg)
{
    struct cycle *cy = arg;

    (void)lk;
    if (ev == ZKL_LOCK_FAILED || ev == ZKL_LOCK_LOST) {
        /* No scenario expects one: the run fails with the reason, at
         * once, instead of waiting for what can no longer come. */
        failures++;
        bench_fail("lock %s: %s: %s", zkl_lock_path(cy->lk),
                   zkl_lock_event_name(ev), zkl_strerror(status));
    }
    cy->on_event(cy, ev, status);
}

zkl_client_t *bench_client_start(const char *hosts, int session_ms)
{
    zkl_options_t *o;
    zkl_client_t *c;
    int rc;

    if (zkl_options_new(&o) != ZKL_OK ||
        zkl_options_set_servers(o, hosts) != ZKL_OK ||
        zkl_options_set_session_timeout(o, session_ms) != ZKL_OK) {
        fprintf(stderr, "zklock-bench: cannot create a client\n");
        exit(1);
    }
    /* --tls-*: main() made sure this build has TLS. */
    if (bench_tls_ca != NULL &&
        (rc = zkl_options_set_tls(o, bench_tls_ca, bench_tls_cert,
                                  bench_tls_key, NULL)) != ZKL_OK)
        bench_fail("TLS options refused: %s", zkl_strerror(rc));
    if (zkl_client_new(&c, o) != ZKL_OK ||
        zkl_libevent_attach(c, bench_base) != 0) {
        fprintf(stderr, "zklock-bench: cannot create a client\n");
        exit(1);
    }
    zkl_options_free(o);
    return c;
}

zkl_client_t *bench_client(const char *hosts, int session_ms)
{
    zkl_client_t *c = bench_client_start(hosts, session_ms);
    uint64_t end = now_us() + 15000000;

    while (zkl_client_state(c) != ZKL_CONN_CONNECTED && now_us() < end)
        event_base_loop(bench_base, EVLOOP_ONCE);
    if (zkl_client_state(c) != ZKL_CONN_CONNECTED) {
        fprintf(stderr, "zklock-bench: cannot connect to %s%s\n", hosts,
                bench_tls_ca == NULL ? ""
                : zkl_client_state(c) == ZKL_CONN_AUTH_FAILED
                    ? " over TLS: the handshake failed (certificates?)"
                    : " over TLS");
        exit(1);
    }
    bench_run_touched();
    return c;
}

static void tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
}

/* Runs the loop until *counter >= target (or limit_s passes). */
int bench_run_until(long *counter, long target, double limit_s)
{
    uint64_t end = now_us() + (uint64_t)(limit_s * 1e6);
    struct event *t = evtimer_new(bench_base, tick, NULL);
    struct timeval tv = {0, 100000};

    while (*counter < target && now_us() < end) {
        evtimer_add(t, &tv);
        event_base_loop(bench_base, EVLOOP_ONCE);
    }
    event_free(t);
    return *counter >= target;
}

void bench_free_clients(zkl_client_t **c, long n)
{
    long i;

    for (i = 0; i < n; i++) {
        while (zkl_client_pending(c[i]) > 0)
            event_base_loop(bench_base, EVLOOP_ONCE);
        zkl_client_free(c[i]);
    }
}

char *bench_path(const char *what, long i)
{
    static char buf[128];

    snprintf(buf, sizeof buf, "%s/%s-%ld", bench_run_root(), what, i);
    return buf;
}

void bench_sum_stats(zkl_client_t **c, long n, zkl_stats_t *out)
{
    zkl_stats_t s;
    long i;

    memset(out, 0, sizeof *out);
    for (i = 0; i < n; i++) {
        zkl_client_stats(c[i], &s, sizeof s);
        out->requests += s.requests;
        out->watch_events += s.watch_events;
        out->grants += s.grants;
        out->sessions += s.sessions;
        out->listings += s.listings;
    }
}

static long count_state(struct cycle *cy, long n, zkl_lock_state_t st)
{
    long i, k = 0;

    for (i = 0; i < n; i++)
        k += zkl_lock_state(cy[i].lk) == st;
    return k;
}

/* ---------------- serial ---------------- */

static lat_t s_lat;
static long s_done, s_target;
static struct event *s_gap; /* --gap-ms: the pause before the next */
static long s_gap_ms;

static void serial_next(evutil_socket_t fd, short what, void *arg)
{
    struct cycle *cy = arg;

    (void)fd;
    (void)what;
    cy->t_acquire = now_us();
    zkl_lock_acquire(cy->lk, -1);
}

static void serial_event(struct cycle *cy, zkl_lock_event_t ev, int status)
{
    (void)status;
    if (ev == ZKL_LOCK_ACQUIRED) {
        lat_add(&s_lat, now_us() - cy->t_acquire);
        zkl_lock_release(cy->lk);
    } else if (ev == ZKL_LOCK_RELEASED) {
        if (++s_done < s_target) {
            if (s_gap != NULL) {
                struct timeval tv = {s_gap_ms / 1000,
                                     (s_gap_ms % 1000) * 1000};

                evtimer_add(s_gap, &tv);
            } else {
                serial_next(-1, 0, cy);
            }
        }
    }
}

int bench_serial(const struct opts *o)
{
    struct cycle cy = {0};
    zkl_client_t *c;
    uint64_t t0, t1;

    bench_base = event_base_new();
    c = bench_client(o->hosts, 10000);
    s_target = o->n > 0 ? o->n : 2000;
    cy.on_event = serial_event;
    zkl_lock_new(&cy.lk, c, bench_path("serial", 0), cycle_cb, &cy);
    /* --gap-ms: requests that do not come back to back (see
     * create-latency, which bench/nginx sets beside this). */
    s_gap_ms = o->every;
    if (s_gap_ms > 0)
        s_gap = evtimer_new(bench_base, serial_next, &cy);
    /* One cycle first so the lock path exists, as it would in service. */
    s_target++;
    cy.t_acquire = now_us();
    zkl_lock_acquire(cy.lk, -1);
    bench_run_until(&s_done, 1, 30);
    lat_free(&s_lat);
    note("serial: %ld acquire+release cycles, one at a time%s", s_target - 1,
         s_gap != NULL ? ", paced" : "");
    t0 = now_us();
    cy.t_acquire = t0;
    zkl_lock_acquire(cy.lk, -1);
    bench_run_until(&s_done, s_target, 300);
    t1 = now_us();
    json_begin("serial");
    json_int("n", s_done - 1);
    json_int("gap_ms", s_gap_ms);
    json_num("acquire_p50_us", lat_pct(&s_lat, 50));
    json_num("acquire_p99_us", lat_pct(&s_lat, 99));
    json_num("cycles_per_s", (s_done - 1) / ((double)(t1 - t0) / 1e6));
    json_int("failures", failures);
    json_end();
    if (s_gap != NULL)
        event_free(s_gap);
    s_gap = NULL;
    zkl_lock_free(cy.lk);
    zkl_client_free(c);
    event_base_free(bench_base);
    lat_free(&s_lat);
    return failures != 0;
}

/* ---------------- throughput ---------------- */

static struct cycle *t_cycles;
static long t_nlocks, t_k, t_done, t_next;
static lat_t t_lat;
static int t_measuring, t_stop = 1;

static void throughput_event(struct cycle *cy, zkl_lock_event_t ev,
                             int status)
{
    (void)status;
    if (ev == ZKL_LOCK_ACQUIRED) {
        if (t_measuring)
            lat_add(&t_lat, now_us() - cy->t_acquire);
        zkl_lock_release(cy->lk);
    } else if (ev == ZKL_LOCK_RELEASED || ev == ZKL_LOCK_FAILED) {
        struct cycle *nx;

        if (t_measuring)
            t_done++;
        if (t_stop)
            return;
        /* Keep K in flight, moving over the N locks round robin. */
        nx = t_nlocks == t_k ? cy : &t_cycles[t_next++ % t_nlocks];
        nx->t_acquire = now_us();
        if (zkl_lock_acquire(nx->lk, -1) != ZKL_OK) {
            cy->t_acquire = now_us();
            zkl_lock_acquire(cy->lk, -1);
        }
    }
}

static void stop_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    *(int *)arg = 1;
}

static void run_for(struct event *stop, int *flag, double secs)
{
    struct timeval tv;

    *flag = 0;
    tv.tv_sec = (long)secs;
    tv.tv_usec = (long)((secs - (double)(long)secs) * 1e6);
    evtimer_add(stop, &tv);
    while (!*flag)
        event_base_loop(bench_base, EVLOOP_ONCE);
}

void bench_tp_run(const struct opts *o, long nlocks, long k,
                  struct tp_result *r)
{
    double secs = o->seconds > 0 ? o->seconds : 5, c0, c1;
    long ns = o->sessions > 0 ? o->sessions : 1, i;
    zkl_client_t **c;
    zkl_stats_t s0, s1;
    struct event *stop;
    int flag = 0;
    uint64_t t0, t1;

    bench_base = event_base_new();
    c = calloc((size_t)ns, sizeof *c);
    for (i = 0; i < ns; i++)
        c[i] = bench_client(o->hosts, 10000);
    t_k = k;
    t_nlocks = nlocks < k ? k : nlocks;
    t_cycles = calloc((size_t)t_nlocks, sizeof *t_cycles);
    for (i = 0; i < t_nlocks; i++) {
        t_cycles[i].on_event = throughput_event;
        t_cycles[i].index = i;
        zkl_lock_new(&t_cycles[i].lk, c[i % ns], bench_path("tp", i),
                     cycle_cb, &t_cycles[i]);
    }
    stop = evtimer_new(bench_base, stop_timer, &flag);
    /* Every lock path exists before the clock starts, as it would in
     * service: a first acquire also creates the path (and its parents),
     * which is not what a lock cycle costs. */
    note("throughput: one cycle on each of %ld locks first", t_nlocks);
    for (i = 0; i < t_nlocks; i++) {
        zkl_lock_acquire(t_cycles[i].lk, -1);
        if (i % 1000 == 999 || i == t_nlocks - 1) {
            while (count_state(t_cycles, i + 1, ZKL_STATE_IDLE) < i + 1)
                event_base_loop(bench_base, EVLOOP_ONCE);
        }
    }
    note("throughput: %ld in flight over %ld locks, %ld sessions, for %.1f s "
         "(1 s warm-up)",
         t_k, t_nlocks, ns, secs);
    t_stop = 0;
    t_next = t_k;
    for (i = 0; i < t_k; i++) {
        t_cycles[i].t_acquire = now_us();
        zkl_lock_acquire(t_cycles[i].lk, -1);
    }
    run_for(stop, &flag, 1); /* warm-up: caches and buffers grown */
    t_measuring = 1;
    bench_sum_stats(c, ns, &s0);
    c0 = cpu_seconds();
    t0 = now_us();
    run_for(stop, &flag, secs);
    t1 = now_us();
    c1 = cpu_seconds();
    bench_sum_stats(c, ns, &s1);
    t_measuring = 0;
    t_stop = 1;
    r->cycles = t_done;
    r->seconds = (double)(t1 - t0) / 1e6;
    r->p50_us = lat_pct(&t_lat, 50);
    r->p99_us = lat_pct(&t_lat, 99);
    r->cpu_s = c1 - c0;
    r->requests = (long)(s1.requests - s0.requests);
    r->failures = failures;
    /* Let what is in flight finish, so no node outlives the run. */
    for (i = 0; i < t_nlocks; i++)
        zkl_lock_free(t_cycles[i].lk);
    bench_free_clients(c, ns);
    event_free(stop);
    event_base_free(bench_base);
    free(c);
    free(t_cycles);
    lat_free(&t_lat);
}

int bench_throughput(const struct opts *o)
{
    long k = o->inflight > 0 ? o->inflight : 100;
    long nlocks = o->n > 0 ? o->n : k;
    struct tp_result r;

    if (o->procs > 0)
        return bench_throughput_fleet(o);
    memset(&r, 0, sizeof r);
    bench_tp_run(o, nlocks, k, &r);
    json_begin("throughput");
    json_int("locks", nlocks < k ? k : nlocks);
    json_int("inflight", k);
    json_int("sessions", o->sessions > 0 ? o->sessions : 1);
    json_int("procs", 1);
    json_num("seconds", r.seconds);
    json_num("cycles_per_s", r.cycles / r.seconds);
    json_num("acquire_p50_us", r.p50_us);
    json_num("acquire_p99_us", r.p99_us);
    json_num("requests_per_cycle",
             r.cycles ? (double)r.requests / (double)r.cycles : 0);
    json_num("cpu_s_per_1k_cycles",
             r.cycles ? r.cpu_s * 1000.0 / (double)r.cycles : 0);
    json_int("failures", r.failures);
    json_end();
    return r.failures != 0;
}

/* ---------------- handoff ---------------- */

static long h_acquired;

static void handoff_event(struct cycle *cy, zkl_lock_event_t ev, int status)
{
    (void)status;
    if (ev == ZKL_LOCK_ACQUIRED) {
        h_acquired++;
        zkl_lock_release(cy->lk);
    }
}

static void holder_event(struct cycle *cy, zkl_lock_event_t ev, int status)
{
    (void)cy;
    (void)ev;
    (void)status;
}

int bench_handoff(const struct opts *o)
{
    long n = o->n > 0 ? o->n : 1000, ns = o->sessions > 0 ? o->sessions : 1;
    struct cycle holder = {0}, *w;
    zkl_client_t *hc, **wc;
    zkl_stats_t s0, s1, se;
    uint64_t b0, b1, t0, t1, end;
    long i, queued = 0;
    char path[128];

    if (o->procs > 0)
        return bench_handoff_fleet(o);
    bench_base = event_base_new();
    hc = bench_client(o->hosts, 10000);
    wc = calloc((size_t)ns, sizeof *wc);
    for (i = 0; i < ns; i++)
        wc[i] = bench_client(o->hosts, 10000);
    snprintf(path, sizeof path, "%s", bench_path("handoff", 0));
    holder.on_event = holder_event;
    zkl_lock_new(&holder.lk, hc, path, cycle_cb, &holder);
    zkl_lock_acquire(holder.lk, -1);
    while (!zkl_lock_is_held(holder.lk))
        event_base_loop(bench_base, EVLOOP_ONCE);
    note("handoff: %ld waiters over %ld sessions queue on one lock", n, ns);
    bench_sum_stats(wc, ns, &se);
    w = calloc((size_t)n, sizeof *w);
    for (i = 0; i < n; i++) {
        w[i].on_event = handoff_event;
        zkl_lock_new(&w[i].lk, wc[i % ns], path, cycle_cb, &w[i]);
        zkl_lock_acquire(w[i].lk, -1);
    }
    end = now_us() + 300000000;
    while (queued < n) {
        if (now_us() > end)
            bench_fail("only %ld of %ld waiters queued after 300 s", queued,
                       n);
        event_base_loop(bench_base, EVLOOP_ONCE);
        queued = count_state(w, n, ZKL_STATE_QUEUED);
    }
    note("handoff: %ld queued; releasing the holder", queued);
    bench_sum_stats(wc, ns, &s0);
    b0 = tcp_bytes_in();
    t0 = now_us();
    zkl_lock_release(holder.lk);
    if (!bench_run_until(&h_acquired, n, 600))
        bench_fail("drain stuck: %ld of %ld acquired", h_acquired, n);
    t1 = now_us();
    b1 = tcp_bytes_in();
    bench_sum_stats(wc, ns, &s1);
    json_begin("handoff");
    json_int("waiters", n);
    json_int("sessions", ns);
    json_int("procs", 1);
    json_num("handoffs_per_s", h_acquired / ((double)(t1 - t0) / 1e6));
    json_num("bytes_in_per_handoff", (double)(b1 - b0) / (double)n);
    json_num("wakeups_per_release",
             (double)(s1.watch_events - s0.watch_events) / (double)n);
    json_num("requests_per_handoff",
             (double)(s1.requests - s0.requests) / (double)n);
    /* From the first acquire: a watch set while queueing counts too. */
    json_num("requests_per_waiter",
             (double)(s1.requests - se.requests) / (double)n);
    json_num("listings_per_handoff",
             (double)(s1.listings - s0.listings) / (double)n);
    json_int("acquired", h_acquired);
    json_int("failures", failures);
    json_end();
    for (i = 0; i < n; i++)
        zkl_lock_free(w[i].lk);
    zkl_lock_free(holder.lk);
    bench_free_clients(wc, ns);
    zkl_client_free(hc);
    free(wc);
    free(w);
    event_base_free(bench_base);
    return failures != 0 || h_acquired != n;
}

/* ---------------- waiters ---------------- */

/* Calls per loop turn: the enqueue and the release drive the library as
 * a server would, 100 requests per loop turn. What each call costs is
 * printed (acquire_call_us), so a bigger burst's stall can be read off. */
#define BATCH 100
static long wt_acquired;
static lat_t wt_gaps, wt_busy;
static uint64_t wt_last_tick, wt_last_cpu;
/* Time the benchmark itself spent between two heartbeats (its O(n) scan
 * of states), which is not the library's stall. */
static uint64_t wt_own_us, wt_own_cpu, wt_batch_cpu;

static int wt_let_go; /* the holders were told to release */

static void waiter_event(struct cycle *cy, zkl_lock_event_t ev, int status)
{
    (void)status;
    if (ev == ZKL_LOCK_ACQUIRED && !wt_let_go)
        bench_fail("%s granted while the other process holds it",
                   zkl_lock_path(cy->lk));
    if (ev == ZKL_LOCK_ACQUIRED) {
        wt_acquired++;
        zkl_lock_release(cy->lk);
    }
}

/* A 1 ms heartbeat. Between two of its runs the loop was busy for the
 * thread CPU time that passed (the stall the code causes) and away for
 * the wall time (that plus being descheduled: on two cores the server
 * under test competes for the CPU). */
static void heartbeat(evutil_socket_t fd, short what, void *arg)
{
    uint64_t now = now_us(), cpu = thread_cpu_us();

    (void)fd;
    (void)what;
    (void)arg;
    if (wt_last_tick != 0) {
        lat_add(&wt_gaps, now - wt_last_tick - wt_own_us);
        lat_add(&wt_busy, cpu - wt_last_cpu - wt_own_cpu);
    }
    wt_own_us = wt_own_cpu = 0;
    wt_last_tick = now;
    wt_last_cpu = cpu;
}

int bench_waiters(const struct opts *o)
{
    long n = o->n > 0 ? o->n : 10000, i, queued = 0;
    long ns = o->sessions > 0 ? o->sessions : (n + 9999) / 10000;
    struct cycle *w;
    zkl_client_t **wc;
    struct event *hb;
    struct timeval one_ms = {0, 1000};
    uint64_t t0, t1, t2, last_count = 0;
    long heap0, heap1, lib0, lib1;
    pid_t restarter = -1;
    int st;
    struct bench_holders hp;

    heap_count_library();
    note("waiters: another process takes %ld locks over %ld sessions", n, ns);
    /* In another process: a waiter behind a node of its own process
     * could wait on that node's attempt instead of a server watch. */
    bench_holders_fork(&hp, o->hosts, "w", n, ns);
    bench_base = event_base_new();
    wc = calloc((size_t)ns, sizeof *wc);
    for (i = 0; i < ns; i++)
        wc[i] = bench_client(o->hosts, 10000);
    w = calloc((size_t)n, sizeof *w);
    bench_holders_ready(&hp);
    note("waiters: %ld waiters over %ld sessions queue behind them", n, ns);
    hb = event_new(bench_base, -1, EV_PERSIST, heartbeat, NULL);
    event_add(hb, &one_ms);
    /* Live heap, not resident size: the waiters reuse what the holders'
     * start freed. The samples' own room is taken first. */
    wt_busy.cap = wt_gaps.cap = 1u << 20;
    wt_busy.v = malloc(wt_busy.cap * sizeof *wt_busy.v);
    wt_gaps.v = malloc(wt_gaps.cap * sizeof *wt_gaps.v);
    heap0 = heap_in_use();
    lib0 = heap_of_library();
    t0 = now_us();
    /* Requests arrive as a server would see them: in batches, one batch
     * per loop turn, so the gaps measured are the library's, not those
     * of a benchmark issuing 100,000 calls in one go. */
    for (i = 0; i < n || queued + wt_acquired + failures < n;) {
        long batch_end = i + BATCH < n ? i + BATCH : n;
        uint64_t bc0;

        /* No window of the benchmark's own: the library paces. */
        bc0 = thread_cpu_us();
        for (; i < batch_end; i++) {
            w[i].on_event = waiter_event;
            zkl_lock_new(&w[i].lk, wc[i % ns], bench_path("w", i),
                         cycle_cb, &w[i]);
            zkl_lock_acquire(w[i].lk, -1);
        }
        wt_batch_cpu += thread_cpu_us() - bc0;
        event_base_loop(bench_base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        if (i < n)
            continue;
        event_base_loop(bench_base, EVLOOP_ONCE);
        if (now_us() - last_count > 100000) { /* O(n): not every pass */
            uint64_t u0 = now_us(), c0 = thread_cpu_us();

            queued = count_state(w, i, ZKL_STATE_QUEUED);
            last_count = now_us();
            wt_own_us += last_count - u0;
            wt_own_cpu += thread_cpu_us() - c0;
        }
        if (now_us() - t0 > 600000000u)
            bench_fail("only %ld of %ld queued after 600 s", queued, n);
    }
    t1 = now_us();
    heap1 = heap_in_use();
    lib1 = heap_of_library();
    note("waiters: all queued in %.2f s; live heap +%ld KiB, %ld B a waiter "
         "(zklock's own %ld B, the rest the ZooKeeper client's)",
         (t1 - t0) / 1e6, (heap1 - heap0) / 1024, (heap1 - heap0) / n,
         (lib1 - lib0) / n);
    if (o->restart && o->zkdir != NULL) {
        note("waiters: restarting the server mid-drain");
        restarter = bench_restart_server(o->zkdir);
    }
    wt_let_go = 1;
    bench_holders_release(&hp);
    if (!bench_run_until(&wt_acquired, n, 900))
        bench_fail("drain stuck: %ld of %ld acquired", wt_acquired, n);
    t2 = now_us();
    event_del(hb);
    if (restarter > 0)
        waitpid(restarter, &st, 0);
    note("waiters: loop busy between heartbeats p50 %.2f p90 %.2f p99 %.2f "
         "p99.9 %.2f ms over %zu gaps",
         lat_pct(&wt_busy, 50) / 1000.0, lat_pct(&wt_busy, 90) / 1000.0,
         lat_pct(&wt_busy, 99) / 1000.0, lat_pct(&wt_busy, 99.9) / 1000.0,
         (size_t)wt_busy.n);
    json_begin("waiters");
    json_int("count", n);
    json_int("sessions", ns);
    json_num("heap_bytes_per_waiter", (double)(heap1 - heap0) / (double)n);
    json_num("heap_lib_bytes_per_waiter", (double)(lib1 - lib0) / (double)n);
    json_num("enqueue_s", (t1 - t0) / 1e6);
    json_num("drain_s", (t2 - t1) / 1e6);
    json_num("loop_stall_p99_ms", lat_pct(&wt_busy, 99) / 1000.0);
    json_num("loop_stall_max_ms", lat_pct(&wt_busy, 100) / 1000.0);
    json_num("loop_wall_gap_p99_ms", lat_pct(&wt_gaps, 99) / 1000.0);
    json_num("loop_wall_gap_max_ms", lat_pct(&wt_gaps, 100) / 1000.0);
    json_int("calls_per_turn", BATCH);
    json_num("acquire_call_us", (double)wt_batch_cpu / (double)n);
    json_int("acquired", wt_acquired);
    json_int("restarted", restarter > 0);
    json_int("failures", failures);
    json_end();
    for (i = 0; i < n; i++)
        zkl_lock_free(w[i].lk);
    for (i = 0; i < ns; i++)
        zkl_client_free(wc[i]);
    bench_holders_wait(&hp);
    event_free(hb);
    free(w);
    free(wc);
    event_base_free(bench_base);
    lat_free(&wt_gaps);
    lat_free(&wt_busy);
    return failures != 0 || wt_acquired != n;
}
