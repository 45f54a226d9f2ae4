"""simlsh.dedup: the answers of simlsh-dedup for a list of texts."""

from __future__ import annotations

import ctypes
import math
import warnings
from typing import Any, Iterator, List, Optional, Sequence

import numpy as np

from ._core import (NORM_COLLAPSE_SPACE, NORM_LOWER_ASCII, QUERY_VERIFY, Index, Params,
                    ShingleSet, Text, _Results, _threads, empty_rows, sign_batch)
from ._lib import InvalidArgument, check, lib

VERIFY_MODES = ("exact", "estimate", "none")
CLUSTER_MODES = ("star", "components")


class DedupResult:
    """What :func:`dedup` found. Unpacks as ``groups, keep = result``.

    ``groups``: the groups of two or more documents, each a list of keys
    in input order, groups in the order of their first member.
    ``keep``: the kept document of every group (with ``cluster="star"``,
    the group's centre, which every member is near; with ``"components"``,
    its first document) and every document in no group, in input order.
    ``skipped``: documents in neither list because nothing was left to
    shingle after normalisation (empty or blank texts) or, with
    ``utf8_policy="reject"``, because they are not valid UTF-8 (simlsh-dedup
    skips the same documents).
    ``truncated``: candidate pairs stopped at ``max_pairs``.
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


def dedup_params(threshold: float = 0.8, verify: str = "exact", recall: float = 0.99,
                 **params: Any) -> Params:
    """The Params simlsh-dedup uses for these options: the library's defaults
    except ``normalize="lower,space"`` and weights ``fp_weight=0.1``,
    ``fn_weight=0.9`` (recall first: verification removes false positives);
    ``bands`` or ``rows`` alone make the other num_perm divided by it. With
    ``verify="exact"`` and neither ``bands`` nor ``rows``, the banding is
    the one with the least false-positive area whose probability of making
    a pair at the threshold a candidate is at least ``recall``
    (``simlsh_lsh_optimal_params_recall``), as ``simlsh-dedup --recall``."""
    if not 0.0 < recall < 1.0:
        raise InvalidArgument("recall must be between 0 and 1 (exclusive)")
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
    elif verify == "exact":
        b, r = ctypes.c_uint32(), ctypes.c_uint32()
        check(lib.simlsh_lsh_optimal_params_recall(ctypes.byref(b), ctypes.byref(r), None,
                                                   p.num_perm, p.threshold, recall, 0.0),
              "dedup_params")
        p.set("bands", b.value)
        p.set("rows", r.value)
    return p


def dedup(texts: Sequence[Text], threshold: float = 0.8, keys: Optional[Sequence[Any]] = None,
          *, verify: str = "exact", cluster: str = "star", recall: float = 0.99,
          threads: int = 0, max_pairs: int = 10_000_000, **params: Any) -> DedupResult:
    """Find near-duplicate texts, with the answers of ``simlsh-dedup`` given
    the same documents in the same order and the same options.

    ``texts``: str (encoded UTF-8) or bytes-like documents. ``keys``: one key
    per text to report (default: positions 0, 1, ...). ``verify``:
    "exact" (the default: true Jaccard of each candidate pair, from shingle
    sets; the banding targets ``recall``), "estimate" (MinHash estimate >=
    threshold) or "none" (every pair sharing a bucket). ``cluster``: "star"
    (the default: groups safe to delete from, every member >= threshold
    similar to its group's kept document, ``simlsh_group_star`` in input
    order) or "components" (connected components of the verified pairs).
    ``**params``: Params keys (``unit``, ``k``, ``num_perm``, ``normalize``,
    ``seed``, ``bands``, ...) as simlsh-dedup's options set them; see
    :func:`dedup_params`. The shingle sets of candidate documents are held
    in memory (the tool reads them again in bounded batches instead).

    >>> groups, keep = dedup(["a b c d e f", "a b c d e f", "x y z w v u"], k=3)
    >>> groups, keep
    ([[0, 1]], [0, 2])
    """
    if verify not in VERIFY_MODES:
        raise InvalidArgument("verify must be one of %s" % ", ".join(VERIFY_MODES))
    if cluster not in CLUSTER_MODES:
        raise InvalidArgument("cluster must be one of %s" % ", ".join(CLUSTER_MODES))
    texts = texts if isinstance(texts, (list, tuple)) else list(texts)
    if keys is not None:
        keys = list(keys)
        if len(keys) != len(texts):
            raise InvalidArgument("dedup: %d keys for %d texts" % (len(keys), len(texts)))
    p = dedup_params(threshold, verify=verify, recall=recall, **params)
    nt = _threads(threads)
    values = sign_batch(texts, p, threads=nt, invalid="empty")
    live = np.nonzero(~empty_rows(values))[0] if len(texts) else np.empty(0, np.int64)
    # Ids 0, 1, ... over the documents kept, in input order, as the tool
    # numbers them: grouping depends on the order of ids.
    n = len(live)
    ix = Index(p)
    if n:
        ix.insert_batch(np.arange(n, dtype=np.uint64), values[live], threads=nt)
    if verify == "exact":
        # as simlsh-dedup: candidates whose estimate is more than 4 standard
        # deviations below the threshold are dropped before the exact check
        t = p.threshold
        low = t - 4.0 * math.sqrt(t * (1 - t) / p.num_perm)
        a, b, s, truncated = _lib_pairs(ix, max_pairs, QUERY_VERIFY if low > 0 else 0,
                                        low if low > 0 else t)
    else:
        a, b, s, truncated = _lib_pairs(ix, max_pairs, QUERY_VERIFY if verify == "estimate"
                                        else 0, p.threshold)
    if verify == "exact":
        sets: dict = {}

        def shingles(i: int) -> ShingleSet:
            got = sets.get(i)
            if got is None:
                got = sets[i] = ShingleSet(p, texts[int(live[i])])
            return got

        thr = p.threshold
        keep_rows = []
        for k, (x, y) in enumerate(zip(a.tolist(), b.tolist())):
            j = shingles(x).jaccard(shingles(y))
            if j >= thr:
                keep_rows.append(k)
                s[k] = j
        rows = np.array(keep_rows, dtype=np.int64)
        a, b, s = a[rows], b[rows], s[rows]
    if cluster == "star":
        labels, kept = _star(a, b, s, n)
    else:
        labels = _components(a, b, n)
        kept = labels
    if truncated:
        warnings.warn("dedup: stopped at %d candidate pairs (max_pairs); results are "
                      "incomplete" % max_pairs, RuntimeWarning, stacklevel=2)
    # positions (or keys) of groups, keep and skipped
    names = live if keys is None else None
    ids = np.arange(n)
    keep_ids = ids[kept == ids]
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


def _components(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """label[id] = the smallest id of id's connected component."""
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for x, y in zip(a.tolist(), b.tolist()):
        rx, ry = find(x), find(y)
        if rx < ry:
            parent[ry] = rx
        elif ry < rx:
            parent[rx] = ry
    return np.array([find(i) for i in range(n)], dtype=np.int64)


def _star(a: np.ndarray, b: np.ndarray, s: np.ndarray, n: int) -> Any:
    """(label, kept): label[id] = the smallest id of id's star group, kept[id]
    = its centre; centres by ascending id (input order), as simlsh-dedup
    --keep first."""
    a = np.ascontiguousarray(a, dtype=np.uint64)
    b = np.ascontiguousarray(b, dtype=np.uint64)
    s = np.ascontiguousarray(np.where(s < 0, -1.0, s), dtype=np.float64)
    res = _Results()
    ng = ctypes.c_size_t()
    check(lib.simlsh_group_star(res._h, ctypes.byref(ng), a.ctypes.data, b.ctypes.data,
                                s.ctypes.data, len(a), None, 0), "group_star")
    labels = np.arange(n, dtype=np.int64)
    kept = np.arange(n, dtype=np.int64)
    ga, gb, _ = res.columns()
    off = res.offsets(ng.value)
    for g in range(ng.value):
        members = ga[off[g]:off[g + 1]].astype(np.int64)
        labels[members] = members.min()
        kept[members] = gb[off[g]:off[g + 1]].astype(np.int64)
    return labels, kept


def _lib_pairs(ix: Index, max_pairs: int, flags: int, threshold: float) -> Any:
    res = _Results()
    check(lib.simlsh_index_pairs_v2(res._h, ix._h, flags, max_pairs, threshold, 1), "pairs")
    a, b, s = res.columns()
    return a, b, s, res.truncated


__all__ = ["dedup", "dedup_params", "DedupResult"]
