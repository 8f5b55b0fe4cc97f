# Sourced by tools/python/scaleout_wheel_check.sh and scaleout_cluster_check.sh (not run alone): makes
# or updates the venv $venv (default $SCALEOUT_VENV or /tmp/swiftbert-scaleout-venv) that holds only
# dist/swiftbert-*.whl and the `scaleout` pins of tools/requirements.txt, plus any extra requirements
# given to scaleout_venv. Expects to run from the repository's root with `set -euo pipefail`.
wheel=$(ls dist/swiftbert-*-py3-none-manylinux_2_35_x86_64.whl)
venv=${SCALEOUT_VENV:-/tmp/swiftbert-scaleout-venv}
pins=$(grep -E '#[[:space:]]*scaleout' tools/requirements.txt | sed 's/[[:space:]]*#.*//')

scaleout_venv() {
    [ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps "$wheel"
    set -f  # ray[data] is a pin, not a glob
    # shellcheck disable=SC2086
    "$venv/bin/pip" install -q --disable-pip-version-check "$wheel" $pins "$@"
    set +f
}
