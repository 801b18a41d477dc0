/* The allocator every zklock allocation goes through, so an application
 * can count, pool or fail zklock's memory (test/test-oom.c fails each
 * allocation in turn). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static zkl_allocator_t alloc = {malloc, calloc, realloc, free};

int zkl_set_allocator(const zkl_allocator_t *a)
{
    static const zkl_allocator_t libc = {malloc, calloc, realloc, free};

    if (a == NULL) {
        alloc = libc;
        return ZKL_OK;
    }
    if (a->malloc_fn == NULL || a->calloc_fn == NULL ||
        a->realloc_fn == NULL || a->free_fn == NULL)
        return ZKL_EINVAL;
    alloc = *a;
    return ZKL_OK;
}

void *zkl__malloc(size_t size)
{
    return alloc.malloc_fn(size);
}

void *zkl__calloc(size_t n, size_t size)
{
    return alloc.calloc_fn(n, size);
}

void *zkl__realloc(void *p, size_t size)
{
    return alloc.realloc_fn(p, size);
}

void zkl__free(void *p)
{
    if (p != NULL)
        alloc.free_fn(p);
}

char *zkl__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = alloc.malloc_fn(n);

    if (d != NULL)
        memcpy(d, s, n);
    return d;
}

int zkl__strset(char **slot, const char *s)
{
    char *d = NULL;

    if (s != NULL && (d = zkl__strdup(s)) == NULL)
        return ZKL_ENOMEM;
    zkl__free(*slot);
    *slot = d;
    return ZKL_OK;
}

void *zkl_malloc(size_t size)
{
    return zkl__malloc(size);
}

void *zkl_calloc(size_t n, size_t size)
{
    return zkl__calloc(n, size);
}

void zkl_free(void *p)
{
    zkl__free(p);
}
