/* Waiter table: which attempts watch which path, and own-node table:
 * which attempt's node is at which path (the table itself is the
 * client's until it is attached, then its views': see queue.c). Every
 * watch the library sets uses one watcher function with the client as
 * context, so the ZooKeeper client keeps one registration per path
 * however many local attempts watch it; this table fans the one
 * notification out. Keyed by
 * path hash only: a collision wakes an attempt that re-lists for nothing,
 * which the recipe tolerates by design (it re-checks on every wake-up). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static uint64_t att_whash(const void *e)
{
    return ((const zkl__att_t *)e)->whash;
}

static const zkl__tabkind_t waiters = {offsetof(zkl__att_t, wnext),
                                       att_whash, 64};

int zkl__wtab_add(zkl_client_t *c, zkl__att_t *a, uint64_t h)
{
    if (a->flags & ZKL__F_IN_TABLE)
        zkl__wtab_remove(c, a);
    if (zkl__table_add(&c->wtab, &waiters, a, h) != ZKL_OK)
        return ZKL_ENOMEM;
    a->whash = h;
    a->flags |= ZKL__F_IN_TABLE;
    return ZKL_OK;
}

void zkl__wtab_remove(zkl_client_t *c, zkl__att_t *a)
{
    if (!(a->flags & ZKL__F_IN_TABLE))
        return;
    zkl__table_remove(&c->wtab, &waiters, a, a->whash);
    a->wnext = NULL;
    a->flags &= (uint16_t)~ZKL__F_IN_TABLE;
}

zkl__att_t *zkl__wtab_find(zkl_client_t *c, uint64_t h,
                           int (*match)(const zkl__att_t *, const void *),
                           const void *arg)
{
    zkl__att_t *a;

    for (a = zkl__table_first(&c->wtab, h); a != NULL; a = a->wnext)
        if (a->whash == h && match(a, arg))
            return a;
    return NULL;
}

static int filed_under(const void *e, uint64_t h)
{
    return ((const zkl__att_t *)e)->whash == h;
}

/* Unlinks and returns every attempt filed under h, chained by wnext. */
zkl__att_t *zkl__wtab_take(zkl_client_t *c, uint64_t h)
{
    zkl__att_t *out = zkl__table_take(&c->wtab, &waiters, h, filed_under),
               *a;

    for (a = out; a != NULL; a = a->wnext)
        a->flags &= (uint16_t)~ZKL__F_IN_TABLE;
    return out;
}

/* The own-node table keeps no hash: a node's path does not change while
 * the node is KNOWN, so it is hashed again on removal and growth. */
static uint64_t att_path_hash(const void *e)
{
    return zkl__hash(((const zkl__att_t *)e)->path);
}

static const zkl__tabkind_t own_nodes = {offsetof(zkl__att_t, onext),
                                         att_path_hash, 64};

int zkl__otab_add(zkl_client_t *c, zkl__att_t *a)
{
    if (a->owned)
        return ZKL_OK;
    if (zkl__table_add(zkl__views_otab(c), &own_nodes, a,
                       zkl__hash(a->path)) != ZKL_OK)
        return ZKL_ENOMEM;
    a->owned = 1;
    return ZKL_OK;
}

void zkl__otab_remove(zkl_client_t *c, zkl__att_t *a)
{
    if (!a->owned)
        return;
    zkl__table_remove(zkl__views_otab(c), &own_nodes, a, zkl__hash(a->path));
    a->onext = NULL;
    a->owned = 0;
}

zkl__att_t *zkl__otab_find(zkl_client_t *c, const char *path)
{
    zkl__att_t *a;

    for (a = zkl__table_first(zkl__views_otab(c), zkl__hash(path));
         a != NULL; a = a->onext)
        if (strcmp(a->path, path) == 0)
            return a;
    return NULL;
}
