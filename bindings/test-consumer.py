#!/usr/bin/env python3
"""A program of one's own, outside the tree, using one binding the way
docs/bindings.md (section 8, "From your own project") says, step for step
(issue 29).

Usage: test-consumer.py go|rust|node SOURCE_ROOT BUILD_ROOT MESON

The C library is installed first, as the doc's first step says, into a
prefix inside BUILD_ROOT/bindings (configured once with the library alone,
then `meson install` again, which rebuilds only what changed). The
consumer lives in a temporary directory; its program runs with no
LD_LIBRARY_PATH: Go and Rust through the rpath the doc gives them, Node
through SIMLSH_LIBRARY. Toolchain caches stay in BUILD_ROOT/bindings
(GOCACHE, CARGO_HOME and a target directory, the npm cache), so a second
run is quick. Exits 77 (skip) when the toolchain is missing, or for node
when koffi cannot be installed.
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

binding, src, build, meson = sys.argv[1:5]
src, build = os.path.abspath(src), os.path.abspath(build)
work = os.path.join(build, "bindings", "consumer")
os.makedirs(work, exist_ok=True)


def skip(why):
    print("SKIP:", why)
    sys.exit(77)


def run(cmd, cwd=None, env=None, expect=0, timeout=600):
    print("+", " ".join(cmd), flush=True)
    p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=timeout)
    out = p.stdout.decode(errors="replace")
    if expect is not None and p.returncode != expect:
        sys.stdout.write(out)
        sys.exit("FAIL: exit %d (expected %d): %s" % (p.returncode, expect, " ".join(cmd)))
    return out


tool = {"go": "go", "rust": "cargo", "node": "npm"}[binding]
if not shutil.which(tool) or (binding == "node" and not shutil.which("node")):
    skip(tool + " not found")

env = dict(os.environ)
env.pop("LD_LIBRARY_PATH", None)  # meson test points it at the build tree
for var in ("SIMLSH_LIBRARY", "SIMLSH_LIB", "SIMLSH_LIB_DIR", "PKG_CONFIG_PATH"):
    env.pop(var, None)

# Step 1 of the doc: the C library installed under a prefix.
prefix = os.path.join(work, "prefix")
libbuild = os.path.join(work, "lib-build")
if not os.path.exists(os.path.join(libbuild, "build.ninja")):
    shutil.rmtree(libbuild, ignore_errors=True)
    run([meson, "setup", libbuild, src, "--prefix", prefix, "-Dtests=false", "-Dtools=false",
         "-Dexamples=false", "-Dbench=false", "-Dpython=disabled", "-Ddocs=false",
         "-Dfuzz=false"], env=env)
run([meson, "install", "-C", libbuild, "--quiet"], env=env, timeout=900)
pcs = glob.glob(os.path.join(prefix, "**", "pkgconfig", "simlsh.pc"), recursive=True)
if len(pcs) != 1:
    sys.exit("FAIL: expected one simlsh.pc under %s, found %s" % (prefix, pcs))
pcdir = os.path.dirname(pcs[0])
libdir = os.path.dirname(pcdir)
library = os.path.join(libdir, "libsimlsh.so.1")
env["PKG_CONFIG_PATH"] = pcdir  # "PKG_CONFIG_PATH=PREFIX/LIBDIR/pkgconfig"

EXPECT = "unit=char k=5 normalize=lower,space"  # the "dedup" preset's contract


def check_output(out, what):
    sys.stdout.write(out)
    if EXPECT not in out or "jaccard 0.7" not in out:
        sys.exit("FAIL: %s printed something else" % what)


GO_MAIN = """package main

import (
	"fmt"

	simlsh "github.com/simlsh/simlsh/bindings/go"
)

func main() {
	p, err := simlsh.NewParams("dedup")
	if err != nil {
		panic(err)
	}
	defer p.Close()
	d, _ := p.Describe()
	a, _ := simlsh.NewSignature(p)
	b, _ := simlsh.NewSignature(p)
	a.SetText([]byte("the quick brown fox jumps over the lazy dog"))
	b.SetText([]byte("the quick brown fox jumped over the lazy dog"))
	j, err := a.Jaccard(b)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s\\njaccard %.1f\\n", d, j)
}
"""

RUST_MAIN = """fn main() {
    let p = simlsh::Params::preset("dedup").unwrap();
    let mut a = simlsh::Signature::new(&p).unwrap();
    let mut b = simlsh::Signature::new(&p).unwrap();
    a.set_text(b"the quick brown fox jumps over the lazy dog").unwrap();
    b.set_text(b"the quick brown fox jumped over the lazy dog").unwrap();
    println!("{}\\njaccard {:.1}", p.describe().unwrap(), a.jaccard(&b).unwrap());
}
"""

NODE_MAIN = """const { Params, Signature } = require('simlsh');
const p = new Params('dedup');
const a = new Signature(p), b = new Signature(p);
a.setText('the quick brown fox jumps over the lazy dog');
b.setText('the quick brown fox jumped over the lazy dog');
const va = a.values(), vb = b.values();
let same = 0;
for (let i = 0; i < va.length; i++) same += va[i] === vb[i];
console.log(p.describe() + '\\njaccard ' + (same / va.length).toFixed(1));
"""

with tempfile.TemporaryDirectory(prefix="simlsh-consumer-%s-" % binding) as tmp:
    app = os.path.join(tmp, "myprog")
    os.mkdir(app)
    if binding == "go":
        env.update(GOCACHE=os.path.join(work, "go-cache"), GOPATH=os.path.join(work, "gopath"),
                   GOPROXY="off", GOFLAGS="-mod=mod", CGO_ENABLED="1")
        with open(os.path.join(app, "main.go"), "w") as f:
            f.write(GO_MAIN)
        run(["go", "mod", "init", "example.com/myprog"], cwd=app, env=env)
        run(["go", "mod", "edit", "-replace",
             "github.com/simlsh/simlsh/bindings/go=" + os.path.join(src, "bindings", "go")],
            cwd=app, env=env)
        run(["go", "mod", "tidy"], cwd=app, env=env)
        run(["go", "build"], cwd=app, env=env)
        check_output(run([os.path.join(app, "myprog")], cwd=app, env=env), "the Go program")
    elif binding == "rust":
        env.update(CARGO_HOME=os.path.join(work, "cargo-home"),
                   CARGO_TARGET_DIR=os.path.join(work, "cargo-target"))
        crate = os.path.join(src, "bindings", "rust", "simlsh")
        os.rmdir(app)
        run(["cargo", "new", "--offline", "--vcs", "none", "--bin", "myprog"], cwd=tmp, env=env)
        with open(os.path.join(app, "Cargo.toml"), "a") as f:
            f.write('simlsh = { path = "%s" }\n' % crate)
        with open(os.path.join(app, "src", "main.rs"), "w") as f:
            f.write(RUST_MAIN)
        os.mkdir(os.path.join(app, ".cargo"))
        with open(os.path.join(app, ".cargo", "config.toml"), "w") as f:
            f.write('[build]\nrustflags = ["-C", "link-arg=-Wl,-rpath,%s"]\n' % libdir)
        run(["cargo", "build", "--offline", "-q"], cwd=app, env=env, timeout=900)
        exe = os.path.join(env["CARGO_TARGET_DIR"], "debug", "myprog")
        check_output(run([exe], cwd=app, env=env), "the Rust program")
        # Without pkg-config's answer or SIMLSH_LIBRARY, the build says what
        # to set (a fresh target directory: the build script runs again).
        bad = dict(env, PKG_CONFIG_PATH=os.path.join(tmp, "nothing"),
                   PKG_CONFIG_LIBDIR=os.path.join(tmp, "nothing"),
                   CARGO_TARGET_DIR=os.path.join(tmp, "target-bad"))
        out = run(["cargo", "build", "--offline", "-q"], cwd=app, env=bad, expect=101,
                  timeout=900)
        if "PKG_CONFIG_PATH" not in out or "SIMLSH_LIBRARY" not in out:
            sys.stdout.write(out)
            sys.exit("FAIL: a failed search does not say what to set")
        print("ok: the failed search names PKG_CONFIG_PATH and SIMLSH_LIBRARY")
    else:
        env["npm_config_cache"] = os.path.join(work, "npm-cache")
        npm = ["npm", "--no-audit", "--no-fund", "--loglevel=error"]
        node_dir = os.path.join(src, "bindings", "node")
        with open(os.path.join(app, "app.js"), "w") as f:
            f.write(NODE_MAIN)
        run(npm + ["init", "-y"], cwd=app, env=env)
        # What the doc warns about: a plain `npm install <path>` links the
        # checkout, where no koffi is; the error then says what to do.
        linked = os.path.join(tmp, "linked")
        os.mkdir(linked)
        shutil.copy(os.path.join(app, "app.js"), linked)
        run(npm + ["init", "-y"], cwd=linked, env=env)
        run(npm + ["install", node_dir], cwd=linked, env=env)
        if os.path.islink(os.path.join(linked, "node_modules", "simlsh")) and \
                not os.path.isdir(os.path.join(node_dir, "node_modules", "koffi")):
            out = run(["node", "app.js"], cwd=linked, env=env, expect=1)
            if "--install-links" not in out or "koffi" not in out:
                sys.stdout.write(out)
                sys.exit("FAIL: a linked install without koffi does not say what to do")
        print("+", " ".join(npm + ["install", "--install-links", node_dir]), flush=True)
        p = subprocess.run(npm + ["install", "--install-links", node_dir], cwd=app, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
        if p.returncode != 0:
            sys.stdout.write(p.stdout.decode(errors="replace"))
            skip("npm could not install the package and koffi (registry unreachable?)")
        if os.path.islink(os.path.join(app, "node_modules", "simlsh")):
            sys.exit("FAIL: --install-links left a link to the checkout")
        user = dict(env, SIMLSH_LIBRARY=library)
        check_output(run(["node", "app.js"], cwd=app, env=user), "the Node program")
        # A load failure names the file and the variable.
        for extra, names in (({"SIMLSH_LIBRARY": os.path.join(tmp, "no", "libsimlsh.so.1")},
                              ["SIMLSH_LIBRARY", os.path.join(tmp, "no", "libsimlsh.so.1")]),
                             ({}, ["SIMLSH_LIBRARY", "libsimlsh.so.1"])):
            out = run(["node", "app.js"], cwd=app, env=dict(env, **extra), expect=1)
            if not all(n in out for n in names):
                sys.stdout.write(out)
                sys.exit("FAIL: the load error does not name %s" % names)
        # The old name still works, with a deprecation warning.
        out = run(["node", "app.js"], cwd=app, env=dict(env, SIMLSH_LIB=library))
        if "SIMLSH_LIB is deprecated" not in out or EXPECT not in out:
            sys.stdout.write(out)
            sys.exit("FAIL: SIMLSH_LIB no longer works, or says nothing")
        # npm pack, then install the tarball from another fresh project.
        run(npm + ["pack", node_dir, "--pack-destination", tmp], cwd=tmp, env=env)
        tgz = glob.glob(os.path.join(tmp, "simlsh-*.tgz"))
        if len(tgz) != 1:
            sys.exit("FAIL: npm pack made %s" % tgz)
        listing = run(["tar", "tzf", tgz[0]])
        if "package/test/" in listing or "package/bench.js" in listing:
            sys.exit("FAIL: the package carries tests or benchmarks:\n" + listing)
        app2 = os.path.join(tmp, "packed")
        os.mkdir(app2)
        shutil.copy(os.path.join(app, "app.js"), app2)
        run(npm + ["init", "-y"], cwd=app2, env=env)
        run(npm + ["install", tgz[0]], cwd=app2, env=env)
        check_output(run(["node", "app.js"], cwd=app2, env=user), "the packed Node program")
print("ok: a %s program outside the tree, as docs/bindings.md says" % binding)
