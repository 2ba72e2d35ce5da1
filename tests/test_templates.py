"""The template agent (chapter 7): log-probs, candidates from observations only, the warm start, the guard."""

import pandas as pd
import pytest
import torch

from rltutor.build import build
from rltutor.config import make_config, template_settings
from rltutor.envs.toolshell import HACK_KINDS, ToolShell, scripted_hacker, scripted_solver
from rltutor.guard import Guard
from rltutor.guard.wrapper import GuardedEnv
from rltutor.models.template_policy import TemplatePolicy
from rltutor.rollout.templates import (
    CAND_DIM,
    STATE_DIM,
    Memory,
    TemplateCollector,
    behaviour_clone,
    template_demos,
)
from rltutor.train import Trainer

KNOBS = dict(hops=3, max_turns=6, max_output_chars=400)
TINY = dict(sft_steps=20, num_groups=2, group_size=2, env_options=KNOBS)


def _policy(critic=True, seed=0):
    torch.manual_seed(seed)
    return TemplatePolicy(CAND_DIM, STATE_DIM, hidden=16, critic=critic)


@pytest.mark.parametrize("critic", [True, False])
def test_logp_at_collection_equals_evaluate(critic):
    pol = _policy(critic)
    col = TemplateCollector(lambda: ToolShell(**KNOBS), num_tasks=2, group_size=3, turn_cost=0.1)
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
    col = TemplateCollector(lambda: ToolShell(hops=(1, 5), max_turns=5), num_tasks=6, group_size=2, turn_cost=0.1)
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
    _, fixed = TemplateCollector(lambda: ToolShell(**KNOBS), 2, 2).collect(_policy(), torch.Generator())
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
    col = TemplateCollector(lambda: NoPeek(**KNOBS), num_tasks=2, group_size=2)
    col.collect(_policy(), torch.Generator().manual_seed(1))


def test_behaviour_cloning_reaches_the_solver_actions():
    demos = template_demos(lambda: ToolShell(**KNOBS), scripted_solver, 24, seed=0)
    pol = _policy(seed=1)
    losses = behaviour_clone(pol, demos, steps=150, lr=3e-3, smoothing=0.0, generator=torch.Generator().manual_seed(0))
    assert losses[-1] < losses[0]
    with torch.no_grad():
        pred = pol.logits(demos["cand"], demos["cand_mask"], demos["state"]).argmax(-1)
    assert (pred == demos["target"]).float().mean() >= 0.95


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
    col = TemplateCollector(lambda: GuardedEnv(Spy(**KNOBS), guard, "decoy"), num_tasks=4, group_size=4)
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
    assert isinstance(policy, TemplatePolicy) and isinstance(collector, TemplateCollector)
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
