/* The client: one ZooKeeper session at a time, renewed after expiry, and
 * the one place where the loop, ZooKeeper and user callbacks meet. Owns
 * the zhandle, the callback queue and everything hung off zkl_client.
 *
 * Every entry from the loop (zkl_client_on_io / zkl_client_on_timer) is a
 * "pass": feed ZooKeeper, let attempts step, deliver queued callbacks,
 * then ask ZooKeeper what to wait for and re-arm the loop. User callbacks
 * run only from a pass (drain), after ZooKeeper has returned, so a
 * callback may call anything, including freeing the client (deferred to
 * the end of the outermost pass). API calls only record and send: the
 * ZooKeeper client may complete requests inside any call into it, so
 * completions only queue events, and only drain delivers them. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "internal.h"

/* The connection events' op: the client's own, never on its op list. */
static void conn_deliver(zkl__op_t *op, int ev, int status)
{
    zkl_client_t *c =
        (zkl_client_t *)(void *)((char *)op - offsetof(zkl_client_t, conn));

    (void)status;
    if (c->conn_cb != NULL)
        c->conn_cb(c, (zkl_conn_event_t)ev, c->conn_arg);
}

static const zkl__opclass_t conn_class = {
    .name = "connection", .deliver = conn_deliver,
};

static void queue_conn_event(zkl_client_t *c, zkl_conn_event_t ev)
{
    c->conn_state = (int)ev;
    if (c->conn_cb != NULL)
        zkl__evq_push(c, &c->conn, (int)ev, 0);
}

/* The session ended, with its nodes and watches: the ops hear it, then
 * the attempts. */
static void session_gone(zkl_client_t *c, int status)
{
    zkl__ops_session_gone(c);
    zkl__on_session_gone(c, status);
}

/* ---------------------------------------------------------------- */
/* Session                                                           */
/* ---------------------------------------------------------------- */

/* The budget is the loop thread's, not each client's: clients attached
 * on one thread split it, so that one loop turn in which all of them
 * are busy stays near one budget, however many clients there are. Each
 * still gets a small slice, so that none starves. Thread-local because
 * a program may run one loop, with its own clients, per thread. */
#define ZKL__MIN_SLICE_US 20
/* How soon a refused adapter io() is asked again. */
#define ZKL__IO_RETRY_MS 100
static _Thread_local unsigned attached_here;

/* Held locks are told LOST this long after touched_at: a tenth of the
 * timeout before the server may expire the session, for the clocks'
 * rate difference and for the callback to reach the holder. */
static uint64_t lost_after(const zkl_client_t *c)
{
    uint64_t t = (uint64_t)zkl_client_session_timeout(c);

    return t - t / 10;
}

static void keepalive_done(int rc, const struct Stat *st, const void *data)
{
    zkl_client_t *c = (zkl_client_t *)(uintptr_t)data;
    uint64_t at = c->ka_sent_at;

    (void)st;
    zkl__req_done(c);
    c->ka_sent_at = 0;
    if (!c->closing)
        zkl__on_answer(c, rc, at);
}

/* A keepalive of unknown fate (fence.c): keepalive_done clears
 * ka_sent_at if it came; c itself needs no pin. */
static void keepalive_resolve(zkl_client_t *c, void *rec, void *aux)
{
    (void)rec;
    (void)aux;
    if (c->ka_sent_at == 0)
        return;
    c->ka_sent_at = 0;
    zkl__req_done(c);
    c->ka_retry_at = zkl__now_ms() + 100;
}

/* While the client holds a lock, a quiet session still refreshes
 * touched_at about every quarter of the timeout: one small read. The
 * ZooKeeper client's own pings would do for the server, but their
 * answers are not visible here. Waiters send none (a fleet of waiting
 * processes would pay a third more than their pings for nothing): a
 * grant always follows a fresh read, or reads first (grant()). */
static uint64_t keepalive_at(const zkl_client_t *c)
{
    uint64_t at = c->touched_at + (uint64_t)zkl_client_session_timeout(c) / 4;

    return at > c->ka_retry_at ? at : c->ka_retry_at;
}

/* Whether a keepalive is due at keepalive_at(). Also while the server
 * throttles (pause_sends): its answer, even a refusal, keeps the
 * holds' bound fresh, and one small read a quarter timeout adds
 * nothing to an overload. */
static int keepalive_wanted(const zkl_client_t *c)
{
    return c->ka_sent_at == 0 && c->nholds > 0 && zkl__may_send(c);
}

static void keepalive(zkl_client_t *c, uint64_t now)
{
    if (!keepalive_wanted(c) || now < keepalive_at(c))
        return;
    switch (zkl__fence_sent(c, zoo_aexists(c->zh, "/", 0, keepalive_done,
                                           c),
                            keepalive_resolve, c, NULL)) {
    case ZKL__SENT:
    case ZKL__MAYBE: /* keepalive_resolve settles it */
        c->ka_sent_at = now;
        c->stats.requests++;
        zkl__req_sent(c);
        break;
    case ZKL__REFUSED:
        c->ka_retry_at = now + 100; /* not queued: not at once again */
        break;
    }
}

/* Curator's default lock node data is the local address, as text: ours
 * is the one this connection leaves from (the address a peer would see). */
static void note_local_ip(zkl_client_t *c)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    const void *addr = NULL;

    if (c->io_fd < 0 ||
        getsockname(c->io_fd, (struct sockaddr *)&ss, &len) != 0)
        return;
    if (ss.ss_family == AF_INET)
        addr = &((struct sockaddr_in *)&ss)->sin_addr;
    else if (ss.ss_family == AF_INET6)
        addr = &((struct sockaddr_in6 *)&ss)->sin6_addr;
    if (addr == NULL ||
        inet_ntop(ss.ss_family, addr, c->local_ip, sizeof c->local_ip) ==
            NULL)
        c->local_ip[0] = '\0';
}

static void on_session_event(zkl_client_t *c, int state)
{
    if (state == ZOO_CONNECTED_STATE) {
        const clientid_t *id = zoo_client_id(c->zh);
        int reconnect = c->ever_connected;

        note_local_ip(c);
        c->tls_refusals = 0;
        c->closed_early = 0;
        c->connected = 1;
        c->ever_connected = 1;
        c->session_id = id != NULL ? id->client_id : 0;
        queue_conn_event(c, reconnect ? ZKL_CONN_RECONNECTED
                                      : ZKL_CONN_CONNECTED);
        zkl__views_connected(c);
        zkl__on_connected(c, reconnect);
    } else if (state == ZOO_EXPIRED_SESSION_STATE) {
        c->connected = 0;
        c->expired = 1; /* renewed after zookeeper_process returns */
    } else if (state == ZOO_AUTH_FAILED_STATE) {
        c->connected = 0;
        if (!c->dead) {
            c->dead = ZKL_EAUTH;
            queue_conn_event(c, ZKL_CONN_AUTH_FAILED);
            session_gone(c, ZKL_EAUTH);
        }
    } else if (c->connected) {
        /* CONNECTING / ASSOCIATING / NOTCONNECTED: the socket is gone,
         * maybe not the session. */
        c->connected = 0;
        queue_conn_event(c, ZKL_CONN_SUSPENDED);
        zkl__on_suspended(c);
    }
}

/* The ZooKeeper client can drop its connection without a session event:
 * a send into a socket the server had already reset closes it and sets
 * NOTCONNECTED silently (and so does a changed name resolution). It can
 * also connect without one: it builds the CONNECTED event with
 * allocations, and drops the event when one fails (3.8's
 * queue_session_event), carrying on connected; waiting for that event
 * would wait for good. So its state is compared with ours after every
 * batch of calls into it, and a difference takes the path the event
 * would have. (The event, when it comes, comes inside the call that
 * connects, before the state can be read here.) */
static void notice_state(zkl_client_t *c)
{
    int st;

    if (c->zh == NULL || c->dead)
        return;
    st = zoo_state(c->zh);
    if (!c->connected) {
        if (st == ZOO_CONNECTED_STATE && !c->expired && !c->closing) {
            ZKL_LOG(ZKL_LOG_WARN, "zklock: connected without an event");
            on_session_event(c, st);
        } else if (st == ZOO_AUTH_FAILED_STATE) {
            /* A refused SASL identity ends the handle with no event. */
            ZKL_LOG(ZKL_LOG_ERROR, "zklock: authentication refused");
            on_session_event(c, st);
        }
        return;
    }
    if (st == ZOO_CONNECTED_STATE)
        return;
    ZKL_LOG(ZKL_LOG_WARN, "zklock: connection dropped without an event "
            "(state %d)", st);
    on_session_event(c, st);
}

/* What a failed connection attempt says, while there is no connection.
 * A TLS handshake that failed for good (ZKL__TLS_REFUSED, from the C
 * client zklock's TLS needs: an untrusted or expired certificate on
 * either side, a refused one, a peer that answers with something not
 * TLS) on every server of the list in a row ends the client, as refused
 * credentials do: retrying cannot help, and acquires would wait for
 * good. One that failed for an I/O reason (ZSSLCONNECTIONERROR) is
 * connection trouble. A server that closes every attempt before it
 * answers is, for a plain client, maybe a TLS-only port, and for a TLS
 * client maybe a plain one; but a server without quorum, or at its
 * connection limit, does the same: that is only said in the log. */
/* The C client built by deps/build-zookeeper-client.sh answers a
 * handshake refused for good with this code from zookeeper_process()
 * (deps/zookeeper-client-*.patch), I/O failures with
 * ZSSLCONNECTIONERROR. */
#define ZKL__TLS_REFUSED ZAUTHFAILED

static void note_refusal(zkl_client_t *c, int rc)
{
    int tls = zkl__secure_is_tls(c->secure);

    /* Only refusals in a row count: any other end of an attempt (a
     * reset, a refused or timed-out connection) starts again. */
    if (rc == ZSSLCONNECTIONERROR || rc == ZCONNECTIONLOSS ||
        rc == ZOPERATIONTIMEOUT)
        c->tls_refusals = 0;
    if (rc == ZKL__TLS_REFUSED && tls) {
        if (++c->tls_refusals < c->nservers)
            return;
        ZKL_LOG(ZKL_LOG_ERROR, "zklock: the TLS handshake failed for good "
                "on every server (%u in a row): giving up",
                c->tls_refusals);
        c->dead = ZKL_ETLS;
        queue_conn_event(c, ZKL_CONN_AUTH_FAILED);
        session_gone(c, ZKL_ETLS);
    } else if (rc == ZCONNECTIONLOSS && !tls &&
               ++c->closed_early == 3 * c->nservers) {
        ZKL_LOG(ZKL_LOG_WARN, "zklock: the servers refused or closed %u "
                "connections in a row before answering: down, without "
                "quorum, or a TLS-only port (zkl_options_set_tls)?",
                c->closed_early);
    } else if (rc == ZSSLCONNECTIONERROR && tls &&
               ++c->closed_early == 3 * c->nservers) {
        ZKL_LOG(ZKL_LOG_WARN, "zklock: the servers closed %u TLS "
                "handshakes in a row before answering: a plain (not TLS) "
                "port, a server at its connection limit, or down?",
                c->closed_early);
    }
}

/* One function and one context (the client) for the session watcher and
 * every node watch: the ZooKeeper client de-duplicates (function,
 * context) pairs, so each event arrives once and is fanned out here. */
void zkl__watcher(zhandle_t *zh, int type, int state, const char *path,
                  void *ctx)
{
    zkl_client_t *c = ctx;

    if (c == NULL || zh != c->zh || c->closing)
        return;
    if (type == ZOO_SESSION_EVENT) {
        c->stats.session_events++;
        on_session_event(c, state);
    } else if (path != NULL && path[0] != '\0') {
        c->stats.watch_events++;
        zkl__ops_watch(c, type, path);
        zkl__on_watch(c, type, path);
    }
}

static int open_session(zkl_client_t *c)
{
    errno = 0;
    c->zh = zkl__secure_open(c->secure, c->hosts, zkl__watcher,
                             c->session_timeout, c, zkl__zk_log_trampoline);
    /* zookeeper_init() leaves errno: ENOMEM when it could not allocate
     * its handle (nothing wrong with the server list, try again later),
     * EINVAL or a resolver's error for a list it refuses. */
    if (c->zh == NULL)
        return errno == ENOMEM ? ZKL_ENOMEM : ZKL_EZK;
    c->stats.sessions++;
    /* Names are resolved again on a connection loss, never during normal
     * operation: a resolution that fails while connected makes every
     * zookeeper_interest() fail before it reads or pings, and a DNS
     * outage would expire a session on a healthy connection. */
    zoo_set_servers_resolution_delay(c->zh, -1);
    if (zkl__send_auth(c) != ZKL_OK) {
        zookeeper_close(c->zh); /* not connected yet: does not block */
        c->zh = NULL;
        return ZKL_EZK;
    }
    c->connected = 0;
    c->ever_connected = 0;
    c->expired = 0;
    c->session_id = 0;
    return ZKL_OK;
}

/* zookeeper_close() of a connected handle sends the close, then polls
 * for the answer: up to 1.5 s with the loop stopped when the server
 * does not answer. Only a handle that the fence gives up is renewed
 * while connected. Shutting its socket down for reading first (io_fd is
 * a copy of it while the handle is connected, see zkl__on_result)
 * makes that poll return at once, while the close still goes out: a
 * server that answers ends the session, and its nodes, at once. One
 * that does not keeps them until the session times out, as it would
 * anyway. (Writing the close can still wait, up to 3 s, for a send
 * buffer that a stalled server left full.) */
static void cut_short_close(zkl_client_t *c, zhandle_t *zh)
{
    int st = zoo_state(zh);

    if ((st == ZOO_CONNECTED_STATE || st == ZOO_READONLY_STATE) &&
        c->io_fd >= 0)
        shutdown(c->io_fd, SHUT_RD);
}

static void renew_session(zkl_client_t *c)
{
    zhandle_t *old = c->zh;

    ZKL_LOG(ZKL_LOG_WARN, "zklock: session 0x%llx expired, opening a new one",
            (unsigned long long)c->session_id);
    c->zh = NULL;
    c->connected = 0;
    /* It completes whatever was outstanding (the keepalive too) with
     * ZCLOSING. */
    if (old != NULL) {
        cut_short_close(c, old);
        zookeeper_close(old);
    }
    zkl__fence_settle(c); /* every queued completion has run */
    c->pause_until = 0;
    c->pause_ms = 0;
    queue_conn_event(c, ZKL_CONN_EXPIRED);
    session_gone(c, ZKL_ESESSION);
    if (open_session(c) != ZKL_OK) {
        c->dead = ZKL_EZK;
        session_gone(c, ZKL_EZK);
    }
}

/* ---------------------------------------------------------------- */
/* Client                                                            */
/* ---------------------------------------------------------------- */

int zkl_client_new(zkl_client_t **out, const zkl_options_t *o)
{
    zkl_client_t *c;
    const char *hosts;
    size_t n;
    int rc;

    if (out == NULL)
        return ZKL_EINVAL;
    *out = NULL;
    c = zkl__calloc(1, sizeof *c);
    if (c == NULL)
        return ZKL_ENOMEM;
    hosts = o != NULL && o->hosts != NULL ? o->hosts : ZKL_DEFAULT_SERVERS;
    n = strlen(hosts) + (o != NULL && o->chroot ? strlen(o->chroot) : 0) + 1;
    c->hosts = zkl__malloc(n);
    if (c->hosts == NULL) {
        zkl__free(c);
        return ZKL_ENOMEM;
    }
    strcpy(c->hosts, hosts);
    c->nservers = 1;
    for (; *hosts != '\0' && *hosts != '/'; hosts++)
        c->nservers += *hosts == ',';
    if (o != NULL && o->chroot != NULL)
        strcat(c->hosts, o->chroot);
    c->session_timeout =
        o != NULL ? o->session_timeout : ZKL_DEFAULT_SESSION_TIMEOUT;
    c->window = (size_t)(o != NULL ? o->window : ZKL_DEFAULT_WINDOW);
    c->stats.window = c->window;
    c->conn_cb = o != NULL ? o->conn_cb : NULL;
    c->conn_arg = o != NULL ? o->conn_arg : NULL;
    c->ready_tail = &c->ready;
    c->paced_tail = &c->paced;
    c->io_fd = -1;
    c->conn_state = ZKL_CONN_SUSPENDED;
    c->conn.cls = &conn_class;
    c->acl = ZOO_OPEN_ACL_UNSAFE;
    if ((o != NULL &&
         ((rc = zkl__creds_copy(&c->auth, &c->nauth, o->auth, o->nauth)) !=
              ZKL_OK ||
          (rc = zkl__secure_copy(&c->secure, o->secure)) != ZKL_OK)) ||
        (rc = zkl__acl_build(&c->acl, o)) != ZKL_OK ||
        (rc = open_session(c)) != ZKL_OK) {
        zkl__acl_free(&c->acl);
        zkl__creds_free(c->auth, c->nauth);
        zkl__secure_free(c->secure);
        zkl__free(c->hosts);
        zkl__free(c);
        return rc;
    }
    *out = c;
    return ZKL_OK;
}

zkl_conn_event_t zkl_client_state(const zkl_client_t *c)
{
    if (c == NULL)
        return ZKL_CONN_SUSPENDED;
    return (zkl_conn_event_t)c->conn_state;
}

/* From the socket, not zoo_get_current_server(): that formats into one
 * static buffer for the whole process, which clients on other threads
 * may be writing. Same text as it gives ("[addr]:port" for IPv6). */
int zkl_client_server(const zkl_client_t *c, char *buf, size_t size)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    char addr[INET6_ADDRSTRLEN];
    const void *in;
    int port, n;

    if (c == NULL || buf == NULL || size == 0)
        return ZKL_EINVAL;
    buf[0] = '\0';
    if (c->zh == NULL || !c->connected || c->io_fd < 0 ||
        getpeername(c->io_fd, (struct sockaddr *)&ss, &len) != 0)
        return ZKL_ECONNLOSS;
    if (ss.ss_family == AF_INET) {
        in = &((struct sockaddr_in *)&ss)->sin_addr;
        port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    } else if (ss.ss_family == AF_INET6) {
        in = &((struct sockaddr_in6 *)&ss)->sin6_addr;
        port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    } else {
        return ZKL_ECONNLOSS;
    }
    if (inet_ntop(ss.ss_family, in, addr, sizeof addr) == NULL)
        return ZKL_ECONNLOSS;
    n = snprintf(buf, size, ss.ss_family == AF_INET6 ? "[%s]:%d" : "%s:%d",
                 addr, port);
    if (n < 0 || (size_t)n >= size) {
        buf[0] = '\0';
        return ZKL_EINVAL;
    }
    return ZKL_OK;
}

int64_t zkl_client_session_id(const zkl_client_t *c)
{
    return c != NULL ? c->session_id : 0;
}

int zkl_client_session_timeout(const zkl_client_t *c)
{
    return c != NULL ? zkl__session_timeout(c) : 0;
}

int zkl_client_stats(const zkl_client_t *c, zkl_stats_t *out, size_t size)
{
    if (c == NULL || out == NULL)
        return ZKL_EINVAL;
    {
        zkl_stats_t s = c->stats;

        s.outstanding = c->outstanding;
        s.paced = c->npaced;
        memcpy(out, &s, size < sizeof s ? size : sizeof s);
    }
    return ZKL_OK;
}

size_t zkl_client_pending(const zkl_client_t *c)
{
    return c != NULL ? c->natts + c->ops_once : 0;
}

int zkl_client_attach(zkl_client_t *c, const zkl_loop_ops_t *ops,
                      void *loop_data)
{
    if (c == NULL || ops == NULL || ops->io == NULL || ops->timer == NULL)
        return ZKL_EINVAL;
    if (c->freeing || c->closing)
        return ZKL_ECLOSED;
    if (c->ops != NULL)
        return ZKL_EBUSY;
    c->ops = ops;
    attached_here++;
    /* Out of memory, the client only shares no views: it lists more. */
    (void)zkl__views_join(c);
    c->loop_data = loop_data;
    zkl__kick(c);
    return ZKL_OK;
}

void *zkl_client_loop_data(const zkl_client_t *c, const zkl_loop_ops_t *ops)
{
    if (c == NULL || ops == NULL || c->ops != ops)
        return NULL;
    return c->loop_data;
}

/* ---------------------------------------------------------------- */
/* Passes                                                            */
/* ---------------------------------------------------------------- */

/* Whether st is that of the socket the loop's copy is of. */
static int is_watched(const zkl_client_t *c, const struct stat *st)
{
    return c->io_fd >= 0 && st->st_ino == c->io_ino &&
           st->st_dev == c->io_dev;
}

/* The same, for a descriptor. */
static int is_watched_socket(const zkl_client_t *c, int fd)
{
    struct stat st;

    return fd >= 0 && fstat(fd, &st) == 0 && is_watched(c, &st);
}

/* TLS handshakes cost CPU (a context set up from the files, an RSA
 * signature): a millisecond or more a step here, and when a server
 * comes back every client of the thread has one to do, which in one
 * turn of the loop would stall it for as many milliseconds as there are
 * clients. So the thread's handshake steps take at most half its time:
 * after a step of d microseconds of the thread's CPU the next waits d
 * (CPU, not wall time: on a busy machine the wall time of a step says
 * more of the others than of the step, and would slow reconnects down
 * for nothing). A client whose turn
 * it is not stops watching its socket and comes back by its timer
 * (ask_interest), then takes the step its socket was waiting for (a
 * step whose socket is not ready yet is a cheap no-op). The C client
 * zklock's TLS needs takes one step per zookeeper_process() call
 * (deps/zookeeper-client-01-*.patch); its state while it does. */
/* ZOO_SSL_CONNECTING_STATE, not in 3.8.0's header */
#define ZKL__SSL_CONNECTING 7
static _Thread_local uint64_t handshake_free_at;

static uint64_t thread_cpu_us(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int handshaking(zkl_client_t *c)
{
    return zkl__secure_is_tls(c->secure) && !c->connected &&
           zoo_state(c->zh) == ZKL__SSL_CONNECTING;
}

/* The events to hand to the C client now: zk_events, or none while the
 * client waits for its turn (*t0 set when a step is to be timed). */
static int pace_handshake(zkl_client_t *c, int zk_events, int from_timer,
                          uint64_t *t0)
{
    uint64_t now;

    if (!handshaking(c)) {
        c->handshake_wait = 0;
        return zk_events;
    }
    now = zkl__now_us();
    if (now < handshake_free_at) {
        c->handshake_wait = 1;
        return 0;
    }
    if (c->handshake_wait && from_timer)
        zk_events = c->handshake_want; /* its turn: the step it waits for */
    c->handshake_wait = 0;
    if (zk_events != 0)
        *t0 = thread_cpu_us() | 1; /* never 0: 0 means "not timed" */
    return zk_events;
}

static void handshake_took(uint64_t cpu0)
{
    uint64_t cpu = thread_cpu_us();

    handshake_free_at = zkl__now_us() + (cpu > cpu0 ? cpu - cpu0 : 0);
}

static void ask_interest(zkl_client_t *c, int *fd, int *events, long *ms)
{
    struct timeval tv = {0, 0};
    int zfd = -1, interest = 0, rc;

    *fd = -1;
    *events = 0;
    *ms = -1;
    if (c->zh == NULL || c->dead)
        return;
    rc = zookeeper_interest(c->zh, &zfd, &interest, &tv);
    notice_state(c);
    if (rc == ZINVALIDSTATE || is_unrecoverable(c->zh) == ZINVALIDSTATE) {
        if (zoo_state(c->zh) == ZOO_EXPIRED_SESSION_STATE)
            c->expired = 1;
        return;
    }
    if (interest & ZOOKEEPER_READ)
        *events |= ZKL_READ;
    if (interest & ZOOKEEPER_WRITE)
        *events |= ZKL_WRITE;
    *ms = (long)tv.tv_sec * 1000L + (long)(tv.tv_usec + 999) / 1000L;
    *fd = zfd;
    if (rc == ZOK && c->handshake_wait) {
        /* Not its turn to handshake (pace_handshake): unwatched until
         * its timer says it is. */
        uint64_t now = zkl__now_us();
        long wait = handshake_free_at > now
                        ? (long)((handshake_free_at - now + 999) / 1000)
                        : 0;

        c->handshake_want = (*events & ZKL_READ ? ZOOKEEPER_READ : 0) |
                            (*events & ZKL_WRITE ? ZOOKEEPER_WRITE : 0);
        *events = 0;
        if (*ms < 0 || wait < *ms)
            *ms = wait;
        return;
    }
    if (rc != ZOK) {
        /* A failure may come before the client set the timeout (a failed
         * ping send, say): try again soon, not at once. It may have
         * closed its socket, and the number may be someone else's by
         * now: keep reading it only while it is the socket the loop
         * already watches; otherwise wait for the next one. */
        if (*ms < ZKL__IO_RETRY_MS)
            *ms = ZKL__IO_RETRY_MS;
        *events = ZKL_READ;
        if (!is_watched_socket(c, zfd))
            *fd = -1;
    }
}

/* The clock-driven part of a pass: acquire deadlines, LOST for holds
 * whose session the server may expire, the keepalive. */
static void on_clock(zkl_client_t *c)
{
    uint64_t now = zkl__now_ms();

    if (c->pause_until != 0 && now >= c->pause_until) {
        c->pause_until = 0;
        zkl__on_connected(c, 0); /* what waited goes now */
    }
    zkl__fence_clock(c, now);
    if (zkl__fence_lifted(c))
        zkl__on_connected(c, 0); /* what waited for the fence goes now */
    zkl__on_deadlines(c, now);
    zkl__ops_expire(c, now);
    if (c->natts > 0 && now >= c->touched_at + lost_after(c))
        zkl__on_presumed_expiry(c);
    keepalive(c, now);
}

/* Moves everything forward until nothing is left to do without waiting
 * for the loop; with_callbacks == 0 when called from an API function,
 * whose caller must not see callbacks before it returns. */
static void settle(zkl_client_t *c, int with_callbacks, int *fd,
                   int *events, long *ms)
{
    int guard;

    for (guard = 0; guard < 10000; guard++) {
        if (guard > 0 && zkl__over_budget(c)) {
            /* Yield: arm() sees the queued work and asks for "at once".
             * Never before one round: when reading alone uses up the
             * budget (a slow machine, a reconnect storm), steps and
             * callbacks must still move, one at least per pass. */
            ask_interest(c, fd, events, ms);
            break;
        }
        zkl__ops_run(c);
        zkl__run_ready(c);
        notice_state(c);
        if (c->expired && !c->dead) {
            renew_session(c);
            continue;
        }
        on_clock(c);
        if (c->ready != NULL || zkl__paced_due(c) ||
            (c->ops_work && zkl__is_connected(c)))
            continue;
        if (with_callbacks && c->evq_len > 0) {
            zkl__ops_drain(c);
            if (c->freeing)
                return;
            continue;
        }
        ask_interest(c, fd, events, ms);
        if (c->ready != NULL || zkl__paced_due(c) ||
            (c->expired && !c->dead) ||
            (c->ops_work && zkl__is_connected(c)) ||
            (with_callbacks && c->evq_len > 0))
            continue;
        break;
    }
}

static long sooner(long ms, uint64_t at, uint64_t now)
{
    long d = at > now ? (long)(at - now) : 0;

    return ms < 0 || d < ms ? d : ms;
}

/* The loop watches a copy of the ZooKeeper client's socket, never the
 * client's own descriptor. The client closes its socket whenever the
 * connection fails, and its number is soon someone else's: the new
 * socket's, or an fd a callback opens before the adapter hears of the
 * change. Unwatching by a number that is no longer ours breaks the
 * registration of whoever has it now (libuv and libevent keep one per
 * number), and leaves the old socket registered in the kernel wherever
 * a forked child still holds it (sd-event then reports it with a freed
 * source). The copy keeps the old socket, and its number, ours until the
 * adapter has moved to the new copy, and the copy is close-on-exec.
 * Sockets are told apart by inode, not number, so a watch event or a
 * failed call no longer makes the adapter rebuild for nothing. Returns
 * -1 when the adapter refused (tried again shortly). */
static int watch(zkl_client_t *c, int zfd, int events)
{
    struct stat st;
    int fd = c->io_fd, renew = 0, rc;

    if (zfd < 0 || fstat(zfd, &st) != 0) {
        fd = -1;
    } else if (!is_watched(c, &st)) {
        /* A child that inherits the client's own descriptor keeps the
         * connection up after the client closes it: close-on-exec too. */
        (void)fcntl(zfd, F_SETFD, FD_CLOEXEC);
        fd = fcntl(zfd, F_DUPFD_CLOEXEC, 0);
        if (fd < 0 && !c->io_retry)
            ZKL_LOG(ZKL_LOG_ERROR, "zklock: cannot copy socket %d", zfd);
        /* A read left for later was the old socket's. */
        c->more_io = 0;
        renew = 1;
    }
    if (fd < 0)
        events = 0;
    if (fd == c->io_fd && events == c->io_events && !c->io_retry)
        return 0;
    rc = c->ops->io(c->loop_data, fd, events, renew || c->io_retry);
    if (rc != 0 && !c->io_retry) /* once per streak of refusals */
        ZKL_LOG(ZKL_LOG_ERROR, "zklock: loop adapter io(%d) failed", fd);
    if (c->io_fd >= 0 && c->io_fd != fd)
        close(c->io_fd); /* the adapter let go of it */
    c->io_fd = fd;
    c->io_events = events;
    if (renew && fd >= 0) {
        c->io_dev = st.st_dev;
        c->io_ino = st.st_ino;
    }
    c->io_retry = rc != 0 || (renew && fd < 0);
    return c->io_retry ? -1 : 0;
}

static void arm(zkl_client_t *c, int zfd, int events, long ms)
{
    zkl__att_t *top;
    uint64_t now = zkl__now_ms(), at;

    if (c->ops == NULL)
        return;
    if (watch(c, zfd, events) != 0)
        ms = sooner(ms, now + ZKL__IO_RETRY_MS, now);
    if (c->evq_len > 0 || c->ready != NULL || (c->expired && !c->dead) ||
        c->more_io || zkl__paced_due(c))
        ms = 0;
    if ((top = zkl__heap_top(c)) != NULL)
        ms = sooner(ms, top->deadline, now);
    if ((at = zkl__ops_next_deadline(c)) != 0)
        ms = sooner(ms, at, now);
    if (c->natts > 0 && !c->presumed_lost)
        ms = sooner(ms, c->touched_at + lost_after(c), now);
    if (keepalive_wanted(c))
        ms = sooner(ms, keepalive_at(c), now);
    if (c->pause_until != 0)
        ms = sooner(ms, c->pause_until, now);
    if (zkl__fence_next(c) != 0)
        ms = sooner(ms, zkl__fence_next(c), now);
    if (c->ops->timer(c->loop_data, ms) != 0)
        ZKL_LOG(ZKL_LOG_ERROR, "zklock: loop adapter timer failed");
}

static void teardown(zkl_client_t *c);

static void begin_budget(zkl_client_t *c)
{
    uint64_t slice = ZKL__PASS_BUDGET_US / (attached_here ? attached_here : 1);

    c->budget_end = zkl__now_us() +
                    (slice > ZKL__MIN_SLICE_US ? slice : ZKL__MIN_SLICE_US);
}

/* Replies to c may have given waiters of other clients of this thread
 * the lock (hand_across): their own passes send what follows. Run by
 * the outermost pass or kick of the thread only, so that kicks do not
 * nest; a client poked meanwhile is still on the list. */
static void kick_poked(zkl_client_t *c)
{
    static _Thread_local int running;
    zkl_client_t *p;

    if (running)
        return;
    running = 1;
    while ((p = zkl__views_next_poked(c)) != NULL)
        if (!p->freeing)
            zkl__kick(p);
    running = 0;
}

static void pass(zkl_client_t *c, int zk_events, int from_timer)
{
    int fd = -1, events = 0;
    long ms = -1;

    if (c == NULL)
        return;
    if (c->depth > 0) {
        ZKL_LOG(ZKL_LOG_ERROR, "zklock: on_io/on_timer called re-entrantly");
        return;
    }
    c->depth++;
    begin_budget(c);
    if (c->zh != NULL && !c->dead && !c->freeing) {
        int rc;

        uint64_t t0 = 0;

        if (from_timer && c->more_io)
            zk_events = ZOOKEEPER_READ; /* an earlier pass yielded */
        c->more_io = 0;
        zk_events = pace_handshake(c, zk_events, from_timer, &t0);
        if (zk_events == 0) {
            rc = zookeeper_process(c->zh, 0);
        } else {
            /* One call handles at most one reply: take all that are
             * there, up to the pass budget. */
            for (;;) {
                rc = zookeeper_process(c->zh, zk_events);
                if (rc != ZOK)
                    break;
                zk_events &= ZOOKEEPER_READ;
                if (zk_events == 0)
                    break;
                if (zkl__over_budget(c)) {
                    c->more_io = 1;
                    break;
                }
            }
        }
        if (t0 != 0)
            handshake_took(t0);
        if (zoo_state(c->zh) == ZOO_EXPIRED_SESSION_STATE)
            c->expired = 1;
        notice_state(c);
        if (!c->dead && !c->connected)
            note_refusal(c, rc);
    }
    if (!c->freeing)
        settle(c, 1, &fd, &events, &ms);
    c->depth--;
    if (c->freeing) {
        kick_poked(c);
        teardown(c);
        return;
    }
    arm(c, fd, events, ms);
    kick_poked(c);
}

void zkl_client_on_io(zkl_client_t *c, int events)
{
    int zev = 0;

    if (events & ZKL_READ)
        zev |= ZOOKEEPER_READ;
    if (events & ZKL_WRITE)
        zev |= ZOOKEEPER_WRITE;
    pass(c, zev, 0);
}

void zkl_client_on_timer(zkl_client_t *c)
{
    pass(c, 0, 1);
}

/* Sends what can be sent now and re-arms; callbacks wait for the loop (a
 * 0 ms timer). Before a loop is attached nothing happens: no I/O until
 * zkl_client_attach(), which kicks. */
void zkl__kick(zkl_client_t *c)
{
    int fd = -1, events = 0;
    long ms = -1;

    if (c->depth > 0 || c->closing || c->ops == NULL || c->kicks_held)
        return; /* the running pass (or the batch's last kick) settles */
    c->depth++;
    begin_budget(c);
    settle(c, 0, &fd, &events, &ms);
    c->depth--;
    arm(c, fd, events, ms);
    kick_poked(c);
}

/* ---------------------------------------------------------------- */
/* Teardown                                                          */
/* ---------------------------------------------------------------- */

/* Requests still on their way when the session is closed: their
 * replies would come back to a closing client. */
static int in_flight(const zkl_client_t *c)
{
    const zkl__att_t *a;

    if (c->ka_sent_at != 0 || c->ops_out > 0)
        return 1;
    for (a = c->atts; a != NULL; a = a->next)
        if (a->inflight > 0)
            return 1;
    return 0;
}

/* zookeeper_close() sends the close request, then waits for the first
 * bytes to come back, takes them for the answer and closes the socket.
 * With other replies still on their way, those are the first bytes: the
 * socket is closed with them unread, which resets the connection, and
 * the reset can beat the close request at the server. The session, and
 * every node it made, then lives on until it expires (seen about one
 * time in seven when a try-lock set ended with its creates in flight).
 * So the replies are read first, for at most a second, and the close
 * goes out on a quiet connection.
 *
 * Reading them may itself drop the connection: with a fence up, the
 * request the ZooKeeper client never sent heads its queue, and the first
 * reply makes it reset (fence.c). A handle that is not connected closes
 * without telling the server, so the session would outlive the client
 * by a session timeout, its lock nodes with it. So a connection lost
 * here is made again (the same session, within the same second), and
 * the close waits a moment for the replies to what the client sends on
 * a reconnect (its watches) before it goes. */
#define ZKL__QUIESCE_MS 1000
#define ZKL__REJOINED_QUIET_MS 100

/* One turn of the ZooKeeper client, waiting at most until end. */
static int pump_once(zkl_client_t *c, uint64_t end, uint64_t now)
{
    struct pollfd p;
    struct timeval tv;
    int fd = -1, interest = 0, ev = 0, ms;

    if (zookeeper_interest(c->zh, &fd, &interest, &tv) != ZOK)
        return 0;
    ms = (int)(end - now < 50 ? end - now : 50);
    if (fd < 0) { /* between connections: the client's own timer */
        long t = (long)tv.tv_sec * 1000 + tv.tv_usec / 1000;

        if (t >= 0 && t < ms)
            ms = (int)t;
        (void)poll(NULL, 0, ms);
    } else {
        p.fd = fd;
        p.events = (short)(((interest & ZOOKEEPER_READ) ? POLLIN : 0) |
                           ((interest & ZOOKEEPER_WRITE) ? POLLOUT : 0));
        p.revents = 0;
        if (poll(&p, 1, ms) < 0)
            return 0;
        if (p.revents & (POLLIN | POLLHUP | POLLERR))
            ev |= ZOOKEEPER_READ;
        if (p.revents & POLLOUT)
            ev |= ZOOKEEPER_WRITE;
    }
    /* Every reply already there: under TLS, replies OpenSSL has read
     * with an earlier one leave the socket unreadable. */
    while (zookeeper_process(c->zh, ev) == ZOK && (ev & ZOOKEEPER_READ))
        ev = ZOOKEEPER_READ;
    return 1;
}

static void quiesce(zkl_client_t *c)
{
    uint64_t now = zkl__now_ms(), end = now + ZKL__QUIESCE_MS;
    uint64_t quiet_until = 0;
    int dropped = 0;

    /* Connected, whether or not new requests are held (fence, pause):
     * the replies on their way are what it waits for. */
    if (c->zh == NULL || !c->connected || c->expired)
        return;
    while ((now = zkl__now_ms()) < end) {
        int st = zoo_state(c->zh);

        if (st == ZOO_EXPIRED_SESSION_STATE || st == ZOO_AUTH_FAILED_STATE)
            return;
        if (st != ZOO_CONNECTED_STATE) {
            dropped = 1;
        } else if (dropped) {
            if (quiet_until == 0)
                quiet_until = now + ZKL__REJOINED_QUIET_MS;
            else if (now >= quiet_until)
                return;
        } else if (!in_flight(c)) {
            return;
        }
        if (!pump_once(c, end, now))
            return;
    }
}

static void teardown(zkl_client_t *c)
{
    zkl__att_t *a, *nx;

    c->closing = 1;
    /* Every pending operation is answered, the ops first (a set before
     * its members), then each attempt's handle. */
    zkl__ops_close(c);
    zkl__on_close(c);
    c->depth++;
    zkl__ops_drain(c);
    /* Closing the session deletes its ephemeral nodes; outstanding
     * requests complete with ZCLOSING, and the contenders requests
     * among them queue their callbacks, delivered next. */
    if (c->zh != NULL) {
        zhandle_t *zh = c->zh;

        quiesce(c);
        zookeeper_close(zh);
        c->zh = NULL;
    }
    zkl__fence_settle(c); /* every queued completion has run */
    zkl__ops_drain(c);
    c->depth--;
    zkl__ops_teardown(c);
    zkl__queue_clear(c);
    zkl__on_client_gone(c);
    kick_poked(c);
    zkl__views_part(c);
    for (a = c->atts; a != NULL; a = nx) {
        nx = a->next;
        zkl__free(a);
    }
    if (c->ops != NULL && attached_here > 0)
        attached_here--;
    if (c->ops != NULL && c->ops->detach != NULL)
        c->ops->detach(c->loop_data);
    if (c->io_fd >= 0)
        close(c->io_fd); /* the adapter let go of it */
    zkl__acl_free(&c->acl);
    zkl__creds_free(c->auth, c->nauth);
    zkl__secure_free(c->secure);
    zkl__table_free(&c->wtab);
    zkl__table_free(&c->own);
    zkl__free(c->heap);
    zkl__free(c->evq);
    zkl__free(c->hosts);
    zkl__free(c);
}

void zkl_client_free(zkl_client_t *c)
{
    if (c == NULL || c->closing)
        return;
    c->freeing = 1;
    if (c->depth > 0)
        return; /* the outermost pass tears down */
    teardown(c);
}
