"""A policy over command templates with arguments: the agent of chapter 11 that learns in CPU seconds.

Why not the token-level TinyGPT? Warm-started on scripted honest solves with a curriculum over hops, the
word-level agent learns one- and two-hop toolshell tasks but, after about ten CPU-minutes, solves few of the
chapter's three-hop ones (the stored measurement: :mod:`rltutor.experiments.token_agent`, chapter 11), and
its RL updates cost seconds each: RL could not get far enough in CPU minutes to show hacking being learned.
This policy keeps what the chapter needs (an RL policy that picks tool calls, a critic, log-probs the one
trainer uses) and drops what costs the time (writing the command token by token).

At each turn the chooser (:class:`rltutor.rollout.templates.TemplateChooser`) lists *candidates*: a template with an
argument taken from the observations so far (``cat PATH`` for each path seen, ``ls DIR``, ``grep -rn
WORD .``, ``curl URL``, ``submit NUMBER``), each described by a feature vector x_c (F,); the state by
s (S,). The policy scores every candidate with one small MLP and samples from the softmax::

    logit_c = f_theta([x_c, s])                      # (B, T, C) one score per candidate
    pi(c | s) = softmax_c(logit_c) over valid candidates (cand_mask)
    V(s) = g_phi([s, mean_c x_c])                    # the critic, when ``critic=True``

Nothing in the network prefers a shortcut: a hack candidate is a (template, argument) pair like any
other, and whether it is worth taking is learned from reward.

The batch (the contract of :mod:`rltutor.rollout`) has one row per episode and one step per turn:
``actions`` (B, T) the chosen candidate index, ``cand`` (B, T, C, F), ``cand_mask`` (B, T, C) bool,
``state`` (B, T, S), plus ``logp``, ``mask``, ``rewards``, ``group_ids`` and ``values``.
"""

from __future__ import annotations

import torch
from torch import nn

from rltutor.models.mlp import layer_init

__all__ = ["TemplatePolicy"]


def _mlp(n_in: int, hidden: int, n_out: int, out_std: float) -> nn.Sequential:
    """Two tanh layers of ``hidden`` and a linear output, initialized as :func:`~rltutor.models.mlp.layer_init`
    does (orthogonal, gain sqrt(2), zero bias), the output layer then again with gain ``out_std``. The layers
    are built first and initialized after (and the output twice), the order the seeded weights come from."""
    layers = [nn.Linear(n_in, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, n_out)]
    for layer in layers[::2]:
        layer_init(layer)
    layer_init(layers[-1], std=out_std)
    return nn.Sequential(*layers)


class TemplatePolicy(nn.Module):
    """pi(candidate | state) by scoring each (template, argument) candidate; optionally V(state).

    Args:
        cand_dim: F, features per candidate; state_dim: S, features of the state.
        hidden: width of the two hidden layers of the scorer (and of the critic).
        critic: build the value head (PPO) or not (GRPO).
    """

    def __init__(self, cand_dim: int, state_dim: int, hidden: int = 64, critic: bool = True):
        super().__init__()
        if cand_dim < 1 or state_dim < 1 or hidden < 1:
            raise ValueError(f"need cand_dim, state_dim, hidden >= 1, got {cand_dim}, {state_dim}, {hidden}")
        self.cand_dim, self.state_dim = cand_dim, state_dim
        self.scorer = _mlp(cand_dim + state_dim, hidden, 1, out_std=0.01)
        self.has_critic = bool(critic)
        self.critic = _mlp(state_dim + cand_dim, hidden, 1, out_std=1.0) if critic else None

    def logits(self, cand: torch.Tensor, cand_mask: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        """cand (..., C, F), cand_mask (..., C), state (..., S) -> masked logits (..., C)."""
        s = state.unsqueeze(-2).expand(*cand.shape[:-1], state.shape[-1])  # (..., C, S)
        logit = self.scorer(torch.cat([cand, s], -1)).squeeze(-1)  # (..., C)
        return logit.masked_fill(~cand_mask, -1e9)

    def value(self, cand: torch.Tensor, cand_mask: torch.Tensor, state: torch.Tensor) -> torch.Tensor | None:
        """V(s) (...), from the state and the mean feature of the valid candidates."""
        if self.critic is None:
            return None
        m = cand_mask.unsqueeze(-1).float()  # (..., C, 1)
        pooled = (cand * m).sum(-2) / m.sum(-2).clamp_min(1.0)  # (..., F)
        return self.critic(torch.cat([state, pooled], -1)).squeeze(-1)

    @torch.no_grad()
    def act(self, cand, cand_mask, state, generator: torch.Generator | None = None):
        """Sample one candidate per row: cand (N, C, F) -> (index (N,), log pi (N,), V (N,) or None)."""
        logp_all = torch.log_softmax(self.logits(cand, cand_mask, state), -1)  # (N, C)
        u = torch.rand(cand.shape[0], 1, generator=generator).to(cand.device)  # inverse CDF, one uniform per row
        cdf = logp_all.exp().cumsum(-1)
        idx = (cdf < u * cdf[:, -1:]).sum(-1).clamp(max=cand.shape[1] - 1)
        idx = torch.where(cand_mask.gather(1, idx[:, None]).squeeze(1), idx, logp_all.argmax(-1))
        v = self.value(cand, cand_mask, state)
        return idx, logp_all.gather(1, idx[:, None]).squeeze(1), v

    def evaluate(self, batch: dict) -> dict:
        """log pi(a_t|s_t) (B, T), entropy (B, T) and V(s_t) (B, T) or None for the stored turns."""
        for key in ("cand", "cand_mask", "state", "actions"):
            if key not in batch:
                raise ValueError(
                    f"a template batch needs {key!r}; got keys {sorted(batch)}. Build it with an "
                    "rltutor.rollout.agent.AgentCollector and a rltutor.rollout.templates.TemplateChooser"
                )
        cand, cmask, state = batch["cand"], batch["cand_mask"].bool(), batch["state"]
        logp_all = torch.log_softmax(self.logits(cand, cmask, state), -1)  # (B, T, C)
        logp = logp_all.gather(-1, batch["actions"].long().unsqueeze(-1)).squeeze(-1)  # (B, T)
        p = logp_all.exp()
        entropy = -(p * logp_all.masked_fill(~cmask, 0.0)).sum(-1)  # H[pi(.|s_t)]
        return {"logp": logp, "entropy": entropy, "values": self.value(cand, cmask, state)}
