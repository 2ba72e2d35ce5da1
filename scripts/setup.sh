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
# The stamp records what was installed: a hash of pyproject.toml and this script, then the extras. The
# install is skipped when the hash matches and the extras asked for are among those installed, so a
# superset satisfies a subset (scripts/test.sh asks for book,test,ray,hf; scripts/book.sh for book,test,hf:
# run alternately, neither reinstalls). With the hash unchanged, new extras are added to the old ones.
extras_list() { tr ', ' '\n\n' | sed '/^$/d' | sort -u; }
WANT=$(printf '%s' "${RLTUTOR_EXTRAS:-book,test,hf}" | extras_list)
HASH=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)
HAVE_HASH="" HAVE=""
if [ -f .setup-stamp ]; then
    HAVE_HASH=$(sed -n 1p .setup-stamp)
    HAVE=$(sed -n '2,$p' .setup-stamp | extras_list)
fi
if [ "$HAVE_HASH" = "$HASH" ]; then
    missing=$(comm -23 <(printf '%s\n' "$WANT") <(printf '%s\n' "$HAVE") | sed '/^$/d')
    if [ -z "$missing" ] && "$VPY" -c "import rltutor, torch" 2>/dev/null; then
        exit 0
    fi
    WANT=$(printf '%s\n%s\n' "$WANT" "$HAVE" | extras_list)
fi
EXTRAS=$(printf '%s\n' "$WANT" | paste -sd, -)
"$VPY" -m pip install -q --upgrade pip
if ! "$VPY" -c "import torch" 2>/dev/null; then
    "$VPY" -m pip install -q "torch==2.13.0"
fi
"$VPY" -m pip install -q -e ".[$EXTRAS]"
# verl, for tests/test_export.py only: it reads verl's PPO trainer config (a YAML file) and never imports verl.
# --no-deps because verl's own requirements conflict with the transformers pin above.
"$VPY" -m pip install -q --no-deps "verl==0.9.1"
printf '%s\n%s\n' "$HASH" "$WANT" > .setup-stamp
