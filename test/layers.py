#!/usr/bin/env python3
"""The calls between the files of lib/, and what the core promises of
them (docs/design.md): no circle of calls between files, the client
(client.c) calls no recipe's file, and the attempt machine (attempt.c)
names no kind of lock.

    layers.py SRCDIR BUILDDIR [--print]

Compiles each lib/*.c with gcc -fcallgraph-info into a temporary
directory (direct calls only: a call through a function pointer, which
is how the client reaches operations and the machine reaches recipes,
is not an edge), maps each callee to the file that defines it, and
prints one line per broken promise (with --print, the graph too).
Exits 1 if there was any.
"""
import collections
import glob
import os
import re
import subprocess
import sys
import tempfile

# The recipes and their handles: files the client must reach only
# through the operation contract.
RECIPE_FILES = {"lock.c", "latch.c", "semaphore.c", "multilock.c",
                "guarded.c", "contenders.c", "revoke.c"}


def graph(src, build):
    tmp = tempfile.mkdtemp()
    defs, calls = {}, []
    for path in sorted(glob.glob(os.path.join(src, "lib", "*.c"))):
        base = os.path.basename(path)
        obj = os.path.join(tmp, base[:-2] + ".o")
        subprocess.check_call(
            ["gcc", "-std=c11", "-O0", "-c", "-D_GNU_SOURCE",
             "-DHAVE_CONFIG_H", "-I", os.path.join(src, "include"),
             "-I", os.path.join(src, "lib"), "-I", build,
             "-I", os.path.join(build, "include"), "-fcallgraph-info",
             "-o", obj, path], cwd=tmp)
        ci = open(obj[:-2] + ".ci").read()
        for m in re.finditer(r'node: \{ title: "([^"]+)" label: "([^"]*)"', ci):
            if base in m.group(2):
                defs[m.group(1)] = base
        for m in re.finditer(r'edge: \{ sourcename: "([^"]+)" '
                             r'targetname: "([^"]+)"', ci):
            calls.append((base, m.group(2)))
    edges = collections.defaultdict(set)
    for f, callee in calls:
        if callee in defs and defs[callee] != f:
            edges[f].add(defs[callee])
    files = sorted({os.path.basename(p)
                    for p in glob.glob(os.path.join(src, "lib", "*.c"))})
    return files, edges


def circles(files, edges):
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for f in files:
        if f not in index:
            visit(f)
    return out


def main():
    src, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    files, edges = graph(src, build)
    bad = 0
    if "--print" in sys.argv:
        for f in files:
            print("%-14s -> %s" % (f, " ".join(sorted(edges[f]))))
    for c in circles(files, edges):
        print("a circle of calls: " + " ".join(c))
        bad = 1
    for f in sorted(edges["client.c"] & RECIPE_FILES):
        print("client.c calls %s, a recipe's file" % f)
        bad = 1
    text = open(os.path.join(src, "lib", "attempt.c")).read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    for n in sorted(set(re.findall(r"\b(ZKL_KIND_\w+|zkl__sem_\w+|"
                                   r"zkl_lease_\w+)", text))):
        print("attempt.c names %s" % n)
        bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main())
