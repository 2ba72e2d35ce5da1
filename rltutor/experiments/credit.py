"""Lab of chapter 11 (credit): where a few calls decide a long, compacted episode, who gets the credit?

The task family is ``"forks"`` (:mod:`rltutor.envs.toolshell.forks`): a chain of 14 files whose honest solve
takes 16 calls of a budget of 24, with three one-way forks (at the 3rd, 7th and 12th call) where opening the
``tmp/`` branch dooms the episode for good; every other call is forced or a detour. The agent is the template
policy, cloned from the scripted honest solver, then trained by the one trainer with ``turn_cost = 0`` (the
only reward is a correct submit). The context budget per K (:data:`SETTINGS`,
:data:`~rltutor.envs.toolshell.forks.FORKS_BUDGETS`, ``"summary"`` compaction) splits an honest solve into K
in {1, 4, 16} sub-trajectories; a doomed episode that submits the dead end's number early has fewer, one that
wanders more, so K is uneven within a group.

Pieces, each a function:

* :func:`perfect_credit_gain` -- what a perfect per-call credit assignment gains over a broadcast one on this
  structure (below), from the fork success rates; :func:`credit_structure` measures those rates and the
  per-call score norms at a policy and returns the gain there.
* :func:`mc_value` -- the oracle: V(s) at a snapshot of (environment, context, memory) from ``n`` Monte-Carlo
  rollouts of the current policy in the simulator (each a deep copy); :func:`exact_value` enumerates every
  candidate on a tiny chain (tests/test_credit.py checks one against the other); :func:`oracle_boundary_values`
  plays a batch and returns the MC value at every compaction boundary (what an ``oracle`` arm's bootstrap would
  read).
* :func:`warm_critic` -- the critic fitted on rollouts of the cloned policy until its explained variance at the
  boundaries exceeds 0.5, or what it reaches within a fixed budget.
* :func:`run_credit` / :func:`credit_curves` -- the runs (arm x K x seed) through the run store, and
  :func:`slope_verdicts` -- the pre-stated slope test through :mod:`rltutor.experiments.stats`.
* ``python -m rltutor.experiments.credit --pilot --out rltutor/data/agents/credit_pilot.csv`` -- the pilot.

What perfect credit would gain (the structure)
----------------------------------------------
Write the outcome R = X_1 X_2 X_3 C: X_j = 1 when fork j is taken live (probability p_j at the policy), C = 1
when an episode that kept every fork live submits the answer (c). The true advantage of a call,
A_t = Q(s_t, a_t) - V(s_t), is zero on a forced call or a detour; at fork j, reached with r_j = p_1...p_{j-1},
it is q_j (X_j - p_j) with q_j = p_{j+1}...p_3 c; at the submit, (C - c). These are the increments of the
martingale E[R | first t calls], so their variances add up to Var R = P (1 - P), P = p_1 p_2 p_3 c. A broadcast
advantage (R - b, b = P: the best a group baseline does) puts the whole Var R on *each* of the N calls. With a
per-call score norm s_t^2 = E|grad log pi(a_t | s_t)|^2, the policy gradient's noise is about
sum_t s_t^2 Var R under broadcast and sum_{decisive t} s_t^2 E[A_t^2] under perfect credit (same mean), so

    rho = sum_t s_t^2 Var R / sum_j s_j^2 E[A_j^2]        (= N when all s_t are equal)

is the factor by which perfect credit cuts the gradient's variance (the episodes a broadcast arm needs per
update to match it), and 1 / rho is the share of a broadcast row's advantage variance that is per-call signal.
Compaction does not enter: splitting an episode into K rows changes neither A_t nor R - b. What K can change
is what a *critic* sees at the boundaries (a restarted memory, a summary), which is what the slope test asks.

Pre-registration (dated; the test is fixed before its runs)
-----------------------------------------------------------
* 2026-12-01, before any counted run (pilot only). Metric: per run, the mean ``episode_return`` (= the solve
  rate, turn_cost 0) of the last 5 updates. Contrast, per critic-free arm X in {broadcast_grpo, slime_split,
  full_outcome_batch_group}: D_X(K) = J(ppo_gae_across, K) - J(X, K); the test is the least-squares slope of
  D_X over log4 K in {0, 1, 2} (weights (-1, 0, +1) / 2 per unit of log4 K), paired by seed (every arm of a
  seed starts from one warm start), Holm-corrected over the three, by :func:`slope_verdicts`.
  delta = 0.05 return per unit of log4 K (0.10 from K = 1 to K = 16). Why: by the structure above perfect
  credit cuts the gradient variance by rho, N = 16 for equal score norms (:func:`perfect_credit_gain`; the
  pilot's :func:`credit_structure` measures rho at the cloned policy), at every K alike. The slope asks
  whether compaction erodes what a critic recovers of that; a loss of 0.10 solve rate over the K range is one
  episode in ten, about what one fork at p = 0.9 costs, the smallest change that would alter what the chapter
  recommends. n from the pilot's sd by :func:`rltutor.experiments.stats.seeds_for_power` (at least 12 unless
  it says fewer suffice), within the budget of about 6 CPU-hours.
* 2026-12-01, the pilot (``rltutor/data/agents/credit_pilot.*``, never counted; its command in
  ``credit_pilot.command``): stopped by its 20-minute limit after 5 ppo_bootstrap runs of 3 updates (a shared
  2-core EPYC at load ~10: about 8-12 s per update, 65-85 s per uncached warm start). Rows per episode from the
  cloned policy: always 1 at K = 1; 1-9 (mostly 1, 2 or 4) at K = 4; 4-24 (mostly 16-17) at K = 16; within a
  group the spread (max - min) averages 5 rows at K = 4 and 11 at K = 16. Fork success 0.80-0.97 per fork, 19-28%
  of episodes doomed, solve rate 0.42-0.59; rho = N = 14-15 calls (equal score norms). The warm critic reached a
  boundary explained variance of 0.05 (K = 4) and 0.16 (K = 16), 0.14 over all turns at K = 1, in 8 batches:
  far from 0.5 (its inputs, the state and the mean candidate, do not show a doom). ppo_bootstrap with a fresh
  critic lost solve rate in 3 updates at K = 4 and 16 (0.53 -> 0.19, 0.34 -> 0.09; seed 1 at K = 4:
  0.56 -> 0.28), not clearly at K = 1 (0.41 -> 0.28 and 0.34 -> 0.47). No broadcast_grpo run of the pilot
  finished; two check runs on drafts of the family (seed 0, before its dead ends moved to ``tmp/``) climbed
  from 0.47 to 0.81 at K = 1 in 3 updates and from 0.72 to 0.84 at K = 16 in 2: the cloned policy likely can
  learn this family, and a cold critic is the suspect; the counted runs must show it.
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import sys
import time

import numpy as np
import pandas as pd
import torch

from rltutor.config import TEMPLATE_TASKS, resolve
from rltutor.envs.toolshell import ToolShell
from rltutor.envs.toolshell.forks import FORKS_BUDGETS
from rltutor.experiments.runs import RunStore, run_all, store_records, trained_frame
from rltutor.experiments.stats import paired_row, seeds_for_power, verdict_table
from rltutor.rollout.compaction import SUB_ADVANTAGE_MODES
from rltutor.rollout.context import Context, ContextSpec
from rltutor.rollout.templates import TemplateChooser, command_of, outcome_to_go
from rltutor.train import Trainer
from rltutor.utils import check_int, explained_variance

__all__ = [
    "ARMS",
    "CRITIC_FREE",
    "SETTINGS",
    "Snapshot",
    "perfect_credit_gain",
    "credit_structure",
    "mc_value",
    "exact_value",
    "oracle_boundary_values",
    "warm_critic",
    "k_distribution",
    "run_credit",
    "credit_curves",
    "slope_verdicts",
    "seeds_needed",
    "pilot",
    "main",
]

ARMS = (
    "ppo_gae_across",
    "ppo_bootstrap",
    "ppo_per_segment",
    "broadcast_grpo",
    "slime_split",
    "full_outcome_batch_group",
)
"""The main test's arms, registered sub-advantage modes by name (rltutor.rollout.compaction); the ``oracle``
arm (ppo_bootstrap with V from :func:`oracle_boundary_values`) needs the trainer to take those values."""
CRITIC_FREE = ("broadcast_grpo", "slime_split", "full_outcome_batch_group")
"""The arms the slope test compares ppo_gae_across with."""
ACROSS = "ppo_gae_across"
SETTINGS = {K: {"context_budget": b, "compaction": "summary"} for K, b in FORKS_BUDGETS.items()}
"""K -> the settings that give K sub-trajectories per honest solve (rltutor.envs.toolshell.forks.FORKS_BUDGETS)."""
COMMON = {"turn_cost": 0.0, "row_weight": True}
"""Every arm's settings besides its mode's: only a correct submit pays, and every episode counts once in the
loss however many rows it split into (``row_weight``, as slime's per-rollout reducer; issue 22)."""
COLUMNS = (
    "update",
    "episode_return",
    "solve_rate",
    "mean_turns",
    "segments_per_episode",
    "max_segments",
    "timeout_rate",
    "critic_ev_boundary",
    "critic_ev_all",
    "explained_variance",
    "grad_norm",
    "approx_kl",
    "entropy",
    "time_s",
)


# ----------------------------------------------------------------------------------------------
# What perfect credit would gain
# ----------------------------------------------------------------------------------------------


def perfect_credit_gain(p_forks, c: float, n_calls: float, score=None) -> dict:
    """The gradient-variance factor rho of perfect per-call credit over broadcast (module docstring).

    Args:
        p_forks: p_j, the probability that fork j is taken live (given the earlier ones were), in order.
        c: the probability that an episode that kept every fork live submits the answer.
        n_calls: N, calls per episode.
        score: optional dict of per-call squared score norms: ``{"all": sum_t s_t^2 over an episode's calls,
            "forks": [s_j^2 per fork], "submit": s^2 of the submit}``; None: all equal (then rho = N).

    Returns ``var_R``, the per-decisive-call ``E_A2`` (forks then submit; they sum to var_R), ``rho`` and
    ``signal_share`` = 1 / rho."""
    p = [float(x) for x in p_forks]
    if not p or any(not 0.0 <= x <= 1.0 for x in p) or not 0.0 <= c <= 1.0:
        raise ValueError(f"p_forks and c must be probabilities, got p_forks={p_forks!r}, c={c!r}")
    if not n_calls >= 1:
        raise ValueError(f"n_calls must be >= 1 (calls per episode), got {n_calls!r}")
    P = math.prod(p) * c
    var_R = P * (1 - P)
    e_a2 = []
    for j, pj in enumerate(p):
        r_j, q_j = math.prod(p[:j]), math.prod(p[j + 1 :]) * c
        e_a2.append(r_j * q_j * q_j * pj * (1 - pj))  # E[A_j^2] = r_j q_j^2 p_j (1 - p_j)
    e_a2.append(math.prod(p) * c * (1 - c))  # the submit: r (C - c)^2
    if score is None:
        s_all, s_dec = float(n_calls), [1.0] * len(e_a2)
    else:
        s_all, s_dec = float(score["all"]), [*score["forks"], score["submit"]]
    perfect = sum(s * a for s, a in zip(s_dec, e_a2, strict=True))
    rho = s_all * var_R / perfect if perfect > 0 else float("inf")
    return {"P": P, "var_R": var_R, "E_A2": e_a2, "rho": rho, "signal_share": 1 / rho if rho > 0 else float("nan")}


# ----------------------------------------------------------------------------------------------
# Snapshots, the Monte-Carlo oracle and the exact value
# ----------------------------------------------------------------------------------------------


class Snapshot:
    """One episode's state between two calls: the environment, the context and the chooser's memory (deep
    copies, so rolling out from it changes nothing), and how many turns it has played."""

    def __init__(self, env, ctx: Context, mem, read_commands: bool):
        self.env, self.ctx, self.mem = copy.deepcopy(env), copy.deepcopy(ctx), copy.deepcopy(mem)
        self.read_commands = read_commands
        self.t0 = len(ctx.episode.rewards)

    def copies(self, n: int) -> tuple[list, list[Context], TemplateChooser]:
        """``n`` independent copies: (envs, contexts, a chooser holding their memories)."""
        envs = [copy.deepcopy(self.env) for _ in range(n)]
        ctxs = [copy.deepcopy(self.ctx) for _ in range(n)]
        ch = TemplateChooser()
        ch.mems = [copy.deepcopy(self.mem) for _ in range(n)]
        ch.chosen, ch.read_commands = [None] * n, [self.read_commands] * n
        return envs, ctxs, ch


def _to_go(rewards: list[float], t0: int, gamma: float) -> float:
    """sum_{t >= t0} gamma^(t - t0) r_t: the discounted return from turn t0 on."""
    return sum(gamma ** (t - t0) * r for t, r in enumerate(rewards) if t >= t0)


@torch.no_grad()
def _play_on(policy, envs, ctxs, ch, turn_cost: float, generator=None, on_boundary=None) -> None:
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
    _play_on(policy, envs, ctxs, ch, turn_cost, generator)
    g = np.array([_to_go(c.episode.rewards, snap.t0, gamma) for c in ctxs])
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
            ch = TemplateChooser()
            ch.mems, ch.chosen, ch.read_commands = [m], [None], [snap.read_commands]
            choice = ch.demo(0, command_of(*key))
            obs, reward, done, info = e.step(choice.text)
            compacted = c.add_turn(choice.tokens, choice.logp, obs, reward, done, turn_cost)
            ch.observe(0, obs, info, compacted)
            total += pj * ((float(reward) - turn_cost) + gamma * value(e, c, ch.mems[0]))
        return total

    return value(snap.env, snap.ctx, snap.mem)


def _start(policy, knobs: dict, seeds: list[int], G: int, spec: ContextSpec):
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
    envs, ctxs, ch = _start(policy, knobs, seeds, G, spec)
    snaps: list[tuple[int, int, Snapshot]] = []

    def on_boundary(i):
        snaps.append((i, ctxs[i].k, Snapshot(envs[i], ctxs[i], ch.mems[i], ch.read_commands[i])))

    _play_on(policy, envs, ctxs, ch, turn_cost, generator, on_boundary)
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
                "to_go": _to_go(ctxs[i].episode.rewards, s.t0, gamma),
            }
        )
    return pd.DataFrame(rows, columns=["episode", "k", "turn", "v_mc", "v_se", "to_go"])


# ----------------------------------------------------------------------------------------------
# The cloned policy, its structure, its K, its warm critic
# ----------------------------------------------------------------------------------------------


def _config(algo: str, K: int, seed: int, **sets):
    if K not in SETTINGS:
        raise ValueError(f"K must be one of {sorted(SETTINGS)} (rltutor.envs.toolshell.forks.FORKS_BUDGETS), got {K!r}")
    base = {"agent_policy": "templates", "env_options": TEMPLATE_TASKS["forks"], "seed": seed, "total_steps": 10**9}
    return resolve(algo, "toolshell", sets={**base, **COMMON, **SETTINGS[K], **sets})


def _cloned(K: int, seed: int, critic: bool = True):
    """The warm-started (cloned) template policy of ``seed`` at K's settings, and its config."""
    from rltutor.build import build

    cfg = _config("ppo" if critic else "grpo", K, seed)
    policy, _ = build(cfg)
    return policy, cfg


def _collector(cfg, sub_advantage: str = "ppo_bootstrap"):
    from rltutor.rollout.agent import AgentCollector

    knobs = dict(cfg.env_options)
    return AgentCollector(
        lambda: ToolShell(**knobs),
        TemplateChooser(),
        num_tasks=cfg.num_groups,
        group_size=cfg.group_size,
        spec=cfg.context_spec(),
        sub_advantage=sub_advantage,
        gamma=cfg.gamma,
        turn_cost=cfg.turn_cost,
    )


def k_distribution(K: int, seed: int = 0, batches: int = 4) -> pd.DataFrame:
    """Rows per episode obtained at K's settings by the cloned policy: one row per episode (``batch``, ``task``,
    ``rows``, ``turns``, ``solved``, ``doomed``), so the spread within each group can be read."""
    policy, cfg = _cloned(K, seed)
    col = _collector(cfg)
    gen = torch.Generator().manual_seed(7919 * seed + K)
    out = []
    for b in range(batches):
        _, info = col.collect(policy, gen)
        meta = info["meta"]
        first = meta[:, 2] == 0
        for (task, _e, _k, k), env in zip(meta[first].tolist(), col.envs, strict=True):
            rec = env.episode
            out.append(
                {
                    "K_setting": K,
                    "batch": b,
                    "task": task,
                    "rows": k,
                    "turns": rec["turns"],
                    "solved": rec["solved"],
                    "doomed": rec.get("doomed", False),
                }
            )
    return pd.DataFrame(out)


def credit_structure(K: int = 1, seed: int = 0, batches: int = 4) -> dict:
    """The fork success rates p_j (given the earlier forks live), the completion rate c and the calls per
    episode N of the cloned policy at K's settings, and :func:`perfect_credit_gain` there with equal score norms
    (``rho``, ``signal_share``)."""
    policy, cfg = _cloned(K, seed)
    col = _collector(cfg)
    gen = torch.Generator().manual_seed(104729 * seed + K)
    reached, live = np.zeros(3), np.zeros(3)
    kept, solved, calls, solves = 0, 0, [], []
    for _ in range(batches):
        col.collect(policy, gen)
        for env in col.envs:
            ep = env.episode
            taken = ep["forks_taken"]
            for j, t in enumerate(taken):
                if t is not None and all(x == "live" for x in taken[:j]):
                    reached[j] += 1
                    live[j] += t == "live"
            if all(t == "live" for t in taken):
                kept += 1
                solved += ep["solved"]
            calls.append(ep["turns"])
            solves.append(ep["solved"])
    p = [float(live[j] / reached[j]) if reached[j] else 0.0 for j in range(3)]
    c = solved / kept if kept else 0.0
    gain = perfect_credit_gain(p, c, float(np.mean(calls)))
    return {
        "K": K,
        "p_fork1": p[0],
        "p_fork2": p[1],
        "p_fork3": p[2],
        "c": c,
        "n_calls": float(np.mean(calls)),
        "solve_rate": float(np.mean(solves)),
        "var_R": gain["var_R"],
        "rho": gain["rho"],
        "signal_share": gain["signal_share"],
    }


def warm_critic(
    K: int,
    seed: int = 0,
    target_ev: float = 0.5,
    max_batches: int = 24,
    steps_per_batch: int = 100,
    eval_batches: int = 4,
    lr: float = 3e-3,
) -> tuple[dict, float, float, pd.DataFrame]:
    """Fit the critic of the cloned policy of ``seed`` at K's settings on its own rollouts until its explained
    variance at the boundaries (first turn of each sub-trajectory after a compaction) on ``eval_batches``
    held-out batches exceeds ``target_ev``, or ``max_batches`` training batches are spent. The target is the
    discounted outcome-to-go (:func:`rltutor.rollout.templates.outcome_to_go`). Returns (the critic's
    state_dict, the boundary explained variance reached, the all-turn one, the history per batch). At K = 1
    there are no boundaries: the boundary value is NaN and the all-turn one is what the loop reads."""
    policy, cfg = _cloned(K, seed)
    col = _collector(cfg)
    gen = torch.Generator().manual_seed(15485863 * seed + K)
    gamma = cfg.gamma

    def target(b, i):
        return outcome_to_go(b["mask"], i["meta"], torch.tensor(i["episode_returns"]), gamma)

    held = [col.collect(policy, gen) for _ in range(eval_batches)]
    opt = torch.optim.Adam(policy.critic.parameters(), lr=lr)
    data, hist = [], []

    def evaluate():
        v, g, first, on = [], [], [], []
        for b, i in held:
            with torch.no_grad():
                v.append(policy.value(b["cand"], b["cand_mask"].bool(), b["state"]).flatten())
            g.append(target(b, i).flatten())
            steps = torch.arange(b["mask"].shape[1])
            first.append(((b["mask"] > 0) & (steps[None, :] == 0) & (i["meta"][:, 2:3] > 0)).flatten())
            on.append((b["mask"] > 0).flatten())
        v, g, first, on = (torch.cat(x) for x in (v, g, first, on))
        ev_b = explained_variance(v, g, first) if bool(first.any()) else float("nan")
        return float(ev_b), float(explained_variance(v, g, on))

    ev_b, ev_all = evaluate()
    hist.append({"batches": 0, "ev_boundary": ev_b, "ev_all": ev_all})
    for n in range(1, max_batches + 1):
        b, i = col.collect(policy, gen)
        data.append((b, target(b, i)))
        for s in range(steps_per_batch):
            bb, g = data[(s + n) % len(data)]
            v = policy.value(bb["cand"], bb["cand_mask"].bool(), bb["state"])
            loss = (((v - g) * bb["mask"]) ** 2).sum() / bb["mask"].sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        ev_b, ev_all = evaluate()
        hist.append({"batches": n, "ev_boundary": ev_b, "ev_all": ev_all})
        if (ev_b if not math.isnan(ev_b) else ev_all) > target_ev:
            break
    return policy.critic.state_dict(), ev_b, ev_all, pd.DataFrame(hist)


# ----------------------------------------------------------------------------------------------
# The runs and the test
# ----------------------------------------------------------------------------------------------


def run_credit(arm: str, K: int, seed: int = 0, updates: int = 30, **overrides) -> pd.DataFrame:
    """One run of ``arm`` (a registered sub-advantage mode, under the algorithm and settings it registered) at
    K's settings: ``updates`` updates of 4 tasks x 8 episodes; one row per update."""
    if arm not in SUB_ADVANTAGE_MODES:
        raise ValueError(f"unknown arm {arm!r}; registered sub-advantage modes: {', '.join(SUB_ADVANTAGE_MODES)}")
    mode = SUB_ADVANTAGE_MODES[arm]
    t0 = time.perf_counter()
    trainer = Trainer(_config(mode.algo, K, seed, sub_advantage=arm, **mode.requires, **overrides))
    t_build = time.perf_counter() - t0
    return trained_frame(trainer, updates, COLUMNS, arm=arm, K=K, seed=seed, build_s=t_build)


def _run(job: tuple) -> pd.DataFrame:
    arm, K, seed, updates = job
    torch.set_num_threads(1)
    return run_credit(arm, K, seed, updates)


def credit_curves(
    arms=ARMS, Ks=(1, 4, 16), seeds=(0, 1), updates: int = 30, workers: int | None = None, run_dir: str | None = None
) -> pd.DataFrame:
    """Every (arm, K, seed) run, ``workers`` processes at a time; with ``run_dir`` each run is stored as it ends
    and a stored one is read back (resumable). Arms that are not registered are an error."""
    for a in arms:
        if a not in SUB_ADVANTAGE_MODES:
            raise ValueError(f"unknown arm {a!r}; registered: {', '.join(SUB_ADVANTAGE_MODES)}")
    cells = [(a, K, s, updates) for a in arms for K in Ks for s in seeds]
    store = RunStore(run_dir) if run_dir else None
    names = [f"{a}-K{K}-s{s}-u{u}.csv" for a, K, s, u in cells] if run_dir else None
    return run_all(_run, cells, workers, store=store, names=names)


def slope_verdicts(df: pd.DataFrame, metric: str = "episode_return", last: int = 5, delta: float = 0.05):
    """The pre-stated slope test (module docstring) from stored runs: per critic-free arm X the slope over log4 K
    of J(ppo_gae_across) - J(X), paired by seed, Holm-corrected (:func:`rltutor.experiments.stats.verdict_table`)."""
    end = df[df["update"] > df["update"].max() - last].groupby(["arm", "K", "seed"])[metric].mean()
    w = {1: -0.5, 4: 0.0, 16: 0.5}  # least-squares slope over log4 K = 0, 1, 2
    rows = []
    for other in CRITIC_FREE:
        arms = []
        for K, wk in w.items():
            for arm, sign in ((ACROSS, 1.0), (other, -1.0)):
                if (arm, K) in end.index.droplevel("seed"):
                    arms.append((sign * wk, end.loc[(arm, K)]))
        if len(arms) == 6:
            rows.append(paired_row(f"slope over log4 K of {ACROSS} - {other}", metric, arms, delta))
    return verdict_table(rows) if rows else pd.DataFrame()


def seeds_needed(df: pd.DataFrame, delta: float = 0.05, last: int = 5) -> int:
    """Seeds per arm the slope test needs at ``delta`` (80% power, level 0.05 / 3: Holm's first step over the
    three contrasts), from a pilot's runs: the slope contrast's weights (+-1/2 on K = 1 and 16, for two arms)
    give a per-seed sd of sqrt(4 x 1/4) sigma = sigma, sigma the mean sd over seeds of one arm's metric at one K
    (no credit taken for the pairing by seed: conservative)."""
    end = df[df["update"] > df["update"].max() - last].groupby(["arm", "K", "seed"])["episode_return"].mean()
    sigma = float(end.groupby(["arm", "K"]).std().mean())
    return seeds_for_power(sigma if sigma == sigma and sigma > 0 else 0.2, delta, paired=True, tests=3)


def pilot(arms, Ks=(1, 4, 16), seeds=(0, 1), updates: int = 4, out: str | None = None, critic_batches: int = 8) -> dict:
    """The pilot (never counted): the K distribution of the cloned policy, the perfect-credit gain and the warm
    critic's boundary explained variance within ``critic_batches`` batches, per K; then every (arm, K, seed) for
    ``updates`` updates, timed; and, from the pilot's sd, the seeds the slope test would need at its delta. With
    ``out``, each piece is written beside it (``OUT.k_distribution.csv``...) as soon as it is done, the runs
    into ``OUT.runs/``, so an interrupted pilot keeps what it measured."""
    t0 = time.perf_counter()
    base = os.path.splitext(out)[0] if out else None
    summary: dict = {}

    def keep(key, frame):
        summary[key] = frame
        if base:
            frame.to_csv(f"{base}.{key}.csv", index=False, float_format="%.5g")

    keep("k_distribution", pd.concat([k_distribution(K, seeds[0], batches=2) for K in Ks], ignore_index=True))
    keep("structure", pd.DataFrame([credit_structure(K, seeds[0], batches=2) for K in Ks]))
    crit = []
    for K in Ks:
        t1 = time.perf_counter()
        _, ev_b, ev_all, hist = warm_critic(K, seeds[0], max_batches=critic_batches)
        crit.append(
            {
                "K": K,
                "ev_boundary": ev_b,
                "ev_all": ev_all,
                "batches": int(hist["batches"].max()),
                "ev_boundary_start": float(hist["ev_boundary"].iloc[0]),
                "time_s": time.perf_counter() - t1,
            }
        )
        keep("critic", pd.DataFrame(crit))
    df = credit_curves(arms, Ks, seeds, updates, workers=1, run_dir=f"{base}.runs" if base else None)
    keep("runs", df.groupby(["arm", "K", "seed"])[["build_s", "time_s"]].max().reset_index())
    keep("learning", df.groupby(["arm", "K", "seed"])["episode_return"].agg(["first", "last"]).reset_index())
    summary["seeds_needed"] = seeds_needed(df)
    summary["wall_s"] = time.perf_counter() - t0
    summary["curves"] = df
    return summary


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m rltutor.experiments.credit", description=__doc__.split("\n")[0])
    p.add_argument("--arms", nargs="+", default=None, help="registered sub-advantage modes (default: ARMS)")
    p.add_argument("--Ks", nargs="+", type=int, default=[1, 4, 16], choices=sorted(SETTINGS))
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    p.add_argument("--updates", type=int, default=30)
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--pilot", action="store_true", help="the pilot: a few updates per run, timed, never counted")
    p.add_argument("--out", required=True, help="CSV file; FILE.cmd beside it gets the command")
    args = p.parse_args(argv)
    argv = argv if argv is not None else sys.argv[1:]
    arms = args.arms or [a for a in ARMS if a in SUB_ADVANTAGE_MODES]
    missing = [a for a in (args.arms or ARMS) if a not in SUB_ADVANTAGE_MODES]
    if args.arms and missing:
        p.error(f"unknown arms {missing}; registered: {', '.join(SUB_ADVANTAGE_MODES)}")
    if missing:
        print(f"not registered here, skipped: {', '.join(missing)}")
    t0 = time.perf_counter()
    if args.pilot:
        s = pilot(arms, tuple(args.Ks), tuple(args.seeds), args.updates, args.out)
        store_records(s["curves"], args.out, "rltutor.experiments.credit", argv)
        with pd.option_context("display.width", 200, "display.max_columns", 30):
            for key in ("runs", "learning", "critic", "structure"):
                print(f"--- {key}\n{s[key].round(4).to_string(index=False)}")
            kd = s["k_distribution"]
            print("--- rows per episode (K setting -> counts)")
            print(kd.groupby("K_setting")["rows"].value_counts().sort_index().to_string())
            spread = kd.groupby(["K_setting", "batch", "task"])["rows"].agg(lambda x: x.max() - x.min())
            print(f"--- within-group spread of rows (max - min), mean per K:\n{spread.groupby('K_setting').mean()}")
        print(f"seeds the slope test needs at delta 0.05 per log4 K (pilot sd, Holm over 3): {s['seeds_needed']}")
        print(f"{s['wall_s']:.0f} s; wrote {args.out}")
        return 0
    df = credit_curves(
        arms, tuple(args.Ks), tuple(args.seeds), args.updates, args.workers, os.path.splitext(args.out)[0] + ".runs"
    )
    store_records(df, args.out, "rltutor.experiments.credit", argv)
    print(slope_verdicts(df).to_string(index=False))
    print(f"{len(df)} rows in {time.perf_counter() - t0:.0f} s; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
