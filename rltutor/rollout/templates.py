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

from rltutor.utils import check_int, check_number

__all__ = [
    "TEMPLATES",
    "CAND_DIM",
    "STATE_DIM",
    "Memory",
    "TemplateCollector",
    "template_demos",
    "behaviour_clone",
    "command_of",
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


class TemplateCollector:
    """``num_tasks`` tasks x G episodes each, played in lockstep by a :class:`~rltutor.models.template_policy.
    TemplatePolicy`; one row per episode, one step per turn.

    Args:
        make_env: ``make_env() -> env`` (a ToolShell, or a :class:`~rltutor.guard.GuardedEnv` around one).
        num_tasks: tasks per batch; group_size: G, episodes per task (one group, one task seed).
        turn_cost: reward subtracted on every turn (the price of a tool call; see the module docstring).
        max_cands: C, the most candidates a turn offers (the most recently mentioned are kept).
    """

    def __init__(
        self, make_env: Callable, num_tasks: int = 4, group_size: int = 4, turn_cost: float = 0.0, max_cands: int = 64
    ):
        check_int("num_tasks", num_tasks, 1)
        check_int("group_size", group_size, 1)
        check_int("max_cands", max_cands, 2)
        self.turn_cost = check_number("turn_cost", turn_cost, 0.0, 1.0)
        self.num_tasks, self.group_size, self.max_cands = num_tasks, group_size, max_cands
        self.envs = [make_env() for _ in range(num_tasks * group_size)]

    def state_dict(self) -> dict:
        """Nothing to save: task seeds come from the trainer's generator."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        if state:
            raise ValueError(f"a TemplateCollector has no state, but the checkpoint holds {sorted(state)}")

    def evaluate(self, policy) -> dict:
        return {}

    @torch.no_grad()
    def collect(self, policy, generator: torch.Generator | None = None):
        device = next(policy.parameters()).device
        t0 = time.perf_counter()
        G = self.group_size
        seeds = torch.randint(0, 2**31 - 1, (self.num_tasks,), generator=generator).tolist()
        n = len(self.envs)
        mems = [
            Memory(env.reset(seed=seeds[i // G]), _max_turns(env), self.max_cands) for i, env in enumerate(self.envs)
        ]
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
                obs, reward, d, info = self.envs[i].step(command_of(t, a))
                steps[i].append(
                    {
                        "cand": feats[j][1],
                        "state": feats[j][2],
                        "action": idx[j],
                        "logp": logp[j],
                        "value": v[j],
                        "reward": float(reward) - self.turn_cost,
                    }
                )
                mems[i].update(obs, t, a, info)
                if d:
                    done[i] = True
                    cut[i] = (info.get("guard") or {}).get("action") == "end"
        t_sample = time.perf_counter() - t0
        batch = self._batch(steps, device)
        if not policy.has_critic:
            batch.pop("values")
        records = [dict(env.episode) for env in self.envs]
        returns = [sum(s["reward"] for s in st) for st in steps]
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
            "segments_per_episode": 1.0,
            "mean_turns": sum(len(st) for st in steps) / n,
            "sample_time": t_sample,
        }
        if all("hops" in r for r in records):
            metrics.update(_feasibility_metrics(records, [_max_turns(env) for env in self.envs]))
        info = {
            "episode_returns": returns,
            "episode_lengths": [len(st) for st in steps],
            "env_steps": sum(len(st) for st in steps),
            "metrics": metrics,
        }
        return batch, info

    def _batch(self, steps: list[list[dict]], device) -> dict:
        B, T = len(steps), max(len(st) for st in steps)
        C = max(len(s["cand"]) for st in steps for s in st)
        cand = torch.zeros(B, T, C, CAND_DIM)
        cmask = torch.zeros(B, T, C, dtype=torch.bool)
        cmask[:, :, 0] = True  # padded turns keep one valid candidate, so their (masked) log-probs stay finite
        state = torch.zeros(B, T, STATE_DIM)
        actions = torch.zeros(B, T, dtype=torch.long)
        logp, mask, rewards, values = (torch.zeros(B, T) for _ in range(4))
        for b, st in enumerate(steps):
            for t, s in enumerate(st):
                k = len(s["cand"])
                cand[b, t, :k] = s["cand"]
                cmask[b, t, :k] = True
                state[b, t] = s["state"]
                actions[b, t], logp[b, t], values[b, t] = s["action"], s["logp"], s["value"]
                rewards[b, t], mask[b, t] = s["reward"], 1.0
        group_ids = torch.arange(B) // self.group_size
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
        return {k: v.to(device) for k, v in batch.items()}


# ----------------------------------------------------------------------------------------------
# The warm start: behaviour cloning of the scripted honest solver
# ----------------------------------------------------------------------------------------------


def template_demos(make_env: Callable, solver: Callable, n: int, seed: int = 0, max_cands: int = 64) -> dict:
    """``n`` episodes of ``solver(env) -> commands`` (the honest scripted solver) on fresh tasks, as
    turns: ``cand`` (N, C, F), ``cand_mask`` (N, C), ``state`` (N, S), ``target`` (N,) the index of the
    solver's command among the candidates. Raises if a solver command is not a candidate."""
    env = make_env()
    g = torch.Generator().manual_seed(seed)
    cands, states, targets = [], [], []
    for _ in range(n):
        statement = env.reset(seed=int(torch.randint(0, 2**31 - 1, (1,), generator=g)))
        mem = Memory(statement, _max_turns(env), max_cands)
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
