"""Experiments on a tiny language model: token-level PPO with a critic against GRPO and its family.

Chapters 06-10. Every run is the one trainer (:class:`rltutor.train.Trainer`) with a preset from
:data:`rltutor.config.LM_ALGOS` and the settings of :func:`rltutor.config.lm_settings`, on a
token task from :mod:`rltutor.envs.tokens`, starting from the same supervised warm start (SFT).
Each experiment takes ``scale`` ("quick": seconds on a CPU; "full": a GPU) and ``seed`` and
returns pandas DataFrames (plain records); plotting never re-runs training.

1. :func:`short_task` -- GRPO vs PPO (value head / separate critic) on 2-digit addition: reward,
   and what the critic costs in parameters, training-state memory and time.
2. :func:`horizon` -- the same comparison as the completion length L of the sequence task grows.
3. :func:`length_bias` -- GRPO's per-response 1/|o| against Dr.GRPO's constant normalizer: the
   per-token weight of a wrong answer as a function of its length, and the length of wrong answers
   during training.
4. :func:`clip_higher` -- entropy under symmetric clipping (0.2, 0.2) and DAPO's clip-higher (0.2, 0.28).
5. :func:`family` -- GRPO, Dr.GRPO, DAPO, GSPO, GMPO, CISPO, RLOO, REINFORCE++ and PPO side by side.
"""

from __future__ import annotations

import time

import pandas as pd
import torch

from rltutor.build import warm_start
from rltutor.config import LM_ALGOS, LM_SCALES, lm_settings, make_config
from rltutor.models.lm_policy import CRITICS, LMPolicy, critic_cost
from rltutor.rollout.tokens import LMCollector
from rltutor.train import Trainer
from rltutor.utils import get_device, resolve_scale

__all__ = [
    "lm_config",
    "run_lm",
    "short_task",
    "horizon",
    "length_bias",
    "clip_higher",
    "family",
    "aggregation_weights",
    "critic_overhead",
    "dynamic_sampling",
]


def make_env_task(config):
    """The token task a config trains on (the registry's object, built from ``config.env_options``)."""
    from rltutor.envs import make_env

    return make_env(config.env, seed=config.seed, **config.env_options)


def lm_config(
    algo: str,
    task: str = "addition",
    scale: str | None = None,
    seed: int = 0,
    task_options: dict | None = None,
    **overrides,
):
    """A trainer :class:`~rltutor.config.Config` for ``algo`` on a token task at this scale."""
    return make_config(algo, **lm_settings(algo, task, scale, seed, task_options, **overrides))


def run_lm(config, steps: int, label: str | None = None) -> pd.DataFrame:
    """Train for ``steps`` updates; one record per update with the trainer's and the sampler's metrics."""
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    device = get_device(None if config.device == "auto" else config.device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    trainer = Trainer(config)
    cost = critic_cost(trainer.policy)
    rows = []
    t0 = time.perf_counter()
    for _ in range(steps):
        row = trainer.step()  # the trainer's metrics and the collector's (accuracy, draws...)
        rows.append(
            {
                "algo": label or config.algo,
                "update": row["update"],
                "seed": config.seed,
                "reward": row["score"],
                "accuracy": row["accuracy"],
                "response_length": row["response_length"],
                "wrong_length": row["wrong_length"],
                "truncated": row["truncated"],
                "entropy": row["sample_entropy"],
                # an update that dynamic sampling left without rows has no loss statistics
                **{
                    k: row.get(k, float("nan"))
                    for k in ("clip_frac", "approx_kl", "zero_std_frac", "explained_variance", "grad_norm")
                },
                "rows": row["rows"],
                "draws": row["draws"],
                "time_s": time.perf_counter() - t0,
                **cost,
            }
        )
    df = pd.DataFrame(rows)
    df["peak_cuda_mb"] = torch.cuda.max_memory_allocated() / 2**20 if device.type == "cuda" else float("nan")
    return df


def _summary(curves: pd.DataFrame, last: int = 10) -> pd.DataFrame:
    """Per algorithm: reward at the start and over the last ``last`` updates, time per update, cost."""
    out = []
    for algo, d in curves.groupby("algo", sort=False):
        d = d.sort_values("update")
        first = d[d["update"] <= 3]  # the first three updates: the warm-started policy
        out.append(
            {
                "algo": algo,
                "reward_start": first.reward.mean(),
                "reward_end": d.reward.tail(last).mean(),
                "entropy_end": d.entropy.tail(last).mean(),
                "clip_frac": d.clip_frac.mean(),
                "s_per_update": d.time_s.iloc[-1] / len(d),
                "actor_params": d.actor_params.iloc[0],
                "critic_params": d.critic_params.iloc[0],
                "train_state_mb": d.train_state_bytes.iloc[0] / 2**20,
                "peak_cuda_mb": d.peak_cuda_mb.iloc[0],
            }
        )
    return pd.DataFrame(out)


def short_task(scale: str | None = None, seed: int = 0):
    """Experiment 1: GRPO vs PPO on 2-digit addition. Returns (curves, summary).

    PPO runs twice: critic as a value head on the policy's trunk, and as a separate model of the same
    size. All three start from the same SFT weights.
    """
    sc = resolve_scale(scale)
    steps = LM_SCALES[sc]["steps"]
    task_options = dict(max_operand=19) if sc == "quick" else dict(max_operand=49)
    runs = [
        ("grpo", "GRPO", {}),
        ("ppo", "PPO (value head)", dict(critic_kind="head")),
        ("ppo", "PPO (separate critic)", dict(critic_kind="separate")),
    ]
    curves = pd.concat(
        [
            run_lm(lm_config(a, "addition", sc, seed, task_options=task_options, **o), steps, label)
            for a, label, o in runs
        ],
        ignore_index=True,
    )
    return curves, _summary(curves)


def critic_overhead(scale: str | None = None, seed: int = 0, repeats: int = 15) -> pd.DataFrame:
    """What a critic costs per training pass: the same batch through ``evaluate`` + backward for a
    policy without a critic, with a value head, and with a separate critic.

    The three are timed in turns (none, head, separate, none, ...) in one process, so a busy machine
    slows all three alike; the median over ``repeats`` turns is reported, with parameters and the
    training state (fp32 weights, gradients and Adam's two moments: 16 bytes per parameter).
    """
    s = LM_SCALES[resolve_scale(scale)]
    cfg = lm_config("grpo", "addition", scale, seed, task_options=dict(max_operand=19), sft_steps=0)  # speed only
    task = make_env_task(cfg)
    policies = {kind: LMPolicy(warm_start(cfg, task), critic_kind=kind) for kind in CRITICS}
    batch, _ = LMCollector(task, s["num_groups"], s["group_size"]).collect(
        policies["none"], torch.Generator().manual_seed(seed)
    )
    m = batch["mask"]
    times: dict[str, list[float]] = {kind: [] for kind in CRITICS}
    for _ in range(repeats + 1):
        for kind, policy in policies.items():
            t0 = time.perf_counter()
            out = policy.evaluate(batch)
            loss = -(out["logp"] * m).sum() / m.sum()
            if out["values"] is not None:
                loss = loss + ((out["values"] * m) ** 2).sum() / m.sum()
            policy.zero_grad(set_to_none=True)
            loss.backward()
            times[kind].append(time.perf_counter() - t0)
    rows = []
    for kind, policy in policies.items():
        c = critic_cost(policy)
        rows.append(
            {
                "critic": kind,
                "actor_params": c["actor_params"],
                "critic_params": c["critic_params"],
                "train_state_mb": c["train_state_bytes"] / 2**20,
                "fwd_bwd_ms": 1000 * float(pd.Series(times[kind][1:]).median()),
            }
        )  # drop the warm-up turn
    df = pd.DataFrame(rows)
    df["time_vs_none"] = df.fwd_bwd_ms / df.fwd_bwd_ms.iloc[0]
    return df


def horizon(scale: str | None = None, seed: int = 0, lengths=None):
    """Experiment 2: GRPO vs PPO (value head) on the sequence task as its length L grows.

    Returns (curves with a column ``L``, summary per (L, algo)).
    """
    sc = resolve_scale(scale)
    lengths = lengths or ([4, 32] if sc == "quick" else [4, 16, 32, 64])
    steps = {"quick": 30, "full": 300}[sc]
    sft_steps = {"quick": 60, "full": 120}[sc]
    curves, summary = [], []
    for L in lengths:
        runs = [
            run_lm(lm_config(a, "sequence", sc, seed, task_options=dict(L=L), sft_steps=sft_steps), steps, label)
            for a, label in (("grpo", "GRPO"), ("ppo", "PPO"))
        ]
        c = pd.concat(runs, ignore_index=True).assign(L=L)
        curves.append(c)
        summary.append(_summary(c).assign(L=L))
    summary = pd.concat(summary, ignore_index=True)
    summary["gain"] = summary.reward_end - summary.reward_start
    return pd.concat(curves, ignore_index=True), summary


def aggregation_weights(max_len: int = 16, advantage: float = -1.0) -> pd.DataFrame:
    """The gradient each token of one response receives, dL/dlogp_t, under each aggregation mode.

    One group of two responses: the one of interest has length n (1..max_len) and advantage
    ``advantage``; the other is of length 1. Computed with autograd through
    :func:`rltutor.losses.policy_loss`, not from a formula.
    """
    from rltutor.losses import policy_loss

    rows = []
    for mode in ("seq-mean-token-mean", "seq-mean-token-sum-norm", "token-mean"):
        for n in range(1, max_len + 1):
            mask = torch.zeros(2, max_len)
            mask[0, :n], mask[1, :1] = 1, 1
            logp = torch.zeros(2, max_len, requires_grad=True)
            adv = torch.tensor([[advantage], [-advantage]]).expand(2, max_len) * mask
            loss, _ = policy_loss(logp, logp.detach(), adv, mask, kind="ppo", agg=mode)
            loss.backward()
            w = -logp.grad[0, 0].item()  # the push on log pi of one token (a wrong answer: < 0)
            rows.append({"agg": mode, "length": n, "per_token_weight": w, "per_response_weight": w * n})
    return pd.DataFrame(rows)


def length_bias(scale: str | None = None, seed: int = 0):
    """Experiment 3: lengths of wrong answers under GRPO (1/|o| and std) vs Dr.GRPO. Returns curves.

    Addition with room to ramble (up to 16 completion tokens) and a short warm start, so that wrong
    answers of many lengths occur.
    """
    sc = resolve_scale(scale)
    steps = {"quick": 40, "full": 300}[sc]
    opts = dict(max_operand=19, max_new_tokens=16)
    sft_steps = {"quick": 60, "full": 100}[sc]
    return pd.concat(
        [
            run_lm(lm_config(a, "addition", sc, seed, task_options=opts, sft_steps=sft_steps, lr=1e-3), steps, label)
            for a, label in (("grpo", "GRPO"), ("dr_grpo", "Dr.GRPO"))
        ],
        ignore_index=True,
    )


def clip_higher(scale: str | None = None, seed: int = 0, clip_highs=(0.2, 0.28)):
    """Experiment 4: entropy and reward with eps_high = 0.2 vs 0.28 (DAPO's clip-higher).

    Four epochs per batch, so that the ratio leaves the clip range; everything else is GRPO (token-mean,
    no dynamic sampling). The learning rate is lower than GRPO's quick default: with 16 Adam steps on
    one batch, 3e-4 overfits the batch's noise and the reward falls.
    """
    sc = resolve_scale(scale)
    steps = {"quick": 40, "full": 300}[sc]
    runs = [
        run_lm(
            lm_config(
                "grpo",
                "addition",
                sc,
                seed,
                task_options=dict(max_operand=19),
                clip_high=ch,
                epochs=4,
                lr=1e-4,
                agg="token-mean",
            ),
            steps,
            f"eps_high={ch}",
        )
        for ch in clip_highs
    ]
    return pd.concat(runs, ignore_index=True)


def dynamic_sampling(
    scale: str | None = None, seed: int = 0, max_draws=(1, 4), batches: int = 8, task_options: dict | None = None
) -> pd.DataFrame:
    """DAPO's dynamic sampling, with and without refilling: what a batch holds and what it costs.

    From the warm-started addition policy, collect ``batches`` batches with each ``max_draws``
    (1: one draw; the trainer's ``dynamic_sampling`` would then drop the dead groups, so the batch
    shrinks), the same generator seed for each setting. One record per setting: mean draws per batch,
    live groups in the batch (rewards not all equal: the only groups with a gradient), dead groups
    left in it, completions sampled and sampling seconds per batch.
    """
    from rltutor.advantages import dead_groups

    s = LM_SCALES[resolve_scale(scale)]
    cfg = lm_config("dapo", "addition", scale, seed, task_options={"max_operand": 19, **(task_options or {})})
    task = make_env_task(cfg)
    policy = LMPolicy(warm_start(cfg, task))
    G = s["group_size"]
    rows = []
    for draws in max_draws:
        col = LMCollector(task, s["num_groups"], G, max_draws=draws)
        gen = torch.Generator().manual_seed(seed)
        rec = []
        for _ in range(batches):
            batch, info = col.collect(policy, gen)
            dead = dead_groups(batch["rewards"].sum(1), batch["group_ids"])[0]  # (groups in the batch,)
            rec.append(
                {
                    "draws": info["metrics"]["draws"],
                    "live_groups": int((~dead).sum()),
                    "dead_groups": int(dead.sum()),
                    "completions_sampled": len(info["episode_returns"]),
                    "sample_s": info["metrics"]["sample_time"],
                }
            )
        rows.append({"max_draws": draws, "groups_asked": s["num_groups"], **pd.DataFrame(rec).mean().to_dict()})
    return pd.DataFrame(rows)


def family(scale: str | None = None, seed: int = 0, algos=None):
    """Experiment 5: every preset of :data:`rltutor.config.LM_ALGOS` on addition. Returns (curves, summary)."""
    sc = resolve_scale(scale)
    algos = list(algos or LM_ALGOS)
    steps = {"quick": 25, "full": 300}[sc]
    curves = pd.concat(
        [run_lm(lm_config(a, "addition", sc, seed, task_options=dict(max_operand=19)), steps) for a in algos],
        ignore_index=True,
    )
    return curves, _summary(curves)


def main(argv=None):
    """Run an experiment over several seeds and store its records as CSV, e.g.

    python -m rltutor.experiments.lm horizon --scale quick --seeds 0 1 2 --out rltutor/data/lm_horizon_quick_3seeds.csv
    """
    import argparse

    ap = argparse.ArgumentParser(description="Run an LM experiment over seeds; write the records as CSV.")
    ap.add_argument("experiment", choices=["short_task", "horizon", "length_bias", "clip_higher", "family"])
    ap.add_argument("--scale", choices=["quick", "full"], default=None)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--out", required=True, help="CSV path for the per-update records")
    args = ap.parse_args(argv)
    frames = []
    for seed in args.seeds:
        res = globals()[args.experiment](args.scale, seed=seed)
        frames.append((res[0] if isinstance(res, tuple) else res).assign(seed=seed))
    pd.concat(frames, ignore_index=True).to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
