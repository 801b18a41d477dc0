# shellcheck shell=bash
# A clean Debian 12 root to test in, shared by test/packages.sh and
# test/install.sh: sourced after setting CHROOT_SUITE (the name before
# the "/" of each step's PASS/FAIL line). Provides:
#
#   $top, $work (a fresh directory, deleted at exit), $root ($work/root)
#   step NAME COMMAND...  one PASS/FAIL line with its time; the output in
#                         $work/NAME.log, its end shown on failure
#   finish                "N passed, N failed", exit status
#   make_root             bootstraps the root (or unpacks the cached one),
#                         points apt at the host's mirror, mounts /proc,
#                         /dev, /dev/pts, puts back the cached .debs
#   save_debs             keeps the .debs apt fetched for the next run
#   inroot COMMAND...     runs COMMAND in the root (clean environment)
#   apt_install PKG...    apt-get install in the root, no recommends
#   copy_tree DIR         the source tree's files (test/tree-files.sh)
#                         into DIR
#
# At exit every process still running in the root is killed, what is
# mounted under it unmounted, and $work deleted (ZKL_TEST_KEEP=1 keeps
# it); a script's own clean-up goes in a function chroot_on_exit.
#
# As root (debootstrap, chroot, mount), on Debian 12 with the packages of
# test/setup.sh, reaching only the Debian mirror that apt is set up for.
# ZKL_PKG_CACHE (default /var/cache/zklock-packages; empty: none) keeps
# the bootstrapped root as a tarball and the .debs apt fetched into it,
# so a re-run on the same machine neither bootstraps nor downloads again;
# scripts running at once bootstrap it once (a lock on the cache).
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${ZKL_PKG_CACHE-/var/cache/zklock-packages}
passed=0
failed=0

if [ "$(id -u)" != 0 ]; then
    echo "FAIL: $CHROOT_SUITE (needs root: debootstrap, chroot, mount)"
    echo "0 passed, 1 failed"
    exit 1
fi

work=$(mktemp -d "/tmp/zklock-$CHROOT_SUITE.XXXXXX")
chmod 755 "$work"
root=$work/root
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8

mounted() { # what is mounted under the root, deepest first
    awk -v r="$root/" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -r
}

# Processes whose root directory is the root (a server a test started
# there, a command that hung): they would outlive the test.
kill_root_processes() {
    local p r
    for p in /proc/[0-9]*; do
        r=$(readlink "$p/root" 2>/dev/null) || continue
        [ "$r" = "$root" ] && kill -KILL "${p#/proc/}" 2>/dev/null
    done
    return 0
}

chroot_cleanup() {
    local m
    declare -F chroot_on_exit >/dev/null && chroot_on_exit
    bash "$top/test/zkserver.sh" kill "$work/zk" >/dev/null 2>&1 || true
    kill_root_processes
    for m in $(mounted); do
        umount "$m" 2>/dev/null || umount -l "$m" || true
    done
    # rm -rf through a bind mount of /dev would empty the host's /dev.
    if [ -n "$(mounted)" ]; then
        echo "$CHROOT_SUITE: still mounted under $root; $work left in place" >&2
        return
    fi
    [ -n "${ZKL_TEST_KEEP:-}" ] || rm -rf --one-file-system "$work"
}
trap chroot_cleanup EXIT
trap 'exit 130' INT TERM

# step NAME COMMAND...: COMMAND's output goes to $work/NAME.log, shown
# (its end) only on failure; the time is on the line because the CI
# budget for these jobs is tight.
step() {
    local name=$1 t0=$EPOCHREALTIME rc t
    shift
    "$@" >"$work/$name.log" 2>&1
    rc=$?
    t=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
    if [ $rc = 0 ]; then
        passed=$((passed + 1))
        echo "PASS: $CHROOT_SUITE/$name ($t s)"
    else
        failed=$((failed + 1))
        echo "FAIL: $CHROOT_SUITE/$name ($t s)"
        sed 's/^/    /' "$work/$name.log" | tail -30
    fi
    return $rc
}

finish() {
    echo "$passed passed, $failed failed"
    [ "$failed" = 0 ]
    exit
}

inroot() {
    chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}

apt_install() {
    inroot apt-get install -y -q --no-install-recommends \
        -o Dpkg::Use-Pty=0 "$@"
}

copy_tree() { # DIR: the files a commit would hold, nothing built
    mkdir -p "$1" &&
    bash "$top/test/tree-files.sh" "$top" >"$work/files" &&
    tar -C "$top" --null -T "$work/files" -cf - | tar -C "$1" -xf -
}

mirror() { # the Debian mirror apt uses for bookworm
    local m=
    if [ -f /etc/apt/sources.list ]; then
        m=$(awk '$1 == "deb" { i = 2
                  if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
                  if ($(i + 1) == "bookworm") { print $i; exit } }' \
            /etc/apt/sources.list)
    fi
    if [ -z "$m" ] && [ -f /etc/apt/sources.list.d/debian.sources ]; then
        m=$(awk 'BEGIN { RS = "" }
                 /(^|\n)Suites:[^\n]*[ \t]bookworm([ \t]|\n|$)/ {
                     match($0, /(^|\n)URIs:[ \t]*[^ \t\n]+/)
                     s = substr($0, RSTART, RLENGTH); sub(/.*URIs:[ \t]*/, "", s)
                     print s; exit }' /etc/apt/sources.list.d/debian.sources)
    fi
    echo "${m:-http://deb.debian.org/debian}"
}

# The bootstrapped root, from the cache when it is there and less than a
# week old. With a cache, scripts running at once take turns (flock):
# the first bootstraps, the others unpack its tarball.
unpack_or_bootstrap() {
    local tarball=$cache/bookworm-minbase.tar m
    m=$(mirror)
    echo "mirror: $m"
    if [ -n "$cache" ] && [ -n "$(find "$tarball" -mtime -7 2>/dev/null)" ]; then
        echo "from $tarball"
        mkdir -p "$root" && tar -C "$root" --numeric-owner -xpf "$tarball"
        return
    fi
    debootstrap --variant=minbase bookworm "$root" "$m" || return 1
    if [ -n "$cache" ]; then
        tar -C "$root" --numeric-owner -cf "$tarball.$$" . &&
        mv "$tarball.$$" "$tarball"
    fi
}

make_root() {
    local f k
    if [ -n "$cache" ]; then
        mkdir -p "$cache" || return 1
        (
            flock 9 || exit 1
            unpack_or_bootstrap
        ) 9>"$cache/.lock" || return 1
    else
        unpack_or_bootstrap || return 1
    fi
    # apt in the root reads what the host's reads (mirror, updates,
    # security), with the keyrings those name.
    : >"$root/etc/apt/sources.list"
    [ -f /etc/apt/sources.list ] && cp /etc/apt/sources.list "$root/etc/apt/"
    for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] && cp "$f" "$root/etc/apt/sources.list.d/"
    done
    for k in $(cat "$root"/etc/apt/sources.list "$root"/etc/apt/sources.list.d/* |
               grep -oiE 'signed-by[=:][ ]*[^] ]+' | sed 's/^[^=:]*[=:] *//'); do
        [ -f "$k" ] && [ ! -e "$root$k" ] && cp "$k" "$root$k"
    done
    apt-config dump | grep -E '^Acquire::(http|https)::Proxy' \
        >"$root/etc/apt/apt.conf.d/99host-proxy" || true
    # 6 MB of package descriptions per update that nothing here reads.
    echo 'Acquire::Languages "none";' >"$root/etc/apt/apt.conf.d/99no-languages"
    cp -L /etc/resolv.conf "$root/etc/resolv.conf"
    # Nothing installed here may start a service on the host's network.
    printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
    chmod 755 "$root/usr/sbin/policy-rc.d"
    # Minimal images drop manual pages on install (dpkg path-exclude);
    # the tests read ours.
    for f in "$root"/etc/dpkg/dpkg.cfg.d/*; do
        [ -f "$f" ] && grep -q 'path-exclude.*/usr/share/man' "$f" &&
            { echo "dropping man excludes of $f"; sed -i '\|path-exclude.*/usr/share/man|d' "$f"; }
    done
    mount -t proc proc "$root/proc" &&
    mount --bind /dev "$root/dev" &&
    mount --bind /dev/pts "$root/dev/pts" || return 1
    if [ -n "$cache" ] && [ -d "$cache/debs" ]; then
        cp "$cache"/debs/*.deb "$root/var/cache/apt/archives/" 2>/dev/null
    fi
    return 0
}

save_debs() {
    [ -n "$cache" ] || return 0
    mkdir -p "$cache/debs" &&
    cp -n "$root"/var/cache/apt/archives/*.deb "$cache/debs/" 2>/dev/null
    return 0
}
