#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine, starts a throw-away
# local ZooKeeper, and runs the demo: one thread queues on 10,000 locks
# held by another session and acquires them all as they are released.
#   examples/run-demo.sh [demo options, e.g. -n 20000]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
bash test/setup.sh

zkdir=$(mktemp -d /tmp/zklock-demo.XXXXXX)
trap '"$top/test/zkserver.sh" kill "$zkdir" >/dev/null 2>&1; rm -rf "$zkdir"' EXIT INT TERM
echo "== starting ZooKeeper"
hosts=$("$top/test/zkserver.sh" start "$zkdir")
echo "== ZooKeeper serving at $hosts"
"$top/build/plain/examples/demo-many-waiters" -s "$hosts" "$@"
