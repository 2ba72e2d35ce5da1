"""Environments by name: classic control, the corridor, and the token tasks of the LM chapters.

A registry, not an if-chain: :func:`make_env` looks a name up in :data:`ENVS`, and a reader adds an
environment in one place with :func:`register_env`. Each entry is a function
``make(num_envs, seed, **options) -> env``. For the environments registered here ``env`` is a
vectorized numpy environment (the ``VecEnv`` interface described in :mod:`rltutor.envs.classic`),
or, for a token task, a :class:`~rltutor.envs.tokens.TokenTask`; :func:`rltutor.build.build` gives
each the policy and collector it needs. Environments are tasks only: they import no model, collector
or trainer.

    env = make_env("CartPole-v1", num_envs=8, seed=0)
    env = make_env("corridor", num_envs=16, seed=0, horizon=200, observe_progress=False)
"""

from __future__ import annotations

from collections.abc import Callable

from rltutor.envs.classic import CartPole, GymVecEnv
from rltutor.envs.corridor import Corridor
from rltutor.envs.tokens import TASKS, make_task
from rltutor.envs.toolshell import ToolShell
from rltutor.utils import check_choice, register_in

__all__ = ["ENVS", "register_env", "list_envs", "make_env", "CartPole", "GymVecEnv", "Corridor"]

ENVS: dict[str, Callable] = {}
"""The registry of environments by name (:func:`register_env` adds one)."""


def register_env(name: str) -> Callable[[Callable], Callable]:
    """Decorator: register ``make(num_envs, seed, **options)`` under ``name``."""
    return register_in(ENVS, name, "environment")


def list_envs() -> list[str]:
    return sorted(ENVS)


def make_env(name: str, num_envs: int = 1, seed: int = 0, **options):
    """Build ``num_envs`` copies of the environment registered as ``name``."""
    check_choice("environment", name, ENVS)
    return ENVS[name](num_envs=num_envs, seed=seed, **options)


def _no_options(name: str, options: dict) -> None:
    if options:
        raise ValueError(
            f"{name} takes no options, got {sorted(options)}; options such as horizon belong to the corridor"
        )


@register_env("CartPole-v1")
def _cartpole(num_envs: int, seed: int, max_episode_steps: int = 500, **options):
    _no_options("CartPole-v1", options)
    return CartPole(num_envs, max_episode_steps=max_episode_steps, seed=seed)


@register_env("Acrobot-v1")
def _acrobot(num_envs: int, seed: int, **options):
    _no_options("Acrobot-v1", options)
    return GymVecEnv("Acrobot-v1", num_envs, seed=seed)


@register_env("MountainCar-v0")
def _mountaincar(num_envs: int, seed: int, **options):
    _no_options("MountainCar-v0", options)
    return GymVecEnv("MountainCar-v0", num_envs, seed=seed)


@register_env("corridor")
def _corridor(num_envs: int, seed: int, horizon: int = 50, observe_progress: bool = True, reward_noise: float = 0.0):
    return Corridor(num_envs, horizon=horizon, observe_progress=observe_progress, reward_noise=reward_noise, seed=seed)


# Token tasks (chapters 06-10): the entry returns the task itself (a TokenTask: prompts and a
# verifiable reward); rltutor.build gives it a warm-started TinyGPT policy and a collector. num_envs is
# unused (config.num_groups x group_size set the batch). Options: the task's own (L, reward,
# max_operand, max_new_tokens); the model's settings are fields of rltutor.config.Config.
def _token_task(name: str) -> Callable:
    def make(num_envs: int, seed: int, **options):
        import inspect

        valid = set(inspect.signature(TASKS[name]).parameters)
        unknown = sorted(set(options) - valid)
        if unknown:
            raise ValueError(
                f"unknown option(s) {unknown} for token task {name!r}; valid: {', '.join(sorted(valid))}"
                " (model settings such as n_embd or sft_steps are Config fields: --set n_embd=128)"
            )
        return make_task(name, **options)

    return make


for _name in TASKS:
    register_env(_name)(_token_task(_name))


# ToolShell (chapters 6-7): the entry returns one ToolShell, the template of its task settings (hops,
# max_turns, kind, hints...); rltutor.build gives it a TinyGPT policy and a multi-turn collector, which
# builds its own copies (num_envs is unused: config.num_groups x group_size set the batch).
@register_env("toolshell")
def _toolshell(num_envs: int, seed: int, **options):
    return ToolShell(seed=seed, **{"max_output_chars": 250, **options})
