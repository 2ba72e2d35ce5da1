python -m rltutor.experiments.claims --seeds 0 1 2 3 4 5 6 7 --out rltutor/data/lm/noisy_reward.csv
