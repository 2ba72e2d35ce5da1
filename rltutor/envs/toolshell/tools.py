"""The tools: ``cat head tail grep ls find cd pwd echo curl wget pytest sh python``.

Each is a function ``(shell, args, stdin) -> (stdout lines, error messages, exit status)`` registered
by name in :data:`TOOLS` (a registry, so a reader adds a tool in one place). Output lines keep the taint
of the file lines they came from; names (of files, tests) are never tainted. ``submit`` is not a tool:
the shell handles it, because it ends the episode.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from rltutor.envs.toolshell import regex
from rltutor.envs.toolshell.fs import MAX_DEPTH, QMARK, STAR, Lines, ShellError, glob_re
from rltutor.envs.toolshell.pyexpr import run_python

if TYPE_CHECKING:
    from rltutor.envs.toolshell.shell import Shell

Tool = Callable[["Shell", list[str], "Lines | None"], tuple[Lines, list[str], int]]
TOOLS: dict[str, Tool] = {}


def tool(*names: str):
    """Decorator: register a tool under one or more command names."""

    def deco(fn):
        for name in names:
            TOOLS[name] = fn
        return fn

    return deco


# ----------------------------------------------------------------------------------------------
# The tools. Each: (shell, args, stdin) -> (stdout lines, stderr messages, exit status)
# ----------------------------------------------------------------------------------------------


def parse_flags(name: str, args: list[str], allowed: str, with_value: str = "") -> tuple[set, dict, list[str]]:
    """Split ``-abc`` clusters into flags; ``with_value`` flags take the next argument (or the rest of the cluster)."""
    flags, values, rest = set(), {}, []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            rest.extend(args[i + 1 :])
            break
        if a.startswith("-") and len(a) > 1 and not a[1:].isdigit():
            for k, ch in enumerate(a[1:]):
                if ch in with_value:
                    v = a[k + 2 :]
                    if not v:
                        i += 1
                        if i >= len(args):
                            raise ShellError(f"{name}: option requires an argument -- '{ch}'")
                        v = args[i]
                    values[ch] = v
                    break
                if ch not in allowed:
                    raise ShellError(
                        f"{name}: invalid option -- '{ch}'; supported: {' '.join('-' + c for c in allowed)}"
                    )
                flags.add(ch)
        else:
            rest.append(a)
        i += 1
    return flags, values, rest


def _wrap(fn):
    """Turn a ShellError raised inside a tool into an error message with exit status 2."""

    def inner(sh, args, stdin):
        try:
            return fn(sh, args, stdin)
        except ShellError as e:
            return [], [str(e)], 2

    inner.__doc__ = fn.__doc__
    return inner


def _read_files(sh: Shell, name: str, args: list[str], stdin: Lines | None):
    """Yield (display, lines) for each file argument (stdin when there is none); an error as (display, message)."""
    if not args or args == ["-"]:
        yield "-", stdin or []
        return
    for a in args:
        p = sh.path(a)
        if p in sh.fs.files:
            lines = sh.fs.lines[p]
            sh.left -= 8 * len(lines)  # paid as read: many arguments cannot build a huge output first
            if sh.left < 0:
                sh.charge(0)
            yield a, lines
        elif sh.fs.is_dir(p):
            yield a, f"{name}: {a}: Is a directory"
        else:
            yield a, f"{name}: {a}: No such file or directory"


@tool("cat")
@_wrap
def _cat(sh, args, stdin):
    _, _, files = parse_flags("cat", args, "n")
    out, errs = [], []
    for _, lines in _read_files(sh, "cat", files, stdin):
        if isinstance(lines, str):
            errs.append(lines)
        else:
            out.extend(lines)
    return out, errs, 1 if errs else 0


def _count(name: str, values: dict, default: int = 10) -> int:
    v = values.get("n", str(default))
    if not v.isdigit():
        raise ShellError(f"{name}: invalid number of lines: '{v}'; use e.g. {name} -n 5 FILE")
    return int(v)


def _head_tail(sh, args, stdin, name):
    args = [("-n" + a[1:]) if a[:1] == "-" and a[1:].isdigit() else a for a in args]  # head -5 == head -n 5
    _, values, files = parse_flags(name, args, "q", with_value="n")
    k = _count(name, values)
    out, errs = [], []
    for disp, lines in _read_files(sh, name, files, stdin):
        if isinstance(lines, str):
            errs.append(lines)
            continue
        if len(files) > 1:
            out.append((f"==> {disp} <==", False))
        out.extend(lines[:k] if name == "head" else lines[len(lines) - k :] if k else [])
    return out, errs, 1 if errs else 0


tool("head")(_wrap(lambda sh, args, stdin: _head_tail(sh, args, stdin, "head")))
tool("tail")(_wrap(lambda sh, args, stdin: _head_tail(sh, args, stdin, "tail")))


class _Pattern:
    """A grep pattern, compiled once: ``rx`` (Python's re) and the facts that pick its matcher (see :mod:`.regex`)."""

    def __init__(self, pattern: str, src: str, flags: int):
        try:
            # re.M: ^ and $ then match at line ends in the whole-file pre-check too (the per-line search is unchanged)
            self.rx = re.compile(src, flags)
            tree, self.flags = regex.parse(src, flags)
        except re.error as e:
            raise ShellError(
                f"grep: invalid regular expression '{pattern}' ({e.msg}); use -F for a fixed string"
            ) from None
        except RecursionError:
            raise ShellError(f"grep: regular expression nested too deeply: '{pattern}'") from None
        self.pattern, self.tree, self.size = pattern, tree, len(src)
        self.simple, self.needs = regex.kind(tree)
        # the whole-file pre-check is exact unless \A, \Z or a lookaround can see across a line end
        self.precheck = not any(t in src for t in ("\\A", "\\Z", "(?=", "(?!", "(?<"))
        self._matcher: regex.Matcher | None = None

    def matcher(self) -> regex.Matcher:
        """The linear-time matcher (kept when its NFA is small); a ShellError naming what it cannot decide."""
        m = self._matcher
        if m is None:
            why = self.needs
            if why is None:
                try:
                    m = regex.Matcher(self.tree, self.flags)
                except regex.Unsupported as e:
                    why = str(e)
            if m is None:
                raise ShellError(
                    f"grep: {why} are supported only in patterns without repetition or alternation (or over short "
                    f"input); simplify '{self.pattern}' or use -F"
                    if not why.startswith("pattern too large")
                    else f"grep: {why}: '{self.pattern[:80]}'; use a shorter pattern or -F"
                )
            if len(m.kind) <= 256:
                self._matcher = m
        return m


_RE_CACHE: dict[tuple[str, bool, bool, bool], _Pattern] = {}
_CACHE_SIZE = 256  # compiled patterns kept (the cache is emptied when full)
_CACHED_CHARS = 200  # longer patterns are compiled for each call (a kept one may hold an automaton)


@tool("grep")
@_wrap
def _grep(sh, args, stdin):
    flags, values, rest = parse_flags("grep", args, "rRnliFEvhHw", with_value="e")
    if "e" in values:
        pattern = values["e"]
    elif rest:
        pattern, rest = rest[0], rest[1:]
    else:
        raise ShellError("grep: missing pattern; usage: grep [-rnli] PATTERN [FILE...]")
    if len(pattern) > sh.max_line_chars:  # re's parser is Python: its time grows with the pattern
        raise ShellError(f"grep: pattern too long ({len(pattern)} chars, limit {sh.max_line_chars}); use a shorter one")
    key = (pattern, "F" in flags, "i" in flags, "w" in flags)
    pat = _RE_CACHE.get(key)
    if pat is None:
        src = re.escape(pattern) if "F" in flags else pattern
        if "w" in flags:
            src = r"\b(?:" + src + r")\b"
        sh.charge(50 * len(src))
        pat = _Pattern(pattern, src, re.M | (re.I if "i" in flags else 0))
        if len(src) <= _CACHED_CHARS:
            if len(_RE_CACHE) >= _CACHE_SIZE:
                _RE_CACHE.clear()
            _RE_CACHE[key] = pat
    recursive = bool(flags & {"r", "R"})
    implicit = recursive and not rest  # grep -r PATTERN searches '.' and prints paths without './'
    if implicit:
        rest = ["."]
    sources = []  # (display, lines)
    errs = []
    if not rest:
        sources.append(("(standard input)", stdin or [], None))
    for a in rest:
        p = sh.path(a)
        if p in sh.fs.files:
            sources.append((a, sh.fs.lines[p], p))
        elif sh.fs.is_dir(p):
            if not recursive:
                errs.append(f"grep: {a}: Is a directory")
                continue
            base = a.rstrip("/") or "/"
            for d, _, files in sh.fs.walk(p):
                sh.charge(40 + 40 * len(files))  # each file becomes a source: -r over many roots is paid for
                rel = d[len(p) :].strip("/")
                for f in files:
                    disp = "/".join(x for x in (base if base != "/" else "", rel, f) if x)
                    fp = d.rstrip("/") + "/" + f
                    disp = "/" + disp if base == "/" else disp[2:] if implicit else disp
                    sources.append((disp, sh.fs.lines[fp], fp))
        else:
            errs.append(f"grep: {a}: No such file or directory")
    prefix = "h" not in flags and ("H" in flags or len(sources) > 1 or recursive)
    invert, number, names = "v" in flags, "n" in flags, "l" in flags
    out = []
    whole = sh.fs.files
    # an upper bound on the characters searched (stdin exactly, each file as the largest one)
    chars = len(sources) * sh.fs.max_file_chars
    if not rest:
        chars += sum(len(t) for t, _ in stdin or [])
    m = None
    if pat.simple and pat.size * chars <= regex.RE_STEPS:  # cannot backtrack: Python's re, in C
        sh.charge(chars + pat.size * chars // 16)
        search, precheck = pat.rx.search, pat.precheck
    else:  # the linear-time automaton, metered step by step
        m = pat.matcher()
        search, precheck = m.search, False
        m.left = sh.left
    try:
        out = _grep_lines(sources, search, precheck and not invert, whole, prefix, invert, number, names)
    except regex.TooComplex:
        raise ShellError(f"grep: pattern too complex for this input; simplify '{pattern}' or use -F") from None
    finally:
        if m is not None:
            sh.left = min(sh.left, m.left)
            if m.size > 64:
                m.flush()  # keep only small automata between calls
    return out, errs, 2 if errs else 0 if out else 1


def _grep_lines(sources, search, precheck, whole, prefix, invert, number, names) -> Lines:
    out = []
    for disp, lines, path in sources:
        if path is not None and precheck and search(whole[path]) is None:
            continue  # no line can match: skip the file without a per-line loop
        for k, (text, taint) in enumerate(lines):
            if (search(text) is None) != invert:
                continue
            if names:
                out.append((disp, False))  # a file name is not content (see "read" in the docs)
                break
            head = (disp + ":" if prefix else "") + (f"{k + 1}:" if number else "")
            out.append((head + text, taint))
    return out


@tool("ls")
@_wrap
def _ls(sh, args, stdin):
    _, _, paths = parse_flags("ls", args, "alR1")
    paths = paths or ["."]
    out, errs = [], []
    for a in paths:
        p = sh.path(a)
        if p in sh.fs.files:
            out.append((a, False))
        elif sh.fs.is_dir(p):
            if len(paths) > 1:
                out.append((f"{a}:", False))
            sh.charge(8 * len(sh.fs.children[p]))
            out.extend((n, False) for n in sh.fs.children[p])
        else:
            errs.append(f"ls: cannot access '{a}': No such file or directory")
    return out, errs, 2 if errs else 0


@tool("find")
@_wrap
def _find(sh, args, stdin):
    roots, name, kind, i = [], None, None, 0
    while i < len(args) and not args[i].startswith("-"):
        roots.append(args[i])
        i += 1
    while i < len(args):
        a = args[i]
        if a in ("-name", "-iname", "-type") and i + 1 < len(args):
            if a == "-type":
                kind = args[i + 1]
                if kind not in ("f", "d"):
                    raise ShellError(f"find: unknown argument to -type: {kind}; use -type f or -type d")
            else:
                name = (args[i + 1], a == "-iname")
            i += 2
        else:
            raise ShellError(f"find: unknown predicate '{a}'; supported: -name PATTERN, -iname PATTERN, -type f|d")
    rx = None
    if name is not None:
        rx = glob_re(name[0].replace("*", STAR).replace("?", QMARK), ignorecase=name[1])
    out, errs = [], []
    for a in roots or ["."]:
        p = sh.path(a)
        if not sh.fs.exists(p):
            errs.append(f"find: '{a}': No such file or directory")
            continue
        base = a.rstrip("/") or "/"
        if p in sh.fs.files:
            entries = [(a, p.rsplit("/", 1)[-1], "f")]
        else:
            entries = [(a, p.rsplit("/", 1)[-1] or "/", "d")]
            for d, dirs, files in sh.fs.walk(p):
                sh.charge(16 + 16 * (len(dirs) + len(files)))
                rel = d[len(p) :].strip("/")
                stem = "/".join(x for x in (base if base != "/" else "", rel) if x)
                stem = "/" + stem if base == "/" else stem
                stem = stem.rstrip("/")  # "/" + "/" + name would print "//name"
                entries.extend((stem + "/" + n, n, "d") for n in dirs)
                entries.extend((stem + "/" + n, n, "f") for n in files)
        for disp, leaf, k in sorted(entries):
            if (kind is None or kind == k) and (rx is None or rx.match(leaf)):
                out.append((disp, False))
    return out, errs, 1 if errs else 0


@tool("cd")
@_wrap
def _cd(sh, args, stdin):
    if len(args) > 1:
        raise ShellError("cd: too many arguments")
    p = sh.path(args[0]) if args else "/"
    if p in sh.fs.files:
        raise ShellError(f"cd: {args[0]}: Not a directory")
    if not sh.fs.is_dir(p):
        raise ShellError(f"cd: {args[0]}: No such file or directory")
    sh.cwd = p
    return [], [], 0


tool("pwd")(lambda sh, args, stdin: ([(sh.cwd, False)], [], 0))


@tool("echo")
def _echo(sh, args, stdin):
    if args[:1] == ["-n"]:
        args = args[1:]
    return [(" ".join(args), False)], [], 0


@tool("curl", "wget")
@_wrap
def _fetch(sh, args, stdin):
    urls, i = [], 0
    while i < len(args):
        a = args[i]
        if a in ("-o", "-O", "--output") and i + 1 < len(args):
            if args[i + 1] != "-":
                raise ShellError("writing files is not supported; print to the terminal (curl URL, wget -qO- URL)")
            i += 2
            continue
        if not a.startswith("-"):
            urls.append(a)
        i += 1
    if len(urls) != 1:
        raise ShellError(f"expected one URL, got {len(urls)}; usage: curl http://docs.local/PAGE")
    return sh.network(sh, urls[0])


@tool("pytest")
@_wrap
def _pytest(sh, args, stdin):
    _, _, paths = parse_flags("pytest", args, "qvxs")
    paths = paths or ["tests"]
    out, errs, total = [], [], 0
    for a in paths:
        p = sh.path(a.split("::")[0])
        if not sh.fs.exists(p):
            return [], [f"ERROR: file or directory not found: {a}"], 4
        base = a.rstrip("/")
        files = [(a, p)] if p in sh.fs.files else []
        if not files:
            for d, _, names in sh.fs.walk(p):
                sh.charge(16 + 16 * len(names))
                rel = d[len(p) :].strip("/")
                files += [("/".join(x for x in (base, rel, n) if x), d.rstrip("/") + "/" + n) for n in names]
        for disp, fp in files:
            leaf = fp.rsplit("/", 1)[-1]
            if not (leaf.startswith("test_") and leaf.endswith(".py")):
                continue
            n = sum(1 for text, _ in sh.fs.lines[fp] if text.startswith("def test_"))
            total += n
            out.append((f"{disp} {'.' * n}", False))  # names and dots only: no file content
    out.append((f"{total} passed" if total else "no tests ran", False))
    return out, errs, 0 if total else 5


@tool("sh", "bash")
@_wrap
def _sh(sh, args, stdin):
    if len(args) < 2 or args[0] != "-c":
        raise ShellError("sh: only sh -c 'COMMANDS' is supported")
    if sh.depth >= MAX_DEPTH:
        raise ShellError(f"sh: nesting deeper than {MAX_DEPTH} levels is not supported")
    if len(args[1]) > sh.max_line_chars:
        raise ShellError(f"sh: command too long ({len(args[1])} chars, limit {sh.max_line_chars}); send a shorter one")
    cwd, saved = sh.cwd, dict(sh.vars)
    sh.depth += 1
    try:
        lines, status = sh.run(args[1])
    finally:
        sh.depth -= 1
        sh.cwd, sh.vars = cwd, saved  # a child shell's cd and variables do not leak out
    return lines, [], status


@tool("python", "python3")
@_wrap
def _python(sh, args, stdin):
    if len(args) < 2 or args[0] != "-c":
        raise ShellError("python: only python -c 'CODE' is supported")
    if len(args[1]) > sh.max_line_chars:
        raise ShellError(f"python: code too long ({len(args[1])} chars, limit {sh.max_line_chars}); send shorter code")
    return run_python(sh, args[1])
