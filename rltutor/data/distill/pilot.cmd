python -m rltutor.experiments.distill pilot --seeds 0 1 2 --updates 150 --eval-every 25 --lr 5e-4 --out rltutor/data/distill/pilot.csv
