"""The command line writes what it promises."""

import json

import pandas as pd
import pytest

from rltutor.cli import main


def test_help_lists_the_subcommands(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "train" in out and "list" in out


def test_train_writes_metrics_config_and_plot(tmp_path):
    out = tmp_path / "run"
    rc = main(["train", "--algo", "ppo", "--env", "CartPole-v1", "--steps", "1000", "--seed", "2",
               "--out", str(out), "--no-progress", "--set", "num_steps=64"])
    assert rc == 0
    m = pd.read_csv(out / "metrics.csv")
    assert {"env_steps", "episode_return", "policy_loss", "entropy"} <= set(m.columns)
    assert m["env_steps"].iloc[-1] >= 1000
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["algo"] == "ppo" and cfg["seed"] == 2 and cfg["num_steps"] == 64 and cfg["total_steps"] == 1000
    png = (out / "learning_curve.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    assert (out / "checkpoint.pt").exists()
    # resume with a larger budget continues the same run
    assert main(["train", "--out", str(out), "--resume", "--steps", "1500", "--no-progress"]) == 0
    m2 = pd.read_csv(out / "metrics.csv")
    assert len(m2) > len(m) and m2["env_steps"].iloc[-1] >= 1500
    pd.testing.assert_frame_equal(m2.iloc[: len(m)].drop(columns="time_s"), m.drop(columns="time_s"))


def test_grpo_on_the_corridor_with_group_size_and_horizon(tmp_path):
    out = tmp_path / "grpo"
    assert main(["train", "--algo", "grpo", "--group-size", "4", "--env", "corridor", "--horizon", "7",
                 "--steps", "500", "--out", str(out), "--no-progress"]) == 0
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["group_size"] == 4 and cfg["env_options"] == {"horizon": 7} and cfg["critic"] is False


def test_bad_input_is_an_error_message_not_a_traceback(tmp_path, capsys):
    assert main(["train", "--algo", "trpo", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "trpo" in err and "grpo" in err and "ppo" in err
    assert main(["train", "--algo", "grpo", "--group-size", "1", "--out", str(tmp_path)]) == 2
    assert "group_size >= 2" in capsys.readouterr().err
    assert main(["train", "--out", str(tmp_path / "empty"), "--resume"]) == 2


def test_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "grpo" in out and "CartPole-v1" in out and "gae" in out


def test_console_script_points_at_main():
    from importlib.metadata import entry_points

    scripts = [e for e in entry_points(group="console_scripts") if e.name == "rltutor"]
    if not scripts:
        pytest.skip("rltutor is not installed (pip install -e .)")
    assert scripts[0].value == "rltutor.cli:main"


def test_tuned_settings_apply_unless_defaults_are_asked_for(tmp_path):
    from rltutor.config import CARTPOLE_PPO, Config

    for hp, lr in (("tuned", CARTPOLE_PPO["lr"]), ("defaults", Config.lr)):
        out = tmp_path / hp
        assert main(["train", "--env", "CartPole-v1", "--steps", "300", "--out", str(out), "--no-progress",
                     "--hparams", hp, "--set", "epochs=1"]) == 0
        cfg = json.loads((out / "config.json").read_text())
        assert cfg["lr"] == lr and cfg["epochs"] == 1 and cfg["total_steps"] == 300  # explicit flags win


def test_a_language_model_run_checkpoints_and_resumes_exactly(tmp_path):
    def args(out, steps):
        return ["train", "--algo", "grpo", "--env", "addition", "--out", str(out), "--steps", str(steps),
                "--no-progress", "--checkpoint-every", "1", "--set", "num_groups=2", "--set", "group_size=4",
                "--set", "sft_steps=20"]

    assert main(args(tmp_path / "lm", 40)) == 0
    first = pd.read_csv(tmp_path / "lm" / "metrics.csv")
    # an LM run's metrics.csv carries what the chapters plot: accuracy, score, length, held-out accuracy
    for col in ("accuracy", "score", "response_length", "sample_entropy", "greedy_accuracy"):
        assert col in first.columns, col
    cfg = json.loads((tmp_path / "lm" / "config.json").read_text())
    assert cfg["scale"] == "quick" and cfg["sft_steps"] == 20 and "hidden" not in cfg  # no MLP fields
    assert main(["train", "--out", str(tmp_path / "lm"), "--resume", "--steps", "80", "--no-progress"]) == 0
    resumed = pd.read_csv(tmp_path / "lm" / "metrics.csv")
    assert main(args(tmp_path / "whole", 80)) == 0
    uninterrupted = pd.read_csv(tmp_path / "whole" / "metrics.csv")
    assert len(resumed) > len(first)
    cols = ["env_steps", "episode_return", "policy_loss", "entropy"]
    pd.testing.assert_frame_equal(resumed[cols], uninterrupted[cols])


def test_guard_command_exit_codes(capsys):
    assert main(["guard", "cat tests/hidden/test_answer.py"]) == 1
    assert "blocked" in capsys.readouterr().out
    assert main(["guard", "cat src/config.py"]) == 0
    assert "allowed" in capsys.readouterr().out


def test_scale_is_explicit_and_recorded(tmp_path):
    from rltutor.config import LM_SCALES, tuned_settings

    full = tuned_settings("grpo", "addition", "full")
    assert full["n_embd"] == LM_SCALES["full"]["n_embd"] and full["scale"] == "full"
    assert tuned_settings("grpo", "addition", "quick")["n_embd"] == LM_SCALES["quick"]["n_embd"]
    out = tmp_path / "full"
    assert main(["train", "--env", "CartPole-v1", "--steps", "200", "--out", str(out), "--no-progress",
                 "--scale", "full", "--set", "epochs=1"]) == 0
    assert json.loads((out / "config.json").read_text())["scale"] == "full"


def test_python_dash_m_rltutor_runs_the_command_line():
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "rltutor", "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "train" in r.stdout
