#!/usr/bin/env bash
# The test suite: starts a throw-away ZooKeeper, runs the C tests and the
# shell tests (CLI, Curator interop) against it, stops it, and prints one
# closing line "N passed, N failed". A test that needs the server fails,
# never skips, when no server can be started.
#
#   test/suite.sh [TEST-NAME-SUBSTRING...]
#
# ZKL_TEST_WRAPPER: a command put before every run of the C tests
# (run-all.sh uses valgrind); ZKL_TEST_NO_SHELL=1 skips the shell tests.
# ZKL_TEST_PARTS: which parts run, of "c adapters zkalloc shell
# ensemble" (the default: all), so that run-all.sh can run parts side by
# side, each against a server of its own; ZKL_TEST_SHARD=K/N splits the C tests
# (test/harness.c). ZKL_TEST_SHELL: the shell tests to run (names
# without test- and .sh; default all), ZKL_TEST_SHELL_SKIP: those not to.
# The leftover check runs whatever ran. A test that cannot run on this
# machine (test/lib.sh's skip) is counted as skipped: the closing line
# then ends in ", N skipped".
set -uo pipefail
# ZKL_TEST_SMOKE=1 (make distcheck from run-all.sh): a few tests only, to
# show the tarball builds a working suite; run-all.sh ran all of it.
if [ -n "${ZKL_TEST_SMOKE:-}" ] && [ $# = 0 ]; then
    set -- version path_validation acquire_release_basic contenders_order \
        matrix_held_cut
fi

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
top_srcdir=$(cd "$top_srcdir" && pwd)
top_builddir=$(cd "$top_builddir" && pwd)
export top_srcdir top_builddir

work=$(mktemp -d /tmp/zklock-test.XXXXXX)
export ZKL_TEST_ZKDIR=$work/zk
cleanup() {
    "$top_srcdir/test/zkserver.sh" kill "$ZKL_TEST_ZKDIR" >/dev/null 2>&1 || true
    [ -d "$work/ens" ] && "$top_srcdir/test/zkserver.sh" kill "$work/ens" >/dev/null 2>&1 || true
    [ -n "${ZKL_TEST_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT INT TERM

passed=0
failed=0
skipped=0
ran=0 # runners started, the leftover checks aside
if ! ZKL_TEST_HOSTS=$("$top_srcdir/test/zkserver.sh" start "$ZKL_TEST_ZKDIR"); then
    echo "FAIL: could not start a ZooKeeper server (install the zookeeper package)"
    echo "0 passed, 1 failed"
    exit 1
fi
export ZKL_TEST_HOSTS
echo "# ZooKeeper at $ZKL_TEST_HOSTS ($ZKL_TEST_ZKDIR)"

. "$top_srcdir/test/tally.sh"

# Whether run-tests [--ensemble] selects any test by the names given: a
# runner that would select none is not started (it would fail, rightly,
# for running nothing); the suite as a whole must still run something.
selects() {
    [ -n "$("$top_builddir/test/run-tests" --list "$@")" ]
}

parts=" ${ZKL_TEST_PARTS:-c adapters zkalloc shell ensemble} "
part() { case "$parts" in *" $1 "*) return 0 ;; esac; return 1; }

wrap=${ZKL_TEST_WRAPPER:-}
if part c && { [ $# = 0 ] || selects "$@"; }; then
    ran=$((ran + 1))
    $wrap "$top_builddir/test/run-tests" "$@" | tee "$work/c.out"
    tally "$work/c.out" run-tests
fi

# The adapter suite, on every loop adapter that was built ("adapters"
# selects them all when test names are given).
want_adapters=1
part adapters || want_adapters=0
if [ $want_adapters = 1 ] && [ $# -gt 0 ]; then
    want_adapters=0
    for f in "$@"; do case "$f" in adapter*) want_adapters=1 ;; esac; done
fi
for a in "$top_builddir"/test/adapter-*; do
    [ $want_adapters = 1 ] && [ -x "$a" ] && [ -f "$a" ] || continue
    case "$a" in *.o) continue ;; esac
    name=$(basename "$a")
    ran=$((ran + 1))
    $wrap "$a" | tee "$work/$name.out"
    tally "$work/$name.out" "$name"
done

# The ZooKeeper client's own allocations failed in turn (test/zkalloc.c):
# a program of its own, which replaces malloc, so never under the
# wrapper (valgrind would replace it again) and not built with the
# sanitizers. ZKL_ZKALLOC_STRIDE (run-all.sh sets it) thins the sweep.
z=$top_builddir/test/zkalloc
if part zkalloc && [ -x "$z" ] &&
    { [ $# = 0 ] || [ -n "$("$z" --list "$@")" ]; }; then
    ran=$((ran + 1))
    "$z" "$@" | tee "$work/zkalloc.out"
    tally "$work/zkalloc.out" zkalloc
elif part zkalloc && [ ! -x "$z" ] && [ $# = 0 ]; then
    echo "# zkalloc: not built here (a sanitizer build: it replaces malloc)"
fi

for t in "$top_srcdir"/test/test-*.sh; do
    [ -e "$t" ] || continue
    [ -z "${ZKL_TEST_NO_SHELL:-}" ] && part shell || continue
    name=$(basename "$t" .sh)
    case " ${ZKL_TEST_SHELL:-${name#test-}} " in *" ${name#test-} "*) ;; *) continue ;; esac
    case " ${ZKL_TEST_SHELL_SKIP:-} " in *" ${name#test-} "*) continue ;; esac
    if [ $# -gt 0 ]; then
        want=0
        for f in "$@"; do case "$name" in *"$f"*) want=1 ;; esac; done
        [ $want = 1 ] || continue
    fi
    ran=$((ran + 1))
    timeout 600 bash "$t" | tee "$work/$name.out"
    tally "$work/$name.out" "$name"
done

# Last: nothing any test started may have left a lock node behind.
"$top_builddir/test/run-tests" --leftovers | tee "$work/leftovers.out"
tally "$work/leftovers.out" leftovers

# Failover: a 3-node ensemble of its own (skipped only when the test
# names given select none of its tests).
if part ensemble && { [ $# = 0 ] || selects --ensemble "$@"; }; then
    export ZKL_TEST_ENSEMBLE=$work/ens
    if ens_hosts=$("$top_srcdir/test/zkserver.sh" ensemble "$ZKL_TEST_ENSEMBLE" 3); then
        echo "# ensemble at $ens_hosts"
        ran=$((ran + 1))
        ZKL_TEST_FLIGHT=${ZKL_TEST_FLIGHT:-info} ZKL_TEST_HOSTS=$ens_hosts $wrap "$top_builddir/test/run-tests" --ensemble "$@" | tee "$work/ens.out"
        tally "$work/ens.out" ensemble
        ZKL_TEST_HOSTS=$ens_hosts "$top_builddir/test/run-tests" --leftovers | tee "$work/ens-leftovers.out"
        tally "$work/ens-leftovers.out" ensemble-leftovers
    else
        echo "FAIL: could not start a 3-node ensemble"
        failed=$((failed + 1))
    fi
    "$top_srcdir/test/zkserver.sh" kill "$ZKL_TEST_ENSEMBLE" >/dev/null 2>&1 || true
fi

# The leftover checks alone are no run of the tests asked for.
if [ "$ran" = 0 ]; then
    echo "FAIL: no test selected by: $*"
    failed=1
fi
if [ "$skipped" = 0 ]; then
    echo "$passed passed, $failed failed"
else
    echo "$passed passed, $failed failed, $skipped skipped"
fi
[ "$failed" = 0 ]
