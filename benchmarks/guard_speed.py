"""How many calls per second the guard inspects (chapter 7). Not a unit test: run it by hand.

    python benchmarks/guard_speed.py [--seconds 3] [--repeats 5] [--baseline OLD_CHECKOUT ...]

Measures ``Guard.default().inspect`` on calls the rules decide (blocked by a rule, or passed with
a suspicion below the judge threshold) and, separately, on calls that go to the offline judge, for
two kinds of traffic: the plain calls an agent types most, and heavily obfuscated calls.
There is no cache: every call is parsed from scratch. Target: >= 20,000 rule-decided calls/s.

Rates are CPU time (``time.process_time``) of the measuring process, the median of ``--repeats`` runs,
so other work on the machine disturbs them less than wall time would. ``--baseline`` takes the root of a
checkout of an older commit (``git worktree add /tmp/old 4fd66bb``, or ``git archive 4fd66bb | tar -x -C
/tmp/old``) and measures its whole ``Guard.default()`` on the same calls, in a child process with that
checkout first on ``sys.path``, repeats interleaved with the current checkout's, measured the same way
in a child process of its own, to compare the two side by side; ``--baseline`` may be given several
times (each line then says current / baseline). (Issue 20 split ``rules.py`` into
modules, so a saved copy of the one file no longer loads.)

Measured on 2026-12-01 (``--seconds 6 --repeats 7``, baseline: ``rules.py`` before the speed work of
issue 12; ``CPU: AMD EPYC; torch 2.13.0+cpu, CPU kernel level AVX2; 2 logical CPUs``; three runs on a
shared machine, rule-decided inspections per second, old -> current)::

    plain agent calls      57,007 / 55,251 / 99,804  ->  94,680 / 86,387 / 157,108
    obfuscated calls       21,659 / 24,244 / 23,558  ->  32,639 / 34,292 / 32,885

After issue 19 (the rules' second reading, as ToolShell executes a call; baseline: ``rules.py`` of commit
40c52bb; one run, load average 3.2-3.6): plain 111,203 -> 87,616, obfuscated 26,468 -> 20,819. Its second
pass (case-sensitive names, settled calls; baseline: ``rules.py`` of commit 5dca61e; load 1.3-1.4): plain
117,260 -> 124,905, obfuscated 26,299 -> 26,420 (settled calls are counted with those sent to the judge).

Issue 20, after ``rules.py`` was split (2026-12-02; callgrind ``--instr-atstart=no``, instrumentation on
around one pass of ``RuleFilter.check`` after a warm-up pass; AMD EPYC, python 3.11.7): a rule-decided
obfuscated check takes 159,300 instructions (77af057: 158,700). Where they go, each part measured alone on
the calls that reach it, per check of the set: the ``python -c`` analysis 39,700 (CPython's ``compile`` to
an AST alone 19,700: 9% of the calls, 25% of the work), ``suspicion`` 20,900, the second reading (ToolShell's
own lexer and word expansion, 13% of the calls) 17,700, the tokenizer 17,100, the base64 scan of step 6
9,600; the first reading's interpreter and rules the rest. Interleaved with 77af057 (``--baseline``, load
5.6 and 4-6): 1.06x and 0.92x, the same speed; obfuscated 16,822 and 15,392/s under that load.

Where the cost since 5dca61e (the last state before issue 20's guard work) came from, bisected by
instruction count (2026-12-02, 05:25-05:40 UTC; AMD EPYC, 2 logical CPUs, python 3.11.7; callgrind
``--instr-atstart=no``, instrumentation on around one pass of ``Guard.default(cache_size=0).inspect`` over
the 1,464 calls the current rules decide, after a warm-up pass; the same calls for every commit; a little
more than ``RuleFilter.check`` alone). Instructions per rule-decided obfuscated inspection::

    5dca61e  before issue 20 (generated suspicion, AST aliases, three parse paths)   149,700
    bd6f1f7  + ToolShell's work metering (issue 19's shell branch)                   150,400
    be3ea83  + the guard's second pass of issue 19 (case, quoted assignments)        152,300
    72e4d5b, f2099e9  (the python stand-in's work budget; nothing else guard-side)   152,300 / 151,800
    b556137  ToolShell's parser pieces public (renames)                              151,900
    5a055bb  the split: plain suspicion loop, NodeVisitor with isinstance            204,800
    06d3472  one fast path, no plain-split shortcut, COMMAND_RULES                   210,800
    53c7e18  merge of that branch (804d93d, 282a342 won most of it back)             177,600
    77af057, HEAD  (2c56dff, c83128e, fffb632, 897d836; then the three-module split) 164,900 / 165,000

So issue 19 cost 1.4% and issue 20 the rest: HEAD is 0.907x of 5dca61e by instructions. Two changes
account for 11,200 of the 13,200 instructions between HEAD and f2099e9, measured by putting
each back into a copy of HEAD (measurement only, not committed): the generated ``or`` chains for
``suspicion`` (with the rare-character gate on the ``\\`` and ``|`` words) would save 7,100 (165,000 ->
157,950), the removed split of plain lines in the first reading (lines with no quotes or $, split on
blanks and ``;|&`` instead of tokenized and read as quoted lines) 4,100 (-> 160,980). Both are what the
issue asks to remove (no generated code; one fast path, not three parse paths), so no regression is left
to win back inside its rules. Tried and dropped, each slower on these calls with the same results: one
regex per suspicion group (``re`` alternation, 4.3-5.5 against 3.8-4.1 us), ``any(map(text.__contains__,
words))`` per group, reordering each group's words by how often they hit (33.4 -> 31.5 tests a call, about
1%), and a base64 scan without the ``{12,}`` bound (1.9 against 0.65 us).

The timings' gap is wider than the instructions' (0.91x): ``--seconds 6 --repeats 5 --decided-only
--baseline /tmp/old_5dca61e`` at 05:37-05:39 UTC (load 1.0-1.5): obfuscated 18,954/s against 24,898/s
(0.76x), plain 60,624/s against 76,402/s (0.79x). Callgrind's cache and branch simulation
(``--cache-sim=yes --branch-sim=yes``, the same pass) says why: besides 1.10x the instructions, HEAD has
1.10x the first-level instruction-cache misses (4.51 M against 4.11 M for the pass) and 1.15x the
mispredicted indirect branches (3.04 M against 2.64 M; the interpreter's dispatch, with the rules spread
over more functions and modules and dispatched through tables). At about 10 cycles an instruction-cache
miss and 15-20 a mispredict, and 2 instructions a cycle otherwise (estimates, no counters on this machine),
that is 0.80-0.85x in cycles, as the timings show. The 20,000/s goal on obfuscated calls, shown only by the
generated code and its shortcuts, is not met by the code the issue asks for on this machine.

Less work on the same reading (2026-12-02, issue 20; callgrind as above, one pass over the 1,464 rule-decided
obfuscated calls after a warm-up pass, b9a2265 -> this change): ``RuleFilter.check`` 159,200 -> 151,500
instructions, ``Guard.inspect`` 165,300 -> 158,200 (0.957x), every digest of ``guard_verdicts.py`` unchanged.
``QUOTED_LINE_RE`` reads a line without quotes as one character-class run (its matches 4,700 -> 2,600 a check);
step 5 skips the second reading of a quoted line whose command it has no rule for or whose ``python -c`` code
the first reading analysed (``toolshell_rules.adds_nothing``; ``tests/test_guard_verdicts.py`` reruns it on
every skipped call) and no longer substitutes every space to find a line unchanged (17,800 -> 11,100); the
tokenizer reads operators without a regex. What is left, each part measured alone: the ``python -c`` parse
(``compile`` and freeing its tree) 21,200, ``suspicion`` 20,000, the tokenizer 13,800, the second reading
11,100, ``quoted_words`` 6,600, the base64 scan 5,900. Timings interleaved with b9a2265 (``--seconds 6
--repeats 7 --decided-only --baseline``, 13:18-13:22 UTC, load 2.6-3.2, this machine reporting AVX512):
obfuscated 30,145 and 33,459/s against 31,117 and 29,075/s (0.97x, 1.15x): the goal is met here by both,
and the ratio is within the machine's noise.

See ``benchmarks/README.md`` (section guard_speed) for the details.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import torch

from rltutor.guard import Guard
from rltutor.guard.judge_training import generate_training_set
from rltutor.utils import machine_info


def rate(guard: Guard, calls: list[str], seconds: float) -> float:
    """Inspections per CPU second over whole passes through ``calls``, for about ``seconds``."""
    n, t0 = 0, time.process_time()
    while time.process_time() - t0 < seconds:
        for c in calls:
            guard.inspect(c)
        n += len(calls)
    return n / (time.process_time() - t0)


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # this checkout


def baseline_rate(checkout: str, calls: list[str], seconds: float) -> float:
    """:func:`rate` of ``Guard.default(cache_size=0)`` of the package in ``checkout``, in a child process."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(calls, fh)
    # rate(), in the child: the checkout's own rltutor (it runs from there, so "" on sys.path is the checkout)
    code = (
        "import json, sys, time\n"
        "from rltutor.guard import Guard\n"
        "assert Guard.__module__.startswith('rltutor.guard')\n"
        "guard, calls, seconds = Guard.default(cache_size=0), json.load(open(sys.argv[1])), float(sys.argv[2])\n"
        "for c in calls:\n"  # warm up, as the parent did when it sorted the calls (imports, caches)
        "    guard.inspect(c)\n"
        "n, t0 = 0, time.process_time()\n"
        "while time.process_time() - t0 < seconds:\n"
        "    for c in calls:\n"
        "        guard.inspect(c)\n"
        "    n += len(calls)\n"
        "print(sys.modules['rltutor'].__file__, n / (time.process_time() - t0))\n"
    )
    root = os.path.abspath(checkout)
    try:
        out = subprocess.run(
            [sys.executable, "-c", code, fh.name, str(seconds)],
            env={**os.environ, "PYTHONPATH": root},
            cwd=root,
            capture_output=True,
            text=True,
        )
    finally:
        os.unlink(fh.name)
    if out.returncode:
        raise SystemExit(f"the baseline checkout {checkout} failed:\n{out.stderr[-2000:]}")
    where, r = out.stdout.split()[-2:]
    if not where.startswith(root):
        raise SystemExit(f"the baseline imported rltutor from {where}, not from {root}")
    return float(r)


def rates(guard: Guard, calls: list[str], seconds: float, repeats: int, baselines: list[str]) -> dict[str, float]:
    """Median rate of ``guard`` (and of each ``baselines`` checkout's) over ``repeats`` runs, interleaved."""
    runs: dict[str, list[float]] = {"current": [], **{b: [] for b in baselines}}
    for _ in range(repeats):
        if baselines:  # all in a child process, the same way (a child measures up to 1.2x faster)
            runs["current"].append(baseline_rate(ROOT, calls, seconds / repeats))
            for b in baselines:
                runs[b].append(baseline_rate(b, calls, seconds / repeats))
        else:
            runs["current"].append(rate(guard, calls, seconds / repeats))
    return {k: statistics.median(v) for k, v in runs.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0, help="CPU seconds per set and guard, all repeats")
    ap.add_argument("--repeats", type=int, default=5, help="runs per set and guard; the median is reported")
    ap.add_argument(
        "--baseline",
        action="append",
        default=[],
        help="the root of a checkout of an older commit, measured side by side (repeat for several)",
    )
    ap.add_argument("--sets", nargs="+", default=["plain", "obfuscated"], choices=["plain", "obfuscated"])
    ap.add_argument("--decided-only", action="store_true", help="skip the calls sent to the judge (not the goal)")
    a = ap.parse_args()
    guard = Guard.default(cache_size=0)  # no cache: every call is parsed from scratch
    print(machine_info())
    print(f"threads: {torch.get_num_threads()}; python {platform.python_version()}; CPU time, median of {a.repeats}")
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
    sets = {k: v for k, v in sets.items() if k.split()[0] in a.sets}
    decided = {}
    for name, calls in sets.items():
        by_rules = [c for c in calls if guard.rules.check(c).blocked or guard.rules.check(c).suspicion < 1.0]
        by_judge = [c for c in calls if c not in set(by_rules)]
        for what, subset in (("decided by the rules:", by_rules), ("sent to the judge:  ", by_judge)):
            if not subset or (a.decided_only and not what.startswith("decided")):
                continue
            got = rates(guard, subset, a.seconds, a.repeats, a.baseline)
            if what.startswith("decided"):
                decided[name] = got["current"]
            for k, r in got.items():
                label = f" [{k}] ({got['current'] / r:.2f}x)" if a.baseline and k != "current" else ""
                label = " [current]" if a.baseline and k == "current" else label
                print(
                    f"{name:18s} {what} {len(subset):4d} distinct, {r:9,.0f} inspections/s "
                    f"({1e6 / r:6.1f} us each){label}"
                )
    for name, r in decided.items():
        print(f"target >= 20,000/s for rule-decided {name}:", "met" if r >= 20_000 else "NOT met")


if __name__ == "__main__":
    main()
