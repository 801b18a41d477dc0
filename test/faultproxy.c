/* See faultproxy.h. One pair of bufferevents per proxied connection. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "faultproxy.h"

struct pair {
    fp_t *fp;
    struct bufferevent *cli, *srv;
    struct pair *next;
    int losing;      /* forwarding a request whose reply will be lost */
};

struct fp {
    struct event_base *base;
    struct evconnlistener *lst;
    uint16_t target;
    char hosts[32];
    struct pair *pairs;
    int stalled, refusing, accepted;
    int lose_ms;     /* armed fp_lose_next_reply, 0 = off */
    struct event *lose_timer;
};

static void set_rst(struct bufferevent *b)
{
    struct linger lg = {1, 0};
    evutil_socket_t fd = bufferevent_getfd(b);

    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
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
    set_rst(p->cli);
    set_rst(p->srv);
    bufferevent_free(p->cli);
    bufferevent_free(p->srv);
    free(p);
}

static void pair_apply(struct pair *p)
{
    if (p->fp->stalled) {
        bufferevent_disable(p->cli, EV_READ);
        bufferevent_disable(p->srv, EV_READ);
    } else {
        bufferevent_enable(p->cli, EV_READ);
        if (p->losing)
            bufferevent_disable(p->srv, EV_READ); /* replies never read */
        else
            bufferevent_enable(p->srv, EV_READ);
    }
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
}

static void on_read(struct bufferevent *from, void *arg)
{
    struct pair *p = arg;
    struct bufferevent *to = from == p->cli ? p->srv : p->cli;

    if (from == p->cli && p->fp->lose_ms > 0 && !p->losing) {
        struct timeval tv = {p->fp->lose_ms / 1000,
                             (p->fp->lose_ms % 1000) * 1000};

        p->losing = 1;
        p->fp->lose_ms = 0;
        pair_apply(p);
        evtimer_add(p->fp->lose_timer, &tv);
    }
    bufferevent_write_buffer(to, bufferevent_get_input(from));
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
    memset(&to, 0, sizeof to);
    to.sin_family = AF_INET;
    to.sin_port = htons(fp->target);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bufferevent_setcb(p->cli, on_read, NULL, on_event, p);
    bufferevent_setcb(p->srv, on_read, NULL, on_event, p);
    if (bufferevent_socket_connect(p->srv, (struct sockaddr *)&to,
                                   sizeof to) != 0) {
        bufferevent_free(p->cli);
        bufferevent_free(p->srv);
        free(p);
        return;
    }
    p->next = fp->pairs;
    fp->pairs = p;
    pair_apply(p);
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
    return fp;
}

void fp_free(fp_t *fp)
{
    while (fp->pairs != NULL)
        pair_close(fp->pairs);
    evconnlistener_free(fp->lst);
    event_free(fp->lose_timer);
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
    for (p = fp->pairs; p != NULL; p = p->next)
        pair_apply(p);
}

void fp_cut(fp_t *fp)
{
    while (fp->pairs != NULL)
        pair_close(fp->pairs);
}

void fp_refuse(fp_t *fp, int on)
{
    fp->refusing = on;
}

void fp_lose_next_reply(fp_t *fp, int delay_ms)
{
    fp->lose_ms = delay_ms > 0 ? delay_ms : 1;
}

int fp_accepted(fp_t *fp)
{
    return fp->accepted;
}
