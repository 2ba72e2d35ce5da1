python -m rltutor.experiments.lm length_bias --scale quick --updates 100 --seeds 0 1 2 3 4 5 --out rltutor/data/lm/length_bias.csv
