"""A language model as an RL policy: sampling, the supervised warm start, the collector, the reference.

Chapters 06-10. The pieces, in the order a step of RL post-training uses them:

1. :func:`sft` -- a supervised warm start on correct answers, so RL starts from a policy that is
   sometimes right (as real post-training starts from an instruction-tuned model).
2. :func:`sample` -- G completions per prompt at temperature tau, token by token, with the KV cache;
   it returns the behaviour log-probs log pi_old(o_t | q, o_<t) of the sampled tokens.
3. :class:`LMCollector` -- prompts -> completions -> verifiable rewards -> a batch in the trainer's
   format (``notes/CONTRACT.md``): ``actions``, ``logp``, ``mask``, ``rewards`` (outcome reward on
   the last valid token), ``group_ids``, plus ``tokens``/``prompt_len`` to re-evaluate, ``values``
   when there is a critic, ``ref_logp`` when a reference model is given.
4. :class:`LMPolicy` -- ``evaluate(batch)`` re-computes log pi_theta, the entropy and V(s_t) of the
   stored completions with one causal forward pass; this is what the trainer differentiates.

The critic of token-level PPO is either a value head on the policy's trunk (``critic="head"``) or
a separate model of the same size (``critic="separate"``, initialised from the policy's weights, as
verl and OpenRLHF initialise the critic from a pretrained model). ``critic="none"`` is GRPO's choice:
no second network at all (:func:`critic_cost` measures what that saves).

Indexing, once: a sequence is ``tokens = [q_0 .. q_{P-1}, o_0 .. o_{T-1}]``. The logits at position
``P - 1 + t`` predict ``o_t``, so the response's log-probs come from ``logits[:, P-1 : P-1+T]`` of a
forward pass over ``tokens[:, :-1]``. The value of the state before ``o_t`` is read at the same
position.

Both the sampler and :meth:`LMPolicy.evaluate` divide the logits by the same temperature, so the
behaviour log-probs and the trainer's log-probs are of the same distribution (READER_QUESTIONS #15:
a mismatch makes training silently off-policy).
"""

from __future__ import annotations

import copy
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from rltutor.advantages import dead_groups
from rltutor.envs.tokens import EOS, PAD, VOCAB, TokenTask, overlong_penalty, response_lengths
from rltutor.gpt import GPTConfig, TinyGPT
from rltutor.utils import get_device

CRITICS = ("none", "head", "separate")


# ----------------------------------------------------------------------------------------------
# Sampling
# ----------------------------------------------------------------------------------------------


def _check_prompts(prompts):
    if not isinstance(prompts, torch.Tensor) or prompts.dim() != 2 or prompts.dtype != torch.long:
        got = tuple(prompts.shape) if isinstance(prompts, torch.Tensor) else type(prompts).__name__
        raise ValueError(f"prompts must be a LongTensor (B, P) of token ids, got {got}; "
                         "build them with a task's sample_prompts")


@torch.no_grad()
def sample(model: TinyGPT, prompts: torch.Tensor, max_new_tokens: int, temperature: float = 1.0,
           generator: torch.Generator | None = None, use_cache: bool = True, stop_early: bool = True):
    """Sample one completion per row of ``prompts`` (B, P).

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
        raise ValueError(f"prompt ({P}) + max_new_tokens ({max_new_tokens}) exceeds the model's block_size "
                         f"{model.config.block_size} + 1; build the model with a larger block_size")
    if generator is not None and generator.device != device:  # a CPU seed drives a device generator
        seed = int(torch.randint(0, 2**62, (1,), generator=generator))
        generator = torch.Generator(device).manual_seed(seed)
    was_training = model.training
    model.eval()
    cache = model.new_cache(B, P + max_new_tokens) if use_cache else None
    tokens = torch.full((B, P + max_new_tokens), PAD, dtype=torch.long, device=device)  # written in place
    tokens[:, :P] = idx
    step_logprobs, out_val = [], []  # log pi(. | prefix) of each step, (B, V) each; V(s_t), (B,) each
    done = torch.zeros(B, dtype=torch.bool, device=device)
    T = 0  # completion tokens sampled so far
    while T < max_new_tokens:
        if use_cache:  # the prefill feeds the whole prompt, later steps only the newest token
            logits, values = model(tokens[:, :P] if T == 0 else tokens[:, P + T - 1:P + T], cache)
        else:
            logits, values = model(tokens[:, :P + T])
        logits = logits[:, -1, :]  # (B, V): the next-token distribution
        if values is not None:  # a value head rides along for free: V(s_t) of the same prefix
            out_val.append(values[:, -1])
        logprobs = F.log_softmax(logits / temperature if temperature > 0 else logits, dim=-1)  # log pi_tau
        if temperature > 0:
            # The draw torch.multinomial(p, 1) makes, written out: argmax_v p_v / E_v with E_v ~ Exp(1)
            # (Gumbel-max in exponential form). The same random numbers and tokens, minus multinomial's
            # input checks, which wait for the device at every token.
            p = logprobs.exp()
            nxt = (p / torch.empty_like(p).exponential_(generator=generator)).argmax(-1)  # (B,)
        else:
            nxt = logprobs.argmax(-1)
        nxt = nxt.masked_fill(done, PAD)  # finished rows emit padding
        tokens[:, P + T] = nxt
        step_logprobs.append(logprobs)
        done = done | (nxt == EOS)
        T += 1
        if stop_early and bool(done.all()):
            break
    model.train(was_training)
    tokens = tokens[:, :P + T].contiguous()  # a copy only when sampling stopped early
    responses = tokens[:, P:]  # (B, T)
    lengths = response_lengths(responses)  # tokens up to and including EOS
    mask = (torch.arange(T, device=device)[None, :] < lengths[:, None]).float()
    # log-probs and entropies of all steps at once, from the distributions the tokens were drawn from
    logprobs = torch.stack(step_logprobs, 1)  # (B, T, V)
    logp = logprobs.gather(-1, responses.unsqueeze(-1)).squeeze(-1)  # log pi(o_t | q, o_<t)
    entropy = -(logprobs.exp() * logprobs).sum(-1)  # H(pi(. | q, o_<t))
    out = {"tokens": tokens, "responses": responses, "logp": torch.where(mask > 0, logp, 0.0), "mask": mask,
           "entropy": entropy * mask}
    if out_val:
        out["values"] = torch.stack(out_val, 1) * mask
    return out


def token_logprobs(model: TinyGPT, tokens: torch.Tensor, prompt_len: int, temperature: float = 1.0):
    """One causal forward pass over ``tokens`` (B, P + T): log-probs (B, T) of the response tokens,
    the entropy (B, T) of each next-token distribution, and values (B, T) if the model has a head."""
    P = int(prompt_len)
    if not 1 <= P < tokens.shape[1]:
        raise ValueError(f"prompt_len={P} must be in [1, {tokens.shape[1] - 1}] for tokens of shape "
                         f"{tuple(tokens.shape)}")
    logits, values = model(tokens[:, :-1])  # (B, P+T-1, V): position j predicts token j+1
    logits = logits[:, P - 1:]  # (B, T, V): the distributions of o_0 .. o_{T-1}
    if temperature > 0:
        logits = logits / temperature
    logprobs = F.log_softmax(logits, dim=-1)
    actions = tokens[:, P:]  # (B, T)
    logp = logprobs.gather(-1, actions.unsqueeze(-1)).squeeze(-1)  # log pi(o_t | q, o_<t)
    entropy = -(logprobs.exp() * logprobs).sum(-1)  # H(pi(. | q, o_<t))
    if values is not None:
        values = values[:, P - 1:]  # V(s_t), s_t = (q, o_<t)
    return logp, entropy, values


# ----------------------------------------------------------------------------------------------
# The policy
# ----------------------------------------------------------------------------------------------


class LMPolicy(nn.Module):
    """A :class:`TinyGPT` behind the trainer's Policy protocol, with an optional critic.

    Args:
        model: the language model (the actor).
        critic: ``"none"`` (GRPO and family), ``"head"`` (a value head on the actor's trunk) or
            ``"separate"`` (a second TinyGPT of the same size with a value head, initialised from
            the actor's weights).
        temperature: the sampling temperature; ``evaluate`` uses the same one.
    """

    def __init__(self, model: TinyGPT, critic: str = "none", temperature: float = 1.0):
        super().__init__()
        if not isinstance(model, TinyGPT):
            raise ValueError(f"LMPolicy wraps a TinyGPT, got {type(model).__name__}")
        if critic not in CRITICS:
            raise ValueError(f"unknown critic {critic!r}; valid: {', '.join(CRITICS)}")
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0 for RL (sampling and training must match), "
                             f"got {temperature!r}")
        self.model, self.critic_kind, self.temperature = model, critic, float(temperature)
        self.critic = None
        if critic == "head" and model.value_head is None:
            model.value_head = nn.Linear(model.config.n_embd, 1).to(next(model.parameters()).device)
            nn.init.zeros_(model.value_head.weight)
            nn.init.zeros_(model.value_head.bias)
        if critic != "head" and model.value_head is not None:
            model.value_head = None  # an actor without a head; the separate critic owns its own
        if critic == "separate":
            self.critic = copy.deepcopy(model)
            self.critic.value_head = nn.Linear(model.config.n_embd, 1).to(next(model.parameters()).device)
            nn.init.zeros_(self.critic.value_head.weight)
            nn.init.zeros_(self.critic.value_head.bias)
        self.has_critic = critic != "none"

    @torch.no_grad()
    def generate(self, prompts, max_new_tokens, generator=None, use_cache=True, stop_early=True):
        """:func:`sample` with this policy's model and temperature."""
        return sample(self.model, prompts, max_new_tokens, self.temperature, generator, use_cache, stop_early)

    def evaluate(self, batch: dict) -> dict:
        """log pi_theta (B, T), entropy (B, T) and values (B, T) or None for the stored completions."""
        for key in ("tokens", "prompt_len", "actions"):
            if key not in batch:
                raise ValueError(f"an LM batch needs {key!r}; got keys {sorted(batch)}. Build it with LMCollector")
        tokens, pl = batch["tokens"], batch["prompt_len"]
        P = int(pl.reshape(-1)[0]) if isinstance(pl, torch.Tensor) else int(pl)
        if isinstance(pl, torch.Tensor) and pl.numel() > 1 and not bool((pl == P).all()):
            raise ValueError("all rows of an LM batch must share one prompt_len; got "
                             f"{sorted(set(pl.tolist()))}")
        if tokens.shape[1] - P != batch["actions"].shape[1]:
            raise ValueError(f"tokens (B, {tokens.shape[1]}) minus prompt_len {P} must equal the width of "
                             f"actions {tuple(batch['actions'].shape)}")
        logp, entropy, values = token_logprobs(self.model, tokens, P, self.temperature)
        if self.critic is not None:
            _, _, values = token_logprobs(self.critic, tokens, P, self.temperature)
        return {"logp": logp, "entropy": entropy, "values": values}


def frozen_copy(model: TinyGPT) -> TinyGPT:
    """A frozen copy of ``model`` to serve as the reference policy pi_ref of the KL penalty."""
    ref = copy.deepcopy(model).eval()
    ref.value_head = None
    for p in ref.parameters():
        p.requires_grad_(False)
    return ref


# ----------------------------------------------------------------------------------------------
# The collector
# ----------------------------------------------------------------------------------------------


class LMCollector:
    """Prompts -> G completions each -> verifiable rewards -> one batch (``notes/CONTRACT.md``).

    Args:
        task: a :class:`rltutor.envs.tokens.TokenTask`.
        n_prompts: prompts per batch; the batch has ``n_prompts * group_size`` rows.
        group_size: G, completions per prompt (rows with the same ``group_ids``).
        max_new_tokens: the completion budget L_max (default: the task's).
        ref: a frozen reference model (:func:`frozen_copy`); if given, ``ref_logp`` is in the batch.
        overlong_buffer: if set, add DAPO's soft overlong penalty with this buffer L_cache.
        use_cache: sample with the KV cache (turn off only to measure what it buys).
        max_draws: DAPO's dynamic sampling with refill. With ``max_draws > 1`` the collector keeps
            only *live* groups (rewards not all equal; a dead group's advantages are all 0) and draws
            fresh batches of ``n_prompts`` prompts, at most ``max_draws`` in all, until ``n_prompts``
            live groups fill the batch. If the draws run out first, the batch holds the live groups
            found (fewer rows); if none was live, it is the first draw, all dead. Every draw's tokens
            count in ``env_steps``: refilling costs sampling. 1 (default): one draw, kept whole.
    """

    def __init__(self, task: TokenTask, n_prompts: int = 8, group_size: int = 8,
                 max_new_tokens: int | None = None, ref: TinyGPT | None = None,
                 overlong_buffer: int | None = None, use_cache: bool = True, max_draws: int = 1):
        if not isinstance(task, TokenTask):
            raise ValueError(f"task must be a TokenTask (see rltutor.envs.tokens.make_task), got {task!r}")
        for name, v, lo in (("n_prompts", n_prompts, 1), ("group_size", group_size, 1), ("max_draws", max_draws, 1)):
            if not isinstance(v, int) or isinstance(v, bool) or v < lo:
                raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
        self.task, self.n_prompts, self.group_size, self.max_draws = task, n_prompts, group_size, max_draws
        self.max_new_tokens = max_new_tokens or task.max_new_tokens
        if overlong_buffer is not None:
            overlong_penalty(torch.zeros(1), self.max_new_tokens, overlong_buffer)  # validates the buffer
        self.ref, self.overlong_buffer, self.use_cache = ref, overlong_buffer, use_cache
        self.last_info: dict = {}

    def state_dict(self) -> dict:
        """Nothing to save: prompts and samples are drawn from the trainer's generator, which the
        trainer's checkpoint holds. (The Collector protocol asks for it so checkpoints can resume.)"""
        return {}

    def load_state_dict(self, state: dict) -> None:
        if state:
            raise ValueError(f"an LMCollector has no state, but the checkpoint holds {sorted(state)}; "
                             "it was made by another kind of collector")

    @torch.no_grad()
    def _draw(self, policy: LMPolicy, generator: torch.Generator | None) -> dict:
        """Sample ``n_prompts`` prompts x G completions and score them: the rows of one draw."""
        device = next(policy.parameters()).device
        G = self.group_size
        prompts = self.task.sample_prompts(self.n_prompts, generator)  # (N, P)
        prompts = prompts.repeat_interleave(G, dim=0)  # (B, P), B = N * G, each prompt G times in a row
        t0 = time.perf_counter()
        out = policy.generate(prompts.to(device), self.max_new_tokens, generator, self.use_cache,
                              stop_early=False)  # full width L_max, so batches always concatenate
        t_sample = time.perf_counter() - t0
        responses, mask = out["responses"], out["mask"]  # (B, T)
        score = self.task.reward(prompts, responses.cpu()).to(device)  # (B,) the verifiable reward
        lengths = mask.sum(1)  # |o_i|, EOS included
        r = score.clone()
        if self.overlong_buffer is not None:  # DAPO: soft penalty for completions near or past L_max
            ended = (responses == EOS).any(1)
            n = torch.where(ended, lengths, lengths + 1)  # a truncated completion counts as too long
            r = r + overlong_penalty(n, self.max_new_tokens, self.overlong_buffer)
        rows = {"tokens": out["tokens"], "responses": responses, "logp": out["logp"], "mask": mask,
                "entropy": out["entropy"], "score": score, "r": r, "lengths": lengths,
                "values": out.get("values"), "prompt_len": prompts.shape[1], "sample_time": t_sample}
        group_ids = torch.arange(self.n_prompts, device=r.device).repeat_interleave(G)
        rows["live"] = ~dead_groups(r, group_ids)[0]  # (N,) the trainer's test for dynamic sampling
        return rows

    @torch.no_grad()
    def collect(self, policy: LMPolicy, generator: torch.Generator | None = None):
        device = next(policy.parameters()).device
        G = self.group_size
        draws = [self._draw(policy, generator)]
        if self.max_draws > 1:  # DAPO dynamic sampling: draw until n_prompts live groups fill the batch
            while sum(int(d["live"].sum()) for d in draws) < self.n_prompts and len(draws) < self.max_draws:
                draws.append(self._draw(policy, generator))
        every = {k: torch.cat([d[k] for d in draws]) for k in ("score", "r", "lengths", "responses", "mask",
                                                               "entropy")}  # all sampled rows, for info
        if self.max_draws > 1 and any(d["live"].any() for d in draws):
            keep = torch.cat([d["live"] for d in draws]).nonzero().squeeze(1)[:self.n_prompts]  # groups
            rows_kept = (keep[:, None] * G + torch.arange(G, device=keep.device)).reshape(-1)  # their rows
        else:
            rows_kept = torch.arange(self.n_prompts * G, device=device)  # the first draw, whole
        d = {k: torch.cat([x[k] for x in draws])[rows_kept] for k in ("tokens", "responses", "logp", "mask",
                                                                       "r", "lengths")}
        if draws[0]["values"] is not None:
            d["values"] = torch.cat([x["values"] for x in draws])[rows_kept]
        B, T = d["responses"].shape
        P = draws[0]["prompt_len"]
        last = (d["lengths"].long() - 1).clamp(min=0)
        rewards = torch.zeros(B, T, device=device)
        rewards[torch.arange(B, device=device), last] = d["r"]  # outcome reward on the last valid token
        batch = {
            "tokens": d["tokens"],  # (B, P + T)
            "prompt_len": torch.full((B,), P, dtype=torch.long, device=device),
            "actions": d["responses"],
            "logp": d["logp"],  # behaviour log-probs from the sampler
            "mask": d["mask"],
            "rewards": rewards,
            "group_ids": torch.arange(B // G, device=device).repeat_interleave(G),
        }
        if policy.critic_kind == "head":
            batch["values"] = d["values"]  # computed by the sampler's own forward passes
        elif policy.has_critic:
            batch["values"] = policy.evaluate(batch)["values"]  # a separate critic: one more forward pass
        if self.ref is not None:
            batch["ref_logp"] = token_logprobs(self.ref, batch["tokens"], P, policy.temperature)[0] * d["mask"]
        # The info describes everything sampled (every draw), the batch only the rows kept.
        score, r, lengths, responses = every["score"], every["r"], every["lengths"], every["responses"]
        correct = score >= 1.0
        info = {
            "episode_returns": r.tolist(),
            "episode_lengths": lengths.tolist(),
            "env_steps": int(every["mask"].sum()),
            "score": float(score.mean()),
            "accuracy": float(correct.float().mean()),
            "response_length": float(lengths.mean()),
            # token-mean, the same for every algorithm
            "entropy": float(every["entropy"].sum() / every["mask"].sum()),
            "wrong_length": float(lengths[~correct].mean()) if (~correct).any() else float("nan"),
            "truncated": float((~(responses == EOS).any(1)).float().mean()),
            "sample_time": sum(x["sample_time"] for x in draws),
            "draws": len(draws),
        }
        self.last_info = info  # read by experiments for metrics the trainer does not log
        return batch, info


# ----------------------------------------------------------------------------------------------
# The supervised warm start
# ----------------------------------------------------------------------------------------------


@torch.no_grad()
def greedy_accuracy(model: TinyGPT, task: TokenTask, n: int = 256, seed: int = 1234) -> float:
    """Fraction of ``n`` fresh prompts that greedy decoding answers exactly right."""
    g = torch.Generator().manual_seed(seed)
    prompts = task.sample_prompts(n, g)
    out = sample(model, prompts.to(next(model.parameters()).device), task.max_new_tokens, temperature=0.0)
    return task.accuracy(prompts, out["responses"].cpu())


def sft(model: TinyGPT, task: TokenTask, steps: int = 200, batch_size: int = 64, lr: float = 3e-3,
        generator: torch.Generator | None = None) -> list[float]:
    """Supervised fine-tuning on correct completions: cross-entropy on the completion tokens only.

    Returns the loss of each step. Few steps give a policy that is right some of the time, which is
    where RL has something to do.
    """
    if not isinstance(steps, int) or steps < 0:
        raise ValueError(f"steps must be a non-negative integer, got {steps!r}")
    device = next(model.parameters()).device
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr, weight_decay=0.0)
    losses = []
    model.train()
    for _ in range(steps):
        tokens, loss_mask = task.sft_batch(batch_size, generator)
        tokens, loss_mask = tokens.to(device), loss_mask.to(device)
        logits, _ = model(tokens[:, :-1])  # (n, P+T-1, V)
        nll = F.cross_entropy(logits.transpose(1, 2), tokens[:, 1:], reduction="none")  # (n, P+T-1)
        loss = (nll * loss_mask).sum() / loss_mask.sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def make_model(vocab_size: int, block_size: int, n_layer: int = 2, n_head: int = 4, n_embd: int = 64,
               seed: int = 0, device=None) -> TinyGPT:
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
    return {"actor_params": actor, "critic_params": critic,
            "train_state_bytes": 16 * (actor + critic), "critic_share": critic / (actor + critic)}


# ----------------------------------------------------------------------------------------------
# A token task as a trainer environment: make_env("addition") -> LMEnv; LMEnv.build(config)
# ----------------------------------------------------------------------------------------------

_SFT_CACHE: dict = {}  # warm-started weights by setting, so runs that should share a start do


class LMEnv:
    """What the env registry returns for a token task: ``build(config) -> (policy, collector)``.

    ``build`` makes a seeded TinyGPT, warm-starts it with :func:`sft` (cached, so GRPO and PPO
    runs of one experiment start from the very same weights), wraps it in an :class:`LMPolicy` with
    a critic when ``config.critic`` is set, and an :class:`LMCollector` with ``config.num_groups``
    prompts x ``config.group_size`` completions. The reference policy of the KL penalty is the
    trainer's frozen copy of this warm-started policy.

    Options (``env_options`` of the trainer's Config): the task's own (``L``, ``reward``,
    ``max_operand``, ``max_new_tokens``), and ``n_layer``, ``n_head``, ``n_embd``, ``sft_steps``,
    ``sft_lr``, ``temperature``, ``critic_kind`` ("head" or "separate"), ``overlong_buffer``.
    """

    MODEL_OPTIONS = dict(n_layer=2, n_head=4, n_embd=64, sft_steps=150, sft_lr=3e-3, temperature=1.0,
                         critic_kind="head", overlong_buffer=None)

    def __init__(self, task: str, seed: int = 0, **options):
        from rltutor.envs.tokens import TASKS, make_task

        if task not in TASKS:
            raise ValueError(f"unknown token task {task!r}; valid: {', '.join(sorted(TASKS))}")
        import inspect

        task_keys = set(inspect.signature(TASKS[task]).parameters)
        unknown = sorted(set(options) - task_keys - set(self.MODEL_OPTIONS))
        if unknown:
            raise ValueError(f"unknown option(s) {unknown} for token task {task!r}; valid: "
                             f"{', '.join(sorted(task_keys | set(self.MODEL_OPTIONS)))}")
        self.task_name, self.seed = task, seed
        self.task_options = {k: v for k, v in options.items() if k in task_keys}
        self.options = {**self.MODEL_OPTIONS, **{k: v for k, v in options.items() if k in self.MODEL_OPTIONS}}
        self.task = make_task(task, **self.task_options)

    def warm_start(self, device=None) -> TinyGPT:
        """The SFT-initialised model (computed once per setting, then copied from the cache)."""
        o = self.options
        key = (self.task_name, tuple(sorted(self.task_options.items())), o["n_layer"], o["n_head"], o["n_embd"],
               o["sft_steps"], o["sft_lr"], self.seed)
        device = get_device(device)
        block = self.task.prompt_len + self.task.max_new_tokens
        model = make_model(len(VOCAB), block, o["n_layer"], o["n_head"], o["n_embd"],
                           seed=self.seed, device=device)
        if key not in _SFT_CACHE:
            g = torch.Generator().manual_seed(self.seed)
            sft(model, self.task, steps=o["sft_steps"], lr=o["sft_lr"], generator=g)
            _SFT_CACHE[key] = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
        model.load_state_dict(_SFT_CACHE[key])
        return model

    def build(self, config):
        o = self.options
        model = self.warm_start(None if config.device == "auto" else config.device)
        policy = LMPolicy(model, critic=o["critic_kind"] if config.critic else "none",
                          temperature=o["temperature"])
        collector = LMCollector(self.task, n_prompts=config.num_groups, group_size=config.group_size,
                                overlong_buffer=o["overlong_buffer"], max_draws=config.max_draws)
        return policy, collector

