"""The built wheel on its own: a chapter copied out of the repository runs as it does in the book.

What a reader on Colab gets is ``pip install git+URL@vX.Y.Z``: the files committed at the tag, built
into a wheel. This test does the same offline: it builds a wheel from the files git tracks (so a data
file that is not committed, or not declared as package data, is missing here too), installs it into a
fresh virtual environment, copies chapter 5 (which reads the stored sweep through
:mod:`rltutor.datafiles`) into an empty folder outside the repository and executes it there at quick
scale. It must run without an error, print no "not found", and import rltutor from that environment.

The fresh environment does not download its dependencies again: it sees, through a ``.pth`` file, a
folder of links to exactly the distributions that the wheel's requirements (and the kernel's, nbclient
and ipykernel) pull in from the test's own environment, torch included. ``pip install --no-index`` then
checks the wheel's requirements against them, so an import a chapter needs but pyproject does not
declare still fails. Marked ``packaging`` (and ``slow``): ``scripts/test.sh`` runs it as its own step.
"""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = "05_long_horizons.ipynb"
KERNEL_EXTRAS = ("nbclient", "ipykernel", "nbformat")  # what executes a notebook; Colab has its own

pytestmark = [pytest.mark.packaging, pytest.mark.slow]


def _run(cmd, **kw):
    res = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if res.returncode:
        pytest.fail(f"{' '.join(map(str, cmd))} failed ({res.returncode}):\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
    return res


def _source_tree(dest: Path) -> Path:
    """The files of the package as a git checkout of the tag has them (tracked files only)."""
    names = ["pyproject.toml", "README.md", "LICENSE", "rltutor"]
    try:
        tracked = subprocess.run(
            ["git", "ls-files", "-z", *names], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.split("\0")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: cannot tell which files a tagged release would contain")
    for name in filter(None, tracked):
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, dest / name)
    return dest


def _closure(requirements: list[str]) -> set[str]:
    """Names of the installed distributions that ``requirements`` pull in, transitively (markers evaluated)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[tuple[str, str]] = set()
    names: set[str] = set()
    todo = [(Requirement(r), "") for r in requirements]
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        name = canonicalize_name(req.name)
        for ex in {""} | set(req.extras):
            if (name, ex) in seen:
                continue
            seen.add((name, ex))
            try:
                dist = md.distribution(req.name)
            except md.PackageNotFoundError:
                pytest.fail(f"{req.name} (needed by the wheel or the kernel) is not installed in the test environment")
            names.add(dist.metadata["Name"])
            todo += [(Requirement(r), ex) for r in dist.requires or []]
    return names


def _link_farm(dists: set[str], farm: Path) -> None:
    """Symlink the top-level files of each distribution into ``farm`` (a folder a .pth file adds to sys.path)."""
    farm.mkdir()
    for name in sorted(dists):
        dist = md.distribution(name)
        base = Path(dist.locate_file(""))
        for f in dist.files or []:
            top = Path(f).parts[0]
            if top in ("..", "__pycache__") or top.endswith(".pth"):
                continue
            if not (farm / top).exists() and (base / top).exists():
                (farm / top).symlink_to(base / top)


def test_the_wheel_runs_a_chapter_outside_the_repository(tmp_path):
    if importlib.util.find_spec("packaging") is None or importlib.util.find_spec("nbclient") is None:
        pytest.skip("needs the test extra (packaging, nbclient)")
    # 1. the wheel, from the tracked files
    src = _source_tree(tmp_path / "src")
    dist = tmp_path / "dist"
    isolation = [] if importlib.util.find_spec("setuptools") is None else ["--no-build-isolation"]
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation, "-w", dist, src])
    (wheel,) = dist.glob("rltutor-*.whl")

    # 2. a fresh environment that sees the dependencies' installed copies, and nothing else of this one
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv])
    py = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = Path(_run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    from packaging.utils import canonicalize_name

    with zipfile.ZipFile(wheel) as z:
        (meta_name,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(z.read(meta_name).decode())
    requires = [r for r in metadata.get_all("Requires-Dist") or [] if "extra ==" not in r]
    assert any(r.startswith("torch") for r in requires), requires
    deps = _closure(requires + list(KERNEL_EXTRAS))
    assert canonicalize_name("rltutor") not in {canonicalize_name(d) for d in deps}
    _link_farm(deps, tmp_path / "deps")
    (site / "rltutor-test-deps.pth").write_text(str(tmp_path / "deps") + "\n")
    _run([sys.executable, "-m", "pip", "--python", py, "install", "-q", "--no-index", wheel])

    # 3. the chapter alone in an empty folder, its kernel in the fresh environment
    run = tmp_path / "reader"
    run.mkdir()
    nb = json.loads((ROOT / "notebooks" / CHAPTER).read_text(encoding="utf-8"))
    probe = "import rltutor, rltutor.datafiles as d\nprint('RLTUTOR_AT', rltutor.__file__, d.DATA_DIR)"
    nb["cells"].append(
        {
            "cell_type": "code",
            "execution_count": None,
            "id": "wheelprobe",
            "metadata": {},
            "outputs": [],
            "source": probe,
        }
    )
    (run / CHAPTER).write_text(json.dumps(nb, indent=1), encoding="utf-8")
    kernels = tmp_path / "jupyter" / "kernels" / "wheel"
    kernels.mkdir(parents=True)
    (kernels / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [str(py), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "language": "python",
                "display_name": "wheel",
            }
        )
    )
    runner = (
        "import sys, nbformat, nbclient\n"
        "nb = nbformat.read(sys.argv[1], as_version=4)\n"
        "nbclient.NotebookClient(nb, kernel_name='wheel', timeout=600, allow_errors=False,\n"
        "    resources={'metadata': {'path': sys.argv[2]}}).execute()\n"
        "nbformat.write(nb, sys.argv[1])\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "JUPYTER", "VIRTUAL_ENV"))}
    env.update(
        RLTUTOR_QUICK="1",
        MPLBACKEND="Agg",
        JUPYTER_PATH=str(tmp_path / "jupyter"),
        PYTHONNOUSERSITE="1",
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
        JUPYTER_PLATFORM_DIRS="1",
    )
    res = subprocess.run(
        [str(py), "-c", runner, str(run / CHAPTER), str(run)],
        cwd=run,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert res.returncode == 0, f"{CHAPTER} failed outside the repository:\n{res.stdout[-2000:]}\n{res.stderr[-4000:]}"

    done = json.loads((run / CHAPTER).read_text(encoding="utf-8"))
    text = "\n".join(
        "".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
        for c in done["cells"]
        if c["cell_type"] == "code"
        for o in c.get("outputs", [])
    )
    assert "not found" not in text.lower(), text[-2000:]
    at = next(line for line in text.splitlines() if line.startswith("RLTUTOR_AT"))
    package, data_dir = (Path(p).resolve() for p in at.split()[1:3])
    site = site.resolve()
    assert package.is_relative_to(site) and data_dir.is_relative_to(site), (
        f"the chapter imported rltutor from {package}, not from the fresh environment {site}"
    )
    assert not package.is_relative_to(ROOT)
    meta = json.loads((data_dir / "horizon" / "sweep" / "meta.json").read_text())
    assert meta["command"] in text, "chapter 5 did not print the stored sweep's command (did it read the data?)"
