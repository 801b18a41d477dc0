# Sourced by the scripts that run other runners (suite.sh, run-all.sh,
# run-long.sh): adds a runner's closing line, "N passed, N failed" with
# ", N skipped" when a check could not run here, to the caller's passed,
# failed and skipped. A runner with no closing line (it crashed) or one
# that ran nothing and said no reason (skipped) counts as one failure.
#
#   tally FILE NAME
tally() {
    local line p f s
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$1" | tail -n 1)
    if [ -z "$line" ]; then
        failed=$((failed + 1))
        echo "FAIL: $2 (no closing line; crashed?)"
        return
    fi
    p=$(echo "$line" | cut -d' ' -f1)
    f=$(echo "$line" | cut -d' ' -f3)
    s=$(echo "$line" | cut -s -d' ' -f5)
    s=${s:-0}
    if [ $((p + f + s)) = 0 ]; then
        failed=$((failed + 1))
        echo "FAIL: $2 (ran no test)"
        return
    fi
    passed=$((passed + p))
    failed=$((failed + f))
    skipped=$((skipped + s))
}
