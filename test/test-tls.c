/* Secured servers' failures, each with its own code within its deadline
 * (run-tests --tls, from test/test-tls.sh, which starts the servers):
 * a wrong CA, an expired server certificate, a client certificate the
 * server does not trust, a wrong SASL password; a TLS client at a plain
 * port and a plain client at a TLS port, which no client can tell from
 * a server at its limit, end by their deadline with a hint in the log; and what must work: an encrypted
 * key with its passphrase, a SASL password from a callback. The suite's
 * own tests (mutex, read/write, semaphore, multi-lock, latch, expiry,
 * failover) run over TLS and SASL too: test-tls.sh runs them with
 * t_secure()'s settings. Environment:
 *   ZKL_TEST_CERTS            test/tls-certs.sh's directory
 *   ZKL_TEST_TLS_HOSTS        a TLS-only server
 *   ZKL_TEST_TLS_EXPIRED_HOSTS  one whose certificate expired
 *   ZKL_TEST_PLAIN_HOSTS      a plain server
 *   ZKL_TEST_SASL_HOSTS       one that requires SASL DIGEST-MD5 from
 *   ZKL_TEST_SASL_NAME, ZKL_TEST_SASL_SECRET */
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static const char *env(const char *name)
{
    const char *v = getenv(name);

    if (v == NULL || v[0] == '\0')
        FAILF("%s is not set (test/test-tls.sh sets it)", name);
    return v;
}

static const char *cert(const char *file)
{
    static char buf[4][512];
    static int k;
    char *b = buf[k++ % 4];

    snprintf(b, sizeof buf[0], "%s/%s", env("ZKL_TEST_CERTS"), file);
    return b;
}

static zkl_options_t *opts(const char *hosts, t_conn_t *conn)
{
    zkl_options_t *o;

    memset(conn, 0, sizeof *conn);
    ASSERT_RC(zkl_options_new(&o), ZKL_OK);
    ASSERT_RC(zkl_options_set_servers(o, hosts), ZKL_OK);
    ASSERT_RC(zkl_options_set_session_timeout(o, 4000), ZKL_OK);
    ASSERT_RC(zkl_options_set_conn_cb(o, t_conn_cb, conn), ZKL_OK);
    return o;
}

static zkl_client_t *start(zkl_options_t *o)
{
    zkl_client_t *c;

    ASSERT_RC(zkl_client_new(&c, o), ZKL_OK);
    zkl_options_free(o);
    ASSERT_RC(zkl_libevent_attach(c, t_base), ZKL_OK);
    return c;
}

/* A client that must end within ms: its acquire (no deadline of its
 * own) fails, the client says ZKL_CONN_AUTH_FAILED, and a new acquire
 * is refused at once with the same code, which is returned. */
static int ends_with(zkl_options_t *o, t_conn_t *conn, long ms)
{
    zkl_client_t *c = start(o);
    t_lock_t t;
    int status;

    t_lock_init(&t, c, t_path(NULL));
    ASSERT_RC(zkl_lock_acquire(t.lk, -1), ZKL_OK);
    ASSERT(t_run_until(&t.failed, ms));
    status = t.last_status;
    ASSERT(t_has_event(conn, ZKL_CONN_AUTH_FAILED));
    ASSERT(!t_has_event(conn, ZKL_CONN_CONNECTED));
    ASSERT_EQ(zkl_client_state(c), ZKL_CONN_AUTH_FAILED);
    ASSERT_EQ(zkl_lock_acquire(t.lk, 1000), status);
    zkl_lock_free(t.lk);
    zkl_client_free(c);
    return status;
}

/* A client that must work: a lock taken and given back. */
static void works(zkl_options_t *o, t_conn_t *conn)
{
    zkl_client_t *c = start(o);
    t_lock_t t;

    ASSERT(t_run_until(&conn->connected, t_connect_ms()));
    t_lock_init(&t, c, t_path(NULL));
    ASSERT_RC(zkl_lock_acquire(t.lk, 10000), ZKL_OK);
    ASSERT(t_run_until(&t.acquired, 10000));
    ASSERT_RC(zkl_lock_release(t.lk), ZKL_OK);
    ASSERT(t_run_until(&t.released, 10000));
    zkl_lock_free(t.lk);
    zkl_client_free(c);
}

TEST(tls_wrong_ca_fails_etls)
{
    t_conn_t conn;
    zkl_options_t *o = opts(env("ZKL_TEST_TLS_HOSTS"), &conn);

    ASSERT_RC(zkl_options_set_tls(o, cert("other-ca.pem"),
                                  cert("client.cert.pem"),
                                  cert("client.key.pem"), NULL),
              ZKL_OK);
    ASSERT_RC(ends_with(o, &conn, 20000), ZKL_ETLS);
}

TEST(tls_expired_server_certificate_fails_etls)
{
    t_conn_t conn;
    zkl_options_t *o = opts(env("ZKL_TEST_TLS_EXPIRED_HOSTS"), &conn);

    ASSERT_RC(zkl_options_set_tls(o, cert("ca.pem"), cert("client.cert.pem"),
                                  cert("client.key.pem"), NULL),
              ZKL_OK);
    ASSERT_RC(ends_with(o, &conn, 20000), ZKL_ETLS);
}

TEST(tls_untrusted_client_certificate_fails_etls)
{
    t_conn_t conn;
    zkl_options_t *o = opts(env("ZKL_TEST_TLS_HOSTS"), &conn);

    ASSERT_RC(zkl_options_set_tls(o, cert("ca.pem"),
                                  cert("other-client.cert.pem"),
                                  cert("other-client.key.pem"), NULL),
              ZKL_OK);
    ASSERT_RC(ends_with(o, &conn, 20000), ZKL_ETLS);
}

static int hint_seen;
static const char *hint_text;

static void hint_log(zkl_log_level_t level, const char *msg, void *arg)
{
    (void)level;
    (void)arg;
    if (strstr(msg, hint_text) != NULL)
        hint_seen = 1;
}

/* A client no server answers: its acquire ends by its own deadline,
 * never connected, and the log says what the servers may be (text). */
static void times_out_with_hint(zkl_options_t *o, t_conn_t *conn,
                                const char *text)
{
    zkl_client_t *c;
    t_lock_t t;

    hint_text = text;
    zkl_set_log(hint_log, NULL, ZKL_LOG_WARN);
    c = start(o);
    t_lock_init(&t, c, t_path(NULL));
    ASSERT_RC(zkl_lock_acquire(t.lk, 4000), ZKL_OK);
    ASSERT(t_run_until(&t.failed, 8000));
    ASSERT_EQ(t.last_status, ZKL_ETIMEDOUT);
    ASSERT(!t_has_event(conn, ZKL_CONN_CONNECTED));
    ASSERT(hint_seen);
    zkl_set_log(NULL, NULL, ZKL_LOG_ERROR);
    zkl_lock_free(t.lk);
    zkl_client_free(c);
}

/* A plain port closes on the ClientHello as a TLS server at its
 * connection limit does: no definite failure. */
TEST(tls_client_at_a_plain_port_times_out_with_a_hint)
{
    t_conn_t conn;
    zkl_options_t *o = opts(env("ZKL_TEST_PLAIN_HOSTS"), &conn);

    ASSERT_RC(zkl_options_set_tls(o, cert("ca.pem"), cert("client.cert.pem"),
                                  cert("client.key.pem"), NULL),
              ZKL_OK);
    times_out_with_hint(o, &conn, "a plain (not TLS) port");
}

/* Nothing tells a TLS port from a server without quorum. */
TEST(plain_client_at_a_tls_port_times_out_with_a_hint)
{
    t_conn_t conn;
    zkl_options_t *o = opts(env("ZKL_TEST_TLS_HOSTS"), &conn);

    times_out_with_hint(o, &conn, "TLS-only port");
}

TEST(tls_encrypted_key_with_its_passphrase)
{
    t_conn_t conn;
    zkl_options_t *o = opts(env("ZKL_TEST_TLS_HOSTS"), &conn);

    ASSERT_RC(zkl_options_set_tls(o, cert("ca.pem"), cert("client.cert.pem"),
                                  cert("client-enc.key.pem"),
                                  "zkl-client-pw"),
              ZKL_OK);
    works(o, &conn);
}

TEST(sasl_wrong_password_fails_eauth)
{
    t_conn_t conn;
    zkl_options_t *o = opts(env("ZKL_TEST_SASL_HOSTS"), &conn);

    ASSERT_RC(zkl_options_set_sasl(o, NULL, env("ZKL_TEST_SASL_NAME"),
                                   "not-the-password", NULL, NULL),
              ZKL_OK);
    ASSERT_RC(ends_with(o, &conn, 20000), ZKL_EAUTH);
}

struct pw {
    const char *text;
    int calls;
};

static int give_password(char *buf, size_t size, void *arg)
{
    struct pw *p = arg;

    p->calls++;
    if (p->text == NULL)
        return -1;
    snprintf(buf, size, "%s", p->text);
    return 0;
}

TEST(sasl_password_from_a_callback)
{
    struct pw good = {NULL, 0}, none = {NULL, 0};
    t_conn_t conn;
    zkl_options_t *o = opts(env("ZKL_TEST_SASL_HOSTS"), &conn);

    good.text = env("ZKL_TEST_SASL_SECRET");
    ASSERT_RC(zkl_options_set_sasl(o, "DIGEST-MD5", env("ZKL_TEST_SASL_NAME"),
                                   NULL, NULL, NULL),
              ZKL_OK);
    ASSERT_RC(zkl_options_set_sasl_password_cb(o, give_password, &good),
              ZKL_OK);
    works(o, &conn);
    ASSERT(good.calls >= 1);
    /* A callback that refuses: refused identity. */
    o = opts(env("ZKL_TEST_SASL_HOSTS"), &conn);
    ASSERT_RC(zkl_options_set_sasl(o, NULL, env("ZKL_TEST_SASL_NAME"), NULL,
                                   NULL, NULL),
              ZKL_OK);
    ASSERT_RC(zkl_options_set_sasl_password_cb(o, give_password, &none),
              ZKL_OK);
    ASSERT_RC(ends_with(o, &conn, 20000), ZKL_EAUTH);
    ASSERT(none.calls >= 1);
}
