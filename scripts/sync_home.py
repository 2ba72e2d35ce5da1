#!/usr/bin/env python3
"""Write the project's home (its repository URL) and the git ref readers get into every place that names them.

The URL has one home, ``repository.url`` in ``_config.yml``; the version one home, ``__version__`` in
``rltutor/__init__.py``; and whether that version is released one home, ``CHANGELOG.md``: a heading
``## X.Y.Z (YYYY-MM-DD)`` names a release (``## Unreleased`` does not). The ref a reader gets is derived
from them (:func:`install_ref`): ``main`` until a release is named, then the tag ``vX.Y.Z`` of the newest
one, which CONTRIBUTING's release steps create. From those this script writes:

* ``repository.branch`` in ``_config.yml``: the ref the book's launch-in-Colab buttons open
  (``colab.research.google.com/github/OWNER/NAME/blob/REF/notebooks/NN.ipynb``);
* the first code cell of every ``notebooks/*.ipynb``: on Colab it installs ``git+{url}@{ref}`` (package
  data included), the same ref the button opened, and elsewhere does nothing;
* the block between ``<!-- home -->`` markers in ``README.md`` (repository, published book, install line).

Run it after changing any of them (``python scripts/sync_home.py``); ``--check`` writes nothing and exits 1
naming the files that disagree (``tests/test_home.py`` runs the same check, and checks that the ref exists
in the repository). Notebooks keep nbformat 4's layout (one-space indent, UTF-8): only the install cell's
lines change. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README_START = "<!-- home: written by scripts/sync_home.py from _config.yml, rltutor/__init__.py and CHANGELOG.md -->"
README_END = "<!-- /home -->"
# The branch readers get until a release is tagged: the repository's default branch, which the book is
# published from (.github/workflows/book.yml).
DEFAULT_BRANCH = "main"
_RELEASE_HEADING = re.compile(r"^## +v?(\d+\.\d+\.\d+[\w.+-]*)\b", re.M)
_BRANCH_LINE = re.compile(r"^(repository:\s*\n(?:[ \t]+.*\n)*?[ \t]+branch:[ \t]*)(\S*)([ \t]*)$", re.M)


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


def released_version(root: Path = ROOT) -> str | None:
    """The newest release ``CHANGELOG.md`` names (its first ``## X.Y.Z ...`` heading), or None."""
    m = _RELEASE_HEADING.search((root / "CHANGELOG.md").read_text(encoding="utf-8"))
    return m.group(1) if m else None


def install_ref(root: Path = ROOT) -> str:
    """The git ref readers get: ``main`` until CHANGELOG names a release, then that release's tag ``vX.Y.Z``.

    The newest release CHANGELOG names must be ``__version__``: a release bumps both (CONTRIBUTING.md).
    """
    _, version = read_home(root)
    released = released_version(root)
    if released is None:
        return DEFAULT_BRANCH
    if released != version:
        raise SystemExit(
            f"CHANGELOG.md's newest release is {released} but rltutor/__init__.py says __version__ = {version!r}; "
            "a release sets both to the same X.Y.Z (CONTRIBUTING.md, 'Releasing and publishing')"
        )
    return f"v{version}"


def ref_exists(root: Path, ref: str) -> bool:
    """Whether ``ref`` names a commit in the git repository at ``root``.

    A tag must be there as ``refs/tags/REF`` (a clone without tags has to fetch them: ``git fetch --tags``).
    A branch may be a local branch or a remote-tracking one (``origin/main``): a fresh clone has the first,
    a pull request's checkout on GitHub Actions often neither, so there the branch the pull request
    targets (``GITHUB_BASE_REF``, a branch of the repository by definition) counts too.
    """

    def verify(name: str) -> bool:
        r = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}"],
            capture_output=True,
            text=True,
        )
        return r.returncode == 0

    if re.fullmatch(r"v\d+\.\d+\.\d+[\w.+-]*", ref):
        return verify(f"refs/tags/{ref}")
    if verify(f"refs/heads/{ref}") or verify(f"refs/remotes/origin/{ref}"):
        return True
    return ref == os.environ.get("GITHUB_BASE_REF")


def pages_url(url: str) -> str:
    """Where GitHub Pages publishes the repository's book: https://OWNER.github.io/NAME/."""
    owner, name = url.removeprefix("https://github.com/").split("/")
    if name.lower() == f"{owner.lower()}.github.io":
        return f"https://{name}/"
    return f"https://{owner}.github.io/{name}/"


def install_requirement(url: str, ref: str) -> str:
    """The pip requirement of the package at ``ref`` (:func:`install_ref`: ``main`` or the tag ``vX.Y.Z``)."""
    return f"rltutor @ git+{url}@{ref}"


def _what(ref: str) -> str:
    return f"the release {ref}" if ref.startswith("v") else f"the {ref} branch"


def install_cell(url: str, ref: str) -> str:
    """The source of every notebook's first code cell."""
    return (
        f"# On Google Colab, install rltutor from {_what(ref)} (the ref the Colab button opened, with its data\n"
        "# files); elsewhere (a local clone, a pip install) this cell does nothing.\n"
        "import sys\n"
        "\n"
        'if "google.colab" in sys.modules:\n'
        f'    get_ipython().run_line_magic("pip", \'install -q "{install_requirement(url, ref)}"\')'
    )


def readme_block(url: str, ref: str) -> str:
    """The README's block between the home markers (markers included)."""
    return (
        f"{README_START}\n"
        f"- Repository: {url}\n"
        f"- The book: {pages_url(url)}\n"
        f'- Install {_what(ref)}: `pip install "{install_requirement(url, ref)}"`\n'
        f"  (what each notebook's first cell runs on Colab; the book's Colab buttons open the notebooks at `{ref}`)\n"
        f"{README_END}"
    )


def _config_text(path: Path, ref: str) -> str:
    text = path.read_text(encoding="utf-8")
    if not _BRANCH_LINE.search(text):
        raise SystemExit(f"{path}: no repository.branch; the Colab buttons read the ref there")
    return _BRANCH_LINE.sub(lambda m: f"{m.group(1)}{ref}{m.group(3)}", text, count=1)


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
    url, _ = read_home(root)
    ref = install_ref(root)
    cell = install_cell(url, ref)
    out = {p: _notebook_text(p, cell) for p in sorted((root / "notebooks").glob("*.ipynb"))}
    out[root / "README.md"] = _readme_text(root / "README.md", readme_block(url, ref))
    out[root / "_config.yml"] = _config_text(root / "_config.yml", ref)
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
    url, _ = read_home(a.root)
    ref = install_ref(a.root)
    stale = sync(a.root, check=a.check)
    names = ", ".join(str(p.relative_to(a.root)) for p in stale) or "nothing"
    if a.check:
        if stale:
            print(f"out of date with {url}@{ref}: {names}; run python scripts/sync_home.py", file=sys.stderr)
            return 1
        print(f"every notebook, the README and _config.yml agree with {url}@{ref}")
        return 0
    print(f"home {url}, ref {ref}: rewrote {names}")
    if not ref_exists(a.root, ref):
        print(f"note: {ref} is not in this repository yet; a release creates it (CONTRIBUTING.md)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
