python -m rltutor.experiments.lm family2 --scale quick --sft-steps 200 300 --seeds 300 301 302 --workers 2 --run-dir rltutor/data/lm/family2_pilot2.runs --out rltutor/data/lm/family2_pilot2.csv
