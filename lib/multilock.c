/* Multi-locks: a set of locks taken and given back together, without
 * deadlock. Owns each zkl_multi_t (the user frees it) and its member lock
 * handles (ordinary handles on c->locks, whose callbacks come here).
 *
 * Why it cannot deadlock: members are taken in one order, the paths by
 * strcmp(), the same for every caller; and an acquire waits for a member
 * only while it holds every member before it and none after it. Then
 * whoever waits for a lock holds only locks that sort before it, so no
 * cycle of waiters can form (the classic argument for ordered locking).
 *
 * Why it is fast: it does not take the members one by one. It starts the
 * acquires of all the members it does not hold at once (their creates go
 * out pipelined), so a free set costs one round trip. Only when the first
 * member it does not hold has to wait (its ZKL_LOCK_QUEUED) does it give
 * back the members after that one, which it may have been granted
 * meanwhile: holding them while waiting would break the rule above. Once
 * the waiting member is granted, it starts all the rest at once again.
 * Holding a later member for the moment before the earlier one's answer
 * is harmless: that answer does not wait for anybody.
 *
 * Member events record what happened to the member (its state below, the
 * set's failure); step() alone decides what to send next. A cancelled
 * member acquire's own events are still queued when it is cancelled (a
 * handle's callbacks come in call order); they are skipped ("stale"). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

enum mst {
    MS_IDLE,      /* no acquire, no hold (as far as events told) */
    MS_PENDING,   /* acquire started, not granted, not told to wait */
    MS_QUEUED,    /* acquire told it must wait (ZKL_LOCK_QUEUED) */
    MS_HELD,
    MS_RELEASING, /* release sent; its RELEASED is due */
    MS_LOSING     /* its LOST is due (a release came too late) */
};

/* MG_LOST: a member's hold ended and the set was told LOST; the other
 * members are kept until the user releases, acquires anew or frees: the
 * user may still be at work under them, and a lock that is still ours
 * is not given up behind their back. */
enum mgoal { MG_IDLE, MG_ACQUIRE, MG_HOLD, MG_RELEASE, MG_LOST };

static void step(zkl_multi_t *m);

/* Every change of goal goes through here: the client keeps count of the
 * ops with a deadline, whose clock it must watch (multi_expire). */
static void set_goal(zkl_multi_t *m, int goal)
{
    int was = m->goal == MG_ACQUIRE && m->deadline != 0;
    int is = goal == MG_ACQUIRE && m->deadline != 0;

    if (m->c != NULL && is != was)
        zkl__ops_timed(m->c, is - was);
    m->goal = (uint8_t)goal;
}

/* ---------------------------------------------------------------- */
/* Members                                                           */
/* ---------------------------------------------------------------- */

/* The member's acquire with what is left of the set's deadline. */
static int start(zkl_multi_t *m, struct zkl__member *mb)
{
    long t = -1;
    int rc;

    if (m->trylock) {
        t = 0;
    } else if (m->deadline != 0) {
        uint64_t now = zkl__now_ms();

        if (now >= m->deadline)
            return ZKL_ETIMEDOUT;
        t = (long)(m->deadline - now);
    }
    if ((rc = zkl_lock_acquire(mb->lk, t)) == ZKL_OK)
        mb->st = MS_PENDING;
    return rc;
}

/* Gives a member back: cancels its acquire or releases its hold. When
 * neither is possible, its ending is already queued (granted, failed or
 * lost, not yet told): that event moves it on. */
static void give_back(struct zkl__member *mb)
{
    switch ((enum mst)mb->st) {
    case MS_PENDING:
    case MS_QUEUED:
        if (zkl_lock_cancel(mb->lk) == ZKL_OK) {
            mb->stale++;
            mb->st = MS_IDLE;
        } else if (zkl_lock_release(mb->lk) == ZKL_OK) {
            mb->st = MS_RELEASING; /* its ACQUIRED was still queued */
        } else if (mb->lk->c != NULL && !mb->lk->c->closing) {
            /* Over already, not yet told: its FAILED (or ACQUIRED and
             * LOST) is queued. Those events are the old acquire's. */
            mb->stale++;
            mb->st = MS_IDLE;
        }
        break;
    case MS_HELD:
        mb->st = zkl_lock_release(mb->lk) == ZKL_OK ? MS_RELEASING
                                                      : MS_LOSING;
        break;
    default:
        break;
    }
}

static void queue(zkl_multi_t *m, int ev, int status)
{
    if (zkl__evq_push(m->c, &m->op, ev, status) == ZKL_OK &&
        ev == ZKL_LOCK_LOST)
        m->lost_untold = 1;
}

/* The set's acquire ends without the set. */
static void fail(zkl_multi_t *m, int status)
{
    size_t i;

    for (i = 0; i < m->n; i++)
        give_back(&m->m[i]);
    set_goal(m, MG_IDLE);
    queue(m, ZKL_LOCK_FAILED, status);
}

static int any_suspended(const zkl_multi_t *m)
{
    size_t i;

    for (i = 0; i < m->n; i++)
        if (m->m[i].st == MS_HELD && m->m[i].suspended)
            return 1;
    return 0;
}

static void member_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                      void *arg)
{
    struct zkl__member *mb = arg;
    zkl_multi_t *m = mb->m;

    (void)lk;
    /* An acquire given up on ends with its FAILED, or, when it was
     * granted before it could be cancelled, with its LOST. */
    if (mb->stale > 0) {
        if (ev == ZKL_LOCK_FAILED || ev == ZKL_LOCK_LOST)
            mb->stale--;
        return;
    }
    switch (ev) {
    case ZKL_LOCK_ACQUIRED:
        if (mb->st == MS_PENDING || mb->st == MS_QUEUED) {
            mb->st = MS_HELD;
            mb->suspended = 0;
        }
        break;
    case ZKL_LOCK_QUEUED:
        if (mb->st == MS_PENDING)
            mb->st = MS_QUEUED;
        break;
    case ZKL_LOCK_FAILED:
        mb->st = MS_IDLE;
        if (m->goal == MG_ACQUIRE)
            fail(m, status);
        break;
    case ZKL_LOCK_LOST:
        mb->st = MS_IDLE;
        if (m->goal == MG_HOLD) {
            set_goal(m, MG_LOST);
            queue(m, ZKL_LOCK_LOST, status);
        } else if (m->goal == MG_RELEASE && m->status == ZKL_OK) {
            m->status = status;
        }
        /* While acquiring, step() takes it again, in order. */
        break;
    case ZKL_LOCK_RELEASED:
        mb->st = MS_IDLE;
        if (m->goal == MG_RELEASE && m->status == ZKL_OK)
            m->status = status;
        break;
    case ZKL_LOCK_SUSPENDED:
    case ZKL_LOCK_RESTORED:
        mb->suspended = ev == ZKL_LOCK_SUSPENDED;
        if (m->goal == MG_HOLD && m->suspended != any_suspended(m)) {
            m->suspended = (uint8_t)!m->suspended;
            queue(m, m->suspended ? ZKL_LOCK_SUSPENDED : ZKL_LOCK_RESTORED,
                  m->suspended ? ZKL_ESUSPENDED : ZKL_OK);
        }
        break;
    case ZKL_LOCK_REVOKE_REQUESTED:
        break;
    }
    step(m);
}

/* ---------------------------------------------------------------- */
/* The one place that decides                                        */
/* ---------------------------------------------------------------- */

static void step_acquire(zkl_multi_t *m)
{
    size_t k, j;
    int rc;

    for (k = 0; k < m->n && m->m[k].st == MS_HELD; k++)
        ;
    if (k == m->n) {
        set_goal(m, MG_HOLD);
        m->suspended = (uint8_t)any_suspended(m);
        queue(m, ZKL_LOCK_ACQUIRED, ZKL_OK);
        if (m->suspended)
            queue(m, ZKL_LOCK_SUSPENDED, ZKL_ESUSPENDED);
        return;
    }
    if (m->m[k].st == MS_QUEUED) {
        /* Wait at k holding only what comes before it. */
        for (j = k + 1; j < m->n; j++)
            give_back(&m->m[j]);
        return;
    }
    /* Nothing waits yet: start every member from k on that is free to
     * start, all at once. Members still being given back start at a
     * later step, when their RELEASED has come. */
    for (j = k; j < m->n; j++) {
        if (m->m[j].st != MS_IDLE)
            continue;
        if ((rc = start(m, &m->m[j])) != ZKL_OK) {
            fail(m, rc == ZKL_EBUSY ? ZKL_EZK : rc);
            return;
        }
    }
}

static void step(zkl_multi_t *m)
{
    size_t i;

    if (m->c == NULL || m->c->closing)
        return;
    switch ((enum mgoal)m->goal) {
    case MG_ACQUIRE:
        step_acquire(m);
        break;
    case MG_RELEASE:
    case MG_IDLE:
        /* Whatever an event still brought in (a grant told after the
         * cancel that came too late for it) goes back at once. */
        for (i = 0; i < m->n; i++)
            give_back(&m->m[i]);
        if (m->goal == MG_IDLE)
            break;
        for (i = 0; i < m->n; i++)
            if (m->m[i].st != MS_IDLE)
                return;
        set_goal(m, MG_IDLE);
        queue(m, ZKL_LOCK_RELEASED, m->status);
        break;
    case MG_HOLD:
    case MG_LOST:
        break;
    }
}

/* ---------------------------------------------------------------- */
/* Public API                                                        */
/* ---------------------------------------------------------------- */

struct spec {
    const char *path;
    zkl_lock_kind_t kind;
};

static int spec_cmp(const void *a, const void *b)
{
    const struct spec *x = a, *y = b;
    int r = strcmp(x->path, y->path);

    return r != 0 ? r : (int)x->kind - (int)y->kind;
}

/* Sorted by path; one entry per path: a read and a write of one path
 * fold into the write (READ < WRITE in the enum), two of a kind into
 * one; a mutex beside either is a mistake. */
static int fold(struct spec *v, size_t *n)
{
    size_t i, out = 0;

    qsort(v, *n, sizeof *v, spec_cmp);
    for (i = 0; i < *n; i++) {
        if (out > 0 && strcmp(v[out - 1].path, v[i].path) == 0) {
            if ((v[out - 1].kind == ZKL_KIND_MUTEX) !=
                (v[i].kind == ZKL_KIND_MUTEX))
                return ZKL_EINVAL;
            v[out - 1].kind = v[i].kind; /* the larger: WRITE over READ */
            continue;
        }
        v[out++] = v[i];
    }
    *n = out;
    return ZKL_OK;
}

static void multi_deliver(zkl__op_t *op, int ev, int status)
{
    zkl_multi_t *m = (zkl_multi_t *)(void *)op;

    if (ev == ZKL_LOCK_LOST)
        m->lost_untold = 0;
    m->cb(m, (zkl_lock_event_t)ev, status, m->arg);
}

/* A deadline no member's own timeout watches: while the set waits for
 * a member it gave back to be deleted, say, no member acquire runs. */
static uint64_t multi_deadline(const zkl__op_t *op)
{
    const zkl_multi_t *m = (const zkl_multi_t *)(const void *)op;

    return m->goal == MG_ACQUIRE ? m->deadline : 0;
}

static void multi_expire(zkl__op_t *op, uint64_t now)
{
    zkl_multi_t *m = (zkl_multi_t *)(void *)op;

    (void)now;
    fail(m, m->trylock ? ZKL_ECONNLOSS : ZKL_ETIMEDOUT);
}

/* The client is closing: every set answers now, as a lock does, and its
 * members' own endings (which follow) change nothing. */
static void multi_close(zkl__op_t *op)
{
    zkl_multi_t *m = (zkl_multi_t *)(void *)op;

    switch ((enum mgoal)m->goal) {
    case MG_ACQUIRE:
        queue(m, ZKL_LOCK_FAILED, ZKL_ECLOSED);
        break;
    case MG_HOLD:
        queue(m, ZKL_LOCK_LOST, ZKL_ECLOSED);
        break;
    case MG_RELEASE:
        queue(m, ZKL_LOCK_RELEASED, ZKL_ECLOSED);
        break;
    case MG_IDLE:
    case MG_LOST:
        break;
    }
    set_goal(m, MG_IDLE);
}

/* The set outlives its client: the user frees it. */
static void multi_teardown(zkl__op_t *op)
{
    ((zkl_multi_t *)(void *)op)->c = NULL;
}

/* Room for two events: ACQUIRED may come with SUSPENDED. */
static const zkl__opclass_t multi_class = {
    .name = "multi-lock",
    .deliver = multi_deliver,
    .deadline = multi_deadline,
    .expire = multi_expire,
    .close = multi_close,
    .teardown = multi_teardown,
    .room = 2,
};

int zkl_multi_new(zkl_multi_t **out, zkl_client_t *c,
                  const char *const *paths, const zkl_lock_kind_t *kinds,
                  size_t n, zkl_multi_cb cb, void *arg)
{
    struct spec *v;
    zkl_multi_t *m;
    size_t i;
    int rc = ZKL_OK;

    if (out == NULL)
        return ZKL_EINVAL;
    *out = NULL;
    if (c == NULL || paths == NULL || cb == NULL || n == 0 ||
        n > ZKL_MULTI_MAX)
        return ZKL_EINVAL;
    for (i = 0; i < n; i++) {
        zkl_lock_kind_t k = kinds != NULL ? kinds[i] : ZKL_KIND_MUTEX;

        if (k != ZKL_KIND_MUTEX && k != ZKL_KIND_READ &&
            k != ZKL_KIND_WRITE)
            return ZKL_EINVAL;
        if (paths[i] == NULL)
            return ZKL_EINVAL;
        if ((rc = zkl__path_check(paths[i], 0)) != ZKL_OK)
            return rc;
    }
    if (c->freeing || c->closing)
        return ZKL_ECLOSED;
    if ((v = zkl__malloc(n * sizeof *v)) == NULL)
        return ZKL_ENOMEM;
    for (i = 0; i < n; i++) {
        v[i].path = paths[i];
        v[i].kind = kinds != NULL ? kinds[i] : ZKL_KIND_MUTEX;
    }
    if ((rc = fold(v, &n)) != ZKL_OK) {
        zkl__free(v);
        return rc;
    }
    if ((m = zkl__calloc(1, sizeof *m + n * sizeof m->m[0])) == NULL) {
        zkl__free(v);
        return ZKL_ENOMEM;
    }
    m->c = c;
    m->cb = cb;
    m->arg = arg;
    for (i = 0; i < n && rc == ZKL_OK; i++) {
        m->m[i].m = m;
        rc = zkl__lock_new(&m->m[i].lk, c, v[i].path, v[i].kind, 0, member_cb,
                           &m->m[i]);
        if (rc == ZKL_OK) {
            m->m[i].lk->notify_queued = 1;
            m->n++;
        }
    }
    zkl__free(v);
    zkl__op_add(c, &m->op, &multi_class);
    if (rc != ZKL_OK) {
        zkl_multi_free(m);
        return rc;
    }
    *out = m;
    return ZKL_OK;
}

void zkl_multi_free(zkl_multi_t *m)
{
    zkl_client_t *c;
    size_t i;

    if (m == NULL)
        return;
    if ((c = m->c) != NULL)
        c->kicks_held++;
    for (i = 0; i < m->n; i++)
        zkl_lock_free(m->m[i].lk);
    if (c != NULL) {
        set_goal(m, MG_IDLE);
        zkl__op_remove(c, &m->op);
        c->kicks_held--;
        zkl__kick(c);
    }
    zkl__free(m);
}

/* step() from an API call: the member calls it makes each kick the
 * client, one pass each; one kick at the end sends them all. */
static void step_and_kick(zkl_multi_t *m)
{
    zkl_client_t *c = m->c;

    c->kicks_held++;
    step(m);
    c->kicks_held--;
    zkl__kick(c);
}

static int usable(const zkl_multi_t *m)
{
    return m != NULL ? zkl__client_usable(m->c) : ZKL_EINVAL;
}

/* The set learns of its members through their callbacks, so it trails
 * them by one trip through the queue: a member whose hold is known over
 * (its LOST queued, not yet told to the set) leaves the set MG_HOLD a
 * while longer. What the set says now must not: it holds only while
 * every member does. From a member's end until the set's own LOST has
 * run (the member's LOST, when delivered, queues it) the set is on its
 * way to LOST, in two steps the caller cannot tell apart: goal MG_HOLD
 * with a member not held, then MG_LOST with lost_untold. */
static int members_held(const zkl_multi_t *m)
{
    size_t i;

    for (i = 0; i < m->n; i++)
        if (!zkl_lock_is_held(m->m[i].lk))
            return 0;
    return 1;
}

static int holds_now(const zkl_multi_t *m)
{
    return m->goal == MG_HOLD && members_held(m);
}

static int lost_untold(const zkl_multi_t *m)
{
    return m->lost_untold || (m->goal == MG_HOLD && !members_held(m));
}

int zkl_multi_acquire(zkl_multi_t *m, long timeout_ms)
{
    int rc = usable(m);

    if (rc != ZKL_OK)
        return rc;
    if (holds_now(m))
        return ZKL_EHELD;
    if ((m->goal != MG_IDLE && m->goal != MG_LOST) || lost_untold(m))
        return ZKL_EBUSY;
    if ((rc = zkl__evq_promise(m->c, 0)) != ZKL_OK)
        return rc;
    /* A try-lock answers within a session timeout, as a lock's does. */
    m->trylock = timeout_ms == 0;
    if (m->trylock)
        timeout_ms = zkl_client_session_timeout(m->c);
    m->deadline = timeout_ms > 0 ? zkl__now_ms() + (uint64_t)timeout_ms : 0;
    set_goal(m, MG_ACQUIRE);
    m->suspended = 0;
    step_and_kick(m);
    return ZKL_OK;
}

int zkl_multi_cancel(zkl_multi_t *m)
{
    int rc = usable(m);

    if (rc != ZKL_OK)
        return rc;
    if (m->goal != MG_ACQUIRE)
        return ZKL_ENOTPENDING;
    m->c->kicks_held++;
    fail(m, ZKL_ECANCELED);
    m->c->kicks_held--;
    zkl__kick(m->c);
    return ZKL_OK;
}

int zkl_multi_release(zkl_multi_t *m)
{
    int rc = usable(m);

    if (rc != ZKL_OK && rc != ZKL_EAUTH)
        return rc;
    if ((m->goal != MG_HOLD && m->goal != MG_LOST) || lost_untold(m))
        return ZKL_ENOTHELD; /* after the LOST, the members kept go */
    set_goal(m, MG_RELEASE);
    m->status = ZKL_OK;
    step_and_kick(m); /* gives every member back */
    return ZKL_OK;
}

int zkl_multi_is_held(const zkl_multi_t *m)
{
    return m != NULL && m->c != NULL && holds_now(m);
}

size_t zkl_multi_size(const zkl_multi_t *m)
{
    return m != NULL ? m->n : 0;
}

const zkl_lock_t *zkl_multi_lock(const zkl_multi_t *m, size_t i)
{
    return m != NULL && i < m->n ? m->m[i].lk : NULL;
}

int zkl_multi_write(zkl_multi_t *m, const zkl_op_t *ops, size_t n,
                    zkl_write_cb cb, void *arg)
{
    const zkl_lock_t *stack[16] = {NULL}, **locks;
    size_t i;
    int rc = usable(m);

    if (rc != ZKL_OK)
        return rc;
    if (!holds_now(m))
        return ZKL_ENOTHELD;
    locks = m->n <= 16 ? stack : zkl__malloc(m->n * sizeof *locks);
    if (locks == NULL)
        return ZKL_ENOMEM;
    for (i = 0; i < m->n; i++)
        locks[i] = m->m[i].lk;
    rc = zkl__write(m->c, locks, m->n, ops, n, cb, arg);
    if (locks != stack)
        zkl__free(locks);
    return rc;
}
