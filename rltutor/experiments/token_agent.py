"""Can the token agent learn toolshell at CPU scale? A curriculum warm start, measured (chapter 11).

``--agent-policy tokens`` is a TinyGPT (:func:`rltutor.models.lm_policy.make_model`, 2 layers, width 64,
block_size 192) that writes each command token by token in the word-level toolshell vocabulary
(:mod:`rltutor.envs.toolshell.vocab`: one token per word, digit or symbol). RL needs it to solve some tasks
first, so it is warm-started by supervised cloning of the scripted honest solver
(:meth:`rltutor.rollout.agent.TokenChooser.clone`: cross-entropy on the command tokens only, the
observations read but not trained). This lab asks how far that warm start gets within a CPU budget.

The warm start (:func:`warm_start`) is a **curriculum over hops**: stage k clones demonstrations of
tasks with 1 to k hops (an honest solve of hops + 2 calls: ``cat README.md``, one ``cat`` per hop,
``submit``), so the first stage learns the two calls every task shares and the copy of one path, and
each later stage adds one more copy of a path read from the last observation, while the earlier tasks
stay in the mix (no forgetting). One AdamW optimizer runs through all stages, at ``lr`` after a linear
warmup of ``warmup`` steps. The tasks and context are the chapter's command for the token agent
(:data:`SPEC`: 192 tokens, ``"summary"`` compaction; :data:`ENV`: ToolShell's defaults), and an
evaluated episode gets :data:`EVAL_TURNS` = 8 calls, so every task of 1 to 3 hops is feasible.

At checkpoints (every ``eval_every`` steps and at each stage's end) :func:`solve_rates` plays ``n_eval``
fixed tasks of each hop count, greedily (the most likely token each time) and by sampling at
temperature 1, and counts honest solves: a reader gets ``solved`` of ``n`` and so an interval
(:func:`summary` adds a Wilson 95% interval). The clock is the process's CPU time of the training
steps alone (``time.process_time``; evaluations and demonstrations excluded), run with one thread.

Budget: the run is defined by steps, not by seconds, so a seed reproduces exactly (every number except
the CPU seconds). :data:`STAGE_STEPS` was sized from a profile of one step on the machine that stored the
data, to spend at most about 15 CPU-minutes in all.

Command line (the stored measurement, ``rltutor/data/agents/token_agent.csv`` and ``.cmd``)::

    python -m rltutor.experiments.token_agent --out rltutor/data/agents/token_agent.csv

The chapter reads it with :func:`final` and :func:`headline`; the view that draws it is
``rltutor.views.curves.token_agent_curve``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from types import SimpleNamespace

import pandas as pd
import torch

from rltutor.envs.toolshell import ToolShell, scripted_solver
from rltutor.envs.toolshell.vocab import VOCAB
from rltutor.models.lm_policy import make_model
from rltutor.rollout.agent import AgentCollector, TokenChooser, demonstrations
from rltutor.rollout.context import ContextSpec
from rltutor.utils import check_int, check_number

__all__ = [
    "SPEC",
    "ENV",
    "EVAL_TURNS",
    "HOPS",
    "STAGE_STEPS",
    "COLUMNS",
    "curriculum",
    "make_agent",
    "solve_rates",
    "warm_start",
    "summary",
    "final",
    "headline",
    "main",
]

SPEC = ContextSpec(context_budget=192, compaction="summary", max_cmd_tokens=24)
"""the chapter's context for the token agent (``--context-budget 192 --compaction summary``)"""
ENV = {"max_turns": 32, "max_output_chars": 400}
"""ToolShell's defaults (what ``rltutor train --env toolshell --agent-policy tokens`` plays, and what the
demonstrations are played in): with 32 calls every task of up to 30 hops has an honest solve"""
EVAL_TURNS = 8
"""the calls an evaluated episode gets: an honest solve of up to 3 hops takes at most 5, so every evaluated
task stays feasible, and an agent that never submits costs 8 turns of up to 24 tokens, not 32 (an
untrained model's evaluation at 32 turns took minutes)"""
HOPS = (1, 2, 3)
"""the curriculum's stages: up to 3 hops, the default task's (ToolShell(hops=3))"""
STAGE_STEPS = 1200
"""supervised steps per stage (batches of 32 rows); sized from a profile (``--profile``: about 0.15 CPU s a
step on the machine that stored the data), so the three stages train for about 10 CPU-minutes and, with the
evaluations, the run stays within about 15"""
COLUMNS = ("seed", "stage", "step", "cpu_s", "loss", "eval_hops", "mode", "n", "solved", "rate")
"""one row per (checkpoint, hop count, decoding): ``stage`` the curriculum's top hop count so far, ``step``
supervised steps so far, ``cpu_s`` their CPU seconds, ``loss`` the mean loss of the last ``eval_every``
steps, ``mode`` "greedy" or "sample", ``solved`` of ``n`` tasks with ``eval_hops`` hops"""


def curriculum(hops: tuple[int, ...] = HOPS) -> list[tuple[int, tuple[int, ...]]]:
    """The stages, in order: ``(k, hops trained)`` with k rising and every hop count up to k in the mix,
    e.g. ``[(1, (1,)), (2, (1, 2)), (3, (1, 2, 3))]``."""
    hops = tuple(sorted(set(hops)))
    if not hops or hops[0] < 1:
        raise ValueError(f"hops must be positive hop counts, e.g. (1, 2, 3); got {hops!r}")
    return [(k, hops[: i + 1]) for i, k in enumerate(hops)]


def make_agent(seed: int = 0, n_layer: int = 2, n_head: int = 4, n_embd: int = 64):
    """The token agent's TinyGPT as ``rltutor train --agent-policy tokens`` builds it (block_size = the
    context budget, the toolshell vocabulary), seeded with ``seed``."""
    return make_model(len(VOCAB), SPEC.context_budget, n_layer, n_head, n_embd, seed)


@torch.no_grad()
def solve_rates(model, hops: int, n: int, greedy: bool, seed: int = 0, max_turns: int = EVAL_TURNS) -> int:
    """Honest solves of ``model`` on ``n`` tasks of ``hops`` hops (the same tasks for a given ``(hops,
    seed)``), each played once: ``greedy`` picks the most likely token (temperature 1e-6, which puts all
    the probability on the argmax), otherwise sampling at temperature 1; ``max_turns`` calls each. Returns
    the count solved."""
    policy = SimpleNamespace(model=model, temperature=1e-6 if greedy else 1.0)
    collector = AgentCollector(
        lambda: ToolShell(hops=hops, **{**ENV, "max_turns": max_turns}),
        TokenChooser(SPEC.max_cmd_tokens),
        num_tasks=n,
        group_size=1,
        spec=SPEC,
    )
    g = torch.Generator().manual_seed(10_000 * (seed + 1) + hops)
    episodes = collector.run_episodes(policy, g)
    return sum(bool(e.record.get("honest_solve")) for e in episodes)


def _demos(hops: tuple[int, ...], n_demos: int, seed: int) -> list:
    chooser = TokenChooser(SPEC.max_cmd_tokens)
    out = []
    for h in hops:  # n_demos / len(hops) honest solves of each hop count in the stage's mix
        make = lambda h=h: ToolShell(hops=h, **ENV)  # noqa: E731
        out += demonstrations(make, scripted_solver, max(1, n_demos // len(hops)), chooser, SPEC, seed=seed * 100 + h)
    return out


def warm_start(
    seed: int = 0,
    stage_steps: int = STAGE_STEPS,
    hops: tuple[int, ...] = HOPS,
    eval_every: int = 600,
    n_eval: int = 16,
    lr: float = 3e-3,
    warmup: int = 50,
    batch_size: int = 32,
    n_demos: int = 256,
    n_embd: int = 64,
    eval_turns: int = EVAL_TURNS,
    model=None,
    log=None,
) -> tuple[pd.DataFrame, torch.nn.Module]:
    """The curriculum warm start (:func:`curriculum`), measured: ``stage_steps`` supervised steps per stage
    on ``n_demos`` demonstrations of its hop counts, one AdamW through all stages (``lr``, linear warmup
    over the first ``warmup`` steps: lr * min(1, (t + 1) / warmup), set every ``eval_every`` / 10 steps),
    and :func:`solve_rates` for every hop count of ``hops``, greedy and sampled, every ``eval_every`` steps
    and at each stage's end (and at step 0), ``eval_turns`` calls per episode. Returns the records
    (:data:`COLUMNS`) and the model."""
    check_int("stage_steps", stage_steps, 0)
    check_int("eval_every", eval_every, 1)
    check_int("n_eval", n_eval, 1)
    check_number("lr", lr, 0.0, 1.0)
    stages = curriculum(hops)
    model = make_agent(seed, n_embd=n_embd) if model is None else model
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr, weight_decay=0.0)
    g = torch.Generator().manual_seed(seed)
    chooser = TokenChooser(SPEC.max_cmd_tokens)
    rows, step, cpu, recent = [], 0, 0.0, []
    chunk = max(1, eval_every // 10)  # the lr is set per chunk of steps (the warmup's resolution)

    def checkpoint(stage: int) -> None:
        loss = sum(recent) / len(recent) if recent else float("nan")
        for h in stages[-1][1]:
            for mode in ("greedy", "sample"):
                solved = solve_rates(model, h, n_eval, mode == "greedy", seed, eval_turns)
                rows.append(dict(seed=seed, stage=stage, step=step, cpu_s=cpu, loss=loss, eval_hops=h, mode=mode,
                                 n=n_eval, solved=solved, rate=solved / n_eval))  # fmt: skip
        recent.clear()
        if log is not None:
            done = {r["eval_hops"]: r["solved"] for r in rows[-2 * len(stages[-1][1]) :] if r["mode"] == "greedy"}
            log(f"seed {seed} stage {stage} step {step} cpu {cpu:.0f} s loss {loss:.3f} greedy solved {done}")

    checkpoint(0)
    for k, mix in stages:
        demos = _demos(mix, n_demos, seed)
        left = stage_steps
        while left > 0:
            n = min(chunk, left, eval_every - step % eval_every)
            for group in opt.param_groups:
                group["lr"] = lr * min(1.0, (step + 1) / max(1, warmup))
            t0 = time.process_time()
            recent += chooser.clone(model, demos, steps=n, generator=g, optimizer=opt, batch_size=batch_size)
            cpu += time.process_time() - t0
            step, left = step + n, left - n
            if step % eval_every == 0 and left > 0:
                checkpoint(k)
        checkpoint(k)
    return pd.DataFrame(rows, columns=list(COLUMNS)), model


def _wilson(solved: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson 95% interval of a proportion solved / n."""
    p = solved / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """The stored records with a Wilson 95% interval (``low``, ``high``) per row, the last checkpoint of
    each stage first-class: one row per (stage, step, cpu_s, eval_hops, mode)."""
    out = df.copy()
    ci = [_wilson(int(s), int(n)) for s, n in zip(out["solved"], out["n"], strict=True)]
    out["low"], out["high"] = [c[0] for c in ci], [c[1] for c in ci]
    return out


def final(df: pd.DataFrame) -> pd.DataFrame:
    """The last checkpoint of the warm start per seed: one row per (hop count, decoding), with its interval."""
    s = summary(df)
    last = s[s["step"] == s.groupby("seed")["step"].transform("max")]
    return last[["seed", "step", "cpu_s", "eval_hops", "mode", "solved", "n", "rate", "low", "high"]].reset_index(
        drop=True
    )


def headline(df: pd.DataFrame, seed: int = 0) -> str:
    """One sentence of the stored result for ``seed`` (the command line's note on ``--agent-policy tokens``
    repeats it): the greedy solves per hop count at the warm start's end and its steps and CPU seconds."""
    f = final(df)
    f = f[(f["seed"] == seed) & (f["mode"] == "greedy")].sort_values("eval_hops")
    solved = ", ".join(f"{r.solved}/{r.n} at {r.eval_hops} hop{'s' * (r.eval_hops > 1)}" for r in f.itertuples())
    return (
        f"after a curriculum warm start of {int(f['step'].iloc[0])} supervised steps "
        f"({f['cpu_s'].iloc[0]:.0f} CPU s) it solved {solved} (greedy)"
    )


def _profile(seed: int, steps: int = 20) -> None:
    """Print the CPU seconds of one supervised step per hop count and of one evaluation."""
    model = make_agent(seed)
    chooser = TokenChooser(SPEC.max_cmd_tokens)
    g = torch.Generator().manual_seed(seed)
    for h in HOPS:
        demos = _demos((h,), 64, seed)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        t0 = time.process_time()
        chooser.clone(model, demos, steps=steps, generator=g, optimizer=opt)
        print(f"{h} hops: {(time.process_time() - t0) / steps:.3f} CPU s per step of 32 rows")
    t0 = time.process_time()
    solve_rates(model, 3, 16, greedy=True)
    print(f"one evaluation (16 tasks of 3 hops, greedy): {time.process_time() - t0:.2f} CPU s")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="The token agent's curriculum warm start, measured (chapter 11).")
    p.add_argument("--seeds", nargs="+", type=int, default=[0])
    p.add_argument("--stage-steps", type=int, default=STAGE_STEPS, help="supervised steps per curriculum stage")
    p.add_argument("--eval-every", type=int, default=600)
    p.add_argument("--n-eval", type=int, default=16, help="tasks per hop count at each checkpoint")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--profile", action="store_true", help="time one step per hop count and one evaluation")
    p.add_argument("--out", default=None, help="CSV file; FILE.cmd beside it gets the command")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    if args.profile:
        _profile(args.seeds[0])
        return 0
    if args.out is None:
        p.error("--out is required (e.g. rltutor/data/agents/token_agent.csv)")
    from rltutor.experiments.runs import store_records

    frames = []
    for seed in args.seeds:
        df, _ = warm_start(seed, args.stage_steps, eval_every=args.eval_every, n_eval=args.n_eval, lr=args.lr,
                           log=lambda s: print(s, flush=True))  # fmt: skip
        frames.append(df)
    df = pd.concat(frames, ignore_index=True)
    store_records(df, args.out, "rltutor.experiments.token_agent", argv if argv is not None else sys.argv[1:])
    print(f"wrote {args.out} ({len(df)} rows); {os.path.splitext(args.out)[0]}.cmd")
    return 0


if __name__ == "__main__":
    sys.exit(main())
