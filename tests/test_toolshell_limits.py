"""ToolShell cannot be hung (issue 19, section 3): every call finishes within 1 s of CPU and 256 MB, raises
nothing and prints no host address, whatever its text.

The calls run in a child process under ``RLIMIT_AS`` and ``RLIMIT_CPU``. The address-space limit is the
child's own baseline plus 256 MB: the child imports the package and warms the environment up (torch comes
with ``rltutor``, so the baseline is about 640 MB of address space), reads its ``VmSize`` from
``/proc/self/status``, and only then sets the limit, so the 256 MB are what the calls may add, caches
included (all the calls of a batch share one process). Each call's CPU time is ``time.process_time``
around ``env.step``; ``RLIMIT_CPU`` stops a batch that hangs outright. The inputs: the calls listed in the
issue, then seeded generated ones (random Unicode, long repetitions, nested quantifiers, many stars,
brace groups, deep parentheses in ``python -c``, variable doublings, ``sh -c`` nesting, and mutations of
ordinary calls). Speed is measured in benchmarks/toolshell_speed.py, never here.
"""

import json
import os
import random
import re
import subprocess
import sys

import pytest

from rltutor.envs.toolshell import ToolShell
from rltutor.envs.toolshell import regex as rx_mod
from rltutor.envs.toolshell.fs import QMARK, STAR, WORK_LIMIT, glob_re

CPU_PER_CALL_S = 1.0
EXTRA_BYTES = 256 * 2**20

LISTED = [
    "echo xxxxxxxxxxxxxxxxxxxxxxxxx | grep -E '(x+x+)+y'",
    "echo " + "x" * 1900 + " | grep -E '(x+x+)+y'",
    "ls " + "*" * 32 + "Z",
    "find . -name '" + "*" * 32 + "Z'",
    "ls " + "*a" * 40 + "Z",
    "A=x;" + "A=$A$A;" * 30,
    "A=x;" + "A=$A$A;" * 34 + "echo $A",
    "python -c \"a='x'\nfor i in 'xxxxxxxxxxxxxxx': a=a+a\nb=a.join(a)\"",
    "python -c \"a='x'\nfor i in 'x'*15: a=a+a\nb=a.join(a)\"",
    "ls\xa0README.md",
    "ls\u2003README.md",
    "ls\x85README.md",
    "ls\u3000README.md",
    " " * 2001,
    "\xa0" * 2001,
    "python -c \"'\u00e9'.encode('ascii','nosuch')\"",
    'python -c "import os; print(os)"',
    "python -c \"import os, base64, sys; print(os, base64, sys, open('README.md'), [open('README.md')])\"",
]

# The child: one batch of calls in one process, under the limits. Prints a JSON summary.
CHILD = r"""
import json, re, resource, sys, time
from rltutor.envs.toolshell import ToolShell
spec = json.load(sys.stdin)
env = ToolShell(max_turns=10**9, **spec["knobs"])
for c in ["ls", "cat README.md", "grep -rn TARGET .", "grep -E 'a|b' README.md", "ls */*", "python -c 'print(1)'",
          "curl http://docs.local/tools", "sh -c 'ls'"]:
    env.step(c)  # warm up lazy imports and first allocations before the baseline is read
vm = int(re.search(r"VmSize:\s+(\d+) kB", open("/proc/self/status").read()).group(1)) * 1024
limit = vm + spec["extra_bytes"]
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
cpu = int(time.process_time()) + spec["cpu_s"]
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
addr = re.compile(r"0x[0-9a-f]{6,}")
worst, failures = [], []
for c in spec["calls"]:
    if env.done:
        env.reset()
    t = time.process_time()
    try:
        obs = env.step(c)[0]
        err = None
    except BaseException as e:
        obs, err = "", f"{type(e).__name__}: {e}"[:300]
    dt = time.process_time() - t
    worst = sorted(worst + [[dt, c[:120]]], reverse=True)[:5]
    bad = []
    if err:
        bad.append("raised " + err)
    if dt >= spec["cpu_per_call"]:
        bad.append(f"{dt:.2f} s of CPU")
    if addr.search(obs) and not addr.search(c):
        bad.append("host address: " + addr.search(obs).group())
    if "internal error" in obs:
        bad.append("internal error: " + obs[:200])
    if bad:
        failures.append([c[:200], bad])
peak = int(re.search(r"VmPeak:\s+(\d+) kB", open("/proc/self/status").read()).group(1)) * 1024
print(json.dumps({"n": len(spec["calls"]), "baseline_vm": vm, "peak_vm": peak, "limit": limit, "worst": worst,
                  "failures": failures}))
"""


def run_limited(calls, cpu_s=120, **knobs):
    """Run ``calls`` in a child under RLIMIT_AS (baseline + 256 MB) and RLIMIT_CPU; return its summary."""
    spec = {"calls": calls, "knobs": knobs, "extra_bytes": EXTRA_BYTES, "cpu_s": cpu_s, "cpu_per_call": CPU_PER_CALL_S}
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    p = subprocess.run(
        [sys.executable, "-c", CHILD], input=json.dumps(spec), capture_output=True, text=True, env=env, timeout=900
    )
    assert p.returncode == 0, f"the child died (rc {p.returncode}; -9/-24 is a limit): {p.stderr[-2000:]}"
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["n"] == len(calls)
    assert out["peak_vm"] <= out["limit"]
    return out


# ----------------------------------------------------------------------------------------------
# Generated nasty inputs
# ----------------------------------------------------------------------------------------------

_RANGES = [(0x20, 0x7E), (0x00, 0x1F), (0x7F, 0x9F), (0xA0, 0xFF), (0x2000, 0x206F), (0x3000, 0x303F),
           (0xD800, 0xDFFF), (0x4E00, 0x4E80), (0x1F600, 0x1F64F), (0x0300, 0x036F), (0xFFF0, 0xFFFF)]  # fmt: skip
_TOKENS = ["*", "?", "$A", "${A}", "{a,b}", "(", ")", "'", '"', "\\", "|", ";", "&&", "A=$A$A;", "../", "*/", "[",
           "]", "$", "#", "\n", "\t", " ", "\xa0", "`", "$(", "x", "-e", "-r", "=", "..", "/", "%", "\x00"]  # fmt: skip
_ORDINARY = ["ls", "cat README.md", "grep -rn TARGET .", "find . -name '*.py'", "cat t*/public/*.py | grep import",
             "X=README; cat $X.md | head -n 2", "python -c \"print(open('README.md').read())\"",
             "python -c 'import os; print(os.listdir(\".\"))'", "curl http://docs.local/tools", "sh -c 'ls docs'",
             "grep -rl WEIGHT src", "head -n 3 README.md", "pytest tests/public", "cd tests; pwd; cd .."]  # fmt: skip


def _unicode(rng, n):
    out = []
    for _ in range(n):
        lo, hi = rng.choice(_RANGES)
        out.append(chr(rng.randint(lo, hi)))
    return "".join(out)


_ATOMS = [
    "x",
    "a",
    ".",
    "[ab]",
    r"\w",
    r"\b",
    r"\B",
    "^",
    "$",
    r"\d",
    "y",
    "(a|a)",
    "é",
    "[^a]",
    r"\A",
    r"\Z",
    "(?i:A)",
]


def _regex(rng, depth=0, counts=("*", "+", "?", "{2,}", "{0,30}", "{1000}", "*?", "+?", "{99}"), atoms=_ATOMS, top=4):
    r = rng.random()
    if depth > top or r < 0.3:
        return rng.choice(atoms)
    if r < 0.5:
        return _regex(rng, depth + 1, counts, atoms, top) + _regex(rng, depth + 1, counts, atoms, top)
    if r < 0.65:
        return "(" + _regex(rng, depth + 1, counts, atoms, top) + "|" + _regex(rng, depth + 1, counts, atoms, top) + ")"
    return "(" + _regex(rng, depth + 1, counts, atoms, top) + ")" + rng.choice(counts)


def _nested_quantifier(rng):
    k = rng.randint(1, 12)
    body = rng.choice(["x+", "x*", "(x|x)", "x?x?", ".*", "[x]+", "(?:x{1,9})"])
    return "(" * k + body + ")" + ")".join(rng.choice("*+") for _ in range(k))[: k * 2] + rng.choice(["y", "$", ""])


def _python(rng):
    k = rng.randint(1, 400)
    big = "x" * rng.choice([1, 100, 5000, 60000 // 1000])
    return rng.choice(
        [
            "python -c 'print(" + "(" * k + "1" + ")" * k + ")'",
            "python -c 'print(" + "[" * k + "]" * k + ")'",
            "python -c 'a=[1]\nfor i in \"" + "x" * min(k, 900) + "\": a=[a,a]\nprint(len(str(a)))'",
            "python -c \"a='" + big + "'\nfor i in '" + "x" * min(k, 900) + "': a=a+a\nprint(len(a))\"",
            "python -c \"a='" + big + "'\nfor i in 'xxxxxxxxxxxxxxxxx': a=a+a\nb=a.join(a)\"",
            "python -c \"a='" + big + "'\nb=a.replace('', a)\nc=a.join([a, a, a])\"",
            "python -c \"a='x y'\nfor i in '" + "x" * min(k, 900) + "': a=a.split() + a.split()\nprint(sorted(a))\"",
            "python -c 'a=1\nfor i in \"" + "x" * min(k, 900) + "\": a=a+a\nprint(a)'",
            "python -c \"print(f'{" + "[" * min(k, 50) + "1" + "]" * min(k, 50) + "}')\"",
            'python -c "' + "a=open('README.md').read()\n" * min(k, 60) + "print(a.encode('idna'))\"",
            "python -c \"import os\nfor d in os.walk('.'): print(d, os, open('README.md'))\"",
            "python -c \"print('" + _unicode(rng, 20).replace("'", "").replace('"', "") + "'.encode('utf-7', 'x'))\"",
            "python -c \"print('a b'.split(' ', 10000000000000000000000000), 'ab'.find('a', -100000000000000))\"",
            'python -c "' + "".join(rng.choice("()[]{}'\",:;+-*/ abc\n") for _ in range(rng.randint(1, 300))) + '"',
        ]
    )


def _nasty(rng) -> str:
    kind = rng.randrange(12)
    if kind == 0:
        return _unicode(rng, rng.randint(1, 2000))
    if kind == 1:
        tok = rng.choice(_TOKENS)
        return (rng.choice(["", "echo ", "ls ", "cat ", "grep ", "A=x;"]) + tok * rng.randint(1, 2000))[:2000]
    if kind == 2:
        pat = _nested_quantifier(rng) if rng.random() < 0.5 else _regex(rng, atoms=[*_ATOMS, r"\1", "(?=a)"])
        src = rng.choice(["echo " + rng.choice("xa") * rng.randint(1, 1900) + " | ", "", "cat README.md | "])
        flags = rng.choice(["-E", "-rn", "-i", "-w", "-v", "-E -r"])
        return (src + f"grep {flags} '{pat}'" + ("" if src else " .")).replace("\n", "")
    if kind == 3:
        pat = "".join(
            rng.choice(["*", "?", "*?", "a", "*/", "t", "[", ".", "**", "*.py"]) for _ in range(rng.randint(1, 300))
        )
        tool = rng.choice(["ls ", "cat ", "find . -name '", "find . -iname '", "echo "])
        return tool + pat + ("'" if tool.startswith("find") else "")
    if kind == 4:
        return "echo " + "{a,b}" * rng.randint(1, 300) + rng.choice(["", " | grep a", "; ls {a,b}{c,d}"])
    if kind == 5:
        return _python(rng)
    if kind == 6:
        k = rng.randint(1, 60)
        tail = rng.choice(
            ["echo $A", "cat $A", "grep $A README.md", 'sh -c "$A"', "ls $A", "B=$A$A$A$A", "echo $A$A$A"]
        )
        return "A=" + rng.choice(["x", "'*/..'", "'grep -rn . .;'", "'ls;'", "'{a,b}'"]) + ";" + "A=$A$A;" * k + tail
    if kind == 7:
        inner = rng.choice(["ls", "grep -rn . .", "cat */*/*", "echo $A"])
        for _ in range(rng.randint(1, 6)):
            inner = "sh -c " + ("'" + inner.replace("'", "") + "'" if rng.random() < 0.5 else '"' + inner + '"')
        return inner + (";" + inner) * rng.randint(0, 5)
    if kind == 8:
        parts = [_nasty(rng)[:400] for _ in range(rng.randint(2, 5))]
        return "".join(p + rng.choice([";", "&&", "|", "\n"]) for p in parts)[:2000]
    if kind == 9:
        base = rng.choice(_ORDINARY)
        i = rng.randrange(len(base) + 1)
        j = min(len(base), i + rng.randint(0, 10))
        return (base[:i] + base[i:j] * rng.randint(1, 300) + _unicode(rng, rng.randint(0, 3)) + base[j:])[:2000]
    if kind == 10:
        q = "&".join(f"task={_unicode(rng, 3)}" for _ in range(rng.randint(1, 100)))
        url = rng.choice(
            ["http://grader/answer?", "http://docs.local/", "file:///etc/passwd?", "http://" + "a." * 300 + "/?"]
        )
        return rng.choice(["curl ", "wget -qO- ", "curl -d x -H y "]) + "'" + url + q.replace("'", "") + "'"
    pat = "".join(rng.choice(["*", "/", "..", "?", "a"]) for _ in range(rng.randint(1, 200)))
    return rng.choice(["cd ", "ls -R ", "pytest ", "head -n 1 ", "grep -rl x "]) + pat


def nasty_calls(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [_nasty(rng) for _ in range(n)]


# ----------------------------------------------------------------------------------------------
# The tests
# ----------------------------------------------------------------------------------------------


def test_listed_calls_are_bounded_and_clean():
    out = run_limited(LISTED + nasty_calls(300, seed=1))
    assert out["failures"] == [], out["failures"][:5]


def test_listed_calls_say_what_happened():
    env = ToolShell(seed=0, max_turns=10**9)

    def obs(c):
        return env.step(c)[0]

    assert obs("echo xxxxxxxxxxxxxxxxxxxxxxxxx | grep -E '(x+x+)+y'") == ""  # no match, and no hang
    assert obs("echo xxy | grep -E '(x+x+)+y'") == "xxy"
    assert obs("ls " + "*" * 32 + "Z") == "ls: cannot access '" + "*" * 32 + "Z': No such file or directory"
    assert obs("ls " + "*" * 32 + "E.md") == "README.md"
    assert "expansion too long (more than 100,000 characters in one word)" in obs("A=x;" + "A=$A$A;" * 34 + "echo $A")
    got = obs("python -c \"a='x'\nfor i in 'xxxxxxxxxxxxxxx': a=a+a\nb=a.join(a)\"")
    assert got == "python: MemoryError: value longer than 100000 items"
    assert obs("ls\xa0README.md") == "bash: ls\xa0README.md: command not found"  # as bash: only blank and tab split
    assert obs("ls\x85README.md") == "bash: syntax error: unexpected control character '\\x85'; send printable text"
    assert obs(" " * 2001).startswith("bash: command too long (2001 chars")
    assert (
        obs("python -c \"'\u00e9'.encode('ascii','nosuch')\"")
        == "python: LookupError: unknown error handler name 'nosuch'"
    )
    assert obs('python -c "import os; print(os)"') == "<module 'os'>"
    assert obs("python -c \"print(open('README.md'))\"") == (
        "<_io.TextIOWrapper name='README.md' mode='r' encoding='UTF-8'>"
    )


def test_generated_calls_on_a_small_repository():
    out = run_limited(nasty_calls(600, seed=2))
    assert out["failures"] == [], out["failures"][:5]


@pytest.mark.slow
def test_many_generated_calls_on_small_and_large_repositories():
    for seed, knobs in [(10, {}), (11, {"hops": 200, "distractors": 40, "kind": "sum"}), (12, {"hops": (3, 50)})]:
        out = run_limited(nasty_calls(1500, seed=seed), cpu_s=600, **knobs)
        assert out["failures"] == [], (knobs, out["failures"][:5])


def test_the_work_budget_stops_a_call_with_one_line():
    env = ToolShell(seed=0, max_turns=10**9)
    obs = env.step("A='grep -rn . .;'; A=$A$A; A=$A$A; A=$A$A; A=$A$A; A=$A$A; A=$A$A; " + 'sh -c "$A$A$A"; ls')[0]
    assert "sh: command too long" in obs
    obs, _, _, info = env.step("A=x;" + "A=$A$A;" * 16 + "B=$A;" * 40)
    assert f"ran out of its work budget ({WORK_LIMIT:,} steps)" in obs and info["error"]
    assert env.step("cat README.md")[0].startswith("# ")  # the next call has a fresh budget


def test_grep_automaton_agrees_with_re():
    """The linear-time matcher says "match" exactly when re.search does (random patterns and texts)."""
    rng = random.Random(0)
    checks = 0
    for _ in range(1000):
        pat = _regex(
            rng, counts=("*", "+", "?", "{2}", "{1,3}", "*?", "{0,2}?"), top=2
        )  # re, the reference, backtracks
        for flags in (re.M, re.M | re.I):
            try:
                ref = re.compile(pat, flags)
                m = rx_mod.Matcher(*rx_mod.parse(pat, flags))
            except (re.error, rx_mod.Unsupported):
                continue
            for _ in range(4):
                text = "".join(rng.choice("xayAXY é_1\n") for _ in range(rng.randrange(0, 14)))
                m.left = 10**9
                assert (m.search(text) is not None) == (ref.search(text) is not None), (pat, flags, text)
                checks += 1
    assert checks > 3000


def test_grep_refuses_what_it_cannot_bound():
    env = ToolShell(seed=0, max_turns=10**9)
    got = env.step("grep -E '(a*)\\1+b' README.md")[0]
    assert got.startswith("grep: backreferences are supported only in patterns without repetition or alternation")
    assert env.step("grep -E '(a)\\1' README.md")[1] == 0.0  # a backreference alone still runs on re
    assert env.step("grep -E '(x{1000}){1000}' README.md")[0].startswith("grep: pattern too large")
    got = env.step("echo " + "ab" * 900 + " | grep -E '(a|b)*a(a|b){300}c'")[0]
    assert got in ("", "grep: pattern too complex for this input; simplify '(a|b)*a(a|b){300}c' or use -F")


def test_glob_matcher_is_exact():
    """Segment-by-segment glob matching agrees with the backtracking regex on random patterns and names."""
    rng = random.Random(0)
    for _ in range(3000):
        pat = "".join(rng.choice([STAR, STAR, QMARK, "a", "b", "."]) for _ in range(rng.randint(1, 8)))
        ref = re.compile("".join(".*" if c == STAR else "." if c == QMARK else re.escape(c) for c in pat) + r"\Z", re.S)
        g = glob_re(pat)
        for _ in range(6):
            name = "".join(rng.choice("ab.") for _ in range(rng.randint(0, 9)))
            assert bool(g.match(name)) == bool(ref.match(name)), (pat, name)
