python -m rltutor.experiments.lm length_bias --scale quick --updates 100 --seeds 12 13 14 15 16 17 18 19 20 21 22 23 --workers 2 --out rltutor/data/lm/length_bias_more.csv
