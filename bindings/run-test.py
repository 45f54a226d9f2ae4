#!/usr/bin/env python3
"""Run one binding's tests against the library of this build, then check
that the binding's dedup example finds the same pairs with the same scores
and the same clusters as simlsh-dedup, byte for byte (issue 16, item 7;
issue 27: the clusters come from the library's dedup engine).

Usage: run-test.py go|rust|node SOURCE_ROOT BUILD_ROOT LIBDIR SIMLSH_DEDUP

Toolchains stay inside BUILD_ROOT/bindings (toolchain.py). Exits 77 (skip)
when the toolchain, or koffi for node, is missing.
"""
import os
import sys

from toolchain import Skip, Toolchains

binding, src, build, libdir, dedup = sys.argv[1:6]
src, dedup = os.path.abspath(src), os.path.abspath(dedup)
tc = Toolchains(src, build, libdir)
try:
    here = tc.prepare(binding)
except Skip as e:
    print("SKIP:", e)
    sys.exit(77)
run = tc.run
if binding == "go":
    run(["go", "vet", "./..."], cwd=here)
    run(["go", "test", "./..."], cwd=here)
elif binding == "rust":
    run(["cargo", "test", "-q", "--manifest-path", os.path.join(here, "simlsh", "Cargo.toml"),
         "--offline"], cwd=here)
else:
    run(["node", "--test", os.path.join(here, "test")], cwd=here)
example = tc.example(binding)

# Same pairs, same scores, same clusters, same bytes as the tool, with the
# tool's defaults and with a threshold at which the library's defaults
# would differ. Pairs are verified by the MinHash estimate in one pass, as
# the tool's --verify estimate does; clusters come from the dedup engine in
# each mode (exact, the default, reads the documents again and bands for
# recall, issue 9). bindings/test-dedup.py compares the exact clusters of
# every front end on a larger corpus.
for opts in (["--output", "pairs", "--verify", "estimate"],
             ["--output", "pairs", "--verify", "estimate", "--threshold", "0.5"],
             [], ["--threshold", "0.5"], ["--verify", "estimate"], ["--verify", "none"]):
    tool = run([dedup, "--quiet"] + opts + ["data/sample"], cwd=src,
               capture_output=True).stdout
    mine = run(example + opts + ["data/sample"], cwd=src, capture_output=True).stdout
    if tool != mine or not tool:
        print("--- simlsh-dedup\n%s--- %s\n%s" % (tool.decode(), binding, mine.decode()))
        sys.exit("FAIL: %s differs from simlsh-dedup (options %s)" % (binding, opts))
    print("ok: %s: %d lines identical to simlsh-dedup %s" % (binding, tool.count(b"\n"),
                                                           " ".join(opts)))
