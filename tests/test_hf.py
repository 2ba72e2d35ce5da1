"""Any Hugging Face causal LM as policy and critic (rltutor.models.hf, chapter 13), tested offline.

Tiny random Qwen2 (with a chat template) and Llama (without) models of ~10^5 parameters and a character
tokenizer are built here (rltutor.models.hf.save_random_model), saved with ``save_pretrained`` and loaded back through
``--hf-model PATH``: no download. transformers 5.24 needs Python 3.11; without it (or without peft, for
the LoRA tests) these tests skip and say so.
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers", reason="the hf extra (transformers, Python >= 3.11) is not installed")

from rltutor.advantages import compute_advantages  # noqa: E402
from rltutor.cli import main  # noqa: E402
from rltutor.config import resolve  # noqa: E402
from rltutor.envs.text import AdditionText, CountdownText, make_text_task, parse_expression  # noqa: E402
from rltutor.losses import policy_loss, value_loss  # noqa: E402
from rltutor.models.hf import MERGED, HFPolicy, bias_lm_head, load_hf, memory_of, save_random_model  # noqa: E402
from rltutor.rollout.text import TextCollector  # noqa: E402
from rltutor.train import Trainer  # noqa: E402

torch.set_num_threads(1)


def _has_peft() -> bool:
    try:
        import peft  # noqa: F401
    except ImportError:
        return False
    return True


needs_peft = pytest.mark.skipif(not _has_peft(), reason="LoRA needs peft (pip install 'rltutor[hf]')")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf")
    return {arch: save_random_model(root / arch, arch) for arch in ("qwen2", "llama")}


def _policy(path, **kw):
    torch.manual_seed(0)
    model, tok = load_hf(path)
    return HFPolicy(model, tok, **kw)


def _batch(policy, task="addition-text", seed=0, n=2, G=4):
    col = TextCollector(make_text_task(task), policy.tokenizer, n, G)
    return col.collect(policy, torch.Generator().manual_seed(seed))[0]


def _with_rewards(batch, seed=0):
    """The batch with 0/1 outcome rewards that differ inside each group (so every advantage is not 0)."""
    b = dict(batch)
    B, T = b["mask"].shape
    r = (torch.arange(B) % 2).float()  # alternate right and wrong within each group of 4
    last = (b["mask"].sum(1).long() - 1).clamp(min=0)
    rewards = torch.zeros(B, T)
    rewards[torch.arange(B), last] = r
    b["rewards"] = rewards
    return b


# ----------------------------------------------------------------------------------------------
# The sampler and evaluate
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("arch", ["qwen2", "llama"])
@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_sampler_logp_equal_evaluate_on_the_same_ids(models, arch, temperature):
    policy = _policy(models[arch], temperature=temperature)
    batch = _batch(policy, n=4, G=2)
    m = batch["mask"]
    assert m.sum() > 0 and batch["prompt_mask"].shape == batch["tokens"][:, : int(batch["prompt_len"][0])].shape
    out = policy.evaluate(batch)
    assert out["logp"].shape == m.shape
    assert torch.allclose(out["logp"] * m, batch["logp"], atol=1e-4), (out["logp"] * m - batch["logp"]).abs().max()
    # the prompts were left-padded to one width: rows of different prompt lengths exist
    assert (batch["prompt_mask"] == 0).any()


def test_left_padding_changes_no_probability(models):
    """A prompt padded on the left gets the log-probs it gets alone (position ids count real tokens only)."""
    policy = _policy(models["llama"])
    batch = _batch(policy, n=4, G=1)
    pm = batch["prompt_mask"]
    i = int((pm.sum(1)).argmin())  # the most padded row
    P = pm.shape[1]
    pad = int(P - pm[i].sum())
    assert pad > 0
    alone = {
        "tokens": batch["tokens"][i : i + 1, pad:],
        "prompt_len": P - pad,
        "actions": batch["actions"][i : i + 1],
        "prompt_mask": pm[i : i + 1, pad:],
    }
    got = policy.evaluate(alone)["logp"][0] * batch["mask"][i]
    assert torch.allclose(got, batch["logp"][i], atol=1e-4)


def test_no_completion_is_retokenised(models):
    """A token ("12") that encoding never makes is sampled; the batch keeps its id, and the trainer's log-probs
    are of that id, while decoding and encoding the text again would give other ids ("1", "2")."""
    policy = _policy(models["llama"])
    tok = policy.tokenizer
    merged = tok.convert_tokens_to_ids(MERGED)
    bias_lm_head(policy.model, merged)  # sampled often, never the only choice
    col = TextCollector(AdditionText(), tok, 2, 4)
    batch, _ = col.collect(policy, torch.Generator().manual_seed(0))
    m = batch["mask"].bool()
    assert (batch["actions"][m] == merged).any(), "the merged token was not sampled: the test would prove nothing"
    row = int(((batch["actions"] == merged) & m).any(1).nonzero()[0])
    ids = batch["actions"][row][m[row]].tolist()
    ids = [t for t in ids if t not in policy.eos_ids]
    again = tok(tok.decode(ids), add_special_tokens=False)["input_ids"]
    assert again != ids  # this tokenizer's round trip changes the ids...
    out = policy.evaluate(batch)  # ...and the trainer scores the ids the sampler drew
    assert torch.allclose(out["logp"] * batch["mask"], batch["logp"], atol=1e-4)


def test_masked_positions_cannot_change_the_loss(models):
    policy = _policy(models["qwen2"], critic_kind="head")
    batch = _with_rewards(_batch(policy))
    m = batch["mask"]
    adv, _ = compute_advantages("grpo", rewards=batch["rewards"], mask=m, values=None, group_ids=batch["group_ids"])

    def loss(b):
        out = policy.evaluate(b)
        pl, _ = policy_loss(out["logp"], b["logp"], adv, m, kind="ppo", agg="token-mean")
        return pl + value_loss(out["values"], b["values"], torch.ones_like(m), m)

    before = loss(batch)
    other = dict(batch)
    g = torch.Generator().manual_seed(5)
    noise = torch.randint(4, len(policy.tokenizer), batch["tokens"].shape, generator=g)
    P = int(batch["prompt_len"][0])
    free = torch.cat([batch["prompt_mask"] == 0, m == 0], 1)  # prompt padding and everything after EOS
    assert free.any()
    other["tokens"] = torch.where(free, noise, batch["tokens"])
    other["actions"] = other["tokens"][:, P:]
    other["logp"] = torch.where(m > 0, batch["logp"], torch.randn(m.shape, generator=g))
    assert torch.allclose(loss(other), before, atol=1e-5)


# ----------------------------------------------------------------------------------------------
# Updates through the one trainer
# ----------------------------------------------------------------------------------------------


def _trainer(path, algo, **sets):
    cfg = resolve(algo, "addition-text", "quick", sets={"hf_model": path, "device": "cpu", "lr": 3e-3, **sets})
    return Trainer(cfg)


def _fixed_batch_loss(trainer, batch):
    c = trainer.config
    with torch.no_grad():
        m = batch["mask"]
        adv, ret = compute_advantages(
            c.estimator,
            rewards=batch["rewards"],
            mask=m,
            values=batch.get("values"),
            group_ids=batch["group_ids"],
            gamma=c.gamma,
            lam=c.lam,
        )
        out = trainer.policy.evaluate(batch)
        pl, _ = policy_loss(out["logp"], batch["logp"], adv, m, kind=c.loss, agg=c.agg)
        if out["values"] is not None:
            pl = pl + c.vf_coef * value_loss(out["values"], batch["values"], ret, m)
    return float(pl)


@pytest.mark.parametrize(
    "algo, sets",
    [("grpo", {}), ("ppo", {"critic_kind": "head"}), ("ppo", {"critic_kind": "separate"})],
    ids=["grpo", "ppo-head", "ppo-separate"],
)
def test_an_update_changes_the_parameters_and_lowers_the_loss(models, algo, sets):
    trainer = _trainer(models["qwen2"], algo, epochs=4, minibatches=1, **sets)
    batch, _ = trainer.collector.collect(trainer.policy, trainer.generator)
    batch = _with_rewards(batch)
    before = {k: v.detach().clone() for k, v in trainer.policy.named_parameters()}
    l0 = _fixed_batch_loss(trainer, batch)
    trainer.update(batch)
    l1 = _fixed_batch_loss(trainer, batch)
    changed = [k for k, v in trainer.policy.named_parameters() if not torch.equal(v, before[k])]
    assert any(k.startswith("model.") for k in changed)
    if sets.get("critic_kind") == "separate":
        assert any(k.startswith("critic.") for k in changed) and any(k.startswith("critic_head") for k in changed)
    assert l1 < l0, (l0, l1)


@needs_peft
def test_lora_changes_only_adapter_weights_and_the_reference_is_the_base(models):
    trainer = _trainer(models["llama"], "ppo", lora_rank=4, kl_coef=0.1, epochs=2, minibatches=1)
    policy = trainer.policy
    batch = _with_rewards(trainer.collector.collect(policy, trainer.generator)[0])
    before = {k: v.detach().clone() for k, v in policy.named_parameters()}
    trainer.update(batch)
    changed = [k for k, v in policy.named_parameters() if not torch.equal(v, before[k])]
    assert changed and all("lora_" in k or k.startswith("value_head") for k in changed), changed
    assert any("lora_" in k for k in changed)
    base, _ = load_hf(models["llama"])
    base_policy = HFPolicy(base, policy.tokenizer)
    with torch.no_grad():
        ref = trainer.ref_policy.evaluate(batch)["logp"]
        want = base_policy.evaluate(batch)["logp"]
        now = policy.evaluate(batch)["logp"]
    assert torch.allclose(ref, want, atol=1e-5)  # the adapter switched off is the base model
    assert not torch.allclose(now, want, atol=1e-5)  # and the policy has moved away from it
    assert trainer.ref_policy.state_dict() == {}  # it holds no weights of its own
    mem = memory_of(policy)
    assert mem["trainable"] < mem["params"] / 5


@pytest.mark.parametrize("kind", ["head", "separate"])
def test_value_head_shapes_and_gradient(models, kind):
    policy = _policy(models["qwen2"], critic_kind=kind)
    batch = _batch(policy)
    out = policy.evaluate(batch)
    assert out["values"].shape == batch["mask"].shape
    assert torch.equal(out["values"], torch.zeros_like(out["values"]))  # a critic that starts at V = 0
    policy.zero_grad()
    (out["values"] * batch["mask"]).sum().backward()
    head = policy.value_head if kind == "head" else policy.critic_head
    assert head.weight.grad is not None and head.weight.grad.abs().sum() > 0
    trunk = policy.model if kind == "head" else policy.critic
    # a zero head passes no gradient into the trunk yet: give it a weight and look again
    with torch.no_grad():
        head.weight.fill_(0.1)
    policy.zero_grad()
    (policy.evaluate(batch)["values"] * batch["mask"]).sum().backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in trunk.parameters())
    if kind == "separate":  # the separate critic's loss does not reach the policy
        assert all(p.grad is None or p.grad.abs().sum() == 0 for p in policy.model.parameters())


def test_resume_equals_an_uninterrupted_run(models, tmp_path):
    sets = dict(critic_kind="head", eval_every=2)
    whole = _trainer(models["qwen2"], "ppo", **sets)
    whole.train(total_steps=600, progress=False)
    part = _trainer(models["qwen2"], "ppo", **sets)
    part.train(total_steps=300, progress=False, checkpoint=str(tmp_path / "c.pt"))
    resumed = Trainer.load(str(tmp_path / "c.pt"), total_steps=600)
    resumed.train(progress=False)
    skip = ("time_s", "sample_time")
    a = whole.history_frame().drop(columns=list(skip))
    b = resumed.history_frame().drop(columns=list(skip))
    assert len(a) >= 3 and a.shape == b.shape
    assert a.equals(b) or (a.fillna(-1) == b.fillna(-1)).all().all()


# ----------------------------------------------------------------------------------------------
# The command line
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arch, algo, extra",
    [
        ("qwen2", "grpo", []),
        ("llama", "ppo", ["--set", "critic_kind=head"]),
        ("qwen2", "ppo", ["--set", "critic_kind=separate", "--lora-rank", "4"]),
        ("llama", "grpo", ["--lora-rank", "4", "--env", "countdown-text"]),
    ],
    ids=["grpo", "ppo-head", "ppo-separate-lora", "grpo-lora-countdown"],
)
def test_cli_trains_a_local_model(models, tmp_path, capsys, arch, algo, extra):
    if "--lora-rank" in extra and not _has_peft():
        pytest.skip("LoRA needs peft")
    out = tmp_path / "run"
    argv = ["train", "--hf-model", models[arch], "--algo", algo, "--steps", "60", "--out", str(out), "--no-progress"]
    assert main(argv + extra + ["--set", "device=cpu"]) == 0, capsys.readouterr().err
    import pandas as pd

    m = pd.read_csv(out / "metrics.csv")
    assert {"policy_loss", "accuracy", "greedy_accuracy", "sample_time"} <= set(m.columns)
    assert (out / "checkpoint.pt").exists() and (out / "config.json").exists()
    # and it resumes with its stored config
    more = str(int(m["env_steps"].iloc[-1]) + 60)
    assert main(["train", "--out", str(out), "--resume", "--steps", more, "--no-progress"]) == 0
    assert len(pd.read_csv(out / "metrics.csv")) > len(m)


def test_load_error_is_one_line_that_says_how_to_use_a_local_folder(tmp_path, capsys):
    from transformers import ViTConfig

    missing = tmp_path / "no" / "such"
    assert main(["train", "--hf-model", str(missing), "--out", str(tmp_path / "a"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "local folder" in err and "--hf-model DIR" in err, err
    vit = tmp_path / "vit"  # a folder that holds a model, but not a causal LM
    ViTConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64).save_pretrained(vit)
    assert main(["train", "--hf-model", str(vit), "--out", str(tmp_path / "b"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "cannot load a causal language model" in err and "--hf-model DIR" in err, err
    assert not (tmp_path / "b" / "config.json").exists()


def test_text_task_needs_a_model_and_a_model_needs_a_text_task(models):
    with pytest.raises(ValueError, match="--hf-model"):
        resolve("grpo", "addition-text", "quick")
    with pytest.raises(ValueError, match="addition-text"):
        resolve("grpo", "addition", "quick", sets={"hf_model": models["llama"]})


# ----------------------------------------------------------------------------------------------
# The tasks in words
# ----------------------------------------------------------------------------------------------


def test_addition_text_verifier():
    task = AdditionText(max_operand=9)
    p = task.sample(1, torch.Generator().manual_seed(0))[0]
    assert task.verify(p, p.answer) == 1.0
    assert task.verify(p, f"The sum is {p.answer}.") == 1.0
    assert task.verify(p, f"{p.answer} or {int(p.answer) + 1}") == 0.0  # the last number counts
    assert task.verify(p, "") == 0.0


def test_countdown_verifier_and_parser():
    task = CountdownText(n_numbers=3, max_number=9)
    probs = task.sample(20, torch.Generator().manual_seed(0))
    assert all(task.verify(p, p.answer) == 1.0 for p in probs)
    p = probs[0]
    a, b, c = p.numbers
    assert task.verify(p, f"{a} + {a} + {a} + {a}") == 0.0 or p.numbers.count(a) >= 4  # a number used too often
    assert task.verify(p, "7 ** 2") == 0.0 and task.verify(p, "__import__('os')") == 0.0
    assert task.verify(p, f"{p.answer} = {task.target_of(p)}") == 1.0  # "expr = value" reads the expression
    wrong = f"{a} + {b} + {c}" if task.target_of(p) != a + b + c else f"{a} * {b} * {c} + 0"
    assert task.verify(p, wrong) in (0.1, 0.0)
    assert parse_expression("1" * 300) is None and parse_expression("(2+3)*4") == (20, [2, 3, 4])
    with pytest.raises(ValueError, match="unknown option"):
        make_text_task("countdown-text", numbers=3)


def test_separate_critic_costs_a_second_model(models):
    with_critic = memory_of(_policy(models["qwen2"], critic_kind="separate"))
    alone = memory_of(_policy(models["qwen2"]))
    assert with_critic["params"] > 1.9 * alone["params"]
    assert with_critic["train_state_bytes"] > 1.9 * alone["train_state_bytes"]


def test_a_models_own_sampling_defaults_cannot_make_sampling_off_policy(models):
    """Instruct models ship top_k, top_p and a repetition penalty in their generation config: generate ignores
    them (the log-probs still match evaluate); a warper that does reach the sampler is refused (ValueError)."""
    policy = _policy(models["qwen2"])
    gc = policy.model.generation_config
    gc.top_k, gc.top_p, gc.repetition_penalty = 5, 0.5, 1.5
    batch = _batch(policy)
    out = policy.evaluate(batch)
    assert torch.allclose(out["logp"] * batch["mask"], batch["logp"], atol=1e-4)
    generate = policy.model.generate

    def with_penalty(**kw):
        kw["generation_config"].repetition_penalty = 1.5
        return generate(**kw)

    policy.model.generate = with_penalty
    with pytest.raises(ValueError, match="changed the logits"):
        _batch(policy)


def test_precision_choice():
    from rltutor.models.hf import pick_dtype

    assert pick_dtype("cpu") == "fp32" and pick_dtype("cpu", "fp32") == "fp32"
    with pytest.raises(ValueError, match="needs a GPU"):
        pick_dtype("cpu", "bf16")
    with pytest.raises(ValueError, match="unknown hf_dtype"):
        pick_dtype("cpu", "int8")


@pytest.mark.parametrize("lora", [0, 4])
def test_gradient_checkpointing_gives_the_same_gradients(models, lora):
    if lora and not _has_peft():
        pytest.skip("LoRA needs peft")
    grads = []
    for ckpt in (False, True):
        policy = _policy(models["qwen2"], critic_kind="head", lora_rank=lora, grad_checkpointing=ckpt)
        with torch.no_grad():
            policy.value_head.weight.fill_(0.1)
        batch = _batch(policy, seed=3)
        policy.train()
        out = policy.evaluate(batch)
        ((out["logp"] + out["values"]) * batch["mask"]).sum().backward()
        grads.append({k: p.grad.clone() for k, p in policy.named_parameters() if p.grad is not None})
    assert grads[0].keys() == grads[1].keys() and len(grads[0]) > 2
    for k in grads[0]:
        assert torch.allclose(grads[0][k], grads[1][k], atol=1e-5), k


def test_the_reference_of_full_fine_tuning_is_a_frozen_copy_of_the_start(models):
    trainer = _trainer(models["qwen2"], "ppo", critic_kind="separate", kl_coef=0.1, epochs=2, minibatches=1)
    ref = trainer.ref_policy
    assert ref.critic is None and ref.value_head is None  # the reference carries no critic
    assert not any(p.requires_grad for p in ref.parameters())
    batch = _with_rewards(trainer.collector.collect(trainer.policy, trainer.generator)[0])
    with torch.no_grad():
        start = trainer.policy.evaluate(batch)["logp"]
    trainer.update(batch)
    with torch.no_grad():
        assert torch.equal(ref.evaluate(batch)["logp"], start)  # it did not move with the policy
        assert not torch.allclose(trainer.policy.evaluate(batch)["logp"], start, atol=1e-5)


def test_fp16_trains_through_the_gradient_scaler(models):
    """The T4 path, on the CPU's fp16 autocast: the trainer scales the loss, unscales before clipping (the
    logged gradient norm is the true one, not 65536 times it) and steps through the scaler."""
    trainer = _trainer(models["qwen2"], "grpo", epochs=1, minibatches=1)
    model, tok = load_hf(models["qwen2"])
    policy = HFPolicy(model, tok, dtype="fp16")
    assert policy.grad_scaler is not None
    scaled = []
    scale = policy.grad_scaler.scale
    policy.grad_scaler.scale = lambda loss: scaled.append(1) or scale(loss)  # count the trainer's calls
    trainer.policy = policy
    trainer.optimizer = torch.optim.Adam(policy.parameters(), lr=3e-3)
    batch = _with_rewards(trainer.collector.collect(policy, trainer.generator)[0])
    before = {k: v.detach().clone() for k, v in policy.named_parameters()}
    metrics = trainer.update(batch)
    assert scaled and 0 < metrics["grad_norm"] < 1e3
    assert any(not torch.equal(v, before[k]) for k, v in policy.named_parameters())


# ----------------------------------------------------------------------------------------------
# Checkpoints: the fp16 loss scale, and LoRA's adapters only
# ----------------------------------------------------------------------------------------------


def _fp16_run(path, scale_log2=20):
    """A GRPO trainer whose policy trains in fp16 (the T4's path, on the CPU's fp16 autocast) with a gradient scaler
    that starts at 2^scale_log2 and grows after every finite step: its state changes on every update. An entropy
    bonus gives every update a gradient (the random model scores 0 on every problem)."""
    cfg = resolve(
        "grpo", "addition-text", "quick", sets={"hf_model": path, "device": "cpu", "lr": 3e-3, "ent_coef": 0.01}
    )
    model, tok = load_hf(path)
    policy = HFPolicy(model, tok, dtype="fp16")
    policy.grad_scaler = torch.amp.GradScaler("cpu", init_scale=2.0**scale_log2, growth_interval=1)
    return Trainer(cfg, policy, TextCollector(make_text_task("addition-text"), tok, cfg.num_groups, cfg.group_size))


def _same_history(a, b):
    skip = ["time_s", "sample_time"]
    a, b = a.history_frame().drop(columns=skip), b.history_frame().drop(columns=skip)
    return a.shape == b.shape and (a.equals(b) or bool((a.fillna(-1) == b.fillna(-1)).all().all()))


def test_fp16_resume_restores_the_gradient_scaler(models, tmp_path):
    """The checkpoint holds the scaler's state (plain numbers, read by the safe loader), and a resumed fp16 run equals
    an uninterrupted one, its loss scale and growth tracker included (a fresh scaler's scale would differ)."""
    whole = _fp16_run(models["qwen2"])
    whole.train(total_steps=400, progress=False)
    part = _fp16_run(models["qwen2"])
    part.train(total_steps=200, progress=False, checkpoint=str(tmp_path / "c.pt"))
    state = Trainer.read_checkpoint(str(tmp_path / "c.pt"))  # torch.load(weights_only=True)
    saved = state["grad_scaler"]
    assert saved["scale"] == part.policy.grad_scaler.get_scale() != 2.0**20  # it moved, and was stored as it stood
    fresh = _fp16_run(models["qwen2"])
    resumed = Trainer.load(str(tmp_path / "c.pt"), fresh.policy, fresh.collector, total_steps=400)
    assert resumed.policy.grad_scaler.get_scale() == saved["scale"]
    resumed.train(progress=False)
    assert len(whole.history) >= 4 and _same_history(whole, resumed)
    assert resumed.policy.grad_scaler.state_dict() == whole.policy.grad_scaler.state_dict()
    for (k, p), q in zip(whole.policy.named_parameters(), resumed.policy.parameters(), strict=True):
        assert torch.equal(p, q), k


@needs_peft
def test_lora_checkpoint_holds_only_the_adapters_and_resumes_onto_its_base(models, tmp_path):
    """A LoRA run's checkpoint holds the adapters, the value head and a fingerprint of the frozen base, not the base
    (a small fraction of its size); resuming loads the base named in config.json and equals an uninterrupted run; a
    different base is refused."""
    sets = dict(lora_rank=4, critic_kind="head", eval_every=2, ent_coef=0.01)
    whole = _trainer(models["qwen2"], "ppo", **sets)
    whole.train(total_steps=600, progress=False)
    part = _trainer(models["qwen2"], "ppo", **sets)
    part.train(total_steps=300, progress=False, checkpoint=str(tmp_path / "c.pt"))
    state = Trainer.read_checkpoint(str(tmp_path / "c.pt"))
    weights = state["policy"]
    assert set(weights) == {*part.policy.trained_names(), "base_fingerprint"}
    assert all("lora_" in k or k.startswith("value_head.") for k in weights if k != "base_fingerprint")
    saved = sum(v.numel() * v.element_size() for v in weights.values())
    base = sum(p.numel() * p.element_size() for p in part.policy.parameters() if not p.requires_grad)
    assert saved < base / 5, (saved, base)
    resumed = Trainer.load(str(tmp_path / "c.pt"), total_steps=600)
    resumed.train(progress=False)
    assert len(whole.history) >= 3 and _same_history(whole, resumed)
    for (k, p), q in zip(whole.policy.named_parameters(), resumed.policy.parameters(), strict=True):
        assert torch.equal(p, q), k
    other = save_random_model(tmp_path / "other", "qwen2", seed=1)
    state["config"]["hf_model"] = other
    with pytest.raises(ValueError, match="another base model"):
        Trainer.from_state(state)
