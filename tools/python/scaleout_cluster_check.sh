#!/usr/bin/env bash
# The Spark and Ray examples on a cluster's own processes, on this one machine (issue 46): a Spark
# standalone Master and two 1-core Workers (separate JVMs) with the job sent by spark-submit, once
# with the model on a local path and once shipped with --archives, and once more by the job's own
# --master spark://... with PYSPARK_PYTHON; then a Ray head (`ray start
# --head --block`, with the dashboard) with the job sent by `ray job submit`. The venv holds only
# dist/swiftbert-*.whl, the scaleout pins of tools/requirements.txt and ray[default] at the ray[data]
# pin's version (the job API and dashboard); no --bert and no bert on PATH. Outputs are checked by
# tools/python/scaleout_wheel_check.py's check against the wheel's `bert embed`. Stops exactly the
# processes it started, by pid (tools/python/scaleout_cluster_check.py says how). Needs Java 17,
# PyPI once, and free ports 7077, 8080-8082, 6380, 8265, 10001 on 127.0.0.1 (options change them).
# By hand, not in CI (docs/scale-out.md).
#
#   OPENBLAS_CORETYPE=Haswell tools/python/scaleout_cluster_check.sh [--rows N] [--keep]
#       [--only spark-local-home,spark-archives,spark-direct,ray-job]
#   venv: $SCALEOUT_VENV or /tmp/swiftbert-scaleout-venv
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
# shellcheck source=tools/python/scaleout_venv.sh
. tools/python/scaleout_venv.sh
ray_default=$(sed -n 's/^ray\[data\]/ray[default]/p' <<<"$pins")
[ -n "$ray_default" ] || { echo "no ray[data] pin in tools/requirements.txt" >&2; exit 1; }
scaleout_venv "$ray_default"
exec "$venv/bin/python" tools/python/scaleout_cluster_check.py --swiftbert-home "$repo" "$@"
