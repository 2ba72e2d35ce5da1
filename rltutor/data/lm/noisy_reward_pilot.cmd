python -m rltutor.experiments.claims --seeds 100 101 102 --pilot --out rltutor/data/lm/noisy_reward_pilot.csv
