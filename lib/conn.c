/* The session as the machine's requests see it: whether they may go
 * now (connected, no fence, no throttling pause), the window's count,
 * the pass's budget, and what each answer tells of the session (how
 * long the server may still keep it, a pause, a moved session). Owns
 * nothing; records facts in the client and calls no layer above it:
 * an expired session is reported to the caller (zkl__on_answer acts). */
#include <sys/socket.h>

#include "internal.h"

int zkl__session_timeout(const zkl_client_t *c)
{
    if (c->zh != NULL && c->ever_connected)
        return zoo_recv_timeout(c->zh);
    return c->session_timeout;
}

int zkl__over_budget(const zkl_client_t *c)
{
    return zkl__now_us() > c->budget_end;
}

int zkl__client_usable(const zkl_client_t *c)
{
    if (c == NULL || c->freeing || c->closing)
        return ZKL_ECLOSED;
    return c->dead;
}

int zkl__may_send(const zkl_client_t *c)
{
    return c->zh != NULL && c->connected && !c->expired &&
           !zkl__fence_up(c);
}

/* What waited for a pause to end goes at the end of it (the client's
 * clock wakes it). */
int zkl__is_connected(zkl_client_t *c)
{
    return zkl__may_send(c) && c->pause_until == 0;
}

/* A throttled request was not done at all; retrying it at once would
 * only feed the overload (and, were the answer permanent, spin). At
 * most a quarter of the session timeout: a release's delete, throttled
 * too, must still be tried (and its refusal keep the bound fresh) long
 * before its session is presumed gone. */
static void pause_sends(zkl_client_t *c)
{
    uint64_t now = zkl__now_ms();
    unsigned most = (unsigned)zkl__session_timeout(c) / 4;

    if (c->pause_until != 0)
        return; /* one pause for a batch of such answers */
    if (most > 2000)
        most = 2000;
    c->pause_ms = c->pause_ms == 0 ? 50 : 2 * c->pause_ms;
    if (c->pause_ms > most)
        c->pause_ms = most;
    c->pause_until = now + c->pause_ms;
    c->stats.throttled++;
    ZKL_LOG(ZKL_LOG_WARN, "zklock: the server throttles requests: "
            "pausing new ones for %u ms", c->pause_ms);
}

int zkl__on_result(zkl_client_t *c, int rc, uint64_t sent_at)
{
    enum zkl__rc_class k = zkl__rc_class(rc);
    /* A refusal to do it now, in a server's reply: a throttled request,
     * or a code no table knows. */
    int refused_now = rc == ZTHROTTLEDOP || !zkl__rc_known(rc);

    if (refused_now)
        pause_sends(c);
    else if (k != ZKL__RC_CONNLOSS && k != ZKL__RC_GONE &&
             c->pause_until == 0)
        c->pause_ms = 0; /* served again: the next pause starts short */
    if (rc == ZSESSIONMOVED && c->connected && c->io_fd >= 0 &&
        zoo_state(c->zh) == ZOO_CONNECTED_STATE) {
        /* Every request on this connection would get the same answer.
         * (A 3.8 server closes the connection itself instead of sending
         * this code; others answer with it.) Shutting the socket down,
         * not closing it (the socket is the ZooKeeper client's; io_fd
         * is the loop's copy of it), makes the client see the end of the
         * stream and reconnect. io_fd is a copy of its socket while it is
         * still CONNECTED: a reconnect, or a silent close, would have
         * changed the state first. Shutting it down
         * twice, for several answers in one batch, is harmless. */
        ZKL_LOG(ZKL_LOG_WARN, "zklock: session moved to another server: "
                "reconnecting");
        shutdown(c->io_fd, SHUT_RDWR);
    }
    /* A refusal to do it now came in a reply: the server touched the
     * session before it refused (3.8 touches in submitRequestNow(),
     * ahead of every processor). Only the client's own codes say that
     * the server may never have seen the request. */
    if ((k != ZKL__RC_CONNLOSS && k != ZKL__RC_GONE) || refused_now) {
        if (sent_at > c->touched_at) {
            c->touched_at = sent_at;
            c->presumed_lost = 0;
        }
    }
    return rc == ZSESSIONEXPIRED;
}

/* A hold begins only with half a timeout to spare, so it is not told
 * LOST the moment it is granted. */
int zkl__touch_fresh(const zkl_client_t *c)
{
    return zkl__now_ms() <
           c->touched_at + (uint64_t)zkl__session_timeout(c) / 2;
}

void zkl__req_sent(zkl_client_t *c)
{
    if (++c->outstanding > c->stats.outstanding_max)
        c->stats.outstanding_max = c->outstanding;
}

void zkl__req_done(zkl_client_t *c)
{
    if (c->outstanding > 0)
        c->outstanding--;
}
