#!/usr/bin/env bash
# Mutation testing of the math and the trainer's update (not part of CI; see CONTRIBUTING.md).
#
#   bash scripts/mutation.sh                 # the default scope, ~10-20 min on 2 CPU cores
#   bash scripts/mutation.sh 'rltutor.losses.x_value_loss__mutmut_*'    # one function
#
# mutmut (pip install mutmut) rewrites one function at a time (a flipped sign, a changed constant, a
# dropped argument...) and runs the fast tests that cover it; a mutant that no test notices "survives".
# It works in a throw-away copy of the repository, so the working tree is never touched; the copy's
# path is printed at the end (`cd` there and run `mutmut show NAME` to see a survivor's diff).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
"$PY" -c "import mutmut" 2>/dev/null || { echo "mutmut missing: $PY -m pip install mutmut" >&2; exit 2; }
WORK="${MUTATION_DIR:-$(mktemp -d /tmp/rltutor-mutation.XXXXXX)}"
mkdir -p "$WORK/tests"
cp -r "$ROOT/rltutor" "$WORK/"
cp "$ROOT/pyproject.toml" "$WORK/"
TESTS="tests/test_advantages.py tests/test_losses.py tests/test_math_inputs.py tests/test_update_mutations.py"
for t in $TESTS; do cp "$ROOT/$t" "$WORK/tests/"; done
# the tests' selection and the files mutmut may mutate (only_mutate); the functions are chosen below
{
  echo "[mutmut]"
  echo "source_paths = rltutor"
  printf 'only_mutate =\n    rltutor/advantages.py\n    rltutor/losses.py\n    rltutor/train.py\n'
  printf 'pytest_add_cli_args_test_selection =\n'; for t in $TESTS; do echo "    $t"; done
  printf 'pytest_add_cli_args =\n    -m\n    not slow and not book\n    -p\n    no:cacheprovider\n    -q\n'
} > "$WORK/setup.cfg"
if [ "$#" -eq 0 ]; then
  set -- 'rltutor.train.*update__mutmut_*' 'rltutor.advantages.x_gae__mutmut_*' \
         'rltutor.advantages.x_group_advantages__mutmut_*' 'rltutor.advantages.x_whiten__mutmut_*' \
         'rltutor.losses.x__ppo__mutmut_*' 'rltutor.losses.x_policy_loss__mutmut_*' \
         'rltutor.losses.x_value_loss__mutmut_*'
fi
cd "$WORK"
export OMP_NUM_THREADS=1 PYTHONPATH="$WORK"
"$PY" -m mutmut run --max-children "${MUTATION_JOBS:-2}" "$@" || true
"$PY" -m mutmut results > "$WORK/results.txt" 2>&1 || true
# `mutmut results` lists the mutants not killed: "survived" (no test noticed), "not checked" (outside the scope)
echo "survivors, from $WORK/results.txt:"
grep ": survived" "$WORK/results.txt" || echo "none"
echo "survived: $(grep -c ': survived' "$WORK/results.txt" || true); timeouts/suspicious: $(grep -cE ': (timeout|suspicious)' "$WORK/results.txt" || true)"
echo "copy: $WORK   (cd there; $PY -m mutmut show NAME)"
