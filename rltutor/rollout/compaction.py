"""Compaction: when a multi-turn context outgrows its budget, shrink it and go on in a new sub-trajectory.

Chapter 11 (agents and compaction). An agent's context is ``[<task> task] [<cmd> command <eos> <obs> observation]...``
(token ids of :mod:`rltutor.envs.toolshell.vocab`). When the next turn might not fit in the context
budget, :func:`compact` builds a fresh, shorter context from the task and the turns so far, and the
episode continues from it: one episode becomes K >= 1 *sub-trajectories* of uneven count and length.
Each is one training row (see :mod:`rltutor.rollout.agent`), and in each the carried-over context is
masked (mask 0): the policy is trained only on the tokens it generated in that sub-trajectory.

Strategies (:data:`COMPACTIONS`):

* ``"none"``: no compaction; an episode whose next turn does not fit ends there (reward 0).
* ``"recent"``: keep the task and the most recent ``keep_turns`` turns (fewer if they do not fit).
* ``"summary"``: keep the task and a short *scripted* summary of the facts seen so far
  (:func:`summarize`: the file each fact came from and the lines that name a value, a pointer or an
  import), written as one observation ``<obs> notes: ...``. Real systems let the model write the
  summary; here it is scripted, and whether its tokens are trained is a switch
  (``train_summary``, default off; see :class:`~rltutor.rollout.agent.AgentCollector`). CompactionRL
  (arXiv:2607.05378, https://arxiv.org/abs/2607.05378) trains PPO with the summary tokens trained: a PPO mode
  with ``train_summary=True``.

Then how the advantages of the K sub-trajectories of an episode are assigned: a registry of *modes*
(:data:`SUB_ADVANTAGE_MODES`, added to with :func:`register_sub_advantage`; :data:`SUB_ADVANTAGES` says
what each does, :data:`MAIN_ARMS` names the six of chapter 11's test, each linked to the system whose choice it
is) and :func:`sub_advantage_batch`, which turns the collected sub-trajectories into the trainer's rewards and
group ids (or, for ``ppo_gae_across``, its advantages and returns) and, with ``row_weight``, a per-episode loss
weight, so that the one trainer and the registered estimators do the rest.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import torch

from rltutor.advantages import ESTIMATORS, gae, group_advantages
from rltutor.envs.toolshell.vocab import CMD, EOS, OBS, decode, encode
from rltutor.utils import check_choice

__all__ = [
    "COMPACTIONS",
    "SUB_ADVANTAGES",
    "SUB_ADVANTAGE_MODES",
    "MAIN_ARMS",
    "RENAMED_SUB_ADVANTAGES",
    "SubAdvantage",
    "SubTrajectories",
    "register_sub_advantage",
    "resolve_sub_advantage",
    "turn_tokens",
    "summarize",
    "compact",
    "sub_advantage_batch",
    "episode_row_weight",
    "assign_rewards",
    "comparable_rows",
    "comparable_fraction",
]

COMPACTIONS = ("none", "recent", "summary")
"""The compaction strategies (the module docstring says what each keeps); rltutor.config checks against them."""

_FACT = re.compile(
    r"^(?:\w+ is defined in \S+|from [\w.]+ import \w+|[A-Za-z_]\w* = \w+|\w+ is the sum of .*|- \S+\.py"
    r"|answer: \S+|\s*assert .*==.*)$",
    re.M,
)


def turn_tokens(cmd: list[int], obs: list[int], tokenizer=None) -> list[int]:
    """One turn as context tokens: ``<cmd> command <eos> <obs> observation`` (``cmd`` ends with its <eos>
    when the policy emitted one; ``obs`` is the observation's tokens without the <obs> marker). ``tokenizer``: a
    :class:`~rltutor.rollout.context.Tokenizer` whose markers to write (default the toolshell vocabulary's)."""
    if tokenizer is None:
        return [CMD, *cmd, OBS, *obs]
    return [*tokenizer.ids("cmd"), *cmd, *tokenizer.ids("obs"), *obs]


def summarize(turns: list[tuple[list[int], list[int]]], tokenizer=None) -> list[str]:
    """The scripted summary of ``turns`` (command tokens, observation tokens): one line per turn whose
    observation holds facts, ``"COMMAND: FACT; FACT"``, oldest first. Facts are the lines that name a
    value (``X = 42``), a pointer (``X is defined in a/b.py``), an import, a sum's files, or an answer."""
    dec, eos = (decode, EOS) if tokenizer is None else (tokenizer.decode, tokenizer.eos)
    lines = []
    for cmd, obs in turns:
        facts = [m.group(0).strip() for m in _FACT.finditer(dec(obs))]
        if facts:
            command = dec([t for t in cmd if t != eos]).replace("\n", " ")
            lines.append(f"{command}: {'; '.join(facts)}")
    return lines


def compact(
    strategy: str,
    head: list[int],
    turns: list[tuple[list[int], list[int]]],
    budget: int,
    room: int,
    keep_turns: int = 2,
    tokenizer=None,
) -> tuple[list[int], list[bool]]:
    """A compacted context: ``head`` (``<task>`` and the task tokens), then what ``strategy`` keeps of
    ``turns``, no longer than ``budget - room`` tokens (``room``: what the next command needs). ``tokenizer``:
    the context's :class:`~rltutor.rollout.context.Tokenizer` (its markers and text; default the toolshell
    vocabulary's).

    Returns ``(tokens, is_summary)``: the context and, per token, whether it is a summary token (the
    ones ``train_summary`` would train). Raises if even ``head`` leaves no room."""
    check_choice("compaction", strategy, ("recent", "summary"))
    limit = budget - room
    if len(head) > limit:
        raise ValueError(
            f"the task alone takes {len(head)} tokens, so with {room} tokens of room for a command "
            f"the context budget must be at least {len(head) + room}, got {budget}; raise context_budget"
        )
    if strategy == "recent":
        kept: list[int] = []
        for cmd, obs in reversed(turns[len(turns) - keep_turns :] if keep_turns else []):
            t = turn_tokens(cmd, obs, tokenizer)
            if len(head) + len(t) + len(kept) > limit:
                break  # the older turns do not fit: keep the newest that do
            kept = t + kept
        return head + kept, [False] * (len(head) + len(kept))
    lines = summarize(turns, tokenizer)
    enc, obs_marker = (encode, [OBS]) if tokenizer is None else (tokenizer.encode, tokenizer.ids("obs"))
    while True:  # drop the oldest facts until the summary fits
        text = enc("notes:\n" + "\n".join(lines))
        summary = [*obs_marker, *text]
        if len(head) + len(summary) <= limit or not lines:
            break
        lines = lines[1:]
    if len(head) + len(summary) > limit:
        summary = []
    return head + summary, [False] * len(head) + [i >= len(obs_marker) for i in range(len(summary))]


# ----------------------------------------------------------------------------------------------
# Advantages for sub-trajectories: a registry of modes
# ----------------------------------------------------------------------------------------------
#
# An episode split into K sub-trajectories is K training rows with one outcome between them. A *mode* says
# how the rows get their learning signal. Each is one small function of the rows (:class:`SubTrajectories`),
# registered with :func:`register_sub_advantage`, and returns either
#
# * ``(rewards (R, T), group_ids (R,))`` for the estimator it names (``estimator="gae"``, ``"grpo"``...): the
#   one trainer then runs that estimator, as for any other batch; or
# * the advantages (R, T) themselves, or ``(advantages, returns)`` (``estimator=None``), for a mode no registered
#   estimator can express (``ppo_gae_across``: GAE run across the compaction boundaries). The trainer then uses
#   them instead of its estimator, and its critic regresses on the mode's returns (without any: on the plain
#   outcome's return-to-go, which :func:`sub_advantage_batch` gives as the rewards).
#
# A mode registered with ``row_weight=True`` (``slime_split``) also needs a per-episode loss weight: the run must
# set ``Config.row_weight`` (:func:`episode_row_weight`, read by rltutor.losses.aggregate).
#
# Config's checks (rltutor.config), the "auto" choice (:func:`resolve_sub_advantage`), the labs' table of arms
# and :func:`comparable_fraction` all read the registered facts, never a list of names.

BASELINES = ("critic", "groups", "episodes")
"""What a mode's advantage is measured against: a learned V(s) ("critic", no groups), the other rows of its
group ("groups", the group ids it returns) or the other whole episodes of its task ("episodes")."""


@dataclass(frozen=True)
class SubTrajectories:
    """The R rows (sub-trajectories) of a batch's E episodes, as every mode reads them.

    Rows of an episode are consecutive, in order; every row has at least one generated token.
    """

    meta: torch.Tensor
    """(R, 4) long, per row ``(task, episode, k, K)``: its task (group of G episodes), its episode, its index k
    among the episode's K sub-trajectories"""
    outcome: torch.Tensor
    """(E,) float, each episode's outcome reward"""
    mask: torch.Tensor
    """(R, T) 0/1, the generated (trained) tokens of each row"""
    values: torch.Tensor | None = None
    """(R, T) V(s_t) at collection, or None without a critic"""
    gamma: float = 1.0
    """the discount of a bootstrap"""
    lam: float = 1.0
    """GAE's lambda, for a mode that computes advantages itself"""
    num_tasks: int | None = None
    """tasks in the batch (the test of slime's batch-wide fallback)"""
    group_size: int | None = None
    """G, episodes per task"""
    boundary_values: torch.Tensor | None = None
    """(R,) V of each row's first state from the simulator's oracle (NaN on an episode's first row), or None:
    the collector's ``boundary_value`` hook (rltutor.rollout.oracle.MCBoundaryValue)"""

    @property
    def task(self) -> torch.Tensor:
        return self.meta[:, 0]  # (R,)

    @property
    def episode(self) -> torch.Tensor:
        return self.meta[:, 1]  # (R,)

    @property
    def k(self) -> torch.Tensor:
        return self.meta[:, 2]  # (R,)

    @property
    def K(self) -> torch.Tensor:
        return self.meta[:, 3]  # (R,)

    @property
    def final(self) -> torch.Tensor:
        return self.k == self.K - 1  # (R,) the episode's last sub-trajectory

    @property
    def r_out(self) -> torch.Tensor:
        return self.outcome.to(self.mask.dtype)[self.episode]  # (R,) the outcome of each row's episode

    def on_last(self, r_last: torch.Tensor) -> torch.Tensor:
        """(R, T) rewards: ``r_last`` (R,) on each row's last generated token, 0 elsewhere."""
        rewards = torch.zeros_like(self.mask)
        rewards[torch.arange(len(self.mask), device=self.mask.device), _last_valid(self.mask)] = r_last
        return rewards


@dataclass(frozen=True)
class SubAdvantage:
    """One registered mode: its function and what the rest of the package needs to know about it."""

    name: str
    fn: Callable[[SubTrajectories], tuple[torch.Tensor, torch.Tensor] | torch.Tensor]
    """``fn(rows) -> (rewards, group_ids)`` for ``estimator``, or ``-> advantages`` or ``(advantages, returns)``
    when estimator is None"""
    estimator: str | None
    """the advantage estimator its rewards and groups are made for (rltutor.advantages.ESTIMATORS); None: fn
    returns the advantages"""
    gamma: float | None
    """the discount that estimator must run at (None: the run's own)"""
    any_estimator: bool
    """its rewards and groups suit any estimator (the run's is not checked); else the run must use ``estimator``
    (at ``gamma``)"""
    needs_critic: bool
    """it reads the critic's values"""
    baseline: str
    """what its advantage is measured against (:data:`BASELINES`)"""
    algo: str
    """the preset it runs under (the labs' arm; the fix an error suggests)"""
    auto: bool
    """``sub_advantage="auto"`` picks it for runs whose critic setting equals ``needs_critic``"""
    framework: str | None
    """the system whose choice it is, where there is one (its docstring links the source)"""
    what: str
    """what it does, in one line (its function's docstring)"""
    row_weight: bool = False
    """its loss counts each episode once: the run must set ``Config.row_weight`` (:func:`episode_row_weight`)"""
    oracle: bool = False
    """it reads the oracle's boundary values (``boundary_values``; the collector's ``boundary_value`` hook)"""

    @property
    def requires(self) -> dict:
        """The Config settings a run of this mode must have (empty: any settings will do)."""
        out = {"row_weight": True} if self.row_weight else {}
        if self.any_estimator or self.estimator is None:
            return out
        return {"estimator": self.estimator, **({} if self.gamma is None else {"gamma": self.gamma}), **out}


SUB_ADVANTAGE_MODES: dict[str, SubAdvantage] = {}
"""The registry of sub-advantage modes by name (:func:`register_sub_advantage` adds one)."""
SUB_ADVANTAGES: dict[str, str] = {}
"""How an episode's sub-trajectories get rewards and groups: name -> what it does (chapter 11); filled by
:func:`register_sub_advantage`."""


def register_sub_advantage(
    name: str,
    *,
    estimator: str | None,
    algo: str,
    needs_critic: bool = False,
    gamma: float | None = None,
    any_estimator: bool = False,
    baseline: str = "groups",
    auto: bool = False,
    framework: str | None = None,
    row_weight: bool = False,
    oracle: bool = False,
):
    """Register ``fn(rows: SubTrajectories)`` as the sub-advantage mode ``name`` (see :class:`SubAdvantage` for
    the arguments). ``fn``'s docstring, first paragraph, says what it does: it becomes ``SUB_ADVANTAGES[name]``.
    Registering a name twice, or a second "auto" mode for one critic setting, is an error."""

    def deco(fn):
        if name in SUB_ADVANTAGE_MODES or name == "auto":
            raise ValueError(f"a sub-advantage mode named {name!r} is already registered (or reserved)")
        if estimator is not None:
            check_choice("advantage estimator", estimator, ESTIMATORS)
        check_choice("baseline", baseline, BASELINES)
        if auto and any(m.auto and m.needs_critic == needs_critic for m in SUB_ADVANTAGE_MODES.values()):
            raise ValueError(f"a mode with needs_critic={needs_critic} is already the 'auto' one")
        what = " ".join((fn.__doc__ or "").split("\n\n")[0].split())
        if not what:
            raise ValueError(f"sub-advantage mode {name!r}: its function needs a docstring saying what it does")
        SUB_ADVANTAGE_MODES[name] = SubAdvantage(
            name,
            fn,
            estimator,
            gamma,
            any_estimator,
            needs_critic,
            baseline,
            algo,
            auto,
            framework,
            what,
            row_weight,
            oracle,
        )
        SUB_ADVANTAGES[name] = what
        return fn

    return deco


def _last_valid(mask: torch.Tensor) -> torch.Tensor:
    """Index of the last 1 in each row of ``mask`` (B, T): (B,)."""
    T = mask.shape[1]
    pos = torch.arange(T, device=mask.device).expand_as(mask)
    return torch.where(mask > 0, pos, -1).max(1).values


def _first_valid(mask: torch.Tensor) -> torch.Tensor:
    T = mask.shape[1]
    pos = torch.arange(T, device=mask.device).expand_as(mask)
    return torch.where(mask > 0, pos, T).min(1).values


# The main test's six arms (chapter 11; :data:`MAIN_ARMS`), each named for what it does and linked to the system
# whose choice it is. Three need a critic and differ only at a compaction boundary: what the last generated token
# of row k sees of the rows after it.
@register_sub_advantage(
    "ppo_gae_across", estimator=None, algo="ppo", needs_critic=True, baseline="critic", framework="MEM1"
)
def _ppo_gae_across(b: SubTrajectories):
    """GAE over the episode's generated steps in order, across the compaction boundaries: the lambda-tail of
    row k+1 flows into row k, each row keeping its own tokens (needs a critic); its critic regresses on the
    same episode-long lambda-return

    What MEM1 trains: it stitches an episode's sub-trajectories into one sequence under a 2-D attention mask
    and runs PPO with GAE over it (Zhou et al., *MEM1*, arXiv:2506.15841, https://arxiv.org/abs/2506.15841).
    Here the rows stay apart and GAE runs on their generated steps concatenated in order (the carried-over
    context is mask 0, so it is not a step), which gives the same numbers: with s' the first generated step
    of row k+1, delta = gamma V(s') - V(s) at row k's last step, and A = delta + gamma lam A(s'). Returns
    ``(advantages, returns)``, returns = A + V, the lambda-return the critic regresses on."""
    if b.values is None:
        raise ValueError("sub_advantage='ppo_gae_across' needs critic values; use a critic or 'ppo_per_segment'")
    R, T = b.mask.shape
    E = len(b.outcome)
    valid = b.mask > 0
    n = valid.sum(1)  # (R,) generated steps per row
    start = torch.cumsum(n, 0) - n  # (R,) the row's first step, counted over the batch
    ep_start = torch.zeros(E, dtype=torch.long, device=n.device).index_put((b.episode[b.k == 0],), start[b.k == 0])
    j = (start - ep_start[b.episode])[:, None] + torch.cumsum(valid.long(), 1) - 1  # (R, T) place in the episode
    steps = torch.zeros(E, dtype=torch.long, device=n.device).index_add_(0, b.episode, n)  # (E,) steps per episode
    ep, pos = b.episode[:, None].expand(R, T)[valid], j[valid]  # (N,) each generated step's episode and place
    L = int(steps.max())
    values = torch.zeros(E, L, dtype=b.mask.dtype, device=b.mask.device)  # (E, L) the concatenated episodes
    mask = torch.zeros_like(values)
    values[ep, pos], mask[ep, pos] = b.values[valid].to(values.dtype), 1.0
    rewards = torch.zeros_like(values)
    rewards[torch.arange(E, device=values.device), steps - 1] = b.outcome.to(values.dtype)  # r on the last step
    adv_e, ret_e = gae(rewards, values, mask, b.gamma, b.lam)  # (E, L) GAE on the concatenated episode
    advantages, returns = torch.zeros_like(b.mask), torch.zeros_like(b.mask)
    advantages[valid], returns[valid] = adv_e[ep, pos], ret_e[ep, pos]
    return advantages, returns


@register_sub_advantage("ppo_bootstrap", estimator="gae", algo="ppo", needs_critic=True, baseline="critic", auto=True)
def _ppo_bootstrap(b: SubTrajectories):
    """GAE per sub-trajectory; the last reward of a compacted row gets gamma * V(first state of the next
    sub-trajectory), the lambda-tail after it dropped (needs a critic)

    The book's reading of "a critic bootstraps across the boundary": a boundary is treated like a time-limit
    cut. It differs from ``ppo_gae_across`` only by the tail: delta at a row's last step is the same, but
    A there is delta alone, so an earlier row sees what follows only through V."""
    if b.values is None:
        raise ValueError("sub_advantage='ppo_bootstrap' needs critic values; use a critic or 'ppo_per_segment'")
    R, T = b.mask.shape
    nxt = (torch.arange(R, device=b.mask.device) + 1).clamp(max=R - 1)  # the next row: the episode's next piece
    v_next = b.values[nxt, _first_valid(b.mask)[nxt].clamp(max=T - 1)]  # V(compacted state)
    return _bootstrapped(b, v_next)


def _bootstrapped(b: SubTrajectories, v_next: torch.Tensor):
    """ppo_bootstrap's rewards and groups given ``v_next`` (R,), V of the state after each row."""
    r_last = torch.where(b.final, b.r_out, 0.0) + torch.where(b.final, 0.0, b.gamma * v_next)  # r += gamma V(s')
    return b.on_last(r_last), b.task.clone()


@register_sub_advantage(
    "ppo_oracle_bootstrap", estimator="gae", algo="ppo", needs_critic=True, baseline="critic", oracle=True
)
def _ppo_oracle_bootstrap(b: SubTrajectories):
    """ppo_bootstrap with V at each compaction boundary from Monte-Carlo rollouts in the simulator, not the
    critic: the ceiling of what any critic could give the bootstrap (the critic still serves GAE inside a row)

    The oracle arm of chapter 11, no framework's choice: a critic that knew the policy's true V at the states
    a bootstrap reads. The values come from the collector's ``boundary_value`` hook
    (:class:`rltutor.rollout.oracle.MCBoundaryValue`: ``n`` rollouts from copies of the episode's state)."""
    if b.boundary_values is None:
        raise ValueError(
            "sub_advantage='ppo_oracle_bootstrap' reads the oracle's boundary values: give the collector "
            "boundary_value=rltutor.rollout.oracle.MCBoundaryValue(...) (rltutor.build.agent_collector does)"
        )
    R = len(b.mask)
    nxt = (torch.arange(R, device=b.mask.device) + 1).clamp(max=R - 1)  # the next row: the episode's next piece
    v_next = b.boundary_values.to(b.mask.dtype)[nxt]  # (R,) V_oracle(first state of the next row)
    if torch.isnan(v_next[~b.final]).any():
        raise ValueError("an oracle boundary value is missing (NaN) at a compaction boundary")
    v_next = torch.where(b.final, 0.0, v_next)  # an episode's last row bootstraps nothing
    return _bootstrapped(b, v_next)


@register_sub_advantage("ppo_per_segment", estimator="gae", algo="ppo", baseline="critic", framework="verl")
def _ppo_per_segment(b: SubTrajectories):
    """GAE per sub-trajectory; the value after a compaction boundary is 0 and only the last row carries the
    outcome (renamed from ``ppo_no_bootstrap``)

    Each segment is its own episode to GAE. verl's multi-trajectory agent loop also computes GAE per
    sub-trajectory, but gives every sub-trajectory the shared reward
    (https://verl.readthedocs.io/en/latest/advance/agent_loop.html; context compression there is still an
    open RFC, https://github.com/volcengine/verl/issues/5375). An earlier edition called this "slime's PPO
    path"; slime's segments carry whatever reward its generator assigns (the documented one is r/K:
    ``slime_split``)."""
    return b.on_last(torch.where(b.final, b.r_out, 0.0)), b.task.clone()


# The critic-free arms give rewards and groups that any estimator reads: GRPO's family over the groups, as their
# lab arm runs them, or a critic-free return-to-go (what "auto" gives ``--algo reinforce``).
def _slime_groups(b: SubTrajectories) -> torch.Tensor:
    """slime's groups: by task when the rows are tasks x G, else one batch-wide group (its fallback)."""
    if b.num_tasks is None or b.group_size is None or len(b.mask) != b.num_tasks * b.group_size:
        return torch.zeros_like(b.task)  # rows are not prompts x G: one batch-wide group
    return b.task.clone()


@register_sub_advantage(
    "slime_split", estimator="grpo", algo="grpo", gamma=1.0, any_estimator=True, row_weight=True, framework="slime"
)
def _slime_split(b: SubTrajectories):
    """each of an episode's K sub-trajectories gets outcome / K; groups by task when rows == tasks x G, else one
    batch-wide group; the loss counts each episode once (row_weight)

    slime as documented: a compacted rollout becomes K samples sharing a ``rollout_id``, the reward is split
    as r/K across them, and the per-rollout-mean loss reducer (``rollout_mask_sums``) counts the trajectory
    once (https://github.com/THUDM/slime/blob/main/examples/coding_agent_rl/README.md, "Fan-out Semantics");
    group normalisation falls back to one batch-wide group when sample counts are uneven
    (``_post_process_rewards`` in https://github.com/THUDM/slime/blob/main/slime/ray/rollout.py). The
    reducer is :func:`episode_row_weight` (``row_weight=True``, which this mode requires)."""
    return b.on_last(b.r_out / b.K.to(b.mask.dtype)), _slime_groups(b)  # r = outcome / K


@register_sub_advantage(
    "full_outcome_batch_group", estimator="grpo", algo="grpo", gamma=1.0, any_estimator=True, auto=True
)
def _full_outcome_batch_group(b: SubTrajectories):
    """every sub-trajectory gets the episode's full outcome reward; groups by task when rows == tasks x G, else
    the whole batch is one group (renamed from ``slime_grpo``)

    slime's batch-wide fallback (``_post_process_rewards`` in
    https://github.com/THUDM/slime/blob/main/slime/ray/rollout.py) without its r/K split or its per-rollout
    reducer: each row is a sample with the whole outcome and a per-row loss, so an episode of K rows weighs K
    times. An earlier edition called it slime's; slime documents ``slime_split``."""
    return b.on_last(b.r_out), _slime_groups(b)


@register_sub_advantage(
    "broadcast_grpo",
    estimator="reinforce",
    algo="grpo",
    gamma=1.0,
    baseline="episodes",
    framework="SkyRL, ReSum",
)
def _broadcast_grpo(b: SubTrajectories):
    """the episode's group advantage (GRPO over its G episodes) on every sub-trajectory (use with
    estimator='reinforce', gamma=1: the return-to-go is that advantage)

    SkyRL's ``step_wise_trajectories`` computes the advantage on an episode's final step and copies it to every
    earlier step (https://github.com/NovaSky-AI/SkyRL); ReSum-GRPO does the same for the segments of a
    summarised search episode (Wu et al., *ReSum*, arXiv:2509.13313). Groups are whole episodes of one task,
    fair by construction; what is left is per-call credit: one number for every row of an episode."""
    E = len(b.outcome)
    ep_task = torch.zeros(E, dtype=torch.long, device=b.mask.device).index_put((b.episode,), b.task)  # (E,)
    a = group_advantages(b.outcome.to(b.mask.dtype), ep_task, "grpo")  # (E,) the episodes' GRPO advantages
    return b.on_last(a[b.episode]), b.task.clone()


# Labelled variants, outside the main test.
@register_sub_advantage("split_reward", estimator="grpo", algo="grpo", gamma=1.0, any_estimator=True)
def _split_reward(b: SubTrajectories):
    """each of an episode's K sub-trajectories gets outcome / K; groups by task; a per-row loss (a variant:
    ``slime_split`` subsumes it)

    slime's r/K without its batch-wide fallback or its per-rollout reducer; kept because stored runs
    (``rltutor/data/agents/compaction_other.csv``) use it."""
    return b.on_last(b.r_out / b.K.to(b.mask.dtype)), b.task.clone()  # r = outcome / K


@register_sub_advantage("index_groups", estimator="grpo", algo="grpo", gamma=1.0, any_estimator=True)
def _index_groups(b: SubTrajectories):
    """every sub-trajectory gets the outcome; groups by (task, sub-trajectory index), an index reached by
    fewer than 2 episodes joins the last index reached by at least 2 (a variant, no framework's choice)"""
    task, k = b.task, b.k
    k_eff = k.clone()
    for t in task.unique().tolist():
        in_t = task == t
        reached = torch.bincount(k[in_t])  # episodes of task t reaching index k (one row each)
        k2 = int((reached >= 2).nonzero().max())  # the last index at least 2 episodes reach
        k_eff[in_t] = k[in_t].clamp(max=k2)
    return b.on_last(b.r_out), task * (int(b.K.max()) + 1) + k_eff


MAIN_ARMS = (
    "slime_split",
    "full_outcome_batch_group",
    "broadcast_grpo",
    "ppo_gae_across",
    "ppo_bootstrap",
    "ppo_per_segment",
)
"""The six arms of the compaction test (issue 22), each a registered mode; ``split_reward`` and ``index_groups``
are labelled variants outside it."""

RENAMED_SUB_ADVANTAGES = {"slime_grpo": "full_outcome_batch_group", "ppo_no_bootstrap": "ppo_per_segment"}
"""Old mode names -> new (2026-12-01): the modes are named for what they do. Same functions, same numbers; the
stored runs' CSVs and commands were relabelled with this mapping (rltutor.experiments.agents.relabel_stored)."""


def episode_row_weight(meta: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(R,) per-row loss weights that count every episode once: w_i = (R / E) * n_i / N_e, with n_i the generated
    tokens of row i, N_e those of its episode e and E the episodes in the batch.

    Normalised once over the whole batch (mean 1 over its R rows; every episode's rows sum to R / E), never per
    minibatch: :func:`rltutor.losses.aggregate` multiplies each row's token mean by w_i and averages over rows,
    so under it an episode's loss is the mean over all its generated tokens, and the batch's loss the mean over
    episodes (slime's per-rollout reducer). ``meta``: (R, 4) ``(task, episode, k, K)``; ``mask``: (R, T)."""
    n = (mask > 0).sum(1).to(mask.dtype)  # (R,) n_i
    episodes, inv = meta[:, 1].unique(return_inverse=True)
    N = torch.zeros(len(episodes), dtype=mask.dtype, device=mask.device).index_add_(0, inv, n)  # (E,) N_e
    return (len(n) / len(episodes)) * n / N[inv]


# ----------------------------------------------------------------------------------------------
# Entry points
# ----------------------------------------------------------------------------------------------


def resolve_sub_advantage(name: str, critic: bool) -> str:
    """``name``, or for ``"auto"`` the mode registered with ``auto=True`` for this critic setting (today
    ppo_bootstrap with a critic, full_outcome_batch_group without). A renamed mode's old name is refused with
    its new one (:data:`RENAMED_SUB_ADVANTAGES`)."""
    if name in RENAMED_SUB_ADVANTAGES:
        raise ValueError(
            f"sub_advantage {name!r} was renamed {RENAMED_SUB_ADVANTAGES[name]!r} (the same mode, named for what "
            "it does); use the new name"
        )
    if name != "auto":
        return check_choice("sub_advantage", name, SUB_ADVANTAGE_MODES)
    picks = [n for n, m in SUB_ADVANTAGE_MODES.items() if m.auto and m.needs_critic == bool(critic)]
    if not picks:
        raise ValueError(f"no sub-advantage mode is registered as 'auto' for critic={critic}; name one")
    return picks[0]


def sub_advantage_batch(
    mode: str,
    meta: torch.Tensor,
    outcome: torch.Tensor,
    mask: torch.Tensor,
    values: torch.Tensor | None = None,
    gamma: float = 1.0,
    num_tasks: int | None = None,
    group_size: int | None = None,
    lam: float = 1.0,
    row_weight: bool = False,
    boundary_values: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """The batch keys ``mode`` gives the trainer for R sub-trajectory rows (arguments: :class:`SubTrajectories`).

    Always ``"rewards"`` (R, T) and ``"group_ids"`` (R,). A mode registered with ``estimator=None`` also gives
    ``"advantages"`` (R, T), which the trainer uses as they are instead of the run's estimator, and, when the
    mode returns them, ``"returns"`` (R, T), its critic's target; its ``"rewards"`` are then the plain outcome
    on each episode's last row (the critic's target when there are no returns, and the logged metrics) and its
    groups the tasks. Every reward sits on a row's last generated token. With ``row_weight`` (a mode registered
    with ``row_weight=True`` needs it) also ``"row_weight"`` (R,), :func:`episode_row_weight`.
    ``boundary_values`` (R,): the oracle's V at each row's first state, which a mode registered with
    ``oracle=True`` (``ppo_oracle_bootstrap``) reads.
    """
    check_choice("sub_advantage", mode, SUB_ADVANTAGE_MODES)
    rows = SubTrajectories(meta, outcome, mask, values, gamma, lam, num_tasks, group_size, boundary_values)
    if (_last_valid(mask) < 0).any():
        raise ValueError("every row needs at least one generated token (mask 1)")
    m = SUB_ADVANTAGE_MODES[mode]
    if m.row_weight and not row_weight:
        raise ValueError(f"sub_advantage={mode!r} counts each episode once: pass row_weight=True (Config.row_weight)")
    extra = {"row_weight": episode_row_weight(meta, mask)} if row_weight else {}
    if m.estimator is not None:
        rewards, group_ids = m.fn(rows)
        return {"rewards": rewards, "group_ids": group_ids, **extra}
    out = m.fn(rows)
    advantages, returns = out if isinstance(out, tuple) else (out, None)
    batch = {
        "advantages": advantages * mask,
        "rewards": rows.on_last(torch.where(rows.final, rows.r_out, 0.0)),
        "group_ids": rows.task.clone(),
        **extra,
    }
    if returns is not None:
        batch["returns"] = returns * mask
    return batch


def assign_rewards(
    mode: str,
    meta: torch.Tensor,
    outcome: torch.Tensor,
    mask: torch.Tensor,
    values: torch.Tensor | None = None,
    gamma: float = 1.0,
    num_tasks: int | None = None,
    group_size: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rewards (R, T) and group ids (R,) of R sub-trajectory rows under the ``mode`` of :data:`SUB_ADVANTAGES`.

    Args:
        mode: a name in :data:`SUB_ADVANTAGES` whose ``estimator`` is not None.
        meta: (R, 4) long, per row ``(task, episode, k, K)``: its task (group of G episodes), its episode,
            its index k among the episode's K sub-trajectories. Rows of an episode are consecutive, in order.
        outcome: (E,) float, each episode's outcome reward.
        mask: (R, T) 0/1, the generated (trained) tokens of each row; every row has at least one.
        values: (R, T) V(s_t) at collection (``ppo_bootstrap`` reads the next row's first one).
        gamma: the discount of the bootstrap.
        num_tasks, group_size: the batch's tasks and G (the test of slime's batch-wide fallback).

    Every reward sits on a row's last generated token. A mode that gives advantages directly is refused here
    (its rewards alone would train the wrong thing): use :func:`sub_advantage_batch`. A mode whose loss counts
    each episode once (``slime_split``) gets its rewards and groups here; its loss weight is
    :func:`episode_row_weight` (``sub_advantage_batch(..., row_weight=True)``).
    """
    m = SUB_ADVANTAGE_MODES.get(mode)
    if m is not None and m.estimator is None:
        raise ValueError(
            f"sub_advantage={mode!r} gives the advantages themselves (estimator=None), not rewards for an "
            "estimator; call rltutor.rollout.compaction.sub_advantage_batch and use its 'advantages'"
        )
    row_weight = m is not None and m.row_weight
    out = sub_advantage_batch(mode, meta, outcome, mask, values, gamma, num_tasks, group_size, row_weight=row_weight)
    return out["rewards"], out["group_ids"]


def comparable_rows(group_ids: torch.Tensor, meta: torch.Tensor) -> torch.Tensor:
    """Per row (R,) bool: does the row sit in a group of *comparable* samples? A group is comparable when it
    holds at least 2 rows, all of one task, at most one row per episode: a group baseline then compares
    whole attempts at one task, as GRPO assumes. ``meta``: (R, 4) ``(task, episode, k, K)``, as in
    :func:`assign_rewards`."""
    out = torch.zeros(len(group_ids), dtype=torch.bool, device=group_ids.device)
    for g in group_ids.unique():
        rows = group_ids == g
        m = meta[rows]
        n = int(rows.sum())
        out[rows] = n >= 2 and m[:, 0].unique().numel() == 1 and m[:, 1].unique().numel() == n
    return out


def comparable_fraction(mode: str, group_ids: torch.Tensor, meta: torch.Tensor) -> float:
    """The share of rows whose advantage comes from a comparison within a group of comparable samples
    (:func:`comparable_rows`), by the mode's registered baseline: NaN for a critic's ("critic": no groups);
    for "episodes" (``broadcast_grpo``, whose groups are whole episodes of one task) the share of rows whose
    episode has at least one other episode of its task; else over the mode's ``group_ids``."""
    baseline = SUB_ADVANTAGE_MODES[check_choice("sub_advantage", mode, SUB_ADVANTAGE_MODES)].baseline
    if baseline == "critic":
        return float("nan")
    if baseline == "episodes":
        episodes_per_task = torch.zeros(int(meta[:, 0].max()) + 1, dtype=torch.long, device=meta.device)
        first = meta[:, 2] == 0
        episodes_per_task.index_add_(0, meta[first, 0], torch.ones_like(meta[first, 0]))
        return float((episodes_per_task[meta[:, 0]] >= 2).float().mean())
    return float(comparable_rows(group_ids, meta).float().mean())
