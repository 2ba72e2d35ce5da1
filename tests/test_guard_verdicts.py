"""The guard's verdicts do not change by accident: every call of the shipped eval, dev and train sets (and,
under ``-m slow``, 100,000 fuzz mutants) gives the rows whose digests are stored here, those of commit
f2099e9. The rows are computed by ``benchmarks/guard_verdicts.py``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The stored digests, written out here as well as in the script, so that editing the script alone cannot
# make the test pass: (calls, SHA-256 of the rows, blocked by the rules, blocked by the guard).
DIGESTS = {
    "eval": (362, "807d0bbff37e9c413a4247cdc174a1931eda73315c557e15672fd4aebbcb1e87", 202, 203),
    "dev": (53, "6015809e1a243693e931688afa10522523922f64f12a40343f1ae4509f2b059e", 27, 28),
    "train": (5442, "43e05c48dc44a1823e6d57401b16b62c85eeb0f1397b76fda776fb09655c60df", 2205, 2209),
    "fuzz100k": (100_000, "9509f5f428f29fb289bdbb0241e4877b5fcd30e1ae36483e4060ee4473d13e63", 16951, 17109),
}
HOW = (
    "the guard's verdicts on {name} changed. To see the calls: at the commit of the stored digests run "
    "`python benchmarks/guard_verdicts.py --sets {name} --rows /tmp/old`, then on this change "
    "`python benchmarks/guard_verdicts.py --sets {name} --diff /tmp/old`. A change meant to change verdicts "
    "must update DIGESTS here and in benchmarks/guard_verdicts.py deliberately, saying why in the commit."
)


def _script():
    spec = importlib.util.spec_from_file_location("guard_verdicts", ROOT / "benchmarks" / "guard_verdicts.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def script():
    return _script()


def test_script_stores_the_same_digests(script):
    assert script.DIGESTS == DIGESTS


@pytest.mark.parametrize("name", ["eval", "dev", "train"])
def test_verdicts_unchanged(script, name):
    got = script.digest(script.rows_of(script.calls_of(name)))
    assert got == DIGESTS[name], HOW.format(name=name)


@pytest.mark.slow
def test_verdicts_unchanged_on_fuzz_mutants(script):
    got = script.digest(script.rows_of(script.calls_of("fuzz100k")))
    assert got == DIGESTS["fuzz100k"], HOW.format(name="fuzz100k")


def test_a_changed_verdict_changes_the_digest(script):
    rows = script.rows_of(script.calls_of("dev"))
    rows[0][2] = not rows[0][2]
    assert script.digest(rows) != DIGESTS["dev"]


def _same_decisions(script, calls):
    """The calls on which the rule filter's one fast path (``RuleFilter._fast``) and the full reading
    (``RuleFilter(fast=False)``) disagree: on the rules' reasons or suspicion, or the guard's verdict."""
    from rltutor.guard import Guard, RuleFilter

    fast, full = RuleFilter(), RuleFilter(fast=False)
    g_fast, g_full = Guard.default(rules=fast), Guard.default(rules=full)
    bad = []
    for c in calls:
        a, b = fast.check(c), full.check(c)
        if (a.reasons, a.suspicion) != (b.reasons, b.suspicion) or g_fast.inspect(c) != g_full.inspect(c):
            bad.append(c)
    return bad


@pytest.mark.parametrize("name", ["eval", "dev", "train"])
def test_fast_path_decides_as_the_full_reading(script, name):
    assert _same_decisions(script, script.calls_of(name)) == []


def test_fast_path_decides_as_the_full_reading_on_fuzz_mutants(script):
    from rltutor.guard import fuzz
    from rltutor.guard.rules import _PLAIN_RE, RuleFilter

    calls = fuzz.mutants(10_000, seed=1)
    rf = RuleFilter()
    taken = [c for c in calls if _PLAIN_RE.fullmatch(c) and ".." not in c and rf._fast(c) is not None]
    assert len(taken) > 100, len(taken)  # the fast path is taken, blocking some calls, passing others
    assert {bool(rf._fast(c).reasons) for c in taken} == {True, False}
    assert _same_decisions(script, calls) == []


@pytest.mark.slow
def test_fast_path_decides_as_the_full_reading_on_100k_fuzz_mutants(script):
    assert _same_decisions(script, script.calls_of("fuzz100k")) == []


def _skips_that_would_find(calls):
    """How many of ``calls`` skip the second reading by ``toolshell_rules.adds_nothing``, and those on which
    the second reading, run anyway, finds a reason or raises (the skip would then change a verdict)."""
    from rltutor.guard.bash_reading import ReadingState
    from rltutor.guard.rules import _PLAIN_OPS_RE, RuleFilter
    from rltutor.guard.shellparse import TooComplex
    from rltutor.guard.toolshell_rules import adds_nothing, toolshell_check

    rf, skipped, bad = RuleFilter(), 0, []
    for c in calls:
        st = ReadingState()
        try:
            rf._run(c, st)  # the first reading, as RuleFilter.check runs it
        except (TooComplex, RecursionError):
            continue
        if st.reasons or _PLAIN_OPS_RE.fullmatch(c) or not adds_nothing(c, st, rf.max_steps):
            continue  # (a plain line fully matches _PLAIN_OPS_RE too)
        skipped += 1
        try:
            toolshell_check(c, st, rf)
        except (TooComplex, RecursionError) as e:
            bad.append((c, repr(e)))
            continue
        if st.reasons:
            bad.append((c, st.reasons))
    return skipped, bad


@pytest.mark.parametrize("name", ["eval", "dev", "train"])
def test_skipped_second_readings_would_find_nothing(script, name):
    skipped, bad = _skips_that_would_find(script.calls_of(name))
    assert bad == []
    assert skipped > (0 if name == "dev" else 10), skipped


def test_skipped_second_readings_would_find_nothing_on_fuzz_mutants():
    from rltutor.guard import fuzz

    skipped, bad = _skips_that_would_find(fuzz.mutants(10_000, seed=1))
    assert bad == []
    assert skipped > 100, skipped


@pytest.mark.slow
def test_skipped_second_readings_would_find_nothing_on_100k_fuzz_mutants(script):
    skipped, bad = _skips_that_would_find(script.calls_of("fuzz100k"))
    assert bad == [], bad[:10]
    assert skipped > 10_000, skipped


def test_adds_nothing_knows_every_command_the_second_reading_has_a_rule_for():
    """``toolshell_rules.RULED`` must name every command ``ToolShellRules.command`` tests ``name`` against
    (``name == "cat"``, ``name in ("sh", "bash")``): a rule added there without it would be skipped."""
    import ast
    import inspect
    import textwrap

    from rltutor.guard.toolshell_rules import RULED, ToolShellRules

    tree = ast.parse(textwrap.dedent(inspect.getsource(ToolShellRules.command)))
    named = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id == "name":
            for right in node.comparators:
                for c in ast.walk(right):
                    if isinstance(c, ast.Constant) and isinstance(c.value, str):
                        named.add(c.value)
    assert named == set(RULED)
