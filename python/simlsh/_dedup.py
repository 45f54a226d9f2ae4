"""simlsh.dedup: the answers of simlsh-dedup for a list of texts."""

from __future__ import annotations

import warnings
from typing import Any, Iterator, List, Optional, Sequence

import numpy as np

from ._core import (NORM_COLLAPSE_SPACE, NORM_LOWER_ASCII, QUERY_VERIFY, Index, Params,
                    ShingleSet, Text, _Results, _threads, empty_rows, sign_batch)
from ._lib import InvalidArgument, check, lib

VERIFY_MODES = ("estimate", "exact", "none")


class DedupResult:
    """What :func:`dedup` found. Unpacks as ``groups, keep = result``.

    ``groups``: the clusters of two or more documents, each a list of keys
    in input order, clusters in the order of their first member.
    ``keep``: the first document of every cluster and every document in no
    cluster, in input order.
    ``skipped``: documents in neither list because nothing was left to
    shingle after normalisation (empty or blank texts) or, with
    ``utf8_policy="reject"``, because they are not valid UTF-8 (simlsh-dedup
    skips the same documents).
    ``truncated``: candidate pairs stopped at ``max_pairs`` (``verify="exact"``).
    """

    __slots__ = ("groups", "keep", "skipped", "truncated")

    def __init__(self, groups: List[List[Any]], keep: List[Any], skipped: List[Any],
                 truncated: bool = False) -> None:
        self.groups = groups
        self.keep = keep
        self.skipped = skipped
        self.truncated = truncated

    def __iter__(self) -> Iterator[List[Any]]:
        return iter((self.groups, self.keep))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DedupResult):
            return NotImplemented
        return (self.groups, self.keep, self.skipped) == (other.groups, other.keep,
                                                          other.skipped)

    def __repr__(self) -> str:
        return "DedupResult(groups=%r, keep=%r, skipped=%r)" % (self.groups, self.keep,
                                                                 self.skipped)


def dedup_params(threshold: float = 0.8, **params: Any) -> Params:
    """The Params simlsh-dedup uses for these options: the library's defaults
    except ``normalize="lower,space"`` and weights ``fp_weight=0.1``,
    ``fn_weight=0.9`` (recall first: verification removes false positives);
    ``bands`` or ``rows`` alone make the other num_perm divided by it."""
    p = Params(normalize=NORM_LOWER_ASCII | NORM_COLLAPSE_SPACE, threshold=threshold,
               fp_weight=0.1, fn_weight=0.9)
    bands, rows = params.pop("bands", None), params.pop("rows", None)
    for key, value in params.items():
        p.set(key, value)
    if p.fp_weight == 0 and p.fn_weight == 0:
        raise InvalidArgument("fp_weight and fn_weight cannot both be 0")
    if bands is not None or rows is not None:
        num_perm = p.num_perm
        if rows is None:
            rows = num_perm // bands if bands > 0 else 0
        if bands is None:
            bands = num_perm // rows if rows > 0 else 0
        if bands < 1 or rows < 1 or bands * rows > num_perm:
            raise InvalidArgument("bands %d x rows %d does not fit in num_perm %d"
                                  % (bands, rows, num_perm))
        p.set("bands", bands)
        p.set("rows", rows)
    return p


def dedup(texts: Sequence[Text], threshold: float = 0.8, keys: Optional[Sequence[Any]] = None,
          *, verify: str = "estimate", threads: int = 0, max_pairs: int = 10_000_000,
          **params: Any) -> DedupResult:
    """Find near-duplicate texts, with the answers of ``simlsh-dedup`` given
    the same documents in the same order and the same options.

    ``texts``: str (encoded UTF-8) or bytes-like documents. ``keys``: one key
    per text to report (default: positions 0, 1, ...). ``verify``:
    "estimate" (MinHash estimate >= threshold; clusters of
    ``simlsh_index_cluster``), "exact" (true Jaccard of each candidate pair
    from shingle sets; clusters are connected components of verified pairs)
    or "none" (every pair sharing a bucket). ``**params``: Params keys
    (``unit``, ``k``, ``num_perm``, ``normalize``, ``seed``, ``bands``, ...)
    as simlsh-dedup's options set them; see :func:`dedup_params`.

    >>> groups, keep = dedup(["a b c d e f", "a b c d e f", "x y z w v u"], k=3)
    >>> groups, keep
    ([[0, 1]], [0, 2])
    """
    if verify not in VERIFY_MODES:
        raise InvalidArgument("verify must be one of %s" % ", ".join(VERIFY_MODES))
    texts = texts if isinstance(texts, (list, tuple)) else list(texts)
    if keys is not None:
        keys = list(keys)
        if len(keys) != len(texts):
            raise InvalidArgument("dedup: %d keys for %d texts" % (len(keys), len(texts)))
    p = dedup_params(threshold, **params)
    nt = _threads(threads)
    values = sign_batch(texts, p, threads=nt, invalid="empty")
    live = np.nonzero(~empty_rows(values))[0] if len(texts) else np.empty(0, np.int64)
    # Ids 0, 1, ... over the documents kept, in input order, as the tool
    # numbers them: clustering depends on the order of ids.
    n = len(live)
    ix = Index(p)
    if n:
        ix.insert_batch(np.arange(n, dtype=np.uint64), values[live], threads=nt)
    truncated = False
    if verify == "exact":
        a, b, _, truncated = _lib_pairs(ix, max_pairs)
        sets = {}
        parent = list(range(n))

        def find(x: int) -> int:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        def shingles(i: int) -> ShingleSet:
            s = sets.get(i)
            if s is None:
                s = sets[i] = ShingleSet(p, texts[int(live[i])])
            return s

        thr = p.threshold
        for x, y in zip(a.tolist(), b.tolist()):
            if shingles(x).jaccard(shingles(y)) < thr:
                continue
            rx, ry = find(x), find(y)
            if rx < ry:
                parent[ry] = rx
            elif ry < rx:
                parent[rx] = ry
        labels = np.array([find(i) for i in range(n)], dtype=np.int64)
    else:
        res = _Results()
        check(lib.simlsh_index_cluster(res._h, ix._h, QUERY_VERIFY if verify == "estimate"
                                       else 0), "cluster")
        a, b, _ = res.columns()
        labels = np.arange(n, dtype=np.int64)
        labels[a.astype(np.int64)] = b.astype(np.int64)
    if truncated:
        warnings.warn("dedup: stopped at %d candidate pairs (max_pairs); results are "
                      "incomplete" % max_pairs, RuntimeWarning, stacklevel=2)
    # positions (or keys) of groups, keep and skipped
    names = live if keys is None else None
    ids = np.arange(n)
    keep_ids = ids[labels == ids]
    order = np.argsort(labels, kind="stable")  # by label, then id
    sorted_labels = labels[order]
    cuts = np.nonzero(np.diff(sorted_labels))[0] + 1
    starts = np.concatenate(([0], cuts)) if n else np.empty(0, np.int64)
    ends = np.concatenate((cuts, [n])) if n else np.empty(0, np.int64)
    multi = np.nonzero(ends - starts > 1)[0]

    def name_list(idx: np.ndarray) -> List[Any]:
        pos = live[idx]
        if names is not None:
            return pos.tolist()
        return [keys[i] for i in pos.tolist()]  # type: ignore[index]

    groups = [name_list(order[starts[g]:ends[g]]) for g in multi.tolist()]
    keep = name_list(keep_ids)
    skipped_mask = np.ones(len(texts), dtype=bool)
    skipped_mask[live] = False
    skipped_pos = np.nonzero(skipped_mask)[0].tolist()
    skipped = skipped_pos if keys is None else [keys[i] for i in skipped_pos]
    return DedupResult(groups, keep, skipped, truncated)


def _lib_pairs(ix: Index, max_pairs: int) -> Any:
    res = _Results()
    check(lib.simlsh_index_pairs(res._h, ix._h, 0, max_pairs), "pairs")
    a, b, s = res.columns()
    return a, b, s, res.truncated


__all__ = ["dedup", "dedup_params", "DedupResult"]
