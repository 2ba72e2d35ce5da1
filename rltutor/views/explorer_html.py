"""The static variance-vs-horizon explorer as HTML: data, sliders and a small SVG renderer.

Chapter: *Variance vs horizon* (``notebooks/04_variance_horizon.ipynb``). The data come from
:mod:`rltutor.experiments.explorer_data`; this view only draws them. The JavaScript lives beside
this file as package data (``explorer_core.js``: lookup and SVG drawing, no DOM, so the tests run it
in node; ``explorer_dom.js``: the sliders' wiring). No CDN, no plotting library: the page works offline.

    python -m rltutor.views.explorer_html rltutor/data/horizon/explorer.json --out explorer.html
"""

from __future__ import annotations

import argparse
import json
import uuid
from importlib import resources
from pathlib import Path

__all__ = ["JS_CORE", "JS_DOM", "explorer_html", "show", "main"]

JS_CORE = resources.files("rltutor.views").joinpath("explorer_core.js").read_text()
"""Lookup and SVG drawing in plain JavaScript (no DOM)."""
JS_DOM = resources.files("rltutor.views").joinpath("explorer_dom.js").read_text()
"""The page's wiring: sliders, selects and checkboxes redraw the chart."""

_SLIDERS = (
    ("T", "T", "horizon T (marker)"),
    ("G", "G", "group size G"),
    ("gamma", "gamma", "discount \u03b3"),
    ("lam", "lam", "GAE \u03bb"),
    ("noise", "noise", "reward noise"),
    ("crit", "critic_noise", "critic error"),
)


def _index(values, wanted) -> int:
    return min(range(len(values)), key=lambda i: abs(values[i] - wanted))


def explorer_html(
    data: dict,
    *,
    width: int = 640,
    height: int = 380,
    element_id: str | None = None,
    show: tuple[str, ...] = ("grpo", "rloo", "gae", "gae_critic"),
) -> str:
    """One self-contained HTML fragment (data + controls + script) for a notebook output or a page."""
    grid = data["grid"]
    eid = element_id or f"rlx-{uuid.uuid4().hex[:8]}"
    init = {
        "T": _index(grid["T"], 64),
        "G": _index(grid["G"], 8),
        "gamma": _index(grid["gamma"], 1.0),
        "lam": _index(grid["lam"], 0.95),
        "crit": _index(grid["critic_noise"], 1.0),
        "noise": 0,
    }
    sliders = []
    for key, gkey, label in _SLIDERS:
        n = len(grid[gkey])
        sliders.append(
            f'<label style="display:block;margin:2px 0">{label}: '
            f'<input type="range" min="0" max="{n - 1}" step="1" value="{init[key]}" data-key="{key}" '
            f'data-grid="{gkey}" style="vertical-align:middle;width:140px"> <output></output></label>'
        )
    tasks = "".join(f'<option value="{t}">{t}</option>' for t in grid["tasks"])
    metrics = "".join(f'<option value="{m}">{m}</option>' for m in data["metrics"])
    checks = "".join(
        f'<label style="display:block"><input type="checkbox" value="{e}"{" checked" if e in show else ""}> '
        f"{lab}</label>"
        for e, lab in data["labels"].items()
    )
    payload = json.dumps({k: data[k] for k in ("grid", "metrics", "labels", "values")}, separators=(",", ":"))
    payload = payload.replace("</", "<\\/")  # never close the script tag early
    js = (
        JS_DOM.replace("__ID__", eid)
        .replace("__W__", str(width))
        .replace("__H__", str(height))
        .replace("__T0__", str(init["T"]))
        .replace("__G0__", str(init["G"]))
        .replace("__GA0__", str(init["gamma"]))
        .replace("__L0__", str(init["lam"]))
        .replace("__C0__", str(init["crit"]))
        .replace("__SHOW__", json.dumps(list(show)))
    )
    return (
        f'<div id="{eid}" class="rlx-explorer" style="display:flex;flex-wrap:wrap;gap:12px;'
        f'font-family:sans-serif;font-size:13px">'
        f'<script type="application/json" class="rlx-data">{payload}</script>'
        f'<div><div class="rlx-plot" style="width:{width}px;height:{height}px"></div></div>'
        f'<div style="min-width:240px">'
        f'<label>task <select data-key="task">{tasks}</select></label> '
        f'<label>metric <select data-key="metric">{metrics}</select></label>'
        f'{"".join(sliders)}<div style="margin-top:4px">{checks}</div>'
        f'<div class="rlx-readout" style="margin-top:6px"></div></div>'
        f"<script>{JS_CORE}{js}</script></div>"
    )


def show(data: dict, **kwargs):
    """Display the static explorer in a notebook (an ``IPython.display.HTML`` object)."""
    from IPython.display import HTML

    return HTML(explorer_html(data, **kwargs))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(
        prog="python -m rltutor.views.explorer_html",
        description="Write the static explorer of a data file as a standalone HTML page.",
    )
    p.add_argument("data", help="a data file written by python -m rltutor.experiments.explorer_data")
    p.add_argument("--out", required=True, help="the HTML page to write")
    a = p.parse_args(argv)
    from rltutor.experiments.explorer_data import load_data

    Path(a.out).write_text(
        "<!doctype html><meta charset='utf-8'><title>variance vs horizon</title>" + explorer_html(load_data(a.data))
    )
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
