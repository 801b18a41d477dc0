/* The fence: owns c->fence, the one request whose fate the ZooKeeper
 * client left unknown, and the barrier that settles it.
 *
 * Why: in 3.8 every zoo_a*() call registers its completion before it
 * allocates the buffer that queues the request, and returns
 * ZMARSHALLINGERROR both when an allocation before the registration
 * failed (no completion will come) and when that last one did (the
 * completion stays queued, its request never leaves: the next reply
 * finds it in the way, the client drops the connection and fails every
 * queued completion, this one first; zookeeper_close() fails it too).
 * Neither outcome touches the server. The record that rides on such a
 * request must outlive a completion that may still come, and must learn
 * when it will not. Completions run in the order their requests were
 * queued, so the client sends a barrier (a read of "/") right behind it:
 * once the barrier's completion has run, so has every completion queued
 * before it. Until then the client holds its requests (zkl__is_connected
 * says no, and the senders that do not step check zkl__fence_up), so
 * nothing else of the fenced record's is queued between it and the
 * barrier, and its own count then tells whether the completion came.
 * Holding requests also keeps a second request from needing the fence.
 */
#include <stdint.h>

#include "internal.h"

/* How soon a barrier the ZooKeeper client refused is tried again: 10
 * ms, doubling with every try that may itself have been queued (each
 * needs a token of its own, ZKL__FENCE_TOKENS in all), so the tokens
 * last about 2.5 s of a client that cannot allocate 100 bytes before
 * the session is given up. */
#define ZKL__FENCE_RETRY_MS 10

static void barrier_done(int rc, const struct Stat *st, const void *data)
{
    const struct zkl__fence_tok *t = data;
    zkl_client_t *c = t->c;
    struct zkl__fence *f = &c->fence;

    (void)rc;
    (void)st;
    /* A barrier that the client reported as not queued but did queue:
     * it says nothing, the sure one behind it will. */
    if (!f->active || t != &f->tok[f->sure])
        return;
    zkl__fence_settle(c);
}

/* Tries to queue the barrier; 1 once one is surely queued. */
static int send_barrier(zkl_client_t *c)
{
    struct zkl__fence *f = &c->fence;
    int rc;

    if (f->tries >= ZKL__FENCE_TOKENS) {
        /* Every token may be queued: none can be told apart any more.
         * A new session settles everything (zookeeper_close() fails
         * every queued completion); until then nothing is sent. Holds
         * are told LOST (ZKL_ESESSION). Closing the old handle, still
         * connected, ends its session at once where the server
         * answers; renew_session() keeps that close from waiting for
         * an answer that does not come. */
        if (!c->expired) {
            ZKL_LOG(ZKL_LOG_ERROR, "zklock: the ZooKeeper client keeps "
                    "failing to queue requests: opening a new session");
            c->expired = 1;
        }
        return 0;
    }
    f->tok[f->tries].c = c;
    rc = zoo_aexists(c->zh, "/", 0, barrier_done, &f->tok[f->tries]);
    if (rc == ZOK) {
        f->sure = f->tries;
        f->retry_at = 0;
        c->stats.requests++;
        return 1;
    }
    if (zkl__rc_class(rc) == ZKL__RC_GONE) {
        /* A dead handle: closing it (a new session, or the client's
         * teardown) runs every queued completion, then settles. */
        f->retry_at = 0;
        return 0;
    }
    if (rc == ZMARSHALLINGERROR)
        f->tries++; /* that token may come back: not used again */
    f->retry_at = zkl__now_ms() + ((uint64_t)ZKL__FENCE_RETRY_MS << f->tries);
    return 0;
}

int zkl__fence_sent(zkl_client_t *c, int rc, zkl__fence_fn resolve,
                    void *rec, void *aux)
{
    struct zkl__fence *f = &c->fence;

    if (rc == ZOK)
        return ZKL__SENT;
    if (rc != ZMARSHALLINGERROR)
        return ZKL__REFUSED;
    if (f->active) {
        /* Senders check zkl__fence_up() first, so only one that does
         * not gets here: its record cannot be tracked, and stays pinned
         * for good rather than freed under a completion that may come. */
        ZKL_LOG(ZKL_LOG_ERROR, "zklock: a second request of unknown fate");
        return ZKL__MAYBE;
    }
    ZKL_LOG(ZKL_LOG_WARN, "zklock: the ZooKeeper client could not queue a "
            "request (out of memory?): holding requests until it is "
            "known whether its completion will come");
    f->active = 1;
    f->tries = 0;
    f->sure = ZKL__FENCE_TOKENS;
    f->resolve = resolve;
    f->rec = rec;
    f->aux = aux;
    c->stats.fences++;
    (void)send_barrier(c);
    return ZKL__MAYBE;
}

int zkl__fence_up(const zkl_client_t *c)
{
    return c->fence.active;
}

void zkl__fence_settle(zkl_client_t *c)
{
    struct zkl__fence *f = &c->fence;
    zkl__fence_fn resolve = f->resolve;
    void *rec = f->rec, *aux = f->aux;

    if (!f->active)
        return;
    f->active = 0;
    f->resolve = NULL;
    f->rec = f->aux = NULL;
    resolve(c, rec, aux);
    f->lifted = 1; /* the client's pass wakes what waited for it */
}

int zkl__fence_lifted(zkl_client_t *c)
{
    int was = c->fence.lifted;

    c->fence.lifted = 0;
    return was;
}

uint64_t zkl__fence_next(const zkl_client_t *c)
{
    const struct zkl__fence *f = &c->fence;

    return f->active && f->sure == ZKL__FENCE_TOKENS && c->zh != NULL
               ? f->retry_at
               : 0;
}

void zkl__fence_clock(zkl_client_t *c, uint64_t now)
{
    uint64_t at = zkl__fence_next(c);

    if (at != 0 && now >= at)
        (void)send_barrier(c);
}
