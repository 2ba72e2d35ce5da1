"""Live ipywidgets explorer for the variance-vs-horizon chapter (needs a running kernel).

Chapter: *Variance vs horizon* (``notebooks/04_variance_horizon.ipynb``). The same plot without a
kernel, for the published book, is :mod:`rltutor.experiments.explorer_data`.

Sliders for the horizon marker T, the group size G, gamma, lambda, the reward noise and the critic's
error, a choice of task, metric and estimators; each change re-runs :func:`rltutor.experiments.variance.measure`
at every horizon (a few hundred milliseconds on a laptop CPU) and redraws a matplotlib figure. Works
in Jupyter and on Colab (plain ``ipywidgets`` + ``matplotlib`` in an ``Output``; no custom widget).

The computing and the drawing are two plain functions, :func:`explorer_frame` and
:func:`plot_explorer`, so the notebook, the tests and the benchmark call them without widgets.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from rltutor.experiments import variance as an
from rltutor.experiments.explorer_data import ESTIMATOR_LABELS
from rltutor.views.plots import label_axes

__all__ = ["HORIZONS", "explorer_frame", "plot_explorer", "horizon_explorer"]

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


def plot_explorer(df: pd.DataFrame, metric: str = "snr", T_marker: int | None = None, ax=None):
    """Draw ``metric`` against the horizon, one line per estimator, a dashed line at ``T_marker``."""
    if metric not in METRIC_LABELS:
        raise ValueError(f"unknown metric {metric!r}; valid: {', '.join(METRIC_LABELS)}")
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    for name, d in df.groupby("name", sort=False):
        y = d[metric].where(d[metric] > 0) if metric != "cosine" else d[metric]  # 0 on a log axis: not measurable
        ax.plot(d["T"], y, marker="o", ms=3, color=COLORS.get(name), label=ESTIMATOR_LABELS.get(name, name))
    ax.set_xscale("log", base=2)
    if metric != "cosine":
        ax.set_yscale("log")
    else:
        ax.set_ylim(min(0.0, float(df["cosine"].min())), 1.02)
    if T_marker is not None:
        ax.axvline(T_marker, color="#444", ls="--", lw=1)
    label_axes(ax, "horizon T (decisions per trajectory)", METRIC_LABELS[metric])
    ax.legend(loc="best")
    return ax


def horizon_explorer(task: str = "corridor", n_batches: int = 64, batch_size: int = 32):
    """The live explorer: returns an ``ipywidgets.VBox`` to display in a notebook."""
    import ipywidgets as W
    from IPython.display import display

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
    out = W.Output()
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
        with out:
            out.clear_output(wait=True)
            try:
                key = tuple(sorted((k, str(v)) for k, v in args.items()))
                if key not in cache:  # moving only the marker or the metric does not recompute
                    cache.clear()
                    cache[key] = explorer_frame(**args, batch_size=batch_size, n_batches=n_batches)
                fig, ax = plt.subplots(figsize=(7, 4))
                plot_explorer(cache[key], w["metric"].value, w["T_marker"].value, ax=ax)
                plt.show()
                d = cache[key]
                at = d[d["T"] == w["T_marker"].value][["estimator", "snr", "cosine", "variance"]]
                display(at.set_index("estimator").round(4))
                state.update(frame=d, error=None)
            except ValueError as e:
                state.update(frame=None, error=str(e))
                print(f"refused (ValueError) -> {e}")
            state["redraws"] += 1

    for x in w.values():
        x.observe(redraw, names="value")
    redraw()
    left = W.VBox([w[k] for k in ("task", "metric", "T_marker", "G", "gamma", "lam", "noise", "critic_noise")])
    box = W.VBox([W.HBox([left, w["estimators"]]), out])
    box.state = state
    return box
