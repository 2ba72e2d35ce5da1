"""Rollout for text tasks and a Hugging Face policy: questions -> G completions each -> verified -> one batch.

Chapter 13. :class:`TextCollector` is :class:`~rltutor.rollout.tokens.LMCollector` for a real model:

1. sample ``n_prompts`` problems of a :class:`~rltutor.envs.text.TextTask` from the trainer's generator;
2. render each question with the tokenizer's chat template where it has one (a user turn and the
   assistant's opening), else as plain text, and left-pad the prompts to one width P;
3. sample G completions per prompt with :meth:`rltutor.models.hf.HFPolicy.generate` (token ids and their
   log-probs);
4. decode each completion's ids *once*, for the verifier; the batch keeps the sampled ids
   (``actions``, ``tokens``): nothing is re-tokenised, so the trainer's log-probs are of the tokens the
   sampler drew;
5. put each outcome reward on the last valid token, as every collector does.

The batch is :mod:`rltutor.rollout`'s, plus ``prompt_mask`` (B, P), the real tokens of the left-padded
prompts. Metrics per update: ``score``, ``accuracy``, ``response_length``, ``sample_entropy``,
``truncated``, ``sample_time``; :meth:`TextCollector.evaluate` gives ``greedy_accuracy`` on held-out problems.
"""

from __future__ import annotations

import time

import torch

__all__ = ["TextCollector", "render_prompts"]


def render_prompts(tokenizer, questions: list[str], chat: bool = True) -> list[list[int]]:
    """The token ids of each question: the chat template's user turn and assistant opening when the
    tokenizer has a template (and ``chat``), else the question's own encoding."""
    out = []
    for q in questions:
        if chat and getattr(tokenizer, "chat_template", None):
            text = tokenizer.apply_chat_template(
                [{"role": "user", "content": q}], tokenize=False, add_generation_prompt=True
            )
            out.append(list(tokenizer(text, add_special_tokens=False)["input_ids"]))
        else:
            out.append(list(tokenizer(q)["input_ids"]))
    return out


class TextCollector:
    """Text problems -> G completions each -> verifier rewards -> one batch (see the module docstring).

    :param task: a :class:`~rltutor.envs.text.TextTask`.
    :param tokenizer: the policy's tokenizer (prompts are rendered with it; completions decoded with it).
    :param n_prompts: problems per batch; the batch has ``n_prompts * group_size`` rows.
    :param group_size: G, completions per problem.
    :param max_new_tokens: the completion budget (default: the task's).
    :param chat: use the tokenizer's chat template where it has one.
    :param eval_prompts: held-out problems of :meth:`evaluate`.
    """

    def __init__(
        self,
        task,
        tokenizer,
        n_prompts: int = 4,
        group_size: int = 4,
        max_new_tokens: int | None = None,
        chat: bool = True,
        eval_prompts: int = 32,
    ):
        for name, v in (("n_prompts", n_prompts), ("group_size", group_size), ("eval_prompts", eval_prompts)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
        if not hasattr(task, "sample") or not hasattr(task, "verify"):
            raise ValueError(f"task must be a TextTask (rltutor.envs.text.make_text_task), got {task!r}")
        self.task, self.tokenizer, self.chat = task, tokenizer, chat
        self.n_prompts, self.group_size, self.eval_prompts = n_prompts, group_size, eval_prompts
        self.max_new_tokens = max_new_tokens or task.max_new_tokens

    def state_dict(self) -> dict:
        """Nothing to save: problems and samples come from the trainer's generator, which its checkpoint holds."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        if state:
            raise ValueError(f"a TextCollector has no state, but the checkpoint holds {sorted(state)}")

    def encode(self, problems, pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Left-padded prompt ids (B, P) and their mask (B, P) for ``problems``."""
        ids = render_prompts(self.tokenizer, [p.question for p in problems], self.chat)
        P = max(len(x) for x in ids)
        prompts = torch.full((len(ids), P), pad_id, dtype=torch.long)
        mask = torch.zeros(len(ids), P, dtype=torch.long)
        for i, x in enumerate(ids):
            prompts[i, P - len(x) :] = torch.tensor(x, dtype=torch.long)
            mask[i, P - len(x) :] = 1
        return prompts, mask

    def decode(self, responses: torch.Tensor, mask: torch.Tensor, eos_ids) -> list[str]:
        """Each completion's text for the verifier: its ids up to the end-of-sequence token, decoded once."""
        texts = []
        for r, m in zip(responses.cpu().tolist(), mask.cpu().tolist(), strict=True):
            ids = [t for t, k in zip(r, m, strict=True) if k > 0 and t not in eos_ids]
            texts.append(self.tokenizer.decode(ids, skip_special_tokens=True))
        return texts

    @torch.no_grad()
    def collect(self, policy, generator: torch.Generator | None = None):
        device = next(policy.parameters()).device
        G = self.group_size
        problems = self.task.sample(self.n_prompts, generator)
        rows = [p for p in problems for _ in range(G)]  # each problem G times in a row
        prompts, pmask = self.encode(rows, policy.pad_id)
        t0 = time.perf_counter()
        out = policy.generate(prompts.to(device), self.max_new_tokens, generator, stop_early=False, prompt_mask=pmask)
        t_sample = time.perf_counter() - t0
        responses, mask = out["responses"], out["mask"]  # (B, T), the sampled ids
        texts = self.decode(responses, mask, policy.eos_ids)
        score = torch.tensor([self.task.verify(p, t) for p, t in zip(rows, texts, strict=True)], device=device)
        B, T = responses.shape
        lengths = mask.sum(1)
        ended = torch.isin(responses, torch.tensor(policy.eos_ids, device=device)).any(1)
        rewards = torch.zeros(B, T, device=device)
        rewards[torch.arange(B, device=device), (lengths.long() - 1).clamp(min=0)] = score  # outcome on the last token
        batch = {
            "tokens": out["tokens"],  # (B, P + T)
            "prompt_len": torch.full((B,), prompts.shape[1], dtype=torch.long, device=device),
            "prompt_mask": out["prompt_mask"],  # (B, P)
            "actions": responses,
            "logp": out["logp"],  # behaviour log-probs from the sampler
            "mask": mask,
            "rewards": rewards,
            "group_ids": torch.arange(B // G, device=device).repeat_interleave(G),
        }
        if policy.critic_kind == "head":
            batch["values"] = out["values"]
        elif policy.has_critic:
            batch["values"] = policy.evaluate(batch)["values"]  # a separate critic: one more forward pass
        correct = torch.tensor([self.task.correct(p, t) for p, t in zip(rows, texts, strict=True)])
        metrics = {
            "score": float(score.mean()),
            "accuracy": float(correct.float().mean()),
            "response_length": float(lengths.mean()),
            "sample_entropy": float(out["entropy"].sum() / mask.sum().clamp(min=1)),
            "truncated": float((~ended).float().mean()),
            "sample_time": t_sample,
        }
        info = {
            "episode_returns": score.tolist(),
            "episode_lengths": lengths.tolist(),
            "env_steps": int(mask.sum()),
            "metrics": metrics,
        }
        return batch, info

    @torch.no_grad()
    def evaluate(self, policy) -> dict:
        """Greedy accuracy on ``eval_prompts`` held-out problems (a fixed seed: every evaluation sees the same)."""
        problems = self.task.sample(self.eval_prompts, torch.Generator().manual_seed(1234))
        prompts, pmask = self.encode(problems, policy.pad_id)
        device = next(policy.parameters()).device
        out = policy.generate(prompts.to(device), self.max_new_tokens, prompt_mask=pmask, greedy=True)
        texts = self.decode(out["responses"], out["mask"], policy.eos_ids)
        hits = [self.task.correct(p, t) for p, t in zip(problems, texts, strict=True)]
        return {"greedy_accuracy": sum(hits) / len(hits)}
