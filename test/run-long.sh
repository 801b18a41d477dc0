#!/usr/bin/env bash
# The long runs that CI (test/run-all.sh) leaves out, one after the
# other: the safety checker for ZKL_LONG_MINUTES (default 30) on a
# server of its own, on a 3-node ensemble of its own (make soak
# MINUTES=.. [NODES=3], test/soak.sh: faults, server and node restarts),
# and on a namespaced 5-node ensemble with the faults on its links (make
# soak NODES=5 NETNS=1: partitions, one-way cuts, lossy links; root
# only, SKIPPED elsewhere), the ZooKeeper client's allocations each
# failed in turn (test/zkalloc.c, all of them: CI fails every other
# one), then each libFuzzer target for ZKL_LONG_FUZZ_SECONDS (default
# 600) on its corpus. Each soak's JSON line is kept in build/long/
# (soak-1.json, soak-3.json, soak-netns-5.json) and shown; the run ends
# with one line "N passed, N failed" (", N skipped" when the namespaced
# one could not run) and exits non-zero if anything failed.
#
#   bash test/run-long.sh
#
# About 130 minutes with the defaults (133 on 2026-11-28, on 2 cores
# shared with other runs). Builds what it needs first (test/setup.sh,
# as CI does).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
minutes=${ZKL_LONG_MINUTES:-30}
fuzz_secs=${ZKL_LONG_FUZZ_SECONDS:-600}

if ! bash test/setup.sh; then
    echo "0 passed, 1 failed"
    exit 1
fi
mkdir -p build/long
passed=0
failed=0
skipped=0

soak() { # nodes [netns]
    local name=soak${2:+-$2}-$1 t0=$SECONDS rc
    local json=build/long/$name.json log=build/long/$name.log
    echo "== safety checker, $minutes min, $1 node(s)${2:+, namespaced}"
    top_srcdir="$top" top_builddir="$top/build/plain" ZKL_SOAK_NODES=$1 \
        ZKL_SOAK_NETNS=${2:+1} bash test/soak.sh "$minutes" >"$json" 2>"$log"
    rc=$?
    tail -n 1 "$json"
    if [ $rc = 77 ]; then
        skipped=$((skipped + 1))
        echo "SKIP: long/$name ($(sed -n 's/^soak: SKIP: //p' "$log"))"
    elif [ $rc = 0 ] && [ -s "$json" ]; then
        passed=$((passed + 1))
        echo "PASS: long/$name ($((SECONDS - t0)) s; JSON in $json)"
    else
        failed=$((failed + 1))
        echo "FAIL: long/$name (exit $rc; see $log)"
        tail -20 "$log"
    fi
}
soak 1
soak 3
soak 5 netns

. "$top/test/tally.sh"

echo "== the ZooKeeper client's allocations, every one failed in turn"
top_srcdir="$top" top_builddir="$top/build/plain" ZKL_TEST_PARTS=zkalloc \
    ZKL_TEST_PREFIX=long/ bash test/suite.sh | tee build/long/zkalloc.out
tally build/long/zkalloc.out long/zkalloc

echo "== fuzzing, $fuzz_secs s per target"
if bash fuzz/build.sh build/fuzz build/plain >build/long/fuzz-build.log 2>&1; then
    bash fuzz/run.sh build/fuzz "$fuzz_secs" | tee build/long/fuzz.out
    tally build/long/fuzz.out long/fuzz
else
    echo "FAIL: long/fuzz (build; see build/long/fuzz-build.log)"
    failed=$((failed + 1))
fi

if [ "$skipped" = 0 ]; then
    echo "$passed passed, $failed failed"
else
    echo "$passed passed, $failed failed, $skipped skipped"
fi
[ "$failed" = 0 ]
