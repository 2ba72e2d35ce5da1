#!/usr/bin/env bash
# Mutation testing of the math, the collectors' bootstrap and the trainer's update (not part of CI;
# see CONTRIBUTING.md and the "Mutation testing" section of benchmarks/README.md).
#
#   bash scripts/mutation.sh                  # every curated mutant below (~13 min on 2 busy cores)
#   bash scripts/mutation.sh kl_ vclip_       # only the mutants whose id starts with one of these
#   bash scripts/mutation.sh --check          # every anchor is found exactly once; runs no test
#   bash scripts/mutation.sh --mutmut [GLOB]  # mutmut's broad sweep in a throw-away copy (pip install mutmut)
#
# A mutant is one small, realistic bug (a flipped sign, a dropped mask, a wrong detach, clamp bounds
# swapped, an off-by-one in the bootstrap...), written below as an exact piece of source and its
# replacement. For each one the script writes the mutant into the working tree, runs the fast tests
# chosen for it (-x: it stops at the first failure) and puts the file back. The mutated files are
# copied aside first and restored by a trap on exit, Ctrl-C and kill, so an interrupted run leaves the
# tree as it found it (only a `kill -9` of this shell itself cannot be trapped: the originals then stay
# in /tmp/rltutor-mutation-orig.*, and `git checkout rltutor` also restores a committed tree). Each
# test run is a fork of one process that imported torch and pytest once, so a mutant costs seconds.
# A mutant no test notices "survives": it needs a test (tests/test_update_mutations.py) or a one-line
# reason (`why=`) saying why it changes nothing a reader sees. The table at the end gives each mutant's
# fate; the exit status is 1 when a survivor has no reason or an anchor is not found (after a change
# to the code, `--check` says which anchors to update).
# Environment: PYTHON (default .venv/bin/python, else python3), MUTATION_TABLE (where the table is
# also written; default /tmp/rltutor-mutation-table.txt), MUTATION_TIMEOUT (seconds per mutant, 300).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$PY" ] || PY="$(command -v python3)"

if [ "${1:-}" = "--mutmut" ]; then  # the broad, automatic sweep (the first runs used it)
  shift
  "$PY" -c "import mutmut" 2>/dev/null || { echo "mutmut missing: $PY -m pip install mutmut" >&2; exit 2; }
  WORK="${MUTATION_DIR:-$(mktemp -d /tmp/rltutor-mutation.XXXXXX)}"
  mkdir -p "$WORK/tests"
  cp -r "$ROOT/rltutor" "$WORK/"
  cp "$ROOT/pyproject.toml" "$WORK/"
  TESTS="tests/test_advantages.py tests/test_losses.py tests/test_math_inputs.py tests/test_update_mutations.py"
  for t in $TESTS; do cp "$ROOT/$t" "$WORK/tests/"; done
  {
    echo "[mutmut]"
    echo "source_paths = rltutor"
    printf 'only_mutate =\n    rltutor/advantages.py\n    rltutor/losses.py\n    rltutor/train.py\n'
    printf 'pytest_add_cli_args_test_selection =\n'; for t in $TESTS; do echo "    $t"; done
    printf 'pytest_add_cli_args =\n    -m\n    not slow and not book\n    -p\n    no:cacheprovider\n    -q\n'
  } > "$WORK/setup.cfg"
  if [ "$#" -eq 0 ]; then
    set -- 'rltutor.train.*update__mutmut_*' 'rltutor.advantages.x_gae__mutmut_*' \
           'rltutor.advantages.x_group_advantages__mutmut_*' 'rltutor.advantages.x_whiten__mutmut_*' \
           'rltutor.losses.x__ppo__mutmut_*' 'rltutor.losses.x_policy_loss__mutmut_*' \
           'rltutor.losses.x_value_loss__mutmut_*'
  fi
  cd "$WORK"
  export OMP_NUM_THREADS=1 PYTHONPATH="$WORK"
  "$PY" -m mutmut run --max-children "${MUTATION_JOBS:-2}" "$@" || true
  "$PY" -m mutmut results > "$WORK/results.txt" 2>&1 || true
  echo "survivors, from $WORK/results.txt:"
  grep ": survived" "$WORK/results.txt" || echo "none"
  echo "survived: $(grep -c ': survived' "$WORK/results.txt" || true)"
  echo "copy: $WORK   (cd there; $PY -m mutmut show NAME)"
  exit 0
fi

# The files a mutant may touch: copied aside now, put back by the trap whatever happens.
TARGETS="rltutor/train.py rltutor/losses.py rltutor/advantages.py rltutor/rollout/vector.py rltutor/rollout/compaction.py"
SAVE="$(mktemp -d /tmp/rltutor-mutation-orig.XXXXXX)"
for f in $TARGETS; do mkdir -p "$SAVE/$(dirname "$f")"; cp -p "$ROOT/$f" "$SAVE/$f"; done
restore() {
  local f bad=0
  for f in $TARGETS; do
    if ! cmp -s "$SAVE/$f" "$ROOT/$f"; then cp -p "$SAVE/$f" "$ROOT/$f"; echo "restored $f" >&2; fi
    cmp -s "$SAVE/$f" "$ROOT/$f" || bad=1
  done
  if [ "$bad" = 0 ]; then rm -rf "$SAVE"; else echo "COULD NOT RESTORE: the originals are in $SAVE" >&2; fi
}
trap restore EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

cd "$ROOT"
# PYTHONDONTWRITEBYTECODE: a mutant's bytecode must never be cached (two mutants of one size written
# in the same second would otherwise share a .pyc); the originals keep theirs, as cp -p keeps mtimes.
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 RLTUTOR_QUICK=1 MPLBACKEND=Agg PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH="$ROOT" MUTATION_SAVE="$SAVE" MUTATION_TARGETS="$TARGETS"
"$PY" - "$@" <<'PYTHON'
import os
import signal
import sys
import time

ROOT, SAVE = os.getcwd(), os.environ["MUTATION_SAVE"]
TARGETS = os.environ["MUTATION_TARGETS"].split()
TABLE = os.environ.get("MUTATION_TABLE", "/tmp/rltutor-mutation-table.txt")
TIMEOUT = int(os.environ.get("MUTATION_TIMEOUT", "300"))
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind through `finally` (restores the file)
signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started in the background
_pytest = None


def preload():
    """Import pytest and the heavy libraries once, here; each forked run then imports only rltutor, fresh."""
    global _pytest
    import importlib

    import pytest

    _pytest = pytest
    for mod in ("torch", "torch._dynamo", "torch.optim", "numpy", "tqdm", "hypothesis", "pandas", "gymnasium"):
        try:
            importlib.import_module(mod)
        except ImportError:
            pass
    import torch  # the first optimizer costs seconds (torch._dynamo, sympy): pay it once, here

    torch.optim.Adam([torch.zeros(1, requires_grad=True)], fused=True)
    assert not [m for m in sys.modules if m.split(".")[0] == "rltutor"], "each run must import rltutor itself"

# Fast test selections (seconds each, no learning test); a mutant names the ones that should notice it.
UPD = "tests/test_update_mutations.py"
TESTS = {
    "update": [UPD],
    "losses": ["tests/test_losses.py"],
    "adv": ["tests/test_advantages.py"],
    "inputs": ["tests/test_math_inputs.py"],
    "rollout": [
        "tests/test_rollout.py",
        f"{UPD}::test_segments_bootstrap_once_where_a_row_was_cut_at_the_segment_end_and_never_where_it_ended",
        f"{UPD}::test_episodes_cut_by_the_step_limit_are_bootstrapped_and_padding_earns_nothing",
    ],
    "compaction": ["tests/test_compaction.py"],
    "train": [
        "tests/test_train.py::test_reference_kl_in_reward_or_in_loss",
        "tests/test_train.py::test_dual_clip_and_asymmetric_clip_run",
        "tests/test_train.py::test_target_kl_stops_epochs_early",
        "tests/test_train.py::test_dynamic_sampling_drops_dead_groups",
    ],
}

MUTANTS = []


def M(id, file, old, new, tests, bug, why=None):
    """One mutant: in rltutor/``file`` the text ``old`` (found exactly once) becomes ``new``."""
    MUTANTS.append(dict(id=id, file="rltutor/" + file, old=old, new=new, tests=tests.split(), bug=bug, why=why))


T, L, A, V, C = "train.py", "losses.py", "advantages.py", "rollout/vector.py", "rollout/compaction.py"

# --- KL to the reference: in the reward, in the loss, each estimator ------------------------------
M("kl_reward_sign", T, "rewards = rewards - c.kl_coef * kl", "rewards = rewards + c.kl_coef * kl", "update",
  "KL added to the reward instead of subtracted")
M("kl_reward_coef", T, "rewards = rewards - c.kl_coef * kl", "rewards = rewards - kl", "update",
  "kl_coef ignored in the reward (beta = 1)")
M("kl_reward_mask", T, 'kl = kl_penalty(batch["logp"], ref_logp, c.kl_kind) * mask', 'kl = kl_penalty(batch["logp"], ref_logp, c.kl_kind)', "update",
  "KL not masked: padding gets a penalty and counts in kl_ref")
M("kl_reward_args", T, 'kl_penalty(batch["logp"], ref_logp, c.kl_kind)', 'kl_penalty(ref_logp, batch["logp"], c.kl_kind)', "update",
  "KL arguments swapped: KL(pi_ref || pi) estimated at pi's samples")
M("kl_reward_kind", T, 'kl_penalty(batch["logp"], ref_logp, c.kl_kind)', 'kl_penalty(batch["logp"], ref_logp)', "update",
  "kl_kind ignored in the reward (always k3)")
M("kl_ref_mean", T, 'metrics["kl_ref"] = float(kl.sum() / mask.sum())', 'metrics["kl_ref"] = float(kl.mean())', "update",
  "kl_ref logged as a mean over padding too")
M("kl_flag_inverted", T, "if c.kl_in_reward:", "if not c.kl_in_reward:", "update",
  "kl_in_reward inverted: in-loss runs also penalize the reward")
M("kl_both_paths", T, "if ref_logp is not None and not c.kl_in_reward:", "if ref_logp is not None:", "update",
  "KL-in-reward runs also add the KL to the loss")
M("kl_loss_sign", T, "loss = loss + c.kl_coef * aggregate(kl_penalty(", "loss = loss - c.kl_coef * aggregate(kl_penalty(", "update",
  "KL subtracted from the loss: the update pushes away from pi_ref")
M("kl_loss_coef", T, "loss = loss + c.kl_coef * aggregate(kl_penalty(", "loss = loss + aggregate(kl_penalty(", "update",
  "kl_coef ignored in the loss")
M("kl_loss_detach", T, 'kl_penalty(out["logp"], ref_logp[idx], c.kl_kind)', 'kl_penalty(out["logp"].detach(), ref_logp[idx], c.kl_kind)', "update",
  "KL term detached: logged but no gradient")
M("kl_loss_old_logp", T, 'kl_penalty(out["logp"], ref_logp[idx], c.kl_kind)', 'kl_penalty(mb["logp"], ref_logp[idx], c.kl_kind)', "update",
  "KL in the loss at the sampling policy's log-probs (a constant: no gradient)")
M("kl_loss_kind", T, 'kl_penalty(out["logp"], ref_logp[idx], c.kl_kind)', 'kl_penalty(out["logp"], ref_logp[idx])', "update",
  "kl_kind ignored in the loss (always k3)")
M("kl_loss_rows", T, 'kl_penalty(out["logp"], ref_logp[idx], c.kl_kind)', 'kl_penalty(out["logp"], ref_logp, c.kl_kind)', "update",
  "pi_ref's log-probs not indexed by the minibatch: rows misaligned")
M("kl_loss_agg", T, "ref_logp[idx], c.kl_kind), m, c.agg)", "ref_logp[idx], c.kl_kind), m)", "update",
  "KL in the loss reduced by token-mean, not the run's agg")
M("kl_batch_ref", T, 'ref_logp = batch.get("ref_logp")', "ref_logp = None", "update",
  "log pi_ref supplied by the batch ignored (recomputed from the frozen copy)",
  why="no shipped collector puts ref_logp in its batch (it is an undocumented hook for plug-in collectors), so nothing changes")
M("kl_ref_moves", T, "self.ref_policy = copy.deepcopy(self.policy).requires_grad_(False).eval()", "self.ref_policy = self.policy", "update",
  "pi_ref is the live policy, not a frozen copy")
M("kl_ref_grad", T, "copy.deepcopy(self.policy).requires_grad_(False).eval()", "copy.deepcopy(self.policy).eval()", "update",
  "pi_ref's parameters left trainable",
  why="equivalent: pi_ref is evaluated under torch.no_grad() and is not in the optimizer, so nothing changes")
M("kl_k3_is_k1", L, "return torch.exp(x) - x - 1.0", "return -x", "losses update",
  "k3 replaced by k1")
M("kl_k2_half", L, "return 0.5 * (logp - ref_logp) ** 2", "return (logp - ref_logp) ** 2", "losses update",
  "k2 without its 1/2")
M("kl_k1_sign", L, "return logp - ref_logp  # -log r", "return ref_logp - logp  # -log r", "losses update",
  "k1 sign flipped")
M("kl_k3_cap", L, "x = (ref_logp - logp).clamp(max=cap)", "x = (ref_logp - logp).clamp(min=-cap)", "losses",
  "k3's overflow cap applied on the wrong side")

# --- the value loss and its clip ---------------------------------------------------------------------
M("vclip_bounds", L, "torch.clamp(values - old_values, -clip, clip)", "torch.clamp(values - old_values, clip, -clip)", "losses update",
  "value-clip bounds swapped")
M("vclip_min", L, "loss_mat = torch.maximum(loss_mat, 0.5 * (v_clip - returns) ** 2)", "loss_mat = torch.minimum(loss_mat, 0.5 * (v_clip - returns) ** 2)", "losses update",
  "value clip takes the min (optimistic) instead of the max")
M("vclip_centre", L, "v_clip = old_values + torch.clamp", "v_clip = values + torch.clamp", "losses update",
  "value clipped around the new values, not the old ones")
M("vclip_unused", T, 'clip=c.vf_clip if "values" in mb else None', "clip=None", "update",
  "vf_clip never passed: no value clipping")
M("vclip_old_current", T, 'mb["values"] if "values" in mb else out["values"].detach()', 'out["values"].detach()', "update",
  "old values taken from the current critic: the clip never acts")
M("vclip_old_nodetach", T, 'else out["values"].detach(),', 'else out["values"],', "update",
  "fallback old values not detached",
  why="equivalent: the fallback is used only when the batch has no stored values, and then clip=None, so old_values is never read")
M("value_rows", T, "returns[idx],", "returns,", "update",
  "value targets not indexed by the minibatch: rows misaligned")
M("value_coef", T, "loss = loss + c.vf_coef * vl", "loss = loss + vl", "update",
  "vf_coef ignored")
M("value_sign", T, "loss = loss + c.vf_coef * vl", "loss = loss - c.vf_coef * vl", "update",
  "value loss subtracted")
M("value_agg", T, 'clip=c.vf_clip if "values" in mb else None,', 'clip=c.vf_clip if "values" in mb else None, agg=c.agg,', "update",
  "value loss reduced by the run's agg, not token-mean (implementation detail 3)")

# --- the ratio clip and the dual clip -------------------------------------------------------------
M("ratio_inverted", L, "ratio = torch.exp(logp - old_logp)  # rho_t", "ratio = torch.exp(old_logp - logp)  # rho_t", "losses",
  "ratio pi_old / pi instead of pi / pi_old")
M("clip_bounds", L, "pg2 = -advantages * torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high)", "pg2 = -advantages * torch.clamp(ratio, 1.0 - clip_high, 1.0 + clip_low)", "losses",
  "clip_low and clip_high swapped in the clamp")
M("clip_min", L, "loss = torch.maximum(pg1, pg2)  # = -min", "loss = torch.minimum(pg1, pg2)  # = -min", "losses",
  "optimistic max(rho A, clip A) instead of the pessimistic min")
M("clip_frac_ge", L, "clipped = pg2 > pg1", "clipped = pg2 >= pg1", "losses",
  "clip_frac counts unclipped tokens (>=)")
M("clip_high_ignored", T, "clip_high=c.clip_high,", "clip_high=c.clip_low,", "update train",
  "the trainer passes clip_low as clip_high (DAPO's clip-higher lost)")
M("ratio_on_policy", T, 'mb["logp"],', 'out["logp"].detach(),', "update",
  "old log-probs taken from the current policy: ratio always 1, never clipped")
M("dual_max", L, "capped = torch.minimum(loss, pg3)", "capped = torch.maximum(loss, pg3)", "losses",
  "dual clip takes the max: raises instead of caps")
M("dual_side", L, "loss = torch.where(advantages < 0, capped, loss)", "loss = torch.where(advantages > 0, capped, loss)", "losses",
  "dual clip applied to A > 0 instead of A < 0")
M("dual_cap_sign", L, "pg3 = -advantages * dual_clip", "pg3 = advantages * dual_clip", "losses",
  "dual cap at +c A instead of -c A")
M("dual_clipfrac", L, "clipped = clipped | ((advantages < 0) & (loss > pg3))", "clipped = clipped | (loss > pg3)", "losses update",
  "dual-clip count without its A < 0 condition")
M("dual_unused", T, "dual_clip=c.dual_clip,", "dual_clip=None,", "update train",
  "the trainer never passes dual_clip")
M("cispo_grad", L, "w = torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high).detach()", "w = torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high)", "losses",
  "CISPO's IS weight not detached")
M("gspo_grad", L, "log_sit = log_s.detach()[:, None] + logp - logp.detach()", "log_sit = log_s[:, None] + logp - logp.detach()", "losses",
  "GSPO's sequence ratio not detached")
M("gmpo_unsigned", L, "log_ratio_min = sign * torch.minimum(sign * log_ratio, sign * log_ratio_clip)", "log_ratio_min = torch.minimum(log_ratio, log_ratio_clip)", "losses update",
  "GMPO's clip not sign-aware")

# --- the policy-loss aggregation ------------------------------------------------------------------
M("agg_token_mean", L, "return _masked_mean(loss_mat, m)", "return loss_mat.mean()", "losses inputs",
  "token-mean over padding too (mean, not masked mean)")
M("agg_seq_mean", L, "per_seq = seq_sum / lengths.clamp(min=1.0)", "per_seq = seq_sum", "losses inputs",
  "seq-mean-token-mean without 1/|o_i|")
M("agg_norm_B", L, "per_seq = seq_sum / (float(loss_mat.shape[-1])", "per_seq = seq_sum / (float(loss_mat.shape[0])", "losses inputs",
  "Dr.GRPO's constant normalizer B instead of T")
M("agg_empty_rows", L, "return (per_seq * rows).sum() / n_rows", "return per_seq.mean()", "losses inputs update",
  "sequence means count rows without a valid token")
M("gmpo_empty_rows", L, "loss = per_seq[rows].mean()", "loss = per_seq.mean()", "losses update",
  "GMPO's mean counts rows without a valid token")
M("agg_unused", T, "agg=c.agg,", 'agg="token-mean",', "update",
  "the trainer ignores agg for the policy loss")
M("entropy_unmasked", T, 'entropy = aggregate(out["entropy"], m, c.agg)', 'entropy = out["entropy"].mean()', "update",
  "entropy averaged over padding too")
M("metrics_last", T, "metrics[k] = float(np.mean(v)) if v else", "metrics[k] = float(v[-1]) if v else", "update",
  "logged losses are the last minibatch's, not the mean")
M("grad_clip_unused", T, "max_norm = c.max_grad_norm if c.max_grad_norm is not None else math.inf", "max_norm = math.inf", "update",
  "max_grad_norm ignored")

# --- advantage whitening --------------------------------------------------------------------------
M("mbw_padding", T, "a = whiten(a, m)", "a = whiten(a, torch.ones_like(m))", "update",
  "minibatch whitening over padding")
M("mbw_batch_stats", T, "a = whiten(a, m)", "a = whiten(adv, mask)[idx]", "update",
  "minibatch whitening with the whole batch's mean and std")
M("mbw_skipped", T, 'if c.norm_adv == "minibatch" and m.sum() > 1:', 'if c.norm_adv == "batch" and m.sum() > 1:', "update",
  "minibatch whitening never applied")
M("mbw_one_token", T, 'if c.norm_adv == "minibatch" and m.sum() > 1:', 'if c.norm_adv == "minibatch" and m.sum() > 0:', "update",
  "a one-token minibatch is whitened (to 0) instead of kept")
M("bw_padding", T, "adv = whiten(adv, mask)", "adv = whiten(adv, torch.ones_like(mask))", "update",
  "batch whitening over padding")
M("whiten_mean", A, "mean = torch.where(valid, w, 0.0).sum() / n", "mean = w.mean()", "adv",
  "whiten's mean over padding too")
M("whiten_var", A, "var_z = (z**2).sum() / (n - 1).clamp(min=1)", "var_z = (z**2).sum() / n", "adv",
  "whiten's variance without Bessel's correction")

# --- GAE and the bootstrap of truncated rows --------------------------------------------------------
M("gae_next_mask", A, "next_value = torch.where(m, values[:, t], next_value)", "next_value = values[:, t]", "adv compaction",
  "GAE bootstraps from a masked step's value")
M("gae_carry_mask", A, "lastgaelam = torch.where(m, a_t, lastgaelam)", "lastgaelam = a_t", "adv",
  "GAE carries A_t through masked steps")
M("gae_lambda", A, "a_t = delta + gamma * lam * lastgaelam", "a_t = delta + gamma * lastgaelam", "adv",
  "GAE ignores lambda")
M("gae_gamma_v", A, "delta = rewards[:, t] + gamma * next_value - values[:, t]", "delta = rewards[:, t] + next_value - values[:, t]", "adv",
  "TD residual without gamma on V(s_t')")
M("gae_returns", A, "returns = advantages + values\n    _check_overflow(", "returns = advantages\n    _check_overflow(", "adv update",
  "GAE returns without + V (critic regresses on A)")
M("seg_trunc_obs", V, "rew_buf[t, truncated] += self.gamma * _value(policy, final_obs[truncated])", "rew_buf[t, truncated] += self.gamma * _value(policy, obs[truncated])", "rollout",
  "time-limit bootstrap from the next episode's first state, not s_T")
M("seg_trunc_done", V, "rew_buf[t, truncated] += self.gamma * _value(policy, final_obs[truncated])", "rew_buf[t, done] += self.gamma * _value(policy, final_obs[done])", "rollout",
  "terminated episodes bootstrapped too")
M("seg_end_mask", V, "rew_buf[-1, open_] += self.gamma * _value(policy, obs)[open_]", "rew_buf[-1] += self.gamma * _value(policy, obs)", "rollout",
  "segment-end bootstrap also on rows that ended at the last step")
M("seg_end_gamma", V, "rew_buf[-1, open_] += self.gamma * _value(policy, obs)[open_]", "rew_buf[-1, open_] += _value(policy, obs)[open_]", "rollout",
  "segment-end bootstrap without gamma")
M("ep_limit_off_by_one", V, "if t == self.max_steps - 1:", "if t == self.max_steps:", "rollout",
  "the collector's own step limit never counts as a truncation")
M("ep_limit_terminated", V, "truncated = truncated | (active & ~terminated)", "truncated = truncated | active", "rollout",
  "an episode that terminates at the step limit is bootstrapped")
M("ep_trunc_next_obs", V, "r[cut] += self.gamma * _value(policy, final_obs[cut])", "r[cut] += self.gamma * _value(policy, next_obs[cut])", "rollout",
  "episode bootstrap from the reset observation, not s_T")
M("ep_cut_inactive", V, "cut = truncated & active", "cut = truncated", "rollout",
  "rows already finished get a bootstrap on their padding")
M("comp_final", C, "r_last = r_last + torch.where(final, 0.0, gamma * v_next)", "r_last = r_last + gamma * v_next", "compaction",
  "an episode's last sub-trajectory bootstrapped from the next episode")
M("comp_same_row", C, "nxt = (rows + 1).clamp(max=R - 1)", "nxt = rows.clamp(max=R - 1)", "compaction",
  "compaction bootstrap from the row's own first state")

# --- the rest of the update -------------------------------------------------------------------------
M("ev_unmasked", T, "y, v = returns[m], values[m]", "y, v = returns.flatten(), values.flatten()", "update",
  "explained variance over padding too")
M("mb_drops_row", T, "idx = perm[start : start + mb_size]", "idx = perm[start : start + mb_size - 1]", "update",
  "each minibatch loses its last row")
M("target_kl_inverted", T, "np.mean(epoch_kl) > c.target_kl", "np.mean(epoch_kl) < c.target_kl", "train",
  "target_kl early stop inverted")
M("returns_unpenalized", T, "returns = discounted_returns(rewards, mask, c.gamma)", 'returns = discounted_returns(batch["rewards"], mask, c.gamma)', "update",
  "critic-free returns from the rewards before the KL penalty")


def select(argv):
    if not argv:
        return MUTANTS
    chosen = [m for m in MUTANTS if any(m["id"].startswith(p) for p in argv)]
    if not chosen:
        sys.exit(f"no mutant id starts with {argv}; ids: {', '.join(m['id'] for m in MUTANTS)}")
    return chosen


def source(m):
    with open(os.path.join(SAVE, m["file"]), encoding="utf-8") as f:  # always the saved original
        return f.read()


def anchor_problem(m):
    if m["file"] not in TARGETS:
        return f"{m['file']} is not in TARGETS (the trap could not restore it)"
    n = source(m).count(m["old"])
    return None if n == 1 else f"anchor found {n} times in {m['file']}: {m['old']!r}"


class FirstFailure:
    """A pytest plugin that remembers the first test (or collection) that failed."""

    first = ""

    def pytest_runtest_logreport(self, report):
        if report.failed and not self.first:
            self.first = report.nodeid

    def pytest_collectreport(self, report):
        if report.failed and not self.first:
            self.first = f"collecting {report.nodeid}"


def pytest(nodes):
    """Run the tests in a forked child (torch and pytest are imported once, in this parent; rltutor never is,
    so each child imports the mutated source). Returns (exit code or None on timeout, first failure)."""
    args = ["-x", "-q", "-p", "no:cacheprovider", "-m", "not slow and not book", *nodes]
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run pytest quietly, report the first failure through the pipe
        code = 3
        try:
            os.close(r)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            plugin = FirstFailure()
            code = int(_pytest.main(args, plugins=[plugin]))
            os.write(w, plugin.first.encode()[:4000])
        finally:
            os._exit(code)
    os.close(w)
    status = None
    try:
        deadline = time.time() + TIMEOUT
        while status is None:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = st
            elif time.time() > deadline:
                return None, "timeout"
            else:
                time.sleep(0.05)
        with os.fdopen(r, "rb") as f:
            first = f.read().decode()
        return os.waitstatus_to_exitcode(status), first
    finally:
        if status is None:  # timeout, Ctrl-C or kill: the child goes too
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def nodes_of(m):
    return list(dict.fromkeys(n for t in m["tests"] for n in TESTS[t]))


def main(argv):
    check = argv[:1] == ["--check"]
    chosen = select(argv[1:] if check else argv)
    problems = [(m["id"], p) for m in chosen if (p := anchor_problem(m))]
    for i, p in problems:
        print(f"{i}: {p}", file=sys.stderr)
    if check:
        print(f"{len(chosen) - len(problems)} of {len(chosen)} anchors found exactly once")
        return 1 if problems else 0
    preload()
    # Baseline: every selection must pass on the unmutated tree, or a "kill" would mean nothing.
    union = list(dict.fromkeys(n for m in chosen for n in nodes_of(m)))
    t0 = time.time()
    rc, first = pytest(union)
    if rc != 0:
        print(f"the tests fail WITHOUT any mutant ({first}); fix that first", file=sys.stderr)
        return 2
    print(f"baseline: {len(union)} selections pass unmutated ({time.time() - t0:.0f} s)", flush=True)
    rows = []
    for k, m in enumerate(chosen, 1):
        path = os.path.join(ROOT, m["file"])
        bad = anchor_problem(m)
        if bad:
            rows.append((m, "ANCHOR MISSING", bad))
            continue
        original = source(m)
        t1 = time.time()
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(original.replace(m["old"], m["new"], 1))
            rc, first = pytest(nodes_of(m))
        finally:
            with open(path, "w", encoding="utf-8") as f:
                f.write(original)
            os.utime(path, ns=(os.stat(os.path.join(SAVE, m["file"])).st_atime_ns,
                               os.stat(os.path.join(SAVE, m["file"])).st_mtime_ns))
        if rc == 0:
            fate = ("survived (listed)", m["why"]) if m["why"] else ("SURVIVED", "no test noticed; needs a test or a why=")
        elif rc is None:
            fate = ("killed (timeout)", f"over {TIMEOUT} s")
        else:
            fate = ("killed", first)
        if m["why"] and rc != 0:
            fate = (fate[0], fate[1] + "  [has a why= but was killed: drop the why]")
        rows.append((m, *fate))
        print(f"[{k}/{len(chosen)}] {m['id']}: {fate[0]} {fate[1]} ({time.time() - t1:.0f} s)", flush=True)
    w = max(len(m["id"]) for m, *_ in rows)
    lines = [f"{'mutant':<{w}}  {'where':<25}  {'fate':<17}  test / reason   (bug)"]
    for m, fate, detail in rows:
        lines.append(f"{m['id']:<{w}}  {m['file'][8:]:<25}  {fate:<17}  {detail}   ({m['bug']})")
    n_kill = sum(r[1].startswith("killed") for r in rows)
    n_list = sum(r[1] == "survived (listed)" for r in rows)
    n_bad = len(rows) - n_kill - n_list
    lines.append(f"{len(rows)} mutants: {n_kill} killed, {n_list} survived with a reason, {n_bad} need attention"
                 f" ({time.time() - t0:.0f} s)")
    text = "\n".join(lines)
    print("\n" + text)
    with open(TABLE, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    print(f"table written to {TABLE}")
    return 1 if n_bad else 0


try:
    sys.exit(main(sys.argv[1:]))
except KeyboardInterrupt:
    print("\ninterrupted: the mutated file was put back", file=sys.stderr)
    sys.exit(130)
PYTHON
