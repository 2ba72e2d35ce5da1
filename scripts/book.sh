#!/usr/bin/env bash
# Install everything into .venv and build the Jupyter Book, executing every notebook.
# RLTUTOR_QUICK=1 (the default here) runs each experiment at quick scale; RLTUTOR_QUICK=0 builds
# the book at full scale (use a GPU). Warnings are errors.
#
# With RLTUTOR_EXECUTED_DIR pointing at notebooks that were already executed (tests/test_notebooks.py
# saves them there), the book is built from those copies without executing anything again: the
# sources are staged in _build/src with the executed notebooks in place of notebooks/*.ipynb.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export RLTUTOR_QUICK=${RLTUTOR_QUICK:-1}
# One thread per process, as scripts/test.sh runs the notebooks: the chapters' small tensors gain nothing
# from more, and a kernel's threads contend with each other and with the build (chapter 6 took 32 s instead
# of 17 s). Set either variable to override.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} MKL_NUM_THREADS=${MKL_NUM_THREADS:-1}
if [ -n "${RLTUTOR_EXECUTED_DIR:-}" ]; then
    missing=0
    for nb in notebooks/*.ipynb; do
        [ -f "$RLTUTOR_EXECUTED_DIR/$(basename "$nb")" ] || { echo "not executed: $nb"; missing=1; }
    done
    [ "$missing" = 0 ] || { echo "run the notebook tests first (tests/test_notebooks.py)"; exit 1; }
    rm -rf _build/src
    mkdir -p _build/src
    cp -r _config.yml _toc.yml book notebooks _build/src/
    cp "$RLTUTOR_EXECUTED_DIR"/*.ipynb _build/src/notebooks/
    sed -i 's/^  execute_notebooks: force$/  execute_notebooks: "off"/' _build/src/_config.yml
    grep -q 'execute_notebooks: "off"' _build/src/_config.yml
    .venv/bin/jupyter-book build -W -n --keep-going _build/src --path-output .
else
    .venv/bin/jupyter-book build -W -n --keep-going .
fi
echo "The book is at: $(pwd)/_build/html/index.html"
