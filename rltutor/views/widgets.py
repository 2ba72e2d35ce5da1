"""Live ipywidgets explorer for the variance-vs-horizon chapter (needs a running kernel).

Chapter: *Variance vs horizon* (``notebooks/04_variance_horizon.ipynb``). The same plot without a
kernel, for the published book, is :mod:`rltutor.experiments.explorer_data`.

Sliders for the horizon marker T, the group size G, gamma, lambda, the reward noise and the critic's
error, a choice of task, metric and estimators; each change re-runs :func:`rltutor.experiments.variance.measure`
at every horizon (memoized: only the estimators that read the moved knob; the reward noise keeps the
trajectories and, for every estimator but GRPO, the gradients, see
:data:`rltutor.experiments.variance.LINEAR_IN_REWARDS`) and redraws one matplotlib figure in place
(:class:`ExplorerFigure`), each curve with the 95% band (value +- 1.96 SE) of the Monte-Carlo batches it
drew itself (the SNR's SE is the jackknife of :func:`rltutor.experiments.variance.snr_jackknife`), shown
as a PNG in an ``ipywidgets.Image``. Works in Jupyter and on Colab (plain
``ipywidgets`` + ``matplotlib``; no custom widget). ``benchmarks/variance.py`` times a whole move, computing
and drawing (goals: 100 ms when the trajectories are reused, 150 ms when the samples change: noise, task).

The computing and the drawing are plain functions and a class, :func:`explorer_frame`, :func:`plot_explorer`
(a fresh plot, for the chapter's static figures) and :class:`ExplorerFigure`, so the notebook, the tests
and the benchmark call them without widgets.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from rltutor.experiments import variance as an
from rltutor.experiments.explorer_data import ESTIMATOR_LABELS
from rltutor.views.plots import label_axes

__all__ = ["HORIZONS", "explorer_frame", "plot_explorer", "ExplorerFigure", "horizon_explorer"]

HORIZONS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
"""The horizons the live explorer measures (the x axis)."""

METRIC_LABELS = {
    "snr": "SNR  |E g|^2 / E|g - E g|^2 (dimensionless)",
    "cosine": "E cos(g, true gradient) (dimensionless)",
    "variance": "variance E|g - E g|^2 (squared gradient units)",
}
COLORS = {
    "reinforce": "#7f7f7f",
    "grpo": "#d62728",
    "dr_grpo": "#ff7f0e",
    "rloo": "#9467bd",
    "gae": "#1f77b4",
    "gae_critic": "#2ca02c",
}


def explorer_frame(
    task: str = "corridor",
    *,
    estimators=("grpo", "rloo", "gae", "gae_critic"),
    horizons=HORIZONS,
    G: int = 8,
    gamma: float = 1.0,
    lam: float = 0.95,
    noise: float = 0.0,
    critic_noise: float = 1.0,
    batch_size: int = 32,
    n_batches: int = 64,
    seed: int = 0,
) -> pd.DataFrame:
    """The numbers behind one redraw: every estimator at every horizon (as
    :func:`~rltutor.experiments.variance.horizon_curve`).

    Results are memoized per estimator (:func:`rltutor.experiments.variance.measure_cached`), so moving lambda
    recomputes only the GAE estimators, moving G only the group ones. Every batch has ``batch_size``
    trajectories (``batch_size / G`` groups for the group estimators).
    Bad values raise ValueError naming the value and the fix (e.g. G < 2, lambda outside [0, 1]).
    """
    if not estimators:
        raise ValueError("pick at least one estimator, e.g. estimators=('grpo', 'gae')")
    group = [e for e in estimators if e in an.GROUP_NAMES]
    an.check_params(G=G if group else None, gamma=gamma, lam=lam, noise=noise, critic_noise=critic_noise)
    if group and batch_size % G:
        raise ValueError(
            f"batch size {batch_size} is not a multiple of the group size G={G}; "
            "pick G dividing the batch (2, 4, 8, 16 or 32 for 32 trajectories)"
        )
    rows = []
    for i, T in enumerate(horizons):  # seeds as in rltutor.experiments.variance.horizon_curve: seed + position
        t = an.make_chain(task, T=int(T), noise=noise)
        for e in estimators:
            spec = an.relevant_spec(
                an.EstimatorSpec(e, G=G if group else 2, gamma=gamma, lam=lam, critic_noise=critic_noise)
            )
            rows.append(an.measure_cached(t, spec, batch_size, n_batches, seed + i))
    return pd.DataFrame(rows)


def _y(d: pd.DataFrame, metric: str):
    """The values drawn for ``metric``: 0 cannot sit on a log axis, so it is not drawn (not measurable)."""
    return d[metric].where(d[metric] > 0) if metric != "cosine" else d[metric]


def _band(d: pd.DataFrame, metric: str):
    """(T, low, high) of the 95% Monte-Carlo band metric +- 1.96 SE of the batches measured, or None when the
    frame has no SE for ``metric``; on a log axis the low edge is clipped two decades under the value."""
    se = f"{metric}_se"
    if se not in d or metric not in ("snr", "variance", "cosine"):
        return None
    y, e = d[metric].to_numpy(dtype=float), d[se].to_numpy(dtype=float)
    lo, hi = y - 1.96 * e, y + 1.96 * e
    if metric != "cosine":
        lo = np.where(lo > 0, lo, y / 100)
        keep = (y > 0) & np.isfinite(e) & np.isfinite(y)
        lo, hi = np.where(keep, lo, np.nan), np.where(keep, hi, np.nan)
    return d["T"].to_numpy(), lo, hi


def _set_scales(ax, metric: str, df: pd.DataFrame) -> None:
    """Log-2 horizons; log values except for the cosine, which has a fixed range up to 1."""
    ax.set_xscale("log", base=2)
    if metric != "cosine":
        ax.set_yscale("log")
    else:
        ax.set_yscale("linear")
        ax.set_ylim(min(0.0, float(df["cosine"].min())), 1.02)
    label_axes(ax, "horizon T (decisions per trajectory)", METRIC_LABELS[metric])


def _check_metric(metric: str) -> None:
    if metric not in METRIC_LABELS:
        raise ValueError(f"unknown metric {metric!r}; valid: {', '.join(METRIC_LABELS)}")


def plot_explorer(df: pd.DataFrame, metric: str = "snr", T_marker: int | None = None, ax=None):
    """Draw ``metric`` against the horizon, one line per estimator, a dashed line at ``T_marker``."""
    _check_metric(metric)
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    for name, d in df.groupby("name", sort=False):
        ax.plot(d["T"], _y(d, metric), marker="o", ms=3, color=COLORS.get(name), label=ESTIMATOR_LABELS.get(name, name))
        band = _band(d, metric)
        if band is not None:
            ax.fill_between(*band, color=COLORS.get(name), alpha=0.18, lw=0)
    _set_scales(ax, metric, df)
    if T_marker is not None:
        ax.axvline(T_marker, color="#444", ls="--", lw=1)
    ax.legend(loc="best")
    return ax


class ExplorerFigure:
    """The live explorer's one figure, redrawn in place when a slider moves.

    Building a fresh matplotlib figure on every move cost more than computing the curves did, and most
    of a full draw is the axes (ticks, their labels, the legend), which a slider move rarely changes.
    So this keeps one :class:`~matplotlib.figure.Figure` (not pyplot's: nothing displays by itself) and
    blits: the axes are drawn once into a saved background, the curves and the horizon marker are
    *animated* artists drawn over a copy of it. The y range snaps to whole decades (log metrics) or
    tenths (the cosine) and is kept while the curves fit it within a decade (:func:`_keeps`), and the
    legend sits outside the axes, so most moves redraw only the curves; a move that leaves the range,
    changes the metric or the estimators redraws all, unless those axes were drawn before: their
    background is kept (the last 16), so going back to a task or a range costs no full draw.
    :meth:`update` takes the frame of :func:`explorer_frame`; :meth:`png` renders it for an ``ipywidgets.Image``.
    """

    def __init__(self, figsize=(8.6, 4), dpi: int = 90):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        self.fig = Figure(figsize=figsize, dpi=dpi)
        self.canvas = FigureCanvasAgg(self.fig)
        self.ax = self.fig.add_subplot()
        self.fig.subplots_adjust(left=0.11, right=0.70, bottom=0.13, top=0.97)  # fixed: no layout pass per move
        self.lines: dict = {}  # estimator name -> Line2D
        self.bands: dict = {}  # estimator name -> the fill of its 95% Monte-Carlo band (drawn anew per update)
        self.marker = self.ax.axvline(1, color="#444", ls="--", lw=1, animated=True)
        self.axes_key = None  # what the saved background shows: metric, y range, estimators
        self.background = None
        self.backgrounds: dict = {}  # axes key -> its saved background, so a range seen before is not drawn again
        self.full_draws = 0  # how many updates had to redraw the axes (read by the tests and the benchmark)

    def update(self, df: pd.DataFrame, metric: str = "snr", T_marker: int | None = None) -> None:
        """Show ``metric`` of ``df`` (one row per estimator and horizon), a dashed line at ``T_marker``."""
        _check_metric(metric)
        names = tuple(dict.fromkeys(df["name"]))
        for name, d in df.groupby("name", sort=False):
            if name not in self.lines:
                (self.lines[name],) = self.ax.plot(
                    [], [], marker="o", ms=3, color=COLORS.get(name), label=ESTIMATOR_LABELS.get(name, name)
                )
                self.lines[name].set_animated(True)
            self.lines[name].set_data(d["T"].to_numpy(), _y(d, metric).to_numpy())
        for band in self.bands.values():
            band.remove()
        self.bands = {}
        for name, d in df.groupby("name", sort=False):
            band = _band(d, metric)
            if band is not None:
                self.bands[name] = self.ax.fill_between(*band, color=COLORS.get(name), alpha=0.18, lw=0, animated=True)
        for name, line in self.lines.items():
            line.set_visible(name in names)
        self.marker.set_visible(T_marker is not None)
        if T_marker is not None:
            self.marker.set_xdata([T_marker, T_marker])
        x = tuple(df["T"].agg(["min", "max"]))
        y = _snapped_range(df, metric)
        drawn = self.axes_key
        if drawn is not None and (drawn[0], drawn[2], drawn[3]) == (metric, names, x) and _keeps(drawn[1], y):
            return  # the curves still fit the drawn axes well: no full redraw
        self._draw_axes(df, metric, (metric, y, names, x), names)

    def _draw_axes(self, df, metric, key, names) -> None:
        """Draw everything but the curves and save it as the background they are drawn over (or take the one
        saved when these axes were last drawn: the same key draws the same pixels)."""
        _set_scales(self.ax, metric, df)  # the scales and limits place the curves even when nothing is drawn
        self.ax.set_ylim(*key[1])
        lo, hi = key[3]
        self.ax.set_xlim(lo / 1.3, hi * 1.3)
        self.ax.legend(handles=[self.lines[n] for n in names], loc="upper left", bbox_to_anchor=(1.02, 1.0))
        self.axes_key = key
        if key in self.backgrounds:
            self.background = self.backgrounds[key]
            return
        self.canvas.draw()  # animated artists are left out of a full draw
        self.background = self.canvas.copy_from_bbox(self.fig.bbox)
        if len(self.backgrounds) >= 16:  # a few hundred kB each: keep the 16 most recent
            self.backgrounds.pop(next(iter(self.backgrounds)))
        self.backgrounds[key] = self.background
        self.full_draws += 1

    def png(self, full: bool = False) -> bytes:
        """The figure as PNG bytes: the saved background, the curves and the marker drawn over it.

        ``full=True`` renders every artist through ``savefig`` instead (slower; the same picture but for drawing
        order where a curve crosses a tick), for a first frame: the one a notebook saves, which its figure
        hooks see as an ordinary matplotlib figure."""
        import io

        from PIL import Image

        if full:
            animated = [*self.bands.values(), *self.lines.values(), self.marker]
            for a in animated:
                a.set_animated(False)
            buf = io.BytesIO()
            self.fig.savefig(buf, format="png")
            for a in animated:
                a.set_animated(True)
            self.axes_key = None  # the canvas now holds the curves too: the next update draws a new background
            return buf.getvalue()
        self.canvas.restore_region(self.background)
        for artist in (*self.bands.values(), *self.lines.values(), self.marker):
            if artist.get_visible():
                self.ax.draw_artist(artist)
        buf = io.BytesIO()
        Image.fromarray(np.asarray(self.canvas.buffer_rgba())).save(buf, format="png", compress_level=1)
        return buf.getvalue()


def _keeps(drawn: tuple[float, float], needed: tuple[float, float]) -> bool:
    """Whether the drawn y range still serves: it holds the needed one and is at most one decade (a
    tenth for the cosine's linear axis) wider at either end, so a slider that wobbles across a decade
    does not redraw the axes on every move, and curves are never squashed far from their range."""
    import math

    (a, b), (c, d) = drawn, needed
    if not (a <= c and d <= b):
        return False
    if b == d == 1.02:  # the cosine: linear, the top fixed
        return c - a <= 0.1 + 1e-9
    return math.log10(c / a) <= 1 + 1e-9 and math.log10(b / d) <= 1 + 1e-9


def _snapped_range(df: pd.DataFrame, metric: str) -> tuple[float, float]:
    """The y range of ``metric``, snapped outward to whole decades (log) or tenths (cosine, up to 1.02)."""
    import math

    y = df[metric]
    if metric == "cosine":
        return (min(0.0, math.floor(float(y.min()) * 10) / 10), 1.02)
    pos = y[y > 0]
    if pos.empty:  # nothing measurable: any positive decade
        return (0.1, 1.0)
    lo, hi = math.floor(math.log10(float(pos.min()))), math.ceil(math.log10(float(pos.max())))
    return (10.0**lo, 10.0 ** max(hi, lo + 1))


def horizon_explorer(task: str = "corridor", n_batches: int = 64, batch_size: int = 32):
    """The live explorer: returns an ``ipywidgets.VBox`` to display in a notebook."""
    import ipywidgets as W

    style = {"description_width": "110px"}
    lay = W.Layout(width="380px")
    w = {
        "task": W.Dropdown(options=list(an.CHAIN_TASKS), value=task, description="task", style=style),
        "metric": W.Dropdown(options=list(METRIC_LABELS), value="snr", description="metric", style=style),
        "T_marker": W.SelectionSlider(
            options=list(HORIZONS), value=64, description="horizon T", style=style, layout=lay
        ),
        "G": W.SelectionSlider(
            options=[g for g in (2, 4, 8, 16, 32) if batch_size % g == 0],
            value=8,
            description="group size G",
            style=style,
            layout=lay,
        ),
        "gamma": W.FloatSlider(
            value=1.0, min=0.8, max=1.0, step=0.01, description="discount \u03b3", style=style, layout=lay
        ),
        "lam": W.FloatSlider(
            value=0.95, min=0.0, max=1.0, step=0.05, description="GAE \u03bb", style=style, layout=lay
        ),
        "noise": W.FloatSlider(
            value=0.0, min=0.0, max=2.0, step=0.1, description="reward noise", style=style, layout=lay
        ),
        "critic_noise": W.FloatSlider(
            value=1.0, min=0.0, max=4.0, step=0.25, description="critic error", style=style, layout=lay
        ),
        "estimators": W.SelectMultiple(
            options=[(v, k) for k, v in ESTIMATOR_LABELS.items()],
            value=("grpo", "rloo", "gae", "gae_critic"),
            rows=6,
            description="estimators",
            style=style,
        ),
    }
    for x in w.values():
        if hasattr(x, "continuous_update"):
            x.continuous_update = False
    image = W.Image(format="png")
    readout = W.HTML()
    errors = W.Output()
    figure = ExplorerFigure()
    cache: dict = {}
    state = {"frame": None, "error": None, "redraws": 0}  # what the last redraw showed (read by the tests)

    def redraw(_=None):
        args = dict(
            task=w["task"].value,
            estimators=tuple(w["estimators"].value),
            G=w["G"].value,
            gamma=w["gamma"].value,
            lam=w["lam"].value,
            noise=w["noise"].value,
            critic_noise=w["critic_noise"].value,
        )
        errors.clear_output()
        try:
            key = tuple(sorted((k, str(v)) for k, v in args.items()))
            if key not in cache:  # moving only the marker or the metric does not recompute
                cache.clear()
                cache[key] = explorer_frame(**args, batch_size=batch_size, n_batches=n_batches)
            d = cache[key]
            figure.update(d, w["metric"].value, w["T_marker"].value)
            image.value = figure.png(full=state["redraws"] == 0)  # the first frame is the one a notebook saves
            at = d[d["T"] == w["T_marker"].value][["estimator", "snr", "snr_se", "cosine", "variance"]]
            readout.value = at.set_index("estimator").round(4).to_html()
            state.update(frame=d, error=None)
        except ValueError as e:
            state.update(frame=None, error=str(e))
            with errors:
                print(f"refused (ValueError) -> {e}")
        state["redraws"] += 1

    for x in w.values():
        x.observe(redraw, names="value")
    redraw()
    left = W.VBox([w[k] for k in ("task", "metric", "T_marker", "G", "gamma", "lam", "noise", "critic_noise")])
    box = W.VBox([W.HBox([left, w["estimators"]]), errors, image, readout])
    box.state = state
    return box
