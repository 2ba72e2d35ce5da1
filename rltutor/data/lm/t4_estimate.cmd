python benchmarks/t4_estimate.py --out rltutor/data/lm/t4_estimate.csv
