"""Smoke tests of the benchmark scripts: they run, and their bookkeeping is consistent. No timing
is checked here (timings belong in the benchmarks themselves, not in tests on noisy machines)."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_lm_throughput_runs_without_trl(tmp_path):
    lm = _load("lm_throughput")
    out = tmp_path / "lm.csv"
    lm.main(["--lengths", "4", "--steps", "1", "--no-trl", "--threads", "1", "--out", str(out)])
    import pandas as pd

    row = pd.read_csv(out).iloc[0]
    assert row["T"] == 4
    for col in (
        "rollout_cache",
        "rollout_no_cache",
        "train_fwd_bwd",
        "rltutor_step",
        "floor_step",
        "floor_step_shared",
    ):
        assert row[col] > 0, col
    assert row["floor_step"] == pytest.approx(64 * 4 / row["floor_step_s"])
    # the shares of the floor are ratios of medians: the whole step's share is rltutor's tokens/s over the floor's
    assert row["of_floor"] == pytest.approx(row["rltutor_step"] / row["floor_step"])
    for col in ("of_floor", "sampling_of_floor", "update_of_floor", "rltutor_sample_share"):
        assert 0 < row[col] < 5, col


def test_floor_summary_takes_the_median_of_each_phase_and_of_the_step():
    lm = _load("lm_throughput")
    s = lm.floor_summary([(0.3, 0.1), (0.2, 0.4), (0.25, 0.2)])
    # the step's median is the median of the sums (0.4, 0.6, 0.45), not the sum of the medians (0.45)
    assert s == {"floor_sampling_s": 0.25, "floor_update_s": 0.2, "floor_step_s": pytest.approx(0.45)}
    s = lm.floor_summary([(0.1, 0.5), (0.2, 0.1), (0.3, 0.3)])
    assert s["floor_step_s"] == pytest.approx(0.6) and s["floor_sampling_s"] + s["floor_update_s"] == pytest.approx(0.5)


def test_unknown_trl_variant_is_refused_before_anything_runs():
    lm = _load("lm_throughput")
    with pytest.raises(ValueError, match="unknown TRL variant 'fast'"):
        lm.bench_trl_step(4, 1, variant="fast")


def test_sampler_against_baseline_runs_and_refuses_a_baseline_that_samples_otherwise(tmp_path):
    lm = _load("lm_throughput")
    same = ROOT / "rltutor" / "models" / "lm_policy.py"
    (row,) = lm.main(["--lengths", "4", "--steps", "1", "--threads", "1", "--baseline-sampler", str(same)])
    assert row["sample_s_current"] > 0 and row["speedup"] == pytest.approx(
        row["sample_s_baseline"] / row["sample_s_current"]
    )
    other = tmp_path / "other.py"
    other.write_text(
        "import torch\nfrom rltutor.models.lm_policy import sample as _sample\n\n\n"
        "def sample(model, prompts, T, tau, generator, use_cache, stop_early):\n"
        "    g = torch.Generator().manual_seed(99)  # not the caller's seed\n"
        "    return _sample(model, prompts, T, tau, g, use_cache, stop_early=stop_early)\n"
    )
    with pytest.raises(ValueError, match="samples other tokens"):
        lm.main(["--lengths", "4", "--steps", "1", "--threads", "1", "--baseline-sampler", str(other)])
