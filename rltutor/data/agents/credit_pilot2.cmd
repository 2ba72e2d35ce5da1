python -m rltutor.experiments.credit --timing-pilot --out rltutor/data/agents/credit_pilot2.csv
