"""Every verdict of the guard, as digests: the check that a change to the guard's code changed no verdict.

    python benchmarks/guard_verdicts.py [--sets eval dev train fuzz100k] [--rows PREFIX] [--diff PREFIX]

For every call of ``rltutor/guard/data/{eval,dev,train}.jsonl`` and of ``fuzz.mutants(100_000, seed=0)``
it computes one row: the rule filter's result (blocked, reasons) and the full guard's verdict (blocked,
stage, reason, suspicion, judge score), and prints the SHA-256 of each set's rows (as JSON) beside the
digest stored in :data:`DIGESTS`. ``tests/test_guard_verdicts.py`` runs the same check (the 100k fuzz set
under ``-m slow``).

When a digest differs: ``--rows PREFIX`` writes each set's rows to ``PREFIX.<set>.json``; run it at the
commit whose digests are stored (``git stash`` or ``git worktree add``), then ``--diff PREFIX`` on the
change prints the calls whose rows differ. A change that is *meant* to change
verdicts must update :data:`DIGESTS` (and the test's copy) deliberately, in a commit that says why.

The digests were computed at commit f2099e9 (after issue 19, before issue 20 split the guard) with
``/work/wt/baseline/guard_verdicts.py``; this script computes the same rows.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path

from rltutor.guard import Guard, fuzz
from rltutor.guard.judge import load_jsonl
from rltutor.guard.rules import RuleFilter

DATA = Path(__file__).resolve().parents[1] / "rltutor" / "guard" / "data"
SETS = ("eval", "dev", "train", "fuzz100k")
# The digests of commit f2099e9: (number of calls, SHA-256 of the rows, blocked by the rules, blocked).
DIGESTS = {
    "eval": (362, "807d0bbff37e9c413a4247cdc174a1931eda73315c557e15672fd4aebbcb1e87", 202, 203),
    "dev": (53, "6015809e1a243693e931688afa10522523922f64f12a40343f1ae4509f2b059e", 27, 28),
    "train": (5442, "43e05c48dc44a1823e6d57401b16b62c85eeb0f1397b76fda776fb09655c60df", 2205, 2209),
    "fuzz100k": (100_000, "9509f5f428f29fb289bdbb0241e4877b5fcd30e1ae36483e4060ee4473d13e63", 16951, 17109),
}


def calls_of(name: str) -> list[str]:
    """The calls of one set: a shipped data file, or the fuzzer's 100,000 mutants of seed 0."""
    if name == "fuzz100k":
        return fuzz.mutants(100_000, seed=0)
    if name not in SETS:
        raise ValueError(f"unknown set {name!r}; pass one of {', '.join(SETS)}")
    return [r["command"] for r in load_jsonl(DATA / f"{name}.jsonl")]


def rows_of(calls: list[str], guard: Guard | None = None, rules: RuleFilter | None = None) -> list[list]:
    """One row per call: ``[rules blocked, rules reasons, blocked, stage, reason, suspicion, score]``."""
    guard = guard or Guard.default()
    rules = rules or RuleFilter()
    rows = []
    for c in calls:
        r, v = rules.check(c), guard.inspect(c)
        score = None if v.score is None else round(v.score, 9)
        rows.append([r.blocked, list(r.reasons), v.blocked, v.stage, v.reason, round(v.suspicion, 9), score])
    return rows


def digest(rows: list[list]) -> tuple[int, str, int, int]:
    """``(calls, SHA-256 of the rows as JSON, blocked by the rules, blocked by the guard)``, as in DIGESTS."""
    sha = hashlib.sha256(json.dumps(rows).encode()).hexdigest()
    return len(rows), sha, sum(r[0] for r in rows), sum(r[2] for r in rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
    ap.add_argument("--rows", help="write each set's rows to PREFIX.<set>.json (to diff two commits)")
    ap.add_argument("--diff", help="compare each set's rows with PREFIX.<set>.json; print the calls that differ")
    a = ap.parse_args()
    guard, ok = Guard.default(), True
    for name in a.sets:
        t0 = time.perf_counter()
        calls = calls_of(name)
        rows = rows_of(calls, guard)
        got = digest(rows)
        same = got == DIGESTS[name]
        ok &= same
        print(
            f"{name:9s} {got[0]:7,d} calls  sha256 {got[1][:16]}  rules {got[2]:6,d}  guard {got[3]:6,d}  "
            f"{'matches' if same else 'DIFFERS from ' + DIGESTS[name][1][:16]}  ({time.perf_counter() - t0:.0f} s)"
        )
        if a.rows:
            Path(f"{a.rows}.{name}.json").write_text(json.dumps(rows))
        if a.diff:
            old = json.loads(Path(f"{a.diff}.{name}.json").read_text())
            for c, x, y in zip(calls, old, rows, strict=True):
                if x != y:
                    print(f"  {c!r}\n    was {x}\n    now {y}")
    print("all digests match" if ok else "some digests differ: see the docstring for how to find the calls")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
