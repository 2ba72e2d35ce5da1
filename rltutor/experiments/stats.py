"""The statistics the labs' pre-stated tests share: a Welch contrast over seeds and its verdict.

A lab stores one number per run (a metric averaged over the run's last updates); an *arm* is the runs of
one setting over seeds, and a contrast is a weighted sum of arm means, ``sum_i w_i mean(x_i)`` (``1, -1``:
a difference; ``1, -1, -1, 1``: an interaction). :func:`contrast` gives its estimate and the half-width
of its 95% confidence interval (Welch-Satterthwaite degrees of freedom: the arms may differ in spread
and size); :func:`verdict` reads the interval: *confirmed* above 0, *refuted* below 0, *not visible*
where it holds 0, and then its half-width is about the smallest effect the runs could have seen.

Used by :mod:`rltutor.experiments.agents` (chapter 11) and :mod:`rltutor.experiments.lm` (chapters 06-10),
which also share :func:`run_all` (independent runs over a process pool) and :func:`store_records` (a lab's
records as CSV with, beside them, the command that made them).
"""

from __future__ import annotations

import math
import os
import shlex
from concurrent.futures import ProcessPoolExecutor

import pandas as pd

from rltutor.utils import t_quantile

__all__ = ["contrast", "verdict", "verdict_row", "describe", "run_all", "store_records"]

VERDICTS = ("confirmed", "refuted", "not visible")


def contrast(arms: list[tuple[float, pd.Series]]) -> tuple[float, float]:
    """A linear contrast sum_i w_i mean(x_i) of independent arms ``[(w_i, x_i), ...]``: its estimate and
    the half-width of its 95% confidence interval (Welch-Satterthwaite degrees of freedom). Each arm needs
    at least 2 values."""
    for _, x in arms:
        if len(x) < 2:
            raise ValueError(f"each arm of a contrast needs at least 2 runs (seeds), got {len(x)}")
    est = sum(w * x.mean() for w, x in arms)
    terms = [w * w * x.var(ddof=1) / len(x) for w, x in arms]
    se2 = sum(terms)
    if se2 == 0:
        return float(est), 0.0
    df = se2 * se2 / sum(t * t / (len(x) - 1) for t, (_, x) in zip(terms, arms, strict=True) if t > 0)
    return float(est), float(t_quantile(max(2, round(df) + 1)) * math.sqrt(se2))


def verdict(estimate: float, half: float) -> str:
    """``"confirmed"`` if the interval ``estimate +- half`` lies above 0, ``"refuted"`` if below, else
    ``"not visible"``."""
    if estimate - half > 0:
        return "confirmed"
    if estimate + half < 0:
        return "refuted"
    return "not visible"


def verdict_row(name: str, metric: str, arms: list[tuple[float, pd.Series]]) -> dict:
    """One row of a verdict table: the contrast's name, the metric, the estimate, its 95% interval, the seeds
    per arm (``"5/5"``) and the verdict."""
    est, half = contrast(arms)
    return {
        "contrast": name,
        "metric": metric,
        "estimate": est,
        "ci_low": est - half,
        "ci_high": est + half,
        "seeds": "/".join(str(len(x)) for _, x in arms),
        "verdict": verdict(est, half),
    }


def describe(table: pd.DataFrame, digits: int = 3) -> list[str]:
    """Each row of a verdict table as a sentence: the contrast, its estimate and interval, and the verdict;
    where the interval holds 0, the smallest effect the runs could have detected (its half-width)."""
    out = []
    for r in table.itertuples():
        half = (r.ci_high - r.ci_low) / 2
        line = (
            f"{r.contrast} ({r.metric}): {r.estimate:+.{digits}f}, 95% interval "
            f"[{r.ci_low:+.{digits}f}, {r.ci_high:+.{digits}f}] over {r.seeds} seeds: {r.verdict}"
        )
        if r.verdict == "not visible":
            line += f"; an effect smaller than about {half:.{digits}f} could not have been seen"
        out.append(line)
    return out


def store_records(df: pd.DataFrame, out: str, module: str, argv: list[str]) -> str:
    """Write ``df`` to ``out`` (CSV, 5 significant digits) and ``python -m MODULE ARGV`` to ``out``'s ``.cmd``
    beside it, so that a stored result names the command that reproduces it. Returns the command."""
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    df.to_csv(out, index=False, float_format="%.5g")
    cmd = f"python -m {module} " + " ".join(shlex.quote(a) for a in argv)
    with open(os.path.splitext(out)[0] + ".cmd", "w") as f:
        f.write(cmd + "\n")
    return cmd


def run_all(run, jobs: list, workers: int | None, chunksize: int = 1) -> pd.DataFrame:
    """``run(job)`` for every job, ``workers`` processes at a time (default: the CPU count; 1: in this
    process), in order, a worker taking ``chunksize`` consecutive jobs at once; the frames concatenated."""
    workers = workers or os.cpu_count() or 1
    if workers == 1:
        frames = [run(j) for j in jobs]
    else:
        with ProcessPoolExecutor(workers) as pool:
            frames = list(pool.map(run, jobs, chunksize=chunksize))
    return pd.concat(frames, ignore_index=True)
