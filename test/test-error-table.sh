#!/usr/bin/env bash
# Every code of the public error table (include/zklock.h) is produced and
# asserted by some C test: ASSERT_RC(..., ZKL_CODE) or ASSERT(... ==
# ZKL_CODE). A code no test asserts is a promise nothing checks; a new
# code must come with its test.
set -u
SUITE=error-table
. "$(dirname "$0")/lib.sh"

asserted() { # code
    # Calls span lines: read each file as one line.
    cat "$top_srcdir"/test/test-*.c "$top_srcdir"/test/adapter-suite.c |
        tr '\n' ' ' |
        grep -qE "ASSERT_RC\([^;]*ZKL_$1\)|ASSERT\([^;]*== ZKL_$1\b"
}

codes=$(sed -n 's/^ *XX(\([A-Z]*\), *-[0-9]*,.*/\1/p' "$top_srcdir/include/zklock.h")
[ "$(echo "$codes" | wc -w)" -ge 20 ] ||
    { echo "FAIL: codes/table (read $(echo "$codes" | wc -w) codes)"; failed=1; }
for c in $codes; do
    check "$c" asserted "$c"
done
finish
