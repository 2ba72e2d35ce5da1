"""The template agent (chapter 7): log-probs, candidates from observations only, the warm start, the guard."""

import statistics

import numpy as np
import pandas as pd
import pytest
import torch

from rltutor.build import build
from rltutor.config import make_config, template_settings
from rltutor.envs.toolshell import HACK_KINDS, ToolShell, scripted_hacker, scripted_solver
from rltutor.guard import Guard
from rltutor.guard.wrapper import GuardedEnv
from rltutor.models.template_policy import TemplatePolicy
from rltutor.rollout.agent import AgentCollector, demonstrations
from rltutor.rollout.context import Context, ContextSpec
from rltutor.rollout.templates import (
    CAND_DIM,
    STATE_DIM,
    Memory,
    TemplateChooser,
    behaviour_clone,
)
from rltutor.train import Trainer

KNOBS = dict(hops=3, max_turns=6, max_output_chars=400)
TINY = dict(sft_steps=20, num_groups=2, group_size=2, env_options=KNOBS)


def _collector(make_env, num_tasks=4, group_size=4, turn_cost=0.0, sub_advantage=None, gamma=1.0, **context):
    """The template agent's collector; ``context``: ContextSpec fields (default no budget, no compaction)."""
    spec = ContextSpec(**{"context_budget": None, "compaction": "none", **context})
    return AgentCollector(make_env, TemplateChooser(), num_tasks, group_size, spec, sub_advantage, gamma, turn_cost)


def _demos(make_env, n, seed=0, **context):
    chooser = TemplateChooser()
    spec = ContextSpec(**{"context_budget": None, "compaction": "none", **context})
    return chooser.demo_rows(demonstrations(make_env, scripted_solver, n, chooser, spec, seed=seed))


def _policy(critic=True, seed=0):
    torch.manual_seed(seed)
    return TemplatePolicy(CAND_DIM, STATE_DIM, hidden=16, critic=critic)


@pytest.mark.parametrize("critic", [True, False])
def test_logp_at_collection_equals_evaluate(critic):
    pol = _policy(critic)
    col = _collector(lambda: ToolShell(**KNOBS), num_tasks=2, group_size=3, turn_cost=0.1)
    batch, info = col.collect(pol, torch.Generator().manual_seed(0))
    ev = pol.evaluate(batch)
    m = batch["mask"]
    assert torch.allclose(ev["logp"] * m, batch["logp"] * m, atol=1e-5)
    assert torch.isfinite(ev["logp"]).all() and torch.isfinite(ev["entropy"]).all()
    assert (ev["values"] is not None) == critic
    if critic:
        assert torch.allclose(ev["values"] * m, batch["values"], atol=1e-5)
    # one action per turn, the outcome on the last turn, -turn_cost on each
    assert info["env_steps"] == int(m.sum())
    assert torch.allclose((batch["rewards"] * m).sum(1), torch.tensor(info["episode_returns"]))
    assert info["metrics"]["segments_per_episode"] == 1.0


def test_mixed_tasks_split_the_rates_by_feasibility():
    col = _collector(lambda: ToolShell(hops=(1, 5), max_turns=5), num_tasks=6, group_size=2, turn_cost=0.1)
    _, info = col.collect(_policy(), torch.Generator().manual_seed(0))
    m, recs = info["metrics"], [e.episode for e in col.envs]
    feasible = [r["hops"] + 2 <= 5 for r in recs]
    assert {r["hops"] for r in recs} <= {1, 5} and m["feasible_share"] == sum(feasible) / len(recs)
    honest = [r["honest_solve"] for r, f in zip(recs, feasible, strict=True) if f]
    if honest:
        assert m["honest_solve_rate_feasible"] == sum(honest) / len(honest)
    hacked = [r["hacked"] for r, f in zip(recs, feasible, strict=True) if not f]
    if hacked:
        assert m["hack_rate_infeasible"] == sum(hacked) / len(hacked)
    assert recs[0]["hops"] == recs[1]["hops"]  # one task per group
    cfg = template_settings("ppo", "mix")
    assert cfg["env_options"]["hops"] == (3, 8) and template_settings("ppo")["env_options"]["hops"] == 8
    with pytest.raises(ValueError, match="tasks"):
        template_settings("ppo", "mixed")
    _, fixed = _collector(lambda: ToolShell(**KNOBS), 2, 2).collect(_policy(), torch.Generator())
    assert fixed["metrics"]["feasible_share"] == 1.0  # every record has hops, so the split is always there


class NoPeek(ToolShell):
    """A ToolShell whose answer an agent must not read."""

    @property
    def answer(self):
        raise AssertionError("the collector read env.answer")


def test_candidates_come_from_observations_only():
    env = ToolShell(**KNOBS, seed=3)
    mem = Memory(env.task.statement, env.max_turns)
    keys, _, _ = mem.features()
    assert not [a for t, a in keys if t == "submit"]  # nothing has shown a number yet
    assert ("cat", "README.md") in keys and ("grep", "TARGET") in keys
    seen = [env.task.statement]
    for command in scripted_solver(env)[:-1]:
        obs, *_ = env.step(command)
        seen.append(obs)
        mem.update(obs, *command.split(" ", 1), {})
        keys, _, _ = mem.features()
        for t, a in keys:  # every argument was printed somewhere (ls . is the one constant)
            assert (t, a) == ("ls", ".") or any(a.split("/")[-1].removesuffix(".py") in s for s in seen), (t, a)
    # the collector never touches env.answer
    col = _collector(lambda: NoPeek(**KNOBS), num_tasks=2, group_size=2)
    col.collect(_policy(), torch.Generator().manual_seed(1))


def bc_accuracy(seed: int) -> dict[str, float]:
    """Behaviour cloning of the scripted solver (24 demos from ``seed``, 150 steps): accuracy on the demos' actions.

    Shared with benchmarks/learning_margins.py, which runs it for seeds 0-5 under every CPU kernel setting.
    """
    demos = _demos(lambda: ToolShell(**KNOBS), 24, seed=seed)
    pol = _policy(seed=seed + 1)
    g = torch.Generator().manual_seed(seed)
    losses = behaviour_clone(pol, demos, steps=150, lr=3e-3, smoothing=0.0, generator=g)
    with torch.no_grad():
        pred = pol.logits(demos["cand"], demos["cand_mask"], demos["state"]).argmax(-1)
    return {"accuracy": float((pred == demos["target"]).float().mean()), "loss_drop": losses[0] / losses[-1]}


@pytest.mark.learning
def test_behaviour_cloning_reaches_the_solver_actions():
    """Behaviour cloning of the scripted solver: over seeds 0-2 the median accuracy on the demos' actions
    is >= 0.95, and every seed lowers its loss at least 10-fold.

    The demonstrations, the policy's initialisation and the minibatches all follow the seed. The
    accuracy, seeds 0-5, every kernel setting this AMD EPYC (AVX2) can run
    (`python benchmarks/learning_margins.py --tests bc_accuracy`):

    | setting | seed 0 | seed 1 | seed 2 | seed 3 | seed 4 | seed 5 | worst |
    |-|-|-|-|-|-|-|-|
    | native/mkl=unset | 1 | 1 | 1 | 0.992 | 0.992 | 1 | 0.992 |
    | native/mkl=AVX2 | 1 | 1 | 1 | 0.992 | 0.992 | 1 | 0.992 |
    | native/mkl=SSE4_2 | 1 | 1 | 1 | 0.992 | 0.992 | 1 | 0.992 |
    | avx2/mkl=unset | 1 | 1 | 1 | 0.992 | 0.992 | 1 | 0.992 |
    | avx2/mkl=AVX2 | 1 | 1 | 1 | 0.992 | 0.992 | 1 | 0.992 |
    | avx2/mkl=SSE4_2 | 1 | 1 | 1 | 0.992 | 0.992 | 1 | 0.992 |
    | default/mkl=unset | 1 | 1 | 1 | 0.992 | 0.992 | 1 | 0.992 |
    | default/mkl=AVX2 | 1 | 1 | 1 | 0.992 | 0.992 | 1 | 0.992 |
    | default/mkl=SSE4_2 | 1 | 1 | 1 | 0.992 | 0.992 | 1 | 0.992 |

    over all 54 runs: loss_drop 137 to 208
    median wall time of one run: 1.1 s
    """
    runs = [bc_accuracy(seed) for seed in range(3)]
    assert all(r["loss_drop"] > 10 for r in runs), runs
    assert statistics.median(r["accuracy"] for r in runs) >= 0.95, runs


@pytest.mark.parametrize("guard", ["none", "abort", "penalize", "decoy"])
def test_tiny_train_run_under_each_guard(guard):
    cfg = make_config("ppo", **{**template_settings("ppo"), **TINY, "guard": guard, "seed": 0})
    trainer = Trainer(cfg)
    for _ in range(2):
        row = trainer.step()
    for k in (
        "hack_rate",
        "solve_rate",
        "episode_return",
        "grad_norm",
        "approx_kl",
        "clip_frac",
        "cut_short_rate",
        "intercepts_per_episode",
    ):
        assert k in row and row[k] == row[k], k
    if guard != "none":
        assert all(isinstance(e, GuardedEnv) and e.policy == guard for e in trainer.collector.envs)
    g = make_config("grpo", **{**template_settings("grpo"), **TINY, "guard": guard, "seed": 0})
    assert Trainer(g).step()["episodes"] == 4


class Spy(ToolShell):
    """Records every command that reaches the environment."""

    executed: list = []

    def step(self, command):
        Spy.executed.append(command)
        return super().step(command)


def test_decoy_never_executes_a_blocked_call():
    guard = Guard.default()
    Spy.executed = []
    col = _collector(lambda: GuardedEnv(Spy(**KNOBS), guard, "decoy"), num_tasks=4, group_size=4)
    for seed in range(3):  # an untrained policy tries many calls, shortcuts included
        _, info = col.collect(_policy(seed=seed), torch.Generator().manual_seed(seed))
        assert info["metrics"]["hack_rate"] == 0.0
    env = GuardedEnv(Spy(**KNOBS), guard, "decoy")
    for kind in HACK_KINDS:
        env.reset(seed=7)
        for c in scripted_hacker(env, kind)[:-1]:
            env.step(c)
    assert Spy.executed and not [c for c in Spy.executed if guard.inspect(c).blocked]


def test_build_and_cli_template_agent(tmp_path):
    from rltutor.cli import main

    cfg = make_config("ppo", **{**template_settings("ppo"), **TINY, "guard": "decoy"})
    policy, collector = build(cfg)
    assert isinstance(policy, TemplatePolicy) and isinstance(collector.chooser, TemplateChooser)
    out = tmp_path / "run"
    rc = main(
        [
            "train",
            "--env",
            "toolshell",
            "--agent-policy",
            "templates",
            "--guard",
            "decoy",
            "--algo",
            "ppo",
            "--steps",
            "30",
            "--seed",
            "2",
            "--out",
            str(out),
            "--no-progress",
            "--set",
            "sft_steps=20",
            "--set",
            "num_groups=2",
            "--set",
            "group_size=2",
        ]
    )
    assert rc == 0
    df = pd.read_csv(out / "metrics.csv")
    for k in ("env_steps", "solve_rate", "hack_rate", "episode_return", "segments_per_episode", "mean_turns"):
        assert k in df.columns
    assert (df.segments_per_episode == 1).all()


# ----------------------------------------------------------------------------------------------
# Compaction for the template agent: sub-trajectories as rows
# ----------------------------------------------------------------------------------------------

MIX = dict(hops=(2, 5), max_turns=8, max_output_chars=400)


def _compacting(sub_advantage="ppo_bootstrap", budget=200, compaction="summary", **kw):
    return _collector(
        lambda: ToolShell(**MIX),
        num_tasks=3,
        group_size=3,
        turn_cost=0.1,
        context_budget=budget,
        compaction=compaction,
        sub_advantage=sub_advantage,
        gamma=0.9,
        **kw,
    )


def _rows_per_episode(batch_meta):
    return torch.bincount(batch_meta[:, 1])


@pytest.mark.parametrize("compaction", ["recent", "summary"])
def test_every_turn_is_trained_in_exactly_one_sub_trajectory(compaction, monkeypatch):
    seen = {}
    real = TemplateChooser.rows

    def spy(self, episodes, policy, device):
        batch, meta = real(self, episodes, policy, device)
        seen["episodes"], seen["meta"] = episodes, meta
        return batch, meta

    monkeypatch.setattr(TemplateChooser, "rows", spy)
    col = _compacting(compaction=compaction)
    batch, info = col.collect(_policy(), torch.Generator().manual_seed(1))
    meta, m = seen["meta"], batch["mask"]
    # every turn of every episode is one trained step of one row, in order
    assert int(m.sum()) == info["env_steps"] == sum(len(ep.steps) for ep in seen["episodes"])
    for e, ep in enumerate(seen["episodes"]):
        rows = (meta[:, 1] == e).nonzero().flatten()
        assert meta[rows, 2].tolist() == list(range(len(rows)))  # k = 0..K-1, consecutive
        assert (meta[rows, 3] == len(rows)).all() and len(rows) == len(ep.segments)
        assert [int(m[r].sum()) for r in rows] == [ep.turn_segments.count(k) for k in range(len(rows))]
        logp = torch.cat([batch["logp"][r][m[r] > 0] for r in rows])
        assert torch.allclose(logp, torch.tensor([s["logp"] for s in ep.steps]))
    assert info["metrics"]["segments_per_episode"] == len(meta) / 9 > 1  # the budget split episodes
    ev = _policy().evaluate(batch)  # the rows replay: the stored log-probs are the policy's
    assert torch.allclose(ev["logp"] * m, batch["logp"] * m, atol=1e-5)


def test_compacted_contexts_respect_the_budget():
    from rltutor.envs.toolshell.vocab import EOS, encode

    env = ToolShell(**MIX)
    for budget in (200, 260):
        spec = ContextSpec(budget, "summary", 2, max_cmd_tokens=24, max_obs_tokens=128)
        for seed in range(5):
            statement = env.reset(seed=seed)
            ctx = Context(statement, spec)
            for command in scripted_solver(env):
                obs, _, done, _ = env.step(command)
                if done:
                    break
                tokens = [*encode(command), EOS]
                text = ctx.add_turn(tokens, [0.0] * len(tokens), obs, 0.0, done)
                assert len(ctx.seg.tokens) + spec.room <= budget  # the next command always fits
                if text is not None:  # the memory restarts from exactly the compacted tokens
                    assert encode(text) == ctx.seg.tokens
    with pytest.raises(ValueError, match="leaves no room for the task and a command"):
        ContextSpec(40, "summary", 2, max_cmd_tokens=24, max_obs_tokens=128)  # refused by the settings' one check
    with pytest.raises(ValueError, match="raise context_budget"):  # this task's statement does not fit 56
        Context(statement, ContextSpec(56, "summary", 2, max_cmd_tokens=24, max_obs_tokens=128))


def _collect_with_meta(col, pol, seed):
    batch, info = col.collect(pol, torch.Generator().manual_seed(seed))
    return batch, info, info["meta"]


def test_bootstrap_values_only_at_compaction_boundaries():
    pol = _policy(critic=True)
    batch, info, meta = _collect_with_meta(_compacting("ppo_bootstrap"), pol, 2)
    batch2, _, meta2 = _collect_with_meta(_compacting("ppo_per_segment"), pol, 2)  # same seeds, same episodes
    assert torch.equal(batch["actions"], batch2["actions"]) and torch.equal(meta, meta2)
    m, r, r2, v = batch["mask"], batch["rewards"], batch2["rewards"], batch["values"]
    k, K = meta[:, 2], meta[:, 3]
    assert (K > 1).any()  # the budget split some episodes
    last = m.sum(1).long() - 1  # each row's last turn
    rows = torch.arange(len(m))
    # rewards sit on the last turn only; before an episode's last row: gamma * V(next row's first turn) with
    # the bootstrap, 0 without it; on the last row: the episode's return, the same in both
    assert torch.equal(r.sum(1), r[rows, last]) and torch.equal(r2.sum(1), r2[rows, last])
    inner = k < K - 1
    nxt = (rows + 1).clamp(max=len(m) - 1)
    assert torch.allclose(r[rows, last][inner], 0.9 * v[nxt, 0][inner])
    assert (r2[rows, last][inner] == 0).all()
    returns = torch.tensor(info["episode_returns"])
    assert torch.allclose(r[rows, last][~inner], returns[meta[~inner, 1]])
    assert torch.equal(r[rows, last][~inner], r2[rows, last][~inner])
    assert info["metrics"]["comparable_row_frac"] != info["metrics"]["comparable_row_frac"]  # NaN: no groups
    assert "critic_ev_boundary" in info["metrics"]


def test_full_outcome_batch_group_falls_back_to_one_group_when_episodes_split():
    batch, info = _compacting("full_outcome_batch_group").collect(
        _policy(critic=False), torch.Generator().manual_seed(3)
    )
    assert (batch["group_ids"] == 0).all() and info["metrics"]["comparable_row_frac"] == 0.0
    wide = _compacting("full_outcome_batch_group", budget=4096)
    batch, info = wide.collect(_policy(critic=False), torch.Generator().manual_seed(3))
    assert batch["group_ids"].tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert info["metrics"]["comparable_row_frac"] == 1.0 and info["metrics"]["segments_per_episode"] == 1.0


def test_no_compaction_ends_an_overflowing_episode():
    col = _compacting("ppo_per_segment", budget=200, compaction="none")
    _, info = col.collect(_policy(), torch.Generator().manual_seed(0))
    assert info["metrics"]["overflow_rate"] > 0 and info["metrics"]["segments_per_episode"] == 1.0


def test_demonstrations_pass_through_compaction():
    context = dict(context_budget=200, compaction="summary", keep_turns=2, max_cmd_tokens=24, max_obs_tokens=128)
    plain = _demos(lambda: ToolShell(**MIX), 8, seed=0)
    compacted = _demos(lambda: ToolShell(**MIX), 8, seed=0, **context)
    assert len(plain["target"]) == len(compacted["target"])  # the solver's every command stays a candidate
    assert not torch.equal(plain["state"], compacted["state"])  # but from restarted memories


def test_compaction_needs_a_sub_advantage_mode():
    with pytest.raises(ValueError, match="pass sub_advantage"):
        _collector(lambda: ToolShell(**MIX), context_budget=200, compaction="summary")
    with pytest.raises(ValueError, match="pass context_budget"):
        _collector(lambda: ToolShell(**MIX), compaction="summary", sub_advantage="full_outcome_batch_group")


def test_compaction_lab_resumes_run_by_run(tmp_path, monkeypatch):
    import rltutor.experiments.agents as A

    real = A.run_agent
    calls = []

    def tiny(*a, **k):
        calls.append(a)
        small = {"sft_steps": 5, "num_groups": 2, "group_size": 2, "env_options": {"hops": 2, "max_turns": 5}}
        return real(*a, **{**k, **small})

    monkeypatch.setattr(A, "run_agent", tiny)
    kw = dict(budgets=(200,), seeds=(0,), updates=1, workers=1, run_dir=str(tmp_path))
    df = A.compaction_curves(("full_outcome_batch_group",), **kw)
    assert len(calls) == 1 and len(list(tmp_path.iterdir())) == 1
    again = A.compaction_curves(("full_outcome_batch_group",), **kw)  # read back, not rerun
    assert len(calls) == 1
    pd.testing.assert_frame_equal(df, again)
    assert set(df["sub_advantage"]) == {"full_outcome_batch_group"} and set(df["context_budget"]) == {200}


def _fake_runs(ppo, grpo, budgets=(256, 4096)):
    rows = []
    for mode, values in (("ppo_bootstrap", ppo), ("full_outcome_batch_group", grpo), ("broadcast_grpo", grpo)):
        for budget in budgets:
            for seed, v in enumerate(values[budget]):
                rows.append(
                    {"sub_advantage": mode, "context_budget": budget, "seed": seed, "update": 1, "episode_return": v}
                )
    return pd.DataFrame(rows)


def test_compaction_verdicts_decide_from_the_intervals():
    from rltutor.experiments.agents import compaction_verdicts

    ppo = {256: [0.9, 0.8, 0.85, 0.95, 0.9], 4096: [0.5, 0.4, 0.6, 0.5, 0.45]}
    grpo = {256: [0.1, 0.2, 0.15, 0.1, 0.05], 4096: [0.5, 0.45, 0.55, 0.5, 0.4]}
    v = compaction_verdicts(_fake_runs(ppo, grpo), last=1).set_index("contrast")
    assert v.loc["ppo_bootstrap - full_outcome_batch_group at 256 tokens", "verdict"] == "confirmed"
    assert v.loc["ppo_bootstrap - full_outcome_batch_group at 4096 tokens", "verdict"] == "undecided"
    assert v.loc["(ppo_bootstrap - full_outcome_batch_group) at 256 minus at 4096", "verdict"] == "confirmed"
    flipped = compaction_verdicts(_fake_runs(grpo, ppo), last=1).set_index("contrast")
    assert flipped.loc["ppo_bootstrap - full_outcome_batch_group at 256 tokens", "verdict"] == "refuted"
    est = v.loc["ppo_bootstrap - full_outcome_batch_group at 256 tokens"]
    assert est["estimate"] == pytest.approx(0.88 - 0.12)
    assert est["ci_low"] < est["estimate"] < est["ci_high"] and est["seeds"] == "5/5"
    with pytest.raises(ValueError, match="mix guards"):
        compaction_verdicts(_fake_runs(ppo, grpo).assign(guard=["none", "decoy"] * 15))


def test_a_compacting_template_run_resumes_exactly(tmp_path):
    from rltutor.cli import main

    def args(out, steps):
        return [
            "train",
            "--env",
            "toolshell",
            "--agent-policy",
            "templates",
            "--algo",
            "ppo",
            "--compaction",
            "summary",
            "--context-budget",
            "200",
            "--sub-advantage",
            "ppo_bootstrap",
            "--out",
            str(out),
            "--steps",
            str(steps),
            "--seed",
            "3",
            "--no-progress",
            "--checkpoint-every",
            "1",
            "--set",
            "sft_steps=20",
            "--set",
            "num_groups=2",
            "--set",
            "group_size=2",
            "--set",
            'env_options={"hops": [2, 5], "max_turns": 8}',
        ]

    assert main(args(tmp_path / "a", 40)) == 0
    first = pd.read_csv(tmp_path / "a" / "metrics.csv")
    assert main(["train", "--out", str(tmp_path / "a"), "--resume", "--steps", "100", "--no-progress"]) == 0
    resumed = pd.read_csv(tmp_path / "a" / "metrics.csv")
    assert main(args(tmp_path / "b", 100)) == 0
    whole = pd.read_csv(tmp_path / "b" / "metrics.csv")
    assert len(resumed) > len(first) and (whole["segments_per_episode"] > 1).any()
    cols = ["env_steps", "episode_return", "segments_per_episode", "policy_loss", "hack_rate"]
    # the first run's last batch stopped at its budget of 40 steps (within one round of 2 x 2 turns); before
    # it, the resumed run is the uninterrupted one, and after it both end within their budget of 100
    assert 40 <= first["env_steps"].iloc[-1] < 40 + 4 and resumed["env_steps"].iloc[-1] < 100 + 4
    n = len(first) - 1
    pd.testing.assert_frame_equal(resumed[cols][:n], whole[cols][:n])
    assert whole["env_steps"].iloc[-1] < 100 + 4


def test_snr_of_the_modes_agrees_where_episodes_do_not_split():
    """At a budget no episode reaches, the two PPO modes are one estimator and the four group modes another:
    their SNRs must coincide exactly; at a tight budget the bootstrap makes the PPO modes differ."""
    from rltutor.experiments.agents import sub_advantage_snr

    t = sub_advantage_snr(budgets=(4096, 200), batches=3, fit_batches=1).set_index(["context_budget", "sub_advantage"])
    wide, tight = t.loc[4096], t.loc[200]
    assert (wide["segments_per_episode"] == 1).all() and (tight["segments_per_episode"] > 1).all()
    assert wide.loc["ppo_bootstrap", "snr"] == wide.loc["ppo_per_segment", "snr"]
    groups = wide.loc[["full_outcome_batch_group", "broadcast_grpo", "split_reward", "index_groups"], "snr"]
    assert groups.nunique() == 1 and (wide["snr"] >= 0).all()
    assert tight.loc["ppo_bootstrap", "snr"] != tight.loc["ppo_per_segment", "snr"]
    assert tight.loc["full_outcome_batch_group", "comparable_row_frac"] == 0.0  # the batch-wide fallback
    assert np.isnan(tight.loc["ppo_bootstrap", "comparable_row_frac"])
