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
# As root; the root, its cache (ZKL_PKG_CACHE) and what the machine needs
# are test/chroot.sh's. ZKL_TEST_KEEP=1 keeps the work directory
# (packages, logs, root).
set -uo pipefail
CHROOT_SUITE=packages
. "$(dirname "$0")/chroot.sh"

# The libuv server of step 4, killed if the script ends before it does.
chroot_on_exit() {
    [ -n "${uv_pid:-}" ] && kill -KILL "$uv_pid" 2>/dev/null
    return 0
}

# ---- 1. build ----
src=$work/zklock-0.1.0

build() {
    # The files a commit would hold, so nothing built in the checkout
    # (configure, objects) leaks into the package build.
    copy_tree "$src" &&
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
# The packages just built, as a repository apt resolves like any other:
# so the Depends of each one are what gets tested.
root_with_repo() {
    local f
    make_root || return 1
    mkdir -p "$root/zklock-repo" || return 1
    for f in "$work"/*.deb; do
        case $f in *-dbgsym_*) ;; *) cp "$f" "$root/zklock-repo/" || return 1 ;; esac
    done
    (cd "$root/zklock-repo" && dpkg-scanpackages -m . >Packages 2>/dev/null) &&
    echo 'deb [trusted=yes] file:/zklock-repo ./' \
        >"$root/etc/apt/sources.list.d/zklock.list" || return 1
    inroot apt-get update -q
}
step chroot root_with_repo || finish

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
    inroot zklock-bench --help | grep '^usage: zklock-bench' >/dev/null || return 1
    inroot zklock run -s "$H" /pkgtest/x -- true || return 1
    inroot zklock run -s "$H" /pkgtest/x -- sh -c 'exit 7'
    rc=$?
    [ "$rc" = 7 ] || { echo "run -- sh -c 'exit 7' exited $rc"; return 1; }
    # Both holds ended with their commands: no node left behind.
    [ -z "$(inroot zklock ls -s "$H" /pkgtest/x)" ]
}
step cli cli

# The nginx module, as Debian's nginx modules are: installed with nginx,
# enabled through /etc/nginx/modules-enabled, loaded by the package's
# own nginx; a request through it holds a lock (its token comes back in
# a header) and leaves no node.
nginx_module() {
    local port answer
    apt_install libnginx-mod-http-zklock || return 1
    inroot test -e /etc/nginx/modules-enabled/50-mod-http-zklock.conf || {
        echo "not enabled:"; ls -l "$root/etc/nginx/modules-enabled"; return 1; }
    port=$((20000 + RANDOM % 10000))
    mkdir -p "$root/zklock-ex/www/w" && echo held >"$root/zklock-ex/www/w/k"
    cat >"$root/zklock-ex/nginx.conf" <<EOF
include /etc/nginx/modules-enabled/*.conf;
error_log /zklock-ex/nginx-error.log info;
pid /zklock-ex/nginx.pid;
events {}
http {
    access_log off;
    zklock_servers $H;
    server {
        listen 127.0.0.1:$port;
        root /zklock-ex/www;
        add_header X-Zklock-Token \$zklock_token always;
        location /w/ { zklock \$uri timeout=5s; }
    }
}
EOF
    inroot nginx -t -c /zklock-ex/nginx.conf || return 1
    inroot nginx -c /zklock-ex/nginx.conf || return 1
    for _ in $(seq 50); do
        answer=$( (exec 3<>"/dev/tcp/127.0.0.1/$port" &&
                   printf 'GET /w/k HTTP/1.0\r\n\r\n' >&3 && cat <&3) 2>/dev/null)
        [ -n "$answer" ] && break
        sleep 0.1
    done
    inroot nginx -c /zklock-ex/nginx.conf -s quit
    echo "$answer"
    cat "$root/zklock-ex/nginx-error.log"
    echo "$answer" | grep -q '^X-Zklock-Token: [0-9]' || return 1
    echo "$answer" | grep -q '^held' || return 1
    for _ in $(seq 50); do
        [ ! -e "$root/zklock-ex/nginx.pid" ] && break
        sleep 0.1
    done
    [ -z "$(inroot zklock ls -s "$H" /zklock/nginx/%2Fw%2Fk)" ]
}
step nginx-module nginx_module

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
    inroot man -w zklock-bench | grep '/man1/zklock-bench\.1' &&
    inroot man -w zkl_lock_new | grep '/man3/zkl_lock_new\.3'
}
step man manpages

finish
