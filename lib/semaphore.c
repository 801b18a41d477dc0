/* Counting semaphores in Curator's InterProcessSemaphoreV2 layout: the
 * public lease calls and the semaphore acquire (zkl__sem_t), which owns
 * the semaphore's mutex handle and its count node reads, and borrows
 * the lease handles it acquires, from zkl_lease_acquire_all() until they
 * are all granted or all failed.
 *
 * Why the layout works, and what each part is for:
 *   - Safety comes from the count alone: a lease is granted only on a
 *     listing of path/leases that holds the lease's own node and at most
 *     max nodes. Of any set of holders, the one granted on the latest
 *     listing saw every other holder's node (created before that holder's
 *     own listing, and not deleted since), so holders never outnumber
 *     the limit, whoever (Curator or zklock) takes leases in between.
 *   - The mutex (path/locks) is for liveness: only its holder adds lease
 *     nodes, so at most one acquire has nodes beyond the limit, and only
 *     it watches the leases: no herd, and no waiters whose surplus nodes
 *     keep each other out forever.
 * The lease nodes are ordinary attempts (attempt.c, kind LEASE): create
 * with uuid recovery, duplicates, grant, hold, guaranteed delete; the
 * attempt machine asks this file only whether a lease may create its
 * node now and, on each listing, whether the set may be granted.
 *
 * The limit record. Curator stores no limit (every participant must
 * agree), so a participant started with another limit would let more
 * holders in than the others expect. zklock keeps the limit of the
 * current holders in the path node's own data ("zklock:max_leases=N"),
 * which Curator creates empty and never reads. Only the holder of the
 * semaphore's mutex reads or writes it, so zklock acquirers never race
 * on it: with the mutex held and the leases listed, an acquire that
 * finds no lease but its own writes its limit (versioned: another
 * writer makes it read again), one that finds others compares, and
 * refuses (ZKL_ELIMIT) a record that names another limit. The mutex
 * is given back only after the write's answer, and a later mutex
 * holder reads after that, so it sees the record. Data that is not a
 * record (someone else's) is never overwritten: the check is off for
 * that semaphore. An acquire with a count node has no record. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* A lease handle's part (zkl__semconf_t) lives in the handle's own
 * block, after its path. */
#define LEASE(lk) ((zkl__semconf_t *)zkl__lock_extra(lk))

static int is_lease(const zkl_lock_t *lk)
{
    return lk != NULL && lk->kind == ZKL_KIND_LEASE;
}

static const zkl__opclass_t sem_class;

#define SEM(data) ((zkl__sem_t *)(uintptr_t)(data))

/* Count node reads that find no node, or a node deleted as fast as it is
 * created, give up after this many rounds. */
#define ZKL__COUNT_ROUNDS 20

/* The limit record: this prefix, then the limit in decimal. */
#define ZKL__REC_PREFIX "zklock:max_leases="

static void sem_mutex_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                         void *arg);
static void rec_start(zkl__sem_t *g);
static int rec_check(zkl__sem_t *g, const struct String_vector *sv);

int zkl_lease_new(zkl_lock_t **out, zkl_client_t *c, const char *path,
                  int max_leases, zkl_lock_cb cb, void *arg)
{
    int rc;

    if (out != NULL)
        *out = NULL;
    if (max_leases < 1 || max_leases > ZKL_LEASES_MAX)
        return ZKL_EINVAL;
    /* Room for the "/leases" child under the path. */
    if (path != NULL && strlen(path) + 7 > ZKL_PATH_MAX)
        return ZKL_EBADPATH;
    if ((rc = zkl__lock_new(out, c, path, ZKL_KIND_LEASE,
                            sizeof(zkl__semconf_t), cb, arg)) != ZKL_OK)
        return rc;
    LEASE(*out)->max = max_leases;
    return ZKL_OK;
}

int zkl_lease_set_count(zkl_lock_t *lk, const char *count_path)
{
    char *copy = NULL;
    int rc;

    if (!is_lease(lk))
        return ZKL_EINVAL;
    if (lk->c == NULL)
        return ZKL_ECLOSED;
    if (count_path != NULL) {
        if ((rc = zkl__path_check(count_path, 0)) != ZKL_OK)
            return rc;
        if ((copy = zkl__strdup(count_path)) == NULL)
            return ZKL_ENOMEM;
    }
    zkl__free(LEASE(lk)->count_path);
    LEASE(lk)->count_path = copy;
    return ZKL_OK;
}

int zkl_lease_limit(const zkl_lock_t *lk)
{
    return is_lease(lk) ? LEASE(lk)->max : 0;
}

int zkl_lease_recorded_limit(const zkl_lock_t *lk)
{
    return is_lease(lk) ? LEASE(lk)->seen : 0;
}

static int same_semaphore(const zkl_lock_t *a, const zkl_lock_t *b)
{
    const char *x = LEASE(a)->count_path, *y = LEASE(b)->count_path;

    return a->c == b->c && strcmp(a->path, b->path) == 0 &&
           LEASE(a)->max == LEASE(b)->max &&
           ((x == NULL && y == NULL) ||
            (x != NULL && y != NULL && strcmp(x, y) == 0));
}

static int check_set(zkl_lock_t *const *v, size_t n)
{
    size_t i, j;
    int rc;

    if (v == NULL || n == 0)
        return ZKL_EINVAL;
    for (i = 0; i < n; i++) {
        const zkl_lock_t *lk = v[i];

        if (!is_lease(lk))
            return ZKL_EINVAL;
        if (lk->c == NULL || lk->c->freeing || lk->c->closing)
            return ZKL_ECLOSED;
        if ((rc = lk->c->dead) != ZKL_OK)
            return rc;
        if (lk->att != NULL)
            return lk->att->goal == ZKL__GOAL_HOLD ? ZKL_EHELD : ZKL_EBUSY;
        if (!same_semaphore(lk, v[0]))
            return ZKL_EINVAL;
        for (j = 0; j < i; j++)
            if (v[j] == lk)
                return ZKL_EINVAL;
    }
    if (LEASE(v[0])->count_path == NULL && n > (size_t)LEASE(v[0])->max)
        return ZKL_EINVAL; /* could never be granted */
    return ZKL_OK;
}

static void sem_free(zkl__sem_t *g)
{
    zkl__free(g->count_path);
    zkl__free(g);
}

/* The acquire is over (granted or failed): the leases go their own way,
 * the mutex is given back (deleted in the background, handed on to the
 * next local waiter), and the record goes once no count read carries
 * it. */
static void sem_end(zkl__sem_t *g)
{
    zkl_client_t *c = g->c;
    zkl_lock_t *m = g->mutex;
    size_t i;

    if (g->done)
        return;
    g->done = 1;
    for (i = 0; i < g->n; i++)
        LEASE(g->members[i])->grp = NULL;
    g->mutex = NULL;
    /* Called from inside other calls (a member's let_go): the public
     * calls below must not settle the client now, so they only record;
     * the caller's own kick or pass sends. */
    c->depth++;
    if (m != NULL) {
        if (zkl_lock_is_held(m))
            zkl_lock_release(m);
        zkl_lock_free(m);
    }
    c->depth--;
    zkl__op_remove(c, &g->op);
    if (g->inflight == 0)
        sem_free(g);
}

/* Ends the acquire for every lease still waiting (skip: the one whose
 * own ending brought us here). */
static void sem_fail(zkl__sem_t *g, const zkl__att_t *skip, int status)
{
    size_t i;

    if (g->done)
        return;
    g->done = 1; /* no re-entry through the members' let_go */
    for (i = 0; i < g->n; i++) {
        zkl__att_t *a = g->members[i]->att;

        if (a != NULL && a != skip && a->goal == ZKL__GOAL_ACQUIRE)
            zkl__att_let_go(a, ZKL_LOCK_FAILED, status);
    }
    g->done = 0;
    sem_end(g);
}

static void lease_abandon(zkl__att_t *a, int status)
{
    zkl__sem_t *g = LEASE(a->lk)->grp;

    if (g != NULL && !g->done)
        sem_fail(g, a, status);
}

int zkl_lease_acquire_all(zkl_lock_t *const *v, size_t n, long timeout_ms)
{
    zkl__sem_t *g;
    zkl_client_t *c;
    char *mpath;
    size_t i, plen;
    int rc;

    if ((rc = check_set(v, n)) != ZKL_OK)
        return rc;
    c = v[0]->c;
    plen = strlen(v[0]->path);
    if ((g = zkl__calloc(1, sizeof *g + n * sizeof g->members[0])) == NULL ||
        (mpath = zkl__malloc(plen + sizeof "/locks")) == NULL) {
        zkl__free(g);
        return ZKL_ENOMEM;
    }
    memcpy(mpath, v[0]->path, plen);
    memcpy(mpath + plen, "/locks", sizeof "/locks");
    g->c = c;
    g->n = n;
    g->max = LEASE(v[0])->max;
    g->max_known = LEASE(v[0])->count_path == NULL;
    g->deadline = timeout_ms > 0 ? zkl__now_ms() + (uint64_t)timeout_ms : 0;
    g->trylock = timeout_ms == 0;
    g->rec_state = g->max_known ? ZKL__REC_NONE : ZKL__REC_OFF;
    rc = zkl__lock_new(&g->mutex, c, mpath, ZKL_KIND_MUTEX, 0, sem_mutex_cb, g);
    zkl__free(mpath);
    if (rc == ZKL_OK && LEASE(v[0])->count_path != NULL &&
        (g->count_path = zkl__strdup(LEASE(v[0])->count_path)) == NULL)
        rc = ZKL_ENOMEM;
    /* Each lease waits, uncreated and unsent, until the mutex is ours;
     * none is part of the acquire until all exist. */
    for (i = 0; rc == ZKL_OK && i < n; i++)
        if ((v[i]->att = zkl__att_new_parked(c, v[i], timeout_ms)) == NULL)
            rc = ZKL_ENOMEM;
    if (rc == ZKL_OK)
        rc = zkl_lock_acquire(g->mutex, timeout_ms);
    if (rc != ZKL_OK) {
        for (i = 0; i < n; i++) {
            if (v[i]->att != NULL)
                zkl__att_free(v[i]->att); /* nothing sent, nothing owed */
            v[i]->att = NULL;
        }
        zkl_lock_free(g->mutex);
        sem_free(g);
        return rc;
    }
    for (i = 0; i < n; i++) {
        LEASE(v[i])->grp = g;
        LEASE(v[i])->seen = 0;
        g->members[i] = v[i];
    }
    zkl__op_add(c, &g->op, &sem_class);
    if (g->count_path != NULL) {
        g->count_wanted = 1;
        zkl__ops_want_run(c);
    }
    zkl__kick(c);
    return ZKL_OK;
}

/* Leases may add nodes only while their acquire holds the mutex. */
static int lease_may_create(const zkl__att_t *a)
{
    const zkl__sem_t *g = a->lk != NULL ? LEASE(a->lk)->grp : NULL;

    return g != NULL && !g->done && g->mutex != NULL &&
           zkl_lock_is_held(g->mutex);
}

/* A lease that is waiting for a reply or a watch, not for a step. One
 * on the ready queue with nothing to send (a reply said "nothing now":
 * after_reply() queues it all the same) is as good as idle: skipped as
 * busy, it would step, do nothing, and wait for a wake-up that already
 * came (a count read answered in the same batch as its listing). */
static int idle(const zkl__att_t *a)
{
    return a->inflight == 0 && (!(a->flags & ZKL__F_READY) ||
                                a->next_op == ZKL__NEXT_NOTHING);
}

/* Every lease of g looks at the leases again (the count changed, or the
 * mutex came back). Those without a node create it (if the mutex is
 * ours: the step checks). */
static void sem_relist(zkl__sem_t *g)
{
    size_t i;

    g->ok = 0;
    for (i = 0; i < g->n; i++) {
        zkl__att_t *a = g->members[i]->att;

        if (a == NULL || a->goal != ZKL__GOAL_ACQUIRE || !idle(a))
            continue;
        zkl__wtab_remove(g->c, a);
        zkl__att_schedule(a, a->node == ZKL__NODE_NONE ? ZKL__NEXT_CREATE
                                                       : ZKL__NEXT_LIST);
    }
}

/* Every lease of g starts over: its node (if any) is deleted in the
 * background by the old attempt, and a new one (a fresh uuid) waits for
 * the mutex. */
static int sem_renew(zkl__sem_t *g, long timeout)
{
    size_t i;

    g->ok = 0;
    for (i = 0; i < g->n; i++) {
        zkl_lock_t *lk = g->members[i];
        zkl__att_t *old = lk->att, *a = zkl__att_new_parked(g->c, lk, timeout);

        if (a == NULL)
            return ZKL_ENOMEM; /* the old one stays: sem_fail ends it */
        if (old != NULL) {
            zkl__att_detach(old, 0, 0); /* no longer the set's */
            zkl__att_let_go(old, 0, 0);
        }
        lk->att = a;
    }
    return ZKL_OK;
}

static void sem_mutex_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                         void *arg)
{
    zkl__sem_t *g = arg;
    uint64_t now;
    long left;

    if (g->done || g->c->closing)
        return;
    switch (ev) {
    case ZKL_LOCK_ACQUIRED:
        rec_start(g);
        sem_relist(g);
        break;
    case ZKL_LOCK_FAILED:
        sem_fail(g, NULL, status);
        break;
    case ZKL_LOCK_LOST:
        /* Nodes beyond the limit may only exist under the mutex: once it
         * is lost (presumed expiry, a deletion by someone else), another
         * acquire may add its own, and ours would keep it waiting for
         * ever. Ours go, and come back once the mutex is ours again. */
        if (g->rec_state != ZKL__REC_OFF)
            g->rec_state = ZKL__REC_NONE; /* read again under the mutex */
        now = zkl__now_ms();
        left = g->deadline == 0      ? -1
               : g->deadline > now ? (long)(g->deadline - now)
                                   : 0; /* unused: timed out below */
        if (g->trylock)
            sem_fail(g, NULL, ZKL_ECONNLOSS);
        else if (g->deadline != 0 && g->deadline <= now)
            sem_fail(g, NULL, ZKL_ETIMEDOUT);
        else if ((status = sem_renew(g, left)) != ZKL_OK ||
                 (status = zkl_lock_acquire(lk, left)) != ZKL_OK)
            sem_fail(g, NULL, status);
        break;
    case ZKL_LOCK_SUSPENDED:
    case ZKL_LOCK_RESTORED:
    case ZKL_LOCK_RELEASED:
    case ZKL_LOCK_REVOKE_REQUESTED:
    case ZKL_LOCK_QUEUED:
        break;
    }
}

static int listed(const struct String_vector *sv, const char *name)
{
    int i;

    for (i = 0; i < sv->count; i++)
        if (strcmp(sv->data[i], name) == 0)
            return 1;
    return 0;
}

/* A listing of the leases, by lease a (whose node is in it): the set may
 * be granted when the listing holds every node of the set and at most
 * the limit in all (Curator counts every child, whatever its name). A
 * node of the set that the listing lacks was deleted by someone else: it
 * is created again. Over the limit, a waits for the leases to change. */
static void lease_decide(zkl__att_t *a, const struct String_vector *sv)
{
    zkl__sem_t *g = LEASE(a->lk)->grp;
    int all = 1;
    size_t i;

    if (g == NULL || g->done) {
        zkl__att_after_reply(a, ZKL__NEXT_NOTHING);
        return;
    }
    g->ok = 0;
    for (i = 0; i < g->n; i++) {
        zkl__att_t *m = g->members[i]->att;

        m->flags &= (uint16_t)~ZKL__F_AT_HEAD;
        if (m->node != ZKL__NODE_KNOWN) {
            all = 0;
        } else if (!listed(sv, zkl__att_name(m))) {
            all = 0;
            if (m != a && idle(m)) {
                m->node = ZKL__NODE_NONE;
                m->czxid = 0;
                zkl__wtab_remove(g->c, m);
                zkl__att_schedule(m, ZKL__NEXT_CREATE);
            }
        }
    }
    if (!g->max_known) {
        /* The count read wakes every lease once it is in. */
        zkl__att_after_reply(a, ZKL__NEXT_NOTHING);
        return;
    }
    switch (rec_check(g, sv)) {
    case 0:
        break;
    case 1: /* the record's answer wakes every lease */
        zkl__att_after_reply(a, ZKL__NEXT_NOTHING);
        return;
    default: /* the whole set fails with it */
        zkl__att_let_go(a, ZKL_LOCK_FAILED, ZKL_ELIMIT);
        zkl__att_after_reply(a, ZKL__NEXT_NOTHING);
        return;
    }
    if (sv->count <= g->max) {
        if (all) {
            g->ok = 1;
            for (i = 0; i < g->n; i++) {
                zkl__att_t *m = g->members[i]->att;

                m->flags |= ZKL__F_AT_HEAD;
                zkl__wtab_remove(g->c, m);
            }
            zkl__att_after_reply(a, ZKL__NEXT_RECIPE);
            return;
        }
        /* The missing lease's own listing decides. */
        zkl__att_after_reply(a, ZKL__NEXT_NOTHING);
        return;
    }
    if (g->trylock) {
        zkl__att_let_go(a, ZKL_LOCK_FAILED, ZKL_ELOCKED);
        zkl__att_after_reply(a, ZKL__NEXT_NOTHING);
        return;
    }
    /* The listing set a watch on the leases: wait for it. */
    a->whash = zkl__hashn(a->path, a->dirlen);
    zkl__att_after_reply(a, zkl__wtab_add(g->c, a, a->whash) == ZKL_OK
                                ? ZKL__NEXT_NOTHING
                                : ZKL__NEXT_LIST);
}

/* Lease a's step after a listing said the set may be granted: grant
 * every lease of the set at once, when each is idle with its node and
 * fencing token known, and the bound on the server's last touch is
 * fresh (see grant() in attempt.c); else get there first. */
static void lease_step(zkl__att_t *a)
{
    zkl__sem_t *g = a->lk != NULL ? LEASE(a->lk)->grp : NULL;
    size_t i;
    int wait = 0;

    if (g == NULL || g->done)
        return;
    if (!g->ok) {
        /* Something made the listing that allowed this stale (a new
         * count, the mutex back): a waiting lease is woken by its watch,
         * anything else looks again. */
        if (!(a->flags & ZKL__F_IN_TABLE))
            zkl__att_schedule(a, ZKL__NEXT_LIST);
        return;
    }
    /* The mutex goes with the grant: not before the record is written
     * (its answer steps again; a read's answer lists again). */
    if (g->rec_state != ZKL__REC_OFF && g->rec_state != ZKL__REC_KNOWN)
        return;
    for (i = 0; i < g->n; i++) {
        zkl__att_t *m = g->members[i]->att;

        if (m->goal != ZKL__GOAL_ACQUIRE || m->node != ZKL__NODE_KNOWN ||
            !(m->flags & ZKL__F_AT_HEAD))
            return; /* a later listing decides again */
        if (!idle(m) && m != a) {
            wait = 1; /* its reply steps again */
        } else if (m->czxid == 0) {
            zkl__att_schedule(m, ZKL__NEXT_CONFIRM); /* adopted node */
            wait = 1;
        }
    }
    if (wait)
        return;
    if (!zkl__touch_fresh(g->c)) {
        zkl__att_schedule(a, ZKL__NEXT_CONFIRM);
        return;
    }
    for (i = 0; i < g->n; i++)
        zkl__att_grant(g->members[i]->att);
    sem_end(g);
}

/* ---- the count node (Curator's SharedCount) ---- */

static void count_read(zkl__sem_t *g);

/* 1 when g is gone: it was over, and this was its last reply. */
static int count_answered(zkl__sem_t *g)
{
    zkl__req_done(g->c);
    g->inflight--;
    if (g->done && g->inflight == 0) {
        sem_free(g);
        return 1;
    }
    return 0;
}

/* Connection trouble: read again once connected. */
static void count_retry(zkl__sem_t *g)
{
    g->count_wanted = 1;
    zkl__ops_want_run(g->c);
}

static void count_got(zkl__sem_t *g, const char *value, int len)
{
    const unsigned char *b = (const unsigned char *)value;
    int32_t v;

    if (value == NULL || len != 4) {
        ZKL_LOG(ZKL_LOG_ERROR, "zklock: %s: not a 4-byte count",
                g->count_path);
        sem_fail(g, NULL, ZKL_ECOUNT);
        return;
    }
    v = (int32_t)(((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) |
                  ((uint32_t)b[2] << 8) | (uint32_t)b[3]);
    g->rounds = 0;
    if (g->max_known && g->max == v)
        return;
    g->max = v;
    g->max_known = 1;
    sem_relist(g);
}

static void count_created(int rc, const char *value, const void *data)
{
    zkl__sem_t *g = SEM(data);

    (void)value;
    if (count_answered(g) || g->done || g->c->closing)
        return;
    switch (zkl__rc_class(rc)) {
    case ZKL__RC_OK:
    case ZKL__RC_EXISTS:
    case ZKL__RC_NONODE: /* its parent went meanwhile: the read tells */
    case ZKL__RC_CONNLOSS:
    case ZKL__RC_GONE:
        count_retry(g);
        break;
    case ZKL__RC_REFUSED:
        ZKL_LOG(ZKL_LOG_ERROR, "zklock: create %s: %s", g->count_path,
                zerror(rc));
        sem_fail(g, NULL, zkl__from_zk(rc));
        break;
    }
}

static void parent_created(int rc, const char *value, const void *data)
{
    (void)rc;
    (void)value;
    (void)count_answered(SEM(data));
}

/* A count node request whose fate was unknown (fence.c), now settled:
 * the pin goes, and the request too if its completion never came; then
 * the count is read again (the request changed nothing either way). */
static void count_resolve(zkl_client_t *c, void *rec, void *aux)
{
    zkl__sem_t *g = rec;
    int came = g->inflight == 1;

    (void)aux;
    g->inflight--;
    if (!came) {
        g->inflight--;
        zkl__req_done(c);
    }
    if (g->done && g->inflight == 0) {
        sem_free(g);
        return;
    }
    if (!g->done && !c->closing)
        count_retry(g);
}

/* Counts a count node request: 1 when the ZooKeeper client took it; 0
 * when it did not, or may have (then pinned until count_resolve()). */
static int count_sent(zkl__sem_t *g, int rc)
{
    switch (zkl__fence_sent(g->c, rc, count_resolve, g, NULL)) {
    case ZKL__SENT:
        g->inflight++;
        zkl__req_sent(g->c);
        return 1;
    case ZKL__MAYBE:
        g->inflight += 2;
        zkl__req_sent(g->c);
        return 0;
    default:
        return 0;
    }
}

/* Curator's SharedCount creates its node with the seed: the same here,
 * with the participants' agreed limit, its ancestors as containers. */
static void count_create(zkl__sem_t *g)
{
    zkl_client_t *c = g->c;
    char tmp[ZKL_PATH_MAX + 1], seed[4];
    size_t len = strlen(g->count_path), i;
    uint32_t v = (uint32_t)LEASE(g->members[0])->max;

    if (zkl__fence_up(c)) {
        count_retry(g); /* from the read, once requests go again */
        return;
    }
    strcpy(tmp, g->count_path);
    for (i = 1; i < len; i++) {
        if (tmp[i] != '/')
            continue;
        tmp[i] = '\0';
        if (!count_sent(g, zoo_acreate(c->zh, tmp, NULL, -1, &c->acl,
                                       ZOO_CONTAINER, parent_created, g)) &&
            zkl__fence_up(c))
            return; /* count_resolve() reads again */
        tmp[i] = '/';
    }
    seed[0] = (char)(v >> 24);
    seed[1] = (char)(v >> 16);
    seed[2] = (char)(v >> 8);
    seed[3] = (char)v;
    if (!count_sent(g, zoo_acreate(c->zh, g->count_path, seed, 4, &c->acl,
                                   ZOO_PERSISTENT, count_created, g)) &&
        !zkl__fence_up(c))
        count_retry(g);
}

static void count_done(int rc, const char *value, int len,
                       const struct Stat *st, const void *data)
{
    zkl__sem_t *g = SEM(data);

    (void)st;
    if (count_answered(g) || g->done || g->c->closing)
        return;
    if (rc == ZOK && zkl__data_lost(value, len))
        rc = ZCONNECTIONLOSS; /* the client lost the count: read again */
    switch (zkl__rc_class(rc)) {
    case ZKL__RC_OK:
        count_got(g, value, len);
        break;
    case ZKL__RC_NONODE:
        if (++g->rounds > ZKL__COUNT_ROUNDS)
            sem_fail(g, NULL, ZKL_EZK);
        else
            count_create(g);
        break;
    case ZKL__RC_EXISTS:
    case ZKL__RC_CONNLOSS:
    case ZKL__RC_GONE:
        count_retry(g);
        break;
    case ZKL__RC_REFUSED:
        ZKL_LOG(ZKL_LOG_ERROR, "zklock: read %s: %s", g->count_path,
                zerror(rc));
        sem_fail(g, NULL, zkl__from_zk(rc));
        break;
    }
}

static void count_read(zkl__sem_t *g)
{
    zkl_client_t *c = g->c;
    int rc;

    g->count_wanted = 0;
    rc = zoo_awget(c->zh, g->count_path, zkl__watcher, c, count_done, g);
    if (count_sent(g, rc)) {
        c->stats.requests++;
    } else if (zkl__fence_up(c)) {
        /* count_resolve() reads again if need be. */
    } else if (zkl__rc_class(rc) == ZKL__RC_GONE) {
        count_retry(g); /* the session handling brings a new handle */
    } else {
        ZKL_LOG(ZKL_LOG_WARN, "zklock: %s: read not sent: %s",
                g->count_path, zerror(rc));
        sem_fail(g, NULL, zkl__from_zk(rc));
    }
}

/* ---- the limit record (the path node's data) ---- */

/* What data holds: a limit, 0 for none, -1 for data that is not a
 * record (someone else's: never compared, never overwritten). */
static int rec_parse(const char *value, int len)
{
    size_t plen = sizeof ZKL__REC_PREFIX - 1;
    int i, v = 0;

    if (value == NULL || len <= 0)
        return 0;
    if ((size_t)len <= plen || memcmp(value, ZKL__REC_PREFIX, plen) != 0 ||
        value[plen] == '0' || (size_t)len - plen > 5)
        return -1;
    for (i = (int)plen; i < len; i++) {
        if (value[i] < '0' || value[i] > '9')
            return -1;
        v = v * 10 + (value[i] - '0');
    }
    return v <= ZKL_LEASES_MAX ? v : -1;
}

/* The record is known (rec, rec_version): the leases are told what it
 * holds. */
static void rec_known(zkl__sem_t *g, int rec, int32_t version)
{
    size_t i;

    g->rec_state = ZKL__REC_KNOWN;
    g->rec = rec;
    g->rec_version = version;
    for (i = 0; i < g->n; i++)
        LEASE(g->members[i])->seen = rec > 0 ? rec : 0;
}

/* The semaphore's mutex is ours: read the record (once the request
 * still in flight, if any, is answered; an answer that finds the state
 * moved on is dropped). */
static void rec_start(zkl__sem_t *g)
{
    if (g->rec_state == ZKL__REC_OFF)
        return;
    g->rec_state = ZKL__REC_READ;
    g->rec_rounds = 0;
    zkl__ops_want_run(g->c);
}

/* The check cannot be made here (an ACL, a node that keeps vanishing):
 * the acquire goes on without it. */
static void rec_off(zkl__sem_t *g, const char *what, int rc)
{
    ZKL_LOG(ZKL_LOG_WARN, "zklock: %s: %s of the limit record: %s; "
            "acquiring without the check", g->members[0]->path, what,
            zerror(rc));
    g->rec_state = ZKL__REC_OFF;
}

/* Leases of the listing that are not the set's own (a node of the set
 * is known by its uuid, whether or not its create has answered). */
static int others_in(const zkl__sem_t *g, const struct String_vector *sv)
{
    int i, n = 0;
    size_t j;

    for (i = 0; i < sv->count; i++) {
        for (j = 0; j < g->n; j++) {
            zkl__att_t *m = g->members[j]->att;

            if (m != NULL && strncmp(sv->data[i], zkl__att_name(m),
                                     ZKL__PREFIX_LEN) == 0)
                break;
        }
        if (j == g->n)
            n++;
    }
    return n;
}

/* What the record says of a listing of the leases: go on (0), wait for
 * the record's read (1), or refuse (-1). With nobody else there, our
 * limit becomes the record (written before the grant: see sem_step). */
static int rec_check(zkl__sem_t *g, const struct String_vector *sv)
{
    switch ((enum zkl__rec)g->rec_state) {
    case ZKL__REC_OFF:
    case ZKL__REC_WRITE:
    case ZKL__REC_WRITING:
        return 0;
    case ZKL__REC_NONE:
    case ZKL__REC_READ:
    case ZKL__REC_READING:
        return 1;
    case ZKL__REC_KNOWN:
        break;
    }
    if (g->rec < 0 || g->rec == g->max)
        return 0;
    if (others_in(g, sv) > 0) {
        if (g->rec == 0)
            return 0; /* holders of unknown limit (Curator's) */
        ZKL_LOG(ZKL_LOG_ERROR, "zklock: %s: the semaphore's holders use "
                "the limit %d, this acquire %d", g->members[0]->path,
                g->rec, g->max);
        return -1;
    }
    g->rec_state = ZKL__REC_WRITE;
    zkl__ops_want_run(g->c);
    return 0;
}

/* The write is answered (or the check is off): a set that a listing
 * found grantable meanwhile is granted now. */
static void rec_settled(zkl__sem_t *g)
{
    size_t i;

    if (!g->ok)
        return; /* a listing still to come decides */
    for (i = 0; i < g->n; i++) {
        zkl__att_t *m = g->members[i]->att;

        if (m != NULL && m->goal == ZKL__GOAL_ACQUIRE && idle(m)) {
            zkl__att_schedule(m, ZKL__NEXT_RECIPE);
            return;
        }
    }
    /* Each is busy: its reply steps (sem_step). */
}

/* Every record answer starts here; 1 when g is gone, or when the
 * answer is stale: the state moved on while it was in flight (the
 * mutex lost or taken again), so what is due now is sent instead. */
static int rec_answered(zkl__sem_t *g, int rc, int flying)
{
    zkl_client_t *c = g->c;

    zkl__on_answer(c, rc, g->rec_sent_at);
    g->rec_out = 0;
    if (count_answered(g))
        return 1;
    if (g->done || c->closing)
        return 1;
    if (g->rec_state != flying) {
        if (g->rec_state == ZKL__REC_READ || g->rec_state == ZKL__REC_WRITE)
            zkl__ops_want_run(c);
        return 1;
    }
    return 0;
}

/* Connection trouble, another writer, a node that went: read again
 * (once connected), which also tells whether a write landed. */
static void rec_reread(zkl__sem_t *g)
{
    g->rec_state = ZKL__REC_READ;
    zkl__ops_want_run(g->c);
}

static void rec_read_done(int rc, const char *value, int len,
                          const struct Stat *st, const void *data)
{
    zkl__sem_t *g = SEM(data);

    if (rec_answered(g, rc, ZKL__REC_READING))
        return;
    if (rc == ZOK && (zkl__data_lost(value, len) || st == NULL))
        rc = ZCONNECTIONLOSS; /* the client lost the answer: ask again */
    switch (zkl__rc_class(rc)) {
    case ZKL__RC_OK:
        rec_known(g, rec_parse(value, len), st->version);
        break;
    case ZKL__RC_NONODE:
        /* No node, no record; one made later starts at version 0, so a
         * write of that version finds it as it is now. */
        rec_known(g, 0, 0);
        break;
    case ZKL__RC_EXISTS:
    case ZKL__RC_CONNLOSS:
    case ZKL__RC_GONE:
        rec_reread(g);
        return;
    case ZKL__RC_REFUSED:
        rec_off(g, "read", rc);
        break;
    }
    /* The leases that waited for it look again. */
    sem_relist(g);
}

static void rec_write_done(int rc, const struct Stat *st, const void *data)
{
    zkl__sem_t *g = SEM(data);

    if (rec_answered(g, rc, ZKL__REC_WRITING))
        return;
    if (rc == ZOK && st == NULL)
        rc = ZCONNECTIONLOSS; /* written, surely, but read to know */
    if (rc == ZBADVERSION) {
        /* Someone else wrote since our read: what it says decides. */
        rec_reread(g);
        return;
    }
    switch (zkl__rc_class(rc)) {
    case ZKL__RC_OK:
        rec_known(g, g->max, st->version);
        break;
    case ZKL__RC_NONODE:
        /* The path node went under our own leases: read again, but not
         * for ever. */
        if (++g->rec_rounds > ZKL__COUNT_ROUNDS)
            rec_off(g, "write", rc);
        else
            rec_reread(g);
        break;
    case ZKL__RC_EXISTS:
    case ZKL__RC_CONNLOSS:
    case ZKL__RC_GONE:
        rec_reread(g);
        return;
    case ZKL__RC_REFUSED: /* an ACL without write permission, a quota */
        if (g->rec > 0) {
            /* A record of another limit that cannot be rewritten would
             * be trusted by the next acquirers while we hold with ours:
             * refused, as a mismatch is. */
            ZKL_LOG(ZKL_LOG_ERROR, "zklock: %s: the limit record says %d "
                    "and cannot be rewritten (%s); refusing the limit %d",
                    g->members[0]->path, g->rec, zerror(rc), g->max);
            sem_fail(g, NULL, ZKL_ELIMIT);
            return;
        }
        rec_off(g, "write", rc);
        break;
    }
    if (g->rec_state == ZKL__REC_KNOWN || g->rec_state == ZKL__REC_OFF)
        rec_settled(g);
}

/* A record request whose fate was unknown (fence.c), now settled: the
 * pin goes, and the request too if its completion never came (nothing
 * reached the server: read again, which tells what to do). */
static void rec_resolve(zkl_client_t *c, void *rec, void *aux)
{
    zkl__sem_t *g = rec;

    (void)aux;
    g->inflight--;
    if (g->rec_out > 0) {
        g->rec_out = 0;
        g->inflight--;
        zkl__req_done(c);
        if (!g->done && (g->rec_state == ZKL__REC_READING ||
                         g->rec_state == ZKL__REC_WRITING))
            g->rec_state = ZKL__REC_READ;
    }
    if (g->done && g->inflight == 0) {
        sem_free(g);
        return;
    }
    if (!g->done && !c->closing &&
        (g->rec_state == ZKL__REC_READ || g->rec_state == ZKL__REC_WRITE))
        zkl__ops_want_run(c);
}

/* Counts a record request: 1 when the ZooKeeper client took it or may
 * have (then pinned until rec_resolve()), in state flying; 0 when it
 * refused it (rc says why). */
static int rec_sent(zkl__sem_t *g, int rc, int flying)
{
    switch (zkl__fence_sent(g->c, rc, rec_resolve, g, NULL)) {
    case ZKL__SENT:
        g->inflight++;
        break;
    case ZKL__MAYBE:
        g->inflight += 2;
        break;
    default:
        return 0;
    }
    g->rec_out = 1;
    g->rec_state = (uint8_t)flying;
    g->rec_sent_at = zkl__now_ms();
    zkl__req_sent(g->c);
    g->c->stats.requests++;
    return 1;
}

/* A request the ZooKeeper client refused: 1 when it is to be sent again
 * once the new handle is there; else the acquire goes on without the
 * check. */
static int rec_unsent(zkl__sem_t *g, const char *what, int rc)
{
    if (zkl__rc_class(rc) == ZKL__RC_GONE) {
        zkl__ops_want_run(g->c); /* the session handling brings a new handle */
        return 1;
    }
    rec_off(g, what, rc);
    return 0;
}

static void rec_read(zkl__sem_t *g)
{
    int rc = zoo_aget(g->c->zh, g->members[0]->path, 0, rec_read_done, g);

    if (!rec_sent(g, rc, ZKL__REC_READING) && !rec_unsent(g, "read", rc))
        sem_relist(g); /* the leases that waited for it look again */
}

static void rec_write(zkl__sem_t *g)
{
    char buf[sizeof ZKL__REC_PREFIX + 16];
    int len = snprintf(buf, sizeof buf, ZKL__REC_PREFIX "%d", g->max);
    int rc = zoo_aset(g->c->zh, g->members[0]->path, buf, len,
                      g->rec_version, rec_write_done, g);

    if (!rec_sent(g, rc, ZKL__REC_WRITING) && !rec_unsent(g, "write", rc))
        rec_settled(g);
}

/* The count reads and record requests that are due: the client calls
 * this once requests may go. Each may end g: nothing of g's after. */
static void sem_run(zkl__op_t *op)
{
    zkl__sem_t *g = (zkl__sem_t *)(void *)op;

    if (g->done)
        return;
    if (g->count_wanted)
        count_read(g);
    else if (g->rec_out == 0 && g->rec_state == ZKL__REC_READ)
        rec_read(g);
    else if (g->rec_out == 0 && g->rec_state == ZKL__REC_WRITE)
        rec_write(g);
}

/* The count node changed (or went): read it again. */
static void sem_watch(zkl__op_t *op, int type, const char *path)
{
    zkl__sem_t *g = (zkl__sem_t *)(void *)op;

    (void)type;
    if (g->count_path != NULL && !g->done &&
        strcmp(g->count_path, path) == 0)
        count_retry(g);
}

/* A new session has none of the old one's watches: read (and watch)
 * the count node again. */
static void sem_session_gone(zkl__op_t *op)
{
    zkl__sem_t *g = (zkl__sem_t *)(void *)op;

    if (g->count_path != NULL && !g->done)
        count_retry(g);
}

/* The client is going (closing, before any callback of the teardown):
 * the leases are answered one by one by the teardown, so the acquire
 * lets go of them now, while every handle still exists; a record that a
 * count read still carries goes with that read's ZCLOSING. */
static void sem_close(zkl__op_t *op)
{
    sem_end((zkl__sem_t *)(void *)op);
}

/* No events of its own (its news reach the user through its leases'
 * handles), and off the list once the close has ended it. */
static const zkl__opclass_t sem_class = {
    .name = "semaphore acquire",
    .run = sem_run,
    .watch = sem_watch,
    .session_gone = sem_session_gone,
    .close = sem_close,
};

/* zkl_lock_acquire() of a lease handle: a set of one. */
static int lease_acquire(zkl_lock_t *lk, long timeout_ms)
{
    return zkl_lease_acquire_all(&lk, 1, timeout_ms);
}

static void lease_handle_free(zkl_lock_t *lk)
{
    zkl__free(LEASE(lk)->count_path);
}

/* Every lease node counts against the limit. */
static int lease_holds(int front, int after_excluder)
{
    (void)front;
    (void)after_excluder;
    return 1;
}

/* Curator counts every child of the leases node as a lease, whatever its
 * name: so does a lease here (lease_decide), and nothing is foreign. */
static int lease_foreign(const zkl__recipe_t *r, const char *name)
{
    (void)r;
    (void)name;
    return 0;
}

/* A lease sorts by the text after "lease-" (Curator's), waits for the
 * leases to change rather than for one node, and is granted by its
 * acquire, together with the rest of its set. */
const zkl__recipe_t zkl__lease_recipe = {
    .name = "lease", .tag = "-lease-", .taglen = 7,
    .subdir = "/leases", .subdirlen = 7,
    .foreign = lease_foreign, .family = "lease", .holds = lease_holds,
    .waits_on_children = 1,
    .may_create = lease_may_create, .decide = lease_decide,
    .step = lease_step, .abandon = lease_abandon,
    .acquire = lease_acquire, .handle_free = lease_handle_free,
};
