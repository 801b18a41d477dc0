/* Refusals of the ZooKeeper client, on demand: the test binary defines
 * two of its calls itself, so that its definitions win over
 * libzookeeper_st's for every caller, libzklock included (the dynamic
 * linker looks in the executable first). Each forwards to the real call
 * unless a refusal is armed. That is the one fault the fault proxy cannot
 * make: the client declining to queue a request (it returns
 * ZMARSHALLINGERROR when it cannot build one, out of memory). */
#ifndef ZKL_TEST_INTERPOSE_H
#define ZKL_TEST_INTERPOSE_H

/* The next zoo_aget_children2() / zoo_adelete() returns rc without
 * sending anything. */
void t_refuse_next_list(int rc);
void t_refuse_next_delete(int rc);
/* Every zoo_aexists() returns rc without sending anything, until
 * t_refuse_exists(0): a client that cannot allocate the fence's
 * barrier, nor a keepalive. */
void t_refuse_exists(int rc);
/* How many refusals went off. */
int t_refusals(void);

/* The next call of the ZooKeeper client function named fn that it
 * takes is answered ZMARSHALLINGERROR all the same: what the 3.8 client
 * says when its last allocation fails after it queued the completion,
 * which then still runs (here with the server's real answer; there with
 * an error, after a reset). */
void t_maybe_next(const char *fn);
int t_maybes(void);

#endif
