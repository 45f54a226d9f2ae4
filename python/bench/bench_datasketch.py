#!/usr/bin/env python3
"""simlsh.datasketch against datasketch, as a datasketch user runs them
(issue 28): N texts of 20-200 words, one MinHash each made by one
``update`` per token (the datasketch habit) or one ``update_batch`` per
text, then MinHashLSH at --threshold: insert every text, query every text.
Prints one JSON object: per implementation the wall and CPU seconds of
signing and of insert + query, the candidates, and recall against exact
Jaccard; then the end-to-end speed-up (datasketch time / simlsh time) in
wall and in CPU seconds.

The texts draw words from a vocabulary of 20,000; a tenth are edited
copies of an earlier text (one word in 30 replaced). Pairs at exact
Jaccard >= threshold are found among the copy families and among both
implementations' candidates: two unrelated texts share too few words to
come near 0.8.

datasketch is not a Debian package: install it (pip install datasketch) or
point --datasketch-path at a directory that holds its source (the
``datasketch`` package folder; scipy is needed unless params are given,
and here they are). Without it only simlsh runs.

    SIMLSH_LIBRARY=build/lib/libsimlsh.so.1 PYTHONPATH=python \\
        python3 python/bench/bench_datasketch.py [--texts N] [--seed S]
        [--style update|update_batch] [--scheme classic|oph|datasketch]
        [--datasketch-path DIR] [--only simlsh|datasketch] [--seeds N]

--seeds N runs seeds S .. S+N-1 and adds "seeds": each seed's recall for
both implementations, and the mean of their difference (simlsh less
datasketch) with its standard error: the two hash families give each
pair its own luck, so one seed's recalls differ by chance (about 0.002
at 100,000 texts), and only the mean over seeds says whether one finds
more than the other.
"""

import argparse
import json
import random
import sys
import time


def corpus(n, seed):
    rng = random.Random(seed)
    vocab = ["w%d" % i for i in range(20000)]
    docs, family = [], []
    for i in range(n):
        if i and rng.random() < 0.1:
            j = rng.randrange(i)
            d = list(docs[j])
            for _ in range(max(1, len(d) // 30)):
                d[rng.randrange(len(d))] = rng.choice(vocab)
            docs.append(d)
            family.append(family[j])
        else:
            docs.append([rng.choice(vocab) for _ in range(rng.randint(20, 200))])
            family.append(i)
    return docs, family


def clock():
    return time.perf_counter(), time.process_time()


def since(t):
    w, c = clock()
    return w - t[0], c - t[1]


def run(MinHash, MinHashLSH, docs, style, threshold, b, r, kw):
    t = clock()
    ms = []
    if style == "update":
        for d in docs:
            m = MinHash(num_perm=128, **kw)
            for w in d:
                m.update(w.encode("utf8"))
            ms.append(m)
    else:
        for d in docs:
            m = MinHash(num_perm=128, **kw)
            m.update_batch([w.encode("utf8") for w in d])
            ms.append(m)
    sign = since(t)
    t = clock()
    lsh = MinHashLSH(threshold=threshold, num_perm=128, params=(b, r))
    for i, m in enumerate(ms):
        lsh.insert(i, m)
    found = set()
    for i, m in enumerate(ms):
        for j in lsh.query(m):
            if j != i:
                found.add((min(i, j), max(i, j)))
    return sign, since(t), found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--texts", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=28)
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--style", choices=("update", "update_batch"), default="update")
    ap.add_argument("--scheme", default="classic")
    ap.add_argument("--datasketch-path")
    ap.add_argument("--only", choices=("simlsh", "datasketch"))
    ap.add_argument("--seeds", type=int, default=1)
    args = ap.parse_args()
    if args.datasketch_path:
        sys.path.insert(0, args.datasketch_path)
    if args.seeds > 1:
        runs = [one(args, args.seed + k) for k in range(args.seeds)]
        out = runs[0]
        diffs = [r["simlsh.datasketch"]["recall"] - r["datasketch"]["recall"]
                 for r in runs if "datasketch" in r and "simlsh.datasketch" in r]
        out["seeds"] = {
            "seeds": [args.seed + k for k in range(args.seeds)],
            "recall_simlsh": [r["simlsh.datasketch"]["recall"] for r in runs
                              if "simlsh.datasketch" in r],
            "recall_datasketch": [r["datasketch"]["recall"] for r in runs if "datasketch" in r],
            "speedup_wall": [r.get("speedup_wall") for r in runs],
        }
        if len(diffs) > 1:
            m = sum(diffs) / len(diffs)
            var = sum((d - m) ** 2 for d in diffs) / (len(diffs) - 1)
            out["seeds"]["recall_difference_mean"] = round(m, 5)
            out["seeds"]["recall_difference_se"] = round((var / len(diffs)) ** 0.5, 5)
        print(json.dumps(out))
        return
    print(json.dumps(one(args, args.seed)))


def one(args, seed):
    import simlsh.datasketch as S
    impls = []
    if args.only != "datasketch":
        impls.append(("simlsh.datasketch", S.MinHash, S.MinHashLSH, {"scheme": args.scheme}))
    if args.only != "simlsh":
        try:
            from datasketch.lsh import MinHashLSH as DL
            from datasketch.minhash import MinHash as DM
            impls.append(("datasketch", DM, DL, {}))
        except ImportError as e:
            print("datasketch not importable (%s): simlsh only" % e, file=sys.stderr)
    docs, family = corpus(args.texts, seed)
    probe = S.MinHashLSH(threshold=args.threshold, num_perm=128)
    b, r = probe.b, probe.r
    out = {"texts": args.texts, "seed": seed, "style": args.style,
           "scheme": args.scheme, "threshold": args.threshold, "b": b, "r": r}
    found = {}
    for name, M, L, kw in impls:
        sign, iq, f = run(M, L, docs, args.style, args.threshold, b, r, kw)
        found[name] = f
        out[name] = {"sign_s": round(sign[0], 3), "sign_cpu_s": round(sign[1], 3),
                     "insert_query_s": round(iq[0], 3), "insert_query_cpu_s": round(iq[1], 3),
                     "total_s": round(sign[0] + iq[0], 3),
                     "total_cpu_s": round(sign[1] + iq[1], 3), "candidates": len(f)}
    sets = [set(d) for d in docs]
    members = {}
    for i, fam in enumerate(family):
        members.setdefault(fam, []).append(i)
    pairs = set().union(*found.values()) if found else set()
    for ids in members.values():
        pairs.update((x, y) for k, x in enumerate(ids) for y in ids[k + 1:])
    truth = {(i, j) for i, j in pairs
             if len(sets[i] & sets[j]) >= args.threshold * len(sets[i] | sets[j])}
    out["true_pairs"] = len(truth)
    for name, f in found.items():
        out[name]["recall"] = round(len(f & truth) / max(1, len(truth)), 4)
    if len(found) == 2:
        s, d = out["simlsh.datasketch"], out["datasketch"]
        out["speedup_wall"] = round(d["total_s"] / s["total_s"], 1)
        out["speedup_cpu"] = round(d["total_cpu_s"] / s["total_cpu_s"], 1)
    return out


if __name__ == "__main__":
    main()
