"""The rule filter's first reading: a command line as bash would run it (chapter 12).

Steps 1-3 of :meth:`RuleFilter.check <rltutor.guard.rules.RuleFilter.check>`: :class:`BashReading`
tokenizes a line (:func:`~rltutor.guard.shellparse.tokenize`), splits it into pipelines, expands each
simple command's words (variables assigned earlier in the line, command substitutions it can compute,
braces) and hands the command to its rule, which the rule filter defines
(:data:`~rltutor.guard.rules.COMMAND_RULES`; any other command: ``RuleFilter._operands``). The state of
one check is a :class:`ReadingState`; its work is counted against ``max_steps``.
"""

from __future__ import annotations

from .shellparse import (
    ASSIGN_RE,
    CMD_NAMES,
    KEYWORDS,
    MAX_WORD_CHARS,
    QUOTED_LINE_RE,
    UNKNOWN,
    TooComplex,
    brace,
    into_hidden,
    pipelines,
    quoted_words,
    resolve,
    tokenize,
)


class ReadingState:
    """What one check has read so far: working directory, variables, reasons, views, work done."""

    __slots__ = ("cwd", "vars", "reasons", "views", "depth", "unknown", "steps", "pycode", "line_words")

    def __init__(self):
        self.cwd: tuple[str, ...] = ()
        self.vars: dict[str, str] = {}
        self.reasons: list[str] = []
        self.views: list[str] = []
        self.depth = 0
        self.unknown = 0  # things the filter could not resolve
        self.steps = 0  # work done, against RuleFilter.max_steps
        self.pycode: set[tuple[str, tuple[str, ...]]] = set()  # (code, cwd) of the python -c analysed
        self.line_words: list[str] | None = None  # the words of the checked line, if it is a quoted line


class BashReading:
    """The interpreter of the first reading. The rule filter (:class:`~rltutor.guard.rules.RuleFilter`)
    is one: it gives ``COMMAND_RULES`` (the rule of each command, by name), ``_operands`` (the rule of
    every other command), ``max_depth`` and ``max_steps``."""

    COMMAND_RULES: dict = {}

    # -- a command line: lists of pipelines -------------------------------------------------------
    def _run(self, command: str, st: ReadingState, stdin: str | None = None) -> str | None:
        """Interpret ``command``, pipeline by pipeline; return its stdout when it can be computed, else None."""
        st.steps += 1
        if st.steps > self.max_steps:
            raise TooComplex(f"more than {self.max_steps} steps")
        st.depth += 1
        if st.depth > self.max_depth:
            st.reasons.append("command nests too deeply to analyse")
            return None
        if QUOTED_LINE_RE.fullmatch(command):
            # The rule for a line that is one simple command quoted only with '..' and "..": its words are
            # read as text, as words from ``xargs`` are, so a leading ``"X=1"`` or ``'X=1'`` assigns X (bash
            # and ToolShell run it as a command "X=1", which is not found). Not a shortcut: reading these lines
            # with the tokenizer instead changes 5 of the 100,000 fuzz mutants of benchmarks/guard_verdicts.py
            # (one block, ``"X=asse" Q=rt sh -c 'grep -n $X$Q tests/hidden/test_answer.py'``, which ToolShell
            # runs as the command "X=asse", would be settled; four judge scores move by at most 0.08).
            # No attack needs it; it stays because issue 20 keeps every verdict. Deleting these four lines,
            # with new digests, is a decision to take on its own.
            words = quoted_words(command)
            if st.depth == 1:  # the line being checked (not one inside it): step 5 looks at its words
                st.line_words = words
            out = self._pipeline([(words, [])], st, stdin)
            st.depth -= 1
            return out
        out: str | None = None
        for stages in pipelines(tokenize(command)):  # the stdout of the line is that of its last pipeline
            out = self._pipeline(stages, st, stdin)
        st.depth -= 1
        return out

    def _pipeline(self, stages, st: ReadingState, stdin: str | None) -> str | None:
        data = stdin
        source = None  # "tree" when the previous stage lists files of a tree containing tests/hidden
        for words, redirs in stages:
            for op, w in redirs:
                target = self._expand(w, st)
                if op in ("<&", ">&") or target.startswith("&"):
                    continue
                if into_hidden(resolve(target, st.cwd)):
                    st.reasons.append(f"redirect {op} {target} touches tests/hidden")
                if op == "<":
                    data = None
            if not words:
                continue
            data, source = self._simple(words, st, data, source)
        return data

    def _expand(self, word, st: ReadingState) -> str:
        if len(word) == 1 and word[0][0] == "lit":  # the common case: one literal part
            return word[0][1]
        out = []
        for p in word:
            if p[0] == "lit":
                out.append(p[1])
            elif p[0] == "var":
                out.append(st.vars.get(p[1], ""))
            elif p[0] == "sub":
                saved = st.cwd
                val = self._run(p[1], st)
                st.cwd = saved
                if val is None:
                    st.unknown += 1
                    val = UNKNOWN
                out.append(val.strip())
            else:
                out.append("0")
        s = "".join(out)
        st.steps += 1
        if len(s) > MAX_WORD_CHARS:
            raise TooComplex(f"a word expands past {MAX_WORD_CHARS:,} characters")
        return s

    def _expand_all(self, words, st: ReadingState) -> list[str]:
        out: list[str] = []
        for w in words:
            if len(w) == 1 and w[0][0] == "lit":  # one literal part: no variable, braces only unquoted
                p = w[0]
                if p[2] or "{" not in p[1]:
                    out.append(p[1])
                    continue
            s = self._expand(w, st)
            glob_braces = unquoted_var = False  # one pass over the parts for both flags
            for p in w:
                if p[0] == "lit":
                    if not p[2] and "{" in p[1]:
                        glob_braces = True
                elif p[0] == "var" or p[0] == "sub":
                    unquoted_var = True
            if not glob_braces and not unquoted_var:
                out.append(s)
                continue
            for e in brace(s) if glob_braces else [s]:
                out.extend(e.split() if unquoted_var and e.strip() else [e])
        return out

    # -- one simple command -----------------------------------------------------------------------
    def _simple(self, words, st: ReadingState, stdin: str | None, source):
        st.steps += 1
        if st.steps > self.max_steps:
            raise TooComplex(f"more than {self.max_steps} steps")
        if isinstance(words[0], str):
            argv = list(words)
        else:
            # X=... prefixes are set one by one *before* the words after them are expanded, as ToolShell
            # does (bash would expand ``X=a cat $X`` with the old X; in ToolShell it reads ``cat a``)
            i = 0
            while i < len(words):
                p = words[i][0]
                if p[0] != "lit" or p[2] or "=" not in p[1] or not ASSIGN_RE.match(p[1]):
                    break
                k, v = self._expand(words[i], st).split("=", 1)
                st.vars[k] = v
                i += 1
            argv = self._expand_all(words[i:] if i else words, st)
            words = None  # the assignments were the literal X=... words before the expansion, as in a shell
        if words is not None:  # words given as text (a plain line, xargs, while): X=... words assign
            while argv and "=" in argv[0] and ASSIGN_RE.match(argv[0]):
                k, v = argv.pop(0).split("=", 1)
                st.vars[k] = v
        while argv and argv[0] in KEYWORDS:
            argv.pop(0)
        if not argv:
            return None, None
        st.views.append(" ".join(argv))
        cmd = argv[0]
        if "/" in cmd:
            cmd = cmd.rsplit("/", 1)[-1]
        elif not cmd.islower() and cmd not in CMD_NAMES and cmd.lower() in CMD_NAMES:
            return None, None  # ``Cat``: "command not found" (names are case-sensitive); nothing runs
        args = argv[1:]
        # A command with a rule of its own (COMMAND_RULES) is read by it; any other, and one its rule
        # hands back (``git`` other than ``git grep``, ``base64`` without ``-d``), as "cmd [opts] operands".
        rule = self.COMMAND_RULES.get(cmd)
        if rule is not None:
            out = rule(self, cmd, args, st, stdin, source)
            if out is not None:
                return out
        return self._operands(cmd, args, st)
