/* Names and texts for messages and logs: the error codes' (generated
 * from the one table in zklock.h), the events' and the states'. */
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

/* No default in the switches below: -Wswitch flags an event or state
 * added to zklock.h without its name. */
#define ZKL__NAME(sym) \
    case sym:          \
        return #sym;

const char *zkl_lock_event_name(zkl_lock_event_t ev)
{
    switch (ev) {
        ZKL__NAME(ZKL_LOCK_ACQUIRED)
        ZKL__NAME(ZKL_LOCK_FAILED)
        ZKL__NAME(ZKL_LOCK_SUSPENDED)
        ZKL__NAME(ZKL_LOCK_RESTORED)
        ZKL__NAME(ZKL_LOCK_LOST)
        ZKL__NAME(ZKL_LOCK_RELEASED)
        ZKL__NAME(ZKL_LOCK_REVOKE_REQUESTED)
        ZKL__NAME(ZKL_LOCK_QUEUED)
    }
    return "ZKL_LOCK_?";
}

const char *zkl_conn_event_name(zkl_conn_event_t ev)
{
    switch (ev) {
        ZKL__NAME(ZKL_CONN_CONNECTED)
        ZKL__NAME(ZKL_CONN_SUSPENDED)
        ZKL__NAME(ZKL_CONN_RECONNECTED)
        ZKL__NAME(ZKL_CONN_EXPIRED)
        ZKL__NAME(ZKL_CONN_AUTH_FAILED)
    }
    return "ZKL_CONN_?";
}

const char *zkl_lock_state_name(zkl_lock_state_t st)
{
    switch (st) {
        ZKL__NAME(ZKL_STATE_IDLE)
        ZKL__NAME(ZKL_STATE_ACQUIRING)
        ZKL__NAME(ZKL_STATE_QUEUED)
        ZKL__NAME(ZKL_STATE_HELD)
        ZKL__NAME(ZKL_STATE_RELEASING)
    }
    return "ZKL_STATE_?";
}
#undef ZKL__NAME

/* Every ZooKeeper result, in one place. Only a definite refusal may end
 * an attempt with an error; anything that leaves the outcome unknown is
 * connection trouble, so the attempt looks again (its node found by its
 * uuid) and retries. Codes this table does not know are treated as
 * trouble too: retrying is safe, wrongly giving up leaves a node. */
/* A code of 3.8 that Debian's 3.8.0 header does not name either: a
 * request not finished within its time (the Java client's today; the
 * outcome would be unknown). */
#define ZKL__ZREQUESTTIMEOUT (-122)

enum zkl__rc_class zkl__rc_class(int rc)
{
    switch (rc) {
    case ZKL__ZQUOTAEXCEEDED:
        return ZKL__RC_REFUSED;
    case ZOK:
        return ZKL__RC_OK;
    case ZNONODE:
        return ZKL__RC_NONODE;
    case ZNODEEXISTS:
        return ZKL__RC_EXISTS;
    case ZNOAUTH:
    case ZINVALIDACL:
    case ZBADARGUMENTS:
    case ZBADVERSION:
    case ZNOCHILDRENFOREPHEMERALS:
    case ZNOTEMPTY:
    case ZUNIMPLEMENTED:
    case ZINVALIDCALLBACK:
    case ZEPHEMERALONLOCALSESSION:
    case ZNOWATCHER:
    case ZRECONFIGDISABLED:
    case ZNEWCONFIGNOQUORUM:
    case ZRECONFIGINPROGRESS:
    case ZAPIERROR:
        return ZKL__RC_REFUSED;
    case ZSESSIONEXPIRED:
    case ZCLOSING:
    case ZINVALIDSTATE:
    case ZAUTHFAILED:
    case ZSESSIONCLOSEDREQUIRESASLAUTH:
        return ZKL__RC_GONE;
    case ZCONNECTIONLOSS:
    case ZOPERATIONTIMEOUT:
    /* A send into a socket the server had reset closes it silently;
     * the requests re-sent after reconnecting no longer match the
     * replies, and every outstanding one ends with this code, applied
     * or not. */
    case ZRUNTIMEINCONSISTENCY:
    /* The session is alive, answered by a server it has left. */
    case ZSESSIONMOVED:
    case ZNOTREADONLY:
    /* Not done at all, but the server is overloaded: retried once
     * new requests may go again (zkl__on_result pauses them). */
    case ZTHROTTLEDOP:
    case ZKL__ZREQUESTTIMEOUT:
    case ZMARSHALLINGERROR:
    case ZSYSTEMERROR:
    case ZDATAINCONSISTENCY:
    case ZSSLCONNECTIONERROR:
    default:
        return ZKL__RC_CONNLOSS;
    }
}

/* 1 for a code this table names: an unknown one is retried, but only
 * after a pause, as a throttled request is (it may say "not now"). */
int zkl__rc_known(int rc)
{
    switch (rc) {
    case ZOK: case ZNONODE: case ZNODEEXISTS: case ZNOAUTH:
    case ZINVALIDACL: case ZBADARGUMENTS: case ZBADVERSION:
    case ZNOCHILDRENFOREPHEMERALS: case ZNOTEMPTY: case ZUNIMPLEMENTED:
    case ZINVALIDCALLBACK: case ZEPHEMERALONLOCALSESSION: case ZNOWATCHER:
    case ZRECONFIGDISABLED: case ZNEWCONFIGNOQUORUM:
    case ZRECONFIGINPROGRESS: case ZAPIERROR: case ZSESSIONEXPIRED:
    case ZCLOSING: case ZINVALIDSTATE: case ZAUTHFAILED:
    case ZSESSIONCLOSEDREQUIRESASLAUTH: case ZCONNECTIONLOSS:
    case ZOPERATIONTIMEOUT: case ZRUNTIMEINCONSISTENCY: case ZSESSIONMOVED:
    case ZNOTREADONLY: case ZMARSHALLINGERROR:
    case ZSYSTEMERROR: case ZDATAINCONSISTENCY: case ZSSLCONNECTIONERROR:
    case ZKL__ZQUOTAEXCEEDED: case ZKL__ZREQUESTTIMEOUT:
        return 1;
    default:
        return 0;
    }
}

int zkl__names_lost(const struct String_vector *sv)
{
    int i;

    if (sv == NULL || sv->count <= 0)
        return 0;
    if (sv->data == NULL)
        return 1;
    for (i = 0; i < sv->count; i++)
        if (sv->data[i] == NULL)
            return 1;
    return 0;
}

int zkl__data_lost(const char *value, int len)
{
    return value == NULL && len >= 0;
}

/* ZooKeeper result -> zklock code, at the boundary; the raw code goes to
 * the log where it matters. */
int zkl__from_zk(int rc)
{
    switch (rc) {
    case ZOK:
        return ZKL_OK;
    case ZSESSIONEXPIRED:
    case ZSESSIONCLOSEDREQUIRESASLAUTH:
        return ZKL_ESESSION;
    case ZCLOSING:
        return ZKL_ECLOSED;
    case ZNOAUTH:
    case ZAUTHFAILED:
        return ZKL_EAUTH;
    case ZBADARGUMENTS:
        return ZKL_EBADPATH;
    case ZKL__ZQUOTAEXCEEDED:
        return ZKL_EQUOTA;
    case ZTHROTTLEDOP:
        return ZKL_ETHROTTLED;
    case ZMARSHALLINGERROR:
    case ZSYSTEMERROR:
        return ZKL_ENOMEM; /* a request the client could not build */
    default:
        break;
    }
    switch (zkl__rc_class(rc)) {
    case ZKL__RC_CONNLOSS:
        return ZKL_ECONNLOSS;
    case ZKL__RC_GONE:
        return ZKL_ESESSION;
    default:
        return ZKL_EZK;
    }
}
