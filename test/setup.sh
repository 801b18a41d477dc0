#!/usr/bin/env bash
# Installs what zklock needs on Debian 12 (when missing) and builds it:
#   build/plain  the normal build
#   build/asan   AddressSanitizer + UBSan (only with --asan)
#   build/tls    against a ZooKeeper C client with TLS and SASL, built
#                from Debian's source into build/zk-tls by
#                deps/build-zookeeper-client.sh --prefix (only with
#                --tls; cached in /var/cache/zklock, as the script says)
#   build/tls-asan  the same with AddressSanitizer + UBSan (--asan --tls)
# Used by examples/run-demo.sh, test/run-all.sh and .ci/run.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

PKGS="build-essential autoconf automake libtool pkg-config
      libzookeeper-st-dev libevent-dev zookeeper
      openjdk-17-jdk-headless libcurator-recipes-java procps iproute2 valgrind
      clang libclang-rt-14-dev python3
      libuv1-dev libev-dev libglib2.0-dev libsystemd-dev
      debhelper dh-autoreconf lintian debootstrap fakeroot man-db groff-base
      nginx nginx-dev curl"

if [ "${1:-}" = --packages ]; then
    echo $PKGS
    exit 0
fi

missing=()
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "== installing: ${missing[*]}"
    SUDO=
    [ "$(id -u)" = 0 ] || SUDO=sudo
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -q >/dev/null
    $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt Makefile.in ]; then
    echo "== autoreconf"
    autoreconf -fi >/dev/null 2>&1
fi
# Out-of-tree builds need a source tree that was never configured in place.
[ -f config.status ] && make distclean >/dev/null 2>&1 || true

build() { # dir, configure args...
    local dir=$1
    shift
    mkdir -p "$dir"
    if [ ! -f "$dir/config.status" ]; then
        echo "== configure $dir $*"
        (cd "$dir" && "$top/configure" -q "$@")
    fi
    echo "== make $dir"
    make -C "$dir" -j"$(nproc)" >"$dir/make.log" 2>&1 || { tail -30 "$dir/make.log"; exit 1; }
    # Every test program (the adapter suite's ones too), none run.
    make -C "$dir" -j"$(nproc)" check TESTS= >>"$dir/make.log" 2>&1 || { tail -30 "$dir/make.log"; exit 1; }
    if grep -E 'warning:' "$dir/make.log" >&2; then
        echo "setup: compiler warnings in $dir (see above)" >&2
        exit 1
    fi
}

asan=
plain=1
no_asan_build=
for arg in "$@"; do
    [ "$arg" = --asan ] && asan=1
    # (test/run-all.sh: the plain build is done, and in use by tests;
    # its ASan jobs run on build/tls-asan, so build/asan is not made)
    [ "$arg" = --no-plain ] && plain=
    [ "$arg" = --no-asan-build ] && no_asan_build=1
done
[ -z "$plain" ] || build build/plain
for arg in "$@"; do
    case $arg in
    --asan) [ -n "$no_asan_build" ] || build build/asan --enable-sanitizers ;;
    --tls)
        echo "== ZooKeeper C client with TLS and SASL (build/zk-tls)"
        bash deps/build-zookeeper-client.sh --prefix "$top/build/zk-tls" \
            >build/zk-tls.log 2>&1 || { tail -30 build/zk-tls.log; exit 1; }
        zt=$top/build/zk-tls
        build build/tls --with-zookeeper-tls CPPFLAGS="-I$zt/include" \
            LDFLAGS="-L$zt/lib -Wl,-rpath,$zt/lib"
        # Both: the TLS suite under AddressSanitizer too (valgrind runs
        # build/tls: it cannot run a sanitized program).
        if [ -n "$asan" ]; then
            build build/tls-asan --enable-sanitizers --with-zookeeper-tls \
                CPPFLAGS="-I$zt/include" LDFLAGS="-L$zt/lib -Wl,-rpath,$zt/lib"
        fi
        ;;
    esac
done
