/* libFuzzer target: random sequences of public API calls on random
 * arguments, against a real ZooKeeper server (ZKL_FUZZ_HOSTS).
 *
 * One client lives across inputs; each input drives up to four lock
 * handles on two lock paths (and on paths made of input bytes) through
 * acquire / try-lock / timeout / cancel / release / free / queries /
 * listings, interleaved with loop turns. Checks, beside ASan/UBSan:
 *   - every return code is one the header documents for that call;
 *   - each accepted acquire gets exactly one ACQUIRED or FAILED, each
 *     accepted release exactly one RELEASED, and nothing else arrives
 *     out of turn (RESTORED without SUSPENDED, events on a freed handle);
 *   - zkl_lock_is_held() agrees with the events, read as the header
 *     says: it answers for now, so it may say held while the ACQUIRED
 *     is still queued and not held while the LOST is; then that event
 *     is the one that comes;
 *   - with an allocation failed now and then (zkl_set_allocator), the
 *     calls that allocate answer ZKL_ENOMEM and change nothing, and the
 *     rest holds as above;
 *   - at the end of every input, once all handles are freed, the client
 *     has nothing pending and the lock paths have no node left.
 * Two multi-lock handles over both lock paths (named in either order)
 * and guarded writes (a check op, which writes nothing) on held handles
 * are driven the same way, with the same exactly-once checks. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "zklock.h"
#include "zklock_libevent.h"

#define CHECK(c)                                                            \
    do {                                                                    \
        if (!(c)) {                                                         \
            fprintf(stderr, "fuzz-api:%d: check failed: %s\n", __LINE__,    \
                    #c);                                                    \
            abort();                                                        \
        }                                                                   \
    } while (0)

/* Enough handles for one queue to reach the client's queue view
 * (16 children and more, lib/queue.c); single ops use the first 8. */
#define SLOTS 28
#define CROWD_FROM 8

/* What the model expects of one handle (a lock or a multi-lock). */
struct book {
    /* Accepted acquires / releases not yet answered: after a cancel the
     * handle is idle at once, so a new acquire may be accepted before the
     * cancelled one's callback arrives. */
    int acq_out, rel_out;
    int held, suspended;
    /* Releases answered 0 between a grant and its ACQUIRED: each such
     * ACQUIRED still comes and leaves the book unheld. A count: release
     * and acquire again, both before the callbacks, can make two. */
    int early_release;
    /* The handle said it does not hold while the book says it does: a
     * LOST is queued, and nothing but SUSPENDED or older releases'
     * RELEASED may come before it. */
    int lost_due;
};

/* What the handle says now (held_now) against the book: held only when
 * the book holds or an acquire is out (granted, not yet told); not held
 * while the book holds only when its LOST is on the way. */
static void observe(struct book *b, int held_now)
{
    if (held_now)
        CHECK(b->held || b->acq_out >= 1);
    else if (b->held)
        b->lost_due = 1;
}

/* A release answered 0: the handle held, told or not yet told. */
static void book_release(struct book *b)
{
    CHECK(b->held || b->acq_out >= 1);
    if (!b->held)
        b->early_release++;
    b->held = b->suspended = b->lost_due = 0;
    b->rel_out++;
}

struct slot {
    struct book b;
    zkl_lock_t *lk;
    int auto_release; /* releases as soon as it acquires: a handoff chain */
};

/* A multi-lock over both lock paths. */
struct mslot {
    struct book b;
    zkl_multi_t *m;
    int kept; /* LOST told; its other members are kept till released */
};
#define MSLOTS 2

static struct event_base *base;
static struct mslot mslots[MSLOTS];
static int writes_out;
static zkl_client_t *client;
static struct slot slots[SLOTS];
static char paths[2][64];
static int listing_out;
static size_t listed;

/* The input may fail the Nth allocation from now (0: none). */
static int fail_in;

static int fail_now(void)
{
    return fail_in > 0 && --fail_in == 0;
}

static void *f_malloc(size_t n)
{
    return fail_now() ? NULL : malloc(n);
}

static void *f_calloc(size_t n, size_t size)
{
    return fail_now() ? NULL : calloc(n, size);
}

static void *f_realloc(void *p, size_t n)
{
    return fail_now() ? NULL : realloc(p, n);
}

static const zkl_allocator_t failing = {f_malloc, f_calloc, f_realloc,
                                        free};

/* The events every handle gets, lock or multi-lock, checked against
 * its book; held_now: what the handle says now. */
static void book_event(struct book *b, zkl_lock_event_t ev, int status,
                       int held_now)
{
    CHECK(!b->lost_due || ev == ZKL_LOCK_LOST || ev == ZKL_LOCK_SUSPENDED ||
          ev == ZKL_LOCK_RELEASED);
    switch (ev) {
    case ZKL_LOCK_ACQUIRED:
        CHECK(status == 0 && !b->held);
        if (b->early_release > 0) {
            /* Released before told; a later acquire may be out too. */
            CHECK(b->acq_out >= 1);
            b->acq_out--;
            b->early_release--;
            break;
        }
        /* Only the latest acquire can succeed, and callbacks come in
         * the order of the calls. */
        CHECK(b->acq_out == 1);
        b->acq_out = 0;
        b->held = 1;
        observe(b, held_now);
        break;
    case ZKL_LOCK_FAILED:
        CHECK(b->acq_out >= 1 && status < 0);
        CHECK(status == ZKL_ELOCKED || status == ZKL_ETIMEDOUT ||
              status == ZKL_ECANCELED || status == ZKL_ECLOSED ||
              status == ZKL_ECONNLOSS || status == ZKL_EAUTH ||
              status == ZKL_EZK || status == ZKL_ENOMEM);
        b->acq_out--;
        /* Held already? Only by a later acquire, granted in the same
         * pass but told after this one. */
        CHECK(!held_now || b->held || b->acq_out >= 1);
        break;
    case ZKL_LOCK_SUSPENDED:
        CHECK(b->held && !b->suspended);
        b->suspended = 1;
        break;
    case ZKL_LOCK_RESTORED:
        CHECK(b->held && b->suspended);
        b->suspended = 0;
        break;
    case ZKL_LOCK_LOST:
        CHECK(b->held);
        b->held = b->suspended = b->lost_due = 0;
        observe(b, held_now); /* held again only by a later acquire */
        break;
    case ZKL_LOCK_RELEASED:
        CHECK(b->rel_out >= 1);
        b->rel_out--;
        break;
    default:
        CHECK(0);
    }
}

static void lock_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                    void *arg)
{
    struct slot *s = arg;

    CHECK(s->lk == lk);
    /* A lock's acquire fails with ENOMEM only at the call. */
    CHECK(ev != ZKL_LOCK_FAILED || status != ZKL_ENOMEM);
    book_event(&s->b, ev, status, zkl_lock_is_held(lk));
    if (ev == ZKL_LOCK_ACQUIRED && s->auto_release && s->b.held &&
        !s->b.lost_due) {
        CHECK(zkl_lock_release(lk) == ZKL_OK);
        book_release(&s->b);
    }
}

/* A set's acquire may fail with ENOMEM from the loop: a member's
 * acquire, started there, can be refused memory. */
static void multi_cb(zkl_multi_t *m, zkl_lock_event_t ev, int status,
                     void *arg)
{
    struct mslot *s = arg;

    CHECK(s->m == m);
    book_event(&s->b, ev, status, zkl_multi_is_held(m));
    if (ev == ZKL_LOCK_LOST)
        s->kept = 1;
}

static void write_cb(zkl_client_t *c, int status,
                     const zkl_op_result_t *res, size_t n, void *arg)
{
    (void)arg;
    CHECK(c == client && n == 1);
    CHECK(status == ZKL_OK || status == ZKL_EFENCED ||
          status == ZKL_EWRITE || status == ZKL_ESESSION ||
          status == ZKL_ECLOSED || status == ZKL_ECONNLOSS ||
          status == ZKL_EAUTH);
    CHECK((res != NULL) == (status == ZKL_OK || status == ZKL_EWRITE));
    CHECK(status != ZKL_EWRITE || res[0].status == ZKL_ENONODE);
    CHECK(writes_out > 0);
    writes_out--;
}

/* Multi-lock calls, picked by arg. */
static void multi_op(uint8_t arg)
{
    struct mslot *s = &mslots[arg & 1];
    const char *v[2] = {paths[(arg >> 1) & 1], paths[!((arg >> 1) & 1)]};
    zkl_op_t check = {ZKL_OP_CHECK, paths[0], NULL, 0, 0, -1};
    int rc;

    switch ((arg >> 2) % 6) {
    case 0:
        if (s->m != NULL)
            break;
        rc = zkl_multi_new(&s->m, client, v, NULL, 1 + ((arg >> 5) & 1),
                           multi_cb, s);
        CHECK(rc == ZKL_OK || rc == ZKL_ENOMEM);
        CHECK((rc == ZKL_OK) == (s->m != NULL));
        break;
    case 1: {
        long t = arg & 0x40 ? -1 : arg & 0x80 ? 0 : 50;

        if (s->m == NULL)
            break;
        rc = zkl_multi_acquire(s->m, t);
        if (rc == ZKL_OK) {
            observe(&s->b, 0);
            s->b.acq_out++;
            s->kept = 0;
        } else if (rc == ZKL_EHELD) {
            CHECK(s->b.held || s->b.acq_out);
        } else if (rc != ZKL_ENOMEM) {
            /* Busy: an acquire or release out, or lost, LOST untold. */
            CHECK(rc == ZKL_EBUSY);
            observe(&s->b, zkl_multi_is_held(s->m));
            CHECK(s->b.acq_out || s->b.rel_out || s->b.lost_due);
        }
        break;
    }
    case 2:
        if (s->m == NULL)
            break;
        rc = zkl_multi_cancel(s->m);
        CHECK(rc == ZKL_OK ? s->b.acq_out : rc == ZKL_ENOTPENDING);
        break;
    case 3:
        if (s->m == NULL)
            break;
        rc = zkl_multi_release(s->m);
        if (rc == ZKL_OK) {
            if (s->kept && !s->b.held && !s->b.acq_out)
                s->b.rel_out++; /* after LOST: the members kept */
            else
                book_release(&s->b);
            s->kept = 0;
        } else {
            /* Not held, or its LOST is on its way. */
            CHECK(rc == ZKL_ENOTHELD);
            observe(&s->b, 0);
        }
        break;
    case 4:
        zkl_multi_free(s->m);
        memset(s, 0, sizeof *s);
        break;
    case 5:
        if (s->m == NULL)
            break;
        rc = zkl_multi_write(s->m, &check, 1, write_cb, NULL);
        CHECK(rc == ZKL_OK || rc == ZKL_ENOTHELD || rc == ZKL_ENOMEM ||
              rc == ZKL_ESESSION);
        CHECK(rc != ZKL_OK || zkl_multi_is_held(s->m));
        CHECK(rc != ZKL_ENOTHELD || !zkl_multi_is_held(s->m));
        observe(&s->b, zkl_multi_is_held(s->m));
        if (zkl_multi_is_held(s->m)) { /* held only with every member */
            size_t i;

            for (i = 0; i < zkl_multi_size(s->m); i++)
                CHECK(zkl_lock_is_held(zkl_multi_lock(s->m, i)));
        }
        writes_out += rc == ZKL_OK;
        break;
    }
}

static void list_cb(zkl_client_t *c, int status, const char *const *names,
                    size_t n, void *arg)
{
    (void)names;
    (void)arg;
    CHECK(c == client);
    CHECK(status == ZKL_OK || status == ZKL_ECONNLOSS ||
          status == ZKL_ESESSION || status == ZKL_ECLOSED ||
          status == ZKL_ENOMEM);
    listing_out--;
    listed += n;
}

static void turn(int ms)
{
    struct timeval tv = {0, ms * 1000};

    if (ms <= 0) {
        event_base_loop(base, EVLOOP_NONBLOCK);
        return;
    }
    event_base_loopexit(base, &tv);
    event_base_dispatch(base);
}

/* Runs the loop until done() or ms pass. */
static int run_until(int (*done)(void), int ms)
{
    int i;

    for (i = 0; i < ms / 5 && !done(); i++)
        turn(5);
    return done();
}

static int quiet(void)
{
    int i;

    for (i = 0; i < SLOTS; i++)
        if (slots[i].b.acq_out || slots[i].b.rel_out)
            return 0;
    for (i = 0; i < MSLOTS; i++)
        if (mslots[i].b.acq_out || mslots[i].b.rel_out)
            return 0;
    return listing_out == 0 && writes_out == 0;
}

static int nothing_pending(void)
{
    return zkl_client_pending(client) == 0 && listing_out == 0;
}

static int setup(void)
{
    const char *hosts = getenv("ZKL_FUZZ_HOSTS");
    zkl_options_t *o;
    int i;

    if (hosts == NULL) {
        fprintf(stderr, "fuzz-api: set ZKL_FUZZ_HOSTS to a ZooKeeper "
                        "server (test/zkserver.sh start DIR prints one)\n");
        exit(2);
    }
    base = event_base_new();
    CHECK(zkl_set_allocator(&failing) == ZKL_OK);
    CHECK(zkl_options_new(&o) == ZKL_OK);
    CHECK(zkl_options_set_servers(o, hosts) == ZKL_OK);
    CHECK(zkl_options_set_session_timeout(o, 10000) == ZKL_OK);
    CHECK(zkl_client_new(&client, o) == ZKL_OK);
    zkl_options_free(o);
    CHECK(zkl_libevent_attach(client, base) == ZKL_OK);
    for (i = 0; i < 2; i++)
        snprintf(paths[i], sizeof paths[i], "/zkl-fuzz/%ld/%c",
                 (long)getpid(), 'a' + i);
    for (i = 0; i < 400 && zkl_client_state(client) != ZKL_CONN_CONNECTED;
         i++)
        turn(10);
    CHECK(zkl_client_state(client) == ZKL_CONN_CONNECTED);
    return 0;
}

/* A path from the input: mostly the two lock paths, sometimes bytes. */
static void pick_path(const uint8_t **d, const uint8_t *end, char *out,
                      size_t size)
{
    size_t n;

    if (*d >= end || (**d & 3) != 3) {
        snprintf(out, size, "%s", paths[*d < end ? (**d >> 2) & 1 : 0]);
        if (*d < end)
            (*d)++;
        return;
    }
    (*d)++;
    n = *d < end ? (size_t)(**d % 24) : 0;
    if (*d < end)
        (*d)++;
    if (n > (size_t)(end - *d))
        n = (size_t)(end - *d);
    if (n >= size)
        n = size - 1;
    memcpy(out, *d, n);
    out[n] = '\0';
    *d += n;
}

static void one_op(const uint8_t **d, const uint8_t *end)
{
    uint8_t op = *(*d)++, arg = *d < end ? *(*d)++ : 0;
    struct slot *s = &slots[op >> 5 & 7];
    char path[64], buf[96];
    uint64_t tok;
    int held;
    int rc;

    switch (op % 14) {
    case 0: /* new handle */
        if (s->lk != NULL)
            break;
        pick_path(d, end, path, sizeof path);
        rc = zkl_lock_new(&s->lk, client, path, lock_cb, s);
        CHECK(rc == ZKL_OK || rc == ZKL_EBADPATH || rc == ZKL_ENOMEM);
        CHECK(rc == ZKL_ENOMEM ||
              (rc == ZKL_OK) == (zkl_path_validate(path) == ZKL_OK));
        CHECK((rc == ZKL_OK) == (s->lk != NULL));
        break;
    case 1: { /* acquire: forever, try-lock, or a short timeout */
        long t = arg < 96 ? -1 : arg < 160 ? 0 : (long)(arg - 160);

        if (s->lk == NULL)
            break;
        rc = zkl_lock_acquire(s->lk, t);
        if (rc == ZKL_OK) {
            observe(&s->b, 0);
            s->b.acq_out++;
        } else if (rc == ZKL_EHELD) {
            CHECK(s->b.held || s->b.acq_out); /* maybe granted, not yet told */
        } else if (rc != ZKL_ENOMEM) {
            CHECK(rc == ZKL_EBUSY);
            CHECK(s->b.acq_out || s->b.rel_out);
        }
        break;
    }
    case 2:
        if (s->lk == NULL)
            break;
        rc = zkl_lock_cancel(s->lk);
        CHECK(rc == ZKL_OK ? s->b.acq_out : rc == ZKL_ENOTPENDING);
        break;
    case 3:
        if (s->lk == NULL)
            break;
        rc = zkl_lock_release(s->lk);
        if (rc == ZKL_OK) {
            book_release(&s->b);
        } else {
            CHECK(rc == ZKL_ENOTHELD);
            observe(&s->b, 0);
        }
        break;
    case 4: /* free: silently ends whatever was going on */
        zkl_lock_free(s->lk);
        memset(s, 0, sizeof *s);
        break;
    case 5:
        turn(0);
        break;
    case 6:
        turn(arg % 20);
        break;
    case 7: /* queries */
        if (s->lk == NULL)
            break;
        held = zkl_lock_is_held(s->lk);
        observe(&s->b, held);
        CHECK((zkl_lock_state(s->lk) == ZKL_STATE_HELD) == held);
        rc = zkl_lock_token(s->lk, &tok);
        CHECK(held ? rc == ZKL_OK && tok > 0 : rc == ZKL_ENOTHELD);
        rc = zkl_lock_node_name(s->lk, buf, (size_t)(arg % sizeof buf));
        CHECK(rc == ZKL_OK || rc == ZKL_EINVAL || rc == ZKL_ENOTPENDING);
        CHECK(rc != ZKL_OK || (arg % sizeof buf) > 55);
        break;
    case 8:
        pick_path(d, end, path, sizeof path);
        rc = zkl_contenders(client, path, list_cb, NULL);
        CHECK(rc == ZKL_OK || rc == ZKL_EBADPATH || rc == ZKL_ENOMEM);
        listing_out += rc == ZKL_OK;
        break;
    case 9: {
        zkl_stats_t st;

        CHECK(zkl_client_stats(client, &st, (size_t)(arg % 64)) ==
              ZKL_OK);
        CHECK(zkl_client_stats(client, NULL, sizeof st) == ZKL_EINVAL);
        break;
    }
    case 11: { /* a crowd: the other handles all queue on one path */
        int i;

        for (i = CROWD_FROM; i < SLOTS; i++) {
            struct slot *x = &slots[i];

            if (x->lk == NULL &&
                (rc = zkl_lock_new(&x->lk, client, paths[arg & 1], lock_cb,
                                   x)) != ZKL_OK) {
                CHECK(rc == ZKL_ENOMEM && x->lk == NULL);
                continue;
            }
            x->auto_release = (arg & 0x80) != 0;
            if (!x->b.held && zkl_lock_acquire(x->lk, -1) == ZKL_OK)
                x->b.acq_out++;
        }
        /* Then let a few go, out of order, while they wait. */
        for (i = CROWD_FROM; i < SLOTS; i++)
            if ((arg >> (i % 8)) & 1 && slots[i].b.acq_out)
                zkl_lock_cancel(slots[i].lk);
        break;
    }
    case 12:
        multi_op(arg);
        break;
    case 13: { /* a guarded write; a check op writes nothing */
        zkl_op_t check = {ZKL_OP_CHECK, paths[arg & 1], NULL, 0, 0, -1};

        if (s->lk == NULL)
            break;
        rc = zkl_lock_write(s->lk, &check, 1, write_cb, NULL);
        CHECK(rc == ZKL_OK || rc == ZKL_ENOTHELD || rc == ZKL_ENOMEM ||
              rc == ZKL_ESESSION);
        CHECK(rc != ZKL_ENOTHELD || !zkl_lock_is_held(s->lk));
        observe(&s->b, zkl_lock_is_held(s->lk));
        writes_out += rc == ZKL_OK;
        break;
    }
    case 10: /* a wrong call now and then; or an allocation to fail */
        if (arg & 1) {
            fail_in = 1 + (arg >> 1) % 16;
            break;
        }
        CHECK(zkl_lock_acquire(NULL, -1) == ZKL_EINVAL);
        CHECK(zkl_lock_release(NULL) == ZKL_EINVAL);
        CHECK(zkl_lock_is_held(NULL) == 0);
        CHECK(zkl_strerror(-(int)arg * 8) != NULL);
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *d = data, *end = data + size;
    int i, ops = 0;

    if (client == NULL)
        setup();
    while (d < end && ops++ < 64)
        one_op(&d, end);
    fail_in = 0; /* the checks below must not fail for want of memory */
    /* Let every answer come, then let go of everything. */
    for (i = 0; i < SLOTS; i++)
        if (slots[i].lk != NULL && slots[i].b.acq_out)
            zkl_lock_cancel(slots[i].lk); /* maybe answered already */
    for (i = 0; i < MSLOTS; i++)
        if (mslots[i].m != NULL && mslots[i].b.acq_out)
            zkl_multi_cancel(mslots[i].m);
    CHECK(run_until(quiet, 5000));
    for (i = 0; i < MSLOTS; i++) {
        if (mslots[i].b.held || mslots[i].kept) {
            CHECK(zkl_multi_release(mslots[i].m) == ZKL_OK);
            mslots[i].b.held = mslots[i].kept = 0;
            mslots[i].b.rel_out++;
        }
    }
    for (i = 0; i < SLOTS; i++) {
        if (slots[i].b.held) {
            CHECK(zkl_lock_release(slots[i].lk) == ZKL_OK);
            slots[i].b.held = 0;
            slots[i].b.rel_out++;
        }
    }
    CHECK(run_until(quiet, 5000));
    for (i = 0; i < SLOTS; i++) {
        zkl_lock_free(slots[i].lk);
        memset(&slots[i], 0, sizeof slots[i]);
    }
    for (i = 0; i < MSLOTS; i++) {
        zkl_multi_free(mslots[i].m);
        memset(&mslots[i], 0, sizeof mslots[i]);
    }
    /* No node left behind, whatever the sequence was. */
    CHECK(run_until(nothing_pending, 5000));
    listed = 0;
    for (i = 0; i < 2; i++) {
        CHECK(zkl_contenders(client, paths[i], list_cb, NULL) == ZKL_OK);
        listing_out++;
    }
    CHECK(run_until(nothing_pending, 5000));
    CHECK(listed == 0);
    return 0;
}
