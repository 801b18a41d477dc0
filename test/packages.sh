#!/usr/bin/env bash
# The Debian packages end to end: builds them from the checkout's files
# (tracked, and untracked but not ignored; an exported tree without .git
# works too) with dpkg-buildpackage, checks them with lintian (errors and
# warnings fail), installs them with apt into a clean Debian 12 minbase
# root, and there builds the examples (one per loop) with nothing but
# pkg-config and runs them, the zklock tool and man against a ZooKeeper
# server started outside the root (a chroot shares the network
# namespace). One PASS/FAIL line per step with its time, then
# "N passed, N failed".
#
#   test/packages.sh
#
# As root (debootstrap, chroot, mount), on Debian 12 with the packages of
# test/setup.sh, reaching only the Debian mirror that apt is set up for.
# ZKL_PKG_CACHE (default /var/cache/zklock-packages; empty: none) keeps
# the bootstrapped root as a tarball and the .debs apt fetched into it,
# so a re-run on the same machine neither bootstraps nor downloads again.
# ZKL_TEST_KEEP=1 keeps the work directory (packages, logs, root).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cache=${ZKL_PKG_CACHE-/var/cache/zklock-packages}
passed=0
failed=0

if [ "$(id -u)" != 0 ]; then
    echo "FAIL: packages (needs root: debootstrap, chroot, mount)"
    echo "0 passed, 1 failed"
    exit 1
fi

work=$(mktemp -d /tmp/zklock-packages.XXXXXX)
chmod 755 "$work"
root=$work/root
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8

mounted() { # what is mounted under the root, deepest first
    awk -v r="$root/" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -r
}

cleanup() {
    local m
    [ -n "${uv_pid:-}" ] && kill -KILL "$uv_pid" 2>/dev/null
    bash "$top/test/zkserver.sh" kill "$work/zk" >/dev/null 2>&1 || true
    for m in $(mounted); do
        umount "$m" 2>/dev/null || umount -l "$m" || true
    done
    # rm -rf through a bind mount of /dev would empty the host's /dev.
    if [ -n "$(mounted)" ]; then
        echo "packages: still mounted under $root; $work left in place" >&2
        return
    fi
    [ -n "${ZKL_TEST_KEEP:-}" ] || rm -rf --one-file-system "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# step NAME COMMAND...: COMMAND's output goes to $work/NAME.log, shown
# (its end) only on failure; the time is on the line because the CI
# budget for this stage is tight.
step() {
    local name=$1 t0=$EPOCHREALTIME rc t
    shift
    "$@" >"$work/$name.log" 2>&1
    rc=$?
    t=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
    if [ $rc = 0 ]; then
        passed=$((passed + 1))
        echo "PASS: packages/$name ($t s)"
    else
        failed=$((failed + 1))
        echo "FAIL: packages/$name ($t s)"
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
    chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}

apt_install() {
    inroot apt-get install -y -q --no-install-recommends \
        -o Dpkg::Use-Pty=0 "$@"
}

# ---- 1. build ----
src=$work/zklock-0.1.0

# The files of an exported tree (git archive, make dist: no .git) that a
# commit would hold: its .gitignore files applied as git applies them
# (per directory, last match wins, "!" re-includes, "/" anchors, a
# trailing "/" means directories, an ignored directory is left whole).
# NUL-separated, relative to the top.
tree_files() {
    python3 - "$top" <<'PY'
import fnmatch, os, sys

top = sys.argv[1]

def rules(d, base):
    out = []
    try:
        lines = open(os.path.join(d, ".gitignore")).read().splitlines()
    except OSError:
        return out
    for p in lines:
        p = p.rstrip()
        if not p or p.startswith("#"):
            continue
        neg = p.startswith("!")
        p = p[1:] if neg else p
        dir_only = p.endswith("/")
        p = p.rstrip("/")
        anchored = "/" in p
        out.append((base, p.lstrip("/"), neg, dir_only, anchored))
    return out

def ignored(rel, is_dir, active):
    verdict = False
    for base, p, neg, dir_only, anchored in active:
        if dir_only and not is_dir:
            continue
        if base and not rel.startswith(base + "/"):
            continue
        sub = rel[len(base) + 1:] if base else rel
        if anchored:
            a, b = p.split("/"), sub.split("/")
            hit = len(a) == len(b) and all(map(fnmatch.fnmatchcase, b, a))
        else:
            hit = fnmatch.fnmatchcase(sub.rsplit("/", 1)[-1], p)
        if hit:
            verdict = not neg
    return verdict

def walk(d, rel, active):
    active = active + rules(d, rel)
    for name in sorted(os.listdir(d)):
        r = rel + "/" + name if rel else name
        full = os.path.join(d, name)
        is_dir = os.path.isdir(full) and not os.path.islink(full)
        if name == ".git" or ignored(r, is_dir, active):
            continue
        if is_dir:
            walk(full, r, active)
        else:
            sys.stdout.write(r + "\0")

walk(top, "", [])
PY
}

build() {
    mkdir -p "$src" || return 1
    # The files a commit would hold, so nothing built in the checkout
    # (configure, objects) leaks into the package build: git's list in a
    # work tree, else (an exported tree, and git is not among the
    # packages test/setup.sh installs) the same rules applied by hand.
    if command -v git >/dev/null &&
        git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        echo "files: git ls-files"
        git -C "$top" ls-files -z -co --exclude-standard
    else
        echo "files: no git work tree; the tree's .gitignore rules"
        tree_files
    fi >"$work/files" || return 1
    (cd "$top" && while IFS= read -r -d '' f; do
        [ -e "$f" ] && printf '%s\0' "$f"
    done) <"$work/files" |
        tar -C "$top" --null -T - -cf - | tar -C "$src" -xf - &&
    # The source package too (a second), only so lintian can check
    # debian/control and debian/copyright, which a -b build never reads
    # as source.
    (cd "$work" && dpkg-source -b "${src##*/}") &&
    (cd "$src" && dpkg-buildpackage -us -uc -b -jauto)
}
step build build || finish

# Errors and warnings fail (lintian's exit status, which also says when
# lintian itself could not run); a tag that is wrong for this package is
# overridden in debian/*.lintian-overrides with the reason.
run_lintian() {
    local rc
    lintian --display-info --fail-on error,warning \
        "$work"/zklock_*.changes "$work"/zklock_*.dsc >"$work/lintian.out" 2>&1
    rc=$?
    cat "$work/lintian.out"
    [ "$rc" = 0 ] || echo "lintian exited $rc"
    return "$rc"
}
step lintian run_lintian

# ---- 2. a clean root ----
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

make_root() {
    local tarball=$cache/bookworm-minbase.tar m f k
    m=$(mirror)
    echo "mirror: $m"
    if [ -n "$cache" ] && [ -n "$(find "$tarball" -mtime -7 2>/dev/null)" ]; then
        echo "from $tarball"
        mkdir -p "$root" && tar -C "$root" --numeric-owner -xpf "$tarball" || return 1
    else
        debootstrap --variant=minbase bookworm "$root" "$m" || return 1
        if [ -n "$cache" ]; then
            mkdir -p "$cache" &&
            tar -C "$root" --numeric-owner -cf "$tarball.$$" . &&
            mv "$tarball.$$" "$tarball"
        fi
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
    # the man step needs ours.
    for f in "$root"/etc/dpkg/dpkg.cfg.d/*; do
        [ -f "$f" ] && grep -q 'path-exclude.*/usr/share/man' "$f" &&
            { echo "dropping man excludes of $f"; sed -i '\|path-exclude.*/usr/share/man|d' "$f"; }
    done
    mount -t proc proc "$root/proc" &&
    mount --bind /dev "$root/dev" &&
    mount --bind /dev/pts "$root/dev/pts" || return 1
    # The packages just built, as a repository apt resolves like any
    # other: so the Depends of each one are what gets tested.
    mkdir -p "$root/zklock-repo" || return 1
    for f in "$work"/*.deb; do
        case $f in *-dbgsym_*) ;; *) cp "$f" "$root/zklock-repo/" || return 1 ;; esac
    done
    (cd "$root/zklock-repo" && dpkg-scanpackages -m . >Packages 2>/dev/null) &&
    echo 'deb [trusted=yes] file:/zklock-repo ./' \
        >"$root/etc/apt/sources.list.d/zklock.list" || return 1
    if [ -n "$cache" ] && [ -d "$cache/debs" ]; then
        cp "$cache"/debs/*.deb "$root/var/cache/apt/archives/" 2>/dev/null
    fi
    inroot apt-get update -q
}
step chroot make_root || finish

save_debs() {
    [ -n "$cache" ] || return 0
    mkdir -p "$cache/debs" &&
    cp -n "$root"/var/cache/apt/archives/*.deb "$cache/debs/" 2>/dev/null
    return 0
}

# ---- 3. the libuv adapter alone, then the rest ----
step install-libuv-dev apt_install libzklock-libuv-dev gcc libc6-dev pkg-config || finish
no_libevent() {
    local out
    out=$(inroot dpkg -l | grep libevent)
    [ -z "$out" ] || { echo "installed with libzklock-libuv-dev:"; echo "$out"; return 1; }
}
step no-libevent no_libevent

H=
start_zk() { H=$(bash "$top/test/zkserver.sh" start "$work/zk") && echo "$H"; }
step zookeeper start_zk || finish

# The examples (examples/*.c) are the programs: each is built the way its
# header says, with nothing but what `pkg-config MODULES` gives.
mkdir -p "$root/zklock-ex" && cp "$src"/examples/*.c "$root/zklock-ex/"

build_example() { # NAME MODULES...
    local name=$1
    shift
    inroot sh -c "cd /zklock-ex && gcc -Wall -Wextra -Werror -o $name \
        $name.c \$(pkg-config --cflags --libs $*)"
}

# example NAME MODULES...: a lock program (HOSTS PATH) takes a lock and
# lets it go.
example() {
    build_example "$@" &&
    inroot timeout 60 "/zklock-ex/$1" "$H" "/pkgtest/$1"
}

# The libuv example is a server: one request through it takes and lets
# go a lock, and SIGTERM stops it cleanly.
uv_pid=
libuv_server() {
    local port='' answer rc i
    build_example libuv-server zklock zklock-libuv || return 1
    # Not through inroot: $! must be the server itself (chroot and env
    # exec it), for the kill below.
    chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin LC_ALL=C.UTF-8 \
        /zklock-ex/libuv-server "$H" 0 /pkgtest/libuv-server \
        >"$work/uv.out" 2>&1 &
    uv_pid=$!
    for i in $(seq 100); do
        port=$(sed -n 's/^listening on \([0-9]*\)$/\1/p' "$work/uv.out")
        [ -n "$port" ] && break
        sleep 0.1
    done
    if [ -n "$port" ]; then
        answer=$( (exec 3<>"/dev/tcp/127.0.0.1/$port" && printf 'k1\n' >&3 &&
                   IFS= read -r -t 15 line <&3 && echo "$line") 2>&1)
        echo "answer: $answer"
    fi
    kill -TERM "$uv_pid" 2>/dev/null
    for i in $(seq 50); do
        # Exited (a zombie until the wait below) or gone.
        [ "$(awk '{ print $3 }' "/proc/$uv_pid/stat" 2>/dev/null || echo Z)" = Z ] &&
            break
        sleep 0.1
    done
    [ "$i" = 50 ] && kill -KILL "$uv_pid" 2>/dev/null && echo "no exit on SIGTERM"
    wait "$uv_pid"
    rc=$?
    uv_pid=
    cat "$work/uv.out"
    case "${answer:-}" in
        "k1 "[0-9]*" "[0-9]*" "[0-9]*) ;;
        *) return 1 ;;
    esac
    [ "$rc" = 0 ] || { echo "exit status $rc"; return 1; }
}
step libuv-server libuv_server
step poll-lock example poll-lock zklock zklock-poll

# The static archive and zklock.pc's Libs.private: libzklock.a and
# libzookeeper_st.a linked in, libc still shared.
static_poll() {
    inroot sh -c 'cd /zklock-ex && gcc -Wall -Wextra -Werror \
        -o poll-lock-static poll-lock.c $(pkg-config --cflags zklock zklock-poll) \
        -Wl,-Bstatic $(pkg-config --static --libs-only-l zklock zklock-poll) \
        -Wl,-Bdynamic' &&
    ! inroot ldd /zklock-ex/poll-lock-static | grep -E 'zklock|zookeeper' &&
    inroot timeout 60 /zklock-ex/poll-lock-static "$H" /pkgtest/static
}
step poll-lock-static static_poll

# Every package built (the -dev ones bring their runtime libraries), so
# an adapter added to debian/control is installed here with no edit.
mapfile -t ours < <(sed -n 's/^Package: //p' "$root/zklock-repo/Packages")
mapfile -t rest < <(printf '%s\n' "${ours[@]}" | grep -E -- '-dev$|^zklock$')
step install-rest apt_install "${rest[@]}" man-db || finish
save_debs

# ---- 4. every loop, the tool, the manual ----
# examples/LOOP-lock.c for each loop (poll's ran above), with the
# module zklock-LOOP.
for f in "$src"/examples/*-lock.c; do
    name=$(basename "$f" .c)
    [ "$name" = poll-lock ] && continue
    step "$name" example "$name" zklock "zklock-${name%-lock}"
done

cli() {
    local rc
    # (grep without -q: under pipefail, a grep that quits early can fail
    # the writer with SIGPIPE.)
    inroot zklock --help | grep '^usage: zklock run' >/dev/null || return 1
    inroot zklock --version | grep -x 'zklock 0\.1\.0' || return 1
    inroot zklock run -s "$H" /pkgtest/x -- true || return 1
    inroot zklock run -s "$H" /pkgtest/x -- sh -c 'exit 7'
    rc=$?
    [ "$rc" = 7 ] || { echo "run -- sh -c 'exit 7' exited $rc"; return 1; }
    # Both holds ended with their commands: no node left behind.
    [ -z "$(inroot zklock ls -s "$H" /pkgtest/x)" ]
}
step cli cli

# Every page the packages install, aliases included, found by name and
# rendered.
manpages() {
    local page sec name out n=0
    for page in $(inroot dpkg -L "${ours[@]}" | grep -E '^/usr/share/man/man[0-9]/'); do
        [ -d "$root$page" ] && continue
        sec=${page#/usr/share/man/man}; sec=${sec%%/*}
        name=${page##*/}; name=${name%.gz}; name=${name%.*}
        if ! out=$(inroot env MANWIDTH=80 man -P cat "$sec" "$name") ||
            [ -z "$out" ]; then
            echo "man $sec $name: nothing"
            return 1
        fi
        n=$((n + 1))
    done
    echo "$n pages"
    [ "$n" -gt 0 ] &&
    inroot man -w zklock | grep '/man1/zklock\.1' &&
    inroot man -w zkl_lock_new | grep '/man3/zkl_lock_new\.3'
}
step man manpages

finish
