#!/usr/bin/env python3
"""Import circles and file sizes of lib/ and tools/ (issue 30).

Usage: tests/check-includes.py [--root DIR] [--strict-tools] [--max-lines N] [--list]

A unit is a source and the header of the same name in one folder (X.c and
X.h), or a header with no source of its name; a header is taken to be
named after the file that defines what it declares, as lib/README.md's
rule asks. Unit A uses unit B when a file of A includes a header of B
(#include "...": relative to the file, then lib/, then the one file of the
tree with that path ending), or names a function
that a file of B defines (not static, and not declared in the public
header: calls into the public API are fine from anywhere), in the same
tree. An import circle
is a set of two or more units that use each other (a strongly connected
component); it means either a header named after the wrong file or a real
two-way dependency. The system and public headers are not units.

It also lists every C file over --max-lines lines (900).

Exit status: 1 when lib/ has a circle (other than the KNOWN ones below)
or a file over the limit, 0 otherwise. tools/ is reported but only fails
the check with --strict-tools (STRICT_TOOLS below), which the tools/
layout work turns on once its circles are gone.
"""

import argparse
import os
import re
import sys

# Flip to True (or pass --strict-tools) once tools/ has no circle and no
# file over the limit.
STRICT_TOOLS = True

# Circles that are reported but do not fail, each with why it stays for
# now. One that is no longer found is reported as gone: delete its line.
KNOWN = {
}

ROOT = os.environ.get("SIMLSH_SOURCE_ROOT") or os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))
TREES = ("lib", "tools")
MAX_LINES = 900

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
STRING = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'')
# A definition at the start of a line: return type words, a name, a
# parameter list, then an opening brace (not a ';': a declaration).
DEFINITION = re.compile(r"^([A-Za-z_][\w \t\*]*?)\b([A-Za-z_]\w*)\s*\(([^;{}]*?)\)\s*\{", re.M)
IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
# a use of a name, not a struct, union or enum tag of the same spelling
# (struct run_inputs is no call of run_inputs()); the code is formatted,
# so one space follows the keyword
USE = re.compile(r"(?<!struct )(?<!union )(?<!enum )\b[A-Za-z_]\w*\b")
NOT_NAMES = {"if", "for", "while", "switch", "return", "sizeof", "else", "do"}


def c_files(tree):
    out = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, tree)):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for f in sorted(filenames):
            if f.endswith((".c", ".h")):
                out.append(os.path.relpath(os.path.join(dirpath, f), ROOT))
    return out


def unit_of(path, files):
    """X.c and X.h of one folder are one unit, named after the source."""
    stem = os.path.splitext(path)[0]
    return stem if (stem + ".c") in files or (stem + ".h") in files else path


def code_of(path):
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
        text = f.read()
    return text, STRING.sub('""', COMMENT.sub(" ", text))


def resolve(path, inc, files):
    """The file of the tree that #include "inc" in path names: beside path,
    then under lib/, then the one file of the tree whose path ends so (a
    folder on the include path, such as tools/core/); None when outside."""
    for base in (os.path.dirname(path), "lib"):
        q = os.path.normpath(os.path.join(base, inc))
        if q in files:
            return q
    ends = [f for f in files if f.endswith("/" + os.path.normpath(inc))]
    return ends[0] if len(ends) == 1 else None


def graph(tree):
    files = set(c_files(tree))
    texts = {p: code_of(p) for p in sorted(files)}
    defined = {}  # function name -> units defining it (not static)
    local = {}  # file -> names it defines (static or not)
    for p, (_, code) in texts.items():
        if not p.endswith(".c"):
            continue
        local[p] = set()
        for m in DEFINITION.finditer(code):
            words, name = m.group(1).split(), m.group(2)
            if words and words[0] in NOT_NAMES:
                continue
            local[p].add(name)
        # A program's own functions (a file with main) are no one else's.
        if "main" in local[p]:
            continue
        for m in DEFINITION.finditer(code):
            words, name = m.group(1).split(), m.group(2)
            if name not in NOT_NAMES and "static" not in words and words[:1] != ["else"]:
                defined.setdefault(name, set()).add(unit_of(p, files))
    # Calls into the public API are fine from anywhere (lib/README.md): a
    # function include/simlsh.h declares is no unit's.
    public = os.path.join(ROOT, "include", "simlsh.h")
    if os.path.exists(public):
        for name in set(IDENT.findall(code_of(os.path.relpath(public, ROOT))[1])):
            defined.pop(name, None)
    edges = {}
    for p, (text, code) in texts.items():
        u = unit_of(p, files)
        out = edges.setdefault(u, set())
        for inc in INCLUDE.findall(COMMENT.sub(" ", text)):
            q = resolve(p, inc, files)
            if q is not None:
                out.add(unit_of(q, files))
        if p.endswith(".c"):
            for name in set(USE.findall(code)) - local.get(p, set()):
                out |= defined.get(name, set())
        out.discard(u)
    return edges


def circles(edges):
    """Strongly connected components of two or more units (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
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

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(out)


def long_files(tree, limit):
    out = []
    for p in c_files(tree):
        with open(os.path.join(ROOT, p), encoding="utf-8", errors="replace") as f:
            n = sum(1 for _ in f)
        if n > limit:
            out.append((n, p))
    return sorted(out, reverse=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--strict-tools", action="store_true", default=STRICT_TOOLS,
                    help="fail on tools/ circles and long files too")
    ap.add_argument("--max-lines", type=int, default=MAX_LINES)
    ap.add_argument("--list", action="store_true", help="print every unit's uses")
    ap.add_argument("--root", help="source tree (default: this file's)")
    args = ap.parse_args()
    global ROOT
    if args.root:
        ROOT = os.path.abspath(args.root)
    failed = False
    seen = set()
    for tree in TREES:
        if not os.path.isdir(os.path.join(ROOT, tree)):
            continue
        strict = tree == "lib" or args.strict_tools
        edges = graph(tree)
        if args.list:
            for u in sorted(edges):
                print(f"{u} -> {' '.join(sorted(edges[u])) or '-'}")
        found = circles(edges)
        big = long_files(tree, args.max_lines)
        verdict = "" if strict else " (reported, not failing: see --strict-tools)"
        print(f"{tree}/: {len(edges)} units, {len(found)} import circle(s), "
              f"{len(big)} file(s) over {args.max_lines} lines{verdict}")
        new = 0
        for c in found:
            name = " <-> ".join(c)
            seen.add(name)
            if name in KNOWN:
                print(f"  circle (known): {name}: {KNOWN[name]}")
            else:
                print(f"  circle: {name}")
                new += 1
        for n, p in big:
            print(f"  long: {p} ({n} lines)")
        if strict and (new or big):
            failed = True
    for name in sorted(set(KNOWN) - seen):
        print(f"gone: {name}: delete it from KNOWN in {os.path.basename(__file__)}")
    print("FAIL" if failed else "ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
