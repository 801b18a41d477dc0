#!/usr/bin/env bash
# ngx_http_zklock_module in Debian's own nginx: three nginx instances
# (two workers each; the third with three sessions a worker) on loopback ports in front of one
# slow origin that counts, per key, the requests that overlap
# (test/nginx-origin.c), and a ZooKeeper server of this script's own (it
# is stopped in one check). Concurrent clients (test/nginx-load.py) go
# through all three instances. What must hold:
#   - zklock KEY: the requests of one key never overlap at the origin,
#     and their fencing tokens only grow;
#   - zklock KEY shared beside zklock KEY: readers together, a writer
#     alone (and readers do share);
#   - zklock_cache_lock: one fetch of a key at the origin at a time, and
#     one per instance per expiry; hits do not wait;
#   - a client that goes away while waiting takes its node with it;
#   - a worker killed with SIGKILL mid-hold lets the next request through
#     once its session ends;
#   - nginx -s reload under load loses no request and leaves no node;
#   - ZooKeeper stopped: zklock_unavailable fail_open runs the request,
#     fail_closed answers 503; back, the locks work again;
#   - bad configurations are refused by nginx -t, saying why;
#   - valgrind on a single-process nginx: no error in the module's code.
#
# Needs the module (a build configured with nginx-dev: nginx-module/)
# and nginx; skips, saying why, unless ZKL_TEST_REQUIRE_NGINX is set.
set -u
SUITE=nginx
ZKL_TEST_HOSTS=${ZKL_TEST_HOSTS:-unused}
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/test/nginx-fleet.sh"
load=$top_srcdir/test/nginx-load.py

why=$(fleet_check)
if [ -n "$why" ]; then
    if [ -n "${ZKL_TEST_REQUIRE_NGINX:-}" ]; then
        echo "FAIL: $SUITE/build ($why, and ZKL_TEST_REQUIRE_NGINX is set)"
        failed=1
    else
        skip suite "$why"
    fi
    finish
    exit
fi
trap 'fleet_stop; kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir -p "$tmp/www/s"
printf 'page\n<!--#include virtual="/sub/x?delay_ms=2500" -->\nend\n' >"$tmp/www/s/x.html"
# The third instance spreads its locks over three sessions per worker:
# every check across the fleet runs with them too.
export ZKL_FLEET_N3_HTTP="zklock_sessions 3;"
if ! fleet_zk || ! fleet_origin >"$tmp/fleet.log" 2>&1 ||
    ! fleet_start 3 2 >>"$tmp/fleet.log" 2>&1; then
    echo "FAIL: $SUITE/start"; cat "$tmp/fleet.log"; echo "0 passed, 1 failed"; exit 1
fi

# The lock nodes left under the module's prefix, through zklock ls.
nodes_left() {
    local k total=0 c
    for k in "$@"; do
        c=$("$ZKLOCK" ls -s "$zkh" "/zklock/nginx/$k" 2>/dev/null | wc -l)
        total=$((total + c))
    done
    echo "$total"
}

keys_of() { local i; for i in $(seq 0 $(($1 - 1))); do printf '%%2Fk%s ' "$i"; done; }

t_config_errors() {
    local rc=0
    try_conf() { # what, a word the message must hold, http lines, location lines
        cat >"$tmp/bad.conf" <<EOF
load_module $module;
error_log $tmp/bad.log;
pid $tmp/bad.pid;
events {}
http { $3 server { listen 127.0.0.1:1; location / { $4 } } }
EOF
        if out=$(ngx -t -q -c "$tmp/bad.conf" 2>&1); then
            echo "accepted: $1"; rc=1
        elif ! echo "$out" | grep -qF -- "$2"; then
            echo "no word of \"$2\" for $1: $out"; rc=1
        fi
    }
    try_conf "a bad server list" zklock_servers "zklock_servers 'a b c';" ""
    try_conf "a second zklock_servers" duplicate "zklock_servers 127.0.0.1:1; zklock_servers 127.0.0.1:2;" ""
    try_conf "a short session" zklock_session_timeout "zklock_session_timeout 100ms;" ""
    try_conf "no session" "zklock_sessions: between 1 and 64" "zklock_sessions 0;" ""
    try_conf "65 sessions" "zklock_sessions: between 1 and 64" "zklock_sessions 65;" ""
    try_conf "two locks" duplicate "" "zklock \$uri; zklock_cache_lock \$uri;"
    try_conf "timeout=0" "zklock: invalid parameter \"timeout=0\"" "" "zklock \$uri timeout=0;"
    try_conf "an unknown parameter" "zklock: invalid parameter \"sharde\"" "" "zklock \$uri sharde;"
    try_conf "shared on a cache lock" "zklock_cache_lock: invalid parameter \"shared\"" "" "zklock_cache_lock \$uri shared;"
    try_conf "a prefix with //" "zklock_prefix" "zklock_prefix /a//b;" ""
    try_conf "a prefix ending in /" "ends with '/'" "zklock_prefix /a/;" ""
    try_conf "a relative prefix" "zklock_prefix" "zklock_prefix a;" ""
    try_conf "a bad unavailable mode" "invalid value \"maybe\"" "zklock_unavailable maybe;" ""
    try_conf "zklock_status with an argument" "zklock_status" "" "zklock_status on;"
    # Debian's ZooKeeper C client has neither TLS nor SASL: the directives
    # say so (test-tls.sh runs them on a build whose client has both).
    if ! grep -q '^#define ZKL_HAVE_ZK_TLS 1' "$top_builddir/config.h"; then
        try_conf "TLS without it" "has no TLS" "zklock_tls /dev/null /dev/null /dev/null;" ""
        try_conf "SASL without it" "has no SASL" "zklock_sasl u password_file=/dev/null;" ""
    fi
    # And a good one passes.
    cat >"$tmp/good.conf" <<EOF
load_module $module;
error_log $tmp/good.log;
pid $tmp/good.pid;
events {}
http { zklock_servers $zkh; zklock_prefix /x/y;
  server { listen 127.0.0.1:1; location / { zklock \$uri shared timeout=2s on_timeout=pass; } } }
EOF
    ngx -t -q -c "$tmp/good.conf" || rc=1
    # A key of $proxy_ variables (empty when the lock is taken) is taken
    # with a warning, in both spellings.
    local k out
    for k in '$scheme$proxy_host$request_uri' '${proxy_host}$uri'; do
        cat >"$tmp/warn.conf" <<EOF
load_module $module;
error_log $tmp/warn.log;
pid $tmp/warn.pid;
events {}
http { zklock_servers $zkh;
  server { listen 127.0.0.1:1; location / { zklock_cache_lock $k; } } }
EOF
        out=$(ngx -t -c "$tmp/warn.conf" 2>&1) || { echo "refused: $k: $out"; rc=1; }
        echo "$out" | grep -qF 'uses $proxy_ variables' || { echo "no warning for $k: $out"; rc=1; }
    done
    return $rc
}

t_exclusive_across_fleet() {
    local out
    reset_origin
    out=$(python3 "$load" --targets "$T" --path '/w/k{key}?delay_ms=20' \
        --keys 30 --requests 600 --concurrency 300) || return 1
    echo "load: $out"; echo "origin: $(stats)"
    [ "$(jfield "$out" ok)" = 600 ] || return 1
    [ "$(stat_field max_overlap)" = 1 ] || return 1
    [ "$(stat_field conflicts)" = 0 ] || return 1
    [ "$(stat_field token_regressions)" = 0 ] || return 1
    [ "$(stat_field requests)" = 600 ] || return 1
    # shellcheck disable=SC2046
    [ "$(nodes_left $(keys_of 30))" = 0 ]
}

t_readers_share_writer_alone() {
    local r w
    reset_origin
    python3 "$load" --targets "$T" --path '/r/rw{key}?delay_ms=30' \
        --keys 5 --requests 400 --concurrency 200 >"$tmp/r.json" &
    r=$!
    python3 "$load" --targets "$T" --path '/w/rw{key}?delay_ms=10' \
        --keys 5 --requests 60 --concurrency 30 >"$tmp/w.json" &
    w=$!
    wait_ok $r $w || return 1
    echo "readers: $(cat "$tmp/r.json")"; echo "writers: $(cat "$tmp/w.json")"
    echo "origin: $(stats)"
    [ "$(jfield "$(cat "$tmp/r.json")" ok)" = 400 ] || return 1
    [ "$(jfield "$(cat "$tmp/w.json")" ok)" = 60 ] || return 1
    [ "$(stat_field conflicts)" = 0 ] || return 1
    # Readers did run together (a read lock that excluded would pass the
    # conflict check too).
    [ "$(stat_field max_readers)" -gt 1 ]
}

t_cache_lock_one_fetch() {
    local out req
    reset_origin
    out=$(python3 "$load" --targets "$T" --path '/c/k{key}?delay_ms=50&max_age=2' \
        --keys 20 --seconds 6 --concurrency 120) || return 1
    echo "load: $out"; echo "origin: $(stats)"
    [ "$(jfield "$out" sent)" = "$(jfield "$out" ok)" ] || return 1
    [ "$(stat_field max_overlap)" = 1 ] || return 1
    [ "$(stat_field early_refetches)" = 0 ] || return 1
    # Hits: far fewer fetches than requests (20 keys, 3 instances, 6 s at
    # 2 s of validity: some 200 fetches at most, against thousands).
    req=$(stat_field requests)
    [ "$req" -gt 0 ] && [ "$req" -lt $(( $(jfield "$out" sent) / 4 )) ]
}

# zklock_cache_lock inside one nginx: its requests for one expired key
# wait for the one of their worker that asks ZooKeeper, instead of each
# queueing there in turn only to find the entry fresh. A lock node's
# sequence number counts the nodes made and gone under its key before
# it: some 80 for 40 requests queued in ZooKeeper, at most 4 for the two
# workers' leaders.
t_cache_waiters_collapse() {
    local url i pids codes l key node seq holder
    reset_origin
    url="http://127.0.0.1:${ports[1]}/c/cw?delay_ms=1000&max_age=60"
    pids=()
    for i in $(seq 40); do
        curl -s -m 30 -o /dev/null -w '%{http_code} ' "$url" >>"$tmp/cw.codes" &
        pids+=($!)
    done
    wait_ok "${pids[@]}" || return 1
    codes=$(cat "$tmp/cw.codes")
    echo "answers: $codes"; echo "origin: $(stats)"
    [ "$(echo "$codes" | tr ' ' '\n' | grep -c '^200$')" = 40 ] || return 1
    [ "$(stat_field requests)" = 1 ] || return 1
    # A request that bypasses the cache holds the lock for a second.
    curl -s -m 30 -o /dev/null -H 'X-Nocache: 1' "$url" &
    holder=$!
    for _ in $(seq 40); do
        key=$("$ZKLOCK" ls -s "$zkh" /zklock/nginx 2>/dev/null | grep '%2Fc%2Fcw%3F' | head -1)
        [ -n "$key" ] && node=$("$ZKLOCK" ls -s "$zkh" "/zklock/nginx/$key" 2>/dev/null | head -1)
        [ -n "${node:-}" ] && break
        sleep 0.05
    done
    wait_ok $holder || return 1
    echo "key $key, node after the burst: ${node:-none}"
    seq=$(echo "${node:-}" | grep -oE '[0-9]{10}$') || return 1
    [ $((10#$seq)) -le 4 ]
}

# A worker's cache lock followers: one whose deadline passes before its
# leader's fetch ends is answered as the location says (503 here), one
# whose client goes away is gone; the leader's fetch fills the entry for
# the next. Then a leader whose client goes away mid-fetch (nginx drops
# its fetch): its followers look again, one fetches, the rest hit.
t_cache_followers_give_up() {
    local u h lead gone f pids
    reset_origin
    u="http://127.0.0.1:${ports[1]}/ct/fg?delay_ms=2500&max_age=60"
    curl -s -m 30 -o /dev/null "$u" &
    lead=$!
    sleep 0.3
    curl -s -m 0.5 -o /dev/null "$u" &
    gone=$!
    h=$(curl -s -m 30 -o /dev/null -D - "$u" | tr -d '\r')
    echo "$h"
    echo "$h" | grep -q '^HTTP/1.1 503' || return 1
    echo "$h" | grep -q '^X-Zklock-Status: refused:timeout' || return 1
    wait_ok $lead || return 1
    wait $gone
    h=$(curl -s -m 30 -o /dev/null -D - "$u" | tr -d '\r')
    echo "$h" | grep -q '^X-Zklock-Status: fresh' || { echo "$h"; return 1; }
    echo "origin: $(stats)"
    [ "$(stat_field requests)" = 1 ] || return 1
    reset_origin
    u="http://127.0.0.1:${ports[1]}/c/lg?delay_ms=1500&max_age=60"
    curl -s -m 0.5 -o /dev/null "$u" &
    lead=$!
    sleep 0.2
    pids=()
    for f in 1 2 3; do
        curl -s -m 30 -o /dev/null "$u" &
        pids+=($!)
    done
    wait $lead
    wait_ok "${pids[@]}" || return 1
    echo "origin: $(stats)"
    [ "$(stat_field requests)" = 2 ] && [ "$(stat_field max_overlap)" = 1 ]
}

# zklock_sessions 3: each worker of the third instance has three
# sessions, all connected (its locks are spread over them by path).
t_sessions_per_worker() {
    local out
    for _ in $(seq 100); do
        out=$(curl -s -m 2 "http://127.0.0.1:${ports[3]}/status")
        [ "$(jfield "$out" sessions)" = 3 ] && [ "$(jfield "$out" connected)" = 3 ] && return 0
        sleep 0.05
    done
    echo "$out"; return 1
}

# A request that ran without the lock (on_timeout=pass) and is sent
# on by its answer (X-Accel-Redirect) to a location that locks another
# key: there it takes that key's lock, it does not run beside its
# holder (the decision "passed" was for the first key only). (The
# origin counts the passed request apart: key=, since it ran beside the
# first key's holder, as on_timeout=pass says.)
t_redirect_after_pass() {
    local holder h1 h2
    reset_origin
    curl -s -m 30 -o /dev/null "http://127.0.0.1:${ports[1]}/pt/rp?delay_ms=2500" &
    holder=$!
    curl -s -m 30 -o /dev/null "http://127.0.0.1:${ports[2]}/w/rq?delay_ms=2500" &
    h2=$!
    sleep 0.3
    h1=$(curl -s -m 30 -o /dev/null -D - \
        "http://127.0.0.1:${ports[3]}/pt/rp?delay_ms=10&key=passed&accel=/w/rq%3Fdelay_ms%3D10" | tr -d '\r')
    echo "$h1"
    wait_ok $holder $h2 || return 1
    echo "origin: $(stats)"
    echo "$h1" | grep -q '^HTTP/1.1 200' || return 1
    echo "$h1" | grep -q '^X-Zklock-Status: acquired' || return 1
    [ "$(stat_field conflicts)" = 0 ] && [ "$(stat_field max_overlap)" = 1 ]
}

# A request that holds one key's lock and is sent by its answer
# (X-Accel-Redirect) to a location that locks another key: it lets the
# first go and waits for the second's holder there (it fetched beside
# that holder when it kept the first).
t_redirect_while_held() {
    local h2 h1
    reset_origin
    curl -s -m 30 -o /dev/null "http://127.0.0.1:${ports[2]}/w/rh2?delay_ms=2500" &
    h2=$!
    sleep 0.3
    h1=$(curl -s -m 30 -o /dev/null -D - \
        "http://127.0.0.1:${ports[3]}/w/rh1?delay_ms=10&accel=/w/rh2%3Fdelay_ms%3D10" | tr -d '\r')
    echo "$h1"
    wait_ok $h2 || return 1
    echo "origin: $(stats)"
    echo "$h1" | grep -q '^HTTP/1.1 200' || return 1
    echo "$h1" | grep -q '^X-Zklock-Status: acquired' || return 1
    [ "$(stat_field conflicts)" = 0 ] && [ "$(stat_field max_overlap)" = 1 ] || return 1
    # Both locks let go once it is done.
    for _ in $(seq 30); do
        [ "$(nodes_left %2Frh1 %2Frh2)" = 0 ] && return 0
        sleep 0.1
    done
    echo "nodes left: $(nodes_left %2Frh1 %2Frh2)"; return 1
}

# Cache lock followers ride out a short ZooKeeper outage: woken while
# the session is away (their leader's answer was not cacheable), they
# keep waiting for what is left of their timeout instead of being
# refused (fail_closed) or all sent to the origin (fail_open); once
# ZooKeeper is back they take the lock in turn.
t_followers_ride_out_a_blip() {
    local u pids i codes
    reset_origin
    rm -f "$tmp/blip.codes"
    u="http://127.0.0.1:${ports[1]}/c/blip?delay_ms=1000&max_age=0"
    pids=()
    for i in 1 2 3 4 5; do
        curl -s -m 60 -o /dev/null -w '%{http_code} ' "$u" >>"$tmp/blip.codes" &
        pids+=($!)
        [ "$i" = 1 ] && sleep 0.2
    done
    sleep 0.3
    "$zk" stop "$tmp/zk" >/dev/null 2>&1
    sleep 2
    "$zk" start "$tmp/zk" >/dev/null || return 1
    wait_ok "${pids[@]}" || return 1
    codes=$(cat "$tmp/blip.codes")
    echo "answers: $codes"; echo "origin: $(stats)"
    [ "$(echo "$codes" | tr ' ' '\n' | grep -c '^200$')" = 5 ] || return 1
    [ "$(stat_field max_overlap)" = 1 ] || return 1
    all_connected
}

# A key that changes each time nginx evaluates it ($msec): the request
# runs under the lock it was granted (the resume after the grant does
# not ask for the key's new value).
t_volatile_key_runs() {
    local h
    h=$(curl -s -m 4 -o /dev/null -D - "http://127.0.0.1:${ports[1]}/vk/x?delay_ms=10" | tr -d '\r')
    echo "$h"
    echo "$h" | grep -q '^HTTP/1.1 200' && echo "$h" | grep -q '^X-Zklock-Status: acquired'
}

# A request that waits behind a slow holder, whose client goes away:
# its node goes too.
# The origin's counts can fail the checks above: without the locks, the
# same loads overlap there.
t_controls_overlap() {
    reset_origin
    python3 "$load" --targets "$T" --path '/u/k{key}?delay_ms=20' \
        --keys 30 --requests 600 --concurrency 300 >/dev/null || return 1
    echo "unlocked: $(stats)"
    [ "$(stat_field max_overlap)" -gt 1 ] || return 1
    reset_origin
    python3 "$load" --targets "$T" --path '/nc/k{key}?delay_ms=50&max_age=2' \
        --keys 20 --seconds 3 --concurrency 120 >/dev/null || return 1
    echo "cache without zklock_cache_lock: $(stats)"
    [ "$(stat_field max_overlap)" -gt 1 ]
}

# Fresh entries are hits that take no lock; a request that bypasses the
# cache (proxy_cache_bypass) goes to the origin, so it takes the lock.
t_cache_fresh_and_bypass() {
    local h i pids
    reset_origin
    curl -s -m 10 -o /dev/null "http://127.0.0.1:${ports[1]}/c/fb?delay_ms=10&max_age=30" || return 1
    h=$(curl -s -m 10 -o /dev/null -D - "http://127.0.0.1:${ports[1]}/c/fb?delay_ms=10&max_age=30" | tr -d '\r')
    echo "$h" | grep -q '^X-Zklock-Status: fresh' || { echo "a hit: $h"; return 1; }
    # A request with a body is never "fresh": the proxy reads the body
    # before it looks, as late as the client sends it.
    h=$(curl -s -m 10 -o /dev/null -D - -X GET --data-binary x "http://127.0.0.1:${ports[1]}/c/fb?delay_ms=10&max_age=30" | tr -d '\r')
    echo "$h" | grep -q '^X-Zklock-Status: acquired' || { echo "with a body: $h"; return 1; }
    pids=()
    for i in 1 2 3; do
        curl -s -m 20 -o /dev/null -H 'X-Nocache: 1' \
            "http://127.0.0.1:${ports[$i]}/c/fb?delay_ms=300&max_age=30" &
        pids+=($!)
    done
    wait_ok "${pids[@]}" || return 1
    echo "origin: $(stats)"
    [ "$(stat_field requests)" = 4 ] || return 1
    [ "$(stat_field max_overlap)" = 1 ]
}

# error_page 503 = @retry after a refused wait: the named location asks
# for its own lock, it does not run beside the holder.
t_redirect_after_refusal() {
    local holder h
    reset_origin
    curl -s -m 30 -o /dev/null "http://127.0.0.1:${ports[1]}/ep/x?delay_ms=2500" &
    holder=$!
    sleep 0.3
    h=$(curl -s -m 30 -o /dev/null -D - "http://127.0.0.1:${ports[2]}/ep/x?delay_ms=10" | tr -d '\r')
    echo "$h"
    wait_ok $holder || return 1
    echo "$h" | grep -q '^HTTP/1.1 200' || return 1
    echo "$h" | grep -q '^X-Zklock-Status: acquired' || return 1
    echo "origin: $(stats)"
    [ "$(stat_field conflicts)" = 0 ]
}

# on_timeout=pass: past its timeout the request runs without the lock,
# at once (the phases resumed after the wait do not ask again).
t_pass_after_timeout() {
    local holder h t
    curl -s -m 30 -o /dev/null "http://127.0.0.1:${ports[1]}/pt/y?delay_ms=4000" &
    holder=$!
    sleep 0.3
    t=$SECONDS
    h=$(curl -s -m 30 -o /dev/null -D - "http://127.0.0.1:${ports[2]}/pt/y" | tr -d '\r')
    echo "$h"; echo "$((SECONDS - t)) s"
    wait_ok $holder || return 1
    echo "$h" | grep -q '^X-Zklock-Status: passed:timeout' || return 1
    [ $((SECONDS - t)) -lt 4 ] || [ "$(echo "$h" | sed -n 's/^X-Zklock-Wait: //p')" -lt 2000 ]
}

# An SSI page's include runs under the page's lock: its fetch comes after
# the page's last buffer has passed this module's filter (a review saw
# two at the origin at once when the lock went with that buffer).
t_ssi_include_under_the_lock() {
    local a h
    reset_origin
    curl -s -m 30 -o "$tmp/ssi-a" "http://127.0.0.1:${ports[1]}/s/x.html" &
    a=$!
    sleep 0.5
    h=$(curl -s -m 30 -o "$tmp/ssi-b" -D - "http://127.0.0.1:${ports[2]}/s/x.html" | tr -d '\r')
    wait_ok $a || return 1
    echo "$h"; cat "$tmp/ssi-a"; echo "origin: $(stats)"
    grep -q '^/s/x 1' "$tmp/ssi-a" || grep -q '^/s/x 2' "$tmp/ssi-a" || return 1
    [ "$(stat_field requests)" = 2 ] || return 1
    [ "$(stat_field conflicts)" = 0 ]
}

# lingering_then_next METHOD KEY: a client sends a whole METHOD request
# for /w/KEY through instance 1, then bytes that are no request, and
# keeps sending a byte now and then, so nginx closes lingering after the
# answer; meanwhile a GET of the key through instance 2 gets the lock in
# under 3 s: the lock goes with the request's end, not the connection's.
lingering_then_next() {
    local h py
    python3 - "${ports[1]}" "$1" "$2" <<'EOF' &
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(("%s /w/%s?delay_ms=10 HTTP/1.1\r\nHost: x\r\n"
           "Connection: close\r\n\r\nxyz" % (sys.argv[2], sys.argv[3])).encode())
time.sleep(0.5)
for _ in range(24):
    try:
        s.sendall(b"x")
    except OSError:
        break
    time.sleep(0.25)
EOF
    py=$!
    sleep 1
    h=$(curl -s -m 30 -o /dev/null -D - "http://127.0.0.1:${ports[2]}/w/$2" | tr -d '\r')
    wait $py
    echo "$h"
    echo "$h" | grep -q '^X-Zklock-Status: acquired' || return 1
    [ "$(echo "$h" | sed -n 's/^X-Zklock-Wait: //p')" -lt 3000 ]
}

# A GET answered in full, and a HEAD (a header-only answer: no last
# buffer passes).
t_released_with_the_answer() { lingering_then_next GET linger; }
t_head_lingering_released() { lingering_then_next HEAD hlinger; }

# ZooKeeper frozen past the session timeout: the holder's worker tells
# its hold LOST, and the request is aborted (its connection closed, not
# left hanging), saying so in the log.
t_lost_hold_aborts() {
    local zkpid t0 out c
    curl -s -m 60 -o /dev/null -w '%{http_code} %{time_total}\n' \
        "http://127.0.0.1:${ports[3]}/w/lost?delay_ms=9000" >"$tmp/lost.out" 2>&1 &
    c=$!
    sleep 0.5
    zkpid=$(cat "$tmp/zk/pid")
    kill -STOP "$zkpid"
    t0=$SECONDS
    wait $c
    kill -CONT "$zkpid"
    out=$(cat "$tmp/lost.out")
    echo "client: $out after $((SECONDS - t0)) s"
    grep -h 'was lost while the request held it' "$tmp"/n3/logs/error.log || return 1
    # Not answered 200, and cut off well before the origin's 9 s.
    case $out in 200*) return 1 ;; esac
    [ $((SECONDS - t0)) -lt 8 ] || return 1
    all_connected
}

t_client_gone_while_waiting() {
    local holder
    curl -s -m 30 -o /dev/null "http://127.0.0.1:${ports[1]}/w/gone?delay_ms=3000" &
    holder=$!
    sleep 0.5
    curl -s -m 1 -o /dev/null "http://127.0.0.1:${ports[2]}/w/gone" && { echo "waiter got through"; return 1; }
    # The waiter's node went with its request: the holder's alone is left.
    for _ in $(seq 30); do
        [ "$(nodes_left %2Fgone)" = 1 ] && break
        sleep 0.1
    done
    [ "$(nodes_left %2Fgone)" = 1 ] || { echo "contenders: $(nodes_left %2Fgone)"; return 1; }
    wait_ok $holder || return 1
    for _ in $(seq 30); do [ "$(nodes_left %2Fgone)" = 0 ] && return 0; sleep 0.1; done
    echo "nodes left: $(nodes_left %2Fgone)"; return 1
}

# A worker killed mid-hold: its session ends (4 s), and the next request
# of the key, through another instance, then gets the lock.
t_worker_killed_mid_hold() {
    local holder w h
    reset_origin
    curl -s -m 30 -o /dev/null "http://127.0.0.1:${ports[1]}/w/killed?delay_ms=1500" &
    holder=$!
    for _ in $(seq 50); do [ "$(nodes_left %2Fkilled)" = 1 ] && break; sleep 0.05; done
    # The worker that holds it: the one with a request in flight.
    for w in $(pgrep -P "$(cat "$tmp/n1/nginx.pid")"); do kill -9 "$w"; done
    wait $holder
    h=$(curl -s -o /dev/null -D - -m 30 "http://127.0.0.1:${ports[2]}/w/killed" | tr -d '\r')
    echo "$h"
    echo "$h" | grep -q '^HTTP/1.1 200' || return 1
    echo "$h" | grep -q '^X-Zklock-Status: acquired' || return 1
    echo "origin: $(stats)"
    [ "$(stat_field conflicts)" = 0 ] || return 1
    all_connected # the master started new workers, with new sessions
}

t_reload_under_load() {
    local l n out
    reset_origin
    python3 "$load" --targets "$T" --path '/w/rl{key}?delay_ms=10' \
        --keys 20 --requests 1500 --concurrency 100 >"$tmp/rl.json" &
    l=$!
    sleep 1
    for n in 1 2 3 1 2 3; do
        ngx -p "$tmp/n$n" -c "$tmp/n$n/nginx.conf" -s reload || return 1
        sleep 0.5
    done
    wait_ok $l || return 1
    out=$(cat "$tmp/rl.json")
    echo "load: $out"; echo "origin: $(stats)"
    [ "$(jfield "$out" ok)" = 1500 ] || return 1
    [ "$(stat_field conflicts)" = 0 ] || return 1
    # The old workers drained and left; their sessions closed with them.
    for _ in $(seq 100); do
        [ "$(pgrep -f 'nginx: worker process is shutting down' | wc -l)" = 0 ] && break
        sleep 0.1
    done
    # shellcheck disable=SC2046
    n=$(nodes_left $(for i in $(seq 0 19); do printf '%%2Frl%s ' "$i"; done))
    [ "$n" = 0 ] || { echo "nodes left: $n"; return 1; }
    all_connected
}

t_zookeeper_stopped() {
    local h i
    "$zk" stop "$tmp/zk" >/dev/null || return 1
    # Every worker sees its connection go (a read error at once).
    for i in $(seq 100); do
        h=$(curl -s -m 5 -o /dev/null -D - "http://127.0.0.1:${ports[1]}/closed/z" | tr -d '\r')
        echo "$h" | grep -q '^HTTP/1.1 503' && break
        sleep 0.1
    done
    echo "$h" | grep -q '^HTTP/1.1 503' || { echo "fail_closed: $h"; return 1; }
    echo "$h" | grep -q '^X-Zklock-Status: refused:unavailable' || { echo "$h"; return 1; }
    h=$(curl -s -m 5 -o /dev/null -D - "http://127.0.0.1:${ports[1]}/open/z" | tr -d '\r')
    echo "$h" | grep -q '^HTTP/1.1 200' || { echo "fail_open: $h"; return 1; }
    echo "$h" | grep -q '^X-Zklock-Status: passed:unavailable' || { echo "$h"; return 1; }
    "$zk" start "$tmp/zk" >/dev/null || return 1
    all_connected || return 1
    h=$(curl -s -m 10 -o /dev/null -D - "http://127.0.0.1:${ports[3]}/closed/z" | tr -d '\r')
    echo "$h" | grep -q '^X-Zklock-Status: acquired' || { echo "after: $h"; return 1; }
}

t_key_escaping() {
    local holder l
    curl -s -m 30 -o /dev/null "http://127.0.0.1:${ports[1]}/w/a%20b/.../c?delay_ms=1500" &
    holder=$!
    for _ in $(seq 30); do
        l=$("$ZKLOCK" ls -s "$zkh" /zklock/nginx 2>/dev/null)
        echo "$l" | grep -q '%2Fa%20b%2F...%2Fc' && break
        sleep 0.1
    done
    "$ZKLOCK" ls -s "$zkh" "/zklock/nginx/%2Fa%20b%2F...%2Fc" | grep -q . || {
        echo "no lock at /zklock/nginx/%2Fa%20b%2F...%2Fc"; return 1; }
    wait_ok $holder
}

# One nginx in a single process (master_process off) under valgrind:
# a lock, a waiter whose client goes away, a status page, the quit. No
# error and no leak of valgrind's may pass through the module, zklock or
# the ZooKeeper client (nginx's own, such as its environment copy, are
# not ours).
t_valgrind_one_worker() {
    local d=$tmp/vg port vg holder
    command -v valgrind >/dev/null || { echo "no valgrind"; return 1; }
    port=$(free_port)
    mkdir -p "$d/logs" "$d/tmp"
    cat >"$d/nginx.conf" <<EOF
load_module $module;
master_process off;
daemon off;
error_log $d/logs/error.log info;
pid $d/nginx.pid;
events { worker_connections 1024; }
http {
    access_log off;
    zklock_servers $zkh;
    client_body_temp_path $d/tmp; proxy_temp_path $d/tmp;
    fastcgi_temp_path $d/tmp; uwsgi_temp_path $d/tmp; scgi_temp_path $d/tmp;
    server {
        listen 127.0.0.1:$port;
        location /w/ { zklock \$uri timeout=10s; proxy_pass http://$O; }
        location = /status { zklock_status; }
    }
}
EOF
    valgrind -q --leak-check=full --errors-for-leak-kinds=definite \
        --show-leak-kinds=definite --log-file="$d/vg.log" \
        "$NGINX" -p "$d" -c "$d/nginx.conf" &
    vg=$!
    for _ in $(seq 150); do
        curl -s -m 2 "http://127.0.0.1:$port/status" 2>/dev/null | grep -q CONNECTED && break
        sleep 0.2
    done
    curl -s -m 30 "http://127.0.0.1:$port/w/a?delay_ms=10" | grep -q . || { echo "no answer"; kill $vg; return 1; }
    curl -s -m 30 -o /dev/null "http://127.0.0.1:$port/w/b?delay_ms=2000" &
    holder=$!
    sleep 0.5
    curl -s -m 0.5 -o /dev/null "http://127.0.0.1:$port/w/b"
    curl -s -m 20 -o /dev/null "http://127.0.0.1:$port/w/b" || { echo "second waiter"; kill $vg; return 1; }
    wait $holder
    kill -QUIT "$(cat "$d/nginx.pid")"
    wait $vg
    cat "$d/vg.log"
    ! grep -qE 'zkl_|zkl__|zn_|ngx_http_zklock|zoo_|zookeeper|libzklock' "$d/vg.log"
}

check config_errors t_config_errors
check sessions_per_worker t_sessions_per_worker
all_connected >"$tmp/conn" 2>&1 || { echo "FAIL: $SUITE/connect"; cat "$tmp/conn"; failed=$((failed + 1)); }
check exclusive_across_fleet t_exclusive_across_fleet
check readers_share_writer_alone t_readers_share_writer_alone
check cache_lock_one_fetch t_cache_lock_one_fetch
check controls_overlap t_controls_overlap
check cache_waiters_collapse t_cache_waiters_collapse
check cache_followers_give_up t_cache_followers_give_up
check cache_fresh_and_bypass t_cache_fresh_and_bypass
check redirect_after_refusal t_redirect_after_refusal
check redirect_after_pass t_redirect_after_pass
check redirect_while_held t_redirect_while_held
check volatile_key_runs t_volatile_key_runs
check pass_after_timeout t_pass_after_timeout
check released_with_the_answer t_released_with_the_answer
check ssi_include_under_the_lock t_ssi_include_under_the_lock
check head_lingering_released t_head_lingering_released
check client_gone_while_waiting t_client_gone_while_waiting
check key_escaping t_key_escaping
check worker_killed_mid_hold t_worker_killed_mid_hold
check reload_under_load t_reload_under_load
check zookeeper_stopped t_zookeeper_stopped
check followers_ride_out_a_blip t_followers_ride_out_a_blip
check lost_hold_aborts t_lost_hold_aborts
if [ -z "$asan_rt" ]; then
    check valgrind_one_worker t_valgrind_one_worker
fi
# No worker crashed in all this (killed ones were killed by the test),
# and the sanitizers, when there, said nothing.
check no_crash sh -c "! grep -E 'exited on signal (11|6|7|8)|\[alert\].*open socket' $tmp/n*/logs/error.log"
[ -n "$asan_rt" ] && check sanitizers_quiet sh -c "! cat $tmp/asan.* 2>/dev/null | grep ."
finish
