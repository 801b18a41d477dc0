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
    wait_ok "$holder"
}

t_ls_order() {
    [ -z "$("$ZKLOCK" ls -s "$H" "$base/none")" ] || return 1
    "$ZKLOCK" run -s "$H" "$base/q" -- sleep 3 &
    local holder=$!
    wait_count "$base/q" 1 5 || return 1
    local first
    first=$("$ZKLOCK" ls -s "$H" "$base/q")
    "$ZKLOCK" run -s "$H" "$base/q" -- true &
    local waiter=$!
    wait_count "$base/q" 2 5 || return 1
    "$ZKLOCK" ls -s "$H" "$base/q" > "$tmp/ls"
    [ "$(wc -l < "$tmp/ls")" = 2 ] || return 1
    [ "$(head -1 "$tmp/ls")" = "$first" ] || return 1 # holder first
    grep -Eqx '_c_[0-9a-f-]{36}-lock-[0-9]{10}' "$tmp/ls" || return 1
    wait_ok $holder $waiter || return 1
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
    "$ZKLOCK" run -s "$H" "$base/w" -- echo SHOULD-NOT-RUN >"$tmp/wo" 2>/dev/null &
    local waiter=$!
    wait_count "$base/w" 2 5 || return 1
    kill -INT $waiter
    wait $waiter
    [ $? = 130 ] || return 1
    ! grep -q SHOULD-NOT-RUN "$tmp/wo" || { echo "the waiter's command ran"; return 1; }
    wait_count "$base/w" 1 5 || return 1 # the waiter's node went with it
    wait_ok $holder
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
    rm -f "$tmp/wr" "$tmp/rd"
    "$ZKLOCK" run -s "$H" -w --owner "host-a:42" "$p" -- sh -c 'sleep 3; date +%s%3N' > "$tmp/wr" &
    local writer=$!
    wait_count "$p" 1 5 || return 1
    "$ZKLOCK" run -s "$H" -r "$p" -- sh -c 'date +%s%3N' > "$tmp/rd" &
    local reader=$!
    wait_count "$p" 2 5 || return 1
    "$ZKLOCK" ls -s "$H" -l "$p" > "$tmp/ll" || return 1
    cat "$tmp/ll"
    sed -n 1p "$tmp/ll" | grep -Eq '^write \* _c_[0-9a-f-]{36}-__WRIT__[0-9]{10} host-a:42$' || return 1
    sed -n 2p "$tmp/ll" | grep -Eq '^read  - _c_[0-9a-f-]{36}-__READ__[0-9]{10} 127\.0\.0\.1$' || return 1
    "$ZKLOCK" run -s "$H" -r -n "$p" -- true 2>/dev/null
    [ $? = 1 ] || { echo "a reader got in beside a writer"; return 1; }
    wait_ok $writer $reader || return 1
    # The queued reader ran, and only once the writer's command was done.
    local wr rd
    wr=$(cat "$tmp/wr") rd=$(cat "$tmp/rd")
    echo "writer done at $wr, reader ran at $rd"
    [ -n "$wr" ] && [ -n "$rd" ] && [ "$rd" -ge "$wr" ] || return 1
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
    local holder=$!
    wait_count "$p" 1 5 || return 1
    "$ZKLOCK" run -s "$H" -w "$p" -- true 2>"$tmp/err"; [ $? = 2 ] || return 1
    grep -q "another kind of lock" "$tmp/err" || { cat "$tmp/err"; return 1; }
    [ "$(count "$p")" = 1 ] || return 1
    wait_ok $holder || return 1
    wait_count "$p" 0 5
}

# -L N: at most N commands run at once; ls shows the leases, then the
# acquire queued on the semaphore's mutex.
t_semaphore() {
    local p="$base/sem" i pids=
    rm -rf "$tmp/in" "$tmp/most"; mkdir "$tmp/in"
    for i in 1 2 3 4 5; do
        "$ZKLOCK" run -s "$H" -L 2 --owner "w$i" "$p" -- sh -c '
            touch "$1/in/$$"; ls "$1/in" | wc -l >> "$1/most"; sleep 0.5
            rm "$1/in/$$"' sh "$tmp" &
        pids="$pids $!"
    done
    wait_count "$p/leases" 3 5 || return 1
    "$ZKLOCK" ls -s "$H" -l "$p" > "$tmp/ll" || return 1
    cat "$tmp/ll"
    [ "$(grep -c '^lease \* _c_[0-9a-f-]\{36\}-lease-[0-9]\{10\} w[1-5]$' "$tmp/ll")" = 3 ] || return 1
    grep -Eq '^mutex \* _c_[0-9a-f-]{36}-lock-[0-9]{10} 127\.0\.0\.1$' "$tmp/ll" || return 1
    # shellcheck disable=SC2086
    wait_ok $pids || return 1
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
    local holder=$!
    wait_count "$base/mtx" 1 5 || return 1
    "$ZKLOCK" run -s "$H" -L 3 "$base/mtx" -- true 2>"$tmp/err"; [ $? = 2 ] || return 1
    grep -q "another kind of lock" "$tmp/err" || return 1
    [ "$(count "$base/mtx")" = 1 ] || return 1
    wait_ok $holder || return 1
    wait_count "$base/mtx" 0 5
}

# A limit other than the one the semaphore's holders use is refused
# (exit 7) while they hold, with both limits named; once they are gone
# the new limit is taken.
t_semaphore_limit_mismatch() {
    local p="$base/semlimit" holder rc
    rm -f "$tmp/go"
    "$ZKLOCK" run -s "$H" -L 2 "$p" -- sh -c "$until_go" sh "$tmp" &
    holder=$!
    wait_count "$p/leases" 1 5 || return 1
    "$ZKLOCK" run -s "$H" -L 3 "$p" -- true 2>"$tmp/err"
    rc=$?
    cat "$tmp/err"
    [ $rc = 7 ] || { echo "exit $rc, wanted 7"; return 1; }
    grep -q -- "-L 2, not -L 3" "$tmp/err" || return 1
    "$ZKLOCK" run -s "$H" -n -L 3 "$p" -- true 2>/dev/null; [ $? = 7 ] || return 1
    "$ZKLOCK" run -s "$H" -L 2 "$p" -- true || return 1
    [ "$(count "$p/leases")" = 1 ] || return 1
    touch "$tmp/go"
    wait_ok $holder || return 1
    wait_count "$p/leases" 0 5 || return 1
    "$ZKLOCK" run -s "$H" -L 3 "$p" -- true || return 1
}

wait_file() { # file seconds
    local i
    for i in $(seq $(( $2 * 10 ))); do
        [ -e "$1" ] && return 0
        sleep 0.1
    done
    echo "no $1"
    return 1
}
field() { grep "^$2" "$1" | head -1 | cut -d' ' -f"$3"; }

# Commands that run until $1/go, or the file $1, exists (at most 30 s).
until_go='i=0; while [ ! -e "$1/go" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done'
until_file='i=0; while [ ! -e "$1" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done'

# Several paths are one set: while COMMAND runs, each path has one node,
# ours, holding, and a try-lock on either fails; COMMAND sees every path
# and token, one line each, in the set's order (paths sorted); a path
# named twice is one lock.
t_multi_holds_all() {
    local a="$base/ma" b="$base/mb" x
    rm -f "$tmp/go" "$tmp/mp" "$tmp/mt"
    "$ZKLOCK" run -s "$H" "$b" "$a" -- sh -c '
        printf "%s\n" "$ZKLOCK_TOKEN" > "$1/mt"
        printf "%s\n" "$ZKLOCK_PATH" > "$1/mp.new"; mv "$1/mp.new" "$1/mp"
        '"$until_go" sh "$tmp" &
    local p=$!
    wait_file "$tmp/mp" 10 || return 1
    for x in "$a" "$b"; do
        "$ZKLOCK" ls -s "$H" -l "$x" > "$tmp/ll" || return 1
        cat "$tmp/ll"
        [ "$(wc -l < "$tmp/ll")" = 1 ] || return 1
        grep -Eq '^mutex \* _c_[0-9a-f-]{36}-lock-[0-9]{10} 127\.0\.0\.1$' "$tmp/ll" || return 1
        "$ZKLOCK" run -s "$H" -t 0 "$x" -- echo SHOULD-NOT-RUN 2>"$tmp/err"
        [ $? = 1 ] || { echo "try-lock on $x got in beside the set"; return 1; }
        grep -q "locked by another" "$tmp/err" || { cat "$tmp/err"; return 1; }
    done
    touch "$tmp/go"
    wait $p || return 1
    printf '%s\n%s\n' "$a" "$b" | cmp -s - "$tmp/mp" || { cat "$tmp/mp"; return 1; }
    [ "$(grep -Ec '^[0-9]+$' "$tmp/mt")" = 2 ] || { cat "$tmp/mt"; return 1; }
    wait_count "$a" 0 5 || return 1
    wait_count "$b" 0 5 || return 1
    [ "$("$ZKLOCK" run -s "$H" "$a" "$a" -- sh -c 'echo "$ZKLOCK_PATH"')" = "$a" ] || return 1
    wait_count "$a" 0 5
}

# -r / -w apply to every path of the set: two reading sets hold
# together, a writer on any member cannot get in, a writing set then
# holds each path alone.
t_multi_read_write() {
    local a="$base/mra" b="$base/mrb" c="$base/mrc"
    rm -f "$tmp/go" "$tmp/r1"
    "$ZKLOCK" run -s "$H" -r "$a" "$b" -- sh -c 'touch "$1/r1"; '"$until_go" sh "$tmp" &
    local p=$!
    wait_file "$tmp/r1" 10 || return 1
    "$ZKLOCK" ls -s "$H" -l "$a" | grep -Eq '^read  \* ' || return 1
    "$ZKLOCK" ls -s "$H" -l "$b" | grep -Eq '^read  \* ' || return 1
    "$ZKLOCK" run -s "$H" -r -t 0 "$b" "$a" -- true || { echo "readers did not share"; return 1; }
    "$ZKLOCK" run -s "$H" -w -t 0 "$b" -- true 2>/dev/null
    [ $? = 1 ] || { echo "a writer got in beside the reading set"; return 1; }
    "$ZKLOCK" run -s "$H" -w -t 0 "$c" "$a" -- true 2>/dev/null
    [ $? = 1 ] || { echo "a writing set got in beside the reading set"; return 1; }
    [ "$(count "$c")" = 0 ] || return 1
    touch "$tmp/go"
    wait $p || return 1
    rm -f "$tmp/go" "$tmp/w1"
    "$ZKLOCK" run -s "$H" -w "$a" "$b" -- sh -c 'touch "$1/w1"; '"$until_go" sh "$tmp" &
    p=$!
    wait_file "$tmp/w1" 10 || return 1
    "$ZKLOCK" ls -s "$H" -l "$b" | grep -Eq '^write \* ' || return 1
    "$ZKLOCK" run -s "$H" -r -t 0 "$a" -- true 2>/dev/null
    [ $? = 1 ] || { echo "a reader got in beside the writing set"; return 1; }
    touch "$tmp/go"
    wait $p || return 1
    wait_count "$a" 0 5 && wait_count "$b" 0 5
}

# Two sets naming the same paths in crossed orders (A: x y, B: y x)
# both finish and never hold at once. First staged so that taking the
# paths one by one in the order given deadlocks: x and y are held by
# two others, x is let go first (A would take it and wait for y), then
# y (B would take it and wait for x). Then rounds of both at full speed.
t_multi_crossed_no_deadlock() {
    local x="$base/cx" y="$base/cy" i
    local body='touch "$1/in/$$"; ls "$1/in" | wc -l >> "$1/most"; sleep 0.2; rm "$1/in/$$"'
    rm -rf "$tmp/in" "$tmp/most" "$tmp/fail" "$tmp/gx" "$tmp/gy"; mkdir "$tmp/in"
    "$ZKLOCK" run -s "$H" "$x" -- sh -c "$until_file" sh "$tmp/gx" &
    local hx=$!
    "$ZKLOCK" run -s "$H" "$y" -- sh -c "$until_file" sh "$tmp/gy" &
    local hy=$!
    wait_count "$x" 1 5 && wait_count "$y" 1 5 || { touch "$tmp/gx" "$tmp/gy"; return 1; }
    "$ZKLOCK" run -s "$H" -t 15 "$x" "$y" -- sh -c "$body" sh "$tmp" || echo "staged A failed" >> "$tmp/fail" &
    local sa=$!
    "$ZKLOCK" run -s "$H" -t 15 "$y" "$x" -- sh -c "$body" sh "$tmp" || echo "staged B failed" >> "$tmp/fail" &
    local sb=$!
    sleep 1
    touch "$tmp/gx"
    sleep 1
    touch "$tmp/gy"
    wait_ok $hx $hy $sa $sb || return 1
    ( for i in 1 2 3 4 5 6; do
          "$ZKLOCK" run -s "$H" -t 15 "$x" "$y" -- sh -c "$body" sh "$tmp" || echo "A$i failed" >> "$tmp/fail"
      done ) &
    local la=$!
    ( for i in 1 2 3 4 5 6; do
          "$ZKLOCK" run -s "$H" -t 15 "$y" "$x" -- sh -c "$body" sh "$tmp" || echo "B$i failed" >> "$tmp/fail"
      done ) &
    wait_ok $la $! || return 1
    [ ! -e "$tmp/fail" ] || { cat "$tmp/fail"; return 1; }
    [ "$(wc -l < "$tmp/most")" = 14 ] || { echo "$(wc -l < "$tmp/most") runs"; return 1; }
    [ "$(sort -n "$tmp/most" | tail -1)" = 1 ] || { echo "two sets held at once"; return 1; }
    wait_count "$x" 0 5 && wait_count "$y" 0 5
}

# -t is one deadline for the whole set, not one per path: a is let go
# 0.8 s in, b 2.6 s in; a set with -t 2 must give up at 2 s (taking the
# paths one by one with 2 s each would get both by 2.6 s). It exits 1,
# COMMAND does not run, and no path keeps a node of it. -n the same at
# once.
t_multi_deadline() {
    local a="$base/da" b="$base/db" c="$base/dc" t0 el st
    rm -f "$tmp/ga" "$tmp/gb"
    "$ZKLOCK" run -s "$H" "$a" -- sh -c "$until_file" sh "$tmp/ga" &
    local ha=$!
    "$ZKLOCK" run -s "$H" "$b" -- sh -c "$until_file" sh "$tmp/gb" &
    local hb=$!
    wait_count "$a" 1 5 && wait_count "$b" 1 5 || { touch "$tmp/ga" "$tmp/gb"; return 1; }
    "$ZKLOCK" run -s "$H" -n "$c" "$b" -- echo SHOULD-NOT-RUN >"$tmp/o" 2>"$tmp/err"
    st=$?
    [ $st = 1 ] || { echo "-n: exit $st"; touch "$tmp/ga" "$tmp/gb"; return 1; }
    grep -q "locked by another" "$tmp/err" || { cat "$tmp/err"; touch "$tmp/ga" "$tmp/gb"; return 1; }
    t0=$(date +%s%N)
    "$ZKLOCK" run -s "$H" -t 2 "$a" "$b" "$c" -- echo SHOULD-NOT-RUN >"$tmp/o" 2>"$tmp/err" &
    local p=$!
    sleep 0.8; touch "$tmp/ga"
    sleep 1.8; touch "$tmp/gb"
    wait $p
    st=$?
    el=$(( ($(date +%s%N) - t0) / 1000000 ))
    wait_ok $ha $hb || return 1
    cat "$tmp/err"
    [ $st = 1 ] || { echo "exit $st after $el ms"; return 1; }
    [ "$el" -ge 2000 ] || { echo "gave up after $el ms"; return 1; }
    grep -q "not acquired within 2 s" "$tmp/err" || return 1
    ! grep -q SHOULD-NOT-RUN "$tmp/o" || return 1
    wait_count "$a" 0 5 && wait_count "$b" 0 5 && wait_count "$c" 0 5
}

# A member's lock lost (its node deleted): COMMAND gets SIGTERM, zklock
# exits 3, and the other member is let go too.
t_multi_lost() {
    local a="$base/la" b="$base/lb" st
    rm -f "$tmp/up"
    "$ZKLOCK" run -s "$H" "$a" "$b" -- \
        sh -c 'trap "echo TERMINATED; exit 143" TERM; touch "$1/up"; sleep 60 & wait' sh "$tmp" \
        >"$tmp/mo" 2>"$tmp/me" &
    local p=$!
    wait_file "$tmp/up" 10 || return 1
    "$ZKCLI" -server "$H" delete "$b/$("$ZKLOCK" ls -s "$H" "$b")" >/dev/null 2>&1
    wait $p
    st=$?
    [ $st = 3 ] || { echo "exit $st"; cat "$tmp/me"; return 1; }
    grep -q TERMINATED "$tmp/mo" || return 1
    grep -q "LOST.*deleted by someone else" "$tmp/me" || { cat "$tmp/me"; return 1; }
    wait_count "$a" 0 5 && wait_count "$b" 0 5
}

# Bad combinations with several paths or elect: a usage error (exit 2)
# with a message, and nothing on the server. A path named twice is one.
t_multi_bad_combinations() {
    local a="$base/ba" b="$base/bb" l="$base/blatch" s="$base/bsem"
    "$ZKLOCK" run -s "$H" -L 2 "$a" "$b" -- true 2>"$tmp/err"; [ $? = 2 ] || return 1
    grep -q -- "-L takes one lock path" "$tmp/err" || { cat "$tmp/err"; return 1; }
    "$ZKLOCK" run -s "$H" --revocable "$a" "$b" -- true 2>"$tmp/err"; [ $? = 2 ] || return 1
    grep -q -- "--revocable takes one lock path" "$tmp/err" || { cat "$tmp/err"; return 1; }
    "$ZKLOCK" run -s "$H" --owner me "$a" "$b" -- true 2>"$tmp/err"; [ $? = 2 ] || return 1
    grep -q -- "--owner takes one lock path" "$tmp/err" || { cat "$tmp/err"; return 1; }
    "$ZKLOCK" run -s "$H" "$a" "$b/" -- true 2>"$tmp/err"; [ $? = 2 ] || return 1
    grep -q "bad lock path" "$tmp/err" || { cat "$tmp/err"; return 1; }
    "$ZKLOCK" run -s "$H" "$a" "$b" -- 2>/dev/null; [ $? = 2 ] || return 1
    "$ZKLOCK" elect -s "$H" "$a" "$b" -- true 2>"$tmp/err"; [ $? = 2 ] || return 1
    grep -q "elect takes one PATH" "$tmp/err" || { cat "$tmp/err"; return 1; }
    "$ZKLOCK" elect -s "$H" -r "$a" -- true 2>/dev/null; [ $? = 2 ] || return 1
    "$ZKLOCK" elect -s "$H" -L 2 "$a" -- true 2>/dev/null; [ $? = 2 ] || return 1
    "$ZKLOCK" elect -s "$H" -n -t 1 "$a" -- true 2>/dev/null; [ $? = 2 ] || return 1
    "$ZKLOCK" elect -s "$H" "$a" 2>/dev/null; [ $? = 2 ] || return 1
    [ "$(count "$a")" = 0 ] && [ "$(count "$b")" = 0 ] || return 1
    # Named twice: one lock, so -L and --revocable are fine.
    "$ZKLOCK" run -s "$H" -L 2 "$s" "$s" -- true || return 1
    "$ZKLOCK" run -s "$H" --revocable "$a" "$a" -- true || return 1
    # A set with a member on a semaphore's path or an election's path, a
    # semaphore or a lock on an election's path, an election on a
    # mutex's path: refused, and nothing left.
    "$ZKLOCK" run -s "$H" "$a" "$s" -- true 2>"$tmp/err"; [ $? = 2 ] || { cat "$tmp/err"; return 1; }
    grep -q "another kind of lock" "$tmp/err" || { cat "$tmp/err"; return 1; }
    rm -f "$tmp/go"
    "$ZKLOCK" elect -s "$H" "$l" -- sh -c "$until_go" sh "$tmp" &
    local leader=$!
    wait_count "$l" 1 5 || return 1
    "$ZKLOCK" run -s "$H" "$a" "$l" -- true 2>"$tmp/err"; [ $? = 2 ] || { cat "$tmp/err"; return 1; }
    grep -q "another kind of lock" "$tmp/err" || { cat "$tmp/err"; return 1; }
    "$ZKLOCK" run -s "$H" -w "$l" -- true 2>/dev/null; [ $? = 2 ] || return 1
    "$ZKLOCK" run -s "$H" -L 2 "$l" -- true 2>/dev/null; [ $? = 2 ] || return 1
    [ "$(count "$a")" = 0 ] && [ "$(count "$l")" = 1 ] || return 1
    touch "$tmp/go"
    wait_ok $leader || return 1
    "$ZKLOCK" run -s "$H" "$b" -- sh -c 'sleep 2' &
    local holder=$!
    wait_count "$b" 1 5 || return 1
    "$ZKLOCK" elect -s "$H" "$b" -- true 2>"$tmp/err"; [ $? = 2 ] || { cat "$tmp/err"; return 1; }
    grep -q "another kind of lock" "$tmp/err" || { cat "$tmp/err"; return 1; }
    [ "$(count "$b")" = 1 ] || return 1
    wait_ok $holder || return 1
    wait_count "$a" 0 5 && wait_count "$b" 0 5 && wait_count "$l" 0 5 &&
        wait_count "$s/leases" 0 5 && wait_count "$s/locks" 0 5
}

# Two electors: only the leader runs COMMAND; the second runs it once
# the first's COMMAND has exited (and the first has left). ls -l shows
# the latch nodes with their ids (default HOSTNAME:PID); an elector that
# may not wait (-n) or gives up (-t) exits 1 and leaves nothing. The
# exit status is COMMAND's.
t_elect() {
    local p="$base/el" e2
    local body='echo "S $(date +%s%3N)"; touch "$1/in/$$"; ls "$1/in" | wc -l >> "$1/most"; sleep 1.5; rm "$1/in/$$"; echo "E $(date +%s%3N)"'
    rm -rf "$tmp/in" "$tmp/most"; mkdir "$tmp/in"
    "$ZKLOCK" elect -s "$H" --id e1 "$p" -- sh -c "$body" sh "$tmp" > "$tmp/e1" &
    local e1=$!
    wait_file "$tmp/most" 10 || return 1
    "$ZKLOCK" elect -s "$H" "$p" -- sh -c "$body" sh "$tmp" > "$tmp/e2" &
    e2=$!
    wait_count "$p" 2 5 || return 1
    "$ZKLOCK" ls -s "$H" -l "$p" > "$tmp/ll" || return 1
    cat "$tmp/ll"
    sed -n 1p "$tmp/ll" | grep -Eq '^latch \* _c_[0-9a-f-]{36}-latch-[0-9]{10} e1$' || return 1
    sed -n 2p "$tmp/ll" | grep -Eq "^latch - _c_[0-9a-f-]{36}-latch-[0-9]{10} $(hostname):$e2\$" || return 1
    "$ZKLOCK" elect -s "$H" -n "$p" -- echo SHOULD-NOT-RUN 2>"$tmp/err"
    [ $? = 1 ] || return 1
    grep -q "has another leader" "$tmp/err" || { cat "$tmp/err"; return 1; }
    "$ZKLOCK" elect -s "$H" -t 0.3 "$p" -- echo SHOULD-NOT-RUN 2>"$tmp/err"
    [ $? = 1 ] || return 1
    grep -q "not elected within 0.3 s" "$tmp/err" || { cat "$tmp/err"; return 1; }
    [ "$(count "$p")" = 2 ] || return 1
    wait $e1 && wait $e2 || return 1
    local e1end=$(field "$tmp/e1" E 2) e2start=$(field "$tmp/e2" S 2)
    echo "e1 ended $e1end, e2 started $e2start"
    [ -n "$e2start" ] && [ "$e2start" -ge "$e1end" ] || return 1
    [ "$(wc -l < "$tmp/most")" = 2 ] && [ "$(sort -n "$tmp/most" | tail -1)" = 1 ] || return 1
    wait_count "$p" 0 5 || return 1
    "$ZKLOCK" elect -s "$H" "$p" -- sh -c 'exit 5'
    [ $? = 5 ] || return 1
    wait_count "$p" 0 5
}

# The leader's node deleted: its COMMAND gets SIGTERM, zklock exits 3,
# and the elector behind it takes over.
t_elect_lost() {
    local p="$base/ell" st
    rm -f "$tmp/up" "$tmp/second"
    "$ZKLOCK" elect -s "$H" "$p" -- \
        sh -c 'trap "echo TERMINATED; exit 143" TERM; touch "$1/up"; sleep 60 & wait' sh "$tmp" \
        >"$tmp/lo" 2>"$tmp/le" &
    local p1=$!
    wait_file "$tmp/up" 10 || return 1
    "$ZKLOCK" elect -s "$H" "$p" -- touch "$tmp/second" &
    local p2=$!
    wait_count "$p" 2 5 || return 1
    [ ! -e "$tmp/second" ] || { echo "a follower ran"; return 1; }
    "$ZKCLI" -server "$H" delete "$p/$("$ZKLOCK" ls -s "$H" "$p" | head -1)" >/dev/null 2>&1
    wait $p1
    st=$?
    [ $st = 3 ] || { echo "exit $st"; cat "$tmp/le"; return 1; }
    grep -q TERMINATED "$tmp/lo" || return 1
    grep -q "leadership of $p LOST" "$tmp/le" || { cat "$tmp/le"; return 1; }
    wait $p2 || return 1
    [ -e "$tmp/second" ] || return 1
    wait_count "$p" 0 5
}

# A server restart shorter than the session, under a set and a leader:
# each warns, its COMMAND keeps running, the hold comes back (as
# suspended_keeps_running for one path).
t_multi_elect_suspended() {
    local a="$base/sa" b="$base/sb" e="$base/se" st i
    rm -f "$tmp/go"
    "$ZKLOCK" run -s "$H" --session-timeout 30000 "$a" "$b" -- \
        sh -c "$until_go; echo FINISHED" sh "$tmp" >"$tmp/mso" 2>"$tmp/mse" &
    local pm=$!
    "$ZKLOCK" elect -s "$H" --session-timeout 30000 "$e" -- \
        sh -c "$until_go; echo FINISHED" sh "$tmp" >"$tmp/eso" 2>"$tmp/ese" &
    local pe=$!
    wait_count "$a" 1 5 && wait_count "$b" 1 5 && wait_count "$e" 1 5 || return 1
    "$top_srcdir/test/zkserver.sh" kill "$ZKL_TEST_ZKDIR" >/dev/null || return 1
    sleep 0.5
    "$top_srcdir/test/zkserver.sh" start "$ZKL_TEST_ZKDIR" >/dev/null || return 1
    for i in $(seq 250); do
        grep -q "restored" "$tmp/mse" && grep -q "restored" "$tmp/ese" && break
        sleep 0.1
    done
    touch "$tmp/go"
    wait $pm
    st=$?
    [ $st = 0 ] || { echo "set: exit $st"; cat "$tmp/mse"; return 1; }
    wait $pe
    st=$?
    [ $st = 0 ] || { echo "elect: exit $st"; cat "$tmp/ese"; return 1; }
    cat "$tmp/mse" "$tmp/ese"
    grep -q FINISHED "$tmp/mso" && grep -q FINISHED "$tmp/eso" || return 1
    grep -q "hold on $a, $b is uncertain" "$tmp/mse" || return 1
    grep -q "restored; $a, $b are still held" "$tmp/mse" || return 1
    grep -q "leadership of $e is uncertain" "$tmp/ese" || return 1
    grep -q "restored; still leader of $e" "$tmp/ese" || return 1
    wait_count "$a" 0 5 && wait_count "$b" 0 5 && wait_count "$e" 0 5
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
check semaphore_limit_mismatch t_semaphore_limit_mismatch
check multi_holds_all t_multi_holds_all
check multi_read_write t_multi_read_write
check multi_crossed_no_deadlock t_multi_crossed_no_deadlock
check multi_deadline t_multi_deadline
check multi_lost t_multi_lost
check multi_bad_combinations t_multi_bad_combinations
check elect t_elect
check elect_lost t_elect_lost
check multi_elect_suspended t_multi_elect_suspended
finish
