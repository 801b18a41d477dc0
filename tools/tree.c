/* The processes below one process (tree.h): read from /proc/PID/stat's
 * parent links, signalled once each, or killed and reaped to the last. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tree.h"

struct proc {
    pid_t pid, ppid;
    char state; /* Z (zombie) and X (dead) take no signal */
};

void pidset_free(struct pidset *s)
{
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

static int pidset_has(const struct pidset *s, pid_t pid)
{
    size_t i;

    for (i = 0; i < s->n; i++)
        if (s->v[i] == pid)
            return 1;
    return 0;
}

static int pidset_add(struct pidset *s, pid_t pid)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 32;
        pid_t *v = realloc(s->v, cap * sizeof *v);

        if (v == NULL)
            return -1;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = pid;
    return 0;
}

static int by_pid(const void *a, const void *b)
{
    const struct proc *x = a, *y = b;

    return (x->pid > y->pid) - (x->pid < y->pid);
}

/* "PID (COMM) S PPID ...": COMM may hold spaces and ')', so the fields
 * are read after the last ')' (the ones after PPID are numbers). */
static int read_stat(int dirfd, const char *name, struct proc *p)
{
    char path[64], buf[512], *close_paren;
    ssize_t k;
    int fd, ppid;

    if (strlen(name) > 32)
        return -1;
    strcpy(path, name);
    strcat(path, "/stat");
    fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1; /* gone since readdir */
    k = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (k <= 0)
        return -1;
    buf[k] = '\0';
    close_paren = strrchr(buf, ')');
    if (close_paren == NULL ||
        sscanf(close_paren + 1, " %c %d", &p->state, &ppid) != 2)
        return -1;
    p->pid = (pid_t)atol(buf);
    p->ppid = (pid_t)ppid;
    return 0;
}

/* Every process of the system (of our pid namespace), sorted by pid.
 * Returns -1 when /proc cannot be read or memory runs out. */
static int scan(struct proc **out, size_t *np)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    struct proc *v = NULL, *nv;
    size_t n = 0, cap = 0;

    *out = NULL;
    *np = 0;
    if (d == NULL)
        return -1;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 256;
            if ((nv = realloc(v, cap * sizeof *v)) == NULL) {
                free(v);
                closedir(d);
                return -1;
            }
            v = nv;
        }
        if (read_stat(dirfd(d), e->d_name, &v[n]) == 0)
            n++;
    }
    closedir(d);
    qsort(v, n, sizeof *v, by_pid);
    *out = v;
    *np = n;
    return 0;
}

static long find(const struct proc *v, size_t n, pid_t pid)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (v[mid].pid == pid)
            return (long)mid;
        if (v[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* below[i] = 1 when v[i] descends from ROOT. Each process's chain of
 * parents is walked once: a verdict found for one is kept for all on
 * its way up. A scan is not one instant, so a chain may break (a
 * parent gone, re-parented); the caller scans again. */
enum { UNKNOWN, BELOW, OUTSIDE, WALKING };

static unsigned char *mark_below(pid_t root, const struct proc *v, size_t n)
{
    unsigned char *below = calloc(n ? n : 1, 1);
    size_t *chain = malloc((n ? n : 1) * sizeof *chain);
    size_t i, depth;

    if (below == NULL || chain == NULL) {
        free(below);
        free(chain);
        return NULL;
    }
    for (i = 0; i < n; i++) {
        size_t j = i;
        unsigned char verdict;

        depth = 0;
        for (;;) {
            long k;

            if (below[j] != UNKNOWN) {
                verdict = below[j] == WALKING ? OUTSIDE : below[j];
                break;
            }
            if (v[j].ppid == root) {
                verdict = BELOW;
                below[j] = WALKING;
                chain[depth++] = j;
                break;
            }
            below[j] = WALKING;
            chain[depth++] = j;
            if (v[j].pid == root || v[j].ppid <= 0 ||
                (k = find(v, n, v[j].ppid)) < 0) {
                verdict = OUTSIDE;
                break;
            }
            j = (size_t)k;
        }
        while (depth > 0)
            below[chain[--depth]] = verdict;
    }
    free(chain);
    for (i = 0; i < n; i++)
        below[i] = below[i] == BELOW;
    return below;
}

int tree_signal(pid_t root, int sig, struct pidset *seen)
{
    struct proc *v;
    unsigned char *below;
    size_t n, i;
    int got = 0;

    if (scan(&v, &n) != 0)
        return -1;
    if ((below = mark_below(root, v, n)) == NULL) {
        free(v);
        return -1;
    }
    for (i = 0; i < n; i++) {
        if (!below[i] || v[i].state == 'Z' || v[i].state == 'X' ||
            pidset_has(seen, v[i].pid))
            continue;
        if (pidset_add(seen, v[i].pid) != 0)
            break;
        if (kill(v[i].pid, sig) == 0 && sig != SIGKILL && sig != SIGCONT)
            kill(v[i].pid, SIGCONT);
        got++;
    }
    free(below);
    free(v);
    return got;
}

int tree_reap(struct watch *w)
{
    for (;;) {
        int st;
        pid_t pid = waitpid(-1, &st, WNOHANG);

        if (pid > 0) {
            if (w != NULL && pid == w->pid) {
                w->status = st;
                w->reaped = 1;
            }
            continue;
        }
        if (pid == 0)
            return 1;
        if (errno != EINTR)
            return 0; /* ECHILD: none left */
    }
}

int tree_kill_all(struct watch *w)
{
    struct pidset killed = {NULL, 0, 0};
    long nap_ns = 0;
    int count;

    for (;;) {
        struct proc *v = NULL;
        unsigned char *below = NULL;
        size_t n = 0, i;
        struct timespec ts;

        /* Without /proc (or memory) this round, the next may do. */
        if (scan(&v, &n) == 0)
            below = mark_below(getpid(), v, n);
        if (below == NULL && w != NULL && !w->reaped)
            kill(w->pid, SIGKILL); /* the one known without /proc */
        for (i = 0; below != NULL && i < n; i++) {
            if (!below[i] || v[i].state == 'Z' || v[i].state == 'X')
                continue;
            kill(v[i].pid, SIGKILL);
            if (!pidset_has(&killed, v[i].pid))
                pidset_add(&killed, v[i].pid);
        }
        free(below);
        free(v);
        if (!tree_reap(w))
            break;
        /* Some are still dying (or were forked since the scan): look
         * again soon, backing off for ones that take long to die. */
        nap_ns = nap_ns == 0 ? 200000 : nap_ns * 2;
        if (nap_ns > 50000000)
            nap_ns = 50000000;
        ts.tv_sec = 0;
        ts.tv_nsec = nap_ns;
        nanosleep(&ts, NULL);
    }
    count = (int)killed.n;
    pidset_free(&killed);
    return count;
}
