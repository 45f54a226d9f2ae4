#!/usr/bin/env python3
"""The public header under clang++ -Weverything -Werror (issue 10 item 5):
no reserved identifiers (names with "__" are reserved in C++), no other
warning, in every C++ standard from C++11. SKIP without clang++.

Usage: test-header-weverything.py INCLUDE_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
include = sys.argv[1]
clangxx = shutil.which("clang++")
if not clangxx:
    print("skip: no clang++ on PATH")
    sys.exit(SKIP)

# Only C++98 constructs here, so every warning -Weverything gives is the
# header's.
SOURCE = """#include <simlsh.h>
#include <simlsh.h>
int main() { return simlsh_strerror(SIMLSH_EINVAL)[0] == 'i' && SIMLSH_EIO == -12 ? 0 : 1; }
"""
with tempfile.TemporaryDirectory() as tmp:
    src = os.path.join(tmp, "h.cpp")
    with open(src, "w") as f:
        f.write(SOURCE)
    for std in ("c++11", "c++14", "c++17", "c++20"):
        cmd = [clangxx, "-std=" + std, "-Weverything", "-Werror",
               "-fsyntax-only", "-I", include, src]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if proc.returncode != 0:
            sys.stdout.write(proc.stdout.decode(errors="replace"))
            sys.exit("FAIL: %s" % " ".join(cmd))
        print("ok", std)
