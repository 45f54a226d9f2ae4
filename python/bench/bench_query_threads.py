#!/usr/bin/env python3
"""Queries on one shared Index from 1 and from 2 threads (issue 28): the
index's read lock lets queries run concurrently, the library working with
the GIL released. The same queries are done by one thread and split over
two; each repeat times both, one after the other, and the ratio (2-thread
wall time / 1-thread wall time) is taken per repeat, so load from other
processes hits both sides alike. Prints one JSON object with, per call
style, the median ratio, the median wall and CPU (process) seconds, all
ratios, and the 1-thread CPU time per query; for query(), arrays and
batch_values, the share of their CPU time beyond the bare call (held with
the GIL). CPU seconds near the wall seconds of 2 threads mean that only one
core was busy: the GIL, or a machine without a free second core.

Call styles:
  query        Index.query, one signature per call;
  query_batch  Index.query_batch, --batch signatures per call;
  batch_values Index.query_batch on a values matrix of --batch rows (one
               library call, simlsh_index_query_values; one key list per
               query is still built in Python);
  arrays       Index.query_arrays on a values matrix of --batch rows: numpy
               offsets and keys back, O(1) Python work per call;
  bare         the library call alone (simlsh_index_query_ids through
               ctypes, no wrapper, no lock): the most one-by-one queries
               can scale in CPython, where the GIL is taken back after
               every call;
  bare_values  simlsh_index_query_values alone, --batch rows per call (no
               wrapper, no lock, the rows left in the results): the most
               arrays can scale;
  machine      hashlib.sha256 of 256 kB per call, no simlsh at all and the
               GIL released throughout: what the machine gives two threads
               at the moment (about 0.5 with a free second core, 1.0
               without one), to read the other ratios against.

    SIMLSH_LIBRARY=build/lib/libsimlsh.so.1 PYTHONPATH=python \\
        python3 python/bench/bench_query_threads.py [--docs N] [--queries Q]
        [--threshold T] [--words W] [--vocab V] [--batch B] [--rounds N]
        [--repeat R] [--only STYLE,...]

--words and --vocab set the documents (W words from a vocabulary of V):
a smaller vocabulary gives more candidates per query, so more work in the
library per call.
"""

import argparse
import ctypes
import hashlib
import json
import random
import statistics
import threading
import time

import simlsh
from simlsh._lib import lib


def timed(fn, parts, threads, rounds):
    chunks = [parts[i::threads] * rounds for i in range(threads)]
    ts = [threading.Thread(target=fn, args=(c,)) for c in chunks]
    c0, t0 = time.process_time(), time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return time.perf_counter() - t0, time.process_time() - c0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=20000)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--threshold", type=float, default=0.5)
    ap.add_argument("--words", type=int, default=60)
    ap.add_argument("--vocab", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=10,
                    help="times each thread goes through its share of the queries")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", default="",
                    help="comma-separated call styles to time (default: all)")
    args = ap.parse_args()
    rng = random.Random(28)
    vocab = ["w%d" % i for i in range(args.vocab)]
    texts = [" ".join(rng.choice(vocab) for _ in range(args.words)) for _ in range(args.docs)]
    p = simlsh.Params(unit="word", k=1, num_perm=128, threshold=args.threshold)
    values = simlsh.sign_batch(texts, p)
    ix = simlsh.Index(p)
    ix.insert_batch(list(range(args.docs)), values)
    picks = [rng.randrange(args.docs) for _ in range(args.queries)]
    qs = [simlsh.Signature.from_values(p, values[i]) for i in picks]
    batches = [qs[i:i + args.batch] for i in range(0, len(qs), args.batch)]
    qv = values[picks]
    vbatches = [qv[i:i + args.batch] for i in range(0, len(qs), args.batch)]

    def one_by_one(chunk):
        for q in chunk:
            ix.query(q)

    def in_batches(chunk):
        for b in chunk:
            ix.query_batch(b)

    def values_batches(chunk):
        for b in chunk:
            ix.query_batch(b)

    def arrays(chunk):
        for b in chunk:
            ix.query_arrays(b)

    def bare_values(chunk):
        res = simlsh._core._Results()
        f, h = simlsh._core._query_values_c, ix._h
        for b in chunk:
            f(res._h, h, b.ctypes.data, len(b), b.shape[1], b.shape[1], 1, 0.0)

    blob = b"x" * (256 << 10)

    def machine(chunk):
        for _ in chunk:
            hashlib.sha256(blob).digest()

    def bare(chunk):
        cap = 1 << 16
        buf, cnt = (ctypes.c_uint64 * cap)(), ctypes.c_size_t()
        pcnt, h, f = ctypes.byref(cnt), ix._h, lib.simlsh_index_query_ids
        for q in chunk:
            f(buf, cap, pcnt, h, q._h, 1)

    out = {"docs": args.docs, "queries": args.queries, "threshold": args.threshold,
           "words": args.words, "vocab": args.vocab, "rounds": args.rounds,
           "repeat": args.repeat,
           "results_per_query": round(sum(len(ix.query(q)) for q in qs) / len(qs), 2)}
    styles = (("query", one_by_one, qs), ("query_batch", in_batches, batches),
              ("batch_values", values_batches, vbatches), ("arrays", arrays, vbatches),
              ("bare", bare, qs), ("bare_values", bare_values, vbatches),
              ("machine", machine, vbatches))
    for name, fn, parts in styles:
        if args.only and name not in args.only.split(","):
            continue
        fn(parts)  # warm up
        runs = [(timed(fn, parts, 1, args.rounds), timed(fn, parts, 2, args.rounds))
                for _ in range(args.repeat)]
        ratios = [two[0] / one[0] for one, two in runs]
        med = statistics.median
        one_cpu = med(one[1] for one, _ in runs)
        out[name] = {"ratio": round(med(ratios), 3),
                     "cpu_us_per_query": round(one_cpu / (len(qs) * args.rounds) * 1e6, 2),
                     "1_thread_s": round(med(one[0] for one, _ in runs), 4),
                     "1_thread_cpu_s": round(med(one[1] for one, _ in runs), 4),
                     "2_threads_s": round(med(two[0] for _, two in runs), 4),
                     "2_threads_cpu_s": round(med(two[1] for _, two in runs), 4),
                     "ratios": sorted(round(r, 3) for r in ratios)}
    # what query() spends beyond the bare call: held with the GIL
    for wrapped, bare_call in (("query", "bare"), ("arrays", "bare_values"),
                               ("batch_values", "bare_values")):
        if wrapped in out and bare_call in out:
            out[wrapped]["gil_held_share"] = round(
                1 - out[bare_call]["cpu_us_per_query"] / out[wrapped]["cpu_us_per_query"], 3)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
