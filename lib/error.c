/* Error texts, generated from the one table in zklock.h. */
#include "internal.h"

const char *zkl_strerror(int err)
{
    switch ((zkl_error_t)err) {
    case ZKL_OK:
        return "success";
#define ZKL__ERR_TEXT(name, val, text) \
    case ZKL_##name:                   \
        return text;
        ZKL_ERRNO_MAP(ZKL__ERR_TEXT)
#undef ZKL__ERR_TEXT
    }
    /* No default above: -Wswitch flags a code without a text. */
    return "unknown zklock error code";
}

const char *zkl_err_name(int err)
{
    switch ((zkl_error_t)err) {
    case ZKL_OK:
        return "ZKL_OK";
#define ZKL__ERR_NAME(name, val, text) \
    case ZKL_##name:                   \
        return "ZKL_" #name;
        ZKL_ERRNO_MAP(ZKL__ERR_NAME)
#undef ZKL__ERR_NAME
    }
    return "ZKL_UNKNOWN";
}

/* ZooKeeper result -> zklock code, at the boundary; the raw code goes to
 * the log where it matters. */
int zkl__from_zk(int rc)
{
    switch (rc) {
    case ZOK:
        return ZKL_OK;
    case ZCONNECTIONLOSS:
    case ZOPERATIONTIMEOUT:
        return ZKL_ECONNLOSS;
    case ZSESSIONEXPIRED:
    case ZSESSIONMOVED:
        return ZKL_ESESSION;
    case ZCLOSING:
        return ZKL_ECLOSED;
    case ZNOAUTH:
    case ZAUTHFAILED:
        return ZKL_EAUTH;
    case ZMARSHALLINGERROR:
    case ZSYSTEMERROR:
        return ZKL_ENOMEM;
    default:
        return ZKL_EZK;
    }
}

unsigned zkl_version(void)
{
    return ZKL_VERSION_NUM;
}

const char *zkl_version_string(void)
{
    return ZKL_VERSION_STRING;
}
