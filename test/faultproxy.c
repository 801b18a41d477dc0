/* See faultproxy.h. One pair of bufferevents per proxied connection.
 * Client bytes are forwarded a whole frame at a time, so an armed fault
 * sees exactly one request; server bytes are forwarded as they come. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "faultproxy.h"

/* Bytes waiting out the added latency, in arrival order. */
struct chunk {
    struct chunk *next;
    uint64_t due_ms;
    struct evbuffer *buf;
};

struct lane {
    struct bufferevent *to;
    struct chunk *head, **tail;
};

struct pair {
    fp_t *fp;
    struct bufferevent *cli, *srv;
    struct pair *next;
    struct lane up, down;      /* client -> server, server -> client */
    struct event *lat_timer;   /* flushes the lanes */
    struct event *hold_timer;  /* ends an FP_DELAY */
    int hello_seen;            /* the connect request has passed */
    int losing;                /* a request's reply will be lost */
    int holding;               /* FP_DELAY: replies not read for now */
    int recode_xid, recode_err;/* FP_RECODE: the reply to rewrite */
    int recoding;
};

struct fp {
    struct event_base *base;
    struct evconnlistener *lst;
    uint16_t target;
    char hosts[32];
    struct pair *pairs;
    int stalled, refusing, accepted;
    int latency_up_ms, latency_down_ms;
    void (*on_reset)(void *);  /* after the proxy reset connections */
    void *on_reset_arg;
    int arm_op, arm_ms, fired;
    char arm_path[64];         /* "": any path */
    fp_fault_t arm_fault;      /* 0: nothing armed */
    int arm_err;               /* FP_RECODE's code */
    struct event *lose_timer, *unstall_timer;
};

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static struct timeval tv_ms(long ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    return tv;
}

/* Resets the connection now: libevent defers the close of a freed
 * bufferevent to a later loop turn, and a test hook (fp_on_reset) must
 * run after the peer has seen the reset. */
static void reset_now(struct bufferevent *b)
{
    struct linger lg = {1, 0};
    evutil_socket_t fd = bufferevent_getfd(b);

    if (fd < 0)
        return;
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    bufferevent_setfd(b, -1);
    evutil_closesocket(fd);
}

static void lane_clear(struct lane *l)
{
    struct chunk *k;

    while ((k = l->head) != NULL) {
        l->head = k->next;
        evbuffer_free(k->buf);
        free(k);
    }
    l->tail = &l->head;
}

static void pair_close(struct pair *p)
{
    struct pair **pp;

    for (pp = &p->fp->pairs; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    }
    reset_now(p->cli);
    reset_now(p->srv);
    bufferevent_free(p->cli);
    bufferevent_free(p->srv);
    lane_clear(&p->up);
    lane_clear(&p->down);
    event_free(p->lat_timer);
    event_free(p->hold_timer);
    free(p);
}

static void pair_apply(struct pair *p)
{
    if (p->fp->stalled) {
        bufferevent_disable(p->cli, EV_READ);
        bufferevent_disable(p->srv, EV_READ);
        return;
    }
    bufferevent_enable(p->cli, EV_READ);
    if (p->losing || p->holding)
        bufferevent_disable(p->srv, EV_READ);
    else
        bufferevent_enable(p->srv, EV_READ);
}

static void arm_lat_timer(struct pair *p)
{
    uint64_t due = UINT64_MAX, now = now_ms();
    struct timeval tv;

    if (p->up.head != NULL)
        due = p->up.head->due_ms;
    if (p->down.head != NULL && p->down.head->due_ms < due)
        due = p->down.head->due_ms;
    if (due == UINT64_MAX)
        return;
    tv = tv_ms(due > now ? (long)(due - now) : 0);
    evtimer_add(p->lat_timer, &tv);
}

static void lane_flush(struct lane *l, uint64_t now)
{
    struct chunk *k;

    while ((k = l->head) != NULL && k->due_ms <= now) {
        l->head = k->next;
        if (l->head == NULL)
            l->tail = &l->head;
        bufferevent_write_buffer(l->to, k->buf);
        evbuffer_free(k->buf);
        free(k);
    }
}

static void lat_fire(evutil_socket_t fd, short what, void *arg)
{
    struct pair *p = arg;
    uint64_t now = now_ms();

    (void)fd;
    (void)what;
    lane_flush(&p->up, now);
    lane_flush(&p->down, now);
    arm_lat_timer(p);
}

/* Moves all of buf on towards the lane's end, now or after the latency;
 * bytes never overtake bytes queued earlier. */
static void lane_send(struct pair *p, struct lane *l, struct evbuffer *buf)
{
    struct chunk *k;
    int lat = l == &p->up ? p->fp->latency_up_ms : p->fp->latency_down_ms;

    if (lat == 0 && l->head == NULL) {
        bufferevent_write_buffer(l->to, buf);
        return;
    }
    k = calloc(1, sizeof *k);
    k->buf = evbuffer_new();
    k->due_ms = now_ms() + (uint64_t)lat;
    evbuffer_add_buffer(k->buf, buf);
    *l->tail = k;
    l->tail = &k->next;
    arm_lat_timer(p);
}

static void reset_done(fp_t *fp)
{
    if (fp->on_reset != NULL)
        fp->on_reset(fp->on_reset_arg);
}

static void lose_fire(evutil_socket_t fd, short what, void *arg)
{
    fp_t *fp = arg;
    struct pair *p = fp->pairs, *nx;

    (void)fd;
    (void)what;
    for (; p != NULL; p = nx) {
        nx = p->next;
        if (p->losing)
            pair_close(p);
    }
    reset_done(fp);
}

static void hold_fire(evutil_socket_t fd, short what, void *arg)
{
    struct pair *p = arg;

    (void)fd;
    (void)what;
    p->holding = 0;
    pair_apply(p);
}

static int be32(const unsigned char *b)
{
    uint32_t v;

    memcpy(&v, b, 4);
    return (int)ntohl(v);
}

/* Does the request's path (the jute string right after the header)
 * contain fp->arm_path? */
static int path_matches(const fp_t *fp, struct evbuffer *frame)
{
    unsigned char buf[16 + 1024 + 1];
    size_t got;
    int len;

    if (fp->arm_path[0] == '\0')
        return 1;
    got = (size_t)evbuffer_copyout(frame, buf, sizeof buf - 1);
    if (got < 16)
        return 0;
    len = be32(buf + 12);
    if (len < 0 || (size_t)len > got - 16)
        return 0;
    buf[16 + len] = '\0';
    return strstr((const char *)buf + 16, fp->arm_path) != NULL;
}

static int aimed_at(const fp_t *fp, int op, struct evbuffer *frame)
{
    if (fp->arm_fault == 0)
        return 0;
    if (fp->arm_op != FP_OP_ANY)
        return op == fp->arm_op && path_matches(fp, frame);
    return op > 0 && op != FP_OP_PING && op != 100 && op != 101 &&
           path_matches(fp, frame);
}

/* Sets off the armed fault on p with frame, the request it aims at.
 * Returns 0 if p is gone. */
static int fire(struct pair *p, struct evbuffer *frame)
{
    fp_t *fp = p->fp;
    struct timeval tv = tv_ms(fp->arm_ms);
    fp_fault_t f = fp->arm_fault;

    fp->arm_fault = 0;
    fp->fired++;
    if (f == FP_RECODE) {
        unsigned char hdr[8];

        evbuffer_copyout(frame, hdr, sizeof hdr);
        p->recode_xid = be32(hdr + 4);
        p->recode_err = fp->arm_err;
        p->recoding = 1;
        lane_send(p, &p->up, frame);
        return 1;
    }
    if (f == FP_CUT) {
        pair_close(p);
        reset_done(fp);
        return 0;
    }
    lane_send(p, &p->up, frame);
    switch (f) {
    case FP_LOSE:
        p->losing = 1;
        evtimer_add(fp->lose_timer, &tv);
        break;
    case FP_DELAY:
        p->holding = 1;
        evtimer_add(p->hold_timer, &tv);
        break;
    case FP_STALL:
        fp_stall_for(fp, fp->arm_ms);
        return 1;
    default:
        break;
    }
    pair_apply(p);
    return 1;
}

/* Moves the next whole frame (a 4-byte length, then that many bytes) of
 * in into frame, its first 20 bytes (or fewer) copied into hdr; its
 * length after the prefix in *n. 0 while no whole frame is there. */
static int next_frame(struct evbuffer *in, struct evbuffer *frame,
                      unsigned char hdr[20], size_t *n)
{
    size_t len = evbuffer_get_length(in);

    if (len < 4)
        return 0;
    memset(hdr, 0, 20);
    evbuffer_copyout(in, hdr, len < 20 ? len : 20);
    *n = (size_t)(uint32_t)be32(hdr);
    if (len < 4 + *n)
        return 0;
    evbuffer_remove_buffer(in, frame, 4 + *n);
    return 1;
}

static void from_client(struct pair *p)
{
    struct evbuffer *in = bufferevent_get_input(p->cli);
    struct evbuffer *frame = evbuffer_new();
    unsigned char hdr[20];
    size_t n;

    while (next_frame(in, frame, hdr, &n)) {
        int op = -1;

        if (p->hello_seen && n >= 8)
            op = be32(hdr + 8);
        p->hello_seen = 1;
        if (aimed_at(p->fp, op, frame)) {
            if (!fire(p, frame))
                break;
        } else {
            lane_send(p, &p->up, frame);
        }
    }
    evbuffer_free(frame);
}

/* Server bytes go on whole frames at a time (a 4-byte length, then for
 * a reply an xid, a zxid and an error code), so that FP_RECODE can find
 * the reply it rewrites. */
static void from_server(struct pair *p)
{
    struct evbuffer *in = bufferevent_get_input(p->srv);
    struct evbuffer *frame = evbuffer_new();
    unsigned char hdr[20];
    size_t n;

    while (next_frame(in, frame, hdr, &n)) {
        if (p->recoding && n >= 16 && be32(hdr + 4) == p->recode_xid) {
            /* The same reply, as the server would send an error: the
             * header alone, with the code replaced. */
            uint32_t v[2];

            p->recoding = 0;
            evbuffer_drain(frame, evbuffer_get_length(frame));
            v[0] = htonl(16);
            evbuffer_add(frame, v, 4);
            evbuffer_add(frame, hdr + 4, 12); /* xid, zxid */
            v[1] = htonl((uint32_t)p->recode_err);
            evbuffer_add(frame, &v[1], 4);
        }
        lane_send(p, &p->down, frame);
    }
    evbuffer_free(frame);
}

static void on_read(struct bufferevent *from, void *arg)
{
    struct pair *p = arg;

    if (from == p->cli)
        from_client(p);
    else
        from_server(p);
}

static void on_event(struct bufferevent *b, short what, void *arg)
{
    (void)b;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
        pair_close(arg);
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd,
                      struct sockaddr *sa, int salen, void *arg)
{
    fp_t *fp = arg;
    struct sockaddr_in to;
    struct pair *p;

    (void)l;
    (void)sa;
    (void)salen;
    fp->accepted++;
    if (fp->refusing) {
        struct linger lg = {1, 0};

        setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        close(fd);
        return;
    }
    p = calloc(1, sizeof *p);
    p->fp = fp;
    p->cli = bufferevent_socket_new(fp->base, fd, BEV_OPT_CLOSE_ON_FREE);
    p->srv = bufferevent_socket_new(fp->base, -1, BEV_OPT_CLOSE_ON_FREE);
    p->up.to = p->srv;
    p->up.tail = &p->up.head;
    p->down.to = p->cli;
    p->down.tail = &p->down.head;
    p->lat_timer = evtimer_new(fp->base, lat_fire, p);
    p->hold_timer = evtimer_new(fp->base, hold_fire, p);
    memset(&to, 0, sizeof to);
    to.sin_family = AF_INET;
    to.sin_port = htons(fp->target);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bufferevent_setcb(p->cli, on_read, NULL, on_event, p);
    bufferevent_setcb(p->srv, on_read, NULL, on_event, p);
    p->next = fp->pairs;
    fp->pairs = p;
    if (bufferevent_socket_connect(p->srv, (struct sockaddr *)&to,
                                   sizeof to) != 0) {
        pair_close(p);
        return;
    }
    pair_apply(p);
}

static void unstall_fire(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    fp_stall(arg, 0);
}

void fp_retarget(fp_t *fp, uint16_t target)
{
    fp->target = target;
}

fp_t *fp_new(struct event_base *base, uint16_t target)
{
    fp_t *fp = calloc(1, sizeof *fp);
    struct sockaddr_in sin;
    socklen_t len = sizeof sin;

    fp->base = base;
    fp->target = target;
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fp->lst = evconnlistener_new_bind(base, on_accept, fp,
                                      LEV_OPT_CLOSE_ON_FREE |
                                          LEV_OPT_REUSEABLE,
                                      64, (struct sockaddr *)&sin,
                                      sizeof sin);
    if (fp->lst == NULL) {
        free(fp);
        return NULL;
    }
    getsockname(evconnlistener_get_fd(fp->lst), (struct sockaddr *)&sin,
                &len);
    snprintf(fp->hosts, sizeof fp->hosts, "127.0.0.1:%u",
             (unsigned)ntohs(sin.sin_port));
    fp->lose_timer = evtimer_new(base, lose_fire, fp);
    fp->unstall_timer = evtimer_new(base, unstall_fire, fp);
    return fp;
}

void fp_free(fp_t *fp)
{
    while (fp->pairs != NULL)
        pair_close(fp->pairs);
    evconnlistener_free(fp->lst);
    event_free(fp->lose_timer);
    event_free(fp->unstall_timer);
    free(fp);
}

const char *fp_hosts(fp_t *fp)
{
    return fp->hosts;
}

void fp_stall(fp_t *fp, int on)
{
    struct pair *p;

    fp->stalled = on;
    if (!on)
        evtimer_del(fp->unstall_timer);
    for (p = fp->pairs; p != NULL; p = p->next)
        pair_apply(p);
}

void fp_stall_for(fp_t *fp, int ms)
{
    struct timeval tv = tv_ms(ms);

    fp_stall(fp, 1);
    evtimer_add(fp->unstall_timer, &tv);
}

void fp_cut(fp_t *fp)
{
    while (fp->pairs != NULL)
        pair_close(fp->pairs);
    reset_done(fp);
}

void fp_on_reset(fp_t *fp, void (*fn)(void *), void *arg)
{
    fp->on_reset = fn;
    fp->on_reset_arg = arg;
}

void fp_refuse(fp_t *fp, int on)
{
    fp->refusing = on;
}

void fp_latency(fp_t *fp, int ms)
{
    fp->latency_up_ms = fp->latency_down_ms = ms > 0 ? ms : 0;
}

void fp_latency_down(fp_t *fp, int ms)
{
    fp->latency_down_ms = ms > 0 ? ms : 0;
}

void fp_arm(fp_t *fp, int op, fp_fault_t fault, int ms)
{
    fp_arm_path(fp, op, fault, ms, NULL);
}

void fp_arm_path(fp_t *fp, int op, fp_fault_t fault, int ms,
                 const char *path_part)
{
    snprintf(fp->arm_path, sizeof fp->arm_path, "%s",
             path_part != NULL ? path_part : "");
    fp->arm_op = op;
    fp->arm_fault = fault;
    fp->arm_ms = ms > 0 ? ms : 1;
}

void fp_arm_recode(fp_t *fp, int op, int err)
{
    fp_arm(fp, op, FP_RECODE, 1);
    fp->arm_err = err;
}

void fp_lose_next_reply(fp_t *fp, int delay_ms)
{
    fp_arm(fp, FP_OP_ANY, FP_LOSE, delay_ms);
}

int fp_fired(fp_t *fp)
{
    return fp->fired;
}

int fp_accepted(fp_t *fp)
{
    return fp->accepted;
}

int fp_open(fp_t *fp)
{
    const struct pair *p;
    int n = 0;

    for (p = fp->pairs; p != NULL; p = p->next)
        n++;
    return n;
}
