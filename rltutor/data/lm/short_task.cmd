python -m rltutor.experiments.lm short_task --scale quick --updates 100 --seeds 0 1 2 3 4 5 --out rltutor/data/lm/short_task.csv
