#!/usr/bin/env bash
# TLS and SASL against real secured servers (test/zkserver.sh --tls,
# --tls-expired, --sasl; certificates from test/tls-certs.sh): the
# failure cases each with its code (run-tests --tls); the suite's own
# tests of the mutex, read/write lock, semaphore, multi-lock, latch,
# guarded writes, session expiry and a server restart, over TLS and over
# SASL (the same tests, their clients given t_secure()'s settings); the
# failover tests on a 3-node TLS ensemble, with real kills and restarts
# (the fault proxy cannot read TLS); the zklock CLI over TLS and SASL;
# and a Curator process over TLS sharing a lock with zklock over TLS.
#
# Needs a build whose ZooKeeper C client has TLS and SASL (test/setup.sh
# --tls makes one in build/tls). Elsewhere it skips, saying why, unless
# ZKL_TEST_REQUIRE_TLS is set (CI's TLS lane): then that is a failure.
set -u
SUITE=tls
# lib.sh wants the suite's server: this script starts its own.
ZKL_TEST_HOSTS=${ZKL_TEST_HOSTS:-unused}
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/test/tally.sh"
zk=$top_srcdir/test/zkserver.sh
runner=$top_builddir/test/run-tests
wrap=${ZKL_TEST_WRAPPER:-}

have() { grep -q "^#define ZKL_HAVE_ZK_$1 1" "$top_builddir/config.h" 2>/dev/null; }
if ! have TLS || ! have SASL; then
    if [ -n "${ZKL_TEST_REQUIRE_TLS:-}" ]; then
        echo "FAIL: $SUITE/build (this build's ZooKeeper C client lacks TLS or SASL, and ZKL_TEST_REQUIRE_TLS is set)"
        failed=1
    else
        skip suite "this build's ZooKeeper C client has no TLS/SASL: test/setup.sh --tls builds one"
    fi
    finish
    exit
fi

servers=()
stop_servers() {
    local d
    for d in "${servers[@]+"${servers[@]}"}"; do
        "$zk" kill "$d" >/dev/null 2>&1 || true
    done
}
trap 'stop_servers; kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT

certs=$(bash "$top_srcdir/test/tls-certs.sh" "$tmp/certs") || {
    echo "FAIL: $SUITE/certificates"; echo "0 passed, 1 failed"; exit 1; }
export ZKL_ZK_CERTS=$certs

start() { # NAME OPTIONS...: a standalone server; prints its hosts
    local name=$1
    shift
    "$zk" "$@" start "$tmp/$name"
}
fail_setup() { echo "FAIL: $SUITE/$1 (could not start it)"; failed=$((failed + 1)); }

# (Recorded here: start runs in a command substitution, a subshell,
# where adding to the list was lost and the servers outlived the run.)
servers+=("$tmp/zk-tls" "$tmp/zk-expired" "$tmp/zk-sasl" "$tmp/zk-plain")
tls_h=$(start zk-tls --tls) || fail_setup tls-server
exp_h=$(start zk-expired --tls-expired) || fail_setup expired-server
sasl_h=$(start zk-sasl --sasl) || fail_setup sasl-server
plain_h=$(start zk-plain) || fail_setup plain-server
sasl_user=$(cat "$tmp/zk-sasl/sasl.user" 2>/dev/null)
sasl_pw=$(cat "$tmp/zk-sasl/sasl.password" 2>/dev/null)
# The CLI refuses a password file others may read, as ssh refuses keys.
printf %s "$sasl_pw" >"$tmp/sasl.pw" && chmod 600 "$tmp/sasl.pw"
echo "# TLS $tls_h, expired $exp_h, SASL $sasl_h, plain $plain_h"

runs() { # NAME, then env assignments and run-tests arguments
    local name=$1 out=$tmp/$1.out
    shift
    env ZKL_TEST_PREFIX="${ZKL_TEST_PREFIX:-}$SUITE/$name/" "$@" |
        tee "$out"
    tally "$out" "$SUITE/$name"
}

# Under valgrind (ZKL_TEST_TLS_C_ONLY) a handshake's crypto runs some
# fifty times slower: clients get a minute to connect, and the tests that
# count attempts against a short deadline (the hints), the many-client
# ones and the ensemble's stay with the unwrapped run.
errors_tests=
vg=
if [ -n "${ZKL_TEST_TLS_C_ONLY:-}" ]; then
    errors_tests="tls_wrong_ca tls_expired tls_untrusted tls_encrypted sasl_"
    # And sessions three times as long: starved for seconds beside the
    # other CI lanes, a client's connection once timed out mid-test.
    vg="ZKL_TEST_CONNECT_MS=60000 ZKL_TEST_SESSION_SCALE=3"
fi

# ---- 1. each failure with its own code, and what must work ----
# shellcheck disable=SC2086
runs errors $vg ZKL_TEST_CERTS="$certs" ZKL_TEST_TLS_HOSTS="$tls_h" \
    ZKL_TEST_TLS_EXPIRED_HOSTS="$exp_h" ZKL_TEST_PLAIN_HOSTS="$plain_h" \
    ZKL_TEST_SASL_HOSTS="$sasl_h" ZKL_TEST_SASL_NAME="$sasl_user" \
    ZKL_TEST_SASL_SECRET="$sasl_pw" ZKL_TEST_HOSTS="$plain_h" \
    ZKL_TEST_ZKDIR="$tmp/zk-plain" $wrap "$runner" --tls $errors_tests

# ---- 2. the suite's own tests over TLS, then over SASL ----
# The tests whose clients are the harness's (t_client) and whose faults
# are real ones (an expiry, a restart), not the fault proxy's.
# (Names select by substring: none of these selects a proxy's test.
# Session expiry by a real partition is the ensemble's, below.)
suite_tests="acquire_release_basic fencing_token_grows contenders_order
    timeout fifo_order mutual_exclusion_sessions
    mutual_exclusion_processes long_queue_across_sessions_drains_without_listing
    latch_elects_in_order multi_waits_holding_only_a_prefix
    rw_readers_share_writer_waits
    rw_writer_release_wakes_only_readers_that_hold
    rw_downgrade_keeps_place_upgrade_refused sem_limit_and_layout
    sem_several_leases_all_or_nothing guarded_write_while_held
    revoke_reaches_revocable_holders_only node_deleted_by_other
    server_restart_held_and_queued"
# Under valgrind (ZKL_TEST_TLS_C_ONLY) OpenSSL's handshakes are slow
# enough that clients made by the dozen outlast the harness's 10 s to
# connect: a few tests there, one per recipe; the unwrapped run has all,
# and the plain valgrind lane their code paths.
[ -z "${ZKL_TEST_TLS_C_ONLY:-}" ] ||
    suite_tests="acquire_release_basic rw_readers_share_writer_waits
        sem_limit_and_layout latch_elects_in_order
        multi_waits_holding_only_a_prefix guarded_write_while_held"
# shellcheck disable=SC2086
runs suite $vg ZKL_TEST_HOSTS="$tls_h" ZKL_TEST_ZKDIR="$tmp/zk-tls" \
    ZKL_TEST_TLS_CERTS="$certs" $wrap "$runner" $suite_tests
runs suite-leftovers ZKL_TEST_HOSTS="$tls_h" ZKL_TEST_TLS_CERTS="$certs" \
    "$runner" --leftovers
# shellcheck disable=SC2086
runs sasl $vg ZKL_TEST_HOSTS="$sasl_h" ZKL_TEST_ZKDIR="$tmp/zk-sasl" \
    ZKL_TEST_SASL_USER="$sasl_user" ZKL_TEST_SASL_PASSWORD="$sasl_pw" \
    ZKL_TEST_SASL_PASSWORD_FILE="$tmp/zk-sasl/sasl.password" \
    $wrap "$runner" acquire_release_basic mutual_exclusion_sessions \
    rw_readers_share_writer_waits sem_limit_and_layout latch_elects_in_order \
    multi_waits_holding_only_a_prefix server_restart_held_and_queued
runs sasl-leftovers ZKL_TEST_HOSTS="$sasl_h" ZKL_TEST_SASL_USER="$sasl_user" \
    ZKL_TEST_SASL_PASSWORD="$sasl_pw" \
    ZKL_TEST_SASL_PASSWORD_FILE="$tmp/zk-sasl/sasl.password" \
    "$runner" --leftovers

if [ -n "${ZKL_TEST_TLS_C_ONLY:-}" ]; then
    finish
    exit
fi

# ---- 3. failover on a 3-node TLS ensemble: real kills and restarts ----
# (The runs keep a flight recorder: a failure prints what the clients
# logged before it.)
servers+=("$tmp/ens")
if ens_h=$("$zk" --tls ensemble "$tmp/ens" 3); then
    echo "# TLS ensemble at $ens_h"
    runs ensemble ZKL_TEST_FLIGHT=info ZKL_TEST_HOSTS="$ens_h" ZKL_TEST_ENSEMBLE="$tmp/ens" \
        ZKL_TEST_TLS_CERTS="$certs" $wrap "$runner" --ensemble \
        ensemble_basic ensemble_kill_leader ensemble_kill_connected_follower \
        ensemble_cut_off_holder_told_lost_before_the_next_holds \
        ensemble_rolling_restart
    runs ensemble-leftovers ZKL_TEST_HOSTS="$ens_h" \
        ZKL_TEST_TLS_CERTS="$certs" "$runner" --leftovers
else
    fail_setup tls-ensemble
fi
"$zk" kill "$tmp/ens" >/dev/null 2>&1 || true

# Under valgrind (ZKL_TEST_TLS_C_ONLY) the C runs above are what count:
# the CLI and Curator runs below run the same library code unwrapped.
if [ -n "${ZKL_TEST_TLS_C_ONLY:-}" ]; then
    finish
    exit
fi

# ---- 4. the CLI over TLS and SASL ----
tls_opts=(--tls-ca "$certs/ca.pem" --tls-cert "$certs/client.cert.pem"
          --tls-key "$certs/client.key.pem")
t_cli_tls() {
    "$ZKLOCK" run -s "$tls_h" "${tls_opts[@]}" -t 10 /zkl-tls-cli/a -- \
        sh -c 'echo "$ZKLOCK_TOKEN" > "$1"' sh "$tmp/token" || return 1
    [ -s "$tmp/token" ] || { echo "no token"; return 1; }
    # The same from the environment.
    ZKLOCK_TLS_CA=$certs/ca.pem ZKLOCK_TLS_CERT=$certs/client.cert.pem \
        ZKLOCK_TLS_KEY=$certs/client.key.pem \
        "$ZKLOCK" run -s "$tls_h" -t 10 /zkl-tls-cli/a -- true || return 1
    "$ZKLOCK" ls -s "$tls_h" "${tls_opts[@]}" /zkl-tls-cli/a
}
t_cli_tls_wrong_ca() {
    local st
    "$ZKLOCK" run -s "$tls_h" --tls-ca "$certs/other-ca.pem" \
        --tls-cert "$certs/client.cert.pem" --tls-key "$certs/client.key.pem" \
        -t 20 /zkl-tls-cli/b -- true 2>"$tmp/err"; st=$?
    [ $st = 6 ] || { echo "exit $st, wanted 6"; cat "$tmp/err"; return 1; }
    grep -q "TLS handshake failed" "$tmp/err" || { cat "$tmp/err"; return 1; }
}
t_cli_sasl() {
    local st
    "$ZKLOCK" run -s "$sasl_h" --sasl-user "$sasl_user" \
        --sasl-password-file "$tmp/sasl.pw" -t 10 \
        /zkl-sasl-cli/a -- true || return 1
    # From the environment; the password is zklock's, not COMMAND's.
    ZKLOCK_SASL_USER=$sasl_user ZKLOCK_SASL_PASSWORD=$sasl_pw \
        "$ZKLOCK" run -s "$sasl_h" -t 10 /zkl-sasl-cli/a -- \
        sh -c 'env > "$1"' sh "$tmp/env" || return 1
    grep -q '^ZKLOCK_TOKEN=' "$tmp/env" || { echo "COMMAND did not run"; return 1; }
    ! grep -q 'ZKLOCK_SASL_PASSWORD' "$tmp/env" ||
        { echo "COMMAND got the password"; return 1; }
    ZKLOCK_SASL_USER=$sasl_user ZKLOCK_SASL_PASSWORD=wrong \
        "$ZKLOCK" run -s "$sasl_h" -t 20 /zkl-sasl-cli/a -- true \
        2>"$tmp/err"; st=$?
    [ $st = 6 ] || { echo "wrong password: exit $st, wanted 6"; cat "$tmp/err"; return 1; }
    grep -q "refused the SASL ($sasl_user) identity" "$tmp/err" ||
        { cat "$tmp/err"; return 1; }
    "$ZKLOCK" run -s "$sasl_h" --sasl-user "$sasl_user" \
        --sasl-password x -- true 2>"$tmp/err"; st=$?
    [ $st = 2 ] && grep -q "never taken on the command line" "$tmp/err" ||
        { echo "--sasl-password: exit $st"; cat "$tmp/err"; return 1; }
}
# A key with a passphrase and none given: a TLS failure, never a prompt
# on the terminal (OpenSSL's default, which blocked the loop for good in
# a program that has one: script(1) gives zklock a terminal here).
t_cli_tls_key_without_passphrase() {
    local st
    timeout 60 script -qefc "$ZKLOCK run -s $tls_h --tls-ca $certs/ca.pem --tls-cert $certs/client.cert.pem --tls-key $certs/client-enc.key.pem -t 20 /zkl-tls-cli/c -- true" \
        "$tmp/typescript" </dev/null >"$tmp/out" 2>&1; st=$?
    [ $st = 6 ] || { echo "exit $st, wanted 6"; cat "$tmp/out"; return 1; }
    ! grep -qi "pass phrase" "$tmp/out" || { echo "it asked:"; cat "$tmp/out"; return 1; }
    grep -q "TLS handshake failed" "$tmp/out" || { cat "$tmp/out"; return 1; }
}
check cli-tls t_cli_tls
check cli-tls-key-without-passphrase t_cli_tls_key_without_passphrase
check cli-tls-wrong-ca t_cli_tls_wrong_ca
check cli-sasl t_cli_sasl

# ---- 5. Curator over TLS and zklock over TLS share one lock ----
t_curator_tls() {
    local p=/zkl-tls-curator/a st
    # Curator holds for 12 s; zklock asks meanwhile, for 4 s, and must
    # not get in. (Its deadline counts its own TLS connect too: 1 s was
    # too short under ASan on a loaded CI, which then said "cannot
    # reach", exit 5.)
    bash "$top_srcdir/test/curator-tls.sh" --server "$tmp/zk-tls" \
        "$tls_h" "$p" 20000 12000 >"$tmp/peer" 2>&1 &
    local peer=$!
    local i
    for i in $(seq 200); do
        grep -q '^ACQUIRED' "$tmp/peer" && break
        sleep 0.1
    done
    grep -q '^ACQUIRED' "$tmp/peer" || { echo "Curator never held"; cat "$tmp/peer"; return 1; }
    "$ZKLOCK" run -s "$tls_h" "${tls_opts[@]}" -t 4 "$p" -- true; st=$?
    [ $st = 1 ] || [ $st = 4 ] || { echo "zklock got in while Curator held: exit $st"; return 1; }
    "$ZKLOCK" run -s "$tls_h" "${tls_opts[@]}" -t 30 "$p" -- true ||
        { echo "zklock never got the lock after Curator"; cat "$tmp/peer"; return 1; }
    wait_ok "$peer"
    grep -q '^RELEASED' "$tmp/peer" || { cat "$tmp/peer"; return 1; }
}
check curator-tls t_curator_tls

# ---- 6. the nginx module over TLS and over SASL ----
# One nginx (one worker) per configuration, its zklock_tls or
# zklock_sasl pointed at the secured servers above: a request takes its
# lock through them (a token), or, refused, is answered 503 and the
# error log says why.
. "$top_srcdir/test/nginx-fleet.sh"
# nginx_with NAME HOSTS HTTP-LINES: starts it; $ngx_port
nginx_with() {
    local d=$tmp/ngx-$1
    mkdir -p "$d/logs" "$d/tmp" "$d/www/w"
    echo hello >"$d/www/w/x"
    ngx_port=$(free_port) || return 1
    cat >"$d/nginx.conf" <<EOF
load_module $module;
worker_processes 1;
error_log $d/logs/error.log info;
pid $d/nginx.pid;
user root;
events {}
http {
    access_log off;
    client_body_temp_path $d/tmp; proxy_temp_path $d/tmp;
    fastcgi_temp_path $d/tmp; uwsgi_temp_path $d/tmp; scgi_temp_path $d/tmp;
    zklock_servers $2;
    zklock_session_timeout 6s;
    $3
    server {
        listen 127.0.0.1:$ngx_port;
        add_header X-Zklock-Status \$zklock_status always;
        add_header X-Zklock-Token \$zklock_token always;
        location /w/ { zklock \$uri timeout=20s; root $d/www; }
    }
}
EOF
    ngx -p "$d" -c "$d/nginx.conf" || return 1
    nginxes+=("$d")
}
nginxes=()
stop_nginxes() {
    local d
    for d in "${nginxes[@]+"${nginxes[@]}"}"; do
        ngx -p "$d" -c "$d/nginx.conf" -s stop 2>/dev/null
    done
    nginxes=()
}
# get_locked: one request through the instance just started; its status
# and headers in $tmp/h. The first may wait for the handshake.
get_locked() {
    curl -s -m 30 -D "$tmp/h" -o /dev/null -w '%{http_code}' \
        "http://127.0.0.1:$ngx_port/w/x"
}
# A request whose lock was taken: 200, acquired, a token.
locked_ok() {
    local code
    code=$(get_locked)
    [ "$code" = 200 ] && grep -qi '^X-Zklock-Status: acquired' "$tmp/h" &&
        grep -qiE '^X-Zklock-Token: [0-9]+' "$tmp/h" ||
        { echo "got $code:"; cat "$tmp/h"; tail -5 "$1/logs/error.log"; return 1; }
}
# A request refused: 503, and the error log holds WHY.
refused_with() { # WHY
    local code d=${nginxes[${#nginxes[@]}-1]}
    code=$(get_locked)
    [ "$code" = 503 ] || { echo "got $code, wanted 503"; cat "$tmp/h"; return 1; }
    grep -qF -- "$1" "$d/logs/error.log" ||
        { echo "no \"$1\" in the log:"; tail -20 "$d/logs/error.log"; return 1; }
}
t_nginx_tls() {
    nginx_with tls "$tls_h" "zklock_tls $certs/ca.pem $certs/client.cert.pem $certs/client.key.pem;" &&
        locked_ok "$tmp/ngx-tls"
}
t_nginx_tls_key_password() {
    # (a secret's file others may read is refused, as the CLI refuses it)
    cp "$certs/client-enc.pass" "$tmp/enc.pass" && chmod 600 "$tmp/enc.pass"
    nginx_with tls-pw "$tls_h" "zklock_tls $certs/ca.pem $certs/client.cert.pem $certs/client-enc.key.pem key_password_file=$tmp/enc.pass;" &&
        locked_ok "$tmp/ngx-tls-pw"
}
t_nginx_tls_untrusted() {
    # A client certificate the server does not trust.
    nginx_with tls-bad "$tls_h" "zklock_tls $certs/ca.pem $certs/other-client.cert.pem $certs/other-client.key.pem;" &&
        refused_with "TLS handshake"
}
t_nginx_sasl() {
    printf '%s\n' "$sasl_pw" >"$tmp/ngx-sasl.pw"
    chmod 600 "$tmp/ngx-sasl.pw"
    nginx_with sasl "$sasl_h" "zklock_sasl $sasl_user password_file=$tmp/ngx-sasl.pw;" &&
        locked_ok "$tmp/ngx-sasl"
}
t_nginx_sasl_wrong_password() {
    echo wrong >"$tmp/ngx-sasl-bad.pw"
    chmod 600 "$tmp/ngx-sasl-bad.pw"
    nginx_with sasl-bad "$sasl_h" "zklock_sasl $sasl_user password_file=$tmp/ngx-sasl-bad.pw;" &&
        refused_with "authentication refused"
}
# Refused by nginx -t, saying why.
t_nginx_secure_config_errors() {
    local rc=0 out
    : >"$tmp/empty.pw"
    chmod 600 "$tmp/empty.pw"
    head -c 2000 /dev/zero | tr '\0' x >"$tmp/long.pw"
    chmod 600 "$tmp/long.pw"
    echo secret >"$tmp/open.pw"
    chmod 644 "$tmp/open.pw"
    try_conf() { # what, a word the message must hold, http lines[, main lines]
        cat >"$tmp/bad.conf" <<EOF
load_module $module;
error_log $tmp/bad.log;
pid $tmp/bad.pid;
${4:-}
events {}
http { $3 }
EOF
        if out=$(ngx -t -q -c "$tmp/bad.conf" 2>&1); then
            echo "accepted: $1"; rc=1
        elif ! echo "$out" | grep -qF -- "$2"; then
            echo "no word of \"$2\" for $1: $out"; rc=1
        fi
    }
    local s="zklock_servers $tls_h;"
    local t="zklock_tls $certs/ca.pem $certs/client.cert.pem $certs/client.key.pem"
    local u="zklock_sasl u password_file=$tmp/ngx-sasl.pw"
    try_conf "TLS and SASL" "cannot go with zklock_tls" "$s $t; $u;"
    try_conf "SASL and TLS" "cannot go with zklock_sasl" "$s $u; $t;"
    try_conf "two zklock_tls" duplicate "$s $t; $t;"
    try_conf "TLS without servers" "zklock_tls without zklock_servers" "$t;"
    try_conf "a missing CA file" "cannot read \"$tmp/nope.pem\"" "$s zklock_tls $tmp/nope.pem $certs/client.cert.pem $certs/client.key.pem;"
    try_conf "a directory for a file" "\"$certs\" is not a file" "$s zklock_tls $certs $certs/client.cert.pem $certs/client.key.pem;"
    try_conf "an unknown parameter" "unknown parameter \"foo=...\"" "$s $t foo=x;"
    try_conf "an empty password file" "is empty" "$s zklock_sasl u password_file=$tmp/empty.pw;"
    try_conf "a password over 1023 bytes" "longer than 1023 bytes" "$s zklock_sasl u password_file=$tmp/long.pw;"
    try_conf "a password file others may read" "others may read" "$s zklock_sasl u password_file=$tmp/open.pw;"
    try_conf "no password" "needs password_file=" "$s zklock_sasl u;"
    try_conf "no user" "needs a user name first" "$s zklock_sasl password_file=$tmp/ngx-sasl.pw;"
    try_conf "a SASL typo" "unknown parameter \"pasword_file=...\"" "$s zklock_sasl u pasword_file=x;"
    try_conf "an empty mechanism" "an empty mechanism=" "$s $u mechanism=;"
    try_conf "a parameter twice" "service= given twice" "$s $u service=a service=b;"
    cp "$certs/ca.pem" "$tmp/a,b.pem"
    # (the C client's format has no room for a ',' in a file name)
    try_conf "a ',' in a file name" "zklock_tls: invalid argument" "$s zklock_tls $tmp/a,b.pem $certs/client.cert.pem $certs/client.key.pem;"
    # The workers (nobody) cannot read the files the master (root) can:
    # $tmp is root's alone.
    try_conf "files the workers cannot read" "nginx's workers (user \"nobody\") cannot read \"$certs/ca.pem\"" "$s $t;" "user nobody nogroup;"
    # A secret given in the wrong place is not repeated in the message.
    try_conf "a password inline" "unknown parameter \"password=...\"" "$s zklock_sasl u password=hunter2;"
    ! grep -rq hunter2 "$tmp/bad.log" 2>/dev/null || { echo "the password is in the log"; rc=1; }
    ngx -t -q -c "$tmp/bad.conf" 2>&1 | grep -q hunter2 && { echo "the password is on stderr"; rc=1; }
    # Nor one given as a bare word (the C client's order puts a key's
    # passphrase fourth).
    try_conf "a passphrase as an argument" "unknown argument 4 (not shown)" "$s $t hunter2;"
    ngx -t -q -c "$tmp/bad.conf" 2>&1 | grep -q hunter2 && { echo "the passphrase is on stderr"; rc=1; }
    # A line of 1023 bytes is taken whatever its end (LF or CRLF).
    { head -c 1023 /dev/zero | tr '\0' x; printf '\r\n'; } >"$tmp/crlf.pw"
    chmod 600 "$tmp/crlf.pw"
    cat >"$tmp/good.conf" <<EOF
load_module $module;
error_log $tmp/good.log;
pid $tmp/good.pid;
events {}
http { $s zklock_sasl u password_file=$tmp/crlf.pw; }
EOF
    out=$(ngx -t -q -c "$tmp/good.conf" 2>&1) || { echo "1023 bytes and CRLF refused: $out"; rc=1; }
    return $rc
}
# A certificate renewal caught halfway (the key file empty at a
# reconnect) ends the worker's client for good; the module makes a new
# one, 1 s later, then 2, 4...: once the key is back, requests hold
# locks again, without a reload.
t_nginx_tls_renewal_heals() {
    local d=$tmp/ngx-renew i code
    mkdir -p "$d"
    cp "$certs/client.key.pem" "$d/me.key"
    nginx_with renew "$tls_h" "zklock_tls $certs/ca.pem $certs/client.cert.pem $d/me.key;" &&
        locked_ok "$d" || return 1
    : >"$d/me.key"
    "$zk" restart "$tmp/zk-tls" >/dev/null || { echo "no restart"; return 1; }
    for i in $(seq 60); do
        grep -q "the session ended for good" "$d/logs/error.log" && break
        sleep 0.5
    done
    code=$(get_locked)
    [ "$code" = 503 ] || { echo "without a key: $code, wanted 503"; tail "$d/logs/error.log"; return 1; }
    cp "$certs/client.key.pem" "$d/me.key"
    for i in $(seq 60); do
        code=$(get_locked)
        [ "$code" = 200 ] && break
        sleep 0.5
    done
    [ "$code" = 200 ] || { echo "never healed: $code"; tail -20 "$d/logs/error.log"; return 1; }
    locked_ok "$d" && grep -q "a new session in place" "$d/logs/error.log"
}
why=$(fleet_check)
if [ -n "$why" ]; then
    if [ -n "${ZKL_TEST_REQUIRE_NGINX:-}" ]; then
        echo "FAIL: $SUITE/nginx ($why, and ZKL_TEST_REQUIRE_NGINX is set)"
        failed=$((failed + 1))
    else
        skip nginx "$why"
    fi
else
    trap 'stop_nginxes; stop_servers; kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
    check nginx-tls t_nginx_tls
    check nginx-tls-key-password t_nginx_tls_key_password
    check nginx-tls-untrusted t_nginx_tls_untrusted
    check nginx-sasl t_nginx_sasl
    check nginx-sasl-wrong-password t_nginx_sasl_wrong_password
    check nginx-secure-config-errors t_nginx_secure_config_errors
    # (last: it restarts the TLS server)
    check nginx-tls-renewal-heals t_nginx_tls_renewal_heals
    stop_nginxes
fi

finish
