#!/usr/bin/env bash
# The files of the source tree that a commit would hold, NUL-separated,
# relative to the top: git's list in a work tree (tracked, and untracked
# but not ignored), else (an exported tree, git archive or make dist, or
# no git installed) the tree's .gitignore files applied as git applies
# them (per directory, last match wins, "!" re-includes, "/" anchors, a
# trailing "/" means directories, an ignored directory is left whole).
# Nothing built in the tree (configure, objects, a build directory) is
# in it, so a copy of these files builds from scratch.
#
#   test/tree-files.sh [TOP]     (default: this script's tree)
#
# Used by test/packages.sh, test/install.sh and bench/compare.
set -uo pipefail
top=$(cd "${1:-$(dirname "$0")/..}" && pwd)

if command -v git >/dev/null &&
    git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    # Files deleted in the work tree but not yet in the index are listed
    # by git; only those that exist are.
    git -C "$top" ls-files -z -co --exclude-standard |
        (cd "$top" && while IFS= read -r -d '' f; do
            [ -e "$f" ] && printf '%s\0' "$f"
        done)
    exit
fi

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
