#!/usr/bin/env bash
# `make soak MINUTES=N [NODES=3] [NETNS=1]`: the safety checker
# (test/soak.c) against a throw-away ZooKeeper of its own (NODES=1, the
# default) or a throw-away ensemble of NODES nodes, which it kills and
# restarts among the other faults. Prints the checker's JSON line last;
# exits non-zero when a safety figure is not zero.
#
# ZKL_SOAK_NETNS=1 (NETNS=1): on the namespaced cluster (test/netns.sh),
# each node and each worker in a network namespace of its own, with the
# faults on their links; needs root (CAP_NET_ADMIN): without it, says so
# and exits 77 (skipped). Leftovers of runs killed before they could
# clean up are removed first; the run's own go on exit, INT and TERM.
#
#   test/soak.sh MINUTES [zkl-soak options...]   (ZKL_SOAK_NODES=N)
set -uo pipefail
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
minutes=${1:-1}
shift || true
nodes=${ZKL_SOAK_NODES:-1}
netns=${ZKL_SOAK_NETNS:-}
[ "$netns" = 0 ] && netns=
zks=$top_srcdir/test/zkserver.sh
nets=$top_srcdir/test/netns.sh
run=$$

if [ -n "$netns" ]; then
    if ! why=$(bash "$nets" can); then
        echo "soak: SKIP: no namespaced cluster on this machine: $why" >&2
        exit 77
    fi
    bash "$nets" cleanup
fi

work=$(mktemp -d /tmp/zklock-soak.XXXXXX)
soak_pid=
finish() {
    trap - EXIT INT TERM
    [ -n "$soak_pid" ] && kill "$soak_pid" 2>/dev/null
    "$zks" kill "$work/zk" >/dev/null 2>&1
    if [ -n "$netns" ]; then
        bash "$nets" down "$run"
        # What the switch did, which it printed on its way out.
        grep '^netswitch:' "$work/switch.log" 2>/dev/null | sed 's/^/# /' >&2
    fi
    rm -rf "$work"
}
trap finish EXIT
trap 'finish; exit 130' INT
trap 'finish; exit 143' TERM

if [ -n "$netns" ]; then
    # Every worker zkl-soak may have (MAX_WORKERS) gets a namespace.
    bash "$nets" up "$work" "$run" "$nodes" 16 "$top_builddir/test/zkl-netswitch" || {
        echo "soak: could not make the namespaced cluster" >&2
        exit 1
    }
    export ZKL_ZK_NETNS=$run
fi
if [ "$nodes" -gt 1 ]; then
    hosts=$("$zks" ensemble "$work/zk" "$nodes")
else
    hosts=$("$zks" start "$work/zk")
fi || {
    echo "soak: could not start ZooKeeper" >&2
    exit 1
}
unset ZKL_ZK_NETNS
echo "# ZooKeeper at $hosts ($work/zk)" >&2
cmd=("$top_builddir/test/zkl-soak" --hosts "$hosts" --server-dir "$work/zk"
     --zkserver "$zks" --minutes "$minutes")
if [ -n "$netns" ]; then
    echo "# namespaced cluster, run $run (netns.sh list)" >&2
    # The checker lives in the hub, where netns.sh down finds it.
    cmd=(ip netns exec "zkl${run}h" "${cmd[@]}" --netns "$work")
fi
# In the background, so that INT and TERM are handled at once (a trap
# waits for a foreground child).
"${cmd[@]}" "$@" &
soak_pid=$!
wait "$soak_pid"
rc=$?
soak_pid=
exit $rc
