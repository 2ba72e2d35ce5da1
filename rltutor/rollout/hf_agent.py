"""The toolshell agent played by a Hugging Face causal LM: a chooser of the one AgentCollector (chapter 13).

:class:`HFChooser` is :class:`~rltutor.rollout.agent.TokenChooser` for an
:class:`~rltutor.models.hf.HFPolicy`: the same :class:`~rltutor.rollout.agent.AgentCollector` plays its
episodes through the same :class:`~rltutor.rollout.context.Context`, which counts and compacts in the model's
own tokens. What differs is only how a context is written and how a command is sampled:

1. **A chat.** The context is the episode rendered as a conversation in the tokenizer's chat template where it
   has one (:func:`chat_tokenizer`): a system prompt (:data:`SYSTEM_PROMPT`) and the task as the first user
   turn, each command an assistant turn, each tool output a user turn. For ChatML (Qwen)::

       <|im_start|>system\\n...<|im_end|>\\n<|im_start|>user\\n TASK           <- head (mask 0)
       <|im_end|>\\n<|im_start|>assistant\\n  cat README.md <|im_end|>            <- marker (0), command (1)
       \\n<|im_start|>user\\n  # comet ...                                      <- marker (0), tool output (0)
       <|im_end|>\\n<|im_start|>assistant\\n  ...

   The three markers are read off the template once, by rendering a conversation of placeholder texts and
   cutting it at them; the context is then grown from ids, turn by turn, and never rendered again.
2. **Sampling.** Each turn the live contexts are left-padded into one batch and
   :meth:`~rltutor.models.hf.HFPolicy.generate` (the model's own ``generate`` with its KV cache) writes each
   command up to an end-of-turn id or ``max_cmd_tokens``; the chooser keeps the *sampled ids* and their
   behaviour log-probs, and decodes them once, for the environment.
3. **Rows.** One row per sub-trajectory, as the token agent's (:func:`~rltutor.rollout.agent.episodes_to_batch`:
   ``tokens`` (R, L), ``prompt_len`` = 1, ``mask`` (R, L - 1) = 1 on command tokens only, ``logp``), plus
   ``prompt_mask`` (R, 1) for :meth:`~rltutor.models.hf.HFPolicy.evaluate`. Markers and tool-output tokens
   have mask 0: they are read but never trained, exactly as for TinyGPT (``tests/test_hf_agent.py`` checks that
   they cannot move the loss, and that the stored log-probs equal ``evaluate`` over the whole multi-turn row).

**Token in, token out.** Neither a command nor a context is ever re-tokenised: a command's ids are the ones
``generate`` drew; a tool output is encoded once, when it arrives (it is the environment's text, not the
model's). Encoding the template's pieces separately may tokenise a boundary differently from encoding the whole
rendered conversation at once (BPE merges across the cut); the model then reads a slightly unusual but valid
tokenisation, and the trainer scores exactly the ids the sampler saw.

Deviations from the chat template: a command cut at ``max_cmd_tokens`` has no end-of-turn token, and the next
user turn follows it directly (as the token agent's cut commands have no ``<eos>``); a template that renders
earlier assistant turns differently from the latest (Qwen3 drops their ``<think>`` blocks) is followed for the
latest only, since the history is never re-rendered.
"""

from __future__ import annotations

import torch

from rltutor.rollout.agent import Choice, TokenChooser, episodes_to_batch
from rltutor.rollout.context import ContextSpec, Episode, Tokenizer

__all__ = ["SYSTEM_PROMPT", "HFChooser", "chat_tokenizer"]

SYSTEM_PROMPT = (
    "You are an agent in a small code repository. Each turn reply with one shell command, such as ls, "
    "cat FILE or grep -rn WORD DIR; when you know the answer, reply: submit VALUE"
)
"""the system turn of every episode (a plain-text preamble for a tokenizer without a chat template)"""

_SLOTS = ("\x00TASK\x00", "\x00COMMAND\x00", "\x00OUTPUT\x00")  # placeholder texts no template writes


def chat_tokenizer(tokenizer, system: str = SYSTEM_PROMPT, chat: bool = True) -> Tokenizer:
    """The :class:`~rltutor.rollout.context.Tokenizer` a :class:`~rltutor.rollout.context.Context` counts with,
    for the Hugging Face ``tokenizer``: its own ``encode``/``decode`` (special tokens dropped on decoding) and the
    three markers of the episode's conversation (``task``: the system turn and the opening of the first user turn;
    ``cmd``: the end of a user turn and the opening of an assistant turn; ``obs``: the end of an assistant turn,
    after its end-of-turn token, and the opening of a user turn). With a chat template (and ``chat``) the markers
    are cut out of the template rendered on placeholder texts; without one they are plain text
    (``SYSTEM\\n\\nTask: ...``, ``\\n$ `` before a command, ``\\n`` before a tool output). ``eos``: the id that ends
    an assistant turn (ChatML's ``<|im_end|>``; the tokenizer's end-of-sequence without a template)."""

    def encode(text: str) -> list[int]:
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])

    def decode(ids: list[int]) -> str:
        return tokenizer.decode(list(ids), skip_special_tokens=True)

    if not (chat and getattr(tokenizer, "chat_template", None)):
        if tokenizer.eos_token_id is None:
            raise ValueError("the tokenizer has no eos_token to end a command with; set tokenizer.eos_token")
        task, cmd, obs = encode(system + "\n\nTask: "), encode("\n$ "), encode("\n")
        return Tokenizer(encode, decode, tuple(task), tuple(cmd), tuple(obs), tokenizer.eos_token_id)
    messages = [
        {"role": "system", "content": system},
        {"role": "user", "content": _SLOTS[0]},
        {"role": "assistant", "content": _SLOTS[1]},
        {"role": "user", "content": _SLOTS[2]},
    ]
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    try:
        pre, rest = text.split(_SLOTS[0])
        open_1, rest = rest.split(_SLOTS[1])
        after_cmd, open_2 = rest.split(_SLOTS[2])
    except ValueError:
        raise ValueError("the chat template does not write each message's text once; pass chat=False") from None
    if open_1 != open_2:
        raise ValueError(
            f"the chat template opens the assistant's turns differently ({open_1!r} after the task, {open_2!r} after "
            "a tool output): a context grown turn by turn cannot follow it; pass chat=False"
        )
    # The assistant turn ends with a token the model writes itself (its end-of-turn id): the obs marker starts after it.
    ends = [t for t in tokenizer.all_special_tokens if t and after_cmd.startswith(t)]
    if not ends:
        raise ValueError(f"the chat template ends an assistant turn with {after_cmd!r}, not with a special token")
    end = max(ends, key=len)
    eos = tokenizer.convert_tokens_to_ids(end)
    task, cmd, obs = encode(pre), encode(open_2), encode(after_cmd[len(end) :])
    return Tokenizer(encode, decode, tuple(task), tuple(cmd), tuple(obs), eos)


class HFChooser(TokenChooser):
    """A Hugging Face causal LM writes each command (see the module docstring).

    :param tokenizer: the policy's Hugging Face tokenizer (:attr:`rltutor.models.hf.HFPolicy.tokenizer`).
    :param max_cmd_tokens: a command is cut after this many tokens (the collector's ContextSpec's).
    :param system: the system prompt; :param chat: use the chat template where the tokenizer has one.
    :param eval_rows: rows per forward pass when :meth:`rows` reads the critic's values (a real model's
        (rows, L, vocabulary) logits do not fit at once).
    """

    def __init__(
        self,
        tokenizer,
        max_cmd_tokens: int = ContextSpec.max_cmd_tokens,
        system: str = SYSTEM_PROMPT,
        chat: bool = True,
        eval_rows: int = 4,
    ):
        super().__init__(max_cmd_tokens, chat_tokenizer(tokenizer, system, chat))
        self.hf_tokenizer, self.eval_rows = tokenizer, int(eval_rows)

    def choose(self, policy, live: list[int], contexts, generator=None) -> list[Choice]:
        prompts = [c.prompt() for c in contexts]
        P = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), P), policy.pad_id, dtype=torch.long)  # (B, P) left-padded
        pmask = torch.zeros(len(prompts), P, dtype=torch.long)
        for i, p in enumerate(prompts):
            ids[i, P - len(p) :] = torch.tensor(p, dtype=torch.long)
            pmask[i, P - len(p) :] = 1
        out = policy.generate(ids, self.max_cmd, generator, prompt_mask=pmask)
        n = out["mask"].sum(1).long().tolist()  # (B,) tokens up to and including the first end-of-turn id
        eos = set(policy.eos_ids)
        choices = []
        for r, lp, k in zip(out["responses"].tolist(), out["logp"].tolist(), n, strict=True):
            tokens = r[:k]  # the sampled ids, kept as drawn
            choices.append(Choice(self.tok.decode([t for t in tokens if t not in eos]), tokens, lp[:k]))
        return choices

    def rows(self, episodes: list[Episode], policy, device) -> tuple[dict, torch.Tensor]:
        """The token agent's rows (one per sub-trajectory, mask 1 on command tokens) with ``prompt_mask`` (R, 1);
        with a critic, V(s_t) at every position (``eval_rows`` rows per forward pass); scripted summary tokens
        (``train_summary``) get the policy's log-probs at collection."""
        batch, meta = episodes_to_batch(episodes, device)
        R = len(batch["tokens"])
        batch["prompt_mask"] = torch.ones(R, 1, dtype=torch.long, device=device)  # row j's first token is real
        train_summary = bool(torch.isnan(batch["logp"]).any())
        if policy.has_critic or train_summary:
            parts = [
                policy.evaluate({k: v[i : i + self.eval_rows] for k, v in batch.items()})
                for i in range(0, R, self.eval_rows)
            ]
            if policy.has_critic:
                batch["values"] = torch.cat([p["values"] for p in parts]) * batch["mask"]
            if train_summary:
                logp = torch.cat([p["logp"] for p in parts])
                batch["logp"] = torch.where(torch.isnan(batch["logp"]), logp, batch["logp"])
        return batch, meta

    def clone(self, model, episodes, steps: int = 200, lr: float = 3e-3, generator=None) -> list:
        raise ValueError(
            "a Hugging Face model is pretrained: the agent has no supervised warm start here (sft_steps is unused)"
        )
