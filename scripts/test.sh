#!/usr/bin/env bash
# Install (idempotently) and run the whole test suite: lint and format, unit/property/integration
# tests, the learning tests again under PyTorch's default CPU kernels, the built wheel running a chapter
# outside the repository, every notebook (executed once), then the book built from those executed
# notebooks, the tests of the rendered pages, and every page opened in headless Chromium
# (scripts/install_browser.sh installs Debian's chromium where it can).
set -euo pipefail
cd "$(dirname "$0")/.."
RLTUTOR_EXTRAS=${RLTUTOR_EXTRAS:-book,test,ray} bash scripts/setup.sh
# Quick scale everywhere; one BLAS/OpenMP thread per process (pytest-xdist already uses both cores,
# and oversubscribed threads make small tensor loops 20-40x slower on a shared 2-core machine).
export RLTUTOR_QUICK=1 PYTHONHASHSEED=0 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
echo "== ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "== unit, property and integration tests"
MPLBACKEND=Agg .venv/bin/python -m pytest -q -n 2 -m "not book and not notebooks and not packaging and not browser" tests
echo "== learning tests under ATEN_CPU_CAPABILITY=default (other CPUs take other kernel paths)"
ATEN_CPU_CAPABILITY=default MPLBACKEND=Agg .venv/bin/python -m pytest -q -n 2 -m "learning" tests
echo "== the wheel: built from the tracked files, installed into a fresh venv, one chapter run outside the repository"
.venv/bin/python -m pytest -q -m packaging tests/test_wheel.py
echo "== notebooks (each executed once; the book is built from these copies)"
export RLTUTOR_EXECUTED_DIR="$(pwd)/_build/executed"
rm -rf "$RLTUTOR_EXECUTED_DIR"
.venv/bin/python -m pytest -q -n 2 -m notebooks --durations=12 tests/test_notebooks.py
echo "== book build and rendered-book tests"
bash scripts/book.sh
RLTUTOR_BOOK_HTML="$(pwd)/_build/html" .venv/bin/python -m pytest -q -m book tests
echo "== every page in headless Chromium (screenshots in _build/screenshots)"
bash scripts/install_browser.sh || true  # where it cannot install, the browser tests skip and say why
rm -rf _build/screenshots
RLTUTOR_BOOK_HTML="$(pwd)/_build/html" RLTUTOR_SCREENSHOTS="$(pwd)/_build/screenshots" \
    .venv/bin/python -m pytest -q -rs -m browser tests/test_browser.py
