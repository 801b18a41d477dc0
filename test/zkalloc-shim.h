/* The ZooKeeper client's own allocations, counted and failed on demand
 * (test/zkalloc.c). The program that links zkalloc-shim.c defines
 * malloc, calloc, realloc, strdup and free itself: the dynamic linker
 * looks in the executable first, so libzookeeper_st's calls land here
 * too (a --wrap would not reach them: it rewrites only the objects it
 * links). Each call is forwarded to the C library's allocator; only the
 * calls whose caller is libzookeeper_st's code are counted, and the one
 * numbered fail_at answers NULL.
 *
 * Not under AddressSanitizer (its allocator must be the program's
 * malloc) nor valgrind (which replaces malloc in the executable too, so
 * nothing would be counted): the plain build only. */
#ifndef ZKL_TEST_ZKALLOC_SHIM_H
#define ZKL_TEST_ZKALLOC_SHIM_H

#include <stddef.h>
#include <stdint.h>

/* What the shim saw, in memory shared with the parent of a forked run,
 * so that it survives a run that crashes. */
typedef struct za_state {
    long fail_at;       /* the allocation to fail, 1-based; 0: none */
    /* Or, when fail_site is set: the fail_nth allocation made at that
     * site (of that size, unless 0). */
    uintptr_t fail_site;
    size_t fail_size;
    long fail_nth, at_site;
    long count;         /* client allocations since za_arm() */
    long live;          /* client blocks allocated since then, not freed */
    /* The allocation numbered fail_at, once reached (it answered NULL): */
    int failed;
    long failed_n;      /* its number in the run */
    char kind;          /* 'm'alloc, 'c'alloc, 'r'ealloc, 's'trdup */
    size_t size;
    uintptr_t site;     /* its return address, as an offset into
                           libzookeeper_st */
    long fail_call;     /* which call into the client it came in (see
                           zkalloc-calls.c); -1: outside any */
    /* How the run died, if it did: */
    int crash_sig;
    uintptr_t crash_pc; /* offset into crash_obj */
    char crash_obj[64]; /* the library under test (libzookeeper_st or
                           libzklock) nearest the fault on the stack */
    int crash_via_libc; /* the fault itself was further in (the C
                           library, or the shim's free) */
    long crash_call;    /* which call into the client it came in */
    char assertion[256];/* a failed assert() of the ZooKeeper client */
    /* At za_disarm(): the sites of the client's blocks still allocated
     * (live of them; the first ZA_LEFT_MAX). */
#define ZA_LEFT_MAX 16
    int nleft;
    uintptr_t left[ZA_LEFT_MAX];
} za_state_t;

/* An allocation site of the ZooKeeper client that matters here. */
typedef enum za_kind {
    ZA_CRASHES,       /* its failure crashes the client in the same call */
    ZA_CRASHES_LATER, /* ... in a later call: the client kept the NULL */
    ZA_LEAKED         /* a block from here may be left after
                         zookeeper_close(): a request the client built,
                         then failed to queue, and did not free */
} za_kind_t;

typedef struct za_site {
    uintptr_t site;   /* return address offset (za_state_t.site) */
    za_kind_t kind;
    const char *fn;   /* "create_buffer_oarchive: malloc(128)" */
    const char *why;  /* what the client does with the NULL, and where
                         (file:line of the 3.8.0 source) */
} za_site_t;

/* Maps the shared state and finds libzookeeper_st; call once from main()
 * before anything else. Returns the state (shared across fork()). */
za_state_t *za_init(void);
/* In a run's process: count from now and fail allocation fail_at (0:
 * none). Installs the crash handlers that fill crash_*. */
void za_arm(long fail_at);
/* The same, failing the nth allocation at site (of size, unless 0). */
void za_arm_at(uintptr_t site, size_t size, long nth);
/* Stops counting (frees are still tracked for live); fills left. */
void za_disarm(void);
/* Around every call into the client (zkalloc-calls.c). */
void za_call_enter(void);
void za_call_leave(void);
/* The loaded libzookeeper_st's build id, in hex ("" if none). */
const char *za_build_id(void);

/* ---- zkalloc-sites.c ---- */
/* Whether the loaded client is the build za_site_at() knows. */
int za_known_build(void);
/* The known site of that build at offset site, of kind (ZA_CRASHES
 * stands for both crash kinds), or NULL. */
const za_site_t *za_site_at(uintptr_t site, za_kind_t kind);

#endif
