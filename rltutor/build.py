"""From a config to the objects a run needs: ``build(config) -> (policy, collector)``.

The one place that wires a model to an environment:

* a vector environment (CartPole, the corridor...) gets an :class:`~rltutor.models.mlp.MLPActorCritic`
  and a :class:`~rltutor.rollout.vector.SegmentCollector` (PPO) or
  :class:`~rltutor.rollout.vector.EpisodeCollector` (groups of G episodes);
* a token task gets a seeded :class:`~rltutor.models.gpt.TinyGPT`, warm-started by :func:`sft`,
  wrapped in an :class:`~rltutor.models.lm_policy.LMPolicy` (with a critic when ``config.critic``),
  and an :class:`~rltutor.rollout.tokens.LMCollector` of ``num_groups`` prompts x ``group_size``
  completions;
* an agent environment (toolshell) gets the chooser ``config.agent_policy`` names (:func:`agent_chooser`:
  a TinyGPT that writes commands in an LMPolicy, or a
  :class:`~rltutor.models.template_policy.TemplatePolicy` that picks them), its network warm-started on
  the scripted honest solver's demonstrations played through the run's own context
  (:func:`agent_warm_start`), and an :class:`~rltutor.rollout.agent.AgentCollector` (:func:`agent_collector`,
  which a lab calls too) of ``num_groups`` tasks x ``group_size`` episodes, with the context settings of
  :meth:`~rltutor.config.Config.context_spec` and the environments of :func:`agent_env_factory` (behind
  the guard when ``config.guard`` is set).

Warm starts are cached per setting (:func:`warm_start`, :func:`agent_warm_start`), so GRPO and PPO runs
of one experiment start from the very same weights. The reference policy of the KL penalty is the trainer's frozen
copy of the policy it is given.
"""

from __future__ import annotations

import dataclasses

import torch

from rltutor.config import AGENT_ENVS, Config
from rltutor.envs import make_env
from rltutor.envs.tokens import VOCAB, TokenTask
from rltutor.envs.toolshell import VOCAB as TOOL_VOCAB
from rltutor.envs.toolshell import ToolShell, scripted_solver
from rltutor.guard import Guard
from rltutor.guard.wrapper import GuardedEnv
from rltutor.models.gpt import TinyGPT
from rltutor.models.lm_policy import LMPolicy, make_model
from rltutor.models.mlp import MLPActorCritic
from rltutor.models.template_policy import TemplatePolicy
from rltutor.rollout.agent import AgentCollector, TokenChooser, demonstrations, sft_step
from rltutor.rollout.compaction import SUB_ADVANTAGE_MODES, resolve_sub_advantage
from rltutor.rollout.oracle import MCBoundaryValue
from rltutor.rollout.templates import CAND_DIM, STATE_DIM, TemplateChooser
from rltutor.rollout.tokens import LMCollector
from rltutor.rollout.vector import EpisodeCollector, SegmentCollector
from rltutor.utils import get_device

__all__ = [
    "build",
    "sft",
    "warm_start",
    "agent_chooser",
    "agent_warm_start",
    "agent_env_factory",
    "agent_collector",
    "build_hf",
]


_SFT_CACHE: dict = {}  # warm-started weights by setting, so runs that should share a start do


def _cached_start(key: tuple, module: torch.nn.Module, train) -> None:
    """Give ``module`` the warm-started weights of setting ``key``: ``train()`` (which trains ``module`` in
    place) runs once per setting in a process; later calls copy the cached CPU weights into ``module``."""
    if key not in _SFT_CACHE:
        train()
        _SFT_CACHE[key] = {k: v.detach().cpu().clone() for k, v in module.state_dict().items()}
    module.load_state_dict(_SFT_CACHE[key])


def build(config: Config):
    """The policy and collector ``config`` asks for (see the module docstring)."""
    if not isinstance(config, Config):
        raise ValueError(
            f"config must be an rltutor.config.Config, got {type(config).__name__}; "
            "use rltutor.config.make_config('ppo', ...)"
        )
    env = make_env(config.env, num_envs=config.rollout_envs, seed=config.seed, **config.env_options)
    if config.hf_model is not None:
        return build_hf(config, env)
    if config.env in AGENT_ENVS:
        return _build_agent(config, env)
    if isinstance(env, TokenTask):
        policy = LMPolicy(
            warm_start(config, env, config.device),
            critic_kind=config.critic_kind if config.critic else "none",
            temperature=config.temperature,
        )
        collector = LMCollector(
            env,
            n_prompts=config.num_groups,
            group_size=config.group_size,
            overlong_buffer=config.overlong_buffer,
            max_draws=config.max_draws,
        )
        return policy, collector
    if config.max_draws > 1:
        raise ValueError(
            f"max_draws={config.max_draws}: refilling dropped groups is implemented for token tasks "
            f"(rltutor.rollout.tokens.LMCollector), not for {config.env!r}; use max_draws=1 here"
        )
    policy = MLPActorCritic(
        env.obs_dim, env.n_actions, hidden=config.hidden, shared=config.shared_trunk, critic=config.critic
    )
    if config.rollout == "segments":
        collector = SegmentCollector(env, num_steps=config.num_steps, gamma=config.gamma)
    else:
        collector = EpisodeCollector(
            env, group_size=config.group_size, same_seed=config.same_seed, seed=config.seed, gamma=config.gamma
        )
    return policy, collector


def agent_env_factory(config: Config, env: ToolShell):
    """``make_env() -> env``: copies of ``env``'s task settings, each in a :class:`~rltutor.guard.wrapper.GuardedEnv`
    (one shared :meth:`~rltutor.guard.Guard.default` guard) when ``config.guard`` is not "none"."""
    knobs = env.knobs
    if config.guard == "none":
        return lambda: ToolShell(**knobs)
    guard = Guard.default()
    return lambda: GuardedEnv(ToolShell(**knobs), guard, config.guard, seed=config.seed)


def agent_chooser(config: Config) -> TokenChooser | TemplateChooser:
    """The chooser ``config.agent_policy`` names: a :class:`~rltutor.rollout.agent.TokenChooser` (TinyGPT
    writes the commands) or a :class:`~rltutor.rollout.templates.TemplateChooser` (a template policy picks
    them)."""
    if config.agent_policy == "templates":
        return TemplateChooser(max_cands=64, smoothing=config.bc_smoothing)
    return TokenChooser(config.max_cmd_tokens)


_DEMOS = {"templates": 128, "tokens": 256}  # scripted honest solves each warm start learns from


def agent_warm_start(config: Config, env: ToolShell | None = None, device=None):
    """The agent's network after ``config.sft_steps`` supervised steps (lr ``config.sft_lr``) on scripted honest
    solves played through the run's own context and compactions
    (:func:`~rltutor.rollout.agent.demonstrations`): the chooser's ``clone``. With ``agent_policy="tokens"``
    the TinyGPT (seeded with ``config.seed``, block_size = ``context_budget``; 256 demonstrations), with
    ``"templates"`` the :class:`~rltutor.models.template_policy.TemplatePolicy` (128 demonstrations, label
    smoothing ``config.bc_smoothing``). Cached per setting."""
    if env is None:
        env = make_env(config.env, seed=config.seed, **config.env_options)
    spec, chooser, knobs = config.context_spec(), agent_chooser(config), env.knobs
    templates = config.agent_policy == "templates"
    key = (
        "agent",
        config.agent_policy,
        tuple(sorted(knobs.items())),
        *((config.bc_smoothing, config.critic) if templates else (config.n_layer, config.n_head, config.n_embd)),
        config.sft_steps,
        config.sft_lr,
        config.seed,
        dataclasses.astuple(spec),
    )
    if templates:
        torch.manual_seed(config.seed)
        net = TemplatePolicy(CAND_DIM, STATE_DIM, hidden=64, critic=config.critic)
    else:
        net = make_model(
            len(TOOL_VOCAB), config.context_budget, config.n_layer, config.n_head, config.n_embd, config.seed, device
        )

    def clone():
        g = torch.Generator().manual_seed(config.seed)
        demos = demonstrations(
            lambda: ToolShell(**knobs), scripted_solver, _DEMOS[config.agent_policy], chooser, spec, seed=config.seed
        )
        chooser.clone(net, demos, steps=config.sft_steps, lr=config.sft_lr, generator=g)

    _cached_start(key, net, clone)
    return net.to(get_device(device)) if templates and device else net


def _build_agent(config: Config, env: ToolShell):
    """A multi-turn agent: the chooser ``config.agent_policy`` names (:func:`agent_chooser`), its network
    warm-started on the scripted honest solver's demonstrations (:func:`agent_warm_start`; for the token
    chooser wrapped in an :class:`~rltutor.models.lm_policy.LMPolicy`) and an
    :class:`~rltutor.rollout.agent.AgentCollector`. ``sub_advantage="auto"``: the registry's default
    (:func:`rltutor.rollout.compaction.resolve_sub_advantage`: ``ppo_bootstrap`` with a critic, else
    ``full_outcome_batch_group``); for the template chooser without compaction, every turn's reward where it is paid
    (``None``: one row per episode)."""
    net = agent_warm_start(config, env, config.device)
    if config.agent_policy == "tokens":
        critic_kind = config.critic_kind if config.critic else "none"
        net = LMPolicy(net, critic_kind=critic_kind, temperature=config.temperature)
    return net, agent_collector(config, env)


def agent_collector(config: Config, env: ToolShell | None = None, boundary_value=None, chooser=None) -> AgentCollector:
    """The :class:`~rltutor.rollout.agent.AgentCollector` of an agent ``config``, with every setting the command
    line gives it (tasks x G, the context, the sub-advantage mode, gamma, lambda, the turn cost, ``row_weight``):
    what :func:`build` wires, for a lab that makes its own policy. ``env``: the environment whose task settings
    the episodes copy (default the config's own). ``boundary_value``: the collector's hook for a mode that
    reads the oracle (``ppo_oracle_bootstrap``); by default such a mode gets
    :class:`~rltutor.rollout.oracle.MCBoundaryValue` with 16 rollouts per boundary, seeded with the run's seed.
    ``chooser``: who writes each command (default the config's own, :func:`agent_chooser`; chapter 13 passes a
    Hugging Face model's)."""
    if env is None:
        env = make_env(config.env, seed=config.seed, **config.env_options)
    sub = resolve_sub_advantage(config.sub_advantage, config.critic)  # "auto": the registered default
    if config.agent_policy == "templates" and config.compaction == "none" and config.sub_advantage == "auto":
        sub = None  # one row per episode: every turn's reward where it is paid
    if sub is not None and SUB_ADVANTAGE_MODES[sub].oracle and boundary_value is None:
        boundary_value = MCBoundaryValue(16, config.gamma, config.turn_cost, seed=config.seed)
    return AgentCollector(
        agent_env_factory(config, env),
        agent_chooser(config) if chooser is None else chooser,
        num_tasks=config.num_groups,
        group_size=config.group_size,
        spec=config.context_spec(),
        sub_advantage=sub,
        gamma=config.gamma,
        turn_cost=config.turn_cost,
        lam=config.lam,
        row_weight=config.row_weight,
        boundary_value=boundary_value,
    )


# ----------------------------------------------------------------------------------------------
# A Hugging Face causal LM on a text task (chapter 13)
# ----------------------------------------------------------------------------------------------


def build_hf(config: Config, task=None):
    """An :class:`~rltutor.models.hf.HFPolicy` of ``config.hf_model`` (loaded by
    :func:`~rltutor.models.hf.load_hf`; LoRA, gradient checkpointing and the precision of the config) and a
    :class:`~rltutor.rollout.text.TextCollector` of ``num_groups`` problems x ``group_size`` completions on the
    text task ``task`` (by default the config's own), or on toolshell an
    :class:`~rltutor.rollout.agent.AgentCollector` whose :class:`~rltutor.rollout.hf_agent.HFChooser` lets the
    model write each command. No warm start: the model is pretrained."""
    from rltutor.models.hf import HFPolicy, load_hf, pick_dtype
    from rltutor.rollout.text import TextCollector

    if task is None:
        task = make_env(config.env, seed=config.seed, **config.env_options)
    for name, off in (("max_draws", 1), ("overlong_buffer", None)):
        if getattr(config, name) != off:
            raise ValueError(
                f"{name}={getattr(config, name)!r}: DAPO's refill and soft overlong penalty are implemented for "
                f"the token tasks (rltutor.rollout.tokens), not yet for a text task; use {name}={off}"
            )
    device = get_device(config.device)
    dtype = pick_dtype(device, config.hf_dtype)
    model, tokenizer = load_hf(config.hf_model, device, dtype)
    policy = HFPolicy(
        model,
        tokenizer,
        critic_kind=config.critic_kind if config.critic else "none",
        temperature=config.temperature,
        lora_rank=config.lora_rank,
        grad_checkpointing=config.grad_checkpointing,
        dtype=dtype,
    )
    if config.env in AGENT_ENVS:  # the toolshell agent: the model writes each command (rltutor.rollout.hf_agent)
        return policy, _hf_agent_collector(config, task, policy)
    collector = TextCollector(task, tokenizer, n_prompts=config.num_groups, group_size=config.group_size)
    return policy, collector


def _hf_agent_collector(config: Config, env: ToolShell, policy) -> AgentCollector:
    """The one :class:`~rltutor.rollout.agent.AgentCollector` with an :class:`~rltutor.rollout.hf_agent.HFChooser`:
    the Hugging Face model writes each command, its context counted in the model's own tokens."""
    from rltutor.rollout.hf_agent import HFChooser

    limit = getattr(policy.model.config.get_text_config(), "max_position_embeddings", None)
    if limit is not None and config.context_budget > limit:
        raise ValueError(
            f"context_budget={config.context_budget} is more than the model's {limit} positions; "
            f"--set context_budget={limit} (or less)"
        )
    return agent_collector(config, env, chooser=HFChooser(policy.tokenizer, config.max_cmd_tokens))


# ----------------------------------------------------------------------------------------------
# The supervised warm start
# ----------------------------------------------------------------------------------------------


def warm_start(config: Config, task: TokenTask | None = None, device=None) -> TinyGPT:
    """The TinyGPT of ``config`` (seeded with ``config.seed``) after ``config.sft_steps`` steps of
    :func:`sft` on ``task`` (by default the config's own): computed once per setting in a process,
    then copied from a cache."""
    if task is None:
        task = make_env(config.env, seed=config.seed, **config.env_options)
    key = (
        config.env,
        tuple(sorted(config.env_options.items())),
        config.n_layer,
        config.n_head,
        config.n_embd,
        config.sft_steps,
        config.sft_lr,
        config.seed,
    )
    model = make_model(
        getattr(task, "vocab_size", len(VOCAB)),  # a multi-task prompt's task tokens (rltutor.distill.MultiTask)
        task.prompt_len + task.max_new_tokens,
        config.n_layer,
        config.n_head,
        config.n_embd,
        seed=config.seed,
        device=device,
    )
    _cached_start(
        key,
        model,
        lambda: sft(
            model, task, steps=config.sft_steps, lr=config.sft_lr, generator=torch.Generator().manual_seed(config.seed)
        ),
    )
    return model


def sft(
    model: TinyGPT,
    task: TokenTask,
    steps: int = 200,
    batch_size: int = 64,
    lr: float = 3e-3,
    generator: torch.Generator | None = None,
) -> list[float]:
    """Supervised fine-tuning on correct completions: cross-entropy on the completion tokens only.

    Returns the loss of each step. Few steps give a policy that is right some of the time, which is
    where RL has something to do.
    """
    if not isinstance(steps, int) or steps < 0:
        raise ValueError(f"steps must be a non-negative integer, got {steps!r}")
    device = next(model.parameters()).device
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr, weight_decay=0.0)
    losses = []
    model.train()
    for _ in range(steps):
        tokens, loss_mask = task.sft_batch(batch_size, generator)
        losses.append(sft_step(model, opt, tokens.to(device), loss_mask.to(device)))
    return losses
