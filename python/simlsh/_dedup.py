"""simlsh.dedup: the answers of simlsh-dedup for a list of texts."""

from __future__ import annotations

import ctypes
from typing import Any, Iterator, List, Optional, Sequence, Union

import numpy as np

from ._core import (NORM_COLLAPSE_SPACE, NORM_LOWER_ASCII, Index, Params,
                    Text, _as_blob, _Results, _sequence, _threads, empty_rows,
                    sign_batch)
from ._lib import InvalidArgument, InvalidUTF8, check, lib

VERIFY_MODES = ("exact", "estimate", "none")
#: simlsh_dedup_new()'s modes (enum simlsh_dedup_mode) by name
_ENGINE_MODES = {"none": 0, "estimate": 1, "exact": 2}
_DEDUP_THREADS, _DEDUP_MEMORY, _DEDUP_CLUSTER = 0, 1, 6
#: enum simlsh_dedup_cluster by name
_CLUSTERS = {"star": 0, "components": 1}
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
    ``truncated``: always False: groups are never cut short (kept for
    compatibility; ``max_pairs`` once bounded the candidate pairs).
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


def dedup_params(threshold: float = 0.8, verify: str = "exact", recall: float = 0.99, *,
                 unit: Union[str, int, None] = None, k: Optional[int] = None,
                 normalize: Union[str, Sequence[str], int, None] = None,
                 utf8_policy: Union[str, int, None] = None, seed: Optional[int] = None,
                 hash_bits: Optional[int] = None, num_perm: Optional[int] = None,
                 scheme: Union[str, int, None] = None, bands: Optional[int] = None,
                 rows: Optional[int] = None, isa: Union[str, int, None] = None,
                 fp_weight: Optional[float] = None,
                 fn_weight: Optional[float] = None) -> Params:
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
    if verify not in VERIFY_MODES:
        raise InvalidArgument("verify must be one of %s" % ", ".join(VERIFY_MODES))
    p = Params(normalize=NORM_LOWER_ASCII | NORM_COLLAPSE_SPACE, threshold=threshold,
               fp_weight=0.1, fn_weight=0.9)
    given = dict(unit=unit, k=k, normalize=normalize, utf8_policy=utf8_policy, seed=seed,
                 hash_bits=hash_bits, num_perm=num_perm, scheme=scheme, isa=isa,
                 fp_weight=fp_weight, fn_weight=fn_weight)
    for key, value in given.items():
        if value is not None:
            p.set(key, value)
    if p.fp_weight == 0 and p.fn_weight == 0:
        raise InvalidArgument("fp_weight and fn_weight cannot both be 0")
    # the policy's banding is the library's (simlsh_dedup_banding), as the
    # tool's; a side given must be at least 1 (0 there means "not given")
    given_b = 0 if bands is None else bands
    given_r = 0 if rows is None else rows
    b, r = ctypes.c_uint32(), ctypes.c_uint32()
    if not (0 <= given_b <= 0xFFFFFFFF and 0 <= given_r <= 0xFFFFFFFF) or \
            (bands is not None and bands < 1) or (rows is not None and rows < 1):
        raise InvalidArgument("bands %d x rows %d does not fit in num_perm %d"
                              % (given_b, given_r, p.num_perm))
    else:
        with p._lock.write:
            rc = lib.simlsh_dedup_banding(p._h, _ENGINE_MODES[verify], recall, given_b, given_r,
                                          ctypes.byref(b), ctypes.byref(r))
    if rc != 0 and (bands is not None or rows is not None):
        raise InvalidArgument("bands %d x rows %d does not fit in num_perm %d"
                              % (b.value, r.value, p.num_perm))
    check(rc, "dedup_params")
    return p


def dedup(texts: Sequence[Text], threshold: float = 0.8, keys: Optional[Sequence[Any]] = None,
          *, verify: str = "exact", cluster: str = "star", recall: float = 0.99,
          threads: int = 0, max_pairs: int = 10_000_000,
          unit: Union[str, int, None] = None, k: Optional[int] = None,
          normalize: Union[str, Sequence[str], int, None] = None,
          utf8_policy: Union[str, int, None] = None, seed: Optional[int] = None,
          hash_bits: Optional[int] = None, num_perm: Optional[int] = None,
          scheme: Union[str, int, None] = None, bands: Optional[int] = None,
          rows: Optional[int] = None, isa: Union[str, int, None] = None,
          fp_weight: Optional[float] = None,
          fn_weight: Optional[float] = None) -> DedupResult:
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
    ``unit``, ``k``, ``normalize``, ``utf8_policy``, ``seed``,
    ``hash_bits``, ``num_perm``, ``scheme``, ``bands``, ``rows``, ``isa``,
    ``fp_weight``, ``fn_weight``: the Params keys, as simlsh-dedup's options
    set them (None: the tool's value); see :func:`dedup_params`. ``max_pairs`` is accepted and ignored: groups are
    never cut short, as in simlsh-dedup.

    Star groups come from the library's dedup engine (``simlsh_dedup_*``),
    as simlsh-dedup's do: each document in input order that no group holds
    yet claims the members of its buckets that pass verification, so a
    group of m copies costs m checks, not m(m-1)/2, and the texts are
    compared a bounded batch at a time. ``cluster="components"`` joins
    the verified pairs into connected components from the same buckets,
    verifying a pair only while its documents are apart.

    >>> groups, keep = dedup(["a b c d e f", "a b c d e f", "x y z w v u"], k=3)
    >>> groups, keep
    ([[0, 1]], [0, 2])
    """
    if verify not in VERIFY_MODES:
        raise InvalidArgument("verify must be one of %s" % ", ".join(VERIFY_MODES))
    if cluster not in CLUSTER_MODES:
        raise InvalidArgument("cluster must be one of %s" % ", ".join(CLUSTER_MODES))
    texts = _sequence(texts, "dedup")
    if keys is not None:
        keys = list(keys)
        if len(keys) != len(texts):
            raise InvalidArgument("dedup: %d keys for %d texts" % (len(keys), len(texts)))
    p = dedup_params(threshold, verify=verify, recall=recall, unit=unit, k=k,
                     normalize=normalize, utf8_policy=utf8_policy, seed=seed,
                     hash_bits=hash_bits, num_perm=num_perm, scheme=scheme, bands=bands,
                     rows=rows, isa=isa, fp_weight=fp_weight, fn_weight=fn_weight)
    nt = _threads(threads)
    values = sign_batch(texts, p, threads=nt, invalid="empty")
    live = np.nonzero(~empty_rows(values))[0] if len(texts) else np.empty(0, np.int64)
    # Ids 0, 1, ... over the documents kept, in input order, as the tool
    # numbers them: grouping depends on the order of ids.
    n = len(live)
    ix = Index(p)
    if n:
        ix.insert_batch(np.arange(n, dtype=np.uint64), values[live], threads=nt)
    truncated = False
    # the library's dedup engine: groups from the buckets, the same engine
    # (and the same answers) as simlsh-dedup's, stars or components
    labels, kept = _engine_groups(ix, p, texts, live, verify, nt, cluster)
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


def _engine_groups(ix: Index, p: Params, texts: Sequence[Text], live: np.ndarray, verify: str,
                   nt: int, cluster: str) -> Any:
    """(label, kept) of the groups that the library's dedup engine
    (simlsh_dedup_*) makes from the index's buckets: label[id] = the smallest
    id of id's group, kept[id] = its centre (stars) or its first document
    (components); priority by ascending id (input order), as simlsh-dedup
    --keep first. In exact mode the engine asks for
    the texts it needs, a bounded batch at a time (a pull loop: no callback
    from C into Python, so the GIL is released for each batch)."""
    n = len(live)
    d = ctypes.c_void_p()
    check(lib.simlsh_dedup_new(ctypes.byref(d), ix._h, _ENGINE_MODES[verify], p.threshold),
          "dedup")
    try:
        check(lib.simlsh_dedup_set(d, _DEDUP_THREADS, float(nt)), "dedup")
        check(lib.simlsh_dedup_set(d, _DEDUP_CLUSTER, float(_CLUSTERS[cluster])), "dedup")
        need = _Results()
        while True:
            check(lib.simlsh_dedup_next(need._h, d, ix._h), "dedup")
            ids = need.ids()
            if not ids:
                break
            blobs = [_as_blob(texts[int(live[i])]) for i in ids]
            m = len(blobs)
            lens = np.fromiter(map(len, blobs), dtype=np.uintp, count=m)
            blob = b"".join(blobs)
            offs = np.zeros(m, dtype=np.uintp)
            np.cumsum(lens[:-1], out=offs[1:])
            ptrs = offs + np.uintp(ctypes.cast(ctypes.c_char_p(blob), ctypes.c_void_p).value or 0)
            idarr = np.array(ids, dtype=np.uint64)
            rc = lib.simlsh_dedup_texts(d, idarr.ctypes.data, ptrs.ctypes.data,
                                        lens.ctypes.data, m)
            if rc != 0 and rc != InvalidUTF8.code:
                check(rc, "dedup")
        res = _Results()
        ng = ctypes.c_size_t()
        check(lib.simlsh_dedup_groups(res._h, ctypes.byref(ng), d), "dedup")
    finally:
        lib.simlsh_dedup_free(d)
    labels = np.arange(n, dtype=np.int64)
    kept = np.arange(n, dtype=np.int64)
    ga, gb, _ = res.columns()
    if ng.value:
        off = np.array(res.offsets(ng.value), dtype=np.int64)
        group = np.repeat(np.arange(ng.value), np.diff(off))
        members = ga.astype(np.int64)
        first = np.minimum.reduceat(members, off[:-1])
        labels[members] = first[group]
        kept[members] = gb.astype(np.int64)
    return labels, kept


__all__ = ["dedup", "dedup_params", "DedupResult"]


def _ids(values: Any, what: str) -> np.ndarray:
    """A 1-D sequence of non-negative integer ids as uint64."""
    if isinstance(values, (str, bytes, bytearray)):
        raise TypeError("group_components: %s must be a sequence of ids, not %s"
                        % (what, type(values).__name__))
    arr = np.asarray(values)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise InvalidArgument("group_components: %s must be a 1-D sequence of integer ids, "
                              "not %s of shape %s" % (what, arr.dtype, arr.shape))
    if arr.size and arr.dtype.kind == "i" and int(arr.min()) < 0:
        raise InvalidArgument("group_components: %s: ids are >= 0, not %d"
                              % (what, int(arr.min())))
    return np.ascontiguousarray(arr, dtype=np.uint64)


def group_components(a: Any, b: Any, n: Optional[int] = None) -> np.ndarray:
    """Connected components of the pairs (a[i], b[i]) (the library's
    ``simlsh_group_components``): a uint64 array ``label`` of n ids, where
    ``label[i]`` is the smallest id of i's component; an id in no pair is
    its own label. ``n`` defaults to one past the largest id given.

    For pairs verified outside :func:`dedup` (a map-reduce job, say):
    ``label[i] == i`` marks the document each group keeps.

    Threads: safe from any number of threads (nothing is shared).
    """
    a, b = _ids(a, "a"), _ids(b, "b")
    if len(a) != len(b):
        raise InvalidArgument("group_components: a and b must have the same length, "
                              "not %d and %d" % (len(a), len(b)))
    hi = int(max(a.max(), b.max())) + 1 if len(a) else 0
    if n is None:
        n = hi
    elif isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < hi:
        raise InvalidArgument("group_components: n=%r: must be an integer of at least %d "
                              "(one past the largest id)" % (n, hi))
    label = np.arange(int(n), dtype=np.uint64)
    if len(a):
        res = _Results()
        check(lib.simlsh_group_components(res._h, None, a.ctypes.data, b.ctypes.data, len(a)),
              "group_components")
        ids, lab, _ = res.columns()
        label[ids.astype(np.intp)] = lab
    return label
