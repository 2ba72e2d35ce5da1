"""The "forks" toolshell family (rltutor.envs.toolshell.forks): one-way forks, doom, K per budget, the agent."""

from collections import Counter

import pytest

from rltutor.config import TEMPLATE_TASKS
from rltutor.envs.toolshell import KINDS, TASK_KINDS, ToolShell, encode, scripted_solver
from rltutor.envs.toolshell.forks import FORKS_BUDGETS, FORKS_ENV, LEGACY_DIR, NOTICE, fork_positions
from rltutor.envs.toolshell.fs import FileSystem
from rltutor.envs.toolshell.tasks import generate_task
from rltutor.envs.toolshell.vocab import UNK
from rltutor.rollout.agent import play_scripted
from rltutor.rollout.context import ContextSpec
from rltutor.rollout.templates import Memory, TemplateChooser


def play(env, cmds):
    return [env.step(c) for c in cmds]


def test_forks_is_registered_for_the_template_agent_and_kept_out_of_the_generic_kinds():
    assert TEMPLATE_TASKS["forks"] == FORKS_ENV and FORKS_ENV["max_turns"] >= 16
    assert "forks" in TASK_KINDS and "forks" not in KINDS


@pytest.mark.parametrize("hops", [2, 5, 9, 14, 17])
def test_the_scripted_solver_takes_every_fork_live(hops):
    for seed in range(20):
        env = ToolShell(hops=hops, kind="forks", seed=seed, max_turns=hops + 10)
        play(env, scripted_solver(env))
        ep = env.episode
        assert ep["honest_solve"] and not ep["doomed"] and ep["turns"] == hops + 2, (seed, ep)
        assert ep["forks_taken"] == ["live"] * len(env.task.forks)


def test_forks_are_spread_and_decisive_calls_fall_in_different_sub_trajectories():
    assert fork_positions(14) == [0, 4, 9]  # decisive calls: the 3rd, 7th and 12th of 16
    env = ToolShell(**FORKS_ENV, seed=0)
    for K, apart in ((4, 2), (16, 3)):  # the first sub-trajectory is the longest (no summary yet)
        spec = ContextSpec(FORKS_BUDGETS[K], "summary", 2, 24, 128)
        env.reset(seed=1)
        ep = play_scripted(env, scripted_solver(env), spec=spec, chooser=TemplateChooser())
        segments = {ep.turn_segments[t - 1] for t in (3, 7, 12)}
        assert len(segments) == apart, (K, ep.turn_segments)


def test_a_dead_end_dooms_the_episode_and_no_later_call_reaches_the_answer():
    for seed in range(10):
        env = ToolShell(**{**FORKS_ENV, "max_turns": 100}, seed=seed)
        task = env.task
        f = task.forks[1]
        honest = scripted_solver(env)
        k = honest.index(f"cat {f['live']}")
        steps = play(env, honest[:k] + [f"cat {f['dead']}"])
        assert env.episode["doomed"] and env.episode["forks_taken"] == ["live", "dead", None]
        assert f["dead_line"] in steps[-1][0]
        # everything an agent could try afterwards: the rest of the chain, greps, the hidden test, the grader
        later = [f"cat {p}" for p in task.chain[1:]] + [
            "grep -rn = .",
            f"grep -rn {task.answer} .",
            "cat tests/hidden/*",
        ]
        later += [
            f"curl http://grader/answer?task={task.task_id}",
            "python -c \"print(open('tests/hidden/test_answer.py').read())\"",
        ]
        for c in later:
            obs, reward, done, _ = env.step(c)
            assert task.answer not in obs, (seed, c, obs)
        obs, reward, done, _ = env.step(f"submit {task.answer}")  # only a guess could still win
        assert env.episode["doomed"]


def test_taking_the_live_branch_removes_the_dead_end():
    env = ToolShell(**FORKS_ENV, seed=0)
    f = env.task.forks[0]
    play(env, ["cat README.md", f"cat {f['at']}", f"cat {f['live']}"])
    obs, *_ = env.step(f"cat {f['dead']}")
    assert obs == NOTICE.strip() and env.episode["forks_taken"][0] == "live" and not env.episode["doomed"]


def test_a_call_showing_both_branches_takes_the_dead_one():
    env = ToolShell(**FORKS_ENV, seed=0)
    f = env.task.forks[0]
    env.step(f"cat {f['live']} {f['dead']}")
    assert env.episode["forks_taken"][0] == "dead"


def test_locks_survive_a_state_round_trip():
    env = ToolShell(**FORKS_ENV, seed=4)
    f = env.task.forks[0]
    play(env, ["cat README.md", f"cat {f['dead']}"])
    twin = ToolShell(**FORKS_ENV, seed=99)
    twin.load_state_dict(env.state_dict())
    assert twin.episode["doomed"] and twin.step(f"cat {f['live']}")[0] == NOTICE.strip()


def test_every_file_and_reply_of_the_family_encodes_without_unk():
    for seed in range(30):
        task = generate_task(seed, 14, "forks")
        for path, text in task.files.items():
            assert UNK not in encode(text), (path, text)
        assert any(p.startswith(f"/{LEGACY_DIR}/") for p in task.files)
    env = ToolShell(**FORKS_ENV, seed=0)
    assert UNK not in encode(env.step("curl http://grader/answer?task=" + env.task.task_id)[0])
    assert UNK not in encode(NOTICE)


def test_bad_hops_for_the_family_raise_with_the_fix():
    with pytest.raises(ValueError, match="hops in \\[2, 17\\]"):
        ToolShell(hops=1, kind="forks")
    with pytest.raises(ValueError, match="hops=14"):
        generate_task(0, 18, "forks")


@pytest.mark.parametrize("K", sorted(FORKS_BUDGETS))
def test_each_budget_splits_an_honest_solve_into_K_rows_the_template_agent_can_follow(K):
    """The demonstrations play through the template chooser at every budget: each scripted command is one of
    its candidates (demo raises otherwise), also after 15 compactions."""
    env = ToolShell(**FORKS_ENV, seed=0)
    spec = ContextSpec(FORKS_BUDGETS[K], "summary", 2, 24, 128)
    Ks = Counter()
    for seed in range(25):
        env.reset(seed=seed)
        ep = play_scripted(env, scripted_solver(env), spec=spec, chooser=TemplateChooser())
        assert ep.reward == 1.0
        Ks[ep.turn_segments[-1] + 1] += 1
    assert Ks == Counter({K: 25}), Ks


def test_a_restart_reading_commands_marks_the_named_calls_used_and_ranks_the_fresh_ones_first():
    context = "<task>task t1: find TARGET\nstart with README.md<obs><unk>:\n"
    context += "cat a/b.py: from c.d import X\ncat c/d.py: X = 412"
    m = Memory("task", max_turns=24)
    m.restart(context, read_commands=True)
    assert m.used[("cat", "a/b.py")] == 1 and m.used[("cat", "c/d.py")] == 1 and m.files_read == 2
    order = m.candidates()
    assert order.index(("submit", "412")) < min(order.index(("cat", "README.md")), order.index(("ls", ".")))
    old = Memory("task", max_turns=24)
    old.restart(context)  # the older families' restart: nothing used, ties by template
    assert not old.used and old.candidates()[0][0] == "ls"


def test_the_chooser_reads_commands_only_in_the_forks_family():
    ch = TemplateChooser()
    envs = [ToolShell(**FORKS_ENV, seed=0), ToolShell(hops=3, seed=0)]
    ch.start([e.task.statement for e in envs], envs)
    assert ch.read_commands == [True, False]
    assert isinstance(envs[0]._fs, FileSystem)
