"""Rerun the first updates of every stored agent run and compare them with the stored rows.

    python scripts/check_stored_runs.py [--updates 2] [--seed 0] [FILE.csv ...]

Each ``rltutor/data/agents/*.csv`` has beside it the command that wrote it (``FILE.cmd``). This reruns
that command for one seed and the first ``--updates`` updates (a run's first updates do not depend on how
many follow: the labs train with an unbounded step budget and stop after ``--updates``), then compares
every stored metric but the wall-clock ``time_s``, as written (5 significant digits). Same seed and same
machine give the same rows; another processor acts like another seed (PyTorch picks its kernels by CPU), so
a mismatch on another machine is not a bug by itself. Measurements that train nothing (``--snr``) are
skipped. Exit status 1 when any row differs. A sub-advantage mode renamed since a file was stored
(:data:`rltutor.rollout.compaction.RENAMED_SUB_ADVANTAGES`) is read under its new name, in the command and
in the stored rows alike (the stored files are relabelled; an older copy still checks).
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

from rltutor.rollout.compaction import RENAMED_SUB_ADVANTAGES

ROOT = Path(__file__).resolve().parents[1]
STORE = ROOT / "rltutor" / "data" / "agents"
SKIP_COLUMNS = {"time_s"}


def _rerun_args(cmd: str, seed: int, updates: int, out: str) -> list[str] | None:
    """The stored command with one seed, ``updates`` updates, one worker and ``out`` as its output."""
    argv = [RENAMED_SUB_ADVANTAGES.get(a, a) for a in shlex.split(cmd)]  # a renamed mode: its new name
    if "--snr" in argv:
        return None
    i = argv.index("-m")
    args, kept, skip = argv[i + 2 :], [], False
    for a in args:
        if a in ("--seeds", "--updates", "--workers", "--out"):
            skip = True
            continue
        if skip and not a.startswith("--"):
            continue
        skip = False
        kept.append(a)
    return [
        sys.executable,
        "-m",
        argv[i + 1],
        *kept,
        "--seeds",
        str(seed),
        "--updates",
        str(updates),
        "--workers",
        "1",
        "--out",
        out,
    ]


def check(csv: Path, seed: int, updates: int) -> list[str] | None:
    """The differences between ``csv``'s stored rows and a rerun (empty: it reproduces; None: ``csv`` holds no
    per-update training records, such as a timing pilot or the token agent's warm-start checkpoints)."""
    if not {"seed", "update"} <= set(pd.read_csv(csv, nrows=1).columns):
        return None
    cmd = csv.with_suffix(".cmd").read_text().strip()
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / csv.name)
        argv = _rerun_args(cmd, seed, updates, out)
        if argv is None:
            return []
        subprocess.run(argv, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        new = pd.read_csv(out)
    old = pd.read_csv(csv)
    if "sub_advantage" in old:
        old["sub_advantage"] = old["sub_advantage"].replace(RENAMED_SUB_ADVANTAGES)
    old = old[(old["seed"] == seed) & (old["update"] <= updates)]
    keys = [c for c in ("tasks", "sub_advantage", "context_budget", "algo", "guard", "seed", "update") if c in old]
    cols = [c for c in old.columns if c not in SKIP_COLUMNS and c not in keys]
    merged = old.merge(new, on=keys, how="outer", suffixes=("_stored", "_rerun"), indicator=True)
    problems = [
        f"{csv.name}: row {dict(r[keys])} only in {r['_merge']}" for _, r in merged.iterrows() if r["_merge"] != "both"
    ]
    for c in cols:
        a, b = merged[f"{c}_stored"], merged[f"{c}_rerun"] if f"{c}_rerun" in merged else None
        if b is None:
            problems.append(f"{csv.name}: column {c} missing in the rerun")
            continue
        differ = ~((a == b) | (a.isna() & b.isna()))
        for _, r in merged[differ].iterrows():
            problems.append(f"{csv.name}: {dict(r[keys])} {c}: stored {r[f'{c}_stored']}, rerun {r[f'{c}_rerun']}")
    return problems


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="*", type=Path, help="stored CSVs (default: every one with a .cmd)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--updates", type=int, default=2)
    args = p.parse_args(argv)
    files = args.files or sorted(f for f in STORE.glob("*.csv") if f.with_suffix(".cmd").exists())
    bad = 0
    for f in files:
        problems = check(f, args.seed, args.updates)
        if problems is None:
            print(f"{f.name}: not per-update training records, skipped", flush=True)
            continue
        bad += bool(problems)
        print(f"{f.name}: {'reproduces' if not problems else f'{len(problems)} differences'}", flush=True)
        for line in problems[:20]:
            print("  " + line)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
