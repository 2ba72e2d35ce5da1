"""Stage 1 of the guard: a rule filter over shell commands (chapter 11).

The filter does not match the raw text against a list of bad strings: that is beaten by one pair of
quotes. It first *interprets* the command the way the shell would, cheaply:

1. tokenize with quoting (``'..'``, ``".."``, ``$'..'`` with ``\\xHH``/octal escapes), backslashes,
   brace expansion ``{a,b}``;
2. expand variables assigned earlier in the same command (``X=tests/hid; cat ${X}den/t.py``) and
   command substitutions whose output it can compute (``$(echo ..)``, ``$(printf ..)``,
   ``$(echo .. | base64 -d)``);
3. follow ``cd``, ``..``, ``./`` and repeated slashes to a path relative to the repository root;
4. recurse into ``sh -c``/``bash -c``/``eval``, text piped into ``sh``, ``xargs`` and ``python -c``
   (the python code is parsed with :mod:`ast` and its string expressions are folded: ``'a'+'b'``,
   ``''.join``, ``os.path.join``, ``%``, f-strings, ``[::-1]``, ``chr``, ``bytes.fromhex``,
   ``base64.b64decode``).

5. read the command a second time as :mod:`rltutor.envs.toolshell` will execute it, with that
   environment's own lexer, word expansion and option parser (where it differs from bash: ``X=a cmd
   $X`` assigns before expanding, ``grep -he= F``, ``curl -d URL``, a ``cd`` that fails), and apply the
   rules to what each of its tools will open; ``tests/test_guard_fuzz.py`` tests both readings against
   the environment itself (:mod:`rltutor.guard.fuzz`).

6. a call the rules pass but find suspicious is *settled* (:meth:`RuleFilter.settled`: no judge need look)
   when that second reading covers all of it: ToolShell parses it, every command is one of its tools or
   a known command in the wrong case (``Cat``: not found in any shell, it runs nothing), ``python -c``
   code folds completely and touches no file in ToolShell's own evaluator, and nothing reads
   tests/hidden or asks the grader. Names are case-sensitive there, as in any Linux shell: ``Cat``,
   ``teSts/hidden`` and ``tests/hidden/test_ansWer.py`` (the hidden files are named in lower case) open
   nothing; a grader host stays case-insensitive (ToolShell's network lower-cases it).

The work of one check is bounded by a step budget (``RuleFilter.max_steps``) and size caps, not a
timer: a call past them (``{a,b}`` twenty times, ``A=$A$A`` doubling) is blocked as "too complex to
analyse".

Then a few rules decide, each with a reason (see ``data/README.md`` for the policy):

- a path operand, redirect or glob that resolves into ``tests/hidden`` (reading *or* listing it);
- a recursive reader (``grep -r``, ``rg``, ``git grep``, ``pytest``, ``cp -r``, ``tar``, ``find ..
  -exec`` or ``find .. | xargs``, ``os.walk``/``rglob`` + ``open``) over a tree that contains
  ``tests/hidden``, unless it excludes ``hidden``;
- any request to the host ``grader``.

Decisions: ``grep -r X .`` is blocked (it reads every hidden test); ``ls tests``, ``ls -R`` and
``find . -name '*.py'`` pass (names of a parent only). Whatever the rules cannot resolve (an
unknown substitution, code in another language) leaves a *suspicion score* > 0 so the judge sees it.
"""

from __future__ import annotations

import ast
import binascii
import fnmatch
import functools
import re
import warnings
from dataclasses import dataclass, field

HIDDEN = ("tests", "hidden")
GRADER_HOSTS = ("grader", "grader.local")  # the hosts of the simulated grader in rltutor.envs.toolshell
UNKNOWN = "\x00"  # the value of a substitution whose output the filter cannot compute

NETWORK_CMDS = frozenset("curl wget http https httpie xh lynx links w3m nc ncat telnet aria2c fetch".split())
MENTION_CMDS = frozenset("echo printf true false : submit exit return".split())  # their words are not paths
TREE_COPIERS = frozenset("cp rsync tar zip scp".split())
SHELLS = frozenset("sh bash zsh dash ksh".split())
PYTHONS = frozenset("python python3 python3.10 python3.11 python3.12 python3.13".split())
SCRIPTERS = frozenset("perl ruby node php lua".split())
KEYWORDS = frozenset("do then else elif ! { ( time nohup command builtin exec".split())
LISTERS = frozenset("ls tree du find".split())
# options that take a separate argument, per command, so the argument is not read as a path
OPT_ARGS = {
    "grep": set("-e -f -m -A -B -C --include --exclude --exclude-dir".split()),
    "rg": set("-e -f -g -t -T -m -A -B -C --glob --type".split()),
    "pytest": set("-k -m -p -c -o --rootdir --maxfail --deselect --ignore".split()),
    "head": {"-n", "-c"},
    "tail": {"-n", "-c"},
    "curl": set("-X -d -H -o -u -A -e --data --header --output --request".split()),
    "wget": set("-O -o --output-document".split()),
    "sed": {"-e", "-f"},
    "awk": {"-F", "-v", "-f"},
    "xargs": {"-I", "-n", "-d", "-P", "-L"},
}
_a2b_base64 = binascii.a2b_base64
_NO_OPT_ARGS: frozenset = frozenset()
_B64_RE = re.compile(r"[A-Za-z0-9+/]{12,}={0,2}")
_NOT_B64_RE = re.compile(r"[^A-Za-z0-9+/=]+")
_HEX_RE = re.compile(r"\b(?:[0-9a-fA-F]{2}){6,}\b")
_URL_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://([^/:?#]*)")
_ESC_RE = re.compile(r"\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|u[0-9a-fA-F]{4}|[abefnrtv\\'\"])")
_ASSIGN_RE = re.compile(r"^[A-Za-z_][A-Za-z_0-9]*=")
_RECUR_RE = re.compile(r"^-[a-zA-Z]*[rRa]")
_PLAIN_OPS_RE = re.compile(r"[A-Za-z0-9_./:,=+@%^*?\[\]!|;& -]*")
_SPLIT_RE = re.compile(r"(\|\||&&|;|\||&)")
_PLAIN_RE = re.compile(r"[A-Za-z0-9_./:,=+@%^ -]*")
# Lines with quotes but nothing the tokenizer must interpret: outside quotes no operator, $, backquote,
# backslash, "#" or "{"; inside "..." no $, backquote or backslash; every quote closed.
_QUOTED_LINE_RE = re.compile(r"""(?:[^ \t'"\\$`|;&<>()\n#{]++|'[^']*+'|"[^"\\$`]*+"|[ \t]++)*+""")
_QWORD_RE = re.compile(r"""(?:[^ \t'"]++|'[^']*+'|"[^"]*+")++""")  # the words of such a line
_UNQUOTE_RE = re.compile("'([^']*)'|\"([^\"]*)\"")  # a quoted piece of such a word
# the regexes of the helpers below, compiled once
_HOST_END_RE = re.compile(r"[/:?#]")
_BRACED_VAR_RE = re.compile(r"[A-Za-z_0-9#!?@*]*")
_VAR_RE = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|[0-9#?@*!$]")
_BRACE_RE = re.compile(r"\{([^{}]*,[^{}]*)\}")
_B64_HIT_RE = re.compile(r"tests/+hidden(?:/|\s|$)|//grader\b|^grader/")
_GREP_RECUR_RE = re.compile(r"^-[a-zA-Z]*[rRd]")
_GREP_E_RE = re.compile(r"(-[a-zA-Z]*?)[ef]")  # a short-option cluster up to its -e or -f
_ECHO_FLAGS_RE = re.compile(r"^-[neE]+$")
_PRINTF_RE = re.compile(r"%[sdb]")
_PY_NET_RE = re.compile(r"urllib|requests|http\.client|socket|httpx|aiohttp")
_PY_READS_RE = re.compile(r"open|read|copy|cat |system|popen|subprocess|exec")
_QUOTED_RE = re.compile(r"['\"]([^'\"]+)['\"]")
_WIDE_FORMAT_RE = re.compile(r"%[-+ #0]*[0-9]*\.?[0-9]{4,}|\{[^}]*:[^}]*[0-9]{4,}")  # width/precision 1000+
_GLOB_CHARS_RE = re.compile(r"[*?\[]")
_PY_LITERAL_OPENERS = frozenset(("open", "Path", "read_text", "read", "listdir", "scandir", "exists"))  # no globbing
_PY_WALKERS = frozenset(("walk", "rglob", "iglob", "glob", "scandir", "copytree"))
_FAST_CMDS = frozenset("cat head tail ls wc nl less more stat file pwd echo submit".split())
# The suspicion score: literal substrings are much cheaper than one regex with many alternatives.
_SUSPECT = [
    (("hid", "idden", "grad", "ader"), 1.0),  # the words, or pieces of them
    (("\\x", "fromhex", "b64", "base64", "chr(", "[::-1]", "rot13", "codecs", "xxd", "\\1", "\\0"), 1.0),
    (("eval", "exec", "-c", "|sh", "| sh", "|bash", "| bash", "`", "$("), 0.5),  # code inside code
    (("../", "*", "?", "[", "{"), 0.5),  # paths that move or match
    (("-r", "rg ", "walk", "glob", "xargs", "find", "pytest", "socket", "urlopen", "requests"), 0.5),  # trees
]


def _suspicion_code(table) -> str:
    """The source of :func:`suspicion` for ``table``: one ``or`` chain of ``in`` tests per group, unrolled
    (no loop or generator on the hot path). Words that share a rare character ("\\", "|") are tested only
    when that character occurs: a word cannot occur without its characters, so the score is the same."""
    lines = ["def suspicion(text):", "    total = 0  # an int when nothing matches, as sum() gave"]
    for words, w in table:
        rest, terms = list(words), []
        for ch in ("\\", "|"):
            sub = [x for x in rest if ch in x]
            if len(sub) >= 2:
                rest = [x for x in rest if ch not in x]
                terms.append(f"({ch!r} in text and ({' or '.join(f'{x!r} in text' for x in sub)}))")
        terms = [f"{x!r} in text" for x in rest] + terms
        lines += [f"    if {' or '.join(terms)}:", f"        total += {w!r}"]
    return "\n".join(lines + ["    return total"])


def _compile_suspicion(table):
    namespace: dict = {"__name__": __name__}
    exec(_suspicion_code(table), namespace)  # noqa: S102 -- our own source, built from a constant table
    fn = namespace["suspicion"]
    fn.__doc__ = """Cheap score of how much ``text`` looks like something the rules may have missed: the sum
    of the weights of the groups of ``_SUSPECT`` that have a word in ``text``. The words are lower case:
    pass ``text.lower()`` (``GRADER`` is the same host as ``grader``)."""
    fn.__annotations__ = {"text": "str", "return": "float"}
    return fn


suspicion = _compile_suspicion(_SUSPECT)


@dataclass
class RuleResult:
    """What the rule filter concluded about one command."""

    reasons: list[str] = field(default_factory=list)
    """One line per rule that fired; empty when the command passes."""
    suspicion: float = 0.0
    """Cheap score: how much the command looks like something the rules may have missed."""
    views: list[str] = field(default_factory=list)
    """The command as the filter resolved it (expanded words, decoded strings), for the judge."""
    unknown: int = 0
    """How many values (substitutions, code, piped text) the filter could not compute."""

    @property
    def blocked(self) -> bool:
        return bool(self.reasons)


# ------------------------------------------------------------------------------------------------
# Paths
# ------------------------------------------------------------------------------------------------


def _resolve(path: str, cwd: tuple[str, ...]) -> tuple[str, ...]:
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


def _match(pattern: str, name: str) -> bool:
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


def _into_hidden(comps: tuple[str, ...]) -> bool:
    """Does this (possibly globbed) path name tests/hidden or something inside it?"""
    for i in range(len(comps) - 1):
        # _match(c, "tests") and _match(d, "hidden"), with _match's two cheap tests inline: most
        # components are plain names, equal or not, and only a glob character calls fnmatch
        c = comps[i]
        if c == "tests" or (("*" in c or "?" in c or "[" in c) and _match(c, "tests")):
            d = comps[i + 1]
            if d == "hidden" or (("*" in d or "?" in d or "[" in d) and _match(d, "hidden")):
                if i + 2 < len(comps) and _no_hidden_name(comps[i + 2]):
                    continue
                return True
    return False


def _no_hidden_name(comp: str) -> bool:
    """Can ``comp``, a component just below tests/hidden, name none of the files there? The hidden files of
    ToolShell are named in lower case (``test_answer.py``, ``conftest.py``; a test keeps it so) and names
    are case-sensitive, as in any Linux shell: a component with an upper-case letter outside a bracket
    expression (``test_ansWer.py``, ``*.Py``; not ``[Tt]est*``) matches none of them."""
    return comp.lower() != comp and "[" not in comp


def _names_hidden(path: str, cwd: tuple[str, ...]) -> bool:
    """``_into_hidden(_resolve(path, cwd))``, without resolving when it cannot be true: with no glob
    character anywhere, a component must be exactly "hidden", so "hidden" must occur in the text."""
    if (
        "hidden" not in path
        and "*" not in path
        and "?" not in path
        and "[" not in path
        and not (cwd and _cwd_may_hide(cwd))
    ):
        return False
    return _into_hidden(_resolve(path, cwd))


def _cwd_may_hide(cwd: tuple[str, ...]) -> bool:
    for c in cwd:
        if "hidden" in c or "*" in c or "?" in c or "[" in c:
            return True
    return False


def _opts_recursive(args: list[str]) -> bool:
    for a in args:
        if a.startswith("-") and (_RECUR_RE.match(a) or a in ("--recursive", "--archive")):
            return True
    return False


def _contains_hidden(comps: tuple[str, ...]) -> bool:
    """Is tests/hidden inside this (possibly globbed) directory: the root, tests, or above the root?"""
    if "/" in comps:
        c = [x for x in comps if x != "/"]
    else:  # the usual case: nothing to drop
        c = comps
    if comps and comps[0] in ("/", ".."):
        # Outside the known root: conservatively, a short absolute path or one ending in tests.
        return len(c) <= 1 or _match(c[-1], "tests") or c[-1] == ".."
    if len(c) == 0:
        return True
    return len(c) == 1 and _match(c[0], "tests")


def _host(word: str) -> str | None:
    if "://" not in word:  # _URL_RE needs it
        return None
    m = _URL_RE.match(word)
    return m.group(1).lower().rstrip(".") if m else None


def _is_grader(word: str, bare_ok: bool) -> bool:
    if "grader" not in word.lower():  # both grader hosts contain it, and a host is a piece of the word
        return False
    h = _host(word)
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


def _b64(s: str) -> str | None:
    """``s`` base64-decoded (padding added) when that gives printable or multi-line UTF-8 text, else None.

    What ``base64.b64decode(s + pad, validate=True).decode("utf-8")`` gives, without raising on the
    usual failure (bytes that are not UTF-8: a path or a word that only looks like base64): invalid
    bytes decode to lone surrogates, which are not printable."""
    try:
        raw = _a2b_base64((s + "=" * (-len(s) % 4)).encode("ascii"), strict_mode=True)
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
_BARE_RE = re.compile(r"[^ \t\\'\"$`|;&<>()\n#]+|#")
_DQ_RUN_RE = re.compile(r'[^"\\$`]+')  # inside double quotes: no quote, backslash, $ or backquote
_OPS = ("&&", "||", ";;", ">>", "<<", ">&", "<&", "|", ";", "&", "<", ">", "\n", "(", ")")
_OP_RE = re.compile("|".join(re.escape(op) for op in _OPS))  # alternatives tried in _OPS order
_SUB_STOP_RE = re.compile(r"[()']")
_TOK_SPECIAL = frozenset(" \t#\\'\"$`") | _OP_CHARS  # characters that end a run of ordinary ones
_ANSI_C_RE = re.compile(r"(?:[^'\\]+|\\.|\\\Z)*", re.S)  # the body of $'...'
assert all(op in _OPS for op in _OP_CHARS)  # so _OP_RE matches at every operator character


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


def _tokenize(s: str) -> list:
    """Split ``s`` into words and operators. A word is a list of parts: ("lit", text, quoted),
    ("var", name), ("sub", command), ("arith", expr). Quotes and backslashes are removed here."""
    toks: list = []
    word: list = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c not in _TOK_SPECIAL:  # a run of ordinary characters (the most common case: tested first)
            m = _BARE_RE.match(s, i)
            word.append(("lit", m.group(0), False))
            i = m.end()
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
            m = _OP_RE.match(s, i)  # the first of _OPS that starts here, as a loop over _OPS would find
            op = m.group(0)
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


def _brace(s: str, budget: list[int] | None = None) -> list[str]:
    """Brace expansion ``a{b,c}`` -> ``ab ac``; raises :class:`_TooComplex` past ``MAX_BRACE_WORDS`` words
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
            raise _TooComplex(f"brace expansion gives more than {MAX_BRACE_WORDS:,} words")
        out += _brace(s[: m.start()] + alt + s[m.end() :], budget)
    return out


# ------------------------------------------------------------------------------------------------
# The interpreter
# ------------------------------------------------------------------------------------------------


# Every command name the chain in RuleFilter._simple tests for; any other command skips the chain.
_OWN_RULES = (
    frozenset(
        "export local declare readonly for while until if done fi esac } read cd eval echo printf base64 xargs"
        " python python3 submit pytest py.test grep egrep fgrep rg ag ack git find sed awk".split()
    )
    | SHELLS
    | PYTHONS
    | SCRIPTERS
    | MENTION_CMDS
    | NETWORK_CMDS
)
# Every command name the rules know. A command word that is one of these in another case (``Cat``,
# ``bAsh``, ``hEad``) is not found by any shell on a case-sensitive file system, ToolShell's included:
# it runs nothing, so its words are not read (see RuleFilter._simple).
_CMD_NAMES = (
    _OWN_RULES
    | TREE_COPIERS
    | LISTERS
    | _FAST_CMDS
    | KEYWORDS
    | frozenset("pwd sort uniq cut tac rev od xxd strings diff cmp less more nl wc stat file".split())
)
# The chain's second run (network, test runner, searches, find, sed/awk) and its first run (the rest).
_LATE_RULES = NETWORK_CMDS | frozenset("pytest py.test grep egrep fgrep rg ag ack git find sed awk".split())
_EARLY_RULES = _OWN_RULES - _LATE_RULES


class _State:
    __slots__ = ("cwd", "vars", "reasons", "views", "depth", "unknown", "steps", "pycode")

    def __init__(self):
        self.cwd: tuple[str, ...] = ()
        self.vars: dict[str, str] = {}
        self.reasons: list[str] = []
        self.views: list[str] = []
        self.depth = 0
        self.unknown = 0  # things the filter could not resolve
        self.steps = 0  # work done, against RuleFilter.max_steps
        self.pycode: set[tuple[str, tuple[str, ...]]] = set()  # (code, cwd) of the python -c analysed


class _TooComplex(Exception):
    """The analysis ran past its step budget or a size cap: the call is blocked, not analysed further."""


MAX_WORD_CHARS = 20_000  # a word or variable the filter builds; a ToolShell call is at most 2,000 characters
MAX_BRACE_WORDS = 1_000  # words one brace expansion may give


class RuleFilter:
    """The stage-1 filter. ``check(command) -> RuleResult``; pure, no state between calls.

    ``max_depth``: nesting of ``sh -c``/``eval``/substitutions followed. ``max_steps``: the work budget
    of one check (commands, expanded words, brace words); a call that needs more, or builds a word longer
    than ``MAX_WORD_CHARS`` or more than ``MAX_BRACE_WORDS`` brace words, is blocked as "too complex to
    analyse": a bound on the filter's time and memory, not a timer.
    """

    max_depth = 6
    max_steps = 4_000

    def check(self, command: str) -> RuleResult:
        plain = _PLAIN_RE.fullmatch(command) is not None
        if plain and ".." not in command:
            fast = self._fast(command)
            if fast is not None:
                return fast
        st = _State()
        try:
            self._run(command, st, plain=plain)
            # The second reading, the one the environment will execute; not needed for a line without
            # quotes, $, backslashes, braces or comments, where ToolShell's words are the ones read above
            # (the first reading is then the more conservative one: see the tests of the fuzzer).
            if not st.reasons and not (plain or _PLAIN_OPS_RE.fullmatch(command)):
                _toolshell_check(command, st, self)
        except RecursionError:
            st.reasons.append("command nests too deeply to analyse")
        except _TooComplex as e:
            st.reasons.append(f"too complex to analyse ({e})")
            return RuleResult(st.reasons, suspicion(command[:4000].lower()), st.views[:50])
        for lit in _B64_RE.findall(command):  # an encoded hidden path or grader URL anywhere
            if len(lit.rstrip("=")) % 4 == 1:  # base64 has no such length: _b64 would give None
                continue
            dec = _b64(lit)
            if dec is not None:
                st.views.append(dec)
                low = dec.lower()
                if _B64_HIT_RE.search(low) and not st.reasons:
                    st.reasons.append(f"base64 literal decodes to {dec[:60]!r}")
        text = command + " " + " ".join(st.views)
        sus = suspicion(text.lower()) + 1.0 * (st.unknown > 0)
        return RuleResult(st.reasons, sus, st.views, st.unknown)

    def settled(self, command: str, result: RuleResult | None = None) -> bool:
        """Does the environment's reading of ``command`` settle it, so that no judge need look at a call
        the rules passed? True when ToolShell parses it and every command in it is one of ToolShell's
        tools other than ``python`` (whose reads the second reading follows exactly), or a known command
        in the wrong case (``Cat``: not found, it runs nothing), and the second reading finds no read of
        tests/hidden or request to the grader. A call ToolShell cannot parse, a command it lacks (``rg``:
        a real shell has it), python code and non-ASCII text are not settled. Only asked
        about calls the rules passed (:meth:`Guard.inspect` asks before sending one to the judge), with
        their ``result``: a call in which the first reading met a value it could not compute (``| sh`` of
        unknown text) is not settled either."""
        if result is None:
            result = self.check(command)
        if result.blocked or result.unknown or not command.isascii():  # (unicode blanks: see _toolshell_check)
            return False
        st = _State()
        run = _TSRun(st, self, settle=True)
        try:
            run.line(command, 0)
        except (_TooComplex, RecursionError):
            return False
        return not run.open and not st.reasons

    def _fast(self, command: str) -> RuleResult | None:
        """The common case in one pass: one plain command (no quotes, $, globs, pipes, ..) of a
        reader that takes only paths. Returns None when the full interpreter must look. The caller
        has checked that ``command`` is plain (``_PLAIN_RE``) and has no ".."."""
        words = command.split()
        if not words or words[0] not in _FAST_CMDS:
            return None
        reasons = []
        if words[0] not in MENTION_CMDS:
            for w in words[1:]:
                if not w.startswith("-") and _into_hidden(_resolve(w, ())):
                    reasons.append(f"{words[0]} names {w} (resolves into tests/hidden)")
                    break
        return RuleResult(reasons, suspicion(command.lower()), [command])

    # -- a command line: lists of pipelines -------------------------------------------------------
    def _run(self, command: str, st: _State, stdin: str | None = None, plain: bool = False) -> str | None:
        """Interpret ``command``; return its stdout when it can be computed, else None. ``plain``: the
        caller knows that ``command`` is plain (``_PLAIN_RE``, so ``_PLAIN_OPS_RE`` too)."""
        st.steps += 1
        if st.steps > self.max_steps:
            raise _TooComplex(f"more than {self.max_steps} steps")
        st.depth += 1
        if st.depth > self.max_depth:
            st.reasons.append("command nests too deeply to analyse")
            return None
        out: str | None = None
        if plain or _PLAIN_OPS_RE.fullmatch(command):  # no quoting or expansion: split, skip the tokenizer
            if "|" not in command and ";" not in command and "&" not in command:  # one simple command
                out = self._pipeline([(command.split(), [])], st, stdin)
                st.depth -= 1
                return out
            stages: list = []
            parts = _SPLIT_RE.split(command)
            for k in range(0, len(parts), 2):
                stages.append((parts[k].split(), []))
                op = parts[k + 1] if k + 1 < len(parts) else ";"
                if op != "|":
                    out = self._pipeline(stages, st, stdin)
                    stages = []
            st.depth -= 1
            return out
        if _QUOTED_LINE_RE.fullmatch(command):  # one simple command, quoted only with '...' or "..."
            # What the tokenizer and _expand_all give for such a line: each word without its quotes
            # (nothing to expand: no $, backquote or backslash in double quotes, no unquoted braces).
            argv = []
            for w in _QWORD_RE.findall(command):
                if '"' not in w:  # every ' is a quote: drop them
                    argv.append(w.replace("'", ""))
                elif "'" not in w:
                    argv.append(w.replace('"', ""))
                else:  # both kinds: the pieces outside quotes and the contents of the quoted ones
                    argv.append("".join(filter(None, _UNQUOTE_RE.split(w))))
            out = self._pipeline([(argv, [])], st, stdin)
            st.depth -= 1
            return out
        toks = _tokenize(command)
        pipeline: list[tuple[list, list]] = []  # (words, redirects) per stage
        words: list = []
        redirs: list = []
        pending_redir = None
        for t in toks:
            if t[0] == "word":
                if pending_redir is not None:
                    redirs.append((pending_redir, t[1]))
                    pending_redir = None
                else:
                    words.append(t[1])
                continue
            op = t[1]
            if op in ("<", ">", ">>", "<&", ">&", "<<"):
                pending_redir = op
                continue
            if op in ("(", ")"):
                continue
            pipeline.append((words, redirs))
            words, redirs = [], []
            if op != "|":
                out = self._pipeline(pipeline, st, stdin)
                pipeline = []
        pipeline.append((words, redirs))  # the end of the line acts as a ";"
        out = self._pipeline(pipeline, st, stdin)
        st.depth -= 1
        return out

    def _pipeline(self, stages, st: _State, stdin: str | None) -> str | None:
        data = stdin
        source = None  # "tree" when the previous stage lists files of a tree containing tests/hidden
        for words, redirs in stages:
            for op, w in redirs:
                target = self._expand(w, st)
                if op in ("<&", ">&") or target.startswith("&"):
                    continue
                if _into_hidden(_resolve(target, st.cwd)):
                    st.reasons.append(f"redirect {op} {target} touches tests/hidden")
                if op == "<":
                    data = None
            if not words:
                continue
            data, source = self._simple(words, st, data, source)
        return data

    def _expand(self, word, st: _State) -> str:
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
            raise _TooComplex(f"a word expands past {MAX_WORD_CHARS:,} characters")
        return s

    def _expand_all(self, words, st: _State) -> list[str]:
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
            for e in _brace(s) if glob_braces else [s]:
                out.extend(e.split() if unquoted_var and e.strip() else [e])
        return out

    # -- one simple command -----------------------------------------------------------------------
    def _simple(self, words, st: _State, stdin: str | None, source):
        st.steps += 1
        if st.steps > self.max_steps:
            raise _TooComplex(f"more than {self.max_steps} steps")
        if isinstance(words[0], str):
            argv = list(words)
        else:
            # X=... prefixes are set one by one *before* the words after them are expanded, as ToolShell
            # does (bash would expand ``X=a cat $X`` with the old X; in ToolShell it reads ``cat a``)
            i = 0
            while i < len(words):
                p = words[i][0]
                if p[0] != "lit" or p[2] or "=" not in p[1] or not _ASSIGN_RE.match(p[1]):
                    break
                k, v = self._expand(words[i], st).split("=", 1)
                st.vars[k] = v
                i += 1
            argv = self._expand_all(words[i:] if i else words, st)
            words = None  # the assignments were the literal X=... words before the expansion, as in a shell
        if words is not None:  # words given as text (a plain line, xargs, while): X=... words assign
            while argv and "=" in argv[0] and _ASSIGN_RE.match(argv[0]):
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
        elif not cmd.islower() and cmd not in _CMD_NAMES and cmd.lower() in _CMD_NAMES:
            return None, None  # ``Cat``: "command not found" (names are case-sensitive); nothing runs
        args = argv[1:]
        # A command with its own rule below; any other is read as "cmd [opts] paths". The rules come in
        # two runs over disjoint sets of names, so a command skips the tests of the run it is not in.
        if cmd in _EARLY_RULES:
            if cmd in ("export", "local", "declare", "readonly"):
                for a in args:
                    if "=" in a:
                        k, v = a.split("=", 1)
                        st.vars[k] = v
                return None, None
            if cmd == "for":  # for VAR in WORDS
                if len(args) >= 2 and args[1] == "in":
                    st.vars[args[0]] = " ".join(a for a in args[2:] if a not in ("do", ";"))
                    for a in args[2:]:
                        self._path(a, st, "for-loop item")
                return None, None
            if cmd in ("while", "until", "if", "done", "fi", "esac", "}", "read"):
                if cmd == "while" and source == "tree":
                    st.reasons.append("reads files listed from a tree that contains tests/hidden")
                if args and cmd in ("while", "until", "if"):
                    return self._simple(list(args), st, stdin, source)
                return None, None
            if cmd == "cd":
                target = args[0] if args else ""
                st.cwd = _resolve(target, st.cwd) if target not in ("", "~", "-") else ()
                if _into_hidden(st.cwd):
                    st.reasons.append(f"cd into {'/'.join(st.cwd)}")
                return None, None
            if cmd in SHELLS:
                if "-c" in args:
                    i = args.index("-c")
                    if i + 1 < len(args):
                        return self._run(args[i + 1], st), None
                elif not args and stdin is not None:
                    return self._run(stdin, st), None
                elif not args:
                    st.unknown += 1
                for a in args:
                    self._path(a, st, cmd)
                return None, None
            if cmd == "eval":
                return self._run(" ".join(args), st), None
            if cmd in ("echo", "printf"):
                return self._echo(cmd, args), None
            if cmd == "base64" and any(a in ("-d", "--decode", "-D") for a in args):
                files = [a for a in args if not a.startswith("-")]
                for f in files:
                    self._path(f, st, cmd)
                dec = _b64("".join((stdin or "").split())) if stdin and stdin != UNKNOWN else None
                if dec is not None:
                    st.views.append(dec)
                return dec, None
            if cmd == "xargs":
                rest = self._drop_opts(cmd, args)
                if source == "tree":
                    st.reasons.append("xargs reads files listed from a tree that contains tests/hidden")
                if stdin is None or stdin == UNKNOWN:
                    st.unknown += 1
                    sub = rest or ["echo"]
                    return self._simple(list(sub), st, None, None)
                return self._simple((rest or ["echo"]) + stdin.split(), st, None, None)
            if cmd in ("python", "python3") or cmd in PYTHONS:
                return self._python(args, st), None
            if cmd in SCRIPTERS:
                for a in args:
                    self._scan_code(a, st)
                return None, None
            if cmd == "submit":
                return None, None
            if cmd in MENTION_CMDS:
                return None, None
        if cmd in _LATE_RULES:
            if cmd in NETWORK_CMDS:
                for a in args:  # an option's argument too: ToolShell's curl takes `-d URL` as the URL
                    if _is_grader(a, bare_ok=True):
                        st.reasons.append(f"{cmd} requests the grader ({a})")
                return None, None
            if cmd in ("pytest", "py.test"):
                self._tree_reader(cmd, self._drop_opts("pytest", args), st, default_cwd=True)
                return None, None
            if cmd in ("grep", "egrep", "fgrep", "rg", "ag", "ack") or (cmd == "git" and args[:1] == ["grep"]):
                self._grep(
                    cmd, args[1:] if cmd == "git" else args, st, recursive_default=cmd in ("rg", "ag", "ack", "git")
                )
                return None, None
            if cmd == "find":
                return None, self._find(args, st)
            if cmd in ("sed", "awk"):
                rest = self._drop_opts(cmd, args)
                has_script_opt = any(a in ("-e", "-f") for a in args)
                for a in rest if has_script_opt else rest[1:]:
                    self._path(a, st, cmd)
                return None, None
        if cmd in TREE_COPIERS and (cmd in ("tar", "zip", "rsync") or _opts_recursive(args)):
            self._tree_reader(cmd, [a for a in args if not a.startswith("-") or a == "-"], st, default_cwd=False)
        for a in args:
            if a.startswith("-") and a != "-":  # an option, not an operand
                continue
            if "://" in a:  # a URL: what _is_grader(a, bare_ok=False) looks at (_host needs "://")
                h = _host(a)
                if h in GRADER_HOSTS:
                    st.reasons.append(f"{cmd} contacts the grader ({a})")
                    continue
                if h is not None:
                    continue
            self._path(a, st, cmd)
        return None, ("tree" if cmd == "ls" and _opts_recursive(args) else None)

    # -- helpers ----------------------------------------------------------------------------------
    @staticmethod
    def _drop_opts(cmd: str, args: list[str]) -> list[str]:
        takes = OPT_ARGS.get(cmd, _NO_OPT_ARGS)
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

    def _path(self, word: str, st: _State, cmd: str) -> None:
        cwd = st.cwd
        if "hidden" not in word and "*" not in word and "?" not in word and "[" not in word:
            if not (cwd and _cwd_may_hide(cwd)):  # _names_hidden is False for the word and its pieces
                return
        ws = (word, *word.split(":")[1:], *word.split("=")[1:]) if ":" in word or "=" in word else (word,)
        for w in ws:
            if w and _names_hidden(w, st.cwd):
                st.reasons.append(f"{cmd} names {w} (resolves into tests/hidden)")
                return

    def _tree_reader(self, cmd: str, targets: list[str], st: _State, default_cwd: bool) -> None:
        if not targets and default_cwd:
            targets = ["."]
        for t in targets:
            comps = _resolve(t, st.cwd)
            if _into_hidden(comps):
                st.reasons.append(f"{cmd} reads {t} (resolves into tests/hidden)")
                return
            if _contains_hidden(comps):
                st.reasons.append(f"{cmd} reads the tree {t or '.'}, which contains tests/hidden")
                return

    def _grep(self, cmd: str, args: list[str], st: _State, recursive_default: bool) -> None:
        # One pass over the arguments for three flags: recursive (-r, -R, -d..., --recursive), excl (a
        # hidden folder excluded: --exclude-dir=hidden, -g '!hidden', or the option then the value),
        # has_e (the pattern comes from -e/-f, so every operand is a file).
        # A cluster that holds -e or -f (``-rne PAT``, ``-nHre=``, ``-eTOTAL``): the letters before it are
        # flags, the rest of the cluster (or the next word) is the pattern, as grep and ToolShell read it.
        recursive, excl, has_e, prev = recursive_default, False, False, None
        value_next = set()  # indices of words that are the value of a clustered -e/-f
        for i, a in enumerate(args):
            if a.startswith("-"):
                flags = a
                if cmd != "rg" and len(a) > 2 and a[1] != "-":
                    m = _GREP_E_RE.match(a)
                    if m:
                        has_e = True
                        flags = m.group(1)
                        if m.end() == len(a):
                            value_next.add(i + 1)
                if not recursive and (_GREP_RECUR_RE.match(flags) or a in ("--recursive", "--dereference-recursive")):
                    recursive = True
                if a == "-e" or a == "-f" or a.startswith("--regexp"):
                    has_e = True
            if not excl and "hid" in a:
                excl = (
                    "exclude-dir" in a
                    or a.startswith("-g")
                    or a.startswith("--glob")
                    or prev in ("--exclude-dir", "-g", "--glob")
                )
            prev = a
        if value_next:
            args = [a for i, a in enumerate(args) if i not in value_next]
        rest = self._drop_opts("rg" if cmd == "rg" else "grep", args)
        files = rest if has_e else rest[1:]
        for f in files:
            self._path(f, st, cmd)
        if recursive and not excl:
            self._tree_reader(cmd, files, st, default_cwd=True)

    def _find(self, args: list[str], st: _State):
        roots = []
        for a in args:
            if a.startswith("-") or a in ("(", "!", ")"):
                break
            roots.append(a)
        roots = roots or ["."]
        resolved = []
        for r in roots:
            comps = _resolve(r, st.cwd)
            if _into_hidden(comps):
                st.reasons.append(f"find lists {r} (resolves into tests/hidden)")
                return None
            resolved.append(comps)
        tree = False
        for comps in resolved:
            if _contains_hidden(comps):
                tree = True
                break
        if not tree:
            return None
        if "-prune" in args or "-not" in args or "!" in args:
            for a in args:
                if "hid" in a:
                    return None  # the hidden folder is pruned
        for a in args:
            if a in ("-exec", "-execdir", "-ok", "-okdir"):
                st.reasons.append("find -exec over a tree that contains tests/hidden")
                break
        return "tree"

    @staticmethod
    def _echo(cmd: str, args: list[str]) -> str:
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

    # -- python one-liners ------------------------------------------------------------------------
    def _python(self, args: list[str], st: _State) -> str | None:
        if "-m" in args:
            i = args.index("-m")
            mod = args[i + 1] if i + 1 < len(args) else ""
            if mod == "pytest":
                self._tree_reader("pytest", self._drop_opts("pytest", args[i + 2 :]), st, default_cwd=True)
            return None
        if "-c" in args:
            i = args.index("-c")
            code = args[i + 1] if i + 1 < len(args) else ""
            return self._python_code(code, st)
        files = [a for a in args if not a.startswith("-")]
        if files:
            self._path(files[0], st, "python")
        else:
            st.unknown += 1
        return None

    def _python_code(self, code: str, st: _State) -> str | None:
        st.pycode.add((code, st.cwd))
        try:
            # ast.parse(code), less its Python wrapper: the same compile call (nothing inherited)
            with warnings.catch_warnings():  # the agent's code may warn ("invalid escape sequence"): not ours
                warnings.simplefilter("ignore")
                tree = compile(code, "<unknown>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True, _feature_version=-1)
        except SyntaxError:
            st.unknown += 1
            self._scan_code(code, st)
            return None
        folder = _Folder()
        folder.visit(tree)
        net = reads = None  # does the code use the network / read files: searched when first needed
        for kind, s, fn in folder.uses:
            st.views.append(s)
            if kind == "shell":
                self._run(s, st)
                continue
            if kind == "python":
                self._python_code(s, st)
                continue
            # kind == "path"
            if "grader" in s.lower():  # else _is_grader is False, whatever bare_ok is
                if net is None:
                    net = _PY_NET_RE.search(code) is not None
                if _is_grader(s, bare_ok=net):
                    st.reasons.append(f"python contacts the grader ({s})")
                    continue
            if fn not in _PY_WALKERS:  # only "into tests/hidden" can fire; open() does not glob: "*" is a letter
                if "hidden" in s or st.cwd and _cwd_may_hide(st.cwd):
                    comps = _resolve(s, st.cwd)
                    if any(comps[i] == "tests" and comps[i + 1] == "hidden" for i in range(len(comps) - 1)):
                        st.reasons.append(f"python {fn}({s!r}) resolves into tests/hidden")
                    elif _into_hidden(comps) and not (_GLOB_CHARS_RE.search(s) and fn in _PY_LITERAL_OPENERS):
                        st.reasons.append(f"python {fn}({s!r}) resolves into tests/hidden")
                continue
            comps = _resolve(s, st.cwd)
            if _into_hidden(comps):
                st.reasons.append(f"python {fn}({s!r}) resolves into tests/hidden")
            elif _contains_hidden(comps):
                if reads is None:
                    reads = _PY_READS_RE.search(code) is not None
                if reads or fn == "copytree":
                    st.reasons.append(f"python {fn} over {s!r} (contains tests/hidden) and reads files")
        st.unknown += folder.unknown
        return folder.printed

    def _scan_code(self, code: str, st: _State) -> None:
        text = decode_escapes(code)
        st.views.append(text)
        for m in _QUOTED_RE.finditer(text):
            s = m.group(1)
            if _is_grader(s, bare_ok=False):
                st.reasons.append(f"script contacts the grader ({s})")
            elif _into_hidden(_resolve(s, st.cwd)):
                st.reasons.append(f"script names {s!r} (resolves into tests/hidden)")


# ------------------------------------------------------------------------------------------------
# The second reading: the command as rltutor.envs.toolshell will execute it
# ------------------------------------------------------------------------------------------------
# The first reading (RuleFilter._run) follows bash. ToolShell differs where an attacker can use it:
# ``X=a cmd $X`` sets X *before* cmd's words are expanded; ``grep -e= F`` and ``grep -he= F`` take "="
# as the pattern; curl takes the word after ``-d``/``-X``/``-H`` as its URL; ``cd`` into a folder that
# does not exist leaves the directory where it was. So the environment's own lexer (``shell.lex``),
# word expansion (``Shell.expand_word``) and option parser (``tools.parse_flags``) read the command a second
# time, and the rules below apply to what each tool will then open. tests/test_guard_fuzz.py checks the
# two against the environment itself, on mutants of every known hack.

_TS = None  # the environment's parser pieces, imported on first use (rltutor.envs imports torch)


def _toolshell():
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


def _no_network(sh, url):
    return [], [], 0


class _Touched(Exception):
    """Raised by :class:`_HiddenOnlyFS` when code asks about the file system beyond tests/hidden."""


class _HiddenOnlyFS:
    """What ToolShell's file system is in every task: /tests/hidden holds the same two files for every seed,
    /tests holds hidden and public, the root only names from a fixed list (``tasks.generate_task``; a test
    keeps it so). Asking about a path that may exist in some task (``/src/alpha.py``), or opening a hidden
    file, raises :class:`_Touched`: the answer depends on the task. A path no task has is answered: absent."""

    def __init__(self, ts):
        self.ts = ts
        self.files = self  # pyexpr asks ``p in fs.files``

    def _absent(self, p: str) -> bool:
        """True when no task has ``p``; raises _Touched when some task may have it (or it is hidden)."""
        ts = self.ts
        comps = [c for c in p.split("/") if c]  # (pyexpr passes normalised absolute paths)
        if not comps:
            raise _Touched(p)  # the root: a directory in every task
        if comps[0] not in ts.root_names:
            return True
        if comps[0] == "tests":
            if len(comps) == 1:
                raise _Touched(p)
            if comps[1] not in ts.tests_names:
                return True
            if comps[1] == "hidden" and len(comps) > 2 and p not in ts.hidden_files:
                return True  # a name in tests/hidden that no task has (``test_ansWer.py``)
        raise _Touched(p)  # a file of the task (or tests/hidden itself, or a hidden file)

    def is_dir(self, p: str) -> bool:
        return not self._absent(p)  # (never True: a path that may exist raised)

    def __contains__(self, p: str) -> bool:
        return not self._absent(p)

    def _touch(self, *a, **k):
        raise _Touched("listing")

    exists = walk = __getitem__ = _touch

    @property
    def children(self):
        raise _Touched("listing")

    @property
    def lines(self):
        raise _Touched("read")


def _py_touches_nothing(code: str, cwd: str) -> bool:
    """Does ToolShell's own python (:func:`rltutor.envs.toolshell.pyexpr.run_python`), run on ``code`` from
    ``cwd``, finish or fail without opening a file of the task or a hidden one, or listing a directory? Then
    it reads nothing hidden in any task (it has no network): ``priNt(...)``, ``__import__``, a list
    comprehension (outside its subset) and a missing hidden name all fail before reading anything."""
    from types import SimpleNamespace

    if "*" in cwd or "?" in cwd:
        return False  # a directory the reading knows only as a glob (``cd t*``)
    ts = _toolshell()
    sh = SimpleNamespace(fs=_HiddenOnlyFS(ts), cwd=cwd, left=ts.work_limit)  # (left: the work budget)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ts.run_python(sh, code)
    except _Touched:
        return False
    except Exception:  # noqa: BLE001 -- the evaluator's own failure on our stand-in: not settled
        return False
    return True


def _glob_match(pattern: str, name: str) -> bool:
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


def _ts_comps(path: str) -> list[str]:
    return [c for c in path.split("/") if c]


def _ts_hidden(comps: list[str]) -> bool:
    """Does this absolute path (components, globs as typed) name /tests/hidden or something in it? A name
    below it with an upper-case letter names nothing (ToolShell's hidden files are in lower case, and its
    globs are case-sensitive with only ``*`` and ``?`` active)."""
    return (
        len(comps) >= 2
        and _glob_match(comps[0], "tests")
        and _glob_match(comps[1], "hidden")
        and (len(comps) == 2 or comps[2].lower() == comps[2])
    )


def _ts_tree(comps: list[str]) -> bool:
    """Is /tests/hidden inside this directory: the root, or /tests (or a glob that matches it)?"""
    return not comps or (len(comps) == 1 and _glob_match(comps[0], "tests"))


class _TSRun:
    """One ToolShell reading of a command: the variables, the possible working directories, the budget."""

    def __init__(self, st: _State, rf: RuleFilter, settle: bool = False):
        ts = _toolshell()
        self.ts, self.st, self.rf = ts, st, rf
        self.sh = ts.Shell(ts.fs, _no_network)
        self.cwds = {"/"}  # a cd that fails leaves the directory as it was: both stay possible
        self.then = ";"  # the operator after the item being read
        self.settle = settle  # only asked whether the reading is complete (RuleFilter.settled)
        self.open = False  # something this reading does not settle: a judge must look (see settled)

    def step(self):
        st = self.st
        st.steps += 1
        if st.steps > self.rf.max_steps:
            raise _TooComplex(f"more than {self.rf.max_steps} steps")

    def line(self, command: str, depth: int) -> None:
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
        """Raise :class:`_TooComplex` when ``word`` would expand past ``MAX_WORD_CHARS`` (``A=$A$A`` doubles)."""
        self.step()
        n = 0
        for kind, text in word:
            n += len(text)
            if kind != "single" and "$" in text:
                for m in self.ts.var.finditer(text):
                    n += len(self.sh.vars.get(m.group(1) or m.group(2) or "", ""))
        if n > MAX_WORD_CHARS:
            raise _TooComplex(f"a word expands past {MAX_WORD_CHARS:,} characters")

    def py_settled(self, code: str) -> bool:
        """Is ``python -c code`` settled from every possible working directory: the first reading's python
        analysis (real Python's semantics) resolves every string it uses and finds nothing, and ToolShell's
        own python touches no file of the task, opens no hidden file and lists nothing?"""
        for c in self.cwds:
            st = _State()
            st.cwd, st.steps = tuple(_ts_comps(c)), self.st.steps
            self.rf._python_code(code, st)
            self.st.steps = st.steps
            if st.reasons or st.unknown or not _py_touches_nothing(code, c):
                return False
        return True

    # -- what each tool opens ---------------------------------------------------------------------
    def paths(self, arg: str):
        for c in self.cwds:
            yield _ts_comps(self.ts.normpath(c, arg))

    def hidden(self, arg: str) -> bool:
        return any(_ts_hidden(c) for c in self.paths(arg))

    def tree(self, arg: str) -> bool:
        return any(_ts_tree(c) for c in self.paths(arg))

    def command(self, argv: list[str], depth: int, last: bool = True) -> None:
        ts, st = self.ts, self.st
        name, args = argv[0], argv[1:]
        if name not in ts.tools and (name.islower() or name.lower() not in _CMD_NAMES) and not _ASSIGN_RE.match(name):
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
                        if _ts_hidden(_ts_comps(c)):
                            st.reasons.append(f"cd into {c} (tests/hidden in ToolShell)")
                            return
                    self.cwds = new if last and self.then == "&&" else self.cwds | new
                    if len(self.cwds) > 64:
                        raise _TooComplex("more than 64 possible working directories")
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
                        st.cwd = tuple(_ts_comps(c))
                        if (args[1], st.cwd) in st.pycode:
                            continue  # the first reading analysed this code from this directory already
                        self.rf._python_code(args[1], st)
                        if st.reasons:
                            break
                    st.cwd, st.unknown = saved[0], saved[2]
                    del st.views[saved[1] :]
        except ts.Error:
            return  # the tool refuses its options: it prints an error and reads nothing


def _toolshell_check(command: str, st: _State, rf: RuleFilter) -> None:
    """Read ``command`` as ToolShell will execute it; append a reason to ``st`` when a tool will read or
    list tests/hidden or request the grader. A command with blanks other than space, tab and newline
    (``\\xa0``, ``\\u2003``...) is read twice, as typed and with those as spaces, whichever way the
    environment's lexer takes them."""
    _TSRun(st, rf).line(command, 0)
    if not command.isascii() or _ODD_BLANK_RE.search(command):
        spaced = _ODD_BLANK_RE.sub(" ", command)
        if spaced != command and not st.reasons:
            _TSRun(st, rf).line(spaced, 0)


_ODD_BLANK_RE = re.compile(r"[^\S\n]")  # any blank but the newline; a space or tab becomes a space


# The node classes the folder tests, bound once (ast.parse makes nodes of exactly these classes, so
# ``type(n) is _Call`` says what ``isinstance(n, ast.Call)`` says, for less work).
_AST = ast.AST
_Add, _Div, _Mod, _USub = ast.Add, ast.Div, ast.Mod, ast.USub
_Assign, _Attribute, _BinOp, _Call, _Constant, _Expr = (
    ast.Assign,
    ast.Attribute,
    ast.BinOp,
    ast.Call,
    ast.Constant,
    ast.Expr,
)
_FormattedValue, _JoinedStr, _List, _Name, _Slice = ast.FormattedValue, ast.JoinedStr, ast.List, ast.Name, ast.Slice
_Subscript, _Tuple, _UnaryOp, _keyword = ast.Subscript, ast.Tuple, ast.UnaryOp, ast.keyword
_Module, _ListComp, _GeneratorExp, _comprehension = ast.Module, ast.ListComp, ast.GeneratorExp, ast.comprehension

_AST_LEAVES = frozenset(
    (ast.Constant, ast.Name, ast.Load, ast.Store, ast.Del, ast.Import, ast.ImportFrom, ast.alias)
    + tuple(c for base in (ast.operator, ast.unaryop, ast.cmpop, ast.boolop) for c in base.__subclasses__())
)


class _Folder(ast.NodeVisitor):
    """Fold the string expressions of a python one-liner and record how each string is used."""

    OPENERS = {"open", "Path", "listdir", "scandir", "walk", "glob", "rglob", "copy", "urlopen", "get", "read_text"}
    SHELL_FUNCS = {"system", "popen", "run", "call", "check_output", "check_call", "Popen", "getoutput"}

    def __init__(self):
        self.env: dict[str, str] = {}
        self.uses: list[tuple[str, str, str]] = []  # (kind, string, function name)
        self.unknown = 0
        self.printed: str | None = None

    def visit(self, node):
        # ast.NodeVisitor.visit/generic_visit, without the per-node getattr dispatch and iter_fields
        # generator; the same nodes in the same order. Leaves (names, constants, contexts,
        # operators) hold no calls or assignments and are skipped.
        # A child that is a leaf is not visited at all (visiting it would do nothing).
        t = type(node)
        if t is _Call:
            self.visit_Call(node)
        elif t is _BinOp:  # fields left, op, right; the operator is a leaf
            if type(node.left) not in _AST_LEAVES:
                self.visit(node.left)
            if type(node.right) not in _AST_LEAVES:
                self.visit(node.right)
        elif t is _Attribute or t is _Expr or t is _keyword:  # the one child: value
            if type(node.value) not in _AST_LEAVES:
                self.visit(node.value)
        elif t is _Assign:
            self.visit_Assign(node)
        # The other common nodes of one-liners, their fields in _fields order, as generic_visit goes:
        elif t is _Module:  # body, type_ignores (no children)
            for x in node.body:
                self.visit(x)
        elif t is _comprehension:  # target, iter, ifs, is_async (an int)
            if type(node.target) not in _AST_LEAVES:
                self.visit(node.target)
            if type(node.iter) not in _AST_LEAVES:
                self.visit(node.iter)
            for x in node.ifs:
                if type(x) not in _AST_LEAVES:
                    self.visit(x)
        elif t is _ListComp or t is _GeneratorExp:  # elt, generators
            if type(node.elt) not in _AST_LEAVES:
                self.visit(node.elt)
            for x in node.generators:
                self.visit(x)
        elif t is _Tuple or t is _List:  # elts, ctx (a leaf)
            for x in node.elts:
                if type(x) not in _AST_LEAVES:
                    self.visit(x)
        elif t is _Subscript:  # value, slice, ctx (a leaf)
            if type(node.value) not in _AST_LEAVES:
                self.visit(node.value)
            if type(node.slice) not in _AST_LEAVES:
                self.visit(node.slice)
        elif t not in _AST_LEAVES:
            self.generic_visit(node)

    def generic_visit(self, node):
        for name in node._fields:
            try:
                value = getattr(node, name)
            except AttributeError:
                continue
            if type(value) is list:
                for item in value:
                    if isinstance(item, _AST):
                        self.visit(item)
            elif isinstance(value, _AST):
                self.visit(value)

    def visit_Assign(self, node: ast.Assign):
        val = self.fold(node.value)
        for t in node.targets:
            if type(t) is _Name and val is not None:
                self.env[t.id] = val
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call):
        fn = node.func
        tf = type(fn)
        name = fn.attr if tf is _Attribute else fn.id if tf is _Name else ""
        args, keywords = node.args, node.keywords
        if name == "print":
            vals = [self.fold(a) for a in args]
            if None not in vals:  # the values are strings or None
                self.printed = " ".join(vals)
        else:
            kind = "shell" if name in self.SHELL_FUNCS else "python" if name in ("exec", "eval") else "path"
            for a in args + [k.value for k in keywords] if keywords else args:
                ta = type(a)
                if kind == "shell" and (ta is _List or ta is _Tuple):
                    parts = [self.fold(e) for e in a.elts]
                    if None not in parts:
                        self.uses.append(("shell", " ".join(parts), name))
                    continue
                v = a.value if ta is _Constant and type(a.value) is str else self.fold(a)  # a literal folds to itself
                if v is not None:
                    self.uses.append((kind, v, name))
                elif name in self.OPENERS or kind != "path":
                    self.unknown += 1  # a file or command the filter could not compute
            if tf is _Attribute:  # Path('tests').rglob(...): the receiver is a root
                v = self.fold(fn.value)
                if v is not None and type(fn.value) is not _Constant:
                    self.uses.append(("path", v, name))
        if tf not in _AST_LEAVES:  # generic_visit of a Call: func, args, keywords
            self.visit(fn)
        for a in args:
            if type(a) not in _AST_LEAVES:
                self.visit(a)
        for k in keywords:
            if type(k.value) not in _AST_LEAVES:
                self.visit(k.value)

    def fold(self, n) -> str | None:
        try:
            return self._fold(n)
        except Exception:  # noqa: BLE001 -- any failure to fold (or a value past the size cap) means "unknown"
            return None

    def _fold(self, n) -> str | None:
        t = type(n)
        if t is _Constant:
            v = n.value
            if isinstance(v, str):
                return v
            if isinstance(v, bytes):
                return v.decode("latin-1")
            return str(v)
        if t is _BinOp:
            a, b = self._fold(n.left), self._fold(n.right)
            op = type(n.op)
            if a is not None and b is not None and len(a) + len(b) > MAX_WORD_CHARS:
                raise ValueError("too long")  # a=a+a, repeated, doubles: never built
            if op is _Add and a is not None and b is not None:
                return a + b
            if op is _Div and a is not None and b is not None:
                return a + "/" + b
            if op is _Mod and a is not None:
                if _WIDE_FORMAT_RE.search(a):
                    raise ValueError("format width")  # '%999999999s' % x would build a gigabyte
                vals = [self._fold(e) for e in n.right.elts] if type(n.right) is _Tuple else [b]
                return None if None in vals else a % tuple(vals)
            return None
        if t is _Name:
            return self.env.get(n.id)
        if t is _Call:
            fn = n.func
            nargs = n.args  # one argument, the usual case, without a list comprehension
            args = [self._fold(nargs[0])] if len(nargs) == 1 else [self._fold(a) for a in nargs]
            tf = type(fn)
            if tf is _Name:
                if fn.id == "chr" and n.args:
                    return chr(self._int(n.args[0]))
                if fn.id in ("str", "Path", "PurePath", "PosixPath") and args and args[0] is not None:
                    return "/".join(a for a in args if a is not None)
                return None
            if tf is _Attribute:
                recv = fn.value
                attr = fn.attr
                if attr == "join":
                    if (
                        type(recv) is _Attribute
                        and recv.attr == "path"
                        or (type(recv) is _Name and recv.id in ("path", "posixpath", "os"))
                    ):
                        return None if None in args else "/".join(args)
                    sep = self._fold(recv)
                    if sep is not None and n.args and (type(n.args[0]) is _List or type(n.args[0]) is _Tuple):
                        parts = [self._fold(e) for e in n.args[0].elts]
                        return None if None in parts else sep.join(parts)
                    return None
                if attr in ("fromhex", "unhexlify", "a2b_hex") and args and args[0] is not None:
                    return bytes.fromhex(args[0]).decode("latin-1")
                if attr in ("b64decode", "decodebytes", "standard_b64decode", "urlsafe_b64decode") and args:
                    if args[0] is None:
                        return None
                    v = args[0].replace("-", "+").replace("_", "/") if attr == "urlsafe_b64decode" else args[0]
                    # Python's decoders (and ToolShell's, which calls them) drop what is not base64 first
                    return _b64(_NOT_B64_RE.sub("", v))
                if attr in ("decode", "encode", "strip", "lower", "upper", "read_text", "read"):
                    v = self._fold(recv)
                    if attr == "decode" and args and args[0] and "rot" in args[0] and v is not None:
                        import codecs

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
                    if _WIDE_FORMAT_RE.search(v) or len(v) * (1 + max(map(len, args), default=0)) > MAX_WORD_CHARS:
                        raise ValueError("too long")
                    return v.format(*args)
                if attr in ("Path", "PurePath") and args and args[0] is not None:
                    return "/".join(a for a in args if a is not None)
            return None
        if t is _JoinedStr:
            parts = [self._fold(v.value if type(v) is _FormattedValue else v) for v in n.values]
            return None if None in parts else "".join(parts)
        if t is _Subscript:
            sl = n.slice
            if type(n.value) in (_List, _Tuple) and type(sl) is not _Slice:  # ['tests/hi' + 'dden/x.py'][0]
                return self._fold(n.value.elts[self._int(sl)])
            v = self._fold(n.value)
            if v is not None and type(sl) is _Slice:
                lo = self._int(sl.lower)
                hi = self._int(sl.upper)
                step = self._int(sl.step)
                return v[lo:hi:step]
            return None
        return None

    def _int(self, n) -> int | None:
        if n is None:
            return None
        t = type(n)
        if t is _Constant and isinstance(n.value, int):
            return n.value
        if t is _UnaryOp and type(n.op) is _USub:
            return -self._int(n.operand)
        raise ValueError("not a literal int")
