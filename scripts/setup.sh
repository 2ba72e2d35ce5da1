#!/usr/bin/env bash
# Create (or reuse) the local virtual environment .venv and install rltutor with the book and test
# extras into it, and fetch the book's web assets. Idempotent: re-running it after nothing changed
# takes about a second.
#
# torch is installed first and pinned to 2.13.0 when absent: on a machine with a local CPU wheel pip
# takes it from disk in seconds; a bare "torch" requirement would make pip resolve a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
VPY=.venv/bin/python
# MathJax, require.js and the widget manager for the book's pages, at the versions pinned in
# scripts/web_assets.py (from the npm registry; returns at once when they are already there).
"$VPY" scripts/web_assets.py
EXTRAS=${RLTUTOR_EXTRAS:-book,test}
stamp_key="$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)-$EXTRAS"
if [ -f .setup-stamp ] && [ "$(cat .setup-stamp)" = "$stamp_key" ] && "$VPY" -c "import rltutor, torch" 2>/dev/null; then
    exit 0
fi
"$VPY" -m pip install -q --upgrade pip
if ! "$VPY" -c "import torch" 2>/dev/null; then
    "$VPY" -m pip install -q "torch==2.13.0"
fi
"$VPY" -m pip install -q -e ".[$EXTRAS]"
echo "$stamp_key" > .setup-stamp
