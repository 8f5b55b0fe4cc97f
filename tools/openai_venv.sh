#!/usr/bin/env bash
# The official `openai` Python client in its own virtual environment (tools/.venv-openai), for the
# server test that checks `client.embeddings.create` against `bert embed`. Idempotent: does
# nothing when the client already imports. Needs python3-venv and PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=tools/.venv-openai
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import openai" 2>/dev/null; then exit 0; fi
echo "installing the openai client into $venv" >&2
python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check "openai>=1.40,<3"
"$venv/bin/python" -c "import openai; print('openai', openai.__version__)" >&2
