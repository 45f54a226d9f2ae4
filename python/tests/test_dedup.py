"""simlsh.dedup gives the answers of simlsh-dedup on the same input and options.

The tool is run on the same documents (data/sample as files, and a planted
corpus as --lines) with --output clusters and --output keep, and the lists
must be equal, for several option sets that change the contract, the banding
and the verification.
"""

import os
import random
import subprocess

import numpy as np
import pytest

import simlsh

from conftest import planted_corpus

# (simlsh-dedup options, the same as dedup() arguments)
OPTION_SETS = [
    ([], {}),
    (["--threshold", "0.5"], {"threshold": 0.5}),
    (["--threshold", "0.9", "--unit", "word", "-k", "2"], {"threshold": 0.9, "unit": "word",
                                                            "k": 2}),
    (["--num-perm", "64", "--scheme", "classic", "--seed", "7"],
     {"num_perm": 64, "scheme": "classic", "seed": 7}),
    (["--bands", "10"], {"bands": 10}),
    (["--rows", "3", "--threshold", "0.6"], {"rows": 3, "threshold": 0.6}),
    (["--fp-weight", "0.5", "--fn-weight", "0.5", "--normalize", "none"],
     {"fp_weight": 0.5, "fn_weight": 0.5, "normalize": "none"}),
    (["--verify", "exact", "--threshold", "0.7"], {"verify": "exact", "threshold": 0.7}),
    (["--verify", "none", "--threshold", "0.7"], {"verify": "none", "threshold": 0.7}),
    (["--verify", "estimate"], {"verify": "estimate"}),
    (["--cluster", "components", "--threshold", "0.6"], {"cluster": "components", "threshold": 0.6}),
    (["--recall", "0.9", "--threshold", "0.6"], {"recall": 0.9, "threshold": 0.6}),
    (["--unit", "byte", "-k", "8", "--strict-utf8"],
     {"unit": "byte", "k": 8, "utf8_policy": "reject"}),
    (["--strict-utf8", "--normalize", "lower,space,punct"],
     {"utf8_policy": "reject", "normalize": "lower,space,punct"}),
]


def run_tool(tool, opts, inputs, output):
    r = subprocess.run([tool, "--quiet", "-j", "2", "--output", output] + opts + inputs,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    assert r.returncode == 0, r.stderr.decode()
    return [line.split("\t") for line in r.stdout.decode().splitlines()]


def compare(tool, opts, kwargs, inputs, texts, keys, cwd=None):
    got = simlsh.dedup(texts, keys=keys, **kwargs)
    clusters = run_tool(tool, opts, inputs, "clusters")
    keep = [row[0] for row in run_tool(tool, opts, inputs, "keep")]
    assert got.groups == clusters
    assert got.keep == keep
    # every document is kept, dropped as a duplicate, or skipped
    dropped = sum(len(g) - 1 for g in got.groups)
    assert len(got.keep) + dropped + len(got.skipped) == len(texts)
    return got


@pytest.mark.parametrize("opts,kwargs", OPTION_SETS, ids=[" ".join(o) or "defaults"
                                                          for o, _ in OPTION_SETS])
def test_sample_corpus_like_the_tool(dedup_tool, sample, source_root, opts, kwargs):
    names, texts = sample
    paths = [os.path.join(source_root, n) for n in names]
    got = compare(dedup_tool, opts, kwargs, paths, texts, paths)
    if not opts:
        # the clusters data/README.md plants
        assert len(got.groups) == 4 and not got.skipped


@pytest.mark.parametrize("opts,kwargs", OPTION_SETS, ids=[" ".join(o) or "defaults"
                                                          for o, _ in OPTION_SETS])
def test_planted_lines_like_the_tool(dedup_tool, tmp_path, opts, kwargs):
    docs = [d.encode() for d in planted_corpus(400)]
    docs[5] = b"invalid \xff\xfe utf-8 in a line with enough words to shingle"
    docs[9] = docs[5] + b" and a little more"
    path = tmp_path / "lines.txt"
    path.write_bytes(b"\n".join(docs) + b"\n")
    keys = [str(i + 1) for i in range(len(docs))]
    got = compare(dedup_tool, opts, kwargs, ["--lines", str(path)], docs, keys)
    assert got.groups and got.skipped  # the corpus plants both
    if kwargs.get("utf8_policy") == "reject" and kwargs.get("unit") != "byte":
        assert "6" in got.skipped and "10" in got.skipped


def test_dedup_api():
    texts = ["a b c d e f g h", "a b c d e f g h", "x y z w v u t s", "", "A B C D E F G H"]
    r = simlsh.dedup(texts, k=3)
    groups, keep = r
    assert groups == [[0, 1, 4]] and keep == [0, 2] and r.skipped == [3]
    assert r == simlsh.dedup(tuple(texts), k=3)
    named = simlsh.dedup(texts, keys="abcde", k=3)
    assert named.groups == [["a", "b", "e"]] and named.keep == ["a", "c"]
    assert "groups" in repr(r)
    assert simlsh.dedup([]).groups == []
    with pytest.raises(simlsh.InvalidArgument):
        simlsh.dedup(texts, keys=[1, 2])
    with pytest.raises(simlsh.InvalidArgument):
        simlsh.dedup(texts, verify="maybe")
    with pytest.raises(simlsh.InvalidArgument):
        simlsh.dedup(texts, fp_weight=0, fn_weight=0)
    with pytest.raises(simlsh.InvalidArgument):
        simlsh.dedup(texts, bands=200)
    with pytest.raises(simlsh.InvalidArgument):
        simlsh.dedup(texts, threshold=0)


def test_dedup_params_are_the_tools():
    p = simlsh.dedup_params()
    assert p.normalize == simlsh.NORM_LOWER_ASCII | simlsh.NORM_COLLAPSE_SPACE
    assert (p.fp_weight, p.fn_weight, p.threshold) == (0.1, 0.9, 0.8)
    # exact verification (the default) bands for recall: P(0.8) >= 0.99
    assert p.bands_rows() == (16, 6)
    assert 1 - (1 - 0.8 ** 6) ** 16 >= 0.99 > 1 - (1 - 0.8 ** 9) ** 14
    # docs/cli.md: "this gives 14 bands of 9 rows" (--verify estimate)
    assert simlsh.dedup_params(verify="estimate").bands_rows() == (14, 9)
    assert simlsh.dedup_params(recall=0.9).bands_rows() != (16, 6)
    assert simlsh.dedup_params(bands=10).bands_rows() == (10, 12)
    assert simlsh.dedup_params(rows=3, num_perm=64).bands_rows() == (21, 3)


def test_groups_are_never_cut():
    """max_pairs no longer bounds groups: 20 copies make one group of 20."""
    texts = ["same words in every single document here"] * 20
    r = simlsh.dedup(texts, verify="exact", max_pairs=5)
    assert not r.truncated
    assert r.groups == [list(range(20))] and r.keep == [0]


@pytest.mark.parametrize("verify", ["exact", "estimate", "none"])
def test_heavy_group_like_the_tool(dedup_tool, tmp_path, verify):
    """A corpus full of copies (one group of 300 near-copies, smaller ones,
    unrelated documents, shuffled): the engine's groups, as the tool's."""
    import random
    rng = random.Random(3)
    vocab = ["w%d" % i for i in range(5000)]
    docs = [" ".join(rng.choice(vocab) for _ in range(60)) for _ in range(300)]
    for size in (300, 40, 10, 10, 3):
        base = [rng.choice(vocab) for _ in range(60)]
        for _ in range(size):
            t = list(base)
            for _ in range(rng.randint(0, 3)):
                t[rng.randrange(60)] = rng.choice(vocab)
            docs.append(" ".join(t))
    rng.shuffle(docs)
    path = tmp_path / "heavy.txt"
    path.write_text("\n".join(docs) + "\n")
    keys = [str(i + 1) for i in range(len(docs))]
    got = compare(dedup_tool, ["--verify", verify], {"verify": verify}, ["--lines", str(path)],
                  docs, keys)
    assert max(len(g) for g in got.groups) >= 200  # the centre claims most of the 300


def test_dedup_keywords_are_explicit():
    """dedup() and dedup_params() name every parameter (IDEs and type
    checkers see them); a misspelt one is a TypeError, not ignored."""
    import inspect
    for fn in (simlsh.dedup, simlsh.dedup_params):
        params = inspect.signature(fn).parameters
        assert not any(p.kind == p.VAR_KEYWORD for p in params.values())
        for name in ("unit", "k", "num_perm", "normalize", "bands", "rows", "fp_weight"):
            assert params[name].kind == params[name].KEYWORD_ONLY
    with pytest.raises(TypeError):
        simlsh.dedup(["a b c", "a b c"], num_perms=64)
    with pytest.raises(TypeError):
        simlsh.dedup_params(band=4)
    assert simlsh.dedup(["a b c d e", "a b c d e"], k=2, num_perm=64).groups == [[0, 1]]


def _components_reference(n, pairs):
    label = list(range(n))

    def find(x):
        while label[x] != x:
            x = label[x]
        return x

    for a, b in pairs:
        x, y = find(a), find(b)
        if x != y:
            label[max(x, y)] = min(x, y)
    return [find(i) for i in range(n)]


def test_group_components_equals_union_find():
    rnd = random.Random(5)
    for n, m in ((1, 0), (10, 4), (300, 250), (2000, 1500)):
        pairs = []
        while len(pairs) < m:
            x, y = rnd.randrange(n), rnd.randrange(n)
            if x != y:
                pairs.append((x, y))
        a = [p[0] for p in pairs]
        b = [p[1] for p in pairs]
        got = simlsh.group_components(a, b, n=n)
        assert got.dtype == np.uint64 and len(got) == n
        assert got.tolist() == _components_reference(n, pairs)
        # numpy arrays of any integer type give the same labels
        assert simlsh.group_components(np.array(a, np.int32), np.array(b, np.uint16)
                                       if n < 65536 else b, n=n).tolist() == got.tolist()
    # n defaults to one past the largest id
    assert simlsh.group_components([4, 1], [2, 4]).tolist() == [0, 1, 1, 3, 1]
    assert simlsh.group_components([], []).tolist() == []


def test_group_components_bad_input():
    with pytest.raises(simlsh.InvalidArgument, match="same length"):
        simlsh.group_components([1, 2], [3])
    with pytest.raises(simlsh.InvalidArgument, match=">= 0"):
        simlsh.group_components([-1], [2])
    with pytest.raises(simlsh.InvalidArgument, match="at least 6"):
        simlsh.group_components([5], [2], n=3)
    with pytest.raises(simlsh.InvalidArgument, match="integer ids"):
        simlsh.group_components([0.5], [2])
    with pytest.raises(TypeError):
        simlsh.group_components("12", "34")
    with pytest.raises(simlsh.InvalidArgument):
        simlsh.group_components([3], [3])  # a document paired with itself
