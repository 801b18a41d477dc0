/* Credentials and ACLs against the real server: a private lock keeps
 * every other identity from deleting or forging its nodes, lets a
 * configured identity take part, and a refused scheme ends the client. */
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include "harness.h"

/* base64(sha1("bob:pw")): ZooKeeper's digest id for bob, as
 * DigestAuthenticationProvider.generateDigest computes it. */
#define BOB_ID "bob:ikIaKsbtGweaHnb/jKn7OHqbunM="

struct acl_conn {
    int connected, auth_failed;
};

static void acl_conn_cb(zkl_client_t *c, zkl_conn_event_t ev, void *arg)
{
    struct acl_conn *s = arg;

    (void)c;
    if (ev == ZKL_CONN_CONNECTED)
        s->connected = 1;
    else if (ev == ZKL_CONN_AUTH_FAILED)
        s->auth_failed = 1;
}

/* A client authenticated as scheme:cred (scheme NULL: no identity),
 * private when extra_id is not NULL ("" for the client alone). */
static zkl_client_t *acl_client(const char *scheme, const char *cred,
                                const char *extra_id, struct acl_conn *s)
{
    zkl_options_t *o;
    zkl_client_t *c;

    memset(s, 0, sizeof *s);
    ASSERT_RC(zkl_options_new(&o), ZKL_OK);
    ASSERT_RC(zkl_options_set_servers(o, t_hosts()), ZKL_OK);
    ASSERT_RC(zkl_options_set_session_timeout(o, 4000), ZKL_OK);
    ASSERT_RC(zkl_options_set_conn_cb(o, acl_conn_cb, s), ZKL_OK);
    if (scheme != NULL)
        ASSERT_RC(zkl_options_add_auth(o, scheme, cred), ZKL_OK);
    if (extra_id != NULL)
        ASSERT_RC(zkl_options_set_acl(o, ZKL_ACL_PRIVATE), ZKL_OK);
    if (extra_id != NULL && extra_id[0] != '\0')
        ASSERT_RC(zkl_options_add_acl_id(o, "digest", extra_id), ZKL_OK);
    ASSERT_RC(zkl_client_new(&c, o), ZKL_OK);
    zkl_options_free(o);
    ASSERT_RC(zkl_libevent_attach(c, t_base), ZKL_OK);
    return c;
}

static const char *acl_path(const char *leaf)
{
    static char buf[4][256];
    static int i;
    char *b = buf[i++ % 4];

    /* Its own root: a private ancestor must not lock other tests out. */
    snprintf(b, 256, "/zkl-acl/%d/%s", (int)getpid(), leaf);
    return b;
}

TEST(acl_options_bad_args)
{
    zkl_options_t *o;
    zkl_client_t *c = NULL;

    ASSERT_RC(zkl_options_add_auth(NULL, "digest", "a:b"), ZKL_EINVAL);
    ASSERT_RC(zkl_options_new(&o), ZKL_OK);
    ASSERT_RC(zkl_options_add_auth(o, NULL, "a:b"), ZKL_EINVAL);
    ASSERT_RC(zkl_options_add_auth(o, "", "a:b"), ZKL_EINVAL);
    ASSERT_RC(zkl_options_add_auth(o, "digest", NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_options_set_acl(NULL, ZKL_ACL_OPEN), ZKL_EINVAL);
    ASSERT_RC(zkl_options_set_acl(o, (zkl_acl_t)7), ZKL_EINVAL);
    ASSERT_RC(zkl_options_add_acl_id(o, "digest", NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_options_add_acl_id(o, "digest", ""), ZKL_EINVAL);
    ASSERT_RC(zkl_options_add_acl_id(o, NULL, "x"), ZKL_EINVAL);
    /* Private with nobody to own the nodes: refused up front. */
    ASSERT_RC(zkl_options_set_acl(o, ZKL_ACL_PRIVATE), ZKL_OK);
    ASSERT_RC(zkl_client_new(&c, o), ZKL_EINVAL);
    ASSERT(c == NULL);
    ASSERT_RC(zkl_options_add_auth(o, "digest", "alice:secret"), ZKL_OK);
    ASSERT_RC(zkl_client_new(&c, o), ZKL_OK);
    zkl_client_free(c);
    zkl_options_free(o);
}

TEST(acl_private_lock_keeps_others_out)
{
    struct acl_conn sa, sm, sb;
    zkl_client_t *alice = acl_client("digest", "alice:secret", BOB_ID, &sa);
    zkl_client_t *mallory = acl_client("digest", "mallory:x", NULL, &sm);
    zkl_client_t *bob = acl_client("digest", "bob:pw", NULL, &sb);
    const char *p = acl_path("lock");
    char node[512], forged[512];
    t_lock_t a, m, b;
    char **names;
    int n;

    ASSERT(t_run_until(&sa.connected, 10000));
    ASSERT(t_run_until(&sm.connected, 10000));
    ASSERT(t_run_until(&sb.connected, 10000));
    t_lock_init(&a, alice, p);
    t_lock_init(&m, mallory, p);
    t_lock_init(&b, bob, p);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    n = t_zk_children(p, &names);
    ASSERT_EQ(n, 1);
    snprintf(node, sizeof node, "%s/%s", p, names[0]);
    t_zk_free_names(names, n);

    /* Nobody else may delete the holder's node or forge a place. */
    ASSERT_EQ(t_zk_delete_as(NULL, node), ZNOAUTH);
    ASSERT_EQ(t_zk_delete_as("mallory:x", node), ZNOAUTH);
    snprintf(forged, sizeof forged,
             "%s/_c_00000000-0000-0000-0000-000000000000-lock-", p);
    ASSERT_EQ(t_zk_create_as("mallory:x", forged, ZOO_EPHEMERAL_SEQUENTIAL),
              ZNOAUTH);
    ASSERT_EQ(t_zk_create_as(NULL, forged, ZOO_EPHEMERAL_SEQUENTIAL),
              ZNOAUTH);
    /* Nor delete the lock path (once empty) to remake it open. */
    ASSERT_EQ(t_zk_delete_as("mallory:x", p), ZNOAUTH);

    /* Mallory through zklock: refused with a clear code, no node. */
    ASSERT_RC(zkl_lock_acquire(m.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&m.failed, 5000));
    ASSERT_RC(m.last_status, ZKL_EAUTH);
    ASSERT_EQ(t_zk_count(p), 1);
    ASSERT(zkl_lock_is_held(a.lk));

    /* Bob is in alice's set: he queues, and gets the lock after her. */
    ASSERT_RC(zkl_lock_acquire(b.lk, -1), ZKL_OK);
    ASSERT(WAIT_FOR(zkl_lock_state(b.lk) == ZKL_STATE_QUEUED, 5000));
    ASSERT_EQ(b.acquired, 0);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(t_run_until(&b.acquired, 5000));
    ASSERT(t_run_until(&a.released, 5000));
    ASSERT_RC(a.last_status, ZKL_OK);
    ASSERT_RC(zkl_lock_release(b.lk), ZKL_OK);
    ASSERT(t_run_until(&b.released, 5000));
    ASSERT_RC(b.last_status, ZKL_OK);
    ASSERT_EQ(t_zk_count(p), 0);
    zkl_lock_free(a.lk);
    zkl_lock_free(m.lk);
    zkl_lock_free(b.lk);
    zkl_client_free(alice);
    zkl_client_free(mallory);
    zkl_client_free(bob);
}

TEST(acl_open_is_default)
{
    /* An authenticated client without the private mode leaves its nodes
     * deletable by anyone, as Curator does: the documented default. */
    struct acl_conn s;
    zkl_client_t *c = acl_client("digest", "carol:x", NULL, &s);
    const char *p = t_path(NULL);
    char node[512], **names;
    t_lock_t l;
    int n;

    ASSERT(t_run_until(&s.connected, 10000));
    t_lock_init(&l, c, p);
    ASSERT_RC(zkl_lock_acquire(l.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&l.acquired, 5000));
    n = t_zk_children(p, &names);
    ASSERT_EQ(n, 1);
    snprintf(node, sizeof node, "%s/%s", p, names[0]);
    t_zk_free_names(names, n);
    ASSERT_EQ(t_zk_delete_as("mallory:x", node), ZOK);
    ASSERT(t_run_until(&l.lost, 5000)); /* and the holder is told */
    ASSERT_RC(l.last_status, ZKL_ENODEGONE);
    zkl_lock_free(l.lk);
    zkl_client_free(c);
}

TEST(acl_other_identity_cannot_create_path)
{
    /* A lock path below a private ancestor: another identity's acquire
     * fails with ZKL_EAUTH at once, instead of retrying the ancestors. */
    struct acl_conn sa, sm;
    zkl_client_t *alice = acl_client("digest", "alice:secret", "", &sa);
    zkl_client_t *mallory = acl_client("digest", "mallory:x", NULL, &sm);
    t_lock_t a, m;

    ASSERT(t_run_until(&sa.connected, 10000));
    ASSERT(t_run_until(&sm.connected, 10000));
    t_lock_init(&a, alice, acl_path("mine"));
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    t_lock_init(&m, mallory, acl_path("other"));
    ASSERT_RC(zkl_lock_acquire(m.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&m.failed, 5000));
    ASSERT_RC(m.last_status, ZKL_EAUTH);
    ASSERT_EQ(t_zk_count(acl_path("other")), 0);
    ASSERT_EQ(zkl_client_pending(mallory), 0);
    zkl_lock_free(a.lk);
    zkl_lock_free(m.lk);
    zkl_client_free(alice);
    zkl_client_free(mallory);
}

TEST(acl_auth_failed)
{
    /* A scheme the server does not know: the session is refused, the
     * client says so, and an acquire fails with ZKL_EAUTH. */
    struct acl_conn s;
    zkl_client_t *c = acl_client("nosuchscheme", "x", NULL, &s);
    t_lock_t l;

    ASSERT(t_run_until(&s.auth_failed, 10000));
    ASSERT_EQ(zkl_client_state(c), ZKL_CONN_AUTH_FAILED);
    t_lock_init(&l, c, acl_path("refused"));
    if (zkl_lock_acquire(l.lk, -1) == ZKL_OK) {
        ASSERT(t_run_until(&l.failed, 5000));
        ASSERT_RC(l.last_status, ZKL_EAUTH);
    }
    ASSERT_EQ(t_zk_count(acl_path("refused")), 0);
    zkl_lock_free(l.lk);
    zkl_client_free(c);
}
