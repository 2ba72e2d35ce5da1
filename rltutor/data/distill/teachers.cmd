python -m rltutor.experiments.distill teachers --out rltutor/data/distill/teachers.csv
