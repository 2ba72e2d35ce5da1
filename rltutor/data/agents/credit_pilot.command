# a pilot, never counted; stopped by its 20-minute limit (timeout 1200) after 5 of its 12 runs (no broadcast_grpo run)
# on a shared 2-core AMD EPYC at load ~10; credit_pilot.csv is the 5 runs of credit_pilot.runs/ concatenated
timeout 1200 nice -n 10 python -m rltutor.experiments.credit --pilot --arms ppo_bootstrap broadcast_grpo --seeds 0 1 --updates 3 --out rltutor/data/agents/credit_pilot.csv
