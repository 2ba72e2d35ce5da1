"""A word-level vocabulary for the tool language, small enough for a tiny transformer (~400 tokens).

One token per word (a run of letters: a command, a flag's letters, a path component, an identifier),
one per digit (so every number is spelled digit by digit), and one per other character (``/``, ``|``,
``;``, quotes, ``$``, ``.``, ``=``, space, newline...). Words come from the task generator's fixed
lists plus the words of the tools' messages, so the transcripts of the scripted agents encode without
``<unk>``. A word outside the vocabulary becomes one ``<unk>`` (base64 text, for instance); so does a
character outside printable ASCII. ``decode(encode(t)) == t`` for any text without unknown words.

Special tokens: ``<pad>`` = 0, ``<eos>`` = 1 (end of a turn), ``<unk>``, ``<bos>``, ``<task>`` (the task
statement follows), ``<cmd>`` (the agent's tool call follows), ``<obs>`` (the observation follows).
Written literally in a text, a special token's name encodes to that token.
"""

from __future__ import annotations

import re
import string

from rltutor.envs.toolshell.tasks import CONSTANTS, DIRS, MODULES, PROJECTS

SPECIALS = ["<pad>", "<eos>", "<unk>", "<bos>", "<task>", "<cmd>", "<obs>"]
PAD, EOS, UNK, BOS, TASK, CMD, OBS = range(len(SPECIALS))

_CHARS = [c for c in string.punctuation] + [" ", "\n", "\t"]
_FLAG_CLUSTERS = "rn nr rl lr ri rni rnl rli rnw la al qO".split()
_OBFUSCATION = "hid den".split()  # halves of "hidden", so the split-variable hack is expressible
_WORDS = """
ANSWER AttributeError CODE COMMANDS Could DIR ERROR Errno Error FILE FileNotFoundError HOME ID Incorrect
IndexError Is IsADirectoryError MemoryError ModuleNotFoundError NameError No None Not PAGE PATH PATTERN PWD
PermissionError README RecursionError RuntimeError SyntaxError TARGET TOTAL The TypeError URL
UnicodeDecodeError VALUE ValueError WEIGHT WORDS True False
access adds after an and answer answers are args argument arguments as assert attribute available background by
bad base bash be bin binascii bytes call callable can cannot cat cd character chars closed command commands
config conftest control curl decode deeper def defined dev directory docs do double ds echo encode end
endpoints endswith error etc every exactly exists expected expression false file files find fixed fixtures flag
follow for formatting found from fs getcwd got grader grep has head here hidden home host http https import
imports in iname index indices int integers internal into invalid is it items iterable iterations its jobs
join key keyword lambda len levels limit lines list listdir local long loop lower lstrip ls md missing mode
module more must name named names near needs nesting never no not nothing null object of on one only open
operand option or os out over own pages pass passed passwd path pattern pipe pipeline plain please predicate
print printable public py pytest python quote range read readlines reading reads redirection reference regular
replace repr report repository requires resolve root route rstrip run runs secret see send sep set sets sh
shorter single small solution sorted split splitlines start startswith step str string strings strip
subscriptable submit submitted subpattern subset subshells substitution such sum supported syntax sys tail
takes target task terminal test tests text than the these this tmp to token too tool tools total true
truncated type types unary unclosed unexpected unknown unpack unsupported unterminated upper usage use used
usr value variable variables walk was wget with without writing written
""".split()


def _build() -> list[str]:
    words = [*DIRS, *MODULES, *CONSTANTS, *PROJECTS, *_FLAG_CLUSTERS, *_OBFUSCATION, *_WORDS, *string.ascii_letters]
    seen, out = set(), []
    for w in words:
        if w not in seen:
            seen.add(w)
            out.append(w)
    return [*SPECIALS, *_CHARS, *string.digits, *sorted(out)]


VOCAB: list[str] = _build()
"""Token id -> string. Stable as long as the word lists are."""
STOI: dict[str, int] = {s: i for i, s in enumerate(VOCAB)}
_TOKEN = re.compile(r"<(?:pad|eos|unk|bos|task|cmd|obs)>|[A-Za-z]+|.", re.S)


def tokenize(text: str) -> list[str]:
    """Text -> token strings (before the lookup): ``"cat src/a.py"`` -> ``cat, ' ', src, /, a, ., py``."""
    return _TOKEN.findall(text)


def encode(text: str) -> list[int]:
    """Text -> token ids; an unknown word or character becomes ``<unk>`` (never an error)."""
    if not isinstance(text, str):
        raise ValueError(f"encode takes a str, got {type(text).__name__}")
    get = STOI.get
    return [get(t, UNK) for t in _TOKEN.findall(text)]


def decode(ids) -> str:
    """Token ids -> text. ``<pad>`` is dropped; other special tokens are written by name."""
    if hasattr(ids, "tolist"):
        ids = ids.tolist()
    out = []
    n = len(VOCAB)
    for i in ids:
        if not isinstance(i, int) or not 0 <= i < n:
            raise ValueError(f"token id {i!r} is outside the vocabulary [0, {n}); was it encoded with another VOCAB?")
        if i != PAD:
            out.append(VOCAB[i])
    return "".join(out)
