python -m rltutor.experiments.lm family --scale quick --updates 60 --seeds 0 1 2 3 4 --out rltutor/data/lm/family.csv
