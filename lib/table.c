/* The one hash table of the library: chained, intrusive, keyed by a
 * 64-bit hash. It owns its bucket array only; the entries are the
 * callers' (attempts, queue views), each carrying the one pointer that
 * chains it, so an index costs an entry no allocation and 8 bytes.
 * Which pointer that is, and how to hash an entry again when the table
 * grows, a zkl__tabkind_t says: a zeroed table is an empty one, usable
 * as it is. Buckets double at two entries a bucket (less than 8 bytes
 * of buckets an entry, chains stay short). A growth that cannot get
 * memory keeps the old buckets, longer chains and no error; only a table
 * with no buckets at all refuses an entry. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define NEXT(k, e) (*(void **)((char *)(e) + (k)->link))

static void **chain(const zkl__table_t *t, uint64_t h)
{
    return &t->b[h & (t->size - 1)];
}

static void put(zkl__table_t *t, const zkl__tabkind_t *k, void *e,
                uint64_t h)
{
    void **b = chain(t, h);

    NEXT(k, e) = *b;
    *b = e;
}

static int grow(zkl__table_t *t, const zkl__tabkind_t *k)
{
    zkl__table_t g = {NULL, t->size ? t->size * 2 : k->first_size,
                      t->count};
    size_t i;

    if ((g.b = zkl__calloc(g.size, sizeof *g.b)) == NULL)
        return ZKL_ENOMEM;
    for (i = 0; i < t->size; i++) {
        void *e = t->b[i], *nx;

        for (; e != NULL; e = nx) {
            nx = NEXT(k, e);
            put(&g, k, e, k->hash_of(e));
        }
    }
    zkl__free(t->b);
    *t = g;
    return ZKL_OK;
}

int zkl__table_add(zkl__table_t *t, const zkl__tabkind_t *k, void *e,
                   uint64_t h)
{
    if (t->count >= 2 * t->size && grow(t, k) != ZKL_OK && t->size == 0)
        return ZKL_ENOMEM;
    put(t, k, e, h);
    t->count++;
    return ZKL_OK;
}

void *zkl__table_first(const zkl__table_t *t, uint64_t h)
{
    return t->size != 0 ? *chain(t, h) : NULL;
}

static int unlink_from(zkl__table_t *t, const zkl__tabkind_t *k,
                       void **pp, void *e)
{
    for (; *pp != NULL; pp = &NEXT(k, *pp)) {
        if (*pp == e) {
            *pp = NEXT(k, e);
            NEXT(k, e) = NULL;
            t->count--;
            return 1;
        }
    }
    return 0;
}

/* Looks in h's chain; should the entry not be there (its key changed
 * while it was in, which no caller means to do), every chain: the table
 * stays sound either way. */
int zkl__table_remove(zkl__table_t *t, const zkl__tabkind_t *k, void *e,
                      uint64_t h)
{
    size_t i;

    if (t->size == 0)
        return 0;
    if (unlink_from(t, k, chain(t, h), e))
        return 1;
    for (i = 0; i < t->size; i++)
        if (unlink_from(t, k, &t->b[i], e))
            return 1;
    return 0;
}

void *zkl__table_take(zkl__table_t *t, const zkl__tabkind_t *k, uint64_t h,
                      int (*same)(const void *e, uint64_t h))
{
    void **pp, *out = NULL;

    if (t->size == 0)
        return NULL;
    pp = chain(t, h);
    while (*pp != NULL) {
        void *e = *pp;

        if (same(e, h)) {
            *pp = NEXT(k, e);
            t->count--;
            NEXT(k, e) = out;
            out = e;
        } else {
            pp = &NEXT(k, e);
        }
    }
    return out;
}

void zkl__table_free(zkl__table_t *t)
{
    zkl__free(t->b);
    t->b = NULL;
    t->size = t->count = 0;
}

/* FNV-1a, 64 bits, never 0: the keys are paths, and a collision only
 * costs a spurious re-list or a longer chain. */
uint64_t zkl__hashn(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;

    while (n-- > 0) {
        h ^= (unsigned char)*s++;
        h *= 1099511628211ull;
    }
    return h != 0 ? h : 1;
}

uint64_t zkl__hash(const char *s)
{
    return zkl__hashn(s, strlen(s));
}
