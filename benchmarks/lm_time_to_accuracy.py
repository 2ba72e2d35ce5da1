"""Wall-clock time to a target greedy accuracy: rltutor's GRPO against TRL's GRPOTrainer, with peak memory.

Tokens per second (``lm_throughput.py``) say how fast a trainer runs; this says how long a reader
waits until the model has learnt. Both sides train the same model on the same task from the same
warm start, and the clock stops when the model's greedy accuracy reaches a target.

The set-up, identical on both sides unless said otherwise:

* **Model.** rltutor's quick-scale LM size (:data:`rltutor.config.LM_SCALES`: 2 layers, 4 heads,
  64 wide; about 100k parameters). rltutor trains its ``TinyGPT``; TRL a ``GPT2LMHeadModel`` built
  from a config with the same sizes, exact GELU, no dropout, tied output head and a word-level
  tokenizer built locally from rltutor's 14-token vocabulary (as in ``lm_throughput.py``). The two
  architectures are the same function: :func:`tiny_to_gpt2` copies weights one way and
  :func:`gpt2_to_tiny` the other, and the logits agree (``tests/test_bench_tta.py``).
* **Warm start.** rltutor: :func:`rltutor.build.warm_start` (``sft_steps`` steps of
  :func:`rltutor.build.sft`, AdamW at ``sft_lr``, 64 demonstrations a step drawn with the run's
  seed). TRL: the GPT-2 starts from the very weights TinyGPT starts from before SFT (the two
  initialisations are the same distribution; copying makes the comparison one of trainers, not of
  random draws), then a plain PyTorch loop (:func:`sft_gpt2`) runs the same steps on the same
  demonstration tokens in the same order with the same loss and optimizer. The two warm starts then
  differ by float rounding only; both accuracies are reported.
* **RL.** GRPO with TRL's defaults on both sides: 8 prompts x 8 completions a step, one optimizer
  step per batch (no ratio clipping in effect), advantages ``(r - mean_g) / (std_g + eps)``,
  token-mean loss (TRL's ``"dapo"`` loss type), gradient norm clipped at 1.0, Adam (eps 1e-5, no
  weight decay) at the scale's constant learning rate, temperature 1, no KL term (beta = 0), fp32,
  the same torch threads. The reward is the task's own verifiable reward (:meth:`TokenTask.score`
  on the completion's tokens before the first end-of-sequence; TRL's reward function gets the same
  token ids). Prompts are fresh draws from the task on both sides.
* **Evaluation.** Greedy accuracy by rltutor's one evaluator,
  :func:`rltutor.rollout.tokens.greedy_accuracy` (256 prompts drawn with seed 1234, exact match
  through the task's ``accuracy``); TRL's GPT-2 is copied into a TinyGPT for it. At step 0 (the
  warm start) and every ``eval_every`` steps; the run stops at the first evaluation at or above
  ``target``, or at the step or time cap.
* **Clock.** Wall-clock seconds of RL training, evaluation excluded, from the first step (TRL: from
  ``on_train_begin``, so its per-step logging and data loading count, as they do for a user). Model
  building and the warm start are timed apart (``sft_s``). ``step_s`` is the sum of the steps alone.
* **Memory.** Every run is its own subprocess (a fresh interpreter: rltutor's runs never import
  TRL); ``peak_rss_mb`` is the child's own ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` at its end,
  imports included, and ``import_rss_mb`` the same read after the imports, before any model exists.
* **Order.** Per task, the systems alternate seed by seed (rltutor seed 0, TRL seed 0, rltutor
  seed 1, ...), so a change in machine load hits both alike.

    python benchmarks/lm_time_to_accuracy.py --out benchmarks/data/lm_time_to_accuracy.csv  # 5 seeds, both tasks
    python benchmarks/lm_time_to_accuracy.py --tasks addition --seeds 0 --no-trl
    python benchmarks/lm_time_to_accuracy.py --table-from benchmarks/data/lm_time_to_accuracy.csv

Prints a markdown table (medians and ranges over seeds) and, with ``--out``, writes one CSV row per run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

from rltutor.envs.tokens import EOS, PAD, VOCAB, decode, encode

TASKS = {
    # name -> the token task, its options, what the benchmark changes in the quick LM settings, the target
    "addition": dict(env="addition", options={"max_operand": 19}, settings={"sft_steps": 300, "lr": 1e-4}, target=0.95),
    "sequence": dict(
        env="sequence", options={"L": 4, "reward": "exact"}, settings={"sft_steps": 45, "lr": 1e-4}, target=0.9
    ),
}
"""The benchmark's tasks: chapter 06's addition (operands up to 19) and the sequence task at L = 4 with its
exact-match reward; the learning rate and warm-start length chosen by a pilot (see the README section)."""
EVAL_PROMPTS, EVAL_SEED = 256, 1234
RESULT = "TTA-RESULT "


def rl_config(task: str, seed: int, threads: int = 1, **overrides):
    """The run's :class:`~rltutor.config.Config`: GRPO at the quick LM scale, set to TRL's defaults."""
    from rltutor.config import lm_settings, make_config

    t = TASKS[task]
    settings = dict(
        agg="token-mean",  # TRL's default loss type "dapo": the mean over all completion tokens of the batch
        max_grad_norm=1.0,  # TRL's default
        minibatches=1,
        epochs=1,  # one optimizer step per batch, as TRL's num_iterations = 1
        eval_every=0,  # evaluation runs outside the trainer, off the clock
        device="cpu",
        torch_threads=threads,
    )
    settings.update(t["settings"])
    settings.update(overrides)
    return make_config("grpo", **lm_settings("grpo", t["env"], "quick", seed, t["options"], **settings))


def _task(cfg):
    from rltutor.envs import make_env

    return make_env(cfg.env, seed=cfg.seed, **cfg.env_options)


def evaluate(model, task) -> float:
    """Greedy accuracy of a TinyGPT by rltutor's evaluator, the same prompts for every run."""
    from rltutor.rollout.tokens import greedy_accuracy

    return greedy_accuracy(model, task, n=EVAL_PROMPTS, seed=EVAL_SEED)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kilobytes on Linux


class _Recorder:
    """The clock, the evaluations and the stopping rule, shared by both sides."""

    def __init__(self, task, target: float, eval_every: int, max_steps: int, max_train_s: float):
        self.task, self.target, self.eval_every = task, target, eval_every
        self.max_steps, self.max_train_s = max_steps, max_train_s
        self.curve, self.eval_s, self.step_s, self.reached = [], 0.0, 0.0, None

    def start(self):
        self.t_start = time.perf_counter()

    def train_s(self) -> float:
        return time.perf_counter() - self.t_start - self.eval_s

    def after_step(self, step: int, model_fn) -> bool:
        """Evaluate when due; True when the run should stop."""
        if step % self.eval_every and step < self.max_steps:
            return False
        train_s = self.train_s()
        t0 = time.perf_counter()
        acc = evaluate(model_fn(), self.task)
        self.eval_s += time.perf_counter() - t0
        self.curve.append({"step": step, "train_s": train_s, "step_s": self.step_s, "accuracy": acc})
        if acc >= self.target and self.reached is None:
            self.reached = self.curve[-1]
        return self.reached is not None or step >= self.max_steps or train_s >= self.max_train_s

    def result(self, warm_acc: float, sft_s: float, import_rss: float) -> dict:
        if warm_acc >= self.target:  # reached before RL: no training needed
            self.reached = {"step": 0, "train_s": 0.0}
        last = self.curve[-1] if self.curve else {"step": 0, "train_s": 0.0, "step_s": 0.0, "accuracy": warm_acc}
        hit = self.reached
        return {
            "warm_acc": warm_acc,
            "reached": hit is not None,
            "time_to_target_s": hit["train_s"] if hit else math.inf,
            "steps_to_target": hit["step"] if hit else math.inf,
            "final_acc": last["accuracy"],
            "steps_run": last["step"],
            "train_s": last["train_s"],
            "step_s": last["step_s"],
            "s_per_step": last["train_s"] / last["step"] if last["step"] else math.nan,
            "eval_s": self.eval_s,
            "sft_s": sft_s,
            "import_rss_mb": import_rss,
            "peak_rss_mb": _rss_mb(),
            "curve": [{"step": 0, "train_s": 0.0, "step_s": 0.0, "accuracy": warm_acc}, *self.curve],
        }


# ----------------------------------------------------------------------------------------------
# rltutor
# ----------------------------------------------------------------------------------------------


def run_rltutor(
    task: str, seed: int, target: float, eval_every: int, max_steps: int, max_train_s: float, threads=1, **overrides
):
    """One rltutor run: warm start, then GRPO steps of the one trainer until the target or a cap."""
    from rltutor.train import Trainer

    import_rss = _rss_mb()
    cfg = rl_config(task, seed, threads, **overrides)
    t0 = time.perf_counter()
    trainer = Trainer(cfg)  # builds the TinyGPT and runs the SFT warm start (rltutor.build.warm_start)
    sft_s = time.perf_counter() - t0
    tk = _task(cfg)
    warm_acc = evaluate(trainer.policy.model, tk)
    rec = _Recorder(tk, target, eval_every, max_steps, max_train_s)
    if warm_acc < target:
        rec.start()
        for step in range(1, max_steps + 1):
            t1 = time.perf_counter()
            trainer.step()
            rec.step_s += time.perf_counter() - t1
            if rec.after_step(step, lambda: trainer.policy.model):
                break
    return rec.result(warm_acc, sft_s, import_rss)


# ----------------------------------------------------------------------------------------------
# TRL
# ----------------------------------------------------------------------------------------------


def _gpt2_key(k: str) -> str:
    return "transformer." + k.replace("blocks.", "h.")


_TRANSPOSED = ("c_attn.weight", "c_proj.weight", "c_fc.weight")  # GPT-2's Conv1D stores (in, out)


def tiny_to_gpt2(tiny, gpt2) -> None:
    """Copy a TinyGPT's weights into a GPT2LMHeadModel of the same sizes (in place)."""
    sd = gpt2.state_dict()
    with torch.no_grad():
        for k, v in tiny.state_dict().items():
            if k == "lm_head.weight":  # tied to wte on both sides
                continue
            sd[_gpt2_key(k)].copy_(v.t() if k.endswith(_TRANSPOSED) else v)


def gpt2_to_tiny(gpt2, tiny) -> None:
    """Copy a GPT2LMHeadModel's weights into a TinyGPT of the same sizes (in place)."""
    sd = gpt2.state_dict()
    with torch.no_grad():
        for k, v in tiny.state_dict().items():
            if k == "lm_head.weight":
                continue
            w = sd[_gpt2_key(k)]
            v.copy_(w.t() if k.endswith(_TRANSPOSED) else w)


def trl_tokenizer():
    """A fast tokenizer over rltutor's vocabulary, one character one token, built locally (no download).
    The ids are rltutor's (0 pad, 1 end of sequence, 2-11 digits, 12 '+', 13 '='), no extra tokens."""
    from tokenizers import Regex, Tokenizer, pre_tokenizers
    from tokenizers.models import WordLevel
    from transformers import PreTrainedTokenizerFast

    tk = Tokenizer(WordLevel({s: i for i, s in enumerate(VOCAB)}, unk_token="<pad>"))
    tk.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    return PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="<eos>")


def gpt2_like(tiny):
    """A GPT2LMHeadModel with a TinyGPT's sizes and exact GELU, no dropout, holding its weights."""
    from transformers import GPT2Config, GPT2LMHeadModel

    c = tiny.config
    config = GPT2Config(
        vocab_size=c.vocab_size,
        n_positions=c.block_size,
        n_embd=c.n_embd,
        n_layer=c.n_layer,
        n_head=c.n_head,
        activation_function="gelu",  # TinyGPT's exact GELU (GPT-2's default is the tanh form)
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=EOS,
        eos_token_id=EOS,
        pad_token_id=PAD,
    )
    model = GPT2LMHeadModel(config)
    tiny_to_gpt2(tiny, model)
    return model


def sft_gpt2(model, task, steps: int, lr: float, seed: int, batch_size: int = 64) -> list[float]:
    """The warm start of :func:`rltutor.build.sft` as a plain loop on a GPT2LMHeadModel: the same
    demonstration batches (``task.sft_batch`` with a generator seeded ``seed``), the same masked
    next-token cross-entropy, AdamW at ``lr`` without weight decay."""
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    model.train()
    losses = []
    for _ in range(steps):
        tokens, loss_mask = task.sft_batch(batch_size, g)  # (n, L), (n, L - 1)
        logits = model(tokens[:, :-1]).logits  # (n, L - 1, V)
        nll = F.cross_entropy(logits.transpose(1, 2), tokens[:, 1:], reduction="none")
        loss = (nll * loss_mask).sum() / loss_mask.sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def run_trl(
    task: str, seed: int, target: float, eval_every: int, max_steps: int, max_train_s: float, threads=1, **overrides
):
    """One TRL run: the same warm start on a GPT-2, then TRL's GRPOTrainer until the target or a cap."""
    import datasets
    import transformers
    import trl
    from transformers import TrainerCallback

    from rltutor.models.lm_policy import make_model

    import_rss = _rss_mb()
    transformers.logging.set_verbosity_error()
    torch.set_num_threads(threads)
    cfg = rl_config(task, seed, threads, **overrides)
    tk = _task(cfg)
    t0 = time.perf_counter()
    size = (len(VOCAB), tk.prompt_len + tk.max_new_tokens, cfg.n_layer, cfg.n_head, cfg.n_embd)
    tiny = make_model(*size, seed=cfg.seed, device="cpu")  # TinyGPT's initial weights, as warm_start draws them
    model = gpt2_like(tiny)
    sft_gpt2(model, tk, cfg.sft_steps, cfg.sft_lr, cfg.seed)
    sft_s = time.perf_counter() - t0

    def as_tiny():
        gpt2_to_tiny(model, tiny)
        return tiny

    warm_acc = evaluate(as_tiny(), tk)
    rec = _Recorder(tk, target, eval_every, max_steps, max_train_s)
    if warm_acc >= target:
        return rec.result(warm_acc, sft_s, import_rss)

    n = cfg.num_groups * (max_steps + 1)  # fresh prompts for every step
    prompts = tk.sample_prompts(n, torch.Generator().manual_seed(10_000 + seed))
    data = datasets.Dataset.from_dict({"prompt": [decode(p) for p in prompts]})

    def reward(prompts, completion_ids, **kw):  # the task's own reward on the tokens before the first EOS
        out = []
        for p, ids in zip(prompts, completion_ids, strict=True):
            ids = list(ids)
            ids = ids[: ids.index(EOS)] if EOS in ids else ids
            out.append(tk.score(torch.tensor(encode(p)), ids))
        return out

    class Clock(TrainerCallback):
        def on_train_begin(self, args, state, control, **kw):
            rec.start()

        def on_step_begin(self, args, state, control, **kw):
            self.t0 = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            rec.step_s += time.perf_counter() - self.t0
            if rec.after_step(state.global_step, as_tiny):
                control.should_training_stop = True

    args = trl.GRPOConfig(
        output_dir="/tmp/rltutor_trl_tta",
        per_device_train_batch_size=cfg.num_groups * cfg.group_size,
        num_generations=cfg.group_size,
        max_completion_length=tk.max_new_tokens,
        temperature=cfg.temperature,
        beta=0.0,
        num_iterations=1,
        loss_type="dapo",  # TRL's default, said aloud: token-mean, as rltutor's agg="token-mean"
        scale_rewards="group",
        learning_rate=cfg.lr,
        lr_scheduler_type="constant",  # rltutor: anneal_lr=False
        adam_epsilon=1e-5,  # rltutor's Adam eps
        weight_decay=0.0,
        max_grad_norm=cfg.max_grad_norm,
        max_steps=max_steps,
        bf16=False,
        gradient_checkpointing=False,
        use_cpu=True,
        report_to="none",
        logging_steps=10,
        save_strategy="no",
        disable_dropout=True,
        seed=seed,
        dataloader_num_workers=0,
        shuffle_dataset=False,
    )
    trainer = trl.GRPOTrainer(
        model=model,
        reward_funcs=reward,
        args=args,
        train_dataset=data,
        processing_class=trl_tokenizer(),
        callbacks=[Clock()],
    )
    trainer.train()
    return rec.result(warm_acc, sft_s, import_rss)


RUNNERS = {"rltutor": run_rltutor, "trl": run_trl}


# ----------------------------------------------------------------------------------------------
# Runs in subprocesses, the table
# ----------------------------------------------------------------------------------------------


def run_child(spec: dict) -> dict:
    """Run ``spec`` (system, task, seed and the run's budget) in a fresh interpreter; its result."""
    env = {**os.environ, "OMP_NUM_THREADS": str(spec["threads"]), "MKL_NUM_THREADS": str(spec["threads"])}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # this checkout's rltutor, not another
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--child", json.dumps(spec)],
        capture_output=True,
        text=True,
        env=env,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith(RESULT)]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"run {spec} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(lines[-1][len(RESULT) :])


def _child_main(spec_json: str) -> None:
    spec = json.loads(spec_json)
    torch.set_num_threads(spec["threads"])
    kw = {k: spec[k] for k in ("task", "seed", "target", "eval_every", "max_steps", "max_train_s", "threads")}
    out = RUNNERS[spec["system"]](**kw, **spec.get("overrides", {}))
    print(RESULT + json.dumps(out), flush=True)


def _fmt(values, spec=".1f", suffix="") -> str:
    """Median and range of a list; runs that did not reach the target count as infinite."""
    vals = sorted(v for v in values if not math.isnan(v))
    if not vals:
        return "-"
    med = vals[len(vals) // 2] if len(vals) % 2 else (vals[len(vals) // 2 - 1] + vals[len(vals) // 2]) / 2

    def f(v):
        return "n.r." if math.isinf(v) else f"{v:{spec}}{suffix}"

    return f(med) if len(vals) == 1 else f"{f(med)} ({f(vals[0])}-{f(vals[-1])})"


def table(rows: list[dict]) -> str:
    """Per task and system: medians (ranges) over seeds. "n.r." = not reached within the caps."""
    head = (
        "| task | system | target | reached | time to target, s | steps to target | s / step "
        "| warm-start acc | final acc | peak RSS, MB | RSS after imports, MB |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|"
    )
    out = [head]
    keys = list(dict.fromkeys((r["task"], r["system"]) for r in rows))
    for task, system in keys:
        rs = [r for r in rows if r["task"] == task and r["system"] == system]

        def col(k, rs=rs):
            return [float(r[k]) for r in rs]

        out.append(
            f"| {task} | {system} | {rs[0]['target']:.2f} | {sum(r['reached'] for r in rs)}/{len(rs)} "
            f"| {_fmt(col('time_to_target_s'))} | {_fmt(col('steps_to_target'), '.0f')} "
            f"| {_fmt(col('s_per_step'), '.3f')} | {_fmt(col('warm_acc'), '.2f')} | {_fmt(col('final_acc'), '.2f')} "
            f"| {_fmt(col('peak_rss_mb'), '.0f')} | {_fmt(col('import_rss_mb'), '.0f')} |"
        )
    return "\n".join(out)


def paired(rows: list[dict]) -> str:
    """Per task and seed (the two sides share the warm start of a seed): both times to target and their
    ratio, TRL / rltutor (above 1: rltutor reached the target sooner)."""
    out = ["| task | seed | rltutor, s (steps) | TRL, s (steps) | TRL / rltutor |", "|---|---|---|---|---|"]
    by = {(r["task"], r["seed"], r["system"]): r for r in rows}
    for task, seed in dict.fromkeys((r["task"], r["seed"]) for r in rows):
        a, b = by.get((task, seed, "rltutor")), by.get((task, seed, "trl"))
        if a is None or b is None:
            continue

        def f(r):
            return "n.r." if not r["reached"] else f"{r['time_to_target_s']:.1f} ({r['steps_to_target']:.0f})"

        both = a["reached"] and b["reached"] and a["time_to_target_s"] > 0
        ratio = f"{b['time_to_target_s'] / a['time_to_target_s']:.2f}" if both else "-"
        out.append(f"| {task} | {seed} | {f(a)} | {f(b)} | {ratio} |")
    return "\n".join(out)


def print_tables(rows: list[dict]) -> None:
    print(table(rows))
    if any(r["system"] == "trl" for r in rows):
        print("\n" + paired(rows))


def read_csv(path: str) -> list[dict]:
    import pandas as pd

    rows = pd.read_csv(path).to_dict("records")
    for r in rows:
        r["reached"] = bool(r["reached"])
    return rows


def write_csv(rows: list[dict], path: str) -> None:
    import pandas as pd

    pd.DataFrame([{k: v for k, v in r.items() if k != "curve"} for r in rows]).to_csv(path, index=False)


def write_curves(rows: list[dict], path: str) -> None:
    import pandas as pd

    keys = ("task", "system", "seed")
    pd.DataFrame([{**{k: r[k] for k in keys}, **c} for r in rows for c in r["curve"]]).to_csv(path, index=False)


def benchmark(
    tasks,
    seeds,
    systems=("rltutor", "trl"),
    eval_every=5,
    max_steps=600,
    max_train_s=240.0,
    threads=1,
    targets=None,
    overrides=None,
):
    """Every (task, seed, system) run, each in its own subprocess, systems alternating seed by seed.
    ``overrides`` change the runs' config on both sides (the test shortens the warm start with it)."""
    rows = []
    for task in tasks:
        target = (targets or {}).get(task, TASKS[task]["target"])
        for seed in seeds:
            for system in systems:
                spec = dict(
                    system=system,
                    task=task,
                    seed=seed,
                    target=target,
                    eval_every=eval_every,
                    max_steps=max_steps,
                    max_train_s=max_train_s,
                    threads=threads,
                    overrides=overrides or {},
                )
                res = run_child(spec)
                rows.append({**{k: spec[k] for k in ("task", "system", "seed", "target", "threads")}, **res})
                short = {k: v for k, v in rows[-1].items() if k != "curve"}
                print(json.dumps(short), flush=True)
    return rows


def versions() -> str:
    import importlib.metadata as md

    out = [f"torch {torch.__version__}"]
    for pkg in ("trl", "transformers"):
        try:
            out.append(f"{pkg} {md.version(pkg)}")
        except md.PackageNotFoundError:
            out.append(f"{pkg} not installed")
    return ", ".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--no-trl", action="store_true", help="rltutor only (e.g. when TRL is not installed)")
    ap.add_argument("--target", type=float, default=None, help="one target greedy accuracy for every task")
    ap.add_argument("--eval-every", type=int, default=5, help="evaluate greedy accuracy every k steps")
    ap.add_argument("--max-steps", type=int, default=600, help="step cap per run")
    ap.add_argument("--max-train-s", type=float, default=240.0, help="training-time cap per run, seconds")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads, both sides")
    ap.add_argument("--sft-steps", type=int, default=None, help="warm-start steps on both sides (default: the task's)")
    ap.add_argument("--out", default=None, help="write one CSV row per run here")
    ap.add_argument("--curves", default=None, help="write every evaluation (step, seconds, accuracy) here")
    ap.add_argument("--table-from", default=None, help="print the tables of a CSV written by --out; run nothing")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return _child_main(args.child)
    if args.table_from:
        return print_tables(read_csv(args.table_from))
    from rltutor.utils import machine_info

    systems = ("rltutor",) if args.no_trl else ("rltutor", "trl")
    targets = {t: args.target for t in args.tasks} if args.target is not None else None
    overrides = {"sft_steps": args.sft_steps} if args.sft_steps is not None else None
    rows = benchmark(
        args.tasks,
        args.seeds,
        systems,
        args.eval_every,
        args.max_steps,
        args.max_train_s,
        args.threads,
        targets,
        overrides,
    )
    print(f"\n{machine_info()}\n{versions()}; {args.threads} torch thread(s); seeds {args.seeds}\n")
    print_tables(rows)
    if args.out:
        write_csv(rows, args.out)
    if args.curves:
        write_curves(rows, args.curves)
    return rows


if __name__ == "__main__":
    main()
