/* Process-global log hook: ZooKeeper's log callback has no user pointer,
 * so one trampoline serves every client. Silent unless asked. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

int zkl__log_max = 0;
static zkl_log_fn log_fn;
static void *log_arg;

void zkl_set_log(zkl_log_fn fn, void *arg, zkl_log_level_t max_level)
{
    log_fn = fn;
    log_arg = arg;
    zkl__log_max = fn != NULL ? (int)max_level : 0;
    zoo_set_debug_level(fn == NULL ? (ZooLogLevel)0
                        : max_level >= ZKL_LOG_DEBUG ? ZOO_LOG_LEVEL_DEBUG
                        : max_level >= ZKL_LOG_INFO  ? ZOO_LOG_LEVEL_INFO
                        : max_level >= ZKL_LOG_WARN  ? ZOO_LOG_LEVEL_WARN
                                                     : ZOO_LOG_LEVEL_ERROR);
}

void zkl__log(int level, const char *fmt, ...)
{
    char buf[512];
    va_list ap;

    if (log_fn == NULL)
        return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    log_fn((zkl_log_level_t)level, buf, log_arg);
}

void zkl__zk_log_trampoline(const char *msg)
{
    /* The ZooKeeper client already filtered by zoo_set_debug_level. */
    int level = ZKL_LOG_DEBUG;

    if (log_fn == NULL)
        return;
    /* 3.8 writes "...:ZOO_ERROR@function@line: ": without the "ZOO_"
     * every line was taken for DEBUG and dropped below that level. */
    if (strstr(msg, "ERROR@") != NULL)
        level = ZKL_LOG_ERROR;
    else if (strstr(msg, "WARN@") != NULL)
        level = ZKL_LOG_WARN;
    else if (strstr(msg, "INFO@") != NULL)
        level = ZKL_LOG_INFO;
    if (level <= zkl__log_max)
        log_fn((zkl_log_level_t)level, msg, log_arg);
}
