"""Shared plotting style for the book: labelled axes with units, mean curves with confidence bands.

Every chapter's figures go through these helpers so that they look alike and carry the same
information: both axes labelled (with units or "(dimensionless)" in brackets), a legend naming each
curve, and, where a curve averages several seeds, a shaded 95% confidence band for the mean.

Plotting never runs experiments: each function takes the plain records (DataFrames) that the
experiments in :mod:`rltutor.experiments` return.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from rltutor.utils import t_quantile

__all__ = ["apply_style", "label_axes", "panel_grid", "mean_ci", "plot_band", "line_with_band", "PANEL_WIDTH"]

PANEL_WIDTH = 9.0
"""Width (inches) of a multi-panel figure. The book's text column is about 750 px wide at a 1280 px
window, so a figure drawn at 100 dpi is shown at about 80% of its size and 11 pt labels stay about
12 px high; a 16-inch row of four panels would be shrunk to under half, labels to 6-7 px."""


def apply_style() -> None:
    """Matplotlib defaults for the book: readable sizes, light grid, no top/right spines."""
    plt.rcParams.update(
        {
            "figure.figsize": (7.0, 4.0),
            "figure.dpi": 100,
            "savefig.dpi": 120,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "font.size": 11,
            "axes.titlesize": 12,
            "axes.labelsize": 11,
            "xtick.labelsize": 10,
            "ytick.labelsize": 10,
            "legend.fontsize": 10,
            "legend.frameon": False,
        }
    )


def panel_grid(n: int, ncols: int = 2, *, panel_height: float = 3.3, width: float = PANEL_WIDTH, **subplot_kw):
    """A figure of ``n`` panels in rows of ``ncols``, as wide as the book's text column can show.

    Returns ``(fig, axes)`` with ``axes`` a flat list of the ``n`` Axes, row by row; cells of the
    last row that no panel uses are removed. More panels make more rows, never a wider figure (a
    row of four panels printed at the column's width has unreadable labels). ``subplot_kw`` goes to
    :func:`matplotlib.pyplot.subplots` (``sharex``, ``sharey``, ``layout``...).
    """
    if n < 1 or ncols < 1:
        raise ValueError(f"panel_grid needs n >= 1 and ncols >= 1, got n={n}, ncols={ncols}")
    ncols = min(ncols, n)
    nrows = -(-n // ncols)
    fig, grid = plt.subplots(nrows, ncols, figsize=(width, panel_height * nrows), squeeze=False, **subplot_kw)
    cells = list(grid.ravel())
    for ax in cells[n:]:
        ax.remove()
    return fig, cells[:n]


def label_axes(ax, xlabel: str, ylabel: str, title: str | None = None):
    """Label both axes (and optionally the title); empty labels raise ValueError.

    Put the unit in brackets, e.g. ``"training step (batches)"``, ``"pass rate (fraction)"``.
    """
    for name, value in (("xlabel", xlabel), ("ylabel", ylabel)):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(
                f"{name} must be a non-empty string naming the quantity and its unit, "
                f"got {value!r}; e.g. 'training step (batches)'"
            )
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    return ax


def mean_ci(df: pd.DataFrame, x: str, y: str, by: str | None = None, level: float = 0.95) -> pd.DataFrame:
    """Mean of ``y`` at each ``x`` (per ``by`` group) with a confidence interval for the mean.

    Returns a DataFrame with columns ``[by,] x, mean, lo, hi, n``; the interval is
    mean +- t * std / sqrt(n) over the rows (e.g. seeds) sharing ``x``.
    """
    for col in [x, y] + ([by] if by else []):
        if col not in df.columns:
            raise ValueError(f"column {col!r} is not in the DataFrame; columns are {list(df.columns)}")
    keys = [by, x] if by else [x]
    g = df.groupby(keys, sort=True)[y].agg(["mean", "std", "count"]).reset_index()
    n = g["count"].to_numpy()
    if (n < 2).any():
        raise ValueError(
            f"some ({', '.join(keys)}) cells have a single row; a confidence band needs "
            "at least 2 runs (seeds) per point"
        )
    half = np.array([t_quantile(int(k), level) for k in n]) * g["std"].to_numpy() / np.sqrt(n)
    g["lo"] = g["mean"] - half
    g["hi"] = g["mean"] + half
    return g.rename(columns={"count": "n"}).drop(columns="std")


def plot_band(ax, x, mean, lo, hi, label: str | None = None, color=None, **line_kw):
    """A mean line with a shaded band between ``lo`` and ``hi``; returns the line."""
    (line,) = ax.plot(x, mean, label=label, color=color, **line_kw)
    ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.2, linewidth=0)
    return line


def line_with_band(
    ax, df: pd.DataFrame, x: str, y: str, by: str | None = None, level: float = 0.95, order=None, **line_kw
):
    """Plot the mean of ``y`` against ``x`` with its confidence band, one curve per ``by`` value."""
    stats = mean_ci(df, x, y, by=by, level=level)
    if by is None:
        plot_band(ax, stats[x], stats["mean"], stats["lo"], stats["hi"], **line_kw)
        return stats
    names = list(order) if order is not None else list(dict.fromkeys(df[by]))
    for name in names:
        s = stats[stats[by] == name]
        plot_band(ax, s[x], s["mean"], s["lo"], s["hi"], label=str(name), **line_kw)
    return stats
