python -m rltutor.experiments.lm regime --round 2 --scale quick --seeds 100 101 --workers 2 --run-dir runs/lm/regime_pilot2 --out rltutor/data/lm/regime_pilot2.csv
