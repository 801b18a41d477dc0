/* Secure-session options, in every build: a client built without TLS or
 * SASL refuses them with ZKL_ENOTSUP and says so in zkl_features(); one
 * built with them checks what the C client's formats cannot carry. The
 * sessions themselves are tested against secured servers by the TLS
 * suite (test/test-tls.c, in a build with TLS). */
#include <string.h>

#include "harness.h"

TEST(secure_options_bad_args_and_features)
{
    unsigned f = zkl_features();
    int want_tls = f & ZKL_FEATURE_TLS ? ZKL_OK : ZKL_ENOTSUP;
    int want_sasl = f & ZKL_FEATURE_SASL ? ZKL_OK : ZKL_ENOTSUP;
    zkl_options_t *o, *o2;

    ASSERT((f & ~(unsigned)(ZKL_FEATURE_TLS | ZKL_FEATURE_SASL)) == 0);
    ASSERT_RC(zkl_options_set_tls(NULL, "ca", "c", "k", NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_options_set_sasl(NULL, NULL, "u", "p", NULL, NULL),
              ZKL_EINVAL);
    ASSERT_RC(zkl_options_set_sasl_password_cb(NULL, NULL, NULL),
              ZKL_EINVAL);
    ASSERT_RC(zkl_options_new(&o), ZKL_OK);
    /* What the C client's "ca,cert,key,password" string cannot carry. */
    ASSERT_RC(zkl_options_set_tls(o, NULL, "c", "k", NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_options_set_tls(o, "ca", NULL, "k", NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_options_set_tls(o, "ca", "c", NULL, NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_options_set_tls(o, "", "c", "k", NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_options_set_tls(o, "a,b", "c", "k", NULL), ZKL_EINVAL);
    ASSERT_RC(zkl_options_set_tls(o, "ca", "c", "k", "pw,d"), ZKL_EINVAL);
    ASSERT_RC(zkl_options_set_sasl(o, NULL, NULL, "p", NULL, NULL),
              ZKL_EINVAL);
    ASSERT_RC(zkl_options_set_sasl(o, NULL, "", "p", NULL, NULL),
              ZKL_EINVAL);
    /* Well-formed: taken, or refused as a feature of the C client. */
    ASSERT_RC(zkl_options_set_tls(o, "/ca.pem", "/c.pem", "/k.pem", NULL),
              want_tls);
    ASSERT_RC(zkl_options_new(&o2), ZKL_OK);
    ASSERT_RC(zkl_options_set_sasl(o2, NULL, "bob", "pw", NULL, NULL),
              want_sasl);
    ASSERT_RC(zkl_options_set_sasl_password_cb(o2, NULL, NULL), want_sasl);
    /* One or the other: the C client cannot do both on a session. */
    if (want_tls == ZKL_OK)
        ASSERT_RC(zkl_options_set_sasl(o, NULL, "bob", "pw", NULL, NULL),
                  ZKL_EINVAL);
    if (want_sasl == ZKL_OK)
        ASSERT_RC(zkl_options_set_tls(o2, "/ca", "/c", "/k", NULL),
                  ZKL_EINVAL);
    if (want_tls != ZKL_OK) {
        ASSERT_RC(zkl_options_set_tls(o, "/ca", "/c", "/k", "pw"),
                  ZKL_ENOTSUP);
        ASSERT(strstr(zkl_strerror(ZKL_ENOTSUP), "zkl_features") != NULL);
    }
    if (want_sasl != ZKL_OK)
        ASSERT_RC(zkl_options_set_sasl(o, "PLAIN", "u", NULL, NULL, NULL),
                  ZKL_ENOTSUP);
    zkl_options_free(o2);
    zkl_options_free(o);
}
