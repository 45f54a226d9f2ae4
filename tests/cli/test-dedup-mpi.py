#!/usr/bin/env python3
"""simlsh-dedup-mpi against simlsh-dedup: the same bytes, the same status.

Usage: test-dedup-mpi.py MPIRUN DEDUP_MPI DEDUP SAMPLE_DIR CASE FEATURES

Each case runs simlsh-dedup once and simlsh-dedup-mpi under
`mpirun --oversubscribe -np N` for N = 1, 2, 3 and 4, and requires every
output file and the exit status to be identical. Every mpirun has a
timeout, so a rank left waiting fails the test instead of hanging it.
"""
import gzip
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

MPIRUN, DEDUP_MPI, DEDUP, SAMPLE, CASE = sys.argv[1:6]
# the cases run in temporary directories
DEDUP_MPI, DEDUP, SAMPLE = (os.path.abspath(x) for x in (DEDUP_MPI, DEDUP, SAMPLE))
FEATURES = sys.argv[6].split(",") if len(sys.argv) > 6 else []
JSON = "json" in FEATURES
RANKS = (1, 2, 3, 4)
# Each verify mode with pairs and with clusters runs at every N; variants
# of them (formats, --keep, --max-pairs, more inputs) at some N, to keep
# the suite short: every job pays the start of its ranks.
SOME = ((2, 3), (3, 4), (2, 4))
TIMEOUT = 120

ENV = dict(os.environ)
# CI runs as root; Open MPI refuses root without both variables.
ENV["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
ENV["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
# No ssh or other launcher on a test machine: the ranks are local.
ENV.setdefault("OMPI_MCA_plm_rsh_agent", "")
# One machine: shared memory only, no probing of network transports, and
# no binding of oversubscribed ranks; this halves the start of each job.
ENV.setdefault("OMPI_MCA_btl", "self,vader")
ENV.setdefault("OMPI_MCA_pml", "ob1")
ENV.setdefault("OMPI_MCA_hwloc_base_binding_policy", "none")
ENV.pop("SIMLSH_DEDUP_MPI_FAIL_RANK", None)


def fail(msg, p=None):
    print("FAIL:", msg)
    if p is not None:
        print("status:", p.returncode)
        print("stdout:", p.stdout[-2000:])
        print("stderr:", p.stderr.decode(errors="replace")[-4000:])
    sys.exit(1)


def check(cond, msg, p=None):
    if not cond:
        fail(msg, p)


def single(args, cwd, data=None):
    return subprocess.run([DEDUP] + args, cwd=cwd, capture_output=True, env=ENV,
                          timeout=TIMEOUT, input=data if data is not None else b"")


def mpi(n, args, cwd, env=None, data=None):
    """data: bytes for standard input, through a pipe as a user's would be."""
    cmd = [MPIRUN, "--oversubscribe", "-np", str(n), DEDUP_MPI] + args
    for attempt in range(3):
        try:
            if data is not None:
                p = subprocess.run(cmd, cwd=cwd, capture_output=True, env=env or ENV,
                                   timeout=TIMEOUT, input=data)
            else:
                p = subprocess.run(cmd, cwd=cwd, capture_output=True, env=env or ENV,
                                   timeout=TIMEOUT, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            fail("mpirun -np %d %s: no answer in %d s (a rank waits)"
                 % (n, " ".join(args), TIMEOUT))
        # Open MPI 4's mpirun itself (not a rank) can crash forwarding
        # standard input when the job ends (open-mpi/ompi#7483, fixed in
        # 5.0): run again, at most twice, only on that crash.
        if not (p.returncode < 0 and b"orte_iof_hnp_read_local_handler" in p.stderr):
            return p
        print("note: mpirun crashed forwarding standard input (ompi#7483); again")
    return p


def read(path):
    if not os.path.exists(path):
        return None
    with open(path, "rb") as f:
        return f.read()


def same(args, cwd, files=(), ranks=RANKS, expect=None, data=None):
    """Every N gives simlsh-dedup's stdout, status and files (relative to cwd,
    a saved index among them), with data as standard input if given."""
    for f in files:
        if os.path.exists(os.path.join(cwd, f)):
            os.unlink(os.path.join(cwd, f))
    ref = single(args, cwd, data)
    if expect is not None:
        check(ref.returncode == expect, "simlsh-dedup %s: status %d, expected %d"
              % (args, ref.returncode, expect), ref)
    ref_files = {f: read(os.path.join(cwd, f)) for f in files}
    for n in ranks:
        for f in files:
            if os.path.exists(os.path.join(cwd, f)):
                os.unlink(os.path.join(cwd, f))
        p = mpi(n, args, cwd, data=data)
        check(p.returncode == ref.returncode, "-np %d %s: status %d, simlsh-dedup %d"
              % (n, args, p.returncode, ref.returncode), p)
        check(p.stdout == ref.stdout, "-np %d %s: output differs" % (n, args), p)
        for f in files:
            check(read(os.path.join(cwd, f)) == ref_files[f],
                  "-np %d %s: %s differs" % (n, args, f), p)
    return ref


def corpus_lines(tmp, count=300, seed=7):
    """Line documents from the sample texts with edits, blank lines and
    CRLF, so clusters, pairs and skips all occur."""
    rnd = random.Random(seed)
    texts = []
    for name in sorted(os.listdir(SAMPLE)):
        path = os.path.join(SAMPLE, name)
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                texts.append(" ".join(f.read().split()))
    lines = []
    for i in range(count):
        words = rnd.choice(texts).split()
        if rnd.random() < 0.5 and len(words) > 20:
            words[rnd.randrange(len(words))] = "edit%d" % i
        if rnd.random() < 0.04:
            lines.append("")
        lines.append(" ".join(words) + ("\r" if rnd.random() < 0.05 else ""))
    return lines


def write_lines(path, lines, final_newline=True):
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("\n".join(lines) + ("\n" if final_newline else ""))


def case_files():
    """A directory of files: clusters and pairs, TSV and JSONL."""
    with tempfile.TemporaryDirectory() as tmp:
        for i, args in enumerate(([SAMPLE], [SAMPLE, "--output", "pairs"],
                                  [SAMPLE, "--format", "jsonl", "--verify", "none"],
                                  [os.path.join(SAMPLE, "harbour-log.txt"), SAMPLE, "--output",
                                   "pairs", "--verify", "none"])):
            ref = same(["-q"] + args, tmp, expect=0, ranks=RANKS if i < 2 else SOME[i % 3])
        check(ref.stdout.count(b"\n") > 3, "the sample has pairs")


def case_lines():
    """--lines files cut among ranks at line ends (a last line without a
    newline, CRLF, blank lines), and --jsonl."""
    with tempfile.TemporaryDirectory() as tmp:
        lines = corpus_lines(tmp)
        write_lines(os.path.join(tmp, "a.txt"), lines)
        write_lines(os.path.join(tmp, "b.txt"), lines[:61], final_newline=False)
        for i, args in enumerate((["--lines", "a.txt"],
                                  ["--lines", "a.txt", "--output", "pairs"],
                                  ["--lines", "a.txt", "--lines", "b.txt", "--output", "pairs",
                                   "--verify", "none"],
                                  ["--lines", "b.txt", "--output", "drop-records"],
                                  ["--lines", "a.txt", "--output", "keep", "--keep",
                                   "longest"])):
            ref = same(["-q"] + args, tmp, expect=0, ranks=RANKS if i < 2 else SOME[i % 3])
            check(ref.stdout, "output is not empty: %s" % args)
        with gzip.open(os.path.join(tmp, "a.txt.gz"), "wb") as f:
            f.write(open(os.path.join(tmp, "a.txt"), "rb").read())
        if "zlib" in FEATURES:  # a compressed file is read whole by one rank
            same(["-q", "--lines", "b.txt", "--lines", "a.txt.gz", "--output", "pairs"], tmp,
                 expect=0, ranks=SOME[0])
        if JSON:
            with open(os.path.join(tmp, "c.jsonl"), "w", encoding="utf-8") as f:
                for i, line in enumerate(lines[:120]):
                    f.write(json.dumps({"id": "doc-%d" % i, "text": line}) + "\n")
            same(["-q", "--jsonl", "c.jsonl", "--output", "pairs"], tmp, expect=0)
            same(["-q", "--jsonl", "c.jsonl", "--output", "records", "--keep", "shortest"],
                 tmp, expect=0, ranks=SOME[1])
            same(["-q", "--jsonl", "c.jsonl", "--id-field", "-", "--format", "jsonl"], tmp,
                 expect=0, ranks=SOME[2])


def case_outputs():
    """-o, --skipped, --exit-code and --max-pairs: the same files and status."""
    with tempfile.TemporaryDirectory() as tmp:
        write_lines(os.path.join(tmp, "a.txt"), corpus_lines(tmp))
        same(["-q", "--lines", "a.txt", "-o", "out.tsv", "--skipped", "skipped.tsv"], tmp,
             files=("out.tsv", "skipped.tsv"), expect=0)
        same(["-q", "--lines", "a.txt", "--format", "jsonl", "-o", "out.jsonl",
              "--skipped", "skipped.jsonl"], tmp, files=("out.jsonl", "skipped.jsonl"),
             ranks=SOME[0])
        same(["-q", "--lines", "a.txt", "--exit-code"], tmp, expect=1, ranks=SOME[1])
        # Issue 29: devices and standard streams are written in place, as by
        # simlsh-dedup; a compressed name is refused (status 2) by both.
        ref = same(["-q", "--lines", "a.txt", "-o", "/dev/stdout", "--stats", "/dev/null"],
                   tmp, expect=0, ranks=SOME[0])
        check(ref.stdout == single(["-q", "--lines", "a.txt"], tmp).stdout and ref.stdout,
              "-o /dev/stdout gives what -o - gives", ref)
        same(["-q", "--lines", "a.txt", "-o", "/dev/null"], tmp, expect=0, ranks=SOME[1])
        same(["-q", "--lines", "a.txt", "-o", "out.tsv.gz"], tmp, files=("out.tsv.gz",),
             expect=2, ranks=SOME[0])
        same(["-q", "--lines", "a.txt", "--output", "pairs", "--max-pairs", "7"], tmp,
             expect=6, ranks=(2, 3, 4))
        # --stats has the per-rank figures the benchmark reads
        p = mpi(2, ["-q", "--lines", "a.txt", "--stats", "st.json"], tmp)
        check(p.returncode == 0, "--stats run", p)
        st = json.load(open(os.path.join(tmp, "st.json")))
        check(st["ranks"] == 2 and len(st["per_rank"]) == 2, "per-rank stats", p)
        check(sum(r["documents"] for r in st["per_rank"]) == st["documents"] > 0,
              "documents add up", p)
        check(st["bytes_exchanged"] > 0, "bytes exchanged", p)


def case_exact():
    """--verify exact (the default): candidates prefiltered by estimate, cut
    by --max-pairs, verified by ranges of pairs on every rank."""
    with tempfile.TemporaryDirectory() as tmp:
        write_lines(os.path.join(tmp, "a.txt"), corpus_lines(tmp))
        write_lines(os.path.join(tmp, "b.txt"), corpus_lines(tmp, 90, 3), final_newline=False)
        same(["-q", "--lines", "a.txt", "--lines", "b.txt", "--verify", "exact"], tmp,
             expect=0, ranks=SOME[1])
        ref = same(["-q", "--lines", "a.txt", "--output", "pairs", "--verify", "exact"], tmp,
                   expect=0)
        check(ref.stdout.count(b"\n") > 100, "exact pairs found", ref)
        same(["-q", "--lines", "a.txt", "--output", "pairs", "--verify", "exact",
              "--max-pairs", "150"], tmp, expect=6, ranks=(2, 3, 4))
        same(["-q", SAMPLE, "--verify", "exact", "--output", "drop"], tmp, expect=0,
             ranks=SOME[2])


def case_estimate():
    """--verify estimate: candidates kept by their estimate, clusters and
    pairs, --max-pairs."""
    with tempfile.TemporaryDirectory() as tmp:
        write_lines(os.path.join(tmp, "a.txt"), corpus_lines(tmp))
        for args in (["--verify", "estimate"], ["--verify", "estimate", "--output", "pairs"]):
            same(["-q", "--lines", "a.txt"] + args, tmp, expect=0)
        same(["-q", "--lines", "a.txt", "--verify", "estimate", "--output", "pairs",
              "--max-pairs", "40"], tmp, expect=6, ranks=SOME[0])
        same(["-q", SAMPLE, "--verify", "estimate", "--output", "pairs"], tmp, expect=0,
             ranks=SOME[1])


def case_none():
    """--verify none: every candidate is an edge, scored by its estimate."""
    with tempfile.TemporaryDirectory() as tmp:
        write_lines(os.path.join(tmp, "a.txt"), corpus_lines(tmp))
        for args in (["--verify", "none"], ["--verify", "none", "--output", "pairs"]):
            same(["-q", "--lines", "a.txt"] + args, tmp, expect=0)
        # --max-pairs bounds --output pairs only: groups are never cut
        same(["-q", "--lines", "a.txt", "--verify", "none", "--output", "pairs",
              "--max-pairs", "25"], tmp, expect=6, ranks=SOME[2])
        same(["-q", "--lines", "a.txt", "--verify", "none", "--max-pairs", "25"], tmp,
             expect=0, ranks=SOME[2])


def case_components():
    """--cluster components in every verify mode, and star with --keep."""
    with tempfile.TemporaryDirectory() as tmp:
        write_lines(os.path.join(tmp, "a.txt"), corpus_lines(tmp))
        for v in ("exact", "estimate", "none"):
            ref = same(["-q", "--lines", "a.txt", "--cluster", "components", "--verify", v],
                       tmp, expect=0)
            check(ref.stdout, "clusters found (%s)" % v, ref)
        same(["-q", "--lines", "a.txt", "--cluster", "star", "--keep", "longest",
              "--output", "drop"], tmp, expect=0, ranks=SOME[0])


def case_no_input():
    """More ranks than files: ranks with nothing to read take part all the
    same; an empty line file and a single file too."""
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("harbour-log.txt", "harbour-log-typos.txt"):
            shutil.copy(os.path.join(SAMPLE, name), tmp)
        open(os.path.join(tmp, "empty.txt"), "w").close()
        same(["-q", "harbour-log.txt", "harbour-log-typos.txt", "--output", "pairs"], tmp,
             expect=0)
        same(["-q", "harbour-log.txt"], tmp, expect=0, ranks=(3,))
        same(["-q", "--lines", "empty.txt", "harbour-log.txt"], tmp, expect=0, ranks=(4,))
        same(["-q", "--lines", "empty.txt"], tmp, files=(), expect=0, ranks=(2,))


def case_unreadable():
    """Inputs skipped at the walk (dangling link, FIFO, missing path) and
    while reading on whichever rank holds them (empty file, corrupt gzip,
    unreadable file when not root): the same output and --skipped list;
    under --strict every rank stops with status 3."""
    with tempfile.TemporaryDirectory() as tmp:
        d = os.path.join(tmp, "corpus")
        os.mkdir(d)
        for i, name in enumerate(sorted(os.listdir(SAMPLE))[:12]):
            if os.path.isfile(os.path.join(SAMPLE, name)):
                shutil.copy(os.path.join(SAMPLE, name), os.path.join(d, "f%02d.txt" % i))
        os.symlink(os.path.join(tmp, "nowhere"), os.path.join(d, "c-link.txt"))
        open(os.path.join(d, "g-empty.txt"), "w").close()
        os.mkfifo(os.path.join(d, "fifo"))
        with open(os.path.join(d, "h-bad.gz"), "wb") as f:
            f.write(b"\x1f\x8b\x08\x00" + b"\x00" * 12 + b"not deflate data" * 10)
        if os.geteuid() != 0:  # root reads anything
            shutil.copy(os.path.join(SAMPLE, "notes-10.txt"), os.path.join(d, "z.txt"))
            os.chmod(os.path.join(d, "z.txt"), 0)
        args = ["-q", d, os.path.join(tmp, "missing.txt"), "--skipped", "skipped.tsv"]
        ref = same(args, tmp, files=("skipped.tsv",), expect=0)
        listed = read(os.path.join(tmp, "skipped.tsv"))
        for name in (b"c-link.txt", b"fifo", b"missing.txt", b"g-empty.txt", b"h-bad.gz"):
            check(name in listed, "%s is in the --skipped list" % name.decode(), ref)
        same(["-q", d, "--strict"], tmp, expect=3)


def case_failure():
    """A rank that fails stops every rank with a message and a non-zero
    status, and leaves no output file; no rank is left waiting."""
    with tempfile.TemporaryDirectory() as tmp:
        write_lines(os.path.join(tmp, "a.txt"), corpus_lines(tmp))
        for n in (2, 3, 4):
            env = dict(ENV)
            env["SIMLSH_DEDUP_MPI_FAIL_RANK"] = "1"
            p = mpi(n, ["-q", "--lines", "a.txt", "-o", "out.tsv"], tmp, env=env)
            check(p.returncode == 4, "-np %d: a failed rank gives status 4" % n, p)
            check(b"rank 1: failing on request" in p.stderr, "the rank says why", p)
            check(b"another rank failed" in p.stderr, "rank 0 says why it stops", p)
            check(not os.path.exists(os.path.join(tmp, "out.tsv")), "no output", p)
            # an exit in the middle of the exchange (as out of memory would)
            env["SIMLSH_DEDUP_MPI_FAIL_RANK"] = "-2"
            p = mpi(n, ["-q", "--lines", "a.txt", "-o", "out.tsv"], tmp, env=env)
            check(p.returncode != 0, "-np %d: an exiting rank stops the job" % n, p)
            check(b"rank 1: exiting on request" in p.stderr, "the rank says why", p)
            check(not os.path.exists(os.path.join(tmp, "out.tsv")), "no output", p)


def case_stdin():
    """Standard input (a pipe, read by rank 0 and copied to every rank) as
    lines, with other inputs around it, as one document, compressed, and
    empty; the exact second pass reads it again on any rank."""
    with tempfile.TemporaryDirectory() as tmp:
        lines = corpus_lines(tmp)
        write_lines(os.path.join(tmp, "b.txt"), corpus_lines(tmp, 90, 3))
        data = ("\n".join(lines) + "\n").encode()
        ref = same(["-q", "--lines", "-", "--output", "pairs"], tmp, expect=0, data=data)
        check(ref.stdout.count(b"\n") > 100, "pairs found", ref)
        same(["-q", "--lines", "b.txt", "--lines", "-", "--output", "pairs", "--skipped",
              "skipped.tsv"], tmp, files=("skipped.tsv",), expect=0, data=data, ranks=SOME[0])
        # lines of standard input are cut among the ranks like a file's
        p = mpi(3, ["-q", "--lines", "-", "--stats", "st.json"], tmp, data=data)
        check(p.returncode == 0, "--stats run", p)
        st = json.load(open(os.path.join(tmp, "st.json")))
        check(all(r["documents"] > 50 for r in st["per_rank"]), "every rank reads stdin lines",
              p)
        # no final newline, a line over --max-doc-bytes
        odd = data + b"x" * 3000 + b"\n" + lines[3].encode()
        same(["-q", "--lines", "-", "--max-doc-bytes", "2000", "--output", "keep", "--skipped",
              "skipped.tsv"], tmp, files=("skipped.tsv",), expect=0, data=odd, ranks=SOME[1])
        if JSON:
            rows = "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(lines))
            same(["-q", "--jsonl", "-", "--output", "pairs", "--format", "jsonl"], tmp, expect=0,
                 data=rows.encode(), ranks=SOME[2])
        same(["-q", "--lines", "-", "--lines", "b.txt", "--verify", "estimate"], tmp, expect=0,
             data=data, ranks=SOME[1])
        doc = open(os.path.join(SAMPLE, "harbour-log.txt"), "rb").read()
        ref = same(["-q", "-", SAMPLE, "--output", "pairs"], tmp, expect=0, data=doc,
                   ranks=SOME[2])
        check(b"-\t" in ref.stdout, "standard input is a document of a pair", ref)
        if "zlib" in FEATURES:
            same(["-q", "--lines", "-", "--output", "keep", "--save-index", "s.idx"], tmp,
                 files=("s.idx",), expect=0, data=gzip.compress(data), ranks=(3,))
        same(["-q", "-"], tmp, expect=5, data=b"", ranks=(2,))


def case_index():
    """--index, --save-index (the saved file compared byte for byte),
    --replace, --remove, --remove-from -, --only-new, and a rank with no
    input or nothing but removals."""
    with tempfile.TemporaryDirectory() as tmp:
        lines = corpus_lines(tmp)
        write_lines(os.path.join(tmp, "a.txt"), lines[:200])
        write_lines(os.path.join(tmp, "b.txt"), lines[150:])
        shutil.copy(os.path.join(SAMPLE, "harbour-log.txt"), tmp)
        # a new index saved by every N, as simlsh-dedup saves it
        same(["-q", "--lines", "a.txt", "--save-index", "new.idx"], tmp, files=("new.idx",),
             expect=0)
        ref = single(["-q", "--lines", "a.txt", "--save-index", "base.idx"], tmp)
        check(ref.returncode == 0, "base index", ref)
        ref = same(["-q", "--index", "base.idx", "--lines", "b.txt", "--output", "pairs",
                    "--save-index", "new.idx"], tmp, files=("new.idx",), expect=0)
        check(b"b.txt:" in ref.stdout and b"\t1" in ref.stdout, "pairs with old documents",
              ref)
        same(["-q", "--index", "base.idx", "--lines", "a.txt", "--lines", "b.txt", "--replace",
              "--cluster", "components", "--save-index", "new.idx"], tmp, files=("new.idx",),
             expect=0, ranks=SOME[0])
        same(["-q", "--index", "base.idx", "--remove", "5", "--remove", "9", "--lines", "b.txt",
              "--only-new", "--verify", "estimate", "--output", "keep", "--save-index",
              "new.idx"], tmp, files=("new.idx",), expect=0, ranks=SOME[1])
        same(["-q", "--index", "base.idx", "--remove-from", "-", "--save-index", "new.idx"],
             tmp, files=("new.idx",), expect=0, data=b"3\n4\n100\n", ranks=(3,))
        # one document for four ranks, and the index replaced in place
        for prog in ("single", "mpi"):
            shutil.copy(os.path.join(tmp, "base.idx"), os.path.join(tmp, prog + ".idx"))
            args = ["-q", "--index", prog + ".idx", "harbour-log.txt", "--output", "pairs",
                    "--save-index", prog + ".idx"]
            p = single(args, tmp) if prog == "single" else mpi(4, args, tmp)
            check(p.returncode == 0, "%s: in place" % prog, p)
        check(read(os.path.join(tmp, "single.idx")) == read(os.path.join(tmp, "mpi.idx")),
              "-np 4: the index replaced in place differs", p)
        # a name read twice (on two ranks) is replaced once, as simlsh-dedup counts it
        ref = single(["-q", "--lines", "a.txt", "--lines", "b.txt", "--save-index", "ab.idx"],
                     tmp)
        check(ref.returncode == 0, "index of two inputs", ref)
        args = ["--index", "ab.idx", "--lines", "a.txt", "--lines", "a.txt", "--replace",
                "--output", "pairs"]
        ref = single(args, tmp)
        want = re.search(rb"(\d+) replaced", ref.stderr)
        check(want and int(want.group(1)) > 100, "simlsh-dedup replaces", ref)
        p = mpi(3, args, tmp)
        check(re.search(rb"\b%s replaced" % want.group(1), p.stderr), "replaced count", p)
        same(["-q", "--index", "base.idx", "-k", "9", "--lines", "b.txt"], tmp, expect=2,
             ranks=(2,))
        same(["-q", "--index", "missing.idx", "--lines", "b.txt"], tmp, expect=3, ranks=(2,))


def case_replace_many():
    """--replace of 50,000 documents, more than one insert call of a rank
    holds, at -np 2 and 3: the saved index is simlsh-dedup's, byte for
    byte (issue 31 F2: a rank's main thread removed replaced documents
    from the index while its insert thread inserted, a crash)."""
    rnd = random.Random(2031)
    with tempfile.TemporaryDirectory() as tmp:
        lines = [" ".join("w%d" % rnd.randrange(5000) for _ in range(8)) for _ in range(50000)]
        write_lines(os.path.join(tmp, "a.txt"), lines[:25000])
        write_lines(os.path.join(tmp, "b.txt"), lines[25000:])
        inputs = ["--lines", "a.txt", "--lines", "b.txt"]
        ref = single(["-q"] + inputs + ["--save-index", "base.idx"], tmp)
        check(ref.returncode == 0, "base index", ref)
        args = ["-q", "--index", "base.idx", "--replace", "--save-index", "new.idx",
                "--output", "pairs", "--verify", "estimate"] + inputs
        # the reference on one thread: removals and inserts one after the other
        ref = single(args + ["-j", "1"], tmp)
        check(ref.returncode == 0, "simlsh-dedup -j 1", ref)
        want = read(os.path.join(tmp, "new.idx"))
        check(want == read(os.path.join(tmp, "base.idx")),
              "every document replaced by itself: the same index")
        for n in (2, 3):
            os.unlink(os.path.join(tmp, "new.idx"))
            p = mpi(n, args, tmp)
            check(p.returncode == 0, "-np %d: status %d" % (n, p.returncode), p)
            check(p.stdout == ref.stdout, "-np %d: output differs" % n, p)
            check(read(os.path.join(tmp, "new.idx")) == want, "-np %d: new.idx differs" % n, p)


def chain_lines(chains=6, length=14, seed=11):
    """Chains of documents, each a few words from the last, so a document
    is near its neighbours and far from the chain's other end: components
    differ from stars, and --keep moves the centres. Shuffled, so every
    chain has documents on every rank."""
    rnd = random.Random(seed)
    words = ["w%d" % i for i in range(3000)]
    lines = []
    for c in range(chains):
        doc = [rnd.choice(words) for _ in range(120)]
        for i in range(length):
            lines.append(" ".join(doc) + " pad" * rnd.randrange(8))
            for _ in range(4):
                doc[rnd.randrange(len(doc))] = rnd.choice(words)
    rnd.shuffle(lines)
    return lines


def case_groups():
    """Groups formed across ranks (spanning forests merged up a tree, each
    component grouped by one owner, rank 0 writing the finished groups):
    chains across ranks, stars and components, every --keep, every output
    that depends on the groups."""
    with tempfile.TemporaryDirectory() as tmp:
        write_lines(os.path.join(tmp, "c.txt"), chain_lines())
        ref = same(["-q", "--lines", "c.txt", "--cluster", "components"], tmp, expect=0)
        check(any(l.count(b"\t") > 8 for l in ref.stdout.splitlines()), "long components",
              ref)
        star = same(["-q", "--lines", "c.txt"], tmp, expect=0)
        check(star.stdout != ref.stdout, "stars differ from components", star)
        for i, keep in enumerate(("shortest", "longest", "newest")):
            same(["-q", "--lines", "c.txt", "--keep", keep, "--output", "drop"], tmp, expect=0,
                 ranks=SOME[i])
        same(["-q", "--lines", "c.txt", "--keep", "longest", "--cluster", "components",
              "--format", "jsonl"], tmp, expect=0, ranks=SOME[0])
        same(["-q", "--lines", "c.txt", "--verify", "estimate", "--output", "keep",
              "--exit-code"], tmp, expect=1, ranks=SOME[1])
        # old documents of --index in the groups, and --only-new
        lines = chain_lines()
        write_lines(os.path.join(tmp, "old.txt"), lines[::2])
        write_lines(os.path.join(tmp, "new.txt"), lines[1::2])
        ref = single(["-q", "--lines", "old.txt", "--save-index", "old.idx"], tmp)
        check(ref.returncode == 0, "old index", ref)
        same(["-q", "--index", "old.idx", "--lines", "new.txt", "--keep", "longest"], tmp,
             expect=0, ranks=SOME[2])
        same(["-q", "--index", "old.idx", "--lines", "new.txt", "--cluster", "components",
              "--only-new", "--output", "drop"], tmp, expect=0, ranks=SOME[0])


def bucket_lines(seed=11):
    """Small buckets (the edited sample texts) and large ones: 70 copies of
    one text with a few words changed share most bands' buckets."""
    rnd = random.Random(seed)
    lines = corpus_lines(None, 200, seed)
    base = max(lines, key=len).split()
    for i in range(70):
        words = list(base)
        for _ in range(rnd.randrange(1, 6)):
            words[rnd.randrange(len(words))] = "w%d" % rnd.randrange(10**6)
        lines.insert(rnd.randrange(len(lines) + 1), " ".join(words))
    return lines


def case_heavy():
    """A corpus full of copies (issue 27): one group of 400 near-copies
    among groups of 40, 10 and 3 and unrelated lines, shuffled. Every rank
    count gives simlsh-dedup's groups (which come from the library's dedup
    engine), in every verify mode, with --keep, and --max-pairs cuts no
    group."""
    rnd = random.Random(11)
    vocab = ["w%d" % i for i in range(4000)]
    lines = [" ".join(rnd.choice(vocab) for _ in range(50)) for _ in range(300)]
    for size in (400, 40, 40, 10, 10, 10, 3, 3):
        base = [rnd.choice(vocab) for _ in range(50)]
        for _ in range(size):
            t = list(base)
            for _ in range(rnd.randint(0, 3)):
                t[rnd.randrange(50)] = rnd.choice(vocab)
            lines.append(" ".join(t))
    rnd.shuffle(lines)
    with tempfile.TemporaryDirectory() as tmp:
        write_lines(os.path.join(tmp, "h.txt"), lines)
        ref = same(["-q", "--lines", "h.txt"], tmp, expect=0)
        check(max(len(l.split(b"\t")) for l in ref.stdout.splitlines()) > 300,
              "the large group", ref)
        for i, args in enumerate((["--verify", "estimate"], ["--verify", "none"],
                                  ["--keep", "longest", "--output", "drop"],
                                  ["--max-pairs", "10"])):
            same(["-q", "--lines", "h.txt"] + args, tmp, expect=0, ranks=SOME[i % 3])
        # The groups come from rank 0's engine, as simlsh-dedup's do: no
        # pair is routed, no large bucket scored (the group of 400 would
        # give 79,800 pairs), and rank 0 gets exactly the texts the
        # engine of simlsh-dedup reads again.
        one = single(["-q", "--lines", "h.txt", "--stats", "one.json"], tmp)
        check(one.returncode == 0, "simlsh-dedup --stats", one)
        with open(os.path.join(tmp, "one.json")) as f:
            reads = json.load(f)["verification"]["reads"]
        check(reads > 0, "texts read again", one)
        for n in (2, 3):
            p = mpi(n, ["-q", "--lines", "h.txt", "--stats", "st.json"], tmp)
            check(p.returncode == 0 and p.stdout == one.stdout, "-np %d --stats" % n, p)
            with open(os.path.join(tmp, "st.json")) as f:
                ranks = json.load(f)["per_rank"]
            check(all(r["pairs_routed"] == 0 and r["large_buckets"] == 0 for r in ranks),
                  "-np %d: pairs made for the groups: %s" % (n, ranks), p)
            check(ranks[0]["texts_fetched"] == reads and
                  all(r["texts_fetched"] == 0 for r in ranks[1:]),
                  "-np %d: rank 0 got %d texts, simlsh-dedup read %d"
                  % (n, ranks[0]["texts_fetched"], reads), p)


def case_buckets():
    """Buckets of more than 16 members are scored by their owners with the
    members' signatures; smaller ones send their pairs to be scored where a
    signature is: both at once, the same pairs and groups in every verify
    mode, with documents of --index among them."""
    with tempfile.TemporaryDirectory() as tmp:
        lines = bucket_lines()
        write_lines(os.path.join(tmp, "a.txt"), lines)
        for verify in ("exact", "estimate", "none"):
            ref = same(["-q", "--lines", "a.txt", "--output", "pairs", "--verify", verify], tmp,
                       expect=0)
            check(ref.stdout.count(b"\n") > 70 * 69 // 2, "the large cluster's pairs", ref)
        same(["-q", "--lines", "a.txt"], tmp, expect=0, ranks=SOME[0])
        # one value a band: large buckets of unlike documents too, most of
        # whose pairs the sketches rule out before any signature moves
        for i, verify in enumerate(("exact", "estimate")):
            same(["-q", "--lines", "a.txt", "--output", "pairs", "--bands", "32", "--rows", "1",
                  "--verify", verify], tmp, expect=0, ranks=SOME[i + 1])
        for n in (2, 3):
            p = mpi(n, ["-q", "--lines", "a.txt", "--output", "pairs", "--stats", "st.json"], tmp)
            check(p.returncode == 0, "--stats run", p)
            st = json.load(open(os.path.join(tmp, "st.json")))
            check(sum(r["large_buckets"] for r in st["per_rank"]) > 0, "large buckets", p)
            check(sum(r["pairs_routed"] for r in st["per_rank"]) > 0, "pairs sent", p)
        write_lines(os.path.join(tmp, "old.txt"), lines[::2])
        write_lines(os.path.join(tmp, "new.txt"), lines[1::2])
        ref = single(["-q", "--lines", "old.txt", "--save-index", "old.idx"], tmp)
        check(ref.returncode == 0, "old index", ref)
        for i, verify in enumerate(("exact", "none")):
            same(["-q", "--index", "old.idx", "--lines", "new.txt", "--output", "pairs",
                  "--verify", verify], tmp, expect=0, ranks=SOME[i])


def mpmd(dirs, args, env=None):
    """One rank per directory, started in it (mpirun's --wdir): relative
    input names mean a different copy on every rank, as on nodes that each
    hold their own disk."""
    cmd = [MPIRUN, "--oversubscribe"]
    for i, d in enumerate(dirs):
        cmd += ([":"] if i else []) + ["-np", "1", "--wdir", d, DEDUP_MPI] + args
    try:
        return subprocess.run(cmd, capture_output=True, env=env or ENV, timeout=TIMEOUT,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        fail("mpirun %s: no answer in %d s (a rank waits)" % (" ".join(args), TIMEOUT))


def case_pernode():
    """Under exact, a document is read again by the rank that read it first,
    which sends its text to the rank verifying its pairs. Each rank runs in
    a directory of its own with its own copy of the inputs (the same sizes
    and modification times, as cp -p or rsync -a copy them: the ranks
    compare them, case_views). Files, a line file, a gzip'd line file and
    JSONL; the output is simlsh-dedup's, with no warning, and texts moved
    between ranks."""
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "src")
        os.mkdir(src)
        lines = bucket_lines(5)
        write_lines(os.path.join(src, "a.txt"), lines)
        with gzip.open(os.path.join(src, "b.txt.gz"), "wt", encoding="utf-8", newline="") as f:
            f.write("\n".join(corpus_lines(tmp, 150, 9)) + "\n")
        shutil.copytree(SAMPLE, os.path.join(src, "files"))
        if JSON:
            with open(os.path.join(src, "c.jsonl"), "w", encoding="utf-8") as f:
                for i, t in enumerate(corpus_lines(tmp, 120, 4)):
                    f.write(json.dumps({"id": i, "text": t}) + "\n")
        jobs = [["--lines", "a.txt", "--lines", "b.txt.gz", "files", "--output", "pairs"],
                ["--lines", "a.txt", "files"]]
        if JSON:
            jobs.append(["--jsonl", "c.jsonl", "--output", "pairs"])
        for n in (2, 3):
            dirs = []
            for k in range(n):
                d = os.path.join(tmp, "node%d" % k)
                if not os.path.exists(d):
                    shutil.copytree(src, d)
                    stamp = 1_600_000_000
                    for root, _, names in os.walk(d):
                        for name in names:
                            os.utime(os.path.join(root, name), (stamp, stamp))
                dirs.append(d)
            for args in jobs:
                ref = single(["-q"] + args, dirs[0])
                check(ref.returncode == 0 and ref.stdout, "simlsh-dedup %s" % args, ref)
                p = mpmd(dirs, args + ["--stats", "st.json"])
                check(p.returncode == 0, "%d nodes %s: status" % (n, args), p)
                check(p.stdout == ref.stdout, "%d nodes %s: output differs" % (n, args), p)
                check(b"first read" not in p.stderr and b"estimate" not in p.stderr,
                      "%d nodes %s: no document read from another node's copy" % (n, args), p)
                st = json.load(open(os.path.join(dirs[0], "st.json")))
                check(sum(r["texts_fetched"] for r in st["per_rank"]) > 0,
                      "%d nodes %s: texts sent between ranks" % (n, args), p)
            # many rounds: texts of a few KiB each, a few requests each
            env = dict(ENV, SIMLSH_DEDUP_MPI_TEXT_ROUND="5000")
            ref = single(["-q"] + jobs[0], dirs[0])
            p = mpmd(dirs, jobs[0], env=env)
            check(p.returncode == 0 and p.stdout == ref.stdout,
                  "%d nodes, small rounds: the same output" % n, p)


def case_views():
    """Ranks that see other inputs than rank 0 (issue 31 F1: the old tool
    read an empty share there, renumbered the other ranks' documents and
    exited 0): each rank runs in a directory of its own (mpmd), and one
    rank's copy lacks a line file, is shorter, is a directory, has another
    modification time, or its directory input lacks a file or holds one
    more. Every rank stops with status 3, the rank that differs names the
    path and the cause, rank 0 names the ranks, no output is written.
    Copies that agree give simlsh-dedup's output."""
    with tempfile.TemporaryDirectory() as tmp:
        lines = corpus_lines(tmp, 400, 12)
        stamp = 1_600_000_000
        dirs = [os.path.join(tmp, "node%d" % k) for k in range(3)]
        size = 0

        def fresh():
            """Three identical copies: in.lines and d/ (files of the sample)."""
            nonlocal size
            for d in dirs:
                if os.path.exists(d):
                    shutil.rmtree(d)
                os.makedirs(os.path.join(d, "d"))
                write_lines(os.path.join(d, "in.lines"), lines)
                for name in sorted(os.listdir(SAMPLE))[:8]:
                    if os.path.isfile(os.path.join(SAMPLE, name)):
                        shutil.copy(os.path.join(SAMPLE, name), os.path.join(d, "d", name))
                for root, _, names in os.walk(d):
                    for name in names:
                        os.utime(os.path.join(root, name), (stamp, stamp))
            size = os.path.getsize(os.path.join(dirs[0], "in.lines"))

        def refused(args, rank, text, what):
            p = mpmd(dirs, ["-q"] + args + ["-o", "out.tsv"])
            check(p.returncode == 3, "%s: status %d, expected 3" % (what, p.returncode), p)
            msg = ("simlsh-dedup-mpi: rank %d: %s" % (rank, text)).encode()
            check(msg in p.stderr, "%s: no message %r" % (what, msg), p)
            check(b"stopped: rank %d sees other inputs than rank 0" % rank in p.stderr,
                  "%s: rank 0 names the rank" % what, p)
            check(p.stdout == b"" and not os.path.exists(os.path.join(dirs[0], "out.tsv")),
                  "%s: no output" % what, p)

        fresh()
        ref = single(["-q", "--lines", "in.lines", "--output", "pairs"], dirs[0])
        check(ref.returncode == 0 and ref.stdout, "simlsh-dedup", ref)
        p = mpmd(dirs, ["-q", "--lines", "in.lines", "--output", "pairs"])
        check(p.returncode == 0 and p.stdout == ref.stdout, "copies that agree", p)
        ref = single(["-q", "d", "--output", "pairs"], dirs[0])
        p = mpmd(dirs, ["-q", "d", "--output", "pairs"])
        check(p.returncode == 0 and p.stdout == ref.stdout, "directories that agree", p)

        os.unlink(os.path.join(dirs[1], "in.lines"))
        refused(["--lines", "in.lines"], 1,
                "in.lines: No such file or directory (rank 0 reads it: %d bytes)" % size,
                "line file missing")
        fresh()
        with open(os.path.join(dirs[2], "in.lines"), "r+b") as f:
            f.truncate(size // 2)
        os.utime(os.path.join(dirs[2], "in.lines"), (stamp, stamp))
        refused(["--lines", "in.lines"], 2,
                "in.lines: %d bytes here, %d on rank 0" % (size // 2, size), "shorter copy")
        fresh()
        os.unlink(os.path.join(dirs[1], "in.lines"))
        os.mkdir(os.path.join(dirs[1], "in.lines"))
        refused(["--lines", "in.lines"], 1, "in.lines: a directory here", "a directory")
        fresh()
        os.utime(os.path.join(dirs[1], "in.lines"), (stamp + 1, stamp + 1))
        refused(["--lines", "in.lines", "--output", "pairs"], 1,
                "in.lines: modified 2020-09-13 12:26:41.000000000 UTC here, "
                "2020-09-13 12:26:40.000000000 UTC on rank 0", "another time")
        fresh()
        gone = sorted(os.listdir(os.path.join(dirs[1], "d")))[3]
        os.unlink(os.path.join(dirs[1], "d", gone))
        refused(["d"], 1, "d/%s: No such file or directory" % gone, "a file of d missing")
        fresh()
        write_lines(os.path.join(dirs[2], "d", "zz-more.txt"), lines[:3])
        refused(["d"], 2, "d/zz-more.txt: read here", "one more file in d")
        fresh()
        shutil.rmtree(os.path.join(dirs[1], "d"))
        refused(["--lines", "in.lines", "d"], 1, "d/", "d missing")


def case_fullfile():
    """An output that cannot be written (issue 31 F13: the old tool exited
    4 with no message when rank 0's writes of the pairs failed). Each rank
    runs with a file size limit of 16 KiB (ulimit -f, SIGXFSZ ignored), so
    a write past it fails with EFBIG as one on a full disk fails with
    ENOSPC. The ranks talk over TCP on the loopback interface: the shared
    memory transport's files would hit the limit first. Status 4, a
    message of simlsh-dedup-mpi naming the file and the cause, and the old
    file kept."""
    rnd = random.Random(13)
    with tempfile.TemporaryDirectory() as tmp:
        lines = [" ".join("w%d" % rnd.randrange(5000) for _ in range(12)) for _ in range(1500)]
        write_lines(os.path.join(tmp, "in.lines"), lines + lines)
        env = dict(ENV, OMPI_MCA_btl="self,tcp", OMPI_MCA_btl_tcp_if_include="lo")
        out = os.path.join(tmp, "out.tsv")
        ref = single(["-q", "--lines", "in.lines", "--output", "pairs", "--verify", "estimate"],
                     tmp)
        check(ref.returncode == 0 and len(ref.stdout) > 16384, "pairs past the limit", ref)
        for n, output in ((1, "pairs"), (2, "pairs"), (3, "pairs"), (2, "clusters")):
            with open(out, "w") as f:
                f.write("old\n")
            cmd = [MPIRUN, "--oversubscribe", "-np", str(n), "sh", "-c",
                   'ulimit -f 16; trap "" XFSZ; exec "$0" "$@"', DEDUP_MPI, "-q", "--lines",
                   "in.lines", "--output", output, "--verify", "estimate", "-o", "out.tsv"]
            try:
                p = subprocess.run(cmd, cwd=tmp, capture_output=True, env=env, timeout=TIMEOUT,
                                   stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                fail("-np %d: no answer in %d s (a rank waits)" % (n, TIMEOUT))
            what = "-np %d --output %s" % (n, output)
            check(p.returncode == 4, "%s: status %d, expected 4" % (what, p.returncode), p)
            check(b"simlsh-dedup-mpi: out.tsv: cannot write: File too large" in p.stderr,
                  "%s: the message" % what, p)
            check(read(out) == b"old\n", "%s: the old file is kept" % what, p)
            check(sorted(os.listdir(tmp)) == ["in.lines", "out.tsv"],
                  "%s: files left: %s" % (what, os.listdir(tmp)), p)


def case_reread():
    """Inputs changed between the two passes: each owner finds its
    documents changed and sends the reason instead of the text; the pairs
    are decided by estimate, as simlsh-dedup decides them, with a warning
    and the summary's line."""
    with tempfile.TemporaryDirectory() as tmp:
        write_lines(os.path.join(tmp, "a.txt"), corpus_lines(tmp, 200, 8))
        shutil.copytree(SAMPLE, os.path.join(tmp, "files"))
        common = ["--output", "pairs", "--bands", "16", "--rows", "6"]
        for n in (2, 3):
            est = single(["-q", "--lines", "a.txt", "files", "--verify", "estimate"] + common,
                         tmp)
            check(est.returncode == 0 and est.stdout, "estimate run", est)
            flag = os.path.join(tmp, "paused")
            env = dict(ENV, SIMLSH_DEDUP_MPI_PAUSE=flag)
            cmd = [MPIRUN, "--oversubscribe", "-np", str(n), DEDUP_MPI, "--lines", "a.txt",
                   "files", "--verify", "exact"] + common
            proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for _ in range(6000):
                if os.path.exists(flag) or proc.poll() is not None:
                    break
                time.sleep(0.01)
            check(os.path.exists(flag), "the run pauses between the passes")
            stamp = int(time.time()) + 100 * n
            for root, _, names in os.walk(tmp):
                for name in names:
                    if name != "paused":
                        os.utime(os.path.join(root, name), (stamp, stamp))
            os.unlink(flag)
            out, err = proc.communicate(timeout=TIMEOUT)
            p = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
            check(p.returncode == 0, "-np %d: status" % n, p)
            check(b"changed since it was first read" in err, "-np %d: the reason given" % n, p)
            check(b"documents that could not be read again" in err,
                  "-np %d: the summary says so" % n, p)
            check(out == est.stdout, "-np %d: pairs decided by estimate" % n, p)


def case_output_checks():
    """Issue 30: the outputs are checked as simlsh-dedup checks them (one
    function of the core): a --files-from list is an input, so -o may not
    replace it, and two outputs that name one file by different paths
    (out.tsv, ./out.tsv) are refused; simlsh-dedup-mpi used to write both."""
    with tempfile.TemporaryDirectory() as tmp:
        write_lines(os.path.join(tmp, "a.txt"), corpus_lines(tmp, count=40))
        lst = os.path.join(tmp, "list.txt")
        for args, says in (
                (["-q", "--files-from", "list.txt", "-o", "list.txt"],
                 b"-o list.txt: is one of the inputs"),
                (["-q", "--lines", "a.txt", "-o", "out.tsv", "--stats", "./out.tsv"],
                 b"--stats ./out.tsv: also the file of -o")):
            for n in (0, 1, 2):
                with open(lst, "wb") as f:
                    f.write(b"a.txt\n")
                if os.path.exists(os.path.join(tmp, "out.tsv")):
                    os.unlink(os.path.join(tmp, "out.tsv"))
                p = single(args, tmp) if n == 0 else mpi(n, args, tmp)
                who = "simlsh-dedup" if n == 0 else "-np %d" % n
                check(p.returncode == 2, "%s %s: status %d, expected 2"
                      % (who, args, p.returncode), p)
                check(says in p.stderr, "%s %s: the reason given" % (who, args), p)
                check(read(lst) == b"a.txt\n"
                      and not os.path.exists(os.path.join(tmp, "out.tsv")),
                      "%s %s: no file written" % (who, args), p)


CASES = {"heavy": case_heavy, "replace-many": case_replace_many, "fullfile": case_fullfile, "views": case_views, "pernode": case_pernode, "reread": case_reread, "buckets": case_buckets, "groups": case_groups, "stdin": case_stdin, "index": case_index, "files": case_files, "lines": case_lines, "outputs": case_outputs,
         "exact": case_exact, "estimate": case_estimate, "none": case_none,
         "components": case_components, "no-input": case_no_input, "unreadable": case_unreadable,
         "failure": case_failure, "output-checks": case_output_checks}

if __name__ == "__main__":
    CASES[CASE]()
    print("ok:", CASE)
