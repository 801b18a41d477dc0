/* Faults: session expiry, server restart, lost replies, disconnection.
 * Clients under test reach the server through the fault proxy; the other
 * contenders and the observer connect directly. */
#include "faultproxy.h"
#include "harness.h"

static fp_t *proxy(void)
{
    fp_t *fp = fp_new(t_base, t_port());

    ASSERT(fp != NULL);
    return fp;
}

TEST(session_expiry_while_holding)
{
    fp_t *fp = proxy();
    t_conn_t xc;
    zkl_client_t *x = t_client(fp_hosts(fp), 2000, &xc);
    zkl_client_t *y = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    uint64_t xtok, ytok;
    t_lock_t a, b;

    t_hold_and_queue(&a, x, &b, y, p);
    ASSERT_RC(zkl_lock_token(a.lk, &xtok), ZKL_OK);

    fp_stall(fp, 1); /* no heartbeats reach the server */
    ASSERT(t_run_until(&a.suspended, 5000));
    ASSERT_EQ(a.ev[1], ZKL_LOCK_SUSPENDED);
    ASSERT_RC(a.st[1], ZKL_ESUSPENDED);
    ASSERT(zkl_lock_is_held(a.lk)); /* uncertain, not lost yet */
    ASSERT(t_has_event(&xc, ZKL_CONN_SUSPENDED));
    /* Past the session timeout the holder is told it lost the lock,
     * without waiting to hear from the server... */
    ASSERT(t_run_until(&a.lost, 6000));
    ASSERT_RC(a.last_status, ZKL_ESESSION);
    ASSERT(!zkl_lock_is_held(a.lk));
    /* ...and the server hands the lock to the next waiter. */
    ASSERT(t_run_until(&b.acquired, 10000));
    ASSERT_RC(zkl_lock_token(b.lk, &ytok), ZKL_OK);
    ASSERT(ytok > xtok);

    fp_stall(fp, 0);
    ASSERT(WAIT_FOR(t_has_event(&xc, ZKL_CONN_EXPIRED) && xc.connected,
                    10000));
    ASSERT_EQ(xc.events[xc.n - 1], ZKL_CONN_CONNECTED); /* new session */
    ASSERT_EQ(a.n, 3);
    /* The handle works again on the new session. */
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(p, 2, 5000), 2);
    ASSERT_RC(zkl_lock_release(b.lk), ZKL_OK);
    ASSERT(WAIT_FOR(a.acquired == 2, 5000));
    zkl_lock_free(a.lk);
    zkl_lock_free(b.lk);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    zkl_client_free(x);
    zkl_client_free(y);
    fp_free(fp);
}

TEST(session_expiry_while_waiting)
{
    fp_t *fp = proxy();
    t_conn_t xc;
    zkl_client_t *x = t_client(fp_hosts(fp), 2000, &xc);
    zkl_client_t *y = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    t_lock_t a, b;

    t_hold_and_queue(&b, y, &a, x, p);

    fp_stall(fp, 1);
    /* The server expires the waiter's session and deletes its node. */
    ASSERT_EQ(t_zk_wait_count(p, 1, 10000), 1);
    fp_stall(fp, 0);
    ASSERT(WAIT_FOR(t_has_event(&xc, ZKL_CONN_EXPIRED) && xc.connected,
                    10000));
    /* The waiter re-queued on its new session, behind the holder. */
    ASSERT_EQ(t_zk_wait_count(p, 2, 5000), 2);
    ASSERT_EQ(a.n, 0);
    ASSERT_RC(zkl_lock_release(b.lk), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    t_run_for(100);
    ASSERT_EQ(a.n, 1);
    ASSERT_EQ(t_zk_count(p), 1);
    zkl_lock_free(a.lk);
    zkl_lock_free(b.lk);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    zkl_client_free(x);
    zkl_client_free(y);
    fp_free(fp);
}

/* The sessions must outlive the restart, the server's start included
 * (a JVM's start on a loaded machine): 15 s sessions, whose holds are
 * told LOST only after 13.5 s without an answer. With 8 s, a run of CI
 * beside a soak on the same 2 cores saw no RESTORED within 15 s of the
 * start (not seen otherwise). */
TEST(server_restart_held_and_queued)
{
    t_conn_t ac, bc;
    zkl_client_t *x = t_client(t_hosts(), 15000, &ac);
    zkl_client_t *y = t_client(t_hosts(), 15000, &bc);
    const char *p = t_path(NULL);
    t_lock_t a, b;
    uint64_t tok1, tok2;

    t_hold_and_queue(&a, x, &b, y, p);
    ASSERT_RC(zkl_lock_token(a.lk, &tok1), ZKL_OK);
    t_run_for(100);

    t_server("kill");
    ASSERT(t_run_until(&a.suspended, 5000));
    ASSERT(zkl_lock_is_held(a.lk));
    t_run_for(500);
    t_server("start");
    /* The sessions outlive the restart: the hold is confirmed back. */
    ASSERT(t_run_until(&a.restored, 15000));
    ASSERT(zkl_lock_is_held(a.lk));
    ASSERT_RC(zkl_lock_token(a.lk, &tok2), ZKL_OK);
    ASSERT_EQ(tok1, tok2);
    ASSERT(t_has_event(&ac, ZKL_CONN_RECONNECTED));
    ASSERT(WAIT_FOR(bc.connected, 10000));
    ASSERT(!t_has_event(&bc, ZKL_CONN_EXPIRED));
    ASSERT_EQ(b.n, 0);
    ASSERT_EQ(t_zk_count(p), 2);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(t_run_until(&b.acquired, 10000));
    ASSERT_EQ(a.lost, 0);
    zkl_lock_free(a.lk);
    zkl_lock_free(b.lk);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    zkl_client_free(x);
    zkl_client_free(y);
}

TEST(create_reply_lost)
{
    fp_t *fp = proxy();
    zkl_client_t *x = t_client(fp_hosts(fp), 4000, NULL);
    zkl_client_t *h = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    char name[64], full[512], **names;
    t_lock_t a, hold;
    uint64_t tok;
    int n, conns;

    /* 1. Lock free: the create happens, its reply is lost; the client
     * finds its node by uuid and takes the lock with it. */
    t_lock_init(&a, x, p);
    conns = fp_accepted(fp);
    fp_lose_next_reply(fp, 150);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 10000));
    ASSERT(fp_accepted(fp) > conns); /* it did reconnect */
    n = t_zk_children(p, &names);
    ASSERT_EQ(n, 1); /* no second node */
    ASSERT_RC(zkl_lock_node_name(a.lk, name, sizeof name), ZKL_OK);
    ASSERT_STR(names[0], name);
    t_zk_free_names(names, n);
    snprintf(full, sizeof full, "%s/%s", p, name);
    ASSERT_RC(zkl_lock_token(a.lk, &tok), ZKL_OK);
    ASSERT_EQ((int64_t)tok, t_zk_czxid(full));
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(t_run_until(&a.released, 5000));
    ASSERT_EQ(t_zk_count(p), 0);

    /* 2. Lock held: the recovered node queues, no ghost ahead of it. */
    t_lock_init(&hold, h, p);
    ASSERT_RC(zkl_lock_acquire(hold.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&hold.acquired, 5000));
    fp_lose_next_reply(fp, 150);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    t_run_for(1500);
    ASSERT_EQ(t_zk_count(p), 2);
    ASSERT_RC(zkl_lock_release(hold.lk), ZKL_OK);
    ASSERT(WAIT_FOR(a.acquired == 2, 10000));
    ASSERT_EQ(t_zk_count(p), 1);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(WAIT_FOR(a.released == 2, 5000));

    /* 3. Cancelled while the create's reply is being lost: the node is
     * found after the reconnect and deleted. */
    fp_lose_next_reply(fp, 150);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT_RC(zkl_lock_cancel(a.lk), ZKL_OK);
    ASSERT(t_run_until(&a.failed, 5000));
    ASSERT(WAIT_FOR(zkl_client_pending(x) == 0, 10000));
    ASSERT_EQ(t_zk_count(p), 0);
    t_run_for(100);
    ASSERT_EQ(a.n, 5);
    zkl_lock_free(a.lk);
    zkl_lock_free(hold.lk);
    zkl_client_free(x);
    zkl_client_free(h);
    fp_free(fp);
}

TEST(list_reply_lost)
{
    fp_t *fp = proxy();
    zkl_client_t *x = t_client(fp_hosts(fp), 4000, NULL);
    zkl_client_t *h = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    t_lock_t a, hold;
    int conns;

    t_hold_and_queue(&hold, h, &a, x, p);
    t_run_for(100);
    /* The release wakes the waiter; the listing it sends is answered
     * into the void and the connection drops. */
    conns = fp_accepted(fp);
    fp_lose_next_reply(fp, 150);
    ASSERT_RC(zkl_lock_release(hold.lk), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 10000));
    ASSERT(fp_accepted(fp) > conns);
    ASSERT_EQ(t_zk_count(p), 1);
    ASSERT_EQ(a.n, 1);
    zkl_lock_free(a.lk);
    zkl_lock_free(hold.lk);
    ASSERT(WAIT_FOR(zkl_client_pending(x) == 0, 5000));
    ASSERT_EQ(t_zk_count(p), 0);
    zkl_client_free(x);
    zkl_client_free(h);
    fp_free(fp);
}

TEST(cancel_while_disconnected)
{
    fp_t *fp = proxy();
    t_conn_t xc;
    zkl_client_t *x = t_client(fp_hosts(fp), 6000, &xc);
    zkl_client_t *h = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    t_lock_t a, hold;

    t_hold_and_queue(&hold, h, &a, x, p);
    fp_refuse(fp, 1);
    fp_cut(fp);
    ASSERT(WAIT_FOR(!xc.connected, 5000));
    /* Answered at once, though the node cannot be deleted yet. */
    ASSERT_RC(zkl_lock_cancel(a.lk), ZKL_OK);
    ASSERT(t_run_until(&a.failed, 1000));
    ASSERT_RC(a.last_status, ZKL_ECANCELED);
    ASSERT_EQ(zkl_client_pending(x), 1);
    ASSERT_EQ(t_zk_count(p), 2);
    /* An acquire on a disconnected client waits for the connection. */
    ASSERT_RC(zkl_lock_acquire(a.lk, 200), ZKL_OK);
    ASSERT(WAIT_FOR(a.failed == 2, 2000));
    ASSERT_RC(a.last_status, ZKL_ETIMEDOUT);
    fp_refuse(fp, 0);
    ASSERT(WAIT_FOR(zkl_client_pending(x) == 0, 10000));
    ASSERT_EQ(t_zk_count(p), 1); /* only the holder's */
    zkl_lock_free(a.lk);
    zkl_lock_free(hold.lk);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    zkl_client_free(x);
    zkl_client_free(h);
    fp_free(fp);
}

TEST(release_while_disconnected)
{
    fp_t *fp = proxy();
    t_conn_t xc;
    zkl_client_t *x = t_client(fp_hosts(fp), 6000, &xc);
    const char *p = t_path(NULL);
    t_lock_t a;

    t_lock_init(&a, x, p);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    fp_refuse(fp, 1);
    fp_cut(fp);
    ASSERT(t_run_until(&a.suspended, 5000));
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(!zkl_lock_is_held(a.lk));
    t_run_for(300);
    ASSERT_EQ(a.released, 0); /* not known done yet */
    ASSERT_EQ(t_zk_count(p), 1);
    fp_refuse(fp, 0);
    ASSERT(t_run_until(&a.released, 10000));
    ASSERT_RC(a.last_status, ZKL_OK);
    ASSERT_EQ(t_zk_count(p), 0);
    ASSERT_EQ(a.restored, 0); /* released, so nothing to restore */

    /* Same, but the session dies meanwhile: released by expiry. */
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(a.acquired == 2, 5000));
    fp_stall(fp, 1);
    ASSERT(WAIT_FOR(a.suspended == 2, 6000));
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(p, 0, 15000), 0); /* server expired it */
    fp_stall(fp, 0);
    ASSERT(WAIT_FOR(a.released == 2, 10000));
    ASSERT_RC(a.last_status, ZKL_ESESSION);
    ASSERT_EQ(a.lost, 0);

    /* The server stays out of reach: the release is answered by the
     * presumed expiry (9/10 of 6 s after the last answer), not never;
     * the node goes with the session all the same. */
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(a.acquired == 3, 10000));
    fp_refuse(fp, 1);
    fp_cut(fp);
    ASSERT(WAIT_FOR(a.suspended == 3, 6000));
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(WAIT_FOR(a.released == 3, 8000));
    ASSERT_RC(a.last_status, ZKL_ESESSION);
    ASSERT_EQ(a.lost, 0);
    ASSERT_EQ(zkl_lock_state(a.lk), ZKL_STATE_IDLE);
    fp_refuse(fp, 0);
    ASSERT(WAIT_FOR(zkl_client_pending(x) == 0, 15000));
    ASSERT_EQ(t_zk_wait_count(p, 0, 15000), 0);
    zkl_lock_free(a.lk);
    zkl_client_free(x);
    fp_free(fp);
}

TEST(trylock_while_disconnected)
{
    fp_t *fp = proxy();
    t_conn_t xc;
    zkl_client_t *x = t_client(fp_hosts(fp), 3000, &xc);
    const char *p = t_path(NULL);
    t_lock_t a;
    uint64_t t0;

    t_lock_init(&a, x, p);
    fp_refuse(fp, 1);
    fp_cut(fp);
    ASSERT(WAIT_FOR(!xc.connected, 5000));
    t0 = t_now_ms();
    ASSERT_RC(zkl_lock_acquire(a.lk, 0), ZKL_OK);
    ASSERT(t_run_until(&a.failed, 10000));
    ASSERT_RC(a.last_status, ZKL_ECONNLOSS);
    ASSERT(a.at_ms - t0 <= 3000 + 500); /* bounded by the session */
    fp_refuse(fp, 0);
    ASSERT(WAIT_FOR(xc.connected, 10000));
    /* A try-lock whose listing is lost fails at once, node cleaned. */
    fp_lose_next_reply(fp, 150);
    ASSERT_RC(zkl_lock_acquire(a.lk, 0), ZKL_OK);
    ASSERT(WAIT_FOR(a.failed == 2, 5000));
    ASSERT_RC(a.last_status, ZKL_ECONNLOSS);
    ASSERT(WAIT_FOR(zkl_client_pending(x) == 0, 10000));
    ASSERT_EQ(t_zk_count(p), 0);
    zkl_lock_free(a.lk);
    zkl_client_free(x);
    fp_free(fp);
}
