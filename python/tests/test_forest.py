"""simlsh.Forest (top-k) and simlsh.Ensemble (containment): the native
classes under simlsh.datasketch's MinHashLSHForest and MinHashLSHEnsemble."""

import pickle

import pytest

import simlsh


def sigs(p, sets):
    return [simlsh.Signature(p).update_tokens(sorted(s)) for s in sets]


def test_forest_ranks_by_similarity_and_pickles():
    p = simlsh.Params(num_perm=64, scheme="classic")
    base = {"w%d" % i for i in range(40)}
    sets = [base, set(list(base)[:30]) | {"x1"},
            set(list(base)[:10]) | {"y%d" % i for i in range(30)},
            {"z%d" % i for i in range(40)}]
    s = sigs(p, sets)
    f = simlsh.Forest(p)
    for i, sig in enumerate(s):
        f.insert(i, sig)
    assert len(f) == 4 and f.params.bands * f.params.rows <= 64
    got = f.query(s[0], 3)
    assert [i for i, _ in got][:2] == [0, 1] and got[0][1] == 1.0
    assert all(a[1] >= b[1] for a, b in zip(got, got[1:]))
    with pytest.raises(simlsh.AlreadyExists):
        f.insert(0, s[0])
    with pytest.raises(simlsh.InvalidArgument, match="k must be at least 1"):
        f.query(s[0], 0)
    with pytest.raises(TypeError):
        f.insert("key", s[0])
    g = pickle.loads(pickle.dumps(f))
    assert g.query(s[1], 4) == f.query(s[1], 4)
    f.remove(0)
    assert 0 not in [i for i, _ in f.query(s[0], 4)]
    with pytest.raises(simlsh.NotFound):
        f.remove(0)


def test_ensemble_finds_supersets():
    p = simlsh.Params(num_perm=128, scheme="classic")
    small = {"a%d" % i for i in range(20)}
    sets = [small | {"b%d" % i for i in range(60)},      # contains all of small
            {"a%d" % i for i in range(5)} | {"c%d" % i for i in range(40)},  # 5 / 20
            {"d%d" % i for i in range(50)}]
    e = simlsh.Ensemble(p)
    for i, (s, sig) in enumerate(zip(sets, sigs(p, sets))):
        e.insert(i, sig, len(s))
    q = sigs(p, [small])[0]
    got = dict(e.query(q, len(small), 0.8, verify=True))
    assert 0 in got and 1 not in got and 2 not in got
    assert got[0] > 0.8
    assert dict(pickle.loads(pickle.dumps(e)).query(q, len(small), 0.8, verify=True)) == got
    with pytest.raises(simlsh.InvalidArgument, match="threshold"):
        e.query(q, 20, 1.5)
    with pytest.raises(simlsh.InvalidArgument, match="size"):
        e.insert(9, q, 0)


def test_batches_name_the_row_and_undo():
    p = simlsh.Params(num_perm=32, scheme="classic")
    texts = ["a b c d e f", "g h i j k l", "m n o p q r", "s t u v w x"]
    values = simlsh.sign_batch(texts, simlsh.Params(unit="word", k=1, num_perm=32,
                                                    scheme="classic"))
    f = simlsh.Forest(p.replace(unit="word", k=1))
    f.insert_batch([1, 2, 3, 4], values)
    assert len(f) == 4
    got = f.query_batch(values, 1)
    assert [g[0][0] for g in got] == [1, 2, 3, 4]
    with pytest.raises(simlsh.AlreadyExists, match="row 2"):
        f.insert_batch([10, 11, 3], values[:3])
    assert len(f) == 4  # rows 0 and 1 were removed again
    with pytest.raises(simlsh.InvalidArgument, match="num_perm = 32"):
        f.insert_batch([20], values[:, :8])
    with pytest.raises(TypeError):
        f.insert_batch("ab", values[:2])
    e = simlsh.Ensemble(p.replace(unit="word", k=1))
    e.insert_batch([1, 2, 3, 4], values, [6, 6, 6, 6])
    assert len(e) == 4
    assert [ids[0][0] for ids in e.query_batch(values, [6] * 4, 0.9, verify=True)] == [1, 2, 3, 4]
    with pytest.raises(simlsh.InvalidArgument, match="3 sizes for 4 rows"):
        e.insert_batch([5, 6, 7, 8], values, [6, 6, 6])
    with pytest.raises(simlsh.InvalidArgument, match="row 1"):
        e.insert_batch([5, 6], values[:2], [6, 0])
    assert len(e) == 4
