#!/usr/bin/env bash
# Interop with Curator 5 (Debian's libcurator-recipes-java): a zklock
# process and a Java process on one lock path exclude each other and
# share one FIFO queue, in both directions: InterProcessMutex, both sides
# of InterProcessReadWriteLock, revocation (Revoker, makeRevocable) and
# InterProcessSemaphoreV2.
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
    wait_line "$tmp/peer1" ACQUIRED 20 || return 1
    # zklock sees Curator's node as the holder and waits behind it.
    "$ZKLOCK" run -s "$H" -n "$p" -- true 2>/dev/null
    [ $? = 1 ] || { echo "try-lock succeeded while Curator held"; return 1; }
    "$ZKLOCK" run -s "$H" -t 20 "$p" -- sh -c 'date +%s%3N' > "$tmp/z1" || return 1
    wait
    local rel=$(field "$tmp/peer1" RELEASED 2) got=$(cat "$tmp/z1")
    [ "$got" -ge "$rel" ] || { echo "zklock ran at $got, Curator released at $rel"; return 1; }
    wait_count "$p" 0 5
}

zklock_excludes_curator() { # path, zklock kind flag (or ""), Curator kind
    local p=$1
    "$ZKLOCK" run -s "$H" $2 "$p" -- sh -c 'sleep 3; date +%s%3N' > "$tmp/z2" &
    wait_count "$p" 1 5 || return 1
    # Curator cannot get it while zklock holds...
    peer "$p" 300 0 $3 > "$tmp/peer2" || return 1
    grep -q '^TIMEOUT' "$tmp/peer2" || { cat "$tmp/peer2"; return 1; }
    # ...and gets it once zklock lets go.
    peer "$p" 20000 0 $3 > "$tmp/peer3" || return 1
    wait
    local acq=$(field "$tmp/peer3" ACQUIRED 2) end=$(cat "$tmp/z2")
    [ -n "$acq" ] && [ "$acq" -ge "$end" ] || { echo "Curator acquired at $acq, zklock ended at $end"; return 1; }
    wait_count "$p" 0 5
}

t_zklock_holds_curator_waits() { zklock_excludes_curator "$base/z2c" "" mutex; }

t_mixed_queue_fifo() {
    # zklock A holds; Curator B queues; zklock C queues behind B. Grants
    # go A, B, C: each honours the other's place in the queue.
    local p="$base/mix"
    "$ZKLOCK" run -s "$H" "$p" -- sh -c 'sleep 3; date +%s%3N' > "$tmp/a" &
    wait_count "$p" 1 5 || return 1
    peer "$p" 30000 1000 > "$tmp/b" &
    wait_count "$p" 2 20 || return 1
    "$ZKLOCK" run -s "$H" "$p" -- sh -c 'date +%s%3N' > "$tmp/c" &
    wait_count "$p" 3 5 || return 1
    wait
    local a=$(cat "$tmp/a") bacq=$(field "$tmp/b" ACQUIRED 2) brel=$(field "$tmp/b" RELEASED 2) c=$(cat "$tmp/c")
    echo "A released $a, B held $bacq..$brel, C ran $c"
    [ -n "$bacq" ] && [ "$bacq" -ge "$a" ] && [ "$c" -ge "$brel" ] || return 1
    wait_count "$p" 0 5
}

t_curator_waiter_gives_up() {
    # zklock A holds; Curator B queues and gives up while A still holds;
    # zklock C, queued behind B, is woken by B's node going and must not
    # take the lock before A lets go.
    local p="$base/giveup"
    "$ZKLOCK" run -s "$H" "$p" -- sh -c 'sleep 4; date +%s%3N' > "$tmp/ga" &
    wait_count "$p" 1 5 || return 1
    peer "$p" 1500 0 > "$tmp/gb" &
    wait_count "$p" 2 20 || return 1
    "$ZKLOCK" run -s "$H" "$p" -- sh -c 'date +%s%3N' > "$tmp/gc" &
    wait_count "$p" 3 5 || return 1
    wait
    local a=$(cat "$tmp/ga") c=$(cat "$tmp/gc")
    grep -q '^TIMEOUT' "$tmp/gb" || { echo "Curator did not give up:"; cat "$tmp/gb"; return 1; }
    echo "A released $a, C ran $c"
    [ -n "$c" ] && [ "$c" -ge "$a" ] || return 1
    wait_count "$p" 0 5
}

t_curator_writer_excludes_zklock() {
    local p="$base/cw"
    peer "$p" -1 2500 write > "$tmp/cw" &
    wait_line "$tmp/cw" ACQUIRED 20 || return 1
    "$ZKLOCK" run -s "$H" -r -n "$p" -- true 2>/dev/null
    [ $? = 1 ] || { echo "zklock read while Curator wrote"; return 1; }
    "$ZKLOCK" run -s "$H" -w -n "$p" -- true 2>/dev/null
    [ $? = 1 ] || { echo "zklock write while Curator wrote"; return 1; }
    "$ZKLOCK" run -s "$H" -r -t 20 "$p" -- sh -c 'date +%s%3N' > "$tmp/cwr" || return 1
    wait
    local rel=$(field "$tmp/cw" RELEASED 2) got=$(cat "$tmp/cwr")
    [ "$got" -ge "$rel" ] || { echo "zklock read at $got, Curator released at $rel"; return 1; }
    wait_count "$p" 0 5
}

t_zklock_writer_excludes_curator_reader() { zklock_excludes_curator "$base/zw" -w read; }

t_readers_hold_together() {
    # A zklock reader holds; a Curator reader gets in beside it, and the
    # other way round; a Curator writer queued behind them both waits.
    local p="$base/rr"
    "$ZKLOCK" run -s "$H" -r "$p" -- sh -c 'sleep 4; date +%s%3N' > "$tmp/rr1" &
    wait_count "$p" 1 5 || return 1
    peer "$p" 2000 1500 read > "$tmp/rr2" &
    wait_line "$tmp/rr2" ACQUIRED 20 || return 1
    peer "$p" -1 0 write > "$tmp/rr3" &
    wait_count "$p" 3 20 || return 1
    "$ZKLOCK" run -s "$H" -r -n "$p" -- true 2>/dev/null
    [ $? = 1 ] || { echo "a zklock reader jumped a queued Curator writer"; return 1; }
    wait
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
    wait_line "$tmp/rvc" ACQUIRED 20 || return 1
    "$ZKLOCK" revoke -s "$H" "$p" | grep -q "from 1 holder" || return 1
    wait_line "$tmp/rvc" RELEASED 10 || return 1
    wait
    grep -q '^REVOKED' "$tmp/rvc" || { cat "$tmp/rvc"; return 1; }
    wait_count "$p" 0 5
}

t_semaphore_mixed_never_over_limit() {
    # Three Curator InterProcessSemaphoreV2 users and three zklock -L 2
    # users on one semaphore: every one gets a lease, at most two hold
    # at any time, and both kinds hold side by side.
    local p="$base/sem" i f
    for i in 1 2 3; do
        peer "$p" 60000 700 sem2 > "$tmp/cs$i" &
        "$ZKLOCK" run -s "$H" -L 2 "$p" -- sh -c \
            'echo "S $(date +%s%3N)"; sleep 0.7; echo "E $(date +%s%3N)"' > "$tmp/zs$i" &
    done
    wait
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
finish
