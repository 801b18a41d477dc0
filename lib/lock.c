/* The public lock handle: argument checks and the mapping of calls onto
 * attempts. The handle is the user's; attempts are the client's. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int zkl_lock_new(zkl_lock_t **out, zkl_client_t *c, const char *path,
                 zkl_lock_cb cb, void *arg)
{
    return zkl_lock_new_kind(out, c, path, ZKL_KIND_MUTEX, cb, arg);
}

int zkl_lock_new_kind(zkl_lock_t **out, zkl_client_t *c, const char *path,
                      zkl_lock_kind_t kind, zkl_lock_cb cb, void *arg)
{
    if (kind != ZKL_KIND_MUTEX && kind != ZKL_KIND_READ &&
        kind != ZKL_KIND_WRITE) {
        if (out != NULL)
            *out = NULL;
        return ZKL_EINVAL; /* a lease needs its limit: zkl_lease_new() */
    }
    return zkl__lock_new(out, c, path, kind, 0, cb, arg);
}

/* The handle's events: its attempts' news, and its reentrant grants. */
static void lock_deliver(zkl__op_t *op, int ev, int status)
{
    zkl_lock_t *lk = (zkl_lock_t *)(void *)op;
    zkl_client_t *c = lk->c;
    /* Attempts are only freed by a step or a teardown, never inside a
     * callback, so this pointer outlives the call. */
    zkl__att_t *att = ev == ZKL_LOCK_ACQUIRED ? lk->att : NULL;

    lk->cb(lk, (zkl_lock_event_t)ev, status, lk->arg);
    if (att != NULL && !c->closing)
        zkl__att_after_callback(att);
}

/* The handle outlives its client: the user frees it. */
static void lock_teardown(zkl__op_t *op)
{
    ((zkl_lock_t *)(void *)op)->c = NULL;
}

static const zkl__opclass_t lock_class = {
    .name = "lock", .deliver = lock_deliver, .teardown = lock_teardown,
};

/* Where a handle's extra room starts: after its path, aligned. */
static size_t extra_at(size_t pathlen)
{
    size_t at = sizeof(zkl_lock_t) + pathlen + 1, a = _Alignof(max_align_t);

    return (at + a - 1) / a * a;
}

void *zkl__lock_extra(const zkl_lock_t *lk)
{
    return (char *)(uintptr_t)lk + extra_at(strlen(lk->path));
}

int zkl__lock_new(zkl_lock_t **out, zkl_client_t *c, const char *path,
                  int kind, size_t extra, zkl_lock_cb cb, void *arg)
{
    zkl_lock_t *lk;
    size_t len;
    int rc;

    if (out == NULL)
        return ZKL_EINVAL;
    *out = NULL;
    if (c == NULL || cb == NULL || path == NULL)
        return ZKL_EINVAL;
    if ((rc = zkl__path_check(path, 0)) != ZKL_OK)
        return rc;
    if (c->freeing || c->closing)
        return ZKL_ECLOSED;
    len = strlen(path);
    /* No padding for a handle with no extra room: it is the common
     * one, and its block stays in the smallest size class. */
    lk = zkl__calloc(1, extra > 0 ? extra_at(len) + extra
                                  : sizeof *lk + len + 1);
    if (lk == NULL)
        return ZKL_ENOMEM;
    memcpy(lk->path, path, len + 1);
    lk->kind = (uint8_t)kind;
    lk->c = c;
    lk->cb = cb;
    lk->arg = arg;
    zkl__op_add(c, &lk->op, &lock_class);
    *out = lk;
    return ZKL_OK;
}

int zkl_rwlock_new(zkl_lock_t **read_out, zkl_lock_t **write_out,
                   zkl_client_t *c, const char *path, zkl_lock_cb cb,
                   void *arg)
{
    zkl_lock_t *r, *w;
    int rc;

    if (read_out != NULL)
        *read_out = NULL;
    if (write_out != NULL)
        *write_out = NULL;
    /* One pointer for both would keep only the write side's handle. */
    if (read_out == NULL || write_out == NULL || read_out == write_out)
        return ZKL_EINVAL;
    if ((rc = zkl_lock_new_kind(&r, c, path, ZKL_KIND_READ, cb, arg)) !=
        ZKL_OK)
        return rc;
    if ((rc = zkl_lock_new_kind(&w, c, path, ZKL_KIND_WRITE, cb, arg)) !=
        ZKL_OK) {
        zkl_lock_free(r);
        return rc;
    }
    r->pair = w;
    w->pair = r;
    *read_out = r;
    *write_out = w;
    return ZKL_OK;
}

zkl_lock_kind_t zkl_lock_kind(const zkl_lock_t *lk)
{
    return lk != NULL ? (zkl_lock_kind_t)lk->kind : ZKL_KIND_MUTEX;
}

/* ZooKeeper's default jute.maxbuffer is 1 MiB for the whole request. */
#define ZKL__DATA_MAX 1000000

int zkl_lock_set_data(zkl_lock_t *lk, const void *data, size_t len)
{
    zkl__data_t *copy = NULL;

    if (lk == NULL || len > ZKL__DATA_MAX || (data == NULL && len > 0))
        return ZKL_EINVAL;
    if (lk->c == NULL)
        return ZKL_ECLOSED;
    if (data != NULL) {
        if ((copy = zkl__malloc(sizeof *copy + len + 1)) == NULL)
            return ZKL_ENOMEM;
        copy->len = (int)len;
        memcpy(copy->bytes, data, len);
        copy->bytes[len] = '\0';
    }
    zkl__free(lk->data);
    lk->data = copy;
    return ZKL_OK;
}

int zkl_lock_set_revocable(zkl_lock_t *lk, int on)
{
    if (lk == NULL)
        return ZKL_EINVAL;
    if (lk->c == NULL)
        return ZKL_ECLOSED;
    lk->revocable = on != 0;
    return ZKL_OK;
}

int zkl_lock_notify_queued(zkl_lock_t *lk, int on)
{
    if (lk == NULL || lk->kind == ZKL_KIND_LEASE)
        return ZKL_EINVAL;
    if (lk->c == NULL)
        return ZKL_ECLOSED;
    lk->notify_queued = on != 0;
    return ZKL_OK;
}

int zkl_lock_set_reentrant(zkl_lock_t *lk, int on)
{
    if (lk == NULL || lk->kind == ZKL_KIND_LEASE ||
        (!on && lk->reentered > 0 && zkl_lock_is_held(lk)))
        return ZKL_EINVAL;
    if (lk->c == NULL)
        return ZKL_ECLOSED;
    lk->reentrant = on != 0;
    return ZKL_OK;
}

unsigned zkl_lock_hold_count(const zkl_lock_t *lk)
{
    return zkl_lock_is_held(lk) ? 1 + lk->reentered : 0;
}

/* A reentrant acquire or release answers from the loop like any other:
 * room for its event is made now, so it cannot be lost later. */
static int reenter(zkl_lock_t *lk, int ev)
{
    zkl_client_t *c = lk->c;

    if (zkl__evq_promise(c, 0) != ZKL_OK)
        return ZKL_ENOMEM;
    if (ev == ZKL_LOCK_ACQUIRED)
        lk->reentered++;
    else
        lk->reentered--;
    if (zkl__evq_push(c, &lk->op, ev, ZKL_OK) == ZKL_OK &&
        ev == ZKL_LOCK_ACQUIRED)
        c->stats.grants++;
    zkl__kick(c);
    return ZKL_OK;
}

/* 1 while lk's attempt is its zkl_lock_release() (goal DELETE). */
static int releasing(const zkl_lock_t *lk)
{
    return lk->att != NULL && lk->att->goal == ZKL__GOAL_DELETE;
}

static int usable(const zkl_lock_t *lk)
{
    return lk != NULL ? zkl__client_usable(lk->c) : ZKL_EINVAL;
}

void zkl_lock_free(zkl_lock_t *lk)
{
    zkl_client_t *c;

    if (lk == NULL)
        return;
    if ((c = lk->c) != NULL) {
        if (releasing(lk))
            zkl__att_detach(lk->att, 0, 0); /* the delete goes on */
        else if (lk->att != NULL)
            zkl__att_let_go(lk->att, 0, 0);
        zkl__op_remove(c, &lk->op);
        zkl__kick(c);
    }
    if (lk->pair != NULL)
        lk->pair->pair = NULL;
    if (ZKL__RECIPE(lk)->handle_free != NULL)
        ZKL__RECIPE(lk)->handle_free(lk);
    zkl__free(lk->data);
    zkl__free(lk);
}

int zkl_lock_acquire(zkl_lock_t *lk, long timeout_ms)
{
    int rc = usable(lk);

    if (rc != ZKL_OK)
        return rc;
    if (lk->att != NULL && lk->att->goal == ZKL__GOAL_HOLD &&
        lk->reentrant)
        return reenter(lk, ZKL_LOCK_ACQUIRED);
    if (lk->att != NULL)
        return lk->att->goal == ZKL__GOAL_HOLD ? ZKL_EHELD : ZKL_EBUSY;
    lk->reentered = 0;
    if (ZKL__RECIPE(lk)->acquire != NULL)
        return ZKL__RECIPE(lk)->acquire(lk, timeout_ms);
    /* A write behind its own pair's read would wait for itself. */
    if (lk->kind == ZKL_KIND_WRITE && lk->pair != NULL &&
        lk->pair->att != NULL && lk->pair->att->goal != ZKL__GOAL_DELETE)
        return ZKL_EUPGRADE;
    if (lk->kind == ZKL_KIND_READ && lk->pair != NULL &&
        lk->pair->att != NULL && lk->pair->att->goal == ZKL__GOAL_HOLD)
        lk->att = zkl__att_new_downgrade(lk->c, lk, lk->pair->att,
                                         timeout_ms);
    else
        lk->att = zkl__att_new(lk->c, lk, timeout_ms);
    if (lk->att == NULL)
        return ZKL_ENOMEM;
    zkl__kick(lk->c);
    return ZKL_OK;
}

int zkl_lock_cancel(zkl_lock_t *lk)
{
    int rc = usable(lk);

    if (rc != ZKL_OK)
        return rc;
    if (lk->att == NULL || lk->att->goal != ZKL__GOAL_ACQUIRE)
        return ZKL_ENOTPENDING;
    zkl__att_let_go(lk->att, ZKL_LOCK_FAILED, ZKL_ECANCELED);
    zkl__kick(lk->c);
    return ZKL_OK;
}

int zkl_lock_release(zkl_lock_t *lk)
{
    int rc = usable(lk);

    /* A client that authentication ended still lets go of what it
     * holds (its node goes with the session). */
    if (rc != ZKL_OK && rc != ZKL_EAUTH && rc != ZKL_ETLS)
        return rc;
    if (lk->att == NULL || lk->att->goal != ZKL__GOAL_HOLD)
        return ZKL_ENOTHELD;
    if (lk->reentered > 0)
        return reenter(lk, ZKL_LOCK_RELEASED);
    zkl__att_release(lk->att);
    zkl__kick(lk->c);
    return ZKL_OK;
}

int zkl_lock_is_held(const zkl_lock_t *lk)
{
    return lk != NULL && lk->c != NULL && lk->att != NULL &&
           lk->att->goal == ZKL__GOAL_HOLD;
}

zkl_lock_state_t zkl_lock_state(const zkl_lock_t *lk)
{
    const zkl__att_t *a;

    if (lk == NULL || lk->c == NULL || (a = lk->att) == NULL)
        return ZKL_STATE_IDLE;
    if (a->goal == ZKL__GOAL_DELETE)
        return ZKL_STATE_RELEASING;
    if (a->goal == ZKL__GOAL_HOLD)
        return ZKL_STATE_HELD;
    return (a->flags & ZKL__F_IN_TABLE) ? ZKL_STATE_QUEUED
                                         : ZKL_STATE_ACQUIRING;
}

int zkl_lock_token(const zkl_lock_t *lk, uint64_t *token)
{
    if (lk == NULL || token == NULL)
        return ZKL_EINVAL;
    if (!zkl_lock_is_held(lk))
        return ZKL_ENOTHELD;
    *token = (uint64_t)lk->att->czxid;
    return ZKL_OK;
}

const char *zkl_lock_path(const zkl_lock_t *lk)
{
    return lk != NULL ? lk->path : NULL;
}

int zkl_lock_node_name(const zkl_lock_t *lk, char *buf, size_t len)
{
    const zkl__att_t *a;

    /* Shorter than any name ("_c_<uuid>-lock-" and ten digits) is a
     * mistake whether or not there is a node now; a longer buffer is
     * judged by the name it would get. */
    if (lk == NULL || buf == NULL || len < ZKL__PREFIX_LEN + 6 + 10 + 1)
        return ZKL_EINVAL;
    a = lk->att;
    if (a == NULL || a->node != ZKL__NODE_KNOWN)
        return ZKL_ENOTPENDING;
    if (strlen(a->path + a->dirlen + 1) >= len)
        return ZKL_EINVAL;
    strcpy(buf, a->path + a->dirlen + 1);
    return ZKL_OK;
}
