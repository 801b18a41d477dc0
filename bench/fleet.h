/* zklock-bench's fleet mode (--procs N): N forked worker processes, each
 * with its own loop, client and session, as a fleet of workers on many
 * machines would use a lock, reporting to the parent over a pipe.
 *
 * The parent forks before it opens anything (no loop, no session is
 * shared with a child), releases the workers with fleet_go(), then reads
 * their reports. Each report is one fixed-size record, written whole
 * (smaller than PIPE_BUF, so reports of different workers never mix). */
#ifndef ZKL_BENCH_FLEET_H
#define ZKL_BENCH_FLEET_H

#include <stdint.h>

enum fleet_kind {
    FLEET_QUEUED = 1, /* the worker's waiter is queued */
    FLEET_ACQUIRED,   /* it acquired (handoff) */
    FLEET_DONE,       /* finished: counters final */
    FLEET_FAILED      /* could not set up */
};

struct fleet_msg {
    int kind;
    int worker;
    long requests, listings, watch_events, failures, cycles;
    uint64_t bytes_in;
    double p50_us, p99_us, seconds, cpu_s;
};

struct fleet {
    int n;
    int report_fd;   /* parent: read end of the workers' reports */
    int go_fd;       /* parent: closing it starts the workers */
    int end_fd;      /* parent: closing it ends them */
    int *pids;
    void *user;      /* the parent's, for its report callback */
};

/* Forks n workers. Returns the worker's index (0..n-1) in a worker, -1 in
 * the parent. A worker calls fleet_wait_go() before it does anything. */
int fleet_fork(struct fleet *f, int n);
/* Worker: blocks until the parent calls fleet_go(). */
void fleet_wait_go(struct fleet *f);
/* Worker: one report to the parent. */
void fleet_send(struct fleet *f, const struct fleet_msg *m);
/* Worker: waits until the parent ends the run, then exits. */
void fleet_worker_exit(struct fleet *f, int status);
/* Parent: lets every worker start. */
void fleet_go(struct fleet *f);
/* Parent: reads the reports there are (non-blocking); calls on_msg for
 * each. Returns the number read, or -1 once no worker is left to
 * write one. */
int fleet_read(struct fleet *f, void (*on_msg)(const struct fleet_msg *,
                                               void *), void *arg);
/* Parent: ends the workers and reaps them; 0 when all exited with 0. */
int fleet_end(struct fleet *f);

#endif
