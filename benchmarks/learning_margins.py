"""The margins of the learning tests under every CPU kernel setting (issue 19, section 1).

A test that asserts learning must pass by design, not by seed, and on every processor. PyTorch picks
its CPU kernels by processor (``ATEN_CPU_CAPABILITY``: AVX-512, AVX2, the default) and Intel MKL picks
its own for matrix products (``MKL_ENABLE_INSTRUCTIONS``); float rounding differs, and a seeded run
takes another path. This script runs each learning test's own training function (defined next to the
test, in ``tests/``) for seeds 0-5 under the 9 settings {native, ``ATEN_CPU_CAPABILITY=avx2``,
``=default``} x {``MKL_ENABLE_INSTRUCTIONS`` unset, ``=AVX2``, ``=SSE4_2``}, each setting in its own
subprocess (both variables are read when the libraries load), and prints one Markdown table per test:
setting x seed -> the asserted quantity, with the worst run of each setting. The tests' docstrings
quote these tables.

Run: ``nice -n 10 python benchmarks/learning_margins.py`` (all tests, about 30 CPU-minutes on one core),
or ``--tests ppo_cartpole --seeds 0 1 2``; ``--jsonl FILE`` keeps every measured number as it comes
(``--tables FILE`` prints the tables again from it).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# name -> (test file, training function, the asserted quantity, how the test reads it)
MEASURES: dict[str, tuple[str, str, str, str]] = {
    "ppo_cartpole": ("test_train", "ppo_cartpole", "final_last10", "test_ppo_learns_cartpole_within_a_small_budget"),
    "grpo_cartpole": ("test_train", "grpo_cartpole", "ratio", "test_grpo_clearly_beats_a_random_policy_on_cartpole"),
    "grpo_corridor": ("test_train", "grpo_corridor", "final", "test_grpo_learns_the_short_corridor"),
    "bandit_offset": (
        "test_baselines",
        "bandit_offset",
        "rloo_gain",
        "test_training_improves_and_offset_hurts_plain_reinforce",
    ),
    "sft_addition": ("test_lm", "sft_addition", "after", "test_sft_warm_start_reaches_accuracy"),
    "grpo_sequence": ("test_lm", "grpo_sequence", "gain", "test_rl_improves_reward"),
    "bc_accuracy": ("test_templates", "bc_accuracy", "accuracy", "test_behaviour_cloning_reaches_the_solver_actions"),
}

SETTINGS: dict[str, dict[str, str]] = {}
for _aten in ("native", "avx2", "default"):
    for _mkl in ("unset", "AVX2", "SSE4_2"):
        env = {} if _aten == "native" else {"ATEN_CPU_CAPABILITY": _aten}
        if _mkl != "unset":
            env["MKL_ENABLE_INSTRUCTIONS"] = _mkl
        SETTINGS[f"{_aten}/mkl={_mkl}"] = env


def _training_function(name: str):
    module, function, _, _ = MEASURES[name]
    spec = importlib.util.spec_from_file_location(module, ROOT / "tests" / f"{module}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, function)


def worker(names: list[str], seeds: list[int]) -> None:
    """Run in the subprocess of one setting: one JSON line per (test, seed)."""
    import torch

    torch.set_num_threads(1)
    capability = torch.backends.cpu.get_cpu_capability()
    for name in names:
        train = _training_function(name)
        for seed in seeds:
            start = time.perf_counter()
            values = train(seed)
            row = {"test": name, "seed": seed, "capability": capability, "wall_s": time.perf_counter() - start}
            print(json.dumps({**row, **values}), flush=True)


def measure(names: list[str], seeds: list[int], settings: list[str], jsonl: str | None = None) -> list[dict]:
    """Run the workers one setting after another; each row is appended to ``jsonl`` as it comes."""
    rows = []
    for setting in settings:
        env = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS")}
        env.update(SETTINGS[setting], OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", RLTUTOR_QUICK="1", MPLBACKEND="Agg")
        cmd = [sys.executable, __file__, "--worker", "--tests", *names, "--seeds", *map(str, seeds)]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        for line in proc.stdout:
            row = {"setting": setting, **json.loads(line)}
            print(
                f"# {setting} {row['test']} seed {row['seed']}: {row[MEASURES[row['test']][2]]:.4g} "
                f"({row['wall_s']:.1f} s)",
                file=sys.stderr,
                flush=True,
            )
            rows.append(row)
            if jsonl:
                with open(jsonl, "a") as fh:
                    fh.write(json.dumps(row) + "\n")
        if proc.wait() != 0:
            raise RuntimeError(f"the worker for {setting} failed (exit {proc.returncode})")
    return rows


def tables(rows: list[dict], keys: dict[str, str] | None = None) -> str:
    """One Markdown table per test: setting x seed -> the asserted quantity, and the worst seed."""
    out = []
    for name in dict.fromkeys(r["test"] for r in rows):
        key = (keys or {}).get(name, MEASURES[name][2])
        mine = [r for r in rows if r["test"] == name]
        seeds = sorted({r["seed"] for r in mine})
        out.append(f"{name}: {key} ({MEASURES[name][3]})\n")
        out.append("| setting | " + " | ".join(f"seed {s}" for s in seeds) + " | worst |")
        out.append("|-" * (len(seeds) + 2) + "|")
        for setting in sorted({r["setting"] for r in mine}, key=list(SETTINGS).index):
            v = {r["seed"]: r[key] for r in mine if r["setting"] == setting}
            cells = [f"{v[s]:.3g}" if s in v else "" for s in seeds]
            out.append(f"| {setting} | " + " | ".join(cells) + f" | {min(v.values()):.3g} |")
        others = [k for k in mine[0] if k not in ("setting", "test", "seed", "capability", "wall_s", key)]
        ranges = [f"{k} {min(r[k] for r in mine):.3g} to {max(r[k] for r in mine):.3g}" for k in others]
        wall = sorted(r["wall_s"] for r in mine)
        out.append(f"\nover all {len(mine)} runs: " + ";\n".join(ranges))
        out.append(f"median wall time of one run: {wall[len(wall) // 2]:.1f} s\n")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tests", nargs="+", default=list(MEASURES), choices=list(MEASURES))
    ap.add_argument("--seeds", nargs="+", type=int, default=list(range(6)))
    ap.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    ap.add_argument("--jsonl", help="append every measured run to this file as it finishes (one JSON line each)")
    ap.add_argument("--tables", help="print the tables of a --jsonl file and run nothing")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.tests, args.seeds)
        return []
    if args.tables:
        rows = [json.loads(line) for line in Path(args.tables).read_text().splitlines() if line.strip()]
        print(tables([r for r in rows if r["test"] in args.tests]))
        return rows
    sys.path.insert(0, str(ROOT))
    from rltutor.utils import machine_info

    print(machine_info(), "\n")
    rows = measure(args.tests, args.seeds, args.settings, args.jsonl)
    print(tables(rows))
    return rows


if __name__ == "__main__":
    main()
