"""scheme="datasketch": datasketch 1.x's own hash values, bit for bit.

The golden vectors below were computed by datasketch's minhash.py
(ekzhu/datasketch at commit 8d4bda1, MIT), run on the tokens shown; the
random sets are checked against a reference written here from datasketch's
formula with Python integers (no numpy arithmetic, so no shared overflow
rules): sha1_hash32, then ((a*h + b) mod 2^64) mod (2^61-1), low 32 bits,
a and b drawn by numpy's RandomState(seed) as datasketch draws them.
When datasketch itself is importable, the same is checked against it.
"""

import hashlib
import pickle
import random
import struct

import numpy as np
import pytest

from simlsh.datasketch import LeanMinHash, MinHash, MinHashLSH, MinHashLSHForest

TOKENS = [b"apple", b"banana", b"cherry", b"date", b"elderberry", b"fig", b"grape"]
GOLDEN = {  # (seed, num_perm): datasketch's hashvalues of TOKENS
    (1, 16): [2920413593, 428512208, 945091117, 222800236, 267521443, 40948560, 726808456,
              822956154, 832205428, 500881301, 1489075902, 211184577, 600022309, 3031509,
              1374314694, 96926380],
    (7, 16): [769942600, 1079180559, 385969470, 1584979789, 37052125, 1350225307, 628891940,
              569571745, 521261240, 792124394, 974747822, 252545611, 793490315, 229708222,
              1023844967, 490184114],
}
GOLDEN_128 = ([2920413593, 428512208, 945091117, 222800236, 267521443, 40948560],
              [147229464, 378999671])  # seed 1: the first six and the last two
ONE_TOKEN_X = [2681891830, 2709698227, 14964313, 3144002756]  # seed 1, num_perm 4, b"x"
PERMS_SEED_1 = [[775169054918279404, 2109959069025162, 401325382989534145,
                 1130051441076870728],
                [1758426461858698312, 965365488286768773, 1703346441743126657,
                 1762784241922636284]]
MAX = (1 << 32) - 1


def reference(tokens, seed, num_perm, hashfunc=None):
    gen = np.random.RandomState(seed)
    p = (1 << 61) - 1
    ab = [(int(gen.randint(1, p, dtype=np.uint64)), int(gen.randint(0, p, dtype=np.uint64)))
          for _ in range(num_perm)]
    out = [MAX] * num_perm
    for t in tokens:
        h = hashfunc(t) if hashfunc else struct.unpack("<I", hashlib.sha1(t).digest()[:4])[0]
        for i, (a, b) in enumerate(ab):
            out[i] = min(out[i], ((a * h + b) % (1 << 64)) % p & MAX)
    return out


def ds(num_perm=16, seed=1, **kw):
    return MinHash(num_perm=num_perm, seed=seed, scheme="datasketch", **kw)


def test_golden_vectors_from_datasketch():
    for (seed, n), want in GOLDEN.items():
        m = ds(n, seed)
        m.update_batch(TOKENS)
        assert m.hashvalues.tolist() == want
        assert m.hashvalues.dtype == np.uint64
    m = ds(128, 1)
    for t in TOKENS:
        m.update(t)
    v = m.hashvalues.tolist()
    assert (v[:6], v[-2:]) == GOLDEN_128
    x = ds(4, 1)
    x.update(b"x")
    assert x.hashvalues.tolist() == ONE_TOKEN_X
    assert x.permutations.tolist() == PERMS_SEED_1
    # str tokens are taken as their UTF-8 bytes
    s = ds(16, 7)
    s.update_batch([t.decode() for t in TOKENS])
    assert s.hashvalues.tolist() == GOLDEN[(7, 16)]


def test_random_sets_match_the_formula():
    rng = random.Random(28)
    for seed in (0, 1, 2, 99, 2 ** 32 - 1):
        for n in (1, 3, 64, 130):
            toks = [b"t%d" % rng.randrange(10 ** 6) for _ in range(rng.randint(1, 60))]
            toks += [b"", "caf\u00e9".encode(), bytes(range(256))]
            m = ds(n, seed)
            for t in toks[:10]:
                m.update(t)
            m.update_batch(toks[10:])
            assert m.hashvalues.tolist() == reference(toks, seed, n), (seed, n)
    # a hashfunc's values go through the same permutations, as in datasketch
    hf = lambda b: len(b) * 1000003  # noqa: E731
    m = ds(8, 3, hashfunc=hf)
    m.update_batch([b"a", b"bb", b"cccc"])
    assert m.hashvalues.tolist() == reference([b"a", b"bb", b"cccc"], 3, 8, hf)


def test_operations_keep_the_exact_values():
    a, b = ds(32, 5), ds(32, 5)
    a.update_batch(TOKENS[:5])
    b.update_batch(TOKENS[2:])
    ref_a, ref_b = reference(TOKENS[:5], 5, 32), reference(TOKENS[2:], 5, 32)
    assert a.jaccard(b) == sum(x == y for x, y in zip(ref_a, ref_b)) / 32
    assert a.count() == pytest.approx(32 / sum(v / MAX for v in ref_a) - 1.0)
    c = a.copy()
    c.merge(b)
    assert c.hashvalues.tolist() == reference(TOKENS, 5, 32)
    assert MinHash.union(a, b) == c
    assert pickle.loads(pickle.dumps(c)) == c
    assert pickle.loads(pickle.dumps(c)).hashvalues.tolist() == reference(TOKENS, 5, 32)
    # a stored MinHash's values, given back, go on where datasketch would
    d = ds(32, 5, hashvalues=ref_a)
    d.update_batch(TOKENS[5:])
    assert d.hashvalues.tolist() == reference(TOKENS, 5, 32)
    # datasketch's permutations may be passed in, as datasketch allows
    e = ds(32, 5, permutations=a.permutations)
    e.update_batch(TOKENS[:5])
    assert e == a
    with pytest.raises(ValueError):
        ds(32, 5, permutations=np.zeros((2, 8), dtype=np.uint64))
    with pytest.raises(ValueError):
        MinHash(num_perm=4, permutations=PERMS_SEED_1)  # only with this scheme
    c.clear()
    assert c.is_empty() and c.hashvalues.tolist() == [MAX] * 32
    c.hashvalues = ref_b
    assert c.hashvalues.tolist() == ref_b
    # the schemes do not mix
    with pytest.raises(ValueError):
        a.jaccard(MinHash(num_perm=32, seed=5))


def test_lean_minhash_reads_datasketch_bytes():
    m = ds(16, 1)
    m.update_batch(TOKENS)
    lean = LeanMinHash(m)
    assert lean.hashvalues.tolist() == GOLDEN[(1, 16)]
    buf = bytearray(lean.bytesize())
    lean.serialize(buf)
    # datasketch's layout: seed (q), num_perm (i), the values (I)
    assert bytes(buf) == struct.pack("@qi16I", 1, 16, *GOLDEN[(1, 16)])
    back = LeanMinHash.deserialize(buf, scheme="datasketch")
    assert back == lean and back.hashvalues.tolist() == GOLDEN[(1, 16)]
    more = MinHash(num_perm=16, seed=1, scheme="datasketch", hashvalues=back.hashvalues)
    more.update(b"kiwi")
    assert more.hashvalues.tolist() == reference(TOKENS + [b"kiwi"], 1, 16)
    with pytest.raises(TypeError):
        back.update(b"x")
    assert hash(back) == hash(LeanMinHash(seed=1, hashvalues=GOLDEN[(1, 16)],
                                          scheme="datasketch"))


def test_lsh_and_forest_with_datasketch_values():
    rng = random.Random(3)
    base = [b"w%d" % rng.randrange(5000) for _ in range(60)]
    near = base[:57] + [b"x1", b"x2", b"x3"]
    far = [b"v%d" % i for i in range(60)]
    lsh = MinHashLSH(threshold=0.7, num_perm=128)
    forest = MinHashLSHForest(num_perm=128)
    ms = {}
    for k, toks in (("base", base), ("near", near), ("far", far)):
        m = ds(128, 1)
        m.update_batch(toks)
        ms[k] = m
        lsh.insert(k, m)
        forest.add(k, m)
    forest.index()
    assert "near" in lsh.query(ms["base"]) and "far" not in lsh.query(ms["base"])
    assert forest.query(ms["base"], 2)[:2] == ["base", "near"]
    with pytest.raises(ValueError):  # another contract: classic values
        lsh.insert("classic", MinHash(num_perm=128))


def test_a_value_of_2_32_minus_1_in_a_non_empty_minhash():
    """datasketch's values may reach 2^32-1, which a simlsh signature keeps
    for empty; the MinHash keeps the exact values and still indexes."""
    v = [MAX, 5, 6, 7]
    m = ds(4, 1, hashvalues=v)
    assert m.hashvalues.tolist() == v and not m.is_empty()
    lsh = MinHashLSH(threshold=0.5, num_perm=4, params=(2, 2))
    lsh.insert("m", m)
    assert lsh.query(ds(4, 1, hashvalues=v)) == ["m"]
    assert pickle.loads(pickle.dumps(m)).hashvalues.tolist() == v


def test_same_values_as_installed_datasketch():
    dm = pytest.importorskip("datasketch.minhash")
    rng = random.Random(5)
    for seed in (1, 42):
        for n in (16, 128):
            toks = [b"t%d" % rng.randrange(10 ** 6) for _ in range(100)]
            d = dm.MinHash(num_perm=n, seed=seed)
            d.update_batch(toks)
            m = ds(n, seed)
            m.update_batch(toks)
            assert m.hashvalues.tolist() == d.hashvalues.tolist()
