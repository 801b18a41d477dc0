/* The attempt machine: one lock node from create to gone. Owns the
 * attempts (zkl__att_t) of a client, from zkl__att_new() to att_finish().
 *
 * ZooKeeper completions and watches only record what they learnt and put
 * the attempt on the client's ready queue; att_step() then sends the next
 * request. Completions may fire inside zookeeper_interest() and
 * zookeeper_close() as well as zookeeper_process(), so nothing here sends
 * from a completion except where the reply's borrowed data is needed (the
 * predecessor's name, a duplicate's name), and every request increments
 * `inflight` before it is sent: the attempt is never freed while a reply
 * can still name it.
 *
 * Every completion classifies its result once (zkl__rc_class): only a
 * definite refusal ends an attempt with an error; connection trouble of
 * any kind leaves the node MAYBE, to be found again by its uuid.
 *
 * This machine knows no kind of lock by name: what differs between them
 * (the tag, where the nodes live, which node blocks us, whether waiters
 * share a watch, and for a kind decided together with others when it
 * may create and when it holds) comes from its zkl__recipe_t, through
 * att_recipe(); see recipes.c. */
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static void create_done(int rc, const char *value, const struct Stat *st,
                        const void *data);
static void create_answered(zkl__att_t *a, int rc, const char *value,
                            const struct Stat *st);
static void list_done(int rc, const struct String_vector *sv,
                      const struct Stat *st, const void *data);
static void pred_watch_done(int rc, const char *value, int len,
                            const struct Stat *st, const void *data);
static void own_watch_done(int rc, const char *value, int len,
                           const struct Stat *st, const void *data);
static void sync_done(int rc, const char *value, const void *data);
static void delete_done(int rc, const void *data);
static void parent_done(int rc, const char *value, const void *data);
static void hand_on(zkl_client_t *c, const char *path, int lowest,
                    zkl__att_t *gone);
static void grant(zkl__att_t *a);

#define ATT(data) ((zkl__att_t *)(uintptr_t)(data))

/* A refused delete is tried again after this long. */
#define ZKL__RETRY_MS 200

static char *att_name(zkl__att_t *a)
{
    return a->path + a->dirlen + 1;
}

static const zkl__recipe_t *att_recipe(const zkl__att_t *a)
{
    return zkl__recipe(a->kind);
}

/* "<dir>/_c_<uuid><tag>", NUL where the sequence will go. */
static void att_new_uuid(zkl__att_t *a)
{
    const zkl__recipe_t *r = att_recipe(a);
    char *n = att_name(a);

    memcpy(n, "_c_", 3);
    zkl__uuid(n + 3);
    memcpy(n + ZKL__PREFIX_LEN, r->tag, r->taglen + 1);
}

static void att_schedule(zkl__att_t *a, int next_op);

void zkl__att_schedule(zkl__att_t *a, int next_op)
{
    att_schedule(a, next_op);
}

char *zkl__att_name(zkl__att_t *a)
{
    return att_name(a);
}

static void att_schedule(zkl__att_t *a, int next_op)
{
    zkl_client_t *c = a->c;

    a->next_op = (uint8_t)next_op;
    if (a->flags & ZKL__F_READY)
        return;
    a->flags |= ZKL__F_READY;
    a->ready_next = NULL;
    *c->ready_tail = a;
    c->ready_tail = &a->ready_next;
}

static int waits_on(const zkl__att_t *w, const char *path);

/* A waiter of this client waiting on the node at path, with or without
 * a server watch. */
static int waits_here(const zkl__att_t *w, const void *path)
{
    return w->goal == ZKL__GOAL_ACQUIRE && waits_on(w, path);
}

/* Takes out of cc's waiter table every waiter that waits on a's node,
 * onto list (through wnext). */
static zkl__att_t *take_waiters(zkl_client_t *cc, const zkl__att_t *a,
                                zkl__att_t *list)
{
    uint64_t h = zkl__hash(a->path);
    zkl__att_t *w;

    while ((w = zkl__wtab_find(cc, h, waits_here, a->path)) != NULL) {
        zkl__wtab_remove(cc, w);
        w->wnext = list;
        list = w;
    }
    return list;
}

/* The same from the waiter tables of this thread's other clients. Only
 * an attempt that such a waiter chose to wait on instead of a server
 * watch (peer_waited, see watch_pred) can have one that hears of its
 * node from nobody else; a waiter with a watch that is taken out too
 * finds nobody filed when its notification comes. */
static zkl__att_t *take_peers(zkl__att_t *a)
{
    zkl__att_t *list = NULL;
    zkl_client_t *cc;

    if (!a->peer_waited)
        return NULL;
    a->peer_waited = 0;
    for (cc = zkl__views_clients(a->c); cc != NULL; cc = cc->vnext)
        if (cc != a->c && !cc->closing)
            list = take_waiters(cc, a, list);
    return list;
}

/* The waiters in list list again; those of clients other than c are
 * kicked once this pass ends. */
static void list_again(zkl_client_t *c, zkl__att_t *list)
{
    zkl__att_t *w, *nx;

    for (w = list; w != NULL; w = nx) {
        nx = w->wnext;
        w->wnext = NULL;
        att_schedule(w, ZKL__NEXT_LIST);
        if (w->c != c)
            zkl__views_poke(w->c);
    }
}

/* a's node may be gone, or may stop being heard of (its session is
 * suspended, gone, or its client is): the waiters of other clients that
 * wait on it list again. */
static void peers_list(zkl__att_t *a)
{
    list_again(a->c, take_peers(a));
}

/* Every change of a->node goes through here. The own-node table holds a
 * chain attempt exactly while its node is KNOWN; a node that stops being
 * KNOWN wakes the waiters of this thread filed under it, since those
 * that wait on this attempt instead of a server watch (watch_pred) hear
 * of it from nobody else. Where the node is known gone the caller has
 * handed on already (hand_on) and nobody is left; a node that may still
 * be there (a refused delete) or was deleted by someone else sends them
 * to list again. */
static void att_set_node(zkl__att_t *a, int node)
{
    zkl_client_t *c = a->c;

    if (a->owned && node != ZKL__NODE_KNOWN) {
        zkl__otab_remove(c, a);
        if (!c->closing)
            list_again(c, take_waiters(c, a, NULL));
        peers_list(a);
    }
    a->node = (uint8_t)node;
    if (node == ZKL__NODE_KNOWN && att_recipe(a)->chain)
        zkl__otab_add(c, a);
}

static zkl__att_t *att_alloc(zkl_client_t *c, const char *dir, size_t dirlen,
                             int kind)
{
    /* Room for the longest name of its kind, no more: a waiter's bytes
     * are counted (every name written here passed zkl__own_name_len). */
    zkl__att_t *a = zkl__calloc(1, offsetof(zkl__att_t, path) + dirlen + 1 +
                                       ZKL__PREFIX_LEN +
                                       zkl__recipe(kind)->taglen +
                                       ZKL__SEQ_MAX_LEN + 1);

    if (a == NULL)
        return NULL;
    a->c = c;
    a->kind = (uint8_t)kind;
    a->heap_idx = UINT32_MAX;
    a->pred_seq = UINT32_MAX;
    a->dirlen = (uint16_t)dirlen;
    memcpy(a->path, dir, dirlen);
    a->path[dirlen] = '/';
    return a;
}

/* An acquire's timeout: 0 is a try-lock, which waits for a connection at
 * most one session timeout and then gives up with ZKL_ECONNLOSS. */
static int att_arm_timeout(zkl__att_t *a, long timeout)
{
    if (timeout == 0) {
        a->flags |= ZKL__F_TRYLOCK;
        timeout = zkl__session_timeout(a->c);
    }
    if (timeout > 0) {
        a->deadline = zkl__now_ms() + (uint64_t)timeout;
        return zkl__heap_push(a->c, a);
    }
    return ZKL_OK;
}

/* Room for an attempt's callbacks is taken when it starts, while
 * failing costs only that call: later, a failed allocation would lose a
 * callback the caller is owed. */
static zkl__att_t *att_start(zkl_client_t *c, zkl_lock_t *lk, int kind,
                             long timeout)
{
    const zkl__recipe_t *r = zkl__recipe(kind);
    char dir[ZKL_PATH_MAX + 1];
    size_t dirlen = strlen(lk->path);
    zkl__att_t *a;

    /* Some kinds' nodes live in a child of the lock path (a lease's:
     * zkl_lease_new() made sure it fits). */
    memcpy(dir, lk->path, dirlen);
    memcpy(dir + dirlen, r->subdir, r->subdirlen);
    dirlen += r->subdirlen;
    if ((a = att_alloc(c, dir, dirlen, kind)) == NULL)
        return NULL;
    a->lk = lk;
    att_new_uuid(a);
    a->goal = ZKL__GOAL_ACQUIRE;
    att_set_node(a, ZKL__NODE_NONE);
    /* Whether to tell its place is fixed now, like its other settings. */
    if (lk->notify_queued && r->tells_place)
        a->flags |= ZKL__F_NOTIFY;
    /* Counted before the room is set aside, so that it covers this
     * attempt's own events too. */
    c->natts++;
    c->nnotify += (a->flags & ZKL__F_NOTIFY) != 0;
    if (zkl__evq_promise(c, 0) != ZKL_OK ||
        att_arm_timeout(a, timeout) != ZKL_OK) {
        c->natts--;
        c->nnotify -= (a->flags & ZKL__F_NOTIFY) != 0;
        zkl__free(a);
        return NULL;
    }
    zkl__views_count(c, 1);
    ZKL__PUSH(&c->atts, a);
    return a;
}

zkl__att_t *zkl__att_new(zkl_client_t *c, zkl_lock_t *lk, long timeout)
{
    zkl__att_t *a = att_start(c, lk, lk->kind, timeout);

    if (a != NULL)
        att_schedule(a, ZKL__NEXT_CREATE);
    return a;
}

zkl__att_t *zkl__att_new_parked(zkl_client_t *c, zkl_lock_t *lk,
                                long timeout)
{
    zkl__att_t *a = att_start(c, lk, lk->kind, timeout);

    if (a != NULL)
        a->next_op = ZKL__NEXT_CREATE; /* once its decider says so */
    return a;
}

/* Curator's downgrade: the read node is created EPHEMERAL, not
 * sequential, under the sequence of the write node its pair holds, so it
 * sorts where that node does and no writer can come between; it holds
 * as soon as it exists. It is created only together with a check that
 * the write node still exists (send_downgrade), dies with the write
 * hold if that ends first (att_to_delete), and is never re-queued
 * elsewhere. */
zkl__att_t *zkl__att_new_downgrade(zkl_client_t *c, zkl_lock_t *lk,
                                   const zkl__att_t *w, long timeout)
{
    const char *seq = w->path + w->dirlen + 1 + ZKL__PREFIX_LEN +
                      att_recipe(w)->taglen;
    zkl__att_t *a = att_start(c, lk, lk->kind, timeout);

    if (a == NULL)
        return NULL;
    strcat(att_name(a), seq);
    a->flags |= ZKL__F_FIXED;
    att_schedule(a, ZKL__NEXT_CREATE);
    return a;
}

/* A duplicate of our node (a lost create reply, retried, found twice):
 * deleted by an attempt of its own, so that it is tracked, counted in
 * zkl_client_pending() and retried through connection loss like any
 * node of ours. */
static void delete_ghost_done(int rc, const void *data)
{
    (void)rc;
    (void)data;
}

static void ghost(zkl__att_t *owner, const char *name)
{
    zkl_client_t *c = owner->c;
    size_t len = zkl__own_name_len(name, att_recipe(owner));
    zkl__att_t *g;

    if (len == 0)
        return;
    ZKL_LOG(ZKL_LOG_INFO, "zklock: deleting duplicate node %.*s/%s",
            (int)owner->dirlen, owner->path, name);
    if ((g = att_alloc(c, owner->path, owner->dirlen, owner->kind)) == NULL) {
        /* Best effort without a record: it is ephemeral, so at worst it
         * lives as long as the session. */
        char p[ZKL_PATH_MAX + ZKL__NAME_MAX + 2];

        memcpy(p, owner->path, (size_t)owner->dirlen + 1);
        memcpy(p + owner->dirlen + 1, name, len + 1);
        /* Outside the window's count: a completion that the ZooKeeper
         * client may run although it said ZMARSHALLINGERROR then has
         * nothing to undo. */
        if (zoo_adelete(c->zh, p, -1, delete_ghost_done, c) == ZOK)
            c->stats.requests++;
        return;
    }
    memcpy(att_name(g), name, len + 1);
    g->goal = ZKL__GOAL_DELETE;
    att_set_node(g, ZKL__NODE_KNOWN);
    ZKL__PUSH(&c->atts, g);
    c->natts++;
    zkl__views_count(c, 1);
    att_schedule(g, ZKL__NEXT_DELETE);
}

/* Off the deadline heap, the waiter table and the queue view. */
static void att_unfile(zkl__att_t *a)
{
    zkl__heap_remove(a->c, a);
    zkl__wtab_remove(a->c, a);
    zkl__queue_leave(a->c, a);
}

void zkl__att_free(zkl__att_t *a)
{
    zkl_client_t *c = a->c;

    att_set_node(a, ZKL__NODE_NONE);
    att_unfile(a);
    if (a->flags & ZKL__F_STALLED)
        c->nstalled--;
    ZKL__UNLINK(&c->atts, a);
    c->natts--;
    zkl__views_count(c, -1);
    c->nnotify -= (a->flags & ZKL__F_NOTIFY) != 0;
    zkl__free(a);
}

void zkl__att_detach(zkl__att_t *a, int ev, int status)
{
    zkl_lock_t *lk = a->lk;

    if (lk == NULL)
        return;
    if (ev != 0)
        zkl__evq_push(a->c, &lk->op, ev, status);
    if (lk->att == a)
        lk->att = NULL;
    a->lk = NULL;
}

/* What a DELETE-goal attempt must do about its node: the step derives
 * it from the node alone, so no reply, refusal or reordering can leave
 * a node with nothing scheduled. */
static int delete_step_for(const zkl__att_t *a)
{
    switch ((enum zkl__node)a->node) {
    case ZKL__NODE_NONE:
        return ZKL__NEXT_NOTHING;
    case ZKL__NODE_MAYBE:
        return ZKL__NEXT_LIST; /* find it by uuid first */
    case ZKL__NODE_KNOWN:
        return ZKL__NEXT_DELETE;
    }
    return ZKL__NEXT_NOTHING;
}

/* Every attempt that stops holding does it here. A downgrade that has
 * not held yet dies with the write hold it stands on: once the write
 * node may go, a read node created under its sequence could come after
 * a writer that took the lock meanwhile. */
static void att_to_delete(zkl__att_t *a)
{
    zkl__att_t *d;

    if (a->goal == ZKL__GOAL_HOLD) {
        a->c->nholds--;
        if (a->lk != NULL && a->lk->pair != NULL &&
            (d = a->lk->pair->att) != NULL && (d->flags & ZKL__F_FIXED) &&
            d->goal == ZKL__GOAL_ACQUIRE)
            zkl__att_let_go(d, ZKL_LOCK_FAILED, ZKL_ECANCELED);
    }
    a->goal = ZKL__GOAL_DELETE;
}

/* The user is done with this attempt (timeout, cancel, failure, lost,
 * zkl_lock_free): tell them (ev != 0) and clean the node up in the
 * background. */
void zkl__att_let_go(zkl__att_t *a, int ev, int status)
{
    /* One that decides with others tells them it stops waiting (a
     * lease: that ends its whole set's acquire). */
    if (att_recipe(a)->abandon != NULL && a->goal == ZKL__GOAL_ACQUIRE &&
        a->lk != NULL)
        att_recipe(a)->abandon(a, ev != 0 ? status : ZKL_ECANCELED);
    att_to_delete(a); /* while it still knows its handle's pair */
    zkl__att_detach(a, ev, status);
    att_unfile(a);
    att_schedule(a, ZKL__NEXT_NOTHING);
}

void zkl__att_release(zkl__att_t *a)
{
    a->result = ZKL_OK;
    /* Stays filed under its own path: when the deletion is seen, the
     * waiter queued right behind it is known to hold the lock. */
    a->flags |= ZKL__F_WAS_HELD;
    a->flags &= (uint16_t)~ZKL__F_WATCH_OWN;
    att_to_delete(a);
    att_schedule(a, ZKL__NEXT_NOTHING);
}

/* Done when the node is gone and no reply is outstanding. */
static void att_finish(zkl__att_t *a)
{
    zkl__att_detach(a, ZKL_LOCK_RELEASED, a->result);
    zkl__att_free(a);
}

static void att_fail(zkl__att_t *a, int status)
{
    if (a->goal == ZKL__GOAL_DELETE) {
        if (a->lk != NULL)
            a->result = status; /* a release: reported by att_finish */
        return;
    }
    zkl__att_let_go(a,
                    a->goal == ZKL__GOAL_HOLD ? ZKL_LOCK_LOST
                                              : ZKL_LOCK_FAILED,
                    status);
}

/* A definite refusal: an acquire ends with its code; a hold keeps
 * holding (a refused watch only means a deletion by someone else goes
 * unseen until the next reconnect re-checks); a delete gives up, its
 * node left to the session's end. */
static void refused(zkl__att_t *a, int rc, const char *what)
{
    ZKL_LOG(ZKL_LOG_ERROR, "zklock: %s %s: %s", what, a->path, zerror(rc));
    if (a->goal == ZKL__GOAL_ACQUIRE)
        att_fail(a, zkl__from_zk(rc));
}

/* A hold re-reads its node; a delete's step finds its own way. */
static void retry_now(zkl__att_t *a)
{
    att_schedule(a, a->goal == ZKL__GOAL_HOLD ? ZKL__NEXT_CONFIRM
                                              : ZKL__NEXT_NOTHING);
}

/* Come back to a hold or a delete later (its request was refused by
 * the ZooKeeper client, e.g. out of memory). */
static void retry_later(zkl__att_t *a)
{
    zkl__heap_remove(a->c, a);
    a->deadline = zkl__now_ms() + ZKL__RETRY_MS;
    if (zkl__heap_push(a->c, a) != ZKL_OK)
        retry_now(a);
}

/* The ZooKeeper client refused to queue a request: nothing was sent. */
static void send_failed(zkl__att_t *a, int rc)
{
    zkl_client_t *c = a->c;

    a->next_op = ZKL__NEXT_NOTHING;
    if (zkl__rc_class(rc) == ZKL__RC_GONE) {
        /* A dead handle: the session handling resets every attempt. */
        if (zoo_state(c->zh) == ZOO_EXPIRED_SESSION_STATE)
            c->expired = 1;
        return;
    }
    ZKL_LOG(ZKL_LOG_WARN, "zklock: %s: request not sent: %s", a->path,
            zerror(rc));
    if (a->goal == ZKL__GOAL_ACQUIRE)
        att_fail(a, zkl__from_zk(rc));
    else
        retry_later(a); /* a hold or a delete does not give up */
}

static void counted(zkl__att_t *a)
{
    if (a->inflight++ == 0)
        a->sent_at = zkl__now_ms();
    a->c->stats.requests++;
    zkl__req_sent(a->c);
}

/* A request of this attempt's whose fate was unknown (fence.c), now
 * settled: the pin goes, and the request too if its completion never
 * came (nothing reached the server either way). */
static void att_resolve(zkl_client_t *c, void *rec, void *aux)
{
    zkl__att_t *a = rec;
    int came = a->inflight == 1;

    a->inflight--;
    /* Its completion decided, but for what was to follow it in the same
     * step and was not sent (the listing behind a create, the read
     * behind a sync): aux says what that is. */
    if (came && a->next_op == ZKL__NEXT_NOTHING)
        a->next_op = (uint8_t)(uintptr_t)aux;
    if (!came) {
        a->inflight--;
        zkl__req_done(c);
        if (!c->closing)
            send_failed(a, ZMARSHALLINGERROR);
    }
    if (a->inflight == 0 && !c->closing)
        att_schedule(a, a->next_op);
}

/* Accounts for a request carrying this attempt (see fence.c): counted
 * in flight when the ZooKeeper client took it, handed to send_failed()
 * when it surely did not; when that is unknown, counted and pinned
 * until att_resolve() knows. 1 when sent: the caller goes on. */
static int sent_as(zkl__att_t *a, int rc, zkl__fence_fn resolve, void *aux)
{
    switch (zkl__fence_sent(a->c, rc, resolve, a, aux)) {
    case ZKL__SENT:
        counted(a);
        return 1;
    case ZKL__MAYBE:
        counted(a);
        a->inflight++; /* the pin */
        return 0;
    default:
        send_failed(a, rc);
        return 0;
    }
}

/* then: what the step still has to do once this request has been
 * answered, if its answer does not say (see att_resolve). */
static int sent(zkl__att_t *a, int rc, int then)
{
    return sent_as(a, rc, att_resolve, (void *)(uintptr_t)then);
}

/* Waits, as a disconnected attempt does, to do op once the client sends
 * again: 1 while the connection is down or requests are held (a request
 * of unknown fate, a server that throttles). The step checks this
 * itself; the sends that do not come from the step check it here. */
static void mark_stalled(zkl__att_t *a, int op)
{
    if (op != ZKL__NEXT_NOTHING)
        a->next_op = (uint8_t)op;
    if (!(a->flags & ZKL__F_STALLED)) {
        a->flags |= ZKL__F_STALLED;
        a->c->nstalled++;
    }
}

static int stall(zkl__att_t *a, int op)
{
    if (zkl__is_connected(a->c))
        return 0;
    mark_stalled(a, op);
    return 1;
}

/* The sends that do not come from the step (a listing's answer sets a
 * watch, a release reads ahead for the waiter behind it) go to the
 * ZooKeeper client even while it is disconnected (it queues them), but
 * not while a request's fate is unknown (fence.c): then the attempt
 * does op once it is known. */
static int fenced(zkl__att_t *a, int op)
{
    if (!zkl__fence_up(a->c))
        return 0;
    mark_stalled(a, op);
    return 1;
}

/* Every completion starts here: one reply fewer in flight, and what a
 * server answer says about how recently the server heard from us. A
 * shared listing's answer comes once per attempt that joined it:
 * listing.c takes each out of the window's count. */
static zkl__att_t *joined_answered(zkl__att_t *a, int rc)
{
    a->inflight--;
    if (!a->c->closing)
        zkl__on_answer(a->c, rc, a->sent_at);
    return a;
}

static zkl__att_t *answered(const void *data, int rc)
{
    zkl__att_t *a = ATT(data);

    zkl__req_done(a->c);
    return joined_answered(a, rc);
}

/* After a reply: go on once the last outstanding reply is in. */
static void after_reply(zkl__att_t *a, int next_op)
{
    if (next_op != ZKL__NEXT_NOTHING || a->next_op == ZKL__NEXT_NOTHING)
        a->next_op = (uint8_t)next_op;
    if (a->inflight == 0 && !a->c->closing)
        att_schedule(a, a->next_op);
}

void zkl__att_after_reply(zkl__att_t *a, int next_op)
{
    after_reply(a, next_op);
}

static void joined_done(int rc, const struct String_vector *sv,
                        const struct Stat *st, zkl__att_t *a);
static void joined_unsent(zkl__att_t *a, int rc);
static const zkl__listing_to_t joined = {joined_done, joined_unsent};

/* Joins the listing of its lock path that the pass sends at its end
 * (listing.c); alone, at once, when there is no memory for that. */
static void send_list(zkl__att_t *a)
{
    if (fenced(a, ZKL__NEXT_LIST))
        return;
    if (zkl__listing_join(a->c, a, &joined) == ZKL_OK) {
        /* In the window from now: the pass's steps that come after it
         * must see it. */
        zkl__req_sent(a->c);
        if (a->inflight++ == 0)
            a->sent_at = zkl__now_ms();
        return;
    }
    if (sent(a, zkl__listing_send(a, list_done, a), ZKL__NEXT_NOTHING))
        a->c->stats.listings++;
}

/* What our node carries: the handle's data, else Curator's default (the
 * local address; nothing for a revocable holder, whose data is where a
 * revocation request lands). */
static void node_data(const zkl__att_t *a, const char **data, int *len)
{
    const zkl_lock_t *lk = a->lk;

    *data = NULL;
    *len = -1;
    if (lk == NULL)
        return;
    if (lk->data != NULL) {
        *data = lk->data->bytes;
        *len = lk->data->len;
    } else if (lk->revocable) {
        *data = "";
        *len = 0;
    } else if (a->c->local_ip[0] != '\0') {
        *data = a->c->local_ip;
        *len = (int)strlen(a->c->local_ip);
    }
}

/* A downgrade's create, in one transaction with a check that the write
 * node it takes the place of still exists: that node may have been
 * deleted by someone else, and a writer behind it may hold already,
 * before this client could hear of it. Its whole name is known, so no
 * listing is needed to place it. The results live until the reply. */
struct zkl__downgrade_req {
    zkl__att_t *a;
    zoo_op_result_t res[2];
    char made[ZKL_PATH_MAX + ZKL__NAME_MAX + 2];
};

static void downgrade_done(int rc, const void *data)
{
    struct zkl__downgrade_req *d = (struct zkl__downgrade_req *)(uintptr_t)data;

    /* ZNONODE: the write node is gone (the check failed); ZNODEEXISTS:
     * ours, from an earlier try whose reply was lost, and the check
     * passed just now. A multi returns no Stat: the czxid comes from
     * the own-node read before the grant. */
    create_answered(d->a, rc, rc == ZOK ? d->made : NULL, NULL);
    zkl__free(d);
}

/* d is freed by downgrade_done(), which ran if a has only the pin. */
static void downgrade_resolve(zkl_client_t *c, void *rec, void *aux)
{
    zkl__att_t *a = rec;

    if (a->inflight > 1)
        zkl__free(aux);
    att_resolve(c, a, (void *)(uintptr_t)ZKL__NEXT_NOTHING);
}

static void send_downgrade(zkl__att_t *a, const char *data, int len)
{
    zkl_lock_t *lk = a->lk;
    const zkl__att_t *w = lk != NULL && lk->pair != NULL ? lk->pair->att
                                                          : NULL;
    struct zkl__downgrade_req *d;
    zoo_op_t ops[2];
    int rc;

    if (w == NULL || w->goal != ZKL__GOAL_HOLD ||
        w->node != ZKL__NODE_KNOWN) {
        att_fail(a, ZKL_ECANCELED); /* see att_to_delete */
        return;
    }
    if ((d = zkl__calloc(1, sizeof *d)) == NULL) {
        att_fail(a, ZKL_ENOMEM);
        return;
    }
    d->a = a;
    zoo_check_op_init(&ops[0], w->path, -1);
    zoo_create_op_init(&ops[1], a->path, data, len, &a->c->acl,
                       ZOO_EPHEMERAL, d->made, (int)sizeof d->made);
    rc = zoo_amulti(a->c->zh, 2, ops, d->res, downgrade_done, d);
    switch (zkl__fence_sent(a->c, rc, downgrade_resolve, a, d)) {
    case ZKL__SENT:
        counted(a);
        att_set_node(a, ZKL__NODE_MAYBE);
        break;
    case ZKL__MAYBE:
        counted(a);
        a->inflight++; /* the pin */
        break;
    case ZKL__REFUSED:
        zkl__free(d);
        send_failed(a, rc);
        break;
    }
}

static void send_create(zkl__att_t *a, int with_parents)
{
    zhandle_t *zh = a->c->zh;
    const char *data;
    int len;

    if (att_recipe(a)->may_create != NULL && !att_recipe(a)->may_create(a)) {
        /* Its decider wakes it (a lease: when the mutex is ours). */
        a->next_op = (uint8_t)(with_parents ? ZKL__NEXT_PARENTS
                                            : ZKL__NEXT_CREATE);
        return;
    }
    if (with_parents) {
        /* Ancestors first, pipelined: the server answers in order, so the
         * create below sees them. ZNODEEXISTS is the common answer. */
        char tmp[ZKL_PATH_MAX + 1];
        size_t i;

        memcpy(tmp, a->path, a->dirlen);
        tmp[a->dirlen] = '\0';
        for (i = 1; i <= a->dirlen; i++) {
            if (i == a->dirlen || tmp[i] == '/') {
                char save = tmp[i];

                tmp[i] = '\0';
                if (!sent(a, zoo_acreate(zh, tmp, NULL, -1, &a->c->acl,
                                         ZOO_CONTAINER, parent_done, a),
                          ZKL__NEXT_PARENTS))
                    return;
                tmp[i] = save;
            }
        }
    }
    /* A new node, so no view of the queue covers it yet, and its place
     * is still to be told. */
    zkl__queue_leave(a->c, a);
    a->flags &= (uint16_t)~(ZKL__F_AT_HEAD | ZKL__F_TOLD_QUEUED);
    node_data(a, &data, &len);
    if (a->flags & ZKL__F_FIXED) {
        send_downgrade(a, data, len);
        return;
    }
    att_name(a)[ZKL__PREFIX_LEN + att_recipe(a)->taglen] = '\0';
    if (!sent(a, zoo_acreate2(zh, a->path, data, len, &a->c->acl,
                              ZOO_EPHEMERAL_SEQUENTIAL, create_done, a),
              ZKL__NEXT_LIST))
        return;
    att_set_node(a, ZKL__NODE_MAYBE); /* until the reply says otherwise */
    /* Pipelined right behind the create: the listing already contains
     * our node, so an uncontended acquire costs one round trip. */
    send_list(a);
}

/* Reads our own node. A hold's read also watches it, for a deletion by
 * someone else. A waiter's read before its grant does not: the grant
 * arms that watch once the callbacks have run, and only if the lock is
 * still held then (see decide), so a holder that releases at once leaves
 * no watch behind whose notification its own delete would trigger. In
 * one session that notification would be merged with the one the next
 * waiter's watch on this node gets; across sessions it would be a
 * second wake-up per release. */
static void send_confirm(zkl__att_t *a)
{
    int rc;

    if (fenced(a, ZKL__NEXT_CONFIRM))
        return;
    /* Put at the head by what another client heard (sync_first), maybe
     * from another server: each server applies the committed changes in
     * order but at its own pace, and ours may not have applied that
     * one yet, nor a deletion of our node before it, so a read alone
     * could say "there" for a node that is gone. A sync first makes our
     * server catch up with the leader; the read behind it sees every
     * change committed before (the server answers a session's requests
     * in order). Not needed when the servers are one server
     * (zkl__views_solo), where it would wait for the next group commit. */
    if (a->goal == ZKL__GOAL_ACQUIRE && a->sync_first &&
        !zkl__views_solo(a->c) &&
        !sent(a, zoo_async(a->c->zh, "/", sync_done, a), ZKL__NEXT_CONFIRM))
        return;
    rc = a->goal == ZKL__GOAL_HOLD
             ? zoo_awget(a->c->zh, a->path, zkl__watcher, a->c,
                         own_watch_done, a)
             : zoo_aget(a->c->zh, a->path, 0, own_watch_done, a);
    if (sent(a, rc, ZKL__NEXT_NOTHING))
        a->flags |= ZKL__F_CONFIRMING;
}

/* A local waiter queued right behind path, idle until it is woken. */
static int next_in_line(const zkl__att_t *w, const void *path)
{
    return att_recipe(w)->chain && w->goal == ZKL__GOAL_ACQUIRE &&
           w->node == ZKL__NODE_KNOWN &&
           w->inflight == 0 && w->next_op == ZKL__NEXT_NOTHING &&
           !(w->flags & ZKL__F_READY) && waits_on(w, path);
}

/* A local waiter of the same lock path and kind waiting for its
 * children to change. */
static int children_waiter(const zkl__att_t *w, const void *arg)
{
    const zkl__att_t *a = arg;

    return w->kind == a->kind && w->goal == ZKL__GOAL_ACQUIRE &&
           w->inflight == 0 && !(w->flags & ZKL__F_READY) &&
           w->dirlen == a->dirlen &&
           memcmp(w->path, a->path, a->dirlen) == 0;
}

static void send_delete(zkl__att_t *a)
{
    zkl__att_t *w;

    if (!sent(a, zoo_adelete(a->c->zh, a->path, -1, delete_done, a),
              ZKL__NEXT_NOTHING))
        return;
    /* Releasing a hold: the local waiter right behind it must read its
     * own node before it may hold (see hand_on). Sent now, behind the
     * delete, its answer comes right after the delete's, so the handoff
     * still takes one round trip. */
    if ((a->flags & ZKL__F_WAS_HELD) &&
        (w = zkl__wtab_find(a->c, zkl__hash(a->path), next_in_line,
                            a->path)) != NULL)
        send_confirm(w);
    /* Giving back a node that waiters wait on as a child (a lease): a
     * local waiter for the children to change lists them right behind
     * the delete, without waiting for the watch's notification (which
     * then finds nobody). */
    if ((a->flags & ZKL__F_WAS_HELD) && att_recipe(a)->waits_on_children &&
        (w = zkl__wtab_find(a->c, zkl__hashn(a->path, a->dirlen),
                            children_waiter, a)) != NULL) {
        zkl__wtab_remove(a->c, w);
        send_list(w);
    }
}

/* Another waiter of ours of a's kind, with its watch set on the very
 * node a is about to watch (same lock path, same sequence number). */
static int same_watch(const zkl__att_t *w, const void *arg)
{
    const zkl__att_t *a = arg;

    return w != a && w->kind == a->kind &&
           w->goal == ZKL__GOAL_ACQUIRE && w->pred_seq == a->pred_seq &&
           w->dirlen == a->dirlen && memcmp(w->path, a->path, a->dirlen) == 0;
}

/* Whether a waiter of another client may wait on an attempt of pc
 * without a server watch: pc hears of every end of its nodes while it
 * is connected and not going away. */
static int peer_heard(zkl_client_t *pc)
{
    return zkl__is_connected(pc) && zkl__client_usable(pc) == ZKL_OK;
}

/* Sends the watch on the predecessor, while its name is still at hand.
 * Readers queued behind one writer all watch it: the server keeps one
 * watch per session and node, and its notification wakes every attempt
 * filed under that node, so a reader whose node's watch another reader
 * of this client has set already only files itself. */
static void watch_pred(zkl__att_t *a, const char *pred)
{
    char stackbuf[ZKL_PATH_MAX + 128];
    size_t plen = strlen(pred), need = (size_t)a->dirlen + 1 + plen + 1;
    char *p = need <= sizeof stackbuf ? stackbuf : zkl__malloc(need);
    zkl__att_t *q;
    int rc;

    if (fenced(a, ZKL__NEXT_LIST)) {
        if (p != stackbuf)
            zkl__free(p);
        return;
    }
    if (p == NULL) {
        after_reply(a, ZKL__NEXT_LIST); /* try again later */
        return;
    }
    memcpy(p, a->path, (size_t)a->dirlen + 1);
    memcpy(p + a->dirlen + 1, pred, plen + 1);
    a->whash = zkl__hash(p);
    if (att_recipe(a)->chain && (q = zkl__otab_find(a->c, p)) != NULL &&
        q != a && (q->c == a->c || peer_heard(q->c)) &&
        zkl__wtab_add(a->c, a, a->whash) == ZKL_OK) {
        /* A node of this process: its attempt wakes us when it goes
         * (hand_on) or stops being known (att_set_node), so no request
         * and no server watch, which the ZooKeeper client would keep
         * (~250 bytes) for as long as we wait, and whose notification
         * would cost a cross-session handoff ~110 bytes more. The node
         * of another client of this thread only while that client is
         * connected: its session cannot end unheard then, and once its
         * connection drops (on_suspended) or its session or client is
         * gone we list again and watch. A deletion by someone else is
         * seen late: when that attempt reads its own node at its turn,
         * or, held, when its own-node watch fires. */
        if (q->c != a->c)
            q->peer_waited = 1;
        if (p != stackbuf)
            zkl__free(p);
        return;
    }
    if (att_recipe(a)->shared_blocker && a->pred_seq != UINT32_MAX &&
        zkl__wtab_find(a->c, a->whash, same_watch, a) != NULL &&
        zkl__wtab_add(a->c, a, a->whash) == ZKL_OK) {
        if (p != stackbuf)
            zkl__free(p);
        return;
    }
    rc = zoo_awget(a->c->zh, p, zkl__watcher, a->c, pred_watch_done, a);
    if (p != stackbuf)
        zkl__free(p);
    sent(a, rc, ZKL__NEXT_NOTHING);
}

/* The node this attempt waited on is gone. In one round trip whatever
 * the queue's depth: with nothing left below (as far as the queue view
 * knows), make sure our own node still exists (someone else may have
 * deleted it) and hold the lock; below us the node of another of our
 * waiters: watch it; anything else: list. */
static void descend(zkl__att_t *a)
{
    const char *name = NULL;
    uint32_t seq = UINT32_MAX;
    int r = zkl__queue_below(a->c, a, a->pred_seq, &name, &seq);

    if (r < 0 || a->node != ZKL__NODE_KNOWN ||
        (r == 0 && !(a->flags & ZKL__F_SEQ_SAFE))) {
        send_list(a);
    } else if (r == 0) {
        /* The view's "gone" may come from any client of the thread. */
        a->flags |= ZKL__F_AT_HEAD;
        a->sync_first = 1;
        send_confirm(a);
    } else {
        a->pred_seq = seq;
        watch_pred(a, name);
    }
}

static void att_step(zkl__att_t *a)
{
    zkl_client_t *c = a->c;
    int op = a->next_op;

    if (a->inflight > 0 || c->closing)
        return; /* the last reply re-schedules */
    if (a->goal == ZKL__GOAL_DELETE) {
        op = delete_step_for(a);
        if (op == ZKL__NEXT_NOTHING) {
            att_finish(a);
            return;
        }
        if (a->heap_idx != UINT32_MAX)
            return; /* a refused send: retried at its deadline */
    }
    if (op == ZKL__NEXT_NOTHING)
        return;
    if (stall(a, op))
        return;
    if (a->flags & ZKL__F_STALLED) {
        a->flags &= (uint16_t)~ZKL__F_STALLED;
        c->nstalled--;
    }
    a->next_op = ZKL__NEXT_NOTHING;
    switch ((enum zkl__next)op) {
    case ZKL__NEXT_CREATE:
        send_create(a, 0);
        break;
    case ZKL__NEXT_PARENTS:
        send_create(a, 1);
        break;
    case ZKL__NEXT_LIST:
        send_list(a);
        break;
    case ZKL__NEXT_DELETE:
        send_delete(a);
        break;
    case ZKL__NEXT_CONFIRM:
        send_confirm(a);
        break;
    case ZKL__NEXT_DESCEND:
        descend(a);
        break;
    case ZKL__NEXT_RECIPE:
        att_recipe(a)->step(a);
        break;
    case ZKL__NEXT_NOTHING:
        break;
    }
}

/* The user saw ZKL_LOCK_ACQUIRED: if still held, watch our node now. */
void zkl__att_after_callback(zkl__att_t *a)
{
    if (!(a->flags & ZKL__F_WATCH_OWN))
        return;
    a->flags &= (uint16_t)~ZKL__F_WATCH_OWN;
    if (a->goal == ZKL__GOAL_HOLD && a->next_op == ZKL__NEXT_NOTHING)
        att_schedule(a, ZKL__NEXT_CONFIRM);
}

/* Pacing. The server answers one session's requests in order, the
 * keepalive that proves a hold alive among them: every request ahead
 * of it delays it. New work (an acquire's create, a waiter's listing or
 * descent) is sent only while the client's outstanding requests leave
 * room for it in the window; the rest waits on c->paced, in order, and
 * goes as answers come back. Holds and releases never wait there (a
 * grant's read, a delete, the keepalive), and neither does a reply's
 * follow-up (a watch set from a listing's answer replaces the listing
 * in the count). A paced attempt that is cancelled meanwhile keeps its
 * place until its turn, then deletes: one window's drain at most. */
static int paced_step(const zkl__att_t *a)
{
    if (a->goal != ZKL__GOAL_ACQUIRE)
        return 0;
    switch ((enum zkl__next)a->next_op) {
    case ZKL__NEXT_CREATE:
    case ZKL__NEXT_PARENTS:
    case ZKL__NEXT_LIST:
    case ZKL__NEXT_DESCEND:
        return 1;
    default:
        return 0;
    }
}

/* Requests the step sends at most: a create and its listing; the lock
 * path's ancestors too. */
static size_t step_cost(const zkl__att_t *a)
{
    size_t n = 2, i;

    if (a->next_op == ZKL__NEXT_PARENTS)
        for (i = 1; i <= a->dirlen; i++)
            n += i == a->dirlen || a->path[i] == '/';
    else if (a->next_op != ZKL__NEXT_CREATE)
        n = 1;
    return n;
}

/* New work leaves a sixteenth of the window free: the keepalive and the
 * grants, releases and watches that follow answers fit in it, so the
 * count stays within the window unless that many are in flight at once. */
static int has_room(const zkl_client_t *c, const zkl__att_t *a)
{
    return c->outstanding == 0 ||
           c->outstanding + step_cost(a) + c->window / 16 <= c->window;
}

int zkl__paced_due(const zkl_client_t *c)
{
    return c->paced != NULL &&
           (!paced_step(c->paced) || has_room(c, c->paced));
}

static void park(zkl_client_t *c, zkl__att_t *a)
{
    a->flags |= ZKL__F_READY; /* on c->paced instead of c->ready */
    a->ready_next = NULL;
    *c->paced_tail = a;
    c->paced_tail = &a->ready_next;
    c->stats.paced_total++;
    if (++c->npaced > c->stats.paced_max)
        c->stats.paced_max = c->npaced;
}

static zkl__att_t *pop(zkl__att_t **head, zkl__att_t ***tail)
{
    zkl__att_t *a = *head;

    *head = a->ready_next;
    if (*head == NULL)
        *tail = head;
    a->flags &= (uint16_t)~ZKL__F_READY;
    return a;
}

void zkl__run_ready(zkl_client_t *c)
{
    unsigned n = 0;

    if (c->stepping)
        return;
    c->stepping = 1;
    while (c->ready != NULL) {
        if (++n > 1 && zkl__over_budget(c))
            break; /* the rest next pass */
        zkl__att_t *a = pop(&c->ready, &c->ready_tail);

        if (paced_step(a) && zkl__is_connected(c) &&
            (c->paced != NULL || !has_room(c, a)))
            park(c, a);
        else
            att_step(a);
    }
    /* Then what waited, in order, as far as the window allows (a step
     * whose attempt was cancelled while it waited goes at once). */
    while (zkl__paced_due(c)) {
        if (++n > 1 && zkl__over_budget(c))
            break;
        c->npaced--;
        att_step(pop(&c->paced, &c->paced_tail));
    }
    zkl__listing_flush(c);
    c->stepping = 0;
}

/* A downgrade's create, with no listing behind it: its node sorts with
 * the write node its pair holds, so it holds once it exists, after the
 * own-node read that tells its czxid and that this session owns it.
 * ZNODEEXISTS is our own create applied before a lost reply (the uuid
 * is fresh). */
static void fixed_created(zkl__att_t *a, int rc)
{
    if (zkl__rc_class(rc) == ZKL__RC_NONODE) {
        /* The check failed: the write node is gone; its hold hears of it
         * by its own watch. But an earlier try whose answer was lost
         * may have made our node, which would block every writer: its
         * whole name is known, so it is deleted by name (ZNONODE when
         * it was never made). */
        att_set_node(a, ZKL__NODE_KNOWN);
        att_fail(a, ZKL_ENODEGONE);
        after_reply(a, ZKL__NEXT_NOTHING);
        return;
    }
    if (zkl__rc_class(rc) == ZKL__RC_EXISTS)
        att_set_node(a, ZKL__NODE_KNOWN);
    switch ((enum zkl__node)a->node) {
    case ZKL__NODE_KNOWN:
        a->flags |= ZKL__F_AT_HEAD;
        after_reply(a, ZKL__NEXT_CONFIRM);
        return;
    case ZKL__NODE_MAYBE:
        after_reply(a, ZKL__NEXT_CREATE);
        return;
    case ZKL__NODE_NONE:
        break;
    }
    after_reply(a, ZKL__NEXT_NOTHING);
}

static void create_done(int rc, const char *value, const struct Stat *st,
                        const void *data)
{
    create_answered(ATT(data), rc, value, st);
}

static void create_answered(zkl__att_t *a, int rc, const char *value,
                            const struct Stat *st)
{
    const char *name;

    answered(a, rc);
    if (a->c->closing)
        return;
    switch (zkl__rc_class(rc)) {
    case ZKL__RC_OK:
        name = value != NULL ? strrchr(value, '/') : NULL;
        if (name != NULL && zkl__own_name_len(name + 1, att_recipe(a)) > 0 &&
            strncmp(name + 1, att_name(a), ZKL__PREFIX_LEN) == 0) {
            strcpy(att_name(a), name + 1);
            att_set_node(a, ZKL__NODE_KNOWN);
            a->czxid = st != NULL ? st->czxid : 0;
            a->parent_rounds = 0;
            if (a->goal == ZKL__GOAL_ACQUIRE)
                a->result = ZKL_OK; /* an ancestor refusal did not matter */
        } else {
            /* A name we cannot read: look. */
            att_set_node(a, ZKL__NODE_MAYBE);
        }
        break;
    case ZKL__RC_NONODE:
        /* No parent: the listing says so too. A downgrade's check
         * failed instead, and an earlier try whose answer was lost may
         * have made its node: known by name, so deleted by name, also
         * when its hold ended first (see fixed_created). */
        att_set_node(a, (a->flags & ZKL__F_FIXED) ? ZKL__NODE_KNOWN
                                                  : ZKL__NODE_NONE);
        break;
    case ZKL__RC_EXISTS:
    case ZKL__RC_CONNLOSS:
        att_set_node(a, ZKL__NODE_MAYBE); /* the listing will tell */
        break;
    case ZKL__RC_GONE:
        att_set_node(a, ZKL__NODE_NONE);
        break;
    case ZKL__RC_REFUSED:
        att_set_node(a, ZKL__NODE_NONE);
        refused(a, rc, "create under");
        break;
    }
    if ((a->flags & ZKL__F_FIXED) && a->goal == ZKL__GOAL_ACQUIRE) {
        fixed_created(a, rc);
        return;
    }
    /* The pipelined listing, if sent, decides. */
    after_reply(a, ZKL__NEXT_NOTHING);
}

/* This attempt holds the lock now. It is filed under its own path so
 * that the deletion of its node, however learnt, hands the lock on
 * locally (see hand_on). A bound on the server's last touch too old to
 * trust would make this grant a LOST at once: read our node first, which
 * refreshes it. */
static void grant(zkl__att_t *a)
{
    if (!zkl__touch_fresh(a->c)) {
        after_reply(a, ZKL__NEXT_CONFIRM);
        return;
    }
    zkl__att_grant(a);
}

void zkl__att_grant(zkl__att_t *a)
{
    a->sync_first = 0;
    /* Nothing below our node is alive now, and we need no view. */
    if (att_recipe(a)->chain)
        zkl__queue_trim(a->c, a, zkl__seq_of(att_name(a)));
    zkl__queue_leave(a->c, a);
    a->flags &= (uint16_t)~ZKL__F_AT_HEAD;
    a->goal = ZKL__GOAL_HOLD;
    a->c->nholds++;
    a->flags |= ZKL__F_WATCH_OWN;
    a->pred_seq = UINT32_MAX;
    zkl__heap_remove(a->c, a);
    zkl__wtab_add(a->c, a, zkl__hash(a->path));
    if (zkl__evq_push(a->c, &a->lk->op, ZKL_LOCK_ACQUIRED, ZKL_OK) == ZKL_OK)
        a->c->stats.grants++;
    after_reply(a, ZKL__NEXT_NOTHING);
}

/* Where this attempt stands, given the children: find our node (by name,
 * or by uuid after a lost create reply), drop duplicates, then let the
 * recipe say what blocks us. */
/* Every shortcut that lets a waiter hold without listing again (the
 * local handoff, the queue view's "nothing left below", a reader's last
 * blocker gone) rests on new nodes sorting after ours. They do while
 * the lock path's child counter (cversion, which names new nodes) stays
 * below 2^31; past it names turn negative and sort first. With 2^30
 * changes to go at the listing, no wait lasts that long in practice (a
 * day at 10,000 creates and deletes a second); closer, the waiter lists
 * again every time. */
static int seq_safe(const struct Stat *st)
{
    return st != NULL && st->cversion >= 0 &&
           st->cversion <= INT32_MAX - (1 << 30);
}

/* ZKL_LOCK_QUEUED, with the number of nodes ahead of ours. */
static void tell_queued(zkl__att_t *a, const struct String_vector *sv)
{
    const char *me = att_name(a);
    int i, ahead = 0;

    for (i = 0; i < sv->count; i++)
        if (zkl__name_cmp(sv->data[i], me) < 0)
            ahead++;
    a->flags |= ZKL__F_TOLD_QUEUED;
    zkl__evq_push(a->c, &a->lk->op, ZKL_LOCK_QUEUED, ahead);
}

static void decide(zkl__att_t *a, const struct String_vector *sv)
{
    const char *own = NULL, *pred;
    char *me = att_name(a);
    int i;

    for (i = 0; i < sv->count; i++) {
        const char *n = sv->data[i];

        if (strncmp(n, me, ZKL__PREFIX_LEN) != 0)
            continue;
        if (a->node == ZKL__NODE_KNOWN) {
            if (strcmp(n, me) == 0)
                own = n;
            else
                ghost(a, n);
        } else if (zkl__own_name_len(n, att_recipe(a)) > 0) {
            /* After a lost create reply: whatever carries our uuid (the
             * lowest, if a retry made two). */
            if (own == NULL || zkl__name_cmp(n, own) < 0) {
                if (own != NULL)
                    ghost(a, own);
                own = n;
            } else {
                ghost(a, n);
            }
        }
    }
    if (own == NULL) {
        att_set_node(a, ZKL__NODE_NONE);
        a->czxid = 0;
        after_reply(a, a->goal == ZKL__GOAL_ACQUIRE ? ZKL__NEXT_CREATE
                                                    : ZKL__NEXT_NOTHING);
        return;
    }
    if (a->node != ZKL__NODE_KNOWN) {
        strcpy(me, own);
        att_set_node(a, ZKL__NODE_KNOWN);
        a->czxid = 0; /* learnt from the own-node read before granting */
    }
    if (a->goal != ZKL__GOAL_ACQUIRE) {
        after_reply(a, ZKL__NEXT_NOTHING); /* a delete: the step goes on */
        return;
    }
    /* Another kind of lock on this path orders the queue its own way:
     * neither could honour the other. */
    for (i = 0; i < sv->count; i++) {
        if (att_recipe(a)->foreign(att_recipe(a), sv->data[i])) {
            ZKL_LOG(ZKL_LOG_ERROR, "zklock: %.*s: %s lock beside node %s",
                    (int)a->dirlen, a->path, att_recipe(a)->name,
                    sv->data[i]);
            att_fail(a, ZKL_EKIND);
            after_reply(a, ZKL__NEXT_NOTHING);
            return;
        }
    }
    if (att_recipe(a)->decide != NULL) {
        att_recipe(a)->decide(a, sv);
        return;
    }
    pred = att_recipe(a)->blocker(sv, me);
    if (pred == NULL) {
        /* Granted. The watch on our own node, which reports a deletion by
         * someone else, is armed once the callbacks have run and only if
         * the lock is still held then: a holder that releases at once
         * costs no request and no notification. An adopted node needs
         * its czxid first, so it confirms before the grant. */
        a->flags |= ZKL__F_AT_HEAD;
        if (a->czxid != 0)
            grant(a);
        else
            after_reply(a, ZKL__NEXT_CONFIRM);
    } else if (a->flags & ZKL__F_TRYLOCK) {
        zkl__att_let_go(a, ZKL_LOCK_FAILED, ZKL_ELOCKED);
    } else {
        if (a->lk != NULL && (a->flags & ZKL__F_NOTIFY) &&
            !(a->flags & ZKL__F_TOLD_QUEUED))
            tell_queued(a, sv);
        a->pred_seq = zkl__seq_of(pred);
        a->flags &= (uint16_t)~ZKL__F_LAST_BLOCKER;
        if (att_recipe(a)->last_blocker != NULL &&
            att_recipe(a)->last_blocker(sv, pred))
            a->flags |= ZKL__F_LAST_BLOCKER;
        if (att_recipe(a)->chain)
            zkl__queue_learn(a->c, a, sv, me);
        watch_pred(a, pred);
        after_reply(a, ZKL__NEXT_NOTHING);
    }
}

static void list_answered(zkl__att_t *a, int rc,
                          const struct String_vector *sv,
                          const struct Stat *st);

/* A shared listing's answer: listing.c keeps the window's count. */
static void joined_done(int rc, const struct String_vector *sv,
                        const struct Stat *st, zkl__att_t *a)
{
    list_answered(joined_answered(a, rc), rc, sv, st);
}

/* rc: why the listing was not sent; 0: not now (requests are held),
 * the attempt lists again once they go. */
static void joined_unsent(zkl__att_t *a, int rc)
{
    a->inflight--;
    /* In the teardown (the fence settled by zookeeper_close()), the
     * client answers every attempt itself. */
    if (a->c->closing)
        return;
    if (rc == 0)
        mark_stalled(a, ZKL__NEXT_LIST);
    else
        send_failed(a, rc);
    if (a->inflight == 0)
        att_schedule(a, a->next_op);
}

static void list_done(int rc, const struct String_vector *sv,
                      const struct Stat *st, const void *data)
{
    list_answered(answered(data, rc), rc, sv, st);
}

static void list_answered(zkl__att_t *a, int rc,
                          const struct String_vector *sv,
                          const struct Stat *st)
{
    if (a->c->closing)
        return;
    if (rc == ZOK && zkl__names_lost(sv))
        rc = ZCONNECTIONLOSS; /* the client lost names: list again */
    switch (zkl__rc_class(rc)) {
    case ZKL__RC_OK:
        if (sv != NULL) {
            /* One server's view, consistent in itself: what decide()
             * finds needs no sync. */
            a->sync_first = 0;
            a->flags &= (uint16_t)~ZKL__F_SEQ_SAFE;
            if (seq_safe(st))
                a->flags |= ZKL__F_SEQ_SAFE;
            decide(a, sv);
            return;
        }
        after_reply(a, ZKL__NEXT_LIST);
        return;
    case ZKL__RC_NONODE:
        /* No lock path, so no node of ours under it either. */
        att_set_node(a, ZKL__NODE_NONE);
        if (a->goal != ZKL__GOAL_ACQUIRE)
            break;
        if (a->result != ZKL_OK) {
            att_fail(a, a->result); /* we may not create the lock path */
        } else if (++a->parent_rounds > 20) {
            /* Something deletes the path as fast as we create it. */
            att_fail(a, ZKL_EZK);
        } else {
            after_reply(a, ZKL__NEXT_PARENTS);
            return;
        }
        break;
    case ZKL__RC_EXISTS:
    case ZKL__RC_CONNLOSS:
        if (a->goal == ZKL__GOAL_ACQUIRE && (a->flags & ZKL__F_TRYLOCK)) {
            /* A try-lock does not wait. */
            att_fail(a, rc == ZTHROTTLEDOP ? ZKL_ETHROTTLED : ZKL_ECONNLOSS);
            break;
        }
        after_reply(a, a->node == ZKL__NODE_NONE ? ZKL__NEXT_CREATE
                                                 : ZKL__NEXT_LIST);
        return;
    case ZKL__RC_GONE:
        break; /* the session handling resets us */
    case ZKL__RC_REFUSED:
        /* A node we cannot list for is still deleted if known; an unknown
         * one is ephemeral and ends with the session. */
        if (a->node == ZKL__NODE_MAYBE)
            att_set_node(a, ZKL__NODE_NONE);
        refused(a, rc, "list");
        break;
    }
    after_reply(a, ZKL__NEXT_NOTHING);
}

/* A reader whose blocker was the only write node before it: nodes that
 * come later sort after it (sequence numbers only grow), so once that
 * one is gone, nothing can block it; it reads its own node (someone else
 * may have deleted it) and holds, no listing needed. */
static int last_blocker(const zkl__att_t *a)
{
    return (a->flags & ZKL__F_LAST_BLOCKER) &&
           (a->flags & ZKL__F_SEQ_SAFE) && a->pred_seq != UINT32_MAX &&
           a->node == ZKL__NODE_KNOWN;
}

static void pred_watch_done(int rc, const char *value, int len,
                            const struct Stat *st, const void *data)
{
    zkl__att_t *a = answered(data, rc);
    int next = ZKL__NEXT_NOTHING;

    (void)value;
    (void)len;
    (void)st;
    if (a->c->closing)
        return;
    if (a->goal != ZKL__GOAL_ACQUIRE) {
        after_reply(a, next);
        return;
    }
    switch (zkl__rc_class(rc)) {
    case ZKL__RC_OK:
        if (zkl__wtab_add(a->c, a, a->whash) != ZKL_OK)
            next = ZKL__NEXT_LIST; /* wait for the watch, unless no room */
        break;
    case ZKL__RC_NONODE:
        /* Gone already: the next one down, or look again. */
        if (last_blocker(a)) {
            a->flags |= ZKL__F_AT_HEAD;
            next = ZKL__NEXT_CONFIRM;
        } else if (att_recipe(a)->chain && a->pred_seq != UINT32_MAX) {
            zkl__queue_gone(a->c, a, a->pred_seq);
            next = ZKL__NEXT_DESCEND;
        } else {
            next = ZKL__NEXT_LIST;
        }
        break;
    case ZKL__RC_EXISTS:
    case ZKL__RC_CONNLOSS:
        next = ZKL__NEXT_LIST;
        break;
    case ZKL__RC_GONE:
        break;
    case ZKL__RC_REFUSED:
        refused(a, rc, "watch the node before");
        break;
    }
    after_reply(a, next);
}

/* After a read ahead (see send_delete) that was not at the head: a
 * waiter still filed under its predecessor waits for that watch; one that
 * was woken meanwhile looks again (its wake-up may have been overwritten
 * by this reply's). */
static int read_ahead_next(const zkl__att_t *a)
{
    return (a->flags & ZKL__F_IN_TABLE) || a->next_op != ZKL__NEXT_NOTHING
               ? ZKL__NEXT_NOTHING /* waits on, or goes where woken to */
               : ZKL__NEXT_LIST;
}

/* Curator's Revoker writes this into a holder's node. */
#define REVOKE_MESSAGE "__REVOKE__"

/* A revocable hold whose node now carries the request: told once. */
static void check_revoke(zkl__att_t *a, const char *value, int len)
{
    if (a->goal == ZKL__GOAL_HOLD && a->lk != NULL && a->lk->revocable &&
        !(a->flags & ZKL__F_REVOKED) && value != NULL &&
        len == (int)sizeof REVOKE_MESSAGE - 1 &&
        memcmp(value, REVOKE_MESSAGE, (size_t)len) == 0) {
        a->flags |= ZKL__F_REVOKED;
        zkl__evq_push(a->c, &a->lk->op, ZKL_LOCK_REVOKE_REQUESTED, ZKL_OK);
    }
}

static void own_watch_done(int rc, const char *value, int len,
                           const struct Stat *st, const void *data)
{
    zkl__att_t *a = answered(data, rc);
    zkl_client_t *c = a->c;
    int next = ZKL__NEXT_NOTHING;

    a->flags &= (uint16_t)~ZKL__F_CONFIRMING;
    if (c->closing)
        return;
    if (a->goal == ZKL__GOAL_DELETE) {
        after_reply(a, next);
        return;
    }
    /* The client lost the data, and the Stat with it: read again (a
     * made-up owner would pass for a node deleted by someone else). */
    if (rc == ZOK && zkl__data_lost(value, len))
        rc = ZCONNECTIONLOSS;
    if (rc == ZOK && (st == NULL || st->ephemeralOwner != c->session_id))
        rc = ZNONODE; /* carries our uuid but another session's: not ours */
    switch (zkl__rc_class(rc)) {
    case ZKL__RC_OK:
        if (a->goal == ZKL__GOAL_ACQUIRE) {
            a->czxid = st->czxid;
            if (att_recipe(a)->decide != NULL) {
                /* Its decider grants, or a listing decides. */
                next = (a->flags & ZKL__F_AT_HEAD) ? ZKL__NEXT_RECIPE
                                                   : ZKL__NEXT_NOTHING;
                break;
            }
            if (!(a->flags & ZKL__F_AT_HEAD)) {
                /* A read ahead of a handoff that did not come: wait on,
                 * unless something woke it meanwhile. */
                next = read_ahead_next(a);
                break;
            }
            /* At the head of the queue, and our node is there: hold. */
            grant(a);
            check_revoke(a, value, len);
            return;
        }
        zkl__wtab_add(c, a, zkl__hash(a->path));
        check_revoke(a, value, len);
        if (a->flags & ZKL__F_SUSPENDED) {
            a->flags &= (uint16_t)~ZKL__F_SUSPENDED;
            zkl__evq_push(c, &a->lk->op, ZKL_LOCK_RESTORED,
                          ZKL_OK);
        }
        break;
    case ZKL__RC_NONODE:
        /* Deleted by someone else: a waiter queues again at the back, a
         * holder has lost the lock. */
        att_set_node(a, ZKL__NODE_NONE);
        a->czxid = 0;
        if (a->goal == ZKL__GOAL_ACQUIRE) {
            zkl__wtab_remove(c, a); /* it waits on nothing now */
            a->pred_seq = UINT32_MAX;
            next = ZKL__NEXT_CREATE;
        } else {
            att_fail(a, ZKL_ENODEGONE);
        }
        break;
    case ZKL__RC_EXISTS:
    case ZKL__RC_CONNLOSS:
        next = a->goal == ZKL__GOAL_ACQUIRE && !(a->flags & ZKL__F_AT_HEAD)
                   ? read_ahead_next(a)
                   : ZKL__NEXT_CONFIRM;
        break;
    case ZKL__RC_GONE:
        break;
    case ZKL__RC_REFUSED:
        refused(a, rc, "watch");
        /* A node we may not read exists: a suspended hold is back. */
        if (a->goal == ZKL__GOAL_HOLD && (a->flags & ZKL__F_SUSPENDED)) {
            a->flags &= (uint16_t)~ZKL__F_SUSPENDED;
            zkl__evq_push(c, &a->lk->op, ZKL_LOCK_RESTORED,
                          ZKL_OK);
        }
        break;
    }
    after_reply(a, next);
}

/* The sync ahead of a read (send_confirm). The read behind it answers
 * next and decides; a sync the server did not do makes that read prove
 * nothing, so the waiter lists instead (its own server's view, which
 * is consistent with itself). */
static void sync_done(int rc, const char *value, const void *data)
{
    zkl__att_t *a = answered(data, rc);

    (void)value;
    if (a->c->closing)
        return;
    if (rc != ZOK && a->goal == ZKL__GOAL_ACQUIRE) {
        a->flags &= (uint16_t)~ZKL__F_AT_HEAD;
        after_reply(a, ZKL__NEXT_LIST);
        return;
    }
    after_reply(a, ZKL__NEXT_NOTHING);
}

static void delete_done(int rc, const void *data)
{
    zkl__att_t *a = answered(data, rc);

    if (a->c->closing)
        return;
    switch (zkl__rc_class(rc)) {
    case ZKL__RC_OK:
    case ZKL__RC_NONODE:
        /* A waiter of ours behind a node that was not held may wait on
         * this attempt, not on a watch (watch_pred): wake it too. */
        hand_on(a->c, a->path, (a->flags & ZKL__F_WAS_HELD) != 0, a);
        att_set_node(a, ZKL__NODE_NONE);
        break;
    case ZKL__RC_EXISTS:
    case ZKL__RC_CONNLOSS:
        break; /* still KNOWN: the step deletes again */
    case ZKL__RC_GONE:
        att_set_node(a, ZKL__NODE_NONE);
        if (a->result == ZKL_OK)
            a->result = ZKL_ESESSION;
        break;
    case ZKL__RC_REFUSED:
        /* Refused (an ACL, say): the node stays until the session ends. */
        refused(a, rc, "delete");
        att_set_node(a, ZKL__NODE_NONE);
        a->result = zkl__from_zk(rc);
        break;
    }
    after_reply(a, ZKL__NEXT_NOTHING);
}

/* An ancestor of the lock path: ZNODEEXISTS is the common answer. A
 * refusal (an ACL that does not let us create there) is remembered, so
 * that the listing's ZNONODE fails the attempt with ZKL_EAUTH instead of
 * trying again. */
static void parent_done(int rc, const char *value, const void *data)
{
    zkl__att_t *a = answered(data, rc);

    (void)value;
    if (zkl__rc_class(rc) == ZKL__RC_REFUSED)
        a->result = zkl__from_zk(rc);
    after_reply(a, ZKL__NEXT_NOTHING);
}

/* Does w wait on exactly the node at path? Same lock path, and the
 * sequence number it recorded when it chose that node. */
static int waits_on(const zkl__att_t *w, const char *path)
{
    const char *name = path + w->dirlen + 1;

    return w->pred_seq != UINT32_MAX && strlen(path) > (size_t)w->dirlen + 1 &&
           memcmp(path, w->path, (size_t)w->dirlen + 1) == 0 &&
           strchr(name, '/') == NULL && zkl__seq_of(name) == w->pred_seq;
}

/* The next waiter after the held node at path, when it belongs to another
 * client of this thread (a process that spreads its waiters over several
 * sessions) and idles in its queue, filed under that node; else NULL.
 * The queue view knows it. */
static zkl__att_t *successor_across(zkl_client_t *c, const char *path)
{
    zkl__att_t *w = zkl__queue_successor(c, path);

    if (w == NULL || w->c == c || w->c->closing ||
        w->goal != ZKL__GOAL_ACQUIRE || !att_recipe(w)->chain ||
        !(w->flags & ZKL__F_SEQ_SAFE) || w->node != ZKL__NODE_KNOWN ||
        w->next_op != ZKL__NEXT_NOTHING || (w->flags & ZKL__F_READY) ||
        !(w->flags & ZKL__F_IN_TABLE) || !waits_on(w, path))
        return NULL;
    return w;
}

/* The lock's holder at path is gone, and no waiter of this client was
 * right behind it: one of another client of this thread may be. It
 * takes the lock as a waiter of ours would, by reading its own node on
 * its own session, without waiting for its watch's notification (which
 * then finds nobody filed) or listing. That read is sent only now: one
 * sent ahead, beside the delete, would be answered by the server in no
 * set order with the delete, so it could not prove that the waiter's
 * node outlived the holder's (a review reproduced a double hold). */
static void hand_across(zkl_client_t *c, const char *path)
{
    zkl__att_t *w = successor_across(c, path);

    if (w == NULL || w->inflight > 0)
        return;
    zkl__wtab_remove(w->c, w);
    w->pred_seq = UINT32_MAX;
    w->flags |= ZKL__F_AT_HEAD;
    w->sync_first = 1;
    att_schedule(w, ZKL__NEXT_CONFIRM);
    zkl__views_poke(w->c);
}

/* Wakes the waiters in list (of c, or of c's peers), filed under the
 * node at path that is gone; lowest: that node was the lowest (see
 * hand_on), and handed: its next waiter has been found already. Returns
 * handed. */
static int hand_list(zkl_client_t *c, zkl__att_t *list, const char *path,
                     int lowest, int handed)
{
    zkl__att_t *a, *nx;

    for (a = list; a != NULL; a = nx) {
        nx = a->wnext;
        a->wnext = NULL;
        if (a->goal == ZKL__GOAL_ACQUIRE) {
            if (lowest && !handed && att_recipe(a)->chain &&
                (a->flags & ZKL__F_SEQ_SAFE) && a->node == ZKL__NODE_KNOWN &&
                (a->inflight == 0 || (a->flags & ZKL__F_CONFIRMING)) &&
                waits_on(a, path)) {
                /* Its own-node read, if sent with the release, answers
                 * next and grants. */
                handed = 1;
                a->pred_seq = UINT32_MAX;
                a->flags |= ZKL__F_AT_HEAD;
                a->sync_first |= a->c != c;
                if (!(a->flags & ZKL__F_CONFIRMING))
                    att_schedule(a, ZKL__NEXT_CONFIRM);
            } else if (last_blocker(a) && waits_on(a, path) &&
                       (a->inflight == 0 ||
                        (a->flags & ZKL__F_CONFIRMING))) {
                a->pred_seq = UINT32_MAX;
                a->flags |= ZKL__F_AT_HEAD;
                a->sync_first |= a->c != c;
                if (!(a->flags & ZKL__F_CONFIRMING))
                    att_schedule(a, ZKL__NEXT_CONFIRM);
            } else if (att_recipe(a)->chain && waits_on(a, path)) {
                att_schedule(a, ZKL__NEXT_DESCEND);
            } else {
                att_schedule(a, ZKL__NEXT_LIST);
            }
        } else if (a->goal == ZKL__GOAL_HOLD && strcmp(path, a->path) == 0) {
            att_set_node(a, ZKL__NODE_NONE); /* deleted by someone else */
            att_fail(a, ZKL_ENODEGONE);
        } else if (a->goal == ZKL__GOAL_HOLD) {
            zkl__wtab_add(a->c, a, zkl__hash(a->path)); /* a collision */
        }
        if (a->c != c)
            zkl__views_poke(a->c); /* kicked once this pass ends */
    }
    return handed;
}

/* The node at path is gone: wake everyone filed under it. When it was
 * the node of a local holder (lowest = 1, or found among them), it was
 * the lowest node, and no node can ever appear below it (sequence
 * numbers only grow): the one waiter queued right behind it is at the
 * head, without listing the children again. It still reads its own node
 * before it holds: someone else may have deleted it while it waited.
 * gone: the attempt whose node it was, when this client deleted it; the
 * waiters of other clients that wait on it without a watch (take_peers)
 * are woken the same way. */
static void hand_on(zkl_client_t *c, const char *path, int lowest,
                    zkl__att_t *gone)
{
    zkl__att_t *list = zkl__wtab_take(c, zkl__hash(path)), *a;
    int handed;

    zkl__queue_gone_path(c, path);
    for (a = list; a != NULL && !lowest; a = a->wnext)
        if ((a->goal == ZKL__GOAL_HOLD || (a->flags & ZKL__F_WAS_HELD)) &&
            a->node == ZKL__NODE_KNOWN && strcmp(a->path, path) == 0)
            lowest = 1;
    handed = hand_list(c, list, path, lowest, 0);
    if (gone != NULL)
        handed = hand_list(c, take_peers(gone), path, lowest, handed);
    if (lowest && !handed)
        hand_across(c, path);
}

void zkl__on_watch(zkl_client_t *c, int type, const char *path)
{
    zkl__att_t *a, *nx;

    if (type == ZOO_DELETED_EVENT) {
        hand_on(c, path, 0, NULL);
        return;
    }
    /* Changed (data set on a node) or the watch removed: look again. */
    for (a = zkl__wtab_take(c, zkl__hash(path)); a != NULL; a = nx) {
        nx = a->wnext;
        a->wnext = NULL;
        if (a->goal == ZKL__GOAL_ACQUIRE)
            att_schedule(a, ZKL__NEXT_LIST);
        else if (a->goal == ZKL__GOAL_HOLD)
            att_schedule(a, ZKL__NEXT_CONFIRM);
    }
}

/* Waiters of other clients that wait on our nodes without a watch
 * (watch_pred) rely on this connection: they list again and watch. */
void zkl__on_suspended(zkl_client_t *c)
{
    zkl__att_t *a;

    for (a = c->atts; a != NULL; a = a->next) {
        peers_list(a);
        if (a->goal == ZKL__GOAL_HOLD && a->lk != NULL &&
            !(a->flags & ZKL__F_SUSPENDED)) {
            a->flags |= ZKL__F_SUSPENDED;
            zkl__evq_push(c, &a->lk->op, ZKL_LOCK_SUSPENDED,
                          ZKL_ESUSPENDED);
        }
    }
}

/* The client is closing: each attempt's handle is answered for where
 * the attempt stands (the nodes go with the session). */
void zkl__on_close(zkl_client_t *c)
{
    zkl__att_t *a;

    for (a = c->atts; a != NULL; a = a->next) {
        if (a->lk == NULL)
            continue;
        if (a->goal == ZKL__GOAL_DELETE)
            zkl__att_detach(a, ZKL_LOCK_RELEASED, ZKL_ECLOSED);
        else if (a->goal == ZKL__GOAL_HOLD)
            zkl__att_detach(a, ZKL_LOCK_LOST, ZKL_ECLOSED);
        else
            zkl__att_detach(a, ZKL_LOCK_FAILED, ZKL_ECLOSED);
    }
}

void zkl__on_connected(zkl_client_t *c, int reconnect)
{
    zkl__att_t *a;

    for (a = c->atts; a != NULL; a = a->next) {
        if (reconnect && a->goal == ZKL__GOAL_HOLD && a->inflight == 0)
            att_schedule(a, ZKL__NEXT_CONFIRM); /* still ours? */
        else if (a->flags & ZKL__F_STALLED)
            att_schedule(a, a->next_op);
    }
}

/* The server may have expired the session by now, or may do so before
 * we could hear otherwise (see touched_at in internal.h), so a holder
 * must assume another contender holds the lock. A release waiting for
 * its delete is answered too: its node goes with the session, or by
 * the delete, which goes on in the background should the session
 * have survived; the user, whose hold ended at the call, no longer
 * waits for a server that may not come back. */
void zkl__on_presumed_expiry(zkl_client_t *c)
{
    zkl__att_t *a, *nx;

    if (c->presumed_lost)
        return;
    c->presumed_lost = 1;
    for (a = c->atts; a != NULL; a = nx) {
        nx = a->next;
        if (a->goal == ZKL__GOAL_HOLD && a->lk != NULL)
            zkl__att_let_go(a, ZKL_LOCK_LOST, ZKL_ESESSION);
        else if (a->goal == ZKL__GOAL_DELETE && a->lk != NULL)
            zkl__att_detach(a, ZKL_LOCK_RELEASED, ZKL_ESESSION);
    }
}

void zkl__on_answer(zkl_client_t *c, int rc, uint64_t sent_at)
{
    if (zkl__on_result(c, rc, sent_at))
        zkl__on_presumed_expiry(c);
}

/* The session is gone, and every node it owned with it. */
void zkl__on_session_gone(zkl_client_t *c, int status)
{
    zkl__att_t *a, *nx;

    zkl__queue_clear(c);
    for (a = c->atts; a != NULL; a = nx) {
        nx = a->next;
        a->flags &= (uint16_t)~(ZKL__F_QUEUED | ZKL__F_SUSPENDED |
                                ZKL__F_AT_HEAD);
        zkl__wtab_remove(c, a);
        /* Not att_set_node: every waiter here is reset, none is woken;
         * those of other clients are. */
        peers_list(a);
        zkl__otab_remove(c, a);
        a->node = ZKL__NODE_NONE;
        a->czxid = 0;
        switch ((enum zkl__goal)a->goal) {
        case ZKL__GOAL_HOLD:
            att_fail(a, status);
            break;
        case ZKL__GOAL_DELETE:
            if (a->result == ZKL_OK)
                a->result = status;
            att_schedule(a, ZKL__NEXT_NOTHING);
            break;
        case ZKL__GOAL_ACQUIRE:
            if (status == ZKL_ESESSION && !(a->flags & ZKL__F_FIXED)) {
                /* Re-queue on the new session, under a fresh uuid so no
                 * node of the old session can be taken for ours. */
                att_new_uuid(a);
                att_schedule(a, ZKL__NEXT_CREATE);
            } else {
                att_fail(a, status);
            }
            break;
        }
    }
}

void zkl__on_client_gone(zkl_client_t *c)
{
    zkl__att_t *a;

    for (a = c->atts; a != NULL; a = a->next) {
        peers_list(a);
        zkl__otab_remove(c, a);
    }
}

void zkl__on_deadlines(zkl_client_t *c, uint64_t now)
{
    zkl__att_t *a;

    while ((a = zkl__heap_top(c)) != NULL && a->deadline <= now) {
        zkl__heap_remove(c, a);
        if (a->goal != ZKL__GOAL_ACQUIRE)
            retry_now(a); /* a refused send */
        else if (a->lk != NULL)
            zkl__att_let_go(a, ZKL_LOCK_FAILED,
                            (a->flags & ZKL__F_TRYLOCK) ? ZKL_ECONNLOSS
                                                        : ZKL_ETIMEDOUT);
    }
}
