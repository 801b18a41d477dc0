#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan + libFuzzer),
# compiling the library's sources into each, since fuzz-names reaches
# internal functions.
#
#   fuzz/build.sh OUTDIR [BUILDDIR]
#
# BUILDDIR is a configured build (for the generated zklock_version.h);
# default build/plain.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: fuzz/build.sh OUTDIR [BUILDDIR]}
bld=${2:-$top/build/plain}
mkdir -p "$out"
CC=${CC:-clang}
flags=(-g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined
       -fno-sanitize-recover=undefined -fno-omit-frame-pointer
       -I"$top/include" -I"$bld/include" -I"$top/lib")
libs=($(pkg-config --libs libevent_core libevent_extra) -lzookeeper_st)
for t in path names api; do
    "$CC" "${flags[@]}" -o "$out/fuzz-$t" "$top/fuzz/fuzz-$t.c" \
        "$top"/lib/*.c "$top"/adapters/poll.c "$top"/adapters/libevent.c \
        "${libs[@]}"
done
