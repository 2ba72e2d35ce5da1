"""The token agent's curriculum warm start (rltutor.experiments.token_agent): order, reproducibility, summary."""

import pandas as pd
import pytest

from rltutor import datafiles
from rltutor.experiments import token_agent as ta


def test_curriculum_rises_one_hop_at_a_time_keeping_the_earlier_tasks():
    assert ta.curriculum((1, 2, 3)) == [(1, (1,)), (2, (1, 2)), (3, (1, 2, 3))]
    assert ta.curriculum((3, 1)) == [(1, (1,)), (3, (1, 3))]
    with pytest.raises(ValueError, match="positive hop counts"):
        ta.curriculum((0, 1))


def test_a_tiny_run_reproduces_exactly_and_reads_back(tmp_path):
    kw = dict(stage_steps=2, hops=(1, 2), eval_every=2, n_eval=2, n_demos=4, eval_turns=2)
    a, _ = ta.warm_start(0, **kw)
    b, _ = ta.warm_start(0, **kw)
    cols = [c for c in ta.COLUMNS if c != "cpu_s"]  # every number but the clock
    pd.testing.assert_frame_equal(a[cols], b[cols])
    assert list(a.columns) == list(ta.COLUMNS)
    assert a["stage"].tolist() == sorted(a["stage"]) and set(a["stage"]) == {0, 1, 2}
    assert set(a["mode"]) == {"greedy", "sample"} and (a["n"] == 2).all()
    out = tmp_path / "t.csv"
    assert ta.main(["--stage-steps", "1", "--eval-every", "1", "--n-eval", "1", "--out", str(out)]) == 0
    assert (tmp_path / "t.cmd").read_text().startswith("python -m rltutor.experiments.token_agent")
    s = ta.summary(pd.read_csv(out))
    assert ((s["low"] <= s["rate"]) & (s["rate"] <= s["high"])).all()


def test_the_stored_measurement_reads():
    df = pd.read_csv(datafiles.path("agents/token_agent.csv"))
    assert list(df.columns) == list(ta.COLUMNS)
    s = ta.summary(df)
    assert set(s["eval_hops"]) == set(ta.HOPS) and s["cpu_s"].max() <= 15 * 60
    assert datafiles.path("agents/token_agent.cmd").read_text().startswith("python -m rltutor.experiments.token_agent")
    from rltutor.cli import TOKEN_AGENT_NOTE

    assert ta.headline(df) in " ".join(TOKEN_AGENT_NOTE.split())  # the command line's note repeats the measurement
