/* $zklock_status, $zklock_wait_ms and $zklock_token: what the request's
 * lock did, for the access log and for headers (proxy_set_header
 * X-Fencing-Token $zklock_token). Read from the request's record, so
 * they hold until the request ends, the log phase included. */
#include "ngx_http_zklock.h"

static ngx_str_t zn_status_text[] = {
    ngx_string("-"),           /* NONE */
    ngx_string("waiting"),     /* WAITING */
    ngx_string("acquired"),    /* GRANTED */
    ngx_string("acquired"),    /* HELD */
    ngx_string("failed"),      /* FAILED */
    ngx_string("lost"),        /* LOST */
    ngx_string("passed"),      /* PASSED */
    ngx_string("fresh"),       /* FRESH */
    ngx_string("refused"),     /* REFUSED */
};

/* A request that ran without the lock, or was refused, says why. */
static ngx_str_t zn_why_text[] = {
    ngx_null_string,
    ngx_string("timeout"),
    ngx_string("unavailable"),
    ngx_string("error"),
};

static void zn_set(ngx_http_variable_value_t *v, u_char *data, size_t len)
{
    v->data = data;
    v->len = len;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;
}

static ngx_int_t zn_status(ngx_http_request_t *r,
                           ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_zklock_req_t *st = ngx_http_zklock_find(r);
    ngx_str_t *s, *why;
    u_char *p;

    (void)data;
    s = &zn_status_text[st != NULL && st->phase < sizeof zn_status_text /
                                                     sizeof zn_status_text[0]
                            ? st->phase
                            : 0];
    if (st == NULL || st->why == NGX_HTTP_ZKLOCK_WHY_NONE ||
        st->why >= sizeof zn_why_text / sizeof zn_why_text[0]) {
        zn_set(v, s->data, s->len);
        return NGX_OK;
    }
    /* "passed:timeout", "refused:unavailable"... */
    why = &zn_why_text[st->why];
    p = ngx_pnalloc(r->pool, s->len + 1 + why->len);
    if (p == NULL)
        return NGX_ERROR;
    zn_set(v, p, ngx_sprintf(p, "%V:%V", s, why) - p);
    return NGX_OK;
}

static ngx_int_t zn_wait_ms(ngx_http_request_t *r,
                            ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_zklock_req_t *st = ngx_http_zklock_find(r);
    ngx_msec_t ms;
    u_char *p;

    (void)data;
    if (st == NULL || st->phase == NGX_HTTP_ZKLOCK_NONE) {
        v->not_found = 1;
        return NGX_OK;
    }
    ms = st->phase == NGX_HTTP_ZKLOCK_WAITING
             ? ngx_current_msec - st->started
             : st->waited;
    p = ngx_pnalloc(r->pool, NGX_INT_T_LEN);
    if (p == NULL)
        return NGX_ERROR;
    zn_set(v, p, ngx_sprintf(p, "%M", ms) - p);
    return NGX_OK;
}

static ngx_int_t zn_token(ngx_http_request_t *r,
                          ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_zklock_req_t *st = ngx_http_zklock_find(r);
    u_char *p;

    (void)data;
    if (st == NULL || !st->has_token) {
        v->not_found = 1;
        return NGX_OK;
    }
    p = ngx_pnalloc(r->pool, NGX_INT64_LEN);
    if (p == NULL)
        return NGX_ERROR;
    zn_set(v, p, ngx_sprintf(p, "%uL", st->token) - p);
    return NGX_OK;
}

static ngx_http_variable_t zn_vars[] = {
    {ngx_string("zklock_status"), NULL, zn_status, 0,
     NGX_HTTP_VAR_NOCACHEABLE, 0},
    {ngx_string("zklock_wait_ms"), NULL, zn_wait_ms, 0,
     NGX_HTTP_VAR_NOCACHEABLE, 0},
    {ngx_string("zklock_token"), NULL, zn_token, 0,
     NGX_HTTP_VAR_NOCACHEABLE, 0},
    ngx_http_null_variable};

ngx_int_t ngx_http_zklock_add_variables(ngx_conf_t *cf)
{
    ngx_http_variable_t *var, *v;

    for (v = zn_vars; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL)
            return NGX_ERROR;
        var->get_handler = v->get_handler;
        var->data = v->data;
    }
    return NGX_OK;
}
