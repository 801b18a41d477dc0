/* Min-heap of acquire deadlines, so the one loop timer is armed for the
 * earliest of thousands of timeouts in O(log n). */
#include <stdlib.h>

#include "internal.h"

static void heap_set(zkl_client_t *c, size_t i, zkl__att_t *a)
{
    c->heap[i] = a;
    a->heap_idx = (uint32_t)i;
}

static void sift_up(zkl_client_t *c, size_t i)
{
    zkl__att_t *a = c->heap[i];

    while (i > 0) {
        size_t p = (i - 1) / 2;

        if (c->heap[p]->deadline <= a->deadline)
            break;
        heap_set(c, i, c->heap[p]);
        i = p;
    }
    heap_set(c, i, a);
}

static void sift_down(zkl_client_t *c, size_t i)
{
    zkl__att_t *a = c->heap[i];

    for (;;) {
        size_t l = 2 * i + 1, m = l;

        if (l >= c->heap_len)
            break;
        if (l + 1 < c->heap_len &&
            c->heap[l + 1]->deadline < c->heap[l]->deadline)
            m = l + 1;
        if (c->heap[m]->deadline >= a->deadline)
            break;
        heap_set(c, i, c->heap[m]);
        i = m;
    }
    heap_set(c, i, a);
}

int zkl__heap_push(zkl_client_t *c, zkl__att_t *a)
{
    if (c->heap_len == c->heap_cap) {
        size_t n = c->heap_cap ? c->heap_cap * 2 : 16;
        zkl__att_t **h = zkl__realloc(c->heap, n * sizeof *h);

        if (h == NULL)
            return ZKL_ENOMEM;
        c->heap = h;
        c->heap_cap = n;
    }
    c->heap[c->heap_len] = a;
    sift_up(c, c->heap_len++);
    return ZKL_OK;
}

void zkl__heap_remove(zkl_client_t *c, zkl__att_t *a)
{
    size_t i = a->heap_idx;
    zkl__att_t *moved;

    if (i == UINT32_MAX)
        return;
    a->heap_idx = UINT32_MAX;
    if (--c->heap_len == i)
        return;
    moved = c->heap[c->heap_len];
    heap_set(c, i, moved);
    sift_down(c, i);
    sift_up(c, moved->heap_idx);
}

zkl__att_t *zkl__heap_top(zkl_client_t *c)
{
    return c->heap_len ? c->heap[0] : NULL;
}
