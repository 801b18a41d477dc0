/* See metrics.h. */
#include <dirent.h>
#include <malloc.h>
#include <signal.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "metrics.h"
#include "zklock.h"

static const char *json_scenario = "zklock-bench";

uint64_t now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t thread_cpu_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

double cpu_seconds(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

long heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();

    return (long)(mi.uordblks + mi.hblkhd);
}

/* zklock's own share of the live heap, by the same measure (usable size,
 * as mallinfo2 counts it): what is left is the ZooKeeper client's. */
static long lib_bytes;

static void *count_malloc(size_t n)
{
    void *p = malloc(n);

    if (p != NULL)
        lib_bytes += (long)malloc_usable_size(p);
    return p;
}

static void *count_calloc(size_t n, size_t size)
{
    void *p = calloc(n, size);

    if (p != NULL)
        lib_bytes += (long)malloc_usable_size(p);
    return p;
}

static void *count_realloc(void *p, size_t n)
{
    long before = p != NULL ? (long)malloc_usable_size(p) : 0;
    void *q = realloc(p, n);

    if (q != NULL)
        lib_bytes += (long)malloc_usable_size(q) - before;
    else if (n == 0)
        lib_bytes -= before;
    return q;
}

static void count_free(void *p)
{
    if (p != NULL)
        lib_bytes -= (long)malloc_usable_size(p);
    free(p);
}

void heap_count_library(void)
{
    static const zkl_allocator_t a = {count_malloc, count_calloc,
                                      count_realloc, count_free};

    zkl_set_allocator(&a);
}

long heap_of_library(void)
{
    return lib_bytes;
}

void (*bench_deadline_hook)(void);

static char fail_buf[512];
static size_t fail_len;

static void on_deadline(int sig)
{
    ssize_t w;

    (void)sig;
    w = write(1, fail_buf, fail_len);
    w = write(2, fail_buf, fail_len);
    (void)w;
    if (bench_deadline_hook != NULL)
        bench_deadline_hook();
    _exit(1);
}

void bench_limit(const char *scenario, double seconds)
{
    int n = snprintf(fail_buf, sizeof fail_buf,
                     "{\"scenario\":\"%s\",\"error\":\"deadline: not "
                     "done within %.0f s\"}\n",
                     scenario, seconds);

    fail_len = n > 0 && (size_t)n < sizeof fail_buf ? (size_t)n : 0;
    json_scenario = scenario;
    signal(SIGALRM, on_deadline);
    alarm((unsigned)(seconds + 0.5));
}

void bench_fail(const char *fmt, ...)
{
    char why[400];
    va_list ap;
    size_t i;

    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    fprintf(stderr, "zklock-bench: %s: %s\n", json_scenario, why);
    for (i = 0; why[i] != '\0'; i++)
        if (why[i] == '"' || why[i] == '\\')
            why[i] = '\'';
    fflush(stdout);
    printf("{\"scenario\":\"%s\",\"error\":\"%s\"}\n", json_scenario, why);
    fflush(stdout);
    exit(1);
}

long rss_bytes(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f != NULL) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return resident * sysconf(_SC_PAGESIZE);
}

/* The kernel counts what each socket received: exact, and it includes
 * nothing but the ZooKeeper traffic of this process. A socket is counted
 * once however many descriptors it has: the client gives the loop a dup
 * of the ZooKeeper client's descriptor (client.c), and counting both
 * doubled every figure. */
uint64_t tcp_bytes_in(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    uint64_t sum = 0;
    ino_t *seen = NULL;
    size_t nseen = 0, cap = 0, i;

    while (d != NULL && (e = readdir(d)) != NULL) {
        int fd = atoi(e->d_name);
        struct tcp_info ti;
        socklen_t len = sizeof ti;
        struct stat st;

        if (e->d_name[0] == '.' || fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode))
            continue;
        for (i = 0; i < nseen && seen[i] != st.st_ino; i++)
            ;
        if (i < nseen)
            continue;
        if (nseen == cap) {
            ino_t *t = realloc(seen, (cap = cap ? 2 * cap : 64) * sizeof *t);

            if (t == NULL)
                break;
            seen = t;
        }
        seen[nseen++] = st.st_ino;
        memset(&ti, 0, sizeof ti);
        if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 &&
            len >= offsetof(struct tcp_info, tcpi_bytes_received) + 8)
            sum += ti.tcpi_bytes_received;
    }
    free(seen);
    if (d != NULL)
        closedir(d);
    return sum;
}

void lat_add(lat_t *l, uint64_t us)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 1024;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        if (l->v == NULL) {
            perror("realloc");
            exit(1);
        }
    }
    l->v[l->n++] = us;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

double lat_pct(lat_t *l, double p)
{
    size_t i;

    if (l->n == 0)
        return 0;
    qsort(l->v, l->n, sizeof *l->v, cmp_u64);
    i = (size_t)(p / 100.0 * (double)(l->n - 1) + 0.5);
    return (double)l->v[i < l->n ? i : l->n - 1];
}

void lat_free(lat_t *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

static int json_first;

void json_begin(const char *scenario)
{
    json_first = 1;
    printf("{");
    json_str("scenario", scenario);
}

static void json_key(const char *key)
{
    printf("%s\"%s\":", json_first ? "" : ",", key);
    json_first = 0;
}

void json_num(const char *key, double v)
{
    json_key(key);
    printf("%.6g", v);
}

void json_int(const char *key, long long v)
{
    json_key(key);
    printf("%lld", v);
}

void json_str(const char *key, const char *v)
{
    json_key(key);
    printf("\"%s\"", v);
}

void json_end(void)
{
    printf("}\n");
    fflush(stdout);
}

void note(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}
