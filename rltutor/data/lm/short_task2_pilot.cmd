python -m rltutor.experiments.lm short_task2 --scale quick --seeds 203 204 205 --workers 2 --run-dir runs/lm/short_task2_pilot --out rltutor/data/lm/short_task2_pilot.csv
