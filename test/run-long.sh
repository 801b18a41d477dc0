#!/usr/bin/env bash
# The long runs that CI (test/run-all.sh) leaves out, one after the
# other: the safety checker for ZKL_LONG_MINUTES (default 30) on a
# server of its own and on a 3-node ensemble of its own (make soak
# MINUTES=.. [NODES=3], test/soak.sh: faults, server and node restarts),
# the ZooKeeper client's allocations each failed in turn (test/zkalloc.c,
# all of them: CI fails every other one), then each libFuzzer target for
# ZKL_LONG_FUZZ_SECONDS (default 600) on its corpus. Each soak's JSON line is kept in build/long/ (soak-1.json,
# soak-3.json) and shown; the run ends with one line "N passed, N
# failed" and exits non-zero if anything failed.
#
#   bash test/run-long.sh
#
# About 80 minutes with the defaults. Builds what it needs first
# (test/setup.sh, as CI does).
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

soak() { # nodes
    local json=build/long/soak-$1.json t0=$SECONDS rc
    echo "== safety checker, $minutes min, $1 node(s)"
    top_srcdir="$top" top_builddir="$top/build/plain" ZKL_SOAK_NODES=$1 \
        bash test/soak.sh "$minutes" >"$json" 2>build/long/soak-$1.log
    rc=$?
    tail -n 1 "$json"
    if [ $rc = 0 ] && [ -s "$json" ]; then
        passed=$((passed + 1))
        echo "PASS: long/soak-$1 ($((SECONDS - t0)) s; JSON in $json)"
    else
        failed=$((failed + 1))
        echo "FAIL: long/soak-$1 (exit $rc; see build/long/soak-$1.log)"
        tail -20 "build/long/soak-$1.log"
    fi
}
soak 1
soak 3

# tally FILE NAME: adds a run's closing line "N passed, N failed".
tally() {
    local line
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$1" | tail -n 1)
    if [ -n "$line" ]; then
        passed=$((passed + $(echo "$line" | cut -d' ' -f1)))
        failed=$((failed + $(echo "$line" | cut -d' ' -f3)))
    else
        echo "FAIL: long/$2 (no closing line; see $1)"
        failed=$((failed + 1))
    fi
}

echo "== the ZooKeeper client's allocations, every one failed in turn"
top_srcdir="$top" top_builddir="$top/build/plain" ZKL_TEST_PARTS=zkalloc \
    ZKL_TEST_PREFIX=long/ bash test/suite.sh | tee build/long/zkalloc.out
tally build/long/zkalloc.out zkalloc

echo "== fuzzing, $fuzz_secs s per target"
if bash fuzz/build.sh build/fuzz build/plain >build/long/fuzz-build.log 2>&1; then
    bash fuzz/run.sh build/fuzz "$fuzz_secs" | tee build/long/fuzz.out
    tally build/long/fuzz.out fuzz
else
    echo "FAIL: long/fuzz (build; see build/long/fuzz-build.log)"
    failed=$((failed + 1))
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
