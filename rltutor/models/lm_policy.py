"""A language model as an RL policy: the sampler, log-probs of stored completions, the critic.

Chapters 06-10. The pieces, in the order a step of RL post-training uses them:

1. :func:`sample` -- G completions per prompt at temperature tau, token by token, with the KV cache;
   it returns the behaviour log-probs log pi_old(o_t | q, o_<t) of the sampled tokens.
2. :class:`LMPolicy` -- ``evaluate(batch)`` re-computes log pi_theta, the entropy and V(s_t) of the
   stored completions with one causal forward pass; this is what the trainer differentiates.

The supervised warm start is :func:`rltutor.build.sft`; the collector that turns prompts into
scored batches is :class:`rltutor.rollout.tokens.LMCollector`. This module knows no task: the
sampler takes the end-of-sequence and padding ids as arguments.

The critic of token-level PPO is either a value head on the policy's trunk (``critic_kind="head"``) or
a separate model of the same size (``critic_kind="separate"``, initialised from the policy's weights, as
verl and OpenRLHF initialise the critic from a pretrained model). ``critic_kind="none"`` is GRPO's choice:
no second network at all (:func:`critic_cost` measures what that saves).

Indexing, once: a sequence is ``tokens = [q_0 .. q_{P-1}, o_0 .. o_{T-1}]``. The logits at position
``P - 1 + t`` predict ``o_t``, so the response's log-probs come from ``logits[:, P-1 : P-1+T]`` of a
forward pass over ``tokens[:, :-1]``. The value of the state before ``o_t`` is read at the same
position.

Both the sampler and :meth:`LMPolicy.evaluate` divide the logits by the same temperature, so the
behaviour log-probs and the trainer's log-probs are of the same distribution (a mismatch would make
training silently off-policy).
"""

from __future__ import annotations

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

from rltutor.models.gpt import GPTConfig, TinyGPT
from rltutor.utils import get_device

CRITICS = ("none", "head", "separate")


# ----------------------------------------------------------------------------------------------
# Sampling
# ----------------------------------------------------------------------------------------------


def _check_prompts(prompts):
    if not isinstance(prompts, torch.Tensor) or prompts.dim() != 2 or prompts.dtype != torch.long:
        got = tuple(prompts.shape) if isinstance(prompts, torch.Tensor) else type(prompts).__name__
        raise ValueError(
            f"prompts must be a LongTensor (B, P) of token ids, got {got}; build them with a task's sample_prompts"
        )


def completion_lengths(responses: torch.Tensor, eos_id: int = 1) -> torch.Tensor:
    """Tokens up to and including the first ``eos_id`` of each row, or the full width if there is none. (B,)"""
    B, T = responses.shape
    is_eos = responses == eos_id
    first = torch.where(is_eos.any(1), is_eos.float().argmax(1), torch.full((B,), T, device=responses.device))
    return torch.where(is_eos.any(1), first + 1, first)


def sample(
    model: TinyGPT,
    prompts: torch.Tensor,
    max_new_tokens: int,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
    use_cache: bool = True,
    stop_early: bool = True,
    eos_id: int = 1,
    pad_id: int = 0,
):
    """Sample one completion per row of ``prompts`` (B, P); ``eos_id`` ends a completion, ``pad_id`` fills
    the rest (the token tasks' ids, :data:`rltutor.envs.tokens.EOS` and ``PAD``, are the defaults).

    Returns a dict with ``tokens`` (B, P + T) prompt and completion, ``responses`` (B, T), ``logp``
    (B, T) = log pi(o_t | q, o_<t) at this temperature, ``entropy`` (B, T) of each next-token
    distribution, ``mask`` (B, T) = 1 for tokens up to and including the first EOS, and, if the model
    has a value head, ``values`` (B, T) = V(s_t) read off the same forward passes. After EOS a row is
    padded with PAD (mask 0). ``T <= max_new_tokens``: sampling stops when every row has ended
    (``stop_early``). ``temperature=0`` is greedy decoding, with log-probs of the untempered
    distribution.

    With ``use_cache`` each step feeds only the newest token and reads earlier keys/values from the
    KV cache; without it each step re-runs the whole prefix. Both draw the same random numbers, so
    for a fixed generator they give the same tokens (tested in ``tests/test_lm.py``).
    """
    _check_prompts(prompts)
    if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be a positive integer, got {max_new_tokens!r}")
    if not temperature >= 0:
        raise ValueError(f"temperature must be >= 0, got {temperature!r}; use 1.0 for plain sampling")
    B, P = prompts.shape
    device = next(model.parameters()).device
    idx = prompts.to(device)
    if P + max_new_tokens > model.config.block_size + 1:
        raise ValueError(
            f"prompt ({P}) + max_new_tokens ({max_new_tokens}) exceeds the model's block_size "
            f"{model.config.block_size} + 1; build the model with a larger block_size"
        )
    if generator is not None and generator.device != device:  # a CPU seed drives a device generator
        seed = int(torch.randint(0, 2**62, (1,), generator=generator))
        generator = torch.Generator(device).manual_seed(seed)
    # Inference mode: no autograd bookkeeping at all (measurably faster than no_grad on these small
    # operators); the results are copied out as ordinary tensors, which the trainer may use in autograd.
    with torch.inference_mode():
        was_training = model.training
        model.eval()
        cache = model.new_cache(B, P + max_new_tokens) if use_cache else None
        tokens = torch.full((B, P + max_new_tokens), pad_id, dtype=torch.long, device=device)  # written in place
        tokens[:, :P] = idx
        step_logprobs, out_val = [], []  # log pi(. | prefix) of each step, (B, V) each; V(s_t), (B,) each
        done = torch.zeros(B, dtype=torch.bool, device=device)
        T = 0  # completion tokens sampled so far
        params = model.decode_params() if use_cache else None  # the blocks' weights, looked up once
        while T < max_new_tokens:
            if use_cache and T > 0:  # later steps feed only the newest token (model.decode: the lean path)
                h = model.decode(tokens[:, P + T - 1], cache, params)  # (B, C)
            else:  # the prefill feeds the whole prompt; without the cache every step re-runs the prefix
                h = model.trunk(tokens[:, :P] if use_cache else tokens[:, : P + T], cache)[:, -1]  # (B, C)
            logits = model.lm_head(h)  # (B, V): the next-token distribution
            if model.value_head is not None:  # a value head rides along for free: V(s_t) of the same prefix
                out_val.append(model.value_head(h).squeeze(-1))
            if temperature not in (0.0, 1.0):  # (dividing by 1 changes no bit; skipped, like tau = 0)
                logits = logits / temperature
            logprobs = F.log_softmax(logits, dim=-1)  # log pi_tau
            if temperature > 0:
                # The draw torch.multinomial(p, 1) makes, written out: argmax_v p_v / E_v with E_v ~ Exp(1)
                # (Gumbel-max in exponential form). The same random numbers and tokens, minus multinomial's
                # input checks, which wait for the device at every token.
                p = logprobs.exp()
                nxt = (p / torch.empty_like(p).exponential_(generator=generator)).argmax(-1)  # (B,)
            else:
                nxt = logprobs.argmax(-1)
            nxt = nxt.masked_fill(done, pad_id)  # finished rows emit padding
            tokens[:, P + T] = nxt
            step_logprobs.append(logprobs)
            done = done | (nxt == eos_id)
            T += 1
            if stop_early and bool(done.all()):
                break
        model.train(was_training)
        tokens = tokens[:, : P + T].contiguous()  # a copy only when sampling stopped early
        responses = tokens[:, P:]  # (B, T)
        lengths = completion_lengths(responses, eos_id)  # tokens up to and including EOS
        mask = (torch.arange(T, device=device)[None, :] < lengths[:, None]).float()
        # log-probs and entropies of all steps at once, from the distributions the tokens were drawn from
        logprobs = torch.stack(step_logprobs, 1)  # (B, T, V)
        logp = logprobs.gather(-1, responses.unsqueeze(-1)).squeeze(-1)  # log pi(o_t | q, o_<t)
        entropy = -(logprobs.exp() * logprobs).sum(-1)  # H(pi(. | q, o_<t))
        out = {
            "tokens": tokens,
            "responses": responses,
            "logp": torch.where(mask > 0, logp, 0.0),
            "mask": mask,
            "entropy": entropy * mask,
        }
        if out_val:
            out["values"] = torch.stack(out_val, 1) * mask
    return {k: v.clone() for k, v in out.items()}


def token_logprobs(model: TinyGPT, tokens: torch.Tensor, prompt_len: int, temperature: float = 1.0):
    """One causal forward pass over ``tokens`` (B, P + T): log-probs (B, T) of the response tokens,
    the entropy (B, T) of each next-token distribution, and values (B, T) if the model has a head."""
    P = int(prompt_len)
    if not 1 <= P < tokens.shape[1]:
        raise ValueError(
            f"prompt_len={P} must be in [1, {tokens.shape[1] - 1}] for tokens of shape {tuple(tokens.shape)}"
        )
    logits, values = model(tokens[:, :-1])  # (B, P+T-1, V): position j predicts token j+1
    logits = logits[:, P - 1 :]  # (B, T, V): the distributions of o_0 .. o_{T-1}
    if temperature > 0:
        logits = logits / temperature
    logprobs = F.log_softmax(logits, dim=-1)
    actions = tokens[:, P:]  # (B, T)
    logp = logprobs.gather(-1, actions.unsqueeze(-1)).squeeze(-1)  # log pi(o_t | q, o_<t)
    entropy = -(logprobs.exp() * logprobs).sum(-1)  # H(pi(. | q, o_<t))
    if values is not None:
        values = values[:, P - 1 :]  # V(s_t), s_t = (q, o_<t)
    return logp, entropy, values


# ----------------------------------------------------------------------------------------------
# The policy
# ----------------------------------------------------------------------------------------------


class LMPolicy(nn.Module):
    """A :class:`~rltutor.models.gpt.TinyGPT` behind the trainer's Policy protocol, with an optional critic.

    :param model: the language model (the actor).
    :param critic_kind: ``"none"`` (GRPO and family), ``"head"`` (a value head on the actor's trunk) or
        ``"separate"`` (a second TinyGPT of the same size with a value head, initialised from
        the actor's weights). :class:`rltutor.config.Config` has ``critic`` (a bool: learn a
        value function or not) and ``critic_kind`` (this string, used when ``critic`` is true).
    :param temperature: the sampling temperature; ``evaluate`` uses the same one.
    """

    def __init__(self, model: TinyGPT, critic_kind: str = "none", temperature: float = 1.0):
        super().__init__()
        if not isinstance(model, TinyGPT):
            raise ValueError(f"LMPolicy wraps a TinyGPT, got {type(model).__name__}")
        if critic_kind not in CRITICS:
            raise ValueError(f"unknown critic_kind {critic_kind!r}; valid: {', '.join(CRITICS)}")
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0 for RL (sampling and training must match), got {temperature!r}")
        self.model, self.critic_kind, self.temperature = model, critic_kind, float(temperature)
        self.critic = None
        if critic_kind == "head" and model.value_head is None:
            model.value_head = nn.Linear(model.config.n_embd, 1).to(next(model.parameters()).device)
            nn.init.zeros_(model.value_head.weight)
            nn.init.zeros_(model.value_head.bias)
        if critic_kind != "head" and model.value_head is not None:
            model.value_head = None  # an actor without a head; the separate critic owns its own
        if critic_kind == "separate":
            self.critic = copy.deepcopy(model)
            self.critic.value_head = nn.Linear(model.config.n_embd, 1).to(next(model.parameters()).device)
            nn.init.zeros_(self.critic.value_head.weight)
            nn.init.zeros_(self.critic.value_head.bias)
        self.has_critic = critic_kind != "none"

    @torch.no_grad()
    def generate(self, prompts, max_new_tokens, generator=None, stop_early=True, eos_id=1, pad_id=0):
        """:func:`sample` with this policy's model and temperature (and the KV cache)."""
        return sample(
            self.model,
            prompts,
            max_new_tokens,
            self.temperature,
            generator,
            True,
            stop_early,
            eos_id=eos_id,
            pad_id=pad_id,
        )

    def critic_parameters(self) -> list[nn.Parameter]:
        """The parameters that only the value function uses: the value head (``"head"``: the trunk is the
        actor's, so fitting the head alone leaves the policy as it is) or the whole separate critic; none
        without a critic. The trainer's critic warm-up fits these alone."""
        if self.critic is not None:
            return list(self.critic.parameters())
        if self.critic_kind == "head":
            return list(self.model.value_head.parameters())
        return []

    def evaluate(self, batch: dict) -> dict:
        """log pi_theta (B, T), entropy (B, T) and values (B, T) or None for the stored completions."""
        for key in ("tokens", "prompt_len", "actions"):
            if key not in batch:
                raise ValueError(
                    f"an LM batch needs {key!r}; got keys {sorted(batch)}. Build it with "
                    "rltutor.rollout.tokens.LMCollector"
                )
        tokens, pl = batch["tokens"], batch["prompt_len"]
        P = int(pl.reshape(-1)[0]) if isinstance(pl, torch.Tensor) else int(pl)
        if isinstance(pl, torch.Tensor) and pl.numel() > 1 and not bool((pl == P).all()):
            raise ValueError(f"all rows of an LM batch must share one prompt_len; got {sorted(set(pl.tolist()))}")
        if tokens.shape[1] - P != batch["actions"].shape[1]:
            raise ValueError(
                f"tokens (B, {tokens.shape[1]}) minus prompt_len {P} must equal the width of "
                f"actions {tuple(batch['actions'].shape)}"
            )
        logp, entropy, values = token_logprobs(self.model, tokens, P, self.temperature)
        if self.critic is not None:
            _, _, values = token_logprobs(self.critic, tokens, P, self.temperature)
        return {"logp": logp, "entropy": entropy, "values": values}


def make_model(
    vocab_size: int, block_size: int, n_layer: int = 2, n_head: int = 4, n_embd: int = 64, seed: int = 0, device=None
) -> TinyGPT:
    """A seeded TinyGPT on the chosen device (cuda when present)."""
    torch.manual_seed(seed)
    cfg = GPTConfig(vocab_size=vocab_size, block_size=block_size, n_layer=n_layer, n_head=n_head, n_embd=n_embd)
    return TinyGPT(cfg).to(get_device(device))


# ----------------------------------------------------------------------------------------------
# What the critic costs
# ----------------------------------------------------------------------------------------------


def critic_cost(policy: LMPolicy) -> dict:
    """Parameters and training-state bytes of the actor and of the critic it carries.

    Training state per trainable parameter: fp32 weight + grad + Adam's two moments = 16 bytes.
    """
    actor = sum(p.numel() for n, p in policy.model.named_parameters() if not n.startswith("value_head"))
    if policy.critic_kind == "head":
        critic = sum(p.numel() for p in policy.model.value_head.parameters())
    elif policy.critic_kind == "separate":
        critic = sum(p.numel() for p in policy.critic.parameters())
    else:
        critic = 0
    return {
        "actor_params": actor,
        "critic_params": critic,
        "train_state_bytes": 16 * (actor + critic),
        "critic_share": critic / (actor + critic),
    }
