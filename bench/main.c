/* zklock-bench: one scenario per run, one JSON object on one line on
 * stdout; progress on stderr. The options, the scenarios and what their
 * figures mean are in man/zklock-bench.1 and the usage below; this file
 * parses the command line and dispatches.
 *
 * --limit S (every scenario): a run not done within S seconds (default
 * 1200) prints {"scenario":..., "error":...} and exits 1; so does a
 * failure (a lock told LOST or FAILED, a stuck drain), with its reason.
 * Usage errors exit 2 with one line on stderr; --help prints the usage
 * on stdout and exits 0. Whatever the end, the run's nodes on the
 * server are deleted (run.c); "clean" deletes what a killed run left.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "metrics.h"
#include "zklock.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: zklock-bench SCENARIO [-s HOSTS] [--limit SECONDS] [options]\n"
            "  raw            [--pairs N] [--inflight K] [--sessions S] [--list]\n"
            "  create-latency [--n N] [--gap-ms MS] [--list]\n"
            "  raw-batch      [--creates N] [--rounds R] [--list]\n"
            "  serial         [--n N] [--gap-ms MS]\n"
            "  throughput     [--locks N] [--inflight K] [--seconds S]\n"
            "                 [--sessions S | --procs P]\n"
            "  handoff        [--waiters N] [--sessions S] | --procs P\n"
            "  waiters        [--count N] [--sessions S] [--restart ZKDIR]\n"
            "  burst          [--count N] [--over L] [--held H] [--sessions S]\n"
            "  semaphore      [--waiters N] [--leases L]\n"
            "  readmostly     [--readers N] [--write-every MS] [--seconds S]\n"
            "  multilock      [--locks N] [--rounds R]\n"
            "  reconnect      [--count N] [--restart ZKDIR]\n"
            "  clean          [--run ID]\n"
            "       zklock-bench --help | --version\n"
            "\n"
            "Runs one scenario against the ZooKeeper at HOSTS (default\n"
            "$ZKLOCK_SERVERS, else 127.0.0.1:2181) and prints one JSON object\n"
            "on one line on stdout; progress goes to stderr. Exit status 0, 1 when\n"
            "the scenario failed or passed --limit (default 1200 s; its JSON then\n"
            "has \"error\"), 2 on a usage error. Every node a run creates is under\n"
            "/zklock-bench/RUN-ID and deleted when the run ends; clean deletes\n"
            "what a killed run left (all of /zklock-bench, or one run's tree).\n"
            "--tls-ca F --tls-cert F --tls-key F (any scenario; all three):\n"
            "every session over TLS (HOSTS name TLS ports), zklock's clients\n"
            "and the bare client's alike; only in a build whose ZooKeeper C\n"
            "client has TLS (configure --with-zookeeper-tls).\n"
            "See zklock-bench(1).\n");
}

/* Each scenario and what runs it. */
static const struct {
    const char *name;
    int (*run)(const struct opts *o);
} scenarios[] = {
    {"raw", bench_raw},
    {"create-latency", bench_create_latency},
    {"raw-batch", bench_raw_batch},
    {"serial", bench_serial},
    {"throughput", bench_throughput},
    {"handoff", bench_handoff},
    {"waiters", bench_waiters},
    {"burst", bench_burst},
    {"semaphore", bench_semaphore},
    {"readmostly", bench_readmostly},
    {"multilock", bench_multilock},
    {"reconnect", bench_reconnect},
    {"clean", bench_clean},
};

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
        {"gap-ms", required_argument, NULL, 'w'},
        {"creates", required_argument, NULL, 'n'},
        {"rounds", required_argument, NULL, 'R'},
        {"over", required_argument, NULL, 'o'},
        {"held", required_argument, NULL, 'h'},
        {"limit", required_argument, NULL, 'T'},
        {"run", required_argument, NULL, 'I'},
        {"after-failure", no_argument, NULL, 'F'}, /* run.c's, internal */
        {"tls-ca", required_argument, NULL, 'C'},
        {"tls-cert", required_argument, NULL, 'E'},
        {"tls-key", required_argument, NULL, 'K'},
        {"help", no_argument, NULL, 'H'},
        {NULL, 0, NULL, 0}};
    struct opts o;
    const char *scenario;
    int (*run)(const struct opts *) = NULL;
    size_t i;
    int opt;

    memset(&o, 0, sizeof o);
    o.hosts = getenv("ZKLOCK_SERVERS");
    if (argc < 2) {
        fprintf(stderr, "zklock-bench: no scenario given (zklock-bench "
                        "--help lists them)\n");
        return 2;
    }
    scenario = argv[1];
    if (strcmp(scenario, "--help") == 0 || strcmp(scenario, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(scenario, "--version") == 0) {
        printf("zklock-bench %s\n", zkl_version_string());
        return 0;
    }
    for (i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++)
        if (strcmp(scenario, scenarios[i].name) == 0)
            run = scenarios[i].run;
    if (run == NULL) {
        fprintf(stderr, "zklock-bench: unknown scenario \"%s\" (zklock-bench "
                        "--help lists them)\n", scenario);
        return 2;
    }
    optind = 2;
    opterr = 0; /* one line of our own instead of getopt's */
    while ((opt = getopt_long(argc, argv, ":s:", longopts, NULL)) != -1) {
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
        case 'I':
            o.run = optarg;
            break;
        case 'F':
            o.after_failure = 1;
            break;
        case 'C':
            o.tls_ca = optarg;
            break;
        case 'E':
            o.tls_cert = optarg;
            break;
        case 'K':
            o.tls_key = optarg;
            break;
        case 'H':
            usage(stdout);
            return 0;
        case ':':
            fprintf(stderr, "zklock-bench: %s needs a value\n",
                    argv[optind - 1]);
            return 2;
        default:
            fprintf(stderr, "zklock-bench: unknown option \"%s\" "
                            "(zklock-bench --help lists them)\n",
                    argv[optind - 1]);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "zklock-bench: unexpected argument \"%s\"\n",
                argv[optind]);
        return 2;
    }
    if (o.hosts == NULL)
        o.hosts = "127.0.0.1:2181";
    if (o.tls_ca != NULL || o.tls_cert != NULL || o.tls_key != NULL) {
        const char *f[3] = {o.tls_ca, o.tls_cert, o.tls_key};

        if (f[0] == NULL || f[1] == NULL || f[2] == NULL) {
            fprintf(stderr, "zklock-bench: TLS needs all of --tls-ca, "
                            "--tls-cert and --tls-key\n");
            return 2;
        }
        for (i = 0; i < 3; i++) {
            if (f[i][0] == '\0' || strchr(f[i], ',') != NULL ||
                strlen(f[i]) > 4096) {
                fprintf(stderr, "zklock-bench: bad TLS file name \"%s\" "
                                "(empty, too long, or with a ',', which "
                                "the ZooKeeper C client cannot take)\n",
                        f[i]);
                return 2;
            }
        }
        /* A build without TLS cannot run the scenario at all: it fails
         * with its reason, as a scenario that cannot run does. */
#ifdef HAVE_OPENSSL_H
        if ((zkl_features() & ZKL_FEATURE_TLS) == 0)
#endif
        {
            char why[] = "TLS asked for, but this zklock-bench was built "
                         "against a ZooKeeper C client without TLS "
                         "(configure found none: see test/setup.sh --tls, "
                         "deps/build-zookeeper-client.sh)";

            fprintf(stderr, "zklock-bench: %s\n", why);
            json_begin(scenario);
            json_str("error", why);
            json_end();
            return 1;
        }
        bench_tls_ca = o.tls_ca;
        bench_tls_cert = o.tls_cert;
        bench_tls_key = o.tls_key;
    }
    if (run == bench_clean)
        return bench_clean(&o);
    /* Before the deadline's alarm and any fork or session: the run's
     * tree is deleted however the run ends (run.c). */
    bench_run_start(scenario, o.hosts);
    bench_limit(scenario, o.limit > 0 ? o.limit : 1200);
    return bench_run_end(run(&o));
}
