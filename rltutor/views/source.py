"""Show the package's own source on a book page, so the page and the code cannot drift apart.

Spinning Up's algorithm pages include their implementation; d2l shows each function where it is
derived. A chapter calls :func:`show_source` on the function it has just explained; the book build
renders whatever the installed package holds, never a retyped copy. A listing longer than
``max_lines`` comes folded (an HTML ``<details>`` block whose summary names the function and its
length), so a 150-line method does not push the prose that explains it a screen away.
"""

from __future__ import annotations

import html
import inspect

__all__ = ["source_of", "show_source", "Folded", "MAX_LINES"]

MAX_LINES = 60
"""Listings up to this many lines are shown open; longer ones come folded, one click away."""


def source_of(obj) -> str:
    """The source text of a function, class or method of the installed package."""
    try:
        return inspect.getsource(inspect.unwrap(obj))
    except (TypeError, OSError) as e:
        raise ValueError(f"no source for {obj!r}: pass a function, class or method defined in Python ({e})") from None


class Folded:
    """A long listing: the highlighted source inside ``<details>``, the plain source as text."""

    def __init__(self, code, summary: str):
        self.code = code
        self.summary = summary

    def _repr_html_(self) -> str:
        return f"<details><summary>{html.escape(self.summary)}</summary>{self.code._repr_html_()}</details>"

    def __repr__(self) -> str:
        return self.code.data


def show_source(obj, max_lines: int = MAX_LINES):
    """Display ``obj``'s source, highlighted, with the module and line it comes from (an IPython object);
    a source longer than ``max_lines`` comes folded (:class:`Folded`), its summary naming its length."""
    from IPython.display import Code, Markdown, display

    if not isinstance(max_lines, int) or max_lines < 1:
        raise ValueError(f"max_lines must be a positive int, got {max_lines!r}; e.g. max_lines=60")
    fn = inspect.unwrap(obj)
    module = inspect.getmodule(fn).__name__
    line = inspect.getsourcelines(fn)[1]
    source = source_of(fn)
    display(Markdown(f"`{module}`, line {line}:"))
    code = Code(source, language="python")
    n = len(source.splitlines())
    if n <= max_lines:
        return code
    return Folded(code, f"{fn.__qualname__}: {n} lines of source (click to show)")
