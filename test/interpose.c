/* See interpose.h. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include <zookeeper/zookeeper.h>

#include "interpose.h"

static int refuse_list, refuse_delete, refusals;

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

int t_refusals(void)
{
    return refusals;
}

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
    return fn(zh, path, watch, completion, data);
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
    return fn(zh, path, version, completion, data);
}
