/* One loop, as the adapter suite drives it: each test/adapter-LOOP.c
 * defines t_driver for its loop, and test/adapter-suite.c runs the same
 * tests on every one. */
#ifndef ZKL_TEST_ADAPTER_DRIVER_H
#define ZKL_TEST_ADAPTER_DRIVER_H

#include "zklock.h"

typedef struct t_driver {
    const char *name;
    /* Makes the loop this test runs on (one per test process). */
    void (*open)(void);
    /* The adapter's own attach on that loop. */
    int (*attach)(zkl_client_t *c);
    /* The attach with a loop argument of NULL (its error, or what NULL
     * means for that loop), and attaching twice. */
    int (*attach_null_loop)(zkl_client_t *c);
    /* Runs the loop for up to ms; may return as soon as it handled
     * something. */
    void (*run)(long ms);
    /* c is about to be freed (from a callback or not): a driver that
     * keeps a list of clients drops it. NULL when nothing to do. */
    void (*forget)(zkl_client_t *c);
    /* Every client is freed: lets the loop finish what the adapters left
     * (libuv's closing handles), checks that no adapter left anything
     * registered on the loop, and frees it. Returns 0 or fails. */
    int (*close)(void);
} t_driver_t;

extern const t_driver_t t_driver;

#endif
