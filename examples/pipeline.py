#!/usr/bin/env python3
"""examples/pipeline.c through ctypes: no compiler, only the shared library.

Usage: pipeline.py [PATH/TO/libsimlsh.so]   (or set SIMLSH_LIBRARY)
Prints exactly what the C example prints (a test compares the two).
"""
import ctypes
import ctypes.util
import os
import sys

# Values from include/simlsh.h: the ABI freezes them.
SIMLSH_PARAM_THRESHOLD = 13
SIMLSH_QUERY_VERIFY = 1


def load_library():
    # SIMLSH_LIBRARY is the name every binding reads; SIMLSH_LIB is the
    # deprecated one, still read
    path = (sys.argv[1] if len(sys.argv) > 1 else None) or os.environ.get("SIMLSH_LIBRARY") \
        or os.environ.get("SIMLSH_LIB") or ctypes.util.find_library("simlsh")
    if not path:
        sys.exit("pipeline.py: give the path of libsimlsh.so as an argument or in SIMLSH_LIBRARY")
    return ctypes.CDLL(path)


lib = load_library()
P = ctypes.c_void_p  # every simlsh object is an opaque handle
PP = ctypes.POINTER(ctypes.c_void_p)
U32P = ctypes.POINTER(ctypes.c_uint32)
U64P = ctypes.POINTER(ctypes.c_uint64)
DBLP = ctypes.POINTER(ctypes.c_double)

SIGNATURES = {
    "simlsh_version_string": (ctypes.c_char_p, []),
    "simlsh_strerror": (ctypes.c_char_p, [ctypes.c_int]),
    "simlsh_params_new": (ctypes.c_int, [PP, P]),
    "simlsh_params_free": (None, [P]),
    "simlsh_params_set_double": (ctypes.c_int, [P, ctypes.c_int, ctypes.c_double]),
    "simlsh_signature_new": (ctypes.c_int, [PP, P]),
    "simlsh_signature_free": (None, [P]),
    "simlsh_signature_add_text": (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_size_t]),
    "simlsh_signature_jaccard": (ctypes.c_int, [DBLP, P, P]),
    "simlsh_index_new": (ctypes.c_int, [PP, P]),
    "simlsh_index_free": (None, [P]),
    "simlsh_index_insert": (ctypes.c_int, [P, ctypes.c_uint64, P]),
    "simlsh_index_bands": (ctypes.c_int, [U32P, U32P, P]),
    "simlsh_index_query": (ctypes.c_int, [P, P, P, ctypes.c_int]),
    "simlsh_results_new": (ctypes.c_int, [PP, P]),
    "simlsh_results_free": (None, [P]),
    "simlsh_results_count": (ctypes.c_size_t, [P]),
    "simlsh_results_row": (ctypes.c_int, [P, ctypes.c_size_t, U64P, U64P, DBLP]),
}
for name, (restype, argtypes) in SIGNATURES.items():
    fn = getattr(lib, name)
    fn.restype, fn.argtypes = restype, argtypes


def check(rc, what):
    if rc != 0:
        sys.exit("%s: %s" % (what, lib.simlsh_strerror(rc).decode()))


DOCS = [
    b"The quick brown fox jumps over the lazy dog by the river bank.",
    b"The quick brown fox jumped over the lazy dog by the river bank.",
    b"MinHash estimates the Jaccard similarity of two sets of shingles.",
]

params, index, res = P(), P(), P()
check(lib.simlsh_params_new(ctypes.byref(params), None), "simlsh_params_new")
check(lib.simlsh_params_set_double(params, SIMLSH_PARAM_THRESHOLD, 0.5), "set threshold")
check(lib.simlsh_index_new(ctypes.byref(index), params), "simlsh_index_new")
sigs = []
for i, text in enumerate(DOCS):
    sig = P()
    check(lib.simlsh_signature_new(ctypes.byref(sig), params), "simlsh_signature_new")
    check(lib.simlsh_signature_add_text(sig, text, len(text)), "simlsh_signature_add_text")
    check(lib.simlsh_index_insert(index, i, sig), "simlsh_index_insert")
    sigs.append(sig)

bands, rows = ctypes.c_uint32(), ctypes.c_uint32()
check(lib.simlsh_index_bands(ctypes.byref(bands), ctypes.byref(rows), index), "bands")
print("simlsh %s: %u bands x %u rows" % (lib.simlsh_version_string().decode(),
                                          bands.value, rows.value))
j = ctypes.c_double()
for i in range(1, len(DOCS)):
    check(lib.simlsh_signature_jaccard(ctypes.byref(j), sigs[0], sigs[i]), "jaccard")
    print("estimated jaccard(0, %d) = %.4f" % (i, j.value))

check(lib.simlsh_results_new(ctypes.byref(res), None), "simlsh_results_new")
check(lib.simlsh_index_query(res, index, sigs[0], SIMLSH_QUERY_VERIFY), "simlsh_index_query")
row_id, score = ctypes.c_uint64(), ctypes.c_double()
line = "near-duplicates of 0:"
for i in range(lib.simlsh_results_count(res)):
    check(lib.simlsh_results_row(res, i, ctypes.byref(row_id), None, ctypes.byref(score)), "row")
    line += " %d (%.4f)" % (row_id.value, score.value)
print(line)

# Objects copy what they need from each other, so any free order is safe.
lib.simlsh_results_free(res)
for sig in sigs:
    lib.simlsh_signature_free(sig)
lib.simlsh_index_free(index)
lib.simlsh_params_free(params)
