#!/usr/bin/env python3
"""meson dist script (python/meson.build): put the C library's sources into
the sdist as subprojects/simlsh, so that pip builds a wheel from the sdist
alone, offline.

In the checkout, python/subprojects/simlsh is a link to the top of the
repository, which meson dist does not follow. The files are taken from the
repository's HEAD with git archive, as meson dist takes the package's own
files; an sdist unpacked from another sdist (no git) has them as a plain
directory, which is copied.
"""

import os
import shutil
import subprocess
import sys
import tarfile
import io

# What the library's meson.build reads when it is a subproject (the rest of
# the repository -- tools, tests, bindings -- is behind "not is_sub").
PATHS = ["meson.build", "meson_options.txt", "simlsh.pc.in", "NEWS.md", "include", "lib",
         "cmake", "api/meson.build", "api/gen-api.py", "api/annotate-header.py",
         "docs/meson.build"]


def main():
    dist_root = os.environ["MESON_DIST_ROOT"]
    source_root = os.environ["MESON_SOURCE_ROOT"]  # python/
    src = os.path.realpath(os.path.join(source_root, "subprojects", "simlsh"))
    dest = os.path.join(dist_root, "subprojects", "simlsh")
    if os.path.islink(dest) or os.path.isfile(dest):
        os.unlink(dest)
    elif os.path.isdir(dest):
        shutil.rmtree(dest)
    os.makedirs(dest)
    present = [p for p in PATHS if os.path.exists(os.path.join(src, p))]
    top = subprocess.run(["git", "-C", src, "rev-parse", "--show-toplevel"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         universal_newlines=True, check=False)
    if top.returncode == 0 and os.path.realpath(top.stdout.strip()) == src:
        data = subprocess.run(["git", "-C", src, "archive", "--format=tar", "HEAD", "--"]
                              + present, stdout=subprocess.PIPE, check=True).stdout
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(dest)
    else:
        for p in present:
            s, d = os.path.join(src, p), os.path.join(dest, p)
            os.makedirs(os.path.dirname(d), exist_ok=True)
            if os.path.isdir(s):
                shutil.copytree(s, d)
            else:
                shutil.copy2(s, d)
    missing = [p for p in ("meson.build", "lib", "include") if
               not os.path.exists(os.path.join(dest, p))]
    if missing:
        sys.exit("dist-c-sources: %s missing from %s" % (", ".join(missing), src))


if __name__ == "__main__":
    main()
