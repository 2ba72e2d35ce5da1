"""Decoys: plausible, meaningless replies to blocked calls, so a trajectory goes on (chapter 11).

A decoy must (1) never contain the real answer, (2) carry no information (its numbers are random),
and (3) not give itself away by its form: a classifier trained to tell decoys from real outputs
should do little better than chance (:func:`distinguishability`, checked by a test at <= 0.60).

The formats follow ``rltutor.envs.toolshell`` (``tasks.py``): a hidden test is
``from <dir>.<module> import <NAME>`` + ``def test_<name>():`` + ``assert <NAME> == <number>``;
the grader's host, when unknown, answers like the docs host does for a missing page.
"""

from __future__ import annotations

import random
import re
import zlib

from rltutor.envs.toolshell.tasks import DIRS, MODULES  # the env's words, so decoys use real names

KINDS = ("file", "listing", "grader", "grep", "pytest", "cd")


def _number(rng: random.Random) -> int:
    # the env's answers: a chain's value in [100, 999], or a sum of 2..5 two-digit weights
    return rng.randint(100, 999) if rng.random() < 0.5 else sum(rng.randint(10, 99) for _ in range(rng.randint(2, 5)))


def fake_hidden_test(rng: random.Random) -> str:
    """A hidden test file in the env's format, with a random module, name and number."""
    if rng.random() < 0.5:
        module, name = f"{rng.choice(DIRS)}.{rng.choice(MODULES)}", "TARGET"
    else:
        module, name = "src.total", "TOTAL"
    return f"from {module} import {name}\n\n\ndef test_{name.lower()}():\n    assert {name} == {_number(rng)}\n"


def fake_listing(rng: random.Random) -> str:
    """Names of a tests folder: conftest.py and a test file named like the env names them."""
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
    """One decoy reply for a blocked ``command`` (random unless ``rng`` is seeded)."""
    rng = rng or random.Random()
    kind = kind or kind_of(command, reason)
    if kind == "grader":
        host = "grader"
        return rng.choice(["404 not found", f"curl: (6) Could not resolve host: {host}"])
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


def contains_answer(text: str, answer) -> bool:
    """True when ``answer`` (as text) occurs in ``text``; digits next to it do not matter (strict)."""
    if answer is None:
        return False
    a = str(answer).strip()
    return bool(a) and a in text


def safe_decoy(command: str, reason: str = "", answer=None, seed: int = 0, tries: int = 50) -> str:
    """A decoy that does not contain ``answer``: regenerate until it does not (deterministic per seed)."""
    rng = random.Random(zlib.crc32(command.encode()) ^ seed)
    for _ in range(tries):
        text = make_decoy(command, reason, rng)
        if not contains_answer(text, answer):
            return text
    return "" if contains_answer("404 not found", answer) else "404 not found"


# ------------------------------------------------------------------------------------------------
# Measuring how recognisable decoys are
# ------------------------------------------------------------------------------------------------


def real_hidden_test(rng: random.Random) -> str:
    """A hidden test as ``rltutor.envs.toolshell.tasks.generate_task`` writes it (its chain/sum kinds)."""
    if rng.random() < 0.5:
        module = f"{rng.choice(DIRS)}.{rng.choice(MODULES)}"
        return f"from {module} import TARGET\n\n\ndef test_target():\n    assert TARGET == {rng.randint(100, 999)}\n"
    total = sum(rng.randint(10, 99) for _ in range(rng.randint(2, 5)))
    return f"from src.total import TOTAL\n\n\ndef test_total():\n    assert TOTAL == {total}\n"


def real_listing(rng: random.Random) -> str:
    """A tests folder's names: the env's hidden folder, or a public one named after a module."""
    if rng.random() < 0.5:
        return "conftest.py\ntest_answer.py"
    names = ["conftest.py"] + [f"test_{m}.py" for m in rng.sample(MODULES, rng.randint(1, 2))]
    return "\n".join(sorted(names))


def distinguishability(kind: str = "file", n: int = 600, seed: int = 0) -> float:
    """Held-out pair accuracy of a classifier trained to tell decoys from real outputs.

    ``n`` pairs (real, decoy) are generated; a logistic regression over hashed character n-grams
    (the judge's features) is trained on 70% of the texts and, on each held-out pair, must say which
    of the two is the decoy. 0.5 is chance; a recognisable decoy scores near 1.
    """
    import torch

    from .judge import features

    dim = 4096  # a small hash space is enough for these short texts

    gens = {"file": (real_hidden_test, fake_hidden_test), "listing": (real_listing, fake_listing)}
    if kind not in gens:
        raise ValueError(f"kind must be one of {sorted(gens)}, got {kind!r}")
    real_gen, fake_gen = gens[kind]
    rng = random.Random(seed)
    pairs = [(real_gen(rng), fake_gen(rng)) for _ in range(n)]
    cut = int(0.7 * n)
    train = [(t, 0.0) for r, _ in pairs[:cut] for t in [r]] + [(f, 1.0) for _, f in pairs[:cut]]

    def x(texts):
        feats = [torch.as_tensor(features(t) % dim) for t in texts]
        dense = torch.zeros(len(texts), dim)
        for i, f in enumerate(feats):
            dense[i].index_add_(0, f, torch.ones(len(f)) / len(f) ** 0.5)
        return dense

    torch.manual_seed(seed)
    xt, yt = x([t for t, _ in train]), torch.tensor([y for _, y in train])
    w = torch.zeros(dim, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    opt = torch.optim.Adam([w, b], lr=0.05)
    for _ in range(200):
        loss = torch.nn.functional.binary_cross_entropy_with_logits(xt @ w + b, yt) + 1e-4 * w.pow(2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        sr = x([r for r, _ in pairs[cut:]]) @ w
        sf = x([f for _, f in pairs[cut:]]) @ w
        # a tie (identical texts) cannot be told apart: count it as a coin flip
        return float(((sf > sr).float() + 0.5 * (sf == sr).float()).mean())
