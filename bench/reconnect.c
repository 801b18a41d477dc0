/* reconnect: N clients in one process, on one loop, each holding one
 * lock; how long the loop is busy while they all connect at once and,
 * with --restart ZKDIR, while they all reconnect after the server
 * restarts (test/zkserver.sh restart ZKDIR: the sessions survive, every
 * hold goes SUSPENDED, then RESTORED). Over TLS (--tls-*) every connect
 * and reconnect is a TLS handshake, which zklock's ZooKeeper client runs
 * step by step from the loop (deps/NOTES-tls.md, 2e): what this measures
 * is whether those steps, 100 at a time, stall the loop.
 *
 *   zklock-bench reconnect [--count N] [--restart ZKDIR] [--tls-* ...]
 *
 * Three measures of the loop, each over a phase:
 * - busy: a 1 ms heartbeat; the thread CPU time between two of its runs
 *   (as burst and waiters measure it): what the loop could not do for
 *   others in that stretch. p99 and max.
 * - turn: the thread CPU time of one event_base_loop(EVLOOP_ONCE), i.e.
 *   every callback that one wake-up ran: the longest single stall the
 *   loop caused. p99 and max.
 * - gap: the wall time between heartbeats (busy plus being descheduled:
 *   on two cores the server competes for the CPU). p99 and max.
 * Phases: connect, from the first turn after the N clients are made to
 * all connected (the clients' creation itself, before the loop runs, is
 * create_ms); reconnect, from the moment the restarted server's port
 * accepts a TCP connection again (a probe from this loop, every turn,
 * once the holds are SUSPENDED and the old server has refused one) to
 * every hold RESTORED and every client connected. The outage before it
 * (server stopping and starting) is outage_s; its idle turns are not in
 * the reconnect figures. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include "bench.h"
#include "metrics.h"
#include "zklock.h"
#include "zklock_libevent.h"

static long rc_held, rc_suspended, rc_restored, rc_lost;
static lat_t *rc_busy, *rc_gap; /* the phase's samples, NULL: none */
static uint64_t rc_last_tick, rc_last_cpu, rc_own_us, rc_own_cpu;

static void hold_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                    void *arg)
{
    (void)arg;
    switch (ev) {
    case ZKL_LOCK_ACQUIRED:
        rc_held++;
        break;
    case ZKL_LOCK_SUSPENDED:
        rc_suspended++;
        break;
    case ZKL_LOCK_RESTORED:
        rc_restored++;
        break;
    default:
        rc_lost++;
        bench_fail("lock %s: %s: %s", zkl_lock_path(lk),
                   zkl_lock_event_name(ev), zkl_strerror(status));
    }
}

static void heartbeat(evutil_socket_t fd, short what, void *arg)
{
    uint64_t now = now_us(), cpu = thread_cpu_us();

    (void)fd;
    (void)what;
    (void)arg;
    if (rc_last_tick != 0 && rc_busy != NULL) {
        lat_add(rc_busy, cpu - rc_last_cpu - rc_own_cpu);
        lat_add(rc_gap, now - rc_last_tick - rc_own_us);
    }
    rc_own_us = rc_own_cpu = 0;
    rc_last_tick = now;
    rc_last_cpu = cpu;
}

/* One phase's samples. */
struct phase {
    lat_t busy, gap, turn;
    double seconds;
};

/* One loop turn, its CPU time a sample of ph (if any). */
static void turn(struct phase *ph)
{
    uint64_t c0 = thread_cpu_us();

    event_base_loop(bench_base, EVLOOP_ONCE);
    if (ph != NULL)
        lat_add(&ph->turn, thread_cpu_us() - c0);
}

static void record(struct phase *ph)
{
    rc_busy = ph ? &ph->busy : NULL;
    rc_gap = ph ? &ph->gap : NULL;
    rc_last_tick = 0; /* the next heartbeat starts afresh */
}

/* 1 if the server's port accepts a TCP connection now (loopback: the
 * answer is immediate); its time is the benchmark's own. */
static struct sockaddr_in probe_addr;

static int port_accepts(void)
{
    uint64_t t0 = now_us(), c0 = thread_cpu_us();
    int fd = socket(AF_INET, SOCK_STREAM, 0), ok;

    ok = fd >= 0 && connect(fd, (struct sockaddr *)&probe_addr,
                            sizeof probe_addr) == 0;
    if (fd >= 0)
        close(fd);
    rc_own_us += now_us() - t0;
    rc_own_cpu += thread_cpu_us() - c0;
    return ok;
}

static long count_connected(zkl_client_t **c, long n)
{
    long i, k = 0;
    zkl_conn_event_t st;

    for (i = 0; i < n; i++) {
        st = zkl_client_state(c[i]);
        k += st == ZKL_CONN_CONNECTED || st == ZKL_CONN_RECONNECTED;
    }
    return k;
}

static void phase_json(const char *name, struct phase *ph)
{
    char k[64];

#define PJ(what, l, p)                                                      \
    do {                                                                    \
        snprintf(k, sizeof k, "%s_%s_%s_ms", name, what,                    \
                 (p) == 100 ? "max" : "p99");                               \
        json_num(k, lat_pct(l, p) / 1000.0);                                \
    } while (0)
    snprintf(k, sizeof k, "%s_s", name);
    json_num(k, ph->seconds);
    PJ("busy", &ph->busy, 99);
    PJ("busy", &ph->busy, 100);
    PJ("turn", &ph->turn, 99);
    PJ("turn", &ph->turn, 100);
    PJ("gap", &ph->gap, 99);
    PJ("gap", &ph->gap, 100);
    snprintf(k, sizeof k, "%s_turns", name);
    json_int(k, (long long)ph->turn.n);
#undef PJ
}

static void phase_note(const char *name, struct phase *ph)
{
    note("reconnect: %s in %.3f s: loop busy p99 %.2f max %.2f ms; turn "
         "p99 %.2f max %.2f ms (%zu turns); wall gap p99 %.2f max %.2f ms",
         name, ph->seconds, lat_pct(&ph->busy, 99) / 1000.0,
         lat_pct(&ph->busy, 100) / 1000.0, lat_pct(&ph->turn, 99) / 1000.0,
         lat_pct(&ph->turn, 100) / 1000.0, ph->turn.n,
         lat_pct(&ph->gap, 99) / 1000.0, lat_pct(&ph->gap, 100) / 1000.0);
}

int bench_reconnect(const struct opts *o)
{
    long n = o->n > 0 ? o->n : 100, i;
    zkl_client_t **c;
    zkl_lock_t **lk;
    struct event *hb;
    struct timeval one_ms = {0, 1000};
    struct phase conn, rec;
    uint64_t t0, t1, create_us, t_down = 0, deadline;
    double outage_s = 0;
    zkl_stats_t s0, s1;
    pid_t restarter = -1;
    int st, restart_rc = -1;
    const char *colon = strrchr(o->hosts, ':');

    memset(&conn, 0, sizeof conn);
    memset(&rec, 0, sizeof rec);
    if (o->restart) {
        /* One server, "IP:PORT": the probe's address. */
        memset(&probe_addr, 0, sizeof probe_addr);
        probe_addr.sin_family = AF_INET;
        if (colon == NULL || strchr(o->hosts, ',') != NULL ||
            atoi(colon + 1) <= 0) {
            fprintf(stderr, "zklock-bench: reconnect --restart needs one "
                            "server, IP:PORT\n");
            return 2;
        }
        probe_addr.sin_port = htons((uint16_t)atoi(colon + 1));
        {
            char ip[64];
            size_t len = (size_t)(colon - o->hosts);

            if (len >= sizeof ip)
                len = sizeof ip - 1;
            memcpy(ip, o->hosts, len);
            ip[len] = '\0';
            if (inet_pton(AF_INET, ip, &probe_addr.sin_addr) != 1) {
                fprintf(stderr, "zklock-bench: reconnect --restart: \"%s\" "
                                "is not an IPv4 address\n", ip);
                return 2;
            }
        }
    }
    bench_base = event_base_new();
    hb = event_new(bench_base, -1, EV_PERSIST, heartbeat, NULL);
    event_add(hb, &one_ms);
    c = calloc((size_t)n, sizeof *c);
    lk = calloc((size_t)n, sizeof *lk);
    note("reconnect: %ld clients%s connect at once, one loop", n,
         bench_tls_ca ? " over TLS" : "");
    /* Sessions must outlive the restart (zkserver.sh allows 30 s). */
    t0 = now_us();
    for (i = 0; i < n; i++)
        c[i] = bench_client_start(o->hosts, 30000);
    create_us = now_us() - t0;
    bench_run_touched();
    record(&conn);
    t0 = now_us();
    deadline = t0 + 60000000;
    while (count_connected(c, n) < n) {
        turn(&conn);
        if (now_us() > deadline)
            bench_fail("connect: %ld of %ld clients connected after 60 s",
                       count_connected(c, n), n);
    }
    conn.seconds = (now_us() - t0) / 1e6;
    record(NULL);
    phase_note("connect", &conn);
    for (i = 0; i < n; i++) {
        zkl_lock_new(&lk[i], c[i], bench_path("rc", i), hold_cb, NULL);
        zkl_lock_acquire(lk[i], -1);
    }
    if (!bench_run_until(&rc_held, n, 60))
        bench_fail("%ld of %ld locks held", rc_held, n);
    bench_sum_stats(c, n, &s0);
    if (o->restart && o->zkdir != NULL) {
        note("reconnect: %ld locks held; restarting the server", n);
        restarter = bench_restart_server(o->zkdir);
        deadline = now_us() + 120000000;
        /* The holds go SUSPENDED when the old server goes. */
        while (rc_suspended < n) {
            turn(NULL);
            if (now_us() > deadline)
                bench_fail("restart: %ld of %ld holds suspended after "
                           "120 s", rc_suspended, n);
        }
        t_down = now_us();
        /* The old server's port refuses, then the new one's accepts. */
        while (port_accepts()) {
            turn(NULL);
            if (now_us() > deadline)
                bench_fail("restart: the old server still accepts");
        }
        while (!port_accepts()) {
            turn(NULL);
            if (now_us() > deadline)
                bench_fail("restart: the server did not come back");
        }
        t1 = now_us();
        outage_s = (t1 - t_down) / 1e6;
        record(&rec);
        while (rc_restored < n || count_connected(c, n) < n) {
            turn(&rec);
            if (now_us() > deadline)
                bench_fail("reconnect: %ld of %ld holds restored, %ld "
                           "clients connected, %.1f s after the server "
                           "came back", rc_restored, n,
                           count_connected(c, n), (now_us() - t1) / 1e6);
        }
        rec.seconds = (now_us() - t1) / 1e6;
        record(NULL);
        phase_note("reconnect", &rec);
        while (waitpid(restarter, &st, WNOHANG) == 0)
            turn(NULL);
        restart_rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
        if (restart_rc != 0)
            bench_fail("test/zkserver.sh restart %s failed (%d)", o->zkdir,
                       restart_rc);
    }
    bench_sum_stats(c, n, &s1);
    event_del(hb);
    json_begin("reconnect");
    json_int("clients", n);
    json_int("tls", bench_tls_ca != NULL);
    json_num("create_ms", create_us / 1000.0);
    phase_json("connect", &conn);
    json_int("restarted", restarter > 0);
    if (restarter > 0) {
        json_num("outage_s", outage_s);
        phase_json("reconnect", &rec);
        json_int("suspended", rc_suspended);
        json_int("restored", rc_restored);
        /* A session renewed would mean an expired one: holds LOST. */
        json_int("sessions_renewed", (long long)(s1.sessions - s0.sessions));
    }
    json_int("held", rc_held);
    json_int("lost", rc_lost);
    json_int("failures", rc_lost);
    json_end();
    for (i = 0; i < n; i++) {
        zkl_lock_release(lk[i]);
        zkl_lock_free(lk[i]);
    }
    bench_free_clients(c, n);
    event_free(hb);
    event_base_free(bench_base);
    free(c);
    free(lk);
    lat_free(&conn.busy);
    lat_free(&conn.gap);
    lat_free(&conn.turn);
    lat_free(&rec.busy);
    lat_free(&rec.gap);
    lat_free(&rec.turn);
    return rc_lost != 0 || rc_held != n;
}
