/* Argument checking and error texts: every public function, bad input. */
#include "harness.h"

TEST(version)
{
    ASSERT_EQ(zkl_version(), ZKL_VERSION_NUM);
    ASSERT_STR(zkl_version_string(), ZKL_VERSION_STRING);
    ASSERT(ZKL_VERSION_NUM > 0);
}

TEST(strerror_all_codes)
{
    int codes[] = {
#define X(name, val, text) ZKL_##name,
        ZKL_ERRNO_MAP(X)
#undef X
    };
    size_t i, j;

    ASSERT_STR(zkl_strerror(0), "success");
    ASSERT_STR(zkl_err_name(0), "ZKL_OK");
    for (i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        ASSERT(strcmp(zkl_strerror(codes[i]), "unknown zklock error code"));
        ASSERT(strncmp(zkl_err_name(codes[i]), "ZKL_E", 5) == 0);
        ASSERT(codes[i] < -1000 && codes[i] > -1100);
        for (j = 0; j < i; j++)
            ASSERT(codes[i] != codes[j]);
    }
    ASSERT_STR(zkl_strerror(12345), "unknown zklock error code");
    ASSERT_STR(zkl_err_name(-1), "ZKL_UNKNOWN");
}

/* Each event and state has its own name, spelled as in zklock.h, and a
 * value that is none gets a fixed text (never NULL), for logs that
 * print whatever they were handed. */
TEST(event_and_state_names)
{
#define NAMED(fn, sym) ASSERT_STR(fn(sym), #sym)
    NAMED(zkl_lock_event_name, ZKL_LOCK_ACQUIRED);
    NAMED(zkl_lock_event_name, ZKL_LOCK_FAILED);
    NAMED(zkl_lock_event_name, ZKL_LOCK_SUSPENDED);
    NAMED(zkl_lock_event_name, ZKL_LOCK_RESTORED);
    NAMED(zkl_lock_event_name, ZKL_LOCK_LOST);
    NAMED(zkl_lock_event_name, ZKL_LOCK_RELEASED);
    NAMED(zkl_lock_event_name, ZKL_LOCK_REVOKE_REQUESTED);
    NAMED(zkl_lock_event_name, ZKL_LOCK_QUEUED);
    NAMED(zkl_conn_event_name, ZKL_CONN_CONNECTED);
    NAMED(zkl_conn_event_name, ZKL_CONN_SUSPENDED);
    NAMED(zkl_conn_event_name, ZKL_CONN_RECONNECTED);
    NAMED(zkl_conn_event_name, ZKL_CONN_EXPIRED);
    NAMED(zkl_conn_event_name, ZKL_CONN_AUTH_FAILED);
    NAMED(zkl_lock_state_name, ZKL_STATE_IDLE);
    NAMED(zkl_lock_state_name, ZKL_STATE_ACQUIRING);
    NAMED(zkl_lock_state_name, ZKL_STATE_QUEUED);
    NAMED(zkl_lock_state_name, ZKL_STATE_HELD);
    NAMED(zkl_lock_state_name, ZKL_STATE_RELEASING);
#undef NAMED
    ASSERT_STR(zkl_lock_event_name((zkl_lock_event_t)0), "ZKL_LOCK_?");
    ASSERT_STR(zkl_lock_event_name((zkl_lock_event_t)9), "ZKL_LOCK_?");
    ASSERT_STR(zkl_lock_event_name((zkl_lock_event_t)-1), "ZKL_LOCK_?");
    ASSERT_STR(zkl_conn_event_name((zkl_conn_event_t)0), "ZKL_CONN_?");
    ASSERT_STR(zkl_conn_event_name((zkl_conn_event_t)6), "ZKL_CONN_?");
    ASSERT_STR(zkl_lock_state_name((zkl_lock_state_t)5), "ZKL_STATE_?");
    ASSERT_STR(zkl_lock_state_name((zkl_lock_state_t)-1), "ZKL_STATE_?");
    /* What a handle reports, named. */
    ASSERT_STR(zkl_lock_state_name(zkl_lock_state(NULL)), "ZKL_STATE_IDLE");
}

TEST(path_validation)
{
    static const char *bad[] = {
        "", "relative", "a/b", "/", "/a/", "//", "/a//b", "/a/./b",
        "/a/../b", "/.", "/..", "/a/.", "/zookeeper", "/zookeeper/x",
        "/a\001b", "/a\x7f", "/\xc2\x80", "/\xff", "/\xc0\xaf",
        "/\xed\xa0\x80", "/\xef\xbf\xbf", "/a\nb",
    };
    static const char *good[] = {
        "/a", "/a/b", "/locks/order-123", "/zookeeperish", "/a/.b",
        "/a/..b", "/\xc3\xa9t\xc3\xa9", "/a b", "/_c_x-lock-1",
    };
    char longp[ZKL_PATH_MAX + 2];
    size_t i;

    ASSERT_RC(zkl_path_validate(NULL), ZKL_EINVAL);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (zkl_path_validate(bad[i]) != ZKL_EBADPATH)
            FAILF("path \"%s\" accepted", bad[i]);
    for (i = 0; i < sizeof good / sizeof good[0]; i++)
        if (zkl_path_validate(good[i]) != ZKL_OK)
            FAILF("path \"%s\" refused", good[i]);
    memset(longp, 'a', sizeof longp);
    longp[0] = '/';
    longp[ZKL_PATH_MAX] = '\0';
    ASSERT_RC(zkl_path_validate(longp), ZKL_OK);
    longp[ZKL_PATH_MAX] = 'a';
    longp[ZKL_PATH_MAX + 1] = '\0';
    ASSERT_RC(zkl_path_validate(longp), ZKL_EBADPATH);
}

/* Each rule, with the verdict zkl_path_validate() gives and the words
 * and numbers of the reason. */
TEST(path_explain)
{
    static const struct {
        const char *path, *why;
    } cases[] = {
        {"", "empty"},
        {"relative", "not absolute (it must begin with '/')"},
        {"/", "the root, \"/\", which holds no lock"},
        {"/a/", "ends with '/'"},
        {"/zookeeper", "under /zookeeper, which the server reserves"},
        {"/zookeeper/quota", "under /zookeeper, which the server reserves"},
        {"/a//b", "component 2 is empty (\"//\" at byte 3)"},
        {"/a/b/../c", "component 3 is \"..\" (no relative components)"},
        {"/.", "component 1 is \".\" (no relative components)"},
        {"/locks/a\007b", "control character U+0007 at byte 9"},
        {"/a\xc2\x85", "control character U+0085 at byte 3"},
        {"/ab\xff", "not UTF-8 at byte 4 (0xff)"},
        {"/\xc0\xaf", "not UTF-8 at byte 2 (0xc0)"},
        {"/\xee\x80\x80", "character U+E000 at byte 2, which ZooKeeper "
                           "refuses (U+D800 to U+F8FF, U+FFF0 to U+FFFF)"},
    };
    char buf[256], small[8], longp[2001];
    size_t i;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = zkl_path_explain(cases[i].path, buf, sizeof buf);

        if (rc != ZKL_EBADPATH || zkl_path_validate(cases[i].path) != rc)
            FAILF("path %zu: %d", i, rc);
        if (strcmp(buf, cases[i].why) != 0)
            FAILF("path %zu: \"%s\", wanted \"%s\"", i, buf, cases[i].why);
    }
    memset(longp, 'a', sizeof longp);
    longp[0] = '/';
    longp[2000] = '\0';
    ASSERT_RC(zkl_path_explain(longp, buf, sizeof buf), ZKL_EBADPATH);
    ASSERT_STR(buf, "2000 bytes, longer than 1024 bytes (ZKL_PATH_MAX)");
    /* Cut to the buffer, always terminated; a valid path says nothing. */
    ASSERT_RC(zkl_path_explain("/a//b", small, sizeof small), ZKL_EBADPATH);
    ASSERT_STR(small, "compone");
    strcpy(buf, "stale");
    ASSERT_RC(zkl_path_explain("/locks/x", buf, sizeof buf), ZKL_OK);
    ASSERT_STR(buf, "");
    ASSERT_RC(zkl_path_explain("/a/", NULL, 0), ZKL_EBADPATH);
    ASSERT_RC(zkl_path_explain(NULL, buf, sizeof buf), ZKL_EINVAL);
    ASSERT_STR(buf, "no path (NULL)");
}

/* Each fault of a server list, by zkl_servers_explain() and as
 * zkl_options_set_servers() refuses it; good lists pass both. */
TEST(servers_explain)
{
    static const struct {
        const char *hosts, *why;
    } bad[] = {
        {"", "the server list is empty"},
        {"localhost", "server 1, \"localhost\", has no port (host:port)"},
        {"10.0.0.1:2181,10.0.0.2",
         "server 2, \"10.0.0.2\", has no port (host:port)"},
        {"localhost:abc",
         "server 1, \"localhost:abc\": port \"abc\" is not a number"},
        {"a:0x50", "server 1, \"a:0x50\": port \"0x50\" is not a number"},
        {"a:2181 ", "server 1, \"a:2181 \": port \"2181 \" is not a number"},
        {"127.0.0.1:99999",
         "server 1, \"127.0.0.1:99999\": port 99999 is outside 1..65535"},
        {"127.0.0.1:0",
         "server 1, \"127.0.0.1:0\": port 0 is outside 1..65535"},
        {"a:1,,b:2", "server 2 of the list is empty (a comma too many?)"},
        {"a:1,", "server 2 of the list is empty (a comma too many?)"},
        {":2181", "server 1, \":2181\", has no host before the port"},
        {"a:", "server 1, \"a:\", has no port after the last ':' (host:port; "
               "an IPv6 address without brackets, ::1:2181)"},
        {"[::1]:2181", "server 1, \"[::1]:2181\": write an IPv6 address "
                       "without brackets (::1:2181; the port is what "
                       "follows the last ':')"},
        {"a b:1", "server 1, \"a b:1\": the host has a blank or a control "
                  "character in it"},
        {"a:1,b:2/app", "\"/app\" is a chroot, not a server "
                        "(zkl_options_set_chroot() takes it)"},
    };
    static const char *good[] = {
        "127.0.0.1:2181", "a:1,b:65535", "zk1.example:2181, zk2:2181",
        "::1:2181", "h:02181",
    };
    char buf[256];
    size_t i;
    zkl_options_t *o;

    ASSERT_RC(zkl_options_new(&o), ZKL_OK);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (zkl_servers_explain(bad[i].hosts, buf, sizeof buf) != ZKL_EINVAL)
            FAILF("list \"%s\" passed", bad[i].hosts);
        if (strcmp(buf, bad[i].why) != 0)
            FAILF("list \"%s\": \"%s\", wanted \"%s\"", bad[i].hosts, buf,
                  bad[i].why);
        if (zkl_options_set_servers(o, bad[i].hosts) != ZKL_EINVAL)
            FAILF("set_servers took \"%s\"", bad[i].hosts);
    }
    for (i = 0; i < sizeof good / sizeof good[0]; i++) {
        strcpy(buf, "stale");
        if (zkl_servers_explain(good[i], buf, sizeof buf) != ZKL_OK ||
            buf[0] != '\0')
            FAILF("list \"%s\" refused: %s", good[i], buf);
        ASSERT_RC(zkl_options_set_servers(o, good[i]), ZKL_OK);
    }
    ASSERT_RC(zkl_servers_explain(NULL, buf, sizeof buf), ZKL_EINVAL);
    ASSERT_STR(buf, "no server list (NULL)");
    ASSERT_RC(zkl_servers_explain("x", NULL, 0), ZKL_EINVAL);
    zkl_options_free(o);
}

static const zkl_loop_ops_t null_ops = {NULL, NULL, NULL};

TEST(bad_args_options_client)
{
    zkl_options_t *o = (zkl_options_t *)1;
    zkl_client_t *c = (zkl_client_t *)1;

    ASSERT_RC(zkl_options_new(NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_options_new(&o), ZKL_OK);
    ASSERT_RC(zkl_options_set_servers(NULL, "127.0.0.1:1"), ZKL_EINVAL);
    ASSERT_RC(zkl_options_set_servers(o, NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_options_set_servers(o, ""), ZKL_EINVAL);
    ASSERT_RC(zkl_options_set_servers(o, "127.0.0.1:1/chroot"), ZKL_EINVAL);
    ASSERT_RC(zkl_options_set_session_timeout(o, 0), ZKL_EINVAL);
    ASSERT_RC(zkl_options_set_session_timeout(o, -5), ZKL_EINVAL);
    ASSERT_RC(zkl_options_set_session_timeout(NULL, 1000), ZKL_EINVAL);
    ASSERT_RC(zkl_options_set_chroot(o, "rel"), ZKL_EBADPATH);
    ASSERT_RC(zkl_options_set_chroot(o, "/a/"), ZKL_EBADPATH);
    ASSERT_RC(zkl_options_set_chroot(NULL, "/a"), ZKL_EINVAL);
    ASSERT_RC(zkl_options_set_chroot(o, NULL), ZKL_OK);
    ASSERT_RC(zkl_options_set_conn_cb(NULL, NULL, NULL), ZKL_EINVAL);
    zkl_options_free(NULL);
    zkl_options_free(o);

    /* A list the ZooKeeper client refuses (no name resolves; .invalid
     * never does, RFC 6761): ZKL_EZK, no client. */
    ASSERT_RC(zkl_options_new(&o), ZKL_OK);
    ASSERT_RC(zkl_options_set_servers(o, "127.0.0.1"), ZKL_EINVAL);
    ASSERT_RC(zkl_options_set_servers(o, "nosuchhost.invalid:2181"), ZKL_OK);
    ASSERT_RC(zkl_client_new(&c, o), ZKL_EZK);
    ASSERT(c == NULL);
    zkl_options_free(o);

    ASSERT_RC(zkl_client_new(NULL, NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_client_new(&c, NULL), ZKL_OK); /* defaults */
    ASSERT_RC(zkl_client_attach(NULL, &null_ops, NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_client_attach(c, NULL, NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_client_attach(c, &null_ops, NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_libevent_attach(NULL, t_base), ZKL_EINVAL);
    ASSERT_RC(zkl_libevent_attach(c, NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_libevent_attach(c, t_base), ZKL_OK);
    ASSERT_RC(zkl_libevent_attach(c, t_base), ZKL_EBUSY);
    ASSERT_EQ(zkl_client_state(NULL), ZKL_CONN_SUSPENDED);
    ASSERT_EQ(zkl_client_session_id(NULL), 0);
    ASSERT_EQ(zkl_client_pending(NULL), 0);
    ASSERT_EQ(zkl_client_session_timeout(NULL), 0);
    zkl_client_on_io(NULL, ZKL_READ);
    zkl_client_on_timer(NULL);
    zkl_client_free(c);
    zkl_client_free(NULL);
}

static void never_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int st, void *a)
{
    (void)lk;
    (void)ev;
    (void)st;
    (void)a;
    FAILF("callback called for an operation that returned an error");
}

static void contenders_never(zkl_client_t *c, int st, const char *const *n,
                             size_t k, void *a)
{
    (void)c;
    (void)st;
    (void)n;
    (void)k;
    (void)a;
    FAILF("contenders callback after an error return");
}

TEST(bad_args_lock)
{
    zkl_client_t *c = t_client(t_hosts(), 4000, NULL);
    zkl_lock_t *lk = (zkl_lock_t *)1;
    const char *p = t_path(NULL);
    uint64_t tok = 7;
    char name[64];

    ASSERT_RC(zkl_lock_new(NULL, c, p, never_cb, NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_lock_new(&lk, NULL, p, never_cb, NULL), ZKL_EINVAL);
    ASSERT(lk == NULL); /* cleared on error */
    ASSERT_RC(zkl_lock_new(&lk, c, NULL, never_cb, NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_lock_new(&lk, c, p, NULL, NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_lock_new(&lk, c, "", never_cb, NULL), ZKL_EBADPATH);
    ASSERT_RC(zkl_lock_new(&lk, c, "rel", never_cb, NULL), ZKL_EBADPATH);
    ASSERT_RC(zkl_lock_new(&lk, c, "/x/", never_cb, NULL), ZKL_EBADPATH);
    ASSERT_RC(zkl_lock_new(&lk, c, "/", never_cb, NULL), ZKL_EBADPATH);
    ASSERT_RC(zkl_lock_new(&lk, c, "/zookeeper/q", never_cb, NULL),
              ZKL_EBADPATH);

    ASSERT_RC(zkl_lock_acquire(NULL, -1), ZKL_EINVAL);
    ASSERT_RC(zkl_lock_cancel(NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_lock_release(NULL), ZKL_EINVAL);
    ASSERT_EQ(zkl_lock_is_held(NULL), 0);
    ASSERT_RC(zkl_lock_token(NULL, &tok), ZKL_EINVAL);
    ASSERT(zkl_lock_path(NULL) == NULL);
    ASSERT_RC(zkl_lock_node_name(NULL, name, sizeof name), ZKL_EINVAL);
    zkl_lock_free(NULL);

    ASSERT_RC(zkl_lock_new(&lk, c, p, never_cb, NULL), ZKL_OK);
    ASSERT_STR(zkl_lock_path(lk), p);
    ASSERT_RC(zkl_lock_token(lk, NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_lock_token(lk, &tok), ZKL_ENOTHELD);
    ASSERT_EQ(tok, 7);
    ASSERT_RC(zkl_lock_node_name(lk, NULL, 64), ZKL_EINVAL);
    ASSERT_RC(zkl_lock_node_name(lk, name, 10), ZKL_EINVAL);
    ASSERT_RC(zkl_lock_node_name(lk, name, sizeof name), ZKL_ENOTPENDING);
    ASSERT_RC(zkl_lock_cancel(lk), ZKL_ENOTPENDING);
    ASSERT_RC(zkl_lock_release(lk), ZKL_ENOTHELD);

    ASSERT_RC(zkl_contenders(NULL, p, contenders_never, NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_contenders(c, NULL, contenders_never, NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_contenders(c, p, NULL, NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_contenders(c, "bad", contenders_never, NULL),
              ZKL_EBADPATH);

    t_run_for(200); /* a stray callback would fire here */
    zkl_lock_free(lk);
    ASSERT_EQ(t_zk_count(p), 0);
    zkl_client_free(c);
}

TEST(release_not_held_double_release)
{
    zkl_client_t *c = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    t_lock_t a;

    t_lock_init(&a, c, p);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_ENOTHELD);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    /* Not held yet: the acquire is still in flight. */
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_ENOTHELD);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_EBUSY);
    ASSERT(t_run_until(&a.acquired, 5000));
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_EHELD);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_ENOTHELD); /* double release */
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_EBUSY); /* release pending */
    ASSERT(t_run_until(&a.released, 5000));
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_ENOTHELD);
    ASSERT_EQ(a.last_status, ZKL_OK);
    t_run_for(100);
    ASSERT_EQ(a.n, 2); /* exactly ACQUIRED, RELEASED */
    ASSERT_EQ(t_zk_count(p), 0);
    zkl_lock_free(a.lk);
    zkl_client_free(c);
}

TEST(cancel_after_completion)
{
    zkl_client_t *c = t_client(t_hosts(), 4000, NULL);
    const char *p = t_path(NULL);
    t_lock_t a, b;

    t_lock_init(&a, c, p);
    t_lock_init(&b, c, p);
    ASSERT_RC(zkl_lock_acquire(a.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&a.acquired, 5000));
    ASSERT_RC(zkl_lock_cancel(a.lk), ZKL_ENOTPENDING); /* held */
    ASSERT_RC(zkl_lock_acquire(b.lk, 0), ZKL_OK);
    ASSERT(t_run_until(&b.failed, 5000));
    ASSERT_RC(b.last_status, ZKL_ELOCKED);
    ASSERT_RC(zkl_lock_cancel(b.lk), ZKL_ENOTPENDING); /* answered */
    ASSERT_RC(zkl_lock_acquire(b.lk, -1), ZKL_OK);
    ASSERT_RC(zkl_lock_cancel(b.lk), ZKL_OK);
    ASSERT_RC(zkl_lock_cancel(b.lk), ZKL_ENOTPENDING); /* twice */
    ASSERT(WAIT_FOR(b.failed == 2, 5000));
    ASSERT_RC(b.last_status, ZKL_ECANCELED);
    ASSERT_RC(zkl_lock_release(a.lk), ZKL_OK);
    ASSERT(t_run_until(&a.released, 5000));
    ASSERT_EQ(t_zk_wait_count(p, 0, 5000), 0);
    t_run_for(100);
    ASSERT_EQ(b.n, 2);
    zkl_lock_free(a.lk);
    zkl_lock_free(b.lk);
    zkl_client_free(c);
}
