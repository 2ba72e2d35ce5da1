"""The package's layers: every import points down, including imports inside functions.

    utils  <-  advantages, losses (the math)  <-  models, envs (siblings)  <-  config  <-  rollout, guard
           <-  build  <-  train  <-  experiments (labs)  <-  views, cli

An environment imports no model, collector or trainer; nothing in the library imports a lab or a view;
a lab never plots. A reader who adds a module puts it in the layer its imports allow.
"""

import ast
from pathlib import Path

import rltutor

PACKAGE = Path(rltutor.__file__).resolve().parent
LAYER = {  # module (or package) -> rank; a module may import only from a lower rank, or from itself
    "rltutor": 0,
    "rltutor.utils": 0,
    "rltutor.datafiles": 0,
    "rltutor.advantages": 1,
    "rltutor.losses": 1,
    "rltutor.models": 2,
    "rltutor.envs": 2,
    "rltutor.config": 4.5,  # between guard/rollout and build: it imports their registries of names
    "rltutor.rollout": 4,
    "rltutor.guard": 4,
    "rltutor.build": 5,
    "rltutor.train": 6,
    "rltutor.experiments": 7,
    "rltutor.views": 8,
    "rltutor.cli": 8,
    "rltutor.__main__": 9,
}
SIBLINGS_APART = {
    ("rltutor.models", "rltutor.envs"),
    ("rltutor.envs", "rltutor.models"),
    ("rltutor.advantages", "rltutor.losses"),
    ("rltutor.losses", "rltutor.advantages"),
}
PLOTTING = ("matplotlib", "plotly", "ipywidgets")  # what a lab or the library below views must not import


def _group(module: str) -> str:
    """The LAYER key a module belongs to: its longest listed prefix."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        key = ".".join(parts[:n])
        if key in LAYER:
            return key
    raise AssertionError(f"{module} is in no layer: add it to LAYER in {__file__}")


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(source: str, module: str, is_package: bool = False):
    """Every module ``source`` imports, at the top or inside a function, relative imports resolved."""
    package = module if is_package else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module
            yield name, node.lineno
            for a in node.names:  # "from rltutor.experiments import variance" imports rltutor.experiments.variance
                yield f"{name}.{a.name}", node.lineno


def edges():
    for path in sorted(PACKAGE.rglob("*.py")):
        src = _module_name(path)
        for target, line in _imports(path.read_text(), src, path.name == "__init__.py"):
            yield src, target, f"{path.relative_to(PACKAGE.parent)}:{line}"


def test_every_module_is_in_a_layer():
    for path in PACKAGE.rglob("*.py"):
        _group(_module_name(path))


def test_imports_point_down():
    bad = []
    for src, target, where in edges():
        if not target.startswith("rltutor") or target == "rltutor":
            continue
        target = _existing_prefix(target)
        a, b = _group(src), _group(target)
        if a == b:
            continue
        if LAYER[b] >= LAYER[a] or (a, b) in SIBLINGS_APART:
            bad.append(f"{where}: {src} ({a}, layer {LAYER[a]}) imports {target} ({b}, layer {LAYER[b]})")
    assert not bad, "imports that point up or sideways:\n" + "\n".join(bad)


def test_labs_and_library_never_plot():
    bad = [
        f"{where}: {src} imports {target}"
        for src, target, where in edges()
        if target.split(".")[0] in PLOTTING and LAYER[_group(src)] < LAYER["rltutor.views"]
    ]
    assert not bad, "only views plot:\n" + "\n".join(bad)


def _known() -> set[str]:
    return {_module_name(p) for p in PACKAGE.rglob("*.py")}


def _existing_prefix(name: str) -> str:
    """``rltutor.config.make_config`` -> ``rltutor.config`` (the module a from-import names a member of)."""
    known = _known()
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in known:
            return ".".join(parts[:n])
    return name


def test_the_rule_test_catches_a_violation():
    """An upward import, at the top or inside a function, is seen (so the test above can fail)."""
    src = "from rltutor.train import Trainer\n\ndef f():\n    from rltutor.views import plots\n"
    found = {_existing_prefix(t) for t, _ in _imports(src, "rltutor.envs.fake")}
    assert {"rltutor.train", "rltutor.views.plots"} <= found
    assert LAYER[_group("rltutor.train")] > LAYER[_group("rltutor.envs.fake")]
