#!/usr/bin/env python3
"""Tests of the quality tooling on real text (bench/quality/meson.build).

    test-quality.py CASE --groundtruth GT --make-corpus SCRIPT [--tool TOOL] [--unicode yes|no]

Cases:
  builder      data/make-realtext.py on a fake /usr/share tree: names, order,
               files reached twice taken once, .so stubs and empty files
               skipped, caps give a prefix, the lines file matches the tree
  truth-byte   simlsh-groundtruth against an independent brute force
  truth-char   (shingles and MurmurHash3 in Python, every pair compared) on
               a small real corpus: the exact list of pairs, similarities,
               intersection and union sizes, at several thresholds
  tool-exact   simlsh-dedup --verify exact reports only true pairs, with
               their exact similarity (precision 1.0)

The small corpus is /usr/share/common-licenses, copyright files up to 3 MB
in all, and edited copies of the licences (fixed seed) that put pairs on
both sides of the thresholds. Exit 77 (skipped) when the machine has too
few of these texts.
"""
import argparse
import gzip
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import unicodedata

SKIP = 77
M32 = 0xFFFFFFFF


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


# ---------------------------------------------------------------------------
# Independent reference: docs/format.md section 1, byte and char units
# ---------------------------------------------------------------------------

def murmur3_32(data, seed=0):
    c1, c2 = 0xCC9E2D51, 0x1B873593
    h = seed
    n = len(data)
    nb = n // 4
    for i in range(nb):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        k = (k * c1) & M32
        k = ((k << 15) | (k >> 17)) & M32
        k = (k * c2) & M32
        h ^= k
        h = ((h << 13) | (h >> 19)) & M32
        h = (h * 5 + 0xE6546B64) & M32
    tail = data[4 * nb:]
    k = 0
    if len(tail) >= 3:
        k ^= tail[2] << 16
    if len(tail) >= 2:
        k ^= tail[1] << 8
    if len(tail) >= 1:
        k ^= tail[0]
        k = (k * c1) & M32
        k = ((k << 15) | (k >> 17)) & M32
        k = (k * c2) & M32
        h ^= k
    h ^= n
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & M32
    h ^= h >> 16
    return h


ASCII_WS = " \t\n\v\f\r"


class Reference:
    """Shingle hash sets as docs/format.md defines them, for `lower,space`."""

    def __init__(self, unit, k, unicode_spaces):
        self.unit, self.k, self.unicode_spaces = unit, k, unicode_spaces
        self.cache = {}

    def hash(self, s):
        h = self.cache.get(s)
        if h is None:
            h = self.cache[s] = murmur3_32(s)
        return h

    def units(self, text):
        if self.unit == "byte":
            low = text.translate(bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ",
                                                 b"abcdefghijklmnopqrstuvwxyz"))
            return self._byte_units(low)
        # U+FFFD per maximal invalid subpart, as CPython's decoder does
        s = text.decode("utf-8", "replace")
        out, pending, emitted = [], False, False
        for ch in s:
            if "A" <= ch <= "Z":
                ch = chr(ord(ch) + 32)
            if self.is_space(ch):
                pending = emitted
                continue
            if pending:
                out.append(b" ")
                pending = False
            emitted = True
            out.append(ch.encode("utf-8", "surrogatepass"))
        return out

    @staticmethod
    def _byte_units(low):
        norm = b" ".join(w for w in re.split(rb"[ \t\n\v\f\r]+", low) if w)
        return [norm[i:i + 1] for i in range(len(norm))]

    def is_space(self, ch):
        if ch in ASCII_WS:
            return True
        if ord(ch) < 0x80 or not self.unicode_spaces:
            return False
        return ch == "\x85" or unicodedata.category(ch) in ("Zs", "Zl", "Zp")

    def shingles(self, text):
        u = self.units(text)
        k = self.k
        if not u:
            return frozenset()
        if len(u) < k:
            return frozenset([self.hash(b"".join(u))])
        if self.unit == "byte":
            s = b"".join(u)
            distinct = {s[i:i + k] for i in range(len(s) - k + 1)}
        else:
            distinct = {b"".join(u[i:i + k]) for i in range(len(u) - k + 1)}
        return frozenset(map(self.hash, distinct))


# ---------------------------------------------------------------------------
# Corpora
# ---------------------------------------------------------------------------

def build(script, outdir, *args):
    p = subprocess.run([sys.executable, script, outdir] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if p.returncode != 0:
        fail("make-realtext failed: %s" % p.stderr.decode())
    return json.loads(p.stdout)


def walk_order(root):
    """Files below root in simlsh-dedup's order."""
    out = []
    for name in sorted(os.listdir(root), key=os.fsencode):
        p = os.path.join(root, name)
        if os.path.isdir(p) and not os.path.islink(p):
            out += walk_order(p)
        elif os.path.isfile(p):
            out.append(p)
    return out


def edit(words, rate, rnd):
    """Replace a fraction of the words: the exact similarity to the original
    then falls roughly with rate, around the thresholds tested."""
    out = list(words)
    for i in range(len(out)):
        if rnd.random() < rate:
            out[i] = "w%06d" % rnd.randrange(10 ** 6)
    return out


def small_corpus(script, work):
    corpus = os.path.join(work, "c")
    info = build(script, corpus, "--sources", "licenses,copyright", "--max-mb", "3")
    lic = os.path.join(corpus, "licenses")
    if not os.path.isdir(lic) or info["docs"] < 30:
        print("SKIP: too few licence and copyright texts on this machine (%d)" % info["docs"])
        sys.exit(SKIP)
    # Near-threshold pairs on purpose: each licence with copies edited at
    # rates that give exact similarities from about 0.45 to 0.95.
    rnd = random.Random(20240917)
    var = os.path.join(corpus, "variants")
    os.makedirs(var)
    for name in sorted(os.listdir(lic)):
        with open(os.path.join(lic, name), "rb") as f:
            words = f.read().decode("utf-8", "replace").split()
        for rate in (0.01, 0.02, 0.03, 0.05, 0.08):
            with open(os.path.join(var, "%s-%02d" % (name, int(rate * 100))), "w") as f:
                f.write(" ".join(edit(words, rate, rnd)))
    return corpus


def tight_corpus(ref, outdir):
    """Pairs exactly at the edge of each threshold T, where every filter of
    the pair search is tight: y is the shortest prefix of x with
    |S(y)| = T |S(x)| (so J = T exactly, S(y) inside S(x)), z one shingle
    short of it. The shingles of x that y lacks are x's rarest tokens, so
    x's prefix holds exactly one shared token: a prefix one shorter, a size
    or overlap filter a hair too strict, or a strict > test loses (x, y).
    Each T uses its own letters, so the groups share no shingle."""
    rnd = random.Random(4242)
    os.makedirs(outdir)
    edges = []
    for T, letters in ((0.5, "abcdefgh"), (0.8, "ijklmnop"), (0.95, "qrstuvwx")):
        words = ["".join(rnd.choice(letters) for _ in range(rnd.randint(2, 9)))
                 for _ in range(1500)]
        text = " ".join(words).encode()
        while len(ref.shingles(text)) % 20:
            text = text[:-1]
        n = len(ref.shingles(text))
        need = round(T * n)

        def shortest(count):
            lo, hi = 1, len(text)
            while lo < hi:
                mid = (lo + hi) // 2
                if len(ref.shingles(text[:mid])) >= count:
                    hi = mid
                else:
                    lo = mid + 1
            return text[:lo]
        tag = "%02d" % int(T * 100)
        for name, data in (("x" + tag, text), ("y" + tag, shortest(need)),
                           ("z" + tag, shortest(need - 1))):
            with open(os.path.join(outdir, name), "wb") as f:
                f.write(data)
        edges.append((T, tag))
    return edges


def brute_pairs(ref, paths, lowest):
    names, sets = [], []
    for p in paths:
        with open(p, "rb") as f:
            s = ref.shingles(f.read())
        if s:
            names.append(p)
            sets.append(s)
    out = []
    for i in range(len(names)):
        si = sets[i]
        for j in range(i + 1, len(names)):
            # J <= min/max size: skipping these cannot drop a pair
            lo, hi = sorted((len(si), len(sets[j])))
            if lo < lowest * hi:
                continue
            inter = len(si & sets[j])
            uni = len(si) + len(sets[j]) - inter
            if inter / uni >= lowest:
                out.append((names[i], names[j], "%.4f" % (inter / uni), inter, uni))
    return names, out


# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------

def run_gt(gt, args):
    p = subprocess.run([gt, "--counts", "-q"] + args, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if p.returncode != 0:
        fail("simlsh-groundtruth %s: exit %d: %s" % (args, p.returncode, p.stderr.decode()))
    rows = []
    for line in p.stdout.decode("utf-8", "surrogateescape").splitlines():
        a, b, sim, inter, uni = line.split("\t")
        rows.append((a, b, sim, int(inter), int(uni)))
    return rows


def case_truth(a, unit):
    work = tempfile.mkdtemp(prefix="simlsh-quality-test-")
    try:
        corpus = small_corpus(a.make_corpus, work)
        ref = Reference(unit, 5, a.unicode == "yes")
        if murmur3_32(b"hello") != 0x248BFA47 or murmur3_32(b"", 1) != 0x514E28B7:
            fail("the reference MurmurHash3 is wrong")
        lowest = 0.45
        names, brute = brute_pairs(ref, walk_order(corpus), lowest)
        n = len(names)
        near = sum(1 for r in brute if 0.78 <= r[3] / r[4] < 0.82)
        print("%d documents, %d pairs >= %.2f, %d with 0.78 <= J < 0.82" %
              (n, len(brute), lowest, near))
        if near < 10:
            fail("the corpus has too few pairs near 0.8 (%d) to test anything" % near)
        for t in ("0.45", "0.5", "0.8", "0.95"):
            want = [r for r in brute if r[3] / r[4] >= float(t)]
            got = run_gt(a.groundtruth, ["--unit", unit, "-k", "5", "--threshold", t, corpus])
            if got != want:
                extra = [r for r in got if r not in want][:5]
                missed = [r for r in want if r not in got][:5]
                fail("t=%s: groundtruth %d pairs, brute force %d; extra %s; missed %s" %
                     (t, len(got), len(want), extra, missed))
            print("t=%s: %d pairs, identical to brute force" % (t, len(got)))
        # Document names and --lines: the same pairs by line number.
        lines = os.path.join(work, "c.lines")
        with open(lines, "wb") as f:
            for p in names:
                with open(p, "rb") as g:
                    f.write(g.read().replace(b"\n", b" ").replace(b"\r", b" ") + b"\n")
        got = run_gt(a.groundtruth, ["--unit", unit, "--threshold", "0.5", "--lines", lines])
        index = {p: str(i + 1) for i, p in enumerate(names)}
        want = [(index[r[0]], index[r[1]]) + r[2:] for r in brute if r[3] / r[4] >= 0.5]
        if got != want:
            fail("--lines gives other pairs than the directory")

        tight = os.path.join(work, "tight")
        edges = tight_corpus(ref, tight)
        _, brute = brute_pairs(ref, walk_order(tight), 0.45)
        for T, tag in edges:
            want = [r for r in brute if r[3] / r[4] >= T]
            got = run_gt(a.groundtruth, ["--unit", unit, "--threshold", str(T), tight])
            x, y, z = (os.path.join(tight, c + tag) for c in "xyz")
            if not any(r[:2] == (x, y) and 100 * r[3] == round(100 * T) * r[4] for r in want) or \
               any(r[:2] == (x, z) for r in want):
                fail("the edge corpus for %s is not what it should be: %s" % (T, want))
            if got != want:
                fail("t=%s at the edge: groundtruth %s, brute force %s" % (T, got, want))
            print("t=%s: edge pairs (J = t exactly, and just below) right" % T)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def case_tool_exact(a):
    if not a.tool:
        print("SKIP: no simlsh-dedup in this build")
        sys.exit(SKIP)
    work = tempfile.mkdtemp(prefix="simlsh-quality-test-")
    try:
        corpus = small_corpus(a.make_corpus, work)
        contract = ["--unit", "byte", "-k", "5", "--normalize", "lower,space"]
        for t in ("0.5", "0.8"):
            truth = {(r[0], r[1]): r for r in run_gt(a.groundtruth,
                                                     contract + ["--threshold", t, corpus])}
            out = os.path.join(work, "pairs.tsv")
            p = subprocess.run([a.tool, "--verify", "exact", "--output", "pairs", "-q",
                                "--threshold", t, "-o", out] + contract + [corpus],
                               stderr=subprocess.PIPE)
            if p.returncode != 0:
                fail("simlsh-dedup exit %d: %s" % (p.returncode, p.stderr.decode()))
            found = []
            with open(out, encoding="utf-8", errors="surrogateescape") as f:
                for line in f:
                    x, y, sim = line.rstrip("\n").split("\t")
                    found.append((x, y, sim))
            wrong = [r for r in found if (r[0], r[1]) not in truth]
            if wrong:
                fail("t=%s: --verify exact reports %d pairs below the threshold, e.g. %s" %
                     (t, len(wrong), wrong[:3]))
            mism = [r for r in found if truth[(r[0], r[1])][2] != r[2]]
            if mism:
                fail("t=%s: similarities differ from the exact ones: %s" % (t, mism[:3]))
            pos = {key: i for i, key in enumerate(truth)}
            if found != sorted(found, key=lambda r: pos[(r[0], r[1])]):
                fail("t=%s: pairs are not in input order" % t)
            recall = len(found) / len(truth) if truth else 1.0
            print("t=%s: %d pairs, precision 1.0, recall %.4f (%d of %d)" %
                  (t, len(found), recall, len(found), len(truth)))
            # ----------------------------------------------------------------
            # RECALL ASSERTIONS (issue 9): the default mode (no --verify) is
            # exact verification with bands chosen for recall 0.99.
            # - Precision 1.0: every pair it reports is a true pair, with its
            #   exact similarity.
            # - Recall: a pair of similarity s becomes a candidate with
            #   probability P(s) = 1 - (1 - s^r)^b for the b x r banding the
            #   summary prints, P(s) >= P(t) >= 0.99, and exact
            #   verification then keeps it. The misses are a sum of
            #   Bernoulli(1 - P(s_i)) over the true pairs (independent
            #   enough: the pairs' band collisions are separate events), whose
            #   tail is at most that of a Poisson variable of the same mean
            #   m. The test allows the k with P(Poisson(m) > k) < 1e-4 (the
            #   hash seed is fixed, so the outcome is deterministic; the
            #   bound says what almost every seed gives).
            #   Here that is a few pairs out of hundreds (recall >= 0.99);
            #   on the 2,000 document corpus of docs/quality.md the bench
            #   measures 0.999 at both thresholds.
            # ----------------------------------------------------------------
            p = subprocess.run([a.tool, "--output", "pairs", "--threshold", t, "-o", out]
                               + contract + [corpus], stderr=subprocess.PIPE)
            if p.returncode != 0:
                fail("simlsh-dedup (default) exit %d: %s" % (p.returncode, p.stderr.decode()))
            m = re.search(r"P\(candidate \| J = [0-9.]+\) = ([0-9.]+) \(chosen for --recall\)",
                          p.stderr.decode())
            br = re.search(r"(\d+) bands x (\d+) rows", p.stderr.decode())
            if not m or not br or float(m.group(1)) < 0.99:
                fail("t=%s: the default banding does not target recall 0.99: %s" %
                     (t, p.stderr.decode()))
            if "by exact Jaccard" not in p.stderr.decode():
                fail("t=%s: the default mode is not exact verification" % t)
            found = []
            with open(out, encoding="utf-8", errors="surrogateescape") as f:
                for line in f:
                    x, y, sim = line.rstrip("\n").split("\t")
                    found.append((x, y, sim))
            wrong = [r for r in found if (r[0], r[1]) not in truth]
            if wrong:
                fail("t=%s: the default mode reports %d pairs below the threshold, e.g. %s" %
                     (t, len(wrong), wrong[:3]))
            mism = [r for r in found if truth[(r[0], r[1])][2] != r[2]]
            if mism:
                fail("t=%s: default mode similarities differ from the exact ones: %s" %
                     (t, mism[:3]))
            n = len(truth)
            misses = n - len(found)
            nb, nr = int(br.group(1)), int(br.group(2))
            miss_p = [(1 - float(r[2]) ** nr) ** nb for r in truth.values()]
            mean = sum(miss_p)
            allowed, term, cdf = 0, math.exp(-mean), math.exp(-mean)
            while 1 - cdf >= 1e-4:
                allowed += 1
                term *= mean / allowed
                cdf += term
            print("t=%s: default mode: %d of %d pairs, precision 1.0, recall %.4f, misses %d"
                  " (expected %.2f, allowed %d)" % (t, len(found), n, len(found) / n if n else 1.0,
                                                    misses, mean, allowed))
            if misses > allowed:
                fail("t=%s: the default mode misses %d of %d true pairs (allowed %d)" %
                     (t, misses, n, allowed))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def case_builder(a):
    work = tempfile.mkdtemp(prefix="simlsh-quality-test-")
    try:
        root = os.path.join(work, "root")
        lic = os.path.join(root, "usr/share/common-licenses")
        doc = os.path.join(root, "usr/share/doc")
        man = os.path.join(root, "usr/share/man")
        for d in (lic, doc, os.path.join(man, "man1"), os.path.join(man, "de/man1")):
            os.makedirs(d)

        def write(path, data):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)

        write(os.path.join(lic, "GPL-3"), b"GPL three\r\ntext\n")
        os.symlink("GPL-3", os.path.join(lic, "GPL"))          # same file: taken once
        write(os.path.join(lic, "Empty"), b" \n")             # empty: skipped
        write(os.path.join(doc, "b-pkg/copyright"), b"Copyright B\n")
        write(os.path.join(doc, "a-pkg/copyright"), b"Copyright A\nline 2\n")
        os.symlink("a-pkg", os.path.join(doc, "a-pkg-dev"))    # doc dir link: taken once
        write(os.path.join(doc, "c-pkg/README"), b"not a copyright file\n")
        for rel, data in [("man1/zz.1.gz", b".TH ZZ 1\nzz page\n"),
                          ("man1/alias.1.gz", b".so man1/zz.1\n"),
                          ("de/man1/zz.1.gz", b".TH ZZ 1\nzz Seite\n")]:
            with gzip.open(os.path.join(man, rel), "wb") as f:
                f.write(data)
        os.symlink("zz.1.gz", os.path.join(man, "man1/link.1.gz"))

        out = os.path.join(work, "out")
        info = build(a.make_corpus, out, "--root", root, "--lines", out + ".lines")
        want = ["licenses/GPL-3", "copyright/a-pkg", "copyright/b-pkg", "man/man1/zz.1",
                "man/de/man1/zz.1"]
        got = sorted(os.path.relpath(p, out) for p in walk_order(out))
        if got != sorted(want) or info["docs"] != 5:
            fail("documents %s, expected %s (summary %s)" % (got, sorted(want), info))
        if info["sources"] != {"licenses": 1, "copyright": 2, "man": 2}:
            fail("per-source counts %s" % info["sources"])
        with open(os.path.join(out, "man/man1/zz.1"), "rb") as f:
            if f.read() != b".TH ZZ 1\nzz page\n":
                fail("man page not decompressed")
        total = sum(os.path.getsize(p) for p in walk_order(out))
        if info["bytes"] != total:
            fail("summary bytes %d, files %d" % (info["bytes"], total))
        # The lines file follows the tool's walk order and maps back by .names.
        with open(out + ".lines", "rb") as f:
            lines = f.read().split(b"\n")[:-1]
        with open(out + ".lines.names") as f:
            lnames = f.read().split("\n")[:-1]
        order = [os.path.relpath(p, out) for p in walk_order(out)]
        if lnames != order or len(lines) != 5:
            fail("lines order %s, walk order %s" % (lnames, order))
        for name, line in zip(lnames, lines):
            with open(os.path.join(out, name), "rb") as f:
                if f.read().replace(b"\r", b" ").replace(b"\n", b" ") != line:
                    fail("line for %s differs from the file" % name)
        # Deterministic, and a cap keeps a prefix of the uncapped order.
        again = build(a.make_corpus, os.path.join(work, "again"), "--root", root)
        if again["sha256"] != info["sha256"]:
            fail("two builds differ")
        capped = build(a.make_corpus, os.path.join(work, "capped"), "--root", root,
                       "--max-docs", "2")
        cgot = sorted(os.path.relpath(p, os.path.join(work, "capped"))
                      for p in walk_order(os.path.join(work, "capped")))
        if cgot != sorted(want[:2]) or not capped["capped"]:
            fail("--max-docs 2 gave %s" % cgot)
        capped = build(a.make_corpus, os.path.join(work, "capmb"), "--root", root,
                       "--max-mb", "0.00003")  # 30 bytes: GPL-3 (16) + a-pkg (19) > 30
        if capped["docs"] != 1:
            fail("--max-mb gave %d documents" % capped["docs"])
        p = subprocess.run([sys.executable, a.make_corpus, out, "--root", root],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if p.returncode == 0:
            fail("a non-empty output directory was accepted")
        print("builder: %s" % info)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["builder", "truth-byte", "truth-char", "tool-exact"])
    ap.add_argument("--groundtruth", required=True)
    ap.add_argument("--make-corpus", required=True)
    ap.add_argument("--tool")
    ap.add_argument("--unicode", choices=["yes", "no"], default="no")
    a = ap.parse_args()
    if a.case == "builder":
        case_builder(a)
    elif a.case == "truth-byte":
        case_truth(a, "byte")
    elif a.case == "truth-char":
        case_truth(a, "char")
    else:
        case_tool_exact(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
