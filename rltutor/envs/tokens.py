"""Token tasks with verifiable rewards, for the language-model chapters (06-10).

A token task hands out prompts (rows of token ids, all of one length) and scores completions with a
rule a program can check, the way math answers or unit tests are checked in real RL post-training.

* :class:`AdditionTask` (short): ``"07+12="`` -> ``"19"`` then end-of-sequence. Reward 1 for the exact
  answer, else 0. A completion is 2 to 4 tokens.
* :class:`SequenceTask` (long, length ``L`` is the knob): ``"3+2="`` -> the ``L`` digits
  ``(3 + 2 k) mod 10`` for ``k = 1..L`` (``"5791357..."``), then end-of-sequence. The reward
  arrives only at the end: the fraction of the ``L`` positions that are right
  (``reward="fraction"``) or 1 only if all are (``reward="exact"``). Extra tokens before the end
  count against it, so the length must be right too.

* :class:`PairsTask` (several right answers): ``"07="`` -> any two digits summing to 7 (``"16"``, ``"43"``...),
  then end-of-sequence; reward 1 for a correct pair. It is where a policy's *diversity* can be measured: how
  many of a prompt's correct answers it still finds (chapter 9).

Each gives :meth:`TokenTask.target` (a correct completion) for the supervised warm start (SFT), and
:func:`overlong_penalty` is DAPO's soft overlong reward shaping.

One character is one token; :data:`VOCAB` lists them. Token 0 is padding, token 1 ends a completion.
"""

from __future__ import annotations

import torch

VOCAB = ["<pad>", "<eos>", *"0123456789", "+", "="]
"""The token ids: 0 pad, 1 end of sequence, 2-11 the digits, 12 '+', 13 '='."""
PAD, EOS = 0, 1
STOI = {s: i for i, s in enumerate(VOCAB)}


def encode(text: str) -> list[int]:
    """Characters -> token ids. ``encode("7+5=") == [9, 12, 7, 13]``."""
    bad = [c for c in text if c not in STOI]
    if bad:
        raise ValueError(f"cannot encode {bad[0]!r} in {text!r}; the vocabulary is {''.join(VOCAB[2:])}")
    return [STOI[c] for c in text]


def decode(ids) -> str:
    """Token ids -> text; stops at the first end-of-sequence, drops padding."""
    out = []
    for i in ids.tolist() if isinstance(ids, torch.Tensor) else ids:
        if i == EOS:
            break
        if i != PAD:
            out.append(VOCAB[i])
    return "".join(out)


def response_lengths(responses: torch.Tensor) -> torch.Tensor:
    """Number of tokens up to and including the first EOS, or the full width if there is none. (B,)."""
    B, T = responses.shape
    is_eos = responses == EOS
    first = torch.where(is_eos.any(1), is_eos.float().argmax(1), torch.full((B,), T, device=responses.device))
    return torch.where(is_eos.any(1), first + 1, first)


def overlong_penalty(lengths: torch.Tensor, max_len: int, buffer: int) -> torch.Tensor:
    """DAPO's soft overlong punishment (Yu et al. 2025, eq. 13), added to the task reward.

    R_length(y) = 0 if ``|y|`` <= L_max - L_cache; ((L_max - L_cache) - ``|y|``) / L_cache inside the buffer;
    -1 beyond L_max. ``lengths`` (B,) counts completion tokens; returns (B,) floats in [-1, 0].
    """
    if not (isinstance(buffer, int) and 0 < buffer <= max_len):
        raise ValueError(f"overlong buffer must be an integer in [1, max_len={max_len}], got {buffer!r}")
    n = lengths.float()
    start = max_len - buffer  # L_max - L_cache
    pen = (start - n) / buffer  # linear ramp inside the buffer
    pen = torch.where(n <= start, torch.zeros_like(n), pen)
    return torch.where(n > max_len, -torch.ones_like(n), pen)


class TokenTask:
    """Base class: prompts of one fixed length ``prompt_len`` and a checkable reward."""

    name = "task"
    prompt_len: int
    max_new_tokens: int

    def sample_prompts(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """``n`` prompts, a LongTensor (n, prompt_len)."""
        raise NotImplementedError

    def target(self, prompt: torch.Tensor) -> list[int]:
        """The correct completion of one prompt (P,), ending with EOS."""
        raise NotImplementedError

    def score(self, prompt: torch.Tensor, completion: list[int]) -> float:
        """Reward of one completion (token ids before EOS)."""
        raise NotImplementedError

    def reward(self, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
        """Rewards (B,) for ``responses`` (B, T), each read up to its first EOS."""
        if prompts.dim() != 2 or responses.dim() != 2 or prompts.shape[0] != responses.shape[0]:
            raise ValueError(
                f"prompts (B, P) and responses (B, T) must share B; got {tuple(prompts.shape)} "
                f"and {tuple(responses.shape)}"
            )
        out = []
        for p, r in zip(prompts.cpu(), responses.cpu(), strict=True):
            ids = r.tolist()
            ids = ids[: ids.index(EOS)] if EOS in ids else ids
            out.append(self.score(p, ids))
        return torch.tensor(out, dtype=torch.float32)

    def sft_batch(self, n: int, generator: torch.Generator | None = None):
        """Supervised examples: ``tokens`` (n, P + T) prompt + correct completion (padded) and
        ``loss_mask`` (n, P + T - 1), 1 where the next token is part of the completion."""
        prompts = self.sample_prompts(n, generator)
        targets = [self.sft_target(p, generator) for p in prompts]
        T = max(len(t) for t in targets)
        tokens = torch.full((n, self.prompt_len + T), PAD, dtype=torch.long)
        tokens[:, : self.prompt_len] = prompts
        loss_mask = torch.zeros(n, self.prompt_len + T - 1)
        for i, t in enumerate(targets):
            tokens[i, self.prompt_len : self.prompt_len + len(t)] = torch.tensor(t)
            loss_mask[i, self.prompt_len - 1 : self.prompt_len - 1 + len(t)] = 1.0  # predict each answer token
        return tokens, loss_mask

    def sft_target(self, prompt: torch.Tensor, generator: torch.Generator | None = None) -> list[int]:
        """The completion the warm start shows for ``prompt``: :meth:`target` (a task with several right
        answers may draw one of them with ``generator``)."""
        return self.target(prompt)

    def accuracy(self, prompts: torch.Tensor, responses: torch.Tensor) -> float:
        """Fraction of completions that equal the target exactly."""
        hits = [
            decode(r) == decode(self.target(p)) and EOS in r.tolist()
            for p, r in zip(prompts.cpu(), responses.cpu(), strict=True)
        ]
        return sum(hits) / len(hits)


def _randint(high: int, n: int, generator) -> torch.Tensor:
    return torch.randint(0, high, (n,), generator=generator)


class AdditionTask(TokenTask):
    """``"ab+cd="`` -> the digits of a + b, then EOS. Operands in ``[0, max_operand]``, zero-padded so
    that every prompt has the same length. Reward 1 for the exact answer, 0 otherwise."""

    name = "addition"

    def __init__(self, max_operand: int = 99, max_new_tokens: int = 6):
        if not isinstance(max_operand, int) or max_operand < 1:
            raise ValueError(f"max_operand must be a positive integer, got {max_operand!r}")
        self.max_operand = max_operand
        self.width = len(str(max_operand))
        self.prompt_len = 2 * self.width + 2
        need = len(str(2 * max_operand)) + 1
        if not isinstance(max_new_tokens, int) or max_new_tokens < need:
            raise ValueError(
                f"max_new_tokens={max_new_tokens!r} is too short for answers up to "
                f"{2 * max_operand} plus EOS; use at least {need}"
            )
        self.max_new_tokens = max_new_tokens

    def sample_prompts(self, n, generator=None):
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"number of prompts must be a positive integer, got {n!r}")
        a = _randint(self.max_operand + 1, n, generator)
        b = _randint(self.max_operand + 1, n, generator)
        w = self.width
        return torch.tensor([encode(f"{x:0{w}d}+{y:0{w}d}=") for x, y in zip(a.tolist(), b.tolist(), strict=True)])

    def _operands(self, prompt):
        a, b = decode(prompt).rstrip("=").split("+")
        return int(a), int(b)

    def target(self, prompt):
        a, b = self._operands(prompt)
        return encode(str(a + b)) + [EOS]

    def score(self, prompt, completion):
        a, b = self._operands(prompt)
        return float(decode(completion) == str(a + b))


class SequenceTask(TokenTask):
    """``"d+s="`` -> the ``L`` digits ``(d + s k) mod 10``, ``k = 1..L``, then EOS; ``s`` in 1..``max_step``.

    ``L`` is the horizon knob. The reward comes only at the end: with ``reward="fraction"`` it is
    (number of the L positions that are right) / max(L, completion length), so both wrong digits and
    extra tokens cost; with ``reward="exact"`` it is 1 only for the whole sequence.
    """

    name = "sequence"

    def __init__(self, L: int = 8, reward: str = "fraction", max_new_tokens: int | None = None, max_step: int = 3):
        if not isinstance(max_step, int) or not 1 <= max_step <= 9:
            raise ValueError(f"max_step must be an integer in [1, 9], got {max_step!r}")
        self.max_step = max_step
        if not isinstance(L, int) or L < 1:
            raise ValueError(f"sequence length L must be a positive integer, got {L!r}")
        if reward not in ("fraction", "exact"):
            raise ValueError(f"unknown reward {reward!r}; valid: exact, fraction")
        self.L, self.reward_kind = L, reward
        self.prompt_len = 4
        self.max_new_tokens = max_new_tokens if max_new_tokens is not None else L + 4
        if self.max_new_tokens < L + 1:
            raise ValueError(
                f"max_new_tokens={self.max_new_tokens} leaves no room for L={L} digits + EOS; use at least {L + 1}"
            )

    def sample_prompts(self, n, generator=None):
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"number of prompts must be a positive integer, got {n!r}")
        d = _randint(10, n, generator)
        s = _randint(self.max_step, n, generator) + 1  # step 1..max_step
        return torch.tensor([encode(f"{x}+{y}=") for x, y in zip(d.tolist(), s.tolist(), strict=True)])

    def _digits(self, prompt):
        d, s = (int(c) for c in decode(prompt).rstrip("=").split("+"))
        return [(d + s * k) % 10 for k in range(1, self.L + 1)]

    def target(self, prompt):
        return encode("".join(map(str, self._digits(prompt)))) + [EOS]

    def score(self, prompt, completion):
        want = encode("".join(map(str, self._digits(prompt))))
        right = sum(int(a == b) for a, b in zip(completion, want, strict=False))
        if self.reward_kind == "exact":
            return float(right == self.L and len(completion) == self.L)
        return right / max(self.L, len(completion))


class PairsTask(TokenTask):
    """``"07="`` -> any two digits that sum to the number, then EOS (``"16"``, ``"52"``, ``"70"``...): a task with
    several correct answers per prompt (``N + 1`` for N <= 9, ``19 - N`` above), so that a policy can keep
    finding many of them or collapse onto one. Reward 1 for a correct pair, 0 otherwise. The warm start
    (:meth:`sft_target`) shows a correct pair drawn uniformly for each prompt, so it starts diverse; the
    collector's ``distinct_correct`` and ``pass_at_k`` metrics measure what RL keeps of that (chapter 9)."""

    name = "pairs"

    def __init__(self, max_sum: int = 18, max_new_tokens: int = 4):
        if not isinstance(max_sum, int) or not 1 <= max_sum <= 18:
            raise ValueError(f"max_sum must be an integer in [1, 18] (two digits sum to at most 18), got {max_sum!r}")
        if not isinstance(max_new_tokens, int) or max_new_tokens < 3:
            raise ValueError(f"max_new_tokens={max_new_tokens!r} leaves no room for two digits and EOS; use >= 3")
        self.max_sum, self.max_new_tokens, self.prompt_len = max_sum, max_new_tokens, 3

    def sample_prompts(self, n, generator=None):
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"number of prompts must be a positive integer, got {n!r}")
        return torch.tensor([encode(f"{x:02d}=") for x in _randint(self.max_sum + 1, n, generator).tolist()])

    def answers(self, prompt) -> list[str]:
        """Every correct answer of one prompt, in order."""
        n = int(decode(prompt).rstrip("="))
        return [f"{a}{n - a}" for a in range(10) if 0 <= n - a <= 9]

    def target(self, prompt):
        return encode(self.answers(prompt)[0]) + [EOS]  # one of them (the warm start draws among all)

    def score(self, prompt, completion):
        return float(decode(completion) in self.answers(prompt))

    def sft_target(self, prompt, generator=None):
        """A correct pair drawn uniformly among the prompt's answers, then EOS: the warm start starts diverse."""
        options = self.answers(prompt)
        return encode(options[int(torch.randint(len(options), (1,), generator=generator))]) + [EOS]

    def accuracy(self, prompts, responses):
        """Fraction of completions that are a correct pair followed by EOS."""
        hits = []
        for p, r in zip(prompts.cpu(), responses.cpu(), strict=True):
            ids = r.tolist()
            hits.append(EOS in ids and self.score(p, ids[: ids.index(EOS)]) == 1.0)
        return sum(hits) / len(hits)


TASKS = {"addition": AdditionTask, "sequence": SequenceTask, "pairs": PairsTask}


def make_task(name: str, **kwargs) -> TokenTask:
    """Build a token task by name: ``make_task("sequence", L=16)``."""
    if name not in TASKS:
        raise ValueError(f"unknown token task {name!r}; valid: {', '.join(sorted(TASKS))}")
    return TASKS[name](**kwargs)
