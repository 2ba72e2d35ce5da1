"""Tiny random Hugging Face models and a character tokenizer, built offline for tests/test_hf.py and chapter 13.

``tiny_model(folder, arch)`` writes a Qwen2 (with a chat template) or a Llama (without one) causal LM of
about 10^5 parameters and its tokenizer to ``folder`` with ``save_pretrained``; ``rltutor train --hf-model
folder`` then loads it like any model from the hub. The tokenizer is one token per character, plus one
*merged* token ``"12"`` that encoding never produces: a completion that samples it decodes to "12", which
encodes back as "1", "2" (a decode-encode round trip that changes the ids).
"""

from __future__ import annotations

import string

import torch

SPECIALS = ["<pad>", "<eos>", "<|im_start|>", "<|im_end|>"]
MERGED = "12"
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def char_tokenizer(chat: bool):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    chars = sorted(set(string.digits + string.ascii_letters + string.punctuation + " \n"))
    vocab = {t: i for i, t in enumerate([*SPECIALS, *chars, MERGED])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", "isolated")  # every character on its own
    tok.decoder = decoders.Fuse()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", additional_special_tokens=SPECIALS[2:]
    )
    if chat:
        fast.chat_template = CHAT_TEMPLATE
    return fast


def tiny_model(folder, arch: str = "qwen2", seed: int = 0, width: int = 64, layers: int = 2):
    """Write a random ``arch`` ("qwen2" or "llama") causal LM and its tokenizer to ``folder``; returns it."""
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    tok = char_tokenizer(chat=arch == "qwen2")
    common = dict(
        vocab_size=len(tok),
        hidden_size=width,
        intermediate_size=2 * width,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(seed)
    if arch == "qwen2":
        model = Qwen2ForCausalLM(Qwen2Config(tie_word_embeddings=True, **common))
        model.generation_config.eos_token_id = [tok.eos_token_id, tok.convert_tokens_to_ids("<|im_end|>")]
    elif arch == "llama":
        model = LlamaForCausalLM(LlamaConfig(tie_word_embeddings=False, **common))
    else:
        raise ValueError(f"unknown arch {arch!r}; valid: llama, qwen2")
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder
