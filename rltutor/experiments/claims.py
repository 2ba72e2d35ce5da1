"""Claims checked (chapter 15) and choosing an algorithm (chapter 17): the book's verdicts, read back.

Two parts.

1. **The noisy-reward lab** (:func:`noisy_reward_runs`, :func:`noisy_reward_verdicts`): is PPO more robust
   than GRPO to a noisy reward? The sequence task at L = 4 (the task on which both algorithms gain about
   0.19 in 100 updates in chapter 07's stored runs, a regime where training works), four arms that share each
   seed's warm start: GRPO and PPO, each with the clean reward and with every completion's reward flipped,
   r -> 1 - r, with probability ``flip`` (:class:`FlipRewards`, seeded apart from the trainer, so the two
   arms of a seed draw the same first prompts). What the arms are scored on is the *clean* reward of the
   completions they sampled (the fraction of correct tokens), never the flipped one they trained on.
2. **The claims loader** (:data:`CLAIMS`, :func:`claims_table`, :func:`decision_table`): each popular claim
   of chapter 15 with its source, the stored data and chapter that test it, and its verdict computed from
   that data by the chapter's own ``*_verdicts`` function (:mod:`rltutor.experiments.lm` for chapters
   06-10); chapter 17's decision table is built from the same rows.

Pre-stated test of the noisy-reward lab (committed before its main runs; the pilot's numbers below):

* Metric: per run, the mean clean reward of the sampled completions over the last 20 of 100 updates.
* (a) The claim, as an interaction per seed: (PPO noisy - PPO clean) - (GRPO noisy - GRPO clean).
  *confirmed*: PPO loses less to the noise (more robust); *refuted*: GRPO loses less; *equivalent*: the
  interval lies inside (-delta, +delta). delta = 0.05 reward: a quarter of the ~0.19 that either algorithm
  gains in the clean runs; a difference in robustness smaller than that would not change which algorithm a
  practitioner picks for a noisy verifier.
* (b), (c) The mechanism is present: per algorithm, noisy - clean, end reward (refuted: the noise costs
  reward). (d), (e) Training works: per noisy arm, end - first 5 updates (confirmed: it learns despite the
  noise). Holm across (a)-(e). The clean arms' gains are shown beside them.
* Pilot (2026-12-01, seeds 100-102, stored as ``noisy_reward_pilot``, never counted): the sd over seeds of
  (a) per seed is 0.029 (3 seeds, 2 degrees of freedom: a rough estimate); the training gains (end - first
  5 updates) were GRPO 0.18 clean, 0.05 noisy, PPO 0.19 clean, 0.05 noisy, so the noise costs both a lot and
  (b), (c) can be seen. :func:`noisy_reward_power` gives n = 8 seeds for 80% power at delta = 0.05 at
  alpha / 5. Main runs: seeds 0-7 (8 seeds, about 25 minutes of wall time and 5 CPU-minutes on the shared
  2-core machine, inside the budget), 100 updates each, flip 0.25::

      python -m rltutor.experiments.claims --seeds 0 1 2 3 4 5 6 7 --out rltutor/data/lm/noisy_reward.csv

  The clean arms of seeds 0-5 are chapter 07's L = 4 runs again (the same configuration and seed).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field

import pandas as pd
import torch

from rltutor import datafiles
from rltutor.envs.tokens import TokenTask
from rltutor.experiments.lm import Arm
from rltutor.experiments.runs import RunStore, run_all, store_records
from rltutor.experiments.stats import VERDICTS, paired_row, seeds_for_power, verdict_table
from rltutor.train import Trainer

__all__ = [
    "FlipRewards",
    "NOISY_DELTA",
    "noisy_reward_arms",
    "noisy_reward_run",
    "noisy_reward_runs",
    "noisy_reward_verdicts",
    "noisy_reward_gains",
    "noisy_reward_power",
    "CLAIM_VERDICTS",
    "CLAIM_COLUMNS",
    "NUMBER_COLUMNS",
    "Claim",
    "CLAIMS",
    "read_stored",
    "lm_table",
    "claims_table",
    "critic_memory",
    "DECISION_COLUMNS",
    "decision_table",
    "markdown_table",
]

NOISY_DELTA = 0.05
"""The noisy-reward test's smallest effect of interest, in reward (module docstring: why)."""
NOISY_FLIP = 0.25
"""The probability that a completion's reward is flipped (r -> 1 - r): in expectation the reward becomes
(1 - 2p) r + p, half the signal at p = 0.25, plus variance."""
NOISY_UPDATES = 100


class FlipRewards(TokenTask):
    """A token task whose reward is flipped, r -> 1 - r, with probability ``flip`` per completion (a noisy
    verifier), drawn from its own generator (seeded by ``seed``). ``last_clean`` keeps the clean rewards (B,)
    of the last call, so a run can be scored on what it really did."""

    def __init__(self, task: TokenTask, flip: float, seed: int = 0):
        if not 0 <= flip <= 1:
            raise ValueError(f"flip must be a probability in [0, 1], got {flip!r}")
        self.task, self.flip = task, float(flip)
        self.name, self.prompt_len, self.max_new_tokens = task.name, task.prompt_len, task.max_new_tokens
        self.generator = torch.Generator().manual_seed(10_007 + seed)
        self.last_clean = None

    def sample_prompts(self, n, generator=None):
        return self.task.sample_prompts(n, generator)

    def target(self, prompt):
        return self.task.target(prompt)

    def score(self, prompt, completion):
        return self.task.score(prompt, completion)

    def reward(self, prompts, responses):
        clean = self.task.reward(prompts, responses)  # (B,)
        self.last_clean = clean
        flipped = torch.rand(clean.shape, generator=self.generator) < self.flip  # (B,)
        return torch.where(flipped, 1.0 - clean, clean)


def noisy_reward_arms(flip: float = NOISY_FLIP) -> list[Arm]:
    """GRPO and PPO (value head), clean (flip 0) and noisy (``flip``), on the sequence task at L = 4 with
    chapter 07's warm start (60 SFT steps): four arms that share each seed's warm start."""
    sft = dict(sft_steps=60)
    return [
        Arm(label, algo, "sequence", dict(L=4), sft, dict(flip=p))
        for p in (0.0, flip)
        for algo, label in (("grpo", "GRPO"), ("ppo", "PPO"))
    ]


def noisy_reward_run(job: tuple) -> pd.DataFrame:
    """One run ``(arm, seed, steps, scale)``: per update the clean reward of the sampled completions
    (``reward``), the reward trained on (``reward_trained``) and the sampler's entropy."""
    arm, seed, steps, scale = job
    torch.set_num_threads(1)
    trainer = Trainer(arm.config(scale, seed))
    noisy = FlipRewards(trainer.collector.task, arm.tags["flip"], seed)
    trainer.collector.task = noisy
    rows, t0 = [], time.perf_counter()
    for _ in range(steps):
        m = trainer.step()
        rows.append(
            {
                "algo": arm.label,
                "flip": arm.tags["flip"],
                "seed": seed,
                "update": m["update"],
                "reward": float(noisy.last_clean.mean()),
                "reward_trained": m["score"],
                "entropy": m["sample_entropy"],
                "time_s": time.perf_counter() - t0,
            }
        )
    return pd.DataFrame(rows)


def _window(df: pd.DataFrame, metric: str, first: bool, n: int, keys) -> pd.Series:
    """Per run, the mean of ``metric`` over its first (or last) ``n`` updates (as chapters 06-10 compute it)."""
    up = df["update"]
    sel = df[up < up.min() + n] if first else df[up > up.max() - n]
    return sel.groupby(list(keys))[metric].mean()


def _arm(per_run: pd.Series, *key) -> pd.Series:
    """One arm's values (index: seed) from a per-run series indexed by (..., seed)."""
    return per_run.loc[key]


def _run_name(arm: Arm, seed: int, steps: int, scale: str) -> str:
    return f"noisy_reward-{scale}-{arm.label}-flip{arm.tags['flip']}-s{seed}-u{steps}.csv"


def noisy_reward_runs(
    seeds, steps: int = NOISY_UPDATES, flip: float = NOISY_FLIP, scale: str = "quick", run_dir=None
) -> pd.DataFrame:
    """Every (arm, seed) run in this process, one at a time (the machine is shared); with ``run_dir`` each
    run is stored as it ends and read back instead of rerun."""
    arms = noisy_reward_arms(flip)
    jobs = [(arm, s, steps, scale) for s in seeds for arm in arms]
    store = RunStore(run_dir) if run_dir else None
    names = [_run_name(*j) for j in jobs] if run_dir else None
    return run_all(noisy_reward_run, jobs, 1, store=store, names=names)


def _ends(df: pd.DataFrame, last: int = 20, first: int = 5):
    keys = ("algo", "flip", "seed")
    return _window(df, "reward", False, last, keys), _window(df, "reward", True, first, keys)


def noisy_reward_verdicts(df: pd.DataFrame, last: int = 20, first: int = 5, delta: float = NOISY_DELTA):
    """The pre-stated tests (module docstring) from stored :func:`noisy_reward_runs` records."""
    end, start = _ends(df, last, first)
    p = max(df["flip"].unique())
    m = f"reward, last {last}"
    arms = [
        (1, _arm(end, "PPO", p)),
        (-1, _arm(end, "PPO", 0.0)),
        (-1, _arm(end, "GRPO", p)),
        (1, _arm(end, "GRPO", 0.0)),
    ]
    rows = [paired_row(f"(PPO noisy - clean) - (GRPO noisy - clean), flip {p:g}", m, arms, delta)]
    for a in ("PPO", "GRPO"):
        rows.append(paired_row(f"{a}: noisy - clean", m, [(1, _arm(end, a, p)), (-1, _arm(end, a, 0.0))]))
    for a in ("PPO", "GRPO"):
        rows.append(
            paired_row(
                f"{a} noisy: last {last} - first {first}", "reward", [(1, _arm(end, a, p)), (-1, _arm(start, a, p))]
            )
        )
    return verdict_table(rows)


def noisy_reward_gains(df: pd.DataFrame, last: int = 20, first: int = 5) -> pd.DataFrame:
    """Each arm's training gain (end - first ``first`` updates) with its 95% interval over seeds."""
    end, start = _ends(df, last, first)
    rows = []
    for (a, p), _ in end.groupby(level=["algo", "flip"]):
        r = paired_row(f"{a}, flip {p:g}", "reward gain", [(1, _arm(end, a, p)), (-1, _arm(start, a, p))])
        rows.append({"arm": r["contrast"], "gain": r["estimate"], "ci_low": r["ci_low"], "ci_high": r["ci_high"]})
    return pd.DataFrame(rows)


def noisy_reward_power(pilot: pd.DataFrame, delta: float = NOISY_DELTA, last: int = 20) -> dict:
    """The power analysis from the pilot: the sd over seeds of test (a)'s per-seed interaction and the seeds
    :func:`rltutor.experiments.stats.seeds_for_power` asks for at delta (80% power, alpha / 5: Holm's first
    step over the family of five)."""
    end, _ = _ends(pilot, last)
    p = max(pilot["flip"].unique())
    inter = _arm(end, "PPO", p) - _arm(end, "PPO", 0.0) - _arm(end, "GRPO", p) + _arm(end, "GRPO", 0.0)
    sd = float(inter.std(ddof=1))
    return {"pilot_seeds": len(inter), "sd": sd, "delta": delta, "n": seeds_for_power(sd, delta, tests=5)}


def main(argv: list[str] | None = None) -> int:
    """Run the noisy-reward lab over seeds, one run at a time; write the records and FILE.cmd, e.g.

    python -m rltutor.experiments.claims --seeds 100 101 102 --out rltutor/data/lm/noisy_reward_pilot.csv
    """
    ap = argparse.ArgumentParser(prog="python -m rltutor.experiments.claims", description=main.__doc__)
    ap.add_argument("--seeds", type=int, nargs="+", required=True)
    ap.add_argument("--updates", type=int, default=NOISY_UPDATES)
    ap.add_argument("--flip", type=float, default=NOISY_FLIP)
    ap.add_argument("--run-dir", default="runs/lm/noisy_reward")
    ap.add_argument("--pilot", action="store_true", help="print the power analysis instead of the verdicts")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    df = noisy_reward_runs(args.seeds, args.updates, args.flip, "quick", args.run_dir)
    store_records(df, args.out, "rltutor.experiments.claims", argv or sys.argv[1:])
    print(noisy_reward_gains(df).round(4).to_string(index=False))
    if args.pilot:
        print(noisy_reward_power(df))
    else:
        print(noisy_reward_verdicts(df).round(4).to_string(index=False))
    print(f"{len(df)} rows in {time.perf_counter() - t0:.0f} s; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())


# ----------------------------------------------------------------------------------------------
# The claims loader: each claim, the stored data that tests it, and its verdict computed from that data.
# ----------------------------------------------------------------------------------------------

CLAIM_VERDICTS = (*VERDICTS, "not testable here")
"""The verdicts a claim can get: the four of :mod:`rltutor.experiments.stats`, or not testable here (and why:
no stored experiment measures it, or the runs that would did not learn)."""

CLAIM_COLUMNS = ("key", "claim", "source", "verdict", "basis", "evidence", "chapter", "data")
"""The columns of :func:`claims_table` (besides :data:`NUMBER_COLUMNS`)."""
NUMBER_COLUMNS = ("contrast", "metric", "estimate", "ci_low", "ci_high", "delta")
"""The stored contrast behind a verdict, where there is one (else empty): for a page's plot."""


def _numbers(row) -> dict:
    if row is None:
        return {k: (None if k in ("contrast", "metric") else float("nan")) for k in NUMBER_COLUMNS}
    return {k: row[k] for k in NUMBER_COLUMNS}


def read_stored(name: str) -> pd.DataFrame:
    """A stored CSV by its name inside ``rltutor/data`` (:func:`rltutor.datafiles.path`)."""
    return pd.read_csv(datafiles.path(name))


def _flip(v: str, sign: int) -> str:
    """A contrast's verdict as a verdict on the claim: ``sign = -1`` where the claim says the opposite."""
    if sign < 0:
        return {"confirmed": "refuted", "refuted": "confirmed"}.get(v, v)
    return v


def _row_text(r) -> str:
    return (
        f"{r.contrast} ({r.metric}): {r.estimate:+.3f} [{r.ci_low:+.3f}, {r.ci_high:+.3f}], {r.seeds} seeds, "
        f"Holm-adjusted p {r.p_adj:.3f} of {r.family} tests: {r.verdict}"
        + (f"; detectable at 80% power: {r.detectable:.3f}" if r.verdict == "undecided" else "")
    )


def _pick(table: pd.DataFrame, contrast: str, metric_start: str = ""):
    sel = table[(table["contrast"] == contrast) & table["metric"].str.startswith(metric_start)]
    if len(sel) != 1:
        raise KeyError(f"no single row {contrast!r} ({metric_start!r}) in the verdict table: {list(table.contrast)}")
    return sel.iloc[0]


def lm_table(read, name: str) -> pd.DataFrame:
    """Chapter 06-10's stored verdict table of ``name`` (a file under ``lm/``), by the chapter's function;
    ``length_bias`` joins its two stored batches (18 seeds), as chapter 08 does."""
    from rltutor.experiments import lm

    if name == "length_bias":
        return lm.length_bias_verdicts(pd.concat([read("lm/length_bias.csv"), read("lm/length_bias_more.csv")]))
    if name == "noisy_reward":
        return noisy_reward_verdicts(read("lm/noisy_reward.csv"))
    if name in lm.RESTATED:  # chapters 07-10 restated; the larger records are stored compressed
        try:
            return lm.restated_verdicts(name, read(f"lm/{name}.csv"))
        except FileNotFoundError:
            return lm.restated_verdicts(name, read(f"lm/{name}.csv.gz"))
    kind = "horizon" if name.startswith("horizon") else name
    return lm.VERDICTS[kind](read(f"lm/{name}.csv"))


def _claim_no_advantage(read):
    from rltutor.advantages import group_advantages

    r = torch.tensor([1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0])  # one group of G = 8, two correct
    A = group_advantages(r, torch.zeros(8, dtype=torch.long))
    v = "refuted" if bool((A.abs() > 0).any()) else "confirmed"
    return (
        v,
        "the package's GRPO estimator, rewards "
        + str(r.tolist())
        + " -> A = "
        + str([round(x, 3) for x in A.tolist()]),
        "the package's code",
    )


def _claim_acronym(read):
    return (
        "refuted",
        "DeepSeekMath (Shao et al. 2024, arXiv:2402.03300), the paper that introduced it: "
        "Group Relative Policy Optimization",
        "the primary source",
    )


def _windows(d: pd.DataFrame, width: int) -> pd.DataFrame:
    d = d.assign(w=(d["update"] - 1) // width)
    g = d.groupby("w")["reward"]
    return pd.DataFrame({"mean": g.mean(), "se": g.std(ddof=1) / g.count() ** 0.5, "n": g.count()})


def _claim_monotonic(read, width: int = 20, alpha: float = 0.05):
    """Every stored PPO run of chapters 06, 07 and 10: the mean reward over consecutive windows of ``width``
    updates; a drop between neighbours beyond noise (one-sided z test, Bonferroni over all pairs) is a
    decrease of the expected reward, which a monotonic-improvement guarantee rules out."""
    from statistics import NormalDist

    runs = []
    for name, algo in (
        ("short_task", "PPO (value head)"),
        ("short_task", "PPO (separate critic)"),
        ("horizon_long", "PPO"),
        ("horizon_long_rep", "PPO"),
        ("family", "ppo"),
    ):
        d = read(f"lm/{name}.csv")
        d = d[d["algo"] == algo]
        keys = ["seed", "L"] if "L" in d else ["seed"]
        runs += [(name, k, r) for k, r in d.groupby(keys)]
    pairs, drops = 0, []
    for name, k, r in runs:
        w = _windows(r, width)
        w = w[w["n"] == width]
        for a, b in zip(w.index[:-1], w.index[1:], strict=True):
            pairs += 1
            z = (w.at[a, "mean"] - w.at[b, "mean"]) / max((w.at[a, "se"] ** 2 + w.at[b, "se"] ** 2) ** 0.5, 1e-12)
            drops.append((z, name, k, a, w.at[a, "mean"] - w.at[b, "mean"]))
    crit = NormalDist().inv_cdf(1 - alpha / max(pairs, 1))
    big = [x for x in drops if x[0] > crit]
    fell = sum(1 for x in drops if x[4] > 0)
    z, name, k, a, size = max(drops)
    ev = (
        f"{len(runs)} stored PPO runs, {pairs} pairs of neighbouring {width}-update windows: the mean reward fell "
        f"in {fell}; beyond noise (z > {crit:.2f}, Bonferroni) in {len(big)}; the largest fall {size:.3f} "
        f"(z = {z:.2f}, {name}, run {k}, after updates {a * width + 1}-{(a + 1) * width})"
    )
    return "refuted", ev, "the theory: PPO has no such theorem" + (", and the stored runs" if big else "")


def _claim_ranks(read):
    from rltutor.advantages import group_advantages

    g = torch.zeros(3, dtype=torch.long)
    a1 = group_advantages(torch.tensor([0.0, 0.1, 1.0]), g)
    a2 = group_advantages(torch.tensor([0.0, 0.9, 1.0]), g)
    differ = not torch.allclose(a1, a2, atol=1e-3)
    ev = (
        f"same ranking, different gaps: rewards [0, 0.1, 1] -> A = {[round(x, 2) for x in a1.tolist()]}; "
        f"[0, 0.9, 1] -> A = {[round(x, 2) for x in a2.tolist()]}"
    )
    return ("refuted" if differ else "confirmed"), ev, "the package's code"


def _not_learned(read, name: str, arms: tuple[str, ...], last: int = 20, first: int = 5) -> list[str]:
    """The arms of the stored runs ``lm/NAME.csv`` whose training gain in reward (last ``last`` updates minus
    the first ``first``, :func:`rltutor.experiments.stats.training_gains`) is not clearly above 0, each as
    its sentence: a contrast using one of them compares runs that did not learn, and is not read."""
    from rltutor.experiments.stats import describe_gains, training_gains

    d = read(f"lm/{name}.csv")
    gains = training_gains(d[d["algo"].isin(arms)], ["algo"], "reward", last=last, first=first)
    return [line for line, ok in zip(describe_gains(gains, "reward"), gains["learned"], strict=True) if not ok]


def _claim_row(name: str, contrast: str, sign: int, metric: str = "", note: str = "", arms: tuple[str, ...] = ()):
    """A claim decided by one row of chapter NAME's verdict table; where one of ``arms`` (the contrast's
    arms) did not clearly learn, the claim is not testable with those runs, and the evidence says why."""

    def decide(read):
        r = _pick(lm_table(read, name), contrast, metric)
        failed = _not_learned(read, name, arms) if arms else []
        if failed:
            ev = _row_text(r) + note + "; not read, because training did not clearly work: " + "; ".join(failed)
            return "not testable here", ev, "the book's stored runs (which did not learn)", r
        return _flip(r.verdict, sign), _row_text(r) + note, "the book's stored runs", r

    return decide


def _claim_noise(read):
    t = lm_table(read, "noisy_reward")
    r = t.iloc[0]  # test (a), the claim
    rest = "; ".join(f"{x.contrast}: {x.estimate:+.3f}, {x.verdict}" for x in t.iloc[1:].itertuples())
    ev = _row_text(r) + f" (delta {r.delta:g}); the rest of the family: {rest}"
    if not (t.iloc[3:]["verdict"] == "confirmed").all():
        ev += "; a noisy arm's own gain is not decided, so its robustness is read from its end reward only"
    return r.verdict, ev, "the book's stored runs (this chapter's experiment)", r


def _claim_collapse(read):
    lost = _pick(lm_table(read, "diversity"), "eps_high=0.2: start - end", "distinct_correct")
    ev = (
        "chapter 09 measured lost diversity for GRPO only (the pairs task, distinct correct answers per prompt "
        "of 8 samples): " + _row_text(lost) + "; no PPO arm measured it, so GRPO against PPO is not tested; "
        "falling entropy with rising reward alone is sharpening, not collapse"
    )
    return "not testable here", ev, "the book's stored runs (GRPO only)"


def _claim_horizon(read):
    """Chapter 07's restated test (the interaction of algorithm and length, partial reward; the exact-match reward
    beside it) decides; chapter 05's restated corridor test at equal optimizer steps is quoted beside it."""
    from rltutor.experiments import sweep

    t = lm_table(read, "horizon2")
    r = _pick(t, "fraction: (PPO - GRPO) at L = 16 minus at L = 4")
    x = _pick(t, "exact: (PPO - GRPO) at L = 16 minus at L = 4")
    f = read("horizon/confounds/finals.csv")
    c = sweep.confounds_verdicts(f)
    lead = _pick(c, "T=80, equal env steps: PPO - GRPO")
    at80 = f[(f["horizon"] == 80) & (f["variant"] == "default")]
    ppo, grpo = (at80.loc[at80["algo"] == a, "final_norm"] for a in ("ppo", "grpo"))
    m = _pick(c, "equal optimizer steps: slope over log2 T (T = 5, 20, 80) of matched PPO - GRPO, per doubling")
    ev = (
        "chapter 07's restated test (lambda 0.95, a warmed critic, every arm learned): "
        + _row_text(r)
        + f"; with the exact-match reward: {x.estimate:+.3f} [{x.ci_low:+.3f}, {x.ci_high:+.3f}], {x.verdict}"
        + f"; chapter 05's corridor at equal optimizer steps, slope over log2 T of PPO - GRPO: {m.estimate:+.3f} "
        + f"[{m.ci_low:+.3f}, {m.ci_high:+.3f}], {m.verdict}; at equal environment steps, T = 80: "
        + f"{lead.estimate:+.3f} [{lead.ci_low:+.3f}, {lead.ci_high:+.3f}], {lead.verdict} "
        + f"({int((ppo > grpo.max()).sum())} of {len(ppo)} PPO runs above every GRPO run)"
    )
    return r.verdict, ev, "the book's stored runs", r


def _claim_parallel(read):
    r = _pick(lm_table(read, "short_task"), "PPO (separate critic) - GRPO", "s per update")
    ev = (
        _row_text(r)
        + "; what is tested is the cost of one update on one CPU, not how either scales across accelerators"
    )
    return r.verdict, ev, "the book's stored runs (one CPU)", r


@dataclass(frozen=True)
class Claim:
    """One popular claim: what is said, who says it (markdown, with a link), the chapter (notebook file) and
    stored data (names under ``rltutor/data``) that test it, and ``decide(read) -> (verdict, evidence,
    basis)`` computed from the stored data that ``read(name)`` returns."""

    key: str
    claim: str
    source: str
    chapter: str
    data: tuple
    decide: object = field(repr=False, compare=False)


_EXPLAINER = "[an explainer of the GLM-5.2 switch](https://wilsonwu.me/en/blog/2026/ppo-vs-grpo/)"
_NEWS = "[news reports of the switch](https://eu.36kr.com/en/p/3862288768570377)"
_PARAPHRASE = "repeated in explainers of the switch (paraphrased: the book quotes no single page for it)"

CLAIMS = (
    Claim(
        "no_advantage",
        "GRPO computes no advantage; only PPO does.",
        _PARAPHRASE,
        "03_grpo.ipynb",
        (),
        _claim_no_advantage,
    ),
    Claim(
        "acronym",
        'GRPO stands for "Generalized Reward Policy Optimization".',
        _EXPLAINER,
        "03_grpo.ipynb",
        (),
        _claim_acronym,
    ),
    Claim(
        "monotonic",
        "PPO guarantees monotonic improvement.",
        _PARAPHRASE,
        "02_ppo.ipynb",
        ("lm/short_task.csv", "lm/horizon_long.csv", "lm/horizon_long_rep.csv", "lm/family.csv"),
        _claim_monotonic,
    ),
    Claim(
        "ranks",
        "GRPO ranks answers; PPO regresses values.",
        _PARAPHRASE,
        "03_grpo.ipynb",
        (),
        _claim_ranks,
    ),
    Claim(
        "sample_efficiency",
        "PPO is more sample-efficient than GRPO.",
        "[The Turing Post](https://x.com/TheTuringPost): the value function squeezes more learning from "
        "fewer samples; " + _EXPLAINER,
        "06_lm_grpo_vs_ppo.ipynb",
        ("lm/short_task2.csv",),
        _claim_row(
            "short_task2",
            "PPO (value head) - GRPO",
            +1,
            "reward",
            " (chapter 06's test restated where training works: same prompts, completions and updates per arm)",
            arms=("PPO (value head)", "GRPO"),
        ),
    ),
    Claim(
        "reward_noise",
        "PPO is more robust to reward noise than GRPO.",
        "[accounts of GRPO's stability](https://ctol.digital/news/reward-conundrum-grpo-training-collapse-future-ai)",
        "15_claims_checked.ipynb",
        ("lm/noisy_reward.csv",),
        _claim_noise,
    ),
    Claim(
        "mode_collapse",
        "GRPO is more prone to mode collapse than PPO.",
        "[GRPO in production](https://aissential.tech/articles/aee49ad4-22b5-4021-9db3-91c97a8b1570)",
        "09_dapo_clip_higher.ipynb",
        ("lm/diversity.csv",),
        _claim_collapse,
    ),
    Claim(
        "parallel",
        "GRPO parallelises better: no critic, so less compute and memory per step.",
        "[GRPO in production](https://aissential.tech/articles/aee49ad4-22b5-4021-9db3-91c97a8b1570): "
        "dropping the critic cuts training compute by nearly half",
        "06_lm_grpo_vs_ppo.ipynb",
        ("lm/short_task.csv",),
        _claim_parallel,
    ),
    Claim(
        "critic_horizon",
        "A critic is needed once horizons grow.",
        "[a report of the switch](https://aicrier.com/post/1uwgn6fed4yht7zbar8h): group-wise variance reduction "
        "fails to scale for ultra-long contexts; " + _NEWS,
        "07_lm_horizon.ipynb",
        ("lm/horizon2.csv.gz", "horizon/confounds/finals.csv"),
        _claim_horizon,
    ),
)
"""The nine claims of chapter 15, in its order."""


def claims_table(read=None) -> pd.DataFrame:
    """Every claim of :data:`CLAIMS` with its verdict, basis and evidence computed by its ``decide`` from the
    stored data ``read(name)`` returns (default :func:`read_stored`); columns :data:`CLAIM_COLUMNS`."""
    read = read or read_stored
    rows = []
    for c in CLAIMS:
        out = c.decide(read)  # (verdict, evidence, basis) or, for a stored contrast, (..., its verdict row)
        verdict, evidence, basis = out[:3]
        row = out[3] if len(out) > 3 else None
        if verdict not in CLAIM_VERDICTS:
            raise ValueError(f"claim {c.key!r} got verdict {verdict!r}; valid: {', '.join(CLAIM_VERDICTS)}")
        rows.append(
            {
                "key": c.key,
                "claim": c.claim,
                "source": c.source,
                "verdict": verdict,
                "basis": basis,
                "evidence": evidence,
                "chapter": c.chapter,
                "data": ", ".join(c.data),
                **_numbers(row),
            }
        )
    return pd.DataFrame(rows, columns=list(CLAIM_COLUMNS) + list(NUMBER_COLUMNS))


def critic_memory(seed: int = 0) -> pd.DataFrame:
    """Parameters and training-state memory (fp32 weights, gradients, Adam's two moments: 16 bytes per
    parameter) of the quick LM policy without a critic (GRPO), with a value head and with a separate critic
    (PPO), counted exactly (:func:`rltutor.models.lm_policy.critic_cost`); nothing is trained."""
    from rltutor.build import warm_start
    from rltutor.experiments.lm import lm_config, make_env_task
    from rltutor.models.lm_policy import CRITICS, LMPolicy, critic_cost

    cfg = lm_config("grpo", "addition", "quick", seed, task_options=dict(max_operand=19), sft_steps=0)
    task = make_env_task(cfg)
    rows = []
    for kind in CRITICS:
        c = critic_cost(LMPolicy(warm_start(cfg, task), critic_kind=kind))
        rows.append({"critic": kind, **c, "train_state_mb": c["train_state_bytes"] / 2**20})
    df = pd.DataFrame(rows)
    df["memory_vs_none"] = df["train_state_bytes"] / df["train_state_bytes"].iloc[0]
    return df


# ----------------------------------------------------------------------------------------------
# Chapter 17's decision table, read from the claims' verdicts and the chapters' stored tables.
# ----------------------------------------------------------------------------------------------

DECISION_COLUMNS = ("situation", "start with", "switch when", "the book's evidence", "verdict", "rests on")
"""The columns of :func:`decision_table` that a page shows (then :data:`NUMBER_COLUMNS`, for its plot)."""

_GLM = "[GLM-5.2's release post](https://huggingface.co/blog/zai-org/glm-52-blog)"


def _support(verdict: str, supports: tuple, reported: str) -> str:
    """Whether a default rests on the book's own data (its verdict is one of ``supports``) or on reported
    results (``reported``), with the book's verdict named either way."""
    if verdict in supports:
        return f"the book's data ({verdict})"
    return f"reported results: {reported} (the book's data: {verdict})"


def _compaction(read) -> str:
    """Chapter 11's main test, its contrast of the critic across boundaries with broadcast GRPO: the verdict."""
    from rltutor.experiments import credit

    t = credit.slope_verdicts(read("agents/credit_main.csv"))
    return _pick(t, "slope over log4 K of ppo_gae_across - broadcast_grpo").verdict


def decision_table(read=None, claims: pd.DataFrame | None = None) -> pd.DataFrame:
    """Chapter 17's table: per situation the default to start from in 2026, when to switch, and the verdict
    from the book's stored data that bears on it (with a link to its chapter), tagged with whether that
    verdict supports the default or the default rests on reported results. Every verdict and tag is computed
    from ``read`` (default :func:`read_stored`) through :func:`claims_table` and the chapters' tables."""
    read = read or read_stored
    claims = claims_table(read) if claims is None else claims
    c = claims.set_index("key")

    def link(chapter):
        return f"[{chapter.split('_')[0]}]({chapter})"

    rows = []
    # short verifiable tasks: GRPO-family; supported where PPO's critic is not ahead and costs time
    eff, cost = c.loc["sample_efficiency"], c.loc["parallel"]
    rows.append(
        {
            "situation": "short single-turn tasks with a verifiable reward (math, code with tests)",
            "start with": "GRPO family (GRPO, Dr.GRPO or DAPO's fixes, RLOO): no critic",
            "switch when": "responses grow long or turn into multi-step trajectories (below)",
            "the book's evidence": f"PPO's critic ahead per sample: {eff.verdict} {link(eff.chapter)}; "
            f"GRPO cheaper per update: {cost.verdict} {link(cost.chapter)}",
            "verdict": eff.verdict,
            "rests on": _support(eff.verdict, ("refuted", "equivalent"), "DeepSeekMath and DeepSeek-R1"),
            **_numbers(eff),
        }
    )
    hz = c.loc["critic_horizon"]
    rows.append(
        {
            "situation": "long horizons, multi-turn agents, context compaction",
            "start with": "PPO with a learned critic (GAE, token-level advantages), as reported for GLM-5.2 " + _GLM,
            "switch when": "the critic will not fit or will not learn (explained variance near 0 after warm-up)",
            "the book's evidence": f"PPO's lead grows with the horizon: {hz.verdict} {link(hz.chapter)}; "
            f"under compaction, critic across boundaries - broadcast GRPO, slope over K: {_compaction(read)} "
            f"{link('11_agents_compaction.ipynb')}",
            "verdict": hz.verdict,
            "rests on": _support(hz.verdict, ("confirmed",), _GLM),
            **_numbers(hz),
        }
    )
    nz = c.loc["reward_noise"]
    pick = {"confirmed": "PPO", "refuted": "GRPO"}.get(nz.verdict, "either: choose on the criteria above")
    rows.append(
        {
            "situation": "a noisy verifier (some rewards wrong)",
            "start with": pick,
            "switch when": "the noise is not symmetric (a verifier that can be gamed: see the reward-hacking chapter)",
            "the book's evidence": f"PPO more robust to flipped rewards: {nz.verdict} {link(nz.chapter)}",
            "verdict": nz.verdict,
            "rests on": _support(nz.verdict, ("confirmed", "refuted", "equivalent"), "none found"),
            **_numbers(nz),
        }
    )
    rows.append(
        {
            "situation": "memory is the limit (the critic would not fit beside the policy)",
            "start with": "GRPO family",
            "switch when": "a value head on the policy's trunk fits (it costs far less than a second model)",
            "the book's evidence": f"GRPO cheaper per update: {cost.verdict} {link(cost.chapter)}; "
            "memory counted exactly on the page",
            "verdict": cost.verdict,
            "rests on": _support(
                cost.verdict,
                ("confirmed",),
                "the exact parameter count on the claims page (a separate critic doubles the training state)"
                " and DeepSeekMath",
            ),
            **_numbers(cost),
        }
    )
    ch = _pick(lm_table(read, "diversity"), "eps_high=0.28 - eps_high=0.2", "distinct_correct")
    rows.append(
        {
            "situation": "the sampler's entropy falls fast",
            "start with": "DAPO's clip-higher (eps_high = 0.28)",
            "switch when": "diversity (pass@k) holds without it",
            "the book's evidence": "clip-higher keeps more distinct correct answers: "
            f"{ch.verdict} {link('09_dapo_clip_higher.ipynb')}",
            "verdict": ch.verdict,
            "rests on": _support(ch.verdict, ("confirmed",), "DAPO (Yu et al. 2025)"),
            **_numbers(ch),
        }
    )
    lb = _pick(lm_table(read, "length_bias2"), "GRPO - Dr.GRPO", "wrong")
    rows.append(
        {
            "situation": "wrong answers grow long",
            "start with": "Dr.GRPO (constant normalizer, no std division)",
            "switch when": "lengths are capped tightly anyway",
            "the book's evidence": f"GRPO's wrong answers longer: {lb.verdict} {link('08_length_bias_dr_grpo.ipynb')}",
            "verdict": lb.verdict,
            "rests on": _support(lb.verdict, ("confirmed",), "Dr.GRPO (Liu et al. 2025)"),
            **_numbers(lb),
        }
    )
    return pd.DataFrame(rows, columns=list(DECISION_COLUMNS) + list(NUMBER_COLUMNS))


def markdown_table(df: pd.DataFrame) -> str:
    """A DataFrame as a markdown table (cells with ``|`` escaped), for a page's display."""
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in df.itertuples(index=False):
        lines.append("| " + " | ".join(str(x).replace("|", "\\|").replace("\n", " ") for x in r) + " |")
    return "\n".join(lines)
