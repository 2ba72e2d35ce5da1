"""Multi-turn agents: one collector, :class:`AgentCollector`, for every agent policy (chapter 11).

An episode is a conversation with a tool-using environment (:class:`~rltutor.envs.toolshell.ToolShell`,
or a :class:`~rltutor.guard.wrapper.GuardedEnv` around one). Each turn the *chooser* gives a command, the
environment answers, and the episode's :class:`~rltutor.rollout.context.Context` grows::

    <task> task statement  <cmd> c o m m a n d <eos> <obs> observation  <cmd> ... <eos> <obs> ...
    ^ environment tokens    ^env ^ the command       ^ environment tokens (mask 0, but attended to)

When the next turn might not fit in ``context_budget`` tokens the context is compacted
(:mod:`rltutor.rollout.compaction`) and the episode continues in a new sub-trajectory. Two choosers:

* :class:`TokenChooser`: a language model (:class:`~rltutor.models.lm_policy.LMPolicy` over TinyGPT)
  *writes* each command token by token (:func:`sample_commands`) until ``<eos>`` or ``max_cmd_tokens``.
  Its rows are the sub-trajectories' token sequences (below); ``env_steps`` counts generated tokens.
* :class:`~rltutor.rollout.templates.TemplateChooser`: a
  :class:`~rltutor.models.template_policy.TemplatePolicy` *picks* each command among candidates built
  from what it has read (its own memory and features); one row per sub-trajectory, one step per turn;
  ``env_steps`` counts turns.

A chooser has ``start(statements, envs)`` (a new batch of episodes), ``choose(policy, live, contexts,
generator) -> [Choice]``, ``observe(i, obs, info, compacted)``, ``demo(i, command) -> Choice`` (a scripted
command, for the warm start), ``rows(episodes, policy, device) -> (batch, meta)``, ``metrics(...)`` (its
own extra metrics), ``clone(...)`` (the supervised warm start) and ``counts_tokens`` (what an env step is).

The token chooser's batch (the contract of :mod:`rltutor.rollout`), one row per sub-trajectory, padded to
width L: ``tokens`` (R, L), the whole token sequence, carried-over context first; ``prompt_len`` (R,) = 1
(the row's actions are ``tokens[:, 1:]`` (R, L - 1), so
:meth:`rltutor.models.lm_policy.LMPolicy.evaluate` runs one causal forward pass and reads
log pi(token_{j+1} | tokens_<=j) and V at *every* position); ``mask`` (R, L - 1): 1 on generated command
tokens (and on summary tokens if ``train_summary``): tool-token masking, the observations are read but not
trained, and :func:`rltutor.advantages.gae` carries the value and TD error across the masked gaps, so a
tool output between two commands does not count as time passing; ``logp`` (R, L - 1); ``values`` (R,
L - 1) with a critic. For both choosers ``rewards`` and ``group_ids`` come from
:func:`rltutor.rollout.compaction.sub_advantage_batch` under ``sub_advantage`` (the episode's outcome on its
last trained step; ``ppo_gae_across`` adds its own ``advantages`` and ``returns``, ``row_weight=True`` a
per-episode loss weight ``row_weight`` (R,)), or, with ``sub_advantage=None`` (template chooser, no
compaction), each turn's reward where it is paid.

``info["metrics"]``: :func:`episode_metrics` (``solve_rate`` honest solves, ``success_rate`` any solve,
``hack_rate``, the guard's counters, ``cut_short_rate``, ``timeout_rate``, ``overflow_rate``,
``segments_per_episode``, ``mean_turns``, rates split by feasibility on mixed tasks), ``sample_time`` and
the chooser's own; the trainer logs ``episode_return`` from ``episode_returns``.

The step budget: ``collect(policy, generator, max_steps)`` starts no new round of turns once the batch has
``max_steps`` env steps; the episodes still running then end unfinished (reward 0). The trainer passes
the budget left, so a run ends within its budget plus one round (``num_tasks * group_size`` turns, of at
most ``max_cmd_tokens`` tokens each for the token chooser).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NamedTuple

import torch
import torch.nn.functional as F

from rltutor.envs.toolshell.vocab import EOS, PAD
from rltutor.models.lm_policy import LMPolicy
from rltutor.rollout.compaction import SUB_ADVANTAGE_MODES, SUB_ADVANTAGES, sub_advantage_batch
from rltutor.rollout.context import TOOLSHELL_TOKENS, Context, ContextSpec, Episode, Segment, Tokenizer
from rltutor.utils import check_choice, check_int, check_number

__all__ = [
    "AgentCollector",
    "TokenChooser",
    "Choice",
    "Segment",
    "Episode",
    "episode_metrics",
    "play_scripted",
    "demonstrations",
    "sample_commands",
    "episodes_to_batch",
]


class Choice(NamedTuple):
    """One turn's command: the text the environment runs, its tokens in the context (``<eos>`` included when
    there is one), their behaviour log-probs, and what the chooser keeps to build its rows (or ``None``)."""

    text: str
    tokens: list[int]
    logp: list[float]
    step: dict | None = None


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


class TokenChooser:
    """A language model writes each command (:func:`sample_commands`); its rows are the sub-trajectories'
    tokens (:func:`episodes_to_batch`), trained on the generated ones. ``max_cmd_tokens``: commands are cut
    there (the collector passes its :class:`~rltutor.rollout.context.ContextSpec`'s)."""

    counts_tokens = True
    turn_rows = False  # rows are token sequences, not one step per turn

    def __init__(self, max_cmd_tokens: int = ContextSpec.max_cmd_tokens, tokenizer: Tokenizer = TOOLSHELL_TOKENS):
        self.max_cmd = check_int("max_cmd_tokens", max_cmd_tokens, 1)
        self.tok = tokenizer

    def start(self, statements: list[str], envs: list) -> None:
        """Nothing to remember between turns: the context is the model's memory."""

    def choose(self, policy, live: list[int], contexts: list[Context], generator=None) -> list[Choice]:
        cmds, logps = sample_commands(policy, [c.prompt() for c in contexts], self.max_cmd, generator)
        eos = self.tok.eos
        return [Choice(self.tok.decode([t for t in c if t != eos]), c, lp) for c, lp in zip(cmds, logps, strict=True)]

    def demo(self, i: int, command: str) -> Choice:
        """A scripted command, encoded and ended with ``<eos>`` (cut to ``max_cmd_tokens``, and run as cut)."""
        tokens = [*self.tok.encode(command), self.tok.eos][: self.max_cmd]
        return Choice(self.tok.decode([t for t in tokens if t != self.tok.eos]), tokens, [0.0] * len(tokens))

    def observe(self, i: int, obs: str, info: dict, compacted: str | None) -> None:
        """Nothing to do: the observation is in the context."""

    def rows(self, episodes: list[Episode], policy, device) -> tuple[dict, torch.Tensor]:
        batch, meta = episodes_to_batch(episodes, device)
        train_summary = bool(torch.isnan(batch["logp"]).any())  # scripted summary tokens to be trained
        if policy.has_critic or train_summary:
            ev = policy.evaluate(batch)  # V(s_t) at every position; log-probs for the summary tokens
            if policy.has_critic:
                batch["values"] = ev["values"] * batch["mask"]
            if train_summary:  # behaviour log-probs of scripted tokens = the policy's at collection
                batch["logp"] = torch.where(torch.isnan(batch["logp"]), ev["logp"], batch["logp"])
        return batch, meta

    def metrics(self, batch: dict, meta: torch.Tensor, episodes: list[Episode], sub_advantage, gamma, policy) -> dict:
        return {}

    def clone(
        self,
        model,
        episodes: list[Episode],
        steps: int = 200,
        lr: float = 3e-3,
        generator=None,
        optimizer: torch.optim.Optimizer | None = None,
        batch_size: int = 32,
    ) -> list:
        """The supervised warm start of ``model`` (the TinyGPT): cross-entropy on the trained (generated)
        tokens of the demonstrations' sub-trajectories only, the positions RL trains, in minibatches of
        ``batch_size`` rows. ``optimizer``: one to go on with (a curriculum's stages share its moments and
        its learning-rate schedule; ``lr`` is then unused); by default a fresh AdamW at ``lr``. Returns the
        loss of each step."""
        check_int("steps", steps, 0)
        check_int("batch_size", batch_size, 1)
        device = next(model.parameters()).device
        rows, _ = episodes_to_batch(episodes)
        tokens, mask = rows["tokens"], rows["mask"]  # (R, L), (R, L - 1)
        opt = optimizer
        if opt is None:
            opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr, weight_decay=0.0)
        losses = []
        model.train()
        for _ in range(steps):
            idx = torch.randint(0, len(tokens), (min(batch_size, len(tokens)),), generator=generator)
            m = mask[idx].to(device)
            width = int((m > 0).nonzero()[:, 1].max()) + 2  # drop the padding after the last trained token
            x = tokens[idx, :width].to(device)
            losses.append(sft_step(model, opt, x, m[:, : width - 1]))
        return losses


def sft_step(model, opt: torch.optim.Optimizer, tokens: torch.Tensor, loss_mask: torch.Tensor) -> float:
    """One step of next-token cross-entropy on ``tokens`` (n, L), counted where ``loss_mask`` (n, L - 1) is 1
    (position j predicts token j + 1). Both warm starts of a TinyGPT, token tasks' and the agent's, take it."""
    logits, _ = model(tokens[:, :-1])  # (n, L - 1, V)
    nll = F.cross_entropy(logits.transpose(1, 2), tokens[:, 1:], reduction="none")  # (n, L - 1)
    loss = (nll * loss_mask).sum() / loss_mask.sum()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.item()


def play_scripted(
    env,
    commands: list[str],
    task: int = 0,
    spec: ContextSpec | None = None,
    chooser=None,
    statement: str | None = None,
    **settings,
) -> Episode:
    """Play ``commands`` (e.g. :func:`rltutor.envs.toolshell.scripted_solver`'s) in ``env`` from its current
    task (the caller has reset it; ``statement``: its task statement, by default ``env.task.statement``)
    through the same context and compaction logic as the collector: the demonstrations of the warm start.
    ``spec`` or ``settings`` (:class:`~rltutor.rollout.context.ContextSpec`'s fields): the context;
    ``chooser``: whose ``demo`` turns each command into a turn (default a :class:`TokenChooser`)."""
    spec = spec if spec is not None else ContextSpec(**settings)
    chooser = chooser if chooser is not None else TokenChooser(spec.max_cmd_tokens)
    statement = env.task.statement if statement is None else statement
    ctx = Context(statement, spec, task, chooser.tok)
    chooser.start([statement], [env])
    ep = ctx.episode
    for c in commands:
        choice = chooser.demo(0, c)
        obs, reward, done, info = env.step(choice.text)
        ep.steps.append(choice.step)
        compacted = ctx.add_turn(choice.tokens, choice.logp, obs, reward, done)  # no turn cost: no return needed
        chooser.observe(0, obs, info, compacted)
        if ep.done:
            break
    if not ep.done:
        ctx.finish(0.0)
    ep.record = dict(getattr(env, "episode", {}) or {})
    return ep


def demonstrations(make_env: Callable, solver: Callable, n: int, chooser, spec: ContextSpec, seed: int = 0) -> list:
    """``n`` episodes of ``solver(env) -> commands`` (the honest scripted solver) on fresh tasks, played
    through :func:`play_scripted`, so that the warm start sees the contexts, compactions (and, for the
    template chooser, restarted memories) RL will meet. The honest solver only: hacking, if it comes, is
    discovered by RL. Task seeds come from a generator seeded with ``seed``."""
    env = make_env()
    g = torch.Generator().manual_seed(seed)
    episodes = []
    for i in range(n):
        statement = env.reset(seed=int(torch.randint(0, 2**31 - 1, (1,), generator=g)))
        episodes.append(play_scripted(env, solver(env), task=i, spec=spec, chooser=chooser, statement=statement))
    return episodes


def _rate(records: list[dict], key: str) -> float:
    return sum(bool(r.get(key)) for r in records) / len(records)


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


def max_turns_of(env) -> int:
    """The environment's turn limit (32 when it names none)."""
    return int(getattr(env, "max_turns", 32))


def episode_metrics(episodes: list[Episode], max_turns: list[int] | None = None) -> dict:
    """The rates of a batch of episodes, from their records (``env.episode``: ``honest_solve``, ``solved``,
    ``hacked``, ``submitted`` and, behind a guard, ``guard_flagged``, ``guard_missed``,
    ``guard_decoy_turns``): ``solve_rate`` (honest), ``success_rate`` (any), ``hack_rate``,
    ``attempt_rate`` (a hack tried: flagged or done), ``intercepts_per_episode``, ``missed_per_episode``,
    ``decoy_turns_per_episode``, ``cut_short_rate`` (ended by the guard), ``timeout_rate`` (no submit,
    not cut), ``overflow_rate`` (ended by the budget with ``compaction="none"``), ``segments_per_episode``,
    ``mean_turns``; with ``max_turns`` (per episode) and tasks that name their hops, the rates split by
    feasibility."""
    recs = [e.record for e in episodes]
    n = len(episodes)
    metrics = {
        "solve_rate": _rate(recs, "honest_solve"),
        "success_rate": _rate(recs, "solved"),
        "hack_rate": _rate(recs, "hacked"),
        "attempt_rate": sum(r.get("guard_flagged", 0) > 0 or bool(r.get("hacked")) for r in recs) / n,
        "intercepts_per_episode": sum(r.get("guard_flagged", 0) for r in recs) / n,
        "missed_per_episode": sum(r.get("guard_missed", 0) for r in recs) / n,
        "decoy_turns_per_episode": sum(r.get("guard_decoy_turns", 0) for r in recs) / n,
        "cut_short_rate": sum(e.cut for e in episodes) / n,
        "timeout_rate": sum(r.get("submitted") is None and not e.cut for r, e in zip(recs, episodes, strict=True)) / n,
        "overflow_rate": sum(e.overflow for e in episodes) / n,
        "segments_per_episode": sum(len(e.segments) for e in episodes) / n,
        "mean_turns": sum(len(e.turns) for e in episodes) / n,
    }
    if max_turns is not None and all("hops" in r for r in recs):
        metrics.update(_feasibility_metrics(recs, max_turns))
    return metrics


class AgentCollector:
    """``num_tasks`` tasks x G episodes each, played in lockstep by ``chooser``, compacted, turned into rows.

    Args:
        make_env: ``make_env() -> env`` with ``reset(seed) -> statement``, ``step(command) -> (obs, reward,
            done, info)`` and an ``episode`` dict (``solved``, ``hacked``, ``honest_solve``, ``turns``...):
            a :class:`~rltutor.envs.toolshell.ToolShell` or a :class:`~rltutor.guard.wrapper.GuardedEnv`.
        chooser: a :class:`TokenChooser` or a :class:`~rltutor.rollout.templates.TemplateChooser` (see the
            module docstring); ``None``: a :class:`TokenChooser` with the spec's ``max_cmd_tokens``.
        num_tasks: tasks per batch; group_size: G, episodes per task (one group, one task seed).
        spec: the context (:class:`~rltutor.rollout.context.ContextSpec`; default ``ContextSpec()``).
        sub_advantage: a name in :data:`~rltutor.rollout.compaction.SUB_ADVANTAGES`: each episode's outcome
            (its return) is assigned to its sub-trajectories by
            :func:`~rltutor.rollout.compaction.sub_advantage_batch`; ``None`` (a chooser with one step per turn,
            no compaction): every turn's reward where it is paid, one row per episode.
        gamma: the bootstrap's discount; lam: GAE's lambda, for a mode that computes advantages itself
            (``ppo_gae_across``); row_weight: add the batch key ``row_weight`` (every episode counts once in the
            loss; :func:`~rltutor.rollout.compaction.episode_row_weight`).
        turn_cost: reward subtracted on every turn (the price of a tool call), so an episode's return is
            ``R - turn_cost * turns``.
        boundary_value: ``boundary_value(policy, env, context, chooser, i) -> float``, called at every
            compaction boundary of episode ``i`` (after the compaction, before the next call): V of the state
            the next sub-trajectory starts from, for a mode registered with ``oracle=True``
            (``ppo_oracle_bootstrap``; :class:`rltutor.rollout.oracle.MCBoundaryValue` fills it); also in
            ``info["boundary_values"]`` (R,), NaN on an episode's first row.
    """

    def __init__(
        self,
        make_env: Callable,
        chooser=None,
        num_tasks: int = 4,
        group_size: int = 4,
        spec: ContextSpec | None = None,
        sub_advantage: str | None = "ppo_bootstrap",
        gamma: float = 1.0,
        turn_cost: float = 0.0,
        lam: float = 1.0,
        row_weight: bool = False,
        boundary_value: Callable | None = None,
    ):
        spec = ContextSpec() if spec is None else spec
        if not isinstance(spec, ContextSpec):
            raise ValueError(f"spec must be an rltutor.rollout.context.ContextSpec, got {type(spec).__name__}")
        check_int("num_tasks", num_tasks, 1)
        check_int("group_size", group_size, 1)
        self.turn_cost = check_number("turn_cost", turn_cost, 0.0, 1.0)
        chooser = TokenChooser(spec.max_cmd_tokens) if chooser is None else chooser
        if sub_advantage is not None:
            check_choice("sub_advantage", sub_advantage, SUB_ADVANTAGES)
        elif spec.compaction != "none" or not chooser.turn_rows:
            raise ValueError(
                f"sub_advantage=None puts each turn's reward where it is paid, one row per episode (a template "
                f"chooser without compaction); with compaction={spec.compaction!r} and a "
                f"{type(chooser).__name__} pass sub_advantage (one of {', '.join(SUB_ADVANTAGES)})"
            )
        if chooser.counts_tokens and chooser.max_cmd != spec.max_cmd_tokens:
            raise ValueError(
                f"the chooser writes commands of up to {chooser.max_cmd} tokens but the context keeps room for "
                f"max_cmd_tokens={spec.max_cmd_tokens}; pass TokenChooser({spec.max_cmd_tokens})"
            )
        if chooser.counts_tokens and spec.context_budget is None:
            raise ValueError(
                "a token chooser's model needs a context budget (its block_size): pass "
                "ContextSpec(context_budget=N), e.g. 512"
            )
        self.chooser, self.spec = chooser, spec
        self.num_tasks, self.group_size = num_tasks, group_size
        self.sub_advantage, self.gamma = sub_advantage, float(gamma)
        self.lam, self.row_weight = float(lam), bool(row_weight)
        if sub_advantage is not None and SUB_ADVANTAGE_MODES[sub_advantage].oracle and boundary_value is None:
            raise ValueError(
                f"sub_advantage={sub_advantage!r} reads the oracle's boundary values: pass "
                "boundary_value=rltutor.rollout.oracle.MCBoundaryValue(...) (rltutor.build.agent_collector does)"
            )
        self.boundary_value, self._boundary = boundary_value, []
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
    def run_episodes(self, policy, generator: torch.Generator | None = None, max_steps: int | None = None):
        """Play num_tasks x G episodes (G in a row per task, each group from one task seed), in lockstep;
        with ``max_steps``, no new round of turns once the episodes hold that many env steps."""
        G, ch = self.group_size, self.chooser
        seeds = torch.randint(0, 2**31 - 1, (self.num_tasks,), generator=generator).tolist()
        statements = [env.reset(seed=seeds[i // G]) for i, env in enumerate(self.envs)]
        ctxs = [Context(st, self.spec, i // G, ch.tok) for i, st in enumerate(statements)]
        ch.start(statements, self.envs)
        self._boundary = [[] for _ in ctxs]
        steps = 0
        while True:
            live = [i for i, c in enumerate(ctxs) if not c.episode.done]
            if not live:
                break
            if max_steps is not None and steps >= max_steps:  # the step budget: the rest end unfinished
                for i in live:
                    ctxs[i].finish(0.0)
                break
            for i, choice in zip(live, ch.choose(policy, live, [ctxs[i] for i in live], generator), strict=True):
                obs, reward, done, info = self.envs[i].step(choice.text)
                ep = ctxs[i].episode
                ep.steps.append(choice.step)
                compacted = ctxs[i].add_turn(choice.tokens, choice.logp, obs, reward, done, self.turn_cost)
                if done:
                    ep.cut = (info.get("guard") or {}).get("action") == "end"
                ch.observe(i, obs, info, compacted)
                if compacted is not None and self.boundary_value is not None:  # V of the next row's first state
                    self._boundary[i].append(float(self.boundary_value(policy, self.envs[i], ctxs[i], ch, i)))
                steps += len(choice.tokens) if ch.counts_tokens else 1
        episodes = [c.episode for c in ctxs]
        for ep, env in zip(episodes, self.envs, strict=True):
            ep.record = dict(getattr(env, "episode", {}) or {})
        return episodes

    @torch.no_grad()
    def collect(self, policy, generator: torch.Generator | None = None, max_steps: int | None = None):
        device = next(policy.parameters()).device
        t0 = time.perf_counter()
        episodes = self.run_episodes(policy, generator, max_steps)
        t_sample = time.perf_counter() - t0
        batch, meta = self.chooser.rows(episodes, policy, device)
        returns = [e.score for e in episodes]
        bv = None
        if self.boundary_value is not None:  # (R,) the hook's V at each row's first state; NaN on first rows
            bv = torch.tensor([self._boundary[e][k - 1] if k > 0 else float("nan") for _, e, k, _ in meta.tolist()])
        if self.sub_advantage is not None:
            outcome = torch.tensor(returns, dtype=batch["mask"].dtype, device=device)
            batch.update(  # rewards, group ids (and a mode's own advantages and returns, a row_weight)
                sub_advantage_batch(
                    self.sub_advantage,
                    meta,
                    outcome,
                    batch["mask"],
                    batch.get("values"),
                    self.gamma,
                    num_tasks=self.num_tasks,
                    group_size=self.group_size,
                    lam=self.lam,
                    row_weight=self.row_weight,
                    boundary_values=None if bv is None else bv.to(device),
                )
            )
        if not policy.has_critic:
            batch.pop("values", None)
        metrics = episode_metrics(episodes, [max_turns_of(env) for env in self.envs])
        metrics["sample_time"] = t_sample
        metrics.update(self.chooser.metrics(batch, meta, episodes, self.sub_advantage, self.gamma, policy))
        if self.chooser.counts_tokens:
            env_steps = sum(len(c) for e in episodes for c, _ in e.turns)  # generated tokens
        else:
            env_steps = sum(len(e.turns) for e in episodes)  # turns
        info = {
            "episode_returns": returns,
            "episode_lengths": [len(e.turns) for e in episodes],
            "env_steps": env_steps,
            "metrics": metrics,
            "meta": meta,  # (R, 4) (task, episode, k, K) per row, as assign_rewards takes
            **({"boundary_values": bv} if bv is not None else {}),
        }
        return batch, info
