python -m rltutor.experiments.lm family2 --scale quick --seeds 300 301 302 --workers 2 --run-dir rltutor/data/lm/family2_pilot.runs --out rltutor/data/lm/family2_pilot.csv
