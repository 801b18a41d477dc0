/* Takes a lock on a libevent loop, holds it for a tenth of a second,
 * lets it go, and exits 0; 1 if the lock was not had.
 *
 *   libevent-lock HOSTS PATH
 *   cc libevent-lock.c \
 *      $(pkg-config --cflags --libs zklock zklock-libevent)
 */
#include <stdio.h>

#include <event2/event.h>
#include <zklock.h>
#include <zklock_libevent.h>

struct job {
    struct event_base *base;
    zkl_client_t *c;
    struct event *work; /* the "work" done under the lock */
    int status;
};

static void work_done(evutil_socket_t fd, short what, void *lk)
{
    (void)fd;
    (void)what;
    zkl_lock_release(lk);
}

static void on_lock(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                    void *arg)
{
    static const struct timeval tenth = {0, 100000};
    struct job *j = arg;
    uint64_t token = 0;

    switch (ev) {
    case ZKL_LOCK_ACQUIRED:
        zkl_lock_token(lk, &token);
        printf("acquired %s, token %llu\n", zkl_lock_path(lk),
               (unsigned long long)token);
        j->work = evtimer_new(j->base, work_done, lk);
        evtimer_add(j->work, &tenth);
        return;
    case ZKL_LOCK_RELEASED:
        printf("released\n");
        j->status = 0;
        break;
    case ZKL_LOCK_FAILED:
    case ZKL_LOCK_LOST:
        fprintf(stderr, "libevent-lock: %s\n", zkl_strerror(status));
        break;
    default: /* SUSPENDED, RESTORED: keep waiting */
        return;
    }
    if (j->work != NULL)
        event_free(j->work);
    j->work = NULL;
    /* With the client gone nothing is left on the base, and
     * event_base_dispatch() returns. */
    zkl_lock_free(lk);
    zkl_client_free(j->c);
}

int main(int argc, char **argv)
{
    struct job j = {NULL, NULL, NULL, 1};
    zkl_options_t *o;
    zkl_lock_t *lk;
    int rc;

    if (argc != 3) {
        fprintf(stderr, "usage: %s HOSTS PATH\n", argv[0]);
        return 2;
    }
    j.base = event_base_new();
    if ((rc = zkl_options_new(&o)) != ZKL_OK ||
        (rc = zkl_options_set_servers(o, argv[1])) != ZKL_OK ||
        (rc = zkl_client_new(&j.c, o)) != ZKL_OK) {
        fprintf(stderr, "libevent-lock: %s\n", zkl_strerror(rc));
        return 1;
    }
    zkl_options_free(o);
    if ((rc = zkl_libevent_attach(j.c, j.base)) != ZKL_OK ||
        (rc = zkl_lock_new(&lk, j.c, argv[2], on_lock, &j)) != ZKL_OK ||
        (rc = zkl_lock_acquire(lk, 10000)) != ZKL_OK) {
        fprintf(stderr, "libevent-lock: %s\n", zkl_strerror(rc));
        zkl_client_free(j.c);
        return 1;
    }
    event_base_dispatch(j.base);
    event_base_free(j.base);
    return j.status;
}
