#!/usr/bin/env bash
# The C ABI of libswiftbert.so from plain C: checks that the library exports swiftbert_* and
# nothing else (nm -D --defined-only), then builds tools/python/cabi_test.c against
# Sources/SwiftBERTCABI/swiftbert.h and runs it on the repository's converted models.
# The export list is the header's functions exactly: nothing else global (the version script
# Sources/SwiftBERTCABI/swiftbert.map). Needs the release build (`make test`'s build line builds the library with everything else).
#
#   tools/python/cabi_test.sh [BIN_DIR]     default: the native release build's bin folder
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
bin=${1:-$(swift build -c release $(cat tools/native-flags) $(cat tools/build-flags) --show-bin-path)}
library=$bin/libswiftbert.so
[ -f "$library" ] || { echo "cabi_test.sh: no $library; build with: swift build -c release \$(cat tools/native-flags) \$(cat tools/build-flags) --build-tests" >&2; exit 1; }

# Global symbols only (an upper-case type letter): the linker keeps some local ones ('d', the
# Swift types' descriptors) in the dynamic table, where nothing outside can bind to them.
exported=$(nm -D --defined-only "$library" | awk '$2 ~ /^[A-Z]$/ {print $3}' | sort)
header_functions=$(grep -oE '\bswiftbert_[a-z_]+\(' Sources/SwiftBERTCABI/swiftbert.h | tr -d '(' | sort -u)
[ "$header_functions" = "$exported" ] || { echo "cabi_test.sh: FAIL: the header and the library differ:" >&2; diff <(echo "$header_functions") <(echo "$exported") >&2; exit 1; }
echo "cabi_test.sh: libswiftbert.so exports the $(wc -l <<< "$exported") functions of swiftbert.h, nothing else" >&2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -std=c11 -Wall -Wextra -Werror -O1 -I Sources/SwiftBERTCABI tools/python/cabi_test.c -o "$work/cabi_test" \
    -L "$bin" -lswiftbert -Wl,-rpath,"$bin" -lpthread -lm
"$work/cabi_test" "$repo/weights"
