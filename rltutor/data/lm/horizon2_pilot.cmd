python -m rltutor.experiments.lm horizon2 --scale quick --seeds 300 301 302 --workers 2 --run-dir rltutor/data/lm/horizon2_pilot.runs --out rltutor/data/lm/horizon2_pilot.csv
