/* See zkalloc-shim.h. */
#ifdef __SANITIZE_ADDRESS__
#error "zkalloc-shim replaces malloc: build it without AddressSanitizer"
#endif

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "zkalloc-shim.h"

#undef strdup

void __assert_fail(const char *assertion, const char *file, unsigned line,
                   const char *function) __attribute__((noreturn));

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);

static za_state_t *S;
static int armed, trace;
static int depth;   /* calls into the client under way */
static long calls;  /* outermost calls into the client that returned */
static uintptr_t zk_base, zk_lo, zk_hi; /* libzookeeper_st's code */
static char build_id[64];

/* ---------------- the real allocator ---------------- */

/* dlsym() may allocate (glibc's dlerror state) while the real allocator
 * is still unknown: those few blocks come from here, zeroed, and are
 * never given back. */
static char boot[8192] __attribute__((aligned(16)));
static size_t boot_used;
static int resolving;

static void *boot_alloc(size_t n)
{
    void *p;

    n = (n + 15) & ~(size_t)15;
    if (n > sizeof boot - boot_used)
        return NULL;
    p = boot + boot_used;
    boot_used += n;
    return p;
}

static int in_boot(const void *p)
{
    return (const char *)p >= boot && (const char *)p < boot + sizeof boot;
}

static int resolve(void)
{
    if (real_free != NULL)
        return 1;
    if (resolving)
        return 0;
    resolving = 1;
    *(void **)&real_malloc = dlsym(RTLD_NEXT, "malloc");
    *(void **)&real_calloc = dlsym(RTLD_NEXT, "calloc");
    *(void **)&real_realloc = dlsym(RTLD_NEXT, "realloc");
    *(void **)&real_free = dlsym(RTLD_NEXT, "free");
    resolving = 0;
    if (real_malloc == NULL || real_calloc == NULL || real_realloc == NULL ||
        real_free == NULL)
        abort();
    return 1;
}

/* ---------------- the client's live blocks ---------------- */

/* An open-addressing map of the blocks the client allocated while
 * armed to the site that allocated them (a block realloc() moved keeps
 * its first site); the client keeps a few hundred at most. */
#define LIVE_SLOTS (1u << 15)
static struct {
    uintptr_t p, site;
} live[LIVE_SLOTS];

static size_t slot_of(uintptr_t p)
{
    return (size_t)((p >> 4) * 0x9E3779B97F4A7C15ull) & (LIVE_SLOTS - 1);
}

static void live_add(void *p, uintptr_t site)
{
    size_t i = slot_of((uintptr_t)p), n;

    for (n = 0; live[i].p != 0; n++, i = (i + 1) & (LIVE_SLOTS - 1))
        if (n == LIVE_SLOTS)
            abort(); /* more client blocks than ever expected */
    live[i].p = (uintptr_t)p;
    live[i].site = site;
    if (S != NULL)
        S->live++;
}

/* Removes p if it is there (backward-shift deletion: no tombstones);
 * its site, or 0 when it was not there. */
static uintptr_t live_del(void *p)
{
    size_t i = slot_of((uintptr_t)p), j, k;
    uintptr_t site;

    while (live[i].p != (uintptr_t)p) {
        if (live[i].p == 0)
            return 0;
        i = (i + 1) & (LIVE_SLOTS - 1);
    }
    site = live[i].site;
    live[i].p = 0;
    if (S != NULL)
        S->live--;
    for (j = (i + 1) & (LIVE_SLOTS - 1); live[j].p != 0;
         j = (j + 1) & (LIVE_SLOTS - 1)) {
        k = slot_of(live[j].p);
        /* Move live[j] into the hole unless its home lies in (i, j]. */
        if ((j > i && (k <= i || k > j)) || (j < i && k <= i && k > j)) {
            live[i] = live[j];
            live[j].p = 0;
            i = j;
        }
    }
    return site;
}

/* ---------------- counting and failing ---------------- */

static int from_client(uintptr_t ra)
{
    return armed && ra >= zk_lo && ra < zk_hi;
}

/* Counts one allocation call of the client; 1: answer NULL. */
static int fail_here(char kind, size_t size, uintptr_t ra)
{
    long n;

    if (!from_client(ra))
        return 0;
    n = ++S->count;
    if (trace)
        fprintf(stderr, "zkalloc: %ld %c %zu +0x%lx\n", n, kind, size,
                (unsigned long)(ra - zk_base));
    if (S->fail_site != 0) {
        if (ra - zk_base != S->fail_site ||
            (S->fail_size != 0 && size != S->fail_size) ||
            ++S->at_site != S->fail_nth)
            return 0;
    } else if (n != S->fail_at) {
        return 0;
    }
    S->failed = 1;
    S->failed_n = n;
    S->kind = kind;
    S->size = size;
    S->site = ra - zk_base;
    S->fail_call = depth > 0 ? calls : -1;
    errno = ENOMEM;
    return 1;
}

static void *note(void *p, uintptr_t ra)
{
    if (p != NULL && from_client(ra))
        live_add(p, ra - zk_base);
    return p;
}

#define RA ((uintptr_t)__builtin_return_address(0))

void *malloc(size_t n)
{
    uintptr_t ra = RA;

    if (!resolve())
        return boot_alloc(n);
    if (fail_here('m', n, ra))
        return NULL;
    return note(real_malloc(n), ra);
}

void *calloc(size_t n, size_t size)
{
    uintptr_t ra = RA;

    if (!resolve())
        return size != 0 && n > sizeof boot / size ? NULL
                                                    : boot_alloc(n * size);
    if (fail_here('c', n * size, ra))
        return NULL;
    return note(real_calloc(n, size), ra);
}

void *realloc(void *p, size_t n)
{
    uintptr_t ra = RA;
    void *q;

    if (!resolve())
        return NULL;
    if (fail_here('r', n, ra))
        return NULL;
    if (p != NULL && in_boot(p)) {
        size_t room = (size_t)(boot + sizeof boot - (char *)p);

        q = real_malloc(n);
        if (q != NULL)
            memcpy(q, p, n < room ? n : room);
        return note(q, ra);
    }
    q = real_realloc(p, n);
    if (q != NULL) {
        /* A block of the client's stays the client's, from its site. */
        uintptr_t site = p != NULL ? live_del(p) : 0;

        if (site != 0)
            live_add(q, site);
        else if (from_client(ra))
            live_add(q, ra - zk_base);
    }
    return q;
}

char *strdup(const char *s)
{
    uintptr_t ra = RA;
    size_t n = strlen(s) + 1;
    char *p;

    if (!resolve())
        p = boot_alloc(n);
    else if (fail_here('s', n, ra))
        return NULL;
    else
        p = note(real_malloc(n), ra);
    if (p != NULL)
        memcpy(p, s, n);
    return p;
}

void free(void *p)
{
    if (p == NULL || in_boot(p))
        return;
    live_del(p);
    if (resolve())
        real_free(p);
}

/* ---------------- crashes ---------------- */

static void basename_into(char *dst, size_t size, const char *path)
{
    const char *b = strrchr(path, '/');

    snprintf(dst, size, "%s", b != NULL ? b + 1 : path);
}

void __assert_fail(const char *assertion, const char *file, unsigned line,
                   const char *function)
{
    uintptr_t ra = RA;

    if (S != NULL) {
        S->crash_call = depth > 0 ? calls : -1;
        snprintf(S->assertion, sizeof S->assertion, "%s:%u %s: assert(%s)",
                 file, line, function, assertion);
        if (ra >= zk_lo && ra < zk_hi) {
            S->crash_pc = ra - zk_base;
            snprintf(S->crash_obj, sizeof S->crash_obj, "libzookeeper_st");
        }
    }
    fprintf(stderr, "%s:%u: %s: Assertion `%s' failed.\n", file, line,
            function, assertion);
    abort();
}

static int under_test(const char *fname)
{
    return strstr(fname, "libzookeeper_st") != NULL ||
           strstr(fname, "libzklock") != NULL;
}

/* Whose fault: from the faulting frame up, the first frame in one of
 * the two libraries under test (so a fault in the C library, a memcpy
 * from NULL, or free() aborting on a bad pointer, is its caller's). */
static void on_crash(int sig, siginfo_t *si, void *ucv)
{
    ucontext_t *uc = ucv;
    uintptr_t pc = 0, at = 0;
    void *fr[64];
    int n, i, from = -1;
    Dl_info di;

    (void)si;
    if (S->crash_sig != 0 || S->assertion[0] != '\0')
        return; /* an assert() of the client's, recorded already */
    S->crash_sig = sig;
    S->crash_call = depth > 0 ? calls : -1;
#if defined(__x86_64__)
    pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    pc = (uintptr_t)uc->uc_mcontext.pc;
#else
    (void)uc;
#endif
    n = backtrace(fr, 64);
    for (i = 0; i < n && from < 0; i++)
        if (pc != 0 && (uintptr_t)fr[i] == pc)
            from = i;
    if (from < 0)
        from = 2; /* past this handler and the signal frame */
    for (i = from; i < n; i++)
        if (dladdr(fr[i], &di) != 0 && di.dli_fname != NULL &&
            under_test(di.dli_fname)) {
            at = (uintptr_t)fr[i];
            S->crash_via_libc = at != pc;
            break;
        }
    if (at == 0)
        at = pc;
    if (at != 0 && dladdr((void *)at, &di) != 0 && di.dli_fname != NULL) {
        S->crash_pc = at - (uintptr_t)di.dli_fbase;
        basename_into(S->crash_obj, sizeof S->crash_obj, di.dli_fname);
    }
    /* SA_RESETHAND: on return a fault happens again and kills the
     * process, as the parent must see it; an abort goes on aborting. */
}

static void catch_crashes(void)
{
    static char stack[1 << 16];
    stack_t ss;
    struct sigaction sa;
    const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    size_t i;
    void *fr[4];

    (void)backtrace(fr, 4); /* loads the unwinder now, not in a crash */
    ss.ss_sp = stack;
    ss.ss_size = sizeof stack;
    ss.ss_flags = 0;
    sigaltstack(&ss, NULL);
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_crash;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
}

/* ---------------- set-up ---------------- */

static int find_zk(struct dl_phdr_info *info, size_t size, void *arg)
{
    int i;

    (void)size;
    (void)arg;
    if (info->dlpi_name == NULL ||
        strstr(info->dlpi_name, "libzookeeper_st") == NULL)
        return 0;
    zk_base = info->dlpi_addr;
    for (i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = zk_base + ph->p_vaddr, hi = lo + ph->p_memsz;

        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            if (zk_lo == 0 || lo < zk_lo)
                zk_lo = lo;
            if (hi > zk_hi)
                zk_hi = hi;
        }
        if (ph->p_type == PT_NOTE) {
            const char *p = (const char *)(zk_base + ph->p_vaddr);
            const char *end = p + ph->p_memsz;

            while (p + sizeof(ElfW(Nhdr)) <= end) {
                const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
                const unsigned char *desc = (const unsigned char *)p +
                                            sizeof *nh +
                                            ((nh->n_namesz + 3) & ~3u);
                size_t k;

                if (nh->n_type == NT_GNU_BUILD_ID)
                    for (k = 0; k < nh->n_descsz && 2 * k + 2 < sizeof build_id;
                         k++)
                        snprintf(build_id + 2 * k, 3, "%02x", desc[k]);
                p = (const char *)desc + ((nh->n_descsz + 3) & ~3u);
            }
        }
    }
    return 1;
}

za_state_t *za_init(void)
{
    void *m;

    resolve();
    if (S != NULL)
        return S;
    m = mmap(NULL, sizeof *S, PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        perror("zkalloc: mmap");
        abort();
    }
    S = m;
    dl_iterate_phdr(find_zk, NULL);
    if (zk_lo == 0) {
        fprintf(stderr, "zkalloc: libzookeeper_st is not loaded\n");
        abort();
    }
    trace = getenv("ZKL_ZKALLOC_TRACE") != NULL;
    return S;
}

void za_arm(long fail_at)
{
    memset(S, 0, sizeof *S);
    S->fail_at = fail_at;
    catch_crashes();
    armed = 1;
}

void za_arm_at(uintptr_t site, size_t size, long nth)
{
    za_arm(0);
    S->fail_site = site;
    S->fail_size = size;
    S->fail_nth = nth;
}

void za_disarm(void)
{
    size_t i;

    armed = 0;
    S->nleft = 0;
    for (i = 0; i < LIVE_SLOTS; i++)
        if (live[i].p != 0 && S->nleft < ZA_LEFT_MAX)
            S->left[S->nleft++] = live[i].site;
}

void za_call_enter(void)
{
    depth++;
}

void za_call_leave(void)
{
    if (--depth == 0)
        calls++;
}

const char *za_build_id(void)
{
    return build_id;
}
