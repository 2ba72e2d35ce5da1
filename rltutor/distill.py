"""On-policy distillation: the student samples, a frozen teacher scores every sampled token.

Chapter: *Merging experts by on-policy distillation* (DeepSeek V4's half of the 2026 story).

The student pi_theta samples its own completions, as in RL; a teacher pi_T (a stored run) then gives the
log-probability of each sampled token. Two ways to learn from that, both here:

1. **As an advantage shift** (:func:`opd_shift`), applied per token *after* the estimator::

       A_t <- A_t - beta * k(log pi_theta(a_t|s_t) - log pi_T(a_t|s_t))      (beta: Config.opd_coef)

   with ``k`` one of the KL estimators k1, k2, k3 of :func:`rltutor.losses.kl_penalty`, the teacher in
   the place of the reference (k1 = log pi_theta - log pi_T, the per-token reverse KL sample that slime
   and Tinker use). The student's log-probability inside the shift is the *sampler's*, detached: the
   shift is a reward, and the gradient comes through the policy loss's log pi_theta, as in any policy
   gradient. Not through ``kl_in_reward``: GRPO would sum that into one sequence score; here every token
   keeps its own signal. On its own (the ``"zero"`` estimator: no task reward) this is pure
   distillation; on top of GRPO or PPO it adds the teacher's dense signal to the task's sparse one.
2. **As a loss** (:func:`divergence`, registered in :data:`DIVERGENCES`): a divergence between the
   student's and the teacher's *full* next-token distributions at each state the student visited:
   the reverse KL KL(pi_theta || pi_T), the forward KL, or the generalised Jensen-Shannon divergence
   with weight beta (:func:`divergence`'s ``beta``); optionally on the top-k tokens plus one tail bucket
   that holds the rest of the mass.

Several teachers, one per task (the DeepSeek V4 recipe): a multi-task student's prompts start with a task
token (:class:`MultiTask`, env ``"multitask"``; ``rltutor train --env addition,sequence``), each teacher's
task is read from its run's ``config.json`` (the checkpoint's config), and :class:`TeacherRouter` sends
each row to the teacher of its task, which sees the prompt as it was trained on it (task token and
padding stripped).

References (checked against the sources, December 2026)

* slime, ``docs/en/advanced/on-policy-distillation.md``: ``--use-opd``, ``--opd-type`` (``sglang``: a teacher
  server; ``megatron``: ``--opd-teacher-load PATH``; required), ``--opd-kl-coef`` (default 1.0);
  A_t <- A_t - lambda_opd * KL_t with "the token-level reverse KL", "orthogonal to advantage estimators" (the
  page's formula writes D_KL(P_teacher || P_student)_t; the estimate it describes, the per-token log-ratio
  student minus teacher, is the reverse one, KL(student || teacher)).
* Thinking Machines, tinker-cookbook ``tinker_cookbook/distillation/train_on_policy.py``,
  ``incorporate_kl_penalty``: reverse_kl = sampled_logprobs - teacher_logprobs, advantages +=
  -kl_penalty_coef * mask * reverse_kl (``kl_penalty_coef`` default 1.0, ``kl_discount_factor`` 0: no
  sum over future tokens), one teacher per dataset; logs ``teacher_kl`` (the mean of reverse_kl).
* TRL 1.16 (read in the installed package): ``trl.DistillationTrainer`` / ``trl.DistillationConfig``
  (``trl/trainer/distillation_config.py``; the ``trl.experimental.distillation`` import path is deprecated): the
  student generates, the loss is the generalised JSD to the teacher's next-token distribution, ``beta`` default
  1.0 (0 forward KL, 1 reverse KL, 0.5 JSD); the top-k support with a tail bucket (``loss_top_k``,
  ``loss_add_tail``) is in ``trl.experimental.server_distillation.ServerDistillationConfig``, whose teacher is a
  vLLM server that returns only its top-k log-probabilities; ``trl.experimental.gkd.GKDTrainer``:
  ``generalized_jsd_loss`` with mixture M = beta P_T + (1 - beta) P_S, JSD = beta KL(P_T || M) +
  (1 - beta) KL(P_S || M), and ``GKDConfig`` defaults lmbda = beta = 0.5 (lmbda: the fraction of on-policy
  batches), temperature 0.9. Agarwal et al., *On-Policy Distillation of Language Models: Learning from
  Self-Generated Mistakes* (GKD), arXiv:2306.13649, eq. 1.
* verl 0.9.1 (read in the installed package): the ``distillation`` section of its PPO trainer
  (``verl/workers/config/distillation.py``, ``verl/trainer/distillation/losses.py``): with
  ``distillation_loss.use_policy_gradient=True`` the negated per-token estimate (``loss_mode`` k1, k3...) is the
  advantage of a policy-gradient term, Tinker's form ("PG OPD"); with ``False`` the divergence is a supervised loss
  (``forward_kl_topk`` or an estimator, "GKD OPD"); ``use_task_rewards`` keeps the task's PPO loss beside it;
  several teachers in ``teacher_models``, routed by ``teacher_key`` (default ``data_source``).

Deviations, and where they apply

* The shift uses the sampler's log-probabilities (pi_old), once per update, like slime and Tinker; with
  several epochs the current policy drifts from them (the policy loss's ratio corrects the gradient, not
  the shift).
* With ``norm_adv="batch"`` the shift is added after the whitening (the shift keeps its scale in nats);
  with ``"minibatch"`` it is whitened with the rest.
* A teacher scores only the positions its context covers (its ``block_size``); later tokens get no
  teacher signal (``TeacherScores.valid`` is 0 there). A token the teacher's vocabulary lacks (a task
  token, which only the multi-task student has) gets log-probability :data:`OUTSIDE_LOGP`.
* The divergence loss is computed per state on the student's samples; like k2 in the loss, it does not
  differentiate how a token changes the states after it (see :func:`rltutor.losses.kl_penalty`).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from rltutor.advantages import register_estimator
from rltutor.envs import register_env
from rltutor.envs.tokens import EOS, PAD, STOI, TASKS, VOCAB, TokenTask, make_task
from rltutor.losses import kl_penalty
from rltutor.models.gpt import GPTConfig, TinyGPT
from rltutor.utils import check_choice, check_mask, check_same_shape, check_tensor, register_in

__all__ = [
    "opd_signal",
    "opd_shift",
    "divergence",
    "register_divergence",
    "DIVERGENCES",
    "MultiTask",
    "MULTITASK",
    "Teacher",
    "TeacherRouter",
    "TeacherScores",
    "teacher_checkpoint",
    "student_logprobs",
    "OUTSIDE_LOGP",
]

MULTITASK = "multitask"
"""the registered environment name of :class:`MultiTask` (``rltutor train --env addition,sequence``)"""
OUTSIDE_LOGP = -20.0
"""log pi_T of a token outside the teacher's vocabulary (e^-20 ~ 2e-9): finite, so the shift stays finite, and
low, so the student is pushed off it (the same scale as :data:`rltutor.losses.K3_MAX_LOG_RATIO`)"""


# ----------------------------------------------------------------------------------------------
# 1. The shift: the per-token reverse KL to the teacher, as a reward
# ----------------------------------------------------------------------------------------------


def opd_signal(logp: torch.Tensor, teacher_logp: torch.Tensor, mask: torch.Tensor, kind: str = "k1") -> torch.Tensor:
    """The per-token estimate k(log pi_theta - log pi_T) of KL(pi_theta || pi_T) at the sampled tokens, (B, T).

    ``logp`` (B, T) log pi_theta(a_t|s_t) of the sampled tokens (detached here: the signal is a reward),
    ``teacher_logp`` (B, T) log pi_T(a_t|s_t), ``mask`` (B, T) 0/1. ``kind``: ``"k1"`` (log pi_theta - log pi_T,
    slime's and Tinker's), ``"k2"`` or ``"k3"``, the estimators of :func:`rltutor.losses.kl_penalty` with the
    teacher as the reference. k1 and k3 are unbiased estimates of the per-state KL when the tokens are sampled
    from pi_theta; k2 is not. 0 where the mask is 0."""
    check_tensor("logp", logp, ndim=2)
    check_same_shape(logp=logp, teacher_logp=teacher_logp)
    check_mask(mask, like=logp)
    k = kl_penalty(logp.detach(), teacher_logp.detach(), kind)  # log pi_theta detached: a reward, not a loss
    return torch.where(mask > 0, k, 0.0)


def opd_shift(
    advantages: torch.Tensor,
    logp: torch.Tensor,
    teacher_logp: torch.Tensor,
    mask: torch.Tensor,
    coef: float = 1.0,
    kind: str = "k1",
) -> torch.Tensor:
    """A_t - coef * :func:`opd_signal` (B, T): the advantages after the teacher's per-token shift.

    ``advantages`` (B, T) from :func:`rltutor.advantages.compute_advantages`; the result is a new tensor
    that carries no gradient from ``logp`` (a test checks it)."""
    check_same_shape(advantages=advantages, logp=logp)
    if isinstance(coef, bool) or not isinstance(coef, int | float) or not coef >= 0:
        raise ValueError(f"coef (beta, Config.opd_coef) must be a number >= 0, got {coef!r}")
    return advantages - coef * opd_signal(logp, teacher_logp, mask, kind)  # A_t <- A_t - beta * KL_t


@register_estimator("zero")
def _zero_estimator(*, rewards, mask, values, group_ids, gamma, lam, eps):
    """A_t = 0: the task reward is not used. With a teacher's shift (:func:`opd_shift`) the shift is the whole
    signal: pure on-policy distillation (the ``"opd"`` preset). Returns None (no critic)."""
    check_mask(mask, like=rewards)
    return torch.zeros_like(rewards), None


# ----------------------------------------------------------------------------------------------
# 2. The loss: a divergence between full next-token distributions
# ----------------------------------------------------------------------------------------------

Divergence = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, float], torch.Tensor]
DIVERGENCES: dict[str, Divergence] = {}
"""The divergences between the student's and the teacher's next-token distributions, by name
(:func:`register_divergence` adds one); each ``fn(log_s, log_t, support, beta) -> (...)`` over the last axis."""


def register_divergence(name: str) -> Callable[[Divergence], Divergence]:
    return register_in(DIVERGENCES, name, "a divergence named")


def _kl(log_p: torch.Tensor, log_q: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    """sum_v p_v (log p_v - log q_v) over the entries of ``support``; 0 * log 0 counts 0."""
    p = log_p.exp()
    terms = torch.where(support & (p > 0), p * (log_p - log_q), 0.0)
    return terms.sum(-1)


@register_divergence("reverse_kl")
def _reverse_kl(log_s, log_t, support, beta):
    """KL(pi_theta || pi_T) = sum_v pi_theta(v) (log pi_theta(v) - log pi_T(v)): mode-seeking, the OPD one."""
    return _kl(log_s, log_t, support)


@register_divergence("forward_kl")
def _forward_kl(log_s, log_t, support, beta):
    """KL(pi_T || pi_theta): mass-covering, the divergence of classic (teacher-sampled) distillation."""
    return _kl(log_t, log_s, support)


@register_divergence("jsd")
def _jsd(log_s, log_t, support, beta):
    """Generalised JSD (GKD eq. 1, TRL's ``generalized_jsd_loss``): with M = beta pi_T + (1 - beta) pi_theta,
    beta KL(pi_T || M) + (1 - beta) KL(pi_theta || M); beta = 0 is the forward KL, beta = 1 the reverse KL."""
    if beta == 0.0:
        return _kl(log_t, log_s, support)
    if beta == 1.0:
        return _kl(log_s, log_t, support)
    b = torch.tensor(beta, dtype=log_s.dtype, device=log_s.device)
    log_m = torch.logaddexp(log_t + torch.log(b), log_s + torch.log1p(-b))  # log M
    return beta * _kl(log_t, log_m, support) + (1 - beta) * _kl(log_s, log_m, support)


def _with_tail(log_p: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """``log_p`` (..., V) coarsened to the kept tokens plus one tail bucket: (..., V + 1), the dropped tokens at
    -inf and the last column log of their summed mass (TRL's ``loss_add_tail``, computed from the full
    distribution, so the K + 1 buckets sum to 1 exactly)."""
    neg = torch.finfo(log_p.dtype).min
    tail = torch.logsumexp(torch.where(keep, neg, log_p), dim=-1, keepdim=True)  # log sum of the dropped mass
    tail = torch.where(keep.all(-1, keepdim=True), neg, tail)  # nothing dropped: an empty bucket
    return torch.cat([torch.where(keep, log_p, neg), tail], dim=-1)


def divergence(
    student_logp: torch.Tensor, teacher_logp: torch.Tensor, kind: str = "reverse_kl", beta: float = 0.5, top_k: int = 0
) -> torch.Tensor:
    """The divergence ``kind`` (:data:`DIVERGENCES`) between two next-token distributions, per state.

    ``student_logp`` and ``teacher_logp``: (..., V) log-probabilities (log-softmax), the student's with grad.
    ``beta``: the JSD's weight (``"jsd"`` only). ``top_k`` = 0: the full vocabulary; k > 0: the top k tokens
    (the student's for the reverse KL, the teacher's for the forward KL, both sets for the JSD, as TRL picks
    them) plus one tail bucket holding the rest of each distribution's mass. Returns (...)."""
    check_choice("divergence", kind, DIVERGENCES)
    check_same_shape(student_logp=student_logp, teacher_logp=teacher_logp)
    if isinstance(beta, bool) or not isinstance(beta, int | float) or not 0.0 <= beta <= 1.0:
        raise ValueError(f"beta (the JSD's weight, Config.opd_jsd_beta) must be a number in [0, 1], got {beta!r}")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
        raise ValueError(f"top_k must be an integer >= 0 (0: the full vocabulary), got {top_k!r}")
    V = student_logp.shape[-1]
    log_s, log_t = student_logp, teacher_logp.detach()
    if 0 < top_k < V:
        keep = torch.zeros(student_logp.shape, dtype=torch.bool, device=student_logp.device)
        if kind != "forward_kl" and not (kind == "jsd" and beta == 0.0):
            keep.scatter_(-1, log_s.detach().topk(top_k, dim=-1).indices, True)  # the student's top k
        if kind == "forward_kl" or (kind == "jsd" and beta < 1.0):
            keep.scatter_(-1, log_t.topk(top_k, dim=-1).indices, True)  # the teacher's top k
        log_s, log_t = _with_tail(log_s, keep), _with_tail(log_t, keep)
    support = torch.ones(log_s.shape, dtype=torch.bool, device=log_s.device)
    return DIVERGENCES[kind](log_s, log_t, support, float(beta))


def student_logprobs(policy, batch: dict) -> torch.Tensor:
    """The student's full next-token log-probabilities (B, T, V) at the response positions of ``batch``, with
    grad (one more forward pass of an :class:`~rltutor.models.lm_policy.LMPolicy`'s model, at its temperature)."""
    tokens, pl = batch["tokens"], batch["prompt_len"]
    P = int(pl.reshape(-1)[0]) if isinstance(pl, torch.Tensor) else int(pl)
    logits, _ = policy.model(tokens[:, :-1])  # (B, P + T - 1, V): position j predicts token j + 1
    return F.log_softmax(logits[:, P - 1 :] / policy.temperature, dim=-1)  # (B, T, V)


# ----------------------------------------------------------------------------------------------
# 3. Several tasks in one student: prompts that start with a task token
# ----------------------------------------------------------------------------------------------


class MultiTask(TokenTask):
    """Token tasks mixed in one batch; each prompt is ``[task token, padding, the task's own prompt]``.

    The task tokens are ids ``len(VOCAB) + k`` (``vocab_size`` = ``len(VOCAB) + len(tasks)``), in prompts only;
    the padding (PAD) makes every prompt one length, ``1 + max`` of the tasks' prompt lengths; the completion
    budget is the largest of the tasks'. Rows alternate between the tasks (row i has task ``i % K``), so every
    batch holds each task in equal parts. ``options`` go to every task whose constructor takes them
    (``max_operand`` to addition, ``L`` to sequence); one no task takes is refused. A completion is scored by its
    task's own reward; a task token inside it reads as "=", which no answer holds."""

    name = MULTITASK

    def __init__(self, tasks=("addition", "sequence"), **options):
        tasks = tuple(tasks)
        if not tasks or len(set(tasks)) != len(tasks) or not all(isinstance(t, str) for t in tasks):
            raise ValueError(f"tasks must be distinct token task names, e.g. ('addition', 'sequence'), got {tasks!r}")
        for t in tasks:
            check_choice("token task", t, TASKS)
        taken = {t: set(inspect.signature(TASKS[t]).parameters) for t in tasks}
        valid = set().union(*taken.values())
        unknown = sorted(set(options) - valid)
        if unknown:
            raise ValueError(
                f"option(s) {unknown} fit none of the tasks {list(tasks)}; valid: {', '.join(sorted(valid))}"
            )
        self.tasks = tasks
        self.subtasks = [make_task(t, **{k: v for k, v in options.items() if k in taken[t]}) for t in tasks]
        self.vocab_size = len(VOCAB) + len(tasks)
        self.prompt_len = 1 + max(s.prompt_len for s in self.subtasks)
        self.max_new_tokens = max(s.max_new_tokens for s in self.subtasks)

    def task_token(self, task: str) -> int:
        """The token id that starts the prompts of ``task``."""
        return len(VOCAB) + self.tasks.index(check_choice("task", task, self.tasks))

    def task_ids(self, prompts: torch.Tensor) -> torch.Tensor:
        """The task index (B,) of each prompt row (B, P), read off its first token."""
        k = prompts[:, 0] - len(VOCAB)
        if bool(((k < 0) | (k >= len(self.tasks))).any()):
            raise ValueError(f"prompts must start with a task token {len(VOCAB)}..{self.vocab_size - 1}")
        return k

    def native(self, prompt: torch.Tensor, k: int) -> torch.Tensor:
        """The prompt of task ``k`` as that task writes it (the last ``prompt_len`` tokens), (..., P_k)."""
        return prompt[..., self.prompt_len - self.subtasks[k].prompt_len :]

    def sample_prompts(self, n, generator=None):
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"number of prompts must be a positive integer, got {n!r}")
        out = torch.full((n, self.prompt_len), PAD, dtype=torch.long)
        for k, sub in enumerate(self.subtasks):
            rows = torch.arange(k, n, len(self.tasks))
            if len(rows):
                out[rows, 0] = len(VOCAB) + k
                out[rows, self.prompt_len - sub.prompt_len :] = sub.sample_prompts(len(rows), generator)
        return out

    def _k(self, prompt: torch.Tensor) -> int:
        return int(self.task_ids(prompt.reshape(1, -1))[0])

    def target(self, prompt):
        k = self._k(prompt)
        return self.subtasks[k].target(self.native(prompt, k))

    def score(self, prompt, completion):
        k = self._k(prompt)
        ids = [i if i < len(VOCAB) else STOI["="] for i in completion]  # a task token is never a right answer
        return self.subtasks[k].score(self.native(prompt, k), ids)

    def accuracy(self, prompts, responses):
        hits = []
        for p, r in zip(prompts.cpu(), responses.cpu(), strict=True):
            ids = r.tolist()
            hits.append(EOS in ids and ids[: ids.index(EOS) + 1] == self.target(p))
        return sum(hits) / len(hits)


@register_env(MULTITASK)
def _multitask(num_envs: int, seed: int, **options):
    return MultiTask(**options)


# ----------------------------------------------------------------------------------------------
# 4. Teachers from stored runs, and the router
# ----------------------------------------------------------------------------------------------


def teacher_checkpoint(run_dir: str) -> str:
    """The checkpoint file of the run in ``run_dir`` (``RUN_DIR/checkpoint.pt``); ValueError if there is none."""
    run_dir = os.fspath(run_dir)
    if not os.path.isdir(run_dir):
        raise ValueError(f"teacher {run_dir!r} is not a folder; give the --out folder of a finished rltutor train run")
    path = os.path.join(run_dir, "checkpoint.pt")
    if not os.path.isfile(path):
        raise ValueError(
            f"teacher {run_dir!r} holds no checkpoint.pt; train it first (rltutor train --algo grpo --env TASK "
            f"--out {run_dir}) or give a run folder that has one"
        )
    return path


@dataclass
class Teacher:
    """A frozen TinyGPT from a stored run, and the task it was trained on (read from the run's config)."""

    model: TinyGPT
    """the teacher's language model, frozen (no grad, eval mode)"""
    task: str
    """the token task of the teacher's run (its config's ``env``)"""
    prompt_len: int
    """the length of that task's prompts, as the teacher saw them"""
    temperature: float
    """the temperature of the teacher's log-probabilities (its run's)"""
    source: str
    """where it came from (the run folder), for messages"""

    @classmethod
    def from_state(cls, state: dict, source: str = "the teacher", device=None) -> Teacher:
        """The teacher in a checkpoint already read by the safe loader (:meth:`rltutor.train.Trainer.read_checkpoint`,
        which refuses files holding anything but tensors and plain data)."""
        cfg = state["config"]
        env = cfg.get("env")
        if env not in TASKS:
            raise ValueError(
                f"teacher {source} was trained on {env!r}, not a token task ({', '.join(sorted(TASKS))}); "
                "on-policy distillation here distils TinyGPT teachers of token tasks"
            )
        weights = {k[len("model.") :]: v for k, v in state["policy"].items() if k.startswith("model.")}
        weights = {k: v for k, v in weights.items() if not k.startswith("value_head.")}
        if "wte.weight" not in weights or "wpe.weight" not in weights:
            raise ValueError(
                f"teacher {source}'s checkpoint holds no TinyGPT policy (no model.wte / model.wpe weights)"
            )
        vocab, n_embd = weights["wte.weight"].shape
        gpt = GPTConfig(
            vocab_size=int(vocab),
            block_size=int(weights["wpe.weight"].shape[0]),
            n_layer=int(cfg.get("n_layer", 2)),
            n_head=int(cfg.get("n_head", 4)),
            n_embd=int(n_embd),
        )
        model = TinyGPT(gpt)
        model.load_state_dict(weights)
        model.requires_grad_(False).eval()
        if device is not None:
            model.to(device)
        task = make_task(env, **cfg.get("env_options", {}))
        return cls(model, env, task.prompt_len, float(cfg.get("temperature", 1.0)), str(source))


@dataclass
class TeacherScores:
    """What the teachers say about one batch: each row scored by its task's teacher."""

    logp: torch.Tensor
    """(B, T) log pi_T(a_t|s_t) of the sampled tokens (0 where ``valid`` is 0)"""
    valid: torch.Tensor
    """(B, T) 1 where the teacher's context covered the position, else 0"""
    route: torch.Tensor
    """(B,) the index of the teacher that scored each row"""
    logprobs: torch.Tensor | None = None
    """(B, T, V) the teacher's full next-token log-probabilities over the student's vocabulary (for the loss)"""


class TeacherRouter:
    """Sends each row of a batch to its task's teacher: one teacher for a single task, one per task for a
    :class:`MultiTask` (read off the row's task token). Checks at construction that every task has exactly one
    teacher, that each teacher's task and prompt length fit the student's, and that its vocabulary is the tasks'."""

    def __init__(self, teachers: list[Teacher], task: TokenTask, vocab_size: int | None = None):
        if not isinstance(task, TokenTask):
            raise ValueError(
                f"teachers score token tasks; the student's task is {type(task).__name__} (no token task to route)"
            )
        self.task = task
        self.multi = isinstance(task, MultiTask)
        names = list(task.tasks) if self.multi else [task.name]
        natives = task.subtasks if self.multi else [task]
        self.vocab_size = vocab_size or getattr(task, "vocab_size", len(VOCAB))
        by_task: dict[str, Teacher] = {}
        for t in teachers:
            if t.task not in names:
                raise ValueError(
                    f"teacher {t.source} was trained on {t.task!r}, but the student's task(s): {', '.join(names)}; "
                    f"give a teacher per task, or add {t.task} to --env"
                )
            if t.task in by_task:
                raise ValueError(f"two teachers for task {t.task!r}: {by_task[t.task].source} and {t.source}; give one")
            if t.model.config.vocab_size != len(VOCAB):
                raise ValueError(
                    f"teacher {t.source} has a vocabulary of {t.model.config.vocab_size} tokens, the token tasks' has "
                    f"{len(VOCAB)} (rltutor.envs.tokens.VOCAB): the teacher must speak the student's vocabulary"
                )
            by_task[t.task] = t
        missing = [n for n in names if n not in by_task]
        if missing:
            raise ValueError(
                f"no teacher for task(s) {', '.join(missing)}: give --teacher RUN_DIR for each task of --env "
                "(a run trained on that task)"
            )
        self.teachers = [by_task[n] for n in names]
        for t, native in zip(self.teachers, natives, strict=True):
            if t.prompt_len != native.prompt_len:
                raise ValueError(
                    f"teacher {t.source} was trained on {t.task} prompts of {t.prompt_len} tokens, the student's have "
                    f"{native.prompt_len}: use the teacher's task options (its config.json's env_options)"
                )
        self.names = names

    def to(self, device) -> TeacherRouter:
        for t in self.teachers:
            t.model.to(device)
        return self

    def route(self, tokens: torch.Tensor) -> torch.Tensor:
        """The teacher index (B,) of each row of ``tokens`` (B, P + T)."""
        if not self.multi:
            return torch.zeros(tokens.shape[0], dtype=torch.long, device=tokens.device)
        return self.task.task_ids(tokens)

    @torch.no_grad()
    def score(self, batch: dict, full: bool = False) -> TeacherScores:
        """Each row's teacher log-probabilities of the sampled tokens (and, with ``full``, of every token)."""
        tokens, actions = batch["tokens"], batch["actions"]
        pl = batch["prompt_len"]
        P = int(pl.reshape(-1)[0]) if isinstance(pl, torch.Tensor) else int(pl)
        B, T = actions.shape
        route = self.route(tokens)
        logp = torch.zeros(B, T, device=actions.device)
        valid = torch.zeros(B, T, device=actions.device)
        logprobs = torch.full((B, T, self.vocab_size), OUTSIDE_LOGP, device=actions.device) if full else None
        for k, t in enumerate(self.teachers):
            rows = (route == k).nonzero().squeeze(1)
            if rows.numel() == 0:
                continue
            V_T = t.model.config.vocab_size
            seq = tokens[rows, P - t.prompt_len :]  # the teacher's own prompt, then the response (n, P_k + T)
            seq = torch.where(seq < V_T, seq, STOI["="])  # a sampled task token reads as "=" (as MultiTask scores it)
            L = min(seq.shape[1] - 1, t.model.config.block_size)  # the positions its context covers
            n = L - t.prompt_len + 1  # response tokens it can score
            logits, _ = t.model(seq[:, :L])  # (n_rows, L, V_T)
            lp = F.log_softmax(logits[:, t.prompt_len - 1 :] / t.temperature, dim=-1)  # (n_rows, n, V_T)
            a = actions[rows, :n]
            inside = a < V_T
            got = lp.gather(-1, a.clamp(max=V_T - 1).unsqueeze(-1)).squeeze(-1)
            logp[rows, :n] = torch.where(inside, got, OUTSIDE_LOGP)  # log pi_T(a_t | s_t)
            valid[rows, :n] = 1.0
            if full:
                logprobs[rows.unsqueeze(1), torch.arange(n, device=rows.device), :V_T] = lp
        return TeacherScores(logp=logp, valid=valid, route=route, logprobs=logprobs)

    def metrics(self, kl: torch.Tensor, mask: torch.Tensor, route: torch.Tensor) -> dict[str, float]:
        """``kl_to_teacher``: the mean per-token k1 estimate of KL(pi_theta || pi_T) over the scored tokens; with
        several teachers also ``kl_to_teacher_<task>`` for each (Tinker's ``teacher_kl`` and its per-dataset split)."""
        n = mask.sum()
        out = {"kl_to_teacher": float(kl.sum() / n) if n > 0 else float("nan")}
        if len(self.teachers) > 1:
            for k, name in enumerate(self.names):
                rows = route == k
                nk = mask[rows].sum()
                out[f"kl_to_teacher_{name}"] = float(kl[rows].sum() / nk) if nk > 0 else float("nan")
        return out
