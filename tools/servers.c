/* The server list: checked before the ZooKeeper client sees it (which
 * drops what it cannot use in silence, or fails with "see the log"),
 * split from its chroot, and its names resolved once, so that a name
 * that does not resolve is named. The entries stay for reach.c's
 * probe. */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "cli.h"

struct server {
    char *host;
    char port[8];
};

static struct server *servers;
static size_t nservers;
static char *root; /* the chroot suffix, or NULL */

const char *servers_chroot(void)
{
    return root;
}

size_t servers_count(void)
{
    return nservers;
}

const char *servers_host(size_t i)
{
    return servers[i].host;
}

const char *servers_port(size_t i)
{
    return servers[i].port;
}

void servers_free(void)
{
    size_t i;

    for (i = 0; i < nservers; i++)
        free(servers[i].host);
    free(servers);
    free(root);
    servers = NULL;
    nservers = 0;
    root = NULL;
}

/* As the ZooKeeper client asks (AI_ADDRCONFIG, and without it where
 * the resolver refuses the flag): 0 or getaddrinfo()'s error. */
static int resolve(const char *host, const char *port, struct addrinfo **res)
{
    struct addrinfo hints;
    int rc;

    memset(&hints, 0, sizeof hints);
    hints.ai_flags = AI_ADDRCONFIG;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_protocol = IPPROTO_TCP;
    rc = getaddrinfo(host, port, &hints, res);
    if (rc == EAI_BADFLAGS
#ifdef EAI_ADDRFAMILY
        || rc == EAI_ADDRFAMILY
#endif
    ) {
        hints.ai_flags = 0;
        rc = getaddrinfo(host, port, &hints, res);
    }
    return rc;
}

/* Fills the entries from a list zkl_servers_explain() passed. */
static int split(const char *list)
{
    const char *e, *end, *colon;
    size_t n = 1;

    for (e = list; *e != '\0'; e++)
        n += *e == ',';
    if ((servers = calloc(n, sizeof *servers)) == NULL)
        return -1;
    for (e = list;; e = end + 1) {
        struct server *s = &servers[nservers];

        end = e + strcspn(e, ",");
        while (*e == ' ' || *e == '\t')
            e++;
        colon = e;
        for (const char *c = e; c < end; c++)
            if (*c == ':')
                colon = c;
        if ((s->host = strndup(e, (size_t)(colon - e))) == NULL)
            return -1;
        /* As a number: "02181" is 2181 to the ZooKeeper client, and
         * leading zeros must not cut the copy short. */
        snprintf(s->port, sizeof s->port, "%ld", strtol(colon + 1, NULL, 10));
        nservers++;
        if (*end == '\0')
            return 0;
    }
}

/* hosts as given (from names where: "-s", "$ZKLOCK_SERVERS"): sets *list
 * to the servers and *chroot to the chroot suffix or NULL (both to
 * free). 0, or EXIT_USAGE / EXIT_UNREACHABLE after saying why. */
int servers_load(const char *hosts, const char *from, char **list,
                 char **chroot)
{
    const char *slash = strchr(hosts, '/');
    char why[300];
    size_t i, bad = 0;
    int *rcs;

    *list = *chroot = NULL;
    if (hosts[0] == '/')
        return usage_error("%s takes the ZooKeeper servers (host:port,...), "
                           "not a path (%s); flock's -s, a shared lock, is "
                           "-r here", from, shown_path(hosts));
    *list = slash != NULL ? strndup(hosts, (size_t)(slash - hosts))
                          : strdup(hosts);
    if (*list == NULL)
        goto nomem;
    if (zkl_servers_explain(*list, why, sizeof why) != ZKL_OK)
        goto usage;
    if (slash != NULL && strcmp(slash, "/") != 0) {
        if (zkl_path_explain(slash, why, sizeof why) != ZKL_OK) {
            usage_error("bad chroot %s after the servers (%s): %s",
                        shown_path(slash), from, why);
            goto fail;
        }
        if ((*chroot = strdup(slash)) == NULL)
            goto nomem;
    }
    if (split(*list) != 0)
        goto nomem;
    /* The ZooKeeper client skips a name that does not resolve and fails
     * only when none does; so does this, saying which. */
    rcs = calloc(nservers, sizeof *rcs);
    if (rcs == NULL)
        goto nomem;
    for (i = 0; i < nservers; i++) {
        struct addrinfo *res = NULL;

        if ((rcs[i] = resolve(servers[i].host, servers[i].port, &res)) == 0)
            freeaddrinfo(res);
        else
            bad++;
    }
    for (i = 0; i < nservers; i++)
        if (rcs[i] != 0)
            fprintf(stderr, "%s: %scannot resolve host \"%s\" (%s): %s%s\n",
                    prog, bad < nservers ? "warning: " : "", servers[i].host,
                    from, rcs[i] == EAI_SYSTEM ? "system error"
                                               : gai_strerror(rcs[i]),
                    bad < nservers ? "; trying the other servers" : "");
    free(rcs);
    if (*chroot != NULL && (root = strdup(*chroot)) == NULL)
        goto nomem;
    if (bad == nservers) {
        free(*list);
        free(*chroot);
        *list = *chroot = NULL;
        return EXIT_UNREACHABLE;
    }
    return 0;
usage:
    usage_error("bad server list (%s): %s", from, why);
fail:
    free(*list);
    free(*chroot);
    *list = *chroot = NULL;
    return EXIT_USAGE;
nomem:
    fprintf(stderr, "%s: out of memory\n", prog);
    free(*list);
    free(*chroot);
    *list = *chroot = NULL;
    return EXIT_INTERNAL;
}
