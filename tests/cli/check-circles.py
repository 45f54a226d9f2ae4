#!/usr/bin/env python3
"""No two files of the tools' core call each other, directly or around a
circle (issue 30; tools/README.md, "Who includes whom").

Usage: check-circles.py NM ARCHIVE...
Each member of each static library is a file: file A uses file B when A
has an undefined symbol that B defines. The strongly connected components
of that graph must all be single files; a larger one is printed with the
symbols that close it, and the check fails."""
import collections
import os
import re
import subprocess
import sys

nm, archives = sys.argv[1], sys.argv[2:]
defs, uses, files = {}, collections.defaultdict(set), set()
line_re = re.compile(r"^.*\[(?P<member>[^\]]+)\]: (?P<sym>\S+) (?P<type>\S)")
for archive in archives:
    out = subprocess.run([nm, "-A", "-P", archive], capture_output=True, text=True, check=True)
    for line in out.stdout.splitlines():
        m = line_re.match(line)
        if not m:
            continue
        f = os.path.basename(m.group("member"))
        f = f[:-2] if f.endswith(".o") else f
        files.add(f)
        if m.group("type") in "TDBR":
            defs[m.group("sym")] = f
        elif m.group("type") == "U":
            uses[f].add(m.group("sym"))
if not files:
    sys.exit("check-circles: no object read from " + " ".join(archives))
edges = {f: {defs[s] for s in uses[f] if s in defs and defs[s] != f} for f in files}

# Tarjan's strongly connected components, iteratively.
index, low, on, stack, comps, counter = {}, {}, set(), [], [], [0]
for root in sorted(files):
    if root in index:
        continue
    work = [(root, iter(sorted(edges[root])))]
    index[root] = low[root] = counter[0]
    counter[0] += 1
    stack.append(root)
    on.add(root)
    while work:
        v, it = work[-1]
        w = next(it, None)
        if w is None:
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                comps.append(sorted(comp))
        elif w not in index:
            index[w] = low[w] = counter[0]
            counter[0] += 1
            stack.append(w)
            on.add(w)
            work.append((w, iter(sorted(edges[w]))))
        elif w in on:
            low[v] = min(low[v], index[w])

circles = [c for c in comps if len(c) > 1]
for c in circles:
    print("circle:", " ".join(c))
    for a in c:
        for b in c:
            syms = sorted(s for s in uses[a] if defs.get(s) == b)
            if syms:
                print("  %s -> %s: %s" % (a, b, ", ".join(syms[:4])))
print("check-circles: %d files, %d circle(s)" % (len(files), len(circles)))
sys.exit(1 if circles else 0)
