#!/usr/bin/env bash
# The Python package as a user gets it (issue 46): builds the wheel from the existing release
# build (tools/python/build_wheel.sh), installs it into a fresh venv with
# `pip install --no-index --find-links dist swiftbert` (numpy and pytest from PyPI first, at the
# pins of tools/requirements.txt), then runs python/tests with pytest in a scrubbed environment
# (env -i, PATH=/usr/bin:/bin, no LD_LIBRARY_PATH) and, as root, with /opt/swift hidden under an
# empty tmpfs in a private mount namespace, as tools/dist_test.sh does: no Swift library can be
# found but those inside the wheel. The tests find the repository's converted models through
# SWIFTBERT_HOME and compare against the wheel's own `bert`.
#
#   tools/python/test_wheel.sh [PYTEST ARGS...]     e.g. -x, -k heads (the tests run from a copy of python/tests)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"

if [ -z "${TEST_WHEEL_INNER:-}" ]; then
    wheel=$(tools/python/build_wheel.sh)
    tmp=$(mktemp -d /tmp/swiftbert-wheel-test.XXXXXX)
    trap 'rm -rf "$tmp"' EXIT
    python3 -m venv "$tmp/venv"
    # A pin may repeat in another group (numpy in fastembed's): the first is the one.
    pin() { grep -m1 -E "^$1==" tools/requirements.txt | sed 's/[[:space:]]*#.*//'; }
    "$tmp/venv/bin/pip" install -q --disable-pip-version-check "$(pin numpy)" "$(pin pytest)" \
        "$(pin langchain-core)" "$(pin llama-index-core)" "$(pin haystack-ai)" >&2
    "$tmp/venv/bin/pip" install -q --disable-pip-version-check --no-index --find-links "$(dirname "$wheel")" swiftbert >&2
    echo "test_wheel.sh: installed $(basename "$wheel") into a fresh venv ($("$tmp/venv/bin/python" --version))" >&2
    # SWIFTBERT_HOME: a folder whose weights/ links to the repository's converted models.
    mkdir -p "$tmp/home" "$tmp/swiftbert-home"
    ln -s "$repo/weights" "$tmp/swiftbert-home/weights"
    cp -r python/tests "$tmp/tests"
    export TEST_WHEEL_INNER=1 TEST_WHEEL_TMP=$tmp
    if [ "$(id -u)" = 0 ] && [ -d /opt/swift ] && command -v unshare >/dev/null; then
        unshare --mount --propagation private bash -c 'mount -t tmpfs -o ro,size=1m none /opt/swift && exec "$0" "$@"' "$0" "$@"
    else
        "$0" "$@"
    fi
    exit $?
fi

tmp=$TEST_WHEEL_TMP
if [ -d /opt/swift ] && [ -n "$(ls -A /opt/swift 2>/dev/null)" ]; then
    echo "test_wheel.sh: note: /opt/swift is visible (not root, or no unshare); relying on env -i alone" >&2
else
    echo "test_wheel.sh: /opt/swift hidden (empty tmpfs in a private mount namespace)" >&2
fi
cd "$tmp"
exec env -i HOME="$tmp/home" PATH=/usr/bin:/bin LANG=C.UTF-8 SWIFTBERT_HOME="$tmp/swiftbert-home" \
    SWIFTBERT_TEST_FIXTURES="$repo/Tests/SwiftBERTTests/Fixtures" \
    "$tmp/venv/bin/python" -m pytest -q -p no:cacheprovider "$tmp/tests" "$@"
