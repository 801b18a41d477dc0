/* Leader election: a latch is a mutex by another tag, whose node carries
 * the participant's id. The first node leads, the others wait each on
 * the node before it, as Curator's LeaderLatch does; the attempt machine
 * runs it like a mutex, from this entry of the recipe table. */
#include <string.h>

#include "internal.h"

/* Curator's LeaderLatch sorts every child by the text after "latch-":
 * only latch nodes order the same way for both. */
static int latch_foreign(const zkl__recipe_t *r, const char *name)
{
    (void)r;
    return zkl__kind_of(name) != ZKL_KIND_LATCH;
}

const zkl__recipe_t zkl__latch_recipe = {
    .name = "latch", .tag = "-latch-", .taglen = 7, .subdir = "",
    .blocker = zkl__pred_blocker, .chain = 1, .foreign = latch_foreign,
    .family = "latch", .holds = zkl__front_holds, .tells_place = 1,
};

int zkl_latch_new(zkl_lock_t **out, zkl_client_t *c, const char *path,
                  const char *id, zkl_lock_cb cb, void *arg)
{
    int rc = zkl__lock_new(out, c, path, ZKL_KIND_LATCH, 0, cb, arg);

    /* The participant id is what Curator's latch reads from a node. */
    if (rc == ZKL_OK &&
        (rc = zkl_lock_set_data(*out, id != NULL ? id : "",
                                id != NULL ? strlen(id) : 0)) != ZKL_OK) {
        zkl_lock_free(*out);
        *out = NULL;
    }
    return rc;
}
