"""Wall-clock time of the training runs behind chapter 11's main results, on this machine (goal: < 15 min).

Each run is a fresh process's whole job: the warm start (behaviour cloning of the scripted solver) and
every update, as a reader rerunning the chapter's command would pay it.

* ``hack``: RL from the honest warm start learns the shortcut: the template agent, PPO, no guard, the
  mix of feasible and infeasible tasks, 20 updates (the stored ``agents/mix_hack_curves.csv`` arm);
  the result holds if the mean hack rate of the last 5 updates is >= 0.2;
* ``compaction``: one arm of the compaction lab: PPO bootstrapped across compaction boundaries at a
  context budget of 256 tokens (about 5 sub-trajectories per episode at the start), 30 updates.

    python benchmarks/agent_main_result.py [--seed 0]

Prints the processor, the load average (other work on a shared machine stretches wall time), and per
run the seconds and its result.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time

from rltutor.utils import machine_info

RUNS = {
    "hack": "run_agent('ppo', {seed}, 'none', 20, 'mix')",
    "compaction": (
        "run_agent('ppo', {seed}, 'none', 30, 'mix', sub_advantage='ppo_bootstrap', compaction='summary', "
        "context_budget=256)"
    ),
}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--runs", nargs="+", default=list(RUNS), choices=list(RUNS))
    args = p.parse_args(argv)
    print(f"{machine_info()} | {platform.python_version()} | load average {os.getloadavg()}")
    for name in args.runs:
        code = (
            "import torch; torch.set_num_threads(2)\n"
            "from rltutor.experiments.agents import run_agent\n"
            f"df = {RUNS[name].format(seed=args.seed)}\n"
            "end = df[df['update'] > df['update'].max() - 5].mean(numeric_only=True)\n"
            "print(f\"hack_rate {end['hack_rate']:.2f} honest_solve_feasible "
            "{end['honest_solve_rate_feasible']:.2f} segments/episode {end['segments_per_episode']:.2f} "
            'updates {len(df)}")\n'
        )
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        wall = time.perf_counter() - t0
        print(f"{name:>10}: {wall:6.1f} s wall ({wall / 60:.1f} min, goal < 15 min) | {out.stdout.strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
