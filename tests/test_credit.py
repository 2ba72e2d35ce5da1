"""The credit lab (rltutor.experiments.credit): the perfect-credit gain, the oracle value, the warm critic."""

import math
import random

import pandas as pd
import pytest
import torch

from rltutor.envs.toolshell import ToolShell, scripted_solver
from rltutor.experiments.credit import perfect_credit_gain, slope_verdicts
from rltutor.models.template_policy import TemplatePolicy
from rltutor.rollout.agent import demonstrations
from rltutor.rollout.context import Context, ContextSpec
from rltutor.rollout.oracle import Snapshot, exact_value, mc_value
from rltutor.rollout.templates import CAND_DIM, STATE_DIM, TemplateChooser


def test_the_decisive_calls_variances_add_up_to_the_outcomes():
    """E[A_j^2] are the variances of the martingale increments of E[R | calls so far]: they sum to Var R."""
    rng = random.Random(0)
    for _ in range(50):
        p = [rng.random() for _ in range(rng.randint(1, 4))]
        c = rng.random()
        g = perfect_credit_gain(p, c, n_calls=16)
        assert math.isclose(sum(g["E_A2"]), g["var_R"], rel_tol=1e-9, abs_tol=1e-12)
        assert math.isclose(g["rho"], 16.0, rel_tol=1e-9)  # equal score norms: rho = N
    g = perfect_credit_gain([0.9, 0.9, 0.9], 0.9, 16, score={"all": 32.0, "forks": [4.0, 4.0, 4.0], "submit": 4.0})
    assert math.isclose(g["rho"], 8.0, rel_tol=1e-9)  # sum_t s_t^2 / s_decisive^2 when the decisive norms agree


def test_the_gain_checks_its_inputs():
    with pytest.raises(ValueError, match="probabilities"):
        perfect_credit_gain([1.5], 0.5, 16)
    with pytest.raises(ValueError, match="n_calls"):
        perfect_credit_gain([0.5], 0.5, 0)


def test_a_simulated_fork_is_worth_what_a_monte_carlo_estimate_says():
    """Brute check: a fork decided by a coin (the dead end dooms) has the value the MC oracle reads."""
    knobs = {"kind": "forks", "hops": 2, "max_turns": 4, "max_output_chars": 400}
    spec = ContextSpec(None, "none", 2, 24, 128)
    torch.manual_seed(0)
    policy = TemplatePolicy(CAND_DIM, STATE_DIM, hidden=32, critic=False)
    demos = demonstrations(lambda: ToolShell(**knobs), scripted_solver, 32, TemplateChooser(), spec, seed=0)
    TemplateChooser(smoothing=0.3).clone(policy, demos, steps=150, lr=3e-3, generator=torch.Generator().manual_seed(0))
    for seed in (1, 2):
        env = ToolShell(**knobs, seed=seed)
        ch = TemplateChooser()
        ctx = Context(env.task.statement, spec, 0, ch.tok)
        ch.start([env.task.statement], [env])
        choice = ch.demo(0, "cat README.md")
        obs, reward, done, info = env.step(choice.text)
        ctx.add_turn(choice.tokens, choice.logp, obs, reward, done)
        ch.observe(0, obs, info, None)
        snap = Snapshot(env, ctx, ch.mems[0], ch.read_commands[0])
        exact = exact_value(policy, snap)
        v, se = mc_value(policy, snap, n=600, generator=torch.Generator().manual_seed(seed))
        assert 0.05 < exact < 0.95, exact  # a value a wrong estimator would miss
        assert abs(v - exact) < 4 * se + 1e-3, (seed, v, se, exact)
        assert env.episode["turns"] == 1  # the snapshot's rollouts left the original untouched
        assert mc_value(policy, snap, n=5, gamma=0.5)[0] <= v + 4 * se + 1e-3


def test_the_slope_test_reads_a_gap_that_grows_with_K():
    rows = []
    for seed in range(6):
        for K, x in ((1, 0.0), (4, 1.0), (16, 2.0)):
            for arm, level in (("ppo_gae_across", 0.6 + 0.1 * x), ("broadcast_grpo", 0.6), ("slime_split", 0.6)):
                for u in (1, 2):
                    rows.append({"arm": arm, "K": K, "seed": seed, "update": u, "episode_return": level + 0.01 * seed})
    table = slope_verdicts(pd.DataFrame(rows), last=2)
    assert len(table) == 2
    assert (table["estimate"] - 0.1).abs().max() < 1e-9 and (table["verdict"] == "confirmed").all()


def test_the_labs_gradient_noise_is_the_variance_labs():
    from rltutor.experiments.credit import gradient_noise
    from rltutor.experiments.variance import summarize

    g = torch.randn(12, 30, generator=torch.Generator().manual_seed(0)) + 0.3
    mine, theirs = gradient_noise(g), summarize(g[:, None, :], g.mean(0)[None])
    for key in ("variance", "variance_se", "signal", "snr"):
        assert math.isclose(mine[key], theirs[key], rel_tol=1e-9), key


def test_the_pre_stated_main_test_is_what_the_stored_pilots_give(tmp_path, capsys):
    """n pinned in MAIN_TEST equals the budget's fit from the stored pilots; a batch fits its hour; nothing runs."""
    from rltutor.experiments import credit

    plan = credit.main_test_plan()
    assert plan["n"] == credit.MAIN_TEST["seeds"] and plan["cpu_s"] <= credit.BUDGET_CPU_S
    assert plan["seeds_needed"] > plan["n"] and plan["detectable_slope"] > plan["delta"]  # the budget, not power
    timing = credit.pilot_timing()
    batch = credit.main_test_batch(plan["n"], str(tmp_path), hours=1.0, workers=2, timing=timing, dry=True)
    cost = sum(credit.run_cost(timing, a, K, u, w, warm=False) for a, K, _s, u, w, *_ in batch)
    fits = {(K, s) for a, K, s, *_ in batch if credit.SUB_ADVANTAGE_MODES[a].algo == "ppo"}
    cost += len(fits) * float(timing["warm_cpu_s"].max())  # one warm critic per (K, seed)
    assert batch and cost / 2 <= 3600 and not list(tmp_path.iterdir())
    assert "min of wall" in capsys.readouterr().out


def test_the_weighting_test_pairs_each_seed_and_names_its_runs_apart():
    """The per-row weighting runs are broadcast_grpo at K = 16 with row_weight off, one per main-test seed, stored
    under their own names and read under their own label; the verdict reads on - off per seed."""
    from rltutor.experiments import credit

    jobs = credit.main_test_jobs(credit.MAIN_TEST["seeds"], "runs")
    names = [credit._job_name(j) for j in jobs]
    assert len(set(names)) == len(names)
    weighting = [j for j in jobs if len(j) == 8]
    assert [j[2] for j in weighting] == sorted({j[2] for j in jobs if j[0] == "broadcast_grpo" and j[1] == 16})
    assert all(dict(j[7]) == {"row_weight": False} and j[:2] == ("broadcast_grpo", 16) for j in weighting)
    with pytest.raises(ValueError, match="only the weighting test"):
        credit._run(("slime_split", 16, 0, 1, 0, None, 16, (("row_weight", False),)))
    rows = []
    for seed in range(8):
        for arm, level in (("broadcast_grpo", 0.7), (credit.PER_ROW, 0.6)):
            for u in (1, 2):
                rows.append({"arm": arm, "K": 16, "seed": seed, "update": u, "episode_return": level + 0.02 * seed})
    table = credit.weighting_verdict(pd.DataFrame(rows), last=2)
    assert len(table) == 1 and abs(table["estimate"].iloc[0] - 0.1) < 1e-9 and table["verdict"].iloc[0] == "confirmed"
    on_only = pd.DataFrame([r for r in rows if r["arm"] == "broadcast_grpo"])
    assert credit.weighting_verdict(on_only, last=2).empty  # no per-row runs yet: no verdict


def test_the_main_test_report_reads_only_contrasts_whose_arms_learned():
    """A synthetic main test: ppo_gae_across and broadcast_grpo learn at both K, slime_split does not at K = 16;
    the slope against broadcast_grpo is interpretable, the one against slime_split is reported and flagged."""
    from rltutor.experiments import credit

    rows = []
    for seed in range(6):
        for K in (1, 16):
            for arm, gain in (
                ("ppo_gae_across", 0.3),
                ("broadcast_grpo", 0.2),
                ("slime_split", 0.2 if K == 1 else 0.0),
            ):
                for u in range(1, 11):
                    noise = 0.02 * ((seed + u) % 3 - 1) if gain == 0 else 0.01 * seed
                    r = 0.4 + gain * (u > 5) + noise
                    rows.append({"arm": arm, "K": K, "seed": seed, "update": u, "episode_return": r})
    report = credit.main_test_report(pd.DataFrame(rows))
    gains = report["gains"].set_index(["arm", "K"])
    assert gains.loc[("ppo_gae_across", 16), "learned"] and not gains.loc[("slime_split", 16), "learned"]
    v = report["verdicts"].set_index("contrast")["interpretable"]
    assert v[f"slope over log4 K of {credit.ACROSS} - broadcast_grpo"]
    assert not v[f"slope over log4 K of {credit.ACROSS} - slime_split"]
    assert report["weighting"].empty and report["oracle"].empty  # no such runs in this frame
