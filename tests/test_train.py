"""The one trainer: it learns, it is reproducible, it resumes exactly, and it refuses bad input."""

import math
import statistics

import numpy as np
import pandas as pd
import pytest
import torch

from rltutor.config import ALGORITHMS, CARTPOLE_GRPO, CARTPOLE_PPO, DISTILL_ALGOS, Config, make_config
from rltutor.models import MLPActorCritic
from rltutor.train import Trainer

TIME_COLUMNS = ["time_s"]


def metrics(trainer: Trainer) -> pd.DataFrame:
    return trainer.history_frame().drop(columns=TIME_COLUMNS)


# The training runs of the learning tests, one seed each, shared with benchmarks/learning_margins.py
# (which runs them for seeds 0-5 under every CPU kernel setting and prints the tables quoted below).


def ppo_cartpole(seed: int) -> dict[str, float]:
    """PPO with the tuned CartPole config at 30k steps: the peak and the final last-10-episode return."""
    history = Trainer(make_config("ppo", seed=seed, **{**CARTPOLE_PPO, "total_steps": 30_000})).train(progress=False)
    last10 = history["return_last10"]
    return {"peak_last10": float(last10.max()), "final_last10": float(last10.iloc[-1])}


def grpo_cartpole(seed: int) -> dict[str, float]:
    """GRPO on CartPole at 25k steps: the first batch's return (a near-uniform policy) and the final one."""
    history = Trainer(make_config("grpo", seed=seed, **{**CARTPOLE_GRPO, "total_steps": 25_000})).train(progress=False)
    random_return = float(history["episode_return"].iloc[0])
    final = float(history["return_last10"].iloc[-3:].mean())
    return {"random": random_return, "final_last10": final, "ratio": final / random_return}


def grpo_corridor(seed: int) -> dict[str, float]:
    """GRPO on the 5-step corridor at 6k steps: the mean return of the first and of the last 3 updates."""
    cfg = make_config("grpo", env="corridor", env_options={"horizon": 5}, seed=seed, total_steps=6_000)
    history = Trainer(cfg).train(progress=False)
    return {
        "first": float(history["episode_return"].iloc[0]),
        "final": float(history["episode_return"].iloc[-3:].mean()),
    }


@pytest.mark.slow
@pytest.mark.learning
def test_ppo_learns_cartpole_within_a_small_budget():
    """PPO learns CartPole in 30k steps: over seeds 0-2 the median final last-10 return is >= 300, and at
    least one seed reaches the solved bar of 475.

    "Learned" is a mean return of 300 over the last 10 episodes: a near-uniform policy gets about 22,
    and 300 is 300 steps balanced in a row. The bar is not 475 on purpose: on an Intel Xeon (AVX-512)
    under ATEN_CPU_CAPABILITY=default, a kernel path this AMD machine cannot take, seed 1 ends at 374-380
    and seeds 1 and 4 never reach 475, and at the native level seed 2 does not; those runs learned, and a
    one-seed test at 475 failed there. Final last-10 return, seeds 0-5, every kernel setting this AMD EPYC
    (AVX2) can run (`python benchmarks/learning_margins.py --tests ppo_cartpole`):

    | setting | seed 0 | seed 1 | seed 2 | seed 3 | seed 4 | seed 5 | worst |
    |-|-|-|-|-|-|-|-|
    | native/mkl=unset | 500 | 490 | 500 | 500 | 500 | 500 | 490 |
    | native/mkl=AVX2 | 500 | 490 | 500 | 500 | 500 | 500 | 490 |
    | native/mkl=SSE4_2 | 500 | 490 | 500 | 500 | 500 | 500 | 490 |
    | avx2/mkl=unset | 500 | 490 | 500 | 500 | 500 | 500 | 490 |
    | avx2/mkl=AVX2 | 500 | 490 | 500 | 500 | 500 | 500 | 490 |
    | avx2/mkl=SSE4_2 | 500 | 490 | 500 | 500 | 500 | 500 | 490 |
    | default/mkl=unset | 500 | 500 | 500 | 500 | 500 | 500 | 500 |
    | default/mkl=AVX2 | 500 | 500 | 500 | 500 | 500 | 500 | 500 |
    | default/mkl=SSE4_2 | 500 | 500 | 500 | 500 | 500 | 500 | 500 |

    over all 54 runs: peak_last10 500 to 500
    median wall time of one run: 27.3 s
    """
    runs = [ppo_cartpole(seed) for seed in range(3)]
    assert statistics.median(r["final_last10"] for r in runs) >= 300, runs
    assert max(r["peak_last10"] for r in runs) >= 475, runs


@pytest.mark.slow
@pytest.mark.learning
def test_grpo_clearly_beats_a_random_policy_on_cartpole():
    """GRPO at 25k steps: over seeds 0-2 the median final last-10 return is > 2.5x the first batch's.

    The first batch is a near-uniform policy (return about 22, < 40 for every seed); 2.5x it is a
    policy that clearly learned to balance, far from solving (GRPO without a critic is slower than PPO
    here, chapter 3). The ratio final / first, seeds 0-5, every kernel setting this AMD EPYC (AVX2) can
    run (`python benchmarks/learning_margins.py --tests grpo_cartpole`):

    | setting | seed 0 | seed 1 | seed 2 | seed 3 | seed 4 | seed 5 | worst |
    |-|-|-|-|-|-|-|-|
    | native/mkl=unset | 6.31 | 6.56 | 6.23 | 7.06 | 5.77 | 6.69 | 5.77 |
    | native/mkl=AVX2 | 6.31 | 6.56 | 6.23 | 7.06 | 5.77 | 6.69 | 5.77 |
    | native/mkl=SSE4_2 | 6.31 | 6.56 | 6.23 | 7.06 | 5.77 | 6.69 | 5.77 |
    | avx2/mkl=unset | 6.31 | 6.56 | 6.23 | 7.06 | 5.77 | 6.69 | 5.77 |
    | avx2/mkl=AVX2 | 6.31 | 6.56 | 6.23 | 7.06 | 5.77 | 6.69 | 5.77 |
    | avx2/mkl=SSE4_2 | 6.31 | 6.56 | 6.23 | 7.06 | 5.77 | 6.69 | 5.77 |
    | default/mkl=unset | 6.31 | 6.56 | 6.23 | 7.06 | 5.77 | 6.69 | 5.77 |
    | default/mkl=AVX2 | 6.31 | 6.56 | 6.23 | 7.06 | 5.77 | 6.69 | 5.77 |
    | default/mkl=SSE4_2 | 6.31 | 6.56 | 6.23 | 7.06 | 5.77 | 6.69 | 5.77 |

    over all 54 runs: random 19.5 to 24.7;
    final_last10 131 to 174
    median wall time of one run: 6.0 s
    """
    runs = [grpo_cartpole(seed) for seed in range(3)]
    assert all(r["random"] < 40 for r in runs), runs
    assert statistics.median(r["ratio"] for r in runs) > 2.5, runs


@pytest.mark.learning
def test_grpo_learns_the_short_corridor():
    """GRPO on the 5-step corridor at 6k steps: over seeds 0-2 the median return of the last 3 updates is > 0.85.

    The first update's return (a near-uniform policy) is < 0.7 for every seed; 0.85 is a policy that
    nearly always walks to the goal. The final return, seeds 0-5, every kernel setting this AMD EPYC
    (AVX2) can run (`python benchmarks/learning_margins.py --tests grpo_corridor`):

    | setting | seed 0 | seed 1 | seed 2 | seed 3 | seed 4 | seed 5 | worst |
    |-|-|-|-|-|-|-|-|
    | native/mkl=unset | 0.998 | 0.996 | 0.99 | 0.998 | 0.983 | 0.99 | 0.983 |
    | native/mkl=AVX2 | 0.998 | 0.996 | 0.99 | 0.998 | 0.983 | 0.99 | 0.983 |
    | native/mkl=SSE4_2 | 0.998 | 0.996 | 0.99 | 0.998 | 0.983 | 0.99 | 0.983 |
    | avx2/mkl=unset | 0.998 | 0.996 | 0.99 | 0.998 | 0.983 | 0.99 | 0.983 |
    | avx2/mkl=AVX2 | 0.998 | 0.996 | 0.99 | 0.998 | 0.983 | 0.99 | 0.983 |
    | avx2/mkl=SSE4_2 | 0.998 | 0.996 | 0.99 | 0.998 | 0.983 | 0.99 | 0.983 |
    | default/mkl=unset | 0.998 | 0.996 | 0.99 | 0.998 | 0.983 | 0.99 | 0.983 |
    | default/mkl=AVX2 | 0.998 | 0.996 | 0.99 | 0.998 | 0.983 | 0.99 | 0.983 |
    | default/mkl=SSE4_2 | 0.998 | 0.996 | 0.99 | 0.998 | 0.983 | 0.99 | 0.983 |

    over all 54 runs: first 0.425 to 0.588
    median wall time of one run: 2.1 s
    """
    runs = [grpo_corridor(seed) for seed in range(3)]
    assert all(r["first"] < 0.7 for r in runs), runs
    assert statistics.median(r["final"] for r in runs) > 0.85, runs


@pytest.mark.parametrize("algo", ["ppo", "grpo"])
def test_same_seed_same_metrics(algo):
    runs = []
    for _ in range(2):
        t = Trainer(make_config(algo, seed=5, total_steps=1_000, num_steps=32))
        t.train(progress=False)
        runs.append(metrics(t))
    pd.testing.assert_frame_equal(runs[0], runs[1])
    other = Trainer(make_config(algo, seed=6, total_steps=1_000, num_steps=32))
    other.train(progress=False)
    assert not metrics(other).equals(runs[0])


@pytest.mark.parametrize("algo", ["ppo", "grpo", "dapo"])
def test_resume_equals_the_uninterrupted_run(algo, tmp_path):
    cfg = dict(seed=3, total_steps=1_500, num_steps=32, env="corridor", env_options={"horizon": 30})
    full = Trainer(make_config(algo, **cfg))
    full.train(progress=False)
    assert len(full.history) >= 2
    first = Trainer(make_config(algo, **cfg))
    for _ in range(len(full.history) // 2):  # stop half-way, save, and continue in a new trainer
        first.step()
    first.save(tmp_path / "ckpt.pt")
    resumed = Trainer.load(tmp_path / "ckpt.pt")
    resumed.train(progress=False)
    pd.testing.assert_frame_equal(metrics(resumed), metrics(full))
    for p, q in zip(resumed.policy.parameters(), full.policy.parameters(), strict=True):
        assert torch.equal(p, q)


def test_metrics_history_has_the_promised_columns():
    t = Trainer(make_config("ppo", total_steps=600, num_steps=64))
    h = t.train(progress=False)
    for col in (
        "env_steps",
        "episode_return",
        "policy_loss",
        "value_loss",
        "entropy",
        "approx_kl",
        "clip_frac",
        "grad_norm",
        "explained_variance",
        "zero_std_frac",
        "time_s",
        "lr",
    ):
        assert col in h.columns, col
    assert h["env_steps"].is_monotonic_increasing and h["env_steps"].iloc[-1] >= 600
    assert h["lr"].iloc[-1] < h["lr"].iloc[0]  # annealed


@pytest.mark.parametrize("algo", sorted(set(ALGORITHMS) - set(DISTILL_ALGOS)))  # opd needs a teacher: test_distill
def test_every_algorithm_runs_one_update(algo):
    t = Trainer(make_config(algo, env="corridor", env_options={"horizon": 8}, total_steps=10_000, num_steps=16))
    row = t.step()
    assert math.isfinite(row["policy_loss"]) or row.get("rows") == 0


@pytest.mark.parametrize("kl_in_reward", [True, False])
@pytest.mark.parametrize("kind", ["k1", "k2", "k3"])
def test_reference_kl_in_reward_or_in_loss(kl_in_reward, kind):
    t = Trainer(
        make_config(
            "grpo",
            env="corridor",
            env_options={"horizon": 6},
            kl_coef=0.1,
            kl_kind=kind,
            kl_in_reward=kl_in_reward,
            total_steps=10_000,
            epochs=2,
        )
    )
    rows = [t.step() for _ in range(3)]
    assert rows[0]["kl_ref"] == pytest.approx(0.0, abs=1e-6)  # pi == pi_ref at first
    assert all(math.isfinite(r["policy_loss"]) for r in rows)


def test_dynamic_sampling_drops_dead_groups():
    t = Trainer(make_config("dapo", env="CartPole-v1", group_size=4, num_groups=4, total_steps=10_000))
    row = t.step()
    assert 0 <= row["zero_std_frac"] <= 1
    assert row["rows"] == 16 * (1 - row["zero_std_frac"])


def test_dual_clip_and_asymmetric_clip_run():
    t = Trainer(make_config("ppo", dual_clip=3.0, clip_low=0.2, clip_high=0.28, total_steps=2_000, num_steps=32))
    assert math.isfinite(t.step()["policy_loss"])


def test_target_kl_stops_epochs_early():
    t = Trainer(make_config("ppo", target_kl=1e-9, epochs=8, lr=1e-2, total_steps=2_000, num_steps=64))
    assert t.step()["epochs_run"] < 8


# --- faults -----------------------------------------------------------------------------------


def test_group_size_below_two_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="group_size >= 2"):
        make_config("grpo", group_size=1)


def test_group_estimator_needs_episodes_and_gae_needs_a_critic():
    with pytest.raises(ValueError, match="rollout='episodes'"):
        make_config("grpo", rollout="segments")
    with pytest.raises(ValueError, match="critic"):
        make_config("ppo", critic=False)


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(ValueError, match="dapo.*grpo.*ppo"):
        make_config("trpo")
    with pytest.raises(ValueError, match="CartPole-v1"):
        make_config("ppo", env="Pong")
    with pytest.raises(ValueError, match="lr"):
        make_config("ppo", learning_rate=1e-3)
    with pytest.raises(ValueError, match="gae"):
        make_config("ppo", estimator="td")


class NaNAfter(MLPActorCritic):
    """A policy whose evaluation turns NaN once ``poison`` is set."""

    poison = False

    def evaluate(self, batch):
        out = super().evaluate(batch)
        if self.poison:
            out["logp"] = out["logp"] * float("nan")
        return out


def test_nan_loss_stops_training_and_keeps_the_last_checkpoint(tmp_path):
    cfg = make_config("ppo", total_steps=5_000, num_steps=32)
    env_policy, collector = Trainer(cfg).policy, Trainer(cfg).collector
    policy = NaNAfter(4, 2)
    policy.load_state_dict(env_policy.state_dict())
    t = Trainer(cfg, policy, collector)
    t.step()
    path = tmp_path / "ckpt.pt"
    t.save(path)
    before = path.read_bytes()
    params = [p.detach().clone() for p in t.policy.parameters()]
    policy.poison = True
    with pytest.raises(FloatingPointError, match="NaN"):
        t.train(checkpoint=str(path), checkpoint_every=1, progress=False)
    assert path.read_bytes() == before
    assert all(torch.equal(p, q) for p, q in zip(params, t.policy.parameters(), strict=True))
    assert Trainer.load(path).update_idx == 1


def test_corrupt_checkpoint_is_refused(tmp_path):
    path = tmp_path / "bad.pt"
    path.write_bytes(b"not a checkpoint at all")
    with pytest.raises(ValueError, match="corrupt"):
        Trainer.load(path)
    good = tmp_path / "good.pt"
    Trainer(make_config("ppo", total_steps=1_000)).save(good)
    good_bytes = good.read_bytes()
    (tmp_path / "cut.pt").write_bytes(good_bytes[: len(good_bytes) // 2])
    with pytest.raises(ValueError, match="corrupt"):
        Trainer.load(tmp_path / "cut.pt")
    torch.save({"format": "something else"}, tmp_path / "foreign.pt")
    with pytest.raises(ValueError, match="not an rltutor checkpoint"):
        Trainer.load(tmp_path / "foreign.pt")


def test_mismatched_checkpoint_is_refused_and_nothing_is_loaded(tmp_path):
    path = tmp_path / "ckpt.pt"
    Trainer(make_config("ppo", total_steps=1_000, hidden=(32,))).save(path)
    other = Trainer(make_config("ppo", total_steps=1_000))
    params = [p.detach().clone() for p in other.policy.parameters()]
    state = Trainer.read_checkpoint(path)
    with pytest.raises(ValueError, match="hidden"):
        other.load_state_dict(state)
    state["config"] = other.config.to_dict()  # same config, but weights of another shape
    with pytest.raises(ValueError, match="nothing was loaded"):
        other.load_state_dict(state)
    assert all(torch.equal(p, q) for p, q in zip(params, other.policy.parameters(), strict=True))
    assert other.update_idx == 0


def test_config_roundtrips_through_a_dict():
    cfg = make_config("dapo", env="corridor", env_options={"horizon": 12})
    assert Config.from_dict(cfg.to_dict()) == cfg
    assert cfg.rollout_envs == cfg.group_size * cfg.num_groups and cfg.uses_groups


def test_trainer_refuses_half_a_plugin():
    cfg = make_config("ppo")
    with pytest.raises(ValueError, match="both"):
        Trainer(cfg, policy=MLPActorCritic(4, 2))
    assert np.isfinite(cfg.lr)


def test_every_config_field_has_a_docstring_line():
    import ast
    import dataclasses
    import inspect

    import rltutor.config as train_module

    tree = ast.parse(inspect.getsource(train_module))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Config")
    documented = set()
    for stmt, nxt in zip(cls.body, cls.body[1:], strict=False):
        if isinstance(stmt, ast.AnnAssign) and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant):
            documented.add(stmt.target.id)
    fields = {f.name for f in dataclasses.fields(Config)}
    assert fields == documented, fields ^ documented


# --- checkpoints, the lr schedule, metrics as the run goes ------------------------------------


def test_extending_the_budget_never_raises_the_lr(tmp_path):
    cfg = make_config("ppo", seed=3, total_steps=640, num_steps=32, env="corridor", env_options={"horizon": 30})
    done = Trainer(cfg)
    done.train(progress=False, checkpoint=str(tmp_path / "done.pt"))
    half = Trainer(Config.from_dict(cfg.to_dict()))
    for _ in range(2):
        half.step()
    half.save(tmp_path / "half.pt")
    for path, n_before in ((tmp_path / "done.pt", len(done.history)), (tmp_path / "half.pt", 2)):
        t = Trainer.load(path, total_steps=1_280)
        lr_next = t._annealed(t.env_steps) if t.env_steps < 640 else t.history[-1]["lr"]
        t.train(progress=False)
        new = [r["lr"] for r in t.history[n_before:]]
        assert new and all(b < a for a, b in zip(new, new[1:], strict=False))  # still decreasing
        assert max(new) <= lr_next <= t.history[n_before - 1]["lr"]
        assert new[0] > 0  # a spent schedule continues from the last lr, not from 0
        assert t.lr_horizon == 1_280 and Trainer.load(path).lr_horizon == 640


def test_a_failed_save_leaves_the_old_checkpoint_and_no_temporary_file(tmp_path, monkeypatch):
    t = Trainer(make_config("ppo", total_steps=1_000, num_steps=32))
    path = tmp_path / "checkpoint.pt"
    t.save(path)
    before = path.read_bytes()
    real_save = torch.save

    def half_then_fail(obj, f, *a, **k):
        real_save({"half": 1}, f)
        raise KeyboardInterrupt

    monkeypatch.setattr(torch, "save", half_then_fail)
    with pytest.raises(KeyboardInterrupt):
        t.save(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["checkpoint.pt"]


def test_metrics_file_equals_the_history_after_every_update(tmp_path):
    class LateColumn(Trainer):  # a column that first appears at update 3, then comes and goes
        def step(self):
            row = super().step()
            if self.update_idx >= 3 and self.update_idx % 2:
                row["late"] = self.update_idx / 7
            return row

    t = LateColumn(make_config("ppo", total_steps=32 * 4 * 6, num_steps=32))
    path = tmp_path / "metrics.csv"
    seen = []

    def check(self=t):
        seen.append(pd.read_csv(path))
        pd.testing.assert_frame_equal(seen[-1], t.history_frame(), check_dtype=False)

    orig_append = __import__("rltutor.train", fromlist=["_CsvLog"])._CsvLog.append

    def append_and_check(self, history):
        orig_append(self, history)
        check()

    import rltutor.train as train_module

    train_module._CsvLog.append, saved = append_and_check, orig_append
    try:
        t.train(progress=False, metrics=str(path))
    finally:
        train_module._CsvLog.append = saved
    assert len(seen) == 6 and "late" in seen[-1].columns
    assert path.read_text() == t.history_frame().to_csv(index=False)


def test_bad_checkpoint_every_and_bool_settings_are_refused(tmp_path):
    t = Trainer(make_config("ppo", total_steps=1_000, num_steps=32))
    with pytest.raises(ValueError, match="checkpoint_every"):
        t.train(progress=False, checkpoint=str(tmp_path / "c.pt"), checkpoint_every=0)
    assert not (tmp_path / "c.pt").exists()
    with pytest.raises(ValueError, match="anneal_lr must be True or False"):
        make_config("ppo", anneal_lr="false")
    with pytest.raises(ValueError, match="hidden"):
        make_config("ppo", hidden=64)


def _warm_lm_trainer(critic_kind: str, seed: int):
    """A PPO trainer on addition with a short warm start and critic_warmup=6, and a held-out probe batch."""
    from rltutor.experiments.lm import lm_config

    cfg = lm_config(
        "ppo", "addition", "quick", seed=seed, task_options=dict(max_operand=19), critic_kind=critic_kind,
        sft_steps=30, critic_warmup=6,
    )  # fmt: skip
    t = Trainer(cfg)
    probe, _ = t.collector.collect(t.policy, torch.Generator().manual_seed(5))
    return t, probe


@pytest.mark.parametrize("critic_kind", ["head", "separate"])
def test_critic_warmup_fits_the_critic_alone_and_leaves_the_policy_unchanged(critic_kind):
    """Value pretraining (critic_warmup): the actor's log-probs on a fixed batch do not move, the critic's
    values do, and the warm-up's env steps count toward the budget."""
    t, probe = _warm_lm_trainer(critic_kind, seed=0)
    with torch.no_grad():
        before = t.policy.evaluate(probe)
    rows = t.warm_up_critic()
    with torch.no_grad():
        after = t.policy.evaluate(probe)
    assert torch.equal(before["logp"], after["logp"]) and torch.equal(before["entropy"], after["entropy"])
    assert not torch.equal(before["values"], after["values"])
    assert [r["batch"] for r in rows] == list(range(1, 7)) and t.env_steps == rows[-1]["env_steps"] > 0
    assert all(p.requires_grad for p in t.policy.parameters())  # the actor is trainable again
    assert rows[0]["explained_variance"] == 0.0  # the untrained head and critic start at V = 0
    row = t.step()  # the warm-up ran once, before the first update; step() does not repeat it
    assert len(t.warmup_history) == 6 and row["update"] == 1


def test_critic_warmup_needs_a_critic():
    with pytest.raises(ValueError, match="critic_warmup=2 fits a critic before training, but critic=False"):
        make_config("grpo", env="corridor", critic_warmup=2)
    with pytest.raises(ValueError, match="critic_warmup"):
        make_config("ppo", env="corridor", critic_warmup=-1)


def test_critic_warmup_on_an_mlp_moves_only_the_critic():
    cfg = make_config("ppo", env="corridor", env_options={"horizon": 8}, seed=0, total_steps=4096, critic_warmup=2)
    t = Trainer(cfg)
    actor = {k: v.clone() for k, v in t.policy.state_dict().items() if k.startswith("actor")}
    critic = {k: v.clone() for k, v in t.policy.state_dict().items() if k.startswith("critic")}
    t.warm_up_critic()
    now = t.policy.state_dict()
    assert all(torch.equal(v, now[k]) for k, v in actor.items())
    assert any(not torch.equal(v, now[k]) for k, v in critic.items())


def test_critic_warmup_moves_v_toward_the_mean_reward():
    """From V = 0, six warm-up batches bring the critic's mean value on a held-out batch toward that batch's
    mean reward: the median over 3 seeds of |mean V - mean R| / mean R is below 0.9 (measured 0.32-0.79
    over 6 seeds, both critic kinds, AVX-512 and default kernels; 1.0 would be no movement at all). That it
    learns more than the mean was not found at this scale: on held-out batches its explained variance stayed
    within about 0.2 of 0 for up to 16 batches at lr up to 3e-3 (measured 2026-12-02)."""
    for kind in ("head", "separate"):
        errors = []
        for seed in range(3):
            t, probe = _warm_lm_trainer(kind, seed)
            m = probe["mask"]
            mean_r = float((probe["rewards"] * m).sum(1).mean())
            t.warm_up_critic()
            with torch.no_grad():
                v = t.policy.evaluate(probe)["values"]
            errors.append(abs(float((v * m).sum() / m.sum()) - mean_r) / mean_r)
        assert statistics.median(errors) < 0.9, (kind, errors)
