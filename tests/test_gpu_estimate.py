"""The T4 estimate of the LM chapters' full-scale arms (rltutor.experiments.gpu_estimate, issue 21): its FLOP
count against a hand count and PyTorch's own counter, its T4 model, the chapters' sentence, the stored table."""

import pandas as pd
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from rltutor import datafiles
from rltutor.experiments import gpu_estimate as ge
from rltutor.experiments.lm import experiment_arms
from rltutor.models.gpt import GPTConfig, TinyGPT
from rltutor.models.lm_policy import sample


def test_flops_match_a_hand_count_on_a_tiny_model():
    # 1 layer, n_embd 2, vocab 3: 12 * 1 * 2^2 = 48 block weights, a head of 3 x 2 = 6.
    assert ge.matrix_params(1, 2) == 48
    # Sampling 1 row, P = 2, T = 2: prefill 2*2*48 = 192 + attention 4*1*2*(2*2) = 32; one decode step at
    # position 2, 3 keys: 2*48 = 96 + 4*1*2*3 = 24; the head at both steps: 2*2*6 = 24. 368 in all.
    assert ge.generation_flops(1, 2, 3, rows=1, prompt_len=2, new_tokens=2) == 192 + 32 + 96 + 24 + 24
    # A value head adds 2 FLOPs per weight (n_embd of them) at each of the T steps: 2 * 2 * 2 = 8.
    assert ge.generation_flops(1, 2, 3, 1, 2, 2, value_head=True) == 368 + 8
    # Training on 1 row of 4 tokens: 3 positions; forward 2*3*(48 + 6) = 324 + attention 4*1*2*3^2 = 72;
    # forward + backward = 3 forwards; two epochs.
    assert ge.training_flops(1, 2, 3, rows=1, seq_len=4, epochs=2) == 2 * 3 * (324 + 72)


def _tiny(L=2, C=16, V=14, block=12):
    torch.manual_seed(0)
    return TinyGPT(GPTConfig(vocab_size=V, block_size=block, n_layer=L, n_head=2, n_embd=C))


def test_flops_match_pytorchs_counter_on_the_real_code():
    """The formulas count the matrix products the sampler and the trainer's forward pass run: exactly what
    PyTorch's FlopCounterMode sees (on a CPU it does not count the flash-attention kernel, so the attention,
    hand-counted above, is left out here); forward + backward within 10% of 3 forwards."""
    model = _tiny()
    B, P, T = 5, 4, 6
    prompts = torch.randint(2, 14, (B, P), generator=torch.Generator().manual_seed(0))
    with FlopCounterMode(display=False) as fc:
        sample(model, prompts, T, 1.0, torch.Generator().manual_seed(0), stop_early=False)
    assert fc.get_total_flops() == ge.generation_flops(2, 16, 14, B, P, T, attention=False)
    tokens = torch.randint(2, 14, (B, P + T))
    with FlopCounterMode(display=False) as fc:
        model(tokens[:, :-1])
    assert fc.get_total_flops() == ge.training_flops(2, 16, 14, B, P + T, attention=False) / 3
    with FlopCounterMode(display=False) as fc:
        model(tokens[:, :-1])[0].sum().backward()
    assert fc.get_total_flops() == pytest.approx(ge.training_flops(2, 16, 14, B, P + T, attention=False), rel=0.1)


def test_op_counter_counts_kernels_not_views():
    a = torch.ones(3, 4)
    with ge.OpCounter() as ops:
        b = a.view(12)  # a view: no kernel
        c = b + 1
        c.sum()
    assert ops.calls == 2 and set(ops.by_op) == {"add", "sum"}


def test_t4_model_low_is_the_max_high_is_the_sum():
    flops, ops = 1e9, 1000
    low, high = ge.t4_seconds(flops, ops)
    compute_low = flops / (ge.T4_PEAK_FP32 * ge.FRACTION[0])
    assert low == pytest.approx(max(compute_low, ops * ge.OP_SECONDS[0]))
    assert high == pytest.approx(flops / (ge.T4_PEAK_FP32 * ge.FRACTION[1]) + ops * ge.OP_SECONDS[1])
    assert low < high
    assert "8.1 TFLOPS" in ge.assumptions()


def test_sentence_from_a_small_table():
    table = pd.DataFrame(
        {
            "experiment": ["horizon", "horizon", "family"],
            "arm": ["GRPO", "PPO", "grpo"],
            "updates": [300, 300, 300],
            "t4_s_low": [30.0, 90.0, 6.0],
            "t4_s_high": [120.0, 300.0, 18.0],
            "cpu_s_measured_estimate_full_run": [600.0, 1800.0, 66.0],
            "cpu": ["AMD EPYC, 2 cores"] * 3,
        }
    )
    s = ge.t4_sentence("horizon", table)
    assert s == (
        "Full scale (16 prompts x 8, n_embd 128, 300 updates): one arm, its warm start included, about 0.5-5 min "
        "on a Colab T4 "
        "(estimated from a FLOP count and the operator calls counted on a CPU; not measured on a GPU), "
        "about 10-30 min on one core of the CPU that measured it (AMD EPYC, 2 cores)."
    )
    assert "about 6-18 s on a Colab T4" in ge.t4_sentence("family", table)
    assert "about 66 s on one core of the CPU" in ge.t4_sentence("family", table)
    with pytest.raises(ValueError, match="no rows for experiment 'clip'"):
        ge.t4_sentence("clip", table)


def test_stored_table_has_every_chapter_arm():
    table = pd.read_csv(datafiles.path("lm/t4_estimate.csv"))
    cmd = datafiles.path("lm/t4_estimate.cmd").read_text()
    assert cmd.startswith("python benchmarks/t4_estimate.py ") and "--out rltutor/data/lm/t4_estimate.csv" in cmd
    for name in ge.CHAPTER_EXPERIMENTS:
        arms, updates = experiment_arms(name, "full")
        rows = table[table["experiment"] == name]
        assert list(rows["arm"]) == [a.label for a in arms]
        assert (rows["updates"] == updates).all()
        assert (rows["t4_s_low"] > 0).all() and (rows["t4_s_low"] < rows["t4_s_high"]).all()
        assert (rows["cpu_s_measured_estimate_full_run"] > 0).all()
        assert ge.t4_sentence(name, table).startswith("Full scale (16 prompts x 8, n_embd 128,")
    # the analytic count (attention included) within 15% of PyTorch's own counter (products only) on every arm
    assert ((table["gflop_per_update"] / table["gflop_counted_per_update"] - 1).abs() < 0.15).all()
    assert table["cpu"].str.contains("EPYC").all() and table["assumptions"].str.contains("TFLOPS").all()


def test_measure_arm_on_a_small_config():
    """The whole measurement on a quick PPO arm with a short warm start and a critic warm-up: every column
    there, the CPU extrapolation as documented, the T4 range from the counted calls and FLOPs."""
    from rltutor.experiments.lm import lm_config

    cfg = lm_config("ppo", "addition", "quick", 0, task_options=dict(max_operand=9), sft_steps=3, critic_warmup=1)
    cache: dict = {}
    r = ge.measure_arm(cfg, updates=10, timed=1, sft_cache=cache)
    assert len(cache) == 1 and (r["cpu_sft_s"],) == next(iter(cache.values()))[:1]
    assert r["cpu_s_measured_estimate_full_run"] == pytest.approx(
        r["cpu_sft_s"] + r["cpu_first_update_s"] + 9 * r["cpu_s_per_update"]
    )
    assert 0 < r["cpu_sample_s_per_update"] < r["cpu_s_per_update"]
    assert r["ops_sample"] > 0 and r["ops_update"] > 0 and r["ops_sft_step"] > 0 and r["ops_critic_warmup"] > 0
    assert 0 < r["t4_s_low"] < r["t4_s_high"]
    # the arm's T4 time: its updates, plus its warm start and critic warm-up
    assert r["t4_s_low"] > r["updates"] * r["t4_s_per_update_low"]
    assert abs(r["gflop_per_update"] / r["gflop_counted_per_update"] - 1) < 0.15
    assert (r["rows"], r["sft_steps"], r["updates"]) == (64, 3, 10)  # the quick scale: 8 prompts x 8
