"""The ``"forks"`` task family: a long hop chain with one-way forks, where a few calls decide the episode.

Chapter 11 (credit under compaction). A ``"chain"`` task has one decisive call, the final ``submit``; every
``cat`` before it is forced. Here the chain of ``hops`` files holds ``forks`` *one-way forks*: a fork file
imports two names, the live one (the next file of the chain) and a dead one from ``tmp/``::

    \"\"\"The kappa module of nimbus.\"\"\"
    from lib.beta import LIMIT
    from tmp.kappa import RATE
    TARGET = LIMIT
    ...

The first branch whose content a call shows takes the fork, for good (a lock, like a migration that cannot
be rolled back):

* the live branch (the next file's defining line is visible, e.g. ``LIMIT = SCALE``): the dead-end file is
  replaced by :data:`NOTICE`;
* the dead branch (the dead-end file's line ``RATE = 377`` is visible): every later file of the live chain is
  replaced by the notice, so no later call can reach the answer: the episode is *doomed*. The dead end offers
  a plausible wrong number (imported, as the answer is) to submit.

A call that shows both at once (``grep -rn " = " .``, were it not cut) takes the dead branch. The hidden test
holds no answer and the grader does not answer for this family, so no shortcut reaches it either.

Forks sit at evenly spread files: ``forks = max(1, min(3, (hops - 1) // 4))`` at file indices
``round(j * (hops - 1) / forks)``; with ``hops=14`` at files 0, 4 and 9, so the decisive calls are the 3rd,
7th and 12th of the honest 16 (``cat README.md``, 14 ``cat``, ``submit``). Every other call is forced or a
detour: with a turn budget to spare (the registered setting: 24 for 16) it decides nothing.
"""

from __future__ import annotations

import random

from rltutor.envs.toolshell.fs import FileSystem

__all__ = [
    "NOTICE",
    "LEGACY_DIR",
    "FORKS_ENV",
    "FORKS_BUDGETS",
    "fork_count",
    "fork_positions",
    "fork_files",
    "ForkLocks",
]

LEGACY_DIR = "tmp"
"""The directory of the dead ends (the word is the only cue the template agent's features can see; every word
of this family is in the toolshell vocabulary, :mod:`.vocab`, so compacted contexts decode without ``<unk>``)."""
FORKS_ENV = {"kind": "forks", "hops": 14, "max_turns": 24, "max_output_chars": 400}
"""The registered setting (``--tasks forks``, :data:`rltutor.config.TEMPLATE_TASKS`): an honest solve takes
16 calls of a budget of 24, three one-way forks at its 3rd, 7th and 12th call."""
FORKS_BUDGETS = {1: 4096, 4: 600, 16: 144}
"""K -> the context budget (tokens, ``"summary"`` compaction, the template agent's context) under which an
honest solve of :data:`FORKS_ENV` is K sub-trajectories (tests/test_hopchain.py checks it); an episode that
ends sooner (a dead end's wrong submit) or wanders longer has fewer or more, so K is uneven within a group."""


def fork_count(hops: int) -> int:
    """The number of forks of a chain of ``hops`` files: 1 for hops <= 8, 2 for 9-12, 3 from 13."""
    return max(1, min(3, (hops - 1) // 4))


def fork_positions(hops: int) -> list[int]:
    """The indices of the fork files in the chain (each points to file i + 1 and to a dead end)."""
    if hops < 2:
        raise ValueError(f"a forks task needs hops >= 2 (a fork points to a next file), got {hops}; pass hops=14")
    F = fork_count(hops)
    return sorted({round(j * (hops - 1) / F) for j in range(F)})


def fork_files(rng: random.Random, project: str, mods, names, value: int, constants, modules) -> tuple:
    """The chain's files with forks: ``(files, forks)``, ``files`` relative paths to text, ``forks`` per fork
    a dict (``at`` the fork file, ``live`` the next file, ``live_line`` its defining line, ``dead`` the dead
    end, ``dead_line`` its line, ``later`` the live files after the fork). ``mods`` (dir, module) per hop,
    ``names`` the constant each hop defines (``names[0]`` = TARGET, all distinct), ``value`` the answer."""
    hops = len(mods)
    paths = [f"{d}/{m}.py" for d, m in mods]
    at = fork_positions(hops)
    bodies = []
    for i in range(hops):
        if i + 1 < hops:
            nd, nm = mods[i + 1]
            bodies.append([f"from {nd}.{nm} import {names[i + 1]}", f"{names[i]} = {names[i + 1]}"])
        else:
            bodies.append([f"{names[i]} = {value}"])
    files, forks = {}, []
    used_dead = set()
    spare = rng.sample([c for c in constants if c not in names], len(at))  # the dead ends' names
    for i in at:
        dead_mod = rng.choice([m for m in modules if m not in used_dead])
        used_dead.add(dead_mod)
        dead_name = spare.pop()
        wrong = rng.choice([v for v in range(100, 1000) if v != value])
        dead = f"{LEGACY_DIR}/{dead_mod}.py"
        files[dead] = f'"""The {dead_mod} module of {project}."""\n{dead_name} = {wrong}\n'
        imports = [bodies[i][0], f"from {LEGACY_DIR}.{dead_mod} import {dead_name}"]
        rng.shuffle(imports)  # the live import first or second: the order is no cue
        bodies[i] = [*imports, bodies[i][1]]
        forks.append({"at": paths[i], "live": paths[i + 1], "dead": dead, "dead_line": f"{dead_name} = {wrong}"})
    for f, i in zip(forks, at, strict=True):
        f["live_line"] = bodies[i + 1][-1]  # the next file's defining line (last in its body)
        f["later"] = paths[i + 1 :]
    for i, (path, (_d, m)) in enumerate(zip(paths, mods, strict=True)):
        taken = {*names, *(f["dead_line"].split(" = ")[0] for f in forks)}
        extra = [f"{n} = {rng.randint(1, 99)}" for n in rng.sample([c for c in constants if c not in taken], 1)]
        files[path] = f'"""The {m} module of {project}."""\n' + "\n".join([*bodies[i], *extra]) + "\n"
    return files, forks


NOTICE = "# this module is not available\n"
"""What a file removed by a taken fork reads."""


class ForkLocks:
    """The state of a forks task's one-way forks: per fork ``None`` (open), ``"live"`` or ``"dead"``.

    ``update(visible_text, fs) -> fs``: resolve the open forks that ``visible_text`` (what a call showed)
    takes, and return the file system with the removed files replaced by a notice (``fs`` itself when
    nothing changed). ``doomed``: some fork was taken dead."""

    def __init__(self, forks: list[dict], taken: list | None = None):
        self.forks = forks
        self.taken = list(taken) if taken is not None else [None] * len(forks)

    @property
    def doomed(self) -> bool:
        return "dead" in self.taken

    def _shows(self, text: str, line: str) -> bool:
        # the line as cat prints it, or after a grep prefix ("path:" or "path:N:")
        return any(s == line or s.endswith(":" + line) for s in text.split("\n"))

    def update(self, text: str, fs: FileSystem) -> FileSystem:
        changed = False
        for j, f in enumerate(self.forks):
            if self.taken[j] is not None:
                continue
            if self._shows(text, f["dead_line"]):
                self.taken[j] = "dead"
            elif self._shows(text, f["live_line"]):
                self.taken[j] = "live"
            else:
                continue
            changed = True
        return self.files(fs) if changed else fs

    def files(self, fs: FileSystem) -> FileSystem:
        """``fs`` with every file the taken forks removed replaced by a notice."""
        files = dict(fs.files)
        for f, t in zip(self.forks, self.taken, strict=True):
            if t == "live":
                files["/" + f["dead"]] = NOTICE
            elif t == "dead":
                for p in f["later"]:
                    files["/" + p] = NOTICE
        return FileSystem(files)
