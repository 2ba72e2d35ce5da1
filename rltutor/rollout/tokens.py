"""Rollout for token tasks: prompts -> G completions each -> verifiable rewards -> one batch.

Chapters 06-10. :class:`LMCollector` samples with :meth:`rltutor.models.lm_policy.LMPolicy.generate`,
scores the completions with the task's verifiable reward, puts each outcome reward on the last valid
token and returns the batch of :mod:`rltutor.rollout` (plus ``tokens``/``prompt_len`` to re-evaluate,
and ``values`` when the policy has a critic). DAPO's dynamic sampling with refill lives here
(``max_draws``); its soft overlong penalty too (``overlong_buffer``).
"""

from __future__ import annotations

import math
import time

import torch

from rltutor.advantages import dead_groups
from rltutor.envs.tokens import EOS, PAD, TokenTask, overlong_penalty
from rltutor.models.gpt import TinyGPT
from rltutor.models.lm_policy import LMPolicy, sample

__all__ = ["LMCollector", "greedy_accuracy", "group_diversity", "pass_at_k"]


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k of a prompt with ``c`` correct among ``n`` samples (Chen et al. 2021, Codex):
    1 - C(n - c, k) / C(n, k), the chance that k of the n samples, drawn without replacement, hold a correct one."""
    if not 1 <= k <= n:
        raise ValueError(f"pass@k needs 1 <= k <= n, got k={k}, n={n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def group_diversity(responses: torch.Tensor, correct: torch.Tensor, G: int) -> dict[str, float]:
    """What a batch keeps of the answers it could find, per group of the ``G`` samples of one prompt (rows in
    order, ``G`` per prompt): ``distinct_correct``, the mean number of distinct correct completions (read up
    to their EOS) per prompt, and ``pass_at_k`` for k = 1, 2, 4, ... up to G, the mean unbiased pass@k
    (:func:`pass_at_k`). A collapsing policy loses distinct answers and pass@G before it loses pass@1."""
    rows = responses.cpu().tolist()
    ok = correct.cpu().tolist()
    ks = [k for k in (1, 2, 4, 8, 16, 32, 64) if k <= G]
    distinct, passes = [], {k: [] for k in ks}
    for g in range(len(rows) // G):
        answers = set()
        for ids, hit in zip(rows[g * G : (g + 1) * G], ok[g * G : (g + 1) * G], strict=True):
            if hit:
                answers.add(tuple(ids[: ids.index(EOS)] if EOS in ids else ids))
        c = int(sum(ok[g * G : (g + 1) * G]))
        distinct.append(len(answers))
        for k in ks:
            passes[k].append(pass_at_k(G, c, k))
    out = {"distinct_correct": sum(distinct) / len(distinct) if distinct else float("nan")}
    out.update({f"pass_at_{k}": sum(v) / len(v) for k, v in passes.items() if v})
    return out


def greedy_accuracy(model: TinyGPT, task: TokenTask, n: int = 256, seed: int = 1234) -> float:
    """Fraction of ``n`` fresh prompts that greedy decoding answers exactly right."""
    g = torch.Generator().manual_seed(seed)
    prompts = task.sample_prompts(n, g)
    out = sample(
        model, prompts.to(next(model.parameters()).device), task.max_new_tokens, temperature=0.0, eos_id=EOS, pad_id=PAD
    )
    return task.accuracy(prompts, out["responses"].cpu())


class LMCollector:
    """Prompts -> G completions each -> verifiable rewards -> one batch (the contract of :mod:`rltutor.rollout`).

    :param task: a :class:`rltutor.envs.tokens.TokenTask`.
    :param n_prompts: prompts per batch; the batch has ``n_prompts * group_size`` rows.
    :param group_size: G, completions per prompt (rows with the same ``group_ids``).
    :param max_new_tokens: the completion budget L_max (default: the task's).
    :param overlong_buffer: if set, add DAPO's soft overlong penalty with this buffer L_cache.
    :param max_draws: DAPO's dynamic sampling with refill. With ``max_draws > 1`` the collector keeps
        only *live* groups (rewards not all equal; a dead group's advantages are all 0) and draws
        fresh batches of ``n_prompts`` prompts, at most ``max_draws`` in all, until ``n_prompts``
        live groups fill the batch. If the draws run out first, the batch holds the live groups
        found (fewer rows); if none was live, it is the first draw, all dead. Every draw's tokens
        count in ``env_steps``: refilling costs sampling. 1 (default): one draw, kept whole.
    """

    def __init__(
        self,
        task: TokenTask,
        n_prompts: int = 8,
        group_size: int = 8,
        max_new_tokens: int | None = None,
        overlong_buffer: int | None = None,
        max_draws: int = 1,
        eval_prompts: int = 256,
    ):
        if not isinstance(task, TokenTask):
            raise ValueError(f"task must be a TokenTask (see rltutor.envs.tokens.make_task), got {task!r}")
        for name, v, lo in (("n_prompts", n_prompts, 1), ("group_size", group_size, 1), ("max_draws", max_draws, 1)):
            if not isinstance(v, int) or isinstance(v, bool) or v < lo:
                raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
        self.task, self.n_prompts, self.group_size, self.max_draws = task, n_prompts, group_size, max_draws
        self.max_new_tokens = max_new_tokens or task.max_new_tokens
        if overlong_buffer is not None:
            overlong_penalty(torch.zeros(1), self.max_new_tokens, overlong_buffer)  # validates the buffer
        self.overlong_buffer, self.eval_prompts = overlong_buffer, eval_prompts

    def state_dict(self) -> dict:
        """Nothing to save: prompts and samples are drawn from the trainer's generator, which the
        trainer's checkpoint holds. (Every collector has one, so checkpoints can resume.)"""
        return {}

    def load_state_dict(self, state: dict) -> None:
        if state:
            raise ValueError(
                f"an LMCollector has no state, but the checkpoint holds {sorted(state)}; "
                "it was made by another kind of collector"
            )

    @torch.no_grad()
    def _draw(self, policy: LMPolicy, generator: torch.Generator | None) -> dict:
        """Sample ``n_prompts`` prompts x G completions and score them: the rows of one draw."""
        device = next(policy.parameters()).device
        G = self.group_size
        prompts = self.task.sample_prompts(self.n_prompts, generator)  # (N, P)
        prompts = prompts.repeat_interleave(G, dim=0)  # (B, P), B = N * G, each prompt G times in a row
        t0 = time.perf_counter()
        out = policy.generate(
            prompts.to(device), self.max_new_tokens, generator, stop_early=False, eos_id=EOS, pad_id=PAD
        )  # full width L_max, so batches always concatenate
        t_sample = time.perf_counter() - t0
        responses, mask = out["responses"], out["mask"]  # (B, T)
        score = self.task.reward(prompts, responses.cpu()).to(device)  # (B,) the verifiable reward
        lengths = mask.sum(1)  # |o_i|, EOS included
        r = score.clone()
        if self.overlong_buffer is not None:  # DAPO: soft penalty for completions near or past L_max
            ended = (responses == EOS).any(1)
            n = torch.where(ended, lengths, lengths + 1)  # a truncated completion counts as too long
            r = r + overlong_penalty(n, self.max_new_tokens, self.overlong_buffer)
        rows = {
            "tokens": out["tokens"],
            "responses": responses,
            "logp": out["logp"],
            "mask": mask,
            "entropy": out["entropy"],
            "score": score,
            "r": r,
            "lengths": lengths,
            "values": out.get("values"),
            "prompt_len": prompts.shape[1],
            "sample_time": t_sample,
        }
        if self.max_draws > 1:  # only the refill needs it; the trainer tests the batch it is given
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
        every = {
            k: torch.cat([d[k] for d in draws]) for k in ("score", "r", "lengths", "responses", "mask", "entropy")
        }  # all sampled rows, for info
        if self.max_draws > 1 and any(d["live"].any() for d in draws):
            keep = torch.cat([d["live"] for d in draws]).nonzero().squeeze(1)[: self.n_prompts]  # groups
            rows_kept = (keep[:, None] * G + torch.arange(G, device=keep.device)).reshape(-1)  # their rows
        else:
            rows_kept = torch.arange(self.n_prompts * G, device=device)  # the first draw, whole
        d = {
            k: torch.cat([x[k] for x in draws])[rows_kept]
            for k in ("tokens", "responses", "logp", "mask", "r", "lengths")
        }
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
        # The info describes everything sampled (every draw), the batch only the rows kept.
        score, r, lengths, responses = every["score"], every["r"], every["lengths"], every["responses"]
        correct = score >= 1.0
        diversity = group_diversity(responses, correct, G)
        metrics = {  # logged by the trainer in its history, one value per update
            "score": float(score.mean()),
            "accuracy": float(correct.float().mean()),
            "response_length": float(lengths.mean()),
            # token-mean over every sampled token, the same for every algorithm (the loss's is "entropy")
            "sample_entropy": float(every["entropy"].sum() / every["mask"].sum()),
            "wrong_length": float(lengths[~correct].mean()) if (~correct).any() else float("nan"),
            "truncated": float((~(responses == EOS).any(1)).float().mean()),
            "sample_time": sum(x["sample_time"] for x in draws),
            "draws": len(draws),
            **diversity,
        }
        info = {
            "episode_returns": r.tolist(),
            "episode_lengths": lengths.tolist(),
            "env_steps": int(every["mask"].sum()),
            "metrics": metrics,
        }
        return batch, info

    @torch.no_grad()
    def evaluate(self, policy: LMPolicy) -> dict:
        """Held-out greedy accuracy on ``eval_prompts`` fresh prompts (a fixed seed, so every evaluation of
        a run, and every run, sees the same prompts); draws nothing from the training generator."""
        return {"greedy_accuracy": greedy_accuracy(policy.model, self.task, n=self.eval_prompts)}
