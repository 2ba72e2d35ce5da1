"""Template rollout: the toolshell agent as a policy over (template, argument) candidates (chapter 11).

The token-level agent (:mod:`rltutor.rollout.agent`) writes each command token by token; in CPU minutes
it did not learn to solve even one-hop tasks (see :mod:`rltutor.models.template_policy`). Here the agent
*chooses* each command from a list built out of what it has read so far:

=========  ===========================  ====================================================
template   argument                     where the argument comes from
=========  ===========================  ====================================================
``ls``     a directory                  ``.``, and directories named in observations or ls
``cat``    a file                       paths in observations, imports (``from a.b import X``
                                        -> ``a/b.py``), names listed by ``ls``
``grep``   an UPPER_CASE word           words in observations: ``grep -rn WORD .`` searches the
                                        whole tree (hidden tests included: a shortcut)
``curl``   a URL                        URLs in observations (README names the grader's)
``submit`` a number                     numbers in observations
=========  ===========================  ====================================================

Candidates come from the observation texts only (:class:`Memory` sees strings, never the
environment): the answer can be submitted only once some observation showed it. The shortcuts a cheater
uses are candidates like any other (``curl http://grader/answer?task=ID`` once README named the
grader, ``cat tests/hidden/test_answer.py`` once ``ls tests/hidden`` listed it, ``grep -rn TARGET .``).

Each turn is one action: the batch has one row per episode, T = turns, mask 1 on each turn. Rewards:
``-turn_cost`` on every turn (a tool call costs time) plus the environment's reward (1 for a correct
submit) on the turn it comes, so the row's score is ``R - turn_cost * turns`` (what GRPO compares) and
GAE sees each turn's cost where it is paid.
"""

from __future__ import annotations

import re
import time
import zlib
from collections import Counter
from collections.abc import Callable

import torch
import torch.nn.functional as F

from rltutor.envs.toolshell.vocab import EOS, TASK, decode, encode
from rltutor.rollout.compaction import COMPACTIONS, SUB_ADVANTAGES, assign_rewards, compact, comparable_rows
from rltutor.utils import check_choice, check_int, check_number

__all__ = [
    "TEMPLATES",
    "CAND_DIM",
    "STATE_DIM",
    "Memory",
    "TemplateCollector",
    "template_demos",
    "behaviour_clone",
    "command_of",
    "outcome_to_go",
]

TEMPLATES = ("ls", "cat", "grep", "curl", "submit")
N_HASH = 16
CAND_DIM = len(TEMPLATES) + 12 + N_HASH
"""F: template one-hot, 12 argument features, a hashed bag of the argument's words"""
STATE_DIM = 8 + len(TEMPLATES) + 1
"""S: turn, turns left, first turn, last call's error / truncation / numbers / new items, files read,
the previous template (one-hot, or none)"""

_URL = re.compile(r"https?://[^\s'\"]+")
_PATH = re.compile(r"(?<![\w/.-])(?:\./)?((?:[\w-]+/)*[\w-]+\.(?:py|md))(?![\w/])")
_DIR = re.compile(r"(?<![\w/.-])((?:[a-z_]+/)+[a-z_]+)(?![\w./])")
_IMPORT = re.compile(r"^\s*from ([\w.]+) import (\w+)", re.M)
_WORD = re.compile(r"\b[A-Z][A-Z_]{2,}\b")
_NUMBER = re.compile(r"(?<![\w.:/-])\d{1,7}(?![\w.:/])")
_GREP_PREFIX = re.compile(r"^(?:\./)?[\w./-]+:\d+:", re.M)
_NAMED = re.compile(r"\b([A-Z][A-Z_]{2,})\s*==?\s*(\d+)\b")


def _one_fact_per_line(text: str) -> str:
    """A summary line ``COMMAND: FACT; FACT`` (:func:`rltutor.rollout.compaction.summarize`) as one fact per
    line, so that an import fact is read as an import (the observation parser reads them at line starts)."""
    return re.sub(r"; |: (?=from |assert |[A-Za-z_]\w* = |\w+ is )", "\n", text)


def command_of(template: str, arg: str) -> str:
    """The shell line of a candidate."""
    return {"ls": "ls {}", "cat": "cat {}", "grep": "grep -rn {} .", "curl": "curl {}", "submit": "submit {}"}[
        template
    ].format(arg)


def _hash_words(arg: str) -> list[int]:
    return sorted({zlib.crc32(w.encode()) % N_HASH for w in re.split(r"[/._?=:&\-]+", arg) if w})


class Memory:
    """What one episode's agent has read: the candidates and their features, from observation texts only.

    ``update(obs, template, arg, info)`` after each call; ``features()`` -> (commands, cand (C, F),
    state (S,)) for the next turn. ``max_turns`` scales the turn features; ``max_cands`` keeps the most
    recently mentioned candidates when there are more.
    """

    def __init__(self, statement: str, max_turns: int, max_cands: int = 64):
        self.max_turns, self.max_cands = max_turns, max_cands
        self.turn = 0
        self.items: dict[tuple[str, str], dict] = {}
        self.imported: set[str] = set()
        self.used: Counter = Counter()
        self.prev_template: str | None = None
        self.last: set[tuple[str, str]] = set()
        self.last_numbers = 0
        self.last_error = self.last_truncated = False
        self.new_items = 0
        self.files_read = 0
        self.statement_items: set[tuple[str, str]] = set()
        self._add(("ls", "."), named=False)
        self._read(statement, None, None)
        self.statement_items = set(self.last)

    def _add(self, key, named: bool | None = None) -> None:
        it = self.items.get(key)
        if it is None:
            it = self.items[key] = {"first": self.turn, "last": self.turn, "named": False}
            self.new_items += 1
        it["last"] = self.turn
        if named:
            it["named"] = True
        self.last.add(key)

    def _read(self, text: str, template: str | None, arg: str | None) -> None:
        self.last, self.new_items = set(), 0
        for u in _URL.findall(text):
            self._add(("curl", u.rstrip(".,;)")))
        body = _URL.sub(" ", text)
        if template == "ls":  # names listed by ls are paths under its directory
            for line in body.split("\n"):
                name = line.strip()
                if re.fullmatch(r"[\w-]+(?:\.\w+)?", name):
                    path = name if arg in (".", "") else f"{arg.rstrip('/')}/{name}"
                    self._add(("cat", path) if "." in name else ("ls", path))
        content = _GREP_PREFIX.sub("", body)
        for m in _IMPORT.finditer(content):
            self._add(("cat", m.group(1).replace(".", "/") + ".py"))
            self.imported.add(m.group(2))
        for p in _PATH.findall(body):
            self._add(("cat", p))
            parts = p.split("/")
            for k in range(1, len(parts)):
                self._add(("ls", "/".join(parts[:k])))
        for d in _DIR.findall(body):
            self._add(("ls", d))
        for w in _WORD.findall(body):
            self._add(("grep", w))
        named = {num for name, num in _NAMED.findall(content) if name in self.imported}
        numbers = _NUMBER.findall(content)
        for n in numbers:
            self._add(("submit", n), named=n in named)
        self.last_numbers = len(set(numbers))

    def restart(self, context: str) -> None:
        """Forget everything and read ``context``, a compacted context's text (task, kept turns or summary),
        as a new statement: what a model reading only the compacted context could know. The turn counter
        and the previous template stay (the environment's turn budget is still being spent)."""
        turn, prev = self.turn, self.prev_template
        self.__init__(_one_fact_per_line(context), self.max_turns, self.max_cands)
        self.turn, self.prev_template = turn, prev

    def update(self, obs: str, template: str, arg: str, info: dict | None = None) -> None:
        """Record the call ``template arg`` and read its observation ``obs``."""
        self.used[(template, arg)] += 1
        if template == "cat" and self.used[(template, arg)] == 1:
            self.files_read += 1
        self.prev_template = template
        self.turn += 1
        info = info or {}
        self.last_error = bool(info.get("error", False))
        self.last_truncated = bool(info.get("truncated", False))
        self._read(obs, template, arg)

    def candidates(self) -> list[tuple[str, str]]:
        keys = sorted(self.items, key=lambda k: (-self.items[k]["last"], TEMPLATES.index(k[0]), k[1]))
        return keys[: self.max_cands]

    def features(self) -> tuple[list[tuple[str, str]], torch.Tensor, torch.Tensor]:
        """The candidates (template, arg), their features (C, F) and the state's (S,)."""
        keys = self.candidates()
        M = float(self.max_turns)
        cand = torch.zeros(len(keys), CAND_DIM)
        nlast = max(1, self.last_numbers)
        for i, (t, a) in enumerate(keys):
            it = self.items[(t, a)]
            x = cand[i]
            x[TEMPLATES.index(t)] = 1.0
            j = len(TEMPLATES)
            x[j + 0] = float((t, a) in self.last)
            x[j + 1] = float((t, a) in self.statement_items)
            x[j + 2] = (self.turn - it["first"]) / M
            x[j + 3] = (self.turn - it["last"]) / M
            x[j + 4] = min(self.used[(t, a)], 3) / 3
            x[j + 5] = float(self.used[(t, a)] > 0)
            x[j + 6] = min(a.count("/") + 1, 4) / 4 if t in ("ls", "cat") else 0.0
            x[j + 7] = float(a.endswith(".py"))
            x[j + 8] = float(a.endswith(".md"))
            x[j + 9] = float(it["named"])
            x[j + 10] = float(t == "submit" and (t, a) in self.last) / nlast
            x[j + 11] = float(t == "grep" and a in self.imported)
            for h in _hash_words(a):
                x[len(TEMPLATES) + 12 + h] = 1.0
        s = torch.zeros(STATE_DIM)
        s[0] = self.turn / M
        s[1] = max(0.0, M - self.turn) / M
        s[2] = float(self.turn == 0)
        s[3] = float(self.last_error)
        s[4] = float(self.last_truncated)
        s[5] = min(self.last_numbers, 5) / 5
        s[6] = min(self.new_items, 5) / 5
        s[7] = min(self.files_read, 10) / 10
        s[8 + (TEMPLATES.index(self.prev_template) if self.prev_template else len(TEMPLATES))] = 1.0
        return keys, cand, s


def _pad_stack(xs: list[torch.Tensor], C: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(C_i, F) tensors -> (N, C, F) and a (N, C) bool mask of the real rows."""
    out = torch.zeros(len(xs), C, xs[0].shape[-1])
    mask = torch.zeros(len(xs), C, dtype=torch.bool)
    for i, x in enumerate(xs):
        out[i, : len(x)] = x
        mask[i, : len(x)] = True
    return out, mask


def _max_turns(env) -> int:
    return int(getattr(env, "max_turns", 32))


def _feasibility_metrics(records: list[dict], max_turns: list[int]) -> dict:
    """Rates split by whether the episode's task had an honest solve inside the budget (``hops + 2 <=
    max_turns``: "feasible"); NaN for a split with no episode in this batch."""
    feas = [r["hops"] + 2 <= m for r, m in zip(records, max_turns, strict=True)]

    def rate(key: str, want: bool) -> float:
        rows = [r for r, f in zip(records, feas, strict=True) if f == want]
        return sum(bool(r.get(key)) for r in rows) / len(rows) if rows else float("nan")

    return {
        "feasible_share": sum(feas) / len(feas),
        "honest_solve_rate_feasible": rate("honest_solve", True),
        "hack_rate_feasible": rate("hacked", True),
        "hack_rate_infeasible": rate("hacked", False),
        "success_rate_infeasible": rate("solved", False),
    }


def _comparable_frac(mode: str, group_ids: torch.Tensor, meta: torch.Tensor) -> float:
    """The share of rows whose advantage comes from a comparison within a group of comparable samples
    (:func:`~rltutor.rollout.compaction.comparable_rows`): NaN for the PPO modes (no groups: a critic's
    baseline); for ``broadcast_grpo``, whose groups are whole episodes of one task, the share of rows whose
    episode has at least one other episode of its task."""
    if mode.startswith("ppo"):
        return float("nan")
    if mode == "broadcast_grpo":
        episodes_per_task = torch.zeros(int(meta[:, 0].max()) + 1, dtype=torch.long, device=meta.device)
        first = meta[:, 2] == 0
        episodes_per_task.index_add_(0, meta[first, 0], torch.ones_like(meta[first, 0]))
        return float((episodes_per_task[meta[:, 0]] >= 2).float().mean())
    return float(comparable_rows(group_ids, meta).float().mean())


def _explained(v: torch.Tensor, g: torch.Tensor) -> float:
    """1 - Var(g - v) / Var(g); NaN with fewer than 2 samples or Var(g) = 0."""
    if len(g) < 2 or float(g.var()) == 0.0:
        return float("nan")
    return float(1 - (g - v).var() / g.var())


def outcome_to_go(mask: torch.Tensor, meta: torch.Tensor, returns: torch.Tensor, gamma: float) -> torch.Tensor:
    """(R, T) the discounted outcome from each turn of R sub-trajectory rows, ``gamma^(turns left - 1) *
    R_episode`` (an episode's return sits on its last turn): what a critic of these rows should predict.
    ``meta`` (R, 4) = (task, episode, k, K), rows of an episode consecutive; ``returns`` (E,) per episode."""
    turns = mask.sum(1).long()  # (R,) turns per row
    e = meta[:, 1]
    left = torch.zeros_like(turns)  # turns from each row's first turn to its episode's end
    for r in range(len(turns) - 1, -1, -1):
        later = left[r + 1] if r + 1 < len(turns) and e[r + 1] == e[r] else 0
        left[r] = turns[r] + later
    steps = torch.arange(mask.shape[1], device=mask.device)
    to_go = (left[:, None] - steps[None, :]).clamp(min=1)  # (R, T) turns left from each turn
    return gamma ** (to_go - 1).to(mask.dtype) * returns.to(mask.dtype)[e][:, None] * mask


def _critic_fit(values: torch.Tensor, mask: torch.Tensor, meta: torch.Tensor, returns: list[float], gamma: float):
    """How well the critic's V(s) at collection predicts :func:`outcome_to_go`: explained variance at the
    first turn of each sub-trajectory after a compaction (``critic_ev_boundary``: the states a bootstrap
    reads) and at every turn (``critic_ev_all``)."""
    g = outcome_to_go(mask, meta, torch.tensor(returns, dtype=values.dtype, device=values.device), gamma)
    on = mask > 0
    steps = torch.arange(mask.shape[1], device=mask.device)
    first = on & (steps[None, :] == 0) & (meta[:, 2:3] > 0)
    return {"critic_ev_boundary": _explained(values[first], g[first]), "critic_ev_all": _explained(values[on], g[on])}


class _Context:
    """The token count of one template episode's context, and its compaction: the bookkeeping of the token
    agent (:class:`rltutor.rollout.agent.AgentCollector`), for a policy that picks its commands instead
    of writing them. The context is ``<task> statement`` then ``<cmd> command <eos> <obs> observation``
    per turn, counted in :mod:`~rltutor.envs.toolshell.vocab` tokens. When the next turn might not fit in
    ``budget`` (``room`` = the longest command, plus its ``<cmd>``), the sub-trajectory ends: with
    ``"recent"`` or ``"summary"`` the context is compacted (:func:`~rltutor.rollout.compaction.compact`)
    and :meth:`record` returns its text, which the agent's :class:`Memory` restarts from; with ``"none"``
    the episode ends there (``overflow``)."""

    def __init__(self, statement: str, budget: int, compaction: str, keep_turns: int, room: int, max_obs: int):
        self.budget, self.compaction, self.keep_turns = budget, compaction, keep_turns
        self.room, self.max_obs = room, max_obs
        self.head = [TASK, *encode(statement)]
        if len(self.head) + room > budget:
            raise ValueError(
                f"the task takes {len(self.head)} tokens and a command up to {room}, more than "
                f"context_budget={budget}; raise context_budget"
            )
        self.turns: list[tuple[list[int], list[int]]] = []
        self.length = len(self.head)
        self.k = 0  # the sub-trajectory the next turn belongs to
        self.overflow = False

    @classmethod
    def from_settings(
        cls,
        statement: str,
        context_budget: int,
        compaction: str = "none",
        keep_turns: int = 2,
        max_cmd_tokens: int = 32,
        max_obs_tokens: int = 160,
    ) -> _Context:
        """From the collector's settings (:class:`TemplateCollector`'s names): the room for the next
        command is the longest command plus its ``<cmd>``."""
        return cls(statement, context_budget, compaction, keep_turns, 1 + max_cmd_tokens, max_obs_tokens)

    def record(self, command: str, obs: str) -> str | None:
        """Add a turn; if the next might not fit, end the sub-trajectory and return the compacted context's
        text (``None``: no compaction; with ``"none"`` :attr:`overflow` is set instead)."""
        cmd, o = [*encode(command), EOS], encode(obs)[: self.max_obs]
        self.turns.append((cmd, o))
        self.length += 1 + len(cmd)  # <cmd> command <eos>
        if self.length + 1 + len(o) + self.room <= self.budget:
            self.length += 1 + len(o)  # <obs> observation
            return None
        if self.compaction == "none":
            self.overflow = True
            return None
        tokens, _ = compact(self.compaction, self.head, self.turns, self.budget, self.room, self.keep_turns)
        self.length, self.k = len(tokens), self.k + 1
        return decode(tokens)


class TemplateCollector:
    """``num_tasks`` tasks x G episodes each, played in lockstep by a :class:`~rltutor.models.template_policy.
    TemplatePolicy`; one row per episode (per sub-trajectory with a context budget), one step per turn.

    Args:
        make_env: ``make_env() -> env`` (a ToolShell, or a :class:`~rltutor.guard.wrapper.GuardedEnv` around one).
        num_tasks: tasks per batch; group_size: G, episodes per task (one group, one task seed).
        turn_cost: reward subtracted on every turn (the price of a tool call; see the module docstring).
        max_cands: C, the most candidates a turn offers (the most recently mentioned are kept).
        context_budget: tokens of context (counted as the token agent's, :class:`_Context`); ``None``: no
            limit and no bookkeeping. When the next turn might not fit, ``compaction`` decides:
            ``"none"`` ends the episode (reward 0 from then on), ``"recent"`` (``keep_turns`` turns) or
            ``"summary"`` compacts the context, the agent's :class:`Memory` restarts from the compacted
            text, and the episode goes on in a new sub-trajectory: a new row.
        sub_advantage: ``None``: every turn's reward where it is paid (``-turn_cost``, and the environment's
            reward on its turn), one row per episode. A name in
            :data:`~rltutor.rollout.compaction.SUB_ADVANTAGES`: each episode's *outcome* (its return,
            ``R - turn_cost * turns``) is assigned to its sub-trajectories by
            :func:`~rltutor.rollout.compaction.assign_rewards` (needed once episodes can split).
        gamma: the bootstrap's discount (``ppo_bootstrap``).
        max_cmd_tokens, max_obs_tokens: the room kept for a command; the observation tokens counted.
    """

    def __init__(
        self,
        make_env: Callable,
        num_tasks: int = 4,
        group_size: int = 4,
        turn_cost: float = 0.0,
        max_cands: int = 64,
        context_budget: int | None = None,
        compaction: str = "none",
        keep_turns: int = 2,
        sub_advantage: str | None = None,
        gamma: float = 1.0,
        max_cmd_tokens: int = 32,
        max_obs_tokens: int = 160,
    ):
        check_int("num_tasks", num_tasks, 1)
        check_int("group_size", group_size, 1)
        check_int("max_cands", max_cands, 2)
        self.turn_cost = check_number("turn_cost", turn_cost, 0.0, 1.0)
        check_choice("compaction", compaction, COMPACTIONS)
        if sub_advantage is not None:
            check_choice("sub_advantage", sub_advantage, SUB_ADVANTAGES)
        if compaction != "none" and sub_advantage is None:
            raise ValueError(
                f"compaction={compaction!r} splits episodes into sub-trajectories, so their rewards must be "
                f"assigned: pass sub_advantage (one of {', '.join(SUB_ADVANTAGES)})"
            )
        if compaction != "none" and context_budget is None:
            raise ValueError(
                f"compaction={compaction!r} acts when the context outgrows its budget: pass context_budget "
                "(in tokens; 256 splits a template episode into about 5 sub-trajectories)"
            )
        if context_budget is not None:
            check_int("context_budget", context_budget, 1)
        check_int("keep_turns", keep_turns, 0)
        self.num_tasks, self.group_size, self.max_cands = num_tasks, group_size, max_cands
        check_int("max_cmd_tokens", max_cmd_tokens, 1)
        self.context = dict(
            context_budget=context_budget,
            compaction=compaction,
            keep_turns=keep_turns,
            max_cmd_tokens=max_cmd_tokens,
            max_obs_tokens=max_obs_tokens,
        )
        self.sub_advantage, self.gamma = sub_advantage, float(gamma)
        self.envs = [make_env() for _ in range(num_tasks * group_size)]

    def state_dict(self) -> dict:
        """Nothing to save: task seeds come from the trainer's generator."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        if state:
            raise ValueError(f"a TemplateCollector has no state, but the checkpoint holds {sorted(state)}")

    def evaluate(self, policy) -> dict:
        return {}

    def _context(self, statement: str) -> _Context | None:
        if self.context["context_budget"] is None:
            return None
        return _Context.from_settings(statement, **self.context)

    @torch.no_grad()
    def collect(self, policy, generator: torch.Generator | None = None):
        device = next(policy.parameters()).device
        t0 = time.perf_counter()
        G = self.group_size
        seeds = torch.randint(0, 2**31 - 1, (self.num_tasks,), generator=generator).tolist()
        n = len(self.envs)
        statements = [env.reset(seed=seeds[i // G]) for i, env in enumerate(self.envs)]
        mems = [Memory(st, _max_turns(env), self.max_cands) for st, env in zip(statements, self.envs, strict=True)]
        ctxs = [self._context(st) for st in statements]
        steps: list[list[dict]] = [[] for _ in range(n)]
        done = [False] * n
        cut = [False] * n
        while not all(done):
            live = [i for i in range(n) if not done[i]]
            feats = [mems[i].features() for i in live]
            C = max(len(k) for k, _, _ in feats)
            cand, cmask = _pad_stack([c for _, c, _ in feats], C)  # (N, C, F), (N, C)
            state = torch.stack([s for _, _, s in feats])  # (N, S)
            idx, logp, v = policy.act(cand.to(device), cmask.to(device), state.to(device), generator)
            idx, logp = idx.cpu().tolist(), logp.cpu().tolist()
            v = v.cpu().tolist() if v is not None else [0.0] * len(live)
            for j, i in enumerate(live):
                t, a = feats[j][0][idx[j]]
                command = command_of(t, a)
                obs, reward, d, info = self.envs[i].step(command)
                steps[i].append(
                    {
                        "cand": feats[j][1],
                        "state": feats[j][2],
                        "action": idx[j],
                        "logp": logp[j],
                        "value": v[j],
                        "reward": float(reward) - self.turn_cost,
                        "segment": ctxs[i].k if ctxs[i] is not None else 0,
                    }
                )
                mems[i].update(obs, t, a, info)
                if d:
                    done[i] = True
                    cut[i] = (info.get("guard") or {}).get("action") == "end"
                elif ctxs[i] is not None:
                    compacted = ctxs[i].record(command, obs)
                    if compacted is not None:
                        mems[i].restart(compacted)
                    done[i] = ctxs[i].overflow
        t_sample = time.perf_counter() - t0
        batch, meta = self._batch(steps, device)
        records = [dict(env.episode) for env in self.envs]
        returns = [sum(s["reward"] for s in st) for st in steps]
        if self.sub_advantage is not None:
            outcome = torch.tensor(returns, dtype=batch["mask"].dtype, device=device)
            batch["rewards"], batch["group_ids"] = assign_rewards(
                self.sub_advantage,
                meta,
                outcome,
                batch["mask"],
                batch["values"],
                self.gamma,
                num_tasks=self.num_tasks,
                group_size=G,
            )
        if not policy.has_critic:
            batch.pop("values")
        K = meta[:, 3].float()
        metrics = {
            "solve_rate": sum(bool(r.get("honest_solve")) for r in records) / n,
            "success_rate": sum(bool(r.get("solved")) for r in records) / n,
            "hack_rate": sum(bool(r.get("hacked")) for r in records) / n,
            "attempt_rate": sum(r.get("guard_flagged", 0) > 0 or bool(r.get("hacked")) for r in records) / n,
            "intercepts_per_episode": sum(r.get("guard_flagged", 0) for r in records) / n,
            "missed_per_episode": sum(r.get("guard_missed", 0) for r in records) / n,
            "decoy_turns_per_episode": sum(r.get("guard_decoy_turns", 0) for r in records) / n,
            "cut_short_rate": sum(cut) / n,
            "timeout_rate": sum(r.get("submitted") is None and not c for r, c in zip(records, cut, strict=True)) / n,
            "overflow_rate": sum(bool(c is not None and c.overflow) for c in ctxs) / n,
            "segments_per_episode": len(meta) / n,
            "mean_turns": sum(len(st) for st in steps) / n,
            "sample_time": t_sample,
        }
        if self.sub_advantage is not None:
            metrics["comparable_row_frac"] = _comparable_frac(self.sub_advantage, batch["group_ids"], meta)
            metrics["max_segments"] = float(K.max())
            if policy.has_critic:
                metrics.update(_critic_fit(batch["values"], batch["mask"], meta, returns, self.gamma))
        if all("hops" in r for r in records):
            metrics.update(_feasibility_metrics(records, [_max_turns(env) for env in self.envs]))
        info = {
            "episode_returns": returns,
            "episode_lengths": [len(st) for st in steps],
            "env_steps": sum(len(st) for st in steps),
            "metrics": metrics,
            "meta": meta,  # (R, 4) (task, episode, k, K) per row, for assign_rewards
        }
        return batch, info

    def _batch(self, steps: list[list[dict]], device) -> tuple[dict, torch.Tensor]:
        """One row per sub-trajectory (per episode without compaction), in episode order; and ``meta``
        (R, 4) = (task, episode, k, K) per row, as :func:`~rltutor.rollout.compaction.assign_rewards` takes."""
        rows: list[list[dict]] = []
        meta = []
        for e, st in enumerate(steps):
            K = st[-1]["segment"] + 1
            for k in range(K):
                rows.append([s for s in st if s["segment"] == k])
                meta.append((e // self.group_size, e, k, K))
        if any(not r for r in rows):
            raise RuntimeError("a sub-trajectory without a turn: compaction must follow a turn")  # cannot happen
        B, T = len(rows), max(len(r) for r in rows)
        C = max(len(s["cand"]) for r in rows for s in r)
        cand = torch.zeros(B, T, C, CAND_DIM)
        cmask = torch.zeros(B, T, C, dtype=torch.bool)
        cmask[:, :, 0] = True  # padded turns keep one valid candidate, so their (masked) log-probs stay finite
        state = torch.zeros(B, T, STATE_DIM)
        actions = torch.zeros(B, T, dtype=torch.long)
        logp, mask, rewards, values = (torch.zeros(B, T) for _ in range(4))
        for b, r in enumerate(rows):
            for t, s in enumerate(r):
                k = len(s["cand"])
                cand[b, t, :k] = s["cand"]
                cmask[b, t, :k] = True
                state[b, t] = s["state"]
                actions[b, t], logp[b, t], values[b, t] = s["action"], s["logp"], s["value"]
                rewards[b, t], mask[b, t] = s["reward"], 1.0
        group_ids = torch.tensor([m[0] for m in meta])
        batch = {
            "actions": actions,
            "logp": logp,
            "mask": mask,
            "rewards": rewards,
            "group_ids": group_ids,
            "values": values * mask,
            "cand": cand,
            "cand_mask": cmask,
            "state": state,
        }
        return {k: v.to(device) for k, v in batch.items()}, torch.tensor(meta, dtype=torch.long, device=device)


# ----------------------------------------------------------------------------------------------
# The warm start: behaviour cloning of the scripted honest solver
# ----------------------------------------------------------------------------------------------


def template_demos(
    make_env: Callable,
    solver: Callable,
    n: int,
    seed: int = 0,
    max_cands: int = 64,
    context: dict | None = None,
) -> dict:
    """``n`` episodes of ``solver(env) -> commands`` (the honest scripted solver) on fresh tasks, as
    turns: ``cand`` (N, C, F), ``cand_mask`` (N, C), ``state`` (N, S), ``target`` (N,) the index of the
    solver's command among the candidates. Raises if a solver command is not a candidate.

    ``context``: the collector's context settings (:attr:`TemplateCollector.context`: ``context_budget``,
    ``compaction``, ``keep_turns``, ``max_cmd_tokens``, ``max_obs_tokens``), so that the demonstrations pass
    through the same compactions (and the same restarted memories) as the episodes RL will collect."""
    env = make_env()
    g = torch.Generator().manual_seed(seed)
    cands, states, targets = [], [], []
    for _ in range(n):
        statement = env.reset(seed=int(torch.randint(0, 2**31 - 1, (1,), generator=g)))
        mem = Memory(statement, _max_turns(env), max_cands)
        ctx = _Context.from_settings(statement, **context) if context else None
        for command in solver(env):
            keys, cand, s = mem.features()
            lines = [command_of(t, a) for t, a in keys]
            if command not in lines:
                raise ValueError(
                    f"the demonstration's command {command!r} is not among the {len(lines)} "
                    f"candidates at turn {mem.turn}; the candidate extraction misses it"
                )
            k = lines.index(command)
            cands.append(cand)
            states.append(s)
            targets.append(k)
            obs, _r, done, info = env.step(command)
            mem.update(obs, *keys[k], info)
            if done:
                break
            if ctx is not None:
                compacted = ctx.record(command, obs)
                if compacted is not None:
                    mem.restart(compacted)
                if ctx.overflow:
                    break
    C = max(len(c) for c in cands)
    cand, cmask = _pad_stack(cands, C)
    return {"cand": cand, "cand_mask": cmask, "state": torch.stack(states), "target": torch.tensor(targets)}


def behaviour_clone(
    policy,
    demos: dict,
    steps: int = 300,
    lr: float = 3e-3,
    smoothing: float = 0.1,
    batch_size: int = 256,
    generator: torch.Generator | None = None,
) -> list[float]:
    """Cross-entropy on the demonstrations' choices, with label smoothing ``smoothing`` spread uniformly
    over the valid candidates (it keeps every candidate's probability above zero, so RL can still try
    what the demonstrations never did). Returns the loss of each step."""
    check_int("steps", steps, 0)
    check_number("smoothing", smoothing, 0.0, 1.0)
    device = next(policy.parameters()).device
    opt = torch.optim.Adam([p for n, p in policy.named_parameters() if not n.startswith("critic")], lr=lr)
    N = len(demos["target"])
    losses = []
    for _ in range(steps):
        idx = torch.randint(0, N, (min(batch_size, N),), generator=generator)
        cand, cmask = demos["cand"][idx].to(device), demos["cand_mask"][idx].to(device)
        logp = F.log_softmax(policy.logits(cand, cmask, demos["state"][idx].to(device)), -1)  # (n, C)
        nll = -logp.gather(1, demos["target"][idx].to(device)[:, None]).squeeze(1)
        uniform = -(logp * cmask).sum(-1) / cmask.sum(-1)  # cross-entropy to uniform over valid candidates
        loss = ((1 - smoothing) * nll + smoothing * uniform).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses
