"""The time-to-accuracy benchmark (benchmarks/lm_time_to_accuracy.py): TRL's GPT-2 computes TinyGPT's
function, a tiny run of both sides (each in its subprocess) writes the CSV and the table, and the table's
medians treat an unreached target as infinite. No timing is checked (noisy machines)."""

import importlib.util
import math
from pathlib import Path

import pytest
import torch

pytest.importorskip("trl", reason="TRL is not installed: the benchmark compares rltutor against TRL's GRPOTrainer")

ROOT = Path(__file__).resolve().parents[1]


def _load():
    spec = importlib.util.spec_from_file_location("lm_time_to_accuracy", ROOT / "benchmarks" / "lm_time_to_accuracy.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_gpt2_twin_computes_tinygpt_and_copies_back():
    tta = _load()
    from rltutor.models.lm_policy import make_model

    tiny = make_model(14, 12, n_layer=2, n_head=4, n_embd=32, seed=3, device="cpu")
    gpt2 = tta.gpt2_like(tiny)
    x = torch.randint(2, 14, (5, 12))
    assert torch.allclose(gpt2(x).logits, tiny(x)[0], atol=1e-5)
    with torch.no_grad():  # a change on the GPT-2 side reaches the TinyGPT used for evaluation
        gpt2.transformer.h[1].mlp.c_fc.weight.add_(0.1)
    other = make_model(14, 12, n_layer=2, n_head=4, n_embd=32, seed=4, device="cpu")
    tta.gpt2_to_tiny(gpt2, other)
    assert torch.allclose(gpt2(x).logits, other(x)[0], atol=1e-5)


def test_tokenizer_uses_rltutor_ids():
    tta = _load()
    from rltutor.envs.tokens import encode

    tok = tta.trl_tokenizer()
    assert tok("07+12=")["input_ids"] == encode("07+12=")
    assert (tok.pad_token_id, tok.eos_token_id, len(tok)) == (0, 1, 14)


@pytest.mark.slow  # two fresh interpreters importing torch (and TRL): about 15-20 s on a shared 2-core machine
def test_tiny_run_of_both_sides_writes_csv_and_table(tmp_path, capsys):
    tta = _load()
    out, curves = tmp_path / "tta.csv", tmp_path / "curves.csv"
    args = ["--tasks", "addition", "--seeds", "0", "--target", "1.01", "--max-steps", "2", "--eval-every", "1"]
    tta.main([*args, "--sft-steps", "2", "--out", str(out), "--curves", str(curves)])
    import pandas as pd

    df = pd.read_csv(out)
    assert list(df.system) == ["rltutor", "trl"]  # alternating, rltutor first
    for col in ("warm_acc", "time_to_target_s", "steps_to_target", "train_s", "step_s", "sft_s", "peak_rss_mb"):
        assert col in df.columns, col
    assert (~df.reached).all() and (df.steps_run == 2).all() and (df.peak_rss_mb > 0).all()
    assert (df.peak_rss_mb >= df.import_rss_mb).all()
    assert df.warm_acc.iloc[0] == pytest.approx(df.warm_acc.iloc[1])  # the same warm start on both sides
    c = pd.read_csv(curves)
    assert sorted(c.step.unique()) == [0, 1, 2]
    text = capsys.readouterr().out
    assert "| addition | rltutor | 1.01 | 0/1 | n.r. |" in text and "| addition | trl |" in text


def test_table_medians_count_unreached_as_infinite():
    tta = _load()
    base = dict(task="addition", system="rltutor", target=0.9, warm_acc=0.5, final_acc=0.9, s_per_step=0.1)
    base.update(peak_rss_mb=300.0, import_rss_mb=200.0)
    rows = [
        {**base, "reached": True, "time_to_target_s": 10.0, "steps_to_target": 50},
        {**base, "reached": True, "time_to_target_s": 20.0, "steps_to_target": 100},
        {**base, "reached": False, "time_to_target_s": math.inf, "steps_to_target": math.inf},
    ]
    line = tta.table(rows).splitlines()[-1]
    assert "| 2/3 | 20.0 (10.0-n.r.) | 100 (50-n.r.) |" in line
    assert "n.r." in tta.table(rows[2:]).splitlines()[-1]


def test_paired_table_gives_trl_over_rltutor_per_seed(tmp_path):
    tta = _load()
    common = dict(task="addition", seed=0, target=0.9, warm_acc=0.5, final_acc=0.9, s_per_step=0.1)
    common.update(peak_rss_mb=300.0, import_rss_mb=200.0, reached=True)
    rows = [
        {**common, "system": "rltutor", "time_to_target_s": 2.0, "steps_to_target": 20},
        {**common, "system": "trl", "time_to_target_s": 5.0, "steps_to_target": 30},
    ]
    assert "| addition | 0 | 2.0 (20) | 5.0 (30) | 2.50 |" in tta.paired(rows)
    tta.write_csv(rows, tmp_path / "r.csv")
    assert tta.paired(tta.read_csv(tmp_path / "r.csv")) == tta.paired(rows)
