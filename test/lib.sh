# Shared by the shell tests: sourced after setting SUITE (the name prefix).
# Provides $ZKLOCK, $H, $tmp, check NAME FN, skip NAME REASON, count PATH,
# wait_count PATH N SECONDS, wait_ok PID... and finish (prints the closing
# "N passed, N failed", with ", N skipped" when a check could not run
# here: a skip is neither a pass nor a failure, and is shown as such).
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
# ZKL_TEST_ZKLOCK: another zklock to test than the build's (test/install.sh
# runs test-cli.sh on the installed one). ZKL_TEST_ONLY=REGEX: only the
# checks whose names match.
ZKLOCK=${ZKL_TEST_ZKLOCK:-$top_builddir/zklock}
H=${ZKL_TEST_HOSTS:?run through test/suite.sh}
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
passed=0
failed=0
skipped=0

check() { # name, then a command whose success is the test
    local name=$1
    shift
    # ZKL_TEST_ONLY=REGEX runs only the checks whose names match it.
    [ -n "${ZKL_TEST_ONLY:-}" ] && ! [[ $name =~ $ZKL_TEST_ONLY ]] && return 0
    if "$@" >"$tmp/out" 2>&1; then
        passed=$((passed + 1))
        echo "PASS: ${ZKL_TEST_PREFIX:-}$SUITE/$name"
    else
        failed=$((failed + 1))
        echo "FAIL: ${ZKL_TEST_PREFIX:-}$SUITE/$name"
        sed 's/^/    /' "$tmp/out" | tail -20
    fi
}

# A check this machine cannot run (say, without the privileges it needs):
# SKIP with the reason, counted apart.
skip() { # name, reason
    skipped=$((skipped + 1))
    echo "SKIP: ${ZKL_TEST_PREFIX:-}$SUITE/$1 ($2)"
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

# The safety checker's verdict (test-soak.sh, test-netns.sh): field NAME
# of its JSON line in $tmp/soak.json; what it says when a promise broke
# (soak-checker.c's notes); its safety figures, one per promise, each of
# which must be 0.
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$tmp/soak.json" "$1"; }
amiss='UNEXPLAINED|stale write|regression|HANG|LATE|guarded write'
amiss+='|reentrant handle|set member|without LOST|never granted|held twice'
amiss+='|no downgrade|no guarded|died|badly|never came|too late|could not'
figures='overlaps_unexplained mutex_overlaps reentrant_errors
    writers_beside_readers leases_over_limit leaders_at_once
    sets_not_held_together guarded_without_lock guarded_reordered
    guarded_refused_applied guarded_lost guarded_duplicated
    stale_writes_accepted token_regressions hangs answers_late orphans
    worker_crashes'

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
    # A script whose checks all went unrun (and none skipped, saying
    # why) proved nothing.
    if [ $((passed + failed + skipped)) = 0 ]; then
        echo "FAIL: ${ZKL_TEST_PREFIX:-}$SUITE (no check ran)"
        failed=1
    fi
    if [ "$skipped" = 0 ]; then
        echo "$passed passed, $failed failed"
    else
        echo "$passed passed, $failed failed, $skipped skipped"
    fi
    [ "$failed" = 0 ]
}
