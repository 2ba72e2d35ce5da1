"""Write tests/data/slime_flags.tsv: the command-line flags of slime's parser, read from its source without running it.

slime is not on PyPI (the PyPI package named ``slime`` is unrelated), so tests/test_export.py checks the slime
export against this pinned list. slime's parser is Megatron-LM's ``parse_args`` with slime's own arguments added
(``slime/utils/arguments.py``, some re-registered with ``reset_arg``); the list holds both, from the commits in
COMMITS. Regenerate (the two repositories cloned side by side, at those commits)::

    python tests/data/slime_flags_extract.py SLIME_REPO MEGATRON_REPO > tests/data/slime_flags.tsv

Each row: flag, its argparse action (store, store_true, store_false), its choices (comma-separated, or empty),
and the file it comes from.
"""

import ast
import sys
from pathlib import Path

COMMITS = {
    "THUDM/slime": "624b824a898ab0ec1fcb4d373004c7f3852bf515",
    "NVIDIA/Megatron-LM": "d98e8a64ddf34856e74b24714e3bedb2f5a39553",
}
SLIME_FILE = "slime/utils/arguments.py"
MEGATRON_ARGS = "megatron/training/arguments.py"
MEGATRON_CONFIG = "megatron/training/config/training_config.py"
"""the dataclasses (TrainingConfig, SchedulerConfig...) whose fields Megatron's ArgumentGroupFactory turns into
flags: --name-with-dashes; a bool defaulting to True becomes --no-name and --disable-name (store_false)"""


def _literal(node):
    return node.value if isinstance(node, ast.Constant) else None


def argparse_flags(path: Path):
    """(flag, action, choices) of every add_argument(...) / reset_arg(parser, ...) call with literal names."""
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
        if name == "add_argument":
            names = [_literal(a) for a in node.args]
        elif name == "reset_arg":
            names = [_literal(a) for a in node.args[1:2]]
        else:
            continue
        kw = {k.arg: k.value for k in node.keywords}
        action = _literal(kw["action"]) if "action" in kw else "store"
        choices = kw.get("choices")
        ch = ",".join(str(_literal(e)) for e in choices.elts) if isinstance(choices, ast.List | ast.Tuple) else ""
        for flag in names:
            if isinstance(flag, str) and flag.startswith("--"):
                yield flag, action or "?", ch


def dataclass_flags(path: Path):
    """The flags ArgumentGroupFactory makes of the annotated fields of every class in ``path``."""
    for cls in ast.parse(path.read_text()).body:
        if not isinstance(cls, ast.ClassDef):
            continue
        for st in cls.body:
            if not (isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)):
                continue
            field, ann = st.target.id, ast.unparse(st.annotation)
            flag = "--" + field.replace("_", "-")
            default = _literal(st.value) if st.value is not None else None
            if ann == "bool" and default is True:
                yield "--no-" + field.replace("_", "-"), "store_false", ""
                yield "--disable-" + field.replace("_", "-"), "store_false", ""
            elif ann == "bool":
                yield flag, "store_true", ""
            else:
                ch = ""
                if isinstance(st.annotation, ast.Subscript) and ann.startswith("Literal["):
                    elts = st.annotation.slice.elts if isinstance(st.annotation.slice, ast.Tuple) else []
                    ch = ",".join(str(_literal(e)) for e in elts)
                yield flag, "store", ch


def main(slime: str, megatron: str) -> None:
    rows = {}
    for flag, action, ch in argparse_flags(Path(megatron) / MEGATRON_ARGS):
        rows[flag] = (action, ch, MEGATRON_ARGS)
    for flag, action, ch in dataclass_flags(Path(megatron) / MEGATRON_CONFIG):
        rows.setdefault(flag, (action, ch, MEGATRON_CONFIG))
    for flag, action, ch in argparse_flags(Path(slime) / SLIME_FILE):
        rows[flag] = (action, ch, SLIME_FILE)  # slime's own (and its reset_arg) win
    print(f"# slime's command-line flags: THUDM/slime@{COMMITS['THUDM/slime']} ({SLIME_FILE}) over the Megatron-LM")
    print(f"# parser it extends, NVIDIA/Megatron-LM@{COMMITS['NVIDIA/Megatron-LM']}; written by slime_flags_extract.py")
    print("# flag\taction\tchoices\tsource")
    for flag in sorted(rows):
        print(flag, *rows[flag], sep="\t")


if __name__ == "__main__":
    main(*sys.argv[1:3])
