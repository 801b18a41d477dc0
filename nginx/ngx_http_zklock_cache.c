/* Is a proxy cache entry fresh, so that the request will be a hit and
 * there is no fetch to serialize? zklock_cache_lock asks before it
 * takes the lock (a hit runs at once) and again once it holds it
 * (another request of this nginx may have fetched the entry meanwhile).
 *
 * The answer comes as nginx's own lookup finds it: the entry's node in
 * the zone's shared tree (keyed by the MD5 of the cache key), then the
 * validity in the cache file's header. nginx keeps no validity in the
 * node for an entry that is not an error, so the header is read (a
 * small read of a file the page cache holds, as nginx's own lookup
 * does), and only for a request the proxy will look up at all (its
 * method cached, no proxy_cache_bypass). Every doubt answers "not
 * fresh": a request then takes the
 * lock, which costs a round trip, never a second fetch.
 *
 * nginx holds an entry valid while valid_sec >= ngx_time() (whole
 * seconds, the loop turn's clock). Fresh here means valid_sec > now: the
 * entry stays valid for the proxy's lookup unless that lookup comes two
 * seconds of clock later. For a request without a body it comes in
 * this very loop turn (the same clock), or with aio a turn or so later.
 * A request with a body is never fresh: the proxy reads the whole body
 * before it looks, which takes as long as the client likes (a review
 * had one sent 4.5 s late look, find the entry expired and fetch beside
 * the lock's holder). A wider margin cost too much: with a 1 s margin
 * and a 2 s max-age, every request of the entry's second half of life
 * took the lock around what was a hit, one at a time per worker
 * (bench/nginx's cache run). Left: an aio header read that completes
 * over a second of clock later, and an eviction between the two looks,
 * each fetching once without the lock. */
#include "ngx_http_zklock.h"

#include <ngx_md5.h>

static ngx_http_file_cache_node_t *zn_lookup(ngx_http_file_cache_t *cache,
                                             const u_char *key)
{
    ngx_rbtree_node_t *node = cache->sh->rbtree.root;
    ngx_rbtree_node_t *sentinel = cache->sh->rbtree.sentinel;
    ngx_rbtree_key_t node_key;
    ngx_http_file_cache_node_t *fcn;
    ngx_int_t rc;

    ngx_memcpy(&node_key, key, sizeof node_key);
    while (node != sentinel) {
        if (node_key != node->key) {
            node = node_key < node->key ? node->left : node->right;
            continue;
        }
        fcn = (ngx_http_file_cache_node_t *)node;
        rc = ngx_memcmp(&key[sizeof node_key], fcn->key,
                        NGX_HTTP_CACHE_KEY_LEN - sizeof node_key);
        if (rc == 0)
            return fcn;
        node = rc < 0 ? node->left : node->right;
    }
    return NULL;
}

/* The proxy module's settings for this location: its location
 * configuration starts with its ngx_http_upstream_conf_t, as every
 * upstream module's does. */
static ngx_http_upstream_conf_t *zn_upstream_conf(ngx_http_request_t *r)
{
    return ngx_http_get_module_loc_conf(r, ngx_http_proxy_module);
}

/* The zone: zklock_cache_lock zone=NAME, else the location's own
 * proxy_cache. */
static ngx_shm_zone_t *zn_zone(ngx_http_request_t *r,
                               ngx_http_zklock_loc_conf_t *lcf)
{
    ngx_http_upstream_conf_t *ucf;

    if (lcf->zone != NULL)
        return lcf->zone;
    ucf = zn_upstream_conf(r);
    return ucf != NULL ? ucf->cache_zone : NULL;
}

/* Will the proxy look in its cache at all, now? Not for a method it does
 * not cache (a POST), nor when proxy_cache_bypass says so: such a
 * request goes to the origin whatever the entry, so it must hold the
 * lock (a review saw three bypassing requests at the origin at once, let
 * through as "fresh"). Nor now for a request with a body, which is read
 * first (see above). */
static ngx_int_t zn_will_look(ngx_http_request_t *r)
{
    ngx_http_upstream_conf_t *ucf = zn_upstream_conf(r);

    if (r->headers_in.content_length_n > 0 || r->headers_in.chunked)
        return NGX_DECLINED;
    if (ucf == NULL)
        return NGX_OK;
    if (!(r->method & ucf->cache_methods))
        return NGX_DECLINED;
    if (ucf->cache_bypass != NULL &&
        ngx_http_test_predicates(r, ucf->cache_bypass) == NGX_DECLINED)
        return NGX_DECLINED;
    return NGX_OK;
}

ngx_int_t ngx_http_zklock_cache_fresh(ngx_http_request_t *r,
                                      ngx_http_zklock_loc_conf_t *lcf,
                                      ngx_str_t *key)
{
    ngx_shm_zone_t *zone = zn_zone(r, lcf);
    ngx_http_file_cache_t *cache;
    ngx_http_file_cache_node_t *fcn;
    ngx_http_file_cache_header_t h;
    u_char md5[NGX_HTTP_CACHE_KEY_LEN], *name, *p;
    ngx_str_t k;
    ngx_md5_t ctx;
    ngx_uint_t exists;
    size_t len;
    ngx_fd_t fd;
    ssize_t n;

    if (zone == NULL || (cache = zone->data) == NULL || cache->sh == NULL ||
        zn_will_look(r) != NGX_OK)
        return NGX_DECLINED;
    if (key == NULL) {
        if (ngx_http_complex_value(r, lcf->key, &k) != NGX_OK)
            return NGX_DECLINED;
        key = &k;
    }
    /* nginx's key: the MD5 of the cache key's value (one proxy_cache_key
     * value: one part). */
    ngx_md5_init(&ctx);
    ngx_md5_update(&ctx, key->data, key->len);
    ngx_md5_final(md5, &ctx);

    ngx_shmtx_lock(&cache->shpool->mutex);
    fcn = zn_lookup(cache, md5);
    exists = fcn != NULL && fcn->exists && !fcn->updating && !fcn->error;
    ngx_shmtx_unlock(&cache->shpool->mutex);
    if (!exists)
        return NGX_DECLINED;

    /* The file's name, as nginx makes it: path, levels, hex MD5. */
    len = cache->path->name.len + 1 + cache->path->len +
          2 * NGX_HTTP_CACHE_KEY_LEN;
    name = ngx_pnalloc(r->pool, len + 1);
    if (name == NULL)
        return NGX_DECLINED;
    ngx_memcpy(name, cache->path->name.data, cache->path->name.len);
    p = name + cache->path->name.len + 1 + cache->path->len;
    p = ngx_hex_dump(p, md5, NGX_HTTP_CACHE_KEY_LEN);
    *p = '\0';
    ngx_create_hashed_filename(cache->path, name, len);

    fd = ngx_open_file(name, NGX_FILE_RDONLY, NGX_FILE_OPEN, 0);
    if (fd == NGX_INVALID_FILE)
        return NGX_DECLINED;
    n = pread(fd, &h, sizeof h, 0);
    ngx_close_file(fd);
    if (n != (ssize_t)sizeof h || h.version != NGX_HTTP_CACHE_VERSION ||
        h.vary_len != 0) /* variants: nginx looks further; so do we not */
        return NGX_DECLINED;
    return h.valid_sec > ngx_time() ? NGX_OK : NGX_DECLINED;
}
