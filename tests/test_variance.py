"""Tests of rltutor.experiments.variance: exact quantities, loop vs vectorized, Monte Carlo vs exact enumeration."""

import itertools
import math

import pytest
import torch

from rltutor.advantages import discounted_returns, gae
from rltutor.experiments import variance as an


def _rollouts_from_good(task, good):
    """Rollouts whose batches are the given (M, B, T) bool configurations (K = 2, no noise draws)."""
    good = good.bool()
    return an.Rollouts(task, good, (~good).long(), None, None, torch.float64)


def _exact_moments(task, spec, B):
    """Exact E g and E|g - E g|^2 for K = 2, noise 0, by enumerating all 2^(B T) action tables."""
    T = task.T
    configs = torch.tensor(list(itertools.product([1, 0], repeat=B * T)), dtype=torch.bool).reshape(-1, B, T)
    p = task.p_good
    prob = torch.where(configs, p, 1 - p).double().reshape(len(configs), -1).prod(1)  # (M,)
    roll = _rollouts_from_good(task, configs)
    g = an.batch_gradients(roll, an.estimator_advantages(spec, roll, an.task_rewards(roll))).reshape(len(configs), -1)
    mean = (prob[:, None] * g).sum(0)
    var = (prob * ((g - mean) ** 2).sum(1)).sum()
    return mean, float(var)


@pytest.mark.parametrize("reward", an.REWARDS)
@pytest.mark.parametrize("K", [2, 3])
def test_true_gradient_matches_autograd_of_exact_objective(reward, K):
    T = 3
    task = an.ChainTask(T=T, reward=reward, K=K, p=0.4)
    pi = an.policy_probs(task)
    theta = pi.log().clone().requires_grad_(True)  # logits giving exactly pi
    probs = torch.softmax(theta, dim=-1)
    J = 0.0
    for seq in itertools.product(range(K), repeat=T):  # E[R] by enumeration of all action sequences
        pr = torch.stack([probs[t, a] for t, a in enumerate(seq)]).prod()
        good = torch.tensor([a == 0 for a in seq], dtype=torch.float64)
        R = {"dense": good.sum(), "terminal": good.mean(), "exact": good.prod()}[reward]
        J = J + pr * R
    (grad,) = torch.autograd.grad(J, theta)
    torch.testing.assert_close(grad, an.true_gradient(task))


@pytest.mark.parametrize("c", [0.0, 0.3, 0.9, 1.0])
@pytest.mark.parametrize("T", [1, 5, 32, 77])
def test_reverse_discounted_sum_matches_loop(c, T):
    x = torch.randn(6, T, dtype=torch.float64)
    ref = discounted_returns(x, torch.ones_like(x), c)
    torch.testing.assert_close(an.reverse_discounted_sum(x, c, block=8), ref)


@pytest.mark.parametrize("reward", an.REWARDS)
@pytest.mark.parametrize("name", an.ESTIMATOR_NAMES)
def test_fast_advantages_equal_the_library(reward, name):
    task = an.ChainTask(T=13, reward=reward, K=3, p=0.6, noise=0.3)
    roll = an.sample_rollouts(task, 3, 8, seed=1, dtype=torch.float64)
    r = an.task_rewards(roll)
    spec = an.EstimatorSpec(name, G=4, gamma=0.9, lam=0.7, critic_noise=0.5)
    fast = an.estimator_advantages(spec, roll, r, fast=True)
    slow = an.estimator_advantages(spec, roll, r, fast=False)
    torch.testing.assert_close(fast, slow)


@pytest.mark.parametrize("reward", an.REWARDS)
def test_true_values_satisfy_the_bellman_equation(reward):
    # E[r_t + gamma V_{t+1} | s_t] = V_t, checked as: GAE with lambda = 0 (the TD residual) has mean 0
    # at every step, and the Monte-Carlo return-to-go averages to V_0.
    task = an.ChainTask(T=6, reward=reward, K=2, p=0.35)
    M, B = 1, 20000
    roll = an.sample_rollouts(task, M, B, seed=3, dtype=torch.float64)
    r = an.task_rewards(roll).reshape(B, -1)
    v = an.true_values(roll, 0.8).reshape(B, -1)
    adv, _ = gae(r, v, torch.ones_like(r), gamma=0.8, lam=0.0)
    se = adv.std(0) / math.sqrt(B)
    assert (adv.mean(0).abs() < 5 * se + 1e-12).all()
    ret = discounted_returns(r, torch.ones_like(r), 0.8)[:, 0]
    assert abs(ret.mean() - v[0, 0]) < 5 * ret.std() / math.sqrt(B)


SPECS = [
    an.EstimatorSpec("reinforce", gamma=1.0),
    an.EstimatorSpec("reinforce", gamma=0.7),
    an.EstimatorSpec("grpo", G=2),
    an.EstimatorSpec("dr_grpo", G=2),
    an.EstimatorSpec("rloo", G=2),
    an.EstimatorSpec("gae", gamma=1.0, lam=0.5),
    an.EstimatorSpec("gae", gamma=0.8, lam=0.0),
]


@pytest.mark.parametrize("reward", an.REWARDS)
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.name}-g{s.gamma}-l{s.lam}")
def test_monte_carlo_matches_exact_enumeration(reward, spec):
    """Noise-free, T = 2, B = 2: the Monte-Carlo variance and mean match the exact ones (4.5 sigma)."""
    task = an.ChainTask(T=2, reward=reward, K=2, p=0.35)
    mean_x, var_x = _exact_moments(task, spec, B=2)
    rows, grads = an.measure_specs(
        task, [spec], batch_size=2, n_batches=20000, seed=7, dtype=torch.float64, return_gradients=True
    )
    row, g = rows[0], grads[0].reshape(20000, -1)
    assert abs(row["variance"] - var_x) <= 4.5 * row["variance_se"] + 1e-12
    se = g.std(0) / math.sqrt(len(g))
    assert ((g.mean(0) - mean_x).abs() <= 4.5 * se + 1e-12).all()


def test_unbiased_estimators_have_the_true_gradient_as_mean_and_dr_grpo_is_scaled():
    task = an.ChainTask(T=2, reward="dense", K=2, p=0.35)
    gt = an.true_gradient(task).reshape(-1)
    for spec in (
        an.EstimatorSpec("reinforce"),
        an.EstimatorSpec("rloo", G=2),
        an.EstimatorSpec("gae", gamma=1.0, lam=0.3),
    ):
        mean, _ = _exact_moments(task, spec, B=2)
        torch.testing.assert_close(mean, gt)
    mean, _ = _exact_moments(task, an.EstimatorSpec("dr_grpo", G=2), B=2)
    torch.testing.assert_close(mean, gt * (2 - 1) / 2)  # the group mean includes the sample itself


@pytest.mark.parametrize("noise", [0.0, 1.0])
def test_horizon_one_reinforce_variance_closed_form(noise):
    """T = 1, K = 2: Var g = (1/B) [2p(1-p)^2 (1 + s^2) + 2p^2 (1-p) s^2 - 2p^2 (1-p)^2]."""
    p, B = 0.3, 4
    task = an.ChainTask(T=1, reward="dense", K=2, p=p, noise=noise)
    exact = (2 * p * (1 - p) ** 2 * (1 + noise**2) + 2 * p**2 * (1 - p) * noise**2 - 2 * p**2 * (1 - p) ** 2) / B
    row = an.measure_specs(
        task, [an.EstimatorSpec("reinforce")], batch_size=B, n_batches=40000, seed=11, dtype=torch.float64
    )[0]
    assert abs(row["variance"] - exact) <= 4.5 * row["variance_se"]


@pytest.mark.parametrize("name", ["rloo", "dr_grpo", "gae_critic"])
def test_horizon_one_noisy_variance_by_enumeration_and_linearity(name):
    """T = 1 with reward noise: these estimators are linear in the noise, so
    Var g = Var_a E[g | a] + s^2 E_a sum_j |dg/d eps_j|^2, computed exactly over the 2^B action tables."""
    p, B, s = 0.3, 4, 0.8
    spec = an.EstimatorSpec(name, G=4, gamma=1.0, lam=1.0, critic_noise=0.0)
    task = an.ChainTask(T=1, reward="dense", K=2, p=p, noise=s)
    configs = torch.tensor(list(itertools.product([1, 0], repeat=B)), dtype=torch.bool).reshape(-1, B, 1)
    prob = torch.where(configs, p, 1 - p).double().reshape(len(configs), -1).prod(1)
    M = len(configs)

    def grads(eps):
        roll = an.Rollouts(task, configs, (~configs).long(), eps, None, torch.float64)
        return an.batch_gradients(roll, an.estimator_advantages(spec, roll, an.task_rewards(roll))).reshape(M, -1)

    g0 = grads(torch.zeros(M, B, 1, dtype=torch.float64))
    mean = (prob[:, None] * g0).sum(0)
    var = float((prob * ((g0 - mean) ** 2).sum(1)).sum())
    for j in range(B):
        e = torch.zeros(M, B, 1, dtype=torch.float64)
        e[:, j] = 1.0
        jac = (grads(e) - g0) / s  # dg / d eps_j (reward = good + s * eps)
        var += float((prob * (s**2) * (jac**2).sum(1)).sum())
    row = an.measure_specs(task, [spec], batch_size=B, n_batches=40000, seed=5, dtype=torch.float64)[0]
    assert abs(row["variance"] - var) <= 4.5 * row["variance_se"]


def test_grpo_snr_falls_with_horizon_and_td_gae_does_not():
    """The chapter's claim, as a property: from T = 4 to T = 128 GRPO's SNR drops by > 10x, while
    GAE with the true value function and lambda = 0 keeps it within a factor 2."""
    df = an.horizon_curve([4, 128], "corridor", G=8, n_groups=4, lam=0.0, n_batches=128, estimators=("grpo", "gae"))
    snr = df.pivot(index="T", columns="estimator", values="snr")
    assert snr.loc[4, "grpo"] / snr.loc[128, "grpo"] > 10
    assert 0.5 < snr.loc[4, "gae"] / snr.loc[128, "gae"] < 2


def test_bad_values_are_refused_with_the_value_and_the_fix():
    with pytest.raises(ValueError, match=r"G=1.*G=2 or more"):
        an.measure("corridor", T=4, G=1, estimators=("grpo",))
    with pytest.raises(ValueError, match=r"lam=1.5.*0 = one-step TD"):
        an.measure("corridor", T=4, lam=1.5)
    with pytest.raises(ValueError, match=r"lam=-0.1"):
        an.EstimatorSpec("gae", lam=-0.1)
    with pytest.raises(ValueError, match=r"gamma=2"):
        an.measure("corridor", T=4, gamma=2)
    with pytest.raises(ValueError, match=r"T=0"):
        an.measure("corridor", T=0)
    with pytest.raises(ValueError, match="noise=-1"):
        an.measure("corridor", T=4, noise=-1)
    with pytest.raises(ValueError, match="unknown estimator 'ppo'"):
        an.EstimatorSpec("ppo")
    with pytest.raises(ValueError, match="multiple of the group size G=3"):
        an.measure_specs(an.make_chain("corridor", T=2), [an.EstimatorSpec("grpo", G=3)], batch_size=8)


def test_same_seed_same_numbers():
    a = an.measure("tokens", T=16, n_batches=16, seed=3)
    b = an.measure("tokens", T=16, n_batches=16, seed=3)
    assert a.equals(b)


@pytest.mark.parametrize("task", ["corridor", "corridor_dense", "tokens"])
@pytest.mark.parametrize("noise", [0.0, 0.5])
@pytest.mark.parametrize("T", [1, 16])
def test_closed_form_snr_matches_monte_carlo(task, noise, T):
    """The chapter's formulas (snr_theory) against the measurement: within 8% with 3000 batches; GAE with the
    true V at lambda = 0, 0.5 and 1 (chapter 7's bound)."""
    t = an.make_chain(task, T=T, noise=noise)
    specs = [
        an.EstimatorSpec("rloo", G=4),
        an.EstimatorSpec("gae", lam=0.0),
        an.EstimatorSpec("gae_critic", lam=0.0, critic_noise=1.5),
        an.EstimatorSpec("gae", lam=0.5),
        an.EstimatorSpec("gae", lam=1.0),
    ]
    rows = an.measure_specs(t, specs, batch_size=16, n_batches=3000, seed=2)
    theory = [
        an.snr_theory(t, "rloo", batch_size=16, G=4),
        an.snr_theory(t, "gae_td", batch_size=16),
        an.snr_theory(t, "gae_td", batch_size=16, critic_noise=1.5),
        an.snr_theory(t, "gae_td", batch_size=16, lam=0.5),
        an.snr_theory(t, "gae_td", batch_size=16, lam=1.0),
    ]
    for row, th in zip(rows, theory, strict=True):
        assert row["snr"] == pytest.approx(th, rel=0.08), row["name"]


def test_lambda_one_gains_at_most_twice_the_trajectory_snr():
    """With the true V and lambda = 1, GAE's SNR lies between the ideal-baseline (trajectory-level) SNR and twice
    it, tending to twice as T grows; lambda = 0's does not fall with T (no reward noise)."""
    for task in ("corridor", "corridor_dense", "tokens"):
        for T in (1, 4, 64, 1024):
            t = an.make_chain(task, T=T)
            traj = an.snr_theory(t, "ideal_baseline", batch_size=32)
            one = an.snr_theory(t, "gae_td", batch_size=32, lam=1.0)
            assert traj * (1 - 1e-12) <= one <= 2 * traj, (task, T)
        long = an.make_chain(task, T=4096)
        ratio = an.snr_theory(long, "gae_td", batch_size=32, lam=1.0) / an.snr_theory(
            long, "ideal_baseline", batch_size=32
        )
        assert ratio == pytest.approx(2.0, rel=0.01), task
        assert an.snr_theory(long, "gae_td", batch_size=32) == pytest.approx(
            an.snr_theory(an.make_chain(task, T=4), "gae_td", batch_size=32)
        )
    with pytest.raises(ValueError, match="lam = 0 only"):
        an.snr_theory(an.make_chain("corridor", T=4), "gae_td", lam=0.5, critic_noise=1.0)


def test_corridor_preset_pays_what_the_corridor_environment_pays():
    """The analysis model's corridor reward equals rltutor.envs.corridor's for the same good/bad steps, and
    its exact value V(s_t) is the expected final reward given the progress the critic observes."""
    import numpy as np

    from rltutor.envs import make_env

    T, N = 7, 6
    env = make_env("corridor", num_envs=N, seed=3, horizon=T)
    obs = env.reset()
    good = torch.rand(1, N, T, generator=torch.Generator().manual_seed(0)) < 0.6  # follow the cue or not
    total = np.zeros(N)
    for t in range(T):
        follow = good[0, :, t].numpy()
        cue_right = obs[:, 0] > 0
        actions = np.where(follow == cue_right, 1, 0)  # action 1 = "right"
        obs, reward, terminated, truncated, _ = env.step(actions)
        total += reward
    task = an.make_chain("corridor", T=T)
    roll = an.Rollouts(task, good, None, None, None, torch.float64)
    np.testing.assert_allclose(total, an.task_rewards(roll).sum(-1)[0].numpy(), rtol=1e-6)
    # V at the start is p (the expected fraction of cues followed); after the first step it moves by (u - p)/T
    v = an.true_values(roll, 1.0)[0]
    torch.testing.assert_close(v[:, 0], torch.full((N,), task.p_good, dtype=torch.float64))
    torch.testing.assert_close(v[:, 1] - v[:, 0], (good[0, :, 0].double() - task.p_good) / T)


# ----------------------------------------------------------------------------------------------
# Monte-Carlo error: the jackknife SE, the closed-form mean, measuring to a stated precision
# ----------------------------------------------------------------------------------------------


def test_jackknife_se_matches_the_spread_over_repetitions():
    task = an.make_chain("corridor", T=2)
    spec = an.EstimatorSpec("grpo", G=4)
    rows = [an.measure_specs(task, [spec], batch_size=16, n_batches=64, seed=500 + k)[0] for k in range(120)]
    spread = torch.tensor([r["snr"] for r in rows]).std().item()
    jack = torch.tensor([r["snr_se"] for r in rows]).median().item()
    assert jack == pytest.approx(spread, rel=0.3), (jack, spread)


@pytest.mark.parametrize("reward", an.REWARDS)
@pytest.mark.parametrize(
    "spec",
    [
        an.EstimatorSpec("reinforce", gamma=0.8),
        an.EstimatorSpec("gae", gamma=0.9, lam=0.5),
        an.EstimatorSpec("rloo", G=2),
        an.EstimatorSpec("dr_grpo", G=2),
    ],
    ids=lambda s: s.name,
)
def test_exact_mean_gradient_matches_enumeration(reward, spec):
    task = an.ChainTask(T=2, reward=reward, K=2, p=0.7)
    mean, _ = _exact_moments(task, spec, B=4)
    torch.testing.assert_close(an.exact_mean_gradient(task, spec).reshape(-1), mean, rtol=1e-5, atol=1e-7)


def test_group_mean_scale_gives_the_closed_forms_and_grpos_enumerated_mean():
    task = an.ChainTask(T=2, reward="terminal", K=2, p=0.7)
    for name in ("rloo", "dr_grpo"):
        spec = an.EstimatorSpec(name, G=2)
        d, se = an.group_mean_scale(task, spec, n_groups=4096)
        exact = an.exact_mean_gradient(task, spec)
        torch.testing.assert_close(d * an._step_direction(task), exact, rtol=1e-5, atol=1e-7)  # coupling: no noise
    spec = an.EstimatorSpec("grpo", G=2)
    mean, _ = _exact_moments(task, spec, B=4)
    est, signal, signal_se = an.mean_signal(task, spec, rel_se=0.01)
    assert signal == pytest.approx(float(mean @ mean), abs=4 * signal_se + 1e-9)


def test_measure_to_precision_stops_at_the_target():
    task = an.make_chain("corridor", T=4, noise=0.5)
    specs = [an.EstimatorSpec("grpo", G=4), an.EstimatorSpec("gae", lam=0.5), an.EstimatorSpec("reinforce")]
    tight = an.measure_to_precision(task, specs, batch_size=16, rel_se=0.05, min_batches=64, step=32)
    loose = an.measure_to_precision(task, specs, batch_size=16, rel_se=0.2, min_batches=64, step=32)
    for t, lo in zip(tight, loose, strict=True):
        assert an.snr_rel_se(t) <= 0.05 and t["n_batches"] >= 64 and t["n_batches"] % 32 == 0
        assert lo["n_batches"] <= t["n_batches"]
    assert any(t["n_batches"] > 64 for t in tight)  # some estimator needed more than the minimum
    with pytest.raises(ValueError, match="rel_se must be in"):
        an.measure_to_precision(task, specs, rel_se=0.0)
