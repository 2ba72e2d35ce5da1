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
    batch = {"obs": torch.randn(B, T, 4, generator=g), "actions": torch.randint(0, 2, (B, T), generator=g),
             "logp": torch.full((B, T), -0.69), "mask": mask, "rewards": torch.randn(B, T, generator=g) * mask,
             "group_ids": torch.arange(B) // 3, "dones": torch.zeros(B, T)}
    if critic:
        batch["values"] = torch.zeros(B, T)
    return batch


def trainer(algo: str, **overrides) -> Trainer:
    settings = dict(env="CartPole-v1", seed=0, total_steps=10_000, epochs=1, minibatches=1, lr=1e-2,
                    max_grad_norm=None)
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
    _, returns = compute_advantages("gae", rewards=batch["rewards"], mask=batch["mask"], values=batch["values"],
                                    group_ids=batch["group_ids"], gamma=t.config.gamma, lam=t.config.lam)
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
    m2, p2 = update_with_advantages(monkeypatch, (7.0 * adv + 3.0) * mask, norm_adv="minibatch",
                                    minibatches=minibatches)
    assert m1["policy_loss"] == pytest.approx(m2["policy_loss"], abs=1e-5)
    for a, b in zip(p1, p2, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
    if minibatches == 1:  # one minibatch: the same as whitening over the batch beforehand
        m3, p3 = update_with_advantages(monkeypatch, whiten(adv, mask), norm_adv="none")
        assert m1["policy_loss"] == pytest.approx(m3["policy_loss"], abs=1e-5)
        for a, b in zip(p1, p3, strict=True):
            torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
