#!/usr/bin/env bash
# Interop with Curator 5 (Debian's libcurator-recipes-java): a zklock
# process and a Java process on one lock path exclude each other and
# share one FIFO queue, in both directions: InterProcessMutex, both sides
# of InterProcessReadWriteLock, revocation (Revoker, makeRevocable),
# InterProcessSemaphoreV2, LeaderLatch (zklock elect) and a zklock set of
# several paths (zklock run PATH PATH ...) beside InterProcessMutex.
set -u
SUITE=curator
. "$(dirname "$0")/lib.sh"
base="/zkl-test/curator-$$"
J=/usr/share/java
CP=$J/curator-recipes.jar:$J/curator-framework.jar:$J/curator-client.jar:$J/zookeeper.jar:$J/zookeeper-jute.jar:$J/guava.jar:$J/slf4j-api.jar:$J/slf4j-nop.jar

wait_line() { # file word seconds
    local i
    for i in $(seq $(( $3 * 10 ))); do
        grep -q "^$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "no $2 line in $1:"; cat "$1"
    return 1
}
field() { grep "^$2" "$1" | head -1 | cut -d' ' -f"$3"; }
peer() { java -cp "$tmp/classes:$CP" CuratorPeer "$H" "$@"; }

t_compile() {
    mkdir -p "$tmp/classes"
    javac -d "$tmp/classes" -cp "$CP" "$top_srcdir/test/CuratorPeer.java"
}

t_curator_holds_zklock_waits() {
    local p="$base/c2z"
    peer "$p" -1 2000 > "$tmp/peer1" &
    local cur=$!
    wait_line "$tmp/peer1" ACQUIRED 20 || return 1
    # zklock sees Curator's node as the holder and waits behind it.
    "$ZKLOCK" run -s "$H" -n "$p" -- true 2>/dev/null
    [ $? = 1 ] || { echo "try-lock succeeded while Curator held"; return 1; }
    "$ZKLOCK" run -s "$H" -t 20 "$p" -- sh -c 'date +%s%3N' > "$tmp/z1" || return 1
    wait_ok $cur || return 1
    local rel=$(field "$tmp/peer1" RELEASED 2) got=$(cat "$tmp/z1")
    [ "$got" -ge "$rel" ] || { echo "zklock ran at $got, Curator released at $rel"; return 1; }
    wait_count "$p" 0 5
}

zklock_excludes_curator() { # path, zklock kind flag (or ""), Curator kind
    # zklock holds until Curator has been refused and queued again (a
    # file), not for a fixed 3 s: a JVM starting on a loaded machine has
    # taken longer.
    local p=$1
    rm -f "$tmp/z2.go"
    "$ZKLOCK" run -s "$H" $2 "$p" -- sh -c 'i=0; while [ ! -e "$1" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done; date +%s%3N' sh "$tmp/z2.go" > "$tmp/z2" &
    local z=$!
    wait_count "$p" 1 5 || return 1
    # Curator cannot get it while zklock holds...
    peer "$p" 300 0 $3 > "$tmp/peer2" || return 1
    grep -q '^TIMEOUT' "$tmp/peer2" || { cat "$tmp/peer2"; return 1; }
    # ...and gets it once zklock lets go.
    peer "$p" 20000 0 $3 > "$tmp/peer3" &
    local c=$!
    wait_count "$p" 2 20 || return 1
    touch "$tmp/z2.go"
    wait_ok $c $z || return 1
    local acq=$(field "$tmp/peer3" ACQUIRED 2) end=$(cat "$tmp/z2")
    [ -n "$acq" ] && [ "$acq" -ge "$end" ] || { echo "Curator acquired at $acq, zklock ended at $end"; return 1; }
    wait_count "$p" 0 5
}

t_zklock_holds_curator_waits() { zklock_excludes_curator "$base/z2c" "" mutex; }

t_mixed_queue_fifo() {
    # zklock A holds; Curator B queues; zklock C queues behind B. Grants
    # go A, B, C: each honours the other's place in the queue.
    # A holds until both others are queued (a file), not for a fixed
    # time: a Curator JVM and an ASan build starting on a loaded machine
    # have taken longer than the 3 s it held before.
    local p="$base/mix"
    rm -f "$tmp/mix.go"
    "$ZKLOCK" run -s "$H" "$p" -- sh -c 'i=0; while [ ! -e "$1" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done; date +%s%3N' sh "$tmp/mix.go" > "$tmp/a" &
    local a=$!
    wait_count "$p" 1 5 || return 1
    peer "$p" 30000 1000 > "$tmp/b" &
    local b=$!
    wait_count "$p" 2 20 || return 1
    "$ZKLOCK" run -s "$H" "$p" -- sh -c 'date +%s%3N' > "$tmp/c" &
    local c=$!
    wait_count "$p" 3 10 || return 1
    touch "$tmp/mix.go"
    wait_ok $a $b $c || return 1
    local a=$(cat "$tmp/a") bacq=$(field "$tmp/b" ACQUIRED 2) brel=$(field "$tmp/b" RELEASED 2) c=$(cat "$tmp/c")
    echo "A released $a, B held $bacq..$brel, C ran $c"
    [ -n "$bacq" ] && [ "$bacq" -ge "$a" ] && [ "$c" -ge "$brel" ] || return 1
    wait_count "$p" 0 5
}

t_curator_waiter_gives_up() {
    # zklock A holds; Curator B queues and gives up while A still holds;
    # zklock C, queued behind B, is woken by B's node going and must not
    # take the lock before A lets go.
    # A holds until B has given up (a file), and B waits 5 s, long
    # enough for C to start and queue behind it on a loaded machine.
    local p="$base/giveup"
    rm -f "$tmp/giveup.go"
    "$ZKLOCK" run -s "$H" "$p" -- sh -c 'i=0; while [ ! -e "$1" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done; date +%s%3N' sh "$tmp/giveup.go" > "$tmp/ga" &
    local a=$!
    wait_count "$p" 1 5 || return 1
    peer "$p" 5000 0 > "$tmp/gb" &
    local b=$!
    wait_count "$p" 2 20 || return 1
    "$ZKLOCK" run -s "$H" "$p" -- sh -c 'date +%s%3N' > "$tmp/gc" &
    local c=$!
    wait_count "$p" 3 5 || return 1
    wait_ok $b || return 1
    touch "$tmp/giveup.go"
    wait_ok $a $c || return 1
    local a=$(cat "$tmp/ga") c=$(cat "$tmp/gc")
    grep -q '^TIMEOUT' "$tmp/gb" || { echo "Curator did not give up:"; cat "$tmp/gb"; return 1; }
    echo "A released $a, C ran $c"
    [ -n "$c" ] && [ "$c" -ge "$a" ] || return 1
    wait_count "$p" 0 5
}

t_curator_writer_excludes_zklock() {
    local p="$base/cw"
    peer "$p" -1 2500 write > "$tmp/cw" &
    local cur=$!
    wait_line "$tmp/cw" ACQUIRED 20 || return 1
    "$ZKLOCK" run -s "$H" -r -n "$p" -- true 2>/dev/null
    [ $? = 1 ] || { echo "zklock read while Curator wrote"; return 1; }
    "$ZKLOCK" run -s "$H" -w -n "$p" -- true 2>/dev/null
    [ $? = 1 ] || { echo "zklock write while Curator wrote"; return 1; }
    "$ZKLOCK" run -s "$H" -r -t 20 "$p" -- sh -c 'date +%s%3N' > "$tmp/cwr" || return 1
    wait_ok $cur || return 1
    local rel=$(field "$tmp/cw" RELEASED 2) got=$(cat "$tmp/cwr")
    [ "$got" -ge "$rel" ] || { echo "zklock read at $got, Curator released at $rel"; return 1; }
    wait_count "$p" 0 5
}

t_zklock_writer_excludes_curator_reader() { zklock_excludes_curator "$base/zw" -w read; }

t_readers_hold_together() {
    # A zklock reader holds; a Curator reader gets in beside it, and the
    # other way round; a Curator writer queued behind them both waits.
    # The zklock reader holds until the checks are done, and the Curator
    # reader long enough for the writer's JVM to start beside it (a JVM
    # on a loaded machine has taken more than the 1.5 s it held before).
    local p="$base/rr"
    rm -f "$tmp/rr.go"
    "$ZKLOCK" run -s "$H" -r "$p" -- sh -c 'i=0; while [ ! -e "$1" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done; date +%s%3N' sh "$tmp/rr.go" > "$tmp/rr1" &
    local z=$!
    wait_count "$p" 1 5 || return 1
    peer "$p" 2000 6000 read > "$tmp/rr2" &
    local r=$!
    wait_line "$tmp/rr2" ACQUIRED 20 || return 1
    peer "$p" -1 0 write > "$tmp/rr3" &
    local w=$!
    wait_count "$p" 3 20 || return 1
    "$ZKLOCK" run -s "$H" -r -n "$p" -- true 2>/dev/null
    [ $? = 1 ] || { echo "a zklock reader jumped a queued Curator writer"; return 1; }
    touch "$tmp/rr.go"
    wait_ok $z $r $w || return 1
    local end=$(cat "$tmp/rr1") racq=$(field "$tmp/rr2" ACQUIRED 2) wacq=$(field "$tmp/rr3" ACQUIRED 2)
    echo "zklock read until $end, Curator read at $racq, Curator wrote at $wacq"
    [ -n "$racq" ] && [ "$racq" -lt "$end" ] && [ -n "$wacq" ] && [ "$wacq" -ge "$end" ] || return 1
    wait_count "$p" 0 5
}

t_curator_revoker_reaches_zklock() {
    local p="$base/rvz" node st
    "$ZKLOCK" run -s "$H" --revocable "$p" -- sleep 30 2> "$tmp/rvz.err" &
    local pid=$!
    wait_count "$p" 1 5 || return 1
    sleep 0.3
    node=$("$ZKLOCK" ls -s "$H" "$p")
    peer "$p/$node" 0 0 revoke > "$tmp/rvz" || return 1
    wait $pid
    st=$?
    cat "$tmp/rvz.err"
    [ $st = 143 ] || { echo "exit $st, wanted 143 (SIGTERM on revocation)"; return 1; }
    grep -q "revocation of $p requested" "$tmp/rvz.err" || return 1
    wait_count "$p" 0 5
}

t_zklock_revoke_reaches_curator() {
    local p="$base/rvc"
    peer "$p" -1 30000 revocable > "$tmp/rvc" &
    local cur=$!
    wait_line "$tmp/rvc" ACQUIRED 20 || return 1
    # Exit 0: every holder asked (one) let go within --wait.
    "$ZKLOCK" revoke -s "$H" "$p" > "$tmp/rvo" || { cat "$tmp/rvo"; return 1; }
    [ "$(grep -c "let go" "$tmp/rvo")" = 1 ] || { cat "$tmp/rvo"; return 1; }
    wait_line "$tmp/rvc" RELEASED 10 || return 1
    wait_ok $cur || return 1
    grep -q '^REVOKED' "$tmp/rvc" || { cat "$tmp/rvc"; return 1; }
    wait_count "$p" 0 5
}

t_semaphore_mixed_never_over_limit() {
    # Three Curator InterProcessSemaphoreV2 users and three zklock -L 2
    # users on one semaphore: every one gets a lease, at most two hold
    # at any time, and both kinds hold side by side.
    local p="$base/sem" i f pids=
    # The JVMs take a second or more to start: the zklock users join
    # once a Curator user holds, so that the two kinds meet.
    for i in 1 2 3; do
        peer "$p" 60000 700 sem2 > "$tmp/cs$i" &
        pids="$pids $!"
    done
    wait_line "$tmp/cs1" ACQUIRED 30 || return 1
    for i in 1 2 3; do
        "$ZKLOCK" run -s "$H" -L 2 "$p" -- sh -c \
            'echo "S $(date +%s%3N)"; sleep 0.7; echo "E $(date +%s%3N)"' > "$tmp/zs$i" &
        pids="$pids $!"
    done
    # shellcheck disable=SC2086
    wait_ok $pids || return 1
    : > "$tmp/ev"
    for i in 1 2 3; do
        f=$(field "$tmp/cs$i" ACQUIRED 2); [ -n "$f" ] || { cat "$tmp/cs$i"; return 1; }
        echo "$f 1 c" >> "$tmp/ev"; echo "$(field "$tmp/cs$i" RELEASED 2) 0 c" >> "$tmp/ev"
        f=$(field "$tmp/zs$i" S 2); [ -n "$f" ] || { cat "$tmp/zs$i"; return 1; }
        echo "$f 1 z" >> "$tmp/ev"; echo "$(field "$tmp/zs$i" E 2) 0 z" >> "$tmp/ev"
    done
    # Ends sort before starts at the same millisecond.
    sort -n -k1,1 -k2,2 "$tmp/ev" | awk '
        $2 == 1 { n++; k[$3]++; if (n > most) most = n; if (k["c"] && k["z"]) mixed = 1 }
        $2 == 0 { n--; k[$3]-- }
        END { print "most holders at once:", most, "mixed:", mixed + 0;
              exit !(most == 2 && mixed) }' || return 1
    wait_count "$p/leases" 0 5 || return 1
    wait_count "$p/locks" 0 5
}

# LeaderLatch and zklock elect on one path: one leader at a time,
# passed on in join order both ways when the leader leaves: zklock A
# leads, Curator B follows, zklock C follows B. Curator reads A's id
# from A's node as the leader's; ls -l shows B's node as a latch.
t_latch_leadership_both_ways() {
    local p="$base/latch"
    # A leads until the checks below are done (a file), not for a fixed
    # 3 s: a Curator JVM and two electors starting on a loaded machine
    # have taken longer.
    rm -f "$tmp/la.go"
    "$ZKLOCK" elect -s "$H" --id zk-a "$p" -- sh -c 'echo "S $(date +%s%3N)"; i=0; while [ ! -e "$1" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done; echo "E $(date +%s%3N)"' sh "$tmp/la.go" > "$tmp/la" &
    local a=$!
    wait_line "$tmp/la" S 10 || return 1
    peer "$p" -1 1500 latch cur-b > "$tmp/lb" &
    local b=$!
    wait_count "$p" 2 20 || return 1
    "$ZKLOCK" elect -s "$H" --id zk-c "$p" -- sh -c 'echo "S $(date +%s%3N)"' > "$tmp/lc" &
    local c=$!
    wait_count "$p" 3 5 || return 1
    "$ZKLOCK" ls -s "$H" -l "$p" > "$tmp/ll" || return 1
    cat "$tmp/ll"
    sed -n 1p "$tmp/ll" | grep -Eq '^latch \* _c_[0-9a-f-]{36}-latch-[0-9]{10} zk-a$' || return 1
    sed -n 2p "$tmp/ll" | grep -Eq '^latch - _c_[0-9a-f-]{36}-latch-[0-9]{10} cur-b$' || return 1
    sed -n 3p "$tmp/ll" | grep -Eq '^latch - _c_[0-9a-f-]{36}-latch-[0-9]{10} zk-c$' || return 1
    "$ZKLOCK" elect -s "$H" -n "$p" -- true 2>/dev/null
    [ $? = 1 ] || { echo "a zklock elector led beside zklock A"; return 1; }
    touch "$tmp/la.go"
    wait_ok $a $b $c || return 1
    local aend=$(field "$tmp/la" E 2) bacq=$(field "$tmp/lb" ACQUIRED 2) brel=$(field "$tmp/lb" RELEASED 2) c=$(field "$tmp/lc" S 2)
    echo "A led until $aend, B led $bacq..$brel, C led from $c; B first saw $(field "$tmp/lb" LEADER 3)"
    [ "$(field "$tmp/lb" LEADER 3)" = zk-a ] || return 1
    ! grep -q '^LOST' "$tmp/lb" || { echo "Curator lost its leadership"; return 1; }
    [ -n "$bacq" ] && [ "$bacq" -ge "$aend" ] && [ -n "$c" ] && [ "$c" -ge "$brel" ] || return 1
    wait_count "$p" 0 5
}

# The other way round: Curator leads; zklock elect neither leads beside
# it (-n) nor in time (-t), leaving nothing; a waiting elector leads once
# Curator leaves, and Curator saw itself as the leader.
t_latch_curator_leads() {
    local p="$base/latch2"
    peer "$p" -1 3000 latch cur-a > "$tmp/l2a" &
    local cur=$!
    wait_line "$tmp/l2a" ACQUIRED 20 || return 1
    "$ZKLOCK" ls -s "$H" -l "$p" | grep -Eq '^latch \* _c_[0-9a-f-]{36}-latch-[0-9]{10} cur-a$' || return 1
    "$ZKLOCK" elect -s "$H" -n "$p" -- true 2>/dev/null
    [ $? = 1 ] || { echo "zklock led while Curator led"; return 1; }
    "$ZKLOCK" elect -s "$H" -t 0.5 "$p" -- true 2>/dev/null
    [ $? = 4 ] || { echo "zklock led while Curator led"; return 1; } # timed out
    [ "$(count "$p")" = 1 ] || return 1
    "$ZKLOCK" elect -s "$H" --id zk-b "$p" -- sh -c 'date +%s%3N' > "$tmp/l2b" || return 1
    wait_ok $cur || return 1
    local rel=$(field "$tmp/l2a" RELEASED 2) got=$(cat "$tmp/l2b")
    echo "Curator led until $rel, zklock led at $got"
    [ "$(field "$tmp/l2a" LEADER 3)" = cur-a ] || return 1
    ! grep -q '^LOST' "$tmp/l2a" || return 1
    [ -n "$got" ] && [ "$got" -ge "$rel" ] || return 1
    wait_count "$p" 0 5
}

# A Curator InterProcessMutex on one path of a zklock set: the set gives
# up after -t (exit 4, COMMAND not run, no node left on either path);
# a set that waits runs once Curator releases. And the other way: while
# a zklock set holds, Curator cannot take either of its paths.
t_curator_mutex_and_zklock_set() {
    local p1="$base/set1" p2="$base/set2" t0 el st
    peer "$p2" -1 4000 > "$tmp/ms" &
    local cur=$!
    wait_line "$tmp/ms" ACQUIRED 20 || return 1
    t0=$(date +%s%N)
    "$ZKLOCK" run -s "$H" -t 2 "$p1" "$p2" -- echo SHOULD-NOT-RUN > "$tmp/mo" 2> "$tmp/me"
    st=$?
    el=$(( ($(date +%s%N) - t0) / 1000000 ))
    cat "$tmp/me"
    [ $st = 4 ] || { echo "exit $st"; return 1; } # timed out
    [ "$el" -ge 2000 ] || { echo "gave up after $el ms"; return 1; }
    grep -q "timed out: not acquired within 2 s" "$tmp/me" || return 1
    ! grep -q SHOULD-NOT-RUN "$tmp/mo" || return 1
    [ "$(count "$p1")" = 0 ] && [ "$(count "$p2")" = 1 ] || return 1
    # The set holds until both Curator try-locks have been refused: two
    # JVM starts on a loaded machine have taken longer than the 3 s it
    # held before.
    rm -f "$tmp/ms.go"
    "$ZKLOCK" run -s "$H" -t 30 "$p2" "$p1" -- sh -c 'date +%s%3N; i=0; while [ ! -e "$1" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done; date +%s%3N' sh "$tmp/ms.go" > "$tmp/ms2" &
    local set=$!
    wait_line "$tmp/ms" RELEASED 20 || return 1
    wait_count "$p1" 1 10 || return 1
    wait_count "$p2" 1 10 || return 1
    peer "$p1" 300 0 > "$tmp/ms3" || return 1
    grep -q '^TIMEOUT' "$tmp/ms3" || { echo "Curator got $p1 from a zklock set"; cat "$tmp/ms3"; return 1; }
    peer "$p2" 300 0 > "$tmp/ms3" || return 1
    grep -q '^TIMEOUT' "$tmp/ms3" || { echo "Curator got $p2 from a zklock set"; cat "$tmp/ms3"; return 1; }
    touch "$tmp/ms.go"
    wait_ok $cur $set || return 1
    local rel=$(field "$tmp/ms" RELEASED 2) got=$(head -1 "$tmp/ms2") end=$(sed -n 2p "$tmp/ms2")
    echo "Curator released $rel, the set ran $got..$end"
    [ -n "$end" ] && [ "$got" -ge "$rel" ] || return 1
    wait_count "$p1" 0 5 && wait_count "$p2" 0 5
}

check compile_peer t_compile
check curator_holds_zklock_waits t_curator_holds_zklock_waits
check zklock_holds_curator_waits t_zklock_holds_curator_waits
check mixed_queue_fifo t_mixed_queue_fifo
check curator_waiter_gives_up t_curator_waiter_gives_up
check curator_writer_excludes_zklock t_curator_writer_excludes_zklock
check zklock_writer_excludes_curator_reader t_zklock_writer_excludes_curator_reader
check readers_hold_together t_readers_hold_together
check curator_revoker_reaches_zklock t_curator_revoker_reaches_zklock
check zklock_revoke_reaches_curator t_zklock_revoke_reaches_curator
check semaphore_mixed_never_over_limit t_semaphore_mixed_never_over_limit
check latch_leadership_both_ways t_latch_leadership_both_ways
check latch_curator_leads t_latch_curator_leads
check curator_mutex_and_zklock_set t_curator_mutex_and_zklock_set
finish
