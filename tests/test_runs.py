"""The labs' run store (rltutor.experiments.runs): results in the order of the jobs on every executor, a stored
run read back instead of rerun, a new run stored whole as it ends and returned as stored."""

import os

import pandas as pd
import pytest

from rltutor.experiments import runs


def _square(job):  # a run: its records as a DataFrame (top level, so a worker process can import it)
    return pd.DataFrame({"job": [job], "value": [job * job + 1 / 3]})


def _as_dict(job):
    return {"job": job, "value": job / 7}


def _fail_on_two(job):
    if job == 2:
        raise RuntimeError("run 2 failed")
    return _square(job)


@pytest.mark.parametrize("executor,workers", [("serial", None), ("process", 1), ("process", 2)])
def test_results_come_in_the_order_of_the_jobs(executor, workers):
    jobs = [5, 1, 4, 2, 3]
    df = runs.run_all(_square, jobs, workers, chunksize=2, executor=executor, context="fork")
    assert df["job"].tolist() == jobs
    assert df["value"].tolist() == [j * j + 1 / 3 for j in jobs]


def test_a_stored_run_is_read_back_and_a_new_one_stored_as_read_back(tmp_path):
    store = runs.RunStore(tmp_path)
    names = [f"run{j}.csv" for j in (1, 2, 3)]
    pd.DataFrame({"job": [2], "value": [99.0]}).to_csv(store.path("run2.csv"), index=False)
    df = runs.run_all(_square, [1, 2, 3], 1, store=store, names=names)
    assert df["value"].tolist() == [1.3333, 99.0, 9.3333]  # run 2 read back; the others as stored (5 digits)
    assert pd.read_csv(store.path("run3.csv"))["value"].tolist() == [9.3333]
    again = runs.run_all(_fail_on_two, [1, 2, 3], 1, store=store, names=names)  # nothing is rerun
    pd.testing.assert_frame_equal(again, df)


def test_a_failed_run_leaves_no_file_and_the_finished_ones_stay(tmp_path):
    store = runs.RunStore(tmp_path)
    with pytest.raises(RuntimeError, match="run 2 failed"):
        runs.run_all(_fail_on_two, [1, 2, 3], 1, store=store, names=["a.csv", "b.csv", "c.csv"])
    assert sorted(os.listdir(tmp_path)) == ["a.csv"]  # run 1 kept whole, run 2 absent, no temporary file


def test_a_json_store_keeps_dicts(tmp_path):
    store = runs.RunStore(tmp_path / "new", fmt="json")
    out = runs.run_each(_as_dict, [3, 4], executor="serial", store=store, names=["x.json", "y.json"])
    assert out == [{"job": 3, "value": 3 / 7}, {"job": 4, "value": 4 / 7}]  # JSON keeps every digit
    assert store.load("y.json") == out[1]


def test_bad_input_is_refused_with_the_fix():
    with pytest.raises(ValueError, match="unknown executor 'dask'; valid: process, ray, serial"):
        runs.run_each(_square, [1], executor="dask")
    with pytest.raises(ValueError, match="one file name per job"):
        runs.run_each(_square, [1, 2], store=runs.RunStore("."), names=["a.csv"])
    with pytest.raises(ValueError, match="unknown run store format 'pickle'"):
        runs.RunStore(".", fmt="pickle")
    with pytest.raises(ValueError, match="plain file name"):
        runs.RunStore(".").path("../escape.csv")
    with pytest.raises(TypeError, match="use fmt='json'"):
        runs.RunStore("unused").save("a.csv", {"not": "a frame"})
