#!/usr/bin/env python3
"""Consumer test (c): examples/pipeline.py through ctypes prints exactly
what the C example prints.

Usage: test-ctypes.py PIPELINE_EXE PIPELINE_PY LIBSIMLSH_SO
"""
import os
import subprocess
import sys

exe, script, lib = sys.argv[1:4]
c = subprocess.run([exe], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
py = subprocess.run([sys.executable, script, os.path.abspath(lib)], stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE)
for name, p in (("C", c), ("ctypes", py)):
    print("--- %s (exit %d):\n%s%s" % (name, p.returncode, p.stdout.decode(),
                                       p.stderr.decode()), end="")
if c.returncode != 0 or py.returncode != 0:
    sys.exit("FAIL: an example failed")
if c.stdout != py.stdout:
    sys.exit("FAIL: the ctypes output differs from the C output")
print("ok: identical output")
