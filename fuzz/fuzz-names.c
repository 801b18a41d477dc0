/* libFuzzer target: lock node names, as the server may list them
 * (Curator's "_c_<uuid>-lock-<seq>", foreign names, garbage): the
 * sequence parser and the queue order.
 *
 * The input is a list of names separated by '\n'. Checks: the order is a
 * strict total order (irreflexive, antisymmetric, transitive) so sorting
 * a listing always gives one queue; it follows the sequence number
 * whenever both names carry one; seq_of() only answers for names whose
 * Curator sort key is ten digits; own_name_len() accepts exactly the
 * names zklock creates for each kind, with the ten- or eleven-character
 * suffixes ZooKeeper prints (%010d of a signed 32-bit counter). Built with the
 * library's sources, as these functions are internal. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CHECK(c)                                                            \
    do {                                                                    \
        if (!(c))                                                           \
            abort();                                                        \
    } while (0)

#define MAXN 64

static int sign(int v)
{
    return (v > 0) - (v < 0);
}

static int cmp_names(const void *a, const void *b)
{
    return zkl__name_cmp(*(const char *const *)a, *(const char *const *)b);
}

/* The text after the last occurrence of tag in s, or NULL. */
static const char *after(const char *s, const char *tag)
{
    size_t n = strlen(s), t = strlen(tag), i;

    for (i = n >= t ? n - t + 1 : 0; i-- > 0;)
        if (memcmp(s + i, tag, t) == 0)
            return s + i + t;
    return NULL;
}

/* The expected seq_of(): Curator's sort key (after the last "lock-";
 * else after the last "__READ__", then the last "__WRIT__" in what
 * follows; else after the last "lease-"; else after the last "latch-"),
 * exactly ten digits, then the
 * end; UINT32_MAX when there are none or they do not fit. */
static uint32_t expected_seq(const char *s)
{
    const char *k = after(s, "lock-"), *r;
    uint64_t v = 0;
    int i;

    if (k == NULL) {
        k = after(s, "__READ__");
        r = after(k != NULL ? k : s, "__WRIT__");
        if (r != NULL)
            k = r;
    }
    if (k == NULL)
        k = after(s, "lease-");
    if (k == NULL)
        k = after(s, "latch-");
    if (k == NULL || strlen(k) != 10)
        return UINT32_MAX;
    for (i = 0; i < 10; i++) {
        if (k[i] < '0' || k[i] > '9')
            return UINT32_MAX;
        v = v * 10 + (uint64_t)(k[i] - '0');
    }
    return v >= UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* By kind; ZKL_KIND_OTHER (4) has no tag of its own. */
static const char *const own_tags[] = {"-lock-", "-__READ__", "-__WRIT__",
                                       "-lease-", NULL, "-latch-"};

/* The expected own_name_len() for a kind: "_c_", 36 characters, the
 * kind's tag, then ten digits up to 2147483647, or a minus and nine
 * digits not all zero, or a minus and ten digits from 1000000000 to
 * 2147483648. */
static size_t expected_own_len(const char *s, int kind)
{
    const char *tag = own_tags[kind];
    size_t t = strlen(tag), n, i;
    const char *q;

    if (strncmp(s, "_c_", 3) != 0 || strlen(s) < 39 + t ||
        strncmp(s + 39, tag, t) != 0)
        return 0;
    q = s + 39 + t;
    n = strlen(q);
    if (n == 10 && q[0] != '-') {
        for (i = 0; i < 10; i++)
            if (q[i] < '0' || q[i] > '9')
                return 0;
        return strcmp(q, "2147483647") <= 0 ? 39 + t + 10 : 0;
    }
    if ((n != 10 && n != 11) || q[0] != '-')
        return 0;
    for (i = 1; i < n; i++)
        if (q[i] < '0' || q[i] > '9')
            return 0;
    if (n == 10)
        return strspn(q + 1, "0") == 9 ? 0 : 39 + t + 10;
    return q[1] != '0' && strcmp(q + 1, "2147483648") <= 0 ? 39 + t + 11
                                                           : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1), *s, *names[MAXN];
    size_t n = 0, i, j, k;

    memcpy(buf, data, size);
    buf[size] = '\0';
    for (s = buf; n < MAXN;) {
        char *nl = strchr(s, '\n');

        names[n++] = s;
        if (nl == NULL)
            break;
        *nl = '\0';
        s = nl + 1;
    }
    for (i = 0; i < n; i++) {
        uint32_t q = zkl__seq_of(names[i]);

        CHECK(q == expected_seq(names[i]));
        for (k = 0; k < 6; k++)
            if (own_tags[k] != NULL)
                CHECK(zkl__own_name_len(names[i], zkl__recipe((int)k)) ==
                      expected_own_len(names[i], (int)k));
        CHECK(zkl__name_cmp(names[i], names[i]) == 0);
        CHECK(zkl__sort_key(names[i]) >= names[i] &&
              zkl__sort_key(names[i]) <= names[i] + strlen(names[i]));
        CHECK(zkl__hash(names[i]) != 0);
        for (j = 0; j < n; j++) {
            int ab = sign(zkl__name_cmp(names[i], names[j]));
            uint32_t r = zkl__seq_of(names[j]);

            CHECK(ab == -sign(zkl__name_cmp(names[j], names[i])));
            CHECK((ab == 0) == (strcmp(names[i], names[j]) == 0));
            if (q != UINT32_MAX && r != UINT32_MAX && q != r)
                CHECK(ab == (q < r ? -1 : 1));
            for (k = 0; k < n && n <= 16; k++) {
                int bc = sign(zkl__name_cmp(names[j], names[k]));

                if (ab < 0 && bc < 0)
                    CHECK(zkl__name_cmp(names[i], names[k]) < 0);
            }
        }
    }
    /* Sorting gives a listing in which every neighbour pair is ordered. */
    qsort(names, n, sizeof names[0], cmp_names);
    for (i = 1; i < n; i++)
        CHECK(zkl__name_cmp(names[i - 1], names[i]) <= 0);
    free(buf);
    return 0;
}
