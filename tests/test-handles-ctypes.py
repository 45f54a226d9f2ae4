#!/usr/bin/env python3
"""Handles of the wrong type through ctypes (issue 16, item 4).

ctypes passes handles as c_void_p, untyped, as koffi and cgo do. Driven by
the generated API description, every function that takes a handle (params,
shingle set, signature, results, index, forest, ensemble) is called with a
live handle of each other type in that position (other arguments valid):
it must return SIMLSH_EINVAL (void functions: do nothing;
simlsh_results_count: 0; the result columns: a non-NULL pointer), and
every object must be unchanged afterwards (saved bytes, contract
description and result rows compared).

Usage: test-handles-ctypes.py LIBSIMLSH_SO SIMLSH_API_JSON
"""
import ctypes as C
import json
import sys

lib = C.CDLL(sys.argv[1])
with open(sys.argv[2], encoding="utf-8") as f:
    api = json.load(f)
EINVAL = next(c["value"] for c in api["constants"] if c["name"] == "SIMLSH_EINVAL")
TAGGED = ("simlsh_params", "simlsh_shingleset", "simlsh_signature", "simlsh_results",
          "simlsh_index", "simlsh_forest", "simlsh_ensemble", "simlsh_dedup")

CTYPES = {"int": C.c_int, "unsigned int": C.c_uint, "int64_t": C.c_int64,
          "uint32_t": C.c_uint32, "uint64_t": C.c_uint64, "size_t": C.c_size_t,
          "double": C.c_double, "void": None}


def ctype_of(t):
    if "*" in t:
        return C.c_char_p if t == "const char *" else C.c_void_p
    return CTYPES[t]


fns = {}
for f in api["functions"]:
    fn = getattr(lib, f["name"])
    fn.restype = ctype_of(f["returns"]["type"])
    fn.argtypes = [ctype_of(p["type"]) for p in f["params"]]
    fns[f["name"]] = fn


def check(rc, what):
    if rc != 0:
        sys.exit("FAIL: %s returned %d" % (what, rc))


def new(name, *args):
    h = C.c_void_p()
    check(fns[name](C.byref(h), *args), name)
    return h


P = new("simlsh_params_new", None)
check(fns["simlsh_params_preset"](P, b"dedup"), "preset")
S = new("simlsh_shingleset_new", P)
G = new("simlsh_signature_new", P)
R = new("simlsh_results_new", None)
I = new("simlsh_index_new", P)
F = new("simlsh_forest_new", P)
E = new("simlsh_ensemble_new", P)
text = b"The quick brown fox jumps over the lazy dog."
check(fns["simlsh_shingleset_add_text"](S, text, len(text)), "add_text")
check(fns["simlsh_signature_add_text"](G, text, len(text)), "add_text")
check(fns["simlsh_index_insert"](I, 7, G), "index_insert")
check(fns["simlsh_forest_insert"](F, 7, G), "forest_insert")
check(fns["simlsh_ensemble_insert"](E, 7, G, 10), "ensemble_insert")
check(fns["simlsh_index_query"](R, I, G, 0), "index_query")
D = new("simlsh_dedup_new", I, 1, 0.8)
live = {"simlsh_params": P, "simlsh_shingleset": S, "simlsh_signature": G,
        "simlsh_results": R, "simlsh_index": I, "simlsh_forest": F,
        "simlsh_ensemble": E, "simlsh_dedup": D}


def state():
    out = []
    for fn, h in (("simlsh_shingleset_save", S), ("simlsh_signature_save", G),
                  ("simlsh_index_save", I), ("simlsh_forest_save", F),
                  ("simlsh_ensemble_save", E)):
        n = C.c_size_t()
        check(fns[fn](None, 0, C.byref(n), h), fn)
        buf = C.create_string_buffer(n.value)
        check(fns[fn](buf, n.value, C.byref(n), h), fn)
        out.append(buf.raw)
    buf = C.create_string_buffer(1024)
    n = C.c_size_t()
    check(fns["simlsh_params_describe"](buf, 1024, C.byref(n), P), "describe")
    out.append(buf.value)
    rows = fns["simlsh_results_count"](R)
    if rows != 1:
        sys.exit("FAIL: the results have %d rows, expected 1" % rows)
    a, b, sc = C.c_uint64(), C.c_uint64(), C.c_double()
    check(fns["simlsh_results_row"](R, 0, C.byref(a), C.byref(b), C.byref(sc)), "row")
    out.append((rows, a.value, b.value, sc.value, fns["simlsh_results_truncated"](R)))
    return out


def argument(p, scratch):
    t, name = p["type"], p["name"]
    if p.get("handle"):
        if p["pointer"] == 2:
            return C.cast(scratch.pop(), C.c_void_p)
        return live[p["handle"]]
    if t == "const char *":
        return b"dedup"
    if "*" in t:
        return C.cast(scratch.pop(), C.c_void_p)
    if name in ("cap", "len", "n"):
        return 8
    if t == "double":
        return 0.5
    if name == "bands":
        return 4
    if name == "rows":
        return 8
    return 1


before = state()
calls = 0
for f in api["functions"]:
    if not any(p.get("handle") in TAGGED for p in f["params"]):
        continue
    for i, p in enumerate(f["params"]):
        if p.get("handle") not in TAGGED or p["pointer"] != 1:
            continue
        for other, wrong in live.items():
            if other == p["handle"]:
                continue
            scratch = [C.create_string_buffer(4096) for _ in f["params"]]
            args = [argument(q, scratch) for q in f["params"]]
            args[i] = wrong
            rc = fns[f["name"]](*args)
            calls += 1
            kind = f["returns"]["kind"]
            if f["name"] == "simlsh_results_count":
                want = 0
            elif kind == "pointer":
                want = "non-NULL"
                if rc is None:
                    sys.exit("FAIL: %s with a %s returned NULL" % (f["name"], other))
                continue
            elif kind == "void":
                continue
            else:
                want = EINVAL
            if rc != want:
                sys.exit("FAIL: %s with a %s as %s returned %r, expected %r"
                         % (f["name"], other, p["name"], rc, want))
after = state()
if before != after:
    sys.exit("FAIL: an object changed")
d = C.c_double()
check(fns["simlsh_signature_jaccard"](C.byref(d), G, G), "jaccard")
if d.value != 1.0:
    sys.exit("FAIL: the signature no longer works")
for name, h in (("simlsh_dedup_free", D), ("simlsh_ensemble_free", E), ("simlsh_forest_free", F),
                ("simlsh_index_free", I),
                ("simlsh_results_free", R), ("simlsh_signature_free", G),
                ("simlsh_shingleset_free", S), ("simlsh_params_free", P)):
    fns[name](h)
print("ok: %d calls with a handle of the wrong type refused, objects unchanged" % calls)
