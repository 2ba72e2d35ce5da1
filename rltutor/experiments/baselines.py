"""Chapter 1 (``notebooks/01_policy_gradients.ipynb``): REINFORCE, baselines, and their variance, measured.

The task is the smallest model of RL for language models, a *contextual bandit*: a prompt ``q`` is
one of ``P`` prompts, the policy answers with one of ``K`` one-token responses ``o``, and a verifier
scores the answer::

    r = Bernoulli(mu[q, o]) + offset + sigma * N(0, 1)

``mu[q, o]`` is the pass rate of answer ``o`` to prompt ``q`` (prompts differ in difficulty), ``offset``
shifts every reward (a reward model's arbitrary zero point), ``sigma`` adds verifier noise. The
policy is a table of logits ``theta`` of shape ``(P, K)``: ``pi_theta(o | q) = softmax(theta[q])_o``.

Because the task is tiny, the true gradient is known exactly, so every estimator can be checked
against it: its bias by the Monte Carlo mean over many batches, its variance by their spread::

    J(theta)           = (1/P) sum_q V(q),      V(q) = sum_o pi(o|q) mu'(q, o),   mu' = mu + offset
    dJ/dtheta[q, o]    = (1/P) pi(o|q) (mu'(q, o) - V(q))

One batch holds every prompt once with ``G`` sampled responses (``P * G`` rows). With the score
function ``grad_{theta[q]} log pi(o|q) = onehot(o) - pi(.|q)`` each estimator is::

    g_hat = 1/(P G) sum_{q, i} A_{q,i} (onehot(o_{q,i}) - pi(.|q))                       # (P, K)

and they differ only in the advantage ``A`` (names as in :data:`ESTIMATORS`):

==================== =========================================== ===========================
name                 A_{q,i}                                      E[g_hat]
==================== =========================================== ===========================
``reinforce``        r_{q,i}                                      grad J (unbiased)
``constant``         r_{q,i} - J(theta)   (one number for all)    grad J (unbiased)
``value``            r_{q,i} - V(q)  (a perfect critic)           grad J (unbiased)
``dr_grpo``          r_{q,i} - mean_j r_{q,j}                     (G-1)/G grad J (shrunk)
``grpo``             (r_{q,i} - mean_j r_{q,j}) / (std_j + eps)   not proportional in general
``rloo``             r_{q,i} - mean_{j != i} r_{q,j}              grad J (unbiased)
==================== =========================================== ===========================

``constant`` and ``value`` use the exact ``J`` and ``V`` (oracles a real trainer does not have; a
learned critic approximates ``V``, chapter 2). The group baselines are computed by
:func:`rltutor.advantages.group_advantages`. ``dr_grpo``'s shrinkage: the group mean contains
``r_i`` itself, so ``E[(r_i - mean) s_i] = (1 - 1/G) E[r_i s_i]``; RLOO's leave-one-out mean
removes exactly that, ``A_rloo = G/(G-1) A_dr_grpo``.

Everything returns plain records (dataclasses, DataFrames) for the notebook's plots and for
``tests/test_baselines.py``; nothing here plots.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import pandas as pd
import torch

from rltutor.advantages import group_advantages
from rltutor.utils import check_choice, resolve_scale

__all__ = [
    "ESTIMATORS",
    "UNBIASED",
    "BanditConfig",
    "Bandit",
    "GradientStudy",
    "make_bandit",
    "bandit_probs",
    "expected_reward",
    "bandit_gradient",
    "sample_batches",
    "bandit_advantages",
    "gradient_estimates",
    "measure_gradients",
    "sweep_param",
    "train_curves",
    "dead_group_fraction",
    "surrogate_loss_epochs",
    "scale_settings",
]

LAB_ESTIMATORS = ("constant", "value")  # this lab's own baselines: b = a constant, b = V(q) exactly
ESTIMATORS = ("reinforce", *LAB_ESTIMATORS, "dr_grpo", "grpo", "rloo")
"""Registry names (rltutor.advantages.list_estimators()) plus the lab's own baselines."""
"""Advantage choices, in the order the chapter introduces them."""

UNBIASED = ("reinforce", "constant", "value", "rloo")
"""Estimators whose expectation is exactly the true gradient."""

DTYPE = torch.float64  # exact gradients and tight Monte Carlo checks; the task is tiny anyway


@dataclass(frozen=True)
class BanditConfig:
    """The contextual bandit of chapter 1 and how it is sampled."""

    n_prompts: int = 8
    """P: prompts; every batch contains each prompt once."""
    n_responses: int = 6
    """K: possible one-token responses (arms) per prompt."""
    group_size: int = 8
    """G: responses sampled per prompt per batch (the GRPO group)."""
    noise_std: float = 0.5
    """sigma: std of the Gaussian verifier noise added to the 0/1 reward (0 = pure pass/fail)."""
    reward_offset: float = 0.0
    """A constant added to every reward; baselines remove it, plain REINFORCE does not."""
    logit_scale: float = 1.0
    """Initial logits theta ~ logit_scale * N(0, 1)."""
    seed: int = 0
    """Seeds the task (pass rates, initial logits); sampling takes its own seed."""

    def __post_init__(self):
        for name in ("n_prompts", "n_responses", "group_size", "seed"):
            v = getattr(self, name)
            if not isinstance(v, int | np.integer) or isinstance(v, bool):
                raise ValueError(f"{name} must be an integer, got {v!r}")
        if self.n_prompts < 1:
            raise ValueError(f"n_prompts must be >= 1, got {self.n_prompts}")
        if self.n_responses < 2:
            raise ValueError(f"n_responses must be >= 2 (a choice needs two options), got {self.n_responses}")
        if self.group_size < 2:
            raise ValueError(
                f"group_size must be >= 2, got {self.group_size}: a group baseline needs at "
                "least two responses per prompt (G >= 2)"
            )
        for name in ("noise_std", "reward_offset", "logit_scale"):
            v = getattr(self, name)
            if not isinstance(v, int | float | np.floating) or not math.isfinite(v):
                raise ValueError(f"{name} must be a finite number, got {v!r}")
        if self.noise_std < 0:
            raise ValueError(f"noise_std must be >= 0, got {self.noise_std}; it is a standard deviation")
        if self.logit_scale < 0:
            raise ValueError(f"logit_scale must be >= 0, got {self.logit_scale}")


@dataclass(frozen=True)
class Bandit:
    """The task's fixed tensors (built by :func:`make_bandit`)."""

    config: BanditConfig
    mu: torch.Tensor
    """(P, K) pass rates in [0, 1]."""
    theta0: torch.Tensor
    """(P, K) initial logits."""


def make_bandit(config: BanditConfig | None = None) -> Bandit:
    """Pass rates and initial logits for ``config`` (deterministic in ``config.seed``).

    Prompts get easier to harder: row q's pass rates are uniform draws scaled by a factor going from
    1 (easy prompt) down to 0.1 (hard prompt), so a per-prompt baseline has something to adapt to.
    """
    config = config or BanditConfig()
    gen = torch.Generator().manual_seed(int(config.seed))
    P, K = config.n_prompts, config.n_responses
    difficulty = torch.linspace(1.0, 0.1, P, dtype=DTYPE)[:, None]  # (P, 1)
    mu = torch.rand(P, K, generator=gen, dtype=DTYPE) * difficulty  # (P, K)
    theta0 = config.logit_scale * torch.randn(P, K, generator=gen, dtype=DTYPE)  # (P, K)
    return Bandit(config=config, mu=mu, theta0=theta0)


def bandit_probs(theta: torch.Tensor) -> torch.Tensor:
    """pi(o|q) = softmax(theta[q]); (P, K) -> (P, K) (any leading dims)."""
    return torch.softmax(theta, dim=-1)


def _mean_reward(bandit: Bandit) -> torch.Tensor:
    return bandit.mu + bandit.config.reward_offset  # mu'(q, o), (P, K)


def expected_reward(bandit: Bandit, theta: torch.Tensor) -> torch.Tensor:
    """J(theta) = (1/P) sum_q sum_o pi(o|q) mu'(q, o); theta (..., P, K) -> (...)."""
    V = (bandit_probs(theta) * _mean_reward(bandit)).sum(-1)  # V(q), (..., P)
    return V.mean(-1)


def bandit_gradient(bandit: Bandit, theta: torch.Tensor) -> torch.Tensor:
    """Exact dJ/dtheta[q, o] = (1/P) pi(o|q) (mu'(q, o) - V(q)); (P, K) -> (P, K)."""
    pi = bandit_probs(theta)
    mu_ = _mean_reward(bandit)
    V = (pi * mu_).sum(-1, keepdim=True)  # (P, 1)
    return pi * (mu_ - V) / bandit.config.n_prompts


def sample_batches(
    bandit: Bandit, theta: torch.Tensor, n_batches: int, gen: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample ``n_batches`` independent batches of G responses to each of the P prompts.

    Args:
        theta: (P, K) logits, or (M, P, K) with one policy per batch (used by :func:`train_curves`).

    Returns:
        ``(o, r)``: responses (M, P, G) long and rewards (M, P, G) float64.
    """
    cfg = bandit.config
    P, K, G = cfg.n_prompts, cfg.n_responses, cfg.group_size
    M = n_batches
    pi = bandit_probs(theta)
    if pi.dim() == 2:
        o = torch.multinomial(pi, M * G, replacement=True, generator=gen)  # (P, M*G)
        o = o.view(P, M, G).permute(1, 0, 2)  # (M, P, G)
    else:
        o = torch.multinomial(pi.reshape(M * P, K), G, replacement=True, generator=gen).view(M, P, G)
    q = torch.arange(P)[None, :, None].expand(M, P, G)
    p_pass = bandit.mu[q, o]  # (M, P, G)
    passed = (torch.rand(M, P, G, generator=gen, dtype=DTYPE) < p_pass).to(DTYPE)
    noise = torch.randn(M, P, G, generator=gen, dtype=DTYPE)
    r = passed + cfg.reward_offset + cfg.noise_std * noise  # (M, P, G)
    return o, r


def bandit_advantages(
    name: str, bandit: Bandit, theta: torch.Tensor, r: torch.Tensor, eps: float = 1e-6
) -> torch.Tensor:
    """The advantage A of estimator ``name`` for rewards ``r`` (M, P, G) -> (M, P, G).

    ``theta`` (P, K) or (M, P, K) is only read by the oracle baselines ``constant`` and ``value``.
    The group estimators flatten the M * P groups and call
    :func:`rltutor.advantages.group_advantages`.
    """
    check_choice("estimator", name, ESTIMATORS)
    M, P, G = r.shape
    if name == "reinforce":
        return r  # A = r
    if name == "constant":
        J = expected_reward(bandit, theta)  # () or (M,)
        return r - (J[:, None, None] if J.dim() else J)  # A = r - J
    if name == "value":
        V = (bandit_probs(theta) * _mean_reward(bandit)).sum(-1)  # (P,) or (M, P)
        return r - V[..., None]  # A = r - V(q)
    group_ids = torch.arange(M * P).repeat_interleave(G)  # one group per (batch, prompt), (M*P*G,)
    a = group_advantages(r.reshape(-1), group_ids, method=name, eps=eps)
    return a.view(M, P, G)


def gradient_estimates(o: torch.Tensor, A: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """g_hat = 1/(P G) sum_{q,i} A_{q,i} (onehot(o_{q,i}) - pi(.|q)) for each batch.

    Args:
        o: (M, P, G) responses; A: (M, P, G) advantages; theta: (P, K) or (M, P, K).

    Returns:
        (M, P, K): one gradient estimate per batch.
    """
    M, P, G = o.shape
    pi = bandit_probs(theta)
    K = pi.shape[-1]
    if pi.dim() == 2:
        pi = pi.expand(M, P, K)
    # sum_i A_i onehot(o_i): scatter the advantages into their response's bin
    hit = torch.zeros(M, P, K, dtype=A.dtype).scatter_add_(2, o, A)  # (M, P, K)
    return (hit - A.sum(-1, keepdim=True) * pi) / (P * G)  # (M, P, K)


@dataclass
class GradientStudy:
    """Monte Carlo measurement of every estimator's bias and variance at one policy."""

    config: BanditConfig
    n_batches: int
    true_grad: np.ndarray
    """(P, K) exact gradient."""
    mean_grad: dict[str, np.ndarray] = field(default_factory=dict)
    """(P, K) Monte Carlo mean of each estimator."""
    se_grad: dict[str, np.ndarray] = field(default_factory=dict)
    """(P, K) standard error of that mean."""
    table: pd.DataFrame | None = None
    """One row per estimator; columns described in :func:`measure_gradients`."""


def scale_settings(scale: str | None = None) -> dict:
    """Monte Carlo and training budgets for ``scale`` ("quick" on a CPU in seconds, "full")."""
    scale = resolve_scale(scale)
    if scale == "quick":
        return {"scale": scale, "n_batches": 2000, "steps": 200, "n_seeds": 8}
    return {"scale": scale, "n_batches": 20000, "steps": 600, "n_seeds": 32}


def _bonferroni_p(max_abs_z: float, n: int) -> float:
    """P(max of n |N(0,1)| >= max_abs_z) <= n * 2 * (1 - Phi(max_abs_z)), capped at 1."""
    return min(1.0, n * math.erfc(max_abs_z / math.sqrt(2)))


def measure_gradients(
    config: BanditConfig | None = None,
    estimators=ESTIMATORS,
    n_batches: int | None = None,
    sample_seed: int = 1,
    scale: str | None = None,
    eps: float = 1e-6,
) -> GradientStudy:
    """Measure bias and variance of each estimator at the initial policy, by Monte Carlo.

    All estimators see the *same* ``n_batches`` sampled batches (common random numbers), so their
    differences are not sampling luck.

    Columns of ``table`` (one row per estimator):

    * ``variance``: E||g_hat - E g_hat||^2, the total variance (trace of the covariance), with
      ``variance_se`` its standard error;
    * ``bias_rel``: ||mean(g_hat) - grad J|| / ||grad J||, next to ``noise_floor_rel`` =
      sqrt(variance / n_batches) / ||grad J||, the size ``bias_rel`` has for an *unbiased*
      estimator from Monte Carlo error alone;
    * ``max_abs_z``: the largest |mean - grad J| / se over the P*K coordinates, and ``bias_p``, its
      Bonferroni p-value (small, say < 0.001, means a bias the Monte Carlo error cannot explain);
    * ``cosine``: cosine between mean(g_hat) and grad J; ``snr``: ||E g_hat||^2 / variance, which
      does not change when an estimator is rescaled (compare ``grpo``'s std division fairly);
    * ``zero_std_frac``: fraction of groups whose G rewards are all equal (every group advantage 0).
    """
    config = config or BanditConfig()
    for name in estimators:
        check_choice("estimator", name, ESTIMATORS)
    if n_batches is None:
        n_batches = scale_settings(scale)["n_batches"]
    if not isinstance(n_batches, int) or n_batches < 2:
        raise ValueError(f"n_batches must be an integer >= 2 to measure a variance, got {n_batches!r}")
    bandit = make_bandit(config)
    theta = bandit.theta0
    gen = torch.Generator().manual_seed(int(sample_seed))
    o, r = sample_batches(bandit, theta, n_batches, gen)
    g_true = bandit_gradient(bandit, theta)
    study = GradientStudy(config=config, n_batches=n_batches, true_grad=g_true.numpy())
    zero_std = (r.amax(-1) == r.amin(-1)).to(DTYPE).mean().item()
    rows = []
    for name in estimators:
        A = bandit_advantages(name, bandit, theta, r, eps=eps)
        g = gradient_estimates(o, A, theta).reshape(n_batches, -1)  # (M, P*K)
        mean = g.mean(0)
        dev2 = ((g - mean) ** 2).sum(1) * n_batches / (n_batches - 1)  # unbiased per-batch ||g - Eg||^2
        se = g.std(0) / math.sqrt(n_batches)
        diff = mean - g_true.reshape(-1)
        z = diff / se.clamp_min(1e-300)
        var = dev2.mean().item()
        study.mean_grad[name] = mean.view_as(g_true).numpy()
        study.se_grad[name] = se.view_as(g_true).numpy()
        rows.append(
            {
                "estimator": name,
                "group_size": config.group_size,
                "noise_std": config.noise_std,
                "reward_offset": config.reward_offset,
                "n_batches": n_batches,
                "variance": var,
                "variance_se": dev2.std().item() / math.sqrt(n_batches),
                "bias_rel": (diff.norm() / g_true.norm()).item(),
                "noise_floor_rel": math.sqrt(var / n_batches) / g_true.norm().item(),
                "max_abs_z": z.abs().max().item(),
                "bias_p": _bonferroni_p(z.abs().max().item(), z.numel()),
                "cosine": torch.nn.functional.cosine_similarity(mean, g_true.reshape(-1), dim=0).item(),
                "snr": (mean.norm() ** 2).item() / var,
                "true_grad_norm": g_true.norm().item(),
                "zero_std_frac": zero_std,
            }
        )
    study.table = pd.DataFrame(rows)
    return study


def sweep_param(
    param: str,
    values,
    config: BanditConfig | None = None,
    estimators=ESTIMATORS,
    n_batches: int | None = None,
    sample_seed: int = 1,
    scale: str | None = None,
) -> pd.DataFrame:
    """:func:`measure_gradients` for each value of one config field; the tables stacked.

    ``param`` is a :class:`BanditConfig` field name such as ``"group_size"``, ``"noise_std"`` or
    ``"reward_offset"``.
    """
    config = config or BanditConfig()
    fields = list(asdict(config))
    check_choice("BanditConfig field", param, fields)
    values = list(values)
    if not values:
        raise ValueError(f"values for {param!r} is empty; give at least one value to sweep")
    tables = []
    for v in values:
        study = measure_gradients(replace(config, **{param: v}), estimators, n_batches, sample_seed, scale)
        tables.append(study.table.assign(param=param, value=v))
    return pd.concat(tables, ignore_index=True)


def dead_group_fraction(config: BanditConfig | None = None) -> float:
    """Predicted fraction of groups with G equal 0/1 rewards at the initial policy (``noise_std=0``).

    With pass rate p(q) = sum_o pi(o|q) mu(q, o), all G answers pass with probability p^G and all
    fail with (1-p)^G; averaged over prompts: mean_q [p(q)^G + (1 - p(q))^G].
    """
    config = config or BanditConfig()
    bandit = make_bandit(config)
    p = (bandit_probs(bandit.theta0) * bandit.mu).sum(-1)  # (P,) pass rate per prompt
    G = config.group_size
    return (p**G + (1 - p) ** G).mean().item()


def train_curves(
    config: BanditConfig | None = None,
    estimators=ESTIMATORS,
    steps: int | None = None,
    lr: float = 50.0,
    n_seeds: int | None = None,
    scale: str | None = None,
    sample_seed: int = 0,
) -> pd.DataFrame:
    """Train the tabular policy by stochastic gradient ascent with each estimator.

    theta <- theta + lr * g_hat, one batch (P prompts x G responses) per step; ``n_seeds`` independent
    runs (sampling seeds) all start at the same ``theta0``. The logged metric is the *exact*
    expected pass rate (1/P) sum_q sum_o pi(o|q) mu(q, o), so the curves carry no evaluation noise.

    Returns:
        DataFrame with columns ``estimator, seed, step, pass_rate`` (``steps + 1`` rows per run).
    """
    config = config or BanditConfig()
    settings = scale_settings(scale)
    steps = settings["steps"] if steps is None else steps
    n_seeds = settings["n_seeds"] if n_seeds is None else n_seeds
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be an integer >= 1, got {steps!r}")
    if not isinstance(n_seeds, int) or n_seeds < 1:
        raise ValueError(f"n_seeds must be an integer >= 1, got {n_seeds!r}")
    if not (isinstance(lr, int | float) and lr > 0 and math.isfinite(lr)):
        raise ValueError(f"lr must be a positive finite number, got {lr!r}")
    bandit = make_bandit(config)
    pass_bandit = Bandit(config=replace(config, reward_offset=0.0), mu=bandit.mu, theta0=bandit.theta0)
    frames = []
    for name in estimators:
        check_choice("estimator", name, ESTIMATORS)
        gen = torch.Generator().manual_seed(int(sample_seed))  # same seeds for every estimator
        theta = bandit.theta0.expand(n_seeds, *bandit.theta0.shape).clone()  # (S, P, K)
        log = np.empty((steps + 1, n_seeds))
        log[0] = expected_reward(pass_bandit, theta).numpy()
        for t in range(steps):
            o, r = sample_batches(bandit, theta, n_seeds, gen)  # one batch per seed, (S, P, G)
            A = bandit_advantages(name, bandit, theta, r)
            theta = theta + lr * gradient_estimates(o, A, theta)  # gradient *ascent* on J
            if not torch.isfinite(theta).all():
                raise FloatingPointError(f"{name}: logits became NaN/inf at step {t}; lower lr (now {lr})")
            log[t + 1] = expected_reward(pass_bandit, theta).numpy()
        frames.append(
            pd.DataFrame(
                {
                    "estimator": name,
                    "seed": np.tile(np.arange(n_seeds), steps + 1),
                    "step": np.repeat(np.arange(steps + 1), n_seeds),
                    "pass_rate": log.reshape(-1),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def surrogate_loss_epochs(
    config: BanditConfig | None = None, method: str = "grpo", epochs: int = 4, lr: float = 1.0, sample_seed: int = 0
) -> pd.DataFrame:
    """Reader questions 1 and 2: the GRPO loss *value* is ~0 (then negative) while its gradient is not 0.

    One batch (P prompts x G responses), group advantages by ``method``; then ``epochs`` passes of
    PPO-style clipped surrogate loss (:func:`rltutor.losses.policy_loss`, one token per response,
    shapes (B, 1)) with plain gradient descent on the logits. In the first pass the ratio
    pi_theta / pi_old is exactly 1, so the loss equals -mean(A), which is 0 up to rounding for
    mean-centred advantages; its gradient is the policy gradient. Later passes (the ratio moved)
    push the loss below 0: the optimizer is *minimizing* it.

    Returns:
        DataFrame with columns ``epoch, loss, grad_norm, clip_frac``.
    """
    from rltutor.losses import policy_loss  # imported here: only this demo needs it

    check_choice("group method", method, ("grpo", "dr_grpo", "rloo"))
    if not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs must be an integer >= 1, got {epochs!r}")
    config = config or BanditConfig()
    bandit = make_bandit(config)
    gen = torch.Generator().manual_seed(int(sample_seed))
    o, r = sample_batches(bandit, bandit.theta0, 1, gen)  # (1, P, G)
    A = bandit_advantages(method, bandit, bandit.theta0, r).reshape(-1, 1)  # (B, 1)
    q = torch.arange(config.n_prompts).repeat_interleave(config.group_size)  # (B,)
    a = o.reshape(-1)  # (B,)
    old_logp = torch.log_softmax(bandit.theta0, -1)[q, a].reshape(-1, 1)  # (B, 1), behaviour policy
    mask = torch.ones_like(A)
    theta = bandit.theta0.clone().requires_grad_(True)
    rows = []
    for epoch in range(epochs):
        logp = torch.log_softmax(theta, -1)[q, a].reshape(-1, 1)  # (B, 1)
        loss, stats = policy_loss(logp, old_logp, A, mask, kind="ppo")
        (grad,) = torch.autograd.grad(loss, theta)
        rows.append(
            {
                "epoch": epoch,
                "loss": loss.item(),
                "grad_norm": grad.norm().item(),
                "clip_frac": float(stats["clip_frac"]),
            }
        )
        with torch.no_grad():
            theta -= lr * grad  # gradient descent on the loss = ascent on the surrogate
    return pd.DataFrame(rows)
