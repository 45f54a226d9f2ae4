"""simlsh.Index: keys, queries, pairs, clusters, batches, persistence, errors."""

import errno
import pickle
import struct

import numpy as np
import pytest

import simlsh
from simlsh import _core, _lib

from conftest import planted_corpus

A = "The quick brown fox jumps over the lazy dog by the river bank."
B = "The quick brown fox jumped over the lazy dog by the river bank."
C = "MinHash estimates the Jaccard similarity of two sets of shingles."


@pytest.fixture
def params():
    return simlsh.Params(threshold=0.5)


def build(params, keys, texts=(A, B, C)):
    ix = simlsh.Index(params)
    for k, t in zip(keys, texts):
        ix.insert(k, simlsh.Signature(params, t))
    return ix


def test_pipeline_answers(params):
    # what examples/pipeline.c prints: 25 x 5 bands, 0 and 1 near-duplicates
    ix = build(params, [0, 1, 2])
    assert (ix.bands, ix.rows) == (25, 5)
    a = simlsh.Signature(params, A)
    got = ix.query(a, scores=True)
    assert [(k, "%.4f" % s) for k, s in got] == [(0, "1.0000"), (1, "0.7812")]
    assert ix.query(a) == [0, 1]
    assert ix.pairs() == [(0, 1, pytest.approx(0.78125))]
    assert ix.cluster() == [[0, 1], [2]]
    assert ix.keys() == [0, 1, 2]


@pytest.mark.parametrize("keys", [["fox", "fox2", "minhash"], [10, 2**64 - 1, 7]])
def test_str_and_int_keys(params, keys):
    ix = build(params, keys)
    assert len(ix) == 3 and all(k in ix for k in keys)
    assert "nope" not in ix and 12345 not in ix and None not in ix
    a = simlsh.Signature(params, A)
    assert set(ix.query(a)) == {keys[0], keys[1]}
    ix.remove(keys[0])
    assert keys[0] not in ix and len(ix) == 2
    assert ix.query(a) == [keys[1]]
    with pytest.raises(simlsh.NotFound):
        ix.remove(keys[0])
    with pytest.raises(KeyError):  # NotFound is a KeyError too
        ix.signature(keys[0])
    assert ix.signature(keys[2]) == simlsh.Signature(params, C)
    ix.insert(keys[0], a)  # a removed key can come back
    assert keys[0] in ix


def test_key_errors(params):
    ix = build(params, ["a"])
    with pytest.raises(TypeError):
        ix.insert(5, simlsh.Signature(params, B))
    with pytest.raises(TypeError):
        ix.insert(1.5, simlsh.Signature(params, B))
    with pytest.raises(simlsh.AlreadyExists):
        ix.insert("a", simlsh.Signature(params, B))
    iy = simlsh.Index(params)
    with pytest.raises(simlsh.InvalidArgument):
        iy.insert(-1, simlsh.Signature(params, B))
    with pytest.raises(simlsh.InvalidArgument):
        iy.insert(2**64, simlsh.Signature(params, B))
    with pytest.raises(simlsh.EmptyInput):
        iy.insert(1, simlsh.Signature(params))
    with pytest.raises(simlsh.ContractMismatch):
        iy.insert(1, simlsh.Signature(simlsh.Params(k=3), A))
    with pytest.raises(simlsh.ContractMismatch):
        ix.query(simlsh.Signature(simlsh.Params(k=3), A))
    assert len(iy) == 0  # failed calls changed nothing
    iy.insert(3, simlsh.Signature(params, B))
    with pytest.raises(TypeError):
        iy.insert("s", simlsh.Signature(params, B))


def test_without_stored_signatures():
    p = simlsh.Params(threshold=0.5, store_signatures=0)
    ix = build(p, [0, 1, 2])
    a = simlsh.Signature(p, A)
    assert ix.query(a, verify=False, scores=True) == [(0, -1.0), (1, -1.0)]
    for call in (lambda: ix.query(a), lambda: ix.pairs(), lambda: ix.cluster(),
                 lambda: ix.remove(0), lambda: ix.signature(0)):
        with pytest.raises(simlsh.Unsupported):
            call()
    assert ix.cluster(verify=False) == [[0, 1], [2]]
    assert ix.pairs(verify=False) == [(0, 1, -1.0)]


def test_batches_equal_single_calls():
    docs = [d for d in planted_corpus(120) if d.strip()]
    p = simlsh.Params(threshold=0.7)
    values = simlsh.sign_batch(docs, p)
    keys = ["d%d" % i for i in range(len(docs))]
    one, many = simlsh.Index(p), simlsh.Index(p)
    for k, d in zip(keys, docs):
        one.insert(k, simlsh.Signature(p, d))
    many.insert_batch(keys, values)
    assert one.to_bytes() == many.to_bytes()
    sigs = [simlsh.Signature(p, d) for d in docs[:40]]
    single = [one.query(s) for s in sigs]
    assert many.query_batch(values[:40]) == single
    assert many.query_batch(sigs) == single
    assert many.query_batch(values[:0]) == []
    assert one.pairs() == many.pairs() and one.cluster() == many.cluster()
    assert any(len(g) > 1 for g in one.cluster())


def test_query_arrays_are_the_batch_answers_in_csr_form():
    docs = [d for d in planted_corpus(120) if d.strip()]
    p = simlsh.Params(threshold=0.7)
    values = simlsh.sign_batch(docs, p)
    n = len(docs)
    ints, strs = simlsh.Index(p), simlsh.Index(p)
    ints.insert_batch(list(range(0, 3 * n, 3)), values)
    strs.insert_batch(["d%d" % i for i in range(n)], values)
    sigs = [simlsh.Signature.from_values(p, v) for v in values]
    for verify in (True, False):
        want = [ints.query(s, verify, scores=True) for s in sigs]
        off, keys, scores = ints.query_arrays(values, verify, scores=True)
        assert off.dtype == np.int64 and keys.dtype == np.uint64 and len(off) == n + 1
        assert off[0] == 0 and off[-1] == len(keys) == len(scores)
        got = [list(zip(keys[off[q]:off[q + 1]].tolist(), scores[off[q]:off[q + 1]].tolist()))
               for q in range(n)]
        assert got == want
        assert ints.query_batch(values, verify) == [[k for k, _ in w] for w in want]
        # a list of Signature gives the same arrays
        off2, keys2 = ints.query_arrays(sigs, verify)
        assert np.array_equal(off2, off) and np.array_equal(keys2, keys)
        soff, skeys = strs.query_arrays(values, verify)
        assert skeys.dtype == object and np.array_equal(soff, off)
        assert skeys.tolist() == ["d%d" % (k // 3) for k in keys.tolist()]
    # rows read in place from a wider matrix, and a copy of other dtypes
    wide = np.full((n, p.num_perm + 5), 7, np.uint32)
    wide[:, 2:2 + p.num_perm] = values
    off3, keys3 = ints.query_arrays(wide[:, 2:2 + p.num_perm])
    off4, keys4 = ints.query_arrays(values.astype(np.int64))
    off, keys = ints.query_arrays(values)
    for o, k in ((off3, keys3), (off4, keys4)):
        assert np.array_equal(o, off) and np.array_equal(k, keys)
    # a threshold of the call, as query()'s
    off5, keys5 = ints.query_arrays(values, threshold=0.95)
    assert [keys5[off5[q]:off5[q + 1]].tolist() for q in range(n)] == \
        [ints.query(s, threshold=0.95) for s in sigs]
    # the empty signature finds nothing; no rows give no queries
    empty = values[:3].copy()
    empty[1] = simlsh.EMPTY_VALUE
    o, k = ints.query_arrays(empty)
    assert o[1] == o[2] and o[2] - o[1] == 0 and o[1] > 0
    o, k = ints.query_arrays(values[:0])
    assert o.tolist() == [0] and len(k) == 0
    assert ints.query_batch(values[:0]) == []


def test_query_arrays_without_the_values_call(monkeypatch):
    """A library older than simlsh_index_query_values: one signature per
    row, the same answers and errors."""
    p = simlsh.Params(num_perm=32, threshold=0.5)
    docs = [d for d in planted_corpus(40) if d.strip()]
    values = simlsh.sign_batch(docs, p)
    ix = simlsh.Index(p)
    ix.insert_batch(list(range(len(docs))), values)
    want = ix.query_arrays(values, scores=True)
    monkeypatch.setattr(_core, "_query_values_c", None)
    got = ix.query_arrays(values, scores=True)
    assert all(np.array_equal(w, g) for w, g in zip(want, got))
    mixed = values.copy()
    mixed[2, 4] = simlsh.EMPTY_VALUE
    with pytest.raises(simlsh.InvalidArgument, match="row 2"):
        ix.query_arrays(mixed)
    with pytest.raises(simlsh.InvalidArgument, match="num_perm = 32"):
        ix.query_arrays(values[:, :16])


def test_query_arrays_reentered_from_the_same_thread(monkeypatch):
    """A query made by the same thread while a batch's rows are still in
    its results object (say from a __del__ that the garbage collector runs
    then) must not refill that object under the outer call."""
    p = simlsh.Params(num_perm=32, threshold=0.5)
    docs = [d for d in planted_corpus(40) if d.strip()]
    values = simlsh.sign_batch(docs, p)
    ix = simlsh.Index(p)
    ix.insert_batch(list(range(len(docs))), values)
    want_outer = ix.query_arrays(values[:10])
    want_inner = ix.query_arrays(values[20:])
    rows = _core._Results.rows
    inner = []

    def rows_after_a_nested_query(self, scores):
        if not inner:
            inner.append(None)
            inner[0] = ix.query_arrays(values[20:])
        return rows(self, scores)

    monkeypatch.setattr(_core._Results, "rows", rows_after_a_nested_query)
    got = ix.query_arrays(values[:10])
    assert all(np.array_equal(w, g) for w, g in zip(want_outer, got))
    assert all(np.array_equal(w, g) for w, g in zip(want_inner, inner[0]))


def test_query_arrays_refuse_bad_input():
    p = simlsh.Params(num_perm=32)
    values = simlsh.sign_batch(["one two three four five six", "alpha beta gamma delta"], p)
    ix = simlsh.Index(p)
    ix.insert_batch([1, 2], values)
    before = ix.to_bytes()
    with pytest.raises(simlsh.InvalidArgument, match="num_perm = 32"):
        ix.query_arrays(values[:, :16])
    with pytest.raises(simlsh.InvalidArgument, match="num_perm = 32"):
        ix.query_batch(np.zeros((2, 33), np.uint32))
    with pytest.raises(simlsh.InvalidArgument, match="shape"):
        ix.query_arrays(values[0])
    mixed = values.copy()
    mixed[1, 4] = simlsh.EMPTY_VALUE
    with pytest.raises(simlsh.InvalidArgument, match="row 1 holds the empty mark"):
        ix.query_arrays(mixed)
    with pytest.raises(simlsh.InvalidArgument, match="row 1"):
        ix.query_batch(mixed)
    for bad in (0.0, -1.0, 1.5, float("nan")):
        with pytest.raises(simlsh.InvalidArgument, match=r"threshold.*\(0, 1\]"):
            ix.query_arrays(values, threshold=bad)
    with pytest.raises(TypeError, match="single str"):
        ix.query_arrays("text")
    bad = values.astype(np.int64)
    bad[0, 3] = -1
    with pytest.raises(simlsh.InvalidArgument, match="row 0, column 3"):
        ix.query_arrays(bad)
    assert ix.to_bytes() == before


def test_insert_batch_is_all_or_nothing(params):
    values = simlsh.sign_batch([A, B, C], params)
    ix = simlsh.Index(params)
    ix.insert_batch([5, 6], values[:2])
    with pytest.raises(simlsh.AlreadyExists):
        ix.insert_batch([7, 5], values[1:])
    with pytest.raises(simlsh.AlreadyExists):
        ix.insert_batch([8, 8], values[1:])
    bad = values.copy()
    bad[1] = simlsh.EMPTY_VALUE
    with pytest.raises(simlsh.EmptyInput):
        ix.insert_batch([9, 10, 11], bad)
    with pytest.raises(simlsh.InvalidArgument):
        ix.insert_batch([9, 10], values)
    with pytest.raises(TypeError):
        ix.insert_batch([9, "x"], values[:2])
    assert ix.keys() == [5, 6]


def test_save_load_files(tmp_path, params):
    for keys in (["fox", "fox2", "min\u00e9hash", "bad \udcff byte"], [3, 1, 2, 9]):
        ix = build(params, keys, texts=(A, B, C, A + C))
        ix.remove(keys[1])
        path = tmp_path / "x.idx"
        ix.save(path)
        back = simlsh.Index.load(str(path))
        assert len(back) == 3 and back.keys() == ix.keys()
        assert back.query(simlsh.Signature(params, A)) == [keys[0]]
        assert back.to_bytes() == ix.to_bytes()
        assert simlsh.Index.from_bytes(path.read_bytes()).keys() == ix.keys()
        assert pickle.loads(pickle.dumps(ix)).keys() == ix.keys()
        # a new key gets an id of its own, not one of a loaded key
        back.insert(keys[1], simlsh.Signature(params, B))
        assert len(back) == 4
        assert sorted(map(str, back.query(simlsh.Signature(params, B)))) == \
            sorted(map(str, keys[:2]))
        assert back.signature(keys[2]) == simlsh.Signature(params, C)
    # one format: the library's index file, str keys in its user data
    assert build(params, [1]).to_bytes()[:4] == b"SLIX"
    assert build(params, ["a"]).to_bytes()[:4] == b"SLIX"
    assert list(tmp_path.iterdir()) == [tmp_path / "x.idx"]  # no temporary left


def raw_bytes(ix):
    """simlsh_index_save without the package's key handling."""
    return _core._save(_lib.lib.simlsh_index_save, ix._h, "save")


def set_userdata(ix, data):
    assert _lib.lib.simlsh_index_set_userdata(ix._h, data, len(data)) == 0


def test_user_data(params):
    # user data of other programs stays with an index of int keys
    ix = build(params, [4, 5])
    set_userdata(ix, b"names of another program")
    back = simlsh.Index.from_bytes(ix.to_bytes())
    assert back.keys() == [4, 5] and back._userdata() == b"names of another program"
    # keys of an earlier life of the index do not survive a clear
    sx = build(params, ["a", "b"])
    sx.clear()
    sx.insert(7, simlsh.Signature(params, A))
    assert simlsh.Index.from_bytes(sx.to_bytes()).keys() == [7]
    # a key table that does not fit the index is corrupt
    magic = _core._KEYS_MAGIC
    good = build(params, ["a", "b"])
    table = good._key_table()
    cases = [table[:-1], table + b"x", magic, magic + struct.pack("<QQ", 1, 5),
             magic + struct.pack("<QQ", 2, 1) + table[len(magic) + 16:],
             table.replace(b"b", b"a")]
    for bad in cases:
        ix = build(params, [0, 1])
        set_userdata(ix, bad)
        with pytest.raises(simlsh.Corrupt):
            simlsh.Index.from_bytes(raw_bytes(ix))


def test_load_errors(tmp_path, params):
    with pytest.raises(simlsh.IOFailure) as e:
        simlsh.Index.load(tmp_path / "missing.idx")
    assert e.value.errno == errno.ENOENT and isinstance(e.value, OSError)
    with pytest.raises(simlsh.InvalidArgument):  # not a regular file
        simlsh.Index.load(tmp_path)
    with pytest.raises(simlsh.IOFailure):
        build(params, [1]).save(tmp_path / "no" / "dir.idx")
    data = build(params, ["a", "b"]).to_bytes()
    for bad in (data[:-1], data[:20], data[:-6] + bytes([data[-6] ^ 1]) + data[-5:]):
        with pytest.raises(simlsh.Corrupt):
            simlsh.Index.from_bytes(bad)
    with pytest.raises(simlsh.Error):
        simlsh.Index.from_bytes(b"")


def test_clear_memory_repr_params(params):
    ix = build(params, ["a", "b", "c"])
    assert ix.memory() > 0 and "3 documents" in repr(ix)
    assert ix.params.bands == ix.bands and ix.params.threshold == 0.5
    assert ix.fingerprint == ix.params.fingerprint("index")
    ix.clear()
    assert len(ix) == 0 and ix.keys() == []
    ix.insert(1, simlsh.Signature(params, A))  # key kind is free again
    assert ix.keys() == [1]
