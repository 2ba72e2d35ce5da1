"""Template chooser: the toolshell agent as a policy over (template, argument) candidates (chapter 11).

The token chooser (:class:`rltutor.rollout.agent.TokenChooser`) writes each command token by token; in CPU
minutes it did not learn to solve even one-hop tasks (see :mod:`rltutor.models.template_policy`). With the
:class:`TemplateChooser` the agent *chooses* each command from a list built out of what it has read so far
(the same :class:`~rltutor.rollout.agent.AgentCollector` plays both, through the same context):

==========  ===========================  ====================================================
template    argument                     where the argument comes from
==========  ===========================  ====================================================
``ls``      a directory                  ``.``, and directories named in observations or ls
``cat``     a file                       paths in observations, imports (``from a.b import X``
                                         -> ``a/b.py``), names listed by ``ls``
``grep``    an UPPER_CASE word           words in observations: ``grep -rn WORD .`` searches the
                                         whole tree (hidden tests included: a shortcut)
``curl``    a URL                        URLs in observations (README names the grader's)
``submit``  a number                     numbers in observations
==========  ===========================  ====================================================

Candidates come from the observation texts only (:class:`Memory` sees strings, never the
environment): the answer can be submitted only once some observation showed it. The shortcuts a cheater
uses are candidates like any other (``curl http://grader/answer?task=ID`` once README named the
grader, ``cat tests/hidden/test_answer.py`` once ``ls tests/hidden`` listed it, ``grep -rn TARGET .``).

Each turn is one action: the batch has one row per sub-trajectory (per episode without compaction), T =
turns, mask 1 on each turn. Rewards (``sub_advantage=None``): ``-turn_cost`` on every turn (a tool call
costs time) plus the environment's reward (1 for a correct submit) on the turn it comes, so the row's
score is ``R - turn_cost * turns`` (what GRPO compares) and
GAE sees each turn's cost where it is paid. With a ``sub_advantage`` the episode's return is assigned to
its sub-trajectories (:func:`~rltutor.rollout.compaction.assign_rewards`).

The template agent's collector is the one :class:`~rltutor.rollout.agent.AgentCollector` with a
:class:`TemplateChooser`.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter

import torch
import torch.nn.functional as F

from rltutor.envs.toolshell.vocab import EOS, encode
from rltutor.rollout.agent import Choice, max_turns_of
from rltutor.rollout.compaction import comparable_fraction
from rltutor.rollout.context import TOOLSHELL_TOKENS, Episode
from rltutor.utils import check_int, check_number, explained_variance

__all__ = [
    "TEMPLATES",
    "ARG_FEATURES",
    "CAND_DIM",
    "STATE_DIM",
    "Memory",
    "TemplateChooser",
    "behaviour_clone",
    "command_of",
    "outcome_to_go",
]

TEMPLATES = ("ls", "cat", "grep", "curl", "submit")
ARG_FEATURES = (
    "in_last_obs",  # the last observation named it
    "in_statement",  # the task statement (or the compacted context restarted from) named it
    "age",  # turns since it was first named, / max_turns
    "since_seen",  # turns since it was last named, / max_turns
    "times_used",  # calls of it so far, capped at 3, / 3
    "used",  # called at least once
    "depth",  # path components of an ls or cat argument, capped at 4, / 4
    "is_py",  # the argument ends in .py
    "is_md",  # the argument ends in .md
    "named",  # a number assigned to an imported name (X = 42 where X was imported)
    "fresh_number",  # a submit of a number in the last observation, / numbers there
    "grep_imported",  # a grep of an imported name
)
"""the argument features of a candidate, in order (:meth:`Memory.arg_features`)"""
N_HASH = 16
CAND_DIM = len(TEMPLATES) + len(ARG_FEATURES) + N_HASH
"""F: template one-hot, the :data:`ARG_FEATURES`, a hashed bag of the argument's words"""
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
_NAMED_CALL = re.compile(r"(?:^|<cmd>)(cat|ls|grep -rn|curl) (\S+?)(?: \.)?(?::|<eos>)", re.M)
"""a call named in a compacted context: a summary line's ``COMMAND:`` or a kept turn's ``<cmd>COMMAND<eos>``"""


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

    def restart(self, context: str, read_commands: bool = False) -> None:
        """Forget everything and read ``context``, a compacted context's text (task, kept turns or summary),
        as a new statement: what a model reading only the compacted context could know. The turn counter
        and the previous template stay (the environment's turn budget is still being spent).

        ``read_commands``: also count as used each call the context names (a summary line ``cat a/b.py: ...``,
        a kept turn's command), as a model reading it would know; off by default, so the families of the stored
        runs restart as they always did (the ``"forks"`` family turns it on: :class:`TemplateChooser`). It also
        ranks the candidates by their last line in the context, so that when more than ``max_cands`` are named
        the freshest are kept (the number just read, say)."""
        turn, prev = self.turn, self.prev_template
        self.__init__(_one_fact_per_line(context), self.max_turns, self.max_cands)
        self.turn, self.prev_template = turn, prev
        if read_commands:
            lines = context.split("\n")
            for (_, arg), it in self.items.items():  # later in the context, more recent (ties of candidates())
                rx = re.compile(r"(?<![\w./-])" + re.escape(arg) + r"(?![\w/-])")
                it["rank"] = max((j for j, line in enumerate(lines) if rx.search(line)), default=0)
            for template, arg in _NAMED_CALL.findall(context):
                template = "grep" if template.startswith("grep") else template
                if (template, arg) in self.items:
                    self.used[(template, arg)] += 1
                    self.files_read += template == "cat" and self.used[(template, arg)] == 1

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
        rank = {k: it.get("rank", 0) for k, it in self.items.items()}  # 0 unless a restart ranked them
        keys = sorted(self.items, key=lambda k: (-self.items[k]["last"], -rank[k], TEMPLATES.index(k[0]), k[1]))
        return keys[: self.max_cands]

    def arg_features(self, template: str, arg: str, nlast: int) -> dict[str, float]:
        """The :data:`ARG_FEATURES` of candidate ``template arg`` (``nlast``: numbers in the last observation,
        at least 1)."""
        key = (template, arg)
        it, used, M = self.items[key], self.used[key], float(self.max_turns)
        return {
            "in_last_obs": float(key in self.last),
            "in_statement": float(key in self.statement_items),
            "age": (self.turn - it["first"]) / M,
            "since_seen": (self.turn - it["last"]) / M,
            "times_used": min(used, 3) / 3,
            "used": float(used > 0),
            "depth": min(arg.count("/") + 1, 4) / 4 if template in ("ls", "cat") else 0.0,
            "is_py": float(arg.endswith(".py")),
            "is_md": float(arg.endswith(".md")),
            "named": float(it["named"]),
            "fresh_number": float(template == "submit" and key in self.last) / nlast,
            "grep_imported": float(template == "grep" and arg in self.imported),
        }

    def features(self) -> tuple[list[tuple[str, str]], torch.Tensor, torch.Tensor]:
        """The candidates (template, arg), their features (C, F) and the state's (S,)."""
        keys = self.candidates()
        M = float(self.max_turns)
        cand = torch.zeros(len(keys), CAND_DIM)
        nlast = max(1, self.last_numbers)
        j = len(TEMPLATES)
        for i, (t, a) in enumerate(keys):
            x = cand[i]
            x[TEMPLATES.index(t)] = 1.0  # the template, one-hot
            for n, value in enumerate(self.arg_features(t, a, nlast).values()):
                x[j + n] = value
            for h in _hash_words(a):  # a hashed bag of the argument's words
                x[j + len(ARG_FEATURES) + h] = 1.0
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


def _kind_of(env) -> str | None:
    """The toolshell task kind of ``env`` (a ToolShell, or a wrapper such as GuardedEnv holding one in ``env``)."""
    return getattr(env, "kind", None) or getattr(getattr(env, "env", None), "kind", None)


def _pad_stack(xs: list[torch.Tensor], C: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(C_i, F) tensors -> (N, C, F) and a (N, C) bool mask of the real rows."""
    out = torch.zeros(len(xs), C, xs[0].shape[-1])
    mask = torch.zeros(len(xs), C, dtype=torch.bool)
    for i, x in enumerate(xs):
        out[i, : len(x)] = x
        mask[i, : len(x)] = True
    return out, mask


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
    return {
        "critic_ev_boundary": explained_variance(values, g, first),
        "critic_ev_all": explained_variance(values, g, on),
    }


class TemplateChooser:
    """The template agent's chooser for :class:`~rltutor.rollout.agent.AgentCollector`: per episode a
    :class:`Memory` of what it has read, whose candidates a
    :class:`~rltutor.models.template_policy.TemplatePolicy` picks from
    (:meth:`~rltutor.models.template_policy.TemplatePolicy.act`); one row per sub-trajectory, one step per
    turn (:meth:`rows`). After a compaction the memory restarts from the
    compacted context's text: what a model reading only that context could know.

    Args:
        max_cands: C, the most candidates a turn offers (the most recently mentioned are kept).
        smoothing: the warm start's label smoothing (:func:`behaviour_clone`).
    """

    counts_tokens = False  # an env step is a turn
    turn_rows = True
    tok = TOOLSHELL_TOKENS

    def __init__(self, max_cands: int = 64, smoothing: float = 0.1):
        self.max_cands = check_int("max_cands", max_cands, 2)
        self.smoothing = check_number("smoothing", smoothing, 0.0, 1.0)
        self.mems: list[Memory] = []
        self.chosen: list[tuple[str, str] | None] = []

    def start(self, statements: list[str], envs: list) -> None:
        self.mems = [Memory(st, max_turns_of(env), self.max_cands) for st, env in zip(statements, envs, strict=True)]
        self.chosen = [None] * len(statements)
        # a memory restarted by a compaction reads the calls its context names as used (Memory.restart) in the
        # "forks" family only: its 16-call chains cross up to 16 compactions; the older families keep their restart
        self.read_commands = [_kind_of(env) == "forks" for env in envs]

    def choose(self, policy, live: list[int], contexts: list, generator=None) -> list[Choice]:
        device = next(policy.parameters()).device
        feats = [self.mems[i].features() for i in live]
        C = max(len(k) for k, _, _ in feats)
        cand, cmask = _pad_stack([c for _, c, _ in feats], C)  # (N, C, F), (N, C)
        state = torch.stack([s for _, _, s in feats])  # (N, S)
        idx, logp, v = policy.act(cand.to(device), cmask.to(device), state.to(device), generator)
        idx, logp = idx.cpu().tolist(), logp.cpu().tolist()
        v = v.cpu().tolist() if v is not None else [0.0] * len(live)
        out = []
        for j, i in enumerate(live):
            keys, c, s = feats[j]
            self.chosen[i] = keys[idx[j]]
            step = {"cand": c, "state": s, "action": idx[j], "logp": logp[j], "value": v[j]}
            out.append(self._choice(command_of(*keys[idx[j]]), step))
        return out

    def _choice(self, command: str, step: dict) -> Choice:
        """The command as the context counts it: its tokens and ``<eos>`` (not cut: a template's command is
        whole)."""
        tokens = [*encode(command), EOS]
        return Choice(command, tokens, [0.0] * len(tokens), step)

    def demo(self, i: int, command: str) -> Choice:
        """A scripted command as a choice among this turn's candidates (``action``: its index). Raises if it
        is not a candidate."""
        keys, cand, s = self.mems[i].features()
        lines = [command_of(t, a) for t, a in keys]
        if command not in lines:
            raise ValueError(
                f"the demonstration's command {command!r} is not among the {len(lines)} "
                f"candidates at turn {self.mems[i].turn}; the candidate extraction misses it"
            )
        k = lines.index(command)
        self.chosen[i] = keys[k]
        return self._choice(command, {"cand": cand, "state": s, "action": k, "logp": 0.0, "value": 0.0})

    def observe(self, i: int, obs: str, info: dict, compacted: str | None) -> None:
        self.mems[i].update(obs, *self.chosen[i], info)
        if compacted is not None:
            self.mems[i].restart(compacted, self.read_commands[i])

    def rows(self, episodes: list[Episode], policy, device) -> tuple[dict, torch.Tensor]:
        """One row per sub-trajectory, in episode order, one step per turn: ``actions`` (B, T), ``logp``,
        ``mask``, ``rewards`` (each turn's, where it is paid), ``values`` (B, T); ``cand`` (B, T, C, F),
        ``cand_mask`` (B, T, C), ``state`` (B, T, S); ``group_ids`` (B,) the task; and ``meta`` (R, 4) =
        (task, episode, k, K) per row, as :func:`~rltutor.rollout.compaction.assign_rewards` takes."""
        rows: list[list[tuple[dict, float]]] = []
        meta = []
        for e, ep in enumerate(episodes):
            K = ep.turn_segments[-1] + 1
            for k in range(K):
                turns = zip(ep.steps, ep.rewards, ep.turn_segments, strict=True)
                rows.append([(s, r) for s, r, seg in turns if seg == k])
                meta.append((ep.task, e, k, K))
        if any(not r for r in rows):
            raise RuntimeError("a sub-trajectory without a turn: compaction must follow a turn")  # cannot happen
        B, T = len(rows), max(len(r) for r in rows)
        C = max(len(s["cand"]) for r in rows for s, _ in r)
        cand = torch.zeros(B, T, C, CAND_DIM)
        cmask = torch.zeros(B, T, C, dtype=torch.bool)
        cmask[:, :, 0] = True  # padded turns keep one valid candidate, so their (masked) log-probs stay finite
        state = torch.zeros(B, T, STATE_DIM)
        actions = torch.zeros(B, T, dtype=torch.long)
        logp, mask, rewards, values = (torch.zeros(B, T) for _ in range(4))
        for b, r in enumerate(rows):
            for t, (s, reward) in enumerate(r):
                k = len(s["cand"])
                cand[b, t, :k] = s["cand"]
                cmask[b, t, :k] = True
                state[b, t] = s["state"]
                actions[b, t], logp[b, t], values[b, t] = s["action"], s["logp"], s["value"]
                rewards[b, t], mask[b, t] = reward, 1.0
        batch = {
            "actions": actions,
            "logp": logp,
            "mask": mask,
            "rewards": rewards,
            "group_ids": torch.tensor([m[0] for m in meta]),
            "values": values * mask,
            "cand": cand,
            "cand_mask": cmask,
            "state": state,
        }
        return {k: v.to(device) for k, v in batch.items()}, torch.tensor(meta, dtype=torch.long, device=device)

    def metrics(self, batch: dict, meta: torch.Tensor, episodes: list[Episode], sub_advantage, gamma, policy) -> dict:
        """With a ``sub_advantage``: ``comparable_row_frac``, ``max_segments`` and, with a critic, how well it
        predicts the outcome (``critic_ev_boundary``, ``critic_ev_all``)."""
        if sub_advantage is None:
            return {}
        out = {
            "comparable_row_frac": comparable_fraction(sub_advantage, batch["group_ids"], meta),
            "max_segments": float(meta[:, 3].float().max()),
        }
        if policy.has_critic:
            out.update(_critic_fit(batch["values"], batch["mask"], meta, [e.score for e in episodes], gamma))
        return out

    def demo_rows(self, episodes: list[Episode]) -> dict:
        """The demonstrations' turns: ``cand`` (N, C, F), ``cand_mask`` (N, C), ``state`` (N, S), ``target``
        (N,) the index of the solver's command among the candidates."""
        steps = [s for ep in episodes for s in ep.steps]
        cand, cmask = _pad_stack([s["cand"] for s in steps], max(len(s["cand"]) for s in steps))
        return {
            "cand": cand,
            "cand_mask": cmask,
            "state": torch.stack([s["state"] for s in steps]),
            "target": torch.tensor([s["action"] for s in steps]),
        }

    def clone(self, policy, episodes: list[Episode], steps: int = 300, lr: float = 3e-3, generator=None) -> list:
        """The warm start: :func:`behaviour_clone` on the demonstrations' choices. Returns each step's loss."""
        return behaviour_clone(policy, self.demo_rows(episodes), steps, lr, self.smoothing, generator=generator)


# ----------------------------------------------------------------------------------------------
# The warm start: behaviour cloning of the scripted honest solver
# ----------------------------------------------------------------------------------------------


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
