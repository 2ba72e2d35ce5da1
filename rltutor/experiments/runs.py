"""The labs' one run store: independent runs over an executor, each stored whole in its own file.

A lab describes its runs as a list of *jobs* (picklable arguments, one per run) and a top-level function
``run(job)`` that trains one and returns its records (a DataFrame, or a JSON-able dict). :func:`run_each`
runs every job and returns the results in the order of the jobs; :func:`run_all` concatenates results that
are DataFrames. Every lab that trains runs through them (:mod:`~rltutor.experiments.sweep`,
:mod:`~rltutor.experiments.lm`, :mod:`~rltutor.experiments.agents`, :mod:`~rltutor.experiments.control`).

Executors (``executor``, :data:`EXECUTORS`):

* ``"process"``: a :class:`concurrent.futures.ProcessPoolExecutor` of ``workers`` processes (default: the
  CPU count; ``workers=1`` runs in this process), a worker taking ``chunksize`` consecutive jobs at once
  (the LM lab's runs of one seed share a warm start that the worker computes once); ``context`` picks the
  start method (``"spawn"``, ``"fork"``; default: the platform's);
* ``"ray"``: a Ray cluster, one CPU per task (``pip install "rltutor[ray]"``, imported only then);
* ``"serial"``: one after another in this process.

Run-or-load: with a :class:`RunStore` and a file name per job, a job whose file exists is read back instead
of rerun, and each new run is written to its file as soon as it finishes (whole or not at all: a temporary
file renamed), so an interrupted lab resumes where it stopped. What is stored is what is returned: a new run
is read back from its file too, rounded alike (CSV: 5 significant digits). :func:`store_records` writes a
lab's records of all runs, with the command that made them beside them.
"""

from __future__ import annotations

import json
import os
import shlex
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import pandas as pd

from rltutor.utils import check_choice, write_atomic

__all__ = ["EXECUTORS", "FORMATS", "RunStore", "run_each", "run_all", "store_records", "trained_frame"]

EXECUTORS = ("process", "ray", "serial")
FORMATS = ("csv", "json")


class RunStore:
    """A folder of stored runs, one file per run: ``FOLDER/NAME`` holds one run's records, a DataFrame as CSV
    (``fmt="csv"``, 5 significant digits) or a dict as JSON (``fmt="json"``)."""

    def __init__(self, folder: str | os.PathLike, fmt: str = "csv"):
        check_choice("run store format", fmt, FORMATS)
        self.folder = Path(folder)
        self.fmt = fmt

    def path(self, name: str) -> Path:
        """The file of run ``name`` (a plain file name, no folder)."""
        if not name or os.sep in name or name in (".", ".."):
            raise ValueError(f"a stored run's name must be a plain file name, got {name!r}; e.g. 'grpo-s0.csv'")
        return self.folder / name

    def has(self, name: str) -> bool:
        return self.path(name).exists()

    def load(self, name: str):
        """Run ``name``'s records as stored."""
        p = self.path(name)
        if self.fmt == "csv":
            return pd.read_csv(p)
        return json.loads(p.read_text())

    def save(self, name: str, result):
        """Store ``result`` as run ``name`` (whole or not at all); return it as read back."""
        if self.fmt == "csv" and not isinstance(result, pd.DataFrame):
            raise TypeError(f"a CSV run store keeps DataFrames, got {type(result).__name__}; use fmt='json'")
        self.folder.mkdir(parents=True, exist_ok=True)
        if self.fmt == "csv":
            write_atomic(self.path(name), lambda tmp: result.to_csv(tmp, index=False, float_format="%.5g"))
        else:
            write_atomic(self.path(name), lambda tmp: Path(tmp).write_text(json.dumps(result) + "\n"))
        return self.load(name)


def _run_chunk(run, chunk: list) -> list:
    """``run(job)`` for each job of ``chunk``, in one worker."""
    return [run(j) for j in chunk]


def run_each(
    run,
    jobs: list,
    workers: int | None = None,
    chunksize: int = 1,
    *,
    executor: str = "process",
    store: RunStore | None = None,
    names: list[str] | None = None,
    context: str | None = None,
) -> list:
    """``run(job)`` for every job on ``executor`` (module docstring); the results in the order of ``jobs``.

    With ``store`` and ``names`` (one file name per job), a job stored there is read back, not rerun, and a
    new run is stored as soon as it finishes and returned as read back."""
    check_choice("executor", executor, EXECUTORS)
    if store is not None and (names is None or len(names) != len(jobs)):
        raise ValueError(f"a run store needs one file name per job: {len(jobs)} jobs, names={names!r}")
    results: dict[int, object] = {}
    if store is not None:
        results = {i: store.load(n) for i, n in enumerate(names) if store.has(n)}
    todo = [i for i in range(len(jobs)) if i not in results]

    def record(i: int, result) -> None:
        results[i] = store.save(names[i], result) if store is not None else result

    chunks = [todo[k : k + max(1, chunksize)] for k in range(0, len(todo), max(1, chunksize))]
    workers = workers or os.cpu_count() or 1
    if executor == "serial" or (executor == "process" and workers == 1):
        for i in todo:
            record(i, run(jobs[i]))
    elif executor == "ray":
        try:
            import ray
        except ImportError as e:
            raise ImportError('--executor ray needs Ray: pip install "rltutor[ray]" (or ray>=2.9)') from e
        if not ray.is_initialized():
            ray.init(ignore_reinit_error=True, include_dashboard=False)
        remote = ray.remote(num_cpus=1)(_run_chunk)
        pending = {remote.remote(run, [jobs[i] for i in c]): c for c in chunks}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            chunk = pending.pop(ready[0])
            for i, res in zip(chunk, ray.get(ready[0]), strict=True):
                record(i, res)
    elif chunks:
        import multiprocessing as mp

        ctx = mp.get_context(context) if context else None
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            futures = {pool.submit(_run_chunk, run, [jobs[i] for i in c]): c for c in chunks}
            for fut in as_completed(futures):
                for i, res in zip(futures[fut], fut.result(), strict=True):
                    record(i, res)
    return [results[i] for i in range(len(jobs))]


def run_all(run, jobs: list, workers: int | None = None, chunksize: int = 1, **options) -> pd.DataFrame:
    """:func:`run_each` for runs whose records are DataFrames: the frames of every job concatenated, in the
    order of ``jobs``. ``options``: ``executor``, ``store``, ``names``, ``context``."""
    return pd.concat(run_each(run, jobs, workers, chunksize, **options), ignore_index=True)


def trained_frame(trainer, updates: int, columns, **labels) -> pd.DataFrame:
    """Run ``updates`` updates of ``trainer`` (a :class:`rltutor.train.Trainer`) and return its history: the
    ``columns`` it has, one row per update, led by ``labels`` as constant columns in the order given (a lab's
    run records: arm, seed, ...)."""
    for _ in range(updates):
        trainer.step()
    df = trainer.history_frame()
    df = df[[c for c in columns if c in df.columns]].copy()
    for i, (name, value) in enumerate(labels.items()):
        df.insert(i, name, value)
    return df


KERNEL_VARIABLES = ("ATEN_CPU_CAPABILITY",)
"""Environment variables that change which CPU kernels PyTorch runs (and so a run's numbers after some updates)."""


def store_records(df: pd.DataFrame, out: str, module: str, argv: list[str]) -> str:
    """Write ``df`` to ``out`` (CSV, 5 significant digits; gzip-compressed where ``out`` ends in ``.gz``) and
    ``python -m MODULE ARGV`` to ``out``'s ``.cmd``
    beside it, so that a stored result names the command that reproduces it; the environment variables that
    choose PyTorch's CPU kernels (:data:`KERNEL_VARIABLES`), where set, lead the command, since another kernel
    gives other numbers. Returns the command."""
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    df.to_csv(out, index=False, float_format="%.5g")
    env = "".join(f"{k}={shlex.quote(os.environ[k])} " for k in KERNEL_VARIABLES if os.environ.get(k))
    cmd = env + f"python -m {module} " + " ".join(shlex.quote(a) for a in argv)
    stem = out[: -len(".gz")] if out.endswith(".gz") else out  # "x.csv.gz" (pandas compresses it): x.cmd
    with open(os.path.splitext(stem)[0] + ".cmd", "w") as f:
        f.write(cmd + "\n")
    return cmd
