"""The ``rltutor`` command line.

    rltutor train --algo ppo --env CartPole-v1 --steps 100000 --seed 1 --out runs/ppo
    rltutor train --algo grpo --group-size 8 --env corridor --horizon 200 --out runs/grpo
    rltutor train --algo ppo --set lr=1e-3 --set epochs=10 --out runs/ppo_fast
    rltutor train --env toolshell --algo grpo --guard decoy --out runs/agent   # the template agent (default)
    rltutor train --out runs/ppo --resume          # continue from runs/ppo/checkpoint.pt
    rltutor train --algo opd --teacher runs/add --teacher runs/seq --env addition,sequence --out runs/student
    rltutor list                                   # algorithms, environments, estimators, losses, agent settings
    rltutor export --to verl runs/grpo             # the run's settings as verl, TRL or slime settings

The settings of a new run are composed by :func:`rltutor.config.resolve` (preset, tuned settings, ``--set``,
then the flags). ``train`` writes to ``--out``: ``config.json`` (the resolved config), ``metrics.csv`` (one row per
update: env_steps, episode_return = mean return of the episodes finished in that update, losses,
entropy, approx_kl, clip_frac, grad_norm, explained_variance, zero_std_frac, time_s...),
``learning_curve.png`` and ``checkpoint.pt``. metrics.csv grows by one flushed row per update, so a
crash keeps the metrics so far. A folder that already holds a run is refused unless ``--resume`` (continue
it, with its stored config: flags that contradict it are refused, and so is a budget below the steps
done; a hand-edited config.json is named and rewritten from the checkpoint) or ``--overwrite`` (delete
it first). A run holds a lock on its folder (``OUT/.lock``, ``flock``: the system releases it when the
process ends, even by a crash), so a second run into the same folder is refused while the first lives.
Ctrl-C finishes the update, saves a checkpoint and says how to resume (exit 130). Bad input is one line
on stderr and exit 2; a failed write (a full disk) is one line and exit 1, the files kept as the last
complete write left them.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import glob
import json
import os
import sys
import types
import typing

__all__ = ["main"]

RUN_FILES = ("checkpoint.pt", "config.json", "metrics.csv")
"""files that mark a folder as holding a run"""
OUTPUT_FILES = RUN_FILES + ("learning_curve.png",)
LOCK_FILE = ".lock"
"""held (flock) by the run that writes into the folder; left in place, empty, when the run ends"""
CORRIDOR_FLAGS = (("--horizon", "horizon"), ("--reward-noise", "reward_noise"))
"""the corridor's own flags and the env option each sets (plus --no-observe-progress)"""
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


def _field_types() -> dict[str, object]:
    """Config's settable fields and their annotated types (derived fields left out)."""
    from rltutor.config import Config

    hints = typing.get_type_hints(Config)
    return {f.name: hints[f.name] for f in dataclasses.fields(Config) if f.init}


def _parse_value(key: str, text: str, tp) -> object:
    """``text`` read as the annotated type ``tp`` of the Config field ``key``; ValueError if it is not one."""
    s = text.strip()
    args = typing.get_args(tp)
    if typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in args:
        if s.lower() in ("none", "null"):
            return None
        tp = next(a for a in args if a is not type(None))
    bad = f"--set {key}={text}: {key} expects "
    if tp is bool:
        if s.lower() in _TRUE:
            return True
        if s.lower() in _FALSE:
            return False
        raise ValueError(bad + f"true or false, got {text!r}")
    if tp is int:
        try:
            return int(s)
        except ValueError:
            try:
                f = float(s)  # 1e5
            except ValueError:
                f = None
            if f is not None and f.is_integer():
                return int(f)
            raise ValueError(bad + f"an integer, got {text!r}") from None
    if tp is float:
        try:
            return float(s)
        except ValueError:
            raise ValueError(bad + f"a number, got {text!r}") from None
    if typing.get_origin(tp) is tuple:  # hidden=64,64 or (64, 64) or 64
        parts = [p.strip() for p in s.strip("()[] ").split(",") if p.strip()]
        try:
            return tuple(int(p) for p in parts)
        except ValueError:
            raise ValueError(bad + f"comma-separated integers such as 64,64, got {text!r}") from None
    if tp is dict:
        try:
            v = ast.literal_eval(s)
        except (ValueError, SyntaxError):
            v = None
        if not isinstance(v, dict):
            raise ValueError(bad + f"a dict such as {{'horizon': 200}}, got {text!r}")
        return v
    return s  # a string: agg=token-mean, device=cuda


def _parse_set(items: list[str]) -> dict:
    """``--set KEY=VALUE`` items as Config overrides, each value read as its field's type."""
    types_ = _field_types()
    out = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"--set expects KEY=VALUE, got {item!r}; e.g. --set lr=1e-3")
        k, v = item.split("=", 1)
        k = k.strip()
        if k not in types_:
            raise ValueError(f"--set {item}: unknown config field {k!r}; valid: {', '.join(sorted(types_))}")
        out[k] = _parse_value(k, v, types_[k])
    return out


def _check_out(out: str) -> None:
    """``--out`` must be a folder we can create or write into; checked before anything is written."""
    if not out.strip():
        raise ValueError(f"--out must name a folder, got {out!r}; e.g. --out runs/ppo")
    if os.path.exists(out) and not os.path.isdir(out):
        raise ValueError(f"--out {out} is a file, not a folder; give a folder path")
    probe = os.path.abspath(out)
    while not os.path.exists(probe):
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        raise ValueError(f"--out {out}: {probe} is a file, so the folder cannot be made there")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ValueError(f"--out {out}: cannot write into {probe} (permission denied); pick another folder")


@contextlib.contextmanager
def _locked(out: str, create: bool):
    """Hold an exclusive lock on the run folder ``out`` (``out/.lock``) while the block runs.

    A second run into the same folder finds the lock taken and is refused (ValueError) instead of
    mixing its files with the first's. The lock is an ``flock`` on an open file, so the system drops
    it when the process ends, however it ends: a crashed run leaves an empty ``.lock`` behind, never
    a stale lock. With ``create``, the folder is made first; if the block then fails before anything
    but the lock was written, the folder is removed again (bad input leaves nothing behind).
    """
    made = create and not os.path.isdir(out)
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        raise ValueError(f"--out {out}: cannot create the folder ({e.strerror}); pick another folder") from None
    path = os.path.join(out, LOCK_FILE)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise ValueError(f"--out {out}: cannot create {path} ({e.strerror}); pick another folder") from None
    ok = False
    try:
        if not _try_lock(fd):
            raise ValueError(
                f"{out} is in use by another rltutor run (it holds {path}); wait for it to end, or pick another --out"
            )
        yield
        ok = True
    finally:
        os.close(fd)  # releases the lock
        if made and not ok and os.listdir(out) == [LOCK_FILE]:
            with contextlib.suppress(OSError):
                os.remove(path)
                os.rmdir(out)


def _try_lock(fd: int) -> bool:
    """An exclusive, non-blocking lock on the open file ``fd``; False if another process holds it."""
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _plot(history, path: str, title: str) -> None:
    """learning_curve.png: :func:`rltutor.views.curves.save_learning_curve`, drawn without a display."""
    import matplotlib

    matplotlib.use("Agg")
    from rltutor.views.curves import save_learning_curve

    save_learning_curve(history, path, title=title)


def _agent_flags(args):
    """The multi-turn agent's flags (env toolshell) with the Config fields they set."""
    return (
        (args.context_budget, "context_budget"),
        (args.compaction, "compaction"),
        (args.sub_advantage, "sub_advantage"),
        (args.guard, "guard"),
        (args.agent_policy, "agent_policy"),
    )


def _hf_flags(args):
    """The Hugging Face model's flags (``--hf-model``, ``--lora-rank``; chapter 13) with the Config fields they set."""
    return ((args.hf_model, "hf_model"), (args.lora_rank, "lora_rank"))


def _resume_conflicts(args, stored: dict) -> list[str]:
    """The flags given with --resume that contradict the run's stored config, each with the stored value."""
    opts = stored.get("env_options", {})
    given = [
        ("--algo", args.algo, stored.get("algo")),
        ("--env", args.env, stored.get("env")),
        ("--seed", args.seed, stored.get("seed")),
        ("--group-size", args.group_size, stored.get("group_size")),
        ("--scale", args.scale, stored.get("scale")),
        ("--horizon", args.horizon, opts.get("horizon")),
        ("--reward-noise", args.reward_noise, opts.get("reward_noise")),
        *((f"--{key.replace('_', '-')}", flag, stored.get(key)) for flag, key in _agent_flags(args)),
        ("--teacher", list(args.teacher) or None, list(stored.get("teachers", ()))),
        *((f"--{key.replace('_', '-')}", flag, stored.get(key)) for flag, key in _hf_flags(args)),
    ]
    bad = [f"{flag} {new} (the run's is {old!r})" for flag, new, old in given if new is not None and new != old]
    if args.no_observe_progress and opts.get("observe_progress", True):
        bad.append("--no-observe-progress (the run's corridor shows the agent its progress)")
    if args.hparams is not None:
        bad.append(f"--hparams {args.hparams} (applies to a new run only)")
    for k, v in _parse_set(args.set).items():
        old = stored.get(k)
        same = list(v) == list(old) if isinstance(v, tuple) and isinstance(old, list | tuple) else v == old
        if k != "total_steps" and not same:
            bad.append(f"--set {k}={v!r} (the run's is {old!r})")
    return bad


TOKEN_AGENT_NOTE = (
    "rltutor: warning: --agent-policy tokens (a TinyGPT writing each command) is not expected to learn in CPU "
    "minutes on the default 3-hop tasks: in chapter 11 (rltutor.experiments.token_agent), after a curriculum warm "
    "start of 3600 supervised steps (587 CPU s) it solved 13/16 at 1 hop, 12/16 at 2 hops, 2/16 at 3 hops "
    "(greedy), so RL would have little reward to learn from on those; the template agent (--agent-policy "
    "templates, the default) learns in CPU minutes"
)
"""printed once when a new toolshell run uses the token agent (the measurement: chapter 11, agents and compaction,
the paragraph "Learning curves of these modes, and with which agent"; tests/test_token_agent.py checks the
numbers against the stored rltutor/data/agents/token_agent.csv)"""


def _new_config(args):
    """The Config of a new run from the flags (:func:`rltutor.config.resolve`); bad values are a ValueError
    naming them."""
    from rltutor.config import AGENT_ENVS, resolve, tuned_settings

    algo = "ppo" if args.algo is None else args.algo  # --algo "" is an unknown name, not the default
    flags = {
        key: flag
        for flag, key in (
            (args.steps, "total_steps"),
            (args.seed, "seed"),
            (args.group_size, "group_size"),
            *_agent_flags(args),
            *_hf_flags(args),
        )
        if flag is not None
    }
    if args.teacher:  # on-policy distillation (rltutor.distill): the teachers' run folders
        flags["teachers"] = tuple(args.teacher)
    if args.hf_model is not None and args.env is None:  # --hf-model alone selects the adapter and its task
        args.env = "addition-text"
    env_options = {key: getattr(args, key) for _, key in CORRIDOR_FLAGS if getattr(args, key) is not None}
    if args.no_observe_progress:
        env_options["observe_progress"] = False
    if env_options:
        flags["env_options"] = env_options
    hparams = args.hparams or "tuned"
    config = resolve(algo, args.env, args.scale, hparams, _parse_set(args.set), flags)
    corridor = [flag for flag, key in CORRIDOR_FLAGS if getattr(args, key) is not None]
    corridor += ["--no-observe-progress"] if args.no_observe_progress else []
    if corridor and config.env != "corridor":
        raise ValueError(
            f"{' and '.join(corridor)} set{'s' if len(corridor) == 1 else ''} options of the corridor "
            f"environment, not of {config.env!r}; drop {'it' if len(corridor) == 1 else 'them'} or use --env "
            "corridor (an environment's own options go in --set env_options={...})"
        )
    if hparams == "tuned" and tuned_settings(algo, config.env, config.scale) is not None:
        print(
            f"using tuned settings for {algo} on {config.env} at {config.scale} scale (--hparams defaults for the "
            "preset's own)"
        )
    elif hparams == "tuned" and config.env in AGENT_ENVS and config.hf_model is not None:
        print(
            f"using the Hugging Face agent's settings for {algo} on {config.env} (rltutor.config.hf_agent_settings: "
            "one-hop tasks, 1024 of the model's tokens; --hparams defaults for the preset's own)"
        )
    if config.env in AGENT_ENVS and config.agent_policy == "tokens" and config.hf_model is None:
        print(TOKEN_AGENT_NOTE, file=sys.stderr)
    return config


def _remove_run(out: str) -> None:
    for name in OUTPUT_FILES:
        path = os.path.join(out, name)
        if os.path.exists(path):
            os.remove(path)
    for tmp in glob.glob(os.path.join(glob.escape(out), "*.tmp*")):
        os.remove(tmp)


def _config_file_note(path: str, stored: dict) -> str | None:
    """What is wrong with the run's config.json next to its checkpoint's config, or None if they agree."""
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        return f"{path} was missing; it is written again from the checkpoint"
    try:
        on_disk = json.loads(text)
    except json.JSONDecodeError as e:
        return f"{path} is not valid JSON ({e.msg} at line {e.lineno}); it is rewritten from the checkpoint"
    expected = json.loads(json.dumps(stored))  # tuples as lists, as config.json spells them
    if not isinstance(on_disk, dict):
        return f"{path} holds a {type(on_disk).__name__}, not a config; it is rewritten from the checkpoint"
    gone = object()
    differ = sorted(k for k in set(on_disk) | set(expected) if on_disk.get(k, gone) != expected.get(k, gone))
    if not differ:
        return None
    shown = "; ".join(
        f"{k}: {on_disk.get(k, '(absent)')!r} in the file, {expected.get(k, '(absent)')!r} in the checkpoint"
        for k in differ[:3]
    )
    more = f" and {len(differ) - 3} more" if len(differ) > 3 else ""
    return (
        f"{path} was edited ({shown}{more}); a resumed run continues with its checkpoint's config, so "
        "config.json is rewritten from it (a new run with other settings needs another --out)"
    )


def _train(args) -> int:
    from rltutor.train import Trainer

    if args.checkpoint_every < 1:
        raise ValueError(f"--checkpoint-every must be >= 1 (updates between checkpoints), got {args.checkpoint_every}")
    if args.steps is not None and args.steps < 1:
        raise ValueError(f"--steps must be >= 1 (environment steps), got {args.steps}")
    if args.resume and args.overwrite:
        raise ValueError("--resume continues the run in --out and --overwrite deletes it: give one of them")
    _check_out(args.out)
    ckpt = os.path.join(args.out, "checkpoint.pt")
    if args.resume:
        if not os.path.exists(ckpt):
            raise ValueError(f"--resume: no checkpoint at {ckpt}; run without --resume first")
        with _locked(args.out, create=False):  # read the checkpoint only once no other run can write it
            state = Trainer.read_checkpoint(ckpt)
            bad = _resume_conflicts(args, state["config"])
            if bad:
                raise ValueError(
                    f"--resume continues the run in {args.out} with its stored config; these flags "
                    f"contradict it: {'; '.join(bad)}. Drop them (only --steps may change), or start a "
                    "new run in another --out"
                )
            budget = args.steps or dict(_parse_set(args.set)).get("total_steps")  # from_state refuses one too low
            note = _config_file_note(os.path.join(args.out, "config.json"), state["config"])
            trainer = Trainer.from_state(state, source=ckpt, **({"total_steps": budget} if budget else {}))
            if note:
                print(f"rltutor: note: {note}", file=sys.stderr)
            return _run(args, trainer, ckpt)
    config = _new_config(args)
    with _locked(args.out, create=True):  # from the check to the last write: no second run can interleave
        found = [n for n in RUN_FILES if os.path.exists(os.path.join(args.out, n))]
        if found and not args.overwrite:
            raise ValueError(
                f"{args.out} already holds a run ({', '.join(found)}); continue it with "
                f"rltutor train --out {args.out} --resume, delete it with --overwrite, or pick "
                "another --out"
            )
        try:
            trainer = Trainer(config)
        except TypeError as e:  # an environment refusing an option: bad input, not a bug
            if not config.env_options or "keyword argument" not in str(e):
                raise
            raise ValueError(
                f"env_options {config.env_options} do not fit the {config.env!r} environment ({e})"
            ) from None
        if args.overwrite:
            _remove_run(args.out)
        return _run(args, trainer, ckpt)


def _run(args, trainer, ckpt: str) -> int:
    """Write config.json, train (metrics.csv and checkpoint.pt as it goes), plot: the run itself."""
    from rltutor.utils import write_atomic

    config = trainer.config
    metrics = os.path.join(args.out, "metrics.csv")
    plot = os.path.join(args.out, "learning_curve.png")
    title = f"{config.algo} on {config.env}, seed {config.seed}"

    def write_config(tmp: str) -> None:
        with open(tmp, "w") as f:
            json.dump(config.to_dict(), f, indent=2)

    try:
        write_atomic(os.path.join(args.out, "config.json"), write_config)
        try:
            history = trainer.train(
                progress=not args.no_progress, checkpoint=ckpt, checkpoint_every=args.checkpoint_every, metrics=metrics
            )
        except KeyboardInterrupt:
            if trainer.last_saved is None:
                print(
                    f"rltutor: interrupted before the first checkpoint; nothing to resume in {args.out}",
                    file=sys.stderr,
                )
                return 130
            if trainer.history:
                _plot(trainer.history_frame(), plot, title)
            update, steps = trainer.last_saved
            print(
                f"rltutor: interrupted; {ckpt} holds update {update} ({steps} env steps); continue with: "
                f"rltutor train --out {args.out} --resume",
                file=sys.stderr,
            )
            return 130
        _plot(history, plot, title)
    except OSError as e:  # a full disk, a folder removed under the run: the system's word, in one line
        saved = trainer.last_saved
        where = f"{ckpt} holds update {saved[0]} ({saved[1]} env steps)" if saved else "no checkpoint was written"
        print(
            f"rltutor: error: writing the run failed ({e.strerror or e}: {e.filename or args.out}); every file "
            f"in {args.out} is as its last complete write left it, {where}; fix the cause (free space?) "
            f"and continue with: rltutor train --out {args.out} --resume",
            file=sys.stderr,
        )
        return 1
    from rltutor.views.curves import outcome

    print(
        f"done: {trainer.env_steps} env steps in {trainer.elapsed:.1f} s, {outcome(history)}; "
        f"wrote {args.out}/metrics.csv, config.json, learning_curve.png, checkpoint.pt"
    )
    return 0


def _list(args) -> int:
    from rltutor.advantages import list_estimators
    from rltutor.config import AGENT_POLICIES, list_algorithms
    from rltutor.distill import DIVERGENCES
    from rltutor.envs import list_envs
    from rltutor.guard.wrapper import POLICIES
    from rltutor.losses import list_policy_losses
    from rltutor.rollout.compaction import COMPACTIONS, SUB_ADVANTAGE_MODES

    print("algorithms:    ", ", ".join(list_algorithms()))
    print("environments:  ", ", ".join(list_envs()))
    print("estimators:    ", ", ".join(list_estimators()))
    print("losses:        ", ", ".join(list_policy_losses()))
    print("distillation:   --teacher RUN_DIR (one per task of --env); divergences:", ", ".join(DIVERGENCES))
    print("toolshell agent (--env toolshell):")
    print("  agent policies:", ", ".join(AGENT_POLICIES))
    print("  compactions:   ", ", ".join(COMPACTIONS))
    print("  guards:        ", ", ".join(POLICIES))
    print("  sub-advantages: auto (the registered default for the critic setting), or")
    for name, mode in SUB_ADVANTAGE_MODES.items():
        print(f"    {name}: {mode.what}")
    return 0


def _guard(args) -> int:
    from rltutor.guard import Guard

    v = Guard.default().inspect(args.command_text)
    print(f"{'blocked' if v.blocked else 'allowed'} (stage: {v.stage or '-'}): {v.reason}")
    return 1 if v.blocked else 0


def _export(args) -> int:
    """``rltutor export --to verl|trl|slime RUN``: the run's settings in the target's words (rltutor.export)."""
    from rltutor.export import TARGETS, export, format_export, load_config
    from rltutor.utils import check_choice

    check_choice("export target", args.to, TARGETS)  # before the run is read: a bad --to is named first
    config = load_config(args.run)
    sys.stdout.write(format_export(export(config, args.to), origin=args.run))
    return 0


def _add_export_parser(sub) -> None:
    e = sub.add_parser(
        "export",
        help="print a run's settings as verl Hydra overrides, TRL GRPOConfig/RLOOConfig fields or slime flags",
        description="One name=value per line; lines starting with # name the settings with no equivalent there.",
    )
    e.add_argument(  # checked by rltutor.export.export (its TARGETS), so that building the parser imports nothing
        "--to", required=True, metavar="{verl,trl,slime}", help="the framework to export to"
    )
    e.add_argument("run", metavar="RUN", help="a run folder written by rltutor train, or its config.json")
    e.set_defaults(func=_export)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rltutor", description="rltutor: RL for language models, small enough to read.")
    sub = p.add_subparsers(dest="command", metavar="{train,list,guard,export}")
    t = sub.add_parser("train", help="train a policy with one of the registered algorithms")
    t.add_argument("--algo", default=None, help="a preset: ppo (default), grpo, dr_grpo, dapo, rloo... (rltutor list)")
    t.add_argument("--env", default=None, help="environment name, e.g. CartPole-v1, Acrobot-v1, corridor")
    t.add_argument(
        "--steps",
        type=int,
        default=None,
        help="training budget in environment steps; the lr anneals linearly to 0 at it. With --resume, "
        "a new budget: the lr continues from its value at the checkpoint down to 0 at the new "
        "budget (never back up); the same budget continues the run exactly",
    )
    t.add_argument("--seed", type=int, default=None, help="random seed (default 1)")
    t.add_argument("--out", required=True, help="output directory")
    t.add_argument("--group-size", type=int, default=None, help="G, episodes per group (GRPO family)")
    t.add_argument("--horizon", type=int, default=None, help="corridor length T")
    t.add_argument("--reward-noise", type=float, default=None, help="corridor reward noise std")
    t.add_argument(
        "--no-observe-progress",
        action="store_true",
        help="corridor: the agent's observation leaves out its progress along the corridor "
        "(env option observe_progress=False; --no-progress is the progress bar)",
    )
    t.add_argument("--context-budget", type=int, default=None, help="toolshell: tokens per context before compaction")
    t.add_argument(
        "--compaction", default=None, help="toolshell: how a context that outgrows its budget shrinks (rltutor list)"
    )
    t.add_argument(
        "--sub-advantage", default=None, help="toolshell: how sub-trajectories get their advantages (rltutor list)"
    )
    t.add_argument(
        "--guard", default=None, help="toolshell: what a call the guard blocks gets, or none: no guard (rltutor list)"
    )
    t.add_argument(
        "--agent-policy",
        default=None,
        help="toolshell: templates (the default: an MLP picks a templated call, learns in CPU minutes) or tokens "
        "(a TinyGPT writes each command; not expected to learn in CPU minutes)",
    )
    t.add_argument(
        "--teacher",
        action="append",
        default=[],
        metavar="RUN_DIR",
        help="on-policy distillation: a stored run (its checkpoint.pt and config.json) whose policy scores each token "
        "the student samples; one per task of --env (--env addition,sequence: one for each), its task read from its "
        "config. --algo opd distils alone; on other presets add --set opd_coef=0.1 (repeatable)",
    )
    t.add_argument(
        "--hf-model",
        default=None,
        metavar="NAME_OR_FOLDER",
        help="train a Hugging Face causal LM (a hub name, or a local folder saved with save_pretrained) on a text "
        "task (--env addition-text, the default, or countdown-text), or as the toolshell agent (--env toolshell: "
        "the model writes each command); needs pip install 'rltutor[hf]'",
    )
    t.add_argument(
        "--lora-rank", type=int, default=None, help="with --hf-model: train rank-R LoRA adapters only (0: every weight)"
    )
    t.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override any Config field, read as its type: --set lr=1e-3, --set anneal_lr=false, "
        "--set hidden=64,64, --set max_grad_norm=none (repeatable)",
    )
    t.add_argument(
        "--hparams",
        choices=("tuned", "defaults"),
        default=None,
        help="tuned: settings tuned for this algorithm and environment where we have them "
        "(rltutor.config.tuned_settings, the default); defaults: the preset's own",
    )
    t.add_argument(
        "--scale",
        choices=("quick", "full"),
        default=None,
        help="the size tuned settings are taken from (token tasks: model width, SFT steps, batch): "
        "quick (default) for a CPU, full for a GPU; recorded in config.json",
    )
    t.add_argument("--checkpoint-every", type=int, default=10, help="updates between checkpoints")
    t.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in OUT from OUT/checkpoint.pt with its stored config (flags that "
        "contradict it are refused; --steps may set a new budget)",
    )
    t.add_argument(
        "--overwrite",
        action="store_true",
        help="OUT holds a run: delete its checkpoint, config, metrics and plot first",
    )
    t.add_argument("--no-progress", action="store_true", help="no progress bar")
    t.set_defaults(func=_train)
    ls = sub.add_parser("list", help="list algorithms, environments, estimators, losses and the agent's settings")
    ls.set_defaults(func=_list)
    g = sub.add_parser("guard", help="inspect one tool call with the reward-hack guard (exit 0 allowed, 1 blocked)")
    g.add_argument("command_text", metavar="COMMAND", help='a toolshell call, e.g. "cat tests/hidden/test_a.py"')
    g.set_defaults(func=_guard)
    _add_export_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return args.func(args)
    except ValueError as e:  # bad input, named by the check that caught it; a bug elsewhere keeps its traceback
        print(f"rltutor: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("rltutor: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
