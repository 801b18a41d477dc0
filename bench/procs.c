/* Fleet mode (--procs N): handoff and throughput with N worker
 * processes, each with its own loop, client and session; the parent
 * sums what they report (fleet.h). */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "bench.h"
#include "fleet.h"
#include "metrics.h"
#include "zklock.h"
#include "zklock_libevent.h"

/* ---------------- handoff ---------------- */

/* A worker: one waiter on path, released as soon as it is acquired. */
static int w_acquired, w_failures;

static void worker_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                      void *arg)
{
    (void)arg;
    if (ev == ZKL_LOCK_ACQUIRED) {
        w_acquired++;
        zkl_lock_release(lk);
    } else if (ev == ZKL_LOCK_FAILED || ev == ZKL_LOCK_LOST) {
        w_failures++;
        note("worker %d: %s: %s", (int)getpid(), zkl_lock_event_name(ev),
             zkl_strerror(status));
    }
}

static void fill(struct fleet_msg *m, int kind, int worker, zkl_client_t *c)
{
    zkl_stats_t s;

    memset(m, 0, sizeof *m);
    m->kind = kind;
    m->worker = worker;
    zkl_client_stats(c, &s, sizeof s);
    m->requests = (long)s.requests;
    m->listings = (long)s.listings;
    m->watch_events = (long)s.watch_events;
    m->bytes_in = tcp_bytes_in();
    m->failures = w_failures;
}

static void handoff_worker(struct fleet *f, int me, const struct opts *o,
                           const char *path)
{
    struct fleet_msg m;
    zkl_client_t *c;
    zkl_lock_t *lk;
    uint64_t end;

    fleet_wait_go(f);
    bench_base = event_base_new();
    c = bench_client(o->hosts, 10000);
    zkl_lock_new(&lk, c, path, worker_cb, NULL);
    zkl_lock_acquire(lk, -1);
    end = now_us() + 300000000;
    while (zkl_lock_state(lk) != ZKL_STATE_QUEUED && w_acquired == 0 &&
           w_failures == 0 && now_us() < end)
        event_base_loop(bench_base, EVLOOP_ONCE);
    fill(&m, FLEET_QUEUED, me, c);
    fleet_send(f, &m);
    while (w_acquired == 0 && w_failures == 0 && now_us() < end)
        event_base_loop(bench_base, EVLOOP_ONCE);
    fill(&m, FLEET_ACQUIRED, me, c);
    m.cycles = w_acquired;
    fleet_send(f, &m);
    while (zkl_client_pending(c) > 0 && now_us() < end)
        event_base_loop(bench_base, EVLOOP_ONCE);
    fill(&m, FLEET_DONE, me, c);
    m.cycles = w_acquired;
    fleet_send(f, &m);
    /* The session stays open until every worker is done, as a fleet's
     * would: no close storm in the middle of the drain. */
    fleet_worker_exit(f, 0);
}

struct tally {
    long queued, acquired, done, failed;
    long requests, listings, watch_events, failures;
    uint64_t bytes_in;
    /* The QUEUED report of each worker, to subtract. */
    struct fleet_msg *first;
};

static void on_report(const struct fleet_msg *m, void *arg)
{
    struct tally *t = arg;
    struct fleet_msg *f0 = &t->first[m->worker];

    switch (m->kind) {
    case FLEET_QUEUED:
        *f0 = *m;
        t->queued++;
        break;
    case FLEET_ACQUIRED:
        t->acquired += m->cycles;
        break;
    case FLEET_DONE:
        t->done++;
        t->requests += m->requests - f0->requests;
        t->listings += m->listings - f0->listings;
        t->watch_events += m->watch_events - f0->watch_events;
        t->bytes_in += m->bytes_in - f0->bytes_in;
        t->failures += m->failures;
        break;
    default:
        t->failed++;
        break;
    }
}

static void on_pipe(evutil_socket_t fd, short what, void *arg)
{
    struct fleet *f = arg;
    struct tally *t = f->user;

    (void)fd;
    (void)what;
    fleet_read(f, on_report, t);
}

static void noop_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                    void *arg)
{
    (void)lk;
    (void)ev;
    (void)status;
    (void)arg;
}

int bench_handoff_fleet(const struct opts *o)
{
    int n = (int)o->procs, me, ok, bad;
    char path[128];
    struct fleet f;
    struct tally t;
    struct event *pe;
    zkl_client_t *hc;
    zkl_lock_t *holder;
    uint64_t t0, t1;

    /* The lock path is the parent's: named before the fork. */
    snprintf(path, sizeof path, "%s", bench_path("handoff", 0));
    if ((me = fleet_fork(&f, n)) >= 0)
        handoff_worker(&f, me, o, path); /* does not return */
    memset(&t, 0, sizeof t);
    t.first = calloc((size_t)n, sizeof *t.first);
    f.user = &t;
    bench_base = event_base_new();
    pe = event_new(bench_base, f.report_fd, EV_READ | EV_PERSIST, on_pipe,
                   &f);
    event_add(pe, NULL);
    hc = bench_client(o->hosts, 10000);
    zkl_lock_new(&holder, hc, path, noop_cb, NULL);
    zkl_lock_acquire(holder, -1);
    while (!zkl_lock_is_held(holder))
        event_base_loop(bench_base, EVLOOP_ONCE);
    note("handoff: %d processes, one session and one waiter each, queue on "
         "one lock",
         n);
    fleet_go(&f);
    ok = bench_run_until(&t.queued, n, 600);
    note("handoff: %ld queued; releasing the holder", t.queued);
    t0 = now_us();
    zkl_lock_release(holder);
    ok = ok && bench_run_until(&t.acquired, n, 600);
    t1 = now_us();
    ok = ok && bench_run_until(&t.done, n, 600);
    json_begin("handoff");
    json_int("waiters", n);
    json_int("sessions", n);
    json_int("procs", n);
    json_num("handoffs_per_s", t.acquired / ((double)(t1 - t0) / 1e6));
    json_num("bytes_in_per_handoff", (double)t.bytes_in / (double)n);
    json_num("wakeups_per_release", (double)t.watch_events / (double)n);
    json_num("requests_per_handoff", (double)t.requests / (double)n);
    json_num("listings_per_handoff", (double)t.listings / (double)n);
    json_int("acquired", t.acquired);
    json_int("failures", t.failures + t.failed);
    json_end();
    zkl_lock_free(holder);
    bench_free_clients(&hc, 1);
    event_free(pe);
    bad = fleet_end(&f);
    event_base_free(bench_base);
    free(t.first);
    return !ok || bad != 0 || t.failures + t.failed != 0 || t.acquired != n;
}

/* ---------------- throughput ---------------- */

struct collect {
    struct fleet_msg *got;
    long *ngot, max;
};

static void keep(const struct fleet_msg *m, void *arg)
{
    struct collect *cl = arg;

    if (*cl->ngot < cl->max)
        cl->got[(*cl->ngot)++] = *m;
}

/* Each worker runs the one-process throughput run on its own share of
 * the locks and of the in-flight count, all starting together. */
int bench_throughput_fleet(const struct opts *o)
{
    int n = (int)o->procs, me, bad, i;
    long k = o->inflight > 0 ? o->inflight : 100;
    long nlocks = o->n > 0 ? o->n : k;
    struct fleet f;
    struct fleet_msg *got;
    long ngot = 0, cycles = 0, failures = 0, requests = 0;
    double secs = 0, p50 = 0, p99 = 0, cpu = 0;

    if (k < n)
        k = n;
    if ((me = fleet_fork(&f, n)) >= 0) {
        struct opts wo = *o;
        struct tp_result r;
        struct fleet_msg m;

        fleet_wait_go(&f);
        wo.sessions = 1;
        memset(&r, 0, sizeof r);
        bench_tp_run(&wo, nlocks / n + (me < nlocks % n),
                     k / n + (me < k % n), &r);
        memset(&m, 0, sizeof m);
        m.kind = FLEET_DONE;
        m.worker = me;
        m.cycles = r.cycles;
        m.requests = r.requests;
        m.failures = r.failures;
        m.p50_us = r.p50_us;
        m.p99_us = r.p99_us;
        m.seconds = r.seconds;
        m.cpu_s = r.cpu_s;
        fleet_send(&f, &m);
        fleet_worker_exit(&f, 0);
    }
    got = calloc((size_t)n, sizeof *got);
    note("throughput: %d processes, one session each", n);
    fleet_go(&f);
    /* The parent has no loop of its own here: it waits on the pipe. */
    while (ngot < n) {
        struct collect cl = {got, &ngot, n};
        struct pollfd p = {f.report_fd, POLLIN, 0};

        poll(&p, 1, 1000);
        if (fleet_read(&f, keep, &cl) < 0)
            break; /* every worker gone */
    }
    for (i = 0; i < ngot; i++) {
        cycles += got[i].cycles;
        requests += got[i].requests;
        failures += got[i].failures;
        secs += got[i].seconds / (double)ngot;
        cpu += got[i].cpu_s;
        p50 += got[i].p50_us / (double)ngot;
        if (got[i].p99_us > p99)
            p99 = got[i].p99_us;
    }
    bad = fleet_end(&f);
    json_begin("throughput");
    json_int("locks", nlocks < k ? k : nlocks);
    json_int("inflight", k);
    json_int("sessions", n);
    json_int("procs", n);
    json_num("seconds", secs);
    /* Each worker's rate over its own window, summed. */
    json_num("cycles_per_s", secs > 0 ? cycles / secs : 0);
    json_num("acquire_p50_us", p50); /* mean of the workers' p50 */
    json_num("acquire_p99_us", p99); /* the worst worker's p99 */
    json_num("requests_per_cycle", cycles ? (double)requests / cycles : 0);
    json_num("cpu_s_per_1k_cycles", cycles ? cpu * 1000.0 / cycles : 0);
    json_int("failures", failures + (n - ngot));
    json_end();
    free(got);
    return bad != 0 || failures != 0 || ngot != n;
}
