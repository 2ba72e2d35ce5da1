python -m rltutor.experiments.distill main --seeds 10 11 12 13 14 15 16 --updates 150 --eval-every 25 --lr 5e-4 --out rltutor/data/distill/main.csv
