"""grep's matcher: Python's regular-expression syntax, decided in bounded time whatever the pattern.

``grep`` only asks whether a line matches (``-o`` and ``-c`` are refused), so a line can be decided by
an automaton instead of Python's backtracking engine, which takes exponential time on patterns such as
``(x+x+)+y``. The semantics, in order:

1. The pattern is compiled by Python's ``re`` (same syntax, same error messages) and parsed by
   ``re``'s own parser into a tree.
2. A pattern with no repetition (``* + ? {m,n}``) and no alternation (``|``) cannot backtrack: each start
   position is tried once, in at most ``len(pattern)`` steps. It runs on ``re`` when
   ``len(pattern) * chars searched <= RE_STEPS``: every ordinary grep (``TARGET``, ``^- ``, ``==``).
3. Any other pattern runs on :class:`Matcher`: the tree becomes a Thompson NFA (counted repeats unrolled,
   at most ``MAX_NFA`` positions, else "pattern too large") simulated as a lazily built DFA, so each
   character of the text costs one cached table look-up, and a new DFA state costs one pass over the NFA
   (at most ``len(text) * MAX_NFA`` steps, never exponential). A line matches exactly when ``re`` would
   say so: greedy and lazy repeats match the same lines; ``^``/``$`` are per line (grep's ``re.M``),
   ``\\b \\B \\A \\Z``, classes, ``-i`` and inline flags are read from the same tree and tested with
   ``re`` itself on single characters.
4. What an automaton cannot decide (backreferences, lookarounds, possessive repeats and atomic groups,
   ``$`` under ``(?-m)``) is supported only in patterns of kind 2; with repetition or alternation, or
   on a text too long for rule 2, grep prints an error naming the construct and exits 2.
5. The work of one call is metered (``left``, in steps); a call that runs out prints "pattern too complex
   for this input" and exits 2. In practice that needs a pattern of hundreds of NFA positions whose
   DFA keeps growing: ``(a|b)*a(a|b){300}`` over kilobytes of random ``ab`` text.
"""

from __future__ import annotations

import re

try:  # Python >= 3.11
    import re._constants as _c
    import re._parser as _parser
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _parser  # type: ignore[no-redef]

MAX_NFA = 4000  # NFA positions after counted repeats are unrolled
RE_STEPS = 20_000_000  # len(pattern) * chars searched allowed on re's engine (about 0.1 s in the worst case)
MAX_STORED = 200_000  # NFA positions and transitions held in the DFA table before it is flushed
_CHAR, _SPLIT, _ASSERT, _MATCH = 0, 1, 2, 3
_CATEGORY = {
    _c.CATEGORY_DIGIT: r"\d",
    _c.CATEGORY_NOT_DIGIT: r"\D",
    _c.CATEGORY_SPACE: r"\s",
    _c.CATEGORY_NOT_SPACE: r"\S",
    _c.CATEGORY_WORD: r"\w",
    _c.CATEGORY_NOT_WORD: r"\W",
}
_LEAF_FLAGS = re.I | re.S | re.A | re.U
_BACKTRACKING = {"GROUPREF", "GROUPREF_EXISTS", "ASSERT", "ASSERT_NOT", "ATOMIC_GROUP", "POSSESSIVE_REPEAT"}
_NAMES = {
    "GROUPREF": "backreferences",
    "GROUPREF_EXISTS": "conditional groups",
    "ASSERT": "lookarounds",
    "ASSERT_NOT": "lookarounds",
    "ATOMIC_GROUP": "atomic groups",
    "POSSESSIVE_REPEAT": "possessive repeats",
}


class Unsupported(Exception):
    """The automaton cannot decide this pattern (the message names why)."""


class TooComplex(Exception):
    """A search ran out of its step budget."""


def kind(tree) -> tuple[bool, str | None]:
    """(no repetition or alternation anywhere, the first construct only ``re`` can match or None)."""
    simple, needs = True, None
    stack = [tree]
    while stack:
        for op, av in stack.pop():
            name = str(op)
            if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT", "BRANCH"):
                simple = False
            if name in _BACKTRACKING and needs is None:
                needs = _NAMES[name]
            if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                stack.append(av[2])
            elif name == "BRANCH":
                stack.extend(av[1])
            elif name == "SUBPATTERN":
                stack.append(av[3])
            elif name in ("ASSERT", "ASSERT_NOT"):
                stack.append(av[1])
            elif name == "ATOMIC_GROUP":
                stack.append(av)
            elif name == "GROUPREF_EXISTS":
                stack.extend(x for x in av[1:] if x is not None)
    return simple, needs


def _esc(code: int) -> str:
    return re.escape(chr(code))


def _leaf_source(op, av) -> str:
    name = str(op)
    if name == "LITERAL":
        return _esc(av)
    if name == "NOT_LITERAL":
        return "[^" + _esc(av) + "]"
    if name == "ANY":
        return "."
    parts, neg = [], ""
    for iop, iav in av:  # IN
        iname = str(iop)
        if iname == "NEGATE":
            neg = "^"
        elif iname == "LITERAL":
            parts.append(_esc(iav))
        elif iname == "RANGE":
            parts.append(_esc(iav[0]) + "-" + _esc(iav[1]))
        elif iname == "CATEGORY":
            parts.append(_CATEGORY[iav])
        else:  # pragma: no cover - the parser emits only these inside a class
            raise Unsupported(f"character class item {iname}")
    return "[" + neg + "".join(parts) + "]"


class Matcher:
    """A lazily built DFA for one parsed pattern: ``search(text)`` is True or None, like ``re.search`` is not None."""

    def __init__(self, tree, flags: int):
        self.kind: list[int] = []
        self.arg: list = []
        self.out: list[int] = []
        self.preds: list[re.Pattern] = []
        self._pred_ids: dict[tuple[str, int], int] = {}
        match = self._node(_MATCH, None, -1)
        self.start = self._seq(list(tree), match, flags)
        self._chars: dict[str, tuple] = {}  # char -> (class, tuple of predicate results)
        self.left = 0  # steps left in this call (set by the caller)
        self.flush()

    # -- building -----------------------------------------------------------------------------------
    def _node(self, kind: int, arg, out: int) -> int:
        if len(self.kind) >= MAX_NFA:
            raise Unsupported(f"pattern too large (more than {MAX_NFA} positions once repeats are unrolled)")
        self.kind.append(kind)
        self.arg.append(arg)
        self.out.append(out)
        return len(self.kind) - 1

    def _seq(self, items, nxt: int, flags: int) -> int:
        for op, av in reversed(items):
            nxt = self._item(op, av, nxt, flags)
        return nxt

    def _item(self, op, av, nxt: int, flags: int) -> int:
        name = str(op)
        if name in ("LITERAL", "NOT_LITERAL", "ANY", "IN"):
            key = (_leaf_source(op, av), flags & _LEAF_FLAGS)
            pid = self._pred_ids.get(key)
            if pid is None:
                pid = self._pred_ids[key] = len(self.preds)
                self.preds.append(re.compile(key[0], key[1]))
            return self._node(_CHAR, pid, nxt)
        if name == "BRANCH":
            return self._node(_SPLIT, [self._seq(list(alt), nxt, flags) for alt in av[1]], -1)
        if name == "SUBPATTERN":
            return self._seq(list(av[3]), nxt, (flags | av[1]) & ~av[2])
        if name in ("MAX_REPEAT", "MIN_REPEAT"):  # greedy and lazy repeats match the same lines
            lo, hi, body = av
            body = list(body)
            if hi == _c.MAXREPEAT:
                loop = self._node(_SPLIT, [], -1)
                self.arg[loop].extend([self._seq(body, loop, flags), nxt])
                cur = loop
            else:
                cur = nxt
                for _ in range(hi - lo):
                    cur = self._node(_SPLIT, [self._seq(body, cur, flags), nxt], -1)
            for _ in range(lo):
                cur = self._seq(body, cur, flags)
            return cur
        if name == "AT":
            at = str(av)
            if at in ("AT_BEGINNING", "AT_END") and not flags & re.M:
                raise Unsupported("'^' and '$' under (?-m)")
            word = "A" if flags & re.A else "U"
            return self._node(_ASSERT, {"AT_BOUNDARY": "b" + word, "AT_NON_BOUNDARY": "B" + word}.get(at, at), nxt)
        raise Unsupported(_NAMES.get(name, name.lower()))

    # -- searching ----------------------------------------------------------------------------------
    def flush(self) -> None:
        """Drop the cached DFA (kept small: it is rebuilt on demand)."""
        self._states: dict[tuple[frozenset, int], int] = {}
        self._sets: list[tuple[frozenset, int]] = []
        self._trans: list[dict[str, int]] = []
        self._end: list[bool | None] = []
        self._stored = 0
        self._state0 = self._intern(frozenset((self.start,)), -1)

    @property
    def size(self) -> int:
        """DFA states cached."""
        return len(self._sets)

    def _intern(self, positions: frozenset, prev: int) -> int:
        key = (positions, prev)
        sid = self._states.get(key)
        if sid is None:
            sid = self._states[key] = len(self._sets)
            self._sets.append(key)
            self._trans.append({})
            self._end.append(None)
            self._stored += len(positions)
        return sid

    def _char(self, ch: str) -> tuple:
        info = self._chars.get(ch)
        if info is None:
            if len(self._chars) >= 1024:
                self._chars.clear()
            self.left -= 2 * len(self.preds)  # one test of each predicate on a character not seen yet
            cls = (1 if re.match(r"\w", ch) else 0) | (2 if re.match(r"(?a)\w", ch) else 0) | (4 if ch == "\n" else 0)
            info = self._chars[ch] = (cls, tuple(p.fullmatch(ch) is not None for p in self.preds))
        return info

    def _closure(self, positions, prev: int, nxt: int) -> tuple[list[int], bool]:
        """The char positions reachable without consuming, between a char of class ``prev`` and one of ``nxt``."""
        kind, arg, out = self.kind, self.arg, self.out
        seen, stack, chars, matched = set(), list(positions), [], False
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            k = kind[n]
            if k == _CHAR:
                chars.append(n)
            elif k == _SPLIT:
                stack.extend(arg[n])
            elif k == _ASSERT:
                if _holds(arg[n], prev, nxt):
                    stack.append(out[n])
            else:
                matched = True
        self.left -= 3 * len(seen)
        if self.left < 0:
            raise TooComplex
        return chars, matched

    def _step(self, sid: int, ch: str) -> int:
        positions, prev = self._sets[sid]
        cls, hits = self._char(ch)
        chars, matched = self._closure(positions, prev, cls)
        if matched:
            t = -1
        else:
            nxt = {self.out[n] for n in chars if hits[self.arg[n]]}
            nxt.add(self.start)
            if self._stored > MAX_STORED:
                self.flush()
                sid = self._intern(positions, prev)
            t = self._intern(frozenset(nxt), cls)
        self._trans[sid][ch] = t
        self._stored += 1
        return t

    def search(self, text: str) -> bool | None:
        """True when some substring of ``text`` matches (None otherwise); costs ``len(text)`` steps and more."""
        self.left -= len(text)
        if self.left < 0:
            raise TooComplex
        sid, trans = self._state0, self._trans
        if not text:
            return self._final(sid, empty=True)
        for ch in text:
            t = trans[sid].get(ch)
            if t is None:
                t = self._step(sid, ch)
                trans = self._trans  # a flush replaces the table
            if t < 0:
                return True
            sid = t
        return self._final(sid)

    def _final(self, sid: int, empty: bool = False) -> bool | None:
        done = None if empty else self._end[sid]
        if done is None:
            positions, prev = self._sets[sid]
            done = self._closure(positions, -2 if empty else prev, -2 if empty else -1)[1]
            if not empty:
                self._end[sid] = done
        return True if done else None


def _holds(code: str, prev: int, nxt: int) -> bool:
    """Whether an assertion holds between char classes ``prev`` and ``nxt`` (-1: the text's edge, -2: empty text)."""
    if code == "AT_BEGINNING":
        return prev < 0 or bool(prev & 4)
    if code == "AT_BEGINNING_STRING":
        return prev < 0
    if code == "AT_END":
        return nxt < 0 or bool(nxt & 4)
    if code == "AT_END_STRING":
        return nxt < 0
    if prev == -2:  # re: \b and \B never match in an empty string
        return False
    bit = 2 if code[1] == "A" else 1
    boundary = (prev >= 0 and bool(prev & bit)) != (nxt >= 0 and bool(nxt & bit))
    return boundary if code[0] == "b" else not boundary


def parse(src: str, flags: int):
    """``re``'s parse tree of ``src`` and its global flags."""
    tree = _parser.parse(src, flags)
    return tree, tree.state.flags
