#!/usr/bin/env bash
# The one virtual environment every script in tools/ uses: tools/.venv, from the pins of
# tools/requirements.txt. `tools/venv.sh` (or `clients`) installs the HTTP clients the server's
# tests drive; `tools/venv.sh reference` adds transformers and torch for the fixture scripts;
# `tools/venv.sh scaleout` adds PySpark and Ray for examples/spark, examples/ray and tools/scaleout/;
# `tools/venv.sh wheel` installs what builds and tests the Python wheel (tools/python/), alone.
# Idempotent: a group already installed at its pins is not installed again. Prints the python path.
set -euo pipefail
cd "$(dirname "$0")"
group=${1:-clients}
case "$group" in clients|reference|scaleout|wheel) ;; *) echo "usage: tools/venv.sh [clients|reference|scaleout|wheel]" >&2; exit 64 ;; esac
venv=.venv
requirements=$(case "$group" in
    reference) grep -E '#[[:space:]]*(clients|reference)' requirements.txt ;;
    scaleout) grep -E '#[[:space:]]*(clients|scaleout)' requirements.txt ;;
    wheel) grep -E '#[[:space:]]*wheel' requirements.txt ;;
    *) grep -E '#[[:space:]]*clients' requirements.txt ;;
esac | sed 's/[[:space:]]*#.*//')
stamp="$venv/.installed-$group"
if [ ! -x "$venv/bin/python" ]; then python3 -m venv "$venv"; fi
if [ ! -f "$stamp" ] || [ requirements.txt -nt "$stamp" ]; then
    echo "tools/venv.sh: installing the $group group into tools/$venv" >&2
    # shellcheck disable=SC2086
    "$venv/bin/pip" install -q --disable-pip-version-check $requirements >&2
    touch "$stamp"
fi
echo "$(pwd)/$venv/bin/python"
