"""sign_batch and band_keys: numpy batches equal to one call per document."""

import threading

import numpy as np
import pytest

import simlsh

from conftest import planted_corpus


@pytest.fixture(scope="module")
def docs():
    return planted_corpus(200)


@pytest.mark.parametrize("scheme", ["oph", "classic"])
def test_sign_batch_equals_signatures(docs, scheme):
    p = simlsh.Params(scheme=scheme, num_perm=64, normalize="space")
    v = simlsh.sign_batch(docs, p, threads=1)
    assert v.shape == (len(docs), 64) and v.dtype == np.uint32
    for i, d in enumerate(docs):
        assert np.array_equal(v[i], simlsh.Signature(p, d).values), i
    empty = simlsh.empty_rows(v)
    assert empty.tolist() == [simlsh.Signature(p, d).empty for d in docs]
    assert empty.any() and not empty.all()
    # any thread count gives the same matrix
    for t in (0, 2, 3):
        assert np.array_equal(simlsh.sign_batch(docs, p, threads=t), v)
    # bytes, generators and the default params
    assert np.array_equal(simlsh.sign_batch((d.encode() for d in docs), p), v)
    assert simlsh.sign_batch(docs[:3]).shape == (3, 128)
    assert simlsh.sign_batch([], p).shape == (0, 64)


def test_sign_batch_errors(docs):
    strict = simlsh.Params(utf8_policy="reject")
    texts = ["valid text here", b"bad \xff\xfe utf-8 here", "more valid text"]
    with pytest.raises(simlsh.InvalidUTF8):
        simlsh.sign_batch(texts, strict)
    v = simlsh.sign_batch(texts, strict, invalid="empty")
    assert simlsh.empty_rows(v).tolist() == [False, True, False]
    with pytest.raises(simlsh.InvalidArgument):
        simlsh.sign_batch(texts, strict, invalid="skip")
    with pytest.raises(simlsh.InvalidArgument):
        simlsh.sign_batch(texts, strict, threads=-1)
    with pytest.raises(TypeError):
        simlsh.sign_batch([1, 2], simlsh.Params())


def test_sign_batch_in_threads(docs):
    # Python threads may call it at once (each call has its own signatures)
    p = simlsh.Params(num_perm=32)
    want = simlsh.sign_batch(docs, p, threads=1)
    got = [None] * 4

    def run(i):
        got[i] = simlsh.sign_batch(docs, p, threads=2)

    ts = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert all(np.array_equal(g, want) for g in got)


def test_band_keys_batch(docs):
    p = simlsh.Params(threshold=0.6)
    v = simlsh.sign_batch(docs, p)
    live = v[~simlsh.empty_rows(v)]
    k = simlsh.band_keys(live, p)
    b, r = p.bands_rows()
    assert k.shape == (len(live), b) and k.dtype == np.uint64
    for i in range(0, len(live), 17):
        assert np.array_equal(k[i], simlsh.Signature.from_values(p, live[i]).band_keys())
    k2 = simlsh.band_keys(live, p, bands=8, rows=4)
    assert k2.shape == (len(live), 8)
    assert np.array_equal(k2[0], simlsh.Signature.from_values(p, live[0]).band_keys(8, 4))
    # equal keys are what the index buckets on: documents that share one
    # are candidates of each other
    ix = simlsh.Index(p)
    ix.insert_batch(range(len(live)), live)
    for i in range(0, len(live), 23):
        shares = {j for j in range(len(live)) if (k[j] == k[i]).any()}
        assert shares == set(ix.query(simlsh.Signature.from_values(p, live[i]), verify=False))
    with pytest.raises(simlsh.EmptyInput):
        simlsh.band_keys(v, p)
    with pytest.raises(simlsh.InvalidArgument):
        simlsh.band_keys(live[0], p)
    with pytest.raises(simlsh.InvalidArgument):
        simlsh.band_keys(live[:, :10], p)
    with pytest.raises(simlsh.InvalidArgument):
        simlsh.band_keys(live, p, bands=100, rows=100)


def test_without_the_librarys_batch_calls(docs, monkeypatch):
    # a library without lib/batch.c's calls: the package loops, same answers
    p = simlsh.Params(threshold=0.6)
    want_values = simlsh.sign_batch(docs, p)
    live = want_values[~simlsh.empty_rows(want_values)]
    want_keys = simlsh.band_keys(live, p)
    want_index = simlsh.Index(p)
    want_index.insert_batch(range(len(live)), live)
    want_dedup = simlsh.dedup(docs)
    from simlsh import _core
    for name in ("_sign_batch_c", "_band_keys_batch_c", "_insert_values_c"):
        monkeypatch.setattr(_core, name, None)
    assert np.array_equal(simlsh.sign_batch(docs, p, threads=2), want_values)
    assert np.array_equal(simlsh.band_keys(live, p), want_keys)
    ix = simlsh.Index(p)
    ix.insert_batch(range(len(live)), live)
    assert ix.to_bytes() == want_index.to_bytes()
    with pytest.raises(simlsh.AlreadyExists):
        ix.insert_batch([len(live) + 1, 0], live[:2])
    assert len(ix) == len(live)  # undone
    bare = simlsh.Index(p.replace(store_signatures=0))
    bare.insert_batch([1], live[:1])
    with pytest.raises(simlsh.AlreadyExists):
        bare.insert_batch([2, 1], live[:2])
    assert bare.keys() == [1]
    assert simlsh.dedup(docs) == want_dedup
