#!/usr/bin/env bash
# Makes and tears down the namespaced test cluster: one network namespace
# per ZooKeeper node and per worker of zkl-soak (a client group), each
# with one link, a tap device eth0, into a switch (zkl-netswitch,
# test/netswitch.c) that runs in a hub namespace of the run's own. The
# switch is where the soak breaks links (netswitch.c says why not a
# kernel bridge and tc netem). Nothing is made in the root namespace.
#
#   netns.sh can                  exit 0 when this machine can make them;
#                                 else prints why not (exit 1)
#   netns.sh up DIR RUNID NODES WORKERS SWITCH
#                                 make them; DIR/ctl is the switch's
#                                 command FIFO, DIR/switch.log its output,
#                                 DIR/runid the RUNID
#   netns.sh down RUNID           end every process in the run's
#                                 namespaces (the switch first, which
#                                 then prints what it did), delete them
#   netns.sh cleanup              down for every run whose owner is gone
#   netns.sh list                 the runs whose namespaces exist
#
# Names and addresses, which zkserver.sh (ZKL_ZK_NETNS) and zkl-soak
# (--netns) derive the same way:
#   zkl<RUNID>h    the hub: the switch and the checker, 10.77.0.254
#   zkl<RUNID>sN   ZooKeeper node N (1..7), 10.77.1.N
#   zkl<RUNID>wK   worker K (0..15), 10.77.2.(K+1)
# RUNID is the pid of the run's owner (soak.sh), so that a run whose owner
# died without cleaning up (SIGKILL) is known for a leftover; several runs
# at once never share a name. A netns name is global to the machine,
# everything else (links, addresses, ports) is inside the run's own
# namespaces.
set -uo pipefail

ns_prefix=zkl
registry=/run/zkl-netns # RUNID -> its DIR, for cleanup

usage() {
    echo "usage: $0 can | up DIR RUNID NODES WORKERS SWITCH | down RUNID | cleanup | list" >&2
    exit 2
}

# The run ids whose namespaces exist.
runs() {
    ip netns list 2>/dev/null | sed -n "s/^$ns_prefix\([0-9][0-9]*\)[hsw][0-9]*\( .*\)\{0,1\}$/\1/p" | sort -u
}

names() { # RUNID: the run's namespaces
    ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$ns_prefix$1[hsw][0-9]*$"
}

can() {
    local probe=${ns_prefix}probe$$ why=""
    if [ ! -e /dev/net/tun ]; then
        why="no /dev/net/tun (CONFIG_TUN)"
    elif ! command -v ip >/dev/null; then
        why="no ip(8) (package iproute2)"
    elif ! ip netns add "$probe" 2>/dev/null; then
        why="ip netns add refused (needs CAP_NET_ADMIN and CAP_SYS_ADMIN, e.g. root)"
    elif ! ip -n "$probe" tuntap add dev eth0 mode tap 2>/dev/null; then
        why="cannot make a tap device in a namespace"
    fi
    ip netns del "$probe" 2>/dev/null
    if [ -n "$why" ]; then
        echo "$why"
        return 1
    fi
}

# down RUNID: kill what runs inside (the hub first: the checker there
# would start servers anew), then delete the namespaces; their links go
# with them. Repeated until nothing is left, as a process may fork while
# we look.
down() {
    local run=$1 ns pids i dir
    [[ $run =~ ^[0-9]+$ ]] || usage
    for ns in $(names "$run"); do
        case $ns in *h)
            # The switch prints what it did on SIGTERM.
            pids=$(ip netns pids "$ns" 2>/dev/null)
            [ -n "$pids" ] && kill -TERM $pids 2>/dev/null
            for _ in $(seq 20); do
                [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break
                sleep 0.05
            done ;;
        esac
    done
    for i in $(seq 50); do
        pids=""
        for ns in $(names "$run"); do
            pids="$pids $(ip netns pids "$ns" 2>/dev/null)"
        done
        [ -z "${pids// /}" ] && break
        # shellcheck disable=SC2086
        kill -KILL $pids 2>/dev/null
        sleep 0.1
    done
    for ns in $(names "$run"); do
        ip netns del "$ns" 2>/dev/null || { echo "netns: could not delete $ns" >&2; }
    done
    if [ -s "$registry/$run" ]; then
        dir=$(cat "$registry/$run")
        # Only a leftover's directory: a live owner removes its own.
        [ "${2:-}" = leftover ] && case $dir in /tmp/zklock-*) rm -rf "$dir" ;; esac
    fi
    rm -f "$registry/$run"
    [ -z "$(names "$run")" ]
}

owner_alive() {
    local st
    [ -e "/proc/$1" ] || return 1
    st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null || echo Z)
    [ "$st" != Z ]
}

cleanup() {
    local run rc=0
    for run in $(runs); do
        owner_alive "$run" && continue
        echo "netns: removing the leftovers of run $run (its owner is gone)" >&2
        down "$run" leftover || rc=1
    done
    return $rc
}

# up DIR RUNID NODES WORKERS SWITCH
up() {
    local dir=$1 run=$2 nodes=$3 workers=$4 switch=$5 ports="h" i p pid
    [[ $run =~ ^[0-9]+$ ]] && [ "$nodes" -ge 1 ] && [ "$nodes" -le 7 ] &&
        [ "$workers" -ge 1 ] && [ "$workers" -le 16 ] || usage
    # A run id is a pid: one of a dead run may have come back to us.
    [ -z "$(names "$run")" ] || down "$run" leftover
    mkdir -p "$dir" "$registry"
    echo "$dir" > "$registry/$run"
    echo "$run" > "$dir/runid"
    for i in $(seq "$nodes"); do ports="$ports s$i"; done
    for i in $(seq 0 $((workers - 1))); do ports="$ports w$i"; done
    for p in $ports; do
        local ns=$ns_prefix$run$p addr
        case $p in
            h) addr=10.77.0.254 ;;
            s*) addr=10.77.1.${p#s} ;;
            w*) addr=10.77.2.$((${p#w} + 1)) ;;
        esac
        ip netns add "$ns" &&
            ip -n "$ns" link set lo up &&
            ip -n "$ns" tuntap add dev eth0 mode tap &&
            ip -n "$ns" addr add "$addr/16" dev eth0 &&
            ip -n "$ns" link set eth0 up || {
            echo "netns: could not make $ns" >&2
            return 1
        }
    done
    rm -f "$dir/ctl"
    mkfifo "$dir/ctl" || return 1
    # The switch lives in the hub, where down finds it; setsid: no
    # terminal's signal reaches it, only down's.
    # shellcheck disable=SC2086
    setsid ip netns exec "$ns_prefix${run}h" "$switch" "$run" "$dir/ctl" $ports \
        >"$dir/switch.log" 2>&1 </dev/null &
    pid=$!
    for _ in $(seq 100); do
        grep -q '^ready$' "$dir/switch.log" 2>/dev/null && return 0
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    echo "netns: the switch did not start:" >&2
    cat "$dir/switch.log" >&2
    return 1
}

case ${1:-} in
    can) can ;;
    up) [ $# = 6 ] || usage; shift; up "$@" ;;
    down) [ $# = 2 ] || usage; down "$2" ;;
    cleanup) cleanup ;;
    list) runs ;;
    *) usage ;;
esac
