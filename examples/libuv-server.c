/* A TCP server on libuv that serializes requests per key with zklock, as
 * a proxy in front of a backend would: requests for one key are served
 * one at a time across every instance of the server, requests for
 * different keys at once. Each request takes the lock ROOT/KEY (waiting
 * without blocking the loop), does its "work" (a timer standing in for a
 * backend call), answers and lets the lock go.
 *
 *   libuv-server HOSTS PORT [ROOT [WORK_MS]]
 *   cc libuv-server.c $(pkg-config --cflags --libs zklock zklock-libuv)
 *
 * Protocol: a line "KEY\n" per request (KEY: letters, digits, '-', '_',
 * at most 64); the answer, when the request is done, is
 *   "KEY TOKEN START_US END_US\n"   (the lock's fencing token; when the
 *                                    work began and ended, wall clock)
 *   "KEY ERROR text\n"              (the lock was not had in 10 s, ...)
 * Answers come in the order requests finish, not the order they came.
 * Port 0 picks a free port; the server prints "listening on PORT".
 * SIGINT or SIGTERM stop it.
 */
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <uv.h>
#include <zklock.h>
#include <zklock_libuv.h>

#define KEY_MAX 64

static uv_loop_t *loop;
static zkl_client_t *zk;
static const char *root = "/zklock-demo/keys";
static unsigned work_ms = 20;

/* A connection lives while its socket is open or a request of it is
 * still running: each holds a reference. */
typedef struct conn {
    uv_tcp_t tcp;
    uv_shutdown_t shut;
    int refs;
    int open;
    int pending;  /* requests not yet over */
    int eof;      /* the client sent all it will send */
    char line[KEY_MAX + 2];
    size_t len;
} conn_t;

typedef struct req {
    conn_t *conn;
    zkl_lock_t *lk;
    uv_timer_t work;
    char key[KEY_MAX + 1];
    long long start_us;
} req_t;

typedef struct reply {
    uv_write_t w;
    conn_t *conn;
    char text[256];
} reply_t;

static long long wall_us(void)
{
    struct timeval tv;

    gettimeofday(&tv, NULL);
    return (long long)tv.tv_sec * 1000000 + tv.tv_usec;
}

static void conn_unref(conn_t *cn)
{
    if (--cn->refs == 0)
        free(cn);
}

static void conn_closed(uv_handle_t *h)
{
    conn_unref(h->data);
}

static void conn_close(conn_t *cn)
{
    if (cn->open) {
        cn->open = 0;
        uv_close((uv_handle_t *)&cn->tcp, conn_closed);
    }
}

static void shut_done(uv_shutdown_t *sh, int status)
{
    (void)status;
    conn_close(sh->data);
}

/* A client that half-closed still gets every answer: once its last
 * request is over, the answers written are flushed (shutdown waits for
 * them) and the connection closes. */
static void conn_finish(conn_t *cn)
{
    if (!cn->open || !cn->eof || cn->pending > 0)
        return;
    cn->shut.data = cn;
    if (uv_shutdown(&cn->shut, (uv_stream_t *)&cn->tcp, shut_done) != 0)
        conn_close(cn);
}

static void reply_done(uv_write_t *w, int status)
{
    reply_t *r = w->data;

    (void)status;
    conn_unref(r->conn);
    free(r);
}

/* Answers on the connection if it is still open. */
static void answer(conn_t *cn, const char *text)
{
    reply_t *r;
    uv_buf_t b;

    if (!cn->open || (r = malloc(sizeof *r)) == NULL)
        return;
    snprintf(r->text, sizeof r->text, "%s", text);
    b = uv_buf_init(r->text, (unsigned)strlen(r->text));
    r->w.data = r;
    r->conn = cn;
    cn->refs++;
    if (uv_write(&r->w, (uv_stream_t *)&cn->tcp, &b, 1, reply_done) != 0) {
        conn_unref(cn);
        free(r);
    }
}

static void req_timer_closed(uv_handle_t *h)
{
    req_t *rq = h->data;
    conn_t *cn = rq->conn;

    free(rq);
    cn->pending--;
    conn_finish(cn);
    conn_unref(cn);
}

/* The request is over: its lock handle goes, then its timer, then the
 * request itself (libuv closes handles asynchronously). */
static void req_end(req_t *rq)
{
    zkl_lock_free(rq->lk);
    uv_close((uv_handle_t *)&rq->work, req_timer_closed);
}

static void work_done(uv_timer_t *t)
{
    req_t *rq = t->data;
    uint64_t token = 0;
    char text[256];
    int rc;

    /* No token: the hold ended (LOST is queued and will answer). */
    if (zkl_lock_token(rq->lk, &token) != ZKL_OK)
        return;
    snprintf(text, sizeof text, "%s %llu %lld %lld\n", rq->key,
             (unsigned long long)token, rq->start_us, wall_us());
    answer(rq->conn, text);
    /* RELEASED ends the request; ENOTHELD: LOST is on its way and will. */
    rc = zkl_lock_release(rq->lk);
    if (rc != ZKL_OK && rc != ZKL_ENOTHELD)
        req_end(rq);
}

static void on_lock(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                    void *arg)
{
    req_t *rq = arg;
    char text[256];

    (void)lk;
    switch (ev) {
    case ZKL_LOCK_ACQUIRED:
        rq->start_us = wall_us();
        uv_timer_start(&rq->work, work_done, work_ms, 0);
        break;
    case ZKL_LOCK_SUSPENDED:
        /* The hold is uncertain: a real proxy would pause the backend
         * call here; this one lets the short work finish. */
        break;
    case ZKL_LOCK_LOST:
        /* Someone else may hold the key now: stop, and say so. */
        uv_timer_stop(&rq->work);
        /* fall through */
    case ZKL_LOCK_FAILED:
        snprintf(text, sizeof text, "%s ERROR %s\n", rq->key,
                 zkl_strerror(status));
        answer(rq->conn, text);
        req_end(rq);
        break;
    case ZKL_LOCK_RELEASED:
        req_end(rq);
        break;
    default:
        break;
    }
}

static int key_ok(const char *k)
{
    size_t n = strlen(k);

    if (n == 0 || n > KEY_MAX)
        return 0;
    return strspn(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789-_") == n;
}

static void request(conn_t *cn, const char *key)
{
    char path[ZKL_PATH_MAX], text[256];
    req_t *rq;
    int rc;

    if (!key_ok(key)) {
        answer(cn, "- ERROR bad key\n");
        return;
    }
    if ((rq = calloc(1, sizeof *rq)) == NULL) {
        answer(cn, "- ERROR out of memory\n");
        return;
    }
    snprintf(rq->key, sizeof rq->key, "%s", key);
    snprintf(path, sizeof path, "%s/%s", root, key);
    rq->conn = cn;
    uv_timer_init(loop, &rq->work);
    rq->work.data = rq;
    cn->refs++;
    cn->pending++;
    rc = zkl_lock_new(&rq->lk, zk, path, on_lock, rq);
    if (rc == ZKL_OK && (rc = zkl_lock_acquire(rq->lk, 10000)) == ZKL_OK)
        return;
    snprintf(text, sizeof text, "%s ERROR %s\n", key, zkl_strerror(rc));
    answer(cn, text);
    req_end(rq);
}

static void alloc_cb(uv_handle_t *h, size_t size, uv_buf_t *buf)
{
    static char chunk[4096];

    (void)h;
    (void)size;
    *buf = uv_buf_init(chunk, sizeof chunk);
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    conn_t *cn = s->data;
    ssize_t i;

    if (n == UV_EOF) {
        cn->eof = 1;
        uv_read_stop(s);
        conn_finish(cn);
        return;
    }
    if (n < 0) {
        conn_close(cn);
        return;
    }
    for (i = 0; i < n; i++) {
        char ch = buf->base[i];

        if (ch == '\r')
            continue;
        if (ch != '\n') {
            if (cn->len < sizeof cn->line - 1)
                cn->line[cn->len++] = ch;
            else
                cn->len = sizeof cn->line; /* too long: refused below */
            continue;
        }
        cn->line[cn->len < sizeof cn->line ? cn->len : 0] = '\0';
        request(cn, cn->len < sizeof cn->line ? cn->line : "");
        cn->len = 0;
    }
}

static void on_connection(uv_stream_t *server, int status)
{
    conn_t *cn;

    if (status < 0 || (cn = calloc(1, sizeof *cn)) == NULL)
        return;
    uv_tcp_init(loop, &cn->tcp);
    cn->tcp.data = cn;
    cn->refs = 1; /* the socket's */
    cn->open = 1;
    if (uv_accept(server, (uv_stream_t *)&cn->tcp) != 0 ||
        uv_read_start((uv_stream_t *)&cn->tcp, alloc_cb, read_cb) != 0)
        conn_close(cn);
}

static void close_any(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (uv_is_closing(h))
        return; /* a request's timer, a closed connection, the adapter's */
    if (h->type == UV_TCP && h->data != NULL)
        conn_close(h->data);
    else
        uv_close(h, NULL); /* the listener, the signals */
}

/* Stops: the client goes first (its session closes and every lock node
 * it had goes with it; pending requests are answered ECLOSED), then
 * every handle still open. */
static void on_signal(uv_signal_t *sig, int signum)
{
    (void)sig;
    (void)signum;
    zkl_client_free(zk);
    zk = NULL;
    uv_walk(loop, close_any, NULL);
}

int main(int argc, char **argv)
{
    static uv_tcp_t server;
    static uv_signal_t sigint, sigterm;
    struct sockaddr_in addr;
    struct sockaddr_storage bound;
    int len = sizeof bound, rc;
    zkl_options_t *o;

    if (argc < 3 || argc > 5) {
        fprintf(stderr, "usage: %s HOSTS PORT [ROOT [WORK_MS]]\n", argv[0]);
        return 2;
    }
    if (argc > 3)
        root = argv[3];
    if (argc > 4)
        work_ms = (unsigned)atoi(argv[4]);
    loop = uv_default_loop();
    if ((rc = zkl_options_new(&o)) != ZKL_OK ||
        (rc = zkl_options_set_servers(o, argv[1])) != ZKL_OK ||
        (rc = zkl_client_new(&zk, o)) != ZKL_OK ||
        (rc = zkl_libuv_attach(zk, loop)) != ZKL_OK) {
        fprintf(stderr, "libuv-server: %s\n", zkl_strerror(rc));
        return 1;
    }
    zkl_options_free(o);

    uv_tcp_init(loop, &server);
    uv_ip4_addr("127.0.0.1", atoi(argv[2]), &addr);
    if ((rc = uv_tcp_bind(&server, (const struct sockaddr *)&addr, 0)) != 0 ||
        (rc = uv_listen((uv_stream_t *)&server, 128, on_connection)) != 0) {
        fprintf(stderr, "libuv-server: %s\n", uv_strerror(rc));
        return 1;
    }
    uv_tcp_getsockname(&server, (struct sockaddr *)&bound, &len);
    printf("listening on %d\n",
           ntohs(((struct sockaddr_in *)&bound)->sin_port));
    fflush(stdout);
    uv_signal_init(loop, &sigint);
    uv_signal_start(&sigint, on_signal, SIGINT);
    uv_signal_init(loop, &sigterm);
    uv_signal_start(&sigterm, on_signal, SIGTERM);

    uv_run(loop, UV_RUN_DEFAULT);
    return uv_loop_close(loop) == 0 ? 0 : 1;
}
