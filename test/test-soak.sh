#!/usr/bin/env bash
# The safety checker, briefly (ZKL_SOAK_MINUTES, default 1), on the
# suite's own server, which it kills and restarts among its faults; on a
# 3-node ensemble of its own, whose leader and followers it kills in
# turn; once with a checker that lags on purpose, to show its verdict does
# not depend on its own pace; and once more with workers that break every
# recipe's promise on purpose, to show each safety figure catches its
# own. The long runs are `make soak MINUTES=30` and
# `make soak MINUTES=30 NODES=3`.
SUITE=soak
. "$(dirname "$0")/lib.sh"

soak() { # minutes, extra options...
    local m=$1
    shift
    "$top_builddir/test/zkl-soak" --hosts "$H" \
        --server-dir "${ZKL_TEST_ZKDIR:?run through test/suite.sh}" \
        --zkserver "$top_srcdir/test/zkserver.sh" --minutes "$m" "$@" \
        >"$tmp/soak.json" 2>"$tmp/soak.log"
}

# (field, amiss and figures: test/lib.sh.) Each safety figure a
# sabotaged run must make non-zero: a figure that cannot fail proves
# nothing.

# A long run's verdict: shows what the checker found amiss and its JSON
# line (kept as NAME.json for the summary); passes when the checker
# passed and the run was busy enough to mean something.
verdict() { # rc of the run, NAME
    grep -E "$amiss" "$tmp/soak.log" | head -20
    cat "$tmp/soak.json"
    cp "$tmp/soak.json" "$tmp/$2.json"
    [ "$1" = 0 ] && [ "$(field faults)" -ge 50 ] && [ "$(field grants)" -ge 50 ]
}

safe_under_faults() {
    soak "${ZKL_SOAK_MINUTES:-1}"
    verdict $? main
}

safe_under_failover() {
    ZKL_SOAK_NODES=3 bash "$top_srcdir/test/soak.sh" \
        "${ZKL_SOAK_MINUTES:-1}" >"$tmp/soak.json" 2>"$tmp/soak.log"
    verdict $? failover &&
        [ "$(field faults_node_restart)" -ge 2 ] &&
        [ "$(field leader_restarts)" -ge 1 ]
}

slow_checker_no_false_alarm() {
    # The checker reads each worker's socket apart, so a busy checker
    # sees events late and out of turn; it must order them by their
    # numbers, not by when it read them.
    soak 0.25 --checker-lag 150
    local rc=$?
    grep -E "$amiss" "$tmp/soak.log" | head -5
    cat "$tmp/soak.json"
    [ "$rc" = 0 ] && [ "$(field grants)" -ge 20 ]
}

catches_sabotage() {
    # Every sabotage at once (--sabotage 63; soak.c lists them): each
    # recipe's handles enter after a refused acquire, a reentrant inner
    # release gives the node back, guarded writes go unlocked, twice,
    # reordered, told applied or refused against the truth, an acquire
    # is never answered or answered late, a node is kept past the
    # drain, a worker ends badly.
    soak 0.3 --sabotage 63 --fault-ms 400
    local rc=$? f ok=0
    [ "$rc" != 0 ] || { echo "the sabotaged run passed"; ok=1; }
    for f in $figures; do
        [ "$(field "$f")" -gt 0 ] || { echo "$f stayed 0"; ok=1; }
    done
    [ $ok = 0 ] || grep -E "$amiss" "$tmp/soak.log" | head -10
    cat "$tmp/soak.json"
    return $ok
}

check safe_under_faults safe_under_faults
[ -f "$tmp/main.json" ] && sed 's/^/# /' "$tmp/main.json"
check safe_under_failover safe_under_failover
[ -f "$tmp/failover.json" ] && sed 's/^/# /' "$tmp/failover.json"
# Tests of the checker itself say nothing new under ASan, so run-all.sh
# runs them in the plain pass only (ZKL_SOAK_SELFTEST=0).
if [ "${ZKL_SOAK_SELFTEST:-1}" = 1 ]; then
    check slow_checker_no_false_alarm slow_checker_no_false_alarm
    check catches_sabotage catches_sabotage
fi
finish
