# Shared by the shell tests: sourced after setting SUITE (the name prefix).
# Provides $ZKLOCK, $H, $tmp, check NAME FN, count PATH, wait_count PATH N
# SECONDS, wait_ok PID... and finish (prints the closing "N passed, N
# failed").
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
ZKLOCK="$top_builddir/zklock"
H=${ZKL_TEST_HOSTS:?run through test/suite.sh}
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
passed=0
failed=0

check() { # name, then a command whose success is the test
    local name=$1
    shift
    if "$@" >"$tmp/out" 2>&1; then
        passed=$((passed + 1))
        echo "PASS: ${ZKL_TEST_PREFIX:-}$SUITE/$name"
    else
        failed=$((failed + 1))
        echo "FAIL: ${ZKL_TEST_PREFIX:-}$SUITE/$name"
        sed 's/^/    /' "$tmp/out" | tail -20
    fi
}

count() { "$ZKLOCK" ls -s "$H" "$1" | wc -l; }

wait_count() { # path, contenders wanted, seconds
    local i
    for i in $(seq $(( $3 * 10 ))); do
        [ "$(count "$1")" = "$2" ] && return 0
        sleep 0.1
    done
    echo "$1 has $(count "$1") contenders, wanted $2"
    return 1
}

# Waits for each background process given; fails if any exited non-zero
# (a bare "wait" drops their statuses).
wait_ok() {
    local p st rc=0
    for p; do
        wait "$p"
        st=$?
        [ "$st" = 0 ] || { echo "background process $p exited $st"; rc=1; }
    done
    return $rc
}

finish() {
    # A script whose checks all went unrun proved nothing.
    if [ $((passed + failed)) = 0 ]; then
        echo "FAIL: ${ZKL_TEST_PREFIX:-}$SUITE (no check ran)"
        failed=1
    fi
    echo "$passed passed, $failed failed"
    [ "$failed" = 0 ]
}
