"""The statistics the labs' pre-stated tests share: a Welch contrast over seeds and the verdict it allows.

A lab stores one number per run (a metric averaged over the run's last updates); an *arm* is the runs of
one setting over seeds, and a contrast is a weighted sum of arm means, theta = sum_i w_i mean(x_i) (``1, -1``:
a difference; ``1, -1, -1, 1``: an interaction). :func:`contrast_stats` gives its estimate, standard error
and Welch-Satterthwaite degrees of freedom (the arms may differ in spread and size). A pre-stated test names
its *smallest effect of interest* delta, in the metric's units, before its runs. A test has one of four
outcomes (:data:`VERDICTS`), at level alpha = 0.05 after Holm's correction across the chapter's family:

* *confirmed*: theta > 0 (two-sided t test; uncorrected, the 95% interval lies above 0);
* *refuted*: theta < 0 (the interval lies below 0);
* *equivalent*: no effect as large as delta, ``|theta| < delta`` (two one-sided tests, TOST, each at alpha/2,
  so that uncorrected it says: the 95% interval lies inside (-delta, +delta));
* *undecided*: none of these; :func:`detectable_effect` then says which effect the runs would have found
  four times in five (80% power).

:func:`verdict_row` computes one test, :func:`paired_row` the same for arms that share their seeds (the
contrast taken per seed first), :func:`verdict_table` decides a chapter's family of them together
(:func:`decide`, with :func:`holm`) and :func:`describe` writes each as a sentence. :func:`seeds_for_power`
is the power analysis a pilot feeds: the seeds needed for 80% power at delta, given the spread of the
contrast per seed. :func:`training_gains` is what every verdict is shown beside: each arm's gain over its own
training, so that an arm that did not learn is seen and its contrasts are not read.

The sweep of chapter 05 (:func:`rltutor.experiments.sweep.verdicts`) decides the paper's findings with the
same rows (its arms are separate runs, so they are not paired) and the same correction.

Used by :mod:`rltutor.experiments.sweep` (chapter 05), :mod:`rltutor.experiments.lm` (chapters 06-10) and
:mod:`rltutor.experiments.agents` (chapter 11); their runs go through :mod:`rltutor.experiments.runs`.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import pandas as pd

__all__ = [
    "contrast",
    "contrast_stats",
    "verdict",
    "verdict_row",
    "paired_row",
    "verdict_table",
    "holm",
    "decide",
    "describe",
    "detectable_effect",
    "seeds_for_power",
    "training_gains",
    "t_cdf",
    "t_ppf",
    "describe_gains",
]

VERDICTS = ("confirmed", "refuted", "equivalent", "undecided")
ALPHA = 0.05  # the level of every pre-stated test, after Holm's correction across a chapter's family
POWER = 0.8  # the power a detectable effect and a power analysis are stated at
ROW_COLUMNS = (
    "contrast",
    "metric",
    "estimate",
    "ci_low",
    "ci_high",
    "se",
    "df",
    "seeds",
    "delta",
    "p",
    "p_equiv",
    "detectable",
    "verdict",
)
"""The columns of :func:`verdict_row`."""
TABLE_COLUMNS = (*ROW_COLUMNS, "verdict_raw", "p_adj", "p_equiv_adj", "family")
"""The columns of a decided verdict table (:func:`verdict_table`, :func:`decide`)."""


# --- Student's t distribution, in plain Python (the package does not depend on scipy) -------------------


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified Lentz's method)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularized incomplete beta function, for 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` (> 0, not necessarily whole) degrees of freedom."""
    if not df > 0:
        raise ValueError(f"df must be > 0, got {df!r}")
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))  # P(T > |t|)
    return 1.0 - tail if t > 0 else tail


def t_ppf(q: float, df: float) -> float:
    """The ``q`` quantile of Student's t with ``df`` degrees of freedom (bisection on :func:`t_cdf`)."""
    if not 0 < q < 1:
        raise ValueError(f"q must be in (0, 1), got {q!r}")
    if q < 0.5:
        return -t_ppf(1.0 - q, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < q:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if t_cdf(mid, df) < q else (lo, mid)
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return 0.5 * (lo + hi)


def contrast_stats(arms: list[tuple[float, pd.Series]]) -> tuple[float, float, float]:
    """A linear contrast theta = sum_i w_i mean(x_i) of independent arms ``[(w_i, x_i), ...]``: its estimate,
    its standard error se = sqrt(sum_i w_i^2 s_i^2 / n_i) and the Welch-Satterthwaite degrees of freedom
    se^4 / sum_i (w_i^2 s_i^2 / n_i)^2 / (n_i - 1). Each arm needs at least 2 values."""
    for _, x in arms:
        if len(x) < 2:
            raise ValueError(f"each arm of a contrast needs at least 2 runs (seeds), got {len(x)}")
    est = sum(w * x.mean() for w, x in arms)
    terms = [w * w * x.var(ddof=1) / len(x) for w, x in arms]
    se2 = sum(terms)
    if se2 == 0:
        return float(est), 0.0, float(sum(len(x) - 1 for _, x in arms))
    df = se2 * se2 / sum(t * t / (len(x) - 1) for t, (_, x) in zip(terms, arms, strict=True) if t > 0)
    return float(est), math.sqrt(se2), float(df)


def contrast(arms: list[tuple[float, pd.Series]], level: float = 0.95) -> tuple[float, float]:
    """The estimate of :func:`contrast_stats` and the half-width of its ``level`` confidence interval."""
    est, se, df = contrast_stats(arms)
    return est, (t_ppf(0.5 + level / 2, df) * se if se > 0 else 0.0)


def detectable_effect(se: float, df: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest true effect a two-sided t test at level ``alpha`` finds with probability ``power``:
    (t_{1 - alpha/2} + t_{power}) se (the normal-approximation power formula with t quantiles; at 80% and
    alpha = 0.05 about 2.8 se, about 1.4 half-widths of the 95% interval)."""
    if se == 0:
        return 0.0
    return (t_ppf(1 - alpha / 2, df) + t_ppf(power, df)) * se


def seeds_for_power(
    sd: float, delta: float, alpha: float = ALPHA, power: float = POWER, paired: bool = True, tests: int = 1
) -> int:
    """The number of seeds n (per arm) for which a contrast's test finds an effect of ``delta`` with
    probability ``power`` at level ``alpha / tests`` (the first step of Holm's correction over ``tests``
    tests: conservative). ``sd``: the standard deviation over seeds, from a pilot, of the paired difference
    (``paired=True``, se = sd / sqrt(n)) or of one arm (``paired=False``, two arms of n, se = sd sqrt(2/n)).
    The smallest n >= 2 with detectable_effect(se(n), df(n)) <= delta. The search starts at the normal
    approximation's n, which no smaller n can satisfy (a t quantile exceeds the normal one), so it is exact."""
    if not delta > 0:
        raise ValueError(f"delta must be > 0 (the smallest effect of interest), got {delta!r}")
    if not sd >= 0:
        raise ValueError(f"sd must be >= 0, got {sd!r}")
    z = NormalDist().inv_cdf(1 - alpha / tests / 2) + NormalDist().inv_cdf(power)
    lower = (z * sd / delta) ** 2 * (1 if paired else 2)  # detectable_effect >= z se: no n below this suffices
    for n in range(max(2, int(lower)), 100_001):
        se, df = (sd / math.sqrt(n), n - 1) if paired else (sd * math.sqrt(2 / n), 2 * n - 2)
        if detectable_effect(se, df, alpha / tests, power) <= delta:
            return n
    raise ValueError(f"more than 100,000 seeds needed for delta={delta} at sd={sd}: choose a larger delta")


def _p_two_sided(est: float, se: float, df: float) -> float:
    if se == 0:
        return 0.0 if est != 0 else 1.0
    return 2.0 * (1.0 - t_cdf(abs(est) / se, df))


def _p_equivalence(est: float, se: float, df: float, delta: float) -> float:
    """TOST: the larger p of H0: theta <= -delta and H0: theta >= +delta, doubled (each at alpha / 2), so
    that p < alpha exactly when the (1 - alpha) interval lies inside (-delta, +delta)."""
    if se == 0:
        return 0.0 if abs(est) < delta else 1.0
    p_low = 1.0 - t_cdf((est + delta) / se, df)
    p_high = t_cdf((est - delta) / se, df)
    return min(1.0, 2.0 * max(p_low, p_high))


def verdict(estimate: float, half: float, delta: float | None = None) -> str:
    """The outcome an interval ``estimate +- half`` allows: ``"confirmed"`` above 0, ``"refuted"`` below,
    ``"equivalent"`` inside (-delta, +delta), else ``"undecided"``."""
    if estimate - half > 0:
        return "confirmed"
    if estimate + half < 0:
        return "refuted"
    if delta is not None and -delta < estimate - half and estimate + half < delta:
        return "equivalent"
    return "undecided"


def verdict_row(
    name: str, metric: str, arms: list[tuple[float, pd.Series]], delta: float | None = None, alpha: float = ALPHA
) -> dict:
    """One row of a verdict table, uncorrected: the contrast's name, the metric, the estimate, its
    (1 - alpha) interval, its se and df, the seeds per arm (``"5/5"``), the smallest effect of interest
    ``delta`` (None: the test named none, so it cannot come out *equivalent*), the p-values of the
    difference and of equivalence, the effect detectable at 80% power, and the verdict. :func:`decide`
    corrects a family of rows."""
    if delta is not None and not delta > 0:
        raise ValueError(f"delta must be > 0 (the smallest effect of interest, in {metric}'s units), got {delta!r}")
    est, se, df = contrast_stats(arms)
    half = t_ppf(1 - alpha / 2, df) * se if se > 0 else 0.0
    return {
        "contrast": name,
        "metric": metric,
        "estimate": est,
        "ci_low": est - half,
        "ci_high": est + half,
        "se": se,
        "df": df,
        "seeds": "/".join(str(len(x)) for _, x in arms),
        "delta": float("nan") if delta is None else float(delta),
        "p": _p_two_sided(est, se, df),
        "p_equiv": float("nan") if delta is None else _p_equivalence(est, se, df, delta),
        "detectable": detectable_effect(se, df, alpha),
        "verdict": verdict(est, half, delta),
    }


def paired_row(
    name: str, metric: str, arms: list[tuple[float, pd.Series]], delta: float | None = None, alpha: float = ALPHA
) -> dict:
    """A verdict row for a contrast of arms that share their seeds (each ``x_i`` indexed by seed): the
    contrast per seed (every arm of a seed starts from the same warm start), then a t test over the seeds
    both arms have; ``seeds`` counts each arm's runs."""
    common = sorted(set.intersection(*(set(x.dropna().index) for _, x in arms)))
    per_seed = sum(w * x.loc[common] for w, x in arms)
    row = verdict_row(name, metric, [(1.0, per_seed)], delta, alpha)
    row["seeds"] = "/".join(str(x.notna().sum()) for _, x in arms)
    return row


def holm(p: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values of a family (NaN entries are left out of the family and stay NaN):
    sorted ascending, p_(i) times (m - i + 1), made monotone, capped at 1. Rejecting where the adjusted
    value is below alpha controls the family-wise error rate at alpha."""
    idx = [i for i, x in enumerate(p) if not math.isnan(x)]
    m = len(idx)
    out = [float("nan")] * len(p)
    running = 0.0
    for rank, i in enumerate(sorted(idx, key=lambda i: p[i])):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def decide(table: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """A chapter's family of tests (rows of :func:`verdict_row`) decided together: Holm-adjusted ``p_adj``
    and ``p_equiv_adj`` beside the raw values, the effect each test detects at 80% power at the family's
    strictest level alpha / m (``detectable``), and ``verdict``: confirmed or refuted where p_adj < alpha
    (by the estimate's sign), equivalent where p_equiv_adj < alpha, else undecided. ``verdict_raw`` keeps
    the uncorrected outcome."""
    out = table.copy()
    if "p" not in out:
        raise ValueError("decide needs rows of verdict_row (with p, se, df); got columns " + ", ".join(out.columns))
    m = len(out)
    out["verdict_raw"] = out["verdict"]
    out["p_adj"] = holm(out["p"].tolist())
    out["p_equiv_adj"] = holm(out["p_equiv"].tolist())
    out["family"] = m
    out["detectable"] = [detectable_effect(se, df, alpha / m) for se, df in zip(out["se"], out["df"], strict=True)]
    verdicts = []
    for r in out.itertuples():
        if r.p_adj < alpha:
            verdicts.append("confirmed" if r.estimate > 0 else "refuted")
        elif not math.isnan(r.p_equiv_adj) and r.p_equiv_adj < alpha:
            verdicts.append("equivalent")
        else:
            verdicts.append("undecided")
    out["verdict"] = verdicts
    return out


def verdict_table(rows: list[dict], alpha: float = ALPHA) -> pd.DataFrame:
    """A chapter's family of verdict rows as one table, decided together (:func:`decide`: Holm across the
    rows), with the columns :data:`TABLE_COLUMNS` (also when there are none)."""
    if not rows:
        return pd.DataFrame(columns=list(TABLE_COLUMNS))
    return decide(pd.DataFrame(rows, columns=list(ROW_COLUMNS)), alpha)[list(TABLE_COLUMNS)]


def _p(x: float) -> str:
    return "<0.001" if x < 0.001 else f"{x:.3f}"


def describe(table: pd.DataFrame, digits: int = 3) -> list[str]:
    """Each row of a family of tests as a sentence: the contrast, its estimate and 95% interval, its raw and
    Holm-adjusted p (:func:`decide`, across the rows of ``table``) and the verdict; where undecided, the effect
    the runs would have detected with 80% power; where equivalent, the delta it rules out."""
    if "p_adj" not in table:
        table = decide(table)
    out = []
    for r in table.itertuples():
        line = (
            f"{r.contrast} ({r.metric}): {r.estimate:+.{digits}f}, 95% interval "
            f"[{r.ci_low:+.{digits}f}, {r.ci_high:+.{digits}f}] over {r.seeds} seeds, p = {_p(r.p)} "
            f"(Holm-adjusted over {r.family} tests: {_p(r.p_adj)}): {r.verdict}"
        )
        if r.verdict == "equivalent":
            line += f" (no effect as large as {r.delta:.{digits}f})"
        elif r.verdict == "undecided":
            line += f"; these seeds would detect an effect of about {r.detectable:.{digits}f} with 80% power"
            if not math.isnan(r.delta):
                line += f" (the smallest effect of interest: {r.delta:.{digits}f})"
        out.append(line)
    return out


def training_gains(
    df: pd.DataFrame, by: list[str], metric: str, last: int = 5, first: int = 5, level: float = 0.95
) -> pd.DataFrame:
    """Each arm's training gain, from runs stored one row per update (columns ``by``, ``seed``, ``update`` and
    ``metric``): per run, the mean of ``metric`` over its last ``last`` updates minus the mean over its first
    ``first``; per arm (the ``by`` columns), the mean over seeds, its ``level`` t interval (``gain_low``,
    ``gain_high``), ``start`` and ``end`` (means over seeds) and ``learned``: the interval lies above 0. A
    description of the runs, not a pre-stated test: an arm that did not learn is reported so, and the contrasts
    that use it are not interpreted."""
    missing = [c for c in [*by, "seed", "update", metric] if c not in df.columns]
    if missing:
        raise ValueError(f"training_gains needs the columns {missing}; the frame has {list(df.columns)}")
    runs = [*by, "seed"]
    ordered = df.sort_values("update").groupby(runs)
    start = ordered.head(first).groupby(runs)[metric].mean()
    end = ordered.tail(last).groupby(runs)[metric].mean()
    rows = []
    for key, idx in end.groupby(level=by).groups.items():
        key = key if isinstance(key, tuple) else (key,)
        d = (end.loc[idx] - start.loc[idx]).to_numpy(float)
        n, mean = len(d), float(d.mean())
        half = t_ppf(1 - (1 - level) / 2, n - 1) * float(d.std(ddof=1)) / math.sqrt(n) if n > 1 else float("nan")
        rows.append(
            {
                **dict(zip(by, key, strict=True)),
                "start": float(start.loc[idx].mean()),
                "end": float(end.loc[idx].mean()),
                "gain": mean,
                "gain_low": mean - half,
                "gain_high": mean + half,
                "seeds": n,
                "learned": bool(mean - half > 0),
            }
        )
    return pd.DataFrame(rows, columns=[*by, "start", "end", "gain", "gain_low", "gain_high", "seeds", "learned"])


def describe_gains(gains: pd.DataFrame, metric: str, digits: int = 3) -> list[str]:
    """Each arm of :func:`training_gains` as a sentence: its start and end, its gain with the interval and the
    number of seeds, and, where the interval does not lie above 0, that training did not clearly work for that
    arm, so that a contrast using it is not read."""
    by = [c for c in gains.columns if c not in ("start", "end", "gain", "gain_low", "gain_high", "seeds", "learned")]
    out = []
    for r in gains.itertuples(index=False):
        arm = ", ".join(f"{getattr(r, c)}" if c in ("algo", "arm") else f"{c} = {getattr(r, c)}" for c in by)
        line = (
            f"{arm}: {metric} {r.start:.{digits}f} -> {r.end:.{digits}f}, gain {r.gain:+.{digits}f}, 95% interval "
            f"[{r.gain_low:+.{digits}f}, {r.gain_high:+.{digits}f}] over {r.seeds} seeds"
        )
        if r.learned:
            line += ": learned"
        elif r.gain_high < 0:
            line += ": training made it WORSE here; a contrast using this arm is not read"
        else:
            line += ": training did NOT clearly work here (the interval holds 0); a contrast using this arm is not read"
        out.append(line)
    return out
