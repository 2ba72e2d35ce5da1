"""Tests of the learning-curve sweep: a tiny sweep end to end, the verdict logic, the executors."""

import importlib.util

import numpy as np
import pandas as pd
import pytest

from rltutor.experiments import sweep

TINY = sweep.SweepScale(
    horizons=(3, 6), seeds=2, steps_corridor=300, steps_cartpole=300, group_sizes=(4,), gammas=(0.9,), ablation_seeds=2
)


def test_plan_has_every_configuration_and_enough_seeds():
    runs = sweep.plan("full")
    main = [r for r in runs if r.study == "main"]
    assert {(r.task, r.algo) for r in main} == {
        (t, a) for a in ("ppo", "grpo") for t in ["CartPole-v1", "corridor T=5", "corridor T=20", "corridor T=80"]
    }
    assert min(pd.Series([(r.task, r.algo) for r in main]).value_counts()) >= 5
    assert {r.variant for r in runs if r.study == "group_size"} == {"G=4", "G=16"}
    for r in runs:
        if r.study == "group_size":
            assert r.overrides["group_size"] * r.overrides["num_groups"] == 32


def test_tiny_sweep_runs_and_writes_its_table(tmp_path):
    curves, finals = sweep.run_sweep(TINY, executor="serial")
    assert len(finals) == len(sweep.plan(TINY))
    assert finals["final"].notna().all() and (curves["env_steps"] <= 300).all()
    out = sweep.write_outputs(tmp_path, curves, finals, {"command": "test"})
    table = (out / "table.md").read_text()
    assert "corridor T=6" in table and "CartPole-v1" in table and "G=4" in table
    v = pd.read_csv(out / "verdicts.csv")
    assert {"finding", "contrast", "estimate", "ci_low", "ci_high", "p_adj", "verdict", "reading"} <= set(v.columns)
    assert len(v) == 5 and set(v["reading"]) <= set(sweep.READINGS)
    c2, f2, meta = sweep.load_outputs(out)
    assert len(f2) == len(finals) and meta["command"] == "test"


@pytest.mark.slow  # starts two fresh Python processes (spawn), each importing torch
def test_process_executor_matches_serial():
    runs = [r for r in sweep.plan(TINY) if r.task == "corridor T=3" and r.study == "main"][:2]
    _, a = sweep.run_sweep(runs=runs, executor="serial")
    _, b = sweep.run_sweep(runs=runs, executor="process", workers=2)
    np.testing.assert_allclose(a["final"].to_numpy(), b["final"].to_numpy())


def test_the_run_store_resumes_an_interrupted_sweep(tmp_path, monkeypatch):
    runs = [r for r in sweep.plan(TINY) if r.task == "corridor T=3" and r.study == "main"][:2]
    store = tmp_path / "runs"
    _, a = sweep.run_sweep(runs=runs[:1], executor="serial", run_dir=store)
    assert len(list(store.iterdir())) == 1
    trained = []
    real = sweep.run_one
    monkeypatch.setattr(sweep, "run_one", lambda r: trained.append(r) or real(r))
    _, b = sweep.run_sweep(runs=runs, executor="serial", run_dir=store)  # only the second run is new
    assert trained == runs[1:] and len(list(store.iterdir())) == 2
    assert b["final"].iloc[0] == a["final"].iloc[0]
    assert sweep._run_name(runs[0]) != sweep._run_name(runs[1])


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed (optional extra)")
def test_ray_executor_runs():
    runs = [r for r in sweep.plan(TINY) if r.task == "corridor T=3" and r.study == "main"][:2]
    _, finals = sweep.run_sweep(runs=runs, executor="ray")
    assert len(finals) == 2


def test_unknown_executor_is_refused():
    with pytest.raises(ValueError, match="unknown executor 'dask'.*process, ray, serial"):
        sweep.run_sweep(runs=[], executor="dask")


def _finals(rows):
    df = pd.DataFrame(rows, columns=["study", "task", "algo", "variant", "horizon", "final_norm"])
    df["final"] = df["final_norm"]
    return df


def test_verdicts_follow_the_numbers():
    rows = []
    for s in range(5):
        e = 0.01 * s
        rows += [
            ("main", "CartPole-v1", "ppo", "default", None, 0.5 + e),
            ("main", "CartPole-v1", "grpo", "default", None, 0.54 - e),
            ("main", "corridor T=5", "ppo", "default", 5, 0.9 + e),
            ("main", "corridor T=5", "grpo", "default", 5, 0.9 - e),
            ("main", "corridor T=50", "ppo", "default", 50, 0.9 + e),
            ("main", "corridor T=50", "grpo", "default", 50, 0.6 + e),
        ]
    v = sweep.verdicts(_finals(rows)).set_index("contrast")
    assert list(v["family"].unique()) == [3]  # Holm across the findings
    # no smallest effect of interest was stated, so an overlap at CartPole is "not decided", never a tie
    assert v.loc["CartPole: PPO - GRPO", "reading"] == "not decided"
    assert v.loc["corridor T=50: PPO - GRPO", "reading"] == "reproduced"
    slope = v.loc["slope over log2 T of PPO - GRPO (T = 5, 50), per doubling of T"]
    assert slope["reading"] == "reproduced"
    assert slope["estimate"] == pytest.approx((0.3 - 0.04) / np.log2(50 / 5))  # the gap: +0.04 at T = 5, +0.3 at 50
    # flip the long-horizon result: now GRPO is ahead, and the verdicts must say so
    flipped = [
        (a, b, {"ppo": "grpo", "grpo": "ppo"}[c] if b == "corridor T=50" else c, d, e, f) for a, b, c, d, e, f in rows
    ]
    v = sweep.verdicts(_finals(flipped)).set_index("contrast")
    assert v.loc["corridor T=50: PPO - GRPO", "verdict"] == "refuted"
    assert v.loc["corridor T=50: PPO - GRPO", "reading"] == "not reproduced"
    # a clear CartPole difference is "not reproduced" for the paper's tie
    apart = [(a, b, c, d, e, f + (0.3 if (b, c) == ("CartPole-v1", "ppo") else 0)) for a, b, c, d, e, f in rows]
    assert sweep.verdicts(_finals(apart)).set_index("contrast").loc["CartPole: PPO - GRPO", "reading"] == (
        "not reproduced"
    )


def test_optimizer_steps_count_the_trainers_gradient_steps():
    """updates x epochs x minibatches, the updates as the trainer takes them (until the budget is reached):
    the count a short run's own history gives."""
    from rltutor.config import make_config
    from rltutor.train import Trainer

    for algo, T in (("ppo", 5), ("grpo", 5), ("grpo", 20)):
        run = sweep.Run("main", f"corridor T={T}", "corridor", algo, 1, 1500, horizon=T)
        cfg = make_config(algo, env="corridor", env_options={"horizon": T}, seed=1, total_steps=1500, torch_threads=1)
        t = Trainer(cfg)
        t.train(progress=False)
        assert sweep.optimizer_steps(run) == int(t.history_frame()["epochs_run"].sum()) * cfg.minibatches
    assert sweep.optimizer_steps(sweep.Run("main", "CartPole-v1", "CartPole-v1", "grpo", 1, 1500)) is None


def test_confounds_plan_matches_optimizer_steps_and_hides_progress():
    runs = sweep.plan_confounds(seeds=[1, 2])
    assert len(runs) == 2 * (3 * 3 + 2)  # per seed: ppo, grpo, matched ppo at each T; two blind arms at T = 80
    by = {(r.horizon, r.algo, r.variant, r.seed): r for r in runs}
    for T in sweep.CONFOUNDS_HORIZONS:
        matched, grpo, ppo = by[(T, "ppo", "matched", 1)], by[(T, "grpo", "default", 1)], by[(T, "ppo", "default", 1)]
        assert sweep.optimizer_steps(matched) == sweep.optimizer_steps(grpo)  # the confound removed
        assert matched.total_steps == grpo.total_steps == ppo.total_steps  # and the env steps still equal
    assert sweep.optimizer_steps(by[(80, "ppo", "default", 1)]) > 10 * sweep.optimizer_steps(
        by[(80, "grpo", "default", 1)]
    )
    blind = by[(80, "ppo", "blind", 1)]
    cfg = sweep.run_config(blind)
    assert cfg.env_options == {"horizon": 80, "observe_progress": False}


def _confounds_finals(effect, slope, hidden_effect, seeds=8, sd=0.02, seed=0):
    """Synthetic finals of the confounds study: GRPO at 0.7, PPO ahead by effect(T) = effect + slope *
    log2(T / 80), the matched PPO the same, the blind arms apart by hidden_effect; noise of sd per run."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(seeds):
        for T in sweep.CONFOUNDS_HORIZONS:
            lead = effect + slope * np.log2(T / 80)
            for algo, variant, mean in (
                ("grpo", "default", 0.7),
                ("ppo", "default", 0.7 + lead),
                ("ppo", "matched", 0.7 + lead),
            ):
                rows.append(("confounds", f"corridor T={T}", algo, variant, T, mean + sd * rng.standard_normal()))
        for algo, mean in (("grpo", 0.6), ("ppo", 0.6 + hidden_effect)):
            rows.append(("confounds", "corridor T=80", algo, "blind", 80, mean + sd * rng.standard_normal()))
    return _finals(rows)


def test_confounds_verdicts_find_a_planted_effect_and_a_planted_null():
    v = sweep.confounds_verdicts(_confounds_finals(effect=0.2, slope=0.05, hidden_effect=0.2)).reset_index(drop=True)
    assert list(v["family"].unique()) == [6] and v["delta"].notna().all()
    assert list(v["verdict"]) == ["confirmed"] * 5 + ["equivalent"]  # hiding progress changes nothing here
    assert v.loc[1, "estimate"] == pytest.approx(0.05, abs=0.01)  # the slope per doubling of T
    v = sweep.confounds_verdicts(_confounds_finals(effect=0.0, slope=0.0, hidden_effect=-0.2)).reset_index(drop=True)
    assert list(v["verdict"][:4]) == ["equivalent"] * 4
    assert v.loc[4, "verdict"] == "refuted" and v.loc[5, "verdict"] == "confirmed"  # the lead shrinks when hidden


def test_confounds_power_and_gains():
    pilot = _confounds_finals(effect=0.1, slope=0.02, hidden_effect=0.0, seeds=3, sd=0.05)
    power = sweep.confounds_power(pilot)
    assert len(power) == 6 and (power["seeds_needed"] >= 2).all() and (power["pilot_seeds"] == 3).all()
    noisier = sweep.confounds_power(_confounds_finals(0.1, 0.02, 0.0, seeds=3, sd=0.15))
    assert (noisier["seeds_needed"] > power["seeds_needed"]).all()  # more spread asks for more seeds
    pilot["start_norm"] = pilot["final_norm"] - np.where(pilot["variant"] == "blind", 0.0, 0.2)
    pilot["seed"] = np.repeat(np.arange(3), len(pilot) // 3)
    g = sweep.confounds_gains(pilot).set_index(["horizon", "algo", "variant"])
    assert g.loc[(80, "ppo", "matched"), "gain"] == pytest.approx(0.2) and g.loc[(80, "ppo", "matched"), "learned"]
    assert not g.loc[(80, "grpo", "blind"), "learned"]  # no gain: marked, its contrasts not read


def test_canned_experiments_of_the_horizon_chapters(tmp_path):
    from rltutor.experiments import horizon

    df = horizon.snr_vs_horizon(horizons=(2, 16), scale="quick")
    rl = df[df["name"] == "rloo"]
    assert rl["snr_theory"].notna().all() and df[df["name"] == "grpo"]["snr_theory"].isna().all()
    runs = [r for r in sweep.plan(TINY) if r.study == "main" and r.task == "corridor T=3"]
    curves, finals = sweep.run_sweep(runs=runs, executor="serial")
    sweep.write_outputs(tmp_path, curves, finals, {"command": "x"})
    c, f, meta = horizon.long_horizon_results(data=tmp_path)
    assert len(f) == len(runs) and meta["command"] == "x"


def test_curves_on_grid_fills_windows_without_episodes():
    base = dict(study="main", task="t", env="corridor", algo="ppo", variant="default", optimal=1.0)
    pts = [(1, 1.0, 0.1), (1, 2.0, 0.2), (1, 3.0, 0.3), (2, 2.0, 0.5), (2, 3.0, 0.6), (3, 1.0, 0.7), (3, 3.0, 0.9)]
    rows = [dict(base, seed=s, env_steps=x, episode_return=y) for s, x, y in pts]
    c = pd.DataFrame(rows)
    c["return_norm"] = c["episode_return"]
    g = sweep.curves_on_grid(c)
    s3 = g[g["seed"] == 3].set_index("env_steps")["return_norm"]
    assert s3.to_dict() == {1.0: 0.7, 2.0: 0.7, 3.0: 0.9}  # the empty window at 2 carries 0.7 forward
    assert set(g[g["seed"] == 2]["env_steps"]) == {2.0, 3.0}  # nothing before seed 2's first episode
