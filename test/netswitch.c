/* zkl-netswitch: the Ethernet switch of a namespaced test cluster
 * (test/netns.sh), in which the safety checker breaks links.
 *
 * Each namespace of the cluster (a ZooKeeper node, a worker of zkl-soak,
 * the hub) has one link, a tap device "eth0", and this process is the
 * other end of every one of them: it moves each frame from the port it
 * came in on to the port of its destination, unless a rule for that
 * direction of that pair of ports says to drop it, to lose some frames,
 * or to hold them back a while. The kernels at the ends see a real
 * link: their TCP retransmits, backs off, half-opens and times out on
 * its own. Why not a kernel bridge with tc netem and drop filters: those
 * are kernel modules that some kernels lack (the machine this was
 * written on has neither); a tap device and this process need only
 * CONFIG_TUN.
 *
 *   zkl-netswitch RUNID CTL PORT...
 *
 * PORT (h, s1, w0, ...) is the tap "eth0" of namespace zkl<RUNID><PORT>,
 * made by netns.sh. CTL is a FIFO of commands, one per line:
 *
 *   set SRCS DSTS drop                         drop every frame
 *   set SRCS DSTS lossy LOSS_PCT DELAY_MS JITTER_MS
 *   clear SRCS DSTS                            back to a sound link
 *   clear                                      every link
 *
 * for every frame from a port of SRCS to a port of DSTS: comma-separated
 * port names, or "*", every port but h (the hub's, which the checker's
 * own questions to the servers use and no fault touches). Prints "ready"
 * once attached to every port; on SIGTERM or SIGINT prints what it did
 * (frames moved, dropped by rules, lost, delayed) and exits. */
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define MAX_PORTS 32
#define FRAME_MAX 2048  /* taps without offloads: frames fit the MTU */
#define QUEUE_MAX 20000 /* frames held back at once; more are lost */

/* What one direction of one pair of ports does to a frame. */
struct rule {
    int drop;
    unsigned loss_pm; /* per mille */
    unsigned delay_ms, jitter_ms;
    uint64_t last_due; /* frames of a pair stay in order */
};

static struct port {
    char name[16];
    int fd;
    unsigned char mac[6];
    int mac_known;
} P[MAX_PORTS];
static int nports;
static struct rule rules[MAX_PORTS][MAX_PORTS];

/* Frames held back, a heap by the time each is due. */
struct held {
    uint64_t due, seq;
    int dst;
    size_t len;
    unsigned char data[];
};
static struct held *heap[QUEUE_MAX];
static size_t nheld;
static uint64_t held_seq;

static unsigned long long moved, dropped, lost, delayed, overflow, failed;
static volatile sig_atomic_t stop;
static uint64_t rng = 88172645463325252ull;

static uint64_t now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return n ? (unsigned)(rng % n) : 0;
}

static int earlier(const struct held *a, const struct held *b)
{
    return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static void heap_push(struct held *h)
{
    size_t i = nheld++;

    heap[i] = h;
    while (i > 0 && earlier(heap[i], heap[(i - 1) / 2])) {
        struct held *t = heap[i];

        heap[i] = heap[(i - 1) / 2];
        heap[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static struct held *heap_pop(void)
{
    struct held *top = heap[0];
    size_t i = 0;

    heap[0] = heap[--nheld];
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        struct held *t;

        if (l < nheld && earlier(heap[l], heap[m]))
            m = l;
        if (r < nheld && earlier(heap[r], heap[m]))
            m = r;
        if (m == i)
            break;
        t = heap[i];
        heap[i] = heap[m];
        heap[m] = t;
        i = m;
    }
    return top;
}

static void put(int dst, const unsigned char *f, size_t len)
{
    /* A tap's write is the kernel receiving the frame: it does not wait;
     * a refusal is a frame lost on the wire. */
    if (write(P[dst].fd, f, len) != (ssize_t)len)
        failed++;
    else
        moved++;
}

/* One frame from port src towards port dst, through that link's rule. */
static void send_to(int src, int dst, const unsigned char *f, size_t len)
{
    struct rule *r = &rules[src][dst];
    struct held *h;
    uint64_t due;

    if (r->drop) {
        dropped++;
        return;
    }
    if (r->loss_pm > 0 && rnd(1000) < r->loss_pm) {
        lost++;
        return;
    }
    if (r->delay_ms == 0 && r->jitter_ms == 0 && r->last_due == 0) {
        put(dst, f, len);
        return;
    }
    due = now_us() + 1000u * (r->delay_ms + rnd(r->jitter_ms + 1));
    if (due < r->last_due)
        due = r->last_due;
    if (nheld == QUEUE_MAX || (h = malloc(sizeof *h + len)) == NULL) {
        overflow++;
        return;
    }
    r->last_due = due;
    h->due = due;
    h->seq = held_seq++;
    h->dst = dst;
    h->len = len;
    memcpy(h->data, f, len);
    heap_push(h);
    delayed++;
}

/* Frames now due; returns the poll timeout (ms) until the next. */
static int release_due(void)
{
    uint64_t now = now_us();
    int s, d;

    while (nheld > 0 && heap[0]->due <= now) {
        struct held *h = heap_pop();

        put(h->dst, h->data, h->len);
        free(h);
    }
    /* A link whose last held frame is out is direct again, unless a
     * delay still applies. */
    for (s = 0; s < nports; s++)
        for (d = 0; d < nports; d++)
            if (rules[s][d].last_due != 0 && rules[s][d].last_due <= now &&
                rules[s][d].delay_ms == 0 && rules[s][d].jitter_ms == 0)
                rules[s][d].last_due = 0;
    if (nheld == 0)
        return -1;
    return (int)((heap[0]->due - now + 999) / 1000);
}

static void on_frame(int src, const unsigned char *f, size_t len)
{
    static const unsigned char bcast[6] = {0xff, 0xff, 0xff,
                                           0xff, 0xff, 0xff};
    unsigned type;
    int d;

    if (len < 14)
        return;
    type = (unsigned)f[12] << 8 | f[13];
    /* IPv4 and ARP only: the cluster speaks nothing else, and IPv6's
     * chatter (router and neighbour solicitations) would only add
     * noise to the links being broken. */
    if (type != 0x0800 && type != 0x0806)
        return;
    memcpy(P[src].mac, f + 6, 6);
    P[src].mac_known = 1;
    if (memcmp(f, bcast, 6) != 0)
        for (d = 0; d < nports; d++)
            if (d != src && P[d].mac_known && memcmp(P[d].mac, f, 6) == 0) {
                send_to(src, d, f, len);
                return;
            }
    for (d = 0; d < nports; d++) /* broadcast, or not learnt yet */
        if (d != src)
            send_to(src, d, f, len);
}

/* Port set: "*" or names separated by commas; a bit per port. */
static int ports_of(const char *spec, uint32_t *set)
{
    char buf[256], *tok, *save = NULL;
    int i;

    *set = 0;
    if (strcmp(spec, "*") == 0) {
        for (i = 0; i < nports; i++)
            if (strcmp(P[i].name, "h") != 0)
                *set |= 1u << i;
        return 0;
    }
    snprintf(buf, sizeof buf, "%s", spec);
    for (tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        for (i = 0; i < nports && strcmp(P[i].name, tok) != 0; i++)
            ;
        if (i == nports)
            return -1;
        *set |= 1u << i;
    }
    return 0;
}

static void command(char *line)
{
    char verb[16], a[256], b[256], how[16];
    unsigned loss = 0, delay = 0, jitter = 0;
    uint32_t src, dst;
    int n = sscanf(line, "%15s %255s %255s %15s %u %u %u", verb, a, b, how,
                   &loss, &delay, &jitter);
    int s, d;

    if (n == 1 && strcmp(verb, "clear") == 0) {
        n = 3;
        snprintf(a, sizeof a, "*");
        snprintf(b, sizeof b, "*");
    }
    if (n < 3 || ports_of(a, &src) != 0 || ports_of(b, &dst) != 0 ||
        (strcmp(verb, "clear") != 0 &&
         !(strcmp(verb, "set") == 0 && n == 4 && strcmp(how, "drop") == 0) &&
         !(strcmp(verb, "set") == 0 && n == 7 &&
           strcmp(how, "lossy") == 0 && loss <= 100))) {
        fprintf(stderr, "netswitch: bad command: %s\n", line);
        return;
    }
    for (s = 0; s < nports; s++)
        for (d = 0; d < nports; d++) {
            struct rule *r = &rules[s][d];

            if (!(src >> s & 1) || !(dst >> d & 1) || s == d)
                continue;
            r->drop = strcmp(how, "drop") == 0 && verb[0] == 's';
            r->loss_pm = verb[0] == 's' ? loss * 10 : 0;
            r->delay_ms = verb[0] == 's' ? delay : 0;
            r->jitter_ms = verb[0] == 's' ? jitter : 0;
            /* last_due stays: frames already held keep their order */
        }
}

static void on_ctl(int fd)
{
    static char buf[8192];
    static size_t have;
    ssize_t r;
    char *nl;

    while ((r = read(fd, buf + have, sizeof buf - 1 - have)) > 0) {
        have += (size_t)r;
        buf[have] = '\0';
        while ((nl = strchr(buf, '\n')) != NULL) {
            *nl = '\0';
            command(buf);
            have -= (size_t)(nl + 1 - buf);
            memmove(buf, nl + 1, have + 1);
        }
        if (have == sizeof buf - 1)
            have = 0; /* a line this long is no command */
    }
}

/* The tap eth0 of namespace zkl<run><name>: its fd is opened from
 * inside that namespace, where the device is; this process stays in its
 * own. */
static int attach(const char *run, const char *name, int home)
{
    char path[256];
    struct ifreq ifr;
    int ns, fd = -1;

    snprintf(path, sizeof path, "/var/run/netns/zkl%s%s", run, name);
    if ((ns = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        perror(path);
        return -1;
    }
    if (setns(ns, CLONE_NEWNET) == 0) {
        fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
        memset(&ifr, 0, sizeof ifr);
        ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
        snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "eth0");
        if (fd >= 0 && ioctl(fd, TUNSETIFF, &ifr) != 0) {
            perror("TUNSETIFF");
            close(fd);
            fd = -1;
        }
        if (setns(home, CLONE_NEWNET) != 0) {
            perror("setns back");
            exit(1);
        }
    } else {
        perror("setns");
    }
    close(ns);
    return fd;
}

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

int main(int argc, char **argv)
{
    static unsigned char f[FRAME_MAX];
    struct pollfd pfd[MAX_PORTS + 1];
    struct sigaction sa;
    int i, ctl, home;

    if (argc < 4 || argc - 3 > MAX_PORTS) {
        fprintf(stderr, "usage: zkl-netswitch RUNID CTL PORT...\n");
        return 2;
    }
    if ((home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) < 0) {
        perror("/proc/self/ns/net");
        return 1;
    }
    for (i = 3; i < argc; i++) {
        struct port *p = &P[nports++];

        snprintf(p->name, sizeof p->name, "%s", argv[i]);
        if ((p->fd = attach(argv[1], argv[i], home)) < 0)
            return 1;
    }
    /* O_RDWR: the FIFO never reads as closed between writers. */
    if ((ctl = open(argv[2], O_RDWR | O_NONBLOCK | O_CLOEXEC)) < 0) {
        perror(argv[2]);
        return 1;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    rng ^= now_us() ^ (uint64_t)getpid() << 32;
    printf("ready\n");
    fflush(stdout);

    for (i = 0; i < nports; i++) {
        pfd[i].fd = P[i].fd;
        pfd[i].events = POLLIN;
    }
    pfd[nports].fd = ctl;
    pfd[nports].events = POLLIN;
    while (!stop) {
        int timeout = release_due();

        if (poll(pfd, (nfds_t)nports + 1, timeout) < 0) {
            if (errno == EINTR)
                continue;
            perror("poll");
            return 1;
        }
        for (i = 0; i < nports; i++) {
            ssize_t n;
            int budget = 64; /* one busy port must not starve the rest */

            if (!(pfd[i].revents & POLLIN))
                continue;
            while (budget-- > 0 && (n = read(P[i].fd, f, sizeof f)) > 0)
                on_frame(i, f, (size_t)n);
        }
        if (pfd[nports].revents & POLLIN)
            on_ctl(ctl);
    }
    printf("netswitch: frames moved %llu, dropped by cuts %llu, lost %llu, "
           "delayed %llu, over the queue %llu, refused %llu\n",
           moved, dropped, lost, delayed, overflow, failed);
    return 0;
}
