#!/usr/bin/env python3
"""Consumer test: the installed tree as a user gets it (issue 10 item 5).

Usage: test-packaging.py MESON BUILD_ROOT B_SANITIZE

Stages `meson install --destdir`, then moves the staged tree somewhere
else, and checks that:
- the installed simlsh-dedup runs with no LD_LIBRARY_PATH, from the staged
  prefix and after the move (its rpath is relative to itself);
- its man page is installed (share/man/man1/simlsh-dedup.1);
- simlsh.pc gives libdir and includedir relative to ${prefix};
- a C++ program finds the library with CMake's find_package(simlsh) and
  links, then runs, against simlsh::simlsh and simlsh::simlsh_static;
  a version the package cannot satisfy is refused.
Parts whose tool (c++, cmake) is missing are reported and skipped.
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from consumer import SKIP, run, skip_if_sanitized  # noqa: E402

meson, build, sanitize = sys.argv[1:4]
skip_if_sanitized(sanitize)

PROGRAM = r"""
#include <simlsh.h>
#include <cstdio>
#include <cstring>

int main()
{
    simlsh_params *p = nullptr;
    simlsh_signature *a = nullptr, *b = nullptr;
    if (simlsh_params_new(&p, nullptr) != SIMLSH_OK || simlsh_signature_new(&a, p) != 0 ||
        simlsh_signature_new(&b, p) != 0)
        return 1;
    const char *x = "the quick brown fox jumps over the lazy dog";
    const char *y = "the quick brown fox jumped over the lazy dog";
    double j = 0;
    if (simlsh_signature_add_text(a, x, std::strlen(x)) != 0 ||
        simlsh_signature_add_text(b, y, std::strlen(y)) != 0 ||
        simlsh_signature_jaccard(&j, a, b) != 0)
        return 1;
    std::printf("simlsh %s estimate %.4f\n", simlsh_version_string(), j);
    simlsh_signature_free(a);
    simlsh_signature_free(b);
    simlsh_params_free(p);
    return 0;
}
"""

CMAKELISTS = r"""
cmake_minimum_required(VERSION 3.5)
project(simlsh_consumer CXX)
find_package(simlsh @WANT@ CONFIG REQUIRED)
add_executable(app_shared app.cpp)
target_link_libraries(app_shared PRIVATE simlsh::simlsh)
if(TARGET simlsh::simlsh_static)
  add_executable(app_static app.cpp)
  target_link_libraries(app_static PRIVATE simlsh::simlsh_static)
endif()
"""


def one(pattern, what):
    found = glob.glob(pattern, recursive=True)
    if len(found) != 1:
        sys.exit("FAIL: expected one %s, found %s" % (what, found))
    return found[0]


skipped = []
with tempfile.TemporaryDirectory(prefix="simlsh-pkg-") as tmp:
    dest = os.path.join(tmp, "dest")
    run([meson, "install", "-C", build, "--no-rebuild", "--destdir", dest, "--quiet"])
    env = dict(os.environ)
    env.pop("LD_LIBRARY_PATH", None)  # meson test points it at the build tree

    pc = one(os.path.join(dest, "**", "pkgconfig", "simlsh.pc"), "simlsh.pc")
    with open(pc) as f:
        pc_lines = f.read().splitlines()
    fields = dict(l.split("=", 1) for l in pc_lines if "=" in l)
    fields_version = next(l.split(":", 1)[1].strip() for l in pc_lines
                          if l.startswith("Version:"))
    for key in ("libdir", "includedir"):
        if not fields[key].startswith("${prefix}/"):
            sys.exit("FAIL: simlsh.pc %s=%s is not relative to ${prefix}" % (key, fields[key]))
    # the staged prefix: the directory that holds include/simlsh.h
    header = one(os.path.join(dest, "**", "include", "simlsh.h"), "simlsh.h")
    prefix = os.path.dirname(os.path.dirname(header))

    tools = glob.glob(os.path.join(prefix, "bin", "simlsh-dedup"))
    moved = os.path.join(tmp, "elsewhere")
    if tools:
        out = run([tools[0], "--version"], env=env)
        if not out.startswith("simlsh-dedup "):
            sys.exit("FAIL: installed simlsh-dedup --version: " + out)
        man = os.path.join(prefix, "share", "man", "man1", "simlsh-dedup.1")
        if not os.path.exists(man):
            sys.exit("FAIL: the man page is not installed at " + man)
        with open(man) as f:
            if not f.read().startswith(".TH SIMLSH\\-DEDUP 1"):
                sys.exit("FAIL: the installed man page has no .TH line")
    else:
        skipped.append("simlsh-dedup (not built: -Dtools=false)")

    # Everything after this uses the moved tree: nothing may point back.
    shutil.move(prefix, moved)
    shutil.rmtree(dest)
    if tools:
        out = run([os.path.join(moved, "bin", "simlsh-dedup"), "--version"], env=env)
        print("moved tree runs:", out.strip())

    cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    cmake = shutil.which("cmake")
    if not cxx or not cmake:
        skipped.append("CMake consumer (no %s)" % ("cmake" if not cmake else "C++ compiler"))
    else:
        src = os.path.join(tmp, "consumer")
        os.mkdir(src)
        with open(os.path.join(src, "app.cpp"), "w") as f:
            f.write(PROGRAM)
        version = fields_version
        major, minor = (int(x) for x in version.split(".")[:2])
        # docs/abi.md: minor releases only add API, so any version of the
        # same major up to this one is satisfied; a newer or another major
        # one is not
        wants = [("%d.0" % major, True), ("%d.%d" % (major, minor), True), ("", True),
                 ("%d.%d" % (major, minor + 1), False), ("%d.0" % (major + 1), False)]
        outputs = []
        for want, ok in wants:
            with open(os.path.join(src, "CMakeLists.txt"), "w") as f:
                f.write(CMAKELISTS.replace("@WANT@", want))
            bdir = os.path.join(tmp, "cmake-build-%s" % (want or "any"))
            proc = subprocess.run(
                [cmake, "-S", src, "-B", bdir, "-DCMAKE_PREFIX_PATH=" + moved,
                 "-DCMAKE_CXX_COMPILER=" + cxx.split()[0]],
                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
            log = proc.stdout.decode(errors="replace")
            if not ok:
                if proc.returncode == 0:
                    sys.exit("FAIL: find_package(simlsh %s) accepted version %s:\n%s"
                             % (want, version, log))
                continue
            if proc.returncode != 0:
                sys.exit("FAIL: cmake configure (find_package(simlsh %s)):\n%s" % (want, log))
            if outputs:
                continue  # configuring was the point; one build is enough
            run([cmake, "--build", bdir], env=env)
            # default_library decides what is installed, and the package
            # offers the targets of what is there (simlsh::simlsh is the
            # static library in a static-only install)
            has_shared = bool(glob.glob(os.path.join(moved, "**", "libsimlsh.so.*"),
                                        recursive=True))
            has_static = bool(glob.glob(os.path.join(moved, "**", "libsimlsh.a"),
                                        recursive=True))
            exes = ["app_shared"] + (["app_static"] if has_static else [])
            if os.path.exists(os.path.join(bdir, "app_static")) != has_static:
                sys.exit("FAIL: simlsh::simlsh_static offered without libsimlsh.a, "
                         "or missing with it")
            if not has_static:
                skipped.append("simlsh::simlsh_static (no libsimlsh.a installed)")
            for exe in exes:
                outputs.append(run([os.path.join(bdir, exe)], env=env))
            libs = subprocess.run(["ldd", os.path.join(bdir, "app_shared")],
                                  stdout=subprocess.PIPE, env=env).stdout.decode()
            if has_shared and moved not in libs:
                sys.exit("FAIL: app_shared does not use the installed library:\n" + libs)
            if not has_shared and "libsimlsh" in libs:
                sys.exit("FAIL: a static-only install linked a shared libsimlsh:\n" + libs)
            if has_static:
                libs = subprocess.run(["ldd", os.path.join(bdir, "app_static")],
                                      stdout=subprocess.PIPE, env=env).stdout.decode()
                if "libsimlsh" in libs:
                    sys.exit("FAIL: app_static uses a shared libsimlsh:\n" + libs)
        print("".join(outputs), end="")
        if len(set(outputs)) != 1 or not outputs[0].startswith("simlsh "):
            sys.exit("FAIL: the CMake consumers print different results")

if skipped:
    print("skipped:", "; ".join(skipped))
print("ok")
