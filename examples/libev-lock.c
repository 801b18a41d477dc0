/* Takes a lock on a libev loop, holds it for a tenth of a second, lets
 * it go, and exits 0; 1 if the lock was not had.
 *
 *   libev-lock HOSTS PATH
 *   cc libev-lock.c $(pkg-config --cflags --libs zklock zklock-libev)
 */
#include <ev.h>
#include <stdio.h>

#include <zklock.h>
#include <zklock_libev.h>

struct job {
    struct ev_loop *loop;
    zkl_client_t *c;
    ev_timer work;  /* the "work" done under the lock */
    int status;
};

static void work_done(struct ev_loop *loop, ev_timer *w, int revents)
{
    zkl_lock_t *lk = w->data;

    (void)loop;
    (void)revents;
    zkl_lock_release(lk);
}

static void on_lock(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                    void *arg)
{
    struct job *j = arg;
    uint64_t token = 0;

    switch (ev) {
    case ZKL_LOCK_ACQUIRED:
        zkl_lock_token(lk, &token);
        printf("acquired %s, token %llu\n", zkl_lock_path(lk),
               (unsigned long long)token);
        j->work.data = lk;
        ev_timer_start(j->loop, &j->work);
        return;
    case ZKL_LOCK_RELEASED:
        printf("released\n");
        j->status = 0;
        break;
    case ZKL_LOCK_FAILED:
    case ZKL_LOCK_LOST:
        fprintf(stderr, "libev-lock: %s\n", zkl_strerror(status));
        ev_timer_stop(j->loop, &j->work);
        break;
    default: /* SUSPENDED, RESTORED: keep waiting */
        return;
    }
    /* Done: with the client gone nothing is left on the loop, and
     * ev_run() returns. */
    zkl_lock_free(lk);
    zkl_client_free(j->c);
}

int main(int argc, char **argv)
{
    struct job j;
    zkl_options_t *o;
    zkl_lock_t *lk;
    int rc;

    if (argc != 3) {
        fprintf(stderr, "usage: %s HOSTS PATH\n", argv[0]);
        return 2;
    }
    j.loop = EV_DEFAULT;
    j.status = 1;
    ev_timer_init(&j.work, work_done, 0.1, 0.);
    if ((rc = zkl_options_new(&o)) != ZKL_OK ||
        (rc = zkl_options_set_servers(o, argv[1])) != ZKL_OK ||
        (rc = zkl_client_new(&j.c, o)) != ZKL_OK) {
        fprintf(stderr, "libev-lock: %s\n", zkl_strerror(rc));
        return 1;
    }
    zkl_options_free(o);
    if ((rc = zkl_libev_attach(j.c, j.loop)) != ZKL_OK ||
        (rc = zkl_lock_new(&lk, j.c, argv[2], on_lock, &j)) != ZKL_OK ||
        (rc = zkl_lock_acquire(lk, 10000)) != ZKL_OK) {
        fprintf(stderr, "libev-lock: %s\n", zkl_strerror(rc));
        zkl_client_free(j.c);
        return 1;
    }
    ev_run(j.loop, 0);
    return j.status;
}
