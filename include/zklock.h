/*
 * zklock: distributed locks on ZooKeeper that live inside an event loop.
 *
 * Threading model
 *   Everything runs on one thread: the thread that drives the loop the
 *   client is attached to. No function may be called concurrently on the
 *   same client or on any object of it. Several clients may share a
 *   thread, and several threads may each run a loop with clients of
 *   their own; then the log function set with zkl_set_log() may get a
 *   garbled line of the ZooKeeper client's (it formats them in one
 *   buffer for the process). The library creates no thread and never
 *   blocks, except zkl_client_free() and the ZooKeeper client's name
 *   lookups (see zkl_options_set_servers()). Only zkl_strerror() and
 *   zkl_err_name() may be called from any thread at any time.
 *
 * Callbacks
 *   - Callbacks run only from zkl_client_on_io() / zkl_client_on_timer(),
 *     that is from the loop, never from inside any other call of this
 *     API (the one exception: zkl_client_free(), see there). Every
 *     callback, of every kind, goes through one queue per client and is
 *     delivered in the order it was queued.
 *   - When a function that starts an operation returns 0, the operation's
 *     callback is called exactly once later. When it returns an error, the
 *     callback is never called for it.
 *   - The arg given with a callback is never touched by the library;
 *     what a callback is handed besides (names, contenders, results) is
 *     borrowed until it returns.
 *   - Inside a callback every function of this API may be called, including
 *     zkl_lock_free() and zkl_client_free() on the object the callback is
 *     about; zkl_client_on_io() and zkl_client_on_timer() may not.
 *   - The calls that read state (zkl_lock_is_held(), zkl_lock_state(),
 *     zkl_lock_token(), zkl_lock_hold_count(), zkl_multi_is_held(),
 *     zkl_client_pending()) answer for the moment of the call, and the
 *     library may know a change before the callback that tells it has
 *     run: the queue is drained a bounded amount per loop turn, and one
 *     turn can decide for many handles. So a lock granted in this turn
 *     reads HELD, and can be released, while its ZKL_LOCK_ACQUIRED is
 *     still queued; a hold found lost reads not held before its
 *     ZKL_LOCK_LOST runs; a release whose node is gone has left
 *     zkl_client_pending() before its ZKL_LOCK_RELEASED runs. Each change
 *     is still told, once and in order. The calls that act (acquire,
 *     cancel, release) judge by the same present state, so they agree
 *     with what the state calls say, not with the callbacks seen so far.
 *
 * Errors
 *   Functions return 0 (ZKL_OK) or a negative ZKL_E* code; zkl_strerror()
 *   gives its text. Codes are stable across releases, and callbacks'
 *   statuses are the same codes. Bad input (a NULL handle or callback,
 *   a malformed path, the release of a lock not held, a double release,
 *   a cancel after the acquire ended) gets its code, never a crash or a
 *   stray node.
 *
 * Ownership
 *   Strings passed in are copied. Every object is freed by the matching
 *   *_free() of its creator; each constructor's "Owner:" says who owns
 *   what. A constructor that fails stores NULL in its out pointers (those
 *   that are not NULL).
 *
 * Shutting down
 *   A program stops using zklock cleanly in this order, on the loop's
 *   thread:
 *   1. Release what it holds and cancel what it waits for:
 *      zkl_lock_release(), zkl_lock_cancel(), zkl_multi_release(),
 *      zkl_multi_cancel(). Waiting for their callbacks is optional:
 *      freeing a handle releases or cancels silently.
 *   2. Free every handle: zkl_lock_free(), zkl_multi_free(). No
 *      callback of a freed handle runs; its node is still deleted, in
 *      the background.
 *   3. To have the nodes go by their own deletes rather than by the
 *      session's close, run the loop until zkl_client_pending() is 0.
 *   4. zkl_client_free() closes the session (which deletes the client's
 *      remaining nodes while connected), runs every callback still
 *      pending and detaches the adapter from the loop. It may block up
 *      to about 5.5 s when the server does not answer.
 *   5. Then free the loop: event_base_free(), ev_loop_destroy(),
 *      g_main_context_unref(), sd_event_unref(); with libuv, run the
 *      loop once more (the adapter's handles close asynchronously)
 *      before uv_loop_close(). The loop must outlive the client.
 */
#ifndef ZKLOCK_H
#define ZKLOCK_H

#include <stddef.h>
#include <stdint.h>

#include <zklock_version.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && __GNUC__ >= 4
#define ZKL_EXTERN __attribute__((visibility("default")))
#else
#define ZKL_EXTERN
#endif

/* ------------------------------------------------------------------ */
/* Errors                                                              */
/* ------------------------------------------------------------------ */

/* One table generates the codes, zkl_strerror() and zkl_err_name(); it is
 * public: ZKL_ERRNO_MAP(XX) calls XX(name, value, text) once per code,
 * name without its ZKL_ prefix, so a program can build tables of its
 * own. The range stays clear of ZooKeeper's own codes (-1..-127) and of
 * -errno. A session that "may expire before this client could know"
 * (ZKL_ESESSION) is one that no answer has kept alive for 9/10 of its
 * timeout, connected or not: see ZKL_LOCK_LOST. */
#define ZKL_ERRNO_MAP(XX)                                                   \
    XX(EINVAL, -1001, "invalid argument")                                   \
    XX(EBADPATH, -1002, "malformed path (must be absolute, no empty, '.' "  \
                        "or '..' component, no trailing '/', no control "   \
                        "characters, not under /zookeeper, at most "        \
                        "ZKL_PATH_MAX bytes)")                              \
    XX(ENOMEM, -1003, "out of memory")                                      \
    XX(EBUSY, -1004, "an acquire or release is already in progress on "    \
                     "this lock handle")                                    \
    XX(EHELD, -1005, "this lock handle already holds the lock")             \
    XX(ENOTHELD, -1006, "this lock handle does not hold the lock")          \
    XX(ENOTPENDING, -1007, "no acquire is in progress on this lock handle") \
    XX(ELOCKED, -1008, "the lock is held or queued for by another "         \
                       "contender")                                         \
    XX(ETIMEDOUT, -1009, "the lock was not acquired within the timeout")    \
    XX(ECANCELED, -1010, "the acquire was cancelled")                       \
    XX(ECLOSED, -1011, "the client is closed or closing")                   \
    XX(ESESSION, -1012, "the ZooKeeper session expired (or may expire "     \
                        "before this client could know)")                   \
    XX(ESUSPENDED, -1013, "the connection to ZooKeeper is lost; the hold "  \
                          "is uncertain until it comes back")               \
    XX(ENODEGONE, -1014, "the lock node was deleted by someone else")       \
    XX(ECONNLOSS, -1015, "the connection to ZooKeeper was lost")            \
    XX(EAUTH, -1016, "not authorized by ZooKeeper")                         \
    XX(EZK, -1017, "unexpected error from ZooKeeper (see the log)")         \
    XX(EKIND, -1020, "the lock path is in use by another kind of lock "    \
                     "(mutex, read/write lock, semaphore), whose queue "   \
                     "order this one cannot honour")                       \
    XX(EUPGRADE, -1021, "the read side of this read/write lock is held "   \
                        "or pending on its pair: a write acquire would "   \
                        "wait for itself (release the read side first)")   \
    XX(ECOUNT, -1022, "the semaphore's count node does not hold a count "  \
                      "(4 bytes, a big-endian int, as Curator's "          \
                      "SharedCount writes it)")                            \
    XX(EFENCED, -1023, "the lock node is gone (the session expired or "   \
                       "someone deleted it): the guarded writes were "     \
                       "refused and nothing was written")                  \
    XX(EWRITE, -1024, "ZooKeeper refused one of the guarded writes (its "  \
                      "result says why); nothing was written")             \
    XX(ENONODE, -1025, "the node does not exist")                          \
    XX(EEXISTS, -1026, "the node exists already")                          \
    XX(EVERSION, -1027, "the node's version is not the one expected")      \
    XX(ENOTEMPTY, -1028, "the node has children")                        \
    XX(ELOOP, -1029, "the event loop refused what the adapter asked of "  \
                     "it")                                                 \
    XX(EQUOTA, -1030, "a ZooKeeper quota on the path refused the node "    \
                      "(or the write): nothing was created")               \
    XX(ETHROTTLED, -1031, "the ZooKeeper server is overloaded and did "    \
                          "not do the request (throttled); nothing was "   \
                          "written, try again later")                      \
    XX(ELIMIT, -1032, "the semaphore's current holders use another "       \
                      "limit (max_leases)")                                \
    XX(ENOTSUP, -1033, "not supported by the ZooKeeper C client zklock "   \
                       "was built with (TLS and SASL need one built with " \
                       "OpenSSL and Cyrus SASL: zkl_features())")          \
    XX(ETLS, -1034, "the TLS handshake with every server failed for "      \
                    "good: an untrusted, expired or refused "             \
                    "certificate, or a peer that is not TLS (see the "    \
                    "log)")
/* -1018 and -1019 were ZKL_ENOLOOP and ZKL_ERECURSIVE, never returned;
 * they stay unused. */

typedef enum zkl_error {
    ZKL_OK = 0,
#define ZKL__ERR_ENUM(name, val, text) ZKL_##name = (val),
    ZKL_ERRNO_MAP(ZKL__ERR_ENUM)
#undef ZKL__ERR_ENUM
} zkl_error_t;

/* Text of an error code: "success" for 0, "unknown zklock error code"
 * for a value that is none. Never NULL, static storage. */
ZKL_EXTERN const char *zkl_strerror(int err);
/* Symbolic name of an error code ("ZKL_ETIMEDOUT"): "ZKL_OK" for 0,
 * "ZKL_UNKNOWN" for a value that is none. Never NULL, static storage. */
ZKL_EXTERN const char *zkl_err_name(int err);

/* Longest lock path accepted, in bytes, without the terminating NUL. */
#define ZKL_PATH_MAX 1024

/* Checks a lock path without touching the server, as every call that
 * takes a lock path does: 0 or ZKL_EBADPATH (ZKL_EINVAL for NULL). Lock paths are absolute ZooKeeper paths other
 * than "/" and not under "/zookeeper". */
ZKL_EXTERN int zkl_path_validate(const char *path);
/* As zkl_path_validate(), and says which rule a bad path breaks, with
 * its numbers, into buf (at most size bytes, always terminated when
 * size > 0; "" for a valid path): e.g. "component 3 is \"..\" (no
 * relative components)", "control character U+0007 at byte 12", "2000
 * bytes, longer than 1024 bytes (ZKL_PATH_MAX)". Counts start at 1. The
 * text never quotes the path. buf may be NULL when size is 0. */
ZKL_EXTERN int zkl_path_explain(const char *path, char *buf, size_t size);

/* ------------------------------------------------------------------ */
/* Version                                                             */
/* ------------------------------------------------------------------ */

/* <zklock_version.h> (included above) gives the version a program was
 * compiled against: ZKL_VERSION_MAJOR, ZKL_VERSION_MINOR and
 * ZKL_VERSION_PATCH as numbers, ZKL_VERSION_STRING as text, and
 * ZKL_VERSION_NUM, (major << 16) | (minor << 8) | patch. The functions
 * below give the library's own, which may be newer. */

/* ZKL_VERSION_NUM of the library actually linked. */
ZKL_EXTERN unsigned zkl_version(void);
/* ZKL_VERSION_STRING of the library actually linked. */
ZKL_EXTERN const char *zkl_version_string(void);

/* ------------------------------------------------------------------ */
/* Logging                                                             */
/* ------------------------------------------------------------------ */

typedef enum zkl_log_level {
    ZKL_LOG_ERROR = 1,
    ZKL_LOG_WARN = 2,
    ZKL_LOG_INFO = 3,
    ZKL_LOG_DEBUG = 4
} zkl_log_level_t;

/* A log line: msg is valid only during the call. The log says what
 * codes cannot: the ZooKeeper result behind a ZKL_EZK, a count node
 * that held no count. */
typedef void (*zkl_log_fn)(zkl_log_level_t level, const char *msg,
                           void *arg);

/* Routes zklock's and the ZooKeeper client's log lines to fn, up to
 * max_level. Process-global, because the ZooKeeper client's own log hook
 * carries no user pointer, and not thread-safe. Default: silent. fn
 * NULL turns logging off. Call it before creating clients. */
ZKL_EXTERN void zkl_set_log(zkl_log_fn fn, void *arg,
                            zkl_log_level_t max_level);

/* ------------------------------------------------------------------ */
/* Memory                                                              */
/* ------------------------------------------------------------------ */

/* Where zklock takes its own memory from: options, clients, lock
 * handles, attempts, queue views, the callback queue, the loop adapters'
 * state. (The ZooKeeper client and the loop libraries allocate with
 * their own.)
 * All four functions or none: memory goes back to the allocator that
 * gave it. */
typedef struct zkl_allocator {
    void *(*malloc_fn)(size_t size);
    void *(*calloc_fn)(size_t n, size_t size);
    void *(*realloc_fn)(void *p, size_t size);
    void (*free_fn)(void *p);
} zkl_allocator_t;

/* Replaces the allocator (copied); NULL restores the C library's.
 * Process-global and not thread-safe: call it at start-up, before any
 * zklock object exists, as with hiredisSetAllocators(). Every call that
 * allocates fails with ZKL_ENOMEM, and changes nothing, when the
 * allocator returns NULL. An accepted acquire sets aside a slot in the
 * callback queue, so a later failure cannot cost it its ending; only a
 * burst of more events at once than there are attempts (plus a few)
 * makes the queue grow, and a failure then is logged and drops that
 * callback. Errors: ZKL_EINVAL (a member is NULL: the allocator is
 * unchanged). */
ZKL_EXTERN int zkl_set_allocator(const zkl_allocator_t *a);

/* Memory from the allocator set above, for loop adapters and other code
 * built on zklock, so that all of zklock's memory is counted in one
 * place: NULL when the allocator has none. Release with zkl_free()
 * (NULL is ignored). */
ZKL_EXTERN void *zkl_malloc(size_t size);
ZKL_EXTERN void *zkl_calloc(size_t n, size_t size);
ZKL_EXTERN void zkl_free(void *p);

/* ------------------------------------------------------------------ */
/* Client options                                                      */
/* ------------------------------------------------------------------ */

typedef struct zkl_options zkl_options_t;

/* What a client uses when its options do not say (the CLI too). */
#define ZKL_DEFAULT_SERVERS "127.0.0.1:2181"
#define ZKL_DEFAULT_SESSION_TIMEOUT 10000

typedef struct zkl_client zkl_client_t;

/* Connection events delivered to the client's connection callback. */
typedef enum zkl_conn_event {
    /* A session is established: the first one, or a new one after
     * ZKL_CONN_EXPIRED. */
    ZKL_CONN_CONNECTED = 1,
    /* The connection is lost; the session may still be alive on the
     * server. Held locks are uncertain (they get ZKL_LOCK_SUSPENDED). */
    ZKL_CONN_SUSPENDED = 2,
    /* The connection is back and the session survived. */
    ZKL_CONN_RECONNECTED = 3,
    /* The server expired the session: every lock node of the session is
     * gone. Held locks get ZKL_LOCK_LOST; waiting acquires re-queue on a
     * new session that the client opens by itself (ZKL_CONN_CONNECTED
     * follows). */
    ZKL_CONN_EXPIRED = 4,
    /* Authentication failed; the client is unusable: free it. */
    ZKL_CONN_AUTH_FAILED = 5
} zkl_conn_event_t;

/* Lock handles get their own events of all this; the connection
 * callback is for logs and for work that depends on the connection. */
typedef void (*zkl_conn_cb)(zkl_client_t *c, zkl_conn_event_t ev,
                            void *arg);

/* Name of a connection event, for logs ("ZKL_CONN_EXPIRED"); never
 * NULL, static storage; "ZKL_CONN_?" for a value that is none. */
ZKL_EXTERN const char *zkl_conn_event_name(zkl_conn_event_t ev);

/* Options are a builder: create, set, pass to zkl_client_new() (which
 * copies what it needs), free; one options object may serve several
 * clients. Every set and add function fails with ZKL_EINVAL when o is
 * NULL. Owner: the caller. Errors: ZKL_EINVAL (out is NULL),
 * ZKL_ENOMEM. */
ZKL_EXTERN int zkl_options_new(zkl_options_t **out);
ZKL_EXTERN void zkl_options_free(zkl_options_t *o);
/* "host:port,host:port,..." (IP literals recommended: the ZooKeeper
 * client resolves names with blocking calls: in zkl_client_new(), and
 * on the loop's thread after a connection loss and for a new session). Default "127.0.0.1:2181".
 * Errors: ZKL_EINVAL (a list zkl_servers_explain() refuses),
 * ZKL_ENOMEM. */
ZKL_EXTERN int zkl_options_set_servers(zkl_options_t *o, const char *hosts);
/* Checks a server list as zkl_options_set_servers() takes it, without
 * resolving names: 0, or ZKL_EINVAL with the fault in buf (at most size
 * bytes, always terminated when size > 0; "" for a good list), naming
 * the entry (counted from 1): NULL or empty list, an empty entry, no
 * port, no host, a port that is not a decimal number or is outside
 * 1..65535, an IPv6 address in brackets (the ZooKeeper client takes the
 * port after the last ':', so ::1:2181), blanks or control characters
 * in a host, a chroot suffix ("/app": zkl_options_set_chroot()). Leading
 * blanks of an entry are allowed, as the ZooKeeper client skips them.
 * buf may be NULL when size is 0. */
ZKL_EXTERN int zkl_servers_explain(const char *hosts, char *buf,
                                   size_t size);
/* The most requests a client keeps outstanding (sent, not yet
 * answered) before new work waits in the client, in order: the steps
 * of acquires that open or look at a queue (a create, a listing, a
 * waiter's descent), and these stop a sixteenth of the window short of
 * it. Requests that protect or end holds (keepalives, a grant's
 * own-node read, a release's delete) never wait: they use that room,
 * and only more of them at once than it holds take the count past the
 * window. The server
 * answers a session's requests in order, keepalives included: without a
 * bound, a burst of acquires queued in one loop turn delays the
 * answers that keep this session's holds alive past the point where
 * they must be told LOST. Default ZKL_DEFAULT_WINDOW; n <= 0 restores
 * it. Errors: ZKL_EINVAL (o NULL). */
#define ZKL_DEFAULT_WINDOW 1000
ZKL_EXTERN int zkl_options_set_window(zkl_options_t *o, int n);
/* Requested session timeout; the server clamps it to 2..20 ticks. It
 * is how long a process may be cut off or stopped before its session
 * and its locks are gone, and about how soon the locks of a crashed
 * process are free again.
 * Default 10000. Errors: ZKL_EINVAL (< 1 or > 600000 ms). */
ZKL_EXTERN int zkl_options_set_session_timeout(zkl_options_t *o, int ms);
/* Every path of the client is relative to this node (which must exist).
 * NULL or "/" for none, the default. Errors: ZKL_EINVAL (o NULL),
 * ZKL_EBADPATH, ZKL_ENOMEM. */
ZKL_EXTERN int zkl_options_set_chroot(zkl_options_t *o, const char *path);
/* Connection callback (may be NULL). arg is never touched.
 * Errors: ZKL_EINVAL (o NULL). */
ZKL_EXTERN int zkl_options_set_conn_cb(zkl_options_t *o, zkl_conn_cb cb,
                                       void *arg);

/* Credentials sent on every connection of every session, e.g.
 * ("digest", "alice:secret"). May be called several times. A scheme the
 * server does not know ends the client with ZKL_CONN_AUTH_FAILED.
 * Without TLS (zkl_options_set_tls()) credentials and lock traffic
 * cross the network in the clear: keep ZooKeeper on a trusted network
 * or tunnel it (stunnel, WireGuard, an SSH forward).
 * Errors: ZKL_EINVAL (NULL or empty scheme, NULL credential),
 * ZKL_ENOMEM. */
ZKL_EXTERN int zkl_options_add_auth(zkl_options_t *o, const char *scheme,
                                    const char *credential);

/* Who may change what the client creates (lock nodes, and the lock
 * paths it has to create). */
typedef enum zkl_acl {
    /* Anyone may create and delete lock nodes (ZooKeeper's
     * world:anyone, all permissions): the default, and what Curator
     * does. */
    ZKL_ACL_OPEN = 0,
    /* Only the identities the client authenticates as (add_auth) and
     * those added with zkl_options_add_acl_id() get all permissions;
     * everyone else may only read. So no other identity can delete a
     * lock node (which would break exclusion) nor create one (which
     * would forge a place in the queue); others may still list the
     * queue (zkl_contenders). Lock paths that exist already keep their
     * own ACL: create them through a private client first. */
    ZKL_ACL_PRIVATE = 1
} zkl_acl_t;

/* Default ZKL_ACL_OPEN. ZKL_ACL_PRIVATE needs at least one add_auth or
 * add_acl_id, else zkl_client_new() fails with ZKL_EINVAL.
 * Errors: ZKL_EINVAL (o NULL, an unknown mode). */
ZKL_EXTERN int zkl_options_set_acl(zkl_options_t *o, zkl_acl_t mode);
/* Adds an identity to ZKL_ACL_PRIVATE's set (and selects that mode),
 * in ZooKeeper's form: ("digest", "bob:<base64 sha1 of bob:password>"),
 * ("ip", "10.0.0.0/8"), ... Errors: ZKL_EINVAL, ZKL_ENOMEM. */
ZKL_EXTERN int zkl_options_add_acl_id(zkl_options_t *o, const char *scheme,
                                      const char *id);

/* ------------------------------------------------------------------ */
/* Secure sessions: TLS and SASL                                       */
/* ------------------------------------------------------------------ */

/* What the ZooKeeper C client zklock is linked with can do, as bits.
 * Debian's libzookeeper-st is built with neither; the script
 * deps/build-zookeeper-client.sh builds Debian's own source with both,
 * as packages that replace it (or into a prefix), and zklock's
 * configure finds them. */
#define ZKL_FEATURE_TLS 1  /* zkl_options_set_tls() */
#define ZKL_FEATURE_SASL 2 /* zkl_options_set_sasl() */
ZKL_EXTERN unsigned zkl_features(void);

/* Sessions over TLS, to the servers' secureClientPort (the server list
 * names those ports). ca_file: the PEM file of the CA(s) that signed the
 * servers' certificates; cert_file
 * and key_file: the client's certificate chain and private key, PEM,
 * which a ZooKeeper TLS port requires; key_password: the key's
 * passphrase, NULL for a key that has none (a key that has one then
 * fails to load, a definite TLS failure: never a prompt on the
 * terminal, which OpenSSL would otherwise make). The files are read at every
 * connection, so renewed certificates take effect at the next one. The
 * ZooKeeper C client checks the server's certificate chain against
 * ca_file only, not the system's CAs, and not the server's name. The
 * handshake never blocks the loop and is given up, as a connection is,
 * after 2/3 of the session timeout. The handshakes of a thread's
 * clients take at most half its time (a handshake costs a millisecond
 * or more of CPU), so a hundred clients reconnecting at once do not
 * stall the loop, and are restored over about twice their CPU time. A
 * handshake that fails for good (an untrusted or expired certificate on
 * either side, a peer that answers with something not TLS) on every
 * server in the list in a row ends the client: ZKL_CONN_AUTH_FAILED,
 * and acquires fail with ZKL_ETLS. A server that closes the connection
 * before answering (a plain port, but also a TLS server at its
 * connection limit) is connection trouble, said in the log. Not together
 * with SASL: the C client cannot do both on one session.
 * Errors: ZKL_EINVAL (NULL o, ca_file, cert_file or key_file; an empty
 * one; a ',' in any of them, which the C client's format cannot carry;
 * SASL set already), ZKL_ENOTSUP (no TLS in the C client), ZKL_ENOMEM. */
ZKL_EXTERN int zkl_options_set_tls(zkl_options_t *o, const char *ca_file,
                                   const char *cert_file,
                                   const char *key_file,
                                   const char *key_password);

/* Gives the SASL password when the C client asks for it, at each
 * authentication (every connection): copy it into buf (size bytes, NUL
 * included) and return 0, or return -1 to refuse (the session then
 * fails to authenticate). Runs on the loop's thread. */
typedef int (*zkl_sasl_password_cb)(char *buf, size_t size, void *arg);

/* Sessions authenticated with SASL, as servers that require it
 * (requireClientAuthScheme=sasl, or sessionRequireClientSASLAuth)
 * expect. mechanism: NULL for "DIGEST-MD5" (ZooKeeper's JAAS
 * DigestLoginModule); "GSSAPI" for Kerberos (its credentials from the
 * environment, as kinit leaves them). user and password: the identity
 * (password may be NULL when a callback gives it:
 * zkl_options_set_sasl_password_cb()). service: NULL for "zookeeper";
 * host: the server name in the exchange, NULL for "zk-sasl-md5" with
 * DIGEST-MD5 (what ZooKeeper's server uses) and the server's address
 * otherwise. Strings are copied (the password is wiped when freed). The
 * exchange runs through the session's own requests and never blocks
 * the loop; a refused identity ends the client with
 * ZKL_CONN_AUTH_FAILED, and acquires fail with ZKL_EAUTH (as they do
 * when the C client cannot allocate during the exchange: it marks the
 * session failed). Not together with TLS.
 * Errors: ZKL_EINVAL (NULL o or user, an empty user, TLS set already),
 * ZKL_ENOTSUP (no SASL in the C client), ZKL_ENOMEM. */
ZKL_EXTERN int zkl_options_set_sasl(zkl_options_t *o, const char *mechanism,
                                    const char *user, const char *password,
                                    const char *service, const char *host);
/* The password from cb instead (it replaces one given to
 * zkl_options_set_sasl(); NULL goes back to that one). arg is never
 * touched. Errors: ZKL_EINVAL (o NULL), ZKL_ENOTSUP. */
ZKL_EXTERN int zkl_options_set_sasl_password_cb(zkl_options_t *o,
                                                zkl_sasl_password_cb cb,
                                                void *arg);

/* ------------------------------------------------------------------ */
/* Client                                                              */
/* ------------------------------------------------------------------ */

/* Creates a client (one ZooKeeper session at a time). No I/O happens
 * until a loop is attached: acquires and listings started before then
 * are queued and go out on attach (an acquire's timeout runs from the
 * call). Owner: the caller, freed by zkl_client_free().
 * Errors: ZKL_EINVAL (NULL out, or ZKL_ACL_PRIVATE with no identity),
 * ZKL_ENOMEM (also when the ZooKeeper
 * client could not allocate its handle), ZKL_EZK (the ZooKeeper client
 * refused the server list). */
ZKL_EXTERN int zkl_client_new(zkl_client_t **out, const zkl_options_t *o);

/* Closes the session and frees the client. Every operation still pending
 * gets its callback exactly once before this returns (or, when called from
 * inside a callback, before the loop's current dispatch returns): acquires
 * with ZKL_LOCK_FAILED / ZKL_ECLOSED, releases with ZKL_LOCK_RELEASED /
 * ZKL_ECLOSED, held locks with ZKL_LOCK_LOST / ZKL_ECLOSED, multi-locks
 * as lock handles, guarded writes with their answer when it comes
 * while closing, else ZKL_ECONNLOSS (outcome unknown), listings with
 * ZKL_ECLOSED; this is the one call inside which callbacks run. Closing
 * the session deletes every lock node it owns when the client is
 * connected; when it is not, the nodes stay until the server expires the
 * session (one session timeout). Lock and multi-lock handles stay
 * valid but inert (every call returns ZKL_ECLOSED) until the user frees
 * them.
 * Replies still on their way are read first (for at most 1 s), so that
 * the close reaches the server on a quiet connection. The loop
 * adapter's detach hook is called. May block up to ~5.5 s when the
 * server does not answer (a limit of the ZooKeeper client). NULL is
 * ignored. */
ZKL_EXTERN void zkl_client_free(zkl_client_t *c);

/* Current connection state: ZKL_CONN_CONNECTED or ZKL_CONN_RECONNECTED
 * while connected, ZKL_CONN_SUSPENDED while not (also before the first
 * connection), ZKL_CONN_AUTH_FAILED when unusable. */
ZKL_EXTERN zkl_conn_event_t zkl_client_state(const zkl_client_t *c);
/* The server the client is connected to, as "ip:port" ("[ip]:port" for
 * IPv6), copied into buf
 * (size bytes, NUL included): for logs, and for tests that fail that
 * very server. Errors: ZKL_EINVAL (NULL, or buf too small),
 * ZKL_ECONNLOSS (not connected now). */
ZKL_EXTERN int zkl_client_server(const zkl_client_t *c, char *buf,
                                 size_t size);
/* Session id (0 before the first connection). */
ZKL_EXTERN int64_t zkl_client_session_id(const zkl_client_t *c);
/* Session timeout negotiated with the server (the requested one before). */
ZKL_EXTERN int zkl_client_session_timeout(const zkl_client_t *c);
/* Number of things the client still runs: lock attempts (acquiring,
 * held, or released until their node is known gone), listings and
 * guarded writes until their callback has run, and the background
 * deletes of abandoned and duplicate lock nodes. 0 means every node
 * this client created is known gone; the callbacks of the attempts
 * that ended may still be queued (see Callbacks at the top). To have
 * the nodes go by their own deletes rather than by the session's close,
 * run the loop until this is 0 before zkl_client_free(). */
ZKL_EXTERN size_t zkl_client_pending(const zkl_client_t *c);

/* Counters of one client since zkl_client_new(), for monitoring and
 * benchmarks. Fields are only ever appended; pass sizeof(zkl_stats_t). */
typedef struct zkl_stats {
    uint64_t requests;       /* ZooKeeper requests sent by lock attempts
                                (their listings included) and keepalives;
                                not zkl_contenders(), not pings */
    uint64_t watch_events;   /* node watch notifications received */
    uint64_t session_events; /* connection state changes received */
    uint64_t grants;         /* ZKL_LOCK_ACQUIRED delivered */
    uint64_t sessions;       /* sessions opened (1 + renewals) */
    uint64_t listings;       /* child listings among the requests */
    /* Pacing (zkl_options_set_window), counting the requests above but
     * not guarded writes or zkl_contenders(): */
    uint64_t window;         /* the window in force */
    uint64_t outstanding;    /* requests sent, not yet answered: now (a
                                listing shared by k attempts counts k:
                                each may set a watch from its answer) */
    uint64_t outstanding_max;/* ... and its high-water mark */
    uint64_t paced;          /* attempts waiting for room: now */
    uint64_t paced_max;      /* ... and its high-water mark */
    uint64_t paced_total;    /* steps that waited for room, in all */
    /* The ZooKeeper client could not queue a request (out of memory)
     * and may or may not run its completion: requests were held until
     * a barrier behind it told which (see fence.c). When it was never
     * sent, the client resets its connection on the next reply: holds
     * see SUSPENDED, then RESTORED. */
    uint64_t fences;
    /* The server throttled a request (ZTHROTTLEDOP): new requests
     * paused, 50 ms doubling to 2 s while it lasts. */
    uint64_t throttled;
} zkl_stats_t;

/* Copies the counters into out (at most size bytes). Errors: ZKL_EINVAL. */
ZKL_EXTERN int zkl_client_stats(const zkl_client_t *c, zkl_stats_t *out,
                                size_t size);

/* ------------------------------------------------------------------ */
/* Event loop integration                                              */
/* ------------------------------------------------------------------ */

/* I/O readiness bits for zkl_loop_ops_t.io and zkl_client_on_io(). */
#define ZKL_READ 1
#define ZKL_WRITE 2

/* What an adapter implements. The core calls the hooks only when
 * something changed, from the loop thread, never re-entrantly. */
typedef struct zkl_loop_ops {
    /* Watch fd for events (ZKL_READ|ZKL_WRITE); fd < 0 or events == 0:
     * stop watching. fd is zklock's own close-on-exec copy of the
     * ZooKeeper client's socket, kept open until the hook has been told
     * of the next one, so it is never another socket's number while the
     * adapter still watches it; a new socket comes as a new fd. reset
     * != 0: a new socket, or a retry after this hook failed (zklock asks
     * again within 100 ms): drop and register the watch again. When the
     * call returns, the previous fd must no longer be watched, even if
     * the call fails, and the loop must have let go of it at once (not
     * at its next turn): zklock closes it right after. Return 0, or -1
     * on failure (logged). */
    int (*io)(void *loop_data, int fd, int events, int reset);
    /* Arm the one timer, replacing any earlier deadline; ms < 0 disarms
     * it, 0 means as soon as possible. One-shot: the core arms it again
     * when it needs it. Return 0 or -1. */
    int (*timer)(void *loop_data, long ms);
    /* The client is going away: stop watching the fd, disarm the timer
     * (the core calls neither hook for this first) and free loop_data.
     * Called exactly once, from zkl_client_free(), which may itself run
     * inside zkl_client_on_io() or zkl_client_on_timer(). May be NULL
     * when the adapter has nothing to undo. */
    void (*detach)(void *loop_data);
} zkl_loop_ops_t;

/* Attaches the client to a loop through ops; ops must outlive the
 * client, loop_data is the adapter's and freed by ops->detach. Starts
 * connecting. Attach, run and free a client on one thread: the work
 * done per loop turn is bounded by a budget that the clients attached
 * on the calling thread share (a thread-local count, so that several
 * loops, one per thread, each get a whole budget). Clients of the same
 * servers (and chroot) attached on one thread also share what they
 * learn of lock queues, so a process that spreads its waiters over
 * several sessions hands a lock on without listing the queue. A client
 * with more work than the budget arms its timer with 0 and goes on at
 * the next turn, so it does not starve the loop's other events. On
 * error nothing is attached and detach is never called: the adapter
 * frees loop_data itself.
 * Errors: ZKL_EINVAL (NULL c or ops, a NULL io or timer hook),
 * ZKL_EBUSY (already attached), ZKL_ECLOSED (the client is closing). */
ZKL_EXTERN int zkl_client_attach(zkl_client_t *c, const zkl_loop_ops_t *ops,
                                 void *loop_data);
/* The loop_data given to zkl_client_attach() when c is attached through
 * ops (compared by address), else NULL: lets an adapter find its state
 * from the client alone (zkl_poll_run() does). */
ZKL_EXTERN void *zkl_client_loop_data(const zkl_client_t *c,
                                      const zkl_loop_ops_t *ops);
/* Adapter -> core: fd became ready for events (ZKL_READ|ZKL_WRITE);
 * report an error or a hang-up on fd as ZKL_READ (the ZooKeeper client
 * finds the failure when it reads). Runs callbacks. May free the client
 * when the user asked for it from a callback, and detach loop_data with
 * it: make it the last thing the adapter's handler does, and touch
 * neither c nor loop_data after it. */
ZKL_EXTERN void zkl_client_on_io(zkl_client_t *c, int events);
/* Adapter -> core: the timer fired. Same rules as zkl_client_on_io(). */
ZKL_EXTERN void zkl_client_on_timer(zkl_client_t *c);

/* ------------------------------------------------------------------ */
/* Locks (mutexes)                                                     */
/* ------------------------------------------------------------------ */

typedef struct zkl_lock zkl_lock_t;

/* Events delivered to a lock's callback. */
typedef enum zkl_lock_event {
    /* The acquire succeeded; status 0. When this process was stopped
     * or starved between the grant and this callback, the hold may have
     * ended meanwhile: zkl_lock_is_held() then reads 0 here and
     * ZKL_LOCK_LOST follows. A caller that acts on the grant at once
     * checks zkl_lock_is_held() first. (It reads 1 for a hold that
     * ended only if the caller released and acquired the handle again
     * before this callback: that hold is the later acquire's, whose
     * ACQUIRED comes after this one and the release's RELEASED.) */
    ZKL_LOCK_ACQUIRED = 1,
    /* The acquire ended without the lock; status says why: ZKL_ELOCKED
     * (try-lock), ZKL_ETIMEDOUT, ZKL_ECANCELED, ZKL_ECLOSED, ZKL_ECONNLOSS
     * (try-lock only), ZKL_EAUTH (no permission, or authentication
     * failed), ZKL_ETLS (the TLS handshake failed for good: see
     * zkl_options_set_tls()), ZKL_EBADPATH (a path the ZooKeeper client
     * refused),
     * ZKL_ENOMEM (the ZooKeeper client could not build a request),
     * ZKL_EQUOTA (a hard quota on the lock path refused the node),
     * ZKL_ETHROTTLED (try-lock only: the server was throttling),
     * ZKL_ECOUNT and ZKL_ELIMIT (leases: see zkl_lease_new() and
     * zkl_lease_set_count()), ZKL_EKIND (the path is in use by another
     * kind of lock), ZKL_ENODEGONE (a downgrade whose write node was
     * deleted: see zkl_rwlock_new()),
     * ZKL_EZK (another definite refusal by the server; see the log).
     * Connection trouble of any kind is not a failure: the acquire waits
     * through it, and through a server that throttles (new requests
     * pause, 50 ms doubling to 2 s or a quarter of the session timeout,
     * whichever is less). Its node is deleted in the background (see
     * zkl_client_pending()). */
    ZKL_LOCK_FAILED = 2,
    /* While held: the connection is lost; the hold is uncertain (status
     * ZKL_ESUSPENDED). Stop touching the protected resource unless it
     * checks fencing tokens. */
    ZKL_LOCK_SUSPENDED = 3,
    /* While held, after ZKL_LOCK_SUSPENDED: the session survived and the
     * lock node was confirmed to still exist; status 0. */
    ZKL_LOCK_RESTORED = 4,
    /* The hold is over without a release, and another contender may
     * hold the lock now: ZKL_ESESSION (the session
     * expired, or may expire before this client could know: see below),
     * ZKL_ENODEGONE (node deleted by someone else), ZKL_EAUTH or ZKL_ETLS
     * (authentication or the TLS handshake failed for good on every
     * server: the client is unusable), ZKL_ECLOSED
     * (client freed). The handle is idle again and may acquire anew.
     *
     * How LOST is timed: the server expires a session no earlier than its
     * last receipt of anything from the client plus the negotiated
     * timeout T. The client knows a lower bound of that receipt: the send
     * time of the latest request whose answer came back (not the time
     * of the last read, which replies and notifications queued behind a
     * slow path can make much later). Held locks are told LOST at that
     * bound + 9/10 T, connected or not; while the client holds a lock
     * it sends a small read about every T/4 when nothing else keeps the
     * bound fresh (a waiter sends none: every way to a grant reads
     * first). So LOST comes before the server can expire the
     * session and grant the lock to another contender, as long as this
     * process's loop was running and the two clocks run at about the
     * same rate. A grant is also held back until the bound is less than
     * T/2 old. An answer of ZSESSIONEXPIRED to any request tells holds
     * LOST at once.
     *
     * The limit: this is exact against a standalone server or the
     * leader. A follower answers reads itself and passes the session's
     * touches on to the leader with its pings; if its link to the leader
     * stalls for most of T while it stays in the quorum (syncLimit *
     * tickTime longer than that), the leader can expire the session
     * while the follower still answers. No answer a client can see
     * rules that out; every ZooKeeper lock client shares it. */
    ZKL_LOCK_LOST = 5,
    /* The release finished: status 0 (node deleted), ZKL_ESESSION (the
     * session, and the node with it, is gone or presumed gone: see
     * zkl_lock_release()), ZKL_ECLOSED, ZKL_EAUTH or
     * ZKL_EZK if ZooKeeper refused the delete (the node then stays until
     * the session ends). Connection trouble is retried, not reported. */
    ZKL_LOCK_RELEASED = 6,
    /* While held by a handle made revocable (zkl_lock_set_revocable):
     * someone asked the holder to let go, by writing "__REVOKE__" into
     * its lock node (zkl_revoke(), or Curator's Revoker). Status 0. At
     * most once per hold; purely advisory: the hold goes on until
     * zkl_lock_release(). */
    ZKL_LOCK_REVOKE_REQUESTED = 7,
    /* Only to handles that asked for it (zkl_lock_notify_queued): the
     * acquire's node is in the queue and has to wait; status is the
     * number of contenders ahead of it (>= 1), for a caller that
     * reports its place. Once per node: again only if the acquire has
     * to queue anew (a new session). Mutex, read/write and latch
     * handles; not leases. Always before the ACQUIRED or FAILED that
     * ends the acquire. */
    ZKL_LOCK_QUEUED = 8
} zkl_lock_event_t;

typedef void (*zkl_lock_cb)(zkl_lock_t *lk, zkl_lock_event_t ev,
                            int status, void *arg);

/* Name of a lock event, for logs ("ZKL_LOCK_ACQUIRED"); never NULL,
 * static storage; "ZKL_LOCK_?" for a value that is none. */
ZKL_EXTERN const char *zkl_lock_event_name(zkl_lock_event_t ev);

/* Creates a lock handle for path (a ZooKeeper node that holds one child
 * per contender; created with its parents on demand, as CONTAINER nodes
 * that the server removes once empty). Owner: the caller, freed by
 * zkl_lock_free(); path is copied; arg is never touched.
 * Node names are Curator's ("_c_<uuid>-lock-<seq>") and ordering is
 * Curator's, so zklock and Curator's InterProcessMutex exclude each other
 * and share one first-in, first-out queue. A create whose answer was
 * lost is found again by the uuid in its name. A handle (of any kind)
 * has at most one acquire or hold at a time (a reentrant one counts its
 * holds) and is reusable: once its hold ends or its acquire fails, it
 * may acquire again. Two handles in one process contend as two
 * processes would.
 * Errors: ZKL_EINVAL (NULL c, out or cb), ZKL_EBADPATH, ZKL_ENOMEM,
 * ZKL_ECLOSED. */
ZKL_EXTERN int zkl_lock_new(zkl_lock_t **out, zkl_client_t *c,
                            const char *path, zkl_lock_cb cb, void *arg);

/* Kinds of lock node, by the tag Curator puts in their names. */
typedef enum zkl_lock_kind {
    ZKL_KIND_MUTEX = 0, /* "_c_<uuid>-lock-<seq>": InterProcessMutex */
    ZKL_KIND_READ = 1,  /* "_c_<uuid>-__READ__<seq>": the read side of
                           InterProcessReadWriteLock */
    ZKL_KIND_WRITE = 2, /* "_c_<uuid>-__WRIT__<seq>": its write side */
    ZKL_KIND_LEASE = 3, /* "_c_<uuid>-lease-<seq>": a lease of
                           InterProcessSemaphoreV2 (zkl_lease_new) */
    ZKL_KIND_OTHER = 4, /* any other child (listings only) */
    ZKL_KIND_LATCH = 5  /* "_c_<uuid>-latch-<seq>": a participant of
                           Curator's LeaderLatch (zkl_latch_new) */
} zkl_lock_kind_t;

/* As zkl_lock_new(), for one side of a read/write lock (kind
 * ZKL_KIND_READ or ZKL_KIND_WRITE) or a mutex (ZKL_KIND_MUTEX), in
 * Curator's InterProcessReadWriteLock layout: read and write nodes under
 * one path, in one queue. A write holds when its node is first; a read
 * holds when no write node is before it, so a reader that arrives
 * behind a queued writer waits (writers do not starve). A writer waits
 * on the node just before it, a reader on the nearest write node
 * before it: a release wakes only contenders that may then hold (all
 * the readers right behind a writer at once). An acquire on a path that
 * holds nodes of another kind (mutex nodes under a read/write lock,
 * read/write nodes under a mutex, a semaphore) fails with ZKL_EKIND. A
 * lone side is tied to nothing: its read side never downgrades and its
 * write side never gets ZKL_EUPGRADE (zkl_rwlock_new() ties them).
 * Errors: those of zkl_lock_new(), ZKL_EINVAL (another kind). */
ZKL_EXTERN int zkl_lock_new_kind(zkl_lock_t **out, zkl_client_t *c,
                                 const char *path, zkl_lock_kind_t kind,
                                 zkl_lock_cb cb, void *arg);

/* Both sides of one read/write lock on path, tied together as Curator's
 * readLock()/writeLock() pair are (cb and arg serve both; zkl_lock_kind()
 * tells them apart):
 *   - Downgrade: acquiring the read side while the write side holds
 *     takes the write node's place in the queue (an EPHEMERAL read node
 *     named after the write node's sequence, created only if the write
 *     node still exists) and holds without waiting for anyone. Release
 *     the write side once the read side's ZKL_LOCK_ACQUIRED has come
 *     and keep reading, no writer in between; a write side that stops
 *     holding before that ends the downgrade with ZKL_LOCK_FAILED /
 *     ZKL_ECANCELED (ZKL_ENODEGONE when its node was deleted).
 *   - Upgrade is refused: acquiring the write side while the read side
 *     holds or waits returns ZKL_EUPGRADE (it would wait for itself).
 * Each handle is freed with zkl_lock_free(), in any order. Owner: the
 * caller. Errors: as zkl_lock_new(), and ZKL_EINVAL when read_out and
 * write_out are one pointer; each out pointer given is NULL after any
 * error. */
ZKL_EXTERN int zkl_rwlock_new(zkl_lock_t **read_out, zkl_lock_t **write_out,
                              zkl_client_t *c, const char *path,
                              zkl_lock_cb cb, void *arg);

/* ------------------------------------------------------------------ */
/* Semaphores                                                          */
/* ------------------------------------------------------------------ */

/* Most leases a semaphore may have: the leases' listing must fit in one
 * ZooKeeper reply (1 MiB by default, about 60 bytes per lease). */
#define ZKL_LEASES_MAX 10000

/* Creates a handle for one lease of the counting semaphore on path that
 * lets at most max_leases holders in at once (1 .. ZKL_LEASES_MAX), in
 * Curator's InterProcessSemaphoreV2 layout, so Curator and zklock
 * processes share one semaphore: a mutex under path/locks that only
 * whoever is adding a lease holds, and one EPHEMERAL_SEQUENTIAL node per
 * lease under path/leases ("_c_<uuid>-lease-<seq>"), granted when the
 * leases number at most max_leases. Every participant must use the same
 * limit (or the same count node: zkl_lease_set_count()). Curator checks
 * nothing; zklock records the limit of the current holders in the path
 * node's data ("zklock:max_leases=N"; Curator creates it empty and never
 * reads it), read and written only by the acquire that holds
 * path/locks: one that finds no lease but its own writes its limit
 * before it is granted; one that finds others fails with ZKL_ELIMIT if
 * the record names another limit (zkl_lease_recorded_limit() says
 * which), at once, its node deleted and path/locks given back. So a new
 * limit takes effect once every holder of the old one has left (a count
 * node changes a limit while it is held). Curator participants neither
 * read nor write the record, so beside them it checks only zklock's
 * acquirers, against the limit of the latest one that found no other
 * lease. Data that is not a record (someone else's) is never
 * overwritten, and turns the check off, as does a path node zklock may
 * not read or write (logged). It costs a read per acquire, sent with
 * the lease's create, and a write (one round trip) when the record
 * changes. There is no record with a count node. A lease is a
 * lock handle of kind ZKL_KIND_LEASE: zkl_lock_acquire(), _cancel(),
 * _release(), _free(), _set_data() and the events work as for a mutex;
 * zkl_lock_token() gives the lease node's czxid, unique but not an
 * order: leases are held side by side. Only the waiter holding path/locks watches the leases, so a
 * release wakes one waiter however many wait. With max_leases 1 it is
 * Curator's InterProcessSemaphoreMutex (not reentrant). A mutex or
 * read/write lock on a semaphore's path fails with ZKL_EKIND; a
 * semaphore on a lock's path is not refused (Curator does not check
 * either).
 * Owner: the caller, freed by zkl_lock_free().
 * Errors: ZKL_EINVAL (NULL c, out or cb; max_leases out of range),
 * ZKL_EBADPATH (also a path too long for its "/leases" child),
 * ZKL_ENOMEM, ZKL_ECLOSED. */
ZKL_EXTERN int zkl_lease_new(zkl_lock_t **out, zkl_client_t *c,
                             const char *path, int max_leases,
                             zkl_lock_cb cb, void *arg);

/* Takes the limit from a count node instead, as Curator's
 * InterProcessSemaphoreV2 with a SharedCount does: a PERSISTENT node
 * holding the count as a 4-byte big-endian int. An acquire reads it
 * (and creates it, with max_leases as its value, when it does not
 * exist) and watches it while it waits: a change takes effect for
 * waiting acquires at once (lowering it ends no hold). NULL goes back
 * to max_leases. Takes effect at the next acquire. An acquire that
 * finds the node not holding a count fails with ZKL_ECOUNT.
 * Errors: ZKL_EINVAL (not a lease), ZKL_EBADPATH, ZKL_ENOMEM,
 * ZKL_ECLOSED. */
ZKL_EXTERN int zkl_lease_set_count(zkl_lock_t *lease,
                                   const char *count_path);

/* Acquires n leases of one semaphore at once, all or nothing, with one
 * deadline (timeout_ms as zkl_lock_acquire()): each handle gets
 * ZKL_LOCK_ACQUIRED, all in one go, or each gets ZKL_LOCK_FAILED with
 * the same status. While it is pending, cancelling or freeing any one of
 * them ends it for all (ZKL_ECANCELED). Once held, each lease is its
 * own hold, released in any order. The acquire keeps the semaphore's
 * mutex until all n are granted, so two acquires of several leases
 * never each take part of what both need (Curator takes them one by
 * one, with the mutex given back in between). zkl_lock_acquire() on a
 * lease is this with n = 1.
 * Errors: ZKL_EINVAL (n == 0; a NULL, repeated or non-lease handle;
 * handles of different clients, paths, limits or count nodes; n above
 * the limit when there is no count node), ZKL_EHELD, ZKL_EBUSY,
 * ZKL_ECLOSED, ZKL_ENOMEM, ZKL_EAUTH. */
ZKL_EXTERN int zkl_lease_acquire_all(zkl_lock_t *const *leases, size_t n,
                                     long timeout_ms);

/* The limit the lease handle was made with (max_leases); 0 for NULL or
 * a handle that is not a lease. */
ZKL_EXTERN int zkl_lease_limit(const zkl_lock_t *lease);

/* The limit the semaphore's record held when the handle's latest
 * acquire read it: after ZKL_LOCK_FAILED / ZKL_ELIMIT, the limit its
 * holders use. 0 when there was no record (or data that is not one),
 * the acquire had a count node or has not read the record yet, and for
 * NULL or a handle that is not a lease. */
ZKL_EXTERN int zkl_lease_recorded_limit(const zkl_lock_t *lease);

/* ------------------------------------------------------------------ */
/* Lock handles of every kind: acquire, release, state                 */
/* ------------------------------------------------------------------ */

/* The handle's kind (ZKL_KIND_MUTEX for NULL). */
ZKL_EXTERN zkl_lock_kind_t zkl_lock_kind(const zkl_lock_t *lk);

/* What the handle's lock nodes carry (copied; at most 1 MiB less a
 * little, ZooKeeper's limit), e.g. "host:pid" for whoever lists the
 * queue (zkl_contenders_ex(), zklock ls -l). Default (data NULL): as
 * Curator, the local IP address the client reaches ZooKeeper from, as
 * text; nothing when the handle is revocable. Takes effect at the next
 * acquire. Errors: ZKL_EINVAL (NULL handle, len > 1,000,000 or data
 * NULL with len > 0), ZKL_ENOMEM, ZKL_ECLOSED. */
ZKL_EXTERN int zkl_lock_set_data(zkl_lock_t *lk, const void *data,
                                 size_t len);

/* on != 0: while held, the handle watches its node for Curator's
 * revocation request ("__REVOKE__" written into it) and reports it as
 * ZKL_LOCK_REVOKE_REQUESTED. Takes effect at the next acquire.
 * Errors: ZKL_EINVAL, ZKL_ECLOSED. */
ZKL_EXTERN int zkl_lock_set_revocable(zkl_lock_t *lk, int on);

/* on != 0: the handle's acquires report ZKL_LOCK_QUEUED when they have
 * to wait (off by default: a caller that does not expect the event never
 * sees it). Takes effect at the next acquire. Errors: ZKL_EINVAL (NULL,
 * a lease), ZKL_ECLOSED. */
ZKL_EXTERN int zkl_lock_notify_queued(zkl_lock_t *lk, int on);

/* on != 0: the handle is reentrant, as Curator's InterProcessMutex is
 * within one thread: zkl_lock_acquire() while it holds counts up and
 * answers ZKL_LOCK_ACQUIRED (from the loop, no request sent);
 * zkl_lock_release() counts down and answers ZKL_LOCK_RELEASED with
 * status 0, and only the release that brings the count to 0 deletes the
 * node. A hold that ends otherwise (LOST) ends at every depth at once,
 * and may end inside the call that counts (each call runs the library's
 * clock, which may find the session's deadline passed): the count is 0
 * then and the LOST is on its way. From that moment until the LOST
 * callback, zkl_lock_hold_count() is 0 and an acquire starts a new
 * one, it does not count up. The count is the handle's: it says nothing
 * to other processes, which see one node. Errors: ZKL_EINVAL (NULL, a lease, turning it off while
 * the count is above 1), ZKL_ECLOSED. */
ZKL_EXTERN int zkl_lock_set_reentrant(zkl_lock_t *lk, int on);

/* How many times the handle holds its lock: 0 when it does not, above 1
 * only for a reentrant handle. */
ZKL_EXTERN unsigned zkl_lock_hold_count(const zkl_lock_t *lk);

/* Frees the handle. A pending acquire is cancelled and a held lock is
 * released, silently: no callback runs for this handle after this call.
 * The lock node is still deleted (in the background, owned by the client).
 * Safe inside the handle's own callback. NULL is ignored. */
ZKL_EXTERN void zkl_lock_free(zkl_lock_t *lk);

/* Starts an acquire. timeout_ms < 0 waits forever; 0 is a try-lock that
 * answers ZKL_ELOCKED at once (after one round trip) instead of queueing
 * behind another contender (or ZKL_ECONNLOSS if the connection fails it:
 * a try-lock never waits longer than one session timeout); N > 0 gives up
 * with ZKL_ETIMEDOUT after N ms, connection time included.
 * Waiting survives connection loss and session expiry (it re-queues).
 * Callback: exactly one ZKL_LOCK_ACQUIRED or ZKL_LOCK_FAILED.
 * Errors: ZKL_EINVAL, ZKL_EHELD, ZKL_EBUSY (acquire or release pending),
 * ZKL_ECLOSED, ZKL_ENOMEM, ZKL_EAUTH; ZKL_EUPGRADE for the write side of
 * a read/write pair whose read side holds or waits; for a lease, also
 * the errors of zkl_lease_acquire_all(). */
ZKL_EXTERN int zkl_lock_acquire(zkl_lock_t *lk, long timeout_ms);

/* Cancels a pending acquire: its callback gets ZKL_LOCK_FAILED /
 * ZKL_ECANCELED from the loop. The handle is idle at once, so a new
 * acquire may start before that callback arrives; a handle's callbacks
 * always come in the order of the calls that started them. Errors: ZKL_EINVAL, ZKL_ENOTPENDING (no
 * acquire pending: never started, already answered, or held),
 * ZKL_ECLOSED. */
ZKL_EXTERN int zkl_lock_cancel(zkl_lock_t *lk);

/* Releases a held lock: deletes its node, retrying through connection
 * loss until the delete is known done or the session is known gone.
 * The handle counts as not holding from this call on. Callback: exactly
 * one ZKL_LOCK_RELEASED: status 0, or ZKL_ESESSION when the session
 * expired, or is presumed to have (no answer from the server for 9/10
 * of the session timeout, as for LOST): the node goes with the session,
 * or by the delete, which the client goes on trying in the background
 * (zkl_client_pending() counts it). Errors: ZKL_EINVAL, ZKL_ENOTHELD (not held,
 * already released, or lost), ZKL_ECLOSED. */
ZKL_EXTERN int zkl_lock_release(zkl_lock_t *lk);

/* 1 while the handle holds the lock, suspended or not, else 0: from
 * the grant (its ZKL_LOCK_ACQUIRED is queued then, and may not have run
 * yet) until zkl_lock_release() or the moment the hold is known lost
 * (its ZKL_LOCK_LOST follows). See Callbacks at the top. */
ZKL_EXTERN int zkl_lock_is_held(const zkl_lock_t *lk);

typedef enum zkl_lock_state {
    ZKL_STATE_IDLE = 0,      /* no acquire, no hold */
    ZKL_STATE_ACQUIRING = 1, /* acquire under way, not (yet) queued */
    ZKL_STATE_QUEUED = 2,    /* node created, waiting on its predecessor */
    ZKL_STATE_HELD = 3,      /* holds the lock (possibly suspended) */
    ZKL_STATE_RELEASING = 4  /* zkl_lock_release() not yet answered */
} zkl_lock_state_t;

/* Where the handle stands; ZKL_STATE_IDLE for NULL or a closed client. */
ZKL_EXTERN zkl_lock_state_t zkl_lock_state(const zkl_lock_t *lk);
/* Name of a state, for logs ("ZKL_STATE_QUEUED"); never NULL, static
 * storage; "ZKL_STATE_?" for a value that is none. */
ZKL_EXTERN const char *zkl_lock_state_name(zkl_lock_state_t st);

/* Fencing token of the current hold: the czxid of the lock node. Grants
 * on one lock path go in node creation order, so the tokens of one path
 * grow with every exclusive grant, and a resource that remembers the
 * highest token it has seen for that lock can refuse a stale holder.
 * Shared holds are the exception: readers hold side by side, and a read
 * hold taken by downgrade (zkl_rwlock_new()) carries its new read
 * node's czxid, above that of a writer queued before the downgrade and
 * granted after it. Tokens of different paths are not ordered against each
 * other.
 * Errors: ZKL_EINVAL, ZKL_ENOTHELD. */
ZKL_EXTERN int zkl_lock_token(const zkl_lock_t *lk, uint64_t *token);

/* The lock path as given (borrowed, valid until zkl_lock_free()); NULL
 * for NULL. */
ZKL_EXTERN const char *zkl_lock_path(const zkl_lock_t *lk);

/* Longest lock node name zklock creates, NUL included: "_c_", a uuid,
 * the longest tag ("-__READ__") and the eleven-character sequences
 * ZooKeeper prints past 2^31. */
#define ZKL_NODE_NAME_SIZE 60

/* Name of the handle's current lock node ("_c_...-lock-0000000042") into
 * buf, while it has one. Errors: ZKL_EINVAL (NULL, or len too small for
 * the name and its NUL: ZKL_NODE_NAME_SIZE always suffices),
 * ZKL_ENOTPENDING (no node). */
ZKL_EXTERN int zkl_lock_node_name(const zkl_lock_t *lk, char *buf,
                                  size_t len);

/* ------------------------------------------------------------------ */
/* Listing contenders                                                  */
/* ------------------------------------------------------------------ */

/* names: child node names of the lock path in queue order (holder
 * first; Curator's order, by the digits after the tag: the order in
 * which they hold, or for a read/write lock may hold), borrowed
 * for the duration of the callback. status: 0 (a missing lock path is 0
 * with n == 0), ZKL_ECONNLOSS, ZKL_ESESSION, ZKL_ECLOSED, ZKL_EAUTH,
 * ZKL_ENOMEM (no memory to copy the names, or the ZooKeeper client
 * could not queue the request, or could not copy its answer),
 * ZKL_ETHROTTLED, ZKL_EZK. */
typedef void (*zkl_contenders_cb)(zkl_client_t *c, int status,
                                  const char *const *names, size_t n,
                                  void *arg);

/* Lists the contenders of a lock path (for a semaphore: path/leases,
 * the leases, or path/locks, the acquires queued on its mutex).
 * Callback: exactly once, from the loop. One request, never retried: a
 * throttling server's ZKL_ETHROTTLED, or ZKL_ENOMEM while another
 * request's fate is unknown (the ZooKeeper client could not queue it:
 * zkl_stats_t.fences), says to ask again later. Errors: ZKL_EINVAL
 * (NULL c, path or cb), ZKL_EBADPATH, ZKL_ENOMEM, ZKL_ECLOSED,
 * ZKL_ESESSION (the session is gone), ZKL_EAUTH. */
ZKL_EXTERN int zkl_contenders(zkl_client_t *c, const char *path,
                              zkl_contenders_cb cb, void *arg);

/* One contender, as zkl_contenders_ex() reports it. */
typedef struct zkl_contender {
    const char *name;      /* child node name */
    zkl_lock_kind_t kind;  /* by its name's tag */
    int holds;             /* 1 when it holds by its kind's rule: a mutex,
                              write or latch node first in the queue (a
                              latch's: the leader), a read
                              node with no write node before it; every
                              lease node (each counts against the limit,
                              though the acquire holding the semaphore's
                              mutex may still wait with its own) */
    const char *data;      /* its data: any bytes, NUL-terminated for
                              printing (len excludes the NUL); NULL if
                              the node went before it could be read */
    size_t len;
} zkl_contender_t;

/* v: the contenders in queue order, borrowed for the callback's
 * duration. status as zkl_contenders_cb. */
typedef void (*zkl_contenders_ex_cb)(zkl_client_t *c, int status,
                                     const zkl_contender_t *v, size_t n,
                                     void *arg);

/* As zkl_contenders(), with each node's kind, whether it holds, and its
 * data: one listing, then one read per child, pipelined. Errors: as
 * zkl_contenders(). */
ZKL_EXTERN int zkl_contenders_ex(zkl_client_t *c, const char *path,
                                 zkl_contenders_ex_cb cb, void *arg);

/* ------------------------------------------------------------------ */
/* Leader election                                                     */
/* ------------------------------------------------------------------ */

/* Creates a participant of the leader election on path, in Curator's
 * LeaderLatch layout: an EPHEMERAL_SEQUENTIAL node
 * "_c_<uuid>-latch-<seq>" under path holding the participant's id
 * (copied; NULL is "", Curator's default), and the first node in
 * Curator's order is the leader, so Curator LeaderLatch participants
 * and zklock's elect one leader between them. The participant is a lock
 * handle of kind ZKL_KIND_LATCH: zkl_lock_acquire() joins the election
 * and answers ZKL_LOCK_ACQUIRED when it becomes leader (timeout_ms as
 * for a lock: < 0 waits for leadership as long as it takes, 0
 * succeeds only if the participant leads at once);
 * ZKL_LOCK_SUSPENDED, _RESTORED and _LOST tell the leader when its
 * leadership is uncertain, confirmed and over, timed as for a lock;
 * zkl_lock_release() (or _cancel() before leadership) leaves the
 * election; zkl_lock_token() is a fencing token that grows with every
 * new leader. Curator's latch stops leading at every disconnection
 * (and leads again on reconnection if its node is still first); a
 * zklock leader is told SUSPENDED, as a lock holder is, and decides
 * itself whether to pause.
 * Owner: the caller, freed by zkl_lock_free().
 * Errors: those of zkl_lock_new(). */
ZKL_EXTERN int zkl_latch_new(zkl_lock_t **out, zkl_client_t *c,
                             const char *path, const char *id,
                             zkl_lock_cb cb, void *arg);

/* ------------------------------------------------------------------ */
/* Guarded writes                                                      */
/* ------------------------------------------------------------------ */

typedef enum zkl_op_type {
    ZKL_OP_CREATE = 1, /* create path with data (flags) */
    ZKL_OP_SET = 2,    /* set path's data (if its version is version) */
    ZKL_OP_DELETE = 3, /* delete path (if its version is version) */
    ZKL_OP_CHECK = 4   /* write nothing; refuse the batch unless path's
                          version is version */
} zkl_op_type_t;

/* zkl_op_t.flags of a create. */
#define ZKL_CREATE_EPHEMERAL 1  /* ends with the session */
#define ZKL_CREATE_SEQUENTIAL 2 /* ZooKeeper appends a sequence number */

/* One write of a guarded batch; the strings and data are copied. */
typedef struct zkl_op {
    zkl_op_type_t type;
    const char *path;         /* absolute; the client's chroot applies */
    const void *data;         /* CREATE, SET; NULL with len 0: empty */
    size_t len;
    int flags;                /* CREATE: ZKL_CREATE_* */
    int version;              /* SET, DELETE, CHECK: expected version,
                                 -1 for any */
} zkl_op_t;

/* What became of one op: status 0, or (in a refused batch, for the op
 * that was refused) ZKL_ENONODE, ZKL_EEXISTS, ZKL_EVERSION,
 * ZKL_ENOTEMPTY, ZKL_EAUTH, ZKL_EINVAL (ZooKeeper refused its
 * arguments, e.g. a child of an ephemeral node), ZKL_EQUOTA (a hard
 * quota refused it) or ZKL_EZK; path: the
 * node a create made (its sequence number included), else NULL (NULL
 * too when the ZooKeeper client could not allocate its copy of the
 * name: the node was made all the same). */
typedef struct zkl_op_result {
    int status;
    const char *path;
} zkl_op_result_t;

/* status: 0 when every op was applied, at once and only while the lock
 * was held; ZKL_EFENCED when the lock's node was gone when the batch
 * reached the server (the session expired, even if this client has not
 * said LOST yet, or someone deleted it): nothing was written; ZKL_EWRITE
 * when one op was refused (its result says why): nothing was written;
 * ZKL_EAUTH or ZKL_EZK when the server refused a lock node's check for
 * another reason: nothing was written; ZKL_ETHROTTLED when the server
 * was throttling and did not look at the batch: nothing was written.
 * ZKL_ECONNLOSS leaves the outcome
 * unknown: the batch was sent and no answer came (the connection or the
 * session broke, or the client was freed); if it was applied, it was
 * while the lock was held. A batch is not retried: read the nodes to
 * find out. results (n entries, in the order given) and their paths are
 * borrowed for the callback's duration; NULL unless status is 0 or
 * ZKL_EWRITE. */
typedef void (*zkl_write_cb)(zkl_client_t *c, int status,
                             const zkl_op_result_t *results, size_t n,
                             void *arg);

/* Most ops in one guarded batch. */
#define ZKL_WRITE_OPS_MAX 1000
/* Most bytes in one guarded batch: its paths and data, and per op 32
 * (per create, the client's ACL as well). What the server takes in one
 * request (jute.maxbuffer, 1 MiB less one by default) leaves room for
 * the lock checks and headers beside it; a bigger request would make
 * the server close the connection. */
#define ZKL_WRITE_BYTES_MAX 1000000

/* Sends ops as one ZooKeeper transaction (zoo_amulti) that the server
 * applies only if the handle's lock node still exists: a check of that
 * node goes first in the same transaction. So a holder whose lock was
 * lost (its session expired while it was cut off, or its node was
 * deleted) writes nothing, whenever the batch arrives. Callback: exactly
 * once, from the loop (also when lk is freed first: keep arg valid
 * until it has run). Lock paths are not
 * fit targets: the batch must not write into the queues it guards.
 * Errors: ZKL_EINVAL (NULL lk, ops or cb, n == 0 or above
 * ZKL_WRITE_OPS_MAX, more than ZKL_WRITE_BYTES_MAX, an unknown type or
 * flag, data NULL with len > 0),
 * ZKL_EBADPATH, ZKL_ENOTHELD (not held now, or releasing), ZKL_ENOMEM
 * (also while another request's fate is unknown: zkl_stats_t.fences;
 * try again later), ZKL_ECLOSED, ZKL_ESESSION (the session is gone),
 * ZKL_EAUTH (not authorized, or authentication failed). */
ZKL_EXTERN int zkl_lock_write(zkl_lock_t *lk, const zkl_op_t *ops,
                              size_t n, zkl_write_cb cb, void *arg);

/* ------------------------------------------------------------------ */
/* Multi-locks                                                         */
/* ------------------------------------------------------------------ */

typedef struct zkl_multi zkl_multi_t;

/* Events as for a lock: ACQUIRED (all held), FAILED (none held: status
 * as for a lock, ZKL_EKIND for a member path in use by another kind),
 * SUSPENDED / RESTORED (the hold as a whole is uncertain / confirmed),
 * LOST (a member's hold ended: status as for a lock; the set no longer
 * holds, but the other members are kept, since the caller may still be
 * at work under them, until zkl_multi_release() gives them back, a new
 * zkl_multi_acquire() takes the set again, or zkl_multi_free()),
 * RELEASED (all given back; the first member's non-zero status, else
 * 0). */
typedef void (*zkl_multi_cb)(zkl_multi_t *m, zkl_lock_event_t ev,
                             int status, void *arg);

/* Most locks in one multi-lock. */
#define ZKL_MULTI_MAX 1000

/* Creates a handle for a set of locks taken and given back together:
 * paths[i] with kinds[i] (ZKL_KIND_MUTEX, _READ or _WRITE; kinds NULL:
 * all mutexes), n >= 1. Paths named twice are folded (a read and a
 * write of one path fold into the write). Each member is an ordinary
 * lock on its path, so it excludes single-lock holders of that path,
 * Curator's included.
 *
 * Deadlock-free whatever order callers name the paths in: members are
 * taken in one order (paths by strcmp()) and an acquire only ever waits
 * while holding a prefix of that order. It sends the creates of all the
 * members it does not hold at once (a free set costs about one round
 * trip); when one must wait, it keeps the members before it, gives back
 * those after it, waits there, and then sends the creates of the rest
 * at once again.
 * Owner: the caller, freed by zkl_multi_free(); paths are copied.
 * Errors: ZKL_EINVAL (NULL out, c, paths or cb, n == 0 or above
 * ZKL_MULTI_MAX, an unknown kind, one path with a mutex and a read or
 * write kind), ZKL_EBADPATH, ZKL_ENOMEM, ZKL_ECLOSED. */
ZKL_EXTERN int zkl_multi_new(zkl_multi_t **out, zkl_client_t *c,
                             const char *const *paths,
                             const zkl_lock_kind_t *kinds, size_t n,
                             zkl_multi_cb cb, void *arg);
/* Frees the handle: a pending acquire is cancelled and held members
 * released, silently (their nodes are deleted in the background). Safe
 * inside the handle's own callback. NULL is ignored. */
ZKL_EXTERN void zkl_multi_free(zkl_multi_t *m);
/* Acquires every member, all or nothing, with one deadline (timeout_ms
 * as zkl_lock_acquire(); 0 tries each once and answers ZKL_ELOCKED if
 * any is taken). Callback: exactly one ACQUIRED or FAILED.
 * Errors: ZKL_EINVAL, ZKL_EHELD, ZKL_EBUSY (acquire or release pending,
 * or the set is known lost and its LOST not yet told), ZKL_ECLOSED,
 * ZKL_ENOMEM, ZKL_EAUTH. */
ZKL_EXTERN int zkl_multi_acquire(zkl_multi_t *m, long timeout_ms);
/* Cancels a pending acquire: FAILED / ZKL_ECANCELED from the loop; the
 * members already held are given back in the background.
 * Errors: ZKL_EINVAL, ZKL_ENOTPENDING, ZKL_ECLOSED. */
ZKL_EXTERN int zkl_multi_cancel(zkl_multi_t *m);
/* Releases every member (after LOST: those still held). Callback:
 * exactly one RELEASED. Errors: ZKL_EINVAL, ZKL_ENOTHELD (neither held
 * nor lost with members kept; also while the set is known lost and its
 * LOST not yet told: release after it), ZKL_ECLOSED. */
ZKL_EXTERN int zkl_multi_release(zkl_multi_t *m);
/* 1 from the grant of the whole set (its ACQUIRED queued) until
 * zkl_multi_release() or the moment any member's hold is known over,
 * else 0: 1 only while every member's zkl_lock_is_held() is. As for a
 * lock, it can read 0 inside an ACQUIRED told late, its LOST following. */
ZKL_EXTERN int zkl_multi_is_held(const zkl_multi_t *m);
/* Members after folding (0 for NULL). */
ZKL_EXTERN size_t zkl_multi_size(const zkl_multi_t *m);
/* Member i (0 .. size-1) in the order they are taken, for its path,
 * kind, token and node name (borrowed, valid until zkl_multi_free();
 * NULL when i is out of range). For reading only: acquire, cancel,
 * release and free the set, never a member. */
ZKL_EXTERN const zkl_lock_t *zkl_multi_lock(const zkl_multi_t *m,
                                            size_t i);
/* As zkl_lock_write(), guarded by every member's node at once.
 * Errors: as zkl_lock_write() (ZKL_ENOTHELD: the set is not held). */
ZKL_EXTERN int zkl_multi_write(zkl_multi_t *m, const zkl_op_t *ops,
                               size_t n, zkl_write_cb cb, void *arg);

/* ------------------------------------------------------------------ */
/* Revocation                                                          */
/* ------------------------------------------------------------------ */

/* status: 0 when the request was written to n nodes (0 when nobody held
 * or the holders went first), else as zkl_contenders_cb. */
typedef void (*zkl_revoke_cb)(zkl_client_t *c, int status, size_t n,
                              void *arg);

/* Asks for a lock to be let go, as Curator's Revoker does: writes
 * "__REVOKE__" into lock nodes under path (a mutex's or a read/write
 * lock's): into node (a child name) when given, else into every node
 * that holds now (the first mutex or write node, or the read nodes
 * before the first write node). A revocable holder, zklock's
 * (ZKL_LOCK_REVOKE_REQUESTED) or Curator's (its RevocationListener),
 * is told; others never notice. A node that is gone is skipped.
 * Callback: exactly once, from the loop. Errors: ZKL_EINVAL (NULL c, cb
 * or path, a node name with a '/'), ZKL_EBADPATH, ZKL_ENOMEM,
 * ZKL_ECLOSED, ZKL_ESESSION (the session is gone), ZKL_EAUTH. */
ZKL_EXTERN int zkl_revoke(zkl_client_t *c, const char *path,
                          const char *node, zkl_revoke_cb cb, void *arg);

#ifdef __cplusplus
}
#endif
#endif /* ZKLOCK_H */
