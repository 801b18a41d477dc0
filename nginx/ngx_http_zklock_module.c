/* ngx_http_zklock_module: its directives and configurations, and the one
 * zklock client each worker process runs on its own event loop (made in
 * init_process, freed in exit_process, which closes the session so that
 * the worker's lock nodes go at once). See README.md, "nginx". */
#include "ngx_http_zklock.h"

#include <zklock_nginx.h>

#include <grp.h>
#include <pwd.h>
#include <sys/wait.h>

static ngx_int_t zn_postconfiguration(ngx_conf_t *cf);
static void *zn_create_main_conf(ngx_conf_t *cf);
static char *zn_init_main_conf(ngx_conf_t *cf, void *conf);
static void *zn_create_loc_conf(ngx_conf_t *cf);
static char *zn_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child);
static char *zn_servers(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *zn_lock(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *zn_prefix(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *zn_tls(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *zn_sasl(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static ngx_int_t zn_init_process(ngx_cycle_t *cycle);
static void zn_exit_process(ngx_cycle_t *cycle);

static ngx_conf_enum_t zn_unavailable_modes[] = {
    {ngx_string("fail_closed"), NGX_HTTP_ZKLOCK_FAIL_CLOSED},
    {ngx_string("fail_open"), NGX_HTTP_ZKLOCK_FAIL_OPEN},
    {ngx_null_string, 0}};

static ngx_command_t zn_commands[] = {
    {ngx_string("zklock_servers"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1,
     zn_servers, NGX_HTTP_MAIN_CONF_OFFSET, 0, NULL},
    {ngx_string("zklock_session_timeout"),
     NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, ngx_conf_set_msec_slot,
     NGX_HTTP_MAIN_CONF_OFFSET,
     offsetof(ngx_http_zklock_main_conf_t, session_timeout), NULL},
    {ngx_string("zklock_sessions"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1,
     ngx_conf_set_num_slot, NGX_HTTP_MAIN_CONF_OFFSET,
     offsetof(ngx_http_zklock_main_conf_t, sessions), NULL},
    {ngx_string("zklock_tls"),
     NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE3 | NGX_CONF_TAKE4, zn_tls,
     NGX_HTTP_MAIN_CONF_OFFSET, 0, NULL},
    {ngx_string("zklock_sasl"), NGX_HTTP_MAIN_CONF | NGX_CONF_1MORE,
     zn_sasl, NGX_HTTP_MAIN_CONF_OFFSET, 0, NULL},
    {ngx_string("zklock"),
     NGX_HTTP_LOC_CONF | NGX_HTTP_LIF_CONF | NGX_CONF_1MORE, zn_lock,
     NGX_HTTP_LOC_CONF_OFFSET, 0, NULL},
    {ngx_string("zklock_cache_lock"),
     NGX_HTTP_LOC_CONF | NGX_HTTP_LIF_CONF | NGX_CONF_1MORE, zn_lock,
     NGX_HTTP_LOC_CONF_OFFSET, 1, NULL},
    {ngx_string("zklock_prefix"),
     NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF |
         NGX_CONF_TAKE1,
     zn_prefix, NGX_HTTP_LOC_CONF_OFFSET, 0, NULL},
    {ngx_string("zklock_status"), NGX_HTTP_LOC_CONF | NGX_CONF_NOARGS,
     ngx_http_zklock_status, 0, 0, NULL},
    {ngx_string("zklock_unavailable"),
     NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF |
         NGX_CONF_TAKE1,
     ngx_conf_set_enum_slot, NGX_HTTP_LOC_CONF_OFFSET,
     offsetof(ngx_http_zklock_loc_conf_t, unavailable),
     zn_unavailable_modes},
    ngx_null_command};

static ngx_http_module_t zn_ctx = {
    NULL,                 /* preconfiguration */
    zn_postconfiguration, /* postconfiguration */
    zn_create_main_conf,  /* create main configuration */
    zn_init_main_conf,    /* init main configuration */
    NULL,                 /* create server configuration */
    NULL,                 /* merge server configuration */
    zn_create_loc_conf,   /* create location configuration */
    zn_merge_loc_conf     /* merge location configuration */
};

ngx_module_t ngx_http_zklock_module = {
    NGX_MODULE_V1,
    &zn_ctx,         /* module context */
    zn_commands,     /* module directives */
    NGX_HTTP_MODULE, /* module type */
    NULL,            /* init master */
    NULL,            /* init module */
    zn_init_process, /* init process */
    NULL,            /* init thread */
    NULL,            /* exit thread */
    zn_exit_process, /* exit process */
    NULL,            /* exit master */
    NGX_MODULE_V1_PADDING};

/* ---- the worker's clients ---- */

/* zklock_sessions of them, each its own session and socket: ZooKeeper
 * answers one session's requests in order, one after another, so one
 * session caps a worker's lock rate (bench/nginx measures the server's
 * ceiling over 1, 2 and 4). A lock path always goes to one client (by
 * its hash), so a key's waiters of this worker share a session. The
 * arrays are the worker's (ngx_alloc), freed in exit_process. */
static zkl_client_t **zn_clients;
static u_char *zn_connected_once; /* per client */
static ngx_uint_t zn_nclients;
/* A client that ended (ZKL_CONN_AUTH_FAILED: a TLS handshake that failed
 * for good, an identity refused) is made anew after 1 s, then 2, 4, ...
 * at most a minute: a certificate renewal caught halfway, or a password
 * changed on the servers before here, heals without a reload. From a
 * timer, not from the ended client's own callback. Per client; the
 * options, the worker's, are kept for it. */
static ngx_event_t *zn_revive;
static ngx_msec_t *zn_backoff;
static zkl_options_t *zn_options;
#define ZN_REVIVE_FIRST_MS 1000
#define ZN_REVIVE_MOST_MS 60000

zkl_client_t *ngx_http_zklock_client(ngx_str_t *path)
{
    if (zn_nclients == 0)
        return NULL;
    if (zn_nclients == 1 || path == NULL)
        return zn_clients[0];
    return zn_clients[ngx_crc32_short(path->data, path->len) % zn_nclients];
}

ngx_uint_t ngx_http_zklock_clients(zkl_client_t ***clients)
{
    *clients = zn_clients;
    return zn_nclients;
}

/* c's place in zn_clients; zn_nclients when it is none of them (a client
 * already replaced by a new one). */
static ngx_uint_t zn_index_of(zkl_client_t *c)
{
    ngx_uint_t i;

    for (i = 0; i < zn_nclients && zn_clients[i] != c; i++)
        ;
    return i;
}

ngx_uint_t ngx_http_zklock_ever_connected(zkl_client_t *c)
{
    ngx_uint_t i = zn_index_of(c);

    return i < zn_nclients ? zn_connected_once[i] : 0;
}

/* The next try of client i, backoff plus up to half of it again: the
 * sessions of every worker, ended together (a password changed on the
 * servers), do not all come back in the same second. */
static void zn_revive_later(ngx_uint_t i)
{
    ngx_msec_t b = zn_backoff[i];

    ngx_add_timer(&zn_revive[i], b + (ngx_msec_t)ngx_random() % (b / 2 + 1));
    zn_backoff[i] = ngx_min(2 * b, ZN_REVIVE_MOST_MS);
}

/* A server list of host names is resolved again here, blocking the
 * worker while DNS answers (zkl_client_new(): the ZooKeeper client's
 * lookup): IP literals, as docs/nginx.md asks for, cost nothing. */
static void zn_revive_now(ngx_event_t *ev)
{
    ngx_uint_t i = (ngx_uint_t)(uintptr_t)ev->data;
    zkl_client_t *old = zn_clients[i], *c = NULL;
    int rc;

    if ((rc = zkl_client_new(&c, zn_options)) != ZKL_OK ||
        (rc = zkl_nginx_attach(c, ev->log)) != ZKL_OK) {
        zkl_client_free(c);
        ngx_log_error(NGX_LOG_ERR, ev->log, 0,
                      "zklock: no new client: %s (again in %M ms or so)",
                      zkl_strerror(rc), zn_backoff[i]);
        zn_revive_later(i);
        return;
    }
    /* The new one first: whatever the old one's end still tells (each
     * call of it answers ZKL_ECLOSED from now on) may start anew. Until
     * it connects, requests are answered at once, as the ended one
     * answered them (zn_connected_once stays as it was: a worker that
     * had connected is past its start). */
    zn_clients[i] = c;
    ngx_log_error(NGX_LOG_NOTICE, ev->log, 0,
                  "zklock: a new session in place of the one that ended");
    zkl_client_free(old);
}

static void zn_on_conn(zkl_client_t *c, zkl_conn_event_t ev, void *arg)
{
    ngx_log_t *log = arg;
    char server[64] = "";
    ngx_uint_t i = zn_index_of(c);

    if (ev == ZKL_CONN_AUTH_FAILED && i < zn_nclients &&
        !zn_revive[i].timer_set) {
        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "zklock: the session ended for good: a new one in "
                      "%M ms or so", zn_backoff[i]);
        zn_revive_later(i);
    }
    switch (ev) {
    case ZKL_CONN_CONNECTED:
    case ZKL_CONN_RECONNECTED:
        if (i < zn_nclients) {
            zn_connected_once[i] = 1;
            zn_backoff[i] = ZN_REVIVE_FIRST_MS;
        }
        (void)zkl_client_server(c, server, sizeof server);
        ngx_log_error(NGX_LOG_INFO, log, 0, "zklock: %s to %s",
                      zkl_conn_event_name(ev), server);
        break;
    default: {
        /* (ngx_log_error's level is a macro argument used unbracketed) */
        ngx_uint_t lv = ev == ZKL_CONN_SUSPENDED ? NGX_LOG_WARN : NGX_LOG_ERR;

        ngx_log_error(lv, log, 0, "zklock: %s", zkl_conn_event_name(ev));
        break;
    }
    }
}

/* zklock's log and the ZooKeeper client's, into the worker's error log
 * (zkl_set_log is process-wide: one worker, one log). */
static void zn_on_log(zkl_log_level_t level, const char *msg, void *arg)
{
    ngx_cycle_t *cycle = arg;
    ngx_uint_t lv = level == ZKL_LOG_ERROR ? NGX_LOG_ERR
                    : level == ZKL_LOG_WARN ? NGX_LOG_WARN
                                            : NGX_LOG_INFO;

    ngx_log_error(lv, cycle->log, 0, "%s", msg);
}

static void zn_free_clients(void)
{
    ngx_uint_t i;

    for (i = 0; i < zn_nclients; i++) {
        if (zn_revive[i].timer_set)
            ngx_del_timer(&zn_revive[i]);
        zkl_client_free(zn_clients[i]);
    }
    ngx_free(zn_clients);
    ngx_free(zn_connected_once);
    ngx_free(zn_revive);
    ngx_free(zn_backoff);
    zkl_options_free(zn_options);
    zn_clients = NULL;
    zn_connected_once = NULL;
    zn_revive = NULL;
    zn_backoff = NULL;
    zn_options = NULL;
    zn_nclients = 0;
}

/* zklock_tls's or zklock_sasl's settings into o: at configuration time
 * (into options made only for that) so that nginx -t refuses what the
 * workers' clients would, and in each worker. */
static int zn_set_secure(zkl_options_t *o,
                         const ngx_http_zklock_main_conf_t *mcf)
{
    if (mcf->tls_ca.data != NULL)
        return zkl_options_set_tls(o, (char *)mcf->tls_ca.data,
                                   (char *)mcf->tls_cert.data,
                                   (char *)mcf->tls_key.data,
                                   (char *)mcf->tls_key_password.data);
    if (mcf->sasl_user.data != NULL)
        return zkl_options_set_sasl(o, (char *)mcf->sasl_mechanism.data,
                                    (char *)mcf->sasl_user.data,
                                    (char *)mcf->sasl_password.data,
                                    (char *)mcf->sasl_service.data,
                                    (char *)mcf->sasl_host.data);
    return ZKL_OK;
}

static char *zn_check_secure(ngx_conf_t *cf, const char *directive,
                             const ngx_http_zklock_main_conf_t *mcf)
{
    zkl_options_t *o = NULL;
    int rc;

    if ((rc = zkl_options_new(&o)) == ZKL_OK)
        rc = zn_set_secure(o, mcf);
    zkl_options_free(o);
    if (rc != ZKL_OK) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%s: %s", directive,
                           zkl_strerror(rc));
        return NGX_CONF_ERROR;
    }
    return NGX_CONF_OK;
}

static ngx_int_t zn_init_process(ngx_cycle_t *cycle)
{
    ngx_http_zklock_main_conf_t *mcf;
    zkl_options_t *o = NULL;
    zkl_client_t *c = NULL;
    ngx_uint_t n, i;
    char *hosts;
    int rc;

    if (ngx_process != NGX_PROCESS_WORKER &&
        ngx_process != NGX_PROCESS_SINGLE)
        return NGX_OK;
    mcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_zklock_module);
    if (mcf == NULL || mcf->servers.len == 0)
        return NGX_OK;
    hosts = (char *)mcf->servers.data; /* NUL-terminated: zn_servers */
    n = (ngx_uint_t)mcf->sessions;
    zn_clients = ngx_alloc(n * sizeof *zn_clients, cycle->log);
    zn_connected_once = ngx_calloc(n, cycle->log);
    zn_revive = ngx_calloc(n * sizeof *zn_revive, cycle->log);
    zn_backoff = ngx_alloc(n * sizeof *zn_backoff, cycle->log);
    if (zn_clients == NULL || zn_connected_once == NULL ||
        zn_revive == NULL || zn_backoff == NULL) {
        zn_free_clients();
        return NGX_ERROR;
    }
    for (i = 0; i < n; i++) {
        zn_revive[i].handler = zn_revive_now;
        zn_revive[i].data = (void *)(uintptr_t)i;
        zn_revive[i].log = cycle->log;
        zn_revive[i].cancelable = 1; /* a worker's exit does not wait */
        zn_backoff[i] = ZN_REVIVE_FIRST_MS;
    }
    ngx_http_zklock_count_memory(); /* before any zklock object */
    zkl_set_log(zn_on_log, cycle, ZKL_LOG_WARN);
    if ((rc = zkl_options_new(&o)) != ZKL_OK ||
        (rc = zkl_options_set_servers(o, hosts)) != ZKL_OK ||
        (rc = zkl_options_set_session_timeout(
             o, (int)mcf->session_timeout)) != ZKL_OK ||
        (rc = zkl_options_set_conn_cb(o, zn_on_conn, cycle->log)) != ZKL_OK)
        goto failed;
    if ((rc = zn_set_secure(o, mcf)) != ZKL_OK)
        goto failed;
    while (zn_nclients < n) {
        c = NULL;
        if ((rc = zkl_client_new(&c, o)) != ZKL_OK ||
            (rc = zkl_nginx_attach(c, cycle->log)) != ZKL_OK)
            goto failed;
        zn_clients[zn_nclients++] = c;
    }
    zn_options = o;
    return NGX_OK;
failed:
    ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                  "zklock: no client for \"%s\": %s", hosts,
                  zkl_strerror(rc));
    zkl_client_free(c);
    zkl_options_free(o);
    zn_free_clients();
    return NGX_ERROR;
}

/* Closes the sessions: the nodes of whatever this worker still held or
 * waited for go at once (requests still running when a worker exits
 * were cut off by nginx itself). */
static void zn_exit_process(ngx_cycle_t *cycle)
{
    (void)cycle;
    zn_free_clients();
    zkl_set_log(NULL, NULL, ZKL_LOG_ERROR);
}

/* ---- configuration ---- */

static void *zn_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_zklock_main_conf_t *mcf = ngx_pcalloc(cf->pool, sizeof *mcf);

    if (mcf == NULL)
        return NULL;
    mcf->session_timeout = NGX_CONF_UNSET_MSEC;
    mcf->sessions = NGX_CONF_UNSET;
    return mcf;
}

/* The TLS files are read by the workers, at each connection, as nginx's
 * "user": a file only the master can read would pass every check made
 * here and fail in each worker, leaving it without locks. So a child
 * takes on the workers' user (as the master, root, does for them) and
 * tries. Here, not in init_module, whose failure ends the master on a
 * reload: a refused configuration leaves the running one in place. The
 * user is the one "user" named before the http block, or nginx's
 * default for a root master (a "user" placed after it is not known
 * yet). */
static char *zn_workers_read(ngx_conf_t *cf,
                             const ngx_http_zklock_main_conf_t *mcf)
{
    const ngx_str_t *files[3] = {&mcf->tls_ca, &mcf->tls_cert,
                                 &mcf->tls_key};
    ngx_core_conf_t *ccf;
    const char *user;
    struct passwd *pw;
    struct group *gr;
    sigset_t chld, old;
    uid_t uid;
    gid_t gid;
    pid_t pid;
    int st = 0;

    if (geteuid() != 0 || ngx_process == NGX_PROCESS_SIGNALLER)
        return NGX_CONF_OK; /* the master's user; or "nginx -s" */
    ccf = (ngx_core_conf_t *)ngx_get_conf(cf->cycle->conf_ctx,
                                          ngx_core_module);
    if (ccf->master == 0)
        return NGX_CONF_OK; /* one process, which keeps its user */
    if (ccf->user != (ngx_uid_t)NGX_CONF_UNSET_UINT) {
        user = ccf->username;
        uid = ccf->user;
        gid = ccf->group;
    } else {
        if ((pw = getpwnam(NGX_USER)) == NULL ||
            (gr = getgrnam(NGX_GROUP)) == NULL)
            return NGX_CONF_OK; /* nginx itself will say so */
        user = NGX_USER;
        uid = pw->pw_uid;
        gid = gr->gr_gid;
    }
    if (uid == 0)
        return NGX_CONF_OK;
    /* A reloading master reaps its children from its SIGCHLD handler:
     * held back, so that this child's status is ours to read. */
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &old);
    if ((pid = fork()) == -1) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno, "zklock_tls: fork");
        return NGX_CONF_ERROR;
    }
    if (pid == 0) {
        int i;

        sigprocmask(SIG_SETMASK, &old, NULL);
        if (setgid(gid) == -1 || initgroups(user, gid) == -1 ||
            setuid(uid) == -1)
            _exit(10);
        for (i = 0; i < 3; i++)
            if (access((const char *)files[i]->data, R_OK) != 0)
                _exit(1 + i);
        _exit(0);
    }
    while (waitpid(pid, &st, 0) == -1 && ngx_errno == NGX_EINTR)
        ;
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (WIFEXITED(st) && WEXITSTATUS(st) >= 1 && WEXITSTATUS(st) <= 3) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "zklock_tls: nginx's workers (user \"%s\") "
                           "cannot read \"%V\", which they read at each "
                           "connection",
                           user, files[WEXITSTATUS(st) - 1]);
        return NGX_CONF_ERROR;
    }
    return NGX_CONF_OK;
}

static char *zn_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_http_zklock_main_conf_t *mcf = conf;

    (void)cf;
    ngx_conf_init_msec_value(mcf->session_timeout, 10000);
    if (mcf->session_timeout < 1000 || mcf->session_timeout > 3600000) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "zklock_session_timeout: between 1s and 1h");
        return NGX_CONF_ERROR;
    }
    if (mcf->servers.len == 0 &&
        (mcf->tls_ca.data != NULL || mcf->sasl_user.data != NULL)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "%s without zklock_servers",
                           mcf->tls_ca.data != NULL ? "zklock_tls"
                                                    : "zklock_sasl");
        return NGX_CONF_ERROR;
    }
    if (mcf->tls_ca.data != NULL && zn_workers_read(cf, mcf) != NGX_CONF_OK)
        return NGX_CONF_ERROR;
    ngx_conf_init_value(mcf->sessions, 1);
    if (mcf->sessions < 1 || mcf->sessions > 64) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "zklock_sessions: between 1 and 64");
        return NGX_CONF_ERROR;
    }
    return NGX_CONF_OK;
}

/* A directive's argument as a C string (zklock takes those), from the
 * configuration's pool; NULL when out of memory. */
static char *zn_cstr(ngx_conf_t *cf, const ngx_str_t *v)
{
    char *p = ngx_pcalloc(cf->pool, v->len + 1);

    if (p != NULL)
        ngx_memcpy(p, v->data, v->len);
    return p;
}

static char *zn_servers(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_zklock_main_conf_t *mcf = conf;
    ngx_str_t *value = cf->args->elts;
    char why[256], *hosts;

    (void)cmd;
    if (mcf->servers.data != NULL)
        return "is duplicate";
    if ((hosts = zn_cstr(cf, &value[1])) == NULL)
        return NGX_CONF_ERROR;
    if (zkl_servers_explain(hosts, why, sizeof why) != ZKL_OK) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "zklock_servers \"%V\": %s",
                           &value[1], why);
        return NGX_CONF_ERROR;
    }
    /* Kept NUL-terminated, for the workers' zkl_options_set_servers(). */
    mcf->servers.data = (u_char *)hosts;
    mcf->servers.len = value[1].len;
    return NGX_CONF_OK;
}

/* ---- zklock_tls and zklock_sasl ---- */

/* A file named in a directive, relative to nginx's configuration prefix,
 * as a NUL-terminated string; it must be readable now. The ZooKeeper
 * client reads the TLS files again at every connection, in the worker:
 * they must be readable by the worker's user too (nginx's "user"). */
static char *zn_file(ngx_conf_t *cf, const char *directive, ngx_str_t *name,
                     ngx_str_t *out)
{
    ngx_str_t full = *name;
    ngx_file_info_t fi;

    if (full.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%s: an empty file name",
                           directive);
        return NGX_CONF_ERROR;
    }
    if (ngx_conf_full_name(cf->cycle, &full, 1) != NGX_OK)
        return NGX_CONF_ERROR;
    if ((out->data = (u_char *)zn_cstr(cf, &full)) == NULL)
        return NGX_CONF_ERROR;
    out->len = full.len;
    if (access((char *)out->data, R_OK) != 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           "%s: cannot read \"%V\"", directive, &full);
        return NGX_CONF_ERROR;
    }
    if (ngx_file_info(out->data, &fi) == NGX_FILE_ERROR ||
        !ngx_is_file(&fi)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "%s: \"%V\" is not a file", directive, &full);
        return NGX_CONF_ERROR;
    }
    return NGX_CONF_OK;
}

static void zn_wipe(void *data)
{
    ngx_str_t *secret = data;

    if (secret->data != NULL)
        ngx_explicit_memzero(secret->data, secret->len);
}

/* A secret's file (a password, a key's passphrase): its first line,
 * read now by the master (it may be readable by root only), kept in the
 * configuration's pool and wiped when the pool is destroyed. */
static char *zn_secret(ngx_conf_t *cf, const char *directive,
                       ngx_str_t *name, ngx_str_t *out)
{
    ngx_pool_cleanup_t *cln;
    ngx_file_info_t fi;
    ngx_str_t path;
    ngx_fd_t fd;
    ssize_t n;
    u_char *buf;

    if (zn_file(cf, directive, name, &path) != NGX_CONF_OK)
        return NGX_CONF_ERROR;
    if ((buf = ngx_pcalloc(cf->pool, 1026)) == NULL ||
        (cln = ngx_pool_cleanup_add(cf->pool, 0)) == NULL)
        return NGX_CONF_ERROR;
    out->data = buf;
    out->len = 1026;
    cln->handler = zn_wipe;
    cln->data = out;
    fd = ngx_open_file(path.data, NGX_FILE_RDONLY, NGX_FILE_OPEN, 0);
    if (fd == NGX_INVALID_FILE) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           "%s: cannot open \"%V\"", directive, &path);
        return NGX_CONF_ERROR;
    }
    if (ngx_fd_info(fd, &fi) == NGX_FILE_ERROR ||
        (fi.st_mode & (S_IROTH | S_IWOTH)) != 0) {
        /* As the zklock CLI refuses such a file. */
        ngx_close_file(fd);
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "%s: others may read or write \"%V\" "
                           "(chmod o-rw)", directive, &path);
        return NGX_CONF_ERROR;
    }
    n = read(fd, buf, 1025);
    ngx_close_file(fd);
    if (n < 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           "%s: cannot read \"%V\"", directive, &path);
        return NGX_CONF_ERROR;
    }
    buf[n] = '\0';
    /* The first line, without its end (LF or CRLF): "echo secret >
     * file" works. Never cut short: a cut password would be refused
     * later, as a wrong one. */
    n = (ssize_t)strcspn((char *)buf, "\r\n");
    if (n > 1023) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "%s: the first line of \"%V\" is longer "
                           "than 1023 bytes", directive, &path);
        return NGX_CONF_ERROR;
    }
    buf[n] = '\0';
    if (buf[0] == '\0') {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%s: \"%V\" is empty",
                           directive, &path);
        return NGX_CONF_ERROR;
    }
    return NGX_CONF_OK;
}

/* NAME=VALUE among a directive's arguments: VALUE (NUL-terminated) in
 * *out, 1; 0 when the argument is not NAME=. */
static ngx_int_t zn_param(ngx_conf_t *cf, ngx_str_t *arg, const char *name,
                          ngx_str_t *out)
{
    size_t len = ngx_strlen(name);

    if (arg->len < len + 1 || ngx_strncmp(arg->data, name, len) != 0 ||
        arg->data[len] != '=')
        return 0;
    if (arg->len == len + 1) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%V: an empty %s=",
                           &((ngx_str_t *)cf->args->elts)[0], name);
        return -1;
    }
    if (out->data != NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%V: %s= given twice",
                           &((ngx_str_t *)cf->args->elts)[0], name);
        return -1;
    }
    out->len = arg->len - len - 1;
    out->data = (u_char *)zn_cstr(cf, &(ngx_str_t){out->len,
                                                   arg->data + len + 1});
    return out->data != NULL ? 1 : -1;
}

/* An argument zklock_tls or zklock_sasl does not take, named up to its
 * '=' only: what follows may be a secret given in the wrong place
 * ("password=..."), which must not reach a log. */
static char *zn_unknown(ngx_conf_t *cf, ngx_str_t *arg)
{
    ngx_str_t *value = cf->args->elts;
    u_char *eq = ngx_strlchr(arg->data, arg->data + arg->len, '=');
    ngx_str_t name = {eq != NULL ? (size_t)(eq - arg->data) : 0,
                      arg->data};

    if (eq == NULL) /* a bare word may be the secret itself */
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "%V: unknown argument %ui (not shown)",
                           &value[0], (ngx_uint_t)(arg - value));
    else
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "%V: unknown parameter \"%V=...\"", &value[0],
                           &name);
    return NGX_CONF_ERROR;
}

static char *zn_no_feature(ngx_conf_t *cf, const char *directive,
                           const char *what)
{
    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "%s: the ZooKeeper C client this module is linked "
                       "with has no %s (Debian's has neither TLS nor SASL; "
                       "deps/build-zookeeper-client.sh --install builds one "
                       "that has both)",
                       directive, what);
    return NGX_CONF_ERROR;
}

/* zklock_tls CA CERT KEY [key_password_file=FILE]; */
static char *zn_tls(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_zklock_main_conf_t *mcf = conf;
    ngx_str_t *value = cf->args->elts, pw = ngx_null_string;
    ngx_int_t got;

    (void)cmd;
    if (mcf->tls_ca.data != NULL)
        return "is duplicate";
    if (mcf->sasl_user.data != NULL)
        return "cannot go with zklock_sasl (one session cannot have both)";
    if (!(zkl_features() & ZKL_FEATURE_TLS))
        return zn_no_feature(cf, "zklock_tls", "TLS");
    if (zn_file(cf, "zklock_tls", &value[1], &mcf->tls_ca) != NGX_CONF_OK ||
        zn_file(cf, "zklock_tls", &value[2], &mcf->tls_cert) !=
            NGX_CONF_OK ||
        zn_file(cf, "zklock_tls", &value[3], &mcf->tls_key) != NGX_CONF_OK)
        return NGX_CONF_ERROR;
    if (cf->args->nelts == 5) {
        if ((got = zn_param(cf, &value[4], "key_password_file", &pw)) < 0)
            return NGX_CONF_ERROR;
        if (got == 0)
            return zn_unknown(cf, &value[4]);
        if (zn_secret(cf, "zklock_tls", &pw, &mcf->tls_key_password) !=
            NGX_CONF_OK)
            return NGX_CONF_ERROR;
    }
    return zn_check_secure(cf, "zklock_tls", mcf);
}

/* zklock_sasl USER [password_file=FILE] [mechanism=NAME] [service=NAME]
 * [host=NAME]; */
static char *zn_sasl(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_zklock_main_conf_t *mcf = conf;
    ngx_str_t *value = cf->args->elts, pwfile = ngx_null_string;
    ngx_uint_t i;
    ngx_int_t got;

    (void)cmd;
    if (mcf->sasl_user.data != NULL)
        return "is duplicate";
    if (mcf->tls_ca.data != NULL)
        return "cannot go with zklock_tls (one session cannot have both)";
    if (!(zkl_features() & ZKL_FEATURE_SASL))
        return zn_no_feature(cf, "zklock_sasl", "SASL");
    if (value[1].len == 0 || ngx_strlchr(value[1].data,
                                         value[1].data + value[1].len,
                                         '=') != NULL)
        return "needs a user name first";
    mcf->sasl_user.len = value[1].len;
    if ((mcf->sasl_user.data = (u_char *)zn_cstr(cf, &value[1])) == NULL)
        return NGX_CONF_ERROR;
    for (i = 2; i < cf->args->nelts; i++) {
        if ((got = zn_param(cf, &value[i], "password_file", &pwfile)) == 0 &&
            (got = zn_param(cf, &value[i], "mechanism",
                            &mcf->sasl_mechanism)) == 0 &&
            (got = zn_param(cf, &value[i], "service", &mcf->sasl_service)) ==
                0 &&
            (got = zn_param(cf, &value[i], "host", &mcf->sasl_host)) == 0)
            return zn_unknown(cf, &value[i]);
        if (got < 0)
            return NGX_CONF_ERROR;
    }
    if (pwfile.data != NULL) {
        if (zn_secret(cf, "zklock_sasl", &pwfile, &mcf->sasl_password) !=
            NGX_CONF_OK)
            return NGX_CONF_ERROR;
    } else if (mcf->sasl_mechanism.data == NULL ||
               ngx_strcasecmp(mcf->sasl_mechanism.data,
                              (u_char *)"GSSAPI") != 0) {
        /* Kerberos takes its credentials from the environment. */
        return "needs password_file= (all but mechanism=GSSAPI)";
    }
    return zn_check_secure(cf, "zklock_sasl", mcf);
}

static void *zn_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_zklock_loc_conf_t *lcf = ngx_pcalloc(cf->pool, sizeof *lcf);

    if (lcf == NULL)
        return NULL;
    lcf->unavailable = NGX_CONF_UNSET_UINT;
    lcf->set = NGX_CONF_UNSET;
    return lcf;
}

static char *zn_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_zklock_loc_conf_t *prev = parent, *lcf = child;

    (void)cf;
    if (lcf->set == NGX_CONF_UNSET) {
        /* A lock is inherited whole: key, kind and parameters. */
        lcf->key = prev->key;
        lcf->cache = prev->cache;
        lcf->shared = prev->shared;
        lcf->timeout = prev->timeout;
        lcf->on_timeout = prev->on_timeout;
        lcf->zone = prev->zone;
        lcf->set = prev->set;
    }
    ngx_conf_merge_str_value(lcf->prefix, prev->prefix, "/zklock/nginx");
    ngx_conf_merge_uint_value(lcf->unavailable, prev->unavailable,
                              NGX_HTTP_ZKLOCK_FAIL_CLOSED);
    return NGX_CONF_OK;
}

/* zklock_prefix PATH: a valid ZooKeeper path, without a trailing '/'. */
static char *zn_prefix(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_zklock_loc_conf_t *lcf = conf;
    ngx_str_t *value = cf->args->elts;
    char why[256], *path;
    const char *bad;

    (void)cmd;
    if (lcf->prefix.data != NULL)
        return "is duplicate";
    if ((path = zn_cstr(cf, &value[1])) == NULL)
        return NGX_CONF_ERROR;
    bad = zkl_path_explain(path, why, sizeof why) != ZKL_OK ? why
          : value[1].len > 1 && path[value[1].len - 1] == '/'
              ? "ends with '/'"
              : NULL;
    if (bad != NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "zklock_prefix \"%V\": %s",
                           &value[1], bad);
        return NGX_CONF_ERROR;
    }
    lcf->prefix = value[1];
    if (lcf->prefix.len == 1) /* "/": keys go right under the root */
        lcf->prefix.len = 0;
    return NGX_CONF_OK;
}

/* zklock KEY [timeout=TIME] [shared] [on_timeout=503|pass];
 * zklock_cache_lock KEY [timeout=TIME] [zone=NAME] [on_timeout=503|pass];
 * (cmd->offset: 0 for zklock, 1 for zklock_cache_lock) */
static char *zn_lock(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_zklock_loc_conf_t *lcf = conf;
    ngx_str_t *value = cf->args->elts, s;
    ngx_http_compile_complex_value_t ccv;
    ngx_uint_t i, cache = cmd->offset;
    ngx_msec_t ms;

    if (lcf->set != NGX_CONF_UNSET)
        return "is duplicate (one zklock or zklock_cache_lock a location)";
    lcf->key = ngx_palloc(cf->pool, sizeof(ngx_http_complex_value_t));
    if (lcf->key == NULL)
        return NGX_CONF_ERROR;
    ngx_memzero(&ccv, sizeof ccv);
    ccv.cf = cf;
    ccv.value = &value[1];
    ccv.complex_value = lcf->key;
    if (ngx_http_compile_complex_value(&ccv) != NGX_OK)
        return NGX_CONF_ERROR;
    /* The lock is taken before the proxy runs, when its variables are
     * still empty: a key made of them names the same lock for every
     * host, and for zklock_cache_lock it never matches the cache key. */
    if (ngx_strlcasestrn(value[1].data, value[1].data + value[1].len,
                         (u_char *)"$proxy_", 7 - 1) != NULL ||
        ngx_strlcasestrn(value[1].data, value[1].data + value[1].len,
                         (u_char *)"${proxy_", 8 - 1) != NULL)
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "%V: \"%V\" uses $proxy_ variables, which are "
                           "empty before the proxy runs: use $host and the "
                           "like (and the same in proxy_cache_key)",
                           &cmd->name, &value[1]);
    lcf->cache = cache;
    lcf->timeout = cache ? 30000 : 10000;
    lcf->on_timeout =
        cache ? NGX_HTTP_ZKLOCK_TIMEOUT_PASS : NGX_HTTP_ZKLOCK_TIMEOUT_503;
    for (i = 2; i < cf->args->nelts; i++) {
        if (ngx_strncmp(value[i].data, "timeout=", 8) == 0) {
            s.data = value[i].data + 8;
            s.len = value[i].len - 8;
            ms = ngx_parse_time(&s, 0);
            if (ms == (ngx_msec_t)NGX_ERROR || ms == 0 || ms > 86400000)
                goto invalid;
            lcf->timeout = ms;
        } else if (!cache && ngx_strcmp(value[i].data, "shared") == 0) {
            lcf->shared = 1;
        } else if (ngx_strcmp(value[i].data, "on_timeout=503") == 0) {
            lcf->on_timeout = NGX_HTTP_ZKLOCK_TIMEOUT_503;
        } else if (ngx_strcmp(value[i].data, "on_timeout=pass") == 0) {
            lcf->on_timeout = NGX_HTTP_ZKLOCK_TIMEOUT_PASS;
        } else if (cache && ngx_strncmp(value[i].data, "zone=", 5) == 0) {
            s.data = value[i].data + 5;
            s.len = value[i].len - 5;
            if (s.len == 0)
                goto invalid;
            /* The zone proxy_cache_path made (or will make): the same
             * lookup proxy_cache does. */
            lcf->zone = ngx_shared_memory_add(cf, &s, 0,
                                              &ngx_http_proxy_module);
            if (lcf->zone == NULL)
                return NGX_CONF_ERROR;
        } else {
            goto invalid;
        }
    }
    lcf->set = 1;
    return NGX_CONF_OK;

invalid:
    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%V: invalid parameter \"%V\"",
                       &cmd->name, &value[i]);
    return NGX_CONF_ERROR;
}

/* The lock is taken in the precontent phase: after access control (so
 * an unauthorised request never queues, and "satisfy any" cannot skip
 * it), before the content handler (proxy_pass, fastcgi_pass...). */
static ngx_int_t zn_postconfiguration(ngx_conf_t *cf)
{
    ngx_http_core_main_conf_t *cmcf;
    ngx_http_handler_pt *h;

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);
    h = ngx_array_push(&cmcf->phases[NGX_HTTP_PRECONTENT_PHASE].handlers);
    if (h == NULL)
        return NGX_ERROR;
    *h = ngx_http_zklock_handler;
    if (ngx_http_zklock_init_filter() != NGX_OK)
        return NGX_ERROR;
    return ngx_http_zklock_add_variables(cf);
}
