#!/usr/bin/env bash
# `make soak MINUTES=N`: the safety checker (test/soak.c) against a
# throw-away ZooKeeper of its own, which it kills and restarts among the
# other faults. Prints the checker's JSON line last; exits non-zero when
# a safety figure is not zero.
#
#   test/soak.sh MINUTES [zkl-soak options...]
set -uo pipefail
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
minutes=${1:-1}
shift || true

work=$(mktemp -d /tmp/zklock-soak.XXXXXX)
trap '"$top_srcdir/test/zkserver.sh" kill "$work/zk" >/dev/null 2>&1; rm -rf "$work"' EXIT INT TERM
if ! hosts=$("$top_srcdir/test/zkserver.sh" start "$work/zk"); then
    echo "soak: could not start a ZooKeeper server" >&2
    exit 1
fi
echo "# ZooKeeper at $hosts ($work/zk)" >&2
"$top_builddir/test/zkl-soak" --hosts "$hosts" --server-dir "$work/zk" \
    --zkserver "$top_srcdir/test/zkserver.sh" --minutes "$minutes" "$@"
