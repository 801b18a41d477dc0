#!/usr/bin/env bash
# `make soak MINUTES=N [NODES=3]`: the safety checker (test/soak.c)
# against a throw-away ZooKeeper of its own (NODES=1, the default) or a
# throw-away ensemble of NODES nodes, which it kills and restarts among
# the other faults. Prints the checker's JSON line last; exits non-zero
# when a safety figure is not zero.
#
#   test/soak.sh MINUTES [zkl-soak options...]   (ZKL_SOAK_NODES=N)
set -uo pipefail
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
minutes=${1:-1}
shift || true
nodes=${ZKL_SOAK_NODES:-1}

work=$(mktemp -d /tmp/zklock-soak.XXXXXX)
trap '"$top_srcdir/test/zkserver.sh" kill "$work/zk" >/dev/null 2>&1; rm -rf "$work"' EXIT INT TERM
if [ "$nodes" -gt 1 ]; then
    hosts=$("$top_srcdir/test/zkserver.sh" ensemble "$work/zk" "$nodes")
else
    hosts=$("$top_srcdir/test/zkserver.sh" start "$work/zk")
fi || {
    echo "soak: could not start ZooKeeper" >&2
    exit 1
}
echo "# ZooKeeper at $hosts ($work/zk)" >&2
"$top_builddir/test/zkl-soak" --hosts "$hosts" --server-dir "$work/zk" \
    --zkserver "$top_srcdir/test/zkserver.sh" --minutes "$minutes" "$@"
