"""Compaction and the sub-trajectory advantage modes (rltutor.rollout.compaction), on hand-made examples."""

import contextlib
import math

import pytest
import torch

from rltutor.advantages import gae, group_advantages
from rltutor.envs.toolshell import CMD, EOS, OBS, TASK, decode, encode
from rltutor.rollout.compaction import (
    MAIN_ARMS,
    SUB_ADVANTAGE_MODES,
    SUB_ADVANTAGES,
    assign_rewards,
    compact,
    comparable_fraction,
    register_sub_advantage,
    resolve_sub_advantage,
    sub_advantage_batch,
    summarize,
)

HEAD = [TASK, *encode("task t1: find TARGET")]


def _turn(cmd, obs):
    return [*encode(cmd), EOS], encode(obs)


TURNS = [
    _turn("cat README.md", "TARGET is defined in utils/router.py\nrun the tests"),
    _turn("cat utils/router.py", "from pkg.matrix import TIMEOUT\n\nTARGET = TIMEOUT"),
    _turn("cat pkg/matrix.py", "TIMEOUT = 421\nVERSION = 2"),
]


def test_recent_keeps_the_task_and_the_last_turns_within_budget():
    tokens, summ = compact("recent", HEAD, TURNS, budget=500, room=10, keep_turns=2)
    assert tokens[: len(HEAD)] == HEAD and not any(summ)
    rest = tokens[len(HEAD) :]
    assert rest[0] == CMD and decode(rest).count("<cmd>") == 2 and "pkg/matrix.py" in decode(rest)
    assert "README" not in decode(rest)
    one = len(HEAD) + 3 + len(TURNS[-1][0]) + len(TURNS[-1][1])  # room for the newest turn only
    tokens, _ = compact("recent", HEAD, TURNS, budget=one + 10, room=10, keep_turns=2)
    assert len(tokens) <= one and decode(tokens).count("<cmd>") == 1
    with pytest.raises(ValueError, match="context budget"):
        compact("recent", HEAD, TURNS, budget=len(HEAD) + 5, room=10)


def test_summary_keeps_the_facts_and_flags_its_tokens():
    lines = summarize(TURNS)
    assert lines[0] == "cat README.md: TARGET is defined in utils/router.py"
    assert lines[2] == "cat pkg/matrix.py: TIMEOUT = 421; VERSION = 2"
    tokens, summ = compact("summary", HEAD, TURNS, budget=400, room=10)
    assert tokens[len(HEAD)] == OBS and not summ[len(HEAD)] and all(summ[len(HEAD) + 1 :])
    assert "TIMEOUT = 421" in decode(tokens)
    small, _ = compact("summary", HEAD, TURNS, budget=len(HEAD) + 40, room=10)  # oldest facts dropped
    assert len(small) <= len(HEAD) + 30 and "TIMEOUT = 421" in decode(small)


def test_gae_skips_masked_environment_tokens():
    g = torch.Generator().manual_seed(0)
    r, v = torch.randn(1, 6, generator=g), torch.randn(1, 6, generator=g)
    mask = torch.tensor([[1.0, 1, 0, 0, 1, 1]])  # two commands with an observation between
    a, ret = gae(r, v, mask, gamma=0.9, lam=0.8)
    keep = mask[0].bool()
    a2, _ = gae(r[:, keep], v[:, keep], torch.ones(1, 4), gamma=0.9, lam=0.8)
    torch.testing.assert_close(a[:, keep], a2)
    assert (a[:, ~keep] == 0).all()


# Two tasks x G=2 episodes; episode 0 has 2 sub-trajectories, episode 2 has 3, the others 1: 7 rows.
META = torch.tensor([[0, 0, 0, 2], [0, 0, 1, 2], [0, 1, 0, 1], [1, 2, 0, 3], [1, 2, 1, 3], [1, 2, 2, 3], [1, 3, 0, 1]])
OUTCOME = torch.tensor([1.0, 0.0, 1.0, 1.0])
MASK = torch.tensor(
    [[0, 1, 1, 0], [0, 0, 1, 1], [1, 1, 0, 0], [0, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 0], [1, 1, 1, 1]],
    dtype=torch.float,
)
LAST = torch.tensor([2, 3, 1, 1, 2, 2, 3])


def _last(rewards):
    assert ((rewards != 0).sum(1) <= 1).all()  # one reward per row, on its last generated token
    return rewards[torch.arange(len(rewards)), LAST]


def test_ppo_modes_bootstrap_across_the_boundary_or_not():
    values = torch.arange(28, dtype=torch.float).reshape(7, 4) / 10
    r, gid = assign_rewards("ppo_per_segment", META, OUTCOME, MASK, values, gamma=0.5)
    torch.testing.assert_close(_last(r), torch.tensor([0.0, 1, 0, 0, 0, 1, 1]))
    assert gid.tolist() == [0, 0, 0, 1, 1, 1, 1]
    r, _ = assign_rewards("ppo_bootstrap", META, OUTCOME, MASK, values, gamma=0.5)
    # row 0 -> V of row 1's first generated position (2): 0.6; row 3 -> row 4 at 1: 1.7; row 4 -> row 5 at 2: 2.2
    torch.testing.assert_close(_last(r), torch.tensor([0.5 * 0.6, 1, 0, 0.5 * 1.7, 0.5 * 2.2, 1, 1]))
    with pytest.raises(ValueError, match="critic"):
        assign_rewards("ppo_bootstrap", META, OUTCOME, MASK, None)


def test_full_outcome_batch_group_falls_back_to_one_group_when_rows_are_not_prompts_times_g():
    r, gid = assign_rewards("full_outcome_batch_group", META, OUTCOME, MASK, num_tasks=2, group_size=2)
    torch.testing.assert_close(_last(r), torch.tensor([1.0, 1, 0, 1, 1, 1, 1]))
    assert gid.tolist() == [0] * 7  # 7 rows != 2 x 2: the whole batch is one group
    m4 = META[[0, 2, 3, 6]].clone()
    m4[:, 1] = torch.arange(4)
    m4[:, 2], m4[:, 3] = 0, 1
    _, gid = assign_rewards("full_outcome_batch_group", m4, OUTCOME, MASK[[0, 2, 3, 6]], num_tasks=2, group_size=2)
    assert gid.tolist() == [0, 0, 1, 1]  # no compaction: groups by task


def test_broadcast_split_and_index_groups():
    r, gid = assign_rewards("broadcast_grpo", META, OUTCOME, MASK)
    a = group_advantages(OUTCOME, torch.tensor([0, 0, 1, 1]), "grpo")  # task 1 is dead: 0
    torch.testing.assert_close(_last(r), a[META[:, 1]])
    r, gid = assign_rewards("split_reward", META, OUTCOME, MASK)
    torch.testing.assert_close(_last(r), torch.tensor([0.5, 0.5, 0, 1 / 3, 1 / 3, 1 / 3, 1]))
    assert gid.tolist() == [0, 0, 0, 1, 1, 1, 1]
    r, gid = assign_rewards("index_groups", META, OUTCOME, MASK)
    torch.testing.assert_close(_last(r), torch.tensor([1.0, 1, 0, 1, 1, 1, 1]))
    # task 0: index 0 by both episodes, index 1 by one -> it joins index 0; task 1 likewise: one group each
    assert gid.tolist() == [0, 0, 0, 4, 4, 4, 4]
    m = META.clone()
    m[6] = torch.tensor([1, 3, 0, 2])
    m = torch.cat([m, torch.tensor([[1, 3, 1, 2]])])
    _, gid = assign_rewards("index_groups", m, torch.tensor([1.0, 0, 1, 0]), torch.cat([MASK, MASK[:1]]))
    assert gid.tolist() == [0, 0, 0, 4, 5, 5, 4, 5]  # task 1: indices 0 and 1 both reached twice
    assert (
        set(SUB_ADVANTAGES) == {*MAIN_ARMS, "ppo_oracle_bootstrap", "split_reward", "index_groups"}
        and len(MAIN_ARMS) == 6
    )


def test_every_registered_mode_runs_as_its_lab_arm_and_is_refused_without_what_it_needs():
    """Config's checks and the lab's table come from the registry: each mode's arm is a valid run, and a run
    without the estimator it names (or its critic) is refused with a message naming the mode and the fix."""
    from rltutor.config import resolve
    from rltutor.experiments.agents import SUB_ADVANTAGE_RUNS

    assert list(SUB_ADVANTAGES) == list(SUB_ADVANTAGE_MODES) == list(SUB_ADVANTAGE_RUNS)
    base = {"agent_policy": "templates", "compaction": "summary", "context_budget": 256}
    for name, mode in SUB_ADVANTAGE_MODES.items():
        algo, settings = SUB_ADVANTAGE_RUNS[name]
        assert (algo, settings) == (mode.algo, mode.requires) and SUB_ADVANTAGES[name] == mode.what
        cfg = resolve(algo, "toolshell", sets={**base, "sub_advantage": name, **settings})
        assert cfg.sub_advantage == name and all(getattr(cfg, k) == v for k, v in settings.items())
        other = "grpo" if algo == "ppo" else "ppo"
        if mode.requires or (mode.needs_critic and other == "grpo"):  # the other preset lacks what it needs
            with pytest.raises(ValueError, match=f"sub_advantage='{name}' feeds .* --algo {algo}"):
                resolve(other, "toolshell", sets={**base, "sub_advantage": name})
        else:  # any estimator will do
            resolve(other, "toolshell", sets={**base, "sub_advantage": name})
    assert SUB_ADVANTAGE_RUNS["broadcast_grpo"] == ("grpo", {"estimator": "reinforce", "gamma": 1.0})


def test_auto_is_the_registered_default_for_the_critic_setting():
    assert resolve_sub_advantage("auto", critic=True) == "ppo_bootstrap"
    assert resolve_sub_advantage("auto", critic=False) == "full_outcome_batch_group"
    assert resolve_sub_advantage("split_reward", critic=True) == "split_reward"
    with pytest.raises(ValueError, match="unknown sub_advantage 'fold'; valid: broadcast_grpo"):
        resolve_sub_advantage("fold", critic=True)
    for critic in (True, False):
        assert sum(m.auto and m.needs_critic == critic for m in SUB_ADVANTAGE_MODES.values()) == 1


def test_comparable_fraction_follows_each_modes_baseline():
    m4 = META[[0, 2, 3, 6]].clone()  # 2 tasks x 2 episodes, no compaction: whole attempts, comparable
    m4[:, 1] = torch.arange(4)
    m4[:, 2], m4[:, 3] = 0, 1
    for meta, mask, want in ((META, MASK, 0.0), (m4, MASK[[0, 2, 3, 6]], 1.0)):
        for name, mode in SUB_ADVANTAGE_MODES.items():
            v0 = torch.zeros_like(mask)  # a critic's values and (for the oracle arm) the boundary values
            out = sub_advantage_batch(
                name, meta, OUTCOME, mask, v0, 1.0, 2, 2, row_weight=True, boundary_values=v0[:, 0]
            )
            gid = out["group_ids"]
            got = comparable_fraction(name, gid, meta)
            if mode.baseline == "critic":  # a critic's baseline: no groups to compare within
                assert math.isnan(got), name
            elif mode.baseline == "episodes":  # whole episodes of one task: each task has 2 here
                assert got == 1.0, name
            else:  # split episodes put 2 rows of one episode in a group: not comparable
                assert got == want, name
    lonely = torch.tensor([[0, 0, 0, 1], [1, 1, 0, 1], [1, 2, 0, 1]])  # task 0 has one episode
    assert comparable_fraction("broadcast_grpo", torch.tensor([0, 1, 1]), lonely) == pytest.approx(2 / 3)


@contextlib.contextmanager
def _registered(name, fn, **kw):
    register_sub_advantage(name, **kw)(fn)
    try:
        yield SUB_ADVANTAGE_MODES[name]
    finally:
        del SUB_ADVANTAGE_MODES[name], SUB_ADVANTAGES[name]


def test_a_mode_may_return_the_advantages_themselves():
    """estimator=None: the mode computes the advantages (GAE across a boundary, say); the batch then carries
    them beside the plain outcome rewards. assign_rewards refuses it (its rewards alone would train the wrong
    thing); Config takes it (the trainer uses the batch's advantages), but not with a KL penalty in the reward,
    which would not reach them."""
    from rltutor.config import resolve

    def across(b):
        """every token gets its episode's outcome (a stand-in for an advantage computed across boundaries)"""
        return b.r_out[:, None].expand_as(b.mask).clone()

    with _registered("test_across", across, estimator=None, algo="ppo", baseline="critic") as mode:
        assert mode.requires == {} and SUB_ADVANTAGES["test_across"].startswith("every token gets")
        out = sub_advantage_batch("test_across", META, OUTCOME, MASK, lam=0.9)
        torch.testing.assert_close(out["advantages"], OUTCOME[META[:, 1]][:, None] * MASK)
        torch.testing.assert_close(_last(out["rewards"]), torch.tensor([0.0, 1, 0, 0, 0, 1, 1]))  # final rows only
        assert out["group_ids"].tolist() == META[:, 0].tolist()
        with pytest.raises(ValueError, match="sub_advantage_batch"):
            assign_rewards("test_across", META, OUTCOME, MASK)
        assert resolve("ppo", "toolshell", sets={"sub_advantage": "test_across"}).sub_advantage == "test_across"
        with pytest.raises(ValueError, match="'test_across' gives the advantages themselves.*kl_in_reward=False"):
            resolve("ppo", "toolshell", sets={"sub_advantage": "test_across", "kl_coef": 0.1, "kl_in_reward": True})
    assert "test_across" not in SUB_ADVANTAGE_MODES


def test_registering_a_mode_checks_what_it_says():
    def fn(b):
        """a doc"""

    with pytest.raises(ValueError, match="already registered"):
        register_sub_advantage("full_outcome_batch_group", estimator="grpo", algo="grpo")(fn)
    with pytest.raises(ValueError, match="unknown advantage estimator 'gea'"):
        register_sub_advantage("t1", estimator="gea", algo="ppo")(fn)
    with pytest.raises(ValueError, match="needs a docstring"):
        register_sub_advantage("t2", estimator="grpo", algo="grpo")(lambda b: None)
    with pytest.raises(ValueError, match="already the 'auto' one"):
        register_sub_advantage("t3", estimator="gae", algo="ppo", needs_critic=True, auto=True)(fn)
    assert not {"t1", "t2", "t3"} & set(SUB_ADVANTAGE_MODES)


def test_a_mode_that_reads_the_critic_is_refused_without_one():
    from rltutor.config import resolve

    def needy(b):
        """rewards for GRPO that read V"""
        return b.on_last(b.r_out - b.values[:, 0]), b.task.clone()

    with _registered("test_needy", needy, estimator="grpo", algo="ppo", needs_critic=True, any_estimator=True):
        with pytest.raises(ValueError, match="needs critic=True, got critic=False; run it with --algo ppo"):
            resolve("grpo", "toolshell", sets={"sub_advantage": "test_needy"})
        resolve("ppo", "toolshell", sets={"sub_advantage": "test_needy"})
