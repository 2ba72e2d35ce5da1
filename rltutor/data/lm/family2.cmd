python -m rltutor.experiments.lm family2 --scale quick --seeds 0 1 2 3 4 5 6 7 8 9 10 11 --workers 2 --run-dir rltutor/data/lm/family2.runs --out rltutor/data/lm/family2.csv.gz
