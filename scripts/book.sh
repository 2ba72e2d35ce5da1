#!/usr/bin/env bash
# Install everything into .venv and build the Jupyter Book, executing every notebook.
# RLTUTOR_QUICK=1 (the default here) runs each experiment at quick scale; RLTUTOR_QUICK=0 builds
# the book at full scale (use a GPU). Warnings are errors.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export RLTUTOR_QUICK=${RLTUTOR_QUICK:-1}
.venv/bin/jupyter-book build -W -n --keep-going .
echo "The book is at: $(pwd)/_build/html/index.html"
