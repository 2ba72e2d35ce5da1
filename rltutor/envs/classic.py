"""Classic control, vectorized: a numpy CartPole and an adapter for any gymnasium environment.

Chapter: *PPO* (02) and *GRPO* (03) train on these.

Every environment in :mod:`rltutor.envs` speaks one small vectorized interface (``VecEnv``), so the
collectors in :mod:`rltutor.rollout` never care where an environment comes from:

* ``num_envs``, ``obs_dim``, ``n_actions``, ``max_episode_steps`` (attributes);
* ``reset(seeds)`` -> ``obs`` of shape ``(N, obs_dim)`` (float32); ``seeds`` is a list of ``N``
  integers, one per copy. Two copies reset with the same seed start in the same state: that is how
  a GRPO group asks "many answers to the same prompt";
* ``step(actions)`` with ``actions`` of shape ``(N,)`` -> ``(obs, reward, terminated, truncated,
  final_obs)``, all with leading dimension ``N``. A copy whose episode ended is reset *in the same
  step* (same-step autoreset): ``obs`` is then the first observation of its next episode and
  ``final_obs`` holds the last observation of the episode that ended, which the collector needs to
  bootstrap a truncated episode with ``V(final_obs)``;
* ``state_dict()`` / ``load_state_dict(state)``: everything needed to continue exactly (states,
  step counters, random generators), so a resumed training run equals the uninterrupted one.

``terminated`` means the task itself ended (the pole fell): there is no future to value.
``truncated`` means a time limit cut the episode: the future exists, and the collector adds
``gamma * V(final_obs)`` to the last reward. Mixing the two is a classic bug (CleanRL's ``ppo.py``
treats both as terminal; SB3 bootstraps truncations as we do).

Implementation details

1. :class:`CartPole` re-implements gymnasium's ``CartPole-v1`` (same constants, Euler integration,
   reset uniform in [-0.05, 0.05]^4, termination at |x| > 2.4 or |theta| > 12 degrees, reward 1 per
   step, truncation at 500 steps) on arrays of shape ``(N,)``. The test suite checks it step by
   step against ``gymnasium.make("CartPole-v1")``. We do not use gymnasium's own
   ``CartPoleVectorEnv``: it resets on the *next* step (``AutoresetMode.NEXT_STEP``), which wastes
   one step per episode and complicates collection, and it cannot reset copies from separate seeds.
2. Each copy owns a ``numpy.random.Generator``; it is only used at reset, so the dynamics are
   deterministic given the actions. A copy reset with seed ``s`` gets a fresh generator from ``s``.
3. :class:`GymVecEnv` wraps any other gymnasium id (``Acrobot-v1``...) in a ``SyncVectorEnv`` with
   ``AutoresetMode.SAME_STEP``. Its state is plain data, never a pickle (a checkpoint must not be able
   to run code): for each copy, the numeric attributes of the environment and of each wrapper around
   it (classic control's physics ``state``, ``TimeLimit``'s step count...) and its random generator's
   state. An environment whose state holds other objects (a Box2D world) cannot be saved and says so.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["CartPole", "GymVecEnv"]


class CartPole:
    """``N`` copies of CartPole-v1 stepped together in numpy (see the module docstring)."""

    # Physical constants of gymnasium's CartPoleEnv (Barto, Sutton & Anderson, 1983).
    gravity = 9.8
    masscart = 1.0
    masspole = 0.1
    total_mass = masspole + masscart
    length = 0.5  # half the pole's length
    polemass_length = masspole * length
    force_mag = 10.0
    tau = 0.02  # seconds between state updates
    theta_threshold = 12 * 2 * np.pi / 360  # 12 degrees, in radians
    x_threshold = 2.4

    obs_dim = 4
    n_actions = 2

    def __init__(self, num_envs: int, max_episode_steps: int = 500, seed: int = 0):
        if not isinstance(num_envs, int | np.integer) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        if not isinstance(max_episode_steps, int | np.integer) or max_episode_steps < 1:
            raise ValueError(f"max_episode_steps must be a positive integer, got {max_episode_steps!r}")
        self.num_envs = int(num_envs)
        self.max_episode_steps = int(max_episode_steps)
        self.state = np.zeros((4, self.num_envs))  # rows x, x_dot, theta, theta_dot; float64 as gymnasium
        self.steps = np.zeros(self.num_envs, dtype=np.int64)  # steps taken in the current episode
        self.rngs = [np.random.default_rng(seed + i) for i in range(self.num_envs)]

    def _reset_copy(self, i: int) -> None:
        self.state[:, i] = self.rngs[i].uniform(low=-0.05, high=0.05, size=(4,))
        self.steps[i] = 0

    def reset(self, seeds: list[int] | None = None) -> np.ndarray:
        if seeds is not None:
            if len(seeds) != self.num_envs:
                raise ValueError(f"reset needs one seed per copy: got {len(seeds)} seeds for {self.num_envs}")
            self.rngs = [np.random.default_rng(int(s)) for s in seeds]
        for i in range(self.num_envs):
            self._reset_copy(i)
        return self.state.T.astype(np.float32)  # (N, 4)

    def step(self, actions: np.ndarray):
        x, x_dot, theta, theta_dot = self.state  # each (N,)
        force = np.where(actions == 1, self.force_mag, -self.force_mag)
        costheta, sintheta = np.cos(theta), np.sin(theta)
        temp = (force + self.polemass_length * theta_dot**2 * sintheta) / self.total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * costheta**2 / self.total_mass)
        )
        xacc = temp - self.polemass_length * thetaacc * costheta / self.total_mass
        # Euler integration, in gymnasium's order.
        x = x + self.tau * x_dot
        x_dot = x_dot + self.tau * xacc
        theta = theta + self.tau * theta_dot
        theta_dot = theta_dot + self.tau * thetaacc
        self.state = np.stack((x, x_dot, theta, theta_dot))  # (4, N)
        self.steps += 1

        terminated = (np.abs(x) > self.x_threshold) | (np.abs(theta) > self.theta_threshold)  # (N,)
        truncated = (self.steps >= self.max_episode_steps) & ~terminated  # (N,)
        reward = np.ones(self.num_envs, dtype=np.float32)
        final_obs = self.state.T.astype(np.float32)  # (N, 4) last observation of each episode
        for i in np.flatnonzero(terminated | truncated):  # same-step autoreset
            self._reset_copy(i)
        obs = self.state.T.astype(np.float32) if (terminated | truncated).any() else final_obs
        return obs, reward, terminated, truncated, final_obs

    def state_dict(self) -> dict:
        return {
            "state": self.state.copy(),
            "steps": self.steps.copy(),
            "rngs": [r.bit_generator.state for r in self.rngs],
        }

    def load_state_dict(self, state: dict) -> None:
        if state["state"].shape != self.state.shape:
            raise ValueError(
                f"environment state has shape {state['state'].shape}, expected {self.state.shape}: "
                "the checkpoint was made with a different num_envs"
            )
        self.state = state["state"].copy()
        self.steps = state["steps"].copy()
        for r, s in zip(self.rngs, state["rngs"], strict=True):
            r.bit_generator.state = s


class GymVecEnv:
    """Any discrete-action gymnasium environment, ``N`` copies, same-step autoreset."""

    def __init__(self, env_id: str, num_envs: int, seed: int = 0, **kwargs):
        import gymnasium as gym
        from gymnasium.vector import AutoresetMode

        self.env_id = env_id
        self.num_envs = int(num_envs)
        self.envs = gym.make_vec(
            env_id,
            num_envs=self.num_envs,
            vectorization_mode="sync",
            vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP},
            **kwargs,
        )
        space = self.envs.single_action_space
        if not isinstance(space, gym.spaces.Discrete):
            raise ValueError(f"{env_id} has action space {space}; rltutor's MLP policy needs a Discrete one")
        self.n_actions = int(space.n)
        self.obs_dim = int(np.prod(self.envs.single_observation_space.shape))
        self.max_episode_steps = gym.spec(env_id).max_episode_steps or 10**9
        self.seed = seed
        self.reset([seed + i for i in range(self.num_envs)])

    def reset(self, seeds: list[int] | None = None) -> np.ndarray:
        if seeds is None:
            obs, _ = self.envs.reset()
        else:
            if len(seeds) != self.num_envs:
                raise ValueError(f"reset needs one seed per copy: got {len(seeds)} seeds for {self.num_envs}")
            obs, _ = self.envs.reset(seed=[int(s) for s in seeds])
        return obs.reshape(self.num_envs, -1).astype(np.float32)

    def step(self, actions: np.ndarray):
        obs, reward, terminated, truncated, info = self.envs.step(actions)
        obs = obs.reshape(self.num_envs, -1).astype(np.float32)
        final_obs = obs.copy()
        if "_final_obs" in info:  # SAME_STEP autoreset: the ended episodes' last observations
            for i in np.flatnonzero(info["_final_obs"]):
                final_obs[i] = np.asarray(info["final_obs"][i], dtype=np.float32).reshape(-1)
        truncated = truncated & ~terminated
        return obs, reward.astype(np.float32), terminated, truncated, final_obs

    def state_dict(self) -> dict:
        """Per copy, one dict per layer (the wrappers, then the environment itself): its numeric
        attributes, and for the environment its generator's state. Plain data only, no pickle."""
        return {"env_id": self.env_id, "copies": [_copy_state(self.env_id, e) for e in self.envs.envs]}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`; everything is checked first, so a mismatch changes nothing."""
        copies = state.get("copies") if isinstance(state, dict) else None
        if not isinstance(copies, list) or state.get("env_id") != self.env_id:
            got = sorted(state) if isinstance(state, dict) else type(state).__name__
            raise ValueError(
                f"not the state of a {self.env_id} GymVecEnv (expected env_id and copies, got {got}); "
                "the checkpoint was made for another environment or by an older rltutor"
            )
        if len(copies) != self.num_envs:
            raise ValueError(f"environment state holds {len(copies)} copies, expected {self.num_envs}")
        plans = [_plan_copy(self.env_id, e, c) for e, c in zip(self.envs.envs, copies, strict=True)]
        for plan in plans:  # every copy checked: now set
            for layer, name, value in plan:
                if name == _RNG:
                    layer.np_random.bit_generator.state = value
                else:
                    setattr(layer, name, value)


_RNG = "np_random (bit generator state)"  # the key under which a layer's generator state is stored


def _layers(env) -> list:
    """The wrappers around a gymnasium environment, outermost first, then the environment itself."""
    out = [env]
    while hasattr(out[-1], "env") and out[-1] is not out[-1].unwrapped:
        out.append(out[-1].env)
    return out


def _plain(v) -> bool:
    """A value a checkpoint can store: a number, bool, str, None, a numeric array, or a tuple of these."""
    if v is None or isinstance(v, bool | str | numbers.Number | np.bool_):
        return True
    if isinstance(v, np.ndarray):
        return v.dtype.kind in "biuf"
    return isinstance(v, tuple) and all(_plain(x) for x in v)


def _static(name: str, v) -> bool:
    """Attributes that are fixed at construction (spaces, spec, the wrapped env): not state."""
    import gymnasium as gym

    return (
        name in ("env", "_saved_kwargs", "spec", "_cached_spec", "metadata", "_metadata", "_np_random")
        or isinstance(v, gym.Space | gym.Env | gym.envs.registration.EnvSpec)
        or name in ("screen", "clock", "viewer")  # rendering handles
        or name == "_previous_data"  # PassiveEnvChecker's last output, kept only to warn about reused arrays
    )


def _copy_state(env_id: str, env) -> list[dict]:
    layers = []
    for layer in _layers(env):
        attrs = {}
        for name, v in vars(layer).items():
            if _plain(v):
                attrs[name] = v.copy() if isinstance(v, np.ndarray) else v
            elif not _static(name, v):
                raise ValueError(
                    f"cannot save the state of {env_id}: {type(layer).__name__}.{name} is a {type(v).__name__}, "
                    "not numbers or arrays; only environments whose state is plain data (classic control) "
                    "can be checkpointed"
                )
        rng = getattr(layer, "_np_random", None)
        if layer is env.unwrapped and rng is not None:
            attrs[_RNG] = rng.bit_generator.state
        layers.append({"class": type(layer).__name__, "attrs": attrs})
    return layers


def _plan_copy(env_id: str, env, saved) -> list[tuple]:
    """The (layer, name, value) assignments that restore one copy; ValueError if ``saved`` does not fit."""
    layers = _layers(env)
    if not isinstance(saved, list) or len(saved) != len(layers):
        raise ValueError(f"the saved state of a {env_id} copy does not match its {len(layers)} wrapper layers")
    plan = []
    for layer, s in zip(layers, saved, strict=True):
        if not isinstance(s, dict) or s.get("class") != type(layer).__name__ or not isinstance(s.get("attrs"), dict):
            raise ValueError(
                f"the saved state of a {env_id} copy has layer {s.get('class') if isinstance(s, dict) else s!r} "
                f"where this one has {type(layer).__name__}"
            )
        for name, v in s["attrs"].items():
            if name == _RNG:
                kind = type(layer.np_random.bit_generator).__name__ if layer is env.unwrapped else None
                if not isinstance(v, dict) or v.get("bit_generator") != kind:
                    raise ValueError(f"the saved state of a {env_id} copy has a generator state that does not fit")
            elif name not in vars(layer) or not _plain(v):
                raise ValueError(
                    f"the saved state of a {env_id} copy sets {type(layer).__name__}.{name}, which "
                    "this environment does not have as plain data"
                )
            plan.append((layer, name, v.copy() if isinstance(v, np.ndarray) else v))
    return plan
