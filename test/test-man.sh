#!/usr/bin/env bash
# Tests of the man pages (man/), no server needed. The section-3 pages
# are made from the headers (man/gen-man.py): the test makes them afresh
# from the sources, checks that every declaration of every header is on
# exactly one page and that no page source says more than a man page
# adds (gen-man.py --check), and that the build's pages are the fresh
# ones. Then each page renders without a single warning (what lintian
# runs), has its sections, names only pages that exist; every public
# function (ZKL_EXTERN in include/*.h) is in exactly one page's SYNOPSIS
# and in that page's NAME. man/local.mk installs every page; and the
# alias pages install, render with "man -l" and uninstall without a
# trace.
set -u
SUITE=man
# lib.sh wants the suite's server; these tests do not use it.
ZKL_TEST_HOSTS=${ZKL_TEST_HOSTS:-unused}
. "$(dirname "$0")/lib.sh"
export LC_ALL=C.UTF-8 MANROFFSEQ=''
src=$top_srcdir/man
# The pages under test: the tools' pages as written, the library's as
# the generator makes them now.
man=$tmp/man/man
mkdir -p "$man"
cp "$src"/*.1 "$man"/
gen_out=$(python3 "$src/gen-man.py" "$top_srcdir" "$man" "$src"/*.3.in 2>&1) ||
    { echo "FAIL: $SUITE/generate"; echo "$gen_out" | sed 's/^/    /'
      echo "0 passed, 1 failed"; exit 1; }
# Pages outside the tree that the pages may name (keep it short).
allow="flock.1 pkg-config.1 poll.2 select.2 ev.3 sd-event.3 malloc.3 strcmp.3"

pages=$(cd "$man" && ls -- *.1 *.3)
if [ -z "$pages" ]; then
    echo "FAIL: $SUITE/pages (none in $man)"
    echo "0 passed, 1 failed"
    exit 1
fi

section() { # page, section title: the lines of that section
    awk -v want="$2" '
        /^\.SH / { t = substr($0, 5); gsub(/"/, "", t); on = t == want; next }
        on' "$man/$1"
}

# Function names a page's SYNOPSIS declares: "name(" after the font
# escapes are gone; callback typedefs ("(*name)(") do not match.
synopsis_functions() {
    section "$1" SYNOPSIS | sed 's/\\f[BIRP]//g' |
        grep -o '\bzkl_[a-z0-9_]*(' | tr -d '(' | sort -u
}

# The names of a page's NAME section, before "\-".
name_names() {
    section "$1" NAME | tr '\n' ' ' | sed 's/\\-.*//' | tr ',' ' ' |
        tr -s ' ' '\n' | sed '/^$/d' | sort -u
}

# name.N of every "name (N)" a page's macro lines mention (".BR x (3),").
references() {
    sed -n 's/\\-/-/g; /^\.[BIR][BIR] /p' | \
        grep -oE '(^|[ (])[A-Za-z_][A-Za-z0-9_.+-]* \([1-8]\)' |
        sed -E 's/^[ (]//; s/ \(([1-8])\)$/.\1/'
}

aliases=$(sh "$src/aliases.sh" list "$tmp/man" \
    $(for p in $pages; do echo "man/$p"; done)) || aliases=

is_page() { [ -f "$man/$1" ]; }
alias_pages=" $(echo "$aliases" | awk '{ printf "%s.3 ", $1 }')"
is_alias() { case $alias_pages in *" $1 "*) return 0 ;; esac; return 1; }
is_allowed() { case " $allow " in *" $1 "*) return 0 ;; esac; return 1; }

# "man" takes a tenth of a second a page, so the pages, and later the
# aliases, are rendered eight at a time first, as lintian renders them,
# and the checks read DIR/NAME.out and DIR/NAME.err.
render() { # DIR FILE... (relative to the current directory)
    local dir=$1
    shift
    mkdir -p "$dir"
    printf '%s\n' "$@" | xargs -P 8 -I{} sh -c \
        'man --warnings -E UTF-8 -l -Tutf8 -Z "$1" >"$2/${1##*/}.out" 2>"$2/${1##*/}.err"' \
        sh {} "$dir"
}

t_render() { # what lintian runs: any output on stderr is a failure
    local out=$tmp/pages/$1
    [ -f "$out.err" ] || { echo "not rendered"; return 1; }
    [ ! -s "$out.err" ] || { cat "$out.err"; return 1; }
    [ -s "$out.out" ] || { echo "empty output"; return 1; }
}

t_sections() {
    local s ok=0 want="NAME SYNOPSIS DESCRIPTION SEE_ALSO"
    case $1 in *.3) want="NAME LIBRARY SYNOPSIS DESCRIPTION SEE_ALSO" ;; esac
    for s in $want; do
        s=${s//_/ }
        grep -qE "^\\.SH \"?$s\"?\$" "$man/$1" || { echo "no $s section"; ok=1; }
    done
    [ "$(sed -n '/^\.SH NAME/{n;p;}' "$man/$1")" != "" ] || { echo "empty NAME"; ok=1; }
    return $ok
}

t_refs() { # SEE ALSO: pages of the tree or allowed ones; elsewhere also aliases
    local r ok=0
    for r in $(section "$1" "SEE ALSO" | references); do
        [ "$r" != "$1" ] || { echo "SEE ALSO names the page itself"; ok=1; }
        is_page "$r" || is_allowed "$r" ||
            { echo "SEE ALSO: no page $r"; ok=1; }
    done
    for r in $(references <"$man/$1"); do
        is_page "$r" || is_alias "$r" || is_allowed "$r" ||
            { echo "no page $r"; ok=1; }
    done
    [ -n "$(section "$1" "SEE ALSO" | references)" ] ||
        { echo "SEE ALSO names no page"; ok=1; }
    return $ok
}

t_name_synopsis() { # the names in NAME are the functions in SYNOPSIS
    local page=${1%.3}
    name_names "$1" >"$tmp/name"
    synopsis_functions "$1" >"$tmp/syn"
    grep -qxF "$page" "$tmp/name" || { echo "NAME lacks $page"; return 1; }
    if ! diff "$tmp/name" "$tmp/syn" >"$tmp/diff"; then
        echo "NAME (<) and SYNOPSIS (>) differ:"
        cat "$tmp/diff"
        return 1
    fi
}

exported() { # the ZKL_EXTERN functions of a header
    awk '/^ZKL_EXTERN/ { s = $0
            while (s !~ /\(/ && (getline l) > 0) s = s " " l
            sub(/\(.*/, "", s); n = split(s, a, /[ *]+/); print a[n] }' "$1" |
        sort -u
}

t_synopsis_covers() { # every function of the header in exactly one SYNOPSIS
    local f p n ok=0
    exported "$1" >"$tmp/funcs"
    [ -s "$tmp/funcs" ] || { echo "no ZKL_EXTERN function found"; return 1; }
    while read -r f; do
        n=$(awk -v f="$f" '$1 == f' "$tmp/all" | wc -l)
        case $n in
        1) ;;
        0) echo "$f: in no SYNOPSIS"; ok=1 ;;
        *) echo "$f: in $n SYNOPSIS sections:" \
               $(awk -v f="$f" '$1 == f { print $2 }' "$tmp/all"); ok=1 ;;
        esac
    done <"$tmp/funcs"
    return $ok
}

t_synopsis_known() { # no SYNOPSIS declares a function the headers lack
    local f ok=0
    cat "$top_srcdir"/include/*.h | exported /dev/stdin >"$tmp/funcs"
    awk '{ print $1 }' "$tmp/all" | sort -u >"$tmp/syn"
    for f in $(comm -13 "$tmp/funcs" "$tmp/syn"); do
        echo "$f: in a SYNOPSIS, not in include/*.h"
        ok=1
    done
    return $ok
}

t_local_mk() { # man/local.mk installs exactly the pages of man/
    local mk=$src/local.mk ok=0
    diff <(sed -n '/^dist_man_MANS/,/^$/p' "$mk" | grep -o 'man/[^ \\]*\.1' | sort) \
        <(cd "$top_srcdir" && ls man/*.1 | sort) ||
        { echo "(< dist_man_MANS, > man/*.1)"; ok=1; }
    diff <(sed -n '/^MAN3_IN/,/^$/p' "$mk" | grep -o 'man/[^ \\]*\.3\.in' | sort) \
        <(cd "$top_srcdir" && ls man/*.3.in | sort) ||
        { echo "(< MAN3_IN, > man/*.3.in)"; ok=1; }
    diff <(sed -n '/^MAN3_IN/,/^$/p' "$mk" | grep -o 'man/[^ \\]*\.3\.in' | sed 's/\.in$//') \
        <(sed -n '/^MAN3_OUT/,/^$/p' "$mk" | grep -o 'man/[^ \\]*\.3') ||
        { echo "(< MAN3_IN, > MAN3_OUT)"; ok=1; }
    return $ok
}

t_sources() { # every declaration on one page; sources add only what a page adds
    python3 "$src/gen-man.py" --check "$top_srcdir" "$src"/*.3.in
}

# Edits of the header that would leave a page wrong must fail the check
# (a review made each of these pass an earlier one): a blank or #if line
# between a function's comment and its prototype, a function with no
# comment, a lower-case macro, an inline definition, a // comment.
t_sources_refuse_drift() {
    local h=$tmp/drift ok=0 ln start what
    ln=$(grep -n '^ZKL_EXTERN int zkl_rwlock_new' "$top_srcdir/include/zklock.h" | cut -d: -f1)
    start=$(awk -v l="$ln" 'NR < l && /^\/\*/ {s = NR} END {print s}' \
        "$top_srcdir/include/zklock.h")
    for what in blank if nocomment macro inline slashes; do
        rm -rf "$h" && mkdir -p "$h" && cp -r "$top_srcdir/include" "$h/" || return 1
        case $what in
        blank) sed -i "$((ln - 1))s/\$/\n/" "$h/include/zklock.h" ;;
        if) sed -i "$((ln - 1))s/\$/\n#if 1/; ${ln}s/\$/\n#endif/" "$h/include/zklock.h" ;;
        nocomment) sed -i "${start},$((ln - 1))d" "$h/include/zklock.h" ;;
        macro) sed -i "${start}i /* Shorthand. */\n#define zkl_lock_try(lk) zkl_lock_acquire((lk), 0)\n" "$h/include/zklock.h" ;;
        inline) sed -i "${start}i static inline int zkl_lock_holds(void) { return 0; }\n" "$h/include/zklock.h" ;;
        slashes) sed -i "${ln}i // Never from a signal handler." "$h/include/zklock.h" ;;
        esac
        if python3 "$src/gen-man.py" --check "$h" "$src"/*.3.in >/dev/null 2>&1; then
            echo "a header with '$what' passed the check"
            ok=1
        fi
    done
    return $ok
}

t_built_current() { # the build's pages are the ones the sources make now
    local b=$top_builddir/man p ok=0
    [ -f "$b/stamp-man3" ] || { echo "no pages built in $b (make first)"; return 1; }
    for p in "$man"/*.3; do
        cmp -s "$p" "$b/${p##*/}" || { echo "$b/${p##*/} is stale or missing"; ok=1; }
    done
    return $ok
}

# The alias pages as "make install" puts them: the build's own install
# rules when there is a build, else the script those rules run.
inst=$tmp/inst
install_aliases() {
    if [ -f "$top_builddir/Makefile" ]; then
        env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$top_builddir" \
            install-man man-install-aliases DESTDIR="$inst" || return 1
        man3=$(find "$inst" -type d -name man3 | head -n 1)
    else
        man3=$inst/share/man/man3
        mkdir -p "$man3" "$inst/share/man/man1" &&
            cp "$man"/*.3 "$man3" && cp "$man"/*.1 "$inst/share/man/man1" &&
            sh "$src/aliases.sh" install "$tmp/man" "$man3" \
                $(for p in $pages; do echo "man/$p"; done) >/dev/null
    fi
    [ -n "$man3" ] && [ -d "$man3" ] || { echo "no man3 directory"; return 1; }
    local n
    n=$(echo "$aliases" | sed '/^$/d' | wc -l)
    [ "$n" -gt 0 ] || { echo "no aliases listed"; return 1; }
    [ "$(ls "$man3" | wc -l)" = "$(( n + $(echo "$pages" | grep -c '\.3$') ))" ] ||
        { echo "man3 has $(ls "$man3" | wc -l) pages, wanted $n aliases and the pages:"; ls "$man3"; return 1; }
}

t_aliases() { # each alias of a page: a one-line .so that man -l renders
    local page=${1%.3} alias out title ok=0
    title=$(echo "$page" | tr '[:lower:]' '[:upper:]')
    for alias in $(echo "$aliases" | awk -v p="$page" '$2 == p { print $1 }'); do
        out=$tmp/aliases/$alias.3
        [ "$(cat "$man3/$alias.3" 2>/dev/null)" = ".so man3/$page.3" ] ||
            { echo "$alias.3: not \".so man3/$page.3\""; ok=1; continue; }
        [ ! -s "$out.err" ] || { echo "$alias.3:"; cat "$out.err"; ok=1; }
        grep -qx "t$title(3)" "$out.out" 2>/dev/null ||
            { echo "$alias.3 does not render $page(3)"; ok=1; }
    done
    return $ok
}

t_uninstall() { # distcheck's rule: uninstall leaves no file behind
    [ -f "$top_builddir/Makefile" ] || return 0
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$top_builddir" \
        uninstall-man man-uninstall-aliases DESTDIR="$inst" || return 1
    local left
    left=$(find "$inst" -type f)
    [ -z "$left" ] || { echo "left behind:"; echo "$left"; return 1; }
}

# The shutdown recipe is one text: README.md's, between its
# shutdown-recipe markers, and zklock(3)'s (the header's), which say the same words once markup
# (backticks, bold, roff requests, list numbers) and line breaks are
# gone.
recipe_words() { # the text on stdin, one word per line
    sed -E 's/^[[:space:]]*[0-9]+\.[[:space:]]+//' | tr -s ' \t\n' '\n\n\n' | sed '/^$/d'
}
t_shutdown_recipe() {
    local page=$man/zklock.3
    sed -n '/^<!-- shutdown-recipe/,/^<!-- \/shutdown-recipe/p' "$top_srcdir/README.md" |
        sed '1d;$d' | sed 's/^\*\*Shutting down\.\*\* //; s/`//g' |
        recipe_words >"$tmp/recipe.md"
    { grep -m1 '^\.TH' "$page"; echo .nh; echo .ad l
      awk '/^\.SS Shutting down$/ { on = 1; next } /^\.S[SH] / { on = 0 } on' "$page"; } |
        groff -t -man -Tascii -P -cbou 2>&1 | grep -v '^ZKLOCK(3) \|^zklock  ' |
        recipe_words >"$tmp/recipe.man"
    [ -s "$tmp/recipe.md" ] || { echo "no recipe between the markers in README.md"; return 1; }
    [ -s "$tmp/recipe.man" ] || { echo "no Shutting down in zklock.3"; return 1; }
    diff "$tmp/recipe.md" "$tmp/recipe.man" >"$tmp/recipe.diff" ||
        { echo "README.md (<) and zklock.3 (>) differ, word by word:"; cat "$tmp/recipe.diff"; return 1; }
}

(cd "$man" && render "$tmp/pages" $pages)
for p in $pages; do
    check "render/$p" t_render "$p"
    check "sections/$p" t_sections "$p"
    check "refs/$p" t_refs "$p"
    case $p in zklock.3 | *.1) ;; *.3) check "name-synopsis/$p" t_name_synopsis "$p" ;; esac
done
for p in $pages; do synopsis_functions "$p" | sed "s|\$| $p|"; done >"$tmp/all"
for h in "$top_srcdir"/include/*.h; do
    grep -q '^ZKL_EXTERN' "$h" || continue
    check "synopsis-covers/include/$(basename "$h")" t_synopsis_covers "$h"
done
check synopsis-known t_synopsis_known
check local.mk t_local_mk
check sources t_sources
check sources-refuse-drift t_sources_refuse_drift
check shutdown-recipe t_shutdown_recipe
# A build configured with --disable-man has no section-3 pages and no
# alias rules: what it installs is the tools' pages only.
build_man=1
if [ -f "$top_builddir/Makefile" ]; then
    grep -q '^man_MANS = ' "$top_builddir/Makefile" || build_man=0
fi
[ ! -f "$top_builddir/Makefile" ] || [ $build_man = 0 ] ||
    check built-pages-current t_built_current
man3=
if [ $build_man = 0 ]; then
    echo "# $SUITE: the build has no section-3 pages (--disable-man): no alias tests"
    finish
    exit
fi
check aliases-install install_aliases
if [ -n "$man3" ] && [ -d "$man3" ]; then
    # .so requests resolve from the top of the man tree, as man(1) runs.
    (cd "$man3/.." && render "$tmp/aliases" \
        $(echo "$aliases" | awk '{ print "man3/" $1 ".3" }'))
    for p in $pages; do
        case $p in *.3) [ -n "$(echo "$aliases" | awk -v p="${p%.3}" '$2 == p')" ] &&
            check "aliases/$p" t_aliases "$p" ;; esac
    done
fi
check aliases-uninstall t_uninstall
finish
