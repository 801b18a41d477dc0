/* The recipe table (one entry per kind of lock node, see internal.h),
 * the entries of the mutex and of the read/write lock's sides, and the
 * kind of a child by its tag. */
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

/* Curator's standardFixForSorting: the text after the last tag, else s. */
static const char *after_last(const char *s, const char *tag, size_t len)
{
    const char *p = s, *last = NULL;

    while ((p = strstr(p, tag)) != NULL) {
        last = p;
        p++;
    }
    return last != NULL ? last + len : s;
}

const char *zkl__sort_key(const char *name)
{
    const char *k = after_last(name, "lock-", 5);

    /* Fast path: a mutex node's key is its digits, which hold no tag. */
    if (k != name)
        return k;
    k = after_last(k, "__READ__", 8);
    k = after_last(k, "__WRIT__", 8);
    if (k != name)
        return k;
    k = after_last(name, "lease-", 6);
    return k != name ? k : after_last(name, "latch-", 6);
}

int zkl__name_cmp(const char *a, const char *b)
{
    int r = strcmp(zkl__sort_key(a), zkl__sort_key(b));

    return r != 0 ? r : strcmp(a, b);
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

/* 1 when a write node sorts before node in the listing. */
static int write_before(const struct String_vector *sv, const char *node)
{
    return nearest_before(sv, node, ZKL_KIND_WRITE) != NULL;
}

/* Mutex: the lowest node holds the lock; any other waits for the node
 * just below its own, never the head, so a release wakes one waiter. The
 * order is Curator's (zkl__name_cmp), so Curator's nodes queue with ours.
 * A writer of a read/write lock decides the same way, over readers and
 * writers. */
const char *zkl__pred_blocker(const struct String_vector *sv,
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

/* A lease sorts by its digits here but by its whole name in Curator's
 * mutex and read/write lock, and a latch by the text after "latch-"
 * only: a node of another family is foreign to both, and so are a
 * semaphore's own children. Names of no kind at all are not: Curator
 * orders them with the rest. */
int zkl__family_foreign(const zkl__recipe_t *r, const char *name)
{
    zkl_lock_kind_t k = zkl__kind_of(name);

    return (k != ZKL_KIND_OTHER &&
            strcmp(zkl__recipe(k)->family, r->family) != 0) ||
           semaphore_child(name);
}

int zkl__front_holds(int front, int after_excluder)
{
    (void)after_excluder;
    return front;
}

/* Readers hold together until the first write node. */
static int read_holds(int front, int after_excluder)
{
    return front || !after_excluder;
}

/* A reader whose blocker has no write node before it waits on the last
 * node in its way. */
static int read_last_blocker(const struct String_vector *sv,
                             const char *pred)
{
    return !write_before(sv, pred);
}

/* The mutex and the two sides of a read/write lock; the latch's and the
 * lease's entries are in their own files (latch.c, semaphore.c). */
static const zkl__recipe_t mutex_recipe = {
    .name = "mutex", .tag = "-lock-", .taglen = 6, .subdir = "",
    .blocker = zkl__pred_blocker, .chain = 1,
    .foreign = zkl__family_foreign, .family = "mutex",
    .holds = zkl__front_holds, .tells_place = 1,
};
static const zkl__recipe_t read_recipe = {
    .name = "read", .tag = "-__READ__", .taglen = 9, .subdir = "",
    .blocker = read_blocker, .foreign = zkl__family_foreign,
    .family = "rw", .holds = read_holds,
    .last_blocker = read_last_blocker, .shared_blocker = 1,
    .tells_place = 1,
};
static const zkl__recipe_t write_recipe = {
    .name = "write", .tag = "-__WRIT__", .taglen = 9, .subdir = "",
    .blocker = zkl__pred_blocker, .foreign = zkl__family_foreign,
    .family = "rw", .holds = zkl__front_holds, .excludes_readers = 1,
    .tells_place = 1,
};

static const zkl__recipe_t *const recipes[] = {
    [ZKL_KIND_MUTEX] = &mutex_recipe,
    [ZKL_KIND_READ] = &read_recipe,
    [ZKL_KIND_WRITE] = &write_recipe,
    [ZKL_KIND_LEASE] = &zkl__lease_recipe,
    [ZKL_KIND_LATCH] = &zkl__latch_recipe,
};

const zkl__recipe_t *zkl__recipe(int kind)
{
    size_t k = (size_t)kind;

    /* ZKL_KIND_OTHER has no entry: not a kind of our nodes. */
    return k < sizeof recipes / sizeof *recipes && recipes[k] != NULL
               ? recipes[k]
               : recipes[ZKL_KIND_MUTEX];
}
