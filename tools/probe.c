/* Why there is no session: each server of the list is tried with a
 * plain TCP connection, in parallel, for at most about 4 s, and what it
 * did is said in one line: refused, no answer, closed at once without
 * reading anything (the connection limit), or kept open without giving
 * a session (asked "srvr", which says whether it serves). */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli.h"

#define PROBES_MAX 32
#define CONNECT_S 2.0 /* for an answer to the connection */
#define CLOSE_S 1.0   /* for a close that comes unasked */
#define ASK_S 1.0     /* for srvr's answer */

enum { CONNECTING, OPEN, ASKED, DONE };

struct probe {
    int fd, state;
    double since;
    char name[320];
    char reply[512];
    size_t got;
};

static void done(struct probe *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void done(struct probe *p, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s: %s: ", prog, p->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (p->fd >= 0)
        close(p->fd);
    p->fd = -1;
    p->state = DONE;
}

static void refused(struct probe *p, int err)
{
    if (err == ECONNREFUSED)
        done(p, "refuses connections (nothing listens on that port)");
    else if (err == ETIMEDOUT)
        done(p, "no answer (the host is down, or a firewall drops the "
             "packets)");
    else
        done(p, "cannot connect: %s", strerror(err));
}

/* What ZooKeeper does past maxClientCnxns (NIOServerCnxnFactory's
 * doAccept: accept, then close with a reset, reading nothing). */
static void closed_at_once(struct probe *p)
{
    done(p, "closes new connections at once: its per-client connection "
         "limit (maxClientCnxns, 60 unless zoo.cfg sets it) is reached: "
         "too many connections from this address");
}

/* srvr's answer, or what came instead. */
static void judge(struct probe *p)
{
    char *mode;

    p->reply[p->got] = '\0';
    if (strstr(p->reply, "not currently serving") != NULL) {
        done(p, "accepts connections but is not serving requests (an "
             "ensemble member without a quorum?)");
    } else if ((mode = strstr(p->reply, "Mode: ")) != NULL) {
        mode[6 + strcspn(mode + 6, "\r\n")] = '\0';
        done(p, "serves (%s) but gave this client no session; --verbose "
             "shows the ZooKeeper client's log", mode);
    } else {
        done(p, "accepts connections and keeps them open but gave no "
             "session (not serving: no quorum? or not a ZooKeeper "
             "server)");
    }
}

static void start(struct probe *p, const struct addrinfo *ai)
{
    p->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK |
                                      SOCK_CLOEXEC, ai->ai_protocol);
    p->since = now_s();
    if (p->fd < 0) {
        done(p, "cannot make a socket: %s", strerror(errno));
        return;
    }
    if (connect(p->fd, ai->ai_addr, ai->ai_addrlen) == 0)
        p->state = OPEN;
    else if (errno == EINPROGRESS)
        p->state = CONNECTING;
    else
        refused(p, errno);
}

/* One turn for p after poll() said revents (0: none). */
static void step(struct probe *p, short revents, double now)
{
    int err = 0;
    socklen_t len = sizeof err;
    ssize_t n;

    switch (p->state) {
    case CONNECTING:
        if (revents != 0) {
            if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
                err = errno;
            if (err == ECONNRESET || err == EPIPE) {
                closed_at_once(p); /* accepted, and reset before we saw */
            } else if (err != 0) {
                refused(p, err);
            } else {
                p->state = OPEN;
                p->since = now;
            }
        } else if (now - p->since >= CONNECT_S) {
            done(p, "no answer within %g s (the host is down, or a firewall "
                 "drops the packets)", CONNECT_S);
        }
        break;
    case OPEN:
        if (revents != 0) {
            char c;

            n = read(p->fd, &c, 1);
            if (n == 0 || (n < 0 && errno != EAGAIN))
                closed_at_once(p);
            else if (n > 0)
                done(p, "speaks first, unasked: not a ZooKeeper server");
        } else if (now - p->since >= CLOSE_S) {
            if (write(p->fd, "srvr", 4) != 4) {
                done(p, "accepts connections but gave no session");
                break;
            }
            p->state = ASKED;
            p->since = now;
        }
        break;
    case ASKED:
        if (revents != 0) {
            n = read(p->fd, p->reply + p->got, sizeof p->reply - 1 - p->got);
            if (n > 0)
                p->got += (size_t)n;
            if (n <= 0 || p->got == sizeof p->reply - 1)
                judge(p);
        } else if (now - p->since >= ASK_S) {
            judge(p);
        }
        break;
    }
}

void probe_servers(void)
{
    struct probe pr[PROBES_MAX];
    struct pollfd pfd[PROBES_MAX];
    size_t i, n = 0, k;

    for (i = 0; i < servers_count() && n < PROBES_MAX; i++) {
        struct addrinfo hints, *res, *ai;
        int per = 0;

        memset(&hints, 0, sizeof hints);
        hints.ai_socktype = SOCK_STREAM;
        if (getaddrinfo(servers_host(i), servers_port(i), &hints, &res) != 0)
            continue; /* said when the list was loaded */
        for (ai = res; ai != NULL && n < PROBES_MAX && per < 4;
             ai = ai->ai_next, per++) {
            char addr[NI_MAXHOST];
            struct probe *p = &pr[n++];

            memset(p, 0, sizeof *p);
            p->fd = -1;
            if (getnameinfo(ai->ai_addr, ai->ai_addrlen, addr, sizeof addr,
                            NULL, 0, NI_NUMERICHOST) != 0)
                snprintf(addr, sizeof addr, "?");
            if (strcmp(addr, servers_host(i)) == 0)
                snprintf(p->name, sizeof p->name, "%.200s:%s", servers_host(i),
                         servers_port(i));
            else
                snprintf(p->name, sizeof p->name, "%.200s:%s (%.64s)",
                         servers_host(i), servers_port(i), addr);
            start(p, ai);
        }
        freeaddrinfo(res);
    }
    for (;;) {
        double now = now_s();

        for (i = k = 0; i < n; i++) {
            if (pr[i].state == DONE)
                continue;
            pfd[k].fd = pr[i].fd;
            pfd[k].events = pr[i].state == CONNECTING ? POLLOUT : POLLIN;
            pfd[k++].revents = 0;
        }
        if (k == 0)
            return;
        poll(pfd, k, 100);
        now = now_s();
        for (i = k = 0; i < n; i++)
            if (pr[i].state != DONE)
                step(&pr[i], pfd[k++].revents, now);
    }
}
