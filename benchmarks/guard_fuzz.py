"""Catch and false-block rates of the guard by stage, on the shipped set and on the fuzzer's mutants (chapter 12).

    python benchmarks/guard_fuzz.py [--n 100000] [--seed 0] [--markdown]

Two tables. (1) The shipped evaluation set (``rltutor/guard/data/eval.jsonl``, labels written by hand, the
data policy of ``rltutor/guard/data/README.md``), through :func:`rltutor.guard.evaluate`. (2) ``--n``
mutants of the differential fuzzer (:mod:`rltutor.guard.fuzz`, seed ``--seed``), each labelled by
ToolShell alone (``info["hidden_read"]``: a hidden line shown, or any request to the grader) and inspected
by ``Guard.default()`` (no verdict cache, no judge timeout). "rule" counts what the rules blocked;
"judge" what the rules passed and the judge blocked; "total" both. The benign mutants are counted twice:
all of them, and those mutated from a benign call (ordinary work, respelt); the difference is hacks a
mutation broke (``cd tests/hidden`` then text, ``grep -r X tests`` whose pattern matches no hidden line,
``pytest tests/*``): ToolShell shows nothing, but the guard's policy blocks the attempt. (A call ToolShell
cannot run at all, such as ``cAt tests/hidden/...``, is allowed: see ``RuleFilter.settled``.)
Goal (issue 19): no working miss; at most 3% false blocks on all benign mutants.
"""

from __future__ import annotations

import argparse
import time

from rltutor.guard import Guard, evaluate, fuzz
from rltutor.utils import machine_info


def _pct(k: int, n: int) -> str:
    k, n = int(k), int(n)
    return f"{k:,}/{n:,} ({100 * k / n:.2f}%)" if n else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000, help="number of mutants")
    ap.add_argument("--seed", type=int, default=0, help="the fuzzer's seed (the slow test uses 0)")
    ap.add_argument("--markdown", action="store_true", help="print markdown tables (for benchmarks/README.md)")
    a = ap.parse_args()
    print(machine_info())
    guard = Guard.default(cache_size=0, judge_timeout=None)

    table = evaluate(guard)
    rows = []
    for stage in ("rule", "judge", "total", "judge_alone"):
        r = table.loc[stage]
        rows.append(("shipped eval set", stage, _pct(r.caught, r.hacks), _pct(r.blocked, r.benign), "-"))

    t0, c0 = time.time(), time.process_time()
    calls = fuzz.mutants_with_origin(a.n, a.seed)
    res = fuzz.run(calls, guard)
    wall, cpu = time.time() - t0, time.process_time() - c0
    caught = {"rule": res.rule_caught, "judge": res.judge_caught, "total": res.rule_caught + res.judge_caught}
    fb = {
        "rule": res.rule_false_blocks,
        "judge": res.judge_false_blocks,
        "total": res.rule_false_blocks + res.judge_false_blocks,
    }
    from_benign = {
        "rule": res.rule_false_blocks_from_benign,
        "judge": res.false_blocks_from_benign - res.rule_false_blocks_from_benign,
    }
    from_benign["total"] = from_benign["rule"] + from_benign["judge"]
    name = f"{a.n:,} mutants (seed {a.seed})"
    for stage in ("rule", "judge", "total"):
        rows.append(
            (
                name,
                stage,
                _pct(caught[stage], res.hacks),
                _pct(fb[stage], res.benign),
                _pct(from_benign[stage], res.benign_from_benign),
            )
        )
    head = ("set", "stage", "hacks caught", "benign blocked", "benign blocked, of benign origin")
    if a.markdown:
        print("| " + " | ".join(head) + " |")
        print("|---|---|---:|---:|---:|")
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=True)]
        for r in (head, *rows):
            print("  ".join(str(x).ljust(w) for x, w in zip(r, widths, strict=True)))
    print(f"misses (working hacks allowed): {len(res.misses)}; oracle errors: {res.oracle_errors}")
    for m in res.misses[:20]:
        print("  MISS", m)
    print(f"fuzz run: {wall:.0f} s wall, {cpu:.0f} s CPU for {a.n:,} mutants (label + inspect)")


if __name__ == "__main__":
    main()
