python -m rltutor.experiments.lm clip_higher --scale quick --updates 100 --seeds 0 1 2 3 4 5 --out rltutor/data/lm/clip_higher.csv
