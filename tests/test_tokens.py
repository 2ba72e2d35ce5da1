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
