"""The labs' one verdict system: a contrast over seeds and its verdict, for every lab's pre-stated tests.

A lab stores one number per run (a metric averaged over the run's last updates); an *arm* is the runs of
one setting over seeds, and a contrast is a weighted sum of arm means, ``sum_i w_i mean(x_i)`` (``1, -1``:
a difference; ``1, -1, -1, 1``: an interaction). :func:`contrast` gives its estimate and the half-width
of its 95% confidence interval (Welch-Satterthwaite degrees of freedom: the arms may differ in spread
and size); :func:`verdict` reads the interval: *confirmed* above 0, *refuted* below 0, *not visible*
where it holds 0, and then its half-width is about the smallest effect the runs could have seen.
:func:`verdict_row` is one row of a verdict table (:data:`TABLE_COLUMNS`), :func:`paired_row` the same for
arms that share their seeds (the contrast taken per seed first), :func:`verdict_table` the table.

The sweep of chapter 05 (:func:`rltutor.experiments.sweep.verdicts`) checks the paper's findings with
Welch's t statistic instead (:func:`welch_t`): a finding that one arm is ahead is reproduced where
``t > T_RULE``, one that two arms are tied where ``|t| < T_RULE`` (:func:`ahead`, :func:`tied`).

Used by :mod:`rltutor.experiments.sweep` (chapter 05), :mod:`rltutor.experiments.lm` (chapters 06-10) and
:mod:`rltutor.experiments.agents` (chapter 11); their runs go through :mod:`rltutor.experiments.runs`.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from rltutor.utils import t_quantile

__all__ = [
    "VERDICTS",
    "TABLE_COLUMNS",
    "T_RULE",
    "contrast",
    "verdict",
    "verdict_row",
    "paired_row",
    "verdict_table",
    "describe",
    "welch_t",
    "ahead",
    "tied",
]

VERDICTS = ("confirmed", "refuted", "not visible")
TABLE_COLUMNS = ("contrast", "metric", "estimate", "ci_low", "ci_high", "seeds", "verdict")
"""The columns of a verdict table (:func:`verdict_row`, :func:`verdict_table`)."""
T_RULE = 2.0
"""The sweep's rule (:func:`ahead`, :func:`tied`): a Welch t beyond 2 counts, one within 2 is a tie."""


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


def paired_row(name: str, metric: str, arms: list[tuple[float, pd.Series]]) -> dict:
    """A verdict row for a contrast of arms that share their seeds (each ``x_i`` indexed by seed): the
    contrast per seed (every arm of a seed starts from the same warm start), then a t interval over the
    seeds both arms have; ``seeds`` counts each arm's runs."""
    common = sorted(set.intersection(*(set(x.dropna().index) for _, x in arms)))
    per_seed = sum(w * x.loc[common] for w, x in arms)
    row = verdict_row(name, metric, [(1.0, per_seed)])
    row["seeds"] = "/".join(str(x.notna().sum()) for _, x in arms)
    return row


def verdict_table(rows: list[dict]) -> pd.DataFrame:
    """Verdict rows as a table with the columns :data:`TABLE_COLUMNS` (also when there are none)."""
    return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))


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


def welch_t(a: np.ndarray, b: np.ndarray) -> float:
    """Welch's t statistic of mean(a) - mean(b) (``inf`` or 0 where both arms have no spread)."""
    se = math.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
    return (a.mean() - b.mean()) / se if se > 0 else (math.inf if a.mean() > b.mean() else 0.0)


def ahead(t: float) -> bool:
    """The sweep's rule for "ahead", "better", "best": Welch's ``t > T_RULE``."""
    return bool(t > T_RULE)


def tied(t: float) -> bool:
    """The sweep's rule for "tied": ``|t| < T_RULE``."""
    return bool(abs(t) < T_RULE)
