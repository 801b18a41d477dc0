/* What the C examples of README.md may take for granted when they are not
 * complete programs (test/test-examples.sh compiles them after this
 * header):
 *
 *   <!-- example: fragment -->   statements: the body of a function, with
 *                                ZKL_EXAMPLE_FRAGMENT defined, so the
 *                                names below exist;
 *   <!-- example: top-level -->  declarations at file scope (prototypes of
 *                                the callbacks the fragments pass).
 *
 * A fragment may use c, lk and the callbacks below as if the program had
 * set them up; they are declared, never defined (the examples are
 * compiled, not linked). */
#ifndef ZKL_EXAMPLE_PRELUDE_H
#define ZKL_EXAMPLE_PRELUDE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zklock.h>

#ifdef ZKL_EXAMPLE_FRAGMENT
extern zkl_client_t *c;   /* a client, attached to a loop */
extern zkl_lock_t *lk;    /* a lock handle (held, where it matters) */

void on_lock(zkl_lock_t *, zkl_lock_event_t, int, void *);
void on_set(zkl_multi_t *, zkl_lock_event_t, int, void *);
void on_written(zkl_client_t *, int, const zkl_op_result_t *, size_t,
                void *);
#endif

#endif
