python -m rltutor.experiments.lm regime --scale quick --seeds 100 101 --workers 2 --run-dir runs/lm/regime_pilot --out rltutor/data/lm/regime_pilot.csv
