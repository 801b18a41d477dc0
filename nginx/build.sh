#!/usr/bin/env bash
# Builds ngx_http_zklock_module.so (and libzklock-nginx.a, the adapter)
# against an nginx source tree configured as the nginx it will load into:
# Debian's nginx-dev ships one (/usr/share/nginx/src, its configure
# flags in conf_flags), and this is what Debian's dh_nginx does with it.
#
#   nginx/build.sh SRCDIR BUILDDIR OUTDIR [NGINX_SRC]
#
# SRCDIR: zklock's source tree; BUILDDIR: zklock's build tree (for
# include/zklock_version.h and .libs/libzklock.so); OUTDIR: where the
# module's build goes. Make calls it (nginx/local.mk).
set -euo pipefail
src=$(cd "$1" && pwd)
bld=$(cd "$2" && pwd)
out=$3
ngx=${4:-/usr/share/nginx/src}
mkdir -p "$out"
out=$(cd "$out" && pwd)

[ -f "$ngx/configure" ] && [ -f "$ngx/conf_flags" ] || {
    echo "nginx/build.sh: no nginx source tree at $ngx (apt-get install nginx-dev)" >&2
    exit 1
}
# nginx's configure writes a Makefile into the directory it runs in: a
# copy of the tree keeps /usr/share/nginx/src untouched (and lets a user
# who may not write there build).
rm -rf "$out/src"
cp -a "$ngx" "$out/src"
cd "$out/src"
# shellcheck disable=SC1091
. ./conf_flags
# ZKL_NGINX_CFLAGS / ZKL_NGINX_LDFLAGS: the build's own (make passes its
# CFLAGS, a package build's hardening among them, and the sanitizers').
cflags="-g -O2 ${ZKL_NGINX_CFLAGS:-} -fPIC -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers"
ZKLOCK_INCS="$bld/include" \
ZKLOCK_LIBS="-L$bld/.libs -lzklock" \
    ./configure --with-cc-opt="$cflags" --with-ld-opt="${ZKL_NGINX_LDFLAGS:-} -fPIC" \
    "${NGX_CONF_FLAGS[@]}" --add-dynamic-module="$src/nginx" \
    --builddir="$out/objs" >"$out/configure.log" 2>&1 || {
        tail -30 "$out/configure.log" >&2
        exit 1
    }
make -f "$out/objs/Makefile" -C "$out/src" modules >"$out/make.log" 2>&1 || {
    grep -E "error|Error" "$out/make.log" | head -30 >&2
    exit 1
}
if grep -E "warning:" "$out/make.log" | grep -E "nginx/ngx_http_zklock|adapters/nginx" >&2; then
    echo "nginx/build.sh: compiler warnings in the module (above)" >&2
    exit 1
fi
# A new file moved into place, never written over the old one: an nginx
# that has the old one loaded would crash in its next worker.
cp "$out/objs/ngx_http_zklock_module.so" "$out/.module.so.new"
mv -f "$out/.module.so.new" "$out/ngx_http_zklock_module.so"
adapter=$(find "$out/objs/addon" -name nginx.o -path '*adapters*' | head -1)
rm -f "$out/.adapter.a.new"
ar rcs "$out/.adapter.a.new" "$adapter"
mv -f "$out/.adapter.a.new" "$out/libzklock-nginx.a"
echo "$out/ngx_http_zklock_module.so"
