"""Advantage estimators: returns, GAE, group-relative baselines (GRPO, Dr.GRPO, RLOO), whitening.

Chapters: *Policy gradients and baselines* (01), *PPO* (02), *GRPO* (03), *Variance vs horizon* (04).

Conventions (see ``notes/CONTRACT.md``):

* Token-level tensors are ``(B, T)``: ``B`` rows (episodes, episode fragments or completions) of
  ``T`` steps. ``mask`` is 1 where a step counts (a valid response token) and 0 elsewhere.
* Outcome rewards sit on the last valid token of a row.
* Every function is pure: tensors in, new tensors out, inputs never edited in place.
* Nothing here whitens its output unless its name says so (:func:`whiten`, ``"reinforce_pp"``).

The estimators are registered by name in :data:`ESTIMATORS` so the trainer, a notebook widget or
the command line picks one with a string::

    adv, ret = compute_advantages("gae", rewards=r, mask=m, values=v, gamma=1.0, lam=0.95)
    adv, ret = compute_advantages("grpo", rewards=r, mask=m, group_ids=g)

References

* GAE: Schulman et al., *High-Dimensional Continuous Control Using Generalized Advantage
  Estimation*, arXiv:1506.02438 (2015), eq. 16. The loop mirrors CleanRL's ``ppo.py``
  (``delta``, ``lastgaelam``) and verl's ``compute_gae_advantage_return``.
* GRPO: Shao et al., *DeepSeekMath*, arXiv:2402.03300 (2024), sec. 4.1.2 (outcome supervision):
  A_i = (r_i - mean(r)) / std(r), shared by every token of response i.
* Dr.GRPO: Liu et al., *Understanding R1-Zero-Like Training: A Critical Perspective*,
  arXiv:2503.20783 (2025): drop the std division (and the 1/|o| length normalization, see
  :func:`rltutor.losses.aggregate`).
* RLOO: Ahmadian et al., *Back to Basics: Revisiting REINFORCE Style Optimization for Learning
  from Human Feedback in LLMs*, arXiv:2402.14740 (2024): baseline = mean reward of the other
  k - 1 samples.
* REINFORCE++: Hu, *REINFORCE++: A Simple and Efficient Approach for Aligning Large Language
  Models*, arXiv:2501.03262 (2025): token-level return-to-go, normalized over the global batch.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from rltutor.utils import check_choice, check_mask, check_same_shape, check_tensor, register_in

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
]

GROUP_METHODS = ("grpo", "dr_grpo", "rloo")


# ----------------------------------------------------------------------------------------------
# Input checks
# ----------------------------------------------------------------------------------------------


def _check_discount(name: str, x: float) -> float:
    if not isinstance(x, int | float) or not (0.0 <= float(x) <= 1.0):
        raise ValueError(f"{name} must be a number in [0, 1], got {x!r}")
    return float(x)


def _check_token_inputs(mask: torch.Tensor, **tensors: torch.Tensor) -> torch.Tensor:
    """Check (B, T) float tensors and their mask; return the mask as a bool tensor."""
    for name, t in tensors.items():
        check_tensor(name, t, ndim=2)
        if not t.is_floating_point():
            raise ValueError(f"{name} must be a floating tensor, got dtype {t.dtype}; use .float()")
    first = next(iter(tensors.values()))
    check_mask(mask, like=first)
    check_same_shape(**tensors)
    return mask.bool()


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
    return advantages, returns


# ----------------------------------------------------------------------------------------------
# Group-relative baselines: GRPO, Dr.GRPO, RLOO
# ----------------------------------------------------------------------------------------------


def group_advantages(
    scores: torch.Tensor,
    group_ids: torch.Tensor,
    method: str = "grpo",
    eps: float = 1e-6,
) -> torch.Tensor:
    """One advantage per response, relative to the other responses to the same prompt.

    For response i in group g with n_g members, scores s:

    * ``"grpo"``:    A_i = (s_i - mean_g) / (std_g + eps), std with Bessel's correction (n_g - 1),
      as in DeepSeekMath and TRL's ``GRPOTrainer`` (``torch.std`` is unbiased by default).
    * ``"dr_grpo"``: A_i = s_i - mean_g (Dr.GRPO: no std division, so no difficulty bias).
    * ``"rloo"``:    A_i = s_i - mean of the *other* n_g - 1 scores = n_g / (n_g - 1) (s_i - mean_g).

    Members of a group need not be adjacent in the batch. A group whose scores are all equal gets
    advantage 0 for every member under all three methods (no learning signal; see the
    "zero-std fraction" in the GRPO chapter).

    Args:
        scores: (B,) float, one scalar reward per response.
        group_ids: (B,) integer ids; responses to the same prompt share an id.
        method: one of ``"grpo"``, ``"dr_grpo"``, ``"rloo"``.
        eps: added to the std before dividing (``"grpo"`` only).

    Returns:
        (B,) advantages.
    """
    check_tensor("scores", scores, ndim=1)
    if not scores.is_floating_point():
        raise ValueError(f"scores must be a floating tensor, got dtype {scores.dtype}; use .float()")
    if not isinstance(group_ids, torch.Tensor) or group_ids.dim() != 1:
        raise ValueError("group_ids must be a 1-D integer torch.Tensor of shape (B,), got "
                         f"{type(group_ids).__name__} {tuple(getattr(group_ids, 'shape', ()))}")
    if group_ids.is_floating_point() or group_ids.dtype == torch.bool:
        raise ValueError(f"group_ids must be integers, got dtype {group_ids.dtype}; use .long()")
    if group_ids.shape != scores.shape:
        raise ValueError(f"group_ids has shape {tuple(group_ids.shape)} but scores has shape "
                         f"{tuple(scores.shape)}; give one group id per response")
    check_choice("group method", method, GROUP_METHODS)
    if not eps >= 0:
        raise ValueError(f"eps must be >= 0, got {eps!r}")

    _, inv, counts = torch.unique(group_ids, return_inverse=True, return_counts=True)
    if (counts < 2).any():
        lonely = torch.unique(group_ids)[counts < 2][:5].tolist()
        raise ValueError(f"groups {lonely} have a single member; a group-relative baseline needs at "
                         "least 2 responses per prompt (group size G >= 2)")
    n = counts.to(scores.dtype)  # (n_groups,)
    total = scores.new_zeros(len(counts)).index_add(0, inv, scores)  # sum of scores per group
    mean = total / n  # mean_g
    centred = scores - mean[inv]  # s_i - mean_g
    if method == "dr_grpo":
        return centred
    if method == "rloo":
        # s_i - (sum_g - s_i) / (n_g - 1)  ==  n_g / (n_g - 1) * (s_i - mean_g)
        return scores - (total[inv] - scores) / (n[inv] - 1)
    var = scores.new_zeros(len(counts)).index_add(0, inv, centred**2) / (n - 1)  # Bessel
    std = var.sqrt()
    return centred / (std[inv] + eps)


def dead_groups(scores: torch.Tensor, group_ids: torch.Tensor, tol: float = 1e-8):
    """Which groups have all-equal scores, so every group-relative advantage in them is 0.

    Returns ``(dead, inv, counts)``: ``dead`` (n_groups,) bool over the distinct ids in sorted order,
    ``inv`` (B,) the group index of each row and ``counts`` (n_groups,) the group sizes (as
    ``torch.unique(..., return_inverse=True, return_counts=True)``). Groups are dead when
    max - min of their scores is below ``tol``. The trainer's dynamic sampling drops them; the token
    collector's refill (``rltutor.lm.LMCollector(max_draws=...)``) replaces them.
    """
    _, inv, counts = torch.unique(group_ids, return_inverse=True, return_counts=True)
    g_max = torch.full((len(counts),), -math.inf, device=scores.device).scatter_reduce(0, inv, scores, "amax")
    g_min = torch.full((len(counts),), math.inf, device=scores.device).scatter_reduce(0, inv, scores, "amin")
    return (g_max - g_min).abs() < tol, inv, counts


def whiten(x: torch.Tensor, mask: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """Masked whitening: (x - mean) / sqrt(var + eps) over the valid entries of the whole tensor.

    The mean and the Bessel-corrected variance are taken over entries where ``mask`` is 1; the
    result has masked mean 0 and masked variance 1 (up to ``eps``), and is 0 where ``mask`` is 0.
    Unlike verl's ``compute_gae_advantage_return`` nothing calls this implicitly: the trainer's
    ``norm_adv`` option or the ``"reinforce_pp"`` estimator applies it, in plain sight.
    """
    check_tensor("x", x)
    if not x.is_floating_point():
        raise ValueError(f"x must be a floating tensor, got dtype {x.dtype}")
    check_mask(mask, like=x)
    m = mask.to(x.dtype)
    n = m.sum()
    if n < 2:
        raise ValueError(f"whiten needs at least 2 valid entries, got {int(n)}; check the mask")
    mean = (x * m).sum() / n
    var = (((x - mean) * m) ** 2).sum() / (n - 1)
    return (x - mean) * torch.rsqrt(var + eps) * m


# ----------------------------------------------------------------------------------------------
# The registry: one entry point for the trainer
# ----------------------------------------------------------------------------------------------

Estimator = Callable[..., tuple[torch.Tensor, torch.Tensor]]
ESTIMATORS: dict[str, Estimator] = {}


def register_estimator(name: str) -> Callable[[Estimator], Estimator]:
    """Register ``fn(*, rewards, mask, values, group_ids, gamma, lam, eps) -> (adv, returns)``."""
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
        raise ValueError("the 'gae' estimator needs critic values (B, T); turn the critic on "
                         "or pick a critic-free estimator such as 'grpo'")
    return gae(rewards, values, mask, gamma=gamma, lam=lam)


def _group_estimator(method: str) -> Estimator:
    def estimator(*, rewards, mask, values, group_ids, gamma, lam, eps):
        _check_token_inputs(mask, rewards=rewards)
        if group_ids is None:
            raise ValueError(f"the {method!r} estimator needs group_ids of shape (B,); collect "
                             "G >= 2 responses per prompt and pass their group ids")
        a = group_advantages(_row_scores(rewards, mask), group_ids, method=method, eps=eps)
        advantages = a[:, None] * mask.to(rewards.dtype)  # the same A_i on every token of row i
        return advantages, discounted_returns(rewards, mask, gamma)

    estimator.__name__ = f"_{method}_estimator"
    estimator.__doc__ = f"Outcome advantage by group_advantages(method={method!r}), broadcast to tokens."
    return estimator


for _method in GROUP_METHODS:
    register_estimator(_method)(_group_estimator(_method))


@register_estimator("reinforce")
def _reinforce_estimator(*, rewards, mask, values, group_ids, gamma, lam, eps):
    """Plain REINFORCE: the advantage is the discounted return-to-go, no baseline."""
    ret = discounted_returns(rewards, mask, gamma)
    return ret, ret


@register_estimator("reinforce_pp")
def _reinforce_pp_estimator(*, rewards, mask, values, group_ids, gamma, lam, eps):
    """REINFORCE++: token-level return-to-go whitened over the whole batch (Hu 2025).

    The per-token KL penalty of the paper enters through ``rewards`` (the trainer's
    ``kl_in_reward`` option); this function only computes returns and whitens them.
    """
    ret = discounted_returns(rewards, mask, gamma)
    return whiten(ret, mask), ret


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
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token-level advantages and returns by estimator name.

    Args:
        name: a registered estimator (see :func:`list_estimators`).
        rewards: (B, T) float.
        mask: (B, T) 0/1.
        values: (B, T) critic values (needed by ``"gae"``).
        group_ids: (B,) group ids (needed by ``"grpo"``, ``"dr_grpo"``, ``"rloo"``).
        gamma, lam: discount and GAE lambda, each in [0, 1].
        eps: the std offset of ``"grpo"``.

    Returns:
        ``(advantages, returns)``, both (B, T); advantages are 0 where ``mask`` is 0. ``returns``
        are the critic's regression targets (GAE returns, or discounted returns for the others).
    """
    check_choice("advantage estimator", name, ESTIMATORS)
    return ESTIMATORS[name](rewards=rewards, mask=mask, values=values, group_ids=group_ids,
                            gamma=gamma, lam=lam, eps=eps)
