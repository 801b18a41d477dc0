/* Views of long lock queues that several attempts of one thread wait in,
 * so that a woken waiter can often settle its place without listing
 * every child again. Owns the views (zkl__views_t, one per thread and
 * server list), the queue views in them, the buckets of their shared
 * own-node table (waiters.c fills it), and whether their servers are
 * one server.
 *
 * Why this is sound: sequence numbers only grow, so once a listing holds
 * a waiter's node, every node that will ever sit below that waiter is in
 * that listing already; later, nodes below it can only disappear. The
 * view keeps those nodes, sorted by sequence, each either known gone (a
 * deletion watched, a delete of our own, an exists() that found
 * nothing), the live node of one of our own waiting attempts, or
 * unknown. A waiter whose predecessor goes asks the view what is below:
 * nothing but gone nodes means it is at the head (it reads its own node
 * and holds); the node of one of our own waiters, which exists unless
 * someone else deleted it, is the next one to watch; anything unknown (a
 * node of another process, or one whose attempt let go of it, which may
 * have gone unseen) means it lists the children instead. Either way a
 * waiter settles its place in one round trip and never walks the queue
 * node by node: a walk over nodes
 * other sessions deleted unseen would cost one round trip each.
 *
 * "Our own" means any client of this thread with the same server list
 * (chroot included): a process that spreads its waiters over several
 * sessions still knows which nodes are its own and which of them went.
 * Each client keeps its own session, watches and waiter table; only
 * what was learnt about nodes is shared. A node whose session expired is
 * not ours any more: its attempt leaves the view first (zkl__queue_clear)
 * and the node is unknown from then on. A client joins the views of the
 * thread that attaches it to a loop, the thread it is run and freed on
 * (zkl_client_attach), and leaves them when it is freed; a client made
 * on another thread joins nothing before then.
 *
 * Only queues of at least ZKL__QUEUE_MIN children get a view, and only
 * when the thread has more than one attempt: below that a listing is as
 * cheap as the bookkeeping, and a lone waiter's view could only ever say
 * "list". A view lives while attempts use it (ZKL__F_QUEUED, counted in
 * refs). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define ZKL__QUEUE_MIN 16

/* 24 bytes a node. The name itself is not kept: a node is watched only
 * when it is one of our own attempts' (named in its path), and the hash
 * tells a node from another one at the same sequence (a lock path
 * deleted and made anew: their random uuids differ). */
typedef struct zkl__qent {
    uint64_t hash;      /* of the name, never 0; 0 once known gone */
    zkl__att_t *mine;   /* our waiting attempt whose node this is */
    uint32_t seq;
} zkl__qent_t;

struct zkl__queue {
    zkl__queue_t *hnext;  /* the views' table */
    uint64_t hash;        /* of the lock path */
    uint32_t refs;        /* attempts flagged ZKL__F_QUEUED */
    uint32_t head, n, cap;/* live window ents[head..n), sorted by seq */
    uint32_t max_seq;     /* every live node up to this one is in ents */
    int broken;           /* no longer trusted: users list instead */
    zkl__qent_t *ents;
    uint16_t dirlen;
    char dir[];
};

/* The views of the clients made on one thread with one server list. */
struct zkl__views {
    zkl__views_t *next;       /* this thread's, see `here` */
    size_t natts;             /* their attempts, for "worth a view" */
    zkl__table_t qtab;        /* lock path hash -> view */
    zkl_client_t *poked;      /* clients given work by another's reply */
    zkl_client_t *clients;    /* that joined, through vnext: freed
                                 when the last one parts */
    zkl__table_t own;         /* their own-node table (waiters.c) */
    unsigned cfg_gen;         /* connections seen: see zkl__views_solo */
    int solo;                 /* the servers are one server */
    pid_t pid;                /* the process that made them */
    char hosts[];
};

static _Thread_local zkl__views_t *here;

int zkl__views_join(zkl_client_t *c)
{
    zkl__views_t *v;

    /* No node is KNOWN before the first reply, which needs the loop: an
     * own-node table with entries here would be a client that ran
     * without one; it keeps its table and shares nothing. */
    if (c->own.count > 0)
        return ZKL_ENOMEM;
    /* A child of fork() inherits this thread's views, with copies of
     * the parent's clients (their sockets shared with the parent) and
     * of its attempts: a waiter behind one of those would wait on a
     * copy that never moves, and a poke would drive a copy over the
     * parent's connection. The child's clients share only views of
     * its own. */
    for (v = here; v != NULL; v = v->next)
        if (v->pid == getpid() && strcmp(v->hosts, c->hosts) == 0)
            break;
    if (v == NULL) {
        size_t n = strlen(c->hosts) + 1;

        if ((v = zkl__calloc(1, sizeof *v + n)) == NULL)
            return ZKL_ENOMEM;
        memcpy(v->hosts, c->hosts, n);
        v->pid = getpid();
        v->next = here;
        here = v;
    }
    v->natts += c->natts; /* acquires started before the attach */
    c->vnext = v->clients;
    v->clients = c;
    c->views = v;
    return ZKL_OK;
}

void zkl__views_part(zkl_client_t *c)
{
    zkl__views_t *v = c->views, **pp;
    zkl_client_t **cp;

    if (v == NULL)
        return;
    c->views = NULL;
    v->natts -= c->natts;
    for (cp = &v->poked; *cp != NULL; cp = &(*cp)->poke_next)
        if (*cp == c) {
            *cp = c->poke_next;
            break;
        }
    for (cp = &v->clients; *cp != NULL; cp = &(*cp)->vnext)
        if (*cp == c) {
            *cp = c->vnext;
            break;
        }
    c->vnext = NULL;
    if (v->clients != NULL)
        return;
    /* Attempts leave before their client goes: nothing is left. */
    for (pp = &here; *pp != NULL; pp = &(*pp)->next)
        if (*pp == v) {
            *pp = v->next;
            break;
        }
    zkl__table_free(&v->qtab);
    zkl__table_free(&v->own);
    zkl__free(v);
}

zkl_client_t *zkl__views_clients(zkl_client_t *c)
{
    return c->views != NULL ? c->views->clients : c;
}

zkl__table_t *zkl__views_otab(zkl_client_t *c)
{
    return c->views != NULL ? &c->views->own : &c->own;
}

/* Lines "server.N=..." in the ensemble's configuration: every voting
 * member and observer. A standalone server keeps it empty. */
static int count_servers(const char *v, int len)
{
    int i, n = 0;

    for (i = 0; v != NULL && i + 7 <= len; i++)
        if ((i == 0 || v[i - 1] == '\n') && memcmp(v + i, "server.", 7) == 0)
            n++;
    return n;
}

static void config_done(int rc, const char *value, int len,
                        const struct Stat *st, const void *data)
{
    zkl_client_t *c = (zkl_client_t *)(uintptr_t)data;
    zkl__views_t *v = c->views;

    (void)st;
    if (c->cfg_out) {
        c->cfg_out = 0;
        zkl__req_done(c);
    }
    /* Only the answer to the latest look counts: a look sent before
     * another client's connection may predate a reconfiguration. Data
     * the client could not copy says nothing: several, then. */
    if (!c->closing && v != NULL && c->cfg_gen == v->cfg_gen && rc == ZOK &&
        !zkl__data_lost(value, len) && count_servers(value, len) <= 1)
        v->solo = 1;
}

/* Why it matters: each server of an ensemble applies the committed
 * changes in order, but at its own pace, so what one client heard from
 * its server may be news to another client's server; a waiter put at
 * the head by another client's news syncs first (send_confirm in
 * attempt.c). With one server there is no lag and no sync is needed.
 * An address cannot tell (a load balancer may front several servers),
 * so the ensemble's own configuration is read after every connection;
 * until its answer comes, and when it cannot be read (an older server,
 * an ACL), the servers are taken for several. */
void zkl__views_connected(zkl_client_t *c)
{
    zkl__views_t *v = c->views;
    int rc;

    if (v == NULL)
        return;
    v->solo = 0;
    c->cfg_gen = ++v->cfg_gen;
    /* In the window's count only when surely queued: a completion that
     * the ZooKeeper client may run although it said ZMARSHALLINGERROR
     * (see fence.c) then has nothing to undo, and one that never comes
     * leaves the servers taken for several, which is only slower. */
    rc = zoo_agetconfig(c->zh, 0, config_done, c); /* no chroot */
    if (rc == ZOK && !c->cfg_out) {
        c->cfg_out = 1;
        c->stats.requests++;
        zkl__req_sent(c);
    }
}

int zkl__views_solo(const zkl_client_t *c)
{
    return c->views != NULL && c->views->solo;
}

void zkl__views_count(zkl_client_t *c, int delta)
{
    if (c->views != NULL)
        c->views->natts += (size_t)(ptrdiff_t)delta;
}

void zkl__views_poke(zkl_client_t *c)
{
    zkl__views_t *v = c->views;

    if (v == NULL || c->poked)
        return;
    c->poked = 1;
    c->poke_next = v->poked;
    v->poked = c;
}

zkl_client_t *zkl__views_next_poked(zkl_client_t *c)
{
    zkl__views_t *v = c->views;
    zkl_client_t *p;

    if (v == NULL || (p = v->poked) == NULL)
        return NULL;
    v->poked = p->poke_next;
    p->poked = 0;
    p->poke_next = NULL;
    return p;
}

static uint64_t name_hash(const char *name)
{
    return zkl__hash(name) | 1u;
}

static uint64_t queue_hash(const void *e)
{
    return ((const zkl__queue_t *)e)->hash;
}

static const zkl__tabkind_t view_kind = {offsetof(zkl__queue_t, hnext),
                                         queue_hash, 16};

/* The view of the lock path dir (dirlen bytes, no NUL needed). */
static zkl__queue_t *lookup(zkl_client_t *c, const char *dir, size_t dirlen)
{
    zkl__views_t *v = c->views;
    zkl__queue_t *q;
    uint64_t h;

    if (v == NULL || v->qtab.count == 0)
        return NULL;
    h = zkl__hashn(dir, dirlen);
    for (q = zkl__table_first(&v->qtab, h); q != NULL; q = q->hnext)
        if (q->hash == h && q->dirlen == dirlen &&
            memcmp(q->dir, dir, dirlen) == 0)
            return q;
    return NULL;
}

static zkl__queue_t *find(zkl_client_t *c, const zkl__att_t *a)
{
    return lookup(c, a->path, a->dirlen);
}

static void queue_free(zkl__queue_t *q)
{
    zkl__free(q->ents);
    zkl__free(q);
}

static zkl__queue_t *create(zkl_client_t *c, const zkl__att_t *a)
{
    zkl__views_t *v = c->views;
    zkl__queue_t *q;
    uint64_t h = zkl__hashn(a->path, a->dirlen);

    if (v == NULL)
        return NULL;
    q = zkl__calloc(1, sizeof *q + a->dirlen);
    if (q == NULL)
        return NULL;
    q->hash = h;
    q->dirlen = a->dirlen;
    memcpy(q->dir, a->path, a->dirlen);
    if (zkl__table_add(&v->qtab, &view_kind, q, h) != ZKL_OK) {
        zkl__free(q);
        return NULL;
    }
    return q;
}

static void destroy(zkl_client_t *c, zkl__queue_t *q)
{
    zkl__table_remove(&c->views->qtab, &view_kind, q, q->hash);
    queue_free(q);
}

/* Index of the entry with sequence seq in the live window, or the index
 * where it would go. */
static uint32_t search(const zkl__queue_t *q, uint32_t seq)
{
    uint32_t lo = q->head, hi = q->n;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;

        if (q->ents[mid].seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Index of the entry at sequence seq, if it is named name (any name
 * when NULL; a gone entry matches no name); else q->n. */
static uint32_t entry(const zkl__queue_t *q, uint32_t seq, const char *name)
{
    uint32_t i = search(q, seq);

    if (i < q->n && q->ents[i].seq == seq &&
        (name == NULL || q->ents[i].hash == name_hash(name)))
        return i;
    return q->n;
}

static const char *own_name(const zkl__att_t *a)
{
    return a->path + a->dirlen + 1;
}

/* The view covers a, whose node is at index i. */
static void cover(zkl__queue_t *q, zkl__att_t *a, uint32_t i)
{
    if (!(a->flags & ZKL__F_QUEUED)) {
        a->flags |= ZKL__F_QUEUED;
        q->refs++;
    }
    q->ents[i].mine = a;
}

static void mark_gone(zkl__queue_t *q, uint32_t i)
{
    q->ents[i].hash = 0;
    q->ents[i].mine = NULL;
}

static int by_seq(const void *x, const void *y)
{
    uint32_t a = ((const zkl__qent_t *)x)->seq,
             b = ((const zkl__qent_t *)y)->seq;

    return a < b ? -1 : a > b;
}

/* Makes room for k more entries, dropping the dead prefix first. */
static int reserve(zkl__queue_t *q, uint32_t k)
{
    zkl__qent_t *e;
    uint32_t cap;

    if (q->head > 0 && (q->n + k > q->cap || q->head >= q->n / 2)) {
        memmove(q->ents, q->ents + q->head,
                (size_t)(q->n - q->head) * sizeof *q->ents);
        q->n -= q->head;
        q->head = 0;
    }
    if (q->n + k <= q->cap)
        return ZKL_OK;
    cap = q->cap ? q->cap : 32;
    while (cap < q->n + k)
        cap *= 2;
    e = zkl__realloc(q->ents, (size_t)cap * sizeof *e);
    if (e == NULL)
        return ZKL_ENOMEM;
    q->ents = e;
    q->cap = cap;
    return ZKL_OK;
}

/* Appends the names of sv (all orderable) with sequence in [lo, hi],
 * sorted; 0 when out of memory, and nothing changed then. */
static int append(zkl__queue_t *q, const struct String_vector *sv,
                  uint32_t lo, uint32_t hi)
{
    uint32_t k = 0, first;
    int i;

    for (i = 0; i < sv->count; i++) {
        uint32_t s = zkl__seq_of(sv->data[i]);

        if (s >= lo && s <= hi)
            k++;
    }
    if (reserve(q, k) != ZKL_OK)
        return 0;
    first = q->n;
    for (i = 0; i < sv->count; i++) {
        uint32_t s = zkl__seq_of(sv->data[i]);

        if (s >= lo && s <= hi) {
            q->ents[q->n].seq = s;
            q->ents[q->n].hash = name_hash(sv->data[i]);
            q->ents[q->n].mine = NULL;
            q->n++;
        }
    }
    qsort(q->ents + first, q->n - first, sizeof *q->ents, by_seq);
    return 1;
}

/* Every name's place in the queue is its sequence's: false past 2^31,
 * or with a name that is not a lock node. */
static int orderable(const struct String_vector *sv)
{
    int i;

    for (i = 0; i < sv->count; i++)
        if (zkl__seq_of(sv->data[i]) == UINT32_MAX)
            return 0;
    return 1;
}

int zkl__queue_learn(zkl_client_t *c, zkl__att_t *a,
                     const struct String_vector *sv, const char *me)
{
    zkl__queue_t *q;
    uint32_t own = zkl__seq_of(me), i;

    if (own == UINT32_MAX)
        return 0;
    q = find(c, a);
    /* Not worth a view, or no view to trust: no need to scan sv. */
    if (q != NULL ? q->broken
                  : sv->count < ZKL__QUEUE_MIN || c->views == NULL ||
                        c->views->natts < 2)
        return 0;
    if (!orderable(sv)) {
        /* A view in such a queue would order it wrongly; one that
         * exists can no longer be trusted by anyone. */
        if (q != NULL)
            q->broken = 1;
        return 0;
    }
    if (q == NULL) {
        if ((q = create(c, a)) == NULL)
            return 0;
        if (!append(q, sv, 0, own)) {
            destroy(c, q);
            return 0;
        }
        q->max_seq = own;
    } else if (own > q->max_seq) {
        /* Newer than the view: what lies between is in this listing. */
        if (!append(q, sv, q->max_seq + 1, own))
            return 0;
        q->max_seq = own;
    }
    if ((i = entry(q, own, me)) == q->n) {
        /* A name the view does not hold at a sequence it claims to
         * cover: the lock path was deleted and made anew, restarting the
         * sequence. Nobody may trust this view any more. */
        q->broken = 1;
        return 0;
    }
    cover(q, a, i);
    return 1;
}

void zkl__queue_leave(zkl_client_t *c, zkl__att_t *a)
{
    zkl__queue_t *q;
    uint32_t i;

    if (!(a->flags & ZKL__F_QUEUED))
        return;
    a->flags &= (uint16_t)~ZKL__F_QUEUED;
    if ((q = find(c, a)) == NULL)
        return;
    if ((i = entry(q, zkl__seq_of(own_name(a)), NULL)) < q->n &&
        q->ents[i].mine == a)
        q->ents[i].mine = NULL; /* its node may go any time now */
    if (--q->refs == 0)
        destroy(c, q);
}

int zkl__queue_below(zkl_client_t *c, zkl__att_t *a, uint32_t seq,
                     const char **name, uint32_t *found)
{
    zkl__queue_t *q;
    uint32_t i;

    if ((q = find(c, a)) == NULL || q->broken)
        return -1;
    if (!(a->flags & ZKL__F_QUEUED)) {
        /* Listed before the view began, or while the queue was short;
         * its node in the view means a listing held it, and the view
         * covers every sequence up to max_seq. */
        const char *me = own_name(a);
        uint32_t own = zkl__seq_of(me);

        if (own == UINT32_MAX || own > q->max_seq ||
            (i = entry(q, own, me)) == q->n)
            return -1;
        cover(q, a, i);
    }
    /* Only below a's own node: a predecessor whose order is not its
     * sequence's (past 2^31, or a foreign name) is not the view's to
     * follow. */
    if (seq == UINT32_MAX || seq >= zkl__seq_of(own_name(a)))
        return -1;
    for (i = search(q, seq); i > q->head; i--) {
        const zkl__qent_t *e = &q->ents[i - 1];

        if (e->hash == 0)
            continue;
        if (e->mine == NULL)
            return -1; /* unknown: only a listing can tell */
        *found = e->seq;
        *name = own_name(e->mine);
        return 1;
    }
    return 0;
}

void zkl__queue_gone(zkl_client_t *c, zkl__att_t *a, uint32_t seq)
{
    zkl__queue_t *q = find(c, a);
    uint32_t i;

    if (q != NULL && (i = entry(q, seq, NULL)) < q->n)
        mark_gone(q, i);
}

void zkl__queue_gone_path(zkl_client_t *c, const char *path)
{
    const char *slash = strrchr(path, '/');
    zkl__queue_t *q;
    uint32_t seq, i;

    if (c->views == NULL || c->views->qtab.count == 0 || slash == NULL ||
        (seq = zkl__seq_of(slash + 1)) == UINT32_MAX ||
        (q = lookup(c, path, (size_t)(slash - path))) == NULL)
        return;
    if ((i = entry(q, seq, slash + 1)) < q->n)
        mark_gone(q, i);
}

void zkl__queue_trim(zkl_client_t *c, zkl__att_t *a, uint32_t seq)
{
    zkl__queue_t *q = find(c, a);

    if (q == NULL)
        return;
    if (seq == UINT32_MAX)
        q->broken = 1; /* a holder the view cannot place: trust none */
    else
        q->head = search(q, seq);
}

/* The attempt (of any client sharing the view) whose node is the next
 * live one above the node at path, when the view knows it; else NULL. */
zkl__att_t *zkl__queue_successor(zkl_client_t *c, const char *path)
{
    const char *slash = strrchr(path, '/');
    zkl__queue_t *q;
    uint32_t seq, i;

    if (c->views == NULL || c->views->qtab.count == 0 || slash == NULL ||
        (seq = zkl__seq_of(slash + 1)) == UINT32_MAX ||
        (q = lookup(c, path, (size_t)(slash - path))) == NULL ||
        q->broken || seq >= q->max_seq)
        return NULL;
    for (i = search(q, seq + 1); i < q->n; i++) {
        if (q->ents[i].hash == 0)
            continue;
        return q->ents[i].mine; /* NULL: unknown, so nobody's to wake */
    }
    return NULL;
}

void zkl__queue_clear(zkl_client_t *c)
{
    zkl__att_t *a;

    for (a = c->atts; a != NULL; a = a->next)
        zkl__queue_leave(c, a);
}
