#!/usr/bin/env python3
"""Consumer test: getting started from a prefix (issue 29, item 3).

Usage: test-prefix.py MESON SOURCE_ROOT B_SANITIZE

Does what docs/getting-started.md ("Build against it") tells a user:
configures the library alone with --prefix in a temporary directory,
installs it there (a real install, not a staged one, so the paths in
simlsh.pc are the final ones), points PKG_CONFIG_PATH at the installed
.pc, builds examples/pipeline.c with `cc myprog.c $(pkg-config --cflags
--libs simlsh)` and runs it with no LD_LIBRARY_PATH: the .pc's rpath must
let the loader find libsimlsh.so.1 (exit 127 before). A configuration with
--prefix /usr (a libdir the loader searches) must not get the rpath.
"""
import glob
import os
import shlex
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from consumer import SKIP, compiler, run, skip_if_sanitized  # noqa: E402

meson, source, sanitize = sys.argv[1:4]
skip_if_sanitized(sanitize)
cc = compiler()
if not shutil.which("pkg-config"):
    print("skip: no pkg-config")
    sys.exit(SKIP)
source = os.path.abspath(source)
# Only the library: the parts a user building for C needs.
LIB_ONLY = ["-Dtests=false", "-Dtools=false", "-Dexamples=false", "-Dbench=false",
            "-Dpython=disabled", "-Ddocs=false", "-Dfuzz=false"]

env = dict(os.environ)
env.pop("LD_LIBRARY_PATH", None)  # meson test points it at the build tree
env.pop("PKG_CONFIG_PATH", None)

with tempfile.TemporaryDirectory(prefix="simlsh-prefix-") as tmp:
    prefix = os.path.join(tmp, "prefix")
    build = os.path.join(tmp, "build")
    run([meson, "setup", build, source, "--prefix", prefix] + LIB_ONLY, env=env)
    run([meson, "install", "-C", build, "--quiet"], env=env, timeout=900)
    pcs = glob.glob(os.path.join(prefix, "**", "pkgconfig", "simlsh.pc"), recursive=True)
    if len(pcs) != 1:
        sys.exit("FAIL: expected one installed simlsh.pc, found %s" % pcs)
    libdir = os.path.dirname(os.path.dirname(pcs[0]))

    # The doc's steps, word for word.
    user = dict(env, PKG_CONFIG_PATH=os.path.dirname(pcs[0]))
    work = os.path.join(tmp, "myproject")
    os.mkdir(work)
    shutil.copy(os.path.join(source, "examples", "pipeline.c"), os.path.join(work, "myprog.c"))
    flags = run(["pkg-config", "--cflags", "--libs", "simlsh"], env=user).split()
    print("pkg-config --cflags --libs simlsh:", " ".join(map(shlex.quote, flags)))
    run(cc + ["myprog.c"] + flags, env=user, cwd=work)
    out = run([os.path.join(work, "a.out")], env=user, cwd=work)
    sys.stdout.write(out)
    if "near-duplicates of 0: 0 (1.0000) 1 " not in out:
        sys.exit("FAIL: unexpected output")
    if shutil.which("readelf"):
        dynamic = run(["readelf", "-d", os.path.join(work, "a.out")])
        if libdir not in dynamic:
            sys.exit("FAIL: the program has no run path to %s:\n%s" % (libdir, dynamic))

    # A system prefix: no rpath in the .pc (configured only).
    sysbuild = os.path.join(tmp, "build-usr")
    run([meson, "setup", sysbuild, source, "--prefix", "/usr"] + LIB_ONLY, env=env)
    with open(os.path.join(sysbuild, "simlsh.pc")) as f:
        text = f.read()
    libs = [line for line in text.splitlines() if line.startswith("Libs:")]
    print("prefix /usr:", libs)
    if libs != ["Libs: -L${libdir} -lsimlsh"]:
        sys.exit("FAIL: a system libdir should get no rpath:\n" + text)
print("ok")
