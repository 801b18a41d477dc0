/* A session moved, against a real ensemble. A second handle takes over
 * the session of a zklock client through another node (with the
 * session's id and password, which only this test reads out of the
 * client's internals); the leader then refuses the client's own
 * connection. A 3.8 server does not answer ZSESSIONMOVED there: it closes
 * the connection (ZOOKEEPER-710), so this is the real server's side of
 * what the session_moved_* tests make with a rewritten reply code. The
 * acquire must not take it for an expiry nor fail: it reconnects, on the
 * same session, and acquires. */
#include <poll.h>

#include "harness.h"
#include "internal.h"

TEST(ensemble_session_moved)
{
    int leader = t_ens_leader(10000), other = leader % T_ENS_NODES + 1;
    t_conn_t xc;
    zkl_client_t *x = t_client(t_ens_host(leader), 8000, &xc);
    const char *p = t_path(NULL);
    clientid_t id = *zoo_client_id(x->zh);
    zhandle_t *thief;
    int thief_up = 0, suspended;
    t_lock_t a;

    thief = zookeeper_init(t_ens_host(other), t_zk_connected_watcher, 8000, &id,
                           &thief_up, 0);
    ASSERT(thief != NULL);
    t_zk_pump_until(thief, &thief_up, 10000);
    ASSERT(thief_up);
    ASSERT_EQ(zoo_client_id(thief)->client_id, id.client_id);
    /* The thief is never driven again: it keeps the session's ownership
     * on the other node, silently. */
    suspended = t_has_event(&xc, ZKL_CONN_SUSPENDED);
    ASSERT(!suspended);
    t_lock_init(&a, x, p);
    ASSERT_RC(zkl_lock_acquire(a.lk, 20000), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 20000));
    ASSERT_EQ(a.failed, 0);
    /* It got there by reconnecting, on the same session. */
    ASSERT(t_has_event(&xc, ZKL_CONN_SUSPENDED));
    ASSERT(t_has_event(&xc, ZKL_CONN_RECONNECTED));
    ASSERT(!t_has_event(&xc, ZKL_CONN_EXPIRED));
    ASSERT_EQ(zkl_client_session_id(x), id.client_id);
    /* (Waited for: the observer's node may not have applied the change
     * yet; a CI run read a count a step behind.) */
    ASSERT_EQ(t_zk_wait_count(p, 1, 5000), 1);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(t_run_until(&a.released, 10000));
    ASSERT_RC(a.last_status, ZKL_OK);
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    zkl_lock_free(a.lk);
    zkl_client_free(x);
    zookeeper_close(thief); /* the session is closed already */
}
