"""simlsh.Signature and simlsh.ShingleSet."""

import array
import copy
import pickle

import numpy as np
import pytest

import simlsh

A = "The quick brown fox jumps over the lazy dog by the river bank."
B = "The quick brown fox jumped over the lazy dog by the river bank."
C = "MinHash estimates the Jaccard similarity of two sets of shingles."


def test_str_is_utf8_and_bytes_like_forms_agree():
    p = simlsh.Params()
    text = "Größe, café — naïve ünïcödé text for hashing"
    ref = simlsh.Signature(p, text.encode("utf-8"))
    for form in (text, bytearray(text.encode()), memoryview(text.encode()),
                 np.frombuffer(text.encode(), dtype=np.uint8),
                 array.array("B", text.encode())):
        assert simlsh.Signature(p, form) == ref
    # not latin-1, not the platform encoding: UTF-8 always
    assert simlsh.Signature(p, text.encode("latin-1", "replace")) != ref


def test_lone_surrogates():
    p = simlsh.Params(unit="byte")
    raw = b"abc\xff\xfedef ghi"
    # text decoded with surrogateescape hashes as its bytes
    assert simlsh.Signature(p, raw.decode("utf-8", "surrogateescape")) == \
        simlsh.Signature(p, raw)
    # other lone surrogates are invalid UTF-8, which the policy handles
    strict = simlsh.Params(utf8_policy="reject")
    with pytest.raises(simlsh.InvalidUTF8):
        simlsh.Signature(strict, "abc\ud800def ghi jkl")
    assert not simlsh.Signature(simlsh.Params(), "abc\ud800def ghi jkl").empty


def test_bad_text_type():
    with pytest.raises(TypeError):
        simlsh.Signature(simlsh.Params(), 42)
    with pytest.raises(TypeError):
        simlsh.Signature(simlsh.Params(), ["a"])
    with pytest.raises(TypeError):
        simlsh.Signature("not params")


def test_jaccard_values_and_known_answers():
    # the numbers examples/pipeline.c prints (tests/check-examples.py checks
    # the C side)
    p = simlsh.Params(threshold=0.5)
    a, b, c = (simlsh.Signature(p, t) for t in (A, B, C))
    assert "%.4f" % a.jaccard(b) == "0.7812"
    assert "%.4f" % a.jaccard(c) == "0.0078"
    v = a.values
    assert v.dtype == np.uint32 and v.shape == (128,)
    assert a.num_perm == 128 and not a.empty
    assert a.jaccard(a.copy()) == 1.0
    assert float(np.mean(a.values == b.values)) == a.jaccard(b)


def test_empty_signatures():
    p = simlsh.Params(normalize="space")
    e = simlsh.Signature(p)
    assert e.empty and (e.values == simlsh.EMPTY_VALUE).all()
    assert simlsh.Signature(p, "   ").empty  # nothing left after normalisation
    assert simlsh.Signature(p, "").empty
    assert e.jaccard(simlsh.Signature(p)) == 1.0
    assert e.jaccard(simlsh.Signature(p, A)) == 0.0
    with pytest.raises(simlsh.EmptyInput):
        e.band_keys()


def test_update_merge_union():
    p = simlsh.Params(scheme="classic")
    u = simlsh.Signature(p, A).update(C)
    m = simlsh.Signature(p, A).merge(simlsh.Signature(p, C))
    assert u == m
    m.clear()
    assert m.empty
    other = simlsh.Signature(simlsh.Params(k=4), A)
    with pytest.raises(simlsh.ContractMismatch):
        m.merge(other)
    with pytest.raises(simlsh.ContractMismatch):
        m.jaccard(other)


@pytest.mark.parametrize("scheme", ["classic", "oph"])
def test_updates_are_copy_on_write_and_keep_the_params(scheme):
    """update() adds text in a private scratch signature and swaps a copy
    in: the result is that of all the documents, earlier copies keep their
    state, and each signature keeps its own params (two signatures of one
    hash contract but different banding, updated in turn)."""
    p = simlsh.Params(scheme=scheme, bands=8, rows=4)
    q = simlsh.Params(scheme=scheme, bands=16, rows=2)
    s, t = simlsh.Signature(p), simlsh.Signature(q)
    snaps = []
    for text in (A, B, C):
        s.update(text)
        t.update(text)
        snaps.append(s.copy())
    u = simlsh.ShingleSet(p, A)
    u.update(B)
    u.update(C)
    assert np.array_equal(s.values, simlsh.Signature(p).update_shingles(u).values)
    assert np.array_equal(s.values, t.values)
    assert snaps[0] == simlsh.Signature(p, A)
    assert snaps[1] == simlsh.Signature(p, A).update(B)
    assert s.params.bands_rows() == (8, 4) and t.params.bands_rows() == (16, 2)
    with pytest.raises(simlsh.InvalidUTF8):
        simlsh.Signature(p.replace(utf8_policy="reject"), A).update(b"\xff")
    r = simlsh.Signature(p.replace(utf8_policy="reject"), A)
    try:
        r.update(b"ok \xff")
    except simlsh.InvalidUTF8:
        pass
    assert r == simlsh.Signature(p.replace(utf8_policy="reject"), A)  # unchanged


def test_features_and_shingle_sets():
    p = simlsh.Params()
    s = simlsh.ShingleSet(p, A)
    assert len(s) == len(s.hashes) > 0
    assert np.all(np.diff(s.hashes.astype(np.float64)) > 0)  # sorted, distinct
    assert simlsh.Signature(p).update_shingles(s) == simlsh.Signature(p, A)
    assert simlsh.Signature(p).update_features(s.hashes) == simlsh.Signature(p, A)
    assert simlsh.ShingleSet(p).update_features(s.hashes).jaccard(s) == 1.0
    t = simlsh.ShingleSet(p, B)
    j = s.jaccard(t)
    assert 0.5 < j < 1 and t.jaccard(s) == j
    assert 0 < s.containment(t) < 1
    h = simlsh.hash_bytes("abcde", p)
    assert h in set(simlsh.ShingleSet(p, "abcde").hashes.tolist())
    assert simlsh.ShingleSet.load(bytes(s)).jaccard(s) == 1.0
    assert pickle.loads(pickle.dumps(s)).jaccard(s) == 1.0
    assert copy.copy(s).jaccard(s) == 1.0
    assert s.params == p
    with pytest.raises(simlsh.ContractMismatch):
        s.jaccard(simlsh.ShingleSet(simlsh.Params(k=3), A))
    with pytest.raises(simlsh.ContractMismatch):
        simlsh.Signature(p).update_shingles(simlsh.ShingleSet(simlsh.Params(k=3), A))


def test_from_values_round_trip():
    for scheme in ("oph", "classic"):
        p = simlsh.Params(scheme=scheme, num_perm=64)
        for text in (A, "ab cd", "x" * 3):
            s = simlsh.Signature(p, text)
            v = simlsh.Signature.from_values(p, s.values)
            assert v == s and np.array_equal(v.values, s.values)
            assert np.array_equal(v.band_keys(), s.band_keys())
            assert v.jaccard(simlsh.Signature(p, B)) == s.jaccard(simlsh.Signature(p, B))
        # lists and other integer dtypes are accepted
        assert simlsh.Signature.from_values(p, list(s.values)) == s
        assert simlsh.Signature.from_values(p, s.values.astype(np.int64)) == s
    e = simlsh.Signature.from_values(p, np.full(64, simlsh.EMPTY_VALUE, np.uint32))
    assert e.empty


def test_from_values_errors():
    p = simlsh.Params(num_perm=16)
    good = simlsh.Signature(p, A).values
    with pytest.raises(simlsh.InvalidArgument):
        simlsh.Signature.from_values(p, good[:15])
    with pytest.raises(simlsh.InvalidArgument):
        simlsh.Signature.from_values(p, np.concatenate([good, good[:1]]))
    with pytest.raises(simlsh.InvalidArgument):
        simlsh.Signature.from_values(p, good.reshape(4, 4))
    with pytest.raises(simlsh.InvalidArgument):
        simlsh.Signature.from_values(p, [-1] * 16)
    with pytest.raises(simlsh.InvalidArgument):
        simlsh.Signature.from_values(p, [2**32] * 16)
    with pytest.raises(simlsh.InvalidArgument):
        simlsh.Signature.from_values(p, [0.5] * 16)
    mixed = good.copy()
    mixed[3] = simlsh.EMPTY_VALUE  # some empty marks but not all
    with pytest.raises(simlsh.InvalidArgument):
        simlsh.Signature.from_values(p, mixed)


def test_band_keys():
    p = simlsh.Params(bands=16, rows=8)
    s = simlsh.Signature(p, A)
    k = s.band_keys()
    assert k.dtype == np.uint64 and k.shape == (16,)
    assert np.array_equal(s.band_keys(16, 8), k)
    assert np.array_equal(s.band_keys(4, 2), simlsh.Signature(p, A).band_keys(4, 2))
    with pytest.raises(simlsh.InvalidArgument):
        s.band_keys(64, 4)
    with pytest.raises(simlsh.InvalidArgument):
        s.band_keys(0, 4)


def test_bytes_load_and_pickle():
    p = simlsh.Params(num_perm=32, seed=9)
    s = simlsh.Signature(p, A)
    data = bytes(s)
    assert data[:4] == b"SLSG"
    t = simlsh.Signature.load(data)
    assert t == s and t.params == s.params
    assert simlsh.Signature.load(bytearray(data)) == s
    assert pickle.loads(pickle.dumps(s)) == s
    assert copy.deepcopy(s) == s
    e = simlsh.Signature(p)
    assert pickle.loads(pickle.dumps(e)).empty
    bad = bytearray(data)
    bad[-9] ^= 1
    with pytest.raises(simlsh.Corrupt):
        simlsh.Signature.load(bytes(bad))
    with pytest.raises(simlsh.Corrupt):
        simlsh.Signature.load(data[:-1])
    with pytest.raises(simlsh.Error):
        simlsh.Signature.load(b"")


def test_equality_and_repr():
    p = simlsh.Params()
    s = simlsh.Signature(p, A)
    assert s != simlsh.Signature(p, B)
    assert s != simlsh.Signature(simlsh.Params(seed=1), A)
    assert (s == "x") is False
    assert "num_perm=128" in repr(s) and "empty" in repr(simlsh.Signature(p))
    with pytest.raises(TypeError):
        hash(s)


def test_default_params_everywhere():
    # objects made without params use the library's defaults (and the
    # temporary params stay alive while the library reads them)
    p = simlsh.Params()
    assert simlsh.Signature(None, A) == simlsh.Signature(p, A)
    assert simlsh.ShingleSet(None, A).jaccard(simlsh.ShingleSet(p, A)) == 1.0
    assert simlsh.Signature.from_values(None, simlsh.Signature(p, A).values) == \
        simlsh.Signature(p, A)
    assert simlsh.Index().params.bands_rows() == p.bands_rows()
    assert simlsh.hash_bytes(b"abc") == simlsh.hash_bytes(b"abc", p)
