"""Show the package's own source on a book page, so the page and the code cannot drift apart.

Spinning Up's algorithm pages include their implementation; d2l shows each function where it is
derived. A chapter calls :func:`show_source` on the function it has just explained; the book build
renders whatever the installed package holds, never a retyped copy.
"""

from __future__ import annotations

import inspect

__all__ = ["source_of", "show_source"]


def source_of(obj) -> str:
    """The source text of a function, class or method of the installed package."""
    try:
        return inspect.getsource(inspect.unwrap(obj))
    except (TypeError, OSError) as e:
        raise ValueError(f"no source for {obj!r}: pass a function, class or method defined in Python ({e})") from None


def show_source(obj):
    """Display ``obj``'s source, highlighted, with the module and line it comes from (an IPython object)."""
    from IPython.display import Code, Markdown, display

    fn = inspect.unwrap(obj)
    module = inspect.getmodule(fn).__name__
    line = inspect.getsourcelines(fn)[1]
    display(Markdown(f"`{module}`, line {line}:"))
    return Code(source_of(fn), language="python")
