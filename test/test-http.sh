#!/usr/bin/env bash
# The evhttp example as a test: two server processes share one store and
# take concurrent increments of one key; with zklock serializing them no
# update is lost.
set -u
SUITE=http
. "$(dirname "$0")/lib.sh"
SRV="$top_builddir/examples/http-counter"

http() { # port method path -> body
    exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
    printf '%s %s HTTP/1.0\r\nContent-Length: 0\r\n\r\n' "$2" "$3" >&3
    local resp
    resp=$(cat <&3)
    exec 3>&-
    case "$resp" in "HTTP/1.0 200"*|"HTTP/1.1 200"*) ;; *) echo "$resp" >&2; return 1 ;; esac
    printf '%s\n' "$resp" | tail -n 1 | tr -d '\r'
}

# Below the range of outgoing connections' local ports (see zkserver.sh).
free_port() {
    local p lo=32768
    read -r lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
    [ "$lo" -gt 12000 ] || lo=32768
    while :; do
        p=$(( 10000 + RANDOM % (lo - 10000) ))
        (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo $p; return; }
    done
}

t_no_lost_updates() {
    local p1 p2 key="k$$" i ok=0
    p1=$(free_port)
    "$SRV" -s "$H" -p "$p1" -d "$tmp" > "$tmp/s1.log" 2>&1 &
    p2=$(free_port)
    [ "$p2" = "$p1" ] && p2=$(free_port)
    "$SRV" -s "$H" -p "$p2" -d "$tmp" > "$tmp/s2.log" 2>&1 &
    for i in $(seq 50); do
        http "$p1" GET /counter/x >/dev/null 2>&1 && http "$p2" GET /counter/x >/dev/null 2>&1 && ok=1 && break
        sleep 0.1
    done
    [ $ok = 1 ] || { cat "$tmp"/s*.log; return 1; }
    local pids=()
    for i in $(seq 40); do
        http "$p1" POST "/counter/$key" > "$tmp/r1.$i" &
        pids+=($!)
        http "$p2" POST "/counter/$key" > "$tmp/r2.$i" &
        pids+=($!)
    done
    wait_ok "${pids[@]}" || return 1
    local v
    v=$(http "$p1" GET "/counter/$key")
    [ "$v" = 80 ] || { echo "counter is $v, want 80"; cat "$tmp"/s*.log; return 1; }
    # Every answer distinct: each increment saw the previous one.
    [ "$(cat "$tmp"/r*.* | sort -n | uniq | wc -l)" = 80 ] || { echo "duplicate answers"; return 1; }
    [ -z "$("$ZKLOCK" ls -s "$H" "/zklock-http/$key")" ]
}

check no_lost_updates t_no_lost_updates
finish
