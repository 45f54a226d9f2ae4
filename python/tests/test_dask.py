"""python/examples/dask_dedup.py: the map-reduce recipe on Dask gives the
groups of simlsh.dedup."""

import json
import os
import subprocess
import sys

import pytest

import simlsh

from conftest import planted_corpus

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       "examples", "dask_dedup.py")


@pytest.mark.parametrize("threshold,mode", [(0.8, "processes"), (0.6, "threads")])
def test_dask_groups_equal_dedup(tmp_path, threshold, mode):
    pytest.importorskip("distributed", reason="Dask distributed (python3-distributed)")
    docs = planted_corpus(300)
    path = tmp_path / "docs.txt"
    path.write_text("\n".join(docs) + "\n", encoding="utf-8")
    r = subprocess.run([sys.executable, EXAMPLE, "--workers", "2", "--partitions", "4",
                        "--threshold", str(threshold), "--json", str(path)]
                       + (["--threads"] if mode == "threads" else []),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=500, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout)
    want = simlsh.dedup(docs, threshold=threshold, verify="exact", cluster="components")
    assert got["groups"] == want.groups
    assert got["keep"] == want.keep
    assert len(want.groups) > 10
