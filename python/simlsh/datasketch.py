"""datasketch's MinHash API on libsimlsh: change the import, keep the script.

    from simlsh.datasketch import MinHash, MinHashLSH   # was: from datasketch ...

``MinHash``, ``LeanMinHash``, ``MinHashLSH``, ``MinHashLSHForest`` and
``MinHashLSHEnsemble`` take datasketch's arguments and raise its errors
(``ValueError`` for mismatched or missing things, ``TypeError`` for updating
a ``LeanMinHash``). What differs (docs/python.md, "simlsh.datasketch"):

- the hash values: a token is hashed with MurmurHash3 (the seed) and then
  by the library's num_perm hash functions (classic MinHash, as datasketch;
  ``scheme="oph"`` signs with one-permutation hashing, faster for big sets,
  less exact for small ones), so ``hashvalues`` differ from datasketch's for
  the same data and MinHashes made by datasketch do not mix with these; the
  Jaccard estimates have the same accuracy;
- storage is in memory only (``storage_config`` of type ``"dict"``);
- ``MinHashLSH.query`` returns candidates in insertion order, not a set's
  order; ``MinHashLSHForest.query`` ranks candidates by estimated Jaccard;
- weighted MinHash, HyperLogLog and LSH bucket statistics are not provided.

Threads: every object here may be shared by threads, as the native classes
(docs/python.md, "Threads"): updates, inserts and removals are exclusive,
queries and reads run concurrently with each other.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import struct
import threading
from typing import Any, Callable, Dict, Hashable, Iterable, Iterator, List, Optional, Tuple

import numpy as np

from . import _lib
from ._core import (Index, Params, Signature, _forked, _scratch, _sig_values, _SigHandle,
                    _token_hashes, query_ids)
from ._forest import Ensemble, Forest
from ._lib import lib
from ._rwlock import RWLock, hold

__all__ = ["MinHash", "LeanMinHash", "MinHashLSH", "MinHashLSHForest", "MinHashLSHEnsemble"]

_MAX_HASH = (1 << 32) - 1  # datasketch's empty value, and simlsh's
_SCHEMES = ("oph", "classic", "datasketch")
_PARAMS: Dict[Tuple[int, int, str], Params] = {}
_EMPTY: Dict[Tuple[int, int, str], Signature] = {}  # copied for each new MinHash

# scheme="datasketch": datasketch 1.x's own hash values, computed here as
# datasketch computes them (minhash.py since 1.1.3): a token's 32-bit hash
# is the first 4 bytes of its SHA-1, little-endian (sha1_hash32), and value
# i is ((a_i * h + b_i) mod 2^64) mod (2^61 - 1), low 32 bits, with a_i in
# [1, 2^61-1) and b_i in [0, 2^61-1) drawn from numpy's RandomState(seed).
_MERSENNE = np.uint64((1 << 61) - 1)
_MAX64 = np.uint64(_MAX_HASH)
_PERMS: Dict[Tuple[int, int], np.ndarray] = {}
_CHUNK = 2048  # tokens per (tokens x num_perm) product, to bound its memory


def _permutations(seed: int, num_perm: int) -> np.ndarray:
    """datasketch's (2, num_perm) uint64 array of a's and b's (read-only)."""
    key = (seed, num_perm)
    ab = _PERMS.get(key)
    if ab is None:
        gen = np.random.RandomState(seed)
        ab = np.array([(gen.randint(1, _MERSENNE, dtype=np.uint64),
                        gen.randint(0, _MERSENNE, dtype=np.uint64))
                       for _ in range(num_perm)], dtype=np.uint64).T
        ab.setflags(write=False)
        _PERMS[key] = ab
    return ab


def _sha1_hash32(toks: List[bytes]) -> np.ndarray:
    """datasketch's sha1_hash32 of each token, as uint64."""
    sha1 = hashlib.sha1
    return np.frombuffer(b"".join([sha1(t).digest()[:4] for t in toks]),
                         dtype="<u4").astype(np.uint64)


def _apply(values: np.ndarray, hv: np.ndarray, ab: np.ndarray) -> None:
    """values = min(values, permuted hashes of hv), in place, with
    datasketch's uint64 arithmetic (the product wraps modulo 2^64)."""
    a, b = ab[0], ab[1]
    with np.errstate(over="ignore"):
        for i in range(0, len(hv), _CHUNK):
            phv = (hv[i:i + _CHUNK, None] * a + b) % _MERSENNE
            np.bitwise_and(phv, _MAX64, out=phv)
            np.minimum(values, phv.min(axis=0), out=values)


def _as_signature_values(values: np.ndarray) -> np.ndarray:
    """datasketch's values as a simlsh signature holds them: 2^32-1 means
    empty there, so in a non-empty MinHash a value of 2^32-1 (or above, from
    hashvalues given by hand) is stored as 2^32-2 in the signature; the
    MinHash keeps the exact values."""
    if bool(np.all(values == _MAX64)):
        return values.astype(np.uint32)
    return np.minimum(values, _MAX64 - np.uint64(1)).astype(np.uint32)


def _contract(num_perm: int, seed: int, scheme: str) -> Params:
    """The params of every MinHash of this (num_perm, seed, scheme): tokens
    are whole words (unit word, k 1, no normalisation), so a batch of plain
    tokens can be signed as one text (see MinHash._flush)."""
    key = (num_perm, seed, scheme)
    p = _PARAMS.get(key)
    if p is None:
        if not 1 <= num_perm <= 1024:
            raise ValueError("num_perm must be in 1 .. 1024, not %d" % num_perm)
        if not 0 <= seed <= 0xFFFFFFFF:
            raise ValueError("seed must be in 0 .. 2^32-1, not %d" % seed)
        if scheme not in _SCHEMES:
            raise ValueError("scheme must be one of %s, not %r" % (", ".join(_SCHEMES), scheme))
        if scheme == "datasketch":
            # Values come from Python (from_values): this contract only
            # labels them, apart from the classic one (its hash_bits is 32).
            p = Params(unit="word", k=1, num_perm=num_perm, seed=seed, scheme="classic",
                       hash_bits=64)
        else:
            p = Params(unit="word", k=1, num_perm=num_perm, seed=seed, scheme=scheme)
        _EMPTY[key] = Signature(p)
        _PARAMS[key] = p
    return p


_BYTES = {bytes}


_local = threading.local()


def _thread_scratch(m: "MinHash") -> Any:
    """This thread's scratch signature for MinHashes of m's contract: every
    MinHash of one (num_perm, seed, scheme) has the same params (_contract),
    so one scratch serves them all, and no MinHash keeps a shingler."""
    try:
        scratch = _local.scratch
    except AttributeError:
        scratch = _local.scratch = {}
    key = m._key()
    s = scratch.get(key)
    if s is None:
        s = scratch[key] = _scratch(_EMPTY[key]._h, "MinHash.update")
    return s


# A MinHash has no lock of its own: writes (its flush, merge, clear, a new
# hashvalues) take one of these, chosen by the MinHash's id. So a MinHash
# is three objects for the garbage collector to visit (itself, its token
# list and its C signature), not eight. No code holds two of them at once
# (merge flushes the other MinHash before it takes its own), so two threads
# never wait for each other in a cycle; RLock, so that a write may flush.
# Reads take none: the C signature is copy-on-write (a write makes a new
# one and swaps it in), so a reader's ``h = m._h`` is one whole state.
_STRIPES: Tuple[Any, ...] = ()


def _new_stripes() -> None:
    # also in a forked child: a lock another thread of the parent held at
    # the fork would stay held there, for a 64th of all MinHashes
    global _STRIPES
    _STRIPES = tuple(threading.RLock() for _ in range(64))


_new_stripes()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_stripes)


def _stripe(m: Any) -> Any:
    return _STRIPES[(id(m) >> 4) & 63]


_insert = lib.simlsh_index_insert
_clear, _is_empty, _merge, _add_text, _copy = (
    lib.simlsh_signature_clear, lib.simlsh_signature_is_empty, lib.simlsh_signature_merge,
    lib.simlsh_signature_add_text, lib.simlsh_signature_copy)


def _signed(s: Any, old: Any, joined: bytes) -> _SigHandle:
    """_core._with_text for MinHash._flush, with the fewest Python steps
    (it runs once per MinHash): ``old`` with the words of ``joined`` added,
    as a new C signature, signed in the scratch ``s``."""
    _clear(s)
    if not _is_empty(old):
        rc = _merge(s, old)
        if rc < 0:
            _lib.check(rc, "MinHash.update")
    rc = _add_text(s, joined, len(joined))
    if rc < 0:
        _lib.check(rc, "MinHash.update")
    h = _SigHandle()
    rc = _copy(ctypes.byref(h), s)
    if rc < 0:
        _lib.check(rc, "MinHash.update")
    return h


def _sig_of(h: _SigHandle) -> Signature:
    """A Signature on one C signature state (shared: it is never changed)."""
    sig = Signature.__new__(Signature)
    sig._h = h
    return sig


def _with_features(h: Any, f: np.ndarray) -> _SigHandle:
    return _forked(h, lib.simlsh_signature_add_features, f.ctypes.data, f.size,
                   what="MinHash.update")


def _token(b: Any) -> bytes:
    if isinstance(b, bytes):
        return b
    if isinstance(b, str):
        return b.encode("utf-8", "surrogatepass")
    if isinstance(b, (bytearray, memoryview)):
        return bytes(b)
    raise TypeError("MinHash.update: a token is bytes or str, not %s" % type(b).__name__)


class MinHash:
    """MinHash of a set of tokens, as datasketch's ``MinHash``.

    ``num_perm`` (1 .. 1024) values; ``seed`` (0 .. 2^32-1) chooses the hash;
    ``hashfunc``, when given, maps a token to an integer that is used as the
    token's hash (as in datasketch); otherwise tokens are hashed with
    MurmurHash3. ``hashvalues`` rebuilds a MinHash from values.
    ``scheme`` is ``"classic"`` (default: num_perm hash functions, as
    datasketch) or ``"oph"`` (one-permutation hashing: one hash per token,
    faster on big sets, noisier on sets much smaller than num_perm), or
    ``"datasketch"``: datasketch 1.x's own hash values, bit for bit (SHA-1
    token hashes, or ``hashfunc``'s, and datasketch's permutations of
    ``seed``), so MinHashes stored by datasketch (their ``hashvalues``, or
    LeanMinHash bytes) keep working with new ones; as slow as datasketch
    to sign (docs/python.md), as fast to index and query. ``permutations``
    (datasketch's (a, b) arrays) is accepted with this scheme only.

    Threads: updates (``update``, ``update_batch``, ``merge``, ``clear``)
    are exclusive; every other call reads and may run concurrently.
    """

    __slots__ = ("_h", "_pending", "_features", "seed", "hashfunc", "_scheme",
                 "_exact", "_perm", "_n", "__weakref__")

    def __init__(self, num_perm: int = 128, seed: int = 1,
                 hashfunc: Optional[Callable[[bytes], int]] = None,
                 hashobj: Any = None, hashvalues: Optional[Iterable[int]] = None,
                 permutations: Any = None, *, scheme: str = "classic") -> None:
        if hashobj is not None:
            raise ValueError("hashobj is deprecated in datasketch; use hashfunc")
        if permutations is not None and scheme != "datasketch":
            raise ValueError("permutations are datasketch internals: only with "
                             "scheme='datasketch'")
        if hashfunc is not None and not callable(hashfunc):
            raise ValueError("The hashfunc must be a callable.")
        if hashvalues is not None:
            hv = np.asarray(hashvalues)
            if hv.ndim != 1:
                raise ValueError("hashvalues must be one-dimensional")
            num_perm = len(hv)
        if num_perm > 1024:
            raise ValueError("Cannot have more than 1024 number of permutation functions")
        self.seed = seed
        #: The function that hashes a token (None: MurmurHash3, in the library).
        self.hashfunc = hashfunc
        self._scheme = scheme
        p = _contract(num_perm, seed, scheme)
        self._n = num_perm  # len(self), asked on every insert and query
        #: datasketch's exact values (uint64) with scheme="datasketch", else None
        self._exact: Optional[np.ndarray] = None
        self._perm: Optional[np.ndarray] = None
        #: the C signature: never changed once here (copy-on-write), so
        #: every new MinHash shares the empty one of its contract
        self._h: _SigHandle
        if scheme == "datasketch":
            if permutations is not None:
                ab = np.array(permutations, dtype=np.uint64)
                if ab.shape != (2, num_perm):
                    raise ValueError("Numbers of hash values and permutations mismatch")
                self._perm = ab
            else:
                self._perm = _permutations(seed, num_perm)
            self._exact = (np.array(hv, dtype=np.uint64) if hashvalues is not None
                           else np.full(num_perm, _MAX64, dtype=np.uint64))
            self._h = Signature.from_values(p, _as_signature_values(self._exact))._h
        elif hashvalues is not None:
            try:
                self._h = Signature.from_values(p, hv)._h
            except _lib.InvalidArgument as e:
                raise ValueError("hashvalues: %s" % e) from None
        else:
            self._h = _EMPTY[(num_perm, seed, scheme)]._h
        #: tokens added since the last flush (bytes)
        self._pending: List[bytes] = []
        #: hashfunc's values since the last flush (made with the first)
        self._features: Optional[List[int]] = None

    @property
    def permutations(self) -> np.ndarray:
        """datasketch's (2, num_perm) permutation parameters (a's, b's);
        with scheme="datasketch" only (the other schemes hash in the
        library)."""
        if self._perm is None:
            raise AttributeError("permutations: only with scheme='datasketch'")
        return self._perm

    def _key(self) -> Tuple[int, int, str]:
        """The contract's key in _PARAMS and _EMPTY (see _contract)."""
        return (self._n, self.seed, self._scheme)

    def _feature_list(self) -> List[int]:
        f = self._features
        if f is None:
            with _stripe(self):  # two first updates make one list
                f = self._features
                if f is None:
                    f = self._features = []
        return f

    # Updates only append to a list (one atomic operation under the GIL, so
    # no lock); _flush signs what is there under the MinHash's stripe lock
    # and removes exactly what it signed, so a token appended meanwhile by
    # another thread stays for the next flush.
    def update(self, b: Any) -> None:
        """Add one token (bytes, or str encoded UTF-8)."""
        if self.hashfunc is not None:
            self._feature_list().append(int(self.hashfunc(b)) & 0xFFFFFFFFFFFFFFFF)
        elif type(b) is bytes:
            self._pending.append(b)
        else:
            self._pending.append(_token(b))

    def update_batch(self, b: Iterable[Any]) -> None:
        """Add every token of ``b`` (a single str or bytes is a TypeError)."""
        if isinstance(b, (str, bytes, bytearray, memoryview)):
            raise TypeError("update_batch: an iterable of tokens, not a single %s"
                            % type(b).__name__)
        if self.hashfunc is not None:
            hf = self.hashfunc
            self._feature_list().extend([int(hf(x)) & 0xFFFFFFFFFFFFFFFF for x in b])
            return
        toks = b if type(b) is list else list(b)
        if set(map(type, toks)) <= _BYTES:  # the usual case, checked in C
            self._pending.extend(toks)
        else:
            self._pending.extend([_token(x) for x in toks])

    def _flush(self) -> _SigHandle:
        """Sign the tokens added since the last flush; returns the C
        signature (one whole state: it is never changed)."""
        if not self._pending and not self._features:
            return self._h
        with _stripe(self):
            return self._flush_held()

    def _flush_held(self) -> _SigHandle:
        """_flush, under the stripe lock. Plain ASCII words are signed as
        one text (one library call: the word unit with k = 1 hashes each
        word as hash_bytes does), the rest one by one. The new state is
        stored before the signed tokens leave the lists: a _flush that
        finds no tokens (and so takes no lock) then has their state. On an
        error the tokens stay, for the next flush."""
        pending, features = self._pending, self._features
        n, m = len(pending), len(features) if features else 0
        if not n and not m:
            return self._h
        toks = pending[:n]
        feats: List[int] = features[:m] if features else []
        if self._exact is not None:
            self._flush_datasketch(toks, feats)
        else:
            self._h = self._sign_pending(toks, feats)
        del pending[:n]
        if m:
            assert features is not None
            del features[:m]
        return self._h

    def _sign_pending(self, toks: List[bytes], feats: List[int]) -> _SigHandle:
        """The C signature with toks and feats added (a new one)."""
        h = self._h
        if toks:
            # ASCII letters and digits go in as one text (in this thread's
            # scratch signature), the rest as hashes of whole tokens
            plain = toks if all(toks) and b"".join(toks).isalnum() else \
                [t for t in toks if t.isalnum()]
            if plain:
                h = _signed(_thread_scratch(self), h, b" ".join(plain))
            if plain is not toks:
                rest = [t for t in toks if not t.isalnum()]
                if rest:
                    p = _PARAMS[self._key()]
                    h = _with_features(h, _token_hashes(p, rest, "MinHash.update"))
        if feats:
            h = _with_features(h, np.array(feats, dtype=np.uint64))
        return h

    def _flush_datasketch(self, toks: List[bytes], feats: List[int]) -> None:
        """scheme="datasketch": datasketch's update_batch on the exact
        values, then the C signature rebuilt from them (under the stripe
        lock, held by _flush)."""
        hv = [_sha1_hash32(toks)] if toks else []
        if feats:  # hashfunc's values, in datasketch's uint64
            hv.append(np.array(feats, dtype=np.uint64))
        if hv:
            assert self._exact is not None and self._perm is not None
            exact = self._exact.copy()  # readers copy the old one meanwhile
            _apply(exact, np.concatenate(hv) if len(hv) > 1 else hv[0], self._perm)
            self._set_exact(exact)

    def _set_exact(self, exact: np.ndarray) -> None:
        """scheme="datasketch": these exact values and their C signature
        (under the stripe lock)."""
        h = Signature.from_values(_PARAMS[self._key()], _as_signature_values(exact))._h
        self._exact = exact
        self._h = h

    def _check(self, other: Any, what: str) -> "MinHash":
        if not isinstance(other, MinHash):
            raise TypeError("%s: a MinHash, not %s" % (what, type(other).__name__))
        if other.seed != self.seed:
            raise ValueError("Cannot %s MinHash with different seeds" % what)
        if len(other) != len(self):
            raise ValueError("Cannot %s MinHash with different numbers of permutation "
                             "functions" % what)
        if other._scheme != self._scheme:
            raise ValueError("Cannot %s MinHash with different schemes (%s, %s)"
                             % (what, self._scheme, other._scheme))
        return other

    def jaccard(self, other: "MinHash") -> float:
        """Estimated Jaccard similarity: the fraction of equal values."""
        self._check(other, "compute Jaccard given")
        if self._exact is not None:
            return float(np.count_nonzero(self.hashvalues == other.hashvalues)) / len(self)
        a, b = self._flush(), other._flush()
        return float(np.count_nonzero(_sig_values(a) == _sig_values(b))) / len(self)

    def count(self) -> float:
        """Estimated number of distinct tokens."""
        v = self.hashvalues.astype(np.float64)
        if self.is_empty():
            return 0.0
        k = len(v)
        if self._scheme != "oph":
            return k / float(np.sum(v / _MAX_HASH)) - 1.0
        # OPH: value v lies in bin (v k) >> 32, and its offset in the bin
        # is the minimum of about n / k uniforms
        u = (v * k / 2.0 ** 32) % 1.0
        return k * (k / float(np.sum(u)) - 1.0)

    def merge(self, other: "MinHash") -> None:
        """Become the MinHash of the union with ``other``."""
        self._check(other, "merge")
        # other first, and its lock let go: never two stripe locks at once
        if self._exact is not None:
            ov = other.hashvalues
            with _stripe(self):
                self._flush_held()
                assert self._exact is not None
                self._set_exact(np.minimum(self._exact, ov))
            return
        o = other._flush()
        with _stripe(self):
            self._h = _forked(self._flush_held(), _merge, o, what="merge")

    def digest(self) -> np.ndarray:
        """A copy of the hash values."""
        return self.hashvalues

    @property
    def hashvalues(self) -> np.ndarray:
        """The num_perm values as uint64 (2^32-1 each while empty); a copy:
        assign to the attribute to replace them."""
        h = self._flush()
        exact = self._exact  # replaced, never changed, by writes
        if exact is not None:
            return exact.copy()
        return _sig_values(h).astype(np.uint64)

    @hashvalues.setter
    def hashvalues(self, values: Any) -> None:
        if self._exact is not None:
            v = np.array(values, dtype=np.uint64)
            if v.shape != self._exact.shape:
                raise ValueError("hashvalues: %d values; expected %d"
                                 % (v.size, self._exact.size))
            with _stripe(self):
                self._drop_pending()
                self._set_exact(v)
            return
        h = Signature.from_values(_PARAMS[self._key()], np.asarray(values))._h
        with _stripe(self):
            self._drop_pending()
            self._h = h

    def _state(self) -> Tuple[_SigHandle, Optional[np.ndarray]]:
        """The C signature and the exact values (scheme="datasketch") of one
        moment: a write changes them one after the other, under the
        stripe lock, so with exact values they are read under it too."""
        if self._exact is None:
            return self._flush(), None
        with _stripe(self):
            return self._flush_held(), self._exact

    def _drop_pending(self) -> None:
        del self._pending[:]
        if self._features:
            del self._features[:]

    def is_empty(self) -> bool:
        """True when no token was added."""
        return _lib.check(_is_empty(self._flush())) == 1

    def clear(self) -> None:
        """Back to empty."""
        with _stripe(self):
            self._drop_pending()
            if self._exact is not None:
                self._exact = np.full(len(self._exact), _MAX64, dtype=np.uint64)
            self._h = _EMPTY[self._key()]._h

    def copy(self) -> "MinHash":
        """An independent copy."""
        m = MinHash.__new__(type(self))
        m.seed, m.hashfunc, m._scheme = self.seed, self.hashfunc, self._scheme
        m._h, exact = self._state()  # copy-on-write: sharing _h is a copy
        m._exact = None if exact is None else exact.copy()
        m._perm = self._perm
        m._n = self._n
        m._pending, m._features = [], None
        return m

    def __len__(self) -> int:
        return self._n

    def __eq__(self, other: object) -> bool:
        return (type(self) is type(other) and self.seed == other.seed  # type: ignore
                and np.array_equal(self.hashvalues, other.hashvalues))  # type: ignore

    __hash__ = None  # type: ignore[assignment]  # mutable, as in datasketch

    def __reduce__(self) -> Tuple[Any, ...]:
        if self._exact is not None:  # the exact values, and no library bytes
            return (_restore_datasketch, (type(self), self.seed, self.hashfunc,
                                          self.hashvalues.tobytes(), self._perm_arg()))
        return (_restore, (type(self), self.seed, self.hashfunc, self._scheme,
                           bytes(_sig_of(self._flush()))))

    def _perm_arg(self) -> Optional[np.ndarray]:
        """The permutations when they are not the seed's own (given by hand)."""
        if self._perm is None or self._perm is _PERMS.get((self.seed, len(self))):
            return None
        return self._perm

    def __repr__(self) -> str:
        return "<simlsh.datasketch.%s num_perm=%d seed=%d>" % (type(self).__name__, len(self),
                                                               self.seed)

    @classmethod
    def union(cls, *mhs: "MinHash") -> "MinHash":
        """The MinHash of the union of two or more MinHashes."""
        if len(mhs) < 2:
            raise ValueError("Cannot union less than 2 MinHash")
        first = mhs[0]
        out = MinHash(num_perm=len(first), seed=first.seed, hashfunc=first.hashfunc,
                      scheme=first._scheme)
        for m in mhs:
            out.merge(m)
        return LeanMinHash(out) if issubclass(cls, LeanMinHash) else out

    @classmethod
    def bulk(cls, b: Iterable[Iterable[Any]], **kwargs: Any) -> List["MinHash"]:
        """One MinHash per set of tokens in ``b``; ``kwargs`` as the
        constructor's."""
        out = []
        for tokens in b:
            m = MinHash(**kwargs)
            m.update_batch(tokens)
            out.append(m if cls is MinHash else cls(m))  # type: ignore[call-arg]
        return out

    @classmethod
    def generator(cls, b: Iterable[Iterable[Any]], **kwargs: Any) -> Iterator["MinHash"]:
        """As :meth:`bulk`, one at a time."""
        for tokens in b:
            m = MinHash(**kwargs)
            m.update_batch(tokens)
            yield m


def _restore(cls: type, seed: int, hashfunc: Any, scheme: str, data: bytes) -> MinHash:
    m = MinHash.__new__(cls)
    m.seed, m.hashfunc, m._scheme = seed, hashfunc, scheme
    m._h = Signature.load(data)._h
    m._n = _lib.check(lib.simlsh_signature_num_perm(m._h))
    _contract(m._n, seed, scheme)  # its params, for updates (a new process has none)
    m._exact = m._perm = None
    m._pending, m._features = [], None
    return m


def _restore_datasketch(cls: type, seed: int, hashfunc: Any, values: bytes,
                        perm: Optional[np.ndarray]) -> MinHash:
    m = MinHash.__new__(cls)
    MinHash.__init__(m, seed=seed, hashfunc=hashfunc,
                     hashvalues=np.frombuffer(values, dtype=np.uint64), permutations=perm,
                     scheme="datasketch")
    return m


class LeanMinHash(MinHash):
    """An immutable MinHash (datasketch's ``LeanMinHash``): made from a
    MinHash, or from ``seed`` and ``hashvalues``; hashable; updating it is a
    TypeError. ``serialize``/``deserialize`` use datasketch's byte layout
    (seed, num_perm, then the values as 32-bit integers).

    Threads: immutable, so any number of threads may share it.
    """

    __slots__ = ()

    def __init__(self, minhash: Optional[MinHash] = None, seed: Optional[int] = None,
                 hashvalues: Optional[Iterable[int]] = None, *,
                 scheme: str = "classic") -> None:
        if minhash is not None:
            if not isinstance(minhash, MinHash):
                raise TypeError("LeanMinHash: a MinHash, not %s" % type(minhash).__name__)
            self.seed, self.hashfunc, self._scheme = minhash.seed, None, minhash._scheme
            self._h, exact = minhash._state()  # copy-on-write: sharing _h is a copy
            self._exact = None if exact is None else exact.copy()
            self._perm = minhash._perm
            self._n = minhash._n
        elif hashvalues is not None and seed is not None:
            MinHash.__init__(self, seed=seed, hashvalues=hashvalues, scheme=scheme)
        else:
            raise ValueError("Init parameters cannot be None: make sure to set either "
                             "minhash or both of hash values and seed")
        self._pending, self._features = [], None

    def update(self, b: Any) -> None:
        """Always TypeError: a LeanMinHash is immutable."""
        raise TypeError("Cannot update a LeanMinHash")

    def update_batch(self, b: Iterable[Any]) -> None:
        """Always TypeError: a LeanMinHash is immutable."""
        raise TypeError("Cannot update a LeanMinHash")

    def clear(self) -> None:
        """Always TypeError: a LeanMinHash is immutable."""
        raise TypeError("Cannot clear a LeanMinHash")

    def merge(self, other: MinHash) -> None:
        """Always TypeError: a LeanMinHash is immutable."""
        raise TypeError("Cannot merge into a LeanMinHash")

    @property
    def hashvalues(self) -> np.ndarray:
        """The num_perm values as uint64 (a copy)."""
        if self._exact is not None:
            return self._exact.copy()
        return _sig_values(self._h).astype(np.uint64)

    def bytesize(self, byteorder: str = "@") -> int:
        """Bytes :meth:`serialize` writes."""
        return struct.calcsize("%sqi%dI" % (byteorder, len(self)))

    def serialize(self, buf: Any, byteorder: str = "@") -> None:
        """Write seed, num_perm and the values into ``buf`` (bytearray or
        writable buffer of at least :meth:`bytesize` bytes)."""
        if len(buf) < self.bytesize(byteorder):
            raise ValueError("The buffer does not have enough space for holding this "
                             "MinHash.")
        struct.pack_into("%sqi%dI" % (byteorder, len(self)), buf, 0, self.seed, len(self),
                         *self.hashvalues.tolist())

    @classmethod
    def deserialize(cls, buf: Any, byteorder: str = "@", *,
                    scheme: str = "classic") -> "LeanMinHash":
        """Read what :meth:`serialize` wrote; bytes that datasketch wrote
        (the same layout) need ``scheme="datasketch"`` to mean the same."""
        seed, num_perm = struct.unpack_from("%sqi" % byteorder, buf, 0)
        off = struct.calcsize("%sqi" % byteorder)
        values = struct.unpack_from("%s%dI" % (byteorder, num_perm), buf, off)
        return cls(seed=seed, hashvalues=values, scheme=scheme)

    def __hash__(self) -> int:  # type: ignore[override]
        return hash((type(self), self.seed, self.hashvalues.tobytes()))


# ---- indexes ---------------------------------------------------------------------


def _weights(weights: Tuple[float, float]) -> Tuple[float, float]:
    if any(w < 0.0 or w > 1.0 for w in weights):
        raise ValueError("Weight must be in [0.0, 1.0]")
    if sum(weights) != 1.0:
        raise ValueError("Weights must sum to 1.0")
    return weights[0], weights[1]


def _storage(storage_config: Optional[dict]) -> None:
    if storage_config and storage_config.get("type", "dict") != "dict":
        raise ValueError("simlsh.datasketch keeps indexes in memory: storage_config type "
                         "'dict' only, not %r" % storage_config.get("type"))


def _optimal(threshold: float, num_perm: int, fp: float, fn: float) -> Tuple[int, int]:
    b, r = ctypes.c_uint32(), ctypes.c_uint32()
    _lib.check(lib.simlsh_lsh_optimal_params(ctypes.byref(b), ctypes.byref(r), None,
                                             num_perm, max(threshold, 1e-9), fp, fn),
               "optimal params")
    return b.value, r.value


class _Keys:
    """``lsh.keys``: the indexed keys (``in``, ``len``, iteration, as
    datasketch's key storage)."""

    __slots__ = ("_owner",)

    def __init__(self, owner: Any) -> None:
        self._owner = owner

    def __contains__(self, key: object) -> bool:
        return key in self._owner

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self.keys())

    def __len__(self) -> int:
        return self.size()

    def keys(self) -> List[Hashable]:
        with self._owner._lock.read:
            return list(self._owner._ids)

    def size(self) -> int:
        with self._owner._lock.read:
            return len(self._owner._ids)

    def __repr__(self) -> str:
        return "<keys of %r: %d>" % (type(self._owner).__name__, len(self))


class _Keyed:
    """Any hashable key -> the uint64 ids of a native index (never reused).

    A key's first id is in ``_ids`` (an int, which the garbage collector
    never visits), the ids it was indexed under again
    (``check_duplication=False``) in ``_more``."""

    def _init_keys(self) -> None:
        self._lock = RWLock()
        self._ids: Dict[Hashable, int] = {}
        self._more: Dict[Hashable, List[int]] = {}
        self._key_of: Dict[int, Hashable] = {}
        self._next = 0

    def _new_id(self, key: Hashable) -> int:
        i = self._next
        self._next += 1
        if key in self._ids:
            self._more.setdefault(key, []).append(i)
        else:
            self._ids[key] = i
        self._key_of[i] = key
        return i

    def _drop(self, key: Hashable) -> List[int]:
        ids = [self._ids.pop(key)] + self._more.pop(key, [])
        for i in ids:
            del self._key_of[i]
        return ids

    def _undo(self, key: Hashable, i: int) -> None:
        """Forget id i of key (an insert that failed)."""
        del self._key_of[i]
        more = self._more.get(key)
        if not more:
            del self._ids[key]
            return
        if self._ids[key] == i:
            self._ids[key] = more.pop(0)
        else:
            more.remove(i)
        if not more:
            del self._more[key]

    def __contains__(self, key: object) -> bool:
        with self._lock.read:
            try:
                return key in self._ids
            except TypeError:  # unhashable
                return False

    @property
    def keys(self) -> _Keys:
        """The indexed keys (``key in lsh.keys``, ``list(lsh.keys)``)."""
        return _Keys(self)

    def _keys_of(self, ids: Iterable[int]) -> List[Hashable]:
        seen: set = set()
        out = []
        for i in ids:
            k = self._key_of[i]
            if k not in seen:  # a key indexed twice (check_duplication=False)
                seen.add(k)
                out.append(k)
        return out

    def __getstate__(self) -> Dict[str, Any]:
        with self._lock.read:
            d = {k: v for k, v in self.__dict__.items() if k != "_lock"}
            d["_ids"] = dict(self._ids)
            d["_more"] = dict((k, list(v)) for k, v in self._more.items())
            d["_key_of"] = dict(self._key_of)
            return d

    def __setstate__(self, d: Dict[str, Any]) -> None:
        if "_more" not in d:  # pickled by 0.2: a list of ids per key
            lists = d["_ids"]
            d["_ids"] = {k: v[0] for k, v in lists.items()}
            d["_more"] = {k: v[1:] for k, v in lists.items() if len(v) > 1}
        self.__dict__.update(d)
        self._lock = RWLock()


def _minhash(m: Any, n: int, what: str) -> _SigHandle:
    """m's C signature, signed up to now (checked: a MinHash of n values)."""
    if not isinstance(m, MinHash):
        raise TypeError("%s: a MinHash, not %s" % (what, type(m).__name__))
    if m._n != n:
        raise ValueError("Expecting minhash with length %d, got %d" % (n, m._n))
    return m._flush()


class MinHashLSH(_Keyed):
    """datasketch's ``MinHashLSH`` on a simlsh Index: keys of sets whose
    Jaccard similarity with a query likely exceeds ``threshold``.

    ``params=(b, r)`` fixes the banding; otherwise it minimises the weighted
    false positive and negative probabilities (``weights``), as datasketch
    does. Keys are any hashable objects. ``query`` gives the candidates (not
    verified, as in datasketch), in insertion order. ``storage_config``
    must be None or of type ``"dict"``; ``prepickle`` and ``hashfunc`` are
    accepted and change nothing (keys are kept as objects, in memory).

    Threads: insert, remove, merge are exclusive; queries, ``in``, ``keys``
    and pickling run concurrently with each other.
    """

    def __init__(self, threshold: float = 0.9, num_perm: int = 128,
                 weights: Tuple[float, float] = (0.5, 0.5),
                 params: Optional[Tuple[int, int]] = None,
                 storage_config: Optional[dict] = None, prepickle: Optional[bool] = None,
                 hashfunc: Optional[Callable[[bytes], bytes]] = None) -> None:
        _storage(storage_config)
        if threshold > 1.0 or threshold < 0.0:
            raise ValueError("threshold must be in [0.0, 1.0]")
        if num_perm < 2:
            raise ValueError("Too few permutation functions")
        fp, fn = _weights(weights)
        self.threshold = threshold
        self.h = num_perm
        if params is not None:
            self.b, self.r = params
            if self.b * self.r > num_perm:
                raise ValueError("The product of b and r in params is %d * %d = %d -- it must "
                                 "be less than num_perm %d. Did you forget to specify "
                                 "num_perm?" % (self.b, self.r, self.b * self.r, num_perm))
        else:
            self.b, self.r = _optimal(threshold, num_perm, fp, fn)
        if self.b < 2:
            raise ValueError("The number of bands are too small (b < 2)")
        self._weights = (fp, fn)
        self._ix: Optional[Index] = None  # made at the first insert (its contract)
        self._query_buffer: List[MinHash] = []
        self._init_keys()

    def _index_for(self, h: _SigHandle) -> Index:
        if self._ix is None:
            p = _sig_of(h).params.replace(bands=self.b, rows=self.r,
                                          threshold=max(self.threshold, 1e-9))
            self._ix = Index(p)
        return self._ix

    def insert(self, key: Hashable, minhash: MinHash, check_duplication: bool = True) -> None:
        """Insert ``key`` with the MinHash of its set; ValueError when the
        key is present (unless ``check_duplication`` is False: then the key
        is indexed once more) or the MinHash has another length or seed."""
        h = _minhash(minhash, self.h, "insert")
        hash(key)
        # The index is this object's own, used only under its lock, so the
        # library is called here, without the Index wrapper and its lock;
        # signatures are copy-on-write: read without a lock.
        lock = self._lock
        lock.acquire_write()
        try:
            ids = self._ids
            old = ids.get(key)
            if old is not None and check_duplication:
                raise ValueError("The given key already exists")
            ix = self._ix if self._ix is not None else self._index_for(h)
            i = self._next  # _new_id, inline: this runs once per insert
            self._next = i + 1
            if old is None:
                ids[key] = i
            else:
                self._more.setdefault(key, []).append(i)
            self._key_of[i] = key
            rc = _insert(ix._h, i, h)
            if rc < 0:
                self._undo(key, i)
                raise ValueError("insert %r: %s" % (key, _lib.error_for(rc)))
        finally:
            lock.release_write()

    def _insert_many(self, entries: List[Tuple[Hashable, np.ndarray]]) -> None:
        """Insert (key, values) rows in one library call (all or nothing)."""
        if not entries:
            return
        with self._lock.write:
            ix = self._ix
            assert ix is not None
            ids = [self._new_id(k) for k, _ in entries]
            try:
                ix.insert_batch(ids, np.stack([v for _, v in entries]))
            except _lib.Error as e:
                for (k, _), i in zip(entries, ids):
                    self._undo(k, i)
                raise ValueError("insert: %s" % e) from None

    def insertion_session(self, buffer_size: int = 50000) -> "MinHashLSHInsertionSession":
        """A context manager whose ``insert`` buffers rows and inserts them
        a batch at a time (one library call per ``buffer_size`` rows)."""
        return MinHashLSHInsertionSession(self, buffer_size)

    def deletion_session(self, buffer_size: int = 50000) -> "MinHashLSHDeletionSession":
        """A context manager whose ``remove`` removes keys."""
        return MinHashLSHDeletionSession(self)

    def query(self, minhash: MinHash) -> List[Hashable]:
        """Keys whose MinHash shares a band with ``minhash`` (candidates)."""
        h = _minhash(minhash, self.h, "query")
        lock = self._lock
        lock.acquire_read()  # the index is used only under it (see insert)
        try:
            if self._ix is None:
                return []
            try:
                ids = query_ids(self._ix._h, h, 0)  # an empty sig finds nothing
            except _lib.ContractMismatch:
                raise ValueError("query: the MinHash has another seed or scheme than the "
                                 "indexed ones") from None
            if len(ids) == 1:
                return [self._key_of[ids[0]]]
            return self._keys_of(ids)
        finally:
            lock.release_read()

    def add_to_query_buffer(self, minhash: MinHash) -> None:
        """Buffer a query for :meth:`collect_query_buffer`."""
        _minhash(minhash, self.h, "add_to_query_buffer")
        with self._lock.write:
            self._query_buffer.append(minhash)

    def collect_query_buffer(self) -> List[Hashable]:
        """The keys every buffered query finds (their intersection); empties
        the buffer."""
        with self._lock.write:
            buf, self._query_buffer = self._query_buffer, []
        if not buf:
            return []
        found = [self.query(m) for m in buf]
        common = set(found[0]).intersection(*found[1:])
        return [k for k in found[0] if k in common]

    def remove(self, key: Hashable) -> None:
        """Remove ``key``; ValueError when it is absent."""
        with self._lock.write:
            if key not in self._ids:
                raise ValueError("The given key does not exist")
            for i in self._drop(key):
                self._ix.remove(i)  # type: ignore[union-attr]

    def is_empty(self) -> bool:
        """True when nothing is indexed."""
        with self._lock.read:
            return not self._ids

    def merge(self, other: "MinHashLSH", check_overlap: bool = False) -> None:
        """Add every key of ``other`` (same num_perm, b and r). With
        ``check_overlap``, a key in both is a ValueError and nothing is
        added."""
        if type(self) is not type(other):
            raise ValueError("Cannot merge type MinHashLSH and type %s."
                             % type(other).__name__)
        if (self.h, self.b, self.r) != (other.h, other.b, other.r):
            raise ValueError("Cannot merge MinHashLSH with different initialization "
                             "parameters.")
        if other is self:
            raise ValueError("Cannot merge a MinHashLSH into itself")
        with hold(write=(self,), read=(other,)):
            if check_overlap and set(self._ids).intersection(other._ids):
                raise ValueError("The keys are overlapping, duplicate key exists.")
            if other._ix is None:
                return
            rows = [(other._key_of[i], other._ix.signature(i).values)
                    for i in sorted(other._key_of)]
            if self._ix is None:
                self._ix = Index(other._ix.params)
            self._insert_many(rows)

    def __len__(self) -> int:
        with self._lock.read:
            return len(self._ids)

    # The index is guarded by this object's lock alone (see insert): its
    # bytes are taken under it, not later by pickle.
    def __getstate__(self) -> Dict[str, Any]:
        with self._lock.read:
            d = _Keyed.__getstate__(self)
            if self._ix is not None:
                d["_ix"] = self._ix.to_bytes()
            return d

    def __setstate__(self, d: Dict[str, Any]) -> None:
        if isinstance(d.get("_ix"), bytes):
            d["_ix"] = Index.from_bytes(d["_ix"])
        _Keyed.__setstate__(self, d)


class MinHashLSHInsertionSession:
    """``with lsh.insertion_session() as session: session.insert(k, m)``."""

    def __init__(self, lsh: MinHashLSH, buffer_size: int) -> None:
        self.lsh = lsh
        self.buffer_size = max(1, buffer_size)
        self._buf: List[Tuple[Hashable, np.ndarray]] = []
        self._keys: set = set()
        self._fp: Optional[int] = None

    def __enter__(self) -> "MinHashLSHInsertionSession":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def insert(self, key: Hashable, minhash: MinHash, check_duplication: bool = True) -> None:
        """As MinHashLSH.insert, buffered."""
        lsh = self.lsh
        sig = _sig_of(_minhash(minhash, lsh.h, "insert"))
        if check_duplication and (key in self._keys or key in lsh):
            raise ValueError("The given key already exists")
        if sig.empty:
            raise ValueError("insert %r: the MinHash is empty" % (key,))
        if self._fp is None:
            with lsh._lock.write:
                ix = lsh._index_for(sig._h)
            self._fp = Signature(ix.params).fingerprint
        if sig.fingerprint != self._fp:
            raise ValueError("insert %r: the MinHash has another seed or scheme than the "
                             "indexed ones" % (key,))
        self._buf.append((key, sig.values))
        self._keys.add(key)
        if len(self._buf) >= self.buffer_size:
            self._flush()

    def _flush(self) -> None:
        buf, self._buf = self._buf, []
        self._keys = set()
        self.lsh._insert_many(buf)

    def close(self) -> None:
        """Insert what is buffered."""
        self._flush()


class MinHashLSHDeletionSession:
    """``with lsh.deletion_session() as session: session.remove(k)``."""

    def __init__(self, lsh: MinHashLSH) -> None:
        self.lsh = lsh

    def __enter__(self) -> "MinHashLSHDeletionSession":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    def remove(self, key: Hashable) -> None:
        """Remove ``key`` at once (ValueError when absent)."""
        self.lsh.remove(key)

    def close(self) -> None:
        """Nothing to do: removals are not buffered."""
        pass


class MinHashLSHForest(_Keyed):
    """datasketch's ``MinHashLSHForest`` on a simlsh Forest: the top-k keys
    by estimated Jaccard. ``l`` prefix trees of depth ``num_perm // l``.
    Keys added with :meth:`add` are searchable after :meth:`index`, as in
    datasketch; ``in`` sees them at once. :meth:`add` keeps the MinHash's
    current state (later updates to the MinHash change nothing here);
    :meth:`index` inserts every pending one under one lock. All added
    MinHashes must share num_perm, seed and scheme: another one is refused
    by :meth:`add`, since its Jaccard with the others would mean nothing.

    Threads: add and index are exclusive; queries, ``in`` and pickling run
    concurrently with each other.
    """

    def __init__(self, num_perm: int = 128, l: int = 8) -> None:  # noqa: E741
        if l <= 0 or num_perm <= 0:
            raise ValueError("num_perm and l must be positive")
        if l > num_perm:
            raise ValueError("l cannot be greater than num_perm")
        self.l = l
        self.k = num_perm // l
        self.h = num_perm
        self._forest: Optional[Forest] = None
        self._contract: Optional[Tuple[int, int, str]] = None  # of the first add
        self._pending: List[int] = []  # ids added, not yet indexed
        # id -> the C signature added: a state of the MinHash's copy-on-write
        # Signature, so holding it is the snapshot, with no copy
        self._sigs: Dict[int, _SigHandle] = {}
        self._init_keys()

    def add(self, key: Hashable, minhash: MinHash) -> None:
        """Add ``key``; searchable after :meth:`index`."""
        if not isinstance(minhash, MinHash):
            raise TypeError("add: a MinHash, not %s" % type(minhash).__name__)
        if minhash._n < self.k * self.l:
            raise ValueError("The num_perm of MinHash out of range")
        contract = (minhash._n, minhash.seed, minhash._scheme)
        h = minhash._flush()
        if _lib.check(lib.simlsh_signature_is_empty(h)) == 1:
            raise ValueError("add %r: the MinHash is empty" % (key,))
        lock = self._lock
        lock.acquire_write()
        try:
            if key in self._ids:
                raise ValueError("The given key has already been added")
            if contract != self._contract:
                if self._contract is not None:
                    raise ValueError("add %r: a MinHash of num_perm %d, seed %d, scheme %r; "
                                     "the forest holds num_perm %d, seed %d, scheme %r"
                                     % ((key,) + contract + self._contract))
                self._contract = contract
            i = self._new_id(key)
            self._pending.append(i)
            self._sigs[i] = h
        finally:
            lock.release_write()

    def index(self) -> None:
        """Make every added key searchable. On error (out of memory) nothing
        changes: the keys stay added, and index() may be called again."""
        with self._lock.write:
            pending = self._pending
            if not pending:
                return
            sigs = self._sigs
            if self._forest is None:
                p = _sig_of(sigs[pending[0]]).params
                self._forest = Forest(p.replace(bands=self.l, rows=self.k))
            try:
                self._forest._insert_owned([(i, sigs[i]) for i in pending])
            except _lib.Error as e:
                raise ValueError("index: %s" % e) from None
            self._pending = []

    def __getstate__(self) -> Dict[str, Any]:
        with self._lock.read:  # the whole state at one moment (a read nests)
            d = super().__getstate__()
            d["_sigs"] = {i: bytes(_sig_of(h)) for i, h in self._sigs.items()}  # handles
            d["_pending"] = list(self._pending)  # don't pickle
        return d

    def __setstate__(self, d: Dict[str, Any]) -> None:
        d["_sigs"] = {i: Signature.load(b)._h for i, b in d["_sigs"].items()}
        super().__setstate__(d)

    def query(self, minhash: MinHash, k: int) -> List[Hashable]:
        """The (at most) ``k`` indexed keys most similar to ``minhash``,
        best first."""
        if k <= 0:
            raise ValueError("k must be positive")
        if not isinstance(minhash, MinHash):
            raise TypeError("query: a MinHash, not %s" % type(minhash).__name__)
        if len(minhash) < self.k * self.l:
            raise ValueError("The num_perm of MinHash out of range")
        sig = _sig_of(minhash._flush())
        with self._lock.read:
            if self._forest is None:
                return []
            try:
                rows = self._forest.query(sig, k)
            except _lib.ContractMismatch:
                raise ValueError("query: the MinHash has another seed or scheme than the "
                                 "indexed ones") from None
            return self._keys_of(i for i, _ in rows)

    def get_minhash_hashvalues(self, key: Hashable) -> np.ndarray:
        """The hash values added under ``key`` (KeyError when absent)."""
        with self._lock.read:
            i = self._ids.get(key)
            if i is None:
                raise KeyError("The provided key does not exist in the LSHForest: %r"
                               % (key,))
            h = self._sigs[i]
        return _sig_of(h).values.astype(np.uint64)

    def is_empty(self) -> bool:
        """True when nothing was indexed."""
        with self._lock.read:
            return self._forest is None or len(self._forest) == 0


class MinHashLSHEnsemble(_Keyed):
    """datasketch's ``MinHashLSHEnsemble`` on a simlsh Ensemble: keys of
    sets that likely contain at least ``threshold`` of a query set.
    :meth:`index` takes every (key, MinHash, size) at once, as datasketch's.
    ``num_part`` and ``m`` are accepted: the library partitions by size
    itself and picks the banding per query and partition, minimising the
    ``weights``' mix of false positives and negatives with a false negative
    counted 4 times (docs/tuning.md, section 7): more candidates than
    datasketch's, fewer misses.

    Threads: index is exclusive; queries, ``in`` and pickling run
    concurrently with each other.
    """

    def __init__(self, threshold: float = 0.9, num_perm: int = 128, num_part: int = 16,
                 m: int = 8, weights: Tuple[float, float] = (0.5, 0.5),
                 storage_config: Optional[dict] = None,
                 prepickle: Optional[bool] = None) -> None:
        _storage(storage_config)
        if threshold > 1.0 or threshold < 0.0:
            raise ValueError("threshold must be in [0.0, 1.0]")
        if num_perm < 2:
            raise ValueError("Too few permutation functions")
        if num_part <= 0:
            raise ValueError("num_part must be at least 1")
        if m < 2 or m > num_perm:
            raise ValueError("m must be in the range of [2, num_perm]")
        self.threshold = threshold
        self.h = num_perm
        self.m = m
        self._weights = _weights(weights)
        self._ens: Optional[Ensemble] = None
        self._init_keys()

    def index(self, entries: Iterable[Tuple[Hashable, MinHash, int]]) -> None:
        """Index every (key, MinHash, size of its set) of ``entries``; once."""
        with self._lock.write:
            if self._ids:
                raise ValueError("Cannot call index again on a non-empty index")
            rows = []
            for key, minhash, size in entries:
                if size <= 0:
                    raise ValueError("Set size must be positive")
                rows.append((key, _sig_of(_minhash(minhash, self.h, "index")), size))
            if not rows:
                raise ValueError("entries is empty")
            fp, fn = self._weights
            ens = Ensemble(rows[0][1].params.replace(fp_weight=fp, fn_weight=fn))
            ids = []
            try:
                for key, sig, size in rows:
                    ids.append(self._new_id(key))
                    ens.insert(ids[-1], sig, size)
            except _lib.Error as e:
                for i in ids:
                    k = self._key_of.get(i)
                    if k is not None and k in self._ids:
                        self._drop(k)
                raise ValueError("index: %s" % e) from None
            self._ens = ens

    def query(self, minhash: MinHash, size: int) -> Iterator[Hashable]:
        """Keys of sets likely to contain at least ``threshold`` of the query
        set (MinHash ``minhash``, ``size`` distinct elements): a generator,
        as datasketch's."""
        sig = _sig_of(_minhash(minhash, self.h, "query"))
        if size <= 0:
            raise ValueError("Query set size must be positive")
        with self._lock.read:
            if self._ens is None or sig.empty:
                keys: List[Hashable] = []
            else:
                try:
                    rows = self._ens.query(sig, size, max(self.threshold, 1e-9))
                except _lib.ContractMismatch:
                    raise ValueError("query: the MinHash has another seed or scheme than "
                                     "the indexed ones") from None
                keys = self._keys_of(i for i, _ in rows)
        yield from keys

    def is_empty(self) -> bool:
        """True when nothing is indexed."""
        with self._lock.read:
            return not self._ids
