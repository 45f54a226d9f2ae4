#!/bin/sh
# Check that every C source and header follows .clang-format (clang-format
# --dry-run --Werror prints each difference and fails).
# Usage: tests/check-format.sh [CLANG_FORMAT]
set -eu
cd "$(dirname "$0")/.."
CLANG_FORMAT=${1:-${CLANG_FORMAT:-clang-format}}

# Every C file of the tree, found the same way in a checkout or a tarball.
files=$(find lib include tools tests bench examples fuzz bindings python api \
    -name '*.[ch]' -not -path '*/subprojects/*' 2>/dev/null | LC_ALL=C sort)

"$CLANG_FORMAT" --version
# shellcheck disable=SC2086 # the list is split on purpose
"$CLANG_FORMAT" --dry-run --Werror $files
echo "check-format: $(echo $files | wc -w) files follow .clang-format"
