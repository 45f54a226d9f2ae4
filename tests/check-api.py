#!/usr/bin/env python3
"""Check the generated API description (share/simlsh/simlsh-api.json)
against the header and the built library (issue 16, item 3).

Usage: check-api.py API_JSON CHECK_EXE LIBRARY HEADER

  - its functions are exactly the library's exported symbols (readelf, not
    the generator's parser) and the header's SIMLSH_API declarations;
  - CHECK_EXE, compiled from the description against the real header,
    prints every constant's value (must equal the description's), whether
    every function's C type is the described one (__builtin_types_compatible_p)
    and every enumerated constant's run-time name (must exist);
  - every "SIMLSH_X = n" enum member and X(...) error of the header is in it;
  - every handle has a _free function; every "simlsh_x **" parameter and
    every non-const pointer to a plain type is an out-parameter.
Exits 1 on any difference, 77 when readelf is missing.
"""
import json
import re
import shutil
import subprocess
import sys

api_path, exe, lib, header = sys.argv[1:5]
with open(api_path, encoding="utf-8") as f:
    api = json.load(f)
with open(header, encoding="utf-8") as f:
    htext = f.read()
problems = []

funcs = {f["name"]: f for f in api["functions"]}
if len(funcs) != len(api["functions"]):
    problems.append("a function is described twice")

if not shutil.which("readelf"):
    print("SKIP: readelf not found")
    sys.exit(77)
dyn = subprocess.run(["readelf", "--dyn-syms", "--wide", lib], check=True, capture_output=True,
                     text=True).stdout
exported = set()
for line in dyn.splitlines():
    f = line.split()
    if len(f) >= 8 and f[0].endswith(":") and f[6] != "UND" and f[3] == "FUNC":
        exported.add(f[7].split("@")[0])
exported = {n for n in exported if n.startswith("simlsh_")}
for n in sorted(exported - set(funcs)):
    problems.append("exported but not described: " + n)
for n in sorted(set(funcs) - exported):
    problems.append("described but not exported: " + n)

code = re.sub(r"/\*.*?\*/|//[^\n]*", " ", htext, flags=re.S)
declared = set(re.findall(r"\bSIMLSH_API\b[^;(]*?\b(simlsh_\w+)\s*\(", code))
for n in sorted(declared ^ set(funcs)):
    problems.append("SIMLSH_API declarations and the description differ on " + n)

consts = {c["name"]: c["value"] for c in api["constants"]}
out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
seen_const, seen_type = set(), set()
for line in out.splitlines():
    kind, name, value = line.split(" ", 2)
    if kind == "const":
        seen_const.add(name)
        if int(value) != consts.get(name):
            problems.append("%s is %s in C, %s in the description" % (name, value,
                                                                       consts.get(name)))
    elif kind == "type":
        seen_type.add(name)
        if value != "1":
            problems.append("the described type of %s is not its C type" % name)
    elif kind == "name" and value == "(null)":
        problems.append("no run-time name (simlsh_constant_name) for " + name)
for n in sorted(set(consts) - seen_const):
    problems.append("constant not checked: " + n)
for n in sorted(set(funcs) - seen_type):
    problems.append("function type not checked: " + n)

in_header = set(re.findall(r"\b(SIMLSH_[A-Z0-9_]+)\s*=\s*-?\d", code))
in_header |= {"SIMLSH_" + n for n in re.findall(r"X\((\w+),\s*-?\d+,", code)}
in_header = {n for n in in_header if not n.startswith("SIMLSH__") and not n.endswith("_")}
for n in sorted(in_header - set(consts)):
    problems.append("header constant missing from the description: " + n)

handles = {h["name"] for h in api["handles"]}
for h in sorted(handles):
    if h + "_free" not in funcs:
        problems.append("handle without a _free function: " + h)
for f in api["functions"]:
    for p in f["params"]:
        writable = p["pointer"] > 0 and not p["pointee_const"]
        must_out = writable and (p["pointer"] == 2 or p["base"] not in handles)
        if must_out and p["direction"] != "out":
            problems.append("%s(%s): a pointer written through, not marked SIMLSH_OUT"
                            % (f["name"], p["name"]))
        if p["direction"] == "out" and not writable:
            problems.append("%s(%s): const but marked SIMLSH_OUT" % (f["name"], p["name"]))

for p in problems:
    print("FAIL:", p)
print("%d functions, %d constants, %d handles, %d structs; %d problems"
      % (len(funcs), len(consts), len(handles), len(api["structs"]), len(problems)))
sys.exit(1 if problems else 0)
