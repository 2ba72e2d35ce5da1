"""The MLP actor-critic: CleanRL initialization, the policy protocol, sampling with a generator."""

import math

import pytest
import torch

from rltutor.models import MLPActorCritic


def test_cleanrl_initialization():
    torch.manual_seed(0)
    m = MLPActorCritic(4, 2, hidden=(64, 64))
    w = m.actor_trunk[0].weight  # orthogonal rows, gain sqrt(2): W W^T = 2 I (4 inputs < 64 outputs)
    torch.testing.assert_close(w.T @ w, 2.0 * torch.eye(4), atol=1e-4, rtol=0)
    assert m.actor_head.weight.norm(dim=1).max() <= 0.01 + 1e-6  # near-uniform first policy
    torch.testing.assert_close(m.critic_head.weight.norm(), torch.tensor(1.0))
    assert all((layer.bias == 0).all() for layer in m.modules() if isinstance(layer, torch.nn.Linear))
    logits, _ = m(torch.randn(100, 4))
    assert logits.abs().max() < 0.5


def test_shared_and_separate_trunks_and_no_critic():
    sep, shared, actor = MLPActorCritic(4, 2), MLPActorCritic(4, 2, shared=True), MLPActorCritic(4, 2, critic=False)
    n = [sum(p.numel() for p in m.parameters()) for m in (sep, shared, actor)]
    assert n[0] > n[1] > n[2]
    assert actor.has_critic is False and actor(torch.zeros(1, 4))[1] is None
    with pytest.raises(ValueError, match="no critic"):
        actor.value(torch.zeros(1, 4))


def test_act_is_seeded_and_evaluate_agrees_with_act():
    m = MLPActorCritic(3, 4)
    obs = torch.randn(64, 3)
    a1, lp1, v1 = m.act(obs, torch.Generator().manual_seed(1))
    a2, lp2, _ = m.act(obs, torch.Generator().manual_seed(1))
    assert torch.equal(a1, a2) and a1.min() >= 0 and a1.max() <= 3
    batch = {"obs": obs.view(8, 8, 3), "actions": a1.view(8, 8), "mask": torch.ones(8, 8)}
    out = m.evaluate(batch)
    torch.testing.assert_close(out["logp"], lp1.view(8, 8))
    torch.testing.assert_close(out["values"], v1.view(8, 8))
    assert (out["entropy"] <= math.log(4) + 1e-5).all()


def test_sampling_follows_the_policy_probabilities():
    m = MLPActorCritic(1, 3, critic=False)
    with torch.no_grad():
        m.actor_head.bias.copy_(torch.log(torch.tensor([0.2, 0.3, 0.5])))
        m.actor_head.weight.zero_()
    a, _, _ = m.act(torch.zeros(20000, 1), torch.Generator().manual_seed(0))
    freq = torch.bincount(a, minlength=3).float() / 20000
    torch.testing.assert_close(freq, torch.tensor([0.2, 0.3, 0.5]), atol=0.015, rtol=0)


def test_masked_steps_do_not_matter():
    m = MLPActorCritic(2, 2)
    obs = torch.randn(3, 5, 2)
    mask = torch.tensor([[1, 1, 1, 0, 0]] * 3, dtype=torch.float32)
    batch = {"obs": obs, "actions": torch.zeros(3, 5, dtype=torch.long), "mask": mask}
    out1 = m.evaluate(batch)
    obs2 = obs.clone()
    obs2[:, 3:] = 1e6  # garbage in the padding
    out2 = m.evaluate({**batch, "obs": obs2})
    for k in ("logp", "entropy", "values"):
        torch.testing.assert_close(out1[k], out2[k])
        assert (out1[k][:, 3:] == 0).all()
