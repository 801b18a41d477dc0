/* One worker's requests for one zklock_cache_lock key. The first that
 * misses asks ZooKeeper for the lock (the group's leader); the others of
 * this worker wait here rather than queue in ZooKeeper behind it, and
 * look at the cache again when it lets go, by when the entry it fetched
 * is a hit for them all. Queued in ZooKeeper instead, each would take
 * the lock in turn only to find the entry fresh: one hand-off, a round
 * trip or more, per request, in series (nginx's own proxy_cache_lock
 * does the same collapsing inside one nginx; this is its worker-local
 * half, and ZooKeeper the fleet's).
 *
 * The worker's groups live in one tree keyed by the lock path. A group
 * is allocated (ngx_alloc) by its first member and freed when its last
 * leaves; it owns its copy of the path. A waiting request costs the
 * group nothing beyond its record's link. */
#include "ngx_http_zklock.h"

typedef struct {
    ngx_str_node_t sn;             /* keyed by the lock path, after it */
    ngx_http_zklock_req_t *leader; /* NULL once it let go */
    ngx_queue_t followers;         /* ngx_http_zklock_req_t.link */
} zn_group_t;

static ngx_rbtree_t zn_groups;
static ngx_rbtree_node_t zn_sentinel;

ngx_int_t ngx_http_zklock_group_join(ngx_http_zklock_req_t *st,
                                     ngx_log_t *log)
{
    uint32_t hash = ngx_crc32_short(st->path.data, st->path.len);
    zn_group_t *g;

    if (zn_groups.root == NULL) {
        /* (a macro of three statements) */
        ngx_rbtree_init(&zn_groups, &zn_sentinel,
                        ngx_str_rbtree_insert_value);
    }
    g = (zn_group_t *)ngx_str_rbtree_lookup(&zn_groups, &st->path, hash);
    if (g == NULL) {
        g = ngx_alloc(sizeof *g + st->path.len, log);
        if (g == NULL)
            return NGX_ERROR;
        g->sn.node.key = hash;
        g->sn.str.len = st->path.len;
        g->sn.str.data = (u_char *)(g + 1);
        ngx_memcpy(g->sn.str.data, st->path.data, st->path.len);
        g->leader = NULL;
        ngx_queue_init(&g->followers);
        ngx_rbtree_insert(&zn_groups, &g->sn.node);
    }
    st->group = g;
    if (g->leader == NULL) {
        g->leader = st;
        return NGX_OK;
    }
    st->follower = 1;
    ngx_queue_insert_tail(&g->followers, &st->link);
    return NGX_AGAIN;
}

void ngx_http_zklock_group_leave(ngx_http_zklock_req_t *st)
{
    zn_group_t *g = st->group;
    ngx_http_zklock_req_t *f;
    ngx_queue_t *q;

    if (g == NULL)
        return;
    st->group = NULL;
    if (st->follower) {
        st->follower = 0;
        ngx_queue_remove(&st->link);
    } else if (g->leader == st) {
        /* Every follower looks again: the entry is fresh for all of
         * them, or the first that misses leads a new group. A woken
         * follower is one with no group (zn_event). */
        g->leader = NULL;
        while (!ngx_queue_empty(&g->followers)) {
            q = ngx_queue_head(&g->followers);
            ngx_queue_remove(q);
            f = ngx_queue_data(q, ngx_http_zklock_req_t, link);
            f->group = NULL;
            ngx_post_event(&f->ev, &ngx_posted_events);
        }
    }
    if (g->leader == NULL && ngx_queue_empty(&g->followers)) {
        ngx_rbtree_delete(&zn_groups, &g->sn.node);
        ngx_free(g);
    }
}
