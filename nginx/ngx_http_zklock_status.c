/* zklock_status: a location that shows the worker's client as one JSON
 * line, as stub_status shows connections: the session, how many requests
 * wait for or hold a lock, and the worker's heap (the C library's live
 * bytes: nginx's pools, zklock's and the ZooKeeper client's memory) and
 * zklock's own share of it (counted by the allocator this module gives
 * zklock). The benchmark reads the memory per waiting request from it. */
#include <malloc.h>

#include "ngx_http_zklock.h"

/* zklock's live bytes in this worker: its allocator, counting. */
static size_t zn_zklock_heap;

static void *zn_malloc(size_t n)
{
    void *p = malloc(n);

    if (p != NULL)
        zn_zklock_heap += malloc_usable_size(p);
    return p;
}

static void *zn_calloc(size_t n, size_t size)
{
    void *p = calloc(n, size);

    if (p != NULL)
        zn_zklock_heap += malloc_usable_size(p);
    return p;
}

static void *zn_realloc(void *p, size_t n)
{
    size_t before = p != NULL ? malloc_usable_size(p) : 0;
    void *q = realloc(p, n);

    if (q != NULL)
        zn_zklock_heap += malloc_usable_size(q) - before;
    else if (n == 0)
        zn_zklock_heap -= before;
    return q;
}

static void zn_free(void *p)
{
    if (p != NULL)
        zn_zklock_heap -= malloc_usable_size(p);
    free(p);
}

void ngx_http_zklock_count_memory(void)
{
    static const zkl_allocator_t a = {zn_malloc, zn_calloc, zn_realloc,
                                      zn_free};

    (void)zkl_set_allocator(&a);
}

static ngx_int_t zn_status_handler(ngx_http_request_t *r)
{
    zkl_client_t *c = ngx_http_zklock_client(NULL), **cs;
    struct mallinfo2 mi = mallinfo2();
    ngx_uint_t i, n, connected = 0;
    size_t pending = 0;
    char server[64] = "";
    ngx_buf_t *b;
    ngx_chain_t out;
    size_t len = 512;
    ngx_int_t rc;

    if (!(r->method & (NGX_HTTP_GET | NGX_HTTP_HEAD)))
        return NGX_HTTP_NOT_ALLOWED;
    if ((rc = ngx_http_discard_request_body(r)) != NGX_OK)
        return rc;
    if (c != NULL)
        (void)zkl_client_server(c, server, sizeof server);
    n = ngx_http_zklock_clients(&cs);
    for (i = 0; i < n; i++) {
        zkl_conn_event_t st = zkl_client_state(cs[i]);

        connected += st == ZKL_CONN_CONNECTED || st == ZKL_CONN_RECONNECTED;
        pending += zkl_client_pending(cs[i]);
    }
    b = ngx_create_temp_buf(r->pool, len);
    if (b == NULL)
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    b->last = ngx_snprintf(
        b->last, len,
        "{\"pid\": %P, \"state\": \"%s\", \"session\": \"0x%xL\", "
        "\"server\": \"%s\", \"sessions\": %ui, \"connected\": %ui, "
        "\"waiting\": %ui, \"holding\": %ui, "
        "\"pending\": %uz, \"heap_bytes\": %uz, \"zklock_heap_bytes\": %uz}\n",
        ngx_pid,
        c != NULL ? zkl_conn_event_name(zkl_client_state(c)) : "none",
        c != NULL ? (uint64_t)zkl_client_session_id(c) : (uint64_t)0,
        server, n, connected, ngx_http_zklock_waiting,
        ngx_http_zklock_holding, pending, mi.uordblks,
        zn_zklock_heap);
    b->last_buf = 1;
    b->last_in_chain = 1;
    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = b->last - b->pos;
    ngx_str_set(&r->headers_out.content_type, "application/json");
    rc = ngx_http_send_header(r);
    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only)
        return rc;
    out.buf = b;
    out.next = NULL;
    return ngx_http_output_filter(r, &out);
}

char *ngx_http_zklock_status(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_core_loc_conf_t *clcf;

    (void)cmd;
    (void)conf;
    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = zn_status_handler;
    return NGX_CONF_OK;
}
