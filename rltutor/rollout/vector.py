"""Collecting experience into the (B, T) row batches that the trainer consumes.

Chapters: *PPO* (02), *GRPO* (03), *Long horizons in practice* (05).

A batch (the contract is in :mod:`rltutor.rollout`) is a dict of tensors with leading dimension B, one *row* per episode
or episode piece, padded to a common length T, with a ``mask`` of valid steps::

    obs      (B, T, obs_dim) float   observations s_t
    actions  (B, T) long             a_t
    logp     (B, T) float            log pi_old(a_t | s_t) at collection
    values   (B, T) float            V_old(s_t) at collection (only if the policy has a critic)
    rewards  (B, T) float            r_t, truncation bootstrap already added to the last valid step
    mask     (B, T) float            1 where the step exists
    group_ids (B,) long              rows that share an id form one GRPO group

Two ways to fill it, both collectors with ``collect(policy, generator) -> (batch, info)``:

* :class:`SegmentCollector` (PPO style): ``N`` environment copies each run a fixed number of steps
  ``S``; episodes continue from one collection to the next. Each episode *piece* inside the segment
  becomes one row, so B >= N and T <= S (the longest piece).
* :class:`EpisodeCollector` (GRPO style): ``N = G * num_groups`` copies are reset together and run
  until every episode is over; one row per episode, rows ``g*G .. g*G + G-1`` form group g. With
  ``same_seed=True`` all G members start from the same reset seed (a true group: the same prompt,
  many answers); with ``same_seed=False`` every member gets its own seed and the group is just a
  slice of the batch (the "batch grouping" studied by *Learning Without Critics? Revisiting GRPO
  in Classical Reinforcement Learning Environments*, arXiv 2511.03527).

Termination versus truncation (the one rule that matters here). GAE in :mod:`rltutor.advantages`
takes the value after a row's last valid step to be 0. That is right when the episode *terminated*
(the pole fell: no future). When it was *truncated* (a time limit, or the end of a segment) the
future exists, so the collector adds ``gamma * V(s_next)`` to the last valid reward, where
``s_next`` is the observation the episode would have continued from (``final_obs`` for a time
limit, the next observation for a segment end). Then the last TD residual is the usual
``delta = r + gamma * V(s_next) - V(s)``. Without a critic nothing can be bootstrapped, and the
reward is left as it is.

``info`` holds ``env_steps`` (int, steps that count toward the budget), ``episode_returns`` and
``episode_lengths`` (lists, episodes that finished during this collection, undiscounted, without
any bootstrap).
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["SegmentCollector", "EpisodeCollector", "pieces_to_rows"]


def pieces_to_rows(done: np.ndarray, **steps: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Cut per-env step arrays (S, N, ...) into rows at episode ends; return (B, T, ...) arrays and mask
    (T = the longest piece).

    ``done[t, n]`` is True if env n's episode ended at step t, so a new piece starts at t + 1.
    Rows are ordered env by env, then in time. No Python loop over steps: every step gets its row
    index (a running count of piece starts) and its position in the row.
    """
    S, N = done.shape
    starts = np.zeros((N, S), dtype=bool)  # (N, S) True where a piece begins
    starts[:, 0] = True
    starts[:, 1:] = done.T[:, :-1]
    row = np.cumsum(starts.ravel()).reshape(N, S) - 1  # (N, S) global row index of each step
    start_t = np.flatnonzero(starts.ravel()) % S  # (B,) time at which each row starts
    pos = np.arange(S)[None, :] - start_t[row]  # (N, S) position of each step inside its row
    B = int(row[-1, -1]) + 1
    T = int(pos.max()) + 1  # the longest piece; shorter ones are padded
    out = {}
    for name, x in steps.items():
        xt = np.swapaxes(x, 0, 1)  # (N, S, ...)
        rows = np.zeros((B, T) + x.shape[2:], dtype=x.dtype)
        rows[row, pos] = xt
        out[name] = rows
    mask = np.zeros((B, T), dtype=np.float32)
    mask[row, pos] = 1.0
    return out, mask


def _device(policy) -> torch.device:
    """Where the policy's parameters live (cpu for a policy without parameters)."""
    return next(policy.parameters(), torch.empty(0)).device


def _act(policy, obs: np.ndarray, generator):
    """policy.act on a numpy batch of observations, wherever the policy lives; numpy results back."""
    device = _device(policy)
    a, logp, v = policy.act(torch.from_numpy(obs).to(device), generator)
    return a.cpu().numpy(), logp.cpu().numpy(), None if v is None else v.cpu().numpy()


def _value(policy, obs: np.ndarray) -> np.ndarray:
    """V(s) for a numpy batch of observations, without gradient."""
    device = _device(policy)
    with torch.no_grad():
        return policy.value(torch.from_numpy(obs).to(device)).cpu().numpy()


def _to_torch(arrays: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in arrays.items()}


class SegmentCollector:
    """PPO-style collection: ``num_steps`` steps from each of the env's copies (see module docstring)."""

    def __init__(self, env, num_steps: int, gamma: float = 0.99):
        if not isinstance(num_steps, int) or num_steps < 1:
            raise ValueError(f"num_steps must be a positive integer, got {num_steps!r}")
        self.env = env
        self.num_steps = num_steps
        self.gamma = float(gamma)
        self.obs = env.reset()  # (N, obs_dim), the observation each copy continues from
        self.ep_return = np.zeros(env.num_envs)  # running undiscounted return of the current episode
        self.ep_len = np.zeros(env.num_envs, dtype=np.int64)

    def collect(self, policy, generator: torch.Generator | None = None):
        env, S, N = self.env, self.num_steps, self.env.num_envs
        critic = policy.has_critic
        obs_buf = np.zeros((S, N, env.obs_dim), dtype=np.float32)
        act_buf = np.zeros((S, N), dtype=np.int64)
        logp_buf = np.zeros((S, N), dtype=np.float32)
        val_buf = np.zeros((S, N), dtype=np.float32)
        rew_buf = np.zeros((S, N), dtype=np.float32)
        done_buf = np.zeros((S, N), dtype=bool)
        returns, lengths = [], []
        obs = self.obs
        for t in range(S):
            obs_buf[t] = obs
            act_buf[t], logp_buf[t], v = _act(policy, obs, generator)
            if critic:
                val_buf[t] = v
            obs, r, terminated, truncated, final_obs = env.step(act_buf[t])
            rew_buf[t] = r
            done = terminated | truncated
            done_buf[t] = done
            self.ep_return += r
            self.ep_len += 1
            if done.any():
                for i in np.flatnonzero(done):
                    returns.append(float(self.ep_return[i]))
                    lengths.append(int(self.ep_len[i]))
                self.ep_return[done], self.ep_len[done] = 0.0, 0
                if critic and truncated.any():  # time limit: r_t += gamma * V(final_obs)
                    rew_buf[t, truncated] += self.gamma * _value(policy, final_obs[truncated])
        self.obs = obs
        if critic:  # the segment cut every unfinished episode: r_{S-1} += gamma * V(s_S)
            open_ = ~done_buf[-1]
            rew_buf[-1, open_] += self.gamma * _value(policy, obs)[open_]

        steps = {"obs": obs_buf, "actions": act_buf, "logp": logp_buf, "rewards": rew_buf}
        if critic:
            steps["values"] = val_buf
        rows, mask = pieces_to_rows(done_buf, **steps)
        batch = _to_torch(rows)
        batch["mask"] = torch.from_numpy(mask)
        batch["group_ids"] = torch.arange(mask.shape[0])  # every piece is its own group
        info = {"env_steps": S * N, "episode_returns": returns, "episode_lengths": lengths}
        return batch, info

    def state_dict(self) -> dict:
        return {
            "env": self.env.state_dict(),
            "obs": self.obs.copy(),
            "ep_return": self.ep_return.copy(),
            "ep_len": self.ep_len.copy(),
        }

    def load_state_dict(self, state: dict) -> None:
        self.env.load_state_dict(state["env"])
        self.obs, self.ep_return, self.ep_len = state["obs"].copy(), state["ep_return"].copy(), state["ep_len"].copy()

    def evaluate(self, policy) -> dict:
        """No held-out evaluation for vector environments: the training returns are the measure."""
        return {}


class EpisodeCollector:
    """GRPO-style collection: complete episodes in groups of ``group_size`` (see module docstring).

    Args:
        env: a vectorized environment with ``num_envs = group_size * num_groups`` copies.
        group_size: G, episodes per group.
        same_seed: all members of a group reset from one seed (True) or each from its own (False).
        seed: seeds the generator that draws the reset seeds.
        gamma: discount used for the truncation bootstrap.
        max_steps: cut episodes after this many steps (truncation); default ``env.max_episode_steps``.
    """

    def __init__(
        self,
        env,
        group_size: int,
        same_seed: bool = True,
        seed: int = 0,
        gamma: float = 1.0,
        max_steps: int | None = None,
    ):
        if not isinstance(group_size, int) or group_size < 1:
            raise ValueError(f"group_size must be a positive integer, got {group_size!r}")
        if env.num_envs % group_size:
            raise ValueError(
                f"the environment has {env.num_envs} copies, not a multiple of group_size="
                f"{group_size}; build it with num_envs = group_size * num_groups"
            )
        self.env = env
        self.group_size = group_size
        self.num_groups = env.num_envs // group_size
        self.same_seed = bool(same_seed)
        self.gamma = float(gamma)
        self.max_steps = int(max_steps or env.max_episode_steps)
        self.rng = np.random.default_rng(seed)  # draws reset seeds

    def collect(self, policy, generator: torch.Generator | None = None):
        env, N, G = self.env, self.env.num_envs, self.group_size
        critic = policy.has_critic
        n_seeds = self.num_groups if self.same_seed else N
        seeds = self.rng.integers(0, 2**31 - 1, size=n_seeds)
        seeds = np.repeat(seeds, G) if self.same_seed else seeds  # (N,) member i of group g: seeds[g]
        obs = env.reset(seeds.tolist())
        active = np.ones(N, dtype=bool)  # episode still running
        ep_return = np.zeros(N)
        ep_len = np.zeros(N, dtype=np.int64)
        bufs: dict[str, list] = {"obs": [], "actions": [], "logp": [], "values": [], "rewards": [], "mask": []}
        t = 0
        while active.any() and t < self.max_steps:
            a, logp, v = _act(policy, obs, generator)
            next_obs, r, terminated, truncated, final_obs = env.step(a)
            r = np.where(active, r, 0.0).astype(np.float32)  # finished episodes earn nothing more
            ep_return += r  # undiscounted, before any bootstrap
            ep_len += active
            if t == self.max_steps - 1:  # our own step limit counts as a truncation
                truncated = truncated | (active & ~terminated)
            if critic and (truncated & active).any():  # time limit: r_t += gamma * V(final_obs)
                cut = truncated & active
                r[cut] += self.gamma * _value(policy, final_obs[cut])
            bufs["obs"].append(obs)
            bufs["actions"].append(a)
            bufs["logp"].append(logp)
            bufs["values"].append(v if critic else np.zeros(N, dtype=np.float32))
            bufs["rewards"].append(r)
            bufs["mask"].append(active.astype(np.float32))
            active = active & ~(terminated | truncated)
            obs = next_obs
            t += 1
        batch = {
            k: torch.from_numpy(np.ascontiguousarray(np.swapaxes(np.stack(v), 0, 1)))
            for k, v in bufs.items()
            if critic or k != "values"
        }  # (N, T, ...) one row per episode
        batch["group_ids"] = torch.arange(N) // G  # (B,) rows g*G .. g*G+G-1 are group g
        info = {
            "env_steps": int(ep_len.sum()),
            "episode_lengths": ep_len.tolist(),
            "episode_returns": ep_return.tolist(),
        }
        return batch, info

    def state_dict(self) -> dict:
        return {"rng": self.rng.bit_generator.state, "env": self.env.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.env.load_state_dict(state["env"])

    def evaluate(self, policy) -> dict:
        """No held-out evaluation for vector environments: the training returns are the measure."""
        return {}
