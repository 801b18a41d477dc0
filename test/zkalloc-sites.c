/* test/zkalloc: where Debian 12's ZooKeeper C client crashes by itself,
 * or leaks, when one of its allocations fails. Each entry is the return
 * address of one of its calls to the allocator, as an offset into
 * libzookeeper_st.so.2 of libzookeeper-st2 3.8.0-11+deb12u2 (known by
 * its build id; the library is stripped, so the names come from reading
 * the disassembly against the 3.8.0 source: the assertion texts, the
 * log strings near each call, the sizes). Every crash listed here was
 * seen in the sweep, at that site, inside libzookeeper_st, but for three
 * of the serializers' reallocs (see there); the "why" says what the
 * client does with the NULL (file:line of the 3.8.0 source,
 * zookeeper-client/zookeeper-client-c/src). */
#include <string.h>

#include "zkalloc-shim.h"

static const char known_build[] = "c987b9a5d09eac64e40eac0c7e6fc2ad10a6e561";

#define CRASH ZA_CRASHES
#define LATER ZA_CRASHES_LATER
#define LEAK ZA_LEAKED

static const za_site_t sites[] = {
    /* zookeeper_init() */
    {0xab71, CRASH, "zookeeper_init: calloc(16)",
     "zh->fd unchecked, written at once (zookeeper.c:1322)"},
    {0x13860, CRASH, "create_zk_hashtable: calloc(8)",
     "assert(ht) (zk_hashtable.c:118)"},
    {0x14bb1, LATER, "create_hashtable: malloc(48)",
     "NULL returned to create_zk_hashtable, which keeps it as the watch "
     "table: the first watch lookup reads through it (hashtable.c:41, "
     "zk_hashtable.c:119)"},
    {0x14bd2, LATER, "create_hashtable: calloc(424)",
     "as malloc(48) above, for the bucket array (hashtable.c:43)"},
    /* the archives every request, reply and event goes through */
    {0xe790, CRASH, "create_buffer_oarchive: malloc(80)",
     "NULL archive, serialized into by every caller but "
     "queue_session_event (recordio.c:328)"},
    {0xe7a2, CRASH, "create_buffer_oarchive: malloc(16)",
     "as malloc(80) above (recordio.c:330)"},
    {0xe7ef, CRASH, "create_buffer_oarchive: malloc(128)",
     "the buffer, unchecked: the first serialize writes through NULL "
     "(recordio.c:337)"},
    {0xe704, CRASH, "create_buffer_iarchive: malloc(80)",
     "NULL archive, read by zookeeper_process and process_completions "
     "(recordio.c:309)"},
    {0xe716, CRASH, "create_buffer_iarchive: malloc(16)",
     "as malloc(80) above (recordio.c:311)"},
    {0xe23c, CRASH, "ia_deserialize_string: malloc(len+1)",
     "a watch event's path left NULL and hashed by deliverWatchers "
     "(recordio.c:273); in a reply, the NULL reaches the completion with "
     "ZOK, which zklock takes for a lost answer"},
    {0xf43d, CRASH, "deserialize_String_vector: calloc(count*8)",
     "unchecked, the names written through it (generated "
     "zookeeper.jute.c)"},
    /* resize_buffer() (recordio.c:56), inlined in each serializer: a
     * failed realloc fails the request before its completion is queued
     * (ZMARSHALLINGERROR; the old buffer is lost: see the leaks below),
     * except inside zoo_amulti, where the failed serialization skips
     * CreateRequest_init and free_duplicate_path then frees the
     * uninitialised req.path (zookeeper.c:4686): free() aborts. Which
     * serializer crosses the buffer's 128 or 256 bytes depends on the
     * paths' lengths. Seen crashing: int and bool; the other three are
     * the same code. */
    {0xe340, CRASH, "oa_serialize_int: realloc (in zoo_amulti)",
     "resize_buffer fails, free() of the uninitialised req.path aborts "
     "(recordio.c:56, zookeeper.c:4686)"},
    {0xe491, CRASH, "oa_serialize_bool: realloc (in zoo_amulti)",
     "as oa_serialize_int"},
    {0xe3e1, CRASH, "oa_serialize_buffer: realloc (in zoo_amulti)",
     "as oa_serialize_int"},
    {0xe531, CRASH, "oa_serialize_string: realloc (in zoo_amulti)",
     "as oa_serialize_int"},
    {0xe694, CRASH, "oa_serialize_long: realloc (in zoo_amulti)",
     "as oa_serialize_int"},
    /* reading replies and events */
    {0xcb64, CRASH, "check_events: calloc(24)",
     "the input buffer, unchecked, read into (zookeeper.c:3006)"},
    {0xc605, CRASH, "zookeeper_process: calloc(80)",
     "a watch event's completion entry, unchecked (zookeeper.c:3438)"},
    {0xaf8e, CRASH, "queue_session_event: calloc(80)",
     "the completion entry, unchecked (zookeeper.c:3122)"},
    {0xafe0, CRASH, "queue_session_event: calloc(24)",
     "its buffer, written before it is checked (zookeeper.c:3123)"},
    /* watches */
    {0x74b8, CRASH, "create_watcher_registration (zoo_awget): calloc(32)",
     "unchecked (zookeeper.c:3546)"},
    {0x74c3, LATER, "create_watcher_registration (zoo_awget): strdup",
     "the path, unchecked: hashed when the answer comes "
     "(zookeeper.c:3547)"},
    {0x90d5, CRASH,
     "create_watcher_registration (zoo_awget_children2): calloc(32)",
     "unchecked (zookeeper.c:3546)"},
    {0x90e2, LATER, "create_watcher_registration (zoo_awget_children2): "
                    "strdup",
     "the path, unchecked: hashed when the answer comes "
     "(zookeeper.c:3547)"},
    {0x136a3, CRASH, "clone_watcher_object: calloc(24)",
     "assert(res) (zk_hashtable.c:61)"},
    {0x13e1b, CRASH, "create_watcher_object: calloc(24)",
     "assert(wo) (zk_hashtable.c:86)"},
    {0x13a25, CRASH, "create_watcher_object_list: calloc(8)",
     "assert(wl) (zk_hashtable.c:95)"},
    {0x13e8f, CRASH, "create_watcher_object_list: calloc(8) (insert)",
     "assert(wl) (zk_hashtable.c:95, from do_insert_watcher_object)"},
    {0x13ea2, CRASH, "do_insert_watcher_object: strdup",
     "the key, unchecked, hashed (zk_hashtable.c:189)"},
    {0x1493e, CRASH, "hashtable_iterator: malloc(32)",
     "NULL iterator walked by do_clean_hashtable (zookeeper_close), "
     "collect_keys and copy_table (hashtable_itr.c:16, "
     "zk_hashtable.c:129, 211, 243)"},
    {0x14d0f, CRASH, "hashtable_insert: malloc(32)",
     "assert(res) in do_insert_watcher_object (hashtable.c:150, "
     "zk_hashtable.c:190)"},
    /* zoo_amulti */
    {0xd618, CRASH, "zoo_amulti: calloc(80)",
     "a sub-op's completion entry, queued unchecked (zookeeper.c:4684, "
     "4735)"},
    {0xd7b5, CRASH, "zoo_amulti: calloc(80) (second op)",
     "as above, for the ops after the first (zookeeper.c:4696-4735)"},

    /* Blocks left after zookeeper_close(). When the client cannot queue
     * a request it built (its completion entry, its buffer-list entry or
     * a realloc of the serializer failed), close_buffer_oarchive(&oa, 0)
     * keeps the serialized buffer and nothing frees it (resize_buffer
     * drops it too, setting it to NULL); a watch request's registration,
     * made before, is dropped with it (do_add_completion gets a NULL
     * entry and frees nothing). */
    {0xe7ef, LEAK, "create_buffer_oarchive: malloc(128)",
     "a request's buffer the client could not queue"},
    {0x74b8, LEAK, "create_watcher_registration (zoo_awget): calloc(32)",
     "the registration of a watch request it could not queue"},
    {0x74c3, LEAK, "create_watcher_registration (zoo_awget): strdup",
     "its path"},
    {0x90d5, LEAK,
     "create_watcher_registration (zoo_awget_children2): calloc(32)",
     "the registration of a watch request it could not queue"},
    {0x90e2, LEAK, "create_watcher_registration (zoo_awget_children2): "
                   "strdup",
     "its path"},
    {0xd618, LEAK, "zoo_amulti: calloc(80)",
     "a sub-op's completion entry of a multi it could not queue (the "
     "list of them is dropped: zookeeper.c:4739-4741)"},
    {0xd7b5, LEAK, "zoo_amulti: calloc(80) (second op)",
     "as above"},
};

int za_known_build(void)
{
    return strcmp(za_build_id(), known_build) == 0;
}

const za_site_t *za_site_at(uintptr_t site, za_kind_t kind)
{
    size_t i;

    if (!za_known_build())
        return NULL;
    for (i = 0; i < sizeof sites / sizeof sites[0]; i++)
        if (sites[i].site == site &&
            (sites[i].kind == kind ||
             (kind == ZA_CRASHES && sites[i].kind == ZA_CRASHES_LATER)))
            return &sites[i];
    return NULL;
}
