"""A checkpoint is data, never code: a crafted checkpoint.pt is refused before anything in it runs, and the
checkpoints rltutor writes (tensors and plain data only) still resume exactly."""

from __future__ import annotations

import pickle

import pandas as pd
import pytest
import torch

from rltutor.cli import main
from rltutor.config import make_config
from rltutor.train import Trainer


class Payload:
    """Unpickling this object creates ``marker``: what an attacker's ``os.system`` would do, made visible."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').close()",))


def acrobot_run(tmp_path, updates=2):
    """A short PPO run on Acrobot (a gymnasium environment: the one whose state was pickled) saved to disk."""
    cfg = make_config("ppo", env="Acrobot-v1", seed=3, total_steps=10**6, num_envs=2, num_steps=16)
    t = Trainer(cfg)
    for _ in range(updates):
        t.step()
    out = tmp_path / "run"
    out.mkdir()
    t.save(out / "checkpoint.pt")
    return t, out


def test_the_payload_works_when_unpickled(tmp_path):
    """The control: without the protection, loading the payload does create the marker (so the tests below
    that find no marker mean something)."""
    marker = tmp_path / "ran"
    pickle.loads(pickle.dumps(Payload(marker)))
    assert marker.exists()
    marker.unlink()
    torch.save({"x": Payload(marker)}, tmp_path / "p.pt")
    torch.load(tmp_path / "p.pt", weights_only=False)
    assert marker.exists()


def crafted(tmp_path, where):
    """A real checkpoint of an Acrobot run with a payload hidden ``where``."""
    t, out = acrobot_run(tmp_path)
    marker = tmp_path / f"ran_{where}"
    state = t.state_dict()
    if where == "top":
        state["extra"] = Payload(marker)
    elif where == "env object":  # the object itself in the environment state
        state["collector"]["env"]["copies"][0][-1]["attrs"]["state"] = Payload(marker)
    else:  # "env pickle": the old format's pickled environments, which GymVecEnv used to unpickle
        state["collector"]["env"] = {"envs": pickle.dumps([Payload(marker)])}
    torch.save(state, out / "checkpoint.pt")
    return out, marker


@pytest.mark.parametrize("where", ["top", "env object", "env pickle"])
def test_a_crafted_checkpoint_runs_nothing_and_is_one_line(tmp_path, capsys, where):
    out, marker = crafted(tmp_path, where)
    with pytest.raises(ValueError) as e:
        Trainer.load(out / "checkpoint.pt")
    assert "\n" not in str(e.value) and not marker.exists()
    assert main(["train", "--out", str(out), "--resume", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    if where == "env pickle":
        assert "not the state of a Acrobot-v1 GymVecEnv" in err
    else:
        assert "not a safe rltutor checkpoint" in err and "exec" in err
    assert not marker.exists()


def test_a_checkpoint_loads_with_weights_only_and_resumes_exactly(tmp_path):
    """The file rltutor writes needs no trust: torch.load(weights_only=True) reads it; and a run resumed
    from it on a gymnasium environment equals the uninterrupted run."""
    cfg = dict(env="Acrobot-v1", seed=3, total_steps=320, num_envs=2, num_steps=16)
    full = Trainer(make_config("ppo", **cfg))
    full.train(progress=False)
    half = Trainer(make_config("ppo", **cfg))
    for _ in range(len(full.history) // 2):
        half.step()
    half.save(tmp_path / "c.pt")
    raw = torch.load(tmp_path / "c.pt", weights_only=True)
    assert raw["format"] == "rltutor-checkpoint-v2"
    resumed = Trainer.load(tmp_path / "c.pt")
    resumed.train(progress=False)
    pd.testing.assert_frame_equal(
        resumed.history_frame().drop(columns="time_s"), full.history_frame().drop(columns="time_s")
    )
    for p, q in zip(resumed.policy.parameters(), full.policy.parameters(), strict=True):
        assert torch.equal(p, q)


def test_numpy_state_comes_back_as_numpy_with_its_dtype(tmp_path):
    import numpy as np

    from rltutor.train import _from_plain, _to_plain

    state = {
        "a": np.arange(3, dtype=np.uint32),
        "b": (np.float64(0.5), [np.zeros((2, 2), dtype=bool)]),
        "c": np.random.get_state(),
        "d": np.array(5.0),  # a 0-d array stays one
    }
    torch.save(_to_plain(state), tmp_path / "s.pt")
    back = _from_plain(torch.load(tmp_path / "s.pt", weights_only=True))
    assert back["a"].dtype == np.uint32 and back["a"].tolist() == [0, 1, 2]
    assert type(back["b"][0]) is np.float64 and back["b"][1][0].dtype == bool
    assert back["d"].shape == () and isinstance(back["d"], np.ndarray)
    np.random.set_state(back["c"])  # a usable numpy RNG state again
    with pytest.raises(ValueError, match="numeric numpy arrays only"):
        _to_plain({"x": np.array(["a"], dtype=object)})


@pytest.mark.parametrize("env_id", ["Acrobot-v1", "MountainCar-v0"])
def test_a_gymnasium_environment_continues_exactly_from_a_weights_only_file(tmp_path, env_id):
    """The classic-control physics (Acrobot's array, MountainCar's tuple of floats), the time limit's step
    count and the generator travel as plain data through a file into a fresh environment."""
    import numpy as np

    from rltutor.envs import make_env
    from rltutor.train import _from_plain, _to_plain

    env = make_env(env_id, num_envs=3, seed=0)
    rng = np.random.default_rng(1)
    for _ in range(250):  # past a reset for the 200-step MountainCar
        env.step(rng.integers(0, env.n_actions, 3))
    torch.save(_to_plain(env.state_dict()), tmp_path / "env.pt")
    actions = rng.integers(0, env.n_actions, (300, 3))
    want = [env.step(a) for a in actions]
    fresh = make_env(env_id, num_envs=3, seed=99)
    fresh.load_state_dict(_from_plain(torch.load(tmp_path / "env.pt", weights_only=True)))
    got = [fresh.step(a) for a in actions]
    for w, g in zip(want, got, strict=True):
        for x, y in zip(w, g, strict=True):
            np.testing.assert_array_equal(x, y)
    with pytest.raises(ValueError, match="holds 3 copies, expected 2"):
        make_env(env_id, num_envs=2, seed=0).load_state_dict(env.state_dict())
