"""Multi-turn agent rollout: a language model issues tool calls, the environment answers, the context grows.

Chapter 11 (agents, compaction and reward hacking). One episode, as tokens (ids of
:mod:`rltutor.envs.toolshell.vocab`)::

    <task> task statement  <cmd> c o m m a n d <eos> <obs> observation  <cmd> ... <eos> <obs> ...
    ^ environment tokens    ^env ^ generated (mask 1) ^ environment tokens (mask 0, but attended to)

The policy samples a command until ``<eos>`` (or ``max_cmd_tokens``); the collector decodes it, runs
it (``env.step``) and appends the observation as *environment tokens*: in the context, so the policy
reads them, but with mask 0, so no policy loss is put on them (tool-token masking). GAE skips them:
:func:`rltutor.advantages.gae` carries the value and TD error across masked gaps, so a tool output
between two commands does not count as time passing (tested in ``tests/test_agent.py``). When the next
turn might not fit in ``context_budget`` tokens, the context is compacted
(:mod:`rltutor.rollout.compaction`) and the episode continues in a new sub-trajectory.

The batch (the contract of :mod:`rltutor.rollout`), one row per sub-trajectory, padded to width L:

* ``tokens`` (R, L): the sub-trajectory's whole token sequence, carried-over context first;
* ``prompt_len`` (R,) = 1 for every row: the row's actions are ``tokens[:, 1:]`` (R, L - 1), so
  :meth:`rltutor.models.lm_policy.LMPolicy.evaluate` runs one causal forward pass and reads
  log pi(token_{j+1} | tokens_<=j) and V at *every* position; the trained positions, scattered over
  the row (one span per command), are picked by ``mask``, not by a prompt/response split;
* ``mask`` (R, L - 1): 1 on generated command tokens (and on summary tokens if ``train_summary``);
* ``logp`` (R, L - 1): the sampler's log-probs there (0 elsewhere); ``values`` (R, L - 1) with a critic;
* ``rewards``, ``group_ids``: from :func:`rltutor.rollout.compaction.assign_rewards` under
  ``sub_advantage``; the episode's outcome reward sits on its last generated token.

``info["metrics"]``: ``solve_rate`` (honest solves), ``success_rate`` (any solve), ``hack_rate``,
``segments_per_episode``, ``mean_turns``, ``overflow_rate`` (episodes ended by the budget with
``compaction="none"``), ``sample_time``; the trainer logs ``episode_return`` from ``episode_returns``.
``env_steps`` counts generated tokens.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from rltutor.envs.toolshell.vocab import CMD, EOS, OBS, PAD, TASK, decode, encode
from rltutor.models.lm_policy import LMPolicy
from rltutor.rollout.compaction import COMPACTIONS, SUB_ADVANTAGES, assign_rewards, compact
from rltutor.utils import check_choice, check_int

__all__ = ["AgentCollector", "Segment", "Episode", "play_scripted", "sample_commands", "episodes_to_batch"]


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
    """One episode: its sub-trajectories and its outcome."""

    task: int
    segments: list[Segment] = field(default_factory=list)
    turns: list[tuple[list[int], list[int]]] = field(default_factory=list)
    reward: float = 0.0
    record: dict = field(default_factory=dict)
    overflow: bool = False
    done: bool = False


class _Runner:
    """The bookkeeping of one episode: context, turns, compaction. Shared by the collector and the
    scripted demonstrations, so the warm start sees exactly the contexts RL will."""

    def __init__(
        self,
        env,
        task: int,
        statement: str,
        budget: int,
        compaction: str,
        keep_turns: int,
        max_cmd_tokens: int,
        max_obs_tokens: int,
        train_summary: bool,
    ):
        self.env, self.budget, self.compaction, self.keep_turns = env, budget, compaction, keep_turns
        self.max_cmd, self.max_obs, self.train_summary = max_cmd_tokens, max_obs_tokens, train_summary
        self.head = [TASK, *encode(statement)]
        self.room = 1 + max_cmd_tokens  # <cmd> and the longest command
        if len(self.head) + self.room > budget:
            raise ValueError(
                f"the task takes {len(self.head)} tokens and a command up to {self.room}, more than "
                f"context_budget={budget}; raise context_budget (or lower max_cmd_tokens)"
            )
        self.ep = Episode(task=task)
        self.seg = Segment(list(self.head), [False] * len(self.head), [0.0] * len(self.head), len(self.head))

    def context(self) -> list[int]:
        return self.seg.tokens + [CMD]

    def apply(self, cmd: list[int], logp: list[float]) -> None:
        """The policy's command (generated tokens, <eos> included if emitted): run it and grow the context."""
        s = self.seg
        s.tokens += [CMD, *cmd]
        s.trained += [False] + [True] * len(cmd)
        s.logp += [0.0, *logp]
        text = decode([t for t in cmd if t != EOS])
        obs, reward, done, _info = self.env.step(text)
        obs_tok = encode(obs)[: self.max_obs]
        self.ep.turns.append((cmd, obs_tok))
        if done:
            return self._finish(reward)
        obs_tok = [OBS, *obs_tok]
        if len(s.tokens) + len(obs_tok) + self.room <= self.budget:
            s.tokens += obs_tok
            s.trained += [False] * len(obs_tok)
            s.logp += [0.0] * len(obs_tok)
            return None
        self.ep.segments.append(s)  # the next turn might not fit: this sub-trajectory ends here
        if self.compaction == "none":
            self.ep.overflow = True
            return self._finish(0.0, closed=True)
        tokens, is_summary = compact(self.compaction, self.head, self.ep.turns, self.budget, self.room, self.keep_turns)
        trained = [f and self.train_summary for f in is_summary]
        logp = [float("nan") if f else 0.0 for f in trained]  # filled in by the collector (policy's log-probs)
        self.seg = Segment(tokens, trained, logp, len(tokens))
        return None

    def _finish(self, reward: float, closed: bool = False) -> None:
        if not closed:
            self.ep.segments.append(self.seg)
        self.ep.reward, self.ep.done = float(reward), True
        self.ep.record = dict(getattr(self.env, "episode", {}) or {})


@torch.no_grad()
def sample_commands(
    policy: LMPolicy, contexts: list[list[int]], max_cmd_tokens: int, generator: torch.Generator | None = None
) -> tuple[list[list[int]], list[list[float]]]:
    """One command per context, sampled token by token at the policy's temperature until ``<eos>``.

    Contexts of different lengths are right-padded into one (B, L) batch; causal attention means the
    padding after a row's end never changes what its real positions see, so row i's next-token
    distribution is read at its own last position. No KV cache (the rows' positions differ): each step
    re-runs the prefix, which at these sizes costs little. Returns the tokens (``<eos>`` included when
    emitted) and their log-probs log pi(o_t | context, o_<t)."""
    model = policy.model
    device = next(model.parameters()).device
    if generator is not None and generator.device != device:  # a CPU seed drives a device generator
        generator = torch.Generator(device).manual_seed(int(torch.randint(0, 2**62, (1,), generator=generator)))
    B = len(contexts)
    lens = torch.tensor([len(c) for c in contexts], device=device)  # (B,)
    width = int(lens.max()) + max_cmd_tokens
    if width - 1 > model.config.block_size:
        raise ValueError(
            f"a context of {int(lens.max())} tokens plus {max_cmd_tokens} command tokens exceeds the "
            f"model's block_size {model.config.block_size}"
        )
    tokens = torch.full((B, width), PAD, dtype=torch.long, device=device)  # (B, L) right-padded
    for i, c in enumerate(contexts):
        tokens[i, : len(c)] = torch.tensor(c, device=device)
    rows = torch.arange(B, device=device)
    done = torch.zeros(B, dtype=torch.bool, device=device)
    out, out_lp = [], []
    was_training = model.training
    model.eval()
    for t in range(max_cmd_tokens):
        pos = lens + t  # (B,) where each row's next token goes
        logits, _ = model(tokens[:, : int(pos.max())])
        logprobs = F.log_softmax(logits[rows, pos - 1] / policy.temperature, dim=-1)  # (B, V) log pi_tau
        nxt = torch.multinomial(logprobs.exp(), 1, generator=generator).squeeze(1)  # (B,)
        nxt = nxt.masked_fill(done, PAD)
        tokens[rows, pos] = nxt
        out.append(nxt)
        out_lp.append(logprobs.gather(1, nxt[:, None]).squeeze(1))
        done = done | (nxt == EOS)
        if bool(done.all()):
            break
    model.train(was_training)
    toks, lps = torch.stack(out, 1).tolist(), torch.stack(out_lp, 1).tolist()  # (B, n)
    cmds, logps = [], []
    for tk, lp in zip(toks, lps, strict=True):
        n = tk.index(EOS) + 1 if EOS in tk else len(tk)
        cmds.append(tk[:n])
        logps.append(lp[:n])
    return cmds, logps


def play_scripted(
    env,
    commands: list[str],
    task: int = 0,
    context_budget: int = 512,
    compaction: str = "recent",
    keep_turns: int = 2,
    max_cmd_tokens: int = 24,
    max_obs_tokens: int = 128,
    train_summary: bool = False,
) -> Episode:
    """Play ``commands`` (e.g. :func:`rltutor.envs.toolshell.scripted_solver`'s) in ``env`` from its current
    task (the caller has reset it) through the same context and compaction logic as the collector: the
    demonstrations of the supervised warm start. Each command is encoded and ended with ``<eos>``."""
    run = _Runner(
        env,
        task,
        env.task.statement,
        context_budget,
        compaction,
        keep_turns,
        max_cmd_tokens,
        max_obs_tokens,
        train_summary,
    )
    for c in commands:
        if run.ep.done:
            break
        cmd = [*encode(c), EOS][:max_cmd_tokens]
        run.apply(cmd, [0.0] * len(cmd))
    if not run.ep.done:
        run._finish(0.0)
    return run.ep


def episodes_to_batch(episodes: list[Episode], device=None) -> tuple[dict, torch.Tensor]:
    """Rows of every sub-trajectory: ``tokens`` (R, L), ``prompt_len`` (R,) = 1, ``actions`` (R, L - 1),
    ``logp`` and ``mask`` (R, L - 1); and ``meta`` (R, 4) = (task, episode, k, K) per row."""
    segs = [(e, i, k, s) for i, e in enumerate(episodes) for k, s in enumerate(e.segments)]
    R, L = len(segs), max(len(s.tokens) for *_, s in segs)
    tokens = torch.full((R, L), PAD, dtype=torch.long)
    trained = torch.zeros(R, L)
    logp = torch.zeros(R, L)
    meta = torch.zeros(R, 4, dtype=torch.long)
    for r, (e, i, k, s) in enumerate(segs):
        n = len(s.tokens)
        tokens[r, :n] = torch.tensor(s.tokens)
        trained[r, :n] = torch.tensor(s.trained, dtype=torch.float)
        logp[r, :n] = torch.tensor(s.logp)
        meta[r] = torch.tensor([e.task, i, k, len(e.segments)])
    batch = {
        "tokens": tokens,
        "prompt_len": torch.ones(R, dtype=torch.long),
        "actions": tokens[:, 1:],
        "mask": trained[:, 1:],
        "logp": logp[:, 1:],
    }  # position j of the actions is token j + 1
    return {k: v.to(device) for k, v in batch.items()}, meta.to(device)


class AgentCollector:
    """``num_tasks`` tasks x G episodes each, played in parallel, compacted, turned into rows.

    Args:
        make_env: ``make_env() -> env`` with ``reset(seed) -> statement``, ``step(command) -> (obs, reward,
            done, info)``, ``task.statement`` and an ``episode`` dict (``solved``, ``hacked``,
            ``honest_solve``, ``turns``): a :class:`~rltutor.envs.toolshell.ToolShell` or a
            :class:`~rltutor.guard.wrapper.GuardedEnv` around one.
        num_tasks: tasks per batch; group_size: G, episodes per task (one group).
        context_budget: the most tokens a context (a row) may hold; the model's block_size must reach it.
        compaction: ``"none"``, ``"recent"`` or ``"summary"`` (:mod:`rltutor.rollout.compaction`).
        keep_turns: turns ``"recent"`` keeps.
        sub_advantage: a name in :data:`~rltutor.rollout.compaction.SUB_ADVANTAGES`.
        gamma: the bootstrap's discount.
        train_summary: summary tokens get mask 1 (trained, with the policy's log-probs at collection).
        max_cmd_tokens: a command longer than this is cut (and run as it is); max_obs_tokens: observations
            are cut to this many tokens.
    """

    def __init__(
        self,
        make_env: Callable,
        num_tasks: int = 4,
        group_size: int = 4,
        context_budget: int = 512,
        compaction: str = "recent",
        keep_turns: int = 2,
        sub_advantage: str = "ppo_bootstrap",
        gamma: float = 1.0,
        train_summary: bool = False,
        max_cmd_tokens: int = 24,
        max_obs_tokens: int = 128,
    ):
        for name, v in (
            ("num_tasks", num_tasks),
            ("group_size", group_size),
            ("context_budget", context_budget),
            ("max_cmd_tokens", max_cmd_tokens),
            ("max_obs_tokens", max_obs_tokens),
        ):
            check_int(name, v, 1)
        check_int("keep_turns", keep_turns, 0)
        check_choice("compaction", compaction, COMPACTIONS)
        check_choice("sub_advantage", sub_advantage, SUB_ADVANTAGES)
        self.num_tasks, self.group_size, self.budget = num_tasks, group_size, context_budget
        self.compaction, self.keep_turns, self.sub_advantage = compaction, keep_turns, sub_advantage
        self.gamma, self.train_summary = float(gamma), bool(train_summary)
        self.max_cmd, self.max_obs = max_cmd_tokens, max_obs_tokens
        self.envs = [make_env() for _ in range(num_tasks * group_size)]

    def state_dict(self) -> dict:
        """Nothing to save: task seeds come from the trainer's generator."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        if state:
            raise ValueError(f"an AgentCollector has no state, but the checkpoint holds {sorted(state)}")

    def evaluate(self, policy) -> dict:
        return {}

    @torch.no_grad()
    def run_episodes(self, policy: LMPolicy, generator: torch.Generator | None = None) -> list[Episode]:
        """Play num_tasks x G episodes (G in a row per task, each group from one task seed)."""
        G = self.group_size
        seeds = torch.randint(0, 2**31 - 1, (self.num_tasks,), generator=generator).tolist()
        runners = []
        for i, env in enumerate(self.envs):
            statement = env.reset(seed=seeds[i // G])
            runners.append(
                _Runner(
                    env,
                    i // G,
                    statement,
                    self.budget,
                    self.compaction,
                    self.keep_turns,
                    self.max_cmd,
                    self.max_obs,
                    self.train_summary,
                )
            )
        while True:
            live = [r for r in runners if not r.ep.done]
            if not live:
                break
            cmds, logps = sample_commands(policy, [r.context() for r in live], self.max_cmd, generator)
            for r, c, lp in zip(live, cmds, logps, strict=True):
                r.apply(c, lp)
        return [r.ep for r in runners]

    @torch.no_grad()
    def collect(self, policy: LMPolicy, generator: torch.Generator | None = None):
        device = next(policy.parameters()).device
        t0 = time.perf_counter()
        episodes = self.run_episodes(policy, generator)
        t_sample = time.perf_counter() - t0
        batch, meta = episodes_to_batch(episodes, device)
        ev = None
        if policy.has_critic or self.train_summary:
            ev = policy.evaluate(batch)  # V(s_t) at every position; log-probs for the summary tokens
            if policy.has_critic:
                batch["values"] = ev["values"] * batch["mask"]
        if self.train_summary:  # scripted tokens (NaN so far): behaviour log-probs = the policy's at collection
            batch["logp"] = torch.where(torch.isnan(batch["logp"]), ev["logp"], batch["logp"])
        outcome = torch.tensor([e.reward for e in episodes], device=device)
        batch["rewards"], batch["group_ids"] = assign_rewards(
            self.sub_advantage,
            meta,
            outcome,
            batch["mask"],
            batch.get("values"),
            self.gamma,
            self.num_tasks,
            self.group_size,
        )
        recs = [e.record for e in episodes]
        n = len(episodes)
        metrics = {
            "solve_rate": sum(bool(r.get("honest_solve")) for r in recs) / n,
            "success_rate": sum(bool(r.get("solved")) for r in recs) / n,
            "hack_rate": sum(bool(r.get("hacked")) for r in recs) / n,
            "segments_per_episode": sum(len(e.segments) for e in episodes) / n,
            "mean_turns": sum(len(e.turns) for e in episodes) / n,
            "overflow_rate": sum(e.overflow for e in episodes) / n,
            "sample_time": t_sample,
        }
        generated_tokens = sum(len(c) for e in episodes for c, _ in e.turns)
        info = {
            "episode_returns": outcome.tolist(),
            "episode_lengths": [len(e.turns) for e in episodes],
            "env_steps": generated_tokens,
            "metrics": metrics,
        }
        return batch, info
