#!/usr/bin/env python3
"""Check that the shared library exports exactly the public API.

Usage: check-symbols.py LIBRARY HEADER MAPFILE

Three lists must be equal:
  * the functions the header declares with SIMLSH_API,
  * the global symbols of the linker version script,
  * the symbols the shared library defines in its dynamic symbol table;
and every exported symbol must carry, as its default version (name@@NODE),
the version node of the map that lists it. The header must not declare a
simlsh_ function without SIMLSH_API (it would be hidden: callers could not
link), and the map's nodes must chain, each inheriting from the one before
(SIMLSH_1.1 { ... } SIMLSH_1.0;), with "local: *;" in the first.

Prints every difference and exits 1 on a mismatch, 0 when all agree, and 77
(skip) when the library is not ELF or neither readelf nor objdump is found.
After libxkbcommon's test/symbols-leak-test.py.
"""

import os
import re
import shutil
import subprocess
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
NODE_NAME = re.compile(r"^SIMLSH_\d+\.\d+$")


def strip_c_comments(text):
    # Block comments become a space (they may separate tokens), line comments
    # vanish. String literals in the header never contain comment markers.
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def strip_directives(text):
    # Drop preprocessor lines, with their backslash continuations, so the
    # definition of SIMLSH_API and the X-macro bodies are not read as code.
    out, in_directive = [], False
    for line in text.splitlines():
        if in_directive or line.lstrip().startswith("#"):
            in_directive = line.rstrip().endswith("\\")
            continue
        out.append(line)
    return "\n".join(out)


def header_functions(path):
    with open(path, encoding="utf-8") as f:
        code = strip_directives(strip_c_comments(f.read()))
    api, problems = set(), []
    # Each SIMLSH_API declaration runs to its ';'; the function's name is the
    # identifier right before the first '('.
    for m in re.finditer(r"\bSIMLSH_API\b([^;]*);", code):
        decl = m.group(1)
        name = re.search(r"(" + IDENT + r")\s*\(", decl)
        if name is None:
            problems.append("SIMLSH_API on something that is not a function: "
                            + " ".join(decl.split()))
            continue
        if name.group(1) in api:
            problems.append("declared twice: " + name.group(1))
        api.add(name.group(1))
    # Any other simlsh_*( is a function declared without SIMLSH_API.
    for name in set(re.findall(r"\b(simlsh_[A-Za-z0-9_]*)\s*\(", code)) - api:
        problems.append("declared without SIMLSH_API (hidden): " + name)
    return api, problems


def map_nodes(path):
    """[(node, parent, globals, has_local_star)] in file order."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = strip_c_comments(text)
    text = re.sub(r"#[^\n]*", "", text)
    nodes = []
    for m in re.finditer(r"(" + r"[A-Za-z_][A-Za-z0-9_.]*" + r")\s*\{(.*?)\}\s*("
                         + r"[A-Za-z_][A-Za-z0-9_.]*" + r")?\s*;", text, flags=re.S):
        name, body, parent = m.group(1), m.group(2), m.group(3)
        globs, local_star, section = [], False, "global"
        for item in body.split(";"):
            item = item.strip()
            while True:
                sec = re.match(r"^(global|local)\s*:\s*", item)
                if not sec:
                    break
                section = sec.group(1)
                item = item[sec.end():].strip()
            if not item:
                continue
            if section == "global":
                globs.append(item)
            elif item == "*":
                local_star = True
        nodes.append((name, parent, globs, local_star))
    return nodes


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def exported_readelf(lib):
    """{name: (version or None, default?)} of defined dynamic symbols, and the
    names of the version-definition symbols (ABS, named after a node)."""
    out = subprocess.run(["readelf", "--dyn-syms", "--wide", lib], check=True,
                         capture_output=True, text=True).stdout
    syms, abs_names = {}, set()
    for line in out.splitlines():
        f = line.split()
        # Num: Value Size Type Bind Vis Ndx Name [(n)]
        if len(f) < 8 or not f[0].endswith(":") or not f[0][:-1].isdigit():
            continue
        typ, bind, vis, ndx, name = f[3], f[4], f[5], f[6], f[7]
        if ndx == "UND" or bind not in ("GLOBAL", "WEAK", "GNU_UNIQUE"):
            continue
        if vis not in ("DEFAULT", "PROTECTED"):
            continue
        if ndx == "ABS" and "@" not in name:
            abs_names.add(name)
            continue
        if "@@" in name:
            base, ver = name.split("@@", 1)
            syms[base] = (ver, True)
        elif "@" in name:
            base, ver = name.split("@", 1)
            syms[base] = (ver, False)
        else:
            syms[name] = (None, True)
    return syms, abs_names


def exported_objdump(lib):
    out = subprocess.run(["objdump", "-T", lib], check=True, capture_output=True,
                         text=True).stdout
    syms, abs_names = {}, set()
    for line in out.splitlines():
        # addr flags section size [version] name ; hidden versions in ()
        m = re.match(r"^[0-9a-fA-F]+\s+(.{7})\s+(\S+)\s+[0-9a-fA-F]+\s+(?:(\(?[^\s()]+\)?)\s+)?(\S+)$",
                     line)
        if not m:
            continue
        flags, section, ver, name = m.groups()
        if section == "*UND*" or "l" in flags[:1]:
            continue
        if section == "*ABS*":
            abs_names.add(name)
            continue
        if ver in (None, "Base"):
            syms[name] = (None, True)
        elif ver.startswith("("):
            syms[name] = (ver.strip("()"), False)
        else:
            syms[name] = (ver, True)
    return syms, abs_names


def report(title, names):
    if names:
        print(title)
        for n in sorted(names):
            print("    " + n)


def main(argv):
    if len(argv) != 4:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    lib, header, mapfile = argv[1:]
    if not os.path.exists(lib) or not is_elf(lib):
        print("SKIP: %s is not an ELF shared library" % lib)
        return 77

    ok = True
    api, problems = header_functions(header)
    for p in problems:
        print("header: " + p)
        ok = False
    if not api:
        print("header: no SIMLSH_API functions found in " + header)
        return 1

    nodes = map_nodes(mapfile)
    if not nodes:
        print("map: no version nodes found in " + mapfile)
        return 1
    node_of = {}
    for i, (name, parent, globs, local_star) in enumerate(nodes):
        if not NODE_NAME.match(name):
            print("map: node %s is not named SIMLSH_MAJOR.MINOR" % name)
            ok = False
        want_parent = nodes[i - 1][0] if i else None
        if parent != want_parent:
            print("map: node %s inherits from %s, expected %s" % (name, parent, want_parent))
            ok = False
        if local_star != (i == 0):
            print("map: 'local: *;' belongs in the first node only (found in %s: %s)"
                  % (name, local_star))
            ok = False
        for g in globs:
            if g in node_of:
                print("map: %s listed in both %s and %s" % (g, node_of[g], name))
                ok = False
            node_of[g] = name
    in_map = set(node_of)

    if shutil.which("readelf"):
        exported, abs_names = exported_readelf(lib)
        tool = "readelf"
    elif shutil.which("objdump"):
        exported, abs_names = exported_objdump(lib)
        tool = "objdump"
    else:
        print("SKIP: neither readelf nor objdump is installed")
        return 77
    # The ABS symbols a version script defines must be exactly its nodes.
    node_names = {n[0] for n in nodes}
    if abs_names - node_names:
        report("library: absolute symbols that are not version nodes:", abs_names - node_names)
        ok = False
    lib_syms = set(exported)

    for title, diff in (
        ("in the header but not exported by the library:", api - lib_syms),
        ("exported by the library but not in the header (leaked):", lib_syms - api),
        ("in the header but not in the map:", api - in_map),
        ("in the map but not in the header:", in_map - api),
        ("in the map but not exported by the library:", in_map - lib_syms),
        ("exported by the library but not in the map:", lib_syms - in_map),
    ):
        if diff:
            report(title, diff)
            ok = False

    wrong_version = []
    for name in sorted(lib_syms & in_map):
        ver, default = exported[name]
        if ver != node_of[name] or not default:
            wrong_version.append("%s: %s%s, expected %s@@%s" % (
                name, name, ("@@" if default else "@") + ver if ver else " (unversioned)",
                name, node_of[name]))
    if wrong_version:
        report("exported with the wrong symbol version:", wrong_version)
        ok = False

    versions = sorted({v for v, _ in exported.values() if v})
    print("%d functions in the header, %d in the map (%s), %d exported (%s; versions: %s)"
          % (len(api), len(in_map), ", ".join(n[0] for n in nodes), len(lib_syms), tool,
             ", ".join(versions) or "none"))
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
