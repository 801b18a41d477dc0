/* A fault-injecting TCP proxy between one client and the server, running
 * on the test's own event loop so a test can place a fault exactly
 * between two of its own steps.
 *
 * It cuts the client's byte stream into ZooKeeper frames (a 4-byte length,
 * then for every frame after the connect request an xid and an op code),
 * so a fault can be aimed at "the next create" or "the next listing"
 * rather than at whatever bytes happen to pass next. */
#ifndef ZKL_TEST_FAULTPROXY_H
#define ZKL_TEST_FAULTPROXY_H

#include <stdint.h>

struct event_base;
typedef struct fp fp_t;

/* ZooKeeper op codes a fault can be aimed at (jute's OpCode). */
enum fp_op {
    FP_OP_ANY = 0, /* any request but pings, auth and set-watches */
    FP_OP_CREATE = 1,
    FP_OP_DELETE = 2,
    FP_OP_EXISTS = 3,  /* zklock's keepalive */
    FP_OP_GETDATA = 4, /* zklock's watches are get-data watches */
    FP_OP_PING = 11,
    FP_OP_LIST = 12, /* getChildren2 */
    FP_OP_MULTI = 14,  /* a guarded write's transaction */
    FP_OP_CREATE2 = 15
};

typedef enum fp_fault {
    /* Drop the request and reset the connection: the server never
     * sees it. */
    FP_CUT = 1,
    /* Deliver the request, let the server act on it, and reset the
     * connection ms later without delivering any reply: "request done,
     * reply lost". */
    FP_LOSE = 2,
    /* Deliver the request; hold every reply on that connection for ms,
     * then deliver them. */
    FP_DELAY = 3,
    /* Deliver the request, then stall all traffic (fp_stall_for) for
     * ms. Past the session timeout the server expires the session. */
    FP_STALL = 4,
    /* Deliver the request and let the server act on it; its reply
     * reaches the client as an error reply with another code (see
     * fp_arm_recode): what a server sends when it applied a request it
     * then answers with, say, ZSESSIONMOVED. */
    FP_RECODE = 5
} fp_fault_t;

/* Listens on 127.0.0.1 (free port) and forwards to 127.0.0.1:target.
 * NULL if it cannot listen. */
fp_t *fp_new(struct event_base *base, uint16_t target);
void fp_free(fp_t *fp);
/* "127.0.0.1:PORT" of the proxy. */
const char *fp_hosts(fp_t *fp);
/* New connections go to 127.0.0.1:target from now on (open ones stay
 * where they are): one address in front of several servers, as a load
 * balancer would be. */
void fp_retarget(fp_t *fp, uint16_t target);

/* Stop moving bytes either way (on) or resume (off). Connections stay
 * open; new ones are accepted and stalled too. Past the session timeout
 * the server expires the session. */
void fp_stall(fp_t *fp, int on);
/* fp_stall(fp, 1) now and fp_stall(fp, 0) ms later. */
void fp_stall_for(fp_t *fp, int ms);
/* Reset every open connection now. */
void fp_cut(fp_t *fp);
/* While on, new connections are reset at once. */
void fp_refuse(fp_t *fp, int on);
/* Every byte, either way, arrives ms late (0: no added latency). */
void fp_latency(fp_t *fp, int ms);
/* Only server-to-client bytes arrive ms late: a slow return path, so
 * the client reads every reply long after the server got the request. */
void fp_latency_down(fp_t *fp, int ms);
/* fn(arg) runs right after the proxy resets connections (fp_cut, an
 * FP_CUT or FP_LOSE going off), from inside the proxy's own callback:
 * before the client's loop can see the reset, so a test can make the
 * client send into the reset socket (which the ZooKeeper client closes
 * without a session event). NULL: nothing. */
void fp_on_reset(fp_t *fp, void (*fn)(void *), void *arg);
/* Arms one fault for the next request of type op (FP_OP_*) on any
 * connection; ms as fp_fault_t says. Replaces a fault still armed. */
void fp_arm(fp_t *fp, int op, fp_fault_t fault, int ms);
/* As fp_arm(), for the next such request whose path contains path_part
 * (NULL or "": any path): a fault aimed at a semaphore's leases rather
 * than at its mutex. */
void fp_arm_path(fp_t *fp, int op, fp_fault_t fault, int ms,
                 const char *path_part);
/* Arms FP_RECODE for the next request of type op: its reply becomes an
 * error reply with code err (a ZooKeeper result code). */
void fp_arm_recode(fp_t *fp, int op, int err);
/* fp_arm(fp, FP_OP_ANY, FP_LOSE, delay_ms). */
void fp_lose_next_reply(fp_t *fp, int delay_ms);
/* Armed faults that went off so far. */
int fp_fired(fp_t *fp);
/* Connections accepted so far. */
int fp_accepted(fp_t *fp);
/* Connections open now: with one proxy per ensemble node, the one a
 * session is using. */
int fp_open(fp_t *fp);

#endif
