"""One home: the repository URL (``_config.yml``), the version (``rltutor/__init__.py``) and whether it is
released (``CHANGELOG.md``) are written nowhere else by hand; ``scripts/sync_home.py`` derives from them the
ref readers get (``main`` until a release, then its tag), the Colab buttons' ref (``repository.branch``),
every notebook's install cell and the README's links, and these tests fail when a file disagrees or when
the ref named does not exist in the repository."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import rltutor

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("sync_home", ROOT / "scripts" / "sync_home.py")
sync_home = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sync_home)


def test_every_notebook_and_the_readme_agree_with_the_home():
    stale = sync_home.sync(ROOT, check=True)
    assert not stale, (
        f"{[str(p.relative_to(ROOT)) for p in stale]} disagree with repository.url in _config.yml or the "
        "version in rltutor/__init__.py: run python scripts/sync_home.py"
    )


def test_the_ref_named_exists_in_the_repository():
    """The install cells, the README and the Colab buttons name one ref, and it exists: ``main`` until
    CHANGELOG.md names a release, then the tag ``vX.Y.Z`` of that release, which must be in the clone
    (CONTRIBUTING's release steps tag the commit before the tests run; a clone without tags fetches them
    with ``git fetch --tags``, and CI's checkout needs ``fetch-tags: true``)."""
    if not (ROOT / ".git").exists():
        pytest.skip(f"{ROOT} is not a git checkout: there is no repository to look the ref up in")
    ref = sync_home.install_ref(ROOT)
    released = sync_home.released_version(ROOT)
    assert ref == (f"v{rltutor.__version__}" if released else "main")
    config = (ROOT / "_config.yml").read_text(encoding="utf-8")
    assert f"\n  branch: {ref}\n" in config, "the Colab buttons must open the ref the install cells install"
    assert sync_home.ref_exists(ROOT, ref), (
        f"the notebooks install {ref}, which is not a {'tag' if released else 'branch'} of this repository: "
        + (
            f"tag the release (git tag -a {ref} -m 'rltutor {rltutor.__version__}') or fetch tags (git fetch --tags)"
            if released
            else "the default branch is main"
        )
    )


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True)


def test_the_ref_is_main_until_a_release_and_then_a_tag_that_must_exist(tmp_path, monkeypatch):
    """In a scratch repository: only "Unreleased" gives main; a release heading gives its tag, which
    ref_exists finds only once it is tagged; a release that is not __version__ is refused."""
    monkeypatch.delenv("GITHUB_BASE_REF", raising=False)
    (tmp_path / "rltutor").mkdir()
    shutil.copy(ROOT / "_config.yml", tmp_path / "_config.yml")
    (tmp_path / "rltutor" / "__init__.py").write_text('__version__ = "0.3.0"\n')
    (tmp_path / "CHANGELOG.md").write_text("# Changelog\n\n## Unreleased\n\n### Things\n- one\n")
    _git(tmp_path, "init", "-q", "-b", "main")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first")
    assert sync_home.released_version(tmp_path) is None
    assert sync_home.install_ref(tmp_path) == "main"
    assert sync_home.ref_exists(tmp_path, "main")
    assert not sync_home.ref_exists(tmp_path, "trunk")

    (tmp_path / "CHANGELOG.md").write_text("# Changelog\n\n## Unreleased\n\n## 0.3.0 (2026-12-01)\n- one\n\n## 0.2.0\n")
    assert sync_home.released_version(tmp_path) == "0.3.0"
    assert sync_home.install_ref(tmp_path) == "v0.3.0"
    assert not sync_home.ref_exists(tmp_path, "v0.3.0")  # named, not yet tagged: test_the_ref_named... fails
    _git(tmp_path, "branch", "v0.3.0")
    assert not sync_home.ref_exists(tmp_path, "v0.3.0")  # a branch of that name is not the tag
    _git(tmp_path, "tag", "v0.3.0")
    assert sync_home.ref_exists(tmp_path, "v0.3.0")

    (tmp_path / "rltutor" / "__init__.py").write_text('__version__ = "0.4.0"\n')
    with pytest.raises(SystemExit, match="newest release is 0.3.0 but .* '0.4.0'"):
        sync_home.install_ref(tmp_path)


def test_the_install_cell_names_the_ref_and_runs_only_on_colab():
    url, version = sync_home.read_home(ROOT)
    assert version == rltutor.__version__
    assert url.startswith("https://github.com/")
    ref = sync_home.install_ref(ROOT)
    cell = sync_home.install_cell(url, ref)
    assert f"git+{url}@{ref}" in cell
    assert cell.count("git+") == 1
    assert f"git+{url}@v1.2.3" in sync_home.install_cell(url, "v1.2.3")
    assert 'if "google.colab" in sys.modules:' in cell  # a local clone or a pip install never runs pip
    compile(cell.replace("get_ipython()", "ip"), "<install cell>", "exec")
    assert sync_home.pages_url("https://github.com/someone/book") == "https://someone.github.io/book/"
    assert sync_home.pages_url("https://github.com/someone/someone.github.io") == "https://someone.github.io/"


def test_a_new_home_is_one_edit_and_one_run(tmp_path):
    """Change the URL in _config.yml, the version in __init__.py and name it released in CHANGELOG.md; one
    run rewrites every place, the Colab buttons' ref included."""
    (tmp_path / "rltutor").mkdir()
    (tmp_path / "notebooks").mkdir()
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    (tmp_path / "CHANGELOG.md").write_text("# Changelog\n\n## Unreleased\n\n## 9.8.7 (2026-12-01)\n- one\n")
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb"))[:2]:
        shutil.copy(nb, tmp_path / "notebooks" / nb.name)
    config = (ROOT / "_config.yml").read_text(encoding="utf-8")
    url, version = sync_home.read_home(ROOT)
    assert config.count(url) == 1, "the repository URL must appear once in _config.yml"
    (tmp_path / "_config.yml").write_text(config.replace(url, "https://github.com/example-org/rl-book"))
    init = (ROOT / "rltutor" / "__init__.py").read_text(encoding="utf-8")
    (tmp_path / "rltutor" / "__init__.py").write_text(init.replace(f'"{version}"', '"9.8.7"'))

    assert sync_home.main(["--root", str(tmp_path)]) == 0
    assert sync_home.main(["--root", str(tmp_path), "--check"]) == 0
    assert "\n  branch: v9.8.7\n" in (tmp_path / "_config.yml").read_text(encoding="utf-8")
    readme = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert "git+https://github.com/example-org/rl-book@v9.8.7" in readme
    assert "https://example-org.github.io/rl-book/" in readme
    assert url not in readme
    for nb in (tmp_path / "notebooks").glob("*.ipynb"):
        text = nb.read_text(encoding="utf-8")
        before = (ROOT / "notebooks" / nb.name).read_text(encoding="utf-8")
        assert url not in text and "git+https://github.com/example-org/rl-book@v9.8.7" in text
        # only the install cell changed: the same cells, the same layout
        a, b = json.loads(before), json.loads(text)
        assert len(a["cells"]) == len(b["cells"])
        changed = [i for i, (x, y) in enumerate(zip(a["cells"], b["cells"], strict=True)) if x != y]
        first_code = next(i for i, c in enumerate(a["cells"]) if c["cell_type"] == "code")
        assert changed == [first_code]
        assert json.dumps(b, indent=1, ensure_ascii=False) + "\n" == text


def test_the_license_is_an_spdx_expression_matching_the_license_file():
    """pyproject.toml names the license as an SPDX expression with its file (PEP 639), the form setuptools
    accepts after 2027-02-18 (the table ``{ text = "MIT" }`` warned at every build), and it is the one the
    LICENSE file holds; setuptools >= 77 reads that form."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^license = "MIT"', text, re.M), 'project.license must be the SPDX string, e.g. license = "MIT"'
    assert not re.search(r"^license\s*=\s*\{", text, re.M), "project.license as a table is deprecated"
    assert re.search(r'^license-files = \["LICENSE"\]', text, re.M)
    assert re.search(r'requires = \["setuptools>=(7[7-9]|[89]\d)', text), "the SPDX form needs setuptools >= 77"
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License\n")
