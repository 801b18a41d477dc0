/* zkl-soak on the namespaced cluster (--netns DIR, test/netns.sh): the
 * faults are on real links. Every server node and every worker has a
 * network namespace of its own, linked to the others through a switch
 * (test/netswitch.c) that this file tells, through its FIFO DIR/ctl, to
 * drop or delay frames between ports, in one direction or both; a
 * worker's sessions connect straight to the servers, without proxies.
 *
 * A worker's links: cut from every server, cut one way only, cut from
 * the server it is connected to, or lossy (delay, jitter, loss). The
 * servers' links to one another: a follower from the leader (both ways
 * or one), a minority from the majority, the leader from every peer, or
 * one node's peer links lossy. Each heals after a while of its own; one
 * server fault at a time, as for node restarts, so that a quorum stands.
 *
 * What explains an overlap (post()):
 * - a worker's sessions, posted before the fault as the proxies' stalls
 *   are, when its links are out long enough that the server may expire
 *   them: a quarter of the session timeout or more (ZooKeeper counts
 *   from its last receipt, which may be a ping interval older, and TCP
 *   resends only after its backoff once the link is back);
 * - the sessions connected to a node cut off from the quorum: such a
 *   node keeps answering its clients' pings until it gives up on its
 *   leader (syncLimit), while the leader may expire those sessions
 *   sooner. Posted right after the cut, so that a hold granted meanwhile
 *   counts too. The servers' "cons" says which workers those are (by
 *   their addresses); when a node does not answer, every worker is.
 * A lossy worker link is not posted: its delays stay far below the
 * session timeout, and a session it costs must be told LOST in time. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "soak.h"

/* Addresses as netns.sh gives them. */
#define NODE_ADDR(j) (0x0a4d0100u + (unsigned)(j) + 1u) /* 10.77.1.(j+1) */
#define WORKER_NET "10.77.2."                           /* .(w+1) */

static struct {
    int ctl;                      /* the switch's FIFO */
    char run[32];                 /* RUNID */
    struct event *timer;          /* heals */
    uint64_t heal_w[MAX_WORKERS]; /* when worker w's links heal; 0 sound */
    uint64_t heal_s;              /* when the server fault heals; 0 none */
    char server_pairs[2][64];     /* the ports that server fault set */
} N = {-1, "", NULL, {0}, 0, {"", ""}};

int net_open(void)
{
    char path[4096];
    FILE *f;

    snprintf(path, sizeof path, "%s/runid", cfg.netns);
    if ((f = fopen(path, "r")) == NULL ||
        fscanf(f, "%31s", N.run) != 1) {
        perror(path);
        if (f != NULL)
            fclose(f);
        return -1;
    }
    fclose(f);
    snprintf(path, sizeof path, "%s/ctl", cfg.netns);
    /* Non-blocking: a switch that is gone must not stop the checker. */
    if ((N.ctl = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)) < 0) {
        perror(path);
        return -1;
    }
    return 0;
}

int net_enter(int worker)
{
    char path[256];
    int fd, rc;

    snprintf(path, sizeof path, "/var/run/netns/zkl%sw%d", N.run, worker);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        perror(path);
        return -1;
    }
    if ((rc = setns(fd, CLONE_NEWNET)) != 0)
        perror("setns");
    close(fd);
    if (N.ctl >= 0)
        close(N.ctl); /* the checker's */
    N.ctl = -1;
    return rc;
}

static void sw(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One command to the switch. */
static void sw(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    line[n++] = '\n';
    if (write(N.ctl, line, (size_t)n) != n)
        note("the switch did not take: %.*s (%s)", n - 1, line,
             strerror(errno));
}

/* The answer of node j to a four-letter command, asked from the hub
 * (whose links no fault touches); -1 when none came within a second. */
static int ask(int j, const char *cmd, char *buf, size_t size)
{
    struct sockaddr_in a;
    struct pollfd p;
    size_t have = 0;
    uint64_t until = now_ms() + 1000;
    int fd, err = 0;
    socklen_t len = sizeof err;

    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(cfg.port[j]);
    a.sin_addr.s_addr = htonl(NODE_ADDR(j));
    if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                     0)) < 0)
        return -1;
    p.fd = fd;
    p.events = POLLOUT;
    if ((connect(fd, (struct sockaddr *)&a, sizeof a) != 0 &&
         errno != EINPROGRESS) ||
        poll(&p, 1, 1000) != 1 ||
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0 ||
        send(fd, cmd, strlen(cmd), MSG_NOSIGNAL) != (ssize_t)strlen(cmd)) {
        close(fd);
        return -1;
    }
    p.events = POLLIN;
    while (have + 1 < size) {
        uint64_t now = now_ms();
        ssize_t r;

        if (now >= until || poll(&p, 1, (int)(until - now)) != 1)
            break;
        if ((r = read(fd, buf + have, size - 1 - have)) <= 0)
            break;
        have += (size_t)r;
    }
    close(fd);
    buf[have] = '\0';
    return have > 0 ? 0 : -1;
}

int net_leader(void)
{
    char out[2048];
    int j;

    for (j = 0; j < cfg.nodes; j++)
        if (ask(j, "srvr", out, sizeof out) == 0 &&
            strstr(out, "Mode: leader") != NULL)
            return j;
    return -1;
}

/* The workers with a connection to node j, a bit each; -1 when j does
 * not say (a node that does not serve lists none). */
static int clients_of(int j)
{
    static char out[65536];
    unsigned mask = 0;
    const char *p;

    if (ask(j, "cons", out, sizeof out) != 0)
        return -1;
    for (p = out; (p = strstr(p, "/" WORKER_NET)) != NULL; p++) {
        int w = atoi(p + 1 + strlen(WORKER_NET)) - 1;

        if (w >= 0 && w < cfg.workers)
            mask |= 1u << w;
    }
    return (int)mask;
}

static void post_sessions(int w)
{
    int c;

    for (c = 0; c < CLIENTS; c++)
        post(M_STALLED, w, c);
}

/* The sessions on nodes (a bit each) that a server fault cuts off: all
 * of them when a node does not say. */
static void post_nodes(unsigned nodes)
{
    unsigned workers = 0;
    int j, w, m;

    for (j = 0; j < cfg.nodes; j++) {
        if (!(nodes >> j & 1))
            continue;
        if ((m = clients_of(j)) < 0) {
            note("node %d did not list its connections: every worker "
                 "counts", j + 1);
            m = (1 << cfg.workers) - 1;
        }
        workers |= (unsigned)m;
    }
    for (w = 0; w < cfg.workers; w++)
        if (workers >> w & 1)
            post_sessions(w);
    if (nodes != 0)
        note("net: the sessions of workers 0x%x cut off with node(s) 0x%x",
             workers, nodes);
}

/* "s1,s3" for the nodes of a mask. */
static void node_list(unsigned nodes, char *buf, size_t size)
{
    size_t n = 0;
    int j;

    buf[0] = '\0';
    for (j = 0; j < cfg.nodes && n + 8 < size; j++)
        if (nodes >> j & 1)
            n += (size_t)snprintf(buf + n, size - n, "%ss%d", n ? "," : "",
                                  j + 1);
}

static void arm(void);

static void heal(evutil_socket_t fd, short what, void *arg)
{
    uint64_t now = now_ms();
    int w;

    (void)fd;
    (void)what;
    (void)arg;
    for (w = 0; w < cfg.workers; w++)
        if (N.heal_w[w] != 0 && now >= N.heal_w[w]) {
            sw("clear w%d *", w);
            sw("clear * w%d", w);
            N.heal_w[w] = 0;
        }
    if (N.heal_s != 0 && now >= N.heal_s) {
        sw("clear %s %s", N.server_pairs[0], N.server_pairs[1]);
        sw("clear %s %s", N.server_pairs[1], N.server_pairs[0]);
        N.heal_s = 0;
        K.server = SRV_UP;
        K.server_ok_since = now;
        K.last_restart = now; /* the next server fault counts from here */
    }
    arm();
}

static void arm(void)
{
    uint64_t now = now_ms(), next = N.heal_s;
    struct timeval tv;
    int w;

    for (w = 0; w < cfg.workers; w++)
        if (N.heal_w[w] != 0 && (next == 0 || N.heal_w[w] < next))
            next = N.heal_w[w];
    if (N.timer == NULL)
        N.timer = evtimer_new(K.base, heal, NULL);
    if (next == 0) {
        evtimer_del(N.timer);
        return;
    }
    tv = tv_ms(next > now ? (long)(next - now) : 0);
    evtimer_add(N.timer, &tv);
}

int net_busy(void)
{
    int w;

    for (w = 0; w < cfg.workers; w++)
        if (N.heal_w[w] != 0)
            return 1;
    return N.heal_s != 0;
}

/* How long a worker's links stay out: under a quarter of the session
 * timeout (the session must survive), up to one (it may or may not), or
 * past it by up to 3 s (it is gone). */
static long outage(void)
{
    long t = cfg.session_ms;
    unsigned r = rnd(10);

    return r < 4   ? 150 + (long)rnd((unsigned)(t / 4 - 150))
           : r < 7 ? t / 4 + (long)rnd((unsigned)(t * 3 / 4))
                   : t + (long)rnd(3000);
}

/* A node worker w is connected to, or any. */
static int server_of(int w)
{
    int j, start = (int)rnd((unsigned)cfg.nodes);

    for (j = 0; j < cfg.nodes; j++) {
        int m = clients_of((start + j) % cfg.nodes);

        if (m > 0 && (m >> w & 1))
            return (start + j) % cfg.nodes;
    }
    return start;
}

static int worker_fault(int kind, int w, uint64_t now)
{
    long ms = outage();
    int j, loss, delay, jitter;

    if (N.heal_w[w] != 0)
        return -1; /* one fault at a time on a worker's links */
    if (kind != F_NET_LOSSY && ms >= cfg.session_ms / 4)
        post_sessions(w);
    switch (kind) {
    case F_NET_CUT:
        sw("set w%d * drop", w);
        sw("set * w%d drop", w);
        break;
    case F_NET_ONE_WAY:
        if (rnd(2))
            sw("set w%d * drop", w); /* the servers hear nothing */
        else
            sw("set * w%d drop", w); /* it hears nothing */
        break;
    case F_NET_FROM_SERVER:
        j = server_of(w);
        sw("set w%d s%d drop", w, j + 1);
        sw("set s%d w%d drop", j + 1, w);
        break;
    case F_NET_LOSSY:
        loss = rnd(3) == 0 ? 0 : 1 + (int)rnd(10);
        delay = 20 + (int)rnd(230);
        jitter = (int)rnd((unsigned)delay / 2);
        ms = 1000 + (long)rnd(4000);
        sw("set w%d * lossy %d %d %d", w, loss, delay, jitter);
        sw("set * w%d lossy %d %d %d", w, loss, delay, jitter);
        break;
    }
    N.heal_w[w] = now + (uint64_t)ms;
    arm();
    return 0;
}

/* Cuts the nodes of mask a from those of mask b: both ways (dir 0), or
 * only a's frames to b (1), or only b's to a (2). */
static void cut(unsigned a, unsigned b, int dir)
{
    node_list(a, N.server_pairs[0], sizeof N.server_pairs[0]);
    node_list(b, N.server_pairs[1], sizeof N.server_pairs[1]);
    if (dir != 2)
        sw("set %s %s drop", N.server_pairs[0], N.server_pairs[1]);
    if (dir != 1)
        sw("set %s %s drop", N.server_pairs[1], N.server_pairs[0]);
}

static int server_fault(int kind, uint64_t now)
{
    unsigned all = (1u << cfg.nodes) - 1, part = 0;
    int leader = net_leader(), j, k, loss, delay, jitter;

    if (leader < 0 && kind != F_NET_PEER_LOSSY)
        return -1; /* no leader now: the next turn */
    switch (kind) {
    case F_NET_FOLLOWER: /* one follower from the leader */
        j = (int)rnd((unsigned)cfg.nodes - 1);
        j += j >= leader;
        part = 1u << j;
        k = (int)rnd(3);
        cut(part, 1u << leader, k);
        note("net: node %d cut from the leader, node %d (%s)", j + 1,
             leader + 1, k == 0 ? "both ways" : k == 1 ? "its frames only"
                                                        : "the leader's only");
        break;
    case F_NET_MINORITY: /* (n-1)/2 nodes from the rest */
        while (__builtin_popcount(part) < (cfg.nodes - 1) / 2)
            part |= 1u << rnd((unsigned)cfg.nodes);
        cut(part, all & ~part, 0);
        note("net: %s cut from the majority%s", N.server_pairs[0],
             part >> leader & 1 ? ", the leader among them" : "");
        break;
    case F_NET_LEADER: /* the leader from every peer */
        part = 1u << leader;
        cut(part, all & ~part, 0);
        note("net: the leader, node %d, cut from its peers", leader + 1);
        break;
    case F_NET_PEER_LOSSY: /* one node's links to its peers */
        j = (int)rnd((unsigned)cfg.nodes);
        loss = rnd(2) ? 0 : 1 + (int)rnd(5);
        delay = 20 + (int)rnd(180);
        jitter = (int)rnd((unsigned)delay / 2);
        if (loss > 0) /* it may lose its leader */
            part = 1u << j;
        node_list(1u << j, N.server_pairs[0], sizeof N.server_pairs[0]);
        node_list(all & ~(1u << j), N.server_pairs[1],
                  sizeof N.server_pairs[1]);
        sw("set %s %s lossy %d %d %d", N.server_pairs[0], N.server_pairs[1],
           loss, delay, jitter);
        sw("set %s %s lossy %d %d %d", N.server_pairs[1], N.server_pairs[0],
           loss, delay, jitter);
        break;
    }
    /* After the cut: a session that entered meanwhile is cut off too. */
    post_nodes(part);
    K.server = SRV_PARTED;
    K.last_restart = now;
    N.heal_s = now + 1500u + rnd((unsigned)cfg.session_ms * 2u);
    arm();
    return 0;
}

int net_inject(int kind, int w, uint64_t now)
{
    switch (kind) {
    case F_NET_CUT:
    case F_NET_ONE_WAY:
    case F_NET_FROM_SERVER:
    case F_NET_LOSSY:
        return worker_fault(kind, w, now);
    default:
        return server_fault(kind, now);
    }
}

/* The server fault due next, in turn (the fewest so far first), so that
 * even a short run has each: a node restart (the leader and a follower
 * in turn, soak-inject.c), a follower cut from the leader, a minority
 * from the majority, the leader from its peers, one node's lossy peer
 * links. With one server, its restart only. */
int net_server_kind(void)
{
    static const int kinds[] = {F_NODE_RESTART, F_NET_FOLLOWER,
                                F_NET_MINORITY, F_NET_LEADER,
                                F_NET_PEER_LOSSY};
    int i, best = 0;

    if (cfg.nodes < 3)
        return F_SERVER_RESTART;
    for (i = 1; i < (int)(sizeof kinds / sizeof *kinds); i++)
        if (K.by_kind[kinds[i]] < K.by_kind[kinds[best]])
            best = i;
    return kinds[best];
}
