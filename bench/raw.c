/* The server's ceiling with no lock logic: the bare single-threaded
 * ZooKeeper client, pipelined create(ephemeral-sequential) + delete pairs
 * over one or more sessions, and one create at a time for the round-trip
 * cost. The client is driven as well as it can be: names resolved once,
 * every reply that came read per wake-up, new work sent from the
 * completions themselves. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zookeeper/zookeeper.h>

#include "bench.h"
#include "metrics.h"

/* Under the run's tree (run.c), which the run deletes at its end. */
static char raw_dir_path[80];
#define RAW_DIR raw_dir_path

struct raw {
    zhandle_t *zh;
    int connected;
    long started, done, target, inflight;
    lat_t lat;
    uint64_t t_create;
    int errors;
    int listing;     /* create-latency --list: a listing behind each */
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

/* One wake-up of the classic single-threaded driving loop, for ns
 * sessions at once: poll every socket (for at most ms, or less when a
 * client's own timer is due sooner), then let each client read every
 * reply that is there and run their completions, which may send more. */
static void pump_all(struct raw *r, long ns, int ms)
{
    static struct pollfd *pfd;
    static long cap;
    long i, j;

    if (ns > cap) {
        free(pfd);
        pfd = calloc((size_t)ns, sizeof *pfd);
        cap = ns;
    }
    for (i = 0; i < ns; i++) {
        int fd = -1, interest = 0;
        struct timeval tv = {0, 0};
        long due;

        if (zookeeper_interest(r[i].zh, &fd, &interest, &tv) == ZOK) {
            due = (long)tv.tv_sec * 1000L + (long)(tv.tv_usec + 999) / 1000L;
            if (due < ms)
                ms = (int)due;
        }
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
        /* One call reads at most one reply: call until the socket has
         * nothing more (ZNOTHING) or the client fails; the bound only
         * keeps one busy session from starving the others. */
        for (j = 0; j < 65536; j++) {
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
    if (bench_tls_ca != NULL) {
#ifdef HAVE_OPENSSL_H
        /* The C client's one string: "CA,CERT,KEY" (main() refused a
         * ',' in a name, as zkl_options_set_tls does). */
        char cert[3 * 4096 + 3];

        snprintf(cert, sizeof cert, "%s,%s,%s", bench_tls_ca,
                 bench_tls_cert, bench_tls_key);
        r->zh = zookeeper_init_ssl(hosts, cert, raw_watcher, 10000, NULL, r,
                                   0);
#else
        /* main() refuses --tls-* in a build without TLS. */
        fprintf(stderr, "zklock-bench: no TLS in this build\n");
        return -1;
#endif
    } else {
        r->zh = zookeeper_init(hosts, raw_watcher, 10000, NULL, r, 0);
    }
    /* By default the client resolves the server list again on every
     * zookeeper_interest(): a getaddrinfo() (netlink socket, /etc/hosts)
     * per session per wake-up, more than the requests themselves cost.
     * zklock turns it off too (lib/client.c, open_session). */
    if (r->zh != NULL)
        zoo_set_servers_resolution_delay(r->zh, -1);
    while (r->zh != NULL && !r->connected && now_us() < end)
        pump(r, 10);
    if (!r->connected) {
        fprintf(stderr, "zklock-bench: cannot connect to %s%s\n", hosts,
                bench_tls_ca != NULL ? " over TLS" : "");
        return -1;
    }
    bench_run_touched();
    return 0;
}

static void dir_done(int rc, const char *v, const void *d)
{
    (void)v;
    *(int *)(uintptr_t)d = rc == ZOK || rc == ZNODEEXISTS ? 1 : -1;
}

/* Creates the n directories dirs[0], dirs[stride], ... (persistent; an
 * existing one will do), pipelined from one session. */
static int raw_dirs(struct raw *r, const char *dirs, size_t stride, long n)
{
    int *done = calloc((size_t)(n > 0 ? n : 1), sizeof *done);
    uint64_t end = now_us() + 30000000;
    long i, left = n;

    if (done == NULL)
        return -1;
    for (i = 0; i < n; i++)
        if (zoo_acreate(r->zh, dirs + (size_t)i * stride, NULL, -1,
                        &ZOO_OPEN_ACL_UNSAFE, 0, dir_done,
                        &done[i]) != ZOK)
            done[i] = -1;
    while (left > 0 && now_us() < end) {
        for (left = 0, i = 0; i < n; i++)
            left += done[i] == 0;
        if (left > 0)
            pump(r, 10);
    }
    for (i = 0; i < n; i++) {
        if (done[i] != 1) {
            fprintf(stderr, "zklock-bench: cannot create %s\n",
                    dirs + (size_t)i * stride);
            free(done);
            return -1;
        }
    }
    free(done);
    return 0;
}

/* The run's raw directory, RAW_DIR: bench_run_root()/raw, with its
 * parents. */
static int raw_base(struct raw *r)
{
    char top[96];

    snprintf(top, sizeof top, "%s", bench_run_root());
    *strrchr(top, '/') = '\0';
    snprintf(raw_dir_path, sizeof raw_dir_path, "%s/raw", bench_run_root());
    return raw_dirs(r, top, 0, 1) != 0 ||
                   raw_dirs(r, bench_run_root(), 0, 1) != 0 ||
                   raw_dirs(r, raw_dir_path, 0, 1) != 0
               ? -1
               : 0;
}

/* One pair in flight: its session and, with --list, its own directory
 * (as each lock has its own path). A slot's next pair starts from the
 * completion of its delete, as a lock's next acquire starts from its
 * release's callback: no scan of the slots, no wait for the rest of the
 * wake-up. */
struct pairs {
    long warm;      /* pairs done before the clock starts */
    long target;    /* pairs timed, after the warm-up */
    long limit;     /* pairs to start in all */
    long started, done, errors;
    int list, timed; /* timed: 1 while the clock runs, 2 once stopped */
    uint64_t t0, t1, last_reply;
    double c0, c1;
    struct slot **idle; /* slots whose start failed: retried by the loop */
    long nidle;
};

struct slot {
    struct raw *r;
    struct pairs *p;
    char dir[112];
    char path[116]; /* dir "/p-" */
};

static void slot_next(struct slot *sl);

static void pair_done(struct slot *sl, int failed)
{
    struct pairs *p = sl->p;

    if (failed)
        p->errors++;
    p->done++;
    p->last_reply = now_us();
    if (p->done == p->warm) {
        p->timed = 1;
        p->t0 = p->last_reply;
        p->c0 = cpu_seconds();
    } else if (p->done == p->warm + p->target) {
        p->timed = 2;
        p->t1 = p->last_reply;
        p->c1 = cpu_seconds();
        p->limit = p->started; /* the rest only drains */
    }
    slot_next(sl);
}

static void pair_deleted(int rc, const void *data)
{
    pair_done((struct slot *)(uintptr_t)data, rc != ZOK);
}

static void pair_listed(int rc, const struct String_vector *sv,
                        const void *data)
{
    struct slot *sl = (struct slot *)(uintptr_t)data;

    (void)sv;
    if (rc != ZOK)
        sl->p->errors++;
}

static void pair_created(int rc, const char *value, const void *data)
{
    struct slot *sl = (struct slot *)(uintptr_t)data;

    if (rc != ZOK) {
        pair_done(sl, 1);
        return;
    }
    if (zoo_adelete(sl->r->zh, value, -1, pair_deleted, sl) != ZOK)
        pair_done(sl, 1); /* the node goes with the session */
}

/* Sends the slot's create (and, with --list, the listing behind it).
 * Returns -1 when the client refused the create. */
static int slot_start(struct slot *sl)
{
    struct pairs *p = sl->p;

    if (zoo_acreate(sl->r->zh, sl->path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
                    ZOO_EPHEMERAL_SEQUENTIAL, pair_created, sl) != ZOK)
        return -1;
    p->started++;
    if (p->list && zoo_aget_children(sl->r->zh, sl->dir, 0, pair_listed,
                                     sl) != ZOK)
        p->errors++;
    return 0;
}

/* The slot is free: its next pair, if any are left to start. */
static void slot_next(struct slot *sl)
{
    struct pairs *p = sl->p;

    if (p->started < p->limit && slot_start(sl) != 0)
        p->idle[p->nidle++] = sl;
}

/* --pairs N create+delete pairs, --inflight K in flight in all, spread
 * over --sessions S sessions (K/S each). With --list each create is
 * followed, pipelined, by a listing of the directory: a lock cycle's
 * requests without the lock's logic.
 *
 * Timed as throughput times zklock: in steady state. K pairs first warm
 * up (the server's caches and JIT, the sockets' buffers) and fill the
 * pipe; the clock then runs over the next N pairs, with K in flight all
 * along; what is still in flight when the N-th is answered drains after
 * the clock stops (answered, and its errors counted, all the same). */
int bench_raw(const struct opts *o)
{
    long pairs = o->n > 0 ? o->n : 20000,
         k = o->inflight > 0 ? o->inflight : 1000,
         ns = o->sessions > 0 ? o->sessions : 1, i, timed;
    struct raw *r = calloc((size_t)ns, sizeof *r);
    struct slot *sl = calloc((size_t)k, sizeof *sl);
    struct pairs p;
    uint64_t now;

    memset(&p, 0, sizeof p);
    p.warm = k;
    p.target = pairs;
    p.limit = p.warm + pairs + k - 1;
    p.list = o->list;
    p.idle = calloc((size_t)k, sizeof *p.idle);
    if (r == NULL || sl == NULL || p.idle == NULL)
        return 1;
    for (i = 0; i < ns; i++)
        if (raw_open(&r[i], o->hosts) != 0)
            return 1;
    if (raw_base(&r[0]) != 0)
        return 1;
    for (i = 0; i < k; i++) {
        sl[i].r = &r[i % ns];
        sl[i].p = &p;
        if (o->list)
            snprintf(sl[i].dir, sizeof sl[i].dir, "%s/d%ld", RAW_DIR, i);
        else
            snprintf(sl[i].dir, sizeof sl[i].dir, "%s", RAW_DIR);
        snprintf(sl[i].path, sizeof sl[i].path, "%s/p-", sl[i].dir);
    }
    if (o->list && raw_dirs(&r[0], sl[0].dir, sizeof sl[0], k) != 0)
        return 1;
    note("raw: %ld create+%sdelete pairs, %ld in flight over %ld sessions "
         "(after %ld to warm up)",
         pairs, o->list ? "list+" : "", k, ns, p.warm);
    p.last_reply = now_us();
    for (i = 0; i < k; i++)
        slot_next(&sl[i]);
    while (p.timed < 2 || p.done < p.started) {
        pump_all(r, ns, 100);
        /* Slots the client refused (a lost connection) try again. */
        while (p.nidle > 0 && p.started < p.limit &&
               slot_start(p.idle[p.nidle - 1]) == 0)
            p.nidle--;
        if (now_us() - p.last_reply > 60000000) {
            fprintf(stderr, "zklock-bench: raw: no reply for 60 s\n");
            break;
        }
    }
    /* Timed pairs never answered count as errors. */
    now = now_us();
    if (p.timed == 0) {
        p.t0 = now;
        p.c0 = cpu_seconds();
    }
    if (p.timed < 2) {
        p.t1 = now;
        p.c1 = cpu_seconds();
    }
    timed = p.done - p.warm;
    timed = timed < 0 ? 0 : timed > pairs ? pairs : timed;
    p.errors += pairs - timed;
    json_begin(o->list ? "raw-list" : "raw");
    json_int("pairs", pairs);
    json_int("inflight", k);
    json_int("sessions", ns);
    json_num("pairs_per_s",
             p.t1 > p.t0 ? timed / ((double)(p.t1 - p.t0) / 1e6) : 0);
    json_num("cpu_s_per_1k_pairs", (p.c1 - p.c0) * 1000.0 / pairs);
    json_int("errors", p.errors);
    json_end();
    for (i = 0; i < ns; i++)
        zookeeper_close(r[i].zh);
    free(r);
    free(sl);
    free(p.idle);
    return p.errors != 0;
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

    if (!r->listing)
        lat_add(&r->lat, now_us() - r->t_create);
    if (rc != ZOK) {
        r->errors++;
        r->done++;
        return;
    }
    zoo_adelete(r->zh, value, -1, one_deleted, r);
    r->inflight++; /* balanced by one_deleted */
}

/* The listing behind a create: the create's time is until its answer
 * (the server answers a session in order, so it comes after the
 * create's). */
static void one_listed(int rc, const struct String_vector *v,
                       const void *data)
{
    struct raw *r = (struct raw *)(uintptr_t)data;

    (void)v;
    lat_add(&r->lat, now_us() - r->t_create);
    if (rc != ZOK)
        r->errors++;
}

int bench_create_latency(const struct opts *o)
{
    struct raw r;
    char node[112];
    long n = o->n > 0 ? o->n : 2000;

    if (raw_open(&r, o->hosts) != 0 || raw_base(&r) != 0)
        return 1;
    snprintf(node, sizeof node, "%s/l-", RAW_DIR);
    r.listing = o->list;
    note("create-latency: %ld creates%s, one at a time", n,
         o->list ? " with a listing pipelined behind each" : "");
    while (r.started < n) {
        long want = r.done;

        /* --gap-ms: a pause between creates, as between requests that
         * do not come back to back (a server that sat idle answers
         * slower: bench/nginx compares its requests with this). */
        if (o->every > 0 && r.started > 0) {
            uint64_t until = now_us() + (uint64_t)o->every * 1000;

            while (now_us() < until)
                pump(&r, (int)((until - now_us()) / 1000) + 1);
        }

        r.t_create = now_us();
        zoo_acreate(r.zh, node, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
                    ZOO_EPHEMERAL_SEQUENTIAL, one_created, &r);
        /* (a lock's acquire: the create and the listing that says
         * whether a node is ahead of it) */
        if (r.listing)
            zoo_aget_children(r.zh, RAW_DIR, 0, one_listed, &r);
        r.started++;
        while (r.done == want)
            pump(&r, 100);
    }
    json_begin(o->list ? "create-list-latency" : "create-latency");
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
    char dir[112];
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

    if (raw_open(&r, o->hosts) != 0 || raw_base(&r) != 0)
        return 1;
    sl = calloc((size_t)n, sizeof *sl);
    for (i = 0; i < n; i++) {
        sl[i].r = &r;
        snprintf(sl[i].dir, sizeof sl[i].dir, "%s/b%ld", RAW_DIR, i);
    }
    if (raw_dirs(&r, sl[0].dir, sizeof sl[0], n) != 0)
        return 1;
    memset(&lat, 0, sizeof lat);
    note("raw-batch: %ld rounds of %ld creates%s sent at once, one session",
         rounds, n, o->list ? " (each with a listing)" : "");
    /* Round 0 warms up (buffers, the server's caches); not counted. */
    for (round = 0; round <= rounds; round++) {
        uint64_t t0;

        b_replies = b_deleted = 0;
        t0 = now_us();
        for (i = 0; i < n; i++) {
            char path[120];

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

/* ---------------- deleting a tree ---------------- */

/* One pass over a tree: every path listed (breadth first, pipelined),
 * then deleted in the reverse order, so each node's children go before
 * it. One session's requests are applied in the order sent, so the
 * deletes need not wait for each other. */
struct tree {
    struct raw r;
    char **paths;
    long n, cap, replies, nonempty, deleted;
    int errors;
};

#define TREE_WINDOW 1000 /* requests in flight */

static struct tree *tr;

static int tree_add(const char *parent, const char *name)
{
    size_t len = strlen(parent) + strlen(name) + 2;
    char *p;

    if (tr->n == tr->cap) {
        long cap = tr->cap ? 2 * tr->cap : 1024;
        char **t = realloc(tr->paths, (size_t)cap * sizeof *t);

        if (t == NULL)
            return -1;
        tr->paths = t;
        tr->cap = cap;
    }
    if ((p = malloc(len)) == NULL)
        return -1;
    if (name[0] == '\0')
        snprintf(p, len, "%s", parent);
    else
        snprintf(p, len, "%s/%s", parent, name);
    tr->paths[tr->n++] = p;
    return 0;
}

static void tree_listed(int rc, const struct String_vector *sv,
                        const void *data)
{
    long i = (long)(intptr_t)data;
    int32_t k;

    tr->replies++;
    if (rc == ZNONODE)
        return; /* gone already: so are its children */
    if (rc != ZOK) {
        fprintf(stderr, "zklock-bench: listing %s: %s\n", tr->paths[i],
                zerror(rc));
        tr->errors++;
        return;
    }
    for (k = 0; k < sv->count; k++)
        if (tree_add(tr->paths[i], sv->data[k]) != 0)
            tr->errors++;
}

static void tree_deleted(int rc, const void *data)
{
    long i = (long)(intptr_t)data;

    tr->replies++;
    if (rc == ZOK)
        tr->deleted++;
    else if (rc == ZNOTEMPTY)
        tr->nonempty++; /* a node came in behind the listing */
    else if (rc != ZOK && rc != ZNONODE) {
        fprintf(stderr, "zklock-bench: deleting %s: %s\n",
                i < tr->n ? tr->paths[i] : "the parent", zerror(rc));
        tr->errors++;
    }
}

/* Sends request i (listing or delete) of n, keeping at most
 * TREE_WINDOW in flight; returns -1 when the replies stop. */
static int tree_pass(int list)
{
    long next = 0, sent = 0;
    uint64_t last = now_us();

    tr->replies = 0;
    /* While listing, n grows with every reply. */
    while (next < tr->n || tr->replies < sent) {
        long before = tr->replies;

        while (next < tr->n && sent - tr->replies < TREE_WINDOW) {
            long i = list ? next : tr->n - 1 - next;
            int rc = list ? zoo_aget_children(tr->r.zh, tr->paths[i], 0,
                                              tree_listed,
                                              (void *)(intptr_t)i)
                          : zoo_adelete(tr->r.zh, tr->paths[i], -1,
                                        tree_deleted, (void *)(intptr_t)i);

            if (rc != ZOK) {
                fprintf(stderr, "zklock-bench: %s %s: %s\n",
                        list ? "listing" : "deleting", tr->paths[i],
                        zerror(rc));
                return -1;
            }
            next++;
            sent++;
        }
        pump(&tr->r, 100);
        if (tr->replies != before)
            last = now_us();
        else if (now_us() - last > 30000000) {
            fprintf(stderr, "zklock-bench: no reply for 30 s\n");
            return -1;
        }
    }
    return 0;
}

static void tree_clear(void)
{
    long i;

    for (i = 0; i < tr->n; i++)
        free(tr->paths[i]);
    tr->n = tr->nonempty = 0;
    tr->errors = 0;
}

long bench_raw_delete_tree(const char *hosts, const char *path, int parent)
{
    struct tree t;
    int pass, rc = -1;

    memset(&t, 0, sizeof t);
    tr = &t;
    if (raw_open(&t.r, hosts) != 0)
        return -1;
    /* A node a late request created behind the listing makes its
     * parent's delete fail: list and delete again. */
    for (pass = 0; pass < 5 && rc != 0; pass++) {
        tree_clear();
        if (tree_add(path, "") != 0 || tree_pass(1) != 0 ||
            tree_pass(0) != 0 || t.errors != 0)
            break;
        if (t.nonempty == 0)
            rc = 0;
    }
    tree_clear();
    free(t.paths);
    /* The parent, once no other run uses it. */
    if (rc == 0 && parent && strrchr(path, '/') != path) {
        char *up = strdup(path);

        *strrchr(up, '/') = '\0';
        t.replies = 0;
        t.paths = NULL; /* tree_deleted names no path of it */
        if (zoo_adelete(t.r.zh, up, -1, tree_deleted, NULL) != ZOK ||
            pump_until(&t.r, &t.replies, 1) != 0 || t.errors != 0)
            rc = -1;
        free(up);
    }
    zookeeper_close(t.r.zh);
    tr = NULL;
    return rc == 0 ? t.deleted : -1;
}
