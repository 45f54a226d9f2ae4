#!/usr/bin/env python3
"""Documents per second of each binding against C (issue 16): every program
signs the same 100,000 documents of 45 bytes with the "dedup" preset, once
per document (clear, add_text, values) and with simlsh_sign_batch() on one
thread in chunks of 4096 into one reused matrix, timing the second of two
passes ("-batch"; C also reports one cold call as "c-batch-cold"). Each
program is run three times; prints the best JSON object of each, then each
binding's ratio to C by wall time and by process CPU time (the steadier
measure on a loaded machine).
Toolchains that are missing are left out. Not a test: run by
`meson test --benchmark` or directly.

Usage: run-bench.py SOURCE_ROOT BUILD_ROOT BENCH_C_EXE
"""
import json
import os
import shutil
import subprocess
import sys

src, build, bench_c = (os.path.abspath(p) for p in sys.argv[1:4])
libdir = os.path.join(build, "lib")
work = os.path.join(build, "bindings")
env = dict(os.environ, LD_LIBRARY_PATH=libdir, PKG_CONFIG_PATH=os.path.join(work, "pkgconfig"),
           SIMLSH_LIBRARY=os.path.join(libdir, "libsimlsh.so.1"),
           GOCACHE=os.path.join(work, "go", "cache"), GOFLAGS="-mod=mod", GOPROXY="off",
           CARGO_HOME=os.path.join(work, "rust", "cargo-home"),
           CARGO_TARGET_DIR=os.path.join(work, "rust", "target"),
           NODE_PATH=os.path.join(work, "node", "node_modules"))
if not os.path.exists(os.path.join(work, "pkgconfig", "simlsh.pc")):
    sys.exit("run the binding tests first (meson test --suite bindings): they set up "
             + work)


def run(cmd, cwd):
    return subprocess.run(cmd, cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout


progs = [("c", [bench_c], src)]
if shutil.which("go"):
    exe = os.path.join(work, "go", "bench")
    run(["go", "build", "-o", exe, "./cmd/bench"], os.path.join(src, "bindings", "go"))
    progs.append(("go", [exe], src))
if shutil.which("cargo"):
    run(["cargo", "build", "-q", "--release", "--offline", "--example", "bench",
         "--manifest-path", os.path.join(src, "bindings", "rust", "simlsh", "Cargo.toml")], src)
    progs.append(("rust", [os.path.join(work, "rust", "target", "release", "examples",
                                        "bench")], src))
if shutil.which("node") and os.path.isdir(env["NODE_PATH"]):
    progs.append(("node", ["node", os.path.join(src, "bindings", "node", "bench.js")], src))

best, best_cpu = {}, {}
for name, cmd, cwd in progs:
    # best of three runs: the machine may be shared
    for _ in range(3):
        for line in run(cmd, cwd).splitlines():
            r = json.loads(line)
            if r["docs_per_s"] > best.get(r["binding"], {"docs_per_s": 0})["docs_per_s"]:
                best[r["binding"]] = r
            b = r["binding"]
            best_cpu[b] = max(best_cpu.get(b, 0), r["cpu_docs_per_s"])
for r in best.values():
    print(json.dumps(dict(r, best_cpu_docs_per_s=best_cpu[r["binding"]])))
checks = {r["check"] for r in best.values()}
if len(checks) != 1:
    sys.exit("the programs signed different documents: %s" % best)


# Per-document calls against C's per-document loop, batch calls against
# C's batch call.
def ratios(rate):
    return {n: round(rate[n] / rate["c-batch" if n.endswith("-batch") else "c"], 3)
            for n in rate if not n.startswith("c")}


print(json.dumps({"ratio_to_c": ratios({n: r["docs_per_s"] for n, r in best.items()}),
                  "cpu_ratio_to_c": ratios(best_cpu)}))
