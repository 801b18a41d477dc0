/* zklock-bench: one scenario per run, one JSON object on one line on
 * stdout; progress on stderr.
 *
 *   zklock-bench SCENARIO [-s HOSTS] [options]
 *     raw            [--pairs N] [--inflight K] [--sessions S] [--list]
 *     create-latency [--n N]
 *     serial         [--n N]
 *     throughput     [--locks N] [--inflight K] [--seconds S]
 *                    [--sessions S | --procs P]
 *     handoff        [--waiters N] [--sessions S] | --procs P
 *     waiters        [--count N] [--sessions S] [--restart ZKDIR]
 *     semaphore      [--waiters N] [--leases L]
 *     readmostly     [--readers N] [--write-every MS] [--seconds S]
 *     multilock      [--locks N] [--rounds R]
 *     raw-batch      [--creates N] [--rounds R] [--list]
 *     burst          [--count N] [--over L] [--held H] [--sessions S]
 *
 * --limit S (every scenario): a run not done within S seconds (default
 * 1200) prints {"scenario":..., "error":...} and exits 1; so does a
 * failure (a lock told LOST or FAILED, a stuck drain), with its reason.
 * --procs P: P processes, each with its own client and session (a
 * fleet of workers); handoff then has one waiter in each.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "metrics.h"

static void usage(void)
{
    fprintf(stderr,
            "usage: zklock-bench SCENARIO [-s HOSTS] [options]\n"
            "  raw            [--pairs N] [--inflight K] [--sessions S] [--list]\n"
            "  create-latency [--n N]\n"
            "  serial         [--n N]\n"
            "  throughput     [--locks N] [--inflight K] [--seconds S]\n"
            "                 [--sessions S | --procs P]\n"
            "  handoff        [--waiters N] [--sessions S] | --procs P\n"
            "  waiters        [--count N] [--sessions S] [--restart ZKDIR]\n"
            "  semaphore      [--waiters N] [--leases L]\n"
            "  readmostly     [--readers N] [--write-every MS] [--seconds S]\n"
            "  multilock      [--locks N] [--rounds R]\n"
            "  raw-batch      [--creates N] [--rounds R] [--list]\n"
            "  burst          [--count N] [--over L] [--held H] [--sessions S]\n"
            "every scenario: [--limit SECONDS] (default 1200)\n");
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"servers", required_argument, NULL, 's'},
        {"pairs", required_argument, NULL, 'n'},
        {"n", required_argument, NULL, 'n'},
        {"count", required_argument, NULL, 'n'},
        {"waiters", required_argument, NULL, 'n'},
        {"locks", required_argument, NULL, 'n'},
        {"inflight", required_argument, NULL, 'k'},
        {"sessions", required_argument, NULL, 'S'},
        {"seconds", required_argument, NULL, 't'},
        {"restart", required_argument, NULL, 'r'},
        {"list", no_argument, NULL, 'L'},
        {"procs", required_argument, NULL, 'P'},
        {"readers", required_argument, NULL, 'n'},
        {"leases", required_argument, NULL, 'l'},
        {"write-every", required_argument, NULL, 'w'},
        {"creates", required_argument, NULL, 'n'},
        {"rounds", required_argument, NULL, 'R'},
        {"over", required_argument, NULL, 'o'},
        {"held", required_argument, NULL, 'h'},
        {"limit", required_argument, NULL, 'T'},
        {NULL, 0, NULL, 0}};
    struct opts o;
    const char *scenario;
    int opt;

    memset(&o, 0, sizeof o);
    o.hosts = getenv("ZKLOCK_SERVERS");
    if (argc < 2) {
        usage();
        return 2;
    }
    scenario = argv[1];
    optind = 2;
    while ((opt = getopt_long(argc, argv, "s:", longopts, NULL)) != -1) {
        switch (opt) {
        case 's':
            o.hosts = optarg;
            break;
        case 'n':
            o.n = atol(optarg);
            break;
        case 'k':
            o.inflight = atol(optarg);
            break;
        case 'S':
            o.sessions = atol(optarg);
            break;
        case 't':
            o.seconds = atof(optarg);
            break;
        case 'L':
            o.list = 1;
            break;
        case 'P':
            o.procs = atol(optarg);
            break;
        case 'l':
            o.leases = atol(optarg);
            break;
        case 'w':
            o.every = atol(optarg);
            break;
        case 'R':
            o.rounds = atol(optarg);
            break;
        case 'o':
            o.over = atol(optarg);
            break;
        case 'h':
            o.held = atol(optarg);
            o.held_set = 1;
            break;
        case 'T':
            o.limit = atof(optarg);
            break;
        case 'r':
            o.restart = 1;
            o.zkdir = optarg;
            break;
        default:
            usage();
            return 2;
        }
    }
    if (o.hosts == NULL)
        o.hosts = "127.0.0.1:2181";
    bench_limit(scenario, o.limit > 0 ? o.limit : 1200);
    if (strcmp(scenario, "burst") == 0)
        return bench_burst(&o);
    if (strcmp(scenario, "raw") == 0)
        return bench_raw(&o);
    if (strcmp(scenario, "create-latency") == 0)
        return bench_create_latency(&o);
    if (strcmp(scenario, "serial") == 0)
        return bench_serial(&o);
    if (strcmp(scenario, "throughput") == 0)
        return bench_throughput(&o);
    if (strcmp(scenario, "handoff") == 0)
        return bench_handoff(&o);
    if (strcmp(scenario, "waiters") == 0)
        return bench_waiters(&o);
    if (strcmp(scenario, "semaphore") == 0)
        return bench_semaphore(&o);
    if (strcmp(scenario, "readmostly") == 0)
        return bench_readmostly(&o);
    if (strcmp(scenario, "multilock") == 0)
        return bench_multilock(&o);
    if (strcmp(scenario, "raw-batch") == 0)
        return bench_raw_batch(&o);
    usage();
    return 2;
}
