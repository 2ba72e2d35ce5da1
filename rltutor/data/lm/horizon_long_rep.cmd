python -m rltutor.experiments.lm horizon --scale quick --lengths 4 32 --updates 100 --seeds 6 7 8 9 10 11 --run-dir runs/lm/horizon --out rltutor/data/lm/horizon_long_rep.csv
