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
# Bounds that keep every call within about 1 s of CPU and 256 MB, whatever its text (checked before a value
# is built). The work of one call is metered in steps (WORK_LIMIT, about 0.3 s on a 2020s core): a command
# costs 100, an output line 8, an expanded character or a glob candidate 1, grep and python -c their own.
WORK_LIMIT = 2_000_000
MAX_WORD_CHARS = 100_000  # one expanded word (a variable's value too)
MAX_ARGV_CHARS = 200_000  # all the words of one command, after expansion
MAX_VARS_CHARS = 1_000_000  # all the shell variables' values together
MAX_GLOB_MATCHES = 2_000  # paths one glob word may expand to (the repository holds about 250 files at most)
NAME_MAX = 255  # the longest file name, as on Linux: a glob needing more characters matches nothing
_CACHE_SIZE = 512  # compiled glob patterns kept (the cache is emptied when full)


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
        self.max_file_chars = max(map(len, self.files.values()), default=0)
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


class _Stars:
    """A glob with two or more ``*``: matched segment by segment in ``len(name) * len(pattern)`` steps.

    Backtracking over ``.*`` is polynomial of the degree of the number of stars (``*a*a*a*a*b``); placing each
    star-free segment at its leftmost fit is exact for globs and never backtracks."""

    def __init__(self, comp: str, flags: int):
        segs = comp.split(STAR)
        rx = [re.compile("".join("." if c == QMARK else re.escape(c) for c in seg), flags) for seg in segs]
        self.head, self.mid, self.tail = rx[0], rx[1:-1], re.compile(rx[-1].pattern + r"\Z", flags)
        self.tail_len = len(segs[-1])

    def match(self, name: str) -> bool:
        m = self.head.match(name)
        if m is None:
            return False
        pos, end = m.end(), len(name) - self.tail_len
        for rx in self.mid:
            m = rx.search(name, pos, max(pos, end))
            if m is None:
                return False
            pos = m.end()
        return pos <= end and self.tail.match(name, end) is not None


_NOTHING = re.compile(r"(?!)")
_GLOB_CACHE: dict[tuple[str, bool], re.Pattern | _Stars] = {}


def glob_re(comp: str, ignorecase: bool = False) -> re.Pattern | _Stars:
    """A matcher for one path component (``*`` and ``?`` active as STAR/QMARK): ``.match(name)`` is truthy on a match.

    Runs of ``*`` are one ``*``; with one ``*`` it is a regular expression, with more a :class:`_Stars`; one
    that needs more than NAME_MAX characters matches nothing."""
    key = (comp, ignorecase)
    r = _GLOB_CACHE.get(key)
    if r is None:
        if len(_GLOB_CACHE) >= _CACHE_SIZE:
            _GLOB_CACHE.clear()
        comp = re.sub(STAR + "{2,}", STAR, comp)
        flags = re.S | (re.I if ignorecase else 0)
        if len(comp) - comp.count(STAR) > NAME_MAX:
            r = _NOTHING
        elif comp.count(STAR) > 1:
            r = _Stars(comp, flags)
        else:
            pat = "".join(".*" if c == STAR else "." if c == QMARK else re.escape(c) for c in comp)
            r = re.compile(pat + r"\Z", flags)
        _GLOB_CACHE[key] = r
    return r


def glob(fs: FileSystem, cwd: str, pattern: str, charge=None) -> list[str]:
    """Paths matching ``pattern`` (``*`` and ``?`` active as STAR/QMARK), spelled as the pattern was.

    ``charge(n)`` is called for each directory read, in proportion to its names and the spelling's length;
    more than MAX_GLOB_MATCHES paths at any step (each ``..`` after a ``*`` multiplies the spellings) is a
    ShellError."""
    absolute = pattern.startswith("/")
    found = [("/" if absolute else "", "/" if absolute else cwd)]  # (display, absolute dir)
    comps = [c for c in pattern.split("/") if c != ""]
    for i, comp in enumerate(comps):
        last = i == len(comps) - 1
        nxt = []
        literal = STAR not in comp and QMARK not in comp
        rx = None if literal else glob_re(comp)
        for disp, where in found:
            sep = "" if disp in ("", "/") else "/"
            if literal:
                p = normpath(where, comp)
                if fs.exists(p) and (last or fs.is_dir(p)):
                    nxt.append((disp + sep + comp, p))
                if charge is not None:
                    charge(2 + (len(disp) + len(where)) // 16)
                continue
            if not fs.is_dir(where):
                continue
            names = fs.children[where]
            if charge is not None:
                charge(len(names) * (8 + len(disp) // 16))
            for name in names:
                if name.startswith(".") and not comp.startswith("."):
                    continue
                p = where.rstrip("/") + "/" + name
                if rx.match(name) and (last or fs.is_dir(p)):
                    nxt.append((disp + sep + name, p))
            if len(nxt) > MAX_GLOB_MATCHES:
                raise ShellError(f"glob: more than {MAX_GLOB_MATCHES} paths match; use a narrower pattern")
        if charge is not None and not literal:
            charge(200)  # compiling the component's matcher
        found = nxt
    return sorted(d for d, _ in found)
