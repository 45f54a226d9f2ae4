"""simlsh.Params: keys, names, bounds, errors, copies, pickling."""

import copy
import pickle

import pytest

import simlsh

LIBRARY_DEFAULTS = {
    "unit": 1, "k": 5, "normalize": 0, "utf8_policy": 0, "seed": 0, "hash_bits": 32,
    "num_perm": 128, "scheme": 0, "bands": 0, "rows": 0, "store_signatures": 1, "isa": 0,
    "threshold": 0.8, "fp_weight": 0.5, "fn_weight": 0.5,
}


def test_defaults_are_the_librarys():
    assert simlsh.Params().to_dict() == LIBRARY_DEFAULTS


def test_keys_come_from_the_library():
    # names and numbers of include/simlsh.h
    assert simlsh.KEYS["unit"] == 1 and simlsh.KEYS["fn_weight"] == 15
    assert set(LIBRARY_DEFAULTS) <= set(simlsh.KEYS)


def test_keywords_and_names():
    p = simlsh.Params(unit="word", k=3, normalize="lower,space,punct", scheme="classic",
                      utf8_policy="reject", threshold=0.5, seed=2**32 - 1, hash_bits=64)
    assert p.unit == simlsh.UNIT_WORD and p["k"] == 3
    assert p.normalize == simlsh.NORM_LOWER_ASCII | simlsh.NORM_COLLAPSE_SPACE | \
        simlsh.NORM_STRIP_PUNCT
    assert p.scheme == simlsh.SCHEME_CLASSIC and p.utf8_policy == simlsh.UTF8_REJECT
    assert p.threshold == 0.5 and p.get("seed") == 2**32 - 1 and p.hash_bits == 64
    assert simlsh.Params(normalize=["lower", "space"]).normalize == 3
    assert simlsh.Params(normalize="none").normalize == 0
    assert simlsh.Params(unit="BYTE").unit == 0


@pytest.mark.parametrize("kwargs", [
    {"k": 0}, {"k": 65}, {"num_perm": 0}, {"num_perm": 1025}, {"threshold": 0.0},
    {"threshold": 1.5}, {"threshold": float("nan")}, {"hash_bits": 48}, {"unit": 3},
    {"unit": "sentence"}, {"normalize": "upper"}, {"seed": 2**32}, {"seed": -1},
    {"k": "five"}, {"k": 5.5}, {"threshold": "high"},
    {"fp_weight": -1.0}, {"store_signatures": 2},
])
def test_bad_values_raise_invalid_argument(kwargs):
    with pytest.raises(simlsh.InvalidArgument):
        simlsh.Params(**kwargs)


def test_unknown_keyword_is_a_type_error():
    # explicit keywords: a typo is caught as for any Python function
    with pytest.raises(TypeError):
        simlsh.Params(no_such_key=1)
    with pytest.raises(TypeError):
        simlsh.Params().replace(thresold=0.5)
    with pytest.raises(simlsh.InvalidArgument, match="unknown params key 'no_such_key'"):
        simlsh.Params().set("no_such_key", 1)


def test_failed_set_changes_nothing():
    p = simlsh.Params(k=7)
    with pytest.raises(simlsh.InvalidArgument):
        p.set("k", 100)
    assert p.k == 7
    with pytest.raises(AttributeError):
        p.no_such_key


@pytest.mark.skipif(simlsh.has_unicode(), reason="library has utf8proc")
def test_unicode_flags_without_utf8proc():
    with pytest.raises(simlsh.Unsupported):
        simlsh.Params(normalize="nfkc")


@pytest.mark.skipif(not simlsh.has_unicode(), reason="library built without utf8proc")
def test_unicode_flags_with_utf8proc():
    assert simlsh.Params(normalize="casefold,nfkc").normalize == 24


def test_bounds():
    assert simlsh.Params.bounds("k") == (1, 64)
    assert simlsh.Params.bounds("num_perm") == (1, 1024)
    assert simlsh.Params.bounds("threshold") == (0.0, 1.0)
    with pytest.raises(simlsh.InvalidArgument):
        simlsh.Params.bounds("nope")


def test_copy_replace_equality_and_pickle():
    p = simlsh.Params(k=4, threshold=0.6, bands=16, rows=4)
    q = p.copy()
    assert q == p and q is not p
    q.set("k", 6)
    assert p.k == 4 and q != p
    assert p.replace(k=6) == q
    assert copy.deepcopy(p) == p and copy.copy(p) == p
    r = pickle.loads(pickle.dumps(p))
    assert r == p and r.to_dict() == p.to_dict()
    assert "k=4" in repr(p)


def test_fingerprints_follow_scopes():
    a, b = simlsh.Params(), simlsh.Params(threshold=0.5)
    # threshold only matters to the index (it moves the bands)
    assert a.fingerprint("signature") == b.fingerprint("signature")
    assert a.fingerprint("index") != b.fingerprint("index")
    assert a.fingerprint("shingles") != simlsh.Params(k=4).fingerprint("shingles")
    with pytest.raises(simlsh.InvalidArgument):
        a.fingerprint("everything")


def test_bands_rows():
    assert simlsh.Params(bands=16, rows=8).bands_rows() == (16, 8)
    b, r = simlsh.Params(threshold=0.5).bands_rows()
    assert b * r <= 128 and b > 1
    with pytest.raises(simlsh.InvalidArgument):
        simlsh.Params(bands=100, rows=100).bands_rows()
