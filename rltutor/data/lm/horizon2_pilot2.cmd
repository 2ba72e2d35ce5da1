python -m rltutor.experiments.lm horizon2 --scale quick --sft-steps 100 150 --seeds 300 301 302 --workers 2 --run-dir rltutor/data/lm/horizon2_pilot2.runs --out rltutor/data/lm/horizon2_pilot2.csv
