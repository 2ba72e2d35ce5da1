"""Experiments on classic control and the corridor for the PPO (02) and GRPO (03) chapters.

Every function returns plain records (DataFrames) that the notebooks plot; none of them plots. The runs of
:func:`learning_curves` go through the labs' run store (:func:`rltutor.experiments.runs.run_each`, in this
process).
Each takes a ``scale`` through :func:`scale_settings` ("quick": seconds on a CPU; "full": minutes).

* :func:`learning_curves`: train several named configs over several seeds, return the mean return of
  the last 10 episodes on a common grid of environment steps.
* :func:`clip_fraction_by_epoch`: reuse one batch for several epochs and watch the clip fraction
  and the approximate KL grow (why "clip fraction is always 0" with one update per batch).
* :func:`gae_table`: advantages of one batch under many (gamma, lambda), for the GAE dial.
* :func:`dead_group_table`: the fraction of GRPO groups with all-equal rewards, measured and predicted.
* :func:`std_weights`: the size of a success's advantage with and without the std division.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from rltutor.advantages import gae, group_advantages
from rltutor.config import CARTPOLE_GRPO, CARTPOLE_PPO, make_config
from rltutor.experiments.runs import run_each
from rltutor.train import Trainer
from rltutor.utils import resolve_scale

__all__ = [
    "CARTPOLE_PPO",
    "CARTPOLE_GRPO",
    "scale_settings",
    "learning_curves",
    "clip_fraction_by_epoch",
    "gae_table",
    "dead_group_table",
    "std_weights",
]


def scale_settings(scale: str | None = None) -> dict:
    """Budgets for a scale: ``steps`` per run and ``seeds``."""
    scale = resolve_scale(scale)
    if scale == "quick":
        return {"scale": scale, "steps": 20_000, "seeds": [1, 2], "grid": 20}
    return {"scale": scale, "steps": 100_000, "seeds": [1, 2, 3, 4, 5], "grid": 50}


def learning_curves(
    variants: dict[str, tuple[str, dict]], steps: int, seeds: list[int], grid: int = 20
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train each variant ``name -> (algo, overrides)`` on each seed for ``steps`` env steps.

    The learning rate anneals over ``overrides["total_steps"]`` if given, else over ``steps``.

    Returns ``(curves, histories)``. ``curves`` is a long DataFrame with columns ``variant, seed,
    env_steps, return, time_s`` where ``return`` is the mean return of the last 10 finished
    episodes, interpolated on ``grid`` points of env steps (so seeds with different update sizes
    line up) and ``time_s`` the wall time of the whole run. ``histories`` holds every run's raw
    metrics (one row per update, the trainer's columns plus ``variant`` and ``seed``).
    """
    jobs = [
        (name, algo, overrides, seed, steps, grid) for name, (algo, overrides) in variants.items() for seed in seeds
    ]
    results = run_each(_learning_curve, jobs, workers=1)  # in this process, one run after another
    rows = [row for rs, _ in results for row in rs]
    return pd.DataFrame(rows), pd.concat([h for _, h in results], ignore_index=True)


def _learning_curve(job: tuple) -> tuple[list[dict], pd.DataFrame]:
    """One run of :func:`learning_curves`: its points on the grid and its raw metrics."""
    name, algo, overrides, seed, steps, grid = job
    xs = np.linspace(steps / grid, steps, grid)
    trainer = Trainer(make_config(algo, seed=seed, **{"total_steps": steps, **overrides}))
    h = trainer.train(total_steps=steps, progress=False)
    y = np.interp(xs, h["env_steps"], h["return_last10"].ffill().bfill())
    rows = [
        {"variant": name, "seed": seed, "env_steps": float(x), "return": float(v), "time_s": trainer.elapsed}
        for x, v in zip(xs, y, strict=True)
    ]
    return rows, h.assign(variant=name, seed=seed)


def clip_fraction_by_epoch(
    epochs: int = 8, minibatches: int = 4, warmup_updates: int = 5, seed: int = 0
) -> pd.DataFrame:
    """Train PPO on CartPole for a few updates, then make ``epochs`` passes over one fresh batch.

    Returns one row per pass: ``epoch, clip_frac, approx_kl`` (means over that pass's minibatches),
    and, as ``epoch = 0``, the first minibatch of the first pass alone, where the ratio is exactly 1.
    """
    overrides = {**CARTPOLE_PPO, "epochs": 1, "minibatches": minibatches, "anneal_lr": False}
    trainer = Trainer(make_config("ppo", seed=seed, **{**overrides, "total_steps": 10**6}))
    for _ in range(warmup_updates):
        trainer.step()
    batch, _ = trainer.collector.collect(trainer.policy, trainer.generator)
    rows = []
    first = Trainer(make_config("ppo", seed=seed, **{**overrides, "minibatches": 1, "total_steps": 10**6}))
    first.policy.load_state_dict(trainer.policy.state_dict())
    m = first.update(batch)  # one minibatch = the whole batch, one step: pi_theta == pi_old throughout
    rows.append({"epoch": 0, "clip_frac": m["clip_frac"], "approx_kl": m["approx_kl"]})
    for epoch in range(1, epochs + 1):  # the same batch again and again: pi_theta drifts from pi_old
        m = trainer.update(batch)
        rows.append({"epoch": epoch, "clip_frac": m["clip_frac"], "approx_kl": m["approx_kl"]})
    return pd.DataFrame(rows)


def gae_table(rewards: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, gammas, lams) -> pd.DataFrame:
    """GAE advantages of row 0 and batch statistics for every (gamma, lambda) pair.

    Returns rows ``gamma, lam, t, advantage`` for row 0 (every valid step), with the batch-wide
    ``adv_var`` (variance of A over valid steps) and ``mc_gap`` (mean squared difference from the
    lambda = 1 advantages at the same gamma: how far the estimate is pulled toward the critic).
    """
    out = []
    valid0 = mask[0].bool()
    for g in gammas:
        a_mc, _ = gae(rewards, values, mask, gamma=float(g), lam=1.0)
        for lam in lams:
            a, _ = gae(rewards, values, mask, gamma=float(g), lam=float(lam))
            m = mask.bool()
            var = float(a[m].var())
            gap = float(((a - a_mc)[m] ** 2).mean())
            for t, v in enumerate(a[0][valid0].tolist()):
                out.append(
                    {"gamma": float(g), "lam": float(lam), "t": t, "advantage": v, "adv_var": var, "mc_gap": gap}
                )
    return pd.DataFrame(out)


def dead_group_table(group_sizes=(2, 4, 8, 16), num_groups: int = 64, seed: int = 0) -> pd.DataFrame:
    """Fraction of all-equal groups on a pass/fail task, measured vs the formula p^G + (1-p)^G.

    The task is the corridor with horizon 1: one decision, reward 1 if right, else 0. The policy is
    the untrained one (pass rate p ~ 0.5, measured). Returns ``G, measured, predicted, p``.
    """
    rows = []
    for G in group_sizes:
        cfg = make_config(
            "grpo",
            env="corridor",
            env_options={"horizon": 1},
            group_size=G,
            num_groups=num_groups,
            seed=seed,
            total_steps=10**6,
        )
        trainer = Trainer(cfg)
        batch, _ = trainer.collector.collect(trainer.policy, trainer.generator)
        scores = (batch["rewards"] * batch["mask"]).sum(1).view(num_groups, G)  # (groups, G)
        measured = float(((scores.max(1).values - scores.min(1).values) == 0).float().mean())
        p = float(scores.mean())
        rows.append({"G": G, "measured": measured, "predicted": p**G + (1 - p) ** G, "p": p})
    return pd.DataFrame(rows)


def std_weights(pass_rates=None, G: int = 8) -> pd.DataFrame:
    """Advantage of one success in a group of G with k = round(p G) successes, GRPO vs Dr.GRPO.

    Returns ``p, grpo, dr_grpo``: GRPO divides by the group std, so groups with p near 0 or 1 (one
    lucky success among failures) get large advantages; Dr.GRPO's stay proportional to 1 - p.
    """
    pass_rates = np.arange(1, G) / G if pass_rates is None else pass_rates
    rows = []
    for p in pass_rates:
        k = int(round(p * G))
        scores = torch.tensor([1.0] * k + [0.0] * (G - k))
        ids = torch.zeros(G, dtype=torch.long)
        rows.append(
            {
                "p": k / G,
                "grpo": float(group_advantages(scores, ids, "grpo")[0]),
                "dr_grpo": float(group_advantages(scores, ids, "dr_grpo")[0]),
            }
        )
    return pd.DataFrame(rows)
