python -m rltutor.experiments.distill pilot --seeds 0 --updates 150 --eval-every 25 --lr 2e-3 --out rltutor/data/distill/pilot_lr2e-3.csv
