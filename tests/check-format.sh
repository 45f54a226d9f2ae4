#!/bin/sh
# Check that the files below follow .clang-format (clang-format --dry-run
# --Werror prints each difference and fails). The list grows as files are
# formatted; the rest of the tree joins once the branches that move it
# have merged. Usage: tests/check-format.sh [CLANG_FORMAT]
set -eu
cd "$(dirname "$0")/.."
CLANG_FORMAT=${1:-${CLANG_FORMAT:-clang-format}}

files="
tests/testutil.h
tests/test-cluster.c
tests/test-errors.c
tests/test-minhash-accuracy.c
tests/test-oom.c
tests/test-serialize.c
tests/test-shingle-stream.c
tests/test-shingleset.c
tests/test-signature.c
tests/test-utf8.c
tests/test-version.c
"

"$CLANG_FORMAT" --version
# shellcheck disable=SC2086 # the list is split on purpose
"$CLANG_FORMAT" --dry-run --Werror $files
echo "check-format: $(echo $files | wc -w) files follow .clang-format"
