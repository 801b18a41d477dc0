/* zklock(1): hold ZooKeeper locks while a command runs, like flock(1);
 * run a command only while elected leader; list a lock's contenders; ask
 * its holders to let go. One file per job: run.c and command.c (run,
 * elect), query.c (ls, revoke), common.c, usage.c; the exit statuses
 * are in cli.h. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

const char *prog = "zklock";

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage_error("no command given (run, elect, ls or revoke)");
    if (strcmp(argv[1], "run") == 0)
        return cmd_run(argc - 1, argv + 1, 0);
    if (strcmp(argv[1], "elect") == 0)
        return cmd_run(argc - 1, argv + 1, 1);
    if (strcmp(argv[1], "ls") == 0)
        return cmd_query(argc - 1, argv + 1, 0);
    if (strcmp(argv[1], "revoke") == 0)
        return cmd_query(argc - 1, argv + 1, 1);
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("zklock %s\n", zkl_version_string());
        return 0;
    }
    if (argv[1][0] == '-')
        return usage_error("unknown option %s: the command (run, elect, ls "
                           "or revoke) comes first, its options after it",
                           argv[1]);
    return usage_error("unknown command \"%s\" (run, elect, ls or revoke)",
                       argv[1]);
}
