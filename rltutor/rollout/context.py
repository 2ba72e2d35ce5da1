"""An agent's context: its token count and its compaction under a budget, and the records of an episode.

Chapter 11 (agents and compaction). Every agent of :mod:`rltutor.rollout.agent` (the token chooser that
writes its commands, the template chooser that picks them) plays through one :class:`Context`::

    <task> task statement  <cmd> c o m m a n d <eos> <obs> observation  <cmd> ... <eos> <obs> ...

counted in the tokens of a :class:`Tokenizer` (by default the toolshell vocabulary,
:mod:`rltutor.envs.toolshell.vocab`; a Hugging Face chooser passes its own). When the next turn might not
fit in ``context_budget`` tokens (``room`` = the longest command plus its ``<cmd>``), the sub-trajectory
ends: with ``"recent"`` or ``"summary"`` the context is compacted (:func:`rltutor.rollout.compaction.compact`)
and the episode goes on in a new :class:`Segment`; with ``"none"`` the episode ends there (``overflow``,
reward 0).

:class:`ContextSpec` holds the context settings, checked once; it travels whole from the config
(:meth:`rltutor.config.Config.context_spec`) to the collector to each :class:`Context`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from rltutor.envs.toolshell.vocab import CMD, EOS, OBS, TASK, decode, encode
from rltutor.rollout.compaction import COMPACTIONS, compact
from rltutor.utils import check_choice, check_int

__all__ = ["MAX_CONTEXT_BUDGET", "ContextSpec", "Tokenizer", "TOOLSHELL_TOKENS", "Segment", "Episode", "Context"]

MAX_CONTEXT_BUDGET = 8192
"""the largest context_budget. The agent's TinyGPT allocates block_size = context_budget positions, and its
attention a (T, T) mask per row: 8192 gives a 2 MB position table at n_embd=64 and a 64 MB mask, while the
longest default episode (32 turns x (24 + 128) tokens = 4,864) fits with room to spare. 10^8 would ask for
25.6 GB before the first step."""


@dataclass(frozen=True)
class ContextSpec:
    """The context settings of an agent, checked once (the names are :class:`~rltutor.config.Config`'s)."""

    context_budget: int | None = 512
    """the most tokens a context (a training row of the token chooser) may hold; ``None``: no limit and
    no compaction (the template chooser only: a token model's block_size needs a number)"""
    compaction: str = "recent"
    """what happens when the next turn might not fit: "none" ends the episode, "recent" keeps the task and
    ``keep_turns`` turns, "summary" the task and a scripted summary (:mod:`rltutor.rollout.compaction`)"""
    keep_turns: int = 2
    """turns the "recent" compaction keeps"""
    max_cmd_tokens: int = 24
    """the longest command: a generated one is cut there, and this much room (plus ``<cmd>``) is kept"""
    max_obs_tokens: int = 128
    """observations are cut to this many tokens in the context"""
    train_summary: bool = False
    """summary tokens get mask 1 (trained, with the policy's log-probs at collection)"""

    def __post_init__(self):
        if self.context_budget is not None:
            check_int(
                "context_budget",
                self.context_budget,
                1,
                MAX_CONTEXT_BUDGET,
                "the agent's model allocates a position per token of it (rltutor.rollout.context.MAX_CONTEXT_BUDGET)",
            )
        check_choice("compaction", self.compaction, COMPACTIONS)
        check_int("keep_turns", self.keep_turns, 0)
        check_int("max_cmd_tokens", self.max_cmd_tokens, 1)
        check_int("max_obs_tokens", self.max_obs_tokens, 1)
        if not isinstance(self.train_summary, bool):
            raise ValueError(f"train_summary must be True or False, got {self.train_summary!r}")
        if self.context_budget is not None and self.context_budget < 2 * self.max_cmd_tokens + 8:
            raise ValueError(
                f"context_budget={self.context_budget} leaves no room for the task and a command of "
                f"{self.max_cmd_tokens} tokens; use context_budget >= 128 (512 fits most episodes)"
            )
        if self.context_budget is None and self.compaction != "none":
            raise ValueError(
                f"compaction={self.compaction!r} acts when the context outgrows its budget: pass context_budget "
                "(in tokens; 256 splits a template episode into about 5 sub-trajectories), or compaction='none'"
            )

    @property
    def room(self) -> int:
        """Tokens kept free for the next command: ``<cmd>`` and the longest command."""
        return 1 + self.max_cmd_tokens


@dataclass(frozen=True)
class Tokenizer:
    """Text to token ids and back, and the ids of the four markers a context is written with.

    ``task``, ``cmd`` and ``obs`` are one id each (the toolshell vocabulary's ``<task>``, ``<cmd>``, ``<obs>``)
    or a tuple of ids: a chat model's turn boundaries, e.g. ChatML's ``<|im_end|>\\n<|im_start|>assistant\\n``
    before a command (:func:`rltutor.rollout.hf_agent.chat_tokenizer` reads them off the chat template)."""

    encode: Callable[[str], list[int]]
    decode: Callable[[list[int]], str]
    task: int | tuple[int, ...]
    cmd: int | tuple[int, ...]
    obs: int | tuple[int, ...]
    eos: int

    def ids(self, marker: str) -> list[int]:
        """The token ids of the marker ``marker`` ("task", "cmd" or "obs") as a list."""
        m = getattr(self, marker)
        return [m] if isinstance(m, int) else list(m)


TOOLSHELL_TOKENS = Tokenizer(encode, decode, TASK, CMD, OBS, EOS)
"""the word-level toolshell vocabulary (:mod:`rltutor.envs.toolshell.vocab`)"""


@dataclass
class Segment:
    """One sub-trajectory: its tokens, which of them are trained, their behaviour log-probs."""

    tokens: list[int]
    trained: list[bool]
    logp: list[float]
    carried: int = 0
    """leading tokens carried over from the previous sub-trajectory (the task, kept turns, a summary)"""


@dataclass
class Episode:
    """One episode: its sub-trajectories, its turns and its outcome."""

    task: int
    segments: list[Segment] = field(default_factory=list)
    turns: list[tuple[list[int], list[int]]] = field(default_factory=list)
    """(command tokens, observation tokens) per turn"""
    turn_segments: list[int] = field(default_factory=list)
    """the sub-trajectory each turn belongs to"""
    rewards: list[float] = field(default_factory=list)
    """each turn's reward (the environment's, less the turn cost)"""
    reward: float = 0.0
    """the environment's reward at the end (0 for an episode ended by the budget)"""
    record: dict = field(default_factory=dict)
    overflow: bool = False
    """ended because the next turn did not fit (``compaction="none"``)"""
    cut: bool = False
    """ended by the guard (``"end"`` action)"""
    steps: list = field(default_factory=list)
    """per turn, what the chooser keeps to build its rows (the template chooser's candidates and choice)"""
    done: bool = False

    @property
    def score(self) -> float:
        """The episode's return: its turns' rewards summed (R - turn_cost * turns)."""
        return sum(self.rewards)


class Context:
    """The context of one episode, grown turn by turn and compacted under ``spec.context_budget``.

    ``prompt()`` is what the policy reads next (the current sub-trajectory and ``<cmd>``); ``add_turn``
    appends a command and its observation and returns the compacted context's text when the sub-trajectory
    ended there (``None`` otherwise); ``finish`` closes the episode. ``episode`` holds the record.
    """

    def __init__(self, statement: str, spec: ContextSpec, task: int = 0, tokenizer: Tokenizer = TOOLSHELL_TOKENS):
        self.spec, self.tok = spec, tokenizer
        self.cmd_marker, self.obs_marker = tokenizer.ids("cmd"), tokenizer.ids("obs")
        self.room = len(self.cmd_marker) + spec.max_cmd_tokens  # the next command and its marker
        self.head = [*tokenizer.ids("task"), *tokenizer.encode(statement)]
        budget = spec.context_budget
        if budget is not None and len(self.head) + self.room > budget:
            raise ValueError(
                f"the task takes {len(self.head)} tokens and a command up to {self.room}, more than "
                f"context_budget={budget}; raise context_budget (or lower max_cmd_tokens)"
            )
        n = len(self.head)
        self.seg = Segment(list(self.head), [False] * n, [0.0] * n, n)
        self.episode = Episode(task=task)

    @property
    def k(self) -> int:
        """The sub-trajectory the next turn belongs to."""
        return len(self.episode.segments)

    def prompt(self) -> list[int]:
        return self.seg.tokens + self.cmd_marker

    def add_turn(
        self, cmd: list[int], logp: list[float], obs: str, reward: float, done: bool, turn_cost: float = 0.0
    ) -> str | None:
        """Add the command ``cmd`` (its tokens, ``<eos>`` included if emitted; ``logp`` their behaviour
        log-probs) and its outcome (the turn's reward is ``reward - turn_cost``). Returns the compacted context's
        text if the sub-trajectory ended here and the episode goes on (``None`` otherwise)."""
        ep, s, spec = self.episode, self.seg, self.spec
        s.tokens += [*self.cmd_marker, *cmd]
        s.trained += [False] * len(self.cmd_marker) + [True] * len(cmd)
        s.logp += [0.0] * len(self.cmd_marker) + list(logp)
        obs_tok = self.tok.encode(obs)[: spec.max_obs_tokens]
        ep.turns.append((cmd, obs_tok))
        ep.turn_segments.append(self.k)
        ep.rewards.append(float(reward) - turn_cost)
        if done:
            self.finish(reward)
            return None
        obs_tok = [*self.obs_marker, *obs_tok]
        if spec.context_budget is None or len(s.tokens) + len(obs_tok) + self.room <= spec.context_budget:
            s.tokens += obs_tok
            s.trained += [False] * len(obs_tok)
            s.logp += [0.0] * len(obs_tok)
            return None
        ep.segments.append(s)  # the next turn might not fit: this sub-trajectory ends here
        if spec.compaction == "none":
            ep.overflow = True
            self.finish(0.0, closed=True)
            return None
        tokens, is_summary = compact(
            spec.compaction, self.head, ep.turns, spec.context_budget, self.room, spec.keep_turns, self.tok
        )
        trained = [f and spec.train_summary for f in is_summary]
        logp_ = [float("nan") if f else 0.0 for f in trained]  # filled in by the chooser (policy's log-probs)
        self.seg = Segment(tokens, trained, logp_, len(tokens))
        return self.tok.decode(tokens)

    def finish(self, reward: float = 0.0, closed: bool = False) -> None:
        """End the episode with the environment's ``reward`` (``closed``: its last sub-trajectory is stored
        already). A sub-trajectory without a turn of its own (a compaction just before the end) is dropped."""
        ep = self.episode
        if not closed and len(self.seg.tokens) > self.seg.carried:
            ep.segments.append(self.seg)
        ep.reward, ep.done = float(reward), True
