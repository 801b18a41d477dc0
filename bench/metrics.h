/* Measurement helpers for zklock-bench: clocks, latency percentiles,
 * process resources, and the one-line JSON result. */
#ifndef ZKL_BENCH_METRICS_H
#define ZKL_BENCH_METRICS_H

#include <stddef.h>
#include <stdint.h>

uint64_t now_us(void);
uint64_t thread_cpu_us(void);   /* CPU time of the calling thread */
double cpu_seconds(void);        /* user + system of this process */
long rss_bytes(void);            /* resident set size */
uint64_t tcp_bytes_in(void);     /* bytes received on all TCP sockets */

/* A growable sample of microsecond latencies. */
typedef struct lat {
    uint64_t *v;
    size_t n, cap;
} lat_t;
void lat_add(lat_t *l, uint64_t us);
double lat_pct(lat_t *l, double p); /* sorts in place; 0 if empty */
void lat_free(lat_t *l);

/* One JSON object on one line on stdout: json_begin, fields, json_end. */
void json_begin(const char *scenario);
void json_num(const char *key, double v);
void json_int(const char *key, long long v);
void json_str(const char *key, const char *v);
void json_end(void);

/* Live heap in use (malloc's, so the library's and the ZooKeeper
 * client's alike): what a phase keeps, whatever it freed before. */
long heap_in_use(void);
/* Counts zklock's allocations from now on (before any client is made);
 * heap_of_library() is their live usable size. */
void heap_count_library(void);
long heap_of_library(void);

/* Every scenario ends: bench_limit() arms a deadline past which the run
 * prints {"scenario":..., "error":"deadline ..."} and exits 1, and
 * bench_fail() does the same at once with its reason (also on stderr). */
void bench_limit(const char *scenario, double seconds);
/* Called (from the signal handler, so async-signal-safe only) once the
 * deadline's line is written; it need not return. zklock-bench's run.c
 * sets it to delete the run's nodes. */
extern void (*bench_deadline_hook)(void);
void bench_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2),
                                                      noreturn));

/* Progress and explanations go to stderr. */
void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
