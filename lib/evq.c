/* The callback queue: every user callback of a client waits here as
 * {op, event, status} until the client's drain (zkl__ops_drain) hands
 * it to its op's deliver(). Owns the ring c->evq (freed with the
 * client). Completions and API calls only queue, so a callback never
 * runs inside a call into the ZooKeeper client or inside the API call
 * that caused it. */
#include "internal.h"

/* Grows by half: room is set aside per pending attempt, so the ring's
 * size follows the number of attempts. */
static int evq_grow(zkl_client_t *c, size_t want)
{
    size_t n = c->evq_cap ? c->evq_cap : 16, i;
    zkl__event_t *q;

    if (want <= c->evq_cap)
        return ZKL_OK;
    while (n < want)
        n += n / 2;
    if ((q = zkl__malloc(n * sizeof *q)) == NULL)
        return ZKL_ENOMEM;
    for (i = 0; i < c->evq_len; i++)
        q[i] = c->evq[(c->evq_head + i) % c->evq_cap];
    zkl__free(c->evq);
    c->evq = q;
    c->evq_cap = n;
    c->evq_head = 0;
    return ZKL_OK;
}

int zkl__evq_promise(zkl_client_t *c, size_t k)
{
    if (evq_grow(c, c->evq_len + c->natts + c->nnotify + c->evq_promised +
                        k + 1 + ZKL__EVQ_SLACK) != ZKL_OK)
        return ZKL_ENOMEM;
    c->evq_promised += k;
    return ZKL_OK;
}

int zkl__evq_push(zkl_client_t *c, zkl__op_t *op, int ev, int status)
{
    zkl__event_t *e;

    if (c->evq_len == c->evq_cap && evq_grow(c, c->evq_len + 1) != ZKL_OK) {
        /* Past the room set aside per attempt and op: more events at
         * once than those plus ZKL__EVQ_SLACK. */
        ZKL_LOG(ZKL_LOG_ERROR, "zklock: out of memory queueing event");
        return ZKL_ENOMEM;
    }
    e = &c->evq[(c->evq_head + c->evq_len++) % c->evq_cap];
    e->op = op;
    e->ev = (uint8_t)ev;
    e->status = status;
    op->nqueued++;
    return ZKL_OK;
}

void zkl__evq_purge(zkl_client_t *c, zkl__op_t *op)
{
    size_t i;

    for (i = 0; i < c->evq_len && op->nqueued > 0; i++) {
        zkl__event_t *e = &c->evq[(c->evq_head + i) % c->evq_cap];

        if (e->op == op) {
            e->op = NULL;
            op->nqueued--;
        }
    }
}

int zkl__evq_pop(zkl_client_t *c, zkl__event_t *out)
{
    if (c->evq_len == 0)
        return 0;
    *out = c->evq[c->evq_head];
    c->evq_head = (c->evq_head + 1) % c->evq_cap;
    c->evq_len--;
    return 1;
}
