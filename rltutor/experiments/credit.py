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
* the oracle (:mod:`rltutor.rollout.oracle`, a library module, so that training can use it): V(s) at a snapshot
  of (environment, context, memory) from Monte-Carlo rollouts of the current policy in the simulator;
  :func:`oracle_boundary_values` plays a batch and returns it at every compaction boundary; the ``ORACLE`` arm,
  ``ppo_oracle_bootstrap``, is ppo_bootstrap with those values in place of the critic's at the boundary (the
  collector's ``boundary_value`` hook, filled by :class:`~rltutor.rollout.oracle.MCBoundaryValue`).
* :func:`warm_critic` -- the critic fitted on rollouts of the cloned policy until its explained variance at the
  boundaries exceeds 0.5, or what it reaches within a fixed budget; :func:`warm_critic_state` keeps it and
  :func:`credit_trainer` loads it into the run's critic (every critic arm of the main test starts from it).
* :func:`arm_snr` -- every arm's gradient SNR per K at the cloned policy (no training).
* :func:`run_credit` / :func:`credit_curves` -- the runs (arm x K x seed) through the run store, and
  :func:`slope_verdicts` -- the pre-stated slope test through :mod:`rltutor.experiments.stats`.
* ``python -m rltutor.experiments.credit --pilot --out rltutor/data/agents/credit_pilot.csv`` -- the pilot;
  ``--timing-pilot`` the second (:data:`TIMING_PILOT`); ``--snr`` the SNR table; ``--main-test`` the main test,
  one batch of at most ``--hours`` (1) of wall time per call, resumable (``--plan`` prints it, runs nothing):
  ``python -m rltutor.experiments.credit --main-test`` (its runs in the package's ``data/agents/credit_main.runs``).

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
* 2026-12-02, the second pilot (``rltutor/data/agents/credit_pilot2.*``, never counted; :data:`TIMING_PILOT`):
  CPU seconds (``time.process_time``, one core; wall time ran 2-4x longer on the shared machine) per update:
  broadcast_grpo 2.6 (K = 1) and 1.9 (K = 16); ppo_gae_across 1.8 and 2.0; the warm critic of 8 batches 33-40
  per (K, seed), the uncached cloned policy 10-22; the oracle arm with 4 rollouts per boundary 15.6 (K = 4)
  and 61 (K = 16). broadcast_grpo climbed in 3 updates (0.41 -> 0.78 at K = 1, 0.53 -> 0.66 at K = 16).
* 2026-12-02, the main test as it will run (before any counted run; :data:`MAIN_TEST`, printed by
  ``--main-test --plan`` from the stored pilots by :func:`main_test_plan`):

  - delta = 0.05 return per unit of log4 K, as stated on 2026-12-01 (its reason: perfect per-call credit cuts
    the gradient variance by rho = N = 14-15 on this family, :func:`perfect_credit_gain` at the pilot's fork
    rates, at every K alike; a loss of 0.10 solve rate from K = 1 to 16 is what one fork at p = 0.9 costs).
  - The power analysis (sigma = 0.107 from the first pilot, :func:`pilot_sd`; paired, Holm over 3, 80%)
    asks for 51 seeds: over the budget. n is fitted to the budget instead: 21 seeds (10 to 30), every arm of
    MAIN_ARMS at K = 1 and K = 16 (the least-squares slope over log4 K = 0, 1, 2 weights K = 4 by 0, so K = 4
    runs buy nothing for the test; K = 4 is in the SNR table), 30 updates, warm critics, row_weight on: about
    1000 CPU-s per seed, 5.8 of the 6 CPU-hours. With all three K, n would be 12 (detectable slope 0.114).
  - At n = 21 the test detects a slope of 0.081 per log4 K at 80% power (level 0.05 / 3), not 0.05: a true
    slope of 0.05 will often read "undecided"; the chapter says so beside the verdict.
  - Beside the budget (not in the verdicts): the oracle arm at K = 16 for seeds 10-12 (4 rollouts per boundary,
    about 1.6 CPU-hours), the ceiling of what a critic could give the bootstrap.
  - Verdicts by :func:`slope_verdicts` (unchanged), from the last 5 updates' mean return, each arm's training
    gain (first to last 5 updates) beside them; an arm that did not learn is reported and not interpreted.
* 2026-12-02, the per-row weighting test (:data:`WEIGHTING_TEST`), stated after the main test's first batch had
  started and before any run of this test (no main-test record had been read). Question: does counting every
  episode once (``row_weight``, on in every arm of the main test) matter against the per-row loss in which an
  episode of K rows weighs K times (the pitfall of rLLM's PR #512)? Arm: broadcast_grpo at K = 16, where rows
  per episode are most uneven (4-24 in the pilot), with ``row_weight`` off, labelled ``broadcast_grpo_per_row``;
  paired by seed with the main test's broadcast_grpo runs at K = 16 (row_weight on), the main test's 21 seeds,
  30 updates, the same metric. Contrast J(on) - J(off), two-sided, its own family of one (a question about the
  loss reducer, not about credit: the main test's Holm family stays as stated). delta = 0.05 return (one solve
  in twenty, half the main test's 0.10 over the K range: below it a practitioner would not change a reducer).
  Power (sigma = 0.107 from the first pilot, no credit for the pairing: sd of a difference sqrt(2) sigma), by
  the function :func:`weighting_test_plan`: 74 seeds for delta, over the budget; at the main test's n = 21 it
  detects 0.097 at 80%, so a true effect of delta will often read "undecided", and the page says so. Cost: 21
  runs of about 75 CPU-s, run after the main test's runs and before the oracle's, by the same ``--main-test``
  batches.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np
import pandas as pd
import torch

from rltutor import datafiles
from rltutor.config import TEMPLATE_TASKS, resolve
from rltutor.envs.toolshell.forks import FORKS_BUDGETS
from rltutor.experiments.runs import RunStore, run_all, store_records, trained_frame
from rltutor.experiments.stats import paired_row, seeds_for_power, verdict_table
from rltutor.rollout.compaction import MAIN_ARMS, SUB_ADVANTAGE_MODES
from rltutor.rollout.oracle import MCBoundaryValue, oracle_boundary_values
from rltutor.rollout.templates import outcome_to_go
from rltutor.train import Trainer
from rltutor.utils import explained_variance

__all__ = [
    "ARMS",
    "ORACLE",
    "CRITIC_FREE",
    "SETTINGS",
    "perfect_credit_gain",
    "credit_structure",
    "oracle_boundary_values",
    "warm_critic",
    "k_distribution",
    "gradient_noise",
    "arm_snr",
    "timing_pilot",
    "run_timing",
    "warm_critic_state",
    "credit_trainer",
    "run_credit",
    "credit_curves",
    "slope_verdicts",
    "seeds_needed",
    "MAIN_TEST",
    "pilot_sd",
    "run_cost",
    "main_test_jobs",
    "main_test_plan",
    "pilot_timing",
    "main_test_batch",
    "WEIGHTING_TEST",
    "PER_ROW",
    "weighting_test_plan",
    "weighting_verdict",
    "main_test_progress",
    "main_test_report",
    "pilot",
    "main",
]

ORACLE = "ppo_oracle_bootstrap"
"""The oracle arm: ppo_bootstrap with V at every boundary from Monte-Carlo rollouts in the simulator
(:class:`rltutor.rollout.oracle.MCBoundaryValue`), the ceiling of what a critic could give the bootstrap."""
ARMS = (*MAIN_ARMS, ORACLE)
"""The six arms of the test (:data:`rltutor.rollout.compaction.MAIN_ARMS`, registered sub-advantage modes by name)
and the oracle arm beside them."""
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
# The cloned policy, its structure, its K, its warm critic
# ----------------------------------------------------------------------------------------------


def _config(algo: str, K: int, seed: int, **sets):
    if K not in SETTINGS:
        raise ValueError(f"K must be one of {sorted(SETTINGS)} (rltutor.envs.toolshell.forks.FORKS_BUDGETS), got {K!r}")
    base = {"agent_policy": "templates", "env_options": TEMPLATE_TASKS["forks"], "seed": seed, "total_steps": 10**9}
    return resolve(algo, "toolshell", sets={**base, **COMMON, **SETTINGS[K], **sets})


def _cloned(K: int, seed: int, critic: bool = True, **sets):
    """The warm-started (cloned) template policy of ``seed`` at K's settings (``sets``: Config overrides), and
    its config."""
    from rltutor.build import build

    cfg = _config("ppo" if critic else "grpo", K, seed, **sets)
    policy, _ = build(cfg)
    return policy, cfg


def _collector(cfg, boundary_value=None):
    """The run's own collector (:func:`rltutor.build.agent_collector`: tasks x G, the context, the mode, gamma,
    lambda, the turn cost and row_weight as the command line sets them)."""
    from rltutor.build import agent_collector

    return agent_collector(cfg, boundary_value=boundary_value)


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
    **sets,
) -> tuple[dict, float, float, pd.DataFrame]:
    """Fit the critic of the cloned policy of ``seed`` at K's settings on its own rollouts until its explained
    variance at the boundaries (first turn of each sub-trajectory after a compaction) on ``eval_batches``
    held-out batches exceeds ``target_ev``, or ``max_batches`` training batches are spent. The target is the
    discounted outcome-to-go (:func:`rltutor.rollout.templates.outcome_to_go`). Returns (the critic's
    state_dict, the boundary explained variance reached, the all-turn one, the history per batch). At K = 1
    there are no boundaries: the boundary value is NaN and the all-turn one is what the loop reads. ``sets``:
    Config overrides (a test's smaller task)."""
    policy, cfg = _cloned(K, seed, **sets)
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


_WARM: dict = {}  # warm critics by (K, seed, batches), so the critic arms of one (K, seed) share one


def warm_critic_state(K: int, seed: int, batches: int = 8, folder: str | None = None) -> dict:
    """The critic state of :func:`warm_critic` for (K, seed) after at most ``batches`` batches, computed once per
    process; with ``folder``, kept there as ``warm_critic-K{K}-s{seed}-b{batches}.pt`` and read back (so the
    runs of a resumed or parallel main test start their critic arms from one fit)."""
    key = (K, seed, batches)
    if key in _WARM:
        return _WARM[key]
    path = os.path.join(folder, f"warm_critic-K{K}-s{seed}-b{batches}.pt") if folder else None
    if path and os.path.exists(path):
        state = torch.load(path, weights_only=True)
    else:
        state = {k: v.clone() for k, v in warm_critic(K, seed, max_batches=batches)[0].items()}
        if path:
            os.makedirs(folder, exist_ok=True)
            tmp = f"{path}.tmp{os.getpid()}"
            torch.save(state, tmp)
            os.replace(tmp, path)  # whole or not at all
    _WARM[key] = state
    return state


def credit_trainer(
    arm: str, K: int, seed: int = 0, critic_state: dict | None = None, oracle_n: int = 16, **overrides
) -> Trainer:
    """The trainer of one run of ``arm`` at K's settings: the cloned policy of ``seed`` (:func:`rltutor.build.build`),
    its critic loaded from ``critic_state`` when given (the warm critic of :func:`warm_critic_state`: the load
    hook, so the RL run starts from the warmed critic, not a fresh one), and the collector of
    :func:`rltutor.build.agent_collector`; the oracle arm's collector gets
    :class:`~rltutor.rollout.oracle.MCBoundaryValue` with ``oracle_n`` rollouts per boundary."""
    from rltutor.build import build

    if arm not in SUB_ADVANTAGE_MODES:
        raise ValueError(f"unknown arm {arm!r}; registered sub-advantage modes: {', '.join(SUB_ADVANTAGE_MODES)}")
    mode = SUB_ADVANTAGE_MODES[arm]
    cfg = _config(mode.algo, K, seed, sub_advantage=arm, **mode.requires, **overrides)
    policy, collector = build(cfg)
    if mode.oracle:
        collector = _collector(cfg, MCBoundaryValue(oracle_n, cfg.gamma, cfg.turn_cost, seed=cfg.seed))
    if critic_state is not None:
        if getattr(policy, "critic", None) is None:
            raise ValueError(f"arm {arm!r} runs without a critic (algo {mode.algo!r}): pass critic_state=None")
        policy.critic.load_state_dict(critic_state)
    return Trainer(cfg, policy, collector)


def run_credit(
    arm: str,
    K: int,
    seed: int = 0,
    updates: int = 30,
    warm_batches: int = 8,
    oracle_n: int = 16,
    folder: str | None = None,
    **overrides,
) -> pd.DataFrame:
    """One run of ``arm`` (a registered sub-advantage mode, under the algorithm and settings it registered) at
    K's settings: ``updates`` updates of 4 tasks x 8 episodes; one row per update. An arm with a critic starts
    from the warm critic of (K, seed) fitted for ``warm_batches`` batches (0: a fresh critic); ``folder``
    keeps the warm critics (:func:`warm_critic_state`)."""
    if arm not in SUB_ADVANTAGE_MODES:
        raise ValueError(f"unknown arm {arm!r}; registered sub-advantage modes: {', '.join(SUB_ADVANTAGE_MODES)}")
    critic = SUB_ADVANTAGE_MODES[arm].algo == "ppo"
    t0, c0 = time.perf_counter(), time.process_time()
    state = warm_critic_state(K, seed, warm_batches, folder) if critic and warm_batches > 0 else None
    t_warm, c_warm = time.perf_counter() - t0, time.process_time() - c0
    trainer = credit_trainer(arm, K, seed, state, oracle_n, **overrides)
    t_build, c_build = time.perf_counter() - t0 - t_warm, time.process_time() - c0 - c_warm
    df = trained_frame(trainer, updates, COLUMNS, arm=arm, K=K, seed=seed, build_s=t_build, warm_s=t_warm)
    # CPU seconds of this process (a loaded machine's wall times are not speeds): warm critic, build, all
    df["warm_cpu_s"], df["build_cpu_s"], df["cpu_s"] = c_warm, c_build, time.process_time() - c0
    return df


def _run(job: tuple) -> pd.DataFrame:
    """One job: ``(arm, K, seed, updates, warm_batches, folder, oracle_n[, sets])``; ``sets`` (pairs of Config
    overrides) relabel the run's ``arm`` as :data:`PER_ROW` for the weighting test's override."""
    arm, K, seed, updates, warm_batches, folder, oracle_n, *rest = job
    sets = dict(rest[0]) if rest else {}
    if sets and (sets != dict(WEIGHTING_TEST["sets"]) or arm != WEIGHTING_TEST["arm"]):
        raise ValueError(f"only the weighting test's overrides have a label, got {arm!r} with {sets!r}")
    torch.set_num_threads(1)
    df = run_credit(arm, K, seed, updates, warm_batches, oracle_n, folder=folder, **sets)
    if sets:
        df["arm"] = PER_ROW
    return df


def _name(arm: str, K: int, seed: int, updates: int, warm_batches: int, oracle_n: int = 16, sets=()) -> str:
    tail = (f"-w{warm_batches}" if warm_batches else "") + (f"-n{oracle_n}" if SUB_ADVANTAGE_MODES[arm].oracle else "")
    tail += "".join(f"-{k}-{v}".lower() for k, v in sets)  # the weighting test's runs: -row_weight-false
    return f"{arm}-K{K}-s{seed}-u{updates}{tail}.csv"


def _job_name(job: tuple) -> str:
    """The stored file name of a job of :func:`_run`."""
    return _name(*job[:5], job[6], *job[7:])


def credit_curves(
    arms=ARMS,
    Ks=(1, 4, 16),
    seeds=(0, 1),
    updates: int = 30,
    workers: int | None = None,
    run_dir: str | None = None,
    warm_batches: int = 8,
    oracle_n: int = 16,
) -> pd.DataFrame:
    """Every (arm, K, seed) run, ``workers`` processes at a time; with ``run_dir`` each run is stored as it ends
    and a stored one is read back (resumable), the warm critics beside them. Arms that are not registered are an
    error."""
    for a in arms:
        if a not in SUB_ADVANTAGE_MODES:
            raise ValueError(f"unknown arm {a!r}; registered: {', '.join(SUB_ADVANTAGE_MODES)}")
    cells = [(a, K, s, updates, warm_batches, run_dir, oracle_n) for s in seeds for K in Ks for a in arms]
    return _run_cells(cells, workers, run_dir)


def _run_cells(cells: list[tuple], workers: int | None, run_dir: str | None) -> pd.DataFrame:
    """The runs of ``cells`` (``_run``'s jobs) through the run store (resumable) when ``run_dir`` is given."""
    store = RunStore(run_dir) if run_dir else None
    names = [_job_name(c) for c in cells] if run_dir else None
    return run_all(_run, cells, workers, store=store, names=names)


def _ends(df: pd.DataFrame, metric: str, last: int) -> pd.Series:
    """Each run's end: the mean of ``metric`` over the last ``last`` updates, indexed by (arm, K, seed)."""
    return df[df["update"] > df["update"].max() - last].groupby(["arm", "K", "seed"])[metric].mean()


def _slope_name(other: str) -> str:
    """The contrast name of the slope test against the critic-free arm ``other``."""
    return f"slope over log4 K of {ACROSS} - {other}"


def slope_verdicts(df: pd.DataFrame, metric: str = "episode_return", last: int = 5, delta: float = 0.05):
    """The pre-stated slope test (module docstring) from stored runs: per critic-free arm X the slope over log4 K
    of J(ppo_gae_across) - J(X), paired by seed, Holm-corrected (:func:`rltutor.experiments.stats.verdict_table`)."""
    end = _ends(df, metric, last)
    w = {1: -0.5, 16: 0.5}  # least-squares slope over log4 K = 0, 1, 2: weights (-1, 0, +1) / 2, K = 4's is 0
    rows = []
    for other in CRITIC_FREE:
        arms = []
        for K, wk in w.items():
            for arm, sign in ((ACROSS, 1.0), (other, -1.0)):
                if (arm, K) in end.index.droplevel("seed"):
                    arms.append((sign * wk, end.loc[(arm, K)]))
        if len(arms) == 4:
            rows.append(paired_row(_slope_name(other), metric, arms, delta))
    return verdict_table(rows) if rows else pd.DataFrame()


def seeds_needed(df: pd.DataFrame, delta: float = 0.05, last: int = 5) -> int:
    """Seeds per arm the slope test needs at ``delta`` (80% power, level 0.05 / 3: Holm's first step over the
    three contrasts), from a pilot's runs: the slope contrast's weights (+-1/2 on K = 1 and 16, for two arms)
    give a per-seed sd of sqrt(4 x 1/4) sigma = sigma, sigma the mean sd over seeds of one arm's metric at one K
    (no credit taken for the pairing by seed: conservative)."""
    end = _ends(df, "episode_return", last)
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
    df = credit_curves(arms, Ks, seeds, updates, workers=1, run_dir=f"{base}.runs" if base else None, warm_batches=0)
    keep("runs", df.groupby(["arm", "K", "seed"])[["build_s", "time_s"]].max().reset_index())
    keep("learning", df.groupby(["arm", "K", "seed"])["episode_return"].agg(["first", "last"]).reset_index())
    summary["seeds_needed"] = seeds_needed(df)
    summary["wall_s"] = time.perf_counter() - t0
    summary["curves"] = df
    return summary


def gradient_noise(g: torch.Tensor) -> dict[str, float]:
    """Of M gradient estimates ``g`` (M, P): ``variance`` ``E|g - E g|^2`` (unbiased) and its standard error,
    ``signal`` ``|mean g|^2``, and ``snr`` = ``max(|mean g|^2 - variance / M, 0) / variance``, the unbiased
    ``|E g|^2`` over the noise
    (the same numbers as :func:`rltutor.experiments.variance.summarize`, which a lab may not import)."""
    M = g.shape[0]
    gf = g.double()
    mean = gf.mean(0)
    sq = ((gf - mean) ** 2).sum(1)  # |g_m - mean|^2, (M,)
    var = float(sq.sum() / max(M - 1, 1))
    signal = float(mean @ mean)
    unbiased = signal - var / M
    snr = max(unbiased, 0.0) / var if var > 0 else float("inf") if unbiased > 0 else 0.0
    var_se = float(sq.std() / math.sqrt(M)) if M > 1 else float("nan")
    return {"variance": var, "variance_se": var_se, "signal": signal, "snr": snr}


def arm_snr(
    Ks=(1, 4, 16),
    arms=ARMS,
    batches: int = 10,
    seed: int = 0,
    critic_batches: int = 4,
    oracle_n: int = 4,
    oracle_Ks=(1, 4),
    on_K=None,
    **sets,
) -> pd.DataFrame:
    """The policy gradient's signal-to-noise ratio of every arm at a fixed policy (no training), per K.

    The policy is the cloned template agent of ``seed`` at K's settings, its critic warmed by :func:`warm_critic`
    for ``critic_batches`` batches. ``batches`` batches of 4 tasks x 8 episodes are collected once per K (the
    oracle's :class:`~rltutor.rollout.oracle.MCBoundaryValue`, ``oracle_n`` rollouts per boundary, filling the
    boundary values at the K in ``oracle_Ks``; its rollouts draw from their own generator, so the episodes are
    the same either way); each arm turns the same episodes into advantages
    (:func:`rltutor.rollout.compaction.sub_advantage_batch`, then its registered estimator at the run's gamma and
    lambda), and the gradient over the policy's (not the critic's) parameters of the surrogate
    ``aggregate(A log pi, mask, row_weight)`` (every episode counting once, as ``row_weight`` makes every arm of the
    main test count it; no advantage whitening) is one estimate g. SNR = ``|E g|^2 / E|g - E g|^2``
    (:func:`gradient_noise`, ``|E g|^2`` without bias). One row per (K, arm); an oracle arm at
    a K outside ``oracle_Ks`` is left out (its rollouts cost about a second per boundary at 8 rollouts).
    ``on_K(frame)``: called with the rows so far after each K (the command line stores them, so a stopped
    measurement keeps its finished K). ``sets``: Config overrides (a test's smaller task)."""
    from rltutor.advantages import compute_advantages
    from rltutor.losses import aggregate
    from rltutor.rollout.compaction import sub_advantage_batch

    rows = []
    for K in Ks:
        t0 = time.perf_counter()
        state, ev_b, ev_all, _ = warm_critic(K, seed, max_batches=critic_batches, **sets)
        policy, cfg = _cloned(K, seed, **sets)
        policy.critic.load_state_dict(state)
        hook = MCBoundaryValue(oracle_n, cfg.gamma, cfg.turn_cost, seed=seed) if K in oracle_Ks else None
        col = _collector(cfg, hook)
        gen = torch.Generator().manual_seed(7 * seed + K)
        collected = [col.collect(policy, gen) for _ in range(batches)]
        params = [p for n, p in policy.named_parameters() if not n.startswith("critic")]
        segs = float(np.mean([i["metrics"]["segments_per_episode"] for _, i in collected]))
        for arm in arms:
            m = SUB_ADVANTAGE_MODES[arm]
            if m.oracle and hook is None:
                continue
            gm = cfg.gamma if m.gamma is None else m.gamma
            grads = []
            for b, i in collected:
                meta, mask = i["meta"], b["mask"]
                outcome = torch.tensor(i["episode_returns"], dtype=mask.dtype)
                out = sub_advantage_batch(
                    arm, meta, outcome, mask, b["values"], gm, cfg.num_groups, cfg.group_size, cfg.lam, True,
                    i.get("boundary_values"),
                )  # fmt: skip
                adv = out.get("advantages")  # ppo_gae_across computes its own
                if adv is None:
                    adv, _ = compute_advantages(
                        m.estimator or "gae", rewards=out["rewards"], mask=mask, values=b["values"],
                        group_ids=out["group_ids"], gamma=gm, lam=cfg.lam,
                    )  # fmt: skip
                logp = policy.evaluate(b)["logp"]
                surrogate = aggregate(adv.detach() * logp, mask, "token-mean", row_weight=out["row_weight"])
                grads.append(torch.cat([x.flatten() for x in torch.autograd.grad(surrogate, params)]))
            summ = gradient_noise(torch.stack(grads))
            rows.append(
                {
                    "K": K,
                    "arm": arm,
                    "segments_per_episode": segs,
                    "snr": summ["snr"],
                    "variance": summ["variance"],
                    "variance_se": summ["variance_se"],
                    "signal": summ["signal"],
                    "critic_ev_boundary": ev_b,
                    "critic_ev_all": ev_all,
                    "oracle_n": oracle_n if m.oracle else 0,
                    "batches": batches,
                    "time_s": time.perf_counter() - t0,
                }
            )
        if on_K is not None:
            on_K(pd.DataFrame(rows))
    return pd.DataFrame(rows)


TIMING_PILOT = (
    ("broadcast_grpo", 1, 0, 3, 0, 16),
    ("broadcast_grpo", 16, 0, 3, 0, 16),
    ("ppo_gae_across", 16, 0, 3, 8, 16),
    ("ppo_gae_across", 1, 0, 3, 8, 16),
    (ORACLE, 4, 0, 2, 0, 4),
    (ORACLE, 16, 0, 1, 0, 4),
)
"""The second pilot's runs (never counted): (arm, K, seed, updates, warm_batches, oracle_n); it times what the
first pilot did not finish or have (a critic-free arm, a warm critic, the oracle arm), in CPU seconds."""


def timing_pilot(out: str, jobs=TIMING_PILOT) -> pd.DataFrame:
    """The second pilot: ``jobs`` one after another in this process, each stored in ``OUT.runs/`` as it ends
    (an interrupted pilot keeps what it timed); returns one row per run: its CPU seconds for the warm critic,
    the build (the cloned policy; computed once per setting in a process) and the updates, per update."""
    run_dir = os.path.splitext(out)[0] + ".runs"
    df = _run_cells([(a, K, s, u, w, run_dir, n) for a, K, s, u, w, n in jobs], 1, run_dir)
    return run_timing(df)


def run_timing(df: pd.DataFrame) -> pd.DataFrame:
    """Per stored run: ``updates``, ``warm_cpu_s``, ``build_cpu_s``, ``update_cpu_s`` (CPU seconds per update:
    the run's CPU less warm critic and build, over its updates) and the wall ``time_s`` of its updates."""
    g = df.groupby(["arm", "K", "seed"], sort=False)
    t = g.agg(
        updates=("update", "max"),
        warm_cpu_s=("warm_cpu_s", "max"),
        build_cpu_s=("build_cpu_s", "max"),
        cpu_s=("cpu_s", "max"),
        time_s=("time_s", "max"),
    ).reset_index()
    t["update_cpu_s"] = (t["cpu_s"] - t["warm_cpu_s"] - t["build_cpu_s"]) / t["updates"]
    return t


PILOTS = ("agents/credit_pilot.csv", "agents/credit_pilot2.runs")
"""The stored pilots (never counted), as :func:`rltutor.datafiles.path` names them: the first (fresh-critic
ppo_bootstrap, 2 seeds: the sd) and the second's runs (CPU seconds per run)."""
MAIN_OUT = str(datafiles.path("agents") / "credit_main.csv")
"""Where ``--main-test`` keeps the main test by default (its runs in ``credit_main.runs/`` beside it)."""
BUDGET_CPU_S = 6 * 3600
"""The main test's budget: about 6 CPU-hours (issue 22)."""
MAIN_TEST = {
    "arms": MAIN_ARMS,
    "Ks": (1, 16),
    "updates": 30,
    "warm_batches": 8,
    "first_seed": 10,
    "seeds": 21,
    "oracle_Ks": (16,),
    "oracle_seeds": 3,
    "oracle_n": 4,
}
"""The main test's cells (the pre-registration in the module docstring): every arm of MAIN_ARMS at K = 1 and 16
(the slope's least-squares weights over log4 K = 0, 1, 2 put 0 on K = 4), 30 updates, critic arms from the warm
critic of 8 batches, ``seeds`` seeds from first_seed (the pilots used 0 and 1; n as :func:`main_test_plan` fitted
it to the budget on 2026-12-02, pinned here so the test cannot drift with later data); then, beside the budget,
the oracle arm at ``oracle_Ks`` for the first ``oracle_seeds`` seeds with ``oracle_n`` rollouts per boundary."""


WEIGHTING_TEST = {"arm": "broadcast_grpo", "K": 16, "sets": (("row_weight", False),), "delta": 0.05}
"""The per-row weighting test (the module docstring, 2026-12-02): ``arm`` at ``K`` with ``sets`` (Config overrides)
against the main test's run of the same arm, K and seed (row_weight on), over the main test's seeds."""
PER_ROW = "broadcast_grpo_per_row"
"""The label of the weighting test's runs in the records (the mode is broadcast_grpo; only row_weight differs)."""


def pilot_sd(path: str | None = None, last: int = 5) -> float:
    """sigma: the mean over (arm, K) of the sd over seeds of a run's end metric, from a stored pilot (as
    :func:`seeds_needed` reads it; default the first of :data:`PILOTS`)."""
    df = pd.read_csv(datafiles.path(PILOTS[0]) if path is None else path)
    end = _ends(df, "episode_return", last)
    return float(end.groupby(["arm", "K"]).std().mean())


def run_cost(timing: pd.DataFrame, arm: str, K: int, updates: int, warm_batches: int, warm: bool = True) -> float:
    """A run's estimated CPU seconds from the second pilot's :func:`run_timing`: the build of the uncached
    cloned policy (charged to every run: a worker's cache may save it), the warm critic (a critic arm's, with
    ``warm``: it is fitted once per (K, seed) and kept) and ``updates`` updates. A critic-free arm is timed as
    broadcast_grpo, a critic arm as ppo_gae_across
    (they differ only in how the rewards are assigned), the oracle as itself; K = 4 without its own timing as
    the mean of K = 1 and K = 16 times 1.6 (the first pilot's wall time per update at K = 4 over those)."""
    mode = SUB_ADVANTAGE_MODES[arm]
    proxy = ORACLE if mode.oracle else ("ppo_gae_across" if mode.algo == "ppo" else "broadcast_grpo")
    t = timing[timing["arm"] == proxy].set_index("K")
    builds = timing.groupby("K")["build_cpu_s"].max()  # the uncached build at each K

    def per_update(k):
        if k in t.index:
            return float(t.loc[k, "update_cpu_s"])
        near = [float(t.loc[j, "update_cpu_s"]) for j in (1, 16) if j in t.index]
        return 1.6 * float(np.mean(near))

    build = float(builds.get(K, builds.max()))
    fit = float(timing["warm_cpu_s"].max()) if warm and mode.algo == "ppo" and warm_batches > 0 else 0.0
    return build + fit + updates * per_update(K)


def main_test_jobs(n: int, folder: str) -> list[tuple]:
    """The main test's runs for ``n`` seeds, in seed order (a stopped test has whole seeds first), then the
    oracle's."""
    m = MAIN_TEST
    seeds = range(m["first_seed"], m["first_seed"] + n)
    jobs = [(a, K, s, m["updates"], m["warm_batches"], folder, 16) for s in seeds for K in m["Ks"] for a in m["arms"]]
    oracle = [
        (ORACLE, K, s, m["updates"], m["warm_batches"], folder, m["oracle_n"])
        for s in seeds[: m["oracle_seeds"]]
        for K in m["oracle_Ks"]
    ]
    w = WEIGHTING_TEST
    weighting = [(w["arm"], w["K"], s, m["updates"], m["warm_batches"], folder, 16, w["sets"]) for s in seeds]
    return jobs + weighting + oracle  # the oracle's runs last: beside the budget


def main_test_plan(timing: pd.DataFrame | None = None, budget_s: float = BUDGET_CPU_S) -> dict:
    """The pre-stated test's numbers from the pilots: sigma (:func:`pilot_sd`), the seeds the slope test would
    need at delta (:func:`seeds_for_power`), the CPU seconds per seed of :data:`MAIN_TEST`
    (:func:`run_cost`), the seeds the budget affords (n), and the slope the affordable n detects at 80% power
    (:func:`rltutor.experiments.stats.detectable_effect`, level 0.05 / 3); and the CPU seconds of the oracle's
    runs beside the budget (``oracle_cpu_s``)."""
    from rltutor.experiments.stats import ALPHA, detectable_effect

    if timing is None:
        timing = pilot_timing()
    m = MAIN_TEST
    sigma = pilot_sd()
    per_seed = sum(run_cost(timing, a, K, m["updates"], m["warm_batches"], False) for a in m["arms"] for K in m["Ks"])
    per_seed += len(m["Ks"]) * float(timing["warm_cpu_s"].max())  # one warm critic per (K, seed)
    n = int(budget_s // per_seed)
    oracle = m["oracle_seeds"] * sum(
        run_cost(timing, ORACLE, K, m["updates"], m["warm_batches"]) for K in m["oracle_Ks"]
    )
    return {
        "sigma": sigma,
        "delta": 0.05,
        "seeds_needed": seeds_for_power(sigma, 0.05, paired=True, tests=3),
        "cpu_s_per_seed": per_seed,
        "n": n,
        "cpu_s": n * per_seed,
        "detectable_slope": detectable_effect(sigma / math.sqrt(n), n - 1, ALPHA / 3),
        "oracle_cpu_s": oracle,
    }


def weighting_test_plan(n: int | None = None) -> dict:
    """The per-row weighting test's numbers (:data:`WEIGHTING_TEST`): sigma of the first pilot, the sd of a
    difference taken as sqrt(2) sigma (no credit for the pairing), the seeds 80% power at delta would need
    (level 0.05, its own family) and the effect the main test's n detects."""
    from rltutor.experiments.stats import ALPHA, detectable_effect

    n = MAIN_TEST["seeds"] if n is None else n
    sd = math.sqrt(2.0) * pilot_sd()
    delta = WEIGHTING_TEST["delta"]
    return {
        "sd_difference": sd,
        "delta": delta,
        "seeds_needed": seeds_for_power(sd, delta, paired=True, tests=1),
        "n": n,
        "detectable": detectable_effect(sd / math.sqrt(n), n - 1, ALPHA),
    }


def weighting_verdict(df: pd.DataFrame, metric: str = "episode_return", last: int = 5) -> pd.DataFrame:
    """The per-row weighting test from stored runs: J(arm, row_weight on) - J(arm, row_weight off) at
    :data:`WEIGHTING_TEST`'s K, paired by seed, a family of one (:func:`rltutor.experiments.stats.verdict_table`)."""
    w = WEIGHTING_TEST
    end = _ends(df, metric, last)
    if (w["arm"], w["K"]) not in end.index.droplevel("seed") or (PER_ROW, w["K"]) not in end.index.droplevel("seed"):
        return pd.DataFrame()
    arms = [(1.0, end.loc[(w["arm"], w["K"])]), (-1.0, end.loc[(PER_ROW, w["K"])])]
    name = f"{w['arm']} at K = {w['K']}: row_weight on - off"
    return verdict_table([paired_row(name, metric, arms, w["delta"])])


def main_test_progress(folder: str | None = None) -> tuple[int, int]:
    """(runs stored, runs in all) of the main test (:func:`main_test_jobs` at the pre-stated n, the weighting
    test's and the oracle's included) in ``folder`` (default: beside :data:`MAIN_OUT`); reads no records."""
    folder = os.path.splitext(MAIN_OUT)[0] + ".runs" if folder is None else folder
    jobs = main_test_jobs(MAIN_TEST["seeds"], folder)
    return sum(os.path.exists(os.path.join(folder, _job_name(j))) for j in jobs), len(jobs)


def main_test_report(df: pd.DataFrame, metric: str = "episode_return", last: int = 5) -> dict:
    """The main test's tables from its records (every run stored; the pre-registration in the module docstring):

    * ``gains``: every (arm, K)'s training gain, first to last ``last`` updates
      (:func:`rltutor.experiments.stats.training_gains`), ``learned`` where its interval lies above 0;
    * ``verdicts``: :func:`slope_verdicts`, with ``interpretable``: both arms learned at both K (a contrast with
      an arm that did not learn is reported, not read);
    * ``weighting``: :func:`weighting_verdict`, ``interpretable`` likewise;
    * ``oracle``: the oracle arm minus ppo_bootstrap at the oracle's K, paired by seed: the ceiling of what a
      critic could give the bootstrap, beside the verdicts (uncorrected, no delta: descriptive).
    """
    from rltutor.experiments.stats import training_gains

    gains = training_gains(df, ["arm", "K"], metric, last=last, first=last)
    learned = {(r.arm, r.K): r.learned for r in gains.itertuples()}
    verdicts = slope_verdicts(df, metric, last)
    if not verdicts.empty:
        other = {_slope_name(x): x for x in CRITIC_FREE}
        verdicts["interpretable"] = [
            all(learned.get((a, K), False) for a in (ACROSS, other[c]) for K in MAIN_TEST["Ks"])
            for c in verdicts["contrast"]
        ]
    weighting = weighting_verdict(df, metric, last)
    if not weighting.empty:
        K = WEIGHTING_TEST["K"]
        weighting["interpretable"] = learned.get((WEIGHTING_TEST["arm"], K), False) and learned.get((PER_ROW, K), False)
    end = _ends(df, metric, last)
    oracle = pd.DataFrame()
    for K in MAIN_TEST["oracle_Ks"]:
        if (ORACLE, K) in end.index.droplevel("seed") and ("ppo_bootstrap", K) in end.index.droplevel("seed"):
            arms = [(1.0, end.loc[(ORACLE, K)]), (-1.0, end.loc[("ppo_bootstrap", K)])]
            oracle = verdict_table([paired_row(f"{ORACLE} - ppo_bootstrap at K = {K}", metric, arms)])
    return {"gains": gains, "verdicts": verdicts, "weighting": weighting, "oracle": oracle}


def pilot_timing(folder: str | None = None) -> pd.DataFrame:
    """:func:`run_timing` of the second pilot's stored runs (default the second of :data:`PILOTS`)."""
    folder = str(datafiles.path(PILOTS[1])) if folder is None else folder
    files = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".csv"))
    return run_timing(pd.concat([pd.read_csv(f) for f in files], ignore_index=True))


def main_test_batch(
    n: int, folder: str, hours: float = 1.0, workers: int = 2, timing: pd.DataFrame | None = None, dry: bool = False
) -> list[tuple]:
    """The next batch of the main test: the pending runs (not in ``folder``'s store), in seed order, as many as
    fit in ``hours`` of wall time on ``workers`` free cores by :func:`run_cost`; printed with its estimate,
    then run (unless ``dry``), each run stored as it ends. Returns the batch's jobs (empty: the test is done)."""
    if timing is None:
        timing = pilot_timing()
    store = RunStore(folder)
    pending = [j for j in main_test_jobs(n, folder) if not store.has(_job_name(j))]
    batch, cpu, fitted = [], 0.0, set()
    for j in pending:
        key = (j[1], j[2], j[4])  # the warm critic of (K, seed): fitted once, kept in the folder
        kept = key in fitted or os.path.exists(os.path.join(folder, f"warm_critic-K{j[1]}-s{j[2]}-b{j[4]}.pt"))
        c = run_cost(timing, j[0], j[1], j[3], j[4], warm=not kept)
        if SUB_ADVANTAGE_MODES[j[0]].algo == "ppo":
            fitted.add(key)
        if batch and (cpu + c) / workers > hours * 3600:
            break
        batch.append(j)
        cpu += c
    print(
        f"batch: {len(batch)} of {len(pending)} pending runs (seeds {sorted({j[2] for j in batch})}), about "
        f"{cpu / 60:.0f} CPU-minutes: {cpu / workers / 60:.0f} min of wall on {workers} free cores (a loaded "
        "machine stretches it by its load)",
        flush=True,
    )
    if batch and not dry:
        t0 = time.perf_counter()
        _run_cells(batch, workers, folder)
        print(f"batch done in {(time.perf_counter() - t0) / 60:.0f} min; commit {folder}", flush=True)
    return batch


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m rltutor.experiments.credit", description=__doc__.split("\n")[0])
    p.add_argument("--arms", nargs="+", default=None, help="registered sub-advantage modes (default: ARMS)")
    p.add_argument("--Ks", nargs="+", type=int, default=[1, 4, 16], choices=sorted(SETTINGS))
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    p.add_argument("--updates", type=int, default=30)
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--pilot", action="store_true", help="the pilot: a few updates per run, timed, never counted")
    p.add_argument(
        "--main-test",
        action="store_true",
        help="the pre-stated main test (MAIN_TEST): its next batch of at most --hours of wall time, resumable; "
        "--out is its CSV, the runs go to OUT.runs/",
    )
    p.add_argument("--hours", type=float, default=1.0, help="--main-test: wall time per batch")
    p.add_argument("--plan", action="store_true", help="--main-test: print the plan and the next batch, run nothing")
    p.add_argument("--snr", action="store_true", help="every arm's gradient SNR per K at the cloned policy (arm_snr)")
    p.add_argument("--batches", type=int, default=10, help="--snr: gradient estimates per (K, arm)")
    p.add_argument("--critic-batches", type=int, default=4, help="--snr: batches of the warm critic")
    p.add_argument("--oracle-n", type=int, default=4, help="--snr: the oracle's rollouts per boundary")
    p.add_argument(
        "--timing-pilot",
        action="store_true",
        help="the second pilot (TIMING_PILOT): CPU seconds per run, never counted",
    )
    p.add_argument(
        "--out", default=None, help="CSV file; FILE.cmd beside it gets the command (--main-test: MAIN_OUT by default)"
    )
    args = p.parse_args(argv)
    if args.out is None and not args.main_test:
        p.error("--out is required (a CSV file, e.g. --out rltutor/data/agents/credit_snr.csv)")
    args.out = args.out or MAIN_OUT
    argv = argv if argv is not None else sys.argv[1:]
    arms = args.arms or [a for a in ARMS if a in SUB_ADVANTAGE_MODES]
    missing = [a for a in (args.arms or ARMS) if a not in SUB_ADVANTAGE_MODES]
    if args.arms and missing:
        p.error(f"unknown arms {missing}; registered: {', '.join(SUB_ADVANTAGE_MODES)}")
    if missing:
        print(f"not registered here, skipped: {', '.join(missing)}")
    t0 = time.perf_counter()
    if args.main_test:
        plan = main_test_plan()
        print(", ".join(f"{k} {v:.4g}" for k, v in plan.items()))
        print("weighting test: " + ", ".join(f"{k} {v:.4g}" for k, v in weighting_test_plan().items()))
        folder = os.path.splitext(args.out)[0] + ".runs"
        n = MAIN_TEST["seeds"]  # the pre-stated n; the plan above recomputes it from the stored pilots
        if plan["n"] != n:
            print(f"note: the stored pilots now give n = {plan['n']}; the pre-stated test runs n = {n}")
        jobs = main_test_batch(n, folder, args.hours, args.workers or 2, dry=args.plan)
        if not args.plan and not jobs:  # every run stored: the test's records and verdicts
            df = _run_cells(main_test_jobs(n, folder), 1, folder)
            store_records(df, args.out, "rltutor.experiments.credit", argv)
            for name, table in main_test_report(df).items():
                print(f"--- {name}\n{table.round(4).to_string(index=False)}")
        return 0
    if args.snr:
        df = arm_snr(
            tuple(args.Ks),
            arms,
            args.batches,
            seed=args.seeds[0],
            critic_batches=args.critic_batches,
            oracle_n=args.oracle_n,
            on_K=lambda part: store_records(part, args.out, "rltutor.experiments.credit", argv),
        )
        print(df.round(4).to_string(index=False))
        print(f"{time.perf_counter() - t0:.0f} s; wrote {args.out}")
        return 0
    if args.timing_pilot:
        t = timing_pilot(args.out)
        store_records(t, args.out, "rltutor.experiments.credit", argv)
        print(t.round(3).to_string(index=False))
        print(f"{time.perf_counter() - t0:.0f} s; wrote {args.out}")
        return 0
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
