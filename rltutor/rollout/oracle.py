"""The simulator's oracle: V(s) from Monte-Carlo rollouts of the current policy, the ceiling of any critic.

Chapter 11 (credit). A learned critic guesses V(s) = E[return-to-go | s] from features; the simulator can
*measure* it: copy the episode's state (the environment, the context and the chooser's memory) ``n`` times,
play each copy to its end with the policy, and average the returns-to-go. No critic can do better than the
true V of the policy it serves, so an arm whose boundary values come from here (``ppo_oracle_bootstrap``,
:mod:`rltutor.rollout.compaction`) is the upper bound of what a critic could give the bootstrap.

* :class:`Snapshot` -- one episode's state between two calls (deep copies, so rolling out changes nothing);
* :func:`mc_value` -- V at a snapshot from ``n`` rollouts, with its standard error; :func:`exact_value`
  enumerates every candidate on a tiny chain instead (exponential: tests only);
* :class:`MCBoundaryValue` -- the collector's hook (``AgentCollector(boundary_value=...)``): at every compaction
  boundary, the MC value of the state the next sub-trajectory starts from;
* :func:`oracle_boundary_values` -- play a batch and list the MC value at every boundary (the lab's
  measurement of how far a critic is from it).

The template chooser only (:class:`~rltutor.rollout.templates.TemplateChooser`): its memory is what a snapshot
copies besides the environment and the context. Rollouts are played in lockstep, as the collector plays.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pandas as pd
import torch

from rltutor.envs.toolshell import ToolShell
from rltutor.rollout.context import Context, ContextSpec
from rltutor.rollout.templates import TemplateChooser, command_of
from rltutor.utils import check_int, check_number

__all__ = [
    "Snapshot",
    "return_to_go",
    "play_on",
    "mc_value",
    "exact_value",
    "MCBoundaryValue",
    "oracle_boundary_values",
]


class Snapshot:
    """One episode's state between two calls: the environment, the context and the chooser's memory (deep
    copies, so rolling out from it changes nothing), and how many turns it has played (``t0``)."""

    def __init__(self, env, ctx: Context, mem, read_commands: bool, max_cands: int = 64):
        self.env, self.ctx, self.mem = copy.deepcopy(env), copy.deepcopy(ctx), copy.deepcopy(mem)
        self.read_commands, self.max_cands = read_commands, max_cands
        self.t0 = len(ctx.episode.rewards)

    @classmethod
    def of(cls, env, ctx: Context, chooser: TemplateChooser, i: int) -> Snapshot:
        """The snapshot of episode ``i`` of ``chooser``'s batch, played in ``env`` with context ``ctx``."""
        if not hasattr(chooser, "mems"):
            raise ValueError(
                f"the oracle copies a template chooser's memory; a {type(chooser).__name__} has none "
                "(use agent_policy='templates')"
            )
        return cls(env, ctx, chooser.mems[i], chooser.read_commands[i], chooser.max_cands)

    def copies(self, n: int) -> tuple[list, list[Context], TemplateChooser]:
        """``n`` independent copies: (envs, contexts, a chooser holding their memories)."""
        envs = [copy.deepcopy(self.env) for _ in range(n)]
        ctxs = [copy.deepcopy(self.ctx) for _ in range(n)]
        ch = TemplateChooser(max_cands=self.max_cands)
        ch.mems = [copy.deepcopy(self.mem) for _ in range(n)]
        ch.chosen, ch.read_commands = [None] * n, [self.read_commands] * n
        return envs, ctxs, ch


def return_to_go(rewards: list[float], t0: int, gamma: float) -> float:
    """sum_{t >= t0} gamma^(t - t0) r_t: the discounted return from turn t0 on."""
    return sum(gamma ** (t - t0) * r for t, r in enumerate(rewards) if t >= t0)


@torch.no_grad()
def play_on(policy, envs, ctxs, ch, turn_cost: float, generator=None, on_boundary=None) -> None:
    """Play every episode to its end, in lockstep (as AgentCollector.run_episodes does); ``on_boundary(i)``
    after each compaction, before the next call."""
    while True:
        live = [i for i, c in enumerate(ctxs) if not c.episode.done]
        if not live:
            return
        for i, choice in zip(live, ch.choose(policy, live, [ctxs[i] for i in live], generator), strict=True):
            obs, reward, done, info = envs[i].step(choice.text)
            ep = ctxs[i].episode
            ep.steps.append(choice.step)
            compacted = ctxs[i].add_turn(choice.tokens, choice.logp, obs, reward, done, turn_cost)
            ch.observe(i, obs, info, compacted)
            if compacted is not None and on_boundary is not None:
                on_boundary(i)


def mc_value(
    policy, snap: Snapshot, n: int = 64, gamma: float = 1.0, turn_cost: float = 0.0, generator=None
) -> tuple[float, float]:
    """V(s) at ``snap`` under ``policy``: the mean discounted return-to-go of ``n`` rollouts from copies of the
    snapshot, and its standard error. An episode already over is worth 0."""
    check_int("n", n, 1)
    if snap.ctx.episode.done:
        return 0.0, 0.0
    envs, ctxs, ch = snap.copies(n)
    play_on(policy, envs, ctxs, ch, turn_cost, generator)
    g = np.array([return_to_go(c.episode.rewards, snap.t0, gamma) for c in ctxs])
    return float(g.mean()), float(g.std(ddof=1) / math.sqrt(n)) if n > 1 else 0.0


@torch.no_grad()
def exact_value(policy, snap: Snapshot, gamma: float = 1.0, turn_cost: float = 0.0, max_leaves: int = 20000) -> float:
    """V(s) at ``snap`` by enumerating every candidate the policy could pick, weighted by its probability (the
    softmax the policy samples from): exact, and exponential in the turns left, so for tiny chains only
    (more than ``max_leaves`` episodes is an error)."""
    leaves = [0]

    def value(env, ctx, mem) -> float:
        if ctx.episode.done:
            leaves[0] += 1
            if leaves[0] > max_leaves:
                raise ValueError(f"more than {max_leaves} episodes to enumerate; use a shorter chain or mc_value")
            return 0.0
        keys, cand, state = mem.features()
        logp = torch.log_softmax(policy.logits(cand[None], torch.ones(1, len(keys), dtype=torch.bool), state[None]), -1)
        total = 0.0
        for j, key in enumerate(keys):
            pj = float(logp[0, j].exp())
            if pj < 1e-12:
                continue
            e, c, m = copy.deepcopy(env), copy.deepcopy(ctx), copy.deepcopy(mem)
            ch = TemplateChooser(max_cands=snap.max_cands)
            ch.mems, ch.chosen, ch.read_commands = [m], [None], [snap.read_commands]
            choice = ch.demo(0, command_of(*key))
            obs, reward, done, info = e.step(choice.text)
            compacted = c.add_turn(choice.tokens, choice.logp, obs, reward, done, turn_cost)
            ch.observe(0, obs, info, compacted)
            total += pj * ((float(reward) - turn_cost) + gamma * value(e, c, ch.mems[0]))
        return total

    return value(snap.env, snap.ctx, snap.mem)


class MCBoundaryValue:
    """The collector's ``boundary_value`` hook: at a compaction boundary of episode ``i``, the oracle's V of the
    state its next sub-trajectory starts from, :func:`mc_value` over ``n`` rollouts of the collecting policy.

    Its rollouts draw from their own generator (seeded with ``seed``), so the batch's own episodes are the
    ones a critic arm of the same seed would play. ``values`` keeps every value returned, ``se`` their
    standard errors (what the lab reports of the oracle's noise)."""

    def __init__(self, n: int = 16, gamma: float = 1.0, turn_cost: float = 0.0, seed: int = 0):
        self.n = check_int("n", n, 1)
        self.gamma = check_number("gamma", gamma, 0.0, 1.0)
        self.turn_cost = check_number("turn_cost", turn_cost, 0.0, 1.0)
        self.generator = torch.Generator().manual_seed(int(seed))
        self.values: list[float] = []
        self.se: list[float] = []

    def __call__(self, policy, env, ctx: Context, chooser, i: int) -> float:
        v, se = mc_value(policy, Snapshot.of(env, ctx, chooser, i), self.n, self.gamma, self.turn_cost, self.generator)
        self.values.append(v)
        self.se.append(se)
        return v


def _start(knobs: dict, seeds: list[int], G: int, spec: ContextSpec):
    """Fresh episodes: G per task seed, their contexts and a chooser (as AgentCollector starts them)."""
    envs = [ToolShell(**knobs) for _ in range(len(seeds) * G)]
    statements = [env.reset(seed=seeds[i // G]) for i, env in enumerate(envs)]
    ch = TemplateChooser()
    ctxs = [Context(st, spec, i // G, ch.tok) for i, st in enumerate(statements)]
    ch.start(statements, envs)
    return envs, ctxs, ch


def oracle_boundary_values(
    policy,
    knobs: dict,
    spec: ContextSpec,
    seeds: list[int],
    G: int = 8,
    n: int = 32,
    gamma: float = 1.0,
    turn_cost: float = 0.0,
    generator=None,
) -> pd.DataFrame:
    """Play G episodes per task seed; at every compaction boundary take a :class:`Snapshot` and its oracle
    value :func:`mc_value` (``n`` rollouts). One row per boundary: ``episode``, ``k`` (the sub-trajectory that
    starts there), ``turn``, ``v_mc``, ``v_se`` and ``to_go`` (the return-to-go the played episode got)."""
    envs, ctxs, ch = _start(knobs, seeds, G, spec)
    snaps: list[tuple[int, int, Snapshot]] = []

    def on_boundary(i):
        snaps.append((i, ctxs[i].k, Snapshot.of(envs[i], ctxs[i], ch, i)))

    play_on(policy, envs, ctxs, ch, turn_cost, generator, on_boundary)
    rows = []
    for i, k, s in snaps:
        v, se = mc_value(policy, s, n, gamma, turn_cost, generator)
        rows.append(
            {
                "episode": i,
                "k": k,
                "turn": s.t0,
                "v_mc": v,
                "v_se": se,
                "to_go": return_to_go(ctxs[i].episode.rewards, s.t0, gamma),
            }
        )
    return pd.DataFrame(rows, columns=["episode", "k", "turn", "v_mc", "v_se", "to_go"])
