"""The six arms of chapter 11's compaction test (rltutor.rollout.compaction.MAIN_ARMS), the per-episode loss weight
``row_weight`` and the trainer taking a mode's own advantages: properties against loop references."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rltutor.advantages import group_advantages
from rltutor.losses import aggregate
from rltutor.rollout.compaction import (
    MAIN_ARMS,
    RENAMED_SUB_ADVANTAGES,
    SUB_ADVANTAGE_MODES,
    episode_row_weight,
    resolve_sub_advantage,
    sub_advantage_batch,
)

# ----------------------------------------------------------------------------------------------
# Random batches of split episodes: rows of an episode consecutive, each opening with carried-over context
# (mask 0), then generated steps with masked gaps (tool output) between them.
# ----------------------------------------------------------------------------------------------


@st.composite
def split_batches(draw, max_episodes=5, max_K=4, T=9):
    E = draw(st.integers(2, max_episodes))
    tasks = draw(st.integers(1, E // 2))  # every task has at least 2 episodes (a group baseline needs them)
    meta, rows = [], []
    for e in range(E):
        K = draw(st.integers(1, max_K))
        for k in range(K):
            carried = draw(st.integers(0, 3)) if k else 0  # a compacted row opens with kept context
            gen = draw(st.lists(st.booleans(), min_size=T - carried, max_size=T - carried))
            if not any(gen):
                gen[draw(st.integers(0, T - carried - 1))] = True  # every row has a generated token
            rows.append([0.0] * carried + [float(x) for x in gen])
            meta.append((e % tasks, e, k, K))
    seed = draw(st.integers(0, 2**16))
    g = torch.Generator().manual_seed(seed)
    mask = torch.tensor(rows)
    outcome = torch.randint(0, 2, (E,), generator=g).float() - 0.1 * torch.rand(E, generator=g)
    values = torch.randn(mask.shape, generator=g)
    gamma = draw(st.sampled_from([1.0, 0.99, 0.9]))
    lam = draw(st.sampled_from([1.0, 0.95, 0.5, 0.0]))
    return torch.tensor(meta), outcome, mask, values, gamma, lam


def _gae_loop(rewards, values, gamma, lam):
    """GAE on one dense sequence, the textbook loop (V after the last step is 0)."""
    A, last = [0.0] * len(rewards), 0.0
    for t in reversed(range(len(rewards))):
        v_next = values[t + 1] if t + 1 < len(rewards) else 0.0
        delta = rewards[t] + gamma * v_next - values[t]
        last = delta + gamma * lam * last
        A[t] = last
    return A


@settings(max_examples=60, deadline=None)
@given(split_batches())
def test_gae_across_the_boundary_equals_gae_on_the_concatenated_episode(data):
    """ppo_gae_across: for each episode, its rows' generated steps concatenated in order are one sequence; GAE on
    it (outcome on the last step) is each step's advantage, and A + V its critic's target."""
    meta, outcome, mask, values, gamma, lam = data
    out = sub_advantage_batch("ppo_gae_across", meta, outcome, mask, values, gamma, lam=lam)
    for e in range(len(outcome)):
        rows = (meta[:, 1] == e).nonzero().flatten().tolist()  # in order
        where = [(r, t) for r in rows for t in mask[r].nonzero().flatten().tolist()]
        v = [float(values[r, t]) for r, t in where]
        rew = [0.0] * (len(where) - 1) + [float(outcome[e])]
        want = _gae_loop(rew, v, gamma, lam)
        got = [float(out["advantages"][r, t]) for r, t in where]
        assert got == pytest.approx(want, abs=1e-5)
        assert [float(out["returns"][r, t]) for r, t in where] == pytest.approx(
            [a + b for a, b in zip(want, v, strict=True)], abs=1e-5
        )
    assert (out["advantages"][mask == 0] == 0).all() and (out["returns"][mask == 0] == 0).all()  # context: nothing


@settings(max_examples=40, deadline=None)
@given(split_batches())
def test_gae_across_differs_from_the_bootstrap_only_by_the_lambda_tail(data):
    """ppo_bootstrap has the same TD error at a row's last step (gamma V(s') - V(s)) but drops the tail: A_across
    there is A_bootstrap + gamma * lam * A_across(first step of the next row); rows without a boundary agree."""
    from rltutor.advantages import compute_advantages

    meta, outcome, mask, values, gamma, lam = data
    across = sub_advantage_batch("ppo_gae_across", meta, outcome, mask, values, gamma, lam=lam)["advantages"]
    b = sub_advantage_batch("ppo_bootstrap", meta, outcome, mask, values, gamma)
    boot, _ = compute_advantages("gae", rewards=b["rewards"], mask=mask, values=values, gamma=gamma, lam=lam)
    for r in range(len(mask)):
        steps = mask[r].nonzero().flatten()
        if meta[r, 2] == meta[r, 3] - 1:  # the episode's last row: no boundary after it
            torch.testing.assert_close(across[r, steps], boot[r, steps], atol=1e-5, rtol=1e-5)
        else:
            nxt = int(mask[r + 1].nonzero()[0])
            tail = gamma * lam * across[r + 1, nxt]
            torch.testing.assert_close(across[r, steps[-1]], boot[r, steps[-1]] + tail, atol=1e-5, rtol=1e-5)


@settings(max_examples=40, deadline=None)
@given(split_batches())
def test_every_arm_trains_only_generated_tokens_and_slime_split_gives_r_over_K(data):
    """Every arm puts its signal on generated tokens only (carried-over context and tool output: mask 0 stays 0),
    each row's reward on its last generated token; slime_split's reward is outcome / K on each row."""
    meta, outcome, mask, values, gamma, lam = data
    E = len(outcome)
    for name in MAIN_ARMS:
        out = sub_advantage_batch(name, meta, outcome, mask, values, gamma, E, 1, lam, row_weight=True)
        assert (out["rewards"][mask == 0] == 0).all(), name
        if "advantages" in out:
            assert (out["advantages"][mask == 0] == 0).all(), name
        w = out["row_weight"]
        assert w.mean().item() == pytest.approx(1.0)
    out = sub_advantage_batch("slime_split", meta, outcome, mask, gamma=gamma, row_weight=True)
    last = mask.shape[1] - 1 - mask.flip(1).argmax(1)  # each row's last generated token
    torch.testing.assert_close(out["rewards"].sum(1), outcome[meta[:, 1]] / meta[:, 3].float())
    torch.testing.assert_close(out["rewards"][torch.arange(len(mask)), last], outcome[meta[:, 1]] / meta[:, 3].float())


def test_slime_split_normalises_batch_wide_when_counts_are_uneven_and_needs_row_weight():
    """slime's _post_process_rewards: rows == tasks x G -> groups by task, else one batch-wide group."""
    meta = torch.tensor([[0, 0, 0, 2], [0, 0, 1, 2], [0, 1, 0, 1], [1, 2, 0, 1], [1, 3, 0, 1]])
    mask = torch.ones(5, 3)
    out = sub_advantage_batch("slime_split", meta, torch.tensor([1.0, 0, 1, 0]), mask, num_tasks=2, group_size=2,
                              row_weight=True)  # fmt: skip
    assert out["group_ids"].tolist() == [0] * 5
    even = sub_advantage_batch(
        "slime_split", meta[[0, 2, 3, 4]], torch.tensor([1.0, 0, 1, 0]), mask[:4], num_tasks=2, group_size=2,
        row_weight=True,
    )  # fmt: skip
    assert even["group_ids"].tolist() == [0, 0, 1, 1]
    with pytest.raises(ValueError, match="row_weight=True"):
        sub_advantage_batch("slime_split", meta, torch.tensor([1.0, 0, 1, 0]), mask)
    assert SUB_ADVANTAGE_MODES["slime_split"].requires == {"row_weight": True}


def test_the_per_rollout_reducer_is_slimes():
    """With episode_row_weight, aggregate gives slime's per-rollout-mean loss: per rollout, the sum of its samples'
    token losses over ``rollout_mask_sums`` (its generated tokens), then the mean over rollouts; token-mean and
    seq-mean-token-mean agree under the weight."""
    g = torch.Generator().manual_seed(0)
    meta = torch.tensor([[0, 0, 0, 3], [0, 0, 1, 3], [0, 0, 2, 3], [0, 1, 0, 1], [1, 2, 0, 2], [1, 2, 1, 2]])
    mask = (torch.rand(6, 7, generator=g) > 0.4).float()
    mask[:, 0] = 1.0
    L = torch.randn(6, 7, generator=g)
    w = episode_row_weight(meta, mask)
    per_rollout = []
    for e in range(3):
        rows = meta[:, 1] == e
        rollout_mask_sum = mask[rows].sum()
        per_rollout.append((L[rows] * mask[rows]).sum() / rollout_mask_sum)
    slime = torch.stack(per_rollout).mean()
    for mode in ("seq-mean-token-mean", "token-mean"):
        torch.testing.assert_close(aggregate(L, mask, mode, row_weight=w), slime)
    # without the weight, an episode of K rows weighs K times (per-row mean of token means)
    assert not torch.allclose(aggregate(L, mask, "seq-mean-token-mean"), slime)


@settings(max_examples=40, deadline=None)
@given(split_batches())
def test_row_weight_gives_every_episode_the_same_total_normalised_over_the_whole_batch(data):
    meta, _, mask, _, _, _ = data
    w = episode_row_weight(meta, mask)
    R, E = len(mask), len(meta[:, 1].unique())
    totals = torch.zeros(E).index_add_(0, meta[:, 1], w)
    torch.testing.assert_close(totals, torch.full((E,), R / E))  # each episode's rows sum to R / E
    assert w.sum().item() == pytest.approx(R)  # mean 1 over the batch
    # not per minibatch: a minibatch's loss uses the batch's weights as they are, so the minibatches' losses,
    # weighted by their rows, add up to the batch's loss
    L = torch.randn(mask.shape, generator=torch.Generator().manual_seed(R))
    whole = aggregate(L, mask, "seq-mean-token-mean", row_weight=w)
    halves = [torch.arange(R)[: R // 2], torch.arange(R)[R // 2 :]]
    parts = sum(len(i) / R * aggregate(L[i], mask[i], "seq-mean-token-mean", row_weight=w[i]) for i in halves if len(i))
    torch.testing.assert_close(parts, whole)


def test_row_weight_is_checked_and_none_changes_nothing():
    L, mask = torch.randn(3, 4), torch.ones(3, 4)
    for mode in ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm"):
        assert torch.equal(aggregate(L, mask, mode), aggregate(L, mask, mode, row_weight=None))
    torch.testing.assert_close(
        aggregate(L, mask, "seq-mean-token-mean", row_weight=torch.ones(3)), aggregate(L, mask, "seq-mean-token-mean")
    )
    with pytest.raises(ValueError, match=r"row_weight must be a \(B,\) torch.Tensor with B = 3"):
        aggregate(L, mask, row_weight=torch.ones(4))
    with pytest.raises(ValueError, match="finite floats >= 0"):
        aggregate(L, mask, row_weight=torch.tensor([1.0, -1.0, 1.0]))


def test_broadcast_grpo_is_fair_by_construction_and_leaves_one_number_per_episode():
    meta = torch.tensor([[0, 0, 0, 3], [0, 0, 1, 3], [0, 0, 2, 3], [0, 1, 0, 1], [0, 2, 0, 2], [0, 2, 1, 2]])
    outcome = torch.tensor([1.0, 0.0, 1.0])
    out = sub_advantage_batch("broadcast_grpo", meta, outcome, torch.ones(6, 2))
    a = group_advantages(outcome, torch.zeros(3, dtype=torch.long), "grpo")  # whole episodes compared
    torch.testing.assert_close(out["rewards"].sum(1), a[meta[:, 1]])  # every row of an episode: one number


def test_renamed_modes_are_refused_with_their_new_name():
    assert RENAMED_SUB_ADVANTAGES == {"slime_grpo": "full_outcome_batch_group", "ppo_no_bootstrap": "ppo_per_segment"}
    with pytest.raises(ValueError, match="'slime_grpo' was renamed 'full_outcome_batch_group'"):
        resolve_sub_advantage("slime_grpo", critic=False)
    assert set(MAIN_ARMS) <= set(SUB_ADVANTAGE_MODES)
    for name in MAIN_ARMS:  # each arm's docstring links its source (or says it is the book's own reading)
        doc = SUB_ADVANTAGE_MODES[name].fn.__doc__
        assert "https://" in doc or name == "ppo_bootstrap", name


# ----------------------------------------------------------------------------------------------
# The trainer takes a mode's advantages, and the arms train
# ----------------------------------------------------------------------------------------------


def _arm_config(name, **sets):
    from rltutor.config import resolve
    from rltutor.experiments.agents import SUB_ADVANTAGE_RUNS

    algo, extra = SUB_ADVANTAGE_RUNS[name]
    base = {"agent_policy": "templates", "compaction": "summary", "context_budget": 200, "total_steps": 10**9}
    base.update(env_options={"hops": (3, 8), "max_turns": 9, "max_output_chars": 400}, num_groups=2, group_size=3)
    return resolve(algo, "toolshell", sets={**base, "sub_advantage": name, **extra, "sft_steps": 20, **sets})


def test_the_trainer_uses_the_batchs_advantages_instead_of_its_estimator(monkeypatch):
    import rltutor.train as train_mod
    from rltutor.train import Trainer

    trainer = Trainer(_arm_config("ppo_gae_across", row_weight=True))
    batch, info = trainer.collector.collect(trainer.policy, trainer.generator)
    assert {"advantages", "returns", "row_weight"} <= set(batch)
    calls = []
    monkeypatch.setattr(train_mod, "compute_advantages", lambda *a, **k: calls.append(1) or (None, None))
    seen = {}
    real = train_mod.value_loss

    def spy(values, old, returns, mask, clip=None):
        seen.setdefault("returns", returns.detach().clone())
        seen.setdefault("mask", mask.clone())
        return real(values, old, returns, mask, clip=clip)

    monkeypatch.setattr(train_mod, "value_loss", spy)
    metrics = trainer.update(batch)
    assert not calls and metrics["policy_loss"] == metrics["policy_loss"]  # no estimator ran; not NaN
    assert seen["returns"].abs().sum() > 0  # the critic's target: the mode's lambda-returns


def test_every_arm_runs_two_updates_and_stored_modes_keep_their_batch(tmp_path):
    """Each main arm trains (finite metrics), with row_weight on as in the main test; a run without row_weight
    gets no row_weight key (so every stored run's batch, and its numbers, are as before)."""
    from rltutor.train import Trainer

    for name in MAIN_ARMS:
        trainer = Trainer(_arm_config(name, row_weight=True))
        for _ in range(2):
            row = trainer.step()
            assert row["policy_loss"] == row["policy_loss"] and row["segments_per_episode"] >= 1, name
    trainer = Trainer(_arm_config("full_outcome_batch_group"))
    batch, _ = trainer.collector.collect(trainer.policy, trainer.generator)
    assert "row_weight" not in batch and "advantages" not in batch


def test_every_generated_step_is_trained_in_exactly_one_row_of_its_episode():
    """The template agent under a tight budget: an episode's rows together hold each of its turns once."""
    from rltutor.build import build

    cfg = _arm_config("ppo_gae_across")
    policy, col = build(cfg)
    batch, info = col.collect(policy, torch.Generator().manual_seed(1))
    meta = info["meta"]
    assert (meta[:, 3] > 1).any()  # the budget split some episodes
    per_episode = torch.zeros(len(info["episode_lengths"])).index_add_(0, meta[:, 1], batch["mask"].sum(1))
    assert per_episode.tolist() == [float(n) for n in info["episode_lengths"]]


def test_stored_runs_are_relabelled_by_the_documented_mapping_only(tmp_path):
    """relabel_stored rewrites the sub_advantage column and the .cmd names by RENAMED_SUB_ADVANTAGES and nothing
    else: an old-named copy of a stored run becomes the stored file byte for byte; the stored files hold no old
    name."""
    from pathlib import Path

    from rltutor.experiments.agents import relabel_stored

    store = Path(__file__).resolve().parents[1] / "rltutor" / "data" / "agents"
    back = {new: old for old, new in RENAMED_SUB_ADVANTAGES.items()}
    for name in ("compaction_other", "compaction_headline"):
        for ext in (".csv", ".cmd"):
            text = (store / f"{name}{ext}").read_text()
            assert not any(old in text for old in RENAMED_SUB_ADVANTAGES), name + ext
            for new, old in back.items():
                text = text.replace(new, old)
            (tmp_path / f"{name}{ext}").write_text(text)
        n = relabel_stored(str(tmp_path / f"{name}.csv"))
        assert n > 0
        for ext in (".csv", ".cmd"):
            assert (tmp_path / f"{name}{ext}").read_bytes() == (store / f"{name}{ext}").read_bytes(), name + ext
    (tmp_path / "plain.csv").write_text("algo,seed\nppo,0\n")
    assert relabel_stored(str(tmp_path / "plain.csv")) == 0


def test_a_run_stored_under_an_old_mode_name_loads_under_its_new_one():
    from rltutor.config import Config, resolve
    from rltutor.rollout.compaction import RENAMED_SUB_ADVANTAGES

    for old, new in RENAMED_SUB_ADVANTAGES.items():
        algo = "ppo" if new.startswith("ppo") else "grpo"
        d = resolve(algo, "toolshell", "quick", sets=dict(sub_advantage=new)).to_dict()
        assert Config.from_dict({**d, "sub_advantage": old}).sub_advantage == new
