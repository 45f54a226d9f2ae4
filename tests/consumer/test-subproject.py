#!/usr/bin/env python3
"""Consumer test (b): a parent meson project vendoring simlsh.

Usage: test-subproject.py MESON SOURCE_ROOT B_SANITIZE [DEFAULT_LIBRARY]

Creates a tiny project in a temporary directory with a copy of the source
tree (without build directories or .git) under subprojects/simlsh, whose
meson.build says only dependency('simlsh'); meson finds the subproject
by name and simlsh's meson.override_dependency() provides the dependency.
--force-fallback-for keeps an installed simlsh from being used instead.

With DEFAULT_LIBRARY (static, shared or both) the parent project sets
default_library in its project() default_options, and the vendored build
must follow it: with static the program carries simlsh inside it (no
NEEDED libsimlsh in its dynamic section, no libsimlsh.so built at all) and
runs with no LD_LIBRARY_PATH; with shared or both it needs libsimlsh.so.1
(the archive is built beside it: lib/meson.build says why).
"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from consumer import SKIP, run, skip_if_sanitized  # noqa: E402

meson, source, sanitize = sys.argv[1:4]
mode = sys.argv[4] if len(sys.argv) > 4 else ""
skip_if_sanitized(sanitize)
source = os.path.abspath(source)

PARENT = """project('parent', 'c', version : '1.0',
  default_options : ['c_std=c11', 'warning_level=3', 'werror=true'@MODE@])
simlsh = dependency('simlsh', version : '>= 0.1')
executable('pipeline', 'pipeline.c', dependencies : simlsh)
"""


def ignore(directory, names):
    if os.path.abspath(directory) == source:
        # build trees and VCS data are not part of a vendored copy
        return [n for n in names if n.startswith(("build", "_", ".git"))]
    return [n for n in names if n == "__pycache__"]


def check_mode(build, exe):
    """The program and the subproject's build tree follow default_library."""
    if not shutil.which("readelf"):
        print("skip: no readelf to read the program's dynamic section")
        sys.exit(SKIP)
    dynamic = run(["readelf", "-d", exe])
    needed = [line for line in dynamic.splitlines() if "(NEEDED)" in line]
    print("".join(l.strip() + "\n" for l in needed), end="")
    uses_shared = any("libsimlsh" in line for line in needed)
    built = []
    for root, _, names in os.walk(os.path.join(build, "subprojects")):
        built += [n for n in names if n.startswith("libsimlsh.")]
    print("built:", " ".join(sorted(built)))
    has_so = any(".so" in n for n in built)
    has_a = "libsimlsh.a" in built
    if mode == "static" and (uses_shared or has_so or not has_a):
        sys.exit("FAIL: default_library=static, but the program needs a shared libsimlsh "
                 "or one was built")
    if mode in ("", "shared") and not (uses_shared and has_so):
        sys.exit("FAIL: default_library=shared, but the program does not need libsimlsh.so.1")
    if mode == "both" and not (uses_shared and has_so and has_a):
        sys.exit("FAIL: default_library=both should build both and link the shared one")


with tempfile.TemporaryDirectory(prefix="simlsh-subproject-") as tmp:
    parent = os.path.join(tmp, "parent")
    os.makedirs(os.path.join(parent, "subprojects"))
    shutil.copytree(source, os.path.join(parent, "subprojects", "simlsh"), ignore=ignore,
                    symlinks=True)
    shutil.copy(os.path.join(source, "examples", "pipeline.c"), parent)
    with open(os.path.join(parent, "meson.build"), "w") as f:
        f.write(PARENT.replace("@MODE@", ", 'default_library=%s'" % mode if mode else ""))
    env = dict(os.environ)
    env.pop("LD_LIBRARY_PATH", None)
    log = run([meson, "setup", os.path.join(parent, "build"), parent,
               "--force-fallback-for=simlsh"], env=env)
    if "Dependency simlsh found: YES" not in log or "overridden" not in log:
        sys.stdout.write(log)
        sys.exit("FAIL: dependency('simlsh') did not come from the subproject")
    run([meson, "compile", "-C", os.path.join(parent, "build")], env=env)
    exe = os.path.join(parent, "build", "pipeline")
    out = run([exe], env=env)
    sys.stdout.write(out)
    if "near-duplicates of 0: 0 (1.0000) 1 " not in out:
        sys.exit("FAIL: unexpected output")
    # without a value the parent has meson's default, shared
    check_mode(os.path.join(parent, "build"), exe)
print("ok")
