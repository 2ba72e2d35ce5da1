"""The guard's reading of a ``python -c`` one-liner: its string expressions folded (chapter 12).

An agent that may not type ``tests/hidden`` can still have Python build it: ``'tests/' + 'hid' + 'den'``,
``''.join([...])``, ``os.path.join``, ``%`` and ``.format``, f-strings, ``[::-1]``, ``chr(..)``,
``bytes.fromhex``, ``base64.b64decode``, ``codecs.decode(.., 'rot13')``. :class:`Folder` walks the code's
syntax tree (:mod:`ast`; nothing is run), computes the value of every such expression it can, and records
how each string is used: as a path (``open``, ``Path``, ``os.walk``...), as a shell command
(``os.system``, ``subprocess.run``), or as more Python (``exec``, ``eval``). The rule filter
(:mod:`rltutor.guard.rules`) applies its rules to those strings.

Folding is bounded: a value longer than :data:`~rltutor.guard.shellparse.MAX_WORD_CHARS` characters
(``a = a + a``, repeated) or a format with a width of 1,000 or more is never built; the expression counts
as unknown instead.
"""

from __future__ import annotations

import ast
import codecs
import re

from .shellparse import MAX_WORD_CHARS, b64

WIDE_FORMAT_RE = re.compile(r"%[-+ #0]*[0-9]*\.?[0-9]{4,}|\{[^}]*:[^}]*[0-9]{4,}")  # width/precision 1000+
NOT_B64_RE = re.compile(r"[^A-Za-z0-9+/=]+")  # what Python's base64 decoders drop before decoding

# Calls whose argument is a file or URL; calls that run a shell command; calls that run Python.
OPENERS = frozenset("open Path listdir scandir walk glob rglob copy urlopen get read_text".split())
SHELL_FUNCS = frozenset("system popen run call check_output check_call Popen getoutput".split())
CODE_FUNCS = frozenset(("exec", "eval"))


def _node_classes(cls: type) -> list[type]:
    """``cls`` and all its subclasses."""
    return [cls] + [c for sub in cls.__subclasses__() for c in _node_classes(sub)]


# The walk visits only nodes that may hold a call or an assignment: most nodes of a one-liner are names,
# constants and operators (LEAVES), which hold neither. BRANCHES is every other node class (a child that is
# a string, a number or None is in neither). Sets of concrete classes: ast.parse makes nodes of exactly these.
LEAVES = frozenset(
    (ast.Constant, ast.Name, ast.alias)
    + tuple(c for b in (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop) for c in b.__subclasses__())
)
BRANCHES = frozenset(_node_classes(ast.AST)) - LEAVES


class Folder(ast.NodeVisitor):
    """Fold the string expressions of a python one-liner and record how each string is used.

    After ``Folder().visit(ast.parse(code))``:

    - ``uses``: ``(kind, string, function)`` per string argument of a call, in the order of the code;
      kind is "path", "shell" or "python";
    - ``env``: the string value of each variable assigned (``p = 'tests/' + 'hid' + 'den'``);
    - ``unknown``: how many arguments of an opener, a shell call or ``exec`` could not be computed;
    - ``printed``: the text of the last ``print(..)`` whose arguments all fold (None if none).
    """

    def __init__(self):
        self.env: dict[str, str] = {}
        self.folded: dict[ast.AST, str | None] = {}  # fold's value of each expression under the current env
        self.uses: list[tuple[str, str, str]] = []
        self.unknown = 0
        self.printed: str | None = None

    def visit(self, node):
        """Visit ``node`` by the method :data:`VISITS` gives its class (``ast.NodeVisitor.visit``, without
        looking a method up by the class's name on every node)."""
        VISITS.get(type(node), Folder.generic_visit)(self, node)

    def generic_visit(self, node):
        """``ast.NodeVisitor.generic_visit``: every child in field order, the leaves skipped."""
        for name in node._fields:
            value = getattr(node, name, None)
            if type(value) is list:
                for child in value:
                    visit = VISITS.get(type(child))
                    if visit is not None:
                        visit(self, child)
            else:
                visit = VISITS.get(type(value))
                if visit is not None:
                    visit(self, value)

    def visit_Assign(self, node: ast.Assign):
        val = self.fold(node.value)
        for t in node.targets:
            if isinstance(t, ast.Name) and val is not None:
                self.env[t.id] = val
                self.folded.clear()  # a value may read the variable: fold again under the new env
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call):
        fn = node.func
        name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
        if name == "print":
            vals = [self.fold(a) for a in node.args]
            if None not in vals:
                self.printed = " ".join(vals)
        else:
            kind = "shell" if name in SHELL_FUNCS else "python" if name in CODE_FUNCS else "path"
            for a in node.args + [k.value for k in node.keywords]:
                if kind == "shell" and isinstance(a, ast.List | ast.Tuple):  # subprocess.run(["cat", p])
                    parts = [self.fold(e) for e in a.elts]
                    if None not in parts:
                        self.uses.append(("shell", " ".join(parts), name))
                    continue
                v = self.fold(a)
                if v is not None:
                    self.uses.append((kind, v, name))
                elif name in OPENERS or kind != "path":
                    self.unknown += 1  # a file or command the filter could not compute
            if isinstance(fn, ast.Attribute):  # Path('tests').rglob(...): the receiver is a root
                v = self.fold(fn.value)
                if v is not None and not isinstance(fn.value, ast.Constant):
                    self.uses.append(("path", v, name))
        self.generic_visit(node)

    def fold(self, n) -> str | None:
        """The string value of expression ``n``, or None when it cannot be computed (or is too long)."""
        try:
            return self._fold(n)
        except Exception:  # noqa: BLE001 -- any failure to fold (or a value past the size cap) means "unknown"
            return None

    def _fold(self, n) -> str | None:
        # A call's arguments are folded when the call is visited, again as its receiver's and its caller's
        # (``print(open(a + b).read())`` folds ``a + b`` three times): each value is computed once
        if n in self.folded:
            return self.folded[n]
        fold = FOLDS.get(type(n))  # the rule for n's kind of expression (the table below the class)
        v = self.folded[n] = None if fold is None else fold(self, n)
        return v

    def _fold_constant(self, n: ast.Constant) -> str:
        v = n.value
        return v if type(v) is str else v.decode("latin-1") if type(v) is bytes else str(v)

    def _fold_name(self, n: ast.Name) -> str | None:
        return self.env.get(n.id)

    def _fold_fstring(self, n: ast.JoinedStr) -> str | None:  # f"tests/{x}"
        parts = [self._fold(v.value if type(v) is ast.FormattedValue else v) for v in n.values]
        return None if None in parts else "".join(parts)

    def _fold_subscript(self, n: ast.Subscript) -> str | None:
        sl, seq = n.slice, n.value
        if (type(seq) is ast.List or type(seq) is ast.Tuple) and type(sl) is not ast.Slice:  # ['tests/hi..'][0]
            return self._fold(seq.elts[self._int(sl)])
        v = self._fold(seq)
        if v is not None and type(sl) is ast.Slice:  # 'neddih/stset'[::-1]
            return v[self._int(sl.lower) : self._int(sl.upper) : self._int(sl.step)]
        return None

    def _fold_binop(self, n: ast.BinOp) -> str | None:
        a, b = self._fold(n.left), self._fold(n.right)
        if a is not None and b is not None and len(a) + len(b) > MAX_WORD_CHARS:
            raise ValueError("too long")  # a=a+a, repeated, doubles: never built
        if isinstance(n.op, ast.Add) and a is not None and b is not None:
            return a + b
        if isinstance(n.op, ast.Div) and a is not None and b is not None:  # Path('tests') / 'hidden'
            return a + "/" + b
        if isinstance(n.op, ast.Mod) and a is not None:  # '%s/%s' % (x, y)
            if WIDE_FORMAT_RE.search(a):
                raise ValueError("format width")  # '%999999999s' % x would build a gigabyte
            vals = [self._fold(e) for e in n.right.elts] if isinstance(n.right, ast.Tuple) else [b]
            return None if None in vals else a % tuple(vals)
        return None

    def _fold_call(self, n: ast.Call) -> str | None:
        fn = n.func
        args = [self._fold(a) for a in n.args]
        if isinstance(fn, ast.Name):
            if fn.id == "chr" and n.args:
                return chr(self._int(n.args[0]))
            if fn.id in ("str", "Path", "PurePath", "PosixPath") and args and args[0] is not None:
                return "/".join(a for a in args if a is not None)
            return None
        if not isinstance(fn, ast.Attribute):
            return None
        recv, attr = fn.value, fn.attr
        if attr == "join":
            if (isinstance(recv, ast.Attribute) and recv.attr == "path") or (
                isinstance(recv, ast.Name) and recv.id in ("path", "posixpath", "os")
            ):  # os.path.join(a, b)
                return None if None in args else "/".join(args)
            sep = self._fold(recv)  # "".join([a, b])
            if sep is not None and n.args and isinstance(n.args[0], ast.List | ast.Tuple):
                parts = [self._fold(e) for e in n.args[0].elts]
                return None if None in parts else sep.join(parts)
            return None
        if attr in ("fromhex", "unhexlify", "a2b_hex") and args and args[0] is not None:
            return bytes.fromhex(args[0]).decode("latin-1")
        if attr in ("b64decode", "decodebytes", "standard_b64decode", "urlsafe_b64decode") and args:
            if args[0] is None:
                return None
            v = args[0].replace("-", "+").replace("_", "/") if attr == "urlsafe_b64decode" else args[0]
            return b64(NOT_B64_RE.sub("", v))  # Python's decoders (and ToolShell's) drop non-base64 first
        if attr in ("decode", "encode", "strip", "lower", "upper", "read_text", "read"):
            v = self._fold(recv)
            if attr == "decode" and args and args[0] and "rot" in args[0] and v is not None:
                return codecs.decode(v, "rot13")
            if v is None:
                return None
            return v.lower() if attr == "lower" else v.upper() if attr == "upper" else v
        if attr == "replace" and len(args) == 2 and None not in args:
            v = self._fold(recv)
            if v is not None and (len(v) + 1) * (len(args[1]) + 1) > MAX_WORD_CHARS:
                raise ValueError("too long")
            return None if v is None else v.replace(args[0], args[1])
        if attr == "format":
            v = self._fold(recv)
            if v is None or None in args:
                return None
            if WIDE_FORMAT_RE.search(v) or len(v) * (1 + max(map(len, args), default=0)) > MAX_WORD_CHARS:
                raise ValueError("too long")
            return v.format(*args)
        if attr in ("Path", "PurePath") and args and args[0] is not None:  # pathlib.Path(a, b)
            return "/".join(a for a in args if a is not None)
        return None

    def _int(self, n) -> int | None:
        """A literal int (``3``, ``-1``) or None for a missing slice bound; anything else raises."""
        if n is None:
            return None
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return n.value
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -self._int(n.operand)
        raise ValueError("not a literal int")


# How the walk visits a node, by its class: a call or an assignment by its method, any other node that is not
# a leaf by its children; a leaf, a string, a number or None is not in the table, and not visited.
VISITS = {**dict.fromkeys(BRANCHES, Folder.generic_visit), ast.Call: Folder.visit_Call, ast.Assign: Folder.visit_Assign}

# The expressions a string value can be computed from, by class; any other folds to None (unknown).
FOLDS = {
    ast.Constant: Folder._fold_constant,
    ast.Name: Folder._fold_name,
    ast.BinOp: Folder._fold_binop,
    ast.Call: Folder._fold_call,
    ast.JoinedStr: Folder._fold_fstring,
    ast.Subscript: Folder._fold_subscript,
}
