/* What each run of test/zkalloc plays: one recipe, on one client, under
 * a root of its own, so that nothing a crashed or unclosed earlier run
 * left (its session lives until it expires) stands in its way. Each play
 * goes as far as the answers let it: a call refused, or answered with
 * an error, ends that thread of the play, and every accepted call must
 * be answered once (zkalloc-run.c checks). */
#include "zkalloc.h"

static char buf[8][512];

static const char *under(const char *root, const char *leaf)
{
    static int i;
    char *b = buf[i++ % 8];

    snprintf(b, sizeof buf[0], "%s/%s", root, leaf);
    return b;
}

/* The steps every play is made of; each goes only as far as the
 * answers let it. */
static void take(za_h_t *h)
{
    if (za_acquire(h, ZA_ACQUIRE_MS))
        za_wait_acquire(h);
}

static void let_go(za_h_t *h)
{
    if (h->held && za_release(h))
        za_wait_release(h);
}

/* a lets go; b, whose acquire waited behind it, holds, then lets go. */
static void hand_over(za_h_t *a, za_h_t *b)
{
    let_go(a);
    if (b->acquiring)
        za_wait_acquire(b);
    let_go(b);
}

/* Two handles on one mutex: A holds, B queues behind it, the queue is
 * listed with each node's data, and B is handed the lock when A lets
 * go. */
static void play_mutex(const char *root)
{
    static za_h_t a, b;
    za_h_t *all[] = {&a, &b};
    zkl_client_t *c = za_client();
    const char *p = under(root, "m");

    if (c == NULL)
        return;
    za_made(&a, "A", zkl_lock_new(&a.lk, c, p, za_lock_cb, &a));
    za_made(&b, "B", zkl_lock_new(&b.lk, c, p, za_lock_cb, &b));
    /* Data of lengths no other read has, so that a failure can be aimed
     * at the reads of one node (zkalloc.c's own_data_lost). */
    ZA_CHECK(zkl_lock_set_data(a.lk, "zkalloc-holder", 14) == ZKL_OK);
    ZA_CHECK(zkl_lock_set_data(b.lk, "zkalloc-the-waiter", 18) == ZKL_OK);
    take(&a);
    if (a.held && za_acquire(&b, ZA_ACQUIRE_MS))
        za_wait_queued(&b, 3000);
    if (za_list(&a, c, p))
        za_wait_list(&a);
    hand_over(&a, &b);
    za_finish(all, 2);
}

/* A read/write pair: the write side holds, the read side downgrades
 * into its place, the write side lets go, and a second reader shares
 * the lock with the downgraded one. */
static za_h_t rw_r, rw_w;

static void rw_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status, void *arg)
{
    (void)arg;
    za_lock_cb(lk, ev, status, lk == rw_r.lk ? &rw_r : &rw_w);
}

static void play_rwlock(const char *root)
{
    static za_h_t r2;
    za_h_t *all[] = {&rw_w, &rw_r, &r2};
    zkl_client_t *c = za_client();
    const char *p = under(root, "rw");

    if (c == NULL)
        return;
    rw_r.name = "R";
    za_made(&rw_w, "W",
            zkl_rwlock_new(&rw_r.lk, &rw_w.lk, c, p, rw_cb, NULL));
    za_made(&r2, "R2",
            zkl_lock_new_kind(&r2.lk, c, p, ZKL_KIND_READ, za_lock_cb, &r2));
    take(&rw_w);
    if (rw_w.held)
        take(&rw_r); /* the downgrade */
    let_go(&rw_w);
    if (!rw_w.held)
        take(&r2);
    let_go(&r2);
    let_go(&rw_r);
    za_finish(all, 3);
}

/* Two leases of a one-lease semaphore whose limit is in a count node
 * (Curator's SharedCount; made by the first acquire): the second waits
 * for the first. */
static void play_semaphore(const char *root)
{
    static za_h_t a, b;
    za_h_t *all[] = {&a, &b};
    zkl_client_t *c = za_client();
    const char *p = under(root, "sem"), *count = under(root, "count");

    if (c == NULL)
        return;
    za_made(&a, "L1", zkl_lease_new(&a.lk, c, p, 1, za_lock_cb, &a));
    za_made(&b, "L2", zkl_lease_new(&b.lk, c, p, 1, za_lock_cb, &b));
    ZA_CHECK(zkl_lease_set_count(a.lk, count) == ZKL_OK);
    ZA_CHECK(zkl_lease_set_count(b.lk, count) == ZKL_OK);
    take(&a);
    if (a.held && za_acquire(&b, ZA_ACQUIRE_MS))
        t_run_for(200); /* a lease has no QUEUED: let it wait a while */
    hand_over(&a, &b);
    za_finish(all, 2);
}

/* Two leases of a one-lease semaphore with a fixed limit: the first
 * writes the limit record into the path node, the second reads it (and
 * waits for the first). */
static void play_lease(const char *root)
{
    static za_h_t a, b;
    za_h_t *all[] = {&a, &b};
    zkl_client_t *c = za_client();
    const char *p = under(root, "lease");

    if (c == NULL)
        return;
    za_made(&a, "L1", zkl_lease_new(&a.lk, c, p, 1, za_lock_cb, &a));
    za_made(&b, "L2", zkl_lease_new(&b.lk, c, p, 1, za_lock_cb, &b));
    take(&a);
    if (a.held && za_acquire(&b, ZA_ACQUIRE_MS))
        t_run_for(200); /* a lease has no QUEUED: let it wait a while */
    hand_over(&a, &b);
    za_finish(all, 2);
}

/* A multi-lock over three paths, against a mutex on the middle one that
 * holds first, so that the set waits holding a prefix. */
static void play_multi(const char *root)
{
    static za_h_t m, x;
    za_h_t *all[] = {&m, &x};
    zkl_client_t *c = za_client();
    const char *paths[3];

    if (c == NULL)
        return;
    paths[0] = under(root, "a");
    paths[1] = under(root, "b");
    paths[2] = under(root, "c");
    za_made(&x, "X", zkl_lock_new(&x.lk, c, paths[1], za_lock_cb, &x));
    za_made(&m, "M",
            zkl_multi_new(&m.m, c, paths, NULL, 3, za_multi_cb, &m));
    take(&x);
    if (za_acquire(&m, ZA_ACQUIRE_MS) && x.held)
        t_run_for(200); /* the set waits behind X on b, holding a */
    hand_over(&x, &m);
    za_finish(all, 2);
}

/* A guarded write while the mutex holds: an ephemeral record (gone with
 * the session), then the release. */
static void play_guarded(const char *root)
{
    static za_h_t a;
    za_h_t *all[] = {&a};
    zkl_client_t *c = za_client();
    const char *p = under(root, "g");
    zkl_op_t op = {ZKL_OP_CREATE, NULL, "v", 1, ZKL_CREATE_EPHEMERAL, -1};

    if (c == NULL)
        return;
    op.path = under(root, "rec");
    za_made(&a, "A", zkl_lock_new(&a.lk, c, p, za_lock_cb, &a));
    take(&a);
    if (a.held && za_write(&a, &op, 1))
        za_wait_write(&a);
    let_go(&a);
    za_finish(all, 1);
}

/* Two participants of a leader latch: the first leads, the second
 * follows, and leads once the first leaves. */
static void play_latch(const char *root)
{
    static za_h_t a, b;
    za_h_t *all[] = {&a, &b};
    zkl_client_t *c = za_client();
    const char *p = under(root, "latch");

    if (c == NULL)
        return;
    za_made(&a, "P1", zkl_latch_new(&a.lk, c, p, "one", za_lock_cb, &a));
    za_made(&b, "P2", zkl_latch_new(&b.lk, c, p, "two", za_lock_cb, &b));
    take(&a);
    if (a.held && za_acquire(&b, ZA_ACQUIRE_MS))
        za_wait_queued(&b, 3000);
    hand_over(&a, &b);
    za_finish(all, 2);
}

const za_recipe_t za_recipes[] = {
    {"mutex", play_mutex, 0},       {"rwlock", play_rwlock, 0},
    {"semaphore", play_semaphore, 0}, {"multi", play_multi, 0},
    {"guarded", play_guarded, 1},   {"latch", play_latch, 0},
    {"lease", play_lease, 0},
};
const size_t za_nrecipes = sizeof za_recipes / sizeof za_recipes[0];
