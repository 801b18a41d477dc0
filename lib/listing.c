/* Listings shared by the attempts of one pass: every attempt that lists
 * one lock path while the client steps its ready attempts joins one
 * getChildren, sent when the pass ends. Owns each zkl__listing_t from
 * the first attempt that joins it until its completion has handed the
 * answer to every one of them.
 *
 * Why: a burst of acquires on one path (a thousand readers taking a
 * read/write lock again after a writer) would otherwise send a thousand
 * listings of a thousand children each, where one listing, sent after
 * all of their creates, tells each of them where it stands. A listing
 * taken later than an attempt's own create is as good as one taken right
 * after it: the create is on the wire first (one connection, in order),
 * so the node is in it, and a decision only needs a snapshot that holds
 * the node. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Only the most recent few are searched: bursts on one path come
 * together, and a pass over many paths stays linear. */
#define ZKL__LISTING_SEARCH 8

struct zkl__listing {
    zkl__listing_t *next;     /* c->listings, newest first */
    uint8_t fenced;           /* its send's fate is unknown (fence.c):
                                 freed by listing_resolve */
    uint8_t came;             /* ... and its completion has run */
    const zkl__listing_to_t *to; /* its joiners' machine */
    size_t n, cap;
    zkl__att_t **atts;        /* owned array; each attempt counts this
                                 listing in its inflight */
};

static int same_dir(const zkl__att_t *a, const zkl__att_t *b)
{
    return a->dirlen == b->dirlen && a->kind == b->kind &&
           memcmp(a->path, b->path, a->dirlen) == 0;
}

int zkl__listing_join(zkl_client_t *c, zkl__att_t *a,
                      const zkl__listing_to_t *to)
{
    zkl__listing_t *l = c->listings;
    int i;

    for (i = 0; l != NULL && i < ZKL__LISTING_SEARCH; l = l->next, i++)
        if (l->to == to && same_dir(l->atts[0], a))
            break;
    if (l == NULL || i == ZKL__LISTING_SEARCH) {
        if ((l = zkl__calloc(1, sizeof *l)) == NULL)
            return ZKL_ENOMEM;
        l->to = to;
        l->next = c->listings;
        c->listings = l;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 4;
        zkl__att_t **v = zkl__realloc(l->atts, cap * sizeof *v);

        if (v == NULL) {
            if (l->n == 0) { /* just made: undo */
                c->listings = l->next;
                zkl__free(l);
            }
            return ZKL_ENOMEM;
        }
        l->atts = v;
        l->cap = cap;
    }
    l->atts[l->n++] = a;
    return ZKL_OK;
}

static void listing_done(int rc, const struct String_vector *sv,
                         const struct Stat *st, const void *data)
{
    zkl__listing_t *l = (zkl__listing_t *)(uintptr_t)data;
    size_t i;

    /* Counted once per attempt that joined: each may set a watch from
     * the answer, which then takes its place in the window. */
    for (i = 0; i < l->n; i++) {
        zkl__req_done(l->atts[i]->c);
        l->to->done(rc, sv, st, l->atts[i]);
    }
    if (l->fenced) {
        l->came = 1;
        return;
    }
    zkl__free(l->atts);
    zkl__free(l);
}

/* Each attempt that joined l learns that its listing was not sent:
 * rc, or 0 for "not now" (it lists again once the client sends). */
static void listing_unsent(zkl_client_t *c, zkl__listing_t *l, int rc)
{
    size_t i;

    for (i = 0; i < l->n; i++) {
        zkl__req_done(c);
        l->to->unsent(l->atts[i], rc);
    }
    zkl__free(l->atts);
    zkl__free(l);
}

static void listing_resolve(zkl_client_t *c, void *rec, void *aux)
{
    zkl__listing_t *l = rec;

    (void)aux;
    if (l->came) {
        zkl__free(l->atts);
        zkl__free(l);
    } else {
        listing_unsent(c, l, ZMARSHALLINGERROR);
    }
}

int zkl__listing_send(zkl__att_t *a, strings_stat_completion_t done,
                      const void *data)
{
    zkl_client_t *c = a->c;
    int rc;

    a->path[a->dirlen] = '\0';
    /* A kind that waits for the children to change (a lease) has its
     * listings watch (the server keeps one watch per session and path,
     * so a needless one costs one notification at most). */
    if (zkl__recipe(a->kind)->waits_on_children)
        rc = zoo_awget_children2(c->zh, a->path, zkl__watcher, c, done,
                                 data);
    else
        rc = zoo_aget_children2(c->zh, a->path, 0, done, data);
    a->path[a->dirlen] = '/';
    return rc;
}

void zkl__listing_flush(zkl_client_t *c)
{
    zkl__listing_t *l;

    while ((l = c->listings) != NULL) {
        int rc;

        c->listings = l->next;
        if (zkl__fence_up(c)) {
            listing_unsent(c, l, 0);
            continue;
        }
        rc = zkl__listing_send(l->atts[0], listing_done, l);
        switch (zkl__fence_sent(c, rc, listing_resolve, l, NULL)) {
        case ZKL__REFUSED:
            listing_unsent(c, l, rc);
            continue;
        case ZKL__MAYBE:
            l->fenced = 1; /* counted until listing_resolve() */
            break;
        case ZKL__SENT:
            break;
        }
        c->stats.requests++;
        c->stats.listings++;
    }
}
