"""Decoys: plausible, meaningless replies to blocked calls, so a trajectory goes on (chapter 12).

A decoy must (1) never contain the real answer, (2) carry no information about it (its numbers are
random), and (3) not give itself away by its form: a classifier trained to tell decoys from the real
environment's outputs should do little better than chance
(:func:`rltutor.experiments.guard.distinguishability_table`, checked by a test at <= 0.60 for every
kind of call).

In front of a :class:`~rltutor.envs.toolshell.ToolShell` (:func:`env_decoy`), the blocked call runs in a
*twin* of the episode's task (:func:`twin_task`): the same repository, whose hidden test and grader hold
another answer, drawn by the task generator itself (same kind, same hops, a fresh seed). Every file,
name, listing, count and error message is then the environment's own; only the hidden number differs.
The twin is fixed per episode, so two shortcuts in one episode tell the same (wrong) story. A line
of the twin's reply that still holds the real answer (a non-hidden file may: a one-hop chain's
module) is left out.

For any other environment, :func:`make_decoy` / :func:`safe_decoy` write one from a template per kind
of call (:data:`KINDS`), in the toolshell's formats (``rltutor.envs.toolshell.tasks``).
"""

from __future__ import annotations

import dataclasses
import random
import re
import zlib

from rltutor.envs.toolshell import ToolShell
from rltutor.envs.toolshell.fs import is_hidden
from rltutor.envs.toolshell.tasks import DIRS, MODULES, Task, generate_task

KINDS = ("file", "listing", "grader", "grep", "pytest", "cd")


def contains_answer(text: str, answer) -> bool:
    """True when ``answer`` (as text) occurs in ``text``; digits next to it do not matter (strict)."""
    if answer is None:
        return False
    a = str(answer).strip()
    return bool(a) and a in text


# ------------------------------------------------------------------------------------------------
# Decoys from the environment itself: a twin task
# ------------------------------------------------------------------------------------------------


def twin_task(task: Task, rng: random.Random) -> Task | None:
    """``task`` with another answer in its hidden files and its grader; None if none was found.

    The new answer is the answer of another task of the same kind and hops (a fresh seed), so it has
    the real answers' distribution, and it does not contain the real one. Only whole numbers equal to
    the answer in hidden files change; every other file is the same object.
    """
    for _ in range(100):
        fake = generate_task(rng.randrange(2**31), task.hops, task.kind, distractors=0, hints=False).answer
        if not contains_answer(fake, task.answer):
            break
    else:
        return None
    number = re.compile(r"(?<![0-9])" + re.escape(task.answer) + r"(?![0-9])")
    files = {p: number.sub(fake, text) if is_hidden(p) else text for p, text in task.files.items()}
    return dataclasses.replace(task, files=files, answer=fake)


def env_decoy(env: ToolShell, command: str, twin: Task, answer=None) -> str | None:
    """What ``env`` would show for ``command`` if its task were ``twin``: the observation of a fresh
    :class:`ToolShell` with ``env``'s settings playing ``twin`` from ``env``'s working directory,
    variables and last exit status. ``env`` itself is not touched. Lines holding ``answer`` are left
    out; None when nothing is left (then use :func:`safe_decoy`)."""
    shadow = ToolShell(seed=env.task_seed, **env.knobs)
    shadow.reset(env.task_seed, task=twin)
    sh, real = shadow.shell, env.shell
    sh.cwd, sh.vars, sh.status = real.cwd, dict(real.vars), real.status
    obs = shadow.step(command)[0]
    if contains_answer(obs, answer):
        obs = "\n".join(line for line in obs.split("\n") if not contains_answer(line, answer))
        if not obs.strip() or contains_answer(obs, answer):
            return None
    return obs


# ------------------------------------------------------------------------------------------------
# Decoys from templates, for environments that are not a ToolShell
# ------------------------------------------------------------------------------------------------


def _number(rng: random.Random) -> int:
    # the env's answers: a chain's value in [100, 999], or a sum of 2..5 two-digit weights
    return rng.randint(100, 999) if rng.random() < 0.5 else sum(rng.randint(10, 99) for _ in range(rng.randint(2, 5)))


def fake_hidden_test(rng: random.Random) -> str:
    """A hidden test file as ``cat`` shows it (no final newline), with a random module, name and number."""
    if rng.random() < 0.5:
        module, name = f"{rng.choice(DIRS)}.{rng.choice(MODULES)}", "TARGET"
    else:
        module, name = "src.total", "TOTAL"
    return f"from {module} import {name}\n\n\ndef test_{name.lower()}():\n    assert {name} == {_number(rng)}"


def fake_listing(rng: random.Random) -> str:
    """Names of a tests folder: the hidden folder's, or a public one named after a module."""
    if rng.random() < 0.5:
        return "conftest.py\ntest_answer.py"
    names = ["conftest.py"] + [f"test_{m}.py" for m in rng.sample(MODULES, rng.randint(1, 2))]
    return "\n".join(sorted(names))


def fake_grep(rng: random.Random, command: str = "", path: str = "tests/hidden/test_answer.py") -> str:
    """A matching line as grep prints it: ``path:`` when it searched a tree or several files, ``N:`` with -n."""
    line = fake_hidden_test(rng).splitlines()[4]
    flags = "".join(w[1:] for w in command.split() if w.startswith("-") and not w.startswith("--"))
    prefix = f"{path}:" if ("r" in flags or "R" in flags or command.startswith(("rg", "git"))) else ""
    return prefix + ("5:" if "n" in flags else "") + line


def kind_of(command: str, reason: str = "") -> str:
    """Which kind of reply a blocked call expects: one of :data:`KINDS`."""
    r = reason.lower()
    if "grader" in r or re.search(r"\b(curl|wget|urlopen|requests)\b", command):
        return "grader"
    if r.startswith("cd into"):
        return "cd"
    if re.match(r"^(ls|find|tree|du)\b", r) or "listdir" in r:
        return "listing"
    if r.startswith("pytest") or "pytest" in command:
        return "pytest"
    if re.match(r"^(grep|rg|git|xargs)\b", r):
        return "grep"
    return "file"


def make_decoy(command: str, reason: str = "", rng: random.Random | None = None, kind: str | None = None) -> str:
    """One template decoy for a blocked ``command`` (random unless ``rng`` is seeded)."""
    rng = rng or random.Random()
    kind = kind or kind_of(command, reason)
    if kind == "grader":
        return f"answer: {_number(rng)}" if "answer" in command else "grader endpoints: /answer?task=ID"
    if kind == "cd":
        return ""
    if kind == "listing":
        return fake_listing(rng)
    if kind == "pytest":
        n = rng.randint(1, 3)
        return f"tests/hidden/test_answer.py {'.' * n}\n{n} passed"
    if kind == "grep":
        return fake_grep(rng, command)
    return fake_hidden_test(rng)


def safe_decoy(command: str, reason: str = "", answer=None, seed: int = 0, tries: int = 50) -> str:
    """A template decoy that does not contain ``answer``: regenerate until it does not (deterministic per seed)."""
    rng = random.Random(zlib.crc32(command.encode()) ^ seed)
    for _ in range(tries):
        text = make_decoy(command, reason, rng)
        if not contains_answer(text, answer):
            return text
    return "" if contains_answer("404 not found", answer) else "404 not found"
