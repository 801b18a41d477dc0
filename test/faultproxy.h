/* A fault-injecting TCP proxy between one client and the server, running
 * on the test's own event loop so a test can place a fault exactly
 * between two of its own steps. */
#ifndef ZKL_TEST_FAULTPROXY_H
#define ZKL_TEST_FAULTPROXY_H

#include <stdint.h>

struct event_base;
typedef struct fp fp_t;

/* Listens on 127.0.0.1 (free port) and forwards to 127.0.0.1:target. */
fp_t *fp_new(struct event_base *base, uint16_t target);
void fp_free(fp_t *fp);
/* "127.0.0.1:PORT" of the proxy. */
const char *fp_hosts(fp_t *fp);

/* Stop moving bytes either way (on) or resume (off). Connections stay
 * open; new ones are accepted and stalled too. Past the session timeout
 * the server expires the session. */
void fp_stall(fp_t *fp, int on);
/* Reset every open connection now. */
void fp_cut(fp_t *fp);
/* While on, new connections are reset at once. */
void fp_refuse(fp_t *fp, int on);
/* The next request: forward what the client sends for delay_ms, let the
 * server act on it, then reset the connection without delivering any
 * reply: "request done, reply lost". */
void fp_lose_next_reply(fp_t *fp, int delay_ms);
/* Connections accepted so far. */
int fp_accepted(fp_t *fp);

#endif
