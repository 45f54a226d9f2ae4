"""simlsh.Index copy, merge and the per-call query threshold."""

import copy

import pytest

import simlsh

from conftest import planted_corpus


@pytest.fixture
def corpus():
    params = simlsh.Params(threshold=0.5)
    docs = [d for d in planted_corpus(n_base=120) if d.strip()]
    sigs = [simlsh.Signature(params, d) for d in docs]
    return params, sigs


def test_copy_is_an_independent_snapshot(corpus):
    params, sigs = corpus
    ix = simlsh.Index(params)
    for i, s in enumerate(sigs[:50]):
        ix.insert("doc%d" % i, s)
    snap = ix.copy()
    assert snap.to_bytes() == ix.to_bytes()
    ix.insert("late", sigs[60])
    ix.remove("doc0")
    assert "late" not in snap and "doc0" in snap and len(snap) == 50
    assert snap.query(sigs[0])[0] == "doc0"
    assert copy.copy(ix).to_bytes() == ix.to_bytes()


def test_merge_of_shards_is_the_union_in_id_order(corpus):
    params, sigs = corpus
    shards = [simlsh.Index(params) for _ in range(3)]
    for i, s in reversed(list(enumerate(sigs))):
        shards[i % 3].insert(i, s)
    whole = simlsh.Index(params)
    for i, s in enumerate(sigs):
        whole.insert(i, s)
    merged = shards[1].copy()
    merged.merge(shards[2])
    merged.merge(shards[0])
    assert merged.to_bytes() == whole.to_bytes()
    assert merged.pairs() == whole.pairs()
    before = merged.to_bytes()
    with pytest.raises(simlsh.AlreadyExists):
        merged.merge(shards[0])
    other = simlsh.Index(simlsh.Params(threshold=0.5, seed=9))
    other.insert(10**6, simlsh.Signature(other.params, "x y z"))
    with pytest.raises(simlsh.ContractMismatch):
        merged.merge(other)
    assert merged.to_bytes() == before
    named = simlsh.Index(params)
    named.insert("a", sigs[0])
    with pytest.raises(TypeError):
        merged.merge(named)


def test_query_threshold_against_brute_force(corpus):
    params, sigs = corpus
    ix = simlsh.Index(params)
    for i, s in enumerate(sigs):
        ix.insert(i, s)
    for t in (0.3, 0.5, 0.8, 1.0):
        for q in sigs[::9]:
            plain = ix.query(q, verify=False, scores=True)
            want = [k for k, s in plain if s >= t]
            assert ix.query(q, threshold=t) == want
        batch = ix.query_batch(sigs[::9], threshold=t)
        assert batch == [ix.query(q, threshold=t) for q in sigs[::9]]
    assert ix.params.get("threshold") == 0.5
    for bad in (0.0, -1.0, 1.5, float("nan")):
        with pytest.raises(simlsh.InvalidArgument):
            ix.query(sigs[0], threshold=bad)
        with pytest.raises(simlsh.InvalidArgument):
            ix.query_batch(sigs[:2], threshold=bad)
