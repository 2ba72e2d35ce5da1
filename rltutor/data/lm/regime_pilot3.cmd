python -m rltutor.experiments.lm regime --round 3 --scale quick --seeds 100 101 102 --workers 2 --run-dir runs/lm/regime_pilot3 --out rltutor/data/lm/regime_pilot3.csv
