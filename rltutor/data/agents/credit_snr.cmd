python -m rltutor.experiments.credit --snr --Ks 4 16 1 --seeds 0 --batches 10 --critic-batches 4 --oracle-n 4 --out rltutor/data/agents/credit_snr.csv
