"""Policy, value and KL losses against explicit loop references, plus gradient properties."""

from __future__ import annotations

import math

import hypothesis.strategies as st
import pytest
import torch
from hypothesis import given, settings

from rltutor.losses import (
    AGG_MODES,
    K3_MAX_LOG_RATIO,
    KL_KINDS,
    aggregate,
    kl_penalty,
    list_policy_losses,
    masked_mean,
    policy_loss,
    value_loss,
)

DTYPES = [torch.float32, torch.float64]


def make(B=3, T=5, seed=0, dtype=torch.float64, spread=0.5):
    g = torch.Generator().manual_seed(seed)
    logp = (-torch.rand(B, T, generator=g, dtype=dtype) * 2).requires_grad_(True)
    old = logp.detach() + spread * torch.randn(B, T, generator=g, dtype=dtype)
    adv = torch.randn(B, T, generator=g, dtype=dtype)
    mask = (torch.rand(B, T, generator=g) < 0.7).to(dtype)
    mask[:, 0] = 1
    return logp, old, adv, mask


def tol(dtype):
    return {"atol": 1e-5, "rtol": 1e-4} if dtype == torch.float32 else {"atol": 1e-10, "rtol": 1e-9}


# ----------------------------------------------------------------------------------------------
# Loop references (per row, per token), returning the aggregate the docstrings promise
# ----------------------------------------------------------------------------------------------


def agg_ref(mat, mask, mode, norm=None):
    B, T = len(mat), len(mat[0])
    rows = [[mat[b][t] for t in range(T) if mask[b][t]] for b in range(B)]
    rows = [r for r in rows if r]
    if mode == "token-mean":
        flat = [x for r in rows for x in r]
        return sum(flat) / len(flat)
    if mode == "seq-mean-token-mean":
        return sum(sum(r) / len(r) for r in rows) / len(rows)
    if mode == "seq-mean-token-sum":
        return sum(sum(r) for r in rows) / len(rows)
    return sum(sum(r) / (norm or T) for r in rows) / len(rows)


def ppo_ref(lp, old, a, cl, ch, c=None):
    r = math.exp(lp - old)
    loss = max(-a * r, -a * min(max(r, 1 - cl), 1 + ch))
    if c is not None and a < 0:
        loss = min(loss, -c * a)
    return loss


def mats(fn, lp, old, adv, mask):
    B, T = lp.shape
    return [[fn(b, t) if mask[b, t] else 0.0 for t in range(T)] for b in range(B)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("agg", AGG_MODES)
@pytest.mark.parametrize("dual", [None, 3.0])
def test_ppo_matches_loop(dtype, agg, dual):
    lp, old, adv, m = make(dtype=dtype)
    lpv, oldv, av, mv = lp.tolist(), old.tolist(), adv.tolist(), m.tolist()
    loss, stats = policy_loss(lp, old, adv, m, kind="ppo", clip_low=0.2, clip_high=0.28, dual_clip=dual, agg=agg)
    mat = [
        [ppo_ref(lpv[b][t], oldv[b][t], av[b][t], 0.2, 0.28, dual) for t in range(len(lpv[0]))] for b in range(len(lpv))
    ]
    assert abs(loss.item() - agg_ref(mat, mv, agg)) < 1e-5
    assert 0.0 <= stats["clip_frac"] <= 1.0 and stats["approx_kl"] >= 0.0


@pytest.mark.parametrize("dtype", DTYPES)
def test_gspo_gmpo_cispo_reinforce_match_loops(dtype):
    lp, old, adv, m = make(dtype=dtype, seed=2, spread=0.2)
    B, T = lp.shape
    lpv, oldv, av, mv = lp.tolist(), old.tolist(), adv.tolist(), m.tolist()
    idx = [[t for t in range(T) if mv[b][t]] for b in range(B)]

    # GSPO: s_i = exp(mean log ratio); per token -min(s A, clip(s) A); seq-mean-token-mean here.
    want = 0.0
    for b in range(B):
        s = math.exp(sum(lpv[b][t] - oldv[b][t] for t in idx[b]) / len(idx[b]))
        tok = [max(-av[b][t] * s, -av[b][t] * min(max(s, 0.8), 1.2)) for t in idx[b]]
        want += sum(tok) / len(tok)
    got, _ = policy_loss(lp, old, adv, m, kind="gspo", agg="seq-mean-token-mean")
    assert abs(got.item() - want / B) < 1e-5

    # GMPO: sign-aware clip of log ratios, geometric mean, times mean advantage; mean over rows.
    want = 0.0
    for b in range(B):
        A = sum(av[b][t] for t in idx[b]) / len(idx[b])
        logs = []
        for t in idx[b]:
            x = lpv[b][t] - oldv[b][t]
            xc = min(max(x, -0.4), 0.4)
            sgn = math.copysign(1.0, av[b][t]) if av[b][t] != 0 else 0.0
            logs.append(sgn * min(sgn * x, sgn * xc))
        want += -A * math.exp(sum(logs) / len(logs))
    got, _ = policy_loss(lp, old, adv, m, kind="gmpo", clip_low=0.4, clip_high=0.4)
    assert abs(got.item() - want / B) < 1e-5

    # CISPO: -clip(r) A logp, token-mean.
    mat = mats(
        lambda b, t: -min(max(math.exp(lpv[b][t] - oldv[b][t]), 0.8), 1.2) * av[b][t] * lpv[b][t], lp, old, adv, m
    )
    got, _ = policy_loss(lp, old, adv, m, kind="cispo")
    assert abs(got.item() - agg_ref(mat, mv, "token-mean")) < 1e-5

    mat = mats(lambda b, t: -av[b][t] * lpv[b][t], lp, old, adv, m)
    got, _ = policy_loss(lp, old, adv, m, kind="reinforce")
    assert abs(got.item() - agg_ref(mat, mv, "token-mean")) < 1e-5


def test_seq_mean_token_sum_norm_custom_norm():
    mat = torch.tensor([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0]])
    m = torch.tensor([[1, 1, 1], [1, 0, 0]])
    assert aggregate(mat, m, "seq-mean-token-sum-norm").item() == pytest.approx((6 / 3 + 4 / 3) / 2)
    assert aggregate(mat, m, "seq-mean-token-sum-norm", norm=10).item() == pytest.approx((0.6 + 0.4) / 2)
    assert aggregate(mat, m, "seq-mean-token-mean").item() == pytest.approx((2 + 4) / 2)
    assert aggregate(mat, m, "token-mean").item() == pytest.approx(10 / 4)
    assert masked_mean(mat, m, dim=1).tolist() == pytest.approx([2.0, 4.0])


def test_value_loss_and_kl_match_formulas():
    g = torch.Generator().manual_seed(1)
    v, old, R = (torch.randn(2, 4, generator=g, dtype=torch.float64) for _ in range(3))
    m = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]], dtype=torch.float64)
    plain = value_loss(v, old, R, m, agg=None)
    torch.testing.assert_close(plain, 0.5 * (v - R) ** 2 * m)
    clipped = value_loss(v, old, R, m, clip=0.1, agg=None)
    vc = old + (v - old).clamp(-0.1, 0.1)
    torch.testing.assert_close(clipped, torch.maximum(0.5 * (v - R) ** 2, 0.5 * (vc - R) ** 2) * m)
    assert value_loss(v, old, R, m).item() == pytest.approx(float(plain.sum() / m.sum()))

    lp, ref = torch.randn(2, 4, generator=g), torch.randn(2, 4, generator=g)
    torch.testing.assert_close(kl_penalty(lp, ref, "k1"), lp - ref)
    torch.testing.assert_close(kl_penalty(lp, ref, "k2"), 0.5 * (lp - ref) ** 2)
    torch.testing.assert_close(kl_penalty(lp, ref, "k3"), torch.exp(ref - lp) - (ref - lp) - 1)
    assert (kl_penalty(lp, ref, "k3") >= 0).all()


def test_k1_and_k3_are_unbiased_kl_estimates():
    # pi = softmax(a), pi_ref = softmax(b) over 5 actions; sample from pi.
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(5, generator=g, dtype=torch.float64), torch.randn(5, generator=g, dtype=torch.float64)
    logp_all, ref_all = a.log_softmax(0), b.log_softmax(0)
    true_kl = float((logp_all.exp() * (logp_all - ref_all)).sum())
    x = torch.multinomial(logp_all.exp(), 200_000, replacement=True, generator=g)
    lp, ref = logp_all[x][None], ref_all[x][None]
    for kind in ("k1", "k3"):
        est = kl_penalty(lp, ref, kind)
        se = est.std().item() / math.sqrt(est.numel())
        assert abs(est.mean().item() - true_kl) < 4 * se + 1e-4


# ----------------------------------------------------------------------------------------------
# Gradient properties
# ----------------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.floats(-3, 3).filter(lambda a: abs(a) > 1e-3), st.floats(-1.5, 1.5), st.sampled_from(DTYPES))
def test_ppo_zero_gradient_when_clipped_in_advantage_direction(A, log_r, dtype):
    old = torch.zeros(1, 1, dtype=dtype)
    lp = torch.full((1, 1), log_r, dtype=dtype, requires_grad=True)
    loss, _ = policy_loss(lp, old, torch.full((1, 1), A, dtype=dtype), torch.ones(1, 1), clip_low=0.2, clip_high=0.2)
    loss.backward()
    r = math.exp(log_r)
    clipped_in_direction = (A > 0 and r > 1.2 + 1e-6) or (A < 0 and r < 0.8 - 1e-6)
    if clipped_in_direction:
        assert lp.grad.item() == 0.0
    elif 0.8 + 1e-6 < r < 1.2 - 1e-6 or (A > 0 and r < 0.8) or (A < 0 and r > 1.2):
        assert lp.grad.item() != 0.0  # unclipped (or clipped against A's direction): gradient flows


def test_dual_clip_caps_loss_and_kills_gradient():
    lp = torch.full((1, 1), math.log(10.0), requires_grad=True)  # ratio 10, A < 0
    loss, stats = policy_loss(lp, torch.zeros(1, 1), torch.full((1, 1), -1.0), torch.ones(1, 1), dual_clip=3.0)
    assert loss.item() == pytest.approx(3.0)
    loss.backward()
    assert lp.grad.item() == 0.0 and stats["clip_frac"] == 1.0


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(0, 10_000), st.sampled_from(DTYPES))
def test_gspo_equals_ppo_with_one_token_sequences(B, seed, dtype):
    lp, old, adv, _ = make(B=B, T=1, seed=seed, dtype=dtype)
    m = torch.ones(B, 1, dtype=dtype)
    l1, s1 = policy_loss(lp, old, adv, m, kind="ppo")
    (g1,) = torch.autograd.grad(l1, lp)
    l2, s2 = policy_loss(lp, old, adv, m, kind="gspo")
    (g2,) = torch.autograd.grad(l2, lp)
    torch.testing.assert_close(l1, l2, **tol(dtype))
    torch.testing.assert_close(g1, g2, **tol(dtype))
    assert s1["clip_frac"] == s2["clip_frac"]


def test_reinforce_and_ppo_share_the_on_policy_gradient():
    lp, _, adv, m = make(seed=5)
    old = lp.detach().clone()
    grads = {}
    for kind in ("ppo", "reinforce", "cispo"):
        loss, stats = policy_loss(lp, old, adv, m, kind=kind)
        grads[kind] = torch.autograd.grad(loss, lp)[0]
        assert stats["clip_frac"] == 0.0
    torch.testing.assert_close(grads["ppo"], grads["reinforce"])
    torch.testing.assert_close(grads["ppo"], grads["cispo"])


def test_grpo_loss_value_is_zero_but_gradient_is_not():
    # Reader question 1: on-policy, advantages centred per sequence-mean -> loss ~ 0, gradient != 0.
    lp, _, _, _ = make(B=4, T=3, seed=6)
    m = torch.ones(4, 3, dtype=lp.dtype)
    a = torch.tensor([1.0, -1.0, 0.5, -0.5], dtype=lp.dtype)[:, None].expand(4, 3)
    loss, _ = policy_loss(lp, lp.detach(), a, m, agg="seq-mean-token-mean")
    assert abs(loss.item()) < 1e-12
    (g,) = torch.autograd.grad(loss, lp)
    assert g.abs().sum() > 0


@pytest.mark.parametrize("kind", ["ppo", "gspo", "gmpo", "cispo", "reinforce"])
def test_masked_positions_do_not_matter(kind):
    lp, old, adv, m = make(seed=7)
    g = torch.Generator().manual_seed(8)
    junk = torch.randn(lp.shape, generator=g, dtype=lp.dtype) * 50
    lp2 = torch.where(m.bool(), lp.detach(), junk).requires_grad_(True)
    old2 = torch.where(m.bool(), old, -junk)
    adv2 = torch.where(m.bool(), adv, junk)
    l1, _ = policy_loss(lp, old, adv, m, kind=kind)
    l2, _ = policy_loss(lp2, old2, adv2, m, kind=kind)
    (g1,) = torch.autograd.grad(l1, lp)
    (g2,) = torch.autograd.grad(l2, lp2)
    torch.testing.assert_close(l1, l2)
    torch.testing.assert_close(g1, g2)
    assert torch.isfinite(g2).all() and (g2[m == 0] == 0).all()
    mat, _ = policy_loss(lp, old, adv, m, kind=kind, agg=None)
    assert mat.shape == lp.shape and (mat[m == 0] == 0).all()


# ----------------------------------------------------------------------------------------------
# Bad input
# ----------------------------------------------------------------------------------------------


def test_bad_inputs_raise_clear_errors():
    lp, old, adv, m = make()
    with pytest.raises(ValueError, match="valid: cispo, gmpo, gspo, ppo, reinforce"):
        policy_loss(lp, old, adv, m, kind="trpo")
    with pytest.raises(ValueError, match="aggregation mode 'mean'; valid"):
        policy_loss(lp, old, adv, m, agg="mean")
    with pytest.raises(ValueError, match="shape"):
        policy_loss(lp, old[:, :2], adv, m)
    with pytest.raises(ValueError, match="only 0 and 1"):
        policy_loss(lp, old, adv, m * 0.5)
    with pytest.raises(ValueError, match="NaN"):
        policy_loss(lp, old, adv.clone().fill_(float("nan")), m)
    with pytest.raises(ValueError, match="dual_clip must be > 1"):
        policy_loss(lp, old, adv, m, dual_clip=0.5)
    with pytest.raises(ValueError, match="clip_low"):
        policy_loss(lp, old, adv, m, clip_low=-0.1)
    with pytest.raises(ValueError, match="valid: k1, k2, k3"):
        kl_penalty(lp, old, "k4")
    with pytest.raises(ValueError, match="all-zero mask"):
        aggregate(adv, torch.zeros_like(m), "token-mean")
    with pytest.raises(ValueError, match="value clip"):
        value_loss(adv, adv, adv, m, clip=0.0)
    assert set(list_policy_losses()) >= {"ppo", "gspo", "gmpo", "cispo", "reinforce"}


# ----------------------------------------------------------------------------------------------
# KL estimators: unbiased values, and which KL each one's gradient follows when used as a loss
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_kl_estimators_as_losses_follow_different_kls(seed):
    # A categorical pi = softmax(theta) over 6 actions and a fixed pi_ref. For an estimator k used as
    # a loss at a sample a ~ pi (differentiated through log pi(a), the sample held fixed), the expected
    # gradient is sum_a pi(a) grad k(a): the gradient of sum_a sg(pi(a)) k(a), computed exactly here.
    g = torch.Generator().manual_seed(seed)
    theta = torch.randn(6, generator=g, dtype=torch.float64).requires_grad_(True)
    ref_logp = torch.randn(6, generator=g, dtype=torch.float64).log_softmax(0)
    logp = theta.log_softmax(0)
    pi, pi_ref = logp.exp(), ref_logp.exp()
    reverse_kl = (pi * (logp - ref_logp)).sum()  # KL(pi || pi_ref)
    forward_kl = (pi_ref * (ref_logp - logp)).sum()  # KL(pi_ref || pi)
    (grad_reverse,) = torch.autograd.grad(reverse_kl, theta, retain_graph=True)
    (grad_forward,) = torch.autograd.grad(forward_kl, theta, retain_graph=True)
    expected_grad, expected_value = {}, {}
    for kind in KL_KINDS:
        k = kl_penalty(logp[None], ref_logp[None], kind)[0]  # k(a) for every action a, (6,)
        expected_value[kind] = float((pi * k).sum().detach())  # E_{a~pi}[k(a)]
        (expected_grad[kind],) = torch.autograd.grad((pi.detach() * k).sum(), theta, retain_graph=True)

    # As values: k1 and k3 are unbiased estimates of KL(pi || pi_ref); k2 is not.
    assert expected_value["k1"] == pytest.approx(reverse_kl.item(), rel=1e-12)
    assert expected_value["k3"] == pytest.approx(reverse_kl.item(), rel=1e-12)
    assert expected_value["k2"] != pytest.approx(reverse_kl.item(), rel=1e-3)
    # As losses: k1 gives no gradient, k2 the reverse KL's, k3 the forward KL's (not the reverse's).
    torch.testing.assert_close(expected_grad["k1"], torch.zeros(6, dtype=torch.float64), atol=1e-14, rtol=0)
    torch.testing.assert_close(expected_grad["k2"], grad_reverse, atol=1e-12, rtol=1e-10)
    torch.testing.assert_close(expected_grad["k3"], grad_forward, atol=1e-12, rtol=1e-10)
    assert (expected_grad["k3"] - grad_reverse).abs().max() > 1e-3


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_k3_is_finite_for_any_finite_log_probs(dtype):
    logp = torch.tensor([[-200.0, -100.0, -30.0, -5.0, 0.0, -6.0]], dtype=dtype)
    ref = torch.tensor([[0.0, -1.0, -1.0, -5.0, -300.0, -1.0]], dtype=dtype)
    k3 = kl_penalty(logp, ref, "k3")
    assert k3.dtype == dtype and torch.isfinite(k3).all() and (k3 >= 0).all()
    cap = K3_MAX_LOG_RATIO if dtype != torch.float16 else 10.0
    assert k3[0, 0].item() == pytest.approx(math.exp(cap) - cap - 1, rel=1e-2)  # log r = 200: capped
    assert k3[0, 3].item() == 0.0  # equal log-probs: zero
    lp = logp.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(kl_penalty(lp, ref, "k3").sum(), lp)
    assert torch.isfinite(grad).all() and grad[0, 0] == 0  # beyond the cap the gradient is 0
    if dtype == torch.float64:  # below the cap (log r = 5) nothing changes
        assert k3[0, 5].item() == pytest.approx(math.exp(5.0) - 5.0 - 1)


@pytest.mark.parametrize("kind", ["ppo", "gspo", "gmpo"])
def test_tokens_with_zero_advantage_are_never_counted_as_clipped(kind):
    """clip_frac is the share of valid tokens whose gradient the clip changed. A token with A = 0 (every
    token of a dead group) has no gradient to change, whatever its ratio. Row 0 is live (A = 1) with
    log-ratios (1, 0.1): its first token is clipped by every loss here (for GSPO the sequence ratio
    e^0.55 is clipped, so both tokens). Row 1 is dead (A = 0) with the same, moved, ratios. GMPO counted
    the dead row's moved tokens as clipped (sign 0 makes the clipped log-ratio 0, not the ratio)."""
    old = torch.zeros(2, 2, dtype=torch.float64)
    logp = torch.tensor([[1.0, 0.1], [1.0, 0.1]], dtype=torch.float64)
    adv = torch.tensor([[1.0, 1.0], [0.0, 0.0]], dtype=torch.float64)
    mask = torch.ones(2, 2, dtype=torch.float64)
    clip = dict(gmpo=0.4).get(kind, 0.2)
    _, live = policy_loss(logp[:1], old[:1], adv[:1], mask[:1], kind=kind, clip_low=clip, clip_high=clip)
    _, both = policy_loss(logp, old, adv, mask, kind=kind, clip_low=clip, clip_high=clip)
    assert live["clip_frac"] > 0  # the live row is clipped...
    assert both["clip_frac"] == pytest.approx(live["clip_frac"] / 2)  # ...and the dead row adds only tokens


# ----------------------------------------------------------------------------------------------
# row_weight: how much each row counts (the per-episode weight of the compaction chapter)
# ----------------------------------------------------------------------------------------------


def agg_weighted_ref(mat, mask, mode, w, norm=None):
    """(1/B') sum_i w_i l_i over the rows with a valid token; l_i the row's token mean (token-mean and
    seq-mean-token-mean alike), token sum, or token sum / norm."""
    B, T = len(mat), len(mat[0])
    out, n = 0.0, 0
    for b in range(B):
        r = [mat[b][t] for t in range(T) if mask[b][t]]
        if not r:
            continue
        n += 1
        if mode in ("token-mean", "seq-mean-token-mean"):
            out += w[b] * sum(r) / len(r)
        elif mode == "seq-mean-token-sum":
            out += w[b] * sum(r)
        else:
            out += w[b] * sum(r) / (norm or T)
    return out / n


@pytest.mark.parametrize("mode", AGG_MODES)
@pytest.mark.parametrize("seed", range(4))
def test_aggregate_with_row_weight_matches_the_loop(mode, seed):
    _, _, mat, mask = make(B=5, T=6, seed=seed)
    mask[2] = 0  # a row without a valid token counts nowhere
    w = torch.rand(5, generator=torch.Generator().manual_seed(seed), dtype=mat.dtype) * 2
    got = aggregate(mat, mask, mode, row_weight=w)
    assert got.item() == pytest.approx(agg_weighted_ref(mat.tolist(), mask.tolist(), mode, w.tolist()), rel=1e-9)
    ones = torch.ones(5, dtype=mat.dtype)  # unit weights: the per-row modes are unchanged
    if mode != "token-mean":
        assert aggregate(mat, mask, mode, row_weight=ones).item() == pytest.approx(aggregate(mat, mask, mode).item())


def test_policy_loss_passes_row_weight_to_the_reduction_and_gmpo_weighs_sequences():
    logp, old, adv, mask = make(B=4, T=5, seed=3)
    w = torch.tensor([0.5, 1.5, 1.0, 1.0], dtype=logp.dtype)
    for kind in list_policy_losses():
        mat, _ = policy_loss(logp, old, adv, mask, kind=kind, agg=None)
        loss, _ = policy_loss(logp, old, adv, mask, kind=kind, agg="seq-mean-token-mean", row_weight=w)
        if kind == "gmpo":  # a sequence-level loss: the weighted mean over sequences of each row's loss
            per_seq = mat.sum(1)
            assert loss.item() == pytest.approx((w * per_seq).mean().item())
        else:
            assert loss.item() == pytest.approx(aggregate(mat, mask, "seq-mean-token-mean", row_weight=w).item())
    with pytest.raises(ValueError, match="row_weight must be a"):
        policy_loss(logp, old, adv, mask, row_weight=w[:3])
