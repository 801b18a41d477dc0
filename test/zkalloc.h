/* test/zkalloc: what the driver (zkalloc.c) and the recipes
 * (zkalloc-recipes.c) share. A run is one forked process that plays one
 * recipe on its own client, with one allocation of the ZooKeeper client
 * failed (zkalloc-shim.h); these helpers keep its books. */
#ifndef ZKL_TEST_ZKALLOC_H
#define ZKL_TEST_ZKALLOC_H

#include "common.h"
#include "zklock.h"

/* Session timeout of a run's client, ms: short, so that a close the
 * client could not send costs little (its nodes go at expiry), and so
 * does a reply buffer it could not allocate (it reads nothing more until
 * its receive timeout, 2/3 of this, drops the connection). */
#define ZA_SESSION_MS 2000
/* Acquire timeout: an acquire still unanswered after this has stalled. */
#define ZA_ACQUIRE_MS 12000

/* What a run tells the driver, in memory shared with it. */
typedef struct za_run {
    char stage[96];   /* what it was doing last */
    char fail[320];   /* the check that failed, if one did */
    int done;         /* it reached its end */
    int started;      /* zkl_client_new() accepted */
    long zkl_live;    /* zklock's blocks left after everything was freed */
    long client_live; /* the ZooKeeper client's, likewise */
    long fences;      /* zkl_stats_t.fences */
    long sessions;    /* zkl_stats_t.sessions */
    int nerr;
    struct {
        int code;
        long n;
    } errs[24];       /* codes seen: refused calls and ending statuses */
} za_run_t;

extern za_run_t *za_r;

/* Fails the run: the reason goes to the driver, then abort(). */
#define ZA_CHECK(cond)                                                      \
    do {                                                                    \
        if (!(cond))                                                        \
            za_fail("%s:%d: %s", __FILE__, __LINE__, #cond);                \
    } while (0)
void za_fail(const char *fmt, ...)
    __attribute__((noreturn, format(printf, 1, 2)));
void za_stage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Counts an error code the run saw. */
void za_tally(int code);

/* One lock handle or multi-lock, and the answers it owes. */
typedef struct za_h {
    const char *name;
    zkl_lock_t *lk;
    zkl_multi_t *m;
    int acquiring;   /* an accepted acquire not yet answered */
    int releasing;   /* an accepted release not yet answered */
    int held;        /* ACQUIRED came; RELEASED or LOST not yet */
    int writing;     /* an accepted guarded write not yet answered */
    int listing;     /* an accepted zkl_contenders_ex() not yet answered */
    int acquired, failed, released, lost, written, listed;
} za_h_t;

/* The run's client (NULL when zkl_client_new() refused: the run is
 * over), on the poll adapter, connected. */
zkl_client_t *za_client(void);
/* Frees the client: everything still pending must be answered by then;
 * then the handles, each of which must owe nothing. */
void za_finish(za_h_t *const *h, int n);

void za_lock_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status, void *arg);
void za_multi_cb(zkl_multi_t *m, zkl_lock_event_t ev, int status, void *arg);
void za_write_cb(zkl_client_t *c, int status, const zkl_op_result_t *res,
                 size_t n, void *arg);
/* A constructor's rc (lock_new, multi_new...): 1 if accepted. */
int za_made(za_h_t *h, const char *name, int rc);

/* The calls; 1 when accepted (then an answer is owed), 0 when refused
 * with a code a failed allocation explains (tallied). */
int za_acquire(za_h_t *h, long ms);
int za_release(za_h_t *h);
int za_write(za_h_t *h, const zkl_op_t *ops, size_t n);
/* zkl_contenders_ex() of path, owed to h. */
int za_list(za_h_t *h, zkl_client_t *c, const char *path);
/* Runs the loop until h owes no answer to an acquire (release, write),
 * failing the run after ZA_ACQUIRE_MS and a margin. */
void za_wait_acquire(za_h_t *h);
void za_wait_release(za_h_t *h);
void za_wait_write(za_h_t *h);
void za_wait_list(za_h_t *h);
/* Runs the loop up to ms until h's acquire waits in its queue (or is
 * answered); no failure if not. */
void za_wait_queued(za_h_t *h, long ms);

/* A recipe: plays itself in a run under root (a path of its own). */
typedef struct za_recipe {
    const char *name;
    void (*play)(const char *root);
    int guarded_node; /* it writes root/rec: which must be gone too */
} za_recipe_t;

extern const za_recipe_t za_recipes[];
extern const size_t za_nrecipes;

#endif
