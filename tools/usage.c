/* zklock's help text, and the one line a usage error gets instead of
 * it. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

void usage(FILE *f)
{
    fprintf(f,
"usage: %s run   [OPTIONS] [-t SEC | -n] [-r | -w | -L N] LOCKPATH -- COMMAND\n"
"       %s run   [OPTIONS] [-t SEC | -n] [-r | -w | -L N] -c STRING LOCKPATH\n"
"       %s run   [OPTIONS] [-t SEC | -n] [-r | -w] LOCKPATH... -- COMMAND...\n"
"       %s elect [OPTIONS] [-t SEC | -n] [--id ID] PATH -- COMMAND...\n"
"       %s ls    [OPTIONS] [-l] LOCKPATH\n"
"       %s revoke [OPTIONS] [--wait SEC] LOCKPATH [NODE]\n"
"\n"
"run holds LOCKPATH (a mutex; -r/-w a read/write lock's side; -L N a lease of a\n"
"semaphore of N) while COMMAND runs; several LOCKPATHs are held all at once.\n"
"elect runs COMMAND while leader of PATH. ls lists the queue, holder first.\n"
"revoke asks the holders to let go and reports who did.\n"
"\n"
"OPTIONS of run and elect:\n"
"  -t, --timeout SEC     give up after SEC seconds (flock's -w)\n"
"  -n, --nonblock        give up at once if held\n"
"  -E, --conflict-exit-code CODE  exit status when busy or timed out (1, 4)\n"
"  -q, --quiet           no message when busy or timed out\n"
"  -c, --command STRING  run STRING with /bin/sh -c\n"
"  --owner TEXT, --revocable, --kill-after SEC, --id ID: see zklock(1)\n"
"OPTIONS of every command:\n"
"  -s, --servers HOSTS   host:port,...[/chroot]; default $ZKLOCK_SERVERS, else\n"
"                        " ZKL_DEFAULT_SERVERS "\n"
"  --connect-timeout SEC wait at most SEC for a connection (default %g; 0: none)\n"
"  --session-timeout MS  ZooKeeper session timeout (default %d)\n"
"  --auth-file FILE      credentials, one scheme:credential a line (also\n"
"                        $ZKLOCK_AUTH_FILE, $ZKLOCK_AUTH)\n"
"  --acl private         nodes zklock creates: writable by these credentials only\n"
"  --tls-ca FILE --tls-cert FILE --tls-key FILE  a TLS session: the servers'\n"
"                        CA, this client's certificate and key (also\n"
"                        $ZKLOCK_TLS_CA, _CERT, _KEY; $ZKLOCK_TLS_KEY_PASSWORD)\n"
"  --sasl-user USER --sasl-password-file FILE  a SASL session (also\n"
"                        $ZKLOCK_SASL_USER, _PASSWORD_FILE, _PASSWORD; --sasl-mech)\n"
"  --verbose             the ZooKeeper client's log on stderr\n"
"\n"
"Exit status: COMMAND's; 1 busy, 2 usage, 3 lost, 4 timed out, 5 cannot reach\n"
"ZooKeeper, 6 not authorized, 7 refused, 70 internal, 126/127 COMMAND not run.\n",
            prog, prog, prog, prog, prog, prog, DEFAULT_CONNECT_TIMEOUT,
            ZKL_DEFAULT_SESSION_TIMEOUT);
}

/* What is wrong, in one line, and where to read more: the help text is
 * for those who ask for it. */
int usage_error(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry '%s --help' for more information.\n", prog);
    return EXIT_USAGE;
}

/* getopt_long()'s '?' (unknown option) or ':' (missing value), with
 * opterr 0 and optstring starting "+:": the option as typed. */
int getopt_error(int opt, char **argv)
{
    const char *typed = argv[optind - 1];
    int n = (int)strcspn(typed, "=");

    if (opt == '?')
        return optopt != 0 ? usage_error("unknown option -%c", optopt)
                           : usage_error("unknown option %.*s", n, typed);
    if (optopt < 256 && strncmp(typed, "--", 2) != 0)
        return usage_error("option -%c needs a value", optopt);
    return usage_error("option %.*s needs a value", n, typed);
}
