#!/usr/bin/env bash
# Builds Debian 12's ZooKeeper C client (single-threaded libzookeeper_st)
# again, this time with TLS (OpenSSL) and SASL (Cyrus SASL), and packs it
# as local Debian packages that replace Debian's libzookeeper-st2 and
# libzookeeper-st-dev.
#
# Why: Debian's libzookeeper-st 3.8.0 is built without libssl-dev and
# libsasl2-dev in its build environment, so configure leaves TLS and SASL
# out and zookeeper_init_ssl / zookeeper_init_sasl do not exist in it.
# Everything else is kept as Debian has it: the same source package (with
# Debian's patches, which `apt-get source` applies), the same SONAME
# (libzookeeper_st.so.2), the same file names and layout, the same
# headers, and an exported symbol set that is Debian's plus the TLS/SASL
# functions, so programs built against Debian's library run unchanged.
#
#   deps/build-zookeeper-client.sh            build (or reuse) the .debs;
#                                             prints their paths
#   deps/build-zookeeper-client.sh --install  also install them (apt-get)
#   deps/build-zookeeper-client.sh --prefix DIR
#                                             install the library, headers
#                                             and a pkg-config file under
#                                             DIR (DIR/lib, DIR/include/
#                                             zookeeper) instead of as
#                                             packages
#   --rebuild                                 ignore the cache
#
# Cache: $ZKL_ZK_TLS_CACHE (default /var/cache/zklock/zookeeper-client-tls)
# keeps the built .debs under a key made of this script, the Debian source
# version, the architecture and the versions of the build's libraries and
# compiler; a run with the same key reuses them and builds nothing.
# ZKL_ZK_DEBIAN_VERSION picks the Debian version to rebuild (default: the
# newest libzookeeper-st2 that Debian's archive offers).
#
# Patches: besides a one-hunk OpenSSL 3 fix (FIPS_mode), the files
# deps/zookeeper-client-*.patch next to this script are applied in name
# order (each says why in its header): 01 an incremental, non-blocking TLS
# handshake for event loops, 02 recv()/send() semantics for SSL_read/
# SSL_write, 03 a distinct code (ZAUTHFAILED) for definite TLS failures,
# 04 the server verified against the given CA file only. See
# deps/NOTES-tls.md.
#
# The packages' version is the Debian one with "+zklock.tls5" appended
# (e.g. 3.8.0-11+deb12u2+zklock.tls5): higher than Debian's, so apt keeps
# them, and a later Debian security update (deb12u3) is higher still and
# replaces them, which is what should happen (rebuild then).
#
# Needs root (apt-get) and Debian's package registry. To go back to
# Debian's packages:
#   apt-get install --reinstall --allow-downgrades \
#       libzookeeper-st2=VER libzookeeper-st-dev=VER
set -euo pipefail

LOCAL_SUFFIX=+zklock.tls5
CACHE=${ZKL_ZK_TLS_CACHE:-/var/cache/zklock/zookeeper-client-tls}
prefix=
install=no
rebuild=no

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'
    exit "${1:-0}"
}

while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) [ $# -ge 2 ] || usage 2; prefix=$2; shift 2 ;;
        --prefix=*) prefix=${1#--prefix=}; shift ;;
        --install) install=yes; shift ;;
        --rebuild) rebuild=yes; shift ;;
        -h|--help) usage 0 ;;
        *) echo "unknown argument: $1" >&2; usage 2 ;;
    esac
done
if [ -n "$prefix" ] && [ "$install" = yes ]; then
    echo "--prefix and --install exclude each other" >&2
    exit 2
fi
[ "$(id -u)" = 0 ] || { echo "run as root (apt-get)" >&2; exit 1; }

export DEBIAN_FRONTEND=noninteractive
export LC_ALL=C.UTF-8
self=$(readlink -f "$0")
here=$(dirname "$self")
# the patches applied to the C client, in this order (see their headers)
mapfile -t PATCHES < <(find "$here" -maxdepth 1 -name 'zookeeper-client-*.patch' | LC_ALL=C sort)
[ ${#PATCHES[@]} -gt 0 ] || { echo "no $here/zookeeper-client-*.patch" >&2; exit 1; }
log() { echo "== $*" >&2; }

# ---- what the build needs -------------------------------------------------
# dpkg-dev: apt-get source unpacks with dpkg-source, and dpkg-buildflags /
#   dpkg-shlibdeps / dpkg-architecture come from it.
# libssl-dev, libsasl2-dev: what Debian's build lacked; configure turns TLS
#   and SASL on when it finds them.
# libsasl2-modules: the DIGEST-MD5/PLAIN/... mechanisms, loaded at run time.
# default-jdk-headless + libzookeeper-java: Debian's zookeeper-jute.jar holds
#   the jute compiler (org.apache.jute.compiler.generated.Rcc) that makes
#   generated/zookeeper.jute.{c,h}, which Debian makes in its Maven build.
# autoconf/automake/libtool/pkg-config: the source ships configure.ac only.
BUILD_DEPS="dpkg-dev libssl-dev libsasl2-dev libsasl2-modules
            default-jdk-headless libzookeeper-java
            autoconf automake libtool pkg-config make gcc patch binutils"
missing=()
for p in $BUILD_DEPS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
apt_updated=no
if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    apt-get update -q >/dev/null
    apt_updated=yes
    apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi

arch=$(dpkg-architecture -qDEB_HOST_ARCH)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)

# The Debian version to rebuild: the newest that Debian's archive has
# (never one of ours, which apt also lists once installed).
debver=${ZKL_ZK_DEBIAN_VERSION:-}
if [ -z "$debver" ]; then
    debver=$(apt-cache madison libzookeeper-st2 | awk -F'|' '{gsub(/ /,"",$2); print $2}' |
                 grep -v -- "+zklock" | sort -V | tail -n1 || true)
fi
[ -n "$debver" ] || { echo "no libzookeeper-st2 version known to apt (apt-get update?)" >&2; exit 1; }
version=$debver$LOCAL_SUFFIX

pkgver() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo none; }
key=$( { sha256sum "$self" "${PATCHES[@]}" | cut -d' ' -f1
         echo "$debver $arch"
         for p in libssl-dev libsasl2-dev libc6-dev gcc default-jdk-headless libzookeeper-java; do
             echo "$p $(pkgver "$p")"
         done; } | sha256sum | cut -c1-16)
out=$CACHE/$version-$arch-$key
lib_deb=$out/libzookeeper-st2_${version}_$arch.deb
dev_deb=$out/libzookeeper-st-dev_${version}_$arch.deb

# ---- build (unless cached) --------------------------------------------------
build() {
    local work=$CACHE/work
    rm -rf "$work"
    mkdir -p "$work"
    cd "$work"

    # apt-get source needs deb-src entries; Debian's images have none.
    if [ -z "$(apt-cache showsrc zookeeper 2>/dev/null | grep -F "Version: $debver")" ]; then
        log "adding deb-src entries (/etc/apt/sources.list.d/zklock-deb-src.sources)"
        cat >/etc/apt/sources.list.d/zklock-deb-src.sources <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
        apt-get update -q >/dev/null
        apt_updated=yes
    fi

    # Debian's source package: apt checks it against the signed Sources
    # index, dpkg-source unpacks it and applies debian/patches (the series
    # touches the C client too: 03, 05, 06, 10, 34).
    log "apt-get source zookeeper=$debver"
    chmod 755 "$work"   # lets apt's _apt user write here (no sandbox warning)
    apt-get source -q --only-source "zookeeper=$debver" >"$work/source.log" 2>&1 ||
        { cat "$work/source.log" >&2; exit 1; }
    local src
    src=$(find "$work" -maxdepth 1 -type d -name 'zookeeper-*' | head -n1)
    local c=$src/zookeeper-client/zookeeper-client-c

    # Debian's binary packages of the same version: the reference for the
    # headers, the symbols and the docs (copyright) that ours must match.
    log "apt-get download Debian's libzookeeper-st2/-dev $debver (reference)"
    mkdir -p "$work/ref"
    (cd "$work/ref" && apt-get download -q "libzookeeper-st2=$debver" "libzookeeper-st-dev=$debver" >/dev/null 2>&1)
    for d in "$work"/ref/*.deb; do dpkg-deb -x "$d" "$work/ref/root"; done

    # OpenSSL 3 removed FIPS_mode(); 3.8.0's zookeeper.c calls it (only to
    # log "FIPS mode is ON/OFF") in the code that Debian never compiled.
    # The same change as upstream's fix (commit ff7db1a, PR #1934/#1935).
    log "patching zookeeper.c for OpenSSL 3 (FIPS_mode)"
    (cd "$src" && patch -p1 --forward -s) <<'EOF'
--- a/zookeeper-client/zookeeper-client-c/src/zookeeper.c
+++ b/zookeeper-client/zookeeper-client-c/src/zookeeper.c
@@ -2751,7 +2751,11 @@
         OPENSSL_init_ssl(OPENSSL_INIT_LOAD_SSL_STRINGS | OPENSSL_INIT_LOAD_CRYPTO_STRINGS, NULL);
         method = TLS_client_method();
 #endif
+#if OPENSSL_VERSION_NUMBER >= 0x30000000L
+        if (EVP_default_properties_is_fips_enabled(NULL) == 0) {
+#else
         if (FIPS_mode() == 0) {
+#endif
             LOG_INFO(LOGCALLBACK(zh), "FIPS mode is OFF ");
         } else {
             LOG_INFO(LOGCALLBACK(zh), "FIPS mode is ON ");
EOF

    # zklock's patches (event-loop fit of the TLS client), in name order.
    local pf
    for pf in "${PATCHES[@]}"; do
        log "applying $(basename "$pf")"
        (cd "$src" && patch -p1 --forward -s) <"$pf" ||
            { echo "patch $pf does not apply" >&2; exit 1; }
    done

    # The jute C files, as the zookeeper-jute module's Maven build makes them
    # (Rcc -l c zookeeper.jute, run in generated/).
    log "generating zookeeper.jute.{c,h} with Debian's zookeeper-jute.jar"
    mkdir -p "$c/generated"
    (cd "$c/generated" &&
        java -cp /usr/share/java/zookeeper-jute.jar org.apache.jute.compiler.generated.Rcc \
            -l c "$src/zookeeper-jute/src/main/resources/zookeeper.jute" >/dev/null)

    # As the C client's pom.xml does: autoreconf -if with /usr/share/aclocal,
    # then configure --with-openssl --with-sasl (the top pom sets both to
    # "yes", so Debian's build asked for them too; they were not found).
    log "autoreconf + configure (--with-openssl --with-sasl)"
    (cd "$c" && ACLOCAL="aclocal -I /usr/share/aclocal" autoreconf -if >"$work/autoreconf.log" 2>&1) ||
        { cat "$work/autoreconf.log" >&2; exit 1; }
    mkdir -p "$work/build"
    cd "$work/build"
    # Debian's hardening flags, as dh exports them to its build (a CFLAGS
    # in the environment also makes configure leave out its own -g -O2
    # -D_GNU_SOURCE default, as in Debian's build).
    eval "$(dpkg-buildflags --export=sh)"
    # --without-cppunit: no tests here; --without-syncapi: the
    # multi-threaded library is not built (only libzookeeper_st).
    "$c/configure" --with-openssl=yes --with-sasl=yes --without-cppunit --without-syncapi \
        --prefix=/usr --libdir="/usr/lib/$multiarch" >"$work/configure.log" 2>&1 ||
        { tail -30 "$work/configure.log" >&2; exit 1; }
    grep -q 'building with SSL support' "$work/configure.log" &&
        grep -q 'building with SASL support' "$work/configure.log" ||
        { echo "configure did not enable SSL and SASL:" >&2
          grep -E 'SSL|SASL' "$work/configure.log" >&2; exit 1; }

    log "make libzookeeper_st.la"
    make -j"$(nproc)" libzookeeper_st.la >"$work/make.log" 2>&1 || { tail -30 "$work/make.log" >&2; exit 1; }

    # ---- checks: the same library as Debian's, plus TLS and SASL ----
    local so=.libs/libzookeeper_st.so.2.0.0
    readelf -d "$so" | grep -q 'SONAME.*\[libzookeeper_st\.so\.2\]' ||
        { echo "unexpected SONAME" >&2; exit 1; }
    for n in libssl.so.3 libcrypto.so.3 libsasl2.so.2; do
        readelf -d "$so" | grep -q "NEEDED.*\[$n\]" || { echo "$so does not need $n" >&2; exit 1; }
    done
    syms() { objdump -T "$1" | awk '$4 != "*UND*" && $2 == "g" {print $NF}' | sort -u; }
    syms "$so" >"$work/syms.new"
    syms "$work/ref/root/usr/lib/$multiarch/libzookeeper_st.so.2.0.0" >"$work/syms.debian"
    if [ -n "$(comm -23 "$work/syms.debian" "$work/syms.new")" ]; then
        echo "symbols of Debian's library missing from the build:" >&2
        comm -23 "$work/syms.debian" "$work/syms.new" >&2
        exit 1
    fi
    for s in zookeeper_init_ssl zookeeper_init_sasl zoo_sasl_make_basic_callbacks; do
        grep -qx "$s" "$work/syms.new" || { echo "$s not exported" >&2; exit 1; }
    done
    log "added symbols: $(comm -13 "$work/syms.debian" "$work/syms.new" | tr '\n' ' ')"

    # ---- staging trees, laid out as Debian's packages ----
    local stage=$work/stage lroot droot
    lroot=$stage/libzookeeper-st2
    droot=$stage/libzookeeper-st-dev
    mkdir -p "$lroot/DEBIAN" "$lroot/usr/lib/$multiarch" "$lroot/usr/share/doc/libzookeeper-st2" \
             "$droot/DEBIAN" "$droot/usr/lib/$multiarch/pkgconfig" "$droot/usr/include/zookeeper" \
             "$droot/usr/share/doc/libzookeeper-st-dev"
    # dh_strip's way: no debug info, no .comment/.note
    install -m644 "$so" "$lroot/usr/lib/$multiarch/"
    strip --remove-section=.comment --remove-section=.note --strip-unneeded \
        "$lroot/usr/lib/$multiarch/libzookeeper_st.so.2.0.0"
    ln -s libzookeeper_st.so.2.0.0 "$lroot/usr/lib/$multiarch/libzookeeper_st.so.2"
    install -m644 .libs/libzookeeper_st.a "$droot/usr/lib/$multiarch/"
    strip --strip-debug --remove-section=.comment --remove-section=.note \
        --enable-deterministic-archives "$droot/usr/lib/$multiarch/libzookeeper_st.a"
    ln -s libzookeeper_st.so.2.0.0 "$droot/usr/lib/$multiarch/libzookeeper_st.so"
    # debian/libzookeeper-st-dev.install: include/*.h and generated/*.h
    install -m644 "$c"/include/*.h "$c"/generated/*.h "$droot/usr/include/zookeeper/"
    local h
    for h in "$work"/ref/root/usr/include/zookeeper/*.h; do
        cmp -s "$h" "$droot/usr/include/zookeeper/$(basename "$h")" ||
            { echo "header differs from Debian's: $(basename "$h")" >&2; exit 1; }
    done
    # Added: a pkg-config module. zookeeper.h declares zookeeper_init_ssl
    # only under HAVE_OPENSSL_H and the SASL API only under
    # HAVE_CYRUS_SASL_H (it then includes <openssl/ossl_typ.h> and
    # <sasl/sasl.h>), and the static archive needs -lssl -lcrypto -lsasl2.
    cat >"$droot/usr/lib/$multiarch/pkgconfig/zookeeper_st.pc" <<EOF
prefix=/usr
libdir=\${prefix}/lib/$multiarch
includedir=\${prefix}/include

Name: zookeeper_st
Description: ZooKeeper C client, single-threaded, with TLS (OpenSSL) and SASL (Cyrus)
Version: ${debver%%-*}
Requires.private: libssl libcrypto libsasl2
Cflags: -I\${includedir} -I\${includedir}/zookeeper -DHAVE_OPENSSL_H -DHAVE_CYRUS_SASL_H
Libs: -L\${libdir} -lzookeeper_st
Libs.private: -lm
EOF

    # docs: Debian's copyright; Debian's changelog with an entry on top
    local date
    date=$(LC_ALL=C date -R -d "@$(dpkg-parsechangelog -l "$src/debian/changelog" -S Timestamp)")
    { cat <<EOF
zookeeper ($version) UNRELEASED; urgency=medium

  * Local rebuild by zklock's deps/build-zookeeper-client.sh: the
    single-threaded C client only, configured --with-openssl --with-sasl
    (zookeeper_init_ssl, zookeeper_init_sasl); FIPS_mode() replaced for
    OpenSSL 3 as upstream's commit ff7db1a.
  * zklock patches: non-blocking (incremental) TLS handshake with the
    receive timeout applied; recv()/send() semantics for SSL_read/SSL_write;
    ZAUTHFAILED for definite TLS failures (bad certificate, not a TLS
    port); server verified against the given CA file only.

 -- zklock <zklock@localhost>  $date

EOF
      cat "$src/debian/changelog"; } | gzip -9n >"$work/changelog.Debian.gz"
    local p
    for p in libzookeeper-st2 libzookeeper-st-dev; do
        install -m644 "$work/changelog.Debian.gz" "$src/debian/copyright" "$stage/$p/usr/share/doc/$p/"
    done
    # Debian's preinst (it turns an old doc symlink into a directory),
    # without the #DEBHELPER# token that debhelper would have filled in.
    sed '/#DEBHELPER#/d' "$src/debian/libzookeeper-st-dev.preinst" >"$droot/DEBIAN/preinst"
    chmod 755 "$droot/DEBIAN/preinst"

    # Depends of the library, as dpkg-shlibdeps finds them (libc6, libssl3,
    # libsasl2-2); it wants a debian/control to read.
    mkdir -p "$work/shl/debian"
    printf 'Source: zookeeper\n\nPackage: libzookeeper-st2\nArchitecture: any\n' >"$work/shl/debian/control"
    local deps
    deps=$(cd "$work/shl" && dpkg-shlibdeps -O -e"$lroot/usr/lib/$multiarch/libzookeeper_st.so.2.0.0" 2>/dev/null |
               sed -n 's/^shlibs:Depends=//p')
    case "$deps" in *libssl3*libsasl2-2*|*libsasl2-2*libssl3*) ;; *)
        echo "dpkg-shlibdeps gave no libssl3/libsasl2-2: '$deps'" >&2; exit 1 ;; esac

    local desc_tail=" ZooKeeper is a centralized, reliable, service for maintaining configuration
 information, naming, providing distributed synchronization, and group
 services. All of these kinds of services are used in some form or another by
 distributed applications.
 .
 This build (zklock) adds TLS (OpenSSL: zookeeper_init_ssl) and SASL
 (Cyrus SASL: zookeeper_init_sasl) to Debian's $debver,
 which has neither; it is otherwise the same library (SONAME, symbols,
 headers)."
    cat >"$lroot/DEBIAN/control" <<EOF
Package: libzookeeper-st2
Source: zookeeper
Version: $version
Architecture: $arch
Maintainer: zklock <zklock@localhost>
Installed-Size: $(du -sk --exclude=DEBIAN "$lroot" | cut -f1)
Depends: $deps
Section: libs
Priority: optional
Multi-Arch: same
Homepage: https://zookeeper.apache.org
Description: Single threaded C bindings for zookeeper, with TLS and SASL
$desc_tail
EOF
    # A program that uses the TLS/SASL functions needs this build, so
    # dpkg-shlibdeps of programs linked against it asks for it.
    echo "libzookeeper_st 2 libzookeeper-st2 (>= $version)" >"$lroot/DEBIAN/shlibs"
    printf '# ldconfig, as dh_makeshlibs adds\nactivate-noawait ldconfig\n' >"$lroot/DEBIAN/triggers"

    cat >"$droot/DEBIAN/control" <<EOF
Package: libzookeeper-st-dev
Source: zookeeper
Version: $version
Architecture: $arch
Maintainer: zklock <zklock@localhost>
Installed-Size: $(du -sk --exclude=DEBIAN "$droot" | cut -f1)
Depends: libzookeeper-st2 (= $version), libssl-dev, libsasl2-dev
Conflicts: libzookeeper-dev
Replaces: libzookeeper-dev
Provides: libzookeeper-dev
Section: libdevel
Priority: optional
Homepage: https://zookeeper.apache.org
Description: Development files for single threaded zookeeper C bindings, with TLS and SASL
$desc_tail
 .
 Define HAVE_OPENSSL_H and HAVE_CYRUS_SASL_H before including
 <zookeeper/zookeeper.h> to see the TLS/SASL API (pkg-config zookeeper_st).
EOF
    for p in libzookeeper-st2 libzookeeper-st-dev; do
        (cd "$stage/$p" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' |
             sort -z | xargs -0 md5sum >DEBIAN/md5sums)
    done

    mkdir -p "$out.tmp"
    export SOURCE_DATE_EPOCH
    SOURCE_DATE_EPOCH=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Timestamp)
    dpkg-deb --root-owner-group -Zxz --build "$lroot" "$out.tmp/$(basename "$lib_deb")" >/dev/null
    dpkg-deb --root-owner-group -Zxz --build "$droot" "$out.tmp/$(basename "$dev_deb")" >/dev/null
    cp "$work/configure.log" "$work/syms.new" "$work/syms.debian" "$out.tmp/"
    rm -rf "$out"
    mv "$out.tmp" "$out"
    # older builds of the same version (another key) are stale
    find "$CACHE" -mindepth 1 -maxdepth 1 -type d -name "$version-$arch-*" ! -path "$out" -exec rm -rf {} +
    cd /
    rm -rf "$work"
}

if [ "$rebuild" = no ] && [ -s "$lib_deb" ] && [ -s "$dev_deb" ]; then
    log "cached: $out"
else
    log "building libzookeeper_st $version (TLS + SASL) into $out"
    build
fi

# ---- use ---------------------------------------------------------------------
if [ "$install" = yes ]; then
    log "installing $lib_deb $dev_deb"
    [ "$apt_updated" = yes ] || apt-get update -q >/dev/null
    # --reinstall: a rebuild keeps the version, and apt would otherwise
    # skip a package whose version is already installed.
    apt-get install -y -q --reinstall --allow-downgrades "$lib_deb" "$dev_deb" >/dev/null
    dpkg-query -W libzookeeper-st2 libzookeeper-st-dev >&2
fi

if [ -n "$prefix" ]; then
    # The packages' files, moved from /usr to PREFIX (lib without the
    # multiarch directory, as a plain ./configure --prefix would do).
    mkdir -p "$prefix"
    prefix=$(readlink -f "$prefix")
    x=$(mktemp -d)
    trap 'rm -rf "$x"' EXIT
    dpkg-deb -x "$lib_deb" "$x"
    dpkg-deb -x "$dev_deb" "$x"
    mkdir -p "$prefix/lib/pkgconfig" "$prefix/include/zookeeper"
    cp -a "$x/usr/lib/$multiarch"/libzookeeper_st.* "$prefix/lib/"
    cp -a "$x/usr/include/zookeeper/." "$prefix/include/zookeeper/"
    sed -e "s|^prefix=.*|prefix=$prefix|" -e "s|^libdir=.*|libdir=\${prefix}/lib|" \
        "$x/usr/lib/$multiarch/pkgconfig/zookeeper_st.pc" >"$prefix/lib/pkgconfig/zookeeper_st.pc"
    log "installed under $prefix (use -I$prefix/include -L$prefix/lib -Wl,-rpath,$prefix/lib," \
        "or PKG_CONFIG_PATH=$prefix/lib/pkgconfig)"
fi

echo "$lib_deb"
echo "$dev_deb"
