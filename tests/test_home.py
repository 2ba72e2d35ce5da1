"""One home: the repository URL (``_config.yml``) and the version (``rltutor/__init__.py``) are written
nowhere else by hand; ``scripts/sync_home.py`` derives every notebook's install cell and the README's links
from them, and these tests fail when a file disagrees."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

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


def test_the_install_cell_pins_the_release_and_runs_only_on_colab():
    url, version = sync_home.read_home(ROOT)
    assert version == rltutor.__version__
    assert url.startswith("https://github.com/")
    cell = sync_home.install_cell(url, version)
    assert f"git+{url}@v{version}" in cell
    assert "@main" not in cell
    assert 'if "google.colab" in sys.modules:' in cell  # a local clone or a pip install never runs pip
    compile(cell.replace("get_ipython()", "ip"), "<install cell>", "exec")
    assert sync_home.pages_url("https://github.com/someone/book") == "https://someone.github.io/book/"
    assert sync_home.pages_url("https://github.com/someone/someone.github.io") == "https://someone.github.io/"


def test_a_new_home_is_one_edit_and_one_run(tmp_path):
    """Change the URL in _config.yml and the version in __init__.py; one run rewrites every place."""
    (tmp_path / "rltutor").mkdir()
    (tmp_path / "notebooks").mkdir()
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
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
