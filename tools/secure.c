/* TLS and SASL for the session: --tls-ca, --tls-cert, --tls-key (or
 * $ZKLOCK_TLS_CA, $ZKLOCK_TLS_CERT, $ZKLOCK_TLS_KEY, and the key's
 * passphrase only from $ZKLOCK_TLS_KEY_PASSWORD), --sasl-user and
 * --sasl-password-file (or $ZKLOCK_SASL_USER, $ZKLOCK_SASL_PASSWORD_FILE,
 * $ZKLOCK_SASL_PASSWORD), --sasl-mech ($ZKLOCK_SASL_MECH). A password is
 * never taken from an option's value, which every user can read in ps;
 * a password file others may read is refused, as auth files are. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *secured; /* "TLS", "SASL (bob)": for messages */
static char secured_buf[120];

const char *secure_what(void)
{
    return secured;
}

static const char *opt_or_env(const char *opt, const char *env)
{
    const char *v = opt != NULL ? opt : getenv(env);

    return v != NULL && v[0] != '\0' ? v : NULL;
}

static int refused(int rc, const char *what)
{
    if (rc == ZKL_ENOTSUP)
        fprintf(stderr, "%s: %s: this zklock's ZooKeeper C client has "
                "no %s (Debian's has neither TLS nor SASL: "
                "deps/build-zookeeper-client.sh builds one that has)\n",
                prog, what, what);
    else
        fprintf(stderr, "%s: %s: %s\n", prog, what, cli_strerror(rc));
    return rc == ZKL_ENOTSUP || rc == ZKL_EINVAL ? EXIT_USAGE
                                                 : EXIT_INTERNAL;
}

/* The first line of a password file, without its line end. */
static int password_from_file(const char *file, const char *from,
                              char **out)
{
    char where[300], *text;
    size_t len;
    int rc;

    if ((rc = secret_file_read(file, from, &text, &len, where,
                               sizeof where)) != 0)
        return rc;
    text[strcspn(text, "\r\n")] = '\0';
    *out = text;
    (void)len;
    return 0;
}

static int load_tls(zkl_options_t *o, const struct conn_opts *co)
{
    const char *ca = opt_or_env(co->tls_ca, "ZKLOCK_TLS_CA");
    const char *cert = opt_or_env(co->tls_cert, "ZKLOCK_TLS_CERT");
    const char *key = opt_or_env(co->tls_key, "ZKLOCK_TLS_KEY");
    const char *pw = getenv("ZKLOCK_TLS_KEY_PASSWORD");
    int rc;

    if (ca == NULL && cert == NULL && key == NULL)
        return 0;
    if (ca == NULL || cert == NULL || key == NULL)
        return usage_error("TLS needs all three: --tls-ca FILE (the CA of "
                           "the servers' certificates), --tls-cert FILE "
                           "and --tls-key FILE (this client's, which a "
                           "ZooKeeper TLS port requires)");
    if (strchr(ca, ',') != NULL || strchr(cert, ',') != NULL ||
        strchr(key, ',') != NULL)
        return usage_error("a TLS file name may not hold a ',' (the "
                           "ZooKeeper C client splits its TLS settings "
                           "at commas)");
    if ((rc = zkl_options_set_tls(o, ca, cert, key, pw)) != ZKL_OK)
        return refused(rc, "TLS");
    secured = "TLS";
    return 0;
}

static int load_sasl(zkl_options_t *o, const struct conn_opts *co)
{
    const char *user = opt_or_env(co->sasl_user, "ZKLOCK_SASL_USER");
    const char *file =
        opt_or_env(co->sasl_password_file, "ZKLOCK_SASL_PASSWORD_FILE");
    const char *mech = opt_or_env(co->sasl_mech, "ZKLOCK_SASL_MECH");
    const char *env_pw = getenv("ZKLOCK_SASL_PASSWORD");
    char *pw = NULL;
    int rc;

    if (user == NULL) {
        if (file != NULL || mech != NULL)
            return usage_error("SASL needs --sasl-user USER (or "
                               "$ZKLOCK_SASL_USER)");
        return 0;
    }
    if (secured != NULL)
        return usage_error("TLS and SASL cannot be used together: the "
                           "ZooKeeper C client does one or the other");
    if (file != NULL) {
        if ((rc = password_from_file(
                 file,
                 co->sasl_password_file != NULL ? "--sasl-password-file"
                                                : "$ZKLOCK_SASL_PASSWORD_FILE",
                 &pw)) != 0)
            return rc;
    } else if (env_pw != NULL) {
        if ((pw = strdup(env_pw)) == NULL)
            return refused(ZKL_ENOMEM, "SASL");
    } else if (mech == NULL || strcmp(mech, "GSSAPI") != 0) {
        return usage_error("SASL needs a password: --sasl-password-file "
                           "FILE (or $ZKLOCK_SASL_PASSWORD_FILE, "
                           "$ZKLOCK_SASL_PASSWORD); never on the command "
                           "line");
    }
    rc = zkl_options_set_sasl(o, mech, user, pw, NULL, NULL);
    if (pw != NULL) {
        explicit_bzero(pw, strlen(pw));
        free(pw);
    }
    if (rc != ZKL_OK)
        return refused(rc, "SASL");
    snprintf(secured_buf, sizeof secured_buf, "SASL (%.80s)", user);
    secured = secured_buf;
    return 0;
}

/* 0, or an exit status after saying why. */
int secure_load(zkl_options_t *o, const struct conn_opts *co)
{
    int rc;

    if ((rc = load_tls(o, co)) != 0)
        return rc;
    return load_sasl(o, co);
}
