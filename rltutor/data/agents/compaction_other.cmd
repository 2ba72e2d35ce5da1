python -m rltutor.experiments.agents --sub-advantages ppo_per_segment split_reward index_groups --budgets 256 --seeds 0 1 2 --updates 30 --workers 2 --out rltutor/data/agents/compaction_other.csv
