#!/usr/bin/env bash
# Install (idempotently) and run the whole test suite: lint, unit/property/integration tests, the
# notebooks (nbval), then build the book and test the rendered pages.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Quick scale everywhere; one BLAS/OpenMP thread per process (pytest-xdist already uses both cores,
# and oversubscribed threads make small tensor loops 20-40x slower on a shared 2-core machine).
export RLTUTOR_QUICK=1 PYTHONHASHSEED=0 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
echo "== ruff"
.venv/bin/ruff check .
echo "== unit, property and integration tests"
MPLBACKEND=Agg .venv/bin/python -m pytest -q -n 2 -m "not book" tests
echo "== notebooks (nbval)"
.venv/bin/python -m pytest -q -n 2 --dist loadfile --nbval-lax notebooks
echo "== book build and rendered-book tests"
bash scripts/book.sh
RLTUTOR_BOOK_HTML="$(pwd)/_build/html" .venv/bin/python -m pytest -q -m book tests
