#!/usr/bin/env python3
"""Compare the built shared library's ABI with the stored baseline.

usage: check-abi.py ABIDIFF BASELINE.abi LIBRARY.so HEADERS_DIR

abidiff's exit status is a bit mask (libabigail manual): 1 tool error,
2 usage error, 4 ABI change, 8 incompatible ABI change. abidiff calls a
changed return or parameter type only a "change" (4), so the summary lines
are read too: added functions are allowed in a minor release; removed or
changed functions or variables fail.
"""
import re
import subprocess
import sys

abidiff, baseline, lib, headers = sys.argv[1:5]
p = subprocess.run([abidiff, "--headers-dir2", headers, baseline, lib],
                   capture_output=True, text=True)
print(p.stdout, end="")
print(p.stderr, end="", file=sys.stderr)
if p.returncode & (1 | 2):
    print("abidiff could not compare (exit %d)" % p.returncode)
    sys.exit(1)
bad = []
for kind, removed, changed in re.findall(
        r"(Functions|Variables) changes summary: (\d+) Removed(?: \([^)]*\))?, (\d+) Changed",
        p.stdout):
    if int(removed) or int(changed):
        bad.append("%s: %s removed, %s changed" % (kind, removed, changed))
if p.returncode & 8 or bad:
    print("INCOMPATIBLE ABI CHANGE against %s (%s): see docs/abi.md"
          % (baseline, "; ".join(bad) or "abidiff exit %d" % p.returncode))
    sys.exit(1)
print("ABI compatible with %s%s" % (baseline, " (with additions)" if p.returncode & 4 else ""))
sys.exit(0)
