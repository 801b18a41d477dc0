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

/* One step of the classic single-threaded driving loop, for ns
 * sessions at once: poll every socket, then let each client process
 * what came (and its timers, with no event). */
static void pump_all(struct raw *r, long ns, int ms)
{
    static struct pollfd *pfd;
    static long cap;
    long i;
    int j;

    if (ns > cap) {
        free(pfd);
        pfd = calloc((size_t)ns, sizeof *pfd);
        cap = ns;
    }
    for (i = 0; i < ns; i++) {
        int fd = -1, interest = 0;
        struct timeval tv = {0, 0};

        zookeeper_interest(r[i].zh, &fd, &interest, &tv);
        pfd[i].fd = fd; /* poll() skips a negative one */
        pfd[i].events = (short)(((interest & ZOOKEEPER_READ) ? POLLIN : 0) |
                                ((interest & ZOOKEEPER_WRITE) ? POLLOUT : 0));
        pfd[i].revents = 0;
    }
    poll(pfd, (nfds_t)ns, ms);
    for (i = 0; i < ns; i++) {
        int ev = 0;

        if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))
            ev |= ZOOKEEPER_READ;
        if (pfd[i].revents & POLLOUT)
            ev |= ZOOKEEPER_WRITE;
        for (j = 0; j < 4096; j++) {
            if (zookeeper_process(r[i].zh, ev) != ZOK)
                break;
            ev &= ZOOKEEPER_READ;
            if (!ev)
                break;
        }
    }
}

static void pump(struct raw *r, int ms)
{
    pump_all(r, 1, ms);
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

static int raw_dir(struct raw *r, const char *dir)
{
    volatile int done = 0;
    uint64_t end = now_us() + 10000000;

    zoo_acreate(r->zh, dir, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, dir_done,
                (const void *)&done);
    while (done == 0 && now_us() < end)
        pump(r, 10);
    if (done != 1)
        fprintf(stderr, "zklock-bench: cannot create %s\n", dir);
    return done == 1 ? 0 : -1;
}

/* One pair in flight: its session and, with --list, its own directory
 * (as each lock has its own path). */
struct slot {
    struct raw *r;
    int busy;
    char dir[48];
};

static void pair_created(int rc, const char *value, const void *data);

static void pair_deleted(int rc, const void *data)
{
    struct slot *sl = (struct slot *)(uintptr_t)data;

    if (rc != ZOK)
        sl->r->errors++;
    sl->r->done++;
    sl->r->inflight--;
    sl->busy = 0;
}

static void pair_listed(int rc, const struct String_vector *sv,
                        const void *data)
{
    struct slot *sl = (struct slot *)(uintptr_t)data;

    (void)sv;
    if (rc != ZOK)
        sl->r->errors++;
}

static void pair_created(int rc, const char *value, const void *data)
{
    struct slot *sl = (struct slot *)(uintptr_t)data;

    if (rc != ZOK) {
        sl->r->errors++;
        sl->r->done++;
        sl->r->inflight--;
        sl->busy = 0;
        return;
    }
    zoo_adelete(sl->r->zh, value, -1, pair_deleted, sl);
}

static int slot_start(struct slot *sl, int list)
{
    char path[64];

    snprintf(path, sizeof path, "%s/p-", sl->dir);
    if (zoo_acreate(sl->r->zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
                    ZOO_EPHEMERAL_SEQUENTIAL, pair_created, sl) != ZOK)
        return -1;
    if (list)
        zoo_aget_children(sl->r->zh, sl->dir, 0, pair_listed, sl);
    sl->r->inflight++;
    sl->busy = 1;
    return 0;
}

/* --pairs N create+delete pairs, --inflight K in flight in all, spread
 * over --sessions S sessions (K/S each). With --list each create is
 * followed, pipelined, by a listing of the directory: a lock cycle's
 * requests without the lock's logic. */
int bench_raw(const struct opts *o)
{
    long pairs = o->n > 0 ? o->n : 20000,
         k = o->inflight > 0 ? o->inflight : 1000,
         ns = o->sessions > 0 ? o->sessions : 1, i, done = 0, started = 0,
         errors = 0;
    struct raw *r = calloc((size_t)ns, sizeof *r);
    struct slot *sl = calloc((size_t)k, sizeof *sl);
    uint64_t t0, t1;
    double c0;

    for (i = 0; i < ns; i++)
        if (raw_open(&r[i], o->hosts) != 0)
            return 1;
    if (raw_dir(&r[0], RAW_DIR) != 0)
        return 1;
    for (i = 0; i < k; i++) {
        sl[i].r = &r[i % ns];
        if (o->list) {
            snprintf(sl[i].dir, sizeof sl[i].dir, RAW_DIR "/d%ld", i);
            if (raw_dir(&r[0], sl[i].dir) != 0)
                return 1;
        } else {
            snprintf(sl[i].dir, sizeof sl[i].dir, RAW_DIR);
        }
    }
    note("raw: %ld create+%sdelete pairs, %ld in flight over %ld sessions",
         pairs, o->list ? "list+" : "", k, ns);
    c0 = cpu_seconds();
    t0 = now_us();
    for (i = 0; i < k && started < pairs; i++)
        if (slot_start(&sl[i], o->list) == 0)
            started++;
    while (done < pairs) {
        pump_all(r, ns, 100);
        for (done = 0, i = 0; i < ns; i++)
            done += r[i].done;
        /* A slot whose pair is done starts its next one. */
        for (i = 0; i < k && started < pairs; i++)
            if (!sl[i].busy && slot_start(&sl[i], o->list) == 0)
                started++;
    }
    t1 = now_us();
    for (i = 0; i < ns; i++)
        errors += r[i].errors;
    json_begin(o->list ? "raw-list" : "raw");
    json_int("pairs", pairs);
    json_int("inflight", k);
    json_int("sessions", ns);
    json_num("pairs_per_s", pairs / ((double)(t1 - t0) / 1e6));
    json_num("cpu_s_per_1k_pairs", (cpu_seconds() - c0) * 1000.0 / pairs);
    json_int("errors", errors);
    json_end();
    for (i = 0; i < ns; i++)
        zookeeper_close(r[i].zh);
    free(r);
    free(sl);
    return errors != 0;
}

static void one_deleted(int rc, const void *data)
{
    struct raw *r = (struct raw *)(uintptr_t)data;

    if (rc != ZOK)
        r->errors++;
    r->done++;
    r->inflight--;
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
    zoo_adelete(r->zh, value, -1, one_deleted, r);
    r->inflight++; /* balanced by one_deleted */
}

int bench_create_latency(const struct opts *o)
{
    struct raw r;
    long n = o->n > 0 ? o->n : 2000;

    if (raw_open(&r, o->hosts) != 0 || raw_dir(&r, RAW_DIR) != 0)
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

/* ---------------- raw-batch ---------------- */

/* One create of a batch: its directory and, once created, its node. */
struct bslot {
    struct raw *r;
    char dir[48];
    char *node;
};

static long b_replies, b_deleted;
static uint64_t b_last;

static void batch_created(int rc, const char *value, const void *data)
{
    struct bslot *sl = (struct bslot *)(uintptr_t)data;

    b_last = now_us();
    if (rc == ZOK)
        sl->node = strdup(value);
    else
        sl->r->errors++;
    b_replies++;
}

static void batch_listed(int rc, const struct String_vector *sv,
                         const void *data)
{
    struct bslot *sl = (struct bslot *)(uintptr_t)data;

    (void)sv;
    b_last = now_us();
    if (rc != ZOK)
        sl->r->errors++;
    b_replies++;
}

static void batch_deleted(int rc, const void *data)
{
    struct bslot *sl = (struct bslot *)(uintptr_t)data;

    if (rc != ZOK)
        sl->r->errors++;
    b_deleted++;
}

/* Runs the session until *counter reaches target, or 60 s pass. */
static int pump_until(struct raw *r, const long *counter, long target)
{
    uint64_t end = now_us() + 60000000;

    while (*counter < target && now_us() < end)
        pump(r, 100);
    return *counter >= target ? 0 : -1;
}

/* raw-batch --creates N --rounds R: per round, N creates
 * (ephemeral-sequential), each under its own directory, sent at once
 * from one session and timed until the last reply; then their deletes
 * (not timed). What a multi-lock of N free locks cannot beat. With
 * --list each create is followed, pipelined, by a listing of its
 * directory: the requests of a free multi-lock's acquire (create and
 * listing per lock) without the lock's logic. */
int bench_raw_batch(const struct opts *o)
{
    long n = o->n > 0 ? o->n : 10, rounds = bench_rounds(o, n), i, round;
    long per = o->list ? 2 : 1; /* replies per directory */
    struct raw r;
    struct bslot *sl;
    lat_t lat;

    if (raw_open(&r, o->hosts) != 0 || raw_dir(&r, RAW_DIR) != 0)
        return 1;
    sl = calloc((size_t)n, sizeof *sl);
    for (i = 0; i < n; i++) {
        sl[i].r = &r;
        snprintf(sl[i].dir, sizeof sl[i].dir, RAW_DIR "/b%ld", i);
        if (raw_dir(&r, sl[i].dir) != 0)
            return 1;
    }
    memset(&lat, 0, sizeof lat);
    note("raw-batch: %ld rounds of %ld creates%s sent at once, one session",
         rounds, n, o->list ? " (each with a listing)" : "");
    /* Round 0 warms up (buffers, the server's caches); not counted. */
    for (round = 0; round <= rounds; round++) {
        uint64_t t0;

        b_replies = b_deleted = 0;
        t0 = now_us();
        for (i = 0; i < n; i++) {
            char path[64];

            snprintf(path, sizeof path, "%s/n-", sl[i].dir);
            if (zoo_acreate(r.zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
                            ZOO_EPHEMERAL_SEQUENTIAL, batch_created,
                            &sl[i]) != ZOK) {
                r.errors++;
                b_replies++;
            }
            if (o->list &&
                zoo_aget_children(r.zh, sl[i].dir, 0, batch_listed,
                                  &sl[i]) != ZOK) {
                r.errors++;
                b_replies++;
            }
        }
        if (pump_until(&r, &b_replies, n * per) != 0) {
            fprintf(stderr, "zklock-bench: raw-batch: no replies\n");
            return 1;
        }
        if (round > 0)
            lat_add(&lat, b_last - t0);
        for (i = 0; i < n; i++) {
            if (sl[i].node == NULL ||
                zoo_adelete(r.zh, sl[i].node, -1, batch_deleted,
                            &sl[i]) != ZOK)
                b_deleted++;
        }
        if (pump_until(&r, &b_deleted, n) != 0) {
            fprintf(stderr, "zklock-bench: raw-batch: deletes unanswered\n");
            return 1;
        }
        for (i = 0; i < n; i++) {
            free(sl[i].node);
            sl[i].node = NULL;
        }
    }
    json_begin(o->list ? "raw-batch-list" : "raw-batch");
    json_int("creates", n);
    json_int("rounds", rounds);
    json_num("create_batch_p50_us", lat_pct(&lat, 50));
    json_num("create_batch_p99_us", lat_pct(&lat, 99));
    json_int("errors", r.errors);
    json_end();
    lat_free(&lat);
    free(sl);
    zookeeper_close(r.zh);
    return r.errors != 0;
}

/* ---------------- children left ---------------- */

struct count {
    long replies, children;
    int errors;
};

static void synced(int rc, const char *value, const void *data)
{
    (void)rc;
    (void)value;
    (void)data;
}

static void children_counted(int rc, const struct String_vector *sv,
                             const void *data)
{
    struct count *k = (struct count *)(uintptr_t)data;

    if (rc == ZOK)
        k->children += sv->count;
    else if (rc != ZNONODE)
        k->errors++;
    k->replies++;
}

long bench_raw_count_children(const char *hosts, char *const *paths, long n)
{
    struct raw r;
    struct count k = {0, 0, 0};
    long i;

    if (raw_open(&r, hosts) != 0)
        return -1;
    for (i = 0; i < n; i++) {
        /* The sync first: this session's read then sees every write
         * the server has acknowledged to anyone (on an ensemble too). */
        zoo_async(r.zh, paths[i], synced, NULL);
        if (zoo_aget_children(r.zh, paths[i], 0, children_counted, &k) !=
            ZOK) {
            k.errors++;
            k.replies++;
        }
    }
    if (pump_until(&r, &k.replies, n) != 0)
        k.errors++;
    zookeeper_close(r.zh);
    return k.errors ? -1 : k.children;
}
