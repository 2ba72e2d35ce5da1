"""The bibliography (book/references.bib), read without building the book.

* every arXiv id the chapters or book pages mention is the ``eprint`` of an entry, so a reader finds the
  work on the references page with its authors and title, not as a bare id;
* every ``{cite}`` key exists;
* pybtex's generated labels (the ``[ACG+24]`` in front of each entry) are made of initials, or of the one
  corporate author's name: a LaTeX accent in braces or a braced list of names gave labels such as
  ``ACGalle+24`` and ``GLM5TeamZAaTUniversity26``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIB = ROOT / "book" / "references.bib"


def _pages() -> dict[str, str]:
    out = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in sorted((ROOT / "book").glob("*.md"))}
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        out[str(nb.relative_to(ROOT))] = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return out


def _bib():
    pybtex = pytest.importorskip("pybtex.database")
    return pybtex.parse_file(str(BIB))


def test_every_arxiv_id_in_the_text_has_an_entry():
    eprints = {e.fields.get("eprint") for e in _bib().entries.values()}
    missing = [
        f"{name}: arXiv {aid}"
        for name, text in _pages().items()
        for aid in re.findall(r"arXiv[: ]\s*(\d{4}\.\d{4,5})", text)
        if aid not in eprints
    ]
    assert not missing, f"arXiv ids cited without a references.bib entry (add one, cite it with {{cite}}): {missing}"


def test_every_cite_key_exists():
    keys = set(_bib().entries)
    unknown = [
        f"{name}: {k}"
        for name, text in _pages().items()
        for group in re.findall(r"\{cite(?::\w+)?\}`([^`]+)`", text)
        for k in group.split(",")
        if k.strip() not in keys
    ]
    assert not unknown, f"{{cite}} keys missing from book/references.bib: {unknown}"


def test_generated_labels_are_initials_or_one_organization():
    from pybtex.plugin import find_plugin

    bib = _bib()
    style = find_plugin("pybtex.style.formatting", "alpha")()
    odd = []
    for entry in style.format_entries(bib.entries.values()):
        persons = bib.entries[entry.key].persons.get("author", [])
        stem = re.sub(r"\d\d$", "", entry.label)
        if len(persons) == 1:
            last = re.sub(r"[^A-Za-z0-9]", "", "".join(persons[0].prelast_names + persons[0].last_names))
            ok = stem in (last, last[:3])
        else:
            ok = re.fullmatch(r"[A-Za-z]{1,4}\+?", stem) is not None
        if not ok:
            odd.append(f"{entry.key}: [{entry.label}]")
    assert not odd, f"odd generated labels (write accents as UTF-8, one corporate author in double braces): {odd}"
