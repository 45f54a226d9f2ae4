"""simlsh: near-duplicate detection with shingling, MinHash and LSH banding.

A thin binding of the C library libsimlsh (loaded with ctypes; see
docs/python.md). The library is the one this package was built with, or the
file named by the environment variable ``SIMLSH_LIBRARY``; importing checks
its version.

>>> import simlsh
>>> p = simlsh.Params(threshold=0.5)
>>> a = simlsh.Signature(p, "The quick brown fox jumps over the lazy dog")
>>> b = simlsh.Signature(p, "The quick brown fox jumped over the lazy dog")
>>> round(a.jaccard(b), 1) >= 0.5
True
"""

from ._lib import (LIB_PATH, LIB_VERSION, AlreadyExists, BufferTooSmall, ContractMismatch,
                   Corrupt, EmptyInput, Error, InvalidArgument, InvalidState, InvalidUTF8,
                   IOFailure, NotFound, OutOfMemory, Unsupported)
from ._core import (EMPTY_VALUE, ISA_AUTO, ISA_AVX2, ISA_AVX512, ISA_SCALAR, KEYS,
                    NORM_CASEFOLD, NORM_COLLAPSE_SPACE, NORM_LOWER_ASCII, NORM_NFKC,
                    NORM_STRIP_PUNCT, SCHEME_CLASSIC, SCHEME_OPH, UNIT_BYTE, UNIT_CHAR,
                    UNIT_WORD, UTF8_REJECT, UTF8_REPLACE, Index, Isa, Normalize, Params, Scheme,
                    ShingleSet, Signature, Unit, Utf8Policy, band_keys, empty_rows, has_unicode,
                    hash_bytes, sign_batch, version)
from ._dedup import DedupResult, dedup, dedup_params, group_components
from ._forest import Ensemble, Forest

#: Version of this package (the version of the C sources it was made with).
__version__ = "0.2.0"

__all__ = [
    "Params", "ShingleSet", "Signature", "Index", "Forest", "Ensemble", "sign_batch",
    "band_keys", "empty_rows",
    "dedup", "dedup_params", "DedupResult", "group_components", "version", "has_unicode",
    "hash_bytes",
    "Error", "InvalidArgument", "OutOfMemory", "ContractMismatch", "Corrupt", "Unsupported",
    "NotFound", "AlreadyExists", "EmptyInput", "InvalidUTF8", "BufferTooSmall",
    "InvalidState", "IOFailure", "KEYS", "LIB_PATH", "LIB_VERSION", "EMPTY_VALUE",
    "UNIT_BYTE", "UNIT_CHAR", "UNIT_WORD", "NORM_LOWER_ASCII", "NORM_COLLAPSE_SPACE",
    "NORM_STRIP_PUNCT", "NORM_CASEFOLD", "NORM_NFKC", "UTF8_REPLACE", "UTF8_REJECT",
    "SCHEME_OPH", "SCHEME_CLASSIC", "ISA_AUTO", "ISA_SCALAR", "ISA_AVX2", "ISA_AVX512",
    "Unit", "Normalize", "Utf8Policy", "Scheme", "Isa",
]
