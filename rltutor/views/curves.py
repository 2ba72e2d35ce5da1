"""The learning curve of one training run, as ``rltutor train`` saves it (``learning_curve.png``).

:func:`learning_curve` draws a run's history (one row per update: the trainer's metrics) with the book's
style (:mod:`rltutor.views.plots`): the episode return against environment steps, and, for a toolshell run
(its history holds ``solve_rate`` and ``hack_rate``), a second panel with the honest solve rate and the hack
rate. The return alone can look like success where the agent cheats: a run that hacks every episode has a
return of about 0.8, a hack rate of 1 and an honest solve rate of 0. :func:`outcome` says the same in words,
for the command line's final line; :func:`save_learning_curve` writes the PNG atomically.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pandas as pd

from rltutor.utils import write_atomic
from rltutor.views.plots import FRACTION, label_axes, legend_beside, panel_grid

__all__ = ["RATES", "has_rates", "learning_curve", "save_learning_curve", "outcome", "token_agent_curve"]

RATES = {"solve_rate": "honest solve rate", "hack_rate": "hack rate"}
"""The per-update rates a toolshell run's history holds (the collector's metrics), and their labels."""


def has_rates(history: pd.DataFrame) -> bool:
    """Whether ``history`` is a toolshell run's (it holds every column of :data:`RATES`)."""
    return all(c in history.columns for c in RATES)


def learning_curve(history: pd.DataFrame, title: str = ""):
    """The figure of a run's learning curve; returns ``(fig, axes)``.

    ``history``: one row per update with ``env_steps``, ``episode_return`` (mean return of the episodes
    finished in the update) and ``return_last10``; a toolshell run's also ``solve_rate`` and ``hack_rate``,
    drawn in a second panel (fractions of the update's episodes)."""
    for col in ("env_steps", "episode_return", "return_last10"):
        if col not in history.columns:
            raise ValueError(f"a learning curve needs column {col!r}; the history has {list(history.columns)}")
    rates = has_rates(history)
    fig, axes = panel_grid(2 if rates else 1, ncols=1, panel_height=3.0, sharex=True)
    ax = axes[0]
    x = history["env_steps"]
    ax.plot(x, history["episode_return"], alpha=0.35, label="mean return in the update")
    ax.plot(x, history["return_last10"], label="mean of the last 10 episodes")
    label_axes(ax, "environment steps (count)", "episode return (reward)")
    legend_beside(ax)
    if rates:
        ax.set_xlabel("")  # the panel below, on the same x axis, carries it
        rx = axes[1]
        for col, label in RATES.items():
            rx.plot(x, history[col], marker=".", label=label)
        rx.set_ylim(FRACTION[0] - 0.05, FRACTION[1] + 0.05)
        label_axes(rx, "environment steps (count)", "rate in the update (fraction)")
        legend_beside(rx)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig, axes


def save_learning_curve(history: pd.DataFrame, path: str, title: str = "") -> None:
    """Save :func:`learning_curve` as a PNG at ``path`` (atomically: a failed write keeps the old file)."""
    fig, _ = learning_curve(history, title)
    try:
        write_atomic(path, lambda tmp: fig.savefig(tmp, dpi=100, format="png", bbox_inches="tight"))
    finally:
        plt.close(fig)


def _num(x: float) -> str:
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3g}"


def outcome(history: pd.DataFrame) -> str:
    """How a run ended, in words: the mean return of the last 10 episodes and, for a toolshell run, the
    honest solve rate and the hack rate of the last update (so a run that cheats does not read as one that
    solves)."""
    last = history["return_last10"].iloc[-1] if len(history) else float("nan")
    text = f"mean return of the last 10 episodes {_num(last)}"
    if has_rates(history) and len(history):
        row = history.iloc[-1]
        text += "; in the last update " + ", ".join(f"{label} {_num(row[c])}" for c, label in RATES.items())
    return text


def token_agent_curve(df: pd.DataFrame, ax=None):
    """The token agent's warm start (:mod:`rltutor.experiments.token_agent`'s stored records): solve rate
    (greedy solid, sampled dashed) against the warm start's CPU seconds, one colour per hop count; the dotted
    lines mark the curriculum's stage boundaries."""
    ax = plt.subplots(figsize=(7.5, 4))[1] if ax is None else ax
    for (h, mode), d in df.groupby(["eval_hops", "mode"]):
        d = d.sort_values("step")
        style = "o-" if mode == "greedy" else "s--"
        ax.plot(d["cpu_s"], d["rate"], style, color=f"C{h - 1}", label=f"{h} hop{'s' * (h > 1)}, {mode}")
    for stage, d in df.groupby("stage"):
        if stage > 0:
            ax.axvline(d["cpu_s"].max(), color="k", ls=":", lw=0.8)
    n = int(df["n"].iloc[0])
    label_axes(
        ax,
        "warm-start CPU seconds (training steps only)",
        f"honest solve rate ({n} tasks each)",
        "Token agent: curriculum warm start",
    )
    ax.set_ylim(-0.03, 1.03)  # a rate, with room for the markers at 0 and 1
    ax.legend(fontsize=8, ncol=2)
    return ax
