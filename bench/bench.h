/* zklock-bench: scenarios and their shared options. */
#ifndef ZKL_BENCH_H
#define ZKL_BENCH_H

struct opts {
    const char *hosts;
    long n;          /* --n, --pairs, --count, --waiters, --locks */
    long inflight;   /* --inflight */
    long sessions;   /* --sessions */
    double seconds;  /* --seconds */
    int restart;     /* --restart-at-half: restart the server mid-run */
    const char *zkdir; /* for --restart: the zkserver.sh directory */
};

/* raw.c: the server's own ceiling, bare ZooKeeper client. */
int bench_raw(const struct opts *o);
int bench_create_latency(const struct opts *o);

/* locks.c: zklock scenarios. */
int bench_serial(const struct opts *o);
int bench_throughput(const struct opts *o);
int bench_handoff(const struct opts *o);
int bench_waiters(const struct opts *o);

#endif
