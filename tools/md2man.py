#!/usr/bin/env python3
"""Turn docs/cli.md into the simlsh-dedup(1) man page.

Usage: md2man.py INPUT.md OUTPUT.1 VERSION

docs/cli.md is the one source of the manual; this converts the subset of
Markdown it uses (headings, paragraphs, definition lists written as a term
line followed by ": text", bullet lists, fenced code blocks, pipe tables,
`code`, *emphasis*, **bold**) into man(7) macros, so the installed page and
the document cannot drift apart. Output is deterministic (no date).
"""
import re
import sys


def esc(text):
    """Escape what troff would interpret in running text."""
    text = text.replace("\\", "\\e")
    text = text.replace("-", "\\-")
    # a line starting with . or ' would be a request
    return text


def inline(text):
    out = []
    pos = 0
    # `code`, **bold**, *italic*, in the order they appear
    for m in re.finditer(r"`([^`]+)`|\*\*([^*]+)\*\*|\*([^*\s][^*]*)\*", text):
        out.append(esc(text[pos:m.start()]))
        if m.group(1) is not None:
            out.append("\\fB" + esc(m.group(1)) + "\\fR")
        elif m.group(2) is not None:
            out.append("\\fB" + esc(m.group(2)) + "\\fR")
        else:
            out.append("\\fI" + esc(m.group(3)) + "\\fR")
        pos = m.end()
    out.append(esc(text[pos:]))
    line = "".join(out)
    if line.startswith((".", "'")):
        line = "\\&" + line
    return line


def table_rows(lines):
    rows = []
    for line in lines:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if all(re.fullmatch(r":?-+:?", c) for c in cells):
            continue
        rows.append(cells)
    return rows


def convert(md, version):
    lines = md.splitlines()
    out = ['.TH SIMLSH\\-DEDUP 1 "" "simlsh %s" "User Commands"' % version]
    i = 0
    para = []

    def flush():
        if para:
            out.append(".PP")
            out.append(inline(" ".join(para)))
            para.clear()

    while i < len(lines):
        line = lines[i]
        if line.startswith("# "):
            i += 1
            continue
        if line.startswith("## "):
            flush()
            out.append(".SH " + esc(line[3:].strip()))
            i += 1
            continue
        if line.startswith("### "):
            flush()
            out.append(".SS " + esc(line[4:].strip()))
            i += 1
            continue
        if line.startswith("```"):
            flush()
            out.append(".PP")
            out.append(".nf")
            out.append(".RS 4")
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                code = esc(lines[i])
                out.append("\\&" + code if code.startswith((".", "'")) else code)
                i += 1
            out.append(".RE")
            out.append(".fi")
            i += 1
            continue
        if line.startswith("|"):
            flush()
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append(lines[i])
                i += 1
            rows = table_rows(block)
            out.append(".PP")
            for n, row in enumerate(rows):
                out.append(".TP")
                out.append(("\\fB%s\\fR" if n == 0 else "%s") % inline(row[0]))
                out.append(" \\(em ".join(inline(c) for c in row[1:]) or "\\&")
            out.append(".PP")
            continue
        if line.strip() == "":
            flush()
            i += 1
            continue
        # a definition: term line, then ": text" and indented continuation
        if i + 1 < len(lines) and lines[i + 1].startswith(": "):
            flush()
            out.append(".TP")
            out.append(inline(line.strip()))
            i += 1
            body = [lines[i][2:]]
            i += 1
            while i < len(lines) and lines[i].startswith("  "):
                if lines[i].strip() == "":
                    break
                body.append(lines[i].strip())
                i += 1
            # an indented table or code block inside a definition
            out.append(inline(" ".join(body)))
            while i < len(lines) and (lines[i].strip() == "" and i + 1 < len(lines)
                                      and lines[i + 1].startswith("  ")):
                i += 1
                sub = []
                while i < len(lines) and lines[i].startswith("  "):
                    sub.append(lines[i][2:])
                    i += 1
                out.append(".RS")
                out.extend(convert_block(sub))
                out.append(".RE")
            continue
        if line.startswith("- "):
            flush()
            item = [line[2:]]
            i += 1
            while i < len(lines) and lines[i].startswith("  ") and lines[i].strip():
                item.append(lines[i].strip())
                i += 1
            out.append(".IP \\(bu 2")
            out.append(inline(" ".join(item)))
            continue
        para.append(line.strip())
        if not para[-1]:
            para.pop()
        i += 1
    flush()
    return "\n".join(out) + "\n"


def convert_block(lines):
    body = convert("\n".join(lines), "")
    return body.splitlines()[1:]  # without its .TH


def main():
    src, dst, version = sys.argv[1:4]
    with open(src, encoding="utf-8") as f:
        md = f.read()
    page = convert(md, version)
    with open(dst, "w", encoding="utf-8") as f:
        f.write(page)


if __name__ == "__main__":
    main()
