/* test/zkalloc: the ZooKeeper client's entry points that allocate, each
 * defined here and forwarded to the real one, so that the shim knows
 * which call into the client an allocation, or a crash, happened in
 * (za_call_enter/leave in zkalloc-shim.c). A crash in the same call as
 * the failed allocation, before the client returned, is the client's
 * own doing; one in a later call may be its caller's. The program
 * defines them, so every caller in the process reaches these first
 * (the dynamic linker looks in the executable first). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include <zookeeper/zookeeper.h>

#include "zkalloc-shim.h"

static void *real(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);

    if (f == NULL) {
        fprintf(stderr, "zkalloc: no %s\n", name);
        abort();
    }
    return f;
}

#define WRAP(ret, name, params, args)                                    \
    ret name params                                                      \
    {                                                                    \
        static ret(*fn) params;                                          \
        ret r;                                                           \
                                                                         \
        if (fn == NULL)                                                  \
            *(void **)&fn = real(#name);                                 \
        za_call_enter();                                                 \
        r = fn args;                                                     \
        za_call_leave();                                                 \
        return r;                                                        \
    }

WRAP(zhandle_t *, zookeeper_init2,
     (const char *host, watcher_fn fn_, int recv_timeout,
      const clientid_t *clientid, void *context, int flags,
      log_callback_fn log_callback),
     (host, fn_, recv_timeout, clientid, context, flags, log_callback))
WRAP(zhandle_t *, zookeeper_init,
     (const char *host, watcher_fn fn_, int recv_timeout,
      const clientid_t *clientid, void *context, int flags),
     (host, fn_, recv_timeout, clientid, context, flags))
WRAP(int, zookeeper_interest,
     (zhandle_t *zh, int *fd, int *interest, struct timeval *tv),
     (zh, fd, interest, tv))
WRAP(int, zookeeper_process, (zhandle_t *zh, int events), (zh, events))
WRAP(int, zookeeper_close, (zhandle_t *zh), (zh))
WRAP(int, zoo_add_auth,
     (zhandle_t *zh, const char *scheme, const char *cert, int certLen,
      void_completion_t completion, const void *data),
     (zh, scheme, cert, certLen, completion, data))
WRAP(int, zoo_acreate,
     (zhandle_t *zh, const char *path, const char *value, int valuelen,
      const struct ACL_vector *acl, int mode, string_completion_t completion,
      const void *data),
     (zh, path, value, valuelen, acl, mode, completion, data))
WRAP(int, zoo_acreate2,
     (zhandle_t *zh, const char *path, const char *value, int valuelen,
      const struct ACL_vector *acl, int mode,
      string_stat_completion_t completion, const void *data),
     (zh, path, value, valuelen, acl, mode, completion, data))
WRAP(int, zoo_adelete,
     (zhandle_t *zh, const char *path, int version,
      void_completion_t completion, const void *data),
     (zh, path, version, completion, data))
WRAP(int, zoo_aexists,
     (zhandle_t *zh, const char *path, int watch,
      stat_completion_t completion, const void *data),
     (zh, path, watch, completion, data))
WRAP(int, zoo_aget,
     (zhandle_t *zh, const char *path, int watch,
      data_completion_t completion, const void *data),
     (zh, path, watch, completion, data))
WRAP(int, zoo_awget,
     (zhandle_t *zh, const char *path, watcher_fn watcher, void *watcherCtx,
      data_completion_t completion, const void *data),
     (zh, path, watcher, watcherCtx, completion, data))
WRAP(int, zoo_aget_children2,
     (zhandle_t *zh, const char *path, int watch,
      strings_stat_completion_t completion, const void *data),
     (zh, path, watch, completion, data))
WRAP(int, zoo_awget_children2,
     (zhandle_t *zh, const char *path, watcher_fn watcher, void *watcherCtx,
      strings_stat_completion_t completion, const void *data),
     (zh, path, watcher, watcherCtx, completion, data))
WRAP(int, zoo_aset,
     (zhandle_t *zh, const char *path, const char *buffer, int buflen,
      int version, stat_completion_t completion, const void *data),
     (zh, path, buffer, buflen, version, completion, data))
WRAP(int, zoo_amulti,
     (zhandle_t *zh, int count, const zoo_op_t *ops,
      zoo_op_result_t *results, void_completion_t completion,
      const void *data),
     (zh, count, ops, results, completion, data))
WRAP(int, zoo_async,
     (zhandle_t *zh, const char *path, string_completion_t completion,
      const void *data),
     (zh, path, completion, data))
WRAP(int, zoo_agetconfig,
     (zhandle_t *zh, int watch, data_completion_t completion,
      const void *data),
     (zh, watch, completion, data))
