/* What the files of ngx_http_zklock_module share: the configurations,
 * the per-request lock record and the worker's client. The module:
 *
 *   ngx_http_zklock_module.c     directives, configuration, the worker's
 *                                client (init_process / exit_process)
 *   ngx_http_zklock_request.c    a request's lock: the phase handler,
 *                                the lock's callbacks, resume and abort,
 *                                the release at the request's end
 *   ngx_http_zklock_cache.c      is a cache entry fresh (no fetch to
 *                                serialize)?
 *   ngx_http_zklock_group.c      a worker's requests for one cache lock
 *                                key: one asks ZooKeeper, the rest wait
 *                                for it
 *   ngx_http_zklock_variables.c  $zklock_status, $zklock_wait_ms,
 *                                $zklock_token
 *   ngx_http_zklock_status.c     the zklock_status location, and the
 *                                allocator that counts zklock's memory
 *
 * Every request record lives in its request's pool and is found through
 * the pool's cleanup list, so it survives internal redirects (which
 * clear the modules' request contexts) and goes with the request. */
#ifndef NGX_HTTP_ZKLOCK_H
#define NGX_HTTP_ZKLOCK_H

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>
#include <ngx_http.h>

#include <zklock.h>

/* zklock_unavailable */
#define NGX_HTTP_ZKLOCK_FAIL_CLOSED 0
#define NGX_HTTP_ZKLOCK_FAIL_OPEN 1

/* on_timeout= */
#define NGX_HTTP_ZKLOCK_TIMEOUT_503 0
#define NGX_HTTP_ZKLOCK_TIMEOUT_PASS 1

typedef struct {
    ngx_str_t servers;          /* zklock_servers; empty: module off */
    ngx_msec_t session_timeout; /* zklock_session_timeout */
    ngx_int_t sessions;         /* zklock_sessions: clients per worker */
    /* zklock_tls and zklock_sasl: NUL-terminated strings from the
     * configuration's pool (data NULL: not given); the secrets, read
     * from their files by the master, are wiped when the pool goes. */
    ngx_str_t tls_ca, tls_cert, tls_key, tls_key_password;
    ngx_str_t sasl_user, sasl_password, sasl_mechanism, sasl_service,
        sasl_host;
} ngx_http_zklock_main_conf_t;

/* What one location asks: at most one lock per request. */
typedef struct {
    ngx_http_complex_value_t *key; /* zklock or zklock_cache_lock KEY */
    ngx_uint_t cache;              /* 1: zklock_cache_lock */
    ngx_uint_t shared;             /* the read side (zklock ... shared) */
    ngx_msec_t timeout;
    ngx_uint_t on_timeout;         /* NGX_HTTP_ZKLOCK_TIMEOUT_* */
    ngx_shm_zone_t *zone;          /* zklock_cache_lock zone=NAME */
    ngx_str_t prefix;              /* zklock_prefix */
    ngx_uint_t unavailable;        /* NGX_HTTP_ZKLOCK_FAIL_* */
    ngx_flag_t set;                /* key/cache/... came from this level */
} ngx_http_zklock_loc_conf_t;

/* Where a request's lock is; $zklock_status names it. */
typedef enum {
    NGX_HTTP_ZKLOCK_NONE = 0,   /* no lock asked */
    NGX_HTTP_ZKLOCK_WAITING,    /* acquire sent */
    NGX_HTTP_ZKLOCK_GRANTED,    /* granted; the request resumes soon */
    NGX_HTTP_ZKLOCK_HELD,       /* the request runs holding it */
    NGX_HTTP_ZKLOCK_FAILED,     /* the acquire ended without it */
    NGX_HTTP_ZKLOCK_LOST,       /* a hold ended under the request */
    NGX_HTTP_ZKLOCK_PASSED,     /* runs without it (fail_open, pass) */
    NGX_HTTP_ZKLOCK_FRESH,      /* cache entry fresh: no lock needed */
    NGX_HTTP_ZKLOCK_REFUSED     /* answered with an error status */
} ngx_http_zklock_phase_e;

typedef struct {
    ngx_http_request_t *r;
    zkl_lock_t *lk;           /* NULL once freed */
    ngx_str_t path;           /* the lock's path (the request's pool) */
    void *group;              /* its cache lock group, if in one */
    ngx_queue_t link;         /* in the group, while a follower */
    ngx_event_t ev;           /* posted to resume or abort the request;
                                 a timer meanwhile (a backstop for a
                                 worker told to quit) */
    ngx_msec_t started;
    ngx_msec_t waited;
    uint64_t token;
    int err;                  /* zklock's code of a failed acquire */
    unsigned phase:4;         /* ngx_http_zklock_phase_e */
    unsigned why:3;           /* the reason a request passed or refused */
    unsigned has_token:1;
    unsigned counted:2;       /* in ngx_http_zklock_waiting (1) or
                                 ngx_http_zklock_holding (2) */
    unsigned answered:1;      /* the response is out: release once the
                                 request is done (ngx_http_zklock_request.c) */
    unsigned resuming:1;      /* zn_event resumes the phases: the handler's
                                 next run keeps the decision just made */
    unsigned began:1;         /* started is set: the wait began */
    unsigned follower:1;      /* waits for its group's leader (in the
                                 group, or woken with group NULL) */
} ngx_http_zklock_req_t;

/* Requests of this worker waiting for a lock, and running under one. */
extern ngx_uint_t ngx_http_zklock_waiting, ngx_http_zklock_holding;

/* Why a request runs without the lock or was refused (for the log and
 * $zklock_status). */
#define NGX_HTTP_ZKLOCK_WHY_NONE 0
#define NGX_HTTP_ZKLOCK_WHY_TIMEOUT 1
#define NGX_HTTP_ZKLOCK_WHY_UNAVAILABLE 2
#define NGX_HTTP_ZKLOCK_WHY_ERROR 3

extern ngx_module_t ngx_http_zklock_module;
/* Whose zone proxy_cache_path makes, whose location configuration
 * zklock_cache_lock reads (ngx_http_zklock_cache.c). */
extern ngx_module_t ngx_http_proxy_module;

/* The worker's client for a lock path (NULL outside workers, or with no
 * zklock_servers; path NULL: the first); whether a client has ever been
 * connected; all of them (their number). */
zkl_client_t *ngx_http_zklock_client(ngx_str_t *path);
ngx_uint_t ngx_http_zklock_ever_connected(zkl_client_t *c);
ngx_uint_t ngx_http_zklock_clients(zkl_client_t ***clients);

ngx_int_t ngx_http_zklock_handler(ngx_http_request_t *r);
ngx_int_t ngx_http_zklock_init_filter(void);
ngx_http_zklock_req_t *ngx_http_zklock_find(ngx_http_request_t *r);
ngx_int_t ngx_http_zklock_lock_path(ngx_http_request_t *r,
                                    ngx_http_zklock_loc_conf_t *lcf,
                                    ngx_str_t *key, ngx_str_t *path);
ngx_int_t ngx_http_zklock_cache_fresh(ngx_http_request_t *r,
                                      ngx_http_zklock_loc_conf_t *lcf,
                                      ngx_str_t *key);
/* Joins st to the group of st->path: NGX_OK makes it the leader (it
 * asks ZooKeeper), NGX_AGAIN a follower (its event is posted when the
 * leader lets go), NGX_ERROR means no memory (it goes alone). Leaving
 * is idempotent; a leader's leaving wakes every follower. */
ngx_int_t ngx_http_zklock_group_join(ngx_http_zklock_req_t *st,
                                     ngx_log_t *log);
void ngx_http_zklock_group_leave(ngx_http_zklock_req_t *st);
ngx_int_t ngx_http_zklock_add_variables(ngx_conf_t *cf);
char *ngx_http_zklock_status(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
void ngx_http_zklock_count_memory(void);

#endif
