#!/usr/bin/env bash
# The safety checker on the namespaced cluster (test/netns.sh): a 5-node
# ensemble (ZKL_NETNS_NODES) and every worker in a network namespace of
# its own, for ZKL_NETNS_MINUTES (default 1.5), with the faults on their
# links: workers cut from the servers (both ways, one way, from their own
# server), lossy links, a follower cut from the leader, a minority from
# the majority, the leader from its peers; besides freezes past the
# session timeout and kills of the leader and of followers. Every safety
# figure must stay 0, every kind of fault must have happened (and the
# switch must have dropped, lost and delayed frames), and the run must
# leave nothing behind: no namespace, no server, no directory; nor may a
# run killed with SIGKILL, once `netns.sh cleanup` has run. A short run
# with workers that break every promise on purpose must make every
# safety figure non-zero.
#
# Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN, a tap device): elsewhere
# each check is SKIPPED, saying why, and counts neither as passed nor
# failed; ZKL_TEST_REQUIRE_NETNS=1 (.ci/run) makes that a failure. The
# long run is `make soak MINUTES=30 NODES=5 NETNS=1` (test/run-long.sh).
SUITE=netns
. "$(dirname "$0")/lib.sh"

nets=$top_srcdir/test/netns.sh
nodes=${ZKL_NETNS_NODES:-5}

# soak MINUTES NODES [zkl-soak options]: the namespaced soak.sh.
soak() {
    local m=$1 n=$2
    shift 2
    ZKL_SOAK_NETNS=1 ZKL_SOAK_NODES=$n bash "$top_srcdir/test/soak.sh" "$m" "$@" \
        >"$tmp/soak.json" 2>"$tmp/soak.log"
}

# The run id (the namespaces' names) and the directory of the soak.sh
# whose stderr is file $1, as it said them.
run_of() { sed -n 's/^# namespaced cluster, run \([0-9]*\).*/\1/p' "$1"; }
dir_of() { sed -n 's/^# ZooKeeper at .* (\(.*\)\/zk)$/\1/p' "$1"; }

# What the run whose soak.sh wrote file $1 left behind: its namespaces,
# its directory, processes that run from it (a server, the checker), its
# entry in netns.sh's registry.
leftovers() {
    local run dir left=0 ns
    run=$(run_of "$1")
    dir=$(dir_of "$1")
    [ -n "$run" ] && [ -n "$dir" ] || { echo "no run id or directory in $1"; return 2; }
    for ns in $(ip netns list | awk '{print $1}' | grep -E "^zkl$run[hsw][0-9]*$"); do
        echo "left: namespace $ns"
        left=1
    done
    [ -e "$dir" ] && { echo "left: $dir"; left=1; }
    pgrep -af "$dir/" && { echo "left: processes of $dir"; left=1; }
    [ -e "/run/zkl-netns/$run" ] && { echo "left: /run/zkl-netns/$run"; left=1; }
    return $left
}

safe_on_real_links() {
    soak "${ZKL_NETNS_MINUTES:-1.5}" "$nodes"
    local rc=$? f ok=0
    cp "$tmp/soak.log" "$tmp/main.log"
    grep -E "$amiss" "$tmp/soak.log" | head -20
    cat "$tmp/soak.json"
    [ -s "$tmp/soak.json" ] || { tail -20 "$tmp/soak.log"; return 1; }
    cp "$tmp/soak.json" "$tmp/main.json"
    [ "$rc" = 0 ] || { echo "zkl-soak exited $rc"; ok=1; }
    for f in $figures events_missing; do
        [ "$(field "$f")" = 0 ] || { echo "$f is $(field "$f")"; ok=1; }
    done
    [ "$(field grants)" -ge 50 ] || { echo "too few grants"; ok=1; }
    return $ok
}

# Each kind of fault came at least once, and the switch did drop, lose
# and delay frames.
every_fault_happened() {
    local k ok=0 line
    cp "$tmp/main.json" "$tmp/soak.json"
    for k in net_client_cut net_client_one_way net_client_from_server \
        net_client_lossy net_follower_from_leader \
        net_minority_from_majority net_leader_isolated net_peer_lossy \
        node_restart sigstop_past_timeout; do
        [ "$(field "faults_$k")" -gt 0 ] || { echo "no $k fault"; ok=1; }
    done
    [ "$(field leader_restarts)" -ge 1 ] || { echo "no leader killed"; ok=1; }
    line=$(grep '^# netswitch:' "$tmp/main.log")
    echo "$line"
    [[ $line =~ dropped\ by\ cuts\ [1-9][0-9]*,\ lost\ [1-9][0-9]*,\ delayed\ [1-9] ]] ||
        { echo "the switch did not drop, lose and delay frames"; ok=1; }
    return $ok
}

nothing_left() {
    leftovers "$tmp/main.log"
}

# Workers that break every promise on purpose (soak.c's --sabotage 63),
# from their namespaces: each safety figure must catch its own, so the
# namespaced run's verdict is no weaker than the proxies' (test-soak.sh).
catches_sabotage() {
    # Half a minute: in 18 s on a loaded CI machine no lease was ever
    # refused, so leases_over_limit had nothing to show.
    soak 0.5 3 --sabotage 63 --fault-ms 400
    local rc=$? f ok=0
    [ -s "$tmp/soak.json" ] || { tail -20 "$tmp/soak.log"; return 1; }
    [ "$rc" != 0 ] || { echo "the sabotaged run passed"; ok=1; }
    for f in $figures; do
        [ "$(field "$f")" -gt 0 ] || { echo "$f stayed 0"; ok=1; }
    done
    cat "$tmp/soak.json"
    return $ok
}

# A run killed with SIGKILL cannot clean up: its namespaces, servers and
# checker stay, until `netns.sh cleanup` (which every namespaced soak.sh
# runs first) finds its owner gone and removes them.
killed_run_cleaned_up() {
    local pid i
    ZKL_SOAK_NETNS=1 ZKL_SOAK_NODES=3 setsid bash "$top_srcdir/test/soak.sh" 1 \
        >/dev/null 2>"$tmp/killed.log" &
    pid=$!
    for i in $(seq 300); do
        grep -q '^soak .*workers x' "$tmp/killed.log" && break
        sleep 0.1
    done
    sleep 3 # faults under way
    kill -KILL "$pid"
    wait "$pid" 2>/dev/null
    leftovers "$tmp/killed.log" >"$tmp/left"
    case $? in
        0) echo "SIGKILL left nothing: the test proves nothing"; return 1 ;;
        2) cat "$tmp/left" "$tmp/killed.log"; return 1 ;;
    esac
    bash "$nets" cleanup || return 1
    leftovers "$tmp/killed.log"
}

if ! why=$(bash "$nets" can); then
    for t in safe_on_real_links every_fault_happened nothing_left \
        catches_sabotage killed_run_cleaned_up; do
        if [ "${ZKL_TEST_REQUIRE_NETNS:-}" = 1 ]; then
            check "$t" sh -c "echo 'required (ZKL_TEST_REQUIRE_NETNS=1), but: $why'; false"
        else
            skip "$t" "no namespaced cluster here: $why"
        fi
    done
    finish
    exit
fi

check safe_on_real_links safe_on_real_links
[ -f "$tmp/main.json" ] && sed 's/^/# /' "$tmp/main.json"
if [ -f "$tmp/main.json" ]; then
    check every_fault_happened every_fault_happened
else
    check every_fault_happened sh -c 'echo "the run gave no verdict"; false'
fi
check nothing_left nothing_left
check catches_sabotage catches_sabotage
check killed_run_cleaned_up killed_run_cleaned_up
finish
