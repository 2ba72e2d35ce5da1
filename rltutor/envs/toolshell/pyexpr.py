"""``python -c CODE``: a small, documented subset of Python, evaluated over the in-memory tree.

The code is parsed by Python's own parser (:func:`ast.parse`) and then walked by a whitelist: no
``eval``/``exec`` ever runs, and anything outside the subset is an error observation that names the
construct. What is supported (the package docstring repeats it as grammar):

* statements: ``import os`` / ``import base64`` / ``import sys`` (no-ops), ``NAME = expr``,
  ``A, B = expr``, an expression, ``for NAME in expr: ...`` (tuple targets too, 1,000 iterations in all);
* expressions: string/bytes/int constants, names, ``a + b``, f-strings, ``x[i]`` and ``x[i:j]``,
  lists and tuples, and calls of ``print`` (``sep=``, ``end=``), ``open(path).read()`` /
  ``.readlines()``, ``os.listdir``, ``os.walk``, ``os.getcwd``, ``os.path.join``, ``os.path.exists``,
  ``base64.b64decode(s).decode()``, ``base64.b64encode(b)``, ``str``, ``len``, ``sorted``, ``list``,
  ``repr``, and the string methods ``strip split splitlines upper lower replace startswith endswith
  join encode find`` (``decode`` on bytes).

Every value carries a taint bit: True when it was read from a hidden file or computed from such a
value; a ``print`` of a tainted value prints tainted lines.

Bounds: a value (string, bytes, list; a list's text as ``str`` would print it) holds at most
``MAX_VALUE_CHARS`` items, checked *before* it is built (``a + b``, ``s.join(xs)``, ``s.replace(a, b)``,
``str``/``repr``/``print``/f-strings of nested lists); loops run 1,000 iterations in all; every evaluated
expression spends the shell's work budget (:meth:`Shell.charge`); any error is a ``python: Kind: message``
line, and objects print without host addresses (``<module 'os'>``).
"""

from __future__ import annotations

import ast
import base64
import binascii

from rltutor.envs.toolshell.fs import MAX_PIPE_CHARS, WORK_LIMIT, Lines, normpath

MAX_ITERATIONS = 1000
MAX_VALUE_CHARS = 100_000
MAX_INT_BITS = 4096
_MODULES = ("os", "base64", "sys")
_STR_METHODS = {
    "strip",
    "split",
    "splitlines",
    "upper",
    "lower",
    "replace",
    "startswith",
    "endswith",
    "join",
    "encode",
    "find",
    "rstrip",
    "lstrip",
}


class PyError(Exception):
    """An error the simulated interpreter reports (``python: Kind: message``). ``taint`` is True when the
    message may quote a value read from a hidden file (``int(open(hidden).read())``'s ValueError quotes
    the text): its line is then as hidden as a printed one."""

    taint = False


def _quoting(message: str, taint: bool) -> PyError:
    """A PyError whose message quotes the call's values: as tainted as they are."""
    e = PyError(message)
    e.taint = bool(taint)
    return e


class _File:
    def __init__(self, name: str, text: str, taint: bool):
        self.name, self.text, self.taint = name, text, taint

    def __repr__(self) -> str:
        return f"<_io.TextIOWrapper name={self.name!r} mode='r' encoding='UTF-8'>"


class _Module:
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"<module {self.name!r}>"


def _flat(v, memo: dict | None = None) -> int:
    """An upper bound on ``len(repr(v))``, computed without building it; PyError past MAX_VALUE_CHARS.

    Nested lists may share items (``a = [a, a]`` doubles the text each time), so sizes are memoized by id."""
    if isinstance(v, str | bytes):
        return 4 * len(v) + 3
    if not isinstance(v, list | tuple):
        return 100 if isinstance(v, _File | _Module) else len(str(v)) if isinstance(v, int) else 8
    if not any(isinstance(x, list | tuple) for x in v):  # flat: no sharing can multiply the text
        n = 2 + sum(4 * len(x) + 5 if isinstance(x, str | bytes) else _flat(x) + 2 for x in v)
        if n > 4 * MAX_VALUE_CHARS + 3:
            raise PyError(f"MemoryError: value longer than {MAX_VALUE_CHARS} items")
        return n
    memo = {} if memo is None else memo
    n = memo.get(id(v))
    if n is None:
        n = 2
        for x in v:
            n += _flat(x, memo) + 2
            if n > 4 * MAX_VALUE_CHARS + 3:
                raise PyError(f"MemoryError: value longer than {MAX_VALUE_CHARS} items")
        memo[id(v)] = n
    return n


def _text(v) -> str:
    """``str(v)``, refused before it is built if it would be longer than MAX_VALUE_CHARS (bytes and strings exact)."""
    if isinstance(v, list | tuple):
        _flat(v)
    return str(v)


class _Eval:
    def __init__(self, sh):
        self.sh = sh
        self.names: dict[str, tuple[object, bool]] = {}
        self.out: Lines = []
        self.printed = 0
        self.iterations = 0

    # -- statements -----------------------------------------------------------------------------
    def stmt(self, node):
        if isinstance(node, ast.Import):
            for alias in node.names:
                root = alias.name.split(".")[0]
                if root not in _MODULES:
                    raise PyError(f"ModuleNotFoundError: No module named '{alias.name}' (available: os, base64, sys)")
                self.names[alias.asname or root] = (_Module(root), False)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            self.assign(node.targets[0], self.expr(node.value))
        elif isinstance(node, ast.Expr):
            self.expr(node.value)
        elif isinstance(node, ast.For) and not node.orelse:
            seq, taint = self.expr(node.iter)
            if not isinstance(seq, list | tuple | str):
                raise PyError(f"TypeError: cannot iterate over {type(seq).__name__}")
            for item in seq:
                self.iterations += 1
                if self.iterations > MAX_ITERATIONS:
                    raise PyError(f"RuntimeError: more than {MAX_ITERATIONS} loop iterations")
                self.assign(node.target, (item, taint))
                for s in node.body:
                    self.stmt(s)
        elif isinstance(node, ast.Pass):
            pass
        else:
            raise PyError(_unsupported(node))

    def assign(self, target, value):
        v, taint = value
        if isinstance(target, ast.Name):
            self.names[target.id] = value
        elif isinstance(target, ast.Tuple | ast.List) and all(isinstance(t, ast.Name) for t in target.elts):
            if not isinstance(v, list | tuple) or len(v) != len(target.elts):
                raise PyError(f"ValueError: cannot unpack into {len(target.elts)} names")
            for t, x in zip(target.elts, v, strict=True):
                self.names[t.id] = (x, taint)
        else:
            raise PyError(_unsupported(target))

    # -- expressions ----------------------------------------------------------------------------
    def expr(self, node) -> tuple[object, bool]:
        sh = self.sh  # _spend(16), inlined: this runs for every node
        sh.left -= 16
        if sh.left < 0:
            self._spend(0)
        if isinstance(node, ast.Constant):
            if not isinstance(node.value, str | bytes | int | type(None)):
                raise PyError(_unsupported(node))
            return node.value, False
        if isinstance(node, ast.Name):
            if node.id in self.names:
                return self.names[node.id]
            if node.id in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[node.id], False
            raise PyError(f"NameError: name '{node.id}' is not defined")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            (a, ta), (b, tb) = self.expr(node.left), self.expr(node.right)
            if type(a) is not type(b) or not isinstance(a, str | bytes | int | list | tuple):
                raise PyError(
                    f"TypeError: unsupported operand types for +: '{type(a).__name__}' and '{type(b).__name__}'"
                )
            if not isinstance(a, int):
                self._room(len(a) + len(b))
            elif max(abs(a), abs(b)).bit_length() >= MAX_INT_BITS:
                raise PyError(f"OverflowError: integers are limited to {MAX_INT_BITS} bits here")
            return a + b, ta or tb
        if isinstance(node, ast.JoinedStr):
            parts, taint = [], False
            for v in node.values:
                if isinstance(v, ast.FormattedValue):
                    if v.format_spec is not None or v.conversion not in (-1, 115, 114):
                        raise PyError("unsupported f-string formatting; use {x} only")
                    x, t = self.expr(v.value)
                    parts.append(repr(x) if v.conversion == 114 else _text(x))
                    taint = taint or t
                else:
                    parts.append(v.value)
                self._room(sum(map(len, parts)))
            return "".join(parts), taint
        if isinstance(node, ast.Subscript):
            v, t = self.expr(node.value)
            if not isinstance(v, str | bytes | list | tuple):
                raise PyError(f"TypeError: '{type(v).__name__}' object is not subscriptable")
            s = node.slice
            try:
                if isinstance(s, ast.Slice):
                    if s.step is not None:
                        raise PyError("slices with a step are not supported")
                    lo = self._int(s.lower) if s.lower is not None else None
                    hi = self._int(s.upper) if s.upper is not None else None
                    return v[lo:hi], t
                return v[self._int(s)], t
            except IndexError:
                raise PyError("IndexError: index out of range") from None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v, t = self.expr(node.operand)
            if not isinstance(v, int):
                raise PyError("TypeError: bad operand type for unary -")
            return -v, t
        if isinstance(node, ast.List | ast.Tuple):
            vals = [self.expr(e) for e in node.elts]
            seq = [x for x, _ in vals]
            return (seq if isinstance(node, ast.List) else tuple(seq)), any(t for _, t in vals)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Attribute):
            raise PyError(f"AttributeError: '{ast.unparse(node)}' is not supported without a call")
        raise PyError(_unsupported(node))

    def _spend(self, steps: int) -> None:
        """Spend the shell's work budget for this call."""
        self.sh.left -= steps
        if self.sh.left < 0:
            raise PyError(f"RuntimeError: the call ran out of its work budget ({WORK_LIMIT:,} steps)")

    def _room(self, n: int) -> None:
        """Refuse a value of ``n`` items before it is built; spend work in proportion to it."""
        if n > MAX_VALUE_CHARS:
            raise PyError(f"MemoryError: value longer than {MAX_VALUE_CHARS} items")
        self.sh.left -= n // 8

    def _int(self, node) -> int:
        v, _ = self.expr(node)
        if not isinstance(v, int):
            raise PyError("TypeError: indices must be integers")
        return v

    def _dotted(self, node) -> str | None:
        """``os.path.join`` -> "os.path.join" when the root is an imported module, else None."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and isinstance(self.names.get(node.id, (None,))[0], _Module):
            return ".".join([self.names[node.id][0].name, *reversed(parts)])
        return None

    def call(self, node):
        kwargs = {}
        for kw in node.keywords:
            if kw.arg not in ("sep", "end"):
                raise PyError(f"TypeError: keyword argument '{kw.arg}' is not supported")
            kwargs[kw.arg] = self.expr(kw.value)
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise PyError("unsupported syntax: *args")
        args = [self.expr(a) for a in node.args]
        taint = any(t for _, t in args)
        vals = [v for v, _ in args]
        f = node.func
        if isinstance(f, ast.Name) and f.id not in self.names:
            return self.builtin(f.id, vals, taint, kwargs)
        if isinstance(f, ast.Attribute):
            dotted = self._dotted(f)
            if dotted is not None:
                return self.module_call(dotted, vals, taint)
            obj, t = self.expr(f.value)
            return self.method(obj, f.attr, vals, taint or t)
        raise PyError(f"TypeError: '{ast.unparse(f)}' is not callable here")

    def builtin(self, name, vals, taint, kwargs):
        if kwargs and name != "print":
            raise PyError(f"TypeError: {name}() takes no keyword arguments here")
        if name == "print":
            sep = kwargs.get("sep", (" ", False))
            end = kwargs.get("end", ("\n", False))
            if not all(isinstance(v[0], str) for v in (sep, end)):
                raise PyError("TypeError: sep and end must be strings")
            for v in vals:
                _text(v)
            text = sep[0].join(v if isinstance(v, str) else repr(v) for v in vals) + end[0]
            self.emit(text, taint)
            return None, False
        if name == "open":
            if not vals or len(vals) > 2 or not isinstance(vals[0], str):
                raise PyError("TypeError: open() takes a path string, e.g. open('README.md')")
            if len(vals) == 2 and vals[1] not in ("r", "rt"):
                raise _quoting(f"PermissionError: only reading is supported, got mode {vals[1]!r}", taint)
            p = normpath(self.sh.cwd, vals[0])
            if self.sh.fs.is_dir(p):
                raise _quoting(f"IsADirectoryError: [Errno 21] Is a directory: '{vals[0]}'", taint)
            if p not in self.sh.fs.files:
                raise _quoting(f"FileNotFoundError: [Errno 2] No such file or directory: '{vals[0]}'", taint)
            hidden = any(t for _, t in self.sh.fs.lines[p])
            return _File(vals[0], self.sh.fs.files[p], hidden), taint or hidden
        one = {"str": str, "len": len, "sorted": sorted, "list": list, "repr": repr}
        if name in one:
            if len(vals) != 1:
                raise PyError(f"TypeError: {name}() takes exactly one argument here")
            _text(vals[0])  # str, repr, sorted and list of a huge nested list are refused before they run
            try:
                return _cap(one[name](vals[0])), taint
            except (TypeError, ValueError, OverflowError) as e:
                raise _quoting(f"{type(e).__name__}: {e}", taint) from None
        raise PyError(f"NameError: name '{name}' is not defined")

    def module_call(self, dotted, vals, taint):
        fs, sh = self.sh.fs, self.sh
        if dotted in ("os.listdir", "os.walk", "os.path.exists"):
            arg = vals[0] if vals else "."
            if not isinstance(arg, str):
                raise PyError(f"TypeError: {dotted}() takes a path string")
            p = normpath(sh.cwd, arg)
            if dotted == "os.path.exists":
                return fs.exists(p), taint
            if not fs.is_dir(p):
                raise _quoting(f"FileNotFoundError: [Errno 2] No such file or directory: '{arg}'", taint)
            if dotted == "os.listdir":
                return list(fs.children[p]), taint
            walked = []
            for d, dirs, files in fs.walk(p):
                self._spend(16 + 16 * (len(dirs) + len(files)))
                rel = d[len(p) :].strip("/")
                walked.append(("/".join(x for x in (arg.rstrip("/"), rel) if x) or "/", list(dirs), list(files)))
            return walked, taint
        if dotted == "os.getcwd":
            return sh.cwd, False
        if dotted == "os.path.join":
            if not vals or not all(isinstance(v, str) for v in vals):
                raise PyError("TypeError: os.path.join() takes path strings")
            out = vals[0]
            for v in vals[1:]:
                out = v if v.startswith("/") else out.rstrip("/") + "/" + v if out else v
            return out, taint
        if dotted in ("base64.b64decode", "base64.b64encode"):
            if len(vals) != 1 or not isinstance(vals[0], str | bytes):
                raise PyError(f"TypeError: {dotted}() takes one str or bytes argument")
            data = vals[0].encode() if isinstance(vals[0], str) else vals[0]
            try:
                return (base64.b64decode(data) if dotted.endswith("decode") else base64.b64encode(data)), taint
            except (binascii.Error, ValueError):
                raise PyError("binascii.Error: Incorrect padding or invalid base64") from None
        raise PyError(f"AttributeError: '{dotted}' is not supported (see http://docs.local/tools)")

    def method(self, obj, name, vals, taint):
        if isinstance(obj, _File):
            if name == "read" and not vals:
                return obj.text, taint
            if name == "readlines" and not vals:
                return obj.text.splitlines(keepends=True), taint
        elif isinstance(obj, bytes) and name == "decode":
            try:
                return obj.decode(*vals), taint
            except (UnicodeDecodeError, LookupError, TypeError):
                raise PyError("UnicodeDecodeError: cannot decode these bytes") from None
        elif isinstance(obj, str) and name in _STR_METHODS:
            if name == "join":
                items = vals[0] if len(vals) == 1 and isinstance(vals[0], list | tuple | str) else None
                if items is not None and all(isinstance(x, str) for x in items):
                    self._room(sum(map(len, items)) + len(obj) * max(0, len(items) - 1))
            elif name == "replace" and len(vals) >= 2 and all(isinstance(x, str) for x in vals[:2]):
                hits = obj.count(vals[0]) if vals[0] else len(obj) + 1
                if len(vals) == 3 and isinstance(vals[2], int) and vals[2] >= 0:
                    hits = min(hits, vals[2])
                self._room(len(obj) + hits * max(0, len(vals[1]) - len(vals[0])))
            try:
                return _cap(getattr(obj, name)(*vals)), taint
            except (TypeError, ValueError, LookupError, OverflowError) as e:
                raise _quoting(f"{type(e).__name__}: {e}", taint) from None
        raise PyError(f"AttributeError: '{type(obj).__name__}' object has no supported attribute '{name}'")

    def emit(self, text: str, taint: bool):
        if self.printed > MAX_PIPE_CHARS:
            return
        self.printed += len(text)
        body = text[:-1] if text.endswith("\n") else text
        self.out.extend((line, taint) for line in body.split("\n"))


def _cap(v):
    if isinstance(v, str | bytes | list | tuple) and len(v) > MAX_VALUE_CHARS:
        raise PyError(f"MemoryError: value longer than {MAX_VALUE_CHARS} items")
    return v


def _unsupported(node) -> str:
    return f"unsupported syntax '{type(node).__name__}': python -c runs a small subset (see http://docs.local/tools)"


_PARSED: dict[str, ast.Module] = {}
_CACHE_SIZE = 256  # parsed programs kept (the cache is emptied when full)


def run_python(sh, code: str) -> tuple[Lines, list, int]:
    """Run ``code``; return (stdout lines, error messages, exit status); an error that may quote a hidden
    value comes as ``(message, True)``."""
    tree = _PARSED.get(code)
    if tree is None:
        try:
            tree = ast.parse(code, mode="exec")
        except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
            return [], [f"python: SyntaxError: {getattr(e, 'msg', None) or 'cannot parse'}"], 1
        if len(code) <= 300:  # a parse takes about 300 bytes per character of code
            if len(_PARSED) >= _CACHE_SIZE:
                _PARSED.clear()
            _PARSED[code] = tree  # the evaluator never mutates a tree, so parses are shared
    ev = _Eval(sh)
    try:
        for node in tree.body:
            ev.stmt(node)
    except PyError as e:
        return ev.out, [(f"python: {e}", e.taint)], 1
    except RecursionError:
        return ev.out, ["python: RecursionError: expression too deep"], 1
    except MemoryError:
        return ev.out, ["python: MemoryError: out of memory"], 1
    return ev.out, [], 0
