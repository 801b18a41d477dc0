#!/usr/bin/env bash
# Tests of the zklock command-line tool against the suite's server
# (ZKL_TEST_HOSTS, ZKL_TEST_ZKDIR; see test/suite.sh).
set -u
SUITE=cli
. "$(dirname "$0")/lib.sh"
ZKCLI=/usr/share/zookeeper/bin/zkCli.sh
base="/zkl-test/cli-$$"

t_exit_status() {
    "$ZKLOCK" run -s "$H" "$base/a" -- true || return 1
    "$ZKLOCK" run -s "$H" "$base/a" -- sh -c 'exit 7'
    [ $? = 7 ] || return 1
    "$ZKLOCK" run -s "$H" "$base/a" -- sh -c 'kill -TERM $$'
    [ $? = 143 ] || return 1
    "$ZKLOCK" run -s "$H" "$base/a" -- /nonexistent/cmd
    [ $? = 127 ] || return 1
    wait_count "$base/a" 0 5
}

t_env() {
    local out
    out=$("$ZKLOCK" run -s "$H" "$base/env" -- sh -c 'echo "$ZKLOCK_PATH $ZKLOCK_TOKEN"')
    case "$out" in "$base/env "[0-9]*) ;; *) echo "got: $out"; return 1 ;; esac
    # Servers from the environment when -s is absent.
    ZKLOCK_SERVERS=$H "$ZKLOCK" run "$base/env" -- true
}

t_exclusion_nonblock_timeout() {
    "$ZKLOCK" run -s "$H" "$base/x" -- sleep 3 &
    local holder=$!
    wait_count "$base/x" 1 5 || return 1
    "$ZKLOCK" run -s "$H" -n "$base/x" -- echo SHOULD-NOT-RUN 2>"$tmp/err"
    [ $? = 1 ] || return 1
    grep -q "locked by another" "$tmp/err" || { cat "$tmp/err"; return 1; }
    local t0=$(date +%s%N)
    "$ZKLOCK" run -s "$H" -t 0.4 "$base/x" -- echo SHOULD-NOT-RUN 2>"$tmp/err"
    [ $? = 1 ] || return 1
    local el=$(( ($(date +%s%N) - t0) / 1000000 ))
    [ "$el" -ge 400 ] || { echo "gave up after $el ms"; return 1; }
    grep -q "not acquired within 0.4 s" "$tmp/err" || { cat "$tmp/err"; return 1; }
    [ "$(count "$base/x")" = 1 ] || return 1 # nothing left behind
    # A waiter with enough time gets it after the holder.
    "$ZKLOCK" run -s "$H" -t 20 "$base/x" -- sh -c 'echo second' > "$tmp/o2"
    [ $? = 0 ] && grep -q second "$tmp/o2" || return 1
    wait "$holder"
}

t_ls_order() {
    [ -z "$("$ZKLOCK" ls -s "$H" "$base/none")" ] || return 1
    "$ZKLOCK" run -s "$H" "$base/q" -- sleep 3 &
    wait_count "$base/q" 1 5 || return 1
    local first
    first=$("$ZKLOCK" ls -s "$H" "$base/q")
    "$ZKLOCK" run -s "$H" "$base/q" -- true &
    wait_count "$base/q" 2 5 || return 1
    "$ZKLOCK" ls -s "$H" "$base/q" > "$tmp/ls"
    [ "$(wc -l < "$tmp/ls")" = 2 ] || return 1
    [ "$(head -1 "$tmp/ls")" = "$first" ] || return 1 # holder first
    grep -Eqx '_c_[0-9a-f-]{36}-lock-[0-9]{10}' "$tmp/ls" || return 1
    wait
    wait_count "$base/q" 0 5
}

t_usage() {
    "$ZKLOCK" >/dev/null 2>&1; [ $? = 2 ] || return 1
    "$ZKLOCK" run -s "$H" "$base/u" >/dev/null 2>&1; [ $? = 2 ] || return 1
    "$ZKLOCK" run -s "$H" relative -- true 2>"$tmp/err"; [ $? = 2 ] || return 1
    grep -q "bad lock path" "$tmp/err" || return 1
    "$ZKLOCK" run -s "$H" -n -t 1 "$base/u" -- true 2>/dev/null; [ $? = 2 ] || return 1
    "$ZKLOCK" run -s "$H" -t abc "$base/u" -- true 2>/dev/null; [ $? = 2 ] || return 1
    "$ZKLOCK" ls -s "$H" "/bad/" 2>/dev/null; [ $? = 2 ] || return 1
    "$ZKLOCK" frobnicate 2>/dev/null; [ $? = 2 ] || return 1
    "$ZKLOCK" --help | grep -q usage
}

t_lost_session_expired() {
    # Frozen past its session timeout, zklock learns the lock is lost:
    # the command gets SIGTERM and zklock exits 3.
    "$ZKLOCK" run -s "$H" --session-timeout 1000 "$base/l" -- \
        sh -c 'trap "echo TERMINATED; exit 143" TERM; sleep 60 & wait' \
        >"$tmp/lo" 2>"$tmp/le" &
    local p=$!
    wait_count "$base/l" 1 5 || return 1
    kill -STOP $p
    wait_count "$base/l" 0 10 || { kill -CONT $p; return 1; }
    kill -CONT $p
    wait $p
    local st=$?
    [ $st = 3 ] || { echo "exit $st"; cat "$tmp/le"; return 1; }
    grep -q TERMINATED "$tmp/lo" || return 1
    grep -q "LOST" "$tmp/le" || { cat "$tmp/le"; return 1; }
}

t_lost_node_deleted() {
    "$ZKLOCK" run -s "$H" "$base/d" -- \
        sh -c 'trap "echo TERMINATED; exit 143" TERM; sleep 60 & wait' \
        >"$tmp/do" 2>"$tmp/de" &
    local p=$!
    wait_count "$base/d" 1 5 || return 1
    "$ZKCLI" -server "$H" delete "$base/d/$("$ZKLOCK" ls -s "$H" "$base/d")" >/dev/null 2>&1
    wait $p
    local st=$?
    [ $st = 3 ] || { echo "exit $st"; cat "$tmp/de"; return 1; }
    grep -q TERMINATED "$tmp/do" || return 1
    grep -q "deleted by someone else" "$tmp/de" || { cat "$tmp/de"; return 1; }
}

t_suspended_keeps_running() {
    # A server restart shorter than the session: zklock warns, the
    # command keeps running, the hold comes back. The command runs until
    # the test has seen "restored", so a slow JVM start cannot end it
    # first; the 30 s session covers the restart on a loaded machine.
    rm -f "$tmp/go"
    "$ZKLOCK" run -s "$H" --session-timeout 30000 "$base/s" -- \
        sh -c 'i=0; while [ ! -e "$1" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; echo FINISHED' \
        sh "$tmp/go" >"$tmp/so" 2>"$tmp/se" &
    local p=$!
    wait_count "$base/s" 1 5 || return 1
    "$top_srcdir/test/zkserver.sh" kill "$ZKL_TEST_ZKDIR" >/dev/null || return 1
    sleep 0.5
    "$top_srcdir/test/zkserver.sh" start "$ZKL_TEST_ZKDIR" >/dev/null || return 1
    local i
    for i in $(seq 250); do
        grep -q "restored" "$tmp/se" && break
        sleep 0.1
    done
    touch "$tmp/go"
    wait $p
    local st=$?
    [ $st = 0 ] || { echo "exit $st"; cat "$tmp/se" "$tmp/so"; return 1; }
    grep -q FINISHED "$tmp/so" || return 1
    grep -q "uncertain" "$tmp/se" || { cat "$tmp/se"; return 1; }
    grep -q "restored" "$tmp/se" || { cat "$tmp/se"; return 1; }
    wait_count "$base/s" 0 5
}

t_signal_while_waiting() {
    "$ZKLOCK" run -s "$H" "$base/w" -- sleep 3 &
    local holder=$!
    wait_count "$base/w" 1 5 || return 1
    "$ZKLOCK" run -s "$H" "$base/w" -- echo SHOULD-NOT-RUN 2>/dev/null &
    local waiter=$!
    wait_count "$base/w" 2 5 || return 1
    kill -INT $waiter
    wait $waiter
    [ $? = 130 ] || return 1
    wait_count "$base/w" 1 5 || return 1 # the waiter's node went with it
    wait $holder
}

t_kill_after() {
    # A command that ignores SIGTERM when the lock is lost gets SIGKILL
    # --kill-after seconds later; the exit status stays 3.
    "$ZKLOCK" run -s "$H" --kill-after 1 "$base/k" -- \
        sh -c 'trap "" TERM; exec sleep 60' 2>"$tmp/ke" &
    local p=$! t0 st
    wait_count "$base/k" 1 5 || return 1
    t0=$(date +%s)
    "$ZKCLI" -server "$H" delete "$base/k/$("$ZKLOCK" ls -s "$H" "$base/k")" >/dev/null 2>&1
    wait $p
    st=$?
    [ $st = 3 ] || { echo "exit $st"; cat "$tmp/ke"; return 1; }
    [ $(( $(date +%s) - t0 )) -lt 8 ] || { echo "took too long"; return 1; }
    grep -q "sending SIGKILL" "$tmp/ke" || { cat "$tmp/ke"; return 1; }
}

t_rw_and_ls_long() {
    local p="$base/rw"
    "$ZKLOCK" run -s "$H" -w --owner "host-a:42" "$p" -- sleep 3 &
    wait_count "$p" 1 5 || return 1
    "$ZKLOCK" run -s "$H" -r "$p" -- sh -c 'date +%s' > "$tmp/rd" &
    wait_count "$p" 2 5 || return 1
    "$ZKLOCK" ls -s "$H" -l "$p" > "$tmp/ll" || return 1
    cat "$tmp/ll"
    sed -n 1p "$tmp/ll" | grep -Eq '^write \* _c_[0-9a-f-]{36}-__WRIT__[0-9]{10} host-a:42$' || return 1
    sed -n 2p "$tmp/ll" | grep -Eq '^read  - _c_[0-9a-f-]{36}-__READ__[0-9]{10} 127\.0\.0\.1$' || return 1
    "$ZKLOCK" run -s "$H" -r -n "$p" -- true 2>/dev/null
    [ $? = 1 ] || { echo "a reader got in beside a writer"; return 1; }
    wait
    wait_count "$p" 0 5
}

t_bad_combinations() {
    local p="$base/bad"
    "$ZKLOCK" run -s "$H" -r -w "$p" -- true 2>"$tmp/err"; [ $? = 2 ] || return 1
    grep -q "exclude each other" "$tmp/err" || return 1
    "$ZKLOCK" run -s "$H" --kill-after x "$p" -- true 2>/dev/null; [ $? = 2 ] || return 1
    "$ZKLOCK" revoke -s "$H" relative 2>/dev/null; [ $? = 2 ] || return 1
    "$ZKLOCK" revoke -s "$H" "$p" a/b 2>/dev/null; [ $? = 2 ] || return 1
    # A read/write lock on a mutex's path: refused, and nothing left.
    "$ZKLOCK" run -s "$H" "$p" -- sleep 2 &
    wait_count "$p" 1 5 || return 1
    "$ZKLOCK" run -s "$H" -w "$p" -- true 2>"$tmp/err"; [ $? = 2 ] || return 1
    grep -q "another kind of lock" "$tmp/err" || { cat "$tmp/err"; return 1; }
    [ "$(count "$p")" = 1 ] || return 1
    wait
    wait_count "$p" 0 5
}

# -L N: at most N commands run at once; ls shows the leases, then the
# acquire queued on the semaphore's mutex.
t_semaphore() {
    local p="$base/sem" i
    rm -rf "$tmp/in" "$tmp/most"; mkdir "$tmp/in"
    for i in 1 2 3 4 5; do
        "$ZKLOCK" run -s "$H" -L 2 --owner "w$i" "$p" -- sh -c '
            touch "$1/in/$$"; ls "$1/in" | wc -l >> "$1/most"; sleep 0.5
            rm "$1/in/$$"' sh "$tmp" &
    done
    wait_count "$p/leases" 3 5 || return 1
    "$ZKLOCK" ls -s "$H" -l "$p" > "$tmp/ll" || return 1
    cat "$tmp/ll"
    [ "$(grep -c '^lease \* _c_[0-9a-f-]\{36\}-lease-[0-9]\{10\} w[1-5]$' "$tmp/ll")" = 3 ] || return 1
    grep -Eq '^mutex \* _c_[0-9a-f-]{36}-lock-[0-9]{10} 127\.0\.0\.1$' "$tmp/ll" || return 1
    wait
    [ "$(wc -l < "$tmp/most")" = 5 ] || return 1
    [ "$(sort -n "$tmp/most" | tail -1)" -le 2 ] || { echo "more than 2 inside"; return 1; }
    wait_count "$p/leases" 0 5 || return 1
    wait_count "$p/locks" 0 5 || return 1
    # Bad combinations: a usage error, nothing created.
    "$ZKLOCK" run -s "$H" -L 0 "$base/sem0" -- true 2>"$tmp/err"; [ $? = 2 ] || return 1
    grep -q "bad -L value" "$tmp/err" || return 1
    "$ZKLOCK" run -s "$H" --leases 10001 "$base/sem0" -- true 2>/dev/null; [ $? = 2 ] || return 1
    "$ZKLOCK" run -s "$H" -L x "$base/sem0" -- true 2>/dev/null; [ $? = 2 ] || return 1
    "$ZKLOCK" run -s "$H" -L 2 -w "$base/sem0" -- true 2>/dev/null; [ $? = 2 ] || return 1
    [ "$(count "$base/sem0")" = 0 ] || return 1
    # A semaphore's path used as a mutex, and a mutex's as a semaphore.
    "$ZKLOCK" run -s "$H" -L 2 "$p" -- true || return 1
    "$ZKLOCK" run -s "$H" "$p" -- true 2>"$tmp/err"; [ $? = 2 ] || return 1
    grep -q "another kind of lock" "$tmp/err" || return 1
    "$ZKLOCK" run -s "$H" "$base/mtx" -- sleep 2 &
    wait_count "$base/mtx" 1 5 || return 1
    "$ZKLOCK" run -s "$H" -L 3 "$base/mtx" -- true 2>"$tmp/err"; [ $? = 2 ] || return 1
    grep -q "another kind of lock" "$tmp/err" || return 1
    [ "$(count "$base/mtx")" = 1 ] || return 1
    wait
    wait_count "$base/mtx" 0 5
}

check exit_status t_exit_status
check environment t_env
check exclusion_nonblock_timeout t_exclusion_nonblock_timeout
check ls_order t_ls_order
check usage_errors t_usage
check lost_session_expired t_lost_session_expired
check lost_node_deleted t_lost_node_deleted
check suspended_keeps_running t_suspended_keeps_running
check signal_while_waiting t_signal_while_waiting
check kill_after t_kill_after
check rw_and_ls_long t_rw_and_ls_long
check bad_combinations t_bad_combinations
check semaphore t_semaphore
finish
