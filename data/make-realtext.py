#!/usr/bin/env python3
"""Build a real-text corpus from what a Debian machine already has.

    data/make-realtext.py OUTDIR [--max-mb N] [--max-docs N] [--sources LIST]
                          [--lines FILE] [--man raw|render]

Sources, taken in this order (each sorted by path):
  licenses   /usr/share/common-licenses/*
  copyright  /usr/share/doc/*/copyright
  man        /usr/share/man/**/*.gz, untranslated pages (man1..man9) first,
             then the translations; decompressed with gzip (raw roff), or
             rendered to plain text with `man -l` when --man render is given

Real collections are what the quality bench needs: licence versions,
copyright files of packages built from one source, and templated man pages
put many pairs just below and just above any threshold, unlike synthetic
corpora.

A file reached twice (a symbolic link to another source file, a doc
directory that links to another package's) is taken once, named by the path
that reaches it without a link when there is one, else by its first path.
`.so` man page stubs (aliases) and empty files are skipped. Identical texts
in different files are kept: they are real duplicates. The caps stop the
walk at the first document that would exceed them, so a smaller cap gives a
prefix of a larger corpus.

OUTDIR gets licenses/NAME, copyright/PACKAGE and man/RELPATH (without .gz);
it must not exist or be empty. --lines FILE also writes the corpus with one
document per line, in the same order, each newline or carriage return inside
a document replaced by a space (with `--normalize space`, the tool's default,
both forms give the same shingles), and FILE.names the path of each line
relative to OUTDIR. A JSON summary goes to standard output.

Nothing here is committed: the corpus depends on the installed packages, so
record the summary (docs, bytes, digest) with any number measured on it.
"""
import argparse
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys

LICENSES = "/usr/share/common-licenses"
DOC = "/usr/share/doc"
MAN = "/usr/share/man"


def licenses(root):
    if not os.path.isdir(root):
        return
    for name in sorted(os.listdir(root)):
        yield name, "licenses/" + name


def copyrights(root):
    if not os.path.isdir(root):
        return
    for pkg in sorted(os.listdir(root)):
        yield os.path.join(pkg, "copyright"), "copyright/" + pkg


def man_pages(root):
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for f in filenames:
            if f.endswith(".gz"):
                found.append(os.path.relpath(os.path.join(dirpath, f), root))
    # Untranslated pages first: a capped corpus then holds English pages,
    # whose near-duplicates (families of related commands) are the
    # interesting ones, rather than the first languages in byte order.
    found.sort(key=lambda rel: (not rel.startswith("man"), rel))
    for rel in found:
        yield rel, "man/" + rel[:-3]


def resolve(root, entries):
    """(path, name, real) of the regular files among entries (paths relative
    to root), each real file once: under its own name when some entry
    reaches it without a symbolic link (GPL-3 rather than the link GPL),
    else under the first link to it."""
    root_real = os.path.realpath(root)
    rows = []
    for rel, name in entries:
        path = os.path.join(root, rel)
        real = os.path.realpath(path)
        if os.path.isfile(real):
            rows.append((path, name, real, real == os.path.join(root_real, rel)))
    direct = {real for _, _, real, d in rows if d}
    seen = set()
    for path, name, real, d in rows:
        if (not d and real in direct) or real in seen:
            continue
        seen.add(real)
        yield path, name, real


def is_so_stub(text):
    lines = [l for l in text.split(b"\n") if l.strip() and not l.startswith(b".\\\"")]
    return len(lines) == 1 and lines[0].startswith(b".so ")


def read_man(path, mode):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    # checked on the source: `man -l` would render the page a stub points to
    if is_so_stub(raw):
        return None
    if mode == "render":
        env = dict(os.environ, MANWIDTH="80", MAN_KEEP_FORMATTING="0", LC_ALL="C.UTF-8")
        p = subprocess.run(["man", "-l", "-E", "UTF-8", path], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, env=env, check=False)
        if p.returncode != 0:
            return None
        out = bytearray()
        data = p.stdout
        i = 0
        # Strip backspace overstriking (bold "a\ba", underline "_\ba").
        while i < len(data):
            if i + 2 < len(data) and data[i + 1] == 8:
                i += 2
                continue
            out.append(data[i])
            i += 1
        return bytes(out)
    return raw


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--max-mb", type=float, default=0, help="cap on total bytes (0: none)")
    ap.add_argument("--max-docs", type=int, default=0, help="cap on documents (0: none)")
    ap.add_argument("--sources", default="licenses,copyright,man",
                    help="comma list of licenses, copyright, man (in this order)")
    ap.add_argument("--lines", metavar="FILE", help="also write one document per line")
    ap.add_argument("--man", choices=["raw", "render"], default="raw",
                    help="raw roff (gzip; default) or `man -l` plain text")
    ap.add_argument("--root", default="/", help=argparse.SUPPRESS)  # tests on fake trees
    a = ap.parse_args()

    srcs = [s for s in a.sources.split(",") if s]
    for s in srcs:
        if s not in ("licenses", "copyright", "man"):
            ap.error("unknown source %r" % s)
    if a.man == "render" and not shutil.which("man"):
        ap.error("--man render needs the man program")
    if os.path.exists(a.outdir) and (not os.path.isdir(a.outdir) or os.listdir(a.outdir)):
        ap.error("%s exists and is not an empty directory" % a.outdir)

    root = lambda p: os.path.join(a.root, p.lstrip("/"))
    gens = {"licenses": (root(LICENSES), licenses),
            "copyright": (root(DOC), copyrights),
            "man": (root(MAN), man_pages)}
    cap_bytes = int(a.max_mb * 1e6) if a.max_mb > 0 else None
    seen = set()
    docs = []  # (relname, bytes)
    per_source = {}
    total = 0
    full = False
    for src in ["licenses", "copyright", "man"]:
        if src not in srcs or full:
            continue
        top, entries = gens[src]
        for path, name, real in resolve(top, entries(top)):
            # a file linked from two sources (a licence text as a copyright
            # file) is taken once, in the first source
            if real in seen:
                continue
            seen.add(real)
            try:
                if src == "man":
                    text = read_man(real, a.man)
                    if text is None:
                        continue
                else:
                    with open(real, "rb") as f:
                        text = f.read()
            except (OSError, EOFError, gzip.BadGzipFile):
                continue
            if not text.strip():
                continue
            if (cap_bytes is not None and total + len(text) > cap_bytes) or \
               (a.max_docs and len(docs) >= a.max_docs):
                full = True
                break
            docs.append((name, text))
            total += len(text)
            per_source[src] = per_source.get(src, 0) + 1

    os.makedirs(a.outdir, exist_ok=True)
    digest = hashlib.sha256()
    for name, text in docs:
        dst = os.path.join(a.outdir, name)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "wb") as f:
            f.write(text)
        digest.update(name.encode() + b"\0" + hashlib.sha256(text).digest())
    summary = {"dir": a.outdir, "docs": len(docs), "bytes": total,
               "sources": per_source, "man": a.man, "capped": full,
               "sha256": digest.hexdigest()[:16]}
    if a.lines:
        # Lines in the order the tool walks OUTDIR (depth first, names in
        # byte order per directory), so line N and the N-th file of the
        # directory run are the same document; FILE.names lists the paths.
        order = sorted(docs, key=lambda d: [c.encode() for c in d[0].split("/")])
        with open(a.lines, "wb") as f:
            for name, text in order:
                f.write(text.replace(b"\r", b" ").replace(b"\n", b" ") + b"\n")
        with open(a.lines + ".names", "w", encoding="utf-8", errors="surrogateescape") as f:
            for name, _ in order:
                f.write(name + "\n")
        summary["lines"] = a.lines
    json.dump(summary, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
