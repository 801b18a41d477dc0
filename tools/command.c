/* The command that zklock run and elect run while they hold: started
 * once the lock is acquired, with ZKLOCK_PATH and ZKLOCK_TOKEN; its exit
 * status; the signals that reach it. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

/* ZKLOCK_PATH and ZKLOCK_TOKEN for COMMAND: one line per lock of a set,
 * in the order it takes them (a lock path has no control characters, so
 * a line is a path). */
static int command_env(struct run *r, char **paths, char **tokens)
{
    size_t i, n = r->m != NULL ? zkl_multi_size(r->m) : 1;

    *paths = *tokens = NULL;
    for (i = 0; i < n; i++) {
        const zkl_lock_t *lk = r->m != NULL ? zkl_multi_lock(r->m, i) : r->lk;
        uint64_t token = 0;
        char tok[32];

        zkl_lock_token(lk, &token);
        snprintf(tok, sizeof tok, "%llu", (unsigned long long)token);
        if ((*paths = append(*paths, "\n", zkl_lock_path(lk))) == NULL ||
            (*tokens = append(*tokens, "\n", tok)) == NULL) {
            free(*paths);
            *paths = NULL;
            return -1;
        }
    }
    return 0;
}

void start_child(struct run *r)
{
    char *paths, *tokens;
    int pipefd[2];
    ssize_t n;
    int err = 0;

    if (command_env(r, &paths, &tokens) != 0) {
        fprintf(stderr, "%s: out of memory\n", prog);
        r->status = EXIT_EXEC;
        r->child_done = 1;
        run_release(r);
        return;
    }
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        perror("zklock: pipe");
        free(paths);
        free(tokens);
        r->status = EXIT_EXEC;
        r->child_done = 1;
        run_release(r);
        return;
    }
    r->child = fork();
    if (r->child == 0) {
        signal(SIGPIPE, SIG_DFL);
        setenv("ZKLOCK_TOKEN", tokens, 1);
        setenv("ZKLOCK_PATH", paths, 1);
        execvp(r->argv[0], r->argv);
        err = errno;
        if (write(pipefd[1], &err, sizeof err) < 0)
            _exit(EXIT_EXEC);
        _exit(EXIT_EXEC);
    }
    free(paths);
    free(tokens);
    close(pipefd[1]);
    if (r->child < 0) {
        perror("zklock: fork");
        close(pipefd[0]);
        r->status = EXIT_EXEC;
        r->child_done = 1;
        run_release(r);
        return;
    }
    /* The pipe closes on a successful exec, else carries errno. */
    n = read(pipefd[0], &err, sizeof err);
    close(pipefd[0]);
    if (n == (ssize_t)sizeof err)
        fprintf(stderr, "%s: cannot run %s: %s\n", prog, r->argv[0],
                strerror(err));
}

void on_sigchld(evutil_socket_t sig, short what, void *arg)
{
    struct run *r = arg;
    int st;

    (void)sig;
    (void)what;
    if (r->child <= 0 || waitpid(r->child, &st, WNOHANG) != r->child)
        return;
    r->child_done = 1;
    if (WIFEXITED(st))
        r->status = WEXITSTATUS(st);
    else if (WIFSIGNALED(st))
        r->status = 128 + WTERMSIG(st);
    if (r->lost) {
        finish(r, EXIT_LOST);
    } else if (run_release(r) != ZKL_OK) {
        finish(r, r->status);
    }
    /* else: RELEASED finishes */
}

/* A command that outlives a lost lock for --kill-after seconds. */
void on_kill_after(evutil_socket_t fd, short what, void *arg)
{
    struct run *r = arg;

    (void)fd;
    (void)what;
    if (r->child > 0 && !r->child_done) {
        fprintf(stderr, "%s: %s still running %g s after the %s was "
                "lost; sending SIGKILL\n", prog, r->argv[0], r->kill_after,
                r->elect ? "leadership" : "lock");
        kill(r->child, SIGKILL);
    }
}

void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct run *r = arg;

    (void)what;
    if (r->child > 0 && !r->child_done) {
        kill(r->child, (int)sig); /* the command decides; we follow it */
        return;
    }
    fprintf(stderr, "%s: interrupted while waiting for %s\n", prog, r->what);
    run_cancel(r);
    finish(r, 128 + (int)sig);
}
