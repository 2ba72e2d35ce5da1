python -m rltutor.experiments.credit --main-test --hours 1
