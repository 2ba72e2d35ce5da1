"""``rltutor export``: a run's settings in the names verl, TRL and slime actually read.

The names are checked against the real packages so that they cannot drift: TRL's ``GRPOConfig`` (and
``RLOOConfig``, ``GMPOConfig``) is built from the export (TRL 1.16.0, the test extra); every verl key is looked up
in ``verl/trainer/config/_generated_ppo_trainer.yaml`` of verl 0.9.1 (installed by scripts/setup.sh with
``--no-deps``, read with a YAML loader, verl never imported); slime is not on PyPI, so its flags are checked
against the parser's names pinned from its source in ``tests/data/slime_flags.tsv`` (see
``tests/data/slime_flags_extract.py`` for the commits). Also here: CITATION.cff names the package's version.
"""

import ast
import importlib.metadata
import importlib.util
import inspect
import json
import re
from pathlib import Path

import pytest
import yaml

import rltutor
from rltutor.cli import main
from rltutor.config import ALGORITHMS, DISTILL_ALGOS, LM_ALGOS, make_config, resolve
from rltutor.export import NEVER, TARGETS, TOPICS, export, format_export, load_config, table

ROOT = Path(__file__).resolve().parents[1]
SLIME_FLAGS = Path(__file__).parent / "data" / "slime_flags.tsv"
RUN_ALGOS = ("ppo", "grpo", "dapo")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Real runs of PPO, GRPO and DAPO on the addition task (one update each), as ``rltutor train`` writes them."""
    base = tmp_path_factory.mktemp("runs")
    out = {}
    for algo in RUN_ALGOS:
        d = base / algo
        args = ["train", "--algo", algo, "--env", "addition", "--steps", "64", "--out", str(d), "--no-progress"]
        assert main([*args, "--set", "sft_steps=1", "--checkpoint-every", "1"]) == 0
        out[algo] = d
    return out


def _configs():
    """Every preset on a token task and on CartPole, the agent, and KL in the loss and in the reward."""
    cfgs = {f"{a}-addition": resolve(a, "addition", "quick") for a in LM_ALGOS}
    cfgs |= {f"{a}-cartpole": make_config(a) for a in ALGORITHMS if a not in DISTILL_ALGOS}  # opd needs a teacher
    cfgs["ppo-toolshell"] = resolve("ppo", "toolshell", "quick")
    cfgs["grpo-kl-loss"] = resolve("grpo", "addition", "quick", sets=dict(kl_coef=0.04, kl_kind="k3"))
    cfgs["ppo-kl-reward"] = resolve("ppo", "addition", "quick", sets=dict(kl_coef=0.02, kl_in_reward=True))
    cfgs["ppo-dual-clip"] = resolve("ppo", "addition", "quick", sets=dict(dual_clip=3.0, vf_clip=0.2))
    cfgs["dapo-refill"] = resolve("dapo", "addition", "quick", sets=dict(max_draws=4))
    cfgs["grpo-opd-shift"] = resolve("grpo", "addition", "quick", sets=dict(teachers=("runs/add",), opd_coef=0.1))
    cfgs["opd"] = resolve("opd", "addition", "quick", sets=dict(teachers=("runs/add",)))
    return cfgs


CONFIGS = _configs()


# ---------------------------------------------------------------------------------------------- every target


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_field_of_a_run_is_exported_or_named(name, target):
    """No field is silently dropped: each is a setting of the target or named in a note."""
    ex = export(CONFIGS[name], target)
    assert ex.unaccounted() == []
    assert len({s.name for s in ex.settings}) == len(ex.settings), "a setting is exported twice"
    for line in ex.lines():
        if target == "slime":
            assert line.startswith("#") or re.fullmatch(r"--[a-z0-9-]+(=\S+)?", line), line
        else:
            assert line.startswith("#") or re.fullmatch(r"\+?[A-Za-z0-9_.]+=\S.*", line), line


@pytest.mark.parametrize("algo", RUN_ALGOS)
def test_the_command_exports_a_ppo_a_grpo_and_a_dapo_run(runs, algo, capsys):
    for target in TARGETS:
        for path in (runs[algo], runs[algo] / "config.json"):  # a run folder or its config.json
            assert main(["export", "--to", target, str(path)]) == 0
            out = capsys.readouterr().out
            assert out == format_export(export(load_config(path), target), origin=str(path))
    cfg = load_config(runs[algo])
    assert cfg.algo == algo and cfg.to_dict() == json.loads((runs[algo] / "config.json").read_text())
    verl = export(cfg, "verl").kwargs()
    assert verl["actor_rollout_ref.rollout.n"] == cfg.group_size == 8
    assert verl["algorithm.adv_estimator"] == {"ppo": "gae", "grpo": "grpo", "dapo": "grpo"}[algo]
    assert verl["critic.enable"] is (algo == "ppo")
    assert verl["algorithm.filter_groups.enable"] is (algo == "dapo")
    assert verl["actor_rollout_ref.actor.clip_ratio_high"] == (0.28 if algo == "dapo" else 0.2)
    slime = export(cfg, "slime").kwargs()
    assert slime["--advantage-estimator"] == {"ppo": "ppo", "grpo": "grpo", "dapo": "grpo"}[algo]
    assert ("--calculate-per-token-loss" in slime) is (cfg.agg == "token-mean")


def test_a_ppo_run_exports_to_trl_with_a_line_saying_it_has_no_ppo_trainer(runs, capsys):
    ex = export(load_config(runs["ppo"]), "trl")
    assert ex.settings == [] and ex.trainer == ""
    assert any("no PPO trainer" in n.text for n in ex.missing())
    main(["export", "--to", "trl", str(runs["ppo"])])
    out = capsys.readouterr().out
    assert "# no equivalent: critic, estimator: TRL 1.16 has no PPO trainer" in out
    assert not [line for line in out.splitlines() if not line.startswith("#")]


def test_off_switches_the_target_lacks_become_bounds_that_never_bind():
    """verl always applies dual clip and value clipping: "off" is a bound too large to bind, said in a note."""
    c = CONFIGS["ppo-addition"]
    assert c.dual_clip is None and c.vf_clip is None
    kw = export(c, "verl").kwargs()
    assert kw["actor_rollout_ref.actor.clip_ratio_c"] == NEVER and kw["critic.cliprange_value"] == NEVER
    kw = export(CONFIGS["ppo-dual-clip"], "verl").kwargs()
    assert kw["actor_rollout_ref.actor.clip_ratio_c"] == 3.0 and kw["critic.cliprange_value"] == 0.2


def test_a_critic_warmup_maps_to_verls_and_slimes_critic_only_steps():
    """verl's trainer.critic_warmup and slime's --num-critic-only-steps: the first steps update the critic alone."""
    c = resolve("ppo", "addition", "quick", sets={"critic_warmup": 3})
    assert export(c, "verl").kwargs()["trainer.critic_warmup"] == 3
    assert export(c, "slime").kwargs()["--num-critic-only-steps"] == 3
    off = export(CONFIGS["ppo-addition"], "verl").kwargs()
    assert "trainer.critic_warmup" not in off


def test_kl_goes_where_the_run_puts_it():
    loss, reward = CONFIGS["grpo-kl-loss"], CONFIGS["ppo-kl-reward"]
    v = export(loss, "verl").kwargs()
    assert v["actor_rollout_ref.actor.use_kl_loss"] is True and v["algorithm.use_kl_in_reward"] is False
    assert v["actor_rollout_ref.actor.kl_loss_coef"] == 0.04 and v["actor_rollout_ref.actor.kl_loss_type"] == "k3"
    v = export(reward, "verl").kwargs()
    assert v["algorithm.use_kl_in_reward"] is True and v["actor_rollout_ref.actor.use_kl_loss"] is False
    assert v["algorithm.kl_ctrl.kl_coef"] == 0.02 and v["algorithm.kl_penalty"] == reward.kl_kind
    t = export(loss, "trl").kwargs()
    assert t["beta"] == 0.04 and t["use_bias_correction_kl"] is False
    s = export(loss, "slime").kwargs()
    assert s["--use-kl-loss"] is True and s["--kl-loss-coef"] == 0.04 and "--kl-coef" not in s
    s = export(reward, "slime").kwargs()
    assert s["--kl-coef"] == 0.02 and "--use-kl-loss" not in s


def test_bad_input_is_one_clear_line(tmp_path, capsys):
    assert main(["export", "--to", "verl", str(tmp_path / "nowhere")]) == 2
    assert "no such run folder or config.json" in capsys.readouterr().err
    assert main(["export", "--to", "verl", str(tmp_path)]) == 2
    assert "holds no config.json" in capsys.readouterr().err
    (tmp_path / "config.json").write_text("{not json")
    assert main(["export", "--to", "trl", str(tmp_path)]) == 2
    assert "is not valid JSON" in capsys.readouterr().err
    (tmp_path / "config.json").write_text(json.dumps(make_config("grpo").to_dict()))
    assert main(["export", "--to", "openrlhf", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "unknown export target 'openrlhf'; valid: slime, trl, verl" in err and len(err.splitlines()) == 1
    assert main(["export", "--to", "", str(tmp_path / "nowhere")]) == 2  # the target is named before the path
    assert "unknown export target ''" in capsys.readouterr().err
    with pytest.raises(ValueError, match="rltutor Config"):
        export({"algo": "grpo"}, "verl")


# ---------------------------------------------------------------------------------------------- TRL


def _trl():
    return pytest.importorskip("trl", reason="TRL is in the test extra (pip install -e '.[test]'); not installed here")


def _trl_config(ex, tmp_path):
    trl = _trl()
    if ex.trainer == "trl.experimental.gmpo.GMPOConfig":
        from trl.experimental.gmpo import GMPOConfig as cls
    else:
        cls = getattr(trl, ex.trainer.removeprefix("trl."))
    # output_dir and use_cpu are this test machine's, not the run's settings
    return cls(output_dir=str(tmp_path), use_cpu=True, **ex.kwargs())


@pytest.mark.parametrize("algo", ["grpo", "dapo"])
def test_trl_builds_its_grpo_config_from_the_export_of_a_run(runs, algo, tmp_path):
    trl = _trl()
    assert trl.__version__ == "1.16.0", f"the export is checked against TRL 1.16.0, found {trl.__version__}"
    cfg = load_config(runs[algo])
    ex = export(cfg, "trl")
    assert ex.trainer == "trl.GRPOConfig"
    g = _trl_config(ex, tmp_path)
    assert g.num_generations == cfg.group_size and g.epsilon == cfg.clip_low and g.epsilon_high == cfg.clip_high
    assert g.generation_batch_size == cfg.num_groups * cfg.group_size  # one generation batch per update
    assert g.num_iterations == cfg.epochs and g.beta == 0.0 and g.learning_rate == cfg.lr
    assert g.loss_type == {"grpo": "grpo", "dapo": "dapo"}[algo]  # seq-mean-token-mean, token-mean


@pytest.mark.parametrize("algo", [a for a in LM_ALGOS if a != "ppo"])
def test_every_trl_value_is_one_its_trainer_reads(algo, tmp_path):
    """TRL does not check loss_type or scale_rewards when the config is built: look them up in the trainer."""
    _trl()
    from trl.trainer.grpo_trainer import GRPOTrainer

    ex = export(CONFIGS[f"{algo}-addition"], "trl")
    if algo == "reinforce_pp":  # one completion per prompt: TRL's GRPO needs two
        assert any("num_generations >= 2" in n.text for n in ex.missing())
        return
    _trl_config(ex, tmp_path)
    kw, trainer = ex.kwargs(), inspect.getsource(GRPOTrainer)
    for key in ("loss_type", "scale_rewards", "importance_sampling_level"):
        if key in kw:
            assert f'"{kw[key]}"' in trainer, f"{key}={kw[key]!r} is not a value GRPOTrainer compares against"


# ---------------------------------------------------------------------------------------------- verl


@pytest.fixture(scope="module")
def verl_yaml():
    """verl 0.9.1's generated PPO trainer config, read as YAML (verl itself is never imported)."""
    try:
        version = importlib.metadata.version("verl")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("verl is not installed; scripts/setup.sh installs verl==0.9.1 with --no-deps")
    if version != "0.9.1":
        pytest.skip(f"the export is checked against verl 0.9.1, found {version}")
    root = Path(importlib.util.find_spec("verl").submodule_search_locations[0])  # finds, does not import
    with open(root / "trainer" / "config" / "_generated_ppo_trainer.yaml") as f:
        return yaml.safe_load(f), root


def _lookup(tree: dict, key: str):
    node = tree
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(part)
        node = node[part]
    return node


def _source_strings(path: Path, pattern: str) -> set[str]:
    return set(re.findall(pattern, path.read_text()))


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_verl_key_is_in_its_ppo_trainer_config(verl_yaml, name):
    tree, root = verl_yaml
    for s in export(CONFIGS[name], "verl").settings:
        if s.name.startswith("+"):  # a key the YAML lacks, which Hydra adds: it must be absent, its parent there
            key = s.name[1:]
            with pytest.raises(KeyError):
                _lookup(tree, key)
            assert isinstance(tree[key.split(".")[0]], dict)
            continue
        try:
            leaf = _lookup(tree, s.name)
        except KeyError as e:
            raise AssertionError(f"{s.name} is not a key of verl 0.9.1's PPO trainer config (no {e})") from None
        assert not isinstance(leaf, dict), f"{s.name} names a section, not a setting"
        if isinstance(leaf, bool):
            assert isinstance(s.value, bool), f"{s.name} is a boolean in verl, exported {s.value!r}"
        elif isinstance(leaf, int | float):
            assert isinstance(s.value, int | float) and not isinstance(s.value, bool), (s.name, s.value)
        elif isinstance(leaf, str) and not leaf.startswith("${"):
            assert isinstance(s.value, str), (s.name, s.value)


def test_verl_values_name_what_verl_registers(verl_yaml):
    _, root = verl_yaml
    algos = root / "trainer" / "ppo" / "core_algos.py"
    tree = ast.parse(algos.read_text())
    enum = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "AdvantageEstimator")
    estimators = {a.value.value for a in enum.body if isinstance(a, ast.Assign)}
    losses = _source_strings(algos, r'register_policy_loss\("([a-z_]+)"\)')
    kl = _source_strings(algos, r'kl_penalty (?:==|in) \(?"([a-z0-9_]+)"') | {"k1", "k2", "k3"}
    aggs = _source_strings(root / "workers" / "config" / "actor.py", r'(?m)^\s+"((?:token|seq)-[a-z-]+)",\s*$')
    assert {"gae", "grpo", "rloo"} <= estimators and {"vanilla", "gspo", "cispo"} <= losses and "token-mean" in aggs
    for cfg in CONFIGS.values():
        ex = export(cfg, "verl")
        if not ex.trainer:  # pure distillation: a recipe of its own, nothing exported
            assert cfg.estimator == "zero" and not ex.settings
            continue
        kw = ex.kwargs()
        assert kw["algorithm.adv_estimator"] in estimators
        assert kw["actor_rollout_ref.actor.policy_loss.loss_mode"] in losses
        assert kw["actor_rollout_ref.actor.loss_agg_mode"] in aggs
        for key in ("actor_rollout_ref.actor.kl_loss_type", "algorithm.kl_penalty"):
            assert kw.get(key, "k1") in kl


# ---------------------------------------------------------------------------------------------- slime


def _slime_flags() -> dict[str, tuple[str, list[str]]]:
    flags = {}
    for line in SLIME_FLAGS.read_text().splitlines():
        if line and not line.startswith("#"):
            flag, action, choices, _source = line.split("\t")
            flags[flag] = (action, choices.split(",") if choices else [])
    return flags


def test_the_pinned_slime_flags_are_slimes():
    flags = _slime_flags()
    assert "slime@624b824a898ab0ec1fcb4d373004c7f3852bf515" in SLIME_FLAGS.read_text().splitlines()[0]
    assert flags["--use-kl-loss"][0] == "store_true" and flags["--disable-grpo-std-normalization"][0] == "store_false"
    assert "cispo" in flags["--advantage-estimator"][1] and len(flags) > 700


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_slime_flag_is_one_its_parser_defines(name):
    flags = _slime_flags()
    for s in export(CONFIGS[name], "slime").settings:
        assert s.name in flags, f"{s.name} is not a flag of slime's parser (tests/data/slime_flags.tsv)"
        action, choices = flags[s.name]
        if action in ("store_true", "store_false"):
            assert s.value is True, f"{s.name} is a switch: exported only when set, printed bare"
        else:
            assert not isinstance(s.value, bool), f"{s.name} takes a value, got {s.value!r}"
            assert not choices or str(s.value) in choices, f"{s.name}={s.value} is not one of {choices}"


# ---------------------------------------------------------------------------------------------- citation


def test_citation_cff_parses_and_names_the_package_version():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0"
    assert cff["version"] == rltutor.__version__
    for key in ("message", "title", "authors", "license"):
        assert cff[key], f"CITATION.cff lacks {key}"
    assert all("name" in a or "family-names" in a for a in cff["authors"])
    assert cff["license"] == "MIT" and cff["preferred-citation"]["license"] == "CC-BY-4.0"  # the code's, the book's
    assert (ROOT / "LICENSE").exists() and "Attribution 4.0 International" in (ROOT / "LICENSE-text").read_text()


def test_the_chapters_table_has_a_row_per_topic_and_a_column_per_target():
    t = table(CONFIGS["dapo-addition"])
    assert list(t.index) == list(TOPICS) and list(t.columns) == list(TARGETS)
    assert "actor_rollout_ref.rollout.n=8" in t.loc["group size and batch", "verl"]
    assert t.loc["dynamic sampling", "trl"].startswith("no equivalent: dynamic sampling")
    assert "--calculate-per-token-loss" in t.loc["loss and aggregation", "slime"]
    assert all(isinstance(v, str) and v for v in t.to_numpy().ravel())


# ---------------------------------------------------------------------------------------------- distillation


def test_the_opd_shift_on_grpo_exports_to_slime_and_verl():
    """GRPO + the teacher's shift: slime's --use-opd --opd-type --opd-kl-coef, verl's distillation section with the
    k1 estimate as a policy-gradient term beside the task's loss, weighted by the shift's beta."""
    cfg = CONFIGS["grpo-opd-shift"]
    slime = export(cfg, "slime").kwargs()
    assert slime["--use-opd"] is True and slime["--opd-type"] == "megatron" and slime["--opd-kl-coef"] == 0.1
    verl = export(cfg, "verl").kwargs()
    D = "distillation.distillation_loss"
    assert verl["distillation.enabled"] is True
    assert verl[f"{D}.loss_mode"] == "k1" and verl[f"{D}.use_policy_gradient"] is True
    assert verl[f"{D}.use_task_rewards"] is True and verl[f"{D}.distillation_loss_coef"] == 0.1
    trl = export(cfg, "trl")
    assert any("DistillationTrainer" in n.text and "opd_coef" in n.source for n in trl.notes)


def test_the_trl_names_of_the_distillation_notes_are_trls():
    """The export's TRL notes name trl.DistillationConfig's beta (default 1.0: reverse KL) and the top-k fields of
    ServerDistillationConfig; fails if TRL moves or renames them."""
    pytest.importorskip("trl")
    import dataclasses

    from trl import DistillationConfig
    from trl.experimental.server_distillation import ServerDistillationConfig

    fields = {f.name: f for f in dataclasses.fields(DistillationConfig)}
    assert fields["beta"].default == 1.0
    server = {f.name for f in dataclasses.fields(ServerDistillationConfig)}
    assert {"loss_top_k", "loss_add_tail"} <= server
    assert "loss_top_k" not in fields
