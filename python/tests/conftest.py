"""Shared fixtures: the source tree, the built tool, small corpora."""

import os
import random
import shutil

import pytest

SOURCE_ROOT = os.environ.get("SIMLSH_SOURCE_ROOT",
                             os.path.dirname(os.path.dirname(os.path.dirname(
                                 os.path.abspath(__file__)))))


@pytest.fixture(scope="session")
def source_root():
    return SOURCE_ROOT


@pytest.fixture(scope="session")
def dedup_tool():
    path = os.environ.get("SIMLSH_DEDUP") or shutil.which("simlsh-dedup")
    if not path or not os.path.exists(path):
        pytest.skip("simlsh-dedup is not built (meson option tools)")
    return path


def sample_files(root):
    """data/sample in the tool's order: names sorted bytewise, directories
    entered where they sort, depth first."""
    out = []

    def walk(d):
        for name in sorted(os.listdir(d), key=os.fsencode):
            p = os.path.join(d, name)
            if os.path.isdir(p) and not os.path.islink(p):
                walk(p)
            elif os.path.isfile(p):
                out.append(p)

    walk(root)
    return out


@pytest.fixture(scope="session")
def sample(source_root):
    """(names relative to the source root, contents as bytes) of data/sample."""
    files = sample_files(os.path.join(source_root, "data", "sample"))
    names = [os.path.relpath(f, source_root) for f in files]
    texts = []
    for f in files:
        with open(f, "rb") as fh:
            texts.append(fh.read())
    return names, texts


WORDS = ("harbour council river signal garden ledger lantern meadow copper "
         "window market engine valley thunder pocket silver orchard anchor "
         "bridge candle forest winter summer basket castle mirror").split()


def planted_corpus(n_base=300, copies=3, seed=1234):
    """Random documents and edited copies of some of them (fixed seed):
    distinct, near-duplicate and borderline pairs, empty and blank lines,
    and non-ASCII text."""
    rng = random.Random(seed)
    docs = []
    for i in range(n_base):
        words = [rng.choice(WORDS) for _ in range(rng.randint(20, 60))]
        docs.append(" ".join(words))
        if i % 7 == 0:
            for _ in range(rng.randint(1, copies)):
                w = list(words)
                for _ in range(rng.randint(0, 6)):
                    w[rng.randrange(len(w))] = rng.choice(WORDS)
                docs.append(" ".join(w))
        if i % 50 == 0:
            docs.append("")
            docs.append("   ")
        if i % 31 == 0:
            docs.append("Größe café naïve — " + " ".join(words[:10]))
    return docs
