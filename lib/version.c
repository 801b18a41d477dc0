/* The library's version, as built (zklock_version.h, from configure):
 * what a program linked against it may compare with the header it was
 * compiled with. */
#include "internal.h"

unsigned zkl_version(void)
{
    return ZKL_VERSION_NUM;
}

const char *zkl_version_string(void)
{
    return ZKL_VERSION_STRING;
}
