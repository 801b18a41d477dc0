/* The operation list: every operation of a client (see the contract at
 * the top of internal.h), driven ones first, and the walks through
 * which the client reaches their hooks. Owns no operation: each is its
 * owner's, and is only linked here. */
#include "internal.h"

static int driven(const zkl__opclass_t *k)
{
    return k->deadline != NULL || k->run != NULL || k->watch != NULL ||
           k->session_gone != NULL;
}

void zkl__op_add(zkl_client_t *c, zkl__op_t *op, const zkl__opclass_t *cls)
{
    op->cls = cls;
    op->nqueued = 0;
    if (driven(cls) || c->op_head == NULL) {
        op->prev = NULL;
        op->next = c->op_head;
        if (c->op_head != NULL)
            c->op_head->prev = op;
        else
            c->op_tail = op;
        c->op_head = op;
    } else {
        op->next = NULL;
        op->prev = c->op_tail;
        c->op_tail->next = op;
        c->op_tail = op;
    }
    c->ops_once += cls->once;
    c->ops_watching += cls->watch != NULL;
    c->evq_promised += cls->room;
}

void zkl__op_remove(zkl_client_t *c, zkl__op_t *op)
{
    if (op->nqueued > 0)
        zkl__evq_purge(c, op);
    if (op->prev != NULL)
        op->prev->next = op->next;
    else
        c->op_head = op->next;
    if (op->next != NULL)
        op->next->prev = op->prev;
    else
        c->op_tail = op->prev;
    op->prev = op->next = NULL;
    c->ops_once -= op->cls->once;
    c->ops_watching -= op->cls->watch != NULL;
    c->evq_promised -= op->cls->room;
}

void zkl__ops_timed(zkl_client_t *c, int delta)
{
    c->ops_timed += (size_t)(ssize_t)delta;
}

void zkl__ops_want_run(zkl_client_t *c)
{
    c->ops_work = 1;
}

/* Each walk takes the next op before the hook runs: a hook may end its
 * own op. */
void zkl__ops_expire(zkl_client_t *c, uint64_t now)
{
    zkl__op_t *op, *nx;

    if (c->ops_timed == 0)
        return;
    for (op = c->op_head; op != NULL && driven(op->cls); op = nx) {
        uint64_t at;

        nx = op->next;
        if (op->cls->deadline != NULL &&
            (at = op->cls->deadline(op)) != 0 && now >= at)
            op->cls->expire(op, now);
    }
}

uint64_t zkl__ops_next_deadline(const zkl_client_t *c)
{
    const zkl__op_t *op;
    uint64_t next = 0, at;

    if (c->ops_timed == 0)
        return 0;
    for (op = c->op_head; op != NULL && driven(op->cls); op = op->next)
        if (op->cls->deadline != NULL &&
            (at = op->cls->deadline(op)) != 0 && (next == 0 || at < next))
            next = at;
    return next;
}

/* A send of unknown fate raises the fence on the way: the ops not yet
 * run wait for it to come down (ops_work stays set). */
void zkl__ops_run(zkl_client_t *c)
{
    zkl__op_t *op, *nx;

    if (!c->ops_work || !zkl__is_connected(c))
        return;
    c->ops_work = 0;
    for (op = c->op_head; op != NULL && driven(op->cls); op = nx) {
        nx = op->next;
        if (zkl__fence_up(c)) {
            c->ops_work = 1;
            return;
        }
        if (op->cls->run != NULL)
            op->cls->run(op);
    }
}

void zkl__ops_watch(zkl_client_t *c, int type, const char *path)
{
    zkl__op_t *op, *nx;

    if (c->ops_watching == 0)
        return;
    for (op = c->op_head; op != NULL && driven(op->cls); op = nx) {
        nx = op->next;
        if (op->cls->watch != NULL)
            op->cls->watch(op, type, path);
    }
}

void zkl__ops_session_gone(zkl_client_t *c)
{
    zkl__op_t *op, *nx;

    for (op = c->op_head; op != NULL && driven(op->cls); op = nx) {
        nx = op->next;
        if (op->cls->session_gone != NULL)
            op->cls->session_gone(op);
    }
}

void zkl__ops_close(zkl_client_t *c)
{
    zkl__op_t *op, *nx;

    for (op = c->op_head; op != NULL; op = nx) {
        nx = op->next;
        if (op->cls->close != NULL)
            op->cls->close(op);
    }
}

void zkl__ops_teardown(zkl_client_t *c)
{
    zkl__op_t *op, *nx;

    for (op = c->op_head; op != NULL; op = nx) {
        nx = op->next;
        if (op->cls->teardown != NULL)
            op->cls->teardown(op);
    }
    c->op_head = c->op_tail = NULL;
}

void zkl__ops_drain(zkl_client_t *c)
{
    unsigned n = 0;
    zkl__event_t e;

    while (c->evq_len > 0) {
        if (++n > 1 && zkl__over_budget(c) && !c->closing)
            return; /* the rest next pass */
        zkl__evq_pop(c, &e);
        if (e.op == NULL)
            continue; /* purged: its op was freed */
        e.op->nqueued--;
        if (e.op->cls->once)
            zkl__op_remove(c, e.op); /* answered: deliver frees it */
        e.op->cls->deliver(e.op, e.ev, e.status);
        if (c->freeing && !c->closing)
            return;
    }
}
