"""How noisy is a policy-gradient estimate? Variance, SNR and cosine to the true gradient vs horizon.

Chapter: *Variance vs horizon* (``notebooks/04_variance_horizon.ipynb``).

The model: an exactly solvable sequence task
---------------------------------------------
A trajectory is ``T`` decisions. At step ``t`` (t = 0..T-1) the policy picks one of ``K`` actions
from its own softmax ``pi_t = softmax(theta_t)``; ``theta`` is a table of logits of shape ``(T, K)``
(a *time-indexed tabular policy*: one row of logits per step, as a language model has one softmax
per position). Action 0 is the *good* action (follow the cue in the corridor, the target token in the
token task); the policy we measure gives it probability ``p`` at every step and spreads ``1 - p``
evenly over the other ``K - 1``. The task never branches (a wrong step does not change which action
is good later), which is what makes every quantity below exact and every sample vectorizable.

Three reward rules (``ChainTask.reward``), all with optional Gaussian reward noise of std ``noise``:

* ``"terminal"`` (the *corridor*, and the *token task* with partial credit): one reward at the last
  step, r_{T-1} = (1/T) * #good + noise, the fraction of good steps (cues followed, tokens right).
* ``"dense"``    (a corridor that pays as you go): r_t = 1[a_t good] + noise at every step.
* ``"exact"``    (the *token task, exact match*): r_{T-1} = 1[every token good] + noise. By default
  ``p = 0.5 ** (1/T)``, so the whole answer is right half of the time at every T.

The objective is the undiscounted expected return ``J(theta) = E[sum_t r_t]`` (what the task scores;
``gamma`` is a knob of the estimators, not of the task). Its gradient is known in closed form
(:func:`true_gradient`), e.g. ``dJ/dtheta_t = p * (e_good - pi_t)`` for the dense corridor.

Estimators (names follow :mod:`rltutor.advantages`)
---------------------------------------------------
Every estimator is ``g = (1/B) sum_i sum_t grad log pi(a_{i,t}) * A_{i,t}`` over a batch of ``B``
trajectories (``B = n_groups * G``), with the score ``grad_{theta_t} log pi(a_t) = e_{a_t} - pi_t``
(a ``K``-vector, zero for every other step's logits). They differ only in the advantage ``A``:

* ``"reinforce"``  A_{i,t} = discounted return-to-go (no baseline).
* ``"grpo"``       A_{i,t} = (R_i - mean_group R) / (std_group R + eps) on every step, R_i = sum of
  the row's rewards (GRPO, DeepSeekMath 2024). ``"dr_grpo"`` drops the std division; ``"rloo"``
  uses the mean of the other G - 1 rows.
* ``"gae"``        GAE(gamma, lambda) with the exact value function V(s_t) (:func:`true_values`).
* ``"gae_critic"`` GAE(gamma, lambda) with a critic of limited accuracy:
  V_hat = V + critic_noise * u * xi, xi ~ N(0, 1) fresh for every visited state, where u is the reward
  of one good step (1 for the corridor, 1/T for the partial-credit token task; :func:`reward_unit`).
  Such an error is independent of the action taken, so it adds variance but no bias; a systematic
  error would also add bias.

Metrics, over ``M = n_batches`` independent batches g_1..g_M (each a vector of T*K numbers):

* ``variance`` = E|g - E g|^2 (trace of the covariance; estimated with the sample mean).
* ``snr``      = |E g|^2 / E|g - E g|^2; |E g|^2 is estimated without bias as |mean g|^2 - variance/M.
* ``cosine``   = E[cos(g, grad J)]: how well ONE batch's gradient points the right way (0 if g = 0).
* ``cos_mean`` = cos(mean g, grad J): the direction of the estimator's mean, i.e. its bias
  (below 1 when gamma < 1 or lambda < 1 tilt the credit, see the chapter).

Everything is vectorized over ``(M, B, T)``; the advantages are computed by
:func:`rltutor.advantages.gae`, :func:`~rltutor.advantages.group_advantages` and
:func:`~rltutor.advantages.discounted_returns`, the very functions the trainer uses.

Relation to the environments: with ``reward="terminal"`` and ``K = 2`` this is exactly the reward of
:class:`rltutor.envs.corridor.Corridor` (a cue at each step says which action is right; the agent gets
x_T / T, the fraction of cues it followed, at the end; no early termination), and the exact value
function is the one a critic that observes the progress x_t / T can learn. The differences: here the
policy is a table of logits per step instead of an MLP over (cue, t / T, x_t / T), and "good" is
"followed the cue" (relabelling the actions changes no variance). The token presets mirror the
``SequenceTask`` of :mod:`rltutor.envs.tokens` (one of 10 digits per position).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import pandas as pd
import torch

from rltutor.advantages import ESTIMATORS, GROUP_METHODS, discounted_returns, gae, group_advantages

__all__ = [
    "ChainTask",
    "EstimatorSpec",
    "Rollouts",
    "REWARDS",
    "CHAIN_TASKS",
    "ESTIMATOR_NAMES",
    "make_chain",
    "policy_probs",
    "sample_rollouts",
    "task_rewards",
    "true_values",
    "true_gradient",
    "estimator_advantages",
    "batch_gradients",
    "discount_matrix",
    "reverse_discounted_sum",
    "reward_unit",
    "summarize",
    "snr_jackknife",
    "exact_mean_gradient",
    "group_mean_scale",
    "mean_signal",
    "GradientMoments",
    "snr_rel_se",
    "measure_to_precision",
    "measure_specs",
    "measure",
    "horizon_curve",
    "check_params",
    "snr_theory",
    "measure_cached",
    "clear_caches",
    "LINEAR_IN_REWARDS",
    "relevant_spec",
]

REWARDS = ("dense", "terminal", "exact")
GROUP_NAMES = GROUP_METHODS  # the registry's group-relative estimators
LAB_ESTIMATORS = ("gae_critic",)  # this lab's own: GAE with a noisy critic (V + noise), not a registry entry
ESTIMATOR_NAMES = ("reinforce", *GROUP_NAMES, "gae", *LAB_ESTIMATORS)
"""The estimators this lab measures: registry names (rltutor.advantages.list_estimators()) plus its own."""

#: Named presets, matching the environments of :mod:`rltutor.envs`:
#: ``corridor`` is :class:`rltutor.envs.corridor.Corridor` (2 actions: follow the cue or not; one reward
#: x_T / T at the end); ``corridor_dense`` pays each step's progress at once instead; ``tokens`` and
#: ``tokens_exact`` are the ``SequenceTask`` of :mod:`rltutor.envs.tokens` (10 digits per position,
#: reward "fraction" or "exact"). p = 0.6: a policy part-way through training (at exactly p = 1/2 with
#: two actions the one-step TD estimate is constant, a coincidence that shows as an infinite SNR).
CHAIN_TASKS = {
    "corridor": dict(reward="terminal", K=2, p=0.6),
    "corridor_dense": dict(reward="dense", K=2, p=0.6),
    "tokens": dict(reward="terminal", K=10, p=0.5),
    "tokens_exact": dict(reward="exact", K=10, p=None),
}


# ----------------------------------------------------------------------------------------------
# The task and its exact quantities
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChainTask:
    """An exactly solvable T-step task (see the module docstring)."""

    T: int
    """horizon: number of decisions per trajectory (>= 1)"""
    reward: str = "dense"
    """"terminal" (corridor, tokens: fraction of good steps at the end), "dense" (per step) or "exact" (all good)"""
    K: int = 2
    """actions per step (vocabulary size); action 0 is the good one"""
    p: float | None = 0.5
    """probability of the good action at each step; None = 0.5 ** (1/T) (exact-match success 1/2)"""
    noise: float = 0.0
    """std of the Gaussian noise added to each reward"""

    def __post_init__(self):
        if not isinstance(self.T, int | np.integer) or self.T < 1:
            raise ValueError(f"horizon T must be an integer >= 1, got {self.T!r}; pass e.g. T=64")
        if self.reward not in REWARDS:
            raise ValueError(f"unknown reward rule {self.reward!r}; valid: {', '.join(REWARDS)}")
        if not isinstance(self.K, int | np.integer) or self.K < 2:
            raise ValueError(f"K (actions per step) must be an integer >= 2, got {self.K!r}")
        if self.p is not None and not (0.0 < float(self.p) < 1.0):
            raise ValueError(f"p (probability of the good action) must be in (0, 1), got {self.p!r}")
        if not (float(self.noise) >= 0.0 and math.isfinite(float(self.noise))):
            raise ValueError(f"reward noise must be a finite number >= 0, got {self.noise!r}; pass e.g. noise=0.5")

    @property
    def p_good(self) -> float:
        """The probability of the good action actually used (resolves ``p=None``)."""
        return float(self.p) if self.p is not None else 0.5 ** (1.0 / self.T)


def make_chain(task: str | ChainTask = "corridor", *, T: int, noise: float = 0.0, **overrides) -> ChainTask:
    """A :class:`ChainTask` from a preset name in :data:`CHAIN_TASKS` (or pass one through, updated)."""
    if isinstance(task, ChainTask):
        return replace(task, T=T, noise=noise, **overrides)
    if task not in CHAIN_TASKS:
        raise ValueError(f"unknown task {task!r}; valid: {', '.join(CHAIN_TASKS)}")
    return ChainTask(T=T, noise=noise, **{**CHAIN_TASKS[task], **overrides})


def policy_probs(task: ChainTask, dtype=torch.float64) -> torch.Tensor:
    """pi, shape (T, K): p on action 0, (1 - p) / (K - 1) on each other action, at every step."""
    p = task.p_good
    row = torch.full((task.K,), (1.0 - p) / (task.K - 1), dtype=dtype)
    row[0] = p
    return row.expand(task.T, task.K).clone()


def true_gradient(task: ChainTask, dtype=torch.float64) -> torch.Tensor:
    """grad_theta J for J = E[sum_t r_t] (undiscounted), shape (T, K), in closed form.

    With dp_t/dtheta_t = p (e_0 - pi_t) (softmax derivative, e_0 the good action's one-hot):

    * dense:    J = sum_t p_t             -> dJ/dtheta_t = p (e_0 - pi_t)
    * terminal: J = (1/T) sum_t p_t       -> dJ/dtheta_t = (p / T) (e_0 - pi_t)
    * exact:    J = prod_t p_t            -> dJ/dtheta_t = J (e_0 - pi_t)
    """
    pi = policy_probs(task, dtype)
    e0 = torch.zeros(task.K, dtype=dtype)
    e0[0] = 1.0
    p = task.p_good
    scale = {"dense": p, "terminal": p / task.T, "exact": p**task.T}[task.reward]
    return scale * (e0 - pi)


@dataclass
class Rollouts:
    """Sampled trajectories for M batches of B trajectories of T steps (shapes noted per field)."""

    task: ChainTask
    good: torch.Tensor
    """(M, B, T) bool: was the action good"""
    actions: torch.Tensor | None
    """(M, B, T) long: the actions (0 = good); None when K = 2 (then the action is 1 - good)"""
    eps: torch.Tensor | None
    """(M, B, T) standard normal reward-noise draws, or None when the task has no reward noise"""
    xi: torch.Tensor | None
    """(M, B, T) standard normal critic-error draws (scaled by an estimator's critic_noise), or None"""
    dtype: torch.dtype = torch.float32
    values: dict = field(default_factory=dict, repr=False)
    """cache of exact value functions V (M, B, T) by gamma, filled by :func:`estimator_advantages`"""
    derived: dict = field(default_factory=dict, repr=False)
    """cache of what every estimator reads: the rewards and ``good`` as floats (M, B, T)"""

    def derived_draws(self) -> dict:
        """A new ``derived`` cache holding only what the reward noise does not change (all but the rewards)."""
        self.good_float()
        return {k: v for k, v in self.derived.items() if k != "rewards"}

    def good_float(self) -> torch.Tensor:
        """``good`` as a 0/1 tensor of ``dtype`` (M, B, T), converted once per rollout."""
        if "good" not in self.derived:
            self.derived["good"] = self.good.to(self.dtype)
        return self.derived["good"]

    @property
    def shape(self) -> tuple[int, int, int]:
        return tuple(self.good.shape)


def sample_rollouts(
    task: ChainTask, n_batches: int, batch_size: int, seed: int = 0, dtype=torch.float32, critic_draws: bool = True
) -> Rollouts:
    """Sample ``n_batches`` independent batches of ``batch_size`` trajectories: (M, B, T) tensors.

    Actions, reward noise and critic errors come from three generators seeded from ``seed``, so the
    same seed gives the same actions whatever the noise level (common random numbers).
    """
    M, B, T = int(n_batches), int(batch_size), task.T
    gen = torch.Generator().manual_seed(int(seed))
    good = torch.rand(M, B, T, generator=gen) < task.p_good  # (M, B, T)
    if task.K == 2:
        actions = None  # with two actions, "good" says it all (the wrong action is 1)
    else:
        wrong = 1 + torch.randint(0, task.K - 1, (M, B, T), generator=gen)  # a uniform wrong action
        actions = torch.where(good, torch.zeros_like(wrong), wrong)
    eps = xi = None
    if task.noise > 0:
        eps = torch.randn(M, B, T, generator=torch.Generator().manual_seed(int(seed) + 1_000_003), dtype=dtype)
    if critic_draws:
        xi = torch.randn(M, B, T, generator=torch.Generator().manual_seed(int(seed) + 2_000_003), dtype=dtype)
    return Rollouts(task, good, actions, eps, xi, dtype)


@functools.lru_cache(maxsize=24)
def _cached_draws(task: ChainTask, n_batches: int, batch_size: int, seed: int, dtype, critic_draws: bool):
    """The random draws of a task whose noise is 0 (no reward-noise draws) or 1 (standard normal ones)."""
    return sample_rollouts(task, n_batches, batch_size, seed, dtype=dtype, critic_draws=critic_draws)


@functools.lru_cache(maxsize=24)
def _cached_rollouts(task: ChainTask, n_batches: int, batch_size: int, seed: int, dtype, critic_draws: bool):
    """The same seed gives the same samples, so keep the last few: moving a slider that does not change
    the trajectories (G, gamma, lambda, the critic's error) then costs no sampling. Read-only use only.

    Moving the reward noise samples nothing either: the actions, the critic errors and the standard normal
    noise draws eps do not depend on the noise level (common random numbers), so a task with noise sigma
    shares the draws of the same task with noise 1 (and their exact values V, which noise does not move),
    and only its rewards r + sigma * eps are new.
    """
    unit = replace(task, noise=float(task.noise > 0))  # noise 0 or 1: which draws exist
    draws = _cached_draws(unit, n_batches, batch_size, seed, dtype, critic_draws)
    if unit == task:
        return draws
    return Rollouts(task, draws.good, draws.actions, draws.eps, draws.xi, dtype, draws.values, draws.derived_draws())


def clear_caches() -> None:
    """Forget every cached sample and measurement (a benchmark's cold start)."""
    for f in (_cached_draws, _cached_rollouts, _gradients, measure_cached):
        f.cache_clear()


def reward_unit(task: ChainTask) -> float:
    """The reward of one good step: 1 (dense, exact) or 1/T (terminal). Critic errors use this unit."""
    return 1.0 / task.T if task.reward == "terminal" else 1.0


def task_rewards(roll: Rollouts) -> torch.Tensor:
    """Rewards r, shape (M, B, T), including the reward noise (computed once per rollout; read-only)."""
    if "rewards" not in roll.derived:
        roll.derived["rewards"] = _task_rewards(roll)
    return roll.derived["rewards"]


def _task_rewards(roll: Rollouts) -> torch.Tensor:
    task = roll.task
    g = roll.good_float()
    if task.reward == "dense":
        return g if roll.eps is None else g + task.noise * roll.eps  # r_t = 1[a_t good] + noise (linear in it)
    r = torch.zeros_like(g)
    if task.reward == "terminal":
        final = g.mean(dim=-1)  # fraction of good tokens
    else:
        final = g.prod(dim=-1)  # 1 if every token is good
    r[..., -1] = final if roll.eps is None else final + task.noise * roll.eps[..., -1]
    return r


def true_values(roll: Rollouts, gamma: float) -> torch.Tensor:
    """Exact V(s_t) = E[sum_{k>=t} gamma^(k-t) r_k | a_0..a_{t-1}], shape (M, B, T).

    * dense:    V_t = p * sum_{k=t}^{T-1} gamma^(k-t)                      (history does not matter)
    * terminal: V_t = gamma^(T-1-t) * (c_t + (T - t) p) / T,   c_t = #good among a_0..a_{t-1}
    * exact:    V_t = gamma^(T-1-t) * 1[a_0..a_{t-1} all good] * p^(T-t)
    """
    task = roll.task
    T, p = task.T, task.p_good
    dt = roll.dtype
    t = torch.arange(T, dtype=torch.float64)
    remaining = T - t  # steps left including t
    if gamma == 1.0:
        disc_sum = remaining
    else:
        disc_sum = (1.0 - gamma**remaining) / (1.0 - gamma)
    to_end = gamma ** (T - 1 - t)  # discount from step t to the last step
    if task.reward == "dense":
        return (p * disc_sum).to(dt).expand(roll.shape).clone()
    g = roll.good_float() if dt == roll.dtype else roll.good.to(dt)
    if task.reward == "terminal":
        c = torch.cumsum(g, dim=-1) - g  # c_t: good actions before step t
        return to_end.to(dt) * (c + (remaining * p).to(dt)) / T
    alive = torch.cat([torch.ones_like(g[..., :1]), torch.cumprod(g, dim=-1)[..., :-1]], dim=-1)  # all good before t
    return (to_end * p**remaining).to(dt) * alive


# ----------------------------------------------------------------------------------------------
# Estimators
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EstimatorSpec:
    """One estimator with its own knobs (several specs can share the same sampled trajectories)."""

    name: str
    """one of ESTIMATOR_NAMES"""
    G: int = 8
    """group size (group estimators only); must divide the batch size"""
    gamma: float = 1.0
    """discount of the return-to-go / GAE (ignored by the group estimators, which score sum_t r_t)"""
    lam: float = 1.0
    """GAE lambda (gae, gae_critic)"""
    critic_noise: float = 0.0
    """std of the critic's error (gae_critic)"""
    eps: float = 1e-6
    """GRPO's std offset"""
    label: str = field(default="", compare=False)
    """display name (defaults to ``name``)"""

    def __post_init__(self):
        check_params(name=self.name, G=self.G, gamma=self.gamma, lam=self.lam, critic_noise=self.critic_noise)


def check_params(
    *,
    name: str | None = None,
    G: int | None = None,
    gamma: float | None = None,
    lam: float | None = None,
    critic_noise: float | None = None,
    noise: float | None = None,
    T: int | None = None,
    batch_size: int | None = None,
) -> None:
    """Refuse bad slider values with a ValueError that names the value and the fix."""
    if name is not None and name not in ESTIMATOR_NAMES:
        raise ValueError(f"unknown estimator {name!r}; valid: {', '.join(ESTIMATOR_NAMES)}")
    if G is not None and (not isinstance(G, int | np.integer) or G < 2) and (name is None or name in GROUP_NAMES):
        raise ValueError(
            f"group size G must be an integer >= 2 for a group baseline, got G={G!r}; "
            "a group of one has no baseline to compare with: use G=2 or more"
        )
    if gamma is not None and not (0.0 <= float(gamma) <= 1.0):
        raise ValueError(f"gamma must be in [0, 1], got gamma={gamma!r}; use e.g. gamma=1.0 (no discount)")
    if lam is not None and not (0.0 <= float(lam) <= 1.0):
        raise ValueError(f"lambda must be in [0, 1], got lam={lam!r}; 0 = one-step TD, 1 = Monte-Carlo")
    for nm, v in (("critic_noise", critic_noise), ("noise", noise)):
        if v is not None and not (float(v) >= 0.0 and math.isfinite(float(v))):
            raise ValueError(f"{nm} must be a finite number >= 0, got {nm}={v!r}; use e.g. {nm}=0.5")
    if T is not None and (not isinstance(T, int | np.integer) or T < 1):
        raise ValueError(f"horizon T must be an integer >= 1, got T={T!r}")
    if batch_size is not None and G is not None and name in GROUP_NAMES and batch_size % G:
        raise ValueError(
            f"batch size {batch_size} is not a multiple of the group size G={G}; "
            "pick G dividing the batch (or n_groups * G trajectories)"
        )


def discount_matrix(T: int, c: float, dtype=torch.float32) -> torch.Tensor:
    """W of shape (T, T) with W[k, t] = c^(k - t) for k >= t, else 0 (c = gamma or gamma * lambda).

    ``x @ W`` is the discounted reverse sum y_t = sum_{k>=t} c^(k-t) x_k of every row of x (N, T):
    the return-to-go when x = r and c = gamma, GAE when x = delta and c = gamma * lambda.
    """
    t = torch.arange(T, dtype=torch.float64)
    lag = t[:, None] - t[None, :]  # k - t
    w = torch.where(lag >= 0, torch.tensor(float(c), dtype=torch.float64) ** lag.clamp_min(0), 0.0)
    return w.to(dtype)


def reverse_discounted_sum(x: torch.Tensor, c: float, block: int = 32) -> torch.Tensor:
    """y_t = sum_{k>=t} c^(k-t) x_k along the last dim of x (N, T), in O(N T block) work.

    Within blocks of ``block`` steps the sum is one small matrix product (:func:`discount_matrix`);
    a loop over the T / block blocks, from the last, carries y at each block's first step back:
    y_t = local_t + c^(L - j) * y_(start of next block), j = t's position in its block of length L.
    """
    N, T = x.shape
    L = min(block, T)
    pad = (-T) % L
    xp = torch.nn.functional.pad(x, (0, pad))  # zeros after the end change no sum
    nb = (T + pad) // L
    local = xp.reshape(N, nb, L) @ discount_matrix(L, c, x.dtype)  # (N, nb, L) in-block sums
    decay = torch.tensor(float(c), dtype=torch.float64) ** (L - torch.arange(L, dtype=torch.float64))
    decay = decay.to(x.dtype)  # c^(L - j): from step j to the next block's first step
    out = torch.empty_like(local)
    carry = x.new_zeros(N, 1)
    for b in reversed(range(nb)):
        out[:, b] = local[:, b] + decay * carry
        carry = out[:, b, :1]
    return out.reshape(N, nb * L)[:, :T]


def estimator_advantages(
    spec: EstimatorSpec,
    roll: Rollouts,
    rewards: torch.Tensor,
    values: dict[float, torch.Tensor] | None = None,
    fast: bool = True,
) -> torch.Tensor:
    """Advantages A of shape (M, B, T) for one estimator.

    ``fast=False`` calls :mod:`rltutor.advantages` (``discounted_returns``, ``gae``,
    ``group_advantages``), the functions the trainer uses, whose recursions loop over T.
    ``fast=True`` (default) computes the same discounted reverse sums as one matrix product with
    :func:`reverse_discounted_sum` (the tests check both agree); group advantages always come from
    :func:`rltutor.advantages.group_advantages`. ``values`` caches exact value functions by gamma
    (default: the rollouts' own cache, which keeps at most 4 gammas).
    """
    M, B, T = roll.shape
    r = rewards.reshape(M * B, T)  # (M*B, T): one row per trajectory
    mask = None if fast else torch.ones_like(r)
    if spec.name == "reinforce":
        if fast:
            adv = reverse_discounted_sum(r, spec.gamma)  # G_t = sum_k gamma^(k-t) r_k
        else:
            adv = discounted_returns(r, mask, spec.gamma)
    elif spec.name in GROUP_NAMES:
        if B % spec.G:
            raise ValueError(
                f"batch size {B} is not a multiple of the group size G={spec.G}; pick G dividing the batch"
            )
        scores = r.sum(dim=1)  # R_i: the row's undiscounted return, (M*B,)
        group_ids = torch.arange(M * B) // spec.G  # consecutive rows form a group
        a = group_advantages(scores, group_ids, method=spec.name, eps=spec.eps)  # (M*B,)
        adv = a[:, None].expand(M * B, T)  # one number on every step of the row
    else:
        if values is None:
            values = roll.values
        if spec.gamma not in values and len(values) >= 4:
            values.clear()  # bound the memory a long slider session can hold
        if spec.gamma not in values:
            values[spec.gamma] = true_values(roll, spec.gamma)
        v = values[spec.gamma].reshape(M * B, T)
        if spec.name == "gae_critic" and spec.critic_noise > 0:
            if roll.xi is None:
                raise ValueError(
                    "these rollouts were sampled without critic draws; call sample_rollouts(..., critic_draws=True)"
                )
            v = v + spec.critic_noise * reward_unit(roll.task) * roll.xi.reshape(M * B, T)  # V_hat
        if fast:
            v_next = torch.cat([v[:, 1:], torch.zeros_like(v[:, :1])], dim=1)  # V(s_{t+1}), 0 after the end
            delta = r + spec.gamma * v_next - v  # TD residual delta_t
            adv = reverse_discounted_sum(delta, spec.gamma * spec.lam)  # A_t = sum (gamma lam)^l delta_{t+l}
        else:
            adv, _ = gae(r, v, mask, gamma=spec.gamma, lam=spec.lam)
    return adv.reshape(M, B, T)


def batch_gradients(roll: Rollouts, adv: torch.Tensor) -> torch.Tensor:
    """Per-batch gradient estimates g, shape (M, T, K).

    g[m, t, :] = (1/B) sum_i (e_{a_{m,i,t}} - pi_t) A_{m,i,t}   (the score of a softmax is e_a - pi).
    """
    M, B, T = roll.shape
    K = roll.task.K
    pi = policy_probs(roll.task, adv.dtype)  # (T, K)
    total = adv.sum(dim=1)  # sum_i A_{i,t}, (M, T)
    if K == 2:
        good = roll.good_float() if adv.dtype == roll.dtype else roll.good
        good_sum = (adv * good).sum(dim=1)  # sum_i 1[a_{i,t} = 0] A_{i,t}, (M, T)
        counts = torch.stack([good_sum, total - good_sum], dim=-1)  # (M, T, 2)
    else:
        # sum_i 1[a_{i,t} = k] A_{i,t} by scatter_add into the flat index t * K + a: (M, T * K)
        if "index" not in roll.derived:  # the same for every estimator: built once per rollout
            roll.derived["index"] = ((torch.arange(T) * K)[None, None, :] + roll.actions).reshape(M, B * T)
        counts = torch.zeros(M, T * K, dtype=adv.dtype)
        counts.scatter_add_(1, roll.derived["index"], adv.reshape(M, B * T))
        counts = counts.reshape(M, T, K)
    return (counts - pi[None] * total[..., None]) / B


def summarize(g: torch.Tensor, grad_true: torch.Tensor) -> dict[str, float]:
    """Variance, SNR and cosine of M gradient estimates g (M, T, K) against the true gradient (T, K).

    ``snr_se`` is the Monte-Carlo standard error of ``snr`` (:func:`snr_jackknife`), so a plot can draw the
    band the M batches leave open; ``variance_se`` and ``cosine_se`` are the plain standard errors of means.
    """
    M = g.shape[0]
    gf = g.reshape(M, -1).double()  # (M, D)
    gt = grad_true.reshape(-1).double()  # (D,)
    mean = gf.mean(0)
    h = gf - mean  # g_m - mean, (M, D)
    sq = (h**2).sum(1)  # |g_m - mean|^2, (M,)
    var = float(sq.sum() / max(M - 1, 1))  # E|g - E g|^2, unbiased
    var_se = float(sq.std() / math.sqrt(M)) if M > 1 else float("nan")
    signal = float(mean @ mean) - var / M  # unbiased estimate of |E g|^2
    snr = _snr(signal, var)
    norms = gf.norm(dim=1) * gt.norm()
    cos = torch.where(norms > 0, (gf @ gt) / norms.clamp_min(1e-300), torch.zeros_like(norms))
    mnorm = float(mean.norm() * gt.norm())
    return dict(
        variance=var,
        variance_se=var_se,
        signal=float(mean @ mean),
        snr=snr,
        snr_se=snr_jackknife(h, mean, sq),
        cosine=float(cos.mean()),
        cosine_se=float(cos.std() / math.sqrt(M)) if M > 1 else float("nan"),
        cos_mean=float(mean @ gt) / mnorm if mnorm > 0 else 0.0,
        mean_norm=float(mean.norm()),
        true_norm=float(gt.norm()),
    )


def _snr(signal: float, var: float) -> float:
    """signal / variance, 0 for a signal estimate below 0, infinite for a zero variance with a signal."""
    return max(signal, 0.0) / var if var > 0 else float("inf") if signal > 0 else 0.0


def snr_jackknife(h: torch.Tensor, mean: torch.Tensor, sq: torch.Tensor) -> float:
    """Jackknife standard error of the SNR estimate of :func:`summarize`, from per-batch moments only.

    ``h`` (M, D) holds the centred batch gradients g_m - mean, ``sq`` (M,) their squared norms. Leaving
    batch m out moves the mean to mean - h_m / (M - 1) and the summed squares to sum(sq) - sq_m M / (M - 1),
    so every leave-one-out SNR costs O(D) (one matrix-vector product for all M), not a new pass::

        |mean_(-m)|^2 = |mean|^2 - 2 mean.h_m / (M - 1) + sq_m / (M - 1)^2
        v_(-m)        = (sum(sq) - sq_m M / (M - 1)) / (M - 2)
        SNR_(-m)      = (|mean_(-m)|^2 - v_(-m) / (M - 1)) / v_(-m)
        SE^2          = (M - 1) / M * sum_m (SNR_(-m) - mean_m SNR_(-m))^2

    NaN for M < 3 (a leave-one-out variance needs two batches); 0 when every batch is the same.
    """
    M = h.shape[0]
    if M < 3:
        return float("nan")
    total = sq.sum()
    m2 = mean @ mean
    m2_out = m2 - 2.0 * (h @ mean) / (M - 1) + sq / (M - 1) ** 2
    v_out = (total - sq * M / (M - 1)) / (M - 2)
    if not bool((v_out > 0).all()):
        return 0.0 if float(total) == 0.0 else float("inf")
    snr_out = (m2_out - v_out / (M - 1)).clamp_min(0.0) / v_out
    return float(((snr_out - snr_out.mean()) ** 2).sum().mul((M - 1) / M).sqrt())


# ----------------------------------------------------------------------------------------------
# The mean gradient in closed form, and measuring to a stated precision
# ----------------------------------------------------------------------------------------------


def _step_direction(task: ChainTask, dtype=torch.float64) -> torch.Tensor:
    """p (e_0 - pi), shape (T, K): the direction every estimator's mean gradient takes at each step."""
    pi = policy_probs(task, dtype)
    e0 = torch.zeros(task.K, dtype=dtype)
    e0[0] = 1.0
    return task.p_good * (e0 - pi)


def exact_mean_gradient(task: ChainTask, spec: EstimatorSpec, dtype=torch.float64) -> torch.Tensor | None:
    """E g in closed form, shape (T, K), or None where the toy model gives none (GRPO's std division).

    Score and advantage meet at each step only through the step's own action, and the wrong actions are
    alike, so E[s_t A_t] = p (e_0 - pi_t) d_t with d_t = E[A_t | a_t good] - E[A_t | a_t wrong]. Reward
    noise and critic errors have mean 0 and do not depend on a_t, so they leave d_t alone. With u the
    reward of one good step moved by a_t (1 dense, 1/T terminal, p^(T-1) exact: the other T - 1 steps
    must be good too):

    * REINFORCE, GAE (exact V, any lambda; noisy critic too): d_t = u gamma^(T-1-t) for the terminal and
      exact rewards and d_t = u for the dense one (a_t moves r_t only). GAE's TD residuals after t have
      mean 0 given a_t (V is exact), so GAE has REINFORCE's mean at every lambda.
    * RLOO: d_t = u (the other rows' mean does not depend on a_t): the true gradient.
    * Dr.GRPO: d_t = u (1 - 1/G) (the row's own score is 1/G of the group mean it subtracts).
    """
    T, p = task.T, task.p_good
    unit = {"dense": 1.0, "terminal": 1.0 / T, "exact": p ** (T - 1)}[task.reward]
    if spec.name == "grpo":
        return None
    if spec.name in ("rloo", "dr_grpo"):
        d = torch.full((T,), unit * (1.0 - 1.0 / spec.G if spec.name == "dr_grpo" else 1.0), dtype=dtype)
    elif task.reward == "dense":
        d = torch.full((T,), unit, dtype=dtype)
    else:
        d = unit * torch.tensor(float(spec.gamma), dtype=dtype) ** (T - 1 - torch.arange(T, dtype=dtype))
    return d[:, None] * _step_direction(task, dtype)


def group_mean_scale(task: ChainTask, spec: EstimatorSpec, n_groups: int = 1 << 16, seed: int = 0):
    """d = E[A_i | a_(i,t) good] - E[A_i | a_(i,t) wrong] for a group estimator, by coupled sampling: (d, SE).

    A group advantage depends on the actions only through each row's count N of good steps (and the noise),
    so a step of row i is drawn good and wrong with everything else the same: N_i' ~ Binomial(T - 1, p) for
    the row's other steps, N_j ~ Binomial(T, p) for the G - 1 other rows, one noise draw per row. The two
    advantages differ little, so their mean difference is precise at a few thousand groups (with the plain
    batch mean, GRPO's SNR at T = 1 needed about 20 times more). Every step and action has the same d, so
    E g = p (e_0 - pi) d at every step. For RLOO and Dr.GRPO it reproduces :func:`exact_mean_gradient`
    (the tests check it); the measurements use it for GRPO, whose std division has no closed form.
    """
    from rltutor.advantages import group_advantages

    G, T, p = spec.G, task.T, task.p_good
    gen = torch.Generator().manual_seed(int(seed))
    n = int(n_groups)
    rest = torch.binomial(
        torch.full((n,), float(T - 1), dtype=torch.float64), torch.full((n,), p, dtype=torch.float64), generator=gen
    )
    others = torch.binomial(
        torch.full((n, G - 1), float(T), dtype=torch.float64),
        torch.full((n, G - 1), p, dtype=torch.float64),
        generator=gen,
    )

    def reward(count):  # R as a function of the count of good steps (noise added below)
        return {"dense": count, "terminal": count / T, "exact": (count == T).double()}[task.reward]

    noise_sd = task.noise * (math.sqrt(T) if task.reward == "dense" else 1.0)  # the noise on the return R
    eps = noise_sd * torch.randn(n, G, generator=gen, dtype=torch.float64) if task.noise > 0 else 0.0
    ids = torch.arange(n * G) // G
    adv = []
    for focal in (rest + 1, rest):  # the step good, then wrong
        scores = torch.cat([reward(focal)[:, None], reward(others)], dim=1) + eps  # (n, G)
        a = group_advantages(scores.reshape(-1).float(), ids, method=spec.name, eps=spec.eps)
        adv.append(a.double().reshape(n, G)[:, 0])
    diff = adv[0] - adv[1]
    return float(diff.mean()), float(diff.std() / math.sqrt(n))


def mean_signal(
    task: ChainTask,
    spec: EstimatorSpec,
    rel_se: float = 0.02,
    n_groups: int = 1 << 16,
    seed: int = 0,
    max_rounds: int = 256,
):
    """(E g of shape (T, K), ``|E g|^2``, its standard error): exact where :func:`exact_mean_gradient` has a
    closed form (SE 0), else from :func:`group_mean_scale` (``|E g|^2 = |p (e_0 - pi)|^2 d^2`` summed over T),
    drawn ``n_groups`` at a time until the relative SE of ``|E g|^2`` (2 SE(d) / ``|d|``) is at most ``rel_se``
    (G = 2 with reward noise needs the most: its advantages are +-1/sqrt(2), so d is a small difference of
    signs), or ``max_rounds`` rounds."""
    exact = exact_mean_gradient(task, spec)
    if exact is not None:
        return exact, float((exact**2).sum()), 0.0
    draws = []  # (d, SE) of each round: equal sizes, so d is their mean and SE^2 the mean of SE^2 / rounds
    while True:
        draws.append(group_mean_scale(task, spec, n_groups=n_groups, seed=seed + 1_009 * len(draws)))
        d = sum(x for x, _ in draws) / len(draws)
        d_se = math.sqrt(sum(e * e for _, e in draws)) / len(draws)
        if len(draws) >= max_rounds or (d != 0 and 2 * d_se / abs(d) <= rel_se) or d_se == 0:
            break
    direction = _step_direction(task)
    norm2 = float((direction**2).sum())
    return d * direction, norm2 * d * d, norm2 * 2.0 * abs(d) * d_se


class GradientMoments:
    """Running moments of batch gradients around a known mean E g (one estimator, batches in chunks).

    With E g known (:func:`mean_signal`) the SNR's only Monte-Carlo error is the variance's:
    ``variance = mean_m |g_m - E g|^2`` and its ``SE = std_m |g_m - E g|^2 / sqrt(M)``. Keeps M scalars per
    quantity, not the M gradients, so a cell can grow to many thousands of batches at any T.
    """

    def __init__(self, mean: torch.Tensor, grad_true: torch.Tensor):
        self.mean = mean.reshape(-1).double()
        self.gt = grad_true.reshape(-1).double()
        self.dev: list[torch.Tensor] = []  # |g_m - E g|^2 per batch
        self.cos: list[torch.Tensor] = []  # cos(g_m, grad J) per batch
        self.total = torch.zeros_like(self.mean)  # sum_m g_m

    def add(self, g: torch.Tensor) -> None:
        gf = g.reshape(g.shape[0], -1).double()
        self.dev.append(((gf - self.mean) ** 2).sum(1))
        norms = gf.norm(dim=1) * self.gt.norm()
        self.cos.append(torch.where(norms > 0, (gf @ self.gt) / norms.clamp_min(1e-300), torch.zeros_like(norms)))
        self.total += gf.sum(0)

    @property
    def n(self) -> int:
        return sum(len(d) for d in self.dev)

    def summary(self, signal: float, signal_se: float = 0.0) -> dict[str, float]:
        """:func:`summarize`'s keys, the SNR's SE combining the variance's and the signal's relative errors."""
        dev, cos = torch.cat(self.dev), torch.cat(self.cos)
        M = len(dev)
        var = float(dev.mean())
        var_se = float(dev.std() / math.sqrt(M))
        snr = _snr(signal, var)
        if var > 0 and signal > 0:
            snr_se = snr * math.hypot(var_se / var, signal_se / signal)  # relative errors add in quadrature
        else:
            snr_se = 0.0 if var == 0 else float("inf")
        mean = self.total / M
        mnorm = float(mean.norm() * self.gt.norm())
        return dict(
            variance=var,
            variance_se=var_se,
            signal=signal,
            snr=snr,
            snr_se=snr_se,
            cosine=float(cos.mean()),
            cosine_se=float(cos.std() / math.sqrt(M)),
            cos_mean=float(mean @ self.gt) / mnorm if mnorm > 0 else 0.0,
            mean_norm=float(mean.norm()),
            true_norm=float(self.gt.norm()),
        )


def snr_rel_se(row: dict) -> float:
    """The SNR's relative Monte-Carlo error of a measurement row (0 for a zero-variance, infinite SNR)."""
    snr, se = row["snr"], row["snr_se"]
    if not math.isfinite(snr):
        return 0.0 if se == 0 else float("inf")
    return se / snr if snr > 0 else float("inf")


def measure_to_precision(
    task: ChainTask,
    specs: Sequence[EstimatorSpec],
    *,
    batch_size: int = 32,
    rel_se: float = 0.05,
    min_batches: int = 256,
    step: int = 64,
    max_batches: int = 1 << 15,
    seed: int = 0,
) -> list[dict]:
    """Measure every estimator until its SNR's relative Monte-Carlo error is at most ``rel_se``.

    The mean gradient comes from :func:`mean_signal` (exact, or GRPO's precise scale), the variance from
    batches drawn ``step`` at a time (all estimators on the same trajectories, as :func:`measure_specs`),
    at least ``min_batches``; an estimator stops once SE / SNR <= ``rel_se`` (or at ``max_batches``: its
    row then shows the larger error, which :func:`rltutor.experiments.explorer_data.check_data` refuses).
    Each row is :func:`measure_specs`'s, with ``n_batches`` the batches it used and ``snr_se``.
    """
    if not (0 < rel_se < 1):
        raise ValueError(f"rel_se must be in (0, 1), got {rel_se!r}; pass e.g. rel_se=0.05 (5%)")
    if min_batches < 2 or step < 1:
        raise ValueError(f"need min_batches >= 2 and step >= 1, got {min_batches}, {step}")
    for s in specs:
        if s.name in GROUP_NAMES:
            check_params(name=s.name, G=s.G, batch_size=batch_size)
    gt = true_gradient(task)
    means = [mean_signal(task, s, rel_se=rel_se / 2, seed=seed + 7) for s in specs]
    acc = [GradientMoments(m, gt) for m, _, _ in means]
    rows: list[dict | None] = [None] * len(specs)
    need_xi = any(s.name == "gae_critic" and s.critic_noise > 0 for s in specs)
    k = 0
    while any(r is None for r in rows):
        roll = sample_rollouts(task, step, batch_size, seed=int(seed) + 10_007 * k, critic_draws=need_xi)
        r = task_rewards(roll)
        k += 1
        for i, s in enumerate(specs):
            if rows[i] is not None:
                continue
            acc[i].add(batch_gradients(roll, estimator_advantages(s, roll, r)))
            n = acc[i].n
            if n < min_batches:
                continue
            summary = acc[i].summary(means[i][1], means[i][2])
            if snr_rel_se(summary) <= rel_se or n >= max_batches:
                rows[i] = _row(task, s, batch_size, n, summary)
    return rows


# ----------------------------------------------------------------------------------------------
# Measurements
# ----------------------------------------------------------------------------------------------


def measure_specs(
    task: ChainTask,
    specs: Sequence[EstimatorSpec],
    *,
    batch_size: int = 32,
    n_batches: int = 128,
    seed: int = 0,
    dtype=torch.float32,
    return_gradients: bool = False,
    fast: bool = True,
    critic_draws: bool | None = None,
):
    """Measure several estimators on the SAME sampled trajectories (common random numbers).

    ``critic_draws`` (default: only if an estimator needs them) samples the critic-error draws too;
    they come from their own generator, so the trajectories are the same either way.

    Returns a list of dicts (one per spec: the spec's fields, the task's, and :func:`summarize`'s),
    and, with ``return_gradients=True``, also the list of (M, T, K) gradient tensors.
    """
    for s in specs:
        if s.name in GROUP_NAMES:
            check_params(name=s.name, G=s.G, batch_size=batch_size)
    need_xi = (
        any(s.name == "gae_critic" and s.critic_noise > 0 for s in specs)
        if critic_draws is None
        else bool(critic_draws)
    )
    roll = _cached_rollouts(task, int(n_batches), int(batch_size), int(seed), dtype, need_xi)
    r = task_rewards(roll)
    gt = true_gradient(task)
    values = roll.values if roll.dtype == dtype else {}
    rows, grads = [], []
    for s in specs:
        g = batch_gradients(roll, estimator_advantages(s, roll, r, values, fast=fast))
        rows.append(_row(task, s, batch_size, n_batches, summarize(g, gt)))
        if return_gradients:
            grads.append(g)
    return (rows, grads) if return_gradients else rows


def _row(task: ChainTask, spec: EstimatorSpec, batch_size: int, n_batches: int, summary: dict) -> dict:
    """One measurement's record: the spec's fields, the task's, the sample sizes and :func:`summarize`'s."""
    return {
        "estimator": spec.label or spec.name,
        **{k: v for k, v in asdict(spec).items() if k != "label"},
        "T": task.T,
        "reward": task.reward,
        "K": task.K,
        "p": task.p_good,
        "noise": task.noise,
        "batch_size": batch_size,
        "n_batches": n_batches,
        **summary,
        "name": spec.name,
    }


def relevant_spec(spec: EstimatorSpec) -> EstimatorSpec:
    """The spec with the knobs its estimator ignores set to defaults (so equal results get equal keys)."""
    keep = {
        "reinforce": ("gamma",),
        "grpo": ("G", "eps"),
        "dr_grpo": ("G",),
        "rloo": ("G",),
        "gae": ("gamma", "lam"),
        "gae_critic": ("gamma", "lam", "critic_noise"),
    }[spec.name]
    return EstimatorSpec(spec.name, **{k: getattr(spec, k) for k in keep})


LINEAR_IN_REWARDS = ("reinforce", "dr_grpo", "rloo", "gae", "gae_critic")
"""The estimators whose advantages are linear in the rewards (the values V and V_hat held fixed): all but
GRPO, which divides by the group's std. The rewards are linear in the noise level sigma (r + sigma eps, with
the same draws eps at every sigma), so for these estimators the gradient estimate is too:
g(sigma) = g(0) + sigma (g(1) - g(0)), and its variance a quadratic in sigma."""


@functools.lru_cache(maxsize=512)
def measure_cached(task: ChainTask, spec: EstimatorSpec, batch_size: int, n_batches: int, seed: int) -> dict:
    """One estimator at one task, memoized: a live explorer recomputes only what a slider changed.

    Same numbers as :func:`measure_specs` with the same arguments (same seed, same samples). Pass the
    spec through :func:`relevant_spec` first to share results across knobs the estimator ignores.
    Moving the noise costs an estimator of :data:`LINEAR_IN_REWARDS` no advantages at all: its gradients
    come from the two it had at noise 0 and 1 (equal to computing them afresh up to float32 rounding).
    """
    if task.noise > 0 and spec.name in LINEAR_IN_REWARDS:
        g0, g1 = (_gradients(replace(task, noise=sigma), spec, batch_size, n_batches, seed) for sigma in (0.0, 1.0))
        g = g0 + task.noise * (g1 - g0)  # g(sigma) = g(0) + sigma (g(1) - g(0))
        return _row(task, spec, batch_size, n_batches, summarize(g, true_gradient(task)))
    # critic_draws=True: every estimator of a task shares one cached rollout (and its exact values).
    return measure_specs(task, [spec], batch_size=batch_size, n_batches=n_batches, seed=seed, critic_draws=True)[0]


@functools.lru_cache(maxsize=128)
def _gradients(task: ChainTask, spec: EstimatorSpec, batch_size: int, n_batches: int, seed: int) -> torch.Tensor:
    """The M gradient estimates (M, T, K) of :func:`measure_specs`, in float64, kept for :func:`measure_cached`."""
    (g,) = measure_specs(
        task, [spec], batch_size=batch_size, n_batches=n_batches, seed=seed, critic_draws=True, return_gradients=True
    )[1]
    return g.double()


def _specs(estimators: Iterable[str], G: int, gamma: float, lam: float, critic_noise: float):
    return [EstimatorSpec(name=e, G=G, gamma=gamma, lam=lam, critic_noise=critic_noise) for e in estimators]


def measure(
    task: str | ChainTask = "corridor",
    *,
    T: int,
    G: int = 8,
    n_groups: int = 4,
    gamma: float = 1.0,
    lam: float = 1.0,
    noise: float = 0.0,
    critic_noise: float = 0.5,
    estimators: Sequence[str] = ESTIMATOR_NAMES,
    n_batches: int = 128,
    seed: int = 0,
) -> pd.DataFrame:
    """One point of the explorer: every estimator at one setting of (T, G, gamma, lambda, noise).

    A batch is ``n_groups`` groups of ``G`` trajectories (B = n_groups * G) for every estimator, so
    they all see the same number of trajectories. Returns one row per estimator.
    """
    check_params(G=G, gamma=gamma, lam=lam, noise=noise, critic_noise=critic_noise, T=T)
    t = make_chain(task, T=T, noise=noise)
    return pd.DataFrame(
        measure_specs(
            t, _specs(estimators, G, gamma, lam, critic_noise), batch_size=n_groups * G, n_batches=n_batches, seed=seed
        )
    )


def horizon_curve(
    horizons: Sequence[int],
    task: str | ChainTask = "corridor",
    *,
    G: int = 8,
    n_groups: int = 4,
    gamma: float = 1.0,
    lam: float = 1.0,
    noise: float = 0.0,
    critic_noise: float = 0.5,
    estimators: Sequence[str] = ESTIMATOR_NAMES,
    n_batches: int = 128,
    seed: int = 0,
) -> pd.DataFrame:
    """:func:`measure` at each horizon T (seed offset by the position), concatenated."""
    frames = [
        measure(
            task,
            T=int(T),
            G=G,
            n_groups=n_groups,
            gamma=gamma,
            lam=lam,
            noise=noise,
            critic_noise=critic_noise,
            estimators=estimators,
            n_batches=n_batches,
            seed=seed + i,
        )
        for i, T in enumerate(horizons)
    ]
    return pd.concat(frames, ignore_index=True)


# ----------------------------------------------------------------------------------------------
# Closed forms: the SNR the chapter derives, to set beside the Monte-Carlo measurement
# ----------------------------------------------------------------------------------------------


def snr_theory(
    task: ChainTask,
    estimator: str,
    *,
    batch_size: int = 32,
    G: int = 8,
    critic_noise: float = 0.0,
    lam: float = 0.0,
) -> float:
    """Exact SNR of a batch gradient for ``"rloo"``, ``"ideal_baseline"`` (RLOO as G -> infinity:
    REINFORCE with the exact mean return as baseline) and ``"gae_td"`` (GAE with gamma = 1 and ``lam``,
    with a critic V + critic_noise * u * xi; critic_noise = 0 is the true V, and a noisy critic is covered at
    lam = 0 only). Rewards "dense"/"terminal".

    The closed forms, in plain text::

        Per step (one softmax over K actions, good-action probability p, q = (1 - p) / (K - 1)):
        S_g = |e_0 - pi|^2, S_b = |e_j - pi|^2 (j wrong), E|s|^2 = p S_g + (1 - p) S_b,
        |c|^2 = p^2 S_g (the per-step gradient of E[u], u = 1[good]), a = E[|s|^2 (u - p)^2],
        b = E|s|^2 p (1 - p). Each step's reward weight is w (1 dense, 1/T terminal) and the noise on the
        return R has variance s_R^2 (T sigma^2 dense, sigma^2 terminal). Then, with |c~|^2 = T w^2 |c|^2:

        * RLOO: SNR = B |c~|^2 / ( T [w^2 (a + (T-1) b) + E|s|^2 s_R^2] + T E|s|^2 Var R / (G-1)
          - |c~|^2 + |c~|^2 / (G-1) ),   Var R = T w^2 p (1-p) + s_R^2.
        * TD (lambda = 0): SNR = B |c~|^2 / ( T w^2 (a - |c|^2) + E|s|^2 s_R^2 + E|s|^2 k^2 (2T - 1) ),
          k = critic_noise * u (each TD residual carries gamma * err(s_{t+1}) - err(s_t)).
        * GAE(lambda), true V: step t's advantage is w (u_t - p) + sum_{l >= 1} lambda^l w (u_{t+l} - p) plus
          the reward noise the residuals carry, so the later steps' luck enters step t with weights lambda^(2l):
          SNR = B |c~|^2 / ( T w^2 (a - |c|^2) + w^2 b sum_t S_t + E|s|^2 N ), S_t = sum_{l=1}^{T-1-t} lambda^(2l),
          N = sum_t lambda^(2(T-1-t)) sigma^2 (terminal: the noise is in the last residual) or
          sum_t sum_{l=0}^{T-1-t} lambda^(2l) sigma^2 (dense). At lambda = 0 this is the TD form; at lambda = 1,
          sum_t S_t = T (T - 1) / 2: half of RLOO's (T - 1) b per step, so at most twice the trajectory-level SNR.

    The horizon enters RLOO through (T - 1) b: every other step's randomness lands in every step's
    advantage, so SNR ~ B / T. In the TD form T cancels (without noise): credit stays local.
    """
    if task.reward not in ("dense", "terminal"):
        raise ValueError(f"snr_theory covers rewards 'dense' and 'terminal', got {task.reward!r}")
    T, K, p = task.T, task.K, task.p_good
    q = (1 - p) / (K - 1)
    S_g = (1 - p) ** 2 + (K - 1) * q**2
    S_b = p**2 + (1 - q) ** 2 + (K - 2) * q**2
    Es2 = p * S_g + (1 - p) * S_b
    c2 = p**2 * S_g
    a = p * S_g * (1 - p) ** 2 + (1 - p) * S_b * p**2
    b = Es2 * p * (1 - p)
    w = 1.0 if task.reward == "dense" else 1.0 / T
    sR2 = task.noise**2 * (T if task.reward == "dense" else 1.0)
    ct2 = T * w**2 * c2
    B = batch_size
    if estimator in ("rloo", "ideal_baseline"):
        inv = 0.0 if estimator == "ideal_baseline" else 1.0 / (G - 1)
        var_R = T * w**2 * p * (1 - p) + sR2
        denom = T * (w**2 * (a + (T - 1) * b) + Es2 * sR2) + T * Es2 * var_R * inv - ct2 + ct2 * inv
        return B * ct2 / denom
    if estimator == "gae_td":
        if not 0.0 <= lam <= 1.0:
            raise ValueError(f"lam must be in [0, 1], got {lam!r}")
        if lam > 0 and critic_noise > 0:
            raise ValueError(
                f"snr_theory covers a noisy critic at lam = 0 only, got lam={lam!r} with critic_noise="
                f"{critic_noise!r}; measure it with measure_specs instead"
            )
        k2 = (critic_noise * reward_unit(task)) ** 2
        rho = lam**2
        n = np.arange(T)  # T - 1 - t for t = T-1, ..., 0: how many steps follow step t
        later = n if rho == 1.0 else rho * (1 - rho**n) / (1 - rho)  # S_t = sum_{l=1}^{n} rho^l
        if task.reward == "terminal":
            noise = task.noise**2 * float(np.sum(rho**n))  # lambda^(2n) sigma^2: the last residual's noise
        else:
            noise = task.noise**2 * float(np.sum(1.0 + later))  # sum_{l=0}^{n} rho^l sigma^2
        denom = T * w**2 * (a - c2) + w**2 * b * float(np.sum(later)) + Es2 * noise
        return B * ct2 / (denom + Es2 * k2 * (2 * T - 1))
    raise ValueError(f"unknown estimator {estimator!r} for snr_theory; valid: rloo, ideal_baseline, gae_td")


assert set(ESTIMATOR_NAMES) - set(LAB_ESTIMATORS) <= set(ESTIMATORS), "a lab estimator name shadows no registry entry"
