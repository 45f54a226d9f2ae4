#!/usr/bin/env python3
"""Forest top-k and ensemble containment recall, simlsh.datasketch against
datasketch (issue 28): the texts of bench_datasketch.py (20-200 words from a
vocabulary of 20,000, a tenth edited copies of an earlier text), one
MinHash (num_perm 128) per text and library, then

- MinHashLSHForest: add every text, index(), query(m, k) for Q texts;
- MinHashLSHEnsemble(threshold, num_part): index every (key, m, size),
  query(m, size) for the same Q texts.

Truth is exact, on the word sets: an inverted index (word -> texts) whose
postings for a query's words, counted with np.bincount, give |Q & D| for
every D at once. A query never counts itself, in truth or in answers.

Forest recall is |answer & top-k| / |top-k|, top-k broken by id at equal
Jaccard; a random text has its exact top-k among texts that share a word or
two with it, with many ties, so also "tied" recall (an answer counts when
its Jaccard reaches the k-th best) and the recall of the neighbours at
Jaccard >= 0.5 (the edited copies: what a user looks for). Ensemble recall
and precision are against every D with |Q & D| / |Q| >= threshold.

A whole text as query has containment >= 0.5 only in its edited copies,
at Jaccard ~0.9: easy. --query-part F queries with a seeded random F of
the text's distinct words instead (not indexed; the text itself is then an
answer): containment 1 in its text at Jaccard F, what an ensemble is for.

Prints one JSON object: per library the wall and CPU seconds of signing,
forest build, forest queries, ensemble index and ensemble queries, and the
figures above averaged over the queries.

datasketch is not a Debian package: install it or point --datasketch-path
at a directory holding its ``datasketch`` folder (lshforest.py,
lshensemble.py and lshensemble_partition.py included) and, without scipy,
a ``scipy`` folder whose integrate.quad datasketch's ensemble can call.

    SIMLSH_LIBRARY=build/lib/libsimlsh.so.1 PYTHONPATH=python \\
        python3 python/bench/bench_datasketch_recall.py [--texts N]
        [--queries Q] [--seed S] [--k K] [--threshold T] [--num-part P]
        [--query-part F] [--style update|update_batch] [--datasketch-path DIR]
        [--only simlsh|datasketch]
"""

import argparse
import json
import os
import random
import resource
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_datasketch import clock, corpus, since  # noqa: E402


def exact(docs):
    """Word sets as int arrays, their sizes, and the inverted index
    (postings of word w: post[start[w]:start[w + 1]])."""
    sets = [np.unique(np.fromiter((int(w[1:]) for w in d), dtype=np.int64, count=len(d)))
            for d in docs]
    sizes = np.array([len(s) for s in sets], dtype=np.int64)
    words = np.concatenate(sets)
    owner = np.repeat(np.arange(len(docs), dtype=np.int64), sizes)
    order = np.argsort(words, kind="stable")
    post = owner[order]
    start = np.concatenate(([0], np.cumsum(np.bincount(words, minlength=20000))))
    return sets, sizes, post, start


def overlaps(words, sets, post, start):
    """|Q & D| for every D, Q the distinct word ids ``words``."""
    parts = [post[start[w]:start[w + 1]] for w in words]
    return np.bincount(np.concatenate(parts), minlength=len(sets))


def sign(MinHash, docs, style, kw):
    t = clock()
    ms = []
    for d in docs:
        m = MinHash(num_perm=128, **kw)
        if style == "update":
            for w in d:
                m.update(w.encode("utf8"))
        else:
            m.update_batch([w.encode("utf8") for w in d])
        m.is_empty()  # simlsh signs lazily: sign here, not in the first add
        ms.append(m)
    return ms, since(t)


def secs(t):
    return {"s": round(t[0], 3), "cpu_s": round(t[1], 3)}


def run(lib, ms, sizes, queries, qms, args):
    """``queries``: query text id -> its word ids; ``qms``: its MinHash.
    With --query-part 1 a query is an indexed text and never answers
    itself; a part of a text is not indexed, and its text is an answer."""
    Forest, Ensemble = lib
    out = {}
    t = clock()
    forest = Forest(num_perm=128)
    for i, m in enumerate(ms):
        forest.add(i, m)
    forest.index()
    out["forest_build"] = secs(since(t))
    t = clock()
    # k + 1 so that the query's own key, dropped afterwards, costs no answer
    whole = args.query_part >= 1
    top = {q: [j for j in forest.query(qms[q], args.k + 1) if not (whole and j == q)][:args.k]
           for q in queries}
    out["forest_query"] = secs(since(t))
    del forest
    t = clock()
    ens = Ensemble(threshold=args.threshold, num_perm=128, num_part=args.num_part)
    ens.index([(i, m, int(sizes[i])) for i, m in enumerate(ms)])
    out["ensemble_index"] = secs(since(t))
    t = clock()
    cont = {q: set(ens.query(qms[q], len(w))) - ({q} if whole else set())
            for q, w in queries.items()}
    out["ensemble_query"] = secs(since(t))
    return out, top, cont


def score(top, cont, truth, k):
    r_strict, r_tied, r_near, n_near = [], [], [], 0
    e_rec, e_prec, e_size = [], [], []
    f_size, hits, answers = [], 0, 0
    for q, (jac, best, kth, near, ctruth) in truth.items():
        ans = top[q]
        f_size.append(len(ans))
        if len(best):
            r_strict.append(len(set(ans) & set(best)) / len(best))
            r_tied.append(min(len(best), sum(1 for j in ans if jac[j] >= kth and jac[j] > 0))
                          / len(best))
        if len(near):
            n_near += 1
            r_near.append(len(set(ans) & set(near)) / min(k, len(near)))
        got = cont[q]
        hits += len(got & ctruth)
        answers += len(got)
        if ctruth:
            e_rec.append(len(got & ctruth) / len(ctruth))
        if got:
            e_prec.append(len(got & ctruth) / len(got))
        e_size.append(len(got))

    def mean(x):
        return round(float(np.mean(x)), 4) if x else None
    return {"forest_recall": mean(r_strict), "forest_recall_tied": mean(r_tied),
            "forest_recall_j50": mean(r_near), "forest_answers_mean": mean(f_size),
            "ensemble_recall": mean(e_rec), "ensemble_precision": mean(e_prec),
            "ensemble_precision_pooled": round(hits / answers, 4) if answers else None,
            "ensemble_answered": len(e_prec), "ensemble_answers_mean": mean(e_size)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--texts", type=int, default=100000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=28)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--threshold", type=float, default=0.5)
    ap.add_argument("--num-part", type=int, default=16)
    ap.add_argument("--query-part", type=float, default=1.0,
                    help="query with this fraction of a text's distinct words (1: the text)")
    ap.add_argument("--style", choices=("update", "update_batch"), default="update_batch")
    ap.add_argument("--datasketch-path")
    ap.add_argument("--only", choices=("simlsh", "datasketch"))
    args = ap.parse_args()
    if args.datasketch_path:
        sys.path.insert(0, args.datasketch_path)
    import simlsh.datasketch as S
    impls = []
    if args.only != "datasketch":
        impls.append(("simlsh.datasketch", S.MinHash,
                      (S.MinHashLSHForest, S.MinHashLSHEnsemble)))
    if args.only != "simlsh":
        try:
            from datasketch.lshensemble import MinHashLSHEnsemble as DE
            from datasketch.lshforest import MinHashLSHForest as DF
            from datasketch.minhash import MinHash as DM
            impls.append(("datasketch", DM, (DF, DE)))
        except ImportError as e:
            print("datasketch not importable (%s): simlsh only" % e, file=sys.stderr)

    docs, _ = corpus(args.texts, args.seed)
    rng = random.Random(args.seed + 1)
    t = clock()
    sets, sizes, post, start = exact(docs)
    queries = {}
    for q in sorted(rng.sample(range(args.texts), args.queries)):
        w = sets[q].tolist()
        if args.query_part < 1:
            w = sorted(rng.sample(w, max(1, round(args.query_part * len(w)))))
        queries[q] = np.array(w, dtype=np.int64)
    truth = {}
    k, ids = args.k, np.arange(args.texts)
    for q, w in queries.items():
        inter = overlaps(w, sets, post, start)
        jac = inter / (len(w) + sizes - inter)
        if args.query_part >= 1:
            jac[q] = -1.0
        # best k by Jaccard, ties by id: lexsort's last key is the primary one
        pool = np.flatnonzero(jac > 0)
        best = pool[np.lexsort((ids[pool], -jac[pool]))][:k]
        kth = jac[best[-1]] if len(best) else 1.0
        near = np.flatnonzero(jac >= 0.5)
        ctruth = set(np.flatnonzero(inter >= args.threshold * len(w)).tolist())
        if args.query_part >= 1:
            ctruth.discard(q)
        truth[q] = (jac, best.tolist(), kth, near.tolist(), ctruth)
    truth_t = since(t)
    out = {"texts": args.texts, "queries": args.queries, "seed": args.seed, "k": k,
           "threshold": args.threshold, "num_part": args.num_part, "style": args.style,
           "query_part": args.query_part,
           "num_perm": 128, "exact_truth": secs(truth_t),
           "queries_with_j50": sum(1 for v in truth.values() if v[3]),
           "queries_with_containment": sum(1 for v in truth.values() if v[4]),
           "containment_truth_mean": round(float(np.mean([len(v[4]) for v in truth.values()])), 3)}
    for name, M, lib in impls:
        ms, st = sign(M, docs, args.style, {})
        if args.query_part < 1:
            qms = dict(zip(queries, sign(M, [["w%d" % x for x in w] for w in queries.values()],
                                         args.style, {})[0]))
        else:
            qms = {q: ms[q] for q in queries}
        res, top, cont = run(lib, ms, sizes, queries, qms, args)
        del ms
        out[name] = dict({"sign": secs(st)}, **res, **score(top, cont, truth, k))
    out["max_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    if len(impls) == 2:
        s, d = out["simlsh.datasketch"], out["datasketch"]
        out["simlsh_recall_at_least_datasketch"] = {
            f: s[f] >= d[f]
            for f in ("forest_recall", "forest_recall_tied", "forest_recall_j50",
                      "ensemble_recall") if s[f] is not None and d[f] is not None}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
