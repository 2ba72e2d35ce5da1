"""The graders of the "implement this" exercises (rltutor.exercises), on right and on subtly wrong answers.

* the package's own functions pass their exercise (so the grader's independent references agree with
  rltutor.advantages and rltutor.losses), and so does a short hand-written solution of each;
* each subtly wrong implementation fails, at the case that is about its mistake, with that case's inputs,
  expected and actual output and hint in the result;
* an unknown name or a non-function is refused with a message listing the names;
* every chapter 01-10 has its exercises followed by solutions in collapsed dropdowns, and the four graded
  exercises call ``check`` in their chapters (the rendered page is checked by ``test_solutions_are_collapsed``,
  marked ``book``).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import torch

from rltutor import exercises
from rltutor.advantages import gae, group_advantages
from rltutor.losses import policy_loss

ROOT = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------------------------
# Right answers
# ----------------------------------------------------------------------------------------------


def loop_gae(rewards, values, mask, gamma, lam):
    """A reader's GAE: one backward pass over the valid steps of each row."""
    B, T = rewards.shape
    out = torch.zeros_like(rewards)
    for b in range(B):
        next_value, next_adv = 0.0, 0.0
        for t in reversed(range(T)):
            if mask[b, t] == 0:
                continue
            delta = rewards[b, t] + gamma * next_value - values[b, t]
            next_adv = delta + gamma * lam * next_adv
            out[b, t] = next_adv
            next_value = values[b, t]
    return out


def loop_grpo(scores, group_ids):
    out = torch.zeros_like(scores)
    for g in group_ids.unique():
        i = group_ids == g
        s = scores[i]
        out[i] = 0.0 if s.max() == s.min() else (s - s.mean()) / (s.std() + 1e-6)
    return out


def plain_clip(logp, old_logp, advantages, mask, clip_low, clip_high):
    rho = torch.exp(logp - old_logp)
    loss = -torch.minimum(rho * advantages, rho.clamp(1 - clip_low, 1 + clip_high) * advantages)
    return loss * mask


def multinomial_sampler(logits, temperature, generator):
    if temperature == 0:
        logp = torch.log_softmax(logits, -1)
        tokens = logp.argmax(-1)
    else:
        logp = torch.log_softmax(logits / temperature, -1)
        tokens = torch.multinomial(logp.exp(), 1, generator=generator).squeeze(-1)
    return tokens, logp.gather(-1, tokens[:, None]).squeeze(-1)


def gumbel_sampler(logits, temperature, generator):
    """Another correct sampler (the package's exponential-race draw): other random numbers, same distribution."""
    if temperature == 0:
        return multinomial_sampler(logits, 0.0, generator)
    logp = torch.log_softmax(logits / temperature, -1)
    tokens = (logp.exp() / torch.empty_like(logp).exponential_(generator=generator)).argmax(-1)
    return tokens, logp.gather(-1, tokens[:, None]).squeeze(-1)


RIGHT = {
    "gae": [gae, loop_gae],
    "group_advantages": [group_advantages, loop_grpo],
    "clipped_loss": [lambda *a, **k: policy_loss(*a, **k, agg=None), plain_clip],
    "sampler": [multinomial_sampler, gumbel_sampler],
}


@pytest.mark.parametrize(
    ("name", "fn"), [(n, f) for n, fs in RIGHT.items() for f in fs], ids=lambda x: x if isinstance(x, str) else ""
)
def test_a_right_answer_passes(name, fn):
    result = exercises.check(name, fn)
    assert result.passed, str(result)
    assert result.failure is None and result.cases_passed == result.cases_total >= 5
    assert bool(result) and "passed all" in str(result)


def test_the_names():
    assert exercises.list_exercises() == ["clipped_loss", "gae", "group_advantages", "sampler"]
    assert set(exercises.EXERCISES) == set(RIGHT)
    for name in exercises.list_exercises():
        text = exercises.signature(name)
        assert "->" in text and "keyword" in text


# ----------------------------------------------------------------------------------------------
# Subtly wrong answers: each fails, at the case about its mistake
# ----------------------------------------------------------------------------------------------


def gae_tail_off_by_one(rewards, values, mask, gamma, lam):
    """A_t = sum_{l=0}^{n-2} (gamma lam)^l delta_{t+l}: the last term of the lambda-tail is dropped."""
    B, T = rewards.shape
    out = torch.zeros_like(rewards)
    for b in range(B):
        steps = [t for t in range(T) if mask[b, t] > 0]
        deltas = []
        for i, t in enumerate(steps):
            nxt = values[b, steps[i + 1]] if i + 1 < len(steps) else 0.0
            deltas.append(rewards[b, t] + gamma * nxt - values[b, t])
        for i, t in enumerate(steps):
            tail = deltas[i:-1] if i < len(steps) - 1 else deltas[i:]
            out[b, t] = sum((gamma * lam) ** k * d for k, d in enumerate(tail))
    return out


def gae_forgets_gamma(rewards, values, mask, gamma, lam):
    """The recursion decays by lam alone: A_t = delta_t + lam A_{t+1}."""
    return loop_gae(rewards, values, mask, gamma, lam / gamma if gamma > 0 else lam)


def gae_multiplies_by_mask(rewards, values, mask, gamma, lam):
    """CleanRL-style GAE with the mask as a 'not done' flag: right padding works, a gap in the middle does not."""
    B, T = rewards.shape
    out = torch.zeros_like(rewards)
    last = torch.zeros(B)
    for t in reversed(range(T)):
        next_v = values[:, t + 1] * mask[:, t + 1] if t + 1 < T else torch.zeros(B)
        delta = rewards[:, t] + gamma * next_v - values[:, t]
        last = (delta + gamma * lam * last) * mask[:, t]
        out[:, t] = last
    return out


def gae_in_place(rewards, values, mask, gamma, lam):
    rewards.mul_(mask)  # edits its input
    return loop_gae(rewards, values, mask, gamma, lam)


def grpo_biased_std(scores, group_ids):
    out = torch.zeros_like(scores)
    for g in group_ids.unique():
        i = group_ids == g
        s = scores[i]
        out[i] = (s - s.mean()) / (s.std(correction=0) + 1e-6)
    return out


def grpo_adjacent_groups(scores, group_ids):
    """Assumes the batch holds groups of equal size, side by side (view(-1, G))."""
    G = int((group_ids == group_ids[0]).sum())
    s = scores.view(-1, G)
    return ((s - s.mean(1, keepdim=True)) / (s.std(1, keepdim=True) + 1e-6)).flatten()


def grpo_no_eps(scores, group_ids):
    out = torch.zeros_like(scores)
    for g in group_ids.unique():
        i = group_ids == g
        s = scores[i]
        out[i] = (s - s.mean()) / s.std()
    return out


def clip_wrong_side(logp, old_logp, advantages, mask, clip_low, clip_high):
    """Optimistic instead of pessimistic: max instead of min."""
    rho = torch.exp(logp - old_logp)
    return -torch.maximum(rho * advantages, rho.clamp(1 - clip_low, 1 + clip_high) * advantages) * mask


def clip_swapped_bounds(logp, old_logp, advantages, mask, clip_low, clip_high):
    return plain_clip(logp, old_logp, advantages, mask, clip_high, clip_low)


def clip_detached(logp, old_logp, advantages, mask, clip_low, clip_high):
    """The right values with no gradient: rho computed from a detached logp."""
    return plain_clip(logp.detach(), old_logp, advantages, mask, clip_low, clip_high)


def clip_grad_everywhere(logp, old_logp, advantages, mask, clip_low, clip_high):
    """The right values, but the clipped branch keeps its gradient (the clip's value is added as a constant)."""
    rho = torch.exp(logp - old_logp)
    clipped = rho.clamp(1 - clip_low, 1 + clip_high)
    target = torch.minimum(rho * advantages, clipped * advantages)
    return -(rho * advantages + (target - rho * advantages).detach()) * mask


def sampler_ignores_temperature(logits, temperature, generator):
    return multinomial_sampler(logits, 1.0 if temperature > 0 else 0.0, generator)


def sampler_tempered_logp_only(logits, temperature, generator):
    """Reports the tempered log-prob but draws from the untempered distribution."""
    tokens, _ = multinomial_sampler(logits, 1.0 if temperature > 0 else 0.0, generator)
    t = temperature if temperature > 0 else 1.0
    return tokens, torch.log_softmax(logits / t, -1).gather(-1, tokens[:, None]).squeeze(-1)


def sampler_global_rng(logits, temperature, generator):
    return multinomial_sampler(logits, temperature, None)


def sampler_softmax_over_batch(logits, temperature, generator):
    """Softmax over the wrong dimension (the batch), then sample per row."""
    if temperature == 0:
        return multinomial_sampler(logits, 0.0, generator)
    p = torch.softmax(logits / temperature, 0)
    tokens = torch.multinomial(p / p.sum(-1, keepdim=True), 1, generator=generator).squeeze(-1)
    return tokens, torch.log(p.gather(-1, tokens[:, None]).squeeze(-1))


WRONG = [  # (exercise, implementation, the case it must fail at)
    ("gae", gae_tail_off_by_one, "one episode, gamma = lam = 1, reward at the end"),
    ("gae", gae_forgets_gamma, "a batch, gamma = 0.99, lam = 0.95"),
    ("gae", gae_multiplies_by_mask, "gaps in the mask (tool output between the policy's tokens)"),
    ("gae", gae_in_place, "right-padded rows of lengths 7, 4, 2"),
    ("group_advantages", grpo_biased_std, "one group of four, pass/fail"),
    ("group_advantages", grpo_adjacent_groups, "three groups of sizes 3, 4, 5, members interleaved"),
    ("group_advantages", grpo_no_eps, "a dead group (all scores equal) next to a live one"),
    ("clipped_loss", clip_wrong_side, "positive advantage, ratios from 0.5 to 1.6"),
    ("clipped_loss", clip_swapped_bounds, "asymmetric range: clip_low = 0.2, clip_high = 0.28"),
    ("clipped_loss", clip_detached, "property: no gradient through the clipped branch"),
    ("clipped_loss", clip_grad_everywhere, "property: no gradient through the clipped branch"),
    ("sampler", sampler_ignores_temperature, "temperature 0.5: log-probabilities of the tempered distribution"),
    ("sampler", sampler_tempered_logp_only, "property: frequencies at temperature 0.5"),
    ("sampler", sampler_global_rng, "property: a seed reproduces the draws"),
    ("sampler", sampler_softmax_over_batch, "temperature 1: tokens and their log-probabilities"),
]


@pytest.mark.parametrize(("name", "fn", "case"), WRONG, ids=[f.__name__ for _, f, _ in WRONG])
def test_a_subtly_wrong_answer_fails_at_its_case(name, fn, case):
    result = exercises.check(name, fn)
    assert not result.passed and not bool(result)
    f = result.failure
    assert f is not None and f.case == case, str(result)
    assert f.inputs and f.hint and f.expected is not None and f.got is not None
    text = str(result)
    for part in ("failed case: " + case, "expected:", "got:", "hint:"):
        assert part in text
    # the notebook shows this text: it must not look like an error to the book's output check
    assert not re.search(r"Traceback \(most recent call last\)|^\s*[A-Z][A-Za-z]*Error: ", text, re.M)


def test_a_raising_function_is_a_failed_case_not_a_crash():
    def broken(**kwargs):
        raise RuntimeError("not written yet")

    for name in exercises.list_exercises():
        result = exercises.check(name, broken)
        assert not result.passed and result.cases_passed == 0
        assert "raised RuntimeError (not written yet)" in str(result.failure.got)


def test_the_wrong_shape_is_named():
    result = exercises.check("group_advantages", lambda scores, group_ids: scores[None])
    assert not result.passed and "shape" in str(result.failure.expected)


def test_unknown_name_and_non_function_are_refused():
    with pytest.raises(ValueError, match="clipped_loss, gae, group_advantages, sampler"):
        exercises.check("gea", gae)
    with pytest.raises(ValueError, match="fn must be a function"):
        exercises.check("gae", "my_gae")
    with pytest.raises(ValueError, match="no graded exercise"):
        exercises.signature("ppo")


def test_grading_is_deterministic():
    a = exercises.check("group_advantages", grpo_biased_std)
    b = exercises.check("group_advantages", grpo_biased_std)
    assert str(a) == str(b)


# ----------------------------------------------------------------------------------------------
# The chapters: solutions behind toggles, graded exercises that call check
# ----------------------------------------------------------------------------------------------

CHAPTERS = sorted(p for p in (ROOT / "notebooks").glob("*.ipynb") if p.name[:2].isdigit())
GRADED = {"02": ("gae", "clipped_loss"), "03": ("group_advantages",), "06": ("sampler",)}


def _cells(path):
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_every_exercise_has_a_collapsed_solution(path):
    cells = _cells(path)
    sources = ["".join(c["source"]) for c in cells]
    at = [i for i, s in enumerate(sources) if "## Exercises" in s]
    assert at, f"{path.name}: no '## Exercises' section"
    text = sources[at[-1]].split("## Exercises", 1)[1]
    text += "".join(s for s in sources[at[-1] + 1 :] if s.startswith("### Implement it"))  # the graded ones
    numbers = [int(n) for n in re.findall(r"^(\d+)\. ", text, re.M)]
    after = "\n".join([text, *sources[at[-1] + 1 :]])  # each solution below its exercise, or in a later cell
    dropdowns = re.findall(r"```\{admonition\} Solution to exercise (\d+)\n:class: dropdown", after)
    assert numbers and sorted(map(int, dropdowns)) == numbers, (
        f"{path.name}: exercises {numbers} but collapsed solutions for {dropdowns}; give each exercise a "
        "```{admonition} Solution to exercise N``` block with :class: dropdown"
    )


@pytest.mark.parametrize("chapter", sorted(GRADED))
def test_graded_exercises_call_check(chapter):
    (path,) = [p for p in CHAPTERS if p.name.startswith(chapter)]
    code = ["".join(c["source"]) for c in _cells(path) if c["cell_type"] == "code"]
    for name in GRADED[chapter]:
        calls = [s for s in code if f'exercises.check("{name}"' in s]
        assert calls, f"{path.name}: no cell calls exercises.check({name!r}, ...)"
    hidden = [c for c in _cells(path) if "hide-input" in c.get("metadata", {}).get("tags", [])]
    assert hidden, f"{path.name}: the reference solutions must be in a hidden cell (tag hide-input)"
    folded = [
        c
        for c in _cells(path)
        if "show_source" in "".join(c["source"]) and "hide-output" in c.get("metadata", {}).get("tags", [])
    ]
    assert folded, f"{path.name}: the package's source of what the exercise asks for must be folded (tag hide-output)"


@pytest.mark.book
def test_solutions_are_collapsed():
    """In the rendered book each chapter's solutions are togglebutton dropdowns (closed until clicked)."""
    value = os.environ.get("RLTUTOR_BOOK_HTML")
    if not value:
        pytest.fail("RLTUTOR_BOOK_HTML is not set; build the book first (bash scripts/book.sh)")
    from bs4 import BeautifulSoup

    for path in CHAPTERS:
        page = Path(value) / "notebooks" / f"{path.stem}.html"
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        drops = [d for d in soup.select("div.dropdown.admonition") if "Solution to exercise" in d.get_text()]
        assert drops, f"{page}: no collapsed solution (a div.dropdown.admonition titled 'Solution to exercise N')"
        scripts = [s.get("src", "") for s in soup.find_all("script")]
        assert any("togglebutton" in s for s in scripts), (
            f"{page}: the togglebutton script that collapses them is missing"
        )
