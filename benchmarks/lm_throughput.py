"""Rollout and training throughput of rltutor on TinyGPT, with and without the KV cache, against TRL.

Everything runs in one process on one machine, side by side, so the ratios are comparable even when
the absolute numbers are noisy (a shared CPU). No downloads: TRL's model is a randomly initialised
GPT-2 built from a config, of the same size as rltutor's TinyGPT (2 layers, 4 heads, 128 wide), and
its tokenizer is built locally from rltutor's 14-token vocabulary.

The step measured on both sides is one GRPO step: 8 prompts x 8 completions, every completion
exactly ``T`` tokens long (TRL: ``min_new_tokens = T``; rltutor: the sampler runs ``T`` steps), one
policy update per batch, no reference model (beta = 0, TRL's default), fp32, no gradient
checkpointing. "Tokens/s" counts completion tokens: 64 * T per step / seconds per step. The shares
say what part of each trainer's step is sampling (rltutor: the collector's ``sample_time``; TRL:
``_generate_and_score_completions``, which also scores the rewards); the rest is the update.

    python benchmarks/lm_throughput.py                 # T = 16 and 64, 8 steps each after 2 warm-up
    python benchmarks/lm_throughput.py --lengths 16 --steps 4 --no-trl

Prints a markdown table and, with ``--out``, writes it as CSV.
"""

from __future__ import annotations

import argparse
import time

import torch

from rltutor.envs.tokens import VOCAB, AdditionTask
from rltutor.lm import LMCollector, LMPolicy, sample, token_logprobs
from rltutor.utils import get_device

N_PROMPTS, G = 8, 8
WIDTH = dict(n_layer=2, n_head=4, n_embd=128)


class FixedLengthTask(AdditionTask):
    """Addition prompts; the reward is the fraction of digits in the completion (any text scores).
    The benchmark only needs a reward that varies, not a task worth solving."""

    def score(self, prompt, completion):
        return sum(2 <= t <= 11 for t in completion) / max(1, len(completion))


def _rltutor_model(T: int, device):
    from rltutor.gpt import GPTConfig, TinyGPT

    torch.manual_seed(0)
    return TinyGPT(GPTConfig(vocab_size=len(VOCAB), block_size=6 + T, **WIDTH)).to(device)


def bench_rollout(T: int, steps: int, device) -> dict:
    """Sampling tokens/s of rltutor's sampler with and without the KV cache."""
    model = _rltutor_model(T, device)
    prompts = AdditionTask().sample_prompts(N_PROMPTS * G, torch.Generator().manual_seed(0)).to(device)
    out = {}
    for use_cache in (True, False):
        sample(model, prompts, T, 1.0, torch.Generator().manual_seed(0), use_cache, stop_early=False)  # warm
        t0 = time.perf_counter()
        for s in range(steps):
            sample(model, prompts, T, 1.0, torch.Generator().manual_seed(s), use_cache, stop_early=False)
        out["cache" if use_cache else "no_cache"] = steps * prompts.shape[0] * T / (time.perf_counter() - t0)
    return out


def bench_train_forward_backward(T: int, steps: int, device) -> float:
    """Training tokens/s: evaluate (one causal forward), a policy loss, backward and an Adam step."""
    model = _rltutor_model(T, device)
    policy = LMPolicy(model)
    batch, _ = LMCollector(FixedLengthTask(), N_PROMPTS, G, max_new_tokens=T).collect(
        policy, torch.Generator().manual_seed(0))
    opt = torch.optim.Adam(policy.parameters(), lr=1e-4)
    t0 = None
    for s in range(steps + 1):
        if s == 1:
            t0 = time.perf_counter()
        logp, _, _ = token_logprobs(model, batch["tokens"], int(batch["prompt_len"][0]))
        loss = -(logp * batch["mask"]).sum() / batch["mask"].sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return steps * N_PROMPTS * G * T / (time.perf_counter() - t0)


def _rltutor_trainer(T: int, device):
    from rltutor.train import Trainer, make_config

    model = _rltutor_model(T, device)
    policy = LMPolicy(model)
    collector = LMCollector(FixedLengthTask(), N_PROMPTS, G, max_new_tokens=T)
    # As TRL's defaults: one optimizer step per batch, token-mean ("dapo" loss type), grad norm 1.0.
    cfg = make_config("grpo", env="addition", num_groups=N_PROMPTS, group_size=G, minibatches=1, epochs=1,
                      agg="token-mean", max_grad_norm=1.0, lr=1e-4, anneal_lr=False, total_steps=10**9,
                      seed=0, device=str(device), torch_threads=None)
    return Trainer(cfg, policy, collector)


def bench_rltutor_step(T: int, steps: int, device) -> float:
    """End-to-end GRPO steps of rltutor's one trainer: sample, reward, advantages, update."""
    trainer = _rltutor_trainer(T, device)
    trainer.step()  # warm-up
    t0 = time.perf_counter()
    for _ in range(steps):
        trainer.step()
    return steps * N_PROMPTS * G * T / (time.perf_counter() - t0)


def bench_trl_step(T: int, steps: int, interleave=None) -> tuple[float, dict]:
    """End-to-end steps of TRL's GRPOTrainer on a same-sized GPT-2 built from a config.

    A TRL step is timed from ``on_step_begin`` to ``on_step_end`` (generation, rewards, loss, backward,
    optimizer step; TRL's per-step logging is left out). With ``interleave`` (a function), it is called
    after every TRL step, outside TRL's timing, so that two systems alternate step by step and a
    machine whose load changes during the run slows both alike.
    """
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
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="<eos>",
                                        unk_token="<unk>")
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(vocab), n_positions=6 + T, n_embd=WIDTH["n_embd"],
                        n_layer=WIDTH["n_layer"], n_head=WIDTH["n_head"], resid_pdrop=0.0, embd_pdrop=0.0,
                        attn_pdrop=0.0, bos_token_id=vocab["<eos>"], eos_token_id=vocab["<eos>"],
                        pad_token_id=vocab["<pad>"])
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
        output_dir="/tmp/rltutor_trl_bench", per_device_train_batch_size=N_PROMPTS * G, num_generations=G,
        max_completion_length=T, generation_kwargs={"min_new_tokens": T}, temperature=1.0, beta=0.0,
        num_iterations=1, learning_rate=1e-4, max_steps=steps + 2, bf16=False, gradient_checkpointing=False,
        use_cpu=not torch.cuda.is_available(), report_to="none", logging_steps=1, save_strategy="no",
        disable_dropout=True, seed=0, dataloader_num_workers=0, shuffle_dataset=False,
    )
    trainer = trl.GRPOTrainer(model=model, reward_funcs=reward, args=args, train_dataset=data,
                              processing_class=tokenizer, callbacks=[Clock()])
    generate = trainer._generate_and_score_completions  # sampling + rewards + advantages, timed apart

    def timed_generate(*a, **kw):
        t0 = time.perf_counter()
        out = generate(*a, **kw)
        gen_times.append(time.perf_counter() - t0)
        return out

    trainer._generate_and_score_completions = timed_generate
    trainer.train()
    lengths = [h["completions/mean_length"] for h in trainer.state.log_history if "completions/mean_length" in h]
    dt = sum(times[2:]) / len(times[2:])  # skip the first two steps (warm-up)
    meta = {"trl": trl.__version__, "transformers": transformers.__version__,
            "params": sum(p.numel() for p in model.parameters()), "mean_completion_length": lengths[-1],
            "generate_share": sum(gen_times[2:]) / sum(times[2:])}
    return N_PROMPTS * G * T / dt, meta


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", type=int, nargs="+", default=[16, 64], help="completion lengths T")
    ap.add_argument("--steps", type=int, default=8, help="timed steps per measurement")
    ap.add_argument("--no-trl", action="store_true", help="skip TRL (e.g. when it is not installed)")
    ap.add_argument("--out", default=None, help="write the table as CSV here")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads for both sides")
    args = ap.parse_args(argv)
    device = get_device()
    if args.threads:
        torch.set_num_threads(args.threads)
    rows = []
    for T in args.lengths:
        row = {"T": T}
        row.update({f"rollout_{k}": v for k, v in bench_rollout(T, args.steps, device).items()})
        row["train_fwd_bwd"] = bench_train_forward_backward(T, args.steps, device)
        if args.no_trl:
            row["rltutor_step"] = bench_rltutor_step(T, args.steps, device)
        else:  # the two trainers alternate step by step: one TRL step, then one rltutor step
            trainer, rl_times, rl_sample = _rltutor_trainer(T, device), [], []

            def rl_step(trainer=trainer, rl_times=rl_times, rl_sample=rl_sample):
                t0 = time.perf_counter()
                trainer.step()
                rl_times.append(time.perf_counter() - t0)
                rl_sample.append(trainer.collector.last_info["sample_time"])

            row["trl_step"], meta = bench_trl_step(T, args.steps, interleave=rl_step)
            row["rltutor_step"] = N_PROMPTS * G * T * len(rl_times[2:]) / sum(rl_times[2:])
            row["rltutor_sample_share"] = sum(rl_sample[2:]) / sum(rl_times[2:])
            row["ratio_vs_trl"] = row["rltutor_step"] / row["trl_step"]
            row.update({f"trl_{k}": v for k, v in meta.items()})
        rows.append(row)
        print(row, flush=True)
    print(f"\ndevice: {device}, threads: {torch.get_num_threads()}, torch {torch.__version__}, "
          f"{N_PROMPTS} prompts x {G} completions per step; completion tokens/s\n")
    cols = [c for c in ("T", "rollout_cache", "rollout_no_cache", "train_fwd_bwd", "rltutor_step", "trl_step",
                        "ratio_vs_trl", "rltutor_sample_share", "trl_generate_share") if c in rows[0]]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(str(r[c]) if c == "T" else f"{r[c]:.2f}" if c.startswith("ratio") or
                                c.endswith("share") else f"{r[c]:,.0f}" for c in cols) + " |")
    if args.out:
        import pandas as pd

        pd.DataFrame(rows).to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
