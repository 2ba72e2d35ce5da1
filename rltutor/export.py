"""A run's settings in the words of verl, TRL and slime: ``rltutor export --to verl|trl|slime RUN_DIR``.

Chapter: 16, going to scale. Each :class:`~rltutor.config.Config` field is either mapped to the target's own
setting (a :class:`Setting`, printed ``name=value``) or named in a :class:`Note` that says why there is no
equivalent, or why none is needed (the target does that by default, or the field does nothing in this run).
Every field of a run's config.json is accounted for by one or the other (:meth:`Export.unaccounted` is empty;
the tests check it for every preset).

::

    ex = export(make_config("dapo", **lm_settings("dapo")), "verl")
    print("\\n".join(ex.lines()))         # actor_rollout_ref.rollout.n=8 ... and "# no equivalent: ..." lines
    GRPOConfig(**export(cfg, "trl").kwargs())

Targets, pinned, and where each mapping was read (the test suite checks the names against the packages):

* **verl 0.9.1**, Hydra overrides of its PPO trainer (``python -m verl.trainer.main_ppo KEY=VALUE ...``).
  Names: `_generated_ppo_trainer.yaml
  <https://github.com/volcengine/verl/blob/v0.9.1/verl/trainer/config/_generated_ppo_trainer.yaml>`_;
  estimators, losses, aggregation, KL estimators: `core_algos.py
  <https://github.com/volcengine/verl/blob/v0.9.1/verl/trainer/ppo/core_algos.py>`_ (``AdvantageEstimator``,
  ``register_policy_loss("vanilla" | "gspo" | "geo_mean" | "cispo" | "gpg")``, ``agg_loss``, ``kl_penalty``);
  the critic switch ``need_critic`` (``verl/trainer/ppo/utils.py``); dynamic sampling in the V1 trainer's
  replay buffer (``verl/trainer/ppo/v1/trainer_base.py``: ``filter_groups.max_num_gen_batches`` is ignored
  there, it refills until the batch is full); the overlong penalty of the ``dapo`` reward manager
  (``verl/experimental/reward_loop/reward_manager/dapo.py``, keys under ``reward.reward_kwargs``, which the
  YAML does not hold, hence Hydra's ``+`` prefix). ``ppo_mini_batch_size`` counts prompts: verl multiplies
  it by ``rollout.n``. Docs: https://verl.readthedocs.io/en/latest/examples/config.html
* **TRL 1.16.0**, the fields of ``GRPOConfig`` (``trl.experimental.gmpo.GMPOConfig`` for GMPO,
  ``RLOOConfig`` for RLOO): `grpo_config.py
  <https://github.com/huggingface/trl/blob/v1.16.0/trl/trainer/grpo_config.py>`_ and the loss in
  ``GRPOTrainer._compute_loss`` (`grpo_trainer.py
  <https://github.com/huggingface/trl/blob/v1.16.0/trl/trainer/grpo_trainer.py>`_): ``loss_type`` "grpo" is
  seq-mean-token-mean, "dapo" token-mean over the accumulated batch, "dr_grpo" a sum over
  ``max_completion_length``; its CISPO clamps the ratio at ``epsilon_high`` itself (not 1 + it) and has no
  lower bound; its ``delta`` (INTELLECT-2's two-sided clip) is dual clip's c when c > 1 + epsilon_high; its KL
  is k3 in the loss. ``RLOOTrainer`` puts a k1 KL in the reward and averages a sequence-level loss. TRL 1.16
  has no PPO trainer (none in ``trl.experimental`` either): a config with a critic exports a line saying so.
  Docs: https://huggingface.co/docs/trl/grpo_trainer
* **slime** (THUDM/slime at commit 624b824a898ab0ec1fcb4d373004c7f3852bf515, not on PyPI), command-line
  flags: `slime/utils/arguments.py
  <https://github.com/THUDM/slime/blob/624b824a898ab0ec1fcb4d373004c7f3852bf515/slime/utils/arguments.py>`_,
  the estimators in ``slime/backends/megatron_utils/loss.py`` (``compute_advantages_and_returns``: its grpo
  returns ignore a reward KL), the group normalisation in ``slime/ray/rollout.py``, the losses in
  ``slime/utils/ppo_utils.py``; the optimiser flags come from the Megatron-LM parser slime extends
  (NVIDIA/Megatron-LM at d98e8a64ddf34856e74b24714e3bedb2f5a39553, ``megatron/training/arguments.py``,
  ``megatron/training/config/training_config.py``). A boolean flag is printed bare (``--use-kl-loss``), every
  other one as ``--flag=value``. The names are pinned in ``tests/data/slime_flags.tsv``.

Fixed choices of rltutor's trainer that are no Config field (Adam without weight decay, eps 1e-5) are exported
as the target's optimiser settings where it has them, and named in a note where it has not.

Deviations that remain, each in the note of the line it concerns: verl clips values and ratios (dual clip)
always, so "off" is exported as a bound too large to bind (:data:`NEVER`); TRL divides by std + 1e-4 where
rltutor, verl and slime use 1e-6; verl's and slime's ``low_var_kl`` clamp k3 at 10, so k3 is exported as the
unclamped ``k3`` where the target has it. A seed is exported, but no two frameworks draw the same samples.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field

from rltutor.config import AGENT_FIELDS, HF_FIELDS, OPD_FIELDS, Config
from rltutor.envs.tokens import TASKS as TOKEN_TASKS
from rltutor.envs.tokens import make_task
from rltutor.utils import check_choice

__all__ = [
    "TARGETS",
    "VERSIONS",
    "NEVER",
    "TOPICS",
    "Setting",
    "Note",
    "Export",
    "export",
    "load_config",
    "format_export",
    "table",
]

TARGETS = ("verl", "trl", "slime")
VERSIONS = {
    "verl": "verl 0.9.1 (python -m verl.trainer.main_ppo, Hydra overrides)",
    "trl": "TRL 1.16.0",
    "slime": "slime at THUDM/slime@624b824 (train.py command-line flags)",
}
"""the version each mapping was checked against"""
NEVER = 1e9
"""a clip bound that never binds: how "no clipping" is exported where the target always clips"""
ADAM_EPS = 1e-5
"""rltutor's trainer: Adam with eps 1e-5 and no weight decay (rltutor.train, implementation detail 1)"""
LABELS = ("algo", "scale", "device", "torch_threads")
"""fields that label a run or place it on this machine; no training algorithm reads them"""
KL_NAMES = {"k1": "k1", "k2": "k2", "k3": "k3"}
"""rltutor's KL estimators by the names verl's kl_penalty and slime's --kl-loss-type accept (both also take
"low_var_kl", k3 clamped to [-10, 10])"""


@dataclass(frozen=True)
class Setting:
    """One setting of the target: ``name=value``, from the rltutor fields ``source``."""

    name: str
    """the target's name: a Hydra key (verl), a config field (TRL), a flag with its dashes (slime)"""
    value: object
    source: tuple[str, ...] = ()
    """the Config fields it comes from; () for a fixed choice of rltutor's trainer (its Adam)"""


@dataclass(frozen=True)
class Note:
    """A comment line: the fields ``source`` have no equivalent (``missing``), or need no setting."""

    source: tuple[str, ...]
    text: str
    missing: bool = True


@dataclass
class Export:
    """A run's settings for one target: what :func:`export` returns."""

    target: str
    trainer: str
    """what the settings configure, e.g. "trl.GRPOConfig" or "verl.trainer.main_ppo"; "" where there is none"""
    settings: list[Setting] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    fields: tuple[str, ...] = ()
    """the Config fields of the run (its config.json), each of which a setting or a note accounts for"""

    def kwargs(self) -> dict:
        """The settings as ``{name: value}``: ``GRPOConfig(**export(cfg, "trl").kwargs())``."""
        return {s.name: s.value for s in self.settings}

    def missing(self) -> list[Note]:
        """The notes that name a field with no equivalent in the target."""
        return [n for n in self.notes if n.missing]

    def unaccounted(self) -> list[str]:
        """The run's fields that no setting and no note names (empty by construction; the tests check it)."""
        named = {f for item in (*self.settings, *self.notes) for f in item.source}
        return [f for f in self.fields if f not in named]

    def lines(self) -> list[str]:
        """The lines ``rltutor export`` prints: settings as ``name=value``, notes as ``# ...`` comments."""
        out = [_setting_line(self.target, s) for s in self.settings]
        for n in self.notes:
            what = f"{', '.join(n.source)}: " if n.source else ""
            out.append(f"# {'no equivalent' if n.missing else 'note'}: {what}{n.text}")
        return out


def _value_text(target: str, v: object) -> str:
    if target == "trl":
        return repr(v)  # a Python literal, to paste into GRPOConfig(...)
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "True" if v else "False"
    return str(v)


def _setting_line(target: str, s: Setting) -> str:
    if target == "slime" and s.value is True:
        return s.name  # a boolean flag (argparse store_true / store_false) takes no value
    return f"{s.name}={_value_text(target, s.value)}"


def format_export(ex: Export, origin: str = "") -> str:
    """The text ``rltutor export`` prints: a header comment, then :meth:`Export.lines`."""
    head = f"# rltutor export --to {ex.target}{f' {origin}' if origin else ''}: {VERSIONS[ex.target]}"
    if ex.trainer:
        head += f"; settings of {ex.trainer}"
    return "\n".join([head, *ex.lines()]) + "\n"


TOPICS = {
    "advantage estimator": ("estimator", "norm_adv", "gamma", "lam"),
    "loss and aggregation": ("loss", "agg"),
    "clip values": ("clip_low", "clip_high", "dual_clip"),
    "KL placement and estimator": ("kl_coef", "kl_in_reward", "kl_kind"),
    "critic": ("critic", "critic_kind", "vf_coef", "vf_clip"),
    "group size and batch": ("group_size", "num_groups"),
    "epochs and minibatches": ("epochs", "minibatches"),
    "dynamic sampling": ("dynamic_sampling", "max_draws"),
    "overlong handling": ("overlong_buffer",),
}
"""the rows of chapter 16's mapping table: a topic and the Config fields it covers"""


def table(config: Config):
    """Chapter 16's mapping table for ``config``: one row per :data:`TOPICS` entry, one column per target; a cell
    lists the target's settings for that topic's fields and, marked "no equivalent:", what it cannot express."""
    import pandas as pd

    rows = {}
    for topic, names in TOPICS.items():
        row = {}
        for target in TARGETS:
            ex = export(config, target)
            cell = [_setting_line(target, s) for s in ex.settings if set(s.source) & set(names)]
            cell += [f"no equivalent: {n.text}" for n in ex.missing() if set(n.source) & set(names)]
            row[target] = "; ".join(dict.fromkeys(cell)) or "(the default: nothing to set)"
        rows[topic] = row
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis(f"{config.algo}")


# ----------------------------------------------------------------------------------------------
# Reading a run
# ----------------------------------------------------------------------------------------------


def load_config(path: str) -> Config:
    """The Config of a run: ``path`` is its folder (holding config.json) or its config.json; bad input is a
    ValueError naming the path and the fix."""
    p = os.fspath(path)
    if os.path.isdir(p):
        p = os.path.join(p, "config.json")
        if not os.path.exists(p):
            raise ValueError(
                f"{path} holds no config.json; give a run folder written by rltutor train, or its config.json"
            )
    if not os.path.isfile(p):
        raise ValueError(f"{path}: no such run folder or config.json; give RUN_DIR or RUN_DIR/config.json")
    try:
        with open(p) as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        raise ValueError(f"{p} is not valid JSON ({e.msg} at line {e.lineno}); give the config.json of a run") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{p} cannot be read ({e}); give the config.json of a run") from None
    if not isinstance(data, dict):
        raise ValueError(f"{p} holds a {type(data).__name__}, not a run's config; give the config.json of a run")
    derived = {f.name for f in dataclasses.fields(Config) if not f.init}
    return Config.from_dict({k: v for k, v in data.items() if k not in derived})


def _response_length(c: Config) -> int | None:
    """The completion budget L_max of a token task (its ``max_new_tokens``), or None for other environments."""
    if c.env not in TOKEN_TASKS:
        return None
    return make_task(c.env, **c.env_options).max_new_tokens


# ----------------------------------------------------------------------------------------------
# The mapping
# ----------------------------------------------------------------------------------------------


def export(config: Config, target: str) -> Export:
    """The settings of ``target`` ("verl", "trl" or "slime") equivalent to ``config``'s, with a :class:`Note`
    for each field that has no equivalent there."""
    check_choice("export target", target, TARGETS)
    if not isinstance(config, Config):
        raise ValueError(f"export takes a rltutor Config (load_config(RUN_DIR) reads one), got {type(config).__name__}")
    ex = _Builder(config, target)
    _common(ex)
    if config.estimator == "zero":  # the opd preset: no task reward, the teacher's signal alone
        _distillation(ex)
        _pure_distillation(ex)
    else:
        {"verl": _verl, "trl": _trl, "slime": _slime}[target](ex)
        _distillation(ex)  # after the trainer's own settings (verl's distillation section needs its trainer)
    return ex.result()


def _pure_distillation(ex: _Builder) -> None:
    """A run of the ``opd`` preset learns from its teachers alone (estimator "zero"). slime runs it as
    ``--use-opd`` beside a reward model that scores 0; TRL as a ``DistillationTrainer``, verl as its PPO trainer with
    the distillation section and no task reward: their other settings are not exported here."""
    named = {f for item in (*ex.settings, *ex.notes) for f in item.source}
    rest = [f for f in ex.fields if f not in named]
    ex.no(
        "pure on-policy distillation (the opd preset, no task reward): "
        + (
            "slime needs a reward model that returns 0 (--custom-rm-path); the rest is not exported"
            if ex.target == "slime"
            else "TRL: trl.DistillationTrainer (a divergence loss, beta); verl: main_ppo with distillation.enabled, "
            "distillation_loss.use_task_rewards=False, use_policy_gradient=True, loss_mode=k1 (its PG OPD); "
            "their other settings are not exported"
        ),
        *rest,
    )


class _Builder:
    """Collects settings and notes for one (config, target)."""

    def __init__(self, c: Config, target: str):
        self.c, self.target = c, target
        self.settings: list[Setting] = []
        self.notes: list[Note] = []
        self.trainer = ""
        self.L = _response_length(c)
        self.fields = tuple(k for k in c.to_dict() if k in {f.name for f in dataclasses.fields(Config) if f.init})

    def set(self, name: str, value, *source: str) -> None:
        self.settings.append(Setting(name, value, tuple(source)))

    def no(self, text: str, *source: str) -> None:
        self.notes.append(Note(tuple(source), text, True))

    def note(self, text: str, *source: str) -> None:
        self.notes.append(Note(tuple(source), text, False))

    def result(self) -> Export:
        return Export(self.target, self.trainer, self.settings, self.notes, self.fields)

    # what several targets say alike
    @property
    def batch(self) -> tuple[int, int]:
        """(prompts per update, samples per prompt)"""
        c = self.c
        return (c.num_groups, c.group_size) if c.rollout == "episodes" else (c.num_envs, 1)


def _common(ex: _Builder) -> None:
    """The notes every target shares: labels, the task, the model, the budget, collection, the agent."""
    c = ex.c
    ex.note("labels of the run or settings of this machine; no training algorithm reads them", *LABELS)
    task = f"a token task whose completions are at most {ex.L} tokens" if ex.L else f"the {c.env!r} environment"
    ex.no(
        f"{task}: the frameworks train on a dataset of prompts and a reward function you provide "
        "(the completion budget is exported where the target has one)",
        "env",
        "env_options",
    )
    ex.no(
        "rltutor counts the budget in environment steps (generated tokens); the frameworks count updates "
        "(verl trainer.total_training_steps, TRL max_steps, slime --num-rollout)",
        "total_steps",
    )
    if c.model == "gpt":
        ex.no("the TinyGPT's size: the frameworks load a Hugging Face model by path", "n_layer", "n_head", "n_embd")
        ex.no(
            "the supervised warm start is a separate run there (verl's SFT trainer, TRL's SFTTrainer, slime "
            "--loss-type sft_loss)",
            "sft_steps",
            "sft_lr",
        )
    else:
        ex.no("a vector environment's MLP policy: the frameworks train language models", "hidden", "shared_trunk")
    if c.rollout == "segments":
        ex.no(
            "fixed-length pieces of a vector environment, bootstrapped by the critic: the frameworks sample whole "
            f"completions; exported as {c.num_envs} prompts with one sample each",
            "rollout",
            "num_steps",
        )
        ex.note("unused by segments collection", "group_size", "num_groups")
    else:
        ex.note("complete episodes in groups: how all three sample completions", "rollout", "num_envs", "num_steps")
    if c.same_seed:
        ex.note("the samples of a group answer one prompt, as the frameworks' groups do", "same_seed")
    else:
        ex.no("groups of different prompts (batch grouping): the frameworks group by prompt", "same_seed")
    agent = [f for f in AGENT_FIELDS if f in ex.fields]
    if agent:
        ex.no(
            "the multi-turn agent's context budget, compaction and guard: no framework setting compacts a context "
            "or guards a tool call (verl: actor_rollout_ref.rollout.multi_turn, slime: a custom generate function)",
            *agent,
        )
    hf = [f for f in HF_FIELDS if f in ex.fields]
    if hf:
        ex.note(
            f"the Hugging Face model {ex.c.hf_model!r}: verl actor_rollout_ref.model.path (LoRA: .lora_rank), TRL the "
            "trainer's model argument (LoRA: a peft_config), slime --hf-checkpoint; set it to the same model there",
            *hf,
        )
    if not c.dynamic_sampling:
        ex.note("used only with dynamic sampling, which is off", "max_draws")
    if c.kl_coef == 0:
        ex.note(
            "no KL to a reference (kl_coef=0): the estimator and its placement are unused", "kl_kind", "kl_in_reward"
        )
    if not c.critic:
        ex.note(
            "no critic: the value settings are unused", "vf_coef", "vf_clip", *(("critic_kind",) * (c.model == "gpt"))
        )
    if c.critic_warmup == 0:
        ex.note("no critic warm-up, as each target's default", "critic_warmup")
    elif ex.target == "verl":  # ray_trainer: the actor updates only once critic_warmup <= global_steps
        ex.set("trainer.critic_warmup", c.critic_warmup, "critic_warmup")
        ex.note("verl's first critic_warmup training steps update the critic alone", "critic_warmup")
    elif ex.target == "slime":
        ex.set("--num-critic-only-steps", c.critic_warmup, "critic_warmup")
    else:
        ex.no("fitting the critic alone before training: TRL's trainers have no such phase", "critic_warmup")
    if c.estimator not in ("gae", "reinforce", "reinforce_pp"):
        ex.note(f"the {c.estimator!r} estimator scores whole completions: no discount", "gamma")
    if c.estimator != "gae":
        ex.note("used by GAE only", "lam")
    if c.target_kl is not None:
        ex.no(
            "stopping an update's epochs early on approx KL (CleanRL's target_kl): none of the three does", "target_kl"
        )
    else:
        ex.note("off", "target_kl")
    if c.loss != "ppo":
        ex.note("dual clip applies to the ppo loss only", "dual_clip")
    if c.loss == "reinforce":
        ex.note("the reinforce loss has no ratio to clip", "clip_low", "clip_high")


def _distillation(ex: _Builder) -> None:
    """On-policy distillation (:mod:`rltutor.distill`), in a run's config only when it has teachers.

    What each target has, read from its source (chapter 14 and chapter 16's table quote them):

    * slime: ``--use-opd --opd-type megatron --opd-kl-coef BETA`` (``docs/en/advanced/on-policy-distillation.md``):
      A_t <- A_t - BETA (log pi_student - log pi_teacher) after any estimator, the shift with k1; one teacher
      (``--opd-teacher-load PATH``, a Megatron checkpoint; ``--opd-type sglang`` scores through a server instead).
    * verl 0.9.1: the ``distillation`` section (``verl/workers/config/distillation.py``,
      ``verl/trainer/distillation/losses.py``): ``distillation_loss.use_policy_gradient=True`` with ``loss_mode=k1``
      is the shift ("PG OPD", the negated per-token estimate as advantages of a policy-gradient term),
      ``use_policy_gradient=False`` with ``loss_mode=forward_kl_topk`` the divergence as a loss ("GKD OPD");
      ``use_task_rewards`` keeps the task's policy loss beside it, weighted ``distillation_loss_coef``; several
      teachers under ``teacher_models``, routed by ``teacher_key`` (a field of the data, ``data_source``).
    * TRL 1.16: ``trl.DistillationTrainer`` (``trl/trainer/distillation_config.py``): the divergence as a loss, on the
      student's completions, ``beta`` 0 forward KL, 1 reverse KL (the default), else the generalised JSD; top-k with a
      tail bucket only in ``trl.experimental.server_distillation.ServerDistillationConfig`` (``loss_top_k``,
      ``loss_add_tail``); no advantage shift, and not a setting of a GRPO run."""
    c = ex.c
    opd = [f for f in OPD_FIELDS if f in ex.fields]
    if not opd:
        return
    shift, loss = c.opd_coef > 0, c.opd_loss != "none"
    pure = c.estimator == "zero"
    named: list[str] = []
    if ex.target == "slime" and shift:
        ex.set("--use-opd", True, "opd_coef")
        ex.set("--opd-type", "megatron", "teachers")
        ex.set("--opd-kl-coef", c.opd_coef, "opd_coef")
        ex.no(
            "the teachers' run folders: slime loads one teacher, a Megatron checkpoint (--opd-teacher-load PATH), "
            "for every prompt; several teachers routed by task are not a slime setting",
            "teachers",
        )
        named += ["opd_coef", "teachers"]
        if c.opd_kl_kind == "k1":
            ex.note("slime's shift uses k1, log pi_student - log pi_teacher", "opd_kl_kind")
            named.append("opd_kl_kind")
    if ex.target == "verl" and ex.trainer and (shift or loss) and not (shift and loss):
        D = "distillation.distillation_loss"
        ex.set("distillation.enabled", True, "teachers")
        if shift:
            kinds = {"k1": "k1", "k2": "k2", "k3": "k3"}
            ex.set(f"{D}.loss_mode", kinds[c.opd_kl_kind], "opd_kl_kind")
            ex.set(f"{D}.use_policy_gradient", True, "opd_coef")
            ex.set(f"{D}.use_task_rewards", True, "opd_coef")
            ex.set(f"{D}.distillation_loss_coef", c.opd_coef, "opd_coef")
            named += ["opd_coef", "opd_kl_kind"]
        elif c.opd_loss == "forward_kl" and c.opd_top_k > 0:
            ex.set(f"{D}.loss_mode", "forward_kl_topk", "opd_loss")
            ex.set(f"{D}.topk", c.opd_top_k, "opd_top_k")
            ex.set(f"{D}.use_policy_gradient", False, "opd_loss")
            ex.set(f"{D}.use_task_rewards", True, "opd_loss")
            ex.set(f"{D}.distillation_loss_coef", c.opd_loss_coef, "opd_loss_coef")
            named += ["opd_loss", "opd_top_k", "opd_loss_coef"]
        ex.no(
            "the teachers' run folders: verl loads Hugging Face teachers, distillation.teacher_models.NAME.model_path "
            "(several routed by distillation.teacher_key, a field of the data such as data_source)",
            "teachers",
        )
        named.append("teachers")
    rest = [f for f in opd if f not in named]
    if rest:
        ex.no(
            "on-policy distillation from teachers (rltutor.distill): slime --use-opd --opd-type --opd-kl-coef (the "
            "per-token shift, one teacher); verl's distillation section (use_policy_gradient with loss_mode k1: the "
            "shift; forward_kl_topk: the loss); TRL's DistillationTrainer (beta: 0 forward KL, 1 reverse KL, else JSD; "
            "top-k with a tail in ServerDistillationConfig's loss_top_k, loss_add_tail), a trainer of its own"
            + (" (this run: pure distillation)" if pure else ""),
            *rest,
        )


def _mini(ex: _Builder, whole: int, parts: int, what: str, *source: str) -> int:
    """``whole / parts``, with a note where it does not divide."""
    size = max(1, whole // parts)
    if whole % parts:
        ex.no(f"{whole} {what} do not split into {parts} equal minibatches; exported as {size} each", *source)
    return size


# --- verl --------------------------------------------------------------------------------------

_VERL_ESTIMATORS = {"gae": "gae", "grpo": "grpo", "dr_grpo": "grpo", "rloo": "rloo"}
_VERL_ESTIMATORS |= {"reinforce_pp": "reinforce_plus_plus", "reinforce_pp_baseline": "reinforce_plus_plus_baseline"}
_VERL_LOSSES = {"ppo": "vanilla", "gspo": "gspo", "gmpo": "geo_mean", "cispo": "cispo", "reinforce": "gpg"}


def _verl(ex: _Builder) -> None:
    c = ex.c
    ex.trainer = "verl.trainer.main_ppo"
    A, R, ALG = "actor_rollout_ref.actor", "actor_rollout_ref.rollout", "algorithm"
    prompts, n = ex.batch
    ex.set("data.train_batch_size", prompts, "num_groups" if c.rollout == "episodes" else "num_envs")
    ex.set(f"{R}.n", n, *(("group_size",) * (c.rollout == "episodes")))
    if ex.L is not None:
        ex.set("data.max_response_length", ex.L, "env", "env_options")
    if c.model == "gpt":
        ex.set(f"{R}.temperature", c.temperature, "temperature")
    ex.set("data.seed", c.seed, "seed")
    # advantages
    if c.estimator == "reinforce":
        ex.set(f"{ALG}.adv_estimator", "rloo", "estimator")
        ex.no(
            "plain REINFORCE (no baseline): verl has no such estimator; rloo is the nearest (a baseline "
            "changes the variance, not the expected gradient)",
            "estimator",
        )
    else:
        ex.set(f"{ALG}.adv_estimator", _VERL_ESTIMATORS[c.estimator], "estimator")
    if c.estimator in ("grpo", "dr_grpo"):
        ex.set(f"{ALG}.norm_adv_by_std_in_grpo", c.estimator == "grpo", "estimator")
    if c.estimator in ("gae", "reinforce", "reinforce_pp"):
        ex.set(f"{ALG}.gamma", c.gamma, "gamma")
    if c.estimator == "gae":
        ex.set(f"{ALG}.lam", c.lam, "lam")
        if c.norm_adv == "batch":
            ex.note("verl's GAE whitens the advantages over the batch, always", "norm_adv")
        else:
            ex.no(f"norm_adv={c.norm_adv!r}: verl's GAE whitens over the whole batch, always", "norm_adv")
    elif c.norm_adv == "none":
        ex.note("verl does not whiten these advantages", "norm_adv")
    else:
        ex.no(f"whitening {c.estimator} advantages per {c.norm_adv}: verl has no switch for it", "norm_adv")
    # critic
    ex.set("critic.enable", c.critic, "critic")
    if c.critic:
        ex.set("critic.optim.lr", c.lr, "lr")
        ex.set("critic.optim.weight_decay", 0.0)
        ex.set("critic.optim.clip_grad", c.max_grad_norm if c.max_grad_norm is not None else NEVER, "max_grad_norm")
        ex.set("critic.cliprange_value", c.vf_clip if c.vf_clip is not None else NEVER, "vf_clip")
        if c.vf_clip is None:
            ex.note(f"verl always clips the value around its old one; {NEVER:g} never binds", "vf_clip")
        ex.set("critic.loss_agg_mode", "token-mean")  # rltutor reduces the value loss by token mean whatever agg is
        ex.no("verl's critic is a separate model with its own optimiser: no weight in a joint loss", "vf_coef")
        if c.model == "gpt":
            if c.critic_kind == "head":
                ex.no(
                    "a value head on the policy's trunk: verl's critic is a separate model (critic.model.path)",
                    "critic_kind",
                )
            else:
                ex.note(
                    "a separate critic initialised from the policy: set critic.model.path to the policy's",
                    "critic_kind",
                )
    # the loss
    ex.set(f"{A}.policy_loss.loss_mode", _VERL_LOSSES[c.loss], "loss")
    if c.loss != "reinforce":
        ex.set(f"{A}.clip_ratio_low", c.clip_low, "clip_low")
        ex.set(f"{A}.clip_ratio_high", c.clip_high, "clip_high")
    if c.loss == "ppo":
        ex.set(f"{A}.clip_ratio_c", c.dual_clip if c.dual_clip is not None else NEVER, "dual_clip")
        if c.dual_clip is None:
            ex.note(
                f"verl's vanilla loss always applies dual clip (clip_ratio_c, default 3); {NEVER:g} never binds",
                "dual_clip",
            )
    ex.set(f"{A}.loss_agg_mode", c.agg, "agg")
    if c.agg == "seq-mean-token-sum-norm" and ex.L is not None:
        ex.set(f"{A}.loss_scale_factor", ex.L, "agg")  # rltutor's norm: the padded length, L_max
    if c.loss == "gmpo":
        ex.note("verl's geo_mean averages over sequences whatever loss_agg_mode says", "agg")
    ex.set(f"{A}.entropy_coeff", c.ent_coef, "ent_coef")
    # KL
    if c.kl_coef > 0 and c.kl_in_reward:
        ex.set(f"{ALG}.use_kl_in_reward", True, "kl_in_reward")
        ex.set(f"{ALG}.kl_penalty", KL_NAMES[c.kl_kind], "kl_kind")
        ex.set(f"{ALG}.kl_ctrl.type", "fixed", "kl_coef")
        ex.set(f"{ALG}.kl_ctrl.kl_coef", c.kl_coef, "kl_coef")
        ex.set(f"{A}.use_kl_loss", False, "kl_in_reward")
    elif c.kl_coef > 0:
        ex.set(f"{A}.use_kl_loss", True, "kl_in_reward")
        ex.set(f"{A}.kl_loss_coef", c.kl_coef, "kl_coef")
        ex.set(f"{A}.kl_loss_type", KL_NAMES[c.kl_kind], "kl_kind")
        ex.set(f"{ALG}.use_kl_in_reward", False, "kl_in_reward")
    else:
        ex.set(f"{A}.use_kl_loss", False, "kl_coef")
        ex.set(f"{ALG}.use_kl_in_reward", False, "kl_coef")
    # DAPO's dynamic sampling and overlong penalty
    if c.dynamic_sampling:
        ex.set(f"{ALG}.filter_groups.enable", True, "dynamic_sampling")
        ex.set(f"{ALG}.filter_groups.metric", "reward", "dynamic_sampling")
        if c.max_draws == 1:
            ex.no(
                "rltutor drops dead groups without refilling (max_draws=1); verl's V1 trainer refills until the "
                "batch is full",
                "max_draws",
            )
        else:
            ex.note(
                f"verl refills until the batch is full, with no cap (filter_groups.max_num_gen_batches is "
                f"ignored by its V1 trainer); rltutor stops after {c.max_draws} draws",
                "max_draws",
            )
    else:
        ex.set(f"{ALG}.filter_groups.enable", False, "dynamic_sampling")
    _verl_overlong(ex)
    # optimisation
    ex.set(f"{A}.ppo_epochs", c.epochs, "epochs")
    ex.set(f"{A}.ppo_mini_batch_size", _mini(ex, prompts, c.minibatches, "prompts", "minibatches"), "minibatches")
    ex.note("set a micro batch for your GPUs (actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu): memory only")
    ex.set(f"{A}.optim.lr", c.lr, "lr")
    ex.set(f"{A}.optim.weight_decay", 0.0)
    ex.note(f"Adam eps {ADAM_EPS:g}: verl's optimiser config has no eps (torch's 1e-8)")
    if c.anneal_lr:
        ex.no(
            "linear decay to 0: verl's lr_scheduler_type is constant or cosine (min_lr_ratio=0 is the nearest)",
            "anneal_lr",
        )
    else:
        ex.set(f"{A}.optim.lr_scheduler_type", "constant", "anneal_lr")
    ex.set(f"{A}.optim.clip_grad", c.max_grad_norm if c.max_grad_norm is not None else NEVER, "max_grad_norm")
    if c.max_grad_norm is None:
        ex.note(f"verl always clips the gradient norm; {NEVER:g} never binds", "max_grad_norm")
    ex.set("trainer.test_freq", c.eval_every if c.eval_every > 0 else -1, "eval_every")


def _verl_overlong(ex: _Builder) -> None:
    c = ex.c
    if c.model != "gpt":
        return
    if c.overlong_buffer is None:
        ex.note("off", "overlong_buffer")
        return
    if ex.L is None:
        ex.no("DAPO's overlong penalty needs a completion budget, which this environment has not", "overlong_buffer")
        return
    kw = "+reward.reward_kwargs"  # not in the YAML: Hydra's + adds the keys the dapo reward manager reads
    ex.set("reward.reward_manager.name", "dapo", "overlong_buffer")
    ex.set(f"{kw}.overlong_buffer_cfg.enable", True, "overlong_buffer")
    ex.set(f"{kw}.overlong_buffer_cfg.len", c.overlong_buffer, "overlong_buffer")
    ex.set(f"{kw}.overlong_buffer_cfg.penalty_factor", 1.0, "overlong_buffer")
    ex.set(f"{kw}.overlong_buffer_cfg.log", False, "overlong_buffer")
    ex.set(f"{kw}.max_resp_len", ex.L, "overlong_buffer")


# --- TRL ---------------------------------------------------------------------------------------

_TRL_LOSS_TYPES = {"token-mean": "dapo", "seq-mean-token-mean": "grpo", "seq-mean-token-sum-norm": "dr_grpo"}
_TRL_SCALE = {"grpo": "group", "dr_grpo": "none", "reinforce_pp_baseline": "batch"}


def _trl(ex: _Builder) -> None:
    c = ex.c
    if c.critic or c.estimator == "gae":
        ex.trainer = ""
        ex.no(
            "TRL 1.16 has no PPO trainer (PPOTrainer left TRL, and trl.experimental holds none): a run with a "
            "critic has no TRL equivalent; export it to verl or slime",
            "critic",
            "estimator",
        )
        named = {f for n in ex.notes for f in n.source}
        rest = [f for f in ex.fields if f not in named]
        ex.no("settings of that PPO run, so none is exported", *rest)
        return
    ex.note("no critic, as in TRL's GRPO and RLOO trainers", "critic")
    if c.estimator in ("reinforce", "reinforce_pp"):
        ex.no(f"discounted returns-to-go (gamma={c.gamma:g}): TRL scores whole completions", "gamma")
    if c.estimator == "rloo":
        _trl_rloo(ex)
    else:
        _trl_grpo(ex)
    _trl_shared(ex)


def _trl_grpo(ex: _Builder) -> None:
    c = ex.c
    ex.trainer = "trl.experimental.gmpo.GMPOConfig" if c.loss == "gmpo" else "trl.GRPOConfig"
    if c.estimator in _TRL_SCALE:
        ex.set("scale_rewards", _TRL_SCALE[c.estimator], "estimator")
        if c.estimator == "reinforce_pp_baseline":
            ex.note(
                "group-mean baseline over one batch-wide std, as REINFORCE++-baseline; TRL's std is over "
                "completions, rltutor's whitening over tokens",
                "estimator",
            )
        if c.estimator == "grpo":
            ex.note("TRL divides by std + 1e-4, rltutor by std + 1e-6", "estimator")
    else:
        ex.set("scale_rewards", "none", "estimator")
        ex.no(
            f"the {c.estimator!r} estimator: TRL's GRPO always subtracts the group mean (scale_rewards='none' is "
            "Dr.GRPO, the nearest)",
            "estimator",
        )
    if c.norm_adv == "none":
        ex.note("no further whitening, as in TRL", "norm_adv")
    else:
        ex.no(f"whitening the advantages per {c.norm_adv}: GRPOConfig has no such switch", "norm_adv")
    # the loss: its kind and its aggregation
    if c.loss == "gmpo":
        ex.set("epsilon", c.clip_low, "clip_low")
        ex.set("epsilon_high", c.clip_high, "clip_high")
        ex.note("GMPOConfig clips the token log-ratios at (-epsilon, epsilon_high), as rltutor's gmpo does", "loss")
        ex.note("GMPO averages per sequence (its own reduction), whatever agg says", "agg")
        return
    if c.loss == "cispo":
        ex.set("loss_type", "cispo", "loss")
        ex.set("epsilon_high", 1.0 + c.clip_high, "clip_high")  # TRL clamps the ratio at epsilon_high itself
        if c.clip_low < 1.0:
            ex.no(f"a lower bound 1 - {c.clip_low:g} on the CISPO weight: TRL's CISPO has none", "clip_low")
        else:
            ex.note("no lower bound (1 - clip_low <= 0), as TRL's CISPO", "clip_low")
        if c.agg != "token-mean":
            ex.no(f"agg={c.agg!r}: TRL's CISPO averages over the tokens of the batch (token-mean)", "agg")
        else:
            ex.note("TRL's CISPO averages over the tokens of the batch", "agg")
        return
    if c.agg in _TRL_LOSS_TYPES:
        ex.set("loss_type", _TRL_LOSS_TYPES[c.agg], "agg", "loss")
        if c.agg == "seq-mean-token-sum-norm":
            ex.note(
                "TRL's dr_grpo divides by max_completion_length, rltutor by the padded length: the same L_max", "agg"
            )
    else:
        ex.no(f"agg={c.agg!r}: no TRL loss_type sums over tokens without a constant", "agg")
    if c.loss == "gspo":
        ex.set("importance_sampling_level", "sequence", "loss")
    elif c.loss == "reinforce":
        ex.note(
            "plain -A log pi: with num_iterations=1 TRL's ratio is 1 and its clipped loss has this gradient", "loss"
        )
    else:
        ex.set("importance_sampling_level", "token", "loss")
    if c.loss != "reinforce":
        ex.set("epsilon", c.clip_low, "clip_low")
        ex.set("epsilon_high", c.clip_high, "clip_high")
    if c.loss == "ppo" and c.dual_clip is not None:
        ex.set("delta", c.dual_clip, "dual_clip")
        ex.note("TRL's delta (two-sided clipping) equals dual clip's c when c > 1 + epsilon_high", "dual_clip")
    elif c.loss == "ppo":
        ex.note("off, as TRL's delta=None", "dual_clip")


def _trl_rloo(ex: _Builder) -> None:
    c = ex.c
    ex.trainer = "trl.RLOOConfig"
    ex.note("RLOOTrainer's leave-one-out baseline", "estimator")
    if c.norm_adv == "none":
        ex.set("normalize_advantages", False, "norm_adv")
    elif c.norm_adv == "batch":
        ex.set("normalize_advantages", True, "norm_adv")
        ex.note("RLOOConfig whitens over the completions of a generation batch, rltutor over its tokens", "norm_adv")
    else:
        ex.no("whitening per minibatch: RLOOConfig whitens per generation batch", "norm_adv")
    ex.no(
        f"loss={c.loss!r} with agg={c.agg!r}: RLOOTrainer clips a sequence-level ratio and averages over "
        "sequences (seq-mean-token-sum); it has no loss_type",
        "loss",
        "agg",
    )
    if c.loss != "reinforce":
        ex.set("epsilon", c.clip_low, "clip_low")
        ex.set("epsilon_high", c.clip_high, "clip_high")
    if c.dual_clip is not None and c.loss == "ppo":
        ex.no("dual clip: RLOOConfig has none", "dual_clip")
    elif c.loss == "ppo":
        ex.note("off", "dual_clip")


def _trl_shared(ex: _Builder) -> None:
    """The generation, KL, entropy and optimiser fields GRPOConfig and RLOOConfig share."""
    c = ex.c
    rloo = ex.trainer == "trl.RLOOConfig"
    prompts, n = ex.batch
    rows = prompts * n
    ex.set("num_generations", n, *(("group_size",) * (c.rollout == "episodes")))
    if n < 2:
        ex.no(f"{n} completion per prompt: TRL's GRPO and RLOO need num_generations >= 2", "group_size")
    size = _mini(ex, rows, c.minibatches, "completions", "minibatches")
    src = ("num_groups", "minibatches") if c.rollout == "episodes" else ("num_envs", "minibatches")
    ex.set("per_device_train_batch_size", size, *src)
    ex.set("steps_per_generation", c.minibatches, "minibatches")
    ex.set("gradient_accumulation_steps", 1)
    ex.note("one process; with N of them divide per_device_train_batch_size by N")
    ex.set("num_iterations", c.epochs, "epochs")
    if ex.L is not None:
        ex.set("max_completion_length", ex.L, "env", "env_options")
    if c.model == "gpt":
        ex.set("temperature", c.temperature, "temperature")
    ex.set("seed", c.seed, "seed")
    # KL
    if c.kl_coef == 0:
        ex.set("beta", 0.0, "kl_coef")
    elif rloo:
        if c.kl_in_reward and c.kl_kind == "k1":
            ex.set("beta", c.kl_coef, "kl_coef", "kl_in_reward", "kl_kind")
            ex.note("RLOOTrainer subtracts beta times the summed k1 KL from the reward", "kl_in_reward")
        else:
            ex.set("beta", c.kl_coef, "kl_coef")
            ex.no(
                f"KL {c.kl_kind} {'in the reward' if c.kl_in_reward else 'in the loss'}: RLOOTrainer puts a k1 KL "
                "in the reward",
                "kl_kind",
                "kl_in_reward",
            )
    else:
        ex.set("beta", c.kl_coef, "kl_coef")
        ex.set("use_bias_correction_kl", False, "kl_kind")  # rltutor's k3 carries no importance weight
        if c.kl_in_reward:
            ex.no("KL in the reward: TRL's GRPO adds beta * k3 to the loss", "kl_in_reward")
        else:
            ex.note("KL added to the loss, as TRL's GRPO", "kl_in_reward")
        if c.kl_kind != "k3":
            ex.no(f"the {c.kl_kind} estimator: TRL's GRPO uses k3", "kl_kind")
    if rloo:
        if c.ent_coef > 0:
            ex.no("an entropy bonus: RLOOConfig has none", "ent_coef")
        else:
            ex.note("no entropy bonus, as RLOOConfig", "ent_coef")
    else:
        ex.set("entropy_coef", c.ent_coef, "ent_coef")
    if c.dynamic_sampling:
        ex.no(
            "dynamic sampling: TRL drops and refills no groups (it logs frac_reward_zero_std)",
            "dynamic_sampling",
            "max_draws",
        )
    else:
        ex.note("off, as in TRL", "dynamic_sampling")
    if c.model == "gpt" and c.overlong_buffer is not None:
        ex.no(
            f"DAPO's overlong penalty is a reward function in TRL, not a field: add reward_funcs=[..., "
            f"trl.rewards.get_soft_overlong_punishment(max_completion_len={ex.L}, "
            f"soft_punish_cache={c.overlong_buffer})]",
            "overlong_buffer",
        )
    elif c.model == "gpt":
        ex.note("off", "overlong_buffer")
    # optimiser: rltutor's Adam (eps 1e-5, no weight decay)
    ex.set("learning_rate", c.lr, "lr")
    ex.set("lr_scheduler_type", "linear" if c.anneal_lr else "constant", "anneal_lr")
    if c.anneal_lr:
        ex.note(
            "TRL's linear schedule ends at 0 at max_steps: set max_steps to the run's number of updates", "anneal_lr"
        )
    ex.set("adam_epsilon", ADAM_EPS)
    ex.set("weight_decay", 0.0)
    ex.set("max_grad_norm", c.max_grad_norm if c.max_grad_norm is not None else 0.0, "max_grad_norm")
    if c.max_grad_norm is None:
        ex.note("0 turns the HF Trainer's clipping off", "max_grad_norm")
    ex.no(
        f"evaluation every {c.eval_every} updates: TRL evaluates with eval_strategy='steps', "
        f"eval_steps={c.eval_every or 'N'} and an eval_dataset",
        "eval_every",
    )


# --- slime -------------------------------------------------------------------------------------


def _slime(ex: _Builder) -> None:
    c = ex.c
    ex.trainer = "slime train.py"
    prompts, n = ex.batch
    ex.set("--rollout-batch-size", prompts, "num_groups" if c.rollout == "episodes" else "num_envs")
    ex.set("--n-samples-per-prompt", n, *(("group_size",) * (c.rollout == "episodes")))
    if ex.L is not None:
        ex.set("--rollout-max-response-len", ex.L, "env", "env_options")
    if c.model == "gpt":
        ex.set("--rollout-temperature", c.temperature, "temperature")
    ex.set("--seed", c.seed, "seed")
    ex.set("--rollout-seed", c.seed, "seed")
    _slime_estimator(ex)
    # the loss
    if c.loss != "reinforce":
        ex.set("--eps-clip", c.clip_low, "clip_low")
        ex.set("--eps-clip-high", c.clip_high, "clip_high")
    if c.loss == "ppo" and c.dual_clip is not None:
        ex.set("--eps-clip-c", c.dual_clip, "dual_clip")
    elif c.loss == "ppo":
        ex.note("off, as slime's --eps-clip-c default (None)", "dual_clip")
    if c.agg == "token-mean":
        ex.set("--calculate-per-token-loss", True, "agg")
    elif c.agg == "seq-mean-token-mean":
        ex.note("slime's default reduction (sum of per-sample means over the batch)", "agg")
    else:
        ex.no(
            f"agg={c.agg!r}: slime reduces per token or per sample mean; a custom reducer "
            "(--custom-pg-loss-reducer-function-path) is the way",
            "agg",
        )
    if c.ent_coef > 0:
        ex.set("--entropy-coef", c.ent_coef, "ent_coef")
    else:
        ex.note("no entropy bonus, slime's default", "ent_coef")
    # KL
    if c.kl_coef > 0 and c.kl_in_reward:
        if c.estimator in ("gae", "reinforce_pp", "reinforce_pp_baseline"):
            ex.set("--kl-coef", c.kl_coef, "kl_coef", "kl_in_reward")
            ex.set("--kl-loss-type", KL_NAMES[c.kl_kind], "kl_kind")
            ex.note("slime's --kl-coef shapes the reward with the --kl-loss-type estimator", "kl_in_reward")
        else:
            ex.no(
                f"KL in the reward with {c.estimator}: slime's grpo returns ignore the reward KL",
                "kl_coef",
                "kl_in_reward",
                "kl_kind",
            )
    elif c.kl_coef > 0:
        ex.set("--use-kl-loss", True, "kl_in_reward")
        ex.set("--kl-loss-coef", c.kl_coef, "kl_coef")
        ex.set("--kl-loss-type", KL_NAMES[c.kl_kind], "kl_kind")
    else:
        ex.note("no reference model, slime's default (--kl-coef 0, no --use-kl-loss)", "kl_coef")
    # critic
    if c.critic:
        ex.set("--value-clip", c.vf_clip if c.vf_clip is not None else NEVER, "vf_clip")
        if c.vf_clip is None:
            ex.note(f"slime always clips the value around its old one; {NEVER:g} never binds", "vf_clip")
        ex.no(
            "slime's critic is a separate Megatron model with its own optimiser (--megatron-config-path): no "
            "weight in a joint loss, no lr flag of its own",
            "vf_coef",
        )
        if c.model == "gpt":
            if c.critic_kind == "head":
                ex.no("a value head on the policy's trunk: slime's critic is a separate model", "critic_kind")
            else:
                ex.note("a separate critic initialised from the policy, as slime's", "critic_kind")
    # DAPO
    if c.dynamic_sampling:
        ex.set(
            "--dynamic-sampling-filter-path",
            "slime.rollout.filter_hub.dynamic_sampling_filters.check_reward_nonzero_std",
            "dynamic_sampling",
        )
        ex.set("--over-sampling-batch-size", prompts, "dynamic_sampling")
        if c.max_draws == 1:
            ex.no(
                "rltutor drops dead groups without refilling (max_draws=1); slime samples again until the batch "
                "is full",
                "max_draws",
            )
        else:
            ex.note(
                f"slime samples again until the batch is full, with no cap; rltutor stops after {c.max_draws} draws",
                "max_draws",
            )
    else:
        ex.note("off, slime's default", "dynamic_sampling")
    if c.model == "gpt" and c.overlong_buffer is not None:
        ex.no(
            "DAPO's overlong penalty: slime has no flag for it; add it to a custom reward (--custom-rm-path)",
            "overlong_buffer",
        )
    elif c.model == "gpt":
        ex.note("off", "overlong_buffer")
    # optimisation
    if c.epochs == 1:
        ex.note("one pass over each rollout: slime's only way", "epochs")
    else:
        ex.no(
            f"{c.epochs} passes over each rollout: slime makes one (--num-epoch counts passes over the dataset)",
            "epochs",
        )
    ex.set("--num-steps-per-rollout", c.minibatches, "minibatches")
    ex.set("--lr", c.lr, "lr")
    ex.set("--lr-decay-style", "linear" if c.anneal_lr else "constant", "anneal_lr")
    if c.anneal_lr:
        ex.set("--min-lr", 0.0, "anneal_lr")
    ex.set("--adam-eps", ADAM_EPS)
    ex.set("--weight-decay", 0.0)
    ex.set("--clip-grad", c.max_grad_norm if c.max_grad_norm is not None else 0.0, "max_grad_norm")
    if c.max_grad_norm is None:
        ex.note("Megatron clips only when --clip-grad > 0", "max_grad_norm")
    if c.eval_every > 0:
        ex.set("--eval-interval", c.eval_every, "eval_every")
        ex.note("needs evaluation data (--eval-prompt-data)", "eval_every")
    else:
        ex.note("never, slime's default (no --eval-interval)", "eval_every")


def _slime_estimator(ex: _Builder) -> None:
    c = ex.c
    est, loss = c.estimator, c.loss
    group = est in ("grpo", "dr_grpo", "rloo", "reinforce")
    if loss in ("gspo", "cispo") and group:
        ex.set("--advantage-estimator", loss, "estimator", "loss")  # slime picks these losses by estimator name
    elif loss in ("gspo", "cispo"):
        ex.set("--advantage-estimator", {"gae": "ppo"}.get(est, "reinforce_plus_plus"), "estimator")
        ex.no(f"the {loss} loss with the {est} estimator: slime ties {loss} to group-normalised rewards", "loss")
    elif est == "gae":
        ex.set("--advantage-estimator", "ppo", "estimator", "critic")
        ex.set("--gamma", c.gamma, "gamma")
        ex.set("--lambd", c.lam, "lam")
    elif est in ("reinforce_pp", "reinforce_pp_baseline"):
        ex.set(
            "--advantage-estimator",
            {"reinforce_pp": "reinforce_plus_plus"}.get(est, "reinforce_plus_plus_baseline"),
            "estimator",
        )
        if est == "reinforce_pp":
            ex.set("--gamma", c.gamma, "gamma")
    else:
        ex.set("--advantage-estimator", "grpo", "estimator")
    if loss == "gmpo":
        ex.no("the GMPO loss (geometric mean of token ratios): slime has none", "loss")
    elif loss == "ppo":
        ex.note("slime's policy_loss: the clipped ratio", "loss")
    elif loss == "reinforce":
        ex.note(
            "plain -A log pi: on-policy (one pass) slime's ratio is 1 and its clipped loss has this gradient", "loss"
        )
    if est == "dr_grpo" or est == "rloo":
        ex.set("--disable-grpo-std-normalization", True, "estimator")
    if est == "rloo":
        ex.no(
            "the leave-one-out baseline: slime has none; the group mean without std (exported) is RLOO's "
            "advantage times (G - 1) / G",
            "estimator",
        )
    if est == "reinforce":
        ex.set("--disable-rewards-normalization", True, "estimator")
        ex.note(
            "the raw outcome reward on every token: REINFORCE with gamma=1, as rltutor's on token tasks", "estimator"
        )
    if est != "gae" and c.critic:
        ex.no(f"a critic beside the {est} estimator: slime trains one only for --advantage-estimator ppo", "critic")
    elif est != "gae":
        ex.note("no critic: slime uses one only for --advantage-estimator ppo", "critic")
    if est == "reinforce" and c.gamma != 1.0:
        ex.no(f"discounting (gamma={c.gamma:g}): slime gives every token the outcome reward", "gamma")
    elif est == "reinforce":
        ex.note("gamma=1: every token gets the outcome reward", "gamma")
    if c.norm_adv == "batch":
        ex.set("--normalize-advantages", True, "norm_adv")
    elif c.norm_adv == "none":
        ex.note("slime's default (no --normalize-advantages)", "norm_adv")
    else:
        ex.no("whitening per minibatch: slime whitens over the whole rollout (--normalize-advantages)", "norm_adv")
