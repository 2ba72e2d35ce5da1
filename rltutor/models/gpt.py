"""TinyGPT: a decoder-only transformer in one short file, in the spirit of nanoGPT.

The language-model chapters (06-10) train this model with RL. It is the GPT-2 recipe at toy size:
token + position embeddings, ``n_layer`` pre-LayerNorm blocks of causal self-attention and an MLP,
a final LayerNorm and an output head tied to the token embedding.

Two additions for RL:

* a **KV cache** (:class:`KVCache`): when sampling, each new token attends to the keys and values
  already computed for the tokens before it, so a step costs one token's forward pass, not a pass
  over the whole prefix (see ``rltutor.models.lm_policy.sample``); :meth:`TinyGPT.decode` is that
  one-token step written out without the modules, which the sampler calls at every token;
* an optional **value head** (``GPTConfig.value_head``): a linear map from the last hidden state to a
  scalar V(s_t), the critic of token-level PPO sharing the policy's trunk. The other choice, a
  separate critic of the same size, is simply a second ``TinyGPT`` (see ``rltutor.models.lm_policy.LMPolicy``).

Deviations from nanoGPT: no dropout (RL needs the sampler and the trainer to compute the same
probabilities), attention through ``F.scaled_dot_product_attention`` always, and the forward pass
returns ``(logits, values)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class GPTConfig:
    """Size of a :class:`TinyGPT`."""

    vocab_size: int = 32
    """number of token ids (the tokenizer's size)"""
    block_size: int = 64
    """longest sequence, prompt + completion, that the position table covers"""
    n_layer: int = 2
    """number of transformer blocks"""
    n_head: int = 4
    """attention heads per block; ``n_embd`` must be divisible by it"""
    n_embd: int = 128
    """width of the residual stream"""
    value_head: bool = False
    """add a scalar head V(s_t) on the last hidden state (a critic that shares the trunk)"""

    def __post_init__(self):
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"GPTConfig.{name} must be a positive integer, got {v!r}")
        if self.n_embd % self.n_head != 0:
            raise ValueError(
                f"GPTConfig.n_embd={self.n_embd} must be divisible by n_head={self.n_head}; "
                f"pick e.g. n_embd={self.n_head * max(1, self.n_embd // self.n_head)}"
            )


class KVCache:
    """Keys and values of every layer for the tokens processed so far, preallocated to ``max_len``.

    ``k[i]`` and ``v[i]`` have shape ``(B, n_head, max_len, head_size)``; positions ``[0, pos)`` are filled.
    """

    def __init__(self, config: GPTConfig, batch_size: int, max_len: int, device, dtype=torch.float32):
        if max_len > config.block_size:
            raise ValueError(
                f"KVCache max_len={max_len} exceeds block_size={config.block_size}; "
                "build the model with a larger block_size"
            )
        hs = config.n_embd // config.n_head
        shape = (config.n_layer, batch_size, config.n_head, max_len, hs)
        # Left unfilled: attention reads only positions [0, pos), each written before it is read.
        self.k = torch.empty(shape, device=device, dtype=dtype)  # (L, B, nh, max_len, hs)
        self.v = torch.empty(shape, device=device, dtype=dtype)
        self.max_len = max_len
        self.pos = 0  # number of positions already filled


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GPTConfig, layer: int):
        super().__init__()
        self.n_head, self.n_embd, self.layer = config.n_head, config.n_embd, layer
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)  # q, k, v for all heads at once
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)

    def forward(self, x: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        B, T, C = x.shape  # batch, new tokens, n_embd
        nh, hs = self.n_head, C // self.n_head
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, nh, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, nh, hs).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, nh, hs).transpose(1, 2)  # (B, nh, T, hs)
        if cache is None or cache.pos == 0:
            if cache is not None:  # prefill: remember this prompt's keys and values
                cache.k[self.layer, :, :, :T] = k
                cache.v[self.layer, :, :, :T] = v
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, nh, T, hs)
        else:
            p = cache.pos  # the new tokens sit at positions p .. p+T-1
            cache.k[self.layer, :, :, p : p + T] = k
            cache.v[self.layer, :, :, p : p + T] = v
            k_all = cache.k[self.layer, :, :, : p + T]  # (B, nh, p+T, hs)
            v_all = cache.v[self.layer, :, :, : p + T]
            mask = None
            if T > 1:  # new token j may see old tokens and new tokens up to itself
                mask = torch.ones(T, p + T, dtype=torch.bool, device=x.device).tril(diagonal=p)
            y = F.scaled_dot_product_attention(q, k_all, v_all, attn_mask=mask)  # (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # re-assemble the heads side by side
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd)
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, config: GPTConfig, layer: int):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config, layer)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = MLP(config)

    def forward(self, x, cache=None):
        x = x + self.attn(self.ln_1(x), cache)  # pre-LayerNorm residual blocks, as in GPT-2
        x = x + self.mlp(self.ln_2(x))
        return x


class TinyGPT(nn.Module):
    """A GPT-2-style decoder. ``forward(idx) -> (logits (B, T, V), values (B, T) or None)``."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        if not isinstance(config, GPTConfig):
            raise ValueError(
                f"TinyGPT needs a GPTConfig, got {type(config).__name__}; build one with GPTConfig(vocab_size=...)"
            )
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)  # token embedding
        self.wpe = nn.Embedding(config.block_size, config.n_embd)  # position embedding
        self.blocks = nn.ModuleList([Block(config, i) for i in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying, as in GPT-2
        self.value_head = nn.Linear(config.n_embd, 1) if config.value_head else None
        self.apply(self._init_weights)
        for name, p in self.named_parameters():  # GPT-2: scale the residual projections by 1/sqrt(2 n_layer)
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))
        if self.value_head is not None:  # a critic that starts at V = 0 everywhere
            nn.init.zeros_(self.value_head.weight)
            nn.init.zeros_(self.value_head.bias)

    @staticmethod
    def _init_weights(module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def trunk(self, idx: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """Hidden states ``(B, T, n_embd)`` after the final LayerNorm.

        With a ``cache``, ``idx`` holds only the new tokens; their positions continue from ``cache.pos``.
        """
        B, T = idx.shape
        start = 0 if cache is None else cache.pos
        if start + T > self.config.block_size:
            raise ValueError(
                f"sequence of {start + T} tokens exceeds block_size={self.config.block_size}; "
                "shorten the prompt/completion or build the model with a larger block_size"
            )
        pos = torch.arange(start, start + T, device=idx.device)  # (T,)
        x = self.wte(idx) + self.wpe(pos)  # (B, T, C)
        for block in self.blocks:
            x = block(x, cache)
        if cache is not None:
            cache.pos += T
        return self.ln_f(x)

    def decode_params(self) -> list[tuple]:
        """Each block's weights for :meth:`decode`, looked up once per sampling call rather than at every token
        (a module attribute costs about a microsecond, and a step reads 16 per block). The tensors are the
        parameters themselves, so the list stays valid while an optimizer updates them in place."""
        return [
            (
                b.ln_1.weight,
                b.ln_1.bias,
                b.ln_1.eps,
                b.attn.c_attn.weight,
                b.attn.c_attn.bias,
                b.attn.c_proj.weight,
                b.attn.c_proj.bias,
                b.ln_2.weight,
                b.ln_2.bias,
                b.ln_2.eps,
                b.mlp.c_fc.weight,
                b.mlp.c_fc.bias,
                b.mlp.c_proj.weight,
                b.mlp.c_proj.bias,
            )
            for b in self.blocks
        ]

    def decode(self, idx: torch.Tensor, cache: KVCache, params: list[tuple] | None = None) -> torch.Tensor:
        """Hidden states ``(B, n_embd)`` after the final LayerNorm for one new token per row, ``idx`` (B,), at
        position ``cache.pos``; ``params``: :meth:`decode_params` (looked up here when not given).

        The sampler's inner loop. It computes exactly what ``trunk(idx[:, None], cache)[:, 0]`` computes, with
        the same kernels in the same order (so the same bits: ``tests/test_lm.py`` checks), but on ``(B, C)``
        rows, without the modules' calls, the ``(B, T, ...)`` views and the attention mask that a one-token
        step does not need: fewer operator calls and less Python per token, which at this size is the cost.
        """
        p = cache.pos
        if p + 1 > self.config.block_size:
            raise ValueError(
                f"sequence of {p + 1} tokens exceeds block_size={self.config.block_size}; "
                "shorten the prompt/completion or build the model with a larger block_size"
            )
        if p + 1 > cache.max_len:  # a write past the cache's end would be an empty slice: silently lost
            raise ValueError(f"the KV cache holds {cache.max_len} positions and is full; make it with a larger max_len")
        B, C, nh = idx.shape[0], self.config.n_embd, self.config.n_head
        x = self.wte(idx) + self.wpe.weight[p]  # (B, C): token + position embedding
        for i, (g1, b1, e1, w_qkv, b_qkv, w_o, b_o, g2, b2, e2, w_fc, b_fc, w_p, b_p) in enumerate(
            params or self.decode_params()
        ):
            qkv = F.linear(F.layer_norm(x, (C,), g1, b1, e1), w_qkv, b_qkv).view(B, 3, nh, 1, C // nh)
            k, v = cache.k[i], cache.v[i]  # (B, nh, max_len, hs)
            k[:, :, p : p + 1] = qkv[:, 1]  # this token's key and value, written in place
            v[:, :, p : p + 1] = qkv[:, 2]
            y = F.scaled_dot_product_attention(qkv[:, 0], k[:, :, : p + 1], v[:, :, : p + 1])  # (B, nh, 1, hs)
            x = x + F.linear(y.reshape(B, C), w_o, b_o)  # the heads side by side, projected
            x = x + F.linear(F.gelu(F.linear(F.layer_norm(x, (C,), g2, b2, e2), w_fc, b_fc)), w_p, b_p)  # MLP
        cache.pos += 1
        return F.layer_norm(x, (C,), self.ln_f.weight, self.ln_f.bias, self.ln_f.eps)

    def forward(self, idx: torch.Tensor, cache: KVCache | None = None):
        """Logits and values for the tokens ``idx`` ``(B, T)`` (long, each below ``vocab_size``).

        Returns ``(logits, values)``: ``logits`` ``(B, T, vocab_size)``, the next-token scores at every
        position; ``values`` ``(B, T)``, the value head's V(s_t), or None when the model has no value head
        (``GPTConfig.value_head=False``). With a ``cache`` (:meth:`new_cache`), ``idx`` holds only the new
        tokens and their positions continue from ``cache.pos`` (see :meth:`trunk`).
        """
        h = self.trunk(idx, cache)  # (B, T, C)
        logits = self.lm_head(h)  # (B, T, V)
        values = self.value_head(h).squeeze(-1) if self.value_head is not None else None  # (B, T)
        return logits, values

    def new_cache(self, batch_size: int, max_len: int | None = None) -> KVCache:
        """An empty KV cache for ``batch_size`` sequences of at most ``max_len`` tokens."""
        p = next(self.parameters())
        return KVCache(self.config, batch_size, max_len or self.config.block_size, p.device, p.dtype)
