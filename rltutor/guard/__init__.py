"""The guard: cheap rules first, then a judge, in front of a tool-using environment (chapter 12).

>>> from rltutor.guard import Guard
>>> Guard.default().inspect("cat tests/hid''den/test_a.py").blocked
True

- :mod:`rltutor.guard.guard`: :class:`Guard` (rules, then a judge for suspicious calls), its
  :class:`Verdict`, and :func:`evaluate` (catch and false-block rates on a labelled set);
- :mod:`rltutor.guard.rules`: the rule filter, on :mod:`~rltutor.guard.shellparse` (the command read as
  a shell and as ToolShell read it) and :mod:`~rltutor.guard.pyfold` (``python -c`` one-liners folded);
  its first reading (as bash) is :mod:`~rltutor.guard.bash_reading`, its second (as ToolShell)
  :mod:`~rltutor.guard.toolshell_rules`, its python rules :mod:`~rltutor.guard.python_rules`;
- :mod:`rltutor.guard.judge`: the judges (an offline classifier, a language model);
  :mod:`rltutor.guard.judge_training` makes the classifier's data and weights;
- :mod:`rltutor.guard.wrapper`: :class:`~rltutor.guard.wrapper.GuardedEnv`, a verdict applied to an
  environment with a policy (:data:`~rltutor.guard.wrapper.POLICIES`); :mod:`rltutor.guard.decoys`
  writes the replies of the "decoy" policy;
- :mod:`rltutor.guard.fuzz`: the differential fuzzer (ToolShell labels every mutant).
"""

from .guard import EVAL_SET, Guard, Verdict, evaluate
from .rules import RuleFilter, RuleResult

__all__ = ["Guard", "Verdict", "evaluate", "RuleFilter", "RuleResult", "EVAL_SET"]
