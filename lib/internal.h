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
typedef struct zkl__contenders_req zkl__contenders_req_t;
typedef struct zkl__queue zkl__queue_t;
typedef struct zkl__sem zkl__sem_t;
typedef struct zkl__listing zkl__listing_t;
typedef struct zkl__views zkl__views_t;

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
 * with zkl__table_next(), checking each entry's key. */
void *zkl__table_first(const zkl__table_t *t, uint64_t h);
void *zkl__table_next(const zkl__tabkind_t *k, const void *e);
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

/* ---- names.c: paths, Curator's names and order ---- */
int zkl__path_check(const char *path, int allow_root);
void zkl__uuid(char out[ZKL__UUID_LEN + 1]);
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
/* The sequence number of a name whose sort key is ten digits (0 ..
 * 2^31-1), for the queue view's arithmetic; UINT32_MAX for any other
 * name, including the eleven-character and negative suffixes past 2^31,
 * whose Curator order is not creation order (those queues are listed). */
uint32_t zkl__seq_of(const char *name);
/* Length of a lock node name zklock could have created for a lock of
 * this kind ("_c_<uuid>" + the kind's tag + a ten- or eleven-character
 * ZooKeeper sequence), else 0. */
size_t zkl__own_name_len(const char *name, int kind);
/* What kind of lock a child name belongs to, by Curator's tags. */
zkl_lock_kind_t zkl__kind_of(const char *name);

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
};

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
    ZKL__NEXT_SEM      /* a lease: ask its semaphore acquire whether the
                          set may be granted now (semaphore.c) */
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
/* A lease under <lk->path>/leases, waiting (unscheduled) for its
 * semaphore acquire to hold the mutex. */
zkl__att_t *zkl__att_new_lease(zkl_client_t *c, zkl_lock_t *lk,
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
/* For semaphore.c, which decides for leases what the recipes decide for
 * the other kinds. */
void zkl__att_schedule(zkl__att_t *a, int next_op);
void zkl__att_after_reply(zkl__att_t *a, int next_op);
void zkl__att_grant(zkl__att_t *a);
char *zkl__att_name(zkl__att_t *a);
/* For listing.c: a shared listing's answer, or its failure to be sent,
 * for one of the attempts that joined it. */
void zkl__att_list_done(int rc, const struct String_vector *sv,
                        const struct Stat *st, zkl__att_t *a);
/* rc: why the listing was not sent; 0: not now (requests are held),
 * the attempt lists again once they go. */
void zkl__att_list_unsent(zkl__att_t *a, int rc);

/* ---- listing.c: one listing per lock path and pass ---- */
/* a lists its lock path with the others of this pass that do; counted
 * in a->inflight by the caller. ZKL_ENOMEM: list alone. */
int zkl__listing_join(zkl_client_t *c, zkl__att_t *a);
/* Sends one listing of a's lock path (watched for a lease) with this
 * completion: the ZooKeeper client's result. */
int zkl__listing_send(zkl__att_t *a, strings_stat_completion_t done,
                      const void *data);
/* Sends the pass's listings; from the end of zkl__run_ready(). */
void zkl__listing_flush(zkl_client_t *c);
void zkl__run_ready(zkl_client_t *c);
void zkl__on_watch(zkl_client_t *c, int type, const char *path);
void zkl__on_connected(zkl_client_t *c, int reconnect);
void zkl__on_suspended(zkl_client_t *c);
void zkl__on_presumed_expiry(zkl_client_t *c);
void zkl__on_session_gone(zkl_client_t *c, int status);
/* c is being freed: its attempts leave the own-node table, and waiters
 * of other clients that waited on them list again. */
void zkl__on_client_gone(zkl_client_t *c);
void zkl__on_deadlines(zkl_client_t *c, uint64_t now);

/* ---- recipes.c ----
 * What differs between a mutex and the two sides of a read/write lock is
 * the node name's tag and one decision: given the lock path's children
 * and our node, which node must go before we may proceed. The attempt
 * machine does everything else (create, recover, list, watch, re-check,
 * delete). */
typedef struct zkl__recipe {
    const char *name;          /* for logs */
    const char *tag;           /* after "_c_<uuid>" in our node names */
    size_t taglen;
    /* The node to watch, or NULL when our node holds the lock. me is our
     * node's name; names are all children, in no particular order. */
    const char *(*blocker)(const struct String_vector *names,
                           const char *me);
    /* 1 when only the lowest node holds and the blocker is always the
     * next lower node: then a waiter whose blocker went may take the
     * next one from the queue view (queue.c) instead of listing again,
     * and a local holder's release hands on to the waiter behind it. */
    int chain;
    /* 1 when a child of the lock path belongs to another kind of lock,
     * whose order this one cannot honour. */
    int (*foreign)(const char *name);
} zkl__recipe_t;

/* 1 when a write node sorts before node in the listing. */
int zkl__write_before(const struct String_vector *sv, const char *node);
/* kind: zkl_lock_kind_t, ZKL_KIND_MUTEX .. ZKL_KIND_LEASE (a lease's
 * decision is semaphore.c's: its blocker is NULL). */
const zkl__recipe_t *zkl__recipe(int kind);

/* ---- semaphore.c ---- */
/* What a lease handle knows of its semaphore; owned by the handle. */
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

/* One zkl_lease_acquire_all(): owned by the client (on c->sems) from the
 * call until every lease is granted or failed, then until no count read
 * carries it. Borrows the lease handles (members), owns the mutex
 * handle on <path>/locks. */
struct zkl__sem {
    zkl_client_t *c;
    zkl__sem_t *prev, *next;  /* c->sems */
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
int zkl__sem_may_create(const zkl__att_t *a);
void zkl__sem_decide(zkl__att_t *a, const struct String_vector *sv);
void zkl__sem_step(zkl__att_t *a);
void zkl__sem_abandon(zkl__att_t *a, int status);
void zkl__sem_run(zkl_client_t *c);
void zkl__sem_on_watch(zkl_client_t *c, const char *path);
void zkl__sem_on_session_gone(zkl_client_t *c);
void zkl__sem_teardown(zkl_client_t *c);

/* ---- multilock.c ---- */
/* One zkl_multi_new(): owned by the user; its member handles by it. */
struct zkl__member;
struct zkl_multi {
    zkl_client_t *c;          /* NULL once the client is gone */
    zkl_multi_t *prev, *next; /* c->multis */
    zkl_multi_cb cb;
    void *arg;
    uint64_t deadline;        /* monotonic ms, 0 = none */
    unsigned nqueued;         /* events in c->evq naming it */
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
void zkl__multi_deliver(zkl_multi_t *m, int ev, int status);
void zkl__multi_on_clock(zkl_client_t *c, uint64_t now);
/* The nearest deadline of a set acquire, or 0. */
uint64_t zkl__multi_next_deadline(const zkl_client_t *c);
void zkl__multi_close(zkl_client_t *c);
void zkl__multi_teardown(zkl_client_t *c);

/* ---- guarded.c ---- */
/* Sends ops as one transaction guarded by the nodes of locks (all held).
 * As zkl_lock_write(). */
int zkl__write(zkl_client_t *c, const zkl_lock_t *const *locks,
               size_t nlocks, const zkl_op_t *ops, size_t n,
               zkl_write_cb cb, void *arg);
typedef struct zkl__write_req zkl__write_req_t;
void zkl__write_deliver(zkl__write_req_t *w);
/* After zookeeper_close(): frees the batches whose call failed and whose
 * completion never ran. */
void zkl__write_teardown(zkl_client_t *c);

/* ---- lock.c: the public handle ---- */
int zkl__lock_new(zkl_lock_t **out, zkl_client_t *c, const char *path,
                  int kind, zkl_lock_cb cb, void *arg);
struct zkl_lock {
    zkl_client_t *c;          /* NULL once the client is gone */
    zkl_lock_t *prev, *next;  /* c->locks */
    zkl__att_t *att;          /* current attempt, or NULL when idle */
    zkl_lock_t *pair;         /* the other side of zkl_rwlock_new() */
    zkl__semconf_t *sem;      /* a lease's semaphore (owned), else NULL */
    zkl_lock_cb cb;
    void *arg;
    char *data;               /* lock node data (owned), NULL: default */
    int datalen;              /* -1: the client's default */
    unsigned nqueued;         /* events in c->evq naming this handle */
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
void zkl__contenders_deliver(zkl__contenders_req_t *r);
void zkl__contenders_free(zkl__contenders_req_t *r);

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
/* When a refused barrier is tried again (monotonic ms), or 0; and the
 * try, from the client's clock. */
uint64_t zkl__fence_next(const zkl_client_t *c);
void zkl__fence_clock(zkl_client_t *c, uint64_t now);

/* ---- client.c ---- */

/* Deferred user callbacks: one queue of tagged records, delivered in
 * order by one function (drain) and nowhere else. */
enum zkl__ev_kind {
    ZKL__EV_NONE,       /* purged: its handle was freed */
    ZKL__EV_LOCK,       /* lk's callback: ev, status */
    ZKL__EV_CONN,       /* the connection callback: ev */
    ZKL__EV_CONTENDERS, /* req's callback */
    ZKL__EV_MULTI,      /* m's callback: ev, status */
    ZKL__EV_WRITE       /* w's callback */
};
/* 16 bytes: room for one is set aside per pending attempt. */
typedef struct zkl__event {
    uint8_t kind, ev;         /* enum zkl__ev_kind, the user's event */
    int32_t status;
    union {
        zkl_lock_t *lk;
        zkl__contenders_req_t *req;
        zkl_multi_t *m;
        zkl__write_req_t *w;
    } u;
} zkl__event_t;

struct zkl_client {
    zhandle_t *zh;
    char *hosts;              /* with the chroot suffix */
    int session_timeout;
    zkl_conn_cb conn_cb;
    void *conn_arg;
    zkl__cred_t *auth;        /* sent on every session; owned */
    size_t nauth;
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
    zkl_lock_t *locks;        /* every live handle */
    zkl_multi_t *multis;      /* every live multi-lock */
    size_t nmultis;
    size_t nmulti_timed;      /* of those, acquiring with a deadline */
    zkl__write_req_t *orphans; /* guarded writes whose call failed late */
    size_t writes_out;        /* guarded writes not yet answered */
    size_t nnotify;           /* attempts that may queue ZKL_LOCK_QUEUED */
    zkl__sem_t *sems;         /* semaphore acquires under way */
    zkl__listing_t *listings; /* joined in this pass, sent at its end */
    int sem_work;             /* a count node read is due */
    size_t nreqs;             /* contenders requests and guarded writes
                                 not yet delivered */

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
};

/* After an API call changed something: send what can be sent now and
 * re-arm; never runs a user callback. */
void zkl__kick(zkl_client_t *c);
/* Whether a handle of c may start anything: 0, ZKL_ECLOSED (c NULL, or
 * going), or why it is unusable (ZKL_EAUTH). */
int zkl__client_usable(const zkl_client_t *c);
int zkl__is_connected(zkl_client_t *c);
/* Work per loop turn is bounded so busy clients cannot stall the loop:
 * the clients attached on one thread split this budget, and past its
 * share a pass stops, re-arms for "at once", and the loop serves
 * everything else first. */
#define ZKL__PASS_BUDGET_US 400
int zkl__over_budget(const zkl_client_t *c);
/* Every completion reports its result here: a server answer (class not
 * CONNLOSS or GONE) means the server heard from us at or after sent_at;
 * ZSESSIONMOVED means this connection is stale (the session was taken
 * over through another server), so it is dropped: the ZooKeeper client
 * reconnects, and the server gives the session back to us. */
void zkl__on_result(zkl_client_t *c, int rc, uint64_t sent_at);
/* A request was sent (the ZooKeeper client took it) / answered (its
 * completion ran): the window's count. */
void zkl__req_sent(zkl_client_t *c);
void zkl__req_done(zkl_client_t *c);
/* Whether attempts wait for room that there is now. */
int zkl__paced_due(const zkl_client_t *c);
/* 1 while touched_at is recent enough that a hold may begin. */
int zkl__touch_fresh(const zkl_client_t *c);
/* Queue a callback. The queue never grows for an attempt's or a
 * request's events: room for them is set aside when they are accepted
 * (zkl__evq_reserve); past that a failure is logged and the event
 * dropped. */
int zkl__evq_push(zkl_client_t *c, int kind, void *obj, int ev,
                  int status);
/* Makes the callback queue hold want events without growing. Each
 * attempt and each contenders request sets aside one slot, plus
 * ZKL__EVQ_SLACK for connection events and several events of one
 * attempt between two deliveries. */
int zkl__evq_reserve(zkl_client_t *c, size_t want);
#define ZKL__EVQ_SLACK 16
/* Room for one more operation's answer, on top of every pending one's. */
int zkl__evq_reserve_one(zkl_client_t *c);
/* Drops the queued events of one handle (kind, obj), of which
 * *nqueued are queued: the handle is being freed. */
void zkl__evq_purge(zkl_client_t *c, int kind, const void *obj,
                    unsigned *nqueued);
void zkl__watcher(zhandle_t *zh, int type, int state, const char *path,
                  void *ctx);

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
