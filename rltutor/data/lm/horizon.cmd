python -m rltutor.experiments.lm horizon --scale quick --lengths 4 16 --updates 100 --seeds 0 1 2 3 4 5 --out rltutor/data/lm/horizon.csv
