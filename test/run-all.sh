#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine and runs every test:
# the suite on the plain build (with one-minute runs of the safety
# checker on a server and on a 3-node ensemble), the suite under
# AddressSanitizer + UBSan (the checker half as long, and without the
# shell tests that run no code of the build: build, error-table,
# examples, man), the C tests under valgrind memcheck (any error or
# leak fails the test), the libFuzzer targets on their corpora
# (ZKL_FUZZ_SECONDS each, default 20), the Debian packages (built,
# checked by lintian, installed in a fresh debootstrap root and used
# there: test/packages.sh), README.md's Installing section run word for
# word in another fresh root and the installed result used there
# (test/install.sh), and `make distcheck` (with a smoke subset of the
# suite); and, as root, the safety checker on a namespaced 5-node
# ensemble with faults on real links (test/test-netns.sh). Ends with one
# line "N passed, N failed", counting only tests that ran, followed by
# ", N skipped" when some could not run on this machine (shown as SKIP
# lines; .ci/run lets none skip); exits non-zero if anything failed.
#
# These are independent jobs, each against ZooKeeper servers of its own
# (test/suite.sh, fuzz/run.sh and test/packages.sh start theirs on free
# ports, test/install.sh in a network namespace of its own), run
# ZKL_CI_LANES (default 4) at a time, longest first: the tests mostly
# wait on timers and servers, so on a 2-core machine four lanes keep CI
# under 20 minutes. Each job's output is shown whole once
# all are done, in a fixed order, with its time. The long runs (30-minute
# soaks, long fuzzing) are test/run-long.sh.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
t_start=$SECONDS

# The packages and the plain build first: most jobs need no more. The
# other builds (ASan, the TLS client, its two builds) are a job of their
# own, run beside the first jobs; a job that needs one of them starts
# once it is there.
if ! bash test/setup.sh; then
    echo "0 passed, 1 failed"
    exit 1
fi

lanes=${ZKL_CI_LANES:-4}
logs=$(mktemp -d /tmp/zklock-ci.XXXXXX)
trap 'rm -rf "$logs"' EXIT

# ---- the jobs ----

# The builds beyond the plain one, each announced as it is done
# ($logs/ready.NAME) to the jobs that wait for it (needs, below).
job_builds() {
    bash test/setup.sh --no-plain --no-asan-build --tls --asan &&
        touch "$logs/ready.tls"
    if [ -e "$logs/ready.tls" ]; then
        echo "PASS: builds"
        echo "1 passed, 0 failed"
    else
        echo "FAIL: builds"
        echo "0 passed, 1 failed"
        return 1
    fi
}

# suite BUILD [VAR=VALUE...] -- [TEST NAMES...]: test/suite.sh on
# build/BUILD with the environment given.
suite() {
    local b=$1 san=
    shift
    local env=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do env+=("$1"); shift; done
    shift
    # The ZooKeeper C client's own leak is suppressed (test/lsan.supp).
    case $b in
    *asan) san="ASAN_OPTIONS=malloc_context_size=3 LSAN_OPTIONS=suppressions=$top/test/lsan.supp" ;;
    esac
    env $san ZKL_TEST_PREFIX="$b/" top_srcdir="$top" \
        top_builddir="$top/build/$b" "${env[@]}" bash test/suite.sh "$@"
}

# The plain build: its C tests in two shards, the safety checker (with
# its own tests: lagging, sabotage), and the rest (adapters, the other
# shell tests, the ensemble's tests).
job_plain_c1() { suite plain ZKL_TEST_PARTS=c ZKL_TEST_SHARD=1/2 --; }
job_plain_c2() { suite plain ZKL_TEST_PARTS=c ZKL_TEST_SHARD=2/2 --; }
job_plain_soak() {
    suite plain ZKL_TEST_PARTS=shell ZKL_TEST_SHELL=soak \
        ZKL_SOAK_MINUTES="${ZKL_SOAK_MINUTES:-1}" ZKL_SOAK_SELFTEST=1 --
}
job_plain_rest() {
    suite plain ZKL_TEST_PARTS="adapters shell ensemble" \
        ZKL_TEST_SHELL_SKIP="soak netns tls nginx" --
}
# ngx_http_zklock_module in Debian's nginx (test/test-nginx.sh), plain
# (with valgrind on one worker) and sanitized: jobs of their own, so the
# "rest" jobs, the longest, do not grow by them.
job_nginx() {
    suite plain ZKL_TEST_PARTS=shell ZKL_TEST_SHELL=nginx --
}
job_asan_nginx() {
    suite "$asan_build" ZKL_TEST_PREFIX=asan/ ZKL_TEST_PARTS=shell ZKL_TEST_SHELL=nginx --
}
# The checker on the namespaced cluster: a 5-node ensemble and the
# workers each in a network namespace of their own, with faults on their
# links (root only: skipped elsewhere, unless ZKL_TEST_REQUIRE_NETNS=1).
job_plain_netns() {
    suite plain ZKL_TEST_PARTS=shell ZKL_TEST_SHELL=netns --
}
# The ZooKeeper client's allocations failed in turn (test/zkalloc.c, the
# plain build only): every other one (each recipe starts on its own
# parity, so those all recipes make are all failed); the full sweep, about
# 6 minutes, is in run-long.sh.
job_plain_zkalloc() {
    suite plain ZKL_TEST_PARTS=zkalloc ZKL_ZKALLOC_STRIDE=2 --
}

# The ASan jobs run on build/tls-asan: the same sanitizers, its
# ZooKeeper C client Debian's own source with TLS and SASL added (plain
# sessions take the same paths), and one build fewer: on two cores CI
# time is CPU time, and a build costs two minutes of it. (The plain and
# valgrind jobs run Debian's client itself.)
asan_build=tls-asan
# Under ASan the checker runs half as long, and its own tests not at all:
# it is there for memory errors under faults; the plain job is the one
# that counts. The shell tests that run nothing built (objdump and nm,
# a grep of the tests, man pages, examples compiled with cc) say nothing
# new under ASan and run in the plain job only.
job_asan_c1() { suite "$asan_build" ZKL_TEST_PREFIX=asan/ ZKL_TEST_PARTS=c ZKL_TEST_SHARD=1/2 --; }
job_asan_c2() { suite "$asan_build" ZKL_TEST_PREFIX=asan/ ZKL_TEST_PARTS=c ZKL_TEST_SHARD=2/2 --; }
job_asan_soak() {
    suite "$asan_build" ZKL_TEST_PREFIX=asan/ ZKL_TEST_PARTS=shell ZKL_TEST_SHELL=soak \
        ZKL_SOAK_MINUTES=0.5 ZKL_SOAK_SELFTEST=0 --
}
job_asan_rest() {
    suite "$asan_build" ZKL_TEST_PREFIX=asan/ ZKL_TEST_PARTS="adapters shell ensemble" \
        ZKL_TEST_SHELL_SKIP="soak netns tls nginx build error-table examples man" --
}

# TLS and SASL (test/test-tls.sh) on build/tls-asan (AddressSanitizer and
# UBSan), whose ZooKeeper C client has both: secured servers, the failure
# cases, the suite's tests over TLS and SASL, a TLS ensemble's failover,
# the CLI, Curator over TLS; then its C tests again under valgrind, on
# build/tls.
job_tls() {
    suite tls-asan ZKL_TEST_PARTS=shell ZKL_TEST_SHELL=tls \
        ZKL_TEST_REQUIRE_TLS=1 --
}
job_tls_valgrind() {
    suite tls ZKL_TEST_PREFIX=valgrind/ ZKL_TEST_PARTS=shell ZKL_TEST_SHELL=tls \
        ZKL_TEST_REQUIRE_TLS=1 ZKL_TEST_TLS_C_ONLY=1 \
        ZKL_TEST_WRAPPER="$top/build/tls/libtool --mode=execute valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect --suppressions=$top/test/zookeeper-client.supp" --
}

# valgrind: the C tests, the adapters and the ensemble's tests, less
# what adds run time and no code path: the read/write lock's and the
# semaphore's fault matrices run the same code paths as the mutex's,
# which valgrind does run; the crossed multi-lock rounds those of the
# shorter multi-lock tests; the paced burst (3,300 locks) those of the
# shared-view tests; the staged cross-session handoff races (a proxy's
# latency against a read's answer) those of the cross-session handoff
# tests; and the lagging follower's minute and a half (a
# follower's timing against the leader's, on the paths of the other
# ensemble tests). ASan and LeakSanitizer run them all. (The long timing
# tests stay: valgrind alone finds reads of uninitialised memory, and
# in a lane of their own they cost no time.) A poll(2) refused for
# RLIMIT_NOFILE cannot be had under valgrind, which keeps that limit to
# itself.
vg_tests="$(sed -n 's/^T(\([a-z0-9_]*\),.*/=\1/p' test/test-list.h test/test-ensemble-list.h |
    grep -Ev '^=((rw|sem)_matrix_|multi_(two|three|crossed)|burst_paced|read_ahead_of|hand_across_never|poll_run_reports_a_refused_poll|ensemble_lagging_follower)') adapters"
vg() {
    suite plain ZKL_TEST_PREFIX=valgrind/ \
        ZKL_TEST_WRAPPER="$top/build/plain/libtool --mode=execute valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect --suppressions=$top/test/zookeeper-client.supp" \
        "$@"
}
# shellcheck disable=SC2086
job_valgrind_c1() { vg ZKL_TEST_PARTS=c ZKL_TEST_SHARD=1/2 -- $vg_tests; }
# shellcheck disable=SC2086
job_valgrind_c2() { vg ZKL_TEST_PARTS=c ZKL_TEST_SHARD=2/2 -- $vg_tests; }
# shellcheck disable=SC2086
job_valgrind_rest() { vg ZKL_TEST_PARTS="adapters ensemble" -- $vg_tests; }

job_fuzz() {
    echo "fuzzing, ${ZKL_FUZZ_SECONDS:-20} s per target"
    if ! bash fuzz/build.sh build/fuzz build/plain >build/fuzz.log 2>&1; then
        echo "FAIL: fuzz (build)"
        tail -20 build/fuzz.log
        echo "0 passed, 1 failed"
        return 1
    fi
    bash fuzz/run.sh build/fuzz "${ZKL_FUZZ_SECONDS:-20}"
}

job_packages() { bash test/packages.sh; }

# The README's install commands in a clean root (about 2 minutes here,
# 3 with nothing cached: the root bootstrapped, 290 MB of packages).
job_install() { bash test/install.sh; }

job_distcheck() {
    if ZKL_TEST_SMOKE=1 make -C build/plain distcheck >build/plain/distcheck.log 2>&1; then
        echo "PASS: distcheck"
        echo "1 passed, 0 failed"
    else
        echo "FAIL: distcheck"
        tail -40 build/plain/distcheck.log
        echo "0 passed, 1 failed"
        return 1
    fi
}

# Shown in this order; started longest first (as measured on
# 2026-11-28: install 364 s, down to asan_soak 113 s; install, which
# mostly waits on the package mirror, went 13th before and ended last),
# less those whose build is not there yet: they start as soon as it is.
shown=(builds plain_c1 plain_c2 plain_soak plain_netns plain_rest plain_zkalloc
       asan_c1 asan_c2 asan_soak asan_rest valgrind_c1 valgrind_c2
       valgrind_rest tls tls_valgrind nginx asan_nginx fuzz packages install
       distcheck)
started=(builds install asan_rest plain_rest asan_c2 plain_c2 asan_c1 plain_zkalloc
         valgrind_c2 plain_c1 plain_soak valgrind_c1 packages plain_netns
         tls_valgrind fuzz distcheck tls nginx asan_nginx asan_soak
         valgrind_rest)

# A job's closing line.
closing='^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$'

# ---- the lanes ----
# The build each job needs beyond the plain one.
declare -A needs=(
    [asan_c1]=tls [asan_c2]=tls [asan_soak]=tls [asan_rest]=tls
    [asan_nginx]=tls [tls]=tls [tls_valgrind]=tls)
declare -A pid_of
running=0
pending=("${started[@]}")
# The builds job is over (its .secs is written): what is not ready now
# never will be.
builds_over() { [ -e "$logs/builds.secs" ]; }
# A job's CPU time, its servers' and helpers' included (they inherit
# the control group), where a cgroup file system is writable (root): on
# two cores, CI time is CPU time, so this says what to cut. The job's
# shell leaves its group before reading it (the group is then removed
# once its daemons are gone; a group with one left is tidied by the next
# run).
cg_root=
for d in /sys/fs/cgroup/cpuacct /sys/fs/cgroup; do
    if [ -w "$d" ] && { [ -e "$d/cpuacct.usage" ] || [ -e "$d/cgroup.procs" ]; }; then
        cg_root=$d
        break
    fi
done
[ -z "$cg_root" ] || rmdir "$cg_root"/zklock-ci-* 2>/dev/null || true
cg_enter() { # JOB
    [ -n "$cg_root" ] && mkdir "$cg_root/zklock-ci-$1-$$" 2>/dev/null &&
        echo "$BASHPID" >"$cg_root/zklock-ci-$1-$$/cgroup.procs" 2>/dev/null
}
cg_leave() { # JOB: writes $logs/JOB.cpu (seconds)
    local g=$cg_root/zklock-ci-$1-$$ ns
    [ -n "$cg_root" ] && [ -d "$g" ] || return 0
    echo "$BASHPID" >"$cg_root/cgroup.procs" 2>/dev/null
    if [ -e "$g/cpuacct.usage" ]; then
        ns=$(cat "$g/cpuacct.usage")
    else
        ns=$(awk '$1 == "usage_usec" { print $2 * 1000 }' "$g/cpu.stat")
    fi
    echo $((ns / 1000000000)) >"$logs/$1.cpu"
    rmdir "$g" 2>/dev/null || true
}
start() {
    echo "-- $(date +%T) start $1"
    (
        t0=$SECONDS
        cg_enter "$1"
        "job_$1"
        rc=$?
        cg_leave "$1"
        echo $((SECONDS - t0)) >"$logs/$1.secs"
        exit $rc
    ) >"$logs/$1.out" 2>&1 </dev/null &
    pid_of[$1]=$!
    running=$((running + 1))
}
# Starts the first pending job that can start; fails at once one whose
# build failed. Returns 1 when none could start.
start_next() {
    local i n need
    for i in "${!pending[@]}"; do
        n=${pending[$i]}
        need=${needs[$n]:-}
        if [ -n "$need" ] && [ ! -e "$logs/ready.$need" ]; then
            builds_over || continue
            printf 'FAIL: %s (build/%s failed: see builds)\n0 passed, 1 failed\n' \
                "$n" "$need" >"$logs/$n.out"
            echo 0 >"$logs/$n.secs"
            unset "pending[$i]"
            return 0
        fi
        unset "pending[$i]"
        start "$n"
        return 0
    done
    return 1
}
# Polls (a job that waits for a build must start once it is there, not
# once another job ends): a job is over when its .secs is written.
while [ "${#pending[@]}" -gt 0 ] || [ "$running" -gt 0 ]; do
    for n in "${!pid_of[@]}"; do
        [ -e "$logs/$n.secs" ] || continue
        wait "${pid_of[$n]}"
        unset "pid_of[$n]"
        running=$((running - 1))
        echo "-- $(date +%T) done $n ($(cat "$logs/$n.secs") s$(
            [ -e "$logs/$n.cpu" ] && echo ", cpu $(cat "$logs/$n.cpu") s")):" \
            "$(grep -E "$closing" "$logs/$n.out" | tail -n 1)"
    done
    while [ "$running" -lt "$lanes" ] && start_next; do :; done
    sleep 1
done

# ---- the report ----
. "$top/test/tally.sh"
passed=0
failed=0
skipped=0
for n in "${shown[@]}"; do
    echo "== $n ($(cat "$logs/$n.secs" 2>/dev/null || echo '?') s$(
        [ -e "$logs/$n.cpu" ] && echo ", cpu $(cat "$logs/$n.cpu") s"))"
    cat "$logs/$n.out"
    tally "$logs/$n.out" "$n"
done
echo "== $((SECONDS - t_start)) s in all, $lanes lanes"
if [ "$skipped" = 0 ]; then
    echo "$passed passed, $failed failed"
else
    grep -h '^SKIP: ' "$logs"/*.out
    echo "$passed passed, $failed failed, $skipped skipped"
fi
[ "$failed" = 0 ]
