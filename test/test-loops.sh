#!/usr/bin/env bash
# The example program of each loop adapter, run against the server: each
# short one takes a lock and lets it go; two instances of the libuv TCP
# server take concurrent requests and serialize those of one key.
set -u
SUITE=loops
. "$(dirname "$0")/lib.sh"
EX="$top_builddir/examples"

one_lock() { # example
    local out
    out=$("$EX/$1" "$H" "/zklock-demo/$1-$$") || return 1
    echo "$out"
    echo "$out" | grep -q "^acquired /zklock-demo/$1-$$, token [1-9]" &&
        echo "$out" | grep -q "^released$" &&
        [ "$(count "/zklock-demo/$1-$$")" = 0 ]
}

for e in libevent-lock libev-lock glib-lock sdevent-lock poll-lock; do
    if [ -x "$EX/$e" ]; then
        check "$e" one_lock "$e"
    else
        check "$e" false # the adapter was not built: CI installs every loop
    fi
done

# Two servers, eight connections, three keys: every request answered,
# those of one key one at a time (tokens growing), then a clean stop.
t_libuv_server() {
    local root="/zklock-demo/uv-$$" p1 p2 i rc=0
    "$EX/libuv-server" "$H" 0 "$root" 10 >"$tmp/s1" 2>&1 &
    local s1=$!
    "$EX/libuv-server" "$H" 0 "$root" 10 >"$tmp/s2" 2>&1 &
    local s2=$!
    for i in $(seq 50); do
        p1=$(awk '/^listening on/ {print $3}' "$tmp/s1")
        p2=$(awk '/^listening on/ {print $3}' "$tmp/s2")
        [ -n "$p1" ] && [ -n "$p2" ] && break
        sleep 0.1
    done
    python3 "$top_srcdir/test/loop-client.py" "$p1,$p2" a:40,b:20,c:5 8 || rc=1
    kill -TERM $s1 $s2
    wait $s1 || { echo "server 1 exited $?"; rc=1; }
    wait $s2 || { echo "server 2 exited $?"; rc=1; }
    [ "$(count "$root/a")$(count "$root/b")$(count "$root/c")" = 000 ] || rc=1
    return $rc
}
if [ -x "$EX/libuv-server" ]; then
    check libuv-server t_libuv_server
else
    check libuv-server false
fi

finish
