python -m rltutor.experiments.agents --algos ppo grpo --guards none --seeds 0 1 2 3 4 --updates 20 --workers 2 --out rltutor/data/agents/hack_curves.csv
