"""On-policy distillation at laptop scale: GRPO experts merged into one smaller student (chapter 14).

Every run is the one trainer (:class:`rltutor.train.Trainer`) or, for the off-policy arm, supervised steps on
the teachers' samples; the teachers are TinyGPTs trained once by GRPO and stored as run folders
(``rltutor/data/distill/teacher_addition/`` and ``teacher_sequence/``: ``checkpoint.pt`` without the optimizer's
moments, so a teacher is not a run to resume, read back through the safe loader
:meth:`~rltutor.train.Trainer.read_checkpoint`, and ``config.json``). Without the stored folders
:func:`teacher_dir` retrains them from their seed (same machine, same weights).

The settings (:data:`TEACHER`, :data:`STUDENT`, :data:`TASK_OPTIONS`): teachers of width 64 (about 0.1 M
parameters), students of width 32 (about 26 k, a quarter as many), both 2 layers; addition with operands up to 19 and
the sequence task with L = 8. Every arm of a seed starts from the same warm start (a few supervised steps, so
the student is right some of the time) and spends the same budget: ``updates`` updates of ``completions``
completions each (64) and one optimizer step per update, at one learning rate. The arms (:data:`SINGLE_ARMS`,
:data:`MULTI_ARMS`):

* ``sft``: off-policy distillation: the teacher samples the completions (temperature 1) and the student takes
  one cross-entropy step on them (the tokens are the teacher's, not the student's: the same count of
  completions, not of student tokens);
* ``opd_shift``: the ``"opd"`` preset: no task reward, one completion per prompt, the advantage is the
  per-token shift -beta (log pi_theta - log pi_T) with beta = 1 (:func:`rltutor.distill.opd_shift`);
* ``opd_loss``: the reverse KL to the teacher's full next-token distribution as the loss
  (:func:`rltutor.distill.divergence`), on the student's samples;
* ``grpo``: GRPO on the task reward alone (8 prompts x 8 completions);
* ``grpo_shift``: GRPO plus the teacher's shift with beta = :data:`GRPO_SHIFT_COEF`;
* on both tasks at once (a :class:`rltutor.distill.MultiTask` student, prompts led by a task token):
  ``route`` (the ``"opd"`` preset with both teachers, each prompt scored by its task's teacher, the DeepSeek V4
  recipe), ``sft_experts`` (SFT on the experts' samples, each prompt answered by its task's teacher) and
  ``grpo_multi`` (one student trained on both tasks by GRPO, no teacher).

Measured (:func:`evaluate`, every ``eval_every`` updates and at the end, on fixed held-out prompts): greedy
accuracy per task (512 prompts), and the per-token KL(pi_theta || pi_T) to each task's teacher, the mean k1
estimate log pi_theta - log pi_T over 256 completions the student samples; per update: the completions' tokens
(``tokens``: the student's own for the on-policy arms, the teacher's for SFT), wall-clock seconds, and the
density of the training signal, ``signals``: how many separate learning signals a completion carries (GRPO: one
scalar shared by all its tokens, none where its group's rewards are all equal, so 1 - zero_std_frac; the
per-token arms: one per scored token, the mean completion length).

The command line stores the records (``rltutor/data/distill/NAME.csv``, one row per evaluation, and ``NAME.cmd``
beside it)::

    python -m rltutor.experiments.distill pilot --seeds 0 1 2 --out rltutor/data/distill/pilot.csv

Pre-stated tests
----------------
* 2026-12-02, chapter 14, stated after the two pilots and before any main run (git shows this text committed
  before ``main.csv``). Pilots, stored and never counted: ``pilot_lr2e-3`` (seed 0, lr 2e-3: GRPO and the shift
  lost accuracy from their warm start, so the learning rate was lowered for every arm) and ``pilot`` (seeds 0-2 at
  the main runs' settings). Main runs (``main``): seeds 10-16, every arm of :data:`SINGLE_ARMS` and
  :data:`MULTI_ARMS`, 150 updates of 64 completions, lr 5e-4 (:data:`LR`), an evaluation every 25 updates::

      python -m rltutor.experiments.distill main --seeds 10 11 12 13 14 15 16 --updates 150 --eval-every 25 \
          --lr 5e-4 --out rltutor/data/distill/main.csv

  Metric: greedy accuracy on the 512 fixed held-out prompts of :func:`evaluate` at a run's last update (per
  task; "both" is the mean over the two tasks). Each contrast is taken per seed (paired: the arms of a seed share
  their warm start) with a 95% t interval over the seeds (:func:`rltutor.experiments.stats.paired_row`), and the
  seven tests are decided together, Holm-corrected (the chapter's family, :func:`verdicts`), each with the
  smallest effect of interest :data:`DELTA` = 0.05, so each can come out confirmed (above 0), refuted (below 0),
  equivalent (inside +-0.05) or undecided:

  (a) ``opd_shift - grpo`` on addition: on-policy distillation by the shift against RL on the task reward, at
      the same count of student completions (confirmed: the dense teacher signal teaches more);
  (b) ``opd_loss - opd_shift`` on addition: the exact per-state reverse KL as a loss against its one-sample
      estimate as a shift (confirmed: the full distribution teaches more);
  (c) ``opd_shift - sft`` on addition: on-policy against off-policy distillation (SFT on the teacher's samples),
      at the same count of completions;
  (d) ``grpo_shift - grpo`` on addition: what the teacher's shift (beta 0.3) adds to GRPO;
  (e) ``route - sft_experts`` on both tasks: the routed student against SFT on the experts' samples;
  (f) ``route - grpo_multi`` on both tasks: the routed student against one model trained on both tasks by GRPO;
  (g) the routed student keeps both skills: per seed, the smaller over the two tasks of its end - start
      accuracy (confirmed: it gained on both; refuted: it lost on at least one).

  Why delta = 0.05: one evaluation on 512 prompts has a binomial standard error of at most 0.022 (at
  accuracy 0.5), so two runs closer than 0.05 are within about two measurement errors of one evaluation; and five
  points is the smallest gap the results this chapter is placed against would notice (the reported ones differ by
  7 to 18 points of accuracy).

  Seeds, from :func:`power` on ``pilot`` (the sd over its 3 seeds of each test's per-seed contrast; 80% power at
  delta and alpha / 7, Holm's first level): (a) 9, (b) 29, (c) 28, (d) 6, (e) 18, (f) 9, (g) 18 seeds. The CPU
  budget (2 cores shared by five jobs, about 5 minutes per seed for the eight arms, about 40 minutes in all)
  affords 7 seeds, fewer than the powered 29, so this is said before the runs: with 7 seeds, at the pilot's
  spreads, the effects each test detects at 80% power (Holm's first level) are (a) 0.060, (b) 0.131, (c) 0.129,
  (d) 0.035, (e) 0.099, (f) 0.059, (g) 0.098 of accuracy. Only (d) reaches delta; (a) and (f) come close; a test
  that does not decide at 7 seeds is reported as undecided with its detectable effect, not as evidence of no
  effect. (The pilot's own estimates are not a prediction and not counted.)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import pandas as pd
import torch

from rltutor.build import warm_start
from rltutor.config import resolve
from rltutor.distill import MultiTask, Teacher, TeacherRouter, opd_signal
from rltutor.envs import make_env
from rltutor.envs.tokens import EOS, PAD, VOCAB
from rltutor.experiments.runs import RunStore, run_all, store_records
from rltutor.experiments.stats import paired_row, seeds_for_power, t_ppf, verdict_table
from rltutor.models.lm_policy import make_model, sample
from rltutor.rollout.agent import sft_step
from rltutor.train import Trainer
from rltutor.utils import check_choice

__all__ = [
    "DATA",
    "TASKS",
    "TASK_OPTIONS",
    "TEACHER",
    "STUDENT",
    "SINGLE_ARMS",
    "MULTI_ARMS",
    "teacher_dir",
    "load_router",
    "evaluate",
    "run_arm",
    "experiment",
    "end_table",
    "gains",
    "verdicts",
    "power",
]

DATA = Path(__file__).resolve().parent.parent / "data" / "distill"
"""where the lab's stored records and teachers live"""
TASKS = ("addition", "sequence")
TASK_OPTIONS = {"addition": {"max_operand": 19}, "sequence": {"L": 8}}
"""each task's options (the teachers', the students', the multi-task student's)"""
TEACHER = dict(n_embd=64, sft_steps=1000, updates=50, lr=1e-4, seed=100)
"""the teachers: a long supervised warm start (1000 steps), then GRPO (8 prompts x 8 completions, 4 minibatches)
at a low learning rate (at this scale GRPO from a strong start holds its accuracy, it does not raise it)"""
STUDENT = dict(n_embd=32, sft_steps=100)
"""the students: half the width of the teachers, a short warm start (right some of the time)"""
COMPLETIONS = 64
"""completions per update in every arm (GRPO: 8 prompts x 8; the per-token arms: 64 prompts x 1)"""
LR = 5e-4
"""every arm's learning rate (Adam), one optimizer step per update"""
GRPO_SHIFT_COEF = 0.3
"""beta of the shift stacked on GRPO (the pure OPD arm's is the preset's 1.0)"""
SINGLE_ARMS = ("sft", "opd_shift", "opd_loss", "grpo", "grpo_shift")
"""the arms on one task (addition), one teacher"""
MULTI_ARMS = ("route", "sft_experts", "grpo_multi")
"""the arms on both tasks at once, one student"""
EVAL_PROMPTS = 512
KL_SAMPLES = 256


# ----------------------------------------------------------------------------------------------
# Teachers
# ----------------------------------------------------------------------------------------------


def teacher_config(task: str):
    check_choice("teacher task", task, TASKS)
    t = TEACHER
    return resolve(
        "grpo",
        task,
        "quick",
        sets={
            "n_embd": t["n_embd"],
            "sft_steps": t["sft_steps"],
            "lr": t["lr"],
            "seed": t["seed"],
            "env_options": dict(TASK_OPTIONS[task]),
            "eval_every": 0,
            "device": "cpu",
        },
        flags={"total_steps": 10**9},
    )


def teacher_dir(task: str, root: str | os.PathLike | None = None) -> str:
    """The run folder of ``task``'s teacher: read back if stored (``ROOT/teacher_<task>/checkpoint.pt``), else
    trained by GRPO from :data:`TEACHER`'s seed and stored there (run-or-load)."""
    folder = Path(root or DATA) / f"teacher_{task}"  # three levels under data/: package data (pyproject)
    if not (folder / "checkpoint.pt").exists():
        trainer = Trainer(teacher_config(task))
        for _ in range(TEACHER["updates"]):
            trainer.step()
        state = trainer.state_dict()  # slimmed to what a teacher needs (a few hundred kB in the repository):
        state["optimizer"] = {"state": {}, "param_groups": state["optimizer"]["param_groups"]}  # no Adam moments
        state["ref_policy"] = None
        folder.mkdir(parents=True, exist_ok=True)
        torch.save(state, folder / "checkpoint.pt")
        (folder / "config.json").write_text(json.dumps(trainer.config.to_dict(), indent=2) + "\n")
    return str(folder)


def load_router(tasks: tuple[str, ...], student_task, root=None) -> TeacherRouter:
    """The teachers of ``tasks`` (stored runs, through the safe loader) routed for ``student_task``."""
    teachers = [
        Teacher.from_state(Trainer.read_checkpoint(os.path.join(teacher_dir(t, root), "checkpoint.pt")), source=t)
        for t in tasks
    ]
    return TeacherRouter(teachers, student_task, vocab_size=getattr(student_task, "vocab_size", None))


# ----------------------------------------------------------------------------------------------
# Evaluation
# ----------------------------------------------------------------------------------------------


def teacher_table(root=None) -> pd.DataFrame:
    """Each stored teacher's greedy accuracy on its task (the evaluation's prompts), its parameters, and the
    student's parameters beside them."""
    rows = []
    for t in TASKS:
        task = make_env(t, seed=0, **TASK_OPTIONS[t])
        router = load_router((t,), task, root)
        model = router.teachers[0].model
        c = arm_config("grpo", 0, root)
        student = make_model(len(VOCAB), task.prompt_len + task.max_new_tokens, c.n_layer, c.n_head, c.n_embd, seed=0)
        rows.append(
            {
                "task": t,
                "acc": evaluate(model, task, router)[f"acc_{t}"],
                "teacher_params": sum(p.numel() for p in model.parameters()),
                "student_params": sum(p.numel() for p in student.parameters()),
                "teacher_sft_steps": TEACHER["sft_steps"],
                "teacher_grpo_updates": TEACHER["updates"],
            }
        )
    return pd.DataFrame(rows)


def _task_prompts(task, k: int | None, n: int, seed: int) -> torch.Tensor:
    """``n`` held-out prompts of task ``k`` of a :class:`MultiTask` (or of a single task, ``k`` None)."""
    g = torch.Generator().manual_seed(seed)
    if k is None:
        return task.sample_prompts(n, g)
    sub = task.subtasks[k]
    out = torch.full((n, task.prompt_len), PAD, dtype=torch.long)
    out[:, 0] = task.task_token(task.tasks[k])
    out[:, task.prompt_len - sub.prompt_len :] = sub.sample_prompts(n, g)
    return out


@torch.no_grad()
def evaluate(model, task, router: TeacherRouter, seed: int = 1234) -> dict:
    """Greedy accuracy on :data:`EVAL_PROMPTS` fixed prompts per task, and the per-token KL(pi_theta || pi_T) to
    each task's teacher: the mean k1 estimate over :data:`KL_SAMPLES` completions the student samples (temperature
    1). Keys ``acc_TASK`` and ``kl_TASK``."""
    model.eval()
    out = {}
    multi = isinstance(task, MultiTask)
    for k, name in enumerate(task.tasks if multi else [task.name]):
        kk = k if multi else None
        prompts = _task_prompts(task, kk, EVAL_PROMPTS, seed)
        greedy = sample(model, prompts, task.max_new_tokens, temperature=0.0, eos_id=EOS, pad_id=PAD)
        out[f"acc_{name}"] = task.accuracy(prompts, greedy["responses"])
        g = torch.Generator().manual_seed(seed + 1)
        prompts = _task_prompts(task, kk, KL_SAMPLES, seed + 2)
        s = sample(model, prompts, task.max_new_tokens, temperature=1.0, generator=g, eos_id=EOS, pad_id=PAD)
        batch = {"tokens": s["tokens"], "actions": s["responses"], "prompt_len": prompts.shape[1]}
        scored = router.score(batch)
        counted = s["mask"] * scored.valid
        kl = opd_signal(s["logp"], scored.logp, counted, "k1")
        out[f"kl_{name}"] = float(kl.sum() / counted.sum())
    model.train()
    return out


# ----------------------------------------------------------------------------------------------
# One run of one arm
# ----------------------------------------------------------------------------------------------


def _env(multi: bool) -> tuple[str, dict]:
    if multi:
        return "multitask", {"tasks": TASKS, **TASK_OPTIONS["addition"], **TASK_OPTIONS["sequence"]}
    return "addition", dict(TASK_OPTIONS["addition"])


def arm_config(arm: str, seed: int, root=None):
    """The trainer config of an on-policy arm (``sft`` arms use the same warm start, the settings :data:`STUDENT`)."""
    check_choice("arm", arm, (*SINGLE_ARMS, *MULTI_ARMS))
    multi = arm in MULTI_ARMS
    env, options = _env(multi)
    tasks = TASKS if multi else ("addition",)
    teachers = tuple(teacher_dir(t, root) for t in tasks)
    sets = {
        "n_embd": STUDENT["n_embd"],
        "sft_steps": STUDENT["sft_steps"],
        "lr": LR,
        "minibatches": 1,
        "seed": seed,
        "env_options": options,
        "eval_every": 0,
        "device": "cpu",
    }
    if arm in ("grpo", "grpo_multi"):
        algo = "grpo"
    elif arm == "grpo_shift":
        algo, sets = "grpo", {**sets, "teachers": teachers, "opd_coef": GRPO_SHIFT_COEF}
    elif arm in ("opd_shift", "route"):
        algo, sets = "opd", {**sets, "teachers": teachers}
    elif arm == "opd_loss":
        algo, sets = "opd", {**sets, "teachers": teachers, "opd_coef": 0.0, "opd_loss": "reverse_kl"}
    else:  # sft, sft_experts: the config only fixes the student and its warm start
        algo = "grpo"
    if algo == "grpo":
        sets = {**sets, "num_groups": COMPLETIONS // 8, "group_size": 8}
    else:
        sets = {**sets, "num_groups": COMPLETIONS, "group_size": 1}
    return resolve(algo, env, "quick", sets=sets, flags={"total_steps": 10**9})


def _teacher_batch(router: TeacherRouter, task, n: int, g: torch.Generator):
    """``n`` prompts of ``task``, each answered by its task's teacher (temperature 1): ``tokens`` (n, P + T) and
    the ``loss_mask`` (n, P + T - 1) of the completion tokens up to EOS, as :func:`rltutor.build.sft` takes them."""
    prompts = task.sample_prompts(n, g)
    P = prompts.shape[1]
    route = router.route(prompts)
    T = task.max_new_tokens
    tokens = torch.full((n, P + T), PAD, dtype=torch.long)
    tokens[:, :P] = prompts
    loss_mask = torch.zeros(n, P + T - 1)
    for k, t in enumerate(router.teachers):
        rows = (route == k).nonzero().squeeze(1)
        if rows.numel() == 0:
            continue
        native = prompts[rows, P - t.prompt_len :]
        T_k = min(T, t.model.config.block_size - t.prompt_len)  # the teacher's own completion budget
        s = sample(t.model, native, T_k, temperature=t.temperature, generator=g, stop_early=False, eos_id=EOS)
        tokens[rows, P : P + T_k] = s["responses"]
        loss_mask[rows, P - 1 : P - 1 + T_k] = s["mask"]
    return tokens, loss_mask


def run_arm(job: dict) -> pd.DataFrame:
    """One (arm, seed) run of ``updates`` updates: one row per evaluation (update 0, every ``eval_every``, the
    end) with the evaluation's accuracy and KL per task, the cumulative ``tokens`` and ``seconds``, and the mean
    ``signals`` per completion over the updates since the last row."""
    torch.set_num_threads(1)
    arm, seed, updates, every = job["arm"], job["seed"], job["updates"], job["eval_every"]
    root = job.get("root")
    cfg = arm_config(arm, seed, root)
    multi = arm in MULTI_ARMS
    task = make_env(cfg.env, seed=cfg.seed, **cfg.env_options)
    router = load_router(TASKS if multi else ("addition",), task, root)
    rows, tokens, seconds, signals = [], 0, 0.0, []

    def record(u):
        row = {"arm": arm, "seed": seed, "update": u, "tokens": tokens, "seconds": seconds}
        row["signals"] = sum(signals) / len(signals) if signals else float("nan")
        row.update(evaluate(model, task, router))
        rows.append(row)
        signals.clear()

    if arm in ("sft", "sft_experts"):
        model = warm_start(cfg, task)
        opt = torch.optim.Adam(model.parameters(), lr=LR, eps=1e-5)
        g = torch.Generator().manual_seed(seed)
        record(0)
        for u in range(1, updates + 1):
            t0 = time.perf_counter()
            batch, mask = _teacher_batch(router, task, COMPLETIONS, g)
            sft_step(model, opt, batch, mask)
            seconds += time.perf_counter() - t0
            tokens += int(mask.sum())
            signals.append(float(mask.sum()) / COMPLETIONS)  # one cross-entropy target per token
            if u % every == 0 or u == updates:
                record(u)
    else:
        trainer = Trainer(cfg)
        model = trainer.policy.model
        record(0)
        for u in range(1, updates + 1):
            t0 = time.perf_counter()
            h = trainer.step()
            seconds += time.perf_counter() - t0
            tokens += int(h["env_steps"] - (trainer.history[-2]["env_steps"] if u > 1 else 0))
            if arm in ("grpo", "grpo_multi"):
                signals.append(1.0 - h["zero_std_frac"])  # one scalar per completion, none in a dead group
            else:
                signals.append(h["response_length"])  # one signal per scored token
            if u % every == 0 or u == updates:
                record(u)
    return pd.DataFrame(rows)


def experiment(arms, seeds, updates: int, eval_every: int, workers: int = 1, store: str | None = None, root=None):
    """Every (arm, seed) of ``arms`` x ``seeds`` through the labs' run store (``store``: a folder, one CSV per run,
    read back where it exists); the rows of all runs."""
    jobs = [
        {"arm": a, "seed": s, "updates": updates, "eval_every": eval_every, "root": root} for s in seeds for a in arms
    ]
    for t in TASKS:  # train or read the teachers once, before any worker
        teacher_dir(t, root)
    rs = RunStore(store) if store else None
    names = [f"{j['arm']}-s{j['seed']}.csv" for j in jobs] if store else None
    return run_all(run_arm, jobs, workers, executor="serial" if workers == 1 else "process", store=rs, names=names)


# ----------------------------------------------------------------------------------------------
# Reading the records
# ----------------------------------------------------------------------------------------------


def end_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (arm, seed): the last evaluation's metrics, the first's as ``*_start``, and the run's totals."""
    first = df.sort_values("update").groupby(["arm", "seed"]).first()
    last = df.sort_values("update").groupby(["arm", "seed"]).last()
    out = last.copy()
    for c in [c for c in df.columns if c.startswith("acc_") or c.startswith("kl_")]:
        out[f"{c}_start"] = first[c]
    out["signals"] = df.groupby(["arm", "seed"])["signals"].mean()
    return out.reset_index()


def _acc(end: pd.DataFrame, arm: str, col: str) -> pd.Series:
    return end[end["arm"] == arm].set_index("seed")[col]


def gains(df: pd.DataFrame) -> pd.DataFrame:
    """Every arm's training gain per task: end - start greedy accuracy, its mean over seeds and 95% t interval
    (``gain_low``, ``gain_high``), so that an arm that did not learn is seen beside the contrasts that use it;
    ``learned``: the interval lies above 0 (a description of the runs, not one of the pre-stated tests)."""
    end = end_table(df)
    rows = []
    for arm, g in end.groupby("arm", sort=False):
        for c in [c for c in end.columns if c.startswith("acc_") and not c.endswith("_start")]:
            if g[c].isna().all():
                continue
            d = g[c] - g[f"{c}_start"]
            half = t_ppf(0.975, len(d) - 1) * d.std(ddof=1) / len(d) ** 0.5 if len(d) > 1 else float("nan")
            rows.append(
                {
                    "arm": arm,
                    "task": c[4:],
                    "start": g[f"{c}_start"].mean(),
                    "end": g[c].mean(),
                    "gain": d.mean(),
                    "gain_low": d.mean() - half,
                    "gain_high": d.mean() + half,
                    "seeds": len(g),
                    "learned": bool(d.mean() - half > 0),
                }
            )
    return pd.DataFrame(rows)


DELTA = 0.05
"""the smallest effect of interest of every test, in greedy accuracy (fraction of held-out prompts); see the
module docstring"""


def _tests(df: pd.DataFrame) -> list[tuple[str, str, list, float]]:
    """The pre-stated tests as (name, metric, arms [(weight, per-seed values)], delta)."""
    end = end_table(df)
    a = "acc_addition"
    out = []
    have = set(end["arm"])
    if {"opd_shift", "grpo"} <= have:
        out.append(("OPD shift - GRPO", a, [(1.0, _acc(end, "opd_shift", a)), (-1.0, _acc(end, "grpo", a))]))
    if {"opd_loss", "opd_shift"} <= have:
        out.append(("OPD loss - OPD shift", a, [(1.0, _acc(end, "opd_loss", a)), (-1.0, _acc(end, "opd_shift", a))]))
    if {"opd_shift", "sft"} <= have:
        out.append(
            ("OPD shift - SFT on teacher samples", a, [(1.0, _acc(end, "opd_shift", a)), (-1.0, _acc(end, "sft", a))])
        )
    if {"grpo_shift", "grpo"} <= have:
        out.append(("GRPO + shift - GRPO", a, [(1.0, _acc(end, "grpo_shift", a)), (-1.0, _acc(end, "grpo", a))]))
    both = end.assign(acc_both=(end.get("acc_addition", 0) + end.get("acc_sequence", 0)) / 2)
    m = "acc_both"
    if {"route", "sft_experts"} <= have:
        out.append(
            (
                "routed OPD - SFT on experts' samples",
                m,
                [(1.0, _acc(both, "route", m)), (-1.0, _acc(both, "sft_experts", m))],
            )
        )
    if {"route", "grpo_multi"} <= have:
        out.append(
            ("routed OPD - GRPO on both tasks", m, [(1.0, _acc(both, "route", m)), (-1.0, _acc(both, "grpo_multi", m))])
        )
    if "route" in have:
        r = end[end["arm"] == "route"].set_index("seed")
        kept = pd.concat([r[f"acc_{t}"] - r[f"acc_{t}_start"] for t in TASKS], axis=1).min(axis=1)
        out.append(("routed OPD keeps both skills (min over tasks of end - start)", "acc_min_gain", [(1.0, kept)]))
    return [(n, metric, arms, DELTA) for n, metric, arms in out]


def verdicts(df: pd.DataFrame) -> pd.DataFrame:
    """The chapter's family of pre-stated tests, decided together (Holm), from the stored records."""
    return verdict_table([paired_row(n, m, arms, d) for n, m, arms, d in _tests(df)])


def power(df: pd.DataFrame, delta: float = DELTA) -> pd.DataFrame:
    """The power analysis a pilot feeds: per test, the sd over seeds of its per-seed contrast and the seeds for 80%
    power at ``delta`` at the family's first Holm level (alpha / the number of tests)."""
    tests = _tests(df)
    rows = []
    for name, metric, arms, _ in tests:
        common = sorted(set.intersection(*(set(x.dropna().index) for _, x in arms)))
        per_seed = sum(w * x.loc[common] for w, x in arms)
        sd = float(per_seed.std(ddof=1))
        rows.append(
            {
                "test": name,
                "metric": metric,
                "estimate": float(per_seed.mean()),
                "sd": sd,
                "seeds": seeds_for_power(sd, delta, tests=len(tests)),
            }
        )
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------------------------
# The command line
# ----------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(prog="python -m rltutor.experiments.distill", description=__doc__.split("\n")[0])
    p.add_argument("name", help="what to run: pilot, main (every arm), single, multi, or teachers (their table)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--updates", type=int, default=150)
    p.add_argument("--eval-every", type=int, default=25)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--lr", type=float, default=None, help="every arm's learning rate (default: LR)")
    p.add_argument(
        "--out", required=True, help="the CSV to write (each run is kept in runs/distill/STEM/, read back if there)"
    )
    a = p.parse_args(argv)
    arms = {"single": SINGLE_ARMS, "multi": MULTI_ARMS}.get(a.name, (*SINGLE_ARMS, *MULTI_ARMS))
    global LR
    LR = a.lr if a.lr is not None else LR  # read by run_arm and arm_config (in this process: --workers 1)
    store = os.path.join("runs", "distill", os.path.splitext(os.path.basename(a.out))[0])
    t0 = time.perf_counter()
    if a.name == "teachers":
        cmd = store_records(teacher_table(), a.out, "rltutor.experiments.distill", argv)
        print(f"teachers -> {a.out}\n{cmd}")
        return 0
    df = experiment(arms, a.seeds, a.updates, a.eval_every, a.workers, store=store)
    df.insert(0, "label", a.name)
    df.insert(1, "lr", LR)
    cmd = store_records(df, a.out, "rltutor.experiments.distill", argv)
    print(f"{len(df)} rows in {time.perf_counter() - t0:.0f} s -> {a.out}\n{cmd}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
