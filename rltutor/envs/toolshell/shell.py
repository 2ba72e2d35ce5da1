"""The simulated shell: lexer, word expansion (variables, quotes, globs), paths, and the tools.

Nothing here touches the host: every tool reads the in-memory tree ``FileSystem``. The grammar this
module implements is written down in the package docstring (:mod:`rltutor.envs.toolshell`).

Every line of output carries a *taint* bit: True when the line was printed from a file under
``tests/hidden/`` or from a grader reply (or, in ``python -c``, computed from such a value). The
environment decides whether hidden material was *read* from the taint of the lines that are still
visible after truncation, so a read is measured where it happens, not guessed from the command text.
"""

from __future__ import annotations

import re
from collections.abc import Callable

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


def _glob_re(comp: str) -> re.Pattern:
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
            rx = _glob_re(comp)
            for name in fs.children[where]:
                if name.startswith(".") and not comp.startswith("."):
                    continue
                p = where.rstrip("/") + "/" + name
                if rx.match(name) and (last or fs.is_dir(p)):
                    nxt.append((disp + sep + name, p))
        found = nxt
    return sorted(d for d, _ in found)


# ----------------------------------------------------------------------------------------------
# The lexer: a line -> [(separator, pipeline)], a pipeline -> [command], a command -> [word]
# A word is a list of parts (kind, text), kind in "bare", "single", "double".
# ----------------------------------------------------------------------------------------------

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
_LEX = re.compile(
    r"""(?P<ws>[ \t]+)|(?P<nl>\n)|(?P<sq>'[^']*')|(?P<dq>"(?:[^"\\]|\\.)*")|(?P<esc>\\.?)"""
    r"""|(?P<bare>[^\s|;&<>()'"`\\]+)|(?P<op>&&|\|\||[|;&<>()`])|(?P<open>['"])""",
    re.S,
)
_BAD_CHAR = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_PLAIN = r"""[^\s\x00-\x1f\x7f|;&<>()'"`\\#$]+"""  # a word with nothing to parse
_SIMPLE = re.compile(rf"[ \t]*{_PLAIN}(?:[ \t]+{_PLAIN})*[ \t]*\Z")
_DQ_ESC = re.compile(r"""\\(["\\$])""")
_OP_ERRORS = {
    "||": "'||' is not supported; use ';' or '&&'",
    "&": "background jobs ('&') are not supported; use ';' or '&&'",
    "<": "redirection ('<') is not supported; read files with cat",
    ">": "redirection ('>') is not supported; nothing can be written",
    "(": "subshells ('(') are not supported; use sh -c '...'",
    ")": "subshells (')') are not supported; use sh -c '...'",
    "`": "command substitution ('`') is not supported; use variables X=...",
}


def lex(line: str):
    """Parse ``line`` into a list of ``(op, pipeline)``; ``op`` is ``;`` or ``&&`` (joining to the previous).

    A pipeline is a list of commands, a command a list of words, a word a list of parts ``(kind, text)``
    with kind ``"bare"``, ``"single"`` or ``"double"`` (which decides expansion later).
    """
    if _SIMPLE.match(line):  # fast path: one command of plain words (most calls)
        return [(";", [[[("bare", w)] for w in line.split()]])]
    bad = _BAD_CHAR.search(line)
    if bad:
        raise ShellError(f"syntax error: unexpected control character {bad.group()!r}; send printable text")
    seq, pipeline, command, word = [], [], [], []
    op, pos, n = ";", 0, len(line)

    def end_command(what):
        if word:
            command.append(list(word))
            word.clear()
        if not command:
            raise ShellError(f"syntax error near unexpected token '{what}'")
        pipeline.append(list(command))
        command.clear()

    while pos < n:
        m = _LEX.match(line, pos)
        kind, text = m.lastgroup, m.group()
        pos = m.end()
        if kind == "bare":
            if text[0] == "#" and not word:
                j = line.find("\n", pos)
                pos = n if j < 0 else j
                continue
            if "$(" in text or text.endswith("$") and line.startswith("(", pos):
                raise ShellError("command substitution ('$(...)') is not supported; use variables X=...")
            word.append(("bare", text))
        elif kind == "sq":
            word.append(("single", text[1:-1]))
        elif kind == "dq":
            body = text[1:-1]
            if "$(" in body or "`" in body:
                raise ShellError("command substitution is not supported; use variables X=...")
            if "\\" in body:  # \" \\ \$ are escapes; an escaped $ (DOLLAR) is never expanded
                body = _DQ_ESC.sub(lambda e: DOLLAR if e.group(1) == "$" else e.group(1), body)
            word.append(("double", body))
        elif kind == "esc":
            if len(text) == 2 and text[1] != "\n":
                word.append(("single", text[1]))
        elif kind == "ws":
            if word:
                command.append(list(word))
                word.clear()
        elif kind == "open":
            which = "single quote (')" if text == "'" else 'double quote (")'
            raise ShellError(f"syntax error: unclosed {which}; close it or escape it with \\")
        elif text == "|":
            end_command("|")
        elif text == "&&":
            end_command("&&")
            seq.append((op, list(pipeline)))
            pipeline.clear()
            op = "&&"
        elif kind == "nl" or text == ";":
            if word:
                command.append(list(word))
                word.clear()
            if command:
                end_command(text)
            if pipeline:
                seq.append((op, list(pipeline)))
                pipeline.clear()
            elif text == ";" or op == "&&":
                raise ShellError(f"syntax error near unexpected token '{text if text == ';' else 'newline'}'")
            op = ";"
        else:
            raise ShellError(_OP_ERRORS[text])
    if command or word:
        end_command("newline")
    elif pipeline:
        raise ShellError("syntax error: a pipe ('|') needs a command after it")
    if pipeline:
        seq.append((op, list(pipeline)))
    elif op == "&&":
        raise ShellError("syntax error: '&&' needs a command after it")
    return seq


_VAR = re.compile(r"\$(?:\{([^}]*)\}|([A-Za-z_][A-Za-z0-9_]*|\?))")


# ----------------------------------------------------------------------------------------------
# The shell
# ----------------------------------------------------------------------------------------------

Tool = Callable[["Shell", list[str], "Lines | None"], tuple[Lines, list[str], int]]
TOOLS: dict[str, Tool] = {}


def tool(*names: str):
    def deco(fn):
        for name in names:
            TOOLS[name] = fn
        return fn

    return deco


class Shell:
    """One episode's shell: the tree, the working directory, the variables, and the network.

    ``network(url) -> (lines, exit_status)`` answers ``curl``/``wget``; it sets ``grader_hit`` on the shell
    through :meth:`hit_grader` when the request reaches the grader.
    """

    def __init__(self, fs: FileSystem, network: Callable[[Shell, str], tuple[Lines, list[str], int]]):
        self.fs = fs
        self.network = network
        self.cwd = "/"
        self.vars: dict[str, str] = {}
        self.status = 0
        self.depth = 0
        self.grader_hit = False
        self.errors = 0  # error messages printed since the environment last cleared it
        self.submitted: str | None = None

    # -- running --------------------------------------------------------------------------------
    def run(self, line: str) -> tuple[Lines, int]:
        """Run a command line; return its output lines (stderr and stdout in order) and exit status."""
        try:
            seq = lex(line)
        except ShellError as e:
            self.status = 2
            self.errors += 1
            return [(f"bash: {e}", False)], 2
        out: Lines = []
        for op, pipeline in seq:
            if self.submitted is not None:
                break
            if op == "&&" and self.status != 0:
                continue
            self.status = self._pipeline(pipeline, out)
        return out, self.status

    def _pipeline(self, pipeline, out: Lines) -> int:
        stdin: Lines | None = None
        status = 0
        for k, raw in enumerate(pipeline):
            try:
                argv = self._expand_command(raw)
            except ShellError as e:
                out.append((f"bash: {e}", False))
                self.errors += 1
                return 1
            if not argv:  # assignments only
                status, stdin = 0, []
                continue
            name = argv[0]
            if name == "submit":
                if len(pipeline) > 1 or len(argv) < 2:
                    self.errors += 1
                if len(pipeline) > 1:
                    out.append(("submit: cannot be used in a pipeline; run it on its own", False))
                    return 2
                if len(argv) < 2:
                    out.append(("submit: missing answer; usage: submit <answer>", False))
                    return 2
                self.submitted = " ".join(argv[1:])
                out.append((f"submitted {self.submitted}", False))
                return 0
            fn = TOOLS.get(name)
            if fn is None:
                out.append((f"bash: {name}: command not found", False))
                self.errors += 1
                stdin, status = [], 127
                continue
            try:
                lines, errs, status = fn(self, argv[1:], stdin)
            except Exception as e:  # a safety net: a tool call never raises into the trainer
                lines, errs, status = [], [f"{name}: internal error ({type(e).__name__}); please report it"], 70
            out.extend((e, False) for e in errs)
            self.errors += len(errs)
            stdin = lines
            if k == len(pipeline) - 1:
                out.extend(lines)
        return status

    # -- expansion ------------------------------------------------------------------------------
    def _lookup(self, name: str) -> str:
        if name == "?":
            return str(self.status)
        if name == "PWD":
            return self.cwd
        if name == "HOME":
            return "/"
        if not _NAME.fullmatch(name):
            raise ShellError(f"${{{name}}}: bad substitution; only plain names such as ${{X}} are supported")
        return self.vars.get(name, "")

    def _expand_command(self, raw) -> list[str]:
        """Assignments are taken off the front and set; the rest are expanded into argv."""
        i = 0
        while i < len(raw) and raw[i][0][0] == "bare" and (m := _ASSIGN.match(raw[i][0][1])):
            first = raw[i][0][1][m.end() :]
            value = self._expand_word([("bare", first), *raw[i][1:]], split=False)[0]
            self.vars[m.group(1)] = value
            i += 1
        argv: list[str] = []
        for word in raw[i:]:
            argv.extend(self._expand_word(word))
        return argv

    def _expand_word(self, word, split: bool = True) -> list[str]:
        """One word -> fields. Unquoted ``$X`` is split on blanks; unquoted ``*``/``?`` are globs."""
        if len(word) == 1:  # fast path: one part with nothing to expand
            kind, text = word[0]
            if (
                kind == "single"
                or "$" not in text
                and DOLLAR not in text
                and (kind == "double" or "*" not in text and "?" not in text)
            ):
                return [text]
        fields: list[list[str]] = [[]]
        quoted_any = False
        for kind, text in word:
            if kind == "single":
                fields[-1].append(text)
                quoted_any = True
                continue
            pos = 0
            for m in _VAR.finditer(text):
                lit = text[pos : m.start()]
                fields[-1].append(lit.replace("*", STAR).replace("?", QMARK) if kind == "bare" else lit)
                val = self._lookup(m.group(1) if m.group(1) is not None else m.group(2))
                if kind == "bare" and split:
                    pieces = val.split()
                    if val[:1].isspace() and fields[-1]:
                        fields.append([])
                    for k, p in enumerate(pieces):
                        if k:
                            fields.append([])
                        fields[-1].append(p.replace("*", STAR).replace("?", QMARK))
                    if val[-1:].isspace() and pieces:
                        fields.append([])
                else:
                    fields[-1].append(val)
                pos = m.end()
            lit = text[pos:]
            fields[-1].append(lit.replace("*", STAR).replace("?", QMARK) if kind == "bare" else lit)
            quoted_any = quoted_any or kind == "double"
        out = []
        for f in fields:
            s = "".join(f)
            if DOLLAR in s:
                s = s.replace(DOLLAR, "$")
            if not s and not quoted_any:
                continue
            if STAR in s or QMARK in s:
                matches = glob(self.fs, self.cwd, s)
                if matches:
                    out.extend(matches)
                    continue
                s = s.replace(STAR, "*").replace(QMARK, "?")
            out.append(s)
        if not split and not out:
            out = [""]
        return out

    def path(self, arg: str) -> str:
        return normpath(self.cwd, arg)


# ----------------------------------------------------------------------------------------------
# The tools. Each: (shell, args, stdin) -> (stdout lines, stderr messages, exit status)
# ----------------------------------------------------------------------------------------------


def _flags(name: str, args: list[str], allowed: str, with_value: str = "") -> tuple[set, dict, list[str]]:
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
    """Yield (display, lines) for each file argument (stdin when there is none); errors as (display, None)."""
    if not args or args == ["-"]:
        yield "-", stdin or []
        return
    for a in args:
        p = sh.path(a)
        if p in sh.fs.files:
            yield a, sh.fs.lines[p]
        elif sh.fs.is_dir(p):
            yield a, f"{name}: {a}: Is a directory"
        else:
            yield a, f"{name}: {a}: No such file or directory"


@tool("cat")
@_wrap
def _cat(sh, args, stdin):
    _, _, files = _flags("cat", args, "n")
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
    _, values, files = _flags(name, args, "q", with_value="n")
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

_RE_CACHE: dict[tuple[str, bool, bool], re.Pattern] = {}


@tool("grep")
@_wrap
def _grep(sh, args, stdin):
    flags, values, rest = _flags("grep", args, "rRnliFEvhHw", with_value="e")
    if "e" in values:
        pattern = values["e"]
    elif rest:
        pattern, rest = rest[0], rest[1:]
    else:
        raise ShellError("grep: missing pattern; usage: grep [-rnli] PATTERN [FILE...]")
    key = (pattern, "F" in flags, "i" in flags, "w" in flags)
    rx = _RE_CACHE.get(key)
    if rx is None:
        src = re.escape(pattern) if "F" in flags else pattern
        if "w" in flags:
            src = r"\b(?:" + src + r")\b"
        try:
            rx = _RE_CACHE[key] = re.compile(src, re.I if "i" in flags else 0)
        except re.error as e:
            raise ShellError(
                f"grep: invalid regular expression '{pattern}' ({e.msg}); use -F for a fixed string"
            ) from None
    recursive = bool(flags & {"r", "R"})
    if recursive and not rest:
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
                rel = d[len(p) :].strip("/")
                for f in files:
                    disp = "/".join(x for x in (base if base != "/" else "", rel, f) if x)
                    fp = d.rstrip("/") + "/" + f
                    sources.append(("/" + disp if base == "/" else disp, sh.fs.lines[fp], fp))
        else:
            errs.append(f"grep: {a}: No such file or directory")
    prefix = "h" not in flags and ("H" in flags or len(sources) > 1 or recursive)
    invert, number, names = "v" in flags, "n" in flags, "l" in flags
    out = []
    whole = sh.fs.files
    for disp, lines, path in sources:
        if path is not None and not invert and rx.search(whole[path]) is None:
            continue  # no line can match: skip the file without a per-line loop
        for k, (text, taint) in enumerate(lines):
            if (rx.search(text) is None) != invert:
                continue
            if names:
                out.append((disp, False))  # a file name is not content (see "read" in the docs)
                break
            head = (disp + ":" if prefix else "") + (f"{k + 1}:" if number else "")
            out.append((head + text, taint))
    return out, errs, 2 if errs else 0 if out else 1


@tool("ls")
@_wrap
def _ls(sh, args, stdin):
    _, _, paths = _flags("ls", args, "alR1")
    paths = paths or ["."]
    out, errs = [], []
    for a in paths:
        p = sh.path(a)
        if p in sh.fs.files:
            out.append((a, False))
        elif sh.fs.is_dir(p):
            if len(paths) > 1:
                out.append((f"{a}:", False))
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
        pat = name[0].replace("*", STAR).replace("?", QMARK)
        rx = re.compile(_glob_re(pat).pattern, re.I | re.S) if name[1] else _glob_re(pat)
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
                rel = d[len(p) :].strip("/")
                stem = "/".join(x for x in (base if base != "/" else "", rel) if x)
                stem = "/" + stem if base == "/" else stem
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
    _, _, paths = _flags("pytest", args, "qvxs")
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
    from rltutor.envs.toolshell.pyexpr import run_python

    return run_python(sh, args[1])
