python -m rltutor.experiments.lm diversity --scale quick --sft-steps 60 150 --seeds 300 301 302 --workers 2 --run-dir rltutor/data/lm/diversity_pilot.runs --out rltutor/data/lm/diversity_pilot.csv
