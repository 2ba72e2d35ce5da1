"""The command line writes what it promises."""

import json
import os

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
    rc = main(
        [
            "train",
            "--algo",
            "ppo",
            "--env",
            "CartPole-v1",
            "--steps",
            "1000",
            "--seed",
            "2",
            "--out",
            str(out),
            "--no-progress",
            "--set",
            "num_steps=64",
        ]
    )
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
    assert (
        main(
            [
                "train",
                "--algo",
                "grpo",
                "--group-size",
                "4",
                "--env",
                "corridor",
                "--horizon",
                "7",
                "--steps",
                "500",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
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
    from rltutor.guard.wrapper import POLICIES
    from rltutor.rollout.compaction import COMPACTIONS, SUB_ADVANTAGES

    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "grpo" in out and "CartPole-v1" in out and "gae" in out
    for name, what in SUB_ADVANTAGES.items():  # the agent's settings, read from their registries
        assert f"{name}: {what}" in out
    assert ", ".join(COMPACTIONS) in out and ", ".join(POLICIES) in out


def _config_of(argv, capsys):
    """The Config ``rltutor train ARGV`` would start, and what it printed (stdout, stderr)."""
    from rltutor.cli import _new_config, build_parser

    config = _new_config(build_parser().parse_args(["train", "--out", "unused", *argv]))
    out = capsys.readouterr()
    return config, out.out, out.err


def test_toolshell_defaults_to_the_template_agent_and_the_token_agent_says_it_will_not_learn(capsys):
    from rltutor.config import TEMPLATE_ENV, TEMPLATE_SETTINGS

    config, _, err = _config_of(["--env", "toolshell"], capsys)
    assert config.agent_policy == "templates" and err == ""
    assert config.env_options == TEMPLATE_ENV and config.num_groups == TEMPLATE_SETTINGS["ppo"]["num_groups"]
    config, _, err = _config_of(["--env", "toolshell", "--algo", "grpo", "--compaction", "summary"], capsys)
    assert (config.agent_policy, config.compaction, config.critic) == ("templates", "summary", False) and err == ""
    for argv in (["--agent-policy", "tokens"], ["--set", "agent_policy=tokens"]):
        config, _, err = _config_of(["--env", "toolshell", *argv], capsys)
        assert config.agent_policy == "tokens" and config.env_options == {}  # the token agent's own settings
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "not expected to learn in CPU minutes" in lines[0], err
        assert "rltutor.experiments.token_agent" in lines[0]  # chapter 11's measurement (test_token_agent.py)
    _, _, err = _config_of(["--env", "CartPole-v1"], capsys)
    assert err == ""


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
        assert (
            main(
                [
                    "train",
                    "--env",
                    "CartPole-v1",
                    "--steps",
                    "300",
                    "--out",
                    str(out),
                    "--no-progress",
                    "--hparams",
                    hp,
                    "--set",
                    "epochs=1",
                ]
            )
            == 0
        )
        cfg = json.loads((out / "config.json").read_text())
        assert cfg["lr"] == lr and cfg["epochs"] == 1 and cfg["total_steps"] == 300  # explicit flags win


def test_a_language_model_run_checkpoints_and_resumes_exactly(tmp_path):
    def args(out, steps):
        return [
            "train",
            "--algo",
            "grpo",
            "--env",
            "addition",
            "--out",
            str(out),
            "--steps",
            str(steps),
            "--no-progress",
            "--checkpoint-every",
            "1",
            "--set",
            "num_groups=2",
            "--set",
            "group_size=4",
            "--set",
            "sft_steps=20",
        ]

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
    assert (
        main(
            [
                "train",
                "--env",
                "CartPole-v1",
                "--steps",
                "200",
                "--out",
                str(out),
                "--no-progress",
                "--scale",
                "full",
                "--set",
                "epochs=1",
            ]
        )
        == 0
    )
    assert json.loads((out / "config.json").read_text())["scale"] == "full"


def test_python_dash_m_rltutor_runs_the_command_line():
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "rltutor", "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "train" in r.stdout


# --- bad input: one line, exit 2, nothing written ----------------------------------------------

BAD_INPUT = [
    (["--set", "lr=abc"], "lr expects a number"),
    (["--set", "nonexistent=1"], "unknown config field 'nonexistent'; valid: agent_policy, agg, algo"),
    (["--set", "anneal_lr=maybe"], "true or false"),
    (["--set", "device=bogus"], "unknown device 'bogus'"),
    (["--set", "torch_threads=0"], "torch_threads"),
    (["--set", "max_grad_norm=-1"], "max_grad_norm"),
    (["--set", "max_grad_norm=0"], "max_grad_norm"),
    (["--set", "ent_coef=-0.1"], "ent_coef"),
    (["--set", "vf_coef=-1"], "vf_coef"),
    (["--set", "kl_coef=-0.5"], "kl_coef"),
    (["--set", "target_kl=-0.01"], "target_kl"),
    (["--set", "target_kl=0"], "target_kl"),
    (["--set", "hidden=64,x"], "comma-separated integers"),
    (["--set", "lr"], "KEY=VALUE"),
    (["--set", "algo=grpo"], "--algo grpo"),
    (["--env", "corridor", "--set", "env_options={'horizont': 3}"], "horizont"),
    (["--checkpoint-every", "0"], "--checkpoint-every"),
    (["--steps", "0"], "--steps"),
    (["--env", "toolshell", "--context-budget", "99999999999999999999"], "context_budget <= 8,192"),
    (["--env", "toolshell", "--context-budget", "100000000"], "context_budget <= 8,192"),
    (["--seed", "99999999999999999999999"], "seed must be an integer 0 <= seed <= 9,223,372,036,854,775,807"),
    (["--seed", "-1"], "seed must be an integer >= 0"),
    (["--algo", ""], "unknown algorithm ''; valid: cispo"),
    (["--env", ""], "unknown environment ''"),
    (
        ["--env", "toolshell", "--horizon", "5"],
        "--horizon sets options of the corridor environment, not of 'toolshell'",
    ),
    (["--env", "toolshell", "--reward-noise", "0.1"], "--reward-noise sets options of the corridor"),
    (["--env", "toolshell", "--guard", "bogus"], "unknown guard 'bogus'; valid: abort, decoy, none, penalize"),
    (["--env", "toolshell", "--agent-policy", "tiny"], "unknown agent_policy 'tiny'; valid: templates, tokens"),
    (["--env", "toolshell", "--compaction", "fold"], "unknown compaction 'fold'; valid: none, recent, summary"),
    (["--env", "toolshell", "--sub-advantage", "x"], "unknown sub_advantage 'x'; valid: auto, broadcast_grpo"),
    (
        ["--env", "toolshell", "--algo", "grpo", "--sub-advantage", "ppo_bootstrap"],
        "sub_advantage='ppo_bootstrap' feeds GAE: it needs estimator='gae', critic=True",
    ),
    (["--env", "CartPole-v1", "--no-observe-progress"], "--no-observe-progress sets options of the corridor"),
    (["--algo", "grpo", "--group-size", "100000", "--steps", "64"], "lower --group-size or --set num_groups"),
    (["--algo", "grpo", "--group-size", "100", "--steps", "64"], "100 x 4 = 400 episodes of at least one step each"),
    (["--set", "num_envs=5000"], "num_envs = 5,000 environment copies per update is more than 4,096"),
    (["--set", "num_steps=99999999999"], "steps per update is more than 1,048,576"),
]


@pytest.mark.parametrize("extra, needle", BAD_INPUT, ids=[" ".join(a) for a, _ in BAD_INPUT])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, extra, needle):
    out = tmp_path / "run"
    assert main(["train", "--out", str(out), "--no-progress", "--steps", "200", *extra]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_a_bad_out_path_is_refused(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("keep me")
    for out in (afile, afile / "sub"):
        assert main(["train", "--out", str(out), "--no-progress", "--steps", "200"]) == 2
        assert "is a file" in capsys.readouterr().err
    assert afile.read_text() == "keep me"


@pytest.mark.parametrize("out", ["", "   ", "/proc/rltutor-x"])
def test_an_out_that_cannot_be_made_is_one_line(capsys, out):
    assert main(["train", "--out", out, "--no-progress", "--steps", "200"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and "--out" in err, err


def test_an_unwritable_out_is_refused(tmp_path, capsys):
    import os

    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    if os.access(locked, os.W_OK):
        pytest.skip("running as a user who can write anywhere (root)")
    assert main(["train", "--out", str(locked / "run"), "--no-progress", "--steps", "200"]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_set_reads_each_value_as_its_fields_type():
    from rltutor.cli import _parse_set

    got = _parse_set(
        [
            "anneal_lr=false",
            "critic=True",
            "hidden=64,64",
            "lr=1e-3",
            "total_steps=1e5",
            "max_grad_norm=none",
            "agg=token-mean",
            "env_options={'horizon': 7}",
        ]
    )
    assert got == {
        "anneal_lr": False,
        "critic": True,
        "hidden": (64, 64),
        "lr": 1e-3,
        "total_steps": 100_000,
        "max_grad_norm": None,
        "agg": "token-mean",
        "env_options": {"horizon": 7},
    }
    assert _parse_set(["hidden=(32, 16)"])["hidden"] == (32, 16) and _parse_set(["hidden=8"])["hidden"] == (8,)
    assert type(got["total_steps"]) is int


# --- a folder that holds a run ------------------------------------------------------------------


def small_run(out, *extra):
    return ["train", "--out", str(out), "--no-progress", "--steps", "300", "--set", "num_steps=32", *extra]


def test_the_final_line_and_the_plot_show_a_toolshell_runs_hack_rate(tmp_path, capsys, monkeypatch):
    """A run that hacks every episode (return 0.8, hack rate 1, honest solve rate 0) must not read as a
    success: the final line and the plot's lines carry both rates (the history stands in for training)."""
    from rltutor.train import Trainer
    from rltutor.views import curves

    fake = pd.DataFrame({"update": [1, 2], "env_steps": [64, 128], "episode_return": 0.8, "return_last10": 0.8})
    fake["solve_rate"], fake["hack_rate"] = 0.0, 1.0
    monkeypatch.setattr(Trainer, "train", lambda self, **kw: fake)
    drawn = []
    real = curves.learning_curve
    monkeypatch.setattr(curves, "learning_curve", lambda h, title="": drawn.append(r := real(h, title)) or r)
    assert main(small_run(tmp_path / "run")) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert "mean return of the last 10 episodes 0.8; in the last update honest solve rate 0, hack rate 1;" in last
    ((_, axes),) = drawn
    assert {line.get_label(): list(line.get_ydata()) for line in axes[1].get_lines()}["hack rate"] == [1.0, 1.0]
    assert (tmp_path / "run" / "learning_curve.png").exists()


def test_a_new_run_never_overwrites_an_old_one_unless_asked(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(small_run(out, "--seed", "1")) == 0
    before = {n: (out / n).read_bytes() for n in ("checkpoint.pt", "config.json", "metrics.csv")}
    assert main(small_run(out, "--seed", "2")) == 2
    err = capsys.readouterr().err
    assert "already holds a run" in err and "--resume" in err and "--overwrite" in err
    assert {n: (out / n).read_bytes() for n in before} == before
    assert main(small_run(out, "--seed", "2", "--resume", "--overwrite")) == 2
    for name in ("metrics.csv", "config.json"):  # any one of the run's files marks the folder as a run
        other = tmp_path / name
        other.mkdir()
        (other / name).write_text("x")
        assert main(small_run(other)) == 2
    assert main(small_run(out, "--seed", "2", "--overwrite")) == 0
    assert json.loads((out / "config.json").read_text())["seed"] == 2
    assert len(pd.read_csv(out / "metrics.csv")) == len(pd.read_csv(out / "metrics.csv").drop_duplicates("update"))


def test_resume_refuses_flags_that_contradict_the_stored_config(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(small_run(out, "--seed", "1")) == 0
    capsys.readouterr()
    for extra, needle in (
        (["--algo", "grpo"], "--algo grpo"),
        (["--seed", "3"], "--seed 3"),
        (["--env", "Acrobot-v1"], "--env Acrobot-v1"),
        (["--set", "lr=0.1"], "--set lr=0.1"),
        (["--hparams", "defaults"], "--hparams"),
        (["--horizon", "5"], "--horizon 5"),
    ):
        assert main(["train", "--out", str(out), "--resume", "--no-progress", *extra]) == 2, extra
        err = capsys.readouterr().err
        assert needle in err and "contradict" in err and len(err.strip().splitlines()) == 1, err
    # the same values are no contradiction: the first command line plus --resume works (the first run did
    # 2 updates of 8 x 32 steps: 512, so the new budget must lie above that)
    assert main(small_run(out, "--seed", "1", "--algo", "ppo", "--resume", "--steps", "800")) == 0


# --- metrics as the run goes, Ctrl-C ------------------------------------------------------------


def test_ctrl_c_saves_says_how_to_resume_and_exits_130(tmp_path, capsys, monkeypatch):
    import os
    import signal

    from rltutor.train import Trainer

    step = Trainer.step

    def step_then_ctrl_c(self):
        row = step(self)
        if self.update_idx == 3:
            os.kill(os.getpid(), signal.SIGINT)  # as if the reader pressed Ctrl-C during update 3
        return row

    monkeypatch.setattr(Trainer, "step", step_then_ctrl_c)
    out = tmp_path / "run"
    assert main(small_run(out, "--steps", "2000", "--checkpoint-every", "100")) == 130
    err = capsys.readouterr().err
    assert f"rltutor train --out {out} --resume" in err and "Traceback" not in err
    assert Trainer.load(out / "checkpoint.pt").update_idx == 3
    assert len(pd.read_csv(out / "metrics.csv")) == 3
    assert (out / "learning_curve.png").exists()
    assert not [p for p in os.listdir(out) if ".tmp" in p]
    monkeypatch.setattr(Trainer, "step", step)
    assert main(["train", "--out", str(out), "--resume", "--no-progress"]) == 0
    assert pd.read_csv(out / "metrics.csv")["env_steps"].iloc[-1] >= 2000


def test_a_crash_keeps_the_metrics_so_far(tmp_path, monkeypatch):
    from rltutor.train import Trainer

    step = Trainer.step

    def crash_at_4(self):
        if self.update_idx == 3:
            raise RuntimeError("a bug")
        return step(self)

    monkeypatch.setattr(Trainer, "step", crash_at_4)
    out = tmp_path / "run"
    with pytest.raises(RuntimeError, match="a bug"):  # a bug keeps its traceback
        main(small_run(out, "--steps", "2000"))
    m = pd.read_csv(out / "metrics.csv")
    assert list(m["update"]) == [1, 2, 3]


# --- one folder, one run: the lock; what --resume finds --------------------------------------------


def test_a_second_run_into_a_busy_folder_is_refused_and_a_crash_leaves_no_stale_lock(tmp_path, capsys):
    """Two processes: a run in a subprocess holds the folder; this process's runs into it are refused
    (new, --resume, --overwrite), nothing of the first run's is touched; once the first is killed (a crash),
    the folder is free again."""
    import signal
    import subprocess
    import sys
    import time

    from rltutor.train import Trainer

    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    first = subprocess.Popen(
        [sys.executable, "-m", "rltutor", *small_run(out, "--steps", "10000000", "--checkpoint-every", "1")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.time() + 120
        while not (out / "checkpoint.pt").exists():  # the first run is training and has saved once
            assert first.poll() is None, first.stderr.read().decode()
            assert time.time() < deadline, "the first run did not start"
            time.sleep(0.2)
        config = (out / "config.json").read_bytes()
        for extra in (["--seed", "2"], ["--resume"], ["--seed", "2", "--overwrite"]):
            assert main(small_run(out, *extra)) == 2, extra
            err = capsys.readouterr().err
            assert "is in use by another rltutor run" in err and len(err.strip().splitlines()) == 1, err
        assert (out / "config.json").read_bytes() == config and first.poll() is None
    finally:
        first.send_signal(signal.SIGKILL)  # a crash: no clean exit, the system drops the lock
        first.wait(timeout=60)
    assert (out / ".lock").exists()
    done = int(Trainer.read_checkpoint(out / "checkpoint.pt")["env_steps"])
    assert main(["train", "--out", str(out), "--resume", "--no-progress", "--steps", str(done + 256)]) == 0


def test_resume_names_a_hand_edited_or_broken_config_json_and_rewrites_it(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(small_run(out, "--seed", "1")) == 0
    original = json.loads((out / "config.json").read_text())
    capsys.readouterr()
    edited = {**original, "lr": 0.5}
    (out / "config.json").write_text(json.dumps(edited))
    assert main(["train", "--out", str(out), "--resume", "--no-progress", "--steps", "800"]) == 0
    err = capsys.readouterr().err
    assert "config.json was edited (lr: 0.5 in the file" in err and len(err.strip().splitlines()) == 1, err
    assert json.loads((out / "config.json").read_text())["lr"] == original["lr"]
    (out / "config.json").write_text("{not json")
    assert main(["train", "--out", str(out), "--resume", "--no-progress", "--steps", "1100"]) == 0
    err = capsys.readouterr().err
    assert "config.json is not valid JSON" in err and len(err.strip().splitlines()) == 1, err
    assert main(["train", "--out", str(out), "--resume", "--no-progress", "--steps", "1400"]) == 0
    assert "config.json" not in capsys.readouterr().err  # agrees with the checkpoint now: no word


def test_resume_refuses_a_budget_below_the_steps_already_done(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(small_run(out, "--steps", "600")) == 0  # 3 updates of 8 x 32 steps: 768 done
    before = {n: (out / n).read_bytes() for n in ("checkpoint.pt", "config.json", "metrics.csv")}
    capsys.readouterr()
    for extra in (["--steps", "100"], ["--set", "total_steps=767"]):
        assert main(["train", "--out", str(out), "--resume", "--no-progress", *extra]) == 2
        err = capsys.readouterr().err
        assert "below the 768 environment steps" in err and len(err.strip().splitlines()) == 1, err
    assert {n: (out / n).read_bytes() for n in before} == before


def test_the_corridor_option_flag_is_not_the_progress_bar(tmp_path):
    out = tmp_path / "hidden"
    assert main(["train", "--env", "corridor", "--no-observe-progress", *small_run(out)[1:]]) == 0
    assert json.loads((out / "config.json").read_text())["env_options"] == {"observe_progress": False}
    with pytest.raises(SystemExit):  # the old, ambiguous name is gone
        main(["train", "--env", "corridor", "--hide-progress", *small_run(tmp_path / "old")[1:]])


@pytest.mark.parametrize("victim", ["checkpoint", "metrics", "plot"])
def test_a_full_disk_is_one_line_and_keeps_the_files_whole(tmp_path, capsys, monkeypatch, victim):
    """Writes fail as on a full disk (OSError ENOSPC after part of the data is written): one line, exit 1,
    and each file is either as its last complete write left it or absent; the run resumes from them."""
    import errno

    import torch

    from rltutor.train import Trainer

    out = tmp_path / "run"
    calls = {"n": 0}
    full = OSError(errno.ENOSPC, "No space left on device")

    if victim == "checkpoint":
        real = torch.save

        def save(obj, f, *a, **k):
            calls["n"] += 1
            if calls["n"] < 3:
                return real(obj, f, *a, **k)
            with open(f, "wb") as fh:
                fh.write(b"PK half a checkpoint")
            raise full

        monkeypatch.setattr(torch, "save", save)
    elif victim == "metrics":
        import rltutor.train as train_module

        class HalfWrite:  # the appended row reaches the disk in part, then the disk is full
            def __init__(self, f):
                self.f = f

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.f.close()

            def seek(self, *a):
                return self.f.seek(*a)

            def write(self, data):
                self.f.write(bytes(data)[:7])
                raise full

        def fake_open(path, mode="r", *a, **k):
            f = open(path, mode, *a, **k)
            if str(path).endswith("metrics.csv") and "a" in mode:
                calls["n"] += 1
                if calls["n"] >= 3:
                    return HalfWrite(f)
            return f

        monkeypatch.setattr(train_module, "open", fake_open, raising=False)
    else:
        import matplotlib.figure

        def savefig(self, fname, *a, **k):
            with open(fname, "wb") as fh:
                fh.write(b"\x89PNG half")
            raise full

        monkeypatch.setattr(matplotlib.figure.Figure, "savefig", savefig)
    rc = main(small_run(out, "--steps", "2000", "--checkpoint-every", "2"))
    err = capsys.readouterr().err
    assert rc == 1 and len(err.strip().splitlines()) == 1 and "No space left on device" in err, err
    assert "--resume" in err and "Traceback" not in err
    monkeypatch.undo()
    assert not [p for p in os.listdir(out) if ".tmp" in p]
    state = Trainer.read_checkpoint(out / "checkpoint.pt")  # whole: the last complete save
    m = pd.read_csv(out / "metrics.csv")
    assert list(m["update"]) == list(range(1, len(m) + 1)) and m.notna()["env_steps"].all()
    assert len(m) >= state["update_idx"]
    assert json.loads((out / "config.json").read_text())["total_steps"] == 2000
    assert not (out / "learning_curve.png").exists() or victim != "plot"
    assert main(["train", "--out", str(out), "--resume", "--no-progress"]) == 0
