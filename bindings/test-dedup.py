#!/usr/bin/env python3
"""Every front end of the library's dedup engine gives the same groups
(issue 27, item 5): simlsh-dedup, Python's simlsh.dedup() and the Go, Rust
and Node dedup examples, on one corpus, byte for byte in the format of
`simlsh-dedup --output clusters`.

Usage: test-dedup.py SOURCE_ROOT BUILD_ROOT LIBDIR SIMLSH_DEDUP [--python]
                     [--mpi MPIRUN SIMLSH_DEDUP_MPI]

The corpus is written here (seeded): planted groups of 120, 15, 4 and 2
near-copies (1 to 3 of 200 words changed), unrelated texts, pairs edited to a
Jaccard just above and just below the threshold, a chain whose ends are
further apart than the threshold, copies differing only in case and
spacing, texts with accents and with invalid UTF-8, an empty and a blank
file, names with a space and with accents, and data/sample (real texts).
Each front end runs in exact mode (the default) and with --threshold 0.7,
the examples with small batches (--memory), so that the pull loop takes
many rounds; the planted groups must be among the clusters. --python:
the Python package is built, so simlsh.dedup() must take part. --mpi:
simlsh-dedup-mpi takes part too, on 1 and 3 ranks (it groups through its
verified pairs, by the same rule: the same groups).

Toolchains are those of run-test.py (toolchain.py, in BUILD_ROOT/bindings).
A missing toolchain leaves its binding out (said on the output); with none
of the three, the test is skipped (77).
"""
import os
import random
import shutil
import subprocess
import sys
import tempfile

from toolchain import Skip, Toolchains

src, build, libdir, dedup = sys.argv[1:5]
with_python = "--python" in sys.argv[5:]
mpi = ([os.path.abspath(p) for p in sys.argv[sys.argv.index("--mpi") + 1:][:2]]
       if "--mpi" in sys.argv else None)
src, dedup = os.path.abspath(src), os.path.abspath(dedup)


def vocabulary(rng, n=4000):
    words = set()
    while len(words) < n:
        words.add("".join(rng.choice("abcdefghijklmnopqrstuvwxyz")
                          for _ in range(rng.randint(3, 9))))
    return sorted(words)


def edit(rng, vocab, words, k):
    out = list(words)
    for p in rng.sample(range(len(out)), k):
        out[p] = rng.choice(vocab)
    return out


def corpus(root):
    """Write the corpus under root; return the planted groups (lists of
    paths as the tool names them, in input order)."""
    rng = random.Random(27)
    vocab = vocabulary(rng)
    docs = {}  # name -> bytes
    planted = []
    n = 0

    def put(words, group=None):
        nonlocal n
        name = os.path.join(root, "shapes", "%03d" % (n // 100), "doc-%04d.txt" % n)
        n += 1
        docs[name] = (" ".join(words) + "\n").encode()
        if group is not None:
            group.append(name)

    # Planted groups, members interleaved with unrelated texts, so that
    # input order is not group order.
    members = []
    for size, count in ((120, 1), (15, 4), (4, 10), (2, 20)):
        for _ in range(count):
            base = [rng.choice(vocab) for _ in range(200)]
            g = []
            planted.append(g)
            members += [(edit(rng, vocab, base, rng.randint(1, 3)), g) for _ in range(size)]
    members += [([rng.choice(vocab) for _ in range(200)], None) for _ in range(200)]
    rng.shuffle(members)
    for words, g in members:
        put(words, g)
    # Pairs near the thresholds: 100 words, 6..12 of them changed (Jaccard
    # of character 5-shingles from about 0.85 down to 0.7), decided by
    # exact verification, not by the estimate.
    for k in range(6, 13):
        for _ in range(3):
            base = [rng.choice(vocab) for _ in range(100)]
            put(base)
            put(edit(rng, vocab, base, k))
    # A chain a - b - c: each step about 0.8, the ends about 0.65.
    a = [rng.choice(vocab) for _ in range(100)]
    b = edit(rng, vocab, a, 8)
    c = edit(rng, vocab, b, 8)
    for words in (a, b, c):
        put(words)
    # Case and spacing only: one group under the "dedup" preset.
    text = " ".join(rng.choice(vocab) for _ in range(50))
    special = os.path.join(root, "special")
    docs[os.path.join(special, "Upper Case.txt")] = text.upper().encode()
    docs[os.path.join(special, "spaced.txt")] = text.replace(" ", "   \n ").encode()
    docs[os.path.join(special, "plain.txt")] = text.encode()
    planted.append(sorted(os.path.join(special, f)
                          for f in ("Upper Case.txt", "plain.txt", "spaced.txt")))
    # Accents (code points of 2 and 3 bytes), a near-copy; invalid UTF-8.
    accents = "Le café du théâtre ouvre à l'aube; €5 le crème, naïve façade. " * 6
    docs[os.path.join(special, "café-1.txt")] = accents.encode()
    docs[os.path.join(special, "café-2.txt")] = accents.replace("aube", "aurore").encode()
    broken = (b"caf\xe9 \xff\xfe invalid bytes in a latin-1 text, " * 8)
    docs[os.path.join(special, "latin1-a.txt")] = broken
    docs[os.path.join(special, "latin1-b.txt")] = broken + b"\xe9"
    docs[os.path.join(special, "empty.txt")] = b""
    docs[os.path.join(special, "blank.txt")] = b" \n\t \n"
    for name, data in docs.items():
        os.makedirs(os.path.dirname(name), exist_ok=True)
        with open(name, "wb") as f:
            f.write(data)
    shutil.copytree(os.path.join(src, "data", "sample"), os.path.join(root, "sample"))
    return [g for g in planted if len(g) >= 2]


def walk(path, out):
    """The tool's walk: depth first, names in byte order, regular files."""
    if os.path.isdir(path) and not os.path.islink(path):
        for name in sorted(os.listdir(os.fsencode(path))):
            walk(os.path.join(path, os.fsdecode(name)), out)
    elif os.path.isfile(path):
        out.append(path)


def escape(name):
    return (name.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
            .replace("\r", "\\r"))


def python_clusters(root, threshold):
    sys.path.insert(0, os.path.join(src, "python"))
    os.environ["SIMLSH_LIBRARY"] = os.path.join(os.path.abspath(libdir), "libsimlsh.so.1")
    import simlsh
    names = []
    walk(root, names)
    texts = []
    for name in names:
        with open(name, "rb") as f:
            texts.append(f.read())
    kw = {} if threshold is None else {"threshold": threshold}
    groups, _ = simlsh.dedup(texts, keys=names, threads=2, **kw)
    return "".join("\t".join(escape(n) for n in g) + "\n" for g in groups).encode()


def main():
    tc = Toolchains(src, build, libdir)
    examples = {}
    for binding in ("go", "rust", "node"):
        try:
            tc.prepare(binding)
            examples[binding] = tc.example(binding)
        except Skip as e:
            print("left out: %s (%s)" % (binding, e))
    if not examples:
        print("SKIP: no binding's toolchain")
        return 77
    with tempfile.TemporaryDirectory(prefix="simlsh-bindings-dedup-") as tmp:
        root = os.path.join(tmp, "corpus")
        planted = corpus(root)
        for threshold in (None, "0.7"):
            opts = [] if threshold is None else ["--threshold", threshold]
            tool = tc.run([dedup, "--quiet", "-j", "2"] + opts + [root], cwd=tmp,
                          capture_output=True).stdout
            lines = set(tool.decode().splitlines())
            missing = [g for g in planted if "\t".join(g) not in lines]
            if missing or len(lines) < len(planted):
                sys.stdout.write(tool.decode())
                print("FAIL: simlsh-dedup %s: %d of %d planted groups are not clusters, "
                      "e.g. %d documents from %s" % (" ".join(opts), len(missing), len(planted),
                                                     len(missing[0]), missing[0][0]))
                return 1
            outputs = {}
            if with_python:
                outputs["python"] = python_clusters(root, None if threshold is None
                                                    else float(threshold))
            for k, (binding, cmd) in enumerate(sorted(examples.items())):
                # small batches, each a different size: many rounds of the loop
                extra = ["--memory", str(4096 << (3 * k)), "-j", str(1 + k % 2)]
                outputs[binding] = tc.run(cmd + opts + extra + [root], cwd=tmp,
                                          capture_output=True).stdout
            if mpi:
                env = dict(tc.env, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                           OMPI_MCA_plm_rsh_agent="", OMPI_MCA_btl="self,vader",
                           OMPI_MCA_pml="ob1", OMPI_MCA_hwloc_base_binding_policy="none")
                for n in (1, 3):
                    cmd = [mpi[0], "--oversubscribe", "-np", str(n), mpi[1], "--quiet"]
                    print("+", " ".join(cmd + opts + [root]), flush=True)
                    outputs["mpi-%d" % n] = subprocess.run(
                        cmd + opts + [root], cwd=tmp, env=env, check=True,
                        capture_output=True, timeout=300).stdout
            for who, out in outputs.items():
                if out != tool:
                    print("--- simlsh-dedup\n%s--- %s\n%s" % (tool.decode(), who, out.decode()))
                    print("FAIL: %s's groups differ from simlsh-dedup's (%s)" % (who, opts))
                    return 1
            print("ok: %s: %d groups (%d planted), identical from simlsh-dedup and %s"
                  % (" ".join(opts) or "defaults", len(lines), len(planted),
                     ", ".join(sorted(outputs))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
