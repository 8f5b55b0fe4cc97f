#!/usr/bin/env bash
# The Spark and Ray examples with the wheel, as a new user runs them (issue 46): a plain venv with
# only dist/swiftbert-*.whl and the scaleout pins of tools/requirements.txt (PySpark, Ray Data,
# pyarrow, pandas), then tools/python/scaleout_wheel_check.py runs both jobs under
# `env -i PATH=/usr/bin:/bin HOME=$HOME` (no --bert, no bert on PATH) and checks every row against
# the wheel's `bert embed`. Needs Java 17 and PyPI once. By hand, not in CI (docs/scale-out.md).
#
#   tools/python/scaleout_wheel_check.sh [--rows N] [--only spark,ray]     venv: $SCALEOUT_VENV or /tmp/swiftbert-scaleout-venv
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
# shellcheck source=tools/python/scaleout_venv.sh
. tools/python/scaleout_venv.sh
scaleout_venv
exec "$venv/bin/python" tools/python/scaleout_wheel_check.py --swiftbert-home "$repo" "$@"
