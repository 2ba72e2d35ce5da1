"""The views' helpers: bands of bounded measures stay inside their bounds, legends beside the data,
histograms of the bulk that count what they leave out, numbers and sentences as the book prints them."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from rltutor.views import curves, plots, tables  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _band_y(ax):
    (poly,) = [c for c in ax.collections if isinstance(c, matplotlib.collections.PolyCollection)]
    return np.concatenate([p.vertices[:, 1] for p in poly.get_paths()])


def test_clip_band_clips_to_the_bounds_and_only_there():
    lo, hi = plots.clip_band([-0.4, 0.2, 0.9], [0.3, 0.5, 1.2], plots.FRACTION)
    assert lo.tolist() == [0.0, 0.2, 0.9] and hi.tolist() == [0.3, 0.5, 1.0]
    lo, hi = plots.clip_band([-0.4, 0.2], [0.3, 1.5], (None, 1.0))  # one end open
    assert lo.tolist() == [-0.4, 0.2] and hi.tolist() == [0.3, 1.0]
    lo, hi = plots.clip_band([-0.4], [1.5], None)
    assert lo.tolist() == [-0.4] and hi.tolist() == [1.5]


@pytest.mark.parametrize("bounds", [(1.0, 0.0), (0.5, 0.5), (0.0,), "01"])
def test_clip_band_refuses_bounds_that_are_not_an_interval(bounds):
    with pytest.raises(ValueError, match="bounds"):
        plots.clip_band([0.0], [1.0], bounds)


def test_a_band_of_a_fraction_stays_in_zero_one():
    # 3 seeds of a pass rate near 0 and near 1: the t-interval for the mean runs far past both ends
    df = pd.DataFrame({"step": [0, 0, 0, 1, 1, 1], "seed": [0, 1, 2] * 2, "rate": [0.0, 0.0, 0.3, 1.0, 0.7, 1.0]})
    stats = plots.mean_ci(df, "step", "rate")
    assert stats["lo"].min() < -0.2 and stats["hi"].max() > 1.2  # the case the bounds are for
    _, ax = plt.subplots()
    out = plots.line_with_band(ax, df, "step", "rate", bounds=plots.FRACTION)
    y = _band_y(ax)
    assert y.min() >= 0.0 and y.max() <= 1.0
    assert y.min() == 0.0 and y.max() == 1.0  # clipped, not dropped
    assert out["lo"].min() < -0.2  # the statistics keep the interval as computed
    _, ax = plt.subplots()
    plots.line_with_band(ax, df, "step", "rate")  # no bounds: drawn as computed
    assert _band_y(ax).min() < -0.2


def test_band_and_plot_band_take_bounds():
    _, ax = plt.subplots()
    plots.band(ax, [0, 1, 2], [-1.0, 0.5, 0.2], [0.5, 2.0, 0.4], bounds=(0, 1))
    y = _band_y(ax)
    assert y.min() == 0.0 and y.max() == 1.0
    _, ax = plt.subplots()
    line = plots.plot_band(ax, [0, 1], [0.5, 0.9], [-0.1, 0.7], [0.8, 1.3], label="x", bounds=(0, 1))
    assert line.get_label() == "x"
    y = _band_y(ax)
    assert y.min() == 0.0 and y.max() == 1.0


def test_legend_beside_does_not_cover_the_plot_area():
    fig, ax = plt.subplots()
    for k in range(4):
        ax.plot(np.arange(10), np.arange(10) * k, label=f"curve {k}")
    legend = plots.legend_beside(ax)
    fig.canvas.draw()
    box, area = legend.get_window_extent(), ax.get_window_extent()
    assert box.x0 >= area.x1  # entirely to the right of the axes
    assert [t.get_text() for t in legend.get_texts()] == [f"curve {k}" for k in range(4)]


def test_hist_bulk_shows_the_bulk_and_counts_the_rest():
    values = np.concatenate([np.linspace(0.0, 1.0, 199), [27.0]])
    _, ax = plt.subplots()
    beyond = plots.hist_bulk(ax, values, quantile=0.99)
    assert beyond == 4  # 1% of 200 values at each end: the outlier and 1.0 above, 0 and 0.005 below
    assert ax.get_xlim()[1] < 2.0  # the axis is not stretched to 27
    _, ax = plt.subplots()
    beyond = plots.hist_bulk(ax, [values, values[:-1]], labels=["a", "b"], quantile=1.0)
    assert beyond == 0 and ax.get_xlim()[1] > 26.0
    with pytest.raises(ValueError, match="quantile"):
        plots.hist_bulk(ax, values, quantile=0.4)


@pytest.mark.parametrize(
    "x, text",
    [
        (0.0, "0"),
        (3.0, "3"),
        (20090.0, "20090"),
        (-0.5, "-0.5"),
        (0.026244, "0.02624"),
        (0.98174, "0.9817"),
        (123.456, "123.5"),
        (1.4811e-4, "0.0001481"),
        (2.201e-5, "2.2e-05"),
        (1.5e-8, "1.5e-08"),
        (float("nan"), "nan"),
    ],
)
def test_number_writes_plain_decimals_and_whole_numbers(x, text):
    assert tables.number(x) == text


def test_the_table_style_reaches_a_dataframes_html():
    names = ("display.float_format", "display.max_colwidth", "display.max_columns", "display.width")
    try:
        tables.apply_table_style()
        df = pd.DataFrame({"n": [2.0, 3.0], "loss": [2.624e-2, 1.5e-8], "text": ["word " * 40, "b"]})
        html = df._repr_html_()
        assert "0.02624" in html and "e-02" not in html and "1.5e-08" in html
        assert ">2<" in html and "2.0" not in html
        assert ("word " * 40).strip() in html  # the whole cell, no "..."
    finally:
        for name in names:
            pd.reset_option(name)


def test_sentences_are_a_markdown_list_with_markdown_escaped():
    md = tables.sentences(["ppo_head - grpo (reward): +0.010 *", "second"])
    assert md.data.splitlines() == ["* ppo\\_head - grpo (reward): +0.010 \\*", "* second"]
    with pytest.raises(ValueError, match="at least one"):
        tables.sentences([])


def test_show_source_folds_a_long_listing_and_shows_a_short_one(monkeypatch):
    from IPython.display import Code

    from rltutor.advantages import gae
    from rltutor.train import Trainer
    from rltutor.views import source

    shown = []
    monkeypatch.setattr("IPython.display.display", shown.append)
    short = source.show_source(gae, max_lines=200)
    assert isinstance(short, Code) and "def gae(" in short.data
    n = len(source.source_of(Trainer.update).splitlines())
    folded = source.show_source(Trainer.update, max_lines=n - 1)
    page = folded._repr_html_()
    assert page.startswith("<details><summary>Trainer.update: ") and f"{n} lines" in page
    assert '<span class="nf">update</span>' in page  # highlighted, inside the fold
    assert repr(folded) == source.source_of(Trainer.update)
    assert len(shown) == 2 and "rltutor.train" in shown[1].data  # the module and line, above each listing
    with pytest.raises(ValueError, match="max_lines"):
        source.show_source(gae, max_lines=0)


def _history(toolshell: bool) -> pd.DataFrame:
    """A run's history as the trainer writes it; a toolshell run that hacks every episode: return 0.8 (a
    reward of 1 less 2 calls at 0.1), hack rate 1, no honest solve."""
    h = pd.DataFrame({"update": range(1, 6), "env_steps": [64 * u for u in range(1, 6)]})
    h["episode_return"], h["return_last10"] = 0.8, 0.8
    if toolshell:
        h["solve_rate"], h["hack_rate"] = 0.0, 1.0
    return h


def test_a_toolshell_curve_shows_the_hack_rate_beside_the_return():
    fig, axes = curves.learning_curve(_history(toolshell=True), "ppo on toolshell")
    assert len(axes) == 2
    lines = {line.get_label(): line.get_ydata() for line in axes[1].get_lines()}
    assert list(lines) == ["honest solve rate", "hack rate"]
    assert (lines["hack rate"] == 1.0).all() and (lines["honest solve rate"] == 0.0).all()
    assert axes[1].get_ylim()[0] < 0 and axes[1].get_ylim()[1] > 1  # both ends of a fraction visible
    assert "fraction" in axes[1].get_ylabel() and "reward" in axes[0].get_ylabel()
    assert all(ax.get_legend() is not None for ax in axes)
    text = curves.outcome(_history(toolshell=True))
    assert text == "mean return of the last 10 episodes 0.8; in the last update honest solve rate 0, hack rate 1"


def test_a_curve_without_rates_has_one_panel_and_bad_records_are_refused():
    _, axes = curves.learning_curve(_history(toolshell=False))
    assert len(axes) == 1 and axes[0].get_xlabel() == "environment steps (count)"
    assert curves.outcome(_history(toolshell=False)) == "mean return of the last 10 episodes 0.8"
    with pytest.raises(ValueError, match="needs column 'return_last10'"):
        curves.learning_curve(_history(toolshell=False).drop(columns="return_last10"))


def test_restated_curves_draw_one_panel_per_metric_or_per_facet():
    """views.restated.curves: a panel per metric (each with its unit in the label), or, with ``facet``, one metric
    in a panel per facet value, a curve per arm in each."""
    from rltutor.views import restated

    rows = [
        {"algo": a, "L": L, "seed": s, "update": u, "reward": 0.1 * u, "accuracy": 0.05 * u}
        for a in ("GRPO", "PPO")
        for L in (4, 16)
        for s in range(3)
        for u in range(1, 11)
    ]
    runs = pd.DataFrame(rows)
    fig = restated.curves(runs, {"reward": "reward", "accuracy": "accuracy (fraction)"}, facet=None)
    drawn = [ax for ax in fig.axes if ax.get_visible() and ax.lines]
    assert len(drawn) == 2 and "accuracy (fraction), 5-update mean" in drawn[1].get_ylabel()
    fig = restated.curves(runs, {"reward": "reward"}, facet=["L"])
    drawn = [ax for ax in fig.axes if ax.get_visible() and ax.lines]
    assert [ax.get_title() for ax in drawn] == ["L = 4", "L = 16"] and all(len(ax.lines) == 2 for ax in drawn)
    with pytest.raises(ValueError):
        restated.curves(runs, {"reward": "reward", "accuracy": "accuracy"}, facet=["L"])  # facet: one metric
    plt.close("all")


def test_moving_mean_equals_each_runs_own_rolling_mean():
    from rltutor.views.plots import moving_mean

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"algo": np.repeat(["a", "b"], 30), "seed": np.tile(np.repeat([0, 1, 2], 10), 2)})
    df["update"] = np.tile(np.arange(10), 6)
    df["reward"] = rng.random(len(df))
    df = df.sample(frac=1, random_state=1).sort_values("update", kind="stable")  # runs interleaved
    got = moving_mean(df, ["algo", "seed"], "reward", 3)
    want = df.groupby(["algo", "seed"])["reward"].transform(lambda x: x.rolling(3, min_periods=1).mean())
    assert got.index.equals(df.index)
    np.testing.assert_allclose(got.to_numpy(), want.to_numpy())
    first = df[(df["algo"] == "a") & (df["seed"] == 0)]
    assert got[first.index[0]] == first["reward"].iloc[0]  # fewer rows at the start: the mean of what there is
