"""Loading libsimlsh with ctypes: search order, version check, prototypes, errors.

Nothing here is public except through ``simlsh/__init__.py``. ctypes calls
foreign functions with the GIL released (``CDLL``, not ``PyDLL``), so long
calls such as signing a batch or a query run in parallel with other Python
threads; the few trivial calls listed in ``GIL_HELD`` keep it.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

#: Library version this package needs at least (its functions are in the
#: SIMLSH_0.2 and SIMLSH_0.3 nodes of the library's symbol map).
REQUIRED = (0, 2, 0)

P = ctypes.c_void_p
PP = ctypes.POINTER(ctypes.c_void_p)
I32 = ctypes.c_int
I64 = ctypes.c_int64
U32 = ctypes.c_uint32
U64 = ctypes.c_uint64
SZ = ctypes.c_size_t
DBL = ctypes.c_double
U32P = ctypes.POINTER(U32)
U64P = ctypes.POINTER(U64)
I64P = ctypes.POINTER(I64)
SZP = ctypes.POINTER(SZ)
DBLP = ctypes.POINTER(DBL)

# name: (restype, argtypes). Buffers are passed as c_void_p so that bytes,
# numpy arrays (arr.ctypes.data) and ctypes arrays all fit.
_PROTOTYPES: Dict[str, Tuple[object, List[object]]] = {
    "simlsh_version_number": (ctypes.c_uint, []),
    "simlsh_version_string": (ctypes.c_char_p, []),
    "simlsh_strerror": (ctypes.c_char_p, [I32]),
    "simlsh_error_name": (ctypes.c_char_p, [I32]),
    "simlsh_has_unicode": (I32, []),
    "simlsh_isa_supported": (I32, [I32]),
    "simlsh_params_new": (I32, [PP, P]),
    "simlsh_params_free": (None, [P]),
    "simlsh_params_copy": (I32, [PP, P]),
    "simlsh_params_set_int": (I32, [P, I32, I64]),
    "simlsh_params_get_int": (I32, [P, I32, I64P]),
    "simlsh_params_set_double": (I32, [P, I32, DBL]),
    "simlsh_params_get_double": (I32, [P, I32, DBLP]),
    "simlsh_params_int_bounds": (I32, [I32, I64P, I64P]),
    "simlsh_params_double_bounds": (I32, [I32, DBLP, DBLP]),
    "simlsh_params_key_name": (ctypes.c_char_p, [I32]),
    "simlsh_params_fingerprint": (I32, [U64P, P, I32]),
    "simlsh_hash_bytes": (I32, [U64P, P, P, SZ]),
    "simlsh_lsh_optimal_params": (I32, [U32P, U32P, U32P, U32, DBL, DBL, DBL]),
    "simlsh_lsh_probability": (I32, [DBLP, U32, U32, DBL]),
    "simlsh_lsh_optimal_params_recall": (I32, [U32P, U32P, DBLP, U32, DBL, DBL, DBL]),
    "simlsh_group_star": (I32, [P, SZP, P, P, P, SZ, P, SZ]),
    "simlsh_group_components": (I32, [P, SZP, P, P, SZ]),
    "simlsh_dedup_prefilter": (DBL, [DBL, U32]),
    "simlsh_dedup_banding": (I32, [P, I32, DBL, U32, U32, U32P, U32P]),
    "simlsh_dedup_new": (I32, [PP, P, I32, DBL]),
    "simlsh_dedup_free": (None, [P]),
    "simlsh_dedup_set": (I32, [P, I32, DBL]),
    "simlsh_dedup_sizes": (I32, [P, P, P, SZ]),
    "simlsh_dedup_next": (I32, [P, P, P]),
    "simlsh_dedup_texts": (I32, [P, P, P, P, SZ]),
    "simlsh_dedup_groups": (I32, [P, SZP, P]),
    "simlsh_dedup_stat": (I32, [U64P, P, I32]),
    "simlsh_index_pairs_v2": (I32, [P, P, I32, SZ, DBL, U32]),
    "simlsh_shingleset_new": (I32, [PP, P]),
    "simlsh_shingleset_free": (None, [P]),
    "simlsh_shingleset_copy": (I32, [PP, P]),
    "simlsh_shingleset_add_text": (I32, [P, P, SZ]),
    "simlsh_shingleset_add_features": (I32, [P, P, SZ]),
    "simlsh_shingleset_count": (I32, [SZP, P]),
    "simlsh_shingleset_hashes": (I32, [P, SZ, SZP, P]),
    "simlsh_shingleset_jaccard": (I32, [DBLP, P, P]),
    "simlsh_shingleset_containment": (I32, [DBLP, P, P]),
    "simlsh_shingleset_params": (I32, [PP, P]),
    "simlsh_shingleset_save": (I32, [P, SZ, SZP, P]),
    "simlsh_shingleset_load": (I32, [PP, P, SZ, P]),
    "simlsh_signature_new": (I32, [PP, P]),
    "simlsh_signature_free": (None, [P]),
    "simlsh_signature_copy": (I32, [PP, P]),
    "simlsh_signature_add_text": (I32, [P, P, SZ]),
    "simlsh_signature_add_features": (I32, [P, P, SZ]),
    "simlsh_signature_add_shingleset": (I32, [P, P]),
    "simlsh_signature_merge": (I32, [P, P]),
    "simlsh_signature_clear": (I32, [P]),
    "simlsh_signature_jaccard": (I32, [DBLP, P, P]),
    "simlsh_signature_is_empty": (I32, [P]),
    "simlsh_signature_num_perm": (I32, [P]),
    "simlsh_signature_values": (I32, [P, SZ, SZP, P]),
    "simlsh_signature_band_keys": (I32, [P, SZ, P, U32, U32]),
    "simlsh_signature_params": (I32, [PP, P]),
    "simlsh_signature_fingerprint": (I32, [U64P, P]),
    "simlsh_signature_save": (I32, [P, SZ, SZP, P]),
    "simlsh_signature_load": (I32, [PP, P, SZ, P]),
    "simlsh_signature_from_values": (I32, [PP, P, P, SZ]),
    "simlsh_results_new": (I32, [PP, P]),
    "simlsh_results_free": (None, [P]),
    "simlsh_results_count": (SZ, [P]),
    "simlsh_results_a": (P, [P]),
    "simlsh_results_b": (P, [P]),
    "simlsh_results_scores": (P, [P]),
    "simlsh_results_offset": (I32, [SZP, P, SZ]),
    "simlsh_results_truncated": (I32, [P]),
    "simlsh_index_new": (I32, [PP, P]),
    "simlsh_index_free": (None, [P]),
    "simlsh_index_bands": (I32, [U32P, U32P, P]),
    "simlsh_index_params": (I32, [PP, P]),
    "simlsh_index_fingerprint": (I32, [U64P, P]),
    "simlsh_index_insert": (I32, [P, U64, P]),
    "simlsh_index_remove": (I32, [P, U64]),
    "simlsh_index_contains": (I32, [P, U64]),
    "simlsh_index_count": (I32, [SZP, P]),
    "simlsh_index_reserve": (I32, [P, SZ]),
    "simlsh_index_clear": (I32, [P]),
    "simlsh_index_memory": (I32, [SZP, SZP, P]),
    "simlsh_index_query": (I32, [P, P, P, I32]),
    "simlsh_index_query_batch": (I32, [P, P, P, SZ, I32]),
    "simlsh_index_query_ids": (I32, [P, SZ, SZP, P, P, I32]),
    "simlsh_index_pairs": (I32, [P, P, I32, SZ]),
    "simlsh_index_cluster": (I32, [P, P, I32]),
    "simlsh_index_save": (I32, [P, SZ, SZP, P]),
    "simlsh_index_load": (I32, [PP, P, SZ, P]),
    "simlsh_index_signature": (I32, [PP, P, U64]),
    "simlsh_index_set_userdata": (I32, [P, P, SZ]),
    "simlsh_index_userdata": (I32, [PP, SZP, P]),
    "simlsh_index_save_file_v2": (I32, [ctypes.POINTER(I32), P, ctypes.c_char_p, I32]),
    "simlsh_index_load_file_v2": (I32, [PP, ctypes.POINTER(I32), ctypes.c_char_p, I32, P]),
}


class Error(Exception):
    """A libsimlsh call failed. ``code`` is the negative SIMLSH_E* value and
    ``name`` its name without the prefix ("EINVAL", ...)."""

    code = 0
    name = "UNKNOWN"


class InvalidArgument(Error, ValueError):
    """SIMLSH_EINVAL: an argument is out of range or does not fit the call."""

    code, name = -1, "EINVAL"


class OutOfMemory(Error, MemoryError):
    """SIMLSH_ENOMEM."""

    code, name = -2, "ENOMEM"


class ContractMismatch(Error, ValueError):
    """SIMLSH_EMISMATCH: objects built with different params were combined."""

    code, name = -3, "EMISMATCH"


class Corrupt(Error, ValueError):
    """SIMLSH_ECORRUPT: corrupt or truncated saved bytes."""

    code, name = -4, "ECORRUPT"


class Unsupported(Error):
    """SIMLSH_EUNSUPPORTED: feature not built in, not enabled by the params,
    or a format too new."""

    code, name = -5, "EUNSUPPORTED"


class NotFound(Error, KeyError):
    """SIMLSH_ENOTFOUND: no such key in the index."""

    code, name = -6, "ENOTFOUND"

    def __str__(self) -> str:  # KeyError would show the repr of the message
        return Exception.__str__(self)


class AlreadyExists(Error, KeyError):
    """SIMLSH_EEXIST: the key is already in the index."""

    code, name = -7, "EEXIST"

    def __str__(self) -> str:
        return Exception.__str__(self)


class EmptyInput(Error, ValueError):
    """SIMLSH_EEMPTY: an empty signature (nothing was left to shingle)."""

    code, name = -8, "EEMPTY"


class InvalidUTF8(Error, ValueError):
    """SIMLSH_EUTF8: invalid UTF-8 with ``utf8_policy="reject"``."""

    code, name = -9, "EUTF8"


class BufferTooSmall(Error):
    """SIMLSH_EBUFSIZE (the package sizes its buffers, so only on misuse)."""

    code, name = -10, "EBUFSIZE"


class InvalidState(Error):
    """SIMLSH_ESTATE: the call is not valid in the object's current state."""

    code, name = -11, "ESTATE"


class IOFailure(Error, OSError):
    """SIMLSH_EIO: a file could not be read or written."""

    code, name = -12, "EIO"


ERRORS: Dict[int, type] = {
    cls.code: cls
    for cls in (InvalidArgument, OutOfMemory, ContractMismatch, Corrupt, Unsupported,
                NotFound, AlreadyExists, EmptyInput, InvalidUTF8, BufferTooSmall,
                InvalidState, IOFailure)
}


def _candidates() -> List[Tuple[str, str]]:
    """(path, where it came from), in search order."""
    env = os.environ.get("SIMLSH_LIBRARY")
    if env:
        # An explicit choice is the only one tried: falling back would hide
        # a typo and load some other build.
        return [(env, "SIMLSH_LIBRARY")]
    out = []
    try:
        from . import _buildinfo  # written by meson when the package is built
    except ImportError:
        return out
    here = Path(__file__).resolve().parent
    for p in _buildinfo.LIBRARIES:
        out.append((str(p if os.path.isabs(p) else here / p), "build configuration"))
    return out


def _load() -> ctypes.CDLL:
    tried = []
    for path, origin in _candidates():
        # a bare file name is left to the dynamic loader's search path
        if os.sep in path and not os.path.exists(path):
            tried.append("%s (%s): no such file" % (path, origin))
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s): %s" % (path, origin, e))
    if not tried:
        tried.append("no library location is known: the package was not built by meson "
                     "(run it from an installed copy, or set SIMLSH_LIBRARY)")
    raise ImportError("simlsh: cannot load libsimlsh; tried:\n  " + "\n  ".join(tried)
                      + "\nSet SIMLSH_LIBRARY to the path of libsimlsh.so to choose one.")


def _version_tuple(number: int) -> Tuple[int, int, int]:
    return number // 10000, number // 100 % 100, number % 100


lib = _load()
LIB_PATH: str = lib._name
try:
    _vn = lib.simlsh_version_number
except AttributeError:
    raise ImportError("simlsh: %s is not libsimlsh (no simlsh_version_number)" % LIB_PATH)
_vn.restype, _vn.argtypes = ctypes.c_uint, []
LIB_VERSION = _version_tuple(_vn())
if LIB_VERSION[0] != REQUIRED[0] or LIB_VERSION < REQUIRED:
    raise ImportError("simlsh: %s is libsimlsh %d.%d.%d; this package needs %d.%d.%d or a "
                      "later %d.x" % ((LIB_PATH,) + LIB_VERSION + REQUIRED + (REQUIRED[0],)))
for _name, (_res, _args) in _PROTOTYPES.items():
    try:
        _fn = getattr(lib, _name)
    except AttributeError:
        raise ImportError("simlsh: %s (version %d.%d.%d) lacks %s" %
                          ((LIB_PATH,) + LIB_VERSION + (_name,)))
    _fn.restype, _fn.argtypes = _res, _args

# Calls that read a field, copy a few hundred bytes or free a small object
# are made with the GIL held (PyDLL). Releasing the GIL costs more than such
# a call, and while other threads run Python every release is a hand-off:
# the caller then queues for the GIL behind them, so a query's bookkeeping
# calls (results_new, count, a, free, ...) would serialise the threads that
# the query itself lets run in parallel. Only calls that never block and
# take microseconds at most belong here.
GIL_HELD = (
    "simlsh_strerror", "simlsh_error_name", "simlsh_params_get_int",
    "simlsh_params_get_double", "simlsh_params_free", "simlsh_signature_free",
    "simlsh_signature_copy", "simlsh_signature_from_values", "simlsh_signature_is_empty",
    "simlsh_signature_clear", "simlsh_signature_fingerprint",
    "simlsh_signature_num_perm", "simlsh_results_new", "simlsh_results_free",
    "simlsh_results_count", "simlsh_results_a", "simlsh_results_b", "simlsh_results_scores",
    "simlsh_results_offset", "simlsh_results_truncated", "simlsh_index_contains",
    "simlsh_index_count",
)
_held = ctypes.PyDLL(LIB_PATH)  # the same loaded library, called without releasing
for _name in GIL_HELD:
    _res, _args = _PROTOTYPES[_name]
    _fn = getattr(_held, _name)
    _fn.restype, _fn.argtypes = _res, _args
    setattr(lib, _name, _fn)


def optional(name: str, restype: object, argtypes: List[object]) -> Optional[Callable]:
    """A function of a later library version, or None when this one lacks it."""
    try:
        fn = getattr(lib, name)
    except AttributeError:
        return None
    fn.restype, fn.argtypes = restype, argtypes
    return fn


def error_for(rc: int, what: str = "") -> Error:
    cls = ERRORS.get(rc, Error)
    msg = lib.simlsh_strerror(rc).decode()
    err = cls("%s: %s" % (what, msg) if what else msg)
    if cls is Error:
        err.code = rc
        err.name = lib.simlsh_error_name(rc).decode()
    return err


def check(rc: int, what: str = "") -> int:
    """Raise the Error subclass of a negative return code; pass others through."""
    if rc < 0:
        raise error_for(rc, what)
    return rc
