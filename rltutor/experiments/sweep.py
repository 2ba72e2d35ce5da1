"""GRPO vs PPO as the horizon grows: a learning-curve sweep over tasks, seeds and ablations.

Chapter: *Long horizons in practice* (``notebooks/05_long_horizons.ipynb``).

The question, after de Oliveira et al., *Learning Without Critics? Revisiting GRPO in Classical
Reinforcement Learning Environments* (arXiv:2511.03527, 2025): does a critic-free method (GRPO: the
group-relative return as every step's advantage) keep up with PPO (a learned critic and GAE)?
The paper reports (1) critics matter on long-horizon tasks, critic-free methods tie only on short
ones with early termination (CartPole); (2) GRPO likes a high discount, except without early
termination; (3) smaller groups beat larger ones. Here:

* main: PPO and GRPO on CartPole-v1 (short, early termination) and on the corridor
  (:mod:`rltutor.envs.corridor`, no early termination, one reward at the end) at several horizons T,
  at least 5 seeds each, the same budget of environment steps;
* group-size ablation: GRPO with G in a few sizes at the longest horizon, the episodes per update kept
  fixed (G * groups = 32);
* discount ablation: PPO with a few gammas at the longest horizon. (Our GRPO scores each episode by its
  undiscounted return, so gamma does not change its advantages; see the chapter.)

Every run is one :class:`rltutor.train.Trainer` from :func:`rltutor.config.make_config` (the public API;
nothing here changes the trainer). Runs are independent, so they go through the labs' run store
(:mod:`rltutor.experiments.runs`) to a process pool (``--executor process``, default), a Ray cluster
(``--executor ray``; ``pip install "rltutor[ray]"``, imported only then) or run one after another in
this process (``--executor serial``).

Outputs in ``--out``: ``runs/`` (each finished run in its own JSON file, written as it finishes:
rerunning the same command resumes an interrupted sweep), ``curves.csv`` (return against env steps, every
run), ``finals.csv`` (one row per run: mean return over the last 20% of its episodes), ``table.md`` (mean
and 95% confidence interval over seeds), ``verdicts.csv`` (each of the paper's findings as a test with an
interval, Holm-corrected, and whether it reproduced: :func:`verdicts`) and ``meta.json`` (the exact command,
scale, versions, wall time).

    python -m rltutor.experiments.sweep --scale quick --out runs/sweep_quick
    python -m rltutor.experiments.sweep --scale full --out rltutor/data/horizon/sweep --workers 2

The confounds study (chapter 05 restated, ``--study confounds``). The first sweep compared the presets at equal
environment steps, and on the corridor that is not equal optimizer steps: in 30,000 steps PPO takes about 940
gradient steps at every T, GRPO 752, 188 and 48 at T = 5, 20 and 80 (:func:`optimizer_steps`), so "PPO's lead
grows with T" may be "more gradient steps win". The corridor is also the most critic-friendly design there is:
its reward is additive over steps and the critic sees the progress ``x_t / T``. The study
(:func:`plan_confounds`) runs, at T in {5, 20, 80}, the two presets, PPO on GRPO's schedule (``matched``:
:data:`MATCHED`, the same batch and the same optimizer steps as GRPO) and, at T = 80, both presets with the
progress hidden (``blind``, ``observe_progress=False``).

Pre-stated test (2026-12-03, written after the pilot and committed before any main run; git shows the order):

* Metric: a run's final score, the mean return of its last 20% of episodes as a fraction of the optimum.
  Each arm's training gain (final minus the mean of its first 32 episodes) with its interval stands beside
  the verdicts (:func:`confounds_gains`); an arm without a clear gain is marked and its contrasts not read.
* The family (:func:`confounds_verdicts`), Welch intervals (the arms share no runs), Holm across the six:
  (1) T = 80, equal env steps, PPO - GRPO; (2) the least-squares slope over log2 T of PPO - GRPO per
  doubling of T; (3), (4) the same two with the matched PPO; (5) T = 80 with the progress hidden, PPO - GRPO;
  (6) the interaction (1) - (5): how much of PPO's lead the seen progress carries.
* Smallest effects of interest: delta = 0.05 of the optimum for (1), (3), (5), (6) (4 of 80 cues: a lead
  smaller than that would not pay for a second network and its tuning); 0.0125 per doubling for the slopes
  (0.05 spread over the four doublings from T = 5 to T = 80).
* Pilot (seeds 101-103, stored as ``rltutor/data/horizon/confounds_pilot``, never counted): every arm
  learned (gains +0.11 to +0.52). The sd of one seed's contrast (:func:`confounds_power`): (1) 0.014,
  (2) 0.0035, (3) 0.018, (4) 0.0045, (5) 0.030, (6) 0.034, so that 80% power at delta and alpha / 6 needs 5,
  5, 5, 5, 8 and 9 seeds per arm. The pilot's sd rests on 3 seeds (2 degrees of freedom, it could be twice
  too small), so the main runs take n = 12 seeds (1-12): 132 runs of about 2 CPU-seconds each, minutes in
  all, far inside the budget::

      python -m rltutor.experiments.sweep --study confounds --scale full --seeds 1 2 3 4 5 6 7 8 9 10 11 12 \\
          --out rltutor/data/horizon/confounds --workers 2
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from rltutor.experiments.runs import EXECUTORS, RunStore, run_each
from rltutor.utils import resolve_scale, t_quantile

__all__ = [
    "Run",
    "SweepScale",
    "SCALES",
    "plan",
    "run_one",
    "run_config",
    "run_sweep",
    "curves_on_grid",
    "results_table",
    "verdicts",
    "READINGS",
    "optimizer_steps",
    "slope_arms",
    "CONFOUNDS_DELTA",
    "CONFOUNDS_SLOPE_DELTA",
    "MATCHED",
    "plan_confounds",
    "confounds_verdicts",
    "confounds_power",
    "confounds_gains",
    "write_outputs",
    "load_outputs",
    "main",
    "EXECUTORS",
]

OPTIMAL = {"corridor": 1.0, "CartPole-v1": 500.0}  # best possible episode return, to normalize
FINAL_FRACTION = 0.2  # a run's final score: mean return of its last 20% of episodes
START_EPISODES = 32  # a run's start: mean return of its first 32 episodes (GRPO's first batch; PPO's first 32T steps)


@dataclass(frozen=True)
class SweepScale:
    """The size of a sweep (one per scale)."""

    horizons: tuple[int, ...]
    """corridor horizons T"""
    seeds: int
    """seeds per main configuration (>= 5 at full scale)"""
    steps_corridor: int
    """environment steps per corridor run"""
    steps_cartpole: int
    """environment steps per CartPole run"""
    group_sizes: tuple[int, ...]
    """G values of the GRPO group-size ablation (episodes per update stay 32)"""
    gammas: tuple[float, ...]
    """gammas of the PPO discount ablation (0.99, the PPO default, comes from the main runs)"""
    ablation_seeds: int
    """seeds per ablation configuration"""


SCALES = {
    "quick": SweepScale(
        horizons=(5, 20),
        seeds=2,
        steps_corridor=1500,
        steps_cartpole=1500,
        group_sizes=(4,),
        gammas=(0.9,),
        ablation_seeds=2,
    ),
    "full": SweepScale(
        horizons=(5, 20, 80),
        seeds=5,
        steps_corridor=30_000,
        steps_cartpole=30_000,
        group_sizes=(4, 16),
        gammas=(0.9, 1.0),
        ablation_seeds=3,
    ),
}


@dataclass(frozen=True)
class Run:
    """One training run: a preset of :data:`rltutor.config.ALGORITHMS` plus overrides."""

    study: str
    """"main", "group_size" or "gamma" """
    task: str
    """display name, e.g. "corridor T=100" """
    env: str
    """registered environment name"""
    algo: str
    """"ppo" or "grpo" """
    seed: int
    total_steps: int
    variant: str = "default"
    """what the ablation changed, e.g. "G=4" """
    horizon: int | None = None
    """corridor horizon (None for CartPole)"""
    overrides: dict = field(default_factory=dict, hash=False, compare=False)
    """extra Config fields"""


def plan(scale: str | SweepScale = "quick") -> list[Run]:
    """Every run of a sweep, in a fixed order (main runs first)."""
    s = SCALES[resolve_scale(scale)] if isinstance(scale, str) or scale is None else scale
    runs: list[Run] = []
    for seed in range(1, s.seeds + 1):
        for algo in ("ppo", "grpo"):
            runs.append(Run("main", "CartPole-v1", "CartPole-v1", algo, seed, s.steps_cartpole))
            for T in s.horizons:
                runs.append(Run("main", f"corridor T={T}", "corridor", algo, seed, s.steps_corridor, horizon=T))
    T = max(s.horizons)
    for seed in range(1, s.ablation_seeds + 1):
        for G in s.group_sizes:
            runs.append(
                Run(
                    "group_size",
                    f"corridor T={T}",
                    "corridor",
                    "grpo",
                    seed,
                    s.steps_corridor,
                    variant=f"G={G}",
                    horizon=T,
                    overrides={"group_size": G, "num_groups": 32 // G},
                )
            )
        for g in s.gammas:
            runs.append(
                Run(
                    "gamma",
                    f"corridor T={T}",
                    "corridor",
                    "ppo",
                    seed,
                    s.steps_corridor,
                    variant=f"gamma={g}",
                    horizon=T,
                    overrides={"gamma": g},
                )
            )
    return runs


def run_one(run: Run, max_points: int = 60) -> dict:
    """Train one run; return its description, its learning curve (<= max_points rows) and final score."""
    from rltutor.train import Trainer

    cfg = run_config(run, torch_threads=1)
    t0 = time.perf_counter()
    trainer = Trainer(cfg)
    trainer.train(progress=False)
    eps = pd.DataFrame(trainer.episodes)  # every finished episode: env_steps, return
    if eps.empty:
        raise RuntimeError(f"run {run} finished no episode in {run.total_steps} steps; raise total_steps")
    n_final = max(1, int(math.ceil(FINAL_FRACTION * len(eps))))
    final = float(eps["return"].iloc[-n_final:].mean())
    start = float(eps["return"].iloc[:START_EPISODES].mean())  # the untrained policy's return, about
    # the learning curve: mean return of the episodes finished in each of <= max_points windows
    edges = np.linspace(0, run.total_steps, max_points + 1)
    idx = np.clip(np.searchsorted(edges, eps["env_steps"].to_numpy(), side="left") - 1, 0, max_points - 1)
    curve = eps.groupby(idx)["return"].mean()
    return {
        "run": _info(run),
        "final": final,
        "start": start,
        "seconds": time.perf_counter() - t0,
        "curve": [{"env_steps": float(edges[i + 1]), "episode_return": float(v)} for i, v in curve.items()],
    }


def run_config(run: Run, **extra):
    """A run's :class:`rltutor.config.Config`: its preset, its environment (the corridor's horizon plus any
    ``env_options`` in its overrides, e.g. ``observe_progress``), seed, budget, the other overrides and ``extra``."""
    from rltutor.config import make_config

    over = dict(run.overrides)
    opts = {"horizon": run.horizon} if run.horizon is not None else {}
    opts.update(over.pop("env_options", {}))
    return make_config(
        run.algo, env=run.env, env_options=opts, seed=run.seed, total_steps=run.total_steps, **over, **extra
    )


def _info(run: Run) -> dict:
    """A run's description as its records carry it (the overrides as sorted JSON)."""
    return {**asdict(run), "overrides": json.dumps(run.overrides, sort_keys=True)}


def _run_name(run: Run) -> str:
    """The file name of a stored run: readable fields, then a digest of the whole description (so two runs
    that differ only in their overrides get two files)."""
    info = _info(run)
    keys = ("study", "task", "env", "algo", "seed", "total_steps", "variant", "horizon", "overrides")
    digest = hashlib.sha1(json.dumps([info[k] for k in keys]).encode()).hexdigest()[:10]
    slug = re.sub(r"[^A-Za-z0-9.=]+", "_", f"{run.study}-{run.task}-{run.algo}-{run.variant}-s{run.seed}")
    return f"{slug}-{digest}.json"


def run_sweep(
    scale: str | SweepScale | None = None,
    executor: str = "process",
    workers: int | None = None,
    runs: list[Run] | None = None,
    run_dir: str | Path | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run every run of the plan; return ``(curves, finals)`` DataFrames (one row per point / per run).

    Runs go through :func:`rltutor.experiments.runs.run_each` on ``executor`` (``"process"``: a pool of
    fresh, spawned processes). ``run_dir``: a folder of finished runs, one JSON file each, written as each
    run finishes; runs found there are read back, not rerun (an interrupted sweep resumes).
    """
    runs = runs if runs is not None else plan(scale)
    store = RunStore(run_dir, fmt="json") if run_dir is not None else None
    names = [_run_name(r) for r in runs] if store is not None else None
    results = run_each(run_one, runs, workers, executor=executor, store=store, names=names, context="spawn")
    curves, finals = [], []
    for res in results:
        r = res["run"]
        finals.append({**r, "final": res["final"], "start": res.get("start", float("nan")), "seconds": res["seconds"]})
        curves.extend({**r, **pt} for pt in res["curve"])
    finals = pd.DataFrame(finals)
    curves = pd.DataFrame(curves)
    for df in (finals, curves):
        df["optimal"] = df["env"].map(OPTIMAL)
    finals["final_norm"] = finals["final"] / finals["optimal"]
    finals["start_norm"] = finals["start"] / finals["optimal"]
    curves["return_norm"] = curves["episode_return"] / curves["optimal"]
    return curves, finals


def curves_on_grid(curves: pd.DataFrame) -> pd.DataFrame:
    """Each run's curve on the common grid of its task: windows where a run finished no episode take the
    run's previous value (forward fill); points before its first episode are dropped, and so are points
    that fewer than 2 seeds reach (a confidence band needs 2)."""
    run_keys = ["study", "task", "algo", "variant", "seed"]
    out = []
    for _, d in curves.groupby(run_keys[:-1], sort=False):
        grid = np.sort(d["env_steps"].unique())
        for _, r in d.groupby("seed"):
            r = r.set_index("env_steps").reindex(grid)
            r[["episode_return", "return_norm"]] = r[["episode_return", "return_norm"]].ffill()
            r = (
                r.ffill().bfill().assign(episode_return=r["episode_return"], return_norm=r["return_norm"])
            )  # ids filled, values not
            out.append(r.dropna(subset=["return_norm"]).reset_index())
    on = pd.concat(out, ignore_index=True)
    on["seed"] = on["seed"].astype(int)
    n = on.groupby(run_keys[:-1] + ["env_steps"])["seed"].transform("count")
    return on[n >= 2].reset_index(drop=True)


def results_table(finals: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Mean final return (normalized by the optimum) and its confidence interval over seeds.

    The interval is the t-interval mean +- t s / sqrt(n), cut to [0, 1], the range of a fraction of
    the optimum (with few seeds the raw interval can run past either end; ``ci_cut`` says where it did).
    """
    keys = ["study", "task", "horizon", "algo", "variant"]
    rows = []
    for k, d in finals.groupby(keys, dropna=False, sort=False):
        x = d["final_norm"].to_numpy()
        n = len(x)
        half = t_quantile(n, level) * x.std(ddof=1) / math.sqrt(n) if n > 1 else float("nan")
        lo, hi = x.mean() - half, x.mean() + half
        rows.append(
            {
                **dict(zip(keys, k, strict=True)),
                "mean": x.mean(),
                "ci_lo": max(0.0, lo),
                "ci_hi": min(1.0, hi),
                "ci_cut": bool(lo < 0 or hi > 1),
                "std": x.std(ddof=1) if n > 1 else float("nan"),
                "seeds": n,
                "raw_mean": d["final"].mean(),
            }
        )
    return pd.DataFrame(rows)


READINGS = ("reproduced", "not reproduced", "not decided")
"""What a finding's verdict says about the paper's finding (:func:`verdicts`)."""


def optimizer_steps(run: Run) -> int | None:
    """The gradient steps a run takes in its budget: updates x epochs x minibatches, where an update collects
    num_envs x num_steps env steps (PPO's segments) or group_size x num_groups whole episodes of T steps
    (GRPO on the corridor, whose episodes all last T); None where episodes vary in length (CartPole). The
    trainer updates until the budget is reached, so updates = ceil(total_steps / steps per update)."""
    cfg = run_config(run)
    if cfg.rollout == "segments":
        per_update = cfg.num_envs * cfg.num_steps
    elif run.horizon is not None:
        per_update = cfg.group_size * cfg.num_groups * run.horizon
    else:
        return None
    return math.ceil(run.total_steps / per_update) * cfg.epochs * cfg.minibatches


def slope_arms(horizons, ppo, grpo) -> list[tuple[float, pd.Series]]:
    """The contrast arms of the least-squares slope over log2 T of (PPO - GRPO), per doubling of T: at each
    horizon T, PPO's scores ``ppo(T)`` with weight w_T and GRPO's ``grpo(T)`` with -w_T, where
    w_T = (log2 T - mean) / sum (log2 T - mean)^2."""
    lg = np.log2(np.array(horizons, dtype=float))
    w = (lg - lg.mean()) / ((lg - lg.mean()) ** 2).sum()
    arms = []
    for T, wT in zip(horizons, w, strict=True):
        arms += [(float(wT), ppo(T)), (-float(wT), grpo(T))]
    return arms


def verdicts(finals: pd.DataFrame) -> pd.DataFrame:
    """The paper's findings as tests on our final scores, with the verdicts of :mod:`rltutor.experiments.stats`:
    each finding is a contrast of final scores (normalized, over seeds; the arms are separate runs, so the
    interval is Welch's), Holm-corrected across the findings (:func:`~rltutor.experiments.stats.verdict_table`),
    plus ``finding`` (the paper's claim) and ``reading`` (one of :data:`READINGS`):

    * "PPO ahead", "grows", "smaller groups better", "a moderate discount best": reproduced where the
      contrast is confirmed, not reproduced where it is refuted, else not decided;
    * "roughly tied" (CartPole): these tests named no smallest effect of interest before their runs, so a
      tie cannot be shown (that needs an equivalence test at a stated delta); a difference found either way
      is "not reproduced", none found is "not decided", never "reproduced";
    * "PPO's lead grows with the horizon": the least-squares slope over log2 T of PPO's mean minus GRPO's at
      each stored horizon, per doubling of T, with its interval (not two point estimates compared).
    """
    from rltutor.experiments.stats import verdict_row, verdict_table

    main = finals[finals["study"] == "main"]

    def scores(task, algo, study="main", variant="default"):
        d = finals[
            (finals["study"] == study)
            & (finals["task"] == task)
            & (finals["algo"] == algo)
            & (finals["variant"] == variant)
        ]
        return d["final_norm"].reset_index(drop=True)

    metric = "final return (fraction of optimum)"
    rows, findings = [], []

    def add(finding, name, arms, kind="ahead"):
        rows.append(verdict_row(name, metric, arms))
        findings.append((finding, kind))

    if "CartPole-v1" in set(main["task"]):
        add(
            "short task with early termination (CartPole): GRPO and PPO roughly tied",
            "CartPole: PPO - GRPO",
            [(1.0, scores("CartPole-v1", "ppo")), (-1.0, scores("CartPole-v1", "grpo"))],
            kind="tie",
        )
    hs = sorted(int(h) for h in main["horizon"].dropna().unique())
    if hs:
        Tmax = hs[-1]
        add(
            f"long task without early termination (corridor T={Tmax}): PPO ahead of GRPO",
            f"corridor T={Tmax}: PPO - GRPO",
            [(1.0, scores(f"corridor T={Tmax}", "ppo")), (-1.0, scores(f"corridor T={Tmax}", "grpo"))],
        )
    if len(hs) >= 2:
        add(
            "PPO's lead over GRPO grows with the horizon",
            f"slope over log2 T of PPO - GRPO (T = {', '.join(map(str, hs))}), per doubling of T",
            slope_arms(hs, lambda T: scores(f"corridor T={T}", "ppo"), lambda T: scores(f"corridor T={T}", "grpo")),
        )

    def ablation(study, cast, algo, main_value):
        """Final scores by the value an ablation study varies, the main run's own value added."""
        d = finals[finals["study"] == study]
        if d.empty:
            return {}
        by = {cast(v.split("=")[1]): g["final_norm"].reset_index(drop=True) for v, g in d.groupby("variant")}
        base = scores(f"corridor T={int(d['horizon'].iloc[0])}", algo)
        if len(base):
            by.setdefault(main_value, base)
        return by

    by_G = ablation("group_size", int, "grpo", 8)
    if by_G:
        Gs = sorted(by_G)
        add(
            "smaller groups do better (GRPO, same-seed groups, episodes per update fixed; an analogue of the "
            "paper's batch-grouping finding, not its experiment)",
            f"GRPO G={Gs[0]} - G={Gs[-1]}",
            [(1.0, by_G[Gs[0]]), (-1.0, by_G[Gs[-1]])],
        )
    by_g = ablation("gamma", float, "ppo", 0.99)
    if by_g:
        low = min(by_g)
        for g in sorted(by_g):
            if g != low:
                add(
                    f"PPO analogue of the paper's discount finding: without early termination a moderate "
                    f"discount (gamma = {low}) is best",
                    f"PPO gamma={low} - gamma={g}",
                    [(1.0, by_g[low]), (-1.0, by_g[g])],
                )
    if not rows:
        return pd.DataFrame()
    table = verdict_table(rows)
    table.insert(0, "finding", [f for f, _ in findings])

    def reading(v, kind):
        if kind == "tie":
            return "not decided" if v == "undecided" else "not reproduced"
        return {"confirmed": "reproduced", "refuted": "not reproduced"}.get(v, "not decided")

    table["reading"] = [reading(v, k) for v, (_, k) in zip(table["verdict"], findings, strict=True)]
    return table


CONFOUNDS_HORIZONS = (5, 20, 80)
CONFOUNDS_DELTA = 0.05
"""The smallest effect of interest of the confounds study at one horizon, in fractions of the optimum: 4 of
T = 80 cues. A lead smaller than that would not pay for a second network and its tuning."""
CONFOUNDS_SLOPE_DELTA = CONFOUNDS_DELTA / 4
"""The same for a slope per doubling of T: 0.05 spread over the four doublings from T = 5 to T = 80."""
MATCHED = {"num_envs": 32, "epochs": 1, "minibatches": 4, "lr": 1e-3}
"""PPO on GRPO's schedule (with ``num_steps = T``): 32 whole episodes of T steps per update, one epoch in 4
minibatches at GRPO's learning rate, so the batch and the optimizer steps equal GRPO's; PPO keeps its own
critic, GAE (gamma 0.99, lambda 0.95), entropy bonus and advantage whitening."""


def plan_confounds(seeds, steps: int = 30_000, horizons=CONFOUNDS_HORIZONS) -> list[Run]:
    """The runs of the confounds study (chapter 05, restated): on the corridor at each horizon T, the PPO and
    GRPO presets (the same env steps; PPO then takes about 940 optimizer steps at every T, GRPO 752, 188 and
    48 at T = 5, 20, 80), PPO on GRPO's schedule (variant ``"matched"``, :data:`MATCHED`), and at the longest T
    both presets with the progress hidden from the observation (variant ``"blind"``, ``observe_progress=False``:
    the critic then cannot tell a right step from a wrong one until the end)."""
    runs = []
    Tmax = max(horizons)
    for seed in seeds:
        for T in horizons:
            task = f"corridor T={T}"
            for algo in ("ppo", "grpo"):
                runs.append(Run("confounds", task, "corridor", algo, seed, steps, horizon=T))
            runs.append(
                Run("confounds", task, "corridor", "ppo", seed, steps, "matched", T, {**MATCHED, "num_steps": T})
            )
        for algo in ("ppo", "grpo"):
            runs.append(
                Run(
                    "confounds",
                    f"corridor T={Tmax}",
                    "corridor",
                    algo,
                    seed,
                    steps,
                    "blind",
                    Tmax,
                    {"env_options": {"observe_progress": False}},
                )
            )
    return runs


def _confounds_terms(finals: pd.DataFrame) -> list[tuple[str, float, list[tuple[float, pd.Series]]]]:
    """The six pre-stated tests of the confounds study as (name, delta, arms) on final scores."""
    d = finals[finals["study"] == "confounds"]

    def x(T, algo, variant="default"):
        m = (d["horizon"] == T) & (d["algo"] == algo) & (d["variant"] == variant)
        return d.loc[m, "final_norm"].reset_index(drop=True)

    hs = sorted(int(h) for h in d["horizon"].dropna().unique())
    Tmax = hs[-1]

    def slope(ppo_variant):
        return slope_arms(hs, lambda T: x(T, "ppo", ppo_variant), lambda T: x(T, "grpo"))

    Ts = ", ".join(map(str, hs))
    lead = [(1.0, x(Tmax, "ppo")), (-1.0, x(Tmax, "grpo"))]
    blind = [(1.0, x(Tmax, "ppo", "blind")), (-1.0, x(Tmax, "grpo", "blind"))]
    return [
        (f"T={Tmax}, equal env steps: PPO - GRPO", CONFOUNDS_DELTA, lead),
        (
            f"equal env steps: slope over log2 T (T = {Ts}) of PPO - GRPO, per doubling",
            CONFOUNDS_SLOPE_DELTA,
            slope("default"),
        ),
        (
            f"T={Tmax}, equal optimizer steps: matched PPO - GRPO",
            CONFOUNDS_DELTA,
            [(1.0, x(Tmax, "ppo", "matched")), (-1.0, x(Tmax, "grpo"))],
        ),
        (
            f"equal optimizer steps: slope over log2 T (T = {Ts}) of matched PPO - GRPO, per doubling",
            CONFOUNDS_SLOPE_DELTA,
            slope("matched"),
        ),
        (f"T={Tmax}, progress hidden: PPO - GRPO", CONFOUNDS_DELTA, blind),
        (
            f"T={Tmax}: (PPO - GRPO) seen - (PPO - GRPO) progress hidden",
            CONFOUNDS_DELTA,
            lead + [(-wt, arm) for wt, arm in blind],
        ),
    ]


def confounds_verdicts(finals: pd.DataFrame) -> pd.DataFrame:
    """The confounds study's pre-stated family of six tests (see the module docstring), each a Welch contrast of
    final scores (the arms are separate runs, nothing shared), with its delta, decided together with Holm's
    correction (:func:`rltutor.experiments.stats.verdict_table`)."""
    from rltutor.experiments.stats import verdict_row, verdict_table

    metric = "final return (fraction of optimum)"
    return verdict_table([verdict_row(n, metric, arms, delta) for n, delta, arms in _confounds_terms(finals)])


def confounds_power(pilot: pd.DataFrame, tests: int = 6) -> pd.DataFrame:
    """The power analysis from a pilot (never counted): per test, the pilot's standard error times the square
    root of its seeds per arm (the spread the contrast would have with one seed per arm), and the seeds per arm
    that find an effect of delta with 80% power at alpha / tests (:func:`rltutor.experiments.stats.seeds_for_power`,
    conservative: Holm's first step, n - 1 degrees of freedom)."""
    from rltutor.experiments.stats import contrast_stats, seeds_for_power

    rows = []
    for name, delta, arms in _confounds_terms(pilot):
        est, se, _ = contrast_stats(arms)
        n_p = min(len(a) for _, a in arms)
        sd = se * math.sqrt(n_p)
        rows.append(
            {
                "test": name,
                "delta": delta,
                "pilot_estimate": est,
                "pilot_seeds": n_p,
                "sd_one_seed": sd,
                "seeds_needed": seeds_for_power(sd, delta, tests=tests),
            }
        )
    return pd.DataFrame(rows)


def confounds_gains(finals: pd.DataFrame) -> pd.DataFrame:
    """Each arm's training gain in the confounds study: per run, its final score minus its start (the mean of
    its first :data:`START_EPISODES` episodes, fractions of the optimum), per arm the mean over seeds with its
    95% interval and ``learned`` (:func:`rltutor.experiments.stats.training_gains` on two points per run)."""
    from rltutor.experiments.stats import training_gains

    d = finals[finals["study"] == "confounds"]
    keys = ["horizon", "algo", "variant", "seed"]
    two = pd.concat([d[keys].assign(update=0, score=d["start_norm"]), d[keys].assign(update=1, score=d["final_norm"])])
    return training_gains(two, ["horizon", "algo", "variant"], "score", last=1, first=1)


def _markdown(table: pd.DataFrame) -> str:
    lines = [
        "| study | task | algorithm | variant | final return (fraction of optimum) | 95% CI | seeds |",
        "|---|---|---|---|---:|---|---:|",
    ]
    for _, r in table.iterrows():
        lines.append(
            f"| {r['study']} | {r['task']} | {r['algo']} | {r['variant']} | {r['mean']:.3f} | "
            f"[{r['ci_lo']:.3f}, {r['ci_hi']:.3f}] | {r['seeds']} |"
        )
    return "\n".join(lines) + "\n"


def write_outputs(out: str | Path, curves: pd.DataFrame, finals: pd.DataFrame, meta: dict) -> Path:
    """Write curves.csv, finals.csv, table.md, verdicts.csv (:func:`verdicts`, or :func:`confounds_verdicts` and
    gains.csv, :func:`confounds_gains`, for the confounds study) and meta.json into ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    curves.round(5).to_csv(out / "curves.csv", index=False)
    finals.round(5).to_csv(out / "finals.csv", index=False)
    (out / "table.md").write_text(_markdown(results_table(finals)))
    confounds = set(finals["study"]) == {"confounds"}
    (confounds_verdicts if confounds else verdicts)(finals).round(5).to_csv(out / "verdicts.csv", index=False)
    if confounds:
        confounds_gains(finals).round(5).to_csv(out / "gains.csv", index=False)
    (out / "meta.json").write_text(json.dumps(meta, indent=1))
    return out


def load_outputs(path: str | Path) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Read ``(curves, finals, meta)`` written by :func:`write_outputs`."""
    path = Path(path)
    return (
        pd.read_csv(path / "curves.csv"),
        pd.read_csv(path / "finals.csv"),
        json.loads((path / "meta.json").read_text()),
    )


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m rltutor.experiments.sweep", description=__doc__.splitlines()[0])
    p.add_argument("--scale", choices=("quick", "full"), default=None, help="sweep size (default: RLTUTOR_QUICK)")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="process",
        help="process pool (default), a Ray cluster, or serial in this process",
    )
    p.add_argument("--workers", type=int, default=None, help="processes for --executor process (default: all CPUs)")
    p.add_argument(
        "--study",
        choices=("main", "confounds"),
        default="main",
        help="main: the first sweep (CartPole, corridor, ablations); confounds: chapter 05's restated test",
    )
    p.add_argument("--seeds", type=int, nargs="+", default=None, help="confounds: the seeds to run (default 1 2 3)")
    a = p.parse_args(argv)
    scale = resolve_scale(a.scale)
    if a.study == "confounds":
        seeds = a.seeds or [1, 2, 3]
        steps = 30_000 if scale == "full" else SCALES[scale].steps_corridor
        runs = plan_confounds(seeds, steps)
        plan_meta = {"study": "confounds", "seeds": seeds, "steps": steps, "horizons": list(CONFOUNDS_HORIZONS)}
    else:
        if a.seeds is not None:
            p.error("--seeds applies to --study confounds; the main sweep's seeds come from its --scale")
        runs = plan(scale)
        plan_meta = asdict(SCALES[scale])
    print(f"{len(runs)} runs ({scale}) with executor={a.executor}", flush=True)
    t0 = time.perf_counter()
    Path(a.out).mkdir(parents=True, exist_ok=True)
    run_dir = Path(a.out) / "runs"
    n_stored = sum(RunStore(run_dir, fmt="json").has(_run_name(r)) for r in runs)
    curves, finals = run_sweep(runs=runs, executor=a.executor, workers=a.workers, run_dir=run_dir)
    import torch

    old = Path(a.out) / "meta.json"
    old = json.loads(old.read_text()) if old.exists() and n_stored else {}
    first_wall = old.get("first_call_wall_seconds", old.get("wall_seconds"))
    meta = {
        "command": "python -m rltutor.experiments.sweep " + " ".join(argv if argv is not None else sys.argv[1:]),
        "scale": scale,
        "plan": plan_meta,
        "runs": len(runs),
        "wall_seconds_this_call": round(time.perf_counter() - t0, 1),
        "first_call_wall_seconds": first_wall if first_wall is not None else round(time.perf_counter() - t0, 1),
        "runs_already_stored": n_stored,
        "cpu_seconds": round(float(finals["seconds"].sum()), 1),
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
    }
    out = write_outputs(a.out, curves, finals, meta)
    print((out / "table.md").read_text())
    from rltutor.experiments.stats import describe

    if a.study == "confounds":
        from rltutor.experiments.stats import describe_gains

        print("\n".join(describe_gains(confounds_gains(finals), "final return (fraction of optimum)")))
        print("\n".join(describe(confounds_verdicts(finals))))
    else:
        v = verdicts(finals)
        for line, finding, reading in zip(describe(v), v["finding"], v["reading"], strict=True):
            print(f"[{reading}] {finding}: {line}")
    print(f"wrote {out} in {meta['wall_seconds_this_call']} s ({n_stored} runs read back from {run_dir})")


if __name__ == "__main__":
    main()
