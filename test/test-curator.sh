#!/usr/bin/env bash
# Interop with Curator's InterProcessMutex (Debian's libcurator-recipes-
# java): a zklock process and a Java process on one lock path exclude
# each other and share one FIFO queue, in both directions.
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

t_zklock_holds_curator_waits() {
    local p="$base/z2c"
    "$ZKLOCK" run -s "$H" "$p" -- sh -c 'sleep 3; date +%s%3N' > "$tmp/z2" &
    wait_count "$p" 1 5 || return 1
    # Curator cannot get it while zklock holds...
    peer "$p" 200 0 > "$tmp/peer2" || return 1
    grep -q '^TIMEOUT' "$tmp/peer2" || { cat "$tmp/peer2"; return 1; }
    # ...and gets it once zklock lets go.
    peer "$p" 20000 0 > "$tmp/peer3" || return 1
    wait
    local acq=$(field "$tmp/peer3" ACQUIRED 2) end=$(cat "$tmp/z2")
    [ -n "$acq" ] && [ "$acq" -ge "$end" ] || { echo "Curator acquired at $acq, zklock ended at $end"; return 1; }
    wait_count "$p" 0 5
}

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

check compile_peer t_compile
check curator_holds_zklock_waits t_curator_holds_zklock_waits
check zklock_holds_curator_waits t_zklock_holds_curator_waits
check mixed_queue_fifo t_mixed_queue_fifo
check curator_waiter_gives_up t_curator_waiter_gives_up
finish
