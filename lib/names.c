/* Paths and node names: validation, the uuid and sequence of our own
 * nodes (their order, by the kinds' tags, is recipes.c's). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "internal.h"

/* Decodes one UTF-8 sequence; returns its length or 0 if invalid. */
static size_t utf8_next(const unsigned char *s, uint32_t *cp)
{
    size_t n, i;
    uint32_t v;

    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    } else if ((s[0] & 0xe0) == 0xc0) {
        n = 2;
        v = s[0] & 0x1f;
    } else if ((s[0] & 0xf0) == 0xe0) {
        n = 3;
        v = s[0] & 0x0f;
    } else if ((s[0] & 0xf8) == 0xf0) {
        n = 4;
        v = s[0] & 0x07;
    } else {
        return 0;
    }
    for (i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3f);
    }
    /* Overlong forms would let two byte strings name one node. */
    if ((n == 2 && v < 0x80) || (n == 3 && v < 0x800) ||
        (n == 4 && (v < 0x10000 || v > 0x10ffff)))
        return 0;
    *cp = v;
    return n;
}

/* Writes why into buf (when there is one) and returns ZKL_EBADPATH:
 * the one place that words a broken rule, so what zkl_path_explain()
 * says is what the check decided. */
static int why(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int why(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;

    if (buf != NULL && size > 0) {
        va_start(ap, fmt);
        vsnprintf(buf, size, fmt, ap);
        va_end(ap);
    }
    return ZKL_EBADPATH;
}

/* The server's own rules (PathUtils.validatePath), applied before a
 * request is sent so a bad path is a clear local error, not a dropped
 * connection. Counts in the reasons start at 1 (byte 1 is the '/'). */
static int path_rules(const char *path, int allow_root, char *buf,
                      size_t size)
{
    const unsigned char *p = (const unsigned char *)path;
    size_t len, i, seg = 1, n, comp = 1;
    uint32_t cp;

    if (buf != NULL && size > 0)
        buf[0] = '\0';
    if (path == NULL) {
        why(buf, size, "no path (NULL)");
        return ZKL_EINVAL;
    }
    len = strlen(path);
    if (len == 0)
        return why(buf, size, "empty");
    if (len > ZKL_PATH_MAX)
        return why(buf, size, "%zu bytes, longer than %d bytes "
                   "(ZKL_PATH_MAX)", len, ZKL_PATH_MAX);
    if (p[0] != '/')
        return why(buf, size, "not absolute (it must begin with '/')");
    if (len == 1)
        return allow_root ? ZKL_OK
                          : why(buf, size, "the root, \"/\", which holds no "
                                         "lock");
    if (p[len - 1] == '/')
        return why(buf, size, "ends with '/'");
    if (strcmp(path, "/zookeeper") == 0 ||
        strncmp(path, "/zookeeper/", 11) == 0)
        return why(buf, size, "under /zookeeper, which the server reserves");
    for (i = 1; i <= len; i += n) {
        if (i == len || p[i] == '/') {
            size_t sl = i - seg;

            if (sl == 0)
                return why(buf, size, "component %zu is empty (\"//\" at "
                           "byte %zu)", comp, i);
            if ((sl == 1 && p[seg] == '.') ||
                (sl == 2 && p[seg] == '.' && p[seg + 1] == '.'))
                return why(buf, size, "component %zu is \"%s\" (no relative "
                           "components)", comp, sl == 1 ? "." : "..");
            seg = i + 1;
            comp++;
            n = 1;
            continue;
        }
        n = utf8_next(p + i, &cp);
        if (n == 0)
            return why(buf, size, "not UTF-8 at byte %zu (0x%02x)", i + 1,
                       p[i]);
        if (cp <= 0x1f || (cp >= 0x7f && cp <= 0x9f))
            return why(buf, size, "control character U+%04X at byte %zu",
                       (unsigned)cp, i + 1);
        if ((cp >= 0xd800 && cp <= 0xf8ff) || (cp >= 0xfff0 && cp <= 0xffff))
            return why(buf, size, "character U+%04X at byte %zu, which "
                       "ZooKeeper refuses (U+D800 to U+F8FF, U+FFF0 to "
                       "U+FFFF)", (unsigned)cp, i + 1);
        /* Java holds it as two UTF-16 surrogates, which the server's
         * check refuses like the lone ones above. */
        if (cp > 0xffff)
            return why(buf, size, "character U+%04X at byte %zu, beyond "
                       "U+FFFF, which ZooKeeper refuses", (unsigned)cp,
                       i + 1);
    }
    return ZKL_OK;
}

int zkl__path_check(const char *path, int allow_root)
{
    return path_rules(path, allow_root, NULL, 0);
}

int zkl_path_validate(const char *path)
{
    return path_rules(path, 0, NULL, 0);
}

int zkl_path_explain(const char *path, char *buf, size_t size)
{
    return path_rules(path, 0, buf, size);
}

/* Random v4 uuid, lower case, Curator's text form. */
void zkl__uuid(char out[ZKL__UUID_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char b[16];
    size_t got = 0, i, o = 0;

    while (got < sizeof b) {
        ssize_t r = getrandom(b + got, sizeof b - got, 0);

        if (r > 0) {
            got += (size_t)r;
        } else if (r < 0 && errno != EINTR) {
            /* No entropy source: time and address still differ per
             * attempt, which is all uniqueness within a lock needs. */
            uint64_t t = zkl__now_ms() ^ (uint64_t)(uintptr_t)out;

            for (; got < sizeof b; got++) {
                t = t * 6364136223846793005ull + 1442695040888963407ull;
                b[got] = (unsigned char)(t >> 56);
            }
        }
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    for (i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        out[o++] = hex[b[i] >> 4];
        out[o++] = hex[b[i] & 15];
    }
    out[o] = '\0';
}

uint32_t zkl__seq_of(const char *name)
{
    const char *k = zkl__sort_key(name);
    uint64_t v = 0; /* ten digits overflow 32 bits: no wrap-around */
    int i;

    if (k == name)
        return UINT32_MAX;
    for (i = 0; i < ZKL__SEQ_LEN; i++) {
        if (k[i] < '0' || k[i] > '9')
            return UINT32_MAX;
        v = v * 10 + (uint64_t)(k[i] - '0');
    }
    return k[i] == '\0' && v < UINT32_MAX ? (uint32_t)v : UINT32_MAX;
}

size_t zkl__own_name_len(const char *name, const zkl__recipe_t *r)
{
    const char *tag = r->tag;
    size_t taglen = r->taglen;
    const char *s = name + ZKL__PREFIX_LEN + taglen;
    char again[16];
    size_t n;
    long v;

    if (strncmp(name, "_c_", 3) != 0 ||
        strnlen(name, ZKL__NAME_MAX + 1) < ZKL__PREFIX_LEN + taglen +
                                               ZKL__SEQ_LEN ||
        strncmp(name + ZKL__PREFIX_LEN, tag, taglen) != 0)
        return 0;
    /* Exactly what %010d prints for a 32-bit int, nothing else: parse
     * and print again. */
    n = strlen(s);
    if (n > ZKL__SEQ_MAX_LEN || strspn(s, "-0123456789") != n)
        return 0;
    v = strtol(s, NULL, 10);
    if (v < INT32_MIN || v > INT32_MAX)
        return 0;
    snprintf(again, sizeof again, "%010d", (int)v);
    return strcmp(again, s) == 0 ? ZKL__PREFIX_LEN + taglen + n : 0;
}
