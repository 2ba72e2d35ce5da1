"""One source of settings: the run :class:`Config`, the algorithm presets, tuned settings, the scales.

Chapters: every chapter that trains. PPO and GRPO are not two programs but two settings of one
:class:`Config` (see :mod:`rltutor.train`): where advantages come from (``estimator``), how the
per-token loss is reduced (``agg``), how episodes are collected (``rollout``). This module holds:

* :class:`Config` -- every setting of a training run, one docstring line under each field;
* :data:`ALGORITHMS` -- the presets (named overrides of Config) and :func:`make_config`;
* :data:`TUNED` and :func:`tuned_settings` -- settings tuned per (algorithm, environment), which
  ``rltutor train`` applies unless told ``--hparams defaults``;
* :data:`LM_ALGOS`, :data:`LM_SCALES` and :func:`lm_settings` -- the language-model chapters'
  settings per scale ("quick": a CPU in seconds; "full": a GPU);
* :func:`resolve` -- the one composition of all of these, used by the command line and the labs.

::

    cfg = make_config("grpo", env="corridor", env_options={"horizon": 200}, total_steps=50_000)
    cfg = resolve("dapo", "addition", "quick", sets={"seed": 0})  # tuned settings, then the overrides

The names a setting may take come from the registries that implement them, imported here, never copied:
the compactions and sub-advantage modes (:mod:`rltutor.rollout.compaction`), the guard policies
(:data:`rltutor.guard.wrapper.POLICIES`), the estimators, losses and environments. A lab's own budgets
(the sweep's scales, the explorer's grids) stay in the lab.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from rltutor.advantages import ESTIMATORS, GROUP_ESTIMATORS
from rltutor.distill import DIVERGENCES, MULTITASK
from rltutor.envs import ENVS
from rltutor.envs.text import TEXT_TASKS  # (importing it registers the "<task>-text" environments)
from rltutor.envs.tokens import TASKS as TOKEN_TASKS
from rltutor.envs.toolshell.forks import FORKS_ENV
from rltutor.guard.wrapper import POLICIES as GUARD_POLICIES
from rltutor.losses import AGG_MODES, KL_KINDS, POLICY_LOSSES
from rltutor.rollout.compaction import RENAMED_SUB_ADVANTAGES, SUB_ADVANTAGE_MODES
from rltutor.rollout.context import ContextSpec
from rltutor.utils import SCALES, check_choice, check_device, check_int, check_number, resolve_scale

__all__ = [
    "Config",
    "template_settings",
    "ALGORITHMS",
    "make_config",
    "resolve",
    "list_algorithms",
    "TUNED",
    "tuned_settings",
    "LM_ALGOS",
    "DISTILL_ALGOS",
    "LM_SCALES",
    "lm_settings",
    "hf_settings",
    "hf_agent_settings",
]

MAX_SEED = 2**63 - 1
"""the largest seed: torch's generators take a signed 64-bit integer"""
MAX_ROLLOUT_ENVS = 4096
"""the most environment copies (episodes or segments) one update may collect: each holds its rows of the
batch (CartPole: 500 steps x ~40 bytes per copy); 100,000 copies took 5 GB and 40 s before the first update"""
MAX_SEGMENT_STEPS = 2**20
"""the most steps num_envs x num_steps one "segments" update may collect (1,048,576): each step holds its
observation, action, log-prob, value and reward (CartPole: ~40 bytes, 40 MB at the bound);
num_steps=10^11 asked numpy for 11.6 TiB"""
ROLLOUTS = ("segments", "episodes")
NORM_ADV = ("none", "batch", "minibatch")
MLP_FIELDS = ("hidden", "shared_trunk")
"""fields that apply only to vector environments (an MLP policy)"""
AGENT_FIELDS = (
    "context_budget",
    "compaction",
    "keep_turns",
    "train_summary",
    "sub_advantage",
    "row_weight",
    "max_cmd_tokens",
    "max_obs_tokens",
    "agent_policy",
    "guard",
    "turn_cost",
    "bc_smoothing",
)
"""fields that apply only to the multi-turn agent environment ("toolshell"); left out of config.json elsewhere"""
AGENT_ENVS = ("toolshell",)
"""environments played by a multi-turn language-model agent (rltutor.rollout.agent)"""
AGENT_POLICIES = ("tokens", "templates")
"""how the agent writes a command: token by token (a TinyGPT) or by picking a (template, argument) candidate"""
TEMPLATE_ENV = {"hops": 8, "max_turns": 9, "max_output_chars": 400}
"""the toolshell tasks of the template agent: an honest solve takes hops + 2 = 10 calls, one more than the budget
of 9, so only a shortcut (2-3 calls) earns the reward (see rltutor.experiments.agents for why)"""
TEMPLATE_ENV_MIX = {"hops": (3, 8), "max_turns": 9, "max_output_chars": 400}
"""a mix for the template agent: each task draws hops 3 (an honest solve in 5 of the 9 calls) or 8 (none fits), so
the lab can ask whether RL keeps the honest solves where they fit while learning the shortcut where they don't
(rltutor.experiments.agents, ``--tasks mix``)"""
TEMPLATE_TASKS = {"fixed": TEMPLATE_ENV, "mix": TEMPLATE_ENV_MIX, "forks": FORKS_ENV}  # forks: the credit lab's
"""the template agent's task distributions by name (``template_settings(algo, tasks=...)``)"""
_TEMPLATE_COMMON = dict(
    env_options=TEMPLATE_ENV,
    num_groups=4,
    group_size=8,
    lr=1e-3,
    anneal_lr=False,
    epochs=4,
    minibatches=4,
    turn_cost=0.1,
    sft_steps=200,
    eval_every=0,
    compaction="none",  # a template episode (9 turns, <= ~650 tokens) fits: no compaction unless asked for
    context_budget=4096,
)
TEMPLATE_SETTINGS = {
    "ppo": dict(_TEMPLATE_COMMON, gamma=0.99, lam=0.95, ent_coef=0.02),
    "grpo": dict(_TEMPLATE_COMMON),
}
"""Settings of the template agent per algorithm (``rltutor train --agent-policy templates`` applies them;
``--set`` wins); measured in rltutor.experiments.agents."""
OPD_FIELDS = ("teachers", "opd_coef", "opd_kl_kind", "opd_loss", "opd_loss_coef", "opd_jsd_beta", "opd_top_k")
"""on-policy distillation's fields (rltutor.distill); left out of config.json when a run has no teacher"""
DISTILL_ALGOS = ("opd",)
"""the presets that need a teacher (``--teacher RUN_DIR``): pure on-policy distillation"""
LM_FIELDS = ("n_layer", "n_head", "n_embd", "critic_kind", "temperature", "sft_steps", "sft_lr", "overlong_buffer")
"""fields that apply only to token tasks (a TinyGPT policy)"""
HF_FIELDS = ("hf_model", "lora_rank", "grad_checkpointing", "hf_dtype")
"""fields that apply only to a Hugging Face model on a text task (``--hf-model``); left out of config.json elsewhere"""


@dataclass
class Config:
    """Every setting of a training run. Defaults are CleanRL ``ppo.py``'s, unless a preset overrides them."""

    algo: str = "ppo"
    """the preset these settings started from (see ALGORITHMS); a label, it changes nothing by itself"""
    scale: str = "quick"
    """the scale ("quick" or "full") whose settings a run started from (``rltutor train --scale``,
    :func:`lm_settings`); recorded in config.json, it changes nothing by itself"""
    env: str = "CartPole-v1"
    """a registered environment name (rltutor.envs.list_envs())"""
    env_options: dict = field(default_factory=dict)
    """keyword options for the environment, e.g. {"horizon": 200} for the corridor, {"max_operand": 19} for addition"""
    seed: int = 1
    """seeds the policy initialization, the action sampling, the shuffling and the environments"""
    total_steps: int = 100_000
    """training budget in environment steps (for language models: generated tokens); also the end of the
    lr annealing. Resuming with a new budget (``--resume --steps N``) anneals from the lr at the checkpoint
    down to 0 at N, never raising it; the same budget continues the run exactly"""
    device: str = "cpu"
    """"cpu", "cuda", "mps" or "auto" (cuda, then mps, then cpu); small MLPs are fastest on cpu"""
    torch_threads: int | None = 1
    """torch.set_num_threads at start; small MLPs run fastest on one thread; None leaves it alone"""

    # --- collection -----------------------------------------------------------------------------
    rollout: str = "segments"
    """"segments": fixed-length pieces from each env copy (PPO); "episodes": complete episodes in groups (GRPO)"""
    num_envs: int = 4
    """environment copies for "segments" collection"""
    num_steps: int = 128
    """steps per copy per update for "segments" collection"""
    group_size: int = 8
    """G: episodes per group for "episodes" collection (GRPO needs G >= 2)"""
    num_groups: int = 4
    """groups per update for "episodes" collection"""
    same_seed: bool = True
    """episodes of a group start from one reset seed (same prompt) or each from its own (batch grouping)"""

    # --- model ------------------------------------------------------------------------------------
    critic: bool = True
    """learn a value function V(s) (PPO) or not (GRPO, REINFORCE)"""
    hidden: tuple[int, ...] = (64, 64)
    """MLP (vector environments): hidden layer sizes"""
    shared_trunk: bool = False
    """MLP (vector environments): actor and critic share one trunk"""
    n_layer: int = 2
    """language model (token tasks): transformer blocks of the TinyGPT"""
    n_head: int = 4
    """language model: attention heads per block"""
    n_embd: int = 64
    """language model: width of the residual stream"""
    critic_kind: str = "head"
    """language model, when critic is True: "head" (a value head on the policy's trunk) or "separate"
    (a second TinyGPT of the same size, initialised from the policy)"""
    temperature: float = 1.0
    """language model: sampling temperature; the trainer's log-probs use the same one"""
    sft_steps: int = 150
    """language model: supervised warm-start steps on correct answers before RL (rltutor.build.sft)"""
    sft_lr: float = 3e-3
    """language model: learning rate of the warm start"""
    overlong_buffer: int | None = None
    """language model: DAPO's soft overlong penalty over the last this-many tokens of the budget (None: off)"""

    # --- a Hugging Face causal LM on a text task (chapter 13, rltutor.models.hf) --------------------
    hf_model: str | None = None
    """a transformers causal LM, a hub name or a local folder (``--hf-model``), trained on a "<task>-text"
    environment; None: the package's own TinyGPT"""
    lora_rank: int = 0
    """Hugging Face model: rank of the LoRA adapters that train (peft); 0 trains every weight"""
    grad_checkpointing: bool = False
    """Hugging Face model: recompute activations in the backward pass (less memory, more time)"""
    hf_dtype: str = "auto"
    """Hugging Face model: "auto" (fp32 on a CPU, bf16 on Ampere or newer, fp16 + a gradient scaler on a T4),
    "fp32", "bf16" or "fp16" (rltutor.models.hf.pick_dtype)"""

    # --- multi-turn agent (env "toolshell", chapter 11) ------------------------------------------
    context_budget: int = 512
    """agent: the most tokens one context (one training row) may hold; the TinyGPT's block_size"""
    compaction: str = "recent"
    """agent: when the next turn might not fit, "none" ends the episode, "recent" keeps the task and the last
    keep_turns turns, "summary" keeps the task and a scripted summary (rltutor.rollout.compaction)"""
    keep_turns: int = 2
    """agent: turns the "recent" compaction keeps"""
    train_summary: bool = False
    """agent: train the summary tokens of the "summary" compaction (mask 1) or not (mask 0)"""
    sub_advantage: str = "auto"
    """agent: how sub-trajectories get rewards and groups (rltutor.rollout.compaction.SUB_ADVANTAGE_MODES);
    "auto": the mode registered for the critic setting (rltutor.rollout.compaction.resolve_sub_advantage)"""
    row_weight: bool = False
    """agent: weight each row's loss so every episode counts once, normalised once over the whole batch
    (rltutor.rollout.compaction.episode_row_weight, read by rltutor.losses.aggregate); off: each row counts as
    agg says (an episode of K rows K times), as every run stored before it existed"""
    max_cmd_tokens: int = 24
    """agent: a command is cut after this many tokens"""
    max_obs_tokens: int = 128
    """agent: an observation is cut to this many tokens"""
    agent_policy: str = "tokens"
    """agent: "tokens" (a TinyGPT writes each command) or "templates" (a small MLP picks a (template, argument)
    candidate from what the observations showed; rltutor.models.template_policy): learns in CPU minutes, and is
    what :func:`resolve` (``rltutor train``) gives toolshell unless told otherwise"""
    guard: str = "none"
    """agent: "none" (no guard), or what a call the guard blocks gets (rltutor.guard.wrapper.POLICIES: "abort",
    the episode ends with reward 0; "penalize", it runs and the reward is 0; "decoy", a meaningless reply)"""
    turn_cost: float = 0.0
    """agent, templates: reward subtracted on every tool call (the price of time); a long honest solve then
    pays less than a short hack"""
    bc_smoothing: float = 0.1
    """agent, templates: label smoothing of the behaviour-cloning warm start (keeps untried calls possible)"""

    # --- advantages -------------------------------------------------------------------------------
    estimator: str = "gae"
    """a registered advantage estimator (rltutor.advantages.list_estimators())"""
    gamma: float = 0.99
    """discount factor"""
    lam: float = 0.95
    """GAE lambda: 0 = one-step TD (low variance, biased), 1 = Monte Carlo (unbiased, noisy)"""
    norm_adv: str = "minibatch"
    """whiten advantages: "none", over the whole "batch", or per "minibatch" (CleanRL)"""

    # --- loss -------------------------------------------------------------------------------------
    loss: str = "ppo"
    """a registered policy loss (rltutor.losses.list_policy_losses())"""
    clip_low: float = 0.2
    """epsilon below 1 of the ratio clip"""
    clip_high: float = 0.2
    """epsilon above 1 of the ratio clip (DAPO's clip-higher: 0.28)"""
    dual_clip: float | None = None
    """dual-clip constant c > 1 capping the loss of negative-advantage tokens (ppo loss only)"""
    agg: str = "token-mean"
    """how per-token losses become a scalar (rltutor.losses.AGG_MODES)"""
    ent_coef: float = 0.01
    """entropy bonus coefficient"""
    vf_coef: float = 0.5
    """value loss coefficient"""
    vf_clip: float | None = 0.2
    """clip the value prediction around its old value by this much (None: no clipping)"""
    kl_coef: float = 0.0
    """beta, the weight of KL(pi || pi_ref) to the frozen initial policy (0: no reference)"""
    kl_kind: str = "k3"
    """KL estimator: "k1", "k2" or "k3" (rltutor.losses.kl_penalty)"""
    kl_in_reward: bool = False
    """True: -beta*KL per token added to the rewards (PPO/RLHF); False: beta*KL added to the loss (GRPO)"""
    dynamic_sampling: bool = False
    """drop groups whose scores are all equal before the update (DAPO)"""

    # --- on-policy distillation (rltutor.distill) --------------------------------------------------
    teachers: tuple[str, ...] = ()
    """run folders of the teachers (``rltutor train --teacher RUN_DIR``), one per task; each folder's
    checkpoint.pt is read by the safe loader and its task from its config, at the start and again at each
    resume (paths as given: relative ones from the working folder; the student's checkpoint holds no teacher)"""
    opd_coef: float = 0.0
    """beta of the teacher's per-token advantage shift A_t <- A_t - beta * (log pi - log pi_teacher) (0: off)"""
    opd_kl_kind: str = "k1"
    """the estimator of that shift: "k1" (slime's and Tinker's), "k2" or "k3" (rltutor.losses.kl_penalty)"""
    opd_loss: str = "none"
    """a divergence to the teacher's full next-token distribution added to the loss: "none", or one of
    rltutor.distill.DIVERGENCES ("reverse_kl", "forward_kl", "jsd")"""
    opd_loss_coef: float = 1.0
    """the weight of that divergence in the loss"""
    opd_jsd_beta: float = 0.5
    """the weight beta of the "jsd" divergence (0: forward KL, 1: reverse KL; GKD's default 0.5)"""
    opd_top_k: int = 0
    """the divergence on the top k tokens plus a tail bucket for the rest (0: the full vocabulary)"""
    max_draws: int = 1
    """with dynamic_sampling, token tasks draw up to this many batches of prompts to refill the dropped
    groups (DAPO); 1: drop without refilling (rltutor.rollout.tokens.LMCollector's max_draws). The
    history's ``draws`` says how many were needed; ``zero_std_frac`` then describes the refilled batch"""

    # --- optimization -----------------------------------------------------------------------------
    lr: float = 2.5e-4
    """Adam learning rate"""
    anneal_lr: bool = True
    """decay the learning rate linearly to 0 over total_steps (a new budget on resume: from the lr at the
    checkpoint down to 0 at the new budget, see total_steps)"""
    epochs: int = 4
    """passes over each batch"""
    minibatches: int = 4
    """minibatches (of rows) per pass"""
    max_grad_norm: float | None = 0.5
    """clip the global gradient norm to this (None: no clipping)"""
    target_kl: float | None = None
    """stop the epochs of an update early once an epoch's mean approx KL exceeds this"""
    critic_warmup: int = 0
    """batches of the starting policy on which the critic alone is fitted before the first update, ``epochs`` x
    ``minibatches`` value-loss steps each (value pretraining, as VC-PPO and VAPO do; 0: none). The policy does
    not change; the batches' environment steps count toward the budget. Needs ``critic=True``"""
    eval_every: int = 10
    """updates between held-out evaluations (the collector's ``evaluate``: greedy accuracy for token
    tasks, nothing for vector environments), also after the first update; 0: never"""

    # --- derived (computed, not set) ----------------------------------------------------------------
    rollout_envs: int = field(init=False)
    """environment copies the collector needs: num_envs, or group_size * num_groups"""
    uses_groups: bool = field(init=False)
    """the estimator is group-relative (needs groups of G >= 2)"""
    model: str = field(init=False)
    """"gpt" for token tasks, "mlp" for vector environments, "hf" for a Hugging Face model (``hf_model``): which
    model fields apply"""

    def __post_init__(self):
        check_choice("environment", self.env, ENVS)
        check_choice("rollout", self.rollout, ROLLOUTS)
        check_choice("advantage estimator", self.estimator, ESTIMATORS)
        check_choice("policy loss", self.loss, POLICY_LOSSES)
        check_choice("aggregation mode", self.agg, AGG_MODES)
        check_choice("norm_adv", self.norm_adv, NORM_ADV)
        check_choice("kl_kind", self.kl_kind, KL_KINDS)
        check_choice("scale", self.scale, SCALES)
        check_choice("critic_kind", self.critic_kind, ("head", "separate"))
        check_choice("sub_advantage", self.sub_advantage, ("auto", *SUB_ADVANTAGE_MODES))
        check_choice("agent_policy", self.agent_policy, AGENT_POLICIES)
        check_choice("guard", self.guard, GUARD_POLICIES)
        check_device(self.device)
        self._check_numbers()
        self.uses_groups = self.estimator in GROUP_ESTIMATORS
        if self.uses_groups and self.group_size < 2:
            raise ValueError(
                f"the {self.estimator!r} estimator compares each episode with the others of its "
                f"group, so it needs group_size >= 2, got group_size={self.group_size}; a group "
                "of one has advantage 0 (or 0/0): set group_size=8, say"
            )
        if self.uses_groups and self.rollout != "episodes":
            raise ValueError(
                f"the {self.estimator!r} estimator scores complete episodes in groups; set "
                f"rollout='episodes' (got rollout={self.rollout!r})"
            )
        if self.critic_warmup and not self.critic:
            raise ValueError(
                f"critic_warmup={self.critic_warmup} fits a critic before training, but critic=False: set "
                "critic=True (PPO) or critic_warmup=0"
            )
        if self.estimator == "gae" and not self.critic:
            raise ValueError(
                "the 'gae' estimator needs a critic: set critic=True or pick a critic-free "
                f"estimator ({', '.join(sorted(set(ESTIMATORS) - {'gae'}))})"
            )
        if self.max_draws > 1 and not self.dynamic_sampling:
            raise ValueError(
                f"max_draws={self.max_draws} refills the groups that dynamic sampling drops, but "
                "dynamic_sampling is off; set dynamic_sampling=True (the 'dapo' preset) or max_draws=1"
            )
        self.context_spec()  # the context settings, checked in one place (ContextSpec)
        if self.env in AGENT_ENVS:
            self._check_agent()
        self.rollout_envs = self.num_envs if self.rollout == "segments" else self.group_size * self.num_groups
        if self.rollout == "segments" and self.num_envs * self.num_steps > MAX_SEGMENT_STEPS:
            raise ValueError(
                f"num_envs x num_steps = {self.num_envs} x {self.num_steps:,} = {self.num_envs * self.num_steps:,} "
                f"steps per update is more than {MAX_SEGMENT_STEPS:,} (each held in memory: "
                "rltutor.config.MAX_SEGMENT_STEPS); lower --set num_steps or --set num_envs"
            )
        if self.rollout_envs > MAX_ROLLOUT_ENVS:
            if self.rollout == "segments":
                what, fix = "num_envs", "num_envs (--set num_envs)"
            else:
                what = f"group_size x num_groups = {self.group_size} x {self.num_groups}"
                fix = "--group-size or --set num_groups"
            raise ValueError(
                f"{what} = {self.rollout_envs:,} environment copies per update is more than {MAX_ROLLOUT_ENVS:,} "
                f"(each holds its rows of the batch in memory: rltutor.config.MAX_ROLLOUT_ENVS); lower {fix}"
            )
        self.model = "gpt" if self.env in TOKEN_TASKS or self.env in AGENT_ENVS or self.env == MULTITASK else "mlp"
        self._check_hf()
        self._check_opd()

    def _check_opd(self) -> None:
        """On-policy distillation's settings (rltutor.distill): a teacher needs a job, a job needs a teacher."""
        check_choice("opd_kl_kind", self.opd_kl_kind, KL_KINDS)
        check_choice("opd_loss", self.opd_loss, ("none", *DIVERGENCES))
        for name in ("opd_coef", "opd_loss_coef"):
            check_number(name, getattr(self, name), 0.0, None)
        check_number("opd_jsd_beta", self.opd_jsd_beta, 0.0, 1.0)
        check_int("opd_top_k", self.opd_top_k, 0)
        if isinstance(self.teachers, str) or not isinstance(self.teachers, tuple | list):
            raise ValueError(f"teachers must be a tuple of run folders, e.g. ('runs/add',), got {self.teachers!r}")
        self.teachers = tuple(self.teachers)
        if not all(isinstance(t, str) and t for t in self.teachers):
            raise ValueError(f"teachers must be run folders (non-empty strings), got {self.teachers!r}")
        job = self.opd_coef > 0 or self.opd_loss != "none"
        if job and not self.teachers:
            what = f"opd_coef={self.opd_coef}" if self.opd_coef > 0 else f"opd_loss={self.opd_loss!r}"
            preset = " (the 'opd' preset distils)" if self.algo in DISTILL_ALGOS else ""
            raise ValueError(
                f"{what}{preset} learns from a teacher, but none is given: add --teacher RUN_DIR (a run trained on "
                "this task), or --set opd_coef=0 --set opd_loss=none"
            )
        if self.teachers and not job:
            raise ValueError(
                f"--teacher {self.teachers[0]} gives the run a teacher but nothing to learn from it (opd_coef=0, "
                "opd_loss='none'): add --set opd_coef=0.1 (the per-token advantage shift) or --set opd_loss=reverse_kl"
            )
        if self.teachers and (self.model != "gpt" or self.env in AGENT_ENVS):
            raise ValueError(
                f"teachers distil token tasks ({', '.join(sorted(TOKEN_TASKS))}, or several: --env addition,sequence); "
                f"{self.env!r} is not one"
            )

    def _check_hf(self) -> None:
        """A text task needs a Hugging Face model and a Hugging Face model needs a text task (chapter 13)."""
        agent = self.env in AGENT_ENVS and self.hf_model is not None  # the toolshell agent (rltutor.rollout.hf_agent)
        if (self.env in TEXT_TASKS) != (self.hf_model is not None) and not agent:
            if self.hf_model is None:
                raise ValueError(
                    f"the text task {self.env!r} is played by a Hugging Face model: give --hf-model NAME_OR_FOLDER "
                    "(or pick a token task such as addition for the TinyGPT)"
                )
            raise ValueError(
                f"--hf-model trains on a text task ({', '.join(sorted(TEXT_TASKS))}) or plays the toolshell agent, "
                f"not {self.env!r}; add --env addition-text (or --env toolshell)"
            )
        if self.hf_model is None:
            return
        if agent and self.agent_policy != "tokens":
            raise ValueError(
                f"--hf-model on toolshell writes each command token by token: agent_policy must be 'tokens', got "
                f"{self.agent_policy!r}; drop --agent-policy {self.agent_policy}"
            )
        check_int("lora_rank", self.lora_rank, 0)
        check_choice("hf_dtype", self.hf_dtype, ("auto", "fp32", "bf16", "fp16"))
        if not isinstance(self.grad_checkpointing, bool | np.bool_):
            raise ValueError(f"grad_checkpointing must be True or False, got {self.grad_checkpointing!r}")
        self.model = "hf"

    def _check_agent(self) -> None:
        """The agent's settings: the sub-trajectory mode must have what it is registered to need."""
        if self.sub_advantage != "auto":
            self._check_sub_advantage(SUB_ADVANTAGE_MODES[self.sub_advantage])

    def _fits(self, mode) -> bool:
        """These settings give ``mode`` (a :class:`~rltutor.rollout.compaction.SubAdvantage`) what it needs."""
        needs = all(getattr(self, k) == v for k, v in mode.requires.items())
        own = mode.estimator is None and self.kl_coef > 0 and self.kl_in_reward  # its advantages skip the KL
        return needs and not own and (self.critic or not mode.needs_critic)

    def _check_sub_advantage(self, mode) -> None:
        fits = ", ".join(n for n, m in SUB_ADVANTAGE_MODES.items() if self._fits(m)) or "none"
        if mode.estimator is None and self.kl_coef > 0 and self.kl_in_reward:
            raise ValueError(
                f"sub_advantage={mode.name!r} gives the advantages themselves (estimator=None), so a KL penalty in "
                f"the reward would not reach them; use kl_in_reward=False (the KL in the loss), or a mode that "
                f"fits: {fits}"
            )
        if self._fits(mode):
            return
        needs = {**mode.requires, **({"critic": True} if mode.needs_critic else {})}
        got = ", ".join(f"{k}={getattr(self, k)!r}" for k in needs)
        preset = {**{k: getattr(Config, k) for k in needs}, **ALGORITHMS[mode.algo]}
        fix = "".join(f" --set {k}={v}" for k, v in needs.items() if preset[k] != v)
        feeds = "its own advantages" if mode.estimator is None else mode.estimator.upper()
        raise ValueError(
            f"sub_advantage={mode.name!r} feeds {feeds}: it needs "
            f"{', '.join(f'{k}={v!r}' for k, v in needs.items())}, got {got}; run it with --algo {mode.algo}{fix}, "
            f"or pick a mode these settings fit: {fits}"
        )

    def _check_numbers(self) -> None:
        """Types and ranges of every numeric field: reject what cannot be meant, naming the valid range."""
        for name in (
            "total_steps",
            "num_envs",
            "num_steps",
            "group_size",
            "num_groups",
            "epochs",
            "minibatches",
            "max_draws",
            "n_layer",
            "n_head",
            "n_embd",
            "max_cmd_tokens",
            "max_obs_tokens",
        ):
            check_int(name, getattr(self, name), 1)
        check_int("seed", self.seed, 0, MAX_SEED, "torch's generators take a signed 64-bit seed")
        check_int("sft_steps", self.sft_steps, 0)
        check_int("eval_every", self.eval_every, 0)
        check_int("critic_warmup", self.critic_warmup, 0)
        if self.torch_threads is not None:
            check_int("torch_threads", self.torch_threads, 1)
        if self.overlong_buffer is not None:
            check_int("overlong_buffer", self.overlong_buffer, 1)
        for name in ("gamma", "lam", "turn_cost", "bc_smoothing"):
            check_number(name, getattr(self, name), 0.0, 1.0)
        for name in ("lr", "sft_lr", "clip_low", "clip_high", "temperature"):
            check_number(name, getattr(self, name), 0.0, None, low_open=True)
        for name in ("ent_coef", "vf_coef", "kl_coef"):
            check_number(name, getattr(self, name), 0.0, None)
        for name in ("max_grad_norm", "target_kl", "vf_clip"):
            if getattr(self, name) is not None:
                check_number(name, getattr(self, name), 0.0, None, low_open=True, none_ok=True)
        if self.dual_clip is not None:
            check_number("dual_clip", self.dual_clip, 1.0, None, low_open=True, none_ok=True)
        for name in ("same_seed", "critic", "shared_trunk", "kl_in_reward", "dynamic_sampling", "anneal_lr"):
            if not isinstance(getattr(self, name), bool | np.bool_):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if not isinstance(self.env_options, dict):
            raise ValueError(f"env_options must be a dict, e.g. {{'horizon': 200}}, got {self.env_options!r}")
        # JSON (config.json) gives lists where a tuple was set (toolshell's hops=(3, 8)): one spelling, hashable
        self.env_options = {k: tuple(v) if isinstance(v, list) else v for k, v in self.env_options.items()}
        if not isinstance(self.hidden, tuple | list):
            raise ValueError(f"hidden must be a tuple of layer sizes, e.g. (64, 64), got {self.hidden!r}")
        self.hidden = tuple(self.hidden)
        for h in self.hidden:
            check_int("hidden sizes", h, 1)

    def context_spec(self) -> ContextSpec:
        """The agent's context settings, whole: what travels to the collector and each context
        (:class:`~rltutor.rollout.context.ContextSpec`, which checks them)."""
        return ContextSpec(
            context_budget=self.context_budget,
            compaction=self.compaction,
            keep_turns=self.keep_turns,
            max_cmd_tokens=self.max_cmd_tokens,
            max_obs_tokens=self.max_obs_tokens,
            train_summary=self.train_summary,
        )

    def to_dict(self) -> dict:
        """The settings as plain data (config.json): the fields of the other model kind are left out."""
        skip = LM_FIELDS if self.model == "mlp" else MLP_FIELDS
        if self.env not in AGENT_ENVS:
            skip = skip + AGENT_FIELDS
        if not self.teachers:
            skip = skip + OPD_FIELDS
        if self.hf_model is None:
            skip = skip + HF_FIELDS
        return {k: v for k, v in dataclasses.asdict(self).items() if k not in skip}

    @classmethod
    def from_dict(cls, d: dict) -> Config:
        """Rebuild a Config from :meth:`to_dict` output (derived fields are recomputed; fields left
        out take their defaults)."""
        init = {f.name for f in dataclasses.fields(cls) if f.init}
        if d.get("sub_advantage") in RENAMED_SUB_ADVANTAGES:  # a run stored before the modes were renamed
            d = {**d, "sub_advantage": RENAMED_SUB_ADVANTAGES[d["sub_advantage"]]}
        unknown = sorted(set(d) - init - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise ValueError(f"unknown config fields {unknown}; valid: {', '.join(sorted(init))}")
        return cls(**{k: v for k, v in d.items() if k in init})


# Algorithms are named sets of overrides of one Config: one loop, many presets.
_GROUP = dict(
    rollout="episodes",
    critic=False,
    norm_adv="none",
    ent_coef=0.0,
    vf_clip=None,
    epochs=1,
    minibatches=4,
    lr=1e-3,
    gamma=1.0,
)
ALGORITHMS: dict[str, dict] = {
    # PPO (Schulman et al. 2017) with a critic and GAE. The defaults of Config are CleanRL's ppo.py.
    "ppo": dict(),
    # GRPO (Shao et al. 2024, DeepSeekMath): no critic, A_i = (r_i - mean_g) / std_g on every step,
    # loss averaged per sequence then over sequences. DeepSeekMath also adds beta=0.04 * k3 toward an
    # SFT reference; from scratch in control there is no reference worth staying near, so kl_coef=0.
    "grpo": dict(_GROUP, estimator="grpo", agg="seq-mean-token-mean"),
    # Dr.GRPO (Liu et al. 2025): no std division, constant normalizer instead of 1/|o|.
    "dr_grpo": dict(_GROUP, estimator="dr_grpo", agg="seq-mean-token-sum-norm"),
    # DAPO (Yu et al. 2025): clip-higher, token-mean, dynamic sampling.
    "dapo": dict(_GROUP, estimator="grpo", agg="token-mean", clip_high=0.28, dynamic_sampling=True),
    # GSPO (Zheng et al. 2025): sequence-level ratio with tiny clip ranges.
    "gspo": dict(_GROUP, estimator="grpo", loss="gspo", clip_low=3e-4, clip_high=4e-4, agg="seq-mean-token-mean"),
    # GMPO (Zhao et al. 2025): geometric mean of token ratios, clip 0.4 in log space.
    "gmpo": dict(_GROUP, estimator="grpo", loss="gmpo", clip_low=0.4, clip_high=0.4),
    # CISPO (MiniMax-M1 2025): clipped, stop-gradient IS weight times log pi.
    "cispo": dict(_GROUP, estimator="grpo", loss="cispo", clip_low=1.0, clip_high=4.0, agg="token-mean"),
    # RLOO (Ahmadian et al. 2024): leave-one-out baseline, plain policy gradient, one step per batch.
    "rloo": dict(_GROUP, estimator="rloo", loss="reinforce", minibatches=1, agg="token-mean"),
    # REINFORCE (Williams 1992): return-to-go, no baseline, one step per batch.
    "reinforce": dict(
        _GROUP, estimator="reinforce", loss="reinforce", minibatches=1, group_size=1, num_groups=16, agg="token-mean"
    ),
    # REINFORCE++ (Hu 2025): return-to-go whitened over the batch.
    "reinforce_pp": dict(_GROUP, estimator="reinforce_pp", loss="ppo", group_size=1, num_groups=16, agg="token-mean"),
    # On-policy distillation (Thinking Machines 2025; slime --use-opd): no task reward (A = 0), the teacher's
    # per-token shift -beta * (log pi - log pi_teacher) is the whole advantage; one sample per prompt, one
    # on-policy gradient step per batch. Needs --teacher RUN_DIR (rltutor.distill).
    "opd": dict(
        _GROUP,
        estimator="zero",
        loss="reinforce",
        group_size=1,
        num_groups=16,
        minibatches=1,
        agg="token-mean",
        opd_coef=1.0,
    ),
}
"""The algorithm presets: each a named set of overrides of :class:`Config` (one loop, many presets)."""


def list_algorithms() -> list[str]:
    return sorted(ALGORITHMS)


def make_config(algo: str = "ppo", **overrides) -> Config:
    """The preset ``algo`` with ``overrides`` applied, e.g. ``make_config("grpo", group_size=16)``."""
    check_choice("algorithm", algo, ALGORITHMS)
    fields = {f.name for f in dataclasses.fields(Config) if f.init}
    unknown = sorted(set(overrides) - fields)
    if unknown:
        raise ValueError(f"unknown config fields {unknown}; valid: {', '.join(sorted(fields))}")
    return Config(**{**ALGORITHMS[algo], "algo": algo, **overrides})


# ----------------------------------------------------------------------------------------------
# Tuned settings per (algorithm, environment), rl-zoo style
# ----------------------------------------------------------------------------------------------

# PPO on CartPole-v1, tuned by hand on seeds 101-103 (the benchmark reports seeds 1-5): rl-zoo's
# gamma/lambda, no entropy bonus, no value clipping, 8 envs x 32 steps, 10 epochs of 2 minibatches,
# Adam at 2e-3 annealed to 0 over 50k env steps (the benchmark's budget; shorter runs stop early).
CARTPOLE_PPO = dict(
    env="CartPole-v1",
    num_envs=8,
    num_steps=32,
    epochs=10,
    minibatches=2,
    lr=2e-3,
    gamma=0.98,
    lam=0.8,
    ent_coef=0.0,
    vf_clip=None,
    total_steps=50_000,
)
# GRPO on CartPole-v1: groups of 8 episodes, 4 groups per update, no critic, 4 epochs of 4 minibatches
# (picked on seed 101 among lr 1e-3..3e-3 and 1..8 epochs).
CARTPOLE_GRPO = dict(env="CartPole-v1", group_size=8, num_groups=4, lr=2e-3, epochs=4, total_steps=50_000)
TUNED: dict[tuple[str, str], dict] = {("ppo", "CartPole-v1"): CARTPOLE_PPO, ("grpo", "CartPole-v1"): CARTPOLE_GRPO}
"""Settings tuned for (algorithm, vector environment); token tasks take theirs from :func:`lm_settings`."""

# ----------------------------------------------------------------------------------------------
# The language-model chapters (06-10)
# ----------------------------------------------------------------------------------------------

LM_ALGOS = ("grpo", "dr_grpo", "dapo", "gspo", "gmpo", "cispo", "rloo", "reinforce_pp", "ppo")
"""The presets that run on token tasks (chapter 10 compares them all)."""

# Token-level PPO: a critic, GAE with gamma = lambda = 1 (a terminal reward must not be discounted or
# decayed over the completion), advantages whitened over the batch (as verl does).
_LM_PPO = dict(
    rollout="episodes",
    critic=True,
    estimator="gae",
    loss="ppo",
    gamma=1.0,
    lam=1.0,
    ent_coef=0.0,
    norm_adv="batch",
    epochs=1,
    minibatches=4,
    vf_clip=None,
    vf_coef=0.5,
    agg="token-mean",
)
LM_OVERRIDES: dict[str, dict] = {
    "dapo": dict(overlong_buffer=2),  # + the preset's clip-higher, token-mean and dynamic sampling
    "ppo": _LM_PPO,
}
"""What the token tasks change in a preset of :data:`ALGORITHMS` (the others run as they are)."""

LM_SCALES = {
    # prompts x group size, RL updates, model width, SFT steps, learning rate
    "quick": dict(num_groups=8, group_size=8, steps=40, n_embd=64, sft_steps=150, lr=3e-4),
    "full": dict(num_groups=16, group_size=8, steps=300, n_embd=128, sft_steps=400, lr=3e-4),
}
"""The language-model chapters' sizes per scale; ``steps`` is the number of RL updates of a chapter's run."""

LM_TASK_OPTIONS = {"addition": {"max_operand": 19}}
"""Task options ``rltutor train`` starts a token task with (chapter 06's short task)."""


def lm_settings(
    algo: str,
    task: str = "addition",
    scale: str | None = None,
    seed: int = 0,
    task_options: dict | None = None,
    **overrides,
) -> dict:
    """The :func:`make_config` keyword arguments for ``algo`` on a token task at this scale: the
    scale's model, SFT, batch and learning rate, then :data:`LM_OVERRIDES`, then ``overrides``."""
    check_choice("language-model algorithm", algo, (*LM_ALGOS, *DISTILL_ALGOS))
    sc = resolve_scale(scale)
    s = LM_SCALES[sc]
    groups = dict(num_groups=s["num_groups"], group_size=s["group_size"])
    if algo in ("reinforce_pp", *DISTILL_ALGOS):  # one completion per prompt, as many prompts: as many completions
        groups = dict(num_groups=s["num_groups"] * s["group_size"], group_size=1)
    env_options = {**(task_options or {}), **overrides.pop("env_options", {})}
    cfg = dict(
        env=task,
        env_options=env_options,
        scale=sc,
        n_embd=s["n_embd"],
        sft_steps=s["sft_steps"],
        **groups,
        lr=s["lr"],
        anneal_lr=False,
        seed=seed,
        device="auto",
        total_steps=10**9,
    )
    cfg.update(LM_OVERRIDES.get(algo, {}))
    cfg.update(overrides)
    return cfg


def template_settings(algo: str, tasks: str = "fixed") -> dict:
    """The template agent's settings for ``algo`` (:data:`TEMPLATE_SETTINGS`; GRPO's for other presets) on the
    task distribution ``tasks`` (:data:`TEMPLATE_TASKS`: ``"fixed"``, the stored default, or ``"mix"``)."""
    check_choice("tasks", tasks, tuple(TEMPLATE_TASKS))
    out = dict(TEMPLATE_SETTINGS.get(algo, TEMPLATE_SETTINGS["grpo"]))
    out["env_options"] = dict(TEMPLATE_TASKS[tasks])
    return {**out, "env": "toolshell", "agent_policy": "templates"}


def tuned_settings(algo: str, env: str, scale: str | None = None) -> dict | None:
    """Settings tuned for ``algo`` on ``env`` (budget and seed left out), or None where there are none."""
    if (algo, env) in TUNED:
        return {k: v for k, v in TUNED[(algo, env)].items() if k not in ("env", "total_steps")}
    if (env in TOKEN_TASKS or env == MULTITASK) and algo in (*LM_ALGOS, *DISTILL_ALGOS):
        s = lm_settings(algo, env, scale, task_options=LM_TASK_OPTIONS.get(env))
        return {k: v for k, v in s.items() if k not in ("algo", "env", "seed", "total_steps")}
    if env in TEXT_TASKS and algo in LM_ALGOS:
        return hf_settings(algo, scale)
    return None


# ----------------------------------------------------------------------------------------------
# A Hugging Face model on a text task (chapter 13)
# ----------------------------------------------------------------------------------------------

HF_SCALES = {
    "quick": dict(num_groups=2, group_size=4, minibatches=2, eval_every=5),
    "full": dict(num_groups=8, group_size=8, minibatches=4, eval_every=10),
}
"""prompts x completions per update for a Hugging Face model ("quick": a tiny model on a CPU; "full": a GPU)"""


def hf_settings(algo: str, scale: str | None = None) -> dict:
    """The settings ``rltutor train --hf-model`` starts ``algo`` from: the LM chapters' (token-level PPO with
    gamma = lambda = 1, :data:`LM_OVERRIDES`), the batch of :data:`HF_SCALES`, Adam at 1e-5 (a pretrained
    model; with LoRA, ``--set lr=1e-4`` is the usual choice), gradient norm clipped to 1, the device "auto"."""
    check_choice("language-model algorithm", algo, LM_ALGOS)
    sc = resolve_scale(scale)
    out = dict(HF_SCALES[sc], scale=sc, lr=1e-5, anneal_lr=False, max_grad_norm=1.0, device="auto", sft_steps=0)
    out.update(LM_OVERRIDES.get(algo, {}))
    out.pop("overlong_buffer", None)  # DAPO's soft overlong penalty is the token tasks' (rltutor.rollout.tokens)
    if algo == "reinforce_pp":
        out.update(num_groups=out["num_groups"] * out["group_size"], group_size=1)
    return out


HF_AGENT = dict(
    env_options={"hops": 1, "max_turns": 4, "max_output_chars": 200},
    context_budget=1024,
    compaction="recent",
    max_cmd_tokens=24,
)
"""what the toolshell agent of a Hugging Face model starts from (``--hf-model PATH --env toolshell``): one-hop tasks
(an honest solve in 3 calls of the 4), a context of 1024 of the model's tokens (a Qwen tokenizer's; a character
tokenizer's tokens are characters), compacted to the most recent turns"""


def hf_agent_settings(algo: str, scale: str | None = None) -> dict:
    """:func:`hf_settings` (batch, lr, the LM PPO) with the agent's tasks and context (:data:`HF_AGENT`)."""
    return {**hf_settings(algo, scale), **HF_AGENT}


# ----------------------------------------------------------------------------------------------
# The one composition: preset, tuned settings, the caller's settings, the command line's flags
# ----------------------------------------------------------------------------------------------


def _multitask_env(env: str, sets: dict, flags: dict) -> tuple[str, dict, dict]:
    """``env="addition,sequence"``: the "multitask" environment with those tasks (flags' env_options), each
    with its :data:`LM_TASK_OPTIONS` unless ``sets`` names the env_options."""
    tasks = tuple(t.strip() for t in env.split(","))
    for t in tasks:
        check_choice("token task (in --env TASK,TASK)", t, TOKEN_TASKS)
    options = {k: v for t in tasks for k, v in LM_TASK_OPTIONS.get(t, {}).items()}
    sets = {"env_options": options, **sets}
    flags = {**flags, "env_options": {"tasks": tasks, **flags.get("env_options", {})}}
    return MULTITASK, sets, flags


HPARAMS = ("tuned", "defaults")
"""``resolve``'s ``hparams``: apply :func:`tuned_settings` where there are some, or only the preset's own"""


def resolve(
    algo: str = "ppo",
    env: str | None = None,
    scale: str | None = None,
    hparams: str = "tuned",
    sets: dict | None = None,
    flags: dict | None = None,
) -> Config:
    """The :class:`Config` of a new run, composed in one order (later layers win):

    1. the preset ``algo`` (:data:`ALGORITHMS`) over Config's defaults;
    2. with ``hparams="tuned"``, :func:`tuned_settings` for (``algo``, ``env``, ``scale``): TUNED for vector
       environments, :func:`lm_settings` for token tasks; none elsewhere;
    3. on ``env="toolshell"``, the agent: ``agent_policy`` is "templates" unless a later layer names one, and
       the template agent's settings (:func:`template_settings`: its tasks, batch, budget) apply whatever
       ``hparams`` says;
    4. ``sets``: settings by field name (a lab's overrides, ``rltutor train --set``), each replacing the
       field whole (``env_options`` too);
    5. ``flags``: settings given one by one (``rltutor train --steps``, ``--seed``...), which win over
       ``sets``; their ``env_options`` are merged key by key into the ones resolved so far (``--horizon``).

    ``env`` and ``scale`` default to the ones ``sets`` names, then to Config's ("CartPole-v1", "quick"); an
    explicit one wins and is what the tuned settings are looked up for (a caller wanting the
    ``RLTUTOR_QUICK`` default passes ``utils.resolve_scale(None)``). The preset is ``algo`` only: ``sets``
    naming ``algo`` is refused. Bad values are one ValueError naming them, including a batch that needs more
    steps than the whole budget.

    Six arguments, not one dict, because the layers are what differ between callers: the command line
    passes all six, the agent lab ``sets`` only, the LM lab ``scale`` and ``sets``.
    """
    sets, flags = dict(sets or {}), dict(flags or {})
    if env is not None and "," in env:  # several token tasks in one student (rltutor.distill.MultiTask)
        env, sets, flags = _multitask_env(env, sets, flags)
    for given in (sets, flags):
        if "algo" in given:
            raise ValueError(f"--set algo={given['algo']}: pick the preset with --algo {given['algo']}")
    check_choice("hparams", hparams, HPARAMS)
    env = env if env is not None else sets.get("env", Config.env)
    scale = scale if scale is not None else sets.get("scale", Config.scale)
    settings: dict = {"scale": scale}
    tuned = tuned_settings(algo, env, scale) if hparams == "tuned" else None
    settings.update(tuned or {})
    settings.update(sets)
    settings.update({k: v for k, v in flags.items() if k != "env_options"})
    settings.update(env=env, scale=scale)
    if env in AGENT_ENVS and {**sets, **flags}.get("hf_model") is not None:  # a Hugging Face model plays the agent
        settings = {**(hf_agent_settings(algo, scale) if hparams == "tuned" else {}), **settings}
        settings.setdefault("agent_policy", "tokens")
    if env in AGENT_ENVS:
        settings.setdefault("agent_policy", "templates")
        if settings["agent_policy"] == "templates":
            settings = {**template_settings(algo), **settings}
    env_options = {**settings.pop("env_options", {}), **flags.get("env_options", {})}
    try:
        config = make_config(algo, env_options=env_options, **settings)
    except (TypeError, KeyError) as e:  # a value of the wrong kind that the checks did not name
        raise ValueError(f"bad config value: {e}") from None
    if config.rollout == "episodes" and config.rollout_envs > config.total_steps:
        raise ValueError(
            f"one update collects group_size x num_groups = {config.group_size} x {config.num_groups} = "
            f"{config.rollout_envs} episodes of at least one step each, more than the whole budget of "
            f"{config.total_steps} steps; lower --group-size (or --set num_groups) or raise --steps"
        )
    return config
