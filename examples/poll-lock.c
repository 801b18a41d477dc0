/* Takes a lock without an event loop (zklock's poll adapter), does its
 * work, lets it go, and exits 0; 1 if the lock was not had. The shape of
 * a batch job or a tool: the program drives zklock itself.
 *
 *   poll-lock HOSTS PATH
 *   cc poll-lock.c $(pkg-config --cflags --libs zklock zklock-poll)
 */
#include <stdio.h>
#include <unistd.h>

#include <zklock.h>
#include <zklock_poll.h>

static int held, done, status = 1;

static void on_lock(zkl_lock_t *lk, zkl_lock_event_t ev, int st, void *arg)
{
    (void)lk;
    (void)arg;
    if (ev == ZKL_LOCK_ACQUIRED) {
        held = 1;
    } else if (ev == ZKL_LOCK_RELEASED) {
        status = 0;
        done = 1;
    } else if (ev == ZKL_LOCK_FAILED || ev == ZKL_LOCK_LOST) {
        fprintf(stderr, "poll-lock: %s\n", zkl_strerror(st));
        done = 1;
    }
}

int main(int argc, char **argv)
{
    zkl_options_t *o;
    zkl_client_t *c;
    zkl_lock_t *lk;
    uint64_t token = 0;
    int rc;

    if (argc != 3) {
        fprintf(stderr, "usage: %s HOSTS PATH\n", argv[0]);
        return 2;
    }
    if ((rc = zkl_options_new(&o)) != ZKL_OK ||
        (rc = zkl_options_set_servers(o, argv[1])) != ZKL_OK ||
        (rc = zkl_client_new(&c, o)) != ZKL_OK) {
        fprintf(stderr, "poll-lock: %s\n", zkl_strerror(rc));
        return 1;
    }
    zkl_options_free(o);
    if ((rc = zkl_poll_attach(c)) != ZKL_OK ||
        (rc = zkl_lock_new(&lk, c, argv[2], on_lock, NULL)) != ZKL_OK ||
        (rc = zkl_lock_acquire(lk, 10000)) != ZKL_OK) {
        fprintf(stderr, "poll-lock: %s\n", zkl_strerror(rc));
        zkl_client_free(c);
        return 1;
    }
    while (!held && !done)
        zkl_poll_run(c, -1);
    if (held) {
        zkl_lock_token(lk, &token);
        printf("acquired %s, token %llu\n", argv[2],
               (unsigned long long)token);
        /* The work. Nothing runs in between, not even pings: keep it
         * short of a third of the session timeout, or call
         * zkl_poll_run(c, 0) now and then. */
        usleep(100000);
        zkl_lock_release(lk);
        while (!done)
            zkl_poll_run(c, -1);
        printf("released\n");
    }
    zkl_lock_free(lk);
    zkl_client_free(c);
    return status;
}
