#!/usr/bin/env bash
# Runs each fuzz target for a while on its corpus (fuzz/corpus/TARGET,
# kept in the repository), the API target against a throw-away
# ZooKeeper. New inputs go to OUTDIR/new-TARGET, not into the repo's
# corpus; `fuzz/run.sh ... --merge` folds them in, minimized.
# Prints PASS/FAIL per target and a closing "N passed, N failed".
#
#   fuzz/run.sh OUTDIR SECONDS [--merge]
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: fuzz/run.sh OUTDIR SECONDS [--merge]}
secs=${2:-30}
merge=${3:-}
per_input=10 # seconds, libFuzzer's -timeout
passed=0
failed=0

work=$(mktemp -d /tmp/zklock-fuzz.XXXXXX)
trap '"$top/test/zkserver.sh" kill "$work/zk" >/dev/null 2>&1; rm -rf "$work"' EXIT INT TERM
if ! ZKL_FUZZ_HOSTS=$("$top/test/zkserver.sh" start "$work/zk"); then
    echo "FAIL: fuzz (no ZooKeeper server)"
    echo "0 passed, 1 failed"
    exit 1
fi
export ZKL_FUZZ_HOSTS

for t in path names api; do
    new="$out/new-$t"
    rm -rf "$new"
    mkdir -p "$new"
    log="$out/fuzz-$t.log"
    # Leaks are checked per input; a per-input limit catches hangs
    # (an API input waits on a real server, each wait bounded by its own
    # 5 s check, so the limit is well above what a slow machine takes).
    if "$out/fuzz-$t" -max_total_time="$secs" -timeout="$per_input" -max_len=512 \
        -print_final_stats=1 -artifact_prefix="$out/crash-$t-" \
        "$new" "$top/fuzz/corpus/$t" >"$log" 2>&1; then
        passed=$((passed + 1))
        echo "PASS: ${ZKL_TEST_PREFIX:-}fuzz/$t ($(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') runs, $(ls "$new" | wc -l) new inputs, at most $per_input s each)"
    else
        failed=$((failed + 1))
        echo "FAIL: ${ZKL_TEST_PREFIX:-}fuzz/$t"
        grep -E 'ERROR|check failed|SUMMARY|crash-' "$log" | head -20
    fi
    if [ "$merge" = --merge ]; then
        # A merge runs every input again; one that crashes is written
        # out too, so it gets the same prefix as the run's.
        "$out/fuzz-$t" -merge=1 -artifact_prefix="$out/crash-$t-" \
            "$top/fuzz/corpus/$t" "$new" >>"$log" 2>&1
    fi
done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
