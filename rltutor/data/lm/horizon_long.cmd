python -m rltutor.experiments.lm horizon --scale quick --lengths 4 32 --updates 100 --seeds 0 1 2 3 4 5 --run-dir runs/lm/horizon --out rltutor/data/lm/horizon_long.csv
