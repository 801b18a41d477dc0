/* The run's side of test/zkalloc: its client on the poll adapter, the
 * answers each handle owes, and the books it hands to the driver. Every
 * check fails the run at once, with its reason in the shared record. */
#include <stdarg.h>

#include "zkalloc.h"
#include "zklock_poll.h"

za_run_t *za_r;
static zkl_client_t *cur; /* what t_tick() drives */
static int connected;

void za_fail(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(za_r->fail, sizeof za_r->fail, fmt, ap);
    va_end(ap);
    fprintf(stderr, "zkalloc: %s (at: %s)\n", za_r->fail, za_r->stage);
    abort();
}

void za_stage(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(za_r->stage, sizeof za_r->stage, fmt, ap);
    va_end(ap);
}

void za_tally(int code)
{
    int i;

    if (code == ZKL_OK)
        return;
    for (i = 0; i < za_r->nerr; i++)
        if (za_r->errs[i].code == code)
            break;
    if (i == za_r->nerr) {
        ZA_CHECK(i < (int)(sizeof za_r->errs / sizeof za_r->errs[0]));
        za_r->errs[i].code = code;
        za_r->nerr++;
    }
    za_r->errs[i].n++;
}

/* ---------------- the loop ---------------- */

void t_tick(void)
{
    if (cur == NULL) {
        t_sleep_ms(20);
        return;
    }
    ZA_CHECK(zkl_poll_run(cur, 20) == ZKL_OK);
}

void t_run_for(long ms)
{
    uint64_t end = t_now_ms() + (uint64_t)ms;

    while (t_now_ms() < end)
        t_tick();
}

/* ---------------- the client ---------------- */

static void on_conn(zkl_client_t *c, zkl_conn_event_t ev, void *arg)
{
    (void)c;
    (void)arg;
    if (ev == ZKL_CONN_CONNECTED || ev == ZKL_CONN_RECONNECTED)
        connected = 1;
}

zkl_client_t *za_client(void)
{
    zkl_options_t *o;
    zkl_client_t *c;
    int rc;

    za_stage("creating the client");
    ZA_CHECK(zkl_options_new(&o) == ZKL_OK);
    ZA_CHECK(zkl_options_set_servers(o, t_hosts()) == ZKL_OK);
    ZA_CHECK(zkl_options_set_session_timeout(o, ZA_SESSION_MS) == ZKL_OK);
    ZA_CHECK(zkl_options_set_conn_cb(o, on_conn, NULL) == ZKL_OK);
    rc = zkl_client_new(&c, o);
    zkl_options_free(o);
    if (rc != ZKL_OK) {
        /* zookeeper_init() could not allocate: refused, nothing owed. */
        za_tally(rc);
        ZA_CHECK(rc == ZKL_ENOMEM);
        ZA_CHECK(c == NULL);
        return NULL;
    }
    za_r->started = 1;
    ZA_CHECK(zkl_poll_attach(c) == ZKL_OK);
    cur = c;
    za_stage("connecting");
    if (!WAIT_FOR(connected, 15000))
        za_fail("the client did not connect within 15 s");
    return c;
}

void za_finish(za_h_t *const *h, int n)
{
    zkl_stats_t st;
    int i;

    if (cur != NULL) {
        ZA_CHECK(zkl_client_stats(cur, &st, sizeof st) == ZKL_OK);
        za_r->fences = (long)st.fences;
        za_r->sessions = (long)st.sessions;
        za_stage("freeing the client");
        zkl_client_free(cur); /* answers whatever is still pending */
        cur = NULL;
    }
    for (i = 0; i < n; i++) {
        za_stage("checking %s", h[i]->name);
        if (h[i]->acquiring || h[i]->releasing || h[i]->writing ||
            h[i]->listing || h[i]->held)
            za_fail("%s: a call unanswered after zkl_client_free() "
                    "(acquire %d, release %d, write %d, listing %d, hold "
                    "%d)",
                    h[i]->name, h[i]->acquiring, h[i]->releasing,
                    h[i]->writing, h[i]->listing, h[i]->held);
        if (h[i]->lk != NULL)
            zkl_lock_free(h[i]->lk);
        if (h[i]->m != NULL)
            zkl_multi_free(h[i]->m);
    }
}

/* ---------------- answers ---------------- */

static void on_event(za_h_t *h, zkl_lock_event_t ev, int status)
{
    switch (ev) {
    case ZKL_LOCK_ACQUIRED:
        if (!h->acquiring)
            za_fail("%s: ACQUIRED with no acquire pending", h->name);
        h->acquiring = 0;
        h->held = 1;
        h->acquired++;
        break;
    case ZKL_LOCK_FAILED:
        if (!h->acquiring)
            za_fail("%s: FAILED (%s) with no acquire pending", h->name,
                    zkl_err_name(status));
        h->acquiring = 0;
        h->failed++;
        za_tally(status);
        /* A stalled acquire is a hang, not an answer. */
        if (status == ZKL_ETIMEDOUT)
            za_fail("%s: the acquire timed out", h->name);
        break;
    case ZKL_LOCK_RELEASED:
        if (!h->releasing)
            za_fail("%s: RELEASED with no release pending", h->name);
        h->releasing = 0;
        h->released++;
        za_tally(status);
        break;
    case ZKL_LOCK_LOST:
        if (!h->held)
            za_fail("%s: LOST (%s) while not held", h->name,
                    zkl_err_name(status));
        h->held = 0;
        h->lost++;
        za_tally(status);
        break;
    case ZKL_LOCK_SUSPENDED:
    case ZKL_LOCK_RESTORED:
    case ZKL_LOCK_REVOKE_REQUESTED:
    case ZKL_LOCK_QUEUED:
        break;
    }
}

void za_lock_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status, void *arg)
{
    za_h_t *h = arg;

    ZA_CHECK(h->lk == lk);
    on_event(h, ev, status);
}

void za_multi_cb(zkl_multi_t *m, zkl_lock_event_t ev, int status, void *arg)
{
    za_h_t *h = arg;

    ZA_CHECK(h->m == m);
    on_event(h, ev, status);
}

void za_write_cb(zkl_client_t *c, int status, const zkl_op_result_t *res,
                 size_t n, void *arg)
{
    za_h_t *h = arg;

    (void)c;
    (void)res;
    (void)n;
    if (!h->writing)
        za_fail("%s: a write answered with none pending", h->name);
    h->writing = 0;
    h->written++;
    za_tally(status);
}

static void list_cb(zkl_client_t *c, int status, const zkl_contender_t *v,
                    size_t n, void *arg)
{
    za_h_t *h = arg;

    (void)c;
    if (!h->listing)
        za_fail("%s: a listing answered with none pending", h->name);
    ZA_CHECK(status != ZKL_OK || v != NULL || n == 0);
    h->listing = 0;
    h->listed++;
    za_tally(status);
}

/* ---------------- calls ---------------- */

int za_made(za_h_t *h, const char *name, int rc)
{
    h->name = name;
    if (rc == ZKL_OK)
        return 1;
    za_fail("%s: creating the handle: %s", name, zkl_err_name(rc));
}

/* A call's rc: accepted, or refused for a reason one failed allocation
 * of the ZooKeeper client explains. */
static int accepted(za_h_t *h, const char *what, int rc, int *owed)
{
    if (rc == ZKL_OK) {
        *owed = 1;
        return 1;
    }
    za_tally(rc);
    if (rc != ZKL_ENOMEM)
        za_fail("%s: %s refused: %s", h->name, what, zkl_err_name(rc));
    return 0;
}

int za_acquire(za_h_t *h, long ms)
{
    za_stage("%s: acquire", h->name);
    return accepted(h, "acquire",
                    h->m != NULL ? zkl_multi_acquire(h->m, ms)
                                 : zkl_lock_acquire(h->lk, ms),
                    &h->acquiring);
}

int za_release(za_h_t *h)
{
    int rc;

    za_stage("%s: release", h->name);
    rc = h->m != NULL ? zkl_multi_release(h->m) : zkl_lock_release(h->lk);
    /* The hold may have ended inside the library with its LOST still
     * queued: nothing to release, the LOST is owed. */
    if (rc == ZKL_ENOTHELD && h->held)
        return 0;
    if (!accepted(h, "release", rc, &h->releasing))
        return 0;
    h->held = 0; /* the hold ends with the call: no LOST may follow */
    return 1;
}

int za_write(za_h_t *h, const zkl_op_t *ops, size_t n)
{
    int rc;

    za_stage("%s: guarded write", h->name);
    rc = h->m != NULL ? zkl_multi_write(h->m, ops, n, za_write_cb, h)
                      : zkl_lock_write(h->lk, ops, n, za_write_cb, h);
    if (rc == ZKL_ENOTHELD && h->held)
        return 0; /* as for a release */
    return accepted(h, "write", rc, &h->writing);
}

int za_list(za_h_t *h, zkl_client_t *c, const char *path)
{
    za_stage("%s: listing", h->name);
    return accepted(h, "listing", zkl_contenders_ex(c, path, list_cb, h),
                    &h->listing);
}

#define ZA_WAIT_MS (ZA_ACQUIRE_MS + 8000)

void za_wait_acquire(za_h_t *h)
{
    za_stage("%s: waiting for the acquire's answer", h->name);
    if (!WAIT_FOR(!h->acquiring, ZA_WAIT_MS))
        za_fail("%s: acquire unanswered", h->name);
}

void za_wait_release(za_h_t *h)
{
    za_stage("%s: waiting for the release's answer", h->name);
    if (!WAIT_FOR(!h->releasing, ZA_WAIT_MS))
        za_fail("%s: release unanswered", h->name);
}

void za_wait_write(za_h_t *h)
{
    za_stage("%s: waiting for the write's answer", h->name);
    if (!WAIT_FOR(!h->writing, ZA_WAIT_MS))
        za_fail("%s: write unanswered", h->name);
}

void za_wait_list(za_h_t *h)
{
    za_stage("%s: waiting for the listing's answer", h->name);
    if (!WAIT_FOR(!h->listing, ZA_WAIT_MS))
        za_fail("%s: listing unanswered", h->name);
}

void za_wait_queued(za_h_t *h, long ms)
{
    za_stage("%s: waiting to queue", h->name);
    (void)WAIT_FOR(!h->acquiring ||
                       zkl_lock_state(h->lk) == ZKL_STATE_QUEUED,
                   ms);
}
