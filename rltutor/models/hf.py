"""Any Hugging Face causal language model as a policy (and critic) of the one trainer.

Chapter 13, *the same algorithms on a real model*. :class:`HFPolicy` gives a ``transformers``
``AutoModelForCausalLM`` the interface :class:`~rltutor.models.lm_policy.LMPolicy` gives TinyGPT:

1. :meth:`HFPolicy.generate` -- the model's own ``generate`` (with its KV cache) samples G completions
   per prompt; it returns the sampled token ids and their behaviour log-probs log pi_old(o_t | q, o_<t),
   read off the logits ``generate`` sampled from (no top-k, no top-p, no repetition penalty: checked);
2. :meth:`HFPolicy.evaluate` -- one causal forward pass over the *same token ids* gives log pi_theta,
   the entropy and V(s_t) of the stored completions: what the trainer differentiates.

**Token in, token out.** The ids ``generate`` sampled travel through the batch to :meth:`HFPolicy.evaluate`; a
completion is decoded to text only for the verifier, never encoded again (a decode-encode round trip
can change the ids, and the log-probs would then be of other tokens: the drift TRL #5144 and slime
#2288 report; ``tests/test_hf.py`` checks with a tokenizer whose round trip does change them).

**Padding.** Prompts of a batch are left-padded to one width P (``prompt_mask`` (B, P) marks the real
tokens); position ids count real tokens only (``cumsum(mask) - 1``, as ``generate`` computes them), so
a padded prompt gets the probabilities it would get alone.

**Critic** (``critic_kind``): ``"none"`` (GRPO), ``"head"`` (a linear value head on the policy's last
hidden state: the trunk is shared, TRL's ``AutoModelForCausalLMWithValueHead``), or ``"separate"`` (a
second copy of the model with its own value head, as verl and OpenRLHF initialise the critic from the
policy: twice the weights, gradients and Adam moments; :func:`memory_of` measures it). The question
of TRL issues #769 and #1063 is which of the two PPO uses; chapter 13 measures both.

**LoRA** (``lora_rank > 0``, through ``peft``): only the low-rank adapters (and the value head) train; the
reference policy of a KL penalty is then the same network with the adapter switched off
(:meth:`HFPolicy.reference`), so it costs no memory. Without LoRA the reference is a frozen copy. A LoRA
policy's :meth:`HFPolicy.state_dict` (what a checkpoint stores) holds only the adapters and heads, and a
fingerprint of the frozen base they go with; a resumed run loads the base again from ``Config.hf_model``.

**Precision** (:func:`pick_dtype`): fp32 on a CPU; bf16 on an Ampere or newer GPU; fp16 on an older one
(a T4), with the frozen base weights in fp16, trainable weights in fp32, the forward pass under fp16
autocast and a gradient scaler (``HFPolicy.grad_scaler``) for the trainer's backward pass; the trainer stores the
scaler's state (its loss scale and growth tracker) in the checkpoint and restores it on resume.

Deviations from TinyGPT's policy: no cached warm start (the model is pretrained); dropout is switched
off everywhere (sampling and training must compute the same probabilities); ``generate`` draws from
the global torch generator, so :meth:`HFPolicy.generate` seeds it from the trainer's generator inside a
``fork_rng`` (the same seed gives the same tokens, and the global state is left as it was).
"""

from __future__ import annotations

import contextlib
import copy
import os
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

from rltutor.utils import get_device

__all__ = [
    "HFPolicy",
    "load_hf",
    "pick_dtype",
    "memory_of",
    "measured_state_bytes",
    "char_tokenizer",
    "save_random_model",
    "bias_lm_head",
    "DTYPES",
    "HF_CRITICS",
]

HF_CRITICS = ("none", "head", "separate")
DTYPES = ("auto", "fp32", "bf16", "fp16")
"""``Config.hf_dtype``: "auto" is :func:`pick_dtype`'s choice for the device"""
_TORCH_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def pick_dtype(device, dtype: str = "auto") -> str:
    """The precision to train in: ``dtype`` if given, else fp32 on a CPU (or mps), bf16 on a CUDA GPU of
    compute capability 8 or more (Ampere: A100, L4, RTX 30xx; Hopper), fp16 on an older one (T4, V100)."""
    if dtype not in DTYPES:
        raise ValueError(f"unknown hf_dtype {dtype!r}; valid: {', '.join(DTYPES)}")
    device = torch.device(device)
    if dtype != "auto":
        if dtype != "fp32" and device.type == "cpu":
            raise ValueError(f"hf_dtype={dtype!r} needs a GPU; on a CPU use fp32 (or auto)")
        return dtype
    if device.type != "cuda":
        return "fp32"
    return "bf16" if torch.cuda.get_device_capability(device)[0] >= 8 else "fp16"


def load_hf(name_or_path: str, device=None, dtype: str = "fp32"):
    """``(model, tokenizer)`` from a hub name or a local folder; a ValueError of one line when it fails.

    A local folder (``save_pretrained`` of a model and its tokenizer) is read without the network. The
    weights are loaded in ``dtype`` (fp16 loads fp32 weights: :class:`HFPolicy` keeps what trains in fp32).
    """
    if not isinstance(name_or_path, str) or not name_or_path.strip():
        raise ValueError(f"--hf-model must name a model or a local folder, got {name_or_path!r}")
    how = (
        "give a local folder holding config.json, the weights and the tokenizer files (on a machine with a "
        "network: AutoModelForCausalLM.from_pretrained(NAME).save_pretrained(DIR) and the same for "
        "AutoTokenizer), then --hf-model DIR"
    )
    try:
        import transformers
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError:
        raise ValueError(
            "--hf-model needs the transformers package: pip install 'rltutor[hf]' (Python 3.11 or newer)"
        ) from None
    transformers.logging.set_verbosity_error()  # no per-weight progress bars and notes in a run's output
    transformers.utils.logging.disable_progress_bar()
    local = os.path.isdir(name_or_path)
    if os.path.sep in name_or_path and not local:
        raise ValueError(f"--hf-model {name_or_path}: no such folder; {how}")
    load_dtype = torch.float32 if dtype == "fp16" else _TORCH_DTYPES[dtype]
    try:
        tokenizer = AutoTokenizer.from_pretrained(name_or_path, local_files_only=local)
        model = AutoModelForCausalLM.from_pretrained(name_or_path, dtype=load_dtype, local_files_only=local)
    except Exception as e:  # no network, an unknown name, not a causal LM, a folder without a tokenizer...
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        raise ValueError(
            f"--hf-model {name_or_path}: cannot load a causal language model and its tokenizer "
            f"({type(e).__name__}: {first}); {how}"
        ) from None
    return model.to(get_device(device)), tokenizer


def _no_dropout(model: nn.Module) -> None:
    """Dropout off everywhere: the sampler and the trainer must compute the same probabilities."""
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
        if isinstance(getattr(m, "attention_dropout", None), float):
            m.attention_dropout = 0.0


def _lora(model, rank: int, alpha: float | None):
    try:
        from peft import LoraConfig, get_peft_model
    except ImportError:
        raise ValueError("--lora-rank needs the peft package: pip install 'rltutor[hf]'") from None
    cfg = LoraConfig(
        r=rank,
        lora_alpha=alpha if alpha is not None else 2 * rank,
        lora_dropout=0.0,  # dropout would make the trainer's probabilities differ from the sampler's
        target_modules="all-linear",  # every linear layer of the blocks (not the output head)
        task_type="CAUSAL_LM",
    )
    with warnings.catch_warnings():  # peft 0.21 calls a transformers name deprecated in 5.x
        warnings.simplefilter("ignore", FutureWarning)
        return get_peft_model(model, cfg)  # the adapters' weights in fp32 (peft's autocast_adapter_dtype)


def _value_head(width: int, device) -> nn.Linear:
    head = nn.Linear(width, 1).to(device)  # fp32 whatever the trunk's precision
    nn.init.zeros_(head.weight)  # a critic that starts at V = 0 everywhere
    nn.init.zeros_(head.bias)
    return head


class HFPolicy(nn.Module):
    """A Hugging Face causal LM behind the trainer's Policy protocol (see the module docstring).

    :param model: a ``transformers`` causal LM (``load_hf``), in the precision :func:`pick_dtype` chose.
    :param tokenizer: its tokenizer; gives the end-of-sequence ids (with the ones the model's generation
        config lists, e.g. Qwen's ``<|im_end|>``) and the padding id (the end id where it has none).
    :param critic_kind: ``"none"``, ``"head"`` or ``"separate"``.
    :param temperature: tau of sampling; ``evaluate`` divides the logits by the same tau.
    :param lora_rank: 0 trains every weight; r > 0 trains rank-r LoRA adapters only (peft).
    :param grad_checkpointing: recompute the blocks' activations in the backward pass (less memory,
        about a third more compute).
    :param dtype: "fp32", "bf16" or "fp16" (fp16: autocast and ``grad_scaler``).
    """

    def __init__(
        self,
        model: nn.Module,
        tokenizer,
        critic_kind: str = "none",
        temperature: float = 1.0,
        lora_rank: int = 0,
        lora_alpha: float | None = None,
        grad_checkpointing: bool = False,
        dtype: str = "fp32",
    ):
        super().__init__()
        if critic_kind not in HF_CRITICS:
            raise ValueError(f"unknown critic_kind {critic_kind!r}; valid: {', '.join(HF_CRITICS)}")
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0 for RL (sampling and training must match), got {temperature!r}")
        if isinstance(lora_rank, bool) or not isinstance(lora_rank, int) or lora_rank < 0:
            raise ValueError(f"lora_rank must be an integer >= 0 (0: no LoRA), got {lora_rank!r}")
        if dtype not in _TORCH_DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(_TORCH_DTYPES)}, got {dtype!r}")
        from transformers import GenerationConfig

        self.critic_kind, self.temperature, self.lora_rank, self.dtype = (
            critic_kind,
            float(temperature),
            lora_rank,
            dtype,
        )
        self.tokenizer = tokenizer
        eos = [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else []
        listed = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
        eos += [listed] if isinstance(listed, int) else list(listed or [])
        if not eos:
            raise ValueError("the tokenizer has no eos_token and the model's generation config lists none; set one")
        self.eos_ids = sorted(set(eos))
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_ids[0]
        # A clean generation config: a model's own (Qwen-Instruct: top_k=20, top_p=0.8, repetition_penalty)
        # would sample from another distribution than the one evaluate() computes.
        model.generation_config = GenerationConfig(eos_token_id=self.eos_ids, pad_token_id=self.pad_id)
        _no_dropout(model)
        device = next(model.parameters()).device
        if dtype == "fp16" and lora_rank > 0:
            model = model.half()  # the frozen base in fp16; the adapters peft adds stay fp32
        width = model.config.get_text_config().hidden_size
        self.critic = None
        if critic_kind == "separate":
            self.critic = copy.deepcopy(model)
            if lora_rank > 0:
                self.critic = _lora(self.critic, lora_rank, lora_alpha)
            self.critic_head = _value_head(width, device)
        if lora_rank > 0:
            model = _lora(model, lora_rank, lora_alpha)
        self.model = model
        self.value_head = _value_head(width, device) if critic_kind == "head" else None
        self.has_critic = critic_kind != "none"
        if grad_checkpointing:
            for m in (self.model, self.critic):
                if m is not None:
                    on = getattr(m, "activation_checkpointing_enable", None)  # transformers >= 5.x's name
                    if on is not None:
                        on(activation_checkpointing_kwargs={"use_reentrant": False})
                    else:
                        m.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
                    if lora_rank > 0:
                        m.enable_input_require_grads()
        self.grad_scaler = torch.amp.GradScaler(device.type) if dtype == "fp16" else None

    # ------------------------------------------------------------------------------------------
    # Shapes and masks
    # ------------------------------------------------------------------------------------------

    def _autocast(self, device):
        if self.dtype == "fp16":
            return torch.autocast(device.type, dtype=torch.float16)
        return contextlib.nullcontext()

    def prompt_mask(self, prompts: torch.Tensor) -> torch.Tensor:
        """(B, P) 1 at the real tokens of left-padded prompts: every position from the first non-pad token on."""
        return ((prompts != self.pad_id).cumsum(1) > 0).long()

    def completion_mask(self, responses: torch.Tensor) -> torch.Tensor:
        """(B, T) float, 1 for the tokens up to and including the first end-of-sequence id."""
        is_eos = torch.isin(responses, torch.tensor(self.eos_ids, device=responses.device))
        before = (is_eos.long().cumsum(1) - is_eos.long()) == 0  # no EOS strictly before this position
        return before.float()

    # ------------------------------------------------------------------------------------------
    # Sampling
    # ------------------------------------------------------------------------------------------

    @torch.no_grad()
    def generate(
        self,
        prompts: torch.Tensor,
        max_new_tokens: int,
        generator: torch.Generator | None = None,
        stop_early: bool = True,
        prompt_mask: torch.Tensor | None = None,
        greedy: bool = False,
    ) -> dict:
        """G completions of left-padded ``prompts`` (B, P) with the model's ``generate`` and KV cache.

        Returns ``tokens`` (B, P + T), ``responses`` (B, T), ``logp`` (B, T) = log pi_tau(o_t | q, o_<t),
        ``entropy`` (B, T), ``mask`` (B, T) (up to and including the first EOS), ``prompt_mask`` (B, P)
        and, with a value head, ``values`` (B, T). ``stop_early=False`` pads to ``T = max_new_tokens``.
        ``greedy``: argmax decoding, with the log-probs of the untempered distribution.
        """
        if not isinstance(prompts, torch.Tensor) or prompts.dim() != 2 or prompts.dtype != torch.long:
            raise ValueError("prompts must be a LongTensor (B, P) of left-padded token ids (TextCollector makes them)")
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be a positive integer, got {max_new_tokens!r}")
        from transformers import GenerationConfig

        device = next(self.model.parameters()).device
        prompts = prompts.to(device)
        am = (self.prompt_mask(prompts) if prompt_mask is None else prompt_mask.to(device)).long()
        B, P = prompts.shape
        tau = 1.0 if greedy else self.temperature
        gen = GenerationConfig(
            do_sample=not greedy,
            temperature=tau if not greedy else None,
            top_k=0 if not greedy else None,  # no top-k and no top-p: the plain softmax(logits / tau)
            top_p=1.0 if not greedy else None,
            max_new_tokens=max_new_tokens,
            eos_token_id=self.eos_ids,
            pad_token_id=self.pad_id,
            return_dict_in_generate=True,
            output_logits=True,
            output_scores=True,
            use_cache=True,
        )
        seed = int(torch.randint(0, 2**62, (1,), generator=generator)) if generator is not None else None
        was_training = self.training
        self.eval()
        devices = [device] if device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices), self._autocast(device):
            if seed is not None:
                torch.manual_seed(seed)  # generate draws from the global generator: seed it from the trainer's
            base = self.model.get_base_model() if hasattr(self.model, "get_base_model") else self.model
            # generate fills the fields left unset from the model's own config: make that one clean, every call
            base.generation_config = GenerationConfig(eos_token_id=self.eos_ids, pad_token_id=self.pad_id)
            out = self.model.generate(input_ids=prompts, attention_mask=am, generation_config=gen)
        self.train(was_training)
        seq = out.sequences  # (B, P + T')
        responses = seq[:, P:]
        T = responses.shape[1]
        logp, entropy = [], []
        for t in range(T):  # one step at a time: never a (B, T, V) copy of the logits (V is ~150k for Qwen)
            lg = out.logits[t].float()  # (B, V) the raw next-token scores
            logprobs = F.log_softmax(lg if greedy or tau == 1.0 else lg / tau, -1)  # log pi_tau
            if not greedy and not torch.allclose(logprobs, F.log_softmax(out.scores[t].float(), -1), atol=1e-4, rtol=0):
                raise ValueError(  # out.scores: what generate sampled from
                    "generate changed the logits before sampling (a top-k, top-p or repetition penalty?); "
                    "the trainer's log-probs would be of another distribution: this is a bug in HFPolicy"
                )
            logp.append(logprobs.gather(-1, responses[:, t : t + 1]).squeeze(-1))  # log pi(o_t | q, o_<t)
            entropy.append(-(logprobs.exp() * logprobs).sum(-1))  # H(pi(. | q, o_<t))
        logp, entropy = torch.stack(logp, 1), torch.stack(entropy, 1)  # (B, T)
        del out
        mask = self.completion_mask(responses)
        if not stop_early and T < max_new_tokens:  # full width, so batches concatenate
            extra = max_new_tokens - T
            responses = F.pad(responses, (0, extra), value=self.pad_id)
            logp, entropy, mask = (F.pad(x, (0, extra)) for x in (logp, entropy, mask))
            seq = torch.cat([prompts, responses], 1)
        res = {
            "tokens": seq,
            "responses": responses,
            "logp": logp * mask,
            "entropy": entropy * mask,
            "mask": mask,
            "prompt_mask": am,
        }
        if self.value_head is not None:  # V(s_t) of the sampled tokens: one more forward pass, no gradient
            batch = {"tokens": seq, "prompt_len": P, "actions": responses, "prompt_mask": am}
            res["values"] = self.evaluate(batch)["values"] * mask
        return {k: v.detach().clone() for k, v in res.items()}

    # ------------------------------------------------------------------------------------------
    # Log-probs of stored completions
    # ------------------------------------------------------------------------------------------

    def _forward(self, model, tokens, attn, P, want_hidden: bool):
        """Logits (B, T, V) predicting o_0 .. o_{T-1} and the last hidden state (B, T, C) at the same positions."""
        pos = (attn.cumsum(1) - 1).clamp(min=0)  # positions count real tokens only, as generate's do
        with self._autocast(tokens.device):
            out = model(
                input_ids=tokens[:, :-1],
                attention_mask=attn[:, :-1],
                position_ids=pos[:, :-1],
                output_hidden_states=want_hidden,
                use_cache=False,
            )
        logits = out.logits[:, P - 1 :].float()  # (B, T, V): position j predicts token j+1
        hidden = out.hidden_states[-1][:, P - 1 :].float() if want_hidden else None  # (B, T, C)
        return logits, hidden

    def evaluate(self, batch: dict) -> dict:
        """log pi_theta (B, T), entropy (B, T) and values (B, T) or None for the stored token ids."""
        for key in ("tokens", "prompt_len", "actions"):
            if key not in batch:
                raise ValueError(
                    f"an LM batch needs {key!r}; got keys {sorted(batch)}. Build it with "
                    "rltutor.rollout.text.TextCollector"
                )
        tokens, pl = batch["tokens"], batch["prompt_len"]
        P = int(pl.reshape(-1)[0]) if isinstance(pl, torch.Tensor) else int(pl)
        if isinstance(pl, torch.Tensor) and pl.numel() > 1 and not bool((pl == P).all()):
            raise ValueError(f"all rows of an LM batch must share one prompt_len; got {sorted(set(pl.tolist()))}")
        B, L = tokens.shape
        if not 1 <= P < L or L - P != batch["actions"].shape[1]:
            raise ValueError(
                f"tokens (B, {L}) minus prompt_len {P} must equal the width of actions {tuple(batch['actions'].shape)}"
            )
        pm = batch.get("prompt_mask")
        pm = self.prompt_mask(tokens[:, :P]) if pm is None else pm.long()
        attn = torch.cat([pm, torch.ones(B, L - P, dtype=torch.long, device=tokens.device)], 1)  # (B, P + T)
        logits, hidden = self._forward(self.model, tokens, attn, P, self.value_head is not None)
        if self.temperature != 1.0:
            logits = logits / self.temperature
        logprobs = F.log_softmax(logits, -1)
        logp = logprobs.gather(-1, tokens[:, P:].unsqueeze(-1)).squeeze(-1)  # log pi(o_t | q, o_<t)
        entropy = -(logprobs.exp() * logprobs).sum(-1)  # H(pi(. | q, o_<t))
        values = None
        if self.value_head is not None:
            values = self.value_head(hidden).squeeze(-1)  # V(s_t), s_t = (q, o_<t)
        elif self.critic is not None:
            _, h = self._forward(self.critic, tokens, attn, P, True)
            values = self.critic_head(h).squeeze(-1)
        return {"logp": logp, "entropy": entropy, "values": values}

    # ------------------------------------------------------------------------------------------
    # Checkpoints: under LoRA, only what training changes
    # ------------------------------------------------------------------------------------------

    def trained_names(self) -> list[str]:
        """The names of the parameters that train (under LoRA: the adapters and the value heads)."""
        return [n for n, p in self.named_parameters() if p.requires_grad]

    def base_fingerprint(self) -> torch.Tensor:
        """(n, 2) float64: the sum and the sum of squares of each frozen parameter, in order. A LoRA checkpoint
        stores it, so resuming onto another base than the one the adapters were trained on is refused."""
        rows = [(p.double().sum(), p.double().square().sum()) for p in self.parameters() if not p.requires_grad]
        return torch.tensor([[float(a), float(b)] for a, b in rows], dtype=torch.float64).reshape(-1, 2)

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """Without LoRA, every weight (``nn.Module.state_dict``). Under LoRA, only what training changed: the
        adapters, the value head (and a separate critic's adapters and head), and :meth:`base_fingerprint` under
        ``"base_fingerprint"``; the frozen base is not copied into the checkpoint, since a resumed run loads it again
        from ``Config.hf_model`` (the folder or hub name its config.json names) before :meth:`load_state_dict`."""
        state = super().state_dict(*args, destination=destination, prefix=prefix, keep_vars=keep_vars)
        if self.lora_rank == 0 or prefix:
            return state
        trained = set(self.trained_names())
        out = type(state)((k, v) for k, v in state.items() if k in trained)
        out["base_fingerprint"] = self.base_fingerprint()
        return out

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Under LoRA, load :meth:`state_dict`'s adapters and heads onto this policy's base, after checking the
        base is the one they were trained on (:meth:`base_fingerprint`) and that they are exactly the
        parameters that train here; without LoRA, ``nn.Module.load_state_dict``."""
        if self.lora_rank == 0:
            return super().load_state_dict(state_dict, strict=strict, assign=assign)
        state = dict(state_dict)
        seen = state.pop("base_fingerprint", None)
        own = self.base_fingerprint()
        if seen is None or seen.shape != own.shape or not torch.allclose(seen.double(), own, rtol=1e-3, atol=1e-6):
            raise ValueError(
                "the LoRA checkpoint's adapters were trained on another base model than the one loaded now (the "
                "frozen weights' sums differ); resume with the same --hf-model folder or hub revision"
            )
        trained = set(self.trained_names())
        if set(state) != trained:
            wrong = sorted(set(state) ^ trained)
            raise ValueError(f"the LoRA checkpoint does not fit this policy: {wrong[:4]} missing or unexpected")
        return super().load_state_dict(state, strict=False, assign=assign)

    # ------------------------------------------------------------------------------------------
    # The reference policy
    # ------------------------------------------------------------------------------------------

    def reference(self):
        """pi_ref for a KL penalty: under LoRA this very network with the adapter switched off
        (:class:`AdapterOff`, no memory); otherwise a frozen copy of the policy, without its critic."""
        if self.lora_rank > 0:
            return AdapterOff(self)
        critic, head = self.critic, self.value_head
        self.critic, self.value_head = None, None
        try:
            ref = copy.deepcopy(self)
        finally:
            self.critic, self.value_head = critic, head
        return ref.requires_grad_(False).eval()


class AdapterOff:
    """The base model under a LoRA policy: :meth:`evaluate` runs with the adapter disabled. It holds no
    weights of its own (``state_dict() == {}``)."""

    def __init__(self, policy: HFPolicy):
        self.policy = policy

    def evaluate(self, batch: dict) -> dict:
        with self.policy.model.disable_adapter():
            out = self.policy.evaluate(batch)
        return {**out, "values": None}

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        if state:
            raise ValueError(f"a LoRA reference holds no weights, but the checkpoint has {len(state)} for it")


# ----------------------------------------------------------------------------------------------
# What the critic costs
# ----------------------------------------------------------------------------------------------


def memory_of(policy: HFPolicy) -> dict:
    """Parameters (all, and trainable) and the bytes of weights + gradients + Adam's two moments.

    Weights count at their own precision; each trainable parameter adds a gradient of its precision and
    two fp32 Adam moments. Activations are left out (they depend on the batch: measure them with
    ``torch.cuda.max_memory_allocated``)."""
    total = trainable = state = 0
    for p in policy.parameters():
        total += p.numel()
        state += p.numel() * p.element_size()
        if p.requires_grad:
            trainable += p.numel()
            state += p.numel() * (p.element_size() + 8)
    return {"params": total, "trainable": trainable, "train_state_bytes": state}


def measured_state_bytes(policy: nn.Module, optimizer: torch.optim.Optimizer | None = None) -> dict:
    """Bytes held *now* by the policy's weights, their gradients and the optimizer's state (Adam's moments):
    the sizes of the tensors themselves, so after one update this is what training keeps between steps
    (activations, which come and go within a step, are not counted)."""
    weights = sum(p.numel() * p.element_size() for p in policy.parameters())
    grads = sum(p.grad.numel() * p.grad.element_size() for p in policy.parameters() if p.grad is not None)
    opt = 0
    if optimizer is not None:
        for state in optimizer.state.values():
            opt += sum(t.numel() * t.element_size() for t in state.values() if isinstance(t, torch.Tensor))
    return {"weights": weights, "grads": grads, "optimizer": opt, "total": weights + grads + opt}


# ----------------------------------------------------------------------------------------------
# Random models, offline (the tests, the chapter on a CPU, scripts/gpu_check.sh)
# ----------------------------------------------------------------------------------------------

SPECIALS = ("<pad>", "<eos>", "<|im_start|>", "<|im_end|>")
MERGED = "12"
"""the one token of :func:`char_tokenizer` that is not a character: encoding never makes it"""
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""a ChatML template (Qwen's format) for :func:`char_tokenizer`"""
SIZES = {
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4),
    "0.5B": dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14),
}
"""shapes of :func:`save_random_model`: "tiny" (~10^5 parameters), "0.5B" (Qwen2.5-0.5B: 494M with its vocabulary)"""


def _byte_chars() -> dict[int, str]:
    """GPT-2's byte-to-character table (byte-level BPE writes a space as "Ġ", a newline as "Ċ")."""
    bs = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs, strict=True)}


def char_tokenizer(chat: bool = True, vocab_size: int | None = None):
    """A tokenizer built with the ``tokenizers`` library, no download: one token per printable character (written
    byte-level, as Qwen's and GPT-2's tokenizers write them, so that ``AutoTokenizer`` reads it back the same for a
    Qwen2 model), the special tokens of :data:`SPECIALS`, and one *merged* token :data:`MERGED` that encoding
    never produces (a completion that samples it decodes to "12", which encodes back as "1", "2": a
    decode-encode round trip that changes the ids). ``chat`` adds :data:`CHAT_TEMPLATE`; ``vocab_size`` pads the
    vocabulary with filler tokens (a real model's embedding size)."""
    import string

    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    b2u = _byte_chars()
    chars = sorted(set(string.digits + string.ascii_letters + string.punctuation + " \n"))
    vocab = {t: i for i, t in enumerate([*SPECIALS, *(b2u[ord(c)] for c in chars), MERGED])}
    if vocab_size is not None:
        vocab.update({f"<t{i}>": i for i in range(len(vocab), vocab_size)})
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.Sequence(  # bytes to characters, then every character on its own
        [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False), pre_tokenizers.Split("", "isolated")]
    )
    tok.decoder = decoders.ByteLevel()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", additional_special_tokens=list(SPECIALS[2:])
    )
    if chat:
        fast.chat_template = CHAT_TEMPLATE
    return fast


def bias_lm_head(model, token_id: int, logit: float = 4.0) -> None:
    """Give ``model``'s output layer a bias of ``logit`` on ``token_id`` (0 elsewhere), its weights unchanged, so
    that sampling draws that token often but never only it: how the tests make the random models sample
    :data:`MERGED`, the token no encoding produces."""
    head = model.lm_head
    biased = torch.nn.Linear(head.in_features, head.out_features, bias=True)
    with torch.no_grad():
        biased.weight.copy_(head.weight)
        biased.bias.zero_()
        biased.bias[token_id] = logit
    model.lm_head = biased


def save_random_model(folder, arch: str = "qwen2", size: str = "tiny", seed: int = 0) -> str:
    """Write a random-weight causal LM and its tokenizer (:func:`char_tokenizer`) to ``folder`` with
    ``save_pretrained``, so that ``--hf-model folder`` loads it like a model from the hub; returns the folder.

    ``arch``: "qwen2" (tied embeddings, a chat template, ``<|im_end|>`` also ends a completion) or "llama"
    (untied, no template). ``size``: a key of :data:`SIZES` (the "0.5B" model has Qwen2.5's vocabulary size)."""
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    if arch not in ("qwen2", "llama"):
        raise ValueError(f"unknown arch {arch!r}; valid: llama, qwen2")
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}; valid: {', '.join(SIZES)}")
    tok = char_tokenizer(chat=arch == "qwen2", vocab_size=151936 if size == "0.5B" else None)
    common = dict(
        vocab_size=len(tok),
        **SIZES[size],
        num_key_value_heads=2,
        max_position_embeddings=4096,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(seed)
    if arch == "qwen2":
        model = Qwen2ForCausalLM(Qwen2Config(tie_word_embeddings=True, **common))
        model.generation_config.eos_token_id = [tok.eos_token_id, tok.convert_tokens_to_ids("<|im_end|>")]
    else:
        model = LlamaForCausalLM(LlamaConfig(tie_word_embeddings=False, **common))
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)
