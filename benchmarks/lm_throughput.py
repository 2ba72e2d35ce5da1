"""Rollout and training throughput of rltutor on TinyGPT, with and without the KV cache, against TRL.

Everything runs in one process on one machine, side by side, so the ratios are comparable even when
the absolute numbers are noisy (a shared CPU). No downloads: TRL's model is a randomly initialised
GPT-2 built from a config, of the same size as rltutor's TinyGPT (2 layers, 4 heads, 128 wide) and with
the same exact GELU (GPT-2's default tanh-form GELU, made of several elementwise ops, makes TRL's step
10-25% slower for a reason that has nothing to do with TRL), and its tokenizer is built locally from
rltutor's 14-token vocabulary.

The step measured on both sides is one GRPO step: 8 prompts x 8 completions, every completion
exactly ``T`` tokens long (TRL: ``min_new_tokens = T``; rltutor: the sampler runs ``T`` steps), one
policy update per batch, no reference model (beta = 0, TRL's default), fp32, no gradient
checkpointing. "Tokens/s" counts completion tokens: 64 * T per step / seconds per step. The shares
say what part of each trainer's step is sampling (rltutor: the collector's ``sample_time``; TRL:
``_generate_and_score_completions``, which also scores the rewards); the rest is the update. On the
CPU, ``floor`` is the tokens/s of the step's matrix products and attention alone (``make_floor``), and
``ratio_cap`` = floor / TRL is the most any implementation using PyTorch's kernels could reach.

    python benchmarks/lm_throughput.py                 # T = 16 and 64, 8 steps each after 2 warm-up
    python benchmarks/lm_throughput.py --lengths 16 --steps 4 --no-trl
    python benchmarks/lm_throughput.py --lengths 64 --trl-variants   # TRL alone, under each speed option
    python benchmarks/lm_throughput.py --baseline-sampler /tmp/old_lm_policy.py  # the sampler against an old one

Prints a markdown table and, with ``--out``, writes it as CSV.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from rltutor.envs.tokens import VOCAB, AdditionTask
from rltutor.models.lm_policy import LMPolicy, sample, token_logprobs
from rltutor.rollout.tokens import LMCollector
from rltutor.utils import get_device, machine_info

N_PROMPTS, G = 8, 8
WIDTH = dict(n_layer=2, n_head=4, n_embd=128)


class FixedLengthTask(AdditionTask):
    """Addition prompts; the reward is the fraction of digits in the completion (any text scores).
    The benchmark only needs a reward that varies, not a task worth solving."""

    def score(self, prompt, completion):
        return sum(2 <= t <= 11 for t in completion) / max(1, len(completion))


def _rltutor_model(T: int, device, compiled: bool = False):
    from rltutor.models.gpt import GPTConfig, TinyGPT

    torch.manual_seed(0)
    model = TinyGPT(GPTConfig(vocab_size=len(VOCAB), block_size=6 + T, **WIDTH)).to(device)
    if compiled:  # torch.compile each block: one graph for all lengths (dynamic shapes), built at the first call
        for block in model.blocks:
            block.compile(dynamic=True)
    return model


def bench_rollout(T: int, steps: int, device, compiled: bool = False) -> dict:
    """Sampling tokens/s of rltutor's sampler with and without the KV cache."""
    model = _rltutor_model(T, device, compiled)
    prompts = AdditionTask().sample_prompts(N_PROMPTS * G, torch.Generator().manual_seed(0)).to(device)
    out = {}
    for use_cache in (True, False):
        sample(model, prompts, T, 1.0, torch.Generator().manual_seed(0), use_cache, stop_early=False)  # warm
        times = []
        for s in range(steps):
            t0 = time.perf_counter()
            sample(model, prompts, T, 1.0, torch.Generator().manual_seed(s), use_cache, stop_early=False)
            times.append(time.perf_counter() - t0)
        out["cache" if use_cache else "no_cache"] = prompts.shape[0] * T / statistics.median(times)
    return out


def bench_train_forward_backward(T: int, steps: int, device, compiled: bool = False) -> float:
    """Training tokens/s: evaluate (one causal forward), a policy loss, backward and an Adam step."""
    model = _rltutor_model(T, device, compiled)
    policy = LMPolicy(model)
    batch, _ = LMCollector(FixedLengthTask(), N_PROMPTS, G, max_new_tokens=T).collect(
        policy, torch.Generator().manual_seed(0)
    )
    opt = torch.optim.Adam(policy.parameters(), lr=1e-4)
    times = []
    for _ in range(steps + 1):  # the first is warm-up
        t0 = time.perf_counter()
        logp, _, _ = token_logprobs(model, batch["tokens"], int(batch["prompt_len"][0]))
        loss = -(logp * batch["mask"]).sum() / batch["mask"].sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    return N_PROMPTS * G * T / statistics.median(times[1:])


def make_floor(T: int, P: int = 6, shared: bool = False):
    """Seconds that the unavoidable arithmetic of one step takes with PyTorch's own fp32 kernels here.

    One GRPO step of this size cannot skip: the matrix products of sampling (a prefill of the P prompt
    tokens, then ``T - 1`` decode steps of 64 rows), the attention of each decode step, and the
    forward and backward matrix products and causal attention of the update over ``64 x (P + T - 1)``
    tokens. This times exactly those products and attention calls back to back on preallocated
    tensors (``torch.addmm`` / ``torch.mm`` / ``F.scaled_dot_product_attention``), with no model, no
    Python modules, no LayerNorm, GELU, softmax over the vocabulary, sampling draws or Adam. The
    fastest of several repetitions is a lower bound on any step that does this fp32 arithmetic with
    these kernels on this machine; TRL's step divided by it caps the attainable ratio.

    Each layer has its own weights and its own keys and values, as in the model. (``shared=True`` is the
    first version of this floor: one set of weights for every layer and the keys standing in for the values
    too, so a decode step reads half the bytes the model's must read, and its products run from the CPU's
    caches more often than the model's can: a floor that is too fast. It is kept to show the difference.)

    Returns a function that runs this arithmetic once and returns ``(sampling_s, update_s)``;
    :func:`floor_summary` takes the median of several repetitions (the statistic the trainers get too).
    """
    import torch.nn.functional as F

    B, C, V = N_PROMPTS * G, WIDTH["n_embd"], len(VOCAB)
    nh, hs = WIDTH["n_head"], C // WIDTH["n_head"]
    shapes = [(C, 3 * C), (C, C), (C, 4 * C), (4 * C, C)]  # (in, out) of each block's linear layers
    n_weights = 1 if shared else WIDTH["n_layer"]
    Ws = [{(i, o): (torch.randn(i, o), torch.randn(o)) for i, o in shapes + [(C, V)]} for _ in range(n_weights)]
    W = Ws[0]

    L = P + T - 1  # the update's sequence length
    inputs = {M: {i: torch.randn(M, i) for i, _ in W} for M in (B, B * P, B * L)}  # made before timing

    def linears(M, backward):
        xs = inputs[M]
        for layer in range(WIDTH["n_layer"]):
            for i, o in shapes:
                w, b = Ws[layer % n_weights][(i, o)]
                y = torch.addmm(b, xs[i], w)
                if backward:  # grad of the input, grad of the weight
                    torch.mm(y, w.t())
                    torch.mm(xs[i].t(), y)
        w, b = W[(C, V)]
        y = torch.addmm(b, xs[C], w)  # output head
        if backward:
            torch.mm(y, w.t())
            torch.mm(xs[C].t(), y)

    kv = torch.randn(B, nh, P + T, hs)
    caches = [(kv, kv)] if shared else [(torch.randn_like(kv), torch.randn_like(kv)) for _ in range(WIDTH["n_layer"])]
    q1 = torch.randn(B, nh, 1, hs)
    qkv = [torch.randn(B, nh, L, hs, requires_grad=True) for _ in range(3)]

    def sampling():
        linears(B * P, backward=False)  # prefill
        for t in range(1, T):  # each decode step: one token per row, attending to P + t positions
            linears(B, backward=False)
            for layer in range(WIDTH["n_layer"]):
                k, v = caches[layer % len(caches)]
                F.scaled_dot_product_attention(q1, k[:, :, : P + t], v[:, :, : P + t])

    def update():
        linears(B * L, backward=True)
        for _ in range(WIDTH["n_layer"]):
            y = F.scaled_dot_product_attention(*qkv, is_causal=True)
            y.backward(torch.ones_like(y))

    def once():
        t0 = time.perf_counter()
        sampling()
        t1 = time.perf_counter()
        update()
        return t1 - t0, time.perf_counter() - t1

    return once


def floor_summary(times: list) -> dict:
    """Medians of the sampling, update and whole-step seconds of several ``make_floor`` repetitions."""
    med = statistics.median
    return {
        "floor_sampling_s": med(t[0] for t in times),
        "floor_update_s": med(t[1] for t in times),
        "floor_step_s": med(t[0] + t[1] for t in times),
    }


def sampler_against_baseline(T: int, steps: int, device, baseline: str) -> dict:
    """Sampling seconds of rltutor's sampler and of another version of it (``baseline``: the path of an older
    ``rltutor/models/lm_policy.py``, e.g. from ``git show OLD:rltutor/models/lm_policy.py > /tmp/old.py``),
    on the same model and prompts, alternating call by call with the floor's sampling arithmetic; medians.
    Both must draw the same tokens (checked), so the comparison is of speed alone."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("baseline_lm_policy", baseline)
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    model = _rltutor_model(T, device)
    prompts = AdditionTask().sample_prompts(N_PROMPTS * G, torch.Generator().manual_seed(0)).to(device)
    floor = make_floor(T)
    runs = {
        "current": lambda s: sample(model, prompts, T, 1.0, torch.Generator().manual_seed(s), True, stop_early=False),
        "baseline": lambda s: old.sample(
            model, prompts, T, 1.0, torch.Generator().manual_seed(s), True, stop_early=False
        ),
    }
    a, b = (f(0) for f in runs.values())
    if not all(torch.equal(a[k], b[k]) for k in a):
        raise ValueError(f"{baseline} samples other tokens or log-probs than the current sampler")
    times = {"current": [], "baseline": [], "floor": []}
    for s in range(steps + 1):  # the first round is warm-up
        for name, f in runs.items():
            t0 = time.perf_counter()
            f(s)
            times[name].append(time.perf_counter() - t0)
        times["floor"].append(floor()[0])
    med = {k: statistics.median(v[1:]) for k, v in times.items()}
    return {
        "T": T,
        "sample_s_current": med["current"],
        "sample_s_baseline": med["baseline"],
        "floor_sampling_s": med["floor"],
        "speedup": med["baseline"] / med["current"],
        "current_of_floor": med["floor"] / med["current"],
        "baseline_of_floor": med["floor"] / med["baseline"],
    }


def profile_sampler(T: int, device, compiled: bool = False) -> None:
    """Print torch.profiler's busiest operators in one rltutor sampling call (after one warm-up call),
    to compare the time its matrix products and attention take there with the floor's."""
    from torch.profiler import profile

    model = _rltutor_model(T, device, compiled)
    prompts = AdditionTask().sample_prompts(N_PROMPTS * G, torch.Generator().manual_seed(0)).to(device)
    sample(model, prompts, T, 1.0, torch.Generator().manual_seed(0), True, stop_early=False)
    with profile() as prof:
        sample(model, prompts, T, 1.0, torch.Generator().manual_seed(1), True, stop_early=False)
    print(f"one sampling call, T = {T}:")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=8))


def _rltutor_trainer(T: int, device, compiled: bool = False):
    from rltutor.config import make_config
    from rltutor.train import Trainer

    model = _rltutor_model(T, device, compiled)
    policy = LMPolicy(model)
    collector = LMCollector(FixedLengthTask(), N_PROMPTS, G, max_new_tokens=T)
    # As TRL's defaults: one optimizer step per batch, token-mean ("dapo" loss type), grad norm 1.0.
    cfg = make_config(
        "grpo",
        env="addition",
        eval_every=0,
        num_groups=N_PROMPTS,
        group_size=G,
        minibatches=1,
        epochs=1,
        agg="token-mean",
        max_grad_norm=1.0,
        lr=1e-4,
        anneal_lr=False,
        total_steps=10**9,
        seed=0,
        device=str(device),
        torch_threads=None,
    )
    return Trainer(cfg, policy, collector)


TRL_VARIANTS = {
    "default": "the set-up above (exact GELU, dynamic KV cache, eager)",
    "tanh-gelu": "GPT-2's default activation, the tanh approximation of GELU",
    "static-cache": "generate with a preallocated (static) KV cache",
    "torch-compile": "GRPOConfig(torch_compile=True): the training model compiled by torch.compile",
    "paged": "GRPOConfig(use_transformers_paged=True): transformers' continuous-batching generation",
}


def bench_trl_step(T: int, steps: int, interleave=None, variant: str = "default") -> tuple[float, dict]:
    """End-to-end steps of TRL's GRPOTrainer on a same-sized GPT-2 built from a config.

    A TRL step is timed from ``on_step_begin`` to ``on_step_end`` (generation, rewards, loss, backward,
    optimizer step; TRL's per-step logging is left out). With ``interleave`` (a function), it is called
    after every TRL step, outside TRL's timing, so that two systems alternate step by step and a
    machine whose load changes during the run slows both alike.

    ``variant`` tries one of TRL's or transformers' speed options on top of the default set-up (see
    ``TRL_VARIANTS``), to check that the comparison is not against a badly configured TRL.
    """
    if variant not in TRL_VARIANTS:
        raise ValueError(f"unknown TRL variant {variant!r}; pick one of {sorted(TRL_VARIANTS)}")
    import datasets
    import transformers
    import trl
    from tokenizers import Regex, Tokenizer, pre_tokenizers
    from tokenizers.models import WordLevel
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast, TrainerCallback

    transformers.logging.set_verbosity_error()
    vocab = {s: i for i, s in enumerate(VOCAB)}
    vocab["<unk>"] = len(vocab)
    tk = Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")  # one character, one token
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(vocab),
        n_positions=6 + T,
        n_embd=WIDTH["n_embd"],
        n_layer=WIDTH["n_layer"],
        n_head=WIDTH["n_head"],
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        # TinyGPT's exact GELU; GPT-2's default tanh form is slower
        activation_function="gelu_new" if variant == "tanh-gelu" else "gelu",
        attn_pdrop=0.0,
        bos_token_id=vocab["<eos>"],
        eos_token_id=vocab["<eos>"],
        pad_token_id=vocab["<pad>"],
    )
    model = GPT2LMHeadModel(config)
    prompts = AdditionTask().sample_prompts(N_PROMPTS * (steps + 4), torch.Generator().manual_seed(0))
    from rltutor.envs.tokens import decode

    data = datasets.Dataset.from_dict({"prompt": [decode(p) for p in prompts]})

    def reward(completions, **kw):  # the same reward as FixedLengthTask
        return [sum(c.isdigit() for c in s) / max(1, len(s)) for s in completions]

    times, gen_times = [], []

    class Clock(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            self.t0 = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            times.append(time.perf_counter() - self.t0)
            if interleave is not None:
                interleave()

    args = trl.GRPOConfig(
        output_dir="/tmp/rltutor_trl_bench",
        per_device_train_batch_size=N_PROMPTS * G,
        num_generations=G,
        max_completion_length=T,
        generation_kwargs={
            "min_new_tokens": T,
            **({"cache_implementation": "static"} if variant == "static-cache" else {}),
        },
        temperature=1.0,
        beta=0.0,
        num_iterations=1,
        learning_rate=1e-4,
        max_steps=steps + 2,
        bf16=False,
        gradient_checkpointing=False,
        use_cpu=not torch.cuda.is_available(),
        report_to="none",
        logging_steps=1,
        save_strategy="no",
        disable_dropout=True,
        seed=0,
        dataloader_num_workers=0,
        shuffle_dataset=False,
        torch_compile=variant == "torch-compile",
        use_transformers_paged=variant == "paged",
    )
    trainer = trl.GRPOTrainer(
        model=model, reward_funcs=reward, args=args, train_dataset=data, processing_class=tokenizer, callbacks=[Clock()]
    )
    generate = trainer._generate_and_score_completions  # sampling + rewards + advantages, timed apart

    def timed_generate(*a, **kw):
        t0 = time.perf_counter()
        out = generate(*a, **kw)
        gen_times.append(time.perf_counter() - t0)
        return out

    trainer._generate_and_score_completions = timed_generate
    trainer.train()
    lengths = [h["completions/mean_length"] for h in trainer.state.log_history if "completions/mean_length" in h]
    dt = statistics.median(times[2:])  # skip the first two steps (warm-up)
    meta = {
        "trl": trl.__version__,
        "transformers": transformers.__version__,
        "params": sum(p.numel() for p in model.parameters()),
        "mean_completion_length": lengths[-1],
        "generate_share": statistics.median(gen_times[2:]) / dt,
    }
    return N_PROMPTS * G * T / dt, meta


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", type=int, nargs="+", default=[16, 64], help="completion lengths T")
    ap.add_argument("--steps", type=int, default=8, help="timed steps per measurement")
    ap.add_argument("--no-trl", action="store_true", help="skip TRL (e.g. when it is not installed)")
    ap.add_argument("--out", default=None, help="write the table as CSV here")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads for both sides")
    ap.add_argument(
        "--profile", action="store_true", help="also print the busiest operators of one rltutor sampling call per T"
    )
    ap.add_argument(
        "--compile",
        action="store_true",
        help="torch.compile rltutor's transformer blocks (compile time falls in the warm-up)",
    )
    ap.add_argument(
        "--baseline-sampler",
        default=None,
        metavar="PATH",
        help="instead: time the sampler against an older lm_policy.py (a file), alternating, with the floor",
    )
    ap.add_argument(
        "--trl-variants",
        action="store_true",
        help="instead: time TRL alone under each of TRL_VARIANTS, to find its fastest set-up",
    )
    args = ap.parse_args(argv)
    device = get_device()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.trl_variants:
        return trl_variants(args)
    if args.baseline_sampler:
        rows = [sampler_against_baseline(T, args.steps, device, args.baseline_sampler) for T in args.lengths]
        print(machine_info(), f"threads: {torch.get_num_threads()}")
        print("\n| T | sampling s, baseline | sampling s, current | speed-up | baseline / floor | current / floor |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            print(
                f"| {r['T']} | {r['sample_s_baseline']:.4f} | {r['sample_s_current']:.4f} | {r['speedup']:.2f} | "
                f"{r['baseline_of_floor']:.2f} | {r['current_of_floor']:.2f} |"
            )
        if args.out:
            _write_csv(rows, args.out)
        return rows
    rows = []
    for T in args.lengths:
        row = {"T": T}
        row.update({f"rollout_{k}": v for k, v in bench_rollout(T, args.steps, device, args.compile).items()})
        row["train_fwd_bwd"] = bench_train_forward_backward(T, args.steps, device, args.compile)
        if args.profile:
            profile_sampler(T, device, args.compile)
        # The floor times CPU kernels (on a GPU it would need synchronising). It runs once after every
        # rltutor step, and with TRL the two trainers alternate too (one TRL step, one rltutor step, one
        # floor), so that all three see the same machine load. Every statistic is a median over steps.
        floor = make_floor(T) if device.type == "cpu" else None
        shared_floor = make_floor(T, shared=True) if device.type == "cpu" else None
        trainer, rl_times, rl_sample = _rltutor_trainer(T, device, args.compile), [], []
        floor_times, shared_times = [], []

        def rl_step(trainer=trainer, rl_times=rl_times, rl_sample=rl_sample, floors=(floor, shared_floor),
                    times=(floor_times, shared_times)):  # fmt: skip
            t0 = time.perf_counter()
            out = trainer.step()
            rl_times.append(time.perf_counter() - t0)
            rl_sample.append(out["sample_time"])
            for f, ts in zip(floors, times, strict=True):
                if f is not None:
                    ts.append(f())

        if args.no_trl:
            for _ in range(args.steps + 2):
                rl_step()
        else:
            row["trl_step"], meta = bench_trl_step(T, args.steps, interleave=rl_step)
            row.update({f"trl_{k}": v for k, v in meta.items()})
        med = statistics.median
        step_s, sample_s = med(rl_times[2:]), med(rl_sample[2:])  # the first two steps are warm-up
        update_s = med(t - s for t, s in zip(rl_times[2:], rl_sample[2:], strict=True))
        row["rltutor_step"] = N_PROMPTS * G * T / step_s
        row["rltutor_sample_share"] = sample_s / step_s
        if "trl_step" in row:
            row["ratio_vs_trl"] = row["rltutor_step"] / row["trl_step"]
        if floor is not None:
            row.update(floor_summary(floor_times[2:]))
            row["floor_step"] = N_PROMPTS * G * T / row["floor_step_s"]
            row["floor_step_shared"] = N_PROMPTS * G * T / floor_summary(shared_times[2:])["floor_step_s"]
            row["of_floor"] = row["floor_step_s"] / step_s  # rltutor's tokens/s as a share of the floor's
            row["sampling_of_floor"] = row["floor_sampling_s"] / sample_s  # the sampler against its floor
            row["update_of_floor"] = row["floor_update_s"] / update_s  # the rest of the step against its floor
            if "trl_step" in row:  # no step doing this arithmetic with these kernels beats this ratio
                row["ratio_cap"] = row["floor_step"] / row["trl_step"]
        rows.append(row)
        print(row, flush=True)
    print(machine_info())
    print(
        f"\ndevice: {device}, threads: {torch.get_num_threads()}, torch {torch.__version__}, "
        f"{N_PROMPTS} prompts x {G} completions per step; completion tokens/s\n"
    )
    cols = [
        c
        for c in (
            "T",
            "rollout_cache",
            "rollout_no_cache",
            "train_fwd_bwd",
            "floor_step",
            "floor_step_shared",
            "rltutor_step",
            "of_floor",
            "sampling_of_floor",
            "update_of_floor",
            "trl_step",
            "ratio_vs_trl",
            "ratio_cap",
            "rltutor_sample_share",
            "trl_generate_share",
        )
        if c in rows[0]
    ]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print(
            "| "
            + " | ".join(
                str(r[c])
                if c == "T"
                else f"{r[c]:.2f}"
                if c.startswith("ratio") or c.endswith(("share", "of_floor"))
                else f"{r[c]:,.0f}"
                for c in cols
            )
            + " |"
        )
    if args.out:
        _write_csv(rows, args.out)


def _write_csv(rows: list, path: str) -> None:
    import pandas as pd

    pd.DataFrame(rows).to_csv(path, index=False)


def trl_variants(args):
    """TRL's tokens/s under each variant (TRL alone; the variants run one after another, so compare
    them only roughly, and rerun when the machine is busy)."""
    rows = []
    for T in args.lengths:
        for v in TRL_VARIANTS:
            tps, meta = bench_trl_step(T, args.steps, variant=v)
            rows.append({"T": T, "variant": v, "trl_step": tps, **{f"trl_{k}": x for k, x in meta.items()}})
            print(rows[-1], flush=True)
    print(f"\nthreads: {torch.get_num_threads()}; TRL completion tokens/s by set-up\n")
    print("| T | variant | TRL tokens/s | mean completion length |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r['T']} | {r['variant']} | {r['trl_step']:,.0f} | {r['trl_mean_completion_length']:.1f} |")
    if args.out:
        _write_csv(rows, args.out)


if __name__ == "__main__":
    main()
