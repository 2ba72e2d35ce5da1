"""Speed of the variance-vs-horizon measurements (chapter 04): can the explorer answer live?

Goals (issue 5): a full curve, 20 horizons x 3 estimators, in under 1 s; one slider update in under
100 ms. Measured on this machine, median of ``--repeats`` runs:

* ``curve`` (fresh samples each time): :func:`rltutor.experiments.variance.measure_specs` at 20 horizons from 1
  to 256 for GRPO, GAE (true V) and GAE (noisy critic), 64 batches of 32 trajectories per point;
  with the vectorized discounted sums (``fast``) and with the loop-over-T functions of
  :mod:`rltutor.advantages` (``library loops``).
* ``live update``: what :func:`rltutor.views.widgets.horizon_explorer` recomputes when a knob moves (the
  default 9 horizons x 4 estimators): with fresh trajectories (a task seen for the first time: nothing
  cached) and with the cached ones (G, gamma, lambda or the critic's error moved); and one point (6
  estimators at T = 64).
* ``slider move, computed and drawn``: what a hand on a control of the live explorer waits for, end to end:
  :func:`~rltutor.views.widgets.explorer_frame` plus the redraw to PNG, the median over a sweep of the
  control (lambda 0 to 1 in steps of 0.05: trajectories reused; reward noise 0 to 2 in steps of 0.1: the
  same trajectories and noise draws, new rewards; the task menu through the four presets three times, each
  move with every cache cleared but the figure's: trajectories sampled afresh), for the explorer's
  :class:`~rltutor.views.widgets.ExplorerFigure` (one figure, blitted) and, side by side in the same run, for
  a fresh figure per move (what the explorer did before). Goals (issue 23): 100 ms with the trajectories
  reused, 150 ms where the samples change (noise, task).
* ``static slider update``: what the kernel-free page does when a slider moves: look the curves up
  and draw the SVG (:data:`rltutor.experiments.explorer_data.JS_CORE`, timed in node when node is installed).

Run: ``python benchmarks/variance.py`` (prints a Markdown table for benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from rltutor.experiments import explorer_data as ex
from rltutor.experiments import variance as an
from rltutor.utils import machine_info
from rltutor.views import explorer_html as eh
from rltutor.views import widgets


def _median_time(fn, repeats: int, cold: bool = True, before=None) -> float:
    """Median wall time of fn(); ``cold`` empties the caches first (fresh samples, nothing memoized);
    ``before`` runs untimed before each call (e.g. to fill the cache with the old slider state)."""
    fn()  # warm-up (imports, allocator)
    ts = []
    for _ in range(repeats):
        if cold:  # forget sampled trajectories and memoized results
            an.clear_caches()
        if before is not None:
            before()
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def _curve(fast: bool):
    horizons = np.unique(np.round(np.geomspace(1, 256, 24)).astype(int))[:20]
    assert len(horizons) == 20
    specs = [
        an.EstimatorSpec("grpo", G=8),
        an.EstimatorSpec("gae", lam=0.95),
        an.EstimatorSpec("gae_critic", lam=0.95, critic_noise=1.0),
    ]

    def run():
        for i, T in enumerate(horizons):
            an.measure_specs(an.make_chain("corridor", T=int(T)), specs, batch_size=32, n_batches=64, seed=i, fast=fast)

    return run


def _slider_sweeps(repeats: int) -> list[tuple[str, float, float]]:
    """Median seconds per slider move over whole sweeps of one slider, computed and drawn to PNG."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def fresh_figure(d):  # the explorer before issue 23: a new pyplot figure per move
        fig, ax = plt.subplots(figsize=(7, 4))
        widgets.plot_explorer(d, "snr", 64, ax=ax)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", bbox_inches="tight")
        plt.close(fig)

    tasks = list(an.CHAIN_TASKS)
    sweeps = {  # name -> the moves, and whether each move starts cold (nothing cached but the figure)
        "reused (lambda 0..1)": ([dict(lam=round(0.05 * i, 2)) for i in range(21)], False),
        "kept, rewards recomputed (noise 0..2)": ([dict(noise=round(0.1 * i, 1)) for i in range(21)], False),
        "resampled (task, each preset three times)": ([dict(task=t) for t in tasks * 3 + tasks[:1]], True),
    }
    rows = []
    for sweep, (moves, cold) in sweeps.items():
        for how in ("one figure, blitted", "fresh figure per move"):
            times, full = [], 0
            for _ in range(max(1, repeats // 3)):
                an.clear_caches()
                live = widgets.ExplorerFigure()
                for i, move in enumerate(moves):
                    if cold:
                        an.clear_caches()  # a task picked for the first time: its trajectories are sampled
                    t0 = time.perf_counter()
                    d = widgets.explorer_frame(**{"task": "corridor", **move})
                    if how == "fresh figure per move":
                        fresh_figure(d)
                    else:
                        live.update(d, "snr", 64)
                        live.png()
                    if i:  # the first move of a sweep also samples and draws the axes for the first time
                        times.append(time.perf_counter() - t0)
                full += live.full_draws
            goal = 0.1 if sweep.startswith("reused") else 0.15  # issue 23: 150 ms where the samples change
            note = f", {full} full redraws" if how.startswith("one") else ""
            name = f"slider move, computed and drawn, trajectories {sweep}: {how}{note}"
            rows.append((name, statistics.median(times), goal))
    return rows


def _node_time(repeats: int) -> float | None:
    if shutil.which("node") is None:
        return None
    data = ex.compute_explorer_data(ex.GRIDS["quick"])
    probe = r"""
const data = JSON.parse(require('fs').readFileSync(process.argv[2], 'utf8'));
const show = {}; Object.keys(data.labels).forEach(e => show[e] = true);
const st = {task: data.grid.tasks[0], noise: 0, metric: 'snr', T: 1, G: 0, gamma: 0, lam: 0, crit: 0, show};
const n = 2000, t0 = process.hrtime.bigint();
for (let i = 0; i < n; i++) { st.lam = i % data.grid.lam.length; rlxSvg(data, st, 640, 380); rlxReadout(data, st); }
console.log(JSON.stringify(Number(process.hrtime.bigint() - t0) / 1e9 / n));
"""
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "d.json").write_text(json.dumps(data))
        (Path(d) / "p.js").write_text(eh.JS_CORE + probe)
        out = subprocess.run(
            ["node", str(Path(d) / "p.js"), str(Path(d) / "d.json")], capture_output=True, text=True, timeout=120
        )
    return float(out.stdout.strip()) if out.returncode == 0 else None


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=1, help="torch threads (1 is fastest on a busy 2-core CPU)")
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    rows = []
    rows.append(("curve: 20 horizons x 3 estimators (fast)", _median_time(_curve(True), a.repeats), 1.0))
    rows.append(("curve: 20 horizons x 3 estimators (library loops)", _median_time(_curve(False), a.repeats), 1.0))
    rows.append(
        (
            "live update, trajectories sampled (a task seen for the first time): 9 horizons x 4 estimators",
            _median_time(lambda: widgets.explorer_frame("corridor", lam=0.5), a.repeats),
            0.1,
        )
    )
    rows.append(
        (
            "live update, trajectories reused (G, gamma, lambda or critic moved): 9 horizons x 4 estimators",
            _median_time(
                lambda: widgets.explorer_frame("corridor", lam=0.5),
                a.repeats,
                before=lambda: widgets.explorer_frame("corridor", lam=0.95),
            ),
            0.1,
        )
    )
    rows.append(
        (
            "live single point: 6 estimators at T = 64",
            _median_time(lambda: an.measure("corridor", T=64, n_batches=64), a.repeats),
            0.1,
        )
    )
    rows += _slider_sweeps(a.repeats)
    js = _node_time(a.repeats)
    if js is not None:
        rows.append(("static slider update: SVG redraw in JavaScript (node)", js, 0.1))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"{machine_info()}; load average {load:.1f} at the end, {torch.get_num_threads()} torch thread(s), "
        f"python {sys.version.split()[0]}"
    )
    print()
    print("| measurement | median time | goal | met |")
    print("|---|---:|---:|:-:|")
    for name, t, goal in rows:
        shown = f"{t * 1e3:.1f} ms" if t < 1 else f"{t:.2f} s"
        print(f"| {name} | {shown} | {goal * 1e3:.0f} ms | {'yes' if t < goal else 'no'} |")


if __name__ == "__main__":
    main()
