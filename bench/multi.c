/* Multi-locks: one client takes a set of N free locks at once and gives
 * it back, R times. What an acquire costs against N raw creates
 * pipelined from one session (raw-batch, raw.c) and against Curator's
 * InterProcessMultiLock (bench/peers/CuratorBench.java multilock). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "bench.h"
#include "metrics.h"
#include "zklock.h"

/* Rounds when --rounds is not given: fewer for big sets, whose rounds
 * take longer (and far longer for Curator, which takes them one by
 * one). */
long bench_rounds(const struct opts *o, long n)
{
    if (o->rounds > 0)
        return o->rounds;
    return n <= 10 ? 200 : 50;
}

static zkl_client_t *m_client;
static lat_t m_lat;
static long m_ended;     /* acquires answered (ACQUIRED or FAILED) */
static long m_released;  /* RELEASED */
static long m_failures;
static int m_timing;     /* the round is measured */
static uint64_t m_t0;    /* the acquire call */
static uint64_t m_req0;  /* requests before the acquire call */
static uint64_t m_req_acquire; /* requests from the call to ACQUIRED */
static uint64_t m_lst0, m_lst_acquire; /* the same for listings */
static uint64_t m_cpu0, m_cpu_acquire;  /* and this thread's CPU time */

static uint64_t requests_now(void)
{
    zkl_stats_t s;

    zkl_client_stats(m_client, &s, sizeof s);
    return s.requests;
}

static uint64_t listings_now(void)
{
    zkl_stats_t s;

    zkl_client_stats(m_client, &s, sizeof s);
    return s.listings;
}

static void multi_cb(zkl_multi_t *m, zkl_lock_event_t ev, int status,
                     void *arg)
{
    uint64_t t = now_us();

    (void)m;
    (void)arg;
    switch (ev) {
    case ZKL_LOCK_ACQUIRED:
        if (m_timing) {
            lat_add(&m_lat, t - m_t0);
            m_req_acquire += requests_now() - m_req0;
            m_lst_acquire += listings_now() - m_lst0;
            m_cpu_acquire += thread_cpu_us() - m_cpu0;
        }
        m_ended++;
        break;
    case ZKL_LOCK_FAILED:
        m_failures++;
        m_ended++;
        note("multilock: acquire failed: %s", zkl_strerror(status));
        break;
    case ZKL_LOCK_LOST:
        m_failures++;
        note("multilock: lost: %s", zkl_strerror(status));
        break;
    case ZKL_LOCK_RELEASED:
        if (status != 0) {
            m_failures++;
            note("multilock: released with %s", zkl_strerror(status));
        }
        m_released++;
        break;
    default:
        note("multilock: %s: %s", zkl_lock_event_name(ev),
             zkl_strerror(status));
        break;
    }
}

/* One round: acquire (timed when m_timing), then release (not timed).
 * 0, or -1 when it could not finish. */
static int round_trip(zkl_multi_t *m)
{
    long ended = m_ended, released = m_released;
    int rc;

    m_req0 = requests_now();
    m_lst0 = listings_now();
    m_cpu0 = thread_cpu_us();
    m_t0 = now_us();
    rc = zkl_multi_acquire(m, -1);
    if (rc != ZKL_OK) {
        note("multilock: zkl_multi_acquire: %s", zkl_strerror(rc));
        m_failures++;
        return -1;
    }
    if (!bench_run_until(&m_ended, ended + 1, 120)) {
        note("multilock: no answer to an acquire in 120 s");
        m_failures++;
        return -1;
    }
    if (!zkl_multi_is_held(m))
        return -1;
    rc = zkl_multi_release(m);
    if (rc != ZKL_OK) {
        note("multilock: zkl_multi_release: %s", zkl_strerror(rc));
        m_failures++;
        return -1;
    }
    if (!bench_run_until(&m_released, released + 1, 120)) {
        note("multilock: no answer to a release in 120 s");
        m_failures++;
        return -1;
    }
    return 0;
}

/* multilock --locks N --rounds R: a multi-lock of N distinct free lock
 * paths, acquired (timed until ACQUIRED) and released (until RELEASED,
 * not timed) R times, one round at a time. requests_per_acquire counts
 * what the client sent from the call until ACQUIRED (a create and a
 * listing per lock, and those of the members' own-node watches that go
 * out before the set's ACQUIRED is delivered); requests_per_round all
 * of a round, the release's deletes included. nodes_left: lock nodes
 * under the N paths once the handle is freed and nothing is pending,
 * read while the session is still open (so a node a round left behind
 * would still be there). */
int bench_multilock(const struct opts *o)
{
    long n = o->n > 0 ? o->n : 10, rounds = bench_rounds(o, n), done = 0, i;
    char **paths;
    zkl_multi_t *m;
    uint64_t r0, r1, end;
    long nodes_left;
    int rc;

    if (n > ZKL_MULTI_MAX) {
        fprintf(stderr, "zklock-bench: --locks at most %d\n", ZKL_MULTI_MAX);
        return 2;
    }
    bench_base = event_base_new();
    m_client = bench_client(o->hosts, 30000);
    paths = calloc((size_t)n, sizeof *paths);
    for (i = 0; i < n; i++)
        paths[i] = strdup(bench_path("multi", i));
    rc = zkl_multi_new(&m, m_client, (const char *const *)paths, NULL,
                       (size_t)n, multi_cb, NULL);
    if (rc != ZKL_OK) {
        fprintf(stderr, "zklock-bench: zkl_multi_new: %s\n",
                zkl_strerror(rc));
        return 1;
    }
    /* Every lock path exists before the clock starts, as it would in
     * service (a first acquire also creates the paths and their
     * parents, which is not what an acquire costs). */
    note("multilock: one round first, which makes the %ld lock paths", n);
    if (round_trip(m) != 0) {
        fprintf(stderr, "zklock-bench: the first round failed\n");
        return 1;
    }
    note("multilock: %ld rounds of a multi-lock of %ld free locks", rounds,
         n);
    m_timing = 1;
    r0 = requests_now();
    for (done = 0; done < rounds; done++)
        if (round_trip(m) != 0)
            break;
    r1 = requests_now();
    m_timing = 0;
    zkl_multi_free(m);
    end = now_us() + 30000000;
    while (zkl_client_pending(m_client) > 0 && now_us() < end) {
        long stop = 0;

        bench_run_until(&stop, 1, 0.1);
    }
    nodes_left = bench_raw_count_children(o->hosts, paths, n);
    json_begin("multilock");
    json_int("locks", n);
    json_int("rounds", done);
    json_num("acquire_p50_us", lat_pct(&m_lat, 50));
    json_num("acquire_p99_us", lat_pct(&m_lat, 99));
    json_num("requests_per_acquire",
             done ? (double)m_req_acquire / (double)done : 0);
    json_num("listings_per_acquire",
             done ? (double)m_lst_acquire / (double)done : 0);
    json_num("cpu_us_per_acquire",
             done ? (double)m_cpu_acquire / (double)done : 0);
    json_num("requests_per_round",
             done ? (double)(r1 - r0) / (double)done : 0);
    json_int("nodes_left", nodes_left);
    json_int("failures", m_failures);
    json_end();
    zkl_client_free(m_client);
    event_base_free(bench_base);
    for (i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
    lat_free(&m_lat);
    return m_failures != 0 || done < rounds || nodes_left != 0;
}
