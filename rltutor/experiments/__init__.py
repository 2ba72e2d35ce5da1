"""The canned experiments that the notebooks, the benchmarks and the tests call.

One module per chapter. Every experiment takes a ``scale`` ("quick" or "full", see
:func:`rltutor.utils.resolve_scale`) and a ``seed``, and returns plain records (dataclasses or
DataFrames) that plotting code consumes; plotting never re-runs training. The labs share two modules:
:mod:`rltutor.experiments.runs` (the one run store: runs over an executor, each stored in its own file and
read back instead of rerun) and :mod:`rltutor.experiments.stats` (the one verdict system).
"""
