#!/usr/bin/env python3
"""Consumer test (a): install, then build examples/pipeline.c out of tree.

Usage: test-install.py MESON BUILD_ROOT SOURCE_ROOT B_SANITIZE

`meson install --destdir` stages the build's real artifacts in a temporary
directory; pkg-config finds them through PKG_CONFIG_PATH, and
PKG_CONFIG_SYSROOT_DIR maps the configured prefix into the staging
directory (the way packagers use staged installs). The example is then
compiled with `cc $(pkg-config --cflags --libs simlsh)` against the shared
library and with `--static` into a static executable, and both must print
what the in-tree example prints.
"""
import glob
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from consumer import SKIP, compiler, run, skip_if_sanitized  # noqa: E402

meson, build, source, sanitize = sys.argv[1:5]
skip_if_sanitized(sanitize)
cc = compiler()
example = os.path.join(source, "examples", "pipeline.c")

with tempfile.TemporaryDirectory(prefix="simlsh-install-") as tmp:
    dest = os.path.join(tmp, "dest")
    run([meson, "install", "-C", build, "--no-rebuild", "--destdir", dest, "--quiet"])
    pcs = glob.glob(os.path.join(dest, "**", "pkgconfig", "simlsh.pc"), recursive=True)
    if len(pcs) != 1:
        sys.exit("FAIL: expected one installed simlsh.pc, found %s" % pcs)
    pcdir = os.path.dirname(pcs[0])
    libdir = os.path.dirname(pcdir)
    headers = glob.glob(os.path.join(dest, "**", "include", "simlsh.h"), recursive=True)
    if len(headers) != 1:
        sys.exit("FAIL: simlsh.h not installed")
    env = dict(os.environ, PKG_CONFIG_PATH=pcdir, PKG_CONFIG_SYSROOT_DIR=dest)
    env.pop("LD_LIBRARY_PATH", None)  # meson test points it at the build tree

    def pkg_config(*args):
        return run(["pkg-config"] + list(args) + ["simlsh"], env=env).split()

    version = run(["pkg-config", "--modversion", "simlsh"], env=env).strip()
    print("installed simlsh", version)

    outputs = {}
    has_shared = bool(glob.glob(os.path.join(libdir, "libsimlsh.so*")))
    has_static = os.path.exists(os.path.join(libdir, "libsimlsh.a"))
    if not has_shared and not has_static:
        sys.exit("FAIL: no library installed in %s" % libdir)

    if has_shared:
        exe = os.path.join(tmp, "pipeline-shared")
        run(cc + ["-std=c11", "-Wall", "-Wextra", "-Werror", example, "-o", exe]
            + pkg_config("--cflags", "--libs"), env=env)
        # The loader must find the staged library, not the build tree's.
        outputs["shared"] = run([exe], env=dict(env, LD_LIBRARY_PATH=libdir))
        needed = subprocess.run(["ldd", exe], stdout=subprocess.PIPE,
                                env=dict(env, LD_LIBRARY_PATH=libdir)).stdout.decode()
        if libdir not in needed:
            sys.exit("FAIL: the shared build does not use the installed library:\n" + needed)

    if has_static:
        exe = os.path.join(tmp, "pipeline-static")
        # -static: a fully static executable proves Libs.private and
        # Requires.private are complete; with libsimlsh.so next to the .a,
        # a plain -lsimlsh would silently pick the shared library.
        run(cc + ["-std=c11", "-Wall", "-Wextra", "-Werror", "-static", example, "-o", exe]
            + pkg_config("--static", "--cflags", "--libs"), env=env)
        outputs["static"] = run([exe], env=env)
    else:
        print("note: no static library installed (default_library=shared)")

    texts = set(outputs.values())
    for kind, text in outputs.items():
        print("--- %s:\n%s" % (kind, text), end="")
    if len(texts) != 1:
        sys.exit("FAIL: the shared and static builds print different results")
    in_tree = os.path.join(build, "examples", "pipeline")
    if os.path.exists(in_tree):
        ref = run([in_tree], env=dict(os.environ))
        if ref not in texts:
            sys.exit("FAIL: out-of-tree output differs from the in-tree example:\n" + ref)
    if not has_shared or not has_static:
        sys.exit(SKIP if not outputs else 0)
print("ok")
