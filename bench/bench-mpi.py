#!/usr/bin/env python3
"""simlsh-bench-mpi: simlsh-dedup-mpi on a generated corpus, per rank count.

Usage: bench-mpi.py --mpirun PATH --dedup-mpi PATH --dedup PATH --bench-e2e PATH
                    [--mb N] [--ranks 1,2,4] [--threads T] [--output pairs] [--repeat R]

The corpus is the one simlsh-bench-e2e writes (seeded 2 KiB documents,
one per line, with planted near-duplicates); simlsh-bench-e2e also runs
simlsh-dedup on it with T threads, the single-process reference. Then for
each rank count N: `mpirun -np N simlsh-dedup-mpi -j T --lines CORPUS` with
--stats, and one JSON object per line:

  ranks, threads, seconds (wall, mpirun included), mb_per_s (total) and
  mb_per_s_per_rank, peak_rss_mb per rank and its largest value over the
  single-process figure, bytes_exchanged (all ranks, to other ranks),
  phases (seconds per phase, per rank), identical (the output is the
  single-process output byte for byte).

With --repeat R every rank count runs R times, the counts in turn (so a
disturbance of the machine falls on all of them alike); a row gives the
median run (by seconds) and "runs", every run's seconds.

A last line summarises against the issue's targets: at 4 ranks the
largest rank's peak RSS <= 0.35 x the single process; at 2 ranks the
throughput >= 1.7 x one rank (both with T threads per rank). The figures
mean something only on a machine with at least N x T free cores.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time


def run_single(dedup, corpus, threads, out_path, output):
    t0 = time.monotonic()
    with open(out_path, "wb") as out:
        p = subprocess.Popen([dedup, "-q", "-j", str(threads), "--lines", corpus, "--output",
                              output], stdout=out)
        _, status, ru = os.wait4(p.pid, 0)
    return time.monotonic() - t0, os.waitstatus_to_exitcode(status), ru.ru_maxrss / 1024.0


def run_mpi(a, env, work, corpus, size, single, ref_out, n):
    """One run at n ranks: its row, or None (printed) when it failed."""
    out = os.path.join(work, "mpi-%d.out" % n)
    st = os.path.join(work, "mpi-%d.json" % n)
    t0 = time.monotonic()
    # Open MPI binds each rank to one core by default (np <= 2), which
    # would put a rank's threads on that core: leave it to the kernel.
    q = subprocess.run([a.mpirun, "--oversubscribe", "--bind-to", "none", "-np", str(n),
                        a.dedup_mpi, "-q",
                        "-j", str(a.threads), "--lines", corpus, "--output", a.output,
                        "-o", out, "--stats", st], env=env, capture_output=True,
                       text=True)
    secs = time.monotonic() - t0
    if q.returncode != 0:
        print(json.dumps({"ranks": n, "exit": q.returncode,
                          "stderr": q.stderr[-1000:]}), flush=True)
        return None
    s = json.load(open(st))
    rss = [r["peak_memory_bytes"] / 2**20 for r in s["per_rank"]]
    with open(out, "rb") as f1, open(ref_out, "rb") as f2:
        identical = f1.read() == f2.read()
    return {"ranks": n, "threads": a.threads, "seconds": round(secs, 3),
            "run_seconds": s["seconds"], "mb_per_s": round(size / 1e6 / secs, 2),
            "mb_per_s_per_rank": round(size / 1e6 / secs / n, 2),
            "peak_rss_mb": [round(x, 1) for x in rss],
            "max_rss_over_single": round(max(rss) / single["peak_rss_mb"], 3),
            "bytes_exchanged": s["bytes_exchanged"],
            "phases": [r["phases"] for r in s["per_rank"]],
            "identical": identical}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--dedup-mpi", required=True)
    ap.add_argument("--dedup", required=True)
    ap.add_argument("--bench-e2e", required=True)
    ap.add_argument("--mb", type=int, default=1024)
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--output", default="pairs")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--tmpdir", default=os.environ.get("TMPDIR", "/tmp"))
    a = ap.parse_args()
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")

    # The corpus: simlsh-bench-e2e writes it and keeps it (--keep).
    p = subprocess.run([a.bench_e2e, "--dedup", a.dedup, "--mb", str(a.mb), "--threads",
                        str(a.threads), "--tmpdir", a.tmpdir, "--keep"],
                       capture_output=True, text=True)
    m = re.search(r"kept (\S+)", p.stderr)
    if not m:
        sys.exit("simlsh-bench-mpi: simlsh-bench-e2e failed: " + p.stderr[-2000:])
    work = m.group(1)
    corpus = os.path.join(work, "corpus.txt")
    size = os.path.getsize(corpus)
    try:
        ref_out = os.path.join(work, "single.out")
        secs, status, rss = run_single(a.dedup, corpus, a.threads, ref_out, a.output)
        single = {"program": "simlsh-dedup", "threads": a.threads, "corpus_bytes": size,
                  "seconds": round(secs, 3), "mb_per_s": round(size / 1e6 / secs, 2),
                  "peak_rss_mb": round(rss, 1), "exit": status}
        print(json.dumps(single), flush=True)
        results = {}
        runs = {}
        counts = [int(x) for x in a.ranks.split(",")]
        for _ in range(max(1, a.repeat)):
            for n in counts:
                row = run_mpi(a, env, work, corpus, size, single, ref_out, n)
                if row is not None:
                    runs.setdefault(n, []).append(row)
        for n in counts:
            if n not in runs:
                continue
            rows = sorted(runs[n], key=lambda r: r["seconds"])
            row = dict(rows[(len(rows) - 1) // 2])
            if len(rows) > 1:
                row["runs"] = [r["seconds"] for r in runs[n]]
            results[n] = row
            print(json.dumps(row), flush=True)
        summary = {"summary": True}
        if 4 in results:
            summary["rss_4_ranks_over_single"] = results[4]["max_rss_over_single"]
            summary["rss_target_0_35_met"] = results[4]["max_rss_over_single"] <= 0.35
        if 1 in results and 2 in results:
            speedup = results[2]["mb_per_s"] / results[1]["mb_per_s"]
            summary["speedup_2_over_1"] = round(speedup, 3)
            summary["speedup_target_1_7_met"] = speedup >= 1.7
        summary["cores"] = os.cpu_count()
        print(json.dumps(summary), flush=True)
        return 0 if all(r["identical"] for rs in runs.values() for r in rs) else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
