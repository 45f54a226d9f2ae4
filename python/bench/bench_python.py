#!/usr/bin/env python3
"""Documents per second of the Python package against C on the same corpus.

  sign    simlsh.sign_batch(threads=1) against sign-lines (C: one signature
          object, clear + add_text + values per line), signing time only;
  dedup   simlsh.dedup(lines, threads=T) against simlsh-dedup --lines FILE
          -j T --output keep, each timed whole (reading the file included;
          the tool's time includes starting the process).

Each figure is the best of --repeat runs, C and Python interleaved (the
machine may be busy), and
overhead_pct is (python time / C time - 1) * 100. Prints one JSON object.

Usage: bench_python.py --dedup SIMLSH_DEDUP --sign-lines SIGN_LINES
         [--docs N] [--doc-bytes B] [--threads 1,2] [--repeat R] [--tmpdir DIR]
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

import simlsh

WORDS = ("harbour council river signal garden ledger lantern meadow copper window "
         "market engine valley thunder pocket silver orchard anchor bridge candle "
         "forest winter summer basket castle mirror ticket rocket planet shadow").split()


def corpus(n, doc_bytes, seed=7):
    """n lines of about doc_bytes bytes; one in ten is an edited copy."""
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        if docs and rng.random() < 0.1:
            w = rng.choice(docs).split(b" ")
            for _ in range(3):
                w[rng.randrange(len(w))] = rng.choice(WORDS).encode()
            docs.append(b" ".join(w))
            continue
        words, size = [], 0
        while size < doc_bytes:
            w = rng.choice(WORDS)
            words.append(w)
            size += len(w) + 1
        docs.append(" ".join(words).encode())
    return docs


def best_pair(c_fn, py_fn, repeat):
    """Best times of two runs, interleaved so that both see the same load."""
    c_times, py_times = [], []
    for _ in range(repeat):
        for fn, times in ((c_fn, c_times), (py_fn, py_times)):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return min(c_times), min(py_times)


def read_lines(path):
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dedup", required=True)
    ap.add_argument("--sign-lines", required=True)
    ap.add_argument("--docs", type=int, default=100000)
    ap.add_argument("--doc-bytes", type=int, default=300)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--tmpdir", default=None)
    args = ap.parse_args()

    docs = corpus(args.docs, args.doc_bytes)
    out = {"library": simlsh.version(), "python": sys.version.split()[0],
           "docs": len(docs), "bytes": sum(len(d) + 1 for d in docs), "results": []}
    with tempfile.TemporaryDirectory(dir=args.tmpdir) as tmp:
        path = os.path.join(tmp, "docs.txt")
        with open(path, "wb") as f:
            f.write(b"\n".join(docs) + b"\n")

        params = simlsh.dedup_params()
        c_runs = []

        def c_sign():
            r = subprocess.run([args.sign_lines, path], stdout=subprocess.PIPE, check=True)
            c_runs.append(json.loads(r.stdout)["seconds"])

        _, py = best_pair(c_sign, lambda: simlsh.sign_batch(docs, params, threads=1),
                          args.repeat)
        c = min(c_runs)  # the signing loop's own time, without start and reading
        out["results"].append({
            "what": "sign", "threads": 1, "c_docs_per_s": round(len(docs) / c),
            "python_docs_per_s": round(len(docs) / py),
            "overhead_pct": round((py / c - 1) * 100, 1)})

        for t in [int(x) for x in args.threads.split(",")]:
            cmd = [args.dedup, "--quiet", "--lines", path, "-j", str(t), "--output", "keep",
                   "-o", os.devnull]
            keep_c = subprocess.run(cmd[:-2], stdout=subprocess.PIPE, check=True).stdout
            result = []

            def run_py():
                result[:] = [simlsh.dedup(read_lines(path), threads=t)]

            c, py = best_pair(lambda: subprocess.run(cmd, check=True), run_py, args.repeat)
            # the same answer, or the comparison means nothing
            keep_py = b"".join(b"%d\n" % (i + 1) for i in result[0].keep)
            assert keep_py == keep_c, "simlsh.dedup and simlsh-dedup disagree"
            out["results"].append({
                "what": "dedup", "threads": t, "c_docs_per_s": round(len(docs) / c),
                "python_docs_per_s": round(len(docs) / py),
                "overhead_pct": round((py / c - 1) * 100, 1)})
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
