/* See fleet.h. Three pipes: workers -> parent (reports, non-blocking in
 * the parent), and two parent -> workers that say only one thing each,
 * by being closed: start, and end. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "fleet.h"

static int go_read_fd = -1, end_read_fd = -1, report_write_fd = -1;

/* Blocks until the write end of fd's pipe is closed. */
static void wait_eof(int fd)
{
    char b[64];

    for (;;) {
        ssize_t r = read(fd, b, sizeof b);

        if (r == 0 || (r < 0 && errno != EINTR))
            return;
    }
}

int fleet_fork(struct fleet *f, int n)
{
    int rep[2], go[2], end[2], i;

    memset(f, 0, sizeof *f);
    if (pipe(rep) != 0 || pipe(go) != 0 || pipe(end) != 0) {
        perror("zklock-bench: pipe");
        exit(1);
    }
    f->n = n;
    f->pids = calloc((size_t)n, sizeof *f->pids);
    fflush(NULL);
    for (i = 0; i < n; i++) {
        pid_t pid = fork();

        if (pid < 0) {
            perror("zklock-bench: fork");
            exit(1);
        }
        if (pid == 0) {
            close(rep[0]);
            close(go[1]);
            close(end[1]);
            go_read_fd = go[0];
            end_read_fd = end[0];
            report_write_fd = rep[1];
            free(f->pids);
            f->pids = NULL;
            return i;
        }
        f->pids[i] = pid;
        bench_child(pid);
    }
    close(rep[1]);
    close(go[0]);
    close(end[0]);
    f->report_fd = rep[0];
    f->go_fd = go[1];
    f->end_fd = end[1];
    fcntl(f->report_fd, F_SETFL, fcntl(f->report_fd, F_GETFL) | O_NONBLOCK);
    return -1;
}

void fleet_wait_go(struct fleet *f)
{
    (void)f;
    wait_eof(go_read_fd);
}

void fleet_send(struct fleet *f, const struct fleet_msg *m)
{
    (void)f;
    while (write(report_write_fd, m, sizeof *m) < 0 && errno == EINTR)
        ;
}

void fleet_worker_exit(struct fleet *f, int status)
{
    (void)f;
    wait_eof(end_read_fd);
    _exit(status);
}

void fleet_go(struct fleet *f)
{
    close(f->go_fd);
    f->go_fd = -1;
}

int fleet_read(struct fleet *f,
               void (*on_msg)(const struct fleet_msg *, void *), void *arg)
{
    struct fleet_msg buf[64];
    int got = 0;

    for (;;) {
        ssize_t r = read(f->report_fd, buf, sizeof buf);
        size_t i;

        if (r == 0 && got == 0)
            return -1; /* no writer left: every worker is gone */
        if (r <= 0)
            return got;
        /* Writes are whole records and reads ask for whole records. */
        for (i = 0; i < (size_t)r / sizeof buf[0]; i++, got++)
            on_msg(&buf[i], arg);
    }
}

int fleet_end(struct fleet *f)
{
    int i, bad = 0;

    if (f->go_fd >= 0)
        close(f->go_fd);
    close(f->end_fd);
    for (i = 0; i < f->n; i++) {
        int st;

        if (waitpid(f->pids[i], &st, 0) != f->pids[i] || !WIFEXITED(st) ||
            WEXITSTATUS(st) != 0)
            bad++;
    }
    close(f->report_fd);
    free(f->pids);
    f->pids = NULL;
    return bad;
}
