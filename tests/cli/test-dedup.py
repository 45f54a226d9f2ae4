#!/usr/bin/env python3
"""End-to-end tests of simlsh-dedup on the bundled corpus (data/sample).

Usage: test-dedup.py SIMLSH-DEDUP SAMPLE-DIR CASE [FEATURES]
Each CASE is one meson test (tests/cli/meson.build); see the functions below.
FEATURES is a comma list of json|no-json, zlib|no-zlib, zstd|no-zstd (what
the program was built with; default: all). no-json: --jsonl must be
refused, and the jsonl cases check that and report SKIP (exit 77); no-zlib
and no-zstd: compressed input must be skipped with the reason.
What the corpus plants is described in data/README.md.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

DEDUP, SAMPLE, CASE = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
FEATURES = set((sys.argv[4] if len(sys.argv) > 4 else "json,zlib,zstd").split(","))
JSON, ZLIB, ZSTD = "json" in FEATURES, "zlib" in FEATURES, "zstd" in FEATURES
SKIP = 77  # meson's exit status for a skipped test

# The clusters data/sample must give with the defaults (data/README.md).
EXPECTED = {
    frozenset({"harbour-log.txt", "harbour-log-edited.txt", "harbour-log-typos.txt"}),
    frozenset({"council-minutes.txt", "archive/council-minutes.txt",
               "archive/council-minutes-backup.txt"}),
    frozenset({"release-plan.txt", "release-plan-reformatted.txt"}),
    frozenset({"field-report.txt", "field-report-extended.txt"}),
}
DUPLICATES = sum(len(c) - 1 for c in EXPECTED)


def fail(msg, proc=None):
    if proc is not None:
        sys.stderr.write("--- command: %s\n--- exit %d\n--- stdout:\n%s\n--- stderr:\n%s\n" % (
            " ".join(map(os.fsdecode, proc.args)), proc.returncode, proc.stdout.decode(errors="replace"),
            proc.stderr.decode(errors="replace")))
    sys.exit("FAIL: " + msg)


def run(args, expect=0, stdin=None):
    proc = subprocess.run([DEDUP] + [a if isinstance(a, bytes) else str(a) for a in args],
                          input=stdin,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    if expect is not None and proc.returncode != expect:
        fail("expected exit %d, got %d" % (expect, proc.returncode), proc)
    return proc


def check(cond, msg, proc=None):
    if not cond:
        fail(msg, proc)


def refuses_jsonl(args, stdin=None):
    """Without jansson, --jsonl is a usage error (exit 2) that says why and
    comes before anything is read or written (docs/cli.md)."""
    p = run(args, expect=2, stdin=stdin)
    check(p.stdout == b"", "--jsonl refused but wrote output", p)
    check(p.stderr == b"simlsh-dedup: --jsonl: simlsh-dedup was built without JSON support "
          b"(libjansson)\n", "--jsonl refusal message", p)


def sample_files():
    out = []
    for root, dirs, files in os.walk(SAMPLE):
        for f in files:
            out.append(os.path.relpath(os.path.join(root, f), SAMPLE))
    return sorted(out, key=lambda p: p.split("/"))  # simlsh-dedup's walk order


def rel(name):
    return os.path.relpath(name, SAMPLE) if name.startswith("/") else name


def tsv_clusters(proc, mapper=rel):
    lines = proc.stdout.decode().splitlines()
    return [frozenset(mapper(n) for n in line.split("\t")) for line in lines]


def read(path):
    with open(os.path.join(SAMPLE, path), "rb") as f:
        return f.read()


def shingles(text, k=5):
    t = re.sub(r"\s+", " ", text.lower()).strip()
    return {t[i:i + k] for i in range(len(t) - k + 1)} if len(t) >= k else {t}


def jaccard(a, b):
    sa, sb = shingles(a), shingles(b)
    return len(sa & sb) / len(sa | sb)


def summary_count(proc, what):
    stem = what[:-1] if what.endswith("s") else what  # "1 document", "2 documents"
    m = re.search(r"(\d+) %s" % stem, proc.stderr.decode())
    check(m is not None, "no '%s' in the summary" % what, proc)
    return int(m.group(1))


# ---------------------------------------------------------------------------


def case_sample():
    """The quick start: the planted clusters and nothing else."""
    p = run([SAMPLE, "-j", "2"])
    got = tsv_clusters(p)
    check(len(got) == len(set(got)), "a cluster printed twice", p)
    check(set(got) == EXPECTED, "clusters differ: %s" % sorted(map(sorted, got)), p)
    check(summary_count(p, "documents") == len(sample_files()), "document count", p)
    check(summary_count(p, "clusters") == len(EXPECTED), "cluster count", p)
    check(summary_count(p, "duplicates") == DUPLICATES, "duplicate count", p)
    check(summary_count(p, "skipped") == 0, "skipped count", p)
    # Deterministic order: clusters by their first document in input order.
    order = sample_files()
    firsts = [min(order.index(n) for n in c) for c in got]
    check(firsts == sorted(firsts), "clusters not in input order", p)
    q = run([SAMPLE, "--quiet"])
    check(q.stderr == b"", "--quiet printed something", q)
    check(q.stdout == p.stdout, "output differs between runs", q)


def case_formats():
    """Every --output mode in both --format values, and -o FILE."""
    files = sample_files()
    c_tsv = run([SAMPLE, "--output", "clusters"])
    c_json = run([SAMPLE, "--output", "clusters", "--format", "jsonl"])
    clusters = []
    for line in c_json.stdout.decode().splitlines():
        obj = json.loads(line)
        check(obj["size"] == len(obj["ids"]), "size field", c_json)
        clusters.append(frozenset(rel(n) for n in obj["ids"]))
    check(set(clusters) == EXPECTED, "jsonl clusters", c_json)
    check(clusters == tsv_clusters(c_tsv), "tsv and jsonl clusters differ", c_json)

    p_tsv = run([SAMPLE, "--output", "pairs"])
    p_json = run([SAMPLE, "--output", "pairs", "--format", "jsonl"])
    pairs_t = []
    for line in p_tsv.stdout.decode().splitlines():
        a, b, s = line.split("\t")
        pairs_t.append((rel(a), rel(b), float(s)))
    pairs_j = [(rel(o["a"]), rel(o["b"]), o["similarity"])
               for o in map(json.loads, p_json.stdout.decode().splitlines())]
    check(pairs_t == pairs_j, "tsv and jsonl pairs differ", p_json)
    for a, b, s in pairs_t:
        check(any({a, b} <= c for c in EXPECTED), "unexpected pair %s %s" % (a, b), p_tsv)
        check(0.8 <= s <= 1.0, "similarity %s below the threshold" % s, p_tsv)
        check(files.index(a) < files.index(b), "pair not in input order", p_tsv)
    for c in EXPECTED:
        if len(c) == 2:
            check(tuple(sorted(c, key=files.index)) in {(a, b) for a, b, _ in pairs_t},
                  "missing pair %s" % sorted(c), p_tsv)

    k_tsv = run([SAMPLE, "--output", "keep"])
    k_json = run([SAMPLE, "--output", "keep", "--format", "jsonl"])
    keep = [rel(n) for n in k_tsv.stdout.decode().splitlines()]
    check(keep == [rel(json.loads(l)["id"]) for l in k_json.stdout.decode().splitlines()],
          "tsv and jsonl keep lists differ", k_json)
    dropped = set()
    for c in EXPECTED:
        dropped |= set(sorted(c, key=files.index)[1:])
    check(keep == [f for f in files if f not in dropped], "keep list", k_tsv)

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.tsv")
        p = run([SAMPLE, "-o", out, "--output", "pairs"])
        check(p.stdout == b"", "-o still wrote to stdout", p)
        with open(out, "rb") as f:
            check(f.read() == p_tsv.stdout, "-o FILE differs from stdout", p)
        run([SAMPLE, "-o", os.path.join(tmp, "no", "such", "dir")], expect=4)


def case_verify():
    """--verify none finds at least the planted clusters; exact reports true
    Jaccard similarities (as data/gen-sample.py computes them)."""
    p = run([SAMPLE, "--verify", "none"])
    got = tsv_clusters(p)
    for c in EXPECTED:
        check(any(c <= g for g in got), "verify none lost %s" % sorted(c), p)
    p = run([SAMPLE, "--verify", "exact"])
    check(set(tsv_clusters(p)) == EXPECTED, "verify exact clusters", p)
    p = run([SAMPLE, "--verify", "exact", "--output", "pairs"])
    n = 0
    for line in p.stdout.decode().splitlines():
        a, b, s = line.split("\t")
        want = jaccard(read(rel(a)).decode(), read(rel(b)).decode())
        check(abs(float(s) - want) < 0.002, "exact %s %s: %s, want %.4f" % (a, b, s, want), p)
        n += 1
    check(n == sum(len(c) * (len(c) - 1) // 2 for c in EXPECTED), "exact pair count", p)
    for scheme in ("oph", "classic"):
        for unit, k in (("byte", "5"), ("char", "7"), ("word", "3")):
            p = run([SAMPLE, "--scheme", scheme, "--unit", unit, "-k", k])
            got = set(tsv_clusters(p))
            check(got == EXPECTED, "%s %s-%s clusters" % (scheme, unit, k), p)


def flat(path):
    return re.sub(rb"\s+", b" ", read(path)).strip()


def case_lines():
    """--lines: one document per line, named by line number; blank lines are
    empty documents (reported with FILE:LINE and skipped)."""
    files = sample_files()
    with tempfile.TemporaryDirectory() as tmp:
        lines_path = os.path.join(tmp, "corpus.txt")
        blank_at = 10
        lineno = {}
        with open(lines_path, "wb") as f:
            n = 0
            for name in files:
                n += 1
                if n == blank_at:
                    f.write(b"   \r\n")
                    n += 1
                lineno[name] = n
                f.write(flat(name) + b"\r\n")
        byline = {str(v): k for k, v in lineno.items()}
        p = run(["--lines", lines_path])
        got = tsv_clusters(p, mapper=lambda n: byline[n])
        check(set(got) == EXPECTED, "lines clusters", p)
        err = p.stderr.decode()
        check("%s:%d: empty document" % (lines_path, blank_at) in err, "blank line message", p)
        check(summary_count(p, "skipped") == 1, "skipped count", p)
        check(summary_count(p, "documents") == len(files), "document count", p)
        # Several inputs: line documents are named FILE:LINE.
        p = run(["--lines", lines_path, os.path.join(SAMPLE, "harbour-log.txt")])
        names = set()
        for c in tsv_clusters(p, mapper=lambda n: n):
            names |= c
        check("%s:%d" % (lines_path, lineno["harbour-log.txt"]) in names, "FILE:N names", p)
        check(os.path.join(SAMPLE, "harbour-log.txt") in names, "file name", p)
        # No newline at the end of the file: the last line still counts.
        last = os.path.join(tmp, "last.txt")
        with open(last, "wb") as f:
            f.write(flat("field-report.txt") + b"\n" + flat("field-report.txt"))
        p = run(["--lines", last])
        check(p.stdout == b"1\t2\n", "last line without newline", p)


def write_jsonl(path, files, bad=True, id_field="id", text_field="text"):
    """The sample as JSONL, with bad lines mixed in; returns {line: why}."""
    bad_lines = [
        (b'{"id": "broken", "text": ', "invalid JSON"),
        (b'{"id": "no-text"}', 'missing field "text"'),
        (b'{"text": "a document without an id field at all"}', 'missing field "id"'),
        (b'{"id": [1], "text": "an id that is a list"}', "not a string or an integer"),
        (b'{"id": "numeric-text", "text": 42}', 'field "text" is not a string'),
        (b'[1, 2, 3]', "not an object"),
        (b'{"id": "empty", "text": ""}', "empty document"),
        (b'{"id": "latin1", "text": "caf\xe9"}', "invalid JSON"),
    ]
    where = {}
    n = 0
    with open(path, "wb") as f:
        for i, name in enumerate(files):
            if bad and i % 6 == 3 and bad_lines:
                line, why = bad_lines.pop(0)
                n += 1
                where[n] = why
                f.write(line + b"\n")
            if bad and i == 20:
                n += 1
                f.write(b"\n")  # blank lines are ignored, not documents
            n += 1
            obj = {id_field: name, text_field: read(name).decode()}
            f.write(json.dumps(obj).encode() + b"\n")
        n += 1
        f.write(json.dumps({id_field: 7, text_field: "an integer id is fine too"}).encode()
                + b"\n")
    check(not bad or not bad_lines, "test corpus too small for the bad lines")
    return where


def case_jsonl():
    """--jsonl with bad lines: each is reported as FILE:LINE and skipped;
    --strict stops at the first with exit 3 and no output."""
    files = sample_files()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "corpus.jsonl")
        where = write_jsonl(path, files)
        if not JSON:
            out = os.path.join(tmp, "out")
            refuses_jsonl([SAMPLE, "--jsonl", path, "-o", out])
            check(not os.path.exists(out), "-o file created although --jsonl was refused")
            print("SKIP: simlsh-dedup was built without JSON support; --jsonl is refused")
            sys.exit(SKIP)
        p = run(["--jsonl", path])
        check(set(tsv_clusters(p)) == EXPECTED, "jsonl clusters", p)
        err = p.stderr.decode()
        for line, why in where.items():
            check(re.search(r"%s:%d: .*%s" % (re.escape(path), line, re.escape(why)), err),
                  "no message for line %d (%s)" % (line, why), p)
        check(summary_count(p, "skipped") == len(where), "skipped count", p)
        check(summary_count(p, "documents") == len(files) + 1, "document count", p)
        k = run(["--jsonl", path, "--output", "keep"])
        check("7" in k.stdout.decode().splitlines(), "integer id", k)

        p = run(["--jsonl", path, "--strict"], expect=3)
        check(p.stdout == b"", "--strict wrote output", p)
        first = min(where)
        check("%s:%d" % (path, first) in p.stderr.decode(), "--strict message", p)

        other = os.path.join(tmp, "fields.jsonl")
        write_jsonl(other, files, bad=False, id_field="name", text_field="body")
        p = run(["--jsonl", other, "--id-field", "name", "--text-field", "body"])
        check(set(tsv_clusters(p)) == EXPECTED, "custom field names", p)
        p = run(["--jsonl", other], expect=5)  # nothing could be read
        check(summary_count(p, "skipped") == len(files) + 1, "default fields missing", p)


def case_stdin():
    """- reads standard input as one document; --lines - and --jsonl - as lines."""
    doc = read("harbour-log.txt")
    p = run(["-"], stdin=doc)
    check(p.stdout == b"" and summary_count(p, "documents") == 1, "stdin document", p)
    p = run(["--lines", "-"], stdin=flat("harbour-log.txt") + b"\n" + flat("notes-01.txt")
            + b"\n" + flat("harbour-log-typos.txt") + b"\n")
    check(p.stdout == b"1\t3\n", "--lines -", p)
    lines = b"".join(json.dumps({"id": n, "text": read(n).decode()}).encode() + b"\n"
                     for n in ("release-plan.txt", "notes-02.txt", "release-plan-reformatted.txt"))
    if JSON:
        p = run(["--jsonl", "-", "--output", "pairs"], stdin=lines)
        check(p.stdout.startswith(b"release-plan.txt\trelease-plan-reformatted.txt\t1.0000"),
              "--jsonl -", p)
    else:
        refuses_jsonl(["--jsonl", "-", "--output", "pairs"], stdin=lines)
    p = run(["-", "--lines", "-"], expect=2, stdin=b"x")
    # a document and one from stdin together
    p = run([os.path.join(SAMPLE, "field-report.txt"), "-"], stdin=read("field-report-extended.txt"))
    check(tsv_clusters(p, mapper=lambda n: n) == [
        frozenset({os.path.join(SAMPLE, "field-report.txt"), "-"})], "file and stdin", p)


def case_utf8():
    """Invalid UTF-8 is replaced by default, and skipped with --strict-utf8."""
    with tempfile.TemporaryDirectory() as tmp:
        good = read("harbour-log.txt")
        bad = good[:500] + b"\xff\xfe" + good[500:]
        for name, data in (("a.txt", good), ("b.txt", bad), ("c.txt", read("notes-05.txt"))):
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(data)
        p = run([tmp])
        check(p.stdout.decode() == "%s/a.txt\t%s/b.txt\n" % (tmp, tmp), "replaced", p)
        p = run([tmp, "--strict-utf8"])
        check(p.stdout == b"", "strict-utf8 output", p)
        check(re.search(r"b\.txt: invalid UTF-8 at byte 500", p.stderr.decode()),
              "strict-utf8 message", p)
        check(summary_count(p, "skipped") == 1, "strict-utf8 skipped", p)
        p = run([tmp, "--strict-utf8", "--strict"], expect=3)
        check(p.stdout == b"", "--strict output", p)
        lines = os.path.join(tmp, "lines")
        os.mkdir(lines)
        with open(os.path.join(lines, "l.txt"), "wb") as f:
            f.write(b"valid line number one\nnot valid \xc3\x28 here\n")
        p = run(["--lines", os.path.join(lines, "l.txt"), "--strict-utf8"])
        check(":2: invalid UTF-8" in p.stderr.decode(), "line message", p)


def case_unreadable():
    """Unreadable inputs are reported by name, counted and skipped."""
    with tempfile.TemporaryDirectory() as tmp:
        d = os.path.join(tmp, "corpus")
        os.mkdir(d)
        for name, src in (("a.txt", "council-minutes.txt"), ("b.txt", "council-minutes.txt"),
                          ("e.txt", "notes-09.txt")):
            shutil.copy(os.path.join(SAMPLE, src), os.path.join(d, name))
        os.symlink(os.path.join(tmp, "nowhere"), os.path.join(d, "c.txt"))
        open(os.path.join(d, "empty.txt"), "w").close()
        os.mkfifo(os.path.join(d, "fifo"))
        skipped = 4
        if os.geteuid() != 0:  # root reads anything
            shutil.copy(os.path.join(SAMPLE, "notes-10.txt"), os.path.join(d, "d.txt"))
            os.chmod(os.path.join(d, "d.txt"), 0)
            skipped += 1
        missing = os.path.join(tmp, "missing.txt")
        p = run([d, missing])
        err = p.stderr.decode()
        check("%s/c.txt" % d in err, "dangling link not reported", p)
        check("%s: No such file or directory" % missing in err, "missing path", p)
        check("%s/empty.txt: empty document" % d in err, "empty file", p)
        check("%s/fifo: not a regular file (FIFO)" % d in err, "fifo", p)
        if os.geteuid() != 0:
            check("d.txt: cannot open: Permission denied" in err, "unreadable file", p)
        check(summary_count(p, "skipped") == skipped, "skipped count", p)
        check(p.stdout.decode() == "%s/a.txt\t%s/b.txt\n" % (d, d), "clusters", p)
        run(["--lines", missing], expect=5)  # nothing could be read
        run([d, "--strict"], expect=3)
        if JSON:
            run(["--jsonl", missing, "--strict"], expect=3)
        else:
            refuses_jsonl(["--jsonl", missing, "--strict"])


def case_strict():
    """--strict passes clean input and stops, without output, on a bad one."""
    p = run([SAMPLE, "--strict"])
    check(set(tsv_clusters(p)) == EXPECTED, "strict clean run", p)
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(SAMPLE, os.path.join(tmp, "s"))
        open(os.path.join(tmp, "s", "zz-empty.txt"), "w").close()
        p = run([os.path.join(tmp, "s"), "--strict", "-o", os.path.join(tmp, "out")],
                expect=3)
        check("zz-empty.txt: empty document" in p.stderr.decode(), "strict message", p)


def case_index():
    """--save-index then --index: later runs report what new documents
    duplicate, among themselves and in the saved index."""
    later = {"harbour-log-edited.txt", "harbour-log-typos.txt", "archive/council-minutes.txt",
             "archive/council-minutes-backup.txt", "release-plan-reformatted.txt",
             "field-report-extended.txt", "notes-44.txt"}
    files = sample_files()
    with tempfile.TemporaryDirectory() as tmp:
        first, second = os.path.join(tmp, "first"), os.path.join(tmp, "second")
        for f in files:
            dst = os.path.join(second if f in later else first, f)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy(os.path.join(SAMPLE, f), dst)
        idx = os.path.join(tmp, "corpus.idx")
        strip = lambda n: re.sub(r"^%s/(first|second)/" % re.escape(tmp), "", n)

        p = run([first, "--save-index", idx])
        check(p.stdout == b"", "first half has no duplicates", p)
        # one file: the names and the contract live inside the index
        check(os.path.exists(idx) and not os.path.exists(idx + ".names") and
              not os.path.exists(idx + ".lock"), "one index file", p)
        p = run([second, "--index", idx])
        check(set(tsv_clusters(p, strip)) == EXPECTED, "clusters against the index", p)
        check(summary_count(p, "duplicates") == len(later) - 1, "duplicates", p)
        p = run([second, "--index", idx, "--output", "keep"])
        check([strip(n) for n in p.stdout.decode().splitlines()] == ["notes-44.txt"], "keep", p)
        p = run([second, "--index", idx, "--output", "pairs"])
        for line in p.stdout.decode().splitlines():
            a, b, _ = line.split("\t")
            check(b.startswith(second), "pairs must involve a new document", p)

        # Extend the index, then nothing new: no output, all ids kept.
        idx2 = os.path.join(tmp, "all.idx")
        run([second, "--index", idx, "--save-index", idx2])
        empty = os.path.join(tmp, "empty")
        os.mkdir(empty)
        p = run([empty, "--index", idx2, "--save-index", idx2])
        check(p.stdout == b"", "no new documents", p)
        st = os.path.join(tmp, "st.json")
        run([empty, "--index", idx2, "--stats", st, "-q"])
        with open(st) as f:
            check(json.load(f)["indexed_before"] == len(files), "extended index count")
        p = run([os.path.join(SAMPLE, "field-report.txt"), "--index", idx2, "--output", "pairs"])
        check(len(p.stdout.decode().splitlines()) == 2, "third run finds both old copies", p)

        # The contract is saved: conflicting options, bad or missing files.
        p = run([second, "--index", idx, "-k", "7"], expect=2)
        run([second, "--index", idx, "-k", "5"])  # same as saved: fine
        run([second, "--index", os.path.join(tmp, "missing.idx")], expect=3)
        with open(idx2, "r+b") as f:
            f.truncate(os.path.getsize(idx2) // 2)
        run([second, "--index", idx2], expect=3)


def case_threads():
    """Output, and the saved index, are identical for any -j."""
    import random
    rng = random.Random(7)
    words = ["w%03d" % i for i in range(400)]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "many.txt")
        docs = []
        for i in range(3000):  # many batches, so the workers interleave
            if i % 10 == 9:
                base = docs[rng.randrange(len(docs))].split(" ")
                base[rng.randrange(len(base))] = "changed"
                docs.append(" ".join(base))
            else:
                docs.append(" ".join(rng.choice(words) for _ in range(rng.randint(20, 300))))
        with open(path, "w") as f:
            f.write("\n".join(docs) + "\n")
        outs = {}
        for j in ("1", "2", "3", "8"):
            idx = os.path.join(tmp, "j%s.idx" % j)
            p = run(["--lines", path, "-j", j, "--output", "pairs", "--format", "jsonl",
                     "--save-index", idx])
            with open(idx, "rb") as f:
                outs[j] = (p.stdout, f.read())
        check(len(outs["1"][0]) > 0, "planted pairs found")
        for j in outs:
            check(outs[j][0] == outs["1"][0], "-j %s output differs from -j 1" % j)
            check(outs[j][1] == outs["1"][1], "-j %s index differs from -j 1" % j)
        a = run([SAMPLE, "-j", "1", "--output", "keep"]).stdout
        b = run([SAMPLE, "-j", "2", "--output", "keep"]).stdout
        check(a == b, "sample keep differs between -j 1 and -j 2")


def case_usage():
    """--help, --version and every kind of usage error (exit 2)."""
    p = run(["--help"])
    check(b"Usage: simlsh-dedup" in p.stdout and b"Exit status" in p.stdout, "--help", p)
    p = run(["--version"])
    check(p.stdout.startswith(b"simlsh-dedup "), "--version", p)
    for lib, built in ((b"jansson", JSON), (b"zlib", ZLIB), (b"zstd", ZSTD)):
        m = re.search(rb"; " + lib + rb" ([^;]+);", p.stdout)
        check(m and (m.group(1) != b"no") == built,
              "--version disagrees with the build about %s" % lib.decode(), p)
    # after --, an argument that looks like an option is a path
    with tempfile.TemporaryDirectory() as tmp:
        odd = os.path.join(tmp, "-k")
        shutil.copy(os.path.join(SAMPLE, "field-report.txt"), odd)
        q = subprocess.run([os.path.abspath(DEDUP), "--output", "keep", "--", "-k"], cwd=tmp,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        check(q.returncode == 0 and q.stdout == b"-k\n", "-- ends the options", q)
    for args in ([], ["--bogus"], ["--unit", "syllable", SAMPLE], ["-k", "0", SAMPLE],
                 ["-k", "x", SAMPLE], ["--threshold", "1.5", SAMPLE],
                 ["--threshold", "abc", SAMPLE], ["--bands", "100", "--rows", "100", SAMPLE],
                 ["--recall", "1", SAMPLE], ["--normalize", "upper", SAMPLE],
                 ["-j", "-1", SAMPLE], ["--output", "everything", SAMPLE],
                 ["--format", "csv", SAMPLE], ["--num-perm", "0", SAMPLE], ["--lines"],
                 ["--keep", "biggest", SAMPLE], ["--max-doc-bytes", "0", SAMPLE],
                 ["--max-doc-bytes", "1x", SAMPLE], ["--max-doc-bytes", "-1", SAMPLE],
                 ["--output", "records", SAMPLE],
                 ["--files-from", "-", "-"]):
        p = run(args, expect=2)
        check(p.stdout == b"", "usage error wrote output", p)
        check(p.stderr.startswith(b"simlsh-dedup: ") or b"Try" in p.stderr,
              "usage message", p)
    p = run(["-k", "0", SAMPLE], expect=2)
    check(b"allowed: 1..64" in p.stderr, "range in the message", p)
    p = run(["--bands", "8", SAMPLE])  # rows fill the rest of the signature
    check(b"8 bands x 16 rows" in p.stderr, "--bands alone", p)


def case_exit_code():
    """--exit-code: 1 when duplicates were found, 0 when not."""
    run([SAMPLE, "--exit-code"], expect=1)
    run([SAMPLE, "--quiet"], expect=0)
    run([os.path.join(SAMPLE, "notes-01.txt"), os.path.join(SAMPLE, "notes-02.txt"),
         "--exit-code"], expect=0)


def tree_state(d):
    """{relative path: (type, bytes or link target)} of everything under d."""
    out = {}
    for root, dirs, files in os.walk(d):
        for name in dirs + files:
            full = os.path.join(root, name)
            key = os.path.relpath(full, d)
            if os.path.islink(full):
                out[key] = ("link", os.readlink(full))
            elif os.path.isfile(full):
                with open(full, "rb") as f:
                    out[key] = ("file", f.read())
            elif os.path.isdir(full):
                out[key] = ("dir", None)
            else:
                out[key] = ("other", None)
    return out


def no_temp_files(d, proc=None):
    left = [n for n in tree_state(d) if (".simlsh-" in n and "ghijkl" not in n) or ".tmp" in n]
    check(not left, "temporary files left behind: %s" % left, proc)


def case_output_safety():
    """Issue 18 item 2: no output replaces an input (same file through any
    name), a directory or symbolic link; -o is written to a temporary file
    renamed at the end, so a failed run leaves the old output as it was and
    no temporary file. (Devices and FIFOs are written in place: case
    special-outputs.)"""
    with tempfile.TemporaryDirectory() as tmp:
        d = os.path.join(tmp, "in")
        os.mkdir(d)
        for name, src in (("a.txt", "harbour-log.txt"), ("b.txt", "harbour-log-typos.txt"),
                          ("c.txt", "notes-01.txt")):
            shutil.copy(os.path.join(SAMPLE, src), os.path.join(d, name))
        os.link(os.path.join(d, "c.txt"), os.path.join(tmp, "hard.txt"))
        os.symlink(os.path.join(d, "b.txt"), os.path.join(tmp, "soft.txt"))
        lines = os.path.join(tmp, "lines.txt")
        with open(lines, "wb") as f:
            f.write(flat("harbour-log.txt") + b"\n" + flat("notes-02.txt") + b"\n")
        idx = os.path.join(tmp, "s.idx")
        run([d, "--save-index", idx, "-q"])
        listing = os.path.join(tmp, "list.txt")
        with open(listing, "w") as f:
            f.write(os.path.join(d, "a.txt") + "\n")
        before = tree_state(tmp)
        a = os.path.join(d, "a.txt")
        refusals = [
            ([a, "-o", a], "is one of the inputs"),                      # the input itself
            ([d, "-o", a], "is one of the inputs"),                      # found in a directory
            ([d, "-o", os.path.join(tmp, "hard.txt")], "is one of the inputs"),  # hard link
            ([os.path.join(tmp, "soft.txt"), "-o", os.path.join(d, "b.txt")],
             "is one of the inputs"),                                   # through a symlink
            ([d, "-o", os.path.join(tmp, "soft.txt")], "is a symbolic link"),
            (["--lines", lines, "-o", lines], "is one of the inputs"),
            (["--files-from", listing, "-o", listing], "is one of the inputs"),
            ([d, "--index", idx, "-o", idx], "is one of the inputs"),
            ([d, "--save-index", a], "is one of the inputs"),
            ([d, "--stats", a], "is one of the inputs"),
            ([d, "--skipped", os.path.join(d, "c.txt")], "is one of the inputs"),
            ([d, "-o", tmp], "is a directory"),
            ([d, "--save-index", "/dev/null"], "is a character device"),
            ([d, "--save-index", os.path.join(tmp, "soft.txt")], "is a symbolic link"),
            ([d, "-o", os.path.join(tmp, "x"), "--stats", os.path.join(tmp, "x")],
             "also the file of -o"),
            ([d, "--save-index", os.path.join(tmp, "y"), "-o", os.path.join(tmp, "y")],
             "also the file of -o"),
        ]
        fifo = os.path.join(tmp, "fifo")
        os.mkfifo(fifo)
        refusals.append(([d, "--save-index", fifo], "is a FIFO"))
        before = tree_state(tmp)
        for args, why in refusals:
            p = run(args, expect=2)
            check(why in p.stderr.decode(), "refusal should say '%s'" % why, p)
            check(p.stdout == b"", "refused run wrote output", p)
            check(tree_state(tmp) == before, "a refused run changed the files", p)
        # --save-index over the index it loaded is the way to extend it.
        run([d, "--index", idx, "--save-index", idx, "-q"])

        # A failed run leaves the old output intact, and no temporary file.
        out = os.path.join(tmp, "out.tsv")
        with open(out, "w") as f:
            f.write("old results\n")
        os.chmod(out, 0o640)
        open(os.path.join(d, "z-empty.txt"), "w").close()
        p = run([d, "--strict", "-o", out], expect=3)
        with open(out) as f:
            check(f.read() == "old results\n", "failed run changed the old output", p)
        no_temp_files(tmp, p)
        os.remove(os.path.join(d, "z-empty.txt"))
        # A good run replaces it whole, keeping its mode.
        p = run([d, "-o", out, "--output", "keep"])
        with open(out) as f:
            check(f.read() == "%s\n%s\n" % (a, os.path.join(d, "c.txt")), "new output", p)
        check(os.stat(out).st_mode & 0o777 == 0o640, "mode of the replaced output", p)
        no_temp_files(tmp, p)
        # An output in a directory that does not exist: the cause, and exit 4.
        p = run([d, "-o", os.path.join(tmp, "no", "such", "out")], expect=4)
        check(b"No such file or directory" in p.stderr, "cause of the -o failure", p)
        p = run([d, "--save-index", os.path.join(tmp, "no", "such.idx")], expect=4)
        check(b"No such file or directory" in p.stderr, "cause of the save failure", p)
        if os.geteuid() != 0:  # root writes anywhere
            ro = os.path.join(tmp, "ro")
            os.mkdir(ro, 0o555)
            p = run([d, "-o", os.path.join(ro, "out")], expect=4)
            check(b"Permission denied" in p.stderr, "permission cause", p)
            p = run([d, "--save-index", os.path.join(ro, "x.idx")], expect=4)
            check(b"Permission denied" in p.stderr, "permission cause of a save", p)
        # A killed run (SIGTERM) removes its temporary output.
        big = os.path.join(tmp, "big.txt")
        with open(big, "w") as f:
            for i in range(200000):
                f.write("line %d of a long file with words %d %d\n" % (i, i * 7, i * 13))
        proc = subprocess.Popen([DEDUP, "--lines", big, "-j", "1", "-o",
                                 os.path.join(tmp, "killed.tsv")],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        import time
        deadline = time.time() + 10
        while time.time() < deadline and not any(".simlsh-" in n for n in os.listdir(tmp)):
            if proc.poll() is not None:
                break
            time.sleep(0.005)
        proc.terminate()
        proc.communicate(timeout=60)
        check(not os.path.exists(os.path.join(tmp, "killed.tsv")), "killed run left its output")
        no_temp_files(tmp)


def run_bounded(args, expect, stdin=subprocess.DEVNULL):
    """A run that must end: the timeout only guards against a hang."""
    try:
        proc = subprocess.run([DEDUP] + [str(a) for a in args], stdin=stdin,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=10)
    except subprocess.TimeoutExpired:
        fail("simlsh-dedup %s did not finish (hang guard: 10 s)" % " ".join(map(str, args)))
    if proc.returncode != expect:
        fail("expected exit %d, got %d" % (expect, proc.returncode), proc)
    return proc


def case_special_inputs():
    """Issue 18 items 3 and 7: special files are skipped with a reason and
    never read (/dev/zero through a symbolic link, a FIFO with no writer,
    /proc/self); exit 5 when nothing could be read. --max-doc-bytes bounds
    every document, also a file whose size stat() does not tell."""
    with tempfile.TemporaryDirectory() as tmp:
        zero = os.path.join(tmp, "zero")
        os.symlink("/dev/zero", zero)
        fifo = os.path.join(tmp, "fifo")
        os.mkfifo(fifo)
        good = os.path.join(tmp, "good.txt")
        shutil.copy(os.path.join(SAMPLE, "harbour-log.txt"), good)
        for args, why in (([zero], "not a regular file (character device)"),
                          ([fifo], "not a regular file (FIFO)"),
                          (["--lines", zero], "not a regular file (character device)"),
                          (["--lines", fifo], "not a regular file (FIFO)"),
                          (["/proc/self"], "pseudo file system (proc)")):
            p = run_bounded(args, 5)
            err = p.stderr.decode()
            check(why in err, "reason '%s'" % why, p)
            check("nothing could be read" in err, "exit 5 explained", p)
            check(summary_count(p, "skipped") == 1, "one skipped", p)
        if os.path.isdir("/sys/kernel"):
            p = run_bounded(["/sys/kernel"], 5)
            check(b"pseudo file system (sysfs)" in p.stderr, "sysfs", p)
        # With a readable document the run succeeds and reports the rest.
        d = os.path.join(tmp, "dir")
        os.mkdir(d)
        os.symlink("/dev/zero", os.path.join(d, "z"))
        os.mkfifo(os.path.join(d, "f"))
        shutil.copy(good, os.path.join(d, "g.txt"))
        p = run_bounded([d, zero], 0)
        err = p.stderr.decode()
        check("%s/z: symbolic link to a character device" % d in err, "link to a device", p)
        check("%s/f: not a regular file (FIFO)" % d in err, "fifo in a directory", p)
        check(summary_count(p, "skipped") == 3 and summary_count(p, "documents") == 1,
              "counts", p)
        # - is the way to read a stream.
        p = run_bounded(["-", "--lines", good], 0, stdin=open(good, "rb"))
        # --max-doc-bytes: larger documents and lines are skipped with a reason.
        size = os.path.getsize(good)
        p = run_bounded([good, "--max-doc-bytes", size], 0)
        check(summary_count(p, "documents") == 1, "a document of exactly the bound", p)
        p = run_bounded([good, "--max-doc-bytes", size - 1], 5)
        check(b"larger than --max-doc-bytes" in p.stderr, "too large", p)
        check(size < 4096, "the sample file is small")
        p = run_bounded([good, "--max-doc-bytes", "4K"], 0)
        p = run_bounded([good, "--max-doc-bytes", "1k"], 5)
        check(b"(%d > 1024 bytes)" % size in p.stderr, "1k is 1024 bytes", p)
        # /proc files claim size 0: the bound holds on what is read.
        p = run_bounded(["/proc/self/status", "--max-doc-bytes", "16"], 5)
        check(b"holds more than --max-doc-bytes (16 bytes)" in p.stderr, "bound on read", p)
        p = run_bounded(["/proc/self/status"], 0)
        check(summary_count(p, "documents") == 1, "a named /proc file is read", p)
        lines = os.path.join(tmp, "lines.txt")
        with open(lines, "w") as f:
            f.write("short line one here\n" + "x" * 5000 + "\nshort line two here\n" +
                    "y" * 70)
        p = run_bounded(["--lines", lines, "--max-doc-bytes", "64"], 0)
        err = p.stderr.decode()
        check("%s:2: line longer than --max-doc-bytes" % lines in err, "long line", p)
        check("%s:4: line longer than --max-doc-bytes" % lines in err, "long last line", p)
        check(summary_count(p, "documents") == 2, "short lines read", p)
        p = run_bounded(["--max-doc-bytes", "0", good], 2)

        # A file replaced by a FIFO after the walk: the type check on the
        # opened descriptor skips it, nothing blocks. Outputs are created
        # right after the walk, so the temporary -o file appearing says the
        # walk is over; slow signing (classic, 1024 permutations, -j 1)
        # leaves time to swap the last file before it is read.
        race = os.path.join(tmp, "race")
        os.mkdir(race)
        words = read("harbour-log.txt")
        for i in range(60):
            with open(os.path.join(race, "f%03d.txt" % i), "wb") as f:
                f.write(words * 4)
        last = os.path.join(race, "f059.txt")
        seen = 0
        for attempt in range(3):
            out = os.path.join(tmp, "race.out")
            proc = subprocess.Popen([DEDUP, race, "-j", "1", "--scheme", "classic",
                                     "--num-perm", "1024", "-o", out],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            while proc.poll() is None and not any(".race.out.simlsh-" in n
                                                  for n in os.listdir(tmp)):
                pass
            swapped = proc.poll() is None
            if swapped:
                os.remove(last)
                os.mkfifo(last)
            try:
                _, err = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                fail("a file replaced by a FIFO made the run hang")
            check(proc.returncode == 0, "race run exit %d" % proc.returncode)
            if swapped and b"f059.txt: not a regular file (FIFO), skipped" in err:
                seen += 1
            os.remove(last)
            with open(last, "wb") as f:
                f.write(words * 4)
        check(seen > 0, "the FIFO swap never landed before the read (machine too fast?)")


def unescape(field):
    """docs/cli.md, NAMES: the inverse of the escaping of names."""
    out = bytearray()
    i = 0
    b = field.encode("utf-8", "surrogateescape") if isinstance(field, str) else field
    while i < len(b):
        c = b[i:i + 1]
        if c != b"\\":
            out += c
            i += 1
            continue
        n = b[i + 1:i + 2]
        if n == b"x":
            out.append(int(b[i + 2:i + 4], 16))
            i += 4
        else:
            out += {b"t": b"\t", b"n": b"\n", b"r": b"\r", b"\\": b"\\"}[n]
            i += 2
    return bytes(out)


def case_names():
    """Issue 18 item 4: names with control bytes, tabs, newlines, backslashes
    and invalid UTF-8 are escaped in diagnostics and TSV, and parse back."""
    with tempfile.TemporaryDirectory() as tmp:
        d = os.path.join(tmp, "m").encode()
        os.mkdir(d)
        text = read("council-minutes.txt")
        names = [b"evil\nsimlsh-dedup: 0 documents (0 B), 0 clusters", b"tab\there",
                 b"esc\x1b[31mred", b"back\\slash", b"latin1-\xe9", b"c1-\xc2\x9b-csi",
                 b"plain-\xc3\xa9t\xc3\xa9"]
        for n in names:
            with open(os.path.join(d, n), "wb") as f:
                f.write(text)
        with open(os.path.join(d, b"empty\x07bell"), "wb") as f:
            pass
        p = run([d, "--output", "keep", "--output", "clusters"])
        for stream in (p.stdout, p.stderr):
            bad = [c for c in stream if c < 0x20 and c not in (0x09, 0x0a)]
            check(not bad, "raw control bytes in output: %r" % bytes(bad), p)
            check(b"\xe9" not in stream.replace(b"\xc3\xa9", b""), "raw invalid UTF-8", p)
        err_lines = p.stderr.split(b"\n")
        check(sum(l.startswith(b"simlsh-dedup: 0 documents") for l in err_lines) == 0,
              "a name forged a summary line", p)
        check(b"empty\\x07bell: empty document" in p.stderr, "escaped diagnostic", p)
        lines = p.stdout.split(b"\n")
        check(len(lines) == 2 and lines[1] == b"", "one cluster line", p)
        got = {unescape(f) for f in lines[0].split(b"\t")}
        check(got == {os.path.join(d, n) for n in names}, "names parse back: %r" % got, p)
        # the same escaping in the names file of a saved index
        idx = os.path.join(tmp, "n.idx")
        run([d, "--save-index", idx, "-q"])
        p = run([os.path.join(SAMPLE, "council-minutes.txt"), "--index", idx, "--output",
                 "pairs"])
        got = {unescape(l.split(b"\t")[0]) for l in p.stdout.splitlines()}
        check(got == {os.path.join(d, n) for n in names}, "names through --index", p)


def case_aliases():
    """Issue 10 item 1: one file under several names (hard links, symbolic
    links, given twice) is one document, never its own duplicate, read
    under its first name that is not a link; the others are aliases."""
    with tempfile.TemporaryDirectory() as tmp:
        d = os.path.join(tmp, "licenses")
        os.mkdir(d)
        # as in /usr/share/common-licenses: the link sorts before its target
        shutil.copy(os.path.join(SAMPLE, "harbour-log.txt"), os.path.join(d, "GPL-3"))
        os.symlink("GPL-3", os.path.join(d, "GPL"))
        shutil.copy(os.path.join(SAMPLE, "harbour-log-typos.txt"), os.path.join(d, "LGPL-3"))
        os.symlink("LGPL-3", os.path.join(d, "LGPL"))
        shutil.copy(os.path.join(SAMPLE, "notes-03.txt"), os.path.join(d, "MIT"))
        os.link(os.path.join(d, "MIT"), os.path.join(d, "MIT-hard"))
        skipped = os.path.join(tmp, "skipped.tsv")
        p = run([d, os.path.join(d, "MIT"), "--output", "keep", "--skipped", skipped])
        keep = p.stdout.decode().splitlines()
        check(keep == [os.path.join(d, n) for n in ("GPL-3", "MIT")],
              "keep lists the real files: %s" % keep, p)
        check(summary_count(p, "documents") == 3, "three documents", p)
        check(summary_count(p, "aliases") == 4 and summary_count(p, "skipped") == 0,
              "alias count", p)
        q = run([d, os.path.join(d, "MIT"), "--output", "keep", "--quiet"])
        check(q.stderr == b"" and q.stdout == p.stdout, "--quiet silences aliases", q)
        p = run([d, os.path.join(d, "MIT"), "--output", "drop"])
        check(p.stdout.decode().splitlines() == [os.path.join(d, "LGPL-3")], "drop", p)
        with open(skipped) as f:
            rows = [l.split("\t") for l in f.read().splitlines()]
        want = {(os.path.join(d, "GPL"), "same file as %s" % os.path.join(d, "GPL-3")),
                (os.path.join(d, "LGPL"), "same file as %s" % os.path.join(d, "LGPL-3")),
                (os.path.join(d, "MIT-hard"), "same file as %s" % os.path.join(d, "MIT")),
                (os.path.join(d, "MIT"), "same file as %s" % os.path.join(d, "MIT"))}
        # the argument MIT and the walked MIT are one file: the first name
        # in input order (the walked one) stands for it
        check({tuple(r) for r in rows} == want, "skipped rows: %s" % rows)
        p = run([d, "--output", "pairs"])
        for line in p.stdout.decode().splitlines():
            a, b, _ = line.split("\t")
            check(os.path.realpath(a) != os.path.realpath(b), "a file paired with itself", p)
        # only links: the first link's name stands for the file
        only = os.path.join(tmp, "links")
        os.mkdir(only)
        os.symlink(os.path.join(d, "GPL-3"), os.path.join(only, "b"))
        os.symlink(os.path.join(d, "GPL-3"), os.path.join(only, "a"))
        p = run([only, "--output", "keep"])
        check(p.stdout.decode() == os.path.join(only, "a") + "\n", "first link kept", p)


def case_keep():
    """Issue 10 item 1: --keep policies, --output drop, --skipped, exit
    statuses 5 and 6, bytes of read documents only, --stats JSON."""
    with tempfile.TemporaryDirectory() as tmp:
        d = os.path.join(tmp, "c")
        os.mkdir(d)
        base = read("council-minutes.txt")
        docs = {"a.txt": base, "b.txt": base + b" one more closing line of text.",
                "c.txt": base[:-40], "d.txt": read("notes-07.txt")}
        mtimes = {"a.txt": 2000000000, "b.txt": 1000000000, "c.txt": 1500000000,
                  "d.txt": 1200000000}
        for n, data in docs.items():
            path = os.path.join(d, n)
            with open(path, "wb") as f:
                f.write(data)
            os.utime(path, (mtimes[n], mtimes[n]))
        with open(os.path.join(d, "e.bin"), "wb") as f:
            f.write(b"\x00binary" * 1000)
        full = lambda n: os.path.join(d, n)
        expect = {"first": "a.txt", "shortest": "c.txt", "longest": "b.txt",
                  "oldest": "b.txt", "newest": "a.txt"}
        for policy, kept in expect.items():
            k = run([d, "--keep", policy, "--output", "keep"], expect=0)
            dr = run([d, "--keep", policy, "--output", "drop"], expect=0)
            keep, drop = k.stdout.decode().splitlines(), dr.stdout.decode().splitlines()
            check(keep == [full(kept), full("d.txt")], "--keep %s: %s" % (policy, keep), k)
            check(not set(keep) & set(drop), "keep and drop overlap", dr)
            check(sorted(keep + drop) == [full(n) for n in sorted(docs)],
                  "keep and drop cover every document read", dr)
            check(summary_count(dr, "duplicates") == 2, "duplicates", dr)
        # --skipped lists the binary file with its reason, in neither list
        sk = os.path.join(tmp, "skipped")
        p = run([d, "--skipped", sk, "--output", "drop"])
        with open(sk) as f:
            rows = f.read().splitlines()
        check(rows == ["%s\tbinary (NUL byte at offset 0), skipped; --binary reads it"
                       % full("e.bin")], "skipped rows %s" % rows, p)
        p = run([d, "--skipped", sk, "--format", "jsonl", "--output", "keep"])
        with open(sk) as f:
            obj = json.loads(f.read())
        check(obj["name"] == full("e.bin") and obj["reason"].startswith("binary"),
              "jsonl skipped", p)
        # bytes: only documents read
        p = run([d])
        total = sum(len(v) for v in docs.values())
        check(("(%.1f KB)" % (total / 1000.0)) in p.stderr.decode(), "bytes of read docs", p)
        p = run([d, "--binary"])
        check(summary_count(p, "documents") == 5, "--binary reads it", p)
        # --stats
        st = os.path.join(tmp, "stats.json")
        p = run([d, "--stats", st, "-k", "7", "--normalize", "lower,punct"])
        with open(st) as f:
            stats = json.load(f)
        check(stats["documents"] == 4 and stats["skipped"] == 1 and stats["bytes"] == total
              and stats["clusters"] == 1 and stats["duplicates"] == 2 and
              stats["exit_status"] == 0 and stats["truncated"] is False, "stats %s" % stats, p)
        ph = stats["phases"]
        check(set(ph) == {"setup", "read", "pairs", "verify", "group", "write", "save"} and
              all(v["wall_seconds"] >= 0 and v["cpu_seconds"] >= 0 for v in ph.values()) and
              ph["read"]["wall_seconds"] > 0 and
              sum(v["wall_seconds"] for v in ph.values()) <= stats["seconds"] + 1e-3,
              "stats phases %s" % ph, p)
        check(stats["params"]["k"] == 7 and stats["normalize"] == ["lower", "punct"] and
              stats["params"]["normalize"] == 5 and stats["unit"] == "char" and
              abs(stats["params"]["threshold"] - 0.8) < 1e-12 and
              stats["bands"] * stats["rows"] <= stats["params"]["num_perm"] and
              len(stats["fingerprint"]) == 16, "stats contract %s" % stats, p)
        for key in ("unit", "k", "normalize", "utf8_policy", "seed", "num_perm", "scheme",
                    "bands", "rows", "threshold", "fp_weight", "fn_weight"):
            check(key in stats["params"], "stats params lack %s" % key, p)
        # the summary's contract line shows the same contract (issue 16 item 1)
        m = re.search(r"^simlsh-dedup: contract: (.*)$", p.stderr.decode(), re.M)
        check(m is not None, "no contract line in the summary", p)
        shown = dict(kv.split("=", 1) for kv in m.group(1).split())
        check(shown.pop("normalize") == "lower,punct" and shown.pop("unit") == "char" and
              shown.pop("scheme") == "oph" and shown.pop("utf8_policy") == "replace",
              "contract line names: %s" % m.group(1), p)
        shown["bands"], shown["rows"] = str(stats["bands"]), str(stats["rows"])
        for key, value in shown.items():
            want = stats["bands"] if key == "bands" else stats["rows"] if key == "rows" \
                else stats["params"][key]
            check(float(value) == float(want), "contract %s=%s, stats %s" % (key, value, want), p)
        check(set(shown) | {"normalize", "unit", "scheme", "utf8_policy", "isa"} ==
              set(stats["params"]), "contract line keys", p)
        # exit 5: inputs given, nothing read; an empty directory is not that
        empty = os.path.join(tmp, "empty")
        os.mkdir(empty)
        run([empty], expect=0)
        p = run([full("e.bin"), "--stats", st], expect=5)
        with open(st) as f:
            check(json.load(f)["exit_status"] == 5, "stats exit status 5", p)
        run([full("e.bin"), "--exit-code"], expect=5)
        # exit 6: --max-pairs cut the answer (the cluster has 3 pairs)
        p = run([d, "--output", "pairs", "--max-pairs", "1"], expect=6)
        check(b"results are incomplete" in p.stderr, "truncation warning", p)
        run([d, "--output", "pairs", "--max-pairs", "1", "--exit-code"], expect=6)
        run([d, "--output", "pairs", "--max-pairs", "3"], expect=0)
        # with --index, an indexed document is the kept one
        idx = os.path.join(tmp, "i.idx")
        run([full("b.txt"), "--save-index", idx])
        p = run([full("a.txt"), full("c.txt"), "--index", idx, "--keep", "shortest",
                 "--output", "drop"])
        check(p.stdout.decode().splitlines() == [full("a.txt"), full("c.txt")],
              "indexed documents are kept", p)


def zstd_frame(data):
    """A zstd frame of raw (stored) blocks, written by hand (RFC 8878) so the
    test needs no zstd module: single segment, 4-byte content size."""
    out = bytearray(b"\x28\xb5\x2f\xfd\xa0") + len(data).to_bytes(4, "little")
    chunks = [data[i:i + 65536] for i in range(0, len(data), 65536)] or [b""]
    for i, c in enumerate(chunks):
        last = 1 if i == len(chunks) - 1 else 0
        out += ((len(c) << 3) | last).to_bytes(3, "little") + c
    return bytes(out)


def case_compressed():
    """Issue 10 item 2: gzip and zstd inputs, recognised by magic bytes not by
    name, for files, -, --lines and --jsonl; corrupt data and decompression
    bombs are skipped with a reason; a build without the library says so."""
    import gzip
    with tempfile.TemporaryDirectory() as tmp:
        d = os.path.join(tmp, "man")
        os.mkdir(d)
        plain = read("release-plan.txt")
        with open(os.path.join(d, "ls.1.gz"), "wb") as f:
            f.write(gzip.compress(plain))
        with open(os.path.join(d, "dir.1"), "wb") as f:  # gzip, no .gz name
            f.write(gzip.compress(plain[:len(plain) // 2]) + gzip.compress(plain[len(plain) // 2:]))
        with open(os.path.join(d, "vdir.1.zst"), "wb") as f:
            f.write(zstd_frame(read("release-plan-reformatted.txt")))
        with open(os.path.join(d, "other.txt"), "wb") as f:
            f.write(read("notes-04.txt"))
        with open(os.path.join(d, "broken.gz"), "wb") as f:
            f.write(gzip.compress(read("notes-05.txt"))[:-30])
        with open(os.path.join(d, "bomb.gz"), "wb") as f:
            f.write(gzip.compress(b"a " * 600000))
        p = run([d, "--max-doc-bytes", "1000000"], expect=None)
        err = p.stderr.decode()
        gz = ["ls.1.gz", "dir.1"]
        if not ZLIB:
            check("%s/ls.1.gz: gzip-compressed, and simlsh-dedup was built without zlib" % d
                  in err, "no-zlib reason", p)
        else:
            check("%s/broken.gz: truncated gzip data" % d in err or
                  "%s/broken.gz: corrupt gzip data" % d in err, "broken gzip", p)
            check("%s/bomb.gz: decompresses to more than --max-doc-bytes" % d in err,
                  "bounded decompression", p)
        if not ZSTD:
            check("%s/vdir.1.zst: zstd-compressed, and simlsh-dedup was built without libzstd"
                  % d in err, "no-zstd reason", p)
        readable = (gz if ZLIB else []) + (["vdir.1.zst"] if ZSTD else [])
        got = set()
        for c in tsv_clusters(p, mapper=lambda n: os.path.basename(n)):
            got |= c
        check(got == set(readable) if len(readable) > 1 else not got,
              "compressed clusters: %s, want %s" % (got, readable), p)
        if ZLIB:
            lines = os.path.join(tmp, "l.gz")
            with open(lines, "wb") as f:
                f.write(gzip.compress(flat("harbour-log.txt") + b"\n" + flat("notes-01.txt") +
                                      b"\n" + flat("harbour-log-typos.txt") + b"\n"))
            p = run(["--lines", lines])
            check(p.stdout == b"1\t3\n", "--lines on gzip", p)
            p = run(["--lines", "-"], stdin=open(lines, "rb").read())
            check(p.stdout == b"1\t3\n", "--lines - on gzip", p)
            p = run(["-", os.path.join(SAMPLE, "field-report.txt")],
                    stdin=gzip.compress(read("field-report-extended.txt")))
            check(p.stdout.startswith(b"-\t"), "- on gzip", p)
            if JSON:
                j = os.path.join(tmp, "c.jsonl.gz")
                rows = b"".join(json.dumps({"id": n, "text": read(n).decode()}).encode() + b"\n"
                                for n in ("release-plan.txt", "notes-02.txt",
                                          "release-plan-reformatted.txt"))
                with open(j, "wb") as f:
                    f.write(gzip.compress(rows))
                p = run(["--jsonl", j, "--output", "pairs"])
                check(p.stdout.startswith(b"release-plan.txt\trelease-plan-reformatted.txt"),
                      "--jsonl on gzip", p)
        if ZSTD:
            lines = os.path.join(tmp, "l.zst")
            with open(lines, "wb") as f:
                f.write(zstd_frame(flat("harbour-log.txt") + b"\n" + flat("notes-01.txt") +
                                   b"\n") + zstd_frame(flat("harbour-log-typos.txt") + b"\n"))
            p = run(["--lines", lines])
            check(p.stdout == b"1\t3\n", "--lines on zstd (two frames)", p)
            if shutil.which("zstd"):  # a real compressed frame too
                real = os.path.join(tmp, "real.zst")
                subprocess.run(["zstd", "-q", "-19", os.path.join(SAMPLE, "harbour-log.txt"),
                                "-o", real], check=True)
                p = run([real, os.path.join(SAMPLE, "harbour-log-edited.txt"), "--output",
                         "pairs"])
                check(p.stdout.startswith(real.encode() + b"\t"), "zstd -19 frame", p)


def case_special_outputs():
    """Issue 29: outputs that are not regular files are written in place, as
    sort -o and cp write them: -o /dev/null, /dev/stdout (and /dev/fd/N,
    the standard stream itself, so >> appends), a FIFO, --stats and
    --skipped likewise; only regular files are replaced by a rename, and
    --save-index (always a rename) still refuses them. A name that promises
    compression (.gz, .zst, ...) is refused: outputs are not compressed."""
    with tempfile.TemporaryDirectory() as tmp:
        ref = run([SAMPLE, "--output", "pairs"])
        check(ref.stdout.count(b"\n") > 3, "reference pairs", ref)
        p = run([SAMPLE, "--output", "pairs", "-o", "/dev/null", "--stats", "/dev/null"])
        check(p.stdout == b"", "-o /dev/null writes nothing to stdout", p)
        check(os.path.exists("/dev/null") and not os.path.isfile("/dev/null"),
              "/dev/null is still a device")
        for dev in ("/dev/stdout", "/proc/self/fd/1"):
            if not os.path.exists(dev):
                continue
            p = run([SAMPLE, "--output", "pairs", "-o", dev])  # stdout is a pipe here
            check(p.stdout == ref.stdout, "-o %s to a pipe" % dev, p)
        # stdout redirected to a regular file, opened for appending: the
        # output goes through the shell's descriptor, after what is there.
        log = os.path.join(tmp, "log.txt")
        with open(log, "w") as f:
            f.write("earlier line\n")
        with open(log, "ab") as f:
            p = subprocess.run([DEDUP, SAMPLE, "--output", "pairs", "-o", "/dev/stdout"],
                               stdout=f, stderr=subprocess.PIPE, timeout=120)
        check(p.returncode == 0, "-o /dev/stdout to an appended file: exit %d: %s"
              % (p.returncode, p.stderr.decode(errors="replace")))
        with open(log, "rb") as f:
            check(f.read() == b"earlier line\n" + ref.stdout, "-o /dev/stdout appended")
        check(not [n for n in os.listdir(tmp) if ".simlsh-" in n], "no temporary file")
        # --stats to /dev/stderr: the JSON object on standard error
        p = run([SAMPLE, "-q", "--stats", "/dev/stderr", "-o", "/dev/null"])
        check(b'"documents"' in p.stderr or b"{" in p.stderr, "--stats /dev/stderr", p)
        # A FIFO with a reader: written in place, nothing renamed over it.
        fifo = os.path.join(tmp, "fifo")
        os.mkfifo(fifo)
        import threading
        got = []
        reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
        reader.start()
        p = run([SAMPLE, "--output", "pairs", "-o", fifo])
        reader.join(60)
        check(got == [ref.stdout], "-o FIFO", p)
        import stat
        check(stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO is still a FIFO", p)
        # A link to a device is written through; a link to a regular file
        # (not a standard stream) is still refused.
        os.symlink("/dev/null", os.path.join(tmp, "null-link"))
        run([SAMPLE, "-o", os.path.join(tmp, "null-link")])
        # --save-index goes through a rename: a device is refused.
        p = run([SAMPLE, "--save-index", "/dev/null"], expect=2)
        check(b"character device" in p.stderr, "--save-index /dev/null refused", p)
        # Compressed names are refused, before anything is written.
        for name in ("out.jsonl.gz", "out.zst", "stats.json.xz"):
            path = os.path.join(tmp, name)
            opt = "--stats" if name.startswith("stats") else "-o"
            p = run([SAMPLE, opt, path], expect=2)
            check(b"uncompressed" in p.stderr and name.rsplit(".", 1)[1].encode() in p.stderr,
                  "%s %s: the refusal says why" % (opt, name), p)
            check(not os.path.exists(path) and p.stdout == b"", "refused %s written" % name, p)


def case_files_from():
    """Issue 10 item 2: --files-from FILE|- with -0, in its place in the
    input order; one run takes any number of names."""
    names = [os.path.join(SAMPLE, n) for n in sample_files()]
    with tempfile.TemporaryDirectory() as tmp:
        lst = os.path.join(tmp, "list")
        with open(lst, "w") as f:
            f.write("\n".join(names) + "\n\n")
        p = run(["--files-from", lst])
        check(set(tsv_clusters(p)) == EXPECTED, "--files-from clusters", p)
        q = run([SAMPLE])
        check(p.stdout == q.stdout, "same as the directory", p)
        p = run(["--files-from", "-", "-0"], stdin=b"\0".join(n.encode() for n in names))
        check(p.stdout == q.stdout, "--files-from - -0", p)
        # a name with a newline needs -0
        odd = os.path.join(tmp, "a\nb.txt")
        shutil.copy(os.path.join(SAMPLE, "field-report.txt"), odd)
        p = run(["--null", "--files-from", "-", os.path.join(SAMPLE, "field-report-extended.txt")],
                stdin=odd.encode() + b"\0")
        check(p.stdout.decode() == "%s\\nb.txt\t%s\n" % (
            os.path.join(tmp, "a"), os.path.join(SAMPLE, "field-report-extended.txt")),
            "name with a newline through -0", p)
        run(["--files-from", os.path.join(tmp, "missing")], expect=3)
        run(["--files-from", "-", "-"], expect=2, stdin=b"")
        # Issue 29: a NUL-separated list read by lines would give only the
        # name before the first NUL; it is refused, suggesting -0.
        nul_list = b"\0".join(n.encode() for n in names) + b"\0"
        with open(lst, "wb") as f:
            f.write(nul_list)
        for args, stdin in ((["--files-from", lst], None), (["--files-from", "-"], nul_list)):
            p = run(args + ["-o", os.path.join(tmp, "out")], expect=2, stdin=stdin)
            check(b"NUL" in p.stderr and b"-0" in p.stderr, "the refusal suggests -0", p)
            check(p.stdout == b"" and not os.path.exists(os.path.join(tmp, "out")),
                  "a refused list wrote output", p)
        p = run(["--files-from", lst, "-0"])
        check(p.stdout == q.stdout, "the same list with -0", p)


def case_walk_filters():
    """Issue 10 item 2: --include / --exclude globs, version-control
    directories skipped unless --include-vcs, binary files skipped with a
    reason unless --binary."""
    with tempfile.TemporaryDirectory() as tmp:
        d = os.path.join(tmp, "repo")
        for sub in (".git/objects", "src", "build", ".hg", ".svn"):
            os.makedirs(os.path.join(d, sub))
        text = read("harbour-log.txt")
        for rel_name in ("src/a.txt", "src/b.md", "build/c.txt", ".git/objects/d.txt",
                         ".hg/e.txt", ".svn/f.txt", "g.txt"):
            with open(os.path.join(d, rel_name), "wb") as f:
                f.write(text)
        with open(os.path.join(d, "src", "img.bin"), "wb") as f:
            f.write(b"PNG\x00\x01" + text)
        found = lambda p: {os.path.relpath(n, d) for c in tsv_clusters(p, mapper=lambda n: n)
                           for n in c}
        p = run([d])
        check(found(p) == {"src/a.txt", "src/b.md", "build/c.txt", "g.txt"}, "vcs skipped", p)
        check("img.bin: binary (NUL byte at offset 3)" in p.stderr.decode(), "binary reason", p)
        p = run([d, "--include-vcs", "--binary"])
        check(found(p) == {"src/a.txt", "src/b.md", "build/c.txt", "g.txt",
                           ".git/objects/d.txt", ".hg/e.txt", ".svn/f.txt", "src/img.bin"},
              "--include-vcs --binary", p)
        p = run([d, "--include", "*.txt"])
        check(found(p) == {"src/a.txt", "build/c.txt", "g.txt"}, "--include", p)
        p = run([d, "--include", "*.txt", "--include", "*.md", "--exclude", "build"])
        check(found(p) == {"src/a.txt", "src/b.md", "g.txt"}, "--exclude a directory", p)
        p = run([d, "--exclude", "*/src/*"])
        check(found(p) == {"build/c.txt", "g.txt"}, "glob with a slash", p)
        # names given on the command line are read whatever the filters
        p = run([d, os.path.join(d, ".git", "objects", "d.txt"), "--include", "*.md"])
        check(found(p) == {"src/b.md", ".git/objects/d.txt"}, "named files are read", p)


def case_jsonl_records():
    """Issue 10 item 2: JSONL end to end: --output records / drop-records
    write the original lines, integer ids stay integers, duplicate ids are
    reported, --id-field - uses the line number."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "c.jsonl")
        if not JSON:
            refuses_jsonl(["--jsonl", path, "--output", "records"])
            print("SKIP: simlsh-dedup was built without JSON support; --jsonl is refused")
            sys.exit(SKIP)
        rows = [{"id": 10, "text": read("release-plan.txt").decode(), "extra": [1, 2]},
                {"id": "n2", "text": read("notes-02.txt").decode()},
                {"id": 11, "text": read("release-plan-reformatted.txt").decode()},
                {"id": "n2", "text": read("notes-03.txt").decode()},
                {"id": 12, "text": read("release-plan.txt").decode()}]
        raw = [json.dumps(r, separators=(",", " : ")).encode() for r in rows]
        with open(path, "wb") as f:
            f.write(b"\n".join(raw) + b"\n")
        p = run(["--jsonl", path, "--output", "records"])
        check(p.stdout == raw[0] + b"\n" + raw[1] + b"\n" + raw[3] + b"\n", "records", p)
        check(("%s:4: duplicate id n2 (first at %s:2)" % (path, path)) in p.stderr.decode(),
              "duplicate id reported", p)
        p = run(["--jsonl", path, "--output", "drop-records", "--keep", "longest"])
        kept_long = run(["--jsonl", path, "--output", "keep", "--keep", "longest"])
        dropped = [json.loads(l)["id"] for l in p.stdout.decode().splitlines()]
        kept = kept_long.stdout.decode().splitlines()
        check(len(dropped) == 2 and not {str(x) for x in dropped} & set(kept),
              "drop-records never holds a kept record", p)
        p = run(["--jsonl", path, "--format", "jsonl", "--output", "clusters"])
        obj = json.loads(p.stdout)
        check(obj["ids"] == [10, 11, 12], "integer ids stay integers: %s" % obj, p)
        st = os.path.join(tmp, "s.json")
        run(["--jsonl", path, "--stats", st])
        with open(st) as f:
            check(json.load(f)["duplicate_ids"] == 1, "duplicate_ids in --stats")
        noid = os.path.join(tmp, "noid.jsonl")
        with open(noid, "w") as f:
            for r in rows:
                f.write(json.dumps({"text": r["text"]}) + "\n")
        p = run(["--jsonl", noid, "--id-field", "-", "--format", "jsonl", "--output", "keep"])
        check([json.loads(l)["id"] for l in p.stdout.decode().splitlines()] == [1, 2, 4],
              "line numbers as ids", p)
        p = run(["--jsonl", noid, "--id-field", "-", "--output", "records"])
        check(p.stdout.decode().splitlines() == [json.dumps({"text": rows[i]["text"]})
                                                 for i in (0, 1, 3)], "records by line", p)
        run([SAMPLE, "--output", "records"], expect=2)
        lines = os.path.join(tmp, "l.txt")
        with open(lines, "wb") as f:
            f.write(flat("harbour-log.txt") + b"\n" + flat("harbour-log-typos.txt") + b"\n")
        p = run(["--lines", lines, "--output", "records"])
        check(p.stdout == flat("harbour-log.txt") + b"\n", "--lines records", p)


def case_man():
    """Issue 10 item 5: the man page (generated from docs/cli.md next to the
    program) documents every option --help lists and the reverse, and
    renders without warnings."""
    page = os.path.join(os.path.dirname(os.path.abspath(DEDUP)), "simlsh-dedup.1")
    check(os.path.exists(page), "no generated man page at %s" % page)
    with open(page, encoding="utf-8") as f:
        man = f.read()
    check(man.startswith(".TH SIMLSH\\-DEDUP 1"), "man page header")
    help_text = run(["--help"]).stdout.decode()
    in_help = set(re.findall(r"--[a-z][a-z0-9-]+", help_text))
    in_man = {o.replace("\\-", "-")
              for o in re.findall(r"\\-\\-[a-z](?:[a-z0-9]|\\-(?=[a-z0-9]))*", man)}
    check(in_help <= in_man, "options in --help but not in the man page: %s"
          % sorted(in_help - in_man))
    documented = set(re.findall(r"^\.TP\n\\fB(\\-\\-[a-z](?:[a-z0-9]|\\-)*)", man, re.M))
    documented = {o.replace("\\-", "-") for o in documented}
    check(documented <= in_help, "options documented but not in --help: %s"
          % sorted(documented - in_help))
    check(len(documented) > 25, "option definitions in the man page: %d" % len(documented))
    if shutil.which("groff"):
        g = subprocess.run(["groff", "-man", "-ww", "-z", page], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        check(g.returncode == 0 and g.stderr == b"", "groff warnings: %s" % g.stderr.decode())


def case_faults():
    """Issue 18 item 7 (tool side): writes that fail at the k-th byte, for k
    across the whole output: -o keeps the old file byte for byte, leaves no
    temporary file, and the message gives the system's cause; --save-index
    likewise while the index itself is being written. The fault is a file
    size limit (RLIMIT_FSIZE, with SIGXFSZ ignored: write() then fails with
    EFBIG at exactly that byte), which needs no mount and no preloaded shim
    (glibc's stdio calls write() internally, where a shim cannot reach it).
    Also: a temporary file left by a killed run (its process gone) is
    removed by the next run."""
    import resource
    import signal
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.tsv")
        p = run([SAMPLE, "--output", "pairs", "-o", out])
        with open(out, "rb") as f:
            size = len(f.read())
        check(size > 100, "pairs output too small to cut")
        old = b"the old results\n"

        def faulty(args, budget):
            def limit():
                signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
                resource.setrlimit(resource.RLIMIT_FSIZE, (budget, budget))
            return subprocess.run([DEDUP] + args, preexec_fn=limit, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, timeout=120)

        for k in sorted({0, 1, size // 3, size // 2, size - 1} | set(range(0, size, 97))):
            with open(out, "wb") as f:
                f.write(old)
            p = faulty([SAMPLE, "--output", "pairs", "-o", out, "-q"], k)
            check(p.returncode == 4, "budget %d: exit %d" % (k, p.returncode), p)
            check(b"File too large" in p.stderr, "budget %d: cause" % k, p)
            with open(out, "rb") as f:
                check(f.read() == old, "budget %d: the old output changed" % k, p)
            no_temp_files(tmp, p)
        p = faulty([SAMPLE, "--output", "pairs", "-o", out, "-q"], size)
        check(p.returncode == 0, "exactly enough space", p)
        # Several outputs: room for -o but not for --stats; neither changes.
        st = os.path.join(tmp, "stats.json")
        pair = [os.path.join(SAMPLE, "field-report.txt"),
                os.path.join(SAMPLE, "field-report-extended.txt"), "--output", "pairs"]
        small = len(run(pair).stdout)
        for n in (out, st):
            with open(n, "wb") as f:
                f.write(old)
        p = faulty(pair + ["-o", out, "--stats", st, "-q"], small)
        check(p.returncode == 4, "--stats too large for the limit", p)
        for n in (out, st):
            with open(n, "rb") as f:
                check(f.read() == old, "%s replaced although --stats failed" % n, p)
        no_temp_files(tmp, p)
        p = faulty(pair + ["-o", out, "--stats", st, "-q"], 1 << 20)
        check(p.returncode == 0, "room for both", p)

        idx = os.path.join(tmp, "s.idx")
        half = [os.path.join(SAMPLE, n) for n in sample_files()[:20]]
        run(half + ["--save-index", idx, "-q"])
        with open(idx, "rb") as f:
            old_idx = f.read()
        for k in sorted({0, 1, 100} | set(range(0, len(old_idx), max(1, len(old_idx) // 25)))):
            p = faulty([SAMPLE, "--save-index", idx, "-q"], k)
            check(p.returncode == 4 and b"File too large" in p.stderr, "save budget %d" % k, p)
            with open(idx, "rb") as f:
                # one file (names inside): cut anywhere, it is the old one
                check(f.read() == old_idx, "save budget %d: the old index changed" % k, p)
            no_temp_files(tmp, p)
            run([os.path.join(SAMPLE, "notes-01.txt"), "--index", idx, "-q"])

        # a --skipped list that fails while it is written (more than a
        # stdio buffer) names its file and the cause (issue 31 F13)
        blank = os.path.join(tmp, "blank.lines")
        with open(blank, "w") as f:
            f.write("some text to keep\n" + "\n" * 4000)
        skipped = os.path.join(tmp, "skipped.tsv")
        p = faulty(["--lines", blank, "--skipped", skipped, "-o", out, "-q"], 4096)
        check(p.returncode == 4, "--skipped past the limit: exit %d" % p.returncode, p)
        check(b"skipped.tsv: cannot write: File too large" in p.stderr, "--skipped: the cause", p)
        check(not os.path.exists(skipped), "--skipped: no partial list", p)
        no_temp_files(tmp, p)

        # a temporary file of a run that no longer exists is cleaned up, by
        # the names of the shared writer (lib/util/atomic-file.c) and of
        # earlier versions of the tool
        stale = os.path.join(tmp, ".out.tsv.simlsh-999999999-abcdef")
        stale_new = os.path.join(tmp, ".out.tsv.simlsh-tmp.999999999.0123456789abcdef")
        live = os.path.join(tmp, ".out.tsv.simlsh-%d-ghijkl" % os.getpid())
        live_new = os.path.join(tmp, ".out.tsv.simlsh-tmp.%d.0123456789abcdef" % os.getpid())
        for n in (stale, stale_new, live, live_new):
            with open(n, "w") as f:
                f.write("partial")
        run([SAMPLE, "-o", out, "-q"])
        check(not os.path.exists(stale), "stale temporary file not removed")
        check(not os.path.exists(stale_new), "stale temporary file (shared writer) not removed")
        check(os.path.exists(live), "a live run's temporary file was removed")
        check(os.path.exists(live_new), "a live run's temporary file (shared writer) was removed")


def index_names(path):
    """The names in a saved index's simlsh-dedup user data
    (docs/format-index.md): found by its magic, decoded by the layout."""
    import struct
    with open(path, "rb") as f:
        data = f.read()
    at = data.rfind(b"SLDDUP\0\1")
    check(at > 0, "%s: no simlsh-dedup user data" % path)
    np, = struct.unpack_from("<I", data, at + 8)
    pos = at + 16 + 16 * np
    count, = struct.unpack_from("<Q", data, pos)
    pos += 8
    names = []
    for _ in range(count):
        _, _, _, ln = struct.unpack_from("<QqBI", data, pos)
        pos += 21
        names.append(data[pos:pos + ln].decode())
        pos += ln
    return names


def case_concurrent_saves():
    """Issue 18 item 1/7 (tool side): runs saving to one index path at the
    same time each write the one file (names inside) to a temporary file
    renamed over it: the file comes complete from one run, the last to
    rename, loads, and names exactly that run's documents."""
    files = sample_files()
    with tempfile.TemporaryDirectory() as tmp:
        a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
        os.mkdir(a)
        os.mkdir(b)
        for i, n in enumerate(files):
            shutil.copy(os.path.join(SAMPLE, n), os.path.join(a if i % 3 else b,
                                                              n.replace("/", "-")))
        names_a = sorted(os.path.join(a, n) for n in os.listdir(a))
        names_b = sorted(os.path.join(b, n) for n in os.listdir(b))
        idx = os.path.join(tmp, "shared.idx")
        for round_no in range(12):
            procs = [subprocess.Popen([DEDUP, d, "--save-index", idx, "-q", "-j", "1"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                     for d in ((a, b) if round_no % 2 else (b, a))]
            for p in procs:
                _, err = p.communicate(timeout=120)
                check(p.returncode == 0, "concurrent save exit %d: %s" % (p.returncode, err))
            p = run([os.path.join(SAMPLE, "notes-01.txt"), "--index", idx, "-q"])
            saved = sorted(index_names(idx))
            check(saved in (names_a, names_b), "round %d: names from neither run" % round_no)
            no_temp_files(tmp)


# --------------------------------------------------------------------------
# Issue 9: exact verification in a second pass, star groups.


def planted_docs(n, seed, words=80):
    """n lines: random texts and, every fourth, an edited copy of an earlier
    one (some copies of copies), so there are chains and families of pairs
    on both sides of 0.8."""
    import random
    rng = random.Random(seed)
    vocab = ["%s%d" % (rng.choice("bcdfgklmnprstvz"), i) for i in range(3000)]
    docs = []
    for i in range(n):
        if i % 4 == 3:
            base = docs[rng.randrange(len(docs))].split(" ")
            for _ in range(rng.randint(1, 8)):
                base[rng.randrange(len(base))] = rng.choice(vocab)
            docs.append(" ".join(base))
        else:
            docs.append(" ".join(rng.choice(vocab) for _ in range(rng.randint(words // 2, words))))
    return docs


def pairs_of(proc):
    out = {}
    for line in proc.stdout.decode().splitlines():
        a, b, s = line.split("\t")
        out[(a, b)] = float(s)
    return out


def chain_texts():
    """a ~ b ~ c with J(a, b) and J(b, c) above 0.8, J(a, c) below it; b is
    the longest (for --keep longest)."""
    import random
    rng = random.Random(11)
    vocab = ["word%d" % i for i in range(5000)]
    a = [rng.choice(vocab) for _ in range(150)]
    b = list(a)
    for i in range(0, 150, 11):
        b[i] = rng.choice(vocab)
    b += ["tail", "end"]
    c = list(b)
    for i in range(5, 150, 11):
        c[i] = rng.choice(vocab)
    a, b, c = (" ".join(x) for x in (a, b, c))
    jab, jbc, jac = jaccard(a, b), jaccard(b, c), jaccard(a, c)
    check(jab > 0.82 and jbc > 0.82 and jac < 0.76,
          "the chain is not what it should be: %.3f %.3f %.3f" % (jab, jbc, jac))
    return a, b, c


def case_star_chain():
    """A chain a~b~c: components put c in a's group and drop it although c is
    not near the kept a; stars never drop a document that is not >= threshold
    similar (exactly) to the kept document of its group, whatever --keep."""
    a, b, c = chain_texts()
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in (("a", a), ("b", b), ("c", c), ("z", "unrelated text " * 20)):
            with open(os.path.join(tmp, name), "w") as f:
                f.write(text)
        names = [os.path.join(tmp, x) for x in "abcz"]
        p = run(names + ["--output", "pairs"])
        pairs = pairs_of(p)
        A, B, C = names[:3]
        check(set(pairs) == {(A, B), (B, C)}, "chain pairs: %s" % pairs, p)
        comp = run(names + ["--cluster", "components", "--output", "drop"]).stdout.decode()
        check(comp.split() == [B, C], "components drop b and c (c is not near a)")
        for keep, want_groups, want_drop in (
                ("first", [[A, B]], [B]),        # a keeps b; c is a group of one
                ("longest", [[A, B, C]], [A, C]),  # b is near both
                ("shortest", [[A, B]], [B])):
            args = names + ["--keep", keep]
            groups = [l.split("\t") for l in run(args).stdout.decode().splitlines()]
            check(groups == want_groups, "--keep %s groups %s" % (keep, groups))
            drop = run(args + ["--output", "drop"]).stdout.decode().split()
            kept = run(args + ["--output", "keep"]).stdout.decode().split()
            check(drop == want_drop, "--keep %s drop %s" % (keep, drop))
            check(sorted(drop + kept) == sorted(names), "--keep %s: keep + drop" % keep)
            # the guarantee: each dropped document is near a kept one of its group
            for d in drop:
                g = next(g for g in groups if d in g)
                k = [x for x in g if x in kept]
                check(len(k) == 1 and pairs.get(tuple(sorted((k[0], d)))) is not None,
                      "--keep %s dropped %s, not near the kept %s" % (keep, d, k))
        p = run(names + ["--cluster", "components", "--keep", "longest", "--output", "drop"])
        check(p.stdout.decode().split() == [A, C], "components --keep longest", p)


def case_second_pass():
    """The second pass reads documents again from every kind of input:
    files (plain and gzip), --lines plain, gzip and through a pipe, standard
    input as one document, --jsonl; the answer is the same, with exact
    similarities, as from plain lines."""
    import gzip
    docs = planted_docs(400, 3)
    with tempfile.TemporaryDirectory() as tmp:
        plain = os.path.join(tmp, "docs.txt")
        data = ("\n".join(docs) + "\n").encode()
        with open(plain, "wb") as f:
            f.write(data.replace(b"\n", b"\r\n", 5))  # a few CRLF lines
        gz = plain + ".gz"
        with gzip.open(gz, "wb") as f:
            f.write(data)
        ref = run(["--lines", plain, "--output", "pairs"])
        pairs = pairs_of(ref)
        check(len(pairs) > 20, "planted pairs found", ref)
        for (x, y), s in list(pairs.items())[:40]:
            want = jaccard(docs[int(x) - 1], docs[int(y) - 1])
            check(abs(s - want) < 0.002, "exact %s %s: %s, want %.4f" % (x, y, s, want), ref)
        check(b"by exact Jaccard" in ref.stderr, "the summary tells the exact verification", ref)
        for args, stdin in ((["--lines", gz], None), (["--lines", "-"], data),
                            (["--lines", "-"], gzip.compress(data))):
            p = run(args + ["--output", "pairs"], stdin=stdin)
            check(p.stdout == ref.stdout, "%s%s gives other pairs" % (
                " ".join(args), " (gzip)" if stdin and stdin[:2] == b"\x1f\x8b" else ""), p)
        # standard input as a regular file (read again from where it started)
        with open(plain, "rb") as f:
            p = subprocess.run([DEDUP, "--lines", "-", "--output", "pairs"], stdin=f,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
        check(p.returncode == 0 and p.stdout == ref.stdout, "--lines - < FILE", p)
        # files, plain and gzip, and "-" as one document
        d = os.path.join(tmp, "files")
        os.mkdir(d)
        for i, text in enumerate(docs[:120]):
            name = os.path.join(d, "%03d" % (i + 1))
            if i % 2:
                with gzip.open(name, "wb") as f:
                    f.write(text.encode())
            else:
                with open(name, "w") as f:
                    f.write(text)
        sub = run(["--lines", plain, "--output", "pairs"]).stdout.decode().splitlines()
        want = ["%03d\t%03d\t%s" % (int(a), int(b), s) for a, b, s in
                (l.split("\t") for l in sub) if int(b) <= 120]
        p = run([d, "--output", "pairs"])
        got = ["\t".join([os.path.basename(x) for x in l.split("\t")[:2]] + l.split("\t")[2:])
               for l in p.stdout.decode().splitlines()]
        check(got == want and want, "files give other pairs than lines", p)
        first = sorted(pairs)[0]
        one = docs[int(first[1]) - 1].encode()
        p = run([os.path.join(d, "%03d" % int(first[0])), "-", "--output", "pairs"], stdin=one)
        out = p.stdout.decode().split("\t")
        check(len(out) == 3 and out[1] == "-" and float(out[2]) == pairs[first],
              "- as one document: %s" % out, p)
        if JSON:
            jl = os.path.join(tmp, "docs.jsonl")
            with open(jl, "w") as f:
                for i, t in enumerate(docs):
                    f.write(json.dumps({"id": i + 1, "other": "x" * (i % 7), "text": t}) + "\n")
            p = run(["--jsonl", jl, "--output", "pairs"])
            check(p.stdout == ref.stdout, "--jsonl gives other pairs", p)
            with open(jl, "rb") as f:
                p = run(["--jsonl", "-", "--output", "pairs"], stdin=f.read())
            check(p.stdout == ref.stdout, "--jsonl - gives other pairs", p)


def case_verify_threads():
    """Every verify mode, every output: the same bytes for -j 1, 2 and 3."""
    docs = planted_docs(1200, 5)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "docs.txt")
        with open(path, "w") as f:
            f.write("\n".join(docs) + "\n")
        for verify in ("exact", "estimate", "none"):
            for out in ("pairs", "clusters", "drop"):
                for cluster in ("star", "components"):
                    base = ["--lines", path, "--verify", verify, "--output", out,
                            "--cluster", cluster, "--threshold", "0.7"]
                    ref = run(base + ["-j", "1"]).stdout
                    check(len(ref) > 0, "%s %s found something" % (verify, out))
                    for j in ("2", "3"):
                        got = run(base + ["-j", j]).stdout
                        check(got == ref, "--verify %s --output %s --cluster %s: -j %s differs"
                              " from -j 1" % (verify, out, cluster, j))


def case_verify_memory():
    """A tiny --verify-memory cuts the candidates into many batches, and
    components into blocks that are read more than once: the output stays
    the same."""
    docs = planted_docs(600, 9)
    # one large family: a component bigger than any batch
    for i in range(40):
        docs.append(docs[0] + " extra%d" % i)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "docs.txt")
        with open(path, "w") as f:
            f.write("\n".join(docs) + "\n")
        stats = {}
        outs = {}
        for mem in ("64M", "2K", "1"):
            for out in ("pairs", "clusters"):
                st = os.path.join(tmp, "stats-%s-%s.json" % (mem, out))
                outs[(mem, out)] = run(["--lines", path, "--output", out, "--verify-memory", mem,
                                        "--stats", st, "-j", "2"]).stdout
                with open(st) as f:
                    stats[(mem, out)] = json.load(f)["verification"]
        for mem in ("2K", "1"):
            for out in ("pairs", "clusters"):
                check(outs[(mem, out)] == outs[("64M", out)],
                      "--verify-memory %s changes --output %s" % (mem, out))
        # pairs: batches of whole components, cut when they do not fit
        big, tiny = stats[("64M", "pairs")], stats[("1", "pairs")]
        check(big["batches"] == 1 and tiny["batches"] > 10,
              "batches: %d and %d" % (big["batches"], tiny["batches"]))
        check(tiny["reads"] > big["reads"], "a cut component is read more than once")
        check(tiny["set_bytes_peak"] < big["set_bytes_peak"], "less held at once")
        check(big["bytes_per_shingle"] == 4 and big["estimated"] == 0 and
              big["exact"] == big["candidates"] > 0, "exact verification stats: %s" % big)
        # clusters: the star from the buckets asks for a batch of texts at a
        # time; one text a batch at the smallest budget, and a large centre's
        # candidates in parts, its set kept between them
        big, tiny = stats[("64M", "clusters")], stats[("1", "clusters")]
        check(tiny["batches"] > big["batches"] and tiny["batches"] >= 40,
              "star batches: %d and %d" % (big["batches"], tiny["batches"]))
        check(tiny["set_bytes_peak"] < big["set_bytes_peak"], "star: less held at once")
        check(big["estimated"] == 0 and big["exact"] == big["candidates"] > 0,
              "star verification stats: %s" % big)



def components_of_pairs(pairs, n):
    """Connected components (two or more) of the pairs, each sorted."""
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    for a, b in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups = {}
    for i in range(n):
        groups.setdefault(find(i), []).append(i)
    return sorted(g for g in groups.values() if len(g) > 1)


def star_of_pairs(pairs, priority):
    """The star groups of verified edges (simlsh_group_star's rule): ids
    visited in priority order, each unplaced one a centre that takes its
    unplaced neighbours. Groups of two or more, as simlsh-dedup lists
    them: ids ascending in a group, groups by their smallest id."""
    adj = {}
    for a, b in pairs:
        adj.setdefault(a, set()).add(b)
        adj.setdefault(b, set()).add(a)
    placed, groups = {}, []
    for x in priority:
        if x in placed or x not in adj:
            continue
        g = [x] + sorted(v for v in adj[x] if v not in placed)
        for v in g:
            placed[v] = x
        if len(g) > 1:
            groups.append(sorted(g))
    return sorted(groups)


def case_star_buckets():
    """Grouping outputs come from the index's buckets (the library's dedup
    engine), never from the list of all pairs: the groups are exactly the
    star over the verified pairs that --output pairs lists, in every verify
    mode and --keep order, on chains and families, on a heavy shape (one
    large group of near-copies among smaller ones) and on a template shared
    by many documents; --max-pairs never cuts them; -j changes nothing."""
    import random
    rng = random.Random(5)
    docs = planted_docs(400, 21)
    base = docs[1].split(" ")
    for size in (150, 30, 30, 5, 5, 5):
        text = [rng.choice(base) + "x%d" % rng.randrange(99) for _ in range(70)]
        for _ in range(size):
            t = list(text)
            for _ in range(rng.randint(0, 3)):
                t[rng.randrange(len(t))] = "w%d" % rng.randrange(10000)
            docs.insert(rng.randrange(len(docs) + 1), " ".join(t))
    tmpl = ["t%d" % rng.randrange(5000) for _ in range(80)]
    for _ in range(120):
        docs.append(" ".join(w if rng.random() < 0.85 else "v%d" % rng.randrange(10000)
                             for w in tmpl))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "docs.txt")
        with open(path, "w") as f:
            f.write("\n".join(docs) + "\n")
        size = {i: len(d.encode()) for i, d in enumerate(docs)}
        for verify in ("exact", "estimate", "none"):
            for keep in ("first", "shortest", "longest"):
                base_args = ["--lines", path, "--verify", verify, "--keep", keep]
                p = run(base_args + ["--output", "pairs", "--max-pairs", "0"])
                pairs = [tuple(int(x) - 1 for x in line.split("\t")[:2])
                         for line in p.stdout.decode().splitlines()]
                if keep == "first":
                    prio = sorted(size)
                elif keep == "shortest":
                    prio = sorted(size, key=lambda i: (size[i], i))
                else:
                    prio = sorted(size, key=lambda i: (-size[i], i))
                want = star_of_pairs(pairs, prio)
                check(len(want) > 10 and max(len(g) for g in want) > 100,
                      "the corpus has groups, a large one among them (%s)" % verify)
                c = run(base_args + ["--stats", os.path.join(tmp, "st.json")])
                got = sorted(sorted(int(x) - 1 for x in line.split("\t"))
                             for line in c.stdout.decode().splitlines())
                check(got == want, "--verify %s --keep %s: the groups are the star of the"
                      " verified pairs (%d groups, %d expected)" % (verify, keep, len(got),
                                                                     len(want)), c)
                with open(os.path.join(tmp, "st.json")) as f:
                    full = json.load(f)
                st = full["verification"]
                # --stats names the largest buckets: the group of 150
                # near-copies shares one in most bands
                big = full["buckets"]["largest"]
                check(len(big) == 5 and big[0]["size"] >= 100 and
                      all(big[i]["size"] >= big[i + 1]["size"] for i in range(4)) and
                      full["buckets"]["documents_in_large"] >= 100 and
                      full["grouping"]["bucket_visits"] >= st["candidates"],
                      "--stats buckets and grouping: %s %s" % (full["buckets"],
                                                               full["grouping"]), c)
                # a group of m copies costs about m checks, not m^2 / 2
                check(st["candidates"] < len(pairs) or len(pairs) < 200,
                      "fewer checks (%d) than pairs (%d)" % (st["candidates"], len(pairs)))
                drop = run(base_args + ["--output", "drop"]).stdout.decode().split()
                check(sorted(int(x) - 1 for x in drop) ==
                      sorted(x for g in want for x in g if x != min(g, key=prio.index)),
                      "--output drop: every member but the centre", c)
                # --max-pairs bounds --output pairs only
                cut = run(base_args + ["--max-pairs", "1"], expect=0)
                check(cut.stdout == c.stdout, "--max-pairs 1 cuts no group", cut)
                # components come from the buckets too: those of the pairs
                comp = run(base_args + ["--cluster", "components", "--max-pairs", "1",
                                        "--stats", os.path.join(tmp, "sc.json")])
                got_c = sorted(sorted(int(x) - 1 for x in line.split("\t"))
                               for line in comp.stdout.decode().splitlines())
                check(got_c == components_of_pairs(pairs, len(docs)),
                      "--verify %s --keep %s: components of the verified pairs" % (verify, keep),
                      comp)
                with open(os.path.join(tmp, "sc.json")) as f:
                    sc = json.load(f)["verification"]
                check(sc["candidates"] < len(pairs) or len(pairs) < 200,
                      "components: fewer checks (%d) than pairs (%d)" % (sc["candidates"],
                                                                       len(pairs)))
                run(base_args + ["--output", "pairs", "--max-pairs", "1"], expect=6)
                for j in ("1", "3"):
                    check(run(base_args + ["-j", j]).stdout == c.stdout,
                          "-j %s gives the same groups" % j)
        # the summary notes a bucket that holds a large share of the corpus
        p = run(["--lines", path])
        check(re.search(rb"note: one bucket \(band \d+\) holds \d+ documents", p.stderr),
              "the summary notes the large bucket", p)
        # in exact mode near-copies are decided from their edits
        check(re.search(rb"near-copies decided from their edits", p.stderr), "edits line", p)


def case_giant_buckets():
    """A template shared by most of a corpus makes giant buckets of unlike
    documents: --giant-buckets/--giant-cost set the largest aside (stats
    and a summary note say how many), their members meet through their
    other buckets, so the near-copies planted among them are still found
    and no wrong group appears; 0 keeps every bucket; bad values are usage
    errors."""
    import random
    rng = random.Random(11)
    tmpl = ["t%d" % rng.randrange(5000) for _ in range(150)]
    docs = [" ".join(w if rng.random() < 0.88 else "v%d" % rng.randrange(10000) for w in tmpl)
            for _ in range(500)]
    planted = []
    for i in range(0, 40, 2):  # near-copies of template documents
        words = docs[i].split(" ")
        words[len(words) // 2] = "edit%d" % i
        docs.insert(i + 1, " ".join(words))
        planted.append([i, i + 1])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "docs.txt")
        with open(path, "w") as f:
            f.write("\n".join(docs) + "\n")
        st = os.path.join(tmp, "st.json")
        outs = {}
        for args in ([], ["--giant-buckets", "0"], ["--giant-buckets", "40", "--giant-cost", "0"],
                     ["--giant-buckets", "40", "--giant-cost", "2"]):
            p = run(["--lines", path, "--stats", st] + args)
            got = sorted(sorted(int(x) - 1 for x in line.split("\t"))
                         for line in p.stdout.decode().splitlines())
            check(got == planted, "%s: the planted near-copies and nothing else (%d groups)"
                  % (args, len(got)), p)
            with open(st) as f:
                g = json.load(f)["grouping"]
            outs[tuple(args)] = (g, p)
        none, off, all_, some = (outs[k][0] for k in outs)
        check(none["buckets_set_aside"] == 0 and off["buckets_set_aside"] == 0,
              "a small corpus keeps its buckets by default: %s" % none)
        check(all_["buckets_set_aside"] >= 4 and
              all_["documents_in_set_aside"] > 40 * all_["buckets_set_aside"],
              "--giant-cost 0 sets the template's buckets aside: %s" % all_)
        check(0 < some["buckets_set_aside"] < all_["buckets_set_aside"],
              "a cost allowed keeps some: %s against %s" % (some, all_))
        check(all_["bucket_visits"] * 3 < none["bucket_visits"],
              "fewer looks: %s against %s" % (all_, none))
        p = outs[("--giant-buckets", "40", "--giant-cost", "0")][1]
        check(re.search(rb"note: \d+ buckets of unlike documents \(\d+ members in all\) set"
                        rb" aside", p.stderr), "the summary says what was set aside", p)
        check(b"set aside" not in outs[()][1].stderr, "no note when nothing is", outs[()][1])
        for bad in (["--giant-cost", "-1"], ["--giant-cost", "x"], ["--giant-buckets", "-3"],
                    ["--giant-buckets", "many"]):
            p = run(["--lines", path] + bad, expect=2)
            check(bad[0].encode() in p.stderr, "%s: says which option" % bad, p)


def case_reread_cache():
    """Files read again by the exact pass are kept for the next batches (a
    compressed page of a generated manual is asked for by several): the
    groups are the same whatever the batch size, and --stats counts the
    texts handed over again from memory."""
    import gzip
    import random
    rng = random.Random(4)
    tmpl = ["m%d" % rng.randrange(3000) for _ in range(120)]
    with tempfile.TemporaryDirectory() as tmp:
        d = os.path.join(tmp, "man")
        os.mkdir(d)
        for i in range(160):
            words = [w if rng.random() < 0.9 else "u%d" % rng.randrange(9999) for w in tmpl]
            if i % 4 == 1:  # a near-copy of the one before
                words = prev[:]
                words[rng.randrange(len(words))] = "edit%d" % i
            prev = words
            with gzip.open(os.path.join(d, "page%03d.1.gz" % i), "wt") as f:
                f.write(" ".join(words))
        st = os.path.join(tmp, "st.json")
        outs = []
        for mem in ("4K", "64K", "1G"):
            p = run([d, "--verify-memory", mem, "--stats", st])
            with open(st) as f:
                v = json.load(f)["verification"]
            outs.append((p.stdout, v))
        check(outs[0][0] == outs[1][0] == outs[2][0] and outs[0][0].count(b"\n") >= 30,
              "the same groups for any batch size")
        small = outs[1][1]  # 64K: room for some pages
        check(small["batches"] > 10 and small["reads_from_memory"] > 0 and
              small["reads_from_memory"] < small["reads"],
              "small batches: some texts handed over again from memory: %s" % small)


def case_large_copies():
    """Many copies of a large text (ATTACKS-round4 F5): each text is read
    once, the copies are decided as identical to their group's kept text
    without shingling, a few edited copies from their edits, and
    --verify-memory changes nothing but the batches."""
    import random
    rng = random.Random(2)
    text = " ".join("w%d" % rng.randrange(5000) for _ in range(60000))[:300 << 10]
    with tempfile.TemporaryDirectory() as tmp:
        d = os.path.join(tmp, "s")
        os.mkdir(d)
        for i in range(40):
            t = text
            if i >= 35:  # a few words changed in the middle
                at = len(t) // 2 + 1000 * i
                t = t[:at] + " edited%d " % i + t[at + 20:]
            with open(os.path.join(d, "f%02d.txt" % i), "w") as f:
                f.write(t)
        st = os.path.join(tmp, "st.json")
        p = run(["-q", d, "--stats", st])
        check(len(p.stdout.splitlines()) == 1 and p.stdout.count(b"\t") == 39,
              "one group of the 40 texts", p)
        with open(st) as f:
            full = json.load(f)
        g, v = full["grouping"], full["verification"]
        check(g["identical"] == 34 and g["from_edits"] == 5, "decided without shingling: %s" % g)
        check(v["reads"] == 40, "every text read once: %s" % v)
        for mem in ("4G", "1"):
            q = run(["-q", d, "--verify-memory", mem])
            check(q.stdout == p.stdout, "--verify-memory %s: the same group" % mem, q)


def case_verify_index():
    """Documents from --index cannot be read again: their pairs are decided
    by the MinHash estimate, and the summary says so. New pairs are exact."""
    docs = planted_docs(200, 13)
    with tempfile.TemporaryDirectory() as tmp:
        old = os.path.join(tmp, "old.txt")
        new = os.path.join(tmp, "new.txt")
        with open(old, "w") as f:
            f.write("\n".join(docs[:100]) + "\n")
        with open(new, "w") as f:
            f.write("\n".join(docs[100:]) + "\n")
        idx = os.path.join(tmp, "ix")
        run(["--lines", old, "--save-index", idx, "-q"])
        st = os.path.join(tmp, "st.json")
        p = run(["--index", idx, "--lines", new, "--output", "pairs", "--stats", st])
        with open(st) as f:
            v = json.load(f)["verification"]
        check(v["estimated"] > 0 and v["exact"] > 0, "estimated and exact pairs: %s" % v, p)
        check(b"decided by estimate: pairs with a document from --index" in p.stderr,
              "the summary says which pairs were estimated", p)
        drop = run(["--index", idx, "--lines", new, "--output", "drop"]).stdout.decode().split()
        check(drop and all(d.startswith(new + ":") for d in drop), "only new documents dropped")


def case_verify_fallback():
    """Standard input that cannot be spooled (no usable $TMPDIR) is still
    read once: its pairs are decided by estimate, with a warning per
    document and a line in the summary, as --verify estimate would."""
    docs = planted_docs(120, 17)
    data = ("\n".join(docs) + "\n").encode()
    env = dict(os.environ, TMPDIR="/nonexistent/simlsh-test")
    p = subprocess.run([DEDUP, "--lines", "-", "--output", "pairs"], input=data, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    check(p.returncode == 0, "exit status without a spool", p)
    check(b"cannot create a temporary file" in p.stderr and
          b"decided by estimate: documents that could not be read again" in p.stderr,
          "the fallback is reported", p)
    est = run(["--lines", "-", "--output", "pairs", "--verify", "estimate", "--bands", "16",
               "--rows", "6"], stdin=data)
    check(p.stdout == est.stdout and p.stdout, "the fallback decides as the estimate", p)

def run_ranges(args, range_bytes=None, expect=0):
    """run() with the range size of line files set (an undocumented variable
    that only tests use: small ranges put range boundaries everywhere)."""
    env = dict(os.environ)
    env.pop("SIMLSH_DEDUP_RANGE_BYTES", None)
    if range_bytes is not None:
        env["SIMLSH_DEDUP_RANGE_BYTES"] = str(range_bytes)
    proc = subprocess.run([DEDUP] + [str(a) for a in args], env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    if expect is not None and proc.returncode != expect:
        fail("expected exit %d, got %d" % (expect, proc.returncode), proc)
    return proc


def messages(proc, drop=("documents (",)):
    """stderr without the summary lines (they hold times and the -j)."""
    out = []
    for line in proc.stderr.decode(errors="replace").splitlines():
        if any(d in line for d in drop) or " threads" in line or " thread," in line \
                or line.endswith(" thread") or "contract:" in line \
                or line.startswith(("simlsh-dedup: banding:", "simlsh-dedup: verify ")):
            continue
        out.append(line[len("simlsh-dedup: "):] if line.startswith("simlsh-dedup: ") else line)
    return out


def parallel_corpus(rng, n=1200):
    """Lines of words with planted near-copies, blank lines, CRLF ends and
    lines too long for --max-doc-bytes 400, as bytes (no final newline)."""
    words = ["w%03d" % i for i in range(300)]
    docs, lines = [], []
    for i in range(n):
        r = rng.random()
        if r < 0.03:
            lines.append(b"")
        elif r < 0.05:
            lines.append(b"x" * rng.randint(401, 1500))
        elif r < 0.15 and docs:
            base = docs[rng.randrange(len(docs))].split(b" ")
            base[rng.randrange(len(base))] = b"changed"
            docs.append(b" ".join(base))
            lines.append(docs[-1] + (b"\r" if r < 0.07 else b""))
        else:
            docs.append(b" ".join(rng.choice(words).encode() for _ in range(rng.randint(8, 60))))
            lines.append(docs[-1])
    return b"\n".join(lines)


def case_parallel_inputs():
    """Issue 17: line files are read by byte ranges in the workers, and
    signed documents inserted in threaded batches; output, messages and the
    saved index are byte-identical for -j 1, 2, 3, 16 and any range size,
    for pairs and clusters in every verify mode, and equal to what the
    sequential reader (a gzip copy of the same lines) gives."""
    import gzip
    import random
    rng = random.Random(17)
    with tempfile.TemporaryDirectory() as tmp:
        data = parallel_corpus(rng)
        plain = os.path.join(tmp, "c.txt")
        with open(plain, "wb") as f:
            f.write(data)
        sources = [("lines", ["--lines", plain], [None, 997])]
        if ZLIB:
            gz = os.path.join(tmp, "c.txt.gz")
            with open(gz, "wb") as f:
                f.write(gzip.compress(data))
            sources.append(("gzip", ["--lines", gz], [None]))
        if JSON:
            js = os.path.join(tmp, "c.jsonl")
            with open(js, "wb") as f:
                for i, line in enumerate(data.split(b"\n")):
                    if i % 97 == 5:
                        f.write(b"{not json\n")
                    elif i % 89 == 7:
                        f.write(b"  \n")
                    else:
                        f.write(json.dumps({"id": i, "text": line.decode()}).encode() + b"\n")
            sources.append(("jsonl", ["--jsonl", js], [997]))
        d = os.path.join(tmp, "files")
        os.mkdir(d)
        for i, line in enumerate(data.split(b"\n")[:300]):
            with open(os.path.join(d, "f%04d.txt" % i), "wb") as f:
                f.write(line)
        sources.append(("files", [d], [None]))
        plain_ref = {}
        for kind, src, sizes in sources:
            for output in ("pairs", "clusters"):
                for verify in ("none", "estimate", "exact"):
                    if verify != "estimate" and kind not in ("lines", "jsonl"):
                        continue
                    ref = None
                    for size in sizes:
                        for j in ("1", "2", "3", "16"):
                            idx = os.path.join(tmp, "i.idx")
                            p = run_ranges(src + ["--max-doc-bytes", "400", "--output", output,
                                                  "--verify", verify, "-j", j,
                                                  "--save-index", idx], size)
                            with open(idx, "rb") as f:
                                got = (p.stdout, messages(p), f.read())
                            if ref is None:
                                ref = got
                                check(len(p.stdout) > 0, "%s %s: duplicates found" % (kind, output),
                                      p)
                                if kind == "lines":
                                    plain_ref[(output, verify)] = got
                                continue
                            what = "%s %s verify %s range %s -j %s" % (kind, output, verify, size, j)
                            check(got[0] == ref[0], what + ": output differs", p)
                            check(got[1] == ref[1], what + ": messages differ", p)
                            check(got[2] == ref[2], what + ": saved index differs", p)
                    if kind == "gzip":
                        # the sequential reader names the same lines the same way
                        # (FILE:LINE, as every --save-index run names them)
                        want = plain_ref[(output, verify)]
                        check(ref[0].replace(gz.encode(), plain.encode()) == want[0],
                              "gzip %s output differs from plain" % output)
                        check([m.replace(gz, plain) for m in ref[1]] == want[1],
                              "gzip %s messages differ from plain" % output)


def case_range_boundaries():
    """Line numbers in messages, --skipped, names and --output records are
    right when range boundaries fall anywhere: before, inside and just after
    bad lines, inside long lines, on blank lines and on CRLF ends."""
    import random
    rng = random.Random(5)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "b.txt")
        words = ["v%02d" % i for i in range(60)]
        lines, expect = [], []
        for i in range(1, 400):
            r = rng.random()
            if r < 0.05 and [x for x in lines if len(x) > 20 and not x.startswith(b"y")]:
                # a planted copy (CR or not), so that there are pairs
                lines.append(rng.choice([x for x in lines if len(x) > 20
                                         and not x.startswith(b"y")]).rstrip(b"\r"))
            elif r < 0.1:
                lines.append(b"")
                expect.append("%s:%d: empty document, skipped" % (path, i))
            elif r < 0.2:
                lines.append(b"y" * rng.randint(121, 700))
                expect.append("%s:%d: line longer than --max-doc-bytes, skipped" % (path, i))
            else:
                text = " ".join(rng.choice(words) for _ in range(rng.randint(3, 12))).encode()
                lines.append(text + (b"\r" if r < 0.3 else b""))
        data = b"\n".join(lines) + b"\n"
        with open(path, "wb") as f:
            f.write(data)
        ref = None
        for size in (1, 2, 63, 64, 120, 121, 500, len(data) - 1, len(data), None):
            for j in ("1", "2", "3"):
                skipped = os.path.join(tmp, "skipped")
                p = run_ranges(["--lines", path, "--max-doc-bytes", "120", "-j", j,
                                "--output", "pairs", "--skipped", skipped], size)
                what = "range %s -j %s" % (size, j)
                check(messages(p) == expect, what + ": skip messages and their lines", p)
                with open(skipped) as f:
                    listed = [l.split("\t")[0] for l in f.read().splitlines()]
                check(listed == [m.split(": ")[0] for m in expect], what + ": --skipped", p)
                if ref is None:
                    ref = p.stdout
                    check(len(p.stdout) > 0, "pairs found", p)
                    # names are line numbers: each pair is two lines of equal text
                    for row in p.stdout.decode().splitlines():
                        a, b = (int(x) for x in row.split("\t")[:2])
                        check(lines[a - 1].rstrip(b"\r") != b"" and lines[b - 1] != b"",
                              what + ": a pair names a blank line", p)
                check(p.stdout == ref, what + ": pairs differ", p)
        if JSON:
            js = os.path.join(tmp, "b.jsonl")
            recs, expect = [], []
            for i in range(1, 300):
                r = rng.random()
                if r < 0.1:
                    recs.append(b"{broken")
                    expect.append("%s:%d: invalid JSON" % (js, i))
                elif r < 0.15:
                    recs.append(b"   ")  # tolerated, still counted as a line
                else:
                    text = " ".join(rng.choice(words[:8]) for _ in range(rng.randint(3, 12)))
                    recs.append(json.dumps({"id": "r%d" % i, "text": text}).encode())
            with open(js, "wb") as f:
                f.write(b"\n".join(recs) + b"\n")
            ref = None
            for size in (1, 37, 64, 500, None):
                for j in ("1", "3"):
                    p = run_ranges(["--jsonl", js, "-j", j, "--output", "records"], size)
                    got = [m.split(": invalid JSON")[0] + ": invalid JSON" for m in messages(p)]
                    check(got == expect, "jsonl range %s -j %s: messages" % (size, j), p)
                    for line in p.stdout.splitlines():
                        check(line in recs, "records are input lines", p)
                    if ref is None:
                        ref = p.stdout
                        check(len(ref) > 0, "records written", p)
                    check(p.stdout == ref, "jsonl range %s -j %s: records differ" % (size, j), p)


def case_jsonl_fast_path():
    """JSONL records are read by a one-pass reader that hands anything
    unusual to jansson: ids, texts, messages, the saved index and records
    are those of jansson alone (SIMLSH_DEDUP_JSON_SLOW=1, a test switch),
    on records that exercise escapes, surrogates, numbers, nesting,
    duplicate keys, bad UTF-8 and invalid JSON."""
    if not JSON:
        refuses_jsonl(["--jsonl", os.path.join(SAMPLE, "x.jsonl")])
        sys.exit(SKIP)
    base = "the harbour master logged %s ships at dawn and %s more before noon"
    texts = [base % (a, b) for a in ("three", "four") for b in ("two", "five")]
    recs = []
    def t(i):
        return json.dumps(texts[i % len(texts)])[1:-1]
    for i, tmpl in enumerate([
            '{"id":%d,"text":"%s"}', '{"id": %d , "text" : "%s" }  ', '\t{"id":%d,"text":"%s"}\r',
            '{"id":"s%d","text":"%s\\n\\t\\"q\\" \\\\ \\/ \\b\\f\\r"}',
            '{"id":"\\u00e9%d","text":"%s \\u00e9\\u20ac \\ud83d\\ude00"}',
            '{"id":%d,"text":"%s \\ud800 lone"}', '{"id":%d,"text":"%s \\udc00 lone"}',
            '{"id":%d,"text":"%s \\u0000 nul"}', '{"id":"a\\u0000%d","text":"%s"}',
            '{"id":-0,"text":"%s","n":%d}', '{"id":0%d,"text":"%s"}', '{"id":%d.0,"text":"%s"}',
            '{"id":%de3,"text":"%s"}', '{"id":99999999999999999999%d,"text":"%s"}',
            '{"id":12345678901234567%d,"text":"%s"}', '{"id":-1234567890123456789,"t%d":0,"text":"%s"}',
            '{"id":%d,"text":"x","text":"%s"}', '{"id":%d,"text":"%s","text":7}',
            '{"id":%d,"text":7,"text":"%s"}', '{"id":"a","id":%d,"text":"%s"}',
            '{"meta":{"a":[1,-2.5,{"b":null}],"c":true,"d":false,"e":"\\u00e9"},"id":%d,"text":"%s"}',
            '{"id":%d,"text":"%s","deep":' + "[" * 100 + "]" * 100 + '}',
            '{"id":%d,"text":"%s"} x', '{"id":%d,"text":"%s",}', '{"id":%d,"text":"%s"',
            '{"id":%d}%s', '{"text":"%s%d"}', '{"id":%d,"text":null,"x":"%s"}', '{"id":true,"t%d":"%s"}',
            '[%d,"%s"]', '"%d%s"', '{"te\\u0078t":"%s","id":%d}', '{"id":%d,"text":"%s","big":1e400}',
            '{"id":%d,"text":"%s","f":-0.5,"g":1E5,"h":0.1e-3}', '{"id":%d,"text":"%s","k\\u00e9y":1}',
            '{"id":%d,"text":"%s\x01"}', '{"id":%d,"text":"%s\tx"}', '{}%d%s', '{"id":%d,"text":"%s"}{}',
            '{"id":%d , , "text":"%s"}', '{"id":%d,"text":"%s\\x"}', '{"id":%d,"text":"%s\\u12g4"}',
            '{"id":-%d,"text":"%s"}', '{"id":- %d,"text":"%s"}', '{"id":%d,"text":"%s","a":tru}',
            '{"id":%d,"text":"%s","a":[1,]}', '{"id":%d,"text":"%s","é":"ü"}']):
        if tmpl.count("%") == 2 and tmpl.index("%s") < tmpl.index("%d"):
            line = tmpl % (t(i), i)
        elif "%d" in tmpl and "%s" in tmpl:
            line = tmpl % (i, t(i))
        else:
            line = tmpl
        recs.append(line.encode())
    recs.append(b'{"id":%d,"text":"%s \xff bad"}' % (900, t(0).encode()))
    recs.append(b'{"id":%d,"text":"%s \xc0\xaf overlong"}' % (901, t(1).encode()))
    recs.append(b'{"id":%d,"text":"%s \xed\xa0\x80 surrogate"}' % (902, t(2).encode()))
    recs.append(b'{"id":"\xc3\xa9t\xc3\xa9","text":"%s caf\xc3\xa9"}' % t(3).encode())
    with tempfile.TemporaryDirectory() as tmp:
        js = os.path.join(tmp, "t.jsonl")
        with open(js, "wb") as f:
            f.write(b"\n".join(recs) + b"\n")
        for extra in (["--output", "pairs", "--format", "jsonl"], ["--output", "records"],
                      ["--output", "clusters", "--id-field", "-", "--normalize", "none"]):
            got = {}
            for slow in (False, True):
                env = dict(os.environ)
                env.pop("SIMLSH_DEDUP_JSON_SLOW", None)
                if slow:
                    env["SIMLSH_DEDUP_JSON_SLOW"] = "1"
                idx = os.path.join(tmp, "i%d.idx" % slow)
                p = subprocess.run([DEDUP, "--jsonl", js, "--save-index", idx, "-j", "2"] + extra,
                                   env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   timeout=120)
                with open(idx, "rb") as f:
                    got[slow] = (p.returncode, p.stdout, messages(p), f.read(), b"")
            what = " ".join(extra)
            check(got[False][0] == got[True][0], what + ": exit status")
            check(len(got[True][1]) > 0, what + ": some output")
            check(got[False][1] == got[True][1], what + ": output differs from jansson's")
            check(got[False][2] == got[True][2], what + ": messages differ from jansson's:\n%s\n%s"
                  % ("\n".join(got[False][2]), "\n".join(got[True][2])))
            # the one-file index holds the names too
            check(got[False][3] == got[True][3], what + ": index or names differ from jansson's")


def case_stats_threads():
    """--stats gives the CPU seconds of the main thread and of each worker,
    which with the library's threads add up to the process's, and splits
    the read phase; with -j 1 there are no workers."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "c.txt")
        import random
        with open(path, "wb") as f:
            f.write(parallel_corpus(random.Random(3), 600))
        for j in (1, 3):
            st = os.path.join(tmp, "s.json")
            p = run_ranges(["--lines", path, "-j", j, "--stats", st, "--max-doc-bytes", "400"], 4096)
            with open(st) as f:
                d = json.load(f)
            tc, rp = d["thread_cpu_seconds"], d["read_phase"]
            check(len(tc["workers"]) == (0 if j == 1 else j), "-j %d: one figure per worker" % j, p)
            parts = [tc["main"], tc["library_threads"]] + tc["workers"]
            check(all(x >= 0 for x in parts), "CPU seconds are not negative", p)
            check(abs(sum(parts) - tc["process"]) < 0.01, "threads add up to the process", p)
            check(tc["main"] > 0 and tc["process"] >= tc["main"], "main thread's CPU", p)
            for key in ("reading_cpu_seconds", "signing_cpu_seconds", "inserting_wall_seconds",
                        "inserting_main_cpu_seconds", "waiting_wall_seconds",
                        "main_cpu_seconds_at_end"):
                check(rp[key] >= 0, "read_phase " + key, p)
            check(rp["signing_cpu_seconds"] > 0, "signing took CPU", p)
            check(rp["main_cpu_seconds_at_end"] <= tc["main"] + 1e-6, "main CPU grows", p)
            if j == 1:
                check(rp["waiting_wall_seconds"] == 0, "-j 1 never waits for a worker", p)


CASES = {name[5:].replace("_", "-"): fn for name, fn in globals().items()
         if name.startswith("case_")}
if CASE not in CASES:
    sys.exit("unknown case %s; one of %s" % (CASE, " ".join(sorted(CASES))))
CASES[CASE]()
print("ok", CASE)
