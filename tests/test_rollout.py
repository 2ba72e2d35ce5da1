"""Collectors: rows, masks, groups, and the truncation bootstrap (hand-made cases)."""

import numpy as np
import pytest
import torch

from rltutor.envs import make_env
from rltutor.models import MLPActorCritic
from rltutor.rollout.vector import EpisodeCollector, SegmentCollector, pieces_to_rows


class ScriptedEnv:
    """Copy 0 terminates after 2 steps; copy 1 is truncated (time limit) after 3 steps; observations
    count steps (obs[0] = t within the episode, obs[1] = 100 on a final observation)."""

    obs_dim, n_actions, max_episode_steps = 2, 2, 3

    def __init__(self):
        self.num_envs = 2
        self.t = np.zeros(2, dtype=np.int64)

    def _obs(self):
        return np.stack([self.t, np.zeros(2)], 1).astype(np.float32)

    def reset(self, seeds=None):
        self.t[:] = 0
        return self._obs()

    def step(self, actions):
        self.t += 1
        terminated = np.array([self.t[0] == 2, False])
        truncated = np.array([False, self.t[1] == 3])
        final = self._obs()
        final[terminated | truncated, 1] = 100.0
        self.t[terminated | truncated] = 0
        return self._obs(), np.ones(2, dtype=np.float32), terminated, truncated, final

    def state_dict(self):
        return {"t": self.t.copy()}

    def load_state_dict(self, s):
        self.t = s["t"].copy()


class ValuePolicy(torch.nn.Module):
    """Always action 0; V(s) = 10 + obs[1] so a bootstrap from a final observation is recognisable (110)."""

    has_critic = True

    def act(self, obs, generator=None):
        n = obs.shape[0]
        return torch.zeros(n, dtype=torch.long), torch.full((n,), -0.5), self.value(obs)

    def value(self, obs):
        return 10.0 + obs[:, 1]


def test_segments_bootstrap_truncation_and_segment_end_but_not_termination():
    gamma = 0.5
    col = SegmentCollector(ScriptedEnv(), num_steps=5, gamma=gamma)
    batch, info = col.collect(ValuePolicy())
    # env 0: episodes of 2, 2, then a piece of 1 cut by the segment end -> rows of 2, 2, 1
    # env 1: an episode of 3 (truncated), then a piece of 2 cut by the segment end -> rows of 3, 2
    lengths = batch["mask"].sum(1).tolist()
    assert lengths == [2, 2, 1, 3, 2]
    r = batch["rewards"]
    assert r[0, :2].tolist() == [1.0, 1.0]  # terminated: nothing added
    assert r[1, :2].tolist() == [1.0, 1.0]
    assert r[2, 0] == 1.0 + gamma * 10.0  # cut by the segment end: + gamma * V(s_next)
    assert r[3, :3].tolist() == [1.0, 1.0, 1.0 + gamma * 110.0]  # time limit: + gamma * V(final_obs)
    assert r[4, :2].tolist() == [1.0, 1.0 + gamma * 10.0]
    assert (r * (1 - batch["mask"]) == 0).all()
    assert info["env_steps"] == 10
    assert info["episode_returns"] == [2.0, 3.0, 2.0]  # in order of finishing, undiscounted, no bootstrap
    assert batch["group_ids"].tolist() == [0, 1, 2, 3, 4]
    assert batch["obs"][3, :, 0].tolist() == [0.0, 1.0, 2.0]


def test_episodes_bootstrap_only_truncated_episodes():
    col = EpisodeCollector(ScriptedEnv(), group_size=2, gamma=1.0)
    batch, info = col.collect(ValuePolicy())
    assert batch["mask"].tolist() == [[1, 1, 0], [1, 1, 1]]
    assert batch["rewards"].tolist() == [[1, 1, 0], [1, 1, 1 + 110.0]]
    assert info["episode_returns"] == [2.0, 3.0] and info["env_steps"] == 5
    assert batch["group_ids"].tolist() == [0, 0]


def test_episodes_without_critic_leave_rewards_alone():
    env = make_env("CartPole-v1", num_envs=4, seed=0, max_episode_steps=10)
    policy = MLPActorCritic(4, 2, critic=False)
    batch, info = EpisodeCollector(env, group_size=2).collect(policy, torch.Generator().manual_seed(0))
    assert "values" not in batch
    torch.testing.assert_close((batch["rewards"] * batch["mask"]).sum(1), torch.tensor(info["episode_returns"]))


def test_pieces_to_rows_layout():
    done = np.array([[0, 0], [1, 0], [0, 0], [0, 1]], dtype=bool)  # (S=4, N=2)
    x = np.arange(8).reshape(4, 2)  # x[t, n]
    rows, mask = pieces_to_rows(done, x=x)
    assert mask.tolist() == [[1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 1, 1]]
    assert rows["x"][0, :2].tolist() == [0, 2] and rows["x"][1, :2].tolist() == [4, 6]
    assert rows["x"][2].tolist() == [1, 3, 5, 7]


@pytest.mark.parametrize("same_seed", [True, False])
def test_groups_share_a_start_only_with_same_seed(same_seed):
    env = make_env("CartPole-v1", num_envs=6, seed=0)
    col = EpisodeCollector(env, group_size=3, same_seed=same_seed, seed=0)
    batch, info = col.collect(MLPActorCritic(4, 2, critic=False), torch.Generator().manual_seed(0))
    first = batch["obs"][:, 0]  # (6, 4) start states
    assert batch["group_ids"].tolist() == [0, 0, 0, 1, 1, 1]
    assert torch.equal(first[0], first[1]) == same_seed
    assert not torch.equal(first[0], first[3])
    assert batch["mask"].sum() == info["env_steps"]


def test_group_size_must_divide_the_copies():
    with pytest.raises(ValueError, match="multiple of group_size"):
        EpisodeCollector(make_env("CartPole-v1", num_envs=5), group_size=2)
