#!/usr/bin/env bash
# Every C example compiles: the ```c blocks of README.md and docs/*.md,
# and the .EX/.EE
# blocks of the EXAMPLES sections of the section-3 man pages' sources
# (man/*.3.in, roff escapes undone), each with
#     cc -std=c11 -Wall -Wextra -Werror -c
# against the tree's headers, plus the cflags of the loop library whose
# header it includes. One check per example, named after where it is
# (README.md:LINE or recipes.md:LINE of its fence, zkl_lock_new.3:N for
# the page's Nth).
#
# A block with "int main" is a complete program and is compiled as
# printed. Any other block must say what it is on the line right before
# its fence (README) or its .EX (a roff comment, man pages):
#     <!-- example: fragment -->     statements, compiled as the body of a
#                                    function after test/example-prelude.h
#     <!-- example: top-level -->    file-scope declarations, compiled
#                                    after test/example-prelude.h
# An unmarked block fails. A loop library that cannot be found fails its
# examples too: CI installs them all.
set -u
SUITE=examples
# lib.sh wants the suite's server; these tests do not use it.
ZKL_TEST_HOSTS=${ZKL_TEST_HOSTS:-unused}
. "$(dirname "$0")/lib.sh"
CC=${CC:-cc}
CFLAGS_EX="-std=c11 -Wall -Wextra -Werror"
INC="-I$top_srcdir/include -I$top_builddir/include -I$top_srcdir/test"

# Extraction: one file per block in $tmp/ex, and $tmp/ex/list with one
# line per block: "FILE NAME KIND SOURCE LINE", KIND one of main,
# fragment, top-level, unmarked, or bad:<marker>; LINE is the line of
# the block's first code line in SOURCE.
mkdir -p "$tmp/ex"
perl - "$tmp/ex" "$top_srcdir/README.md" "$top_srcdir"/docs/*.md "$top_srcdir"/man/*.3.in <<'PERL' ||
use strict;
use warnings;
my ($out, @sources) = @ARGV;
my $n = 0;
open(my $list, '>', "$out/list") or die "$out/list: $!";

sub kind_of {
    my ($marker, $code) = @_;
    return 'main' if $code =~ /^\s*int\s+main\s*\(/m && !defined $marker;
    return 'unmarked' unless defined $marker;
    return $marker if $marker eq 'fragment' || $marker eq 'top-level';
    return "bad:$marker";
}

sub emit {
    my ($name, $kind, $src, $line, $code) = @_;
    $n++;
    my $file = "$out/$n.c";
    open(my $f, '>', $file) or die "$file: $!";
    print $f $code;
    close $f;
    print $list "$n.c $name $kind $src $line\n";
}

# Undoes the roff escapes an example may use; any other is an error.
my %esc = ('e' => '\\', '-' => '-', '(aq' => "'", '(dq' => '"',
           '(ga' => '`', '(ha' => '^', '(ti' => '~', '&' => '');
sub unroff {
    my ($text, $where) = @_;
    $text =~ s{\\(\(..|.)}{
        exists $esc{$1} ? $esc{$1}
                        : die "$where: roff escape \\$1 in an example\n"
    }ge;
    return $text;
}

for my $src (@sources) {
    open(my $in, '<', $src) or die "$src: $!";
    my @l = <$in>;
    close $in;
    (my $base = $src) =~ s{.*/}{};
    $base =~ s{\.in$}{};
    if ($src =~ /\.md$/) {
        for (my $i = 0; $i < @l; $i++) {
            next unless $l[$i] =~ /^```c\s*$/;
            my $marker;
            $marker = $1 if $i > 0 &&
                $l[$i - 1] =~ /^<!--\s*example:\s*(\S+)\s*-->\s*$/;
            my $start = $i + 1;
            my $code = '';
            for ($i++; $i < @l && $l[$i] !~ /^```\s*$/; $i++) {
                $code .= $l[$i];
            }
            emit("$base:$start", kind_of($marker, $code), $src, $start + 1,
                 $code);
        }
    } else {
        my ($sec, $k) = ('', 0);
        for (my $i = 0; $i < @l; $i++) {
            $sec = $1 if $l[$i] =~ /^\.SH\s+"?([^"\n]*)"?/;
            next unless $sec eq 'EXAMPLES' && $l[$i] =~ /^\.EX\s*$/;
            my $marker;
            $marker = $1 if $i > 0 &&
                $l[$i - 1] =~ /^\.\\"\s*example:\s*(\S+)\s*$/;
            my $start = $i + 1;
            my $code = '';
            for ($i++; $i < @l && $l[$i] !~ /^\.EE\s*$/; $i++) {
                $code .= unroff($l[$i], "$base:" . ($i + 1));
            }
            $k++;
            emit("$base:$k", kind_of($marker, $code), $src, $start + 1,
                 $code);
        }
    }
}
close $list;
PERL
    { echo "FAIL: ${ZKL_TEST_PREFIX:-}$SUITE/extract"; failed=$((failed + 1)); }

# The flags of the loop library an example's includes need.
loop_cflags() { # file; prints the flags, fails when a library is missing
    local mod flags all=
    for mod in $(sed -n \
        -e 's/^#include <\(zklock_libevent\.h\|event2\/[a-z_]*\.h\)>.*/libevent_core/p' \
        -e 's/^#include <\(zklock_libuv\.h\|uv\.h\)>.*/libuv/p' \
        -e 's/^#include <\(zklock_glib\.h\|glib\.h\)>.*/glib-2.0/p' \
        -e 's/^#include <\(zklock_libev\.h\|ev\.h\)>.*/libev/p' \
        -e 's/^#include <\(zklock_sdevent\.h\|systemd\/sd-event\.h\)>.*/libsystemd/p' \
        "$1" | sort -u); do
        if [ "$mod" = libev ]; then
            # Debian's libev-dev has no .pc file: ev.h is on the default
            # path, and the compiler says so if it is not there.
            flags=$(pkg-config --cflags libev 2>/dev/null) || flags=
        elif ! flags=$(pkg-config --cflags "$mod" 2>&1); then
            echo "needs $mod, which pkg-config does not find: $flags"
            return 1
        fi
        all="$all $flags"
    done
    echo "$all"
}

t_example() { # file kind source line
    local file=$tmp/ex/$1 kind=$2 src=$3 line=$4 flags extra= unit
    flags=$(loop_cflags "$file") || { echo "$flags"; return 1; }
    unit=$tmp/unit.c
    case $kind in
    main)
        printf '#line %d "%s"\n' "$line" "$src" | cat - "$file" >"$unit"
        ;;
    fragment)
        { echo '#define ZKL_EXAMPLE_FRAGMENT 1'
          echo '#include "example-prelude.h"'
          echo 'void zkl_example_fragment(void);'
          echo 'void zkl_example_fragment(void)'
          echo '{'
          printf '#line %d "%s"\n' "$line" "$src"
          cat "$file"
          echo '}'; } >"$unit"
        ;;
    top-level)
        # Compiled alone, its static prototypes have no definition and
        # nothing uses them: that is the wrapping's doing, not the
        # example's.
        extra=-Wno-unused-function
        { echo '#include "example-prelude.h"'
          printf '#line %d "%s"\n' "$line" "$src"
          cat "$file"; } >"$unit"
        ;;
    unmarked)
        echo "$src:$((line - 1)): neither a complete program (int main)" \
            "nor marked <!-- example: fragment --> or top-level"
        return 1
        ;;
    *)
        echo "$src:$((line - 2)): unknown marker \"${kind#bad:}\""
        return 1
        ;;
    esac
    # shellcheck disable=SC2086
    $CC $CFLAGS_EX $extra $INC $flags -c "$unit" -o "$tmp/unit.o"
}

count_blocks() { awk -v s="$1" '$4 ~ s' "$tmp/ex/list" | wc -l; }

if [ -f "$tmp/ex/list" ]; then
    # Nothing found is a broken extraction, not a pass.
    [ "$(count_blocks 'README[.]md$')" -gt 0 ] ||
        { echo "FAIL: ${ZKL_TEST_PREFIX:-}$SUITE/README.md (no C block found)"; failed=$((failed + 1)); }
    [ "$(count_blocks 'docs/[a-z]*[.]md$')" -gt 0 ] ||
        { echo "FAIL: ${ZKL_TEST_PREFIX:-}$SUITE/docs (no C block found)"; failed=$((failed + 1)); }
    [ "$(count_blocks '[.]3[.]in$')" -gt 0 ] ||
        { echo "FAIL: ${ZKL_TEST_PREFIX:-}$SUITE/man (no example found)"; failed=$((failed + 1)); }
    while read -r file name kind src line; do
        check "$name" t_example "$file" "$kind" "$src" "$line" </dev/null
    done <"$tmp/ex/list"
fi
finish
