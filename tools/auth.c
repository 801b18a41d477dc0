/* Credentials for ACL-protected paths: lines "scheme:credential" (e.g.
 * digest:alice:secret) from a file (--auth-file, else
 * $ZKLOCK_AUTH_FILE) and from $ZKLOCK_AUTH. Never from an option's
 * value, which every user can read in ps; a file others may read is
 * refused, as ssh refuses such a key. Messages name the identity
 * (digest:alice), never the secret. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

static char *who; /* "digest:alice, ip" for messages */

const char *auth_who(void)
{
    return who;
}

/* scheme:credential: adds it; 0 or EXIT_USAGE (said why, with where). */
static int add_line(zkl_options_t *o, char *line, const char *where,
                    size_t lineno)
{
    char *colon = strchr(line, ':');
    char id[80];
    int rc;

    if (colon == NULL || colon == line || colon[1] == '\0')
        return usage_error("line %zu of %s is not scheme:credential (e.g. "
                           "digest:alice:secret)", lineno, where);
    *colon = '\0';
    if (strspn(line, "abcdefghijklmnopqrstuvwxyz0123456789-_.") !=
        strlen(line))
        return usage_error("line %zu of %s: \"%.40s\" is not a scheme "
                           "name (digest, ip, sasl, x509, ...)", lineno,
                           where, line);
    rc = zkl_options_add_auth(o, line, colon + 1);
    if (rc != ZKL_OK) {
        fprintf(stderr, "%s: %s\n", prog, zkl_strerror(rc));
        return EXIT_INTERNAL;
    }
    /* digest's credential is user:password: the user is no secret. */
    if (strcmp(line, "digest") == 0)
        snprintf(id, sizeof id, "digest:%.*s",
                 (int)strcspn(colon + 1, ":"), colon + 1);
    else
        snprintf(id, sizeof id, "%s", line);
    if ((who = append(who, ", ", id)) == NULL) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return EXIT_INTERNAL;
    }
    return 0;
}

/* Every line of text (its own copy, cleared once read). */
static int add_text(zkl_options_t *o, const char *text, const char *where)
{
    char *copy = strdup(text), *line, *next;
    size_t lineno = 1, len;
    int rc = 0;

    if (copy == NULL) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return EXIT_INTERNAL;
    }
    len = strlen(copy);
    for (line = copy; rc == 0 && line != NULL; line = next, lineno++) {
        size_t n = strcspn(line, "\n");

        next = line[n] != '\0' ? line + n + 1 : NULL;
        line[n] = '\0';
        if (n > 0 && line[n - 1] == '\r')
            line[--n] = '\0';
        if (n == 0 || line[0] == '#')
            continue;
        rc = add_line(o, line, where, lineno);
    }
    explicit_bzero(copy, len);
    free(copy);
    return rc;
}

/* A file of secrets, whole and NUL-terminated, into *text (free it with
 * explicit_bzero first); where gets how messages name it. 0, or
 * EXIT_USAGE after saying why: it cannot be read, is not a regular
 * file, is empty or over 1 MiB, or others may read or write it. */
int secret_file_read(const char *file, const char *from, char **text,
                     size_t *len_out, char *where, size_t wsize)
{
    char buf[4096], *t0 = NULL;
    struct stat st;
    size_t len = 0;
    ssize_t n;
    int fd;

    *text = NULL;
    /* A name with a ':' may well be credentials typed where the file
     * name goes: not echoed. */
    if (strchr(file, ':') != NULL)
        snprintf(where, wsize, "the credentials file (%s)", from);
    else
        snprintf(where, wsize, "%s (%s)", file, from);
    if ((fd = open(file, O_RDONLY | O_CLOEXEC)) < 0)
        return usage_error("cannot read %s: %s%s", where, strerror(errno),
                           strchr(file, ':') != NULL
                               ? " (it takes a file name: credentials "
                                 "never go on the command line)"
                               : "");
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return usage_error("%s is not a regular file", where);
    }
    if ((st.st_mode & (S_IROTH | S_IWOTH)) != 0) {
        close(fd);
        return usage_error("%s is open to others (mode %04o): refusing its "
                           "credentials; chmod o-rwx it", where,
                           (unsigned)(st.st_mode & 07777));
    }
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        char *t = realloc(t0, len + (size_t)n + 1);

        if (t == NULL || len + (size_t)n > 1 << 20) {
            free(t != NULL ? t : t0);
            explicit_bzero(buf, sizeof buf);
            close(fd);
            return usage_error("%s is too large for a credentials file",
                               where);
        }
        t0 = t;
        memcpy(t0 + len, buf, (size_t)n);
        len += (size_t)n;
    }
    explicit_bzero(buf, sizeof buf);
    close(fd);
    if (n < 0) {
        if (t0 != NULL)
            explicit_bzero(t0, len);
        free(t0);
        return usage_error("cannot read %s: %s", where, strerror(errno));
    }
    if (t0 == NULL)
        return usage_error("%s is empty", where);
    t0[len] = '\0';
    *text = t0;
    *len_out = len;
    return 0;
}

static int add_file(zkl_options_t *o, const char *file, const char *from)
{
    char where[300], *text;
    size_t len;
    int rc;

    if ((rc = secret_file_read(file, from, &text, &len, where,
                               sizeof where)) != 0)
        return rc;
    rc = add_text(o, text, where);
    explicit_bzero(text, len);
    free(text);
    return rc;
}

/* Adds the credentials from file_opt (--auth-file), else
 * $ZKLOCK_AUTH_FILE, and from $ZKLOCK_AUTH: 0, or an exit status after
 * saying why. */
int auth_load(zkl_options_t *o, const char *file_opt)
{
    const char *file = file_opt, *from = "--auth-file";
    const char *env = getenv("ZKLOCK_AUTH");
    int rc;

    if (file == NULL) {
        file = getenv("ZKLOCK_AUTH_FILE");
        from = "$ZKLOCK_AUTH_FILE";
    }
    if (file != NULL && file[0] != '\0' &&
        (rc = add_file(o, file, from)) != 0)
        return rc;
    if (env != NULL && env[0] != '\0' &&
        (rc = add_text(o, env, "$ZKLOCK_AUTH")) != 0)
        return rc;
    return 0;
}
