#!/usr/bin/env python3
"""Near-duplicate lines of a file on Dask: the map-reduce recipe of Mining of
Massive Datasets (Leskovec, Rajaraman and Ullman, ch. 3) with simlsh.

  map      each partition of documents is signed in parallel (sign_batch),
           and every document emits one record per band: (band, band key)
           with its position and text;
  shuffle  records are grouped by (band, key), so documents with equal
           band keys meet in one reduce task;
  reduce   each bucket of two or more documents verifies its candidate pairs
           with the exact Jaccard similarity of their shingle sets;
  collect  verified pairs (few) come back to the client, whose connected
           components are the groups.

The groups and the documents to keep are those of
``simlsh.dedup(lines, threshold, verify="exact", cluster="components")``
(the test in python/tests/test_dask.py checks it): the same contract and
banding (dedup_params: bands chosen for recall, as exact verification
allows), the same candidates (pairs sharing a band bucket), the same
verification and the same components. simlsh-dedup and dedup() default to
star groups instead (every member near the kept document); the verified
pairs collected here are what simlsh_group_star would take. Empty lines are skipped, as simlsh-dedup skips them.

Records carry the text so that a bucket can verify its pairs without a join;
that copies each document once per band through the shuffle, which is fine
for an example. At scale, ship ids and join the verified pairs' texts (or
shingle sets) in a second shuffle.

Usage: dask_dedup.py [--workers N] [--partitions P] [--threshold T]
                     [--threads] [--json] FILE
Prints one group per line (1-based line numbers, tab-separated, as
``simlsh-dedup --lines FILE``), or with --json one object with "groups" and
"keep" as 0-based positions.
"""

import argparse
import json
import sys
from itertools import combinations

import simlsh


def read_lines(path):
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return [ln[:-1] if ln.endswith(b"\r") else ln for ln in lines]


def sign_partition(part, params):
    """map: (position, text) pairs -> ((band, key), (position, text)) records."""
    part = list(part)
    if not part:
        return []
    values = simlsh.sign_batch([t for _, t in part], params, threads=1)
    live = ~simlsh.empty_rows(values)
    rows = [part[i] for i in range(len(part)) if live[i]]
    if not rows:
        return []
    keys = simlsh.band_keys(values[live], params)
    out = []
    for (pos, text), row in zip(rows, keys.tolist()):
        for band, key in enumerate(row):
            out.append(((band, key), (pos, text)))
    return out


def verify_bucket(bucket, params, threshold):
    """reduce: the pairs of one bucket whose exact Jaccard reaches the threshold."""
    _, members = bucket
    if len(members) < 2:
        return []
    members = sorted({pos: text for _, (pos, text) in members}.items())
    sets = [simlsh.ShingleSet(params, text) for _, text in members]
    return [(members[i][0], members[j][0])
            for i, j in combinations(range(len(members)), 2)
            if sets[i].jaccard(sets[j]) >= threshold]


def dask_dedup(lines, client, partitions, threshold):
    import dask.bag as db

    params = simlsh.dedup_params(threshold)
    docs = db.from_sequence(list(enumerate(lines)), npartitions=partitions)
    records = docs.map_partitions(sign_partition, params)
    buckets = records.groupby(lambda r: r[0], shuffle="tasks")
    pairs = buckets.map(verify_bucket, params, threshold).flatten().distinct()
    verified = client.compute(pairs).result()

    # Skipped (empty) documents are in no group and not kept, as in simlsh-dedup.
    live = [i for i, e in enumerate(simlsh.empty_rows(simlsh.sign_batch(lines, params)))
            if not e]
    # the library's union-find: label[i] is the smallest position of i's group
    label = simlsh.group_components([a for a, _ in verified], [b for _, b in verified],
                                    n=len(lines)).tolist()
    groups = {}
    for i in live:
        groups.setdefault(label[i], []).append(i)
    return ([g for _, g in sorted(groups.items()) if len(g) > 1],
            [i for i in live if label[i] == i])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--threads", action="store_true",
                    help="workers are threads of this process, not processes")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    from distributed import Client, LocalCluster

    lines = read_lines(args.file)
    with LocalCluster(n_workers=args.workers, threads_per_worker=1,
                      processes=not args.threads, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        groups, keep = dask_dedup(lines, client, args.partitions, args.threshold)
    if args.json:
        json.dump({"groups": groups, "keep": keep}, sys.stdout)
        sys.stdout.write("\n")
    else:
        for g in groups:
            print("\t".join(str(i + 1) for i in g))


if __name__ == "__main__":
    main()
