/* The server's ceiling with no lock logic: the bare single-threaded
 * ZooKeeper client, pipelined create(ephemeral-sequential) + delete pairs
 * from one session, and one create at a time for the round-trip cost. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zookeeper/zookeeper.h>

#include "bench.h"
#include "metrics.h"

#define RAW_DIR "/zklock-bench-raw"

struct raw {
    zhandle_t *zh;
    int connected;
    long started, done, target, inflight;
    lat_t lat;
    uint64_t t_create;
    int errors;
};

static void raw_watcher(zhandle_t *zh, int type, int state, const char *p,
                        void *ctx)
{
    struct raw *r = ctx;

    (void)zh;
    (void)p;
    if (type == ZOO_SESSION_EVENT)
        r->connected = state == ZOO_CONNECTED_STATE;
}

/* One step of the classic single-threaded driving loop. */
static void pump(struct raw *r, int ms)
{
    int fd = -1, interest = 0, ev = 0, i;
    struct timeval tv = {0, 0};
    struct pollfd pfd;

    zookeeper_interest(r->zh, &fd, &interest, &tv);
    pfd.fd = fd;
    pfd.events = (short)(((interest & ZOOKEEPER_READ) ? POLLIN : 0) |
                         ((interest & ZOOKEEPER_WRITE) ? POLLOUT : 0));
    pfd.revents = 0;
    poll(&pfd, fd >= 0 ? 1 : 0, ms);
    if (pfd.revents & (POLLIN | POLLHUP | POLLERR))
        ev |= ZOOKEEPER_READ;
    if (pfd.revents & POLLOUT)
        ev |= ZOOKEEPER_WRITE;
    for (i = 0; i < 4096; i++) {
        if (zookeeper_process(r->zh, ev) != ZOK)
            break;
        ev &= ZOOKEEPER_READ;
        if (!ev)
            break;
    }
}

static int raw_open(struct raw *r, const char *hosts)
{
    uint64_t end = now_us() + 10000000;

    memset(r, 0, sizeof *r);
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    r->zh = zookeeper_init(hosts, raw_watcher, 10000, NULL, r, 0);
    while (r->zh != NULL && !r->connected && now_us() < end)
        pump(r, 10);
    if (!r->connected) {
        fprintf(stderr, "zklock-bench: cannot connect to %s\n", hosts);
        return -1;
    }
    return 0;
}

static void dir_done(int rc, const char *v, const void *d)
{
    (void)v;
    *(int *)(uintptr_t)d = rc == ZOK || rc == ZNODEEXISTS ? 1 : -1;
}

static int raw_dir(struct raw *r)
{
    volatile int done = 0;
    uint64_t end = now_us() + 10000000;

    zoo_acreate(r->zh, RAW_DIR, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, dir_done,
                (const void *)&done);
    while (done == 0 && now_us() < end)
        pump(r, 10);
    if (done != 1)
        fprintf(stderr, "zklock-bench: cannot create %s\n", RAW_DIR);
    return done == 1 ? 0 : -1;
}

static void pair_created(int rc, const char *value, const void *data);

static void pair_deleted(int rc, const void *data)
{
    struct raw *r = (struct raw *)(uintptr_t)data;

    if (rc != ZOK)
        r->errors++;
    r->done++;
    r->inflight--;
}

static void pair_created(int rc, const char *value, const void *data)
{
    struct raw *r = (struct raw *)(uintptr_t)data;

    if (rc != ZOK) {
        r->errors++;
        r->done++;
        r->inflight--;
        return;
    }
    zoo_adelete(r->zh, value, -1, pair_deleted, r);
}

int bench_raw(const struct opts *o)
{
    struct raw r;
    long pairs = o->n > 0 ? o->n : 20000, k = o->inflight > 0 ? o->inflight : 1000;
    uint64_t t0, t1;
    double c0;

    if (raw_open(&r, o->hosts) != 0 || raw_dir(&r) != 0)
        return 1;
    note("raw: %ld create+delete pairs, %ld in flight, one session", pairs, k);
    c0 = cpu_seconds();
    t0 = now_us();
    while (r.done < pairs) {
        while (r.inflight < k && r.started < pairs) {
            if (zoo_acreate(r.zh, RAW_DIR "/p-", NULL, -1,
                            &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL,
                            pair_created, &r) != ZOK)
                break;
            r.started++;
            r.inflight++;
        }
        pump(&r, 100);
    }
    t1 = now_us();
    json_begin("raw");
    json_int("pairs", pairs);
    json_int("inflight", k);
    json_num("pairs_per_s", pairs / ((double)(t1 - t0) / 1e6));
    json_num("cpu_s_per_1k_pairs", (cpu_seconds() - c0) * 1000.0 / pairs);
    json_int("errors", r.errors);
    json_end();
    zookeeper_close(r.zh);
    return r.errors != 0;
}

static void one_created(int rc, const char *value, const void *data)
{
    struct raw *r = (struct raw *)(uintptr_t)data;

    lat_add(&r->lat, now_us() - r->t_create);
    if (rc != ZOK) {
        r->errors++;
        r->done++;
        return;
    }
    zoo_adelete(r->zh, value, -1, pair_deleted, r);
    r->inflight++; /* balanced by pair_deleted */
}

int bench_create_latency(const struct opts *o)
{
    struct raw r;
    long n = o->n > 0 ? o->n : 2000;

    if (raw_open(&r, o->hosts) != 0 || raw_dir(&r) != 0)
        return 1;
    note("create-latency: %ld creates, one at a time", n);
    while (r.started < n) {
        long want = r.done;

        r.t_create = now_us();
        zoo_acreate(r.zh, RAW_DIR "/l-", NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
                    ZOO_EPHEMERAL_SEQUENTIAL, one_created, &r);
        r.started++;
        while (r.done == want)
            pump(&r, 100);
    }
    json_begin("create-latency");
    json_int("n", n);
    json_num("p50_us", lat_pct(&r.lat, 50));
    json_num("p99_us", lat_pct(&r.lat, 99));
    json_int("errors", r.errors);
    json_end();
    lat_free(&r.lat);
    zookeeper_close(r.zh);
    return r.errors != 0;
}
