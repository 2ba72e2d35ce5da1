python -m rltutor.experiments.token_agent --out rltutor/data/agents/token_agent.csv
