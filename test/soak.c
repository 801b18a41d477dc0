/* zkl-soak: the safety checker.
 *
 * Several worker processes, each with two sessions (each through a
 * fault proxy of its own) and eight units that use the locks by every
 * recipe (mutex, reentrant mutex, guarded writes, reader, writer, a
 * read/write pair that downgrades, semaphore lease, leader latch,
 * multi-lock sets that overlap), contend for a given time while the
 * checker injects faults at random: connection cuts, lost replies,
 * delays, short stalls, stalls past the session timeout, a worker
 * frozen with SIGSTOP past its session timeout, and (given the server's
 * directory) server kills and restarts.
 *
 * Given an ensemble (several hosts; --server-dir is then the directory
 * `zkserver.sh ensemble` made, with its nodes in DIR/n1..DIR/nN), each
 * session has one proxy per node, so it can move to another node, and
 * the server fault becomes a node kill and restart: the leader and a
 * follower in turn, one node at a time, so a quorum always stands and
 * locks must keep being granted through every failover.
 *
 * On the namespaced cluster (--netns DIR: test/netns.sh, soak-net.c),
 * every node and every worker has a network namespace of its own, the
 * sessions connect straight to the nodes, and the faults are on the
 * links instead of in proxies: a worker cut from the servers (both ways,
 * one way, from its own server), lossy links, a follower cut from the
 * leader, a minority from the majority, the leader from its peers;
 * besides the freezes and the node kills. The checker is the same.
 *
 * This file owns the command line and the processes: it forks the
 * workers (soak-worker.c), then becomes the checker (soak-checker.c),
 * which also injects the faults (soak-inject.c); and it keeps what all
 * of them use: the settings, the event counter, the clock, the random
 * numbers.
 *
 *   zkl-soak --hosts 127.0.0.1:PORT[,127.0.0.1:PORT...]
 *            [--server-dir DIR --zkserver SCRIPT]
 *            [--minutes M] [--workers N] [--session-ms MS]
 *            [--fault-ms MEAN] [--seed S] [--sabotage MASK]
 *            [--checker-lag MS] [--netns DIR]
 *
 * Prints one JSON line; exits 0 only when the safety figures (one per
 * promise, soak-checker.c) are zero, there were grants and faults, and,
 * in a run of a minute or more, every recipe did its part. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "soak.h"

_Atomic uint64_t *next_seq;

struct soak_cfg cfg = {NULL, NULL, NULL, NULL, 1.0, 4, 3000, 250, 0, 0, 0,
                       "", 0, {0}};

uint64_t rng_state;

const char *const recipe_key[RECIPES] = {
    "mutex", "reentrant", "guarded", "reader", "writer", "downgrade_pair",
    "lease", "latch", "set"};

uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

unsigned rnd(unsigned n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return n ? (unsigned)(rng_state % n) : 0;
}

struct timeval tv_ms(long ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    return tv;
}

static int usage(void)
{
    fprintf(stderr,
            "usage: zkl-soak --hosts 127.0.0.1:PORT[,...] [--server-dir DIR "
            "--zkserver SCRIPT]\n"
            "                [--minutes M] [--workers N] [--session-ms MS] "
            "[--fault-ms MEAN] [--seed S]\n"
            "                [--sabotage MASK: workers break promises on "
            "purpose, to show the checker catches it:\n"
            "                 1 enter after a failed acquire, 2 a reentrant "
            "inner release lets go,\n"
            "                 4 guarded writes unlocked/twice/reordered/"
            "lost/misreported, 8 an acquire\n"
            "                 unanswered or answered late, 16 a lock node "
            "kept past the drain,\n"
            "                 32 a worker ends badly; 63 all]\n"
            "                [--checker-lag MS: the checker sleeps MS every "
            "200 ms, to show its verdict does not hang on its own pace]\n"
            "                [--netns DIR: on the namespaced cluster "
            "test/netns.sh made in DIR, faults on its links\n"
            "                 instead of proxies]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *h;
    int i;

    for (i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];

        if (strcmp(k, "--hosts") == 0)
            cfg.hosts = v;
        else if (strcmp(k, "--server-dir") == 0)
            cfg.server_dir = v;
        else if (strcmp(k, "--zkserver") == 0)
            cfg.zkserver = v;
        else if (strcmp(k, "--netns") == 0)
            cfg.netns = v;
        else if (strcmp(k, "--minutes") == 0)
            cfg.minutes = atof(v);
        else if (strcmp(k, "--workers") == 0)
            cfg.workers = atoi(v);
        else if (strcmp(k, "--session-ms") == 0)
            cfg.session_ms = atoi(v);
        else if (strcmp(k, "--fault-ms") == 0)
            cfg.fault_ms = atoi(v);
        else if (strcmp(k, "--sabotage") == 0)
            cfg.sabotage = atoi(v);
        else if (strcmp(k, "--checker-lag") == 0)
            cfg.lag_ms = atoi(v);
        else if (strcmp(k, "--seed") == 0)
            cfg.seed = (unsigned)strtoul(v, NULL, 10);
        else
            return usage();
    }
    for (h = cfg.hosts; h != NULL && cfg.nodes < MAX_NODES;) {
        const char *colon = strchr(h, ':');

        if (colon == NULL || (cfg.port[cfg.nodes++] =
                                  (uint16_t)atoi(colon + 1)) == 0)
            return usage();
        h = strchr(colon, ',');
        h = h != NULL ? h + 1 : NULL;
    }
    if (i != argc || cfg.nodes == 0 || h != NULL || cfg.workers < 1 ||
        cfg.workers > MAX_WORKERS || cfg.session_ms < 1000 ||
        cfg.fault_ms < 10 || cfg.minutes <= 0 ||
        (cfg.server_dir != NULL) != (cfg.zkserver != NULL))
        return usage();
    if (cfg.netns != NULL && net_open() != 0)
        return 1;
    if (cfg.seed == 0)
        cfg.seed = (unsigned)time(NULL);
    snprintf(cfg.root, sizeof cfg.root, "/zkl-soak/%ld-%u", (long)getpid(),
             cfg.seed);
    signal(SIGPIPE, SIG_IGN);
    next_seq = mmap(NULL, sizeof *next_seq, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (next_seq == MAP_FAILED)
        return 1;
    atomic_init(next_seq, 0);

    for (i = 0; i < cfg.workers; i++) {
        int sv[2];
        pid_t pid;

        if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) != 0)
            return 1;
        pid = fork();
        if (pid == 0) {
            int j;

            close(sv[0]);
            for (j = 0; j < i; j++)
                close(K.w[j].fd);
            _exit(worker_main(i, sv[1]));
        }
        close(sv[1]);
        K.w[i].pid = pid;
        K.w[i].fd = sv[0];
        K.w[i].alive = 1;
    }

    return checker_main();
}
