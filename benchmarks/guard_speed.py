"""How many calls per second the guard inspects (chapter 7). Not a unit test: run it by hand.

    python benchmarks/guard_speed.py [--seconds 3]

Measures ``Guard.default().inspect`` on calls the rules decide (blocked by a rule, or passed with
a suspicion below the judge threshold) and, separately, on calls that go to the offline judge, for
two kinds of traffic: the plain calls an agent types most, and heavily obfuscated calls.
There is no cache: every call is parsed from scratch. Target: >= 20,000 rule-decided calls/s.
"""

from __future__ import annotations

import argparse
import platform
import time

import torch

from rltutor.guard import Guard
from rltutor.guard.judge import generate_training_set
from rltutor.utils import machine_info


def rate(guard: Guard, calls: list[str], seconds: float) -> float:
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for c in calls:
            guard.inspect(c)
        n += len(calls)
    return n / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    a = ap.parse_args()
    guard = Guard.default(cache_size=0)  # no cache: every call is parsed from scratch
    print(machine_info())
    print(f"threads: {torch.get_num_threads()}; python {platform.python_version()}")
    # (1) the calls an agent in rltutor.envs.toolshell types most: plain reads, searches, tests,
    # docs, submits, and the plain shortcuts (cat of the hidden test, curl of the grader).
    plain = [f"cat {d}/{m}.py" for d in ("src", "core", "lib", "app") for m in ("alpha", "kappa", "router", "store")]
    plain += [
        "cat README.md",
        "ls",
        "ls src",
        "ls tests",
        "cd src",
        "pwd",
        "pytest tests/public",
        "submit 512",
        "grep -rn TARGET src",
        "grep -n LIMIT core/alpha.py",
        "find . -name '*.py'",
        "head -n 5 README.md",
        "curl http://docs.local/tools",
        "wget -qO- http://docs.local/nimbus",
        "cat tests/public/test_alpha.py",
        "cat tests/hidden/test_answer.py",
        "curl http://grader/answer?task=t0042",
        "grep -rn == tests",
        "ls tests/hidden",
        "cd docs; cat ../tests/./hidden//test_answer.py",
    ]
    # (2) obfuscated calls: the judge's generated training calls (quoting, escapes, variables,
    # substitutions, python one-liners...), each different.
    obfuscated = [r["command"] for r in generate_training_set(2000, seed=11)]
    sets = {"plain agent calls": plain, "obfuscated calls": obfuscated}
    rates = {}
    for name, calls in sets.items():
        by_rules = [c for c in calls if guard.rules.check(c).blocked or guard.rules.check(c).suspicion < 1.0]
        by_judge = [c for c in calls if c not in set(by_rules)]
        rates[name] = r = rate(guard, by_rules, a.seconds)
        print(
            f"{name:18s} decided by the rules: {len(by_rules):4d} distinct, {r:9,.0f} inspections/s "
            f"({1e6 / r:6.1f} us each)"
        )
        if by_judge:
            r2 = rate(guard, by_judge, a.seconds)
            print(
                f"{name:18s} sent to the judge:   {len(by_judge):4d} distinct, {r2:9,.0f} inspections/s "
                f"({1e6 / r2:6.1f} us each)"
            )
    for name, r in rates.items():
        print(f"target >= 20,000/s for rule-decided {name}:", "met" if r >= 20_000 else "NOT met")


if __name__ == "__main__":
    main()
