/* Example: a libevent HTTP service whose per-key updates are serialized
 * by zklock, so several instances can share one store (a directory)
 * without losing updates.
 *
 *   http-counter [-s HOSTS] [-p PORT] -d DIR
 *   POST /counter/KEY   increments KEY, answers the new value
 *   GET  /counter/KEY   answers the current value
 *
 * Each update holds the lock /zklock-http/KEY for its read-modify-write.
 * The stored record carries the fencing token of the last writer, and a
 * write with a lower token is refused: a holder that lost its lock (a
 * long pause, an expired session) cannot overwrite a newer value. No
 * thread waits: a request waiting for its lock is just a pending
 * evhttp request and a zklock handle on the loop. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "zklock.h"
#include "zklock_libevent.h"

static zkl_client_t *zk;
static const char *dir;

struct update {
    struct evhttp_request *req;
    char key[65];
};

static int valid_key(const char *k)
{
    size_t n = strlen(k), i;

    if (n == 0 || n > 64)
        return 0;
    for (i = 0; i < n; i++)
        if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= 'A' && k[i] <= 'Z') ||
              (k[i] >= '0' && k[i] <= '9') || k[i] == '_' || k[i] == '-'))
            return 0;
    return 1;
}

static void record_path(char *buf, size_t len, const char *key)
{
    snprintf(buf, len, "%s/%s", dir, key);
}

static int load(const char *key, long *value, uint64_t *token)
{
    char p[1024];
    FILE *f;

    record_path(p, sizeof p, key);
    *value = 0;
    *token = 0;
    if ((f = fopen(p, "r")) == NULL)
        return errno == ENOENT ? 0 : -1;
    if (fscanf(f, "%ld %" SCNu64, value, token) != 2)
        *value = 0, *token = 0;
    fclose(f);
    return 0;
}

/* The store's own guard: refuse a token older than the last one seen. */
static int store(const char *key, long value, uint64_t token)
{
    char p[1024], tmp[1100];
    uint64_t last;
    long old;
    FILE *f;

    if (load(key, &old, &last) != 0 || token < last)
        return -1;
    record_path(p, sizeof p, key);
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", p, (int)getpid());
    if ((f = fopen(tmp, "w")) == NULL)
        return -1;
    fprintf(f, "%ld %" PRIu64 "\n", value, token);
    if (fclose(f) != 0)
        return -1;
    return rename(tmp, p);
}

static void reply(struct evhttp_request *req, int code, const char *fmt,
                  long v)
{
    struct evbuffer *b = evbuffer_new();

    evbuffer_add_printf(b, fmt, v);
    evhttp_send_reply(req, code, code == 200 ? "OK" : "Error", b);
    evbuffer_free(b);
}

static void update_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                      void *arg)
{
    struct update *u = arg;
    uint64_t token = 0;
    long v;

    switch (ev) {
    case ZKL_LOCK_ACQUIRED:
        zkl_lock_token(lk, &token);
        if (load(u->key, &v, &(uint64_t){0}) != 0 ||
            store(u->key, v + 1, token) != 0)
            reply(u->req, 500, "store refused the update\n", 0);
        else
            reply(u->req, 200, "%ld\n", v + 1);
        u->req = NULL;
        if (zkl_lock_release(lk) != ZKL_OK) {
            zkl_lock_free(lk);
            free(u);
        }
        break;
    case ZKL_LOCK_FAILED:
        reply(u->req, 503, "lock not acquired\n", 0);
        fprintf(stderr, "http-counter: %s: %s\n", u->key,
                zkl_strerror(status));
        zkl_lock_free(lk);
        free(u);
        break;
    case ZKL_LOCK_RELEASED:
    case ZKL_LOCK_LOST:
        zkl_lock_free(lk);
        free(u);
        break;
    case ZKL_LOCK_SUSPENDED:
    case ZKL_LOCK_RESTORED:
    case ZKL_LOCK_REVOKE_REQUESTED: /* not revocable: never comes */
    case ZKL_LOCK_QUEUED:           /* not asked for: never comes */
        break; /* the store's token check covers a lost hold */
    }
}

static void counter_cb(struct evhttp_request *req, void *arg)
{
    const char *uri = evhttp_request_get_uri(req), *key;
    char lockpath[128];
    struct update *u;
    zkl_lock_t *lk;
    uint64_t tok;
    long v;

    (void)arg;
    if (strncmp(uri, "/counter/", 9) != 0 || !valid_key(key = uri + 9)) {
        evhttp_send_error(req, 404, "use /counter/KEY");
        return;
    }
    if (evhttp_request_get_command(req) == EVHTTP_REQ_GET) {
        if (load(key, &v, &tok) != 0)
            reply(req, 500, "cannot read\n", 0);
        else
            reply(req, 200, "%ld\n", v);
        return;
    }
    if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
        evhttp_send_error(req, 405, "GET or POST");
        return;
    }
    u = calloc(1, sizeof *u);
    u->req = req;
    snprintf(u->key, sizeof u->key, "%s", key);
    snprintf(lockpath, sizeof lockpath, "/zklock-http/%s", key);
    if (zkl_lock_new(&lk, zk, lockpath, update_cb, u) != ZKL_OK ||
        zkl_lock_acquire(lk, 5000) != ZKL_OK) {
        evhttp_send_error(req, 503, "lock unavailable");
        zkl_lock_free(lk);
        free(u);
    }
}

int main(int argc, char **argv)
{
    const char *hosts = getenv("ZKLOCK_SERVERS");
    struct event_base *base;
    struct evhttp *http;
    zkl_options_t *o;
    int port = 8080, opt;

    while ((opt = getopt(argc, argv, "s:p:d:")) != -1) {
        switch (opt) {
        case 's':
            hosts = optarg;
            break;
        case 'p':
            port = atoi(optarg);
            break;
        case 'd':
            dir = optarg;
            break;
        default:
            fprintf(stderr, "usage: %s [-s HOSTS] [-p PORT] -d DIR\n",
                    argv[0]);
            return 2;
        }
    }
    if (dir == NULL) {
        fprintf(stderr, "usage: %s [-s HOSTS] [-p PORT] -d DIR\n", argv[0]);
        return 2;
    }
    base = event_base_new();
    if (zkl_options_new(&o) != ZKL_OK ||
        zkl_options_set_servers(o, hosts ? hosts : "127.0.0.1:2181") !=
            ZKL_OK ||
        zkl_client_new(&zk, o) != ZKL_OK ||
        zkl_libevent_attach(zk, base) != ZKL_OK) {
        fprintf(stderr, "http-counter: cannot create the zklock client\n");
        return 1;
    }
    zkl_options_free(o);
    http = evhttp_new(base);
    if (evhttp_bind_socket(http, "127.0.0.1", (uint16_t)port) != 0) {
        fprintf(stderr, "http-counter: cannot listen on port %d\n", port);
        return 1;
    }
    evhttp_set_gencb(http, counter_cb, NULL);
    printf("http-counter: listening on 127.0.0.1:%d, store %s\n", port, dir);
    fflush(stdout);
    event_base_dispatch(base);
    evhttp_free(http);
    zkl_client_free(zk);
    event_base_free(base);
    return 0;
}
