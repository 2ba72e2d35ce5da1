"""Token tasks: the vocabulary round-trips, rewards check what they claim, DAPO's overlong penalty."""

import pytest
import torch

from rltutor.envs.tokens import (
    EOS,
    PAD,
    AdditionTask,
    SequenceTask,
    decode,
    encode,
    make_task,
    overlong_penalty,
    response_lengths,
)


def _resp(text, eos=True, width=8):
    ids = encode(text) + ([EOS] if eos else [])
    return torch.tensor(ids + [PAD] * (width - len(ids)))


def test_encode_decode():
    assert decode(encode("07+12=")) == "07+12="
    assert decode(encode("19") + [EOS] + encode("55")) == "19"
    with pytest.raises(ValueError, match="cannot encode 'x'"):
        encode("1x")


def test_addition_reward_and_target():
    task = AdditionTask(max_operand=99)
    prompt = torch.tensor(encode("07+12="))
    assert task.target(prompt) == encode("19") + [EOS]
    r = task.reward(
        prompt[None].repeat(4, 1), torch.stack([_resp("19"), _resp("18"), _resp("190"), _resp("19", eos=False)])
    )
    assert r.tolist() == [1.0, 0.0, 0.0, 1.0]  # truncated but right still scores; the budget is the knob
    p = task.sample_prompts(50, torch.Generator().manual_seed(0))
    assert p.shape == (50, task.prompt_len)
    assert all(decode(row)[2] == "+" for row in p)


def test_sequence_reward():
    task = SequenceTask(L=4)
    prompt = torch.tensor(encode("3+2="))
    assert decode(task.target(prompt)) == "5791"
    r = task.reward(
        prompt[None].repeat(4, 1), torch.stack([_resp("5791"), _resp("5700"), _resp("579"), _resp("579100")])
    )
    torch.testing.assert_close(r, torch.tensor([1.0, 0.5, 0.75, 4 / 6]))  # extra tokens cost: 4 of 6 right
    exact = SequenceTask(L=4, reward="exact")
    assert exact.reward(prompt[None].repeat(2, 1), torch.stack([_resp("5791"), _resp("5790")])).tolist() == [1, 0]


def test_sft_batch_masks_only_the_answer():
    task = AdditionTask(max_operand=9)
    tokens, loss_mask = task.sft_batch(8, torch.Generator().manual_seed(0))
    P = task.prompt_len
    for row, m in zip(tokens, loss_mask, strict=True):
        predicted = row[1:][m.bool()]  # the tokens the loss asks the model to predict
        assert predicted.tolist() == task.target(row[:P])


def test_response_lengths_and_overlong():
    resp = torch.stack([_resp("12"), _resp("1234567", eos=False, width=8), _resp("", width=8)])
    assert response_lengths(resp).tolist() == [3, 8, 1]
    pen = overlong_penalty(torch.tensor([4, 6, 7, 8, 9]), max_len=8, buffer=4)
    torch.testing.assert_close(pen, torch.tensor([0.0, -0.5, -0.75, -1.0, -1.0]))


def test_bad_input():
    with pytest.raises(ValueError, match="unknown token task 'mul'"):
        make_task("mul")
    with pytest.raises(ValueError, match="max_new_tokens=2 is too short"):
        AdditionTask(max_operand=99, max_new_tokens=2)
    with pytest.raises(ValueError, match="L=0|positive integer"):
        SequenceTask(L=0)
    with pytest.raises(ValueError, match="unknown reward"):
        SequenceTask(reward="partial")
    with pytest.raises(ValueError, match="overlong buffer"):
        overlong_penalty(torch.ones(2), max_len=8, buffer=0)


def test_pairs_task_has_every_correct_pair_and_a_diverse_warm_start():
    import itertools

    from rltutor.envs.tokens import PairsTask, decode, encode

    task = PairsTask()
    for n in range(19):
        prompt = torch.tensor(encode(f"{n:02d}="))
        want = sorted(f"{a}{b}" for a, b in itertools.product(range(10), repeat=2) if a + b == n)
        assert task.answers(prompt) == want and len(want) == (n + 1 if n <= 9 else 19 - n)
        assert all(task.score(prompt, encode(x)) == 1.0 for x in want)
        assert task.score(prompt, encode("99" if n != 18 else "00")) == 0.0
    tokens, mask = task.sft_batch(2000, torch.Generator().manual_seed(0))
    nine = [decode(t[3:5]) for t in tokens if decode(t[:3]) == "09="]
    assert set(nine) == set(task.answers(torch.tensor(encode("09="))))  # all 10 answers shown, not one
    assert mask.shape == (2000, 5) and mask[:, 2:].eq(1).all() and mask[:, :2].eq(0).all()
    with pytest.raises(ValueError, match="max_sum"):
        PairsTask(max_sum=19)


def test_pass_at_k_is_the_chance_that_k_of_n_samples_hold_a_correct_one():
    import itertools
    import math

    from rltutor.rollout.tokens import pass_at_k

    for n, c in ((8, 0), (8, 1), (8, 3), (5, 5)):
        pool = [1] * c + [0] * (n - c)
        for k in range(1, n + 1):
            subsets = list(itertools.combinations(pool, k))
            assert pass_at_k(n, c, k) == pytest.approx(sum(any(s) for s in subsets) / math.comb(n, k))
    with pytest.raises(ValueError, match="1 <= k <= n"):
        pass_at_k(4, 1, 5)


def test_group_diversity_counts_distinct_correct_answers_per_prompt():
    from rltutor.envs.tokens import EOS, PAD, encode
    from rltutor.rollout.tokens import group_diversity

    def row(text):
        ids = encode(text) + [EOS]
        return ids + [PAD] * (4 - len(ids))

    # prompt 1: three correct, two of them the same answer; prompt 2: none correct
    responses = torch.tensor([row("16"), row("16"), row("25"), row("99"), row("9"), row("88"), row("1"), row("")])
    correct = torch.tensor([True, True, True, False, False, False, False, False])
    d = group_diversity(responses, correct, G=4)
    assert d["distinct_correct"] == pytest.approx((2 + 0) / 2)
    assert d["pass_at_1"] == pytest.approx((3 / 4 + 0) / 2) and d["pass_at_4"] == pytest.approx(0.5)
    assert set(d) == {"distinct_correct", "pass_at_1", "pass_at_2", "pass_at_4"}


def test_a_run_on_the_pairs_task_logs_its_diversity():
    from rltutor.experiments.lm import lm_config, run_lm
    from rltutor.train import Trainer

    t = Trainer(lm_config("grpo", "pairs", "quick", seed=0, sft_steps=20))
    row = t.step()
    assert 0 <= row["distinct_correct"] <= 8 and 0 <= row["pass_at_1"] <= row["pass_at_8"] <= 1
    assert row["pass_at_1"] == pytest.approx(row["accuracy"])
    assert len(run_lm(lm_config("grpo", "pairs", "quick", seed=0, sft_steps=20), 1)) == 1
