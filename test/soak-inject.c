/* zkl-soak's fault injector, run by the checker's event loop: every
 * --fault-ms or so it picks a fault (mostly aimed at holders, where they
 * test exclusion) and has a worker apply it to a session's proxies, or
 * freezes a worker with SIGSTOP and thaws it past its session timeout,
 * or kills and restarts the server with zkserver.sh; in an ensemble, a
 * node at a time, the leader and a follower in turn. On the namespaced
 * cluster (--netns) the links take the proxies' place (soak-net.c), and
 * the server faults are node restarts and cuts between the nodes in
 * turn. The faults that can explain an overlap go into the checker's
 * stream of events (post()). */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "soak.h"

const char *const fault_key[F_KINDS] = {
    "cut", "lost_reply", "delay", "short_stall", "stall_past_timeout",
    "sigstop_past_timeout", "server_restart", "node_restart",
    "net_client_cut", "net_client_one_way", "net_client_from_server",
    "net_client_lossy", "net_follower_from_leader",
    "net_minority_from_majority", "net_leader_isolated", "net_peer_lossy"};

/* zkserver.sh on the server, or on ensemble node K.node. */
static pid_t run_zkserver(const char *what)
{
    char dir[4096];
    pid_t pid;

    if (cfg.nodes > 1)
        snprintf(dir, sizeof dir, "%s/n%d", cfg.server_dir, K.node + 1);
    else
        snprintf(dir, sizeof dir, "%s", cfg.server_dir);
    if ((pid = fork()) == 0) {
        int null = open("/dev/null", O_WRONLY);

        dup2(null, 1);
        execlp("bash", "bash", cfg.zkserver, what, dir, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Whether ensemble node j (0-based) leads, as `zkserver.sh mode` says. */
static int is_leader(int j)
{
    char line[4096], out[32] = "";
    FILE *f;

    snprintf(line, sizeof line, "bash '%s' mode '%s/n%d'", cfg.zkserver,
             cfg.server_dir, j + 1);
    if ((f = popen(line, "r")) == NULL)
        return 0;
    if (fgets(out, sizeof out, f) == NULL)
        out[0] = '\0';
    pclose(f);
    return strncmp(out, "leader", 6) == 0;
}

/* The node to restart: the leader and another node in turn, so that even
 * a short run kills a leader. */
static int pick_node(const char **role)
{
    int j, leader = cfg.netns != NULL ? net_leader() : -1;

    for (j = 0; j < cfg.nodes && leader < 0 && cfg.netns == NULL; j++)
        if (is_leader(j))
            leader = j;
    if (leader >= 0 && K.by_kind[F_NODE_RESTART] % 2 == 0) {
        K.leader_restarts++;
        *role = "the leader";
        return leader;
    }
    *role = leader >= 0 ? "a follower" : "a node (no leader seen)";
    j = (int)rnd((unsigned)cfg.nodes - 1);
    return leader >= 0 && j >= leader ? j + 1 : j;
}

void server_start(evutil_socket_t fd, short what, void *arg)
{
    struct timeval tv = tv_ms(100);

    (void)fd;
    (void)what;
    (void)arg;
    if (K.server == SRV_KILLING) { /* the kill is not done yet */
        evtimer_add(K.start_timer, &tv);
        return;
    }
    K.server = SRV_STARTING;
    K.server_cmd = run_zkserver("start");
}

/* Reaps the zkserver.sh run under way, and moves the server's state on. */
void server_reap(uint64_t now)
{
    int status;

    if (K.server_cmd <= 0 || waitpid(K.server_cmd, &status, WNOHANG) <= 0)
        return;
    K.server_cmd = 0;
    if (K.server == SRV_KILLING) {
        K.server = SRV_DOWN;
    } else if (K.server == SRV_STARTING) {
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
            K.server = SRV_UP;
            K.server_ok_since = now;
        } else {
            note("server did not restart; trying again");
            K.server_cmd = run_zkserver("start");
        }
    }
}

void thaw(evutil_socket_t fd, short what, void *arg)
{
    uint64_t now = now_ms(), next = UINT64_MAX;
    struct timeval tv;
    int i;

    (void)fd;
    (void)what;
    (void)arg;
    for (i = 0; i < cfg.workers; i++) {
        struct wk *w = &K.w[i];

        if (w->frozen_until == 0)
            continue;
        if (now >= w->frozen_until) {
            kill(w->pid, SIGCONT);
            w->frozen_until = 0;
            w->thawed_at = now;
        } else if (w->frozen_until < next) {
            next = w->frozen_until;
        }
    }
    if (next != UINT64_MAX) {
        tv = tv_ms((long)(next - now));
        evtimer_add(K.thaw_timer, &tv);
    }
}

/* One server fault at a time, 20 s apart at least; in an ensemble, where
 * they are the point, one every 10 s or so (one node down at a time, so
 * a quorum stands, and it is back before the next goes); on the
 * namespaced cluster, where a cut heals by itself, 6 s after it healed. */
static int can_restart(uint64_t now)
{
    return cfg.server_dir != NULL && K.server == SRV_UP &&
           now - K.last_restart >
               (cfg.nodes == 1 ? 20000u : cfg.netns ? 6000u : 10000u);
}

/* The namespaced cluster's draw: the links' faults on workers, freezes,
 * and the server faults in turn as soon as one may come (net_server_kind:
 * with one server, now and then). */
static int pick_net(unsigned r, uint64_t now)
{
    if (can_restart(now) && (cfg.nodes > 1 || r >= 92))
        return net_server_kind();
    return r < 20   ? F_NET_CUT
           : r < 35 ? F_NET_ONE_WAY
           : r < 50 ? F_NET_FROM_SERVER
           : r < 70 ? F_NET_LOSSY
           : r < 85 ? F_FREEZE
                    : F_NET_CUT;
}

/* A session with a handle inside, if there is one: faults that cost a
 * session mostly aim at holders, where they test exclusion. */
static void pick_holder(int *wi, int *c)
{
    int g, n = cfg.workers * PER_WORKER, start = (int)rnd((unsigned)n);

    for (g = 0; g < n; g++) {
        int x = (start + g) % n, w = x / PER_WORKER;

        if (K.h[x].inside && K.w[w].alive && K.w[w].frozen_until == 0) {
            *wi = w;
            *c = K.h[x].client;
            return;
        }
    }
}

static void inject(void)
{
    uint64_t now = now_ms();
    int wi = (int)rnd((unsigned)cfg.workers), c = (int)rnd(CLIENTS), kind;
    unsigned r = rnd(100);
    struct timeval tv;
    const char *role;

    kind = r < 25   ? F_CUT
           : r < 40 ? F_LOSE
           : r < 55 ? F_DELAY
           : r < 65 ? F_SHORT_STALL
           : r < 80 ? F_EXPIRING_STALL
           : r < 92 ? F_FREEZE
                    : F_SERVER_RESTART;
    if (cfg.netns != NULL)
        kind = pick_net(r, now);
    else if (cfg.nodes > 1 && can_restart(now))
        kind = F_NODE_RESTART; /* in an ensemble, as soon as one may come */
    else if (kind == F_SERVER_RESTART && !can_restart(now))
        kind = F_CUT;
    if ((kind == F_EXPIRING_STALL || kind == F_FREEZE ||
         kind == F_NET_CUT || kind == F_NET_ONE_WAY ||
         kind == F_NET_FROM_SERVER) &&
        rnd(4) != 0)
        pick_holder(&wi, &c);
    if (!K.w[wi].alive || K.w[wi].frozen_until != 0)
        return; /* a frozen worker takes no further fault */
    switch (kind) {
    case F_CUT:
        command(wi, C_CUT, c, 0);
        break;
    case F_LOSE:
        command(wi, C_LOSE, c, 0);
        break;
    case F_DELAY:
        command(wi, C_DELAY, c, 100 + (int)rnd(300));
        break;
    case F_SHORT_STALL:
        command(wi, C_STALL, c, cfg.session_ms / 3);
        break;
    case F_EXPIRING_STALL:
        post(M_STALLED, wi, c);
        command(wi, C_STALL, c, cfg.session_ms + 1500);
        break;
    case F_FREEZE:
        post(M_FROZE, wi, c);
        kill(K.w[wi].pid, SIGSTOP);

        K.w[wi].frozen_until = now + (uint64_t)cfg.session_ms + 1500;
        thaw(-1, 0, NULL);
        break;
    case F_NODE_RESTART:
        K.node = pick_node(&role);
        note("killing node %d, %s", K.node + 1, role);
        /* fall through */
    case F_SERVER_RESTART:
        K.server = SRV_KILLING;
        K.last_restart = now;
        K.server_cmd = run_zkserver("kill");
        tv = tv_ms(500 + (long)rnd(2000));
        evtimer_add(K.start_timer, &tv);
        break;
    default: /* the links' */
        if (net_inject(kind, wi, now) != 0)
            return; /* its links are under a fault already */
        break;
    }
    K.faults++;
    K.by_kind[kind]++;
}

void on_fault_timer(evutil_socket_t fd, short what, void *arg)
{
    struct timeval tv;

    (void)fd;
    (void)what;
    (void)arg;
    if (K.phase != 0)
        return;
    inject();
    tv = tv_ms(cfg.fault_ms / 2 + (long)rnd((unsigned)cfg.fault_ms));
    evtimer_add(K.fault_timer, &tv);
}

