"""The native classes explain themselves (issue 28): explicit keywords,
enums by name, a token path on Signature, TypeError for a lone text where
texts are expected, and errors that name the allowed range, the expected
length or the bad row of a batch."""

import inspect
import pickle

import numpy as np
import pytest

import simlsh
from simlsh import (AlreadyExists, EmptyInput, InvalidArgument, InvalidUTF8, Normalize,
                    Params, Scheme, Signature, Unit)


def test_params_keywords_are_explicit():
    sig = inspect.signature(Params)
    names = list(sig.parameters)
    assert names[:3] == ["unit", "k", "normalize"] and "threshold" in names
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in sig.parameters.values())
    assert set(names) == set(simlsh.KEYS)
    assert sig.parameters["k"].annotation is not inspect.Parameter.empty
    assert list(inspect.signature(Params.replace).parameters)[1:] == names


def test_enums_read_as_enums_and_show_by_name():
    p = Params(unit="word", normalize="lower,space", scheme="classic")
    assert p.unit is Unit.WORD and p.unit == 2
    assert p.normalize == Normalize.LOWER | Normalize.SPACE == 3
    assert p.scheme is Scheme.CLASSIC
    r = repr(p)
    assert "unit='word'" in r and "normalize='lower,space'" in r and "scheme='classic'" in r
    assert "isa='auto'" in r and "utf8_policy='replace'" in r
    assert eval(r, {"Params": Params}) == p  # repr is a constructor call
    assert "normalize='none'" in repr(Params())
    # enum members and names are accepted alike
    assert Params(unit=Unit.BYTE) == Params(unit="byte") == Params(unit=0)
    assert Params(normalize=[Normalize.LOWER, "space"]).normalize == 3
    assert pickle.loads(pickle.dumps(p)) == p


@pytest.mark.parametrize("kwargs, words", [
    ({"threshold": 1.5}, ["threshold", "(0, 1]"]),
    ({"threshold": float("nan")}, ["(0, 1]"]),
    ({"k": 0}, ["k must be 1 .. 64"]),
    ({"num_perm": 2000}, ["1 .. 1024"]),
    ({"seed": -1}, ["0 .. 4294967295"]),
    ({"hash_bits": 48}, ["32 or 64"]),
    ({"unit": 7}, ["'byte' (0)", "'word' (2)"]),
    ({"fp_weight": -1.0}, ["[0, 1e+06]"]),
    ({"normalize": 64}, ["'lower' (1)", "'nfkc' (16)"]),
])
def test_out_of_range_names_the_range(kwargs, words):
    with pytest.raises(InvalidArgument) as e:
        Params(**kwargs)
    for w in words:
        assert w in str(e.value), str(e.value)


def test_range_messages_follow_the_librarys_bounds():
    lo, hi = Params.bounds("k")
    with pytest.raises(InvalidArgument, match="%d .. %d" % (lo, hi)):
        Params().set("k", hi + 1)


@pytest.mark.skipif(not simlsh.has_unicode(), reason="library built without utf8proc")
def test_a_conflict_in_range_says_what_conflicts():
    with pytest.raises(InvalidArgument, match="byte unit takes no casefold"):
        Params(unit="byte", normalize="casefold")


def test_a_single_text_where_texts_are_expected_is_a_type_error():
    p = Params(num_perm=32)
    with pytest.raises(TypeError, match="sign_batch.*single str"):
        simlsh.sign_batch("a text", p)
    with pytest.raises(TypeError, match="single bytes"):
        simlsh.sign_batch(b"a text", p)
    ix = simlsh.Index(p)
    values = simlsh.sign_batch(["a b c d e f g", "h i j k l m n"], p)
    with pytest.raises(TypeError, match="insert_batch.*single str"):
        ix.insert_batch("ab", values)
    assert len(ix) == 0
    s = Signature(p)
    with pytest.raises(TypeError, match="update_tokens.*single str"):
        s.update_tokens("token")
    with pytest.raises(TypeError, match="update_features"):
        s.update_features("token")
    with pytest.raises(TypeError, match="update_tokens"):
        s.update(["a", "b"])
    with pytest.raises(TypeError):
        ix.query_batch("text")
    assert s.empty


def test_batch_errors_name_the_row():
    p = Params(num_perm=32)
    texts = ["one two three four five six", "alpha beta gamma delta epsilon",
             "red green blue cyan magenta", "north south east west up down"]
    values = simlsh.sign_batch(texts, p)
    ix = simlsh.Index(p)
    with pytest.raises(AlreadyExists, match="rows 0 and 2"):
        ix.insert_batch(["a", "b", "a", "c"], values)
    with pytest.raises(AlreadyExists, match="rows 1 and 3"):
        ix.insert_batch([5, 6, 7, 6], values)
    ix.insert_batch([10, 11], values[:2])
    with pytest.raises(AlreadyExists, match="row 1: key 10"):
        ix.insert_batch([12, 10], values[2:])
    bad = values.astype(np.int64)
    bad[2, 5] = -3
    with pytest.raises(InvalidArgument, match="row 2, column 5 is -3"):
        ix.insert_batch([20, 21, 22, 23], bad)
    empty = values.copy()
    empty[3] = simlsh.EMPTY_VALUE
    with pytest.raises(EmptyInput, match="row 3"):
        ix.insert_batch([20, 21, 22, 23], empty)
    with pytest.raises(InvalidArgument, match=r"\(4, 32\)"):
        ix.insert_batch([20, 21, 22, 23], values[:, :16])
    with pytest.raises(InvalidArgument, match="num_perm = 32"):
        ix.query_batch(values[:, :16])
    with pytest.raises(InvalidArgument, match="16 values; expected num_perm = 32"):
        Signature.from_values(p, values[0, :16])
    with pytest.raises(TypeError, match="document 2"):
        simlsh.sign_batch(["a b", "c d", 3, "e f"], p)
    strict = p.replace(utf8_policy="reject")
    with pytest.raises(InvalidUTF8, match="document 1"):
        simlsh.sign_batch(["fine text here", b"bad \xff bytes here"], strict)
    assert sorted(ix.keys()) == [10, 11]  # nothing else went in


def test_update_tokens_is_the_token_path():
    p = Params(num_perm=128)
    words = "the quick brown fox jumps over the lazy dog".split()
    a = Signature(p).update_tokens(words)
    b = Signature(p)
    for w in reversed(words):  # one at a time, as datasketch users do
        b.update_tokens([w.encode()])
    assert a == b and a.jaccard(b) == 1.0
    # a token is one element, not a document to shingle
    whole = Signature(p).update_text(" ".join(words))
    assert whole != a
    assert Signature(p).update_tokens(["x"]) == Signature(p).update_features(
        [simlsh.hash_bytes("x", p)])
    # Jaccard of token sets: {a..h} vs {e..l}: 4 / 12
    s = Signature(p).update_tokens(list("abcdefgh"))
    t = Signature(p).update_tokens(list("efghijkl"))
    assert abs(s.jaccard(t) - 1 / 3) < 0.2
    with pytest.raises(TypeError, match="token 1"):
        Signature(p).update_tokens(["a", 5])


def test_errors_are_importable_from_simlsh():
    for name in ("Error", "InvalidArgument", "NotFound", "AlreadyExists", "EmptyInput",
                 "ContractMismatch", "Corrupt", "Unsupported", "InvalidUTF8", "IOFailure"):
        assert issubclass(getattr(simlsh, name), simlsh.Error) or name == "Error"
        assert name in simlsh.__all__
    with pytest.raises(simlsh.NotFound):
        simlsh.Index(Params()).remove("nope")
