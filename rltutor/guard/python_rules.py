"""The rule filter's rules for ``python`` (chapter 12): ``python -m pytest``, ``python FILE`` and
``python -c CODE``, whose string expressions are folded (:class:`~rltutor.guard.pyfold.Folder`) and
each string then judged by how the code uses it: a path it opens or walks, a URL, a shell command, more
Python. Code that does not parse is scanned for its quoted strings, as for ``perl -e``.
"""

from __future__ import annotations

import ast
import re
import warnings

from .bash_reading import ReadingState
from .pyfold import Folder
from .shellparse import contains_hidden, cwd_may_hide, decode_escapes, drop_opts, into_hidden, is_grader, resolve

_PY_NET_RE = re.compile(r"urllib|requests|http\.client|socket|httpx|aiohttp")
_PY_READS_RE = re.compile(r"open|read|copy|cat |system|popen|subprocess|exec")
_QUOTED_RE = re.compile(r"['\"]([^'\"]+)['\"]")
_GLOB_CHARS_RE = re.compile(r"[*?\[]")
_PY_LITERAL_OPENERS = frozenset(("open", "Path", "read_text", "read", "listdir", "scandir", "exists"))  # no globbing
_PY_WALKERS = frozenset(("walk", "rglob", "iglob", "glob", "scandir", "copytree"))


class PythonRules:
    """The python part of :class:`~rltutor.guard.rules.RuleFilter` (which gives ``_run``, ``_path`` and
    ``_tree_reader``)."""

    def _python(self, args: list[str], st: ReadingState) -> str | None:
        if "-m" in args:
            i = args.index("-m")
            mod = args[i + 1] if i + 1 < len(args) else ""
            if mod == "pytest":
                self._tree_reader("pytest", drop_opts("pytest", args[i + 2 :]), st, default_cwd=True)
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

    def _python_code(self, code: str, st: ReadingState) -> str | None:
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
        folder = Folder()
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
            if "grader" in s.lower():  # else is_grader is False, whatever bare_ok is
                if net is None:
                    net = _PY_NET_RE.search(code) is not None
                if is_grader(s, bare_ok=net):
                    st.reasons.append(f"python contacts the grader ({s})")
                    continue
            if fn not in _PY_WALKERS:  # only "into tests/hidden" can fire; open() does not glob: "*" is a letter
                if "hidden" in s or st.cwd and cwd_may_hide(st.cwd):
                    comps = resolve(s, st.cwd)
                    if any(comps[i] == "tests" and comps[i + 1] == "hidden" for i in range(len(comps) - 1)):
                        st.reasons.append(f"python {fn}({s!r}) resolves into tests/hidden")
                    elif into_hidden(comps) and not (_GLOB_CHARS_RE.search(s) and fn in _PY_LITERAL_OPENERS):
                        st.reasons.append(f"python {fn}({s!r}) resolves into tests/hidden")
                continue
            comps = resolve(s, st.cwd)
            if into_hidden(comps):
                st.reasons.append(f"python {fn}({s!r}) resolves into tests/hidden")
            elif contains_hidden(comps):
                if reads is None:
                    reads = _PY_READS_RE.search(code) is not None
                if reads or fn == "copytree":
                    st.reasons.append(f"python {fn} over {s!r} (contains tests/hidden) and reads files")
        st.unknown += folder.unknown
        return folder.printed

    def _scan_code(self, code: str, st: ReadingState) -> None:
        text = decode_escapes(code)
        st.views.append(text)
        for m in _QUOTED_RE.finditer(text):
            s = m.group(1)
            if is_grader(s, bare_ok=False):
                st.reasons.append(f"script contacts the grader ({s})")
            elif into_hidden(resolve(s, st.cwd)):
                st.reasons.append(f"script names {s!r} (resolves into tests/hidden)")
