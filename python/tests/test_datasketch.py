"""simlsh.datasketch behaves as datasketch documents and tests its classes
(datasketch's test/test_minhash.py, test_lean_minhash.py, test_lsh.py,
test_lshforest.py, test_lshensemble.py, apart from what reads its internals
or its exact hash values), and datasketch's own examples run with only the
import changed (python/examples/datasketch)."""

import ast
import os
import pickle
import random
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from simlsh.datasketch import (LeanMinHash, MinHash, MinHashLSH, MinHashLSHEnsemble,
                               MinHashLSHForest)

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "examples", "datasketch")


def fake_hash_func(data):  # datasketch's test/utils.py
    return data


def run_example(name):
    r = subprocess.run([sys.executable, os.path.join(EXAMPLES, name)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True, timeout=300,
                       check=False)
    return r.returncode, r.stdout.splitlines(), r.stderr


# ---- the examples -------------------------------------------------------------------


def test_examples_change_only_their_imports():
    for name in os.listdir(EXAMPLES):
        if name.endswith(".py"):
            with open(os.path.join(EXAMPLES, name)) as f:
                src = f.read()
            assert "import datasketch" not in src and "from datasketch" not in src
            assert "from simlsh.datasketch import" in src


def test_minhash_example():
    rc, out, err = run_example("minhash_examples.py")
    assert rc == 0, err
    est = float(out[0].rsplit(" ", 1)[1])
    actual = float(out[1].rsplit(" ", 1)[1])
    assert actual == 10 / 14
    # 128 values: standard deviation sqrt(J (1 - J) / 128) = 0.04; 4 of them
    assert abs(est - actual) < 0.16


def test_lsh_example():
    rc, out, err = run_example("lsh_examples.py")
    assert out[0].startswith("Approximate neighbours with Jaccard similarity > 0.5")
    # m2 (J = 0.71) and m3 (J = 0.64), as datasketch finds
    assert set(ast.literal_eval(out[0].split("> 0.5 ", 1)[1])) == {"m2", "m3"}
    assert out[1] == "Does m1 exist in the lsh1... True"
    # the example's last line merges m1 a second time, with check_overlap:
    # datasketch raises there too (python/examples/datasketch/README.md)
    assert rc != 0
    assert err.rstrip().endswith("ValueError: The keys are overlapping, duplicate key exists.")


def test_lshforest_example():
    rc, out, err = run_example("lshforest_example.py")
    assert rc == 0, err
    assert out[:2] == ["True", "True"]
    assert out[2].startswith("Top 2 candidates ")
    assert ast.literal_eval(out[2].split("candidates ", 1)[1]) == ["m2", "m3"]


def test_lshensemble_example():
    rc, out, err = run_example("lshensemble_example.py")
    assert rc == 0, err
    # set2 holds all of set1; set3 only 2 of its 4 (containment 0.5 < 0.8)
    assert out == ["True", "True", "Sets with containment > 0.8:", "m2"]


# ---- MinHash (datasketch test_minhash.py) -------------------------------------------


def test_minhash_update_jaccard_merge_union():
    m1 = MinHash(4, 1, hashfunc=fake_hash_func)
    m2 = MinHash(4, 1, hashfunc=fake_hash_func)
    assert np.array_equal(m1.hashvalues, m2.hashvalues) and m1.is_empty()
    assert m1.hashvalues.dtype == np.uint64 and (m1.hashvalues == 2**32 - 1).all()
    assert m1.jaccard(m2) == 1.0
    m1.update(12)
    assert (m1.hashvalues < m2.hashvalues).all()
    m2.update(12)
    assert m1.jaccard(m2) == 1.0
    m3 = MinHash(4, 1, hashfunc=fake_hash_func)
    m3.update_batch([12, 24])
    m4 = MinHash(4, 1, hashfunc=fake_hash_func)
    m4.update(12)
    m4.update(24)
    assert (m3.hashvalues == m4.hashvalues).all()
    e = MinHash(4, 1, hashfunc=fake_hash_func)
    assert e.jaccard(m1) == 0.0
    e.merge(m1)
    assert e.jaccard(m1) == 1.0
    u = MinHash.union(MinHash(4, 1, hashfunc=fake_hash_func), m3)
    assert u.jaccard(m3) == 1.0 and u.hashfunc is fake_hash_func
    with pytest.raises(ValueError):
        MinHash.union(m1)
    with pytest.raises(ValueError, match="different seeds"):
        m1.jaccard(MinHash(4, 2))
    with pytest.raises(ValueError, match="numbers of permutation"):
        m1.merge(MinHash(8, 1))


def test_minhash_eq_copy_clear_len_pickle_digest():
    ms = [MinHash(4, s, hashfunc=fake_hash_func) for s in (1, 1, 2, 1)] + [
        MinHash(8, 1, hashfunc=fake_hash_func)]
    for m, tok in zip(ms, (11, 12, 11, 11, 11)):
        m.update(tok)
    m1, m2, m3, m5, m4 = ms
    assert m1 != m2 and m1 != m3 and m1 != m4 and m1 == m5
    m1.update(12)
    m2.update(11)
    assert m1 == m2
    c = m1.copy()
    assert c == m1 and c is not m1
    c.update(99)
    assert c != m1
    assert len(m1) == 4 and len(MinHash()) == 128
    p = pickle.loads(pickle.dumps(m1))
    assert p == m1 and p.seed == m1.seed and p.hashfunc is fake_hash_func
    d = m1.digest()
    d[0] = 0
    assert m1.hashvalues[0] != 0  # a copy
    c.clear()
    assert c.is_empty()


def test_minhash_unpickled_in_a_new_process_takes_updates():
    """A MinHash pickled by another process (where this process has made no
    MinHash of its num_perm and seed) can be updated, cleared and set."""
    src = ("import pickle, sys\n"
           "from simlsh.datasketch import MinHash\n"
           "m = MinHash(num_perm=48, seed=77)\n"
           "m.update(b'a')\n"
           "sys.stdout.buffer.write(pickle.dumps(m))\n")
    data = subprocess.run([sys.executable, "-c", src], stdout=subprocess.PIPE, check=True,
                          timeout=120).stdout
    m = pickle.loads(data)
    m.update(b"b")
    m.update("c d")  # not a plain word: hashed as one token
    assert not m.is_empty()  # signs them, before this process makes such a MinHash
    want = MinHash(num_perm=48, seed=77)
    want.update_batch([b"a", b"b", "c d"])
    assert m == want
    m.clear()
    assert m.is_empty()
    m.hashvalues = want.hashvalues
    assert m == want


def test_minhash_count_and_accuracy():
    rng = random.Random(7)
    m = MinHash(num_perm=256)
    m.update_batch(("t%d" % i).encode() for i in range(2000))
    # relative standard error about 1 / sqrt(256) = 6 %
    assert abs(m.count() - 2000) / 2000 < 0.25
    assert MinHash().count() == 0
    errors = []
    for _ in range(40):
        a = {rng.randrange(400) for _ in range(150)}
        b = {x for x in a if rng.random() < 0.7} | {rng.randrange(400, 800) for _ in range(40)}
        ma, mb = MinHash(), MinHash()
        ma.update_batch(str(x).encode() for x in a)
        mb.update_batch(str(x).encode() for x in b)
        errors.append(ma.jaccard(mb) - len(a & b) / len(a | b))
    # unbiased: the mean of 40 errors of sd <= 0.045 is within 3 sd / sqrt(40)
    assert abs(np.mean(errors)) < 3 * 0.045 / np.sqrt(40)
    assert max(map(abs, errors)) < 5 * 0.045


def test_minhash_tokens_str_bytes_and_odd_tokens_agree():
    toks = ["minhash", "is", "a,", "prob-abilistic", "", "Größe", "tab\tx", "a" * 300]
    a, b, c = MinHash(), MinHash(), MinHash()
    a.update_batch(toks)
    b.update_batch(t.encode() for t in reversed(toks))
    for t in toks:
        c.update(t)
        c.update(t)  # a set: twice is once
    assert a == b == c
    plain = MinHash()
    plain.update_batch(["minhash", "is"])
    mixed = MinHash()
    mixed.update_batch(["minhash", "is", "a,"])
    assert plain != mixed
    with pytest.raises(TypeError):
        MinHash().update_batch("a single string")
    with pytest.raises(TypeError):
        MinHash().update(12)  # no hashfunc: tokens are bytes or str


def test_minhash_bulk_generator_hashvalues():
    kwargs = dict(num_perm=4, seed=1, hashfunc=fake_hash_func)
    b = [[n * 4 for n in range(4)]] * 2
    m1 = MinHash(**kwargs)
    m1.update_batch(b[0])
    m2, m3 = MinHash.bulk(b, **kwargs)
    assert m1 == m2 == m3
    assert list(MinHash.generator(b, **kwargs)) == [m1, m1]
    m4 = MinHash(hashvalues=m1.hashvalues)
    assert np.array_equal(m4.hashvalues, m1.hashvalues) and len(m4) == 4


# ---- LeanMinHash ---------------------------------------------------------------------


def test_lean_minhash():
    m = MinHash()
    m.update_batch([b"a", b"b", b"c"])
    lean = LeanMinHash(m)
    assert np.array_equal(lean.hashvalues, m.hashvalues) and lean.seed == m.seed
    assert lean.jaccard(m) == 1.0
    with pytest.raises(TypeError):
        lean.update(b"d")
    lean2 = LeanMinHash(seed=m.seed, hashvalues=m.hashvalues)
    assert lean2 == lean and hash(lean2) == hash(lean)
    assert len({lean, lean2}) == 1
    for order in ("@", "<", ">", "!"):
        buf = bytearray(lean.bytesize(order))
        lean.serialize(buf, order)
        back = LeanMinHash.deserialize(buf, order)
        assert back == lean
    with pytest.raises(ValueError):
        lean.serialize(bytearray(3))
    assert pickle.loads(pickle.dumps(lean)) == lean
    with pytest.raises(ValueError):
        LeanMinHash()
    u = LeanMinHash.union(lean, lean2)
    assert isinstance(u, LeanMinHash) and u == lean


# ---- MinHashLSH (datasketch test_lsh.py) --------------------------------------------


def ab(num_perm=16):
    m1, m2 = MinHash(num_perm), MinHash(num_perm)
    m1.update(b"a")
    m2.update(b"b")
    return m1, m2


def test_lsh_init_insert_query_remove():
    lsh = MinHashLSH(threshold=0.8)
    assert lsh.is_empty()
    b1, r1 = lsh.b, lsh.r
    lsh = MinHashLSH(threshold=0.8, weights=(0.2, 0.8))
    assert lsh.b > b1 and lsh.r < r1
    for kwargs in ({"threshold": 1.5}, {"num_perm": 1}, {"weights": (0.5, 0.6)},
                   {"params": (20, 10)}, {"storage_config": {"type": "redis"}}):
        with pytest.raises(ValueError):
            MinHashLSH(**kwargs)
    lsh = MinHashLSH(threshold=0.5, num_perm=16)
    m1, m2 = ab()
    lsh.insert("a", m1)
    lsh.insert("b", m2)
    assert "a" in lsh and "b" in lsh and "a" in lsh.keys and not lsh.is_empty()
    assert sorted(lsh.keys) == ["a", "b"] and len(lsh.keys) == 2
    assert "a" in lsh.query(m1) and "b" in lsh.query(m2)
    with pytest.raises(ValueError):
        lsh.insert("c", MinHash(18))
    with pytest.raises(ValueError):
        lsh.query(MinHash(18))
    with pytest.raises(ValueError, match="already exists"):
        lsh.insert("a", m1)
    lsh.remove("a")
    assert "a" not in lsh.keys and "a" not in lsh.query(m1)
    with pytest.raises(ValueError, match="does not exist"):
        lsh.remove("c")
    lsh2 = pickle.loads(pickle.dumps(lsh))
    assert "b" in lsh2.query(m2) and "a" not in lsh2


def test_lsh_key_indexed_twice_and_failed_inserts():
    """check_duplication=False indexes a key again; a failed insert leaves
    every key as it was; remove drops every id of a key."""
    lsh = MinHashLSH(threshold=0.5, num_perm=16)
    m1, m2 = ab()
    lsh.insert("a", m1)
    lsh.insert("a", m2, check_duplication=False)
    assert lsh.query(m1) == ["a"] and lsh.query(m2) == ["a"] and len(lsh) == 1
    empty = MinHash(16)
    for key in ("a", "z"):  # an empty MinHash is refused by the library
        with pytest.raises(ValueError, match="insert"):
            lsh.insert(key, empty, check_duplication=False)
    assert sorted(lsh.keys) == ["a"] and lsh.query(m2) == ["a"]
    lsh.insert("b", m2)
    assert lsh.query(m2) == ["a", "b"]
    lsh.remove("a")
    assert lsh.query(m1) == [] and lsh.query(m2) == ["b"] and "a" not in lsh
    lsh.insert("a", m1)  # a key removed may come back
    assert lsh.query(m1) == ["a"]


def test_lsh_pickled_by_0_2_loads():
    """0.2 pickled a list of ids for every key; those pickles still load."""
    lsh = MinHashLSH(threshold=0.5, num_perm=16)
    m1, m2 = ab()
    lsh.insert("a", m1)
    lsh.insert("b", m2)
    lsh.insert("a", m2, check_duplication=False)
    state = lsh.__getstate__()
    more = state.pop("_more")
    state["_ids"] = {k: [i] + more.get(k, []) for k, i in state["_ids"].items()}
    old = MinHashLSH.__new__(MinHashLSH)
    old.__setstate__(state)
    assert sorted(old.keys) == ["a", "b"] and old.query(m2) == ["b", "a"]
    old.remove("a")
    assert old.query(m2) == ["b"] and old.query(m1) == []


def test_an_indexed_minhash_is_three_objects_for_the_collector():
    """Python's cyclic garbage collector visits every container object, so
    its cost grows with them: a MinHash signed and inserted is itself, its
    token list and its C signature (datasketch's is five)."""
    import gc
    lsh = MinHashLSH(threshold=0.8, num_perm=128)
    warm = MinHash(num_perm=128)  # the contract's caches
    warm.update(b"w")
    lsh.insert(-1, warm)
    gc.collect()
    before = len(gc.get_objects())
    ms = [MinHash(num_perm=128) for _ in range(1000)]
    for i, m in enumerate(ms):
        m.update_batch([b"w%d" % (i * 7 + j) for j in range(20)])
        m.update(b"one")
        lsh.insert(i, m)
        lsh.query(m)
    gc.collect()
    per = (len(gc.get_objects()) - before) / len(ms)
    assert 2.9 < per < 3.1, per


def test_lsh_any_hashable_key_and_buffers():
    lsh = MinHashLSH(threshold=0.5, num_perm=32)
    docs = []
    for tokens in ([b"a", b"b", b"c"], [b"a", b"b", b"d"], [b"x", b"y", b"z"]):
        m = MinHash(num_perm=32)
        for t in tokens:
            m.update(t)
        docs.append(m)
    keys = [(1, "tuple"), 2.5, frozenset({"x"})]
    for k, m in zip(keys, docs):
        lsh.insert(k, m)
    assert set(lsh.query(docs[2])) == {keys[2]}
    lsh.add_to_query_buffer(docs[0])
    assert set(lsh.collect_query_buffer()) == set(lsh.query(docs[0]))
    with pytest.raises(TypeError):
        lsh.insert(["unhashable"], docs[0])


def test_lsh_merge_and_insertion_session():
    m1, m2 = ab()
    lsh1 = MinHashLSH(threshold=0.5, num_perm=16)
    lsh1.insert("a", m1)
    lsh2 = MinHashLSH(threshold=0.5, num_perm=16)
    lsh2.insert("b", m2)
    lsh1.merge(lsh2)
    assert "b" in lsh1 and "b" in lsh1.query(m2)
    with pytest.raises(ValueError, match="overlapping"):
        lsh1.merge(lsh2, check_overlap=True)
    with pytest.raises(ValueError, match="different initialization"):
        lsh1.merge(MinHashLSH(threshold=0.5, num_perm=32))
    lsh = MinHashLSH(threshold=0.5, num_perm=16)
    with lsh.insertion_session(buffer_size=2) as session:
        for i in range(5):
            m = MinHash(16)
            m.update(("%d" % i).encode())
            session.insert(i, m)
        with pytest.raises(ValueError):
            session.insert(4, m)
    assert sorted(lsh.keys) == [0, 1, 2, 3, 4]
    assert 4 in lsh.query(m)


# ---- forest and ensemble -------------------------------------------------------------


def forest_setup():
    d = "abcdefghijklmnopqrstuvwxyz"
    data = {}
    forest = MinHashLSHForest()
    for i in range(len(d) - 2):
        m = MinHash()
        for s in d[i:i + 3]:
            m.update(s.encode("utf8"))
        data[d[i]] = m
        forest.add(d[i], m)
    assert forest.is_empty()  # nothing searchable before index()
    assert all(key in forest for key in data)
    with pytest.raises(ValueError):
        forest.add("a", data["a"])
    forest.index()
    assert not forest.is_empty()
    with pytest.raises(ValueError):
        forest.add("a", data["a"])
    return forest, data


def test_forest():
    forest, data = forest_setup()
    for key, m in data.items():
        res = forest.query(m, 10)
        assert res[0] == key and len(res) <= 10
        hv = forest.get_minhash_hashvalues(key)
        assert MinHash(hashvalues=hv).jaccard(m) == 1.0
    with pytest.raises(ValueError):
        forest.query(data["a"], 0)
    with pytest.raises(ValueError):
        forest.query(MinHash(num_perm=64), 3)
    f2 = pickle.loads(pickle.dumps(forest))
    for key, m in data.items():
        assert f2.query(m, 5) == forest.query(m, 5)
    assert MinHashLSHForest().is_empty()


def words_minhash(words, **kw):
    m = MinHash(**kw)
    m.update_batch(w.encode("utf8") for w in words)
    return m


def test_forest_add_keeps_the_state_at_add():
    """add() keeps the MinHash as it was: later updates change neither the
    indexed values nor the answers; keys added after index() wait for the
    next index()."""
    forest = MinHashLSHForest()
    m = words_minhash(["a", "b", "c", "d"])
    before = m.hashvalues.copy()
    forest.add("m", m)
    m.update_batch([b"x%d" % i for i in range(50)])
    forest.add("other", words_minhash(["q", "r", "s"]))
    forest.index()
    assert np.array_equal(forest.get_minhash_hashvalues("m"), before)
    assert forest.query(words_minhash(["a", "b", "c", "d"]), 1) == ["m"]
    forest.add("late", words_minhash(["a", "b", "c", "d"]))
    assert "late" in forest
    assert "late" not in forest.query(words_minhash(["a", "b", "c", "d"]), 5)
    f2 = pickle.loads(pickle.dumps(forest))  # "late" is still pending there
    for f in (forest, f2):
        f.index()
        assert set(f.query(words_minhash(["a", "b", "c", "d"]), 2)) == {"m", "late"}
        assert np.array_equal(f.get_minhash_hashvalues("m"), before)


def test_forest_add_refuses_another_contract():
    """A MinHash of another seed or num_perm is refused by add(), naming
    both, and leaves the forest as it was (it was accepted, then failed or
    was dropped at index())."""
    forest = MinHashLSHForest(num_perm=128)
    forest.add("a", words_minhash(["a", "b"]))
    with pytest.raises(ValueError, match="seed 2.*seed 1"):
        forest.add("b", words_minhash(["a", "b"], seed=2))
    with pytest.raises(ValueError, match="num_perm 256"):
        forest.add("c", words_minhash(["a", "b"], num_perm=256))
    assert "b" not in forest and "c" not in forest
    forest.index()
    assert forest.query(words_minhash(["a", "b"]), 5) == ["a"]


def test_forest_index_is_all_or_nothing(monkeypatch):
    """A failure in the middle of index() (out of memory, injected at the
    third insert) leaves nothing of the batch searchable and every key
    added; the next index() indexes them all."""
    import simlsh._forest as F
    data = {str(i): words_minhash(["w%d" % i, "w%d" % (i + 1), "x"]) for i in range(6)}
    forest = MinHashLSHForest()
    forest.add("first", words_minhash(["first", "one"]))
    forest.index()
    for k, m in data.items():
        forest.add(k, m)
    real, calls = F._F["simlsh_forest_insert"], []

    def failing(h, i, sig):
        calls.append(i)
        return -2 if len(calls) == 3 else real(h, i, sig)  # SIMLSH_ENOMEM
    monkeypatch.setitem(F._F, "simlsh_forest_insert", failing)
    with pytest.raises(ValueError, match="index"):
        forest.index()
    assert len(calls) == 3
    assert all(k in forest for k in data)
    for k, m in data.items():
        assert not set(forest.query(m, 10)) & set(data)
    assert forest.query(words_minhash(["first", "one"]), 1) == ["first"]
    monkeypatch.setitem(F._F, "simlsh_forest_insert", real)
    forest.index()
    for k, m in data.items():
        assert forest.query(m, 1) == [k]


def test_threads_share_a_forest():
    """Threads adding their own keys while others call index() and query:
    every key is added once, and after a last index() each is its own
    nearest neighbour."""
    mhs = [words_minhash(["t%d" % i, "u%d" % i, "v%d" % i, "common"]) for i in range(400)]
    forest = MinHashLSHForest()
    errors = []
    stop = threading.Event()

    def adder(t):
        try:
            for j in range(t, 400, 4):
                forest.add(j, mhs[j])
        except BaseException as e:  # noqa: B902
            errors.append(e)

    def indexer():
        try:
            while not stop.is_set():
                forest.index()
                got = forest.query(mhs[0], 3)
                assert len(got) <= 3
                pickle.dumps(forest)
        except BaseException as e:  # noqa: B902
            errors.append(e)

    ts = [threading.Thread(target=adder, args=(t,)) for t in range(4)]
    ix = [threading.Thread(target=indexer) for _ in range(2)]
    for t in ts + ix:
        t.start()
    for t in ts:
        t.join(120)
    stop.set()
    for t in ix:
        t.join(120)
    assert not errors, errors[0]
    forest.index()
    for j, m in enumerate(mhs):
        assert j in forest and forest.query(m, 1) == [j]


def ensemble_data(count, seed=3):
    sizes = np.random.RandomState(seed).randint(1, 100, count)
    for key, size in enumerate(sizes):
        m = MinHash()
        for i in range(size):
            m.update(("%d" % i).encode("utf8"))
        yield (key, m, int(size))


def test_ensemble():
    lsh = MinHashLSHEnsemble(threshold=0.8)
    assert lsh.is_empty()
    lsh.index(ensemble_data(64))
    assert not lsh.is_empty() and 41 in lsh
    with pytest.raises(ValueError, match="non-empty"):
        lsh.index(ensemble_data(2))
    lsh = MinHashLSHEnsemble(threshold=0.9)
    data = list(ensemble_data(64))
    lsh.index(data)
    for key, minhash, size in data:
        assert key in lsh.query(minhash, size)
    lsh2 = pickle.loads(pickle.dumps(lsh))
    for _, minhash, size in data:
        assert set(lsh.query(minhash, size)) == set(lsh2.query(minhash, size))
    with pytest.raises(ValueError):
        MinHashLSHEnsemble().index([])
    with pytest.raises(ValueError):
        MinHashLSHEnsemble().index([("k", MinHash(), 0)])


def test_threads_share_an_lsh():
    """Threads inserting, removing and querying one MinHashLSH, each on its
    own keys, end as the same operations run serially."""
    rng = random.Random(5)
    sets = [{rng.randrange(300) for _ in range(30)} for _ in range(160)]
    mhs = []
    for s in sets:
        m = MinHash(num_perm=64)
        m.update_batch(str(x) for x in s)
        mhs.append(m)
    lsh = MinHashLSH(threshold=0.5, num_perm=64)
    errors, finals = [], {}
    deadline = time.monotonic() + 0.5

    def work(t):
        try:
            r, mine, present = random.Random(t), range(t * 20, t * 20 + 20), set()
            while time.monotonic() < deadline or not present:
                j = r.choice(mine)
                if j in present:
                    lsh.remove(j)
                    present.discard(j)
                else:
                    lsh.insert(j, mhs[j])
                    present.add(j)
                got = lsh.query(mhs[j])
                assert (j in got) == (j in present)
                pickle.dumps(lsh)
            finals[t] = present
        except BaseException as e:  # noqa: B902
            errors.append(e)

    ts = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert not errors, errors[0]
    want = set().union(*finals.values())
    assert set(lsh.keys) == want
    serial = MinHashLSH(threshold=0.5, num_perm=64)
    for j in sorted(want):
        serial.insert(j, mhs[j])
    for m in mhs:
        assert set(lsh.query(m)) == set(serial.query(m))


def test_threads_share_a_minhash():
    """Threads adding tokens to one MinHash while others read it: no token
    is lost between a read's flush and a concurrent update."""
    m = MinHash(num_perm=64)
    other = MinHash(num_perm=64)
    other.update_batch(["t%d-%d" % (t, i) for t in range(4) for i in range(0, 400, 2)])
    errors = []
    done = threading.Event()

    def writer(t):
        try:
            for i in range(400):
                m.update(("t%d-%d" % (t, i)).encode())
                if i % 50 == 0:
                    m.update_batch(["t%d-%d" % (t, i)])
        except BaseException as e:  # noqa: B902
            errors.append(e)

    def reader():
        try:
            while not done.is_set():
                m.jaccard(other)
                m.hashvalues
                pickle.dumps(m)
        except BaseException as e:  # noqa: B902
            errors.append(e)

    ws = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    rs = [threading.Thread(target=reader) for _ in range(2)]
    for t in ws + rs:
        t.start()
    for t in ws:
        t.join(120)
    done.set()
    for t in rs:
        t.join(120)
    assert not errors, errors[0]
    want = MinHash(num_perm=64)
    want.update_batch(["t%d-%d" % (t, i) for t in range(4) for i in range(400)])
    assert m == want


def test_a_read_waits_for_a_flush_of_its_own_update(monkeypatch):
    """Thread A is signing the pending tokens (slowly) when the thread that
    added one of them copies the MinHash: the copy has that token. (The
    flush used to take the tokens off the list before it stored their
    signature, and a read that found the list empty took the old one.)"""
    import simlsh.datasketch as sd
    m = MinHash(num_perm=32)
    m.update(b"mine")
    inside, go = threading.Event(), threading.Event()
    real = sd._signed

    def slow(*args):
        inside.set()
        go.wait(30)
        return real(*args)

    monkeypatch.setattr(sd, "_signed", slow)
    a = threading.Thread(target=m.is_empty)
    a.start()
    assert inside.wait(30)
    threading.Timer(0.3, go.set).start()
    c = m.copy()  # waits for A's flush: the token is A's to sign
    a.join(30)
    monkeypatch.setattr(sd, "_signed", real)
    want = MinHash(num_perm=32)
    want.update(b"mine")
    assert c == want


def test_a_forked_child_does_not_inherit_held_minhash_locks():
    """A MinHash write takes one of 64 module locks: a thread holding them
    all when the process forks must not leave them held in the child."""
    import signal
    import simlsh.datasketch as sd
    if not hasattr(os, "fork"):
        pytest.skip("no fork")
    held, release = threading.Event(), threading.Event()

    def holder():
        for lk in sd._STRIPES:
            lk.acquire()
        held.set()
        release.wait(60)
        for lk in sd._STRIPES:
            lk.release()

    t = threading.Thread(target=holder)
    t.start()
    assert held.wait(30)
    pid = os.fork()
    if pid == 0:  # the child: sign a few MinHashes, or be stopped by the alarm
        signal.alarm(20)
        try:
            for i in range(32):
                m = MinHash(num_perm=16)
                m.update(b"%d" % i)
                m.is_empty()
            os._exit(0)
        except BaseException:  # noqa: B902
            os._exit(3)
    try:
        _, status = os.waitpid(pid, 0)
    finally:
        release.set()
        t.join(60)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status


def test_minhashes_merged_both_ways_from_threads():
    """a.merge(b) in one thread while b.merge(a) runs in another, and
    updates to both: no deadlock, and each ends the union of everything."""
    a, b = MinHash(num_perm=64), MinHash(num_perm=64)
    errors = []

    def work(x, y, t):
        try:
            for i in range(300):
                x.update(("%d-%d" % (t, i)).encode())
                x.merge(y)
        except BaseException as e:  # noqa: B902
            errors.append(e)

    ts = [threading.Thread(target=work, args=(a, b, 0)),
          threading.Thread(target=work, args=(b, a, 1))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert not any(t.is_alive() for t in ts), "deadlock"
    assert not errors, errors[0]
    a.merge(b)
    b.merge(a)
    want = MinHash(num_perm=64)
    want.update_batch(["%d-%d" % (t, i) for t in range(2) for i in range(300)])
    assert a == want and b == want
