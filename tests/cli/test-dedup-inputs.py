#!/usr/bin/env python3
"""Inputs read whole or loudly, and names that stay the same from run to
run (issue 31: F7-F12, F14 of ATTACKS-round4): simlsh-dedup end to end.

Usage: test-dedup-inputs.py SIMLSH-DEDUP CASE [FEATURES]
FEATURES is the comma list of tests/cli/test-dedup.py (json|no-json,
zlib|no-zlib, zstd|no-zstd); a case whose every part needs a missing
library reports SKIP (exit 77). Each CASE is one meson test
(tests/cli/meson.build); see the functions below. Every random choice comes
from a fixed seed, and no case asserts a time.
"""
import gzip
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import threading

DEDUP, CASE = os.path.abspath(sys.argv[1]), sys.argv[2]
FEATURES = set((sys.argv[3] if len(sys.argv) > 3 else "json,zlib,zstd").split(","))
JSON, ZLIB, ZSTD = "json" in FEATURES, "zlib" in FEATURES, "zstd" in FEATURES
SKIP = 77


def fail(msg, proc=None):
    if proc is not None:
        sys.stderr.write("--- command: %s\n--- exit %d\n--- stdout:\n%s\n--- stderr:\n%s\n" % (
            " ".join(map(str, proc.args)), proc.returncode,
            proc.stdout.decode(errors="replace")[:4000] if proc.stdout else "",
            proc.stderr.decode(errors="replace")[:4000] if proc.stderr else ""))
    sys.exit("FAIL: " + msg)


def check(cond, msg, proc=None):
    if not cond:
        fail(msg, proc)


def run(args, expect=0, stdin=None, cwd=None, pass_fds=()):
    p = subprocess.run([DEDUP] + [str(a) for a in args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, input=stdin, cwd=cwd, pass_fds=pass_fds,
                       timeout=120)
    if expect is not None and p.returncode != expect:
        fail("expected exit %d, got %d" % (expect, p.returncode), p)
    return p


def stats(path):
    with open(path) as f:
        return json.load(f)


def index_names(path):
    """The names in a saved index's user data (docs/format-index.md)."""
    with open(path, "rb") as f:
        data = f.read()
    at = data.rfind(b"SLDDUP\0\1")
    check(at > 0, "%s: no simlsh-dedup user data" % path)
    np_, _ = struct.unpack_from("<II", data, at + 8)
    pos = at + 16 + 16 * np_
    count, = struct.unpack_from("<Q", data, pos)
    pos += 8
    names = []
    for _ in range(count):
        _, _, _, ln = struct.unpack_from("<QqBI", data, pos)
        pos += 21
        names.append(data[pos:pos + ln].decode(errors="surrogateescape"))
        pos += ln
    return names


def texts(seed, n, dup_every=0):
    """n lines of 40 random words; with dup_every, every dup_every-th line
    repeats the one before (planted pairs)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if dup_every and i % dup_every == dup_every - 1:
            out.append(out[-1])
        else:
            out.append(" ".join("w%d" % rng.randrange(3000) for _ in range(40)))
    return out


def zstd_raw(data):
    """A zstd frame of raw blocks, written by hand (RFC 8878), as in
    tests/cli/test-dedup.py: the test needs no zstd module."""
    out = bytearray(b"\x28\xb5\x2f\xfd\xa0") + len(data).to_bytes(4, "little")
    chunks = [data[i:i + 65536] for i in range(0, len(data), 65536)] or [b""]
    for i, c in enumerate(chunks):
        out += ((len(c) << 3) | (i == len(chunks) - 1)).to_bytes(3, "little") + c
    return bytes(out)


def zstd_rle(byte, nblocks):
    """A zstd frame of nblocks RLE blocks of 128 KiB: 4 bytes each, a ratio
    of 32768:1 (a compression bomb)."""
    out = bytearray(b"\x28\xb5\x2f\xfd\x00\x58")  # no content size; 2^21 window
    for i in range(nblocks):
        out += (((1 << 17) << 3) | (1 << 1) | (i == nblocks - 1)).to_bytes(3, "little")
        out.append(byte)
    return bytes(out)


# ---------------------------------------------------------------------------
# F7: the names a first --save-index run gives are those of later runs


def case_names_reindex():
    """Each input kind, run again over the same input against its own saved
    index: no new document, no pair, nothing added; --replace re-signs
    every document and the index keeps its size (it doubled for --lines:
    "1" then "FILE:1"); --remove FILE:N finds the line."""
    with tempfile.TemporaryDirectory() as tmp:
        lines = texts(7, 60, dup_every=10)
        lf = os.path.join(tmp, "t.lines")
        with open(lf, "w") as f:
            f.write("\n".join(lines) + "\n")
        d = os.path.join(tmp, "docs")
        os.mkdir(d)
        for i, t in enumerate(lines[:20]):
            with open(os.path.join(d, "f%02d.txt" % i), "w") as f:
                f.write(t)
        kinds = [("files", [d]), ("lines", ["--lines", lf])]
        if ZLIB:
            gz = os.path.join(tmp, "t.lines.gz")
            with open(gz, "wb") as f:
                f.write(gzip.compress(open(lf, "rb").read()))
            kinds.append(("lines-gzip", ["--lines", gz]))
        if JSON:
            jf = os.path.join(tmp, "t.jsonl")
            with open(jf, "w") as f:
                for i, t in enumerate(lines):
                    f.write(json.dumps({"id": "r%d" % i, "text": t}) + "\n")
            kinds.append(("jsonl", ["--jsonl", jf]))
            kinds.append(("jsonl-by-line", ["--jsonl", jf, "--id-field", "-"]))
        for kind, src in kinds:
            idx = os.path.join(tmp, kind + ".idx")
            st = os.path.join(tmp, kind + ".json")
            first = run(src + ["-q", "--save-index", idx, "--output", "pairs"])
            saved = index_names(idx)
            check(len(saved) > 0 and len(set(saved)) == len(saved), kind + ": distinct names")
            p = run(src + ["-q", "--index", idx, "--save-index", idx, "--output", "pairs",
                           "--stats", st])
            check(p.stdout == b"", kind + ": a re-run reports no new pair", p)
            s = stats(st)
            check(s["documents"] == 0 and s["already_indexed"] == len(saved),
                  kind + ": every document already indexed: %s" % s, p)
            check(index_names(idx) == saved, kind + ": the index is unchanged", p)
            p = run(src + ["-q", "--index", idx, "--save-index", idx, "--replace", "--output",
                           "pairs", "--stats", st])
            check(stats(st)["replaced"] == len(saved), kind + ": --replace re-signs all", p)
            check(sorted(index_names(idx)) == sorted(saved),
                  kind + ": --replace keeps the index's size and names", p)
            # the pairs of the first run are the pairs of a fresh --index run
            # that indexes the same input anew (the names agree)
            check(first.stdout != b"", kind + ": the corpus plants pairs", first)
            if kind.startswith("lines"):
                name = "%s:3" % src[1]
                check(name in saved, kind + ": FILE:LINE names from the first run")
                p = run(["-q", "--index", idx, "--save-index", idx, "--remove", name])
                check(b"not in" not in p.stderr and name not in index_names(idx),
                      kind + ": --remove FILE:N", p)


def case_names_legacy():
    """An index whose line documents are named by number alone ("1"), as a
    first --save-index run named them before, gets a warning with --lines
    (its lines cannot match FILE:LINE); one saved now does not."""
    with tempfile.TemporaryDirectory() as tmp:
        lf = os.path.join(tmp, "t.lines")
        with open(lf, "w") as f:
            f.write("\n".join(texts(2, 5)) + "\n")
        idx = os.path.join(tmp, "t.idx")
        # the old names, made with --id-field - on a JSONL copy (a single
        # JSONL input still names its lines by number)
        if JSON:
            jf = os.path.join(tmp, "t.jsonl")
            with open(jf, "w") as f:
                for t in texts(2, 5):
                    f.write(json.dumps({"text": t}) + "\n")
            run(["-q", "--save-index", idx, "--jsonl", jf, "--id-field", "-"])
            check(index_names(idx)[0] == "1", "numbered names")
            p = run(["-q", "--index", idx, "--lines", lf])
            check(b"warning: " + idx.encode() + b" holds documents named by a line number alone"
                  in p.stderr, "the warning", p)
        run(["-q", "--save-index", idx, "--lines", lf])
        p = run(["-q", "--index", idx, "--lines", lf])
        check(b"warning" not in p.stderr, "no warning for an index saved now", p)


# ---------------------------------------------------------------------------
# F8: --threshold with --index


def case_threshold_index():
    """--threshold (and the weights) other than the saved value with
    --index is a usage error, as docs/cli.md says; nothing is read or
    saved, and the saved value is still the one later runs use. The same
    value is accepted."""
    with tempfile.TemporaryDirectory() as tmp:
        a, z = os.path.join(tmp, "a.txt"), os.path.join(tmp, "z.txt")
        with open(a, "w") as f:
            f.write("alpha beta gamma delta epsilon zeta eta theta\n")
        with open(z, "w") as f:
            f.write("unrelated words here\n")
        idx = os.path.join(tmp, "t.idx")
        run(["-q", "--save-index", idx, a])
        before = open(idx, "rb").read()
        for opt, val in (("--threshold", "0.5"), ("--fp-weight", "0.4"), ("--fn-weight", "0.3")):
            p = run(["-q", "--index", idx, opt, val, "--save-index", idx, z], expect=2)
            err = p.stderr.decode()
            check(("%s %s" % (opt, val)) in err and "was built with" in err,
                  opt + ": the message names the option and the saved value", p)
            check(open(idx, "rb").read() == before, opt + ": the index is not saved", p)
        st = os.path.join(tmp, "s.json")
        run(["-q", "--index", idx, "--threshold", "0.8", "--stats", st, z])
        check(stats(st)["params"]["threshold"] == 0.8, "the saved threshold applies")


# ---------------------------------------------------------------------------
# F9: names of any length


def case_long_names():
    """--lines names of a 700-byte path are never cut: 200 lines give 200
    names, a line appended later is new (it was "already indexed" when the
    names collided at 599 bytes), and --skipped names a bad line in full."""
    with tempfile.TemporaryDirectory() as tmp:
        deep = os.path.join(tmp, *(["d" * 95] * 8))
        os.makedirs(deep)
        f = os.path.join(deep, "c.lines")
        check(len(f) > 700, "a long path")
        lines = texts(1, 200)
        with open(f, "w") as fh:
            fh.write("\n".join(lines) + "\n")
        idx = os.path.join(tmp, "l.idx")
        run(["-q", "--save-index", idx, "--lines", f])
        names = index_names(idx)
        check(names == ["%s:%d" % (f, i + 1) for i in range(200)], "200 full names")
        with open(f, "a") as fh:
            fh.write("a brand new line that is in no index yet\n\n" +
                     "x" * 500 + "\n")
        st = os.path.join(tmp, "s.json")
        sk = os.path.join(tmp, "skipped.tsv")
        run(["-q", "--index", idx, "--save-index", idx, "--lines", f, "--stats", st,
             "--skipped", sk, "--max-doc-bytes", "400"])
        s = stats(st)
        check(s["documents"] == 1 and s["already_indexed"] == 200, "the new line is new: %s" % s)
        check(index_names(idx)[-1] == "%s:201" % f, "its name")
        with open(sk) as fh:
            check("\n%s:203\tline longer" % f in fh.read(), "--skipped names the long line in full")


# ---------------------------------------------------------------------------
# F10: truncated or corrupt compressed line input


def cut_cases(tmp, data):
    """(label, path) of damaged compressed copies of data."""
    out = []
    if ZLIB:
        gz = gzip.compress(data)
        for label, blob in (("trunc.gz", gz[:len(gz) // 2]),
                            ("flip.gz", gz[:len(gz) // 2] + bytes([gz[len(gz) // 2] ^ 0xff]) +
                             gz[len(gz) // 2 + 1:]),
                            ("nocrc.gz", gz[:-6])):
            out.append((label, blob))
    if ZSTD:
        z = zstd_raw(data)
        out.append(("trunc.zst", z[:len(z) // 2]))
    paths = []
    for label, blob in out:
        p = os.path.join(tmp, label)
        with open(p, "wb") as f:
            f.write(blob)
        paths.append((label, p))
    return paths


def case_compressed_cut():
    """A truncated or corrupt .gz/.zst --lines or --jsonl input never exits
    0: status 6 (the answer is incomplete), a message with the file, the
    compressed offset and the last line, inputs_cut in --stats; the lines
    before stay documents. --strict makes it exit 3. An intact input still
    exits 0."""
    if not (ZLIB or ZSTD):
        sys.exit(SKIP)
    with tempfile.TemporaryDirectory() as tmp:
        lines = texts(3, 2000)
        data = ("\n".join(lines) + "\n").encode()
        for label, path in cut_cases(tmp, data):
            st = os.path.join(tmp, "s.json")
            p = run(["--lines", path, "--stats", st, "-o", os.path.join(tmp, "o.tsv")],
                    expect=None)
            err = p.stderr.decode()
            check("%s: " % path in err and "at compressed byte " in err and "after line" in err,
                  label + ": the message names the file and the offset", p)
            s = stats(st)
            # 6, or 5 when the damage came before the first line was given
            # out (a gzip member is checked at its end)
            check(p.returncode == (6 if s["documents"] else 5) and s["inputs_cut"] == 1 and
                  s["documents"] <= 2000, label + ": %s" % s, p)
            check(label != "trunc.gz" or s["documents"] > 0, "the lines before are kept", p)
            check(s["documents"] == 0 or "the answer is incomplete" in err,
                  label + ": the summary says so", p)
            run(["-q", "--strict", "--lines", path], expect=3)
        if JSON:
            jf = os.path.join(tmp, "c.jsonl")
            with open(jf, "w") as f:
                for i, t in enumerate(lines):
                    f.write(json.dumps({"id": i, "text": t}) + "\n")
            raw = open(jf, "rb").read()
            for label, path in cut_cases(tmp, raw):
                out = os.path.join(tmp, "dedup.jsonl")
                p = run(["-q", "--jsonl", path, "--output", "records", "-o", out], expect=None)
                n = sum(1 for _ in open(out))
                check(p.returncode == (6 if n else 5) and n <= 2000,
                      label + ": never 0 (%d records)" % n, p)
        # a whole-document input is skipped whole, its offset named
        for label, path in cut_cases(tmp, data):
            p = run([path, os.path.join(tmp, "c.jsonl")] if JSON else [path], expect=None)
            check(("%s: " % path) in p.stderr.decode() and
                  "at compressed byte" in p.stderr.decode(), label + ": as a file", p)
        # intact: 0
        if ZLIB:
            ok = os.path.join(tmp, "ok.gz")
            with open(ok, "wb") as f:
                f.write(gzip.compress(data))
            run(["-q", "--lines", ok])


# ---------------------------------------------------------------------------
# F12: compression bombs bounded in time


def case_bombs():
    """A compressed line input is read only while it decompresses to at
    most --max-ratio (default 1000) times the compressed bytes read, and
    at most --max-input-bytes: past either bound the rest is not read,
    with a message naming the bound, and status 6; the lines before stay
    documents. A 256 MiB RLE bomb used to be read to its end."""
    if not (ZLIB or ZSTD):
        sys.exit(SKIP)
    with tempfile.TemporaryDirectory() as tmp:
        lines = texts(4, 300, dup_every=10)
        head = ("\n".join(lines) + "\n").encode()
        bomb = os.path.join(tmp, "bomb")
        with open(bomb, "wb") as f:
            if ZSTD:
                f.write(zstd_raw(head) + zstd_rle(ord("a"), 2048))  # 256 MiB of "a"
            else:
                f.write(gzip.compress(head) + gzip.compress(b"a" * (64 << 20), 9))
        st = os.path.join(tmp, "s.json")
        p = run(["--lines", bomb, "--stats", st, "--output", "pairs"], expect=6)
        err = p.stderr.decode()
        check("%s: decompresses to more than 1000 times its compressed size (--max-ratio)" % bomb
              in err, "the ratio bound, named", p)
        s = stats(st)
        check(s["documents"] == 300 and s["inputs_cut"] == 1, "the lines before: %s" % s, p)
        check(len(p.stdout.splitlines()) == 30, "their pairs", p)
        # a lower ratio bound stops it earlier; a higher one lets it through
        # (the long line is then skipped as longer than --max-doc-bytes)
        run(["-q", "--lines", bomb, "--max-ratio", "0", "--max-doc-bytes", "1M"], expect=0)
        # --max-input-bytes: a plain-text-like input cut after N bytes
        gz_or_z = os.path.join(tmp, "c.lines.z")
        with open(gz_or_z, "wb") as f:
            f.write(gzip.compress(head) if ZLIB else zstd_raw(head))
        p = run(["--lines", gz_or_z, "--max-input-bytes", "10K", "--stats", st], expect=6)
        check("decompresses to more than --max-input-bytes (10240 bytes)" in p.stderr.decode(),
              "the byte bound, named", p)
        s = stats(st)
        check(0 < s["documents"] < 300 and s["bytes"] <= 10240, "cut at the bound: %s" % s, p)
        run(["-q", "--lines", gz_or_z, "--max-input-bytes", str(len(head))], expect=0)
        run(["-q", "--lines", gz_or_z, "--max-ratio", "-1"], expect=2)


# ---------------------------------------------------------------------------
# F11: files changed since they were indexed


def case_changed_files():
    """A file whose size or modification time differs from the saved ones
    is not skipped silently: a warning names it and --stats counts it;
    --update re-signs it (and only it), so its new duplicate is found."""
    with tempfile.TemporaryDirectory() as tmp:
        d = os.path.join(tmp, "d")
        os.mkdir(d)
        a, b, c = (os.path.join(d, n) for n in ("a.txt", "b.txt", "c.txt"))
        with open(a, "w") as f:
            f.write("one two three four five six seven\n")
        with open(b, "w") as f:
            f.write("eight nine ten eleven twelve\n")
        with open(c, "w") as f:
            f.write("thirteen fourteen fifteen sixteen\n")
        idx = os.path.join(tmp, "s.idx")
        st = os.path.join(tmp, "s.json")
        run(["-q", "--save-index", idx, d])
        with open(a, "w") as f:
            f.write(open(b).read())
        os.utime(a, (os.stat(a).st_atime, os.stat(a).st_mtime + 3600))
        # same size, new time: changed too
        os.utime(c, (os.stat(c).st_atime, os.stat(c).st_mtime + 7200))
        p = run(["--index", idx, "--output", "pairs", "--stats", st, d])
        err = p.stderr.decode()
        check("%s: changed since it was indexed (size 34, now 29 bytes" % a in err,
              "a warning names the changed file and its sizes", p)
        check("%s: changed since it was indexed (modification time)" % c in err,
              "a new time alone is a change", p)
        check(b.encode() + b": changed" not in p.stderr, "no warning for the unchanged", p)
        s = stats(st)
        check(s["changed"] == 2 and s["already_indexed"] == 3 and p.stdout == b"", "%s" % s, p)
        p = run(["-q", "--index", idx, "--update", "--save-index", idx, "--output", "pairs",
                 "--stats", st, d])
        check(p.stdout.decode() == "%s\t%s\t1.0000\n" % (b, a), "--update re-signs a.txt", p)
        s = stats(st)
        check(s["replaced"] == 2 and s["already_indexed"] == 1 and s["documents"] == 2, "%s" % s)
        p = run(["--index", idx, "--update", "--stats", st, d])
        check(stats(st)["changed"] == 0 and b"changed since" not in p.stderr,
              "the saved index holds the new sizes and times", p)
        run(["-q", "--update", d], expect=2)
        run(["-q", "--index", idx, "--update", "--replace", d], expect=2)


# ---------------------------------------------------------------------------
# F14: small traps


def case_small_traps():
    """--files-from reads a pipe (<(find ...)) instead of saying "skipped"
    and exiting 3; a device is refused with exit 3 and no "skipped"; a
    UTF-8 BOM before the first JSONL record is accepted (the record output
    without it); an empty JSONL id listed by --output keep is removed by
    --remove-from."""
    here = os.path.dirname(os.path.abspath(__file__))
    sample = os.path.join(here, "..", "..", "data", "sample")
    names = sorted(os.path.join(r, f) for r, _, fs in os.walk(sample) for f in fs)
    ref = run(["-q"] + names).stdout
    rfd, wfd = os.pipe()

    def writer():
        with os.fdopen(wfd, "wb") as w:
            w.write(b"".join(n.encode() + b"\n" for n in names))
    t = threading.Thread(target=writer)
    t.start()
    p = run(["-q", "--files-from", "/dev/fd/%d" % rfd], pass_fds=(rfd,))
    t.join()
    os.close(rfd)
    check(p.stdout == ref and p.stdout != b"", "--files-from a pipe", p)
    p = run(["-q", "--files-from", "/dev/null"], expect=3)
    check(b"skipped" not in p.stderr and b"character device" in p.stderr,
          "a device list: refused, not 'skipped'", p)
    if not JSON:
        return
    with tempfile.TemporaryDirectory() as tmp:
        t1 = "alpha beta gamma delta epsilon zeta eta theta"
        rows = [{"id": "a", "text": t1}, {"id": "b", "text": t1},
                {"id": "", "text": "other words entirely, nothing alike at all"},
                {"id": "c", "text": "more words that match nothing else here"}]
        body = "".join(json.dumps(r) + "\n" for r in rows).encode()
        jf = os.path.join(tmp, "bom.jsonl")
        with open(jf, "wb") as f:
            f.write(b"\xef\xbb\xbf" + body)
        p = run(["--jsonl", jf, "--output", "pairs"])
        check(p.stdout == b"a\tb\t1.0000\n", "the BOM record is read", p)
        check(b"expected" not in p.stderr and b" 0 skipped" in p.stderr, "no record skipped", p)
        check(b"decided by estimate" not in p.stderr, "the second pass reads it too", p)
        p = run(["-q", "--jsonl", jf, "--output", "records"])
        check(p.stdout == json.dumps(rows[0]).encode() + b"\n" + b"".join(
            json.dumps(r).encode() + b"\n" for r in rows[2:]), "records without the BOM", p)
        if ZLIB:
            gz = os.path.join(tmp, "bom.jsonl.gz")
            with open(gz, "wb") as f:
                f.write(gzip.compress(b"\xef\xbb\xbf" + body))
            p = run(["-q", "--jsonl", gz, "--output", "pairs"])
            check(p.stdout == b"a\tb\t1.0000\n", "a BOM in compressed JSONL", p)
        # the empty id: keep list -> --remove-from removes every name
        idx = os.path.join(tmp, "e.idx")
        keep = os.path.join(tmp, "keep.txt")
        run(["-q", "--jsonl", jf, "--save-index", idx, "--output", "keep", "-o", keep])
        check(open(keep).read().split("\n").count("") == 2, "the keep list holds an empty name")
        st = os.path.join(tmp, "s.json")
        p = run(["-q", "--index", idx, "--remove-from", keep, "--save-index", idx,
                 "--stats", st])
        check(stats(st)["removed"] == 3 and index_names(idx) == ["b"],
              "every kept name removed, the empty one too: %s" % index_names(idx), p)
        # an empty line with no empty name in the index is ignored, as before
        with open(keep, "w") as f:
            f.write("\n\nb\n")
        p = run(["--index", idx, "--remove-from", keep, "--stats", st, "-q"])
        check(stats(st)["removed"] == 1 and b"not in" not in p.stderr, "blank lines ignored", p)


CASES = {name[5:].replace("_", "-"): fn for name, fn in globals().items()
         if name.startswith("case_")}
if CASE not in CASES:
    sys.exit("unknown case %r; known: %s" % (CASE, " ".join(sorted(CASES))))
CASES[CASE]()
