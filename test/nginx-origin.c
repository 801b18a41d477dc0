/* The origin server of the nginx tests and benchmark: it answers slowly
 * and counts, per path, how many requests overlap. libevent's evhttp, one
 * thread.
 *
 *   zkl-nginx-origin PORT
 *
 * GET /PATH?delay_ms=D&max_age=S&accel=P: answers after D ms (default
 * 0) with "KEY N\n" (N: the key's request count), Cache-Control:
 * max-age=S when S is given, X-Accel-Redirect: P (nginx then serves P
 * instead) when P is given; &key=K counts it under key K. A request's key is its X-Lock-Key header, else its
 * path; X-Lock-Mode: read makes it a reader of that key, anything else
 * a writer. The X-Fencing-Token header of a writer, if any, is checked
 * against the last one seen for the key: a token not above it is counted
 * as a regression. X-Instance names the nginx a request came through: a
 * second request of one key through one instance sooner than max-age
 * (less a second, nginx's clock granularity) after the answer to the
 * first is a cache refetched early.
 * GET /__stats: one JSON line: requests; in flight now; the most
 * requests of one key in flight at once (max_overlap); how many keys
 * ever had two at once (paths_overlapped); conflicts (a writer beside
 * any other request of its key, or a reader beside a writer); the most
 * readers of one key at once; token regressions; early refetches;
 * keys.
 * GET /__reset: counters to zero.
 * Prints "ready" on stdout once it listens. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

struct path_stat {
    struct path_stat *next;
    unsigned long count;
    unsigned inflight, max_inflight, writers, readers;
    uint64_t last_token;
    char path[];
};

/* The last answer of a key through one instance (for early refetches). */
struct fetch {
    struct fetch *next;
    struct timeval answered;
    char id[];
};

#define BUCKETS 65536
static struct path_stat *table[BUCKETS];
static struct fetch *fetches[BUCKETS];
static unsigned long requests, paths, paths_overlapped, token_regressions;
static unsigned long conflicts, early_refetches;
static unsigned inflight, max_overlap, max_readers;
static struct event_base *base;

static unsigned hash(const char *s)
{
    unsigned h = 2166136261u;

    while (*s)
        h = (h ^ (unsigned char)*s++) * 16777619u;
    return h % BUCKETS;
}

static struct path_stat *stat_of(const char *path)
{
    unsigned h = hash(path);
    struct path_stat *p;

    for (p = table[h]; p != NULL; p = p->next)
        if (strcmp(p->path, path) == 0)
            return p;
    p = calloc(1, sizeof *p + strlen(path) + 1);
    if (p == NULL)
        abort();
    strcpy(p->path, path);
    p->next = table[h];
    table[h] = p;
    paths++;
    return p;
}

static struct fetch *fetch_of(const char *id)
{
    unsigned h = hash(id);
    struct fetch *f;

    for (f = fetches[h]; f != NULL; f = f->next)
        if (strcmp(f->id, id) == 0)
            return f;
    f = calloc(1, sizeof *f + strlen(id) + 1);
    if (f == NULL)
        abort();
    strcpy(f->id, id);
    f->next = fetches[h];
    fetches[h] = f;
    return f;
}

static void reset(void)
{
    unsigned i;

    for (i = 0; i < BUCKETS; i++) {
        while (table[i] != NULL) {
            struct path_stat *p = table[i];

            table[i] = p->next;
            free(p);
        }
        while (fetches[i] != NULL) {
            struct fetch *f = fetches[i];

            fetches[i] = f->next;
            free(f);
        }
    }
    requests = paths = paths_overlapped = token_regressions = 0;
    conflicts = early_refetches = 0;
    max_overlap = max_readers = 0;
}

struct pending {
    struct evhttp_request *req;
    struct path_stat *ps;
    struct event *tmr;
    struct fetch *fetch; /* when the request named its instance */
    long max_age;
    int reader;
    char accel[256]; /* X-Accel-Redirect, when not empty */
};

static void answer(evutil_socket_t fd, short what, void *arg)
{
    struct pending *pd = arg;
    struct evbuffer *b = evbuffer_new();
    char cc[64];

    (void)fd;
    (void)what;
    pd->ps->inflight--;
    if (pd->reader)
        pd->ps->readers--;
    else
        pd->ps->writers--;
    inflight--;
    if (pd->fetch != NULL)
        gettimeofday(&pd->fetch->answered, NULL);
    evbuffer_add_printf(b, "%s %lu\n", pd->ps->path, pd->ps->count);
    if (pd->max_age >= 0) {
        snprintf(cc, sizeof cc, "max-age=%ld", pd->max_age);
        evhttp_add_header(evhttp_request_get_output_headers(pd->req),
                          "Cache-Control", cc);
    }
    if (pd->accel[0] != '\0')
        evhttp_add_header(evhttp_request_get_output_headers(pd->req),
                          "X-Accel-Redirect", pd->accel);
    evhttp_send_reply(pd->req, 200, "OK", b);
    evbuffer_free(b);
    if (pd->tmr != NULL)
        event_free(pd->tmr);
    free(pd);
}

static void on_request(struct evhttp_request *req, void *arg)
{
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = evhttp_uri_get_path(uri), *q, *v;
    struct evkeyvalq params, *hdrs;
    struct pending *pd;
    struct evbuffer *b;
    long delay = 0;
    struct timeval tv;
    char key[256] = "";

    (void)arg;
    if (path == NULL)
        path = "/";
    if (strcmp(path, "/__stats") == 0) {
        b = evbuffer_new();
        evbuffer_add_printf(
            b,
            "{\"requests\": %lu, \"inflight\": %u, \"max_overlap\": %u, "
            "\"paths_overlapped\": %lu, \"conflicts\": %lu, "
            "\"max_readers\": %u, \"token_regressions\": %lu, "
            "\"early_refetches\": %lu, \"paths\": %lu}\n",
            requests, inflight, max_overlap, paths_overlapped, conflicts,
            max_readers, token_regressions, early_refetches, paths);
        evhttp_send_reply(req, 200, "OK", b);
        evbuffer_free(b);
        return;
    }
    if (strcmp(path, "/__reset") == 0) {
        reset();
        evhttp_send_reply(req, 200, "OK", NULL);
        return;
    }
    pd = calloc(1, sizeof *pd);
    if (pd == NULL)
        abort();
    pd->req = req;
    pd->max_age = -1;
    q = evhttp_uri_get_query(uri);
    if (q != NULL && evhttp_parse_query_str(q, &params) == 0) {
        if ((v = evhttp_find_header(&params, "delay_ms")) != NULL)
            delay = strtol(v, NULL, 10);
        if ((v = evhttp_find_header(&params, "max_age")) != NULL)
            pd->max_age = strtol(v, NULL, 10);
        if ((v = evhttp_find_header(&params, "accel")) != NULL)
            snprintf(pd->accel, sizeof pd->accel, "%s", v);
        if ((v = evhttp_find_header(&params, "key")) != NULL)
            snprintf(key, sizeof key, "%s", v);
        evhttp_clear_headers(&params);
    }
    hdrs = evhttp_request_get_input_headers(req);
    if ((v = evhttp_find_header(hdrs, "X-Lock-Key")) != NULL && *v != '\0')
        path = v;
    if (key[0] != '\0')
        path = key;
    v = evhttp_find_header(hdrs, "X-Lock-Mode");
    pd->reader = v != NULL && strcmp(v, "read") == 0;
    pd->ps = stat_of(path);
    pd->ps->count++;
    requests++;
    if (pd->reader ? pd->ps->writers > 0 : pd->ps->inflight > 0)
        conflicts++;
    if (++pd->ps->inflight > pd->ps->max_inflight) {
        pd->ps->max_inflight = pd->ps->inflight;
        if (pd->ps->inflight == 2)
            paths_overlapped++;
    }
    if (pd->ps->inflight > max_overlap)
        max_overlap = pd->ps->inflight;
    if (pd->reader) {
        if (++pd->ps->readers > max_readers)
            max_readers = pd->ps->readers;
    } else {
        pd->ps->writers++;
    }
    inflight++;
    v = evhttp_find_header(hdrs, "X-Fencing-Token");
    if (!pd->reader && v != NULL && *v != '\0') {
        uint64_t t = strtoull(v, NULL, 10);

        if (t <= pd->ps->last_token)
            token_regressions++;
        else
            pd->ps->last_token = t;
    }
    v = evhttp_find_header(hdrs, "X-Instance");
    if (v != NULL && pd->max_age > 0) {
        char id[512];
        struct timeval now;

        snprintf(id, sizeof id, "%s %s", v, path);
        pd->fetch = fetch_of(id);
        gettimeofday(&now, NULL);
        if (pd->fetch->answered.tv_sec != 0 &&
            (now.tv_sec - pd->fetch->answered.tv_sec) * 1000 +
                    (now.tv_usec - pd->fetch->answered.tv_usec) / 1000 <
                pd->max_age * 1000 - 1000)
            early_refetches++;
    }
    if (delay <= 0) {
        answer(-1, 0, pd);
        return;
    }
    pd->tmr = evtimer_new(base, answer, pd);
    tv.tv_sec = delay / 1000;
    tv.tv_usec = (delay % 1000) * 1000;
    evtimer_add(pd->tmr, &tv);
}

int main(int argc, char **argv)
{
    struct evhttp *http;

    if (argc != 2) {
        fprintf(stderr, "usage: %s PORT\n", argv[0]);
        return 2;
    }
    base = event_base_new();
    http = evhttp_new(base);
    if (base == NULL || http == NULL)
        return 1;
    if (evhttp_bind_socket(http, "127.0.0.1",
                           (unsigned short)atoi(argv[1])) != 0) {
        fprintf(stderr, "%s: cannot listen on 127.0.0.1:%s: %s\n", argv[0],
                argv[1], strerror(errno));
        return 1;
    }
    evhttp_set_gencb(http, on_request, NULL);
    printf("ready\n");
    fflush(stdout);
    event_base_dispatch(base);
    evhttp_free(http);
    event_base_free(base);
    return 0;
}
