/* The library's one clock: monotonic, so a step of the wall clock
 * moves no deadline and fakes no session expiry. */
#include <time.h>

#include "internal.h"

uint64_t zkl__now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t zkl__now_ms(void)
{
    return zkl__now_us() / 1000u;
}
