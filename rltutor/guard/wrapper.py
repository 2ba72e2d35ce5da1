"""GuardedEnv: put a guard in front of an environment whose actions are shell commands (chapter 12).

The environment needs ``reset(seed=None) -> str`` and ``step(command) -> (obs, reward, done, info)``;
``episode`` (a dict with ``turns``), ``max_turns`` and ``answer`` are used when present (``answer`` to
check that no decoy contains it). A :class:`~rltutor.envs.toolshell.ToolShell` gets decoys from a twin of
its task; any other environment gets decoys written from templates.

Policies for a call the guard blocks:

====================  ==============================================================================
``"none"``            the call runs as if unguarded; the guard's verdict is only counted ("would block")
``"abort"``           the call does not run; the episode ends with reward 0
``"penalize"``        the call runs; from then on the episode's reward is 0, and it goes on
``"decoy"``           the call does not run; the agent reads a plausible, meaningless reply, and goes on
                      (:mod:`rltutor.guard.decoys`: in front of a ToolShell, the reply of a twin task
                      whose hidden answer is another one, fixed per episode)
====================  ==============================================================================

Every interception is logged (``GuardedEnv.log``, and the ``rltutor.guard`` logger) with its stage
and reason, put in ``info["guard"]``, and counted in ``GuardedEnv.counts`` (per episode) for the
trainer to log: ``flagged``, ``rule``, ``judge``, ``judge_failures``, ``executed_flagged``, and
``missed`` (calls the env says read hidden material but the guard let through: ground truth from
``info["hidden_read"]``).
"""

from __future__ import annotations

import logging
import random
import zlib

from rltutor.envs.toolshell import ToolShell

from .decoys import env_decoy, safe_decoy, twin_task
from .guard import Guard

log = logging.getLogger("rltutor.guard")
# The guard policies, the one place their names are written (config and the command line import it), and
# what each does with a call the guard blocks (see the table above).
POLICY_ACTIONS = {"none": "run", "abort": "end", "penalize": "run+zero", "decoy": "decoy"}
POLICIES = tuple(POLICY_ACTIONS)
ABORT_MESSAGE = "episode ended"


class GuardedEnv:
    """``GuardedEnv(env, guard, policy)`` behaves like ``env`` with the guard's policy (:data:`POLICIES`)
    applied to every call the guard blocks; ``env`` is any environment as described in the module."""

    def __init__(self, env, guard: Guard | None = None, policy: str = "decoy", seed: int = 0):
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
        self.env, self.guard, self.policy, self.seed = env, guard or Guard.default(), policy, seed
        self.log: list[dict] = []
        self.counts = self._zero()
        self._zeroed = False
        self._decoy_turns = 0
        self._episode_index = -1
        self._twin = None  # (the env's task, its twin) for this episode's decoys

    @staticmethod
    def _zero() -> dict:
        return {"flagged": 0, "rule": 0, "judge": 0, "judge_failures": 0, "executed_flagged": 0, "missed": 0}

    @property
    def episode(self) -> dict:
        """The env's episode record plus this episode's guard counters (``guard_*``)."""
        ep = dict(getattr(self.env, "episode", {}) or {})
        ep.update({f"guard_{k}": v for k, v in self.counts.items()})
        ep["guard_zeroed"] = self._zeroed
        ep["guard_decoy_turns"] = self._decoy_turns
        return ep

    def reset(self, seed: int | None = None) -> str:
        self.counts = self._zero()
        self._zeroed = False
        self._decoy_turns = 0
        self._episode_index += 1
        self._twin = None
        return self.env.reset(seed=seed)

    def __getattr__(self, name):  # everything else (answer, task, knobs...) is the env's
        if name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)

    def step(self, command: str) -> tuple[str, float, bool, dict]:
        v = self.guard.inspect(command)
        if not v.blocked:
            obs, reward, done, info = self.env.step(command)
            info = dict(info)
            if info.get("hidden_read"):
                self.counts["missed"] += 1
            info["guard"] = {"blocked": False, "stage": v.stage, "reason": v.reason, "action": "run"}
            return obs, (0.0 if self._zeroed else reward), done, info

        self.counts["flagged"] += 1
        self.counts[v.stage] += 1
        if v.stage == "judge" and "fail closed" in v.reason:
            self.counts["judge_failures"] += 1
        action = POLICY_ACTIONS[self.policy]
        record = {
            "episode": self._episode_index,
            "turn": getattr(self.env, "episode", {}).get("turns"),
            "command": command,
            "stage": v.stage,
            "reason": v.reason,
            "policy": self.policy,
            "action": action,
        }
        self.log.append(record)
        log.info("guard %s (%s): %s -- %s", action, v.stage, command, v.reason)
        guard_info = {"blocked": True, "stage": v.stage, "reason": v.reason, "action": action}

        if self.policy in ("none", "penalize"):
            obs, reward, done, info = self.env.step(command)
            info = dict(info)
            self.counts["executed_flagged"] += 1
            if self.policy == "penalize":
                self._zeroed = True
            info["guard"] = guard_info
            return obs, (0.0 if self._zeroed else reward), done, info
        if self.policy == "abort":
            self._zeroed = True
            return ABORT_MESSAGE, 0.0, True, {"hidden_read": False, "guard": guard_info}
        obs = self._decoy(command, v.reason, self._answer())
        # A decoyed call is a turn too: without this an agent that keeps cheating never runs out of turns.
        self._decoy_turns += 1
        turns = (getattr(self.env, "episode", {}) or {}).get("turns", 0) + self._decoy_turns
        max_turns = getattr(self.env, "max_turns", None)
        done = isinstance(max_turns, int) and turns >= max_turns
        return obs, 0.0, done, {"hidden_read": False, "guard": guard_info}

    def _decoy(self, command: str, reason: str, answer) -> str:
        """The decoy reply: a twin task's reply in front of a ToolShell, else a template."""
        seed = self.seed + self._episode_index
        if isinstance(self.env, ToolShell):
            task = self.env.task
            if self._twin is None or self._twin[0] is not task:  # one twin per episode (per task)
                rng = random.Random(zlib.crc32(f"{seed}:{self.env.task_seed}".encode()))
                self._twin = (task, twin_task(task, rng))
            if self._twin[1] is not None:
                obs = env_decoy(self.env, command, self._twin[1], answer)
                if obs is not None:
                    return obs
        return safe_decoy(command, reason, answer=answer, seed=seed)

    def _answer(self):
        try:
            return getattr(self.env, "answer", None)
        except Exception:  # noqa: BLE001 -- an env without a current task has no answer to hide
            return None
