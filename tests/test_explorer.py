"""Tests of the static explorer: data coverage, the page's controls, its JavaScript (node, chromium)."""

import json
import math
import re
import shutil
import subprocess

import numpy as np
import pytest

from rltutor import datafiles
from rltutor.experiments import explorer_data as ex
from rltutor.experiments import variance as an
from rltutor.views import explorer_html as eh

DATA_FILE = datafiles.DATA_DIR / "horizon" / "explorer.json"


@pytest.fixture(scope="module")
def quick():
    return ex.compute_explorer_data(ex.GRIDS["quick"])


def _n_curves(grid):
    return (
        len(grid["tasks"])
        * len(grid["noise"])
        * len(ex.METRICS)
        * len(ex.ESTIMATOR_LABELS)
        * len(grid["G"])
        * len(grid["gamma"])
        * len(grid["lam"])
        * len(grid["critic_noise"])
    )


def test_data_covers_every_slider_position(quick):
    assert ex.check_data(quick) == _n_curves(quick["grid"])


def test_missing_value_is_reported(quick):
    bad = json.loads(json.dumps(quick))
    bad["values"]["corridor"][1]["snr"]["gae_critic"][0][1][0][2] = None
    with pytest.raises(ValueError, match=r"corridor noise#1 snr gae_critic G#\d gamma#0 lam#1 critic#0"):
        ex.check_data(bad)


def test_stored_numbers_are_the_analysis_numbers(quick):
    """The page shows what rltutor.experiments.variance computes (same seed, rounded to 4 digits), nothing else."""
    g = ex.GRIDS["quick"]
    cell = 1 * len(g.T) + 2  # task 0, noise index 1, T index 2 (cells are numbered in this order)
    spec = an.EstimatorSpec("gae", gamma=g.gamma[0], lam=g.lam[1])
    specs = [s for _, s in ex._specs(g)]
    rows = an.measure_to_precision(
        an.make_chain("corridor", T=g.T[2], noise=g.noise[1]),
        specs,
        batch_size=g.batch_size,
        rel_se=g.rel_se,
        min_batches=g.min_batches,
        step=g.step,
        seed=g.seed + cell,
    )
    row = rows[specs.index(spec)]
    for metric in ("snr", "snr_se"):
        stored = ex.curve(quick, "corridor", "gae", metric, noise=1, gamma=0, lam=1)[2]
        assert stored == pytest.approx(row[metric], rel=1e-3)
    assert ex.curve(quick, "corridor", "gae", "batches", noise=1, gamma=0, lam=1)[2] == row["n_batches"]


def test_checker_rejects_a_cell_above_the_stated_monte_carlo_error(quick):
    """Every stored SNR is within 5% (relative SE); a cell whose SE is 6% of its SNR is refused by name."""
    bad = json.loads(json.dumps(quick))
    se = bad["values"]["corridor"][0]["snr_se"]["rloo"][1]
    snr = bad["values"]["corridor"][0]["snr"]["rloo"][1]
    se[2] = 0.06 * snr[2]
    with pytest.raises(ValueError, match=r"rloo at task=corridor noise#0 G#1 .*T#2 .*relative error 0.060 > 0.05"):
        ex.check_data(bad)
    del bad["values"]["corridor"][0]["snr_se"]
    with pytest.raises(ValueError, match="stores no snr_se"):
        ex.check_data(bad)


def test_the_stored_t1_ordering_is_the_one_4000_batches_measure(quick):
    """data["check"]: the corridor at T = 1 measured with 4,000 plain batches beside the stored cell."""
    check = quick["check"]["estimators"]
    assert quick["check"]["n_batches"] == ex.CHECK_BATCHES
    for e in check.values():
        assert abs(e["stored_snr"] - e["snr"]) < 3 * math.hypot(e["snr_se"], e["stored_snr_se"])


def test_html_sliders_offer_exactly_the_grid(quick):
    html = eh.explorer_html(quick, element_id="rlx-test")
    sliders = re.findall(r'<input type="range" min="0" max="(\d+)"[^>]*data-grid="(\w+)"', html)
    assert {g for _, g in sliders} == {"T", "G", "gamma", "lam", "noise", "critic_noise"}
    for mx, g in sliders:
        assert int(mx) == len(quick["grid"][g]) - 1
    assert 'id="rlx-test"' in html and "</script>" in html
    payload = re.search(r'<script type="application/json" class="rlx-data">(.*?)</script>', html).group(1)
    assert json.loads(payload.replace("<\\/", "</"))["values"] == quick["values"]


def test_bad_grid_values_are_refused():
    with pytest.raises(ValueError, match="G=1"):
        ex.ExplorerGrid(G=(1, 2))
    with pytest.raises(ValueError, match="lam=1.2"):
        ex.ExplorerGrid(lam=(0.5, 1.2))
    with pytest.raises(ValueError, match="multiple of the group size G=3"):
        ex.ExplorerGrid(G=(3,), batch_size=32)


NODE_PROBE = r"""
const data = JSON.parse(require('fs').readFileSync(process.argv[2], 'utf8'));
const g = data.grid, out = {svgs: 0, bad: 0, bands: 0, changed: {}};
const show = {}; Object.keys(data.labels).forEach(e => show[e] = true);
function st(o) { return Object.assign({task: g.tasks[0], noise: 0, metric: 'snr', T: 0, G: 0, gamma: 0, lam: 0,
                                       crit: 0, show: show}, o); }
for (const task of g.tasks) for (const metric of data.metrics) for (let noise = 0; noise < g.noise.length; noise++)
  for (let T = 0; T < g.T.length; T++) for (let G = 0; G < g.G.length; G++)
  for (let gamma = 0; gamma < g.gamma.length; gamma++)
    for (let lam = 0; lam < g.lam.length; lam++) for (let crit = 0; crit < g.critic_noise.length; crit++) {
      const svg = rlxSvg(data, st({task, metric, noise, T, G, gamma, lam, crit}), 600, 360);
      out.svgs++;
      out.bands += (svg.match(/<path class="rlx-band"/g) || []).length;
      const lines = (svg.match(/<path class="rlx-line"/g) || []).length;
      if (lines !== Object.keys(data.labels).length || /NaN|undefined|Infinity/.test(svg)) out.bad++;
    }
const keys = {T: 'T', G: 'G', gamma: 'gamma', lam: 'lam', noise: 'noise', crit: 'critic_noise'};
for (const [k, gk] of Object.entries(keys)) {
  if (g[gk].length < 2) continue;
  out.changed[k] = rlxSvg(data, st({}), 600, 360) !== rlxSvg(data, st({[k]: 1}), 600, 360);
}
console.log(JSON.stringify(out));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_javascript_core_draws_every_state_and_every_slider_changes_the_plot(quick, tmp_path):
    core = eh.JS_CORE
    assert "rlx core begin" in core and "rlx core end" in core
    (tmp_path / "d.json").write_text(json.dumps(quick))
    (tmp_path / "p.js").write_text(core + NODE_PROBE)
    res = subprocess.run(
        ["node", str(tmp_path / "p.js"), str(tmp_path / "d.json")], capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    g = quick["grid"]
    n_states = (
        len(g["tasks"])
        * len(ex.METRICS)
        * len(g["noise"])
        * len(g["T"])
        * len(g["G"])
        * len(g["gamma"])
        * len(g["lam"])
        * len(g["critic_noise"])
    )
    assert out["svgs"] == n_states and out["bad"] == 0
    assert out["bands"] > 0  # the SNR's 95% Monte-Carlo band is drawn from the stored SE
    assert out["changed"] and all(out["changed"].values()), out["changed"]


BROWSER_PROBE = """<script>
window.addEventListener('load', function () {
  var root = document.querySelector('.rlx-explorer'), res = {};
  function plot() { return root.querySelector('.rlx-plot').innerHTML; }
  res.lines = root.querySelectorAll('path.rlx-line').length;
  root.querySelectorAll('input[type=range]').forEach(function (el) {
    if (+el.max < 1) return;
    var b = plot(); el.value = (+el.value + 1) % (+el.max + 1); el.dispatchEvent(new Event('input'));
    res[el.dataset.key] = plot() !== b;
  });
  var sel = root.querySelector('select[data-key=metric]'), b = plot();
  sel.value = 'cosine'; sel.dispatchEvent(new Event('change')); res.metric = plot() !== b;
  document.body.setAttribute('data-result', JSON.stringify(res));
});
</script>"""


def _browser():
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(_browser() is None, reason="no headless chromium installed")
def test_moving_a_slider_redraws_the_plot_in_a_real_browser(quick, tmp_path):
    page = tmp_path / "page.html"
    page.write_text("<!doctype html><meta charset='utf-8'><body>" + eh.explorer_html(quick) + BROWSER_PROBE + "</body>")
    res = subprocess.run(
        [_browser(), "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    m = re.search(r'data-result="([^"]*)"', res.stdout)
    assert m, res.stderr[-2000:]
    out = json.loads(m.group(1).replace("&quot;", '"'))
    assert out.pop("lines") == 4  # the four estimators shown at first
    assert out and all(out.values()), out


def test_live_figure_blits_the_same_pixels_as_a_full_draw():
    """A move inside the y range redraws only the curves over the saved axes: the picture must be the one a
    fresh figure draws for the same frame, pixel for pixel; leaving the range or changing the metric redraws all."""
    import io

    from PIL import Image

    from rltutor.views import widgets

    kw = dict(horizons=(1, 4, 16), n_batches=8, estimators=("grpo", "gae"))
    before = widgets.explorer_frame("corridor", lam=0.95, **kw)
    after = widgets.explorer_frame("corridor", lam=0.9, **kw)
    moved = widgets.ExplorerFigure()
    moved.update(before, "snr", 4)
    moved.png()
    moved.update(after, "snr", 16)
    assert widgets._snapped_range(before, "snr") == widgets._snapped_range(after, "snr")
    assert moved.full_draws == 1  # same range, same estimators: the axes were not drawn again
    fresh = widgets.ExplorerFigure()
    fresh.update(after, "snr", 16)
    pixels = [np.asarray(Image.open(io.BytesIO(f.png()))) for f in (moved, fresh)]
    assert pixels[0].shape == pixels[1].shape and (pixels[0] == pixels[1]).all()
    # through savefig (the first frame, which a notebook saves): the same picture up to drawing order, the
    # curves and marker drawn in their z-order among the axes' artists instead of over them (27 pixels here)
    saved = np.asarray(Image.open(io.BytesIO(fresh.png(full=True))))
    assert saved.shape == pixels[1].shape and (saved[..., :3] != pixels[1][..., :3]).any(-1).mean() < 1e-3
    moved.update(after, "cosine", 16)
    assert moved.full_draws == 2
    with pytest.raises(ValueError, match="unknown metric 'snr2'"):
        moved.update(after, "snr2")


@pytest.mark.skipif(not DATA_FILE.exists(), reason="the full explorer data has not been generated")
def test_committed_full_data_is_complete_small_and_says_how_it_was_made():
    data = ex.load_data(DATA_FILE)
    assert data["command"].startswith("python -m rltutor.experiments.explorer_data --scale full")
    assert ex.check_data(data) == _n_curves(data["grid"])  # every SNR within 5% relative Monte-Carlo error
    check = data["check"]["estimators"]
    assert check["grpo"]["snr"] < check["gae"]["snr"]  # 4,000 batches: GRPO below GAE at T = 1
    assert check["grpo"]["stored_snr"] < check["gae"]["stored_snr"]  # and so is the stored grid
    assert DATA_FILE.stat().st_size < 1_500_000
    assert len(eh.explorer_html(data).encode()) < 3_000_000


# ----------------------------------------------------------------------------------------------
# The live (kernel) explorer of rltutor.views.widgets
# ----------------------------------------------------------------------------------------------


def test_live_explorer_frame_and_plot():
    import matplotlib

    matplotlib.use("Agg")
    from rltutor.views import widgets

    df = widgets.explorer_frame("tokens", horizons=(1, 8), n_batches=8, estimators=("grpo", "gae"))
    assert set(df["name"]) == {"grpo", "gae"} and set(df["T"]) == {1, 8}
    ax = widgets.plot_explorer(df, "cosine", T_marker=8)
    assert len(ax.get_lines()) == 3  # two estimators and the marker
    with pytest.raises(ValueError, match="G=1"):
        widgets.explorer_frame(G=1, estimators=("grpo",))
    with pytest.raises(ValueError, match="lam=2"):
        widgets.explorer_frame(lam=2)
    with pytest.raises(ValueError, match="G=3.*pick G dividing"):
        widgets.explorer_frame(G=3, estimators=("rloo",))


def test_live_explorer_builds_and_redraws_on_a_slider_change():
    import matplotlib

    matplotlib.use("Agg")
    from rltutor.views import widgets

    box = widgets.horizon_explorer(n_batches=4)
    controls = box.children[0].children[0].children
    assert box.state["redraws"] == 1 and box.state["error"] is None
    first = box.state["frame"]
    lam = next(c for c in controls if c.description == "GAE \u03bb")
    lam.value = 0.5
    assert box.state["redraws"] == 2 and box.state["error"] is None
    gae = lambda d: set(d[d["name"].str.startswith("gae")]["lam"])  # noqa: E731
    assert gae(box.state["frame"]) == {0.5} and gae(first) == {0.95}


@pytest.mark.skipif(not DATA_FILE.exists(), reason="the full explorer data has not been generated")
def test_committed_full_data_is_reproduced_by_the_code():
    """Recompute the first cells (T = 1, 2 of the first task, no noise) and compare with the file."""
    data = ex.load_data(DATA_FILE)
    g = ex.ExplorerGrid(**{k: tuple(v) if isinstance(v, list) else v for k, v in data["grid"].items()})
    specs = ex._specs(g)
    for ti in (0, 1):
        rows = an.measure_to_precision(
            an.make_chain(g.tasks[0], T=g.T[ti], noise=g.noise[0]),
            [s for _, s in specs],
            batch_size=g.batch_size,
            rel_se=g.rel_se,
            min_batches=g.min_batches,
            step=g.step,
            seed=g.seed + ti,
        )
        for (key, _), row in zip(specs, rows, strict=True):
            node = data["values"][g.tasks[0]][0]["cosine"][key[0]]
            for idx in key[1:]:
                node = node[idx]
            assert node[ti] == pytest.approx(row["cosine"], rel=1e-3, abs=1e-6), key


def test_live_frame_equals_horizon_curve_and_memoizes():
    from rltutor.experiments import variance as an2
    from rltutor.views import widgets

    kw = dict(G=4, gamma=0.99, lam=0.5, noise=0.2, critic_noise=2.0, n_batches=8)
    a = widgets.explorer_frame("corridor", horizons=(2, 8), estimators=("rloo", "gae_critic"), batch_size=16, **kw)
    b = an2.horizon_curve((2, 8), "corridor", n_groups=4, estimators=("rloo", "gae_critic"), **kw)
    for col in ("snr", "cosine", "variance"):
        np.testing.assert_allclose(a[col].to_numpy(), b[col].to_numpy(), rtol=1e-6)
    hits = an2.measure_cached.cache_info().hits
    widgets.explorer_frame(
        "corridor", horizons=(2, 8), estimators=("rloo", "gae_critic"), batch_size=16, **{**kw, "lam": 0.9}
    )
    assert an2.measure_cached.cache_info().hits == hits + 2  # rloo ignores lambda: served from memory


def test_a_noise_move_samples_nothing_and_reuses_the_linear_estimators_gradients():
    """Moving the noise slider keeps the trajectories (common random numbers) and, for the estimators linear in
    the rewards, builds g(sigma) = g(0) + sigma (g(1) - g(0)) from two stored gradients. The numbers must be
    those of a fresh measurement: equal up to float32 rounding (measured: at most 2.4e-6 relative on the SNR of
    the four presets at noise 0.3 and 1.7; the bound leaves a factor of 4)."""
    from rltutor.experiments import variance as an2
    from rltutor.views import widgets

    kw = dict(horizons=(1, 8, 32), n_batches=8, estimators=("grpo", "rloo", "gae", "gae_critic"))
    an2.clear_caches()
    widgets.explorer_frame("tokens_exact", noise=0.5, **kw)
    draws, grads = an2._cached_draws.cache_info().misses, an2._gradients.cache_info().misses
    moved = widgets.explorer_frame("tokens_exact", noise=1.3, **kw)
    assert an2._cached_draws.cache_info().misses == draws  # nothing sampled
    assert an2._gradients.cache_info().misses == grads  # no advantages computed for rloo, gae, gae_critic
    an2.clear_caches()
    fresh = []
    for i, T in enumerate(kw["horizons"]):
        task = an2.make_chain("tokens_exact", T=T, noise=1.3)
        specs = [an2.relevant_spec(an2.EstimatorSpec(e, G=8, lam=0.95, critic_noise=1.0)) for e in kw["estimators"]]
        fresh += an2.measure_specs(task, specs, batch_size=32, n_batches=8, seed=i, critic_draws=True)
    for col in ("snr", "cosine", "variance", "cos_mean"):
        np.testing.assert_allclose(moved[col].to_numpy(), [r[col] for r in fresh], rtol=1e-5, err_msg=col)
    assert set(an2.LINEAR_IN_REWARDS) == set(an2.ESTIMATOR_NAMES) - {"grpo"}


def test_axes_seen_before_are_not_drawn_again_and_give_the_same_pixels():
    """Switching back to a y range drawn before reuses its saved background: no full draw, and the picture a
    fresh figure draws for the same frame, pixel for pixel."""
    import io

    from PIL import Image

    from rltutor.views import widgets

    kw = dict(horizons=(1, 4, 16), n_batches=8, estimators=("grpo", "gae"))
    frames = [widgets.explorer_frame(task, **kw) for task in ("corridor", "tokens_exact")]
    assert widgets._snapped_range(frames[0], "snr") != widgets._snapped_range(frames[1], "snr")
    live = widgets.ExplorerFigure()
    for d in (*frames, frames[0]):
        live.update(d, "snr", 4)
        live.png()
    assert live.full_draws == 2  # the third update took the first one's axes from memory
    fresh = widgets.ExplorerFigure()
    fresh.update(frames[0], "snr", 4)
    pixels = [np.asarray(Image.open(io.BytesIO(f.png()))) for f in (live, fresh)]
    assert (pixels[0] == pixels[1]).all()
