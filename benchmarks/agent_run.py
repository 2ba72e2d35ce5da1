"""Can a word-level TinyGPT learn the toolshell agent from scripted demonstrations? SFT, then solve rate.

    python benchmarks/agent_run.py --hops 1 --steps 2000 --n-embd 128 --n-layer 4 --device cuda

Prints the SFT loss curve, the sampled solve/hack rates of the warm-started policy, and the wall time of one
PPO update (collect + update) at this size.
"""

import argparse
import time

import torch

from rltutor.config import make_config
from rltutor.envs.toolshell import VOCAB, ToolShell, scripted_solver
from rltutor.models.lm_policy import LMPolicy, make_model
from rltutor.rollout.agent import AgentCollector, TokenChooser, demonstrations
from rltutor.train import Trainer

p = argparse.ArgumentParser()
p.add_argument("--hops", type=int, default=1)
p.add_argument("--steps", type=int, default=300)
p.add_argument("--n-embd", type=int, default=64)
p.add_argument("--n-layer", type=int, default=2)
p.add_argument("--budget", type=int, default=256)
p.add_argument("--compaction", default="summary")
p.add_argument("--device", default="cpu")
p.add_argument("--lr", type=float, default=3e-3)
a = p.parse_args()
opts = {"hops": a.hops, "max_turns": a.hops + 4}
cfg = make_config(
    "ppo",
    env="toolshell",
    env_options=opts,
    context_budget=a.budget,
    compaction=a.compaction,
    n_embd=a.n_embd,
    n_layer=a.n_layer,
    device=a.device,
    gamma=1.0,
    lam=1.0,
    num_groups=8,
    group_size=4,
    epochs=1,
    minibatches=4,
)
knobs = ToolShell(hops=a.hops, max_turns=a.hops + 4, max_output_chars=250).knobs
t = time.time()
spec = cfg.context_spec()
chooser = TokenChooser(spec.max_cmd_tokens)
demos = demonstrations(lambda: ToolShell(**knobs), scripted_solver, 1024, chooser, spec, seed=0)
model = make_model(len(VOCAB), a.budget, a.n_layer, 4, a.n_embd, seed=0, device=a.device)
losses = chooser.clone(model, demos, steps=a.steps, lr=a.lr, generator=torch.Generator().manual_seed(0))
curve = [round(x, 3) for x in losses[:: max(1, a.steps // 10)]]
print(f"sft {a.steps} steps in {time.time() - t:.1f}s; loss every 10%:", curve)
policy = LMPolicy(model, "head")
col = AgentCollector(lambda: ToolShell(**knobs), chooser, num_tasks=8, group_size=4, spec=spec)
for i in range(2):
    t = time.time()
    _, info = col.collect(policy, torch.Generator().manual_seed(i))
    print(f"collect {time.time() - t:.2f}s", {k: round(v, 3) for k, v in info["metrics"].items()})
trainer = Trainer(cfg, policy, col)
for _ in range(3):
    t = time.time()
    row = trainer.step()
    dt = time.time() - t
    print(f"one PPO update (8 tasks x 4) {dt:.2f}s solve {row['solve_rate']:.2f} hack {row['hack_rate']:.2f}")
