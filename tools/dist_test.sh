#!/usr/bin/env bash
# Checks `make dist`'s tarball as a user gets it (docs/deploy.md; not part of CI): extracts it into
# an empty folder and runs it with a scrubbed environment (env -i, PATH=/usr/bin:/bin,
# LD_LIBRARY_PATH empty) and, when run as root, with /opt/swift hidden under an empty tmpfs in a
# private mount namespace, so no Swift library can be found by accident. Then: --version and
# --help through a symlink, `bert pull all-MiniLM-L6-v2` (or, while this `bert` has no `pull`, a
# copy of the repository's converted model, said so), `bert embed` (a 384-dimensional vector),
# and `bert serve` on a free port: /health, POST /v1/embeddings, SIGTERM, exit status 0.
#
#   tools/dist_test.sh [TARBALL]                      the launcher's own choice of build
#   SWIFTBERT_VARIANT=portable tools/dist_test.sh     the portable build
#   DIST_TEST_MODEL_DIR=DIR                           the converted model to copy while bert has no pull
#   SWIFTBERT_HOME_FOR_TEST=DIR                       run with SWIFTBERT_HOME=DIR (default: unset, the XDG cache)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
model=all-MiniLM-L6-v2
tarball=${1:-$(ls -t "$repo"/dist/swiftbert-*-linux-x86_64.tar.gz 2>/dev/null | sed -n 1p)}
[ -f "$tarball" ] || { echo "dist_test.sh: no tarball; run \`make dist\` first or give its path" >&2; exit 1; }
tarball=$(cd "$(dirname "$tarball")" && pwd)/$(basename "$tarball")

# Hide /opt/swift: re-run this script in a private mount namespace with an empty tmpfs over it.
if [ -z "${DIST_TEST_INNER:-}" ] && [ "$(id -u)" = 0 ] && [ -d /opt/swift ] && command -v unshare >/dev/null; then
    export DIST_TEST_INNER=1
    exec unshare --mount --propagation private bash -c 'mount -t tmpfs -o ro,size=1m none /opt/swift && exec "$0" "$@"' "$0" "$@"
fi
if [ -d /opt/swift ] && [ -n "$(ls -A /opt/swift 2>/dev/null)" ]; then
    echo "dist_test.sh: note: /opt/swift is visible (not root, or no unshare); relying on env -i and ldd alone" >&2
else
    echo "dist_test.sh: /opt/swift hidden (empty tmpfs in a private mount namespace)" >&2
fi

tmp=$(mktemp -d /tmp/swiftbert-dist-test.XXXXXX)
server=""
cleanup() {
    if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then kill "$server"; fi
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "dist_test.sh: FAIL: $*" >&2; exit 1; }
step() { echo "== $*" >&2; }

tar -xzf "$tarball" -C "$tmp"
root=$(echo "$tmp"/swiftbert-*/)
root=${root%/}
[ -x "$root/bin/bert" ] || fail "no bin/bert in $tarball"
# Run through a symlink elsewhere, as /usr/local/bin/bert -> /opt/swiftbert/bin/bert.
mkdir -p "$tmp/home" "$tmp/links"
ln -s "$root/bin/bert" "$tmp/links/bert"
bert=$tmp/links/bert
# The scrubbed environment: no toolchain on PATH, no library path, HOME in the temp folder.
scrubbed=(env -i "HOME=$tmp/home" PATH=/usr/bin:/bin LD_LIBRARY_PATH= SWIFTBERT_VARIANT_VERBOSE=1)
[ -z "${SWIFTBERT_VARIANT:-}" ] || scrubbed+=("SWIFTBERT_VARIANT=$SWIFTBERT_VARIANT")
[ -z "${SWIFTBERT_HOME_FOR_TEST:-}" ] || scrubbed+=("SWIFTBERT_HOME=$SWIFTBERT_HOME_FOR_TEST")
run() { (cd "$tmp/home" && "${scrubbed[@]}" "$@"); }

step "ldd (scrubbed environment)"
for binary in "$root"/libexec/bert-native "$root"/libexec/bert-portable; do
    libs=$(run ldd "$binary")
    echo "$(basename "$binary"):"; echo "$libs" | sed 's/^/    /'
    ! grep -q -E 'not found|/opt/swift|libswift|libFoundation|libdispatch' <<< "$libs" || fail "$(basename "$binary") needs a Swift library or a missing one"
done

step "bert --version, bert --help (through a symlink)"
if run "$bert" --version > "$tmp/version.txt" 2>/dev/null; then
    echo "bert --version: $(cat "$tmp/version.txt")" >&2
else
    echo "dist_test.sh: note: this bert has no --version (exit $?); the package's version is in its VERSION file: $(cat "$root/VERSION")" >&2
fi
run "$bert" --help > "$tmp/help.txt" 2> "$tmp/variant.txt" || fail "bert --help"
cat "$tmp/variant.txt" >&2
chosen=$(sed -n 's/^bert: using \([a-z]*\).*/\1/p' "$tmp/variant.txt")
[ -n "$chosen" ] || fail "the launcher did not say which build it ran"
[ -z "${SWIFTBERT_VARIANT:-}" ] || [ "$chosen" = "$SWIFTBERT_VARIANT" ] || fail "asked for $SWIFTBERT_VARIANT, ran $chosen"
grep -q 'embed' "$tmp/help.txt" || fail "bert --help lists no embed"
echo "bert --help: $(wc -l < "$tmp/help.txt") lines" >&2
bogus=0; run env SWIFTBERT_VARIANT=bogus "$bert" --version 2>/dev/null || bogus=$?
[ "$bogus" = 64 ] || fail "SWIFTBERT_VARIANT=bogus: exit $bogus, not 64 (a usage error)"

step "the model: bert pull $model"
# `bert pull --help` is no test: ArgumentParser prints the root help for an unknown subcommand
# followed by --help, and exits 0. The SUBCOMMANDS list of --help is.
if grep -q -E '^  pull( |$)' "$tmp/help.txt"; then
    run "$bert" pull "$model" || fail "bert pull $model"
else
    # Until `bert pull` is merged: a converted model (the repository's, or DIST_TEST_MODEL_DIR)
    # where pull puts it. This `bert` searches $SWIFTBERT_HOME/weights, not yet the XDG cache,
    # so SWIFTBERT_HOME points there.
    weights=$tmp/home/.cache/swiftbert/weights
    source_model=${DIST_TEST_MODEL_DIR:-$repo/weights/$model}
    [ -f "$source_model/config.json" ] || fail "this bert has no \`pull\`, and $source_model is no converted $model to copy instead (run tools/setup.sh, or set DIST_TEST_MODEL_DIR)"
    echo "dist_test.sh: THIS bert HAS NO \`pull\` (bert --help lists none): copying $source_model into $weights and setting SWIFTBERT_HOME=$tmp/home/.cache/swiftbert instead" >&2
    mkdir -p "$weights"
    cp -r "$source_model" "$weights/"
    scrubbed+=("SWIFTBERT_HOME=$tmp/home/.cache/swiftbert")
fi

step "bert embed"
vector=$(run "$bert" embed --model "$model" --format tsv "SwiftBERT embeds text in pure Swift." 2>/dev/null) || fail "bert embed"
dimensions=$(echo "$vector" | awk -F'\t' '{print NF}')
[ "$dimensions" = 384 ] || fail "bert embed gave $dimensions values, not 384"
echo "384 values; the first 4: $(echo "$vector" | cut -f1-4)" >&2

step "bert serve"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# env, the launcher and bert exec one another: $! is the server's own pid.
(cd "$tmp/home" && exec "${scrubbed[@]}" "$bert" serve --model "$model" --host 127.0.0.1 --port "$port") > "$tmp/serve.log" 2>&1 &
server=$!
started=$(date +%s)
until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ]; do
    kill -0 "$server" 2>/dev/null || { cat "$tmp/serve.log" >&2; fail "bert serve exited before /health answered"; }
    [ $(( $(date +%s) - started )) -lt 60 ] || { cat "$tmp/serve.log" >&2; fail "/health not 200 within 60 s"; }
    sleep 0.2
done
echo "/health 200 after $(( $(date +%s) - started )) s (pid $server, port $port)" >&2
answer=$(curl -s -f "http://127.0.0.1:$port/v1/embeddings" -H 'Content-Type: application/json' \
    -d "{\"model\": \"$model\", \"input\": [\"SwiftBERT embeds text in pure Swift.\", \"A second text.\"]}") || fail "POST /v1/embeddings"
echo "$answer" | python3 -c '
import json, sys
answer = json.load(sys.stdin)
vectors = [item["embedding"] for item in answer["data"]]
assert len(vectors) == 2 and all(len(v) == 384 for v in vectors), [len(v) for v in vectors]
norm = sum(x * x for x in vectors[0]) ** 0.5
usage = answer.get("usage")
print(f"POST /v1/embeddings: 2 vectors of 384, |v0| = {norm:.4f}, usage {usage}", file=sys.stderr)
' || fail "POST /v1/embeddings answered: ${answer:0:300}"
kill -TERM "$server"
status=0; wait "$server" || status=$?
server=""
[ "$status" = 0 ] || { cat "$tmp/serve.log" >&2; fail "bert serve exited $status after SIGTERM, not 0"; }
echo "SIGTERM: exit 0" >&2

echo "dist_test.sh: PASS ($(basename "$tarball"), build $chosen)" >&2
