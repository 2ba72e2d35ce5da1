"""The package's layers: every import points down, including imports inside functions.

    utils  <-  advantages, losses (the math)  <-  models, envs (siblings)  <-  rollout, guard  <-  config
           <-  build  <-  train  <-  experiments (labs)  <-  views  <-  cli

(config sits above rollout and the guard so that it imports their registries of names instead of copying
them.) An environment imports no model, collector or trainer; nothing in the library imports a lab or a
view; a lab never plots; no two modules import each other; no module takes a ``_private`` name from
another; a lab imports other labs only through stats and runs, or a dependency listed below.
A reader who adds a module puts it in the layer its imports allow.
"""

import ast
import functools
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
    "rltutor.distill": 3,  # on-policy distillation: the math, the multi-task prompts, the teachers
    "rltutor.config": 4.5,  # between guard/rollout and build: it imports their registries of names
    "rltutor.rollout": 4,
    "rltutor.guard": 4,
    "rltutor.build": 5,
    "rltutor.export": 5.5,  # reads a config and the envs; the command line prints it
    "rltutor.train": 6,
    "rltutor.experiments": 7,
    "rltutor.views": 8,
    "rltutor.cli": 9,
    "rltutor.__main__": 10,
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


@functools.cache
def _known() -> frozenset[str]:
    return frozenset(_module_name(p) for p in PACKAGE.rglob("*.py"))


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


# ---------------------------------------------------------------------------------------------- cycles, privates, labs


def _type_only(tree) -> set[int]:
    """The ids of the import nodes under ``if TYPE_CHECKING:`` (for annotations only: never run)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out |= {id(n) for stmt in node.body for n in ast.walk(stmt) if isinstance(n, ast.Import | ast.ImportFrom)}
    return out


def _from_module(node: ast.ImportFrom, package: str) -> str:
    """The module a from-import reads from, a relative one resolved against ``package``."""
    if not node.level:
        return node.module
    base = package.split(".")
    return ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))


def _module_edges():
    """``(src, target, where)`` for every import between two of the package's modules that runs, at the top or
    inside a function (not those under ``if TYPE_CHECKING:``): ``from P import m`` imports the submodule
    ``P.m`` where there is one, else the module ``P``."""
    known = _known()
    for path in sorted(PACKAGE.rglob("*.py")):
        src = _module_name(path)
        package = src if path.name == "__init__.py" else src.rsplit(".", 1)[0]
        tree = ast.parse(path.read_text())
        skip = _type_only(tree)
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                targets = [_existing_prefix(a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                name = _from_module(node, package)
                subs = [f"{name}.{a.name}" for a in node.names if f"{name}.{a.name}" in known]
                targets = subs + ([name] if len(subs) < len(node.names) else [])
            else:
                continue
            where = f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
            for t in targets:
                if t in known and t != src:
                    yield src, t, where


def _cycles(edges) -> list[list[str]]:
    """Every strongly connected set of two or more modules (Tarjan), each as a sorted list."""
    graph: dict[str, set[str]] = {}
    for a, b, _ in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def test_no_two_modules_import_each_other():
    found = _cycles(_module_edges())
    assert not found, "modules that import each other (directly or around a loop):\n" + "\n".join(map(str, found))


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_uses(source: str, module: str, is_package: bool = False):
    """``(line, name, target)`` for every private name ``module``'s source takes from another module of the
    package: ``from M import _name``, and ``m._name`` where ``m`` is a package module it imported."""
    package = module if is_package else module.rsplit(".", 1)[0]
    known = _known()
    tree = ast.parse(source)
    aliases: dict[str, str] = {}  # local name -> the package module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            name = _from_module(node, package)
            for a in node.names:
                if _private(a.name):
                    yield node.lineno, a.name, name
                elif f"{name}.{a.name}" in known:
                    aliases[a.asname or a.name] = f"{name}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.asname and a.name in known:
                    aliases[a.asname] = a.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and _private(node.attr):
            target = aliases.get(node.value.id)
            if target is not None and target != module:
                yield node.lineno, node.attr, target


def _private_imports():
    """``where: src imports NAME from target`` for every private name taken from another module."""
    for path in sorted(PACKAGE.rglob("*.py")):
        src = _module_name(path)
        for line, name, target in _private_uses(path.read_text(), src, path.name == "__init__.py"):
            yield f"{path.relative_to(PACKAGE.parent)}:{line}: {src} imports {name} from {target}"


def test_no_private_name_is_imported_from_another_module():
    new = list(_private_imports())
    assert not new, "private names imported from another module (make them public or move them):\n" + "\n".join(new)


LAB_SHARED = {"rltutor.experiments", "rltutor.experiments.stats", "rltutor.experiments.runs"}
"""What every lab may import from the other labs: the verdicts (stats) and the run store (runs)."""
LAB_DEPENDENCIES = {
    ("rltutor.experiments.explorer_data", "rltutor.experiments.variance"),  # the explorer's grid of measurements
    ("rltutor.experiments.horizon", "rltutor.experiments.sweep"),  # chapter 05's canned sweep
    ("rltutor.experiments.horizon", "rltutor.experiments.variance"),  # chapter 04's canned SNR curves
    ("rltutor.experiments.agents", "rltutor.experiments.variance"),  # the gradient SNR of sub_advantage_snr
    ("rltutor.experiments.claims", "rltutor.experiments.lm"),  # ch. 15 reads chapters 06-10's verdicts; lm's Arm
    ("rltutor.experiments.claims", "rltutor.experiments.credit"),  # ch. 17's table reads chapter 11's main test
    ("rltutor.experiments.claims", "rltutor.experiments.sweep"),  # ch. 15 reads chapter 05's restated verdicts
}
"""The lab-to-lab imports allowed besides :data:`LAB_SHARED`, each with why."""


def test_a_lab_imports_other_labs_only_through_stats_and_runs():
    bad = [
        f"{where}: {src} imports {target}"
        for src, target, where in _module_edges()
        if src.startswith("rltutor.experiments.")
        and src not in LAB_SHARED
        and target.startswith("rltutor.experiments")
        and target not in LAB_SHARED
        and (src, target) not in LAB_DEPENDENCIES
    ]
    assert not bad, "a lab imports another lab (share through stats or runs, or list it):\n" + "\n".join(bad)


def test_the_new_checks_catch_a_violation(tmp_path):
    """A cycle, a private import and a lab-to-lab import are each seen (so the tests above can fail)."""
    assert _cycles([("a", "b", ""), ("b", "c", ""), ("c", "a", ""), ("c", "d", "")]) == [["a", "b", "c"]]
    assert _cycles([("a", "b", ""), ("b", "c", "")]) == []
    src = (
        "from rltutor.envs.toolshell import shell\n"
        "def f():\n    from rltutor.rollout.templates import _comparable_frac, __version__, TemplateCollector\n"
        "    return shell._ASSIGN, shell.lex, shell.__name__\n"
    )
    found = sorted((name, target) for _, name, target in _private_uses(src, "rltutor.guard.fake"))
    assert found == [("_ASSIGN", "rltutor.envs.toolshell.shell"), ("_comparable_frac", "rltutor.rollout.templates")]
    typed = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from rltutor.train import Trainer\n"
    assert len(_type_only(ast.parse(typed))) == 1  # an annotation-only import is no runtime edge
    edges = list(_module_edges())
    assert ("rltutor.experiments.horizon", "rltutor.experiments.sweep") in {(a, b) for a, b, _ in edges}
