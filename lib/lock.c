/* The public lock handle: argument checks and the mapping of calls onto
 * attempts. The handle is the user's; attempts are the client's. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int zkl_lock_new(zkl_lock_t **out, zkl_client_t *c, const char *path,
                 zkl_lock_cb cb, void *arg)
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
    lk = zkl__calloc(1, sizeof *lk + len + 1);
    if (lk == NULL)
        return ZKL_ENOMEM;
    memcpy(lk->path, path, len + 1);
    lk->recipe = &zkl__mutex_recipe;
    lk->c = c;
    lk->cb = cb;
    lk->arg = arg;
    ZKL__PUSH(&c->locks, lk);
    *out = lk;
    return ZKL_OK;
}

/* 1 while lk's attempt is its zkl_lock_release() (goal DELETE). */
static int releasing(const zkl_lock_t *lk)
{
    return lk->att != NULL && lk->att->goal == ZKL__GOAL_DELETE;
}

static int usable(const zkl_lock_t *lk)
{
    if (lk == NULL)
        return ZKL_EINVAL;
    if (lk->c == NULL || lk->c->freeing || lk->c->closing)
        return ZKL_ECLOSED;
    return lk->c->dead;
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
        if (lk->nqueued > 0)
            zkl__purge_events(c, lk);
        ZKL__UNLINK(&c->locks, lk);
        zkl__kick(c);
    }
    zkl__free(lk);
}

int zkl_lock_acquire(zkl_lock_t *lk, long timeout_ms)
{
    int rc = usable(lk);

    if (rc != ZKL_OK)
        return rc;
    if (lk->att != NULL)
        return lk->att->goal == ZKL__GOAL_HOLD ? ZKL_EHELD : ZKL_EBUSY;
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

    if (rc != ZKL_OK && rc != ZKL_EAUTH)
        return rc;
    if (lk->att == NULL || lk->att->goal != ZKL__GOAL_HOLD)
        return ZKL_ENOTHELD;
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

    if (lk == NULL || buf == NULL || len < ZKL__NAME_MAX + 1)
        return ZKL_EINVAL;
    a = lk->att;
    if (a == NULL || a->node != ZKL__NODE_KNOWN)
        return ZKL_ENOTPENDING;
    strcpy(buf, a->path + a->dirlen + 1);
    return ZKL_OK;
}
