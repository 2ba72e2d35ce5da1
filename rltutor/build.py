"""From a config to the objects a run needs: ``build(config) -> (policy, collector)``.

The one place that wires a model to an environment:

* a vector environment (CartPole, the corridor...) gets an :class:`~rltutor.models.mlp.MLPActorCritic`
  and a :class:`~rltutor.rollout.vector.SegmentCollector` (PPO) or
  :class:`~rltutor.rollout.vector.EpisodeCollector` (groups of G episodes);
* a token task gets a seeded :class:`~rltutor.models.gpt.TinyGPT`, warm-started by :func:`sft`,
  wrapped in an :class:`~rltutor.models.lm_policy.LMPolicy` (with a critic when ``config.critic``),
  and an :class:`~rltutor.rollout.tokens.LMCollector` of ``num_groups`` prompts x ``group_size``
  completions.

The warm start is cached per setting (:func:`warm_start`), so GRPO and PPO runs of one experiment
start from the very same weights. The reference policy of the KL penalty is the trainer's frozen
copy of the policy it is given.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

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
from rltutor.rollout.agent import AgentCollector, play_scripted
from rltutor.rollout.compaction import resolve_sub_advantage
from rltutor.rollout.templates import CAND_DIM, STATE_DIM, TemplateCollector, behaviour_clone, template_demos
from rltutor.rollout.tokens import LMCollector
from rltutor.rollout.vector import EpisodeCollector, SegmentCollector

__all__ = [
    "build",
    "sft",
    "warm_start",
    "agent_demos",
    "agent_sft",
    "agent_warm_start",
    "agent_env_factory",
    "template_warm_start",
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
    if config.env in AGENT_ENVS:
        return _build_agent(config, env)
    if isinstance(env, TokenTask):
        device = None if config.device == "auto" else config.device
        policy = LMPolicy(
            warm_start(config, env, device),
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


def _agent_kwargs(config: Config) -> dict:
    return dict(
        context_budget=config.context_budget,
        compaction=config.compaction,
        keep_turns=config.keep_turns,
        max_cmd_tokens=config.max_cmd_tokens,
        max_obs_tokens=config.max_obs_tokens,
        train_summary=config.train_summary,
    )


def agent_env_factory(config: Config, env: ToolShell):
    """``make_env() -> env``: copies of ``env``'s task settings, each in a :class:`~rltutor.guard.wrapper.GuardedEnv`
    (one shared :meth:`~rltutor.guard.Guard.default` guard) when ``config.guard`` is not "none"."""
    knobs = env.knobs
    if config.guard == "none":
        return lambda: ToolShell(**knobs)
    guard = Guard.default()
    return lambda: GuardedEnv(ToolShell(**knobs), guard, config.guard, seed=config.seed)


def _template_context(config: Config) -> dict:
    """The template collector's context settings (the token agent's: budget, compaction, room, observation
    length)."""
    return dict(
        context_budget=config.context_budget,
        compaction=config.compaction,
        keep_turns=config.keep_turns,
        max_cmd_tokens=config.max_cmd_tokens,
        max_obs_tokens=config.max_obs_tokens,
    )


def template_warm_start(config: Config, env: ToolShell, device=None) -> TemplatePolicy:
    """The template policy (seeded with ``config.seed``) after ``config.sft_steps`` steps of behaviour
    cloning on 128 scripted honest solves (label smoothing ``config.bc_smoothing``); cached per setting."""
    key = (
        "templates",
        tuple(sorted(env.knobs.items())),
        config.sft_steps,
        config.sft_lr,
        config.bc_smoothing,
        config.seed,
        config.critic,
        tuple(sorted(_template_context(config).items())) if config.compaction != "none" else (),
    )
    torch.manual_seed(config.seed)
    policy = TemplatePolicy(CAND_DIM, STATE_DIM, hidden=64, critic=config.critic)

    def clone():
        knobs = env.knobs
        # demonstrations through the same compactions RL will meet
        context = _template_context(config) if config.compaction != "none" else None
        demos = template_demos(lambda: ToolShell(**knobs), scripted_solver, 128, seed=config.seed, context=context)
        behaviour_clone(
            policy,
            demos,
            steps=config.sft_steps,
            lr=config.sft_lr,
            smoothing=config.bc_smoothing,
            generator=torch.Generator().manual_seed(config.seed),
        )

    _cached_start(key, policy, clone)
    return policy.to(device) if device else policy


def _build_agent(config: Config, env: ToolShell):
    """A multi-turn agent: a TinyGPT over the toolshell vocabulary, warm-started on the scripted honest
    solver's demonstrations, and an :class:`~rltutor.rollout.agent.AgentCollector`; or, with
    ``agent_policy="templates"``, a :class:`~rltutor.models.template_policy.TemplatePolicy` cloned from the
    same solver and a :class:`~rltutor.rollout.templates.TemplateCollector`."""
    make = agent_env_factory(config, env)
    sub = resolve_sub_advantage(config.sub_advantage, config.critic)  # "auto": the registered default
    if config.agent_policy == "templates":
        device = None if config.device == "auto" else config.device
        # without compaction and with sub_advantage "auto", every turn's reward where it is paid (one row per
        # episode); otherwise the episode's outcome assigned to its sub-trajectories by the chosen mode
        per_turn = config.compaction == "none" and config.sub_advantage == "auto"
        collector = TemplateCollector(
            make,
            num_tasks=config.num_groups,
            group_size=config.group_size,
            turn_cost=config.turn_cost,
            sub_advantage=None if per_turn else sub,
            gamma=config.gamma,
            **_template_context(config),
        )
        return template_warm_start(config, env, device), collector
    device = None if config.device == "auto" else config.device
    critic_kind = config.critic_kind if config.critic else "none"
    policy = LMPolicy(agent_warm_start(config, env, device), critic_kind=critic_kind, temperature=config.temperature)
    collector = AgentCollector(
        make,
        num_tasks=config.num_groups,
        group_size=config.group_size,
        sub_advantage=sub,
        gamma=config.gamma,
        **_agent_kwargs(config),
    )
    return policy, collector


def agent_demos(env: ToolShell, n: int, seed: int = 0, **kwargs) -> list:
    """``n`` episodes of the scripted honest solver on fresh tasks, played through the collector's own
    context and compaction logic (:func:`rltutor.rollout.agent.play_scripted`): rows for :func:`agent_sft`.
    The honest solver only: hacking, if it comes, is discovered by RL."""
    twin = ToolShell(**env.knobs)
    rng = torch.Generator().manual_seed(seed)
    episodes = []
    for i in range(n):
        twin.reset(seed=int(torch.randint(0, 2**31 - 1, (1,), generator=rng)))
        episodes.append(play_scripted(twin, scripted_solver(twin), task=i, **kwargs))
    return episodes


def agent_sft(
    model: TinyGPT,
    episodes: list,
    steps: int = 200,
    batch_size: int = 32,
    lr: float = 3e-3,
    generator: torch.Generator | None = None,
) -> list[float]:
    """Supervised fine-tuning on demonstration sub-trajectories: cross-entropy on their trained (generated)
    tokens only, the same positions RL trains. Returns the loss of each step."""
    from rltutor.rollout.agent import episodes_to_batch

    if not isinstance(steps, int) or steps < 0:
        raise ValueError(f"steps must be a non-negative integer, got {steps!r}")
    device = next(model.parameters()).device
    rows, _ = episodes_to_batch(episodes)
    tokens, mask = rows["tokens"], rows["mask"]  # (R, L), (R, L - 1)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr, weight_decay=0.0)
    losses = []
    model.train()
    for _ in range(steps):
        idx = torch.randint(0, len(tokens), (min(batch_size, len(tokens)),), generator=generator)
        m = mask[idx].to(device)
        width = int((m > 0).nonzero()[:, 1].max()) + 2  # drop the padding after the last trained token
        x = tokens[idx, :width].to(device)
        losses.append(_sft_step(model, opt, x, m[:, : width - 1]))
    return losses


def agent_warm_start(config: Config, env: ToolShell | None = None, device=None) -> TinyGPT:
    """The agent's TinyGPT (seeded with ``config.seed``, block_size = ``context_budget``) after
    ``config.sft_steps`` steps of :func:`agent_sft` on scripted demonstrations; cached per setting."""
    if env is None:
        env = make_env(config.env, seed=config.seed, **config.env_options)
    key = (
        "agent",
        config.env,
        tuple(sorted(config.env_options.items())),
        config.n_layer,
        config.n_head,
        config.n_embd,
        config.sft_steps,
        config.sft_lr,
        config.seed,
        tuple(sorted(_agent_kwargs(config).items())),
    )
    model = make_model(
        len(TOOL_VOCAB),
        config.context_budget,
        config.n_layer,
        config.n_head,
        config.n_embd,
        seed=config.seed,
        device=device,
    )

    def train():
        g = torch.Generator().manual_seed(config.seed)
        demos = agent_demos(env, 256, seed=config.seed, **_agent_kwargs(config))
        agent_sft(model, demos, steps=config.sft_steps, lr=config.sft_lr, generator=g)

    _cached_start(key, model, train)
    return model


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
        len(VOCAB),
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
        losses.append(_sft_step(model, opt, tokens.to(device), loss_mask.to(device)))
    return losses


def _sft_step(model: TinyGPT, opt: torch.optim.Optimizer, tokens: torch.Tensor, loss_mask: torch.Tensor) -> float:
    """One step of next-token cross-entropy on ``tokens`` (n, L), counted where ``loss_mask`` (n, L - 1) is 1
    (position j predicts token j + 1). Both warm starts, token tasks and the agent's, take it."""
    logits, _ = model(tokens[:, :-1])  # (n, L - 1, V)
    nll = F.cross_entropy(logits.transpose(1, 2), tokens[:, 1:], reduction="none")  # (n, L - 1)
    loss = (nll * loss_mask).sum() / loss_mask.sum()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.item()
