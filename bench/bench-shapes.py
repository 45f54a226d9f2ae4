#!/usr/bin/env python3
"""simlsh-dedup on planted shapes of the same size (issue 27): one JSON
object with, for each shape, the wall time, CPU time, peak RSS, the tool's
phases, verification and grouping counters (bucket visits, pairs rejected
from samples) and a check of its clusters against the planted groups; and
the ratios of each shape to the random one.

  bench-shapes.py --dedup PATH [--docs N] [--words W] [--threads J]
                  [--shapes random,heavy,template,near-template,copies]
                  [--repeat R]
                  [--timeout S] [--tmpdir DIR] [--verify MODE] [--keep]
                  [--args "MORE OPTIONS"] [--mpi N [--mpirun PATH]]

With --mpi N, PATH is simlsh-dedup-mpi, run on N ranks by mpirun (peak
RSS is then that of the largest process of the job; phases are rank
0's).

Shapes (bench/gen-shapes.py writes them, one document per line):
  random    N unrelated documents;
  heavy     half of them in planted groups of power-law sizes (one of N/4
            copies, then N/60, N/600, N/6000), 1-3 words changed each;
  template  every document one template with 12 % of its words replaced
            (pairwise Jaccard about 0.6: no pair at the threshold);
  near-template  the same with 7 % replaced (pairwise Jaccard about 0.7,
            just under the threshold: exact verification is quadratic);
  copies    N copies of one text.
The planted groups are the expected clusters (none for random and
template); "clusters_ok" says whether the tool's --output clusters is
exactly them (null for near-template, where some pairs reach the
threshold by chance). With --repeat R each shape runs R times in turn and the
medians are reported. A run past --timeout seconds is killed and reported
as such.
"""
import argparse
import shlex
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NO_TRUTH = {"near-template"}


def measured(argv, timeout):
    """Wall and CPU seconds, peak RSS, exit status and output of one run,
    with its own rusage (os.wait4); None past the timeout."""
    t0 = time.monotonic()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL)
        deadline = t0 + timeout
        while True:
            wpid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if wpid == proc.pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                os.wait4(proc.pid, 0)
                return None
            time.sleep(0.005)
        wall = time.monotonic() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read()
    return {"wall_seconds": round(wall, 4), "cpu_seconds": round(ru.ru_utime + ru.ru_stime, 4),
            "peak_rss_mb": round(ru.ru_maxrss / 1024.0, 1), "exit_status": proc.returncode,
            "stdout": text}


def groups_of(text):
    return sorted(tuple(sorted(int(x) for x in line.split(b"\t")))
                  for line in text.splitlines() if line)


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dedup", required=True)
    ap.add_argument("--docs", type=int, default=60000)
    ap.add_argument("--words", type=int, default=300)
    ap.add_argument("--threads", default="2")
    ap.add_argument("--shapes", default="random,heavy,template")
    ap.add_argument("--verify", default="exact")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--tmpdir")
    ap.add_argument("--keep", action="store_true", help="keep the generated corpora")
    ap.add_argument("--mpi", type=int, default=0, help="ranks: --dedup is simlsh-dedup-mpi")
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--args", default="",
                    help="more simlsh-dedup options for every run, e.g."
                         " '--giant-buckets 16 --giant-cost 0'")
    a = ap.parse_args()
    shapes = a.shapes.split(",")
    tmp = tempfile.mkdtemp(prefix="bench-shapes-", dir=a.tmpdir)
    result = {"benchmark": "shapes", "docs": a.docs, "words": a.words, "threads": a.threads,
              "args": a.args, "ranks": a.mpi,
              "verify": a.verify, "repeat": a.repeat, "shapes": {}}
    try:
        corpora = {}
        for s in shapes:
            lines, truth = os.path.join(tmp, s + ".lines"), os.path.join(tmp, s + ".truth")
            subprocess.run([sys.executable, os.path.join(HERE, "gen-shapes.py"), s, lines,
                            "--docs", str(a.docs), "--words", str(a.words), "--truth", truth],
                           check=True)
            with open(truth, "rb") as f:
                want = groups_of(f.read())
            corpora[s] = (lines, want, os.path.getsize(lines))
        runs = {s: [] for s in shapes}
        for _ in range(a.repeat):
            for s in shapes:
                lines = corpora[s][0]
                stats = os.path.join(tmp, s + ".json")
                launch = ([a.mpirun, "--oversubscribe", "--allow-run-as-root", "-n",
                           str(a.mpi)] if a.mpi > 0 else [])
                r = measured(launch + [a.dedup, "--lines", lines, "--quiet", "-j", a.threads,
                                       "--verify", a.verify, "--stats", stats]
                             + shlex.split(a.args), a.timeout)
                if r is None:
                    runs[s].append({"timeout": a.timeout})
                    continue
                with open(stats) as f:
                    st = json.load(f)
                if "per_rank" in st:  # simlsh-dedup-mpi: wall seconds of each phase
                    r["phases"] = st["per_rank"][0]["phases"]
                    r["peak_rss_mb_per_rank"] = [round(k["peak_memory_bytes"] / 2**20, 1)
                                                 for k in st["per_rank"]]
                else:
                    r["phases"] = {k: v["cpu_seconds"] for k, v in st["phases"].items()}
                r["verification"] = st.get("verification", {})
                # bucket_visits, rejected_from_sample, buckets set aside
                r["grouping"] = st.get("grouping", {})
                got = groups_of(r.pop("stdout"))
                # (near-template: pairs at the threshold by chance, no truth)
                r["clusters_ok"] = None if s in NO_TRUTH else got == corpora[s][1]
                runs[s].append(r)
        for s in shapes:
            done = [r for r in runs[s] if "timeout" not in r]
            if not done:
                result["shapes"][s] = {"timeout": a.timeout}
                continue
            best = sorted(done, key=lambda r: r["wall_seconds"])[len(done) // 2]
            best = dict(best)
            best["bytes"] = corpora[s][2]
            best["planted_groups"] = len(corpora[s][1])
            best["wall_seconds_all"] = [r["wall_seconds"] for r in done]
            result["shapes"][s] = best
        base = result["shapes"].get("random")
        if base and "timeout" not in base:
            ratios = {}
            for s, r in result["shapes"].items():
                if s == "random" or "timeout" in r:
                    continue
                ratios[s] = {"time": round(r["wall_seconds"] / base["wall_seconds"], 3),
                             "cpu": round(r["cpu_seconds"] / base["cpu_seconds"], 3),
                             "peak_rss": round(r["peak_rss_mb"] / base["peak_rss_mb"], 3)}
            result["ratios_to_random"] = ratios
    finally:
        if a.keep:
            result["corpora"] = tmp
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
