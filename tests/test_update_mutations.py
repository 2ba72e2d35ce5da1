"""Fast tests of the trainer's update that a wrong sign or a dropped term would fail.

Each test makes one update on a hand-made batch and checks one property of the loss
L = L_pi - c_ent * H + c_v * L_V: the entropy bonus raises the entropy, the value loss moves V toward
the returns, minibatch whitening makes the update blind to the scale and offset of the advantages.
scripts/mutation.sh checks that these tests notice such mutations.

The second part (issue 19) covers the whole update: the KL to pi_ref in the reward and in the loss
(k1, k2, k3), the value clip, the ratio and dual clips, the aggregation, the advantage whitening and the
truncation bootstrap of the collectors. Each test there names the mutants of scripts/mutation.sh it
kills; the mutants no test can kill, each with its reason, and the last run's table are in the
"Mutation testing" section of benchmarks/README.md.
"""

import math

import numpy as np
import pytest
import torch

import rltutor.train as train_module
from rltutor.advantages import compute_advantages, discounted_returns, whiten
from rltutor.config import make_config
from rltutor.losses import aggregate, kl_penalty, policy_loss, value_loss
from rltutor.train import Trainer

B, T = 6, 5


def hand_batch(seed: int = 0, critic: bool = False, lengths: list[int] | None = None) -> dict:
    """B rows of T CartPole-shaped steps (obs_dim 4, 2 actions), the last row one step shorter
    (or rows of the given ``lengths``)."""
    g = torch.Generator().manual_seed(seed)
    mask = torch.ones(B, T)
    mask[-1, -1] = 0
    if lengths is not None:
        mask = (torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]).float()
    batch = {
        "obs": torch.randn(B, T, 4, generator=g),
        "actions": torch.randint(0, 2, (B, T), generator=g),
        "logp": torch.full((B, T), -0.69),
        "mask": mask,
        "rewards": torch.randn(B, T, generator=g) * mask,
        "group_ids": torch.arange(B) // 3,
        "dones": torch.zeros(B, T),
    }
    if critic:
        batch["values"] = torch.zeros(B, T)
    return batch


def trainer(algo: str, **overrides) -> Trainer:
    settings = dict(env="CartPole-v1", seed=0, total_steps=10_000, epochs=1, minibatches=1, lr=1e-2, max_grad_norm=None)
    cfg = make_config(algo, **{**settings, **overrides})
    return Trainer(cfg)


def policy_out(t: Trainer, batch: dict) -> dict:
    with torch.no_grad():
        return t.policy.evaluate(batch)


def test_the_entropy_bonus_raises_the_entropy():
    # GRPO with equal scores in every group: every advantage is 0, only -c_ent * H is left in the loss.
    t = trainer("grpo", ent_coef=0.5, norm_adv="none", lr=1e-3)
    with torch.no_grad():  # start away from the uniform policy, whose entropy is already the largest
        g = torch.Generator().manual_seed(2)
        for p in t.policy.parameters():
            p.add_(torch.randn(p.shape, generator=g))
    batch = hand_batch()
    batch["rewards"] = torch.zeros(B, T)
    before = aggregate(policy_out(t, batch)["entropy"], batch["mask"], "token-mean")
    t.update(batch)
    after = aggregate(policy_out(t, batch)["entropy"], batch["mask"], "token-mean")
    assert after > before + 1e-4, (before, after)


def test_the_value_loss_moves_the_value_toward_the_returns():
    t = trainer("ppo", ent_coef=0.0, vf_coef=0.5, vf_clip=None)
    batch = hand_batch(critic=True)
    batch["values"] = policy_out(t, batch)["values"]
    _, returns = compute_advantages(
        "gae",
        rewards=batch["rewards"],
        mask=batch["mask"],
        values=batch["values"],
        group_ids=batch["group_ids"],
        gamma=t.config.gamma,
        lam=t.config.lam,
    )
    m = batch["mask"]

    def mse() -> float:
        return float((((policy_out(t, batch)["values"] - returns) ** 2) * m).sum() / m.sum())

    before = mse()
    t.update(batch)
    assert mse() < before - 1e-3, (before, mse())


def update_with_advantages(monkeypatch, adv: torch.Tensor, **overrides) -> tuple[dict, list[torch.Tensor]]:
    """One update of a fresh seed-0 trainer whose estimator returns ``adv``."""
    t = trainer("grpo", ent_coef=0.0, **overrides)
    monkeypatch.setattr(train_module, "compute_advantages", lambda *a, **k: (adv.clone(), None))
    metrics = t.update(hand_batch())
    return metrics, [p.detach().clone() for p in t.policy.parameters()]


@pytest.mark.parametrize("minibatches", [1, 2])
def test_minibatch_whitening_ignores_the_scale_and_offset_of_the_advantages(monkeypatch, minibatches):
    mask = hand_batch()["mask"]
    adv = torch.randn(B, T, generator=torch.Generator().manual_seed(1)) * mask
    m1, p1 = update_with_advantages(monkeypatch, adv, norm_adv="minibatch", minibatches=minibatches)
    m2, p2 = update_with_advantages(
        monkeypatch, (7.0 * adv + 3.0) * mask, norm_adv="minibatch", minibatches=minibatches
    )
    assert m1["policy_loss"] == pytest.approx(m2["policy_loss"], abs=1e-5)
    for a, b in zip(p1, p2, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
    if minibatches == 1:  # one minibatch: the same as whitening over the batch beforehand
        m3, p3 = update_with_advantages(monkeypatch, whiten(adv, mask), norm_adv="none")
        assert m1["policy_loss"] == pytest.approx(m3["policy_loss"], abs=1e-5)
        for a, b in zip(p1, p3, strict=True):
            torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


# --- survivors of scripts/mutation.sh that change what a reader sees ---------------------------


def padded(seed: int = 3):
    g = torch.Generator().manual_seed(seed)
    mask = torch.ones(4, 5)
    mask[0, 3:] = 0
    mask[2, 1:] = 0
    return g, mask


def test_value_clipping_follows_the_formula():
    from rltutor.losses import value_loss

    g, mask = padded()
    old = torch.randn(4, 5, generator=g)
    values = old + torch.randn(4, 5, generator=g)  # moves of about 1, well past the clip of 0.2
    returns = torch.randn(4, 5, generator=g)
    clip = 0.2
    v_clip = old + (values - old).clamp(-clip, clip)
    want = torch.maximum((values - returns) ** 2, (v_clip - returns) ** 2) / 2  # 1/2 max((V-R)^2, (V_clip-R)^2)
    got = value_loss(values, old, returns, mask, clip=clip, agg=None)
    torch.testing.assert_close(got, want * mask)
    torch.testing.assert_close(value_loss(values, old, returns, mask, clip=clip), (want * mask).sum() / mask.sum())


def test_policy_loss_statistics_follow_their_formulas():
    from rltutor.losses import policy_loss

    g, mask = padded()
    old = -torch.rand(4, 5, generator=g) - 0.1
    logp = old + 0.5 * torch.randn(4, 5, generator=g)
    adv = torch.randn(4, 5, generator=g)
    _, st = policy_loss(logp, old, adv, mask, kind="ppo")
    v = mask.bool()
    log_rho = (logp - old)[v]
    rho = log_rho.exp()
    assert st["approx_kl"] == pytest.approx(float(((rho - 1) - log_rho).mean()), rel=1e-5)  # k3
    assert st["ratio_mean"] == pytest.approx(float(rho.mean()), rel=1e-5)
    assert st["ratio_max"] == pytest.approx(float(rho.max()), rel=1e-5)


@pytest.mark.parametrize("kind", ["gspo", "gmpo"])
def test_sequence_losses_average_over_rows_with_tokens_only(kind):
    from rltutor.losses import policy_loss

    g, mask = padded()
    old = -torch.rand(4, 5, generator=g) - 0.1
    logp = old + 0.1 * torch.randn(4, 5, generator=g)
    adv = torch.randn(4, 1, generator=g).expand(4, 5)
    empty = torch.cat([mask, torch.zeros(1, 5)])  # a fifth row without a valid token must not count
    pad = torch.zeros(1, 5)
    with_empty, _ = policy_loss(
        torch.cat([logp, pad]),
        torch.cat([old, pad]),
        torch.cat([adv, pad]),
        empty,
        kind=kind,
        clip_low=0.2,
        clip_high=0.2,
    )
    without, _ = policy_loss(logp, old, adv, mask, kind=kind, clip_low=0.2, clip_high=0.2)
    torch.testing.assert_close(with_empty, without)


def test_batch_whitening_ignores_the_scale_and_offset_of_the_advantages(monkeypatch):
    mask = hand_batch()["mask"]
    adv = torch.randn(B, T, generator=torch.Generator().manual_seed(1)) * mask
    m1, p1 = update_with_advantages(monkeypatch, adv, norm_adv="batch", minibatches=2)
    m2, p2 = update_with_advantages(monkeypatch, (5.0 * adv - 2.0) * mask, norm_adv="batch", minibatches=2)
    assert m1["policy_loss"] == pytest.approx(m2["policy_loss"], abs=1e-5)
    m3, _ = update_with_advantages(monkeypatch, (5.0 * adv - 2.0) * mask, norm_adv="none", minibatches=2)
    assert m3["policy_loss"] != pytest.approx(m1["policy_loss"], abs=1e-3)  # without whitening it does change
    for a, b in zip(p1, p2, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


def test_dynamic_sampling_drops_exactly_the_dead_groups():
    t = trainer("dapo", minibatches=1)
    batch = hand_batch()  # two groups of three rows
    batch["rewards"] = torch.zeros(B, T)
    batch["rewards"][3, 0] = 1.0  # group 1 has a spread of scores, group 0 is dead
    row = t.update(batch)
    assert row["rows"] == 3 and row["zero_std_frac"] == 0.5
    batch["rewards"][3, 0] = 0.0  # every group dead: nothing to learn, no step
    before = [p.detach().clone() for p in t.policy.parameters()]
    assert t.update(batch)["rows"] == 0
    assert all(torch.equal(p, q) for p, q in zip(before, t.policy.parameters(), strict=True))


def test_kl_to_the_reference_is_reported_and_lowers_the_rewards(monkeypatch):
    t = trainer("grpo", kl_coef=0.5, kl_in_reward=True, kl_kind="k1", norm_adv="none")
    batch = hand_batch()
    ref = policy_out(t, batch)["logp"]
    batch["logp"] = ref + 0.3 * batch["mask"]  # the sampling policy sits 0.3 nats above pi_ref per token
    seen = {}

    def spy(estimator, *, rewards, **kw):
        seen["rewards"] = rewards
        return torch.zeros_like(rewards), None

    monkeypatch.setattr(train_module, "compute_advantages", spy)
    row = t.update(batch)
    assert row["kl_ref"] == pytest.approx(0.3, abs=1e-4)  # k1 = log pi - log pi_ref, masked mean
    torch.testing.assert_close(seen["rewards"], batch["rewards"] - 0.5 * 0.3 * batch["mask"], atol=1e-5, rtol=0)


def test_gae_defaults_are_gamma_1_and_lambda_1():
    from rltutor.advantages import gae

    g, mask = padded()
    rewards, values = torch.randn(4, 5, generator=g), torch.randn(4, 5, generator=g)
    for a, b in zip(gae(rewards, values, mask), gae(rewards, values, mask, gamma=1.0, lam=1.0), strict=True):
        torch.testing.assert_close(a, b)


def test_epochs_run_counts_the_passes():
    assert trainer("grpo", epochs=3).update(hand_batch())["epochs_run"] == 3


def test_zero_std_fraction_counts_groups_of_two():
    """zero_std_frac is over every real group (two rows or more), groups of two included."""
    t = trainer("grpo")
    batch = hand_batch()
    batch["group_ids"] = torch.arange(B) // 2  # three groups of two
    batch["rewards"] = torch.zeros(B, T)
    batch["rewards"][0, 0] = 1.0  # only the first group's two scores differ
    m = t.update(batch)
    assert m["zero_std_frac"] == pytest.approx(2 / 3)


def test_minibatches_split_the_rows():
    """With minibatches=3 an epoch makes three optimizer steps, each on a third of the rows."""
    t = trainer("grpo", minibatches=3)
    steps = []
    original = t.optimizer.step
    t.optimizer.step = lambda *a, **k: (steps.append(1), original(*a, **k))[1]
    t.update(hand_batch())
    assert len(steps) == 3


def test_gae_value_targets_are_the_estimators_returns(monkeypatch):
    """The critic regresses on the estimator's returns (A + V for GAE), not on Monte-Carlo returns."""
    seen = {}
    original = train_module.value_loss

    def spy(values, old_values, returns, mask, **kw):
        seen["returns"] = returns.detach().clone()
        return original(values, old_values, returns, mask, **kw)

    monkeypatch.setattr(train_module, "value_loss", spy)
    t = trainer("ppo", ent_coef=0.0, lam=0.5, gamma=0.9, norm_adv="none")
    batch = hand_batch(critic=True)
    batch["values"] = torch.full((B, T), 0.7) * batch["mask"]
    t.update(batch)
    _, gae_returns = compute_advantages(
        "gae",
        rewards=batch["rewards"],
        mask=batch["mask"],
        values=batch["values"],
        group_ids=batch["group_ids"],
        gamma=0.9,
        lam=0.5,
    )
    # the one minibatch holds every row, in a shuffled order: compare the rows as a set
    key = lambda r: tuple(round(x, 4) for x in r.tolist())  # noqa: E731
    assert sorted(map(key, seen["returns"])) == sorted(map(key, gae_returns))


# --- the second run of scripts/mutation.sh: the whole update -------------------------------------
# Each test below kills named mutants of scripts/mutation.sh (its ids in the comments); each asserts a
# property a reader can see: a logged metric, the rewards the estimator gets, a parameter after a step.

UNEVEN = [5, 4, 3, 5, 2, 1]  # row lengths that make the aggregation modes differ


def perturb(module: torch.nn.Module, seed: int = 2) -> None:
    """Move the policy away from pi_ref (which is a copy of the initial policy)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(0.5 * torch.randn(p.shape, generator=g))


def params(t: Trainer) -> list[torch.Tensor]:
    return [p.detach().clone() for p in t.policy.parameters()]


def moved(before: list[torch.Tensor], t: Trainer) -> bool:
    return any(not torch.equal(a, b) for a, b in zip(before, t.policy.parameters(), strict=True))


def spy_on(monkeypatch, name: str, seen: list, result=None):
    """Replace ``rltutor.train.<name>`` by a wrapper recording its arguments (and, by default, calling it)."""
    original = getattr(train_module, name)

    def spy(*args, **kw):
        out = original(*args, **kw) if result is None else result(*args, **kw)
        seen.append(
            {"args": [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args], "kw": kw, "out": out}
        )
        return out

    monkeypatch.setattr(train_module, name, spy)


@pytest.mark.parametrize("kind", ["k1", "k2", "k3"])
@pytest.mark.parametrize("algo", ["grpo", "ppo"])
def test_kl_in_the_reward_lowers_each_valid_reward_by_exactly_beta_kl(monkeypatch, kind, algo):
    """r_t <- r_t - beta * k(log pi_old, log pi_ref) on valid tokens, padding untouched, nothing in the loss.

    Kills kl_reward_sign, kl_reward_coef, kl_reward_mask, kl_reward_args, kl_reward_kind, kl_ref_mean,
    kl_flag_inverted, kl_both_paths."""
    beta = 0.5
    t = trainer(algo, kl_coef=beta, kl_in_reward=True, kl_kind=kind, norm_adv="none", ent_coef=0.0)
    perturb(t.policy)  # pi_theta != pi_ref, so a KL term in the loss would show
    batch = hand_batch(critic=algo == "ppo", lengths=UNEVEN)
    m = batch["mask"]
    with torch.no_grad():
        ref = t.ref_policy.evaluate(batch)["logp"]
    g = torch.Generator().manual_seed(4)
    batch["logp"] = torch.where(m > 0, ref + 0.5 * torch.randn(B, T, generator=g), 3.0)  # junk on the padding
    seen = []
    spy_on(monkeypatch, "compute_advantages", seen)
    row = t.update(batch)
    k = kl_penalty(batch["logp"], ref, kind)  # (B, T) per-token estimate, padding included
    torch.testing.assert_close(seen[0]["kw"]["rewards"], batch["rewards"] - beta * k * m, atol=1e-6, rtol=0)
    assert row["kl_ref"] == pytest.approx(float(k[m > 0].mean()), rel=1e-5)
    value_term = t.config.vf_coef * row["value_loss"] if algo == "ppo" else 0.0
    assert row["loss"] == pytest.approx(row["policy_loss"] + value_term, abs=1e-6)  # no KL in the loss


@pytest.mark.parametrize("kind", ["k1", "k2", "k3"])
def test_kl_in_the_loss_adds_beta_times_the_aggregated_estimate_and_pulls_toward_pi_ref(monkeypatch, kind):
    """L = L_pi + beta * agg(k(log pi_theta, log pi_ref)): the logged loss carries exactly that term, the
    rewards are untouched, and with A = 0 that term alone moves the policy, lowering agg(k).

    Kills kl_loss_sign, kl_loss_coef, kl_loss_detach, kl_loss_old_logp, kl_loss_kind, kl_loss_rows,
    kl_loss_agg, kl_flag_inverted."""
    beta = 0.5
    t = trainer("grpo", kl_coef=beta, kl_in_reward=False, kl_kind=kind, ent_coef=0.0, lr=1e-3)
    assert t.config.agg == "seq-mean-token-mean"  # not token-mean: a wrong reduction shows
    perturb(t.policy)
    batch = hand_batch(lengths=UNEVEN)
    m = batch["mask"]
    with torch.no_grad():
        ref = t.ref_policy.evaluate(batch)["logp"]

    def kl_term() -> float:
        return float(aggregate(kl_penalty(policy_out(t, batch)["logp"], ref, kind), m, t.config.agg))

    seen = []
    spy_on(monkeypatch, "compute_advantages", seen, result=lambda *a, rewards, **k: (torch.zeros_like(rewards), None))
    before = kl_term()
    row = t.update(batch)
    torch.testing.assert_close(seen[0]["kw"]["rewards"], batch["rewards"])  # nothing in the reward
    assert row["policy_loss"] == 0.0  # A = 0
    assert row["loss"] == pytest.approx(beta * before, rel=1e-5, abs=1e-7)
    assert kl_term() < before - 1e-4, (before, kl_term())


def test_the_reference_policy_is_a_frozen_copy_of_the_initial_policy():
    """Kills kl_ref_moves: pi_ref must not follow the policy's updates."""
    t = trainer("grpo", kl_coef=0.1)
    initial = params(t)
    for seed in (0, 1):
        t.update(hand_batch(seed))
    assert moved(initial, t)
    for a, b in zip(initial, t.ref_policy.parameters(), strict=True):
        assert torch.equal(a, b)


def test_critic_targets_of_a_critic_free_estimator_include_the_kl_penalty(monkeypatch):
    """With a critic beside a critic-free estimator, the critic regresses on the discounted return of the
    rewards the estimator saw (KL penalty included). Kills returns_unpenalized."""
    t = trainer("grpo", critic=True, kl_coef=0.5, kl_in_reward=True, kl_kind="k1", gamma=0.9)
    batch = hand_batch(critic=True)
    m = batch["mask"]
    ref = policy_out(t, batch)["logp"]
    batch["logp"] = ref + 0.3 * m
    seen = []
    spy_on(monkeypatch, "value_loss", seen)
    t.update(batch)
    want = discounted_returns(batch["rewards"] - 0.5 * 0.3 * m, m, 0.9)
    key = lambda r: tuple(round(x, 4) for x in r.tolist())  # noqa: E731  (rows come shuffled)
    assert sorted(map(key, seen[0]["args"][2])) == sorted(map(key, want))


CASES = {
    "grpo, clip-higher": dict(algo="grpo", clip_low=0.2, clip_high=0.28),  # agg seq-mean-token-mean
    "dr_grpo": dict(algo="dr_grpo"),  # agg seq-mean-token-sum-norm
    "ppo, critic, value clip": dict(algo="ppo", agg="seq-mean-token-mean", vf_clip=0.2, vf_coef=0.7),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_logged_metrics_are_the_loss_functions_of_the_batch(monkeypatch, case):
    """One epoch, one minibatch: each logged number equals its function of the batch and the config
    (the minibatch is the batch in another row order, which no reduction sees).

    Kills agg_unused, entropy_unmasked, clip_high_ignored, ratio_on_policy, value_coef, value_sign,
    value_agg, value_rows, vclip_unused, vclip_old_current, ev_unmasked."""
    algo, *_ = CASES[case].values()
    settings = {k: v for k, v in CASES[case].items() if k != "algo"}
    critic = algo == "ppo"
    t = trainer(algo, ent_coef=0.05, norm_adv="none", **settings)
    c = t.config
    batch = hand_batch(critic=critic, lengths=UNEVEN)
    m = batch["mask"]
    out = policy_out(t, batch)
    g = torch.Generator().manual_seed(7)
    batch["logp"] = torch.where(m > 0, out["logp"] + 0.3 * torch.randn(B, T, generator=g), 5.0)  # some ratios clipped
    adv = torch.randn(B, T, generator=g) * m
    returns = None
    if critic:  # stored values about 1 away from the critic's (past the clip), junk on the padding
        batch["values"] = torch.where(m > 0, out["values"] + torch.randn(B, T, generator=g), 9.0)
        returns = torch.where(m > 0, torch.randn(B, T, generator=g), 7.0)
    monkeypatch.setattr(
        train_module, "compute_advantages", lambda *a, **k: (adv.clone(), None if returns is None else returns.clone())
    )
    row = t.update(batch)

    kw = dict(kind=c.loss, clip_low=c.clip_low, clip_high=c.clip_high, dual_clip=c.dual_clip)
    pl, st = policy_loss(out["logp"], batch["logp"], adv, m, agg=c.agg, **kw)
    assert row["policy_loss"] == pytest.approx(float(pl), rel=1e-5, abs=1e-7)
    assert row["clip_frac"] == pytest.approx(st["clip_frac"]) and 0 < st["clip_frac"] < 1
    assert row["approx_kl"] == pytest.approx(st["approx_kl"], rel=1e-5)
    entropy = float(aggregate(out["entropy"], m, c.agg))
    assert row["entropy"] == pytest.approx(entropy, rel=1e-5)
    loss = float(pl) - c.ent_coef * entropy
    if critic:
        vl = float(value_loss(out["values"], batch["values"], returns, m, clip=c.vf_clip))  # token-mean, always
        assert vl != pytest.approx(float(value_loss(out["values"], batch["values"], returns, m)), rel=1e-3)
        assert row["value_loss"] == pytest.approx(vl, rel=1e-5)
        loss += c.vf_coef * vl
        y, v = returns[m > 0], batch["values"][m > 0]
        assert row["explained_variance"] == pytest.approx(float(1 - (y - v).var() / y.var()), rel=1e-5)
    assert row["loss"] == pytest.approx(loss, rel=1e-5, abs=1e-7)
    # the test can tell clip_high from clip_low, and agg from token-mean
    if c.clip_high != c.clip_low:
        other, _ = policy_loss(out["logp"], batch["logp"], adv, m, agg=c.agg, **{**kw, "clip_high": c.clip_low})
        assert float(other) != pytest.approx(float(pl), rel=1e-4)
    flat, _ = policy_loss(out["logp"], batch["logp"], adv, m, agg="token-mean", **kw)
    assert c.agg == "token-mean" or float(flat) != pytest.approx(float(pl), rel=1e-4)


def test_the_value_clip_stops_a_critic_that_moved_past_it(monkeypatch):
    """V_old = V - 1 (the critic already moved 1 > clip = 0.2 up) and R = V + 3 (the target lies further up):
    1/2 max((V - R)^2, (V_clip - R)^2) is then the clipped term, whose gradient in V is 0, so nothing moves;
    without the clip the critic moves. Kills vclip_unused, vclip_old_current, vclip_min, vclip_bounds."""
    for clip, should_move in ((0.2, False), (None, True)):
        t = trainer("ppo", ent_coef=0.0, vf_clip=clip, norm_adv="none")
        batch = hand_batch(critic=True)
        v = policy_out(t, batch)["values"]
        batch["values"] = v - 1.0
        target = v + 3.0
        monkeypatch.setattr(
            train_module, "compute_advantages", lambda *a, target=target, **k: (torch.zeros(B, T), target.clone())
        )
        before = params(t)
        t.update(batch)  # A = 0 and no entropy bonus: only the value loss has a gradient
        assert moved(before, t) == should_move, clip


def test_the_dual_clip_caps_the_loss_of_negative_advantages_at_c_times_A(monkeypatch):
    """rho = e^3 ~ 20 on every token and A = -1: PPO's loss is -A rho ~ 20, the dual clip caps it at -c A = 3
    with no gradient. Kills dual_unused (and dual_max, dual_side, dual_cap_sign)."""
    adv = -hand_batch()["mask"]
    for dual, want in ((3.0, 3.0), (None, None)):
        t = trainer("grpo", dual_clip=dual, ent_coef=0.0, norm_adv="none", agg="token-mean")
        batch = hand_batch()
        batch["logp"] = policy_out(t, batch)["logp"] - 3.0
        monkeypatch.setattr(train_module, "compute_advantages", lambda *a, **k: (adv.clone(), None))
        before = params(t)
        row = t.update(batch)
        if want is None:
            assert row["policy_loss"] == pytest.approx(math.exp(3.0), rel=1e-3) and moved(before, t)
        else:
            assert row["policy_loss"] == pytest.approx(want, rel=1e-5) and row["clip_frac"] == 1.0
            assert not moved(before, t)


def test_the_dual_clip_counts_only_the_tokens_it_caps_in_clip_frac(monkeypatch):
    """Rows 0-2: rho = e^3 and A = -1 (capped at -c A = 3); rows 3-5: rho = 1 and A = +1 (nothing clipped).
    clip_frac is the capped rows' share of the tokens, and the loss their token mean. Kills dual_clipfrac."""
    t = trainer("grpo", dual_clip=3.0, ent_coef=0.0, norm_adv="none", agg="token-mean")
    batch = hand_batch()
    m = batch["mask"]
    low = (torch.arange(B) < 3)[:, None].float()  # (B, 1) rows 0-2
    batch["logp"] = policy_out(t, batch)["logp"] - 3.0 * low
    adv = (1.0 - 2.0 * low) * m
    monkeypatch.setattr(train_module, "compute_advantages", lambda *a, **k: (adv.clone(), None))
    row = t.update(batch)
    n_low, n = float((low * m).sum()), float(m.sum())
    assert row["clip_frac"] == pytest.approx(n_low / n)
    assert row["policy_loss"] == pytest.approx((3.0 * n_low - (n - n_low)) / n, rel=1e-5)


def test_gmpo_clips_the_log_ratio_against_the_advantage_only():
    """GMPO's clip is pessimistic: for A > 0 it may only lower a token's log-ratio (to clip_high), for A < 0
    only raise it (to -clip_low). Two rows, log-ratios (1, -1), clip 0.4. Kills gmpo_unsigned."""
    from rltutor.losses import policy_loss

    old = torch.zeros(2, 2)
    logp = torch.tensor([[1.0, -1.0], [1.0, -1.0]])
    adv = torch.tensor([[1.0, 1.0], [-1.0, -1.0]])
    loss, st = policy_loss(logp, old, adv, torch.ones(2, 2), kind="gmpo", clip_low=0.4, clip_high=0.4)
    # row 0 (A = +1): logs (0.4, -1), mean -0.3, loss -e^-0.3; row 1 (A = -1): logs (1, -0.4), mean 0.3, loss +e^0.3
    assert float(loss) == pytest.approx((-math.exp(-0.3) + math.exp(0.3)) / 2, rel=1e-6)
    assert st["clip_frac"] == 0.5


@pytest.mark.parametrize("mode", ["seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm"])
def test_sequence_means_count_only_rows_with_a_valid_token(mode):
    """B' in (1/B') sum_i is the number of rows with at least one valid token: a row with none adds
    nothing, neither to the sum nor to the count. Kills agg_empty_rows."""
    g, mask = padded()
    x = torch.randn(4, 5, generator=g)
    with_empty = aggregate(torch.cat([x, torch.randn(1, 5, generator=g)]), torch.cat([mask, torch.zeros(1, 5)]), mode)
    torch.testing.assert_close(with_empty, aggregate(x, mask, mode))


@pytest.mark.parametrize("norm_adv", ["minibatch", "batch"])
def test_whitening_uses_the_valid_tokens_of_its_minibatch_or_batch_only(monkeypatch, norm_adv):
    """The advantages the loss gets have masked mean 0 and variance 1 over each minibatch ("minibatch") or
    over the whole batch ("batch"), whatever the padding holds. Kills mbw_padding, mbw_batch_stats,
    mbw_skipped, bw_padding."""
    batch = hand_batch(lengths=UNEVEN)
    m = batch["mask"]
    g = torch.Generator().manual_seed(5)
    adv = torch.where(m > 0, 3.0 * torch.randn(B, T, generator=g) + 1.0, 50.0)  # junk on the padding
    t = trainer("grpo", norm_adv=norm_adv, minibatches=2)
    seen = []
    spy_on(monkeypatch, "policy_loss", seen)
    monkeypatch.setattr(train_module, "compute_advantages", lambda *a, **k: (adv.clone(), None))
    t.update(batch)
    assert len(seen) == 2
    chunks = [s["args"][2][s["args"][3] > 0] for s in seen]  # each step's advantages at valid tokens
    groups = chunks if norm_adv == "minibatch" else [torch.cat(chunks)]
    for a in groups:
        assert abs(float(a.mean())) < 1e-5 and float(a.var()) == pytest.approx(1.0, rel=1e-4)


def test_a_minibatch_with_one_valid_token_keeps_its_advantage(monkeypatch):
    """Whitening one number would zero it (and its gradient); the trainer leaves such a minibatch as it is.
    Kills mbw_one_token."""
    batch = hand_batch(lengths=[1] * B)
    adv = torch.randn(B, T, generator=torch.Generator().manual_seed(6)) * batch["mask"]
    t = trainer("grpo", norm_adv="minibatch", minibatches=B)
    seen = []
    spy_on(monkeypatch, "policy_loss", seen)
    monkeypatch.setattr(train_module, "compute_advantages", lambda *a, **k: (adv.clone(), None))
    t.update(batch)
    got = sorted(float(s["args"][2][s["args"][3] > 0]) for s in seen)
    assert got == pytest.approx(sorted(adv[:, 0].tolist()))


def test_every_epoch_visits_every_row_once_and_the_metrics_average_every_step(monkeypatch):
    """Kills mb_drops_row (a minibatch loses a row) and metrics_last (the last step's loss logged)."""
    t = trainer("grpo", minibatches=3, epochs=2)
    batch = hand_batch(lengths=UNEVEN)
    seen = []
    spy_on(monkeypatch, "policy_loss", seen)
    row = t.update(batch)
    assert len(seen) == 6
    assert sum(int(s["args"][3].shape[0]) for s in seen) == 2 * B
    assert sum(float(s["args"][3].sum()) for s in seen) == 2 * sum(UNEVEN)
    steps = [float(s["out"][0].detach()) for s in seen]
    assert row["policy_loss"] == pytest.approx(sum(steps) / len(steps), rel=1e-5)


def test_max_grad_norm_clips_the_applied_gradient_and_the_log_shows_the_norm_before():
    """Kills grad_clip_unused."""
    t = trainer("grpo", max_grad_norm=1e-3)
    row = t.update(hand_batch())
    applied = torch.linalg.vector_norm(
        torch.stack([p.grad.norm() for p in t.policy.parameters() if p.grad is not None])
    )
    assert row["grad_norm"] > 1e-2
    assert float(applied) <= 1e-3 * (1 + 1e-4)


# --- the truncation bootstrap: gamma V(s_T) where a row was cut, nothing where it ended ---------------


class CycleEnv:
    """Copy i runs episodes of ``lengths[i]`` steps that end ``ends[i]`` ("terminated" or "truncated"), over
    and over; reward 1 per step; obs = (step in the episode, 100 on a final observation)."""

    obs_dim, n_actions, max_episode_steps = 2, 2, 100

    def __init__(self, lengths: list[int], ends: list[str]):
        self.lengths, self.num_envs = np.array(lengths), len(lengths)
        self.terminates = np.array([e == "terminated" for e in ends])
        self.t = np.zeros(self.num_envs, dtype=np.int64)

    def _obs(self):
        return np.stack([self.t, np.zeros(self.num_envs)], 1).astype(np.float32)

    def reset(self, seeds=None):
        self.t[:] = 0
        return self._obs()

    def step(self, actions):
        self.t += 1
        end = self.t == self.lengths
        final = self._obs()
        final[end, 1] = 100.0
        self.t[end] = 0
        return (
            self._obs(),
            np.ones(self.num_envs, dtype=np.float32),
            end & self.terminates,
            end & ~self.terminates,
            final,
        )


class ValuePolicy(torch.nn.Module):
    """Action 0 always; V(s) = 10 + obs[1]: 110 on a final observation, 10 elsewhere."""

    has_critic = True

    def act(self, obs, generator=None):
        return torch.zeros(len(obs), dtype=torch.long), torch.full((len(obs),), -0.5), self.value(obs)

    def value(self, obs):
        return 10.0 + obs[:, 1]


def test_segments_bootstrap_once_where_a_row_was_cut_at_the_segment_end_and_never_where_it_ended():
    """Both copies end an episode exactly at the segment's last step: copy 0 terminates (no bootstrap),
    copy 1 is truncated (gamma V(s_T) = gamma * 110, once, not also gamma V of the next start). Kills seg_end_mask."""
    from rltutor.rollout.vector import SegmentCollector

    batch, _ = SegmentCollector(CycleEnv([2, 3], ["terminated", "truncated"]), num_steps=6, gamma=0.5).collect(
        ValuePolicy()
    )
    assert batch["mask"].sum(1).tolist() == [2, 2, 2, 3, 3]
    cut = 1 + 0.5 * 110
    assert batch["rewards"].tolist() == [[1, 1, 0], [1, 1, 0], [1, 1, 0], [1, 1, cut], [1, 1, cut]]


def test_episodes_cut_by_the_step_limit_are_bootstrapped_and_padding_earns_nothing():
    """max_steps = 2: copy 0 terminates at the limit (no bootstrap), copy 1 is cut by it (+ gamma V(s_T) =
    gamma * 10). Copies that finished early earn nothing on their padding, even when their environment
    truncates again. Kills ep_limit_off_by_one, ep_limit_terminated, ep_cut_inactive."""
    from rltutor.rollout.vector import EpisodeCollector

    col = EpisodeCollector(CycleEnv([2, 5], ["terminated", "terminated"]), group_size=2, gamma=0.5, max_steps=2)
    batch, _ = col.collect(ValuePolicy())
    assert batch["rewards"].tolist() == [[1, 1], [1, 1 + 0.5 * 10]]
    col = EpisodeCollector(CycleEnv([1, 3], ["truncated", "truncated"]), group_size=2, gamma=0.5)
    batch, _ = col.collect(ValuePolicy())
    assert batch["mask"].tolist() == [[1, 0, 0], [1, 1, 1]]
    assert batch["rewards"].tolist() == [[1 + 0.5 * 110, 0, 0], [1, 1, 1 + 0.5 * 110]]
