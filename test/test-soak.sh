#!/usr/bin/env bash
# The safety checker, briefly (ZKL_SOAK_MINUTES, default 1), on the
# suite's own server, which it kills and restarts among its faults; and
# once more with workers that break the rules on purpose, to show the
# checker catches them. The long run is `make soak MINUTES=30`.
SUITE=soak
. "$(dirname "$0")/lib.sh"

soak() { # minutes, extra options...
    local m=$1
    shift
    "$top_builddir/test/zkl-soak" --hosts "$H" \
        --server-dir "${ZKL_TEST_ZKDIR:?run through test/suite.sh}" \
        --zkserver "$top_srcdir/test/zkserver.sh" --minutes "$m" "$@" \
        >"$tmp/soak.json" 2>"$tmp/soak.log"
}

field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$tmp/soak.json" "$1"; }

safe_under_faults() {
    soak "${ZKL_SOAK_MINUTES:-1}"
    local rc=$?
    grep -E 'UNEXPLAINED|stale write|regression|HANG|died|badly' "$tmp/soak.log" | head -20
    cat "$tmp/soak.json"
    cp "$tmp/soak.json" "$tmp/main.json"
    [ "$rc" = 0 ] && [ "$(field faults)" -ge 50 ] && [ "$(field grants)" -ge 50 ]
}

catches_sabotage() {
    soak 0.25 --sabotage 1 --fault-ms 150
    local rc=$?
    cat "$tmp/soak.json"
    [ "$rc" != 0 ] && [ "$(field overlaps_unexplained)" -gt 0 ] &&
        [ "$(field token_regressions)" -gt 0 ]
}

check safe_under_faults safe_under_faults
[ -f "$tmp/main.json" ] && sed 's/^/# /' "$tmp/main.json"
check catches_sabotage catches_sabotage
finish
