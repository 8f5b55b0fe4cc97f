#!/usr/bin/env bash
# Installs what tools/loadtest/loadtest.sh drives, idempotently (a step that is already done is skipped):
#   - wrk and nginx (Debian packages), when missing;
#   - sentence-transformers + FastAPI/uvicorn (tools/loadtest/st_server.py): the reference group of
#     tools/.venv (tools/venv.sh reference, the pins of tools/requirements.txt);
#   - infinity-emb 0.0.78 (torch backend, its server) in its own venv, $LOADTEST_VENVS/infinity: its
#     pins (transformers 4.x, numpy<2) clash with tools/.venv's. It uses the CPU torch wheel pip
#     finds locally (find-links /opt/wheels), pinned to $TORCH_VERSION.
# Never touches the system python.
#   tools/loadtest/loadtest_setup.sh            (LOADTEST_VENVS defaults to /work/loadtest-venvs)
set -euo pipefail
cd "$(dirname "$0")/../.."
venvs=${LOADTEST_VENVS:-/work/loadtest-venvs}
torch_version=${TORCH_VERSION:-2.13.0}
pip_flags=(-q --disable-pip-version-check)

missing=()
command -v wrk >/dev/null || missing+=(wrk)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx)
if [ ${#missing[@]} -gt 0 ]; then
    echo "loadtest_setup: apt-get install ${missing[*]}" >&2
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
fi

# Makes venv $1 (if its python cannot run check $2) and pip-installs the rest of the arguments.
ensure_venv() {
    local venv=$1 check=$2; shift 2
    if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "$check" 2>/dev/null; then return 0; fi
    echo "loadtest_setup: installing into $venv: $*" >&2
    python3 -m venv --clear "$venv"
    "$venv/bin/pip" install "${pip_flags[@]}" "$@"
    "$venv/bin/python" -c "$check"
}

# infinity-emb 0.0.78 as the issue measured it, torch backend. Its own pins pick
# sentence-transformers 3.x, transformers 4.x, numpy<2, click<8.2. Its ONNX backend (extra
# `optimum`) does not run here, see docs/server.md: it is not installed.
ensure_venv "$venvs/infinity" \
    "import infinity_emb, torch; assert infinity_emb.__version__ == '0.0.78'" \
    "torch==$torch_version" "infinity-emb[server,torch]==0.0.78"

tools/venv.sh reference >/dev/null

echo "loadtest_setup: ready: wrk, nginx, $venvs/infinity, tools/.venv" >&2
