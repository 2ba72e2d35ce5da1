"""Advantage estimators against slow, obviously correct loop references, plus properties."""

from __future__ import annotations

import math

import hypothesis.strategies as st
import pytest
import torch
from hypothesis import given, settings

from rltutor.advantages import (
    ESTIMATORS,
    GROUP_ESTIMATORS,
    compute_advantages,
    dead_groups,
    discounted_returns,
    gae,
    group_advantages,
    list_estimators,
    register_estimator,
    whiten,
)

# ----------------------------------------------------------------------------------------------
# Loop references: one row at a time, over the list of valid indices.
# ----------------------------------------------------------------------------------------------


def ref_returns(rewards, mask, gamma):
    B, T = len(rewards), len(rewards[0])
    out = [[0.0] * T for _ in range(B)]
    for b in range(B):
        idx = [t for t in range(T) if mask[b][t]]
        for k, t in enumerate(idx):
            out[b][t] = sum(gamma**j * rewards[b][idx[k + j]] for j in range(len(idx) - k))
    return out


def ref_gae(rewards, values, mask, gamma, lam):
    B, T = len(rewards), len(rewards[0])
    adv = [[0.0] * T for _ in range(B)]
    for b in range(B):
        idx = [t for t in range(T) if mask[b][t]]
        deltas = []
        for k, t in enumerate(idx):
            v_next = values[b][idx[k + 1]] if k + 1 < len(idx) else 0.0
            deltas.append(rewards[b][t] + gamma * v_next - values[b][t])
        for k, t in enumerate(idx):
            adv[b][t] = sum((gamma * lam) ** j * deltas[k + j] for j in range(len(idx) - k))
    return adv


def ref_group(scores, gids, method, eps):
    out = []
    for i, g in enumerate(gids):
        members = [scores[j] for j in range(len(scores)) if gids[j] == g]
        n = len(members)
        mean = sum(members) / n
        if method == "grpo":
            std = math.sqrt(sum((x - mean) ** 2 for x in members) / (n - 1))
            out.append((scores[i] - mean) / (std + eps))
        elif method == "dr_grpo":
            out.append(scores[i] - mean)
        else:
            others = [scores[j] for j in range(len(scores)) if gids[j] == g and j != i]
            out.append(scores[i] - sum(others) / len(others))
    return out


def random_batch(B=4, T=7, seed=0, dtype=torch.float64, gaps=True):
    g = torch.Generator().manual_seed(seed)
    rewards = torch.randn(B, T, generator=g, dtype=dtype)
    values = torch.randn(B, T, generator=g, dtype=dtype)
    mask = (torch.rand(B, T, generator=g) < 0.75).to(dtype) if gaps else torch.ones(B, T, dtype=dtype)
    mask[:, 0] = 1.0
    return rewards, values, mask


DTYPES = [torch.float32, torch.float64]


def tol(dtype):
    return {"atol": 1e-5, "rtol": 1e-4} if dtype == torch.float32 else {"atol": 1e-10, "rtol": 1e-9}


# ----------------------------------------------------------------------------------------------
# Against references
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("gamma", [0.0, 0.9, 1.0])
def test_discounted_returns_matches_loop(dtype, gamma):
    r, _, m = random_batch(dtype=dtype)
    got = discounted_returns(r, m, gamma)
    want = torch.tensor(ref_returns(r.tolist(), m.tolist(), gamma), dtype=dtype)
    torch.testing.assert_close(got, want, **tol(dtype))
    assert got.dtype == dtype
    assert (got[m == 0] == 0).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("gamma,lam", [(1.0, 1.0), (0.99, 0.95), (0.9, 0.0), (0.5, 0.7)])
def test_gae_matches_loop(dtype, gamma, lam):
    r, v, m = random_batch(dtype=dtype, seed=3)
    adv, ret = gae(r, v, m, gamma=gamma, lam=lam)
    want = torch.tensor(ref_gae(r.tolist(), v.tolist(), m.tolist(), gamma, lam), dtype=dtype)
    torch.testing.assert_close(adv, want, **tol(dtype))
    torch.testing.assert_close(ret, adv + v, **tol(dtype))
    assert (adv[m == 0] == 0).all()


@pytest.mark.parametrize("method", ["grpo", "dr_grpo", "rloo"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_group_advantages_matches_loop_with_interleaved_groups(method, dtype):
    scores = torch.tensor([1.0, 0.0, 3.0, 0.5, 2.0, 2.0, -1.0, 4.0], dtype=dtype)
    gids = torch.tensor([7, 2, 7, 2, 2, 9, 9, 7])  # members not adjacent, ids not contiguous
    got = group_advantages(scores, gids, method=method, eps=1e-6)
    want = torch.tensor(ref_group(scores.tolist(), gids.tolist(), method, 1e-6), dtype=dtype)
    torch.testing.assert_close(got, want, **tol(dtype))


def test_grpo_uses_bessel_std():
    # Two members 0 and 1: mean 0.5, Bessel std = sqrt(0.5) -> advantages -/+ 0.5/sqrt(0.5).
    a = group_advantages(torch.tensor([0.0, 1.0]), torch.tensor([0, 0]), eps=0.0)
    torch.testing.assert_close(a, torch.tensor([-1.0, 1.0]) / math.sqrt(2.0))


def test_equal_rewards_give_zero_advantage():
    for method in ("grpo", "dr_grpo", "rloo"):
        a = group_advantages(torch.ones(4), torch.zeros(4, dtype=torch.long), method=method)
        assert torch.equal(a, torch.zeros(4))


def test_whiten_masked_moments():
    x, _, m = random_batch(B=5, T=9, seed=4)
    w = whiten(x * 3 + 2, m)
    valid = w[m.bool()]
    assert abs(valid.mean().item()) < 1e-9
    assert abs(valid.var(unbiased=True).item() - 1.0) < 1e-6
    assert (w[m == 0] == 0).all()


def test_registry_estimators_and_broadcast():
    r, v, m = random_batch(B=4, T=5, seed=5)
    gids = torch.tensor([0, 0, 1, 1])
    for name in ("grpo", "dr_grpo", "rloo"):
        adv, ret = compute_advantages(name, rewards=r, mask=m, group_ids=gids)
        a = group_advantages((r * m).sum(1), gids, method=name)
        torch.testing.assert_close(adv, a[:, None] * m)
        assert ret is None  # critic-free: no critic target (was: discounted returns nothing read)
    adv, ret = compute_advantages("gae", rewards=r, mask=m, values=v, gamma=0.9, lam=0.8)
    torch.testing.assert_close(adv, gae(r, v, m, 0.9, 0.8)[0])
    adv, _ = compute_advantages("reinforce", rewards=r, mask=m, gamma=0.9)
    torch.testing.assert_close(adv, discounted_returns(r, m, 0.9))
    adv, _ = compute_advantages("reinforce_pp", rewards=r, mask=m, gamma=0.9)
    torch.testing.assert_close(adv, whiten(discounted_returns(r, m, 0.9), m))
    assert set(list_estimators()) >= {"gae", "grpo", "dr_grpo", "rloo", "reinforce", "reinforce_pp"}


def test_reinforce_pp_baseline_against_a_hand_computation():
    """REINFORCE++-baseline: return-to-go minus the group's mean score, whitened over the batch's valid
    tokens. Group 0: scores 1 and 0 (b = 0.5); group 1: scores 2.1 (a 0.1 per-token reward, as a KL
    term would give, then 2) and 2 (b = 2.05). By hand, G per valid token:
    row 0 (0.5, 0.5, 0.5), row 1 (-0.5, -0.5), row 2 (2.1 - 2.05, 2 - 2.05, 2 - 2.05), row 3 -0.05 x 3."""
    r = torch.tensor([[0.0, 0.0, 1.0], [0.0, 0.0, 0.0], [0.1, 0.0, 2.0], [0.0, 0.0, 2.0]], dtype=torch.float64)
    m = torch.tensor([[1, 1, 1], [1, 1, 0], [1, 1, 1], [1, 1, 1]], dtype=torch.float64)
    gids = torch.tensor([0, 0, 1, 1])
    g = [0.5, 0.5, 0.5, -0.5, -0.5, 0.05, -0.05, -0.05, -0.05, -0.05, -0.05]  # row by row, valid tokens
    mean = sum(g) / len(g)
    std = math.sqrt(sum((x - mean) ** 2 for x in g) / (len(g) - 1))  # Bessel, as whiten
    adv, ret = compute_advantages("reinforce_pp_baseline", rewards=r, mask=m, group_ids=gids)
    want = torch.zeros_like(r)
    want[m.bool()] = torch.tensor([(x - mean) / math.sqrt(std**2 + 1e-8) for x in g], dtype=torch.float64)
    torch.testing.assert_close(adv, want)
    assert ret is None
    # Outcome rewards only: G = R_i - b_g, Dr.GRPO's advantage on every token, whitened over the batch.
    out = torch.zeros_like(r)
    out[[0, 1, 2, 3], [2, 1, 2, 2]] = torch.tensor([1.0, 0.0, 2.1, 2.0], dtype=torch.float64)
    adv, _ = compute_advantages("reinforce_pp_baseline", rewards=out, mask=m, group_ids=gids)
    a = group_advantages(torch.tensor([1.0, 0.0, 2.1, 2.0], dtype=torch.float64), gids, method="dr_grpo")
    torch.testing.assert_close(adv, whiten(a[:, None] * m, m))
    # Both groups dead (scores all -3.7, whose float mean is not -3.7): G is exactly 0, and so is A.
    dead = torch.full((4,), -3.7)[:, None] * torch.tensor([[0.0, 1.0]])
    adv, _ = compute_advantages("reinforce_pp_baseline", rewards=dead, mask=torch.ones(4, 2), group_ids=gids)
    assert (adv == 0).all()
    with pytest.raises(ValueError, match="needs gamma=1"):
        compute_advantages("reinforce_pp_baseline", rewards=r, mask=m, group_ids=gids, gamma=0.99)
    with pytest.raises(ValueError, match="needs group_ids"):
        compute_advantages("reinforce_pp_baseline", rewards=r, mask=m)
    with pytest.raises(ValueError, match="single member"):
        compute_advantages("reinforce_pp_baseline", rewards=r, mask=m, group_ids=torch.arange(4))


@pytest.mark.parametrize("name", GROUP_ESTIMATORS)
def test_group_estimators_need_group_ids(name):
    """Every estimator GROUP_ESTIMATORS names is registered and refuses a batch without group ids."""
    r, _, m = random_batch(B=4, T=5, seed=7)
    assert name in ESTIMATORS
    with pytest.raises(ValueError, match="needs group_ids"):
        compute_advantages(name, rewards=r, mask=m, gamma=1.0)


def test_register_estimator_rejects_duplicates_and_extends():
    with pytest.raises(ValueError, match="already registered"):
        register_estimator("gae")(lambda **kw: None)
    try:

        @register_estimator("zeros_for_test")
        def _zeros(*, rewards, mask, values, group_ids, gamma, lam, eps):
            return torch.zeros_like(rewards), torch.zeros_like(rewards)

        adv, _ = compute_advantages("zeros_for_test", rewards=torch.ones(1, 2), mask=torch.ones(1, 2))
        assert adv.sum() == 0
    finally:
        ESTIMATORS.pop("zeros_for_test", None)


# ----------------------------------------------------------------------------------------------
# Properties
# ----------------------------------------------------------------------------------------------


@st.composite
def batches(draw):
    B = draw(st.integers(1, 4))
    T = draw(st.integers(1, 8))
    seed = draw(st.integers(0, 10_000))
    dtype = draw(st.sampled_from(DTYPES))
    gamma = draw(st.floats(0.0, 1.0))
    return random_batch(B, T, seed, dtype), gamma, dtype


@settings(max_examples=60, deadline=None)
@given(batches())
def test_gae_lambda_one_is_returns_minus_values(args):
    (r, v, m), gamma, dtype = args
    adv, _ = gae(r, v, m, gamma=gamma, lam=1.0)
    want = (discounted_returns(r, m, gamma) - v) * m
    torch.testing.assert_close(adv, want, **tol(dtype))


@settings(max_examples=60, deadline=None)
@given(batches())
def test_gae_lambda_zero_is_td_residual(args):
    (r, v, m), gamma, dtype = args
    adv, _ = gae(r, v, m, gamma=gamma, lam=0.0)
    B, T = r.shape
    for b in range(B):
        idx = [t for t in range(T) if m[b, t]]
        for k, t in enumerate(idx):
            v_next = v[b, idx[k + 1]] if k + 1 < len(idx) else 0.0
            delta = r[b, t] + gamma * v_next - v[b, t]
            assert abs(adv[b, t].item() - float(delta)) < (1e-4 if dtype == torch.float32 else 1e-9)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 6), st.integers(1, 5), st.integers(0, 10_000), st.sampled_from(["grpo", "dr_grpo", "rloo"]))
def test_group_advantages_zero_mean_per_group(G, n_groups, seed, method):
    g = torch.Generator().manual_seed(seed)
    gids = torch.arange(n_groups).repeat(G)[torch.randperm(G * n_groups, generator=g)]
    scores = torch.randn(G * n_groups, generator=g, dtype=torch.float64)
    a = group_advantages(scores, gids, method=method)
    for k in range(n_groups):
        assert abs(a[gids == k].mean().item()) < 1e-9


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_masked_positions_cannot_change_gae(seed, gamma, lam):
    r, v, m = random_batch(seed=seed)
    g = torch.Generator().manual_seed(seed + 1)
    r2 = torch.where(m.bool(), r, torch.randn(r.shape, generator=g, dtype=r.dtype) * 1e3)
    v2 = torch.where(m.bool(), v, torch.randn(v.shape, generator=g, dtype=v.dtype) * 1e3)
    a1, _ = gae(r, v, m, gamma, lam)
    a2, _ = gae(r2, v2, m, gamma, lam)
    torch.testing.assert_close(a1, a2)


def test_pure_functions_do_not_edit_inputs():
    r, v, m = random_batch()
    copies = [t.clone() for t in (r, v, m)]
    gae(r, v, m, 0.9, 0.9)
    discounted_returns(r, m, 0.9)
    whiten(r, m)
    for a, b in zip((r, v, m), copies, strict=True):
        assert torch.equal(a, b)


# ----------------------------------------------------------------------------------------------
# Bad input
# ----------------------------------------------------------------------------------------------


def test_bad_inputs_raise_clear_errors():
    r, v, m = random_batch(B=2, T=3)
    with pytest.raises(ValueError, match="shape"):
        gae(r, v[:, :2], m)
    with pytest.raises(ValueError, match="shape"):
        discounted_returns(r, m[:, :2], 0.9)
    with pytest.raises(ValueError, match="only 0 and 1"):
        gae(r, v, m * 2)
    with pytest.raises(ValueError, match="NaN"):
        gae(r.clone().fill_(float("nan")), v, m)
    with pytest.raises(ValueError, match="gamma"):
        gae(r, v, m, gamma=1.5)
    with pytest.raises(ValueError, match="lam"):
        gae(r, v, m, lam=-0.1)
    with pytest.raises(ValueError, match="single member"):
        group_advantages(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([0, 0, 1]))
    with pytest.raises(ValueError, match="valid: dr_grpo, grpo, rloo"):
        group_advantages(torch.tensor([1.0, 2.0]), torch.tensor([0, 0]), method="ppo")
    with pytest.raises(ValueError, match="one group id per response"):
        group_advantages(torch.tensor([1.0, 2.0]), torch.tensor([0, 0, 0]))
    with pytest.raises(ValueError, match="valid: .*gae.*grpo"):
        compute_advantages("nope", rewards=r, mask=m)
    with pytest.raises(ValueError, match="critic"):
        compute_advantages("gae", rewards=r, mask=m)
    with pytest.raises(ValueError, match="group_ids"):
        compute_advantages("grpo", rewards=r, mask=m)


def test_dead_groups_finds_all_equal_groups_whatever_the_order():
    scores = torch.tensor([1.0, 0.5, 1.0, 0.5, 0.0, 1.0, 1.0])
    gids = torch.tensor([4, 2, 4, 2, 9, 9, 4])  # members not adjacent, ids not contiguous
    dead, inv, counts = dead_groups(scores, gids)
    assert dead.tolist() == [True, True, False]  # groups 2, 4, 9 in sorted order
    assert counts.tolist() == [2, 3, 2] and inv.tolist() == [1, 0, 1, 0, 2, 2, 1]
    assert dead_groups(torch.tensor([0.0, 1e-9]), torch.tensor([0, 0]))[0].tolist() == [True]  # below tol


# ----------------------------------------------------------------------------------------------
# Dead groups: equal scores give exactly zero advantage, in every dtype, for every method
# ----------------------------------------------------------------------------------------------

ALL_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
METHODS = ["grpo", "dr_grpo", "rloo"]


def test_equal_rewards_not_representable_in_float32_give_zero_advantage():
    # Regression: 16 copies of -3.7 used to give A = 0.319 to every member (the float mean is not
    # -3.7), and fractional rewards k/L up to 0.106, while dead_groups called the group dead.
    gids = torch.zeros(16, dtype=torch.long)
    for dtype in ALL_DTYPES:
        for value in [-3.7, 0.1, 1 / 3, 2 / 7, 5 / 11, 1e4 + 0.1]:
            s = torch.full((16,), value, dtype=dtype)
            assert dead_groups(s, gids)[0].tolist() == [True]
            for method in METHODS:
                for eps in (0.0, 1e-6):
                    a = group_advantages(s, gids, method=method, eps=eps)
                    assert a.dtype == dtype and torch.equal(a, torch.zeros_like(a)), (dtype, value, method, eps)
                    r, m = s[:, None], torch.ones(16, 1)
                    adv, _ = compute_advantages(method, rewards=r, mask=m, group_ids=gids, eps=eps)
                    assert torch.equal(adv, torch.zeros_like(adv))


@st.composite
def grouped_scores(draw):
    """Groups of random size, some all-equal, some spread by a tiny offset, some random."""
    dtype = draw(st.sampled_from(ALL_DTYPES))
    big = 1e4 if dtype == torch.float16 else 1e6  # rloo's n/(n-1) (s - mean) stays below float16's max 65504
    n_groups = draw(st.integers(1, 4))
    scores, gids = [], []
    for k in range(n_groups):
        G = draw(st.integers(2, 20))
        kind = draw(st.sampled_from(["equal", "tiny", "random"]))
        base = draw(st.floats(-big, big, width=32))
        if kind == "equal":
            vals = [base] * G
        elif kind == "tiny":
            vals = [base + draw(st.sampled_from([0.0, 1e-9, 1e-7, 1e-3])) * j for j in range(G)]
        else:
            vals = [draw(st.floats(-big, big, width=32)) for _ in range(G)]
        scores += vals
        gids += [3 * k + 1] * G  # ids not contiguous
    perm = draw(st.permutations(range(len(scores))))
    s = torch.tensor([scores[i] for i in perm], dtype=torch.float64).to(dtype)
    return s, torch.tensor([gids[i] for i in perm]), dtype


@settings(max_examples=150, deadline=None)
@given(
    grouped_scores(), st.sampled_from(METHODS), st.sampled_from([0.0, 1e-6, 1e-2]), st.sampled_from([0.0, 1e-8, 1e-3])
)
def test_advantage_is_zero_exactly_in_the_groups_dead_groups_calls_dead(args, method, eps, tol):
    s, gids, dtype = args
    dead, inv, _ = dead_groups(s, gids, tol=tol)
    a = group_advantages(s, gids, method=method, eps=eps, tol=tol)
    assert a.dtype == dtype and torch.isfinite(a).all()
    for k in range(len(dead)):
        members = a[inv == k]
        all_zero = bool((members == 0).all())
        assert all_zero == bool(dead[k]), (k, s[inv == k].tolist(), members.tolist())
    # the dead test is exact equality when tol = 0
    if tol == 0.0:
        for k in range(len(dead)):
            vals = s[inv == k]
            assert bool(dead[k]) == bool((vals == vals[0]).all())


@settings(max_examples=100, deadline=None)
@given(grouped_scores())
def test_grpo_with_eps_zero_is_finite_and_bounded(args):
    s, gids, dtype = args
    a = group_advantages(s, gids, method="grpo", eps=0.0).double()
    _, inv, counts = dead_groups(s, gids)
    assert torch.isfinite(a).all()
    # |s_i - mean| <= sqrt(sum_j (s_j - mean)^2) gives |A_i| <= sqrt(n_g - 1) when eps = 0
    bound = (counts[inv].double() - 1).sqrt()
    slack = 1e-2 if dtype in (torch.float16, torch.bfloat16) else 1e-5
    assert (a.abs() <= bound * (1 + slack)).all()


def test_dead_groups_accepts_every_float_dtype_and_checks_inputs():
    gids = torch.tensor([0, 0, 1, 1])
    for dtype in ALL_DTYPES:
        s = torch.tensor([1.0, 1.0, 0.0, 1.0], dtype=dtype)
        assert dead_groups(s, gids)[0].tolist() == [True, False]
        assert dead_groups(s, gids, tol=0.0)[0].tolist() == [True, False]
    with pytest.raises(ValueError, match="tol must be a finite number >= 0"):
        dead_groups(torch.ones(4), gids, tol=float("nan"))
    with pytest.raises(ValueError, match="group_ids must be integers"):
        dead_groups(torch.ones(4), gids.float())
    with pytest.raises(ValueError, match="scores must be a floating tensor"):
        dead_groups(torch.ones(4, dtype=torch.long), gids)
    with pytest.raises(ValueError, match="eps must be a finite number >= 0"):
        group_advantages(torch.ones(4), gids, eps=float("nan"))
    with pytest.raises(ValueError, match="overflow torch.float16.*rescale the rewards"):  # 1.2e5 > 65504
        group_advantages(torch.tensor([6e4, -6e4], dtype=torch.float16), gids[:2], method="rloo")


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(ALL_DTYPES),
    st.floats(-6e4, 6e4, width=32),
    st.integers(1, 12),
    st.integers(0, 10_000),
    st.sampled_from([0.0, 1e-8]),
)
def test_whiten_constant_or_single_entry_is_exactly_zero(dtype, value, n_valid, seed, eps):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(3, 6, generator=g, dtype=torch.float64).mul(1e3).to(dtype)  # junk where masked
    valid = torch.zeros(18, dtype=torch.bool)
    valid[torch.randperm(18, generator=g)[:n_valid]] = True
    valid = valid.reshape(3, 6)
    x = torch.where(valid, torch.tensor(value, dtype=dtype), x)
    w = whiten(x, valid.to(dtype), eps=eps)
    assert w.dtype == dtype and torch.equal(w, torch.zeros_like(w))


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(ALL_DTYPES),
    st.integers(2, 12),
    st.integers(0, 10_000),
    st.sampled_from([0.0, 1e-8]),
    st.sampled_from([1e-30, 1e-6, 1.0, 1e4]),
)
def test_whiten_with_eps_zero_is_finite_and_unit_variance(dtype, n_valid, seed, eps, scale):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(3, 6, generator=g, dtype=torch.float64) * scale
    m = torch.zeros(18)
    m[torch.randperm(18, generator=g)[:n_valid]] = 1
    m = m.reshape(3, 6)
    x = x.to(dtype)
    if x[m.bool()].unique().numel() < 2:  # rounded to a constant: covered above
        return
    w = whiten(x, m, eps=eps)
    assert torch.isfinite(w).all() and (w[m == 0] == 0).all()
    v = w[m.bool()].double()
    if eps == 0.0 or scale >= 1.0:
        assert abs(v.var(unbiased=True).item() - 1.0) < (2e-2 if dtype in (torch.float16, torch.bfloat16) else 1e-4)


def test_only_critic_estimators_return_critic_targets():
    r, v, m = random_batch(B=4, T=5, seed=6)
    gids = torch.tensor([0, 0, 1, 1])
    for name in ("grpo", "dr_grpo", "rloo", "reinforce", "reinforce_pp", "reinforce_pp_baseline"):
        adv, ret = compute_advantages(
            name, rewards=r, mask=m, group_ids=gids, gamma=1.0 if name == "reinforce_pp_baseline" else 0.9
        )
        assert ret is None and adv.shape == r.shape, name
    adv, ret = compute_advantages("gae", rewards=r, mask=m, values=v, gamma=0.9, lam=0.8)
    torch.testing.assert_close(ret, adv + v)
