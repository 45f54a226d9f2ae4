#!/usr/bin/env python3
"""Check the printed answers of the examples, not only their exit status.

  check-examples.py pipeline PIPELINE_BIN PIPELINE_C VERSION
  check-examples.py scurve SCURVE_BIN

pipeline: the version line; each "estimated jaccard" within 4.5 binomial
standard deviations (plus one row) of the exact Jaccard of the documents'
char 5-shingles, computed here from the document strings in pipeline.c; the
near-duplicates of document 0 are exactly those whose estimate reaches the
threshold 0.5, with the same scores; bands x rows fit 128 values and are
optimal for threshold 0.5 (see scurve below).

scurve: every P(candidate) cell equals 1 - (1 - s^r)^b for the (b, r) of its
column; the optimal table's columns (unused rows, (1/b)^(1/r), the s where
P = 1/2, the false positive and false negative areas) are recomputed here,
and for num_perm 128 the (b, r) of the optimal and the weights tables is
checked to minimise w_fp * FP + w_fn * FN over every b * r <= num_perm, by
a quadrature independent of the library's.
"""
import math
import re
import subprocess
import sys

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print('FAIL:', what, file=sys.stderr)


def prob(b, r, s):
    return 1.0 - (1.0 - s ** r) ** b


def gauss_legendre(n):
    """Nodes and weights on [-1, 1] by Newton's iteration on P_n."""
    nodes, weights = [], []
    for i in range(1, n + 1):
        x = math.cos(math.pi * (i - 0.25) / (n + 0.5))
        for _ in range(100):
            p0, p1 = 1.0, x
            for k in range(2, n + 1):
                p0, p1 = p1, ((2 * k - 1) * x * p1 - (k - 1) * p0) / k
            dp = n * (x * p1 - p0) / (x * x - 1)
            dx = p1 / dp
            x -= dx
            if abs(dx) < 1e-15:
                break
        nodes.append(x)
        weights.append(2 / ((1 - x * x) * dp * dp))
    return nodes, weights


GL = gauss_legendre(24)


def integrate(f, a, c, pieces=8):
    total, h = 0.0, (c - a) / pieces
    for k in range(pieces):
        lo = a + k * h
        for x, w in zip(*GL):
            total += w * f(lo + (x + 1) * h / 2) * h / 2
    return total


def fp_area(b, r, t):
    return integrate(lambda s: prob(b, r, s), 0.0, t)


def fn_area(b, r, t):
    return integrate(lambda s: 1.0 - prob(b, r, s), t, 1.0)


def objective(b, r, t, w_fp, w_fn):
    return w_fp * fp_area(b, r, t) + w_fn * fn_area(b, r, t)


def best_objective(num_perm, t, w_fp, w_fn):
    return min(objective(b, r, t, w_fp, w_fn)
               for r in range(1, num_perm + 1) for b in range(1, num_perm // r + 1))


def half_point(b, r):
    lo, hi = 0.0, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if prob(b, r, mid) < 0.5 else (lo, mid)
    return lo


def run(argv):
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    print(out)
    return out


def shingles(text, k=5):
    if len(text) < k:
        return {text} if text else set()
    return {text[i:i + k] for i in range(len(text) - k + 1)}


def check_pipeline(binary, source, version):
    out = run([binary])
    src = open(source, encoding='utf-8').read()
    block = re.search(r'docs\[\]\s*=\s*\{(.*?)\};', src, re.S).group(1)
    docs = re.findall(r'"((?:[^"\\]|\\.)*)"', block)
    check(len(docs) == 3, f'three documents in {source}, found {len(docs)}')
    m = re.search(r'^simlsh (\S+): (\d+) bands x (\d+) rows$', out, re.M)
    check(m is not None, 'version and bands line')
    if m is None:
        return
    check(m.group(1) == version, f'version {m.group(1)} != {version}')
    b, r = int(m.group(2)), int(m.group(3))
    check(b * r <= 128, f'{b} x {r} rows fit 128 values')
    check(objective(b, r, 0.5, 0.5, 0.5) <= best_objective(128, 0.5, 0.5, 0.5) + 1e-9,
          f'{b} x {r} is optimal for threshold 0.5')
    est = {}
    for i, e in re.findall(r'^estimated jaccard\(0, (\d+)\) = ([0-9.]+)$', out, re.M):
        i, e = int(i), float(e)
        a, c = shingles(docs[0]), shingles(docs[i])
        exact = len(a & c) / len(a | c)
        sd = math.sqrt(exact * (1 - exact) / 128)
        check(abs(e - exact) <= 4.5 * sd + 1 / 128 + 1e-4,
              f'jaccard(0, {i}) = {e}, exact {exact:.4f}')
        est[i] = e
    check(sorted(est) == [1, 2], 'estimates for documents 1 and 2')
    m = re.search(r'^near-duplicates of 0:(.*)$', out, re.M)
    check(m is not None, 'near-duplicates line')
    if m is None:
        return
    found = {int(i): float(s) for i, s in re.findall(r'(\d+) \(([0-9.]+)\)', m.group(1))}
    want = {0: 1.0}
    want.update({i: e for i, e in est.items() if e >= 0.5})
    check(set(found) == set(want), f'near-duplicates {sorted(found)} != {sorted(want)}')
    for i in set(found) & set(want):
        check(abs(found[i] - want[i]) < 1e-9, f'score of {i}: {found[i]} != {want[i]}')
    check(1 in found, 'the edited copy of document 0 is found')


def tables(out):
    """Yield (title, header cells, rows of cells) for each markdown table."""
    lines = out.splitlines()
    title = ''
    i = 0
    while i < len(lines):
        if lines[i].startswith('|') and i + 1 < len(lines) and lines[i + 1].startswith('|---'):
            head = [c.strip() for c in lines[i].strip('|').split('|')]
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith('|'):
                rows.append([c.strip() for c in lines[i].strip('|').split('|')])
                i += 1
            yield title, head, rows
            continue
        if lines[i].strip():
            title = lines[i]
        i += 1


def check_scurve(binary):
    out = run([binary])
    ncells = noptimal = 0
    for title, head, rows in tables(out):
        if title.startswith('P(candidate)'):
            params = [re.match(r'b=(\d+) r=(\d+)', h) for h in head[1:]]
            for row in rows:
                s = float(row[0])
                for pm, cell in zip(params, row[1:]):
                    b, r = int(pm.group(1)), int(pm.group(2))
                    check(abs(float(cell) - prob(b, r, s)) <= 0.00005 + 1e-12,
                          f'{title}: P({s}) for b={b} r={r} is {cell}')
                    ncells += 1
        elif head[0] == 'threshold t':
            num_perm = int(re.search(r'num_perm = (\d+)', title).group(1))
            for row in rows:
                t, b, r, unused = float(row[0]), int(row[1]), int(row[2]), int(row[3])
                approx, exact, fp, fn = (float(x) for x in row[4:8])
                check(b * r + unused == num_perm, f'{title}: t={t} unused rows')
                check(abs(approx - (1 / b) ** (1 / r)) <= 0.0005, f'{title}: t={t} (1/b)^(1/r)')
                check(abs(exact - half_point(b, r)) <= 0.0005, f'{title}: t={t} P = 1/2 point')
                check(abs(fp - fp_area(b, r, t)) <= 0.00005, f'{title}: t={t} FP area')
                check(abs(fn - fn_area(b, r, t)) <= 0.00005, f'{title}: t={t} FN area')
                if num_perm == 128:
                    best = best_objective(num_perm, t, 0.5, 0.5)
                    check(objective(b, r, t, 0.5, 0.5) <= best + 1e-9,
                          f'{title}: t={t} b={b} r={r} is not optimal')
                    noptimal += 1
        elif head[0] == 'FP / FN weight':
            t = float(re.search(r'threshold ([0-9.]+)', title).group(1))
            for row in rows:
                w_fp, w_fn = (float(x) for x in row[0].split('/'))
                b, r = int(row[1]), int(row[2])
                for s, cell in zip((t - 0.2, t - 0.1, t, min(1.0, t + 0.05)), row[3:7]):
                    check(abs(float(cell) - prob(b, r, s)) <= 0.00005 + 1e-12,
                          f'{title}: P({s:.2f}) for b={b} r={r} is {cell}')
                best = best_objective(128, t, w_fp, w_fn)
                check(objective(b, r, t, w_fp, w_fn) <= best + 1e-9,
                      f'{title}: weights {row[0]}: b={b} r={r} is not optimal')
                noptimal += 1
    check(ncells >= 200, f'P(candidate) cells checked: {ncells}')
    check(noptimal == 11, f'optimal rows checked for num_perm 128: {noptimal}')


def main(argv):
    if len(argv) >= 5 and argv[1] == 'pipeline':
        check_pipeline(argv[2], argv[3], argv[4])
    elif len(argv) >= 3 and argv[1] == 'scurve':
        check_scurve(argv[2])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    print(f'check-examples {argv[1]}: {len(FAILS)} failures')
    return 1 if FAILS else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
