python -m rltutor.experiments.agents --tasks mix --algos ppo grpo --guards none --seeds 0 1 2 3 4 --updates 20 --workers 2 --out rltutor/data/agents/mix_hack_curves.csv
