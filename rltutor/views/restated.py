"""The restated tests of chapters 07-10, shown on the page: what was stated, what the pilot asked for, whether
each arm learned, the verdicts, and the curves behind them.

Everything shown comes from :func:`rltutor.experiments.lm.restated_report`, which reads the stored runs; nothing
here trains or tests.
"""

from __future__ import annotations

import pandas as pd

from rltutor.experiments.stats import describe, describe_gains
from rltutor.views.plots import label_axes, legend_beside, line_with_band, moving_mean, panel_grid
from rltutor.views.tables import sentences

__all__ = ["show", "curves"]


def show(report: dict, digits: int = 3) -> None:
    """Display a restated experiment's report, in the order it should be read: the dated pre-statement and the
    commands that made the stored files; the pilot's power analysis; each arm's training gain in reward (an arm
    that did not learn is marked, and its contrasts are not read); each arm's change in the other metrics; the
    verdicts, Holm-corrected across the family, a row with an arm that did not learn marked NOT READ."""
    from IPython.display import display

    print(report["statement"], "\n")
    for name, command in report["commands"].items():
        print(f"{name}: made by {command}")
    power = report["power"]
    print("\npower analysis from the pilot (never counted in a verdict): the sd over the pilot's seeds of each")
    print(f"paired contrast and the seeds 80% power at its delta needs; the largest is {power['n'].max()}")
    display(power.round(digits))
    gains = report["gains"]
    display(sentences(describe_gains(gains[gains["metric"] == "reward"].drop(columns="metric"), "reward", digits)))
    others = gains[gains["metric"] != "reward"]
    if len(others):
        print("the other metrics, first 5 -> last 20 updates (mean over seeds, change with its 95% interval):")
        cols = [c for c in others.columns if c not in ("learned", "seeds")]
        display(others[cols].rename(columns={"gain": "change", "gain_low": "low", "gain_high": "high"}).round(digits))
    verdicts = report["verdicts"]
    lines = describe(verdicts, digits)
    marked = [
        line if ok else "NOT READ (an arm did not learn): " + line
        for line, ok in zip(lines, verdicts["interpretable"], strict=True)
    ]
    display(sentences(marked))


def _bounds(label: str):
    """The range a metric can take, read from its axis label: a fraction [0, 1], a length or count >= 0."""
    if "(fraction" in label or label.startswith("reward"):
        return (0.0, 1.0)
    if any(unit in label for unit in ("[tokens", "[nats", "per prompt")):
        return (0.0, None)
    return None


def curves(runs: pd.DataFrame, metrics: dict, by: str = "algo", facet: list[str] | None = None, window: int = 5):
    """Each metric of ``metrics`` ({column: axis label with its unit}) against the update, mean over seeds with
    its 95% band, one curve per ``by`` value, each run smoothed by a ``window``-update moving mean; with
    ``facet`` (columns) one metric, one panel per value of those columns. Returns the figure."""
    keys = [c for c in (*(facet or []), by, "seed") if c in runs.columns]
    smooth = runs.copy()
    for m in metrics:
        smooth[m] = moving_mean(runs, keys, m, window)
    if facet:
        if len(metrics) != 1:
            raise ValueError(f"with facet={facet!r} curves draws one metric, got {list(metrics)}: pass one")
        ((metric, ylabel),) = metrics.items()
        groups = list(smooth.groupby(facet, sort=True))
        panels = [
            (metric, ylabel, ", ".join(f"{c} = {v}" for c, v in zip(facet, key, strict=True)), d) for key, d in groups
        ]
    else:
        panels = [(m, label, None, smooth) for m, label in metrics.items()]
    fig, axes = panel_grid(len(panels), panel_height=3.4)
    seeds = runs["seed"].nunique()
    for ax, (metric, ylabel, title, d) in zip(axes, panels, strict=True):
        line_with_band(ax, d, "update", metric, by=by, bounds=_bounds(ylabel))
        label_axes(ax, "update", f"{ylabel}, {window}-update mean", title or f"mean and 95% band, {seeds} seeds")
    legend_beside(axes[-1])
    fig.tight_layout()
    return fig
