"""Bad or awkward numbers at the boundary of the math modules: each one raises a clear error or is
handled as documented, never a silent NaN or inf."""

from __future__ import annotations

import math

import hypothesis.strategies as st
import pytest
import torch
from hypothesis import given, settings

from rltutor.advantages import discounted_returns, gae
from rltutor.losses import AGG_MODES, aggregate, masked_mean, policy_loss


def batch(B=3, T=5, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    logp = -torch.rand(B, T, generator=g, dtype=dtype)
    old = logp + 0.3 * torch.randn(B, T, generator=g, dtype=dtype)
    adv = torch.randn(B, T, generator=g, dtype=dtype)
    mask = (torch.rand(B, T, generator=g) < 0.7).to(dtype)
    mask[:, 0] = 1
    return logp, old, adv, mask


# ----------------------------------------------------------------------------------------------
# policy_loss: clip values
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["ppo", "gspo", "gmpo", "cispo"])
@pytest.mark.parametrize(
    "name,value",
    [
        ("clip_low", math.nan),
        ("clip_low", -0.1),
        ("clip_low", math.inf),
        ("clip_low", True),
        ("clip_high", math.nan),
        ("clip_high", -0.2),
        ("clip_high", math.inf),
        ("clip_high", "0.2"),
    ],
)
def test_policy_loss_rejects_nan_negative_or_non_numeric_clip(kind, name, value):
    lp, old, adv, m = batch()
    with pytest.raises(ValueError, match=f"{name} must be a finite number"):
        policy_loss(lp, old, adv, m, kind=kind, **{name: value})


@pytest.mark.parametrize("value", [math.nan, math.inf, 1.0, 0.5])
def test_policy_loss_rejects_bad_dual_clip(value):
    lp, old, adv, m = batch()
    with pytest.raises(ValueError, match="dual_clip must be > 1 and finite"):
        policy_loss(lp, old, adv, m, dual_clip=value)


def test_policy_loss_clip_bounds_still_accepted():
    lp, old, adv, m = batch()
    for kind, low, high in (("ppo", 0.0, 0.0), ("ppo", 1.0, 10.0), ("gmpo", 2.0, 2.0), ("cispo", 1, 5)):
        loss, _ = policy_loss(lp, old, adv, m, kind=kind, clip_low=low, clip_high=high)
        assert torch.isfinite(loss)
    with pytest.raises(ValueError, match=r"clip_low must be a finite number in \[0, 1\]"):
        policy_loss(lp, old, adv, m, kind="ppo", clip_low=1.5)


# ----------------------------------------------------------------------------------------------
# aggregate and masked_mean: dtype, rank, shape, and masked values that cannot matter
# ----------------------------------------------------------------------------------------------


def test_aggregate_checks_dtype_rank_shape_and_norm():
    _, _, x, m = batch()
    with pytest.raises(ValueError, match="floating tensor"):
        aggregate(x.long(), m)
    with pytest.raises(ValueError, match=r"\(B, T\) torch.Tensor.*shape \(15,\)"):
        aggregate(x.flatten(), m.flatten())
    with pytest.raises(ValueError, match=r"\(B, T\) torch.Tensor"):
        aggregate(x[None], m[None])
    with pytest.raises(ValueError, match=r"\(B, T\) torch.Tensor, got list"):
        aggregate(x.tolist(), m)
    with pytest.raises(ValueError, match="shape"):
        aggregate(x, m[:, :2])
    for bad in (0.0, -1.0, math.nan, math.inf, True):
        with pytest.raises(ValueError, match="norm must be a finite number > 0"):
            aggregate(x, m, "seq-mean-token-sum-norm", norm=bad)
    with pytest.raises(ValueError, match="floating torch.Tensor"):
        masked_mean(x.long(), m)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(AGG_MODES), st.sampled_from([math.nan, math.inf, -math.inf, 1e30]))
def test_masked_entries_cannot_change_aggregate_even_nan(seed, mode, junk):
    _, _, x, m = batch(seed=seed, dtype=torch.float64)
    x = x.requires_grad_(True)
    dirty = torch.where(m.bool(), x, torch.tensor(junk, dtype=x.dtype))
    clean = aggregate(x, m, mode)
    got = aggregate(dirty, m, mode)
    assert torch.isfinite(got)
    torch.testing.assert_close(got, clean)
    (g,) = torch.autograd.grad(got, x)
    assert torch.isfinite(g).all() and (g[m == 0] == 0).all()
    torch.testing.assert_close(masked_mean(dirty, m, dim=1), masked_mean(x, m, dim=1))


def test_aggregate_raises_on_nan_at_a_valid_entry():
    _, _, x, m = batch()
    x = x.clone()
    x[1, 0] = math.nan  # column 0 is always valid
    with pytest.raises(ValueError, match=r"NaN or inf at a valid .*first at \[1, 0\]"):
        aggregate(x, m)


# ----------------------------------------------------------------------------------------------
# gae and discounted_returns: one dtype, real numbers for gamma and lam
# ----------------------------------------------------------------------------------------------


def test_gae_refuses_mixed_dtypes():
    r = torch.randn(2, 4)
    v = torch.randn(2, 4)
    m = torch.ones(2, 4)
    with pytest.raises(ValueError, match=r"values has dtype torch.float16 but rewards has dtype torch.float32.*\.to\("):
        gae(r, v.half(), m)
    with pytest.raises(ValueError, match="values has dtype torch.float64 but rewards has dtype torch.float32"):
        gae(r, v.double(), m)
    for dtype in (torch.float16, torch.float32, torch.float64):
        adv, ret = gae(r.to(dtype), v.to(dtype), m, gamma=0.9, lam=0.9)
        assert adv.dtype == ret.dtype == dtype


@pytest.mark.parametrize("name", ["gamma", "lam"])
@pytest.mark.parametrize("value", [True, False, math.nan, -0.1, 1.5, "0.9", None])
def test_gae_rejects_bool_and_bad_discounts(name, value):
    r, v, m = torch.randn(2, 4), torch.randn(2, 4), torch.ones(2, 4)
    with pytest.raises(ValueError, match=f"{name} must be a number in \\[0, 1\\]"):
        gae(r, v, m, **{name: value})
    if name == "gamma":
        with pytest.raises(ValueError, match="gamma must be a number in"):
            discounted_returns(r, m, value)
