"""Bad or awkward numbers at the boundary of the math modules: each one raises a clear error or is
handled as documented, never a silent NaN or inf."""

from __future__ import annotations

import math
import re

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


# ----------------------------------------------------------------------------------------------
# Overflow, empty batches and mixed dtypes: one-line ValueErrors naming the value and the fix
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype, big", [(torch.float32, 3e38), (torch.float16, 60000.0)])
def test_gae_and_returns_refuse_to_overflow_into_inf(dtype, big):
    r = torch.full((2, 4), big, dtype=dtype)  # finite in the dtype, but two of them add up past its maximum
    v, m = torch.zeros(2, 4, dtype=dtype), torch.ones(2, 4)
    for call in (lambda: gae(r, v, m), lambda: discounted_returns(r, m, 1.0)):
        with pytest.raises(
            ValueError, match=rf"overflow {dtype}.*max {re.escape(f'{big:.3g}')}.*rescale the rewards"
        ) as e:
            call()
        assert "\n" not in str(e.value)
    # the same rewards a little smaller stay finite and unchanged by the check
    small = torch.full((2, 4), big / 8, dtype=dtype)
    adv, ret = gae(small, v, m)
    assert torch.isfinite(adv).all() and torch.isfinite(ret).all()
    assert torch.equal(discounted_returns(small, m, 1.0), ret)


def test_policy_loss_on_an_empty_batch_is_a_clear_error():
    empty = torch.zeros(0, 4)
    for agg in ("token-mean", None):
        with pytest.raises(ValueError, match=r"empty batch \(shape \(0, 4\)\)"):
            policy_loss(empty, empty, empty, empty, agg=agg)


def test_policy_loss_refuses_mixed_dtypes_as_the_estimators_do():
    lp, old, adv, m = batch()
    for name, kw in (("old_logp", dict(old=old.double())), ("advantages", dict(adv=adv.double()))):
        args = {"lp": lp, "old": old, "adv": adv, **kw}
        with pytest.raises(
            ValueError, match=rf"{name} has dtype torch.float64 but logp has dtype torch.float32.*\.to\("
        ):
            policy_loss(args["lp"], args["old"], args["adv"], m)
    loss64, _ = policy_loss(lp.double(), old.double(), adv.double(), m)  # one dtype throughout: fine
    assert loss64.dtype == torch.float64


@pytest.mark.parametrize("kind", ["ppo", "gspo", "gmpo", "cispo", "reinforce"])
def test_policy_loss_refuses_advantages_that_overflow_the_loss(kind):
    lp, old, _, m = batch()
    huge = torch.full_like(lp, 3e38)
    with pytest.raises(ValueError, match=r"policy_loss overflows torch.float32: advantages up to 3e\+38.*rescale"):
        policy_loss(lp, old, huge, m, kind=kind)
    loss, _ = policy_loss(lp, old, huge / 1e10, m, kind=kind)  # large but representable: a finite loss
    assert torch.isfinite(loss)


def test_the_checks_change_no_result_on_valid_input():
    lp, old, adv, m = batch(seed=4)
    r, v = torch.randn(3, 5), torch.randn(3, 5)
    a1, r1 = gae(r, v, m, gamma=0.9, lam=0.8)
    manual = torch.zeros(3)
    out = torch.zeros(3, 5)
    nv = torch.zeros(3)
    for t in reversed(range(5)):  # the recursion by hand over the valid steps
        ok = m[:, t].bool()
        a_t = r[:, t] + 0.9 * nv - v[:, t] + 0.9 * 0.8 * manual
        out[:, t] = torch.where(ok, a_t, 0.0)
        manual = torch.where(ok, a_t, manual)
        nv = torch.where(ok, v[:, t], nv)
    torch.testing.assert_close(a1, out)
    loss, _ = policy_loss(lp, old, adv, m)
    ratio = torch.exp(torch.where(m.bool(), lp - old, 0.0))
    a = torch.where(m.bool(), adv, 0.0)
    ref = torch.maximum(-a * ratio, -a * ratio.clamp(0.8, 1.2))
    torch.testing.assert_close(loss, (ref * m).sum() / m.sum())
