"""Policies: a small MLP actor-critic for vector observations (the tiny GPT lives in :mod:`rltutor.models.gpt`).

Chapters: *PPO* (02), *GRPO* (03).

Every policy implements the batch contract stated in :mod:`rltutor.rollout`:

* ``evaluate(batch) -> {"logp": (B, T), "entropy": (B, T), "values": (B, T) or None}``: log pi(a_t|s_t)
  of the *stored* actions ``batch["actions"]`` at the stored observations ``batch["obs"]``;
* ``has_critic``: whether ``values`` is a tensor;

and, for the collectors of :mod:`rltutor.rollout`, ``act(obs, generator)`` which samples actions.

Implementation details (after CleanRL's ``ppo.py``, "The 37 Implementation Details of PPO",
Huang et al., ICLR blog track 2022)

1. Orthogonal initialization: hidden layers with gain sqrt(2), the policy head with gain 0.01 (the
   first policy is almost uniform), the value head with gain 1; biases 0.
2. Tanh activations, two hidden layers of 64.
3. Separate actor and critic trunks by default (``shared=False``); ``shared=True`` puts both heads on
   one trunk, which halves the parameters and couples the two losses through ``vf_coef``.
4. ``critic=False`` builds no value head at all: GRPO's "no critic, half the memory".
5. Sampling uses an explicit ``torch.Generator`` (inverse-CDF on one uniform per row) so a seed
   fixes every action.
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["MLPActorCritic", "layer_init"]


def layer_init(layer: nn.Linear, std: float = math.sqrt(2), bias: float = 0.0) -> nn.Linear:
    """Orthogonal weights with gain ``std``, constant bias (CleanRL's ``layer_init``)."""
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias)
    return layer


def _trunk(sizes: list[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:], strict=True):
        layers += [layer_init(nn.Linear(n_in, n_out)), nn.Tanh()]
    return nn.Sequential(*layers)


class MLPActorCritic(nn.Module):
    """A categorical policy pi(a|s) and, optionally, a value function V(s), both small MLPs.

    Args:
        obs_dim: size of an observation vector.
        n_actions: number of discrete actions.
        hidden: hidden layer sizes.
        shared: one trunk for both heads (True) or a separate trunk each (False, CleanRL's choice).
        critic: build a value head (PPO) or not (GRPO, REINFORCE).
    """

    def __init__(
        self,
        obs_dim: int,
        n_actions: int,
        hidden: tuple[int, ...] = (64, 64),
        shared: bool = False,
        critic: bool = True,
    ):
        super().__init__()
        if obs_dim < 1 or n_actions < 2:
            raise ValueError(f"need obs_dim >= 1 and n_actions >= 2, got obs_dim={obs_dim}, n_actions={n_actions}")
        sizes = [obs_dim, *hidden]
        self.shared = shared
        self.has_critic = critic
        self.actor_trunk = _trunk(sizes)
        self.actor_head = layer_init(nn.Linear(sizes[-1], n_actions), std=0.01)
        self.critic_trunk = None
        self.critic_head = None
        if critic:
            self.critic_trunk = None if shared else _trunk(sizes)
            self.critic_head = layer_init(nn.Linear(sizes[-1], 1), std=1.0)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """obs (..., obs_dim) -> logits (..., n_actions), values (...) or None."""
        h = self.actor_trunk(obs)
        logits = self.actor_head(h)
        if not self.has_critic:
            return logits, None
        hc = h if self.shared else self.critic_trunk(obs)
        return logits, self.critic_head(hc).squeeze(-1)

    def critic_parameters(self) -> list[nn.Parameter]:
        """The parameters that only the value function uses: its head, and its trunk unless it is shared with
        the actor (fitting these alone leaves the policy as it is); none without a critic."""
        if not self.has_critic:
            return []
        trunk = [] if self.shared else list(self.critic_trunk.parameters())
        return trunk + list(self.critic_head.parameters())

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """V(s) for obs (..., obs_dim) -> (...). Only for policies with a critic."""
        if not self.has_critic:
            raise ValueError("this policy has no critic (critic=False); nothing to bootstrap with")
        hc = self.actor_trunk(obs) if self.shared else self.critic_trunk(obs)
        return self.critic_head(hc).squeeze(-1)

    @torch.no_grad()
    def act(self, obs: torch.Tensor, generator: torch.Generator | None = None):
        """Sample a ~ pi(.|s) for obs (N, obs_dim) -> actions (N,), logp (N,), values (N,) or None."""
        logits, values = self(obs)
        logp_all = torch.log_softmax(logits, dim=-1)  # (N, A)
        u = torch.rand(obs.shape[0], 1, generator=generator).to(logits.device)  # (N, 1) one uniform per row
        cdf = logp_all.exp().cumsum(-1)  # (N, A)
        actions = (cdf < u).sum(-1).clamp_max(logits.shape[-1] - 1)  # inverse CDF: first a with F(a) >= u
        logp = logp_all.gather(-1, actions.unsqueeze(-1)).squeeze(-1)  # log pi(a|s), (N,)
        return actions, logp, values

    def evaluate(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor | None]:
        """Log-probs and entropies of the stored actions; batch["obs"] (B, T, obs_dim), ["actions"] (B, T).

        Only valid steps (``batch["mask"]`` = 1) go through the network; padded ones come back as 0.
        """
        obs, actions = batch["obs"], batch["actions"]
        valid = batch["mask"].bool() if "mask" in batch else torch.ones(actions.shape, dtype=torch.bool)
        logits, values = self(obs[valid])  # (n, A), (n,) for the n valid steps
        logp_all = torch.log_softmax(logits, dim=-1)  # (n, A)
        logp = logp_all.gather(-1, actions[valid].unsqueeze(-1)).squeeze(-1)  # log pi(a_t|s_t), (n,)
        entropy = -(logp_all.exp() * logp_all).sum(-1)  # H = -sum_a pi log pi, (n,)

        def to_rows(x: torch.Tensor) -> torch.Tensor:  # (n,) -> (B, T), zeros where padded
            return torch.zeros(actions.shape, dtype=x.dtype, device=x.device).masked_scatter(valid, x)

        return {
            "logp": to_rows(logp),
            "entropy": to_rows(entropy),
            "values": None if values is None else to_rows(values),
        }
