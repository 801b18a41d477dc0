/* What every test program shares, whatever loop it runs on: assertions,
 * the environment, the observer and the forking runner. A program links
 * test/common.c and provides t_run_for() on its own loop. */
#ifndef ZKL_TEST_COMMON_H
#define ZKL_TEST_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zookeeper/zookeeper.h>

#include "zklock.h"

#define TEST(name)                                                          \
    void test_##name(void);                                                 \
    void test_##name(void)

#define FAILF(...)                                                          \
    do {                                                                    \
        fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                     \
        fprintf(stderr, __VA_ARGS__);                                       \
        fputc('\n', stderr);                                                \
        abort();                                                            \
    } while (0)

#define ASSERT(cond)                                                        \
    do {                                                                    \
        if (!(cond))                                                        \
            FAILF("assertion failed: %s", #cond);                           \
    } while (0)

#define ASSERT_EQ(a, b)                                                     \
    do {                                                                    \
        long long a_ = (long long)(a), b_ = (long long)(b);                 \
        if (a_ != b_)                                                       \
            FAILF("%s == %s (%lld vs %lld)", #a, #b, a_, b_);               \
    } while (0)

#define ASSERT_RC(a, b)                                                     \
    do {                                                                    \
        int a_ = (int)(a), b_ = (int)(b);                                   \
        if (a_ != b_)                                                       \
            FAILF("%s == %s (%s vs %s)", #a, #b, zkl_err_name(a_),          \
                  zkl_err_name(b_));                                        \
    } while (0)

#define ASSERT_STR(a, b)                                                    \
    do {                                                                    \
        const char *a_ = (a), *b_ = (b);                                    \
        if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0)                \
            FAILF("%s == %s (\"%s\" vs \"%s\")", #a, #b, a_ ? a_ : "NULL",  \
                  b_ ? b_ : "NULL");                                        \
    } while (0)

/* ---- environment ---- */
const char *t_hosts(void);          /* ZKL_TEST_HOSTS */
uint16_t t_port(void);              /* its port */
/* A fresh lock path for this test: /zkl-test/<test>-<pid>[-suffix]. */
const char *t_path(const char *suffix);
uint64_t t_now_ms(void);
void t_sleep_ms(long ms);
/* Runs test/zkserver.sh CMD on the suite's server (stop, kill, start,
 * restart); fails the test if the script fails. */
void t_server(const char *cmd);

/* ---- observer (raw ZooKeeper client, blocking, own session) ---- */
/* Number of children of path (0 if it does not exist), -1 on error. */
int t_zk_count(const char *path);
/* A raw handle of a test's own (another session, or the same one taken
 * over): the watcher sets *(int *)ctx once connected; the pump drives
 * the handle alone until *flag is set or ms pass. */
void t_zk_connected_watcher(zhandle_t *zh, int type, int state,
                            const char *path, void *ctx);
void t_zk_pump_until(zhandle_t *zh, int *flag, long ms);
/* Children of path in Curator order into names (NUL-separated list,
 * caller frees); returns count. */
int t_zk_children(const char *path, char ***names);
void t_zk_free_names(char **names, int n);
/* Waits up to ms for path to have exactly n children. */
int t_zk_wait_count(const char *path, int n, long ms);
/* Deletes a node (for "someone else deleted the lock node"). */
int t_zk_delete(const char *path);
/* Deletes the lock node a handle (not a lease) has now, as someone else
 * would; the ZooKeeper result. */
int t_zk_delete_node(const zkl_lock_t *lk);
/* The same, from a session authenticated as digest "user:password"
 * (NULL: none); returns the ZooKeeper result (ZNOAUTH, ...). */
int t_zk_delete_as(const char *digest, const char *path);
/* Creates path (open ACL, ZooKeeper create flags) as digest. */
int t_zk_create_as(const char *digest, const char *path, int flags);
/* A node's data into buf (size bytes); its length, or -1 if missing. */
int t_zk_data(const char *path, char *buf, int size);
/* An allocator for zkl_set_allocator() that counts the blocks zklock
 * holds (t_live_allocs()): what a test must find at 0 once everything
 * is freed. */
extern const zkl_allocator_t t_counting_allocator;
long t_live_allocs(void);
/* Sets a node's data; the ZooKeeper result. */
int t_zk_set(const char *path, const char *data, int len);
/* Sets a node's ACL to world:anyone with perms; the ZooKeeper result. */
int t_zk_set_acl(const char *path, int perms);
/* czxid of a node, 0 if missing. */
int64_t t_zk_czxid(const char *path);

/* Number of lock nodes ("_c_...") left under the roots tests use;
 * prints each. */
int t_leftover_nodes(void);
/* Number of lock nodes ("_c_...") at any depth below root (0 if it does
 * not exist), over one session; prints nothing. */
int t_lock_nodes_under(const char *root);

/* ---- provided by the program, on its loop ---- */
/* Runs the loop for ms (the observer keeps the program's clients going
 * while it waits). */
void t_run_for(long ms);
/* One loop iteration, at most 20 ms. */
void t_tick(void);
/* Runs the loop until expr holds or ms pass; evaluates to expr. */
#define WAIT_FOR(expr, ms)                                                  \
    __extension__({                                                         \
        uint64_t e_ = t_now_ms() + (uint64_t)(ms);                          \
        while (!(expr) && t_now_ms() < e_)                                  \
            t_tick();                                                       \
        (expr);                                                             \
    })

/* ---- runner ---- */
typedef struct t_case {
    const char *name;
    void (*fn)(void);
    int secs; /* time limit */
} t_case_t;
/* Runs one test in a forked process (setup and teardown around it, in
 * that process) and prints PASS/FAIL. */
void t_run_case(const t_case_t *tc, void (*setup)(void),
                void (*teardown)(void));
/* Whether a test is chosen by argv[0..argc-1] ("=NAME": that test; else a
 * substring; none: every test). */
int t_selected(const char *name, int argc, char **argv);
/* Prints "N passed, N failed"; the exit status. A run of no test is a
 * failure ("0 passed, 1 failed"). */
int t_finish(void);

#endif
