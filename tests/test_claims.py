"""Chapter 15's claims and chapter 17's decision table: every verdict comes from stored data, and the
noisy-reward lab's pieces do what they say."""

import numpy as np
import pandas as pd
import pytest
import torch

from rltutor.envs.tokens import SequenceTask
from rltutor.experiments import claims

NINE = {
    "no_advantage",
    "acronym",
    "monotonic",
    "ranks",
    "sample_efficiency",
    "reward_noise",
    "mode_collapse",
    "parallel",
    "critic_horizon",
}


def _noisy_frame(ppo_cost: float, grpo_cost: float, seeds=range(6), updates=40, seed=0) -> pd.DataFrame:
    """Synthetic noisy-reward records with a planted cost of the noise per algorithm (end reward)."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in seeds:
        base = 0.5 + 0.05 * rng.standard_normal()  # the seed's warm start, shared by its four arms
        for algo, cost in (("GRPO", grpo_cost), ("PPO", ppo_cost)):
            for flip in (0.0, claims.NOISY_FLIP):
                for u in range(1, updates + 1):
                    gain = 0.2 * u / updates - (cost if flip else 0.0) * u / updates
                    r = base + gain + 0.003 * rng.standard_normal()
                    rows.append({"algo": algo, "flip": flip, "seed": s, "update": u, "reward": r})
    return pd.DataFrame(rows)


def _reader(overrides: dict):
    """read(name): the stored file, or the frame in ``overrides`` under that name."""

    def read(name):
        if name in overrides:
            return overrides[name].copy()
        return claims.read_stored(name)

    return read


@pytest.fixture(scope="module")
def planted_robust():
    return _reader({"lm/noisy_reward.csv": _noisy_frame(ppo_cost=0.02, grpo_cost=0.15)})


def test_the_loader_covers_the_nine_claims(planted_robust):
    table = claims.claims_table(planted_robust)
    assert set(table["key"]) == NINE and len(table) == 9
    assert table["verdict"].isin(claims.CLAIM_VERDICTS).all()
    assert (table["source"].str.len() > 0).all() and (table["evidence"].str.len() > 0).all()
    assert table["chapter"].str.match(r"^\d\d_[a-z_]+\.ipynb$").all()
    for c in claims.CLAIMS:  # every data file a claim names is stored
        for name in c.data:
            if name != "lm/noisy_reward.csv":
                assert claims.read_stored(name).shape[0] > 0


def test_the_noise_verdict_follows_the_data(planted_robust):
    """Planted: PPO loses 0.02 to the noise, GRPO 0.15 -> confirmed; the reverse -> refuted."""
    v = claims.claims_table(planted_robust).set_index("key")
    assert v.loc["reward_noise", "verdict"] == "confirmed"
    fragile = _reader({"lm/noisy_reward.csv": _noisy_frame(ppo_cost=0.15, grpo_cost=0.02)})
    assert claims.claims_table(fragile).set_index("key").loc["reward_noise", "verdict"] == "refuted"
    same = _reader({"lm/noisy_reward.csv": _noisy_frame(ppo_cost=0.08, grpo_cost=0.08)})
    assert claims.claims_table(same).set_index("key").loc["reward_noise", "verdict"] == "equivalent"


def test_a_changed_stored_verdict_changes_the_claim_and_the_decision_cell(planted_robust):
    """Raise PPO's stored end reward in chapter 06's restated runs: claim 5 and the short-task row's cells change."""
    before_claims = claims.claims_table(planted_robust)
    before = claims.decision_table(planted_robust, before_claims)
    st = claims.read_stored("lm/short_task2.csv")
    st.loc[(st["algo"] == "PPO (value head)") & (st["update"] > 180), "reward"] += 0.3
    read = _reader({"lm/noisy_reward.csv": _noisy_frame(0.02, 0.15), "lm/short_task2.csv": st})
    after_claims = claims.claims_table(read)
    after = claims.decision_table(read, after_claims)
    assert after_claims.set_index("key").loc["sample_efficiency", "verdict"] == "confirmed"
    assert before_claims.set_index("key").loc["sample_efficiency", "verdict"] != "confirmed"
    assert after.loc[0, "verdict"] == "confirmed" and after.loc[0, "verdict"] != before.loc[0, "verdict"]
    assert after.loc[0, "the book's evidence"] != before.loc[0, "the book's evidence"]
    # the noise row reads its default from the verdict: confirmed -> PPO
    assert before.loc[2, "start with"] == "PPO" and before.loc[2, "rests on"].startswith("the book's data")
    fragile = _reader({"lm/noisy_reward.csv": _noisy_frame(0.15, 0.02)})
    assert claims.decision_table(fragile).loc[2, "start with"] == "GRPO"


def test_every_decision_cell_is_a_string_with_a_chapter_link(planted_robust):
    d = claims.decision_table(planted_robust)
    assert list(d.columns) == list(claims.DECISION_COLUMNS) + list(claims.NUMBER_COLUMNS)
    assert d["the book's evidence"].str.contains(r"\]\(\d\d_[a-z_]+\.ipynb\)").all()
    assert d["verdict"].isin(claims.CLAIM_VERDICTS).all()
    assert d["rests on"].str.match(r"^(the book's data|reported results)").all()


def test_the_stored_noisy_reward_runs_decide_when_present():
    try:
        runs = claims.read_stored("lm/noisy_reward.csv")
    except FileNotFoundError:
        pytest.skip("the noisy-reward runs are not stored yet")
    v = claims.noisy_reward_verdicts(runs)
    assert len(v) == 5 and v["verdict"].isin(claims.CLAIM_VERDICTS).all()
    assert v["delta"].iloc[0] == claims.NOISY_DELTA
    pilot = claims.read_stored("lm/noisy_reward_pilot.csv")
    assert set(pilot["seed"]).isdisjoint(runs["seed"])  # the pilot is never counted
    assert claims.claims_table().set_index("key").loc["reward_noise", "verdict"] == v["verdict"].iloc[0]


def test_flip_rewards_flips_and_keeps_the_clean_reward():
    task = SequenceTask(L=4)
    g = torch.Generator().manual_seed(0)
    prompts = task.sample_prompts(64, g)
    responses = torch.randint(0, 12, (64, task.max_new_tokens), generator=g)
    clean = task.reward(prompts, responses)
    assert torch.equal(claims.FlipRewards(task, 0.0).reward(prompts, responses), clean)
    always = claims.FlipRewards(task, 1.0)
    assert torch.allclose(always.reward(prompts, responses), 1 - clean)
    assert torch.equal(always.last_clean, clean)
    quarter = claims.FlipRewards(task, 0.25, seed=3)
    flipped = (quarter.reward(prompts, responses) != clean) | (clean == 0.5)
    assert 0.05 < flipped.float().mean() < 0.6
    with pytest.raises(ValueError, match="flip must be a probability"):
        claims.FlipRewards(task, 1.5)


def test_power_analysis_reads_the_pilot_spread():
    pilot = _noisy_frame(0.05, 0.05, seeds=range(100, 103))
    p = claims.noisy_reward_power(pilot)
    assert p["pilot_seeds"] == 3 and p["sd"] > 0 and p["n"] >= 2
    noisier = _noisy_frame(0.05, 0.05, seeds=range(100, 103), seed=1)
    hit = (noisier["seed"] == 100) & (noisier["algo"] == "PPO") & (noisier["flip"] > 0)
    noisier.loc[hit, "reward"] += 0.1  # one seed's interaction off by 0.1: a wider spread
    assert claims.noisy_reward_power(noisier)["n"] > p["n"]


def test_a_claim_whose_arms_did_not_learn_is_not_read(planted_robust):
    """Flatten GRPO's stored rewards in chapter 06's restated runs (a gain of 0): the sample-efficiency claim is
    then not testable with them, and its evidence says which arm did not learn."""
    st = claims.read_stored("lm/short_task2.csv")
    grpo = st["algo"] == "GRPO"
    st.loc[grpo, "reward"] = st.loc[grpo].groupby("seed")["reward"].transform("mean")
    read = _reader({"lm/noisy_reward.csv": _noisy_frame(0.02, 0.15), "lm/short_task2.csv": st})
    row = claims.claims_table(read).set_index("key").loc["sample_efficiency"]
    assert row["verdict"] == "not testable here"
    assert "training did not clearly work" in row["evidence"] and "GRPO: reward" in row["evidence"]
