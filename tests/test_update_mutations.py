"""Fast tests of the trainer's update that a wrong sign or a dropped term would fail.

Each test makes one update on a hand-made batch and checks one property of the loss
L = L_pi - c_ent * H + c_v * L_V: the entropy bonus raises the entropy, the value loss moves V toward
the returns, minibatch whitening makes the update blind to the scale and offset of the advantages.
scripts/mutation.sh checks that these tests notice such mutations.
"""

import pytest
import torch

import rltutor.train as train_module
from rltutor.advantages import compute_advantages, whiten
from rltutor.config import make_config
from rltutor.losses import aggregate
from rltutor.train import Trainer

B, T = 6, 5


def hand_batch(seed: int = 0, critic: bool = False) -> dict:
    """B rows of T CartPole-shaped steps (obs_dim 4, 2 actions), the last row one step shorter."""
    g = torch.Generator().manual_seed(seed)
    mask = torch.ones(B, T)
    mask[-1, -1] = 0
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
