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
  (``train_summary``, default off; see :class:`~rltutor.rollout.agent.AgentCollector`).

Then how the advantages of the K sub-trajectories of an episode are assigned: :data:`SUB_ADVANTAGES`
and :func:`assign_rewards`, which turn the collected sub-trajectories into the trainer's rewards and
group ids, so that the one trainer and the registered estimators do the rest.
"""

from __future__ import annotations

import re

import torch

from rltutor.advantages import group_advantages
from rltutor.envs.toolshell.vocab import CMD, EOS, OBS, decode, encode
from rltutor.utils import check_choice

__all__ = [
    "COMPACTIONS",
    "SUB_ADVANTAGES",
    "turn_tokens",
    "summarize",
    "compact",
    "assign_rewards",
    "comparable_rows",
]

COMPACTIONS = ("none", "recent", "summary")

_FACT = re.compile(
    r"^(?:\w+ is defined in \S+|from [\w.]+ import \w+|[A-Za-z_]\w* = \w+|\w+ is the sum of .*|- \S+\.py"
    r"|answer: \S+|\s*assert .*==.*)$",
    re.M,
)


def turn_tokens(cmd: list[int], obs: list[int]) -> list[int]:
    """One turn as context tokens: ``<cmd> command <eos> <obs> observation`` (``cmd`` ends with its <eos>
    when the policy emitted one; ``obs`` is the observation's tokens without the <obs> marker)."""
    return [CMD, *cmd, OBS, *obs]


def summarize(turns: list[tuple[list[int], list[int]]]) -> list[str]:
    """The scripted summary of ``turns`` (command tokens, observation tokens): one line per turn whose
    observation holds facts, ``"COMMAND: FACT; FACT"``, oldest first. Facts are the lines that name a
    value (``X = 42``), a pointer (``X is defined in a/b.py``), an import, a sum's files, or an answer."""
    lines = []
    for cmd, obs in turns:
        facts = [m.group(0).strip() for m in _FACT.finditer(decode(obs))]
        if facts:
            command = decode([t for t in cmd if t != EOS]).replace("\n", " ")
            lines.append(f"{command}: {'; '.join(facts)}")
    return lines


def compact(
    strategy: str,
    head: list[int],
    turns: list[tuple[list[int], list[int]]],
    budget: int,
    room: int,
    keep_turns: int = 2,
) -> tuple[list[int], list[bool]]:
    """A compacted context: ``head`` (``<task>`` and the task tokens), then what ``strategy`` keeps of
    ``turns``, no longer than ``budget - room`` tokens (``room``: what the next command needs).

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
            t = turn_tokens(cmd, obs)
            if len(head) + len(t) + len(kept) > limit:
                break  # the older turns do not fit: keep the newest that do
            kept = t + kept
        return head + kept, [False] * (len(head) + len(kept))
    lines = summarize(turns)
    while True:  # drop the oldest facts until the summary fits
        text = encode("notes:\n" + "\n".join(lines))
        summary = [OBS, *text]
        if len(head) + len(summary) <= limit or not lines:
            break
        lines = lines[1:]
    if len(head) + len(summary) > limit:
        summary = []
    return head + summary, [False] * len(head) + [i > 0 for i in range(len(summary))]


# ----------------------------------------------------------------------------------------------
# Advantages for sub-trajectories
# ----------------------------------------------------------------------------------------------

SUB_ADVANTAGES = {
    "ppo_bootstrap": "GAE per sub-trajectory; the last reward of a compacted row gets gamma * V(first state of "
    "the next sub-trajectory) (needs a critic)",
    "ppo_no_bootstrap": "GAE per sub-trajectory; the value after a compaction boundary is 0 (slime's PPO path)",
    "slime_grpo": "every sub-trajectory gets the episode's outcome reward; groups by task when rows == tasks x G, "
    "else the whole batch is one group (slime's fallback)",
    "broadcast_grpo": "the episode's group advantage (GRPO over its G episodes) on every sub-trajectory "
    "(use with estimator='reinforce', gamma=1: the return-to-go is that advantage)",
    "split_reward": "each of an episode's K sub-trajectories gets outcome / K; groups by task",
    "index_groups": "every sub-trajectory gets the outcome; groups by (task, sub-trajectory index), an index "
    "reached by fewer than 2 episodes joins the last index reached by at least 2",
}
"""How an episode's sub-trajectories get rewards and groups: name -> what it does (chapter 11)."""


def _last_valid(mask: torch.Tensor) -> torch.Tensor:
    """Index of the last 1 in each row of ``mask`` (B, T): (B,)."""
    T = mask.shape[1]
    pos = torch.arange(T, device=mask.device).expand_as(mask)
    return torch.where(mask > 0, pos, -1).max(1).values


def _first_valid(mask: torch.Tensor) -> torch.Tensor:
    T = mask.shape[1]
    pos = torch.arange(T, device=mask.device).expand_as(mask)
    return torch.where(mask > 0, pos, T).min(1).values


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
        mode: a name in :data:`SUB_ADVANTAGES`.
        meta: (R, 4) long, per row ``(task, episode, k, K)``: its task (group of G episodes), its episode,
            its index k among the episode's K sub-trajectories. Rows of an episode are consecutive, in order.
        outcome: (E,) float, each episode's outcome reward.
        mask: (R, T) 0/1, the generated (trained) tokens of each row; every row has at least one.
        values: (R, T) V(s_t) at collection (``ppo_bootstrap`` reads the next row's first one).
        gamma: the discount of the bootstrap.
        num_tasks, group_size: the batch's tasks and G (``slime_grpo``'s test for its fallback).

    Every reward sits on a row's last generated token.
    """
    check_choice("sub_advantage", mode, SUB_ADVANTAGES)
    R, T = mask.shape
    task, episode, k, K = meta.unbind(1)
    last = _last_valid(mask)
    if (last < 0).any():
        raise ValueError("every row needs at least one generated token (mask 1)")
    final = k == K - 1  # (R,) the episode's last sub-trajectory
    r_out = outcome.to(mask.dtype)[episode]  # (R,) the outcome of each row's episode
    rows = torch.arange(R, device=mask.device)
    group_ids = task.clone()
    if mode in ("ppo_bootstrap", "ppo_no_bootstrap"):
        r_last = torch.where(final, r_out, 0.0)
        if mode == "ppo_bootstrap":
            if values is None:
                raise ValueError(
                    "sub_advantage='ppo_bootstrap' needs critic values; use a critic or 'ppo_no_bootstrap'"
                )
            nxt = (rows + 1).clamp(max=R - 1)  # the next row: the same episode's next sub-trajectory
            v_next = values[nxt, _first_valid(mask)[nxt].clamp(max=T - 1)]  # V(compacted state)
            r_last = r_last + torch.where(final, 0.0, gamma * v_next)  # r_last += gamma V(s_next)
    elif mode == "slime_grpo":
        r_last = r_out
        if num_tasks is None or group_size is None or R != num_tasks * group_size:
            group_ids = torch.zeros_like(task)  # slime: rows are not prompts x G, so one batch-wide group
    elif mode == "broadcast_grpo":
        ep_task = torch.zeros(len(outcome), dtype=torch.long, device=mask.device).index_put((episode,), task)
        a = group_advantages(outcome.to(mask.dtype), ep_task, "grpo")  # (E,) the episodes' GRPO advantages
        r_last = a[episode]
    elif mode == "split_reward":
        r_last = r_out / K.to(mask.dtype)
    else:  # index_groups
        r_last = r_out
        k_eff = k.clone()
        for t in task.unique().tolist():
            in_t = task == t
            reached = torch.bincount(k[in_t])  # episodes of task t reaching index k (one row each)
            k2 = int((reached >= 2).nonzero().max())  # the last index at least 2 episodes reach
            k_eff[in_t] = k[in_t].clamp(max=k2)
        group_ids = task * (int(K.max()) + 1) + k_eff
    rewards = torch.zeros_like(mask)
    rewards[rows, last] = r_last
    return rewards, group_ids


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
