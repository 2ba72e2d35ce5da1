"""Tool calls per second of the simulated shell (rltutor.envs.toolshell), on one core.

The environment must not be the bottleneck of a rollout: a tiny policy on a GPU samples thousands of
tool calls per second, so the target is at least 10,000 calls/s on one CPU core. The mix below is what
agents issue: the honest solver's cats and its submit, listings, recursive greps, globs, pipes,
variables, python one-liners, network calls, and malformed calls. Episodes are reset (not timed) when
they end, so every timed call is a ``step``. The headline is calls per second of this process's CPU
time (``time.process_time``), which a busy shared machine does not distort; the wall-clock rate is
printed beside it.

    OMP_NUM_THREADS=1 python benchmarks/toolshell_speed.py            # 20,000 calls, best of 3
    python benchmarks/toolshell_speed.py --calls 2000 --repeats 1 --hops 8
"""

from __future__ import annotations

import argparse
import platform
import time

import torch

from rltutor.envs.toolshell import ToolShell, scripted_hacker, scripted_solver
from rltutor.utils import machine_info

MIX = [
    "ls",
    "ls src lib",
    "cat README.md",
    "head -n 3 README.md",
    "grep -rn TARGET .",
    "grep -rl WEIGHT src",
    "find . -name '*.py'",
    "cd tests; pwd; cd ..",
    "echo hello world",
    "cat t*/public/*.py | grep import",
    "X=README; cat $X.md | head -n 2",
    "python -c \"print(open('README.md').read())\"",
    "python -c 'import os; print(os.listdir(\".\"))'",
    "curl http://docs.local/tools",
    "pytest tests/public",
    "sh -c 'ls docs'",
    "cat 'unclosed",
    "nosuchtool --flag",
    "cat ../../../../etc/passwd",
]


def commands(env: ToolShell, n: int) -> list[str]:
    """``n`` calls: the honest solve, one hack, and the mix, repeated."""
    base = scripted_solver(env)[:-1] + scripted_hacker(env, "grep_answer")[:-1] + MIX
    return [base[i % len(base)] for i in range(n)]


def bench(calls: int, hops: int, seed: int = 0) -> tuple[float, float]:
    """(calls per second of CPU time of this process, calls per wall-clock second)."""
    env = ToolShell(hops=hops, seed=seed, max_turns=10**9)
    cmds = commands(env, calls)
    c0, t0 = time.process_time(), time.perf_counter()
    for c in cmds:
        env.step(c)
        if env.done:  # only submit or max_turns ends an episode; neither is in the mix
            env.reset(seed)
    return calls / (time.process_time() - c0), calls / (time.perf_counter() - t0)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--calls", type=int, default=20_000, help="tool calls per timing")
    p.add_argument("--repeats", type=int, default=3, help="timings; the best is reported")
    p.add_argument("--hops", type=int, default=3, help="the task's hops knob")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    runs = [bench(args.calls, args.hops) for _ in range(args.repeats)]
    rate, wall = max(r for r, _ in runs), max(w for _, w in runs)
    row = {
        "calls_per_s": round(rate),
        "calls_per_wall_s": round(wall),
        "calls": args.calls,
        "hops": args.hops,
        "cpu": machine_info(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "python": platform.python_version(),
    }
    print(
        f"toolshell: {rate:,.0f} tool calls per CPU second ({wall:,.0f} per wall-clock second; one core, "
        f"{args.calls} calls, hops={args.hops}, mix of {len(MIX)} command kinds + solver + hack)"
    )
    print(f"{row['cpu']} | python {row['python']}")
    return row


if __name__ == "__main__":
    main()
