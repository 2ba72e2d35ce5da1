"""The oracle arm (rltutor.rollout.oracle, ``ppo_oracle_bootstrap``), the warm critic's load hook and the lab's
collector (rltutor.experiments.credit): wired into training, on a small forks task."""

import math

import pytest
import torch

from rltutor.build import agent_collector, build
from rltutor.envs.toolshell import ToolShell
from rltutor.experiments import credit
from rltutor.rollout.agent import AgentCollector
from rltutor.rollout.compaction import MAIN_ARMS, SUB_ADVANTAGE_MODES
from rltutor.rollout.context import ContextSpec
from rltutor.rollout.oracle import MCBoundaryValue, Snapshot, exact_value
from rltutor.rollout.templates import TemplateChooser, outcome_to_go
from rltutor.utils import explained_variance

SMALL = {
    "env_options": {"kind": "forks", "hops": 6, "max_turns": 10, "max_output_chars": 400},
    "num_groups": 2,
    "group_size": 4,
    "sft_steps": 30,
}
"""A forks chain of 6 files (one fork), 2 tasks x 4 episodes, a short warm start: seconds, not minutes."""
ORACLE = "ppo_oracle_bootstrap"
K = 16  # the tightest budget (144 tokens): several compactions per episode of the small chain


def _cloned(arm="ppo_bootstrap", **sets):
    mode = SUB_ADVANTAGE_MODES[arm]
    cfg = credit._config(mode.algo, K, 0, sub_advantage=arm, **mode.requires, **{**SMALL, **sets})
    policy, _ = build(cfg)
    return policy, cfg


class Constant:
    """A boundary_value hook that answers one number and counts its calls."""

    def __init__(self, v):
        self.v, self.calls = v, 0

    def __call__(self, policy, env, ctx, chooser, i):
        self.calls += 1
        return self.v


def test_the_oracle_arm_bootstraps_from_the_hook_not_the_critic():
    policy, cfg = _cloned("ppo_oracle_bootstrap")
    hook = Constant(0.37)
    col = credit._collector(cfg, hook)
    batch, info = col.collect(policy, torch.Generator().manual_seed(0))
    meta, mask, r = info["meta"], batch["mask"], batch["rewards"]
    inner = meta[:, 2] < meta[:, 3] - 1  # rows followed by another piece of their episode
    assert inner.sum() >= 4 and hook.calls == int(inner.sum())  # one call per boundary
    rows, pos = torch.arange(len(mask)), torch.arange(mask.shape[1])
    last = r[rows, torch.where(mask > 0, pos, -1).max(1).values]  # the reward on each row's last step
    assert torch.allclose(last[inner], torch.full_like(last[inner], cfg.gamma * 0.37))  # gamma * V_oracle(s')
    nxt = (rows + 1).clamp(max=len(mask) - 1)
    v_next = batch["values"][nxt, torch.where(mask > 0, pos, 10**9).min(1).values[nxt]]  # the critic's V(s')
    assert not torch.allclose(last[inner], cfg.gamma * v_next[inner])  # not the critic's V(s')
    assert torch.isnan(info["boundary_values"][meta[:, 2] == 0]).all()  # an episode's first row has none


def test_the_oracle_arm_refuses_to_run_without_its_values():
    policy, cfg = _cloned("ppo_oracle_bootstrap")
    knobs = dict(cfg.env_options)
    with pytest.raises(ValueError, match="boundary_value"):
        AgentCollector(lambda: ToolShell(**knobs), TemplateChooser(), sub_advantage="ppo_oracle_bootstrap")
    assert isinstance(agent_collector(cfg).boundary_value, MCBoundaryValue)  # the builder fills the default


def test_the_boundary_oracle_is_the_exact_value_within_its_error():
    """The hook's MC value at a real compaction boundary equals the enumerated V there, within 4 standard errors
    (a 2-file chain of 4 turns, so that enumerating every candidate stays small)."""
    knobs = {"kind": "forks", "hops": 2, "max_turns": 4, "max_output_chars": 400}
    policy, cfg = _cloned("ppo_oracle_bootstrap", env_options=knobs)
    undecided = []
    for budget in (100, 120, 140, 160):  # the first budgets that compact this chain's episodes
        seen = []

        def hook(policy, env, ctx, chooser, i, seen=seen):
            seen.append(Snapshot.of(env, ctx, chooser, i))
            return 0.0

        spec = ContextSpec(budget, "summary", 2, cfg.max_cmd_tokens, cfg.max_obs_tokens)
        col = AgentCollector(lambda: ToolShell(**knobs), TemplateChooser(), 2, 4, spec, ORACLE, boundary_value=hook)
        col.collect(policy, torch.Generator().manual_seed(3))
        for snap in seen:
            if len(undecided) >= 2:
                break
            try:
                exact = exact_value(policy, snap, max_leaves=1000)
            except ValueError:  # too many turns left to enumerate
                continue
            if 0.05 < exact < 0.95:  # a value a wrong estimator would miss
                undecided.append((snap, exact))
        if len(undecided) >= 2:
            break
    assert undecided, "no boundary with an undecided value: change the budgets"
    for snap, exact in undecided[:2]:
        mc = MCBoundaryValue(n=400, seed=1)
        v = mc(policy, snap.env, snap.ctx, _chooser_of(snap), 0)
        assert abs(v - exact) < 4 * mc.se[-1] + 1e-3, (v, mc.se[-1], exact)


def _chooser_of(s: Snapshot) -> TemplateChooser:
    _, _, ch = s.copies(1)
    return ch


def test_the_oracle_arm_trains_end_to_end():
    tr = credit.credit_trainer("ppo_oracle_bootstrap", K, 0, oracle_n=2, **SMALL)
    assert isinstance(tr.collector.boundary_value, MCBoundaryValue) and tr.collector.boundary_value.n == 2
    for _ in range(2):
        m = tr.step()
        assert math.isfinite(m["policy_loss"]) and math.isfinite(m["value_loss"])
    assert len(tr.collector.boundary_value.values) > 0  # its values were read


def test_a_warmed_critic_starts_the_run():
    """The first update's values (and so its explained variance) are the warmed critic's, not a fresh one's."""
    state, *_ = credit.warm_critic(K, 0, max_batches=2, steps_per_batch=60, eval_batches=1, **SMALL)
    fresh, _ = _cloned()
    tr = credit.credit_trainer("ppo_bootstrap", K, 0, critic_state=state, **SMALL)
    seen = {}
    collect = tr.collector.collect

    def spy(policy, generator=None, max_steps=None):
        seen["batch"], seen["info"] = out = collect(policy, generator, max_steps)
        return out

    tr.collector.collect = spy
    m = tr.step()
    b, i = seen["batch"], seen["info"]
    with torch.no_grad():
        v_fresh = fresh.value(b["cand"], b["cand_mask"].bool(), b["state"]) * b["mask"]
        fresh.critic.load_state_dict(state)
        v_warm = fresh.value(b["cand"], b["cand_mask"].bool(), b["state"]) * b["mask"]
    assert torch.allclose(b["values"], v_warm, atol=1e-6)
    assert not torch.allclose(b["values"], v_fresh, atol=1e-3)
    g = outcome_to_go(b["mask"], i["meta"], torch.tensor(i["episode_returns"]), tr.config.gamma)
    on = b["mask"] > 0
    ev_warm, ev_fresh = explained_variance(v_warm, g, on), explained_variance(v_fresh, g, on)
    assert math.isclose(m["critic_ev_all"], ev_warm, abs_tol=1e-5) and abs(ev_warm - ev_fresh) > 0.05


@pytest.mark.parametrize("arm", [*MAIN_ARMS, "ppo_oracle_bootstrap"])
def test_the_labs_collector_is_the_command_lines(arm):
    """credit._collector (the lab's) and build(config) (the command line's Trainer) give one collector's
    settings, lam and row_weight included."""
    policy, cfg = _cloned(arm, lam=0.9)
    lab, cli = credit._collector(cfg), build(cfg)[1]
    for key in ("num_tasks", "group_size", "spec", "sub_advantage", "gamma", "lam", "row_weight", "turn_cost"):
        assert getattr(lab, key) == getattr(cli, key), key
    assert lab.lam == 0.9 and lab.row_weight and type(lab.boundary_value) is type(cli.boundary_value)


def test_every_arm_has_a_gradient_snr_at_a_fixed_policy():
    df = credit.arm_snr(Ks=(16,), batches=3, critic_batches=1, oracle_n=2, oracle_Ks=(16,), **SMALL)
    assert list(df["arm"]) == [*MAIN_ARMS, ORACLE]
    assert (df["variance"] > 0).all() and df["snr"].notna().all()
    same = df.set_index("arm")["variance"]
    assert same["ppo_bootstrap"] != same[ORACLE]  # the oracle's boundary values changed the gradient
