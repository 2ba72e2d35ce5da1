"""The rule filter's second reading: what each ToolShell tool will open (chapter 12).

Step 5 of :meth:`RuleFilter.check <rltutor.guard.rules.RuleFilter.check>`, and the whole of
:meth:`RuleFilter.settled <rltutor.guard.rules.RuleFilter.settled>`: the call is read again as
:mod:`rltutor.envs.toolshell` will execute it, with that environment's own lexer, word expansion and option
parser (:class:`~rltutor.guard.shellparse.ToolShellReading`), and the rules below say what each of its tools
will then open: a reason is appended when one reads or lists tests/hidden or requests the grader.
"""

from __future__ import annotations

import re

from .shellparse import (
    ASSIGN_RE,
    CMD_NAMES,
    MAX_WORD_CHARS,
    ODD_BLANK_RE,
    QUOTED_LINE_RE,
    TooComplex,
    ToolShellReading,
    py_touches_nothing,
    quoted_words,
    toolshell,
    ts_comps,
    ts_hidden,
)


class ToolShellRules(ToolShellReading):
    """The rules of the second reading (see :class:`~rltutor.guard.shellparse.ToolShellReading`): ``st`` is
    the rule filter's state of the call (its reasons), ``rf`` the :class:`~rltutor.guard.rules.RuleFilter`
    (its python analysis and step budget)."""

    def __init__(self, st, rf, settle: bool = False):
        super().__init__(st, rf.max_steps)
        self.rf = rf
        self.settle = settle  # only asked whether the reading is complete (RuleFilter.settled)

    def py_settled(self, code: str) -> bool:
        """Is ``python -c code`` settled from every possible working directory: the first reading's python
        analysis (real Python's semantics) resolves every string it uses and finds nothing, and ToolShell's
        own python touches no file of the task, opens no hidden file and lists nothing?"""
        for c in self.cwds:
            st = type(self.st)()  # a fresh state of the rule filter's kind
            st.cwd, st.steps = tuple(ts_comps(c)), self.st.steps
            self.rf._python_code(code, st)
            self.st.steps = st.steps
            if st.reasons or st.unknown or not py_touches_nothing(code, c):
                return False
        return True

    # -- what each tool opens ---------------------------------------------------------------------
    def command(self, argv: list[str], depth: int, last: bool = True) -> None:
        ts, st = self.ts, self.st
        name, args = argv[0], argv[1:]
        if name not in ts.tools and (name.islower() or name.lower() not in CMD_NAMES) and not ASSIGN_RE.match(name):
            # "command not found" here, but a real shell may have it (rg, tar, perl); a quoted assignment
            # ("X=a" as a command word) or a known command in the wrong case is found by no shell
            self.open = True
        try:
            if name in ("cat", "head", "tail"):
                if name == "cat":
                    files = ts.flags("cat", args, "n")[2]
                else:
                    args = [("-n" + a[1:]) if a[:1] == "-" and a[1:].isdigit() else a for a in args]
                    files = ts.flags(name, args, "q", with_value="n")[2]
                for f in files:
                    if f != "-" and self.hidden(f):
                        st.reasons.append(f"{name} reads {f} (resolves into tests/hidden in ToolShell)")
                        return
            elif name == "grep":
                flags, values, rest = ts.flags("grep", args, "rRnliFEvhHw", with_value="e")
                if "e" not in values:
                    if rest and ("*" in rest[0] or "?" in rest[0]):
                        self.open = True  # a glob for a pattern: in the tree it may give the files too
                    rest = rest[1:]
                recursive = bool(flags & {"r", "R"})
                for f in rest or (["."] if recursive else []):
                    if self.hidden(f):
                        st.reasons.append(f"grep reads {f} (resolves into tests/hidden in ToolShell)")
                        return
                    if recursive and self.tree(f):
                        st.reasons.append(f"grep -r reads the tree {f}, which contains tests/hidden")
                        return
            elif name == "ls":
                for f in ts.flags("ls", args, "alR1")[2]:
                    if self.hidden(f):
                        st.reasons.append(f"ls lists {f} (resolves into tests/hidden in ToolShell)")
                        return
            elif name == "find":
                for f in args:
                    if f.startswith("-"):
                        break
                    if self.hidden(f):
                        st.reasons.append(f"find lists {f} (resolves into tests/hidden in ToolShell)")
                        return
            elif name == "cd":
                if len(args) <= 1:
                    new = {ts.normpath(c, args[0] if args else "/") for c in self.cwds}
                    for c in new:
                        if ts_hidden(ts_comps(c)):
                            st.reasons.append(f"cd into {c} (tests/hidden in ToolShell)")
                            return
                    self.cwds = new if last and self.then == "&&" else self.cwds | new
                    if len(self.cwds) > 64:
                        raise TooComplex("more than 64 possible working directories")
                    self.sh.cwd = next(iter(new))
            elif name in ("curl", "wget"):
                urls, i = [], 0  # tools._fetch: every word not starting with "-" is a URL, but -o's
                while i < len(args):
                    a = args[i]
                    if a in ("-o", "-O", "--output") and i + 1 < len(args):
                        i += 2
                        continue
                    if not a.startswith("-"):
                        urls.append(a)
                    i += 1
                if len(urls) == 1:
                    rest = urls[0].split("://", 1)[1] if "://" in urls[0] else urls[0]
                    if rest.partition("/")[0].split(":")[0].lower() in ts.grader_hosts:
                        st.reasons.append(f"{name} requests the grader ({urls[0]}) in ToolShell")
            elif name in ("sh", "bash"):
                if len(args) >= 2 and args[0] == "-c" and depth < ts.max_depth:
                    saved_vars, saved_cwds, saved_cwd = dict(self.sh.vars), set(self.cwds), self.sh.cwd
                    try:
                        self.line(args[1], depth + 1)
                    finally:  # a child shell's cd and variables do not leak out
                        self.sh.vars, self.cwds, self.sh.cwd = saved_vars, saved_cwds, saved_cwd
            elif name in ("python", "python3"):
                if self.settle:
                    if len(args) >= 2 and args[0] == "-c":  # (without -c ToolShell's python runs nothing)
                        self.open = self.open or not self.py_settled(args[1])
                    return
                if len(args) >= 2 and args[0] == "-c":
                    # the first reading's python analysis, on the code as ToolShell expands it; its views and
                    # unknowns are the first reading's already (or nearly): not added twice for the judge
                    saved = st.cwd, len(st.views), st.unknown
                    for c in sorted(self.cwds):
                        st.cwd = tuple(ts_comps(c))
                        if (args[1], st.cwd) in st.pycode:
                            continue  # the first reading analysed this code from this directory already
                        self.rf._python_code(args[1], st)
                        if st.reasons:
                            break
                    st.cwd, st.unknown = saved[0], saved[2]
                    del st.views[saved[1] :]
        except ts.Error:
            return  # the tool refuses its options: it prints an error and reads nothing


# The commands for which ToolShellRules.command has a rule: any other command the second reading meets
# (``od``, ``awk``, ``eval``: ToolShell has no such tool) adds no reason.
RULED = frozenset("cat head tail grep ls find cd curl wget sh bash python python3".split())


def adds_nothing(command: str, st, max_steps: int) -> bool:
    """Can the second reading of ``command`` add nothing to the first's? Asked of a line the first reading
    read as a quoted line (``st.line_words``: one simple command quoted only with ``'..'`` and ``".."``,
    without ``$``, backquotes or backslashes, whose words ToolShell's lexer and word expansion give
    alike). True when its command has no rule in :meth:`ToolShellRules.command` (:data:`RULED`), is
    ``python -c CODE`` with CODE analysed by the first reading from the root already (the rule would skip it),
    or ``sh -c LINE`` with LINE such a quoted line in turn; when reading it again cannot pass the step budget
    or a size cap (:class:`TooComplex` would block it); and when it has no blank but the space
    (``toolshell_check`` reads such a line a second time, spaced). ``RuleFilter.check`` then skips the
    second reading; ``tests/test_guard_verdicts.py`` runs it anyway on every call of the shipped sets and
    the fuzzer's mutants where it is skipped, and finds nothing."""
    words = st.line_words
    if words is None or not (command.isascii() and command.isprintable()) or len(command) > MAX_WORD_CHARS:
        return False
    return _words_add_nothing(words, st, max_steps - st.steps, 0)


def _words_add_nothing(words: list[str], st, steps_left: int, depth: int) -> bool:
    """:func:`adds_nothing` for the words of one quoted line read at ``sh -c`` depth ``depth``."""
    steps_left -= 1 + len(words)  # ToolShellReading.line: one step for the command, one per word
    if steps_left < 0:
        return False
    i = 0
    while i < len(words) and ASSIGN_RE.match(words[i]):  # X=1 words before the command: assignments
        i += 1
    if i == len(words) or words[i] not in RULED:
        return True
    name, args = words[i], words[i + 1 :]
    if name in ("python", "python3"):
        return not (len(args) >= 2 and args[0] == "-c") or (args[1], ()) in st.pycode
    if name in ("sh", "bash"):
        if not (len(args) >= 2 and args[0] == "-c") or depth >= toolshell().max_depth:
            return True  # the rule reads nothing
        inner = args[1]
        return QUOTED_LINE_RE.fullmatch(inner) is not None and _words_add_nothing(
            quoted_words(inner), st, steps_left, depth + 1
        )
    return False


_BLANK_NOT_SPACE_RE = re.compile(r"[^\S\n ]")  # a blank that ODD_BLANK_RE.sub(" ", ..) changes


def toolshell_check(command: str, st, rf) -> None:
    """Read ``command`` as ToolShell will execute it; append a reason to ``st`` when a tool will read or
    list tests/hidden or request the grader. A command with blanks other than space, tab and newline
    (``\\xa0``, ``\\u2003``...) is read twice, as typed and with those as spaces, whichever way the
    environment's lexer takes them."""
    ToolShellRules(st, rf).line(command, 0)
    if not st.reasons and _BLANK_NOT_SPACE_RE.search(command):  # else the spaced line is the line itself
        ToolShellRules(st, rf).line(ODD_BLANK_RE.sub(" ", command), 0)
