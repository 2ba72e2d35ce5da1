"""The guard: cheap rules first, then a judge, for every call of a tool-using agent (chapter 12).

>>> from rltutor.guard import Guard
>>> Guard.default().inspect("cat tests/hid''den/test_a.py").blocked
True

``Guard.inspect(command) -> Verdict(blocked, stage, reason)``: the rule filter
(:mod:`rltutor.guard.rules`) decides what it can; a call it passes but finds suspicious
(``suspicion >= judge_threshold``) goes to a judge (:mod:`rltutor.guard.judge`), unless the rules'
reading of it as ToolShell executes it settles it (:meth:`RuleFilter.settled`: every command is one
ToolShell runs exactly, or one no shell finds, such as ``Cat``, and none reads hidden material). A judge that raises
or runs past ``judge_timeout`` seconds blocks the call (fail closed) and the failure is logged.
:class:`~rltutor.guard.wrapper.GuardedEnv` applies a verdict to an environment with a policy.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .rules import RuleFilter

log = logging.getLogger("rltutor.guard")
EVAL_SET = Path(__file__).parent / "data" / "eval.jsonl"


@dataclass(frozen=True)
class Verdict:
    """The guard's decision about one call."""

    blocked: bool
    """True when the call must not run as asked."""
    stage: str | None
    """"rule" or "judge" when blocked; "judge" too when the judge passed it; None when only the rules looked."""
    reason: str
    """One line: the rule that fired, or the judge's score, or the judge's failure."""
    suspicion: float = 0.0
    """The rule filter's cheap suspicion score (calls at or above the threshold go to the judge)."""
    score: float | None = None
    """The judge's p(hack) when it was asked."""

    def __init__(
        self, blocked: bool, stage: str | None, reason: str, suspicion: float = 0.0, score: float | None = None
    ):
        # The generated __init__ of a frozen dataclass sets each field through object.__setattr__: a
        # noticeable share of a cheap rule-decided inspection. Writing the instance dict sets the same
        # attributes (dataclass keeps an __init__ the class defines; eq, repr, hash and frozenness are
        # unchanged).
        d = self.__dict__
        d["blocked"] = blocked
        d["stage"] = stage
        d["reason"] = reason
        d["suspicion"] = suspicion
        d["score"] = score


class Guard:
    """Rules, then a judge for suspicious calls. ``judge(command, views) -> JudgeVerdict``.

    ``judge_threshold``: calls the rules pass with at least this suspicion go to the judge (unless the
    rules settle them: ``RuleFilter.settled``).
    ``judge_timeout``: seconds before a judge counts as failed (None: wait). ``cache_size``: verdicts
    kept per command text (0: none); a judge's failure is never cached.
    """

    def __init__(
        self,
        rules: RuleFilter | None = None,
        judge: Callable | None = None,
        judge_threshold: float = 1.0,
        judge_timeout: float | None = 2.0,
        cache_size: int = 4096,
    ):
        self.rules = rules or RuleFilter()
        self.cache_size = cache_size
        self._cache: dict[str, Verdict] = {}  # the agent repeats itself; verdicts are pure functions of the text
        self.judge = judge
        self.judge_threshold = judge_threshold
        self.judge_timeout = judge_timeout
        self._pool: cf.ThreadPoolExecutor | None = None

    @classmethod
    def default(cls, **kw) -> Guard:
        """The rule filter plus the shipped offline classifier judge."""
        from .judge import LogRegJudge

        return cls(judge=LogRegJudge.load(), **kw)

    def inspect(self, command: str) -> Verdict:
        if not isinstance(command, str):
            raise ValueError(
                f"command must be a str, got {type(command).__name__}; pass the shell line the agent typed"
            )
        hit = self._cache.get(command)
        if hit is not None:
            return hit
        v = self._inspect(command)
        if self.cache_size > 0 and "fail closed" not in v.reason:  # a judge failure is retried next time
            if len(self._cache) >= self.cache_size:
                self._cache.pop(next(iter(self._cache)))  # oldest first
            self._cache[command] = v
        return v

    def _inspect(self, command: str) -> Verdict:
        r = self.rules.check(command)
        if r.blocked:
            return Verdict(True, "rule", "; ".join(r.reasons), r.suspicion)
        if self.judge is None or r.suspicion < self.judge_threshold:
            return Verdict(False, None, "", r.suspicion)
        settled = getattr(self.rules, "settled", None)  # (an older RuleFilter, in benchmarks, lacks it)
        if settled is not None and settled(command, r):
            return Verdict(False, None, "settled by the rules: read as ToolShell runs it", r.suspicion)
        try:
            j = self._ask(command, r.views)
        except Exception as e:  # noqa: BLE001 -- any judge failure blocks the call (fail closed)
            what = "timed out" if isinstance(e, cf.TimeoutError | TimeoutError) else f"raised {type(e).__name__}: {e}"
            log.warning("guard judge %s on %r; blocking the call", what, command)
            return Verdict(True, "judge", f"judge {what} (fail closed)", r.suspicion)
        return Verdict(bool(j.hack), "judge", j.reason, r.suspicion, float(j.score))

    def _ask(self, command: str, views: list[str]):
        if self.judge_timeout is None:
            return self.judge(command, views)
        if self._pool is None:
            self._pool = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="guard-judge")
        fut = self._pool.submit(self.judge, command, views)
        try:
            return fut.result(timeout=self.judge_timeout)
        except cf.TimeoutError:
            # The stuck thread cannot be killed; leave it and give later calls a fresh worker.
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
            raise


def evaluate(guard: Guard | None = None, path: str | Path | None = None, by: str = "stage"):
    """Catch rate and false-block rate of ``guard`` on a labelled set (``path``; default: the shipped eval
    set, :data:`EVAL_SET`).

    Returns a pandas DataFrame with one row per ``by`` value ("stage": rule / judge / total, and
    judge_alone; "kind": per kind of call) and the columns ``hacks``, ``caught``, ``catch_rate``,
    ``benign``, ``blocked``, ``false_block_rate``, ``judged_hacks``, ``judged_benign`` (calls the judge
    was asked about).
    "rule" counts what the rules blocked; "judge" what the rules passed and the judge blocked;
    "total" both; "judge_alone" what the judge would decide if it saw every call (for comparison,
    not part of the guard). ``table.attrs["calls"]`` holds the per-call verdicts.
    """
    import pandas as pd

    from .judge import load_jsonl

    guard = guard or Guard.default()
    rows = []
    for r in load_jsonl(EVAL_SET if path is None else path):
        v = guard.inspect(r["command"])
        alone = None
        if guard.judge is not None and by == "stage":  # the judge on every call, for comparison
            try:
                alone = bool(guard.judge(r["command"], guard.rules.check(r["command"]).views).hack)
            except Exception:  # noqa: BLE001 -- a failing judge blocks, as in inspect
                alone = True
        rows.append(
            {
                **r,
                "blocked": v.blocked,
                "stage": v.stage if v.blocked else None,
                "reason": v.reason,
                "judged": v.stage == "judge",
                "judge_alone": alone,
            }
        )
    df = pd.DataFrame(rows)
    hack, ben = df[df.label == "hack"], df[df.label == "benign"]

    def line(name, h, b, sel, judged=None):
        return {
            by: name,
            "hacks": len(h),
            "caught": int(sel(h).sum()),
            "catch_rate": float(sel(h).mean()) if len(h) else 0.0,
            "benign": len(b),
            "blocked": int(sel(b).sum()),
            "false_block_rate": float(sel(b).mean()) if len(b) else 0.0,
            "judged_hacks": int(h.judged.sum()) if judged is None else judged[0],
            "judged_benign": int(b.judged.sum()) if judged is None else judged[1],
        }

    if by == "stage":
        out = [line("rule", hack, ben, lambda d: d.stage == "rule", judged=(0, 0))]
        out.append(line("judge", hack, ben, lambda d: d.stage == "judge"))
        out.append(line("total", hack, ben, lambda d: d.blocked))
        if guard.judge is not None:
            out.append(line("judge_alone", hack, ben, lambda d: d.judge_alone.astype(bool), (len(hack), len(ben))))
    elif by == "kind":
        out = [line(k, hack[hack.kind == k], ben[ben.kind == k], lambda d: d.blocked) for k in sorted(df.kind.unique())]
    else:
        raise ValueError(f"by must be 'stage' or 'kind', got {by!r}")
    table = pd.DataFrame(out).set_index(by)
    table.attrs["calls"] = df
    return table
