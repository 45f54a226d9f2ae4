"""Params, shingle sets, signatures and the LSH index over libsimlsh handles."""

from __future__ import annotations

import ctypes
import enum
import operator
import os
import struct
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union, overload

import numpy as np

from . import _lib
from ._lib import AlreadyExists, InvalidArgument, NotFound, check, lib
from ._rwlock import RWLock, hold

Text = Union[str, bytes, bytearray, memoryview]

# Batch calls of a later library (lib/batch.c); None when the loaded one lacks
# them, and the package then loops over the one-document calls.
_P, _SZ, _U32 = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint32
_sign_batch_c = _lib.optional("simlsh_sign_batch", ctypes.c_int,
                              [_P, _P, _P, _P, _P, _SZ, _U32])
_band_keys_batch_c = _lib.optional("simlsh_band_keys_batch", ctypes.c_int, [_P, _P, _P, _SZ])
_insert_values_c = _lib.optional("simlsh_index_insert_values", ctypes.c_int,
                                 [_P, _P, _P, _SZ, _U32])
# Copy, merge and the per-call threshold of a later library (issue 13).
_copy_c = _lib.optional("simlsh_index_copy", ctypes.c_int, [ctypes.POINTER(_P), _P])
_merge_c = _lib.optional("simlsh_index_merge", ctypes.c_int, [_P, _P])
_query_ids = lib.simlsh_index_query_ids
_tls = threading.local()  # per thread: Index.query's id buffer
_query_v2_c = _lib.optional("simlsh_index_query_v2", ctypes.c_int,
                            [_P, _P, _P, ctypes.c_int, ctypes.c_double])
_query_batch_v2_c = _lib.optional("simlsh_index_query_batch_v2", ctypes.c_int,
                                  [_P, _P, _P, _SZ, ctypes.c_int, ctypes.c_double])
# A batch of queries from a values matrix (SIMLSH_0.3, issue 28).
_query_values_c = _lib.optional("simlsh_index_query_values", ctypes.c_int,
                                [_P, _P, _P, _SZ, _SZ, _SZ, ctypes.c_int, ctypes.c_double])


def _needs(fn: Any, name: str) -> Any:
    if fn is None:
        raise NotImplementedError("%s needs a libsimlsh with %s" % (name, name))
    return fn


Key = Union[str, int]

# ---- constants (include/simlsh.h; the ABI freezes them) -------------------------



class Unit(enum.IntEnum):
    """Params ``unit``: what a shingle is k of (``SIMLSH_UNIT_*``)."""

    BYTE = 0
    CHAR = 1
    WORD = 2


class Utf8Policy(enum.IntEnum):
    """Params ``utf8_policy``: what invalid UTF-8 does (``SIMLSH_UTF8_*``)."""

    REPLACE = 0
    REJECT = 1


class Scheme(enum.IntEnum):
    """Params ``scheme``: one-permutation hashing or classic MinHash."""

    OPH = 0
    CLASSIC = 1


class Isa(enum.IntEnum):
    """Params ``isa``: which instruction set signs (never changes the bits)."""

    AUTO = 0
    SCALAR = 1
    AVX2 = 2
    AVX512 = 3


class Normalize(enum.IntFlag):
    """Params ``normalize`` flags (``SIMLSH_NORM_*``)."""

    LOWER = 1
    SPACE = 2
    PUNCT = 4
    CASEFOLD = 8
    NFKC = 16


UNIT_BYTE, UNIT_CHAR, UNIT_WORD = Unit.BYTE, Unit.CHAR, Unit.WORD
NORM_LOWER_ASCII, NORM_COLLAPSE_SPACE, NORM_STRIP_PUNCT = (Normalize.LOWER, Normalize.SPACE,
                                                           Normalize.PUNCT)
NORM_CASEFOLD, NORM_NFKC = Normalize.CASEFOLD, Normalize.NFKC
UTF8_REPLACE, UTF8_REJECT = Utf8Policy.REPLACE, Utf8Policy.REJECT
SCHEME_OPH, SCHEME_CLASSIC = Scheme.OPH, Scheme.CLASSIC
ISA_AUTO, ISA_SCALAR, ISA_AVX2, ISA_AVX512 = Isa.AUTO, Isa.SCALAR, Isa.AVX2, Isa.AVX512
SCOPE_SHINGLES, SCOPE_SIGNATURE, SCOPE_INDEX = 0, 1, 2
QUERY_VERIFY = 1
EMPTY_VALUE = 0xFFFFFFFF

# Names accepted for enumerated keys: those of simlsh-dedup's options.
_NAMED: Dict[str, Dict[str, int]] = {
    "unit": {"byte": UNIT_BYTE, "char": UNIT_CHAR, "word": UNIT_WORD},
    "utf8_policy": {"replace": UTF8_REPLACE, "reject": UTF8_REJECT},
    "scheme": {"oph": SCHEME_OPH, "classic": SCHEME_CLASSIC},
    "isa": {"auto": ISA_AUTO, "scalar": ISA_SCALAR, "avx2": ISA_AVX2, "avx512": ISA_AVX512},
}
_NORMALIZE = {"none": 0, "lower": NORM_LOWER_ASCII, "space": NORM_COLLAPSE_SPACE,
              "punct": NORM_STRIP_PUNCT, "casefold": NORM_CASEFOLD, "nfkc": NORM_NFKC}
_SCOPES = {"shingles": SCOPE_SHINGLES, "signature": SCOPE_SIGNATURE, "index": SCOPE_INDEX}
_ENUMS: Dict[str, Any] = {"unit": Unit, "utf8_policy": Utf8Policy, "scheme": Scheme,
                          "isa": Isa}


def _discover_keys() -> Tuple[Dict[str, int], Dict[str, bool]]:
    """The library's keys by name, and whether each is a double: read from the
    library itself, so keys of a later version appear without a change here."""
    keys, is_double = {}, {}
    lo, hi = ctypes.c_double(), ctypes.c_double()
    for k in range(1, 64):
        name = lib.simlsh_params_key_name(k)
        if name is None:
            continue
        keys[name.decode()] = k
        is_double[name.decode()] = lib.simlsh_params_double_bounds(
            k, ctypes.byref(lo), ctypes.byref(hi)) == 0
    return keys, is_double


KEYS, _IS_DOUBLE = _discover_keys()


def _out() -> ctypes.c_void_p:
    return ctypes.c_void_p()


def _encode(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        pass
    # Lone surrogates: those of surrogateescape decoding become the bytes
    # they stand for (so text read with errors="surrogateescape" hashes as
    # its file does); any other is encoded as is, invalid UTF-8 that the
    # utf8_policy then replaces or rejects.
    out = bytearray()
    for ch in text:
        o = ord(ch)
        if 0xDC80 <= o <= 0xDCFF:
            out.append(o - 0xDC00)
        else:
            out += ch.encode("utf-8", "surrogatepass")
    return bytes(out)


def as_bytes(text: Any) -> Tuple[Any, int]:
    """(something ctypes passes as a pointer, length) for str or bytes-like."""
    if isinstance(text, bytes):
        return text, len(text)
    if isinstance(text, str):
        b = _encode(text)
        return b, len(b)
    try:
        m = memoryview(text)
    except TypeError:
        raise TypeError("text must be str or bytes-like, not %s" % type(text).__name__) from None
    if m.readonly or not m.c_contiguous:
        b = m.tobytes()
        return b, len(b)
    n = m.nbytes
    if n == 0:
        return b"", 0
    return (ctypes.c_char * n).from_buffer(m), n


def _as_blob(text: Any) -> bytes:
    """``text`` as bytes (a copy for mutable buffers)."""
    if type(text) is bytes:
        return text
    if type(text) is str:
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:
            return _encode(text)
    b, n = as_bytes(text)
    return b if isinstance(b, bytes) else bytes(b)


def _u32(values: Any, what: str) -> np.ndarray:
    if isinstance(values, (str, bytes, bytearray)):
        raise TypeError("%s: values must be an array of integers, not %s"
                        % (what, type(values).__name__))
    try:
        arr = np.asarray(values)
    except ValueError as e:  # ragged rows
        raise InvalidArgument("%s: values must be a rectangular array of integers (%s)"
                              % (what, e)) from None
    if arr.dtype != np.uint32:
        if arr.size and arr.dtype.kind not in "iu":
            raise InvalidArgument("%s: values must be integers in 0 .. 2^32-1, not %s"
                                  % (what, arr.dtype))
        if arr.size and (arr.min() < 0 or arr.max() > 0xFFFFFFFF):
            bad = np.argwhere((arr < 0) | (arr > 0xFFFFFFFF))[0]
            where = ("row %d, column %d" % tuple(bad[:2]) if arr.ndim == 2 else
                     "position %s" % ", ".join(map(str, bad)))
            raise InvalidArgument("%s: values must be integers in 0 .. 2^32-1; %s is %d"
                                  % (what, where, int(arr[tuple(bad)])))
        arr = arr.astype(np.uint32)
    return np.ascontiguousarray(arr)


_ONE_TEXT = (str, bytes, bytearray, memoryview)


def _row_sigs(p: "Params", v: Any, what: str) -> List["Signature"]:
    """Signature.from_values of each row of v (checked for shape by the
    caller); an InvalidArgument names the bad row."""
    sigs = []
    for j, row in enumerate(v):
        try:
            sigs.append(Signature.from_values(p, row))
        except InvalidArgument as e:
            raise InvalidArgument("%s: row %d: %s" % (what, j, e)) from None
    return sigs


def _sequence(items: Any, what: str, of: str = "texts") -> Sequence[Any]:
    """``items`` as a list or tuple; a single text is a TypeError, since
    iterating it would silently give one item per character or byte."""
    if isinstance(items, _ONE_TEXT):
        raise TypeError("%s: expected a sequence of %s, not a single %s (wrap one in a "
                        "list: [x])" % (what, of, type(items).__name__))
    return items if isinstance(items, (list, tuple)) else list(items)


class _Handle:
    """Owns one C handle and the readers-writer lock that guards it
    (_rwlock.py); subclasses name the free function. Every method takes the
    lock around its C calls, shared to read and exclusive to write, so any
    mix of threads is safe (docs/python.md, "Threads")."""

    __slots__ = ("_h", "_lock", "__weakref__")
    _free: Any = None

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        obj = object.__new__(cls)
        obj._lock = RWLock()
        return obj

    def __del__(self) -> None:
        h = getattr(self, "_h", None)
        if h and type(self)._free is not None:
            type(self)._free(h)
            self._h = None


# ---- Params ---------------------------------------------------------------------


def _int_value(key: str, value: Any) -> int:
    if key in _NAMED and isinstance(value, str):
        try:
            return _NAMED[key][value.lower()]
        except KeyError:
            raise InvalidArgument("%s: unknown value %r (one of %s)" % (
                key, value, ", ".join(_NAMED[key]))) from None
    if key == "normalize" and not isinstance(value, int):
        try:
            names = value.split(",") if isinstance(value, str) else list(value)
        except TypeError:
            raise InvalidArgument("normalize: %r is not flags (names such as \"lower,space\","
                                  " a list of names, or an int)" % (value,)) from None
        flags = 0
        for n in names:
            if isinstance(n, Normalize):
                flags |= n
                continue
            if not isinstance(n, str):
                raise InvalidArgument("normalize: %r is not a flag name" % (n,))
            n = n.strip().lower()
            if n not in _NORMALIZE:
                raise InvalidArgument("normalize: unknown flag %r (one of %s)"
                                      % (n, ", ".join(_NORMALIZE)))
            flags |= _NORMALIZE[n]
        return flags
    try:
        return operator.index(value)
    except TypeError:
        raise InvalidArgument("%s: %r is not an integer" % (key, value)) from None


def _typed(key: str, value: Union[int, float]) -> Union[int, float]:
    """A value as read: enumerated keys as their enum (an int that shows its
    name), the others as they are."""
    try:
        if key in _ENUMS:
            return _ENUMS[key](value)  # type: ignore[no-any-return]
        if key == "normalize":
            return Normalize(value)
    except ValueError:  # a value of a later library
        pass
    return value


def _shown(key: str, value: Union[int, float]) -> Any:
    """A value as repr shows it: enumerated keys by the name Params takes."""
    if key in _ENUMS:
        for name, v in _NAMED[key].items():
            if v == value:
                return name
    if key == "normalize":
        names = [n for n, bit in _NORMALIZE.items() if bit and int(value) & bit]
        rest = int(value) & ~sum(_NORMALIZE.values())
        if not rest:
            return ",".join(names) or "none"
    return value


def _allowed(key: str) -> str:
    """The values a key takes, for error messages (from Params.bounds)."""
    if key in _NAMED:
        return "one of " + ", ".join("%r (%d)" % kv for kv in _NAMED[key].items())
    if key == "normalize":
        return ("flags %s, as names joined by commas, a list of names or their sum"
                % ", ".join("%r (%d)" % kv for kv in _NORMALIZE.items() if kv[1]))
    lo, hi = Params.bounds(key)
    if key == "hash_bits":
        return "32 or 64"
    if key == "threshold":
        return "in (%g, %g]" % (lo, hi)
    if key in ("bands", "rows"):
        return "%d .. %d, with bands x rows <= num_perm (0: derived from the threshold)" % (
            lo, hi)
    if _IS_DOUBLE[key]:
        return "in [%g, %g]" % (lo, hi)
    return "%d .. %d" % (lo, hi)


def _in_bounds(key: str, value: Union[int, float]) -> bool:
    lo, hi = Params.bounds(key)
    return (lo < value if key == "threshold" else lo <= value) and value <= hi


class Params(_Handle):
    """The hash contract: how text becomes shingles, signatures and bands.

    Keyword names are the C key names (``simlsh_params_key_name``); a
    keyword left at None keeps the library's default:

    - ``unit``: what a shingle is k of, ``"byte"``, ``"char"`` (default) or
      ``"word"`` (:class:`Unit`);
    - ``k``: shingle length, 1 .. 64 (default 5);
    - ``normalize``: flags applied before shingling, ``"lower"``,
      ``"space"``, ``"punct"``, ``"casefold"``, ``"nfkc"`` joined by
      commas, a list of them, or an int (:class:`Normalize`; default none);
    - ``utf8_policy``: ``"replace"`` (default) or ``"reject"`` invalid UTF-8;
    - ``seed``: hash seed, 0 .. 2^32-1; ``hash_bits``: 32 or 64;
    - ``num_perm``: signature length, 1 .. 1024 (default 128);
    - ``scheme``: ``"oph"`` (one-permutation hashing, default) or
      ``"classic"`` MinHash;
    - ``bands``, ``rows``: the LSH banding, bands x rows <= num_perm; both 0
      (default) derive it from ``threshold`` and the weights;
    - ``store_signatures``: whether an index keeps signatures (needed to
      verify, score and remove), default True;
    - ``isa``: ``"auto"``, ``"scalar"``, ``"avx2"``, ``"avx512"`` (speed only);
    - ``threshold``: Jaccard similarity of a match, in (0, 1] (default 0.8);
    - ``fp_weight``, ``fn_weight``: weights of false positives and false
      negatives when the banding is derived, 0 .. 10^6 (default 0.5 each).

    Reading an enumerated key gives its enum (an int that shows its name);
    ``repr`` shows the names Params takes. A value out of range raises
    InvalidArgument naming the allowed range (:meth:`bounds`); an unknown
    keyword is a TypeError. Keys of a later library are set with
    :meth:`set`. Objects copy their params, so changing params later never
    affects them.

    >>> p = Params(unit="word", k=3, threshold=0.5)
    >>> p.k, p["threshold"]
    (3, 0.5)

    Threads: any mix of threads may share a Params. :meth:`set` is a write
    (exclusive); every other call reads and may run concurrently.
    """

    __slots__ = ()
    _free = lib.simlsh_params_free

    def __init__(self, *, unit: Union[str, int, None] = None, k: Optional[int] = None,
                 normalize: Union[str, Sequence[str], int, None] = None,
                 utf8_policy: Union[str, int, None] = None, seed: Optional[int] = None,
                 hash_bits: Optional[int] = None, num_perm: Optional[int] = None,
                 scheme: Union[str, int, None] = None, bands: Optional[int] = None,
                 rows: Optional[int] = None, store_signatures: Union[bool, int, None] = None,
                 isa: Union[str, int, None] = None, threshold: Optional[float] = None,
                 fp_weight: Optional[float] = None,
                 fn_weight: Optional[float] = None) -> None:
        h = _out()
        check(lib.simlsh_params_new(ctypes.byref(h), None), "Params")
        self._h = h
        self._apply(dict(unit=unit, k=k, normalize=normalize, utf8_policy=utf8_policy,
                         seed=seed, hash_bits=hash_bits, num_perm=num_perm, scheme=scheme,
                         bands=bands, rows=rows, store_signatures=store_signatures, isa=isa,
                         threshold=threshold, fp_weight=fp_weight, fn_weight=fn_weight))

    def _apply(self, values: Dict[str, Any]) -> None:
        for key, value in values.items():
            if value is not None:
                self.set(key, value)

    @classmethod
    def _wrap(cls, h: ctypes.c_void_p) -> "Params":
        p = cls.__new__(cls)
        p._h = h
        return p

    @staticmethod
    def _key(key: str) -> int:
        try:
            return KEYS[key]
        except KeyError:
            raise InvalidArgument("unknown params key %r (keys: %s)"
                                  % (key, ", ".join(KEYS))) from None

    def set(self, key: str, value: Any) -> None:
        """Set one key; out-of-range values raise InvalidArgument (the params
        are then unchanged)."""
        k = self._key(key)
        if _IS_DOUBLE[key]:
            if isinstance(value, (str, bytes)):
                raise InvalidArgument("%s: %r is not a number" % (key, value))
            try:
                v = float(value)
            except (TypeError, ValueError):
                raise InvalidArgument("%s: %r is not a number" % (key, value)) from None
            with self._lock.write:
                rc = lib.simlsh_params_set_double(self._h, k, v)
        else:
            v = _int_value(key, value)  # type: ignore[assignment]
            with self._lock.write:
                rc = lib.simlsh_params_set_int(self._h, k, v)
        if rc == InvalidArgument.code:
            what = "%s=%r" % (key, value)
            if v != v or not _in_bounds(key, v) or key == "hash_bits":
                raise InvalidArgument("%s: out of range: %s must be %s" % (what, key,
                                                                           _allowed(key)))
            raise InvalidArgument("%s: does not go with the other params (%s)%s" % (
                what, ", ".join("%s=%r" % (n, _shown(n, self.get(n)))
                                for n in ("unit", "normalize")),
                ": the byte unit takes no casefold or nfkc normalisation"
                if key in ("unit", "normalize") else ""))
        check(rc, "%s=%r" % (key, value))

    def get(self, key: str) -> Union[int, float]:
        """The value of one key (an int, or a float for double keys)."""
        k = self._key(key)
        if _IS_DOUBLE[key]:
            d = ctypes.c_double()
            with self._lock.read:
                check(lib.simlsh_params_get_double(self._h, k, ctypes.byref(d)), key)
            return d.value
        i = ctypes.c_int64()
        with self._lock.read:
            check(lib.simlsh_params_get_int(self._h, k, ctypes.byref(i)), key)
        return _typed(key, i.value)

    __getitem__ = get

    def __getattr__(self, name: str) -> Union[int, float]:
        if name in KEYS:
            return self.get(name)
        raise AttributeError(name)

    def to_dict(self) -> Dict[str, Union[int, float]]:
        """Every key and its value (one consistent snapshot)."""
        with self._lock.read:
            return {name: self.get(name) for name in KEYS}

    def copy(self) -> "Params":
        """An independent copy."""
        h = _out()
        with self._lock.read:
            check(lib.simlsh_params_copy(ctypes.byref(h), self._h), "Params.copy")
        return Params._wrap(h)

    __copy__ = copy

    def __deepcopy__(self, memo: Any) -> "Params":
        return self.copy()

    def replace(self, *, unit: Union[str, int, None] = None, k: Optional[int] = None,
                normalize: Union[str, Sequence[str], int, None] = None,
                utf8_policy: Union[str, int, None] = None, seed: Optional[int] = None,
                hash_bits: Optional[int] = None, num_perm: Optional[int] = None,
                scheme: Union[str, int, None] = None, bands: Optional[int] = None,
                rows: Optional[int] = None, store_signatures: Union[bool, int, None] = None,
                isa: Union[str, int, None] = None, threshold: Optional[float] = None,
                fp_weight: Optional[float] = None,
                fn_weight: Optional[float] = None) -> "Params":
        """A copy with the keys given (not None) changed; as the constructor."""
        p = self.copy()
        p._apply(dict(unit=unit, k=k, normalize=normalize, utf8_policy=utf8_policy,
                      seed=seed, hash_bits=hash_bits, num_perm=num_perm, scheme=scheme,
                      bands=bands, rows=rows, store_signatures=store_signatures, isa=isa,
                      threshold=threshold, fp_weight=fp_weight, fn_weight=fn_weight))
        return p

    def fingerprint(self, scope: str = "index") -> int:
        """The 64-bit contract fingerprint of ``scope`` ("shingles",
        "signature" or "index"); objects with different ones never mix."""
        try:
            s = _SCOPES[scope]
        except KeyError:
            raise InvalidArgument("scope must be one of %s" % ", ".join(_SCOPES)) from None
        out = ctypes.c_uint64()
        with self._lock.read:
            check(lib.simlsh_params_fingerprint(ctypes.byref(out), self._h, s), "fingerprint")
        return out.value

    def bands_rows(self) -> Tuple[int, int]:
        """(bands, rows) an index built with these params uses."""
        ix = Index(self)
        return ix.bands, ix.rows

    @staticmethod
    def bounds(key: str) -> Tuple[Union[int, float], Union[int, float]]:
        """Allowed (min, max) of a key (threshold's min is exclusive)."""
        k = Params._key(key)
        if _IS_DOUBLE[key]:
            lo, hi = ctypes.c_double(), ctypes.c_double()
            check(lib.simlsh_params_double_bounds(k, ctypes.byref(lo), ctypes.byref(hi)))
        else:
            lo, hi = ctypes.c_int64(), ctypes.c_int64()  # type: ignore[assignment]
            check(lib.simlsh_params_int_bounds(k, ctypes.byref(lo), ctypes.byref(hi)))
        return lo.value, hi.value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Params):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        """Every key, enumerated ones by name: ``Params(unit='char', k=5,
        normalize='none', ...)``, which evaluates to equal params."""
        return "Params(%s)" % ", ".join("%s=%r" % (k, _shown(k, v))
                                        for k, v in self.to_dict().items())

    def __reduce__(self) -> Tuple[Any, ...]:
        return (_params_from_dict, (self.to_dict(),))


def _params_from_dict(d: Dict[str, Any]) -> Params:
    p = Params()
    # bands and rows last: they are checked against num_perm
    for key in sorted(d, key=lambda k: k in ("bands", "rows")):
        p.set(key, int(d[key]) if isinstance(d[key], enum.Enum) else d[key])
    return p


def _params_arg(params: Optional[Params]) -> Params:
    if params is None:
        return Params()
    if not isinstance(params, Params):
        raise TypeError("params must be simlsh.Params, not %s" % type(params).__name__)
    return params


def _save(fn: Any, h: Any, what: str) -> bytes:
    size = ctypes.c_size_t()
    check(fn(None, 0, ctypes.byref(size), h), what)
    buf = ctypes.create_string_buffer(size.value)
    check(fn(buf, size.value, ctypes.byref(size), h), what)
    return buf.raw[:size.value]


# ---- ShingleSet ------------------------------------------------------------------


class ShingleSet(_Handle):
    """The exact set of hashed k-shingles of a document (for exact Jaccard).

    ``text`` is ``str`` (always encoded UTF-8) or bytes-like; more text can be
    added with :meth:`update` (each call is one document: shingles never span
    two calls).

    Threads: any mix of threads may share a ShingleSet. :meth:`update` and
    :meth:`update_features` are writes (exclusive); every other call reads
    and may run concurrently.
    """

    __slots__ = ()
    _free = lib.simlsh_shingleset_free

    def __init__(self, params: Optional[Params] = None, text: Optional[Text] = None) -> None:
        h, params = _out(), _params_arg(params)  # params live until the call returns
        with params._lock.read:
            check(lib.simlsh_shingleset_new(ctypes.byref(h), params._h), "ShingleSet")
        self._h = h
        if text is not None:
            self.update(text)

    @classmethod
    def _wrap(cls, h: ctypes.c_void_p) -> "ShingleSet":
        s = cls.__new__(cls)
        s._h = h
        return s

    def update(self, text: Text) -> "ShingleSet":
        """Add the shingles of one document; returns self."""
        buf, n = as_bytes(text)
        with self._lock.write:
            check(lib.simlsh_shingleset_add_text(self._h, buf, n), "ShingleSet.update")
        return self

    def update_features(self, features: Any) -> "ShingleSet":
        """Add raw 64-bit features (see simlsh_hash_bytes)."""
        f = np.ascontiguousarray(features, dtype=np.uint64)
        with self._lock.write:
            check(lib.simlsh_shingleset_add_features(self._h, f.ctypes.data, f.size),
                  "features")
        return self

    def __len__(self) -> int:
        n = ctypes.c_size_t()
        with self._lock.read:
            check(lib.simlsh_shingleset_count(ctypes.byref(n), self._h), "ShingleSet")
        return n.value

    @property
    def hashes(self) -> np.ndarray:
        """The distinct shingle hashes, sorted (uint64)."""
        n = ctypes.c_size_t()
        with self._lock.read:
            check(lib.simlsh_shingleset_hashes(None, 0, ctypes.byref(n), self._h), "hashes")
            out = np.empty(n.value, dtype=np.uint64)
            check(lib.simlsh_shingleset_hashes(out.ctypes.data, out.size, ctypes.byref(n),
                                               self._h), "hashes")
        return out

    def jaccard(self, other: "ShingleSet") -> float:
        """Exact Jaccard similarity |A & B| / |A | B| (two empty sets give 1)."""
        d = ctypes.c_double()
        with hold(read=(self, other)):
            check(lib.simlsh_shingleset_jaccard(ctypes.byref(d), self._h, other._h), "jaccard")
        return d.value

    def containment(self, other: "ShingleSet") -> float:
        """|A & B| / |A|: how much of this set is in ``other``."""
        d = ctypes.c_double()
        with hold(read=(self, other)):
            check(lib.simlsh_shingleset_containment(ctypes.byref(d), self._h, other._h),
                  "containment")
        return d.value

    @property
    def params(self) -> Params:
        """A copy of the set's contract (a new Params)."""
        h = _out()
        with self._lock.read:
            check(lib.simlsh_shingleset_params(ctypes.byref(h), self._h), "params")
        return Params._wrap(h)

    def copy(self) -> "ShingleSet":
        """An independent copy."""
        h = _out()
        with self._lock.read:
            check(lib.simlsh_shingleset_copy(ctypes.byref(h), self._h), "copy")
        return ShingleSet._wrap(h)

    __copy__ = copy

    def __deepcopy__(self, memo: Any) -> "ShingleSet":
        return self.copy()

    def __bytes__(self) -> bytes:
        with self._lock.read:
            return _save(lib.simlsh_shingleset_save, self._h, "ShingleSet save")

    @classmethod
    def load(cls, data: Any) -> "ShingleSet":
        """Rebuild from ``bytes(set)`` (the stable format, docs/format.md)."""
        buf, n = as_bytes(data)
        h = _out()
        check(lib.simlsh_shingleset_load(ctypes.byref(h), buf, n, None), "ShingleSet.load")
        return cls._wrap(h)

    def __reduce__(self) -> Tuple[Any, ...]:
        return (ShingleSet.load, (bytes(self),))

    def __repr__(self) -> str:
        return "<simlsh.ShingleSet of %d shingles>" % len(self)


# ---- Signature -------------------------------------------------------------------


class _SigHandle(ctypes.c_void_p):
    """One C signature handle, freed when the last reference goes.

    A Signature is copy-on-write: its writes build a new C signature and
    swap it in, and never change one that a reader may be using. A reader
    takes ``h = sig._h`` once and uses ``h`` for the whole call; the old
    handle lives while any reader holds it. So queries and inserts read a
    signature without taking its lock (which would cost more than a small
    query, all of it with the GIL held)."""

    __slots__ = ()
    _free = lib.simlsh_signature_free  # bound here: module globals may be gone at exit

    def __del__(self) -> None:
        if self.value:
            type(self)._free(self)
            self.value = None


def _sig_handle(h: ctypes.c_void_p) -> _SigHandle:
    return _SigHandle(h.value)


def _scratch(old: Any, what: str) -> _SigHandle:
    """A private C signature of old's params, for _with_text."""
    h = _out()
    check(lib.simlsh_signature_copy(ctypes.byref(h), old), what)
    return _sig_handle(h)


def _with_text(s: Any, old: Any, buf: Any, n: int, what: str) -> _SigHandle:
    """A new C signature: ``old`` with one document added (copy-on-write).

    The text is added in ``s``, a scratch signature of old's params that no
    reader sees, and the result copied out: a C signature builds its
    shingler and hash coefficients (tens of kB) at its first document and
    keeps them, so adding to a fresh copy each time would pay that again,
    and leave every copy holding them."""
    lib.simlsh_signature_clear(s)
    if not lib.simlsh_signature_is_empty(old):
        check(lib.simlsh_signature_merge(s, old), what)  # old's state, exactly
    check(lib.simlsh_signature_add_text(s, buf, n), what)
    h = _out()
    check(lib.simlsh_signature_copy(ctypes.byref(h), s), what)
    return _sig_handle(h)


def _token_hashes(p: "Params", toks: Sequence[Any], what: str) -> np.ndarray:
    """Each token (str, encoded UTF-8, or bytes-like) hashed with p's hash
    (hash_bytes), as uint64: update_tokens and simlsh.datasketch's MinHash."""
    out = np.empty(len(toks), dtype=np.uint64)
    hb, ph = lib.simlsh_hash_bytes, p._h
    cell = ctypes.c_uint64()
    pcell = ctypes.byref(cell)
    for j, t in enumerate(toks):
        try:
            buf, n = as_bytes(t)
        except TypeError:
            raise TypeError("%s: token %d must be str or bytes-like, not %s"
                            % (what, j, type(t).__name__)) from None
        check(hb(pcell, ph, buf, n), "%s: token %d" % (what, j))
        out[j] = cell.value
    return out


def _sig_values(h: Any) -> np.ndarray:
    """The num_perm values of C signature h (densified for OPH), as a new
    uint32 array."""
    n = ctypes.c_size_t()
    out = np.empty(check(lib.simlsh_signature_num_perm(h)), dtype=np.uint32)
    check(lib.simlsh_signature_values(out.ctypes.data, out.size, ctypes.byref(n), h), "values")
    return out


def _forked(h: Any, fn: Any, *args: Any, what: str) -> _SigHandle:
    """A new C signature: a copy of h changed by ``fn(copy, *args)``
    (copy-on-write: h itself is never changed; the writes of Signature and
    simlsh.datasketch.MinHash build one and swap it in)."""
    out = _out()
    check(lib.simlsh_signature_copy(ctypes.byref(out), h), what)
    new = _sig_handle(out)
    check(fn(new, *args), what)
    return new


class Signature(_Handle):
    """A MinHash signature of one or more documents.

    ``text`` is ``str`` (always encoded UTF-8) or bytes-like. Each
    :meth:`update` adds one document (the signature becomes that of the union
    of the shingle sets). A signature to which nothing was added, or only
    documents with nothing to shingle, is *empty*.

    ``bytes(sig)`` and :meth:`load` use the stable format of
    ``simlsh_signature_save``; pickling goes through it too.

    Threads: any mix of threads may share a Signature. The ``update*``
    methods, :meth:`merge` and :meth:`clear` are writes (exclusive); every
    other call, inserting it into an index and querying with it included,
    reads and may run concurrently. Writes are copy-on-write (they swap in
    a new C signature), so readers that take no lock still see one whole
    state: queries and inserts read a signature without its lock.
    """

    __slots__ = ("_work",)
    _free = None  # the _SigHandle frees itself

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        s = _Handle.__new__(cls)
        s._work = None  # the private signature update() adds text in
        return s

    def __init__(self, params: Optional[Params] = None, text: Optional[Text] = None) -> None:
        h, params = _out(), _params_arg(params)  # params live until the call returns
        with params._lock.read:
            check(lib.simlsh_signature_new(ctypes.byref(h), params._h), "Signature")
        self._h = _sig_handle(h)
        if text is not None:
            self.update(text)

    @classmethod
    def _wrap(cls, h: ctypes.c_void_p) -> "Signature":
        s = cls.__new__(cls)
        s._h = _sig_handle(h)
        return s

    def _set_values(self, values: np.ndarray) -> None:
        """Become the signature of these values, of the same contract (as
        from_values; simlsh.datasketch's scheme="datasketch")."""
        v = _u32(values, "values")
        with self._lock.write:
            p = self.params
            h = _out()
            check(lib.simlsh_signature_from_values(ctypes.byref(h), p._h, v.ctypes.data,
                                                   v.size), "values")
            self._h = _sig_handle(h)

    @classmethod
    def from_values(cls, params: Params, values: Any) -> "Signature":
        """The signature whose :attr:`values` are ``values`` (num_perm
        integers below 2^32-1, or all 2^32-1 for the empty signature).
        :meth:`merge` of such signatures takes the element-wise minimum of
        their values (``simlsh_signature_from_values``)."""
        v = _u32(values, "from_values")
        if v.ndim != 1:
            raise InvalidArgument("from_values: values must be one-dimensional, not of "
                                  "shape %s" % (v.shape,))
        h, params = _out(), _params_arg(params)  # params live until the call returns
        with params._lock.read:
            rc = lib.simlsh_signature_from_values(ctypes.byref(h), params._h,
                                                  v.ctypes.data, v.size)
            if rc == InvalidArgument.code:
                num_perm = params.get("num_perm")
                if v.size != num_perm:
                    raise InvalidArgument("from_values: %d values; expected num_perm = %d"
                                          % (v.size, num_perm))
                raise InvalidArgument("from_values: values must be all below 2^32-1, or "
                                      "all 2^32-1 (the empty signature)")
            check(rc, "from_values")
        return cls._wrap(h)

    def update(self, text: Text) -> "Signature":
        """Add one whole document: its text is normalised and cut into
        k-shingles, and every shingle is added; returns self. This is not
        datasketch's ``MinHash.update`` (which adds one token): for tokens
        use :meth:`update_tokens` (or ``simlsh.datasketch.MinHash``). Same
        as :meth:`update_text`. With ``utf8_policy="reject"``, invalid UTF-8
        raises InvalidUTF8 and changes nothing."""
        if isinstance(text, (list, tuple)):
            raise TypeError("Signature.update: one document's text (str or bytes-like), "
                            "not %s; for tokens use update_tokens" % type(text).__name__)
        buf, n = as_bytes(text)
        with self._lock.write:
            old = self._h
            work = self._work
            if work is None:
                work = self._work = _scratch(old, "Signature.update")
            self._h = _with_text(work, old, buf, n, "Signature.update")
        return self

    def update_text(self, text: Text) -> "Signature":
        """Add one whole document's shingles (the same as :meth:`update`,
        under a name that says so); returns self."""
        return self.update(text)

    def update_tokens(self, tokens: Sequence[Text]) -> "Signature":
        """Add each token as one set element, as it is: no normalisation, no
        shingling (datasketch's ``update``, one call for many tokens).
        Each token (str, encoded UTF-8, or bytes-like) is hashed with the
        params' hash (:func:`hash_bytes`) and added as a feature, so equal
        token sets give equal signatures. A single str is a TypeError (it
        would be one token per character); returns self."""
        toks = _sequence(tokens, "update_tokens", "tokens")
        out = _token_hashes(self.params, toks, "update_tokens")
        return self.update_features(out)

    def update_features(self, features: Any) -> "Signature":
        """Add raw 64-bit features (hashes you made, e.g. with
        :func:`hash_bytes`), as ShingleSet.update_features; returns self."""
        if isinstance(features, _ONE_TEXT):
            raise TypeError("update_features: 64-bit integers, not %s; for text use "
                            "update_text, for tokens update_tokens" % type(features).__name__)
        f = np.ascontiguousarray(features, dtype=np.uint64)
        with self._lock.write:
            self._h = _forked(self._h, lib.simlsh_signature_add_features, f.ctypes.data, f.size,
                              what="features")
        return self

    def update_shingles(self, shingles: ShingleSet) -> "Signature":
        """Add every shingle of a ShingleSet made with the same contract."""
        with hold(write=(self,), read=(shingles,)):
            self._h = _forked(self._h, lib.simlsh_signature_add_shingleset, shingles._h,
                              what="update_shingles")
        return self

    def merge(self, other: "Signature") -> "Signature":
        """Become the signature of the union with ``other``; returns self."""
        with self._lock.write:
            self._h = _forked(self._h, lib.simlsh_signature_merge, other._h, what="merge")
        return self

    def clear(self) -> "Signature":
        """Back to the empty signature; returns self."""
        with self._lock.write:
            self._h = _forked(self._h, lib.simlsh_signature_clear, what="clear")
        return self

    def jaccard(self, other: "Signature") -> float:
        """Estimated Jaccard similarity: the fraction of equal values."""
        # Reads of a signature take one handle, one whole state (the
        # writes are copy-on-write), and no lock.
        d = ctypes.c_double()
        check(lib.simlsh_signature_jaccard(ctypes.byref(d), self._h, other._h), "jaccard")
        return d.value

    @property
    def num_perm(self) -> int:
        """The number of values (the params' num_perm)."""
        return check(lib.simlsh_signature_num_perm(self._h))

    @property
    def empty(self) -> bool:
        """True when nothing was added (all values 2^32-1)."""
        return check(lib.simlsh_signature_is_empty(self._h)) == 1

    @property
    def values(self) -> np.ndarray:
        """The num_perm values (densified for OPH) as a new uint32 array."""
        return _sig_values(self._h)

    def band_keys(self, bands: Optional[int] = None, rows: Optional[int] = None) -> np.ndarray:
        """The 64-bit band keys the index buckets on (uint64, one per band).
        Without arguments, the bands and rows an index with this signature's
        params would use. An empty signature raises EmptyInput."""
        if bands is None or rows is None:
            b, r = self.params.bands_rows()
            bands = b if bands is None else bands
            rows = r if rows is None else rows
        if bands < 1 or rows < 1:
            raise InvalidArgument("band_keys: bands and rows must be at least 1")
        out = np.empty(bands, dtype=np.uint64)
        with self._lock.read:
            check(lib.simlsh_signature_band_keys(out.ctypes.data, out.size, self._h, bands,
                                                 rows), "band_keys")
        return out

    @property
    def params(self) -> Params:
        """A copy of the signature's contract (a new Params)."""
        h = _out()
        with self._lock.read:
            check(lib.simlsh_signature_params(ctypes.byref(h), self._h), "params")
        return Params._wrap(h)

    @property
    def fingerprint(self) -> int:
        """The 64-bit contract fingerprint of the signature scope: signatures
        with different ones never compare or mix (ContractMismatch)."""
        out = ctypes.c_uint64()
        with self._lock.read:
            check(lib.simlsh_signature_fingerprint(ctypes.byref(out), self._h), "fingerprint")
        return out.value

    def copy(self) -> "Signature":
        """An independent copy."""
        h = _out()
        check(lib.simlsh_signature_copy(ctypes.byref(h), self._h), "copy")
        return Signature._wrap(h)

    __copy__ = copy

    def __deepcopy__(self, memo: Any) -> "Signature":
        return self.copy()

    def __bytes__(self) -> bytes:
        with self._lock.read:
            return _save(lib.simlsh_signature_save, self._h, "Signature save")

    @classmethod
    def load(cls, data: Any) -> "Signature":
        """Rebuild from ``bytes(sig)``; bad bytes raise Corrupt."""
        buf, n = as_bytes(data)
        h = _out()
        check(lib.simlsh_signature_load(ctypes.byref(h), buf, n, None), "Signature.load")
        return cls._wrap(h)

    def __reduce__(self) -> Tuple[Any, ...]:
        return (Signature.load, (bytes(self),))

    def __eq__(self, other: object) -> bool:
        """Same contract, same values (and both empty or both not)."""
        if not isinstance(other, Signature):
            return NotImplemented
        with hold(read=(self, other)):
            return (self.fingerprint == other.fingerprint and self.empty == other.empty
                    and bool(np.array_equal(self.values, other.values)))

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        with self._lock.read:
            return "<simlsh.Signature num_perm=%d%s>" % (self.num_perm,
                                                          " empty" if self.empty else "")


def _threads(threads: int) -> int:
    if threads < 0:
        raise InvalidArgument("threads must be >= 0")
    return threads or (os.cpu_count() or 1)


def sign_batch(texts: Sequence[Text], params: Optional[Params] = None, threads: int = 0,
               invalid: str = "raise") -> np.ndarray:
    """Sign many documents: an (n, num_perm) uint32 array, row i the values
    of ``Signature(params, texts[i])`` (all 2^32-1, an empty row, for a
    document with nothing to shingle). ``threads`` 0 means one per CPU. The
    GIL is released while the library signs.

    With ``utf8_policy="reject"``, a document that is not valid UTF-8 raises
    InvalidUTF8 (``invalid="raise"``) or gives an empty row
    (``invalid="empty"``)."""
    if invalid not in ("raise", "empty"):
        raise InvalidArgument('sign_batch: invalid must be "raise" or "empty"')
    # A private copy: another thread may change the caller's params, and the
    # workers below must not wait for its lock while this thread holds it.
    params = _params_arg(params).copy()
    texts = _sequence(texts, "sign_batch")
    n, P_ = len(texts), params.get("num_perm")
    out = np.empty((n, P_), dtype=np.uint32)
    if n == 0:
        return out
    nt = _threads(threads)
    if _sign_batch_c is not None:
        # One buffer and two numpy arrays instead of a ctypes object per
        # document: the per-document cost stays far below the signing's.
        try:
            blobs = [_as_blob(t) for t in texts]
        except TypeError:
            for i, t in enumerate(texts):
                if not isinstance(t, _ONE_TEXT):
                    raise TypeError("sign_batch: document %d: text must be str or "
                                    "bytes-like, not %s" % (i, type(t).__name__)) from None
            raise
        lens = np.fromiter(map(len, blobs), dtype=np.uintp, count=n)
        blob = b"".join(blobs)
        offs = np.zeros(n, dtype=np.uintp)
        np.cumsum(lens[:-1], out=offs[1:])
        ptrs = offs + np.uintp(ctypes.cast(ctypes.c_char_p(blob), ctypes.c_void_p).value or 0)
        rc = _sign_batch_c(out.ctypes.data, None, params._h, ptrs.ctypes.data,
                           lens.ctypes.data, n, nt)
        if rc == 0:
            return out
        if rc != _lib.InvalidUTF8.code:
            check(rc, "sign_batch")
        # some document is invalid: find which, one by one, below (to name
        # it in the error, or to give it an empty row)
    bufs = [as_bytes(t) for t in texts]
    nt = min(nt, max(1, n // 64))
    base = out.ctypes.data
    row_bytes = P_ * 4
    utf8 = _lib.InvalidUTF8.code

    def work(lo: int, hi: int) -> None:
        sig = Signature(params)
        h = sig._h
        cnt = ctypes.c_size_t()
        pcnt = ctypes.byref(cnt)
        add, values, clear = (lib.simlsh_signature_add_text, lib.simlsh_signature_values,
                              lib.simlsh_signature_clear)
        for i in range(lo, hi):
            buf, m = bufs[i]
            clear(h)
            rc = add(h, buf, m)
            if rc:
                if not (rc == utf8 and invalid == "empty"):
                    check(rc, "sign_batch: document %d" % i)
            values(base + i * row_bytes, P_, pcnt, h)

    if nt == 1:
        work(0, n)
    else:
        step = (n + nt - 1) // nt
        with ThreadPoolExecutor(nt) as ex:
            for f in [ex.submit(work, lo, min(n, lo + step)) for lo in range(0, n, step)]:
                f.result()
    return out


def empty_rows(values: np.ndarray) -> np.ndarray:
    """Boolean mask of the rows of a values matrix that are empty signatures."""
    v = np.asarray(values)
    return v[:, 0] == EMPTY_VALUE if v.shape[1] else np.ones(len(v), dtype=bool)


def band_keys(values: Any, params: Optional[Params] = None, bands: Optional[int] = None,
              rows: Optional[int] = None) -> np.ndarray:
    """Band keys of every row of an (n, num_perm) values matrix: an
    (n, bands) uint64 array, row i equal to
    ``Signature.from_values(params, values[i]).band_keys(bands, rows)``.
    Bands and rows default to the params' (as an index would resolve them).
    An empty row raises EmptyInput; drop them first with :func:`empty_rows`."""
    params = _params_arg(params).copy()  # private: no lock needed below
    v = _u32(values, "band_keys")
    if v.ndim != 2:
        raise InvalidArgument("band_keys: values must be an (n, num_perm) matrix")
    if bands is None or rows is None:
        b, r = params.bands_rows()
        bands = b if bands is None else bands
        rows = r if rows is None else rows
    out = np.empty((len(v), bands), dtype=np.uint64)
    if len(v) and empty_rows(v).any():
        raise _lib.EmptyInput("band_keys: row %d is an empty signature"
                              % int(np.nonzero(empty_rows(v))[0][0]))
    if v.shape[1] != params.get("num_perm"):
        raise InvalidArgument("band_keys: rows of %d values for num_perm %d"
                              % (v.shape[1], params.get("num_perm")))
    if _band_keys_batch_c is not None and (bands, rows) == params.bands_rows():
        check(_band_keys_batch_c(out.ctypes.data, params._h, v.ctypes.data, len(v)),
              "band_keys")
        return out
    sig = _out()
    fv, bk, free = (lib.simlsh_signature_from_values, lib.simlsh_signature_band_keys,
                    lib.simlsh_signature_free)
    base, stride = out.ctypes.data, bands * 8
    vbase, vstride = v.ctypes.data, v.shape[1] * 4
    for i in range(len(v)):
        check(fv(ctypes.byref(sig), params._h, vbase + i * vstride, v.shape[1]),
              "band_keys: row %d" % i)
        rc = bk(base + i * stride, bands, sig, bands, rows)
        free(sig)
        check(rc, "band_keys: row %d" % i)
    return out


# ---- Results ---------------------------------------------------------------------


class _Results(_Handle):
    """A results object, private to the call that makes it: no lock."""

    __slots__ = ()
    _free = lib.simlsh_results_free

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        obj = object.__new__(cls)
        obj._lock = None
        return obj

    def __init__(self) -> None:
        h = _out()
        check(lib.simlsh_results_new(ctypes.byref(h), None), "results")
        self._h = h

    def columns(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = lib.simlsh_results_count(self._h)
        if n == 0:
            return (np.empty(0, np.uint64), np.empty(0, np.uint64), np.empty(0, np.float64))

        def col(ptr: int, ctype: Any, dtype: Any) -> np.ndarray:
            return np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ctype)),
                                         shape=(n,)).astype(dtype, copy=True)

        return (col(lib.simlsh_results_a(self._h), ctypes.c_uint64, np.uint64),
                col(lib.simlsh_results_b(self._h), ctypes.c_uint64, np.uint64),
                col(lib.simlsh_results_scores(self._h), ctypes.c_double, np.float64))

    # One query's few rows: plain lists, without numpy's per-array cost,
    # which would otherwise outweigh the query itself and hold the GIL.
    def ids(self) -> List[int]:
        """Column a as a list."""
        n = lib.simlsh_results_count(self._h)
        return list((ctypes.c_uint64 * n).from_address(lib.simlsh_results_a(self._h))) \
            if n else []

    def scores(self) -> List[float]:
        """The scores as a list."""
        n = lib.simlsh_results_count(self._h)
        return list((ctypes.c_double * n).from_address(lib.simlsh_results_scores(self._h))) \
            if n else []

    def rows(self, scores: bool) -> Tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]:
        """Columns a and b (uint64) and, with ``scores``, the scores, copied
        out: the results may be filled again once this returns."""
        h = self._h
        n = lib.simlsh_results_count(h)
        # the cheapest copies out (a writable one for what the caller gets)
        col = ctypes.c_uint64 * n
        a = np.frombuffer(col.from_address(lib.simlsh_results_a(h)), np.uint64).copy()
        b = np.frombuffer(ctypes.string_at(lib.simlsh_results_b(h), n * 8), np.uint64)
        sc = None
        if scores:
            sc = np.frombuffer((ctypes.c_double * n).from_address(lib.simlsh_results_scores(h)),
                               np.float64).copy()
        return a, b, sc

    def offsets(self, nq: int) -> List[int]:
        out, o = [], ctypes.c_size_t()
        for q in range(nq + 1):
            check(lib.simlsh_results_offset(ctypes.byref(o), self._h, q), "offset")
            out.append(o.value)
        return out

    @property
    def truncated(self) -> bool:
        return lib.simlsh_results_truncated(self._h) == 1


# ---- Index -----------------------------------------------------------------------


_SIGNATURE = {Signature}


def query_ids(index_h: Any, sig_h: Any, flags: int) -> List[int]:
    """The ids one query finds, as a list: one library call into this
    thread's buffer, all the work with the GIL released and the least of it
    with the GIL held. The caller holds the index's read lock."""
    try:
        buf, cnt = _tls.query
    except AttributeError:
        buf, cnt = _tls.query = ((ctypes.c_uint64 * 64)(), ctypes.c_size_t())
    rc = _query_ids(buf, len(buf), ctypes.byref(cnt), index_h, sig_h, flags)
    if rc == _lib.BufferTooSmall.code:  # cnt holds the size needed
        buf = (ctypes.c_uint64 * max(cnt.value, 2 * len(buf)))()
        _tls.query = (buf, cnt)
        rc = _query_ids(buf, len(buf), ctypes.byref(cnt), index_h, sig_h, flags)
    if rc < 0:
        check(rc, "query")
    return buf[:cnt.value]


def _take_results() -> "_Results":
    """This thread's results object, reused by its batch queries (their
    rows are copied out before the call returns), taken out while in use:
    a query made meanwhile in the same thread (from a __del__ run by the
    garbage collector, say) gets a new one instead of refilling it.
    Give it back with _give_results."""
    res = _tls.__dict__.pop("results", None)
    return res if res is not None else _Results()


def _give_results(res: "_Results") -> None:
    _tls.results = res


def _query_matrix(queries: Any, what: str) -> Tuple[np.ndarray, int]:
    """A 2-D uint32 matrix of query values and its row stride in entries;
    rows that are a view into a wider matrix are read in place."""
    if (type(queries) is np.ndarray and queries.dtype == np.uint32 and queries.ndim == 2
            and queries.strides[1] == 4 and queries.strides[0] % 4 == 0
            and queries.strides[0] >= 4 * queries.shape[1]):
        return queries, queries.strides[0] // 4
    if isinstance(queries, _ONE_TEXT):
        raise TypeError("%s: expected a list of Signature or a values matrix, not a single %s"
                        % (what, type(queries).__name__))
    v = _u32(queries, what)
    if v.ndim != 2:
        raise InvalidArgument("%s: a list of Signature or values of shape (n, num_perm), not %s"
                              % (what, v.shape))
    return v, v.shape[1]


def _offsets(b: np.ndarray, n: int) -> np.ndarray:
    """Query q's rows are [off[q], off[q + 1]): the rows come in query order,
    column b holding the query's position."""
    global _positions
    pos = _positions  # one read: another thread may swap it meanwhile
    if len(pos) <= n:
        pos = _positions = np.arange(max(n + 1, 2 * len(pos)), dtype=np.uint64)
    return b.searchsorted(pos[:n + 1])


_positions = np.arange(1025, dtype=np.uint64)  # 0, 1, 2, ...: query positions


_KEYS_MAGIC = b"simlsh-python-keys 1\n"


class Index(_Handle):
    """An LSH index of signatures under keys that are ``str`` or ``int``.

    Int keys are the index's uint64 ids (0 .. 2^64-1) themselves. Str keys
    are mapped to ids 0, 1, 2, ... in insertion order, and the mapping is
    saved inside the index file, in its user data. Saved indexes are plain
    simlsh index files either way. One index holds one kind of key.

    ``verify=True`` (the default of the calls that take it) keeps only
    candidates whose estimated similarity reaches the params' threshold; it
    needs stored signatures (``store_signatures=1``, the default).

    Threads: any mix of threads may call any methods. Writes (insert,
    insert_batch, remove, clear, merge into this index) run one at a time
    and never alongside a read; reads (queries, pairs, cluster, keys, len,
    signature, copy, save, to_bytes, pickling) run concurrently with each
    other, the library working with the GIL released.
    """

    __slots__ = ("_str", "_key_of", "_id_of", "_next", "_umutex")
    _free = lib.simlsh_index_free

    def __init__(self, params: Optional[Params] = None) -> None:
        h, params = _out(), _params_arg(params)  # params live until the call returns
        with params._lock.read:
            check(lib.simlsh_index_new(ctypes.byref(h), params._h), "Index")
        self._h = h
        self._init_keys()

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        ix = _Handle.__new__(cls)
        # Saving stores the str-key table in the index's user data, a write
        # that readers make: this mutex keeps two of them (and the other
        # readers of the user data: copy, memory) apart, under the shared
        # lock. Queries never read the user data.
        ix._umutex = threading.RLock()
        return ix

    def _init_keys(self) -> None:
        self._str: Optional[bool] = None  # undecided until the first key
        self._key_of: Dict[int, str] = {}
        self._id_of: Dict[str, int] = {}
        self._next = 0

    @classmethod
    def _wrap(cls, h: ctypes.c_void_p) -> "Index":
        ix = cls.__new__(cls)
        ix._h = h
        ix._init_keys()
        return ix

    # ---- keys
    def _kind(self, key: Any) -> bool:
        if isinstance(key, str):
            is_str = True
        elif isinstance(key, (bool, float)) or not hasattr(key, "__index__"):
            raise TypeError("keys must be str or int, not %s" % type(key).__name__)
        else:
            is_str = False
        if self._str is None:
            if len(self) > 0:  # loaded from C bytes: ids are int keys
                self._str = False
            else:
                return is_str
        if is_str != self._str:
            raise TypeError("this index has %s keys" % ("str" if self._str else "int"))
        return is_str

    def _lookup(self, key: Any) -> Optional[int]:
        """The id of an existing key, or None."""
        if self._kind(key):
            return self._id_of.get(key)
        k = operator.index(key)
        if not 0 <= k < 1 << 64:
            raise InvalidArgument("int keys must be in 0 .. 2^64-1")
        return k

    def _keys_of(self, ids: Any) -> List[Any]:
        """Keys of ids (a numpy array or a list of int)."""
        if not isinstance(ids, list):
            ids = ids.tolist()
        if self._str:
            ko = self._key_of
            return [ko[i] for i in ids]
        return ids

    # ---- properties
    @property
    def params(self) -> Params:
        """The index's contract with bands and rows resolved."""
        h = _out()
        with self._lock.read:
            check(lib.simlsh_index_params(ctypes.byref(h), self._h), "params")
        return Params._wrap(h)

    @property
    def bands(self) -> int:
        """Number of LSH bands (resolved from the params)."""
        return self._bands()[0]

    @property
    def rows(self) -> int:
        """Rows per band (resolved from the params)."""
        return self._bands()[1]

    def _bands(self) -> Tuple[int, int]:
        b, r = ctypes.c_uint32(), ctypes.c_uint32()
        with self._lock.read:
            check(lib.simlsh_index_bands(ctypes.byref(b), ctypes.byref(r), self._h), "bands")
        return b.value, r.value

    @property
    def fingerprint(self) -> int:
        """The 64-bit contract fingerprint of the index scope: only
        signatures of the same contract go in, and indexes merge only with
        equal fingerprints."""
        out = ctypes.c_uint64()
        with self._lock.read:
            check(lib.simlsh_index_fingerprint(ctypes.byref(out), self._h), "fingerprint")
        return out.value

    def memory(self) -> int:
        """Bytes the index holds."""
        t = ctypes.c_size_t()
        with self._lock.read, self._umutex:
            check(lib.simlsh_index_memory(ctypes.byref(t), None, self._h), "memory")
        return t.value

    def __len__(self) -> int:
        n = ctypes.c_size_t()
        with self._lock.read:
            check(lib.simlsh_index_count(ctypes.byref(n), self._h), "len")
        return n.value

    def __contains__(self, key: object) -> bool:
        with self._lock.read:
            try:
                i = self._lookup(key)
            except (TypeError, InvalidArgument):
                return False
            return i is not None and check(lib.simlsh_index_contains(self._h, i)) == 1

    def keys(self) -> List[Key]:
        """Every key, in id order (for str keys: insertion order)."""
        with self._lock.read:
            if self._str:
                return [self._key_of[i] for i in sorted(self._key_of)]
            res = _Results()
            check(lib.simlsh_index_cluster(res._h, self._h, 0), "keys")
        return res.columns()[0].tolist()

    # ---- mutation
    def insert(self, key: Key, sig: Signature) -> None:
        """Insert ``sig`` under ``key``. AlreadyExists when the key is
        present, EmptyInput for an empty signature, ContractMismatch for
        another contract; on error the index is unchanged."""
        if not isinstance(sig, Signature):
            raise TypeError("insert: sig must be a simlsh.Signature, not %s"
                            % type(sig).__name__)
        with self._lock.write:  # sig is copy-on-write: read without its lock
            self._insert(key, sig)

    def _insert(self, key: Key, sig: Signature) -> None:
        is_str = self._kind(key)
        if is_str:
            if key in self._id_of:
                raise AlreadyExists("insert %r: %s" % (key, "already exists"))
            i = self._next
        else:
            i = self._lookup(key)
        check(lib.simlsh_index_insert(self._h, i, sig._h), "insert %r" % (key,))
        if is_str:
            self._id_of[key] = i  # type: ignore[index]
            self._key_of[i] = key  # type: ignore[assignment]
            self._next += 1
        self._str = is_str

    def insert_batch(self, keys: Sequence[Key], values: Any, threads: int = 1) -> None:
        """Insert row i of an (n, num_perm) values matrix (as sign_batch
        gives) under keys[i]. All or nothing: a duplicate or present key, or
        an empty row, raises and leaves the index as it was. ``threads``
        (0: one per CPU) are used by libraries that insert in parallel."""
        with self._lock.write:
            self._insert_batch(keys, values, threads)

    def _insert_batch(self, keys: Sequence[Key], values: Any, threads: int) -> None:
        if not isinstance(keys, np.ndarray):
            keys = _sequence(keys, "insert_batch", "keys")
        v = _u32(values, "insert_batch")
        n = len(keys)
        if v.ndim != 2 or len(v) != n or (n and v.shape[1] != self._num_perm()):
            raise InvalidArgument("insert_batch: values of shape %s; expected (len(keys), "
                                  "num_perm) = (%d, %d)" % (v.shape, n, self._num_perm()))
        if n == 0:
            return
        is_str = self._kind(keys[0])
        if is_str:
            for j, k in enumerate(keys):
                if not isinstance(k, str):
                    raise TypeError("insert_batch: keys must be all str or all int; row %d "
                                    "is %s" % (j, type(k).__name__))
            if len(set(keys)) != n:
                seen: Dict[Any, int] = {}
                for j, k in enumerate(keys):
                    if k in seen:
                        raise AlreadyExists("insert_batch: rows %d and %d have the same key "
                                            "%r" % (seen[k], j, k))
                    seen[k] = j
            for j, k in enumerate(keys):
                if k in self._id_of:
                    raise AlreadyExists("insert_batch: row %d: key %r already exists"
                                        % (j, k))
            ids = np.arange(self._next, self._next + n, dtype=np.uint64)
        else:
            if isinstance(keys, np.ndarray):
                if keys.dtype.kind not in "iu":
                    raise TypeError("insert_batch: keys must be all str or all int")
                if keys.dtype.kind == "i" and n and keys.min() < 0:
                    raise InvalidArgument("int keys must be in 0 .. 2^64-1")
            elif not all(isinstance(k, int) and not isinstance(k, bool) or
                         hasattr(k, "__index__") and not isinstance(k, (str, bool, float))
                         for k in keys):
                raise TypeError("insert_batch: keys must be all str or all int")
            try:
                ids = np.array(keys, dtype=np.uint64)
            except OverflowError:
                raise InvalidArgument("int keys must be in 0 .. 2^64-1") from None
        ids = np.ascontiguousarray(ids)
        empty = empty_rows(v)
        if empty.any():
            raise _lib.EmptyInput("insert_batch: row %d is an empty signature"
                                  % int(np.nonzero(empty)[0][0]))
        if _insert_values_c is not None:
            rc = _insert_values_c(self._h, ids.ctypes.data, v.ctypes.data, n,
                                  _threads(threads))
            if rc == AlreadyExists.code:
                self._name_present_row(ids, keys)
            if rc == InvalidArgument.code:
                self._name_bad_row(v)
            check(rc, "insert_batch")
        else:
            self._insert_rows(ids, v)
        if is_str:
            for k, i in zip(keys, ids.tolist()):
                self._id_of[k] = i  # type: ignore[index]
                self._key_of[i] = k  # type: ignore[assignment]
            self._next += n
        self._str = is_str

    def _num_perm(self) -> int:
        return self.params.get("num_perm")  # type: ignore[return-value]

    def _name_present_row(self, ids: np.ndarray, keys: Any) -> None:
        """Raise AlreadyExists naming the first row whose key repeats or is
        present (the library's batch says only that one is)."""
        seen: Dict[int, int] = {}
        for j, i in enumerate(ids.tolist()):
            if i in seen:
                raise AlreadyExists("insert_batch: rows %d and %d have the same key %r"
                                    % (seen[i], j, keys[j]))
            seen[i] = j
            if lib.simlsh_index_contains(self._h, i) == 1:
                raise AlreadyExists("insert_batch: row %d: key %r already exists"
                                    % (j, keys[j]))

    def _name_bad_row(self, v: np.ndarray) -> None:
        """Raise InvalidArgument naming the first row that is no signature."""
        p = self.params
        for j, row in enumerate(v):
            try:
                Signature.from_values(p, row)
            except InvalidArgument as e:
                raise InvalidArgument("insert_batch: row %d: %s" % (j, e)) from None

    def _insert_rows(self, ids: np.ndarray, v: np.ndarray) -> None:
        """One insert per row, undone on error (the library's batch insert
        is all or nothing by itself)."""
        id_list = ids.tolist()
        if len(set(id_list)) != len(id_list):
            raise AlreadyExists("insert_batch: a key occurs twice")
        params = self.params  # kept alive while its handle is used
        h, ph = self._h, params._h
        if not params.get("store_signatures"):
            # nothing could be removed again: check every id first
            for i in id_list:
                if lib.simlsh_index_contains(h, i) == 1:
                    raise AlreadyExists("insert_batch %r: already exists" % (i,))
        sig = _out()
        psig = ctypes.byref(sig)
        fv, ins, free = (lib.simlsh_signature_from_values, lib.simlsh_index_insert,
                         lib.simlsh_signature_free)
        P_ = v.shape[1]
        base, stride = v.ctypes.data, P_ * 4
        rc, done = 0, 0
        for j, i in enumerate(id_list):
            rc = fv(psig, ph, base + j * stride, P_)
            if rc:
                break
            rc = ins(h, i, sig)
            free(sig)
            if rc:
                break
            done += 1
        if rc:
            for i in id_list[:done]:
                lib.simlsh_index_remove(h, i)
            check(rc, "insert_batch: row %d" % done)

    def remove(self, key: Key) -> None:
        """Remove ``key``; NotFound when absent (needs stored signatures)."""
        with self._lock.write:
            self._remove(key)

    def _remove(self, key: Key) -> None:
        i = self._lookup(key)
        if i is None:
            raise NotFound("remove %r: not found" % (key,))
        check(lib.simlsh_index_remove(self._h, i), "remove %r" % (key,))
        if self._str:
            del self._id_of[key]  # type: ignore[arg-type]
            del self._key_of[i]

    def clear(self) -> None:
        """Remove every key (the kind of key is free again)."""
        with self._lock.write:
            check(lib.simlsh_index_clear(self._h), "clear")
            self._init_keys()

    def signature(self, key: Key) -> Signature:
        """The stored signature of ``key`` (``simlsh_index_signature``)."""
        h = _out()
        with self._lock.read:
            i = self._lookup(key)
            if i is None:
                raise NotFound("signature %r: not found" % (key,))
            check(lib.simlsh_index_signature(ctypes.byref(h), self._h, i),
                  "signature %r" % (key,))
        return Signature._wrap(h)

    def copy(self) -> "Index":
        """An independent snapshot (``simlsh_index_copy``): query it while
        this index is written."""
        h = _out()
        with self._lock.read, self._umutex:
            check(_needs(_copy_c, "simlsh_index_copy")(ctypes.byref(h), self._h), "copy")
            ix = Index._wrap(h)
            ix._str, ix._next = self._str, self._next
            ix._key_of, ix._id_of = dict(self._key_of), dict(self._id_of)
        return ix

    __copy__ = copy

    def merge(self, other: "Index") -> None:
        """Add every key of ``other``, an index of int keys with the same
        fingerprint (``simlsh_index_merge``). All or nothing: a key in both
        raises AlreadyExists, another contract ContractMismatch, and this
        index stays as it was. Str keys are numbered per index, so two
        indexes of str keys cannot be merged (TypeError)."""
        if not isinstance(other, Index):
            raise TypeError("merge: an Index, not %s" % type(other).__name__)
        with hold(write=(self,), read=(other,)):
            if self._str or other._str:
                raise TypeError("merge: only indexes of int keys merge")
            check(_needs(_merge_c, "simlsh_index_merge")(self._h, other._h), "merge")

    # ---- queries
    @overload
    def query(self, sig: Signature, verify: bool = ..., *,
              threshold: Optional[float] = ...) -> List[Key]: ...

    @overload
    def query(self, sig: Signature, verify: bool = ..., *, scores: bool,
              threshold: Optional[float] = ...) -> Union[List[Key], List[Tuple[Key, float]]]: ...

    def query(self, sig: Signature, verify: bool = True, *, scores: bool = False,
              threshold: Optional[float] = None) -> Any:
        """Keys whose signatures share a band bucket with ``sig`` (and, with
        ``verify``, reach the threshold), in id order. With ``scores``,
        (key, estimated Jaccard) pairs (-1.0 without stored signatures).
        ``threshold`` in (0, 1] replaces the params' for this call
        (``simlsh_index_query_v2``); the index is not changed."""
        if not isinstance(sig, Signature):
            raise TypeError("query: sig must be a simlsh.Signature, not %s"
                            % type(sig).__name__)
        h = sig._h  # copy-on-write: this handle is one state of sig, no lock needed
        flags = QUERY_VERIFY if verify else 0
        if not scores and threshold is None:
            lock = self._lock
            lock.acquire_read()
            try:
                ids = query_ids(self._h, h, flags)
                return self._keys_of(ids) if self._str else ids
            finally:
                lock.release_read()
        res = _Results()
        with self._lock.read:
            if threshold is None:
                check(lib.simlsh_index_query(res._h, self._h, h, flags), "query")
            else:
                check(_needs(_query_v2_c, "simlsh_index_query_v2")(
                    res._h, self._h, h, flags, float(threshold)), "query")
            keys = self._keys_of(res.ids())
            if scores:
                return list(zip(keys, res.scores()))
        return keys

    def query_batch(self, queries: Any, verify: bool = True,
                    threshold: Optional[float] = None) -> List[List[Key]]:
        """Query many signatures at once: a list of Signature, or an
        (n, num_perm) values matrix. Returns one key list per query.
        ``threshold``: as for :meth:`query`. For many queries (and to scale
        over threads) :meth:`query_arrays` returns numpy arrays instead,
        with no Python object per query."""
        n, a, b, _ = self._query_rows(queries, verify, threshold, False, "query_batch")
        keys = self._keys_of(a)
        off = _offsets(b, n).tolist()
        return [keys[off[q]:off[q + 1]] for q in range(n)]

    def query_arrays(self, queries: Any, verify: bool = True, threshold: Optional[float] = None,
                     *, scores: bool = False) -> Tuple[np.ndarray, ...]:
        """Query many signatures at once, answered as arrays: ``(offsets,
        keys)``, or ``(offsets, keys, scores)`` with ``scores``. The keys of
        query q are ``keys[offsets[q]:offsets[q + 1]]``, in id order (the
        CSR layout: ``offsets`` has n + 1 int64 entries), each with its
        estimated Jaccard in ``scores`` (float64; -1.0 without stored
        signatures).

        ``queries`` is an (n, num_perm) values matrix (as :func:`sign_batch`
        gives; rows may be a strided view of a wider uint32 matrix) or a
        list of Signature. ``verify`` and ``threshold``: as for
        :meth:`query`. ``keys`` is a uint64 array for int keys and an object
        array for str keys.

        The library call does all the work with the GIL released and the
        Python work per call does not grow with n for int keys, so threads
        querying one index run in parallel (docs/python.md, "Threads")."""
        n, a, b, sc = self._query_rows(queries, verify, threshold, scores, "query_arrays")
        keys = np.array(self._keys_of(a), dtype=object) if self._str else a
        off = _offsets(b, n)
        return (off, keys, sc) if scores else (off, keys)

    def _query_rows(self, queries: Any, verify: bool, threshold: Optional[float],
                    scores: bool, what: str) -> Tuple[int, np.ndarray, np.ndarray, Any]:
        """(n, ids, query positions, scores or None) of a batch: one library
        call, under the index's read lock."""
        flags = QUERY_VERIFY if verify else 0
        if threshold is not None:
            threshold = float(threshold)
            if not 0.0 < threshold <= 1.0:  # NaN too
                raise InvalidArgument("%s: threshold=%r: must be in (0, 1]" % (what, threshold))
        if isinstance(queries, (list, tuple)) and (set(map(type, queries)) <= _SIGNATURE or all(
                isinstance(q, Signature) for q in queries)):
            return self._query_sigs(list(queries), flags, threshold, scores, what)
        v, stride = _query_matrix(queries, what)
        n, num_perm = v.shape
        if _query_values_c is None:  # an older library: one signature per row
            return self._query_sigs(self._row_signatures(v, what), flags, threshold, scores,
                                    what)
        res = _take_results()
        lock = self._lock
        lock.acquire_read()
        try:
            rc = _query_values_c(res._h, self._h, v.ctypes.data if n else None, n, num_perm,
                                 stride, flags, 0.0 if threshold is None else threshold)
            if rc < 0:
                self._name_bad_query(rc, v, what)
            return (n,) + res.rows(scores)
        finally:
            lock.release_read()
            _give_results(res)

    def _query_sigs(self, sigs: List["Signature"], flags: int, threshold: Optional[float],
                    scores: bool, what: str) -> Tuple[int, np.ndarray, np.ndarray, Any]:
        n = len(sigs)
        # The signatures are copy-on-write: these handles are one state of
        # each, read without their locks. The list keeps them alive (the
        # array holds bare addresses) while a writer swaps in new ones.
        hs = [s._h for s in sigs]
        arr = (ctypes.c_void_p * max(n, 1))(*hs)
        res = _take_results()
        try:
            with self._lock.read:
                if threshold is None:
                    rc = lib.simlsh_index_query_batch(res._h, self._h, arr, n, flags)
                else:
                    rc = _needs(_query_batch_v2_c, "simlsh_index_query_batch_v2")(
                        res._h, self._h, arr, n, flags, threshold)
                del hs
                check(rc, what)
                return (n,) + res.rows(scores)
        finally:
            _give_results(res)

    def _row_signatures(self, v: np.ndarray, what: str) -> List["Signature"]:
        p = self.params
        if v.shape[1] != p.get("num_perm"):
            raise InvalidArgument("%s: a list of Signature or values of shape (n, num_perm = "
                                  "%d), not %s" % (what, p.get("num_perm"), v.shape))
        return _row_sigs(p, v, what)

    def _name_bad_query(self, rc: int, v: np.ndarray, what: str) -> None:
        """Raise the error of a failed values batch, naming the shape or the
        row that the library refused."""
        if rc == _lib.ContractMismatch.code:
            num_perm = self._num_perm()
            raise InvalidArgument("%s: a list of Signature or values of shape (n, num_perm = "
                                  "%d), not %s" % (what, num_perm, v.shape))
        if rc == InvalidArgument.code:
            marks = v == EMPTY_VALUE
            bad = np.flatnonzero(marks.any(axis=1) & ~marks.all(axis=1))
            if len(bad):
                raise InvalidArgument(
                    "%s: row %d holds the empty mark 0x%X in some entries but not all (a row "
                    "is all values below it, or all of it for an empty signature)"
                    % (what, bad[0], EMPTY_VALUE))
        check(rc, what)

    def pairs(self, verify: bool = True, max_pairs: int = 0) -> List[Tuple[Key, Key, float]]:
        """Candidate pairs (key_a, key_b, estimated Jaccard), each once, the
        smaller id first, sorted by ids; at most ``max_pairs`` (0: all)."""
        res = _Results()
        with self._lock.read:
            check(lib.simlsh_index_pairs(res._h, self._h, QUERY_VERIFY if verify else 0,
                                         max_pairs), "pairs")
            a, b, s = res.columns()
            return list(zip(self._keys_of(a), self._keys_of(b), s.tolist()))

    def cluster(self, verify: bool = True) -> List[List[Key]]:
        """Every key in exactly one cluster (``simlsh_index_cluster``):
        clusters ordered by their smallest id, members in id order,
        singletons included."""
        res = _Results()
        with self._lock.read:
            check(lib.simlsh_index_cluster(res._h, self._h, QUERY_VERIFY if verify else 0),
                  "cluster")
            a, b, _ = res.columns()
            keys = self._keys_of(a)
        return _groups_by_label(keys, b)

    # ---- persistence
    # Str keys travel in the index's user data (simlsh_index_set_userdata),
    # inside the library's checksummed file, so one atomic save writes both.
    def _key_table(self) -> bytes:
        body = bytearray(_KEYS_MAGIC)
        body += struct.pack("<QQ", len(self._key_of), self._next)
        for i in sorted(self._key_of):
            k = _encode(self._key_of[i])
            body += struct.pack("<QI", i, len(k)) + k
        return bytes(body)

    def _userdata(self) -> bytes:
        ptr, n = ctypes.c_void_p(), ctypes.c_size_t()
        check(lib.simlsh_index_userdata(ctypes.byref(ptr), ctypes.byref(n), self._h), "userdata")
        return ctypes.string_at(ptr.value, n.value) if ptr.value and n.value else b""

    def _store_keys(self) -> None:
        if self._str:
            table = self._key_table()
            check(lib.simlsh_index_set_userdata(self._h, table, len(table)), "save")
        elif self._userdata().startswith(_KEYS_MAGIC):
            # str keys of an earlier life of this index: they no longer apply
            check(lib.simlsh_index_set_userdata(self._h, None, 0), "save")

    def _adopt_keys(self) -> None:
        data = self._userdata()
        if not data.startswith(_KEYS_MAGIC):
            return  # an index of int keys (its user data, if any, is kept)
        bad = _lib.Corrupt("Index load: corrupt key table in the user data")
        pos, end = len(_KEYS_MAGIC), len(data)
        if pos + 16 > end:
            raise bad
        count, nxt = struct.unpack_from("<QQ", data, pos)
        pos += 16
        self._str = True
        self._next = nxt
        for _ in range(count):
            if pos + 12 > end:
                raise bad
            i, klen = struct.unpack_from("<QI", data, pos)
            pos += 12
            if pos + klen > end or i >= nxt or i in self._key_of:
                raise bad
            k = data[pos:pos + klen].decode("utf-8", "surrogateescape")
            pos += klen
            if k in self._id_of or lib.simlsh_index_contains(self._h, i) != 1:
                raise bad
            self._key_of[i] = k
            self._id_of[k] = i
        if pos != end or count != len(self):
            raise bad

    def to_bytes(self) -> bytes:
        """The index in the format of ``simlsh_index_save``, str keys in its
        user data."""
        with self._lock.read, self._umutex:
            self._store_keys()
            return _save(lib.simlsh_index_save, self._h, "Index save")

    @classmethod
    def from_bytes(cls, data: Any) -> "Index":
        """Rebuild from :meth:`to_bytes` or any ``simlsh_index_save`` bytes;
        bad bytes raise Corrupt."""
        buf, n = as_bytes(data)
        h = _out()
        check(lib.simlsh_index_load(ctypes.byref(h), buf, n, None), "Index load")
        ix = cls._wrap(h)
        ix._adopt_keys()
        return ix

    def save(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Save to ``path`` atomically (``simlsh_index_save_file_v2``: a
        failed save leaves the old file). The file is a plain simlsh index
        that C programs load; str keys are in its user data."""
        err = ctypes.c_int()
        with self._lock.read, self._umutex:
            self._store_keys()
            rc = lib.simlsh_index_save_file_v2(ctypes.byref(err), self._h, os.fsencode(path),
                                               0)
        if rc == _lib.IOFailure.code and err.value:
            raise _lib.IOFailure(err.value, "Index.save: %s" % os.strerror(err.value),
                                 os.fspath(path))
        check(rc, "Index.save %s" % os.fspath(path))

    @classmethod
    def load(cls, path: Union[str, "os.PathLike[str]"]) -> "Index":
        """Load an index file written by :meth:`save` or by a C program."""
        h, err = _out(), ctypes.c_int()
        rc = lib.simlsh_index_load_file_v2(ctypes.byref(h), ctypes.byref(err),
                                           os.fsencode(path), 0, None)
        if rc == _lib.IOFailure.code and err.value:
            raise _lib.IOFailure(err.value, "Index.load: %s" % os.strerror(err.value),
                                 os.fspath(path))
        check(rc, "Index.load %s" % os.fspath(path))
        ix = cls._wrap(h)
        ix._adopt_keys()
        return ix

    def __reduce__(self) -> Tuple[Any, ...]:
        return (Index.from_bytes, (self.to_bytes(),))

    def __repr__(self) -> str:
        with self._lock.read:
            return "<simlsh.Index of %d documents, %d bands x %d rows>" % (
                len(self), self.bands, self.rows)


def _groups_by_label(keys: List[Any], labels: np.ndarray) -> List[List[Any]]:
    """Keys grouped by label, groups in order of first appearance (rows come
    sorted by id and a label is its group's smallest id, so that is label
    order), members in row order."""
    groups: Dict[int, List[Any]] = {}
    for k, lab in zip(keys, labels.tolist()):
        groups.setdefault(lab, []).append(k)
    return list(groups.values())


def version() -> str:
    """The version string of the loaded libsimlsh."""
    return lib.simlsh_version_string().decode()


def has_unicode() -> bool:
    """True when the library has utf8proc (normalize casefold and nfkc)."""
    return lib.simlsh_has_unicode() == 1


def hash_bytes(data: Text, params: Optional[Params] = None) -> int:
    """Hash bytes as the shingler hashes a shingle (simlsh_hash_bytes)."""
    buf, n = as_bytes(data)
    out, params = ctypes.c_uint64(), _params_arg(params)
    with params._lock.read:
        check(lib.simlsh_hash_bytes(ctypes.byref(out), params._h, buf, n), "hash_bytes")
    return out.value


__all__ = ["Params", "ShingleSet", "Signature", "Index", "sign_batch", "band_keys",
           "empty_rows", "version", "has_unicode", "hash_bytes"]
