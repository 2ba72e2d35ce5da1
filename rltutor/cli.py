"""The ``rltutor`` command line.

    rltutor train --algo ppo --env CartPole-v1 --steps 100000 --seed 1 --out runs/ppo
    rltutor train --algo grpo --group-size 8 --env corridor --horizon 200 --out runs/grpo
    rltutor train --algo ppo --set lr=1e-3 --set epochs=10 --out runs/ppo_fast
    rltutor train --out runs/ppo --resume          # continue from runs/ppo/checkpoint.pt
    rltutor list                                   # algorithms, environments, estimators, losses

``train`` writes to ``--out``: ``config.json`` (the resolved config), ``metrics.csv`` (one row per
update: env_steps, episode_return = mean return of the episodes finished in that update, losses,
entropy, approx_kl, clip_frac, grad_norm, explained_variance, zero_std_frac, time_s...),
``learning_curve.png`` and ``checkpoint.pt``.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys

__all__ = ["main"]

def _parse_set(items: list[str]) -> dict:
    out = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"--set expects KEY=VALUE, got {item!r}; e.g. --set lr=1e-3")
        k, v = item.split("=", 1)
        try:
            out[k.strip()] = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            out[k.strip()] = v  # a bare string such as agg=token-mean
    return out


def plot_learning_curve(history, path: str, title: str = "") -> None:
    """Save a PNG of episode return against environment steps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(history["env_steps"], history["episode_return"], alpha=0.35, label="mean return in the update")
    ax.plot(history["env_steps"], history["return_last10"], label="mean of the last 10 episodes")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("episode return")
    ax.set_title(title)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _train(args) -> int:
    from rltutor.config import Config, make_config, tuned_settings
    from rltutor.train import Trainer

    os.makedirs(args.out, exist_ok=True)
    ckpt = os.path.join(args.out, "checkpoint.pt")
    if args.resume:
        if not os.path.exists(ckpt):
            raise ValueError(f"--resume: no checkpoint at {ckpt}; run without --resume first")
        trainer = Trainer.load(ckpt, **({"total_steps": args.steps} if args.steps else {}))
    else:
        overrides = {"scale": args.scale}
        env = args.env or Config.env
        tuned = tuned_settings(args.algo, env, args.scale) if args.hparams == "tuned" else None
        if tuned is not None:
            overrides.update(tuned)
            print(f"using tuned settings for {args.algo} on {env} at {args.scale} scale "
                  "(--hparams defaults for the preset's own)")
        overrides.update(_parse_set(args.set))
        for flag, key in ((args.env, "env"), (args.steps, "total_steps"), (args.seed, "seed"),
                          (args.group_size, "group_size")):
            if flag is not None:
                overrides[key] = flag
        for flag, key in ((args.context_budget, "context_budget"), (args.compaction, "compaction"),
                          (args.sub_advantage, "sub_advantage"), (args.guard, "guard"),
                          (args.agent_policy, "agent_policy")):  # the multi-turn agent (env toolshell)
            if flag is not None:
                overrides[key] = flag
        if overrides.get("agent_policy") == "templates":  # the template agent's settings; --set and flags win
            from rltutor.config import template_settings

            overrides = {**template_settings(args.algo), **overrides}
        env_options = dict(overrides.pop("env_options", {}))
        if args.horizon is not None:
            env_options["horizon"] = args.horizon
        if args.reward_noise is not None:
            env_options["reward_noise"] = args.reward_noise
        if args.hide_progress:
            env_options["observe_progress"] = False
        config = make_config(args.algo, env_options=env_options, **overrides)
        trainer = Trainer(config)
    config: Config = trainer.config
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config.to_dict(), f, indent=2)
    history = trainer.train(progress=not args.no_progress, checkpoint=ckpt, checkpoint_every=args.checkpoint_every)
    history.to_csv(os.path.join(args.out, "metrics.csv"), index=False)
    plot_learning_curve(history, os.path.join(args.out, "learning_curve.png"),
                        title=f"{config.algo} on {config.env}, seed {config.seed}")
    last = history["return_last10"].iloc[-1] if len(history) else float("nan")
    print(f"done: {trainer.env_steps} env steps in {trainer.elapsed:.1f} s, mean return of the last 10 "
          f"episodes {last:.3g}; wrote {args.out}/metrics.csv, config.json, learning_curve.png, checkpoint.pt")
    return 0


def _list(args) -> int:
    from rltutor.advantages import list_estimators
    from rltutor.config import list_algorithms
    from rltutor.envs import list_envs
    from rltutor.losses import list_policy_losses

    print("algorithms:  ", ", ".join(list_algorithms()))
    print("environments:", ", ".join(list_envs()))
    print("estimators:  ", ", ".join(list_estimators()))
    print("losses:      ", ", ".join(list_policy_losses()))
    return 0


def _guard(args) -> int:
    from rltutor.guard import Guard

    v = Guard.default().inspect(args.command_text)
    print(f"{'blocked' if v.blocked else 'allowed'} (stage: {v.stage or '-'}): {v.reason}")
    return 1 if v.blocked else 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rltutor", description="rltutor: RL for language models, small enough to read.")
    sub = p.add_subparsers(dest="command", metavar="{train,list,guard}")
    t = sub.add_parser("train", help="train a policy with one of the registered algorithms")
    t.add_argument("--algo", default="ppo", help="a preset: ppo, grpo, dr_grpo, dapo, rloo... (rltutor list)")
    t.add_argument("--env", default=None, help="environment name, e.g. CartPole-v1, Acrobot-v1, corridor")
    t.add_argument("--steps", type=int, default=None, help="training budget in environment steps")
    t.add_argument("--seed", type=int, default=None, help="random seed (default 1)")
    t.add_argument("--out", required=True, help="output directory")
    t.add_argument("--group-size", type=int, default=None, help="G, episodes per group (GRPO family)")
    t.add_argument("--horizon", type=int, default=None, help="corridor length T")
    t.add_argument("--reward-noise", type=float, default=None, help="corridor reward noise std")
    t.add_argument("--hide-progress", action="store_true", help="corridor: do not observe progress")
    t.add_argument("--context-budget", type=int, default=None, help="toolshell: tokens per context before compaction")
    t.add_argument("--compaction", default=None, help="toolshell: none, recent or summary")
    t.add_argument("--sub-advantage", default=None, help="toolshell: ppo_bootstrap, slime_grpo... (rltutor list)")
    t.add_argument("--guard", choices=("none", "abort", "penalize", "decoy"), default=None,
                   help="toolshell: what a call the guard blocks gets (none: no guard)")
    t.add_argument("--agent-policy", choices=("tokens", "templates"), default=None,
                   help="toolshell: a TinyGPT writes commands (tokens) or an MLP picks templates (templates)")
    t.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override any Config field, e.g. --set lr=1e-3 (repeatable)")
    t.add_argument("--hparams", choices=("tuned", "defaults"), default="tuned",
                   help="tuned: settings tuned for this algorithm and environment where we have them "
                        "(rltutor.config.tuned_settings); defaults: the preset's own")
    t.add_argument("--scale", choices=("quick", "full"), default="quick",
                   help="the size tuned settings are taken from (token tasks: model width, SFT steps, batch): "
                        "quick for a CPU, full for a GPU; recorded in config.json")
    t.add_argument("--checkpoint-every", type=int, default=10, help="updates between checkpoints")
    t.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt")
    t.add_argument("--no-progress", action="store_true", help="no progress bar")
    t.set_defaults(func=_train)
    ls = sub.add_parser("list", help="list algorithms, environments, estimators and losses")
    ls.set_defaults(func=_list)
    g = sub.add_parser("guard", help="inspect one tool call with the reward-hack guard (exit 0 allowed, 1 blocked)")
    g.add_argument("command_text", metavar="COMMAND", help='a toolshell call, e.g. "cat tests/hidden/test_a.py"')
    g.set_defaults(func=_guard)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return args.func(args)
    except ValueError as e:
        print(f"rltutor: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
