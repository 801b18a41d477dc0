/* A request's lock: the precontent phase handler asks the worker's
 * client for the lock and suspends the request; zklock's callbacks only
 * record what happened and post the record's event; the event's handler
 * acts (resume the phases, answer 503, pass without the lock, or abort
 * a request whose hold was lost), outside zklock's callback, as any
 * nginx event does. The lock is let go when the request is done (see
 * zn_check_done), at the latest with the request (a pool cleanup):
 * freeing the handle releases a hold or cancels a wait without further
 * callbacks. */
#include "ngx_http_zklock.h"

static void zn_cleanup(void *data);
static void zn_event(ngx_event_t *ev);
static void zn_check_done(ngx_http_zklock_req_t *st);
static ngx_int_t zn_start(ngx_http_request_t *r,
                          ngx_http_zklock_loc_conf_t *lcf,
                          ngx_http_zklock_req_t *st, ngx_str_t *key);

/* The backstop beyond zklock's own deadline: zklock always answers an
 * acquire by its timeout; this only keeps a worker that was told to quit
 * from leaving a waiting request behind (a non-cancelable timer). */
#define ZN_BACKSTOP_MS 5000

ngx_uint_t ngx_http_zklock_waiting, ngx_http_zklock_holding;

/* Moves a record between the worker's counts (0: none, 1: waiting, 2:
 * holding). */
static void zn_count(ngx_http_zklock_req_t *st, unsigned to)
{
    if (st->counted == 1)
        ngx_http_zklock_waiting--;
    else if (st->counted == 2)
        ngx_http_zklock_holding--;
    if (to == 1)
        ngx_http_zklock_waiting++;
    else if (to == 2)
        ngx_http_zklock_holding++;
    st->counted = to;
}

ngx_http_zklock_req_t *ngx_http_zklock_find(ngx_http_request_t *r)
{
    ngx_pool_cleanup_t *cln;

    for (cln = r->main->pool->cleanup; cln != NULL; cln = cln->next)
        if (cln->handler == zn_cleanup)
            return cln->data;
    return NULL;
}

static ngx_http_zklock_req_t *zn_record(ngx_http_request_t *r)
{
    ngx_pool_cleanup_t *cln;
    ngx_http_zklock_req_t *st;

    cln = ngx_pool_cleanup_add(r->main->pool, sizeof *st);
    if (cln == NULL)
        return NULL;
    st = cln->data;
    ngx_memzero(st, sizeof *st);
    st->r = r;
    st->ev.handler = zn_event;
    st->ev.data = st;
    st->ev.log = r->connection->log;
    cln->handler = zn_cleanup;
    return st;
}

/* The request is done with its lock, or never got it: the hold or the
 * wait ends (no callback follows), and a cache lock's followers look
 * again. */
static void zn_let_go(ngx_http_zklock_req_t *st)
{
    if (st->lk != NULL) {
        zkl_lock_free(st->lk);
        st->lk = NULL;
    }
    ngx_http_zklock_group_leave(st);
}

static void zn_cleanup(void *data)
{
    ngx_http_zklock_req_t *st = data;

    zn_count(st, 0);
    if (st->ev.timer_set)
        ngx_del_timer(&st->ev);
    if (st->ev.posted) {
        /* (a macro of two statements) */
        ngx_delete_posted_event(&st->ev);
    }
    zn_let_go(st);
}

/* Bytes a key keeps in a node name; every other byte is written %XX, so
 * that a key is one path segment ('/' too is escaped), never "." or "..",
 * and two keys never meet in one name. */
static ngx_uint_t zn_plain(u_char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
           (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.';
}

#define ZN_KEY_MAX 1024 /* bytes of a key, before escaping */

ngx_int_t ngx_http_zklock_lock_path(ngx_http_request_t *r,
                                    ngx_http_zklock_loc_conf_t *lcf,
                                    ngx_str_t *key, ngx_str_t *path)
{
    static const u_char hex[] = "0123456789ABCDEF";
    ngx_uint_t i, dots = 1;
    u_char *p;

    if (key->len == 0 || key->len > ZN_KEY_MAX)
        return NGX_DECLINED;
    for (i = 0; i < key->len; i++)
        if (key->data[i] != '.')
            dots = 0;
    p = ngx_pnalloc(r->pool, lcf->prefix.len + 1 + 3 * key->len + 1);
    if (p == NULL)
        return NGX_ERROR;
    path->data = p;
    p = ngx_cpymem(p, lcf->prefix.data, lcf->prefix.len);
    *p++ = '/';
    for (i = 0; i < key->len; i++) {
        u_char ch = key->data[i];

        /* "." and ".." are not names ZooKeeper takes: such a key is
         * written all escaped. */
        if (zn_plain(ch) && !(dots && ch == '.')) {
            *p++ = ch;
        } else {
            *p++ = '%';
            *p++ = hex[ch >> 4];
            *p++ = hex[ch & 0xf];
        }
    }
    *p = '\0';
    path->len = p - path->data;
    return NGX_OK;
}

/* zklock's callback: records, posts, never acts. */
static void zn_on_lock(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                       void *arg)
{
    ngx_http_zklock_req_t *st = arg;

    switch (ev) {
    case ZKL_LOCK_ACQUIRED:
        if (!zkl_lock_is_held(lk))
            return; /* ended meanwhile: LOST follows */
        st->waited = ngx_current_msec - st->started;
        st->has_token = zkl_lock_token(lk, &st->token) == ZKL_OK;
        st->phase = NGX_HTTP_ZKLOCK_GRANTED;
        break;
    case ZKL_LOCK_FAILED:
        st->waited = ngx_current_msec - st->started;
        st->err = status;
        st->phase = NGX_HTTP_ZKLOCK_FAILED;
        break;
    case ZKL_LOCK_LOST:
        st->err = status;
        if (st->phase == NGX_HTTP_ZKLOCK_GRANTED ||
            st->phase == NGX_HTTP_ZKLOCK_WAITING) {
            /* Lost before the request ran under it (after a grant that
             * ended before its ACQUIRED was told, too): as an acquire
             * that failed. */
            st->phase = NGX_HTTP_ZKLOCK_FAILED;
            break;
        }
        if (st->phase != NGX_HTTP_ZKLOCK_HELD)
            return;
        st->phase = NGX_HTTP_ZKLOCK_LOST;
        break;
    default: /* SUSPENDED, RESTORED, QUEUED...: nothing to do */
        return;
    }
    if (st->ev.timer_set)
        ngx_del_timer(&st->ev);
    ngx_post_event(&st->ev, &ngx_posted_events);
}

static ngx_int_t zn_unavailable(ngx_http_request_t *r,
                                ngx_http_zklock_loc_conf_t *lcf,
                                ngx_http_zklock_req_t *st, const char *what)
{
    ngx_uint_t open = lcf->unavailable == NGX_HTTP_ZKLOCK_FAIL_OPEN;

    ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                  "zklock: %s: %s without the lock (zklock_unavailable %s)",
                  what, open ? "runs" : "refused",
                  open ? "fail_open" : "fail_closed");
    st->why = NGX_HTTP_ZKLOCK_WHY_UNAVAILABLE;
    st->phase = open ? NGX_HTTP_ZKLOCK_PASSED : NGX_HTTP_ZKLOCK_REFUSED;
    return open ? NGX_DECLINED : NGX_HTTP_SERVICE_UNAVAILABLE;
}

/* What a request whose acquire failed does: err says why. */
static ngx_int_t zn_failed(ngx_http_request_t *r,
                           ngx_http_zklock_loc_conf_t *lcf,
                           ngx_http_zklock_req_t *st)
{
    zkl_client_t *c = ngx_http_zklock_client(&st->path);
    zkl_conn_event_t state = zkl_client_state(c);

    zn_let_go(st);
    /* A deadline that passed while the session was not connected, or an
     * acquire that the session's end cut off: ZooKeeper was not there. */
    if ((st->err == ZKL_ETIMEDOUT &&
         state != ZKL_CONN_CONNECTED && state != ZKL_CONN_RECONNECTED) ||
        st->err == ZKL_ECLOSED || st->err == ZKL_ESESSION ||
        st->err == ZKL_ECONNLOSS || st->err == ZKL_EAUTH ||
        st->err == ZKL_ETLS)
        return zn_unavailable(r, lcf, st, zkl_strerror(st->err));
    if (st->err == ZKL_ETIMEDOUT) {
        st->why = NGX_HTTP_ZKLOCK_WHY_TIMEOUT;
        if (lcf->on_timeout == NGX_HTTP_ZKLOCK_TIMEOUT_PASS) {
            ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                          "zklock: no lock within %M ms: runs without it "
                          "(on_timeout=pass)", lcf->timeout);
            st->phase = NGX_HTTP_ZKLOCK_PASSED;
            return NGX_DECLINED;
        }
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "zklock: no lock within %M ms: 503", lcf->timeout);
        st->phase = NGX_HTTP_ZKLOCK_REFUSED;
        return NGX_HTTP_SERVICE_UNAVAILABLE;
    }
    ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                  "zklock: the acquire failed: %s (%s)",
                  zkl_strerror(st->err), zkl_err_name(st->err));
    st->why = NGX_HTTP_ZKLOCK_WHY_ERROR;
    st->phase = NGX_HTTP_ZKLOCK_REFUSED;
    return NGX_HTTP_INTERNAL_SERVER_ERROR;
}

/* The record's event: a zklock answer (posted) or the backstop timer. */
static void zn_event(ngx_event_t *ev)
{
    ngx_http_zklock_req_t *st = ev->data;
    ngx_http_request_t *r = st->r;
    ngx_connection_t *c = r->connection;
    ngx_http_zklock_loc_conf_t *lcf;
    ngx_int_t rc;

    ngx_http_set_log_request(c->log, r);
    lcf = ngx_http_get_module_loc_conf(r, ngx_http_zklock_module);
    if (st->phase == NGX_HTTP_ZKLOCK_HELD && st->answered) {
        ev->timedout = 0;
        zn_check_done(st);
        return;
    }
    if (st->follower) {
        /* Its leader let go (woken: no group any more), or its own
         * deadline passed first (still in the group). Either may come
         * while the other is pending. */
        if (ev->timer_set)
            ngx_del_timer(ev);
        if (ev->posted) {
            ngx_delete_posted_event(ev);
        }
        zn_count(st, 0);
        if (st->group != NULL) {
            ev->timedout = 0;
            ngx_http_zklock_group_leave(st);
            st->waited = ngx_current_msec - st->started;
            st->err = ZKL_ETIMEDOUT;
            st->phase = NGX_HTTP_ZKLOCK_FAILED;
            rc = zn_failed(r, lcf, st);
        } else {
            ev->timedout = 0;
            st->follower = 0;
            rc = zn_start(r, lcf, st, NULL);
            if (rc == NGX_AGAIN)
                return; /* waits again: asks ZooKeeper, or follows */
        }
        goto decided;
    }
    if (ev->timedout) {
        ev->timedout = 0;
        if (st->phase != NGX_HTTP_ZKLOCK_WAITING)
            return;
        ngx_log_error(NGX_LOG_ERR, c->log, 0,
                      "zklock: no answer %M ms past the deadline",
                      (ngx_msec_t)ZN_BACKSTOP_MS);
        st->err = ZKL_ETIMEDOUT;
        st->phase = NGX_HTTP_ZKLOCK_FAILED;
    }
    switch (st->phase) {
    case NGX_HTTP_ZKLOCK_GRANTED:
        st->phase = NGX_HTTP_ZKLOCK_HELD;
        zn_count(st, 2);
        if (lcf->cache && ngx_http_zklock_cache_fresh(r, lcf, NULL) == NGX_OK) {
            /* Another request of this nginx fetched it while this one
             * waited: a hit now, nothing to serialize. */
            zn_let_go(st);
            st->phase = NGX_HTTP_ZKLOCK_FRESH;
            zn_count(st, 0);
        }
        rc = NGX_DECLINED;
        break;
    case NGX_HTTP_ZKLOCK_FAILED:
        zn_count(st, 0);
        rc = zn_failed(r, lcf, st);
        break;
    case NGX_HTTP_ZKLOCK_LOST:
        /* The content phase runs (an upstream request, perhaps half a
         * response sent): all that is safe is to stop it. */
        ngx_log_error(NGX_LOG_ERR, c->log, 0,
                      "zklock: the lock \"%s\" was lost while the request "
                      "held it (%s): the request is aborted",
                      st->lk ? zkl_lock_path(st->lk) : "?",
                      zkl_strerror(st->err));
        /* A reference of our own for the terminate, and the connection
         * marked failed: the upstream's cleanup finalizes the request
         * itself (NGX_DONE), which with only its own reference would
         * free it, or set the connection to keepalive, under the
         * terminate still running (a use after free, and a client left
         * without an answer: a review reproduced both). The terminate's
         * handler then closes request and connection. */
        r->main->count++;
        c->error = 1;
        ngx_http_finalize_request(r, NGX_ERROR);
        ngx_http_run_posted_requests(c);
        return;
    default:
        return;
    }
decided:
    r->read_event_handler = ngx_http_block_reading;
    if (rc == NGX_DECLINED) {
        r->write_event_handler = ngx_http_core_run_phases;
        st->resuming = 1;
        ngx_http_core_run_phases(r);
    } else {
        ngx_http_finalize_request(r, rc);
    }
    ngx_http_run_posted_requests(c);
}

/* When the lock goes. Not when the response's last buffer passes: a
 * dynamic module's filter runs first, so that buffer passes before an
 * SSI include's subrequest runs, and a cache's background update runs
 * after it (a review reproduced both at the origin beside the next
 * holder). Not only when the request's pool goes either: nginx keeps
 * the request through a lingering close, up to lingering_time, for a
 * client that keeps sending (a review kept a key locked 30 s so). So:
 * once the response is out (its last buffer, or a header-only answer),
 * the record's event looks, and looks again every ZN_DONE_POLL_MS,
 * whether the request is done: all its subrequests ended and nginx
 * closing lingering (r->lingering_time set). The pool cleanup releases
 * in every other case (keepalive and plain closes free the request at
 * once). */
#define ZN_DONE_POLL_MS 100

static void zn_answered(ngx_http_request_t *r)
{
    ngx_http_zklock_req_t *st;

    if (r != r->main || (st = ngx_http_zklock_find(r)) == NULL ||
        st->phase != NGX_HTTP_ZKLOCK_HELD || st->lk == NULL || st->answered)
        return;
    st->answered = 1;
    ngx_post_event(&st->ev, &ngx_posted_events);
}

static ngx_http_output_body_filter_pt zn_next_body_filter;
static ngx_http_output_header_filter_pt zn_next_header_filter;

static ngx_int_t zn_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    ngx_chain_t *cl;

    for (cl = in; cl != NULL; cl = cl->next) {
        if (cl->buf->last_buf) {
            zn_answered(r);
            break;
        }
    }
    return zn_next_body_filter(r, in);
}

/* A header-only answer (HEAD, 204, 304) may end without a last buffer.
 * Asked after the rest of the chain: nginx's own header filter, the
 * last, is the one that marks a HEAD header-only. */
static ngx_int_t zn_header_filter(ngx_http_request_t *r)
{
    ngx_int_t rc = zn_next_header_filter(r);

    if (r->header_only)
        zn_answered(r);
    return rc;
}

/* The answered record's event: is the request done? */
static void zn_check_done(ngx_http_zklock_req_t *st)
{
    ngx_http_request_t *r = st->r;

    if (st->lk == NULL)
        return;
    if (r->lingering_time != 0 && r->main->count <= 1) {
        zn_let_go(st);
        zn_count(st, 0);
        return;
    }
    ngx_add_timer(&st->ev, ZN_DONE_POLL_MS);
}

ngx_int_t ngx_http_zklock_init_filter(void)
{
    zn_next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = zn_body_filter;
    zn_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = zn_header_filter;
    return NGX_OK;
}

/* Would this location take the very lock the request holds? */
static ngx_uint_t zn_same_lock(ngx_http_request_t *r,
                               ngx_http_zklock_loc_conf_t *lcf,
                               ngx_http_zklock_req_t *st)
{
    zkl_lock_kind_t kind = lcf->shared ? ZKL_KIND_READ : ZKL_KIND_WRITE;
    ngx_str_t key, path;

    if (st->lk == NULL || zkl_lock_kind(st->lk) != kind ||
        ngx_http_complex_value(r, lcf->key, &key) != NGX_OK ||
        ngx_http_zklock_lock_path(r, lcf, &key, &path) != NGX_OK)
        return 0;
    return path.len == st->path.len &&
           ngx_memcmp(path.data, st->path.data, path.len) == 0;
}

ngx_int_t ngx_http_zklock_handler(ngx_http_request_t *r)
{
    ngx_http_zklock_loc_conf_t *lcf;
    ngx_http_zklock_req_t *st;
    ngx_str_t key;
    ngx_int_t rc;

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_zklock_module);
    if (lcf->set != 1 || r != r->main)
        return NGX_DECLINED;
    st = ngx_http_zklock_find(r);
    if (st != NULL) {
        switch (st->phase) {
        case NGX_HTTP_ZKLOCK_WAITING:
        case NGX_HTTP_ZKLOCK_GRANTED:
        case NGX_HTTP_ZKLOCK_FAILED:
        case NGX_HTTP_ZKLOCK_LOST:
            return NGX_AGAIN; /* our event comes */
        case NGX_HTTP_ZKLOCK_HELD:
            /* An internal redirect to a location of the same lock keeps
             * it (released at the end of the response). To another
             * lock, it lets this one go and asks for that one: what ran
             * under this one is over (a redirect comes after its
             * content's answer, or before any content), and holding it
             * while waiting for another could deadlock two requests
             * redirected crosswise (a review saw the other key fetched
             * beside its holder when the first lock was kept). */
            if (st->resuming) {
                /* The phases resumed after the grant: the lock is the
                 * one just asked for (a key evaluated again could name
                 * another, and the request would never run). */
                st->resuming = 0;
                return NGX_DECLINED;
            }
            if (zn_same_lock(r, lcf, st))
                return NGX_DECLINED;
            zn_let_go(st);
            zn_count(st, 0);
            goto afresh;
        case NGX_HTTP_ZKLOCK_PASSED:
        case NGX_HTTP_ZKLOCK_FRESH:
            /* Decided just now: the phases that zn_event resumed after
             * the wait run this handler again first. */
            if (st->resuming) {
                st->resuming = 0;
                return NGX_DECLINED;
            }
            /* fall through */
        default:
        afresh:
            /* Refused, passed without it, a fresh cache entry, or none,
             * and reached again through an internal redirect
             * (error_page 503 = @retry, try_files, X-Accel-Redirect),
             * perhaps for another key: decided afresh, or it would run
             * unlocked beside a holder (a review reproduced that). */
            zn_let_go(st);
            /* Nothing of the last decision may act on the next: the
             * answered record's posted event or poll (a post_action
             * redirect comes after the response is out; a review saw
             * the stale event time out a follower at once). */
            if (st->ev.timer_set)
                ngx_del_timer(&st->ev);
            if (st->ev.posted) {
                ngx_delete_posted_event(&st->ev);
            }
            st->ev.timedout = 0;
            st->phase = NGX_HTTP_ZKLOCK_NONE;
            st->why = NGX_HTTP_ZKLOCK_WHY_NONE;
            st->err = 0;
            st->has_token = 0;
            st->waited = 0;
            st->began = 0;
            st->answered = 0;
            break;
        }
    } else if ((st = zn_record(r)) == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    if (ngx_http_complex_value(r, lcf->key, &key) != NGX_OK)
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    rc = ngx_http_zklock_lock_path(r, lcf, &key, &st->path);
    if (rc == NGX_ERROR)
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    if (rc == NGX_DECLINED) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "zklock: the key is %s (%uz bytes)",
                      key.len == 0 ? "empty" : "too long", key.len);
        st->why = NGX_HTTP_ZKLOCK_WHY_ERROR;
        st->phase = NGX_HTTP_ZKLOCK_REFUSED;
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    return zn_start(r, lcf, st, &key);
}

/* Decides a request's lock once its path is known, first or again (a
 * follower whose leader let go): a fresh cache entry needs none; a cache
 * lock whose key another request of this worker asked for waits for
 * that one; else ZooKeeper is asked, for what is left of the timeout.
 * key: the key's value, or NULL to evaluate it again. */
static ngx_int_t zn_start(ngx_http_request_t *r,
                          ngx_http_zklock_loc_conf_t *lcf,
                          ngx_http_zklock_req_t *st, ngx_str_t *key)
{
    zkl_client_t *c;
    zkl_conn_event_t state;
    ngx_msec_t left;
    ngx_uint_t again = st->began; /* a follower woken: it waits already */
    int zrc;

    if (!st->began) {
        st->started = ngx_current_msec;
        st->began = 1;
    }
    st->waited = ngx_current_msec - st->started;
    if (lcf->cache && ngx_http_zklock_cache_fresh(r, lcf, key) == NGX_OK) {
        st->phase = NGX_HTTP_ZKLOCK_FRESH;
        return NGX_DECLINED;
    }
    c = ngx_http_zklock_client(&st->path);
    if (c == NULL)
        return zn_unavailable(r, lcf, st, "no zklock_servers");
    /* Not connected now, after having been: ZooKeeper is away (a worker
     * that has not connected yet lets the request wait its timeout). A
     * follower woken meanwhile waited in the worker where it would have
     * waited in ZooKeeper, whose queue outlives a short loss of the
     * connection: it goes on waiting, for what is left of its timeout
     * (a review saw a 2.5 s outage turn four waiting requests into 503s,
     * or with fail_open into four fetches at once). */
    state = zkl_client_state(c);
    if (state == ZKL_CONN_AUTH_FAILED ||
        (!again && state == ZKL_CONN_SUSPENDED &&
         ngx_http_zklock_ever_connected(c)))
        return zn_unavailable(r, lcf, st, "the session is not connected");
    if (st->waited >= lcf->timeout) {
        st->err = ZKL_ETIMEDOUT;
        st->phase = NGX_HTTP_ZKLOCK_FAILED;
        return zn_failed(r, lcf, st);
    }
    left = lcf->timeout - st->waited;
    /* No memory for a group (NGX_ERROR): it asks ZooKeeper alone. */
    if (lcf->cache &&
        ngx_http_zklock_group_join(st, r->connection->log) == NGX_AGAIN) {
        st->phase = NGX_HTTP_ZKLOCK_WAITING;
        zn_count(st, 1);
        ngx_add_timer(&st->ev, left);
        r->read_event_handler = ngx_http_test_reading;
        return NGX_AGAIN;
    }
    zrc = zkl_lock_new_kind(&st->lk, c, (const char *)st->path.data,
                            lcf->shared ? ZKL_KIND_READ : ZKL_KIND_WRITE,
                            zn_on_lock, st);
    if (zrc == ZKL_OK)
        zrc = zkl_lock_acquire(st->lk, (long)left);
    if (zrc != ZKL_OK) {
        st->err = zrc;
        st->phase = NGX_HTTP_ZKLOCK_FAILED;
        return zn_failed(r, lcf, st);
    }
    st->phase = NGX_HTTP_ZKLOCK_WAITING;
    zn_count(st, 1);
    ngx_add_timer(&st->ev, left + ZN_BACKSTOP_MS);
    /* A client that goes away while its request waits ends the request
     * (499), and with it the wait. */
    r->read_event_handler = ngx_http_test_reading;
    return NGX_AGAIN;
}
