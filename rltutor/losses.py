"""Policy losses (PPO clip, dual clip, GSPO, GMPO, CISPO, REINFORCE), the value loss, KL estimators,
and the one masked aggregation they all go through.

Chapters: *PPO* (02), *GRPO* (03), *the GRPO family* (10).

Conventions: token-level tensors are ``(B, T)`` with a 0/1 ``mask`` of the tokens that count;
``logp`` is log pi_theta(o_t | ...) of the *current* policy (with grad), ``old_logp`` the same under
the policy that sampled the batch (no grad), ``advantages`` are per token. The probability ratio is

    rho_t = pi_theta(o_t) / pi_old(o_t) = exp(logp_t - old_logp_t).

Every loss is a value to *minimize*, so each is the negative of the paper's objective.

Policy losses are registered by name in :data:`POLICY_LOSSES`; :func:`policy_loss` dispatches on
``kind``. With ``agg=None`` a loss returns its unreduced (B, T) matrix, zero where the mask is 0,
so a notebook can show what each token contributes.

References

* PPO: Schulman et al., *Proximal Policy Optimization Algorithms*, arXiv:1707.06347 (2017), eq. 7.
* Dual clip: Ye et al., *Mastering Complex Control in MOBA Games with Deep RL*, arXiv:1912.09729
  (2019), eq. 5; verl ``compute_policy_loss`` (``clip_ratio_c``).
* DAPO (clip-higher, token-mean): Yu et al., arXiv:2503.14476 (2025), eq. 8-10.
* Dr.GRPO (constant normalizer): Liu et al., arXiv:2503.20783 (2025).
* GSPO: Zheng et al., *Group Sequence Policy Optimization*, arXiv:2507.18071 (2025), eq. 7 and the
  token-level variant GSPO-token, eq. 13-14; verl ``compute_policy_loss_gspo``.
* GMPO: Zhao et al., *Geometric-Mean Policy Optimization*, arXiv:2507.20673 (2025), eq. 4 and its
  reference code (sign-aware clipping in log space).
* CISPO: MiniMax, *MiniMax-M1*, arXiv:2506.13585 (2025), eq. 4-5.
* KL estimators k1, k2, k3: J. Schulman, *Approximating KL Divergence* (2020 blog note);
  k3 is the estimator of DeepSeekMath eq. 4. Their gradients as losses: Tang & Munos, *On a Few
  Pitfalls in KL Divergence Gradient Estimation for RL*, arXiv:2506.09477 (2025).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from rltutor.utils import check_choice, check_mask, check_same_dtype, check_same_shape, check_tensor, register_in

__all__ = [
    "masked_mean",
    "aggregate",
    "policy_loss",
    "value_loss",
    "kl_penalty",
    "register_policy_loss",
    "list_policy_losses",
    "POLICY_LOSSES",
    "AGG_MODES",
    "KL_KINDS",
    "K3_MAX_LOG_RATIO",
]

AGG_MODES = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm")
KL_KINDS = ("k1", "k2", "k3")
K3_MAX_LOG_RATIO = 20.0
"""k3 clamps log(pi_ref / pi) to this before exp (10 in float16); see :func:`kl_penalty`."""


def _check_float(name: str, t) -> torch.Tensor:
    check_tensor(name, t, ndim=2)
    if not t.is_floating_point():
        raise ValueError(f"{name} must be a floating tensor of shape (B, T), got dtype {t.dtype}")
    return t


def _check_number(name: str, x, low: float, high: float = math.inf) -> float:
    """``x`` must be a real number in [low, high]: not a bool, not NaN, not inf."""
    if isinstance(x, bool) or not isinstance(x, int | float) or not (math.isfinite(x) and low <= x <= high):
        span = f"in [{low:g}, {high:g}]" if high < math.inf else f">= {low:g}"
        raise ValueError(f"{name} must be a finite number {span}, got {x!r}")
    return float(x)


# ----------------------------------------------------------------------------------------------
# The one masked reduction
# ----------------------------------------------------------------------------------------------


def masked_mean(x: torch.Tensor, mask: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """Mean of ``x`` over the entries where ``mask`` is 1.

    With ``dim=None`` the mean is over all valid entries (a mask with none raises). With a
    ``dim``, each slice is averaged over its own valid entries; a slice with none gives 0.
    Masked entries do not matter, even NaN or inf (they are selected away, not multiplied by 0).
    """
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise ValueError(f"x must be a floating torch.Tensor, got {getattr(x, 'dtype', type(x).__name__)}")
    check_mask(mask, like=x)
    return _masked_mean(x, mask.to(x.dtype), dim)


def _masked_mean(x: torch.Tensor, m: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """:func:`masked_mean` on a float mask already checked (the trainer's hot path)."""
    x = torch.where(m > 0, x, 0.0)  # not x * m: NaN * 0 is NaN
    if dim is None:
        n = m.sum()
        if n == 0:
            raise ValueError(
                "masked_mean over an all-zero mask: there is nothing to average; "
                "check that the batch contains valid tokens"
            )
        return x.sum() / n
    return x.sum(dim) / m.sum(dim).clamp(min=1.0)


def aggregate(
    loss_mat: torch.Tensor,
    mask: torch.Tensor,
    mode: str = "token-mean",
    norm: float | None = None,
    row_weight: torch.Tensor | None = None,
) -> torch.Tensor:
    """Reduce a (B, T) per-token loss to a scalar. The modes differ only in the normalizer.

    With L_{i,t} the loss of token t of row i, m_{i,t} the mask, ``|o_i|`` = sum_t m_{i,t} and B' the
    number of rows with at least one valid token:

    * ``"token-mean"``:              sum_{i,t} m L / sum_i ``|o_i|``   (DAPO: every token weighs the same)
    * ``"seq-mean-token-mean"``:     (1/B') sum_i (1/``|o_i|``) sum_t m L   (GRPO as in DeepSeekMath)
    * ``"seq-mean-token-sum"``:      (1/B') sum_i sum_t m L
    * ``"seq-mean-token-sum-norm"``: (1/B') sum_i (1/norm) sum_t m L, with ``norm`` a constant,
      by default the padded length T (Dr.GRPO: no 1/``|o_i|``, so no length bias).

    Under ``"seq-mean-token-mean"`` a long response's tokens each get weight 1/``|o_i|``: a long wrong
    answer is penalized less per token than a short one (the length bias of the Dr.GRPO paper).
    verl's original ``seq-mean-token-sum-norm`` sums over rows instead of averaging; that differs
    by the constant factor B.

    ``row_weight`` (B,), when given, says how much each row counts: (1/B') sum_i w_i l_i, with l_i the row's
    token mean (``"token-mean"`` and ``"seq-mean-token-mean"`` alike: the weights replace token-mean's own
    weighting of rows by their length), token sum or token sum / ``norm``. The weights are used as given, never
    renormalised here: normalise them once over the whole batch (mean 1, as
    :func:`rltutor.rollout.compaction.episode_row_weight` does, so that every episode counts once), and a
    minibatch's loss is then an unbiased part of the batch's. None (the default) changes nothing.

    ``loss_mat`` must be a floating (B, T) tensor and ``mask`` a 0/1 tensor of its shape. Masked
    entries do not matter, whatever they hold, NaN and inf included: they are selected away with
    ``torch.where`` (multiplying by the mask would turn a masked NaN into a NaN loss), and their
    gradient is 0. A NaN or inf at a *valid* entry raises, naming the first one.
    """
    check_choice("aggregation mode", mode, AGG_MODES)
    if not isinstance(loss_mat, torch.Tensor) or loss_mat.dim() != 2:
        raise ValueError(
            "loss_mat must be a (B, T) torch.Tensor, got "
            f"{type(loss_mat).__name__} of shape {tuple(getattr(loss_mat, 'shape', ()))}; "
            "give one loss per token (reshape a flat loss to (B, T))"
        )
    if not loss_mat.is_floating_point():
        raise ValueError(f"loss_mat must be a floating tensor, got dtype {loss_mat.dtype}; use .float()")
    check_mask(mask, like=loss_mat)
    if norm is not None:
        if isinstance(norm, bool) or not isinstance(norm, int | float) or not 0.0 < norm < math.inf:
            raise ValueError(f"norm must be a finite number > 0 (a token count such as T), got {norm!r}")
    if row_weight is not None:
        _check_row_weight(row_weight, loss_mat)
    valid = mask.bool()
    if not torch.isfinite(torch.where(valid, loss_mat.detach(), 0.0)).all():
        bad = (valid & ~torch.isfinite(loss_mat.detach())).nonzero()[0].tolist()
        raise ValueError(
            f"loss_mat holds NaN or inf at a valid (mask 1) entry, first at {bad}; check the "
            "upstream loss (masked entries may hold anything)"
        )
    return _aggregate(loss_mat, mask.to(loss_mat.dtype), mode, norm, row_weight)


def _check_row_weight(row_weight, like: torch.Tensor) -> None:
    """``row_weight`` must be a finite, non-negative floating (B,) tensor for the (B, T) ``like``."""
    if not isinstance(row_weight, torch.Tensor) or row_weight.shape != like.shape[:1]:
        raise ValueError(
            f"row_weight must be a (B,) torch.Tensor with B = {like.shape[0]} rows, got "
            f"{type(row_weight).__name__} of shape {tuple(getattr(row_weight, 'shape', ()))}; one weight per row"
        )
    if not row_weight.is_floating_point() or not torch.isfinite(row_weight).all() or (row_weight < 0).any():
        raise ValueError(
            "row_weight must hold finite floats >= 0 (e.g. rltutor.rollout.compaction.episode_row_weight), "
            f"got dtype {row_weight.dtype}, min {row_weight.min().item() if row_weight.numel() else 'n/a'}"
        )


def _aggregate(
    loss_mat: torch.Tensor,
    m: torch.Tensor,
    mode: str,
    norm: float | None = None,
    row_weight: torch.Tensor | None = None,
) -> torch.Tensor:
    """:func:`aggregate` on inputs already checked, with ``m`` a float mask."""
    if mode == "token-mean" and row_weight is None:
        return _masked_mean(loss_mat, m)
    lengths = m.sum(dim=-1)  # |o_i|
    rows = lengths > 0
    seq_sum = torch.where(m > 0, loss_mat, 0.0).sum(dim=-1)  # sum_t m L, (B,); where: a masked NaN stays out
    if mode in ("seq-mean-token-mean", "token-mean"):  # token-mean reaches here only with row weights
        per_seq = seq_sum / lengths.clamp(min=1.0)
    elif mode == "seq-mean-token-sum":
        per_seq = seq_sum
    else:
        per_seq = seq_sum / (float(loss_mat.shape[-1]) if norm is None else float(norm))
    n_rows = rows.sum()
    if n_rows == 0:
        raise ValueError("aggregate over an all-zero mask: no row has a valid token")
    if row_weight is not None:
        per_seq = per_seq * row_weight.to(per_seq.dtype)  # w_i l_i: the batch-wide weight, not renormalised
    return (per_seq * rows).sum() / n_rows


# ----------------------------------------------------------------------------------------------
# Policy losses
# ----------------------------------------------------------------------------------------------

PolicyLossFn = Callable[..., tuple[torch.Tensor, torch.Tensor, torch.Tensor]]
POLICY_LOSSES: dict[str, PolicyLossFn] = {}
"""The registry of policy losses by name (:func:`register_policy_loss` adds one)."""


def register_policy_loss(name: str) -> Callable[[PolicyLossFn], PolicyLossFn]:
    """Register ``fn(logp, old_logp, advantages, mask, clip_low, clip_high, dual_clip)``.

    The function returns ``(loss_mat, clipped, per_seq)``: the (B, T) per-token loss (zero where
    masked), a (B, T) bool tensor of the tokens where clipping was active, and either None (the
    loss is aggregated with ``agg``) or a (B,) per-sequence loss (a sequence-level objective such
    as GMPO, which is averaged over sequences whatever ``agg`` says).
    """
    return register_in(POLICY_LOSSES, name, "a policy loss named")


def list_policy_losses() -> list[str]:
    """The registered policy-loss names, sorted."""
    return sorted(POLICY_LOSSES)


@register_policy_loss("ppo")
def _ppo(logp, old_logp, advantages, mask, clip_low, clip_high, dual_clip):
    """-min(rho A, clip(rho, 1 - eps_low, 1 + eps_high) A); dual clip caps A < 0 tokens at -c A."""
    ratio = torch.exp(logp - old_logp)  # rho_t
    pg1 = -advantages * ratio
    pg2 = -advantages * torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high)
    loss = torch.maximum(pg1, pg2)  # = -min(rho A, clip(rho) A)
    clipped = pg2 > pg1
    if dual_clip is not None:
        pg3 = -advantages * dual_clip  # the cap -c A (positive when A < 0)
        capped = torch.minimum(loss, pg3)
        clipped = clipped | ((advantages < 0) & (loss > pg3))
        loss = torch.where(advantages < 0, capped, loss)
    return loss, clipped, None


@register_policy_loss("gspo")
def _gspo(logp, old_logp, advantages, mask, clip_low, clip_high, dual_clip):
    """GSPO-token: s_{i,t} = sg(s_i) * pi_t / sg(pi_t), s_i = exp(mean_t (logp - old_logp))."""
    m = mask.to(logp.dtype)
    lengths = m.sum(-1).clamp(min=1.0)  # |o_i|
    log_s = ((logp - old_logp) * m).sum(-1) / lengths  # log s_i = (1/|o_i|) sum_t log rho_t
    # The value of s_{i,t} is s_i; its gradient is s_i * grad log pi_t (GSPO eq. 14).
    log_sit = log_s.detach()[:, None] + logp - logp.detach()
    s_it = torch.exp(log_sit)
    pg1 = -advantages * s_it
    pg2 = -advantages * torch.clamp(s_it, 1.0 - clip_low, 1.0 + clip_high)
    return torch.maximum(pg1, pg2), pg2 > pg1, None


@register_policy_loss("gmpo")
def _gmpo(logp, old_logp, advantages, mask, clip_low, clip_high, dual_clip):
    """GMPO: geometric mean of sign-aware clipped token ratios, times the sequence's advantage."""
    m = mask.to(logp.dtype)
    lengths = m.sum(-1).clamp(min=1.0)
    log_ratio = logp - old_logp  # log rho_t
    sign = torch.sign(advantages)
    log_ratio_clip = torch.clamp(log_ratio, -clip_low, clip_high)  # clip in log space
    # Pessimistic in the advantage's direction, like PPO's min: sgn(A) * min(sgn(A) x, sgn(A) clip(x)).
    log_ratio_min = sign * torch.minimum(sign * log_ratio, sign * log_ratio_clip)
    # A token with A = 0 (sign 0, a dead group) gets log_ratio_min = 0 whatever its ratio: that is the
    # advantage zeroing it, not a clip, so it is not counted as clipped (PPO's and GSPO's pg2 > pg1 agree).
    clipped = (log_ratio_min != log_ratio) & mask.bool() & (sign != 0)
    seq_ratio = torch.exp((log_ratio_min * m).sum(-1) / lengths)  # (prod_t rho_t)^(1/|o_i|)
    seq_adv = (advantages * m).sum(-1) / lengths  # the sequence's (mean) advantage
    per_seq = -seq_adv * seq_ratio  # (B,)
    loss_mat = (per_seq / lengths)[:, None] * m  # spread so that each row sums to its loss
    return loss_mat, clipped, per_seq


@register_policy_loss("cispo")
def _cispo(logp, old_logp, advantages, mask, clip_low, clip_high, dual_clip):
    """CISPO: -sg(clip(rho, 1 - eps_low, 1 + eps_high)) A log pi: every token keeps a gradient."""
    ratio = torch.exp(logp - old_logp)
    w = torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high).detach()  # clipped IS weight, no grad
    clipped = (ratio < 1.0 - clip_low) | (ratio > 1.0 + clip_high)
    return -w * advantages * logp, clipped, None


@register_policy_loss("reinforce")
def _reinforce(logp, old_logp, advantages, mask, clip_low, clip_high, dual_clip):
    """Vanilla policy gradient: -A log pi (on-policy; no ratio, no clipping)."""
    return -advantages * logp, torch.zeros_like(mask, dtype=torch.bool), None


def policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    kind: str = "ppo",
    clip_low: float = 0.2,
    clip_high: float = 0.2,
    dual_clip: float | None = None,
    agg: str | None = "token-mean",
    row_weight: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """A clipped (or plain) policy-gradient loss by name.

    Kinds (see the module docstring for references):

    * ``"ppo"``: -min(rho A, clip(rho, 1 - clip_low, 1 + clip_high) A). With ``dual_clip=c`` (c > 1)
      a token with A < 0 has its loss capped at -c A. DAPO's clip-higher is ppo with
      ``clip_high=0.28`` and ``agg="token-mean"``.
    * ``"gspo"``: the sequence ratio s_i = exp(mean_t (logp - old_logp)) applied per token as
      sg(s_i) * pi / sg(pi), clipped to [1 - clip_low, 1 + clip_high] (GSPO uses ~3e-4 / 4e-4).
    * ``"gmpo"``: log-ratios clipped sign-aware to [-clip_low, clip_high] in log space, the
      geometric mean of the token ratios per sequence times the sequence's mean advantage, mean
      over sequences (``agg`` other than None is ignored; GMPO uses clip 0.4 in log space).
    * ``"cispo"``: -sg(clip(rho, 1 - clip_low, 1 + clip_high)) A log pi.
    * ``"reinforce"``: -A log pi.

    Args:
        logp, old_logp, advantages, mask: (B, T).
        kind: a registered loss (:func:`list_policy_losses`).
        clip_low, clip_high: epsilon below / above 1 (log-space bounds for gmpo).
        dual_clip: None or c > 1 (``"ppo"`` only).
        agg: an aggregation mode of :func:`aggregate`, or None for the (B, T) matrix.
        row_weight: None, or (B,) per-row weights for :func:`aggregate` (a sequence-level loss such as GMPO
            then takes the weighted mean over sequences, (1/B') sum_i w_i l_i).

    Returns:
        ``(loss, stats)``. ``stats`` holds floats: ``clip_frac`` (fraction of valid tokens where
        clipping was active), ``approx_kl`` (mean over valid tokens of (rho - 1) - log rho, the k3
        estimate of KL(pi_old || pi_theta), >= 0), ``ratio_mean``, ``ratio_max``.
    """
    for name, t in (("logp", logp), ("old_logp", old_logp), ("advantages", advantages)):
        _check_float(name, t)
    check_same_shape(logp=logp, old_logp=old_logp, advantages=advantages)
    check_same_dtype(logp=logp, old_logp=old_logp, advantages=advantages)  # as the estimators: one dtype
    check_mask(mask, like=logp)
    if logp.numel() == 0:
        raise ValueError(
            f"policy_loss got an empty batch (shape {tuple(logp.shape)}); give at least one row with a valid token"
        )
    check_choice("policy loss kind", kind, POLICY_LOSSES)
    if agg is not None:
        check_choice("aggregation mode", agg, AGG_MODES)
    if row_weight is not None:
        _check_row_weight(row_weight, logp)
    # NaN fails every comparison, so a plain `clip_low < 0` test would let it through and clamp()
    # would then silently produce NaN losses: each bound must be a finite, non-bool number.
    clip_low = _check_number("clip_low", clip_low, 0.0, 1.0 if kind != "gmpo" else math.inf)  # 1: no lower bound
    clip_high = _check_number("clip_high", clip_high, 0.0)
    if dual_clip is not None:
        if kind != "ppo":
            raise ValueError(f"dual_clip applies to kind='ppo' only, got kind={kind!r}")
        if isinstance(dual_clip, bool) or not isinstance(dual_clip, int | float) or not 1.0 < dual_clip < math.inf:
            raise ValueError(f"dual_clip must be > 1 and finite (e.g. 3.0), got {dual_clip!r}")

    # Masked positions may hold anything finite (padding): zero them first so that no large value
    # there can overflow exp() and leak NaN into the loss or its gradient.
    valid = mask.bool()
    logp = torch.where(valid, logp, 0.0)
    old_logp = torch.where(valid, old_logp, 0.0)
    advantages = torch.where(valid, advantages, 0.0)
    loss_mat, clipped, per_seq = POLICY_LOSSES[kind](logp, old_logp, advantages, mask, clip_low, clip_high, dual_clip)
    m = mask.to(logp.dtype)
    loss_mat = torch.where(valid, loss_mat, 0.0)

    with torch.no_grad():
        # Masked entries of the log-ratio are 0 (ratio 1), so plain masked sums are exact; one
        # .tolist() moves all four numbers to Python with a single device sync.
        n = m.sum().clamp(min=1.0)
        log_ratio = (logp - old_logp).detach()
        ratio = torch.exp(log_ratio)
        stats = dict(
            zip(
                ("clip_frac", "approx_kl", "ratio_mean", "ratio_max"),
                torch.stack(
                    [
                        (clipped & valid).sum() / n,
                        ((ratio - 1.0) - log_ratio).sum() / n,  # k3: (rho - 1) - log rho >= 0
                        (ratio * m).sum() / n,
                        torch.where(valid, ratio, 0.0).max(),  # 0 when no token is valid
                    ]
                ).tolist(),
                strict=True,
            )
        )

    if agg is None:
        loss = loss_mat
    elif per_seq is not None:
        rows = m.sum(-1) > 0
        if not rows.any():
            raise ValueError("policy_loss over an all-zero mask: no row has a valid token")
        loss = per_seq[rows].mean() if row_weight is None else (per_seq * row_weight)[rows].mean()
    else:
        loss = _aggregate(loss_mat, m, agg, row_weight=row_weight)
    if not torch.isfinite(loss.detach()).all() and math.isfinite(stats["ratio_max"]):
        # Finite inputs, finite ratios, yet an infinite loss: the advantages are too large for the dtype.
        a = advantages.detach().abs().max().item()
        raise ValueError(
            f"policy_loss overflows {logp.dtype}: advantages up to {a:.3g} in magnitude times ratios up to "
            f"{stats['ratio_max']:.3g} exceed what it can hold; whiten or rescale the advantages"
        )
    return loss, stats


# ----------------------------------------------------------------------------------------------
# Value loss and KL
# ----------------------------------------------------------------------------------------------


def value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    mask: torch.Tensor,
    clip: float | None = None,
    agg: str | None = "token-mean",
) -> torch.Tensor:
    """Critic regression loss: 1/2 (V - R)^2, or with ``clip`` set (PPO value clipping)

        1/2 max((V - R)^2, (V_clip - R)^2),  V_clip = V_old + clip(V - V_old, -clip, clip).

    Args:
        values: (B, T) current predictions V_phi(s_t) (with grad).
        old_values: (B, T) predictions at collection time (used only when ``clip`` is set).
        returns: (B, T) targets R_t (e.g. GAE returns).
        mask: (B, T) 0/1.
        clip: None or the clip range (> 0).
        agg: an aggregation mode, or None for the (B, T) matrix (zero where masked).

    Returns:
        The aggregated loss (a scalar tensor), or the (B, T) matrix when ``agg`` is None.
    """
    for name, t in (("values", values), ("old_values", old_values), ("returns", returns)):
        _check_float(name, t)
    check_same_shape(values=values, old_values=old_values, returns=returns)
    check_mask(mask, like=values)
    if clip is not None and not clip > 0:
        raise ValueError(f"value clip must be > 0 or None, got {clip!r}")
    valid = mask.bool()
    values = torch.where(valid, values, 0.0)
    old_values = torch.where(valid, old_values, 0.0)
    returns = torch.where(valid, returns, 0.0)
    loss_mat = 0.5 * (values - returns) ** 2
    if clip is not None:
        v_clip = old_values + torch.clamp(values - old_values, -clip, clip)
        loss_mat = torch.maximum(loss_mat, 0.5 * (v_clip - returns) ** 2)
    if agg is None:
        return loss_mat
    check_choice("aggregation mode", agg, AGG_MODES)
    return _aggregate(loss_mat, mask.to(values.dtype), agg)


def kl_penalty(logp: torch.Tensor, ref_logp: torch.Tensor, kind: str = "k3") -> torch.Tensor:
    """Per-token KL estimators k1, k2, k3 between pi_theta and pi_ref, at tokens sampled from pi_theta.

    With r = pi_ref(o_t) / pi_theta(o_t) at the sampled token, log r = ``ref_logp - logp``:

    * ``"k1"``: log(pi_theta / pi_ref) = -log r.
    * ``"k2"``: 1/2 (log r)^2, >= 0.
    * ``"k3"``: (r - 1) - log r, >= 0 (the estimator of DeepSeekMath eq. 4).

    Two different uses, two different answers (Tang & Munos 2025, arXiv:2506.09477):

    1. **As an estimate of the value** KL(pi_theta || pi_ref) = E_{o ~ pi_theta}[log(pi_theta / pi_ref)]
       (for logging, or as a penalty subtracted from the reward): k1 and k3 are unbiased (k3 adds
       r - 1, whose mean under pi_theta is 0, which makes every sample >= 0 and lowers the variance);
       k2 is biased (close to the KL only when the two policies are close).
    2. **As a loss** added to the objective and differentiated through ``logp`` at the sampled
       tokens (the sampling itself is not differentiated), the *expected gradient* on-policy is
       sum_o pi(o) grad k(o) = E[g(o) grad log pi_theta(o)] with g the factor below:

       * k1: g = 1, and E[grad log pi_theta] = sum_o grad pi_theta(o) = 0. No gradient at all on
         average: k1 in the loss only adds noise.
       * k2: g = log(pi_theta / pi_ref), the expected gradient is grad KL(pi_theta || pi_ref): the
         reverse KL, usually the one intended.
       * k3: g = 1 - r, the expected gradient is sum_o (pi_theta - pi_ref)(o) grad log pi_theta(o)
         = grad KL(pi_ref || pi_theta): the gradient of the *forward* KL, not of the KL whose value
         k3 estimates. GRPO's k3-in-the-loss thus pulls toward covering pi_ref's mass.

       Two more caveats. A per-token loss sum_t k(o_t) differentiates each token's own term only:
       it misses how o_t changes the distributions of the later tokens, which the gradient of the
       sequence-level KL includes (future log-ratios weighting grad log pi_theta(o_t)). Off-policy
       (tokens sampled by pi_old, as after the first PPO epoch) each term also needs the importance
       weight pi_theta / pi_old. ``tests/test_losses.py`` checks the three expected gradients
       exactly on a small categorical distribution.

    k3 is computed with log r clamped to at most :data:`K3_MAX_LOG_RATIO` (20; 10 in float16, whose
    largest number is 65504) before exp, so finite log-probabilities never give inf (unclamped,
    float32 overflows once pi_ref / pi_theta > e^88, and the trainer's ``kl * mask`` would turn that
    inf into NaN). Beyond the cap the value stays at e^20 - 21 ~ 4.9e8 and the token's gradient is 0;
    k3 is then biased, but only by tokens pi_theta gives less than e^-20 of pi_ref's probability.

    Elementwise on (B, T); mask it with :func:`aggregate`.
    """
    _check_float("logp", logp)
    _check_float("ref_logp", ref_logp)
    check_same_shape(logp=logp, ref_logp=ref_logp)
    check_choice("KL estimator", kind, KL_KINDS)
    if kind == "k1":
        return logp - ref_logp  # -log r
    if kind == "k2":
        return 0.5 * (logp - ref_logp) ** 2  # 1/2 (log r)^2
    cap = K3_MAX_LOG_RATIO if logp.dtype != torch.float16 else 10.0
    x = (ref_logp - logp).clamp(max=cap)  # log r, capped so that exp cannot overflow
    return torch.exp(x) - x - 1.0  # (r - 1) - log r
