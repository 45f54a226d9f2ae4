"""Any mix of threads on one object is safe (docs/python.md, "Threads").

ctypes releases the GIL during each library call, so before the objects had
locks, two threads inserting into one Index corrupted the heap (issue 28).
Here 8 threads mix every kind of call on one index, each on its own keys,
so the end state is known: the same operations run serially, thread by
thread, must give the same keys, signatures and query answers. The run
lasts SIMLSH_THREAD_SECONDS (2 by default); how many operations fit in it
changes nothing that is checked.
"""

import os
import pickle
import random
import threading
import time

import numpy as np
import pytest

import simlsh
from simlsh._rwlock import RWLock

from conftest import planted_corpus

THREADS = 8
KEYS_PER_THREAD = 40
SECONDS = float(os.environ.get("SIMLSH_THREAD_SECONDS", "2"))
OPS = ("insert", "remove", "insert_batch", "query", "query_batch", "query_arrays", "pickle",
       "len")


def run_threads(targets, limit):
    """Run each callable in a thread; re-raise the first error; fail when a
    thread has not finished ``limit`` seconds after the start (a deadlock)."""
    errors = []

    def wrap(fn):
        def body():
            try:
                fn()
            except BaseException as e:  # noqa: B902 - reported below
                errors.append(e)
        return body

    ts = [threading.Thread(target=wrap(fn), daemon=True) for fn in targets]
    for t in ts:
        t.start()
    end = time.monotonic() + limit
    for t in ts:
        t.join(max(0.0, end - time.monotonic()))
    assert not any(t.is_alive() for t in ts), "threads still running: a deadlock"
    if errors:
        raise errors[0]


@pytest.fixture(scope="module")
def corpus():
    p = simlsh.Params(unit="word", k=2, num_perm=64, threshold=0.6)
    texts = planted_corpus(n_base=400, seed=28)
    texts = [t for t in texts if t.strip()][:THREADS * KEYS_PER_THREAD]
    values = simlsh.sign_batch(texts, p)
    sigs = [simlsh.Signature.from_values(p, row) for row in values]
    return p, values, sigs


def key(t, j):
    return "t%d-%d" % (t, j)


def worker(ix, t, values, sigs, deadline, log):
    """Random operations on thread t's keys; checks what it can see of them
    while the others write, and appends every write to ``log``."""
    rng = random.Random(1000 + t)
    base = t * KEYS_PER_THREAD
    present = set()
    mine = "t%d-" % t
    ops = list(OPS)  # each kind once first, then at random
    while ops or time.monotonic() < deadline:
        op = ops.pop(0) if ops else rng.choice(OPS)
        absent = [j for j in range(KEYS_PER_THREAD) if j not in present]
        if op == "insert" and absent:
            j = rng.choice(absent)
            ix.insert(key(t, j), sigs[base + j])
            present.add(j)
            log.append(("insert", [j]))
        elif op == "insert_batch" and absent:
            js = rng.sample(absent, min(len(absent), rng.randint(1, 6)))
            ix.insert_batch([key(t, j) for j in js], values[[base + j for j in js]])
            present.update(js)
            log.append(("insert", js))
        elif op == "remove" and present:
            j = rng.choice(sorted(present))
            ix.remove(key(t, j))
            present.discard(j)
            log.append(("remove", [j]))
        elif op == "query":
            j = rng.randrange(KEYS_PER_THREAD)
            got = ix.query(sigs[base + j])
            # only this thread changes its keys: its own state is exact
            assert (key(t, j) in got) == (j in present)
            assert all(isinstance(k, str) and k.startswith("t") for k in got)
        elif op == "query_batch":
            js = [rng.randrange(KEYS_PER_THREAD) for _ in range(4)]
            got = ix.query_batch([sigs[base + j] for j in js])
            for j, g in zip(js, got):
                assert (key(t, j) in g) == (j in present)
        elif op == "query_arrays":
            js = [rng.randrange(KEYS_PER_THREAD) for _ in range(5)]
            off, keys = ix.query_arrays(values[[base + j for j in js]])
            assert len(off) == len(js) + 1 and off[0] == 0 and off[-1] == len(keys)
            for q, j in enumerate(js):
                assert (key(t, j) in keys[off[q]:off[q + 1]]) == (j in present)
        elif op == "pickle":
            snap = pickle.loads(pickle.dumps(ix))
            ks = snap.keys()
            assert len(ks) == len(snap) == len(set(ks))
            assert {k for k in ks if k.startswith(mine)} == {key(t, j) for j in present}
        elif op == "len":
            assert (key(t, 0) in ix) == (0 in present)
            assert len(ix) >= len(present)
    return present


def test_eight_threads_one_index_match_a_serial_run(corpus):
    p, values, sigs = corpus
    ix = simlsh.Index(p)
    deadline = time.monotonic() + SECONDS
    logs = [[] for _ in range(THREADS)]
    finals = [None] * THREADS

    def target(t):
        def run():
            finals[t] = worker(ix, t, values, sigs, deadline, logs[t])
        return run

    run_threads([target(t) for t in range(THREADS)], SECONDS + 300)

    # the same writes, serially, thread by thread (their keys are disjoint)
    serial = simlsh.Index(p)
    for t in range(THREADS):
        base = t * KEYS_PER_THREAD
        for op, js in logs[t]:
            if op == "insert":
                serial.insert_batch([key(t, j) for j in js], values[[base + j for j in js]])
            else:
                for j in js:
                    serial.remove(key(t, j))
    want = {key(t, j) for t in range(THREADS) for j in finals[t]}
    assert set(ix.keys()) == set(serial.keys()) == want
    assert len(ix) == len(want)
    for k in want:
        assert np.array_equal(ix.signature(k).values, serial.signature(k).values)
    for s in sigs:
        assert set(ix.query(s)) == set(serial.query(s))
    assert sorted(map(sorted, ix.cluster())) == sorted(map(sorted, serial.cluster()))
    back = pickle.loads(pickle.dumps(ix))
    assert set(back.keys()) == want
    # every thread did every kind of operation at least once
    assert all(any(op == "remove" for op, _ in log) for log in logs)


def test_int_keys_merge_copy_clear_from_threads(corpus):
    """Writers that replace the whole index (clear, merge into it) against
    readers that copy, save and list it: no crash, and every snapshot is a
    state the index was in between two writes."""
    p, values, sigs = corpus
    n = 60
    a, b = simlsh.Index(p), simlsh.Index(p)
    a.insert_batch(list(range(n)), values[:n])
    b.insert_batch(list(range(n, 2 * n)), values[n:2 * n])
    states = ({*range(n)}, {*range(2 * n)}, set())
    deadline = time.monotonic() + SECONDS / 2

    def writer():
        while time.monotonic() < deadline:
            a.merge(b)  # a: 0..2n
            a.clear()  # a: empty
            a.insert_batch(list(range(n)), values[:n])  # a: 0..n

    def reader():
        while time.monotonic() < deadline:
            assert set(a.copy().keys()) in states
            assert set(simlsh.Index.from_bytes(a.to_bytes()).keys()) in states
            assert set(a.keys()) in states
            a.pairs()
            a.memory()

    run_threads([writer] + [reader] * 3, SECONDS + 300)


def test_signatures_merged_both_ways_never_deadlock(corpus):
    """a.merge(b) in one thread and b.merge(a) in another take both locks;
    a global order keeps them from waiting for each other."""
    p, _, sigs = corpus
    x, y = sigs[0].copy(), sigs[1].copy()
    want = sigs[0].copy().merge(sigs[1])
    deadline = time.monotonic() + SECONDS / 4

    def one(s, o):
        def run():
            while time.monotonic() < deadline:
                s.merge(o)
                s.jaccard(o)
                pickle.loads(pickle.dumps(s))
        return run

    def reader():
        ix = simlsh.Index(p)
        while time.monotonic() < deadline:
            ix.insert(0, x)
            ix.query(y)
            ix.remove(0)

    run_threads([one(x, y), one(y, x), reader, reader], SECONDS + 120)
    # merge is a union: both reach the union of the two documents
    assert x == want and y == want


def test_signature_changed_while_queried_and_inserted(corpus):
    """Queries and inserts read a Signature without its lock: its writes are
    copy-on-write, so a reader sees one whole state of it, never a write
    half done nor a freed C signature (ASan would report one)."""
    p, _, sigs = corpus
    ix = simlsh.Index(p)
    for j in range(40):
        ix.insert(j, sigs[j])
    s = sigs[3].copy()
    states = [sigs[3].copy(), sigs[5].copy().merge(sigs[3]), sigs[5].copy()]
    answers = [ix.query(v) for v in states]
    deadline = time.monotonic() + SECONDS / 4

    def writer():
        while time.monotonic() < deadline:
            s.merge(sigs[5])  # state 1
            s.clear().merge(sigs[5])  # empty, then state 2
            s.clear().update_features([])  # empty
            s.merge(sigs[3])  # state 0

    def reader():
        own = simlsh.Index(p)
        while time.monotonic() < deadline:
            got = ix.query(s)
            assert got == [] or got in answers, got
            for rows in ix.query_batch([s, s]):
                assert rows == [] or rows in answers, rows
            try:
                own.insert(0, s)
            except simlsh.EmptyInput:
                continue
            v = own.signature(0).values
            assert any(np.array_equal(v, w.values) for w in states)
            own.remove(0)

    run_threads([writer, reader, reader], SECONDS + 120)


def test_params_changed_while_signing(corpus):
    """One thread changes a Params while others sign and index with it:
    every signature is made with one whole state of the params."""
    p = simlsh.Params(unit="word", k=2, num_perm=64)
    text = "the quick brown fox jumps over the lazy dog again and again"
    by_seed = {s: simlsh.Signature(p.replace(seed=s), text).values for s in (1, 2)}
    deadline = time.monotonic() + SECONDS / 4

    def setter():
        i = 0
        while time.monotonic() < deadline:
            p.set("seed", 1 + i % 2)
            i += 1

    def signer():
        while time.monotonic() < deadline:
            v = simlsh.Signature(p, text).values
            assert any(np.array_equal(v, w) for w in by_seed.values())
            rows = simlsh.sign_batch([text] * 3, p, threads=2)
            assert any(np.array_equal(rows[0], w) for w in by_seed.values())
            repr(p)

    run_threads([setter, signer, signer], SECONDS + 120)


def test_rwlock_rules():
    lock = RWLock()
    with lock.read:
        with lock.read:  # reentrant shared
            pass
        with pytest.raises(RuntimeError):
            lock.acquire_write()  # would wait for itself
    with lock.write:
        with lock.read:  # a writer may read
            with lock.write:
                pass
    # readers share; a writer waits for them and excludes them
    inside, peak, gate = [0], [0], threading.Barrier(3)
    mu = threading.Lock()

    def reader():
        with lock.read:
            with mu:
                inside[0] += 1
                peak[0] = max(peak[0], inside[0])
            gate.wait(timeout=30)  # all three inside at once
            with mu:
                inside[0] -= 1

    run_threads([reader] * 3, 60)
    assert peak[0] == 3
    order = []
    lock.acquire_read()

    def writer():
        with lock.write:
            order.append("write")

    w = threading.Thread(target=writer)
    w.start()
    while not lock._waiting:  # the writer is queued behind the reader
        time.sleep(0.001)
    order.append("read done")
    lock.release_read()
    w.join(30)
    assert order == ["read done", "write"]


def test_query_arrays_from_threads_while_another_writes(corpus):
    """Threads answering batches from one values matrix (strided views,
    with scores) while another thread inserts and removes other keys: the
    index's own documents are always found as a serial run finds them."""
    p, values, sigs = corpus
    n = 200
    ix = simlsh.Index(p)
    ix.insert_batch(list(range(n)), values[:n])
    wide = np.zeros((len(values), 80), np.uint32)
    wide[:, 3:67] = values
    rows = wide[:, 3:67]  # a strided view: read in place
    want = [[k for k in ix.query(s)] for s in sigs]
    deadline = time.monotonic() + SECONDS / 2
    extra = list(range(10000, 10040))

    def writer():
        while time.monotonic() < deadline:
            ix.insert_batch(extra, values[n:n + len(extra)])
            for k in extra[::2]:
                ix.remove(k)
            for k in extra[1::2]:
                ix.remove(k)

    def reader(seed):
        def run():
            rng = random.Random(seed)
            while time.monotonic() < deadline:
                lo = rng.randrange(len(values) - 20)
                off, keys, scores = ix.query_arrays(rows[lo:lo + 20], scores=True)
                assert keys.dtype == np.uint64 and len(scores) == len(keys)
                for q in range(20):
                    got = keys[off[q]:off[q + 1]].tolist()
                    assert [k for k in got if k < n] == want[lo + q]
                    assert all(k < n or k in extra for k in got)
                got = ix.query_batch(values[lo:lo + 5])
                assert [[k for k in g if k < n] for g in got] == want[lo:lo + 5]
        return run

    run_threads([writer] + [reader(s) for s in range(3)], SECONDS + 300)
