/* Private to libzklock: struct bodies and internal prototypes (zkl__*),
 * grouped under the file that defines them. Nothing here is exported
 * (see -export-symbols-regex in Makefile.am). */
#ifndef ZKL_INTERNAL_H
#define ZKL_INTERNAL_H

#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <zookeeper/zookeeper.h>

#include "zklock.h"

/* "_c_" + 36-char uuid + a tag ("-lock-", "-__READ__", "-__WRIT__"):
 * Curator's protected-mode prefix, which is what lets a lost create reply
 * be recovered by name. ZooKeeper prints the sequence with %010d of a
 * signed 32-bit counter: ten characters, or eleven past 2^31
 * ("-2147483648"). */
#define ZKL__UUID_LEN 36
#define ZKL__PREFIX_LEN (3 + ZKL__UUID_LEN)      /* "_c_<uuid>" */
#define ZKL__TAG_MAX 9                           /* "-__READ__" */
#define ZKL__SEQ_LEN 10
#define ZKL__SEQ_MAX_LEN 11
#define ZKL__NAME_MAX (ZKL__PREFIX_LEN + ZKL__TAG_MAX + ZKL__SEQ_MAX_LEN)

/* Intrusive doubly linked lists: unlink node n (with prev/next fields)
 * from the list whose head pointer is *headp. */
#define ZKL__UNLINK(headp, n)                                               \
    do {                                                                    \
        if ((n)->prev != NULL)                                              \
            (n)->prev->next = (n)->next;                                    \
        else                                                                \
            *(headp) = (n)->next;                                           \
        if ((n)->next != NULL)                                              \
            (n)->next->prev = (n)->prev;                                    \
    } while (0)
#define ZKL__PUSH(headp, n)                                                 \
    do {                                                                    \
        (n)->prev = NULL;                                                   \
        (n)->next = *(headp);                                               \
        if (*(headp) != NULL)                                               \
            (*(headp))->prev = (n);                                         \
        *(headp) = (n);                                                     \
    } while (0)

typedef struct zkl__att zkl__att_t;
typedef struct zkl__op zkl__op_t;
typedef struct zkl__recipe zkl__recipe_t;
typedef struct zkl__contenders_req zkl__contenders_req_t;
typedef struct zkl__queue zkl__queue_t;
typedef struct zkl__sem zkl__sem_t;
typedef struct zkl__listing zkl__listing_t;
typedef struct zkl__views zkl__views_t;

/* ---- op.c: the operation contract ----
 *
 * The client (client.c) runs two kinds of things, and names neither's
 * recipe. Lock attempts are the core's own: attempt.c steps them, times
 * them out and ends them, one lock node each, whatever the lock's kind
 * (its differences come from the recipe table, recipes.c). Everything
 * else that outlives the call that started it is an operation: a lock
 * handle (the user's end of its attempts), a multi-lock, a semaphore
 * acquire, a guarded write, a contenders request, and the client's own
 * connection events. An operation embeds a zkl__op_t as its first
 * member, and the client reaches it only through its class:
 *
 *   deliver(op, ev, st)  runs the user's callback for one event that
 *                        zkl__evq_push() queued: from the client's drain,
 *                        the one place where user callbacks run. The op
 *                        may be freed by the callback, or by deliver.
 *   deadline(op)         the monotonic ms at which expire() is due, 0
 *                        for none; asked only while the op counts itself
 *                        in c->ops_timed (zkl__ops_timed).
 *   expire(op, now)      that time has come.
 *   run(op)              work it asked for (zkl__ops_want_run) may be
 *                        sent now: connected, no request held back.
 *   watch(op, type, p)   a node watch fired (the client has one watcher,
 *                        for every node watch of its session).
 *   session_gone(op)     the session ended, with its nodes and watches;
 *                        a new one is on its way.
 *   close(op)            the client is closing: answer the user now
 *                        (ZKL_ECLOSED), before the session ends.
 *   teardown(op)         every completion has run (zookeeper_close):
 *                        let go of the client, freeing what it owns
 *                        (an op still listed then: a handle, a set, an
 *                        orphaned write).
 *
 * Any hook may be NULL but deliver, for an op that queues events. An
 * op with deadline,
 * run, watch or session_gone is "driven": driven ops stand first on
 * the client's list, so that the walks of those hooks never pass the
 * (many) lock handles behind them. An op that answers once (once: a write, a
 * contenders request) counts in zkl_client_pending() from
 * zkl__op_add() until its answer is delivered; room sets aside the
 * callback-queue slots it may need at any time (see zkl__evq_promise).
 * An op is on the client's list from zkl__op_add() to zkl__op_remove(), which
 * also drops its queued events: the caller frees it after that. */
typedef struct zkl__opclass {
    const char *name;           /* for logs */
    void (*deliver)(zkl__op_t *op, int ev, int status);
    uint64_t (*deadline)(const zkl__op_t *op);
    void (*expire)(zkl__op_t *op, uint64_t now);
    void (*run)(zkl__op_t *op);
    void (*watch)(zkl__op_t *op, int type, const char *path);
    void (*session_gone)(zkl__op_t *op);
    void (*close)(zkl__op_t *op);
    void (*teardown)(zkl__op_t *op);
    uint8_t once;               /* answers once, counted pending till then */
    uint8_t room;               /* queue slots set aside while it lives */
} zkl__opclass_t;

struct zkl__op {
    const zkl__opclass_t *cls;
    zkl__op_t *prev, *next;     /* c->op_head */
    uint32_t nqueued;           /* its events in the callback queue */
};

void zkl__op_add(zkl_client_t *c, zkl__op_t *op, const zkl__opclass_t *cls);
void zkl__op_remove(zkl_client_t *c, zkl__op_t *op);
/* An op started (+1) or stopped (-1) having a deadline. */
void zkl__ops_timed(zkl_client_t *c, int delta);
/* Some op has run() work: the client calls every driven op's run()
 * once it may send. */
void zkl__ops_want_run(zkl_client_t *c);
/* The client's walks of the hooks, each over the ops that have it. */
void zkl__ops_expire(zkl_client_t *c, uint64_t now);
uint64_t zkl__ops_next_deadline(const zkl_client_t *c);
void zkl__ops_run(zkl_client_t *c);
void zkl__ops_watch(zkl_client_t *c, int type, const char *path);
void zkl__ops_session_gone(zkl_client_t *c);
void zkl__ops_close(zkl_client_t *c);
void zkl__ops_teardown(zkl_client_t *c);
/* Runs queued callbacks in order, each through its op's deliver(), up
 * to the pass's budget (all of them while closing). Stops early when a
 * callback asks for the client to be freed: the teardown delivers the
 * rest. */
void zkl__ops_drain(zkl_client_t *c);

/* ---- evq.c: the callback queue ----
 * One FIFO of {op, event, status} for every user callback of a client,
 * delivered in order by zkl__ops_drain() and nowhere else. 16 bytes: room
 * for one is set aside per pending attempt. op NULL: purged. */
typedef struct zkl__event {
    zkl__op_t *op;
    int32_t status;
    uint8_t ev;
} zkl__event_t;
/* Makes room, without growing later, for everything already promised
 * (the events queued, one ending per attempt, a QUEUED per attempt that
 * asked for it, each op's room) plus k more and ZKL__EVQ_SLACK for
 * connection events and several events of one attempt between two
 * deliveries; on success the k are promised too. An attempt, counted in
 * c->natts before it asks, promises 0. */
int zkl__evq_promise(zkl_client_t *c, size_t k);
#define ZKL__EVQ_SLACK 16
/* Queues one of op's events for its deliver(); the room for it was set
 * aside when op was accepted (zkl__evq_promise), else ZKL_ENOMEM: the
 * event is logged and dropped. */
int zkl__evq_push(zkl_client_t *c, zkl__op_t *op, int ev, int status);
/* Drops the queued events of op (all op->nqueued of them). */
void zkl__evq_purge(zkl_client_t *c, zkl__op_t *op);
/* Takes the oldest event: 0 when there is none. */
int zkl__evq_pop(zkl_client_t *c, zkl__event_t *out);

/* ---- table.c: the chained hash table every index uses ---- */
/* Empty when zeroed; owns its buckets (zkl__table_free), never its
 * entries. */
typedef struct zkl__table {
    void **b;
    size_t size, count;
} zkl__table_t;
/* What a table holds: where an entry keeps the pointer that chains it
 * (offsetof), its hash again when the table grows, the first size. */
typedef struct zkl__tabkind {
    size_t link;
    uint64_t (*hash_of)(const void *e);
    size_t first_size;
} zkl__tabkind_t;
/* ZKL_ENOMEM only while the table has no buckets at all. */
int zkl__table_add(zkl__table_t *t, const zkl__tabkind_t *k, void *e,
                   uint64_t h);
/* The chain where entries of hash h are (others share it): walk it
 * through the entries' own link, checking each entry's key. */
void *zkl__table_first(const zkl__table_t *t, uint64_t h);
/* 1 when e was in (filed under h) and is out now. */
int zkl__table_remove(zkl__table_t *t, const zkl__tabkind_t *k, void *e,
                      uint64_t h);
/* Unlinks every entry of h's chain for which same(e, h), and returns
 * them chained through their link, NULL when none. */
void *zkl__table_take(zkl__table_t *t, const zkl__tabkind_t *k, uint64_t h,
                      int (*same)(const void *e, uint64_t h));
void zkl__table_free(zkl__table_t *t);
/* The tables' hash of a string (FNV-1a, never 0). */
uint64_t zkl__hash(const char *s);
uint64_t zkl__hashn(const char *s, size_t n);

/* ---- alloc.c: every allocation goes through zkl_set_allocator()'s ---- */
void *zkl__malloc(size_t size);
void *zkl__calloc(size_t n, size_t size);
void *zkl__realloc(void *p, size_t size);
void zkl__free(void *p);
char *zkl__strdup(const char *s);
/* *slot becomes a copy of s (NULL for NULL), the old one freed:
 * ZKL_OK, or ZKL_ENOMEM with *slot unchanged. */
int zkl__strset(char **slot, const char *s);

/* ---- log.c ---- */
extern int zkl__log_max;
void zkl__log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
#define ZKL_LOG(lvl, ...)                                                   \
    do {                                                                    \
        if ((lvl) <= zkl__log_max)                                          \
            zkl__log((lvl), __VA_ARGS__);                                   \
    } while (0)
void zkl__zk_log_trampoline(const char *msg);

/* ---- clock.c: the monotonic clock ---- */
uint64_t zkl__now_ms(void);
uint64_t zkl__now_us(void);

/* ---- names.c: paths, the names of our nodes ---- */
int zkl__path_check(const char *path, int allow_root);
void zkl__uuid(char out[ZKL__UUID_LEN + 1]);
/* The sequence number of a name whose sort key is ten digits (0 ..
 * 2^31-1), for the queue view's arithmetic; UINT32_MAX for any other
 * name, including the eleven-character and negative suffixes past 2^31,
 * whose Curator order is not creation order (those queues are listed). */
uint32_t zkl__seq_of(const char *name);
/* Length of a lock node name zklock could have created for a lock of
 * this recipe ("_c_<uuid>" + its tag + a ten- or eleven-character
 * ZooKeeper sequence), else 0. */
size_t zkl__own_name_len(const char *name, const zkl__recipe_t *r);

/* ---- error.c: ZooKeeper result codes, classified once ---- */
enum zkl__rc_class {
    ZKL__RC_OK,       /* done as asked */
    ZKL__RC_NONODE,   /* the node (or its parent) does not exist */
    ZKL__RC_EXISTS,   /* the node exists already */
    ZKL__RC_REFUSED,  /* definite: the server or client will not do it */
    ZKL__RC_CONNLOSS, /* outcome unknown: the connection broke under the
                         request (or the session moved); retry */
    ZKL__RC_GONE      /* the session (or the handle) is gone */
};
/* A code a 3.8 server sends that Debian's 3.8.0 header does not name:
 * a hard quota (zookeeper.enforceQuota) refused a create or a write. */
#define ZKL__ZQUOTAEXCEEDED (-125)
enum zkl__rc_class zkl__rc_class(int rc);
int zkl__rc_known(int rc);
int zkl__from_zk(int rc);
/* An answer of ZOK that the ZooKeeper client could not copy in full:
 * 3.8 ignores its deserializer's failure to allocate, and hands over a
 * NULL where a name or the data should be (and, past it, whatever the
 * stack held where the Stat should be). The server did the request;
 * what it answered is lost, as if the connection had dropped under it:
 * callers take such an answer for ZCONNECTIONLOSS (retry), or report
 * ZKL_ENOMEM where the user asked. names: a listing with a NULL name;
 * data: a read's data (NULL data comes with len -1). */
int zkl__names_lost(const struct String_vector *sv);
int zkl__data_lost(const char *value, int len);

/* ---- options.c ---- */
/* A (scheme, text) pair: credentials for zoo_add_auth(), or an ACL id. */
typedef struct zkl__cred {
    char *scheme;
    char *text;
} zkl__cred_t;

typedef struct zkl__secure zkl__secure_t; /* secure.c */

struct zkl_options {
    char *hosts;
    char *chroot;
    int session_timeout;
    int window;
    zkl_conn_cb conn_cb;
    void *conn_arg;
    int acl_mode;             /* zkl_acl_t */
    zkl__cred_t *auth, *ids;  /* owned, each entry's strings too */
    size_t nauth, nids;
    zkl__secure_t *secure;    /* TLS or SASL; NULL: neither. Owned */
};

/* ---- secure.c: TLS and SASL ---- */
int zkl__secure_copy(zkl__secure_t **dst, const zkl__secure_t *src);
void zkl__secure_free(zkl__secure_t *s);
int zkl__secure_is_tls(const zkl__secure_t *s);
zhandle_t *zkl__secure_open(zkl__secure_t *s, const char *hosts,
                            watcher_fn fn, int timeout, void *ctx,
                            log_callback_fn log);

/* ---- acl.c ---- */
int zkl__creds_add(zkl__cred_t **v, size_t *n, const char *scheme,
                   const char *text);
void zkl__creds_free(zkl__cred_t *v, size_t n);
int zkl__creds_copy(zkl__cred_t **dst, size_t *ndst, const zkl__cred_t *src,
                    size_t n);
int zkl__acl_build(struct ACL_vector *acl, const zkl_options_t *o);
void zkl__acl_free(struct ACL_vector *acl);
int zkl__send_auth(zkl_client_t *c);

/* ---- attempt.c: the attempt machine ---- */

enum zkl__goal {
    ZKL__GOAL_ACQUIRE, /* get to the front of the queue */
    ZKL__GOAL_HOLD,    /* at the front; watching our own node */
    ZKL__GOAL_DELETE   /* make our node gone, then end */
};

enum zkl__node {
    ZKL__NODE_NONE,  /* no node exists (or it is known gone) */
    ZKL__NODE_MAYBE, /* a create was sent and its outcome is unknown */
    ZKL__NODE_KNOWN  /* created; name in path[] */
};

/* What the attempt must send next when it steps. */
enum zkl__next {
    ZKL__NEXT_NOTHING, /* waiting for a reply or a watch */
    ZKL__NEXT_CREATE,  /* create + pipelined list */
    ZKL__NEXT_PARENTS, /* create the lock path's ancestors, then CREATE */
    ZKL__NEXT_LIST,    /* list children and decide */
    ZKL__NEXT_DELETE,  /* delete our node */
    ZKL__NEXT_CONFIRM, /* read (and watch) our own node: before a grant
                          that no listing backs, and to re-check a hold */
    ZKL__NEXT_DESCEND, /* blocker gone: the next from the queue view */
    ZKL__NEXT_RECIPE   /* its recipe's step (a lease: ask its semaphore
                          acquire whether the set may be granted now) */
};

#define ZKL__F_READY 0x01      /* on the client's ready queue, or waiting
                                  for room in the window (c->paced) */
#define ZKL__F_STALLED 0x02    /* waits for the connection to come back */
#define ZKL__F_IN_TABLE 0x04   /* in the waiter table under whash */
#define ZKL__F_TRYLOCK 0x08    /* timeout 0 */
#define ZKL__F_SUSPENDED 0x10  /* ZKL_LOCK_SUSPENDED reported */
#define ZKL__F_WATCH_OWN 0x20  /* arm the own-node watch after callbacks */
#define ZKL__F_WAS_HELD 0x40   /* deleting a node that held the lock */
#define ZKL__F_QUEUED 0x80     /* its lock path's queue view covers it */
#define ZKL__F_AT_HEAD 0x100   /* first in the queue: holds once its own
                                  node is confirmed */
#define ZKL__F_CONFIRMING 0x200 /* its own-node read is in flight */
#define ZKL__F_FIXED 0x400     /* a downgrade: one EPHEMERAL node named
                                  after the write node it keeps the place
                                  of; never re-created elsewhere */
#define ZKL__F_REVOKED 0x800   /* ZKL_LOCK_REVOKE_REQUESTED delivered */
#define ZKL__F_LAST_BLOCKER 0x1000 /* a reader whose listing had no write
                                  node before the one it waits on: that
                                  node's deletion lets it hold */
#define ZKL__F_SEQ_SAFE 0x2000 /* its last listing showed the lock path's
                                  sequence counter far from wrapping: no
                                  node created for a long while can sort
                                  before ours (see seq_safe) */
#define ZKL__F_TOLD_QUEUED 0x4000 /* ZKL_LOCK_QUEUED queued for this node */
#define ZKL__F_NOTIFY 0x8000   /* its handle asked for ZKL_LOCK_QUEUED when
                                  it started (counted in c->nnotify) */

/* One attempt: one lock node's life, from create to gone. Owned by the
 * client (on c->atts) from acquire until its node is known gone and no
 * reply is outstanding; the lock handle only points at it (lk->att) and
 * lets go on cancel, timeout, release or free, so that handle can start a
 * new attempt at once while this one cleans up. An attempt with goal
 * DELETE that still has its handle is that handle's release. Never freed
 * while a ZooKeeper request carries it as its data pointer
 * (inflight > 0). */
struct zkl__att {
    zkl_client_t *c;
    zkl_lock_t *lk;           /* NULL once the user let go */
    zkl__att_t *prev, *next;  /* c->atts */
    zkl__att_t *ready_next;   /* c->ready */
    zkl__att_t *wnext;        /* waiter table chain */
    zkl__att_t *onext;        /* own-node table chain */
    uint64_t whash;           /* hash of the watched path */
    uint64_t deadline;        /* monotonic ms: acquire timeout, or when a
                                 refused delete is tried again; 0 = none */
    uint64_t sent_at;         /* monotonic ms: send time of the oldest
                                 request in flight */
    int64_t czxid;            /* fencing token once known, else 0 */
    int result;               /* RELEASED status once the node is gone */
    uint32_t heap_idx;        /* in c->heap, or UINT32_MAX */
    uint32_t pred_seq;        /* sequence of the node waited on, or
                                 UINT32_MAX when it has none */
    uint16_t flags;
    uint16_t inflight;        /* requests carrying this attempt (a path
                                 of 512 components sends 514 at once) */
    uint16_t dirlen;          /* strlen(lock path) */
    uint8_t goal, node, next_op;
    uint8_t kind;             /* zkl_lock_kind_t: its recipe */
    /* One byte, so that a waiter's attempt stays in its malloc size
     * class (path[] follows). */
    uint8_t parent_rounds : 5;/* ZNONODE retries, at most 21 */
    uint8_t owned : 1;        /* in the own-node table */
    uint8_t peer_waited : 1;  /* a waiter of another client of this
                                 thread may wait on it, not on a watch */
    uint8_t sync_first : 1;   /* at the head by what another client
                                 learnt: its own-node read must not be
                                 older than that (send_confirm) */
    char path[];              /* "<dir>/_c_<uuid><tag><seq>" */
};

zkl__att_t *zkl__att_new(zkl_client_t *c, zkl_lock_t *lk, long timeout);
/* An attempt that waits, unscheduled, until its recipe's decider wakes
 * it to create its node (a lease: once its semaphore acquire holds the
 * semaphore's mutex). */
zkl__att_t *zkl__att_new_parked(zkl_client_t *c, zkl_lock_t *lk,
                                long timeout);
/* The read side taking the place of its pair's held write node w. */
zkl__att_t *zkl__att_new_downgrade(zkl_client_t *c, zkl_lock_t *lk,
                                   const zkl__att_t *w, long timeout);
void zkl__att_free(zkl__att_t *a);
/* Cuts the handle/attempt link, queueing ev (if not 0) for the handle. */
void zkl__att_detach(zkl__att_t *a, int ev, int status);
void zkl__att_let_go(zkl__att_t *a, int event, int status);
void zkl__att_release(zkl__att_t *a);
void zkl__att_after_callback(zkl__att_t *a);
/* For a recipe's hooks (semaphore.c), which decide for its attempts
 * what the blocker decides for the other kinds. */
void zkl__att_schedule(zkl__att_t *a, int next_op);
void zkl__att_after_reply(zkl__att_t *a, int next_op);
void zkl__att_grant(zkl__att_t *a);
char *zkl__att_name(zkl__att_t *a);

/* ---- listing.c: one listing per lock path and pass ---- */
/* a lists its lock path with the others of this pass that do; counted
 * in a->inflight by the caller. ZKL_ENOMEM: list alone. */
/* What a listing tells each attempt that joined it: its answer, or
 * that it was not sent (see zkl__att_list_done / _unsent). */
typedef struct zkl__listing_to {
    void (*done)(int rc, const struct String_vector *sv,
                 const struct Stat *st, zkl__att_t *a);
    void (*unsent)(zkl__att_t *a, int rc);
} zkl__listing_to_t;
int zkl__listing_join(zkl_client_t *c, zkl__att_t *a,
                      const zkl__listing_to_t *to);
/* Sends one listing of a's lock path (watched for a lease) with this
 * completion: the ZooKeeper client's result. */
int zkl__listing_send(zkl__att_t *a, strings_stat_completion_t done,
                      const void *data);
/* Sends the pass's listings; from the end of zkl__run_ready(). */
void zkl__listing_flush(zkl_client_t *c);
void zkl__run_ready(zkl_client_t *c);
/* Whether attempts wait for room in the window that there is now. */
int zkl__paced_due(const zkl_client_t *c);
void zkl__on_watch(zkl_client_t *c, int type, const char *path);
void zkl__on_connected(zkl_client_t *c, int reconnect);
/* The client is closing: every handle's attempt is answered now. */
void zkl__on_close(zkl_client_t *c);
void zkl__on_suspended(zkl_client_t *c);
/* Holds must assume another contender holds the lock now: told once
 * per touched_at (a fresher answer re-arms it, c->presumed_lost). */
void zkl__on_presumed_expiry(zkl_client_t *c);
/* Every completion reports its result here (zkl__on_result), and an
 * answer of ZSESSIONEXPIRED tells the holds LOST at once, before the
 * completion queues its own callback: their nodes may already be
 * someone else's turn. */
void zkl__on_answer(zkl_client_t *c, int rc, uint64_t sent_at);
void zkl__on_session_gone(zkl_client_t *c, int status);
/* c is being freed: its attempts leave the own-node table, and waiters
 * of other clients that waited on them list again. */
void zkl__on_client_gone(zkl_client_t *c);
void zkl__on_deadlines(zkl_client_t *c, uint64_t now);

/* ---- recipes.c: the recipe table ----
 * What differs between the kinds of lock node (a mutex, the two sides
 * of a read/write lock, a semaphore's lease, a latch member) is written
 * down here, and the attempt machine (attempt.c) reaches it only
 * through this table: it does everything else (create, recover, list,
 * watch, re-check, delete) the same way for every kind. */
struct zkl__recipe {
    const char *name;          /* for logs */
    const char *tag;           /* after "_c_<uuid>" in our node names */
    size_t taglen;
    const char *subdir;        /* its nodes' parent, below the lock path:
                                  "" or, for a lease, "/leases" */
    size_t subdirlen;
    /* The node to watch, or NULL when our node holds the lock. me is our
     * node's name; names are all children, in no particular order. */
    const char *(*blocker)(const struct String_vector *names,
                           const char *me);
    /* 1 when only the lowest node holds and the blocker is always the
     * next lower node: then a waiter whose blocker went may take the
     * next one from the queue view (queue.c) instead of listing again,
     * and a local holder's release hands on to the waiter behind it. */
    int chain;
    /* Kinds of one family share lock paths (the two sides of a
     * read/write lock); a node of another family is foreign to a
     * queue that orders by family (zkl__family_foreign). */
    const char *family;
    /* 1 when a child of the lock path belongs to another kind of lock,
     * whose order this one cannot honour. */
    int (*foreign)(const struct zkl__recipe *r, const char *name);
    /* In a listing in Curator's order, whether a node of this kind
     * holds: front when it shares the first node's sort key,
     * after_excluder when a node of a kind that excludes readers sorts
     * before it (zkl_contenders_ex()'s holds). */
    int (*holds)(int front, int after_excluder);
    /* 1 when its nodes keep readers behind them waiting (a write). */
    uint8_t excludes_readers;
    /* 1 when the blocker pred, in this listing, is the last node in the
     * way: its deletion alone lets us hold (a reader behind the last
     * write node). NULL: never known without listing again. */
    int (*last_blocker)(const struct String_vector *names, const char *pred);
    /* 1 when several of our waiters may wait on the same node (readers
     * behind one writer): they share one server watch. */
    uint8_t shared_blocker;
    /* 1 when it reports its place with ZKL_LOCK_QUEUED, if asked. */
    uint8_t tells_place;
    /* 1 when its waiters wait for the lock path's children to change
     * (its listings set a watch), not for one node; a release of ours
     * then wakes a local waiter of the same path to list at once. */
    uint8_t waits_on_children;
    /* The hooks of a kind whose grant is decided with others (a lease:
     * by its semaphore acquire, semaphore.c); NULL for the rest.
     * may_create: 0 while its node may not be created; the decider
     *   wakes the attempt later (its next_op kept: CREATE or PARENTS).
     * decide: takes the place of blocker with each listing.
     * step: the attempt's ZKL__NEXT_RECIPE.
     * abandon: the attempt stops waiting, with this status. */
    int (*may_create)(const zkl__att_t *a);
    void (*decide)(zkl__att_t *a, const struct String_vector *names);
    void (*step)(zkl__att_t *a);
    void (*abandon)(zkl__att_t *a, int status);
    /* The handle's side, for a kind whose handle is more than one
     * attempt at a time (a lease: its semaphore acquire); NULL for the
     * rest. acquire: zkl_lock_acquire() of the handle, after the checks
     * every handle shares. handle_free: frees what the kind hung on the
     * handle (lk->sem). */
    int (*acquire)(zkl_lock_t *lk, long timeout_ms);
    void (*handle_free)(zkl_lock_t *lk);
};

/* What kind of lock a child name belongs to, by Curator's tags. */
zkl_lock_kind_t zkl__kind_of(const char *name);
/* Curator's sort key: the text after the last "lock-" (its mutex), else
 * after the last "__READ__" then "__WRIT__" (its read/write lock), else
 * after the last "lease-", then "latch-" (its LeaderLatch), else the
 * whole name. One key for every kind,
 * so a listing sorts the same whichever kind reads it; the kinds' names
 * never contain each other's tags, and a path used by two kinds is
 * refused (ZKL_EKIND) rather than ordered. */
const char *zkl__sort_key(const char *name);
/* Total order used everywhere a queue is ordered (key, then name):
 * Curator's, so both agree on who holds a lock. */
int zkl__name_cmp(const char *a, const char *b);
/* kind: a zkl_lock_kind_t with an entry; any other value reads as the
 * mutex. */
const zkl__recipe_t *zkl__recipe(int kind);
/* For the entries of other files: a node of another family (or one of
 * a semaphore's own children) is foreign; the front holds. */
int zkl__family_foreign(const zkl__recipe_t *r, const char *name);
int zkl__front_holds(int front, int after_excluder);
/* The mutex's blocker, for the kinds that queue as it does (a latch):
 * the nearest node before me, of any kind. */
const char *zkl__pred_blocker(const struct String_vector *names,
                              const char *me);
/* The entries of the recipes that live in files of their own. */
extern const zkl__recipe_t zkl__latch_recipe; /* latch.c */
extern const zkl__recipe_t zkl__lease_recipe; /* semaphore.c */

/* ---- semaphore.c ---- */
/* What a lease handle knows of its semaphore: in the handle's block
 * (zkl__lock_extra). */
typedef struct zkl__semconf {
    int max;                  /* max_leases: the limit, or the count
                                 node's seed */
    char *count_path;         /* owned, or NULL */
    zkl__sem_t *grp;          /* the acquire it is part of, or NULL */
    int seen;                 /* the limit record its latest acquire
                                 read (zkl_lease_recorded_limit) */
} zkl__semconf_t;

/* Where an acquire stands with the semaphore's limit record (the path
 * node's data, see semaphore.c). At most one record request is in
 * flight at a time. */
enum zkl__rec {
    ZKL__REC_OFF,     /* no check: a count node, or the record cannot
                         be read or written here */
    ZKL__REC_NONE,    /* waiting for the semaphore's mutex */
    ZKL__REC_READ,    /* a read is due */
    ZKL__REC_READING, /* the read is in flight */
    ZKL__REC_KNOWN,   /* rec and rec_version as read (or written) */
    ZKL__REC_WRITE,   /* a write of our limit is due */
    ZKL__REC_WRITING  /* the write is in flight */
};

/* One zkl_lease_acquire_all(): owned by the client (on its op list) from the
 * call until every lease is granted or failed, then until no count read
 * carries it. Borrows the lease handles (members), owns the mutex
 * handle on <path>/locks. */
struct zkl__sem {
    zkl__op_t op;             /* listed while the acquire runs */
    zkl_client_t *c;
    zkl_lock_t *mutex;        /* owned; NULL once given back */
    char *count_path;         /* owned copy, or NULL */
    uint64_t deadline;        /* monotonic ms, 0 = none */
    int max;                  /* the limit as last known */
    unsigned inflight;        /* count node and record requests
                                 carrying it (and fence pins) */
    uint8_t max_known, ok, done, trylock, count_wanted, rounds;
    uint8_t rec_state;        /* enum zkl__rec */
    uint8_t rec_out;          /* the record request in flight: 0 or 1 */
    uint8_t rec_rounds;       /* ZNONODE answers to record requests */
    int rec;                  /* the record: a limit, 0 none, -1 data
                                 that is not a record */
    int32_t rec_version;      /* the path node's data version */
    uint64_t rec_sent_at;     /* monotonic ms: the request in flight */
    size_t n;
    zkl_lock_t *members[];    /* borrowed */
};

/* ---- multilock.c ---- */
/* One zkl_multi_new(): owned by the user; its member handles by it. */
struct zkl__member;
struct zkl_multi {
    zkl__op_t op;             /* listed while it lives */
    zkl_client_t *c;          /* NULL once the client is gone */
    zkl_multi_cb cb;
    void *arg;
    uint64_t deadline;        /* monotonic ms, 0 = none */
    int status;               /* a release's answer */
    uint8_t goal, trylock, suspended;
    uint8_t lost_untold;      /* its LOST is queued, not yet delivered */
    size_t n;
    struct zkl__member {
        zkl_multi_t *m;
        zkl_lock_t *lk;       /* owned */
        unsigned stale;       /* cancelled acquires not yet answered */
        uint8_t st, suspended;
    } m[];
};

/* ---- guarded.c ---- */
/* Sends ops as one transaction guarded by the nodes of locks (all held).
 * As zkl_lock_write(). */
int zkl__write(zkl_client_t *c, const zkl_lock_t *const *locks,
               size_t nlocks, const zkl_op_t *ops, size_t n,
               zkl_write_cb cb, void *arg);

/* ---- lock.c: the public handle ---- */
/* A handle of this kind, with extra bytes of the kind's own (zeroed,
 * aligned, in the handle's block after its path: zkl__lock_extra()). */
int zkl__lock_new(zkl_lock_t **out, zkl_client_t *c, const char *path,
                  int kind, size_t extra, zkl_lock_cb cb, void *arg);
void *zkl__lock_extra(const zkl_lock_t *lk);
/* Node data a handle was given (zkl_lock_set_data), owned by it. */
typedef struct zkl__data {
    int len;
    char bytes[];             /* len bytes, then a NUL */
} zkl__data_t;
struct zkl_lock {
    zkl__op_t op;             /* listed while it lives; its events go to cb */
    zkl_client_t *c;          /* NULL once the client is gone */
    zkl__att_t *att;          /* current attempt, or NULL when idle */
    zkl_lock_t *pair;         /* the other side of zkl_rwlock_new() */
    zkl_lock_cb cb;
    void *arg;
    zkl__data_t *data;        /* lock node data, NULL: the client's */
    unsigned reentered;       /* reentrant acquires on top of the hold */
    uint8_t kind;             /* zkl_lock_kind_t */
    uint8_t revocable;
    uint8_t reentrant;
    uint8_t notify_queued;    /* report ZKL_LOCK_QUEUED */
    char path[];
};

/* The handle's recipe. */
#define ZKL__RECIPE(lk) zkl__recipe((lk)->kind)

/* ---- contenders.c ---- */
enum zkl__req_mode {
    ZKL__REQ_NAMES,  /* zkl_contenders() */
    ZKL__REQ_EX,     /* zkl_contenders_ex(): and a read per child */
    ZKL__REQ_REVOKE  /* zkl_revoke(): and a write per holder */
};
/* A listing or revocation request: owned by the client from the call
 * until its callback has run (by the ZooKeeper client's completions while
 * any part is in flight, then by its event in c->evq). */
struct zkl__contenders_req {
    zkl__op_t op;             /* listed from the send to its answer */
    zkl_client_t *c;
    int mode;                 /* enum zkl__req_mode */
    union {
        zkl_contenders_cb names;
        zkl_contenders_ex_cb ex;
        zkl_revoke_cb revoke;
    } cb;
    void *arg;
    uint64_t sent_at;
    int status;
    const char **names;       /* sorted, into the same block; NULL if 0 */
    size_t n;
    zkl_contender_t *v;       /* EX and REVOKE: n entries; data owned */
    size_t outstanding;       /* parts in flight */
    size_t answered;          /* EX: reads answered, in send order */
    size_t nrevoked;          /* REVOKE: requests written */
    char path[];
};
/* The request's steps, for the entries of each mode (contenders.c,
 * revoke.c): checked and made (the callback's room set aside), then
 * started with a listing of the path or with the one request for node.
 * The start answers as the public call does; the request is the
 * client's from then on. */
int zkl__req_new(zkl__contenders_req_t **out, zkl_client_t *c,
                 const char *path, int mode, void *arg);
int zkl__req_list(zkl__contenders_req_t *r);
int zkl__req_one(zkl__contenders_req_t *r, const char *node);

/* ---- fence.c: a request whose fate the ZooKeeper client left unknown ----
 * The contract of every request zklock queues for a record of its own
 * (an attempt, a listing, a contenders request, a semaphore acquire, the
 * keepalive): check zkl__fence_up() (or zkl__is_connected(), which says
 * no while the fence is up) before the zoo_a*() call, then hand its
 * result to zkl__fence_sent():
 *   ZKL__SENT     the completion will come: count it in flight;
 *   ZKL__REFUSED  it will not: nothing was queued;
 *   ZKL__MAYBE    it may (ZMARSHALLINGERROR). Count it in flight, and
 *                 pin the record (one more in flight) so that it outlives
 *                 that completion; resolve(c, rec, aux) runs once it is
 *                 known, drops the pin and, if the completion did not
 *                 come, does what that completion would have for a
 *                 request that was not sent. Nothing else of the
 *                 record's is queued meanwhile. */
enum zkl__send { ZKL__SENT, ZKL__REFUSED, ZKL__MAYBE };
typedef void (*zkl__fence_fn)(zkl_client_t *c, void *rec, void *aux);
#define ZKL__FENCE_TOKENS 8
struct zkl__fence {
    zkl__fence_fn resolve;    /* NULL unless active */
    void *rec, *aux;
    uint64_t retry_at;        /* monotonic ms: the next barrier try */
    uint8_t active;
    uint8_t lifted;           /* came down since zkl__fence_lifted() */
    uint8_t tries;            /* tokens used by barriers that may have
                                 been queued (ZMARSHALLINGERROR) */
    uint8_t sure;             /* token of the barrier surely queued, or
                                 ZKL__FENCE_TOKENS */
    struct zkl__fence_tok {
        zkl_client_t *c;      /* a barrier's data: which one came back */
    } tok[ZKL__FENCE_TOKENS];
};
int zkl__fence_sent(zkl_client_t *c, int rc, zkl__fence_fn resolve,
                    void *rec, void *aux);
int zkl__fence_up(const zkl_client_t *c);
/* Resolves the fenced request: from its barrier's completion, and after
 * zookeeper_close() (which has run every completion still queued). */
void zkl__fence_settle(zkl_client_t *c);
/* 1 once after the fence came down: what waited for it may go. */
int zkl__fence_lifted(zkl_client_t *c);
/* When a refused barrier is tried again (monotonic ms), or 0; and the
 * try, from the client's clock. */
uint64_t zkl__fence_next(const zkl_client_t *c);
void zkl__fence_clock(zkl_client_t *c, uint64_t now);

/* ---- client.c ---- */

struct zkl_client {
    zhandle_t *zh;
    char *hosts;              /* with the chroot suffix */
    int session_timeout;
    zkl_conn_cb conn_cb;
    void *conn_arg;
    zkl__cred_t *auth;        /* sent on every session; owned */
    size_t nauth;
    zkl__secure_t *secure;    /* the options' TLS or SASL; owned */
    unsigned nservers;        /* entries of the server list */
    unsigned tls_refusals;    /* handshakes refused for good, in a row */
    unsigned closed_early;    /* attempts closed before an answer */
    int handshake_wait;       /* a TLS step waits for the thread's turn */
    int handshake_want;       /* ... and the socket events it waits on */
    struct ACL_vector acl;    /* for every node the client creates; its
                                 data owned unless it is the open ACL */

    const zkl_loop_ops_t *ops;
    void *loop_data;
    int io_fd;         /* the loop's copy of the socket (see watch()) */
    int io_events;
    int io_retry;      /* the adapter refused: ask again soon */
    dev_t io_dev;      /* which socket io_fd is a copy of */
    ino_t io_ino;

    int depth;                /* nesting of on_io/on_timer */
    uint64_t budget_end;      /* monotonic us: a pass yields after this */
    int more_io;              /* a pass yielded with replies unread */
    int stepping;             /* inside zkl__run_ready */
    int kicks_held;           /* a call starting many operations kicks
                                 once, at its end */
    int freeing;              /* zkl_client_free() requested */
    int closing;              /* teardown under way */
    int dead;                 /* 0, or why the client is unusable */

    /* Connection state as seen by the machine. */
    int connected;            /* zoo_state == CONNECTED */
    int ever_connected;       /* this session connected at least once */
    int expired;              /* the session is dead: renew it */
    int64_t session_id;
    int conn_state;           /* zkl_conn_event_t for zkl_client_state() */
    char local_ip[48];        /* this end of the connection, as text: the
                                 default lock node data; "" if unknown */

    /* How long the server may still keep the session: it expires it no
     * earlier than its last receipt from us plus the timeout, and the
     * send time of a request whose answer came back is a lower bound of
     * that receipt (the last read is not: replies and notifications can
     * arrive long after). Held locks are told LOST at touched_at + 9/10
     * of the timeout; while one is held, a keepalive keeps the bound
     * fresh. A waiter needs none: every way to a grant reads first. */
    uint64_t touched_at;      /* monotonic ms */
    uint64_t ka_sent_at;      /* the keepalive in flight, or 0 */
    uint64_t ka_retry_at;     /* a refused keepalive waits till then */
    int presumed_lost;        /* holds told LOST for this touched_at */

    zkl__att_t *atts;         /* every live attempt */
    size_t natts;
    size_t nholds;            /* attempts with goal HOLD */
    size_t nstalled;
    zkl__att_t *ready, **ready_tail;
    /* Pacing: requests sent and not yet answered, and the attempts whose
     * next step waits until that number leaves room (see run_ready). */
    size_t outstanding, window;
    zkl__att_t *paced, **paced_tail;
    size_t npaced;
    size_t nnotify;           /* attempts that may queue ZKL_LOCK_QUEUED */
    zkl__listing_t *listings; /* joined in this pass, sent at its end */

    /* Operations (op.c): driven ones first, then the others. */
    zkl__op_t *op_head, *op_tail;
    size_t ops_once;          /* ops owed their one answer */
    size_t ops_timed;         /* ops with a deadline */
    size_t ops_watching;      /* ops with a watch hook */
    size_t ops_out;           /* ops' requests whose answers the close
                                 waits for (quiesce) */
    int ops_work;             /* run() work is due */
    zkl__op_t conn;           /* the connection events' op */

    zkl__table_t wtab;        /* waiter table: path hash -> attempts */
    zkl__table_t own;         /* own-node table until attached: then
                                 the views' one, shared by the thread */

    zkl__views_t *views;      /* queue views shared with the clients of
                                 the same servers attached on this
                                 thread (queue.c); NULL until attached */
    zkl_client_t *poke_next;  /* views->poked */
    zkl_client_t *vnext;      /* views->clients */
    unsigned cfg_gen;         /* its latest look at the configuration */
    int cfg_out;              /* a look is counted in the window */
    int poked;                /* on it: kick at the end of this pass */

    zkl__att_t **heap;        /* attempt deadlines */
    size_t heap_len, heap_cap;

    struct zkl__fence fence;  /* a request of unknown fate (fence.c) */
    /* The server throttles (ZTHROTTLEDOP): new requests wait till then,
     * each throttling in a row doubling the wait. */
    uint64_t pause_until;     /* monotonic ms, 0 = not paused */
    unsigned pause_ms;

    zkl_stats_t stats;

    zkl__event_t *evq;        /* deferred user callbacks, FIFO */
    size_t evq_head, evq_len, evq_cap;
    size_t evq_promised;      /* slots the ops set aside (evq.c) */
};

/* After an API call changed something: send what can be sent now and
 * re-arm; never runs a user callback. */
void zkl__kick(zkl_client_t *c);
void zkl__watcher(zhandle_t *zh, int type, int state, const char *path,
                  void *ctx);

/* ---- conn.c: what the session lets the machine do, and what answers
 * tell of it ---- */
/* Whether a handle of c may start anything: 0, ZKL_ECLOSED (c NULL, or
 * going), or why it is unusable (ZKL_EAUTH). */
int zkl__client_usable(const zkl_client_t *c);
/* Connected, and no request of unknown fate in the way (fence.c): the
 * keepalive may go, even while the server throttles. */
int zkl__may_send(const zkl_client_t *c);
/* ... and no server that throttles either: the machine sends only
 * then, and what waited goes once it is true again. */
int zkl__is_connected(zkl_client_t *c);
/* The session timeout the server granted, else the one asked for. */
int zkl__session_timeout(const zkl_client_t *c);
/* Work per loop turn is bounded so busy clients cannot stall the loop:
 * the clients attached on one thread split this budget, and past its
 * share a pass stops, re-arms for "at once", and the loop serves
 * everything else first. */
#define ZKL__PASS_BUDGET_US 400
int zkl__over_budget(const zkl_client_t *c);
/* What a request's result says of the session (completions report it
 * through zkl__on_answer): a server answer (class not CONNLOSS or GONE)
 * means the server heard from us at or after sent_at; ZSESSIONMOVED
 * means this connection is stale (the session was taken over through
 * another server), so it is dropped: the ZooKeeper client reconnects,
 * and the server gives the session back to us. Records these facts
 * only; returns 1 for ZSESSIONEXPIRED, which the caller's layer acts
 * on. */
int zkl__on_result(zkl_client_t *c, int rc, uint64_t sent_at);
/* A request was sent (the ZooKeeper client took it) / answered (its
 * completion ran): the window's count. */
void zkl__req_sent(zkl_client_t *c);
void zkl__req_done(zkl_client_t *c);
/* 1 while touched_at is recent enough that a hold may begin. */
int zkl__touch_fresh(const zkl_client_t *c);

/* ---- waiters.c: path hash -> attempts watching that path ---- */
int zkl__wtab_add(zkl_client_t *c, zkl__att_t *a, uint64_t h);
void zkl__wtab_remove(zkl_client_t *c, zkl__att_t *a);
zkl__att_t *zkl__wtab_take(zkl_client_t *c, uint64_t h);
/* The first attempt filed under h for which match(a, arg), or NULL. */
zkl__att_t *zkl__wtab_find(zkl_client_t *c, uint64_t h,
                           int (*match)(const zkl__att_t *, const void *),
                           const void *arg);

/* Own-node table: the attempts of a chain recipe whose node is KNOWN,
 * by that node's path, so that a waiter whose predecessor is a node of
 * this process can wait on that attempt instead of on a server watch
 * (see watch_pred in attempt.c). One per thread and server list (in the
 * views) once c is attached, c's own before. An attempt is in it
 * exactly while its node is KNOWN (att_set_node). ZKL_ENOMEM leaves it
 * out, which only costs its successors a server watch. */
int zkl__otab_add(zkl_client_t *c, zkl__att_t *a);
void zkl__otab_remove(zkl_client_t *c, zkl__att_t *a);
zkl__att_t *zkl__otab_find(zkl_client_t *c, const char *path);

/* ---- queue.c: views of long queues, shared by a thread's clients ---- */
/* c joins the views of this thread and its server list when it is
 * attached (its attempts counted), and leaves them when it is freed,
 * its attempts out of every view (zkl__queue_clear first). */
int zkl__views_join(zkl_client_t *c);
void zkl__views_part(zkl_client_t *c);
/* c's attempts grew or shrank by delta. */
void zkl__views_count(zkl_client_t *c, int delta);
/* Another client's reply gave c work: kicked once the pass ends. */
void zkl__views_poke(zkl_client_t *c);
/* Takes one client off the poked list of c's views, or NULL. */
zkl_client_t *zkl__views_next_poked(zkl_client_t *c);
/* The first client of c's views (c itself when it shares none); the
 * rest follow through vnext. */
zkl_client_t *zkl__views_clients(zkl_client_t *c);
/* The own-node table c uses: its views', else its own. */
zkl__table_t *zkl__views_otab(zkl_client_t *c);
/* c's session is (re)connected: its views read the ensemble's
 * configuration again. zkl__views_solo(): 1 once the latest read says
 * the servers are one server (no server can lag behind another). */
void zkl__views_connected(zkl_client_t *c);
int zkl__views_solo(const zkl_client_t *c);
/* The attempt (of any client sharing the view) whose node is the next
 * live one above the node at path, when the view knows it; else NULL. */
zkl__att_t *zkl__queue_successor(zkl_client_t *c, const char *path);
/* Covers a (waiting; me its node, in listing sv) when the queue is long
 * enough to be worth it; 1 when covered (a->flags has ZKL__F_QUEUED). */
int zkl__queue_learn(zkl_client_t *c, zkl__att_t *a,
                     const struct String_vector *sv, const char *me);
void zkl__queue_leave(zkl_client_t *c, zkl__att_t *a);
/* For a covered attempt, what lies below sequence seq: only nodes known
 * gone (0: a is at the head), the node of another of our waiting
 * attempts (1, the next one to watch: *name borrowed until the view
 * changes), or something only a listing can tell (-1). */
int zkl__queue_below(zkl_client_t *c, zkl__att_t *a, uint32_t seq,
                     const char **name, uint32_t *found);
void zkl__queue_gone(zkl_client_t *c, zkl__att_t *a, uint32_t seq);
void zkl__queue_gone_path(zkl_client_t *c, const char *path);
/* Nothing below seq is alive any more (a's node at seq holds the lock). */
void zkl__queue_trim(zkl_client_t *c, zkl__att_t *a, uint32_t seq);
/* c's session is gone, or c is: its attempts leave the views, and their
 * nodes are unknown from then on. */
void zkl__queue_clear(zkl_client_t *c);

/* ---- heap.c: attempt deadlines ---- */
int zkl__heap_push(zkl_client_t *c, zkl__att_t *a);
void zkl__heap_remove(zkl_client_t *c, zkl__att_t *a);
zkl__att_t *zkl__heap_top(zkl_client_t *c);

#endif
