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
    [ $? = 4 ] || return 1
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
    "$ZKLOCK" run -s "$H" -w "$p" -- true 2>"$tmp/err"; [ $? = 7 ] || return 1
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
    "$ZKLOCK" run -s "$H" "$p" -- true 2>"$tmp/err"; [ $? = 7 ] || return 1
    grep -q "another kind of lock" "$tmp/err" || return 1
    "$ZKLOCK" run -s "$H" "$base/mtx" -- sleep 2 &
    local holder=$!
    wait_count "$base/mtx" 1 5 || return 1
    "$ZKLOCK" run -s "$H" -L 3 "$base/mtx" -- true 2>"$tmp/err"; [ $? = 7 ] || return 1
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
# paths one by one with 2 s each would get both by 2.6 s). It exits 4
# (timed out), COMMAND does not run, and no path keeps a node of it. -n the same at
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
    [ $st = 4 ] || { echo "exit $st after $el ms"; return 1; }
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
# with a message, or a path in use by another kind (refused, exit 7),
# and nothing on the server. A path named twice is one.
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
    "$ZKLOCK" run -s "$H" "$a" "$s" -- true 2>"$tmp/err"; [ $? = 7 ] || { cat "$tmp/err"; return 1; }
    grep -q "another kind of lock" "$tmp/err" || { cat "$tmp/err"; return 1; }
    rm -f "$tmp/go"
    "$ZKLOCK" elect -s "$H" "$l" -- sh -c "$until_go" sh "$tmp" &
    local leader=$!
    wait_count "$l" 1 5 || return 1
    "$ZKLOCK" run -s "$H" "$a" "$l" -- true 2>"$tmp/err"; [ $? = 7 ] || { cat "$tmp/err"; return 1; }
    grep -q "another kind of lock" "$tmp/err" || { cat "$tmp/err"; return 1; }
    "$ZKLOCK" run -s "$H" -w "$l" -- true 2>/dev/null; [ $? = 7 ] || return 1
    "$ZKLOCK" run -s "$H" -L 2 "$l" -- true 2>/dev/null; [ $? = 7 ] || return 1
    [ "$(count "$a")" = 0 ] && [ "$(count "$l")" = 1 ] || return 1
    touch "$tmp/go"
    wait_ok $leader || return 1
    "$ZKLOCK" run -s "$H" "$b" -- sh -c 'sleep 2' &
    local holder=$!
    wait_count "$b" 1 5 || return 1
    "$ZKLOCK" elect -s "$H" "$b" -- true 2>"$tmp/err"; [ $? = 7 ] || { cat "$tmp/err"; return 1; }
    grep -q "another kind of lock" "$tmp/err" || { cat "$tmp/err"; return 1; }
    [ "$(count "$b")" = 1 ] || return 1
    wait_ok $holder || return 1
    wait_count "$a" 0 5 && wait_count "$b" 0 5 && wait_count "$l" 0 5 &&
        wait_count "$s/leases" 0 5 && wait_count "$s/locks" 0 5
}

# Two electors: only the leader runs COMMAND; the second runs it once
# the first's COMMAND has exited (and the first has left). ls -l shows
# the latch nodes with their ids (default HOSTNAME:PID); an elector that
# may not wait (-n) exits 1 (busy), one that gives up (-t) 4 (timed
# out), and neither leaves anything. The
# exit status is COMMAND's.
t_elect() {
    local p="$base/el" e2
    # Each holds 4 s: the checks below run while both are in the latch,
    # five zklock starts (under ASan on a loaded CI, up to a second or
    # so each: 1.5 s once let the latch empty before the last check).
    local body='echo "S $(date +%s%3N)"; touch "$1/in/$$"; ls "$1/in" | wc -l >> "$1/most"; sleep 4; rm "$1/in/$$"; echo "E $(date +%s%3N)"'
    rm -rf "$tmp/in" "$tmp/most"; mkdir "$tmp/in"
    "$ZKLOCK" elect -s "$H" --id e1 "$p" -- sh -c "$body" sh "$tmp" > "$tmp/e1" &
    local e1=$!
    wait_file "$tmp/most" 10 || return 1
    "$ZKLOCK" elect -s "$H" "$p" -- sh -c "$body" sh "$tmp" > "$tmp/e2" &
    e2=$!
    wait_count "$p" 2 5 || return 1
    "$ZKLOCK" ls -s "$H" -l "$p" > "$tmp/ll" || return 1
    cat "$tmp/ll"
    sed -n 1p "$tmp/ll" | grep -Eq '^latch \* _c_[0-9a-f-]{36}-latch-[0-9]{10} e1$' ||
        { echo "line 1: not e1's"; return 1; }
    sed -n 2p "$tmp/ll" | grep -Eq "^latch - _c_[0-9a-f-]{36}-latch-[0-9]{10} $(hostname):$e2\$" ||
        { echo "line 2: not $(hostname):$e2"; return 1; }
    local st
    "$ZKLOCK" elect -s "$H" -n "$p" -- echo SHOULD-NOT-RUN 2>"$tmp/err"; st=$?
    [ $st = 1 ] || { echo "-n: exit $st, wanted 1"; cat "$tmp/err"; return 1; }
    grep -q "has another leader" "$tmp/err" || { cat "$tmp/err"; return 1; }
    "$ZKLOCK" elect -s "$H" -t 0.3 "$p" -- echo SHOULD-NOT-RUN 2>"$tmp/err"; st=$?
    [ $st = 4 ] || { echo "-t 0.3: exit $st, wanted 4"; cat "$tmp/err"; return 1; }
    grep -q "not elected within 0.3 s" "$tmp/err" || { cat "$tmp/err"; return 1; }
    [ "$(count "$p")" = 2 ] || { echo "$(count "$p") in the latch, wanted 2"; return 1; }
    wait $e1 && wait $e2 || { echo "an elector failed"; return 1; }
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

# --- COMMAND's process tree (the guard, tools/guard.c) ---
# Every process of a command's tree carries ZKL_TEST_MARK=<mark> in its
# environment (given to the command by env, so zklock itself has none);
# marked MARK lists the pids of those still alive (a zombie has no
# environment), whatever became of their pids or parents.
marked() { grep -lszxF "ZKL_TEST_MARK=$1" /proc/[0-9]*/environ | sed 's,^/proc/,,; s,/environ$,,'; }
wait_unmarked() { # mark seconds
    local i
    for i in $(seq $(( $2 * 20 ))); do
        [ -z "$(marked "$1")" ] && return 0
        sleep 0.05
    done
    echo "still alive after $2 s: $(marked "$1" | tr '\n' ' ')"
    return 1
}
# A command's tree: tree.sh DIR MODE [STUBBORN]: its own sleep, a nested
# shell with its sleep, and a double-forked setsid'd one with its sleep
# (a daemon: its parent exits at once); with STUBBORN, one more shell
# and sleep that ignore SIGTERM. MODE trap: each shell writes
# DIR/term.PID on SIGTERM and exits 143. Pids in DIR/pids; DIR/up once
# all are running.
make_tree() {
    rm -rf "$tmp/tr"; mkdir "$tmp/tr"
    cat > "$tmp/tr/leaf.sh" <<'EOF'
d=$1
case $2 in
trap) trap 'echo > "$d/term.$$"; exit 143' TERM ;;
ignore) trap '' TERM ;;
esac
sleep 300 & echo $! >> "$d/pids"
echo $$ >> "$d/pids"
while :; do wait; done
EOF
    cat > "$tmp/tr/tree.sh" <<'EOF'
d=$1 n=6
case $2 in trap) trap 'echo > "$d/term.$$"; exit 143' TERM ;; esac
sleep 300 & echo $! >> "$d/pids"
sh "$d/leaf.sh" "$d" "$2" &
(setsid sh "$d/leaf.sh" "$d" "$2" &)
if [ -n "${3:-}" ]; then sh "$d/leaf.sh" "$d" ignore & n=8; fi
echo $$ >> "$d/pids"
i=0; while [ "$(wc -l < "$d/pids")" -lt $n ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
touch "$d/up"
wait
EOF
}

# zklock SIGKILLed while its command's tree runs: the whole tree is
# gone at once (well within the session timeout), and a waiter granted
# the lock once the old session expires finds none of it alive.
t_tree_zklock_killed() {
    local p="$base/tk" mark="$tmp/tk" zp t0 el st
    make_tree
    "$ZKLOCK" run -s "$H" --session-timeout 2000 "$p" -- \
        env ZKL_TEST_MARK="$mark" sh "$tmp/tr/tree.sh" "$tmp/tr" plain 2>"$tmp/tke" &
    zp=$!
    wait_file "$tmp/tr/up" 10 || return 1
    [ "$(marked "$mark" | wc -l)" = 6 ] || { marked "$mark"; return 1; }
    "$ZKLOCK" run -s "$H" -t 30 "$p" -- \
        sh -c 'grep -lszxF "ZKL_TEST_MARK=$1" /proc/[0-9]*/environ; echo checked' sh "$mark" \
        >"$tmp/verdict" 2>&1 &
    local waiter=$!
    wait_count "$p" 2 5 || return 1
    t0=$(date +%s%N)
    kill -KILL $zp
    wait_unmarked "$mark" 5 || return 1
    el=$(( ($(date +%s%N) - t0) / 1000000 ))
    echo "tree gone ${el} ms after SIGKILL"
    wait $zp; st=$?
    [ $st = 137 ] || { echo "zklock exit $st"; return 1; }
    [ "$el" -lt 2000 ] || { echo "slower than the session timeout"; return 1; }
    wait_ok $waiter || return 1
    cat "$tmp/verdict" "$tmp/tke"
    [ "$(cat "$tmp/verdict")" = checked ] || return 1
    grep -q "is gone; killed the 6 processes" "$tmp/tke" || return 1
    for pid in $(cat "$tmp/tr/pids"); do
        ! kill -0 "$pid" 2>/dev/null || { echo "$pid alive"; return 1; }
    done
    wait_count "$p" 0 5
}

# The hold lost: every process of the tree gets SIGTERM (each shell
# notes it), the ones that ignore it SIGKILL --kill-after later, zklock
# exits 3 once the tree is empty.
t_tree_lost() {
    local p="$base/tl" mark="$tmp/tl" zp st
    make_tree
    "$ZKLOCK" run -s "$H" --kill-after 1 "$p" -- \
        env ZKL_TEST_MARK="$mark" sh "$tmp/tr/tree.sh" "$tmp/tr" trap stubborn 2>"$tmp/tle" &
    zp=$!
    wait_file "$tmp/tr/up" 10 || return 1
    [ "$(marked "$mark" | wc -l)" = 8 ] || { marked "$mark"; return 1; }
    "$ZKCLI" -server "$H" delete "$p/$("$ZKLOCK" ls -s "$H" "$p")" >/dev/null 2>&1
    wait $zp; st=$?
    cat "$tmp/tle"
    [ $st = 3 ] || { echo "exit $st"; return 1; }
    [ -z "$(marked "$mark")" ] || { echo "left: $(marked "$mark")"; return 1; }
    [ "$(ls "$tmp/tr" | grep -c '^term\.')" = 3 ] || { ls "$tmp/tr"; return 1; }
    grep -q "LOST" "$tmp/tle" && grep -q "sending SIGKILL" "$tmp/tle" || return 1
    wait_count "$p" 0 5
}

# Revocation: SIGTERM to every process of the tree, not only COMMAND.
t_tree_revoked() {
    local p="$base/tv" mark="$tmp/tv" zp st
    make_tree
    "$ZKLOCK" run -s "$H" --revocable "$p" -- \
        env ZKL_TEST_MARK="$mark" sh "$tmp/tr/tree.sh" "$tmp/tr" trap 2>"$tmp/tve" &
    zp=$!
    wait_file "$tmp/tr/up" 10 || return 1
    "$ZKLOCK" revoke -s "$H" "$p" || return 1
    wait $zp; st=$?
    cat "$tmp/tve"
    [ $st = 143 ] || { echo "exit $st"; return 1; }
    [ -z "$(marked "$mark")" ] || { echo "left: $(marked "$mark")"; return 1; }
    [ "$(ls "$tmp/tr" | grep -c '^term\.')" = 3 ] || { ls "$tmp/tr"; return 1; }
    wait_count "$p" 0 5
}

# COMMAND exits leaving processes behind: they get SIGTERM, SIGKILL
# --kill-after later if they ignore it, and the lock is let go only
# then: a waiter granted it, and a -n after zklock exits, find none of
# them alive.
t_tree_leftovers() {
    local p="$base/tf" mark="$tmp/tf" st
    make_tree
    rm -f "$tmp/go"
    "$ZKLOCK" run -s "$H" --kill-after 1 "$p" -- env ZKL_TEST_MARK="$mark" sh -c '
        sh "$1/leaf.sh" "$1" trap & sh "$1/leaf.sh" "$1" ignore &
        i=0; while [ ! -e "$1/../go" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
        exit 4' sh "$tmp/tr" 2>"$tmp/tfe" &
    local zp=$! i=0
    while [ "$(cat "$tmp/tr/pids" 2>/dev/null | wc -l)" -lt 4 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
    "$ZKLOCK" run -s "$H" -t 30 "$p" -- \
        sh -c 'grep -lszxF "ZKL_TEST_MARK=$1" /proc/[0-9]*/environ; echo checked' sh "$mark" \
        >"$tmp/verdict" 2>&1 &
    local waiter=$!
    wait_count "$p" 2 10 || return 1
    touch "$tmp/go"
    wait $zp; st=$?
    cat "$tmp/tfe"
    [ $st = 4 ] || { echo "exit $st"; return 1; }
    [ -z "$(marked "$mark")" ] || { echo "left: $(marked "$mark")"; return 1; }
    grep -q "exited; sending SIGTERM to the 4 processes" "$tmp/tfe" || return 1
    grep -q "sending SIGKILL" "$tmp/tfe" || return 1
    [ "$(ls "$tmp/tr" | grep -c '^term\.')" = 1 ] || { ls "$tmp/tr"; return 1; }
    wait_ok $waiter || return 1
    [ "$(cat "$tmp/verdict")" = checked ] || { cat "$tmp/verdict"; return 1; }
    [ "$("$ZKLOCK" run -s "$H" -n "$p" -- sh -c 'grep -lszxF "ZKL_TEST_MARK=$1" /proc/[0-9]*/environ; echo checked' sh "$mark")" = checked ] || return 1
    wait_count "$p" 0 5
}

# The guard itself SIGKILLed: the tree comes back to the sentinel (a
# child subreaper above it), which kills it; zklock exits 70.
t_tree_guard_killed() {
    local p="$base/tg" mark="$tmp/tg" zp s g st
    make_tree
    "$ZKLOCK" run -s "$H" "$p" -- \
        env ZKL_TEST_MARK="$mark" sh "$tmp/tr/tree.sh" "$tmp/tr" plain 2>"$tmp/tge" &
    zp=$!
    wait_file "$tmp/tr/up" 10 || return 1
    # zklock's child is the sentinel; the guard is the sentinel's.
    s=$(pgrep -P $zp)
    [ -n "$s" ] && [ "$(echo "$s" | wc -l)" = 1 ] || { echo "sentinel: $s"; return 1; }
    g=$(pgrep -P "$s")
    [ -n "$g" ] && [ "$(echo "$g" | wc -l)" = 1 ] || { echo "guard: $g"; return 1; }
    kill -KILL "$g"
    wait $zp; st=$?
    cat "$tmp/tge"
    [ $st = 70 ] || { echo "exit $st"; return 1; }
    [ -z "$(marked "$mark")" ] || { echo "left: $(marked "$mark")"; return 1; }
    grep -q "the guard (pid $g) is gone; killed the 6 processes" "$tmp/tge" || return 1
    grep -q "guard process killed by signal 9" "$tmp/tge" || return 1
    wait_count "$p" 0 5
}

# A TERM trap's clean-up runs to its end: what the handler forks after
# the signal (here a sleep, then an echo) is not signalled too.
t_tree_trap_cleanup() {
    local p="$base/tt" zp
    rm -f "$tmp/tt.up" "$tmp/tt.done"
    "$ZKLOCK" run -s "$H" --revocable "$p" -- sh -c \
        'trap "sleep 0.3; echo cleaned > $1.done; exit 0" TERM; touch $1.up; while :; do sleep 0.05; done' \
        sh "$tmp/tt" 2>"$tmp/tte" &
    zp=$!
    wait_file "$tmp/tt.up" 10 || return 1
    "$ZKLOCK" revoke -s "$H" "$p" >/dev/null || return 1
    wait $zp || { cat "$tmp/tte"; return 1; }
    [ "$(cat "$tmp/tt.done" 2>/dev/null)" = cleaned ] || { cat "$tmp/tte"; return 1; }
    wait_count "$p" 0 5
}

# SIGKILL to zklock's whole process group (kill -9 %job, timeout -k)
# kills zklock, the guard and the command at once; the command's
# processes that left the group (setsid) are the sentinel's to kill
# (it is in a group of its own), before anyone else holds the lock.
t_tree_group_killed() {
    local p="$base/tk" mark="$tmp/tk" zp
    make_tree
    setsid "$ZKLOCK" run -s "$H" --session-timeout 4000 "$p" -- \
        env ZKL_TEST_MARK="$mark" sh "$tmp/tr/tree.sh" "$tmp/tr" plain 2>"$tmp/tke" &
    zp=$!
    wait_file "$tmp/tr/up" 10 || return 1
    [ -n "$(marked "$mark")" ] || return 1
    kill -KILL -- -"$zp"
    wait "$zp" 2>/dev/null
    wait_unmarked "$mark" 5 || { cat "$tmp/tke"; echo "left: $(marked "$mark")"; return 1; }
    # Granted once the session expires; nothing of the first is alive.
    "$ZKLOCK" run -s "$H" -t 30 "$p" -- true || return 1
    wait_count "$p" 0 5
}

# Ctrl-C at a terminal (a pty): SIGINT goes to the whole foreground
# process group; the command (a shell trapping INT, each one counted as
# it comes: it waits for a child that ignores SIGINT) gets it once, as
# zklock does not pass on what the whole group had. The same for
# kill -INT -- -PGID. A SIGINT sent to zklock alone is passed on.
# zklock exits with the command's status.
t_tree_ctrl_c() {
    local p="$base/tc"
    rm -rf "$tmp/cc"; mkdir "$tmp/cc"
    python3 - "$ZKLOCK" "$H" "$p" "$tmp/cc" <<'EOF' || return 1
import os, pty, sys, time
zklock, hosts, path, d = sys.argv[1:]
body = ('trap "date +%T.%N >> $1/ints" INT; echo $PPID > $1/guard; '
        '(i=0; while [ ! -e $1/go ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done) & '
        'touch $1/up; n=0; while [ ! -e $1/go ] && [ $n -lt 100 ]; do wait; n=$((n+1)); done; exit 5')
outer = ('trap "echo outer >> $4/outer" INT; "$1" run -s "$2" "$3" -- sh -c \'%s\' sh "$4" 2>"$4/err"; '
         'echo $? > "$4/status"' % body)
def wait_for(cond, what, secs=20):
    end = time.time() + secs
    while time.time() < end:
        if cond():
            return
        time.sleep(0.05)
    sys.exit("timed out: " + what)
def lines(name):
    try:
        return open(os.path.join(d, name)).read().split()
    except FileNotFoundError:
        return []
pid, fd = pty.fork()
if pid == 0:
    os.execvp("sh", ["sh", "-c", outer, "sh", zklock, hosts, path, d])
os.set_blocking(fd, False)
def drain():
    try:
        while os.read(fd, 4096):
            pass
    except (BlockingIOError, OSError):
        pass
wait_for(lambda: os.path.exists(os.path.join(d, "up")), "the command")
os.write(fd, b"\x03")                       # Ctrl-C
wait_for(lambda: (drain(), len(lines("ints")))[1] >= 1, "the command's trap")
guard = int(lines("guard")[0])
def ppid(p):
    return int(open("/proc/%d/stat" % p).read().rsplit(")", 1)[1].split()[1])
zk = ppid(ppid(guard))                      # the guard's parent is the sentinel
os.kill(zk, 2)                              # SIGINT to zklock alone
wait_for(lambda: len(lines("ints")) >= 2, "the forwarded SIGINT")
os.killpg(os.getpgid(zk), 2)                # to the whole group
wait_for(lambda: len(lines("ints")) >= 3, "the group's SIGINT")
open(os.path.join(d, "go"), "w").close()
wait_for(lambda: (drain(), os.path.exists(os.path.join(d, "status")))[1], "zklock's exit")
os.waitpid(pid, 0)
print("ints", len(lines("ints")), "status", lines("status"), "outer", lines("outer"))
print(open(os.path.join(d, "err")).read()); print(open(os.path.join(d, "ints")).read())
sys.exit(0 if len(lines("ints")) == 3 and lines("status") == ["5"] else 1)
EOF
    wait_count "$p" 0 5
}

# COMMAND not found (127) or not runnable (126): the guard reports why,
# zklock says so and lets the lock go.
t_tree_exec_failure() {
    local p="$base/te" st
    "$ZKLOCK" run -s "$H" "$p" -- "$tmp/none" 2>"$tmp/tee"; st=$?
    [ $st = 127 ] || { echo "exit $st"; return 1; }
    grep -q "cannot run $tmp/none: No such file or directory" "$tmp/tee" || { cat "$tmp/tee"; return 1; }
    echo 'echo hi' > "$tmp/noexec"; chmod 644 "$tmp/noexec"
    "$ZKLOCK" run -s "$H" "$p" -- "$tmp/noexec" 2>"$tmp/tee"; st=$?
    [ $st = 126 ] || { echo "exit $st"; return 1; }
    grep -q "cannot run $tmp/noexec: Permission denied" "$tmp/tee" || { cat "$tmp/tee"; return 1; }
    wait_count "$p" 0 5
}

# COMMAND has exited and what it left ignores SIGTERM: a signal to
# zklock then kills it at once rather than --kill-after (here 60 s)
# later; zklock exits with COMMAND's status.
t_tree_signal_after_exit() {
    local p="$base/ts" mark="$tmp/ts" zp st t0 el
    make_tree
    "$ZKLOCK" run -s "$H" --kill-after 60 "$p" -- env ZKL_TEST_MARK="$mark" sh -c '
        sh "$1/leaf.sh" "$1" ignore &
        i=0; while [ "$(cat "$1/pids" 2>/dev/null | wc -l)" -lt 2 ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
        exit 6' sh "$tmp/tr" 2>"$tmp/tse" &
    zp=$!
    for i in $(seq 100); do grep -q "exited; sending SIGTERM" "$tmp/tse" && break; sleep 0.1; done
    grep -q "exited; sending SIGTERM to the 2 processes" "$tmp/tse" || { cat "$tmp/tse"; return 1; }
    t0=$(date +%s)
    kill -TERM $zp
    wait $zp; st=$?
    el=$(( $(date +%s) - t0 ))
    cat "$tmp/tse"
    [ $st = 6 ] || { echo "exit $st"; return 1; }
    [ $el -lt 30 ] || { echo "took $el s"; return 1; }
    [ -z "$(marked "$mark")" ] || { echo "left: $(marked "$mark")"; return 1; }
    grep -q "Terminated; killing what env left running" "$tmp/tse" || return 1
    wait_count "$p" 0 5
}

# ---- Failures, each with its words and exit status (issue 22) ----

# A usage error is one line saying what is wrong, then where to read
# more: $1 the file with zklock's stderr, $2 a pattern of the first line.
one_line() {
    [ "$(wc -l < "$1")" = 2 ] &&
        sed -n 1p "$1" | grep -q "^zklock: .*$2" &&
        [ "$(sed -n 2p "$1")" = "Try 'zklock --help' for more information." ] ||
        { echo "not one usage line matching \"$2\":"; cat "$1"; return 1; }
}

# usage CODE PATTERN ARGS...: zklock ARGS exits CODE (2: one usage line
# matching PATTERN; else PATTERN in stderr) without running anything.
expect() {
    local code=$1 pat=$2 st
    shift 2
    "$ZKLOCK" "$@" >"$tmp/xo" 2>"$tmp/xe"
    st=$?
    [ "$st" = "$code" ] || { echo "zklock $*: exit $st, wanted $code"; cat "$tmp/xe"; return 1; }
    [ ! -s "$tmp/xo" ] || ! grep -q RAN "$tmp/xo" || { echo "zklock $*: the command ran"; return 1; }
    if [ "$code" = 2 ]; then
        one_line "$tmp/xe" "$pat"
    else
        grep -q -- "$pat" "$tmp/xe" || { echo "zklock $*: no \"$pat\" in:"; cat "$tmp/xe"; return 1; }
    fi
}

# A port on 127.0.0.1 that nothing listens on.
no_server() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print("127.0.0.1:%d" % s.getsockname()[1])'
}

# elapsed MS-SINCE: milliseconds since a $(date +%s%N).
elapsed() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

# No server: not a wait for ever, not "not acquired" (contention), not
# "connection lost": "cannot reach" (5), by the connect deadline (15 s
# by default, -t when shorter, --connect-timeout), with the probe's
# word on the server. ls and revoke alike.
t_no_server() {
    local s t0 el
    s=$(no_server)
    t0=$(date +%s%N)
    expect 5 "cannot reach ZooKeeper: no session within 15 s (--connect-timeout)" \
        run -s "$s" /locks/nightly -- echo RAN || return 1
    el=$(elapsed "$t0")
    echo "default deadline: gave up after $el ms"
    [ "$el" -ge 15000 ] && [ "$el" -lt 25000 ] || return 1
    grep -q "^zklock: $s: refuses connections (nothing listens on that port)$" "$tmp/xe" || return 1
    t0=$(date +%s%N)
    expect 5 "no session within 1 s (-t)" run -s "$s" -t 1 /locks/nightly -- echo RAN || return 1
    el=$(elapsed "$t0")
    [ "$el" -ge 1000 ] && [ "$el" -lt 6000 ] || { echo "-t 1: $el ms"; return 1; }
    expect 5 "no session within 1 s (--connect-timeout)" \
        run -s "$s" -n --connect-timeout 1 /locks/nightly -- echo RAN || return 1
    ! grep -q "was lost\|not acquired\|locked by" "$tmp/xe" || return 1
    expect 5 "no session within 0.5 s" elect -s "$s" --connect-timeout 0.5 /e -- echo RAN || return 1
    expect 5 "refuses connections" ls -s "$s" --connect-timeout 0.5 /locks/nightly || return 1
    expect 5 "refuses connections" revoke -s "$s" --connect-timeout 0.5 /locks/nightly || return 1
    # Every server of the list is probed.
    expect 5 "cannot reach" run -s "$s,$(no_server)" --connect-timeout 0.5 /x -- echo RAN || return 1
    [ "$(grep -c 'refuses connections' "$tmp/xe")" = 2 ] || return 1
}

# The server list, the session timeout: each fault named (usage, 2);
# a name that does not resolve is named (cannot reach, 5), and skipped
# with a warning when another server resolves; a chroot suffix is used.
t_bad_servers() {
    expect 2 'bad server list (-s): server 1, "localhost:abc": port "abc" is not a number$' \
        run -s localhost:abc /x -- echo RAN || return 1
    expect 2 'server 1, "127.0.0.1", has no port (host:port)$' run -s 127.0.0.1 /x -- echo RAN || return 1
    expect 2 'server 2, "10.0.0.2", has no port' run -s "$H,10.0.0.2" /x -- echo RAN || return 1
    expect 2 'port 99999 is outside 1..65535$' run -s 127.0.0.1:99999 /x -- echo RAN || return 1
    expect 2 'port 0 is outside 1..65535$' ls -s 127.0.0.1:0 /x || return 1
    expect 2 'server 2 of the list is empty' run -s "$H,,$H" /x -- echo RAN || return 1
    expect 2 'server 2 of the list is empty' revoke -s "$H," /x || return 1
    expect 2 'has no host before the port' run -s :2181 /x -- echo RAN || return 1
    expect 2 'write an IPv6 address without brackets (::1:2181' run -s '[::1]:2181' /x -- echo RAN || return 1
    expect 2 'bad chroot "/app/" after the servers (-s): ends with' run -s "$H/app/" /x -- echo RAN || return 1
    ZKLOCK_SERVERS=localhost expect 2 'bad server list ($ZKLOCK_SERVERS): server 1, "localhost", has no port' \
        run /x -- echo RAN || return 1
    # flock's -s (shared) before a lock path.
    expect 2 "-s takes the ZooKeeper servers (host:port,...), not a path (\"/locks/x\"); flock's -s, a shared lock, is -r here" \
        run -s /locks/x -- echo RAN || return 1
    expect 2 '--session-timeout 999999999 is outside 1..600000 ms' \
        run -s "$H" --session-timeout 999999999 /x -- echo RAN || return 1
    expect 2 '--session-timeout "10s" is not a number of milliseconds' \
        run -s "$H" --session-timeout 10s /x -- echo RAN || return 1
    expect 2 '--session-timeout 0 is outside' ls -s "$H" --session-timeout 0 /x || return 1
    expect 2 '--connect-timeout "soon" is not a number of seconds' \
        run -s "$H" --connect-timeout soon /x -- echo RAN || return 1
    expect 5 'cannot resolve host "nosuchhost.invalid" (-s): ' \
        run -s nosuchhost.invalid:2181 /x -- echo RAN || return 1
    ! grep -q "see the log" "$tmp/xe" || return 1
    # One name that does not resolve, one server that serves: a warning.
    "$ZKLOCK" run -s "nosuchhost.invalid:2181,$H" "$base/srv" -- echo RAN >"$tmp/o" 2>"$tmp/e" || { cat "$tmp/e"; return 1; }
    grep -q RAN "$tmp/o" || return 1
    grep -q '^zklock: warning: cannot resolve host "nosuchhost.invalid" (-s): .*; trying the other servers$' "$tmp/e" || { cat "$tmp/e"; return 1; }
    # A chroot suffix: the lock path is below it on the server (a holder
    # below it keeps the chroot node there); one that does not exist is
    # named.
    rm -f "$tmp/go" "$tmp/gc"
    "$ZKLOCK" run -s "$H" "$base/chroot/anchor" -- sh -c "$until_file" sh "$tmp/gc" &
    local anchor=$!
    wait_count "$base/chroot/anchor" 1 10 || { touch "$tmp/gc"; return 1; }
    "$ZKLOCK" run -s "$H$base/chroot" /job -- sh -c "$until_go" sh "$tmp" &
    local p=$!
    wait_count "$base/chroot/job" 1 10 || { touch "$tmp/go" "$tmp/gc"; return 1; }
    [ "$("$ZKLOCK" ls -s "$H$base/chroot" /job)" = "$("$ZKLOCK" ls -s "$H" "$base/chroot/job")" ] ||
        { touch "$tmp/go" "$tmp/gc"; return 1; }
    touch "$tmp/go" "$tmp/gc"
    wait_ok $p $anchor && wait_count "$base/chroot/job" 0 5 || return 1
    expect 7 "is there a node $base/nochroot (the chroot)? ZooKeeper does not create it" \
        run -s "$H$base/nochroot" /job -- echo RAN
}

# A bad lock path: which rule it breaks, with the numbers; a long one
# shortened, its length said; nothing sent.
t_bad_paths() {
    local long
    expect 2 'bad lock path "relative": not absolute (it must begin with '"'/'"')$' \
        run -s "$H" relative -- echo RAN || return 1
    expect 2 'bad lock path "/": the root, "/", which holds no lock$' run -s "$H" / -- echo RAN || return 1
    expect 2 'bad lock path "/a/": ends with '"'/'"'$' run -s "$H" /a/ -- echo RAN || return 1
    expect 2 'bad lock path "/zookeeper/quota": under /zookeeper, which the server reserves$' \
        run -s "$H" /zookeeper/quota -- echo RAN || return 1
    expect 2 'bad lock path "/a//b": component 2 is empty ("//" at byte 3)$' run -s "$H" /a//b -- echo RAN || return 1
    expect 2 'bad lock path "/a/../b": component 2 is ".." (no relative components)$' \
        ls -s "$H" /a/../b || return 1
    expect 2 'bad lock path "/a\\x07b": control character U+0007 at byte 3$' \
        run -s "$H" "$(printf '/a\007b')" -- echo RAN || return 1
    expect 2 'bad lock path "/ab\\xff": not UTF-8 at byte 4 (0xff)$' \
        revoke -s "$H" "$(printf '/ab\377')" || return 1
    long=/$(head -c 1999 /dev/zero | tr '\0' a)
    expect 2 '2000 bytes, longer than 1024 bytes (ZKL_PATH_MAX)$' run -s "$H" "$long" -- echo RAN || return 1
    grep -q '"/a\{47\}\.\.\.a\{16\}" (2000 bytes): ' "$tmp/xe" || { cat "$tmp/xe"; return 1; }
    [ "$(sed -n 1p "$tmp/xe" | wc -c)" -lt 200 ] || return 1
    # A bad one among several paths: that one is named.
    expect 2 'bad lock path "/b/": ends with' run -s "$H" /a /b/ -- echo RAN
}

# Usage errors: one line each, no help text.
t_usage_one_line() {
    expect 2 'no command given (run, elect, ls or revoke)$' || return 1
    expect 2 'unknown command "frobnicate"' frobnicate || return 1
    expect 2 'unknown option -t: the command (run, elect, ls or revoke) comes first' -t 3 /x true || return 1
    expect 2 'unknown option --bogus$' run --bogus /x -- echo RAN || return 1
    expect 2 'unknown option -x$' run -x /x -- echo RAN || return 1
    expect 2 'option -t needs a value$' run -t || return 1
    expect 2 'option --owner needs a value$' run --owner || return 1
    expect 2 '-t and -n exclude each other$' run -s "$H" -n -t 1 /x -- echo RAN || return 1
    expect 2 'no COMMAND after /x (LOCKPATH -- COMMAND, or -c STRING)$' run -s "$H" /x || return 1
    expect 2 'no LOCKPATH given$' run -s "$H" || return 1
    expect 2 'bad -t value "abc" (seconds)$' run -t abc /x -- echo RAN || return 1
    expect 2 '-E "256" is not an exit status (0..255)$' run -E 256 /x -- echo RAN || return 1
    expect 2 'ls takes one LOCKPATH: "/y" is one too many$' ls /x /y || return 1
    "$ZKLOCK" --help | grep -q "^usage: zklock run" || return 1
    "$ZKLOCK" run --help | grep -q "Exit status:" || return 1
}

# flock's -w is a timeout, zklock's the write side: a number after -w
# gets the hint toward -t.
t_w_number_hint() {
    expect 2 "-w is the write side of a read/write lock; for a timeout use -t 30 (flock's -w)$" \
        run -s "$H" -w 30 /locks/nightly -- echo RAN || return 1
    expect 2 "use -t 2.5 (flock's -w)$" run -s "$H" -w 2.5 /x -- echo RAN || return 1
    # -w before a lock path is the write side, as documented.
    [ "$("$ZKLOCK" run -s "$H" -w "$base/wh" -- sh -c 'echo RAN')" = RAN ]
}

# Busy (-n, 1), timed out (-t, 4), -E CODE for both (flock's), -q: no
# word for either; the command never runs.
t_busy_timeout_codes() {
    local p="$base/bt" t0 el
    rm -f "$tmp/go"
    "$ZKLOCK" run -s "$H" "$p" -- sh -c "$until_go" sh "$tmp" &
    local holder=$!
    wait_count "$p" 1 5 || { touch "$tmp/go"; return 1; }
    expect 1 "^zklock: $p is locked by another holder$" run -s "$H" -n "$p" -- echo RAN || { touch "$tmp/go"; return 1; }
    t0=$(date +%s%N)
    expect 4 "^zklock: $p: timed out: not acquired within 0.5 s; others held it$" \
        run -s "$H" -t 0.5 "$p" -- echo RAN || { touch "$tmp/go"; return 1; }
    el=$(elapsed "$t0")
    [ "$el" -ge 500 ] || { echo "-t 0.5 gave up after $el ms"; touch "$tmp/go"; return 1; }
    expect 75 "locked by another" run -s "$H" -n -E 75 "$p" -- echo RAN || { touch "$tmp/go"; return 1; }
    expect 75 "timed out" run -s "$H" -t 1 --conflict-exit-code 75 "$p" -- echo RAN || { touch "$tmp/go"; return 1; }
    "$ZKLOCK" run -s "$H" -n -q "$p" -- echo RAN >"$tmp/o" 2>"$tmp/e"
    [ $? = 1 ] && [ ! -s "$tmp/e" ] && [ ! -s "$tmp/o" ] || { cat "$tmp/e"; touch "$tmp/go"; return 1; }
    "$ZKLOCK" run -s "$H" -t 1 --quiet -E 0 "$p" -- echo RAN >"$tmp/o" 2>"$tmp/e"
    [ $? = 0 ] && [ ! -s "$tmp/e" ] && [ ! -s "$tmp/o" ] || { cat "$tmp/e"; touch "$tmp/go"; return 1; }
    # -q does not hide other failures.
    "$ZKLOCK" run -s "$(no_server)" -q --connect-timeout 0.3 "$p" -- echo RAN 2>"$tmp/e"
    [ $? = 5 ] && grep -q "cannot reach" "$tmp/e" || { touch "$tmp/go"; return 1; }
    [ "$(count "$p")" = 1 ] || { touch "$tmp/go"; return 1; }
    touch "$tmp/go"
    wait_ok $holder && wait_count "$p" 0 5
}

# -c STRING runs STRING with /bin/sh -c, before the lock path or after
# it (flock's order); its status passes through; with -c there is no
# COMMAND after --.
t_flock_c() {
    local out
    out=$("$ZKLOCK" run -s "$H" -c 'echo "held $ZKLOCK_PATH"; exit 3' "$base/c")
    [ $? = 3 ] && [ "$out" = "held $base/c" ] || { echo "got $out"; return 1; }
    out=$("$ZKLOCK" run -s "$H" "$base/c" -c 'echo "$0" a b | tr a x')
    [ $? = 0 ] && [ "$out" = "/bin/sh x b" ] || { echo "got $out"; return 1; }
    out=$("$ZKLOCK" run -s "$H" --command 'echo "$ZKLOCK_PATH" | wc -l' "$base/c1" "$base/c2")
    [ "$out" = 2 ] || { echo "got $out"; return 1; }
    out=$("$ZKLOCK" elect -s "$H" -c 'echo leader' "$base/ce")
    [ "$out" = leader ] || return 1
    expect 2 '-c STRING is the command: no COMMAND after --$' run -s "$H" -c 'echo RAN' "$base/c" -- true || return 1
    wait_count "$base/c" 0 5
}

# revoke: whom it asked (node, data), who let go, who still holds after
# --wait (not revocable), and a non-zero status when nobody was found.
t_revoke_report() {
    local p="$base/rv" q="$base/rvq" st node
    expect 1 "^zklock: $p has no holder; nothing asked$" revoke -s "$H" "$p" || return 1
    # A holder that is not revocable: asked, still holds.
    rm -f "$tmp/go"
    "$ZKLOCK" run -s "$H" --owner "batch-7" "$p" -- sh -c "$until_go" sh "$tmp" &
    local holder=$!
    wait_count "$p" 1 5 || { touch "$tmp/go"; return 1; }
    node=$("$ZKLOCK" ls -s "$H" "$p")
    expect 1 "has no contender named \"nosuch\" (zklock ls lists them); nothing asked" \
        revoke -s "$H" "$p" nosuch || { touch "$tmp/go"; return 1; }
    "$ZKLOCK" revoke -s "$H" --wait 1 "$p" >"$tmp/ro" 2>"$tmp/re"
    st=$?
    cat "$tmp/ro" "$tmp/re"
    [ $st = 4 ] || { touch "$tmp/go"; return 1; }
    grep -q "^$node (\"batch-7\"): asked; still holds after 1 s: not revocable" "$tmp/ro" || { touch "$tmp/go"; return 1; }
    [ "$(count "$p")" = 1 ] || { touch "$tmp/go"; return 1; }
    touch "$tmp/go"
    wait_ok $holder || return 1
    # A revocable holder, asked by node name: lets go.
    "$ZKLOCK" run -s "$H" --revocable "$q" -- sh -c 'trap "exit 0" TERM; sleep 30 & wait' &
    holder=$!
    wait_count "$q" 1 5 || return 1
    node=$("$ZKLOCK" ls -s "$H" "$q")
    "$ZKLOCK" revoke -s "$H" "$q" "$node" >"$tmp/ro" 2>"$tmp/re"
    st=$?
    cat "$tmp/ro" "$tmp/re"
    [ $st = 0 ] || return 1
    grep -q "^$node (no data): asked; let go after [0-9.]* s$" "$tmp/ro" || return 1
    wait_ok $holder && wait_count "$q" 0 5
}

# A server that closes new connections at once (maxClientCnxns reached,
# here 3 on a server of this test's own): named as such, exit 5; once
# the connections are gone, the same command runs.
t_connection_limit() {
    local d="$tmp/zkcnx" h2 rc
    h2=$(ZKL_ZK_CFG=maxClientCnxns=3 "$top_srcdir/test/zkserver.sh" start "$d") || return 1
    connection_limit "$h2"
    rc=$?
    "$top_srcdir/test/zkserver.sh" kill "$d" >/dev/null
    return $rc
}

connection_limit() {
    local h2=$1 i pids= rc=0
    rm -f "$tmp/go" "$tmp"/up*
    for i in 1 2 3; do
        "$ZKLOCK" run -s "$h2" "/cnx/$i" -- sh -c 'touch "$1/up$2"; '"$until_go" sh "$tmp" "$i" &
        pids="$pids $!"
    done
    for i in 1 2 3; do wait_file "$tmp/up$i" 15 || rc=1; done
    [ $rc = 0 ] && expect 5 "cannot reach ZooKeeper: no session within 2 s (--connect-timeout)" \
        run -s "$h2" --connect-timeout 2 /cnx/4 -- echo RAN || rc=1
    [ $rc = 0 ] && grep -q "^zklock: $h2: closes new connections at once: its per-client connection limit (maxClientCnxns, 60 unless zoo.cfg sets it) is reached" "$tmp/xe" || rc=1
    grep -q "Too many connections from /127.0.0.1 - max is 3" "$tmp/zkcnx/server.log" || rc=1
    # The holders go before their server does, whatever happened.
    touch "$tmp/go"
    # shellcheck disable=SC2086
    wait_ok $pids || rc=1
    [ $rc = 0 ] && [ "$("$ZKLOCK" run -s "$h2" /cnx/4 -- echo RAN)" = RAN ]
}

# An ensemble member left without a quorum accepts connections but
# serves nobody: said so (srvr's answer), exit 5.
t_no_quorum() {
    local d="$tmp/zkens" n1 rc=0
    "$top_srcdir/test/zkserver.sh" ensemble "$d" 3 >/dev/null || { "$top_srcdir/test/zkserver.sh" kill "$d"; return 1; }
    "$top_srcdir/test/zkserver.sh" kill "$d/n2" >/dev/null
    "$top_srcdir/test/zkserver.sh" kill "$d/n3" >/dev/null
    n1=$("$top_srcdir/test/zkserver.sh" hosts "$d/n1")
    # Until it has noticed (srvr: no mode), it may still serve a while.
    for _ in $(seq 150); do
        [ "$("$top_srcdir/test/zkserver.sh" mode "$d/n1")" = down ] && break
        sleep 0.1
    done
    expect 5 "no session within 2 s (--connect-timeout)" run -s "$n1" --connect-timeout 2 /q -- echo RAN || rc=1
    grep -q "^zklock: $n1: accepts connections but is not serving requests (an ensemble member without a quorum?)$" "$tmp/xe" || rc=1
    "$top_srcdir/test/zkserver.sh" kill "$d" >/dev/null
    return $rc
}

# Credentials for an ACL-protected path: from a file (others may not
# read it), $ZKLOCK_AUTH_FILE or $ZKLOCK_AUTH, never from an option;
# without them, or with wrong ones, "not authorized" (6) naming the path
# and the identity, never the secret. --acl private: what zklock
# creates only these credentials may change.
t_credentials() {
    local p="$base-acl" digest rc
    digest=$(python3 -c 'import base64,hashlib; print(base64.b64encode(hashlib.sha1(b"alice:s3cret").digest()).decode())')
    # World may read and delete (so the test can clean up), not create.
    "$ZKCLI" -server "$H" create /zkl-test "" >/dev/null 2>&1
    "$ZKCLI" -server "$H" create "$p" "" "digest:alice:$digest:cdrwa,world:anyone:rd" >"$tmp/zkcli" 2>&1
    grep -q "Created $p" "$tmp/zkcli" || { cat "$tmp/zkcli"; return 1; }
    credentials "$p"
    rc=$?
    "$ZKCLI" -server "$H" deleteall "$p" >/dev/null 2>&1
    return $rc
}

credentials() {
    local p=$1 out st
    (umask 077; printf '# zklock\ndigest:alice:s3cret\n' > "$tmp/auth")
    expect 6 "^zklock: not authorized: ZooKeeper refused access to $p: its ACL (or a parent's) does not let a client without credentials in" \
        run -s "$H" "$p" -- echo RAN || return 1
    out=$("$ZKLOCK" run -s "$H" --auth-file "$tmp/auth" "$p" -- echo RAN) && [ "$out" = RAN ] || return 1
    out=$(ZKLOCK_AUTH_FILE=$tmp/auth "$ZKLOCK" run -s "$H" "$p" -- echo RAN) && [ "$out" = RAN ] || return 1
    out=$(ZKLOCK_AUTH=digest:alice:s3cret "$ZKLOCK" run -s "$H" "$p" -- echo RAN) && [ "$out" = RAN ] || return 1
    # The secret is zklock's: COMMAND does not see it.
    out=$(ZKLOCK_AUTH=digest:alice:s3cret "$ZKLOCK" run -s "$H" "$p" -- sh -c 'echo "${ZKLOCK_AUTH-unset}"') &&
        [ "$out" = unset ] || { echo "COMMAND saw ZKLOCK_AUTH: $out"; return 1; }
    ZKLOCK_AUTH=digest:alice:wrong expect 6 "ZooKeeper refused access to $p: its ACL (or a parent's) does not let digest:alice in" \
        run -s "$H" "$p" -- echo RAN || return 1
    ! grep -q wrong "$tmp/xe" || return 1
    ZKLOCK_AUTH=nosuchscheme:x expect 6 "ZooKeeper refused the credentials (nosuchscheme): authentication failed" \
        run -s "$H" "$p" -- echo RAN || return 1
    # Never on the command line, and not echoed when tried.
    expect 2 "credentials are never taken on the command line" \
        run -s "$H" --auth digest:alice:s3cret "$p" -- echo RAN || return 1
    expect 2 "credentials are never taken on the command line" \
        revoke -s "$H" --password s3cret "$p" || return 1
    expect 2 "it takes a file name: credentials never go on the command line" \
        run -s "$H" --auth-file digest:alice:s3cret "$p" -- echo RAN || return 1
    ! grep -q s3cret "$tmp/xe" || return 1
    # A file others may read is refused; a line that is no credential.
    chmod 644 "$tmp/auth"
    expect 2 "(--auth-file) is open to others (mode 0644): refusing its credentials" \
        run -s "$H" --auth-file "$tmp/auth" "$p" -- echo RAN || return 1
    (umask 077; printf 'alice\n' > "$tmp/auth2")
    expect 2 "line 1 of .*auth2 (--auth-file) is not scheme:credential" \
        run -s "$H" --auth-file "$tmp/auth2" "$p" -- echo RAN || return 1
    ZKLOCK_AUTH=alice expect 2 'line 1 of $ZKLOCK_AUTH is not scheme:credential' run -s "$H" "$p" -- echo RAN || return 1
    expect 2 "--acl private needs credentials" run -s "$H" --acl private "$p/job" -- echo RAN || return 1
    # --acl private: the lock path zklock creates and its lock node let
    # the world read only: others can neither queue nor revoke.
    rm -f "$tmp/go" "$tmp/up"
    ZKLOCK_AUTH=digest:alice:s3cret "$ZKLOCK" run -s "$H" --acl private --revocable "$p/job" -- \
        sh -c 'touch "$1/up"; trap "exit 0" TERM; '"$until_go" sh "$tmp" &
    local holder=$!
    wait_file "$tmp/up" 10 || { touch "$tmp/go"; return 1; }
    "$ZKCLI" -server "$H" getAcl "$p/job" >"$tmp/acl" 2>&1
    grep -q "'world,'anyone" "$tmp/acl" && grep -q "'digest,'alice:" "$tmp/acl" || { cat "$tmp/acl"; touch "$tmp/go"; return 1; }
    expect 6 "ZooKeeper refused access to $p/job" run -s "$H" -n "$p/job" -- echo RAN || { touch "$tmp/go"; return 1; }
    expect 6 "ZooKeeper refused access to $p/job" revoke -s "$H" "$p/job" || { touch "$tmp/go"; return 1; }
    ZKLOCK_AUTH=digest:alice:s3cret "$ZKLOCK" revoke -s "$H" "$p/job" | grep -q "let go" || { touch "$tmp/go"; return 1; }
    wait_ok $holder
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
check tree_zklock_killed t_tree_zklock_killed
check tree_lost t_tree_lost
check tree_revoked t_tree_revoked
check tree_leftovers t_tree_leftovers
check tree_guard_killed t_tree_guard_killed
check tree_group_killed t_tree_group_killed
check tree_trap_cleanup t_tree_trap_cleanup
check tree_ctrl_c t_tree_ctrl_c
check tree_exec_failure t_tree_exec_failure
check tree_signal_after_exit t_tree_signal_after_exit
check no_server t_no_server
check bad_servers t_bad_servers
check bad_paths t_bad_paths
check usage_one_line t_usage_one_line
check w_number_hint t_w_number_hint
check busy_timeout_codes t_busy_timeout_codes
check flock_c t_flock_c
check revoke_report t_revoke_report
check connection_limit t_connection_limit
check no_quorum t_no_quorum
check credentials t_credentials
finish
