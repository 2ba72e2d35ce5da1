"""The language model as an RL policy: sampling, log-probs, the warm start, the collector, every preset."""

import math
import statistics

import pytest
import torch

from rltutor.build import build, sft
from rltutor.config import LM_ALGOS, make_config
from rltutor.envs import make_env
from rltutor.envs.tokens import EOS, PAD, VOCAB, AdditionTask, SequenceTask
from rltutor.experiments.lm import aggregation_weights, lm_config, run_lm
from rltutor.models.lm_policy import LMPolicy, critic_cost, make_model, sample, token_logprobs
from rltutor.rollout.tokens import LMCollector, greedy_accuracy
from rltutor.train import Trainer


@pytest.fixture(autouse=True)
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _prompts(n=16, seed=0):
    return AdditionTask().sample_prompts(n, torch.Generator().manual_seed(seed))


def test_cache_and_no_cache_sample_the_same_tokens():
    m = make_model(len(VOCAB), 16, n_embd=32, device="cpu")
    p = _prompts()
    a = sample(m, p, 10, 1.0, torch.Generator().manual_seed(3), use_cache=True)
    b = sample(m, p, 10, 1.0, torch.Generator().manual_seed(3), use_cache=False)
    assert torch.equal(a["tokens"], b["tokens"])
    torch.testing.assert_close(a["logp"], b["logp"], atol=1e-5, rtol=0)
    c = sample(m, p, 10, 1.0, torch.Generator().manual_seed(4))
    assert not torch.equal(a["tokens"], c["tokens"])  # the seed matters


@pytest.mark.parametrize("n_embd,n_head", [(32, 4), (64, 2)])
def test_decode_is_the_trunk_bit_for_bit(n_embd, n_head):
    """The sampler's lean one-token step (TinyGPT.decode) computes the same bits as the modules' forward pass
    through the KV cache, token after token, and fills the cache with the same keys and values."""
    torch.manual_seed(0)
    from rltutor.models.gpt import GPTConfig, TinyGPT

    m = TinyGPT(GPTConfig(vocab_size=len(VOCAB), block_size=20, n_layer=2, n_head=n_head, n_embd=n_embd)).eval()
    p = _prompts(8)
    a, b = m.new_cache(8, 20), m.new_cache(8, 20)
    with torch.no_grad():
        m.trunk(p, a), m.trunk(p, b)  # the same prefill for both
        tok = p[:, -1]
        params = m.decode_params()
        for _ in range(10):
            ours = m.decode(tok, a, params)
            ref = m.trunk(tok[:, None], b)[:, 0]
            assert torch.equal(ours, ref)
            tok = m.lm_head(ours).argmax(-1)
        assert a.pos == b.pos == p.shape[1] + 10
        assert torch.equal(a.k[:, :, :, : a.pos], b.k[:, :, :, : b.pos])
        assert torch.equal(a.v[:, :, :, : a.pos], b.v[:, :, :, : b.pos])
        with pytest.raises(ValueError, match="exceeds block_size=20"):
            for _ in range(10):
                m.decode(tok, a)
        small = m.new_cache(8, 4)  # room for 4 positions only
        m.trunk(p[:, :4], small)
        with pytest.raises(ValueError, match="holds 4 positions and is full"):
            m.decode(tok, small)


def test_sample_returns_ordinary_tensors_that_autograd_accepts():
    """The sampler runs in inference mode; what it returns must still be usable in a loss (inference tensors
    cannot be saved for backward)."""
    m = make_model(len(VOCAB), 16, n_embd=32, device="cpu")
    prompts = _prompts()
    out = sample(m, prompts, 6, 1.0, torch.Generator().manual_seed(0))
    assert not any(v.is_inference() for v in out.values())
    logp, _, _ = token_logprobs(m, out["tokens"], prompts.shape[1])
    loss = -(torch.exp(logp - out["logp"]) * out["mask"]).sum()  # uses the sampler's logp and mask
    loss.backward()
    assert m.wte.weight.grad is not None


def test_exponential_race_is_multinomials_draw():
    """The sampler's argmax p / E, E ~ Exp(1), draws what torch.multinomial(p, 1) draws from the same seed."""
    p = torch.softmax(torch.randn(256, len(VOCAB), generator=torch.Generator().manual_seed(0)) * 2, -1)
    for seed in range(3):
        ours = (p / torch.empty_like(p).exponential_(generator=torch.Generator().manual_seed(seed))).argmax(-1)
        theirs = torch.multinomial(p, 1, generator=torch.Generator().manual_seed(seed)).squeeze(-1)
        assert torch.equal(ours, theirs)


def test_sampled_logprobs_match_a_full_forward_pass():
    m = make_model(len(VOCAB), 16, n_embd=32, device="cpu")
    p = _prompts()
    for temperature in (1.0, 0.7):
        out = sample(m, p, 10, temperature, torch.Generator().manual_seed(0), stop_early=False)
        logp, entropy, _ = token_logprobs(m, out["tokens"], p.shape[1], temperature)
        torch.testing.assert_close(logp * out["mask"], out["logp"], atol=1e-5, rtol=0)
        torch.testing.assert_close(entropy * out["mask"], out["entropy"], atol=1e-5, rtol=0)
        pol = LMPolicy(m, temperature=temperature)
        batch = {"tokens": out["tokens"], "prompt_len": torch.full((16,), p.shape[1]), "actions": out["responses"]}
        torch.testing.assert_close(pol.evaluate(batch)["logp"] * out["mask"], out["logp"], atol=1e-5, rtol=0)


def test_mask_covers_tokens_up_to_and_including_eos():
    m = make_model(len(VOCAB), 16, n_embd=32, device="cpu")
    out = sample(m, _prompts(64), 10, 1.0, torch.Generator().manual_seed(0))
    r, mask = out["responses"], out["mask"].bool()
    for row, mrow in zip(r, mask, strict=True):
        ids = row.tolist()
        n = ids.index(EOS) + 1 if EOS in ids else len(ids)
        assert mrow.sum() == n and mrow[:n].all()
        assert all(t == PAD for t in ids[n:])


def sft_addition(seed: int) -> dict[str, float]:
    """400 SFT steps on one-digit addition: greedy accuracy before and after, and the loss's drop (first / last).

    Shared with benchmarks/learning_margins.py, which runs it for seeds 0-5 under every CPU kernel setting.
    """
    task = AdditionTask(max_operand=9)
    m = make_model(len(VOCAB), task.prompt_len + task.max_new_tokens, n_embd=32, seed=seed, device="cpu")
    before = greedy_accuracy(m, task)
    losses = sft(m, task, steps=400, lr=3e-3, generator=torch.Generator().manual_seed(seed))
    return {"before": float(before), "after": float(greedy_accuracy(m, task)), "loss_drop": losses[0] / losses[-1]}


@pytest.mark.learning
def test_sft_warm_start_reaches_accuracy():
    """SFT teaches one-digit addition: on a majority of seeds 0-2, greedy accuracy goes from ~0 to >= 0.5.

    Every seed also lowers its loss at least 3-fold from an accuracy under 0.05. The margin holds on every
    CPU kernel path measured: PyTorch picks kernels by processor (AVX-512, AVX2, the default) and float
    rounding differs (with 250 steps seed 0 reached 0.38 on an AVX-512 machine and 0.96 under default on
    an AVX2 one). Accuracy after 400 steps, seeds 0-5, every kernel setting this AMD EPYC (AVX2) can run
    (`python benchmarks/learning_margins.py --tests sft_addition`):

    | setting | seed 0 | seed 1 | seed 2 | seed 3 | seed 4 | seed 5 | worst |
    |-|-|-|-|-|-|-|-|
    | native/mkl=unset | 1 | 1 | 1 | 1 | 0.996 | 0.98 | 0.98 |
    | native/mkl=AVX2 | 1 | 1 | 1 | 1 | 0.996 | 0.98 | 0.98 |
    | native/mkl=SSE4_2 | 1 | 1 | 1 | 1 | 0.996 | 0.98 | 0.98 |
    | avx2/mkl=unset | 1 | 1 | 1 | 1 | 0.996 | 0.98 | 0.98 |
    | avx2/mkl=AVX2 | 1 | 1 | 1 | 1 | 0.996 | 0.98 | 0.98 |
    | avx2/mkl=SSE4_2 | 1 | 1 | 1 | 1 | 0.996 | 0.98 | 0.98 |
    | default/mkl=unset | 1 | 1 | 1 | 1 | 1 | 1 | 1 |
    | default/mkl=AVX2 | 1 | 1 | 1 | 1 | 1 | 1 | 1 |
    | default/mkl=SSE4_2 | 1 | 1 | 1 | 1 | 1 | 1 | 1 |

    over all 54 runs: before 0 to 0;
    loss_drop 47 to 305
    median wall time of one run: 10.3 s
    """
    runs = [sft_addition(seed) for seed in range(3)]
    for r in runs:
        assert r["loss_drop"] > 3 and r["before"] < 0.05, runs
    assert sum(r["after"] >= 0.5 for r in runs) >= 2, runs


def test_collector_batch_follows_the_contract():
    task = AdditionTask(max_operand=9)
    m = make_model(len(VOCAB), 16, n_embd=32, device="cpu")
    col = LMCollector(task, n_prompts=3, group_size=4, overlong_buffer=2)
    batch, info = col.collect(LMPolicy(m, critic_kind="head"), torch.Generator().manual_seed(0))
    B, T = batch["actions"].shape
    assert B == 12 and T == task.max_new_tokens
    assert batch["group_ids"].tolist() == [0] * 4 + [1] * 4 + [2] * 4
    assert batch["tokens"].shape == (B, task.prompt_len + T)
    for k in ("logp", "mask", "rewards", "values"):
        assert batch[k].shape == (B, T), k
    # the reward sits on the last valid token and nowhere else
    last = batch["mask"].sum(1).long() - 1
    off = batch["rewards"].clone()
    off[torch.arange(B), last] = 0
    assert torch.all(off == 0)
    torch.testing.assert_close(batch["rewards"].sum(1), torch.tensor(info["episode_returns"]))
    assert info["env_steps"] == int(batch["mask"].sum())


class _HalfDeadTask(AdditionTask):
    """Prompts with an odd first operand score the fraction of digits in the completion (it varies,
    so their groups are live); the others score 0 whatever is sampled (their groups are dead)."""

    def score(self, prompt, completion):
        a, _ = self._operands(prompt)
        return sum(2 <= t <= 11 for t in completion) / max(1, len(completion)) if a % 2 else 0.0


def _group_spread(batch, G):
    r = batch["rewards"].sum(1).view(-1, G)
    return r.amax(1) - r.amin(1)


def test_refill_keeps_only_live_groups_and_counts_every_draw():
    task = _HalfDeadTask(max_operand=9)
    m = make_model(len(VOCAB), 16, n_embd=32, device="cpu")
    col = LMCollector(task, n_prompts=4, group_size=4, max_draws=6)
    batch, info = col.collect(LMPolicy(m, critic_kind="head"), torch.Generator().manual_seed(0))
    B, G = batch["actions"].shape[0], 4
    assert info["metrics"]["draws"] >= 2  # half the prompts are dead, so one draw almost never has 4 live groups
    assert B == 4 * G and torch.all(_group_spread(batch, G) > 0)  # refilled to 4 groups, all live
    assert batch["group_ids"].tolist() == [g for g in range(4) for _ in range(G)]
    assert all(task._operands(p)[0] % 2 for p in batch["tokens"][:, : task.prompt_len])
    # the rows kept stay aligned: tokens, sampler log-probs and value-head values belong together
    P = task.prompt_len
    logp, _, values = token_logprobs(m, batch["tokens"], P)
    torch.testing.assert_close(logp * batch["mask"], batch["logp"], atol=1e-5, rtol=0)
    torch.testing.assert_close(values * batch["mask"], batch["values"], atol=1e-5, rtol=0)
    # refilling costs sampling: env_steps and the returns cover every draw, not only the rows kept
    assert info["env_steps"] > int(batch["mask"].sum())
    assert len(info["episode_returns"]) == info["metrics"]["draws"] * 4 * G


def test_refill_that_finds_no_live_group_returns_the_first_draw():
    class DeadTask(AdditionTask):  # every completion scores 0: every group is dead
        def score(self, prompt, completion):
            return 0.0

    task = DeadTask(max_operand=9)
    m = make_model(len(VOCAB), 16, n_embd=32, device="cpu")
    one, info1 = LMCollector(task, 3, 4).collect(LMPolicy(m), torch.Generator().manual_seed(1))
    many, info = LMCollector(task, 3, 4, max_draws=3).collect(LMPolicy(m), torch.Generator().manual_seed(1))
    assert info1["metrics"]["draws"] == 1 and info["metrics"]["draws"] == 3
    assert info["env_steps"] > info1["env_steps"]
    for k in one:
        assert torch.equal(one[k], many[k]), k


def test_max_draws_is_validated():
    with pytest.raises(ValueError, match="max_draws must be an integer >= 1"):
        LMCollector(AdditionTask(), max_draws=0)
    with pytest.raises(ValueError, match="set dynamic_sampling=True"):
        lm_config("grpo", "addition", "quick", max_draws=3)
    with pytest.raises(ValueError, match="implemented for token tasks"):
        build(make_config("dapo", env="CartPole-v1", max_draws=3))


def test_dapo_with_refill_trains_on_full_batches():
    m = make_model(len(VOCAB), 16, n_embd=32, device="cpu")
    cfg = make_config(
        "dapo", env="addition", num_groups=4, group_size=4, max_draws=6, seed=0, device="cpu", total_steps=10**6
    )
    trainer = Trainer(cfg, LMPolicy(m), LMCollector(_HalfDeadTask(max_operand=9), 4, 4, max_draws=6))
    row = trainer.step()
    assert row["draws"] >= 2 and row["rows"] == 16 and row["zero_std_frac"] == 0.0  # refilled, nothing to drop
    assert math.isfinite(row["grad_norm"])


def test_run_lm_survives_an_update_with_nothing_to_learn():
    # untrained, no overlong shaping: every addition answer is wrong, every group dead, DAPO drops them all
    cfg = lm_config(
        "dapo",
        "addition",
        "quick",
        seed=0,
        task_options=dict(max_operand=9),
        n_embd=16,
        sft_steps=0,
        overlong_buffer=None,
        num_groups=2,
        max_draws=2,
    )
    df = run_lm(cfg, steps=1)
    assert df["rows"].iloc[0] == 0 and df["draws"].iloc[0] == 2 and math.isnan(df["grad_norm"].iloc[0])


def test_critic_choices_and_cost():
    m = make_model(len(VOCAB), 16, n_embd=32, device="cpu")
    none, head = critic_cost(LMPolicy(m)), critic_cost(LMPolicy(m, critic_kind="head"))
    sep = critic_cost(LMPolicy(make_model(len(VOCAB), 16, n_embd=32, device="cpu"), critic_kind="separate"))
    assert none["critic_params"] == 0 and head["critic_params"] == 33
    assert sep["critic_params"] == sep["actor_params"] + 33  # a second model of the same size, plus its head
    assert LMPolicy(m).has_critic is False and LMPolicy(m, critic_kind="separate").has_critic is True


@pytest.mark.parametrize("algo", list(LM_ALGOS))
def test_every_algorithm_runs_a_step(algo):
    # the sequence task's fraction reward varies even for an untrained model, so no group is dead
    cfg = lm_config(algo, "sequence", "quick", seed=0, task_options=dict(L=3), n_embd=16, sft_steps=0, num_groups=2)
    df = run_lm(cfg, steps=1)
    assert len(df) == 1 and df["rows"].iloc[0] > 0 and df["grad_norm"].notna().all()


@pytest.mark.parametrize("kl_in_reward", [False, True])
def test_kl_to_the_reference(kl_in_reward):
    cfg = lm_config(
        "grpo" if not kl_in_reward else "ppo",
        "addition",
        "quick",
        task_options=dict(max_operand=9),
        n_embd=16,
        sft_steps=0,
        num_groups=2,
        kl_coef=0.1,
        kl_kind="k3",
        kl_in_reward=kl_in_reward,
    )
    assert run_lm(cfg, steps=2)["grad_norm"].notna().all()


def grpo_sequence(seed: int) -> dict[str, float]:
    """60 GRPO steps on the sequence task after a 60-step SFT warm start: mean reward of the first and last 10.

    Shared with benchmarks/learning_margins.py, which runs it for seeds 0-5 under every CPU kernel setting.
    """
    cfg = lm_config(
        "grpo", "sequence", "quick", seed=seed, task_options=dict(L=6), n_embd=32, sft_steps=60, lr=1e-3, num_groups=8
    )
    df = run_lm(cfg, steps=60)
    start, end = float(df.reward.head(10).mean()), float(df.reward.tail(10).mean())
    return {"start": start, "end": end, "gain": end - start}


@pytest.mark.slow
@pytest.mark.learning
def test_rl_improves_reward():
    """GRPO lifts the sequence task's reward: over seeds 0-2 the median gain (last 10 steps' mean reward
    minus the first 10's) is > 0.02.

    The gain is small by design (60 steps after a 60-step warm start, seconds on a CPU; the reward starts
    at 0.15-0.25), and it depends on the kernel path: under ATEN_CPU_CAPABILITY=default seed 2 gains only
    0.032, and at AVX2 seed 5 loses 0.008. Hence the median of three and a bar of 0.02 (the test asked
    0.03 of one seed before). The gain, seeds 0-5, every kernel setting this AMD EPYC (AVX2) can run
    (`python benchmarks/learning_margins.py --tests grpo_sequence`):

    | setting | seed 0 | seed 1 | seed 2 | seed 3 | seed 4 | seed 5 | worst |
    |-|-|-|-|-|-|-|-|
    | native/mkl=unset | 0.0657 | 0.0558 | 0.0577 | 0.0714 | 0.0736 | -0.00786 | -0.00786 |
    | native/mkl=AVX2 | 0.0657 | 0.0558 | 0.0577 | 0.0714 | 0.0736 | -0.00786 | -0.00786 |
    | native/mkl=SSE4_2 | 0.0657 | 0.0558 | 0.0577 | 0.0714 | 0.0736 | -0.00786 | -0.00786 |
    | avx2/mkl=unset | 0.0657 | 0.0558 | 0.0577 | 0.0714 | 0.0736 | -0.00786 | -0.00786 |
    | avx2/mkl=AVX2 | 0.0657 | 0.0558 | 0.0577 | 0.0714 | 0.0736 | -0.00786 | -0.00786 |
    | avx2/mkl=SSE4_2 | 0.0657 | 0.0558 | 0.0577 | 0.0714 | 0.0736 | -0.00786 | -0.00786 |
    | default/mkl=unset | 0.0718 | 0.0482 | 0.0321 | 0.0857 | 0.0434 | 0.0354 | 0.0321 |
    | default/mkl=AVX2 | 0.0718 | 0.0482 | 0.0321 | 0.0857 | 0.0434 | 0.0354 | 0.0321 |
    | default/mkl=SSE4_2 | 0.0718 | 0.0482 | 0.0321 | 0.0857 | 0.0434 | 0.0354 | 0.0321 |

    over all 54 runs: start 0.152 to 0.252;
    end 0.224 to 0.288
    median wall time of one run: 7.7 s
    """
    runs = [grpo_sequence(seed) for seed in range(3)]
    assert statistics.median(r["gain"] for r in runs) > 0.02, runs


def test_length_normalization_weights():
    w = aggregation_weights(8).pivot(index="length", columns="agg", values="per_token_weight")
    # GRPO: each token of a wrong answer of length n is pushed down by 1/n of the length-1 push
    torch.testing.assert_close(
        torch.tensor(w["seq-mean-token-mean"].values),
        w["seq-mean-token-mean"].iloc[0] / torch.arange(1, 9, dtype=torch.float64),
    )
    assert w["seq-mean-token-sum-norm"].nunique() == 1  # Dr.GRPO: the same push whatever the length


def test_bad_input():
    m = make_model(len(VOCAB), 16, n_embd=32, device="cpu")
    with pytest.raises(ValueError, match="unknown critic_kind 'value'"):
        LMPolicy(m, critic_kind="value")
    with pytest.raises(ValueError, match="temperature must be > 0"):
        LMPolicy(m, temperature=0)
    with pytest.raises(ValueError, match="prompts must be a LongTensor"):
        sample(m, torch.zeros(2, 3), 4)
    with pytest.raises(ValueError, match="exceeds the model's block_size"):
        sample(m, _prompts(2), 40)
    with pytest.raises(ValueError, match="needs 'tokens'"):
        LMPolicy(m).evaluate({"actions": torch.zeros(1, 2, dtype=torch.long)})
    with pytest.raises(ValueError, match="group_size must be an integer"):
        LMCollector(SequenceTask(), group_size=0)
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['depth'\]"):
        make_env("addition", depth=3)
    with pytest.raises(ValueError, match="unknown language-model algorithm 'ppo2'"):
        lm_config("ppo2")


def test_sampler_values_match_evaluate():
    m = make_model(len(VOCAB), 16, n_embd=32, device="cpu")
    pol = LMPolicy(m, critic_kind="head")
    torch.nn.init.normal_(m.value_head.weight)  # a non-trivial critic
    batch, _ = LMCollector(AdditionTask(max_operand=9), 2, 4).collect(pol, torch.Generator().manual_seed(0))
    torch.testing.assert_close(pol.evaluate(batch)["values"] * batch["mask"], batch["values"], atol=1e-5, rtol=0)


def test_critic_overhead_table():
    from rltutor.experiments.lm import critic_overhead

    df = critic_overhead("quick", repeats=1).set_index("critic")
    assert list(df.index) == ["none", "head", "separate"]
    assert df.loc["separate", "train_state_mb"] > 1.9 * df.loc["none", "train_state_mb"]
    assert (df.fwd_bwd_ms > 0).all() and df.loc["none", "time_vs_none"] == 1.0


def test_dynamic_sampling_experiment_refills_the_batch():
    from rltutor.experiments.lm import dynamic_sampling

    df = dynamic_sampling("quick", seed=0, max_draws=(1, 6), batches=2).set_index("max_draws")
    one, refill = df.loc[1], df.loc[6]
    assert one["draws"] == 1 and one["live_groups"] + one["dead_groups"] == one["groups_asked"]
    # refilling spends extra draws only when the first one left groups dead, and then fills the batch
    assert refill["live_groups"] >= one["live_groups"] and refill["dead_groups"] == 0
    assert refill["completions_sampled"] == refill["draws"] * one["completions_sampled"]
