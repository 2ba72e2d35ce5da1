"""Canned experiments of the horizon chapters: *Variance vs horizon* (04) and *Long horizons in practice* (05).

* :func:`snr_vs_horizon`: the measured SNR / cosine of each estimator at each horizon, with the closed
  forms of :func:`rltutor.experiments.variance.snr_theory` beside them (chapter 04).
* :func:`long_horizon_results`: the GRPO-vs-PPO sweep of :mod:`rltutor.experiments.sweep` (chapter 05): run live
  at the given scale, or read from a folder written by ``python -m rltutor.experiments.sweep``.

Both return plain DataFrames; plotting never re-runs them.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rltutor.datafiles import DATA_DIR
from rltutor.experiments import sweep
from rltutor.experiments import variance as an
from rltutor.utils import resolve_scale

__all__ = ["snr_vs_horizon", "long_horizon_results", "SWEEP_DATA", "CONFOUNDS_DATA", "CONFOUNDS_PILOT"]

SWEEP_DATA = DATA_DIR / "horizon" / "sweep"
"""Where the results of ``python -m rltutor.experiments.sweep --scale full`` are kept (package data,
:mod:`rltutor.datafiles`)."""
CONFOUNDS_DATA = DATA_DIR / "horizon" / "confounds"
"""The confounds study's main runs (``python -m rltutor.experiments.sweep --study confounds``, chapter 05 restated)."""
CONFOUNDS_PILOT = DATA_DIR / "horizon" / "confounds_pilot"
"""Its pilot (seeds 101-103), read only by the power analysis, never counted in a verdict."""


def snr_vs_horizon(
    task: str = "corridor",
    scale: str | None = None,
    seed: int = 0,
    horizons=(1, 2, 4, 8, 16, 32, 64, 128, 256),
    G: int = 8,
    n_groups: int = 4,
    critic_noise: float = 1.0,
) -> pd.DataFrame:
    """Measured metrics (lambda = 0, gamma = 1) at each horizon, one row per (T, estimator), plus a
    ``snr_theory`` column for the estimators with a closed form (rloo, gae, gae_critic; NaN otherwise)."""
    n_batches = 64 if resolve_scale(scale) == "quick" else 512
    df = an.horizon_curve(
        horizons,
        task,
        G=G,
        n_groups=n_groups,
        lam=0.0,
        critic_noise=critic_noise,
        n_batches=n_batches,
        seed=seed,
        estimators=("reinforce", "grpo", "rloo", "gae", "gae_critic"),
    )
    B = G * n_groups

    def theory(row):
        t = an.make_chain(task, T=int(row["T"]))
        if t.reward not in ("dense", "terminal"):
            return float("nan")
        if row["name"] == "rloo":
            return an.snr_theory(t, "rloo", batch_size=B, G=G)
        if row["name"] == "gae":
            return an.snr_theory(t, "gae_td", batch_size=B)
        if row["name"] == "gae_critic":
            return an.snr_theory(t, "gae_td", batch_size=B, critic_noise=critic_noise)
        return float("nan")

    df["snr_theory"] = df.apply(theory, axis=1)
    return df


def long_horizon_results(
    scale: str | None = None, data: str | Path | None = None, executor: str = "serial", workers: int | None = None
):
    """``(curves, finals, meta)`` of the GRPO-vs-PPO sweep.

    With ``data`` (a folder written by ``python -m rltutor.experiments.sweep``), read it; otherwise run the sweep
    at ``scale`` now (quick: about 20 s on one CPU core).
    """
    if data is not None:
        return sweep.load_outputs(data)
    scale = resolve_scale(scale)
    curves, finals = sweep.run_sweep(scale, executor=executor, workers=workers)
    return (
        curves,
        finals,
        {"command": f"rltutor.experiments.horizon.long_horizon_results(scale={scale!r})", "scale": scale},
    )
