#!/usr/bin/env python3
"""Consumer test (b): a parent meson project vendoring simlsh.

Usage: test-subproject.py MESON SOURCE_ROOT B_SANITIZE

Creates a tiny project in a temporary directory with a copy of the source
tree (without build directories or .git) under subprojects/simlsh, whose
meson.build says only dependency('simlsh'); meson finds the subproject
by name and simlsh's meson.override_dependency() provides the dependency.
--force-fallback-for keeps an installed simlsh from being used instead.
"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from consumer import run, skip_if_sanitized  # noqa: E402

meson, source, sanitize = sys.argv[1:4]
skip_if_sanitized(sanitize)
source = os.path.abspath(source)

PARENT = """project('parent', 'c', version : '1.0',
  default_options : ['c_std=c11', 'warning_level=3', 'werror=true'])
simlsh = dependency('simlsh', version : '>= 0.1')
executable('pipeline', 'pipeline.c', dependencies : simlsh)
"""


def ignore(directory, names):
    if os.path.abspath(directory) == source:
        # build trees and VCS data are not part of a vendored copy
        return [n for n in names if n.startswith(("build", "_", ".git"))]
    return [n for n in names if n == "__pycache__"]


with tempfile.TemporaryDirectory(prefix="simlsh-subproject-") as tmp:
    parent = os.path.join(tmp, "parent")
    os.makedirs(os.path.join(parent, "subprojects"))
    shutil.copytree(source, os.path.join(parent, "subprojects", "simlsh"), ignore=ignore,
                    symlinks=True)
    shutil.copy(os.path.join(source, "examples", "pipeline.c"), parent)
    with open(os.path.join(parent, "meson.build"), "w") as f:
        f.write(PARENT)
    env = dict(os.environ)
    env.pop("LD_LIBRARY_PATH", None)
    log = run([meson, "setup", os.path.join(parent, "build"), parent,
               "--force-fallback-for=simlsh"], env=env)
    if "Dependency simlsh found: YES" not in log or "overridden" not in log:
        sys.stdout.write(log)
        sys.exit("FAIL: dependency('simlsh') did not come from the subproject")
    run([meson, "compile", "-C", os.path.join(parent, "build")], env=env)
    out = run([os.path.join(parent, "build", "pipeline")], env=env)
    sys.stdout.write(out)
    if "near-duplicates of 0: 0 (1.0000) 1 " not in out:
        sys.exit("FAIL: unexpected output")
print("ok")
