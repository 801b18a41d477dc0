/* See interpose.h. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zookeeper/zookeeper.h>

#include "interpose.h"

static int refuse_list, refuse_delete, refuse_exists, refusals;
static const char *maybe_fn;
static int maybes;

static void *real(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);

    if (f == NULL) {
        fprintf(stderr, "interpose: no %s\n", name);
        abort();
    }
    return f;
}

void t_refuse_next_list(int rc)
{
    refuse_list = rc;
}

void t_refuse_next_delete(int rc)
{
    refuse_delete = rc;
}

void t_refuse_exists(int rc)
{
    refuse_exists = rc;
}

int t_refusals(void)
{
    return refusals;
}

void t_maybe_next(const char *fn)
{
    maybe_fn = fn;
}

int t_maybes(void)
{
    return maybes;
}

/* The real call, its ZOK turned into ZMARSHALLINGERROR when armed: the
 * completion was queued (and comes), the caller was told otherwise. */
static int maybe(const char *name, int rc)
{
    if (maybe_fn == NULL || strcmp(maybe_fn, name) != 0 || rc != ZOK)
        return rc;
    maybe_fn = NULL;
    maybes++;
    return ZMARSHALLINGERROR;
}

#define FORWARD(name, params, args)                                      \
    int name params                                                      \
    {                                                                    \
        static int(*fn) params;                                          \
                                                                         \
        if (fn == NULL)                                                  \
            *(void **)&fn = real(#name);                                 \
        return maybe(#name, fn args);                                    \
    }

FORWARD(zoo_acreate, (zhandle_t *zh, const char *path, const char *value,
                      int valuelen, const struct ACL_vector *acl, int mode,
                      string_completion_t completion, const void *data),
        (zh, path, value, valuelen, acl, mode, completion, data))
FORWARD(zoo_acreate2, (zhandle_t *zh, const char *path, const char *value,
                       int valuelen, const struct ACL_vector *acl, int mode,
                       string_stat_completion_t completion, const void *data),
        (zh, path, value, valuelen, acl, mode, completion, data))
FORWARD(zoo_amulti, (zhandle_t *zh, int count, const zoo_op_t *ops,
                     zoo_op_result_t *results, void_completion_t completion,
                     const void *data),
        (zh, count, ops, results, completion, data))
FORWARD(zoo_aget, (zhandle_t *zh, const char *path, int watch,
                   data_completion_t completion, const void *data),
        (zh, path, watch, completion, data))
FORWARD(zoo_awget, (zhandle_t *zh, const char *path, watcher_fn watcher,
                    void *watcherCtx, data_completion_t completion,
                    const void *data),
        (zh, path, watcher, watcherCtx, completion, data))
FORWARD(zoo_aset, (zhandle_t *zh, const char *path, const char *buffer,
                   int buflen, int version, stat_completion_t completion,
                   const void *data),
        (zh, path, buffer, buflen, version, completion, data))
FORWARD(zoo_async, (zhandle_t *zh, const char *path,
                    string_completion_t completion, const void *data),
        (zh, path, completion, data))
int zoo_aexists(zhandle_t *zh, const char *path, int watch,
                stat_completion_t completion, const void *data)
{
    static int (*fn)(zhandle_t *, const char *, int, stat_completion_t,
                     const void *);

    if (refuse_exists != 0) {
        refusals++;
        return refuse_exists;
    }
    if (fn == NULL)
        *(void **)&fn = real("zoo_aexists");
    return maybe("zoo_aexists", fn(zh, path, watch, completion, data));
}
FORWARD(zoo_awget_children2, (zhandle_t *zh, const char *path,
                              watcher_fn watcher, void *watcherCtx,
                              strings_stat_completion_t completion,
                              const void *data),
        (zh, path, watcher, watcherCtx, completion, data))

int zoo_aget_children2(zhandle_t *zh, const char *path, int watch,
                       strings_stat_completion_t completion, const void *data)
{
    static int (*fn)(zhandle_t *, const char *, int,
                     strings_stat_completion_t, const void *);

    if (refuse_list != 0) {
        int rc = refuse_list;

        refuse_list = 0;
        refusals++;
        return rc;
    }
    if (fn == NULL)
        *(void **)&fn = real("zoo_aget_children2");
    return maybe("zoo_aget_children2", fn(zh, path, watch, completion, data));
}

int zoo_adelete(zhandle_t *zh, const char *path, int version,
                void_completion_t completion, const void *data)
{
    static int (*fn)(zhandle_t *, const char *, int, void_completion_t,
                     const void *);

    if (refuse_delete != 0) {
        int rc = refuse_delete;

        refuse_delete = 0;
        refusals++;
        return rc;
    }
    if (fn == NULL)
        *(void **)&fn = real("zoo_adelete");
    return maybe("zoo_adelete", fn(zh, path, version, completion, data));
}
