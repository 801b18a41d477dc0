/* Secure sessions: TLS and SASL. Owns the options' and the client's
 * secure settings (zkl__secure_t: the TLS file names in the C client's
 * one-string form, the SASL identity, its password and the callbacks
 * the C client calls, which it keeps pointers to for the handle's life),
 * and opens a session's ZooKeeper handle with them. Built against a
 * ZooKeeper C client without OpenSSL or Cyrus SASL (Debian's stock one),
 * the setters answer ZKL_ENOTSUP and every session is a plain one. */
#ifdef HAVE_CONFIG_H /* the fuzz build compiles this file without it */
#include "config.h"
#endif

#ifdef ZKL_HAVE_ZK_TLS
#define HAVE_OPENSSL_H 1 /* zookeeper.h declares zookeeper_init_ssl() */
#endif
#ifdef ZKL_HAVE_ZK_SASL
#define HAVE_CYRUS_SASL_H 1 /* ... and zookeeper_init_sasl() */
#include <sasl/sasl.h>
#endif

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#ifdef ZKL_HAVE_ZK_TLS
/* zookeeper_log.h's, which wants the C client's include directory. */
extern ZOOAPI ZooLogLevel logLevel;
#endif

/* Longest SASL password, NUL included (the C client's own file reader
 * takes 1023 bytes). */
#define ZKL__SECRET_MAX 1024

struct zkl__secure {
    char *tls;                /* "ca,cert,key,password"; NULL: no TLS */
    char *mech, *user, *service, *host;
    char *password;           /* wiped before it is freed */
    zkl_sasl_password_cb pw_cb;
    void *pw_arg;
    int sasl;                 /* zkl_options_set_sasl() was called */
#ifdef ZKL_HAVE_ZK_SASL
    /* The client's copy only: what the C client calls back into. */
    sasl_callback_t cbs[5];
    sasl_secret_t *secret;    /* the password handed out; its data has
                                 ZKL__SECRET_MAX bytes */
    zoo_sasl_params_t params;
#endif
};

unsigned zkl_features(void)
{
    unsigned f = 0;
#ifdef ZKL_HAVE_ZK_TLS
    f |= ZKL_FEATURE_TLS;
#endif
#ifdef ZKL_HAVE_ZK_SASL
    f |= ZKL_FEATURE_SASL;
#endif
    return f;
}

static void wipe_free(char *s)
{
    if (s != NULL) {
        /* A plain memset before free may be optimized away. */
        volatile char *v = s;
        while (*v != '\0')
            *v++ = '\0';
        zkl__free(s);
    }
}

void zkl__secure_free(zkl__secure_t *s)
{
    if (s == NULL)
        return;
    wipe_free(s->tls); /* it may carry the key's passphrase */
    zkl__free(s->mech);
    zkl__free(s->user);
    zkl__free(s->service);
    zkl__free(s->host);
    wipe_free(s->password);
#ifdef ZKL_HAVE_ZK_SASL
    if (s->secret != NULL) {
        explicit_bzero(s->secret->data, ZKL__SECRET_MAX);
        zkl__free(s->secret);
    }
#endif
    zkl__free(s);
}

static zkl__secure_t *secure_of(zkl_options_t *o)
{
    if (o->secure == NULL)
        o->secure = zkl__calloc(1, sizeof *o->secure);
    return o->secure;
}

/* (see zkl_options_set_tls: no ',' in it) */
#define ZKL__NO_PASSPHRASE "zklock: this key has no passphrase"

/* A file name the C client's "ca,cert,key,password" string can carry:
 * it splits at every ',' and skips empty fields. */
static int tls_field_ok(const char *s)
{
    return s != NULL && s[0] != '\0' && strchr(s, ',') == NULL;
}

int zkl_options_set_tls(zkl_options_t *o, const char *ca_file,
                        const char *cert_file, const char *key_file,
                        const char *key_password)
{
    zkl__secure_t *s;
    size_t n;
    char *t;

    if (o == NULL || !tls_field_ok(ca_file) || !tls_field_ok(cert_file) ||
        !tls_field_ok(key_file) ||
        (key_password != NULL && key_password[0] != '\0' &&
         !tls_field_ok(key_password)) ||
        (o->secure != NULL && o->secure->sasl))
        return ZKL_EINVAL;
    if (!(zkl_features() & ZKL_FEATURE_TLS))
        return ZKL_ENOTSUP;
    if ((s = secure_of(o)) == NULL)
        return ZKL_ENOMEM;
    /* Without a passphrase the C client would leave OpenSSL's default
     * one in place, which asks for it on the terminal, blocking the
     * loop (forever, in a foreground program with a tty). A passphrase
     * no key has stands in: a key that needs one fails to load instead,
     * a definite TLS failure that the log names. */
    if (key_password == NULL || key_password[0] == '\0')
        key_password = ZKL__NO_PASSPHRASE;
    n = strlen(ca_file) + strlen(cert_file) + strlen(key_file) + 4 +
        strlen(key_password);
    if ((t = zkl__malloc(n)) == NULL)
        return ZKL_ENOMEM;
    strcpy(t, ca_file);
    strcat(t, ",");
    strcat(t, cert_file);
    strcat(t, ",");
    strcat(t, key_file);
    strcat(t, ",");
    strcat(t, key_password);
    wipe_free(s->tls);
    s->tls = t;
    return ZKL_OK;
}

int zkl_options_set_sasl(zkl_options_t *o, const char *mechanism,
                         const char *user, const char *password,
                         const char *service, const char *host)
{
    zkl__secure_t *s;
    char *pw = NULL;

    if (o == NULL || user == NULL || user[0] == '\0' ||
        (o->secure != NULL && o->secure->tls != NULL))
        return ZKL_EINVAL;
    if (!(zkl_features() & ZKL_FEATURE_SASL))
        return ZKL_ENOTSUP;
    if ((s = secure_of(o)) == NULL)
        return ZKL_ENOMEM;
    if (password != NULL && (pw = zkl__strdup(password)) == NULL)
        return ZKL_ENOMEM;
    if (zkl__strset(&s->mech, mechanism) != ZKL_OK ||
        zkl__strset(&s->user, user) != ZKL_OK ||
        zkl__strset(&s->service, service) != ZKL_OK ||
        zkl__strset(&s->host, host) != ZKL_OK) {
        wipe_free(pw);
        return ZKL_ENOMEM;
    }
    wipe_free(s->password);
    s->password = pw;
    s->sasl = 1;
    return ZKL_OK;
}

int zkl_options_set_sasl_password_cb(zkl_options_t *o,
                                     zkl_sasl_password_cb cb, void *arg)
{
    zkl__secure_t *s;

    if (o == NULL)
        return ZKL_EINVAL;
    if (!(zkl_features() & ZKL_FEATURE_SASL))
        return ZKL_ENOTSUP;
    if ((s = secure_of(o)) == NULL)
        return ZKL_ENOMEM;
    s->pw_cb = cb;
    s->pw_arg = arg;
    return ZKL_OK;
}

/* The client's SASL secret, set aside once: cb_pass never allocates. */
static int set_aside_secret(zkl__secure_t *s)
{
#ifdef ZKL_HAVE_ZK_SASL
    if (s->sasl &&
        (s->secret = zkl__calloc(1, sizeof *s->secret + ZKL__SECRET_MAX)) ==
            NULL)
        return 0;
#else
    (void)s;
#endif
    return 1;
}

int zkl__secure_copy(zkl__secure_t **dst, const zkl__secure_t *src)
{
    zkl__secure_t *s;

    *dst = NULL;
    if (src == NULL || (src->tls == NULL && !src->sasl))
        return ZKL_OK;
    if ((s = zkl__calloc(1, sizeof *s)) == NULL)
        return ZKL_ENOMEM;
    s->pw_cb = src->pw_cb;
    s->pw_arg = src->pw_arg;
    s->sasl = src->sasl;
    if (zkl__strset(&s->tls, src->tls) != ZKL_OK ||
        zkl__strset(&s->mech, src->mech) != ZKL_OK ||
        zkl__strset(&s->user, src->user) != ZKL_OK ||
        zkl__strset(&s->service, src->service) != ZKL_OK ||
        zkl__strset(&s->host, src->host) != ZKL_OK ||
        zkl__strset(&s->password, src->password) != ZKL_OK ||
        !set_aside_secret(s)) {
        zkl__secure_free(s);
        return ZKL_ENOMEM;
    }
    *dst = s;
    return ZKL_OK;
}

int zkl__secure_is_tls(const zkl__secure_t *s)
{
    return s != NULL && s->tls != NULL;
}

#ifdef ZKL_HAVE_ZK_SASL
/* The callbacks the C client's SASL exchange asks, with the client's
 * zkl__secure_t as context. */
static int cb_user(void *ctx, int id, const char **result, unsigned *len)
{
    zkl__secure_t *s = ctx;

    if (id != SASL_CB_USER && id != SASL_CB_AUTHNAME)
        return SASL_BADPARAM;
    *result = s->user;
    if (len != NULL)
        *len = (unsigned)strlen(s->user);
    return SASL_OK;
}

static int cb_realm(void *ctx, int id, const char **avail,
                    const char **result)
{
    (void)ctx;
    if (id != SASL_CB_GETREALM)
        return SASL_BADPARAM;
    *result = avail != NULL ? avail[0] : NULL;
    return SASL_OK;
}

static int cb_pass(sasl_conn_t *conn, void *ctx, int id,
                   sasl_secret_t **out)
{
    zkl__secure_t *s = ctx;
    char *buf = (char *)s->secret->data;
    size_t n;

    (void)conn;
    if (id != SASL_CB_PASS || out == NULL)
        return SASL_BADPARAM;
    /* Into the secret set aside with the client (zkl__secure_copy): a
     * failure here, an allocation's too, would end the client as a
     * refused identity (the C client marks the handle failed). */
    explicit_bzero(buf, ZKL__SECRET_MAX);
    if (s->pw_cb != NULL) {
        if (s->pw_cb(buf, ZKL__SECRET_MAX, s->pw_arg) != 0) {
            explicit_bzero(buf, ZKL__SECRET_MAX);
            return SASL_FAIL;
        }
        buf[ZKL__SECRET_MAX - 1] = '\0';
    } else if (s->password != NULL) {
        snprintf(buf, ZKL__SECRET_MAX, "%s", s->password);
    } else {
        return SASL_FAIL;
    }
    n = strlen(buf);
    s->secret->len = n;
    *out = s->secret;
    return SASL_OK;
}

/* sasl_callback_t keeps every callback as int (*)(void): the cast goes
 * through void (*)(void), the type GCC knows to stand for "any". */
#define SASL_PROC(f) ((int (*)(void))(void (*)(void))(f))

/* Cyrus SASL's client side is set up once per process (clients may be
 * made on several threads); the C client leaves that to its caller. */
static pthread_once_t sasl_once = PTHREAD_ONCE_INIT;
static int sasl_ok;

static void sasl_init_once(void)
{
    sasl_ok = sasl_client_init(NULL) == SASL_OK;
}

static int sasl_ready(void)
{
    pthread_once(&sasl_once, sasl_init_once);
    return sasl_ok;
}
#endif

/* The session's handle, over TLS, with SASL, or plain. The C client's
 * TLS entry has no log hook: its own log stays quiet while it starts
 * (it would write to stderr), and the hook is set right after. */
zhandle_t *zkl__secure_open(zkl__secure_t *s, const char *hosts,
                            watcher_fn fn, int timeout, void *ctx,
                            log_callback_fn log)
{
    zhandle_t *zh = NULL;

#ifdef ZKL_HAVE_ZK_TLS
    if (s != NULL && s->tls != NULL) {
        /* The level is the process's: one thread at a time quiets it. */
        static pthread_mutex_t quiet = PTHREAD_MUTEX_INITIALIZER;
        ZooLogLevel level;

        pthread_mutex_lock(&quiet);
        level = logLevel;
        zoo_set_debug_level((ZooLogLevel)0);
        zh = zookeeper_init_ssl(hosts, s->tls, fn, timeout, NULL, ctx, 0);
        zoo_set_debug_level(level);
        pthread_mutex_unlock(&quiet);
        if (zh != NULL)
            zoo_set_log_callback(zh, log);
        return zh;
    }
#endif
#ifdef ZKL_HAVE_ZK_SASL
    if (s != NULL && s->sasl) {
        if (!sasl_ready()) {
            ZKL_LOG(ZKL_LOG_ERROR, "zklock: sasl_client_init failed");
            errno = EINVAL;
            return NULL;
        }
        s->cbs[0] = (sasl_callback_t){SASL_CB_GETREALM,
                                      SASL_PROC(cb_realm), s};
        s->cbs[1] = (sasl_callback_t){SASL_CB_USER,
                                      SASL_PROC(cb_user), s};
        s->cbs[2] = (sasl_callback_t){SASL_CB_AUTHNAME,
                                      SASL_PROC(cb_user), s};
        s->cbs[3] = (sasl_callback_t){SASL_CB_PASS,
                                      SASL_PROC(cb_pass), s};
        s->cbs[4] = (sasl_callback_t){SASL_CB_LIST_END, NULL, NULL};
        s->params.service = s->service != NULL ? s->service : "zookeeper";
        s->params.mechlist = s->mech != NULL ? s->mech : "DIGEST-MD5";
        s->params.host = s->host != NULL ? s->host
                         : strcmp(s->params.mechlist, "DIGEST-MD5") == 0
                             ? "zk-sasl-md5"
                             : NULL;
        s->params.callbacks = s->cbs;
        return zookeeper_init_sasl(hosts, fn, timeout, NULL, ctx, 0, log,
                                   &s->params);
    }
#endif
    (void)s;
    zh = zookeeper_init2(hosts, fn, timeout, NULL, ctx, 0, log);
    return zh;
}
