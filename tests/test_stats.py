"""The verdict machinery of the labs, on synthetic data where the truth is known.

A planted effect is confirmed, a planted null with enough seeds comes out equivalent, Holm's correction
keeps the family-wise error rate at alpha, and the power analysis gives the power it promises.
"""

import math

import numpy as np
import pandas as pd
import pytest

from rltutor.experiments import stats

SIMS = 400  # simulated experiments per check: a rate near 0.05 is then known to about +-0.02 (one sd 0.011)


def _arms(rng, effect: float, n: int, sd: float = 1.0):
    """A two-arm contrast (a - b) with true difference ``effect``."""
    a = pd.Series(rng.normal(effect, sd, n))
    b = pd.Series(rng.normal(0.0, sd, n))
    return [(1.0, a), (-1.0, b)]


@pytest.mark.parametrize(
    ("t", "df", "want"),
    [
        (2.0, 1, 0.5 + math.atan(2.0) / math.pi),  # Cauchy: closed form
        (1.0, 2, 0.5 + 1.0 / (2 * math.sqrt(3.0))),  # df = 2: 1/2 + t / (2 sqrt(2 + t^2))
        (-1.5, 2, 0.5 - 1.5 / (2 * math.sqrt(4.25))),
        (0.0, 7.3, 0.5),
    ],
)
def test_t_cdf_matches_closed_forms(t, df, want):
    assert stats.t_cdf(t, df) == pytest.approx(want, abs=1e-12)


def test_t_ppf_inverts_the_cdf_and_matches_the_tables():
    for df in (1, 2, 3.5, 10, 200):
        for q in (0.6, 0.8, 0.975, 0.999):
            assert stats.t_cdf(stats.t_ppf(q, df), df) == pytest.approx(q, abs=1e-10)
    assert stats.t_ppf(0.975, 4) == pytest.approx(2.776, abs=5e-4)  # the standard table
    assert stats.t_ppf(0.975, 1e7) == pytest.approx(1.95996, abs=1e-4)  # the normal limit
    assert stats.t_ppf(0.2, 5) == pytest.approx(-stats.t_ppf(0.8, 5))


def test_holm_adjusts_step_down_and_skips_nan():
    adj = stats.holm([0.01, 0.04, 0.03, 0.005, float("nan")])
    assert adj[:4] == pytest.approx([0.03, 0.06, 0.06, 0.02])  # 4 x 0.005, 3 x 0.01, max(2 x 0.03, 0.04)
    assert math.isnan(adj[4])


def test_a_planted_effect_is_confirmed_and_its_opposite_refuted():
    rng = np.random.default_rng(0)
    ups = [stats.verdict_row("up", "m", _arms(rng, 2.0, 10))["verdict"] for _ in range(50)]
    downs = [stats.verdict_row("down", "m", _arms(rng, -2.0, 10))["verdict"] for _ in range(50)]
    assert ups.count("confirmed") >= 48 and downs.count("refuted") >= 48  # power at 2 sd with 10 seeds: 0.99


def test_a_planted_null_with_enough_seeds_is_equivalent_and_with_few_undecided():
    rng = np.random.default_rng(1)
    n = stats.seeds_for_power(1.0, 0.8, paired=False)  # enough seeds to see 0.8 sd
    many = [stats.verdict_row("null", "m", _arms(rng, 0.0, 4 * n), delta=0.8)["verdict"] for _ in range(100)]
    few = [stats.verdict_row("null", "m", _arms(rng, 0.0, 3), delta=0.8)["verdict"] for _ in range(100)]
    assert many.count("equivalent") >= 90
    assert few.count("undecided") >= 90  # 3 seeds cannot rule out 0.8 sd
    assert "equivalent" not in [stats.verdict_row("x", "m", _arms(rng, 0.0, 50))["verdict"] for _ in range(20)]


def test_equivalence_means_the_interval_inside_delta():
    row = stats.verdict_row("x", "m", [(1.0, pd.Series([0.01, -0.01, 0.02, 0.0, 0.005]))], delta=0.05)
    assert row["verdict"] == "equivalent" and -0.05 < row["ci_low"] and row["ci_high"] < 0.05
    assert row["p_equiv"] < 0.05 < row["p"]


def test_holm_keeps_the_family_wise_error_rate_and_the_strong_effect():
    rng = np.random.default_rng(2)
    false_raw = false_holm = kept = 0
    for _ in range(SIMS):
        family = pd.DataFrame([stats.verdict_row(f"null {i}", "m", _arms(rng, 0.0, 5)) for i in range(5)])
        decided = stats.decide(family)
        false_raw += (family["verdict"] != "undecided").any()
        false_holm += (decided["verdict"] != "undecided").any()
        strong = pd.concat([family, pd.DataFrame([stats.verdict_row("strong", "m", _arms(rng, 4.0, 5))])])
        kept += stats.decide(strong)["verdict"].iloc[-1] == "confirmed"
    assert false_raw / SIMS > 0.15  # five uncorrected tests: 1 - 0.95^5 = 0.23 of families have a false verdict
    assert false_holm / SIMS < 0.075  # Holm: at most alpha = 0.05 (plus Monte-Carlo error)
    assert kept / SIMS > 0.85


@pytest.mark.parametrize("paired", [True, False])
def test_seeds_for_power_gives_the_power_it_promises(paired):
    rng = np.random.default_rng(3)
    sd, delta = 1.0, 1.2
    n = stats.seeds_for_power(sd, delta, paired=paired)
    found = 0
    for _ in range(SIMS):
        if paired:
            arms = [(1.0, pd.Series(rng.normal(delta, sd, n)))]
        else:
            arms = _arms(rng, delta, n, sd)
        found += stats.verdict_row("x", "m", arms)["verdict"] == "confirmed"
    assert 0.74 < found / SIMS < 0.95  # promised: at least 0.8 (n is rounded up)
    assert stats.seeds_for_power(sd, delta, paired=paired, tests=5) > n  # a stricter level needs more seeds


@pytest.mark.parametrize("paired", [True, False])
def test_seeds_for_power_is_the_smallest_n_that_detects_delta(paired):
    """The search starts at the normal approximation's n; it must still return the smallest n of a full scan."""

    def detects(m, sd, delta, tests):
        se, df = (sd / m**0.5, m - 1) if paired else (sd * (2 / m) ** 0.5, 2 * m - 2)
        return stats.detectable_effect(se, df, 0.05 / tests) <= delta

    for sd, delta, tests in ((0.03, 0.05, 6), (0.3, 0.05, 1), (0.01, 0.2, 1), (1.0, 0.5, 3)):
        n = stats.seeds_for_power(sd, delta, paired=paired, tests=tests)
        assert detects(n, sd, delta, tests)
        assert not any(detects(m, sd, delta, tests) for m in range(2, n))


def test_describe_states_the_outcome_the_correction_and_the_detectable_effect():
    table = pd.DataFrame(
        [
            stats.verdict_row("a - b", "reward", [(1, pd.Series([0.1, -0.1, 0.05]))]),
            stats.verdict_row("c", "m", [(1, pd.Series([1.0, 1.1, 1.2]))]),
            stats.verdict_row("d", "m", [(1, pd.Series([0.001, -0.001, 0.0, 0.002]))], delta=0.05),
        ]
    )
    first, second, third = stats.describe(table)
    assert "undecided" in first and "with 80% power" in first and "Holm-adjusted over 3 tests" in first
    assert "could not have been seen" not in first
    assert second.endswith("confirmed")
    assert "equivalent (no effect as large as 0.050)" in third


def test_bad_delta_and_bad_tables_are_refused_with_the_fix():
    with pytest.raises(ValueError, match="delta must be > 0"):
        stats.verdict_row("x", "m", [(1, pd.Series([1.0, 2.0]))], delta=0)
    with pytest.raises(ValueError, match="smallest effect of interest"):
        stats.seeds_for_power(1.0, -0.1)
    with pytest.raises(ValueError, match="rows of verdict_row"):
        stats.decide(pd.DataFrame({"contrast": ["x"]}))


def test_training_gains_read_each_run_from_its_own_start_and_flag_an_arm_that_did_not_learn():
    rows = []
    for seed in range(6):
        for u in range(1, 11):
            rows.append({"arm": "up", "K": 1, "seed": seed, "update": u, "r": 0.1 * u + 0.01 * seed})
            rows.append({"arm": "flat", "K": 1, "seed": seed, "update": u, "r": 0.5 + 0.05 * (u > 5) * (-1) ** seed})
    g = stats.training_gains(pd.DataFrame(rows), ["arm", "K"], "r", last=2, first=2).set_index("arm")
    assert g.loc["up", "gain"] == pytest.approx(0.8) and g.loc["up", "learned"]  # 0.95 - 0.15 in every run
    assert g.loc["up", "start"] == pytest.approx(0.15 + 0.025) and g.loc["up", "seeds"] == 6
    assert not g.loc["flat", "learned"] and g.loc["flat", "gain_low"] < 0 < g.loc["flat", "gain_high"]
    with pytest.raises(ValueError, match="needs the columns"):
        stats.training_gains(pd.DataFrame(rows), ["arm", "task"], "r")


def test_describe_gains_marks_an_arm_that_did_not_learn_and_one_that_got_worse():
    gains = pd.DataFrame(
        [
            {
                "algo": "A",
                "L": 4,
                "start": 0.2,
                "end": 0.5,
                "gain": 0.3,
                "gain_low": 0.1,
                "gain_high": 0.5,
                "seeds": 6,
                "learned": True,
            },
            {
                "algo": "B",
                "L": 4,
                "start": 0.2,
                "end": 0.25,
                "gain": 0.05,
                "gain_low": -0.1,
                "gain_high": 0.2,
                "seeds": 6,
                "learned": False,
            },
            {
                "algo": "C",
                "L": 4,
                "start": 0.2,
                "end": 0.1,
                "gain": -0.1,
                "gain_low": -0.2,
                "gain_high": -0.01,
                "seeds": 6,
                "learned": False,
            },
        ]
    )
    a, b, c = stats.describe_gains(gains, "reward")
    assert a.startswith("A, L = 4: reward 0.200 -> 0.500, gain +0.300") and a.endswith(": learned")
    assert "did NOT clearly work" in b and "not read" in b
    assert "WORSE" in c
