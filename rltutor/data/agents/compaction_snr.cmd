python -m rltutor.experiments.agents --snr --budgets 4096 320 256 224 --seeds 0 --batches 32 --out rltutor/data/agents/compaction_snr.csv
