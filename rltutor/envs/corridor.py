"""A corridor with a horizon knob: T decisions, one delayed reward at the end.

Chapters: *Variance vs horizon* (04) and *Long horizons in practice* (05).

The task. At each step t = 0..T-1 a signpost shows a cue ``c_t`` in {-1, +1}, drawn at random when
the episode starts. Action 1 follows the cue "right", action 0 "left"; the correct action is
``a*_t = 1 if c_t > 0 else 0``. A correct action moves the agent one cell forward, a wrong one leaves
it in place. The episode lasts exactly T steps (no early termination) and pays a single reward on
its last step:

    r_T = x_T / T (+ optional Gaussian noise),  where x_T = number of correct actions.

So every decision matters equally and the signal about any one of them arrives only at the end,
mixed with T - 1 others. A random policy scores 1/2 on average; the optimal return is exactly
``optimal_return = 1.0`` for every T (read the cue, follow it). What changes with T is credit
assignment: a trajectory-level advantage (GRPO) spreads one number over T decisions, while a critic
that sees the progress ``x_t / T`` can tell after one step whether that step was right.

Observation (float32): ``[c_t, t / T]`` and, with ``observe_progress=True``, also ``x_t / T``. With
progress hidden, the value of a state is unknown until the end (the critic can only learn the
average), which is the regime where a critic helps least.

Implementation details

1. Vectorized in numpy over ``N`` copies; each copy draws its whole cue sequence (T cues) from its
   own generator at reset, so copies reset with the same seed face the same cues: a GRPO group of
   "many answers to the same prompt".
2. The end at step T is a *termination* (the task is over, nothing to bootstrap), not a truncation.
3. Reward noise (``reward_noise`` = std) is drawn from a separate per-copy generator at the last
   step only, so it never changes the cue sequences.
"""

from __future__ import annotations

import numpy as np

from rltutor.utils import check_int, check_number

__all__ = ["MAX_HORIZON", "Corridor"]

MAX_HORIZON = 100_000  # T cues per copy; a larger T only fills memory (the book goes to 256)


class Corridor:
    """``N`` copies of the corridor (see the module docstring); the ``VecEnv`` interface of classic.py."""

    n_actions = 2
    optimal_return = 1.0  # follow every cue: x_T = T, r_T = T / T, for every horizon T

    def __init__(
        self, num_envs: int, horizon: int = 50, observe_progress: bool = True, reward_noise: float = 0.0, seed: int = 0
    ):
        check_int(
            "horizon",
            horizon,
            1,
            MAX_HORIZON,
            "each copy stores its T cues and every episode is T steps long; the book's longest corridor is 256",
        )
        check_int("num_envs", num_envs, 1)
        check_number("reward_noise", reward_noise, 0)  # a standard deviation: finite and >= 0
        self.num_envs = int(num_envs)
        self.horizon = self.max_episode_steps = int(horizon)
        self.observe_progress = bool(observe_progress)
        self.reward_noise = float(reward_noise)
        self.obs_dim = 3 if self.observe_progress else 2
        self.t = np.zeros(self.num_envs, dtype=np.int64)  # step within the episode
        self.x = np.zeros(self.num_envs, dtype=np.int64)  # correct actions so far (position)
        self.cues = np.ones((self.num_envs, self.horizon))  # (N, T) signposts, +-1
        self.rngs = [np.random.default_rng(seed + i) for i in range(self.num_envs)]
        self.noise_rngs = [np.random.default_rng([seed + i, 1]) for i in range(self.num_envs)]

    def _reset_copy(self, i: int) -> None:
        self.cues[i] = self.rngs[i].choice([-1.0, 1.0], size=self.horizon)
        self.t[i] = 0
        self.x[i] = 0

    def _obs(self) -> np.ndarray:
        n = np.arange(self.num_envs)
        c = self.cues[n, np.minimum(self.t, self.horizon - 1)]  # (N,) current cue
        cols = [c, self.t / self.horizon]
        if self.observe_progress:
            cols.append(self.x / self.horizon)
        return np.stack(cols, axis=1).astype(np.float32)  # (N, obs_dim)

    def reset(self, seeds: list[int] | None = None) -> np.ndarray:
        if seeds is not None:
            if len(seeds) != self.num_envs:
                raise ValueError(f"reset needs one seed per copy: got {len(seeds)} seeds for {self.num_envs}")
            self.rngs = [np.random.default_rng(int(s)) for s in seeds]
            self.noise_rngs = [np.random.default_rng([int(s), 1]) for s in seeds]
        for i in range(self.num_envs):
            self._reset_copy(i)
        return self._obs()

    def step(self, actions: np.ndarray):
        n = np.arange(self.num_envs)
        correct = (actions == 1) == (self.cues[n, self.t] > 0)  # (N,) a_t == a*_t
        self.x = self.x + correct
        self.t = self.t + 1
        terminated = self.t >= self.horizon  # (N,) the task ends after exactly T steps
        truncated = np.zeros(self.num_envs, dtype=bool)  # no time limit beyond the task itself
        reward = np.where(terminated, self.x / self.horizon, 0.0)  # r_T = x_T / T, else 0
        if self.reward_noise > 0:
            for i in np.flatnonzero(terminated):
                reward[i] += self.reward_noise * self.noise_rngs[i].standard_normal()
        final_obs = self._obs()
        for i in np.flatnonzero(terminated):  # same-step autoreset
            self._reset_copy(i)
        obs = self._obs() if terminated.any() else final_obs
        return obs, reward.astype(np.float32), terminated, truncated, final_obs

    def state_dict(self) -> dict:
        return {
            "t": self.t.copy(),
            "x": self.x.copy(),
            "cues": self.cues.copy(),
            "rngs": [r.bit_generator.state for r in self.rngs],
            "noise_rngs": [r.bit_generator.state for r in self.noise_rngs],
        }

    def load_state_dict(self, state: dict) -> None:
        if state["cues"].shape != self.cues.shape:
            raise ValueError(
                f"corridor state has shape {state['cues'].shape}, expected {self.cues.shape}: "
                "the checkpoint was made with a different num_envs or horizon"
            )
        self.t, self.x, self.cues = state["t"].copy(), state["x"].copy(), state["cues"].copy()
        for r, s in zip(self.rngs, state["rngs"], strict=True):
            r.bit_generator.state = s
        for r, s in zip(self.noise_rngs, state["noise_rngs"], strict=True):
            r.bit_generator.state = s
