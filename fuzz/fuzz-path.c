/* libFuzzer target: lock path validation, and every public entry point
 * that takes a path (chroot option, lock handle, contenders listing).
 *
 * Checks that whatever zkl_path_validate() accepts obeys the server's
 * rules as restated here independently, that the entry points agree
 * with it, and (under ASan/UBSan) that no input reads out of bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zklock.h"

#define CHECK(c)                                                            \
    do {                                                                    \
        if (!(c))                                                           \
            abort();                                                        \
    } while (0)

/* The rules, restated byte-wise: absolute, no empty / "." / ".."
 * component, no trailing '/', not /zookeeper or below it, no ASCII
 * control character, at most ZKL_PATH_MAX bytes. (UTF-8 validity and
 * the excluded code point ranges are the library's to judge.) */
static int plausible(const char *p)
{
    size_t n = strlen(p), i, seg = 1;

    if (n < 2 || n > ZKL_PATH_MAX || p[0] != '/' || p[n - 1] == '/')
        return 0;
    if (strcmp(p, "/zookeeper") == 0 || strncmp(p, "/zookeeper/", 11) == 0)
        return 0;
    for (i = 1; i <= n; i++) {
        unsigned char ch = (unsigned char)p[i];

        if (i < n && (ch < 0x20 || ch == 0x7f))
            return 0;
        if (i == n || ch == '/') {
            size_t len = i - seg;

            if (len == 0 || (len == 1 && p[seg] == '.') ||
                (len == 2 && p[seg] == '.' && p[seg + 1] == '.'))
                return 0;
            seg = i + 1;
        }
    }
    return 1;
}

static zkl_client_t *client(void)
{
    static zkl_client_t *c;
    zkl_options_t *o;

    /* Never attached to a loop: no I/O, so no server is needed. */
    if (c == NULL && zkl_options_new(&o) == ZKL_OK) {
        zkl_client_new(&c, o);
        zkl_options_free(o);
    }
    return c;
}

static void lock_cb(zkl_lock_t *lk, zkl_lock_event_t ev, int status,
                    void *arg)
{
    (void)lk;
    (void)ev;
    (void)status;
    (void)arg;
    abort(); /* no loop: no callback may ever run */
}

static void list_cb(zkl_client_t *c, int status, const char *const *names,
                    size_t n, void *arg)
{
    (void)c;
    (void)status;
    (void)names;
    (void)n;
    (void)arg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *p = malloc(size + 1);
    zkl_options_t *o;
    zkl_lock_t *lk = NULL;
    int rc, lrc, orc;

    memcpy(p, data, size);
    p[size] = '\0';
    rc = zkl_path_validate(p);
    CHECK(rc == ZKL_OK || rc == ZKL_EBADPATH);
    if (rc == ZKL_OK)
        CHECK(plausible(p));
    CHECK(zkl_strerror(rc) != NULL && zkl_err_name(rc) != NULL);

    /* A lock handle takes exactly the paths validate() takes. */
    lrc = zkl_lock_new(&lk, client(), p, lock_cb, NULL);
    CHECK(lrc == rc);
    CHECK((lk != NULL) == (rc == ZKL_OK));
    if (lk != NULL) {
        char buf[ZKL_PATH_MAX + 1];

        CHECK(strcmp(zkl_lock_path(lk), p) == 0);
        CHECK(zkl_lock_state(lk) == ZKL_STATE_IDLE);
        CHECK(zkl_lock_node_name(lk, buf, sizeof buf) != ZKL_OK);
        CHECK(zkl_lock_release(lk) == ZKL_ENOTHELD);
        CHECK(zkl_lock_cancel(lk) == ZKL_ENOTPENDING);
        zkl_lock_free(lk);
    }
    /* A chroot takes the same paths, and "/" as well. */
    if (zkl_options_new(&o) == ZKL_OK) {
        orc = zkl_options_set_chroot(o, p);
        if (strcmp(p, "/") == 0)
            CHECK(orc == ZKL_OK);
        else
            CHECK(orc == rc || orc == ZKL_ENOMEM);
        zkl_options_free(o);
    }
    /* Listing refuses a bad path before it queues anything (a good
     * one would queue a request that this loop-less client never
     * sends). */
    if (rc != ZKL_OK)
        CHECK(zkl_contenders(client(), p, list_cb, NULL) == ZKL_EBADPATH);
    free(p);
    return 0;
}
