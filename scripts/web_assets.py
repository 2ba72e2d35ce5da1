"""Fetch the JavaScript the book's pages load (MathJax, require.js, the Jupyter-widgets embed manager).

The book serves them from its own ``_static/vendor/`` so that every page works without a network: no
CDN is ever asked for math or widgets. This script is the one place their versions are pinned. It
asks the npm registry for each pinned tarball (through ``npm pack`` when npm is on the PATH, so the
machine's npm settings and cache apply; otherwise straight from the registry), checks the tarball's
sha512 against the pin, and unpacks the files the pages need into ``book/_ext/static/vendor/``
(git-ignored; ``book/_ext/rltutor_offline.py`` copies it into the built book). It runs from
``scripts/setup.sh``; when the folder already holds the pinned versions it returns at once.

    python scripts/web_assets.py          # fetch what is missing or out of date
    python scripts/web_assets.py --check  # exit 1 if the folder does not hold the pinned versions
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENDOR = ROOT / "book" / "_ext" / "static" / "vendor"
REGISTRY = "https://registry.npmjs.org"

# name: (version, npm integrity, {path in the package: destination under VENDOR}); a path ending in
# "/" copies that folder. The pages name only the destinations, which carry no version.
PINS: dict[str, tuple[str, str, dict[str, str]]] = {
    "mathjax": (
        "3.2.2",
        "sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw==",
        {
            "es5/tex-mml-chtml.js": "mathjax/tex-mml-chtml.js",
            # loaded on demand: TeX extensions (autoload), the CHTML fonts, the menu's accessibility parts
            "es5/input/": "mathjax/input/",
            "es5/output/chtml/": "mathjax/output/chtml/",
            "es5/a11y/": "mathjax/a11y/",
            "es5/sre/": "mathjax/sre/",
            "es5/ui/": "mathjax/ui/",
            "LICENSE": "mathjax/LICENSE",
        },
    ),
    "requirejs": (
        "2.3.8",
        "sha512-7/cTSLOdYkNBNJcDMWf+luFvMriVm7eYxp4BcFCsAX0wF421Vyce5SXP17c+Jd5otXKGNehIonFlyQXSowL6Mw==",
        {"require.js": "require.js", "package.json": "require.js.package.json"},  # licence: in both
    ),
    # 1.x is the manager for ipywidgets 8 (widget state with @jupyter-widgets/controls 2.0.0)
    "@jupyter-widgets/html-manager": (
        "1.0.15",
        "sha512-5thBIV6ymNgmPVOHvzx+gGy8ZSKmSazhtGw4/c4xJDVzRhG9PTeQsRjF3FUTopvFi//SABeNz1yp47bCrJ3CQA==",
        {
            "dist/embed-amd.js": "jupyter-widgets/embed-amd.js",
            "dist/": "jupyter-widgets/",  # its icon fonts, loaded from beside embed-amd.js
            "package.json": "jupyter-widgets/package.json",  # names the licence
        },
    ),
}
# font files and licences from the widget manager's dist/ (not its other bundles and source maps)
_WIDGET_SUFFIXES = (".woff2", ".woff", ".ttf", ".eot", ".svg", ".LICENSE.txt")
STAMP = VENDOR / "VERSIONS.json"


def _pins_record() -> dict[str, str]:
    return {name: version for name, (version, _, _) in PINS.items()}


def is_current() -> bool:
    """True when VENDOR holds exactly the pinned versions (and the files the pages load)."""
    try:
        ok = json.loads(STAMP.read_text()) == _pins_record()
    except (OSError, ValueError):
        return False
    needed = ("mathjax/tex-mml-chtml.js", "require.js", "jupyter-widgets/embed-amd.js")
    return ok and all((VENDOR / p).is_file() for p in needed)


def _tarball_name(name: str, version: str) -> str:
    return f"{name.split('/')[-1]}-{version}.tgz"


def _fetch(name: str, version: str, workdir: Path) -> bytes:
    npm = shutil.which("npm")
    if npm:
        out = subprocess.run(
            [npm, "pack", f"{name}@{version}", "--json", "--pack-destination", str(workdir)],
            capture_output=True,
            text=True,
            cwd=workdir,
        )
        if out.returncode == 0:
            filename = json.loads(out.stdout)[0]["filename"]
            return (workdir / filename).read_bytes()
        print(f"npm pack {name}@{version} failed, trying the registry directly:\n{out.stderr[-800:]}")
    url = f"{REGISTRY}/{name}/-/{_tarball_name(name, version)}"
    with urllib.request.urlopen(url, timeout=120) as response:
        return response.read()


def _check_integrity(name: str, data: bytes, integrity: str) -> None:
    algo, _, want = integrity.partition("-")
    got = base64.b64encode(hashlib.new(algo, data).digest()).decode()
    if got != want:
        raise SystemExit(f"{name}: the tarball's {algo} is {got}, the pin in scripts/web_assets.py says {want}")


def _unpack(name: str, data: bytes, files: dict[str, str], dest: Path) -> int:
    count, found = 0, set()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            if not member.isfile() or not member.name.startswith("package/"):
                continue
            inner = member.name[len("package/") :]
            for src, target in files.items():
                if src.endswith("/"):
                    if not inner.startswith(src):
                        continue
                    if src == "dist/" and not inner.endswith(_WIDGET_SUFFIXES):
                        continue
                    out = dest / target / inner[len(src) :]
                elif inner == src:
                    out = dest / target
                else:
                    continue
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(tar.extractfile(member).read())
                count += 1
                found.add(src)
                break
    missing = set(files) - found
    if missing:
        raise SystemExit(f"{name}: the package has nothing at {sorted(missing)}; fix PINS in scripts/web_assets.py")
    return count


def fetch() -> None:
    """Replace VENDOR by the pinned packages' files (built in a temporary folder, then moved)."""
    with tempfile.TemporaryDirectory(prefix="rltutor-web-") as tmp:
        staging = Path(tmp) / "vendor"
        staging.mkdir()
        for name, (version, integrity, files) in PINS.items():
            data = _fetch(name, version, Path(tmp))
            _check_integrity(name, data, integrity)
            n = _unpack(name, data, files, staging)
            print(f"web assets: {name}@{version}, {n} files")
        (staging / "VERSIONS.json").write_text(json.dumps(_pins_record(), indent=1) + "\n")
        if VENDOR.exists():
            shutil.rmtree(VENDOR)
        VENDOR.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(staging), VENDOR)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check; exit 1 if out of date")
    args = parser.parse_args(argv)
    if is_current():
        return 0
    if args.check:
        print(f"{VENDOR} does not hold the pinned web assets; run: python scripts/web_assets.py")
        return 1
    try:
        fetch()
    except OSError as e:
        print(
            f"could not fetch the book's web assets from the npm registry ({e}); the book needs them "
            "to typeset math and show widgets offline. Run python scripts/web_assets.py with access to "
            f"{REGISTRY} (or npm's configured registry)."
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
