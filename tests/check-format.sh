#!/bin/sh
# Check that the files below follow .clang-format (clang-format --dry-run
# --Werror prints each difference and fails). The list grows as files are
# formatted; the rest of the tree joins once the branches that move it
# have merged. Usage: tests/check-format.sh [CLANG_FORMAT]
set -eu
cd "$(dirname "$0")/.."
CLANG_FORMAT=${1:-${CLANG_FORMAT:-clang-format}}

files="
bench/bench.h
bindings/bench-c.c
examples/twopass.c
fuzz/fuzz-index-userdata-sealed.c
fuzz/fuzz-set-load-sealed.c
fuzz/fuzz-set-load.c
fuzz/fuzz-shingler.c
fuzz/fuzz-signature-load-sealed.c
fuzz/fuzz-signature-load.c
lib/alloc.c
lib/alloc.h
lib/batch.c
lib/checked.h
lib/cpu.c
lib/cpu.h
lib/error.c
lib/group.c
lib/handle.h
lib/index/query.c
lib/minhash.h
lib/minhash_simd.c
lib/murmur3.h
lib/names.c
lib/os.h
lib/params.h
lib/results.h
lib/shingle.h
lib/shingleset.h
lib/version.c
python/bench/sign-lines.c
tests/test-alloc-v2.c
tests/test-cluster.c
tests/test-cpu-threads.c
tests/test-errors.c
tests/test-from-values.c
tests/test-group.c
tests/test-handles.c
tests/test-index-cluster.c
tests/test-index-query.c
tests/test-minhash-accuracy.c
tests/test-names.c
tests/test-oom.c
tests/test-recall.c
tests/test-serialize.c
tests/test-shingle-stream.c
tests/test-shingleset.c
tests/test-signature.c
tests/test-utf8.c
tests/test-version.c
tests/testutil.h
"

"$CLANG_FORMAT" --version
# shellcheck disable=SC2086 # the list is split on purpose
"$CLANG_FORMAT" --dry-run --Werror $files
echo "check-format: $(echo $files | wc -w) files follow .clang-format"
