/* Allocation failure inside the ZooKeeper client (issue 21, item 2).
 *
 * test-oom fails zklock's own allocations; this program fails the
 * ZooKeeper client's. Its malloc, calloc, realloc, strdup and free
 * (zkalloc-shim.c) stand in for the C library's in the whole process
 * and count the calls made from libzookeeper_st's code. For each recipe
 * (mutex, read/write lock with downgrade, semaphore with a count node,
 * multi-lock, guarded write, leader latch, semaphore with a fixed limit
 * and its limit record: zkalloc-recipes.c) a run plays the
 * recipe on a real server in a forked process, with the client's
 * allocation number N answered NULL, for N = 1, 2, ... until a run makes
 * fewer than N allocations. Counting starts before zkl_client_new(), so
 * zookeeper_init() and the session's handshake are in: a client that
 * cannot be created must be refused with ZKL_ENOMEM. Each run must:
 *   - answer every accepted call exactly once (an acquire with ACQUIRED
 *     or FAILED, a release with RELEASED, a hold with RELEASED or LOST,
 *     a guarded write with its callback), none unasked, all by the time
 *     zkl_client_free() returns; an acquire that only ends by its
 *     timeout counts as a hang (zkalloc-run.c);
 *   - leave none of zklock's memory allocated once everything is freed,
 *     and of the client's only the blocks it is known to leak (a request
 *     it built and then could not queue: zkalloc-sites.c);
 *   - leave no lock node under its root on the server, nor the node a
 *     guarded write made (seen by a separate session; when the client
 *     could not send its close, the nodes go when the session expires,
 *     so the check waits that long);
 *   - not crash, and end within RUN_DEADLINE_MS.
 *
 * The client does not check many of its allocations, and crashes on
 * its own when one of them fails, whatever its caller does. Such runs
 * are counted as skipped, with the site: a crash is the client's own
 * only when it happens inside libzookeeper_st, at a site listed in
 * zkalloc-sites.c, and in the very call into the client that failed
 * the allocation (zkalloc-calls.c tells the calls apart; a few sites
 * are listed as crashing in a later call, where the client kept the
 * NULL). Any other crash fails the test. The list is for Debian 12's
 * build of the client, known by its build id; with another build every
 * crash inside libzookeeper_st is reported as an unverified skip, and
 * its leaks are reported, not checked.
 *
 * Four more tests each fail one chosen allocation (the Kth at a site,
 * of a size), one per zklock bug the sweep found, so that each stays
 * covered whatever the numbering and the stride: connected_event_lost,
 * listing_name_lost, own_data_lost, count_data_lost.
 *
 * One site costs time rather than a crash: the reply buffer's calloc in
 * recv_buffer (zookeeper.c:1857). The client then reads nothing more,
 * with the socket still readable, until its receive timeout (2/3 of the
 * session timeout) drops the connection; the session survives. Hence
 * the short ZA_SESSION_MS; those runs are most of the sweep's time.
 *
 * Plain build only (configure leaves it out with --enable-sanitizers):
 * AddressSanitizer's allocator must be the program's malloc, and
 * valgrind replaces the program's malloc with its own, so that nothing
 * would be counted; run-all.sh runs it in a plain job of its own
 * (plain_zkalloc, every other allocation), run-long.sh in full.
 *
 * ZKL_ZKALLOC_STRIDE=K: fail every Kth allocation only (1, 1+K, ...;
 *   CI's choice, see run-all.sh); unset, every one.
 * ZKL_ZKALLOC_ONLY=N: fail allocation N only (to look at one run);
 *   =+SITE:SIZE:K (hex offset, size or 0, K >= 1): the Kth at that site.
 * ZKL_ZKALLOC_LOG=LEVEL: zklock's and the client's log (1 errors .. 4
 *   debug), on stderr; beware: the client allocates more as it logs.
 * ZKL_ZKALLOC_VERBOSE=1: one line per run.
 * ZKL_ZKALLOC_KEEP_GOING=1: list every failed run, fail at the end.
 * ZKL_ZKALLOC_TRACE=1: every counted allocation (number, kind, size,
 *   site), on stderr. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zkalloc-shim.h"
#include "zkalloc.h"

/* A run that has not ended by then hangs. */
#define RUN_DEADLINE_MS 60000

static za_state_t *S;

static void log_line(zkl_log_level_t level, const char *msg, void *arg)
{
    (void)arg;
    fprintf(stderr, "%llu log %d: %s\n", (unsigned long long)t_now_ms(),
            (int)level, msg);
}

/* ---------------- one recipe's books ---------------- */

#define MAX_KINDS 48

typedef struct tally {
    long allocs; /* client allocations of the run with none failed */
    long runs, failed, crashed, unverified;
    struct {
        const za_site_t *site;
        long n;
    } skips[MAX_KINDS];
    struct {
        int code;
        long n;
    } errs[MAX_KINDS];
    long leak_runs, leak_blocks, fence_runs, renewal_runs, refused_starts;
} tally_t;

static void count_skip(tally_t *t, const za_site_t *site)
{
    int i;

    for (i = 0; i < MAX_KINDS && t->skips[i].site != NULL; i++)
        if (t->skips[i].site == site)
            break;
    if (i == MAX_KINDS)
        FAILF("more than %d kinds of skip", MAX_KINDS);
    t->skips[i].site = site;
    t->skips[i].n++;
}

static void count_errs(tally_t *t, const za_run_t *r)
{
    int i, j;

    for (i = 0; i < r->nerr; i++) {
        for (j = 0; j < MAX_KINDS && t->errs[j].code != 0; j++)
            if (t->errs[j].code == r->errs[i].code)
                break;
        if (j == MAX_KINDS)
            FAILF("more than %d error codes", MAX_KINDS);
        t->errs[j].code = r->errs[i].code;
        t->errs[j].n += r->errs[i].n;
    }
}

/* "calloc(24) at libzookeeper_st+0x1a2b" */
static const char *failed_alloc(void)
{
    static char b[128];
    const char *k = S->kind == 'm'   ? "malloc"
                    : S->kind == 'c' ? "calloc"
                    : S->kind == 'r' ? "realloc"
                                     : "strdup";

    if (!S->failed)
        return "none";
    snprintf(b, sizeof b, "%s(%zu) at libzookeeper_st+0x%lx", k, S->size,
             (unsigned long)S->site);
    return b;
}

static const char *crash_text(int sig)
{
    static char b[512];

    snprintf(b, sizeof b, "%s%s in %s%s+0x%lx%s%s", strsignal(sig),
             S->assertion[0] ? " (assert)" : "",
             S->crash_via_libc ? "code called from " : "",
             S->crash_obj[0] ? S->crash_obj : "?",
             (unsigned long)S->crash_pc, S->assertion[0] ? ": " : "",
             S->assertion);
    return b;
}

/* Which allocation a run fails: number n, or (site set) the nth made
 * at site, of size unless 0. */
typedef struct spec {
    long n;
    uintptr_t site;
    size_t size;
    long nth;
} spec_t;

/* "allocation 26", "allocation #1 at +0xe790" */
static const char *spec_text(const spec_t *sp)
{
    static char b[96];

    if (sp->site == 0)
        snprintf(b, sizeof b, "allocation %ld", sp->n);
    else
        snprintf(b, sizeof b, "allocation #%ld at +0x%lx of size %zu",
                 sp->nth, (unsigned long)sp->site, sp->size);
    return b;
}

/* A run that went wrong fails the test; with ZKL_ZKALLOC_KEEP_GOING
 * set, it is listed and the sweep goes on (to see every failure at
 * once), and the test fails at its end. */
static long bad_runs;

static void bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void bad(const char *fmt, ...)
{
    va_list ap;
    FILE *to = getenv("ZKL_ZKALLOC_KEEP_GOING") != NULL ? stdout : stderr;

    fprintf(to, "%s", to == stdout ? "# FAILURE: " : "zkalloc: ");
    va_start(ap, fmt);
    vfprintf(to, fmt, ap);
    va_end(ap);
    fputc('\n', to);
    if (to == stderr)
        abort();
    bad_runs++;
}

/* Waits until no lock node is left under root (and no record, when
 * rec); the client may have been unable to close its session, whose
 * nodes then go at its expiry. */
static void check_nodes(const char *name, const char *root, const char *rec,
                        const spec_t *sp)
{
    uint64_t end = t_now_ms() + 2 * ZA_SESSION_MS + 3000;
    int n, has_rec;
    char data[8];

    for (;;) {
        n = t_lock_nodes_under(root);
        has_rec = rec != NULL && t_zk_data(rec, data, sizeof data) >= 0;
        if ((n == 0 && !has_rec) || t_now_ms() >= end)
            break;
        t_sleep_ms(100);
    }
    if (n != 0 || has_rec)
        bad("%s: %s failed (%s): %d lock node(s)%s left under "
            "%s after the session's expiry",
            name, spec_text(sp), failed_alloc(), n,
            has_rec ? " and the record" : "", root);
}

/* Whether a crash inside the client is its own doing: at a site known
 * to crash, in the very call that failed (or, for a site whose NULL the
 * client keeps, in any later one). */
static const za_site_t *client_crash(void)
{
    const za_site_t *site;

    if (!S->failed || strncmp(S->crash_obj, "libzookeeper_st", 15) != 0)
        return NULL;
    site = za_site_at(S->site, ZA_CRASHES);
    if (site == NULL)
        return NULL;
    if (site->kind != ZA_CRASHES_LATER &&
        (S->fail_call < 0 || S->fail_call != S->crash_call))
        return NULL;
    return site;
}

/* A run that died: a client crash to skip, or a failure. */
static void died(const za_recipe_t *rc, const spec_t *sp, int sig,
                 tally_t *t, int verbose)
{
    const za_site_t *site;
    int in_client = strncmp(S->crash_obj, "libzookeeper_st", 15) == 0;

    if (za_r->fail[0] != '\0') {
        bad("%s: %s failed (%s): %s (at: %s)", rc->name, spec_text(sp),
            failed_alloc(), za_r->fail, za_r->stage);
        return;
    }
    if ((site = client_crash()) != NULL) {
        if (verbose)
            printf("# %s %s: %s: client crash: %s\n", rc->name,
                   spec_text(sp), failed_alloc(), crash_text(sig));
        t->crashed++;
        count_skip(t, site);
        return; /* its nodes go at expiry; the sweep's end checks */
    }
    if (in_client && S->failed && !za_known_build()) {
        /* Another build: no list to hold the crash against. */
        printf("# %s %s: %s: unverified client crash: %s\n", rc->name,
               spec_text(sp), failed_alloc(), crash_text(sig));
        t->crashed++;
        t->unverified++;
        return;
    }
    bad("%s: %s failed (%s): the run died: %s%s (at: %s)", rc->name,
        spec_text(sp), failed_alloc(), crash_text(sig),
        !in_client                                  ? ""
        : za_site_at(S->site, ZA_CRASHES) == NULL ? " [not a known crash site]"
                                                    : " [a known crash site, "
                                                      "but in a later call]",
        za_r->stage);
}

/* The client's blocks left: each must be one it is known to leak. */
static void check_client_blocks(const za_recipe_t *rc, const spec_t *sp,
                                tally_t *t)
{
    int i;

    t->leak_runs += za_r->client_live != 0;
    t->leak_blocks += za_r->client_live;
    if (za_r->client_live == 0 || !za_known_build())
        return;
    if (za_r->client_live > S->nleft)
        bad("%s: %s failed (%s): %ld client blocks left, too many to look "
            "at",
            rc->name, spec_text(sp), failed_alloc(), za_r->client_live);
    for (i = 0; i < S->nleft; i++)
        if (za_site_at(S->left[i], ZA_LEAKED) == NULL)
            bad("%s: %s failed (%s): a client block from "
                "libzookeeper_st+0x%lx left after zookeeper_close(), not "
                "one the client is known to leak",
                rc->name, spec_text(sp), failed_alloc(),
                (unsigned long)S->left[i]);
}

/* One run with the allocation sp names failed (n 0: none), under base;
 * how it went is in S and za_r. Fails the test unless it went as it
 * must. */
static void run_once(const za_recipe_t *rc, const char *base,
                     const spec_t *sp, tally_t *t)
{
    static long seq;
    char root[512], rec[560];
    uint64_t end = t_now_ms() + RUN_DEADLINE_MS;
    pid_t pid;
    int status = 0, ended = 0;
    int verbose = getenv("ZKL_ZKALLOC_VERBOSE") != NULL;

    snprintf(root, sizeof root, "%s/%ld", base, seq++);
    snprintf(rec, sizeof rec, "%s/rec", root);
    memset(za_r, 0, sizeof *za_r);
    memset(S, 0, sizeof *S);
    fflush(NULL);
    pid = fork();
    if (pid < 0)
        FAILF("fork: %s", strerror(errno));
    if (pid == 0) {
        if (getenv("ZKL_ZKALLOC_LOG") != NULL)
            zkl_set_log(log_line, NULL,
                        (zkl_log_level_t)atoi(getenv("ZKL_ZKALLOC_LOG")));
        zkl_set_allocator(&t_counting_allocator);
        if (sp->site != 0)
            za_arm_at(sp->site, sp->size, sp->nth);
        else
            za_arm(sp->n);
        rc->play(root);
        za_disarm();
        za_r->zkl_live = t_live_allocs();
        za_r->client_live = S->live;
        za_r->done = 1;
        fflush(NULL);
        _exit(0);
    }
    while (!ended && t_now_ms() < end) {
        pid_t w = waitpid(pid, &status, WNOHANG);

        if (w == pid)
            ended = 1;
        else if (w < 0 && errno != EINTR)
            FAILF("waitpid: %s", strerror(errno));
        else
            t_sleep_ms(2);
    }
    if (!ended) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        bad("%s: %s failed (%s): the run hung (at: %s)", rc->name,
            spec_text(sp), failed_alloc(), za_r->stage);
        return;
    }
    t->runs++;
    t->failed += S->failed;
    if (WIFSIGNALED(status)) {
        died(rc, sp, WTERMSIG(status), t, verbose);
        return;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !za_r->done) {
        bad("%s: %s failed: the run exited with %d (at: %s)", rc->name,
            spec_text(sp), WEXITSTATUS(status), za_r->stage);
        return;
    }
    if (verbose)
        printf("# %s %s: %s: ok, fenced %ld, client blocks left %ld\n",
               rc->name, spec_text(sp), failed_alloc(), za_r->fences,
               za_r->client_live);
    if (za_r->zkl_live != 0)
        bad("%s: %s failed (%s): %ld of zklock's blocks leaked", rc->name,
            spec_text(sp), failed_alloc(), za_r->zkl_live);
    check_client_blocks(rc, sp, t);
    count_errs(t, za_r);
    t->fence_runs += za_r->fences != 0;
    t->renewal_runs += za_r->sessions > 1;
    t->refused_starts += !za_r->started;
    check_nodes(rc->name, root, rc->guarded_node ? rec : NULL, sp);
}

/* The line for the note (verbose: then what each skip's site does). */
static void report(const za_recipe_t *rc, const tally_t *t, long stride)
{
    char line[8192];
    size_t o = 0;
    int i, verbose = getenv("ZKL_ZKALLOC_VERBOSE") != NULL;

#define ADD(...)                                                            \
    o += (size_t)snprintf(line + o, o < sizeof line ? sizeof line - o : 0,  \
                          __VA_ARGS__)
    ADD("zkalloc %s: client allocations %ld, failed %ld (one per run",
        rc->name, t->allocs, t->failed);
    if (stride > 1)
        ADD(", one in %ld", stride);
    ADD("), skipped %ld", t->crashed);
    for (i = 0; i < MAX_KINDS && t->skips[i].site != NULL; i++)
        ADD("%s%ld %s", i ? ", " : " (client crashes: ", t->skips[i].n,
            t->skips[i].site->fn);
    if (t->unverified > 0)
        ADD("%s%ld unverified", i ? ", " : " (client crashes: ",
            t->unverified);
    ADD("%s, zklock errors seen:", i || t->unverified ? ")" : "");
    for (i = 0; i < MAX_KINDS && t->errs[i].code != 0; i++)
        ADD("%s %s %ld", i ? "," : "", zkl_err_name(t->errs[i].code),
            t->errs[i].n);
    if (i == 0)
        ADD(" none");
    ADD("; client creation refused %ld, runs fenced %ld, runs with a new "
        "session %ld, client blocks leaked %ld in %ld runs",
        t->refused_starts, t->fence_runs, t->renewal_runs, t->leak_blocks,
        t->leak_runs);
#undef ADD
    printf("%s\n", line);
    for (i = 0; verbose && i < MAX_KINDS && t->skips[i].site != NULL; i++)
        printf("#   +0x%lx %s%s: %s\n", (unsigned long)t->skips[i].site->site,
               t->skips[i].site->fn,
               t->skips[i].site->kind == ZA_CRASHES_LATER ? " [later call]"
                                                          : "",
               t->skips[i].site->why);
}

/* ZKL_ZKALLOC_STRIDE=K fails allocations first, first + K, ...; each
 * recipe starts at another first (1 + its index mod K), so that the
 * allocations all recipes share (creating the client, connecting) are
 * all failed by one recipe or another. */
static void sweep(const za_recipe_t *rc)
{
    static tally_t t;
    const char *base = t_path(rc->name), *s;
    long stride = 1, allocs;
    spec_t sp = {0, 0, 0, 0};

    if ((s = getenv("ZKL_ZKALLOC_STRIDE")) != NULL && atol(s) > 1)
        stride = atol(s);
    if (!za_known_build())
        printf("# libzookeeper_st build %s is not the one whose sites are "
               "known: its crashes are unverified skips, its leaks are "
               "not checked\n",
               za_build_id());
    /* With nothing failed: the count, and everything as it must be. */
    memset(&t, 0, sizeof t);
    run_once(rc, base, &sp, &t);
    ASSERT_EQ(bad_runs, 0);
    ASSERT(!S->failed);
    ASSERT_EQ(za_r->client_live, 0);
    allocs = S->count;
    ASSERT(allocs > 0);
    memset(&t, 0, sizeof t);
    t.allocs = allocs;
    if ((s = getenv("ZKL_ZKALLOC_ONLY")) != NULL) {
        unsigned long site;

        if (sscanf(s, "+%lx:%zu:%ld", &site, &sp.size, &sp.nth) == 3)
            sp.site = site;
        else
            sp.n = atol(s);
        run_once(rc, base, &sp, &t);
        ASSERT_EQ(bad_runs, 0);
        return;
    }
    for (sp.n = 1 + (long)(rc - za_recipes) % stride;; sp.n += stride) {
        run_once(rc, base, &sp, &t);
        if (!S->failed)
            break; /* it made fewer than n allocations */
    }
    report(rc, &t, stride);
    /* What crashed runs left goes when their sessions expire. */
    check_nodes(rc->name, base, NULL, &sp);
    ASSERT_EQ(bad_runs, 0);
}

#define RECIPE_TEST(i, recipe)                                              \
    static void test_zkalloc_##recipe(void)                                 \
    {                                                                       \
        ASSERT(strcmp(za_recipes[i].name, #recipe) == 0);                   \
        sweep(&za_recipes[i]);                                              \
    }
RECIPE_TEST(0, mutex)
RECIPE_TEST(1, rwlock)
RECIPE_TEST(2, semaphore)
RECIPE_TEST(3, multi)
RECIPE_TEST(4, guarded)
RECIPE_TEST(5, latch)
RECIPE_TEST(6, lease)

/* One run that fails one chosen allocation, for a zklock bug it found:
 * the allocation must be reached, and the run go as it must (and not
 * end in a client crash, which would prove nothing). */
static void targeted(const char *name, const char *recipe, uintptr_t site,
                     size_t size, long nth, int times)
{
    static tally_t t;
    const za_recipe_t *rc = NULL;
    spec_t sp = {0, site, size, nth};
    size_t i;

    for (i = 0; i < za_nrecipes; i++)
        if (strcmp(za_recipes[i].name, recipe) == 0)
            rc = &za_recipes[i];
    ASSERT(rc != NULL);
    if (!za_known_build()) {
        printf("# %s: skipped: its site is an offset into another build "
               "of libzookeeper_st (%s)\n",
               name, za_build_id());
        return;
    }
    memset(&t, 0, sizeof t);
    while (times-- > 0) {
        run_once(rc, t_path(name), &sp, &t);
        ASSERT_EQ(bad_runs, 0);
        ASSERT(S->failed);
        ASSERT_EQ(t.crashed, 0);
    }
    printf("# %s: %s failed (allocation %ld of the run, %ld run(s)): "
           "answered, nothing left\n",
           name, failed_alloc(), S->failed_n, t.runs);
}

/* The CONNECTED event comes in an archive the client allocates first
 * of all after the handshake (queue_session_event); when that fails
 * the client drops the event and is connected all the same. zklock
 * waited for the event for good (the client never connected). */
static void test_zkalloc_connected_event_lost(void)
{
    targeted("connected_event_lost", "mutex", 0xe790, 80, 1, 1);
}

/* A listing whose first child name the client could not copy: ZOK with
 * a NULL name (child names of a mutex are 55 bytes). zklock read
 * through it (SIGSEGV in decide()). */
static void test_zkalloc_listing_name_lost(void)
{
    targeted("listing_name_lost", "mutex", 0xe23c, 56, 1, 1);
}

/* The holder's read of its own node (the watch every hold keeps; its
 * data, "zkalloc-holder", is 14 bytes: zkalloc-recipes.c) that the
 * client could not copy: ZOK with NULL data and a Stat of whatever the
 * stack held. zklock took the made-up owner for "deleted by someone
 * else": the holder was told LOST (ZKL_ENODEGONE) while its node stayed,
 * and the waiter behind it waited for that node until its acquire timed
 * out. */
static void test_zkalloc_own_data_lost(void)
{
    targeted("own_data_lost", "mutex", 0xe192, 14, 1, 1);
}

/* The semaphore's second read of its count node (4 bytes; the first
 * is the first acquire's) with its data lost: read again. The
 * waiting lease's listing, answered meanwhile, had left it to the count
 * read to wake it; the answer came in the same batch, while the lease
 * sat on the ready queue with nothing to send, and the wake-up skipped
 * it as busy: it waited for ever (its acquire timed out). That takes
 * both answers in one read from the socket: about one run in three
 * here, so ten runs. */
static void test_zkalloc_count_data_lost(void)
{
    targeted("count_data_lost", "semaphore", 0xe192, 4, 2, 10);
}

static const t_case_t tests[] = {
    {"zkalloc_connected_event_lost", test_zkalloc_connected_event_lost, 60},
    {"zkalloc_listing_name_lost", test_zkalloc_listing_name_lost, 60},
    {"zkalloc_own_data_lost", test_zkalloc_own_data_lost, 60},
    {"zkalloc_count_data_lost", test_zkalloc_count_data_lost, 120},
    {"zkalloc_mutex", test_zkalloc_mutex, 900},
    {"zkalloc_rwlock", test_zkalloc_rwlock, 900},
    {"zkalloc_semaphore", test_zkalloc_semaphore, 900},
    {"zkalloc_multi", test_zkalloc_multi, 900},
    {"zkalloc_guarded", test_zkalloc_guarded, 900},
    {"zkalloc_latch", test_zkalloc_latch, 900},
    {"zkalloc_lease", test_zkalloc_lease, 900},
};

/* zkalloc [--list] [NAME-SUBSTRING...]: as run-tests. */
int main(int argc, char **argv)
{
    size_t i;
    int listing = 0;
    void *m;

    S = za_init();
    m = mmap(NULL, sizeof *za_r, PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        FAILF("mmap: %s", strerror(errno));
    za_r = m;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 2 && strcmp(argv[1], "--list") == 0) {
        listing = 1;
        argc--;
        argv++;
    }
    for (i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (!t_selected(tests[i].name, argc - 1, argv + 1))
            continue;
        if (listing)
            printf("%s\n", tests[i].name);
        else
            t_run_case(&tests[i], NULL, NULL);
    }
    return listing ? 0 : t_finish();
}
