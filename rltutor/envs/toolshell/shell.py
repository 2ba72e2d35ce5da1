"""The simulated shell: the lexer, word expansion (variables, quotes, globs), pipes and ``;``/``&&``.

Nothing here touches the host: the tools (:mod:`.tools`) read the in-memory tree (:mod:`.fs`). The
grammar this module implements is written down in the package docstring (:mod:`rltutor.envs.toolshell`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from rltutor.envs.toolshell.fs import (
    DOLLAR,
    MAX_ARGV_CHARS,
    MAX_VARS_CHARS,
    MAX_WORD_CHARS,
    QMARK,
    STAR,
    WORK_LIMIT,
    FileSystem,
    Lines,
    ShellError,
    glob,
    normpath,
)
from rltutor.envs.toolshell.tools import TOOLS

# ----------------------------------------------------------------------------------------------
# The lexer: a line -> [(separator, pipeline)], a pipeline -> [command], a command -> [word]
# A word is a list of parts (kind, text), kind in "bare", "single", "double".
# ----------------------------------------------------------------------------------------------

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# "X=" at the start of a word: an assignment (public, as VAR and Shell.expand_word: the guard reads with them)
ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
_LEX = re.compile(
    r"""(?P<ws>[ \t]+)|(?P<nl>\n)|(?P<sq>'[^']*')|(?P<dq>"(?:[^"\\]|\\.)*")|(?P<esc>\\.?)"""
    r"""|(?P<bare>[^ \t\n|;&<>()'"`\\]+)|(?P<op>&&|\|\||[|;&<>()`])|(?P<open>['"])""",
    re.S,
)
_BAD_CHAR = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 and C1 controls but tab and newline
_IFS = re.compile(r"[ \t\n]+")  # what splits words and unquoted expansions, as bash's default IFS
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

    Words are separated by blanks and tabs only, as in bash: other Unicode spaces (``\\xa0``, ``\\u3000``)
    are word characters; control characters but tab and newline (C0 and C1) are a syntax error.

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


VAR = re.compile(r"\$(?:\{([^}]*)\}|([A-Za-z_][A-Za-z0-9_]*|\?))")  # $X, ${X}, $?
_BLANKS = (" ", "\t", "\n")


# ----------------------------------------------------------------------------------------------
# The shell
# ----------------------------------------------------------------------------------------------


class Shell:
    """One episode's shell: the tree, the working directory, the variables, and the network.

    ``network(shell, url) -> (lines, errors, status)`` answers ``curl``/``wget`` and sets ``shell.grader_hit``
    when a request reaches the grader. :meth:`run` returns the output lines with their taint; ``errors``
    counts the error messages printed and ``submitted`` holds the answer once ``submit`` ran (the
    environment reads and clears these per call). ``left`` is the work one call may still do (steps, see
    :data:`~.fs.WORK_LIMIT`): :meth:`charge` spends it, and a call that runs out stops with an error line.
    ``max_line_chars`` bounds the text ``sh -c`` runs (the environment sets its ``max_command_chars``).
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
        self.left = WORK_LIMIT
        self.max_line_chars = 2000
        self._vars_chars = 0  # the length of all names and values in vars (kept by assign)
        self._vars_seen = self.vars
        self._expanded = 0

    # -- running --------------------------------------------------------------------------------
    def charge(self, steps: int) -> None:
        """Spend ``steps`` of this call's work; a ShellError once it is spent."""
        self.left -= steps
        if self.left < 0:
            raise ShellError(
                f"this call ran out of its work budget ({WORK_LIMIT:,} steps); send smaller commands, one at a time"
            )

    def assign(self, name: str, value: str) -> None:
        """Set a shell variable; a ShellError if all names and values together would pass MAX_VARS_CHARS."""
        if self.vars is not self._vars_seen:  # vars were replaced from outside (a loaded state, a child shell)
            self._vars_seen = self.vars
            self._vars_chars = sum(len(k) + len(v) for k, v in self.vars.items())
        old = self.vars.get(name)
        total = self._vars_chars + len(value) - (len(old) if old is not None else -len(name))
        if total > MAX_VARS_CHARS:
            raise ShellError(f"{name}: variables would hold over {MAX_VARS_CHARS:,} characters; use shorter values")
        self.vars[name] = value
        self._vars_chars = total

    def run(self, line: str) -> tuple[Lines, int]:
        """Run a command line; return its output lines (stderr and stdout in order) and exit status."""
        if self.depth == 0:
            self.left = WORK_LIMIT
        try:
            seq = lex(line)
        except ShellError as e:
            self.status = 2
            self.errors += 1
            return [(f"bash: {e}", False)], 2
        out: Lines = []
        for op, pipeline in seq:
            if self.submitted is not None or self.left < 0:
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
                self.left -= 100  # charge(100), inlined: this runs for every command
                if self.left < 0:
                    self.charge(0)
                argv = self._expand_command(raw)
                self.left -= 48 * len(argv)  # each argument is parsed and resolved by the tool
                if self.left < 0:
                    self.charge(0)
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
                self.left -= 8 * len(lines)
                if self.left < 0:
                    self.charge(0)
            except ShellError as e:  # the work budget ran out
                lines, errs, status = [], [f"{name}: {e}"], 2
            except Exception as e:  # a safety net: a tool call never raises into the trainer
                lines, errs, status = [], [f"{name}: internal error ({type(e).__name__}); please report it"], 70
            out.extend(e if isinstance(e, tuple) else (e, False) for e in errs)  # (text, taint)
            self.errors += len(errs)
            if self.left < 0:
                return status
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
        while i < len(raw) and raw[i][0][0] == "bare" and (m := ASSIGN.match(raw[i][0][1])):
            first = raw[i][0][1][m.end() :]
            value = self.expand_word([("bare", first), *raw[i][1:]], split=False)[0]
            self.assign(m.group(1), value)
            i += 1
        argv: list[str] = []
        self._expanded = 0  # characters the expansions of this command produced (literal words are the line's)
        for word in raw[i:]:
            argv.extend(self.expand_word(word))
            if self._expanded > MAX_ARGV_CHARS:
                raise ShellError(f"argument list too long (more than {MAX_ARGV_CHARS:,} characters); use fewer words")
        return argv

    def expand_word(self, word, split: bool = True) -> list[str]:
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
        size = 0  # characters gathered so far, checked before each value is added
        for kind, text in word:
            size += len(text)
            if kind == "single":
                fields[-1].append(text)
                quoted_any = True
                continue
            pos = 0
            for m in VAR.finditer(text):
                lit = text[pos : m.start()]
                fields[-1].append(lit.replace("*", STAR).replace("?", QMARK) if kind == "bare" else lit)
                val = self._lookup(m.group(1) if m.group(1) is not None else m.group(2))
                size += len(val)
                if size > MAX_WORD_CHARS:
                    raise ShellError(f"expansion too long (more than {MAX_WORD_CHARS:,} characters in one word)")
                if kind == "bare" and split:
                    pieces = val.split() if val.isascii() else [p for p in _IFS.split(val) if p]
                    if len(pieces) > 1:
                        self.charge(100 * len(pieces))  # each becomes a field: a list, a string, GC work
                    if val[:1] in _BLANKS and fields[-1]:
                        fields.append([])
                    for k, p in enumerate(pieces):
                        if k:
                            fields.append([])
                        fields[-1].append(p.replace("*", STAR).replace("?", QMARK))
                    if val[-1:] in _BLANKS and pieces:
                        fields.append([])
                else:
                    fields[-1].append(val)
                pos = m.end()
            lit = text[pos:]
            fields[-1].append(lit.replace("*", STAR).replace("?", QMARK) if kind == "bare" else lit)
            quoted_any = quoted_any or kind == "double"
        self._expanded += size
        self.left -= size  # charge(size), inlined
        if self.left < 0:
            self.charge(0)
        out = []
        for f in fields:
            s = "".join(f)
            if DOLLAR in s:
                s = s.replace(DOLLAR, "$")
            if not s and not quoted_any:
                continue
            if STAR in s or QMARK in s:
                matches = glob(self.fs, self.cwd, s, self.charge)
                if matches:
                    self._expanded += sum(map(len, matches)) + len(matches)
                    out.extend(matches)
                    continue
                s = s.replace(STAR, "*").replace(QMARK, "?")
            out.append(s)
        if not split and not out:
            out = [""]
        return out

    def path(self, arg: str) -> str:
        return normpath(self.cwd, arg)


def first_word(line: str) -> str:
    """The first command word as typed, assignments skipped: ``X=1; cat $X`` -> ``cat``, ``$C x`` -> ``$C``.

    Read from the parse when the line parses (quotes removed; "" for assignments only), else the first
    blank-separated word."""
    try:
        for _, pipeline in lex(line):
            for command in pipeline:
                for word in command:
                    if not (word[0][0] == "bare" and ASSIGN.match(word[0][1])):
                        return "".join(text for _, text in word).replace(DOLLAR, "$")
        return ""  # assignments only
    except ShellError:
        words = line.split()
        return words[0] if words else ""
