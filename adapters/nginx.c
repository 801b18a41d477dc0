/* The nginx adapter: the client's socket as an nginx connection whose
 * read and write events are registered level-triggered with the worker's
 * event module, and the client's timer as an nginx timer; on the public
 * API only. Compiled by nginx's own module build (nginx/config), against
 * the nginx it is loaded into. Each handler ends with its call into the
 * core, which may free the adapter. */
#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>

#include "zklock_nginx.h"

struct zn_adapter {
    zkl_client_t *c;
    ngx_log_t *log;
    ngx_connection_t *conn; /* on the fd watched; NULL when none */
    ngx_event_t tmr;
};

static void zn_read(ngx_event_t *ev)
{
    ngx_connection_t *conn = ev->data;
    struct zn_adapter *a = conn->data;

    zkl_client_on_io(a->c, ZKL_READ);
}

static void zn_write(ngx_event_t *ev)
{
    ngx_connection_t *conn = ev->data;
    struct zn_adapter *a = conn->data;

    zkl_client_on_io(a->c, ZKL_WRITE);
}

static void zn_timer_fired(ngx_event_t *ev)
{
    struct zn_adapter *a = ev->data;

    zkl_client_on_timer(a->c);
}

/* Takes the socket out of the event module at once (a real
 * EPOLL_CTL_DEL, not NGX_CLOSE_EVENT: zklock closes only its copy of the
 * socket, and epoll keeps a registration while any copy is open), drops
 * events already posted for it and marks the record closed (fd -1), so
 * that the write half of an event whose read half freed the client is
 * skipped as stale, as for a connection nginx closed itself. */
static void zn_unwatch(struct zn_adapter *a)
{
    ngx_connection_t *conn = a->conn;

    if (conn == NULL)
        return;
    if (conn->read->active)
        ngx_del_event(conn->read, NGX_READ_EVENT, 0);
    if (conn->write->active)
        ngx_del_event(conn->write, NGX_WRITE_EVENT, 0);
    if (conn->read->posted) {
        /* (a macro of two statements) */
        ngx_delete_posted_event(conn->read);
    }
    if (conn->write->posted) {
        /* (a macro of two statements) */
        ngx_delete_posted_event(conn->write);
    }
    ngx_free_connection(conn);
    conn->fd = (ngx_socket_t)-1;
    a->conn = NULL;
}

/* Level-triggered, whatever the event module's default: the core reads
 * one reply per call and stops at its budget, and a ready socket must be
 * reported again at the next turn. */
static int zn_want(struct zn_adapter *a, ngx_event_t *ev, int event, int on)
{
    if (on && !ev->active)
        return ngx_add_event(ev, event, NGX_LEVEL_EVENT) == NGX_OK ? 0 : -1;
    if (!on && ev->active)
        return ngx_del_event(ev, event, 0) == NGX_OK ? 0 : -1;
    (void)a;
    return 0;
}

static int zn_io(void *data, int fd, int events, int reset)
{
    struct zn_adapter *a = data;
    ngx_connection_t *conn;

    if (a->conn != NULL && (reset || fd < 0 || (ngx_socket_t)fd != a->conn->fd))
        zn_unwatch(a);
    if (fd < 0 || events == 0) {
        if (a->conn != NULL) /* same socket, nothing wanted for now */
            return zn_want(a, a->conn->read, NGX_READ_EVENT, 0) |
                   zn_want(a, a->conn->write, NGX_WRITE_EVENT, 0);
        return 0;
    }
    if (a->conn == NULL) {
        conn = ngx_get_connection((ngx_socket_t)fd, a->log);
        if (conn == NULL) /* logged by nginx: worker_connections */
            return -1;
        conn->data = a;
        conn->log = a->log;
        conn->read->handler = zn_read;
        conn->write->handler = zn_write;
        conn->read->log = a->log;
        conn->write->log = a->log;
        a->conn = conn;
    }
    if (zn_want(a, a->conn->read, NGX_READ_EVENT, events & ZKL_READ) != 0 ||
        zn_want(a, a->conn->write, NGX_WRITE_EVENT, events & ZKL_WRITE) != 0) {
        zn_unwatch(a); /* asked again, with reset, within 100 ms */
        return -1;
    }
    return 0;
}

static int zn_timer(void *data, long ms)
{
    struct zn_adapter *a = data;

    if (a->tmr.timer_set)
        ngx_del_timer(&a->tmr);
    if (ms >= 0)
        ngx_add_timer(&a->tmr, (ngx_msec_t)ms);
    return 0;
}

static void zn_detach(void *data)
{
    struct zn_adapter *a = data;

    zn_unwatch(a);
    if (a->tmr.timer_set)
        ngx_del_timer(&a->tmr);
    if (a->tmr.posted) {
        /* (a macro of two statements) */
        ngx_delete_posted_event(&a->tmr);
    }
    zkl_free(a);
}

static const zkl_loop_ops_t zn_ops = {zn_io, zn_timer, zn_detach};

int zkl_nginx_attach(zkl_client_t *c, ngx_log_t *log)
{
    struct zn_adapter *a;
    int rc;

    if (c == NULL || log == NULL)
        return ZKL_EINVAL;
    a = zkl_calloc(1, sizeof *a);
    if (a == NULL)
        return ZKL_ENOMEM;
    a->c = c;
    a->log = log;
    a->tmr.handler = zn_timer_fired;
    a->tmr.data = a;
    a->tmr.log = log;
    /* The client's own clock (keepalives, reconnects) is no reason for a
     * worker that was told to quit to stay: requests still waiting or
     * holding keep their own timers. */
    a->tmr.cancelable = 1;
    rc = zkl_client_attach(c, &zn_ops, a);
    if (rc != ZKL_OK)
        zkl_free(a);
    return rc;
}
