"""Estimated Colab T4 time of one full-scale arm of each LM chapter's experiment (issue 21), from this CPU.

For each experiment (default: :data:`rltutor.experiments.gpu_estimate.CHAPTER_EXPERIMENTS`) and each of its
arms at the full scale, seed 0: the CPU time of the whole arm (one thread's CPU seconds, and the wall time
beside them; its SFT timed in full, the first update, the median of ``--timed`` updates after it,
extrapolated) and the T4 estimate of :mod:`rltutor.experiments.gpu_estimate` (a FLOP count and the operator
calls counted on one update). No GPU is used. Arms that share a warm start share its SFT timing.

    python benchmarks/t4_estimate.py --out rltutor/data/lm/t4_estimate.csv
    python benchmarks/t4_estimate.py --experiments family --timed 2 --out /tmp/t4.csv

Writes the CSV and, beside it, FILE.cmd with the command; prints the table and each chapter's sentence.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time

import pandas as pd
import torch

from rltutor.experiments.gpu_estimate import (
    CHAPTER_EXPERIMENTS,
    assumptions,
    dispatch_seconds,
    estimate_experiment,
    t4_sentence,
)
from rltutor.experiments.lm import EXPERIMENTS, experiment_arms
from rltutor.utils import machine_info


def processor() -> str:
    """The processor's name as lscpu gives it (``Model name``) and the logical CPUs."""
    import subprocess

    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        name = next(line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name"))
    except (OSError, subprocess.CalledProcessError, StopIteration):
        name = "unknown processor"
    return f"{name}, {os.cpu_count()} cores"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--experiments", nargs="+", choices=EXPERIMENTS, default=list(CHAPTER_EXPERIMENTS))
    ap.add_argument("--timed", type=int, default=3, help="steady updates timed per arm (after the first)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True, help="CSV path; FILE.cmd gets the command")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    print(machine_info())
    disp = dispatch_seconds()
    cache: dict = {}
    frames = []
    for name in args.experiments:
        arms, updates = experiment_arms(name, "full")
        df = estimate_experiment(name, arms, updates, seed=args.seed, timed=args.timed, sft_cache=cache)
        print(f"{name}: {time.perf_counter() - t0:.0f} s", flush=True)
        frames.append(df)
    table = pd.concat(frames, ignore_index=True)
    table["cpu"] = processor()
    table["cpu_dispatch_us"] = disp * 1e6
    table["torch"] = torch.__version__
    table["assumptions"] = assumptions()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    table.to_csv(args.out, index=False, float_format="%.5g")
    with open(os.path.splitext(args.out)[0] + ".cmd", "w") as f:
        f.write("python benchmarks/t4_estimate.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:])) + "\n")
    cols = [
        "experiment",
        "arm",
        *(["L"] if "L" in table else []),
        "updates",
        "cpu_s_measured_estimate_full_run",
        "t4_s_low",
        "t4_s_high",
        "wall_s_estimate_full_run",
        "load_avg_1min",
    ]
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table[cols].round(1).to_string(index=False))
    for name in args.experiments:
        print(f"{name}: {t4_sentence(name, table)}")
    print(f"{len(table)} arms in {time.perf_counter() - t0:.0f} s; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
