/* zklock(1): hold ZooKeeper locks while a command runs, like flock(1);
 * run a command only while elected leader; list a lock's contenders; ask
 * its holders to let go. One file per job: run.c and command.c (run,
 * elect), query.c (ls, revoke), common.c, usage.c; the exit statuses
 * are in cli.h. This file is the table of subcommands. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

const char *prog = "zklock";

/* Every subcommand: its name, the function that runs it and the variant
 * that function is told (run and elect share one, ls and revoke
 * another). Messages list the names from here. */
static const struct subcommand {
    const char *name;
    int (*fn)(int argc, char **argv, int variant);
    int variant;
} subcommands[] = {
    {"run", cmd_run, 0},
    {"elect", cmd_run, 1},
    {"ls", cmd_query, 0},
    {"revoke", cmd_query, 1},
};
#define NSUB (sizeof subcommands / sizeof subcommands[0])

/* "run, elect, ls or revoke". */
static const char *names(void)
{
    static char buf[128];
    size_t i, len = 0;

    for (i = 0; i < NSUB && len < sizeof buf; i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s",
                                i == 0 ? "" : i + 1 < NSUB ? ", " : " or ",
                                subcommands[i].name);
    return buf;
}

int main(int argc, char **argv)
{
    size_t i;

    if (argc < 2)
        return usage_error("no command given (%s)", names());
    for (i = 0; i < NSUB; i++)
        if (strcmp(argv[1], subcommands[i].name) == 0)
            return subcommands[i].fn(argc - 1, argv + 1,
                                     subcommands[i].variant);
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("zklock %s\n", zkl_version_string());
        return 0;
    }
    if (argv[1][0] == '-')
        return usage_error("unknown option %s: the command (%s) comes "
                           "first, its options after it", argv[1], names());
    return usage_error("unknown command \"%s\" (%s)", argv[1], names());
}
