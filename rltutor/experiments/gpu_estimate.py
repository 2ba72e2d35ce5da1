"""How long one full-scale arm of an LM chapter would take on a free Colab T4: estimated, not measured.

Issue 21 asks each LM chapter (06-10) to state its full-scale arm's time on a T4 GPU. No GPU was at hand
when the stored table (``rltutor/data/lm/t4_estimate.csv``, written by ``benchmarks/t4_estimate.py``) was
made, so the T4 time is estimated from two things measured on the CPU and a model of the T4 stated here:

1. **Arithmetic** (FLOPs), counted from the model's shape and the tokens it processes
   (:func:`generation_flops`, :func:`training_flops`): a forward pass costs 2 FLOPs per matrix weight per
   token (Kaplan et al. 2020, "Scaling laws for neural language models", arXiv:2001.08361, section 2.1),
   plus the attention scores and their weighted sum, 4 x n_embd x context per layer per token; a training
   pass, forward and backward, costs 3 forward passes (the "6 N" rule), once per epoch. The token counts
   follow the code: the sampler runs a prefill over the P prompt tokens (its head only on the last), then
   T - 1 one-token decode steps, each with the head; the update's forward runs over P + T - 1 positions of
   every row (:func:`rltutor.models.lm_policy.token_logprobs`); the warm start (SFT) is a training pass over
   64 rows (:func:`rltutor.build.sft`'s batch) of the task's SFT sequences.
2. **Operator calls**: every PyTorch operator call of one update (views and allocations excepted, which
   launch no kernel), counted while the real code runs (:class:`OpCounter`), for the sampling and for the
   update separately, and for one SFT step. At this size (2 layers, 128 wide, a batch of 128 rows) each
   kernel finishes in a few microseconds, so an eager PyTorch step on a GPU is bound by the host's work
   per operator (Python, the dispatcher and ``cudaLaunchKernel``), not by the arithmetic.

The T4 model, per phase (sampling, update, SFT, critic warm-up), with ``F`` FLOPs and ``n`` operator calls:

* optimistic: ``max(F / (T4_PEAK_FP32 * FRACTION[0]), n * OP_SECONDS[0])`` -- a quarter of the peak, and
  the host's work fully overlapping the kernels;
* pessimistic: ``F / (T4_PEAK_FP32 * FRACTION[1]) + n * OP_SECONDS[1])`` -- a twentieth of the peak, and
  no overlap at all (every ``.item()``, the CPU-side reward and the metrics synchronise the device).

:data:`T4_PEAK_FP32` is NVIDIA's datasheet figure (8.1 TFLOPS fp32, Tesla T4 datasheet); the fractions are
assumptions: matrices of 128 x 128 weights against 128 rows are far too small to fill a T4's 40
multiprocessors. :data:`OP_SECONDS` (8 and 20 microseconds of host work per operator call) is an
assumption too: eager PyTorch's dispatch plus a CUDA launch is commonly 5-25 microseconds per operator, and
a Colab host is a 2-vCPU Xeon slower than this machine; the stored table also records what one operator
call costs on this CPU (:func:`dispatch_seconds`) for comparison. The calls are counted on the CPU, where a
few differ from a GPU's: the SFT's AdamW loops over the parameters (a GPU's default, ``foreach``, takes a
few calls for all of them), so the SFT's count leans high; the trainer's Adam is fused on both. Not
counted: CUDA's start-up (a few seconds once per process) and the first call's one-time costs.

The CPU time of the same arm is measured: its SFT, its first update and a few steady updates after it,
extrapolated to the arm's number of updates, in the process's CPU seconds, which the other jobs of a shared
machine do not inflate (:func:`measure_arm`; the wall time is stored beside it).
"""

from __future__ import annotations

import os
import statistics
import time

import pandas as pd
import torch
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = [
    "T4_PEAK_FP32",
    "FRACTION",
    "OP_SECONDS",
    "SFT_BATCH",
    "CHAPTER_EXPERIMENTS",
    "matrix_params",
    "generation_flops",
    "training_flops",
    "OpCounter",
    "dispatch_seconds",
    "t4_seconds",
    "measure_arm",
    "estimate_experiment",
    "assumptions",
    "t4_sentence",
]

T4_PEAK_FP32 = 8.1e12
"""NVIDIA Tesla T4 peak single-precision throughput, FLOP/s (NVIDIA T4 Tensor Core GPU datasheet: 8.1 TFLOPS)."""
FRACTION = (0.25, 0.05)
"""The share of :data:`T4_PEAK_FP32` the model's matrix products achieve (optimistic, pessimistic): an
assumption for products of 128-wide weights against about 128 rows."""
OP_SECONDS = (8e-6, 20e-6)
"""Host seconds per PyTorch operator call on a Colab T4 machine (optimistic, pessimistic): an assumption
(Python, PyTorch's dispatcher and the CUDA kernel launch; commonly 5-25 microseconds in eager mode)."""
SFT_BATCH = 64
"""Rows per SFT step (:func:`rltutor.build.sft`'s default batch)."""
CHAPTER_EXPERIMENTS = (
    "short_task2",
    "horizon",
    "length_bias",
    "clip_higher",
    "family",
    "horizon2",
    "length_bias2",
    "diversity",
    "family2",
)
"""The experiments of :mod:`rltutor.experiments.lm` that chapters 06-10 state (``regime`` is a pilot and
``short_task`` was restated as ``short_task2``; ``horizon2``, ``length_bias2``, ``diversity`` and ``family2``
are chapters 07-10 restated)."""


# ----------------------------------------------------------------------------------------------
# The arithmetic
# ----------------------------------------------------------------------------------------------


def matrix_params(n_layer: int, n_embd: int) -> int:
    """Weights of the blocks' matrix products: per layer q, k, v and the output projection (4 n^2) and the
    MLP's two (8 n^2), 12 n^2 in all (biases, LayerNorms and embeddings look-ups are not products)."""
    return 12 * n_layer * n_embd * n_embd


def _attention(n_layer: int, n_embd: int, contexts: float) -> float:
    """Scores q k^T and the weighted sum of v: 2 x 2 x n_embd FLOPs per (query, key) pair, per layer."""
    return 4.0 * n_layer * n_embd * contexts


def generation_flops(
    n_layer: int,
    n_embd: int,
    vocab: int,
    rows: int,
    prompt_len: int,
    new_tokens: int,
    value_head: bool = False,
    attention: bool = True,
) -> float:
    """FLOPs of sampling ``new_tokens`` tokens for ``rows`` prompts of ``prompt_len`` tokens with the KV cache.

    Step 0 is the prefill: the blocks over the P prompt tokens (causal attention computed in full, P^2
    pairs), the head (and value head) on the last position only. Steps t = 1 .. T-1 feed one token per row
    at position P + t - 1, which attends to P + t keys, and apply the head. The head is the tied embedding,
    ``vocab x n_embd`` weights; the value head ``n_embd``. ``attention=False`` leaves the attention out (the
    matrix products alone)."""
    P, T, B = prompt_len, new_tokens, rows
    blocks = matrix_params(n_layer, n_embd)
    head = vocab * n_embd + (n_embd if value_head else 0)
    a = 1.0 if attention else 0.0
    prefill = 2.0 * B * P * blocks + a * B * _attention(n_layer, n_embd, P * P)
    decode = sum(2.0 * B * blocks + a * B * _attention(n_layer, n_embd, P + t) for t in range(1, T))
    heads = 2.0 * B * T * head
    return prefill + decode + heads


def training_flops(
    n_layer: int,
    n_embd: int,
    vocab: int,
    rows: int,
    seq_len: int,
    epochs: int = 1,
    value_head: bool = False,
    attention: bool = True,
) -> float:
    """FLOPs of ``epochs`` training passes (forward and backward, 3 forward passes' worth) over ``rows``
    sequences of ``seq_len`` tokens, whose forward runs over ``seq_len - 1`` positions (position j predicts
    token j + 1), the head on every position, attention in full (S^2 pairs; ``attention=False``: left out)."""
    S = seq_len - 1
    head = vocab * n_embd + (n_embd if value_head else 0)
    forward = 2.0 * rows * S * (matrix_params(n_layer, n_embd) + head)
    if attention:
        forward += rows * _attention(n_layer, n_embd, S * S)
    return 3.0 * forward * epochs


# ----------------------------------------------------------------------------------------------
# Operator calls
# ----------------------------------------------------------------------------------------------

_NO_KERNEL = {"empty", "empty_strided", "detach", "alias", "lift_fresh", "set_", "resize_", "_unsafe_view"}


class OpCounter(TorchDispatchMode):
    """Counts the PyTorch operator calls made inside it (those that reach a backend, backward included),
    leaving out views and bare allocations, which launch no kernel. ``calls`` the count, ``by_op`` per name."""

    def __init__(self):
        super().__init__()
        self.calls = 0
        self.by_op: dict[str, int] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        if not (getattr(func, "is_view", False) or name in _NO_KERNEL):
            self.calls += 1
            self.by_op[name] = self.by_op.get(name, 0) + 1
        return func(*args, **(kwargs or {}))


def _count(fn):
    """Run ``fn()`` once; return (its result, operator calls, FLOPs PyTorch's own FlopCounterMode saw: the
    matrix products; on a CPU it does not count the attention kernel, PyTorch 2.13's flash attention for CPU)."""
    from torch.utils.flop_counter import FlopCounterMode

    flops = FlopCounterMode(display=False)
    ops = OpCounter()
    with flops, ops:
        out = fn()
    return out, ops.calls, float(flops.get_total_flops())


def dispatch_seconds(repeats: int = 20000) -> float:
    """CPU seconds per call of a trivial operator (adding two 1-element tensors) on this machine: its host
    overhead per operator, which a GPU machine pays too, plus the kernel launch."""
    a, b = torch.ones(1), torch.ones(1)
    for _ in range(1000):
        torch.add(a, b)
    t0 = time.process_time()
    for _ in range(repeats):
        torch.add(a, b)
    return (time.process_time() - t0) / repeats


# ----------------------------------------------------------------------------------------------
# The T4 model
# ----------------------------------------------------------------------------------------------


def t4_seconds(flops: float, ops: float) -> tuple[float, float]:
    """(optimistic, pessimistic) T4 seconds of a phase with ``flops`` FLOPs and ``ops`` operator calls (the
    module docstring's model)."""
    low = max(flops / (T4_PEAK_FP32 * FRACTION[0]), ops * OP_SECONDS[0])
    high = flops / (T4_PEAK_FP32 * FRACTION[1]) + ops * OP_SECONDS[1]
    return low, high


def assumptions() -> str:
    """The T4 model's numbers in one line (the stored table's ``assumptions`` column)."""
    return (
        f"T4 fp32 peak {T4_PEAK_FP32 / 1e12:.1f} TFLOPS (NVIDIA datasheet) at {FRACTION[0]:.0%} (low) / "
        f"{FRACTION[1]:.0%} (high) of peak; {OP_SECONDS[0] * 1e6:.0f} / {OP_SECONDS[1] * 1e6:.0f} us host time "
        "per operator call (counted); low = max(compute, ops), high = compute + ops; FLOPs 2N per token forward, "
        "6N training, + attention; CUDA start-up excluded"
    )


# ----------------------------------------------------------------------------------------------
# Measuring an arm
# ----------------------------------------------------------------------------------------------


def _sft_key(config) -> tuple:
    return (config.env, tuple(sorted(config.env_options.items())), config.n_embd, config.sft_steps, config.seed)


def measure_arm(config, updates: int, timed: int = 3, sft_cache: dict | None = None) -> dict:
    """Measure one arm of ``config`` on this CPU and estimate its T4 time for ``updates`` updates.

    CPU: the warm start (SFT, timed in full; ``sft_cache`` keeps the times of a setting already warm-started
    in this process, which :func:`rltutor.build.warm_start` then copies from its cache), the first update
    (with the critic warm-up where the config asks for it), then ``timed`` updates, whose median (and the
    sampler's share, the collector's ``sample_time`` over the update's wall time) is extrapolated: the
    sampler always runs the full completion budget (``stop_early=False``), so an update costs the same
    throughout a run. The ``cpu_*`` columns are the process's CPU seconds (:func:`time.process_time`; one
    torch thread, so on an idle machine they equal the wall time), which a shared machine's other jobs do not
    inflate as they do the wall time; ``wall_s_estimate_full_run`` is the wall time, ``load_avg_1min`` the
    machine's load when the arm started. Then one more
    batch and update under :class:`OpCounter`, and one SFT step, for the operator calls. Returns a dict of
    the table's columns."""
    from rltutor.build import sft, warm_start
    from rltutor.envs import make_env
    from rltutor.models.lm_policy import make_model
    from rltutor.train import Trainer

    sft_cache = {} if sft_cache is None else sft_cache
    task = make_env(config.env, seed=config.seed, **config.env_options)
    key = _sft_key(config)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    if key not in sft_cache:
        c0, t0 = time.process_time(), time.perf_counter()
        warm_start(config, task)
        sft_cache[key] = (time.process_time() - c0, time.perf_counter() - t0)
    trainer = Trainer(config)
    c0, t0 = time.process_time(), time.perf_counter()
    trainer.step()
    first_cpu, first_wall = time.process_time() - c0, time.perf_counter() - t0
    cpus, walls, shares = [], [], []
    for _ in range(timed):
        c0, t0 = time.process_time(), time.perf_counter()
        row = trainer.step()
        cpus.append(time.process_time() - c0)
        walls.append(time.perf_counter() - t0)
        shares.append(row["sample_time"] / walls[-1])  # the sampler's share of the update (wall clock)
    step_s, step_wall = statistics.median(cpus), statistics.median(walls)
    sample_s = step_s * statistics.median(shares)

    # Operator calls and PyTorch's own FLOP count of one batch and one update.
    trainer.policy.eval()
    (batch, _), gen_ops, gen_counted = _count(lambda: trainer.collector.collect(trainer.policy, trainer.generator))
    trainer.policy.train()
    _, upd_ops, upd_counted = _count(lambda: trainer.update(batch))
    warm_ops = warm_counted = 0.0
    if config.critic_warmup:
        trainer.warmup_history.clear()
        _, warm_ops, warm_counted = _count(trainer.warm_up_critic)
    model = trainer.policy.model
    gcfg = model.config
    vocab, L, C = gcfg.vocab_size, gcfg.n_layer, gcfg.n_embd
    vh = trainer.policy.critic_kind == "head"
    sft_model = make_model(vocab, gcfg.block_size, L, gcfg.n_head, C, seed=config.seed)
    _, sft_ops, _ = _count(lambda: sft(sft_model, task, steps=1, lr=config.sft_lr))

    # The arithmetic, counted from the shape.
    B, P = batch["tokens"].shape[0], int(batch["prompt_len"][0])
    T = batch["tokens"].shape[1] - P
    gen_f = generation_flops(L, C, vocab, B, P, T, vh)
    upd_f = training_flops(L, C, vocab, B, P + T, config.epochs, vh)
    sft_tokens, _ = task.sft_batch(SFT_BATCH, torch.Generator().manual_seed(0))
    sft_f = training_flops(L, C, vocab, SFT_BATCH, sft_tokens.shape[1])
    per_update = [t4_seconds(gen_f, gen_ops)[i] + t4_seconds(upd_f, upd_ops)[i] for i in (0, 1)]
    sft_t4 = t4_seconds(sft_f, sft_ops)
    warm_t4 = t4_seconds(warm_counted, warm_ops)
    t4 = [updates * per_update[i] + config.sft_steps * sft_t4[i] + warm_t4[i] for i in (0, 1)]
    sft_s, sft_wall = sft_cache[key]
    return {
        "updates": updates,
        "sft_steps": config.sft_steps,
        "rows": B,
        "prompt_len": P,
        "new_tokens": T,
        "epochs": config.epochs,
        "params": sum(p.numel() for p in trainer.policy.parameters()),
        "cpu_s_measured_estimate_full_run": sft_s + first_cpu + (updates - 1) * step_s,
        "cpu_s_per_update": step_s,
        "cpu_sample_s_per_update": sample_s,
        "cpu_sft_s": sft_s,
        "cpu_first_update_s": first_cpu,
        "wall_s_estimate_full_run": sft_wall + first_wall + (updates - 1) * step_wall,
        "load_avg_1min": load,
        "t4_s_low": t4[0],
        "t4_s_high": t4[1],
        "t4_s_per_update_low": per_update[0],
        "t4_s_per_update_high": per_update[1],
        "gflop_per_update": (gen_f + upd_f) / 1e9,
        "gflop_counted_per_update": (gen_counted + upd_counted) / 1e9,
        "ops_sample": gen_ops,
        "ops_update": upd_ops,
        "ops_sft_step": sft_ops,
        "ops_critic_warmup": warm_ops,
    }


def estimate_experiment(
    name: str, arms, updates: int, seed: int = 0, timed: int = 3, sft_cache: dict | None = None
) -> pd.DataFrame:
    """One row per arm of experiment ``name`` at the full scale, seed ``seed``: :func:`measure_arm`'s columns
    with ``experiment``, ``arm``, the arm's tags (``L`` for the horizon) and ``seed``. ``arms`` and
    ``updates`` are what ``rltutor.experiments.lm.experiment_arms(name, "full")`` returns, for any of its
    experiments; the caller passes them in, since a lab imports no other lab (``benchmarks/t4_estimate.py``
    does)."""
    sft_cache = {} if sft_cache is None else sft_cache
    rows = []
    for arm in arms:
        torch.manual_seed(seed)
        measured = measure_arm(arm.config("full", seed), updates, timed, sft_cache)
        rows.append({"experiment": name, "arm": arm.label, **arm.tags, "seed": seed, **measured})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------------------------
# The chapters' sentence
# ----------------------------------------------------------------------------------------------


def _duration(lo: float, hi: float) -> str:
    """'X-Y s' below two minutes, else 'X-Y min' (2 significant digits; 'X s' where both round alike)."""
    unit, div = ("s", 1) if hi < 120 else ("min", 60)

    def f(x):
        x = x / div
        return f"{x:.2g}" if x < 10 else f"{x:.0f}"

    a, b = f(lo), f(hi)
    return f"{a} {unit}" if a == b else f"{a}-{b} {unit}"


def t4_sentence(name: str, table) -> str:
    """One sentence a chapter prints: experiment ``name``'s full scale, one arm's estimated T4 time (the
    lowest ``t4_s_low`` to the highest ``t4_s_high`` over its arms) and its CPU time (the range of
    ``cpu_s_measured_estimate_full_run``, one thread's CPU seconds, over its arms), from ``table``: the stored
    ``lm/t4_estimate.csv`` (columns experiment, updates, t4_s_low, t4_s_high,
    cpu_s_measured_estimate_full_run, and ``cpu``, the processor that measured it, where there)."""
    from rltutor.config import LM_SCALES

    rows = table[table["experiment"] == name]
    if rows.empty:
        raise ValueError(f"the table has no rows for experiment {name!r}; it has {sorted(set(table['experiment']))}")
    s = LM_SCALES["full"]
    updates = sorted(set(int(u) for u in rows["updates"]))
    n_up = "/".join(str(u) for u in updates)
    cpu = rows["cpu_s_measured_estimate_full_run"]
    where = f"the CPU that measured it ({rows['cpu'].iloc[0]})" if "cpu" in rows else "the CPU that measured it"
    return (
        f"Full scale ({s['num_groups']} prompts x {s['group_size']}, n_embd {s['n_embd']}, {n_up} updates): "
        f"one arm, its warm start included, about {_duration(rows['t4_s_low'].min(), rows['t4_s_high'].max())} "
        "on a Colab T4 "
        "(estimated from a FLOP count and the operator calls counted on a CPU; not measured on a GPU), "
        f"about {_duration(cpu.min(), cpu.max())} on one core of {where}."
    )
