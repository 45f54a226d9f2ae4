#!/usr/bin/env python3
"""Run pytest on the Python package for meson test.

Usage: run-pytest.py --lib LIBSIMLSH [--dedup SIMLSH_DEDUP] [--version V]
                     -- PYTEST_ARGS...

Sets up the environment the tests expect (the library of this build in
SIMLSH_LIBRARY, the package's sources first on sys.path, the tool to compare
with in SIMLSH_DEDUP) and maps pytest's exit statuses to meson's:
  - pytest missing, or every test skipped: 77 (meson reports SKIP);
  - no test collected (exit 5: a wrong path, or all deselected): 1, with a
    message, since a suite that runs nothing must not look green;
  - otherwise pytest's status.
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_ROOT = os.path.dirname(HERE)
SOURCE_ROOT = os.path.dirname(PKG_ROOT)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--dedup", default="")
    ap.add_argument("--version", default="")
    ap.add_argument("pytest_args", nargs="*")
    args = ap.parse_args()

    os.environ["SIMLSH_LIBRARY"] = os.path.abspath(args.lib)
    if args.dedup:
        os.environ["SIMLSH_DEDUP"] = os.path.abspath(args.dedup)
    if args.version:
        os.environ["SIMLSH_PROJECT_VERSION"] = args.version
    os.environ.setdefault("SIMLSH_SOURCE_ROOT", SOURCE_ROOT)
    # The sources, not an installed copy, are what is tested; subprocesses
    # (the example, Dask workers) get the same path.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [PKG_ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    sys.path.insert(0, PKG_ROOT)
    # Nothing written into the source tree: no __pycache__, no .pytest_cache.
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    sys.dont_write_bytecode = True

    try:
        import pytest
    except ImportError:
        print("run-pytest: pytest is not installed for %s (Debian: python3-pytest)"
              % sys.executable)
        return 77

    class Outcomes:
        def __init__(self):
            self.passed = self.skipped = self.failed = 0

        def pytest_runtest_logreport(self, report):
            if report.when == "call" and report.passed:
                self.passed += 1
            elif report.skipped:
                self.skipped += 1
            elif report.failed:
                self.failed += 1

    out = Outcomes()
    rc = pytest.main(["-p", "no:cacheprovider", "-q", "-rs"] + args.pytest_args,
                     plugins=[out])
    if rc == 5:
        print("run-pytest: no tests were collected from %s: wrong path or all deselected"
              % " ".join(args.pytest_args))
        return 1
    if rc == 0 and out.passed == 0 and out.skipped > 0:
        return 77
    return int(rc)


if __name__ == "__main__":
    sys.exit(main())
