#!/usr/bin/env bash
# README.md's "Installing" section, word for word, in a clean Debian 12
# root: its shell blocks are taken from README.md itself and run as root
# (with sudo installed, which the README's commands use) in a fresh
# debootstrap minbase root holding a copy of the source tree; any
# command that fails fails the test. Then the installed result is
# checked: zklock and zklock-bench found on PATH and run (--version,
# --help), no library missing, the manual (man zklock, zklock-bench,
# zklock(3), a function's alias), pkg-config and an example built with
# it against the installed headers and libraries; the CLI black-box
# against the ZooKeeper the README starts (a command under a lock, a busy
# -n, ls, exit status passed on, no node left), a benchmark run that
# leaves no node there, the server's connection limit as the README
# states it (a run of 70 sessions refused from one address) and as its
# commands raise it (the same run then passes); and test/test-cli.sh on
# the installed zklock, against a server of its own in the root.
#
#   test/install.sh
#
# The README marks its blocks with a comment on the line before the
# fence:
#     <!-- install: build -->     run first, in the host's network (apt)
#     <!-- install: server -->    then, in a network namespace of the
#                                 test's own, so the server's port 2181
#                                 is the root's alone
#     <!-- install: limit -->     raising the connection limit, run
#                                 after the limit was seen
# Blocks of one kind run as one script (bash -e), in README order, from
# the copy of the tree (/root/zklock).
#
# As root; the root and its cache (ZKL_PKG_CACHE) are test/chroot.sh's.
# ZKL_TEST_KEEP=1 keeps the work directory.
set -uo pipefail
CHROOT_SUITE=install
. "$(dirname "$0")/chroot.sh"
. "$top/test/tally.sh"
skipped=0

readme=$top/README.md
ns=zklinstall$$
chroot_on_exit() {
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
    ip netns delete "$ns" 2>/dev/null
    return 0
}

# blocks KIND: the commands of README's ```sh blocks marked KIND.
blocks() {
    awk -v want="<!-- install: $1 -->" '
        prev == want && /^```sh[ \t]*$/ { on = 1; n++; prev = ""; next }
        on && /^```[ \t]*$/ { on = 0; next }
        on { print; next }
        { prev = $0 }
        END { if (n == 0) exit 1 }' "$readme"
}

# readme_script KIND: the marked blocks as one script in the root.
readme_script() {
    local body
    body=$(blocks "$1") ||
        { echo "README.md has no block marked <!-- install: $1 -->"; return 1; }
    {
        echo "set -ex"
        echo "cd /root/zklock"
        echo "$body"
    } >"$root/root/readme-$1.sh"
    echo "README.md, <!-- install: $1 --> blocks:"
    echo "$body"
    echo "----"
}

# In the root and in the test's network namespace (each program execs
# the next: the pid of "${innet_cmd[@]}" CMD & is CMD's).
innet_cmd=(ip netns exec "$ns" chroot "$root" /usr/bin/env -i
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    HOME=/root LC_ALL=C.UTF-8)
innet() { "${innet_cmd[@]}" "$@"; }

# ---- 1. the root, with what the README takes for granted ----
prepare() {
    make_root || return 1
    # A person answers apt's question; here the configuration does.
    echo 'APT::Get::Assume-Yes "true";' >"$root/etc/apt/apt.conf.d/90assume-yes"
    # An installed system knows its own name (sudo looks it up; there is
    # no DNS in the test's network namespace).
    echo "127.0.1.1 $(hostname)" >>"$root/etc/hosts"
    # sudo drops DEBIAN_FRONTEND; nobody is there to answer debconf.
    echo 'debconf debconf/frontend select Noninteractive' |
        inroot debconf-set-selections || return 1
    inroot apt-get update -q &&
    apt_install sudo &&
    copy_tree "$root/root/zklock" &&
    ip netns add "$ns" &&
    ip netns exec "$ns" ip link set lo up
}
step chroot prepare || finish

# ---- 2. the README's commands ----
run_readme() { # KIND [in the namespace]
    readme_script "$1" || return 1
    if [ "${2:-}" = ns ]; then
        innet bash /root/readme-"$1".sh </dev/null
    else
        inroot bash /root/readme-"$1".sh </dev/null
    fi
}
step readme-build run_readme build || finish
save_debs
step readme-server run_readme server ns || finish

# ---- 3. what is installed ----
installed() {
    local out
    [ "$(innet sh -c 'command -v zklock')" = /usr/local/bin/zklock ] ||
        { echo "zklock is not /usr/local/bin/zklock"; return 1; }
    [ "$(innet sh -c 'command -v zklock-bench')" = /usr/local/bin/zklock-bench ] ||
        { echo "zklock-bench is not /usr/local/bin/zklock-bench"; return 1; }
    innet zklock --version | grep -x 'zklock [0-9][0-9.]*' || return 1
    innet zklock-bench --version | grep -x 'zklock-bench [0-9][0-9.]*' || return 1
    out=$(innet zklock --help) || { echo "zklock --help failed"; return 1; }
    echo "$out" | grep '^usage: zklock run' >/dev/null || return 1
    out=$(innet zklock-bench --help) || { echo "zklock-bench --help failed"; return 1; }
    echo "$out" | grep '^usage: zklock-bench' >/dev/null || return 1
    # Every library found (the loader's cache knows them: ldconfig ran).
    ! innet ldd /usr/local/bin/zklock /usr/local/bin/zklock-bench | grep 'not found'
}
step installed installed

manual() {
    local page
    for page in "1 zklock" "1 zklock-bench" "3 zklock" "3 zkl_lock_new" "3 zkl_lock_acquire"; do
        # shellcheck disable=SC2086
        innet env MANWIDTH=80 man -P cat $page >"$work/man.out" 2>&1 &&
            [ -s "$work/man.out" ] || { echo "man $page:"; cat "$work/man.out"; return 1; }
    done
    # The pages make install put under /usr/local (Debian's
    # /usr/local/man is a link to share/man), not some other copy.
    for page in zklock zklock-bench; do
        innet man -w "$page" >"$work/man.out" 2>&1
        grep -xE "/usr/local/(share/)?man/man1/$page\.1" "$work/man.out" ||
            { echo "man -w $page:"; cat "$work/man.out"; return 1; }
    done
}
step man manual

# The installed headers and libraries, found by pkg-config alone: the
# examples of the tree built the way their headers say, run against the
# README's server (127.0.0.1:2181).
pkgconfig() {
    innet pkg-config --modversion zklock zklock-poll zklock-libevent zklock-libuv \
        zklock-libev zklock-glib zklock-sdevent || return 1
    innet sh -c 'cd /root && cp zklock/examples/poll-lock.c zklock/examples/libevent-lock.c . &&
        cc -Wall -Wextra -Werror -o poll-lock poll-lock.c $(pkg-config --cflags --libs zklock zklock-poll) &&
        cc -Wall -Wextra -Werror -o libevent-lock libevent-lock.c \
            $(pkg-config --cflags --libs zklock zklock-libevent)' || return 1
    innet timeout 60 /root/poll-lock 127.0.0.1:2181 /install/poll &&
    innet timeout 60 /root/libevent-lock 127.0.0.1:2181 /install/libevent
}
step pkg-config pkgconfig

# ---- 4. the CLI, black-box, on the README's server (no -s: the default) ----
wait_holders() { # PATH N: until ls shows N contenders (10 s)
    local i
    for i in $(seq 100); do
        [ "$(innet zklock ls "$1" | wc -l)" = "$2" ] && return 0
        sleep 0.1
    done
    echo "$1: $(innet zklock ls "$1" | wc -l) contenders, wanted $2"
    return 1
}
cli() {
    local out rc holder
    out=$(innet zklock run /install/cli -- sh -c 'echo "held $ZKLOCK_PATH"') || return 1
    [ "$out" = "held /install/cli" ] || { echo "got: $out"; return 1; }
    innet zklock run /install/cli -- sh -c 'exit 7'
    rc=$?
    [ "$rc" = 7 ] || { echo "exit status $rc, not 7"; return 1; }
    # A holder; meanwhile -n gives up at once with 1, and ls shows it.
    "${innet_cmd[@]}" zklock run /install/cli -- sleep 30 &
    holder=$!
    wait_holders /install/cli 1 || { kill "$holder"; return 1; }
    innet zklock run -n /install/cli -- echo SHOULD-NOT-RUN >"$work/busy.out" 2>&1
    rc=$?
    cat "$work/busy.out"
    [ "$rc" = 1 ] || { echo "busy -n exited $rc, not 1"; kill "$holder"; return 1; }
    ! grep -q SHOULD-NOT-RUN "$work/busy.out" || { kill "$holder"; return 1; }
    innet zklock ls -l /install/cli | grep -E '^mutex +\* +_c_' ||
        { innet zklock ls -l /install/cli; kill "$holder"; return 1; }
    # SIGTERM to zklock is passed on to its command; the hold ends.
    kill -TERM "$holder"
    wait "$holder"
    rc=$?
    [ "$rc" = 143 ] || { echo "holder exited $rc, not 143"; return 1; }
    wait_holders /install/cli 0
}
step cli cli

zkcli_root() { # the server's root children, one per line, as zkCli.sh lists them
    innet /usr/share/zookeeper/bin/zkCli.sh -server 127.0.0.1:2181 ls / 2>/dev/null |
        tail -n 1 | sed -n 's/^\[\(.*\)\]$/\1/p' | tr -d ' ' | tr ',' '\n' | sort
}
# Nothing new at the root (the server may meanwhile delete the empty
# containers the CLI step left: fewer is fine).
bench_clean() {
    zkcli_root >"$work/root.before"
    echo "root before: $(tr "\n" " " <"$work/root.before")"
    [ -s "$work/root.before" ] || return 1
    innet zklock-bench serial --n 50 || return 1
    innet zklock-bench raw --pairs 200 --inflight 20 --list || return 1
    zkcli_root >"$work/root.after"
    echo "root after: $(tr "\n" " " <"$work/root.after")"
    [ -s "$work/root.after" ] &&
    [ -z "$(comm -13 "$work/root.before" "$work/root.after")" ]
}
step bench-leaves-nothing bench_clean

# ---- 5. the connection limit, as the README states it and raises it ----
# 70 sessions of one address: refused past 60 by Debian's default.
over_limit() { innet zklock-bench handoff --waiters 70 --sessions 70 --limit 120; }
limit_refused() {
    local rc
    over_limit >"$work/limit.out" 2>&1
    rc=$?
    tail -3 "$work/limit.out"
    [ "$rc" = 1 ] && grep -q 'cannot connect' "$work/limit.out"
}
step limit-60 limit_refused
step readme-limit run_readme limit ns
step limit-raised over_limit

# ---- 6. test-cli.sh on the installed zklock ----
# Against a server of the tests' own (test/zkserver.sh, in the root and
# the namespace): the tests restart it.
cli_suite() {
    local hosts
    # The tests' own tools, which the README's user does not need: a
    # pty and sockets (python3), pgrep (procps).
    apt_install python3 procps >/dev/null || return 1
    hosts=$(innet bash /root/zklock/test/zkserver.sh start /root/zk-cli) || return 1
    innet env ZKL_TEST_ZKLOCK=/usr/local/bin/zklock ZKL_TEST_PREFIX=install/ \
        ZKL_TEST_HOSTS="$hosts" ZKL_TEST_ZKDIR=/root/zk-cli \
        top_srcdir=/root/zklock top_builddir=/nonexistent \
        timeout 600 bash /root/zklock/test/test-cli.sh </dev/null
}
t0=$EPOCHREALTIME
cli_suite >"$work/test-cli.out" 2>&1
grep -E '^(PASS|FAIL|SKIP): |^    ' "$work/test-cli.out"
before=$failed
tally "$work/test-cli.out" install/test-cli
[ "$failed" = "$before" ] || tail -20 "$work/test-cli.out"
echo "# test-cli.sh: $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s"

finish
