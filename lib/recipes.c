/* Recipes: the tag and the decision that make an attempt machine a mutex,
 * one side of a read/write lock or a semaphore's lease, and the kind of
 * a child by its tag. */
#include <stddef.h>
#include <string.h>

#include "internal.h"

zkl_lock_kind_t zkl__kind_of(const char *name)
{
    /* Curator tells its own kinds apart with contains(): the same here,
     * in the order zkl__sort_key() tries the tags. */
    if (strstr(name, "lock-") != NULL)
        return ZKL_KIND_MUTEX;
    if (strstr(name, "__WRIT__") != NULL)
        return ZKL_KIND_WRITE;
    if (strstr(name, "__READ__") != NULL)
        return ZKL_KIND_READ;
    if (strstr(name, "lease-") != NULL)
        return ZKL_KIND_LEASE;
    if (strstr(name, "latch-") != NULL)
        return ZKL_KIND_LATCH;
    return ZKL_KIND_OTHER;
}

/* A semaphore keeps its mutex and its leases in these two children. */
static int semaphore_child(const char *name)
{
    return strcmp(name, "locks") == 0 || strcmp(name, "leases") == 0;
}

/* The nearest node before me, of any kind (kind < 0) or of one kind. A
 * linear scan, no sort and no allocation: O(children). */
static const char *nearest_before(const struct String_vector *sv,
                                  const char *me, int kind)
{
    const char *pred = NULL;
    int i;

    for (i = 0; i < sv->count; i++) {
        const char *n = sv->data[i];

        if ((kind < 0 || (int)zkl__kind_of(n) == kind) &&
            zkl__name_cmp(n, me) < 0 &&
            (pred == NULL || zkl__name_cmp(n, pred) > 0))
            pred = n;
    }
    return pred;
}

int zkl__write_before(const struct String_vector *sv, const char *node)
{
    return nearest_before(sv, node, ZKL_KIND_WRITE) != NULL;
}

/* Mutex: the lowest node holds the lock; any other waits for the node
 * just below its own, never the head, so a release wakes one waiter. The
 * order is Curator's (zkl__name_cmp), so Curator's nodes queue with ours.
 * A writer of a read/write lock decides the same way, over readers and
 * writers. */
static const char *pred_blocker(const struct String_vector *sv,
                                const char *me)
{
    return nearest_before(sv, me, -1);
}

/* Reader: blocked by the nearest write node before it (Curator waits on
 * the first one; both are correct, but the nearest means a writer's
 * release wakes only the readers that can then hold, not those behind
 * a later writer). */
static const char *read_blocker(const struct String_vector *sv,
                                const char *me)
{
    return nearest_before(sv, me, ZKL_KIND_WRITE);
}

/* A semaphore's lease sorts by its digits here but by its whole name in
 * Curator's mutex and read/write lock: foreign to both. */
static int mutex_foreign(const char *name)
{
    zkl_lock_kind_t k = zkl__kind_of(name);

    return k == ZKL_KIND_READ || k == ZKL_KIND_WRITE ||
           k == ZKL_KIND_LEASE || k == ZKL_KIND_LATCH ||
           semaphore_child(name);
}

static int rw_foreign(const char *name)
{
    zkl_lock_kind_t k = zkl__kind_of(name);

    return k == ZKL_KIND_MUTEX || k == ZKL_KIND_LEASE ||
           k == ZKL_KIND_LATCH || semaphore_child(name);
}

/* Curator's LeaderLatch sorts every child by the text after "latch-":
 * only latch nodes order the same way for both. */
static int latch_foreign(const char *name)
{
    return zkl__kind_of(name) != ZKL_KIND_LATCH;
}

/* Curator counts every child of the leases node as a lease, whatever its
 * name: so does a lease here (semaphore.c), and nothing is foreign. */
static int lease_foreign(const char *name)
{
    (void)name;
    return 0;
}

/* A latch is a mutex by another tag: the first node leads, the others
 * wait each on the node before it, as Curator's LeaderLatch does. */
static const zkl__recipe_t recipes[] = {
    [ZKL_KIND_MUTEX] = {"mutex", "-lock-", 6, pred_blocker, 1, mutex_foreign},
    [ZKL_KIND_READ] = {"read", "-__READ__", 9, read_blocker, 0, rw_foreign},
    [ZKL_KIND_WRITE] = {"write", "-__WRIT__", 9, pred_blocker, 0, rw_foreign},
    [ZKL_KIND_LEASE] = {"lease", "-lease-", 7, NULL, 0, lease_foreign},
    [ZKL_KIND_LATCH] = {"latch", "-latch-", 7, pred_blocker, 1, latch_foreign},
};

const zkl__recipe_t *zkl__recipe(int kind)
{
    return &recipes[kind >= 0 && kind <= ZKL_KIND_LATCH &&
                            kind != ZKL_KIND_OTHER
                        ? kind
                        : ZKL_KIND_MUTEX];
}
