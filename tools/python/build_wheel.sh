#!/usr/bin/env bash
# `make wheel`: dist/swiftbert-VERSION-py3-none-manylinux_2_35_x86_64.whl from the release build
# that `make test` makes (libswiftbert.so and `bert` come out of that one `swift build`; nothing
# is compiled here). Stages python/ with both files in swiftbert/_lib, builds the wheel with
# hatchling (tools/.venv, `tools/venv.sh wheel`), then `auditwheel repair` copies in every
# shared library they need outside the manylinux set (the Swift runtime, Foundation, OpenBLAS
# and its Fortran runtime) with an RPATH to them, and `auditwheel show` must give manylinux_2_35.
# Fails when the wheel exceeds 80 MB. Prints the wheel's path.
#
# With PORTABLE_BIN_DIR (a release build without tools/native-flags: `make wheel` makes one in
# .build/wheel-portable), the wheel also carries that build in swiftbert/_lib/portable/ and the
# CPU flags the native one needs (tools/native_cpu_flags.sh), and picks one at import by
# /proc/cpuinfo, as the tarball's launcher does (python/swiftbert/_variant.py).
#
#   tools/python/build_wheel.sh [BIN_DIR [PORTABLE_BIN_DIR]]    default: the native release build's bin folder
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
[ "$(uname -m)" = x86_64 ] || { echo "build_wheel.sh: builds the linux x86-64 wheel; this machine is $(uname -m)" >&2; exit 1; }
bin=${1:-}
[ -n "$bin" ] || bin=$(swift build -c release $(cat tools/native-flags) $(cat tools/build-flags) --show-bin-path)
portable=${2:-}
for file in libswiftbert.so bert; do
    [ -f "$bin/$file" ] || { echo "build_wheel.sh: no $bin/$file; build with: swift build -c release \$(cat tools/native-flags) \$(cat tools/build-flags) --build-tests" >&2; exit 1; }
    [ -z "$portable" ] || [ -f "$portable/$file" ] || { echo "build_wheel.sh: no $portable/$file (the portable build: make wheel)" >&2; exit 1; }
done
python=$(tools/venv.sh wheel)
venv_bin=$(dirname "$python")
plat=manylinux_2_35_x86_64
limit_mb=80

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/src"
cp -r python/pyproject.toml python/hatch_build.py python/README.md python/swiftbert "$stage/src/"
rm -rf "$stage/src/swiftbert/_lib" "$stage/src/swiftbert/__pycache__"
mkdir -p "$stage/src/swiftbert/_lib/licenses"
cp "$bin/libswiftbert.so" "$bin/bert" "$stage/src/swiftbert/_lib/"
# Symbols only: the exported swiftbert_* stay (strip --strip-unneeded keeps the dynamic table),
# and Swift finds its metadata through sections strip leaves alone (as tools/dist.sh does).
strip --strip-unneeded "$stage/src/swiftbert/_lib/libswiftbert.so"
strip "$stage/src/swiftbert/_lib/bert"
if [ -n "$portable" ]; then
    mkdir -p "$stage/src/swiftbert/_lib/portable"
    cp "$portable/libswiftbert.so" "$portable/bert" "$stage/src/swiftbert/_lib/portable/"
    strip --strip-unneeded "$stage/src/swiftbert/_lib/portable/libswiftbert.so"
    strip "$stage/src/swiftbert/_lib/portable/bert"
    tools/native_cpu_flags.sh "$bin/libswiftbert.so" > "$stage/src/swiftbert/_lib/native-cpu-flags"
fi
cp /opt/swift/usr/share/swift/LICENSE.txt "$stage/src/swiftbert/_lib/licenses/swift-toolchain.LICENSE.txt" 2>/dev/null \
    || echo "build_wheel.sh: warning: no Swift toolchain LICENSE.txt found to ship" >&2
[ ! -f LICENSE ] || cp LICENSE "$stage/src/swiftbert/_lib/licenses/SwiftBERT.LICENSE"

echo "build_wheel.sh: hatchling wheel of python/ with libswiftbert.so and bert from $bin${portable:+, and the portable build from $portable}" >&2
"$python" -m pip wheel --quiet --no-deps --no-build-isolation --disable-pip-version-check -w "$stage/raw" "$stage/src" >&2
raw=$(ls "$stage"/raw/swiftbert-*.whl)
mkdir -p dist
rm -f dist/swiftbert-*-py3-none-"$plat".whl
# auditwheel finds the Swift runtime through the RUNPATH SwiftPM gave both files (the toolchain's
# lib/swift/linux) and vendors it into swiftbert.libs/ beside libopenblas.
echo "build_wheel.sh: auditwheel repair --plat $plat" >&2
PATH="$venv_bin:$PATH" "$venv_bin/auditwheel" repair --plat "$plat" -w dist "$raw" >&2
wheel=$(ls dist/swiftbert-*-py3-none-"$plat".whl)
show=$(PATH="$venv_bin:$PATH" "$venv_bin/auditwheel" show "$wheel")
echo "$show" | sed 's/^/    /' >&2
grep -q "$plat" <<< "$show" || { echo "build_wheel.sh: FAIL: auditwheel show does not list $plat" >&2; exit 1; }
size_mb=$(( $(stat -c %s "$wheel") / 1000000 ))
[ "$size_mb" -le "$limit_mb" ] || { echo "build_wheel.sh: FAIL: $wheel is $size_mb MB, over $limit_mb MB" >&2; exit 1; }
echo "build_wheel.sh: wrote $wheel ($(du -h "$wheel" | cut -f1))" >&2
echo "$wheel"
