"""Helpers shared by the consumer tests (imported from the same directory)."""
import os
import shutil
import subprocess
import sys

SKIP = 77  # meson's exit code for a skipped test


def run(cmd, env=None, cwd=None, timeout=300):
    """Run cmd; on failure print everything and exit 1."""
    print("+", " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=timeout)
    out = proc.stdout.decode(errors="replace")
    if proc.returncode != 0:
        sys.stdout.write(out)
        sys.exit("FAIL: exit %d: %s" % (proc.returncode, " ".join(cmd)))
    return out


def skip_if_sanitized(sanitize):
    # Objects built with sanitizers need the same flags at link time, which
    # pkg-config does not (and should not) carry.
    if sanitize not in ("", "none"):
        print("skip: b_sanitize=%s" % sanitize)
        sys.exit(SKIP)


def compiler():
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        print("skip: no C compiler on PATH")
        sys.exit(SKIP)
    return cc.split()
