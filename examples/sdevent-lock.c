/* Takes a lock on systemd's sd-event loop, holds it for a tenth of a
 * second, lets it go, and exits 0; 1 if the lock was not had.
 *
 *   sdevent-lock HOSTS PATH
 *   cc sdevent-lock.c $(pkg-config --cflags --libs zklock zklock-sdevent)
 */
#include <stdio.h>
#include <time.h>

#include <systemd/sd-event.h>
#include <zklock.h>
#include <zklock_sdevent.h>

struct job {
    sd_event *e;
    zkl_client_t *c;
    sd_event_source *work; /* the "work" done under the lock */
};

static int work_done(sd_event_source *s, uint64_t usec, void *lk)
{
    (void)s;
    (void)usec;
    zkl_lock_release(lk);
    return 0;
}

static void on_lock(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                    void *arg)
{
    struct job *j = arg;
    uint64_t token = 0;
    int code = 1;

    switch (ev) {
    case ZKL_LOCK_ACQUIRED:
        zkl_lock_token(lk, &token);
        printf("acquired %s, token %llu\n", zkl_lock_path(lk),
               (unsigned long long)token);
        sd_event_add_time_relative(j->e, &j->work, CLOCK_MONOTONIC, 100000,
                                   1000, work_done, lk);
        return;
    case ZKL_LOCK_RELEASED:
        printf("released\n");
        code = 0;
        break;
    case ZKL_LOCK_FAILED:
    case ZKL_LOCK_LOST:
        fprintf(stderr, "sdevent-lock: %s\n", zkl_strerror(status));
        break;
    default: /* SUSPENDED, RESTORED: keep waiting */
        return;
    }
    j->work = sd_event_source_disable_unref(j->work);
    zkl_lock_free(lk);
    zkl_client_free(j->c);
    sd_event_exit(j->e, code);
}

int main(int argc, char **argv)
{
    struct job j = {NULL, NULL, NULL};
    zkl_options_t *o;
    zkl_lock_t *lk;
    int rc;

    if (argc != 3) {
        fprintf(stderr, "usage: %s HOSTS PATH\n", argv[0]);
        return 2;
    }
    if (sd_event_default(&j.e) < 0)
        return 1;
    if ((rc = zkl_options_new(&o)) != ZKL_OK ||
        (rc = zkl_options_set_servers(o, argv[1])) != ZKL_OK ||
        (rc = zkl_client_new(&j.c, o)) != ZKL_OK) {
        fprintf(stderr, "sdevent-lock: %s\n", zkl_strerror(rc));
        return 1;
    }
    zkl_options_free(o);
    if ((rc = zkl_sdevent_attach(j.c, j.e)) != ZKL_OK ||
        (rc = zkl_lock_new(&lk, j.c, argv[2], on_lock, &j)) != ZKL_OK ||
        (rc = zkl_lock_acquire(lk, 10000)) != ZKL_OK) {
        fprintf(stderr, "sdevent-lock: %s\n", zkl_strerror(rc));
        zkl_client_free(j.c);
        return 1;
    }
    rc = sd_event_loop(j.e);
    sd_event_unref(j.e);
    return rc;
}
