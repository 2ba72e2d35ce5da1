"""Graders for the book's "implement this" exercises: ``check(name, fn)`` runs a reader's function.

Chapters: *PPO* (02: ``"gae"``, ``"clipped_loss"``), *GRPO* (03: ``"group_advantages"``), *GRPO and PPO on a
language model* (06: ``"sampler"``). A chapter states the signature; the reader writes the function and calls::

    from rltutor import exercises
    result = exercises.check("gae", my_gae)
    result.passed        # True or False
    result.failure       # None, or the first failing case: .case, .inputs, .expected, .got, .hint

Each grader runs its cases in order, from the easiest to the most demanding, and stops at the first that
fails: seeded *reference cases* (small inputs whose expected output is computed here by a short reference
written out from the formula, independently of :mod:`rltutor.advantages` and :mod:`rltutor.losses`;
``tests/test_exercises.py`` checks the package's own functions against them) and *property checks* (what
must hold whatever the inputs: masked positions cannot matter, the clipped branch has no gradient, a
seeded generator reproduces its draws, the sampled frequencies follow the tempered distribution). Every
case also checks that the function leaves its inputs unchanged.

Everything here is plain torch, seeded, and shipped in the package (nothing from ``tests/``, no
hypothesis), so a cell that calls :func:`check` runs the same on Colab from a pip install as in the book.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

__all__ = ["check", "list_exercises", "signature", "Result", "Failure", "EXERCISES"]

RTOL, ATOL = 1e-4, 1e-5  # float32 inputs against a float64 reference


# ----------------------------------------------------------------------------------------------
# Results
# ----------------------------------------------------------------------------------------------


def _fmt(x) -> str:
    """A short, readable rendering of a case's value (small tensors in full, large ones summarized)."""
    if isinstance(x, torch.Tensor):
        t = x.detach().cpu()
        if t.is_floating_point():
            t = t.double()
        if t.numel() <= 48:
            values = t.tolist()
            if t.is_floating_point():
                values = _round(values)
            return f"{values}"
        head = _round(t.flatten()[:6].tolist()) if t.is_floating_point() else t.flatten()[:6].tolist()
        return f"tensor of shape {tuple(t.shape)}, first values {head}"
    if isinstance(x, torch.Generator):
        return f"a torch.Generator seeded with {x.initial_seed()}"
    if isinstance(x, float):
        return f"{x:.6g}"
    return repr(x) if not isinstance(x, str) else x


def _round(values):
    if isinstance(values, list):
        return [_round(v) for v in values]
    return float(f"{values:.4g}") if math.isfinite(values) else values


@dataclass(frozen=True)
class Failure:
    """The first case a function failed: what went in, what was expected, what came out, and a hint."""

    case: str
    """The case's name, e.g. ``"right-padded rows"``."""
    inputs: dict
    """The arguments the function was called with (tensors and numbers)."""
    expected: object
    """The reference output (or the property that should hold)."""
    got: object
    """What the function returned (or what it did instead)."""
    hint: str
    """One line on what this case tests and the usual mistake behind a failure."""

    def __str__(self) -> str:
        lines = [f"failed case: {self.case}"]
        for k, v in self.inputs.items():
            lines.append(f"  input {k} = {_fmt(v)}")
        lines.append(f"  expected: {_fmt(self.expected)}")
        lines.append(f"  got:      {_fmt(self.got)}")
        lines.append(f"  hint: {self.hint}")
        return "\n".join(lines)


@dataclass(frozen=True)
class Result:
    """What :func:`check` found: ``passed``, the number of cases run, and the first ``failure`` (or None)."""

    name: str
    passed: bool
    cases_passed: int
    cases_total: int
    failure: Failure | None = None
    case_names: tuple[str, ...] = field(default=(), repr=False)

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        if self.passed:
            props = sum(n.startswith("property") for n in self.case_names)
            return (
                f"{self.name}: passed all {self.cases_total} cases "
                f"({self.cases_total - props} reference cases, {props} property checks)."
            )
        return (
            f"{self.name}: passed {self.cases_passed} of {self.cases_total} cases, then\n{self.failure}"
            if self.failure is not None
            else f"{self.name}: failed"
        )

    __repr__ = __str__


# ----------------------------------------------------------------------------------------------
# Running a case
# ----------------------------------------------------------------------------------------------


class _Fail(Exception):
    """Raised inside a case to report its failure (caught by :func:`check`)."""

    def __init__(self, expected, got, hint: str, inputs: dict | None = None):
        super().__init__(hint)
        self.expected, self.got, self.hint, self.inputs = expected, got, hint, inputs


def _call(fn, inputs: dict, hint_on_raise: str = ""):
    """``fn(**inputs)`` on copies of the inputs; a raised exception or an in-place edit is a failure."""
    copies = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in inputs.items()}
    try:
        out = fn(**copies)
    except Exception as e:  # the reader's code: any exception is a failed case, reported with its message
        raise _Fail(
            "a result",
            f"raised {type(e).__name__} ({e})",
            hint_on_raise or "the function raised on these inputs; call it on them yourself to see the traceback",
        ) from None
    for k, v in inputs.items():
        if isinstance(v, torch.Tensor) and not torch.equal(copies[k], v):
            raise _Fail(
                f"{k} unchanged",
                f"{k} edited in place",
                "work on new tensors (x = x.clone() or out-of-place operations): a function must not change its inputs",
            )
    return out


def _tensor(out, what: str, shape: tuple, first_of_tuple: bool = True) -> torch.Tensor:
    """The output as a tensor of ``shape`` (a tuple's first element when ``first_of_tuple``)."""
    if first_of_tuple and isinstance(out, tuple | list) and out:
        out = out[0]
    if not isinstance(out, torch.Tensor):
        raise _Fail(f"a torch.Tensor of shape {shape}", f"{type(out).__name__}", f"return {what} as a torch.Tensor")
    if tuple(out.shape) != tuple(shape):
        raise _Fail(f"shape {shape}", f"shape {tuple(out.shape)}", f"{what} must have shape {shape}")
    return out


def _close(got: torch.Tensor, expected: torch.Tensor, hint: str, rtol: float = RTOL, atol: float = ATOL) -> None:
    g = got.detach().double().cpu()
    e = expected.detach().double().cpu()
    if not torch.isfinite(g).all():
        raise _Fail(expected, got, "the output holds NaN or inf: " + hint)
    bad = ~torch.isclose(g, e, rtol=rtol, atol=atol)
    if bad.any():
        where = tuple(int(i) for i in bad.nonzero()[0])
        raise _Fail(expected, got, f"first difference at index {list(where)}: " + hint)


@dataclass(frozen=True)
class _Case:
    name: str
    inputs: Callable[[], dict]  # builds the inputs (seeded), shown in a failure
    run: Callable[[Callable, dict], None]  # raises _Fail


@dataclass(frozen=True)
class _Exercise:
    name: str
    chapter: str
    signature: str
    cases: tuple[_Case, ...]


EXERCISES: dict[str, _Exercise] = {}
"""The graded exercises by name (see :func:`list_exercises`)."""


def _register(name: str, chapter: str, signature_text: str, cases: list[_Case]) -> None:
    note = "\n  The grader calls it with keyword arguments, so keep these parameter names."
    EXERCISES[name] = _Exercise(name, chapter, signature_text + note, tuple(cases))


def list_exercises() -> list[str]:
    """The names :func:`check` accepts, sorted."""
    return sorted(EXERCISES)


def _exercise(name) -> _Exercise:
    if not isinstance(name, str) or name not in EXERCISES:
        raise ValueError(f"no graded exercise named {name!r}; the names are: {', '.join(list_exercises())}")
    return EXERCISES[name]


def signature(name: str) -> str:
    """The signature and contract the chapter asks for, as text."""
    ex = _exercise(name)
    return f"{ex.signature}\n(chapter {ex.chapter})"


def check(name: str, fn: Callable) -> Result:
    """Grade ``fn`` against the exercise ``name`` (one of :func:`list_exercises`).

    Runs the exercise's cases in order and stops at the first failure. Returns a :class:`Result` whose
    ``passed`` says whether every case passed and whose ``failure`` holds the first failing case (its
    inputs, the expected and the actual output, and a one-line hint).

    Raises:
        ValueError: ``name`` is not a graded exercise (the message lists the names), or ``fn`` is not callable.
    """
    ex = _exercise(name)
    if not callable(fn):
        raise ValueError(
            f"fn must be a function, got {type(fn).__name__}; pass the function itself, e.g. check({name!r}, my_fn)"
        )
    names = tuple(c.name for c in ex.cases)
    for i, case in enumerate(ex.cases):
        inputs = case.inputs()
        try:
            case.run(fn, inputs)
        except _Fail as f:
            failure = Failure(case.name, f.inputs if f.inputs is not None else inputs, f.expected, f.got, f.hint)
            return Result(name, False, i, len(ex.cases), failure, names)
    return Result(name, True, len(ex.cases), len(ex.cases), None, names)


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ----------------------------------------------------------------------------------------------
# "gae": generalized advantage estimation (chapter 02)
# ----------------------------------------------------------------------------------------------


def _gae_reference(rewards, values, mask, gamma, lam) -> torch.Tensor:
    """A_t = sum_l (gamma lam)^l delta_{t+l} over the valid steps of each row, written as the sum (not the
    recursion): delta_t = r_t + gamma V(next valid step) - V(s_t), V after the last valid step 0."""
    r, v = rewards.double(), values.double()
    B, T = r.shape
    out = torch.zeros(B, T, dtype=torch.float64)
    for b in range(B):
        steps = [t for t in range(T) if mask[b, t] > 0]
        deltas = []
        for i, t in enumerate(steps):
            nxt = v[b, steps[i + 1]] if i + 1 < len(steps) else 0.0
            deltas.append(r[b, t] + gamma * nxt - v[b, t])
        for i, t in enumerate(steps):
            out[b, t] = sum((gamma * lam) ** k * d for k, d in enumerate(deltas[i:]))
    return out


def _gae_inputs(seed, B, T, gamma, lam, lengths=None, mask=None, terminal_only=False):
    g = _gen(seed)
    rewards = torch.zeros(B, T) if terminal_only else torch.randn(B, T, generator=g).round(decimals=2)
    values = torch.rand(B, T, generator=g).round(decimals=2)
    if mask is None:
        lengths = lengths or [T] * B
        mask = (torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]).float()
    if terminal_only:
        for b in range(B):
            last = int(mask[b].nonzero().max())
            rewards[b, last] = 1.0
    # what a padded or tool-output position holds must not matter: put garbage there
    rewards = torch.where(mask > 0, rewards, 7.0)
    values = torch.where(mask > 0, values, -5.0)
    return {"rewards": rewards, "values": values, "mask": mask, "gamma": gamma, "lam": lam}


def _gae_case(hint: str):
    def run(fn, x):
        got = _tensor(_call(fn, x), "the advantages", tuple(x["rewards"].shape))
        _close(got, _gae_reference(**x), hint)

    return run


def _gae_masked_invariance(fn, x):
    a = _tensor(_call(fn, x), "the advantages", tuple(x["rewards"].shape)).detach()
    m = x["mask"] > 0
    y = dict(x, rewards=torch.where(m, x["rewards"], -300.0), values=torch.where(m, x["values"], 123.0))
    b = _tensor(_call(fn, y), "the advantages", tuple(x["rewards"].shape)).detach()
    if not torch.allclose(a.double(), b.double(), rtol=RTOL, atol=ATOL):
        raise _Fail(
            a,
            b,
            "changing rewards and values only where mask = 0 changed the advantages: masked steps must not count",
            inputs={**y, "note": "the first call had rewards 7.0 and values -5.0 where mask is 0"},
        )


def _gae_rows_independent(fn, x):
    a = _tensor(_call(fn, x), "the advantages", tuple(x["rewards"].shape)).detach()
    perm = torch.tensor([2, 0, 1])
    y = {k: (v[perm] if isinstance(v, torch.Tensor) else v) for k, v in x.items()}
    b = _tensor(_call(fn, y), "the advantages", tuple(x["rewards"].shape)).detach()
    if not torch.allclose(a[perm].double(), b.double(), rtol=RTOL, atol=ATOL):
        raise _Fail(
            a[perm], b, "reordering the rows must reorder the advantages: each row is its own episode", inputs=y
        )


_register(
    "gae",
    "02",
    "my_gae(rewards, values, mask, gamma, lam) -> advantages\n"
    "  rewards, values, mask: (B, T) float tensors (mask 1 where a step counts, 0 elsewhere); gamma, "
    "lam: floats in [0, 1].\n"
    "  Returns the (B, T) GAE advantages A_t = sum_l (gamma lam)^l delta_{t+l}, delta_t = r_t + gamma "
    "V(s_t') - V(s_t),\n"
    "  over the valid steps only (t' the next valid step; V after a row's last valid step is 0); 0 where mask is 0.\n"
    "  A tuple (advantages, returns) is accepted too.",
    [
        _Case(
            "one episode, gamma = lam = 1, reward at the end",
            lambda: _gae_inputs(0, 1, 5, 1.0, 1.0, terminal_only=True),
            _gae_case("with gamma = lam = 1, A_t = (sum of the rewards from t on) - V(s_t)"),
        ),
        _Case(
            "one episode, lam = 0",
            lambda: _gae_inputs(1, 1, 5, 0.9, 0.0),
            _gae_case(
                "with lam = 0, A_t is the one-step TD residual r_t + gamma V(s_{t+1}) - V(s_t), and V "
                "after the last step is 0"
            ),
        ),
        _Case(
            "a batch, gamma = 0.99, lam = 0.95",
            lambda: _gae_inputs(2, 3, 6, 0.99, 0.95),
            _gae_case(
                "A_t = delta_t + gamma * lam * A_{t+1} from the last step backwards, with A after the last step 0"
            ),
        ),
        _Case(
            "right-padded rows of lengths 7, 4, 2",
            lambda: _gae_inputs(3, 3, 7, 0.95, 0.9, lengths=[7, 4, 2]),
            _gae_case(
                "padding (mask 0) gets advantage 0, and a row's last valid step sees V = 0 after it, not "
                "the padding's value"
            ),
        ),
        _Case(
            "gaps in the mask (tool output between the policy's tokens)",
            lambda: _gae_inputs(
                4, 2, 8, 0.99, 0.95, mask=torch.tensor([[1, 1, 0, 0, 1, 0, 1, 1], [0, 1, 1, 0, 1, 1, 0, 0]]).float()
            ),
            _gae_case(
                "the recursion runs over valid steps only: skip a masked step, bootstrap from the next *valid* "
                "step's value, and do not discount across the gap"
            ),
        ),
        _Case(
            "property: what masked positions hold cannot matter",
            lambda: _gae_inputs(
                5,
                3,
                6,
                0.97,
                0.8,
                mask=torch.tensor([[1, 1, 1, 0, 0, 0], [1, 0, 1, 1, 0, 1], [0, 0, 0, 0, 0, 0]]).float(),
            ),
            _gae_masked_invariance,
        ),
        _Case(
            "property: rows are independent episodes",
            lambda: _gae_inputs(6, 3, 5, 0.9, 0.7, lengths=[5, 3, 4]),
            _gae_rows_independent,
        ),
    ],
)


# ----------------------------------------------------------------------------------------------
# "group_advantages": GRPO's group-relative advantage (chapter 03)
# ----------------------------------------------------------------------------------------------

GROUP_EPS = 1e-6


def _group_reference(scores, group_ids) -> torch.Tensor:
    """A_i = (s_i - mean_g) / (std_g + eps), std with Bessel's correction; 0 in a group of equal scores."""
    s = scores.double()
    out = torch.zeros_like(s)
    for g in group_ids.unique().tolist():
        idx = (group_ids == g).nonzero().flatten()
        x = s[idx]
        if float(x.max() - x.min()) <= 1e-8:
            continue  # a dead group: no signal
        mean = x.sum() / len(x)
        std = math.sqrt(float(((x - mean) ** 2).sum()) / (len(x) - 1))
        out[idx] = (x - mean) / (std + GROUP_EPS)
    return out


def _group_inputs(scores, ids):
    return {"scores": torch.tensor(scores, dtype=torch.float32), "group_ids": torch.tensor(ids, dtype=torch.long)}


def _interleaved(seed: int):
    g = _gen(seed)
    ids = torch.tensor([0] * 3 + [1] * 4 + [2] * 5)
    ids = ids[torch.randperm(len(ids), generator=g)]
    scores = torch.randn(len(ids), generator=g).round(decimals=2)
    return {"scores": scores, "group_ids": ids}


def _group_case(hint: str):
    def run(fn, x):
        got = _tensor(_call(fn, x), "the advantages", tuple(x["scores"].shape))
        _close(got, _group_reference(**x), hint)

    return run


def _group_sum_of_squares(fn, x):
    a = _tensor(_call(fn, x), "the advantages", tuple(x["scores"].shape)).detach().double()
    for g in x["group_ids"].unique().tolist():
        idx = x["group_ids"] == g
        n = int(idx.sum())
        total, sq = float(a[idx].sum()), float((a[idx] ** 2).sum())
        if abs(total) > 1e-4:
            raise _Fail(
                f"group {g}: sum of advantages 0", f"group {g}: sum {total:.6g}", "subtract the group's own mean"
            )
        if abs(sq - (n - 1)) > 1e-3 * n:
            raise _Fail(
                f"group {g} of {n}: sum of squared advantages {n - 1}",
                f"{sq:.6g}",
                f"with Bessel's std every live group has sum_i A_i^2 = G - 1; {n} (= G) means the population std "
                "(divide by G - 1 inside the root: torch.std's default)",
            )


def _group_affine(fn, x):
    a = _tensor(_call(fn, x), "the advantages", tuple(x["scores"].shape)).detach()
    y = dict(x, scores=3.0 * x["scores"] - 2.0)
    b = _tensor(_call(fn, y), "the advantages", tuple(x["scores"].shape)).detach()
    if not torch.allclose(a.double(), b.double(), rtol=1e-3, atol=1e-4):
        raise _Fail(
            a, b, "GRPO's advantage is scale- and shift-free: 3 * r - 2 must give the same advantages as r", inputs=y
        )


def _group_permutation(fn, x):
    a = _tensor(_call(fn, x), "the advantages", tuple(x["scores"].shape)).detach()
    perm = torch.randperm(len(x["scores"]), generator=_gen(11))
    y = {"scores": x["scores"][perm], "group_ids": x["group_ids"][perm]}
    b = _tensor(_call(fn, y), "the advantages", tuple(x["scores"].shape)).detach()
    if not torch.allclose(a[perm].double(), b.double(), rtol=RTOL, atol=ATOL):
        raise _Fail(
            a[perm],
            b,
            "shuffling the batch must shuffle the advantages the same way: group by id, not by position",
            inputs=y,
        )


_register(
    "group_advantages",
    "03",
    "my_group_advantages(scores, group_ids) -> advantages\n"
    "  scores: (B,) float, one reward per response; group_ids: (B,) long, responses to one prompt share an id\n"
    "  (members of a group need not be adjacent). Returns the (B,) GRPO advantages\n"
    "  A_i = (r_i - mean_g) / (std_g + 1e-6), std_g the sample std with Bessel's correction (G - 1);\n"
    "  every advantage of a group whose scores are all equal is 0.",
    [
        _Case(
            "one group of four, pass/fail",
            lambda: _group_inputs([1.0, 0.0, 0.0, 1.0], [0, 0, 0, 0]),
            _group_case(
                "A_i = (r_i - mean) / (std + 1e-6) with the sample std: divide by G - 1 inside the root "
                "(torch.std's default)"
            ),
        ),
        _Case(
            "two groups of four, side by side",
            lambda: _group_inputs([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0], [0, 0, 0, 0, 1, 1, 1, 1]),
            _group_case("each group is normalized by its own mean and std, not the batch's"),
        ),
        _Case(
            "three groups of sizes 3, 4, 5, members interleaved",
            lambda: _interleaved(0),
            _group_case(
                "group by id, not by position: members of a group need not be adjacent, and groups can differ in size"
            ),
        ),
        _Case(
            "groups of two",
            lambda: _group_inputs([0.3, -1.2, 2.0, 2.5, 0.0, 1.0], [5, 5, 9, 9, 7, 7]),
            _group_case("with G = 2 the advantages are +-1/sqrt(2) (Bessel) times (1 - tiny eps effect)"),
        ),
        _Case(
            "a dead group (all scores equal) next to a live one",
            lambda: _group_inputs([0.5, 0.5, 0.5, 0.5, 1.0, 0.0, 0.0], [0, 0, 0, 0, 1, 1, 1]),
            _group_case("a group whose scores are all equal has no signal: every advantage in it is 0 (not NaN)"),
        ),
        _Case("property: centred, and sum of squares G - 1 per group", lambda: _interleaved(1), _group_sum_of_squares),
        _Case("property: scale- and shift-free", lambda: _interleaved(2), _group_affine),
        _Case("property: order of the batch does not matter", lambda: _interleaved(3), _group_permutation),
    ],
)


# ----------------------------------------------------------------------------------------------
# "clipped_loss": PPO's clipped surrogate, per token (chapter 02)
# ----------------------------------------------------------------------------------------------


def _clip_reference(logp, old_logp, advantages, mask, clip_low, clip_high) -> torch.Tensor:
    """-min(rho A, clip(rho, 1 - clip_low, 1 + clip_high) A) per token, 0 where mask is 0."""
    rho = torch.exp(logp.double() - old_logp.double())
    a = advantages.double()
    loss = -torch.minimum(rho * a, rho.clamp(1 - clip_low, 1 + clip_high) * a)
    return torch.where(mask > 0, loss, 0.0)


def _clip_grad_reference(logp, old_logp, advantages, mask, clip_low, clip_high) -> torch.Tensor:
    """d loss / d logp: -A rho where the unclipped branch is the min, 0 where the clip is active or masked."""
    rho = torch.exp(logp.double() - old_logp.double())
    a = advantages.double()
    active = ((a > 0) & (rho > 1 + clip_high)) | ((a < 0) & (rho < 1 - clip_low))
    return torch.where((mask > 0) & ~active, -a * rho, 0.0)


def _clip_inputs(ratios, advantages, mask=None, clip_low=0.2, clip_high=0.2, seed=0):
    ratios = torch.tensor(ratios, dtype=torch.float32)
    old = -torch.rand(ratios.shape, generator=_gen(seed)) - 0.5  # log-probs of the sampling policy
    logp = old + torch.log(ratios)
    adv = torch.tensor(advantages, dtype=torch.float32).expand_as(ratios).clone()
    m = torch.ones_like(ratios) if mask is None else torch.tensor(mask, dtype=torch.float32)
    return {"logp": logp, "old_logp": old, "advantages": adv, "mask": m, "clip_low": clip_low, "clip_high": clip_high}


def _random_clip_inputs(seed):
    g = _gen(seed)
    old = -torch.rand(4, 6, generator=g) * 2
    logp = old + (torch.rand(4, 6, generator=g) * 0.9 - 0.5)  # ratios from about 0.6 to 1.5
    adv = torch.randn(4, 6, generator=g).round(decimals=2)
    mask = (torch.arange(6)[None, :] < torch.tensor([6, 5, 3, 1])[:, None]).float()
    logp = torch.where(mask > 0, logp, 3.0)  # garbage where masked
    return {"logp": logp, "old_logp": old, "advantages": adv, "mask": mask, "clip_low": 0.2, "clip_high": 0.28}


def _clip_case(hint: str):
    def run(fn, x):
        got = _tensor(_call(fn, x), "the per-token loss", tuple(x["logp"].shape))
        _close(got, _clip_reference(**x), hint)

    return run


def _clip_gradient(fn, x):
    y = dict(x, logp=x["logp"].clone().requires_grad_(True))
    try:
        out = fn(**y)
    except Exception as e:
        raise _Fail("a result", f"raised {type(e).__name__} ({e})", "the function raised on these inputs") from None
    loss = _tensor(out, "the per-token loss", tuple(x["logp"].shape))
    if not loss.requires_grad:
        raise _Fail(
            "a loss that autograd can differentiate with respect to logp",
            "no gradient (the loss was detached from logp)",
            "compute rho = exp(logp - old_logp) with torch operations, without .detach() or .item() on logp",
        )
    (grad,) = torch.autograd.grad(loss.sum(), y["logp"], allow_unused=True)
    grad = torch.zeros_like(x["logp"]) if grad is None else grad
    _close(
        grad,
        _clip_grad_reference(**x),
        "d loss / d logp must be -A rho where the unclipped branch is the min and exactly 0 where the clip is active: "
        "for A > 0 above 1 + clip_high, for A < 0 below 1 - clip_low (and at masked tokens)",
    )


def _clip_masked_invariance(fn, x):
    a = _tensor(_call(fn, x), "the per-token loss", tuple(x["logp"].shape)).detach()
    m = x["mask"] > 0
    y = dict(x, logp=torch.where(m, x["logp"], -4.0), advantages=torch.where(m, x["advantages"], 50.0))
    b = _tensor(_call(fn, y), "the per-token loss", tuple(x["logp"].shape)).detach()
    if not torch.allclose(a.double(), b.double(), rtol=RTOL, atol=ATOL):
        raise _Fail(
            a,
            b,
            "changing logp and advantages only where mask = 0 changed the loss: masked tokens must give 0",
            inputs=y,
        )


_register(
    "clipped_loss",
    "02",
    "my_clipped_loss(logp, old_logp, advantages, mask, clip_low, clip_high) -> per-token loss\n"
    "  logp, old_logp, advantages, mask: (B, T) float tensors; clip_low, clip_high: floats (epsilon "
    "below and above 1).\n"
    "  Returns the (B, T) loss to minimize, -min(rho A, clip(rho, 1 - clip_low, 1 + clip_high) A) with\n"
    "  rho = exp(logp - old_logp), and 0 where mask is 0; autograd must reach logp. A tuple (loss, ...) "
    "is accepted too.",
    [
        _Case(
            "ratio 1: the first step on fresh data",
            lambda: _clip_inputs([[1.0, 1.0, 1.0, 1.0]], [[0.5, -1.0, 2.0, 0.0]]),
            _clip_case("at rho = 1 nothing is clipped: the loss is -A on every valid token"),
        ),
        _Case(
            "positive advantage, ratios from 0.5 to 1.6",
            lambda: _clip_inputs([[0.5, 0.9, 1.1, 1.3, 1.6]], [[1.0]]),
            _clip_case(
                "for A > 0 the ratio is capped at 1 + clip_high above it; below 1 - clip_low the min "
                "keeps rho A (nothing is clipped)"
            ),
        ),
        _Case(
            "negative advantage, ratios from 0.5 to 1.6",
            lambda: _clip_inputs([[0.5, 0.9, 1.1, 1.3, 1.6]], [[-1.0]]),
            _clip_case(
                "for A < 0 the ratio is floored at 1 - clip_low below it; above 1 + clip_high the min "
                "keeps rho A (nothing is clipped)"
            ),
        ),
        _Case(
            "asymmetric range: clip_low = 0.2, clip_high = 0.28",
            lambda: _clip_inputs(
                [[0.7, 0.75, 1.25, 1.35], [0.7, 0.75, 1.25, 1.35]], [[1.0], [-1.0]], clip_low=0.2, clip_high=0.28
            ),
            _clip_case(
                "the range is [1 - clip_low, 1 + clip_high]: clip_high bounds the ratio above 1, clip_low below"
            ),
        ),
        _Case(
            "a masked batch",
            lambda: _random_clip_inputs(0),
            _clip_case("the loss is 0 where mask is 0, whatever logp and the advantages hold there"),
        ),
        _Case("property: no gradient through the clipped branch", lambda: _random_clip_inputs(1), _clip_gradient),
        _Case(
            "property: what masked positions hold cannot matter",
            lambda: _random_clip_inputs(2),
            _clip_masked_invariance,
        ),
    ],
)


# ----------------------------------------------------------------------------------------------
# "sampler": one step of temperature sampling (chapter 06)
# ----------------------------------------------------------------------------------------------

N_DRAWS = 8000  # draws per distribution in the frequency checks
TV_MAX = 0.03  # largest total-variation distance accepted: ~8 standard errors at N_DRAWS and these logits
LOGITS = torch.tensor([[2.0, 1.0, 0.5, 0.0, -1.0, -2.0], [-1.0, 0.0, 3.0, 0.5, 0.0, -0.5]])


def _sampler_out(out, B: int):
    if not isinstance(out, tuple | list) or len(out) != 2:
        raise _Fail(
            "a pair (tokens, logp)",
            type(out).__name__,
            "return two tensors: the sampled token ids and their log-probabilities",
        )
    tokens, logp = out
    tokens = _tensor(tokens, "tokens", (B,), first_of_tuple=False)
    logp = _tensor(logp, "logp", (B,), first_of_tuple=False)
    if tokens.is_floating_point() or tokens.dtype == torch.bool:
        raise _Fail(
            "an integer tensor (torch.long)", f"dtype {tokens.dtype}", "token ids are integers: return a LongTensor"
        )
    return tokens, logp


def _sampler_inputs(logits, temperature, seed, repeat=1):
    return {"logits": logits.repeat_interleave(repeat, 0), "temperature": temperature, "generator": _gen(seed)}


def _sampler_call(fn, x):
    """``fn(logits=..., temperature=..., generator=...)``; a raise is reported with the call's form."""
    return _call(fn, x, "the function raised; it is called as fn(logits=..., temperature=..., generator=...)")


def _sampler_logp(temperature, hint):
    def run(fn, x):
        V = x["logits"].shape[1]
        tokens, logp = _sampler_out(_sampler_call(fn, x), x["logits"].shape[0])
        if (tokens < 0).any() or (tokens >= V).any():
            raise _Fail(
                f"token ids in [0, {V})", tokens, "sample an index of the vocabulary (the last dimension of logits)"
            )
        ref = torch.log_softmax(x["logits"].double() / (temperature if temperature > 0 else 1.0), -1)
        expected = ref.gather(-1, tokens.long().cpu()[:, None]).squeeze(-1)
        if temperature == 0:
            greedy = x["logits"].argmax(-1)
            if not torch.equal(tokens.long().cpu(), greedy):
                raise _Fail(
                    greedy, tokens, "temperature 0 is greedy decoding: take the argmax of the logits, draw nothing"
                )
        _close(logp, expected, hint)

    return run


def _sampler_frequencies(temperature):
    def run(fn, x):
        B = x["logits"].shape[0]
        tokens, _ = _sampler_out(_sampler_call(fn, x), B)
        V = x["logits"].shape[1]
        for row in range(LOGITS.shape[0]):
            drawn = tokens.long().cpu()[row * N_DRAWS : (row + 1) * N_DRAWS]
            freq = torch.bincount(drawn.clamp(0, V - 1), minlength=V).double() / N_DRAWS
            p = torch.softmax(LOGITS[row].double() / temperature, -1)
            tv = 0.5 * float((freq - p).abs().sum())
            if tv > TV_MAX:
                raise _Fail(
                    p,
                    freq,
                    f"the frequencies of {N_DRAWS} draws are {tv:.3f} (total variation) from "
                    f"softmax(logits / {temperature}) "
                    f"(at most {TV_MAX} expected): draw from the tempered distribution, one per row",
                    inputs={"logits (this row, repeated)": LOGITS[row], "temperature": temperature, "draws": N_DRAWS},
                )

    return run


def _sampler_seeded(fn, x):
    a, _ = _sampler_out(_sampler_call(fn, x), x["logits"].shape[0])
    b, _ = _sampler_out(_sampler_call(fn, dict(x, generator=_gen(123))), x["logits"].shape[0])
    c, _ = _sampler_out(_sampler_call(fn, dict(x, generator=_gen(124))), x["logits"].shape[0])
    if not torch.equal(a.cpu(), b.cpu()):
        raise _Fail(
            a, b, "two generators with the same seed gave different tokens: draw every random number from `generator`"
        )
    if torch.equal(a.cpu(), c.cpu()):
        raise _Fail(
            "different tokens for seeds 123 and 124",
            "the same tokens",
            "the draws ignore the generator: pass generator=generator to the random call",
        )


_register(
    "sampler",
    "06",
    "my_sample_token(logits, temperature, generator) -> (tokens, logp)\n"
    "  logits: (B, V) float, one next-token distribution per row; temperature: float >= 0; generator: a "
    "torch.Generator\n"
    "  (draw every random number from it). Returns tokens (B,) long, one draw per row from "
    "softmax(logits / temperature),\n"
    "  and logp (B,), the log-probability of each drawn token under that tempered distribution. Temperature 0 is\n"
    "  greedy: the argmax, with the log-probability of the untempered distribution.",
    [
        _Case(
            "temperature 1: tokens and their log-probabilities",
            lambda: _sampler_inputs(LOGITS, 1.0, 0, repeat=3),
            _sampler_logp(1.0, "logp is log_softmax(logits)[token], for the token drawn in that row"),
        ),
        _Case(
            "temperature 0.5: log-probabilities of the tempered distribution",
            lambda: _sampler_inputs(LOGITS, 0.5, 1, repeat=3),
            _sampler_logp(
                0.5,
                "divide the logits by the temperature before the softmax: logp is of the distribution "
                "the token was drawn from",
            ),
        ),
        _Case(
            "temperature 0: greedy",
            lambda: _sampler_inputs(LOGITS, 0.0, 2),
            _sampler_logp(
                0.0,
                "at temperature 0 return the argmax and the log-probability of the untempered "
                "distribution (no division by 0)",
            ),
        ),
        _Case(
            "property: a seed reproduces the draws",
            lambda: _sampler_inputs(LOGITS, 1.0, 123, repeat=20),
            _sampler_seeded,
        ),
        _Case(
            "property: frequencies follow softmax(logits), temperature 1",
            lambda: _sampler_inputs(LOGITS, 1.0, 3, repeat=N_DRAWS),
            _sampler_frequencies(1.0),
        ),
        _Case(
            "property: frequencies at temperature 0.5",
            lambda: _sampler_inputs(LOGITS, 0.5, 4, repeat=N_DRAWS),
            _sampler_frequencies(0.5),
        ),
        _Case(
            "property: frequencies at temperature 2",
            lambda: _sampler_inputs(LOGITS, 2.0, 5, repeat=N_DRAWS),
            _sampler_frequencies(2.0),
        ),
    ],
)
