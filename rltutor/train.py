"""One trainer for PPO, GRPO and their relatives: any advantage estimator x any policy loss.

Chapters: *PPO* (02), *GRPO* (03), *Long horizons in practice* (05), *the GRPO family* (10).

PPO and GRPO are not two programs. Both repeat: collect a batch, score it, turn scores into
advantages, then take a few clipped gradient steps. They differ only in settings of one
:class:`~rltutor.config.Config`: where advantages come from (``estimator``: GAE with a critic, or a
group baseline without one), how the per-token loss is reduced (``agg``), how episodes are collected
(``rollout``). :data:`rltutor.config.ALGORITHMS` names those settings; :func:`rltutor.config.make_config`
turns a name plus overrides into a ``Config``, and :func:`rltutor.build.build` makes the policy and
collector it asks for::

    cfg = make_config("grpo", env="corridor", env_options={"horizon": 200}, total_steps=50_000)
    history = Trainer(cfg).train()          # a pandas DataFrame, one row per update

One update (:meth:`Trainer.update`), with the paper's symbols (before the first, with ``critic_warmup``, the
critic alone is fitted on batches of the starting policy: :meth:`Trainer.warm_up_critic`):

1. (optional, DAPO) dynamic sampling: drop every group whose scores are all equal; its advantages
   would be 0 and it would only dilute the batch. DAPO also *refills* the batch with live groups from
   fresh prompts: for token tasks the collector does that before the update (``max_draws > 1``), so
   here there is little left to drop; vector environments only drop (the batch shrinks).
2. (optional) KL to a frozen reference policy pi_ref. ``kl_in_reward=True`` (PPO/RLHF style):
   r_t <- r_t - beta * KL_t before the estimator, so the penalty flows through GAE.
   ``kl_in_reward=False`` (GRPO style): + beta * agg(k3) added to the loss.
3. Advantages A_t from ``rltutor.advantages.compute_advantages(estimator, ...)``. Estimators without
   a critic return ``returns=None``; the trainer then computes the discounted return-to-go R_t
   itself, for the explained-variance diagnostic and, with ``critic=True``, as the critic's target
   (the KL penalty included when it is in the reward).
   A batch that carries its own ``"advantages"`` (an agent's sub-advantage mode registered with
   ``estimator=None``, such as ``ppo_gae_across``: rltutor.rollout.compaction) is not re-estimated: A_t
   are those, and the critic regresses on the batch's ``"returns"`` (that mode's lambda-return across
   the compaction boundaries), or, without them, on the return-to-go of its rewards.
   Optional whitening of A over the batch (``norm_adv="batch"``) or per minibatch (``"minibatch"``,
   CleanRL's choice). A batch's ``"row_weight"`` (B,) (an agent's ``Config.row_weight``: every episode
   counts once) weighs each row in the policy loss, the entropy bonus and the KL loss
   (``rltutor.losses.aggregate``); it is normalised once over the whole batch, never per minibatch.
   (optional, on-policy distillation, :mod:`rltutor.distill`) with ``teachers``, each row's teacher scores
   the sampled tokens and A_t <- A_t - beta * (log pi_old(a_t|s_t) - log pi_teacher(a_t|s_t)) per token
   (``opd_coef``, estimator ``opd_kl_kind``); with ``opd_loss``, + c_d * agg(D(pi_theta, pi_teacher)) over
   the full next-token distributions joins the loss in 4.
4. ``epochs`` passes over the rows, each split into ``minibatches`` random minibatches of rows. For
   each: L = L_policy(rho, A) - c_ent * H + c_v * L_value (+ beta * KL), gradient norm clipped to
   ``max_grad_norm``, one Adam step. With ``target_kl`` set, stop the epochs early once the mean
   approx KL of an epoch exceeds it (CleanRL's rule).

Implementation details (numbered as in CleanRL's docs, "The 37 Implementation Details of PPO")

1. Adam with eps = 1e-5 (fused: one kernel per step), learning rate annealed linearly to 0 over
   ``total_steps`` env steps. A resumed run given a new budget continues the line from the present lr
   down to 0 at the new budget, never raising it (``Trainer._lr``).
2. Minibatches are sets of *rows* (episodes or episode pieces), not of single steps, so a row's
   steps stay together: what aggregation modes such as "seq-mean-token-mean" need.
3. The value loss is clipped around the old values when ``vf_clip`` is set (CleanRL default 0.2)
   and reduced by token mean whatever ``agg`` is; the entropy bonus uses ``agg``.
4. A non-finite policy output or loss stops training with :class:`FloatingPointError` *before*
   the optimizer step, so the policy in memory and the last checkpoint stay good.
5. The same seed gives the same metrics on one machine (another processor may take other CPU kernels
   and round differently): one ``torch.Generator`` drives sampling and
   minibatch shuffling, the environments own seeded numpy generators, and checkpoints save all of
   them, so a resumed run continues exactly like the uninterrupted one.
   A checkpoint holds only tensors and plain data (numpy arrays become tensors, see
   ``_to_plain``) and is read with ``torch.load(..., weights_only=True)``: loading a crafted file
   cannot run code, it is refused.

6. Metrics per update (``Trainer.history``, one dict each): ``env_steps``; ``episode_return`` (mean
   return of the episodes finished in this update) and ``return_last10``; ``policy_loss``,
   ``value_loss``, ``entropy``, ``approx_kl`` (k3 estimate of KL(pi_old || pi)), ``clip_frac``,
   ``grad_norm`` (before clipping), all averaged over the minibatch steps; ``explained_variance``
   1 - Var[R - V] / Var[R]; ``zero_std_frac`` (groups of >= 2 rows whose scores are all equal);
   ``kl_ref`` (when ``kl_coef > 0``); ``kl_to_teacher`` (with teachers: the mean k1 estimate of
   KL(pi || pi_teacher) over the scored tokens, and ``kl_to_teacher_<task>`` per task with several) and
   ``distill_loss`` (with ``opd_loss``); ``rows``, ``epochs_run``, ``lr`` and ``time_s`` (wall time);
   then whatever the collector reports in ``info["metrics"]`` (for token tasks: ``score``,
   ``accuracy``, ``response_length``, ``sample_entropy``, ``wrong_length``, ``truncated``,
   ``distinct_correct``, ``pass_at_1`` ... ``pass_at_G``, ``sample_time``, ``draws``) and, every
   ``eval_every`` updates, its held-out ``evaluate`` metrics (``greedy_accuracy``). Each row leaves through
   ``history`` (and ``metrics.csv`` on the command line).

Deviations: for vector environments DAPO's dynamic sampling only drops dead groups (the batch
shrinks); token tasks refill (see 1). The value loss always uses token-mean (see 3). Unlike
CleanRL, minibatches are rows, not single steps (see 2); with long episodes that makes each
minibatch more correlated.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import math
import os
import pickle
import random
import re
import signal
import sys
import threading
import time

import numpy as np
import torch

from rltutor.advantages import compute_advantages, dead_groups, discounted_returns, whiten
from rltutor.build import build
from rltutor.config import Config
from rltutor.distill import (
    Teacher,
    TeacherRouter,
    divergence,
    opd_shift,
    opd_signal,
    student_logprobs,
    teacher_checkpoint,
)
from rltutor.losses import aggregate, kl_penalty, policy_loss, value_loss
from rltutor.utils import check_int, explained_variance, get_device, seed_everything, write_atomic

__all__ = ["Trainer", "CHECKPOINT_FORMAT"]

CHECKPOINT_FORMAT = "rltutor-checkpoint-v2"
"""v2: tensors and plain data only, read with ``weights_only=True`` (v1 held pickled numpy arrays and
gymnasium environments, which cannot be loaded without trusting the file)."""

_NDARRAY = "__ndarray__"  # marks a numpy array (or scalar) stored as a tensor in a checkpoint


def _to_plain(x):
    """``x`` with every numpy array and numpy scalar replaced by ``{_NDARRAY: tensor, "scalar": bool}``,
    through dicts, lists and tuples: what ``torch.load(..., weights_only=True)`` can read back. A container
    without numpy inside is returned as it is (a module's state_dict keeps its ``_metadata``)."""
    if isinstance(x, np.ndarray | np.generic):
        a = np.asarray(x)
        if a.dtype.kind not in "biuf":
            raise ValueError(f"a checkpoint stores numeric numpy arrays only, got dtype {a.dtype}")
        return {_NDARRAY: torch.from_numpy(np.array(a, order="C")), "scalar": isinstance(x, np.generic)}  # a copy
    return _rebuild(x, _to_plain)


def _from_plain(x):
    """The inverse of :func:`_to_plain`: tagged tensors become numpy arrays (or scalars) again."""
    if isinstance(x, dict) and set(x) == {_NDARRAY, "scalar"} and isinstance(x[_NDARRAY], torch.Tensor):
        a = x[_NDARRAY].numpy().copy()
        return a[()] if x["scalar"] else a
    return _rebuild(x, _from_plain)


def _rebuild(x, fn):
    """``fn`` applied to the items of a dict, list or tuple ``x``; ``x`` itself if nothing changed."""
    if isinstance(x, dict):
        items = [(k, fn(v)) for k, v in x.items()]
        same = all(new is old for (_, new), old in zip(items, x.values(), strict=True))
        return x if same else type(x)(items)
    if isinstance(x, list | tuple):
        items = [fn(v) for v in x]
        same = all(new is old for new, old in zip(items, x, strict=True))
        if same:
            return x
        return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)  # a namedtuple takes fields
    return x


def _finite(**tensors: torch.Tensor | None) -> str | None:
    """Name of the first tensor holding NaN/inf, or None."""
    for name, t in tensors.items():
        if t is not None and not torch.isfinite(t).all():
            return name
    return None


class Trainer:
    """The one training loop. ``Trainer(config)`` builds policy and collector from the config;
    ``Trainer(config, policy, collector)`` uses yours (e.g. a language model and its sampler)."""

    def __init__(self, config: Config, policy=None, collector=None):
        if not isinstance(config, Config):
            raise ValueError(
                f"config must be an rltutor.config.Config, got {type(config).__name__}; "
                "use rltutor.config.make_config('ppo', ...)"
            )
        if (policy is None) != (collector is None):
            raise ValueError("give both policy and collector, or neither (then both are built from the config)")
        self.config = config
        if config.torch_threads is not None:
            torch.set_num_threads(config.torch_threads)
        self.generator = seed_everything(config.seed)  # drives action sampling and minibatch shuffling
        if policy is None:
            policy, collector = build(config)
        self.device = get_device(config.device)
        self.policy = policy.to(self.device)
        self.collector = collector
        self._bounded = "max_steps" in inspect.signature(collector.collect).parameters  # see step()
        self.budget: int | None = None  # the env steps train() runs to (None: config.total_steps)
        # One fused kernel per step instead of a loop over parameters: 4x faster for small MLPs on CPU.
        fused = self.device.type in ("cpu", "cuda")
        self.optimizer = torch.optim.Adam(self.policy.parameters(), lr=config.lr, eps=1e-5, fused=fused)
        self.ref_policy = None
        if config.kl_coef > 0:  # a frozen copy of the initial policy: pi_ref
            own = getattr(self.policy, "reference", None)  # a policy's own pi_ref (models/hf.py: LoRA's adapter off)
            self.ref_policy = own() if own else copy.deepcopy(self.policy).requires_grad_(False).eval()
        self.teachers = self._load_teachers() if config.teachers else None  # on-policy distillation: pi_teacher
        self.update_idx = 0  # updates done
        self.env_steps = 0  # environment steps collected
        self.elapsed = 0.0  # wall-clock seconds spent in step()
        self.history: list[dict] = []  # one dict of metrics per update
        self.episodes: list[dict] = []  # every finished episode: env_steps, return, length, time_s
        # The lr schedule: linear from lr_anchor at env step lr_anchor_steps down to 0 at lr_horizon
        # (see _lr); a new budget moves the anchor to the present, never raising the lr.
        self.lr_anchor_steps, self.lr_anchor, self.lr_horizon = 0, config.lr, config.total_steps
        self.last_saved: tuple[int, int] | None = None  # (update_idx, env_steps) of the last save()
        self.warmup_history: list[dict] = []  # one dict per critic warm-up batch (warm_up_critic)

    # ------------------------------------------------------------------------------------------
    # One update
    # ------------------------------------------------------------------------------------------

    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """Advantages, then ``epochs`` x ``minibatches`` gradient steps on one batch; returns metrics."""
        c = self.config
        batch = {k: v.to(self.device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
        missing = [k for k in ("actions", "logp", "mask", "rewards", "group_ids") if k not in batch]
        if missing:
            raise ValueError(f"the batch lacks {missing}; a collector must return the keys listed in rltutor.rollout")
        bad = _finite(logp=batch["logp"], rewards=batch["rewards"], values=batch.get("values"))
        if bad:
            raise FloatingPointError(
                f"update {self.update_idx}: the collected {bad} hold NaN or inf; training "
                "stopped before any parameter changed (check the environment's rewards "
                "and the policy's outputs; try a lower lr)"
            )
        metrics: dict[str, float] = {}

        # 1. Dead groups (all scores equal -> every advantage 0) and, for DAPO, dropping them.
        scores = (batch["rewards"] * batch["mask"]).sum(1)  # (B,) one score per row
        dead, inv, counts = dead_groups(scores, batch["group_ids"])  # (n_groups,), (B,), (n_groups,)
        real = counts >= 2  # groups of one (PPO's episode pieces) are not groups
        metrics["zero_std_frac"] = float(dead[real].float().mean()) if real.any() else float("nan")
        if c.dynamic_sampling and real.any():
            keep = ~dead[inv]  # (B,) rows of live groups
            if not keep.any():
                return {**metrics, "rows": 0.0}  # nothing to learn from: skip the update
            batch = {
                k: v[keep] if isinstance(v, torch.Tensor) and v.shape[:1] == keep.shape else v for k, v in batch.items()
            }
        mask, rewards = batch["mask"], batch["rewards"]
        metrics["rows"] = float(mask.shape[0])

        # 2. KL to the reference policy: in the reward (flows through the estimator) or in the loss.
        ref_logp = None
        if c.kl_coef > 0:
            ref_logp = batch.get("ref_logp")
            if ref_logp is None:
                with torch.no_grad():
                    ref_logp = self.ref_policy.evaluate(batch)["logp"]  # log pi_ref(a_t|s_t), (B, T)
            kl = kl_penalty(batch["logp"], ref_logp, c.kl_kind) * mask  # (B, T) under the sampling policy
            metrics["kl_ref"] = float(kl.sum() / mask.sum())
            if c.kl_in_reward:
                rewards = rewards - c.kl_coef * kl  # r_t <- r_t - beta * KL_t

        # 3. Advantages A_t and returns R_t (a sub-advantage mode may have computed both: ppo_gae_across).
        values = batch.get("values")
        if "advantages" in batch:
            adv, returns = batch["advantages"], batch.get("returns")
        else:
            adv, returns = compute_advantages(
                c.estimator,
                rewards=rewards,
                mask=mask,
                values=values,
                group_ids=batch["group_ids"],
                gamma=c.gamma,
                lam=c.lam,
            )
        if returns is None:
            returns = discounted_returns(rewards, mask, c.gamma)
        if c.norm_adv == "batch":
            adv = whiten(adv, mask)
        if values is not None:
            metrics["explained_variance"] = explained_variance(values, returns, mask)

        # 3b. On-policy distillation (rltutor.distill): each row's teacher scores the sampled tokens, and
        # A_t <- A_t - beta * k(log pi_old(a_t|s_t) - log pi_teacher(a_t|s_t)), per token, after the estimator.
        scored = None
        if self.teachers is not None:
            scored = self.teachers.score(batch, full=c.opd_loss != "none")
            counted = mask * scored.valid  # (B, T) the tokens a teacher's context covered
            kl_teacher = opd_signal(batch["logp"], scored.logp, counted, "k1")  # (B, T) log pi_old - log pi_T
            metrics.update(self.teachers.metrics(kl_teacher, counted, scored.route))
            if c.opd_coef > 0:
                adv = opd_shift(adv, batch["logp"], scored.logp, counted, c.opd_coef, c.opd_kl_kind)

        # 4. Epochs of minibatch gradient steps over rows.
        params = [p for p in self.policy.parameters() if p.requires_grad]
        sums: dict[str, list[float]] = {
            k: [] for k in ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_frac", "grad_norm", "loss")
        }
        epochs_run = 0
        distill_losses: list[float] = []  # the divergence to the teacher, per minibatch step (opd_loss)
        for _epoch in range(c.epochs):
            epoch_kl = []
            for idx, mb in self._minibatches(batch):
                m = mb["mask"]
                if m.sum() < 1:
                    continue
                a = adv[idx]
                if c.norm_adv == "minibatch" and m.sum() > 1:
                    a = whiten(a, m)
                out = self.policy.evaluate(mb)  # logp, entropy, values at the stored actions
                bad = _finite(logp=out["logp"], entropy=out["entropy"], values=out.get("values"))
                if bad:
                    raise FloatingPointError(
                        f"update {self.update_idx}: the policy's {bad} became NaN or inf; training stopped before "
                        "the optimizer step, so the last checkpoint is untouched (try a lower lr or "
                        "max_grad_norm)"
                    )
                pl, st = policy_loss(
                    out["logp"],
                    mb["logp"],
                    a,
                    m,
                    kind=c.loss,
                    clip_low=c.clip_low,
                    clip_high=c.clip_high,
                    dual_clip=c.dual_clip,
                    agg=c.agg,
                    row_weight=mb.get("row_weight"),  # None: every row as agg says
                )
                entropy = aggregate(out["entropy"], m, c.agg, row_weight=mb.get("row_weight"))  # H[pi(.|s_t)]
                loss = pl - c.ent_coef * entropy  # L = L_pi - c_ent * H
                vl = None
                if self.policy.has_critic:
                    vl = value_loss(
                        out["values"],
                        mb["values"] if "values" in mb else out["values"].detach(),
                        returns[idx],
                        m,
                        clip=c.vf_clip if "values" in mb else None,
                    )
                    loss = loss + c.vf_coef * vl  # + c_v * 1/2 (V - R)^2
                if ref_logp is not None and not c.kl_in_reward:
                    kl_mat = kl_penalty(out["logp"], ref_logp[idx], c.kl_kind)
                    loss = loss + c.kl_coef * aggregate(kl_mat, m, c.agg, row_weight=mb.get("row_weight"))
                if scored is not None and c.opd_loss != "none" and (m * scored.valid[idx]).sum() > 0:
                    d = divergence(  # D(pi_theta(.|s_t), pi_teacher(.|s_t)) per state, (b, T)
                        student_logprobs(self.policy, mb), scored.logprobs[idx], c.opd_loss, c.opd_jsd_beta, c.opd_top_k
                    )
                    dl = aggregate(d, m * scored.valid[idx], c.agg)
                    loss = loss + c.opd_loss_coef * dl  # + c_d * agg(D)
                    distill_losses.append(dl.item())
                if not torch.isfinite(loss):
                    raise FloatingPointError(
                        f"update {self.update_idx}: the loss is {loss.item()} (policy loss {pl.item()}, value loss "
                        f"{None if vl is None else vl.item()}); training stopped before the optimizer step, so "
                        "the last checkpoint is untouched (try a lower lr or max_grad_norm)"
                    )
                scaler = getattr(self.policy, "grad_scaler", None)  # models/hf.py: fp16 (a T4) scales the loss
                self.optimizer.zero_grad(set_to_none=True)
                (scaler.scale(loss) if scaler else loss).backward()
                if scaler:
                    scaler.unscale_(self.optimizer)
                max_norm = c.max_grad_norm if c.max_grad_norm is not None else math.inf
                grad_norm = torch.nn.utils.clip_grad_norm_(params, max_norm, foreach=True)  # ||g|| before clipping
                if scaler:
                    scaler.step(self.optimizer)  # skipped when a gradient overflowed fp16
                    scaler.update()
                else:
                    self.optimizer.step()
                for k, v in (
                    ("policy_loss", pl.item()),
                    ("value_loss", math.nan if vl is None else vl.item()),
                    ("entropy", entropy.item()),
                    ("approx_kl", st["approx_kl"]),
                    ("clip_frac", st["clip_frac"]),
                    ("grad_norm", grad_norm.item()),
                    ("loss", loss.item()),
                ):
                    sums[k].append(v)
                epoch_kl.append(st["approx_kl"])
            epochs_run += 1
            if c.target_kl is not None and epoch_kl and np.mean(epoch_kl) > c.target_kl:
                break  # early stop: the policy moved far enough from pi_old
        for k, v in sums.items():
            metrics[k] = float(np.mean(v)) if v else float("nan")
        metrics["epochs_run"] = float(epochs_run)
        if scored is not None and c.opd_loss != "none":
            metrics["distill_loss"] = float(np.mean(distill_losses)) if distill_losses else float("nan")
        return metrics

    def _minibatches(self, batch: dict):
        """One epoch's minibatches of rows: a fresh permutation from the trainer's generator cut into
        ``minibatches`` parts, each yielded as its row indices and the batch's (B, ...) tensors at them (other
        entries as they are). Rows, not steps, so a row's steps stay together (implementation detail 2)."""
        B = batch["mask"].shape[0]
        size = math.ceil(B / self.config.minibatches)
        perm = torch.randperm(B, generator=self.generator).to(self.device)
        for start in range(0, B, size):
            idx = perm[start : start + size]
            yield (
                idx,
                {k: v[idx] if isinstance(v, torch.Tensor) and v.shape[:1] == (B,) else v for k, v in batch.items()},
            )

    def _load_teachers(self) -> TeacherRouter:
        """On-policy distillation's teachers (rltutor.distill): each ``config.teachers`` run's checkpoint read by the
        safe loader (:meth:`read_checkpoint`: tensors and plain data only), its task from its config, routed by the
        student's task (one teacher per task)."""
        teachers = [
            Teacher.from_state(self.read_checkpoint(teacher_checkpoint(d)), source=d, device=self.device)
            for d in self.config.teachers
        ]
        model = getattr(self.policy, "model", None)
        vocab = model.config.vocab_size if model is not None else None
        return TeacherRouter(teachers, getattr(self.collector, "task", None), vocab_size=vocab)

    # ------------------------------------------------------------------------------------------
    # The loop
    # ------------------------------------------------------------------------------------------

    def _lr(self) -> float:
        """The learning rate of the next update.

        With ``anneal_lr``: lr_k = lr_0 * (1 - steps_k / total_steps), linear to 0 at the budget. When the
        budget changes (``Trainer.load(path, total_steps=N)``, ``rltutor train --resume --steps N``), the
        line restarts from the present: from the lr the next update would have had (or, once the old
        budget is spent and that is 0, the lr of the last update) down to 0 at the new budget. So a new
        budget never raises the lr above its value at the checkpoint, and the same budget changes nothing.
        """
        c = self.config
        if not c.anneal_lr:
            return c.lr
        if self.lr_horizon != c.total_steps:  # a new budget: re-anchor the line at the present
            lr_now = self._annealed(self.env_steps)
            if lr_now <= 0 and self.history:
                lr_now = float(self.history[-1]["lr"])
            self.lr_anchor_steps, self.lr_anchor, self.lr_horizon = self.env_steps, lr_now, c.total_steps
        return self._annealed(self.env_steps)

    def _annealed(self, steps: int) -> float:
        """lr_anchor * (1 - (steps - anchor_steps) / (horizon - anchor_steps)), floored at 0."""
        span = self.lr_horizon - self.lr_anchor_steps
        if span <= 0:
            return 0.0
        return self.lr_anchor * max(0.0, 1.0 - (steps - self.lr_anchor_steps) / span)

    def warm_up_critic(self) -> list[dict]:
        """Value pretraining before the first update (``critic_warmup`` batches; VC-PPO, Yuan et al. 2025,
        arXiv:2503.01491, and VAPO fit the value model on the initial policy's rollouts before PPO starts, so
        that the first advantages are not those of an untrained V).

        For each batch of the starting policy: the return-to-go R_t (``gamma``) is the target, the critic's
        values at collection give the explained variance *before* this batch is fitted (a held-out reading of
        how good V is), then ``epochs`` x ``minibatches`` steps of its own Adam on the value loss
        1/2 (V - R)^2 (token mean), moving only the policy's ``critic_parameters()``: a separate critic, or a
        value head over the actor's frozen trunk. The policy does not change; the env steps count toward the
        budget. Returns (and keeps in ``warmup_history``) one dict per batch."""
        c = self.config
        if not hasattr(self.policy, "critic_parameters"):
            raise ValueError(
                f"critic_warmup needs a policy with critic_parameters() (the package's MLP and language-model "
                f"policies have it), got {type(self.policy).__name__}; set critic_warmup=0"
            )
        params = self.policy.critic_parameters()
        if not params:
            raise ValueError("critic_warmup needs a critic, and this policy has none; set critic_warmup=0")
        critic = {id(p) for p in params}
        frozen = [p for p in self.policy.parameters() if id(p) not in critic and p.requires_grad]
        for p in frozen:
            p.requires_grad_(False)  # the actor's weights (and a head's shared trunk) stay as they are
        opt = torch.optim.Adam(params, lr=c.lr, eps=1e-5)
        rows = []
        try:
            for i in range(c.critic_warmup):
                self.policy.eval()
                batch, info = self.collector.collect(self.policy, self.generator)
                self.policy.train()
                self.env_steps += int(info["env_steps"])
                batch = {k: v.to(self.device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
                mask = batch["mask"]
                returns = discounted_returns(batch["rewards"], mask, c.gamma)  # R_t, the value target
                row = {"batch": i + 1, "env_steps": self.env_steps}
                if "values" in batch:
                    row["explained_variance"] = explained_variance(batch["values"], returns, mask)
                losses = []
                for _epoch in range(c.epochs):
                    for idx, mb in self._minibatches(batch):
                        if mb["mask"].sum() < 1:
                            continue
                        values = self.policy.evaluate(mb)["values"]
                        vl = value_loss(values, values.detach(), returns[idx], mb["mask"], clip=None)
                        if not torch.isfinite(vl):
                            raise FloatingPointError(
                                f"critic warm-up batch {i + 1}: the value loss is {vl.item()}; try a lower lr"
                            )
                        opt.zero_grad(set_to_none=True)
                        vl.backward()
                        if c.max_grad_norm is not None:
                            torch.nn.utils.clip_grad_norm_(params, c.max_grad_norm)
                        opt.step()
                        losses.append(vl.item())
                row["value_loss"] = float(np.mean(losses)) if losses else float("nan")
                rows.append(row)
        finally:
            for p in frozen:
                p.requires_grad_(True)
        self.warmup_history.extend(rows)
        return rows

    def step(self) -> dict:
        """Collect one batch, update once, append and return the metrics. Before the first update, with
        ``critic_warmup``, the critic is fitted first (:meth:`warm_up_critic`).

        A collector whose batch size depends on the policy (an agent's: its episodes' turns and commands
        grow as it learns) takes ``max_steps``, the env steps left before the budget (:meth:`train`'s, else
        the config's), and starts no new round of turns beyond it: a run then ends within its budget plus
        one round, instead of one batch of any size."""
        c = self.config
        t0 = time.perf_counter()
        if c.critic_warmup and self.update_idx == 0 and not self.warmup_history:
            self.warm_up_critic()
        lr = self._lr()
        for g in self.optimizer.param_groups:
            g["lr"] = lr  # linear annealing: lr_k = lr_0 * (1 - steps / total_steps)
        self.policy.eval()
        if self._bounded:
            left = max(1, (c.total_steps if self.budget is None else self.budget) - self.env_steps)
            batch, info = self.collector.collect(self.policy, self.generator, max_steps=left)
        else:
            batch, info = self.collector.collect(self.policy, self.generator)
        self.policy.train()
        self.env_steps += int(info["env_steps"])
        metrics = self.update(batch)
        self.update_idx += 1
        self.elapsed += time.perf_counter() - t0
        rets = [float(r) for r in info["episode_returns"]]
        lens = info.get("episode_lengths", [math.nan] * len(rets))
        for r, n in zip(rets, lens, strict=True):
            self.episodes.append({"env_steps": self.env_steps, "return": r, "length": n, "time_s": self.elapsed})
        recent = [e["return"] for e in self.episodes[-10:]]
        row = {
            "update": self.update_idx,
            "env_steps": self.env_steps,
            "episode_return": float(np.mean(rets)) if rets else float("nan"),
            "episodes": len(rets),
            "return_last10": float(np.mean(recent)) if recent else float("nan"),
            **metrics,
            "lr": lr,
            "time_s": self.elapsed,
        }
        clash = sorted(set(info.get("metrics", {})) & set(row))
        if clash:
            raise ValueError(f"the collector's metrics {clash} would overwrite the trainer's; rename them")
        row.update(info.get("metrics", {}))  # the collector's own (accuracy, draws...)
        if c.eval_every and (self.update_idx == 1 or self.update_idx % c.eval_every == 0):
            row.update(self.collector.evaluate(self.policy))  # held-out metrics, e.g. greedy_accuracy
        self.history.append(row)
        return row

    def train(
        self,
        total_steps: int | None = None,
        progress: bool = True,
        checkpoint: str | None = None,
        checkpoint_every: int = 10,
        metrics: str | None = None,
    ):
        """Run until ``total_steps`` env steps (default: the config's); return the history as a DataFrame.

        With ``checkpoint`` set, save there every ``checkpoint_every`` updates and at the end; a Ctrl-C
        (SIGINT) then lets the current update finish, saves, and raises :class:`KeyboardInterrupt` (a
        second Ctrl-C stops at once, keeping the last checkpoint). With ``metrics`` set, each update's
        row is appended to that CSV file and flushed as it is made; the file always equals
        ``history_frame().to_csv(metrics, index=False)`` up to the last update (rewritten whole when a
        new column appears, and at every checkpoint and at the end).
        """
        from tqdm.auto import tqdm

        if checkpoint and (
            isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, int) or checkpoint_every < 1
        ):
            raise ValueError(
                f"checkpoint_every must be an integer >= 1 (updates between checkpoints), got {checkpoint_every!r}"
            )
        total = self.config.total_steps if total_steps is None else int(total_steps)
        self.budget = total
        log = _CsvLog(metrics) if metrics else None
        if log:
            log.rewrite(self.history)  # start from the history this trainer holds (a resumed run's)
        with (
            _deferred_interrupt(enabled=bool(checkpoint)) as interrupted,
            tqdm(
                total=total,
                initial=min(self.env_steps, total),
                disable=not progress,
                unit="step",
                desc=f"{self.config.algo} {self.config.env}",
            ) as bar,
        ):
            while self.env_steps < total and not interrupted():
                before = self.env_steps
                row = self.step()
                if log:
                    log.append(self.history)
                bar.update(min(self.env_steps, total) - min(before, total))
                bar.set_postfix(ret=f"{row['return_last10']:.3g}", refresh=False)
                if checkpoint and self.update_idx % checkpoint_every == 0:
                    self.save(checkpoint)
                    if log:
                        log.rewrite(self.history)
            if checkpoint:
                self.save(checkpoint)
            if log:
                log.rewrite(self.history)
            if interrupted():
                raise KeyboardInterrupt(f"interrupted after update {self.update_idx}; saved {checkpoint}")
        return self.history_frame()

    def history_frame(self):
        import pandas as pd

        return pd.DataFrame(self.history)

    # ------------------------------------------------------------------------------------------
    # Checkpoints
    # ------------------------------------------------------------------------------------------

    def _scaler(self):
        """The policy's fp16 gradient scaler (rltutor.models.hf: a T4), or None."""
        return getattr(self.policy, "grad_scaler", None)

    def state_dict(self) -> dict:
        """Everything a resumed run needs: config, weights, optimizer, every random state, the history; with
        fp16, the gradient scaler's state (its loss scale and growth tracker: plain numbers).

        Tensors and plain data only (numpy arrays as tagged tensors, see ``_to_plain``), so that
        :meth:`read_checkpoint` can load it with ``weights_only=True``."""
        return _to_plain(
            {
                "format": CHECKPOINT_FORMAT,
                "config": self.config.to_dict(),
                "policy": self.policy.state_dict(),
                "ref_policy": None if self.ref_policy is None else self.ref_policy.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "grad_scaler": None if self._scaler() is None else self._scaler().state_dict(),  # fp16's loss scale
                "generator": self.generator.get_state(),
                "torch_rng": torch.get_rng_state(),
                "numpy_rng": np.random.get_state(),
                "python_rng": random.getstate(),
                "collector": self.collector.state_dict(),
                "update_idx": self.update_idx,
                "env_steps": self.env_steps,
                "elapsed": self.elapsed,
                "history": self.history,
                "episodes": self.episodes,
                "lr_schedule": {
                    "anchor_steps": self.lr_anchor_steps,
                    "anchor_lr": self.lr_anchor,
                    "horizon": self.lr_horizon,
                },
            }
        )

    def save(self, path: str) -> None:
        """Write a checkpoint atomically (a temporary file, then a rename): a crash never leaves half a
        file, and a failed or interrupted save removes its temporary file."""
        path = os.fspath(path)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        state = self.state_dict()
        write_atomic(path, lambda tmp: torch.save(state, tmp))
        self.last_saved = (self.update_idx, self.env_steps)

    @staticmethod
    def read_checkpoint(path: str) -> dict:
        """Read and sanity-check a checkpoint file; raise ValueError if it is corrupt, foreign or unsafe.

        The file is read with ``torch.load(..., weights_only=True)``: only tensors and plain data load,
        so a file holding any other Python object (which unpickling could run as code) is refused
        before anything in it runs.
        """
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
        except FileNotFoundError:
            raise
        except Exception as e:  # truncated file, random bytes, an object that is not plain data...
            text = str(e)
            found = re.search(r"GLOBAL (\S+) was not an allowed global", text)
            if isinstance(e, pickle.UnpicklingError) and found:
                raise ValueError(
                    f"{path} is not a safe rltutor checkpoint: it holds a Python object ({found.group(1)}) "
                    "other than tensors and plain data, which loading could run as code; refused, nothing in "
                    f"it ran (a checkpoint of format {CHECKPOINT_FORMAT!r} holds none; an older rltutor's "
                    "cannot be read safely: retrain)"
                ) from None
            detail = re.search(r"WeightsUnpickler error:\s*(\S[^\n]*)", text)
            lines = text.strip().splitlines()
            first = detail.group(1) if detail else (lines[0] if lines else "")
            raise ValueError(
                f"{path} is not a readable rltutor checkpoint ({type(e).__name__}: {first.strip()}); "
                "it may be truncated or corrupt: use an earlier checkpoint"
            ) from None
        if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
            raise ValueError(f"{path} is not an rltutor checkpoint (expected format {CHECKPOINT_FORMAT!r})")
        keys = ("config", "policy", "optimizer", "generator", "collector", "update_idx", "env_steps", "history")
        missing = [k for k in keys if k not in state]
        if missing:
            raise ValueError(f"{path} lacks {missing}: it is incomplete; use an earlier checkpoint")
        if not isinstance(state["config"], dict):
            raise ValueError(f"{path} holds a config of type {type(state['config']).__name__}, not a dict: corrupt")
        return _from_plain(state)

    def load_state_dict(self, state: dict) -> None:
        """Restore everything from :meth:`state_dict`; checks first, so a mismatch changes nothing."""
        mine = self.config.to_dict()
        theirs = state["config"]
        differ = sorted(
            k
            for k in mine
            if k not in ("total_steps",)
            and k in theirs
            and mine[k] != theirs[k]
            and not (isinstance(mine[k], tuple) and list(mine[k]) == list(theirs[k]))
        )
        if differ:
            raise ValueError(
                f"the checkpoint was made with a different config ({', '.join(differ)} differ, e.g. "
                f"{differ[0]}={theirs[differ[0]]!r} vs {mine[differ[0]]!r}); resume with its config "
                "(Trainer.load(path))"
            )
        own = self.policy.state_dict()
        ckpt = state["policy"]
        wrong = sorted(set(own) ^ set(ckpt)) + sorted(k for k in own if k in ckpt and own[k].shape != ckpt[k].shape)
        if wrong:
            raise ValueError(
                f"the checkpoint's policy does not fit this one (parameters {wrong[:4]} are missing "
                "or have other shapes); nothing was loaded"
            )
        # Everything checked: now load.
        self.policy.load_state_dict(ckpt)
        if self.ref_policy is not None and state.get("ref_policy") is not None:
            self.ref_policy.load_state_dict(state["ref_policy"])
        self.optimizer.load_state_dict(state["optimizer"])
        if self._scaler() is not None and state.get("grad_scaler"):  # fp16: the loss scale and its growth tracker
            self._scaler().load_state_dict(state["grad_scaler"])
        self.generator.set_state(state["generator"])
        torch.set_rng_state(state["torch_rng"])
        np.random.set_state(state["numpy_rng"])
        random.setstate(state["python_rng"])
        self.collector.load_state_dict(state["collector"])
        self.update_idx, self.env_steps = int(state["update_idx"]), int(state["env_steps"])
        self.elapsed = float(state.get("elapsed", 0.0))
        self.history = list(state["history"])
        self.episodes = list(state.get("episodes", []))
        self.config.total_steps = int(theirs.get("total_steps", self.config.total_steps))
        sched = state.get("lr_schedule") or {
            "anchor_steps": 0,
            "anchor_lr": self.config.lr,
            "horizon": self.config.total_steps,
        }
        self.lr_anchor_steps, self.lr_anchor = int(sched["anchor_steps"]), float(sched["anchor_lr"])
        self.lr_horizon = int(sched["horizon"])
        self.last_saved = (self.update_idx, self.env_steps)

    @classmethod
    def load(cls, path: str, policy=None, collector=None, **overrides) -> Trainer:
        """A trainer that continues exactly where the checkpoint at ``path`` stopped.

        ``overrides`` may change only ``total_steps`` (to train longer; the lr schedule then continues
        from its present value, see ``_lr``).
        """
        return cls.from_state(cls.read_checkpoint(path), policy, collector, source=str(path), **overrides)

    @classmethod
    def from_state(
        cls, state: dict, policy=None, collector=None, source: str = "the checkpoint", **overrides
    ) -> Trainer:
        """:meth:`load` from a state already read with :meth:`read_checkpoint`."""
        for k in overrides:
            if k != "total_steps":
                raise ValueError(f"only total_steps may be overridden when resuming, got {k!r}")
        try:
            config = Config.from_dict(state["config"])
        except (TypeError, ValueError) as e:
            raise ValueError(f"{source} holds a config this version cannot use: {e}") from None
        if "total_steps" in overrides:
            budget = check_int("total_steps", overrides["total_steps"], 1)
            done = int(state["env_steps"])
            if budget < done:
                raise ValueError(
                    f"a budget of total_steps={budget} (--steps) is below the {done} environment steps {source} "
                    f"has already done (its budget: {config.total_steps}); give at least {done} to train longer, "
                    "or leave it out to finish the run's own budget"
                )
        trainer = cls(config, policy, collector)
        trainer.load_state_dict(state)
        if "total_steps" in overrides:
            trainer.config.total_steps = budget
        return trainer


class _CsvLog:
    """metrics.csv written as the run goes: one appended, flushed row per update; the whole file
    rewritten (atomically) from the history when a new column appears and on request, so that it always
    equals ``pandas.DataFrame(history).to_csv(path, index=False)``. A failed write (a full disk) leaves
    the file as it was: a half-appended row is cut off again, a failed rewrite removes its temporary file."""

    def __init__(self, path: str):
        self.path = os.fspath(path)
        self.columns: list[str] | None = None

    def rewrite(self, history: list[dict]) -> None:
        import pandas as pd

        frame = pd.DataFrame(history)
        write_atomic(self.path, lambda tmp: frame.to_csv(tmp, index=False))
        self.columns = list(frame.columns)

    def append(self, history: list[dict]) -> None:
        import pandas as pd

        row = history[-1]
        if self.columns is None or not self.columns or set(row) - set(self.columns):
            self.rewrite(history)  # a new column: the header changes, so write the whole history
            return
        data = pd.DataFrame([row], columns=self.columns).to_csv(header=False, index=False).encode()
        with open(self.path, "ab", buffering=0) as f:
            end = f.seek(0, os.SEEK_END)
            try:
                done = 0
                while done < len(data):  # an unbuffered write may write part of the row
                    done += f.write(data[done:])
            except BaseException:  # a full disk mid-row: cut the half row, so the file stays whole rows
                with contextlib.suppress(OSError):
                    os.truncate(self.path, end)
                raise


@contextlib.contextmanager
def _deferred_interrupt(enabled: bool = True):
    """While active, a first Ctrl-C (SIGINT) only sets a flag (the loop finishes its update and saves);
    a second one raises KeyboardInterrupt at once. Yields a function that says whether one came."""
    hit: list[bool] = []
    if not enabled or threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return

    def handler(signum, frame):
        if hit:
            raise KeyboardInterrupt
        hit.append(True)
        print(
            "\nrltutor: stopping after this update to save a checkpoint (Ctrl-C again to stop at once)", file=sys.stderr
        )

    old = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, handler)
    try:
        yield lambda: bool(hit)
    finally:
        signal.signal(signal.SIGINT, old if old is not None else signal.SIG_DFL)
