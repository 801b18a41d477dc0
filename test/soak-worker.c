/* zkl-soak's worker: one process, two sessions (each through fault
 * proxies of its own, one per server node), three lock handles per
 * session, contending on the run's locks. It tells the checker each time
 * a handle enters the critical section, writes to the guarded record,
 * and leaves; it takes the checker's commands: faults on a session's
 * proxies, draining everything at the end, counting what is left on the
 * server. The checker, not the worker, judges. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "faultproxy.h"
#include "soak.h"
#include "zklock.h"
#include "zklock_libevent.h"

static void lock_path(char *buf, size_t size, int k)
{
    snprintf(buf, size, "%s/lock-%d", cfg.root, k);
}

struct handle;

static struct worker {
    int id, fd, draining, count_left, count_sum, count_err;
    struct event_base *base;
    fp_t *fp[CLIENTS][MAX_NODES]; /* a session's proxy to each node */
    zkl_client_t *c[CLIENTS];
    struct event *cmd_ev, *drain_timer, *undelay[CLIENTS];
    uint64_t drain_deadline;
} W;

static struct handle {
    int id, client, lock, inside, hold_ticks;
    int kind; /* zkl_lock_kind_t */
    uint64_t token;
    zkl_lock_t *lk;
    struct event *tick;
} H[PER_WORKER];

static void send_msg(int type, int handle, int lock, int arg, uint64_t tok)
{
    struct msg m = {type, W.id, handle, lock, arg,
                    handle >= 0 ? H[handle].client : 0, tok,
                    atomic_fetch_add(next_seq, 1)};

    while (send(W.fd, &m, sizeof m, 0) < 0 && errno == EINTR)
        ;
}

static void arm_tick(struct handle *h, long ms)
{
    struct timeval tv = tv_ms(ms);

    evtimer_add(h->tick, &tv);
}

static void leave(struct handle *h, int why)
{
    if (h->inside) {
        h->inside = 0;
        send_msg(M_EXIT, h->id, h->lock, why, h->token);
    }
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct handle *h = arg;

    (void)fd;
    (void)what;
    if (W.draining)
        return;
    switch (zkl_lock_state(h->lk)) {
    case ZKL_STATE_IDLE: {
        /* Mostly wait forever; sometimes with a timeout, sometimes a
         * try-lock, so those paths meet the faults too. */
        unsigned r = rnd(10);
        long t = r < 7 ? -1 : r < 9 ? 200 + (long)rnd(3000) : 0;

        if (zkl_lock_acquire(h->lk, t) == ZKL_OK)
            send_msg(M_WAIT, h->id, h->lock, 0, 0);
        else
            arm_tick(h, 50);
        break;
    }
    case ZKL_STATE_HELD:
        /* The hold is counted in ticks, not wall time: a process frozen
         * mid-hold goes on as if nothing happened when it thaws, as a
         * real one would after a long pause. */
        if (h->hold_ticks-- <= 0) {
            leave(h, EXIT_RELEASE);
            zkl_lock_release(h->lk);
            break;
        }
        /* Readers and leases share the lock: only a writer or a mutex
         * holder writes to the guarded record. */
        if (h->kind != ZKL_KIND_READ && h->kind != ZKL_KIND_LEASE)
            send_msg(M_WRITE, h->id, h->lock, 0, h->token);
        arm_tick(h, 5);
        break;
    default:
        break;
    }
}

static void on_lock(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                    void *arg)
{
    struct handle *h = arg;

    (void)lk;
    switch (ev) {
    case ZKL_LOCK_ACQUIRED:
        zkl_lock_token(h->lk, &h->token);
        h->inside = 1;
        /* Mostly short holds; some long enough for faults to land on
         * holders. */
        h->hold_ticks = (int)(rnd(8) == 0 ? 60 + rnd(400) : rnd(6));
        send_msg(M_ENTER, h->id, h->lock, h->kind, h->token);
        arm_tick(h, 5);
        break;
    case ZKL_LOCK_FAILED:
        send_msg(M_FAILED, h->id, h->lock, status, 0);
        if (cfg.sabotage && status == ZKL_ETIMEDOUT) {
            /* Proves the checker can fail: act as if the timed-out
             * acquire had succeeded, with a made-up token. */
            send_msg(M_ENTER, h->id, h->lock, h->kind, 1);
            send_msg(M_EXIT, h->id, h->lock, EXIT_RELEASE, 1);
        }
        arm_tick(h, (long)rnd(20));
        break;
    case ZKL_LOCK_SUSPENDED:
        leave(h, EXIT_SUSPENDED);
        break;
    case ZKL_LOCK_RESTORED:
        if (!W.draining) {
            h->inside = 1;
            send_msg(M_REENTER, h->id, h->lock, h->kind, h->token);
        }
        break;
    case ZKL_LOCK_LOST:
        h->inside = 0;
        send_msg(M_EXIT, h->id, h->lock, EXIT_LOST, h->token);
        arm_tick(h, (long)rnd(20));
        break;
    case ZKL_LOCK_RELEASED:
        arm_tick(h, (long)rnd(20));
        break;
    case ZKL_LOCK_REVOKE_REQUESTED:
    case ZKL_LOCK_QUEUED:
        break;
    }
}

static void on_conn(zkl_client_t *c, zkl_conn_event_t ev, void *arg)
{
    (void)c;
    if (ev == ZKL_CONN_EXPIRED)
        send_msg(M_EXPIRED, -1, 0, (int)(intptr_t)arg, 0);
}

static int all_idle(void)
{
    int i;

    for (i = 0; i < PER_WORKER; i++)
        if (zkl_lock_state(H[i].lk) != ZKL_STATE_IDLE)
            return 0;
    for (i = 0; i < CLIENTS; i++)
        if (zkl_client_pending(W.c[i]) != 0)
            return 0;
    return 1;
}

static void drain_check(evutil_socket_t fd, short what, void *arg)
{
    struct timeval tv = tv_ms(50);
    int i, stuck = 0;

    (void)fd;
    (void)what;
    (void)arg;
    if (!all_idle() && now_ms() < W.drain_deadline) {
        for (i = 0; i < PER_WORKER; i++) /* release what came since */
            if (zkl_lock_state(H[i].lk) == ZKL_STATE_HELD) {
                leave(&H[i], EXIT_RELEASE);
                zkl_lock_release(H[i].lk);
            }
        evtimer_add(W.drain_timer, &tv);
        return;
    }
    for (i = 0; i < PER_WORKER; i++)
        stuck += zkl_lock_state(H[i].lk) != ZKL_STATE_IDLE;
    for (i = 0; i < CLIENTS; i++)
        stuck += (int)zkl_client_pending(W.c[i]);
    send_msg(M_DRAINED, -1, 0, stuck, 0);
}

static void count_done(zkl_client_t *c, int status, const char *const *names,
                       size_t n, void *arg)
{
    (void)c;
    (void)names;
    (void)arg;
    W.count_err |= status != ZKL_OK;
    W.count_sum += (int)n;
    if (--W.count_left == 0)
        send_msg(M_COUNT, -1, 0, W.count_err ? -1 : W.count_sum, 0);
}

/* Faults on a session act on its proxies to every node, so that it
 * cannot escape a stall by moving to another node; a lost reply is aimed
 * at the node it is connected to (at all of them if it is between
 * connections, where the first reconnection takes it). */
static void session_fault(int k, int type, int ms)
{
    int j, open = 0;

    for (j = 0; j < cfg.nodes; j++)
        open += fp_open(W.fp[k][j]) > 0;
    for (j = 0; j < cfg.nodes; j++) {
        fp_t *fp = W.fp[k][j];

        switch (type) {
        case C_CUT:
            fp_cut(fp);
            break;
        case C_LOSE:
            if (open == 0 || fp_open(fp) > 0)
                fp_lose_next_reply(fp, ms);
            break;
        case C_DELAY:
            fp_latency(fp, ms);
            break;
        case C_STALL:
            fp_stall_for(fp, ms);
            break;
        }
    }
}

static void undelay(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    session_fault((int)(intptr_t)arg, C_DELAY, 0);
}

static void on_cmd(evutil_socket_t fd, short what, void *arg)
{
    struct msg m;
    struct timeval tv;
    char p[256];
    int i;
    ssize_t r;

    (void)what;
    (void)arg;
    while ((r = recv(fd, &m, sizeof m, MSG_DONTWAIT)) == sizeof m) {
        int k = m.client % CLIENTS;

        switch (m.type) {
        case C_CUT:
        case C_STALL:
            session_fault(k, m.type, m.arg);
            break;
        case C_LOSE:
            session_fault(k, C_LOSE, 100);
            break;
        case C_DELAY:
            session_fault(k, C_DELAY, m.arg);
            tv = tv_ms(1500);
            evtimer_add(W.undelay[k], &tv);
            break;
        case C_DRAIN:
            W.draining = 1;
            W.drain_deadline = now_ms() + 30000;
            for (i = 0; i < PER_WORKER; i++) {
                evtimer_del(H[i].tick);
                if (zkl_lock_state(H[i].lk) == ZKL_STATE_HELD) {
                    leave(&H[i], EXIT_RELEASE);
                    zkl_lock_release(H[i].lk);
                } else {
                    zkl_lock_cancel(H[i].lk);
                }
            }
            drain_check(-1, 0, NULL);
            break;
        case C_COUNT:
            /* The semaphore's nodes are under its two children. */
            W.count_left = LOCKS + 1;
            W.count_sum = 0;
            W.count_err = 0;
            for (i = 0; i < LOCKS + 1; i++) {
                lock_path(p, sizeof p, i < LOCKS ? i : SEM_LOCK);
                strcat(p, i == SEM_LOCK ? "/leases" : i == LOCKS ? "/locks" : "");
                if (zkl_contenders(W.c[0], p, count_done, NULL) != ZKL_OK)
                    count_done(W.c[0], ZKL_EZK, NULL, 0, NULL);
            }
            break;
        case C_QUIT:
            event_base_loopbreak(W.base);
            return;
        }
    }
    if (r == 0)
        event_base_loopbreak(W.base); /* the checker is gone */
}

int worker_main(int id, int fd)
{
    zkl_options_t *o;
    char p[256], hosts[MAX_NODES * 24];
    int i, j, k;

    W.id = id;
    W.fd = fd;
    rng_state = (cfg.seed + 1) * 0x9E3779B97F4A7C15ull + (uint64_t)id * 7919;
    W.base = event_base_new();
    for (k = 0; k < CLIENTS; k++) {
        hosts[0] = '\0';
        for (j = 0; j < cfg.nodes; j++) {
            if ((W.fp[k][j] = fp_new(W.base, cfg.port[j])) == NULL)
                return 1;
            if (j > 0)
                strcat(hosts, ",");
            strcat(hosts, fp_hosts(W.fp[k][j]));
        }
        W.undelay[k] = evtimer_new(W.base, undelay, (void *)(intptr_t)k);
        if (zkl_options_new(&o) != ZKL_OK)
            return 1;
        zkl_options_set_servers(o, hosts);
        zkl_options_set_session_timeout(o, cfg.session_ms);
        zkl_options_set_conn_cb(o, on_conn, (void *)(intptr_t)k);
        if (zkl_client_new(&W.c[k], o) != ZKL_OK ||
            zkl_libevent_attach(W.c[k], W.base) != ZKL_OK)
            return 1;
        zkl_options_free(o);
    }
    for (i = 0; i < PER_WORKER; i++) {
        struct handle *h = &H[i];

        h->id = i;
        h->client = i / HANDLES;
        h->lock = (id + i) % LOCKS;
        /* On the read/write lock, two readers to a writer; on the
         * semaphore, leases. */
        h->kind = h->lock == SEM_LOCK      ? ZKL_KIND_LEASE
                  : h->lock != RW_LOCK     ? ZKL_KIND_MUTEX
                  : (id + i / LOCKS) % 3 ? ZKL_KIND_READ
                                         : ZKL_KIND_WRITE;
        lock_path(p, sizeof p, h->lock);
        h->tick = evtimer_new(W.base, on_tick, h);
        if ((h->kind == ZKL_KIND_LEASE
                 ? zkl_lease_new(&h->lk, W.c[h->client], p, SEM_LEASES,
                                 on_lock, h)
                 : zkl_lock_new_kind(&h->lk, W.c[h->client], p,
                                     (zkl_lock_kind_t)h->kind, on_lock,
                                     h)) != ZKL_OK)
            return 1;
        arm_tick(h, (long)rnd(100));
    }
    W.drain_timer = evtimer_new(W.base, drain_check, NULL);
    W.cmd_ev = event_new(W.base, fd, EV_READ | EV_PERSIST, on_cmd, NULL);
    event_add(W.cmd_ev, NULL);
    event_base_dispatch(W.base);

    for (i = 0; i < PER_WORKER; i++) {
        zkl_lock_free(H[i].lk);
        event_free(H[i].tick);
    }
    for (k = 0; k < CLIENTS; k++) {
        zkl_client_free(W.c[k]);
        for (j = 0; j < cfg.nodes; j++)
            fp_free(W.fp[k][j]);
        event_free(W.undelay[k]);
    }
    event_free(W.cmd_ev);
    event_free(W.drain_timer);
    event_base_free(W.base);
    close(fd);
    return 0;
}
