#!/usr/bin/env python3
"""Corpora of planted shapes for the dedup benchmarks (bench/bench-shapes.py)
and the grouping tests: one document per line, and the planted groups.

  gen-shapes.py SHAPE OUT.lines [--docs N] [--words W] [--seed S] [--truth OUT.truth]

Shapes, all of N documents of about W words from one vocabulary:
  random    unrelated documents;
  heavy     half of the documents in planted groups of power-law sizes (one
            of N/4 copies, then groups of N/60, N/600 and N/6000 copies,
            each of these sizes taking N/12 documents: at N = 60,000 one
            group of 15,000, 5 of 1,000, 50 of 100, 500 of 10), each member its
            group's text with 1 to 3 words changed; the rest unrelated;
  template  every document is one template with 12 % of its words replaced
            (pairwise Jaccard of character 5-shingles about 0.6);
  near-template  the same with 7 % replaced (pairwise Jaccard about 0.7, just
            under the default threshold, so exact verification has to
            compare most pairs whole: quadratic; some pairs reach the
            threshold by chance, so it has no planted groups to check);
  copies    N copies of one text (the worst case of a bucket).
--truth writes the planted groups, one per line: the 1-based line numbers of
the members, ascending (groups of two or more only).
"""
import argparse
import random
import sys


def vocabulary(rng, n=20000):
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = set()
    while len(words) < n:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 10))))
    return sorted(words)


def text(rng, vocab, w):
    return [rng.choice(vocab) for _ in range(w)]


def edit(rng, vocab, words, k):
    out = list(words)
    for _ in range(k):
        out[rng.randrange(len(out))] = rng.choice(vocab)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shape", choices=["random", "heavy", "template", "near-template", "copies"])
    ap.add_argument("out")
    ap.add_argument("--docs", type=int, default=60000)
    ap.add_argument("--words", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--truth")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    vocab = vocabulary(rng)
    n, w = a.docs, a.words
    docs = []
    groups = []
    if a.shape == "random":
        docs = [text(rng, vocab, w) for _ in range(n)]
    elif a.shape == "copies":
        one = text(rng, vocab, w)
        docs = [one] * n
        groups = [list(range(n))]
    elif a.shape in ("template", "near-template"):
        base = text(rng, vocab, w)
        k = max(1, round((0.12 if a.shape == "template" else 0.07) * w))
        for _ in range(n):
            d = list(base)
            for p in rng.sample(range(w), k):
                d[p] = rng.choice(vocab)
            docs.append(d)
    else:
        sizes = []
        for i, size in enumerate((n // 4, n // 60, n // 600, n // 6000)):
            if size < 2:
                continue
            count = 1 if i == 0 else max(1, (n // 12) // size)
            sizes += [size] * count
        grouped = sum(sizes)
        members = []
        for size in sizes:
            base = text(rng, vocab, w)
            g = []
            for _ in range(size):
                g.append(len(members))
                members.append(edit(rng, vocab, base, rng.randint(1, 3)))
            groups.append(g)
        docs = members + [text(rng, vocab, w) for _ in range(max(0, n - grouped))]
        # shuffle: planted members are spread over the input
        perm = list(range(len(docs)))
        rng.shuffle(perm)
        where = [0] * len(docs)
        for new, old in enumerate(perm):
            where[old] = new
        docs = [docs[old] for old in perm]
        groups = [sorted(where[i] for i in g) for g in groups]
    with open(a.out, "w") as f:
        for d in docs:
            f.write(" ".join(d))
            f.write("\n")
    if a.truth:
        with open(a.truth, "w") as f:
            for g in sorted(groups):
                if len(g) >= 2:
                    f.write("\t".join(str(i + 1) for i in g) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
