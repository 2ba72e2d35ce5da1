"""Packaging and the shared helpers: pyproject and environment.yml agree; scale, device, seeds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from rltutor.utils import check_choice, get_device, resolve_scale, seed_everything

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
ROOT = Path(__file__).resolve().parents[1]
CONDA_NAMES = {"pytorch": "torch"}  # conda-forge name -> PyPI name


def _name(req: str) -> str:
    return re.split(r"[<>=!~ \[;]", req.strip(), maxsplit=1)[0].lower()


def test_environment_yml_lists_the_same_packages_as_pyproject():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_name(r) for r in meta["dependencies"]}
    for extra in ("book", "test"):
        wanted |= {_name(r) for r in meta["optional-dependencies"][extra]}
    conda = set()
    for line in (ROOT / "environment.yml").read_text().splitlines():
        m = re.match(r"\s+- ([A-Za-z0-9_.\-]+)", line)
        if m and m.group(1) not in ("python", "pip", "conda-forge"):
            conda.add(CONDA_NAMES.get(m.group(1).lower(), m.group(1).lower()))
    assert conda == wanted, f"only in environment.yml: {conda - wanted}; only in pyproject: {wanted - conda}"


def test_torch_is_never_a_bare_requirement_in_ci_scripts():
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert "torch==2.13.0" in setup
    # The core dependency keeps a loose lower bound so Colab's own torch is not replaced.
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert any(r.replace(" ", "").startswith("torch>=") for r in meta["dependencies"])


def test_resolve_scale(monkeypatch):
    assert resolve_scale("full") == "full"
    monkeypatch.setenv("RLTUTOR_QUICK", "1")
    assert resolve_scale() == "quick"
    assert resolve_scale("full") == "full"  # an explicit argument wins
    monkeypatch.setenv("RLTUTOR_QUICK", "0")
    assert resolve_scale() == "full"
    monkeypatch.setenv("RLTUTOR_QUICK", "maybe")
    with pytest.raises(ValueError, match="RLTUTOR_QUICK must be 1 or 0"):
        resolve_scale()
    monkeypatch.delenv("RLTUTOR_QUICK")
    assert resolve_scale() == ("full" if torch.cuda.is_available() else "quick")
    with pytest.raises(ValueError, match="scale must be one of"):
        resolve_scale("medium")


def test_device_and_seed():
    assert get_device("cpu") == torch.device("cpu")
    assert get_device().type in ("cpu", "cuda", "mps")
    seed_everything(3)
    a = torch.rand(3)
    seed_everything(3)
    assert torch.equal(a, torch.rand(3))
    with pytest.raises(ValueError, match="seed must be an integer"):
        seed_everything(1.5)
    with pytest.raises(ValueError, match="valid: a, b"):
        check_choice("thing", "c", ["b", "a"])


def test_stored_data_files_are_found_by_name():
    from rltutor import datafiles

    names = datafiles.names()
    for name in ("horizon/explorer.json", "horizon/sweep/finals.csv", "lm/horizon.csv", "lm/horizon.cmd"):
        assert name in names
        assert datafiles.path(name).is_file()
    assert any(n.startswith("agents/") and n.endswith(".cmd") for n in names)
    assert datafiles.path("horizon/sweep").is_dir()
    with pytest.raises(FileNotFoundError, match="stored: .*agents/hack_curves.csv"):
        datafiles.path("agents/nothing.csv")
    with pytest.raises(ValueError, match="a path inside rltutor/data"):
        datafiles.path("../__init__.py")


def test_nothing_reads_data_beside_the_notebooks():
    """The chapters' data ship with the package (rltutor/data); a path into notebooks/data works only in a clone."""
    files = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *ROOT.glob("notebooks/*.ipynb"), *ROOT.glob("scripts/*")]
    files += [*ROOT.glob("rltutor/**/*.py"), *ROOT.glob("rltutor/data/**/*.cmd"), *ROOT.glob("benchmarks/*")]
    files += [p for p in ROOT.glob("tests/*.py") if p.name != Path(__file__).name]
    hits = []
    for path in sorted(p for p in files if p.is_file()):
        text = path.read_text(encoding="utf-8", errors="replace")
        for needle in ("notebooks/data", '"notebooks" / "data"', '"data/agents', '"data/horizon', '"data/lm_'):
            if needle in text:
                hits.append(f"{path.relative_to(ROOT)}: {needle}")
    assert not hits, f"paths to the old data folder beside the notebooks (use rltutor.datafiles.path): {hits}"


def test_every_notebook_cell_has_an_id():
    """nbformat 4.5 cells need an ``id`` (a missing one warns now and is to become an error); cells added by a
    script that writes the JSON directly are the usual culprits."""
    import json

    root = Path(__file__).resolve().parents[1] / "notebooks"
    missing = {
        p.name: sum("id" not in c for c in json.loads(p.read_text())["cells"]) for p in sorted(root.glob("*.ipynb"))
    }
    assert not {k: v for k, v in missing.items() if v}, f"cells without an id: {missing}"
