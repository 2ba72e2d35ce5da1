"""Models: the networks a policy is made of. They know no environment, collector or trainer.

* :mod:`rltutor.models.mlp` -- an MLP actor-critic for vector observations (chapters 02-05);
* :mod:`rltutor.models.gpt` -- TinyGPT, a small causal transformer with a KV cache (chapters 06-10);
* :mod:`rltutor.models.lm_policy` -- the sampler, log-probs of stored completions, and
  :class:`~rltutor.models.lm_policy.LMPolicy` with its optional critic;
* :mod:`rltutor.models.template_policy` -- :class:`~rltutor.models.template_policy.TemplatePolicy`, the
  agent of chapter 11 that scores (template, argument) candidates instead of writing commands.
"""

from rltutor.models.gpt import GPTConfig, TinyGPT
from rltutor.models.lm_policy import LMPolicy
from rltutor.models.mlp import MLPActorCritic
from rltutor.models.template_policy import TemplatePolicy

__all__ = ["MLPActorCritic", "GPTConfig", "TinyGPT", "LMPolicy", "TemplatePolicy"]
