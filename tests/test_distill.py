"""On-policy distillation (rltutor.distill): the shift's estimators against the exact KL, the detached student
log-probability, a student equal to its teacher, the divergences, routing to each task's teacher, and
``rltutor train --algo opd`` / ``--teacher`` end to end on tiny runs."""

import math

import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from rltutor.cli import main
from rltutor.config import make_config, resolve
from rltutor.distill import (
    DIVERGENCES,
    OUTSIDE_LOGP,
    MultiTask,
    Teacher,
    TeacherRouter,
    divergence,
    opd_shift,
    opd_signal,
)
from rltutor.envs.tokens import VOCAB, make_task
from rltutor.models.gpt import GPTConfig, TinyGPT
from rltutor.models.lm_policy import token_logprobs
from rltutor.train import Trainer

SETTINGS = settings(max_examples=25, deadline=None)
TINY = ["--set", "n_embd=16", "--set", "sft_steps=5", "--set", "num_groups=4", "--set", "eval_every=0", "--no-progress"]


def _dists(seed: int, V: int, scale: float):
    g = torch.Generator().manual_seed(seed)
    log_p = F.log_softmax(scale * torch.randn(V, generator=g, dtype=torch.float64), -1)
    log_q = F.log_softmax(scale * torch.randn(V, generator=g, dtype=torch.float64), -1)
    return log_p, log_q, g


def _kl(log_p, log_q):
    return float((log_p.exp() * (log_p - log_q)).sum())


# --- the shift: estimators of the per-token reverse KL ---------------------------------------------


@SETTINGS
@given(seed=st.integers(0, 10_000), V=st.integers(2, 6), scale=st.floats(0.1, 2.0))
@pytest.mark.parametrize("kind", ["k1", "k3"])
def test_k1_and_k3_shifts_estimate_the_exact_kl(kind, seed, V, scale):
    """In expectation over the student's tokens exactly, and on average over 20,000 samples within 6 standard
    errors: the shift's k1 and k3 estimate KL(pi_student || pi_teacher) on a small vocabulary."""
    log_p, log_q, g = _dists(seed, V, scale)
    every = torch.arange(V)[None, :]  # every token once: the expectation, exactly
    signal = opd_signal(log_p[every], log_q[every], torch.ones(1, V, dtype=torch.float64), kind)
    assert float((log_p.exp() * signal[0]).sum()) == pytest.approx(_kl(log_p, log_q), abs=1e-9)
    a = torch.multinomial(log_p.exp(), 20_000, replacement=True, generator=g)[None, :]  # tokens sampled by pi
    s = opd_signal(log_p[a], log_q[a], torch.ones_like(a, dtype=torch.float64), kind)[0]
    se = float(s.std()) / math.sqrt(s.numel())
    assert abs(float(s.mean()) - _kl(log_p, log_q)) <= 6 * se + 1e-9


def test_k2_is_biased_where_the_distributions_differ():
    """k2 = 1/2 (log r)^2 is not an unbiased estimate of the KL (the reason k1 is the default)."""
    log_p, log_q, _ = _dists(0, 5, 2.0)
    every = torch.arange(5)[None, :]
    k2 = opd_signal(log_p[every], log_q[every], torch.ones(1, 5, dtype=torch.float64), "k2")
    assert abs(float((log_p.exp() * k2[0]).sum()) - _kl(log_p, log_q)) > 1e-3


@pytest.mark.parametrize("kind", ["k1", "k2", "k3"])
def test_student_logprob_in_the_shift_is_detached(kind):
    """The shift is a reward: no gradient may flow into the student's log-probability through it (if the detach
    were dropped, the shifted advantages would carry a grad_fn and the policy loss would differentiate them)."""
    logp = torch.randn(3, 5, requires_grad=True)
    teacher = torch.randn(3, 5)
    adv = torch.randn(3, 5)
    shifted = opd_shift(adv, logp, teacher, torch.ones(3, 5), coef=0.5, kind=kind)
    assert not shifted.requires_grad and shifted.grad_fn is None
    assert not opd_signal(logp, teacher, torch.ones(3, 5), kind).requires_grad
    loss = -(shifted * logp).sum()  # a REINFORCE loss on the shifted advantages
    loss.backward()
    assert torch.allclose(logp.grad, -shifted)  # d/dlogp of -(A * logp) is -A: A was a constant


@SETTINGS
@given(seed=st.integers(0, 10_000), coef=st.floats(0.0, 5.0))
def test_a_student_equal_to_its_teacher_gets_a_zero_shift(seed, coef):
    g = torch.Generator().manual_seed(seed)
    logp = torch.randn(4, 6, generator=g) - 1.0
    adv = torch.randn(4, 6, generator=g)
    mask = (torch.rand(4, 6, generator=g) > 0.3).float()
    for kind in ("k1", "k2", "k3"):
        assert torch.equal(opd_shift(adv, logp, logp.clone(), mask, coef, kind), adv)


def test_the_shift_is_zero_where_the_mask_is_zero():
    logp, teacher = torch.zeros(2, 3), torch.full((2, 3), -5.0)
    mask = torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    s = opd_signal(logp, teacher, mask)
    assert torch.equal(s == 0, mask == 0) and torch.allclose(s[mask > 0], torch.tensor(5.0))


# --- the divergence loss --------------------------------------------------------------------------


@SETTINGS
@given(seed=st.integers(0, 10_000), V=st.integers(2, 8), beta=st.floats(0.01, 0.99))
def test_divergences_over_the_full_vocabulary(seed, V, beta):
    log_s, log_t, _ = _dists(seed, V, 1.5)
    rev, fwd = _kl(log_s, log_t), _kl(log_t, log_s)
    assert float(divergence(log_s, log_t, "reverse_kl")) == pytest.approx(rev, abs=1e-9)
    assert float(divergence(log_s, log_t, "forward_kl")) == pytest.approx(fwd, abs=1e-9)
    assert float(divergence(log_s, log_t, "jsd", beta=1.0)) == pytest.approx(rev, abs=1e-9)
    assert float(divergence(log_s, log_t, "jsd", beta=0.0)) == pytest.approx(fwd, abs=1e-9)
    m = torch.log(beta * log_t.exp() + (1 - beta) * log_s.exp())
    jsd = beta * _kl(log_t, m) + (1 - beta) * _kl(log_s, m)
    assert float(divergence(log_s, log_t, "jsd", beta=beta)) == pytest.approx(jsd, abs=1e-9)
    assert float(divergence(log_s, log_s, "jsd", beta=beta)) == pytest.approx(0.0, abs=1e-12)


@SETTINGS
@given(seed=st.integers(0, 10_000), V=st.integers(3, 8), k=st.integers(1, 8))
@pytest.mark.parametrize("kind", sorted(DIVERGENCES))
def test_top_k_with_a_tail_bucket_coarsens_the_divergence(kind, seed, V, k):
    """Top k tokens plus one tail bucket is a coarsening of the distributions: it never exceeds the full
    divergence (data processing), equals it once k covers the vocabulary, and is 0 for equal distributions."""
    log_s, log_t, _ = _dists(seed, V, 2.0)
    full = float(divergence(log_s, log_t, kind, beta=0.5))
    top = float(divergence(log_s, log_t, kind, beta=0.5, top_k=k))
    assert -1e-9 <= top <= full + 1e-9
    if k >= V:
        assert top == pytest.approx(full, abs=1e-9)
    assert float(divergence(log_s, log_s, kind, beta=0.5, top_k=k)) == pytest.approx(0.0, abs=1e-9)


def test_the_divergence_gradient_reaches_the_student_only():
    logits = torch.randn(2, 3, 5, requires_grad=True)
    teacher = F.log_softmax(torch.randn(2, 3, 5), -1).requires_grad_()
    divergence(F.log_softmax(logits, -1), teacher, "reverse_kl", top_k=2).sum().backward()
    assert logits.grad is not None and logits.grad.abs().sum() > 0 and teacher.grad is None


def test_divergence_refuses_bad_arguments():
    x = F.log_softmax(torch.randn(4), -1)
    with pytest.raises(ValueError, match="unknown divergence 'kl'"):
        divergence(x, x, "kl")
    with pytest.raises(ValueError, match="beta"):
        divergence(x, x, "jsd", beta=1.5)
    with pytest.raises(ValueError, match="top_k"):
        divergence(x, x, top_k=-1)


# --- multi-task prompts and routing ----------------------------------------------------------------


def test_multitask_prompts_start_with_their_task_token():
    task = MultiTask(("addition", "sequence"), max_operand=9, L=3)
    prompts = task.sample_prompts(7, torch.Generator().manual_seed(0))
    assert prompts.shape == (7, task.prompt_len) and task.vocab_size == len(VOCAB) + 2
    assert task.task_ids(prompts).tolist() == [0, 1, 0, 1, 0, 1, 0]  # rows alternate
    for p in prompts:
        k = int(task.task_ids(p[None])[0])
        native = task.native(p, k)
        assert native.shape[0] == task.subtasks[k].prompt_len
        target = task.target(p)
        assert task.score(p, target[:-1]) == 1.0  # the task's own answer, scored by the task's own reward
        assert task.score(p, [len(VOCAB)] + target[1:-1]) < 1.0  # a task token inside an answer is wrong
    answers = torch.tensor([(task.target(p) + [0] * 9)[:6] for p in prompts])  # each target, padded to 6 tokens
    assert task.accuracy(prompts, answers) == 1.0


def test_multitask_refuses_unknown_tasks_and_options():
    with pytest.raises(ValueError, match="unknown token task 'chess'"):
        MultiTask(("addition", "chess"))
    with pytest.raises(ValueError, match="fit none of the tasks"):
        MultiTask(("sequence",), max_operand=9)


def _teacher(task: str, seed: int, **options) -> Teacher:
    t = make_task(task, **options)
    torch.manual_seed(seed)
    model = TinyGPT(GPTConfig(vocab_size=len(VOCAB), block_size=t.prompt_len + 8, n_layer=1, n_head=2, n_embd=8))
    return Teacher(model.eval().requires_grad_(False), task, t.prompt_len, 1.0, f"{task}-{seed}")


@SETTINGS
@given(n=st.integers(1, 9), seed=st.integers(0, 1000), swap=st.booleans())
def test_routing_sends_each_prompt_to_its_tasks_teacher(n, seed, swap):
    """Each row is scored by the teacher of the task its task token names, on the prompt as that teacher was
    trained on it, whatever order the teachers come in; tokens past a teacher's context are not scored."""
    task = MultiTask(("addition", "sequence"), max_operand=9, L=3)
    teachers = [_teacher("addition", seed, max_operand=9), _teacher("sequence", seed + 1, L=3)]
    router = TeacherRouter(teachers[::-1] if swap else teachers, task)
    g = torch.Generator().manual_seed(seed)
    prompts = task.sample_prompts(n, g)
    T = 12  # longer than the addition teacher's context covers (block_size 4 + 8: 8 response tokens)
    responses = torch.randint(0, len(VOCAB), (n, T), generator=g)
    batch = {"tokens": torch.cat([prompts, responses], 1), "actions": responses, "prompt_len": task.prompt_len}
    scores = router.score(batch, full=True)
    assert scores.route.tolist() == task.task_ids(prompts).tolist()
    for i in range(n):
        k = int(scores.route[i])
        t = teachers[k]
        seq = torch.cat([task.native(prompts[i], k), responses[i]])[None, : t.model.config.block_size + 1]
        own, _, _ = token_logprobs(t.model, seq, t.prompt_len)
        m = own.shape[1]
        assert torch.allclose(scores.logp[i, :m], own[0], atol=1e-5)
        assert scores.valid[i, :m].all() and not scores.valid[i, m:].any()
        assert torch.allclose(scores.logprobs[i, :m].gather(-1, responses[i, :m, None])[:, 0], own[0], atol=1e-5)
        assert (scores.logprobs[i, :m, len(VOCAB) :] == OUTSIDE_LOGP).all()  # task tokens: outside its vocabulary


def test_a_sampled_task_token_gets_the_outside_logprob():
    task = MultiTask(("addition", "sequence"), max_operand=9, L=3)
    router = TeacherRouter([_teacher("addition", 0, max_operand=9), _teacher("sequence", 1, L=3)], task)
    prompts = task.sample_prompts(2)
    responses = torch.tensor([[len(VOCAB), 2, 1], [len(VOCAB) + 1, 3, 1]])
    scores = router.score({"tokens": torch.cat([prompts, responses], 1), "actions": responses, "prompt_len": 5})
    assert (scores.logp[:, 0] == OUTSIDE_LOGP).all() and torch.isfinite(scores.logp).all()


def test_the_router_refuses_a_missing_a_doubled_and_a_foreign_teacher():
    task = MultiTask(("addition", "sequence"), max_operand=9, L=3)
    add, seq = _teacher("addition", 0, max_operand=9), _teacher("sequence", 1, L=3)
    with pytest.raises(ValueError, match="no teacher for task\\(s\\) sequence"):
        TeacherRouter([add], task)
    with pytest.raises(ValueError, match="two teachers for task 'addition'"):
        TeacherRouter([add, _teacher("addition", 2, max_operand=9), seq], task)
    with pytest.raises(ValueError, match="trained on 'sequence'"):
        TeacherRouter([seq], make_task("addition", max_operand=9))
    with pytest.raises(ValueError, match="prompts of 6 tokens, the student's have 4"):
        TeacherRouter([_teacher("addition", 0, max_operand=19)], make_task("addition", max_operand=9))
    big = TinyGPT(GPTConfig(vocab_size=len(VOCAB) + 5, block_size=12, n_layer=1, n_head=2, n_embd=8))
    with pytest.raises(ValueError, match="vocabulary of 19 tokens"):
        TeacherRouter([Teacher(big, "addition", 4, 1.0, "big")], make_task("addition", max_operand=9))


def test_a_teacher_from_a_non_token_run_is_refused():
    state = {"config": {"env": "CartPole-v1"}, "policy": {}}
    with pytest.raises(ValueError, match="not a token task"):
        Teacher.from_state(state, "runs/cartpole")


# --- the trainer and the command line ---------------------------------------------------------------


def _tiny(algo, env="addition", **sets):
    return resolve(
        algo,
        env,
        "quick",
        sets={"n_embd": 16, "sft_steps": 5, "num_groups": 4, "eval_every": 0, "device": "cpu", **sets},
        flags={"total_steps": 10_000},
    )


def test_a_student_equal_to_its_teacher_starts_at_zero_kl(tmp_path):
    """The teacher is the student's own warm start, saved before any update: the first update's k1 estimate of
    KL(student || teacher) is 0 up to float rounding (sampler vs one forward pass)."""
    Trainer(_tiny("grpo")).save(str(tmp_path / "t" / "checkpoint.pt"))
    row = Trainer(_tiny("opd", teachers=(str(tmp_path / "t"),))).step()
    assert abs(row["kl_to_teacher"]) < 1e-5


def test_config_errors_name_the_fix():
    with pytest.raises(ValueError, match="add --teacher RUN_DIR"):
        make_config("opd", env="addition")
    with pytest.raises(ValueError, match="nothing to learn from it"):
        make_config("grpo", env="addition", teachers=("runs/a",))
    with pytest.raises(ValueError, match="teachers distil token tasks"):
        make_config("ppo", env="CartPole-v1", teachers=("runs/a",), opd_coef=0.1)
    assert "teachers" not in make_config("grpo", env="addition").to_dict()  # config.json unchanged without one


@pytest.fixture(scope="module")
def teachers(tmp_path_factory):
    """Two tiny GRPO teachers, one per task, trained for a few updates by the command line (seed 7: they are not
    the students' seed-1 warm start)."""
    root = tmp_path_factory.mktemp("teachers")
    add, seq = str(root / "add"), str(root / "seq")
    assert (
        main(["train", "--algo", "grpo", "--env", "addition", "--steps", "150", "--seed", "7", "--out", add, *TINY])
        == 0
    )
    seq_opts = ["--set", "env_options={'L': 3}"]
    assert (
        main(
            [
                "train",
                "--algo",
                "grpo",
                "--env",
                "sequence",
                "--steps",
                "150",
                "--seed",
                "7",
                "--out",
                seq,
                *TINY,
                *seq_opts,
            ]
        )
        == 0
    )
    return add, seq, root


def test_opd_with_one_teacher_end_to_end(teachers):
    add, _, root = teachers
    out = str(root / "one")
    assert (
        main(["train", "--algo", "opd", "--teacher", add, "--env", "addition", "--steps", "120", "--out", out, *TINY])
        == 0
    )
    h = pd.read_csv(f"{out}/metrics.csv")
    assert h["kl_to_teacher"].notna().all() and len(h) >= 2
    assert main(["train", "--out", out, "--resume", "--steps", "200", "--no-progress"]) == 0  # same checkpoints, resume
    assert len(pd.read_csv(f"{out}/metrics.csv")) > len(h)


def test_opd_with_two_routed_teachers_end_to_end(teachers):
    add, seq, root = teachers
    out = str(root / "two")
    args = ["train", "--algo", "opd", "--teacher", seq, "--teacher", add, "--env", "addition,sequence"]
    opts = ["--set", "env_options={'L': 3, 'max_operand': 19}"]
    assert main([*args, "--steps", "150", "--out", out, *TINY, *opts]) == 0
    h = pd.read_csv(f"{out}/metrics.csv")
    for col in ("kl_to_teacher", "kl_to_teacher_addition", "kl_to_teacher_sequence"):
        assert h[col].notna().all(), col
    state = Trainer.read_checkpoint(f"{out}/checkpoint.pt")
    assert state["config"]["env"] == "multitask" and list(state["config"]["env_options"]["tasks"]) == [
        "addition",
        "sequence",
    ]


def test_teacher_with_opd_coef_on_grpo_and_the_loss_arm(teachers):
    add, _, root = teachers
    out = str(root / "grpo")
    base = ["train", "--teacher", add, "--env", "addition", "--steps", "120", *TINY]
    assert main([*base, "--algo", "grpo", "--set", "opd_coef=0.1", "--out", out]) == 0
    h = pd.read_csv(f"{out}/metrics.csv")
    assert h["kl_to_teacher"].notna().all() and "distill_loss" not in h
    loss_arm = ["--set", "opd_coef=0", "--set", "opd_loss=reverse_kl", "--set", "opd_top_k=3"]
    assert main([*base, "--algo", "opd", *loss_arm, "--out", str(root / "loss")]) == 0
    h = pd.read_csv(f"{root}/loss/metrics.csv")
    assert (h["distill_loss"] > 1e-5).all() and h["grad_norm"].gt(0).all()  # the divergence alone moves the student


def test_cli_errors_for_bad_teachers(teachers, tmp_path, capsys):
    add, _, _ = teachers
    (tmp_path / "empty").mkdir()
    cases = [
        (["--teacher", str(tmp_path / "empty"), "--env", "addition"], "holds no checkpoint.pt"),
        (["--teacher", add, "--env", "addition,sequence"], "no teacher for task(s) sequence"),
        (["--env", "addition"], "add --teacher RUN_DIR"),
    ]
    for i, (flags, message) in enumerate(cases):
        assert main(["train", "--algo", "opd", *flags, "--out", str(tmp_path / f"r{i}"), *TINY]) == 2
        assert message in capsys.readouterr().err


# --- the chapter's lab (rltutor.experiments.distill) -------------------------------------------------


def test_the_stored_teachers_load_safely_and_are_small():
    """The teachers the lab stores in the package load through the safe loader, their config.json is their
    checkpoint's, and together they stay small (the repository carries them)."""
    import json
    import os

    from rltutor.experiments import distill as lab

    total = 0
    for t in lab.TASKS:
        d = lab.teacher_dir(t)
        state = Trainer.read_checkpoint(os.path.join(d, "checkpoint.pt"))
        assert state["config"]["env"] == t
        assert json.load(open(os.path.join(d, "config.json")))["env"] == t
        total += os.path.getsize(os.path.join(d, "checkpoint.pt"))
    assert total < 5_000_000


def test_sft_on_the_experts_samples_asks_each_prompts_own_expert():
    """The off-policy arm's batch: every row of a two-task batch is answered by its task's stored expert, so its
    completions are right about as often as that expert is (a row sent to the other expert would almost never
    be); the loss mask covers the completion up to its EOS and nothing of the prompt."""
    from rltutor.experiments import distill as lab

    mt = MultiTask(tasks=lab.TASKS, **lab.TASK_OPTIONS["addition"], **lab.TASK_OPTIONS["sequence"])
    router = lab.load_router(lab.TASKS, mt)
    tokens, mask = lab._teacher_batch(router, mt, 64, torch.Generator().manual_seed(0))
    P = mt.prompt_len
    assert mask[:, : P - 1].sum() == 0
    route = router.route(tokens)
    for k in range(len(lab.TASKS)):
        rows = (route == k).nonzero().squeeze(1)
        right = [mt.accuracy(tokens[i : i + 1, :P], tokens[i : i + 1, P:]) for i in rows.tolist()]
        assert sum(right) / len(right) >= 0.8, lab.TASKS[k]


def _synthetic_runs(effect: float, seeds=range(6)):
    rows = []
    g = torch.Generator().manual_seed(0)
    for s in seeds:
        base = 0.2 + 0.05 * float(torch.rand(1, generator=g))
        for arm in (*SINGLE, *MULTI):
            gain = effect if arm in ("opd_shift", "route") else 0.0
            noise = 0.01 * float(torch.randn(1, generator=g))
            for u, acc in ((0, base), (10, base + gain + noise)):
                row = {"arm": arm, "seed": s, "update": u, "tokens": u, "seconds": u, "signals": 1.0}
                row["acc_addition"], row["kl_addition"] = acc, 1.0
                if arm in MULTI:
                    row["acc_sequence"], row["kl_sequence"] = acc, 1.0
                rows.append(row)
    return pd.DataFrame(rows)


SINGLE = ("sft", "opd_shift", "opd_loss", "grpo", "grpo_shift")
MULTI = ("route", "sft_experts", "grpo_multi")


def test_the_labs_verdicts_decide_from_the_records():
    """Seven pre-stated tests, Holm-corrected together: a large simulated effect of the shift is confirmed where
    the shift is the first arm and refuted where it is the second, arms that differ by noise far below the
    smallest effect of interest come out equivalent, and every arm's gain is reported."""
    from rltutor.experiments import distill as lab

    assert set(SINGLE) == set(lab.SINGLE_ARMS) and set(MULTI) == set(lab.MULTI_ARMS)
    v = lab.verdicts(_synthetic_runs(0.3)).set_index("contrast")["verdict"]
    assert len(v) == 7 and v["OPD shift - GRPO"] == "confirmed" and v["OPD loss - OPD shift"] == "refuted"
    assert v["GRPO + shift - GRPO"] == "equivalent"
    assert v["routed OPD - SFT on experts' samples"] == "confirmed"
    assert v["routed OPD keeps both skills (min over tasks of end - start)"] == "confirmed"
    gains = lab.gains(_synthetic_runs(0.3))
    assert set(gains["arm"]) == set(SINGLE) | set(MULTI)
    learned = gains.set_index(["arm", "task"])["learned"]
    assert learned[("opd_shift", "addition")] and not learned[("grpo", "addition")]  # 0.3 vs noise
    power = lab.power(_synthetic_runs(0.0))
    assert (power["seeds"] >= 2).all() and len(power) == 7
