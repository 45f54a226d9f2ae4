#!/usr/bin/env python3
"""Fail when a test that CI expects to run was skipped or is missing.

A test that exits 77 shows as SKIP and meson still reports success, so a
missing tool (abidiff, libmurmurhash, readelf) would silently turn a check
off. CI installs every tool, so there it expects no SKIP at all.

Usage: check-skips.py BUILD_DIR [--allow NAME]... [--require NAME]...
Reads BUILD_DIR/meson-logs/testlog.json (written by `meson test`). Exits 1
if a test other than an --allow'ed one was skipped, or if a --require'd
test did not run at all (for example because it is not registered).
"""
import json
import os
import sys


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    build, allow, require = argv[1], set(), set()
    args = argv[2:]
    while args:
        if len(args) < 2 or args[0] not in ('--allow', '--require'):
            print(__doc__, file=sys.stderr)
            return 2
        (allow if args[0] == '--allow' else require).add(args[1])
        args = args[2:]
    path = os.path.join(build, 'meson-logs', 'testlog.json')
    results = {}
    with open(path, encoding='utf-8') as f:
        for line in f:
            if line.strip():
                t = json.loads(line)
                results[t['name'].split(' / ', 1)[-1]] = t['result']
    if not results:
        print(f'check-skips: no test results in {path}', file=sys.stderr)
        return 1
    bad = 0
    for name, result in sorted(results.items()):
        if result == 'SKIP' and name not in allow:
            print(f'check-skips: {name} was skipped', file=sys.stderr)
            bad += 1
    for name in sorted(require - results.keys()):
        print(f'check-skips: {name} did not run (not registered?)', file=sys.stderr)
        bad += 1
    skipped = sum(r == 'SKIP' for r in results.values())
    print(f'check-skips: {len(results)} tests, {skipped} skipped, {bad} problems')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
