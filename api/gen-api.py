#!/usr/bin/env python3
"""Generate the machine-readable description of simlsh's public API from
include/simlsh.h, for binding generators (issue 16).

Usage:
  gen-api.py HEADER OUT.json           the description (installed as
                                       share/simlsh/simlsh-api.json)
  gen-api.py --check-c HEADER OUT.c    a C program that prints, from the real
                                       header, every constant's value and
                                       whether every function's type is the
                                       one described (tests/check-api.py)

The header is read as text (python3 standard library only): comments and
preprocessor lines are set aside, then
  - functions: every "SIMLSH_API <return> <name>(<params>);", with
    SIMLSH_OUT marking out-parameters and SIMLSH_BORROWED borrowed returns;
  - constants: every "SIMLSH_NAME = <integer>" in an enum, the error codes
    of SIMLSH_ERRNO_MAP and the SIMLSH_VERSION_* numbers;
  - handles: every "typedef struct simlsh_x simlsh_x;" (opaque types);
  - structs: every "typedef struct simlsh_x { ... } simlsh_x;".
Each item keeps the documentation comment written right before it.
"""

import json
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def doc_text(raw):
    """The text of a /** ... */ comment without the stars."""
    body = raw[3:-2]
    lines = [re.sub(r"^\s*\*? ?", "", line).rstrip() for line in body.splitlines()]
    return "\n".join(lines).strip()


def tokenize(text):
    """[(kind, text, doc)]: code chunks between comments, each with the doc
    comment right before it (or None). Preprocessor lines are dropped."""
    out, doc, pos = [], None, 0
    for m in re.finditer(r"/\*.*?\*/|//[^\n]*", text, flags=re.S):
        code = text[pos:m.start()]
        if code.strip():
            out.append((code, doc))
            doc = None
        c = m.group(0)
        if c.startswith("/**") and not c.startswith("/**<"):
            doc = doc_text(c)
        elif c.startswith("/**<") and out:
            pass  # member docs: kept with constants below
        pos = m.end()
    out.append((text[pos:], doc))
    return out


def strip_directives(code):
    keep, cont = [], False
    for line in code.splitlines():
        if cont or line.lstrip().startswith("#"):
            cont = line.rstrip().endswith("\\")
            continue
        keep.append(line)
    return "\n".join(keep)


def parse_type(decl):
    """'const simlsh_params *' -> dict."""
    t = " ".join(decl.replace("*", " * ").split())
    t = t.replace("* ", "*").replace(" *", " *")
    words = [w for w in re.split(r"[\s*]+", t) if w]
    base = [w for w in words if w not in ("const",)]
    segments = t.split("*")
    return {
        "pointee_const": len(segments) > 1 and "const" in segments[-2].split(),
        "c": t.replace(" *", " *").strip(),
        "base": " ".join(base),
        "pointer": t.count("*"),
        "const": "const" in words,
    }


def split_params(s):
    s = s.strip()
    if s in ("", "void"):
        return []
    return [p.strip() for p in s.split(",")]


def parse_function(decl, doc, handles):
    decl = " ".join(decl.split())
    m = re.match(r"^(.*?)\b(" + IDENT + r")\s*\((.*)\)$", decl)
    if not m:
        raise SystemExit("cannot parse declaration: " + decl)
    ret, name, params = m.group(1).strip(), m.group(2), m.group(3)
    borrowed = "SIMLSH_BORROWED" in ret.split()
    ret = " ".join(w for w in ret.split() if w != "SIMLSH_BORROWED")
    rtype = parse_type(ret)
    if rtype["pointer"] and borrowed:
        ownership = "borrowed"
    elif rtype["pointer"] and rtype["base"] == "char":
        ownership = "static"
    else:
        ownership = None
    returns = {"type": rtype["c"], "base": rtype["base"], "pointer": rtype["pointer"],
               "const": rtype["const"]}
    if ownership:
        returns["ownership"] = ownership
    # "status": 0 or a negative code; "value": a non-negative value (count,
    # boolean) or a negative code; plain types otherwise.
    if rtype["c"] == "int":
        # The six int functions that return a value say "@return 1 if ..."
        # or "@return num_perm"; every other int is a status.
        value = re.search(r"@return (1 if|num_perm\b|the number)", doc or "")
        returns["kind"] = "value" if value else "status"
    elif rtype["c"] == "void":
        returns["kind"] = "void"
    elif rtype["pointer"]:
        returns["kind"] = "pointer"
    else:
        returns["kind"] = "value"
    out_params = []
    for i, p in enumerate(split_params(params)):
        words = p.split()
        direction = "out" if "SIMLSH_OUT" in words else "in"
        p = " ".join(w for w in words if w != "SIMLSH_OUT")
        pm = re.match(r"^(.*?)(" + IDENT + r")$", p)
        if not pm or not pm.group(1).strip():
            raise SystemExit("cannot parse parameter %r of %s" % (p, name))
        t = parse_type(pm.group(1))
        entry = {"name": pm.group(2), "type": t["c"], "base": t["base"],
                 "pointer": t["pointer"], "const": t["const"], "direction": direction}
        if t["pointer"]:
            # whether the call may write where the pointer points
            entry["pointee_const"] = t["pointee_const"]
        if t["base"] in handles:
            entry["handle"] = t["base"]
        out_params.append(entry)
    fn = {"name": name, "returns": returns, "params": out_params}
    if doc:
        fn["doc"] = doc
        since = re.search(r"Since (\d+\.\d+)", doc)
        fn["since"] = since.group(1) if since else "0.1"
        threads = re.search(r"Threads:\s*(.*?)(?:\n\s*\n|$)", doc, flags=re.S)
        if threads:
            fn["threads"] = " ".join(threads.group(1).split())
    return fn


def parse(header_text):
    chunks = tokenize(header_text)
    handles = set(re.findall(r"typedef\s+struct\s+(" + IDENT + r")\s+\1\s*;", header_text))
    functions, constants, handle_list, structs = [], [], [], []
    # Functions: the doc of the chunk a declaration starts in.
    for code, doc in chunks:
        code = strip_directives(code)
        for m in re.finditer(r"\bSIMLSH_API\b([^;]*);", code):
            before = code[:m.start()]
            fdoc = doc if not re.search(r";", before) else None
            functions.append(parse_function(m.group(1), fdoc, handles))
        for m in re.finditer(r"typedef\s+struct\s+(" + IDENT + r")\s+\1\s*;", code):
            entry = {"name": m.group(1)}
            if doc:
                entry["doc"] = doc
                t = re.search(r"Threads:\s*(.*?)(?:\n\s*\n|$)", doc, flags=re.S)
                if t:
                    entry["threads"] = " ".join(t.group(1).split())
            handle_list.append(entry)
    code_only = re.sub(r"/\*.*?\*/|//[^\n]*", " ", header_text, flags=re.S)
    enum_code = strip_directives(code_only)
    for m in re.finditer(r"typedef\s+struct\s+(" + IDENT + r")\s*\{(.*?)\}\s*\1\s*;", enum_code,
                         flags=re.S):
        fields = []
        for f in m.group(2).split(";"):
            f = " ".join(f.split())
            if not f:
                continue
            fm = re.match(r"^(.*\(\s*\*\s*(" + IDENT + r")\s*\)\s*\(.*\))$", f)
            am = re.match(r"^(.*?)(" + IDENT + r")\s*\[(\d+)\]$", f)
            if fm:
                fields.append({"name": fm.group(2), "decl": f, "kind": "function"})
            elif am:
                fields.append({"name": am.group(2), "decl": f, "kind": "array",
                               "type": parse_type(am.group(1))["c"], "length": int(am.group(3))})
            else:
                vm = re.match(r"^(.*?)(" + IDENT + r")$", f)
                fields.append({"name": vm.group(2), "decl": f, "kind": "value",
                               "type": parse_type(vm.group(1))["c"]})
        entry = {"name": m.group(1), "fields": fields}
        d = re.search(r"(/\*\*(?!<)(?:(?!\*/).)*\*/)\s*typedef\s+struct\s+" + m.group(1) + r"\s*\{",
                      header_text, flags=re.S)
        if d:
            entry["doc"] = doc_text(d.group(1))
        structs.append(entry)
    # Constants: enum members with literal values, grouped by enum.
    for em in re.finditer(r"\benum\b\s*(" + IDENT + r")?\s*\{(.*?)\}", enum_code, flags=re.S):
        members = re.findall(r"\b(SIMLSH_[A-Z0-9_]+)\s*=\s*(-?(?:0x[0-9a-fA-F]+|\d+))",
                             em.group(2))
        members = [(n, int(v, 0)) for n, v in members
                   if not n.startswith("SIMLSH__") and not n.endswith("_")]
        if not members:
            continue
        names = [n for n, _ in members]
        prefix = names[0]
        for n in names[1:]:
            while not n.startswith(prefix):
                prefix = prefix[:-1]
        prefix = prefix[:prefix.rfind("_") + 1]
        group = em.group(1) or prefix[len("SIMLSH_"):].rstrip("_").lower() or "misc"
        for n, v in members:
            constants.append({"name": n, "value": v, "group": group})
    # The error codes come from the X-macro list.
    for m in re.finditer(r"X\((" + IDENT + r"),\s*(-?\d+),\s*(\"(?:[^\"\\]|\\.)*\")\)",
                         code_only):
        constants.append({"name": "SIMLSH_" + m.group(1), "value": int(m.group(2)),
                          "group": "simlsh_errno", "message": json.loads(m.group(3))})
    for m in re.finditer(r"#define\s+(SIMLSH_VERSION_(?:MAJOR|MINOR|PATCH))\s+(\d+)",
                         code_only):
        constants.append({"name": m.group(1), "value": int(m.group(2)), "group": "version"})
    constants.sort(key=lambda c: (c["group"], c["value"], c["name"]))
    return {
        "format": 1,
        "library": "simlsh",
        "header": "simlsh.h",
        "soname": "libsimlsh.so.1",
        "pkg_config": "simlsh",
        "conventions": {
            "status": "int: 0 on success, a negative SIMLSH_E* code on failure",
            "value": "int: a non-negative value (count, 0/1), or a negative code",
            "out": "out-parameters come first; written only on success unless "
                   "documented (constructors set *out to NULL on failure)",
            "borrowed": "valid until the owning object is next filled or freed",
            "static": "static storage; never freed",
            "text": "bytes plus a byte length (not NUL-terminated)",
        },
        "handles": handle_list,
        "structs": structs,
        "constants": constants,
        "functions": functions,
    }


def c_check(api):
    """A C program printing 'const NAME VALUE' for every constant and
    'type NAME 0|1' for every function (1: its type is the described one)."""
    lines = ['#include <inttypes.h>', '#include <stdio.h>', '#include "simlsh.h"', "",
             "int main(void)", "{"]
    for c in api["constants"]:
        lines.append('    printf("const %s %%lld\\n", (long long)(%s));' % (c["name"], c["name"]))
    for f in api["functions"]:
        params = ", ".join(p["type"] for p in f["params"]) or "void"
        ftype = "%s (*)(%s)" % (f["returns"]["type"], params)
        lines.append('    printf("type %s %%d\\n", __builtin_types_compatible_p('
                     '__typeof__(&%s), %s));' % (f["name"], f["name"], ftype))
    # Every constant of an enumerated kind has a run-time name.
    kinds = {"simlsh_errno": "SIMLSH_KIND_ERROR", "param": "SIMLSH_KIND_PARAM",
             "unit": "SIMLSH_KIND_UNIT", "norm": "SIMLSH_KIND_NORMALIZE",
             "utf8": "SIMLSH_KIND_UTF8_POLICY", "scheme": "SIMLSH_KIND_SCHEME",
             "isa": "SIMLSH_KIND_ISA", "scope": "SIMLSH_KIND_SCOPE",
             "query": "SIMLSH_KIND_QUERY_FLAG", "simlsh_dedup_mode": "SIMLSH_KIND_DEDUP_MODE",
             "simlsh_dedup_key": "SIMLSH_KIND_DEDUP_KEY",
             "simlsh_dedup_stat": "SIMLSH_KIND_DEDUP_STAT",
             "simlsh_dedup_cluster": "SIMLSH_KIND_DEDUP_CLUSTER"}
    for c in api["constants"]:
        if c["group"] in kinds:
            lines.append('    printf("name %s %%s\\n", simlsh_constant_name(%s, %s) ? '
                         'simlsh_constant_name(%s, %s) : "(null)");'
                         % (c["name"], kinds[c["group"]], c["name"], kinds[c["group"]],
                            c["name"]))
    lines += ["    return 0;", "}", ""]
    return "\n".join(lines)


def main(argv):
    check = argv[1:2] == ["--check-c"]
    args = argv[2:] if check else argv[1:]
    if len(args) != 2:
        sys.exit(__doc__)
    with open(args[0], encoding="utf-8") as f:
        api = parse(f.read())
    text = c_check(api) if check else json.dumps(api, indent=1, sort_keys=False) + "\n"
    with open(args[1], "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main(sys.argv)
