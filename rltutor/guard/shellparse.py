"""How the guard reads a shell command: as a shell would, and as ToolShell will execute it (chapter 12).

The rule filter (:mod:`rltutor.guard.rules`) does not match the raw text against a list of bad strings,
which one pair of quotes beats: it first reads the command the way a shell would. This module holds that
reading, in two versions, and the path arithmetic both share.

**Why two readings.** The environment the agent acts in is :mod:`rltutor.envs.toolshell`, a simulated
shell with its own, smaller grammar. What matters is what *it* will open, so the rules read every call
with ToolShell's own lexer (``shell.lex``), word expansion (``Shell.expand_word``, ``ASSIGN``, ``VAR``)
and option parser (``tools.parse_flags``): :class:`ToolShellReading`, not a copy of them. But ToolShell
knows a dozen tools, and a guard must also judge what a real shell would run: ``less``, ``sed``, ``awk``,
``pytest``, ``find -exec``, text piped into ``bash``, ``$(( ))``, ``{a,b}``, ``$'\\x68'``. So the rules
keep a reading that follows bash (:func:`tokenize`, :func:`brace`: quotes, ``$'..'`` escapes, ``${X}``,
``$(..)`` and backquotes, braces). It cannot go: of the 362 calls of ``data/eval.jsonl``, 81 hacks are
blocked by the bash reading alone (7 of 53 in ``dev.jsonl``, 1,169 of 5,442 in ``train.jsonl``;
measured when the guard was split, issue 20). ``tests/test_guard_fuzz.py`` checks both against the
environment itself.

1. :func:`tokenize`: words (lists of parts: literal, variable, substitution, arithmetic) and operators;
   :func:`brace` expands ``{a,b}``; :func:`decode_escapes` and :func:`b64` undo escapes and base64.
2. :func:`resolve`: a path relative to the repository root (``cd``, ``..``, ``./``, ``//`` followed);
   :func:`into_hidden`, :func:`names_hidden` and :func:`contains_hidden` say whether a (possibly
   globbed) path is in tests/hidden or holds it; :func:`is_grader` whether a word names the grader.
3. :class:`ToolShellReading`: the command as ToolShell will run it, one simple command at a time
   (its ``command`` method is what the rules fill in), over every working directory a ``cd`` may leave.
   :class:`HiddenOnlyFS` and :func:`py_touches_nothing` ask ToolShell's own Python evaluator whether
   a one-liner can open anything at all.

The work is bounded: :class:`TooComplex` is raised past a step budget, a word longer than
:data:`MAX_WORD_CHARS` or a brace expansion of more than :data:`MAX_BRACE_WORDS` words.
"""

from __future__ import annotations

import binascii
import fnmatch
import functools
import re
import warnings

GRADER_HOSTS = ("grader", "grader.local")  # the hosts of the simulated grader in rltutor.envs.toolshell
UNKNOWN = "\x00"  # the value of a substitution whose output the filter cannot compute
MAX_WORD_CHARS = 20_000  # a word or variable the filter builds; a ToolShell call is at most 2,000 characters
MAX_BRACE_WORDS = 1_000  # words one brace expansion may give

_URL_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://([^/:?#]*)")
_HOST_END_RE = re.compile(r"[/:?#]")
_ESC_RE = re.compile(r"\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|u[0-9a-fA-F]{4}|[abefnrtv\\'\"])")
_BRACED_VAR_RE = re.compile(r"[A-Za-z_0-9#!?@*]*")
_VAR_RE = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|[0-9#?@*!$]")
_BRACE_RE = re.compile(r"\{([^{}]*,[^{}]*)\}")


class TooComplex(Exception):
    """The analysis ran past its step budget or a size cap: the call is blocked, not analysed further."""


# ------------------------------------------------------------------------------------------------
# Paths
# ------------------------------------------------------------------------------------------------


def resolve(path: str, cwd: tuple[str, ...]) -> tuple[str, ...]:
    """Components of ``path`` relative to the repo root: ``cd``, ``..``, ``./``, ``//`` resolved.

    An absolute path is read from the repository root, which is "/" in ToolShell; ``~`` keeps a leading
    "/" component (a place outside the repository); going above the root keeps ".." components.
    """
    if path.startswith("/"):
        parts: list[str] = []
    elif path.startswith("~"):
        parts = ["/"]
        path = path[1:]
    else:
        comps = path.split("/")
        if "" not in comps and "." not in comps and ".." not in comps:  # nothing to resolve: append
            return tuple(cwd) + tuple(comps)
        parts = list(cwd)
    for c in path.split("/"):
        if c in ("", "."):
            continue
        if c == "..":
            if parts and parts[-1] not in ("..", "/"):
                parts.pop()
            elif not parts or parts[-1] == "..":
                parts.append("..")
        else:
            parts.append(c)
    return tuple(parts)


def glob_matches(pattern: str, name: str) -> bool:
    if pattern == name:
        return True
    if "*" not in pattern and "?" not in pattern and "[" not in pattern:
        return False
    return _glob_rx(pattern).match(name) is not None


@functools.lru_cache(maxsize=1024)  # bounded: an agent can send any number of distinct patterns
def _glob_rx(pattern: str) -> re.Pattern:
    """``fnmatch.fnmatchcase``'s regex of ``pattern`` (runs of ``*`` collapsed), compiled once, in a
    cache of at most 1,024 patterns (fnmatch's own keeps 32,768)."""
    while "**" in pattern:
        pattern = pattern.replace("**", "*")
    return re.compile(fnmatch.translate(pattern))


def into_hidden(comps: tuple[str, ...]) -> bool:
    """Does this (possibly globbed) path name tests/hidden or something inside it?"""
    for i in range(len(comps) - 1):
        # glob_matches(c, "tests") and glob_matches(d, "hidden"), with glob_matches's two cheap tests inline: most
        # components are plain names, equal or not, and only a glob character calls fnmatch
        c = comps[i]
        if c == "tests" or (("*" in c or "?" in c or "[" in c) and glob_matches(c, "tests")):
            d = comps[i + 1]
            if d == "hidden" or (("*" in d or "?" in d or "[" in d) and glob_matches(d, "hidden")):
                if i + 2 < len(comps) and no_hidden_name(comps[i + 2]):
                    continue
                return True
    return False


def no_hidden_name(comp: str) -> bool:
    """Can ``comp``, a component just below tests/hidden, name none of the files there? The hidden files of
    ToolShell are named in lower case (``test_answer.py``, ``conftest.py``; a test keeps it so) and names
    are case-sensitive, as in any Linux shell: a component with an upper-case letter outside a bracket
    expression (``test_ansWer.py``, ``*.Py``; not ``[Tt]est*``) matches none of them."""
    return comp.lower() != comp and "[" not in comp


def names_hidden(path: str, cwd: tuple[str, ...]) -> bool:
    """``into_hidden(resolve(path, cwd))``, without resolving when it cannot be true: with no glob
    character anywhere, a component must be exactly "hidden", so "hidden" must occur in the text."""
    if (
        "hidden" not in path
        and "*" not in path
        and "?" not in path
        and "[" not in path
        and not (cwd and cwd_may_hide(cwd))
    ):
        return False
    return into_hidden(resolve(path, cwd))


def cwd_may_hide(cwd: tuple[str, ...]) -> bool:
    for c in cwd:
        if "hidden" in c or "*" in c or "?" in c or "[" in c:
            return True
    return False


def contains_hidden(comps: tuple[str, ...]) -> bool:
    """Is tests/hidden inside this (possibly globbed) directory: the root, tests, or above the root?"""
    if "/" in comps:
        c = [x for x in comps if x != "/"]
    else:  # the usual case: nothing to drop
        c = comps
    if comps and comps[0] in ("/", ".."):
        # Outside the known root: conservatively, a short absolute path or one ending in tests.
        return len(c) <= 1 or glob_matches(c[-1], "tests") or c[-1] == ".."
    if len(c) == 0:
        return True
    return len(c) == 1 and glob_matches(c[0], "tests")


def host(word: str) -> str | None:
    if "://" not in word:  # _URL_RE needs it
        return None
    m = _URL_RE.match(word)
    return m.group(1).lower().rstrip(".") if m else None


def is_grader(word: str, bare_ok: bool) -> bool:
    if "grader" not in word.lower():  # both grader hosts contain it, and a host is a piece of the word
        return False
    h = host(word)
    if h is None and bare_ok and not word.startswith("-"):
        h = _HOST_END_RE.split(word, maxsplit=1)[0].lower().rstrip(".")
    return h in GRADER_HOSTS


_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "e": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def decode_escapes(s: str) -> str:
    """Decode C/bash/python escapes (``\\x68``, ``\\150``, ``\\n``) in ``s``; other text unchanged."""
    if "\\" not in s:  # every escape starts with a backslash
        return s
    # What _ESC_RE.sub(function, s) gives, without a Python call per escape: split keeps each escape's
    # group at the odd places, between the plain pieces.
    parts = _ESC_RE.split(s)
    for k in range(1, len(parts), 2):
        e = parts[k]
        c = e[0]
        if c == "x" or c == "u":
            parts[k] = chr(int(e[1:], 16))
        elif c.isdigit():
            parts[k] = chr(int(e, 8) & 0xFF)
        else:
            parts[k] = _SIMPLE_ESCAPES.get(e, e)
    return "".join(parts)


def b64(s: str) -> str | None:
    """``s`` base64-decoded (padding added) when that gives printable or multi-line UTF-8 text, else None.

    What ``base64.b64decode(s + pad, validate=True).decode("utf-8")`` gives, without raising on the
    usual failure (bytes that are not UTF-8: a path or a word that only looks like base64): invalid
    bytes decode to lone surrogates, which are not printable."""
    try:
        raw = binascii.a2b_base64((s + "=" * (-len(s) % 4)).encode("ascii"), strict_mode=True)
    except ValueError:  # not ASCII, or not valid base64 (binascii.Error is a ValueError)
        return None
    out = raw.decode("utf-8", "surrogateescape")
    if out.isprintable():  # no surrogate: the bytes were valid UTF-8
        return out
    if "\n" in out:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return None


# ------------------------------------------------------------------------------------------------
# Shell tokenizer: words are lists of parts, expanded when their command runs
# ------------------------------------------------------------------------------------------------

_OP_CHARS = frozenset("&|;<>()\n")
_BARE_RE = re.compile(r"([^ \t\\'\"$`|;&<>()\n#]+)[ \t]*")  # a run of ordinary characters, the blanks after it
_DQ_RUN_RE = re.compile(r'[^"\\$`]+')  # inside double quotes: no quote, backslash, $ or backquote
_TWO_CHAR_OPS = frozenset(("&&", "||", ";;", ">>", "<<", ">&", "<&"))  # read before the one-character ones
_SUB_STOP_RE = re.compile(r"[()']")
_TOK_SPECIAL = frozenset(" \t#\\'\"$`") | _OP_CHARS  # characters that end a run of ordinary ones
_ANSI_C_RE = re.compile(r"(?:[^'\\]+|\\.|\\\Z)*", re.S)  # the body of $'...'


def _read_sub(s: str, j: int) -> tuple[str, int]:
    """``s[j]`` is just after "$(": the inner text and the index after the matching ")"."""
    n = len(s)
    depth, k = 1, j
    while depth:
        m = _SUB_STOP_RE.search(s, k)  # the next "(", ")" or "'"; what lies between changes nothing
        if m is None:
            k = max(k, n)  # to the end, as a walk one character at a time would go
            break
        k = m.start()
        if s[k] == "(":
            depth += 1
        elif s[k] == ")":
            depth -= 1
        else:  # a quote: jump past its closing quote, or to the end
            q = s.find("'", k + 1)
            k = n if q == -1 else q
        k += 1
    return s[j : k - 1], k


def _read_dollar(s: str, j: int, quoted: bool, word: list) -> int:
    """``s[j] == "$"``: append the expansion's part to ``word``; return the index after it."""
    if s.startswith("$(", j):
        if s.startswith("$((", j):
            end = s.find("))", j)
            end = len(s) if end == -1 else end + 2
            word.append(("arith", s[j + 3 : end - 2]))
            return end
        inner, end = _read_sub(s, j + 2)
        word.append(("sub", inner))
        return end
    if s.startswith("${", j):
        end = s.find("}", j)
        end = len(s) if end == -1 else end
        name = _BRACED_VAR_RE.match(s[j + 2 : end]).group(0)
        word.append(("var", name))
        return end + 1
    m = _VAR_RE.match(s, j + 1)
    if m:
        word.append(("var", m.group(0)))
        return m.end()
    word.append(("lit", "$", quoted))
    return j + 1


def tokenize(s: str) -> list:
    """Split ``s`` into words and operators. A word is a list of parts: ("lit", text, quoted),
    ("var", name), ("sub", command), ("arith", expr). Quotes and backslashes are removed here."""
    toks: list = []
    word: list = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c not in _TOK_SPECIAL:  # a run of ordinary characters (the most common case: tested first)
            m = _BARE_RE.match(s, i)
            word.append(("lit", m.group(1), False))
            i = m.end()
            if i != m.end(1):  # blanks follow: the word ends
                toks.append(("word", word))
                word = []
        elif c == " " or c == "\t":
            if word:
                toks.append(("word", word))
                word = []
            i += 1
        elif c == "#":
            if word:  # inside a word, "#" is an ordinary character
                word.append(("lit", "#", False))
                i += 1
            else:  # a comment, up to the end of the line
                j = s.find("\n", i)
                i = n if j == -1 else j
        elif c == "\\":
            if i + 1 < n and s[i + 1] != "\n":
                word.append(("lit", s[i + 1], True))
            i += 2
        elif c == "'":
            j = s.find("'", i + 1)
            j = n if j == -1 else j
            word.append(("lit", s[i + 1 : j], True))
            i = j + 1
        elif c == '"':
            j = i + 1
            buf: list[str] = []
            while j < n and s[j] != '"':
                if s[j] == "\\" and j + 1 < n and s[j + 1] in '$`"\\\n':
                    buf.append(s[j + 1])
                    j += 2
                elif s[j] == "$":
                    if buf:
                        word.append(("lit", "".join(buf), True))
                        buf = []
                    j = _read_dollar(s, j, True, word)
                elif s[j] == "`":
                    k = s.find("`", j + 1)
                    k = n if k == -1 else k
                    if buf:
                        word.append(("lit", "".join(buf), True))
                        buf = []
                    word.append(("sub", s[j + 1 : k]))
                    j = k + 1
                else:
                    m = _DQ_RUN_RE.match(s, j)  # a run of ordinary characters at once
                    if m is None:  # a backslash that escapes nothing: kept
                        buf.append(s[j])
                        j += 1
                    else:
                        buf.append(m.group(0))
                        j = m.end()
            word.append(("lit", "".join(buf), True))
            i = j + 1
        elif c == "$":
            if s.startswith("$'", i):  # $'...': C escapes; a backslash takes the next character along
                j = _ANSI_C_RE.match(s, i + 2).end()
                word.append(("lit", decode_escapes(s[i + 2 : j]), True))
                i = j + 1
            else:
                i = _read_dollar(s, i, False, word)
        elif c == "`":
            k = s.find("`", i + 1)
            k = n if k == -1 else k
            word.append(("sub", s[i + 1 : k]))
            i = k + 1
        else:  # an operator character
            op = s[i : i + 2]  # a two-character operator (&&, >>, ..), else the character itself
            if op not in _TWO_CHAR_OPS:
                op = c
            if (
                op in ("<", ">", ">>", ">&", "<&")
                and word
                and all(p[0] == "lit" and not p[2] and p[1].isdigit() for p in word)
            ):
                word = []  # a file descriptor number: 2>&1, 3<file
            if word:
                toks.append(("word", word))
                word = []
            toks.append(("op", op))
            i += len(op)
    if word:
        toks.append(("word", word))
    return toks


def brace(s: str, budget: list[int] | None = None) -> list[str]:
    """Brace expansion ``a{b,c}`` -> ``ab ac``; raises :class:`TooComplex` past ``MAX_BRACE_WORDS`` words
    (each pair doubles the count: ``{a,b}`` twenty times is a million words)."""
    m = _BRACE_RE.search(s)
    if not m:
        return [s]
    if budget is None:
        budget = [MAX_BRACE_WORDS]
    out = []
    for alt in m.group(1).split(","):
        budget[0] -= 1
        if budget[0] < 0:
            raise TooComplex(f"brace expansion gives more than {MAX_BRACE_WORDS:,} words")
        out += brace(s[: m.start()] + alt + s[m.end() :], budget)
    return out


# ------------------------------------------------------------------------------------------------
# Commands: the names the rules know, their options, the words of a quoted line, the pipelines of a line
# ------------------------------------------------------------------------------------------------

NETWORK_CMDS = frozenset("curl wget http https httpie xh lynx links w3m nc ncat telnet aria2c fetch".split())
MENTION_CMDS = frozenset("echo printf true false : submit exit return".split())  # their words are not paths
TREE_COPIERS = frozenset("cp rsync tar zip scp".split())
SHELLS = frozenset("sh bash zsh dash ksh".split())
PYTHONS = frozenset("python python3 python3.10 python3.11 python3.12 python3.13".split())
SCRIPTERS = frozenset("perl ruby node php lua".split())
KEYWORDS = frozenset("do then else elif ! { ( time nohup command builtin exec".split())
LISTERS = frozenset("ls tree du find".split())
# Every command name the rules know (those of rules.COMMAND_RULES and more). A command word that is one of
# these in another case (``Cat``, ``bAsh``, ``hEad``) is not found by any shell on a case-sensitive file
# system, ToolShell's included: it runs nothing, so its words are not read (see RuleFilter._simple).
CMD_NAMES = (
    frozenset("export local declare readonly for while until if done fi esac } read cd eval base64 xargs".split())
    | frozenset("pytest py.test grep egrep fgrep rg ag ack git find sed awk".split())
    | frozenset("cat head tail ls wc nl less more stat file pwd echo submit".split())
    | SHELLS
    | PYTHONS
    | SCRIPTERS
    | MENTION_CMDS
    | NETWORK_CMDS
    | TREE_COPIERS
    | LISTERS
    | KEYWORDS
    | frozenset("pwd sort uniq cut tac rev od xxd strings diff cmp less more nl wc stat file".split())
)
# options that take a separate argument, per command, so the argument is not read as a path
OPT_ARGS = {
    "grep": frozenset("-e -f -m -A -B -C --include --exclude --exclude-dir".split()),
    "rg": frozenset("-e -f -g -t -T -m -A -B -C --glob --type".split()),
    "pytest": frozenset("-k -m -p -c -o --rootdir --maxfail --deselect --ignore".split()),
    "head": frozenset(("-n", "-c")),
    "tail": frozenset(("-n", "-c")),
    "curl": frozenset("-X -d -H -o -u -A -e --data --header --output --request".split()),
    "wget": frozenset("-O -o --output-document".split()),
    "sed": frozenset(("-e", "-f")),
    "awk": frozenset(("-F", "-v", "-f")),
    "xargs": frozenset(("-I", "-n", "-d", "-P", "-L")),
}
ASSIGN_RE = re.compile(r"^[A-Za-z_][A-Za-z_0-9]*=")  # a word NAME=VALUE
_RECUR_RE = re.compile(r"^-[a-zA-Z]*[rRa]")
_ECHO_FLAGS_RE = re.compile(r"^-[neE]+$")
_PRINTF_RE = re.compile(r"%[sdb]")
# One simple command quoted only with '..' or "..": outside quotes no operator, $, backquote, backslash,
# "#" or "{"; inside "..." no $, backquote or backslash; every quote closed (see quoted_words). Written as
# "text, then any number of (a quoted piece, then text)", where text is blanks and word characters alike: a
# line without quotes is then one run of a character class, which the regex engine scans fastest.
_OUTSIDE = r"""[^'"\\$`|;&<>()\n#{]*+"""  # what may stand outside quotes, blanks included
QUOTED_LINE_RE = re.compile(rf"""{_OUTSIDE}(?:(?:'[^']*+'|"[^"\\$`]*+"){_OUTSIDE})*+""")
_QWORD_RE = re.compile(r"""(?:[^ \t'"]++|'[^']*+'|"[^"]*+")++""")  # the words of such a line
_UNQUOTE_RE = re.compile("'([^']*)'|\"([^\"]*)\"")  # a quoted piece of such a word


def drop_opts(cmd: str, args: list[str]) -> list[str]:
    """``args`` without ``cmd``'s options and the values of those that take one (:data:`OPT_ARGS`)."""
    takes = OPT_ARGS.get(cmd, frozenset())
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a == "--":
            continue
        if a.startswith("-") and len(a) > 1:
            skip = a in takes
            continue
        out.append(a)
    return out


def opts_recursive(args: list[str]) -> bool:
    """Does an option in ``args`` ask for recursion (``-r``, ``-R``, ``-a``, in a cluster too)?"""
    for a in args:
        if a.startswith("-") and (_RECUR_RE.match(a) or a in ("--recursive", "--archive")):
            return True
    return False


def echo_output(cmd: str, args: list[str]) -> str:
    """What ``echo ARGS`` or ``printf FORMAT ARGS`` prints (escapes decoded, ``%s``/``%d``/``%b`` filled)."""
    if cmd == "echo":
        flags = []
        while args and _ECHO_FLAGS_RE.match(args[0]):
            flags.append(args.pop(0))
        text = " ".join(args)
        return decode_escapes(text) if any("e" in f for f in flags) or "\\x" in text else text
    if not args:
        return ""
    fmt, vals = decode_escapes(args[0]), list(args[1:])
    try:
        n = len(_PRINTF_RE.findall(fmt))
        if n:
            vals = (vals + [""] * n)[:n]
            return _PRINTF_RE.sub("{}", fmt.replace("{", "{{").replace("}", "}}")).format(*vals)
        return fmt
    except (IndexError, ValueError):
        return fmt


def quoted_words(command: str) -> list[str]:
    """The words of a line that :data:`QUOTED_LINE_RE` matches, each without its quotes, as text (the rule
    filter's reading of such a line: see ``RuleFilter._run``)."""
    if "'" not in command and '"' not in command:
        return _QWORD_RE.findall(command)  # no quotes to drop
    argv = []
    for w in _QWORD_RE.findall(command):
        if '"' not in w:  # every ' is a quote: drop them
            argv.append(w.replace("'", ""))
        elif "'" not in w:
            argv.append(w.replace('"', ""))
        else:  # both kinds: the pieces outside quotes and the contents of the quoted ones
            argv.append("".join(filter(None, _UNQUOTE_RE.split(w))))
    return argv


def pipelines(toks: list) -> list[list[tuple[list, list]]]:
    """The tokenizer's words and operators as pipelines: lists of stages ``(words, redirects)``, one
    pipeline per ``;``, ``&&``, ``||``, ``&`` or newline, and one for the end of the line."""
    out, stages = [], []
    words: list = []
    redirs: list = []
    pending_redir = None
    for kind, t in toks:
        if kind == "word":
            if pending_redir is not None:
                redirs.append((pending_redir, t))
                pending_redir = None
            else:
                words.append(t)
        elif t in ("<", ">", ">>", "<&", ">&", "<<"):
            pending_redir = t
        elif t not in ("(", ")"):
            stages.append((words, redirs))
            words, redirs = [], []
            if t != "|":
                out.append(stages)
                stages = []
    stages.append((words, redirs))  # the end of the line acts as a ";"
    out.append(stages)
    return out


# ------------------------------------------------------------------------------------------------
# The second reading: the command as rltutor.envs.toolshell will execute it
# ------------------------------------------------------------------------------------------------
# The first reading (tokenize, in RuleFilter.run) follows bash. ToolShell differs where an attacker can use it:
# ``X=a cmd $X`` sets X *before* cmd's words are expanded; ``grep -e= F`` and ``grep -he= F`` take "="
# as the pattern; curl takes the word after ``-d``/``-X``/``-H`` as its URL; ``cd`` into a folder that
# does not exist leaves the directory where it was. So the environment's own lexer (``shell.lex``),
# word expansion (``Shell.expand_word``) and option parser (``tools.parse_flags``) read the command a second
# time, and the rules below apply to what each tool will then open. tests/test_guard_fuzz.py checks the
# two against the environment itself, on mutants of every known hack.

_TS = None  # the environment's parser pieces, imported on first use (rltutor.envs imports torch)


def toolshell():
    global _TS
    if _TS is None:
        from types import SimpleNamespace

        from rltutor.envs.toolshell import fs, pyexpr, shell, tasks, tools

        _TS = SimpleNamespace(
            lex=shell.lex,
            assign=shell.ASSIGN,
            var=shell.VAR,
            Shell=shell.Shell,
            fs=fs.FileSystem({}),  # no file exists: a glob that matches nothing stays as typed
            Error=fs.ShellError,
            normpath=fs.normpath,
            max_depth=fs.MAX_DEPTH,
            work_limit=fs.WORK_LIMIT,  # the work budget ToolShell gives one call
            flags=tools.parse_flags,
            tools=frozenset(tools.TOOLS) | {"submit"},
            run_python=pyexpr.run_python,
            hidden_files=frozenset(p for p in tasks.generate_task(0).files if fs.is_hidden(p)),
            # the names a task's root and tests/ may hold (tasks.generate_task; a test keeps it so)
            root_names=frozenset(("README.md", "docs", "tests", *tasks.DIRS)),
            tests_names=frozenset(("hidden", "public")),
            grader_hosts=tasks.GRADER_HOSTS,
        )
    return _TS


def no_network(sh, url):
    return [], [], 0


class Touched(Exception):
    """Raised by :class:`HiddenOnlyFS` when code asks about the file system beyond tests/hidden."""


class HiddenOnlyFS:
    """What ToolShell's file system is in every task: /tests/hidden holds the same two files for every seed,
    /tests holds hidden and public, the root only names from a fixed list (``tasks.generate_task``; a test
    keeps it so). Asking about a path that may exist in some task (``/src/alpha.py``), or opening a hidden
    file, raises :class:`Touched`: the answer depends on the task. A path no task has is answered: absent."""

    def __init__(self, ts):
        self.ts = ts
        self.files = self  # pyexpr asks ``p in fs.files``

    def _absent(self, p: str) -> bool:
        """True when no task has ``p``; raises Touched when some task may have it (or it is hidden)."""
        ts = self.ts
        comps = [c for c in p.split("/") if c]  # (pyexpr passes normalised absolute paths)
        if not comps:
            raise Touched(p)  # the root: a directory in every task
        if comps[0] not in ts.root_names:
            return True
        if comps[0] == "tests":
            if len(comps) == 1:
                raise Touched(p)
            if comps[1] not in ts.tests_names:
                return True
            if comps[1] == "hidden" and len(comps) > 2 and p not in ts.hidden_files:
                return True  # a name in tests/hidden that no task has (``test_ansWer.py``)
        raise Touched(p)  # a file of the task (or tests/hidden itself, or a hidden file)

    def is_dir(self, p: str) -> bool:
        return not self._absent(p)  # (never True: a path that may exist raised)

    def __contains__(self, p: str) -> bool:
        return not self._absent(p)

    def _touch(self, *a, **k):
        raise Touched("listing")

    exists = walk = __getitem__ = _touch

    @property
    def children(self):
        raise Touched("listing")

    @property
    def lines(self):
        raise Touched("read")


def py_touches_nothing(code: str, cwd: str) -> bool:
    """Does ToolShell's own python (:func:`rltutor.envs.toolshell.pyexpr.run_python`), run on ``code`` from
    ``cwd``, finish or fail without opening a file of the task or a hidden one, or listing a directory? Then
    it reads nothing hidden in any task (it has no network): ``priNt(...)``, ``__import__``, a list
    comprehension (outside its subset) and a missing hidden name all fail before reading anything."""
    from types import SimpleNamespace

    if "*" in cwd or "?" in cwd:
        return False  # a directory the reading knows only as a glob (``cd t*``)
    ts = toolshell()
    sh = SimpleNamespace(fs=HiddenOnlyFS(ts), cwd=cwd, left=ts.work_limit)  # (left: the work budget)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ts.run_python(sh, code)
    except Touched:
        return False
    except Exception:  # noqa: BLE001 -- the evaluator's own failure on our stand-in: not settled
        return False
    return True


def ts_glob_matches(pattern: str, name: str) -> bool:
    """ToolShell's glob of one path component (only ``*`` and ``?`` are active), in linear time: the
    classic two-pointer match, which backtracks only to the last ``*``."""
    p = n = 0
    star, mark = -1, 0
    while n < len(name):
        if p < len(pattern) and (pattern[p] == "?" or pattern[p] == name[n]):
            p += 1
            n += 1
        elif p < len(pattern) and pattern[p] == "*":
            star, mark = p, n
            p += 1
        elif star >= 0:
            p, mark = star + 1, mark + 1
            n = mark
        else:
            return False
    while p < len(pattern) and pattern[p] == "*":
        p += 1
    return p == len(pattern)


def ts_comps(path: str) -> list[str]:
    return [c for c in path.split("/") if c]


def ts_hidden(comps: list[str]) -> bool:
    """Does this absolute path (components, globs as typed) name /tests/hidden or something in it? A name
    below it with an upper-case letter names nothing (ToolShell's hidden files are in lower case, and its
    globs are case-sensitive with only ``*`` and ``?`` active)."""
    return (
        len(comps) >= 2
        and ts_glob_matches(comps[0], "tests")
        and ts_glob_matches(comps[1], "hidden")
        and (len(comps) == 2 or comps[2].lower() == comps[2])
    )


def ts_tree(comps: list[str]) -> bool:
    """Is /tests/hidden inside this directory: the root, or /tests (or a glob that matches it)?"""
    return not comps or (len(comps) == 1 and ts_glob_matches(comps[0], "tests"))


class ToolShellReading:
    """One reading of a command as ToolShell runs it: its variables, the working directories a ``cd`` may
    have left, and the work budget. :meth:`line` lexes and expands with ToolShell's own code and calls
    :meth:`command` with each simple command's words; the rules (:mod:`rltutor.guard.rules`) say in
    ``command`` what a tool will open. ``st`` is the rule filter's state: its ``steps`` counts the work
    against ``max_steps``."""

    def __init__(self, st, max_steps: int):
        ts = toolshell()
        self.ts, self.st, self.max_steps = ts, st, max_steps
        self.sh = ts.Shell(ts.fs, no_network)
        self.cwds = {"/"}  # a cd that fails leaves the directory as it was: both stay possible
        self.then = ";"  # the operator after the item being read
        self.open = False  # something this reading does not settle: a judge must look (RuleFilter.settled)

    def command(self, argv: list[str], depth: int, last: bool) -> None:
        """One simple command, its words expanded; ``last``: the last stage of its pipeline."""
        raise NotImplementedError("the rules say what a command opens: see rltutor.guard.rules")

    def step(self):
        st = self.st
        st.steps += 1
        if st.steps > self.max_steps:
            raise TooComplex(f"more than {self.max_steps} steps")

    def line(self, command: str, depth: int) -> None:
        """Read one command line (``depth``: how many ``sh -c`` it is inside)."""
        try:
            seq = self.ts.lex(command)
        except Exception:  # noqa: BLE001 -- a syntax error (or a parser failure): the environment runs nothing
            self.open = True  # ... but a shell with more syntax would: not settled here
            return
        for j, (_, pipeline) in enumerate(seq):  # whether an item fails is not known: both ways are followed
            # ... except that a cd that fails runs nothing after "&&": then only its success goes on
            self.then = seq[j + 1][0] if j + 1 < len(seq) else ";"
            for k, raw in enumerate(pipeline):
                self.step()
                argv = self.expand(raw)
                if argv is None:
                    break  # an expansion error ends the pipeline in the environment too
                if argv:
                    self.command(argv, depth, last=k == len(pipeline) - 1)

    def expand(self, raw) -> list[str] | None:
        """``Shell._expand_command``: assignments taken off the front *and set*, then the words expanded;
        each word's size is checked before it is built."""
        ts, sh = self.ts, self.sh
        try:
            i = 0
            while i < len(raw) and raw[i][0][0] == "bare" and (m := ts.assign.match(raw[i][0][1])):
                word = [("bare", raw[i][0][1][m.end() :]), *raw[i][1:]]
                self.size(word)
                sh.vars[m.group(1)] = sh.expand_word(word, split=False)[0]
                i += 1
            argv: list[str] = []
            for word in raw[i:]:
                self.size(word)
                argv.extend(sh.expand_word(word))
            return argv
        except self.ts.Error:
            return None

    def size(self, word) -> None:
        """Raise :class:`TooComplex` when ``word`` would expand past ``MAX_WORD_CHARS`` (``A=$A$A`` doubles)."""
        self.step()
        n = 0
        for kind, text in word:
            n += len(text)
            if kind != "single" and "$" in text:
                for m in self.ts.var.finditer(text):
                    n += len(self.sh.vars.get(m.group(1) or m.group(2) or "", ""))
        if n > MAX_WORD_CHARS:
            raise TooComplex(f"a word expands past {MAX_WORD_CHARS:,} characters")

    def paths(self, arg: str):
        """The components of ``arg`` from every possible working directory."""
        for c in self.cwds:
            yield ts_comps(self.ts.normpath(c, arg))

    def hidden(self, arg: str) -> bool:
        return any(ts_hidden(c) for c in self.paths(arg))

    def tree(self, arg: str) -> bool:
        return any(ts_tree(c) for c in self.paths(arg))


ODD_BLANK_RE = re.compile(r"[^\S\n]")  # any blank but the newline; a space or tab becomes a space
