"""The variance-vs-horizon explorer without a kernel: precomputed on a grid, drawn in the browser.

Chapter: *Variance vs horizon* (``notebooks/04_variance_horizon.ipynb``).

The live explorer (:mod:`rltutor.widgets`) needs a Python kernel. The published book has none, so
this module precomputes :mod:`rltutor.analysis` on every slider position of a grid
(:class:`ExplorerGrid`) and emits one self-contained piece of HTML: the numbers as JSON, a few
range sliders, and about two hundred lines of JavaScript that draw an SVG line chart. No CDN, no
plotting library, works offline; moving a slider only looks numbers up.

What is stored (per task, reward-noise level and metric; every curve runs over the horizons T):

* ``reinforce[gamma]``, ``grpo[G]``, ``dr_grpo[G]``, ``rloo[G]``, ``gae[gamma][lambda]``,
  ``gae_critic[gamma][lambda][critic_noise]``: an estimator is stored only along the knobs it reads
  (GRPO ignores gamma and lambda; REINFORCE ignores G), which keeps the page small.
* All estimators of one (task, noise, T) cell are measured on the same sampled trajectories, and every
  batch has ``batch_size`` trajectories whatever G is (G groups of batch_size / G).

Regenerate the committed data file with the command stored inside it (``data["command"]``), e.g.
``python -m rltutor.explorer --scale full --out notebooks/data/horizon/explorer.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from rltutor import analysis as an
from rltutor.utils import resolve_scale

__all__ = ["ExplorerGrid", "GRIDS", "ESTIMATOR_LABELS", "METRICS", "compute_explorer_data", "check_data",
           "explorer_html", "show", "save_data", "load_data", "curve", "main"]

METRICS = ("snr", "cosine", "variance")
ESTIMATOR_LABELS = {
    "reinforce": "REINFORCE (no baseline)",
    "grpo": "GRPO (mean/std of group)",
    "dr_grpo": "GRPO without std (Dr.GRPO)",
    "rloo": "RLOO",
    "gae": "GAE, true V",
    "gae_critic": "GAE, noisy critic",
}
SNR_CAP = 1e6  # an SNR above this (or infinite: a zero-variance estimate) is stored as the cap


@dataclass(frozen=True)
class ExplorerGrid:
    """The slider positions the static explorer offers (every combination is precomputed)."""

    tasks: tuple[str, ...] = ("corridor", "tokens", "corridor_dense")
    """task presets of :data:`rltutor.analysis.TASKS`"""
    T: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256)
    """horizons (the x axis; the T slider moves the marker)"""
    G: tuple[int, ...] = (2, 4, 8, 16, 32)
    """group sizes; each must divide batch_size"""
    gamma: tuple[float, ...] = (0.9, 0.99, 1.0)
    """discounts"""
    lam: tuple[float, ...] = (0.0, 0.5, 0.9, 0.95, 1.0)
    """GAE lambdas"""
    noise: tuple[float, ...] = (0.0, 0.5, 1.0)
    """reward-noise std (absolute: added to each reward; the corridor's whole return lies in [0, 1])"""
    critic_noise: tuple[float, ...] = (1.0, 4.0)
    """critic error std (gae_critic), in units of the reward of one good step"""
    batch_size: int = 32
    """trajectories per batch, for every estimator"""
    n_batches: int = 96
    """Monte-Carlo batches per point"""
    seed: int = 0
    """seed of the first cell (each cell adds its index)"""

    def __post_init__(self):
        for G in self.G:
            an.check_params(name="grpo", G=G, batch_size=self.batch_size)
        for g in self.gamma:
            an.check_params(gamma=g)
        for lam in self.lam:
            an.check_params(lam=lam)
        for t in self.tasks:
            if t not in an.TASKS:
                raise ValueError(f"unknown task {t!r}; valid: {', '.join(an.TASKS)}")


GRIDS = {
    "full": ExplorerGrid(),
    "quick": ExplorerGrid(tasks=("corridor",), T=(1, 4, 16), G=(2, 4), gamma=(0.9, 1.0), lam=(0.0, 1.0),
                          noise=(0.0, 0.5), critic_noise=(1.0,), batch_size=8, n_batches=16),
}


def _specs(grid: ExplorerGrid) -> list[tuple[tuple, an.EstimatorSpec]]:
    """(storage key, spec) for every estimator variant of the grid."""
    out = []
    for i, g in enumerate(grid.gamma):
        out.append((("reinforce", i), an.EstimatorSpec("reinforce", gamma=g)))
    for name in ("grpo", "dr_grpo", "rloo"):
        for j, G in enumerate(grid.G):
            out.append(((name, j), an.EstimatorSpec(name, G=G)))
    for i, g in enumerate(grid.gamma):
        for k, lam in enumerate(grid.lam):
            out.append((("gae", i, k), an.EstimatorSpec("gae", gamma=g, lam=lam)))
            for c, cn in enumerate(grid.critic_noise):
                out.append((("gae_critic", i, k, c), an.EstimatorSpec("gae_critic", gamma=g, lam=lam,
                                                                       critic_noise=cn)))
    return out


def _round(x: float) -> float:
    if not math.isfinite(x) or x > SNR_CAP:
        return SNR_CAP
    return float(f"{x:.4g}")


def _empty(grid: ExplorerGrid) -> dict:
    nT, nG, ng, nl, nc = len(grid.T), len(grid.G), len(grid.gamma), len(grid.lam), len(grid.critic_noise)

    def arr(*dims):
        if not dims:
            return [None] * nT
        return [arr(*dims[1:]) for _ in range(dims[0])]

    return {"reinforce": arr(ng), "grpo": arr(nG), "dr_grpo": arr(nG), "rloo": arr(nG),
            "gae": arr(ng, nl), "gae_critic": arr(ng, nl, nc)}


def compute_explorer_data(grid: ExplorerGrid | str = "quick", progress: bool = False) -> dict:
    """Measure every estimator on every grid point; return the JSON-ready dict the page reads.

    ``data["values"][task][noise_index][metric]`` holds the per-estimator nested lists described in
    the module docstring, each innermost list running over ``grid.T``.
    """
    if isinstance(grid, str):
        grid = GRIDS[resolve_scale(grid)]
    specs = _specs(grid)
    values: dict = {}
    t0 = time.perf_counter()
    cell = 0
    for task in grid.tasks:
        values[task] = []
        for noise in grid.noise:
            per_metric = {m: _empty(grid) for m in METRICS}
            for ti, T in enumerate(grid.T):
                rows = an.measure_specs(an.make_task(task, T=T, noise=noise), [s for _, s in specs],
                                        batch_size=grid.batch_size, n_batches=grid.n_batches,
                                        seed=grid.seed + cell)
                cell += 1
                for (key, _), row in zip(specs, rows, strict=True):
                    for m in METRICS:
                        node = per_metric[m][key[0]]
                        for idx in key[1:]:
                            node = node[idx]
                        node[ti] = _round(row[m])
            values[task].append(per_metric)
            if progress:
                print(f"  {task} noise={noise}: {time.perf_counter() - t0:.1f}s", flush=True)
    return {"grid": {**asdict(grid), "tasks": list(grid.tasks)}, "metrics": list(METRICS),
            "labels": ESTIMATOR_LABELS, "values": values, "seconds": round(time.perf_counter() - t0, 1)}


def curve(data: dict, task: str, estimator: str, metric: str, *, noise: int = 0, G: int = 0, gamma: int = 0,
          lam: int = 0, critic_noise: int = 0) -> list[float]:
    """The stored curve over T for one slider state (indices into the grid), as the page looks it up."""
    d = data["values"][task][noise][metric]
    if estimator == "reinforce":
        return d["reinforce"][gamma]
    if estimator in ("grpo", "dr_grpo", "rloo"):
        return d[estimator][G]
    if estimator == "gae":
        return d["gae"][gamma][lam]
    if estimator == "gae_critic":
        return d["gae_critic"][gamma][lam][critic_noise]
    raise ValueError(f"unknown estimator {estimator!r}; valid: {', '.join(ESTIMATOR_LABELS)}")


def check_data(data: dict) -> int:
    """Every slider position the page offers has a finite number for every estimator and metric.

    Returns the number of curves checked; raises ValueError naming the first missing position.
    """
    grid = data["grid"]
    n = 0
    for task in grid["tasks"]:
        for ni in range(len(grid["noise"])):
            for metric in data["metrics"]:
                for est in ESTIMATOR_LABELS:
                    for gi in range(len(grid["G"])):
                        for ga in range(len(grid["gamma"])):
                            for li in range(len(grid["lam"])):
                                for ci in range(len(grid["critic_noise"])):
                                    c = curve(data, task, est, metric, noise=ni, G=gi, gamma=ga, lam=li,
                                              critic_noise=ci)
                                    ok = len(c) == len(grid["T"]) and all(
                                        isinstance(x, int | float) and math.isfinite(x) for x in c)
                                    if not ok:
                                        raise ValueError(
                                            f"explorer data has no complete curve for task={task} noise#{ni} "
                                            f"{metric} {est} G#{gi} gamma#{ga} lam#{li} critic#{ci}: {c}; "
                                            "regenerate it with compute_explorer_data")
                                    n += 1
    return n


def save_data(data: dict, path: str | Path, command: str | None = None) -> Path:
    """Write the data as compact JSON (with the command that made it)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if command is not None:
        data = {**data, "command": command}
    path.write_text(json.dumps(data, separators=(",", ":")))
    return path


def load_data(path: str | Path) -> dict:
    """Read a data file written by :func:`save_data`."""
    return json.loads(Path(path).read_text())


# ----------------------------------------------------------------------------------------------
# The page: HTML controls + a small SVG renderer in plain JavaScript
# ----------------------------------------------------------------------------------------------

# The pure part (no DOM): lookup and SVG drawing. Kept between markers so the tests run it in node.
JS_CORE = r"""
// --- rlx core begin ---
var RLX_COLORS = {reinforce: "#7f7f7f", grpo: "#d62728", dr_grpo: "#ff7f0e", rloo: "#9467bd",
                  gae: "#1f77b4", gae_critic: "#2ca02c"};
function rlxCurve(data, st, est) {
  var d = data.values[st.task][st.noise][st.metric];
  if (est === "reinforce") return d.reinforce[st.gamma];
  if (est === "grpo" || est === "dr_grpo" || est === "rloo") return d[est][st.G];
  if (est === "gae") return d.gae[st.gamma][st.lam];
  if (est === "gae_critic") return d.gae_critic[st.gamma][st.lam][st.crit];
  throw new Error("unknown estimator " + est);
}
function rlxFmt(v) {
  if (v === 0) return "0";
  var a = Math.abs(v);
  if (a >= 1e4 || a < 1e-3) return v.toExponential(1);
  return (+v.toPrecision(3)).toString();
}
function rlxSvg(data, st, W, H) {
  var Ts = data.grid.T, logY = st.metric !== "cosine";
  var m = {l: 62, r: 16, t: 16, b: 46}, pw = W - m.l - m.r, ph = H - m.t - m.b;
  var ests = Object.keys(data.labels).filter(function (e) { return st.show[e]; });
  var curves = ests.map(function (e) { return rlxCurve(data, st, e); });
  var lo = Infinity, hi = -Infinity;
  function ok(v) { return isFinite(v) && (!logY || v > 0); }  // on a log axis 0 means "not measurable"
  curves.forEach(function (c) { c.forEach(function (v) {
    if (!ok(v)) return;
    var y = logY ? Math.log10(v) : v; if (y < lo) lo = y; if (y > hi) hi = y; }); });
  if (!isFinite(lo)) { lo = 0; hi = 1; }
  if (logY) { lo = Math.floor(lo); hi = Math.ceil(hi); if (hi === lo) hi = lo + 1; }
  else { lo = Math.min(0, lo); hi = 1; }
  var x0 = Math.log2(Ts[0]), x1 = Math.log2(Ts[Ts.length - 1]);
  function X(T) { return m.l + (x1 === x0 ? 0.5 : (Math.log2(T) - x0) / (x1 - x0)) * pw; }
  function Y(v) { var y = logY ? Math.log10(v) : v; return m.t + (1 - (y - lo) / (hi - lo)) * ph; }
  var s = ['<svg xmlns="http://www.w3.org/2000/svg" width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + ' ' + H +
           '" font-family="sans-serif" font-size="11">'];
  s.push('<rect x="' + m.l + '" y="' + m.t + '" width="' + pw + '" height="' + ph + '" fill="none" stroke="#999"/>');
  Ts.forEach(function (T) {
    s.push('<line x1="' + X(T) + '" x2="' + X(T) + '" y1="' + (m.t + ph) + '" y2="' + (m.t + ph + 4) +
           '" stroke="#333"/>');
    s.push('<text x="' + X(T) + '" y="' + (m.t + ph + 16) + '" text-anchor="middle">' + T + '</text>');
  });
  var ticks = [];
  if (logY) { for (var e = lo; e <= hi; e++) ticks.push(e); }
  else { for (var k = 0; k <= 5; k++) ticks.push(lo + (hi - lo) * k / 5); }
  ticks.forEach(function (tk) {
    var y = m.t + (1 - (tk - lo) / (hi - lo)) * ph;
    s.push('<line x1="' + m.l + '" x2="' + (m.l + pw) + '" y1="' + y + '" y2="' + y + '" stroke="#eee"/>');
    s.push('<text x="' + (m.l - 6) + '" y="' + (y + 4) + '" text-anchor="end">' +
           (logY ? rlxFmt(Math.pow(10, tk)) : tk.toFixed(1)) + '</text>');
  });
  var names = {snr: "SNR = |E g|\u00b2 / E|g \u2212 E g|\u00b2", cosine: "E cos(g, true gradient)",
               variance: "variance E|g \u2212 E g|\u00b2"};
  s.push('<text x="' + (m.l + pw / 2) + '" y="' + (H - 8) +
         '" text-anchor="middle">horizon T (decisions per trajectory)</text>');
  s.push('<text transform="translate(14,' + (m.t + ph / 2) + ') rotate(-90)" text-anchor="middle">' +
         names[st.metric] + '</text>');
  var xs = X(Ts[st.T]);
  s.push('<line class="rlx-marker" x1="' + xs + '" x2="' + xs + '" y1="' + m.t + '" y2="' + (m.t + ph) +
         '" stroke="#444" stroke-dasharray="4,3"/>');
  ests.forEach(function (e, i) {
    var c = curves[i], d = [], pen = 'M';
    c.forEach(function (v, j) {
      if (!ok(v)) { pen = 'M'; return; }  // a gap where the value cannot be drawn
      d.push(pen + X(Ts[j]).toFixed(1) + ',' + Y(v).toFixed(1)); pen = 'L';
    });
    s.push('<path class="rlx-line" data-est="' + e + '" fill="none" stroke-width="2" stroke="' + RLX_COLORS[e] +
           '" d="' + (d.length ? d.join(' ') : 'M0,0') + '"/>');
    if (ok(c[st.T])) {
      s.push('<circle cx="' + xs + '" cy="' + Y(c[st.T]).toFixed(1) + '" r="4" fill="' + RLX_COLORS[e] + '"/>');
    }
  });
  s.push('</svg>');
  return s.join('');
}
function rlxReadout(data, st) {
  var T = data.grid.T[st.T], rows = [];
  Object.keys(data.labels).forEach(function (e) {
    if (!st.show[e]) return;
    var v = rlxCurve(data, st, e)[st.T];
    rows.push('<tr><td><span style="color:' + RLX_COLORS[e] + '">\u25a0</span> ' + data.labels[e] +
              '</td><td style="text-align:right">' + rlxFmt(v) + '</td></tr>');
  });
  return '<table style="font-size:12px"><tr><th>at T = ' + T + '</th><th>' + st.metric + '</th></tr>' +
         rows.join('') + '</table>';
}
// --- rlx core end ---
"""

JS_DOM = r"""
(function () {
  var root = document.getElementById("__ID__");
  var data = JSON.parse(root.querySelector("script.rlx-data").textContent);
  var st = {task: data.grid.tasks[0], noise: 0, metric: "snr", T: __T0__, G: __G0__, gamma: __GA0__,
            lam: __L0__, crit: __C0__, show: {}};
  Object.keys(data.labels).forEach(function (e) { st.show[e] = __SHOW__.indexOf(e) >= 0; });
  function draw() {
    root.querySelector(".rlx-plot").innerHTML = rlxSvg(data, st, __W__, __H__);
    root.querySelector(".rlx-readout").innerHTML = rlxReadout(data, st);
    root.querySelectorAll("input[type=range]").forEach(function (el) {
      var vals = data.grid[el.dataset.grid];
      el.parentNode.querySelector("output").textContent = vals[+el.value];
    });
  }
  root.querySelectorAll("input[type=range]").forEach(function (el) {
    el.addEventListener("input", function () { st[el.dataset.key] = +el.value; draw(); });
  });
  root.querySelectorAll("select").forEach(function (el) {
    el.addEventListener("change", function () { st[el.dataset.key] = el.value; draw(); });
  });
  root.querySelectorAll("input[type=checkbox]").forEach(function (el) {
    el.addEventListener("change", function () { st.show[el.value] = el.checked; draw(); });
  });
  draw();
})();
"""

_SLIDERS = (("T", "T", "horizon T (marker)"), ("G", "G", "group size G"), ("gamma", "gamma", "discount \u03b3"),
            ("lam", "lam", "GAE \u03bb"), ("noise", "noise", "reward noise"),
            ("crit", "critic_noise", "critic error"))


def _index(values, wanted) -> int:
    return min(range(len(values)), key=lambda i: abs(values[i] - wanted))


def explorer_html(data: dict, *, width: int = 640, height: int = 380, element_id: str | None = None,
                  show: tuple[str, ...] = ("grpo", "rloo", "gae", "gae_critic")) -> str:
    """One self-contained HTML fragment (data + controls + script) for a notebook output or a page."""
    grid = data["grid"]
    eid = element_id or f"rlx-{uuid.uuid4().hex[:8]}"
    init = {"T": _index(grid["T"], 64), "G": _index(grid["G"], 8), "gamma": _index(grid["gamma"], 1.0),
            "lam": _index(grid["lam"], 0.95), "crit": _index(grid["critic_noise"], 1.0), "noise": 0}
    sliders = []
    for key, gkey, label in _SLIDERS:
        n = len(grid[gkey])
        sliders.append(
            f'<label style="display:block;margin:2px 0">{label}: '
            f'<input type="range" min="0" max="{n - 1}" step="1" value="{init[key]}" data-key="{key}" '
            f'data-grid="{gkey}" style="vertical-align:middle;width:140px"> <output></output></label>')
    tasks = "".join(f'<option value="{t}">{t}</option>' for t in grid["tasks"])
    metrics = "".join(f'<option value="{m}">{m}</option>' for m in data["metrics"])
    checks = "".join(
        f'<label style="display:block"><input type="checkbox" value="{e}"{" checked" if e in show else ""}> '
        f'{lab}</label>' for e, lab in data["labels"].items())
    payload = json.dumps({k: data[k] for k in ("grid", "metrics", "labels", "values")}, separators=(",", ":"))
    payload = payload.replace("</", "<\\/")  # never close the script tag early
    js = (JS_DOM.replace("__ID__", eid).replace("__W__", str(width)).replace("__H__", str(height))
          .replace("__T0__", str(init["T"])).replace("__G0__", str(init["G"]))
          .replace("__GA0__", str(init["gamma"])).replace("__L0__", str(init["lam"]))
          .replace("__C0__", str(init["crit"])).replace("__SHOW__", json.dumps(list(show))))
    return (
        f'<div id="{eid}" class="rlx-explorer" style="display:flex;flex-wrap:wrap;gap:12px;'
        f'font-family:sans-serif;font-size:13px">'
        f'<script type="application/json" class="rlx-data">{payload}</script>'
        f'<div><div class="rlx-plot" style="width:{width}px;height:{height}px"></div></div>'
        f'<div style="min-width:240px">'
        f'<label>task <select data-key="task">{tasks}</select></label> '
        f'<label>metric <select data-key="metric">{metrics}</select></label>'
        f'{"".join(sliders)}<div style="margin-top:4px">{checks}</div>'
        f'<div class="rlx-readout" style="margin-top:6px"></div></div>'
        f'<script>{JS_CORE}{js}</script></div>'
    )


def show(data: dict, **kwargs):
    """Display the static explorer in a notebook (an ``IPython.display.HTML`` object)."""
    from IPython.display import HTML

    return HTML(explorer_html(data, **kwargs))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m rltutor.explorer",
                                description="Precompute the static variance-vs-horizon explorer's data.")
    p.add_argument("--scale", choices=("quick", "full"), default=None, help="grid size (default: RLTUTOR_QUICK)")
    p.add_argument("--out", default="notebooks/data/horizon/explorer.json", help="data file to write")
    p.add_argument("--html", default=None, help="also write a standalone HTML page here")
    p.add_argument("--threads", type=int, default=1, help="torch threads (1: leave the other cores free)")
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    scale = resolve_scale(a.scale)
    data = compute_explorer_data(GRIDS[scale], progress=True)
    n = check_data(data)
    cmd = f"python -m rltutor.explorer --scale {scale} --out {a.out}"
    path = save_data(data, a.out, command=cmd)
    print(f"wrote {path} ({path.stat().st_size / 1e3:.0f} kB, {n} curves, {data['seconds']} s)")
    if a.html:
        Path(a.html).write_text("<!doctype html><meta charset='utf-8'><title>variance vs horizon</title>"
                                + explorer_html(load_data(path)))
        print(f"wrote {a.html}")


if __name__ == "__main__":
    main()
