#!/usr/bin/env python3
"""Write the project's home (its repository URL) and release into every place that names them.

The URL has one home, ``repository.url`` in ``_config.yml`` (the book's launch and repository buttons read
it there), and the version one home, ``__version__`` in ``rltutor/__init__.py``. From those two this
script writes:

* the first code cell of every ``notebooks/*.ipynb``: on Colab it installs the tagged release
  ``git+{url}@v{version}`` (package data included), elsewhere it does nothing;
* the block between ``<!-- home -->`` markers in ``README.md`` (repository, published book, install line).

Run it after changing either (``python scripts/sync_home.py``); ``--check`` writes nothing and exits 1
naming the files that disagree (``tests/test_home.py`` runs the same check). Notebooks keep nbformat 4's
layout (one-space indent, UTF-8): only the install cell's lines change. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README_START = "<!-- home: written by scripts/sync_home.py from _config.yml and rltutor/__init__.py -->"
README_END = "<!-- /home -->"


def read_home(root: Path = ROOT) -> tuple[str, str]:
    """``(url, version)``: ``repository.url`` of ``_config.yml`` and ``__version__`` of the package."""
    config = (root / "_config.yml").read_text(encoding="utf-8")
    m = re.search(r"^repository:\s*\n(?:[ \t]+.*\n)*?[ \t]+url:\s*(\S+)\s*$", config, re.M)
    if not m:
        raise SystemExit(f"{root / '_config.yml'}: no repository.url; the repository's URL lives there")
    url = m.group(1).strip("'\"").rstrip("/")
    if not re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", url):
        raise SystemExit(f"repository.url must be https://github.com/OWNER/NAME, got {url!r}")
    init = (root / "rltutor" / "__init__.py").read_text(encoding="utf-8")
    v = re.search(r'^__version__\s*=\s*"([^"]+)"', init, re.M)
    if not v:
        raise SystemExit(f'{root / "rltutor/__init__.py"}: no __version__ = "X.Y.Z" line')
    return url, v.group(1)


def pages_url(url: str) -> str:
    """Where GitHub Pages publishes the repository's book: https://OWNER.github.io/NAME/."""
    owner, name = url.removeprefix("https://github.com/").split("/")
    if name.lower() == f"{owner.lower()}.github.io":
        return f"https://{name}/"
    return f"https://{owner}.github.io/{name}/"


def install_requirement(url: str, version: str) -> str:
    """The pip requirement of the tagged release (the tag ``v{version}`` that a release creates)."""
    return f"rltutor @ git+{url}@v{version}"


def install_cell(url: str, version: str) -> str:
    """The source of every notebook's first code cell."""
    return (
        f"# On Google Colab, install rltutor {version} (the release this book was built from, with its data files);\n"
        "# elsewhere (a local clone, a pip install) this cell does nothing.\n"
        "import sys\n"
        "\n"
        'if "google.colab" in sys.modules:\n'
        f'    get_ipython().run_line_magic("pip", \'install -q "{install_requirement(url, version)}"\')'
    )


def readme_block(url: str, version: str) -> str:
    """The README's block between the home markers (markers included)."""
    return (
        f"{README_START}\n"
        f"- Repository: {url}\n"
        f"- The book: {pages_url(url)}\n"
        f'- Release {version}: `pip install "{install_requirement(url, version)}"` (what each notebook\'s\n'
        "  first cell runs on Colab)\n"
        f"{README_END}"
    )


def _notebook_text(path: Path, cell: str) -> str:
    nb = json.loads(path.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    if not code or "google.colab" not in "".join(code[0]["source"]):
        raise SystemExit(f"{path}: the first code cell is not the Colab install cell; add one above the others")
    code[0]["source"] = cell.splitlines(keepends=True)
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def _readme_text(path: Path, block: str) -> str:
    text = path.read_text(encoding="utf-8")
    start, end = text.find(README_START), text.find(README_END)
    if start < 0 or end < start:
        raise SystemExit(f"{path}: no home block; put the lines\n{README_START}\n{README_END}\nwhere it goes")
    return text[:start] + block + text[end + len(README_END) :]


def expected(root: Path = ROOT) -> dict[Path, str]:
    """Every file this script writes, with the text it should have."""
    url, version = read_home(root)
    cell = install_cell(url, version)
    out = {p: _notebook_text(p, cell) for p in sorted((root / "notebooks").glob("*.ipynb"))}
    out[root / "README.md"] = _readme_text(root / "README.md", readme_block(url, version))
    return out


def sync(root: Path = ROOT, check: bool = False) -> list[Path]:
    """Rewrite (or with ``check``, only list) the files that disagree with the home; returns them."""
    want = expected(root)
    stale = [p for p, text in want.items() if p.read_text(encoding="utf-8") != text]
    if not check:
        for p in stale:
            p.write_text(want[p], encoding="utf-8")
    return stale


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if any file disagrees")
    ap.add_argument("--root", type=Path, default=ROOT, help="the repository root (default: this checkout)")
    a = ap.parse_args(argv)
    url, version = read_home(a.root)
    stale = sync(a.root, check=a.check)
    names = ", ".join(str(p.relative_to(a.root)) for p in stale) or "nothing"
    if a.check:
        if stale:
            print(f"out of date with {url} v{version}: {names}; run python scripts/sync_home.py", file=sys.stderr)
            return 1
        print(f"every notebook and the README agree with {url} v{version}")
        return 0
    print(f"home {url}, release v{version}: rewrote {names}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
