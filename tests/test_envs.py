"""Environments: the numpy CartPole equals gymnasium's, the corridor's optimum is exact, names are checked."""

import gymnasium as gym
import numpy as np
import pytest

from rltutor.envs import Corridor, list_envs, make_env


def test_numpy_cartpole_matches_gymnasium_step_by_step():
    ours = make_env("CartPole-v1", num_envs=1, seed=0)
    ref = gym.make("CartPole-v1")
    ref.reset(seed=0)
    ours.reset()
    ref.unwrapped.state = ours.state[:, 0].copy()  # same start, then the same actions
    rng = np.random.default_rng(0)
    for _ in range(200):
        a = int(rng.integers(2))
        obs, r, term, trunc, final_obs = ours.step(np.array([a]))
        o_ref, r_ref, term_ref, trunc_ref, _ = ref.step(a)
        np.testing.assert_allclose(final_obs[0], o_ref, rtol=1e-6, atol=1e-6)
        assert r[0] == r_ref and term[0] == term_ref and trunc[0] == trunc_ref
        if term_ref or trunc_ref:
            ref.reset()
            ref.unwrapped.state = ours.state[:, 0].copy()
            np.testing.assert_allclose(obs[0], ours.state[:, 0].astype(np.float32))


def test_cartpole_truncates_at_the_time_limit_not_terminates():
    env = make_env("CartPole-v1", num_envs=2, seed=0, max_episode_steps=5)
    env.reset()
    env.state[:] = 0.0  # balanced at rest: nothing can fall within 5 steps of alternating pushes
    for t in range(5):
        obs, r, term, trunc, final_obs = env.step(np.array([t % 2, t % 2]))
    assert not term.any() and trunc.all()
    assert np.abs(obs).max() <= 0.05  # reset in the same step
    assert not np.allclose(final_obs, obs)


def test_same_reset_seed_gives_the_same_start():
    env = make_env("CartPole-v1", num_envs=4, seed=0)
    obs = env.reset([7, 7, 8, 8])
    np.testing.assert_array_equal(obs[0], obs[1])
    assert not np.array_equal(obs[1], obs[2])


@pytest.mark.parametrize("T", [1, 5, 50, 300])
def test_corridor_oracle_earns_exactly_the_optimal_return(T):
    env = Corridor(num_envs=3, horizon=T, seed=1)
    obs = env.reset()
    total = np.zeros(3)
    for t in range(T):
        a = (obs[:, 0] > 0).astype(np.int64)  # follow the cue
        obs, r, term, trunc, _ = env.step(a)
        total += r
        assert term.all() == (t == T - 1)  # exactly T steps, no early end
        assert not trunc.any()
    np.testing.assert_allclose(total, env.optimal_return)


def test_corridor_random_policy_scores_about_half_and_reward_is_delayed():
    env = Corridor(num_envs=2000, horizon=20, seed=0)
    env.reset()
    rng = np.random.default_rng(0)
    for t in range(20):
        _, r, term, _, _ = env.step(rng.integers(0, 2, size=2000))
        if t < 19:
            assert (r == 0).all()  # nothing before the last step
    assert abs(r.mean() - 0.5) < 0.02


def test_corridor_observation_of_progress_and_noise():
    assert Corridor(1, horizon=4, observe_progress=True).obs_dim == 3
    hidden = Corridor(1, horizon=4, observe_progress=False)
    assert hidden.obs_dim == 2 and hidden.reset().shape == (1, 2)
    noisy = Corridor(500, horizon=3, reward_noise=1.0, seed=0)
    obs = noisy.reset()
    for _ in range(3):
        obs, r, *_ = noisy.step((obs[:, 0] > 0).astype(np.int64))
    assert 0.8 < r.std() < 1.2 and abs(r.mean() - 1.0) < 0.15


def test_corridor_same_seed_same_cues_and_state_roundtrip():
    env = Corridor(num_envs=3, horizon=10, seed=0)
    env.reset([5, 5, 6])
    np.testing.assert_array_equal(env.cues[0], env.cues[1])
    assert not np.array_equal(env.cues[0], env.cues[2])
    env.step(np.array([1, 0, 1]))
    state = env.state_dict()
    a = [env.step(np.array([1, 1, 1]))[0] for _ in range(12)]
    env.load_state_dict(state)
    b = [env.step(np.array([1, 1, 1]))[0] for _ in range(12)]
    np.testing.assert_array_equal(np.stack(a), np.stack(b))


def test_acrobot_through_gymnasium_vectorized():
    env = make_env("Acrobot-v1", num_envs=2, seed=0)
    assert env.obs_dim == 6 and env.n_actions == 3
    state = env.state_dict()
    first = env.step(np.array([0, 2]))[0]
    env.load_state_dict(state)
    np.testing.assert_array_equal(env.step(np.array([0, 2]))[0], first)


def test_unknown_env_and_bad_options_raise_with_the_valid_names():
    with pytest.raises(ValueError, match="CartPole-v1.*corridor|corridor.*CartPole-v1"):
        make_env("CartPole-v0")
    assert {"CartPole-v1", "Acrobot-v1", "corridor"} <= set(list_envs())
    with pytest.raises(ValueError, match="horizon"):
        make_env("corridor", horizon=0)
    with pytest.raises(ValueError, match="no options"):
        make_env("CartPole-v1", horizon=10)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"horizon": 10**20}, "horizon <= 100,000"),
        ({"horizon": True}, "horizon must be an integer"),
        ({"reward_noise": float("inf")}, "reward_noise must be finite"),
        ({"reward_noise": float("nan")}, "reward_noise must be finite"),
        ({"reward_noise": -0.5}, r"reward_noise must lie in \[0, inf\)"),
        ({"reward_noise": "0.1"}, "reward_noise must be a number"),
    ],
)
def test_corridor_refuses_settings_it_cannot_run_in_one_line(kwargs, words):
    """A horizon of 1e20 asked numpy for an impossible array and an infinite noise std stopped training
    later with a FloatingPointError; both are refused when the corridor is built, naming the setting."""
    from rltutor.envs.corridor import Corridor

    with pytest.raises(ValueError, match=words) as e:
        Corridor(2, **kwargs)
    assert "\n" not in str(e.value)
