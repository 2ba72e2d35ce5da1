"""The multi-seed LM labs (chapters 06-10): the runner resumes from stored runs, the verdict functions call
confirmed / refuted / equivalent / undecided correctly on synthetic records, and the stored records are what the
chapters need (>= 5 seeds per arm, the command beside them)."""

import re

import numpy as np
import pandas as pd
import pytest

from rltutor import datafiles
from rltutor.experiments import lm
from rltutor.experiments.stats import TABLE_COLUMNS, VERDICTS, contrast, describe, t_ppf, verdict, verdict_row

# ---------------------------------------------------------------------------------------------- stats


def test_contrast_matches_welch_by_hand():
    a, b = pd.Series([1.0, 2.0, 3.0]), pd.Series([0.0, 0.5, 1.0, 1.5])
    est, half = contrast([(1, a), (-1, b)])
    assert est == pytest.approx(2.0 - 0.75)
    se = np.sqrt(a.var() / 3 + b.var() / 4)
    ta, tb = a.var() / 3, b.var() / 4
    df = (ta + tb) ** 2 / (ta**2 / 2 + tb**2 / 3)  # Welch-Satterthwaite: 3.23, not rounded
    assert df == pytest.approx(3.23, abs=0.01)
    assert half == pytest.approx(t_ppf(0.975, df) * se, rel=1e-9)
    assert 2.776 < half / se < 3.182  # between the table's t at df 4 and at df 3


def test_verdict_reads_the_interval():
    assert verdict(1.0, 0.5) == "confirmed"
    assert verdict(-1.0, 0.5) == "refuted"
    assert verdict(0.2, 0.5) == "undecided"
    assert verdict(0.2, 0.5, delta=1.0) == "equivalent"
    row = verdict_row("x", "m", [(1, pd.Series([1.0, 1.1, 0.9]))])
    assert row["verdict"] == "confirmed" and row["ci_low"] < 1 < row["ci_high"] and row["seeds"] == "3"


def test_contrast_needs_two_runs_per_arm():
    with pytest.raises(ValueError, match="at least 2"):
        contrast([(1, pd.Series([1.0]))])


# ---------------------------------------------------------------------------------------------- the runner


def test_seed_runs_reads_stored_runs_back_and_stores_new_ones(tmp_path, monkeypatch):
    arms, _ = lm.experiment_arms("family", "quick", algos=["grpo"])
    stored = tmp_path / lm._run_name("family", "quick", arms[0], 0, 2)
    pd.DataFrame(
        {
            "algo": "grpo",
            "seed": 0,
            "update": [1, 2],
            "reward": [0.25, 0.5],
            "entropy": 0.5,
            "clip_frac": 0.0,
            "time_s": 1.0,
        }
    ).to_csv(stored, index=False)
    calls = []

    def fake_run_lm(config, steps, label=None):  # stands in for training: records who was trained
        calls.append(config.seed)
        n = steps
        return pd.DataFrame(
            {"algo": label, "update": range(1, n + 1), "seed": config.seed, "reward": 0.125, "entropy": 1.0}
            | {"clip_frac": 0.0, "time_s": 0.1, "accuracy": 0.0}
        )

    monkeypatch.setattr(lm, "run_lm", fake_run_lm)
    df = lm.seed_runs("family", seeds=(0, 1), scale="quick", steps=2, workers=1, run_dir=str(tmp_path), algos=["grpo"])
    assert calls == [1]  # seed 0 was read back, only seed 1 was run
    assert df[df.seed == 0]["reward"].tolist() == [0.25, 0.5]
    assert list(df.columns) == ["algo", "seed", "update", *lm.COLUMNS["family"]]  # only the stored columns
    new = tmp_path / lm._run_name("family", "quick", arms[0], 1, 2)
    assert pd.read_csv(new)["reward"].tolist() == [0.125, 0.125]  # the new run is stored as it ends
    lm.seed_runs("family", seeds=(0, 1), scale="quick", steps=2, workers=1, run_dir=str(tmp_path), algos=["grpo"])
    assert calls == [1]  # and read back the next time


def test_experiment_arms_are_the_quick_functions_arms():
    arms, steps = lm.experiment_arms("horizon", "quick")
    assert [(a.label, a.tags["L"]) for a in arms] == [("GRPO", 4), ("PPO", 4), ("GRPO", 16), ("PPO", 16)]
    assert steps == 30
    assert [a.label for a in lm.experiment_arms("family", "quick")[0]] == list(lm.LM_ALGOS)
    with pytest.raises(ValueError, match="short_task"):
        lm.experiment_arms("nonsense")


# ---------------------------------------------------------------------------------------------- verdicts

SEEDS = range(6)


def _curves(arms: dict, updates: int = 30, noise: float = 0.01, **tags) -> pd.DataFrame:
    """Synthetic per-update records: ``arms`` maps a label to {column: (start, end)} (linear in the update),
    plus a per-seed offset shared by the arms of a seed (a warm start) and a little noise."""
    rng = np.random.default_rng(0)
    rows = []
    for s in SEEDS:
        offset = rng.normal(0, 0.2)  # large, shared by a seed's arms: pairing removes it
        for label, cols in arms.items():
            for u in range(1, updates + 1):
                f = (u - 1) / (updates - 1)
                row = {"algo": label, **tags, "seed": s, "update": u}
                for c, (a, b) in cols.items():
                    row[c] = a + (b - a) * f + offset + rng.normal(0, noise)
                rows.append(row)
    return pd.DataFrame(rows)


def _verdicts(table):
    return dict(zip(table["contrast"], table["verdict"], strict=True))


def test_family_verdicts_confirmed_refuted_not_visible():
    df = _curves(
        {
            "grpo": {"reward": (0.3, 0.5)},
            "rloo": {"reward": (0.3, 0.1)},
            "ppo": {"reward": (0.5, 0.5)},
            "gspo": {"reward": (0.3, 0.5)},
        },
        updates=60,
        noise=0.05,
    )
    v = _verdicts(lm.family_verdicts(df))
    assert v["grpo: last 20 - first 5"] == "confirmed"
    assert v["rloo: last 20 - first 5"] == "refuted"
    assert v["ppo: last 20 - first 5"] == "undecided"
    assert v["rloo - grpo"] == "refuted"
    assert v["gspo - grpo"] == "undecided"  # the same curve, other noise


def test_horizon_verdicts_interaction():
    short = _curves({"GRPO": {"reward": (0.3, 0.5)}, "PPO": {"reward": (0.3, 0.5)}}, L=4)
    long = _curves({"GRPO": {"reward": (0.2, 0.3)}, "PPO": {"reward": (0.2, 0.5)}}, L=16)
    t = lm.horizon_verdicts(pd.concat([short, long]))
    v = _verdicts(t)
    assert v["PPO - GRPO at L = 4"] == "undecided"
    assert v["PPO - GRPO at L = 16"] == "confirmed"
    assert v["(PPO - GRPO) at L = 16 minus at L = 4"] == "confirmed"
    assert list(t.columns) == list(TABLE_COLUMNS)
    assert t["seeds"].tolist() == ["6/6", "6/6", "6/6/6/6"]


def test_short_task_verdicts_reward_and_cost():
    df = _curves(
        {
            "GRPO": {"reward": (0.2, 0.4), "time_s": (0.1, 3.0)},
            "PPO (value head)": {"reward": (0.2, 0.2), "time_s": (0.1, 3.0)},
            "PPO (separate critic)": {"reward": (0.2, 0.4), "time_s": (0.2, 6.0)},
        }
    )
    t = lm.short_task_verdicts(df)  # each contrast twice: on reward, then on seconds per update
    cost = t[t.metric == "s per update"].set_index("contrast")["verdict"]
    assert cost["PPO (separate critic) - GRPO"] == "confirmed"
    reward = t[t.metric != "s per update"].set_index("contrast")["verdict"]
    assert reward["PPO (value head) - GRPO"] == "refuted" and reward["PPO (separate critic) - GRPO"] == "undecided"


def test_length_bias_and_clip_higher_verdicts():
    df = _curves(
        {
            "GRPO": {"wrong_length": (3.0, 12.0), "reward": (0.1, 0.0)},
            "Dr.GRPO": {"wrong_length": (3.0, 3.0), "reward": (0.1, 0.1)},
        },
        updates=100,
    )
    v = _verdicts(lm.length_bias_verdicts(df))
    assert v["GRPO - Dr.GRPO"] == "confirmed"
    assert v["GRPO: last 20 - first 10"] == "confirmed"
    assert v["Dr.GRPO: last 20 - first 10"] == "undecided"
    df = _curves(
        {
            "eps_high=0.2": {"entropy": (0.8, 0.3), "reward": (0.2, 0.3)},
            "eps_high=0.28": {"entropy": (0.8, 0.6), "reward": (0.2, 0.2)},
        },
        updates=100,
    )
    t = lm.clip_higher_verdicts(df).set_index(["contrast", "metric"])["verdict"]
    assert t[("eps_high=0.28 - eps_high=0.2", "entropy, last 20")] == "confirmed"
    assert t[("eps_high=0.2: first 5 - last 20", "entropy")] == "confirmed"
    assert t[("eps_high=0.28 - eps_high=0.2", "reward, last 20")] == "refuted"


# ---------------------------------------------------------------------------------------------- stored data


STORED = {name: name for name in lm.EXPERIMENTS if name != "regime"} | {
    "horizon_long": "horizon",
    "horizon_long_rep": "horizon",
    "length_bias_more": "length_bias",
    "family_avx512": "family",
    "family_cpu_default": "family",
}
"""stored file -> its experiment (horizon_long, horizon_long_rep: chapter 07's follow-up at L = 32, replicated;
length_bias_more: chapter 08's twelve more seeds; family_avx512, family_cpu_default: chapter 10's runs again on
the build machine's AVX-512 kernels and on PyTorch's portable ones); the regime pilots have their own test"""


@pytest.mark.parametrize("name", STORED)
def test_stored_records_have_enough_seeds_and_their_command(name):
    """Each stored experiment: its records (``NAME.csv``, or ``NAME.csv.gz`` for the larger restated ones of issue 21,
    which store_records compresses) under 1 MB, every arm with the same seeds (at least 5), the columns its lab writes,
    the command that made it, and verdicts read from it."""
    experiment = STORED[name]
    restated = experiment in lm.RESTATED
    gz = datafiles.DATA_DIR / f"lm/{name}.csv.gz"
    stored = gz if gz.exists() else datafiles.path(f"lm/{name}.csv")
    assert stored.stat().st_size < 1_000_000
    df = lm.read_stored(name)
    if restated:
        keys = list(lm.RESTATED_KEYS[experiment])
        tags = {"sft_steps"} | set(keys) - {"algo"}
    else:
        keys = ["algo", "L"] if experiment == "horizon" else ["algo"]
        tags = set(keys) - {"algo"}
    seeds = df.groupby(keys)["seed"].unique().map(frozenset)
    assert seeds.nunique() == 1 and len(seeds.iloc[0]) >= 5, seeds
    assert set(df.columns) == {"algo", *tags, "seed", "update", *lm.COLUMNS[experiment]}
    cmd = datafiles.path(f"lm/{name}.cmd").read_text()
    cmd = re.sub(r"^ATEN_CPU_CAPABILITY=\S+ ", "", cmd)  # the kernel a rerun on another kernel names
    assert cmd.startswith(f"python -m rltutor.experiments.lm {experiment} ")
    assert f"--out rltutor/data/lm/{stored.name}" in cmd
    table = lm.restated_verdicts(experiment, df) if restated else lm.VERDICTS[experiment](df)
    assert len(table) and set(table["verdict"]) <= set(VERDICTS)


@pytest.mark.parametrize("round_, name", [(1, "regime_pilot"), (2, "regime_pilot2"), (3, "regime_pilot3")])
def test_the_stored_regime_pilots_cover_their_grids_and_read_as_gains(round_, name):
    """The regime pilots (never counted): every setting of their REGIME_PILOTS grid for each of their seeds, the
    command beside them, and regime_table giving one training gain per setting."""
    df = pd.read_csv(datafiles.path(f"lm/{name}.csv"))
    g = lm.REGIME_PILOTS[round_ - 1]
    assert df.groupby(["lr", "sft_steps", "max_operand"])["seed"].nunique().min() >= 2
    assert len(df.groupby(["lr", "sft_steps", "max_operand"])) == len(g["lr"]) * len(g["sft_steps"]) * len(
        g["max_operand"]
    )
    cmd = datafiles.path("lm/regime_pilot.cmd").read_text()
    assert (
        cmd.startswith("python -m rltutor.experiments.lm regime ") and "--out rltutor/data/lm/regime_pilot.csv" in cmd
    )
    table = lm.regime_table(df)
    assert len(table) == len(df.groupby(["lr", "sft_steps", "max_operand"]))
    assert table["gain"].is_monotonic_decreasing and table["s_per_update"].gt(0).all()


def test_the_short_task2_pilot_feeds_its_power_analysis():
    """Chapter 06's restated test: its stored pilot (never counted) has every arm for each of its seeds and the
    command beside it; short_task2_power gives one sd per contrast and the seeds for 80% power at delta."""
    df = pd.read_csv(datafiles.path("lm/short_task2_pilot.csv"))
    arms, updates = lm.experiment_arms("short_task2", "quick")
    assert set(df["algo"]) == {a.label for a in arms} and df["update"].max() == updates
    assert (
        datafiles.path("lm/short_task2_pilot.cmd")
        .read_text()
        .startswith("python -m rltutor.experiments.lm short_task2 ")
    )
    p = lm.short_task2_power(df)
    assert set(p["sd"]) == {f"{a} - {b}" for a, b in lm.SHORT2_CONTRASTS} and p["n"] >= 2
    table = lm.short_task2_verdicts(df)
    assert (table["delta"] == lm.SHORT2["delta"]).all() and (table["family"] == 3).all()


def test_describe_states_the_verdict_and_the_detectable_effect():
    table = pd.DataFrame(
        [
            verdict_row("a - b", "reward", [(1, pd.Series([0.1, -0.1, 0.05]))]),
            verdict_row("c", "m", [(1, pd.Series([1.0, 1.1, 1.2]))]),
        ]
    )
    first, second = describe(table)
    assert "undecided" in first and "would detect an effect of about" in first
    assert second.endswith("confirmed")


def test_store_records_writes_the_csv_and_the_command_beside_it(tmp_path, monkeypatch):
    from rltutor.experiments.runs import store_records

    monkeypatch.delenv("ATEN_CPU_CAPABILITY", raising=False)

    df = pd.DataFrame({"seed": [0, 1], "reward": [0.123456789, 0.5]})
    out = tmp_path / "new" / "lab.csv"
    cmd = store_records(df, str(out), "rltutor.experiments.lm", ["horizon", "--out", "my file.csv"])
    assert pd.read_csv(out)["reward"].tolist() == [0.12346, 0.5]  # 5 significant digits
    assert (tmp_path / "new" / "lab.cmd").read_text() == cmd + "\n"
    assert cmd == "python -m rltutor.experiments.lm horizon --out 'my file.csv'"
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "default")  # another kernel: the command says so
    cmd = store_records(df, str(out), "rltutor.experiments.lm", ["horizon"])
    assert cmd == "ATEN_CPU_CAPABILITY=default python -m rltutor.experiments.lm horizon"


def _synthetic_runs(name: str, effect: float, seeds: int = 12) -> pd.DataFrame:
    """Runs of every arm of a restated experiment, 30 updates each: every metric 0.5 plus seed noise, and the
    first test's first arm ``effect`` higher in the metric of that test over the whole run."""
    rng = np.random.default_rng(0)
    arms, _ = lm.experiment_arms(name, "quick")
    test, metric, terms, _ = lm.RESTATED_TESTS[name][0]
    planted = terms[0][1]
    keys = lm.RESTATED_KEYS[name]
    rows = []
    for arm in arms:
        key = tuple({**arm.tags, "algo": arm.label}[k] for k in keys)
        for s in range(seeds):
            base = 0.5 + 0.01 * rng.standard_normal()
            for u in range(1, 31):
                row = {**arm.tags, "algo": arm.label, "seed": s, "update": u}
                for m in lm.COLUMNS[name]:
                    row[m] = base + 0.005 * rng.standard_normal() + (effect if (key == planted and m == metric) else 0)
                rows.append(row)
    return pd.DataFrame(rows)


@pytest.mark.parametrize("name", sorted(lm.RESTATED))
def test_restated_verdicts_find_a_planted_effect_and_call_a_null_equivalent(name):
    """A restated family read from synthetic runs: an effect planted in the first test's first arm, far above its
    delta, is confirmed; with nothing planted, every test of an end window comes out equivalent (differences of
    about 0.003 against deltas of 0.03 or more), and every row carries its delta and the family's size."""
    table = lm.restated_verdicts(name, _synthetic_runs(name, effect=1.0))
    assert table["verdict"].iloc[0] == "confirmed"
    assert (table["family"] == len(lm.RESTATED_TESTS[name])).all()
    assert table["delta"].tolist() == [t[3] for t in lm.RESTATED_TESTS[name]]
    null = lm.restated_verdicts(name, _synthetic_runs(name, effect=0.0))
    assert set(null["verdict"]) == {"equivalent"}
    power = lm.restated_power(name, _synthetic_runs(name, effect=0.0, seeds=3))
    assert len(power) == len(lm.RESTATED_TESTS[name]) and (power["n"] >= 2).all()


@pytest.mark.parametrize("name", sorted(lm.RESTATED))
def test_restated_arms_share_their_batch_and_steps_and_are_tagged_with_their_warm_start(name):
    """Every arm of a restated experiment samples the same prompts x completions and takes the same optimizer
    steps a batch (chapter 10's equal-settings comparison depends on it), read from the resolved configs; each is
    tagged with its warm start, and a pilot's grid of warm starts gives one arm per setting."""
    table = lm.arm_settings(name)
    assert (table["prompts"] * table["per_prompt"]).nunique() == 1 and table["steps_per_batch"].nunique() == 1
    assert (table["sft_steps"] == lm.RESTATED[name]["sft_steps"]).all()
    one, _ = lm.experiment_arms(name, "quick")
    two, _ = lm.experiment_arms(name, "quick", sft_steps=(10, 20))
    assert len(two) == 2 * len(one) and {a.tags["sft_steps"] for a in two} == {10, 20}
    assert f"(``{name}``;" in lm.prestatement(name)


def test_store_records_compresses_a_gz_out_and_names_its_command_without_the_suffixes(tmp_path, monkeypatch):
    from rltutor.experiments.runs import store_records

    monkeypatch.delenv("ATEN_CPU_CAPABILITY", raising=False)
    out = tmp_path / "lab.csv.gz"
    store_records(pd.DataFrame({"seed": [0], "reward": [0.5]}), str(out), "rltutor.experiments.lm", ["x"])
    assert out.read_bytes()[:2] == b"\x1f\x8b" and pd.read_csv(out)["reward"].tolist() == [0.5]
    assert (tmp_path / "lab.cmd").read_text() == "python -m rltutor.experiments.lm x\n"
