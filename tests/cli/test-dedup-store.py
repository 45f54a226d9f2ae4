#!/usr/bin/env python3
"""The saved index of simlsh-dedup (one file, tools/core/dedup-store.c) and
incremental runs, end to end; and the fault suite of issue 18 item 7
through the tool.

Usage: test-dedup-store.py SIMLSH-DEDUP SIMLSH-DEDUP-FAULTS SAMPLE-DIR TESTDATA-DIR CASE
SIMLSH-DEDUP-FAULTS is the same program with the library's test-only file
fault hook set from the environment (tests/cli/fault-hook.c). Each CASE is one
meson test (tests/cli/meson.build); see the functions below. Every random
choice comes from a fixed seed, and no case asserts a time.
"""
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

DEDUP, FAULTS, SAMPLE, TESTDATA, CASE = sys.argv[1:6]
DEDUP, FAULTS = os.path.abspath(DEDUP), os.path.abspath(FAULTS)
SAMPLE = os.path.abspath(SAMPLE)
TESTDATA = os.path.abspath(TESTDATA)


def fail(msg, proc=None):
    if proc is not None:
        sys.stderr.write("--- command: %s\n--- exit %d\n--- stdout:\n%s\n--- stderr:\n%s\n" % (
            " ".join(map(str, proc.args)), proc.returncode,
            proc.stdout.decode(errors="replace") if proc.stdout else "",
            proc.stderr.decode(errors="replace") if proc.stderr else ""))
    sys.exit("FAIL: " + msg)


def check(cond, msg, proc=None):
    if not cond:
        fail(msg, proc)


def run(args, expect=0, prog=None, env=None, cwd=None, stdin=None):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([prog or DEDUP] + [str(a) for a in args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=e, cwd=cwd, input=stdin, timeout=120)
    if expect is not None and p.returncode != expect:
        fail("expected exit %d, got %d" % (expect, p.returncode), p)
    return p


def sample_files():
    out = []
    for root, _, files in os.walk(SAMPLE):
        for f in files:
            out.append(os.path.join(root, f))
    return sorted(out, key=lambda p: p.split("/"))


def index_names(path):
    """The names in the user data of a saved index, decoded by the layout
    of docs/format-index.md ("simlsh-dedup user data")."""
    with open(path, "rb") as f:
        data = f.read()
    at = data.rfind(b"SLDDUP\0\1")
    check(at > 0, "%s: no simlsh-dedup user data" % path)
    np_, reserved = struct.unpack_from("<II", data, at + 8)
    check(reserved == 0, "reserved field")
    pos = at + 16 + 16 * np_
    count, = struct.unpack_from("<Q", data, pos)
    pos += 8
    names = []
    for _ in range(count):
        _, _, flags, ln = struct.unpack_from("<QqBI", data, pos)
        pos += 21
        names.append(data[pos:pos + ln].decode())
        pos += ln
    check(pos == len(data) - 8, "user data runs to the checksum")  # the trailer follows
    return names


def temp_files(d):
    return sorted(n for n in os.listdir(d) if ".simlsh-tmp." in n or n.endswith((".tmp", ".lock"))
                  or ".names" in n)


def summary_has(proc, text):
    return text in proc.stderr.decode()


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def words(rng, n):
    """n random words: texts that share only what they are given to share."""
    return ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(6))
            for _ in range(n)]


# ---------------------------------------------------------------------------
# Incremental runs (issue 10 section 3)


def case_incremental():
    """A name already in the loaded index is skipped (counted, never a
    self-pair); --replace re-signs it (old id removed, new inserted, the
    saved names stay one per document)."""
    files = sample_files()
    with tempfile.TemporaryDirectory() as tmp:
        idx = os.path.join(tmp, "all.idx")
        run(files + ["--save-index", idx, "-q"])
        check(sorted(index_names(idx)) == sorted(files), "saved names")
        check(temp_files(tmp) == [], "one file, nothing beside it: %s" % temp_files(tmp))
        st = os.path.join(tmp, "st.json")
        # the same files again: nothing new, no self-pair, all counted
        p = run(files + ["--index", idx, "--output", "pairs", "--stats", st])
        check(p.stdout == b"", "no pairs when nothing is new", p)
        check(summary_has(p, "%d already indexed" % len(files)), "summary count", p)
        with open(st) as f:
            s = json.load(f)
        check(s["already_indexed"] == len(files) and s["documents"] == 0 and
              s["replaced"] == 0 and s["removed"] == 0, "stats counts: %r" % s)
        # saving it again keeps exactly one entry per document
        run(files + ["--index", idx, "--save-index", idx, "-q"])
        check(sorted(index_names(idx)) == sorted(files), "names after an idempotent save")

        # --replace: a file whose text changed is re-signed
        d = os.path.join(tmp, "d")
        os.mkdir(d)
        a, b = os.path.join(d, "a.txt"), os.path.join(d, "b.txt")
        shutil.copy(os.path.join(SAMPLE, "harbour-log.txt"), a)
        shutil.copy(os.path.join(SAMPLE, "notes-01.txt"), b)
        small = os.path.join(tmp, "small.idx")
        run([a, b, "--save-index", small, "-q"])
        probe = os.path.join(tmp, "probe.txt")
        shutil.copy(os.path.join(SAMPLE, "harbour-log-edited.txt"), probe)
        p = run([probe, "--index", small, "--output", "pairs"])
        check(p.stdout.startswith(a.encode() + b"\t"), "a matches the probe before", p)
        shutil.copy(os.path.join(SAMPLE, "council-minutes.txt"), a)  # a's text changes
        p = run([a, "--index", small, "--output", "pairs"])
        check(p.stdout == b"" and summary_has(p, "1 already indexed"), "skipped, not re-read", p)
        p = run([a, "--index", small, "--replace", "--save-index", small, "--output", "pairs",
                 "--stats", st])
        check(p.stdout == b"", "a replaced document is not its own duplicate", p)
        with open(st) as f:
            s = json.load(f)
        check(s["replaced"] == 1 and s["documents"] == 1, "replace counts: %r" % s)
        check(sorted(index_names(small)) == sorted([a, b]), "one name per document after replace")
        p = run([probe, "--index", small, "--output", "pairs"])
        check(p.stdout == b"", "the old text of a is gone from the index", p)
        p = run([os.path.join(SAMPLE, "archive", "council-minutes.txt"), "--index", small,
                 "--output", "pairs"])
        check(p.stdout.startswith(a.encode() + b"\t"), "the new text of a is indexed", p)
        # removing then replacing in one run keeps ids and names consistent
        p = run([a, "--index", small, "--replace", "--remove", b, "--save-index", small, "-q"])
        check(index_names(small) == [a], "names after remove + replace: %r" % index_names(small))
        # options that need --index
        p = run([a, "--replace"], expect=2)
        p = run([a, "--only-new"], expect=2)
        p = run([a, "--remove", a], expect=2)


def case_replace_threads():
    """--replace re-signs 50,000 documents, more than one insert call holds
    (so, with threads, removals meet a running insert call): -j 1, 2 and 8
    save the same index byte for byte and print the same pairs as the run
    on one thread, which made the removals and inserts one after the other.
    (Issue 31 F2: the main thread removed from the index while the insert
    thread inserted into it, a crash under the default -j.)"""
    rng = random.Random(3131)
    with tempfile.TemporaryDirectory() as tmp:
        lines = [" ".join("w%d" % rng.randrange(5000) for _ in range(8)) for _ in range(45000)]
        lines += [lines[rng.randrange(45000)] for _ in range(5000)]
        rng.shuffle(lines)
        a, b = os.path.join(tmp, "a.lines"), os.path.join(tmp, "b.lines")
        write(a, "\n".join(lines[:25000]) + "\n")
        write(b, "\n".join(lines[25000:]) + "\n")
        first = os.path.join(tmp, "first.idx")
        run(["--lines", a, "--lines", b, "--save-index", first, "-q", "-j", "1"])
        saved, pairs = {}, {}
        for j in (1, 2, 8):
            idx = os.path.join(tmp, "j%d.idx" % j)
            shutil.copy(first, idx)
            st = os.path.join(tmp, "j%d.json" % j)
            p = run(["--lines", a, "--lines", b, "--index", idx, "--save-index", idx, "--replace",
                     "--output", "pairs", "--stats", st, "-j", j], expect=None)
            check(p.returncode == 0, "-j %d: exit %d" % (j, p.returncode), p)
            with open(st) as f:
                s = json.load(f)
            check(s["replaced"] == 50000 and s["documents"] == 50000,
                  "-j %d: replace counts: %r" % (j, s))
            saved[j] = open(idx, "rb").read()
            pairs[j] = p.stdout
        check(pairs[1].count(b"\n") >= 4000, "the copies pair up: %d pairs"
              % pairs[1].count(b"\n"))
        names = index_names(os.path.join(tmp, "j1.idx"))
        check(len(names) == 50000 and len(set(names)) == 50000, "one name per line")
        for j in (2, 8):
            check(saved[j] == saved[1], "-j %d saved another index than -j 1" % j)
            check(pairs[j] == pairs[1], "-j %d printed other pairs than -j 1" % j)


def case_remove():
    """--remove NAME and --remove-from FILE take documents out of the index
    by name; the saved file renumbers the rest (no unused ids)."""
    files = sample_files()
    with tempfile.TemporaryDirectory() as tmp:
        idx = os.path.join(tmp, "all.idx")
        run(files + ["--save-index", idx, "-q"])
        victim = os.path.join(SAMPLE, "harbour-log.txt")
        probe = os.path.join(SAMPLE, "harbour-log-edited.txt")
        p = run(["--index", idx, "--remove", victim, "--save-index", idx])  # no input needed
        check(summary_has(p, "1 removed"), "removed count", p)
        names = index_names(idx)
        check(victim not in names and len(names) == len(files) - 1, "victim gone from names")
        check(sorted(names) == sorted(n for n in files if n != victim), "others kept in order")
        # the probe no longer pairs with the victim, but still with the typo copy
        tmpprobe = os.path.join(tmp, "probe.txt")
        shutil.copy(probe, tmpprobe)
        p = run([tmpprobe, "--index", idx, "--output", "pairs"])
        got = {l.split("\t")[0] for l in p.stdout.decode().splitlines()}
        check(victim not in got and probe in got, "pairs after removal: %r" % got, p)
        # --remove-from: a keep/drop list given back; escaped names; unknown names warn
        lst = os.path.join(tmp, "list")
        gone = [os.path.join(SAMPLE, "notes-01.txt"), os.path.join(SAMPLE, "notes-02.txt")]
        write(lst, "\n".join(gone) + "\n\n" + os.path.join(tmp, "not\\tthere") + "\n")
        p = run(["--index", idx, "--remove-from", lst, "--save-index", idx])
        check(summary_has(p, "2 removed"), "removed from a list", p)
        check("not\\tthere: not in" in p.stderr.decode(), "unknown name warned", p)
        check(not set(gone) & set(index_names(idx)), "listed names gone")
        p = run(["--index", idx, "--remove-from", "-", "-q"], stdin=gone[0].encode() + b"\n")
        p = run(["--index", idx, "--remove-from", os.path.join(tmp, "missing")], expect=3)
        # a removed name given as input is indexed anew
        p = run([gone[0], "--index", idx, "--save-index", idx, "--stats",
                 os.path.join(tmp, "s.json"), "-q"])
        check(gone[0] in index_names(idx), "re-added after removal")


def case_only_new():
    """--only-new: only pairs with a new document link documents. Old A and
    old B are similar, new N is similar to A but not to B: by default the
    cluster is {A, B, N} (B joins through A), with --only-new it is {A, N};
    new x new pairs count too."""
    rng = random.Random(10)
    base = words(rng, 400)
    # replacing a fraction f of the words: J(A,B) ~ (1-f)/(1+f) = 0.79 and
    # J(N,B) ~ (1-2f)/(1+2f) = 0.61 for f = 0.12, around a threshold of 0.7
    k = len(base) * 12 // 100
    a = base
    b = base[:-k] + words(rng, k)           # differs from A at the end
    n = words(rng, k) + base[k:]            # differs from A at the start
    m = n[:200] + words(rng, 10) + n[210:]  # a second new one, close to N
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for name, w in (("A", a), ("B", b), ("N", n), ("M", m)):
            paths[name] = os.path.join(tmp, name)
            write(paths[name], " ".join(w))
        idx = os.path.join(tmp, "ab.idx")
        th = ["--threshold", "0.7"]
        p = run([paths["A"], paths["B"], "--save-index", idx, "--output", "pairs"] + th)
        check(len(p.stdout.splitlines()) == 1, "A ~ B in the index", p)
        p = run([paths["N"], "--index", idx, "--output", "pairs"] + th)
        got = {tuple(l.split("\t")[:2]) for l in p.stdout.decode().splitlines()}
        check(got == {(paths["A"], paths["N"])}, "N ~ A only: %r" % got, p)
        # stars (the default grouping) never link two old documents: both
        # are kept already, so the cluster is {A, N} with or without --only-new
        p = run([paths["N"], "--index", idx] + th)
        check(sorted(p.stdout.decode().split()) == sorted([paths["A"], paths["N"]]),
              "default (star): B does not join through A", p)
        comp = ["--cluster", "components"]
        p = run([paths["N"], "--index", idx] + th + comp)
        check(sorted(p.stdout.decode().split()) == sorted([paths["A"], paths["B"], paths["N"]]),
              "components: B joins through A", p)
        p = run([paths["N"], "--index", idx, "--only-new"] + th + comp)
        check(sorted(p.stdout.decode().split()) == sorted([paths["A"], paths["N"]]),
              "--only-new: no old x old link", p)
        p = run([paths["N"], paths["M"], "--index", idx, "--only-new"] + th + comp)
        check(sorted(p.stdout.decode().split()) == sorted([paths["A"], paths["N"], paths["M"]]),
              "--only-new: new x new pairs link too", p)
        p = run([paths["N"], paths["M"], "--index", idx, "--only-new", "--output", "pairs"] + th)
        got = {tuple(l.split("\t")[:2]) for l in p.stdout.decode().splitlines()}
        check(all(paths["N"] in g or paths["M"] in g for g in got) and len(got) >= 2,
              "pairs all involve a new document: %r" % got, p)
        p = run([paths["N"], paths["M"], "--index", idx, "--only-new", "--output", "drop"] + th
                + comp)
        check(sorted(p.stdout.decode().split()) == sorted([paths["N"], paths["M"]]),
              "components: both new ones dropped (A is kept)", p)
        # a star drops only what is near its kept centre A: M is near N only
        p = run([paths["N"], paths["M"], "--index", idx, "--only-new", "--output", "drop"] + th)
        check(p.stdout.decode().split() == [paths["N"]], "star: only N dropped", p)


def case_legacy():
    """An index saved by simlsh-dedup 0.2 (index + FILE.names, kept in
    tests/cli/testdata) still loads, with its names; an edited or foreign names
    file is refused; a save writes one file and never a .names."""
    with tempfile.TemporaryDirectory() as tmp:
        old = os.path.join(tmp, "old.idx")
        shutil.copy(os.path.join(TESTDATA, "legacy-0.2.idx"), old)
        shutil.copy(os.path.join(TESTDATA, "legacy-0.2.idx.names"), old + ".names")
        probe = os.path.join(tmp, "probe.txt")
        shutil.copy(os.path.join(SAMPLE, "harbour-log-edited.txt"), probe)
        # its names are relative to data/sample
        p = run([probe, "--index", old, "--output", "pairs"], cwd=SAMPLE)
        check(p.stdout.decode().startswith("harbour-log.txt\t" + probe), "0.2 names load", p)
        p = run(["notes-01.txt", "--index", old], cwd=SAMPLE)
        check(summary_has(p, "1 already indexed"), "0.2 names known", p)
        names_before = open(old + ".names", "rb").read()
        run([probe, "--index", old, "--save-index", old, "-q"], cwd=SAMPLE)
        check(open(old + ".names", "rb").read() == names_before, ".names never written")
        check(index_names(old) == ["notes-01.txt", "harbour-log.txt", "field-report.txt",
                                   "council-minutes.txt", probe], "names moved inside")
        os.remove(old + ".names")  # no longer read
        probe2 = os.path.join(tmp, "probe2.txt")
        shutil.copy(probe, probe2)
        p = run([probe, probe2, "--index", old, "--output", "pairs"], cwd=SAMPLE)
        got = {tuple(l.split("\t")[:2]) for l in p.stdout.decode().splitlines()}
        check(got == {("harbour-log.txt", probe2), (probe, probe2)} and
              summary_has(p, "1 already indexed"), "one file loads: %r" % got, p)
        # an edited names file: its checksum refuses it
        shutil.copy(os.path.join(TESTDATA, "legacy-0.2.idx"), old)
        text = names_before.replace(b"field-report.txt", b"field-report.txX")
        open(old + ".names", "wb").write(text)
        p = run([probe, "--index", old], expect=3, cwd=SAMPLE)
        check(b"checksum mismatch" in p.stderr and p.stdout == b"", "edited names refused", p)
        # a one-file index beside a stale .names: the user data wins
        run(["notes-02.txt", "--save-index", old, "-q"], cwd=SAMPLE)
        p = run(["notes-02.txt", "--index", old], cwd=SAMPLE)
        check(summary_has(p, "1 already indexed"), "user data read, .names ignored", p)
        # a library index without user data and without names is refused
        bare = os.path.join(tmp, "bare.idx")
        shutil.copy(os.path.join(TESTDATA, "legacy-0.2.idx"), bare)
        p = run([probe, "--index", bare], expect=3)
        check(b"has no names" in p.stderr, "bare index refused", p)


# ---------------------------------------------------------------------------
# Faults through the tool (issue 18 item 7)


class Fixture:
    """An old index of part of the sample, the answer it gives to a probe,
    and the bytes a save of the whole sample gives."""

    def __init__(self, tmp):
        self.tmp = tmp
        files = sample_files()
        self.old_inputs = files[:len(files) // 2]
        self.new_inputs = files
        self.idx = os.path.join(tmp, "x.idx")
        run(self.old_inputs + ["--save-index", self.idx, "-q"])
        self.old = open(self.idx, "rb").read()
        other = os.path.join(tmp, "new-ref.idx")
        run(self.new_inputs + ["--save-index", other, "-q"])
        self.new = open(other, "rb").read()
        os.remove(other)
        check(self.new != self.old, "fixture: the two saves differ")
        self.probe = os.path.join(tmp, "probe.txt")
        with open(self.probe, "wb") as f:  # the text of a document only the new index has
            f.write(open(files[-1], "rb").read())
        self.answer_old = self.answer()
        shutil.copy(self.idx, self.idx + ".save")
        with open(self.idx, "wb") as f:
            f.write(self.new)
        self.answer_new = self.answer()
        self.restore()
        check(self.answer_old != self.answer_new, "fixture: the answers differ")

    def answer(self):
        p = run([self.probe, "--index", self.idx, "--output", "pairs", "-j", "1"])
        return p.stdout

    def restore(self):
        shutil.copy(self.idx + ".save", self.idx)

    def state(self, what, proc=None):
        """The file is the old index or the complete new one and answers as
        that one; returns which."""
        data = open(self.idx, "rb").read()
        check(data in (self.old, self.new), "%s: the index is neither the old nor the new "
              "one (%d bytes)" % (what, len(data)), proc)
        got = self.answer()
        want = self.answer_old if data == self.old else self.answer_new
        check(got == want, "%s: the index answers differently" % what, proc)
        return "old" if data == self.old else "new"

    def leftovers(self):
        return [n for n in os.listdir(self.tmp) if ".simlsh-tmp." in n]


def case_save_kill():
    """30 runs of simlsh-dedup --save-index killed (SIGKILL) at random
    moments of the save (the hooked build traces and sleeps before each
    system call of the save: the kill comes at a random one of them, a
    random part of its sleep later): the index is
    the old one byte for byte, or the complete new one once the rename is
    done, and answers as that one; no temporary file remains (with
    O_TMPFILE none is ever named; without it, the named one of a killed run
    is removed by the next save)."""
    rng = random.Random(18)
    with tempfile.TemporaryDirectory() as tmp:
        fx = Fixture(tmp)
        env = {"SIMLSH_FAULT_DELAY_US": "3000", "SIMLSH_FAULT_TRACE": "1"}
        args = [FAULTS] + fx.new_inputs + ["--save-index", fx.idx, "-q", "-o", "-", "-j", "1"]

        def start(named):
            e = dict(os.environ, **env)
            if named:
                e["SIMLSH_FAULT_NO_TMPFILE"] = "1"
            proc = subprocess.Popen(args, env=e, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE)
            line = proc.stderr.readline()  # the save's first system call is about to run
            check(line.startswith(b"op: "), "no trace from the save: %r" % line)
            return proc, time.monotonic()

        proc, t0 = start(False)
        ops = 1 + len(proc.stderr.read().splitlines())
        proc.wait(timeout=60)
        span = time.monotonic() - t0
        check(proc.returncode == 0, "an unkilled run saves")
        fx.restore()
        seen = {"old": 0, "new": 0}
        for i in range(30):
            named = i % 2 == 1
            proc, t0 = start(named)
            # a random call of the save, then a random moment of its sleep
            # (or of the rest of the run, for the last)
            target = rng.randrange(1, ops + 1)
            reached = 1
            while reached < target and proc.stderr.readline():
                reached += 1
            time.sleep(rng.uniform(0, 1.0) * span / ops)
            proc.send_signal(signal.SIGKILL)
            reached += len(proc.stderr.read().splitlines())
            proc.wait(timeout=60)
            check(proc.returncode == -signal.SIGKILL or reached == ops,
                  "kill %d: exit %d" % (i, proc.returncode))
            seen[fx.state("kill %d (at call %d of %d)" % (i, reached, ops))] += 1
            left = fx.leftovers()
            if not named:
                # anonymous until the link; link and rename are two calls
                check(len(left) <= 1, "kill %d: temporary files %s" % (i, left))
            # the next save removes what a killed one left
            run(fx.old_inputs + ["--save-index", fx.idx, "-q"])
            check(fx.leftovers() == [], "kill %d: %s left after the next save"
                  % (i, fx.leftovers()))
            check(open(fx.idx, "rb").read() == fx.old, "kill %d: the restoring save" % i)
        # where the kills landed depends on the machine's load, so it is
        # reported, not asserted
        sys.stderr.write("kills: %r\n" % seen)


def case_save_enospc():
    """ENOSPC at the k-th system call of the tool's save, for every k (the
    library's own fault hook, as tests/test-save-fault), with O_TMPFILE and
    with named temporary files, saving a new index and extending a loaded
    one in place: exit 4 with the system's message, the index is the old
    one (or, when only the final directory sync failed, the complete new
    one) and answers as such, and no temporary file is left."""
    with tempfile.TemporaryDirectory() as tmp:
        fx = Fixture(tmp)
        extra = [os.path.join(SAMPLE, n) for n in ("notes-44.txt",)]
        variants = [
            ("new", fx.new_inputs + ["--save-index", fx.idx], {}),
            ("new, named", fx.new_inputs + ["--save-index", fx.idx],
             {"SIMLSH_FAULT_NO_TMPFILE": "1"}),
            ("extend", extra + ["--index", fx.idx, "--save-index", fx.idx], {}),
        ]
        for label, args, env in variants:
            k = 0
            while True:
                k += 1
                check(k < 10000, "%s: no end to the fault points" % label)
                fx.restore()
                e = dict(env, SIMLSH_FAULT_AT=str(k))
                p = run(args + ["-q", "-o", "-"], expect=None, prog=FAULTS, env=e)
                fault = [l for l in p.stderr.decode().splitlines() if l.startswith("fault: ")]
                if not fault:
                    check(p.returncode == 0, "%s: k=%d without a fault fails" % (label, k), p)
                    break
                check(p.returncode == 4, "%s: k=%d (%s): exit %d" % (label, k, fault[0],
                                                                       p.returncode), p)
                check(b"cannot save the index: No space left on device" in p.stderr,
                      "%s: k=%d: the cause" % (label, k), p)
                if label != "extend":
                    which = fx.state("%s k=%d" % (label, k), p)
                    check(which == "old" or fault[0] == "fault: dirsync",
                          "%s: k=%d (%s) replaced the index" % (label, k, fault[0]), p)
                else:
                    data = open(fx.idx, "rb").read()
                    check(data == fx.old or fault[0] == "fault: dirsync",
                          "extend: k=%d (%s) changed the index" % (k, fault[0]), p)
                    fx.answer()  # loads
                check(fx.leftovers() == [], "%s: k=%d left %s" % (label, k, fx.leftovers()), p)
            check(k > 5, "%s: only %d fault points" % (label, k))
            sys.stderr.write("%s: %d fault points\n" % (label, k - 1))


def case_save_concurrent():
    """25 runs saving different document sets to one path at the same time:
    every run succeeds, and the file is complete from one of them (its names
    are exactly one run's), loads and answers; no temporary file is left."""
    files = sample_files()
    with tempfile.TemporaryDirectory() as tmp:
        sets = [files[i::3] for i in range(3)]
        idx = os.path.join(tmp, "shared.idx")
        procs = [subprocess.Popen([DEDUP] + sets[i % 3] + ["--save-index", idx, "-q", "-j", "1"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                 for i in range(25)]
        for p in procs:
            _, err = p.communicate(timeout=120)
            check(p.returncode == 0, "concurrent save exit %d: %s" % (p.returncode, err))
        names = index_names(idx)
        check(any(names == s for s in sets), "names from no single run: %r" % names)
        p = run([os.path.join(SAMPLE, "notes-01.txt"), "--index", idx, "-q"])
        check(temp_files(tmp) == [], "temporary files left: %s" % temp_files(tmp))


def case_update_concurrent():
    """Runs that --index and --save-index one file at the same time never
    lose each other's documents: the second waits for the first (issue 31
    F6). First an overlap made certain: run A has loaded the index and
    waits on its standard input while run B starts; B says it waits (the
    old tool instead finished and saved, and A's save then dropped B's
    documents). Then 20 pairs of runs started together."""
    rng = random.Random(66)
    with tempfile.TemporaryDirectory() as tmp:
        seed = os.path.join(tmp, "seed.lines")
        write(seed, "seed line\n")
        idx = os.path.join(tmp, "c.idx")

        def lines(n):
            return "".join(" ".join("w%d" % rng.randrange(5000) for _ in range(20)) + "\n"
                           for _ in range(n))

        def fresh():
            run(["--lines", seed, "--save-index", idx, "-q"])

        def common(args):
            return [DEDUP, "--index", idx, "--save-index", idx, "-o", "-", "-j", "1"] + args

        fresh()
        a_text = lines(6000).encode()
        b = os.path.join(tmp, "b.lines")
        write(b, lines(300))
        pa = subprocess.Popen(common(["--lines", "-", "-q"]), stdin=subprocess.PIPE,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        # more than a pipe holds: when this returns, A is reading its input,
        # so it has loaded the index
        pa.stdin.write(a_text[:len(a_text) // 2])
        pa.stdin.flush()
        pb = subprocess.Popen(common(["--lines", b]), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
        first = pb.stderr.readline()  # "waiting ..." now, or the summary at its end
        check(b"waiting for another run" in first,
              "B went ahead while A held the index: %r" % first)
        _, err_a = pa.communicate(a_text[len(a_text) // 2:], timeout=120)
        _, err_b = pb.communicate(timeout=120)
        check(pa.returncode == 0 and pb.returncode == 0,
              "exit %d and %d: %s %s" % (pa.returncode, pb.returncode, err_a, err_b))
        names = index_names(idx)
        check(len(names) == 1 + 6000 + 300 and len(set(names)) == len(names),
              "%d names, not %d" % (len(names), 6301))
        check(sum(n.startswith(b + ":") for n in names) == 300, "B's documents are kept")

        a = os.path.join(tmp, "a.lines")
        write(a, lines(1000))
        write(b, lines(1000))
        for trial in range(20):
            fresh()
            procs = [subprocess.Popen(common(["--lines", f, "-q"]), stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE) for f in (a, b)]
            for p in procs:
                _, err = p.communicate(timeout=120)
                check(p.returncode == 0, "trial %d: exit %d: %s" % (trial, p.returncode, err))
            names = index_names(idx)
            for f in (a, b):
                check(sum(n.startswith(f + ":") for n in names) == 1000,
                      "trial %d: the documents of %s are lost" % (trial, f))
            check(len(names) == 2001, "trial %d: %d names" % (trial, len(names)))
        check(temp_files(tmp) == [], "files left: %s" % temp_files(tmp))


def case_corrupt_index():
    """Damaged index files (random bit flips anywhere, truncations, bytes
    appended, flips inside the names) are refused with exit status 3 before
    any result is printed."""
    rng = random.Random(1818)
    with tempfile.TemporaryDirectory() as tmp:
        idx = os.path.join(tmp, "good.idx")
        run(sample_files() + ["--save-index", idx, "-q"])
        good = open(idx, "rb").read()
        ud = good.rfind(b"SLDDUP\0\1")
        check(ud > 0, "user data present")
        probe = os.path.join(tmp, "probe.txt")  # a copy: a new name, an indexed text
        shutil.copy(os.path.join(SAMPLE, "harbour-log.txt"), probe)
        bad = os.path.join(tmp, "bad.idx")
        cases = []
        for _ in range(80):
            b = bytearray(good)
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
            cases.append(("flip at %d" % i, bytes(b)))
        for _ in range(30):
            b = bytearray(good)
            i = rng.randrange(ud, len(b) - 8)
            b[i] ^= rng.randrange(1, 256)
            cases.append(("names byte %d" % i, bytes(b)))
        for _ in range(30):
            n = rng.randrange(len(good))
            cases.append(("truncated to %d" % n, good[:n]))
        cases += [("empty", b""), ("last byte cut", good[:-1]), ("byte appended", good + b"\0")]
        for what, data in cases:
            with open(bad, "wb") as f:
                f.write(data)
            p = run([probe, "--index", bad, "--output", "pairs"], expect=None)
            check(p.returncode == 3, "%s: exit %d" % (what, p.returncode), p)
            check(p.stdout == b"", "%s: printed results" % what, p)
        with open(bad, "wb") as f:
            f.write(good)
        p = run([probe, "--index", bad, "--output", "pairs"])
        check(p.stdout != b"", "the intact file answers")


def case_output_enospc():
    """ENOSPC at the k-th system call of the tool's output files (-o and
    --skipped, replaced by the library's atomic writer, lib/util/atomic-file.c,
    whose fault hook the faults build has), for every k: exit 4 with the
    system's message; each output is its old bytes or its complete new ones,
    both old when the fault comes before the first rename (outputs are all
    synced before any is renamed); no temporary file is left."""
    with tempfile.TemporaryDirectory() as tmp:
        empty = os.path.join(tmp, "empty.txt")
        open(empty, "wb").close()
        out, skipped = os.path.join(tmp, "out.tsv"), os.path.join(tmp, "skipped.tsv")
        args = sample_files() + [empty, "-o", out, "--skipped", skipped, "-q", "-j", "1"]
        run(args)
        new = {q: open(q, "rb").read() for q in (out, skipped)}
        old = {out: b"old output\n", skipped: b"old list\n"}
        check(all(new[q] not in (b"", old[q]) for q in old), "fixture: new outputs differ")
        k = 0
        while True:
            k += 1
            check(k < 1000, "no end to the fault points")
            for q, data in old.items():
                with open(q, "wb") as f:
                    f.write(data)
            p = run(args, expect=None, prog=FAULTS, env={"SIMLSH_FAULT_AT": str(k)})
            fault = [l for l in p.stderr.decode().splitlines() if l.startswith("fault: ")]
            got = {q: open(q, "rb").read() for q in old}
            left = [n for n in os.listdir(tmp) if ".simlsh-" in n]
            check(left == [], "k=%d: left %s" % (k, left), p)
            if not fault:
                check(p.returncode == 0, "k=%d without a fault fails" % k, p)
                check(got == new, "k=%d without a fault: outputs" % k, p)
                break
            check(p.returncode == 4, "k=%d (%s): exit %d" % (k, fault[0], p.returncode), p)
            check(b": No space left on device" in p.stderr, "k=%d: the cause" % k, p)
            for q in old:
                check(got[q] in (old[q], new[q]), "k=%d (%s): %s is neither the old nor the "
                      "new output" % (k, fault[0], q), p)
            if fault[0] in ("fault: open", "fault: fsync"):
                check(got == old, "k=%d (%s): an output was replaced" % (k, fault[0]), p)
        # per output: the directory, the temporary file, its fsync, the
        # rename and the directory's sync
        check(k == 11, "%d fault points, not 10" % (k - 1))


CASES = {name[5:].replace("_", "-"): fn for name, fn in globals().items()
         if name.startswith("case_")}
if CASE not in CASES:
    sys.exit("unknown case %s; one of %s" % (CASE, " ".join(sorted(CASES))))
CASES[CASE]()
print("ok", CASE)
