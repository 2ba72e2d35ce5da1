"""The variance-vs-horizon explorer without a kernel: precomputed on a grid, drawn in the browser.

Chapter: *Variance vs horizon* (``notebooks/04_variance_horizon.ipynb``).

The live explorer (:mod:`rltutor.views.widgets`) needs a Python kernel. The published book has none,
so this module precomputes :mod:`rltutor.experiments.variance` on every slider position of a grid
(:class:`ExplorerGrid`); :mod:`rltutor.views.explorer_html` turns the data into one self-contained
piece of HTML: the numbers as JSON, a few range sliders, and about two hundred lines of JavaScript
that draw an SVG line chart. No CDN, no plotting library, works offline; moving a slider only looks
numbers up.

What is stored (per task, reward-noise level and metric; every curve runs over the horizons T):

* ``reinforce[gamma]``, ``grpo[G]``, ``dr_grpo[G]``, ``rloo[G]``, ``gae[gamma][lambda]``,
  ``gae_critic[gamma][lambda][critic_noise]``: an estimator is stored only along the knobs it reads
  (GRPO ignores gamma and lambda; REINFORCE ignores G), which keeps the page small.
* All estimators of one (task, noise, T) cell are measured on the same sampled trajectories, and every
  batch has ``batch_size`` trajectories whatever G is (G groups of batch_size / G).
* Every SNR is measured to a stated precision (:func:`rltutor.experiments.variance.measure_to_precision`):
  batches are drawn until its standard error is at most ``rel_se`` (5%) of it, and beside each curve the
  data keep ``snr_se`` (drawn as a band) and ``batches``; :func:`check_data` refuses a point above 5%.
  ``data["check"]`` holds the corridor's T = 1 cell measured the plain way with 4,000 batches.

Regenerate the committed data file with the command stored inside it (``data["command"]``), e.g.
``python -m rltutor.experiments.explorer_data --scale full --out rltutor/data/horizon/explorer.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from rltutor.experiments import variance as an
from rltutor.utils import resolve_scale

__all__ = [
    "ExplorerGrid",
    "GRIDS",
    "ESTIMATOR_LABELS",
    "METRICS",
    "compute_explorer_data",
    "check_data",
    "precision_summary",
    "precision_check",
    "save_data",
    "load_data",
    "curve",
    "main",
]

METRICS = ("snr", "cosine", "variance")
STORED = (*METRICS, "snr_se", "batches")
"""What each curve stores: the metrics the page offers, the SNR's Monte-Carlo SE and the batches measured."""
ESTIMATOR_LABELS = {
    "reinforce": "REINFORCE (no baseline)",
    "grpo": "GRPO (mean/std of group)",
    "dr_grpo": "GRPO without std (Dr.GRPO)",
    "rloo": "RLOO",
    "gae": "GAE, true V",
    "gae_critic": "GAE, noisy critic",
}
SNR_CAP = 1e6  # an SNR above this (or infinite: a zero-variance estimate) is stored as the cap
MAX_REL_SE = 0.05
"""The largest relative Monte-Carlo error (SE / SNR) :func:`check_data` accepts for a stored SNR."""
CHECK_BATCHES = 4000
"""Batches of the plain Monte-Carlo measurement stored beside the grid as a check (``data["check"]``)."""


@dataclass(frozen=True)
class ExplorerGrid:
    """The slider positions the static explorer offers (every combination is precomputed)."""

    tasks: tuple[str, ...] = ("corridor", "tokens", "corridor_dense")
    """task presets of :data:`rltutor.experiments.variance.CHAIN_TASKS`"""
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
    rel_se: float = MAX_REL_SE
    """the SNR's relative Monte-Carlo error each point is measured to (SE / SNR)"""
    min_batches: int = 256
    """Monte-Carlo batches per point at least (more until ``rel_se`` is reached)"""
    step: int = 64
    """batches drawn at a time while a point is short of ``rel_se``"""
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
            if t not in an.CHAIN_TASKS:
                raise ValueError(f"unknown task {t!r}; valid: {', '.join(an.CHAIN_TASKS)}")


GRIDS = {
    "full": ExplorerGrid(),
    "quick": ExplorerGrid(
        tasks=("corridor",),
        T=(1, 4, 16),
        G=(2, 4),
        gamma=(0.9, 1.0),
        lam=(0.0, 1.0),
        noise=(0.0, 0.5),
        critic_noise=(1.0,),
        batch_size=8,
        min_batches=64,
        step=32,
    ),
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
                out.append((("gae_critic", i, k, c), an.EstimatorSpec("gae_critic", gamma=g, lam=lam, critic_noise=cn)))
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

    return {
        "reinforce": arr(ng),
        "grpo": arr(nG),
        "dr_grpo": arr(nG),
        "rloo": arr(nG),
        "gae": arr(ng, nl),
        "gae_critic": arr(ng, nl, nc),
    }


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
            per_metric = {m: _empty(grid) for m in STORED}
            for ti, T in enumerate(grid.T):
                rows = an.measure_to_precision(
                    an.make_chain(task, T=T, noise=noise),
                    [s for _, s in specs],
                    batch_size=grid.batch_size,
                    rel_se=grid.rel_se,
                    min_batches=grid.min_batches,
                    step=grid.step,
                    seed=grid.seed + cell,
                )
                cell += 1
                for (key, _), row in zip(specs, rows, strict=True):
                    for m in STORED:
                        node = per_metric[m][key[0]]
                        for idx in key[1:]:
                            node = node[idx]
                        node[ti] = row["n_batches"] if m == "batches" else _round(row[m])
            values[task].append(per_metric)
            if progress:
                print(f"  {task} noise={noise}: {time.perf_counter() - t0:.1f}s", flush=True)
    data = {
        "grid": {**asdict(grid), "tasks": list(grid.tasks)},
        "metrics": list(METRICS),
        "labels": ESTIMATOR_LABELS,
        "values": values,
    }
    if "corridor" in grid.tasks and 1 in grid.T and 0.0 in grid.noise:
        data["check"] = precision_check(data, grid)
    data["seconds"] = round(time.perf_counter() - t0, 1)
    return data


def precision_check(data: dict, grid: ExplorerGrid, n_batches: int = CHECK_BATCHES) -> dict:
    """The corridor at T = 1 (no reward noise) measured the plain way, :data:`CHECK_BATCHES` batches, beside
    the stored cell: GRPO (G = 8) and GAE (gamma = 1, lambda = 0.95; at T = 1 every GAE is the same).

    With 96 batches per cell the stored GRPO SNR once came out above GAE's, the reverse of a precise
    measurement; the page shows both here so a reader sees the stored ordering is the measured one.
    """
    task = an.make_chain("corridor", T=1, noise=0.0)
    G, ga, la = grid.G.index(8) if 8 in grid.G else 0, len(grid.gamma) - 1, len(grid.lam) - 1
    specs = {
        "grpo": an.EstimatorSpec("grpo", G=grid.G[G]),
        "gae": an.EstimatorSpec("gae", gamma=grid.gamma[ga], lam=grid.lam[la]),
    }
    rows = an.measure_specs(task, list(specs.values()), batch_size=grid.batch_size, n_batches=n_batches, seed=987_654)
    ti, ni = grid.T.index(1), grid.noise.index(0.0)
    out = {"task": "corridor", "T": 1, "noise": 0.0, "n_batches": n_batches, "estimators": {}}
    for (name, spec), row in zip(specs.items(), rows, strict=True):
        idx = dict(G=G, gamma=ga, lam=la)
        out["estimators"][name] = {
            "spec": {k: v for k, v in asdict(spec).items() if k != "label"},
            "snr": _round(row["snr"]),
            "snr_se": _round(row["snr_se"]),
            "stored_snr": curve(data, "corridor", name, "snr", noise=ni, **idx)[ti],
            "stored_snr_se": curve(data, "corridor", name, "snr_se", noise=ni, **idx)[ti],
        }
    return out


def curve(
    data: dict,
    task: str,
    estimator: str,
    metric: str,
    *,
    noise: int = 0,
    G: int = 0,
    gamma: int = 0,
    lam: int = 0,
    critic_noise: int = 0,
) -> list[float]:
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


def check_data(data: dict, max_rel_se: float = MAX_REL_SE) -> int:
    """Every slider position the page offers has a finite number for every estimator and metric, and
    every stored SNR a relative Monte-Carlo error SE / SNR of at most ``max_rel_se``.

    Returns the number of curves checked; raises ValueError naming the first bad position.
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
                                    c = curve(
                                        data, task, est, metric, noise=ni, G=gi, gamma=ga, lam=li, critic_noise=ci
                                    )
                                    ok = len(c) == len(grid["T"]) and all(
                                        isinstance(x, int | float) and math.isfinite(x) for x in c
                                    )
                                    if not ok:
                                        raise ValueError(
                                            f"explorer data has no complete curve for task={task} noise#{ni} "
                                            f"{metric} {est} G#{gi} gamma#{ga} lam#{li} critic#{ci}: {c}; "
                                            "regenerate it with compute_explorer_data"
                                        )
                                    if metric == "snr":
                                        _check_precision(data, task, est, ni, gi, ga, li, ci, c, max_rel_se)
                                    n += 1
    return n


def _check_precision(data, task, est, ni, gi, ga, li, ci, snr, max_rel_se) -> None:
    """Refuse a stored SNR whose relative Monte-Carlo error exceeds ``max_rel_se`` (or that has none)."""
    at = dict(noise=ni, G=gi, gamma=ga, lam=li, critic_noise=ci)
    if "snr_se" not in data["values"][task][ni]:
        raise ValueError(
            f"explorer data for task={task} noise#{ni} stores no snr_se (Monte-Carlo error); "
            "regenerate it with compute_explorer_data"
        )
    se = curve(data, task, est, "snr_se", **at)
    for ti, (v, e) in enumerate(zip(snr, se, strict=True)):
        rel = 0.0 if v >= SNR_CAP and e == 0 else (e / v if v > 0 else float("inf"))
        if not rel <= max_rel_se * (1 + 1e-3):  # 1e-3: both numbers are stored to 4 digits
            raise ValueError(
                f"explorer SNR of {est} at task={task} noise#{ni} G#{gi} gamma#{ga} lam#{li} critic#{ci} "
                f"T#{ti} is {v} +- {e} (relative error {rel:.3f} > {max_rel_se}); measure it to precision "
                "with a larger max_batches in rltutor.experiments.variance.measure_to_precision"
            )


def _leaves(node):
    """The numbers of a nested list of curves, in order."""
    if isinstance(node, list):
        for x in node:
            yield from _leaves(x)
    else:
        yield node


def precision_summary(data: dict) -> dict:
    """How precise the stored SNRs are: the largest relative Monte-Carlo error SE / SNR over every stored
    point (a zero-variance point, stored as the cap with SE 0, counts 0) and the batches the points used."""
    rels, batches = [], []
    for per_noise in data["values"].values():
        for per in per_noise:
            for est in ESTIMATOR_LABELS:
                for v, e in zip(_leaves(per["snr"][est]), _leaves(per["snr_se"][est]), strict=True):
                    rels.append(0.0 if v >= SNR_CAP and e == 0 else e / v if v > 0 else math.inf)
                batches += list(_leaves(per["batches"][est]))
    batches.sort()
    return {
        "points": len(rels),
        "max_rel_se": max(rels),
        "min_batches": batches[0],
        "median_batches": batches[len(batches) // 2],
        "max_batches": batches[-1],
        "total_batches": sum(batches),
    }


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
def main(argv=None) -> None:
    p = argparse.ArgumentParser(
        prog="python -m rltutor.experiments.explorer_data",
        description="Precompute the static variance-vs-horizon explorer's data.",
    )
    p.add_argument("--scale", choices=("quick", "full"), default=None, help="grid size (default: RLTUTOR_QUICK)")
    p.add_argument("--out", default="rltutor/data/horizon/explorer.json", help="data file to write")
    p.add_argument("--threads", type=int, default=1, help="torch threads (1: leave the other cores free)")
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    scale = resolve_scale(a.scale)
    data = compute_explorer_data(GRIDS[scale], progress=True)
    n = check_data(data)
    cmd = f"python -m rltutor.experiments.explorer_data --scale {scale} --out {a.out}"
    path = save_data(data, a.out, command=cmd)
    print(f"wrote {path} ({path.stat().st_size / 1e3:.0f} kB, {n} curves, {data['seconds']} s)")


if __name__ == "__main__":
    main()
