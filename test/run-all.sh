#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine and runs every test:
# the suite on the plain build (its last shell tests run the safety
# checker a minute on a server and a minute on a 3-node ensemble) and,
# side by side with it, the suite under AddressSanitizer + UBSan (the
# checker half as long); then the C tests under valgrind memcheck (any
# error or leak fails the test), the libFuzzer targets on their corpora
# (ZKL_FUZZ_SECONDS each, default 30), the Debian packages (built,
# checked by lintian, installed in a fresh debootstrap root and used
# there: test/packages.sh), and `make distcheck` (with a smoke subset of
# the suite). Ends with one line "N passed, N failed"; exits non-zero if
# anything failed.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

if ! bash test/setup.sh --asan; then
    echo "0 passed, 1 failed"
    exit 1
fi

passed=0
failed=0
add() { # a closing line of a run; one that ran nothing is a failure
    local p f
    p=$(echo "$1" | cut -d' ' -f1)
    f=$(echo "$1" | cut -d' ' -f3)
    if [ $((p + f)) = 0 ]; then
        echo "FAIL: a stage ran no test"
        f=1
    fi
    passed=$((passed + p))
    failed=$((failed + f))
}

# The two builds' suites run side by side, each against its own server
# (test/suite.sh starts one), to keep CI short on a 2-core machine; their
# outputs are shown one after the other.
declare -A outs
for b in plain asan; do
    outs[$b]=$(mktemp)
    # Under ASan the safety checker runs half as long, and its own tests
    # (lagging, sabotage) not at all: it is there for memory errors under
    # faults; the plain pass is the one that counts.
    soak_min=1 selftest=1 san=
    # The ZooKeeper C client's own leak is suppressed (test/lsan.supp).
    [ $b = asan ] && soak_min=0.5 selftest=0 \
        san="ASAN_OPTIONS=malloc_context_size=3 LSAN_OPTIONS=suppressions=$top/test/lsan.supp"
    env $san ZKL_SOAK_MINUTES=${ZKL_SOAK_MINUTES:-$soak_min} \
        ZKL_SOAK_SELFTEST=$selftest ZKL_TEST_PREFIX="$b/" \
        top_srcdir="$top" top_builddir="$top/build/$b" \
        bash test/suite.sh >"${outs[$b]}" 2>&1 &
done
wait
for b in plain asan; do
    echo "== test suite, $b build"
    cat "${outs[$b]}"
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "${outs[$b]}" | tail -n 1)
    [ -n "$line" ] && add "$line" || failed=$((failed + 1))
    rm -f "${outs[$b]}"
done

echo "== C tests under valgrind memcheck, plain build"
out=$(mktemp)
# The read/write lock's and the semaphore's fault matrices run the same
# code paths as the mutex's, which valgrind does run, and the crossed
# multi-lock rounds those of the shorter multi-lock tests, and the paced
# burst (3,300 locks) those of the shared-view tests, and the staged
# cross-session handoff races (a proxy's latency against a read's
# answer) those of the cross-session handoff tests; ASan runs them all.
# A poll(2) refused for RLIMIT_NOFILE cannot be had under valgrind, which
# keeps that limit to itself.
vg_tests="$(sed -n 's/^T(\([a-z0-9_]*\),.*/=\1/p' test/test-list.h |
    grep -Ev '^=((rw|sem)_matrix_|multi_(two|three|crossed)|burst_paced|read_ahead_of|hand_across_never|poll_run_reports_a_refused_poll)') ensemble adapters"
ZKL_TEST_PREFIX="valgrind/" ZKL_TEST_NO_SHELL=1 top_srcdir="$top" \
    top_builddir="$top/build/plain" \
    ZKL_TEST_WRAPPER="$top/build/plain/libtool --mode=execute valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect --suppressions=$top/test/zookeeper-client.supp" \
    bash test/suite.sh $vg_tests 2>&1 | tee "$out"
line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1)
[ -n "$line" ] && add "$line" || failed=$((failed + 1))
rm -f "$out"

echo "== fuzzing, ${ZKL_FUZZ_SECONDS:-30} s per target"
out=$(mktemp)
if bash fuzz/build.sh build/fuzz build/plain >build/fuzz.log 2>&1; then
    bash fuzz/run.sh build/fuzz "${ZKL_FUZZ_SECONDS:-30}" 2>&1 | tee "$out"
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1)
    [ -n "$line" ] && add "$line" || failed=$((failed + 1))
else
    echo "FAIL: fuzz (build)"
    tail -20 build/fuzz.log
    failed=$((failed + 1))
fi
rm -f "$out"

echo "== Debian packages: build, lintian, install into a clean root, use"
out=$(mktemp)
bash test/packages.sh 2>&1 | tee "$out"
line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1)
[ -n "$line" ] && add "$line" || failed=$((failed + 1))
rm -f "$out"

echo "== make distcheck"
if ZKL_TEST_SMOKE=1 make -C build/plain distcheck >build/plain/distcheck.log 2>&1; then
    passed=$((passed + 1))
    echo "PASS: distcheck"
else
    failed=$((failed + 1))
    echo "FAIL: distcheck"
    tail -40 build/plain/distcheck.log
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
