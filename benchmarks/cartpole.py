"""CartPole-v1: rltutor PPO against stable-baselines3 PPO (rl-zoo settings) and a CleanRL-style PPO.

    python benchmarks/cartpole.py --seeds 5              # the table in benchmarks/README.md
    python benchmarks/cartpole.py --seeds 2 --quick      # a smoke run

Every contender runs in this one process, one seed after another, on the same machine, with
``torch.set_num_threads(1)``. For each run we log every finished episode with the environment steps
and the wall-clock seconds since the start of training (the clock starts just before the
environments and the model are built; imports are excluded). The definitions are the same for all:

* reached: the first moment the mean return of the last 10 finished episodes is >= 475;
* final: the mean return of the last 10 episodes finished when the run's budget is spent;
* held: ``final >= 475``.

Contenders

1. ``sb3-zoo``: stable-baselines3 ``PPO("MlpPolicy")`` with the rl-baselines3-zoo hyperparameters
   for CartPole-v1 (8 envs, n_steps 32, batch 256, 20 epochs, gamma 0.98, lambda 0.8, lr and clip
   range linear from 1e-3 and 0.2, no entropy bonus), on its ``DummyVecEnv`` of gymnasium envs.
2. ``cleanrl-style``: CleanRL ``ppo.py`` default hyperparameters (4 envs, 128 steps, 4 epochs x 4
   minibatches, lr 2.5e-4 annealed over CleanRL's default 500k steps, gamma 0.99, lambda 0.95,
   entropy 0.01, value clipping) run with *rltutor's trainer*, not CleanRL's script. Differences
   from the script: rltutor bootstraps truncated episodes (CleanRL treats them as terminal),
   minibatches are sets of episode pieces rather than single steps, and the numpy CartPole is used.
3. ``rltutor``: rltutor PPO with ``rltutor.config.CARTPOLE_PPO`` (the same for all
   seeds): 8 envs x 32 steps, 10 epochs x 2 minibatches, lr 2e-3 annealed, gamma 0.98, lambda 0.8,
   no entropy bonus, no value clipping; numpy-vectorized CartPole, one torch thread.

stable-baselines3 is an optional dependency (the ``bench`` extra); without it that row is skipped.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from rltutor.config import CARTPOLE_PPO, make_config
from rltutor.train import Trainer
from rltutor.utils import machine_info

THRESHOLD = 475.0

# The rltutor configuration, tuned by hand on seeds 101-103 (not the benchmark seeds 1-5).
RLTUTOR_PPO = {k: v for k, v in CARTPOLE_PPO.items() if k != "env"}
CLEANRL_PPO = dict(total_steps=500_000)  # Config's defaults are CleanRL ppo.py's; anneal over 500k like it


def summarize(log: list[tuple[int, float, float]], budget_steps: int) -> dict:
    """log: (env_steps, episode_return, seconds) for every finished episode, in order."""
    rets = [r for _, r, _ in log]
    reached_steps = reached_s = None
    for i in range(9, len(log)):
        if np.mean(rets[i - 9 : i + 1]) >= THRESHOLD:
            reached_steps, reached_s = log[i][0], log[i][2]
            break
    final = float(np.mean(rets[-10:])) if rets else float("nan")
    return {
        "reached_steps": reached_steps,
        "reached_s": reached_s,
        "final": final,
        "total_s": log[-1][2] if log else float("nan"),
        "budget": budget_steps,
    }


def run_rltutor(overrides: dict, seed: int, budget: int) -> dict:
    t0 = time.perf_counter()
    cfg = dict(overrides)
    cfg.setdefault("total_steps", budget)
    trainer = Trainer(make_config("ppo", env="CartPole-v1", seed=seed, **cfg))
    log, seen = [], 0
    while trainer.env_steps < budget:
        trainer.step()
        now = time.perf_counter() - t0
        for e in trainer.episodes[seen:]:
            log.append((e["env_steps"], e["return"], now))
        seen = len(trainer.episodes)
    return summarize(log, budget)


def run_sb3(seed: int, budget: int) -> dict:
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env

    log: list[tuple[int, float, float]] = []
    t0 = time.perf_counter()

    class Log(BaseCallback):
        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                if "episode" in info:
                    log.append((self.num_timesteps, float(info["episode"]["r"]), time.perf_counter() - t0))
            return True

    def linear(x0):
        return lambda progress_remaining: progress_remaining * x0

    env = make_vec_env("CartPole-v1", n_envs=8, seed=seed)
    model = PPO(
        "MlpPolicy",
        env,
        n_steps=32,
        batch_size=256,
        gae_lambda=0.8,
        gamma=0.98,
        n_epochs=20,
        ent_coef=0.0,
        learning_rate=linear(1e-3),
        clip_range=linear(0.2),
        seed=seed,
        device="cpu",
        verbose=0,
    )
    model.learn(total_timesteps=budget, callback=Log())
    return summarize(log, budget)


def fmt(x, spec):
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "-"
    return "not reached" if x == float("inf") else format(x, spec)


def table(results: dict[str, list[dict]]) -> str:
    lines = [
        "| contender | seeds reached 475 | env steps to 475 (median) | seconds to 475 (median) | "
        "final return (min / median) | seeds holding >= 475 at the end | budget (steps) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, rows in results.items():
        ok = [r for r in rows if r["reached_steps"] is not None]
        # Unreached seeds count as infinitely slow, so the median is over all seeds.
        steps = [r["reached_steps"] if r["reached_steps"] is not None else float("inf") for r in rows]
        secs = [r["reached_s"] if r["reached_s"] is not None else float("inf") for r in rows]
        finals = [r["final"] for r in rows]
        held = sum(f >= THRESHOLD for f in finals)
        med_steps, med_s = statistics.median(steps), statistics.median(secs)
        lines.append(
            f"| {name} | {len(ok)}/{len(rows)} | {fmt(med_steps, ',.0f')} | {fmt(med_s, '.1f')} | "
            f"{min(finals):.0f} / {statistics.median(finals):.0f} | {held}/{len(rows)} | "
            f"{rows[0]['budget']:,} |"
        )
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--budget", type=int, default=50_000, help="env steps for rltutor and sb3-zoo")
    p.add_argument("--cleanrl-budget", type=int, default=150_000, help="env steps for cleanrl-style")
    p.add_argument("--quick", action="store_true", help="smaller budgets, for a smoke run")
    p.add_argument("--only", default="rltutor,sb3-zoo,cleanrl-style")
    args = p.parse_args(argv)
    if args.quick:
        args.budget, args.cleanrl_budget = 5_000, 5_000
    torch.set_num_threads(1)
    only = args.only.split(",")
    runners = {
        "rltutor": lambda s: run_rltutor(RLTUTOR_PPO, s, args.budget),
        "sb3-zoo": lambda s: run_sb3(s, args.budget),
        "cleanrl-style": lambda s: run_rltutor(CLEANRL_PPO, s, args.cleanrl_budget),
    }
    try:
        import stable_baselines3  # noqa: F401
    except ImportError:
        print("stable-baselines3 is not installed (pip install -e '.[bench]'); skipping sb3-zoo")
        only = [o for o in only if o != "sb3-zoo"]
    results: dict[str, list[dict]] = {name: [] for name in runners if name in only}
    # Warm-up, untimed: the first optimizer step and the first SB3 model trigger lazy imports
    # (several seconds here) that would otherwise be charged to whichever contender runs first.
    run_rltutor(RLTUTOR_PPO, 0, 512)
    if "sb3-zoo" in results:
        run_sb3(0, 512)
    for seed in range(1, args.seeds + 1):  # interleave contenders so load changes hit all alike
        for name in results:
            r = runners[name](seed)
            results[name].append(r)
            print(
                f"{name:14s} seed {seed}: reached at {fmt(r['reached_steps'], ',')} steps / "
                f"{fmt(r['reached_s'], '.1f')} s, final {r['final']:.0f}, run {r['total_s']:.1f} s",
                flush=True,
            )
    print()
    print(machine_info())
    print(table(results))


if __name__ == "__main__":
    main()
