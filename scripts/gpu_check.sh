#!/usr/bin/env bash
# The GPU check (issue 24): on a machine with CUDA, 20 updates per arm of
#   * chapter 13's loop on random-weight Hugging Face models of ~0.5B parameters (a Qwen2.5-0.5B-shaped
#     config, no download: the machine may have no network), GRPO and PPO (value head, separate critic),
#     with LoRA and without; and the toolshell agent written by the same model (rltutor.rollout.hf_agent), GRPO + LoRA;
#   * every TinyGPT lab's full-scale configuration (rltutor.experiments.lm.experiment_arms(name, "full"));
# and writes tokens/s, peak GPU memory and seconds per update to a CSV (default gpu_check.csv), with the GPU
# and the processor named. The whole script stops starting arms after RLTUTOR_GPU_CHECK_BUDGET seconds (default
# 450: under 8 minutes with the last arm); an arm not started is a row marked "skipped (time)".
#
#   bash scripts/gpu_check.sh [OUT.csv]
#
# Without CUDA it says so and exits 3, having run nothing. RLTUTOR_GPU_CHECK_SMOKE=1 runs the same code on the
# CPU at toy size (a 2-layer model, 1 update, the first arm of each lab), to check the script itself.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
OUT=${1:-gpu_check.csv}
export RLTUTOR_GPU_CHECK_OUT="$OUT" PYTHONPATH="$(pwd)${PYTHONPATH:+:$PYTHONPATH}"
exec "$PY" - <<'EOF'
import csv, os, platform, sys, time

import torch

SMOKE = os.environ.get("RLTUTOR_GPU_CHECK_SMOKE") == "1"
DEVICE = "cpu" if SMOKE else "cuda"
if not SMOKE and not torch.cuda.is_available():
    print("gpu_check: no CUDA device (torch.cuda.is_available() is False), so nothing was measured; run it on a "
          "machine with an NVIDIA GPU and a CUDA build of torch (on Colab: Runtime > Change runtime type > GPU)",
          file=sys.stderr)
    sys.exit(3)

from rltutor.config import resolve  # noqa: E402
from rltutor.experiments.lm import EXPERIMENTS, experiment_arms  # noqa: E402
from rltutor.models.hf import memory_of, save_random_model  # noqa: E402
from rltutor.train import Trainer  # noqa: E402

OUT = os.environ["RLTUTOR_GPU_CHECK_OUT"]
BUDGET = float(os.environ.get("RLTUTOR_GPU_CHECK_BUDGET", "450"))
UPDATES = 1 if SMOKE else int(os.environ.get("RLTUTOR_GPU_CHECK_UPDATES", "20"))
T0 = time.perf_counter()
GPU = "none (smoke test on the CPU)" if SMOKE else torch.cuda.get_device_name(0)
CPU = platform.processor() or platform.machine()
try:
    with open("/proc/cpuinfo") as f:
        CPU = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
except (OSError, StopIteration):
    pass
print(f"gpu_check: {GPU}, {CPU}, torch {torch.__version__}; {UPDATES} updates per arm; writing {OUT}")


def random_qwen(folder):
    """A random Qwen2.5-0.5B-shaped model (494M parameters, its vocabulary size) and a tokenizer, saved once."""
    if not os.path.exists(os.path.join(folder, "config.json")):
        save_random_model(folder, "qwen2", "tiny" if SMOKE else "0.5B")
    return folder


def measure(arm, config):
    if not SMOKE:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    trainer = Trainer(config)  # TinyGPT: includes the (cached) warm start; HF: loading the weights
    setup = time.perf_counter() - t0
    t1, tokens = time.perf_counter(), 0
    for _ in range(UPDATES):
        before = trainer.env_steps
        trainer.step()
        tokens += trainer.env_steps - before
    if not SMOKE:
        torch.cuda.synchronize()
    dt = time.perf_counter() - t1
    mem = memory_of(trainer.policy) if config.hf_model else None
    params = mem["params"] if mem else sum(p.numel() for p in trainer.policy.parameters())
    trainable = mem["trainable"] if mem else sum(p.numel() for p in trainer.policy.parameters() if p.requires_grad)
    row = dict(
        arm=arm, status="ok", updates=UPDATES, params=params, trainable=trainable,
        dtype=getattr(trainer.policy, "dtype", "fp32"), setup_s=round(setup, 2),
        tokens_per_s=round(tokens / dt, 1), s_per_update=round(dt / UPDATES, 3),
        peak_gpu_mem_gib=None if SMOKE else round(torch.cuda.max_memory_allocated() / 2**30, 3),
        accuracy_last=trainer.history[-1].get("accuracy"),
    )
    del trainer
    return row


arms = []
folder = os.path.join(os.environ.get("TMPDIR", "/tmp"), "rltutor_gpu_check_" + ("smoke" if SMOKE else "qwen05b"))
for algo, kind, lora in (("grpo", None, 16), ("ppo", "head", 16), ("ppo", "separate", 16), ("grpo", None, 0), ("ppo", "head", 0)):
    label = f"hf-0.5B {algo}" + (f" ({kind})" if kind else "") + (f" lora{lora}" if lora else " full")
    sets = dict(hf_model=folder, lora_rank=lora, lr=1e-4 if lora else 1e-5, device=DEVICE, eval_every=0)
    if kind:
        sets["critic_kind"] = kind
    arms.append((label, lambda s=sets, a=algo: resolve(a, "addition-text", "full", sets=s)))
agent_sets = dict(hf_model=folder, lora_rank=16, lr=1e-4, device=DEVICE, eval_every=0)  # the toolshell agent (HFChooser)
arms.append(("hf-0.5B toolshell agent grpo lora16", lambda: resolve("grpo", "toolshell", "full", sets=agent_sets)))
for name in EXPERIMENTS:
    for arm in experiment_arms(name, "full")[0][: 1 if SMOKE else None]:
        arms.append((f"tinygpt {name}: {arm.label}", lambda arm=arm: arm.config("full", 0)))

rows = []
for label, make in arms:
    if time.perf_counter() - T0 > BUDGET:
        rows.append(dict(arm=label, status="skipped (time)"))
        continue
    try:
        if label.startswith("hf-"):
            random_qwen(folder)
        cfg = make()
        cfg.device = DEVICE
        if SMOKE and not cfg.hf_model:
            cfg.sft_steps = 2
        rows.append(measure(label, cfg))
    except torch.cuda.OutOfMemoryError as e:
        rows.append(dict(arm=label, status=f"out of memory: {str(e).splitlines()[0][:120]}"))
    except Exception as e:  # one arm's failure is a row, not the end of the check
        rows.append(dict(arm=label, status=f"failed: {type(e).__name__}: {str(e).splitlines()[0][:160]}"))
    print(f"{time.perf_counter() - T0:6.0f}s  {rows[-1]}", flush=True)

cols = ["arm", "status", "updates", "params", "trainable", "dtype", "setup_s", "tokens_per_s", "s_per_update",
        "peak_gpu_mem_gib", "accuracy_last", "gpu", "cpu", "torch"]
with open(OUT, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=cols)
    w.writeheader()
    for r in rows:
        w.writerow({**r, "gpu": GPU, "cpu": CPU, "torch": torch.__version__})
print(f"gpu_check: {sum(r['status'] == 'ok' for r in rows)} of {len(rows)} arms measured in "
      f"{time.perf_counter() - T0:.0f} s; wrote {OUT}")
EOF
