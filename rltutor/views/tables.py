"""Tables and sentences on a book page: numbers a reader can read, text that wraps.

* :func:`number` writes one number the way the book prints it: whole numbers without a decimal point,
  others with four significant digits in plain decimals (``0.02624``, not ``2.624e-02``), and only
  magnitudes under 1e-4 or from 1e7 in scientific notation (``1.5e-08``);
* :func:`apply_table_style` makes it pandas' display format (a table's HTML and text alike) and shows
  every column and every cell in full (no ``...`` in a description, no hidden middle columns);
* :func:`sentences` shows computed sentences (a verdict per line) as a Markdown list, which wraps at
  the column's edge where printed text would run on in a scroll box.
"""

from __future__ import annotations

import math

__all__ = ["number", "apply_table_style", "sentences"]

SIGNIFICANT = 4


def number(x, significant: int = SIGNIFICANT) -> str:
    """``x`` as text: ``3`` for 3.0, ``0.02624`` for 0.026244, ``1.5e-08`` below 1e-4 (or from 1e7)."""
    if significant < 1:
        raise ValueError(f"significant must be >= 1, got {significant!r}; e.g. significant=4")
    x = float(x)
    if not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    size = abs(x)
    if x.is_integer() and size < 1e15:
        return str(int(x))
    if 1e-4 <= size < 1e7:
        decimals = max(0, significant - 1 - math.floor(math.log10(size)))
        text = f"{x:.{decimals}f}"
        return text.rstrip("0").rstrip(".") if "." in text else text
    return f"{x:.{max(significant - 3, 1)}e}"  # two significant digits at the default


def apply_table_style() -> None:
    """pandas' display options for the book: :func:`number` for every float, all columns, whole cells."""
    import pandas as pd

    pd.set_option("display.float_format", number)
    pd.set_option("display.max_columns", None)
    pd.set_option("display.max_colwidth", None)
    pd.set_option("display.width", 120)


def _escape(text: str) -> str:
    """Markdown's special characters escaped, so a contrast named ``a_b * c`` prints as written."""
    for ch in "\\`*_[]<>#|":
        text = text.replace(ch, "\\" + ch)
    return text


def sentences(lines, bullet: bool = True):
    """``lines`` (an iterable of strings) as an IPython Markdown object: a list, one item a line, that
    wraps at the page's column (printed, a long line runs on in a scroll box and is cut off)."""
    from IPython.display import Markdown

    items = [_escape(str(line)) for line in lines]
    if not items:
        raise ValueError("sentences needs at least one line")
    return Markdown("\n".join(("* " if bullet else "") + item + ("" if bullet else "\n") for item in items))
