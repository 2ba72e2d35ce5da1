"""Shared plotting style for the book: labelled axes with units, mean curves with confidence bands.

Every chapter's figures go through these helpers so that they look alike and carry the same
information: both axes labelled (with units or "(dimensionless)" in brackets), a legend naming each
curve, and, where a curve averages several seeds, a shaded 95% confidence band for the mean. A band
of a bounded measure (a fraction, a pass rate) is clipped to its bounds (``bounds=(0, 1)``): a
t-interval over a few seeds near 0 or 1 runs past them, which the measure itself cannot. Legends sit
beside the data (:func:`legend_beside`), never over it; a histogram with a far outlier shows the bulk
and says how many values it leaves out (:func:`hist_bulk`).

Plotting never runs experiments: each function takes the plain records (DataFrames) that the
experiments in :mod:`rltutor.experiments` return.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from rltutor.utils import t_quantile

__all__ = [
    "apply_style",
    "label_axes",
    "panel_grid",
    "mean_ci",
    "moving_mean",
    "clip_band",
    "band",
    "plot_band",
    "line_with_band",
    "legend_beside",
    "hist_bulk",
    "PANEL_WIDTH",
    "FRACTION",
]

FRACTION = (0.0, 1.0)
"""The bounds of a fraction, a rate or a pass rate: ``bounds=FRACTION``."""

PANEL_WIDTH = 9.0
"""Width (inches) of a multi-panel figure. The book's text column is about 750 px wide at a 1280 px
window, so a figure drawn at 100 dpi is shown at about 80% of its size and 11 pt labels stay about
12 px high; a 16-inch row of four panels would be shrunk to under half, labels to 6-7 px."""


def apply_style() -> None:
    """Matplotlib defaults for the book: readable sizes, light grid, no top/right spines; and the
    book's table format (:func:`rltutor.views.tables.apply_table_style`)."""
    from rltutor.views.tables import apply_table_style

    apply_table_style()
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


def moving_mean(df: pd.DataFrame, by: list[str], column: str, window: int = 5) -> pd.Series:
    """Each run's ``column`` smoothed by a moving mean over its last ``window`` rows (fewer at the start), the
    runs told apart by the ``by`` columns and taken in the frame's row order; aligned with ``df``'s index. One
    vectorized rolling window per group, not a Python function per run."""
    rolled = df.groupby(by, sort=False)[column].rolling(window, min_periods=1).mean()
    return rolled.reset_index(level=list(range(len(by))), drop=True).reindex(df.index)


def clip_band(lo, hi, bounds: tuple[float | None, float | None] | None):
    """``lo`` and ``hi`` clipped to ``bounds = (low, high)`` (either end None: unbounded), as float arrays.

    ``bounds=None`` returns them unclipped. A band of a measure that lives in [0, 1] (a fraction)
    gets ``bounds=(0, 1)``; the clipping changes only the drawing, never the records.
    """
    lo = np.asarray(lo, dtype=float)
    hi = np.asarray(hi, dtype=float)
    if bounds is None:
        return lo, hi
    if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
        raise ValueError(f"bounds must be a pair (low, high), either end None, got {bounds!r}; e.g. bounds=(0, 1)")
    low, high = (None if b is None else float(b) for b in bounds)
    if low is not None and high is not None and not low < high:
        raise ValueError(f"bounds must have low < high, got {bounds!r}; e.g. bounds=(0, 1)")
    return np.clip(lo, low, high), np.clip(hi, low, high)


def band(ax, x, lo, hi, bounds=None, color=None, alpha: float = 0.2, **fill_kw):
    """A shaded band between ``lo`` and ``hi`` along ``x``, clipped to ``bounds`` (see :func:`clip_band`)."""
    lo, hi = clip_band(lo, hi, bounds)
    return ax.fill_between(x, lo, hi, color=color, alpha=alpha, linewidth=0, **fill_kw)


def plot_band(ax, x, mean, lo, hi, label: str | None = None, color=None, bounds=None, **line_kw):
    """A mean line with a shaded band between ``lo`` and ``hi`` (clipped to ``bounds``); returns the line."""
    (line,) = ax.plot(x, mean, label=label, color=color, **line_kw)
    band(ax, x, lo, hi, bounds=bounds, color=line.get_color())
    return line


def line_with_band(
    ax,
    df: pd.DataFrame,
    x: str,
    y: str,
    by: str | None = None,
    level: float = 0.95,
    order=None,
    bounds=None,
    **line_kw,
):
    """Plot the mean of ``y`` against ``x`` with its confidence band, one curve per ``by`` value.

    ``bounds`` clips the drawn band (not the returned statistics) to the range ``y`` can take, e.g.
    ``bounds=FRACTION`` for a pass rate.
    """
    stats = mean_ci(df, x, y, by=by, level=level)
    if by is None:
        plot_band(ax, stats[x], stats["mean"], stats["lo"], stats["hi"], bounds=bounds, **line_kw)
        return stats
    names = list(order) if order is not None else list(dict.fromkeys(df[by]))
    for name in names:
        s = stats[stats[by] == name]
        plot_band(ax, s[x], s["mean"], s["lo"], s["hi"], label=str(name), bounds=bounds, **line_kw)
    return stats


def legend_beside(ax, **legend_kw):
    """The axes' legend to the right of its plot area, where it cannot cover a curve; returns it.

    A saved figure keeps it (the book's images are cut with ``bbox_inches="tight"``).
    """
    legend_kw = {"loc": "center left", "bbox_to_anchor": (1.02, 0.5), **legend_kw}
    return ax.legend(**legend_kw)


def hist_bulk(ax, values, labels=None, quantile: float = 0.99, bins: int = 40, **hist_kw) -> int:
    """A histogram of the bulk of ``values`` (one array, or a list of arrays drawn side by side): the
    range stops at the ``quantile`` of all values pooled (and at the lower ``1 - quantile`` one), so one
    far outlier cannot squeeze the rest into a bar or two. Returns how many values fall outside the
    range; say it in the figure (e.g. in the x label: "3 values beyond 2.1 not shown").
    """
    if not 0.5 < quantile <= 1.0:
        raise ValueError(f"quantile must be in (0.5, 1], got {quantile!r}; e.g. quantile=0.99")
    arrays = [np.asarray(values, dtype=float)] if np.ndim(values[0]) == 0 else [np.asarray(v, float) for v in values]
    pooled = np.concatenate([a[np.isfinite(a)] for a in arrays])
    if pooled.size == 0:
        raise ValueError("hist_bulk needs at least one finite value")
    lo, hi = np.quantile(pooled, [1.0 - quantile, quantile])
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    data = arrays[0] if len(arrays) == 1 else arrays
    ax.hist(data, bins=bins, range=(lo, hi), label=labels, **hist_kw)
    return int(sum(((a < lo) | (a > hi)).sum() for a in arrays))
