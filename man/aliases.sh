#!/bin/sh
# The man3 alias pages: one ".so man3/PAGE.3" page for every function a
# page documents besides the one it is named after, so that "man
# FUNCTION" finds it. The list comes from the pages' NAME sections (the
# names before "\-"); nothing generated is kept in the tree.
#
#   aliases.sh list      SRCDIR PAGE...           prints "ALIAS PAGE" lines
#   aliases.sh install   SRCDIR MAN3DIR PAGE...   ($INSTALL_DATA installs)
#   aliases.sh uninstall SRCDIR MAN3DIR PAGE...
#
# PAGE is a path relative to SRCDIR (man/zkl_lock_new.3); pages of other
# sections are skipped. Used by man/local.mk and test/test-man.sh.
set -e

usage() {
    echo "usage: $0 list SRCDIR PAGE... | install|uninstall SRCDIR MAN3DIR PAGE..." >&2
    exit 2
}

[ $# -ge 2 ] || usage
mode=$1
srcdir=$2
shift 2
case $mode in
list) ;;
install | uninstall)
    [ $# -ge 1 ] || usage
    man3dir=$1
    shift
    ;;
*) usage ;;
esac

list() {
    for p in "$@"; do
        case $p in *.3) ;; *) continue ;; esac
        page=$(basename "$p" .3)
        # The NAME section up to its "\-", joined, names split on commas.
        sed -n '/^\.SH NAME/,/\\-/p' "$srcdir/$p" | sed '1d' | tr '\n' ' ' |
            sed 's/\\-.*//' | tr ',' ' ' | tr -s ' ' '\n' |
            while read -r name; do
                if [ -n "$name" ] && [ "$name" != "$page" ]; then
                    echo "$name $page"
                fi
            done
    done
}

case $mode in
list)
    list "$@"
    ;;
install)
    : "${INSTALL_DATA:=install -c -m 644}"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    list "$@" >"$tmp/list"
    echo " $INSTALL_DATA ($(wc -l <"$tmp/list") .so pages) '$man3dir'"
    while read -r alias page; do
        echo ".so man3/$page.3" >"$tmp/$alias.3"
        $INSTALL_DATA "$tmp/$alias.3" "$man3dir/$alias.3"
    done <"$tmp/list"
    ;;
uninstall)
    l=$(list "$@")
    echo " rm -f ($(echo "$l" | grep -c .) .so pages in '$man3dir')"
    echo "$l" | while read -r alias page; do
        [ -z "$alias" ] || rm -f "$man3dir/$alias.3"
    done
    ;;
esac
