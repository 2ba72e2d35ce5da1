"""Every module, function, attribute and file that a page or a docstring names exists.

A rename leaves the prose behind: chapter 1's exercise asked for ``bl.sweep`` after it became
``bl.sweep_param``, chapter 4 cited ``tests/test_analysis.py`` after it became ``tests/test_variance.py``,
two docstrings sent readers to ``notes/CONTRACT.md`` after it moved into :mod:`rltutor.rollout`. Read
without building the book, from

* the pages: ``book/*.md``, ``README.md``, ``CONTRIBUTING.md`` and every notebook's markdown and code cells;
* the docstrings: every string a module of ``rltutor/`` documents itself, a class, a function or an
  attribute with (read from the source, so nothing is imported to find them),

these tests check

* dotted names ``rltutor.x.y``: imported and looked up (a module, then attributes; a dataclass field
  without a default counts);
* paths ``tests/...py``, ``scripts/...``, ``rltutor/...``, ``benchmarks/...``, ``notes/...``,
  ``notebooks/...``, ``book/...``: on disk (a glob must match something; ``path::test_name`` must define
  the test);
* ``alias.attr`` where a notebook imports ``alias`` from rltutor (``from rltutor.experiments import
  baselines as bl``): in its code cells (read with ``ast``) and in the code spans of its markdown;
* a docstring's Sphinx roles (``:func:`whiten```, ``:meth:`decode```): resolved as Sphinx would, from the
  documented module and class outward.

The CHANGELOG is not read: it names what is gone on purpose.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import importlib
import importlib.util
import inspect
import json
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [*sorted((ROOT / "book").glob("*.md")), ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

# not inside an address (``https://rltutor.github.io``) and not a pattern (mutmut's ``rltutor.losses.x_*``)
DOTTED = re.compile(r"(?<![\w./])rltutor(?:\.[A-Za-z_]\w*)+(?![\w*])")
PATH = re.compile(r"(?<![\w/.~-])((?:tests|scripts|rltutor|benchmarks|notes|notebooks|book)/[\w./*-]*[\w*/])(::\w+)?")
ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|obj|exc|const):`~?([\w.]+)`")
SPAN = re.compile(r"`([^`\n]+)`")


# -- resolving -----------------------------------------------------------------------------------------


_MISSING = object()
_INSTANCE = object()  # an attribute each instance gets (checked in the class's source)


def _attr(obj, name: str):
    got = getattr(obj, name, _MISSING)
    if got is _MISSING and inspect.isclass(obj):
        if dataclasses.is_dataclass(obj) and name in {f.name for f in dataclasses.fields(obj)}:
            return obj.__dataclass_fields__[name]  # a field without a default
        try:  # an instance attribute its methods set (``self.overflow = False``)
            source = inspect.getsource(obj)
        except (OSError, TypeError):
            return got
        if re.search(rf"\bself\.{re.escape(name)}\s*(:[^=]+)?=[^=]", source):
            return _INSTANCE
    return got


@cache
def resolve(dotted: str) -> bool:
    """Whether ``dotted`` (``rltutor.a.b.c``) is a module or an attribute reachable from one."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        name = ".".join(parts[:i])
        try:
            obj = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name is not None and not name.startswith(e.name):  # a dependency of an existing module
                raise
            continue
        for attr in parts[i:]:
            obj = _attr(obj, attr)
            if obj is _MISSING:
                return False
        return True
    return False


# ToolShell's simulated file system (``tests/hidden/``, ``tests/public/``: what an agent may or may not read)
# is not this repository's; a placeholder part (``notebooks/NN_topic.ipynb``, ``rltutor/data/lm/NAME.csv``)
# stands for any name.
SIMULATED = re.compile(r"^tests/(hid|public)")
PLACEHOLDERS = {"NN", "NAME", "X", "XX", "N", "REF", "VERSION"}


def path_exists(rel: str, test: str | None) -> bool:
    rel = rel.rstrip("/")
    if SIMULATED.match(rel) or PLACEHOLDERS & set(re.split(r"[/_.-]", rel)):
        return True
    if "*" in rel:
        return any(ROOT.glob(rel))
    p = ROOT / rel
    if not p.exists():
        return False
    if test:
        return (
            re.search(rf"^\s*(async\s+)?def {re.escape(test[2:])}\(", p.read_text(encoding="utf-8"), re.M) is not None
        )
    return True


# -- what the pages and docstrings say -------------------------------------------------------------------


def _notebook_cells(nb: Path) -> list[tuple[str, str]]:
    cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
    return [(c["cell_type"], "".join(c["source"])) for c in cells if c["cell_type"] in ("markdown", "code")]


def _parse_cell(src: str) -> ast.Module | None:
    """A code cell without its IPython magics and shell escapes (``%matplotlib``, ``!pip``)."""
    lines = ["pass" if line.lstrip().startswith(("%", "!")) else line for line in src.splitlines()]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def notebook_aliases(nb: Path) -> dict[str, str]:
    """``{alias: "rltutor.x.y"}`` for every ``import rltutor.x as alias`` / ``from rltutor.x import y [as alias]``."""
    out: dict[str, str] = {}
    for kind, src in _notebook_cells(nb):
        tree = _parse_cell(src) if kind == "code" else None
        for node in ast.walk(tree) if tree else ():
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("rltutor") and a.asname:
                        out[a.asname] = a.name
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rltutor") and node.level == 0:
                for a in node.names:
                    if a.name != "*":
                        out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def _attribute_uses(tree: ast.AST, aliases: dict[str, str]):
    """``alias.attr`` in code: each outermost attribute chain on an alias, down to the first call or subscript."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain, base = [], node
            while isinstance(base, ast.Attribute):
                chain.append(base.attr)
                base = base.value
            if isinstance(base, ast.Name) and base.id in aliases:
                yield base.id, list(reversed(chain))


@cache
def _module_target(dotted: str):
    """The object an alias stands for, or None when it does not resolve (reported elsewhere)."""
    if not resolve(dotted):
        return None
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for attr in parts[i:]:
            obj = _attr(obj, attr)
        return obj
    return None


def _checkable(alias_target: str, chain: list[str]) -> str | None:
    """The dotted name to check for ``alias.chain``: attributes of modules and classes only (an instance's
    attributes, set at run time, cannot be looked up statically)."""
    obj = _module_target(alias_target)
    if obj is None or not (inspect.ismodule(obj) or inspect.isclass(obj)):
        return None
    names = [alias_target]
    for attr in chain:
        names.append(attr)
        obj = _attr(obj, attr)
        if obj is _MISSING or not (inspect.ismodule(obj) or inspect.isclass(obj)):
            break
    return ".".join(names)


def docstrings() -> list[tuple[str, str, str | None, str]]:
    """``(file, module, class or None, text)`` for every docstring in ``rltutor/``, read from the source:
    modules, classes, functions and the string statement under an attribute."""
    out = []
    for py in sorted((ROOT / "rltutor").rglob("*.py")):
        rel = py.relative_to(ROOT)
        mod = ".".join(rel.with_suffix("").parts).removesuffix(".__init__")
        tree = ast.parse(py.read_text(encoding="utf-8"))

        def visit(node, cls, rel=rel, mod=mod):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.Expr) and isinstance(child.value, ast.Constant):
                    if isinstance(child.value.value, str):
                        out.append((str(rel), mod, cls, child.value.value))
                elif isinstance(child, ast.ClassDef):
                    visit(child, child.name if cls is None else f"{cls}.{child.name}", rel, mod)
                elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    visit(child, cls, rel, mod)

        visit(tree, None)
    return out


def _texts():
    """``(where, text)`` of every page, notebook cell and docstring."""
    for page in PAGES:
        yield str(page.relative_to(ROOT)), page.read_text(encoding="utf-8")
    for nb in NOTEBOOKS:
        for i, (kind, src) in enumerate(_notebook_cells(nb)):
            yield f"{nb.relative_to(ROOT)} cell {i} ({kind})", src
    for file, mod, cls, text in docstrings():
        yield f"{file} ({mod}{'.' + cls if cls else ''} docstring)", text


# -- the checks -----------------------------------------------------------------------------------------


def missing_dotted(texts) -> list[str]:
    return [
        f"{where}: {name}" for where, text in texts for name in sorted(set(DOTTED.findall(text))) if not resolve(name)
    ]


def missing_paths(texts) -> list[str]:
    bad = []
    for where, text in texts:
        for m in PATH.finditer(text):
            rel, test = m.group(1), m.group(2)
            if text.startswith("...", m.end(1)):  # ``rltutor/data/...``: a placeholder, not a path
                continue
            if not path_exists(rel, test):
                bad.append(f"{where}: {rel}{test or ''}")
    return bad


def missing_notebook_attributes(nb: Path) -> list[str]:
    aliases = notebook_aliases(nb)
    bad = [f"{nb.name}: import of {target}" for target in sorted(set(aliases.values())) if not resolve(target)]
    alias_re = re.compile(rf"(?<![\w.])({'|'.join(map(re.escape, aliases))})((?:\.[A-Za-z_]\w*)+)") if aliases else None
    for i, (kind, src) in enumerate(_notebook_cells(nb)):
        if kind == "code":
            tree = _parse_cell(src)
            uses = list(_attribute_uses(tree, aliases)) if tree else []
        else:
            uses = [
                (m.group(1), m.group(2)[1:].split("."))
                for span in SPAN.findall(src)
                for m in (alias_re.finditer(span) if alias_re else ())
            ]
        for alias, chain in uses:
            name = _checkable(aliases[alias], chain)
            if name is not None and not resolve(name):
                bad.append(f"{nb.name} cell {i} ({kind}): {alias}.{'.'.join(chain)} ({name})")
    return bad


def _role_resolves(target: str, mod: str, cls: str | None) -> bool:
    """As Sphinx looks a role's target up: absolute, or from the class and module outward (a leading
    ``.`` included); a builtin (``FloatingPointError``) or another package's name (``matplotlib.pyplot``)
    by import."""
    target = target.lstrip(".")
    if target.startswith("rltutor"):
        return resolve(target)
    bases = [f"{mod}.{cls}"] if cls else []
    bases.append(mod)
    parent = mod.rsplit(".", 1)[0]
    bases += [parent, "rltutor"]
    if any(resolve(f"{b}.{target}") for b in bases):
        return True
    if hasattr(builtins, target):
        return True
    if "." not in target:
        return False
    if importlib.util.find_spec(target.split(".")[0]) is None:  # another package, not installed here
        return True
    return resolve(target)


def missing_roles(entries) -> list[str]:
    return [
        f"{file} ({mod}{'.' + cls if cls else ''}): {target}"
        for file, mod, cls, text in entries
        for target in sorted(set(ROLE.findall(text)))
        if not _role_resolves(target, mod, cls)
    ]


# Stale names known and not yet fixed (none now). An entry must still be reported: the test fails once
# it is fixed, so that it leaves this list.
PENDING_DOTTED: set[str] = set()
PENDING_ROLES: set[str] = set()


def _assert_only_pending(bad: list[str], pending: set[str], what: str) -> None:
    assert not set(bad) - pending, f"{what}: {sorted(set(bad) - pending)}"
    assert not pending - set(bad), (
        f"fixed, so take them out of tests/test_names.py's list: {sorted(pending - set(bad))}"
    )


def test_every_dotted_rltutor_name_exists():
    bad = missing_dotted(_texts())
    _assert_only_pending(bad, PENDING_DOTTED, "modules, functions or attributes named that do not exist")


def test_every_file_named_exists():
    bad = missing_paths(_texts())
    assert not bad, f"files and folders named that are not in the repository: {bad}"


def test_every_notebook_alias_use_exists():
    bad = [b for nb in NOTEBOOKS for b in missing_notebook_attributes(nb)]
    assert not bad, f"notebook uses of an imported rltutor module's attribute that does not exist: {bad}"


def test_every_docstring_role_resolves():
    bad = missing_roles(docstrings())
    _assert_only_pending(bad, PENDING_ROLES, "Sphinx roles in docstrings naming nothing (from the module or class out)")


def test_the_checks_catch_what_they_are_for(tmp_path):
    """Each kind of stale reference this file exists for, as it was before the fixes, is reported."""
    assert missing_dotted([("p", "see {func}`rltutor.experiments.baselines.sweep` and rltutor.analysis")]) == [
        "p: rltutor.analysis",
        "p: rltutor.experiments.baselines.sweep",
    ]
    assert missing_dotted([("p", "{func}`rltutor.experiments.baselines.sweep_param`, rltutor.config.Config.lr.")]) == []
    assert missing_paths([("p", "the tests in `tests/test_analysis.py` and ``notes/CONTRACT.md``")]) == [
        "p: tests/test_analysis.py",
        "p: notes/CONTRACT.md",
    ]
    assert missing_paths([("p", "tests/test_variance.py, rltutor/data/lm/*.cmd, `rltutor/data/...`")]) == []
    assert missing_paths([("p", "tests/test_variance.py::test_no_such_test")]) == [
        "p: tests/test_variance.py::test_no_such_test"
    ]
    nb = tmp_path / "01_x.ipynb"
    cells = [
        {"cell_type": "code", "source": ["%matplotlib inline\n", "from rltutor.experiments import baselines as bl\n"]},
        {"cell_type": "code", "source": ["bl.sweep_param('group_size', [2])\n", "bl.sweep('group_size', [2])\n"]},
        {"cell_type": "markdown", "source": ["Use `bl.sweep` with `n_prompts`; `bl.BanditConfig(group_size=2)`."]},
    ]
    nb.write_text(json.dumps({"cells": cells}))
    assert missing_notebook_attributes(nb) == [
        "01_x.ipynb cell 1 (code): bl.sweep (rltutor.experiments.baselines.sweep)",
        "01_x.ipynb cell 2 (markdown): bl.sweep (rltutor.experiments.baselines.sweep)",
    ]
    doc = [
        (
            "rltutor/models/gpt.py",
            "rltutor.models.gpt",
            "TinyGPT",
            ":meth:`decode`, :meth:`no_such`, :class:`GPTConfig`",
        )
    ]
    assert missing_roles(doc) == ["rltutor/models/gpt.py (rltutor.models.gpt.TinyGPT): no_such"]
