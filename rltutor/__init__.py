"""rltutor: reinforcement learning for language models, small enough to read and run on a laptop."""

__version__ = "0.1.0"
"""The one place the version is written (pyproject.toml reads it)."""
