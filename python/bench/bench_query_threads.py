#!/usr/bin/env python3
"""Queries on one shared Index from 1 and from 2 threads (issue 28): the
read lock lets queries run concurrently, the library working with the GIL
released. Prints one JSON object: seconds for the same queries done by one
thread and split over two, and their ratio, per call style.

    SIMLSH_LIBRARY=build/lib/libsimlsh.so.1 PYTHONPATH=python \\
        python3 python/bench/bench_query_threads.py [--docs N] [--queries Q]
"""

import argparse
import json
import random
import threading
import time

import simlsh


def timed(fn, parts, threads):
    chunks = [parts[i::threads] for i in range(threads)]
    ts = [threading.Thread(target=fn, args=(c,)) for c in chunks]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=20000)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--threshold", type=float, default=0.5)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rng = random.Random(28)
    vocab = ["w%d" % i for i in range(3000)]
    texts = [" ".join(rng.choice(vocab) for _ in range(60)) for _ in range(args.docs)]
    p = simlsh.Params(unit="word", k=1, num_perm=128, threshold=args.threshold)
    values = simlsh.sign_batch(texts, p)
    ix = simlsh.Index(p)
    ix.insert_batch(list(range(args.docs)), values)
    qs = [simlsh.Signature.from_values(p, values[rng.randrange(args.docs)])
          for _ in range(args.queries)]
    batches = [qs[i:i + 50] for i in range(0, len(qs), 50)]

    def one_by_one(chunk):
        for q in chunk:
            ix.query(q)

    def in_batches(chunk):
        for b in chunk:
            ix.query_batch(b)

    out = {"docs": args.docs, "queries": args.queries, "threshold": args.threshold}
    for name, fn, parts in (("query", one_by_one, qs), ("query_batch", in_batches, batches)):
        t1 = min(timed(fn, parts, 1) for _ in range(args.repeat))
        t2 = min(timed(fn, parts, 2) for _ in range(args.repeat))
        out[name] = {"1_thread_s": round(t1, 4), "2_threads_s": round(t2, 4),
                     "ratio": round(t2 / t1, 3)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
