#!/usr/bin/env python3
"""Run one binding's tests against the library of this build, then check
that the binding's dedup example finds the same pairs with the same scores
and the same clusters as simlsh-dedup, byte for byte (issue 16, item 7;
issue 27: the clusters come from the library's dedup engine).

Usage: run-test.py go|rust|node SOURCE_ROOT BUILD_ROOT LIBDIR SIMLSH_DEDUP

Toolchains stay inside BUILD_ROOT/bindings (GOCACHE, CARGO_HOME, the cargo
target directory, node_modules), and a simlsh.pc there points at the
source tree's header and the build's library, as an installed one would
point at the installed files. Exits 77 (skip) when the toolchain, or koffi
for node, is missing.
"""
import os
import shutil
import subprocess
import sys

binding, src, build, libdir, dedup = sys.argv[1:6]
src, build, libdir, dedup = (os.path.abspath(p) for p in (src, build, libdir, dedup))
work = os.path.join(build, "bindings", binding)
os.makedirs(work, exist_ok=True)
pcdir = os.path.join(build, "bindings", "pkgconfig")
os.makedirs(pcdir, exist_ok=True)
with open(os.path.join(pcdir, "simlsh.pc"), "w") as f:
    f.write("includedir=%s\nlibdir=%s\n\nName: simlsh\nDescription: in-tree build\n"
            "Version: 0\nCflags: -I${includedir}\nLibs: -L${libdir} -lsimlsh\n"
            % (os.path.join(src, "include"), libdir))

env = dict(os.environ)
env["PKG_CONFIG_PATH"] = pcdir
env["LD_LIBRARY_PATH"] = libdir + os.pathsep + env.get("LD_LIBRARY_PATH", "")
env["SIMLSH_LIBRARY"] = os.path.join(libdir, "libsimlsh.so.1")
env["SIMLSH_HEADER"] = os.path.join(src, "include", "simlsh.h")
here = os.path.join(src, "bindings", binding)


def skip(why):
    print("SKIP:", why)
    sys.exit(77)


def run(cmd, cwd=here, **kw):
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, cwd=cwd, env=env, check=True, **kw)


if binding == "go":
    if not shutil.which("go"):
        skip("go not found")
    env.update(GOCACHE=os.path.join(work, "cache"), GOPATH=os.path.join(work, "gopath"),
               GOFLAGS="-mod=mod", GO111MODULE="on", GOPROXY="off", CGO_ENABLED="1")
    run(["go", "vet", "./..."])
    run(["go", "test", "./..."])
    exe = os.path.join(work, "dedup")
    run(["go", "build", "-o", exe, "./cmd/dedup"])
    example = [exe]
elif binding == "rust":
    if not shutil.which("cargo"):
        skip("cargo not found")
    env.update(CARGO_HOME=os.path.join(work, "cargo-home"),
               CARGO_TARGET_DIR=os.path.join(work, "target"), SIMLSH_NO_PKG_CONFIG="")
    # Build a copy: cargo writes Cargo.lock next to the manifest, and a lock
    # written by one cargo may not parse with another (format 4 vs 3), so
    # the source tree keeps none.
    crates = os.path.join(work, "src")
    shutil.rmtree(crates, ignore_errors=True)
    shutil.copytree(here, crates, ignore=shutil.ignore_patterns("Cargo.lock", "target"))
    manifest = ["--manifest-path", os.path.join(crates, "simlsh", "Cargo.toml"), "--offline"]
    run(["cargo", "test", "-q"] + manifest)
    run(["cargo", "build", "-q", "--example", "dedup"] + manifest)
    example = [os.path.join(work, "target", "debug", "examples", "dedup")]
elif binding == "node":
    if not shutil.which("node"):
        skip("node not found")
    modules = os.path.join(work, "node_modules")
    env["NODE_PATH"] = modules
    probe = ["node", "-e", "require('koffi')"]
    if subprocess.run(probe, env=env, capture_output=True).returncode != 0:
        if shutil.which("npm"):
            subprocess.run(["npm", "install", "--no-save", "--no-audit", "--no-fund",
                            "--prefix", work, "koffi"], env=env)
        if subprocess.run(probe, env=env, capture_output=True).returncode != 0:
            skip("koffi not installed and npm could not install it")
    run(["node", "--test", os.path.join(here, "test")])
    example = ["node", os.path.join(here, "dedup.js")]
else:
    sys.exit("unknown binding " + binding)

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
