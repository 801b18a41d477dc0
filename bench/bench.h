/* zklock-bench: scenarios and their shared options. */
#ifndef ZKL_BENCH_H
#define ZKL_BENCH_H

#include <sys/types.h>

struct opts {
    const char *hosts;
    long n;          /* --n, --pairs, --count, --waiters, --locks */
    long inflight;   /* --inflight */
    long sessions;   /* --sessions */
    double seconds;  /* --seconds */
    int restart;     /* --restart-at-half: restart the server mid-run */
    const char *zkdir; /* for --restart: the zkserver.sh directory */
    int list;        /* raw --list: a listing pipelined behind each create */
    long procs;      /* --procs: that many processes, one session each */
    long leases;     /* semaphore --leases */
    long every;      /* readmostly --write-every MS, create-latency --gap-ms */
    long rounds;     /* multilock, raw-batch --rounds R */
    long over;       /* burst --over L: the locks the waiters wait on */
    long held;       /* burst --held H: locks the program holds */
    int held_set;
    double limit;    /* --limit S: the run fails past S seconds */
    const char *run; /* clean --run ID: that run's tree only */
    int after_failure; /* clean, exec'd by run.c: exit 1, no JSON */
    /* --tls-ca F --tls-cert F --tls-key F: every session over TLS */
    const char *tls_ca, *tls_cert, *tls_key;
};

/* TLS for every session the run makes (zklock's clients through
 * zkl_options_set_tls, the bare client's through zookeeper_init_ssl),
 * forked children included: NULL (plain) unless --tls-* were given.
 * Set by main() before the run starts (run.c). */
extern const char *bench_tls_ca, *bench_tls_cert, *bench_tls_key;

/* run.c: the run's tree on the server and the run's end. Every node a
 * scenario creates is under bench_run_root(), BENCH_TOP "/<run id>",
 * deleted when the run ends (also on exit(), --limit and SIGINT, SIGTERM,
 * SIGHUP); see run.c. */
#define BENCH_TOP "/zklock-bench"
extern const char *bench_hosts;
/* Before any session or fork: names the run, arms the clean-ups. */
void bench_run_start(const char *scenario, const char *hosts);
const char *bench_run_root(void);
/* Something may be on the server now: a session connected. */
void bench_run_touched(void);
/* A forked child, killed if the run ends before it does. */
void bench_child(pid_t pid);
/* test/zkserver.sh restart ZKDIR, in a child of the run. */
pid_t bench_restart_server(const char *zkdir);
/* The scenario returned status: deletes the tree; 1 if that failed. */
int bench_run_end(int status);
/* The clean scenario: deletes BENCH_TOP (and the tree older versions
 * left, /zklock-bench-raw), or with --run ID that run's tree. */
int bench_clean(const struct opts *o);

/* raw.c: the server's own ceiling, bare ZooKeeper client. */
int bench_raw(const struct opts *o);
int bench_create_latency(const struct opts *o);
/* raw-batch --creates N [--rounds R]: N creates pipelined from one
 * session, each under its own directory, timed to the last reply. */
int bench_raw_batch(const struct opts *o);
/* Children of the n paths in all (a missing path has none), read with a
 * session of the bare client of its own; -1 when they cannot be read. */
long bench_raw_count_children(const char *hosts, char *const *paths,
                              long n);
/* Deletes path and everything under it, with a session of the bare
 * client of its own; with parent, then path's parent if it is empty.
 * The number of nodes deleted once path is gone, else -1. */
long bench_raw_delete_tree(const char *hosts, const char *path, int parent);

/* locks.c: zklock scenarios, on one libevent loop (bench_base). */
struct event_base;
extern struct event_base *bench_base;
struct zkl_client;
struct zkl_client *bench_client(const char *hosts, int session_ms);
/* The same without waiting for the connection (one loop turn may then
 * connect many at once). */
struct zkl_client *bench_client_start(const char *hosts, int session_ms);
/* Runs bench_base until each of the n clients has nothing pending (so
 * no node outlives the run), then frees it. */
void bench_free_clients(struct zkl_client **c, long n);
struct zkl_stats;
void bench_sum_stats(struct zkl_client **c, long n, struct zkl_stats *out);
/* "<run root>/<what>-<i>", the same in every process of the run (a
 * static buffer). */
char *bench_path(const char *what, long i);
/* Runs bench_base until *counter >= target (or limit_s passes). */
int bench_run_until(long *counter, long target, double limit_s);

/* One throughput run: --seconds of K cycles in flight over nlocks locks
 * spread over --sessions clients, after one cycle on each lock. */
struct tp_result {
    long cycles, requests, failures;
    double seconds, p50_us, p99_us, cpu_s;
};
void bench_tp_run(const struct opts *o, long nlocks, long k,
                  struct tp_result *r);
int bench_serial(const struct opts *o);
int bench_throughput(const struct opts *o);
int bench_handoff(const struct opts *o);
int bench_waiters(const struct opts *o);

/* holders.c: another process holds n locks, named
 * bench_path(what, i), over ns sessions: fork it,
 * wait until it holds them all, tell it to release them, reap it. Any
 * failure ends the run (bench_fail). */
struct bench_holders {
    int pid, up, down;
};
void bench_holders_fork(struct bench_holders *hp, const char *hosts,
                        const char *what, long n, long ns);
void bench_holders_ready(struct bench_holders *hp);
void bench_holders_release(struct bench_holders *hp);
void bench_holders_wait(struct bench_holders *hp);

/* reconnect.c: N clients of one loop each hold a lock; the loop's busy
 * time while they connect and, with --restart ZKDIR, while they all
 * reconnect after the server restarts. */
int bench_reconnect(const struct opts *o);

/* burst.c: N acquires in one loop turn on L locks held by another
 * process, while the program holds H of its own. */
int bench_burst(const struct opts *o);

/* procs.c: the same in fleet mode (--procs N), one session a process. */
int bench_handoff_fleet(const struct opts *o);
int bench_throughput_fleet(const struct opts *o);

/* family.c: the semaphore and the read/write lock. */
int bench_semaphore(const struct opts *o);
int bench_readmostly(const struct opts *o);

/* multi.c: a multi-lock of N free locks, acquired and released R times. */
int bench_multilock(const struct opts *o);
/* --rounds, else the default for a set (or batch) of n: 200 up to 10,
 * 50 above. */
long bench_rounds(const struct opts *o, long n);

#endif
