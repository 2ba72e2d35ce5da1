"""Advantage estimators: returns, GAE, group-relative baselines (GRPO, Dr.GRPO, RLOO), whitening.

Chapters: *Policy gradients and baselines* (01), *PPO* (02), *GRPO* (03), *Variance vs horizon* (04).

Conventions (the batch contract is stated in :mod:`rltutor.rollout`):

* Token-level tensors are ``(B, T)``: ``B`` rows (episodes, episode fragments or completions) of
  ``T`` steps. ``mask`` is 1 where a step counts (a valid response token) and 0 elsewhere.
* Outcome rewards sit on the last valid token of a row.
* Every function is pure: tensors in, new tensors out, inputs never edited in place.
* Nothing here whitens its output unless its name says so (:func:`whiten`, ``"reinforce_pp"``,
  ``"reinforce_pp_baseline"``).

The estimators are registered by name in :data:`ESTIMATORS` so the trainer, a notebook widget or
the command line picks one with a string::

    adv, ret = compute_advantages("gae", rewards=r, mask=m, values=v, gamma=1.0, lam=0.95)
    adv, ret = compute_advantages("grpo", rewards=r, mask=m, group_ids=g)   # ret is None

Each returns ``(advantages, returns)``. The rule for ``returns``: an estimator returns the critic's
regression targets only when it computed them from a critic (``"gae"``); every critic-free
estimator (``"grpo"``, ``"dr_grpo"``, ``"rloo"``, ``"reinforce"``, ``"reinforce_pp"``,
``"reinforce_pp_baseline"``) returns ``None``, and a trainer that fits a critic anyway computes
:func:`discounted_returns` itself.

References

* GAE: Schulman et al., *High-Dimensional Continuous Control Using Generalized Advantage
  Estimation*, arXiv:1506.02438 (2015), eq. 16. The loop mirrors CleanRL's ``ppo.py``
  (``delta``, ``lastgaelam``) and verl's ``compute_gae_advantage_return``.
* GRPO: Shao et al., *DeepSeekMath*, arXiv:2402.03300 (2024), sec. 4.1.2 (outcome supervision):
  A_i = (r_i - mean(r)) / std(r), shared by every token of response i.
* Dr.GRPO: Liu et al., *Understanding R1-Zero-Like Training: A Critical Perspective*,
  arXiv:2503.20783 (2025): drop the std division (and the 1/``|o|`` length normalization, see
  :func:`rltutor.losses.aggregate`).
* RLOO: Ahmadian et al., *Back to Basics: Revisiting REINFORCE Style Optimization for Learning
  from Human Feedback in LLMs*, arXiv:2402.14740 (2024): baseline = mean reward of the other
  k - 1 samples, the leave-one-out baseline of Kool, van Hoof and Welling, *Buy 4 REINFORCE Samples,
  Get a Baseline for Free!*, ICLR 2019 workshop (https://openreview.net/forum?id=r1lgTGL5DE).
* REINFORCE++: Hu et al., *REINFORCE++: Stabilizing Critic-Free Policy Optimization with Global
  Advantage Normalization*, arXiv:2501.03262 (2025; v1 was titled *A Simple and Efficient Approach for
  Aligning Large Language Models*): token-level return-to-go, normalized over the global batch; its
  variant REINFORCE++-baseline (``"reinforce_pp_baseline"``) first subtracts each group's mean score.
  OpenRLHF's ``compute_advantages_and_returns`` (estimators ``reinforce``, ``reinforce_baseline``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from rltutor.utils import check_choice, check_mask, check_same_dtype, check_same_shape, check_tensor, register_in

__all__ = [
    "discounted_returns",
    "gae",
    "group_advantages",
    "dead_groups",
    "whiten",
    "compute_advantages",
    "register_estimator",
    "list_estimators",
    "ESTIMATORS",
    "GROUP_METHODS",
    "GROUP_ESTIMATORS",
    "DEAD_TOL",
]

GROUP_METHODS = ("grpo", "dr_grpo", "rloo")
GROUP_ESTIMATORS = (*GROUP_METHODS, "reinforce_pp_baseline")
"""The registered estimators that compare each row with its group (they need ``group_ids`` and G >= 2)."""
DEAD_TOL = 1e-8  # a group whose scores span at most this is dead (see dead_groups)


# ----------------------------------------------------------------------------------------------
# Input checks
# ----------------------------------------------------------------------------------------------


def _check_discount(name: str, x: float) -> float:
    # bool is a subclass of int: gamma=True would silently mean gamma=1.
    if isinstance(x, bool) or not isinstance(x, int | float) or not (0.0 <= float(x) <= 1.0):
        raise ValueError(f"{name} must be a number in [0, 1] (not a bool), got {x!r}")
    return float(x)


def _check_token_inputs(mask: torch.Tensor, **tensors: torch.Tensor) -> torch.Tensor:
    """Check (B, T) float tensors of one dtype and their mask; return the mask as a bool tensor."""
    for name, t in tensors.items():
        check_tensor(name, t, ndim=2)
        if not t.is_floating_point():
            raise ValueError(f"{name} must be a floating tensor, got dtype {t.dtype}; use .float()")
    check_same_dtype(**tensors)  # mixed dtypes would give outputs of two dtypes: refuse rather than guess
    first = next(iter(tensors.values()))
    check_mask(mask, like=first)
    check_same_shape(**tensors)
    return mask.bool()


def _check_overflow(what: str, dtype: torch.dtype, reason: str, inputs: torch.Tensor, *outputs: torch.Tensor) -> None:
    """Finite inputs whose result overflowed ``dtype`` (inf): a ValueError naming the input range and the fix."""
    if not all(bool(torch.isfinite(o).all()) for o in outputs):
        raise ValueError(
            f"{what} overflow {dtype}: {reason} more than it can hold "
            f"(min {inputs.min().item():.3g}, max {inputs.max().item():.3g}); rescale the rewards"
            + ("" if dtype == torch.float64 else " or compute in float64 (.double())")
        )


def _work_dtype(dtype: torch.dtype) -> torch.dtype:
    """float16/bfloat16 statistics are computed in float32 (then cast back), others in their own dtype."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


# ----------------------------------------------------------------------------------------------
# Returns and GAE
# ----------------------------------------------------------------------------------------------


def discounted_returns(rewards: torch.Tensor, mask: torch.Tensor, gamma: float) -> torch.Tensor:
    """Discounted return-to-go over the valid steps of each row.

    G_t = r_t + gamma * G_{t'}, where t' is the next valid step after t (masked gaps are skipped,
    so a tool-output span between two turns does not count as time passing) and G = 0 after the
    last valid step.

    Args:
        rewards: (B, T) float rewards; entries where ``mask`` is 0 are ignored.
        mask: (B, T) 0/1.
        gamma: discount in [0, 1].

    Returns:
        (B, T) returns, 0 where ``mask`` is 0.
    """
    valid = _check_token_inputs(mask, rewards=rewards)
    gamma = _check_discount("gamma", gamma)
    B, T = rewards.shape
    out = torch.zeros_like(rewards)
    running = rewards.new_zeros(B)  # G_{t'}: return from the next valid step on
    for t in reversed(range(T)):
        m = valid[:, t]
        running = torch.where(m, rewards[:, t] + gamma * running, running)
        out[:, t] = torch.where(m, running, 0.0)
    _check_overflow(
        "discounted returns", rewards.dtype, "the rewards' discounted sums reach", torch.where(valid, rewards, 0.0), out
    )
    return out


def gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    gamma: float = 1.0,
    lam: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalized Advantage Estimation (Schulman et al. 2015, eq. 16).

    With t' the next valid step after t::

        delta_t = r_t + gamma * V(s_t') - V(s_t)          (V after the last valid step is 0)
        A_t     = delta_t + gamma * lam * A_t'
        R_t     = A_t + V(s_t)                            (the critic's regression target)

    The recursion runs over valid steps only: masked gaps are skipped, neither discounting nor
    adding reward. A row that was *truncated* (cut by a time limit or a rollout boundary rather
    than ended) should carry ``gamma * V(s_T)`` in its last valid reward; this function does not
    bootstrap on its own. The result is not whitened.

    lam = 1 gives A_t = G_t - V(s_t) (Monte-Carlo return minus baseline: unbiased, high variance);
    lam = 0 gives A_t = delta_t (one-step TD residual: low variance, biased by the critic's error).

    Args:
        rewards: (B, T) float.
        values: (B, T) float, V(s_t) for every step (ignored where ``mask`` is 0).
        mask: (B, T) 0/1.
        gamma: discount in [0, 1].
        lam: GAE lambda in [0, 1].

    Returns:
        ``(advantages, returns)``, both (B, T). Advantages are 0 where ``mask`` is 0, and
        returns = advantages + values everywhere (so returns equal values at masked steps).
    """
    valid = _check_token_inputs(mask, rewards=rewards, values=values)
    gamma = _check_discount("gamma", gamma)
    lam = _check_discount("lam", lam)
    B, T = rewards.shape
    advantages = torch.zeros_like(rewards)
    next_value = rewards.new_zeros(B)  # V(s_t'), 0 after the last valid step
    lastgaelam = rewards.new_zeros(B)  # A_t'
    for t in reversed(range(T)):
        m = valid[:, t]
        delta = rewards[:, t] + gamma * next_value - values[:, t]  # TD residual delta_t
        a_t = delta + gamma * lam * lastgaelam  # A_t = delta_t + gamma * lam * A_t'
        advantages[:, t] = torch.where(m, a_t, 0.0)
        lastgaelam = torch.where(m, a_t, lastgaelam)
        next_value = torch.where(m, values[:, t], next_value)
    returns = advantages + values
    _check_overflow(
        "GAE advantages",
        rewards.dtype,
        "the rewards' discounted sums reach",
        torch.where(valid, rewards, 0.0),
        advantages,
        returns,
    )
    return advantages, returns


# ----------------------------------------------------------------------------------------------
# Group-relative baselines: GRPO, Dr.GRPO, RLOO
# ----------------------------------------------------------------------------------------------


def _check_groups(scores: torch.Tensor, group_ids: torch.Tensor) -> None:
    check_tensor("scores", scores, ndim=1)
    if not scores.is_floating_point():
        raise ValueError(f"scores must be a floating tensor, got dtype {scores.dtype}; use .float()")
    if not isinstance(group_ids, torch.Tensor) or group_ids.dim() != 1:
        raise ValueError(
            "group_ids must be a 1-D integer torch.Tensor of shape (B,), got "
            f"{type(group_ids).__name__} {tuple(getattr(group_ids, 'shape', ()))}"
        )
    if group_ids.is_floating_point() or group_ids.dtype == torch.bool:
        raise ValueError(f"group_ids must be integers, got dtype {group_ids.dtype}; use .long()")
    if group_ids.shape != scores.shape:
        raise ValueError(
            f"group_ids has shape {tuple(group_ids.shape)} but scores has shape "
            f"{tuple(scores.shape)}; give one group id per response"
        )


def _check_nonneg(name: str, x: float) -> float:
    if isinstance(x, bool) or not isinstance(x, int | float) or not (0.0 <= float(x) < math.inf):
        raise ValueError(f"{name} must be a finite number >= 0, got {x!r}")
    return float(x)


def _group_ranges(x: torch.Tensor, group_ids: torch.Tensor):
    """``(inv, counts, g_min, g_max)`` of scores ``x`` (B,) grouped by ``group_ids``: the group
    index of each row (B,), the group sizes and each group's smallest and largest score
    (n_groups,), groups in the sorted order of their ids."""
    _, inv, counts = torch.unique(group_ids, return_inverse=True, return_counts=True)
    k = len(counts)
    g_min = x.new_full((k,), math.inf).scatter_reduce(0, inv, x, "amin")
    g_max = x.new_full((k,), -math.inf).scatter_reduce(0, inv, x, "amax")
    return inv, counts, g_min, g_max


def group_advantages(
    scores: torch.Tensor,
    group_ids: torch.Tensor,
    method: str = "grpo",
    eps: float = 1e-6,
    tol: float = DEAD_TOL,
) -> torch.Tensor:
    """One advantage per response, relative to the other responses to the same prompt.

    For response i in group g with n_g members, scores s:

    * ``"grpo"``:    A_i = (s_i - mean_g) / (std_g + eps), std with Bessel's correction (n_g - 1),
      as verl's ``compute_grpo_outcome_advantage`` and TRL's ``GRPOTrainer`` compute it (``torch.std``
      is unbiased by default); DeepSeekMath does not say which std it uses.
    * ``"dr_grpo"``: A_i = s_i - mean_g (Dr.GRPO: no std division, so no difficulty bias).
    * ``"rloo"``:    A_i = s_i - mean of the *other* n_g - 1 scores = n_g / (n_g - 1) (s_i - mean_g).

    Members of a group need not be adjacent in the batch.

    **Dead groups.** A group is *dead* when its scores are equal: max_g - min_g <= ``tol``
    (exact equality when ``tol=0``), the test of :func:`dead_groups`. Every member of a dead group
    gets advantage exactly 0, under every method and in every dtype (no learning signal; see the
    "zero-std fraction" in the GRPO chapter). The formulas alone do not give that: the float
    mean of 16 copies of -3.7 is not -3.7 in float32, so s_i - mean_g is ~1e-7, std_g is ~1e-7,
    and GRPO would hand every member the same advantage 0.32. So dead groups are set to 0
    explicitly, with the very test of :func:`dead_groups`: the two never disagree.

    Deviations (numerics only): float16/bfloat16 scores are processed in float32 and the result
    cast back. With ``eps=0`` std_g is computed with the group's max ``|s_i - mean_g|`` factored out,
    so a live group always has std_g > 0 and nothing divides by zero (``|A_i|`` <= sqrt(n_g - 1)).

    Args:
        scores: (B,) float, one scalar reward per response.
        group_ids: (B,) integer ids; responses to the same prompt share an id.
        method: one of ``"grpo"``, ``"dr_grpo"``, ``"rloo"``.
        eps: added to the std before dividing (``"grpo"`` only), >= 0.
        tol: groups whose scores span at most ``tol`` are dead (advantage 0); >= 0.

    Returns:
        (B,) advantages, in the dtype of ``scores``.
    """
    _check_groups(scores, group_ids)
    check_choice("group method", method, GROUP_METHODS)
    eps = _check_nonneg("eps", eps)
    tol = _check_nonneg("tol", tol)

    x = scores.to(_work_dtype(scores.dtype))
    inv, counts, g_min, g_max = _group_ranges(x, group_ids)
    if (counts < 2).any():
        lonely = torch.unique(group_ids)[counts < 2][:5].tolist()
        raise ValueError(
            f"groups {lonely} have a single member; a group-relative baseline needs at "
            "least 2 responses per prompt (group size G >= 2)"
        )
    dead = (g_max - g_min <= tol)[inv]  # (B,) the row's group is dead (same test as dead_groups)
    zeros = x.new_zeros(len(counts))
    n = counts.to(x.dtype)  # n_g, (n_groups,)
    total = zeros.index_add(0, inv, x)  # sum_g s
    centred = x - (total / n)[inv]  # s_i - mean_g (~1e-7, not 0, in an all-equal group of -3.7)
    if method == "dr_grpo":
        a = centred
    elif method == "rloo":
        # s_i - (sum_g - s_i) / (n_g - 1)  ==  n_g / (n_g - 1) * (s_i - mean_g)
        a = x - (total[inv] - x) / (n[inv] - 1)
    else:
        # Bessel std_g = c_g * sqrt(sum_g ((s - mean_g) / c_g)^2 / (n_g - 1)). With eps = 0, c_g is the
        # group's largest |s - mean_g| so that the squares cannot underflow to std_g = 0 in a live
        # group; otherwise c_g = 1 (the textbook formula).
        c = zeros.scatter_reduce(0, inv, centred.abs(), "amax") if eps == 0 else zeros + 1.0
        c = torch.where(c > 0, c, 1.0)
        z = centred / c[inv]
        std = c * (zeros.index_add(0, inv, z**2) / (n - 1)).sqrt()  # std_g
        a = centred / (std[inv] + eps)  # (s_i - mean_g) / (std_g + eps); 0/0 only in dead groups
    a = torch.where(dead, 0.0, a).to(scores.dtype)  # a dead group carries no signal: exactly 0
    _check_overflow("group advantages", scores.dtype, "the scores span", scores, a)
    return a


def dead_groups(scores: torch.Tensor, group_ids: torch.Tensor, tol: float = DEAD_TOL):
    """Which groups have all-equal scores, so every group-relative advantage in them is exactly 0.

    A group is dead when max_g - min_g <= ``tol`` (``tol=0``: exact equality). This is the very test
    :func:`group_advantages` applies (with the same ``tol``) before setting those advantages to 0,
    so a group is called dead if and only if it carries no signal. A group of one member is dead.

    Returns ``(dead, inv, counts)``: ``dead`` (n_groups,) bool over the distinct ids in sorted order,
    ``inv`` (B,) the group index of each row and ``counts`` (n_groups,) the group sizes (as
    ``torch.unique(..., return_inverse=True, return_counts=True)``). The trainer's dynamic sampling
    drops dead groups; the token collector's refill (``rltutor.rollout.tokens.LMCollector(max_draws=...)``)
    replaces them.
    """
    _check_groups(scores, group_ids)
    tol = _check_nonneg("tol", tol)
    inv, counts, g_min, g_max = _group_ranges(scores.to(_work_dtype(scores.dtype)), group_ids)
    return g_max - g_min <= tol, inv, counts


def whiten(x: torch.Tensor, mask: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """Masked whitening: (x - mean) / sqrt(var + eps) over the valid entries of the whole tensor.

    The mean and the Bessel-corrected variance are taken over entries where ``mask`` is 1; the
    result has masked mean 0 and masked variance 1 (up to ``eps``), and is 0 where ``mask`` is 0.
    Unlike verl's ``compute_gae_advantage_return`` nothing calls this implicitly: the trainer's
    ``norm_adv`` option or the ``"reinforce_pp"`` estimator applies it, in plain sight.

    Edge cases, never NaN: a constant input (all valid entries equal) and a single valid entry
    whiten to exactly 0 (there is no spread to scale; the float mean of equal numbers need not equal
    them, so the formula alone would amplify rounding noise by 1/sqrt(eps)). ``eps=0`` is allowed.
    A mask with no valid entry raises. Numerics as in :func:`group_advantages`: float16/bfloat16
    are processed in float32, and with ``eps=0`` the largest ``|x - mean|`` is factored out of the
    variance so that it cannot underflow to 0.
    """
    check_tensor("x", x)
    if not x.is_floating_point():
        raise ValueError(f"x must be a floating tensor, got dtype {x.dtype}")
    check_mask(mask, like=x)
    eps = _check_nonneg("eps", eps)
    valid = mask.bool()
    n = valid.sum()
    if n == 0:
        raise ValueError("whiten got a mask with no valid entry; there is nothing to whiten (check the mask)")
    w = x.to(_work_dtype(x.dtype))
    constant = torch.where(valid, w, -math.inf).amax() == torch.where(valid, w, math.inf).amin()
    mean = torch.where(valid, w, 0.0).sum() / n
    centred = torch.where(valid, w - mean, 0.0)  # x - mean on valid entries, 0 elsewhere
    # var = c^2 * sum ((x - mean) / c)^2 / (n - 1), c = max |x - mean| when eps = 0, else c = 1.
    c = centred.abs().amax() if eps == 0 else centred.new_ones(())
    c = torch.where(c > 0, c, 1.0)
    z = centred / c
    var_z = (z**2).sum() / (n - 1).clamp(min=1)  # var / c^2 (Bessel)
    out = z * torch.rsqrt(var_z + eps / c / c)  # (x - mean) / sqrt(var + eps)
    return torch.where(constant, 0.0, out).to(x.dtype)  # no spread: exactly 0 (not 0 * inf)


# ----------------------------------------------------------------------------------------------
# The registry: one entry point for the trainer
# ----------------------------------------------------------------------------------------------

Estimator = Callable[..., tuple[torch.Tensor, torch.Tensor | None]]
ESTIMATORS: dict[str, Estimator] = {}
"""The registry of advantage estimators by name (:func:`register_estimator` adds one)."""


def register_estimator(name: str) -> Callable[[Estimator], Estimator]:
    """Register ``fn(*, rewards, mask, values, group_ids, gamma, lam, eps) -> (adv, returns)``.

    ``returns`` is the (B, T) critic target when the estimator used ``values``, else None.
    """
    return register_in(ESTIMATORS, name, "an advantage estimator named")


def list_estimators() -> list[str]:
    """The registered estimator names, sorted."""
    return sorted(ESTIMATORS)


def _row_scores(rewards: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Outcome score of each row: the undiscounted sum of its rewards over valid steps, (B,)."""
    return (rewards * mask.to(rewards.dtype)).sum(dim=1)


@register_estimator("gae")
def _gae_estimator(*, rewards, mask, values, group_ids, gamma, lam, eps):
    if values is None:
        raise ValueError(
            "the 'gae' estimator needs critic values (B, T); turn the critic on "
            "or pick a critic-free estimator such as 'grpo'"
        )
    return gae(rewards, values, mask, gamma=gamma, lam=lam)


def _group_estimator(method: str) -> Estimator:
    def estimator(*, rewards, mask, values, group_ids, gamma, lam, eps):
        _check_token_inputs(mask, rewards=rewards)
        if group_ids is None:
            raise ValueError(
                f"the {method!r} estimator needs group_ids of shape (B,); collect "
                "G >= 2 responses per prompt and pass their group ids"
            )
        a = group_advantages(_row_scores(rewards, mask), group_ids, method=method, eps=eps)
        advantages = a[:, None] * mask.to(rewards.dtype)  # the same A_i on every token of row i
        return advantages, None  # critic-free: no critic target

    estimator.__name__ = f"_{method}_estimator"
    estimator.__doc__ = (
        f"Outcome advantage by group_advantages(method={method!r}), broadcast to tokens; returns None (no critic)."
    )
    return estimator


for _method in GROUP_METHODS:
    register_estimator(_method)(_group_estimator(_method))


@register_estimator("reinforce")
def _reinforce_estimator(*, rewards, mask, values, group_ids, gamma, lam, eps):
    """Plain REINFORCE: the advantage is the discounted return-to-go, no baseline; returns None.

    The return-to-go *is* the advantage here, so it is returned once, as the advantage: a critic
    target would be the same tensor, and no critic reads it.
    """
    return discounted_returns(rewards, mask, gamma), None


@register_estimator("reinforce_pp")
def _reinforce_pp_estimator(*, rewards, mask, values, group_ids, gamma, lam, eps):
    """REINFORCE++: token-level return-to-go whitened over the whole batch (Hu 2025).

    The per-token KL penalty of the paper enters through ``rewards`` (the trainer's
    ``kl_in_reward`` option); this function only computes returns and whitens them. Critic-free,
    so it returns None as the critic target (the unwhitened returns are ``discounted_returns``).
    """
    return whiten(discounted_returns(rewards, mask, gamma), mask), None


@register_estimator("reinforce_pp_baseline")
def _reinforce_pp_baseline_estimator(*, rewards, mask, values, group_ids, gamma, lam, eps):
    """REINFORCE++-baseline (Hu et al. 2025, the variant for verifiable rewards; OpenRLHF's
    ``reinforce_baseline``): subtract the group's mean score from every token's return-to-go, then
    whiten over the whole batch. Returns None (no critic).

    With R_i = sum_t r_{i,t} the score of row i and b_g = mean_{j in g} R_j its group's mean::

        G_{i,t} = sum_{k >= t} r_{i,k} - b_g      (gamma = 1)
        A_{i,t} = whiten(G)_{i,t}                 (mean and std over every valid token of the batch)

    With an outcome reward only, G_{i,t} = R_i - b_g on every token: Dr.GRPO's advantage, then scaled
    by one batch-wide std instead of GRPO's per-group one. The per-token KL penalty of the paper enters
    through ``rewards`` (the trainer's ``kl_in_reward``). Deviations from OpenRLHF's
    ``compute_advantages_and_returns``: it subtracts the group mean of the outcome scores before adding
    the KL penalty, so with ``kl_in_reward`` b_g here also holds the group's mean summed penalty (a
    constant per group, still a baseline); :func:`whiten` uses Bessel's variance where OpenRLHF divides
    by the token count N (a factor sqrt(N / (N - 1)) on every advantage). A dead group's G is exactly 0.
    """
    _check_token_inputs(mask, rewards=rewards)
    if group_ids is None:
        raise ValueError(
            "the 'reinforce_pp_baseline' estimator needs group_ids of shape (B,); collect "
            "G >= 2 responses per prompt and pass their group ids"
        )
    if _check_discount("gamma", gamma) != 1.0:
        raise ValueError(
            f"the 'reinforce_pp_baseline' estimator subtracts the group's mean score from every token's "
            f"undiscounted return-to-go, so it needs gamma=1 (OpenRLHF sets it to 1), got gamma={gamma!r}"
        )
    scores = _row_scores(rewards, mask)  # R_i, (B,)
    centred = group_advantages(scores, group_ids, method="dr_grpo")  # R_i - b_g, exactly 0 in a dead group
    m = mask.to(rewards.dtype)
    g = discounted_returns(rewards, mask, 1.0) + (centred - scores)[:, None] * m  # sum_{k>=t} r_k - b_g
    return whiten(g, mask), None


def compute_advantages(
    name: str,
    *,
    rewards: torch.Tensor,
    mask: torch.Tensor,
    values: torch.Tensor | None = None,
    group_ids: torch.Tensor | None = None,
    gamma: float = 1.0,
    lam: float = 1.0,
    eps: float = 1e-6,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Token-level advantages and returns by estimator name.

    Args:
        name: a registered estimator (see :func:`list_estimators`).
        rewards: (B, T) float.
        mask: (B, T) 0/1.
        values: (B, T) critic values (needed by ``"gae"``).
        group_ids: (B,) group ids (needed by ``"grpo"``, ``"dr_grpo"``, ``"rloo"``, ``"reinforce_pp_baseline"``).
        gamma, lam: discount and GAE lambda, each in [0, 1].
        eps: the std offset of ``"grpo"``.

    Returns:
        ``(advantages, returns)``. ``advantages`` is (B, T), 0 where ``mask`` is 0. ``returns`` is
        the critic's (B, T) regression target from an estimator that uses a critic (``"gae"``:
        advantages + values), and None from every critic-free estimator (``"grpo"``,
        ``"dr_grpo"``, ``"rloo"``, ``"reinforce"``, ``"reinforce_pp"``, ``"reinforce_pp_baseline"``):
        nothing there reads it;
        a trainer that fits a critic alongside computes :func:`discounted_returns` itself.
    """
    check_choice("advantage estimator", name, ESTIMATORS)
    return ESTIMATORS[name](
        rewards=rewards, mask=mask, values=values, group_ids=group_ids, gamma=gamma, lam=lam, eps=eps
    )
