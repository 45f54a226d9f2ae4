"""Forest (top-k) and Ensemble (containment) over libsimlsh handles."""

from __future__ import annotations

import ctypes
import operator
from typing import Any, List, Optional, Tuple

import numpy as np

from . import _lib
from ._core import (QUERY_VERIFY, Params, Signature, _Handle, _needs, _out, _params_arg,
                    _Results, _row_sigs, _save, as_bytes)
from ._lib import InvalidArgument, check
from ._rwlock import hold

_P, _SZ, _U64, _DBL, _I32 = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint64,
                             ctypes.c_double, ctypes.c_int)
_PP = ctypes.POINTER(ctypes.c_void_p)
_F = {name: _lib.optional(name, res, args) for name, res, args in [
    ("simlsh_forest_new", _I32, [_PP, _P]),
    ("simlsh_forest_free", None, [_P]),
    ("simlsh_forest_params", _I32, [_PP, _P]),
    ("simlsh_forest_insert", _I32, [_P, _U64, _P]),
    ("simlsh_forest_remove", _I32, [_P, _U64]),
    ("simlsh_forest_count", _I32, [ctypes.POINTER(_SZ), _P]),
    ("simlsh_forest_query_topk", _I32, [_P, _P, _P, _SZ]),
    ("simlsh_forest_save", _I32, [_P, _SZ, ctypes.POINTER(_SZ), _P]),
    ("simlsh_forest_load", _I32, [_PP, _P, _SZ, _P]),
    ("simlsh_ensemble_new", _I32, [_PP, _P]),
    ("simlsh_ensemble_free", None, [_P]),
    ("simlsh_ensemble_params", _I32, [_PP, _P]),
    ("simlsh_ensemble_insert", _I32, [_P, _U64, _P, _U64]),
    ("simlsh_ensemble_remove", _I32, [_P, _U64]),
    ("simlsh_ensemble_count", _I32, [ctypes.POINTER(_SZ), _P]),
    ("simlsh_ensemble_query", _I32, [_P, _P, _P, _U64, _DBL, _I32]),
    ("simlsh_ensemble_save", _I32, [_P, _SZ, ctypes.POINTER(_SZ), _P]),
    ("simlsh_ensemble_load", _I32, [_PP, _P, _SZ, _P]),
]}


def _fn(name: str) -> Any:
    return _needs(_F[name], name)


def _id(key: Any) -> int:
    try:
        i = operator.index(key)
    except TypeError:
        raise TypeError("ids must be int, not %s" % type(key).__name__) from None
    if isinstance(key, bool) or not 0 <= i < 1 << 64:
        raise InvalidArgument("ids must be int in 0 .. 2^64-1, not %r" % (key,))
    return i


def _sig(sig: Any, what: str) -> Signature:
    if not isinstance(sig, Signature):
        raise TypeError("%s: a simlsh.Signature, not %s" % (what, type(sig).__name__))
    return sig


def _rows(p: Params, values: Any, what: str) -> List[Signature]:
    """Signatures of the rows of a values matrix (InvalidArgument names the
    bad row)."""
    if isinstance(values, (str, bytes)):
        raise TypeError("%s: a values matrix, not %s" % (what, type(values).__name__))
    v = np.asarray(values)
    num_perm = p.get("num_perm")
    if v.ndim != 2 or (len(v) and v.shape[1] != num_perm):
        raise InvalidArgument("%s: values of shape %s; expected (n, num_perm = %d)"
                              % (what, v.shape, num_perm))
    return _row_sigs(p, v, what)


def _sizes(sizes: Any, n: int, what: str) -> List[int]:
    out = [operator.index(x) for x in np.asarray(sizes).tolist()]
    if len(out) != n:
        raise InvalidArgument("%s: %d sizes for %d rows" % (what, len(out), n))
    return out


def _batch(obj: Any, ids: Any, values: Any, sizes: Any, what: str) -> None:
    """Insert rows one by one; on error remove the rows inserted and raise
    naming the bad row. The caller holds obj's write lock."""
    if isinstance(ids, (str, bytes)):
        raise TypeError("%s: a sequence of ids, not a single %s" % (what, type(ids).__name__))
    ids = list(ids)
    sigs = _rows(obj.params, values, what)
    if len(sigs) != len(ids):
        raise InvalidArgument("%s: %d rows for %d ids" % (what, len(sigs), len(ids)))
    ns = _sizes(sizes, len(ids), what) if sizes is not None else None
    done: List[int] = []
    try:
        for j, (i, sig) in enumerate(zip(ids, sigs)):
            try:
                if ns is None:
                    obj.insert(i, sig)
                else:
                    obj.insert(i, sig, ns[j])
            except _lib.Error as e:
                raise type(e)("%s: row %d: %s" % (what, j, e)) from None
            done.append(i)
    except BaseException:
        for i in done:
            obj.remove(i)
        raise


class Forest(_Handle):
    """An LSH Forest: the k indexed signatures most similar to a query,
    with no threshold to choose (``simlsh_forest``). Ids are ints in
    0 .. 2^64-1. The params' ``bands`` and ``rows`` are the number of
    prefix trees and their depth (both 0: 8 trees of num_perm / 8).

    Threads: any mix of threads may call any methods; insert and remove are
    writes (exclusive), queries, len, saving and pickling are reads and run
    concurrently with each other (docs/python.md, "Threads").
    """

    __slots__ = ()
    _free = _F["simlsh_forest_free"]

    def __init__(self, params: Optional[Params] = None) -> None:
        h, params = _out(), _params_arg(params)
        with params._lock.read:
            check(_fn("simlsh_forest_new")(ctypes.byref(h), params._h), "Forest")
        self._h = h

    @property
    def params(self) -> Params:
        """The contract, with bands and rows set to the trees and depth."""
        h = _out()
        with self._lock.read:
            check(_fn("simlsh_forest_params")(ctypes.byref(h), self._h), "params")
        return Params._wrap(h)

    def insert(self, id: int, sig: Signature) -> None:
        """Insert ``sig`` under ``id``; AlreadyExists, EmptyInput or
        ContractMismatch leave the forest unchanged."""
        i, sig = _id(id), _sig(sig, "Forest.insert")
        with hold(write=(self,), read=(sig,)):
            check(_fn("simlsh_forest_insert")(self._h, i, sig._h), "Forest.insert %r" % (id,))

    def insert_batch(self, ids: Any, values: Any) -> None:
        """Insert row j of an (n, num_perm) values matrix (as sign_batch
        gives) under ids[j]. All or nothing: a bad row raises, naming it,
        and the rows before it are removed again."""
        with self._lock.write:
            _batch(self, ids, values, None, "Forest.insert_batch")

    def _insert_owned(self, rows: List[Tuple[int, Any]]) -> None:
        """Insert (id, C signature handle) pairs under one write lock, all
        or nothing, as insert_batch. The handles are states of copy-on-write
        Signatures (never changed), so no signature lock is taken. For
        simlsh.datasketch.MinHashLSHForest.index()."""
        ins, rm = _fn("simlsh_forest_insert"), _fn("simlsh_forest_remove")
        with self._lock.write:
            h, done = self._h, 0
            try:
                for i, sig in rows:
                    check(ins(h, i, sig), "Forest.insert %r" % (i,))
                    done += 1
            except BaseException:
                for i, _ in rows[:done]:
                    rm(h, i)
                raise

    def query_batch(self, values: Any, k: int) -> List[List[Tuple[int, float]]]:
        """:meth:`query` for each row of an (n, num_perm) values matrix."""
        p = self.params
        return [self.query(s, k) for s in _rows(p, values, "Forest.query_batch")]

    def remove(self, id: int) -> None:
        """Remove ``id``; NotFound when absent."""
        i = _id(id)
        with self._lock.write:
            check(_fn("simlsh_forest_remove")(self._h, i), "Forest.remove %r" % (id,))

    def __len__(self) -> int:
        n = ctypes.c_size_t()
        with self._lock.read:
            check(_fn("simlsh_forest_count")(ctypes.byref(n), self._h), "len")
        return n.value

    def query(self, sig: Signature, k: int) -> List[Tuple[int, float]]:
        """The (at most) ``k`` most similar ids with their estimated Jaccard,
        best first, ties by id."""
        sig = _sig(sig, "Forest.query")
        if k < 1:
            raise InvalidArgument("Forest.query: k must be at least 1, not %d" % k)
        res = _Results()
        with hold(read=(self, sig)):
            check(_fn("simlsh_forest_query_topk")(res._h, self._h, sig._h, k), "Forest.query")
        a, _, s = res.columns()
        return list(zip(a.tolist(), s.tolist()))

    def to_bytes(self) -> bytes:
        """The forest in the format of docs/format-forest.md."""
        with self._lock.read:
            return _save(_fn("simlsh_forest_save"), self._h, "Forest save")

    @classmethod
    def from_bytes(cls, data: Any) -> "Forest":
        """Rebuild from :meth:`to_bytes`; bad bytes raise Corrupt."""
        buf, n = as_bytes(data)
        h = _out()
        check(_fn("simlsh_forest_load")(ctypes.byref(h), buf, n, None), "Forest load")
        f = cls.__new__(cls)
        f._h = h
        return f

    def __reduce__(self) -> Tuple[Any, ...]:
        return (Forest.from_bytes, (self.to_bytes(),))

    def __repr__(self) -> str:
        return "<simlsh.Forest of %d documents>" % len(self)


class Ensemble(_Handle):
    """An LSH Ensemble: which indexed sets contain at least a fraction t of
    a query set (``simlsh_ensemble``), t chosen per query. Each set is
    inserted with its exact size (number of distinct elements). Ids are
    ints in 0 .. 2^64-1.

    Threads: as :class:`Forest`: insert and remove are exclusive, queries,
    len, saving and pickling run concurrently with each other.
    """

    __slots__ = ()
    _free = _F["simlsh_ensemble_free"]

    def __init__(self, params: Optional[Params] = None) -> None:
        h, params = _out(), _params_arg(params)
        with params._lock.read:
            check(_fn("simlsh_ensemble_new")(ctypes.byref(h), params._h), "Ensemble")
        self._h = h

    @property
    def params(self) -> Params:
        """The contract, with bands and rows set to the trees and depth."""
        h = _out()
        with self._lock.read:
            check(_fn("simlsh_ensemble_params")(ctypes.byref(h), self._h), "params")
        return Params._wrap(h)

    def insert(self, id: int, sig: Signature, size: int) -> None:
        """Insert ``sig`` of a set of ``size`` (>= 1) distinct elements."""
        i, sig = _id(id), _sig(sig, "Ensemble.insert")
        if operator.index(size) < 1:
            raise InvalidArgument("Ensemble.insert: size must be at least 1, not %d" % size)
        with hold(write=(self,), read=(sig,)):
            check(_fn("simlsh_ensemble_insert")(self._h, i, sig._h, size),
                  "Ensemble.insert %r" % (id,))

    def insert_batch(self, ids: Any, values: Any, sizes: Any) -> None:
        """Insert row j of an (n, num_perm) values matrix under ids[j], for
        a set of sizes[j] elements. All or nothing, as Forest.insert_batch."""
        with self._lock.write:
            _batch(self, ids, values, sizes, "Ensemble.insert_batch")

    def query_batch(self, values: Any, sizes: Any, threshold: float,
                    verify: bool = False) -> List[List[Tuple[int, float]]]:
        """:meth:`query` for each row of an (n, num_perm) values matrix, with
        the query sets' sizes."""
        p = self.params
        sigs = _rows(p, values, "Ensemble.query_batch")
        sizes = _sizes(sizes, len(sigs), "Ensemble.query_batch")
        return [self.query(s, n, threshold, verify) for s, n in zip(sigs, sizes)]

    def remove(self, id: int) -> None:
        """Remove ``id``; NotFound when absent."""
        i = _id(id)
        with self._lock.write:
            check(_fn("simlsh_ensemble_remove")(self._h, i), "Ensemble.remove %r" % (id,))

    def __len__(self) -> int:
        n = ctypes.c_size_t()
        with self._lock.read:
            check(_fn("simlsh_ensemble_count")(ctypes.byref(n), self._h), "len")
        return n.value

    def query(self, sig: Signature, size: int, threshold: float,
              verify: bool = False) -> List[Tuple[int, float]]:
        """Ids of sets likely to contain at least ``threshold`` (in (0, 1])
        of the query set (signature ``sig``, ``size`` distinct elements),
        with the estimated containment, in id order. ``verify`` keeps only
        those whose estimate reaches the threshold."""
        sig = _sig(sig, "Ensemble.query")
        if operator.index(size) < 1:
            raise InvalidArgument("Ensemble.query: size must be at least 1, not %d" % size)
        if not 0.0 < threshold <= 1.0:
            raise InvalidArgument("Ensemble.query: threshold must be in (0, 1], not %r"
                                  % (threshold,))
        res = _Results()
        with hold(read=(self, sig)):
            check(_fn("simlsh_ensemble_query")(res._h, self._h, sig._h, size, threshold,
                                               QUERY_VERIFY if verify else 0),
                  "Ensemble.query")
        a, _, s = res.columns()
        return list(zip(a.tolist(), s.tolist()))

    def to_bytes(self) -> bytes:
        """The ensemble in the format of docs/format-forest.md."""
        with self._lock.read:
            return _save(_fn("simlsh_ensemble_save"), self._h, "Ensemble save")

    @classmethod
    def from_bytes(cls, data: Any) -> "Ensemble":
        """Rebuild from :meth:`to_bytes`; bad bytes raise Corrupt."""
        buf, n = as_bytes(data)
        h = _out()
        check(_fn("simlsh_ensemble_load")(ctypes.byref(h), buf, n, None), "Ensemble load")
        e = cls.__new__(cls)
        e._h = h
        return e

    def __reduce__(self) -> Tuple[Any, ...]:
        return (Ensemble.from_bytes, (self.to_bytes(),))

    def __repr__(self) -> str:
        return "<simlsh.Ensemble of %d sets>" % len(self)
