#!/usr/bin/env bash
# What the build promises a user who links it: the core needs no event
# loop library, and every library exports its own prefix only; and what
# the library's layout promises its readers (docs/design.md): no circle
# of calls between lib/ files, a client that calls no recipe's file, an
# attempt machine that names no kind (test/layers.py).
set -u
SUITE=build
. "$(dirname "$0")/lib.sh"
L="$top_builddir/.libs"

core_needs_no_loop() {
    local dump needed
    # A missing or unreadable library is a failure, not an empty list.
    dump=$(objdump -p "$L/libzklock.so") || return 1
    needed=$(echo "$dump" | awk '$1 == "NEEDED" { print $2 }')
    echo "$needed"
    # The core is what links the ZooKeeper client; an empty or foreign
    # list proves nothing.
    echo "$needed" | grep -q '^libzookeeper_st\.' ||
        { echo "libzklock.so does not need libzookeeper_st"; return 1; }
    ! echo "$needed" | grep -E 'libevent|libuv|libev\.|libglib|libsystemd'
}
check core-needs-no-loop core_needs_no_loop

exports_only() { # library, prefix
    local bad
    bad=$(nm -D --defined-only "$L/$1" | awk '$2 ~ /^[TDBRV]$/ {print $3}' |
        grep -v "^$2")
    [ -z "$bad" ] || { echo "$1 exports: $bad"; return 1; }
    nm -D --defined-only "$L/$1" | grep -q " T $2"
}
check exports-core exports_only libzklock.so zkl_
for a in libevent libuv libev glib sdevent; do
    if [ -e "$L/libzklock-$a.so" ]; then
        check "exports-$a" exports_only "libzklock-$a.so" "zkl_${a}_"
    else
        check "exports-$a" false # not built: CI installs every loop
    fi
done

check lib-layers python3 "$top_srcdir/test/layers.py" "$top_srcdir" "$top_builddir"

finish
