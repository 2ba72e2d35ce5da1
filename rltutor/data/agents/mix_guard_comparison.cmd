python -m rltutor.experiments.agents --tasks mix --algos ppo --guards abort penalize decoy --seeds 0 1 2 3 4 --updates 20 --workers 2 --out rltutor/data/agents/mix_guard_comparison.csv
