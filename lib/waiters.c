/* Waiter table: which attempts watch which path, and own-node table:
 * which attempt's node is at which path (the table itself is the
 * client's until it is attached, then its views': see queue.c). Every
 * watch the library sets uses one watcher function with the client as
 * context, so the ZooKeeper client keeps one registration per path
 * however many local attempts watch it; this table fans the one
 * notification out. Keyed by
 * path hash only: a collision wakes an attempt that re-lists for nothing,
 * which the recipe tolerates by design (it re-checks on every wake-up). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int wtab_grow(zkl_client_t *c)
{
    size_t n = c->wtab_size ? c->wtab_size * 2 : 64, i;
    zkl__att_t **t = zkl__calloc(n, sizeof *t);

    if (t == NULL)
        return ZKL_ENOMEM;
    for (i = 0; i < c->wtab_size; i++) {
        zkl__att_t *a = c->wtab[i], *nx;

        for (; a != NULL; a = nx) {
            nx = a->wnext;
            a->wnext = t[a->whash & (n - 1)];
            t[a->whash & (n - 1)] = a;
        }
    }
    zkl__free(c->wtab);
    c->wtab = t;
    c->wtab_size = n;
    return ZKL_OK;
}

int zkl__wtab_add(zkl_client_t *c, zkl__att_t *a, uint64_t h)
{
    zkl__att_t **b;

    if (a->flags & ZKL__F_IN_TABLE)
        zkl__wtab_remove(c, a);
    if (c->wtab_count >= 2 * c->wtab_size && wtab_grow(c) != ZKL_OK &&
        c->wtab_size == 0)
        return ZKL_ENOMEM;
    a->whash = h;
    b = &c->wtab[h & (c->wtab_size - 1)];
    a->wnext = *b;
    *b = a;
    a->flags |= ZKL__F_IN_TABLE;
    c->wtab_count++;
    return ZKL_OK;
}

void zkl__wtab_remove(zkl_client_t *c, zkl__att_t *a)
{
    zkl__att_t **pp;

    if (!(a->flags & ZKL__F_IN_TABLE))
        return;
    for (pp = &c->wtab[a->whash & (c->wtab_size - 1)]; *pp != NULL;
         pp = &(*pp)->wnext) {
        if (*pp == a) {
            *pp = a->wnext;
            break;
        }
    }
    a->wnext = NULL;
    a->flags &= (uint16_t)~ZKL__F_IN_TABLE;
    c->wtab_count--;
}

zkl__att_t *zkl__wtab_find(zkl_client_t *c, uint64_t h,
                           int (*match)(const zkl__att_t *, const void *),
                           const void *arg)
{
    zkl__att_t *a;

    if (c->wtab_size == 0)
        return NULL;
    for (a = c->wtab[h & (c->wtab_size - 1)]; a != NULL; a = a->wnext)
        if (a->whash == h && match(a, arg))
            return a;
    return NULL;
}

/* Unlinks and returns every attempt filed under h, chained by wnext. */
zkl__att_t *zkl__wtab_take(zkl_client_t *c, uint64_t h)
{
    zkl__att_t **pp, *out = NULL;

    if (c->wtab_size == 0)
        return NULL;
    pp = &c->wtab[h & (c->wtab_size - 1)];
    while (*pp != NULL) {
        zkl__att_t *a = *pp;

        if (a->whash == h) {
            *pp = a->wnext;
            a->flags &= (uint16_t)~ZKL__F_IN_TABLE;
            c->wtab_count--;
            a->wnext = out;
            out = a;
        } else {
            pp = &a->wnext;
        }
    }
    return out;
}

/* Both tables grow at two entries a bucket: a waiter costs less than 16
 * bytes of buckets, chains stay short. The own-node table keeps no hash:
 * a node's path does not change while the node is KNOWN, so it is hashed
 * again on removal and growth. */
static void otab_put(zkl__otab_t *o, zkl__att_t *a)
{
    zkl__att_t **b = &o->t[zkl__hash(a->path) & (o->size - 1)];

    a->onext = *b;
    *b = a;
    o->count++;
}

static int otab_grow(zkl__otab_t *o)
{
    size_t n = o->size ? o->size * 2 : 64, i;
    zkl__otab_t g = {zkl__calloc(n, sizeof *g.t), n, 0};

    if (g.t == NULL)
        return ZKL_ENOMEM;
    for (i = 0; i < o->size; i++) {
        zkl__att_t *a = o->t[i], *nx;

        for (; a != NULL; a = nx) {
            nx = a->onext;
            otab_put(&g, a);
        }
    }
    zkl__free(o->t);
    *o = g;
    return ZKL_OK;
}

int zkl__otab_add(zkl_client_t *c, zkl__att_t *a)
{
    zkl__otab_t *o = zkl__views_otab(c);

    if (a->owned)
        return ZKL_OK;
    if (o->count >= 2 * o->size && otab_grow(o) != ZKL_OK && o->size == 0)
        return ZKL_ENOMEM;
    otab_put(o, a);
    a->owned = 1;
    return ZKL_OK;
}

static int otab_unlink(zkl__att_t **pp, zkl__att_t *a)
{
    for (; *pp != NULL; pp = &(*pp)->onext) {
        if (*pp == a) {
            *pp = a->onext;
            return 1;
        }
    }
    return 0;
}

void zkl__otab_remove(zkl_client_t *c, zkl__att_t *a)
{
    zkl__otab_t *o = zkl__views_otab(c);
    size_t i;

    if (!a->owned)
        return;
    /* Its path cannot have changed while it was in; should a change slip
     * in, a search of every chain still keeps the table sound. */
    if (!otab_unlink(&o->t[zkl__hash(a->path) & (o->size - 1)], a))
        for (i = 0; i < o->size && !otab_unlink(&o->t[i], a); i++)
            ;
    a->onext = NULL;
    a->owned = 0;
    o->count--;
}

zkl__att_t *zkl__otab_find(zkl_client_t *c, const char *path)
{
    zkl__otab_t *o = zkl__views_otab(c);
    zkl__att_t *a;

    if (o->size == 0)
        return NULL;
    for (a = o->t[zkl__hash(path) & (o->size - 1)]; a != NULL; a = a->onext)
        if (strcmp(a->path, path) == 0)
            return a;
    return NULL;
}
