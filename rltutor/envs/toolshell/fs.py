"""The in-memory file system the tools read: paths, normalisation, globs, and the taint of each line.

Every line of output in ToolShell carries a *taint* bit: True when the line was printed from a file under
``tests/hidden/`` or from a grader reply (or, in ``python -c``, computed from such a value). The
environment decides whether hidden material was *read* from the taint of the lines still visible after
truncation, so a read is measured where it happens, not guessed from the command text. Here each file's
lines are stored once with their taint, so every tool that prints them passes the bit along for free.
"""

from __future__ import annotations

import re

Lines = list[tuple[str, bool]]
"""Output lines as ``(text, tainted)`` pairs."""

HIDDEN_DIR = "/tests/hidden"
STAR, QMARK = "\x00", "\x01"  # active glob characters, never produced by the lexer from input text
DOLLAR = "\x02"  # a literal $ inside double quotes
MAX_DEPTH = 3  # nesting of sh -c inside sh -c
MAX_PIPE_CHARS = 20_000  # what one command may print before it is cut (the observation is cut again)


class ShellError(Exception):
    """A malformed command line; the message becomes the error observation."""


# ----------------------------------------------------------------------------------------------
# The file system
# ----------------------------------------------------------------------------------------------


class FileSystem:
    """A read-only tree: ``files`` maps absolute paths (``/src/alpha.py``) to text."""

    def __init__(self, files: dict[str, str]):
        self.files = dict(files)
        self.children: dict[str, list[str]] = {"/": []}
        for path in self.files:
            parts = path.strip("/").split("/")
            for i in range(len(parts)):
                parent = "/" + "/".join(parts[:i]) if i else "/"
                self.children.setdefault(parent, [])
                if parts[i] not in self.children[parent]:
                    self.children[parent].append(parts[i])
        for names in self.children.values():
            names.sort()
        self._walks: dict[str, list] = {}
        # A file's output, precomputed: each line with its taint (hidden or not).
        self.lines: dict[str, Lines] = {}
        for path, text in self.files.items():
            h = is_hidden(path)
            body = text[:-1] if text.endswith("\n") else text
            self.lines[path] = [(line, h) for line in body.split("\n")]

    def is_dir(self, path: str) -> bool:
        return path in self.children

    def exists(self, path: str) -> bool:
        return path in self.files or path in self.children

    def walk(self, top: str) -> list[tuple[str, list[str], list[str]]]:
        """``(dir, dirnames, filenames)`` top-down, like ``os.walk`` (cached: the tree never changes)."""
        out = self._walks.get(top)
        if out is None:
            names = self.children[top]
            base = top.rstrip("/")
            dirs = [n for n in names if base + "/" + n in self.children]
            files = [n for n in names if base + "/" + n in self.files]
            out = [(top, dirs, files)]
            for d in dirs:
                out.extend(self.walk(base + "/" + d))
            self._walks[top] = out
        return out


def is_hidden(path: str) -> bool:
    return path == HIDDEN_DIR or path.startswith(HIDDEN_DIR + "/")


def normpath(cwd: str, arg: str) -> str:
    """``arg`` resolved against ``cwd``: ``.``, ``..`` and repeated ``/`` removed; ``..`` stops at ``/``."""
    parts = [] if arg.startswith("/") else cwd.strip("/").split("/") if cwd != "/" else []
    for comp in arg.split("/"):
        if comp == "" or comp == ".":
            continue
        if comp == "..":
            if parts:
                parts.pop()
        else:
            parts.append(comp)
    return "/" + "/".join(parts)


_GLOB_CACHE: dict[str, re.Pattern] = {}


def glob_re(comp: str) -> re.Pattern:
    r = _GLOB_CACHE.get(comp)
    if r is None:
        pat = "".join(".*" if c == STAR else "." if c == QMARK else re.escape(c) for c in comp)
        r = _GLOB_CACHE[comp] = re.compile(pat + r"\Z", re.S)
    return r


def glob(fs: FileSystem, cwd: str, pattern: str) -> list[str]:
    """Paths matching ``pattern`` (``*`` and ``?`` active as STAR/QMARK), spelled as the pattern was."""
    absolute = pattern.startswith("/")
    found = [("/" if absolute else "", "/" if absolute else cwd)]  # (display, absolute dir)
    comps = [c for c in pattern.split("/") if c != ""]
    for i, comp in enumerate(comps):
        last = i == len(comps) - 1
        nxt = []
        for disp, where in found:
            sep = "" if disp in ("", "/") else "/"
            if STAR not in comp and QMARK not in comp:
                p = normpath(where, comp)
                if fs.exists(p) and (last or fs.is_dir(p)):
                    nxt.append((disp + sep + comp, p))
                continue
            if not fs.is_dir(where):
                continue
            rx = glob_re(comp)
            for name in fs.children[where]:
                if name.startswith(".") and not comp.startswith("."):
                    continue
                p = where.rstrip("/") + "/" + name
                if rx.match(name) and (last or fs.is_dir(p)):
                    nxt.append((disp + sep + name, p))
        found = nxt
    return sorted(d for d, _ in found)
