"""Rollout: collectors that turn a policy and an environment into the trainer's (B, T) batches.

* :mod:`rltutor.rollout.vector` -- :class:`~rltutor.rollout.vector.SegmentCollector` (PPO style) and
  :class:`~rltutor.rollout.vector.EpisodeCollector` (groups of G episodes) over vector environments;
* :mod:`rltutor.rollout.tokens` -- :class:`~rltutor.rollout.tokens.LMCollector`: prompts, G
  completions each, verifiable rewards, DAPO's refill;
* :mod:`rltutor.rollout.agent` -- :class:`~rltutor.rollout.agent.AgentCollector`: multi-turn agent
  episodes (G per task) in a tool environment, played by a chooser: the
  :class:`~rltutor.rollout.agent.TokenChooser` (a language model writes each command) or the
  :class:`~rltutor.rollout.templates.TemplateChooser` (:mod:`rltutor.rollout.templates`: a template
  policy picks each command among candidates); one row per sub-trajectory;
* :mod:`rltutor.rollout.text` -- :class:`~rltutor.rollout.text.TextCollector`: a Hugging Face causal LM
  (:mod:`rltutor.models.hf`) answering the text tasks of :mod:`rltutor.envs.text`, G completions each;
* :mod:`rltutor.rollout.context` -- the agent's :class:`~rltutor.rollout.context.Context` (token count
  and compaction under a budget, :class:`~rltutor.rollout.context.ContextSpec`) and its episode records;
  :mod:`rltutor.rollout.compaction` -- the compaction strategies and how the sub-trajectories of an
  episode get their rewards and groups.

The batch every collector returns and the trainer consumes is a ``dict`` of tensors with leading
dimension B, one *row* per episode, episode piece or completion, padded to a common length T:

==============  =====================  ==========================================================
key             shape, dtype           meaning
==============  =====================  ==========================================================
``actions``     (B, T) long            a_t (tokens o_t for a language model)
``logp``        (B, T) float           log pi_old(a_t | s_t), the behaviour log-probs
``mask``        (B, T) float 0/1       1 where the step (token) exists and is trained
``rewards``     (B, T) float           r_t; an outcome reward sits on the last valid step; a
                                       truncated row has gamma V(s_next) added to its last reward
``group_ids``   (B,) long              rows with one id form a group (GRPO's G answers)
``values``      (B, T) float           V_old(s_t) at collection (only when the policy has a critic)
``obs``         (B, T, obs_dim) float  observations, for MLP policies
``tokens``      (B, P + T) long        prompt and completion, for language models
``prompt_len``  (B,) long              P, where the completion starts in ``tokens``
==============  =====================  ==========================================================

A collector has ``collect(policy, generator) -> (batch, info)`` (a collector whose batch size depends
on the policy, the agent collector, also takes ``max_steps``: it starts no new round of turns beyond
that many env steps, and the trainer passes the budget left), ``state_dict()`` and
``load_state_dict(state)`` (checkpoints resume exactly) and ``evaluate(policy) -> dict`` (held-out
metrics the trainer logs every ``Config.eval_every`` updates; ``{}`` when there are none). ``info``
holds ``env_steps`` (int, what counts toward the budget), ``episode_returns`` and
``episode_lengths`` (lists, episodes finished in this collection) and ``metrics`` (a dict of floats
the trainer adds to its history row). A policy is an ``nn.Module`` with ``evaluate(batch) ->
{"logp", "entropy", "values" or None}`` for the stored actions and a bool ``has_critic``.
"""
