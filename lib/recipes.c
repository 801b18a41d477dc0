/* Recipes: the decision that makes an attempt machine a mutex (and,
 * next, a read/write lock or a semaphore). */
#include <stddef.h>

#include "internal.h"

/* Mutex: the lowest node holds the lock; any other waits for the node
 * just below its own, never the head, so a release wakes one waiter. The
 * order is Curator's (zkl__name_cmp), so Curator's nodes queue with ours.
 * A linear scan, no sort and no allocation: O(children). */
static const char *mutex_blocker(const struct String_vector *sv,
                                 const char *me)
{
    const char *pred = NULL;
    int i;

    for (i = 0; i < sv->count; i++) {
        const char *n = sv->data[i];

        if (zkl__name_cmp(n, me) < 0 &&
            (pred == NULL || zkl__name_cmp(n, pred) > 0))
            pred = n;
    }
    return pred;
}

const zkl__recipe_t zkl__mutex_recipe = {"mutex", mutex_blocker, 1};
