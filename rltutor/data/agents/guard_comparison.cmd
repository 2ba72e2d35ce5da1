python -m rltutor.experiments.agents --algos ppo --guards abort penalize decoy --seeds 0 1 2 --updates 20 --workers 2 --out rltutor/data/agents/guard_comparison.csv
