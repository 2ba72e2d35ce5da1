"""Compaction and the sub-trajectory advantage modes (rltutor.rollout.compaction), on hand-made examples."""

import pytest
import torch

from rltutor.advantages import gae, group_advantages
from rltutor.envs.toolshell import CMD, EOS, OBS, TASK, decode, encode
from rltutor.rollout.compaction import SUB_ADVANTAGES, assign_rewards, compact, summarize

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
    r, gid = assign_rewards("ppo_no_bootstrap", META, OUTCOME, MASK, values, gamma=0.5)
    torch.testing.assert_close(_last(r), torch.tensor([0.0, 1, 0, 0, 0, 1, 1]))
    assert gid.tolist() == [0, 0, 0, 1, 1, 1, 1]
    r, _ = assign_rewards("ppo_bootstrap", META, OUTCOME, MASK, values, gamma=0.5)
    # row 0 -> V of row 1's first generated position (2): 0.6; row 3 -> row 4 at 1: 1.7; row 4 -> row 5 at 2: 2.2
    torch.testing.assert_close(_last(r), torch.tensor([0.5 * 0.6, 1, 0, 0.5 * 1.7, 0.5 * 2.2, 1, 1]))
    with pytest.raises(ValueError, match="critic"):
        assign_rewards("ppo_bootstrap", META, OUTCOME, MASK, None)


def test_slime_grpo_falls_back_to_one_group_when_rows_are_not_prompts_times_g():
    r, gid = assign_rewards("slime_grpo", META, OUTCOME, MASK, num_tasks=2, group_size=2)
    torch.testing.assert_close(_last(r), torch.tensor([1.0, 1, 0, 1, 1, 1, 1]))
    assert gid.tolist() == [0] * 7  # 7 rows != 2 x 2: the whole batch is one group
    m4 = META[[0, 2, 3, 6]].clone()
    m4[:, 1] = torch.arange(4)
    m4[:, 2], m4[:, 3] = 0, 1
    _, gid = assign_rewards("slime_grpo", m4, OUTCOME, MASK[[0, 2, 3, 6]], num_tasks=2, group_size=2)
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
    assert set(SUB_ADVANTAGES) == {
        "ppo_bootstrap",
        "ppo_no_bootstrap",
        "slime_grpo",
        "broadcast_grpo",
        "split_reward",
        "index_groups",
    }


def test_config_names_match_the_registry():
    from rltutor.config import COMPACTIONS as CFG_COMPACTIONS
    from rltutor.config import SUB_ADVANTAGE_NAMES
    from rltutor.rollout.compaction import COMPACTIONS

    assert set(SUB_ADVANTAGE_NAMES) == set(SUB_ADVANTAGES) | {"auto"}
    assert CFG_COMPACTIONS == COMPACTIONS
