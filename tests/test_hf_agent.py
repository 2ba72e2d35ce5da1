"""The toolshell agent played by a Hugging Face causal LM (rltutor.rollout.hf_agent, chapter 13), offline.

The tiny random Qwen2 (chat template) and Llama (plain text) models of tests/test_hf.py write the commands through
the one AgentCollector: the context is the chat template's rendering grown from ids, tool outputs are read but
masked out of the losses, the log-probs stored at sampling are the trainer's on the same ids over the whole
multi-turn row, nothing is re-tokenised, the Context counts in the model's tokens, and GRPO and PPO run on
toolshell through the command line. The random models do not solve toolshell tasks (nothing here asserts they
learn; a pretrained model is what could).
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers", reason="the hf extra (transformers, Python >= 3.11) is not installed")

from rltutor.cli import main  # noqa: E402
from rltutor.config import resolve  # noqa: E402
from rltutor.envs.toolshell import ToolShell, scripted_solver  # noqa: E402
from rltutor.models.hf import MERGED, HFPolicy, bias_lm_head, load_hf, save_random_model  # noqa: E402
from rltutor.rollout.agent import AgentCollector, play_scripted  # noqa: E402
from rltutor.rollout.context import Context, ContextSpec  # noqa: E402
from rltutor.rollout.hf_agent import SYSTEM_PROMPT, HFChooser  # noqa: E402
from rltutor.train import Trainer  # noqa: E402

torch.set_num_threads(1)
ENV = dict(hops=1, max_turns=3, max_output_chars=200)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf_agent")
    return {arch: save_random_model(root / arch, arch) for arch in ("qwen2", "llama")}


def _policy(path, **kw):
    model, tok = load_hf(path)
    return HFPolicy(model, tok, **kw)


def _collector(policy, budget=1024, compaction="recent", n=2, G=2, **env):
    spec = ContextSpec(context_budget=budget, compaction=compaction, max_cmd_tokens=24)
    return AgentCollector(
        lambda: ToolShell(**{**ENV, **env}),
        HFChooser(policy.tokenizer, 24),
        num_tasks=n,
        group_size=G,
        spec=spec,
        sub_advantage="ppo_bootstrap" if policy.has_critic else "full_outcome_batch_group",
    )


def _expected_row(chooser, statement, turns, last_done=True):
    """The row a context grown from ids must hold: the markers, each command's ids, each tool output's ids."""
    tok = chooser.tok
    tokens = [*tok.ids("task"), *tok.encode(statement)]
    trained = [0] * len(tokens)
    for j, (cmd, obs) in enumerate(turns):
        tokens += tok.ids("cmd") + cmd
        trained += [0] * len(tok.ids("cmd")) + [1] * len(cmd)
        if not (last_done and j == len(turns) - 1):
            tokens += tok.ids("obs") + obs
            trained += [0] * (len(tok.ids("obs")) + len(obs))
    return tokens, trained


def test_the_context_is_the_chat_templates_rendering_grown_from_ids(models):
    """A scripted episode through the chooser and the Context gives, id for id, what the tokenizer's chat template
    renders for the same conversation (system, task, command, tool output, ...), and the Context counts those ids."""
    policy = _policy(models["qwen2"])
    tok = policy.tokenizer
    chooser = HFChooser(tok, 24)
    env = ToolShell(**ENV)
    statement = env.reset(seed=3)
    spec = ContextSpec(context_budget=2048, compaction="none", max_cmd_tokens=24)
    ep = play_scripted(env, scripted_solver(env), spec=spec, chooser=chooser, statement=statement)
    assert ep.reward == 1.0 and len(ep.turns) == 3 and len(ep.segments) == 1
    messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": statement}]
    for cmd, obs in ep.turns[:-1]:
        messages += [
            {"role": "assistant", "content": tok.decode(cmd, skip_special_tokens=True)},
            {"role": "user", "content": tok.decode(obs)},
        ]
    messages.append({"role": "assistant", "content": tok.decode(ep.turns[-1][0], skip_special_tokens=True)})
    rendered = tok.apply_chat_template(messages, tokenize=False).removesuffix("\n")  # the template's last "\n"
    assert ep.segments[0].tokens == tok(rendered, add_special_tokens=False)["input_ids"]
    # the Context counts in the model's tokens: its prompt is the template's rendering with the generation prompt
    ctx = Context(statement, spec, 0, chooser.tok)
    want = tok.apply_chat_template(messages[:2], tokenize=False, add_generation_prompt=True)
    assert ctx.prompt() == tok(want, add_special_tokens=False)["input_ids"]
    specials = len("<|im_start|>") * want.count("<|im_start|>") + len("<|im_end|>") * want.count("<|im_end|>")
    n_special = want.count("<|im_start|>") + want.count("<|im_end|>")
    assert len(ctx.prompt()) == len(want) - specials + n_special  # a token per character, a special token one
    assert len(ctx.prompt()) != len(Context(statement, spec).prompt())  # not the toolshell vocabulary's count


@pytest.mark.parametrize("arch", ["qwen2", "llama"])
@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_stored_logp_equal_evaluate_over_the_whole_multi_turn_row(models, arch, temperature):
    policy = _policy(models[arch], critic_kind="head", temperature=temperature)
    col = _collector(policy)
    batch, info = col.collect(policy, torch.Generator().manual_seed(0))
    assert info["metrics"]["mean_turns"] >= 2  # several commands in each row, tool outputs between them
    m = batch["mask"]
    gaps = ((m[:, 1:] == 0) & (m[:, :-1] == 1)).sum(1)  # command -> masked stretch boundaries per row
    assert (gaps >= 2).all()
    out = policy.evaluate(batch)
    assert torch.allclose(out["logp"] * m, batch["logp"] * m, atol=1e-4), (
        ((out["logp"] - batch["logp"]) * m).abs().max()
    )
    assert torch.allclose(out["values"] * m, batch["values"], atol=1e-5)


def test_rows_hold_the_sampled_ids_with_tool_output_masked(models):
    """Each row is the episode's context grown from ids: the markers and tool outputs with mask 0, each command's
    sampled ids (and only those) with mask 1."""
    policy = _policy(models["qwen2"])
    col = _collector(policy)
    g = torch.Generator().manual_seed(1)
    episodes = col.run_episodes(policy, g)
    batch, meta = col.chooser.rows(episodes, policy, "cpu")
    statements = [env.task.statement for env in col.envs]
    for r, (_, i, k, K) in enumerate(meta.tolist()):
        assert (k, K) == (0, 1)  # 1024 tokens hold these episodes: no compaction
        ep = episodes[i]
        tokens, trained = _expected_row(col.chooser, statements[i], ep.turns)
        n = len(tokens)
        assert batch["tokens"][r, :n].tolist() == tokens
        assert batch["mask"][r, : n - 1].tolist() == [float(t) for t in trained[1:]]
        assert batch["mask"][r, n - 1 :].sum() == 0


def test_tool_output_tokens_cannot_move_the_loss(models):
    """Two PPO updates on one batch, one of them with the behaviour log-probs, values and rewards at every masked
    position (markers, tool outputs, padding) replaced by noise: the same loss, the same new parameters; and the
    loss's gradient with respect to the log-probs at masked positions is zero."""
    sets = {"hf_model": models["qwen2"], "device": "cpu", "lr": 3e-3, "epochs": 2, "minibatches": 1}
    runs = [Trainer(resolve("ppo", "toolshell", "quick", sets=sets)) for _ in range(2)]
    batch, _ = runs[0].collector.collect(runs[0].policy, runs[0].generator)
    m = batch["mask"]
    assert (m == 0).any() and (m == 1).any()
    rewards = torch.zeros_like(m)
    last = m.shape[1] - 1 - m.flip(1).argmax(1)  # each row's last command token
    rewards[torch.arange(len(m)), last] = (torch.arange(len(m)) % 2).float()  # outcomes that differ
    batch = {**batch, "rewards": rewards, "group_ids": torch.zeros(len(m), dtype=torch.long)}
    g = torch.Generator().manual_seed(7)
    noisy = dict(batch)
    for key in ("logp", "values", "rewards"):
        noisy[key] = torch.where(m > 0, batch[key], torch.randn(m.shape, generator=g))
    runs[1].generator.set_state(runs[0].generator.get_state())
    a = runs[0].update({k: v.clone() for k, v in batch.items()})
    b = runs[1].update(noisy)
    assert a["loss"] == pytest.approx(b["loss"], abs=1e-6)
    for (name, p), q in zip(runs[0].policy.named_parameters(), runs[1].policy.parameters(), strict=True):
        assert torch.allclose(p, q, atol=1e-6), name
    from rltutor.losses import policy_loss

    out = runs[0].policy.evaluate(batch)
    lp = out["logp"]
    adv = torch.randn(m.shape, generator=g)
    loss, _ = policy_loss(lp, batch["logp"], adv, m, kind="ppo", agg="token-mean")
    (grad,) = torch.autograd.grad(loss, lp)
    assert grad[m == 0].abs().max() == 0 and grad[m > 0].abs().max() > 0


def test_no_command_is_retokenised(models):
    """A token ("12") that encoding never makes is sampled in commands; the rows keep its id, the Context holds
    it, and the trainer scores that id, although decoding and encoding the command again gives other ids."""
    policy = _policy(models["llama"])
    tok = policy.tokenizer
    merged = tok.convert_tokens_to_ids(MERGED)
    bias_lm_head(policy.model, merged)  # sampled often, never the only choice
    col = _collector(policy)
    episodes = col.run_episodes(policy, torch.Generator().manual_seed(0))
    cmds = [c for e in episodes for c, _ in e.turns if merged in c]
    assert cmds, "the merged token was not sampled: the test would prove nothing"
    ids = [t for t in cmds[0] if t not in policy.eos_ids]
    assert tok(tok.decode(ids), add_special_tokens=False)["input_ids"] != ids  # the round trip changes the ids
    batch, _ = col.chooser.rows(episodes, policy, "cpu")
    m = batch["mask"] > 0
    assert (batch["actions"][m] == merged).any()  # the rows hold the sampled id
    out = policy.evaluate(batch)
    assert torch.allclose(out["logp"] * batch["mask"], batch["logp"] * batch["mask"], atol=1e-4)


def test_the_context_budget_counts_the_models_tokens_and_compacts_in_them(models):
    """With a budget of 600 of the model's tokens, episodes are compacted ("recent"): every row fits the budget,
    each later row starts with the same head in the model's tokens, and the turns it keeps are written with the
    chat template's markers (not the toolshell vocabulary's)."""
    policy = _policy(models["qwen2"])
    col = _collector(policy, budget=600, compaction="recent", max_turns=4)
    episodes = col.run_episodes(policy, torch.Generator().manual_seed(2))
    split = [e for e in episodes if len(e.segments) > 1]
    assert split, "no episode outgrew 600 tokens: the test would prove nothing"
    tok = col.chooser.tok
    for e in episodes:
        for s in e.segments:
            assert len(s.tokens) <= 600
    e = split[0]
    head = e.segments[0].tokens[: e.segments[0].carried]
    later = e.segments[1]
    assert later.tokens[: len(head)] == head
    kept = later.tokens[len(head) : later.carried]
    assert kept[: len(tok.ids("cmd"))] == tok.ids("cmd")  # a kept turn opens with the assistant marker
    assert "<|im_start|>user" in policy.tokenizer.decode(kept)
    assert not any(later.trained[: later.carried])  # carried-over context is never trained


@pytest.mark.parametrize(
    "algo, extra",
    [
        ("grpo", []),
        ("ppo", ["--set", "critic_kind=head", "--set", "turn_cost=0.1"]),
        ("ppo", ["--set", "critic_kind=separate", "--set", "turn_cost=0.1", "--lora-rank", "4"]),
    ],
    ids=["grpo", "ppo-head", "ppo-separate-lora"],
)
def test_cli_trains_the_toolshell_agent(models, tmp_path, capsys, algo, extra):
    if "--lora-rank" in extra:
        pytest.importorskip("peft", reason="LoRA needs peft")
    out = tmp_path / "run"
    argv = ["train", "--hf-model", models["qwen2"], "--env", "toolshell", "--algo", algo, "--steps", "150"]
    argv += ["--out", str(out), "--no-progress", "--set", "device=cpu", *extra]
    assert main(argv) == 0, capsys.readouterr().err
    said = capsys.readouterr()
    assert "not expected to learn" not in said.err  # the TinyGPT agent's note is not this model's
    assert "using the Hugging Face agent's settings" in said.out  # the starting settings are named
    import pandas as pd

    m = pd.read_csv(out / "metrics.csv")
    assert {"policy_loss", "solve_rate", "mean_turns", "sample_time", "grad_norm"} <= set(m.columns)
    # with a turn cost the returns (-0.1 per call) are not the critic's V = 0, so PPO's value loss has a gradient;
    # GRPO's advantages are 0 when every episode of a group scores the same (the random model never submits)
    assert (m["grad_norm"] > 0).all() or algo == "grpo"
    more = str(int(m["env_steps"].iloc[-1]) + 100)
    assert main(["train", "--out", str(out), "--resume", "--steps", more, "--no-progress"]) == 0
    assert len(pd.read_csv(out / "metrics.csv")) > len(m)


def test_the_agent_needs_the_token_policy_and_a_context_the_model_can_hold(models):
    with pytest.raises(ValueError, match="agent_policy must be 'tokens'"):
        resolve("grpo", "toolshell", "quick", sets={"hf_model": models["qwen2"], "agent_policy": "templates"})
    cfg = resolve("grpo", "toolshell", "quick", sets={"hf_model": models["qwen2"], "device": "cpu"})
    assert cfg.agent_policy == "tokens" and cfg.model == "hf" and cfg.env_options["hops"] == 1
    big = resolve("grpo", "toolshell", "quick", sets={"hf_model": models["qwen2"], "context_budget": 8192})
    with pytest.raises(ValueError, match="model's 4096 positions"):
        Trainer(big)
