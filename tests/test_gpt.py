"""TinyGPT: shapes, the KV cache computes what a full forward pass computes, the value head, bad input."""

import pytest
import torch

from rltutor.models.gpt import GPTConfig, TinyGPT


def _model(**kw):
    torch.manual_seed(0)
    return TinyGPT(GPTConfig(vocab_size=14, block_size=24, n_layer=2, n_head=4, n_embd=32, **kw))


def test_shapes_and_reexport():
    from rltutor.models import TinyGPT as Reexported

    assert Reexported is TinyGPT
    m = _model(value_head=True)
    logits, values = m(torch.randint(0, 14, (3, 7)))
    assert logits.shape == (3, 7, 14) and values.shape == (3, 7)
    assert torch.all(values == 0)  # the critic head starts at zero
    assert _model()(torch.zeros(1, 2, dtype=torch.long))[1] is None


def test_cache_matches_full_forward():
    m = _model().eval()
    idx = torch.randint(0, 14, (2, 12))
    full, _ = m(idx)
    cache = m.new_cache(2, 12)
    parts = [m(idx[:, :5], cache)[0]]  # prefill 5 tokens, then one at a time, then 3 at once
    for t in range(5, 9):
        parts.append(m(idx[:, t : t + 1], cache)[0])
    parts.append(m(idx[:, 9:12], cache)[0])
    assert cache.pos == 12
    torch.testing.assert_close(torch.cat(parts, 1), full, atol=1e-5, rtol=1e-5)


def test_causal():
    m = _model().eval()
    a = torch.randint(0, 14, (1, 10))
    b = a.clone()
    b[0, 6:] = (b[0, 6:] + 1) % 14  # change the future
    torch.testing.assert_close(m(a)[0][:, :6], m(b)[0][:, :6])


def test_bad_input():
    with pytest.raises(ValueError, match="divisible by n_head"):
        GPTConfig(n_embd=30, n_head=4)
    with pytest.raises(ValueError, match="vocab_size"):
        GPTConfig(vocab_size=0)
    with pytest.raises(ValueError, match="block_size"):
        _model()(torch.zeros(1, 25, dtype=torch.long))
    with pytest.raises(ValueError, match="GPTConfig"):
        TinyGPT({"vocab_size": 14})
