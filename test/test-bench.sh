#!/usr/bin/env bash
# Tests of zklock-bench against the suite's server (ZKL_TEST_HOSTS): its
# usage (--help on stdout with status 0, listing every scenario, each
# also in zklock-bench(1); a usage error in one line with status 2), and
# that no run leaves a node on the server: every scenario
# at its smallest, a run past --limit, one stopped by SIGTERM, and one
# killed by SIGKILL, whose tree "zklock-bench clean" then deletes. The
# server's root is listed with ZooKeeper's own zkCli.sh, not with
# anything of the benchmark's.
set -u
SUITE=bench
. "$(dirname "$0")/lib.sh"
BENCH=$top_builddir/zklock-bench
ZKCLI=/usr/share/zookeeper/bin/zkCli.sh

# The root's children, one per line (zkCli.sh prints "[a, b]" last).
root_children() {
    local i out
    # zkCli.sh (a JVM) can fail to list under load: the root always
    # holds /zookeeper, so an answer without it is no answer; try again.
    for i in 1 2 3 4 5; do
        out=$("$ZKCLI" -server "$H" ls / 2>/dev/null | tail -n 1 |
            sed -n 's/^\[\(.*\)\]$/\1/p' | tr -d ' ' | tr ',' '\n' | sort)
        if printf '%s\n' "$out" | grep -qx zookeeper; then
            printf '%s\n' "$out"
            return 0
        fi
        sleep 1
    done
}

# Nothing at the root now that was not there in $tmp/root.before, and
# no benchmark tree (the suite's other tests may have left containers
# there, which the server may delete meanwhile: fewer is fine).
root_unchanged() {
    local new
    root_children >"$tmp/root.after"
    [ -s "$tmp/root.after" ] || { echo "could not list the root"; return 1; }
    new=$(comm -13 "$tmp/root.before" "$tmp/root.after")
    [ -z "$new" ] || { echo "left at the root: $new"; return 1; }
    ! grep -q '^zklock-bench' "$tmp/root.after" ||
        { echo "a benchmark tree is left"; return 1; }
}

# bench ARGS...: one run; its JSON line in $tmp/bench.json, its stderr in
# $tmp/bench.err.
bench() {
    "$BENCH" "$@" -s "$H" >"$tmp/bench.json" 2>"$tmp/bench.err"
}

t_help() {
    local rc
    "$BENCH" --help >"$tmp/b.out" 2>"$tmp/b.err"
    rc=$?
    [ "$rc" = 0 ] || { echo "--help exited $rc"; return 1; }
    [ ! -s "$tmp/b.err" ] || { echo "--help wrote on stderr:"; cat "$tmp/b.err"; return 1; }
    grep -q '^usage: zklock-bench SCENARIO' "$tmp/b.out" || return 1
    # Every scenario it runs is in the usage and has its entry in the
    # man page's SCENARIOS.
    for s in raw create-latency raw-batch serial throughput handoff waiters \
        burst semaphore readmostly multilock clean; do
        grep -qE "^  $s " "$tmp/b.out" || { echo "usage lacks $s"; return 1; }
        sed -n '/^\.SH SCENARIOS/,/^\.SH OPTIONS/p' "$top_srcdir/man/zklock-bench.1" |
            grep -qE "^\.B ${s//-/\\\\-}( |$)" ||
            { echo "zklock-bench.1's SCENARIOS lacks $s"; return 1; }
    done
    "$BENCH" serial --help | grep -q '^usage: zklock-bench' || return 1
    "$BENCH" --version | grep -qx 'zklock-bench [0-9.]*'
}

t_usage_errors() {
    local args rc
    for args in "" "nosuch" "serial --nosuch" "serial --n" "serial extra"; do
        # shellcheck disable=SC2086
        "$BENCH" $args >"$tmp/b.out" 2>"$tmp/b.err"
        rc=$?
        [ "$rc" = 2 ] || { echo "'$args' exited $rc"; return 1; }
        [ ! -s "$tmp/b.out" ] || { echo "'$args' wrote on stdout"; return 1; }
        [ "$(wc -l <"$tmp/b.err")" = 1 ] ||
            { echo "'$args' wrote not one line:"; cat "$tmp/b.err"; return 1; }
    done
}

# Each scenario at its smallest: it succeeds, prints its JSON, and takes
# its nodes with it (raw's directories are persistent nodes, the lock
# paths containers the server would delete only a minute later).
t_scenarios_leave_nothing() {
    local args ok=0
    root_children >"$tmp/root.before"
    [ -s "$tmp/root.before" ] || { echo "could not list the root"; return 1; }
    while read -r args; do
        # shellcheck disable=SC2086
        if ! bench $args || ! grep -q '^{"scenario":' "$tmp/bench.json" ||
            grep -q '"error"' "$tmp/bench.json"; then
            echo "$args failed:"
            cat "$tmp/bench.json"
            tail -5 "$tmp/bench.err"
            ok=1
        fi
        grep -q "^deleted the run's [0-9]* nodes" "$tmp/bench.err" ||
            { echo "$args: no clean-up reported"; ok=1; }
    done <<'EOF'
raw --pairs 200 --inflight 20 --list
create-latency --n 20
raw-batch --creates 3 --rounds 2 --list
serial --n 20
throughput --locks 10 --inflight 10 --seconds 0.3
throughput --locks 10 --inflight 10 --seconds 0.3 --procs 2
handoff --waiters 20 --sessions 2
handoff --procs 3
waiters --count 50
burst --count 100 --over 10 --held 5
semaphore --waiters 20 --leases 2
readmostly --readers 10 --seconds 0.3
multilock --locks 3 --rounds 3
EOF
    root_unchanged || ok=1
    return $ok
}

# Past --limit: the deadline's JSON, status 1, and the tree deleted by
# the "clean" the deadline execs.
t_deadline_leaves_nothing() {
    local rc
    root_children >"$tmp/root.before"
    bench serial --n 100000000 --limit 2
    rc=$?
    [ $rc = 1 ] || { echo "exited $rc, not 1"; return 1; }
    grep -q '"error":"deadline' "$tmp/bench.json" || { cat "$tmp/bench.json"; return 1; }
    root_unchanged
}

# waits until the run in the background has started its work (its
# progress line) and so has nodes on the server.
started() {
    local i
    for i in $(seq 300); do
        grep -q "$1" "$tmp/bench.err" && return 0
        sleep 0.1
    done
    echo "never started:"
    cat "$tmp/bench.err"
    return 1
}

# SIGTERM (what bench/compare's timeout sends) in the middle of a fleet:
# the workers are killed, the tree deleted, status 1 with the reason.
t_sigterm_leaves_nothing() {
    local pid rc
    root_children >"$tmp/root.before"
    # Not through bench(), whose subshell would take the signal.
    "$BENCH" throughput --locks 20 --inflight 20 --seconds 60 --procs 2 \
        -s "$H" >"$tmp/bench.json" 2>"$tmp/bench.err" &
    pid=$!
    started "in flight over" || { kill -KILL $pid; return 1; }
    kill -TERM $pid
    wait $pid
    rc=$?
    [ $rc = 1 ] || { echo "exited $rc, not 1"; return 1; }
    grep -q '"error":"interrupted' "$tmp/bench.json" || { cat "$tmp/bench.json"; return 1; }
    # No worker outlives the run.
    [ -z "$(pgrep -f "zklock-bench throughput --locks 20 --inflight 20 --seconds 60")" ] ||
        { echo "workers left"; return 1; }
    root_unchanged
}

# SIGKILL leaves the tree (nothing can run then); clean deletes it.
t_clean_after_sigkill() {
    local pid
    root_children >"$tmp/root.before"
    "$BENCH" serial --n 100000000 -s "$H" >"$tmp/bench.json" 2>"$tmp/bench.err" &
    pid=$!
    started "acquire+release cycles" || { kill -KILL $pid; return 1; }
    kill -KILL $pid
    wait $pid
    root_children | grep -qx zklock-bench || { echo "no tree left to clean"; return 1; }
    "$BENCH" clean -s "$H" >"$tmp/b.out" || return 1
    grep -q '"scenario":"clean"' "$tmp/b.out" || return 1
    root_unchanged
}

if [ ! -x "$BENCH" ]; then
    skip all "no $BENCH (built with libevent only)"
else
    check help t_help
    check usage_errors t_usage_errors
    check scenarios_leave_nothing t_scenarios_leave_nothing
    check deadline_leaves_nothing t_deadline_leaves_nothing
    check sigterm_leaves_nothing t_sigterm_leaves_nothing
    check clean_after_sigkill t_clean_after_sigkill
fi
finish
