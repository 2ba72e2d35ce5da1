#!/usr/bin/env bash
# Install (idempotently) and run the whole test suite: lint and format, unit/property/integration
# tests, the learning tests again under PyTorch's default CPU kernels, the built wheel running a chapter
# outside the repository, every notebook (executed once), then the book built from those executed
# notebooks, the tests of the rendered pages, and every page opened in headless Chromium
# (scripts/install_browser.sh installs Debian's chromium where it can).
#
# Every stage runs, even after an earlier one failed (a stage stops at its own first failing command);
# a stage whose input is missing says "skipped: needs ...". A summary table of all stages comes at the
# end, and the exit status is non-zero if any stage failed.
# RLTUTOR_TEST_FAKE="stage=pass|fail|skip,..." replaces the named stages' commands by that outcome and
# every other stage's by a pass (a dry run of this script's control flow; nothing is installed or run).
set -uo pipefail
cd "$(dirname "$0")/.."

STAGES=()                # names, in order
declare -A STATUS=()     # name -> passed | FAILED (exit N) | skipped
declare -A NOTE=()       # name -> why it was skipped
NOTE_FILE=$(mktemp)
trap 'rm -f "$NOTE_FILE"' EXIT

# stage NAME AFTER TITLE FUNCTION: unless stage AFTER ("-": none) did not pass, run FUNCTION in a
# subshell with errexit (its first failing command ends the stage, not the script); record the outcome.
stage() {
    local name=$1 after=$2 title=$3 fn=$4 rc=0 fake
    STAGES+=("$name")
    echo "== $name: $title"
    if [ "$after" != - ] && [ "${STATUS[$after]}" != passed ]; then
        STATUS[$name]=skipped
        NOTE[$name]="needs the $after stage to pass (it $(tr 'A-Z' 'a-z' <<<"${STATUS[$after]%% *}"))"
        echo "skipped: ${NOTE[$name]}"
        return 0
    fi
    : >"$NOTE_FILE"
    if [ -n "${RLTUTOR_TEST_FAKE:-}" ]; then
        fake=$(tr ',' '\n' <<<"$RLTUTOR_TEST_FAKE" | sed -n "s/^$name=//p")
        case "${fake:-pass}" in
            pass) rc=0 ;;
            fail) rc=1 ;;
            skip) echo "its input (faked as missing)" >"$NOTE_FILE" && rc=77 ;;
            *) echo "RLTUTOR_TEST_FAKE: '$name=$fake' is not pass, fail or skip" && exit 2 ;;
        esac
    else
        (
            set -e
            "$fn"
        )
        rc=$?
    fi
    if [ "$rc" = 0 ]; then
        STATUS[$name]=passed
    elif [ "$rc" = 77 ]; then
        STATUS[$name]=skipped
        NOTE[$name]="needs $(cat "$NOTE_FILE")"
        echo "skipped: ${NOTE[$name]}"
    else
        STATUS[$name]="FAILED (exit $rc)"
        echo "FAILED: the $name stage (exit $rc); going on with the next stages"
    fi
}

# skip WHAT: inside a stage, end it as skipped for want of WHAT (exit status 77).
skip() {
    echo "$*" >"$NOTE_FILE"
    exit 77
}

# Quick scale everywhere; one BLAS/OpenMP thread per process (pytest-xdist already uses both cores,
# and oversubscribed threads make small tensor loops 20-40x slower on a shared 2-core machine).
export RLTUTOR_QUICK=1 PYTHONHASHSEED=0 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
export RLTUTOR_EXECUTED_DIR="$(pwd)/_build/executed"

run_setup() {
    RLTUTOR_EXTRAS=${RLTUTOR_EXTRAS:-book,test,ray,hf} bash scripts/setup.sh
}
run_ruff() {
    .venv/bin/ruff check .
    .venv/bin/ruff format --check .
}
run_unit() {
    MPLBACKEND=Agg .venv/bin/python -m pytest -q -n 2 -m "not book and not notebooks and not packaging and not browser" tests
}
run_learning() {
    ATEN_CPU_CAPABILITY=default MPLBACKEND=Agg .venv/bin/python -m pytest -q -n 2 -m "learning" tests
}
run_wheel() {
    .venv/bin/python -m pytest -q -m packaging tests/test_wheel.py
}
run_notebooks() {
    rm -rf "$RLTUTOR_EXECUTED_DIR"
    .venv/bin/python -m pytest -q -n 2 -m notebooks --durations=12 tests/test_notebooks.py
}
run_book() {
    local nb missing=()
    for nb in notebooks/*.ipynb; do
        if [ ! -f "$RLTUTOR_EXECUTED_DIR/$(basename "$nb")" ]; then
            missing+=("$(basename "$nb")")
        fi
    done
    if [ "${#missing[@]}" != 0 ]; then
        skip "every notebook executed by the notebooks stage (missing: ${missing[*]})"
    fi
    bash scripts/book.sh
}
run_book_tests() {
    RLTUTOR_BOOK_HTML="$(pwd)/_build/html" .venv/bin/python -m pytest -q -m book tests
}
run_browser() {
    bash scripts/install_browser.sh || true # where it cannot install, it says what to install
    local name found=${RLTUTOR_CHROMIUM:-}
    if [ -n "$found" ] && [ ! -f "$found" ]; then
        skip "Chromium (RLTUTOR_CHROMIUM=$found is not a file)"
    fi
    if [ -z "$found" ]; then
        for name in chromium chromium-browser google-chrome google-chrome-stable; do
            if command -v "$name" >/dev/null 2>&1; then
                found=$name
                break
            fi
        done
    fi
    if [ -z "$found" ]; then
        skip "Chromium (sudo apt-get install chromium, or set RLTUTOR_CHROMIUM)"
    fi
    rm -rf _build/screenshots
    RLTUTOR_BOOK_HTML="$(pwd)/_build/html" RLTUTOR_SCREENSHOTS="$(pwd)/_build/screenshots" \
        .venv/bin/python -m pytest -q -rs -m browser tests/test_browser.py
}

stage setup - "install into .venv (scripts/setup.sh)" run_setup
stage ruff setup "ruff" run_ruff
stage unit setup "unit, property and integration tests" run_unit
stage learning setup "learning tests under ATEN_CPU_CAPABILITY=default (other CPUs take other kernel paths)" run_learning
stage wheel setup "the wheel: built from the tracked files, installed into a fresh venv, one chapter run outside the repository" run_wheel
stage notebooks setup "notebooks (each executed once; the book is built from these copies)" run_notebooks
stage book setup "book build from the executed notebooks" run_book
stage book-tests book "rendered-book tests" run_book_tests
stage browser book "every page in headless Chromium (screenshots in _build/screenshots)" run_browser

echo
echo "== summary"
failed=0
printf '| %-10s | %-16s | %s\n' stage result note
for name in "${STAGES[@]}"; do
    printf '| %-10s | %-16s | %s\n' "$name" "${STATUS[$name]}" "${NOTE[$name]:-}"
    case "${STATUS[$name]}" in FAILED*) failed=$((failed + 1)) ;; esac
done
if [ "$failed" -gt 0 ]; then
    echo "$failed stage(s) failed"
    exit 1
fi
echo "every stage that ran passed"
